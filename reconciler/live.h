/* reconciler/live.h - the reconciler's side of the aggregated live API
 * (apiserver/), and the one reconciler header apiserver/ includes: the
 * runner's accessors, read access to its caches and instance client, the
 * replication summary both views show (reconciler/replication.h, pure), and
 * the actions (switchover, restart), whose writes belong to the reconciler.
 * Every function is thread-safe (informer read locks, the controller mutex
 * for the operator client certificate) and may run on any replica: writes
 * carry preconditions, the leader's reconcile carries them out.
 */
#ifndef PGOP_RECONCILER_LIVE_H
#define PGOP_RECONCILER_LIVE_H

#include <json-c/json.h>
#include <stddef.h>

#include <stdbool.h>

#include "kube/kube.h"
#include "reconciler/replication.h"
#include "support/err.h"

struct rc_controller; /* reconciler/reconciler.h */
struct rc_runner;     /* reconciler/start.h */

/* Thread-safe: true once the controller runs and its informers have synced. */
bool rc_runner_ready(struct rc_runner *r);
/* Thread-safe: the running controller and its API client (borrowed, valid
 * until rc_runner_free), or NULL while cluster access is still being retried. */
struct rc_controller *rc_runner_controller(struct rc_runner *r);
struct kube_client *rc_runner_client(struct rc_runner *r);

/* Kept-alive mutual-TLS connections to one Cluster's instances, reused from
 * one fetch to the next (reconciler/instance_client.h says how). Never NULL
 * (aborts on OOM). Free with rc_status_pool_free, which closes the
 * connections; not while a fetch uses the pool. NULL is accepted. */
struct rc_status_pool;
struct rc_status_pool *rc_status_pool_new(void);
void rc_status_pool_free(struct rc_status_pool *p);

/* One instance whose /pg/status the live API asks for. The caller sets name,
 * ip (owned copies) and silent (not known to answer: a TCP probe first); the
 * fetch fills doc (the answer as received, owned) or error (why none, owned). */
struct rc_live_instance {
	char *name;
	char *ip;
	bool silent;
	json_object *doc;
	char *error;
};
/* Frees the contents and zeroes *in; accepts NULL. */
void rc_live_instance_done(struct rc_live_instance *in);

/* New owned array of deep copies of the cached Clusters in ns (NULL = every
 * watched namespace), sorted by namespace/name. */
json_object *rc_live_clusters(struct rc_controller *c, const char *ns);
/* New owned array of the cached instance Pods (label cnpg.io/podRole=instance)
 * of Cluster ns/cluster. */
json_object *rc_live_pods(struct rc_controller *c, const char *ns, const char *cluster);
/* GET /pg/status of v[0..n) (name and ip filled by the caller) in parallel,
 * each bounded by timeout_ms, with the cluster CA from the `<c>-ca` Secret in
 * the cache and the operator client certificate the reconciler keeps for the
 * Cluster (issued when it has none yet). Fills v[i].doc or v[i].error, over
 * pool's kept-alive connections (borrowed, NULL = one-off ones). Returns the
 * number that answered or -errno (-ENOENT: Cluster or CA Secret not cached;
 * then nothing is filled). */
OP_MUST_CHECK int rc_live_fetch(struct rc_controller *c, const char *ns, const char *cluster,
				struct rc_live_instance *v, size_t n, long timeout_ms,
				struct rc_status_pool *pool, struct op_err *err);

/* POST clusters/NAME/switchover: makes target (NULL or "" = the most
 * advanced healthy streaming replica, rc_switchover_pick) the primary.
 * Reads the cached Cluster and its instance Pods, fetches their /pg/status
 * now (the controller's per-instance timeout), validates with rc_switchover_check, then writes
 * status.targetPrimary (+ targetPrimaryTimestamp) with a merge patch on the
 * status subresource carrying metadata.resourceVersion, records Event
 * SwitchoverRequested naming user, and enqueues the Cluster. Returns 0 with
 * *ret_msg (owned) saying what was accepted; otherwise -errno with *ret_msg
 * (owned) saying why: -ENOENT unknown Cluster, -EBUSY a switchover or
 * failover in progress, -EINVAL a target that cannot be promoted (named),
 * -ESTALE the Cluster changed meanwhile (409), others: err. */
OP_MUST_CHECK
int rc_live_switchover(struct rc_controller *c, const char *ns, const char *cluster,
		       const char *target, const char *user, char **ret_msg, struct op_err *err);

/* POST clusters/NAME/restart. instance NULL or "": rolling restart - the
 * Cluster annotation kubectl.kubernetes.io/restartedAt is set to now (RFC
 * 3339, like kubectl cnpg restart) and the reconcile restarts every instance
 * (rollout.h). One instance: a replica's Pod is deleted (it comes back on its
 * volume); the primary goes by primaryUpdateMethod: switchover -> like
 * rc_live_switchover to the most advanced streaming replica, restart (the
 * default, or no replica to switch to) -> in place (the pgop.io/inPlaceRestart
 * annotations; the reconcile deletes the Pod). Event RestartRequested names
 * user; the Cluster is enqueued. Returns and *ret_msg as rc_live_switchover
 * (-EINVAL: unknown instance; -EBUSY: a switchover/failover or an in-place
 * restart in progress). */
OP_MUST_CHECK
int rc_live_restart(struct rc_controller *c, const char *ns, const char *cluster,
		    const char *instance, const char *user, char **ret_msg, struct op_err *err);

#endif
