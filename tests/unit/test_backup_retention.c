/* tests/unit/test_backup_retention.c - retentionPolicy's decision
 * (backup/retention.h), against barman-cloud-backup-delete's rules. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backup/retention.h"

#define DAY_US (86400LL * 1000000)
#define NOW_US (1800000000LL * 1000000) /* 2027-01-15 */

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t days; /* 0: refused */
	} cases[] = {
		{ "30d", 30 }, { "4w", 28 },   { "1m", 31 },	   { "12m", 372 }, { "0d", 0 },
		{ "d", 0 },    { "30", 0 },    { "30D", 0 },	   { "-1d", 0 },   { "3y", 0 },
		{ "", 0 },     { "1 d", 0 },   { "99999999d", 0 }, { "030d", 0 },  { NULL, 0 },
		{ "5000m", 0 }, { "1000w", 7000 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bk_retention_policy p;
		struct op_err err = OP_ERR_INIT;
		int r = bk_retention_parse(cases[i].in, &p, &err);
		if (cases[i].days) {
			assert_int_equal(r, 0);
			assert_int_equal(bk_retention_window_s(&p), cases[i].days * 86400);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_true(err.msg[0] != '\0');
		}
	}
	struct bk_retention_policy p = { 2, 'w' };
	char d[64];
	bk_retention_describe(&p, d, sizeof(d));
	assert_string_equal(d, "RECOVERY WINDOW OF 2 WEEKS");
}

struct fixture {
	struct bk_backup_info info[8];
	struct bk_retention_backup b[8];
	size_t n;
};

/* A backup that ended days_ago days before NOW_US, on timeline tli, whose
 * WAL begins at begin (24 hex). */
static void add(struct fixture *f, const char *id, enum bk_backup_status st, int64_t days_ago,
		uint32_t tli, const char *begin)
{
	struct bk_backup_info *bi = &f->info[f->n];
	bk_backup_info_init(bi);
	bi->status = st;
	bi->end_time.set = st == BK_STATUS_DONE;
	bi->end_time.epoch_us = NOW_US - days_ago * DAY_US;
	bi->timeline.set = true;
	bi->timeline.v = tli;
	bi->begin_wal = strdup(begin);
	f->b[f->n].id = id;
	f->b[f->n].info = bi;
	f->n++;
}

static void done(struct fixture *f)
{
	for (size_t i = 0; i < f->n; i++)
		bk_backup_info_done(&f->info[i]);
}

static void test_report(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	add(&f, "20260101T000000", BK_STATUS_DONE, 40, 1, "000000010000000000000002");
	add(&f, "20260110T000000", BK_STATUS_DONE, 31, 1, "000000010000000000000010");
	add(&f, "20260112T000000", BK_STATUS_FAILED, 29, 1, "000000010000000000000012");
	add(&f, "20260115T000000", BK_STATUS_DONE, 20, 1, "000000010000000000000020");
	add(&f, "20260201T000000", BK_STATUS_DONE, 1, 1, "000000010000000000000030");
	struct bk_retention_policy p = { 30, 'd' };
	enum bk_retention_verdict v[8];
	bk_retention_report(f.b, f.n, NOW_US, &p, v);
	/* the newest one ending before now-30d (31 days ago) stays: recovering to
	 * 30 days ago starts from it; the one before it is obsolete */
	assert_int_equal(v[0], BK_RETAIN_OBSOLETE);
	assert_int_equal(v[1], BK_RETAIN_VALID);
	assert_int_equal(v[2], BK_RETAIN_NONE);
	assert_int_equal(v[3], BK_RETAIN_VALID);
	assert_int_equal(v[4], BK_RETAIN_VALID);

	/* every backup old: only the newest DONE one is kept */
	struct bk_retention_policy one = { 1, 'd' };
	bk_retention_report(f.b, f.n, NOW_US + 100 * DAY_US, &one, v);
	assert_int_equal(v[0], BK_RETAIN_OBSOLETE);
	assert_int_equal(v[1], BK_RETAIN_OBSOLETE);
	assert_int_equal(v[2], BK_RETAIN_NONE);
	assert_int_equal(v[3], BK_RETAIN_OBSOLETE);
	assert_int_equal(v[4], BK_RETAIN_VALID);

	int64_t frp;
	assert_true(bk_first_recoverability_point(f.b, f.n, &frp));
	assert_int_equal(frp, NOW_US - 40 * DAY_US);
	assert_false(bk_first_recoverability_point(f.b, 0, &frp));
	done(&f);
}

