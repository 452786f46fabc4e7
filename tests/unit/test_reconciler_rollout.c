/* Unit tests: reconciler/rollout.c - the rolling restart's decision table
 * (replicas highest serial first, only when healthy, then the primary by
 * primaryUpdateStrategy/Method, the in-place restart's steps), the failover
 * hold while the primary restarts in place, and what makes a Pod outdated,
 * a placement change rolled end to end on Pods rc_build_pod made. */
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

#include "api/cluster.h"
#include "reconciler/annotations.h"
#include "reconciler/objects.h"
#include "reconciler/rollout.h"
#include "support/alloc.h"
#include "test_json.h"

/* name, serial, ready, status, primary, terminating, walReceiver */
#define I(nm, ser, rdy, st, prim, term, wr)                                                        \
	{ .name = (char *)(nm), .serial = (ser), .pod_ready = (rdy), .has_status = (st),         \
	  .is_primary = (prim), .pod_terminating = (term), .wal_receiver_active = (wr) }

/* three healthy instances, primary c-1, in failover order (c-3 most advanced) */
#define P1 I("c-1", 1, 1, 1, 1, 0, 0)
#define R3 I("c-3", 3, 1, 1, 0, 0, 1)
#define R2 I("c-2", 2, 1, 1, 0, 0, 1)

struct row {
	const char *what;
	struct rc_instance v[3];
	const char *uid[3];
	bool outdated[3];
	int64_t created[3], deleting[3];
	const char *current, *target_primary;
	bool supervised, switchover;
	const char *inplace_pod, *inplace_uid;
	enum rc_rollout_action action;
	const char *target;
	bool hold;
};

#define NOW 100000

