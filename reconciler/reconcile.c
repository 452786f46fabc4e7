/* reconciler/reconcile.c - one reconcile of one Cluster (runtime.md §4.1):
 * guard -> PKI, Secrets, RBAC, Services -> instance status -> failover ->
 * role labels -> instances (bootstrap, join, scale) -> status. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "api/annotations.h"
#include "api/fence.h"
#include "api/names.h"
#include "api/plugin.h"
#include "api/timestamp.h"
#include "kube/leader.h"
#include "reconciler/annotations.h"
#include "reconciler/ctl.h"
#include "reconciler/disruption.h"
#include "reconciler/instance_client.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "reconciler/replication.h"
#include "reconciler/rollout.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/log.h"

/* poll instance status this often: with the replicas' 5 s wal_receiver_timeout
 * it bounds how long a partitioned primary goes unnoticed */
#define REQUEUE_HEALTHY_MS 5000
/* Waiting on a Pod (created, scheduled, Ready, succeeded): its watch
 * event reconciles at once, and the status poll every Cluster gets is the
 * safety net. It was a 2 s poll: with 1,000 Clusters waiting for their Pods
 * (bench/scale.sh) that was 500 reconciles a second, and the work queue fell
 * minutes behind. */
#define REQUEUE_WAIT_EVENT_MS REQUEUE_HEALTHY_MS
/* Waiting on what the instances report (GET /pg/status): no event says it. */
#define REQUEUE_WAIT_STATUS_MS 2000
/* The primary's Pod is Ready but its /pg/status does not answer: until its
 * replicas lose it too (a partition) or it answers (a blip). Each look costs
 * one 300 ms connect to it and the replicas' status. */
#define REQUEUE_PRIMARY_CHECK_MS 250
/* A bootstrap Pod that failed this many attempts (restarts) makes the
 * Cluster unrecoverable: CloudNativePG's Job backoffLimit. */
#define RC_BOOTSTRAP_RESTARTS 6

/* ------------------------------------------------------------ helpers */

