/* tests/unit/test_instance_diverge.c - a replica that streamed past a
 * promotion (instance/diverge.c): LSNs, the primary's timeline history, the
 * verdict from the replica's replay position and timeline, its confirmation
 * over time, and what the shared state makes of it (not ready, /pg/status
 * timelineDiverged). tests/e2e/test_instance_local.sh makes a real one. */
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

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/lsn.h"

static void test_lsn(void **state)
{
	(void)state;
	uint64_t v = 0;
	assert_int_equal(op_lsn_parse("0/4FFFFF0", &v), 0);
	assert_true(v == 0x4FFFFF0);
	assert_int_equal(op_lsn_parse("1A/B", &v), 0);
	assert_true(v == ((uint64_t)0x1A << 32 | 0xB));
	char out[OP_LSN_LEN];
	op_lsn_format(v, out);
	assert_string_equal(out, "1A/B");
	op_lsn_format(UINT64_MAX, out);
	assert_string_equal(out, "FFFFFFFF/FFFFFFFF");
	const char *bad[] = { "", "0", "0/", "/1", "0/1x", "G/1", "0/1 ", "123456789/0", NULL };
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(op_lsn_parse(bad[i], &v), -EINVAL);
	assert_int_equal(op_lsn_parse(NULL, &v), -EINVAL);
}

