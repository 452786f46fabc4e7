/* Unit tests: reconciler/plan.c - counting instances against spec.instances
 * (a terminating Pod still counts: the extra replica <c>-4 after a primary pod
 * deletion) and the switchover request's validation. */
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

#include "reconciler/plan.h"
#include "support/alloc.h"

/* name, ready, status, primary, terminating, walReceiver */
#define I(nm, rdy, st, prim, term, wr)                                                             \
	{ .name = (char *)(nm), .pod_ready = (rdy), .has_status = (st), .is_primary = (prim),    \
	  .pod_terminating = (term), .wal_receiver_active = (wr) }

struct scale_row {
	const char *what;
	struct rc_instance v[4];
	size_t n;
	int64_t want;
	const char *primary;
	enum rc_scale_action action;
};

static void test_scale_table(void **state)
{
	(void)state;
	static const struct scale_row rows[] = {
		{ "as wanted",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  3, 3, "c-1", RC_SCALE_NONE },
		/* the bug: the old code counted 2 live of 3 and created c-4 */
		{ "primary pod terminating (still answering): it comes back, no new serial",
		  { I("c-1", 1, 1, 1, 1, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  3, 3, "c-1", RC_SCALE_NONE },
		{ "replica pod terminating: no new serial either",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 0, 0, 0, 1, 0), I("c-3", 1, 1, 0, 0, 1) },
		  3, 3, "c-1", RC_SCALE_NONE },
		{ "one missing, everyone ready: up",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1) }, 2, 3, "c-1", RC_SCALE_UP },
		{ "one missing while another terminates: wait",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 1, 1) }, 2, 3, "c-1", RC_SCALE_WAIT },
		{ "one missing, a replica not ready: wait",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 0, 1, 0, 0, 1) }, 2, 3, "c-1", RC_SCALE_WAIT },
		{ "one missing, primary not reporting primary: wait",
		  { I("c-1", 1, 1, 0, 0, 0), I("c-2", 1, 1, 0, 0, 1) }, 2, 3, "c-1", RC_SCALE_WAIT },
		{ "no instance at all: wait (bootstrap is elsewhere)", { { 0 } }, 0, 1, "c-1",
		  RC_SCALE_WAIT },
		{ "one too many: down",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  3, 2, "c-1", RC_SCALE_DOWN },
		{ "removal under way: not a second one",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 1, 1) },
		  3, 2, "c-1", RC_SCALE_NONE },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		const struct scale_row *r = &rows[i];
		enum rc_scale_action a = rc_scale_decide(r->v, r->n, r->want, r->primary);
		if (a != r->action)
			fail_msg("%s: got %s, want %s", r->what, rc_scale_action_str(a),
				 rc_scale_action_str(r->action));
	}
	assert_string_equal(rc_scale_action_str((enum rc_scale_action)42), "unknown");
}

struct sw_row {
	const char *what;
	struct rc_instance v[3];
	size_t n;
	const char *current, *target_primary, *target;
	int rc;
	const char *msg_has;
};

static void test_switchover_table(void **state)
{
	(void)state;
#define HEALTHY I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1)
	static const struct sw_row rows[] = {
		{ "streaming replica", { HEALTHY }, 3, "c-1", "c-1", "c-2", 0, NULL },
		{ "no target", { HEALTHY }, 3, "c-1", "c-1", "", -EINVAL, "no target" },
		{ "unknown instance", { HEALTHY }, 3, "c-1", "c-1", "c-9", -EINVAL,
		  "c-9 is not an instance" },
		{ "already primary", { HEALTHY }, 3, "c-1", "c-1", "c-1", -EINVAL, "already" },
		{ "switchover in progress", { HEALTHY }, 3, "c-1", "c-3", "c-2", -EBUSY,
		  "in progress" },
		{ "failover pending", { HEALTHY }, 3, "c-1", "pending", "c-2", -EBUSY, "pending" },
		{ "target not ready",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 0, 1, 0, 0, 1) }, 2, "c-1", "c-1", "c-2",
		  -EINVAL, "not Ready" },
		{ "target terminating",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 1, 1) }, 2, "c-1", "c-1", "c-2",
		  -EINVAL, "not Ready" },
		{ "target without status",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 0, 0, 0, 0) }, 2, "c-1", "c-1", "c-2",
		  -EINVAL, "/pg/status" },
		{ "target not streaming",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 0) }, 2, "c-1", "c-1", "c-2",
		  -EINVAL, "not streaming" },
		{ "primary not reporting",
		  { I("c-1", 1, 0, 0, 0, 0), I("c-2", 1, 1, 0, 0, 1) }, 2, "c-1", "c-1", "c-2",
		  -EBUSY, "failover" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		const struct sw_row *r = &rows[i];
		char *msg = (char *)"untouched";
		int rc = rc_switchover_check(r->v, r->n, r->current, r->target_primary, r->target,
					     &msg);
		if (rc != r->rc)
			fail_msg("%s: got %d, want %d (%s)", r->what, rc, r->rc, msg ? msg : "");
		if (r->msg_has) {
			assert_non_null(msg);
			if (!strstr(msg, r->msg_has))
				fail_msg("%s: message \"%s\" lacks \"%s\"", r->what, msg, r->msg_has);
		} else {
			assert_null(msg);
		}
		free(msg);
	}
}