static const struct row rows[] = {
	{ "nothing outdated", { P1, R3, R2 }, { 0 }, { 0, 0, 0 }, { 0 }, { 0 }, "c-1", "c-1",
	  false, false, NULL, NULL, RC_ROLL_NONE, NULL, false },
	{ "replicas first, highest serial first", { P1, R3, R2 }, { 0 }, { 1, 1, 1 }, { 0 },
	  { 0 }, "c-1", "c-1", false, false, NULL, NULL, RC_ROLL_RESTART_REPLICA, "c-3", false },
	{ "then the lower serial", { P1, R3, R2 }, { 0 }, { 1, 0, 1 }, { 0 }, { 0 }, "c-1", "c-1",
	  false, false, NULL, NULL, RC_ROLL_RESTART_REPLICA, "c-2", false },
	{ "a replica not streaming yet: wait",
	  { P1, I("c-3", 3, 1, 1, 0, 0, 0), R2 }, { 0 }, { 1, 0, 1 }, { 0 }, { 0 }, "c-1", "c-1",
	  false, false, NULL, NULL, RC_ROLL_WAIT, NULL, false },
	{ "a replica not Ready: wait", { P1, I("c-3", 3, 0, 0, 0, 0, 0), R2 }, { 0 }, { 1, 0, 1 },
	  { 0 }, { 0 }, "c-1", "c-1", false, false, NULL, NULL, RC_ROLL_WAIT, NULL, false },
	{ "a Pod terminating: wait", { P1, I("c-3", 3, 1, 1, 0, 1, 1), R2 }, { 0 }, { 0, 0, 1 },
	  { 0 }, { 0 }, "c-1", "c-1", false, false, NULL, NULL, RC_ROLL_WAIT, NULL, false },
	{ "switchover in progress: not ours", { P1, R3, R2 }, { 0 }, { 1, 1, 1 }, { 0 }, { 0 },
	  "c-1", "c-2", false, false, NULL, NULL, RC_ROLL_NONE, NULL, false },
	{ "failover pending: not ours", { P1, R3, R2 }, { 0 }, { 1, 1, 1 }, { 0 }, { 0 }, "c-1",
	  "pending", false, false, NULL, NULL, RC_ROLL_NONE, NULL, false },
	{ "primary last, supervised: wait for the user", { P1, R3, R2 }, { 0 }, { 1, 0, 0 },
	  { 0 }, { 0 }, "c-1", "c-1", true, false, NULL, NULL, RC_ROLL_WAIT_USER, "c-1", false },
	{ "primary last, switchover: the most advanced replica", { P1, R3, R2 }, { 0 },
	  { 1, 0, 0 }, { 0 }, { 0 }, "c-1", "c-1", false, true, NULL, NULL, RC_ROLL_SWITCHOVER,
	  "c-3", false },
	{ "primary last, restart (default): in place", { P1, R3, R2 }, { "u1" }, { 1, 0, 0 },
	  { 0 }, { 0 }, "c-1", "c-1", false, false, NULL, NULL, RC_ROLL_INPLACE_MARK, "c-1",
	  false },
	{ "single instance, switchover method: in place",
	  { P1 }, { "u1" }, { 1 }, { 0 }, { 0 }, "c-1", "c-1", false, true, NULL, NULL,
	  RC_ROLL_INPLACE_MARK, "c-1", false },
	{ "in place, annotation cached: delete the Pod", { P1, R3, R2 }, { "u1" }, { 1, 0, 0 },
	  { 0 }, { 0 }, "c-1", "c-1", false, false, "c-1", "u1", RC_ROLL_INPLACE_DELETE, "c-1",
	  true },
	{ "in place, old Pod terminating: wait, failover held",
	  { I("c-1", 1, 1, 0, 0, 1, 0), R3, R2 }, { "u1" }, { 1, 0, 0 }, { 0 }, { NOW - 10 },
	  "c-1", "c-1", false, false, "c-1", "u1", RC_ROLL_INPLACE_WAIT, "c-1", true },
	{ "in place, old Pod terminating too long: failover may act",
	  { I("c-1", 1, 1, 0, 0, 1, 0), R3, R2 }, { "u1" }, { 1, 0, 0 }, { 0 },
	  { NOW - RC_INPLACE_HOLD_S }, "c-1", "c-1", false, false, "c-1", "u1",
	  RC_ROLL_INPLACE_WAIT, "c-1", false },
	{ "in place, no Pod: wait, held", { R3, R2 }, { 0 }, { 0, 0 }, { 0 }, { 0 }, "c-1", "c-1",
	  false, false, "c-1", "u1", RC_ROLL_INPLACE_WAIT, "c-1", true },
	{ "in place, new Pod starting: wait, held", { I("c-1", 1, 0, 0, 0, 0, 0), R3, R2 },
	  { "u2" }, { 0 }, { NOW - 5 }, { 0 }, "c-1", "c-1", false, false, "c-1", "u1",
	  RC_ROLL_INPLACE_WAIT, "c-1", true },
	{ "in place, new Pod stuck: wait, not held", { I("c-1", 1, 0, 0, 0, 0, 0), R3, R2 },
	  { "u2" }, { 0 }, { NOW - 600 }, { 0 }, "c-1", "c-1", false, false, "c-1", "u1",
	  RC_ROLL_INPLACE_WAIT, "c-1", false },
	{ "in place, primary back: done", { P1, R3, R2 }, { "u2" }, { 0 }, { NOW - 5 }, { 0 },
	  "c-1", "c-1", false, false, "c-1", "u1", RC_ROLL_INPLACE_DONE, "c-1", true },
	{ "in place, the primary moved (failover): done, no hold", { P1, R3, R2 }, { 0 }, { 0 },
	  { 0 }, { 0 }, "c-3", "c-3", false, false, "c-1", "u1", RC_ROLL_INPLACE_DONE, NULL,
	  false },
};

static void test_rollout_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		size_t n = 0;
		while (n < 3 && r->v[n].name)
			n++;
		struct rc_roll_member m[3];
		for (size_t k = 0; k < n; k++)
			m[k] = (struct rc_roll_member){ .in = &r->v[k], .uid = r->uid[k],
							.outdated = r->outdated[k],
							.created = r->created[k],
							.deleting = r->deleting[k] };
		struct rc_rollout_input in = {
			.m = m, .n = n, .current_primary = r->current,
			.target_primary = r->target_primary,
			.instances = r->inplace_pod && n < 3 ? 3 : (int64_t)n,
			.supervised = r->supervised, .switchover = r->switchover,
			.inplace_pod = r->inplace_pod, .inplace_uid = r->inplace_uid, .now = NOW,
		};
		struct rc_rollout_decision d;
		rc_rollout_decide(&in, &d);
		if (d.action != r->action)
			fail_msg("%s: got %s, want %s", r->what, rc_rollout_action_str(d.action),
				 rc_rollout_action_str(r->action));
		if (r->target) {
			if (!d.target || strcmp(d.target, r->target) != 0)
				fail_msg("%s: target %s, want %s", r->what, d.target ? d.target : "-",
					 r->target);
		} else if (d.action != RC_ROLL_INPLACE_DONE && d.target) {
			fail_msg("%s: unexpected target %s", r->what, d.target);
		}
		if (rc_rollout_hold_failover(&in) != r->hold)
			fail_msg("%s: hold %d, want %d", r->what, !r->hold, r->hold);
	}
	/* fewer instances than wanted is not healthy: a missing one is created first */
	struct rc_instance v[] = { P1, R2 };
	struct rc_roll_member m[] = { { .in = &v[0], .outdated = true }, { .in = &v[1] } };
	struct rc_rollout_input in = { .m = m, .n = 2, .current_primary = "c-1",
				       .target_primary = "c-1", .instances = 3, .now = NOW };
	struct rc_rollout_decision d;
	rc_rollout_decide(&in, &d);
	assert_int_equal(d.action, RC_ROLL_WAIT);
}

