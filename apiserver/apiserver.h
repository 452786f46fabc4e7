/* apiserver/apiserver.h - the aggregated API server `live.postgresql.cnpg.io/v1`
 * (prefix as_), served by `pgop controller` on the webhooks' HTTPS listener.
 *
 * Resources (computed on request from the reconciler's informer caches and
 * each instance's /pg/status, docs/internals/apiserver.md):
 *   clusters        kind LiveCluster, short name pglive, subresource status
 *                   (get) and the actions switchover and restart (create)
 *   instances       kind LiveInstance, one per instance Pod
 * plus legacy and aggregated (v2) discovery and OpenAPI v2/v3.
 *
 * Every request is authenticated as kube-apiserver's front proxy (client
 * certificate chained to the requestheader CA of ConfigMap
 * kube-system/extension-apiserver-authentication, CN allowed, user from the
 * X-Remote-* headers) and authorized with a SubjectAccessReview (cached).
 *
 * Threads: as_handle runs on the HTTPS server's threads, concurrently; at
 * most cfg.max_inflight at once (429 beyond). Instance status is fetched by
 * short-lived detached threads, one per Cluster needing a refresh.
 */
#ifndef PGOP_APISERVER_APISERVER_H
#define PGOP_APISERVER_APISERVER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/kube.h"
#include "support/err.h"
#include "support/http_server.h"

struct rc_live_instance; /* reconciler/live.h */
struct rc_status_pool;   /* reconciler/live.h */

#define AS_GROUP "live.postgresql.cnpg.io"
#define AS_VERSION "v1"
#define AS_GROUP_VERSION AS_GROUP "/" AS_VERSION
#define AS_APISERVICE_NAME AS_VERSION "." AS_GROUP
#define AS_MAX_AGE_MS_DEFAULT 1000
#define AS_TIMEOUT_MS_DEFAULT 2000
#define AS_MARGIN_MS 500        /* a request waits at most timeout + this */
#define AS_INTEREST_MS 30000    /* instances asked for this recently are kept fresh (apiserver/snap.c) */
#define AS_MAX_INFLIGHT_DEFAULT 16
/* HTTPS handler threads when the live API runs (op_http_config.handler_threads):
 * its requests may block a handler thread for up to timeout + margin. */
#define AS_HTTP_THREADS_DEFAULT 8

/* An action request (POST clusters/NAME/switchover or /restart), parsed. */
enum as_action_kind { AS_ACTION_SWITCHOVER, AS_ACTION_RESTART };
#define AS_ACTION_BODY_MAX 4096 /* bytes; larger bodies get 413 */
struct as_action {
	enum as_action_kind kind;
	char instance[254]; /* switchover "target" / restart "instance"; "" = not given */
};

/* Where the data comes from (the reconciler in production, fakes in tests).
 * Arrays returned are owned by the caller. fetch fills v[0..n) (name, ip
 * set by the caller; v[i].doc on success, v[i].error otherwise) and must
 * return within about timeout_ms; pool (borrowed, never NULL) keeps that
 * Cluster's connections to its instances between fetches (one fetch at a
 * time per pool: apiserver/snap.c). */
struct as_source {
	json_object *(*clusters)(void *ud, const char *ns); /* ns NULL = all */
	json_object *(*pods)(void *ud, const char *ns, const char *cluster);
	int (*fetch)(void *ud, const char *ns, const char *cluster, struct rc_live_instance *v,
		     size_t n, long timeout_ms, struct rc_status_pool *pool, struct op_err *err);
	/* The API client for SubjectAccessReviews and the authentication ConfigMap
	 * (borrowed), NULL while not connected; NULL function = none (tests). */
	struct kube_client *(*client)(void *ud);
	/* Carries out an action on Cluster ns/name for user (borrowed strings).
	 * Returns 0 accepted, with *ret_msg (owned) saying what; otherwise -errno
	 * with *ret_msg (owned, may be NULL) saying why: -ENOENT unknown Cluster
	 * (404), -EBUSY/-ESTALE an operation in progress or a concurrent change
	 * (409), -EINVAL refused (422), other (500, err). NULL = 503. */
	int (*act)(void *ud, const char *ns, const char *name, const struct as_action *a,
		   const char *user, char **ret_msg, struct op_err *err);
	/* Caches synced; NULL = always. Resource requests get 503 until then. */
	bool (*ready)(void *ud);
	void *ud;
};

/* Authorization decision for one request (a SubjectAccessReview in
 * production). Returns 1 allowed, 0 denied (reason filled, owned), -errno
 * when no decision could be had. */
struct as_attrs;
struct as_user;
typedef int (*as_authorize_fn)(void *ud, const struct as_user *u, const struct as_attrs *a,
			       char **ret_reason, struct op_err *err);

struct as_config {
	struct as_source source;
	long max_age_ms;            /* snapshot freshness; 0 = 1000 */
	long timeout_ms;            /* per-instance fetch; 0 = 2000 */
	unsigned max_inflight;      /* concurrent live requests; 0 = 16 */
	long sar_ttl_ms;            /* 0 = 5000 (allowed and denied alike) */
	/* Tests: authorize without SARs / authenticate without a ConfigMap. */
	as_authorize_fn authorize;
	void *authorize_ud;
	const char *requestheader_json; /* a ConfigMap object as JSON instead of the watch */
};

struct as_server;

/* *ret owned. The authentication ConfigMap informer starts with the first
 * request that finds source.client connected (it waits up to 2 s for its
 * first list). */
OP_MUST_CHECK int as_new(const struct as_config *cfg, struct as_server **ret, struct op_err *err);
/* Stops the informer, waits for fetch threads, frees. Accepts NULL. */
void as_free(struct as_server *s);

/* The HTTP handler for every route below; userdata is the struct as_server
 * (NULL: answers 503 "live API not running"). */
OP_MUST_CHECK
int as_handle(void *userdata, const struct op_http_request *req, struct op_http_reply *rep,
	      struct op_err *err);

/* Rows for the controller's route table. */
#define AS_HTTP_ROUTES                                                                             \
	{ "GET", "/apis*", as_handle }, { "POST", "/apis/" AS_GROUP "/*", as_handle },            \
		{ "GET", "/openapi/*", as_handle }

#endif
