/* reconciler/drain.c - the steps of drains and PodDisruptionBudgets
 * (disruption.h): the Cluster's two PDBs, the switchover away from a node
 * being drained, and nodeMaintenanceWindow's reusePVC false. Layer 3. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/names.h"
#include "api/timestamp.h"
#include "reconciler/disruption.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static json_object *pod_named(json_object *pods, const char *name)
{
	for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
		json_object *p = json_object_array_get_idx(pods, i);
		if (str_eq(kube_obj_name(p), name))
			return p;
	}
	return NULL;
}

/* An instance whose Pod is not bound (Pending): when the scheduler cannot
 * place it because its PGDATA volume is pinned to a Node that no longer
 * exists (the Node object deleted outright: the PVC's selected-node names it,
 * the synced Node cache does not hold it), since when it has been
 * unschedulable (rc_pod_unschedulable_since), and *ret_node that node
 * (owned); -1 otherwise. A cache that has not synced (or a chart without the
 * Nodes RBAC) proves nothing. */
static int64_t pinned_to_deleted_node(struct rc_run *r, const struct rc_instance *in,
				      json_object *pod, char **ret_node)
{
	int64_t since = rc_pod_unschedulable_since(pod);
	struct kube_informer *nodes = rc_informer(r->ctl, RC_INF_NODES, NULL);
	if (since < 0 || !nodes || !kube_informer_has_synced(nodes))
		return -1;
	_cleanup_free_ char *pvc_name = api_pgdata_pvc_name(r->name, in->serial);
	json_object *pvc = rc_cache_get(r->ctl, RC_INF_PVCS, r->ns, pvc_name);
	const char *sel = op_json_key_str(op_json_at(pvc, "metadata.annotations"),
					  "volume.kubernetes.io/selected-node");
	json_object *node = sel && *sel ? rc_cache_get(r->ctl, RC_INF_NODES, NULL, sel) : NULL;
	if (sel && *sel && !node)
		*ret_node = op_strdup(sel);
	else
		since = -1;
	if (node)
		json_object_put(node);
	if (pvc)
		json_object_put(pvc);
	return since;
}

void rc_nodes_load(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods,
		   struct rc_nodes *ret)
{
	size_t m = n ? n : 1;
	*ret = (struct rc_nodes){ .draining = op_calloc(m, sizeof(*ret->draining)),
				  .lost_since = op_calloc(m, sizeof(*ret->lost_since)),
				  .name = op_calloc(m, sizeof(*ret->name)),
				  .n = n };
	for (size_t i = 0; i < n; i++) {
		json_object *pod = pod_named(pods, v[i].name);
		const char *node = op_json_str_at(pod, "spec.nodeName");
		if (!node || !*node) {
			ret->lost_since[i] = pinned_to_deleted_node(r, &v[i], pod, &ret->name[i]);
			continue;
		}
		json_object *obj = rc_cache_get(r->ctl, RC_INF_NODES, NULL, node);
		ret->draining[i] = rc_node_draining(obj);
		ret->lost_since[i] = rc_node_lost_since(obj);
		ret->name[i] = op_strdup(node);
		if (obj)
			json_object_put(obj);
	}
}

void rc_nodes_done(struct rc_nodes *nodes)
{
	free(nodes->draining);
	free(nodes->lost_since);
	for (size_t i = 0; nodes->name && i < nodes->n; i++)
		free(nodes->name[i]);
	free(nodes->name);
	*nodes = (struct rc_nodes){ 0 };
}

/* --------------------------------------------------------------- PDBs */

/* One PDB: want (owned, NULL = must not exist) against the cache. */
static int ensure_pdb(struct rc_run *r, const char *name, json_object *want)
{
	json_object *cur = rc_cache_get(r->ctl, RC_INF_PDBS, r->ns, name);
	int ret = 0;
	if (!want) {
		if (cur && !op_json_at(cur, "metadata.deletionTimestamp")) {
			ret = rc_delete(r, KUBE_PODDISRUPTIONBUDGETS, name);
			if (ret > 0)
				rc_event(r, "Normal", "DeletedPodDisruptionBudget",
					 "PodDisruptionBudget %s is not needed now", name);
		}
	} else if (!cur) {
		ret = rc_create(r, KUBE_PODDISRUPTIONBUDGETS, want);
	} else if (!json_object_equal(op_json_at(want, "spec.minAvailable"),
				      op_json_at(cur, "spec.minAvailable")) ||
		   !json_object_equal(op_json_at(want, "spec.selector"),
				      op_json_at(cur, "spec.selector"))) {
		json_object *p = op_jobj();
		json_object *spec = op_jchild(p, "spec");
		op_jset(spec, "minAvailable",
			json_object_get(op_json_at(want, "spec.minAvailable")));
		op_jset(spec, "selector", json_object_get(op_json_at(want, "spec.selector")));
		ret = kube_patch(r->ctl->kc, KUBE_PODDISRUPTIONBUDGETS, r->ns, name,
				 KUBE_PATCH_MERGE,
				 json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL,
				 r->err);
		json_object_put(p);
	}
	if (cur)
		json_object_put(cur);
	if (want)
		json_object_put(want);
	return ret;
}