static void test_outdated(void **state)
{
	(void)state;
	json_object *plain = json_tokener_parse("{\"metadata\":{\"name\":\"c-1\"}}");
	json_object *stamped = json_tokener_parse(
		"{\"metadata\":{\"name\":\"c-1\",\"annotations\":"
		"{\"kubectl.kubernetes.io/restartedAt\":\"2026-12-03T07:00:00Z\"}}}");
	struct rc_instance fine = { .has_status = true };
	struct rc_instance pending = { .has_status = true, .pending_restart = true };
	assert_false(rc_rollout_outdated(plain, NULL, &fine, NULL, NULL));
	assert_true(rc_rollout_outdated(plain, "2026-12-03T07:00:00Z", &fine, NULL, NULL));
	assert_false(rc_rollout_outdated(stamped, "2026-12-03T07:00:00Z", &fine, NULL, NULL));
	assert_true(rc_rollout_outdated(stamped, "2026-12-03T08:00:00Z", &fine, NULL, NULL));
	assert_true(rc_rollout_outdated(stamped, NULL, &fine, NULL, NULL));
	assert_true(rc_rollout_outdated(plain, NULL, &pending, NULL, NULL));
	struct rc_instance silent = { .pending_restart = true }; /* no status: not known */
	assert_false(rc_rollout_outdated(plain, NULL, &silent, NULL, NULL));
	/* a new image of the same major restarts the instance; a new major is an
	 * upgrade, not a restart; an image without a major tag is not compared */
	json_object *img = json_tokener_parse(
		"{\"metadata\":{\"name\":\"c-1\",\"annotations\":"
		"{\"pgop.io/image\":\"ghcr.io/cloudnative-pg/postgresql:15.4\"}}}");
	assert_false(rc_rollout_outdated(img, NULL, &fine, "ghcr.io/cloudnative-pg/postgresql:15.4", NULL));
	assert_true(rc_rollout_outdated(img, NULL, &fine, "ghcr.io/cloudnative-pg/postgresql:15.6", NULL));
	assert_false(rc_rollout_outdated(img, NULL, &fine, "ghcr.io/cloudnative-pg/postgresql:16.2", NULL));
	assert_false(rc_rollout_outdated(img, NULL, &fine, "registry/pg@sha256:abcd", NULL));
	assert_false(rc_rollout_outdated(img, NULL, &fine, NULL, NULL));
	assert_false(rc_rollout_outdated(plain, NULL, &fine, "ghcr.io/cloudnative-pg/postgresql:15.6", NULL));
	/* other WAL archive credential volumes than the Pod was built with */
	json_object *vols = json_tokener_parse(
		"{\"metadata\":{\"name\":\"c-1\",\"annotations\":"
		"{\"pgop.io/archiveVolumes\":\"access-key-id=s3/ID\"}}}");
	assert_false(rc_rollout_outdated(vols, NULL, &fine, NULL, "access-key-id=s3/ID"));
	assert_true(rc_rollout_outdated(vols, NULL, &fine, NULL, "access-key-id=s3/KEY"));
	assert_true(rc_rollout_outdated(vols, NULL, &fine, NULL, "")); /* archiving removed */
	assert_true(rc_rollout_outdated(plain, NULL, &fine, NULL, "access-key-id=s3/ID"));
	assert_false(rc_rollout_outdated(plain, NULL, &fine, NULL, "")); /* none either way */
	json_object_put(vols);
	json_object_put(img);
	json_object_put(plain);
	json_object_put(stamped);
}

/* A 3-instance Cluster "c" whose affinity is `affinity` (JSON), owned. */
static struct api_cluster *placed_cluster(const char *affinity)
{
	_cleanup_free_ char *txt = op_asprintf(
		"{\"metadata\":{\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u\"},\"spec\":{"
		"\"instances\":3,\"storage\":{\"size\":\"1Gi\"},\"affinity\":%s}}",
		affinity);
	json_object *o = parse(txt);
	struct api_cluster *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_cluster_decode(o, NULL, &c, &err), 0);
	json_object_put(o);
	return c;
}

