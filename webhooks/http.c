/* webhooks/http.c - the admission webhooks' HTTP handlers (see http.h), one
 * per route: the route fixes the kind and the webhook (mutate or validate). */
#include "webhooks/http.h"

#include "webhooks/webhooks.h"

static int handle_review(enum wh_kind kind, enum wh_resource rs, const struct op_http_request *req,
			 struct op_http_reply *rep, struct op_err *err)
{
	return wh_handle_review_resource(kind, rs, req->body, req->body_len, &rep->body, err);
}

#define HANDLER(name, kind, rs)                                                                    \
	WH_HTTP_HANDLER(name)                                                                      \
	{                                                                                          \
		return handle_review(kind, rs, req, rep, err);                                     \
	}

HANDLER(wh_http_mutate, WH_MUTATE, WH_RES_CLUSTER)
HANDLER(wh_http_validate, WH_VALIDATE, WH_RES_CLUSTER)
HANDLER(wh_http_mutate_backup, WH_MUTATE, WH_RES_BACKUP)
HANDLER(wh_http_validate_backup, WH_VALIDATE, WH_RES_BACKUP)
HANDLER(wh_http_mutate_scheduled_backup, WH_MUTATE, WH_RES_SCHEDULED_BACKUP)
HANDLER(wh_http_validate_scheduled_backup, WH_VALIDATE, WH_RES_SCHEDULED_BACKUP)
HANDLER(wh_http_validate_object_store, WH_VALIDATE, WH_RES_OBJECT_STORE)
