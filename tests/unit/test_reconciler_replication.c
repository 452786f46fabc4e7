/* Unit tests: reconciler/replication.c - SYNC and MAX LAG of a Cluster, the
 * one computation behind the live API's columns and the Cluster's
 * status.sync / status.maxLag (the CRD's Sync and Max Lag columns). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "reconciler/replication.h"
#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/json.h"
#include "test_json.h"


static const char primary_doc[] =
	"{\"isPrimary\":true,\"currentLsn\":\"0/3000100\",\"replicationInfo\":["
	"{\"applicationName\":\"pg-2\",\"syncState\":\"quorum\",\"replayLag\":\"00:00:01.5\"},"
	"{\"applicationName\":\"pg-3\",\"syncState\":\"potential\",\"replayLag\":null},"
	"{\"applicationName\":\"pg-4\",\"syncState\":\"async\",\"replayLag\":\"00:00:00.25\"}]}";
static const char replica_doc[] =
	"{\"isPrimary\":false,\"replayLsn\":\"0/3000000\"}";
static const char far_replica_doc[] =
	"{\"isPrimary\":false,\"replayLsn\":\"0/2000000\"}";
static const char idle_primary_doc[] =
	"{\"isPrimary\":true,\"currentLsn\":\"0/3000000\",\"replicationInfo\":[]}";

static void test_sync_text(void **state)
{
	static const struct {
		const char *spec;
		const char *want;
	} rows[] = {
		{ "{\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}}", "quorum 1/2" },
		{ "{\"postgresql\":{\"synchronous\":{\"method\":\"first\",\"number\":2}}}", "sync 2/2" },
		{ "{\"minSyncReplicas\":1,\"maxSyncReplicas\":2}", "quorum 1/2" },
		{ "{}", "async" },
	};
	json_object *p = parse(primary_doc), *r = parse(replica_doc);
	struct rc_repl_member m[2] = { { .pod = "pg-2", .doc = r, .reachable = true },
				       { .pod = "pg-1", .doc = p, .reachable = true } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		char buf[256];
		snprintf(buf, sizeof(buf), "{\"spec\":%s}", rows[i].spec);
		json_object *c = parse(buf);
		struct rc_repl_summary s;
		rc_repl_summarize(c, m, 2, &s);
		assert_string_equal(s.sync, rows[i].want);
		assert_ptr_equal(s.primary, &m[1]);
		json_object_put(c);
	}
	/* no primary answers: unknown, no lag */
	json_object *c = parse("{\"spec\":{}}");
	m[1].reachable = false;
	struct rc_repl_summary s;
	rc_repl_summarize(c, m, 2, &s);
	assert_string_equal(s.sync, "unknown");
	assert_null(s.primary);
	assert_false(s.max.has_bytes);
	char txt[64];
	rc_repl_lag_text(&s.max, txt, sizeof(txt));
	assert_string_equal(txt, "");
	rc_repl_summarize(c, NULL, 0, &s);
	assert_string_equal(s.sync, "unknown");
	json_object_put(c);
	json_object_put(p);
	json_object_put(r);
}

static void test_max_lag(void **state)
{
	json_object *c = parse("{\"spec\":{}}");
	json_object *p = parse(primary_doc), *r = parse(replica_doc), *far = parse(far_replica_doc);
	struct rc_repl_member m[3] = { { .pod = "pg-1", .doc = p, .reachable = true },
				       { .pod = "pg-2", .doc = r, .reachable = true },
				       { .pod = "pg-3", .doc = far, .reachable = false } };
	struct rc_repl_summary s;
	struct rc_repl_lag l0;
	rc_repl_summarize(c, m, 3, &s);
	/* pg-3's last answer is 16 MiB behind, but it does not answer now: not counted */
	assert_true(s.max.has_bytes);
	assert_int_equal(s.max.bytes, 0x100);
	assert_true(s.max.has_seconds);
	assert_true(s.max.seconds > 1.49 && s.max.seconds < 1.51);
	char txt[64];
	rc_repl_lag_text(&s.max, txt, sizeof(txt));
	assert_string_equal(txt, "256 B / 1.5s");
	m[2].reachable = true;
	rc_repl_summarize(c, m, 3, &s);
	assert_int_equal(s.max.bytes, 0x1000100);
	/* not answering, but the primary's row says where it replays: counted
	 * (the live API showed MAX LAG 0 B for a replica 22 MB behind whose
	 * /pg/status was unreachable for a few seconds after its restart) */
	json_object *p2 = parse(
		"{\"isPrimary\":true,\"currentLsn\":\"0/3000100\",\"replicationInfo\":["
		"{\"applicationName\":\"pg-3\",\"replayLsn\":\"0/1000000\"}]}");
	m[0].doc = p2;
	m[2].reachable = false;
	rc_repl_summarize(c, m, 3, &s);
	assert_int_equal(s.max.bytes, 0x2000100); /* the row's, not the stale 0/2000000 */
	rc_repl_instance_lag(p2, NULL, "pg-3", &l0);
	assert_true(l0.has_bytes && l0.bytes == 0x2000100);
	m[0].doc = p;
	json_object_put(p2);
	/* an idle primary without replicas: 0 B, no seconds */
	json_object *idle = parse(idle_primary_doc);
	struct rc_repl_member one = { .pod = "pg-1", .doc = idle, .reachable = true };
	rc_repl_summarize(c, &one, 1, &s);
	rc_repl_lag_text(&s.max, txt, sizeof(txt));
	assert_string_equal(txt, "0 B");
	/* per instance: the primary lags 0, a replica by LSN, seconds from its row */
	struct rc_repl_lag l;
	rc_repl_instance_lag(p, p, "pg-1", &l);
	assert_true(l.has_bytes && l.bytes == 0 && !l.has_seconds);
	rc_repl_instance_lag(p, r, "pg-2", &l);
	assert_true(l.has_bytes && l.bytes == 0x100 && l.has_seconds);
	rc_repl_instance_lag(p, NULL, "pg-4", &l);
	assert_true(!l.has_bytes && l.has_seconds && l.seconds > 0.24 && l.seconds < 0.26);
	rc_repl_instance_lag(NULL, r, "pg-2", &l);
	assert_false(l.has_bytes || l.has_seconds);
	assert_null(rc_repl_row(p, "pg-9"));
	assert_null(rc_repl_row(p, NULL));
	json_object_put(idle);
	json_object_put(c);
	json_object_put(p);
	json_object_put(r);
	json_object_put(far);
}

