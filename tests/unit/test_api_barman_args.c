/* tests/unit/test_api_barman_args.c - api/barman_args.c: barman's sizes
 * (check_size's quirks: "MB" is 1024^2, "MiB" 1000^2), the options acted on
 * per command in both spellings, values refused with the element's index,
 * every other option reported once with its index. */
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

#include "api/barman_args.h"
#include "support/alloc.h"

static void test_sizes(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{ "1024", 1024 },
		{ "100GB", 100ull << 30 },
		{ "5MB", 5u << 20 },
		{ "5mb", 5u << 20 },
		{ "5MiB", 5000000 },
		{ "1.5GB", 3ull << 29 },
		{ "1234B", 1234 },
		{ "2TB", 2ull << 40 },
		{ "1KB", 1024 },
		{ "1e3MB", 1000ull << 20 }, /* Python float() */
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(good); i++) {
		uint64_t v = 0;
		if (api_barman_size_parse(good[i].s, &v) != 0 || v != good[i].v)
			fail_msg("%s: got %llu", good[i].s, (unsigned long long)v);
	}
	static const char *const bad[] = { "", "B", "MB", "0", "0MB", "-5MB", "5XB", "5 MB", "abc",
					   "infGB", "nanMB", "5IB", "0.0001KB",
					   "99999999999999999999", "1YB" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		uint64_t v;
		if (api_barman_size_parse(bad[i], &v) != -EINVAL)
			fail_msg("accepted as a size: '%s'", bad[i]);
	}
}

struct seen {
	size_t idx[8];
	char opt[8][32];
	size_t n;
};

static void record(void *ud, size_t index, const char *option)
{
	struct seen *s = ud;
	assert_true(s->n < 8);
	s->idx[s->n] = index;
	snprintf(s->opt[s->n++], 32, "%s", option);
}

static void test_backup_args(void **state)
{
	(void)state;
	const char *args[] = { "--max-archive-size=2GB", "--min-chunk-size", "10MB", "-J", "4",
			       "--read-timeout=90", "--immediate-checkpoint", "--max-bandwidth=1MB",
			       "--tags", "a,b" };
	struct api_barman_args a;
	struct seen s = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_barman_args_parse(API_BARMAN_BACKUP, args, OP_ARRAY_SIZE(args), &a,
					       record, &s, &err), 0);
	assert_int_equal(a.max_archive_size, 2ull << 30);
	assert_int_equal(a.min_chunk_size, 10u << 20);
	assert_int_equal(a.jobs, 4);
	assert_int_equal(a.read_timeout_s, 90);
	assert_true(a.immediate_checkpoint);
	assert_int_equal(s.n, 2); /* --max-bandwidth, --tags (its value with it) */
	assert_int_equal(s.idx[0], 7);
	assert_string_equal(s.opt[0], "--max-bandwidth=1MB");
	assert_int_equal(s.idx[1], 8);
	assert_string_equal(s.opt[1], "--tags");
	/* past 1 TiB: barman's cap, silently */
	const char *big[] = { "-S", "5TB" };
	assert_int_equal(api_barman_args_parse(API_BARMAN_BACKUP, big, 2, &a, NULL, NULL, &err), 0);
	assert_int_equal(a.max_archive_size, API_BARMAN_ARCHIVE_MAX);
}

static void test_other_tools(void **state)
{
	(void)state;
	const char *args[] = { "--read-timeout=30", "--max-archive-size=2GB", "--no-partial" };
	static const enum api_barman_tool tools[] = { API_BARMAN_WAL_ARCHIVE, API_BARMAN_WAL_RESTORE,
						      API_BARMAN_RESTORE };
	for (size_t t = 0; t < OP_ARRAY_SIZE(tools); t++) {
		struct api_barman_args a;
		struct seen s = { 0 };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(api_barman_args_parse(tools[t], args, 3, &a, record, &s, &err), 0);
		assert_int_equal(a.read_timeout_s, 30);
		assert_int_equal(a.max_archive_size, 0); /* barman-cloud-backup's only */
		assert_int_equal(s.n, 2);
		assert_int_equal(s.idx[0], 1);
		assert_int_equal(s.idx[1], 2);
	}
	assert_string_equal(api_barman_args_field(API_BARMAN_RESTORE),
			    "data.restoreAdditionalCommandArgs");
}

static void test_refused(void **state)
{
	(void)state;
	static const struct {
		const char *a, *b;
		const char *msg;
	} bad[] = {
		{ "--max-archive-size=5KB", NULL, "[0]: --max-archive-size" },
		{ "--max-archive-size=x", NULL, "got 'x'" },
		{ "--min-chunk-size=1MB", NULL, "5MB to 256MB" },
		{ "--min-chunk-size=1GB", NULL, "[0]: --min-chunk-size" },
		{ "-J", "0", "[1]: --jobs" },
		{ "--jobs=65", NULL, "1..64" },
		{ "--read-timeout=0", NULL, "whole seconds" },
		{ "--read-timeout=1.5", NULL, "got '1.5'" },
		{ "--read-timeout", NULL, "[0]: --read-timeout needs a value" },
		{ "--immediate-checkpoint=yes", NULL, "takes no value" },
		{ "--read-timeout= 5", NULL, "got ' 5'" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		const char *args[] = { bad[i].a, bad[i].b };
		struct api_barman_args a;
		struct op_err err = OP_ERR_INIT;
		int rc = api_barman_args_parse(API_BARMAN_BACKUP, args, bad[i].b ? 2 : 1, &a, NULL,
					       NULL, &err);
		if (rc != -EINVAL || !strstr(err.msg, bad[i].msg))
			fail_msg("%s: rc %d, '%s'", bad[i].a, rc, err.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_backup_args),
		cmocka_unit_test(test_other_tools),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
