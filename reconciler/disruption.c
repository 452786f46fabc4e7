/* reconciler/disruption.c - the pure decisions of drains and
 * PodDisruptionBudgets (disruption.h). Layer 0: no I/O, no shared state. */
#include <string.h>

#include "api/timestamp.h"
#include "reconciler/disruption.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"

/* CloudNativePG's DefaultDrainTaints (internal/configuration). */
static const char *const drain_taints[] = {
	"node.kubernetes.io/unschedulable", /* Kubernetes' well-known unschedulable taint */
	"ToBeDeletedByClusterAutoscaler",   /* the Cluster Autoscaler */
	"karpenter.sh/disrupted",           /* Karpenter's termination controller */
	"karpenter.sh/disruption",          /* Karpenter's disruption controller */
};

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

bool rc_node_draining(json_object *node)
{
	if (!node)
		return false;
	json_object *u = op_json_at(node, "spec.unschedulable");
	if (json_object_is_type(u, json_type_boolean) && json_object_get_boolean(u))
		return true;
	json_object *taints = op_json_at(node, "spec.taints");
	for (size_t i = 0; json_object_is_type(taints, json_type_array) &&
			   i < json_object_array_length(taints);
	     i++) {
		const char *key = op_json_str_at(json_object_array_get_idx(taints, i), "key");
		for (size_t k = 0; key && k < OP_ARRAY_SIZE(drain_taints); k++)
			if (strcmp(key, drain_taints[k]) == 0)
				return true;
	}
	return false;
}

/* Kubernetes' node lifecycle controller taints a Node whose Ready condition
 * is Unknown (no heartbeats) or False with these, effect NoExecute and a
 * timeAdded. */
static const char *const lost_taints[] = {
	"node.kubernetes.io/unreachable",
	"node.kubernetes.io/not-ready",
};

int64_t rc_node_lost_since(json_object *node)
{
	int64_t since = -1;
	json_object *taints = node ? op_json_at(node, "spec.taints") : NULL;
	for (size_t i = 0; json_object_is_type(taints, json_type_array) &&
			   i < json_object_array_length(taints);
	     i++) {
		json_object *t = json_object_array_get_idx(taints, i);
		const char *key = op_json_str_at(t, "key");
		bool lost = false;
		for (size_t k = 0; key && k < OP_ARRAY_SIZE(lost_taints); k++)
			lost |= strcmp(key, lost_taints[k]) == 0;
		int64_t at = 0;
		if (lost && api_time_parse(op_json_str_at(t, "timeAdded"), &at) == 0 &&
		    (since < 0 || at < since))
			since = at;
	}
	return since;
}

const char *rc_node_lost_pick(const struct rc_node_lost_in *v, size_t n, int64_t now_s,
			      unsigned timeout_s, const char *current_primary,
			      const char *target_primary, int64_t *ret_wait_s)
{
	*ret_wait_s = -1;
	bool primary_up = false;
	for (size_t i = 0; i < n; i++)
		primary_up |= str_eq(v[i].name, current_primary) && v[i].answers_as_primary;
	if (!primary_up || !str_eq(current_primary, target_primary) ||
	    timeout_s == RC_NODE_LOST_NEVER)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (v[i].lost_since < 0 || str_eq(v[i].name, current_primary))
			continue;
		int64_t left = v[i].lost_since + (int64_t)timeout_s - now_s;
		if (left <= 0)
			return v[i].name;
		if (*ret_wait_s < 0 || left < *ret_wait_s)
			*ret_wait_s = left;
	}
	return NULL;
}

void rc_pdb_decide(const struct api_cluster *c, bool primary_draining, struct rc_pdb_want *ret)
{
	*ret = (struct rc_pdb_want){ 0 };
	if (!c->spec.enable_pdb)
		return;
	const int64_t n = c->spec.instances;
	ret->primary = true;
	ret->replicas = n >= 3;
	ret->replicas_min = n >= 3 ? n - 2 : 0;
	if (api_cluster_maintenance_in_progress(c) && api_cluster_reuse_pvc(c)) {
		ret->replicas = false;
		if (n == 1)
			ret->primary = false;
	}
	if (n == 1 && primary_draining)
		ret->primary = false;
}

