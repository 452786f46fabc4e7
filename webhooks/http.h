/* webhooks/http.h - the admission webhooks as routes of the TLS HTTP server
 * (support/http_server.h): `pgop controller` splices WH_HTTP_ROUTES into its
 * route table. The handlers take no userdata and call wh_handle_review(). */
#ifndef PGOP_WEBHOOKS_HTTP_H
#define PGOP_WEBHOOKS_HTTP_H

#include "support/err.h"
#include "support/http_server.h"

#define WH_MUTATE_PATH "/mutate-postgresql-cnpg-io-v1-cluster"
#define WH_VALIDATE_PATH "/validate-postgresql-cnpg-io-v1-cluster"

/* op_http_handler for WH_MUTATE_PATH / WH_VALIDATE_PATH: the AdmissionReview
 * in req->body, the response into rep->body; -EINVAL (HTTP 400) on a broken
 * envelope (wh_handle_review). userdata unused. */
OP_MUST_CHECK
int wh_http_mutate(void *userdata, const struct op_http_request *req, struct op_http_reply *rep,
		   struct op_err *err);
OP_MUST_CHECK int wh_http_validate(void *userdata, const struct op_http_request *req,
				   struct op_http_reply *rep, struct op_err *err);

/* Rows for the controller's route table. */
#define WH_HTTP_ROUTES                                                                             \
	{ "POST", WH_MUTATE_PATH, wh_http_mutate }, { "POST", WH_VALIDATE_PATH, wh_http_validate }

#endif
