/* apiserver/server.c - as_new/as_free and the request handler: admission
 * control (429), front-proxy authentication, SubjectAccessReview, then
 * discovery, OpenAPI or the resources. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "apiserver/internal.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define AUTH_CM_NS "kube-system"
#define AUTH_CM_NAME "extension-apiserver-authentication"
#define SAR_CACHE_CAP 512

struct as_server {
	struct as_config cfg;
	struct as_snaps *snaps;
	struct as_watches *watches;
	struct as_sar_cache *sar;
	struct kube_informer *cm_inf;
	pthread_rwlock_t authn_lock;
	struct as_authn_cfg authn; /* under authn_lock; ca_pem NULL = not loaded */
	_Atomic unsigned inflight;
	unsigned max_inflight;
	pthread_mutex_t start_lock; /* starting cm_inf */
	_Atomic bool cm_started;
};

static struct kube_client *client_of(struct as_server *s)
{
	return s->cfg.source.client ? s->cfg.source.client(s->cfg.source.ud) : NULL;
}

/* ------------------------------------------------------ authentication CM */

static void cm_changed(struct as_server *s, json_object *cm)
{
	struct as_authn_cfg c = { 0 };
	struct op_err err = OP_ERR_INIT;
	if (as_authn_parse(cm, &c, &err) < 0) {
		op_log_warn("live API: front-proxy configuration unusable, keeping the previous one",
			    "configmap", AUTH_CM_NS "/" AUTH_CM_NAME, "error", err.msg);
		return;
	}
	char n[16];
	snprintf(n, sizeof(n), "%zu", c.n_allowed);
	pthread_rwlock_wrlock(&s->authn_lock);
	as_authn_cfg_done(&s->authn);
	s->authn = c;
	pthread_rwlock_unlock(&s->authn_lock);
	op_log_info("live API: front-proxy CA loaded", "configmap", AUTH_CM_NS "/" AUTH_CM_NAME,
		    "allowed_names", n);
}

static void cm_add(void *ud, json_object *obj)
{
	cm_changed(ud, obj);
}

static void cm_update(void *ud, json_object *old_obj, json_object *new_obj)
{
	cm_changed(ud, new_obj);
}