static void test_wal_rule(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	add(&f, "20260101T000000", BK_STATUS_DONE, 40, 1, "000000010000000000000010");
	add(&f, "20260110T000000", BK_STATUS_DONE, 31, 2, "000000020000000000000020");
	add(&f, "20260115T000000", BK_STATUS_DONE, 20, 2, "000000020000000000000030");
	bool gone[3] = { true, false, false };
	/* deleting backup 0: WAL before the next backup's begin_wal go */
	assert_true(bk_retention_wal_deletable(f.b, 3, gone, 0, "000000010000000000000005"));
	assert_true(bk_retention_wal_deletable(f.b, 3, gone, 0, "000000010000000000000030"));
	assert_true(bk_retention_wal_deletable(f.b, 3, gone, 0, "00000002000000000000001F"));
	assert_true(bk_retention_wal_deletable(f.b, 3, gone, 0,
					       "000000010000000000000011.00000028.backup"));
	assert_true(bk_retention_wal_deletable(f.b, 3, gone, 0,
					       "000000010000000000000011.partial"));
	assert_false(bk_retention_wal_deletable(f.b, 3, gone, 0, "000000020000000000000020"));
	assert_false(bk_retention_wal_deletable(f.b, 3, gone, 0, "000000020000000000000025"));
	assert_false(bk_retention_wal_deletable(f.b, 3, gone, 0, "00000002.history"));
	assert_false(bk_retention_wal_deletable(f.b, 3, gone, 0, "not-a-wal"));
	assert_false(bk_retention_wal_deletable(f.b, 3, gone, 0, "../00000001000000000000000"));

	/* a remaining backup on timeline 1 protects timeline 1's WAL */
	struct fixture g = { 0 };
	add(&g, "20260101T000000", BK_STATUS_DONE, 40, 2, "000000020000000000000010");
	add(&g, "20260110T000000", BK_STATUS_DONE, 31, 1, "000000010000000000000008");
	add(&g, "20260115T000000", BK_STATUS_DONE, 20, 3, "000000030000000000000030");
	bool gone2[3] = { true, false, false };
	/* remove_until = backup 1 (timeline 1): timeline 1 is its own, deletable
	 * below its begin; timeline 2 WAL below it too */
	assert_true(bk_retention_wal_deletable(g.b, 3, gone2, 0, "000000010000000000000007"));
	assert_false(bk_retention_wal_deletable(g.b, 3, gone2, 0, "000000010000000000000008"));
	/* with backup 1 gone too and deleting backup 1: until = backup 2 (tli 3) */
	bool gone3[3] = { true, true, false };
	assert_true(bk_retention_wal_deletable(g.b, 3, gone3, 1, "000000010000000000000009"));
	/* a failed backup on timeline 4 still protects timeline 4 (barman lists it) */
	add(&g, "20260120T000000", BK_STATUS_FAILED, 10, 4, "000000040000000000000001");
	bool gone4[4] = { true, true, false, false };
	assert_false(bk_retention_wal_deletable(g.b, 4, gone4, 1, "000000040000000000000000"));
	/* no next backup: remove until the deleted one's begin_wal */
	bool all[3] = { true, true, true };
	assert_true(bk_retention_wal_deletable(f.b, 3, all, 2, "00000002000000000000002F"));
	assert_false(bk_retention_wal_deletable(f.b, 3, all, 2, "000000020000000000000030"));
	done(&f);
	done(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_wal_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
