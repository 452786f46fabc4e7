/* reconciler/status.c - instance ordering, failover decision, status patch
 * (status.h). Pure functions. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/annotations.h"
#include "api/fence.h"
#include "api/timestamp.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/lsn.h"

void rc_instance_done(struct rc_instance *in)
{
	if (!in)
		return;
	free(in->name);
	free(in->ip);
	free(in->error);
	if (in->doc)
		json_object_put(in->doc);
	*in = (struct rc_instance){ 0 };
}

static int get_lsn(json_object *st, const char *key, uint64_t *ret, struct op_err *err)
{
	const char *s = NULL;
	int r = op_json_get_str(st, key, "", &s, err);
	if (r <= 0 || !*s)
		return r < 0 ? r : 0;
	if (op_lsn_parse(s, ret) < 0)
		return op_err_set(err, -EINVAL, "%s: not an LSN: %.40s", key, s);
	return 0;
}

int rc_instance_parse_status(struct rc_instance *in, json_object *st, struct op_err *err)
{
	if (!json_object_is_type(st, json_type_object))
		return op_err_set(err, -EINVAL, "status: expected object, got %s",
				  op_json_type_name(st));
	struct rc_instance t = *in;
	t.current_lsn = t.received_lsn = t.replay_lsn = 0;
	t.is_primary = t.wal_receiver_active = t.pg_rewind_running = t.pending_restart = false;
	t.timeline_id = 0;
	t.streaming_replicas = 0;
	t.cut_hold_ms = t.lease_ms = 0;
	int r = 0;
	if (r >= 0)
		r = get_lsn(st, "currentLsn", &t.current_lsn, err);
	if (r >= 0)
		r = get_lsn(st, "receivedLsn", &t.received_lsn, err);
	if (r >= 0)
		r = get_lsn(st, "replayLsn", &t.replay_lsn, err);
	if (r >= 0)
		r = op_json_get_bool(st, "isPrimary", "", &t.is_primary, err);
	if (r >= 0)
		r = op_json_get_bool(st, "isWalReceiverActive", "", &t.wal_receiver_active, err);
	if (r >= 0)
		r = op_json_get_bool(st, "isPgRewindRunning", "", &t.pg_rewind_running, err);
	if (r >= 0)
		r = op_json_get_bool(st, "pendingRestart", "", &t.pending_restart, err);
	if (r >= 0)
		r = op_json_get_i64(st, "timeLineID", "", &t.timeline_id, err);
	if (r >= 0)
		r = op_json_get_i64(st, "leaseMs", "", &t.lease_ms, err);
	if (r >= 0 && (t.lease_ms < 0 || t.lease_ms > RC_INSTANCE_MS_MAX))
		r = op_err_set(err, -EINVAL, "leaseMs: %lld out of range", (long long)t.lease_ms);
	json_object *cut = NULL;
	if (r >= 0)
		r = op_json_get_obj(st, "walReceiverCut", "", &cut, err);
	if (r > 0)
		r = op_json_get_i64(cut, "holdMs", "walReceiverCut.", &t.cut_hold_ms, err);
	if (r >= 0 && (t.cut_hold_ms < 0 || t.cut_hold_ms > RC_INSTANCE_MS_MAX))
		r = op_err_set(err, -EINVAL, "walReceiverCut.holdMs: %lld out of range",
			       (long long)t.cut_hold_ms);
	json_object *repl = NULL;
	if (r >= 0)
		r = op_json_get_arr(st, "replicationInfo", "", &repl, err);
	if (r > 0) {
		for (size_t i = 0; i < json_object_array_length(repl); i++) {
			const char *state = op_json_str_at(json_object_array_get_idx(repl, i),
							   "state");
			if (state && strcmp(state, "streaming") == 0)
				t.streaming_replicas++;
		}
	}
	if (r < 0)
		return r;
	t.has_status = true;
	*in = t;
	return 0;
}

int rc_reclone_report(json_object *doc, struct rc_reclone_report *ret)
{
	json_object *rc = op_json_at(doc, "recloned");
	const char *time = op_json_key_str(rc, "time");
	if (!json_object_is_type(rc, json_type_object) || !time || !*time)
		return 0;
	*ret = (struct rc_reclone_report){ .session_id = op_json_key_str(doc, "sessionID"),
					   .source = op_json_key_str(rc, "source"),
					   .time = time };
	if (op_json_key_i64(rc, "pgRewindExitStatus", &ret->rewind_status) != 1)
		ret->rewind_status = -1;
	return 1;
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_instance(const void *pa, const void *pb)
{
	const struct rc_instance *a = pa, *b = pb;
	if (a->has_status != b->has_status)
		return a->has_status ? -1 : 1;
	if (a->is_primary != b->is_primary)
		return a->is_primary ? -1 : 1;
	int c;
	if (!a->is_primary) {
		if ((c = cmp_u64_desc(a->received_lsn, b->received_lsn)))
			return c;
		if ((c = cmp_u64_desc(a->replay_lsn, b->replay_lsn)))
			return c;
	}
	/* name order, but by serial so cluster-10 sorts after cluster-9 */
	if (a->serial != b->serial)
		return a->serial < b->serial ? -1 : 1;
	return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