static const char *label(json_object *obj, const char *key)
{
	json_object *l = op_json_at(obj, "metadata.labels"), *v = NULL;
	if (!l || !json_object_object_get_ex(l, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool terminating(json_object *obj)
{
	return op_json_at(obj, "metadata.deletionTimestamp") != NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void set_str(char **dst, const char *s)
{
	char *copy = s ? op_strdup(s) : NULL; /* s may be *dst */
	free(*dst);
	*dst = copy;
}

static void set_phase(struct rc_run *r, const char *phase, const char *reason)
{
	set_str(&r->want.phase, phase);
	set_str(&r->want.phase_reason, reason);
}

/* --------------------------------------------------------------- status */

struct status_base {
	json_object *status; /* owned copy of the status we diff against */
	char *rv;
};

static int write_status_once(struct rc_run *r, struct status_base *b)
{
	char *patch = NULL;
	int ret = rc_status_patch(b->status, &r->want, b->rv, r->now, &patch, r->err);
	if (ret <= 0)
		return ret;
	json_object *res = NULL;
	struct op_err e = OP_ERR_INIT;
	ret = kube_patch_status(r->ctl->kc, KUBE_CLUSTERS, r->ns, r->name, KUBE_PATCH_MERGE, patch,
				&res, &e);
	free(patch);
	if (ret == -ESTALE) { /* the resourceVersion precondition: our view was stale */
		if (res)
			json_object_put(res);
		rc_requeue(r, 500);
		return 1;
	}
	if (ret < 0) {
		if (res)
			json_object_put(res);
		return op_err_set(r->err, ret, "%s", e.msg);
	}
	rc_stat_add(r->ctl, &r->ctl->stats.status_patches);
	if (res) {
		json_object *st = op_json_at(res, "status");
		json_object *copy = NULL;
		if (st && json_object_deep_copy(st, &copy, NULL) == 0) {
			if (b->status)
				json_object_put(b->status);
			b->status = copy;
		}
		set_str(&b->rv, kube_obj_resource_version(res));
		json_object_put(res);
	}
	return 0;
}

/* Writes the status. A patch that starts the fence clock (targetPrimary
 * "pending" with a new targetPrimaryTimestamp, handle_failover) must have
 * returned within API_FENCE_STAMP_MS of the stamp: the old primary's read of
 * the Cluster may prove its lease until the patch is applied. A slower one is
 * stamped again with the time it returned, which is after it was applied
 * (docs/internals/failover.md). */
static int write_status(struct rc_run *r, struct status_base *b)
{
	bool stamping = str_eq(r->want.target_primary, RC_PENDING_FAILOVER) &&
			r->want.target_since &&
			!str_eq(op_json_str_at(b->status, "targetPrimaryTimestamp"),
				r->want.target_since);
	int ret = write_status_once(r, b);
	if (ret != 0 || !stamping)
		return ret;
	if (r->cut_deadline_ms && rc_mono_ms() >= r->cut_deadline_ms) {
		/* a replica may have undone its cut before "pending" was applied and
		 * streamed from the old primary again: this pending proves nothing */
		op_log_error("failover: pending was written after the replicas' cut hold "
			     "ended, cancelling it",
			     "cluster", r->key);
		rc_event(r, "Warning", "FailoverCancelled",
			 "the status patch that started the failover of %s returned after the "
			 "replicas' cut hold ended: starting over",
			 r->want.current_primary ? r->want.current_primary : "");
		set_str(&r->want.target_primary, r->want.current_primary);
		rc_note_pending_returned(r->ctl, r->key, 0);
		return write_status_once(r, b);
	}
	/* this process's fence clock follows the return, re-stamp written or not */
	const int64_t returned_ms = api_time_now_us() / 1000;
	rc_note_pending_returned(r->ctl, r->key, returned_ms);
	if (!rc_fence_stamp_late(r->want.target_since, returned_ms))
		return ret;
	op_log_warn("failover: the patch that wrote pending returned late, stamping it again",
		    "cluster", r->key, "targetPrimaryTimestamp", r->want.target_since);
	_cleanup_free_ char *ts = api_time_rfc3339_us(api_time_now_us());
	set_str(&r->want.target_since, ts);
	return write_status_once(r, b);
}

/* ------------------------------------------------------------ instances */

struct inventory {
	json_object *pods, *pvcs; /* owned arrays; pods: instance and bootstrap Pods */
	struct rc_instance *v;    /* one per instance Pod, sorted */
	size_t n;
};

static void inventory_done(struct inventory *inv)
{
	for (size_t i = 0; i < inv->n; i++)
		rc_instance_done(&inv->v[i]);
	free(inv->v);
	json_object_put(inv->pods);
	json_object_put(inv->pvcs);
}

static json_object *find_by_name(json_object *arr, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		if (str_eq(kube_obj_name(o), name))
			return o;
	}
	return NULL;
}

/* Waiting for the instances to be ready: on a Pod that is not Ready yet (an
 * event will say when it is), or on what Ready ones report. */
static long wait_requeue_ms(const struct inventory *inv)
{
	for (size_t i = 0; i < inv->n; i++)
		if (!inv->v[i].pod_ready && !inv->v[i].pod_terminating)
			return REQUEUE_WAIT_EVENT_MS;
	return REQUEUE_WAIT_STATUS_MS;
}

static struct rc_instance *find_instance(struct inventory *inv, const char *name)
{
	for (size_t i = 0; i < inv->n; i++)
		if (str_eq(inv->v[i].name, name))
			return &inv->v[i];
	return NULL;
}

/* rc_fetch_opts.abandon: the primary watch lost it while this fetch ran. */
static bool lost_now(void *ctx, const struct rc_instance *in)
{
	const struct rc_run *r = ctx;
	return rc_instance_lost(r->ctl, r->key, in);
}

static void inventory_load(struct rc_run *r, struct inventory *inv)
{
	inv->pods = rc_cache_owned(r->ctl, RC_INF_PODS, r->ns, r->name);
	inv->pvcs = rc_cache_owned(r->ctl, RC_INF_PVCS, r->ns, r->name);
	size_t np = json_object_array_length(inv->pods);
	inv->v = op_calloc(np ? np : 1, sizeof(*inv->v));
	for (size_t i = 0; i < np; i++)
		if (rc_instance_from_pod(r->name, json_object_array_get_idx(inv->pods, i),
					 &inv->v[inv->n]) == 0)
			inv->n++;
	/* a Cluster none of whose instances answers is watched by the prober (contact.c) */
	if (inv->n && r->ca.cert_pem && !rc_mark_silent(r->ctl, r->key, inv->v, inv->n)) {
		struct rc_fetch_opts fo = { .timeout_ms = r->ctl->status_timeout_ms,
					    .abandon = lost_now,
					    .abandon_ctx = r };
		struct op_err e = OP_ERR_INIT;
		if (rc_fetch_statuses(r->ca.cert_pem, r->client.cert_pem ? &r->client : NULL,
				      inv->v, inv->n, &fo, &e) < 0)
			op_log_warn("cannot query instances", "cluster", r->key, "error", e.msg);
		/* given up during the fetch: as if it had been lost before it */
		for (size_t i = 0; i < inv->n; i++)
			if (!inv->v[i].has_status && rc_instance_lost(r->ctl, r->key, &inv->v[i]))
				inv->v[i].unreachable = true;
	}
	rc_instances_sort(inv->v, inv->n);
}

/* Sets cnpg.io/instanceRole (and the deprecated role) when it differs. */
static int set_role(struct rc_run *r, struct inventory *inv, const char *pod, const char *role)
{
	json_object *p = find_by_name(inv->pods, pod);
	if (!p || terminating(p) || str_eq(label(p, RC_LABEL_INSTANCE_ROLE), role))
		return 0;
	int ret = rc_patch_labels(r, KUBE_PODS, pod, RC_LABEL_INSTANCE_ROLE, role, RC_LABEL_ROLE,
				  role, (const char *)NULL);
	if (ret == -ENOENT)
		return 0;
	if (ret == 0)
		op_log_info("role label set", "cluster", r->key, "pod", pod, "role", role);
	return ret;
}

/* CNPG's cnpg.io/pvcStatus=ready: the volume holds an initialized instance
 * (its bootstrap Pod succeeded), so an instance Pod may be started on it. */
static bool pvc_ready(json_object *pvc)
{
	json_object *a = op_json_at(pvc, "metadata.annotations"), *v = NULL;
	return a && json_object_object_get_ex(a, RC_ANN_PVC_STATUS, &v) &&
	       str_eq(json_object_get_string(v), "ready");
}

static int mark_pvc_ready(struct rc_run *r, const char *name)
{
	json_object *p = op_jobj();
	op_jsets(op_jchild(op_jchild(p, "metadata"), "annotations"), RC_ANN_PVC_STATUS, "ready");
	int ret = kube_patch(r->ctl->kc, KUBE_PVCS, r->ns, name, KUBE_PATCH_MERGE,
			     json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, r->err);
	json_object_put(p);
	return ret == -ENOENT ? 0 : ret;
}

static int create_bootstrap_pod(struct rc_run *r, int64_t serial, enum rc_job_role role)
{
	json_object *o = NULL;
	int ret = rc_build_bootstrap_pod(r->c, &r->ctl->settings, serial, role, &o, r->err);
	if (ret == 0)
		ret = rc_create(r, KUBE_PODS, o);
	if (o)
		json_object_put(o);
	return ret;
}

/* A bootstrap Pod's restarts (restartPolicy OnFailure: each is a failed
 * attempt), the most of its containers'. */
static int64_t restarts(json_object *pod)
{
	json_object *cs = op_json_at(pod, "status.containerStatuses");
	int64_t most = 0;
	for (size_t i = 0; json_object_is_type(cs, json_type_array) &&
			   i < json_object_array_length(cs);
	     i++) {
		int64_t n = json_object_get_int64(
			op_json_at(json_object_array_get_idx(cs, i), "restartCount"));
		if (n > most)
			most = n;
	}
	return most;
}

/* Instance serial's tablespace PVCs that the cache does not hold yet: at
 * its creation, and before each of its Pods (a tablespace added later gets
 * its volume when the rollout recreates the Pod). */
static int ensure_tablespace_pvcs(struct rc_run *r, int64_t serial)
{
	_cleanup_free_ char *pod = api_pod_name(r->name, serial);
	int ret = 0;
	for (size_t i = 0; ret >= 0 && i < r->c->spec.n_tablespaces; i++) {
		const char *t = r->c->spec.tablespaces[i].name;
		_cleanup_free_ char *name = t ? api_tablespace_pvc_name(pod, t) : NULL;
		json_object *have = name ? rc_cache_get(r->ctl, RC_INF_PVCS, r->ns, name) : NULL;
		if (have) {
			json_object_put(have);
			continue;
		}
		json_object *o = NULL;
		ret = rc_build_tablespace_pvc(r->c, serial, i, &o, r->err);
		if (ret == 0)
			ret = rc_create(r, KUBE_PVCS, o);
		if (o)
			json_object_put(o);
	}
	return ret < 0 ? ret : 0;
}

static int create_instance_objects(struct rc_run *r, int64_t serial, enum rc_job_role role)
{
	json_object *o = NULL;
	int ret = rc_build_pvc(r->c, serial, false, &o, r->err);
	if (ret == 0)
		ret = rc_create(r, KUBE_PVCS, o);
	if (o)
		json_object_put(o);
	o = NULL;
	if (ret >= 0 && r->c->spec.wal_storage.present) {
		ret = rc_build_pvc(r->c, serial, true, &o, r->err);
		if (ret == 0)
			ret = rc_create(r, KUBE_PVCS, o);
		if (o)
			json_object_put(o);
		o = NULL;
	}
	if (ret >= 0)
		ret = ensure_tablespace_pvcs(r, serial);
	if (ret >= 0)
		ret = create_bootstrap_pod(r, serial, role);
	return ret < 0 ? ret : 0;
}

static int create_pod(struct rc_run *r, int64_t serial)
{
	_cleanup_free_ char *name = api_pod_name(r->name, serial);
	const char *primary = r->want.current_primary && *r->want.current_primary
				      ? r->want.current_primary
				      : r->want.target_primary;
	json_object *o = NULL;
	int ret = ensure_tablespace_pvcs(r, serial);
	if (ret == 0)
		ret = rc_build_pod(r->c, &r->ctl->settings, serial,
				   str_eq(primary, name) ? RC_ROLE_PRIMARY : RC_ROLE_REPLICA, &o,
				   r->err);
	if (ret == 0)
		ret = rc_create(r, KUBE_PODS, o);
	if (o)
		json_object_put(o);
	if (ret == 1)
		rc_event(r, "Normal", "CreatingInstance", "created instance pod %s", name);
	return ret < 0 ? ret : 0;
}

static int scale_down(struct rc_run *r, struct inventory *inv)
{
	struct rc_instance *victim = NULL;
	for (size_t i = 0; i < inv->n; i++) {
		struct rc_instance *in = &inv->v[i];
		if (str_eq(in->name, r->want.current_primary) ||
		    str_eq(in->name, r->want.target_primary) || in->pod_terminating)
			continue;
		if (!victim || in->serial > victim->serial)
			victim = in;
	}
	if (!victim)
		return 0;
	_cleanup_free_ char *pod = op_strdup(victim->name);
	int ret = rc_delete_instance(r, victim->serial, pod, false);
	if (ret < 0)
		return ret;
	set_phase(r, RC_PHASE_SCALING_DOWN, NULL);
	rc_event(r, "Normal", "ScaleDown", "scaling down: removed instance %s and its volumes", pod);
	rc_requeue(r, 1000);
	return 1;
}

/* One bootstrap Pod j (pods without cnpg.io/jobRole are left alone): a
 * retry in place after each failure (OnFailure), up to RC_BOOTSTRAP_RESTARTS;
 * evicted, made again; once it succeeded, its volume is ready and the
 * instance Pod runs on it, and then it goes. A Job's Pod (`<pod>-<role>-
 * <suffix>`, an earlier pgop's bootstrap): its Job retries a failure and owns
 * the Pod; waited for whatever its phase (never a second bootstrap on the
 * volume beside it), its success used, never deleted here. Sets *in_progress
 * while one runs; 1 when the Cluster is unrecoverable (phase set), <0 on
 * error, else 0. */
static int bootstrap_pod_step(struct rc_run *r, struct inventory *inv, json_object *j,
			      size_t live, int64_t want_n, bool *in_progress)
{
	const char *pod = label(j, RC_LABEL_INSTANCE_NAME);
	const char *role = label(j, RC_LABEL_JOB_ROLE);
	int64_t serial;
	if (!pod || !role || terminating(j) || api_pod_serial(r->name, pod, &serial, NULL) < 0)
		return 0;
	bool initdb = strcmp(role, "initdb") == 0;
	const char *setting_up = initdb ? RC_PHASE_FIRST_PRIMARY : RC_PHASE_CREATING_REPLICA;
	const char *phase = op_json_str_at(j, "status.phase");
	_cleanup_free_ char *own = rc_job_name(r->name, serial, initdb ? RC_JOB_INITDB : RC_JOB_JOIN);
	bool job_pod = !str_eq(kube_obj_name(j), own);
	if (!job_pod && str_eq(phase, "Failed") &&
	    str_eq(op_json_str_at(j, "status.reason"), "Evicted")) {
		/* as a Job would: step 3 makes it again on its volume once gone */
		int ret = rc_delete(r, KUBE_PODS, kube_obj_name(j));
		if (ret < 0)
			return ret;
		rc_event(r, "Normal", "BootstrapPodEvicted",
			 "bootstrap pod %s was evicted: making it again", kube_obj_name(j));
		phase = NULL; /* waited for below */
	}
	if (!str_eq(phase, "Succeeded")) {
		int64_t n = restarts(j);
		if (!job_pod && (str_eq(phase, "Failed") || n >= RC_BOOTSTRAP_RESTARTS)) {
			_cleanup_free_ char *why =
				str_eq(phase, "Failed")
					? op_asprintf("bootstrap pod %s failed", kube_obj_name(j))
					: op_asprintf("bootstrap pod %s failed %lld times",
						      kube_obj_name(j), (long long)n);
			if (!str_eq(r->want.phase, RC_PHASE_UNRECOVERABLE))
				rc_event(r, "Warning", "BootstrapFailed",
					 "%s: the instance %s was not created; look at the pod's "
					 "logs, then delete the pod to try again",
					 why, pod);
			set_phase(r, RC_PHASE_UNRECOVERABLE, why);
			rc_requeue(r, 30000);
			return 1;
		}
		set_phase(r, setting_up, NULL);
		rc_requeue(r, REQUEUE_WAIT_EVENT_MS);
		*in_progress = true;
		return 0;
	}
	json_object *pvc = find_by_name(inv->pvcs, pod);
	if (pvc && !pvc_ready(pvc)) {
		int ret = mark_pvc_ready(r, kube_obj_name(pvc));
		if (ret < 0)
			return ret;
	}
	if (find_by_name(inv->pods, pod)) { /* the instance runs on the volume */
		int ret = job_pod ? 0 : rc_delete(r, KUBE_PODS, kube_obj_name(j));
		return ret < 0 ? ret : 0;
	}
	if ((int64_t)live < want_n && pvc && !terminating(pvc)) {
		int ret = create_pod(r, serial);
		if (ret < 0)
			return ret;
		set_phase(r, setting_up, NULL);
		rc_requeue(r, REQUEUE_WAIT_EVENT_MS);
		*in_progress = true;
	}
	return 0;
}

/* reconcile_instances in steps, in this order; each returns 1 when it set
 * the phase and something is in progress (the next steps wait), 0 to go on,
 * <0 on error (r->err). inv borrowed. */

/* Step 0: an instance or bootstrap Pod whose image cannot start (e.g. no
 * PostgreSQL of the image's major on the node): the kubelet's reason, not
 * "bootstrap failed". */
static int image_problem_step(struct rc_run *r, struct inventory *inv)
{
	for (size_t i = 0; i < json_object_array_length(inv->pods); i++) {
		json_object *p = json_object_array_get_idx(inv->pods, i);
		_cleanup_free_ char *why = terminating(p) ? NULL : rc_pod_image_problem(p);
		if (!why)
			continue;
		if (!str_eq(r->want.phase, RC_PHASE_IMAGE_ERROR) || !str_eq(r->want.phase_reason, why))
			rc_event(r, "Warning", "ImageError", "%s", why);
		set_phase(r, RC_PHASE_IMAGE_ERROR, why);
		rc_requeue(r, 10000);
		return 1;
	}
	return 0;
}

/* Step 1: every bootstrap Pod (bootstrap_pod_step); live: the instance Pods
 * counted against want_n. */
static int bootstrap_pods_step(struct rc_run *r, struct inventory *inv, size_t live,
			       int64_t want_n)
{
	bool in_progress = false;
	for (size_t i = 0; i < json_object_array_length(inv->pods); i++) {
		int ret = bootstrap_pod_step(r, inv, json_object_array_get_idx(inv->pods, i), live,
					     want_n, &in_progress);
		if (ret != 0)
			return ret;
	}
	return in_progress ? 1 : 0;
}

/* Step 2: no instance yet: serial 1 is reserved in the status (written
 * first, b borrowed), then its volumes and initdb bootstrap Pod. */
static int first_instance_step(struct rc_run *r, struct inventory *inv, struct status_base *b)
{
	if (inv->n != 0 || r->want.latest_generated_node != 0)
		return 0;
	_cleanup_free_ char *pod = api_pod_name(r->name, 1);
	r->want.latest_generated_node = 1;
	set_str(&r->want.target_primary, pod);
	set_str(&r->want.current_primary, pod);
	set_phase(r, RC_PHASE_FIRST_PRIMARY, NULL);
	int ret = write_status(r, b); /* before its objects: the serial is taken */
	if (ret != 0)
		return ret < 0 ? ret : 1;
	ret = create_instance_objects(r, 1, RC_JOB_INITDB);
	if (ret < 0)
		return ret;
	rc_event(r, "Normal", "CreatingInstance", "bootstrapping the primary %s (initdb)", pod);
	rc_requeue(r, REQUEUE_WAIT_EVENT_MS);
	return 1;
}

/* Step 3: volumes whose pod is gone (and no bootstrap Pod): restart the
 * instance on its data; a volume never made ready gets its bootstrap Pod
 * again (deleted or lost before it succeeded: what a Job's controller did
 * for its Pod). One per reconcile. */
static int orphan_volumes_step(struct rc_run *r, struct inventory *inv, size_t live,
			       int64_t want_n)
{
	for (size_t i = 0; i < json_object_array_length(inv->pvcs) && (int64_t)live < want_n; i++) {
		json_object *pvc = json_object_array_get_idx(inv->pvcs, i);
		const char *pod = label(pvc, RC_LABEL_INSTANCE_NAME);
		int64_t serial;
		if (!str_eq(label(pvc, RC_LABEL_PVC_ROLE), "PG_DATA") || terminating(pvc) || !pod ||
		    api_pod_serial(r->name, pod, &serial, NULL) < 0 || find_by_name(inv->pods, pod))
			continue;
		_cleanup_free_ char *j1 = rc_job_name(r->name, serial, RC_JOB_INITDB);
		_cleanup_free_ char *j2 = rc_job_name(r->name, serial, RC_JOB_JOIN);
		if (find_by_name(inv->pods, j1) || find_by_name(inv->pods, j2))
			continue; /* one that never succeeded: handled above */
		int ret;
		if (pvc_ready(pvc)) {
			ret = create_pod(r, serial);
			set_phase(r, RC_PHASE_WAITING_ACTIVE, NULL);
		} else {
			/* only the first primary's volume is initialised; any other
			 * is a clone of the primary */
			bool first = str_eq(pod, r->want.current_primary) && inv->n == 0;
			ret = create_bootstrap_pod(r, serial, first ? RC_JOB_INITDB : RC_JOB_JOIN);
			set_phase(r, first ? RC_PHASE_FIRST_PRIMARY : RC_PHASE_CREATING_REPLICA, NULL);
		}
		if (ret < 0)
			return ret;
		rc_requeue(r, REQUEUE_WAIT_EVENT_MS);
		return 1;
	}
	return 0;
}

/* Steps 4 and 5: scale up, one instance at a time, only with everyone ready
 * (the serial reserved in the status first, b borrowed); scale down. */
static int scale_step(struct rc_run *r, struct inventory *inv, struct status_base *b,
		      int64_t want_n)
{
	switch (rc_scale_decide(inv->v, inv->n, want_n, r->want.current_primary)) {
	case RC_SCALE_NONE:
		return 0;
	case RC_SCALE_WAIT:
		set_phase(r, RC_PHASE_WAITING_ACTIVE, NULL);
		rc_requeue(r, wait_requeue_ms(inv));
		return 1;
	case RC_SCALE_DOWN:
		return scale_down(r, inv);
	case RC_SCALE_UP:
		break;
	}
	int64_t serial = r->want.latest_generated_node + 1;
	_cleanup_free_ char *pod = api_pod_name(r->name, serial);
	r->want.latest_generated_node = serial;
	set_phase(r, RC_PHASE_CREATING_REPLICA, NULL);
	int ret = write_status(r, b);
	if (ret != 0)
		return ret < 0 ? ret : 1;
	ret = create_instance_objects(r, serial, RC_JOB_JOIN);
	if (ret < 0)
		return ret;
	rc_event(r, "Normal", "CreatingInstance", "creating replica %s (join)", pod);
	rc_requeue(r, REQUEUE_WAIT_EVENT_MS);
	return 1;
}

/* Bootstrap, joins, restarts and scale (CNPG reconcilePods). Returns 1 when
 * something is in progress (phase set), 0 when the set of instances is as
 * wanted, <0 on error. */
static int reconcile_instances(struct rc_run *r, struct inventory *inv, struct status_base *b)
{
	const int64_t want_n = r->c->spec.instances;
	/* a terminating Pod still counts: it comes back on its own volume */
	const size_t live = inv->n;
	int ret = image_problem_step(r, inv);
	if (ret == 0)
		ret = bootstrap_pods_step(r, inv, live, want_n);
	if (ret == 0)
		ret = first_instance_step(r, inv, b);
	if (ret == 0)
		ret = orphan_volumes_step(r, inv, live, want_n);
	if (ret == 0)
		ret = scale_step(r, inv, b, want_n);
	return ret;
}

/* ------------------------------------------------------------- failover */

static void fill_instances_status(struct rc_run *r, struct inventory *inv)
{
	struct rc_status *w = &r->want;
	for (size_t i = 0; i < w->n_instance_names; i++)
		free(w->instance_names[i]);
	for (size_t i = 0; i < w->n_healthy; i++)
		free(w->healthy[i]);
	for (size_t i = 0; i < w->n_failed; i++)
		free(w->failed[i]);
	free(w->instance_names);
	free(w->healthy);
	free(w->failed);
	w->instance_names = w->healthy = w->failed = NULL;
	w->n_instance_names = w->n_healthy = w->n_failed = 0;
	w->instances = 0;
	w->ready_instances = 0;
	/* names in serial order (inv->v is in failover order) */
	int64_t last = 0;
	for (;;) {
		struct rc_instance *next = NULL;
		for (size_t i = 0; i < inv->n; i++)
			if (inv->v[i].serial > last && (!next || inv->v[i].serial < next->serial))
				next = &inv->v[i];
		if (!next)
			break;
		last = next->serial;
		w->instances++;
		/* a terminating Pod is on its way out, whatever its last Ready said */
		w->ready_instances += next->pod_ready && !next->pod_terminating;
		rc_strv_push(&w->instance_names, &w->n_instance_names, next->name);
		if (next->has_status)
			rc_strv_push(&w->healthy, &w->n_healthy, next->name);
		else
			rc_strv_push(&w->failed, &w->n_failed, next->name);
	}
	struct rc_instance *p = find_instance(inv, w->current_primary);
	if (p && p->has_status && p->is_primary && p->timeline_id > 0)
		w->timeline_id = p->timeline_id;
	rc_status_clear_reported(w);
	w->reported_known = true;
	rc_note_unreachable(r->ctl, r->key, inv->v, inv->n, rc_mono_ms());
	if (p && p->has_status && p->is_primary && p->doc)
		rc_note_sync_set(r->ctl, r->key, p->doc);
	rc_sync_set_merge(r->ctl, r->key, &w->sync_standbys, &w->n_sync_standbys);
	/* SYNC and MAX LAG exactly as the live API computes and prints them */
	struct rc_repl_member *m = op_calloc(inv->n ? inv->n : 1, sizeof(*m));
	for (size_t i = 0; i < inv->n; i++)
		m[i] = (struct rc_repl_member){ .pod = inv->v[i].name, .doc = inv->v[i].doc,
						.reachable = inv->v[i].has_status };
	struct rc_repl_summary sum;
	rc_repl_summarize(r->obj, m, inv->n, &sum);
	free(m);
	char lag[64];
	rc_repl_lag_text(&sum.max, lag, sizeof(lag));
	set_str(&w->sync, sum.sync);
	set_str(&w->max_lag, lag);
	for (size_t i = 0; i < inv->n; i++)
		if (inv->v[i].has_status)
			rc_status_add_reported(w, inv->v[i].name, inv->v[i].is_primary,
					       inv->v[i].timeline_id, inv->v[i].ip);
	/* PendingRestart: instances (serial order) whose /pg/status says a changed
	 * parameter waits for a restart (the rolling restart, rollout.c, does it). */
	w->pending_known = false;
	while (w->n_pending_restart)
		free(w->pending_restart[--w->n_pending_restart]);
	for (size_t k = 0; k < w->n_instance_names; k++) {
		struct rc_instance *in = find_instance(inv, w->instance_names[k]);
		if (!in || !in->has_status)
			continue;
		w->pending_known = true;
		if (in->pending_restart)
			rc_strv_push(&w->pending_restart, &w->n_pending_restart, in->name);
	}
	free(w->archiving_msg);
	w->archiving = rc_archiving_decide(p && p->has_status && p->is_primary ? p->doc : NULL,
					   api_cluster_wal_store(r->c) != NULL, &w->archiving_msg);
	if (r->plugin_error && api_cluster_barman_plugin(r->c)) { /* its ObjectStore is wrong */
		free(w->archiving_msg);
		w->archiving = RC_ARCH_FAILING;
		w->archiving_msg = op_strdup(r->plugin_error);
	}
	free(w->selector);
	w->selector = op_asprintf("%s=%s,%s=instance", RC_LABEL_CLUSTER, r->name,
				  RC_LABEL_POD_ROLE);
}

/* failoverQuorum (CloudNativePG 1.27): promote only when R + W > N, R the
 * replicas that answer, W the synchronous number + the primary. 0 = off. */
static int64_t failover_quorum(const struct api_cluster *c, size_t n)
{
	const struct api_synchronous *s = &c->spec.postgresql.synchronous;
	if (!s->present || !s->failover_quorum || s->number <= 0)
		return 0;
	int64_t q = (int64_t)n - s->number;
	return q > 0 ? q : 0;
}

/* handle_failover in two halves: the decision (failover_plan_make: what the
 * instances say, fed to the pure rc_failover_decide) and its execution
 * (failover_execute: Events, phase, status fields, requeue). */

/* A failover decision and what carrying it out needs. Ownership: in's
 * pointers are borrowed from the run's inventory and status, in.sync_only
 * from sync (owned here); now_s and stamp owned. fo_plan_done frees them. */
struct fo_plan {
	struct rc_failover_input in;
	struct rc_failover_decision d; /* d.target borrowed from in.v */
	struct rc_strv sync;           /* owned: dataDurability's candidates */
	bool pending;                  /* targetPrimary is "pending" */
	int64_t pending_since;         /* the fence clock of "pending" (Unix ms), 0 = unknown */
	int64_t cut_deadline;          /* rc_request_cuts' deadline (monotonic ms), 0 = none */
	char *now_s;                   /* owned: r->now, RFC 3339 */
	char *stamp;                   /* owned: targetPrimaryTimestamp to write (µs) */
};

static void fo_plan_done(struct fo_plan *p)
{
	rc_strv_freep(&p->sync);
	free(p->now_s);
	free(p->stamp);
}

/* A switchover (or promotion) the instances are carrying out: the old
 * primary leaves the -rw Service. Returns 1 when so (stop here), 0 when not,
 * <0 on error (r->err). */
static int failover_switching(struct rc_run *r, struct inventory *inv)
{
	struct rc_status *w = &r->want;
	const char *cur = w->current_primary, *target = w->target_primary;
	if (!cur || !*cur || !target || !*target || strcmp(cur, target) == 0 ||
	    str_eq(target, RC_PENDING_FAILOVER))
		return 0;
	/* the instances are switching: the old primary must take no writes */
	int ret = set_role(r, inv, cur, RC_ROLE_UNHEALTHY);
	if (ret < 0)
		return ret;
	if (!str_eq(w->phase, RC_PHASE_SWITCHOVER) && !str_eq(w->phase, RC_PHASE_FAILOVER)) {
		rc_event(r, "Normal", "SwitchoverStarted",
			 "switching the primary from %s to %s: %s is out of the -rw "
			 "Service and shuts down",
			 cur, target, cur);
		set_phase(r, RC_PHASE_SWITCHOVER, NULL);
	}
	rc_requeue(r, 1000);
	return 1;
}

/* The Event of a switchover or failover that ended: the target answers as
 * the primary. */
static void failover_completed_event(struct rc_run *r, struct inventory *inv)
{
	const struct rc_status *w = &r->want;
	const char *cur = w->current_primary;
	if (!cur || !*cur || !str_eq(cur, w->target_primary) ||
	    (!str_eq(w->phase, RC_PHASE_SWITCHOVER) && !str_eq(w->phase, RC_PHASE_FAILOVER)))
		return;
	struct rc_instance *p = find_instance(inv, cur);
	if (p && p->has_status && p->is_primary)
		rc_event(r, "Normal",
			 str_eq(w->phase, RC_PHASE_FAILOVER) ? "FailoverCompleted"
							     : "SwitchoverCompleted",
			 "%s is the primary (timeline %lld)", cur, (long long)p->timeline_id);
}

/* Fills pl->in (and pl->sync, pl->pending, pl->pending_since) from the
 * status, the spec and what this process remembers of the Cluster: the
 * failing clock, the fence clock, failoverQuorum, dataDurability's set. */
static void failover_input(struct rc_run *r, struct inventory *inv, struct fo_plan *pl)
{
	struct rc_status *w = &r->want;
	pl->pending = str_eq(w->target_primary, RC_PENDING_FAILOVER);
	int64_t since = 0;
	if (w->failing_since && api_time_parse(w->failing_since, &since) < 0)
		since = 0; /* unreadable: as not failing */
	if (pl->pending && w->target_since) { /* microseconds, or whole seconds (older pgop) */
		if (api_time_parse_ms(w->target_since, &pl->pending_since) < 0)
			pl->pending_since = 0; /* unreadable: as not known */
		if (pl->pending_since)
			pl->pending_since = rc_fence_clock_ms(pl->pending_since,
							      rc_pending_returned(r->ctl, r->key));
	} else if (!pl->pending) {
		rc_note_pending_returned(r->ctl, r->key, 0);
	}
	pl->in = (struct rc_failover_input){
		.current_primary = w->current_primary, .target_primary = w->target_primary,
		.v = inv->v, .n = inv->n,
		.failover_delay_s = r->c->spec.failover_delay, .failing_since = since,
		.pending_since_ms = pl->pending_since,
		.fence_wait_ms = rc_fence_lease_ms(r->ctl, r->key) + API_FENCE_MARGIN_MS,
		.quorum = failover_quorum(r->c, inv->n),
		.now = r->now, .now_ms = r->now_ms,
	};
	/* dataDurability required (CNPG's default with a synchronous block): only a
	 * replica the old primary last named synchronous is promoted */
	const struct api_synchronous *sy = &r->c->spec.postgresql.synchronous;
	if (sy->present && (!sy->data_durability || str_eq(sy->data_durability, "required"))) {
		rc_sync_set_get(r->ctl, r->key, &pl->sync.v, &pl->sync.n);
		if (pl->sync.n) {
			pl->in.sync_only = pl->sync.v;
			pl->in.n_sync_only = pl->sync.n;
		}
	}
}

/* A Ready primary that does not answer: once failoverDelay has passed, the
 * replicas that cannot reach it either cut their WAL receivers
 * (reconciler/cut.c), so that they count as having lost it now rather than
 * after their wal_receiver_timeout. Their answers replace their entries in
 * inv (sorted again); pl->cut_deadline set when some cut. */
static void failover_cuts(struct rc_run *r, struct inventory *inv, struct fo_plan *pl)
{
	const struct rc_instance *old = find_instance(inv, r->want.current_primary);
	const int64_t since = pl->in.failing_since;
	if (!pl->pending && old && old->ip && old->pod_ready && !old->pod_terminating &&
	    !old->has_status && !old->restarting && inv->n > 1 &&
	    (pl->in.failover_delay_s <= 0 || (since && r->now - since >= pl->in.failover_delay_s)) &&
	    rc_cut_due(r->ctl, r->key, rc_mono_ms())) {
		pl->cut_deadline = rc_request_cuts(r, inv->v, inv->n, old);
		rc_instances_sort(inv->v, inv->n);
	}
}

/* The decision: pl->d from pl->in, on the clock read now. A fence wait that
 * ends within RC_FENCE_SLEEP_MS is slept here and decided again. */
static void failover_plan_make(struct rc_run *r, struct inventory *inv, struct fo_plan *pl)
{
	failover_input(r, inv, pl);
	failover_cuts(r, inv, pl);
	pl->now_s = api_time_rfc3339(r->now);
	/* targetPrimaryTimestamp, in microseconds: the present, not r->now (read
	 * before the instances were asked, up to the status timeout earlier). For
	 * "pending" it starts the fence clock: write_status stamps it again when
	 * the patch is late (API_FENCE_STAMP_MS). */
	pl->stamp = api_time_rfc3339_us(api_time_now_us());
	/* the fence wait is counted on the clock read now, after the instances
	 * answered: the promotion comes after the decision anyway */
	struct rc_failover_input *in = &pl->in;
	in->now_ms = api_time_now_us() / 1000;
	rc_failover_decide(in, &pl->d);
	int64_t left = in->pending_since_ms + in->fence_wait_ms - in->now_ms;
	if (pl->d.action == RC_FO_WAIT_FENCE && in->pending_since_ms && left <= RC_FENCE_SLEEP_MS) {
		/* this reconcile came RC_FENCE_EARLY_MS early: wait the rest here
		 * rather than a requeue and another round of questions */
		struct timespec ts = { 0, (left >= 0 ? left + 1 : 0) * 1000000L };
		nanosleep(&ts, NULL);
		in->now_ms = api_time_now_us() / 1000;
		rc_failover_decide(in, &pl->d);
	}
}

/* Execution, the primary is there or may come back: no failover, split
 * brain, a status-check blip, failoverDelay, a restart. */
static int failover_execute_watch(struct rc_run *r, struct inventory *inv,
				  const struct fo_plan *pl)
{
	struct rc_status *w = &r->want;
	const char *cur = w->current_primary;
	switch (pl->d.action) {
	case RC_FO_NONE:
		if (w->failing_since)
			rc_event(r, "Normal", "PrimaryBack", "primary %s answers again: no failover",
				 cur ? cur : "");
		set_str(&w->failing_since, NULL);
		return 0;
	case RC_FO_SPLIT_BRAIN: {
		struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		for (size_t i = 0; i < inv->n; i++)
			if (inv->v[i].has_status && inv->v[i].is_primary &&
			    op_buf_addf(&b, "%s%s", b.len ? ", " : "", inv->v[i].name) < 0)
				break;
		rc_event(r, "Warning", "SplitBrain",
			 "more than one instance reports being primary (%s): waiting for the old "
			 "primary to step down",
			 op_buf_str(&b));
		op_buf_done(&b);
		rc_requeue(r, 5000);
		return 1;
	}
	case RC_FO_PRIMARY_CHECK: {
		static const char why[] = "the primary's status endpoint does not answer, its "
					  "replicas still have it: no failover";
		if (!str_eq(w->phase_reason, why))
			rc_event(r, "Warning", "PrimaryStatusCheckFailed",
				 "primary %s is Ready but its status endpoint does not answer; its "
				 "replicas still stream from it, so it is not failed over",
				 cur);
		set_phase(r, w->phase ? w->phase : RC_PHASE_WAITING_ACTIVE, why);
		if (pl->d.start_failing_clock) /* failoverDelay counts from now */
			set_str(&w->failing_since, pl->now_s);
		/* the replicas cut when they cannot reach it either, or their WAL
		 * receivers time out within 5 s of losing it: look again soon, so
		 * that "pending" follows by a fraction of a second */
		rc_requeue(r, REQUEUE_PRIMARY_CHECK_MS);
		return 1;
	}
	case RC_FO_WAIT_DELAY:
		if (pl->d.start_failing_clock) {
			_cleanup_free_ char *t = api_time_rfc3339(r->now);
			set_str(&w->failing_since, t);
			rc_event(r, "Warning", "PrimaryFailing",
				 "primary %s is not available: failing over in %lld s (failoverDelay) "
				 "unless it comes back",
				 cur ? cur : "", (long long)r->c->spec.failover_delay);
		}
		rc_requeue(r, 1000);
		return 1;
	case RC_FO_WAIT_RESTART: {
		struct rc_instance *p = find_instance(inv, cur);
		bool in_place = p && p->restarting;
		if (pl->d.start_failing_clock) {
			set_str(&w->failing_since, pl->now_s);
			rc_event(r, "Warning", "PrimaryRestarting",
				 in_place ? "primary %s: postgres restarts in place (crash recovery); "
					    "failing over if it is not back within %d s"
					  : "primary %s: its container restarts; failing over if it "
					    "is not back within %d s",
				 cur, in_place ? RC_RESTART_GRACE_S : RC_CONTAINER_GRACE_S);
		}
		rc_requeue(r, 500);
		return 1;
	}
	default:
		return 0;
	}
}

/* Execution, a failover waiting: for the old primary's lease, a quorum of
 * replicas, a synchronous replica, the WAL receivers to stop. Each sets the
 * phase (and its Event) once. */
static int failover_execute_wait(struct rc_run *r, const struct fo_plan *pl)
{
	struct rc_status *w = &r->want;
	const char *cur = w->current_primary;
	switch (pl->d.action) {
	case RC_FO_WAIT_FENCE:
		if (!pl->pending_since) /* "pending" written by an older pgop: start the clock */
			set_str(&w->target_since, pl->stamp);
		if (!str_eq(w->phase_reason, "waiting for the old primary's lease to expire")) {
			rc_event(r, "Normal", "FailoverFencing",
				 "%s may still accept writes until its lease expires (%d ms): "
				 "promoting after that",
				 cur ? cur : "", (int)pl->in.fence_wait_ms);
			set_phase(r, RC_PHASE_FAILOVER,
				  "waiting for the old primary's lease to expire");
		}
		rc_requeue(r, rc_failover_fence_requeue_ms(&pl->in));
		return 1;
	case RC_FO_NO_QUORUM:
		if (!str_eq(w->phase_reason, "waiting for a quorum of replicas")) {
			rc_event(r, "Warning", "FailoverQuorum",
				 "failoverQuorum: fewer than %lld replicas answer, the most advanced "
				 "may miss acknowledged commits: not promoting",
				 (long long)pl->in.quorum);
			set_phase(r, RC_PHASE_FAILOVER, "waiting for a quorum of replicas");
		}
		rc_requeue(r, 1000);
		return 1;
	case RC_FO_NO_SYNC:
		if (!str_eq(w->phase_reason, "waiting for a synchronous replica")) {
			rc_event(r, "Warning", "FailoverNoSynchronousReplica",
				 "dataDurability required: none of the replicas %s last named "
				 "synchronous answers: not promoting",
				 cur ? cur : "");
			set_phase(r, RC_PHASE_FAILOVER, "waiting for a synchronous replica");
		}
		rc_requeue(r, 1000);
		return 1;
	case RC_FO_WAIT_WAL_RECEIVERS:
		if (!str_eq(w->phase_reason, "waiting for the WAL receivers to stop")) {
			rc_event(r, "Normal", "FailoverWaiting",
				 "waiting for every replica's WAL receiver to stop before choosing "
				 "the new primary");
			set_phase(r, RC_PHASE_FAILOVER, "waiting for the WAL receivers to stop");
		}
		rc_requeue(r, 1000);
		return 1;
	default:
		return 0;
	}
}

/* Execution, a failover step that changes targetPrimary: "pending" (the
 * old primary out of the -rw Service first), cancelled, or the promotion.
 * <0 on error (r->err). */
static int failover_execute_move(struct rc_run *r, struct inventory *inv,
				 const struct fo_plan *pl)
{
	struct rc_status *w = &r->want;
	const char *cur = w->current_primary;
	switch (pl->d.action) {
	case RC_FO_MARK_PENDING: {
		int ret = set_role(r, inv, cur, RC_ROLE_UNHEALTHY);
		if (ret < 0)
			return ret;
		rc_event(r, "Warning", "FailingOver", "primary %s is not available: failing over",
			 cur ? cur : "");
		set_str(&w->target_primary, RC_PENDING_FAILOVER);
		set_str(&w->target_since, pl->stamp);
		set_phase(r, RC_PHASE_FAILOVER, NULL);
		r->cut_deadline_ms = pl->cut_deadline;
		rc_requeue(r, 1000);
		return 1;
	}
	case RC_FO_CANCEL:
		rc_event(r, "Normal", "FailoverCancelled",
			 "%s answers as primary again before any replica was promoted: it stays "
			 "the primary",
			 cur ? cur : "");
		set_str(&w->target_primary, cur);
		set_str(&w->target_since, pl->stamp);
		set_str(&w->failing_since, NULL);
		set_phase(r, RC_PHASE_WAITING_ACTIVE, NULL);
		rc_requeue(r, 1000);
		return 1;
	case RC_FO_PROMOTE:
		rc_event(r, "Normal", "FailoverTarget", "promoting %s (most advanced replica)",
			 pl->d.target);
		set_str(&w->target_primary, pl->d.target);
		set_str(&w->target_since, pl->stamp);
		set_str(&w->failing_since, NULL);
		set_phase(r, RC_PHASE_FAILOVER, NULL);
		rc_requeue(r, 1000);
		return 1;
	default:
		return 0;
	}
}

/* Carries out pl->d. Returns 1 when a step ran (stop here), 0 otherwise, <0
 * on error (r->err). */
static int failover_execute(struct rc_run *r, struct inventory *inv, const struct fo_plan *pl)
{
	switch (pl->d.action) {
	case RC_FO_NONE:
	case RC_FO_SPLIT_BRAIN:
	case RC_FO_PRIMARY_CHECK:
	case RC_FO_WAIT_DELAY:
	case RC_FO_WAIT_RESTART:
		return failover_execute_watch(r, inv, pl);
	case RC_FO_WAIT_FENCE:
	case RC_FO_NO_QUORUM:
	case RC_FO_NO_SYNC:
	case RC_FO_WAIT_WAL_RECEIVERS:
		return failover_execute_wait(r, pl);
	case RC_FO_MARK_PENDING:
	case RC_FO_CANCEL:
	case RC_FO_PROMOTE:
		return failover_execute_move(r, inv, pl);
	}
	return 0;
}

/* The failover step: a switchover under way, else decide and execute.
 * Returns 1 when a failover/switchover step ran (stop here), 0 otherwise,
 * <0 on error (r->err). inv borrowed (its instances re-sorted after cuts). */
static int handle_failover(struct rc_run *r, struct inventory *inv)
{
	int ret = failover_switching(r, inv);
	if (ret != 0)
		return ret;
	failover_completed_event(r, inv);
	struct fo_plan pl = { 0 };
	failover_plan_make(r, inv, &pl);
	ret = failover_execute(r, inv, &pl);
	fo_plan_done(&pl);
	return ret;
}

/* --------------------------------------------------------------- main */

/* The current primary is fenced (cnpg.io/fencedInstances): its instance
 * manager stopped postgres on purpose; no failover nor switchover replaces
 * it (CloudNativePG: "The current primary instance is fenced ... we won't
 * trigger a switchover"). */
static bool primary_fenced(struct rc_run *r)
{
	const char *cur = r->want.current_primary;
	return cur && *cur && api_fenced(&r->c->metadata.annotations, cur);
}

static int ensure_objects(struct rc_run *r)
{
	int ret = rc_ensure_pki(r);
	if (ret == 0)
		ret = rc_ensure_user_secrets(r);
	if (ret == 0)
		ret = rc_ensure_rbac(r);
	if (ret == 0)
		ret = rc_ensure_services(r);
	if (ret == 0)
		rc_ensure_podmonitor(r); /* podmonitor.c: never fails the reconcile */
	if (ret == 0) {
		struct op_err e = OP_ERR_INIT;
		struct op_err *saved = r->err;
		r->err = &e;
		if (rc_ensure_client_cert(r) < 0)
			op_log_warn("no operator client certificate", "cluster", r->key, "error",
				    e.msg);
		r->err = saved;
	}
	return ret;
}

/* An instance whose pg_rewind failed re-cloned its data (instance/reclone.c)
 * and says so in its /pg/status: one Event per re-clone. The instance
 * managers have no RBAC for Events (docs/instance-contract.md). */
static void reclone_events(struct rc_run *r, const struct inventory *inv)
{
	for (size_t i = 0; i < inv->n; i++) {
		const struct rc_instance *in = &inv->v[i];
		struct rc_reclone_report rep;
		if (!in->has_status || rc_reclone_report(in->doc, &rep) != 1)
			continue;
		_cleanup_free_ char *id = op_asprintf("%s %s", rep.session_id ? rep.session_id : "",
						      rep.time);
		if (rc_note_report(r->ctl, r->key, in->name, id))
			rc_event(r, "Warning", "RewindFailedRecloned",
				 "pg_rewind failed on %s (exit status %lld): re-cloned it from %s "
				 "at %s",
				 in->name, (long long)rep.rewind_status,
				 rep.source ? rep.source : "the primary", rep.time);
	}
}

/* The condition of this type in the status read at the start (borrowed), or NULL. */
static json_object *old_condition(const struct status_base *b, const char *type)
{
	json_object *conds = b->status ? op_json_at(b->status, "conditions") : NULL;
	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds);
	     i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (str_eq(op_json_str_at(c, "type"), type))
			return c;
	}
	return NULL;
}

/* An Event when the set of instances waiting for a restart grows or changes. */
static void pending_restart_event(struct rc_run *r, const struct status_base *b)
{
	if (!r->want.pending_known)
		return;
	_cleanup_free_ char *msg = rc_status_pending_message(&r->want);
	if (!msg)
		return;
	json_object *c = old_condition(b, "PendingRestart");
	const char *old = str_eq(op_json_str_at(c, "status"), "True") ? op_json_str_at(c, "message")
								       : NULL;
	if (!str_eq(old, msg))
		rc_event(r, "Warning", "PendingRestart", "%s: rolling restart once the cluster is "
			 "healthy (replicas first, then the primary by primaryUpdateStrategy/Method)",
			 msg);
}

/* Events when WAL archiving starts failing (or fails for another reason:
 * the store's own error) and when it works again, so `kubectl describe`
 * shows what the condition ContinuousArchiving says. */
static void archiving_event(struct rc_run *r, const struct status_base *b)
{
	const struct rc_status *w = &r->want;
	json_object *c = old_condition(b, "ContinuousArchiving");
	const char *was = op_json_str_at(c, "status");
	if (w->archiving == RC_ARCH_FAILING &&
	    !(str_eq(was, "False") && str_eq(op_json_str_at(c, "message"), w->archiving_msg)))
		rc_event(r, "Warning", "ContinuousArchivingFailing", "%s (postgres keeps the WAL "
			 "until it is archived)", w->archiving_msg);
	else if (w->archiving == RC_ARCH_OK && str_eq(was, "False"))
		rc_event(r, "Normal", "ContinuousArchivingSuccess", "WAL archiving works again");
}

static int reconcile_valid(struct rc_run *r, struct status_base *b)
{
	int ret = ensure_objects(r);
	if (ret < 0) {
		if (!str_eq(r->want.phase, RC_PHASE_CANNOT_CREATE_OBJECTS))
			rc_event(r, "Warning", "ObjectsFailed", "%s", r->err->msg);
		set_phase(r, RC_PHASE_CANNOT_CREATE_OBJECTS, r->err->msg);
		return ret;
	}
	if (ret > 0)
		return 0;
	struct inventory inv = { 0 };
	inventory_load(r, &inv);
	/* drains and PodDisruptionBudgets (reconciler/drain.c) */
	struct rc_nodes nodes;
	rc_nodes_load(r, inv.v, inv.n, inv.pods, &nodes);
	rc_ensure_pdbs(r, inv.v, inv.n, nodes.draining);
	/* cnpg.io/hibernation owns the reconcile while Pods go or the primary comes back */
	ret = rc_hibernation_step(r, inv.v, inv.n);
	/* a primary restarting in place on purpose is not failing (rollout.h); a
	 * fenced one is not replaced (CloudNativePG's handleSwitchover), nor
	 * switched over for a drain */
	bool fenced = primary_fenced(r);
	if (ret == 0 && !rc_rollout_holds(r, inv.v, inv.n, inv.pods) && !fenced)
		ret = handle_failover(r, &inv);
	if (ret == 0 && !fenced)
		ret = rc_drain_step(r, inv.v, inv.n, nodes.draining);
	if (ret == 0)
		ret = rc_unschedulable_step(r, inv.pods);
	if (ret == 0)
		ret = rc_node_lost_step(r, inv.v, inv.n, &nodes);
	if (ret == 0) {
		const char *primary = r->want.current_primary;
		for (size_t i = 0; i < inv.n && ret >= 0 && primary && *primary; i++)
			ret = set_role(r, &inv, inv.v[i].name,
				       str_eq(inv.v[i].name, primary) ? RC_ROLE_PRIMARY
								      : RC_ROLE_REPLICA);
	}
	if (ret == 0)
		ret = reconcile_instances(r, &inv, b);
	if (ret == 0)
		ret = rc_rollout_step(r, inv.v, inv.n, inv.pods);
	fill_instances_status(r, &inv);
	/* the Cluster's Backups, listed once for both steps (borrowed by them) */
	json_object *backups = ret == 0 ? rc_backups_of(r->ctl, RC_INF_BACKUPS, r->ns, r->name)
					: NULL;
	if (ret == 0 && (rc_scheduled_backups_step(r, backups) < 0 ||
			 rc_backups_step(r, inv.v, inv.n, backups) < 0)) { /* the Cluster goes on */
		op_log_warn("backups: reconcile failed", "cluster", r->key, "error", r->err->msg);
		op_err_clear(r->err);
		rc_requeue(r, REQUEUE_WAIT_STATUS_MS);
	}
	if (backups)
		json_object_put(backups);
	rc_tablespaces_status(r, inv.v, inv.n);
	pending_restart_event(r, b);
	archiving_event(r, b);
	reclone_events(r, &inv);
	rc_metrics_error_events(r, inv.v, inv.n);
	bool status_error = false;
	if (ret == 0) {
		bool any_ready = false, any_status = false;
		for (size_t i = 0; i < inv.n; i++) {
			any_ready |= inv.v[i].pod_ready;
			any_status |= inv.v[i].has_status;
		}
		struct rc_instance *p = find_instance(&inv, r->want.current_primary);
		if (any_ready && !any_status) {
			if (!str_eq(r->want.phase, RC_PHASE_STATUS_ERROR))
				rc_event(r, "Warning", "StatusExtractionError",
					 "no Ready instance answers GET /pg/status (%s)",
					 inv.n && inv.v[0].error ? inv.v[0].error : "unknown");
			set_phase(r, RC_PHASE_STATUS_ERROR, NULL);
			status_error = true;
		} else if (p && p->is_primary && r->want.ready_instances == r->c->spec.instances &&
			   r->want.instances == r->c->spec.instances && r->want.n_failed == 0) {
			if (!str_eq(r->want.phase, RC_PHASE_HEALTHY))
				rc_event(r, "Normal", "ClusterReady", "cluster is healthy: %lld instances",
					 (long long)r->want.instances);
			set_phase(r, RC_PHASE_HEALTHY, NULL);
			r->want.ready = true;
		} else {
			set_phase(r, RC_PHASE_WAITING_ACTIVE, NULL);
			rc_requeue(r, wait_requeue_ms(&inv));
		}
	}
	if (!str_eq(r->want.phase, RC_PHASE_HEALTHY))
		r->want.ready = false;
	/* no Ready instance answers: back off (10 s doubling to 60 s), not the 5 s poll */
	long backoff = rc_note_status_error(r->ctl, r->key, status_error);
	rc_requeue(r, status_error ? backoff : REQUEUE_HEALTHY_MS);
	rc_nodes_done(&nodes); /* before the Pods its names point into */
	inventory_done(&inv);
	return ret < 0 ? ret : 0;
}

/* Joins "path: msg" items. */
static char *type_errors_reason(const struct api_errors *errs)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	for (size_t i = 0; i < errs->n; i++)
		if (op_buf_addf(&b, "%s%s: %s", i ? ", " : "", errs->items[i].path,
				errs->items[i].msg) < 0)
			break;
	return op_buf_take(&b, NULL);
}

