/* reconciler/live.h - read access to the reconciler's caches and instance
 * client for the aggregated live API (apiserver/). Nothing here writes to
 * the API server; every function is thread-safe (informer read locks, the
 * controller mutex for the operator client certificate).
 */
#ifndef PGOP_RECONCILER_LIVE_H
#define PGOP_RECONCILER_LIVE_H

#include <json-c/json.h>
#include <stddef.h>

#include "reconciler/reconciler.h"
#include "reconciler/status.h"
#include "support/err.h"

/* New owned array of deep copies of the cached Clusters in ns (NULL = every
 * watched namespace), sorted by namespace/name. */
json_object *rc_live_clusters(struct rc_controller *c, const char *ns);
/* New owned array of the cached instance Pods (label cnpg.io/podRole=instance)
 * of Cluster ns/cluster. */
json_object *rc_live_pods(struct rc_controller *c, const char *ns, const char *cluster);
/* GET /pg/status of v[0..n) (name and ip filled by the caller) in parallel,
 * each bounded by timeout_ms, with the cluster CA from the `<c>-ca` Secret in
 * the cache and the operator client certificate the reconciler keeps for the
 * Cluster (issued when it has none yet). Fills v[i] like rc_fetch_statuses
 * (v[i].doc = the answer). Returns the number that answered or -errno
 * (-ENOENT: Cluster or CA Secret not cached). */
int rc_live_fetch(struct rc_controller *c, const char *ns, const char *cluster,
		  struct rc_instance *v, size_t n, long timeout_ms, struct op_err *err);

#endif
