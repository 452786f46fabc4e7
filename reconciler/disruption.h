/* reconciler/disruption.h - nodes and voluntary disruptions (issue 26):
 * PodDisruptionBudgets as CloudNativePG makes them, the switchover away from
 * a node being drained, and nodeMaintenanceWindow's reusePVC: false.
 * docs/internals/reconciler.md, "Drains and PodDisruptionBudgets".
 *
 * The decisions are pure (disruption.c, layer 0); the steps that carry them
 * out are drain.c (layer 3). */
#ifndef PGOP_RECONCILER_DISRUPTION_H
#define PGOP_RECONCILER_DISRUPTION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/cluster.h"
#include "reconciler/ctl.h"
#include "reconciler/status.h"

/* ---------------------------------------------------------- pure (disruption.c) */

/* CloudNativePG's isNodeUnschedulableOrBeingDrained: spec.unschedulable, or a
 * taint whose key is one of its default drain taints
 * (node.kubernetes.io/unschedulable, ToBeDeletedByClusterAutoscaler,
 * karpenter.sh/disrupted, karpenter.sh/disruption). node borrowed, may be
 * NULL (false). */
bool rc_node_draining(json_object *node);

/* Which PodDisruptionBudgets a Cluster has (CloudNativePG's
 * reconcilePodDisruptionBudget), plus pgop's rule for a single instance. */
struct rc_pdb_want {
	bool primary;         /* `<c>-primary`: minAvailable 1, instanceRole primary */
	bool replicas;        /* `<c>`: minAvailable replicas_min, instanceRole replica */
	int64_t replicas_min; /* spec.instances - 2 */
};
/* enablePDB false: none. Otherwise the primary's, and the replicas' when
 * spec.instances >= 3 (n instances, n-1 replicas, n-2 of them available: one
 * replica at a time). nodeMaintenanceWindow inProgress with reusePVC: no
 * replicas' PDB, and no primary's for a single instance (CNPG). pgop: a
 * single instance whose node is being drained (primary_draining) has no
 * primary's PDB either: there is nothing to switch over to, and the PDB
 * would block the drain forever (cloudnative-pg #10566). */
void rc_pdb_decide(const struct api_cluster *c, bool primary_draining, struct rc_pdb_want *ret);

/* The PodDisruptionBudget (policy/v1) `<c>-primary` (primary) or `<c>`,
 * labelled cnpg.io/cluster and app.kubernetes.io/name etc., owned by the Cluster.
 * min_available as given. Owned. */
json_object *rc_build_pdb(const struct api_cluster *c, bool primary, int64_t min_available);

/* The switchover away from a node being drained (CloudNativePG's
 * setPrimaryOnSchedulableNode, whatever the primary's serial). */
enum rc_drain_action {
	RC_DRAIN_NONE,       /* the primary is not on a draining node, or a switchover or
			      * failover is already under way */
	RC_DRAIN_WAIT,       /* it is, and no replica can take over yet: the primary's PDB
			      * holds the eviction meanwhile */
	RC_DRAIN_SWITCHOVER, /* targetPrimary = target */
};
struct rc_drain_decision {
	enum rc_drain_action action;
	const char *target; /* borrowed from v: the new primary (SWITCHOVER) */
};
/* v: the instances sorted by rc_instances_sort (most advanced first),
 * draining[i]: v[i]'s Pod runs on a draining node. The target is the first
 * (most advanced) replica that is Ready, not terminating, answers /pg/status,
 * streams from the primary (WAL receiver active) and is not on a draining
 * node. Only when currentPrimary == targetPrimary and the current primary
 * answers as primary. */
void rc_drain_decide(const struct rc_instance *v, size_t n, const bool *draining,
		     const char *current_primary, const char *target_primary,
		     struct rc_drain_decision *ret);
const char *rc_drain_action_str(enum rc_drain_action a);

/* A Pod the scheduler could not place: Pending, condition PodScheduled False
 * with reason Unschedulable (CloudNativePG's utils.IsPodUnschedulable). */
bool rc_pod_unschedulable(json_object *pod);
/* Since when (Unix seconds) the Pod (borrowed) has been unschedulable: its
 * PodScheduled condition's lastTransitionTime; -1 when it is not
 * (rc_pod_unschedulable) or the time does not parse. */
