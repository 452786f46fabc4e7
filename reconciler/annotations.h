/* reconciler/annotations.h - internal: what the reconciler does with the
 * annotations CloudNativePG users and its kubectl plugin set on a Cluster
 * (api/annotations.h reads them): cnpg.io/podPatch applied to the instance
 * Pods (annotations.c, pure, layer 0) and cnpg.io/hibernation
 * (hibernation.c, a reconcile step, layer 3); the fingerprints pgop keeps
 * on the instance Pods to tell which are outdated (rollout.h).
 * cnpg.io/reconciliationLoop is checked first thing by rc_reconcile;
 * cnpg.io/fencedInstances keeps handle_failover from replacing a fenced
 * primary (reconcile.c), the instance manager does the fencing itself. */
#ifndef PGOP_RECONCILER_ANNOTATIONS_H
#define PGOP_RECONCILER_ANNOTATIONS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "api/cluster.h"
#include "support/err.h"

/* On an instance Pod: the fingerprint (rc_pod_patch_hash) of the Cluster's
 * cnpg.io/podPatch it was built with; absent when built without one. A Pod
 * whose value differs from the Cluster's is outdated (rolled like any other
 * change, rollout.h). */
#define RC_ANN_POD_PATCH_HASH "pgop.io/podPatchHash"
/* On an instance Pod: the fingerprint (rc_placement_hash, objects.h) of the
 * placement it was built with: its rendered affinity, nodeSelector,
 * tolerations and topologySpreadConstraints. A Pod whose value differs from
 * the Cluster's is outdated, so a placement change rolls the instances as
 * CloudNativePG does when the scheduling part of the Pod spec changes. */
#define RC_ANN_PLACEMENT_HASH "pgop.io/placementHash"

/* The fingerprint of the Cluster's cnpg.io/podPatch (16 hex digits of
 * FNV-1a 64 over the annotation's text: a change detector, nothing is
 * trusted on it), OWNED; NULL when the Cluster has none (absent or ""). */
char *rc_pod_patch_hash(const struct api_cluster *c);

/* Applies the Cluster's cnpg.io/podPatch (RFC 6902, support/jsonpatch.h) to
 * the whole instance Pod *pod (owned; replaced by the patched one on success,
 * kept on failure), then sets RC_ANN_POD_PATCH_HASH on it. Nothing happens
 * without the annotation. -EINVAL when the patch is not a JSON array of
 * operations or does not apply (admission V43 refuses such a Cluster; one
 * stored before V43 fails the Pod's creation with this message). */
OP_MUST_CHECK int rc_pod_patch_apply(const struct api_cluster *c, json_object **pod,
				     struct op_err *err);

/* Whether pod (borrowed, cached) was built with another podPatch than
 * cluster_hash (rc_pod_patch_hash; NULL = none). */
bool rc_pod_patch_outdated(json_object *pod, const char *cluster_hash);

/* Whether pod (borrowed, cached) was built with another placement than
 * cluster_hash (rc_placement_hash). A Pod without RC_ANN_PLACEMENT_HASH
 * (built by a pgop before it) is NOT outdated: upgrading the operator must
 * not roll every Cluster; it takes the hash when next recreated for any
 * reason (a restart, an image change). cluster_hash NULL: not compared. */
bool rc_placement_outdated(json_object *pod, const char *cluster_hash);

struct rc_run;
struct rc_instance;
/* The hibernation step (cnpg.io/hibernation, hibernation.c), before the
 * failover step: with "on", once the Cluster was healthy (or hibernation has
 * begun), the instance Pods are deleted one at a time, the replicas first,
 * the primary last (a primary with a streaming replica would hand over on
 * SIGTERM), PVCs and status kept; condition cnpg.io/hibernation as
 * CloudNativePG sets it. Returns 1 when hibernation owns this reconcile
 * (nothing else may run: no failover, no Pod created), 0 when it does not
 * (off: the condition removed; the instances come back on their volumes),
 * -errno on failure (r->err). v[0..n) the inventory (borrowed). */
OP_MUST_CHECK int rc_hibernation_step(struct rc_run *r, const struct rc_instance *v, size_t n);

#endif