static void test_switchover_pick(void **state)
{
	(void)state;
	/* sorted like rc_instances_sort: primary first, then most advanced */
	struct rc_instance a[] = { I("c-1", 1, 1, 1, 0, 0), I("c-3", 1, 1, 0, 0, 1),
				   I("c-2", 1, 1, 0, 0, 1) };
	assert_string_equal(rc_switchover_pick(a, 3, "c-1"), "c-3");
	struct rc_instance b[] = { I("c-1", 1, 1, 1, 0, 0), I("c-3", 0, 1, 0, 0, 1),
				   I("c-2", 1, 1, 0, 0, 1) };
	assert_string_equal(rc_switchover_pick(b, 3, "c-1"), "c-2"); /* c-3 not Ready */
	struct rc_instance c[] = { I("c-1", 1, 1, 1, 0, 0), I("c-3", 1, 1, 0, 1, 1),
				   I("c-2", 1, 1, 0, 0, 0) };
	assert_null(rc_switchover_pick(c, 3, "c-1")); /* terminating / not streaming */
	struct rc_instance d[] = { I("c-1", 1, 1, 1, 0, 0) };
	assert_null(rc_switchover_pick(d, 1, "c-1"));
}

static void test_instance_from_pod(void **state)
{
	(void)state;
	json_object *p = json_tokener_parse(
		"{\"metadata\":{\"name\":\"c-2\",\"labels\":{\"cnpg.io/podRole\":\"instance\"},"
		"\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},\"status\":{\"podIP\":\"10.0.0.2\","
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	struct rc_instance in = { 0 };
	assert_int_equal(rc_instance_from_pod("c", p, &in), 0);
	assert_string_equal(in.name, "c-2");
	assert_int_equal(in.serial, 2);
	assert_string_equal(in.ip, "10.0.0.2");
	assert_true(in.pod_ready);
	assert_true(in.pod_terminating);
	rc_instance_done(&in);
	assert_int_equal(rc_instance_from_pod("other", p, &in), -EINVAL); /* not its cluster */
	json_object_put(p);
	p = json_tokener_parse("{\"metadata\":{\"name\":\"c-1\",\"labels\":{\"cnpg.io/podRole\":"
			       "\"job\"}},\"status\":{}}");
	assert_int_equal(rc_instance_from_pod("c", p, &in), -EINVAL);
	assert_null(in.name);
	json_object_put(p);
	p = json_tokener_parse("{\"metadata\":{\"name\":\"c-1\",\"labels\":{\"cnpg.io/podRole\":"
			       "\"instance\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
			       "\"status\":\"False\"}]}}");
	assert_int_equal(rc_instance_from_pod("c", p, &in), 0);
	assert_false(in.pod_ready);
	assert_false(in.pod_terminating);
	assert_null(in.ip);
	rc_instance_done(&in);
	json_object_put(p);
}

/* Unreachable instances: 10 s, 20 s, 40 s, then 60 s for ever. */
static void test_status_error_delay(void **state)
{
	static const struct {
		unsigned streak;
		long ms;
	} rows[] = { { 0, 10000 }, { 1, 10000 }, { 2, 20000 }, { 3, 40000 },
		     { 4, 60000 }, { 5, 60000 }, { 1000, 60000 } };
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(rc_status_error_delay_ms(rows[i].streak), rows[i].ms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_table),
		cmocka_unit_test(test_status_error_delay),
		cmocka_unit_test(test_switchover_table),
		cmocka_unit_test(test_switchover_pick),
		cmocka_unit_test(test_instance_from_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