static void test_history_parse(void **state)
{
	(void)state;
	struct inst_tli_switch h[4];
	size_t n = 9;
	struct op_err err = OP_ERR_INIT;
	const char *text = "1\t0/3000060\tno recovery target specified\n"
			   "\n# a comment\n"
			   "2\t0/5000000\tno recovery target specified\n"
			   "3\t1/A0\tat restore point \"x\"";
	assert_int_equal(inst_tli_history_parse(text, h, 4, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(h[0].tli, 1);
	assert_true(h[0].switchpoint == 0x3000060);
	assert_int_equal(h[2].tli, 3);
	assert_true(h[2].switchpoint == ((uint64_t)1 << 32 | 0xA0));
	assert_int_equal(inst_tli_history_parse("", h, 4, &n, &err), 0);
	assert_int_equal(n, 0);
	/* bad lines, order, size */
	assert_int_equal(inst_tli_history_parse("1\tnope\tx\n", h, 4, &n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nope"));
	op_err_clear(&err);
	assert_int_equal(inst_tli_history_parse("0\t0/1\tx\n", h, 4, &n, &err), -EINVAL);
	op_err_clear(&err);
	assert_int_equal(inst_tli_history_parse("2\t0/5\tx\n1\t0/6\tx\n", h, 4, &n, &err),
			 -EINVAL);
	op_err_clear(&err);
	assert_int_equal(inst_tli_history_parse("1\t0/6\tx\n2\t0/5\tx\n", h, 4, &n, &err),
			 -EINVAL);
	op_err_clear(&err);
	assert_int_equal(inst_tli_history_parse("1\t0/1\n2\t0/2\n3\t0/3\n", h, 2, &n, &err),
			 -E2BIG);
	op_err_clear(&err);
}

/* The verdict, table-driven: the primary on timeline 3, forked from 1 at
 * 0/3000060 and from 2 at 0/5000000. */
static void test_decide(void **state)
{
	(void)state;
	const struct inst_tli_switch hist[] = { { 1, 0x3000060 }, { 2, 0x5000000 } };
	const struct {
		uint32_t tli;
		uint64_t lsn;
		uint32_t primary_tli;
		size_t n;
		enum inst_diverge want;
		uint64_t fork;
	} cases[] = {
		{ 3, 0x9000000, 3, 2, INST_DIVERGE_NO, 0 },       /* the primary's timeline */
		{ 2, 0x4000000, 3, 2, INST_DIVERGE_NO, 0x5000000 }, /* behind the fork */
		{ 2, 0x5000000, 3, 2, INST_DIVERGE_NO, 0x5000000 }, /* at it: nothing past */
		{ 2, 0x5000001, 3, 2, INST_DIVERGE_YES, 0x5000000 }, /* one byte past */
		{ 1, 0x3000061, 3, 2, INST_DIVERGE_YES, 0x3000060 }, /* older timeline, past */
		{ 1, 0x2000000, 3, 2, INST_DIVERGE_NO, 0x3000060 },
		{ 4, 0x1000000, 3, 2, INST_DIVERGE_YES, 0 }, /* a branch the primary never had */
		{ 2, 0x1000000, 2, 0, INST_DIVERGE_NO, 0 },  /* same timeline, no history */
		{ 1, 0x1000000, 2, 0, INST_DIVERGE_YES, 0 }, /* history without timeline 1 */
		{ 0, 0x1000000, 3, 2, INST_DIVERGE_UNKNOWN, 0 },
		{ 1, 0x1000000, 0, 2, INST_DIVERGE_UNKNOWN, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		uint64_t fork = 77;
		enum inst_diverge v = inst_diverge_decide(cases[i].tli, cases[i].lsn,
							  cases[i].primary_tli, hist, cases[i].n,
							  &fork);
		if (v != cases[i].want || fork != cases[i].fork)
			fail_msg("case %zu: verdict %d fork %llx", i, (int)v,
				 (unsigned long long)fork);
	}
}

static void test_confirm(void **state)
{
	(void)state;
	struct inst_diverge_watch w = { 0 };
	assert_false(inst_diverge_confirm(&w, false, 1000));
	assert_false(inst_diverge_confirm(&w, true, 1000));
	assert_false(inst_diverge_confirm(&w, true, 1000 + INST_DIVERGE_CONFIRM_MS - 1));
	/* a break starts it again */
	assert_false(inst_diverge_confirm(&w, false, 1000 + INST_DIVERGE_CONFIRM_MS));
	assert_false(inst_diverge_confirm(&w, true, 2000 + INST_DIVERGE_CONFIRM_MS));
	assert_false(inst_diverge_confirm(&w, true, 2000 + 2 * INST_DIVERGE_CONFIRM_MS - 1));
	assert_true(inst_diverge_confirm(&w, true, 2000 + 2 * INST_DIVERGE_CONFIRM_MS));
	assert_true(inst_diverge_confirm(&w, true, 9000 + 2 * INST_DIVERGE_CONFIRM_MS));
	assert_false(inst_diverge_confirm(&w, false, 9001 + 2 * INST_DIVERGE_CONFIRM_MS));
	assert_int_equal(w.since, 0);
}

/* The primary is asked unless the receiver streams its timeline (as the
 * last check found it). */
static void test_ask(void **state)
{
	(void)state;
	assert_true(inst_diverge_ask(0, 0));  /* none streams, nothing known */
	assert_true(inst_diverge_ask(0, 4));  /* none streams */
	assert_true(inst_diverge_ask(4, 0));  /* streams, the primary not asked yet */
	assert_true(inst_diverge_ask(3, 4));  /* streams an older timeline (diverged?) */
	assert_true(inst_diverge_ask(5, 4));  /* a newer one: another promotion */
	assert_false(inst_diverge_ask(4, 4)); /* streams the primary's timeline */
}

static void test_reason(void **state)
{
	(void)state;
	struct inst_diverge_info d = { INST_DIVERGE_YES, 1, 2, 0x5000060, 0x5000000 };
	char *s = inst_diverge_reason(&d);
	assert_string_equal(s, "replayed up to 0/5000060 on timeline 1, past 0/5000000 where the "
			       "primary's history (timeline 2) left it");
	free(s);
	d.fork = 0;
	d.tli = 4;
	s = inst_diverge_reason(&d);
	assert_non_null(strstr(s, "timeline 4, which is not in the primary's history"));
	free(s);
}

/* The shared state: up but diverged is not ready; following again is. */
static void test_state_ready(void **state)
{
	(void)state;
	struct inst_run_opts o = { .pod_name = "c-3", .cluster_name = "c" };
	o.paths.controller_dir = "/nonexistent";
	struct inst_state *st = inst_state_new(&o);
	inst_state_set(st, true, false);
	assert_false(inst_state_ready(st));
	(void)inst_state_postgres_seen(st, true);
	assert_true(inst_state_ready(st));
	inst_state_set_diverged(st, "replayed up to 0/5000060 on timeline 1");
	assert_false(inst_state_ready(st));
	assert_true(inst_state_started(st)); /* alive: not restarted for it */
	(void)inst_state_postgres_seen(st, true); /* each tick: still not ready */
	assert_false(inst_state_ready(st));
	inst_state_set_diverged(st, "again");
	inst_state_set_diverged(st, NULL);
	assert_true(inst_state_ready(st));
	inst_state_free(st);
}

static void test_status_json(void **state)
{
	(void)state;
	struct inst_pg_status s = { .timeline_id = 1 };
	s.timeline_diverged = op_strdup("replayed up to 0/5000060 on timeline 1");
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_status_to_json(&s, &b), 0);
	assert_non_null(strstr(op_buf_str(&b),
			       "\"timelineDiverged\":\"replayed up to 0/5000060 on timeline 1\""));
	inst_pg_status_done(&s);
	op_buf_done(&b);
	struct inst_pg_status t = { .timeline_id = 2 };
	b = (struct op_buf)OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_status_to_json(&t, &b), 0);
	assert_null(strstr(op_buf_str(&b), "timelineDiverged"));
	op_buf_done(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lsn),         cmocka_unit_test(test_history_parse),
		cmocka_unit_test(test_decide),      cmocka_unit_test(test_confirm),
		cmocka_unit_test(test_ask),         cmocka_unit_test(test_reason),
		cmocka_unit_test(test_state_ready),
		cmocka_unit_test(test_status_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