json_object *rc_build_pdb(const struct api_cluster *c, bool primary, int64_t min_available)
{
	const char *cn = c->metadata.name;
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", "policy/v1");
	op_jsets(o, "kind", "PodDisruptionBudget");
	json_object *m = op_jchild(o, "metadata");
	_cleanup_free_ char *name = primary ? op_asprintf("%s-primary", cn) : op_strdup(cn);
	op_jsets(m, "name", name);
	op_jsets(m, "namespace", c->metadata.namespace_);
	json_object *labels = op_jchild(m, "labels");
	op_jsets(labels, RC_LABEL_CLUSTER, cn);
	op_jsets(labels, "app.kubernetes.io/name", "postgresql");
	op_jsets(labels, "app.kubernetes.io/instance", cn);
	op_jsets(labels, "app.kubernetes.io/component", "database");
	op_jsets(labels, "app.kubernetes.io/managed-by", "pgop");
	op_jset(m, "ownerReferences", op_jpush(op_jarr(), rc_owner_ref(c)));
	json_object *spec = op_jchild(o, "spec");
	json_object *ml = op_jchild(op_jchild(spec, "selector"), "matchLabels");
	op_jsets(ml, RC_LABEL_CLUSTER, cn);
	op_jsets(ml, RC_LABEL_INSTANCE_ROLE, primary ? RC_ROLE_PRIMARY : RC_ROLE_REPLICA);
	op_jset(spec, "minAvailable", op_jint(min_available));
	return o;
}

static const char *const drain_names[] = {
	[RC_DRAIN_NONE] = "none",
	[RC_DRAIN_WAIT] = "wait",
	[RC_DRAIN_SWITCHOVER] = "switchover",
};

const char *rc_drain_action_str(enum rc_drain_action a)
{
	return (unsigned)a < OP_ARRAY_SIZE(drain_names) ? drain_names[a] : "unknown";
}

void rc_drain_decide(const struct rc_instance *v, size_t n, const bool *draining,
		     const char *current_primary, const char *target_primary,
		     struct rc_drain_decision *ret)
{
	*ret = (struct rc_drain_decision){ .action = RC_DRAIN_NONE };
	if (!current_primary || !*current_primary || !str_eq(current_primary, target_primary))
		return; /* a switchover or failover is under way */
	size_t p = n;
	for (size_t i = 0; i < n; i++)
		if (str_eq(v[i].name, current_primary))
			p = i;
	if (p == n || !draining[p] || !v[p].has_status || !v[p].is_primary ||
	    v[p].pod_terminating)
		return;
	ret->action = RC_DRAIN_WAIT;
	for (size_t i = 0; i < n; i++) {
		const struct rc_instance *x = &v[i];
		if (i == p || draining[i] || !x->pod_ready || x->pod_terminating ||
		    !x->has_status || x->is_primary || !x->wal_receiver_active)
			continue;
		ret->action = RC_DRAIN_SWITCHOVER;
		ret->target = x->name;
		return;
	}
}

/* The Pod's PodScheduled condition (borrowed), or NULL. */
static json_object *scheduled_cond(json_object *pod)
{
	json_object *conds = op_json_at(pod, "status.conditions");
	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds);
	     i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (str_eq(op_json_str_at(c, "type"), "PodScheduled"))
			return c;
	}
	return NULL;
}

bool rc_pod_unschedulable(json_object *pod)
{
	if (!str_eq(op_json_str_at(pod, "status.phase"), "Pending"))
		return false;
	json_object *c = scheduled_cond(pod);
	return c && str_eq(op_json_str_at(c, "status"), "False") &&
	       str_eq(op_json_str_at(c, "reason"), "Unschedulable");
}

int64_t rc_pod_unschedulable_since(json_object *pod)
{
	int64_t at = -1;
	if (!rc_pod_unschedulable(pod) ||
	    api_time_parse(op_json_str_at(scheduled_cond(pod), "lastTransitionTime"), &at) != 0)
		return -1;
	return at;
}
