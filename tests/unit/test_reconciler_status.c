/* Unit tests: reconciler/status.c - LSNs, /pg/status parsing, instance order,
 * the failover decision table, status change detection. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "api/fence.h"
#include "api/timestamp.h"
#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/lsn.h"
#include "test_json.h"


static void test_lsn(void **state)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t v;
	} rows[] = {
		{ "0/0", 0, 0 },
		{ "16/B374D848", 0, 0x16B374D848ull },
		{ "FFFFFFFF/FFFFFFFF", 0, UINT64_MAX },
		{ "0/604de38", 0, 0x604DE38 },
		{ "", -EINVAL, 0 },
		{ "1", -EINVAL, 0 },
		{ "1/", -EINVAL, 0 },
		{ "/1", -EINVAL, 0 },
		{ "1/2/3", -EINVAL, 0 },
		{ "100000000/0", -EINVAL, 0 },
		{ "0/x", -EINVAL, 0 },
		{ "0/1 ", -EINVAL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		uint64_t v = 42;
		int r = op_lsn_parse(rows[i].in, &v);
		assert_int_equal(r, rows[i].rc);
		if (r == 0)
			assert_true(v == rows[i].v);
		else
			assert_true(v == 42);
	}
	uint64_t v;
	assert_int_equal(op_lsn_parse(NULL, &v), -EINVAL);
}

static void test_parse_status(void **state)
{
	struct rc_instance in = { .name = op_strdup("c-1") };
	struct op_err err = OP_ERR_INIT;
	json_object *st = parse("{\"currentLsn\":\"0/5000060\",\"isPrimary\":true,"
				"\"timeLineID\":2,\"isWalReceiverActive\":false,"
				"\"replicationInfo\":[{\"state\":\"streaming\"},{\"state\":\"catchup\"},"
				"{\"state\":\"streaming\"}]}");
	assert_int_equal(rc_instance_parse_status(&in, st, &err), 0);
	assert_true(in.has_status);
	assert_true(in.is_primary);
	assert_true(in.current_lsn == 0x5000060);
	assert_int_equal(in.timeline_id, 2);
	assert_int_equal(in.streaming_replicas, 2);
	json_object_put(st);

	struct rc_instance bad = { .name = op_strdup("c-2") };
	st = parse("{\"receivedLsn\":\"zz\"}");
	err = OP_ERR_INIT;
	assert_int_equal(rc_instance_parse_status(&bad, st, &err), -EINVAL);
	assert_false(bad.has_status);
	assert_non_null(strstr(err.msg, "receivedLsn"));
	json_object_put(st);
	st = parse("{\"isPrimary\":\"yes\"}");
	err = OP_ERR_INIT;
	assert_int_equal(rc_instance_parse_status(&bad, st, &err), -EINVAL);
	json_object_put(st);
	st = parse("[1]");
	assert_int_equal(rc_instance_parse_status(&bad, st, &err), -EINVAL);
	json_object_put(st);
	/* pgop's own fields: the lease and a cut, in range */
	st = parse("{\"leaseMs\":2000,\"walReceiverCut\":{\"primary\":\"c-1\",\"holdMs\":4990}}");
	assert_int_equal(rc_instance_parse_status(&in, st, &err), 0);
	assert_int_equal(in.lease_ms, 2000);
	assert_int_equal(in.cut_hold_ms, 4990);
	json_object_put(st);
	static const char *const out_of_range[][2] = {
		{ "{\"leaseMs\":-1}", "leaseMs" },
		{ "{\"leaseMs\":9223372036854775807}", "leaseMs" },
		{ "{\"walReceiverCut\":{\"holdMs\":-5}}", "walReceiverCut.holdMs" },
		{ "{\"walReceiverCut\":{\"holdMs\":9223372036854775807}}", "walReceiverCut.holdMs" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(out_of_range); i++) {
		st = parse(out_of_range[i][0]);
		err = OP_ERR_INIT;
		assert_int_equal(rc_instance_parse_status(&bad, st, &err), -EINVAL);
		assert_non_null(strstr(err.msg, out_of_range[i][1]));
		json_object_put(st);
	}
	rc_instance_done(&in);
	rc_instance_done(&bad);
	rc_instance_done(NULL);
}

/* name, serial, has_status, primary, received, replay, walrcv, pod_ready */
#define INST(n, s, hs, p, rcv, rpl, wr, rdy)                                                       \
	{ .name = (char *)(n), .serial = (s), .has_status = (hs), .is_primary = (p),              \
	  .received_lsn = (rcv), .replay_lsn = (rpl), .wal_receiver_active = (wr),                \
	  .pod_ready = (rdy) }

/* a primary whose manager answers 503 "restarting" (Pod still Ready) */
#define INST_RESTARTING(n, s)                                                                      \
	{ .name = (char *)(n), .serial = (s), .restarting = true, .pod_ready = true }

/* An instance's /pg/status `recloned` (pg_rewind failed, data cloned again):
 * read for the Event; absent or malformed is no report. */