/* api_object_store_fn: the cached ObjectStore (owned copy) of the Cluster's namespace. */
static json_object *object_store(void *ud, const char *name)
{
	const struct rc_run *r = ud;
	return rc_cache_get(r->ctl, RC_INF_OBJECT_STORES, r->ns, name);
}

/* bootstrap.recovery.backup.name: the Backup's store becomes the recovery
 * source (api_cluster_use_backup), so the bootstrap Pod mounts its Secret
 * keys; the instance manager reads the Backup itself and fails with the same
 * words when it cannot be used. */
static void recovery_backup(struct rc_run *r)
{
	const struct api_recovery *rec = &r->c->spec.bootstrap.recovery;
	if (!rec->present || !rec->backup_name || rec->source)
		return;
	json_object *b = rc_cache_get(r->ctl, RC_INF_BACKUPS, r->ns, rec->backup_name);
	struct op_err e = OP_ERR_INIT;
	if (!b)
		op_err_set(&e, -ENOENT, "spec.bootstrap.recovery.backup.name: Backup %s does not "
			   "exist", rec->backup_name);
	if (!b || api_cluster_use_backup(r->c, b, &e) < 0)
		op_log_warn("recovery: the Backup cannot be used", "cluster", r->key, "error",
			    e.msg);
	if (b)
		json_object_put(b);
}