void rc_instances_sort(struct rc_instance *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_instance);
}

static const char *const fo_names[] = {
	[RC_FO_NONE] = "none",
	[RC_FO_SPLIT_BRAIN] = "split-brain",
	[RC_FO_PRIMARY_CHECK] = "primary-status-check-failed",
	[RC_FO_WAIT_DELAY] = "wait-failover-delay",
	[RC_FO_MARK_PENDING] = "mark-pending",
	[RC_FO_WAIT_WAL_RECEIVERS] = "wait-wal-receivers",
	[RC_FO_PROMOTE] = "promote",
	[RC_FO_WAIT_FENCE] = "wait-fence",
	[RC_FO_CANCEL] = "cancel",
	[RC_FO_NO_QUORUM] = "no-quorum",
	[RC_FO_WAIT_RESTART] = "wait-restart",
	[RC_FO_NO_SYNC] = "no-synchronous-replica",
};

const char *rc_failover_action_str(enum rc_failover_action a)
{
	return (unsigned)a < OP_ARRAY_SIZE(fo_names) ? fo_names[a] : "unknown";
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Replicas (not the current primary) that answer with their WAL receiver
 * down: they have lost the primary. */
static unsigned replicas_lost(const struct rc_failover_input *in)
{
	unsigned lost = 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct rc_instance *x = &in->v[i];
		lost += x->has_status && !x->is_primary && !x->wal_receiver_active && !x->cut_unheld &&
			!str_eq(x->name, in->current_primary);
	}
	return lost;
}

/* rc_failover_decide in steps. Each step looks at in (borrowed) and either
 * settles *ret (returns true: the decision is made) or lets the next step
 * look (false). cur is the current primary's entry in in->v (borrowed), NULL
 * when it has no Pod. */

/* Step 1: no failover question at all: two primaries (split brain), nothing
 * to decide on, a switchover the instances are carrying out, or the most
 * advanced instance already the target or the primary (the old primary back
 * before anyone was promoted: RC_FO_CANCEL). Sets *ret_cur. */
static bool fo_settled(const struct rc_failover_input *in, const struct rc_instance **ret_cur,
		       struct rc_failover_decision *ret)
{
	size_t primaries = 0;
	const struct rc_instance *cur = NULL;
	for (size_t i = 0; i < in->n; i++) {
		if (in->v[i].has_status && in->v[i].is_primary)
			primaries++;
		if (str_eq(in->v[i].name, in->current_primary))
			cur = &in->v[i];
	}
	*ret_cur = cur;
	if (primaries > 1) {
		ret->action = RC_FO_SPLIT_BRAIN;
		return true;
	}
	if (in->n == 0 || !in->target_primary || !*in->target_primary)
		return true;
	const bool pending = strcmp(in->target_primary, RC_PENDING_FAILOVER) == 0;
	/* a switchover/promotion the instances are carrying out: wait for it */
	if (!pending && in->current_primary && *in->current_primary &&
	    !str_eq(in->current_primary, in->target_primary))
		return true;
	const struct rc_instance *first = &in->v[0];
	if (str_eq(first->name, in->target_primary) || !first->has_status)
		return true;
	if (first->is_primary) {
		/* the old primary came back (a crash restart) before anyone was
		 * promoted: it keeps the role */
		if (pending && first == cur)
			ret->action = RC_FO_CANCEL;
		return true; /* else: reporting primary but not the target, it will demote */
	}
	return false;
}

/* Step 2 (before "pending"): the primary may not be gone: it restarts (within
 * its grace), or only its status endpoint does not answer while its replicas
 * still stream from it. */
