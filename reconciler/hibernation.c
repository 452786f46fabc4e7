/* reconciler/hibernation.c - cnpg.io/hibernation (annotations.h,
 * rc_hibernation_step): a reconcile step, layer 3.
 *
 * As CloudNativePG (pkg/reconciler/hibernation): "on" waits for a healthy
 * Cluster (condition False/WaitingForHealthy) unless hibernation has begun,
 * then deletes the instance Pods one at a time (False/DeletingPods, then
 * False/WaitingPodsDeletion while one terminates) until none is left
 * (True/Hibernated, "Cluster has been hibernated"); PVCs, Secrets, Services
 * and status stay, the phase is left as it was. Departures: the replicas go
 * first and the primary last (CloudNativePG deletes the primary first; a
 * pgop primary with a streaming replica hands over on SIGTERM, which would
 * change the primary), and rehydration brings the primary's Pod back first
 * and holds everything else (condition False/Rehydrating) until it answers
 * as the primary: with every Pod gone the failover step would otherwise see
 * a primary without a Pod next to a replica coming back. */
#include <errno.h>
#include <string.h>

#include "api/annotations.h"
#include "api/names.h"
#include "reconciler/annotations.h"
#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"

#define REASON_WAITING_HEALTHY "WaitingForHealthy"
#define REASON_DELETING "DeletingPods"
#define REASON_WAITING_DELETION "WaitingPodsDeletion"
#define REASON_HIBERNATED "Hibernated"
#define REASON_REHYDRATING "Rehydrating" /* pgop's own, see above */
#define HIBERNATION_POLL_MS 1000

static bool eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* The reason of the cnpg.io/hibernation condition read back (borrowed), or NULL. */
static const char *old_reason(struct rc_run *r)
{
	json_object *conds = op_json_at(r->obj, "status.conditions");
	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds);
	     i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (eq(op_json_str_at(c, "type"), API_COND_HIBERNATION))
			return op_json_str_at(c, "reason");
	}
	return NULL;
}

static void want(struct rc_run *r, enum rc_cond_want w, const char *reason, char *msg_owned)
{
	r->want.hibernation = w;
	free(r->want.hib_reason);
	free(r->want.hib_msg);
	r->want.hib_reason = reason ? op_strdup(reason) : NULL;
	r->want.hib_msg = msg_owned;
}

/* Hibernation on: delete the next Pod (replicas by descending serial, the
 * primary last) or wait for the one terminating. */
static int hibernate(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	if (n == 0) {
		if (!eq(old_reason(r), REASON_HIBERNATED))
			rc_event(r, "Normal", "Hibernated", "cluster hibernated: every instance Pod "
				 "deleted, PVCs kept");
		want(r, RC_COND_TRUE, REASON_HIBERNATED, op_strdup("Cluster has been hibernated"));
		r->want.ready = false;
		return 1;
	}
	const struct rc_instance *victim = NULL;
	for (size_t i = 0; i < n; i++) {
		if (v[i].pod_terminating) {
			want(r, RC_COND_FALSE, REASON_WAITING_DELETION,
			     op_asprintf("Waiting for %s to be deleted", v[i].name));
			r->want.ready = false;
			rc_requeue(r, HIBERNATION_POLL_MS);
			return 1;
		}
		bool primary = eq(v[i].name, r->want.current_primary);
		if (!victim || (!primary && (eq(victim->name, r->want.current_primary) ||
					     v[i].serial > victim->serial)))
			victim = &v[i];
	}
	want(r, RC_COND_FALSE, REASON_DELETING, op_strdup("Hibernation is in progress"));
	r->want.ready = false;
	int ret = rc_delete(r, KUBE_PODS, victim->name);
	if (ret < 0)
		return ret;
	rc_event(r, "Normal", "HibernatingInstance", "hibernation: deleting Pod %s (its PVCs are "
		 "kept)", victim->name);
	rc_requeue(r, HIBERNATION_POLL_MS);
	return 1;
}

/* Hibernation off after it had begun: the primary's Pod first, the rest of
 * the reconcile once it answers as the primary. */
static int rehydrate(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	const char *primary = r->want.current_primary;
	const struct rc_instance *p = NULL;
	for (size_t i = 0; i < n; i++)
		if (eq(v[i].name, primary))
			p = &v[i];
	if (p && p->pod_ready && p->has_status && p->is_primary) {
		rc_event(r, "Normal", "Rehydrated", "hibernation off: the primary %s is back",
			 primary);
		want(r, RC_COND_NONE, NULL, NULL);
		return 0;
	}
	want(r, RC_COND_FALSE, REASON_REHYDRATING,
	     op_asprintf("Waiting for the primary %s to be back", primary ? primary : "?"));
	rc_requeue(r, HIBERNATION_POLL_MS);
	int64_t serial = 0;
	if (p || !primary || api_pod_serial(r->name, primary, &serial, NULL) < 0)
		return 1;
	json_object *o = NULL;
	int ret = rc_build_pod(r->c, &r->ctl->settings, serial, RC_ROLE_PRIMARY, &o, r->err);
	if (ret == 0)
		ret = rc_create(r, KUBE_PODS, o);
	if (o)
		json_object_put(o);
	if (ret < 0)
		return ret;
	if (ret == 1)
		rc_event(r, "Normal", "CreatingInstance", "hibernation off: created the primary's "
			 "Pod %s", primary);
	return 1;
}

int rc_hibernation_step(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	const char *was = old_reason(r);
	/* begun (also when stopped half-way or rehydrating): the primary may be gone */
	bool begun = eq(was, REASON_DELETING) || eq(was, REASON_WAITING_DELETION) ||
		     eq(was, REASON_HIBERNATED) || eq(was, REASON_REHYDRATING);
	if (!api_hibernation_on(&r->c->metadata.annotations)) {
		if (begun)
			return rehydrate(r, v, n);
		want(r, RC_COND_NONE, NULL, NULL);
		return 0;
	}
	if (!begun && !eq(r->want.phase, RC_PHASE_HEALTHY)) {
		want(r, RC_COND_FALSE, REASON_WAITING_HEALTHY,
		     op_strdup("Waiting for the cluster to be healthy before proceeding with "
			       "hibernation"));
		return 0;
	}
	return hibernate(r, v, n);
}
