/* reconciler/rollout.h - the rolling restart (kubectl cnpg restart, POST
 * clusters/NAME/restart, parameters that need a restart): which instance to
 * restart next and how, as a pure decision (rc_rollout_decide), and the
 * reconcile step that carries it out (rc_rollout_step, rollout.c).
 *
 * An instance is outdated when its Pod's kubectl.kubernetes.io/restartedAt
 * differs from the Cluster's or its /pg/status reports pendingRestart
 * (rc_rollout_outdated), it was built with another cnpg.io/podPatch or
 * another placement (annotations.h: affinity, nodeSelector, tolerations,
 * topologySpreadConstraints as rendered; the Events and phase reason say
 * when the placement is why). Only
 * when the Cluster is otherwise healthy: outdated replicas one at a time,
 * highest serial first (the Pod is deleted and comes back on its volume),
 * then the primary by spec.primaryUpdateStrategy/Method: supervised -> wait
 * for the user's switchover; switchover -> targetPrimary = the most advanced
 * streaming replica (the old primary is then an outdated replica); restart
 * (default) -> in place: the Cluster is annotated pgop.io/inPlaceRestart =
 * <primary pod> (+ its UID), the Pod is deleted once that is in the cache,
 * and the annotations are removed when the primary is back.
 */
#ifndef PGOP_RECONCILER_ROLLOUT_H
#define PGOP_RECONCILER_ROLLOUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reconciler/status.h"

/* How long failover waits for a primary restarting in place (since its old
 * Pod's deletion or its new Pod's creation), seconds. */
#define RC_INPLACE_HOLD_S 60

enum rc_rollout_action {
	RC_ROLL_NONE = 0,        /* nothing outdated (or not this step's business) */
	RC_ROLL_WAIT,            /* outdated instances, the Cluster is not healthy yet */
	RC_ROLL_RESTART_REPLICA, /* delete target's Pod */
	RC_ROLL_WAIT_USER,       /* supervised: the primary waits for a switchover */
	RC_ROLL_SWITCHOVER,      /* targetPrimary = target (primaryUpdateMethod switchover) */
	RC_ROLL_INPLACE_MARK,    /* annotate the Cluster: target restarts in place */
	RC_ROLL_INPLACE_DELETE,  /* the annotation is cached: delete the primary's Pod */
	RC_ROLL_INPLACE_WAIT,    /* the primary is restarting in place */
	RC_ROLL_INPLACE_DONE,    /* the primary is back (or moved): remove the annotation */
};
const char *rc_rollout_action_str(enum rc_rollout_action a);

/* One instance as the rollout sees it (all borrowed). */
struct rc_roll_member {
	const struct rc_instance *in;
	const char *uid;   /* its Pod's metadata.uid */
	bool outdated;
	bool placement;    /* outdated (at least) because its placement changed */
	int64_t created;   /* Pod creationTimestamp, Unix s; 0 = unknown */
	int64_t deleting;  /* Pod deletionTimestamp, Unix s; 0 = not deleted */
};

struct rc_rollout_input {
	const struct rc_roll_member *m; /* failover order (rc_instances_sort) */
	size_t n;
	const char *current_primary, *target_primary; /* may be NULL */
	int64_t instances;   /* spec.instances */
	bool supervised;     /* primaryUpdateStrategy: supervised */
	bool switchover;     /* primaryUpdateMethod: switchover */
	const char *inplace_pod, *inplace_uid; /* the Cluster's annotations, NULL = none */
	int64_t now;
};

struct rc_rollout_decision {
	enum rc_rollout_action action;
	const char *target; /* borrowed from the input: the instance acted on */
};
void rc_rollout_decide(const struct rc_rollout_input *in, struct rc_rollout_decision *ret);

/* True while failover must not act because the primary is restarting in
 * place on purpose (annotation naming the current primary, no switchover in
 * progress, its old Pod deleted less than RC_INPLACE_HOLD_S ago or its new
 * Pod created less than that ago, or no Pod at the moment). */
bool rc_rollout_hold_failover(const struct rc_rollout_input *in);

/* Whether pod (borrowed) is outdated against cluster_restarted_at (the
 * Cluster's annotation, NULL = none): annotation differs, in reports
 * pendingRestart, or it was built with another image (RC_ANN_IMAGE) than
 * image (the Cluster's; NULL = not compared) of the same PostgreSQL major (a
 * new major is an upgrade, not a restart), or with other WAL archive
 * credential volumes (RC_ANN_ARCHIVE_VOLUMES) than archive_volumes (the
 * Cluster's rc_archive_volumes; NULL = not compared). */
bool rc_rollout_outdated(json_object *pod, const char *cluster_restarted_at,
			 const struct rc_instance *in, const char *image,
			 const char *archive_volumes);

struct rc_run;
/* The reconcile step (rollout.c): v[0..n) the inventory (sorted), pods its
 * Pods (borrowed). Returns 1 when it acted or waits (phase set, requeue
 * asked), 0 when nothing is to be done now, -errno on failure. */
OP_MUST_CHECK
int rc_rollout_step(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods);
/* The failover hold for this reconcile (rc_rollout_hold_failover). */
bool rc_rollout_holds(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods);

#endif
