/* reconciler/rollout.c - the rolling restart: the pure decision and the
 * reconcile step carrying it out (rollout.h). */
#include "api/timestamp.h"
#include "reconciler/rollout.h"

#include <errno.h>
#include <string.h>

#include "reconciler/annotations.h"
#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

static const char *const action_names[] = {
	[RC_ROLL_NONE] = "none",
	[RC_ROLL_WAIT] = "wait",
	[RC_ROLL_RESTART_REPLICA] = "restart-replica",
	[RC_ROLL_WAIT_USER] = "wait-user",
	[RC_ROLL_SWITCHOVER] = "switchover",
	[RC_ROLL_INPLACE_MARK] = "inplace-mark",
	[RC_ROLL_INPLACE_DELETE] = "inplace-delete",
	[RC_ROLL_INPLACE_WAIT] = "inplace-wait",
	[RC_ROLL_INPLACE_DONE] = "inplace-done",
};

const char *rc_rollout_action_str(enum rc_rollout_action a)
{
	return (unsigned)a < OP_ARRAY_SIZE(action_names) ? action_names[a] : "unknown";
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const struct rc_roll_member *member(const struct rc_rollout_input *in, const char *name)
{
	for (size_t i = 0; i < in->n; i++)
		if (str_eq(in->m[i].in->name, name))
			return &in->m[i];
	return NULL;
}

static bool settled(const struct rc_rollout_input *in)
{
	return in->current_primary && *in->current_primary &&
	       str_eq(in->current_primary, in->target_primary);
}

/* Every instance Ready and reporting, the primary primary, replicas streaming. */
static bool healthy(const struct rc_rollout_input *in)
{
	if ((int64_t)in->n != in->instances)
		return false;
	for (size_t i = 0; i < in->n; i++) {
		const struct rc_instance *x = in->m[i].in;
		bool prim = str_eq(x->name, in->current_primary);
		if (!x->pod_ready || x->pod_terminating || !x->has_status || x->is_primary != prim ||
		    (!prim && !x->wal_receiver_active))
			return false;
	}
	return member(in, in->current_primary) != NULL;
}

/* The in-place restart of the primary, once annotated. */
static void decide_inplace(const struct rc_rollout_input *in, struct rc_rollout_decision *ret)
{
	if (!settled(in) || !str_eq(in->inplace_pod, in->current_primary)) {
		ret->action = RC_ROLL_INPLACE_DONE; /* the primary moved: nothing left to do */
		return;
	}
	const struct rc_roll_member *p = member(in, in->inplace_pod);
	ret->target = in->current_primary;
	if (!p) {
		ret->action = RC_ROLL_INPLACE_WAIT; /* its Pod is being recreated */
		return;
	}
	ret->target = p->in->name;
	if (str_eq(p->uid, in->inplace_uid)) {
		ret->action = p->in->pod_terminating ? RC_ROLL_INPLACE_WAIT : RC_ROLL_INPLACE_DELETE;
		return;
	}
	ret->action = p->in->pod_ready && p->in->has_status && p->in->is_primary
			      ? RC_ROLL_INPLACE_DONE
			      : RC_ROLL_INPLACE_WAIT;
}

void rc_rollout_decide(const struct rc_rollout_input *in, struct rc_rollout_decision *ret)
{
	*ret = (struct rc_rollout_decision){ .action = RC_ROLL_NONE };
	if (in->inplace_pod && *in->inplace_pod) {
		decide_inplace(in, ret);
		return;
	}
	if (!settled(in))
		return; /* a switchover or failover is the failover code's business */
	bool any = false;
	for (size_t i = 0; i < in->n; i++)
		any |= in->m[i].outdated;
	if (!any)
		return;
	if (!healthy(in)) {
		ret->action = RC_ROLL_WAIT;
		return;
	}
	const struct rc_roll_member *next = NULL;
	for (size_t i = 0; i < in->n; i++) {
		const struct rc_roll_member *x = &in->m[i];
		if (x->outdated && !str_eq(x->in->name, in->current_primary) &&
		    (!next || x->in->serial > next->in->serial))
			next = x;
	}
	if (next) {
		ret->action = RC_ROLL_RESTART_REPLICA;
		ret->target = next->in->name;
		return;
	}
	const struct rc_roll_member *p = member(in, in->current_primary);
	ret->target = p->in->name;
	if (in->supervised) {
		ret->action = RC_ROLL_WAIT_USER;
		return;
	}
	if (in->switchover) {
		/* members are in failover order: the first healthy streaming replica
		 * is the most advanced */
		for (size_t i = 0; i < in->n; i++) {
			const struct rc_instance *x = in->m[i].in;
			if (rc_switchover_pick(x, 1, in->current_primary)) {
				ret->action = RC_ROLL_SWITCHOVER;
				ret->target = x->name;
				return;
			}
		}
	}
	ret->action = RC_ROLL_INPLACE_MARK; /* restart, or no replica to switch to */
}

bool rc_rollout_hold_failover(const struct rc_rollout_input *in)
{
	if (!in->inplace_pod || !settled(in) || !str_eq(in->inplace_pod, in->current_primary))
		return false;
	const struct rc_roll_member *p = member(in, in->inplace_pod);
	if (!p)
		return true; /* the reconciler recreates it in this very pass */
	if (str_eq(p->uid, in->inplace_uid))
		return !p->deleting || in->now - p->deleting < RC_INPLACE_HOLD_S;
	return p->created && in->now - p->created < RC_INPLACE_HOLD_S;
}

static const char *annotation(json_object *obj, const char *key)
{
	json_object *a = op_json_at(obj, "metadata.annotations"), *v = NULL;
	if (!a || !json_object_object_get_ex(a, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool same_major_other_image(const char *have, const char *want)
{
	int a, b;
	return have && want && strcmp(have, want) != 0 &&
	       api_image_major_version(have, &a, NULL) == 0 &&
	       api_image_major_version(want, &b, NULL) == 0 && a == b;
}

bool rc_rollout_outdated(json_object *pod, const char *cluster_restarted_at,
			 const struct rc_instance *in, const char *image,
			 const char *archive_volumes)
{
	const char *have = annotation(pod, RC_ANN_RESTARTED_AT);
	if (!str_eq(have ? have : "", cluster_restarted_at ? cluster_restarted_at : ""))
		return true;
	if (same_major_other_image(annotation(pod, RC_ANN_IMAGE), image))
		return true;
	const char *vols = annotation(pod, RC_ANN_ARCHIVE_VOLUMES);
	if (archive_volumes && !str_eq(vols ? vols : "", archive_volumes))
		return true;
	return in && in->has_status && in->pending_restart;
}

/* ------------------------------------------------------------ the step */

static json_object *find_pod(json_object *pods, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(pods); i++) {
		json_object *o = json_object_array_get_idx(pods, i);
		if (str_eq(kube_obj_name(o), name))
			return o;
	}
	return NULL;
}

static int64_t time_at(json_object *obj, const char *path)
{
	int64_t t = 0;
	const char *s = op_json_str_at(obj, path);
	return s && api_time_parse(s, &t) == 0 ? t : 0;
}

/* Builds the input; *ret_m owned (free). */
static void build_input(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods,
			struct rc_roll_member **ret_m, struct rc_rollout_input *in)
{
	const struct api_kvs *ann = &r->c->metadata.annotations;
	const char *restarted = api_kvs_get(ann, RC_ANN_RESTARTED_AT);
	const char *image = rc_pg_image(r->c, &r->ctl->settings);
	_cleanup_free_ char *vols = rc_archive_volumes(r->c);
	_cleanup_free_ char *patch = rc_pod_patch_hash(r->c);
	_cleanup_free_ char *place = rc_placement_hash(r->c);
	_cleanup_free_ char *tbs = rc_tablespace_names(r->c); /* a new one: Pods mounting it */
	struct rc_roll_member *m = op_calloc(n ? n : 1, sizeof(*m));
	for (size_t i = 0; i < n; i++) {
		json_object *p = find_pod(pods, v[i].name);
		bool placed = p && rc_placement_outdated(p, place);
		bool other = p && (rc_rollout_outdated(p, restarted, &v[i], image, vols) ||
				   rc_pod_patch_outdated(p, patch) ||
				   !str_eq(annotation(p, RC_ANN_TABLESPACES) ?: "", tbs));
		m[i] = (struct rc_roll_member){
			.in = &v[i],
			.uid = p ? kube_obj_uid(p) : NULL,
			.outdated = placed || other,
			.placement = placed,
			.created = time_at(p, "metadata.creationTimestamp"),
			.deleting = time_at(p, "metadata.deletionTimestamp"),
		};
	}
	const char *strategy = r->c->spec.primary_update_strategy;
	const char *method = r->c->spec.primary_update_method;
	*in = (struct rc_rollout_input){
		.m = m,
		.n = n,
		.current_primary = r->want.current_primary,
		.target_primary = r->want.target_primary,
		.instances = r->c->spec.instances,
		.supervised = str_eq(strategy, "supervised"),
		.switchover = str_eq(method, "switchover"),
		.inplace_pod = api_kvs_get(ann, RC_ANN_INPLACE_RESTART),
		.inplace_uid = api_kvs_get(ann, RC_ANN_INPLACE_RESTART_UID),
		.now = r->now,
	};
	*ret_m = m;
}

bool rc_rollout_holds(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods)
{
	struct rc_roll_member *m = NULL;
	struct rc_rollout_input in;
	build_input(r, v, n, pods, &m, &in);
	bool hold = rc_rollout_hold_failover(&in);
	free(m);
	return hold;
}

/* Said in the Events and the phase reason of a step whose instance is
 * outdated by its placement (rc_roll_member.placement). */
#define WHY_PLACEMENT                                                                              \
	" for the Cluster's new placement (affinity, nodeSelector, tolerations, "                  \
	"topologySpreadConstraints)"
#define PHASE_PLACEMENT "the Cluster's placement changed: the instances are recreated one at a time"

/* Whether the instance the decision acts on is outdated by its placement:
 * the target, or the primary being switched away from. */
static bool placement_changed(const struct rc_run *r, const struct rc_roll_member *m, size_t n,
			      const struct rc_rollout_decision *d)
{
	const char *who = d->action == RC_ROLL_SWITCHOVER ? r->want.current_primary : d->target;
	for (size_t i = 0; i < n && who; i++)
		if (str_eq(m[i].in->name, who))
			return m[i].placement;
	return false;
}

static void set_phase(struct rc_run *r, const char *phase, const char *reason)
{
	free(r->want.phase);
	free(r->want.phase_reason);
	r->want.phase = op_strdup(phase);
	r->want.phase_reason = reason ? op_strdup(reason) : NULL;
}

/* Merge-patches the in-place annotations (pod NULL = remove them). */
static int patch_inplace(struct rc_run *r, const char *pod, const char *uid)
{
	json_object *p = op_jobj();
	json_object *a = op_jchild(op_jchild(p, "metadata"), "annotations");
	op_jset(a, RC_ANN_INPLACE_RESTART, pod ? op_jstr(pod) : NULL);
	op_jset(a, RC_ANN_INPLACE_RESTART_UID, pod && uid ? op_jstr(uid) : NULL);
	int ret = kube_patch(r->ctl->kc, KUBE_CLUSTERS, r->ns, r->name, KUBE_PATCH_MERGE,
			     json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, r->err);
	json_object_put(p);
	return ret;
}

int rc_rollout_step(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *pods)
{
	struct rc_roll_member *m = NULL;
	struct rc_rollout_input in;
	build_input(r, v, n, pods, &m, &in);
	struct rc_rollout_decision d;
	rc_rollout_decide(&in, &d);
	_cleanup_free_ char *target = d.target ? op_strdup(d.target) : NULL;
	const char *uid = NULL;
	for (size_t i = 0; i < n && target; i++)
		if (str_eq(m[i].in->name, target))
			uid = m[i].uid;
	_cleanup_free_ char *uid_copy = uid ? op_strdup(uid) : NULL;
	bool placed = placement_changed(r, m, n, &d);
	const char *why = placed ? WHY_PLACEMENT : "";
	const char *reason = placed ? PHASE_PLACEMENT : NULL;
	free(m);
	int ret = 0;
	switch (d.action) {
	case RC_ROLL_NONE:
		return 0;
	case RC_ROLL_WAIT:
		rc_requeue(r, 2000); /* the usual phases say what it waits for */
		return 0;
	case RC_ROLL_RESTART_REPLICA:
		ret = rc_delete(r, KUBE_PODS, target);
		if (ret < 0)
			return ret;
		rc_event(r, "Normal", "RestartingInstance",
			 "rolling restart%s: restarting replica %s (its Pod is recreated on its "
			 "volume)",
			 why, target);
		set_phase(r, RC_PHASE_UPGRADING, reason);
		rc_requeue(r, 2000);
		return 1;
	case RC_ROLL_WAIT_USER:
		if (!str_eq(r->want.phase, RC_PHASE_WAITING_USER))
			rc_event(r, "Normal", "WaitingForUser",
				 "rolling restart%s: every replica is restarted; the primary %s needs "
				 "a restart and primaryUpdateStrategy is supervised: run a switchover "
				 "(POST /apis/live.postgresql.cnpg.io/v1/namespaces/%s/clusters/%s/"
				 "switchover) to finish",
				 why, target, r->ns, r->name);
		set_phase(r, RC_PHASE_WAITING_USER,
			  "the primary needs a restart: switch over to finish the rolling restart");
		rc_requeue(r, 10000);
		return 1;
	case RC_ROLL_SWITCHOVER:
		rc_event(r, "Normal", "SwitchoverForRestart",
			 "rolling restart%s: switching over from %s to %s (primaryUpdateMethod "
			 "switchover); %s is restarted as a replica afterwards",
			 why, r->want.current_primary, target, r->want.current_primary);
		free(r->want.target_primary);
		r->want.target_primary = op_strdup(target);
		set_phase(r, RC_PHASE_UPGRADING, reason);
		rc_requeue(r, 1000);
		return 1;
	case RC_ROLL_INPLACE_MARK:
		ret = patch_inplace(r, target, uid_copy);
		if (ret < 0)
			return ret;
		rc_event(r, "Normal", "RestartingPrimary",
			 "restarting the primary %s in place%s (primaryUpdateMethod restart): it "
			 "does not hand over",
			 target, why);
		set_phase(r, RC_PHASE_UPGRADING, reason);
		rc_requeue(r, 1000);
		return 1;
	case RC_ROLL_INPLACE_DELETE:
		ret = rc_delete(r, KUBE_PODS, target);
		if (ret < 0)
			return ret;
		rc_event(r, "Normal", "RestartingPrimary", "deleted the primary's Pod %s: it "
			 "restarts in place%s", target, why);
		set_phase(r, RC_PHASE_UPGRADING, reason);
		rc_requeue(r, 1000);
		return 1;
	case RC_ROLL_INPLACE_WAIT:
		set_phase(r, RC_PHASE_WAITING_ACTIVE, NULL);
		rc_requeue(r, 1000);
		return 1;
	case RC_ROLL_INPLACE_DONE:
		ret = patch_inplace(r, NULL, NULL);
		if (ret < 0 && ret != -ENOENT)
			return ret;
		if (target)
			rc_event(r, "Normal", "PrimaryRestarted", "the primary %s is back after its "
				 "in-place restart", target);
		rc_requeue(r, 1000);
		return 0;
	}
	return 0;
}