static bool fo_primary_may_return(const struct rc_failover_input *in,
				  const struct rc_instance *cur, struct rc_failover_decision *ret)
{
	/* a crash restart: the primary's manager restarts postgres in place, or its
	 * container restarts (the kubelet marks the Pod not Ready at once); both are
	 * back in about a second, a failover costs its fence wait and a rewind */
	if (cur && !cur->has_status && !cur->pod_terminating &&
	    (cur->restarting || !cur->pod_ready)) {
		int64_t grace = cur->restarting ? RC_RESTART_GRACE_S : RC_CONTAINER_GRACE_S;
		if (!in->failing_since || in->now - in->failing_since < grace) {
			ret->action = RC_FO_WAIT_RESTART;
			ret->start_failing_clock = !in->failing_since;
			return true;
		}
	}
	/* the current primary's Pod is Ready but its /pg/status does not answer:
	 * a blip on the status port, unless its replicas lost it too (on a
	 * partitioned node the kubelet keeps probing it happily) */
	if (cur && cur->pod_ready && !cur->pod_terminating && !cur->has_status &&
	    !api_fence_peers_lost((unsigned)in->n, replicas_lost(in))) {
		ret->action = RC_FO_PRIMARY_CHECK;
		ret->start_failing_clock = in->failover_delay_s > 0 && !in->failing_since;
		return true;
	}
	return false;
}

/* Step 3: spec.failoverDelay has not passed since the primary was first seen
 * failing (the clock starts now when it was not running). */
static bool fo_wait_delay(const struct rc_failover_input *in, struct rc_failover_decision *ret)
{
	if (in->failover_delay_s <= 0)
		return false;
	if (!in->failing_since) {
		ret->action = RC_FO_WAIT_DELAY;
		ret->start_failing_clock = true;
		return true;
	}
	if (in->now - in->failing_since < in->failover_delay_s) {
		ret->action = RC_FO_WAIT_DELAY;
		return true;
	}
	return false;
}

/* Step 4 ("pending" written): what a promotion still waits for: every
 * replica's WAL receiver down, a quorum of answering replicas
 * (failoverQuorum), the old primary's lease (fencing). */
static bool fo_wait_before_promote(const struct rc_failover_input *in,
				   const struct rc_instance *cur, struct rc_failover_decision *ret)
{
	for (size_t i = 0; i < in->n; i++) {
		const struct rc_instance *x = &in->v[i];
		if (x->has_status && x->wal_receiver_active && !str_eq(x->name, in->current_primary)) {
			ret->action = RC_FO_WAIT_WAL_RECEIVERS;
			return true;
		}
	}
	if (in->quorum > 0) {
		int64_t answering = 0;
		for (size_t i = 0; i < in->n; i++)
			answering += in->v[i].has_status && !str_eq(in->v[i].name, in->current_primary);
		if (answering < in->quorum) {
			ret->action = RC_FO_NO_QUORUM;
			return true;
		}
	}
	/* fencing: the old primary may still be writable until its lease ran out */
	const bool known_down = !cur || (cur->has_status && !cur->is_primary);
	if (!known_down &&
	    (!in->pending_since_ms || in->now_ms - in->pending_since_ms < in->fence_wait_ms)) {
		ret->action = RC_FO_WAIT_FENCE;
		return true;
	}
	return false;
}

/* Step 5: the replica to promote: the most advanced (in->v[0]), or with
 * dataDurability required the most advanced answering replica that was
 * synchronous (RC_FO_NO_SYNC when none). */
static void fo_pick(const struct rc_failover_input *in, struct rc_failover_decision *ret)
{
	const struct rc_instance *pick = &in->v[0];
	if (in->sync_only) {
		pick = NULL;
		for (size_t i = 0; i < in->n && !pick; i++) {
			const struct rc_instance *x = &in->v[i];
			for (size_t k = 0; x->has_status && !x->is_primary &&
					   !str_eq(x->name, in->current_primary) && k < in->n_sync_only;
			     k++)
				if (str_eq(x->name, in->sync_only[k]))
					pick = x;
		}
		if (!pick) {
			ret->action = RC_FO_NO_SYNC;
			return;
		}
	}
	ret->action = RC_FO_PROMOTE;
	ret->target = pick->name;
}

