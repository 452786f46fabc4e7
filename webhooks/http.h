/* webhooks/http.h - the admission webhooks as routes of the TLS HTTP server
 * (support/http_server.h): `pgop controller` splices WH_HTTP_ROUTES into its
 * route table. The handlers take no userdata and call
 * wh_handle_review_resource() with the route's kind. The paths are
 * CloudNativePG's (charts/pgop/templates/webhooks.yaml registers them). */
#ifndef PGOP_WEBHOOKS_HTTP_H
#define PGOP_WEBHOOKS_HTTP_H

#include "support/err.h"
#include "support/http_server.h"

#define WH_MUTATE_PATH "/mutate-postgresql-cnpg-io-v1-cluster"
#define WH_VALIDATE_PATH "/validate-postgresql-cnpg-io-v1-cluster"
#define WH_MUTATE_BACKUP_PATH "/mutate-postgresql-cnpg-io-v1-backup"
#define WH_VALIDATE_BACKUP_PATH "/validate-postgresql-cnpg-io-v1-backup"
#define WH_MUTATE_SCHEDULED_BACKUP_PATH "/mutate-postgresql-cnpg-io-v1-scheduledbackup"
#define WH_VALIDATE_SCHEDULED_BACKUP_PATH "/validate-postgresql-cnpg-io-v1-scheduledbackup"
#define WH_VALIDATE_OBJECT_STORE_PATH "/validate-barmancloud-cnpg-io-v1-objectstore"

/* op_http_handler for each path: the AdmissionReview in req->body, the
 * response into rep->body; -EINVAL (HTTP 400) on a broken envelope
 * (wh_handle_review_resource). userdata unused. */
#define WH_HTTP_HANDLER(name)                                                                      \
	OP_MUST_CHECK int name(void *userdata, const struct op_http_request *req,                  \
			       struct op_http_reply *rep, struct op_err *err)
WH_HTTP_HANDLER(wh_http_mutate);
WH_HTTP_HANDLER(wh_http_validate);
WH_HTTP_HANDLER(wh_http_mutate_backup);
WH_HTTP_HANDLER(wh_http_validate_backup);
WH_HTTP_HANDLER(wh_http_mutate_scheduled_backup);
WH_HTTP_HANDLER(wh_http_validate_scheduled_backup);
WH_HTTP_HANDLER(wh_http_validate_object_store);

/* Rows for the controller's route table. */
#define WH_HTTP_ROUTES                                                                             \
	{ "POST", WH_MUTATE_PATH, wh_http_mutate }, { "POST", WH_VALIDATE_PATH, wh_http_validate },  \
		{ "POST", WH_MUTATE_BACKUP_PATH, wh_http_mutate_backup },                          \
		{ "POST", WH_VALIDATE_BACKUP_PATH, wh_http_validate_backup },                      \
		{ "POST", WH_MUTATE_SCHEDULED_BACKUP_PATH, wh_http_mutate_scheduled_backup },      \
		{ "POST", WH_VALIDATE_SCHEDULED_BACKUP_PATH, wh_http_validate_scheduled_backup },  \
		{ "POST", WH_VALIDATE_OBJECT_STORE_PATH, wh_http_validate_object_store }

#endif