static void test_reclone_report(void **state)
{
	struct rc_reclone_report rep;
	json_object *st = parse("{\"sessionID\":\"s1\",\"recloned\":{\"pgRewindExitStatus\":1,"
				"\"source\":\"c-rw\",\"time\":\"2026-12-04T19:00:00Z\"}}");
	assert_int_equal(rc_reclone_report(st, &rep), 1);
	assert_string_equal(rep.session_id, "s1");
	assert_string_equal(rep.source, "c-rw");
	assert_string_equal(rep.time, "2026-12-04T19:00:00Z");
	assert_int_equal(rep.rewind_status, 1);
	json_object_put(st);
	static const char *const none[] = {
		"{\"isPrimary\":false}",                          /* no re-clone */
		"{\"recloned\":true}",                            /* not an object */
		"{\"recloned\":{\"pgRewindExitStatus\":1}}",       /* no time */
		"{\"recloned\":{\"time\":\"\"}}",                 /* empty time */
		"{\"recloned\":{\"time\":7}}",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		st = parse(none[i]);
		assert_int_equal(rc_reclone_report(st, &rep), 0);
		json_object_put(st);
	}
	assert_int_equal(rc_reclone_report(NULL, &rep), 0);
	/* without an exit status (or without a session): still a report */
	st = parse("{\"recloned\":{\"time\":\"t\"}}");
	assert_int_equal(rc_reclone_report(st, &rep), 1);
	assert_int_equal(rep.rewind_status, -1);
	assert_null(rep.session_id);
	json_object_put(st);
}

static void test_sort(void **state)
{
	struct rc_instance v[] = {
		INST("c-10", 10, true, false, 100, 90, true, true),
		INST("c-1", 1, false, false, 0, 0, false, false), /* no status: last */
		INST("c-3", 3, true, false, 200, 10, true, true),
		INST("c-2", 2, true, true, 0, 0, false, true),     /* primary: first */
		INST("c-4", 4, true, false, 200, 50, true, true),
		INST("c-9", 9, true, false, 100, 90, true, true),
	};
	rc_instances_sort(v, OP_ARRAY_SIZE(v));
	static const char *const want[] = { "c-2", "c-4", "c-3", "c-9", "c-10", "c-1" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(want); i++)
		assert_string_equal(v[i].name, want[i]);
}

struct fo_row {
	const char *what;
	const char *current, *target;
	struct rc_instance v[4];
	size_t n;
	int64_t delay, since, now;
	enum rc_failover_action want;
	const char *want_target;
	bool want_clock;
	int64_t pending_since; /* targetPrimaryTimestamp while "pending" (s) */
	int64_t quorum;
	char *const *sync_only; /* dataDurability required: the old primary's sync set */
	size_t n_sync;
};

static char *const sync_c2[] = { (char *)"c-2" };
static char *const sync_c9[] = { (char *)"c-9" };