void rc_failover_decide(const struct rc_failover_input *in, struct rc_failover_decision *ret)
{
	*ret = (struct rc_failover_decision){ .action = RC_FO_NONE };
	const struct rc_instance *cur = NULL;
	if (fo_settled(in, &cur, ret))
		return;
	const bool pending = strcmp(in->target_primary, RC_PENDING_FAILOVER) == 0;
	if (!pending && fo_primary_may_return(in, cur, ret))
		return;
	if (fo_wait_delay(in, ret))
		return;
	if (!pending) {
		ret->action = RC_FO_MARK_PENDING;
		return;
	}
	if (fo_wait_before_promote(in, cur, ret))
		return;
	fo_pick(in, ret);
}

bool rc_fence_stamp_late(const char *since, int64_t now_ms)
{
	int64_t at = 0;
	return api_time_parse_ms(since, &at) != 0 || now_ms - at > API_FENCE_STAMP_MS;
}

int64_t rc_fence_clock_ms(int64_t stamp_ms, int64_t returned_ms)
{
	int64_t floor = returned_ms ? returned_ms - API_FENCE_STAMP_MS : 0;
	return floor > stamp_ms ? floor : stamp_ms;
}

long rc_failover_fence_requeue_ms(const struct rc_failover_input *in)
{
	if (!in->pending_since_ms)
		return 1000;
	int64_t left = in->pending_since_ms + in->fence_wait_ms - in->now_ms - RC_FENCE_EARLY_MS;
	return left >= 1000 ? 1000 : left < 1 ? 1 : (long)left;
}

/* ---------------------------------------------------------------- status */

