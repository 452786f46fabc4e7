/* reconciler/plan.h - pure decisions of the reconcile that are not the
 * failover itself: how many instances there are against spec.instances, and
 * whether a switchover request can be carried out. No I/O.
 */
#ifndef PGOP_RECONCILER_PLAN_H
#define PGOP_RECONCILER_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "reconciler/status.h"

enum rc_scale_action {
	RC_SCALE_NONE = 0, /* as many instances as wanted (or on their way back) */
	RC_SCALE_WAIT,     /* fewer than wanted, but not everyone is ready: requeue */
	RC_SCALE_UP,       /* create the next serial (join) */
	RC_SCALE_DOWN,     /* remove the highest serial that is not the primary */
};
const char *rc_scale_action_str(enum rc_scale_action a);

/* CNPG reconcilePods' counting: an instance Pod counts against
 * spec.instances while it is terminating (a deleted Pod comes back on its own
 * volume; counting it as gone created a new replica every time a primary pod
 * was deleted), except for removal, where a Pod already on its way out does
 * not count again. v: the inventory (any order), current_primary may be NULL. */
enum rc_scale_action rc_scale_decide(const struct rc_instance *v, size_t n, int64_t want,
				     const char *current_primary);

/* A switchover request (POST clusters/NAME/switchover, kubectl cnpg promote):
 * 0 when target may become the primary now; -EBUSY while a switchover or
 * failover is in progress (currentPrimary != targetPrimary, or "pending");
 * -EINVAL when the target is unknown, already the primary, not Ready, without
 * /pg/status, or not streaming from the primary. *ret_msg (owned) says why
 * in every case but success. */
OP_MUST_CHECK
int rc_switchover_check(const struct rc_instance *v, size_t n, const char *current_primary,
			const char *target_primary, const char *target, char **ret_msg);

/* The healthy streaming replica to switch over to (kubectl cnpg promote
 * without a target, primaryUpdateMethod switchover): the most advanced Ready,
 * non-terminating replica that answers /pg/status and streams (v sorted with
 * rc_instances_sort: the first such one). Borrowed name from v, or NULL. */
const char *rc_switchover_pick(const struct rc_instance *v, size_t n,
			       const char *current_primary);

/* Fills the Pod part of *ret (name, ip, serial, pod_ready, pod_terminating)
 * from an instance Pod (borrowed) of Cluster `cluster`. -EINVAL (ret
 * untouched) when pod is not an instance Pod of it (label
 * cnpg.io/podRole=instance, name <cluster>-<serial>). */
OP_MUST_CHECK
int rc_instance_from_pod(const char *cluster, json_object *pod, struct rc_instance *ret);

/* Requeue delay of a Cluster none of whose Ready instances answers GET
 * /pg/status, after `streak` such reconciles in a row (1 = the first):
 * 10 s doubling to 60 s. Unreachable instances (a partitioned node, the
 * node agent's scale mode) then cost one bounded parallel fetch per minute,
 * not one every 5 s; a Pod or Cluster change still reconciles at once. */
long rc_status_error_delay_ms(unsigned streak);

#endif
