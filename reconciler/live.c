/* reconciler/live.c - cache reads and instance status for apiserver/ (live.h). */
#include "reconciler/live.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "api/cluster.h"
#include "api/names.h"
#include "api/timestamp.h"
#include "kube/leader.h"
#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "reconciler/rollout.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

static bool str_eq_(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

json_object *rc_live_clusters(struct rc_controller *c, const char *ns)
{
	if (ns || c->n_ns == 0) {
		struct kube_informer *inf = rc_informer(c, RC_INF_CLUSTERS, ns);
		json_object *out = inf ? kube_informer_list(inf, ns) : op_jarr();
		if (!out)
			abort();
		return out;
	}
	json_object *out = op_jarr();
	if (!out)
		abort();
	for (size_t i = 0; i < c->n_ns; i++) { /* in --watch-namespaces order */
		json_object *part = kube_informer_list(c->inf[RC_INF_CLUSTERS][i], c->ns[i]);
		if (!part)
			abort();
		for (size_t k = 0; k < json_object_array_length(part); k++)
			op_jpush(out, json_object_get(json_object_array_get_idx(part, k)));
		json_object_put(part);
	}
	return out;
}

json_object *rc_live_pods(struct rc_controller *c, const char *ns, const char *cluster)
{
	return rc_cache_owned_role(c, RC_INF_PODS, ns, cluster, "instance");
}

/* rc_live_fetch on the reconciler's own instance records (v[i].name, .ip,
 * .silent set by the caller). */
static int live_fetch(struct rc_controller *c, const char *ns, const char *cluster,
		      struct rc_instance *v, size_t n, long timeout_ms, struct rc_status_pool *pool,
		      struct op_err *err)
{
	json_object *obj = rc_cache_get(c, RC_INF_CLUSTERS, ns, cluster);
	if (!obj)
		return op_err_set(err, -ENOENT, "cluster %s/%s not in the cache", ns, cluster);
	struct api_cluster *ac = NULL;
	int r = api_cluster_decode(obj, NULL, &ac, err);
	json_object_put(obj);
	if (r < 0)
		return r;
	_cleanup_free_ char *key = op_asprintf("%s/%s", ns, cluster);
	_cleanup_free_ char *sname = api_secret_name(cluster, API_SECRET_CA);
	json_object *sec = rc_cache_get(c, RC_INF_SECRETS, ns, sname);
	struct pki_secret_data d = { 0 };
	struct rc_run run = { .ctl = c, .key = key, .c = ac, .ns = ns, .name = cluster,
			      .now = (int64_t)time(NULL), .err = err };
	if (!sec) {
		r = op_err_set(err, -ENOENT, "secret %s/%s not in the cache", ns, sname);
		goto out;
	}
	/* the CA the reconciles read (secrets.c), or <c>-ca's data when none has yet */
	const char *rv = kube_obj_resource_version(sec);
	if (!rc_memo_ca_get(&run, rv)) {
		json_object *full = NULL;
		r = rc_secret_full(&run, sname, &full);
		if (r == -ENOENT)
			r = op_err_set(err, -ENOENT, "secret %s/%s is gone", ns, sname);
		if (r == 0)
			r = pki_secret_parse(PKI_SECRET_CA, full, &d, err);
		if (r == 0) {
			run.ca.cert_pem = TAKE_PTR(d.crt);
			run.ca.key_pem = TAKE_PTR(d.key);
			r = rc_memo_ca_set(&run, rv);
		}
	}
	json_object_put(sec);
	if (r < 0)
		goto out;
	r = rc_ensure_client_cert(&run);
	if (r >= 0) {
		struct rc_fetch_opts fo = { .timeout_ms = timeout_ms, .pool = pool };
		r = rc_fetch_statuses(run.ca.cert_pem, run.client.cert_pem ? &run.client : NULL, v,
				      n, &fo, err);
	}
out:
	pki_secret_data_done(&d);
	pki_pair_done(&run.ca);
	pki_pair_done(&run.client);
	if (run.secrets)
		json_object_put(run.secrets);
	api_cluster_free(ac);
	return r;
}

void rc_live_instance_done(struct rc_live_instance *in)
{
	if (!in)
		return;
	free(in->name);
	free(in->ip);
	free(in->error);
	if (in->doc)
		json_object_put(in->doc);
	*in = (struct rc_live_instance){ 0 };
}

int rc_live_fetch(struct rc_controller *c, const char *ns, const char *cluster,
		  struct rc_live_instance *v, size_t n, long timeout_ms,
		  struct rc_status_pool *pool, struct op_err *err)
{
	struct rc_instance *in = op_calloc(n ? n : 1, sizeof(*in));
	for (size_t i = 0; i < n; i++)
		in[i] = (struct rc_instance){ .name = op_strdup(v[i].name),
					      .ip = v[i].ip ? op_strdup(v[i].ip) : NULL,
					      .silent = v[i].silent };
	int r = live_fetch(c, ns, cluster, in, n, timeout_ms, pool, err);
	for (size_t i = 0; i < n; i++) {
		/* the answers move to the caller's records */
		if (r >= 0) {
			v[i].doc = TAKE_PTR(in[i].doc);
			v[i].error = TAKE_PTR(in[i].error);
		}
		rc_instance_done(&in[i]);
	}
	free(in);
	return r;
}

/* ------------------------------------------------------------- actions */

/* The cached Cluster with its instances' Pods and /pg/status, sorted. */
struct live_view {
	json_object *obj;      /* owned copy of the Cluster */
	json_object *pods;     /* owned */
	struct rc_status st;   /* owned fields read back from obj */
	struct rc_instance *v; /* owned, rc_instances_sort order */
	size_t n;
};

static void view_done(struct live_view *w)
{
	for (size_t i = 0; i < w->n; i++)
		rc_instance_done(&w->v[i]);
	free(w->v);
	if (w->obj)
		json_object_put(w->obj);
	if (w->pods)
		json_object_put(w->pods);
	rc_status_done(&w->st);
	*w = (struct live_view){ 0 };
}

/* -ENOENT (*ret_msg set) when the Cluster is not cached. Instances that do
 * not answer are kept without status (their error says why). */
static int view_load(struct rc_controller *c, const char *ns, const char *cluster,
		     long timeout_ms, struct live_view *w, char **ret_msg)
{
	w->obj = rc_cache_get(c, RC_INF_CLUSTERS, ns, cluster);
	if (!w->obj || op_json_at(w->obj, "metadata.deletionTimestamp")) {
		*ret_msg = op_asprintf("clusters.postgresql.cnpg.io \"%s\" not found", cluster);
		return -ENOENT;
	}
	rc_status_from_json(op_json_at(w->obj, "status"), &w->st);
	w->pods = rc_live_pods(c, ns, cluster);
	size_t np = json_object_array_length(w->pods);
	w->v = op_calloc(np ? np : 1, sizeof(*w->v));
	for (size_t i = 0; i < np; i++)
		if (rc_instance_from_pod(cluster, json_object_array_get_idx(w->pods, i),
					 &w->v[w->n]) == 0)
			w->n++;
	if (w->n) {
		struct op_err e = OP_ERR_INIT;
		if (live_fetch(c, ns, cluster, w->v, w->n, timeout_ms, NULL, &e) < 0)
			for (size_t i = 0; i < w->n; i++)
				if (!w->v[i].error)
					w->v[i].error = op_strdup(e.msg);
	}
	rc_instances_sort(w->v, w->n);
	return 0;
}

/* Queues an Event on the cached Cluster (posted in the background, as rc_event). */
static void live_event(struct rc_controller *c, json_object *obj, const char *reason,
		       const char *msg)
{
	if (c->rec)
		kube_recorder_emit(c->rec, obj, "Normal", reason, msg); /* rc_event */
	op_log_info(msg, "namespace", kube_obj_namespace(obj), "cluster", kube_obj_name(obj),
		    "event", reason);
}

static void enqueue(struct rc_controller *c, const char *ns, const char *cluster)
{
	_cleanup_free_ char *key = op_asprintf("%s/%s", ns, cluster);
	rc_queue_add(c->q, key);
}

/* status.targetPrimary = target, with the resourceVersion read as the
 * precondition. 0, or -errno with *ret_msg (owned) or err. */
static int write_target(struct rc_controller *c, struct live_view *w, const char *ns,
			const char *cluster, const char *target, char **ret_msg,
			struct op_err *err)
{
	_cleanup_free_ char *ts = api_time_rfc3339_us(api_time_now_us());
	json_object *p = op_jobj(), *md = op_jobj(),
		    *st = op_jobj();
	if (!p || !md || !st)
		abort();
	op_jset(md, "resourceVersion", op_jstr(kube_obj_resource_version(w->obj)));
	op_jset(st, "targetPrimary", op_jstr(target));
	op_jset(st, "targetPrimaryTimestamp", op_jstr(ts));
	op_jset(p, "metadata", md);
	op_jset(p, "status", st);
	struct op_err e = OP_ERR_INIT;
	int r = kube_patch_status(c->kc, KUBE_CLUSTERS, ns, cluster, KUBE_PATCH_MERGE,
				  json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, &e);
	json_object_put(p);
	if (r == -ESTALE)
		*ret_msg = op_asprintf("the Cluster %s changed meanwhile: look at its status and "
				       "retry",
				       cluster);
	else if (r == -ENOENT)
		*ret_msg = op_asprintf("clusters.postgresql.cnpg.io \"%s\" not found", cluster);
	else if (r < 0)
		return op_err_set(err, r, "%s", e.msg);
	return r < 0 ? r : 0;
}

int rc_live_switchover(struct rc_controller *c, const char *ns, const char *cluster,
		       const char *target, const char *user, char **ret_msg, struct op_err *err)
{
	*ret_msg = NULL;
	struct live_view w = { 0 };
	int r = view_load(c, ns, cluster, c->status_timeout_ms, &w, ret_msg);
	if (r < 0)
		goto out;
	const char *cur = w.st.current_primary, *tp = w.st.target_primary;
	if (!target || !*target) {
		target = rc_switchover_pick(w.v, w.n, cur);
		if (!target && cur && *cur && str_eq_(cur, tp)) {
			*ret_msg = op_asprintf("no healthy streaming replica to switch over to "
					       "(primary %s)",
					       cur);
			r = -EINVAL;
			goto out;
		}
	}
	r = rc_switchover_check(w.v, w.n, cur, tp, target, ret_msg);
	if (r < 0)
		goto out;
	r = write_target(c, &w, ns, cluster, target, ret_msg, err);
	if (r < 0)
		goto out;
	*ret_msg = op_asprintf("switchover from %s to %s requested by %s", cur, target,
			       user && *user ? user : "unknown user");
	live_event(c, w.obj, "SwitchoverRequested", *ret_msg);
	enqueue(c, ns, cluster);
out:
	view_done(&w);
	return r;
}


/* Merge-patches metadata.annotations of the Cluster (NULL-terminated
 * key, value pairs), with the resourceVersion read as the precondition. */
static int patch_annotations(struct rc_controller *c, struct live_view *w, const char *ns,
			     const char *cluster, char **ret_msg, struct op_err *err, ...)
{
	json_object *p = op_jobj(), *md = op_jobj(),
		    *a = op_jobj();
	if (!p || !md || !a)
		abort();
	va_list ap;
	va_start(ap, err);
	for (const char *k; (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		op_jset(a, k, op_jstr(v));
	}
	va_end(ap);
	op_jset(md, "resourceVersion", op_jstr(kube_obj_resource_version(w->obj)));
	op_jset(md, "annotations", a);
	op_jset(p, "metadata", md);
	struct op_err e = OP_ERR_INIT;
	int r = kube_patch(c->kc, KUBE_CLUSTERS, ns, cluster, KUBE_PATCH_MERGE,
			   json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, &e);
	json_object_put(p);
	if (r == -ESTALE)
		*ret_msg = op_asprintf("the Cluster %s changed meanwhile: retry", cluster);
	else if (r == -ENOENT)
		*ret_msg = op_asprintf("clusters.postgresql.cnpg.io \"%s\" not found", cluster);
	else if (r < 0)
		return op_err_set(err, r, "%s", e.msg);
	return r < 0 ? r : 0;
}

static json_object *pod_named(json_object *pods, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(pods); i++) {
		json_object *o = json_object_array_get_idx(pods, i);
		if (str_eq_(kube_obj_name(o), name))
			return o;
	}
	return NULL;
}

/* rc_live_restart in steps. Each fills *ret_msg (owned by the caller) with
 * what it did or why it refused; 0, or -errno (refusals: -EINVAL, -EBUSY,
 * -ESTALE/-ENOENT from the patches, else err). w borrowed. */

/* What a restart needs from the Cluster's spec and metadata. */
struct restart_settings {
	char *inplace;          /* owned: pgop.io/inPlaceRestart (the primary restarting in
				 * place), NULL when absent */
	bool switchover_method; /* primaryUpdateMethod switchover */
};

static int restart_settings_read(const struct live_view *w, struct restart_settings *ret,
				 char **ret_msg)
{
	struct api_cluster *ac = NULL;
	struct op_err de = OP_ERR_INIT;
	if (api_cluster_decode(w->obj, NULL, &ac, &de) < 0) {
		*ret_msg = op_asprintf("the Cluster cannot be read: %s", de.msg);
		return -EINVAL;
	}
	const char *busy = api_kvs_get(&ac->metadata.annotations, RC_ANN_INPLACE_RESTART);
	ret->inplace = busy ? op_strdup(busy) : NULL;
	ret->switchover_method = str_eq_(ac->spec.primary_update_method, "switchover");
	api_cluster_free(ac);
	return 0;
}

/* {}: the rolling restart of every instance (kubectl.kubernetes.io/restartedAt). */
static int restart_cluster(struct rc_controller *c, struct live_view *w, const char *ns,
			   const char *cluster, const char *who, char **ret_msg,
			   struct op_err *err)
{
	_cleanup_free_ char *now = api_time_rfc3339((int64_t)time(NULL));
	int r = patch_annotations(c, w, ns, cluster, ret_msg, err, RC_ANN_RESTARTED_AT, now,
				  (const char *)NULL);
	if (r < 0)
		return r;
	*ret_msg = op_asprintf("rolling restart of %s requested by %s (%s=%s): replicas "
			       "first, then the primary",
			       cluster, who, RC_ANN_RESTARTED_AT, now);
	return 0;
}

/* Whether one instance may be restarted now: it is one of the Cluster's
 * (*ret_pod, borrowed from w), no switchover or failover is under way, the
 * primary is not restarting in place (inplace). */
static int restart_instance_check(struct live_view *w, const char *instance,
				  const char *inplace, json_object **ret_pod, char **ret_msg)
{
	const char *cur = w->st.current_primary, *tp = w->st.target_primary;
	json_object *pod = pod_named(w->pods, instance);
	if (!pod) {
		*ret_msg = op_asprintf("%s is not an instance of this cluster", instance);
		return -EINVAL;
	}
	if (!cur || !*cur || !str_eq_(cur, tp)) {
		*ret_msg = op_asprintf("a switchover or failover is in progress (currentPrimary %s, "
				       "targetPrimary %s)",
				       cur ? cur : "", tp ? tp : "");
		return -EBUSY;
	}
	if (inplace && *inplace) {
		*ret_msg = op_asprintf("the primary %s is restarting in place", inplace);
		return -EBUSY;
	}
	*ret_pod = pod;
	return 0;
}

/* A replica: its Pod (pod, borrowed) deleted with its UID as the
 * precondition; the reconciler recreates it on its volume. */
static int restart_replica(struct rc_controller *c, const char *ns, const char *instance,
			   json_object *pod, const char *who, char **ret_msg, struct op_err *err)
{
	struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_BACKGROUND,
				      .precondition_uid = kube_obj_uid(pod),
				      .grace_period_seconds = -1 };
	struct op_err e = OP_ERR_INIT;
	int r = kube_delete(c->kc, KUBE_PODS, ns, instance, &o, &e);
	if (r == -ENOENT || r == -ESTALE) {
		*ret_msg = op_asprintf("the Pod %s is already being replaced", instance);
		return -EBUSY;
	}
	if (r < 0)
		return op_err_set(err, r, "%s", e.msg);
	*ret_msg = op_asprintf("restart of replica %s requested by %s: its Pod is "
			       "recreated on its volume",
			       instance, who);
	return 0;
}