void rc_strv_push(char ***v, size_t *n, const char *s)
{
	*v = op_realloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = op_strdup(s);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void rc_strv_free(char ***v, size_t *n)
{
	strv_free(*v, *n);
	*v = NULL;
	*n = 0;
}

void rc_status_add_reported(struct rc_status *s, const char *pod, bool primary, int64_t tli,
			    const char *ip)
{
	const size_t k = s->n_reported; /* index of the new entry */
	size_t n = k;
	rc_strv_push(&s->reported_names, &n, pod);
	n = k;
	rc_strv_push(&s->reported_ip, &n, ip ? ip : "");
	s->reported_primary = op_realloc(s->reported_primary, (k + 1) * sizeof(bool));
	s->reported_tli = op_realloc(s->reported_tli, (k + 1) * sizeof(int64_t));
	s->reported_primary[k] = primary;
	s->reported_tli[k] = tli;
	s->n_reported = k + 1;
	s->reported_known = true;
}

void rc_status_clear_reported(struct rc_status *s)
{
	strv_free(s->reported_names, s->n_reported);
	strv_free(s->reported_ip, s->n_reported);
	free(s->reported_primary);
	free(s->reported_tli);
	s->reported_names = s->reported_ip = NULL;
	s->reported_primary = NULL;
	s->reported_tli = NULL;
	s->n_reported = 0;
}

void rc_status_done(struct rc_status *s)
{
	if (!s)
		return;
	rc_status_clear_reported(s);
	free(s->selector);
	free(s->phase);
	free(s->phase_reason);
	strv_free(s->instance_names, s->n_instance_names);
	free(s->current_primary);
	free(s->target_primary);
	strv_free(s->healthy, s->n_healthy);
	strv_free(s->failed, s->n_failed);
	strv_free(s->sync_standbys, s->n_sync_standbys);
	strv_free(s->cert_names, s->n_certs);
	strv_free(s->cert_expirations, s->n_certs);
	free(s->failing_since);
	free(s->target_since);
	strv_free(s->pending_restart, s->n_pending_restart);
	free(s->sync);
	free(s->max_lag);
	free(s->archiving_msg);
	free(s->last_successful_backup);
	free(s->last_failed_backup);
	free(s->first_recoverability_point);
	if (s->tablespaces_status)
		json_object_put(s->tablespaces_status);
	free(s->backup_msg);
	free(s->hib_reason);
	free(s->hib_msg);
	*s = (struct rc_status){ 0 };
}

static char *dup_str_at(json_object *o, const char *path)
{
	const char *s = op_json_str_at(o, path);
	return s ? op_strdup(s) : NULL;
}

static int64_t i64_at(json_object *o, const char *path)
{
	json_object *v = op_json_at(o, path);
	return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

static void strv_from(json_object *arr, char ***v, size_t *n)
{
	if (!json_object_is_type(arr, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		if (json_object_is_type(e, json_type_string))
			rc_strv_push(v, n, json_object_get_string(e));
	}
}

void rc_status_from_json(json_object *st, struct rc_status *ret)
{
	struct rc_status s = { 0 };
	if (st && json_object_is_type(st, json_type_object)) {
		s.phase = dup_str_at(st, "phase");
		s.phase_reason = dup_str_at(st, "phaseReason");
		s.instances = i64_at(st, "instances");
		s.ready_instances = i64_at(st, "readyInstances");
		strv_from(op_json_at(st, "instanceNames"), &s.instance_names, &s.n_instance_names);
		s.current_primary = dup_str_at(st, "currentPrimary");
		s.target_primary = dup_str_at(st, "targetPrimary");
		s.latest_generated_node = i64_at(st, "latestGeneratedNode");
		s.timeline_id = i64_at(st, "timelineID");
		strv_from(op_json_at(st, "instancesStatus.healthy"), &s.healthy, &s.n_healthy);
		strv_from(op_json_at(st, "instancesStatus.failed"), &s.failed, &s.n_failed);
		s.failing_since = dup_str_at(st, "currentPrimaryFailingSinceTimestamp");
		s.target_since = dup_str_at(st, "targetPrimaryTimestamp");
		s.sync = dup_str_at(st, "sync");
		s.max_lag = dup_str_at(st, "maxLag");
		strv_from(op_json_at(st, "synchronousStandbys"), &s.sync_standbys,
			  &s.n_sync_standbys);
		json_object *conds = op_json_at(st, "conditions");
		for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
				   i < json_object_array_length(conds);
		     i++) {
			json_object *c = json_object_array_get_idx(conds, i);
			if (str_eq(op_json_str_at(c, "type"), "Ready"))
				s.ready = str_eq(op_json_str_at(c, "status"), "True");
		}
		json_object *ex = op_json_at(st, "certificates.expirations");
		if (json_object_is_type(ex, json_type_object)) {
			json_object_object_foreach(ex, k, v)
			{
				if (!json_object_is_type(v, json_type_string))
					continue;
				size_t n = s.n_certs;
				rc_strv_push(&s.cert_names, &n, k);
				rc_strv_push(&s.cert_expirations, &s.n_certs, json_object_get_string(v));
			}
		}
	}
	*ret = s;
}

static json_object *strv_json(char **v, size_t n)
{
	json_object *a = op_jarr();
	for (size_t i = 0; i < n; i++)
		op_jpush(a, op_jstr(v[i]));
	return a;
}

/* Adds key=val to patch when it differs from cur[key] (val owned; NULL = remove). */
static void diff_set(json_object *patch, json_object *cur, const char *key, json_object *val)
{
	json_object *old = NULL;
	bool has = cur && json_object_object_get_ex(cur, key, &old) && old;
	if (!val) {
		if (has)
			op_jset(patch, key, NULL);
		return;
	}
	if (has && json_object_equal(old, val)) {
		json_object_put(val);
		return;
	}
	op_jset(patch, key, val);
}

/* instancesReportedState as of this reconcile: merge patches merge objects,
 * so an instance that stopped reporting is removed with an explicit null (the
 * whole map when nobody reports). */
static void reported_state(json_object *patch, json_object *cur, const struct rc_status *w)
{
	if (!w->reported_known)
		return;
	json_object *rs = op_jobj();
	for (size_t i = 0; i < w->n_reported; i++) {
		json_object *e = op_jobj();
		op_jset(e, "isPrimary", op_jbool(w->reported_primary[i]));
		op_jset(e, "timeLineID", op_jint(w->reported_tli[i]));
		if (w->reported_ip[i][0])
			op_jsets(e, "ip", w->reported_ip[i]);
		op_jset(rs, w->reported_names[i], e);
	}
	json_object *old = NULL;
	if (!cur || !json_object_object_get_ex(cur, "instancesReportedState", &old) ||
	    !json_object_is_type(old, json_type_object))
		old = NULL;
	if (!w->n_reported) {
		json_object_put(rs);
		if (cur && json_object_object_get_ex(cur, "instancesReportedState", NULL))
			op_jset(patch, "instancesReportedState", NULL);
		return;
	}
	if (old && json_object_equal(old, rs)) {
		json_object_put(rs);
		return;
	}
	if (old) {
		json_object_object_foreach(old, k, v)
		{
			(void)v;
			if (!json_object_object_get_ex(rs, k, NULL))
				op_jset(rs, k, NULL);
		}
	}
	op_jset(patch, "instancesReportedState", rs);
}

char *rc_status_pending_message(const struct rc_status *s)
{
	if (!s->n_pending_restart)
		return NULL;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (op_buf_addf(&b, "instances with parameters that need a restart:") < 0)
		return NULL;
	for (size_t i = 0; i < s->n_pending_restart; i++)
		if (op_buf_addf(&b, "%s %s", i ? "," : "", s->pending_restart[i]) < 0)
			break;
	return op_buf_take(&b, NULL);
}

/* One condition; lastTransitionTime from `old` (may be NULL) when its status is
 * the same, `now` otherwise. */
static json_object *condition(json_object *old, const char *type, bool status,
			      const char *reason, const char *message, int64_t now)
{
	const char *st = status ? "True" : "False";
	const char *ltt = old && str_eq(op_json_str_at(old, "status"), st)
				  ? op_json_str_at(old, "lastTransitionTime")
				  : NULL;
	json_object *c = op_jobj();
	op_jsets(c, "type", type);
	op_jsets(c, "status", st);
	op_jsets(c, "reason", reason);
	op_jsets(c, "message", message);
	if (ltt) {
		op_jsets(c, "lastTransitionTime", ltt);
	} else {
		_cleanup_free_ char *t = api_time_rfc3339(now);
		op_jsets(c, "lastTransitionTime", t);
	}
	return c;
}

enum rc_archiving rc_archiving_decide(json_object *doc, bool configured, char **ret_msg)
{
	*ret_msg = NULL;
	if (!configured)
		return RC_ARCH_NONE;
	if (!json_object_is_type(doc, json_type_object))
		return RC_ARCH_KEEP;
	const char *why = op_json_key_str(doc, "archiveError");
	const char *ok_at = op_json_key_str(doc, "lastArchivedWALTime");
	const char *failed_at = op_json_key_str(doc, "lastFailedWALTime");
	const char *failed = op_json_key_str(doc, "lastFailedWAL");
	int64_t ok_t = 0, failed_t = 0;
	bool ok = ok_at && api_time_parse(ok_at, &ok_t) == 0;
	bool fail = failed_at && api_time_parse(failed_at, &failed_t) == 0 && failed_t >= ok_t;
	if (why && *why) {
		*ret_msg = op_asprintf("WAL archiving is failing%s%s: %s", failed ? " at " : "",
				       failed ? failed : "", why);
		return RC_ARCH_FAILING;
	}
	if (fail) {
		*ret_msg = op_asprintf("WAL archiving is failing at %s", failed ? failed : "?");
		return RC_ARCH_FAILING;
	}
	if (!ok)
		return RC_ARCH_KEEP; /* nothing archived nor failed yet */
	*ret_msg = op_strdup("Continuous archiving is working");
	return RC_ARCH_OK;
}

/* ContinuousArchiving as w says (owned), old's copy (KEEP), or NULL (none). */
static json_object *archiving_condition(json_object *old, const struct rc_status *w,
					int64_t now)
{
	json_object *c = NULL;
	if (w->archiving == RC_ARCH_KEEP) {
		if (old && json_object_deep_copy(old, &c, NULL) != 0)
			op_oom(0);
		return c;
	}
	if (w->archiving == RC_ARCH_NONE)
		return NULL;
	bool ok = w->archiving == RC_ARCH_OK;
	return condition(old, "ContinuousArchiving", ok,
			 ok ? "ContinuousArchivingSuccess" : "ContinuousArchivingFailing",
			 w->archiving_msg, now);
}

/* LastBackupSucceeded as w says (owned), old's copy (KEEP), or NULL. */
static json_object *backup_condition(json_object *old, const struct rc_status *w, int64_t now)
{
	json_object *c = NULL;
	if (w->backup_cond == RC_BACKUP_COND_KEEP) {
		if (old && json_object_deep_copy(old, &c, NULL) != 0)
			op_oom(0);
		return c;
	}
	bool ok = w->backup_cond == RC_BACKUP_COND_OK;
	return condition(old, "LastBackupSucceeded", ok,
			 ok ? "LastBackupSucceeded" : "LastBackupFailed", w->backup_msg, now);
}

/* cnpg.io/hibernation as w says (owned), old's copy (KEEP), or NULL (none). */
static json_object *hibernation_condition(json_object *old, const struct rc_status *w,
					  int64_t now)
{
	json_object *c = NULL;
	if (w->hibernation == RC_COND_KEEP) {
		if (old && json_object_deep_copy(old, &c, NULL) != 0)
			op_oom(0);
		return c;
	}
	if (w->hibernation == RC_COND_NONE)
		return NULL;
	return condition(old, API_COND_HIBERNATION, w->hibernation == RC_COND_TRUE,
			 w->hib_reason ? w->hib_reason : "", w->hib_msg ? w->hib_msg : "", now);
}

static json_object *conditions(json_object *cur, const struct rc_status *w, int64_t now)
{
	json_object *old = cur ? op_json_at(cur, "conditions") : NULL;
	json_object *arr = op_jarr();
	json_object *old_ready = NULL, *old_pending = NULL, *old_arch = NULL, *old_backup = NULL;
	json_object *old_hib = NULL;
	if (json_object_is_type(old, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(old); i++) {
			json_object *c = json_object_array_get_idx(old, i);
			const char *type = op_json_str_at(c, "type");
			if (str_eq(type, "Ready")) {
				old_ready = c;
				continue;
			}
			if (str_eq(type, "PendingRestart") && w->pending_known) {
				old_pending = c;
				continue;
			}
			if (str_eq(type, "ContinuousArchiving")) { /* kept or rewritten in place */
				old_arch = c;
				json_object *a = archiving_condition(old_arch, w, now);
				if (a)
					op_jpush(arr, a);
				continue;
			}
			if (str_eq(type, API_COND_HIBERNATION)) { /* the same */
				old_hib = c;
				json_object *a = hibernation_condition(old_hib, w, now);
				if (a)
					op_jpush(arr, a);
				continue;
			}
			if (str_eq(type, "LastBackupSucceeded")) { /* the same */
				old_backup = c;
				json_object *a = backup_condition(old_backup, w, now);
				if (a)
					op_jpush(arr, a);
				continue;
			}
			json_object *copy = NULL;
			if (json_object_deep_copy(c, &copy, NULL) == 0)
				op_jpush(arr, copy);
		}
	}
	json_object *fresh = old_arch ? NULL : archiving_condition(NULL, w, now);
	if (fresh) /* a new one goes before Ready, and stays there */
		op_jpush(arr, fresh);
	fresh = old_backup ? NULL : backup_condition(NULL, w, now);
	if (fresh)
		op_jpush(arr, fresh);
	fresh = old_hib ? NULL : hibernation_condition(NULL, w, now);
	if (fresh)
		op_jpush(arr, fresh);
	op_jpush(arr, condition(old_ready, "Ready", w->ready,
			     w->ready ? "ClusterIsReady" : "ClusterIsNotReady",
			     w->ready ? "Cluster is Ready" : "Cluster Is Not Ready", now));
	if (w->pending_known) {
		_cleanup_free_ char *msg = rc_status_pending_message(w);
		op_jpush(arr, condition(old_pending, "PendingRestart", msg != NULL,
				     msg ? "ParametersNeedRestart" : "NoRestartNeeded",
				     msg ? msg : "no instance waits for a restart", now));
	}
	return arr;
}

int rc_status_patch(json_object *cur, const struct rc_status *w, const char *rv, int64_t now,
		    char **ret_patch, struct op_err *err)
{
	if (cur && !json_object_is_type(cur, json_type_object))
		cur = NULL;
	json_object *p = op_jobj();
	diff_set(p, cur, "phase", w->phase ? op_jstr(w->phase) : NULL);
	diff_set(p, cur, "phaseReason", w->phase_reason ? op_jstr(w->phase_reason) : NULL);
	diff_set(p, cur, "instances", op_jint(w->instances));
	diff_set(p, cur, "readyInstances", op_jint(w->ready_instances));
	diff_set(p, cur, "instanceNames", strv_json(w->instance_names, w->n_instance_names));
	if (w->current_primary) /* written by instances too: only set, never cleared */
		diff_set(p, cur, "currentPrimary", op_jstr(w->current_primary));
	if (w->target_primary)
		diff_set(p, cur, "targetPrimary", op_jstr(w->target_primary));
	if (w->target_since)
		diff_set(p, cur, "targetPrimaryTimestamp", op_jstr(w->target_since));
	diff_set(p, cur, "latestGeneratedNode", op_jint(w->latest_generated_node));
	if (w->timeline_id > 0)
		diff_set(p, cur, "timelineID", op_jint(w->timeline_id));
	/* both lists always, empty ones too: a merge patch without "failed"
	 * would keep the old list forever */
	json_object *is = op_jobj();
	op_jset(is, "healthy", strv_json(w->healthy, w->n_healthy));
	op_jset(is, "failed", strv_json(w->failed, w->n_failed));
	diff_set(p, cur, "instancesStatus", is);
	if (w->selector)
		diff_set(p, cur, "selector", op_jstr(w->selector));
	reported_state(p, cur, w);
	if (w->sync)
		diff_set(p, cur, "sync", op_jstr(w->sync));
	if (w->max_lag)
		diff_set(p, cur, "maxLag", *w->max_lag ? op_jstr(w->max_lag) : NULL);
	if (w->n_sync_standbys)
		diff_set(p, cur, "synchronousStandbys",
			 strv_json(w->sync_standbys, w->n_sync_standbys));
	if (w->last_successful_backup)
		diff_set(p, cur, "lastSuccessfulBackup", op_jstr(w->last_successful_backup));
	if (w->last_failed_backup)
		diff_set(p, cur, "lastFailedBackup", op_jstr(w->last_failed_backup));
	if (w->first_recoverability_point)
		diff_set(p, cur, "firstRecoverabilityPoint", op_jstr(w->first_recoverability_point));
	if (w->tablespaces_status) {
		json_object *ts = NULL;
		if (json_object_deep_copy(w->tablespaces_status, &ts, NULL) != 0)
			op_oom(0);
		diff_set(p, cur, "tablespacesStatus", ts);
	}
	diff_set(p, cur, "currentPrimaryFailingSinceTimestamp",
		 w->failing_since ? op_jstr(w->failing_since) : NULL);
	if (w->n_certs) {
		json_object *ex = op_jobj();
		for (size_t i = 0; i < w->n_certs; i++)
			op_jsets(ex, w->cert_names[i], w->cert_expirations[i]);
		json_object *certs = NULL;
		json_object *oldc = cur ? op_json_at(cur, "certificates") : NULL;
		if (!oldc || json_object_deep_copy(oldc, &certs, NULL) != 0 ||
		    !json_object_is_type(certs, json_type_object)) {
			if (certs)
				json_object_put(certs);
			certs = op_jobj();
		}
		op_jset(certs, "expirations", ex);
		diff_set(p, cur, "certificates", certs);
	}
	diff_set(p, cur, "conditions", conditions(cur, w, now));
	if (json_object_object_length(p) == 0) {
		json_object_put(p);
		return 0;
	}
	json_object *doc = op_jobj();
	if (rv)
		op_jsets(op_jchild(doc, "metadata"), "resourceVersion", rv);
	op_jset(doc, "status", p);
	const char *txt = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	if (!txt) {
		json_object_put(doc);
		return op_err_set(err, -ENOMEM, "serializing the status patch");
	}
	*ret_patch = op_strdup(txt);
	json_object_put(doc);
	return 1;
}

/* Waiting reasons that mean the image will not start by itself (kubelet's
 * images.Err* and the node agent's refusal of a major it does not have). */
static const char *const image_reasons[] = { "ErrImagePull", "ImagePullBackOff",
					     "ErrImageNeverPull", "InvalidImageName" };

char *rc_pod_image_problem(json_object *pod)
{
	static const char *const lists[] = { "status.initContainerStatuses",
					     "status.containerStatuses" };
	for (size_t l = 0; l < OP_ARRAY_SIZE(lists); l++) {
		json_object *arr = op_json_at(pod, lists[l]);
		if (!arr || !json_object_is_type(arr, json_type_array))
			continue;
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *w = op_json_at(json_object_array_get_idx(arr, i),
						    "state.waiting");
			const char *reason = w ? op_json_str_at(w, "reason") : NULL;
			if (!reason)
				continue;
			for (size_t k = 0; k < OP_ARRAY_SIZE(image_reasons); k++) {
				if (strcmp(reason, image_reasons[k]) != 0)
					continue;
				const char *msg = op_json_str_at(w, "message");
				const char *name = op_json_str_at(pod, "metadata.name");
				return op_asprintf("pod %s: %s: %.512s", name ? name : "?", reason,
						   msg && *msg ? msg : "(no message)");
			}
		}
	}
	return NULL;
}