static json_object *pod_of(const struct api_cluster *c, int64_t serial)
{
	static const struct rc_settings s = { .operator_image = "pgop:test" };
	json_object *pod = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_pod(c, &s, serial, serial == 1 ? "primary" : "replica", &pod,
				      &err),
			 0);
	return pod;
}

/* The decision over Pods pods[] (in the order of v[]: c-1, c-3, c-2) against
 * the Cluster's placement fingerprint want, as build_input marks them. */
static struct rc_rollout_decision decide_placed(json_object *const pods[3], const char *want,
						bool supervised, bool switchover)
{
	static const struct rc_instance v[] = { P1, R3, R2 };
	struct rc_roll_member m[3];
	for (size_t k = 0; k < 3; k++) {
		bool placed = rc_placement_outdated(pods[k], want);
		m[k] = (struct rc_roll_member){ .in = &v[k], .uid = "u", .outdated = placed,
						.placement = placed };
	}
	struct rc_rollout_input in = { .m = m, .n = 3, .current_primary = "c-1",
				       .target_primary = "c-1", .instances = 3,
				       .supervised = supervised, .switchover = switchover,
				       .now = NOW };
	struct rc_rollout_decision d;
	rc_rollout_decide(&in, &d);
	return d;
}

/* A nodeSelector/tolerations change: the Pods made before it are outdated,
 * replicas roll first (highest serial), then the primary by its method; a
 * Pod made afterwards is current; a Pod without the fingerprint (made by a
 * pgop before it) is not outdated. */
static void test_placement_roll(void **state)
{
	(void)state;
	struct api_cluster *old = placed_cluster("{\"nodeSelector\":{\"disk\":\"ssd\"}}");
	struct api_cluster *new = placed_cluster(
		"{\"nodeSelector\":{\"disk\":\"nvme\"},\"tolerations\":[{\"key\":\"pg\","
		"\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}");
	_cleanup_free_ char *want = rc_placement_hash(new);
	_cleanup_free_ char *was = rc_placement_hash(old);
	json_object *pods[3] = { pod_of(old, 1), pod_of(old, 3), pod_of(old, 2) };
	assert_true(rc_placement_outdated(pods[0], want));
	assert_false(rc_placement_outdated(pods[0], was));
	assert_false(rc_placement_outdated(pods[0], NULL));
	json_object *bare = parse("{\"metadata\":{\"name\":\"c-1\",\"annotations\":{}}}");
	assert_false(rc_placement_outdated(bare, want));
	json_object_put(bare);

	static const struct {
		bool supervised, switchover;
		enum rc_rollout_action primary;
		const char *primary_target;
	} methods[] = {
		{ false, false, RC_ROLL_INPLACE_MARK, "c-1" },
		{ false, true, RC_ROLL_SWITCHOVER, "c-3" },
		{ true, false, RC_ROLL_WAIT_USER, "c-1" },
	};
	for (size_t k = 0; k < OP_ARRAY_SIZE(methods); k++) {
		bool sup = methods[k].supervised, sw = methods[k].switchover;
		struct rc_rollout_decision d = decide_placed(pods, want, sup, sw);
		assert_int_equal(d.action, RC_ROLL_RESTART_REPLICA);
		assert_string_equal(d.target, "c-3");
	}
	json_object_put(pods[1]);
	pods[1] = pod_of(new, 3); /* c-3 recreated with the new placement */
	struct rc_rollout_decision d = decide_placed(pods, want, false, false);
	assert_int_equal(d.action, RC_ROLL_RESTART_REPLICA);
	assert_string_equal(d.target, "c-2");
	json_object_put(pods[2]);
	pods[2] = pod_of(new, 2);
	for (size_t k = 0; k < OP_ARRAY_SIZE(methods); k++) {
		d = decide_placed(pods, want, methods[k].supervised, methods[k].switchover);
		assert_int_equal(d.action, methods[k].primary);
		assert_string_equal(d.target, methods[k].primary_target);
	}
	json_object_put(pods[0]);
	pods[0] = pod_of(new, 1);
	d = decide_placed(pods, want, false, false);
	assert_int_equal(d.action, RC_ROLL_NONE);
	for (size_t k = 0; k < 3; k++)
		json_object_put(pods[k]);
	api_cluster_free(old);
	api_cluster_free(new);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rollout_table),
		cmocka_unit_test(test_outdated),
		cmocka_unit_test(test_placement_roll),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