int64_t rc_pod_unschedulable_since(json_object *pod);

/* When the Node (borrowed, may be NULL) was found lost: the earliest
 * timeAdded (Unix seconds) of its node.kubernetes.io/unreachable or
 * node.kubernetes.io/not-ready taint, which the node lifecycle controller adds
 * once heartbeats stop or the node reports NotReady; -1 when it has neither. */
int64_t rc_node_lost_since(json_object *node);

/* An instance as rc_node_lost_pick sees it. */
struct rc_node_lost_in {
	const char *name;        /* borrowed */
	int64_t lost_since;      /* rc_node_lost_since of its Pod's Node, -1 when not lost */
	bool answers_as_primary; /* answered this reconcile's /pg/status as the primary */
};
/* Which instance to rebuild because its node has been lost for timeout_s
 * (now_s: Unix seconds), or NULL. Never the current primary, and nothing
 * unless the current primary answers as one and is also the target (no
 * failover or switchover under way): a replica is deleted only while the
 * primary holds the data. *ret_wait_s: seconds until the next one is due
 * (-1: none waiting). RC_NODE_LOST_NEVER: never. */
const char *rc_node_lost_pick(const struct rc_node_lost_in *v, size_t n, int64_t now_s,
			      unsigned timeout_s, const char *current_primary,
			      const char *target_primary, int64_t *ret_wait_s);

/* ---------------------------------------------------------- steps (drain.c, layer 3) */

/* What the reconcile knows of each instance's node, read once from the Pods
 * (spec.nodeName) and the Node cache for the steps below. Arrays of n
 * entries (at least 1), owned by the struct (rc_nodes_done). */
struct rc_nodes {
	bool *draining;      /* rc_node_draining of v[i]'s node */
	int64_t *lost_since; /* rc_node_lost_since of v[i]'s node, -1 when not lost */
	char **name;         /* v[i]'s node name (owned), NULL when unknown */
	size_t n;
};
/* For each of v[0..n); pods borrowed. An instance whose Pod is bound reads
 * its Node; one whose Pod is unschedulable because its volume is pinned to a
 * Node deleted outright counts as lost since it became unschedulable. */
void rc_nodes_load(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods,
		   struct rc_nodes *ret);
void rc_nodes_done(struct rc_nodes *nodes);
/* v: the reconcile's instances, draining: rc_nodes_load's of them (both
 * borrowed, computed once per reconcile for this step and the next).
 * Creates, corrects (minAvailable, selector) or deletes the Cluster's two
 * PodDisruptionBudgets per rc_pdb_decide, against the PDB cache. Never fails
 * the reconcile: a refusal (an older chart without the RBAC) is logged. */
void rc_ensure_pdbs(struct rc_run *r, const struct rc_instance *v, size_t n,
		    const bool *draining);
/* The drain switchover: sets r->want's targetPrimary (and its timestamp,
 * phase, Event SwitchingOver) per rc_drain_decide. 1 when it did (stop
 * here: the status write carries it), 0 otherwise. */
int rc_drain_step(struct rc_run *r, const struct rc_instance *v, size_t n,
		  const bool *draining);
/* nodeMaintenanceWindow inProgress with reusePVC false (CloudNativePG's
 * processUnschedulableInstances): an instance Pod the scheduler cannot place
 * (its volume is on a node being drained) is deleted with its PVCs, so the
 * instance is made again elsewhere (a new serial, cloned from the primary).
 * Never the current or target primary. 1 when it deleted one, 0 when
 * nothing to do, <0 on error (r->err). */
OP_MUST_CHECK int rc_unschedulable_step(struct rc_run *r, json_object *pods);
/* A node gone for good (issue 26): an instance whose Pod's Node has carried
 * the unreachable or not-ready taint for --node-lost-timeout
 * (rc_settings.node_lost_timeout_s) is deleted with its PVCs, its Pod
 * forcibly (grace 0: the node's kubelet cannot confirm), per
 * rc_node_lost_pick, so the instance is made again on another node, cloned
 * from the primary (a new serial). Events InstanceNodeLost. Requeues for the
 * next one due. 1 when it deleted one, 0 otherwise, <0 on error (r->err). */
OP_MUST_CHECK int rc_node_lost_step(struct rc_run *r, const struct rc_instance *v, size_t n,
				    const struct rc_nodes *nodes);

#endif