void rc_ensure_pdbs(struct rc_run *r, const struct rc_instance *v, size_t n,
		    const bool *draining)
{
	bool primary_draining = false;
	for (size_t i = 0; i < n; i++)
		if (str_eq(v[i].name, r->want.current_primary))
			primary_draining = draining[i];
	struct rc_pdb_want w;
	rc_pdb_decide(r->c, primary_draining, &w);
	_cleanup_free_ char *pname = op_asprintf("%s-primary", r->name);
	struct op_err e = OP_ERR_INIT;
	struct op_err *saved = r->err;
	r->err = &e;
	int ret = ensure_pdb(r, pname, w.primary ? rc_build_pdb(r->c, true, 1) : NULL);
	if (ret >= 0)
		ret = ensure_pdb(r, r->name,
				 w.replicas ? rc_build_pdb(r->c, false, w.replicas_min) : NULL);
	r->err = saved;
	if (ret < 0) /* the Cluster goes on; looked at again at the next reconcile */
		op_log_warn("PodDisruptionBudgets: reconcile failed", "cluster", r->key, "error",
			    e.msg);
}

/* -------------------------------------------------------------- drain */

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? op_strdup(s) : NULL;
}

int rc_drain_step(struct rc_run *r, const struct rc_instance *v, size_t n,
		  const bool *draining)
{
	struct rc_status *w = &r->want;
	struct rc_drain_decision d;
	rc_drain_decide(v, n, draining, w->current_primary, w->target_primary, &d);
	if (d.action == RC_DRAIN_NONE)
		return 0;
	if (d.action == RC_DRAIN_WAIT) { /* one Event per primary (rc_note_report) */
		if (n > 1 && rc_note_report(r->ctl, r->key, "drain-wait", w->current_primary))
			rc_event(r, "Warning", "DrainWaiting",
				 "primary %s runs on a node being drained; no Ready streaming "
				 "replica on another node to switch over to: its "
				 "PodDisruptionBudget holds the eviction",
				 w->current_primary);
		rc_requeue(r, 2000);
		return 0;
	}
	rc_note_report(r->ctl, r->key, "drain-wait", ""); /* a later wait reports again */
	rc_event(r, "Normal", "SwitchingOver",
		 "current primary %s is running on a node being drained, switching over to %s",
		 w->current_primary, d.target);
	op_log_info("drain: switching over", "cluster", r->key, "from", w->current_primary, "to",
		    d.target);
	_cleanup_free_ char *stamp = api_time_rfc3339_us(api_time_now_us());
	set_str(&w->target_primary, d.target);
	set_str(&w->target_since, stamp);
	set_str(&w->phase, RC_PHASE_SWITCHOVER);
	_cleanup_free_ char *reason = op_asprintf("switching over to %s: the primary's node is "
						  "being drained",
						  d.target);
	set_str(&w->phase_reason, reason);
	rc_requeue(r, 1000);
	return 1;
}

/* ------------------------------------------------------ unschedulable */

int rc_unschedulable_step(struct rc_run *r, json_object *pods)
{
	if (!api_cluster_maintenance_in_progress(r->c) || api_cluster_reuse_pvc(r->c))
		return 0;
	for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
		json_object *p = json_object_array_get_idx(pods, i);
		const char *name = kube_obj_name(p);
		struct rc_instance in = { 0 };
		if (rc_instance_from_pod(r->name, p, &in) < 0)
			continue;
		bool skip = in.pod_terminating || str_eq(name, r->want.current_primary) ||
			    str_eq(name, r->want.target_primary) || !rc_pod_unschedulable(p);
		int64_t serial = in.serial;
		rc_instance_done(&in);
		if (skip)
			continue;
		op_log_warn("deleting an unschedulable instance and its volumes", "cluster",
			    r->key, "pod", name);
		int ret = rc_delete_instance(r, serial, name, false);
		if (ret < 0)
			return ret;
		rc_event(r, "Normal", "DeletePod", "Deleted unschedulable pod %s", name);
		rc_event(r, "Normal", "DeletePVCs", "Deleted unschedulable pod %s PVCs", name);
		rc_requeue(r, 1000);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------ node lost */

int rc_node_lost_step(struct rc_run *r, const struct rc_instance *v, size_t n,
		      const struct rc_nodes *nodes)
{
	unsigned timeout_s = r->ctl->settings.node_lost_timeout_s;
	struct rc_node_lost_in *in = op_calloc(n ? n : 1, sizeof(*in));
	for (size_t i = 0; i < n; i++)
		in[i] = (struct rc_node_lost_in){ .name = v[i].name,
						  .lost_since = nodes->lost_since[i],
						  .answers_as_primary = v[i].has_status &&
									v[i].is_primary };
	int64_t wait_s = -1, now_s = api_time_now_us() / 1000000;
	const char *pick = rc_node_lost_pick(in, n, now_s, timeout_s, r->want.current_primary,
					     r->want.target_primary, &wait_s);
	int ret = 0;
	for (size_t i = 0; pick && i < n; i++) {
		if (!str_eq(v[i].name, pick))
			continue;
		char lost_s[24];
		snprintf(lost_s, sizeof(lost_s), "%lld", (long long)(now_s - in[i].lost_since));
		op_log_warn("deleting an instance whose node is lost, with its volumes", "cluster",
			    r->key, "pod", pick, "node", nodes->name[i] ? nodes->name[i] : "", "lost_s",
			    lost_s);
		ret = rc_delete_instance(r, v[i].serial, pick, true);
		if (ret < 0)
			break;
		rc_event(r, "Warning", "InstanceNodeLost",
			 "node %s of instance %s has been unreachable or deleted for %lld s (--node-lost-timeout "
			 "%u s): deleted its Pod and PVCs; a new instance is cloned from the primary "
			 "on another node",
			 nodes->name[i] ? nodes->name[i] : "?", pick,
			 (long long)(now_s - in[i].lost_since),
			 timeout_s);
		rc_requeue(r, 1000);
		ret = 1;
	}
	if (!pick && wait_s >= 0)
		rc_requeue(r, wait_s * 1000 + 500);
	free(in);
	return ret;
}
