/* webhooks/http.c - the admission webhooks' HTTP handlers (see http.h), moved
 * here from cmd/controller.c. */
#include "webhooks/http.h"

#include "webhooks/webhooks.h"

static int handle_review(enum wh_kind kind, const struct op_http_request *req,
			 struct op_http_reply *rep, struct op_err *err)
{
	return wh_handle_review(kind, req->body, req->body_len, &rep->body, err);
}

int wh_http_mutate(void *userdata, const struct op_http_request *req, struct op_http_reply *rep,
		   struct op_err *err)
{
	return handle_review(WH_MUTATE, req, rep, err);
}

int wh_http_validate(void *userdata, const struct op_http_request *req,
		     struct op_http_reply *rep, struct op_err *err)
{
	return handle_review(WH_VALIDATE, req, rep, err);
}
