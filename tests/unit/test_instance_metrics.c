/* tests/unit/test_instance_metrics.c - the exporter's pure parts
 * (instance/metrics_queries.c, instance/metrics_render.c): the query-file
 * parser (the embedded defaults, custom files, errors naming the field, a
 * later key replacing an earlier one), runonserver ranges, Go durations,
 * value conversion, rows to families (labels in order, usages, names,
 * escaping, column mismatch), the text exposition (families merged across
 * sets, HELP escaping, number formatting). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "instance/metrics_internal.h"

static int parse(const char *yaml, struct inst_mq_set *set, struct op_err *err)
{
	return inst_mq_parse(yaml, strlen(yaml), "test.yaml", set, err);
}

static const struct inst_mq *find(const struct inst_mq_set *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->q[i].key, key) == 0)
			return &s->q[i];
	return NULL;
}

static void test_defaults(void **state)
{
	(void)state;
	struct inst_mq_set s = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_mq_parse(inst_default_queries_data, inst_default_queries_data_len,
				       "defaults", &s, &err),
			 0);
	static const char *const keys[] = { "backends",	 "backends_waiting", "pg_database",
					    "pg_postmaster", "pg_replication", "pg_replication_slots",
					    "pg_stat_archiver", "pg_stat_bgwriter", "pg_stat_bgwriter_17",
					    "pg_stat_checkpointer", "pg_stat_database",
					    "pg_stat_replication", "pg_settings", "pg_extensions",
					    "collector" };
	assert_int_equal(s.n, sizeof(keys) / sizeof(keys[0]));
	for (size_t i = 0; i < s.n; i++)
		assert_string_equal(s.q[i].key, keys[i]); /* file order */
	const struct inst_mq *q = find(&s, "pg_stat_bgwriter_17");
	assert_string_equal(q->name, "pg_stat_bgwriter");
	assert_string_equal(q->runonserver, ">=17.0.0");
	assert_true(find(&s, "pg_stat_replication")->primary);
	assert_non_null(find(&s, "pg_stat_archiver")->predicate_query);
	q = find(&s, "pg_extensions");
	assert_int_equal(q->n_targets, 1);
	assert_string_equal(q->targets[0], "*");
	q = find(&s, "backends");
	assert_int_equal(q->n_cols, 6);
	assert_int_equal(q->cols[0].usage, INST_MQ_LABEL);
	assert_string_equal(q->cols[4].column, "total");
	assert_int_equal(q->cols[4].usage, INST_MQ_GAUGE);
	assert_int_equal(find(&s, "pg_stat_database")->cols[1].usage, INST_MQ_COUNTER);
	inst_mq_set_done(&s);
}