/* The primary: a switchover to the replica rc_switchover_pick chooses
 * (primaryUpdateMethod switchover, when there is one), else the in-place
 * restart annotations (pod, borrowed: its UID). */
static int restart_primary(struct rc_controller *c, struct live_view *w, const char *ns,
			   const char *cluster, const char *instance, json_object *pod,
			   bool switchover_method, const char *who, char **ret_msg,
			   struct op_err *err)
{
	const char *cur = w->st.current_primary, *tp = w->st.target_primary;
	const char *to = switchover_method ? rc_switchover_pick(w->v, w->n, cur) : NULL;
	int r;
	if (to) {
		r = rc_switchover_check(w->v, w->n, cur, tp, to, ret_msg);
		if (r == 0)
			r = write_target(c, w, ns, cluster, to, ret_msg, err);
		if (r < 0)
			return r;
		*ret_msg = op_asprintf("restart of the primary %s requested by %s: switchover to "
				       "%s (primaryUpdateMethod switchover), then it restarts as a "
				       "replica",
				       instance, who, to);
		return 0;
	}
	r = patch_annotations(c, w, ns, cluster, ret_msg, err, RC_ANN_INPLACE_RESTART, instance,
			      RC_ANN_INPLACE_RESTART_UID, kube_obj_uid(pod), (const char *)NULL);
	if (r < 0)
		return r;
	*ret_msg = op_asprintf("restart of the primary %s requested by %s: in place "
			       "(primaryUpdateMethod restart)",
			       instance, who);
	return 0;
}

