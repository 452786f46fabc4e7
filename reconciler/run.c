/* reconciler/run.c - what every step of one reconcile (struct rc_run, ctl.h)
 * does to the API server and the Cluster: requeue, Events, create, delete,
 * label patches. Above state.c (the stats), below the reconcile steps
 * (reconcile_objects.c, rollout.c, reconcile.c) that call it
 * (docs/internals/reconciler.md, "Layers"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/names.h"
#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

void rc_requeue(struct rc_run *r, long ms)
{
	if (ms > 0 && (r->requeue_ms == 0 || ms < r->requeue_ms))
		r->requeue_ms = ms;
}

void rc_event(struct rc_run *r, const char *type, const char *reason, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	/* queued: posted in the background, never waited for (kube/recorder.h);
	 * a full queue drops it, counted in pgop_kube_events_dropped_total */
	if (r->ctl->rec)
		kube_recorder_emit(r->ctl->rec, r->obj, type, reason, msg ? msg : reason);
	op_log_info(msg ? msg : reason, "cluster", r->key, "event", reason);
	free(msg);
}

int rc_create(struct rc_run *r, const struct kube_kind *k, json_object *obj)
{
	return rc_create_rv(r, k, obj, NULL);
}

int rc_create_rv(struct rc_run *r, const struct kube_kind *k, json_object *obj, char **ret_rv)
{
	struct op_err e = OP_ERR_INIT;
	json_object *out = NULL;
	int ret = kube_create(r->ctl->kc, k, r->ns, obj, ret_rv ? &out : NULL, &e);
	if (ret_rv) {
		const char *rv = ret == 0 && out ? kube_obj_resource_version(out) : NULL;
		*ret_rv = rv ? op_strdup(rv) : NULL;
	}
	if (out)
		json_object_put(out);
	if (ret == -EEXIST)
		return 0;
	if (ret < 0)
		return op_err_set(r->err, ret, "%s", e.msg);
	rc_stat_add(r->ctl, &r->ctl->stats.objects_created);
	op_log_info("created", "cluster", r->key, "kind", k->kind, "name", kube_obj_name(obj));
	return 1;
}

int rc_delete(struct rc_run *r, const struct kube_kind *k, const char *name)
{
	return rc_delete_grace(r, k, name, -1);
}

int rc_delete_grace(struct rc_run *r, const struct kube_kind *k, const char *name, long grace_s)
{
	struct kube_delete_opts o = { .propagation = KUBE_PROPAGATE_BACKGROUND,
				      .grace_period_seconds = grace_s };
	struct op_err e = OP_ERR_INIT;
	int ret = kube_delete(r->ctl->kc, k, r->ns, name, &o, &e);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return op_err_set(r->err, ret, "%s", e.msg);
	rc_stat_add(r->ctl, &r->ctl->stats.objects_deleted);
	op_log_info("deleted", "cluster", r->key, "kind", k->kind, "name", name);
	return 1;
}

int rc_delete_instance(struct rc_run *r, int64_t serial, const char *pod, bool force)
{
	long grace = force ? 0 : -1;
	_cleanup_free_ char *j1 = rc_job_name(r->name, serial, RC_JOB_INITDB);
	_cleanup_free_ char *j2 = rc_job_name(r->name, serial, RC_JOB_JOIN);
	_cleanup_free_ char *data = api_pgdata_pvc_name(r->name, serial);
	_cleanup_free_ char *wal = api_wal_pvc_name(r->name, serial);
	/* bootstrap Pods and claims first (a claim stays until its pod is gone),
	 * then the pod: a claim without its pod is never mistaken for one to
	 * restart, and a failure halfway leaves the pod to be tried again */
	int ret = rc_delete_grace(r, KUBE_PODS, j1, grace);
	if (ret >= 0)
		ret = rc_delete_grace(r, KUBE_PODS, j2, grace);
	if (ret >= 0)
		ret = rc_delete(r, KUBE_PVCS, data);
	if (ret >= 0)
		ret = rc_delete(r, KUBE_PVCS, wal);
	for (size_t i = 0; ret >= 0 && i < r->c->spec.n_tablespaces; i++) {
		const char *t = r->c->spec.tablespaces[i].name;
		_cleanup_free_ char *tbs = t ? api_tablespace_pvc_name(pod, t) : NULL;
		if (tbs)
			ret = rc_delete(r, KUBE_PVCS, tbs);
	}
	if (ret >= 0)
		ret = rc_delete_grace(r, KUBE_PODS, pod, grace);
	return ret < 0 ? ret : 0;
}

int rc_patch_labels(struct rc_run *r, const struct kube_kind *k, const char *name, ...)
{
	json_object *p = op_jobj();
	json_object *labels = op_jchild(op_jchild(p, "metadata"), "labels");
	va_list ap;
	va_start(ap, name);
	for (const char *key; (key = va_arg(ap, const char *));) {
		const char *val = va_arg(ap, const char *);
		op_jsets(labels, key, val);
	}
	va_end(ap);
	int ret = kube_patch(r->ctl->kc, k, r->ns, name, KUBE_PATCH_MERGE,
			     json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, r->err);
	json_object_put(p);
	return ret;
}