static void test_parse_fields_and_replace(void **state)
{
	(void)state;
	struct inst_mq_set s = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(parse("a:\n  query: SELECT 1 AS x\n  metrics:\n    - x: {usage: GAUGE}\n"
			       "b:\n  query: SELECT 2 AS y\n  master: true\n  cache_seconds: 30\n"
			       "  metrics:\n    - y:\n        usage: MAPPEDMETRIC\n"
			       "        name: why\n        metric_mapping: {on: 1, off: 0.5}\n",
			       &s, &err),
			 0);
	assert_int_equal(s.n, 2);
	const struct inst_mq *b = find(&s, "b");
	assert_true(b->primary); /* master is primary */
	assert_int_equal(b->cache_seconds, 30);
	assert_string_equal(b->cols[0].name, "why");
	assert_int_equal(b->cols[0].n_map, 2);
	assert_string_equal(find(&s, "a")->cols[0].description, "");
	/* a second file: same key replaced in place, a new one appended */
	assert_int_equal(parse("a:\n  query: SELECT 3 AS z\n  metrics:\n    - z: {usage: COUNTER}\n"
			       "c:\n  query: SELECT 4 AS w\n  metrics:\n    - w: {usage: GAUGE}\n",
			       &s, &err),
			 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.q[0].key, "a");
	assert_string_equal(s.q[0].query, "SELECT 3 AS z");
	assert_string_equal(s.q[2].key, "c");
	/* empty file: nothing */
	assert_int_equal(parse("# nothing\n", &s, &err), 0);
	assert_int_equal(s.n, 3);
	inst_mq_set_done(&s);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *yaml, *msg;
	} cases[] = {
		{ "a:\n  metrics:\n    - x: {usage: GAUGE}\n", "a.query: missing" },
		{ "a:\n  query: q\n", "a.metrics: missing" },
		{ "a:\n  query: q\n  metrics:\n    - x: {usage: GAUGES}\n",
		  "a.metrics[0].x.usage: unsupported usage \"GAUGES\"" },
		{ "a:\n  query: q\n  metrics:\n    - x: {usage: HISTOGRAM}\n", "unsupported usage" },
		{ "a:\n  query: q\n  metrics:\n    - x: {description: d}\n", "usage: missing" },
		{ "a:\n  query: q\n  metrics:\n    - bad-name: {usage: GAUGE}\n",
		  "\"bad-name\" is not a Prometheus name" },
		{ "bad key:\n  query: q\n  metrics:\n    - x: {usage: GAUGE}\n",
		  "is not a Prometheus name" },
		{ "a:\n  query: q\n  runonserver: \"banana\"\n  metrics:\n    - x: {usage: GAUGE}\n",
		  "a.runonserver: cannot read" },
		{ "a:\n  query: q\n  cache_seconds: -1\n  metrics:\n    - x: {usage: GAUGE}\n",
		  "negative" },
		{ "a:\n  query: [1]\n", "a.query: expected string" },
		{ "- a\n- b\n", "expected one map of queries" },
		{ "a: [\n", "test.yaml" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct inst_mq_set s = { 0 };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(parse("ok:\n  query: q\n  metrics:\n    - x: {usage: GAUGE}\n", &s,
				       &err),
				 0);
		int r = parse(cases[i].yaml, &s, &err);
		if (r != -EINVAL || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: %d %s", i, r, err.msg);
		assert_int_equal(s.n, 1); /* nothing merged from a broken file */
		inst_mq_set_done(&s);
	}
}

static void test_semver(void **state)
{
	(void)state;
	static const struct {
		const char *range;
		unsigned v[3];
		int want;
	} cases[] = {
		{ ">=17.0.0", { 17, 0, 2 }, 1 },   { ">=17.0.0", { 16, 0, 9 }, 0 },
		{ "<17.0.0", { 16, 0, 9 }, 1 },	   { "<17.0.0", { 17, 0, 0 }, 0 },
		{ ">=12.0.0 <16", { 15, 0, 4 }, 1 }, { ">= 13, < 15", { 15, 0, 1 }, 0 },
		{ "<14 || >=17", { 18, 0, 0 }, 1 }, { "<14 || >=17", { 15, 0, 0 }, 0 },
		{ "15", { 15, 0, 7 }, 1 },	   { "15.x", { 16, 0, 0 }, 0 },
		{ "~15.0", { 15, 0, 9 }, 1 },	   { "^16", { 17, 0, 0 }, 0 },
		{ "!=15", { 16, 0, 0 }, 1 },	   { "=15.0.4", { 15, 0, 4 }, 1 },
		{ "", { 15, 0, 0 }, -EINVAL },	   { ">=", { 15, 0, 0 }, -EINVAL },
		{ "abc", { 15, 0, 0 }, -EINVAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (inst_semver_match(cases[i].range, cases[i].v) != cases[i].want)
			fail_msg("case %zu (%s)", i, cases[i].range);
}

static void test_duration_and_values(void **state)
{
	(void)state;
	int64_t ms = -1;
	static const struct {
		const char *s;
		int64_t ms;
	} ok[] = { { "30s", 30000 }, { "0s", 0 }, { "0", 0 }, { "1m30s", 90000 },
		   { "250ms", 250 }, { "1h", 3600000 }, { "1.5s", 1500 } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(inst_go_duration_ms(ok[i].s, &ms), 0);
		assert_int_equal(ms, ok[i].ms);
	}
	assert_int_equal(inst_go_duration_ms("30", &ms), -EINVAL);
	assert_int_equal(inst_go_duration_ms("s", &ms), -EINVAL);
	assert_int_equal(inst_go_duration_ms("-1s", &ms), -EINVAL);
	assert_int_equal(inst_go_duration_ms("", &ms), -EINVAL);
	double v;
	assert_int_equal(inst_metrics_parse_value(NULL, &v), 0);
	assert_true(isnan(v));
	assert_int_equal(inst_metrics_parse_value("t", &v), 0);
	assert_true(v == 1);
	assert_int_equal(inst_metrics_parse_value("f", &v), 0);
	assert_true(v == 0);
	assert_int_equal(inst_metrics_parse_value("-12.5", &v), 0);
	assert_true(v == -12.5);
	assert_int_equal(inst_metrics_parse_value("12 apples", &v), -EINVAL);
	static const struct {
		double v;
		const char *s;
	} fmt[] = { { 42, "42" },	  { -3, "-3" }, { 0.1, "0.1" }, { 1e20, "1e+20" },
		    { NAN, "NaN" }, { INFINITY, "+Inf" }, { -INFINITY, "-Inf" },
		    { 1.0 / 3, "0.3333333333333333" }, { 16777216, "16777216" } };
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		struct op_buf b = OP_BUF_INIT(64);
		assert_int_equal(inst_metrics_add_value(&b, fmt[i].v), 0);
		assert_string_equal(op_buf_str(&b), fmt[i].s);
		op_buf_done(&b);
	}
}

static const char yaml_q[] =
	"pg_x:\n"
	"  query: q\n"
	"  metrics:\n"
	"    - size: {usage: GAUGE, description: \"Size\\nin bytes\"}\n"
	"    - datname: {usage: LABEL, description: db}\n"
	"    - calls: {usage: COUNTER, description: calls}\n"
	"    - ignored: {usage: DISCARD}\n"
	"    - state: {usage: MAPPEDMETRIC, metric_mapping: {up: 1, down: 0}}\n"
	"    - wait: {usage: DURATION}\n"
	"    - user: {usage: LABEL}\n";

static void test_render_rows(void **state)
{
	(void)state;
	struct inst_mq_set s = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(parse(yaml_q, &s, &err), 0);
	/* columns in another order than metrics; labels follow metrics' order */
	const char *cols[] = { "user", "datname", "size", "calls", "ignored", "state", "wait" };
	const char *cells[] = {
		"bob", "app", "8192", "7", "x", "up", "1.5s", /* row 1 */
		NULL, "we\"ird\\db", "not-a-number", NULL, "x", "sideways", "-1", /* row 2 */
	};
	struct inst_mfams f = { 0 };
	assert_int_equal(inst_mq_render(&s.q[0], "cnpg", 7, cols, 2, cells, &f, &err), 0);
	struct op_buf out = OP_BUF_INIT(1 << 16);
	const struct inst_mfams *sets[] = { &f };
	assert_int_equal(inst_mfams_render(sets, 1, &out), 0);
	assert_string_equal(op_buf_str(&out),
			    "# HELP cnpg_pg_x_size Size\\nin bytes\n"
			    "# TYPE cnpg_pg_x_size gauge\n"
			    "cnpg_pg_x_size{datname=\"app\",user=\"bob\"} 8192\n"
			    "# HELP cnpg_pg_x_calls calls\n"
			    "# TYPE cnpg_pg_x_calls counter\n"
			    "cnpg_pg_x_calls{datname=\"app\",user=\"bob\"} 7\n"
			    "cnpg_pg_x_calls{datname=\"we\\\"ird\\\\db\",user=\"\"} NaN\n"
			    "# HELP cnpg_pg_x_state \n"
			    "# TYPE cnpg_pg_x_state gauge\n"
			    "cnpg_pg_x_state{datname=\"app\",user=\"bob\"} 1\n"
			    "# HELP cnpg_pg_x_wait_milliseconds \n"
			    "# TYPE cnpg_pg_x_wait_milliseconds gauge\n"
			    "cnpg_pg_x_wait_milliseconds{datname=\"app\",user=\"bob\"} 1500\n");
	op_buf_done(&out);
	/* a column count other than the mapping's is an error naming the query */
	assert_int_equal(inst_mq_render(&s.q[0], "cnpg", 2, cols, 0, cells, &f, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "pg_x: the query returns 2 columns, its metrics map 7"));
	inst_mfams_done(&f);
	inst_mq_set_done(&s);
}

static void test_render_merge(void **state)
{
	(void)state;
	/* the same family from two sets (a query on two databases, or bgwriter and
	 * bgwriter_17 sharing a name): one HELP/TYPE, every sample */
	struct inst_mfams a = { 0 }, b = { 0 }, c = { 0 };
	assert_int_equal(inst_mfam_sample(inst_mfams_get(&a, "m_one", "gauge", "one"), "db=\"a\"", 1), 0);
	assert_int_equal(inst_mfam_sample(inst_mfams_get(&b, "m_two", "counter", "two"), NULL, 2), 0);
	assert_int_equal(inst_mfam_sample(inst_mfams_get(&b, "m_one", "gauge", "other help"),
					  "db=\"b\"", 3),
			 0);
	assert_null(inst_mfams_get(&b, "m_two", "gauge", "x")); /* another type */
	const struct inst_mfams *sets[] = { &a, &b, &c };
	struct op_buf out = OP_BUF_INIT(4096);
	assert_int_equal(inst_mfams_render(sets, 3, &out), 0);
	assert_string_equal(op_buf_str(&out), "# HELP m_one one\n# TYPE m_one gauge\n"
					      "m_one{db=\"a\"} 1\nm_one{db=\"b\"} 3\n"
					      "# HELP m_two two\n# TYPE m_two counter\nm_two 2\n");
	op_buf_done(&out);
	/* the cap: -EMSGSIZE, never a partial success */
	struct op_buf small = OP_BUF_INIT(20);
	assert_int_equal(inst_mfams_render(sets, 3, &small), -EMSGSIZE);
	op_buf_done(&small);
	inst_mfams_done(&a);
	inst_mfams_done(&b);
	inst_mfams_done(&c);
}


/* ---- metrics_pipeline.c: the plan and the verdicts ---- */

#define P(k) INST_PL_##k

static void assert_plan(const struct inst_pl_cmd *got, size_t n, const enum inst_pl_kind *want,
			size_t nwant)
{
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(got[i].kind, want[i]);
}

static void test_pipeline_plan(void **state)
{
	struct inst_pl_cmd c[32];
	/* custom queries (none trusted): a guard before each but the first */
	static const enum inst_pl_kind fresh[] = { P(BEGIN), P(SET),  P(SAVEPOINT), P(ITEM),
						   P(GUARD), P(ITEM), P(GUARD),	    P(ITEM),
						   P(END),   P(SYNC) };
	size_t n = inst_pl_plan(0, 3, INST_PL_NEW, true, NULL, c);
	assert_true(n <= INST_PL_MAX_CMDS(0, 3));
	assert_plan(c, n, fresh, 10);
	assert_int_equal(c[3].item, 0);
	assert_int_equal(c[4].item, 1);
	assert_int_equal(c[5].item, 1);
	assert_int_equal(c[7].item, 2);
	/* ours: no guard after a trusted item, one after the custom one */
	static const bool trusted[] = { true, false, true, true };
	static const enum inst_pl_kind mixed[] = { P(BEGIN), P(SET),  P(SAVEPOINT), P(ITEM),
						   P(ITEM),  P(GUARD), P(ITEM),	    P(ITEM),
						   P(SYNC) };
	n = inst_pl_plan(0, 4, INST_PL_NEW, false, trusted, c);
	assert_plan(c, n, mixed, 9);
	assert_int_equal(c[5].item, 2);
	/* going on in the transaction: a guard first, even after a trusted item */
	static const enum inst_pl_kind keep[] = { P(GUARD), P(ITEM), P(ITEM), P(SYNC) };
	n = inst_pl_plan(2, 4, INST_PL_KEEP, false, trusted, c);
	assert_plan(c, n, keep, 4);
	assert_int_equal(c[0].item, 2);
	static const enum inst_pl_kind renew[] = { P(ROLLBACK), P(BEGIN), P(SET), P(SAVEPOINT),
						   P(ITEM),	P(END),	  P(SYNC) };
	n = inst_pl_plan(2, 3, INST_PL_RENEW, true, NULL, c);
	assert_true(n <= INST_PL_MAX_CMDS(2, 3));
	assert_plan(c, n, renew, 7);
	assert_int_equal(c[4].item, 2);
	/* nothing to run: only the end of a transaction that goes on */
	static const enum inst_pl_kind end_only[] = { P(END), P(SYNC) };
	n = inst_pl_plan(0, 0, INST_PL_KEEP, true, NULL, c);
	assert_plan(c, n, end_only, 2);
	assert_int_equal(inst_pl_plan(0, 0, INST_PL_NEW, true, NULL, c), 0);
	assert_int_equal(inst_pl_plan(0, 0, INST_PL_KEEP, false, NULL, c), 0);
}

static void test_pipeline_judge(void **state)
{
	struct inst_pl_cmd c[32];
	enum inst_pl_outcome out[4];
	size_t cause;
	bool lost;
	size_t n = inst_pl_plan(0, 3, INST_PL_NEW, true, NULL, c);
	/* all answered */
	enum inst_pl_st ok[10] = { 0 };
	assert_int_equal(inst_pl_judge(c, ok, n, 0, 3, out, &cause, &lost), 3);
	assert_int_equal(out[0], INST_PL_RAN);
	assert_int_equal(out[2], INST_PL_RAN);
	assert_int_equal(cause, n);
	assert_false(lost);
	/* item 1 fails: the rest of the segment was skipped, item 2 runs again
	 * in the same transaction */
	enum inst_pl_st one_fails[10] = { [5] = INST_PL_ERROR, [6] = INST_PL_ABORTED,
					   [7] = INST_PL_ABORTED, [8] = INST_PL_ABORTED };
	assert_int_equal(inst_pl_judge(c, one_fails, n, 0, 3, out, &cause, &lost), 2);
	assert_int_equal(out[0], INST_PL_RAN);
	assert_int_equal(out[1], INST_PL_FAILED);
	assert_int_equal(out[2], INST_PL_AGAIN);
	assert_false(lost);
	/* item 1 ended the transaction (COMMIT): item 2's guard fails, item 2
	 * runs again in a new transaction */
	enum inst_pl_st lost_tx[10] = { [6] = INST_PL_ERROR, [7] = INST_PL_ABORTED,
					 [8] = INST_PL_ABORTED };
	assert_int_equal(inst_pl_judge(c, lost_tx, n, 0, 3, out, &cause, &lost), 2);
	assert_int_equal(out[1], INST_PL_RAN);
	assert_int_equal(out[2], INST_PL_AGAIN);
	assert_true(lost);
	/* the setup failed: nothing ran, the cause is the BEGIN */
	enum inst_pl_st no_begin[10] = { INST_PL_ERROR,	  INST_PL_ABORTED, INST_PL_ABORTED,
					  INST_PL_ABORTED, INST_PL_ABORTED, INST_PL_ABORTED,
					  INST_PL_ABORTED, INST_PL_ABORTED, INST_PL_ABORTED };
	assert_int_equal(inst_pl_judge(c, no_begin, n, 0, 3, out, &cause, &lost), 3);
	assert_int_equal(cause, 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(out[i], INST_PL_LOST);
	/* the connection failed after item 0's answer */
	assert_int_equal(inst_pl_judge(c, ok, 4, 0, 3, out, &cause, &lost), 3);
	assert_int_equal(out[0], INST_PL_RAN);
	assert_int_equal(out[1], INST_PL_UNREAD);
	assert_int_equal(out[2], INST_PL_UNREAD);
	/* a kept transaction that is not ours any more: again from the first */
	n = inst_pl_plan(1, 3, INST_PL_KEEP, false, NULL, c);
	enum inst_pl_st first_guard[6] = { INST_PL_ERROR, INST_PL_ABORTED, INST_PL_ABORTED,
					    INST_PL_ABORTED };
	assert_int_equal(inst_pl_judge(c, first_guard, n, 1, 3, out, &cause, &lost), 1);
	assert_int_equal(out[1], INST_PL_AGAIN);
	assert_int_equal(out[2], INST_PL_AGAIN);
	assert_true(lost);
}

/* A model of the server for the plans: the extended protocol skips every
 * command after an error up to the Sync; an aborted transaction refuses all
 * but ROLLBACK (TO SAVEPOINT). Items: 'o' fine, 'e' an error, 'c' COMMIT,
 * 'r' RELEASE SAVEPOINT. */
struct sim {
	bool in_tx, aborted, sp, seg_failed;
	int ran[16];
};

static enum inst_pl_st sim_cmd(struct sim *s, const struct inst_pl_cmd *c, const char *items)
{
	if (c->kind == P(SYNC)) {
		s->seg_failed = false;
		return INST_PL_OK;
	}
	if (s->seg_failed)
		return INST_PL_ABORTED;
	bool ok = true;
	switch (c->kind) {
	case P(ROLLBACK):
	case P(END):
		s->in_tx = s->aborted = s->sp = false;
		break;
	case P(BEGIN):
		s->in_tx = true;
		break;
	case P(SET):
		ok = !s->aborted;
		break;
	case P(SAVEPOINT):
		ok = s->in_tx && !s->aborted;
		s->sp = ok;
		break;
	case P(GUARD):
		ok = s->in_tx && s->sp;
		s->aborted = s->aborted && !ok;
		break;
	case P(ITEM):
		if ((ok = !s->aborted)) {
			assert_true(s->in_tx); /* never outside the READ ONLY transaction */
			s->ran[c->item]++;
			char k = items[c->item];
			ok = k != 'e';
			if (k == 'c')
				s->in_tx = s->sp = false;
			if (k == 'r')
				s->sp = false;
		}
		break;
	default:
		break;
	}
	if (!ok) {
		s->seg_failed = true;
		s->aborted = s->in_tx;
	}
	return ok ? INST_PL_OK : INST_PL_ERROR;
}

/* inst_pl_run's loop against the model: each item runs once, in our
 * transaction, in at most 2n + 2 pipelines. Upper case: a trusted item
 * ('O' fine, 'E' an error). */
static void sim_run(const char *items, bool in_tx)
{
	size_t n = strlen(items), from = 0, rounds = 0, cause;
	struct sim s = { .in_tx = in_tx, .sp = in_tx };
	enum inst_pl_outcome out[16], final[16];
	bool trusted[16], lost;
	char kinds[17];
	for (size_t i = 0; i < n; i++) {
		trusted[i] = items[i] >= 'A' && items[i] <= 'Z';
		kinds[i] = (char)(trusted[i] ? items[i] - 'A' + 'a' : items[i]);
	}
	kinds[n] = 0;
	enum inst_pl_setup setup = in_tx ? INST_PL_KEEP : INST_PL_NEW;
	for (;;) {
		struct inst_pl_cmd c[64];
		enum inst_pl_st st[64];
		size_t nc = inst_pl_plan(from, n, setup, true, trusted, c);
		for (size_t k = 0; k < nc; k++)
			st[k] = sim_cmd(&s, &c[k], kinds);
		size_t next = inst_pl_judge(c, st, nc, from, n, out, &cause, &lost);
		for (size_t i = from; i < next; i++)
			final[i] = out[i];
		rounds++;
		assert_true(rounds <= 2 * n + 2);
		if (next >= n && (!s.in_tx || from == n))
			break;
		from = next;
		setup = !s.in_tx ? INST_PL_NEW : lost ? INST_PL_RENEW : INST_PL_KEEP;
	}
	assert_false(s.in_tx); /* ended */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(s.ran[i], 1);
		assert_int_equal(final[i], kinds[i] == 'e' ? INST_PL_FAILED : INST_PL_RAN);
	}
}

static void test_pipeline_isolation(void **state)
{
	sim_run("o", false);
	sim_run("ooo", false);
	sim_run("oeo", false);
	sim_run("eee", false);
	sim_run("ocooco", false);
	sim_run("cccc", false);
	sim_run("oroeo", false);
	sim_run("ecrce", false);
	sim_run("oeo", true);
	sim_run("coc", true);
	sim_run("OOOO", false);
	sim_run("OEOcOE", false);
	sim_run("cOrOeE", false);
	sim_run("EEEc", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_parse_fields_and_replace),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_semver),
		cmocka_unit_test(test_duration_and_values),
		cmocka_unit_test(test_render_rows),
		cmocka_unit_test(test_render_merge),
		cmocka_unit_test(test_pipeline_plan),
		cmocka_unit_test(test_pipeline_judge),
		cmocka_unit_test(test_pipeline_isolation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