static void test_interval(void **state)
{
	double s = 0;
	assert_int_equal(rc_interval_seconds("00:00:01.5", &s), 0);
	assert_true(s > 1.49 && s < 1.51);
	assert_int_equal(rc_interval_seconds("1 day 00:00:10", &s), 0);
	assert_true(s > 86409.9 && s < 86410.1);
	assert_int_equal(rc_interval_seconds("00:99:00", &s), -EINVAL);
	assert_int_equal(rc_interval_seconds(NULL, &s), -EINVAL);
}

/* The status writer: sync and maxLag are written when they differ, an
 * empty maxLag removes the field, NULL leaves both alone. */
static void test_status_patch(void **state)
{
	struct rc_status w = { 0 };
	w.sync = op_strdup("quorum 1/2");
	w.max_lag = op_strdup("256 B / 1.5s");
	char *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_status_patch(NULL, &w, NULL, 1000, &patch, &err), 1);
	json_object *pj = parse(patch);
	assert_string_equal(op_json_str_at(pj, "status.sync"), "quorum 1/2");
	assert_string_equal(op_json_str_at(pj, "status.maxLag"), "256 B / 1.5s");
	/* read back: the same values again -> no sync/maxLag in the patch */
	struct rc_status back;
	rc_status_from_json(op_json_at(pj, "status"), &back);
	assert_string_equal(back.sync, "quorum 1/2");
	assert_string_equal(back.max_lag, "256 B / 1.5s");
	free(patch);
	patch = NULL;
	json_object *cur = json_object_get(op_json_at(pj, "status"));
	int ch = rc_status_patch(cur, &back, NULL, 1000, &patch, &err);
	if (ch == 1) {
		json_object *p2 = parse(patch);
		assert_null(op_json_at(p2, "status.sync"));
		assert_null(op_json_at(p2, "status.maxLag"));
		json_object_put(p2);
		free(patch);
		patch = NULL;
	}
	free(back.max_lag);
	back.max_lag = op_strdup("");
	assert_int_equal(rc_status_patch(cur, &back, NULL, 1000, &patch, &err), 1);
	json_object *p3 = parse(patch);
	json_object *st = op_json_at(p3, "status"), *v = (json_object *)1;
	assert_true(json_object_object_get_ex(st, "maxLag", &v));
	assert_null(v); /* merge patch null: removed */
	json_object_put(p3);
	free(patch);
	rc_status_done(&back);
	rc_status_done(&w);
	json_object_put(cur);
	json_object_put(pj);
}

/* status.synchronousStandbys: written when known and different, read back,
 * and not written (so kept) when none is known */
static void test_status_sync_standbys(void **state)
{
	struct rc_status w = { 0 };
	rc_strv_push(&w.sync_standbys, &w.n_sync_standbys, "c-2");
	rc_strv_push(&w.sync_standbys, &w.n_sync_standbys, "c-3");
	char *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_status_patch(NULL, &w, NULL, 1000, &patch, &err), 1);
	json_object *pj = parse(patch);
	json_object *l = op_json_at(pj, "status.synchronousStandbys");
	assert_int_equal(json_object_array_length(l), 2);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(l, 1)), "c-3");
	struct rc_status back;
	rc_status_from_json(op_json_at(pj, "status"), &back);
	assert_int_equal(back.n_sync_standbys, 2);
	assert_string_equal(back.sync_standbys[0], "c-2");
	free(patch);
	patch = NULL;
	json_object *cur = json_object_get(op_json_at(pj, "status"));
	int ch = rc_status_patch(cur, &back, NULL, 1000, &patch, &err);
	if (ch == 1) { /* other fields may differ; not this one */
		json_object *p2 = parse(patch);
		assert_null(op_json_at(p2, "status.synchronousStandbys"));
		json_object_put(p2);
		free(patch);
		patch = NULL;
	}
	/* none known: the field is left alone */
	rc_strv_free(&back.sync_standbys, &back.n_sync_standbys);
	ch = rc_status_patch(cur, &back, NULL, 1000, &patch, &err);
	if (ch == 1) {
		json_object *p3 = parse(patch);
		json_object *v = NULL;
		assert_false(json_object_object_get_ex(op_json_at(p3, "status"),
						       "synchronousStandbys", &v));
		json_object_put(p3);
		free(patch);
	}
	rc_status_done(&back);
	rc_status_done(&w);
	json_object_put(cur);
	json_object_put(pj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sync_text),
		cmocka_unit_test(test_max_lag),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_status_patch),
		cmocka_unit_test(test_status_sync_standbys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