static void test_failover_table(void **state)
{
	static const struct fo_row rows[] = {
		{ "healthy primary first", "c-1", "c-1",
		  { INST("c-1", 1, true, true, 0, 0, false, true),
		    INST("c-2", 2, true, false, 10, 10, true, true) },
		  2, 0, 0, 100, RC_FO_NONE, NULL, false, 0, 0, NULL, 0 },
		{ "two primaries", "c-1", "c-1",
		  { INST("c-1", 1, true, true, 0, 0, false, true),
		    INST("c-2", 2, true, true, 0, 0, false, true) },
		  2, 0, 0, 100, RC_FO_SPLIT_BRAIN, NULL, false, 0, 0, NULL, 0 },
		{ "primary not Ready past the container grace, no delay: mark pending", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 100 - RC_CONTAINER_GRACE_S, 100, RC_FO_MARK_PENDING, NULL, false, 0, 0, NULL, 0 },
		{ "primary not Ready, not terminating: its container restarts, start the clock",
		  "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_WAIT_RESTART, NULL, true, 0, 0, NULL, 0 },
		{ "primary not Ready within the container grace: wait", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 101 - RC_CONTAINER_GRACE_S, 100, RC_FO_WAIT_RESTART, NULL, false, 0, 0, NULL, 0 },
		{ "primary restarts postgres in place, replicas lost it: wait, start the clock",
		  "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-3", 3, true, false, 60, 60, false, true),
		    INST_RESTARTING("c-1", 1) },
		  3, 0, 0, 100, RC_FO_WAIT_RESTART, NULL, true, 0, 0, NULL, 0 },
		{ "primary restarting in place within its grace: wait", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST_RESTARTING("c-1", 1) },
		  2, 0, 101 - RC_RESTART_GRACE_S, 100, RC_FO_WAIT_RESTART, NULL, false, 0, 0, NULL, 0 },
		{ "primary restarting in place past its grace: mark pending", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST_RESTARTING("c-1", 1) },
		  2, 0, 100 - RC_RESTART_GRACE_S, 100, RC_FO_MARK_PENDING, NULL, false, 0, 0, NULL, 0 },
		{ "primary Pod terminating and not Ready: no restart grace", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    { .name = (char *)"c-1", .serial = 1, .pod_terminating = true } },
		  2, 0, 0, 100, RC_FO_MARK_PENDING, NULL, false, 0, 0, NULL, 0 },
		{ "pending: a restarting old primary does not stop the fence wait", "c-1", "pending",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST_RESTARTING("c-1", 1) },
		  2, 0, 0, 100, RC_FO_WAIT_FENCE, NULL, false, 99, 0, NULL, 0 },
		{ "pending, receivers down: most advanced wins", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_PROMOTE, "c-3", false, 95, 0, NULL, 0 },
		{ "pending, the old primary's lease has not expired", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_WAIT_FENCE, NULL, false, 96, 0, NULL, 0 },
		{ "pending, no timestamp: the fence clock has not started", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_WAIT_FENCE, NULL, false, 0, 0, NULL, 0 },
		{ "pending, the old primary answers as a replica: no fence wait", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-1", 1, true, false, 10, 10, false, true) },
		  2, 0, 0, 100, RC_FO_PROMOTE, "c-3", false, 99, 0, NULL, 0 },
		{ "pending, the old primary's Pod is gone: no fence wait", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true) },
		  2, 0, 0, 100, RC_FO_PROMOTE, "c-3", false, 99, 0, NULL, 0 },
		{ "pending, the old primary is back as primary: cancel", "c-1", "pending",
		  { INST("c-1", 1, true, true, 0, 0, false, true),
		    INST("c-3", 3, true, false, 60, 60, false, true) },
		  2, 0, 0, 100, RC_FO_CANCEL, NULL, false, 99, 0, NULL, 0 },
		{ "primary Ready, no status, both replicas lost it: partitioned", "c-1", "c-1",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  3, 0, 0, 100, RC_FO_MARK_PENDING, NULL, false, 0, 0, NULL, 0 },
		{ "primary Ready, no status, a cut whose hold could not be extended: not counted",
		  "c-1", "c-1",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    { .name = (char *)"c-2", .serial = 2, .has_status = true, .received_lsn = 50,
		      .replay_lsn = 50, .pod_ready = true, .cut_hold_ms = 3000, .cut_unheld = true },
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  3, 0, 0, 100, RC_FO_PRIMARY_CHECK, NULL, false, 0, 0, NULL, 0 },
		{ "primary Ready, no status, one replica lost it, one unreachable", "c-1", "c-1",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, false, false, 0, 0, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  3, 0, 0, 100, RC_FO_PRIMARY_CHECK, NULL, false, 0, 0, NULL, 0 },
		{ "failoverQuorum: one of two replicas answers", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, false, false, 0, 0, false, false),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_NO_QUORUM, NULL, false, 90, 2, NULL, 0 },
		{ "failoverQuorum: both replicas answer", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_PROMOTE, "c-3", false, 90, 2, NULL, 0 },
		{ "required: the more advanced replica was not synchronous", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_PROMOTE, "c-2", false, 90, 0, sync_c2, 1 },
		{ "required: no synchronous replica answers", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, false, false, 0, 0, false, false),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  3, 0, 0, 100, RC_FO_NO_SYNC, NULL, false, 90, 0, sync_c2, 1 },
		{ "required: the sync set names nobody here", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_NO_SYNC, NULL, false, 90, 0, sync_c9, 1 },
		{ "pending, a replica still streams", "c-1", "pending",
		  { INST("c-3", 3, true, false, 60, 60, false, true),
		    INST("c-2", 2, true, false, 50, 50, true, true) },
		  2, 0, 0, 100, RC_FO_WAIT_WAL_RECEIVERS, NULL, false, 0, 0, NULL, 0 },
		{ "primary pod Ready but status failing: no failover", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, true, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 0, 0, 100, RC_FO_PRIMARY_CHECK, NULL, false, 0, 0, NULL, 0 },
		{ "failoverDelay: a status port that fails starts the clock (the cut waits for it)",
		  "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, true, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 5, 0, 100, RC_FO_PRIMARY_CHECK, NULL, true, 0, 0, NULL, 0 },
		{ "failoverDelay: the clock already runs", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, true, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 5, 98, 100, RC_FO_PRIMARY_CHECK, NULL, false, 0, 0, NULL, 0 },
		{ "failoverDelay starts the clock (partitioned primary)", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 30, 0, 100, RC_FO_WAIT_DELAY, NULL, true, 0, 0, NULL, 0 },
		{ "failoverDelay not over (partitioned primary)", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 30, 90, 100, RC_FO_WAIT_DELAY, NULL, false, 0, 0, NULL, 0 },
		{ "failoverDelay over (partitioned primary)", "c-1", "c-1",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, true) },
		  2, 30, 60, 100, RC_FO_MARK_PENDING, NULL, false, 0, 0, NULL, 0 },
		{ "switchover in progress: wait", "c-1", "c-2",
		  { INST("c-2", 2, true, false, 50, 50, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_NONE, NULL, false, 0, 0, NULL, 0 },
		{ "nobody reports", "c-1", "c-1",
		  { INST("c-1", 1, false, false, 0, 0, false, false),
		    INST("c-2", 2, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_NONE, NULL, false, 0, 0, NULL, 0 },
		{ "bootstrap: no target yet", NULL, NULL,
		  { INST("c-1", 1, true, true, 0, 0, false, true) }, 1, 0, 0, 100, RC_FO_NONE, NULL,
		  false, 0, 0, NULL, 0 },
		{ "no instances", "c-1", "c-1", { { 0 } }, 0, 0, 0, 100, RC_FO_NONE, NULL, false, 0, 0, NULL, 0 },
		{ "primary not the target: let it demote", "c-1", "c-1",
		  { INST("c-2", 2, true, true, 0, 0, false, true),
		    INST("c-1", 1, false, false, 0, 0, false, false) },
		  2, 0, 0, 100, RC_FO_NONE, NULL, false, 0, 0, NULL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		const struct fo_row *r = &rows[i];
		struct rc_failover_input in = {
			.current_primary = r->current, .target_primary = r->target, .v = r->v,
			.n = r->n, .failover_delay_s = r->delay, .failing_since = r->since,
			.pending_since_ms = r->pending_since * 1000, .fence_wait_ms = 5000,
			.quorum = r->quorum, .sync_only = r->sync_only, .n_sync_only = r->n_sync,
			.now = r->now, .now_ms = r->now * 1000,
		};
		struct rc_failover_decision d;
		rc_failover_decide(&in, &d);
		if (d.action != r->want)
			fail_msg("%s: got %s, want %s", r->what, rc_failover_action_str(d.action),
				 rc_failover_action_str(r->want));
		if (r->want_target)
			assert_string_equal(d.target, r->want_target);
		else
			assert_null(d.target);
		assert_int_equal(d.start_failing_clock, r->want_clock);
	}
	assert_string_equal(rc_failover_action_str((enum rc_failover_action)99), "unknown");
}

/* The fence wait in milliseconds, from targetPrimaryTimestamp as written
 * (microseconds, or whole seconds from an older pgop) to the reconciler's
 * millisecond clock: a "pending" stamped at .900 s has not waited a whole
 * second at the next second (whole seconds promoted 900 ms early). */
static void test_failover_fence_wait_ms(void **state)
{
	const struct rc_instance v[] = {
		INST("c-3", 3, true, false, 60, 60, false, true),
		INST("c-2", 2, true, false, 50, 50, false, true),
		INST("c-1", 1, false, false, 0, 0, false, true),
	};
	const int64_t wait = API_FENCE_MS + API_FENCE_MARGIN_MS;
	const int64_t t0 = 1796212800000; /* 2026-12-02T12:00:00Z in ms */
	static const struct {
		const char *stamp;
		int64_t now_ms; /* past t0 + wait */
		enum rc_failover_action want;
	} rows[] = {
		{ "2026-12-02T12:00:00.900000Z", 0, RC_FO_WAIT_FENCE },
		{ "2026-12-02T12:00:00.900000Z", 899, RC_FO_WAIT_FENCE },
		{ "2026-12-02T12:00:00.900000Z", 900, RC_FO_PROMOTE },
		{ "2026-12-02T12:00:00.000001Z", 0, RC_FO_WAIT_FENCE }, /* rounded up to .001 */
		{ "2026-12-02T12:00:00.000001Z", 1, RC_FO_PROMOTE },
		{ "2026-12-02T12:00:00Z", -1, RC_FO_WAIT_FENCE }, /* an older pgop's stamp */
		{ "2026-12-02T12:00:00Z", 0, RC_FO_PROMOTE },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		int64_t since = 0;
		assert_int_equal(api_time_parse_ms(rows[i].stamp, &since), 0);
		const int64_t now_ms = t0 + wait + rows[i].now_ms;
		struct rc_failover_input in = {
			.current_primary = "c-1", .target_primary = RC_PENDING_FAILOVER, .v = v,
			.n = OP_ARRAY_SIZE(v), .pending_since_ms = since, .fence_wait_ms = wait,
			.now = now_ms / 1000, .now_ms = now_ms,
		};
		struct rc_failover_decision d;
		rc_failover_decide(&in, &d);
		if (d.action != rows[i].want)
			fail_msg("%s at +%lld ms: got %s, want %s", rows[i].stamp,
				 (long long)rows[i].now_ms, rc_failover_action_str(d.action),
				 rc_failover_action_str(rows[i].want));
	}
	/* while waiting, the next look is RC_FENCE_EARLY_MS before the wait ends (its
	 * fetch of the instances takes about that long; it sleeps the rest), not a
	 * whole second later */
	const long E = RC_FENCE_EARLY_MS;
	static const struct {
		int64_t now_ms; /* past t0 */
		long want;
	} rq[] = {
		{ 0, 1000 }, { wait - 1000 - E, 1000 }, { wait - 999 - E, 999 }, { wait - 250, 250 - E },
		{ wait - E, 1 }, { wait - 1, 1 }, { wait, 1 }, { wait + 5000, 1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rq); i++) {
		struct rc_failover_input in = { .pending_since_ms = t0, .fence_wait_ms = wait,
						.now_ms = t0 + rq[i].now_ms };
		assert_int_equal(rc_failover_fence_requeue_ms(&in), rq[i].want);
	}
	struct rc_failover_input unknown = { .fence_wait_ms = wait, .now_ms = t0 };
	assert_int_equal(rc_failover_fence_requeue_ms(&unknown), 1000); /* no stamp yet */
	/* the patch that wrote "pending" returned late: stamped again */
	const char *st = "2026-12-02T12:00:00.000000Z";
	assert_false(rc_fence_stamp_late(st, t0 + API_FENCE_STAMP_MS));
	assert_true(rc_fence_stamp_late(st, t0 + API_FENCE_STAMP_MS + 1));
	assert_true(rc_fence_stamp_late("garbage", t0));
	/* in this process the clock follows when the patch returned, re-stamped
	 * or not: never earlier than the stamp */
	assert_int_equal(rc_fence_clock_ms(t0, 0), t0);
	assert_int_equal(rc_fence_clock_ms(t0, t0 + 10), t0);
	assert_int_equal(rc_fence_clock_ms(t0, t0 + API_FENCE_STAMP_MS), t0);
	assert_int_equal(rc_fence_clock_ms(t0, t0 + API_FENCE_STAMP_MS + 700), t0 + 700);
}

static void fill(struct rc_status *s)
{
	s->phase = op_strdup("Cluster in healthy state");
	s->instances = 2;
	s->ready_instances = 2;
	rc_strv_push(&s->instance_names, &s->n_instance_names, "c-1");
	rc_strv_push(&s->instance_names, &s->n_instance_names, "c-2");
	rc_strv_push(&s->healthy, &s->n_healthy, "c-1");
	rc_strv_push(&s->healthy, &s->n_healthy, "c-2");
	s->current_primary = op_strdup("c-1");
	s->target_primary = op_strdup("c-1");
	s->latest_generated_node = 2;
	s->timeline_id = 1;
	s->ready = true;
	size_t n = 0;
	rc_strv_push(&s->cert_names, &n, "c-server");
	rc_strv_push(&s->cert_expirations, &s->n_certs, "2027-03-01T00:00:00Z");
	s->selector = op_strdup("cnpg.io/cluster=c,cnpg.io/podRole=instance");
	rc_status_add_reported(s, "c-1", true, 1, "10.0.0.1");
	rc_status_add_reported(s, "c-2", false, 1, NULL);
}

static json_object *patch_status(const char *patch)
{
	json_object *p = parse(patch);
	json_object *st = NULL;
	assert_true(json_object_object_get_ex(p, "status", &st));
	json_object_get(st);
	json_object_put(p);
	return st;
}

/* ContinuousArchiving from the primary's archiver report */
static void test_archiving_condition(void **state)
{
	(void)state;
	static const struct {
		const char *doc;
		bool configured;
		enum rc_archiving want;
		const char *msg; /* a part of the message */
	} rows[] = {
		{ "{\"lastArchivedWAL\":\"000000010000000000000003\"}", false, RC_ARCH_NONE, NULL },
		{ NULL, true, RC_ARCH_KEEP, NULL }, /* the primary did not answer */
		{ "{\"isArchivingWAL\":true}", true, RC_ARCH_KEEP, NULL }, /* nothing yet */
		{ "{\"lastArchivedWAL\":\"000000010000000000000003\","
		  "\"lastArchivedWALTime\":\"2026-12-07T02:00:05Z\"}",
		  true, RC_ARCH_OK, "working" },
		{ "{\"lastArchivedWAL\":\"000000010000000000000003\","
		  "\"lastArchivedWALTime\":\"2026-12-07T02:00:05Z\","
		  "\"lastFailedWAL\":\"000000010000000000000002\","
		  "\"lastFailedWALTime\":\"2026-12-07T02:00:01Z\"}",
		  true, RC_ARCH_OK, "working" }, /* failed, then archived: working again */
		{ "{\"lastArchivedWAL\":\"000000010000000000000003\","
		  "\"lastArchivedWALTime\":\"2026-12-07T02:00:05Z\","
		  "\"lastFailedWAL\":\"000000010000000000000004\","
		  "\"lastFailedWALTime\":\"2026-12-07T02:00:09Z\"}",
		  true, RC_ARCH_FAILING, "failing at 000000010000000000000004" },
		{ "{\"lastFailedWAL\":\"000000010000000000000001\","
		  "\"lastFailedWALTime\":\"2026-12-07T02:00:09Z\","
		  "\"archiveError\":\"PUT s3://b/k: 403 SignatureDoesNotMatch: no\"}",
		  true, RC_ARCH_FAILING, "403 SignatureDoesNotMatch" }, /* the store's own words */
		{ "{\"archiveError\":\"spec.backup.barmanObjectStore.wal.compression: snappy is "
		  "not supported\"}",
		  true, RC_ARCH_FAILING, "snappy" }, /* not configured: failing from the start */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_object *doc = rows[i].doc ? json_tokener_parse(rows[i].doc) : NULL;
		char *msg = NULL;
		assert_int_equal(rc_archiving_decide(doc, rows[i].configured, &msg), rows[i].want);
		if (rows[i].msg)
			assert_non_null(strstr(msg, rows[i].msg));
		else
			assert_null(msg);
		free(msg);
		json_object_put(doc);
	}
	/* the condition as CloudNativePG writes it; removed when archiving stops */
	struct rc_status w = { .phase = "x", .archiving = RC_ARCH_FAILING,
			       .archiving_msg = "WAL archiving is failing: 403" };
	char *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_status_patch(NULL, &w, NULL, 1000, &patch, &err), 1);
	json_object *p = json_tokener_parse(patch);
	json_object *conds = op_json_at(p, "status.conditions");
	json_object *c = json_object_array_get_idx(conds, 0); /* before Ready */
	assert_string_equal(op_json_str_at(c, "type"), "ContinuousArchiving");
	assert_string_equal(op_json_str_at(c, "status"), "False");
	assert_string_equal(op_json_str_at(c, "reason"), "ContinuousArchivingFailing");
	assert_string_equal(op_json_str_at(c, "message"), "WAL archiving is failing: 403");
	json_object *st = json_object_get(op_json_at(p, "status"));
	free(patch);
	json_object_put(p);
	w.archiving = RC_ARCH_KEEP; /* kept as read */
	patch = NULL;
	assert_int_equal(rc_status_patch(st, &w, NULL, 2000, &patch, &err), 0);
	free(patch);
	w.archiving = RC_ARCH_NONE; /* removed */
	patch = NULL;
	assert_int_equal(rc_status_patch(st, &w, NULL, 3000, &patch, &err), 1);
	assert_null(strstr(patch, "ContinuousArchiving"));
	free(patch);
	json_object_put(st);
}

static void test_status_patch(void **state)
{
	struct rc_status w = { 0 };
	fill(&w);
	struct op_err err = OP_ERR_INIT;
	char *patch = NULL;
	/* from nothing: everything is written, with the rv precondition */
	assert_int_equal(rc_status_patch(NULL, &w, "77", 1000, &patch, &err), 1);
	json_object *doc = parse(patch);
	assert_string_equal(op_json_str_at(doc, "metadata.resourceVersion"), "77");
	json_object_put(doc);
	json_object *st = patch_status(patch);
	free(patch);
	assert_string_equal(op_json_str_at(st, "phase"), "Cluster in healthy state");
	assert_int_equal(json_object_get_int(op_json_at(st, "readyInstances")), 2);
	assert_string_equal(op_json_str_at(st, "currentPrimary"), "c-1");
	assert_int_equal(json_object_array_length(op_json_at(st, "instancesStatus.healthy")), 2);
	json_object *ex = op_json_at(st, "certificates.expirations");
	json_object *v = NULL;
	assert_true(json_object_object_get_ex(ex, "c-server", &v));
	assert_string_equal(op_json_str_at(st, "selector"),
			    "cnpg.io/cluster=c,cnpg.io/podRole=instance");
	json_object *rs = op_json_at(st, "instancesReportedState");
	assert_int_equal(json_object_object_length(rs), 2);
	json_object *r1 = json_object_object_get(rs, "c-1");
	assert_true(json_object_get_boolean(json_object_object_get(r1, "isPrimary")));
	assert_string_equal(op_json_str_at(r1, "ip"), "10.0.0.1");
	json_object *r2 = json_object_object_get(rs, "c-2");
	assert_false(json_object_get_boolean(json_object_object_get(r2, "isPrimary")));
	assert_null(json_object_object_get(r2, "ip"));
	json_object *cond = json_object_array_get_idx(op_json_at(st, "conditions"), 0);
	assert_string_equal(op_json_str_at(cond, "type"), "Ready");
	assert_string_equal(op_json_str_at(cond, "status"), "True");
	assert_string_equal(op_json_str_at(cond, "lastTransitionTime"), "1970-01-01T00:16:40Z");

	/* same wanted status later: no change, no patch (lastTransitionTime kept) */
	patch = NULL;
	assert_int_equal(rc_status_patch(st, &w, "78", 5000, &patch, &err), 0);
	assert_null(patch);

	/* round trip through rc_status_from_json gives the same wanted status */
	struct rc_status back;
	rc_status_from_json(st, &back);
	assert_string_equal(back.phase, w.phase);
	assert_int_equal(back.n_instance_names, 2);
	assert_int_equal(back.n_certs, 1);
	assert_int_equal(rc_status_patch(st, &back, NULL, 9000, &patch, &err), 0);
	rc_status_done(&back);

	/* one field changes: only it (and the rv) in the patch */
	w.ready_instances = 1;
	assert_int_equal(rc_status_patch(st, &w, "79", 6000, &patch, &err), 1);
	json_object *p2 = patch_status(patch);
	free(patch);
	assert_int_equal(json_object_object_length(p2), 1);
	assert_int_equal(json_object_get_int(op_json_at(p2, "readyInstances")), 1);
	json_object_put(p2);

	/* Ready flips: new transition time; a phaseReason that goes away is nulled */
	json_object_object_add(st, "phaseReason", json_object_new_string("old reason"));
	w.ready = false;
	assert_int_equal(rc_status_patch(st, &w, NULL, 6000, &patch, &err), 1);
	p2 = patch_status(patch);
	free(patch);
	assert_true(json_object_object_get_ex(p2, "phaseReason", &v));
	assert_null(v);
	cond = json_object_array_get_idx(op_json_at(p2, "conditions"), 0);
	assert_string_equal(op_json_str_at(cond, "status"), "False");
	assert_string_equal(op_json_str_at(cond, "lastTransitionTime"), "1970-01-01T01:40:00Z");
	json_object_put(p2);

	/* currentPrimary unknown to the reconciler is left alone */
	free(w.current_primary);
	w.current_primary = NULL;
	assert_int_equal(rc_status_patch(st, &w, NULL, 6000, &patch, &err), 1);
	p2 = patch_status(patch);
	free(patch);
	assert_false(json_object_object_get_ex(p2, "currentPrimary", &v));
	json_object_put(p2);

	json_object_put(st);
	rc_status_done(&w);
	rc_status_done(NULL);
}

/* Lists that empty are written as empty (a merge patch leaves absent keys
 * alone: instancesStatus.failed stayed forever); instancesReportedState is
 * rewritten each reconcile, an instance that stopped reporting removed. */
static void test_status_no_stale_lists(void **state)
{
	json_object *st = parse("{\"instancesStatus\":{\"healthy\":[\"c-2\"],\"failed\":"
				"[\"c-1\"]},\"instancesReportedState\":{\"c-1\":{\"isPrimary\":"
				"true,\"timeLineID\":1},\"c-2\":{\"isPrimary\":false,"
				"\"timeLineID\":1}}}");
	struct rc_status w = { 0 };
	rc_strv_push(&w.healthy, &w.n_healthy, "c-1");
	rc_strv_push(&w.healthy, &w.n_healthy, "c-2");
	rc_status_add_reported(&w, "c-2", true, 2, NULL);
	char *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_status_patch(st, &w, NULL, 0, &patch, &err), 1);
	json_object *p = patch_status(patch);
	free(patch);
	json_object *failed = op_json_at(p, "instancesStatus.failed");
	assert_true(json_object_is_type(failed, json_type_array));
	assert_int_equal(json_object_array_length(failed), 0);
	assert_int_equal(json_object_array_length(op_json_at(p, "instancesStatus.healthy")), 2);
	json_object *rs = op_json_at(p, "instancesReportedState"), *v = (json_object *)1;
	assert_true(json_object_object_get_ex(rs, "c-1", &v));
	assert_null(v); /* c-1 no longer reports: removed */
	json_object *c2 = json_object_object_get(rs, "c-2");
	assert_true(json_object_get_boolean(json_object_object_get(c2, "isPrimary")));
	assert_int_equal(json_object_get_int(json_object_object_get(c2, "timeLineID")), 2);
	json_object_put(p);

	/* nobody reports now: the whole map goes */
	rc_status_clear_reported(&w);
	w.reported_known = true;
	assert_int_equal(rc_status_patch(st, &w, NULL, 0, &patch, &err), 1);
	p = patch_status(patch);
	free(patch);
	v = (json_object *)1;
	assert_true(json_object_object_get_ex(p, "instancesReportedState", &v));
	assert_null(v);
	json_object_put(p);

	/* a reconcile that did not ask the instances leaves the map alone */
	w.reported_known = false;
	assert_int_equal(rc_status_patch(st, &w, NULL, 0, &patch, &err), 1);
	p = patch_status(patch);
	free(patch);
	assert_false(json_object_object_get_ex(p, "instancesReportedState", NULL));
	json_object_put(p);
	json_object_put(st);
	rc_status_done(&w);
}

static void test_other_conditions_kept(void **state)
{
	json_object *st = parse("{\"conditions\":[{\"type\":\"ContinuousArchiving\","
				"\"status\":\"True\"}]}");
	struct rc_status w = { 0 };
	w.phase = op_strdup("Setting up primary");
	char *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_status_patch(st, &w, NULL, 0, &patch, &err), 1);
	json_object *p = patch_status(patch);
	free(patch);
	json_object *conds = op_json_at(p, "conditions");
	assert_int_equal(json_object_array_length(conds), 2);
	assert_string_equal(op_json_str_at(json_object_array_get_idx(conds, 0), "type"),
			    "ContinuousArchiving");
	json_object_put(p);
	json_object_put(st);
	rc_status_done(&w);
}