int rc_reconcile(struct rc_controller *ctl, const char *key, long *ret_requeue_ms,
		 struct op_err *err)
{
	*ret_requeue_ms = 0;
	const char *slash = strchr(key, '/');
	if (!slash)
		return op_err_set(err, -EINVAL, "bad key %s", key);
	_cleanup_free_ char *ns = op_strndup(key, (size_t)(slash - key));
	json_object *obj = rc_cache_get(ctl, RC_INF_CLUSTERS, ns, slash + 1);
	if (!obj || terminating(obj)) { /* gone: the garbage collector removes the rest */
		if (obj)
			json_object_put(obj);
		rc_state_drop(ctl, key); /* a Cluster re-created starts afresh */
		return 0;
	}
	if (api_reconciliation_disabled(obj)) { /* cnpg.io/reconciliationLoop: disabled */
		op_log_info("reconciliation disabled (cnpg.io/reconciliationLoop), skipped",
			    "cluster", key);
		json_object_put(obj);
		return 0; /* its annotation's change is an event: no requeue */
	}
	const int64_t start_us = api_time_now_us();
	struct rc_run r = { .ctl = ctl, .key = key, .obj = obj, .now = start_us / 1000000,
			    .now_ms = start_us / 1000, .err = err, .ns = ns, .name = slash + 1 };
	struct status_base b = { 0 };
	struct api_errors errs = { 0 };
	struct op_err derr = OP_ERR_INIT;
	int ret = api_cluster_decode(obj, &errs, &r.c, &derr);
	rc_status_from_json(op_json_at(obj, "status"), &r.want);
	json_object *st = op_json_at(obj, "status");
	if (st && json_object_deep_copy(st, &b.status, NULL) != 0)
		abort();
	b.rv = kube_obj_resource_version(obj) ? op_strdup(kube_obj_resource_version(obj)) : NULL;
	char *invalid = NULL;
	if (ret < 0) {
		invalid = type_errors_reason(&errs);
	} else if (ctl->validate) {
		int v = ctl->validate(ctl->validate_ud, obj, &invalid);
		if (v < 0) {
			ret = op_err_set(err, v, "validating %s failed", key);
			goto out;
		}
	}
	if (invalid) {
		if (!str_eq(r.want.phase, RC_PHASE_INVALID) ||
		    !str_eq(r.want.phase_reason, invalid))
			rc_event(&r, "Warning", "InvalidClusterDefinition", "%s", invalid);
		set_phase(&r, RC_PHASE_INVALID, invalid);
		r.want.ready = false;
		free(invalid);
		ret = write_status(&r, &b);
		ret = ret < 0 ? ret : 0;
		goto out;
	}
	r.ns = r.c->metadata.namespace_ ? r.c->metadata.namespace_ : ns;
	r.name = r.c->metadata.name;
	if (str_eq(r.want.phase, RC_PHASE_INVALID))
		set_phase(&r, NULL, NULL);
	struct op_err perr = OP_ERR_INIT;
	if (api_cluster_resolve_plugins(r.c, object_store, &r, &perr) < 0) {
		r.plugin_error = op_strdup(perr.msg);
		op_log_warn("the barman-cloud plugin's ObjectStore cannot be used", "cluster", key,
			    "error", perr.msg);
	}
	recovery_backup(&r);
	ret = reconcile_valid(&r, &b);
	int w = write_status(&r, &b);
	if (ret == 0 && w < 0)
		ret = w;
	*ret_requeue_ms = r.requeue_ms;
out:
	api_errors_done(&errs);
	api_cluster_free(r.c);
	rc_status_done(&r.want);
	pki_pair_done(&r.ca);
	pki_pair_done(&r.client);
	free(r.plugin_error);
	if (r.secrets)
		json_object_put(r.secrets);
	if (b.status)
		json_object_put(b.status);
	free(b.rv);
	json_object_put(obj);
	return ret;
}