int rc_live_restart(struct rc_controller *c, const char *ns, const char *cluster,
		    const char *instance, const char *user, char **ret_msg, struct op_err *err)
{
	*ret_msg = NULL;
	struct live_view w = { 0 };
	struct restart_settings s = { 0 };
	const char *who = user && *user ? user : "unknown user";
	int r = view_load(c, ns, cluster, c->status_timeout_ms, &w, ret_msg);
	if (r == 0)
		r = restart_settings_read(&w, &s, ret_msg);
	if (r < 0)
		goto out;
	if (!instance || !*instance) {
		r = restart_cluster(c, &w, ns, cluster, who, ret_msg, err);
	} else {
		json_object *pod = NULL;
		r = restart_instance_check(&w, instance, s.inplace, &pod, ret_msg);
		if (r == 0 && !str_eq_(instance, w.st.current_primary))
			r = restart_replica(c, ns, instance, pod, who, ret_msg, err);
		else if (r == 0)
			r = restart_primary(c, &w, ns, cluster, instance, pod, s.switchover_method,
					    who, ret_msg, err);
	}
	if (r == 0) {
		live_event(c, w.obj, "RestartRequested", *ret_msg);
		enqueue(c, ns, cluster);
	}
out:
	free(s.inplace);
	view_done(&w);
	return r;
}