int as_new(const struct as_config *cfg, struct as_server **ret, struct op_err *err)
{
	struct as_server *s = op_calloc(1, sizeof(*s));
	s->cfg = *cfg;
	s->cfg.requestheader_json = NULL;
	s->max_inflight = cfg->max_inflight ? cfg->max_inflight : AS_MAX_INFLIGHT_DEFAULT;
	pthread_rwlock_init(&s->authn_lock, NULL);
	pthread_mutex_init(&s->start_lock, NULL);
	s->snaps = as_snaps_new(&cfg->source, cfg->max_age_ms, cfg->timeout_ms, AS_INTEREST_MS);
	s->sar = as_sar_cache_new(cfg->sar_ttl_ms, SAR_CACHE_CAP);
	s->watches = as_watches_new(0);
	int r = 0;
	if (cfg->requestheader_json) {
		json_object *cm = json_tokener_parse(cfg->requestheader_json);
		r = cm ? as_authn_parse(cm, &s->authn, err)
		       : op_err_set(err, -EINVAL, "requestheader_json: not JSON");
		if (cm)
			json_object_put(cm);
	}
	if (r < 0) {
		as_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void as_free(struct as_server *s)
{
	if (!s)
		return;
	kube_informer_free(s->cm_inf);
	as_watches_free(s->watches); /* before the snapshots they read */
	as_snaps_free(s->snaps);
	as_sar_cache_free(s->sar);
	as_authn_cfg_done(&s->authn);
	pthread_rwlock_destroy(&s->authn_lock);
	pthread_mutex_destroy(&s->start_lock);
	free(s);
}

/* Starts the ConfigMap informer once the cluster is reachable (first request
 * that finds a client); waits up to 2 s for its first list. */
static void ensure_watching(struct as_server *s)
{
	if (atomic_load(&s->cm_started))
		return;
	struct kube_client *kc = client_of(s);
	if (!kc)
		return;
	pthread_mutex_lock(&s->start_lock);
	if (!s->cm_started) {
		const struct kube_informer_handlers h = { .on_add = cm_add, .on_update = cm_update,
							  .userdata = s };
		const struct kube_informer_opts o = { .ns = AUTH_CM_NS,
						      .field_selector = "metadata.name=" AUTH_CM_NAME };
		struct op_err err = OP_ERR_INIT;
		int r = kube_informer_new(kc, KUBE_CONFIGMAPS, &o, &h, &s->cm_inf, &err);
		if (r >= 0)
			r = kube_informer_start(s->cm_inf, &err);
		if (r < 0) {
			op_log_warn("live API: cannot watch the front-proxy configuration", "configmap",
				    AUTH_CM_NS "/" AUTH_CM_NAME, "error", err.msg);
			s->cm_inf = kube_informer_free(s->cm_inf);
		} else {
			atomic_store(&s->cm_started, true);
		}
	}
	pthread_mutex_unlock(&s->start_lock);
	/* every request until the front-proxy CA is in (not only the one that started
	 * the watch): the requests kube-aggregator sends as soon as the Pod is Ready
	 * were answered 401 "not loaded yet" in the ~100 ms the first list took, and
	 * the aggregator then left the group out of discovery for seconds (found by
	 * test_helm_rotation's live polls). Returns at once once synced. */
	if (s->cm_inf && kube_informer_wait_synced(s->cm_inf, 2000) < 0)
		op_log_debug("authentication ConfigMap not listed within 2 s: answering from "
			     "what is loaded");
}

/* ------------------------------------------------------------ replies */

static int fail(struct op_http_reply *rep, unsigned code, const char *reason, const char *msg)
{
	rep->status = code;
	rep->content_type = "application/json";
	return as_status(&rep->body, code, reason, msg);
}

/* --------------------------------------------------------- authentication */

struct hdr_ctx {
	const struct as_authn_cfg *c;
	struct as_user *u;
};

static int on_header(void *ud, const char *name, const char *value)
{
	struct hdr_ctx *x = ud;
	as_authn_header(x->c, x->u, name, value);
	return 0;
}

static int authenticate(struct as_server *s, const struct op_http_request *req,
			struct as_user *u, struct op_err *err)
{
	pthread_rwlock_rdlock(&s->authn_lock);
	int r = 0;
	char cn[256] = "";
	if (!s->authn.ca_pem) /* not the caller's fault: 503, retried */
		r = op_err_set(err, -EAGAIN, "front-proxy CA not loaded yet");
	if (r == 0)
		r = op_http_peer_verify(req, s->authn.ca_pem, cn, sizeof(cn), err);
	if (r == 0 && !as_authn_cn_allowed(&s->authn, cn))
		r = op_err_set(err, -EACCES, "client certificate CN %s is not an allowed name", cn);
	if (r == 0) {
		struct hdr_ctx x = { &s->authn, u };
		op_http_headers_each(req, on_header, &x);
	}
	pthread_rwlock_unlock(&s->authn_lock);
	if (r == 0)
		r = as_authn_finish(u, err);
	return r;
}

/* ---------------------------------------------------------- authorization */

static int sar_call(struct as_server *s, const struct as_user *u, const struct as_attrs *a,
		    char **ret_reason, struct op_err *err)
{
	if (s->cfg.authorize)
		return s->cfg.authorize(s->cfg.authorize_ud, u, a, ret_reason, err);
	struct kube_client *kc = client_of(s);
	if (!kc)
		return op_err_set(err, -ENOTCONN, "no cluster access for SubjectAccessReviews");
	_cleanup_free_ char *body = as_sar_body(u, a);
	struct kube_request kr = { .method = "POST", .kind = KUBE_SUBJECTACCESSREVIEWS,
				   .body = body, .verb = "create",
				   .msg_name = "subjectaccessreview" };
	json_object *res = NULL;
	int r = kube_request(kc, &kr, &res, err);
	if (r < 0)
		return r;
	json_object *allowed = op_json_at(res, "status.allowed");
	int ok = allowed && json_object_get_boolean(allowed) ? 1 : 0;
	const char *reason = op_json_str_at(res, "status.reason");
	if (!ok && reason && *reason)
		*ret_reason = op_strdup(reason);
	json_object_put(res);
	return ok;
}

static bool is_master(const struct as_user *u)
{
	for (size_t i = 0; i < u->n_groups; i++)
		if (strcmp(u->groups[i], "system:masters") == 0)
			return true;
	return false;
}

/* 1 allowed, 0 denied (ret_reason may be set), -errno no decision. */
static int authorize(struct as_server *s, const struct as_user *u, const struct as_attrs *a,
		     char **ret_reason, struct op_err *err)
{
	if (is_master(u))
		return 1;
	_cleanup_free_ char *key = as_sar_key(u, a);
	int r = as_sar_cache_get(s->sar, key, as_now_ms());
	if (r >= 0)
		return r;
	r = sar_call(s, u, a, ret_reason, err);
	if (r >= 0)
		as_sar_cache_put(s->sar, key, r == 1, as_now_ms());
	return r;
}

/* Kubernetes' wording: `clusters.G "x" is forbidden: User "u" cannot get
 * resource "clusters" in API group "G" in the namespace "ns"`. */
static char *forbidden_msg(const struct as_user *u, const struct as_attrs *a, const char *why)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r;
	if (!a->resource) {
		r = op_buf_addf(&b, "forbidden: User \"%s\" cannot %s path \"%s\"", u->name,
				a->verb, a->path);
	} else {
		r = op_buf_addf(&b, "%s.%s", a->resource_name, AS_GROUP);
		if (!r && a->name[0])
			r = op_buf_addf(&b, " \"%s\"", a->name);
		if (!r)
			r = op_buf_addf(&b, " is forbidden: User \"%s\" cannot %s resource \"%s%s%s\" "
					"in API group \"%s\"", u->name, a->verb, a->resource_name,
					a->subresource[0] ? "/" : "", a->subresource, AS_GROUP);
		if (!r && a->ns[0])
			r = op_buf_addf(&b, " in the namespace \"%s\"", a->ns);
	}
	if (!r && why && *why)
		r = op_buf_addf(&b, ": %s", why);
	(void)r; /* truncated on overflow: still a message */
	return op_buf_take(&b, NULL);
}

/* ------------------------------------------------------------ resources */

static int reply_objects(struct op_http_reply *rep, const struct as_reqinfo *ri,
			 const struct as_query *q, json_object *objs)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)as_wall_ms());
	if (ri->name[0]) {
		if (json_object_array_length(objs) == 0) {
			_cleanup_free_ char *m = op_asprintf("%s.%s \"%s\" not found",
							     ri->res->name, AS_GROUP, ri->name);
			return fail(rep, 404, "NotFound", m);
		}
		if (!q->table) {
			return op_buf_adds(&rep->body, json_object_to_json_string_ext(
							       json_object_array_get_idx(objs, 0),
							       JSON_C_TO_STRING_PLAIN |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		}
	}
	if (q->table)
		return as_render_table(&rep->body, ri->res, objs, rv, as_wall_ms() / 1000, true);
	return as_render_list(&rep->body, ri->res, objs, rv);
}

static int serve(struct as_server *s, const struct as_reqinfo *ri, const struct as_query *q,
		 struct op_http_reply *rep, struct op_err *err)
{
	json_object *objs = NULL;
	int r = as_collect(s->snaps, &s->cfg.source, ri, q, &objs, err);
	if (r < 0)
		return fail(rep, 400, "BadRequest", err->msg);
	r = reply_objects(rep, ri, q, objs);
	json_object_put(objs);
	return r;
}

/* -------------------------------------------------------------- actions */

/* POST clusters/NAME/switchover|restart: parse, then the reconciler acts. */
static int serve_action(struct as_server *s, const struct op_http_request *req,
			const struct as_reqinfo *ri, const struct as_user *u,
			struct op_http_reply *rep, struct op_err *err)
{
	struct as_action a;
	struct op_err perr = OP_ERR_INIT;
	int r = as_action_parse(ri->sub, req->body, req->body_len, &a, &perr);
	if (r == -EMSGSIZE)
		return fail(rep, 413, "RequestEntityTooLarge", perr.msg);
	if (r < 0)
		return fail(rep, 400, "BadRequest", perr.msg);
	if (!s->cfg.source.act)
		return fail(rep, 503, "ServiceUnavailable", "actions are not available");
	char *msg = NULL;
	struct op_err aerr = OP_ERR_INIT;
	r = s->cfg.source.act(s->cfg.source.ud, ri->ns, ri->name, &a, u->name, &msg, &aerr);
	_cleanup_free_ char *m = msg;
	op_log_kv(r < 0 ? OP_LOG_WARN : OP_LOG_INFO, r < 0 ? "live API: action refused"
							  : "live API: action accepted",
		  "action", ri->sub, "namespace", ri->ns, "cluster", ri->name, "user", u->name,
		  "message", m ? m : aerr.msg, (const char *)NULL);
	switch (r) {
	case 0:
		rep->status = 202;
		rep->content_type = "application/json";
		return as_status_accepted(&rep->body, m, ri->name);
	case -ENOENT:
		return fail(rep, 404, "NotFound", m ? m : "not found");
	case -EBUSY:
	case -ESTALE:
		return fail(rep, 409, "Conflict", m ? m : "conflict");
	case -EINVAL:
		return fail(rep, 422, "Invalid", m ? m : "invalid");
	default:
		(void)err;
		return fail(rep, 500, "InternalError", m ? m : aerr.msg);
	}
}

/* ------------------------------------------------------------- handler */

static int dispatch(struct as_server *s, const struct op_http_request *req,
		    const struct as_reqinfo *ri, const struct as_user *u,
		    struct op_http_reply *rep, struct op_err *err)
{
	const char *accept = op_http_header(req, "Accept");
	switch (ri->target) {
	case AS_T_APIS:
		if (as_accept_v2(accept)) {
			rep->content_type = AS_V2_CONTENT_TYPE;
			return as_doc_discovery_v2(&rep->body);
		}
		return as_doc_group_list(&rep->body);
	case AS_T_GROUP:
		return as_doc_group(&rep->body);
	case AS_T_GROUPVERSION:
		return as_doc_resource_list(&rep->body);
	case AS_T_OPENAPI_V2:
		return as_doc_openapi_v2(&rep->body);
	case AS_T_OPENAPI_V3:
		return as_doc_openapi_v3_root(&rep->body);
	case AS_T_OPENAPI_V3_GV:
		return as_doc_openapi_v3_gv(&rep->body);
	case AS_T_RESOURCE:
		break;
	}
	if (strcmp(ri->verb, "create") == 0) {
		if (s->cfg.source.ready && !s->cfg.source.ready(s->cfg.source.ud))
			return fail(rep, 503, "ServiceUnavailable",
				    "the operator's caches are not synced yet, retry");
		return serve_action(s, req, ri, u, rep, err);
	}
	struct as_query q = { .label = op_http_query(req, "labelSelector"),
			      .table = as_accept_table(accept) };
	if (as_fieldsel_parse(op_http_query(req, "fieldSelector"), &q.fields, err) < 0)
		return fail(rep, 400, "BadRequest", err->msg);
	const char *sie = op_http_query(req, "sendInitialEvents");
	if (sie && strcmp(sie, "true") == 0)
		return fail(rep, 422, "Invalid", "sendInitialEvents is not supported");
	if (s->cfg.source.ready && !s->cfg.source.ready(s->cfg.source.ud))
		return fail(rep, 503, "ServiceUnavailable",
			    "the operator's caches are not synced yet, retry");
	if (strcmp(ri->verb, "watch") == 0)
		return as_watch_start(s->watches, s->snaps, &s->cfg.source, req, ri, &q, rep, err);
	return serve(s, ri, &q, rep, err);
}

static int handle(struct as_server *s, const struct op_http_request *req,
		  struct op_http_reply *rep, struct op_err *err)
{
	ensure_watching(s);
	struct as_user u = { 0 };
	int r = authenticate(s, req, &u, err);
	if (r == -EAGAIN) {
		op_log_warn("live API: request before the front-proxy configuration is loaded",
			    "peer", req->peer, "path", req->path, "error", err->msg);
		as_user_done(&u);
		rep->header_name = "Retry-After";
		rep->header_value = "1";
		return fail(rep, 503, "ServiceUnavailable", "the front-proxy configuration is not loaded yet, retry");
	}
	if (r < 0) {
		op_log_warn("live API: unauthenticated request", "peer", req->peer, "path",
			    req->path, "error", err->msg);
		as_user_done(&u);
		return fail(rep, 401, "Unauthorized", "Unauthorized");
	}
	struct as_reqinfo ri;
	const char *w = op_http_query(req, "watch");
	bool watch = w && (strcmp(w, "true") == 0 || strcmp(w, "1") == 0);
	r = as_parse_path(req->method, req->path, watch, &ri, err);
	if (r < 0) {
		as_user_done(&u);
		return r == -EINVAL	   ? fail(rep, 400, "BadRequest", err->msg)
		       : r == -EOPNOTSUPP ? fail(rep, 405, "MethodNotAllowed", err->msg)
					  : fail(rep, 404, "NotFound", err->msg);
	}
	struct as_attrs a = { .resource = ri.target == AS_T_RESOURCE, .verb = ri.verb,
			      .resource_name = ri.res ? ri.res->name : "", .subresource = ri.sub,
			      .ns = ri.ns, .name = ri.name, .path = req->path };
	if (!a.resource)
		a.verb = "get";
	char *why = NULL;
	struct op_err aerr = OP_ERR_INIT;
	r = authorize(s, &u, &a, &why, &aerr);
	if (r <= 0) {
		_cleanup_free_ char *m = r < 0 ? op_asprintf("authorization failed: %s", aerr.msg)
					       : forbidden_msg(&u, &a, why);
		free(why);
		as_user_done(&u);
		return r < 0 ? fail(rep, 500, "InternalError", m) : fail(rep, 403, "Forbidden", m);
	}
	r = dispatch(s, req, &ri, &u, rep, err);
	as_user_done(&u);
	if (r < 0)
		return fail(rep, 500, "InternalError", err->code ? err->msg : "response too large");
	return 0;
}

int as_handle(void *userdata, const struct op_http_request *req, struct op_http_reply *rep,
	      struct op_err *err)
{
	struct as_server *s = userdata;
	if (!s)
		return fail(rep, 503, "ServiceUnavailable", "the live API is not running (no cluster "
			    "access)");
	unsigned n = atomic_fetch_add(&s->inflight, 1) + 1;
	int r;
	if (n > s->max_inflight) {
		rep->header_name = "Retry-After";
		rep->header_value = "1";
		r = fail(rep, 429, "TooManyRequests", "too many live requests in flight, retry");
	} else {
		r = handle(s, req, rep, err);
	}
	atomic_fetch_sub(&s->inflight, 1);
	return r;
}