static void test_pod_image_problem(void **state)
{
	static const struct {
		const char *pod;
		const char *want; /* NULL = none */
	} t[] = {
		{ "{\"metadata\":{\"name\":\"c-1\"},\"status\":{\"containerStatuses\":[{\"state\":"
		  "{\"waiting\":{\"reason\":\"ErrImagePull\",\"message\":\"PostgreSQL 16 is not "
		  "installed on this node (image x:16)\"}}}]}}",
		  "pod c-1: ErrImagePull: PostgreSQL 16 is not installed on this node (image x:16)" },
		{ "{\"metadata\":{\"name\":\"c-2\"},\"status\":{\"initContainerStatuses\":[{\"state\":"
		  "{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}}]}}",
		  "pod c-2: ImagePullBackOff: (no message)" },
		{ "{\"metadata\":{\"name\":\"c-3\"},\"status\":{\"containerStatuses\":[{\"state\":"
		  "{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}",
		  NULL },
		{ "{\"metadata\":{\"name\":\"c-4\"},\"status\":{\"containerStatuses\":[{\"state\":"
		  "{\"running\":{}}}]}}",
		  NULL },
		{ "{\"metadata\":{\"name\":\"c-5\"},\"status\":{\"containerStatuses\":7}}", NULL },
		{ "{\"metadata\":{\"name\":\"c-6\"}}", NULL },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++) {
		json_object *o = json_tokener_parse(t[i].pod);
		assert_non_null(o);
		char *got = rc_pod_image_problem(o);
		if (t[i].want) {
			if (!got)
				fail_msg("case %zu: none", i);
			assert_string_equal(got, t[i].want);
		} else if (got) {
			fail_msg("case %zu: unexpected %s", i, got);
		}
		free(got);
		json_object_put(o);
	}
}

static void test_time(void **state)
{
	char *s = api_time_rfc3339(1796212800);
	assert_string_equal(s, "2026-12-02T12:00:00Z");
	int64_t t = 0;
	assert_int_equal(api_time_parse(s, &t), 0);
	assert_int_equal(t, 1796212800);
	free(s);
	assert_int_equal(api_time_parse("2026-12-02T12:00:00.123456Z", &t), 0);
	assert_int_equal(t, 1796212800);
	assert_int_equal(api_time_parse("2026-12-02 12:00:00", &t), -EINVAL);
	assert_int_equal(api_time_parse("2026-12-02T12:00:00+01:00", &t), -EINVAL);
	assert_int_equal(api_time_parse(NULL, &t), -EINVAL);
	/* microseconds, as CloudNativePG writes them (metav1.RFC3339Micro) */
	s = api_time_rfc3339_us(1796212800123456);
	assert_string_equal(s, "2026-12-02T12:00:00.123456Z");
	assert_int_equal(api_time_parse_ms(s, &t), 0);
	assert_int_equal(t, 1796212800124); /* below a millisecond: rounded up */
	free(s);
	s = api_time_rfc3339_us(1796212800000007);
	assert_string_equal(s, "2026-12-02T12:00:00.000007Z");
	free(s);
	s = api_time_rfc3339_us(1796212800999000);
	assert_int_equal(api_time_parse_ms(s, &t), 0);
	assert_int_equal(t, 1796212800999); /* whole milliseconds round-trip */
	free(s);
	static const struct {
		const char *in;
		int r;
		int64_t ms;
	} p[] = {
		{ "2026-12-02T12:00:00Z", 0, 1796212800000 },      /* whole seconds (older objects) */
		{ "2026-12-02T12:00:00.5Z", 0, 1796212800500 },
		{ "2026-12-02T12:00:00.123Z", 0, 1796212800123 },
		{ "2026-12-02T12:00:00.999999Z", 0, 1796212801000 }, /* up, into the next second */
		{ "2026-12-02T12:00:00.0000000001Z", 0, 1796212800001 }, /* past nanoseconds: up */
		{ "2026-12-02T12:00:00.000000000Z", 0, 1796212800000 },
		{ "2026-12-02T12:00:00.Z", -EINVAL, 0 },
		{ "2026-12-02T12:00:00.12", -EINVAL, 0 },
		{ "2026-12-02T12:00:00.12+01:00", -EINVAL, 0 },
		{ NULL, -EINVAL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(p); i++) {
		t = -1;
		int r = api_time_parse_ms(p[i].in, &t);
		if (r != p[i].r || (r == 0 && t != p[i].ms))
			fail_msg("%s: got %d %lld, want %d %lld", p[i].in ? p[i].in : "NULL", r,
				 (long long)t, p[i].r, (long long)p[i].ms);
	}
	assert_int_equal(api_time_parse("2026-12-02T12:00:00.999999Z", &t), 0);
	assert_int_equal(t, 1796212800); /* seconds: the fraction dropped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lsn),
		cmocka_unit_test(test_archiving_condition),
		cmocka_unit_test(test_parse_status),
		cmocka_unit_test(test_reclone_report),
		cmocka_unit_test(test_sort),
		cmocka_unit_test(test_failover_table),
		cmocka_unit_test(test_failover_fence_wait_ms),
		cmocka_unit_test(test_status_patch),
		cmocka_unit_test(test_status_no_stale_lists),
		cmocka_unit_test(test_other_conditions_kept),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_pod_image_problem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
