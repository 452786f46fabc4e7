/* tests/unit/test_api_cron.c - api/cron: ScheduledBackup schedules (six
 * fields with seconds, robfig/cron's semantics) and their next fire time. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef free

#include "api/cron.h"
#include "api/timestamp.h"
#include "support/alloc.h"

static int64_t at(const char *rfc3339)
{
	int64_t t = 0;
	if (api_time_parse(rfc3339, &t) < 0)
		fail_msg("bad time %s", rfc3339);
	return t;
}

/* Next fire time of spec after `after`, as RFC 3339 (static buffer), or the
 * error as "-<errno>". */
static const char *next(const char *spec, const char *after)
{
	static char buf[64];
	struct api_cron c;
	struct op_err err = OP_ERR_INIT;
	if (api_cron_parse(spec, &c, &err) < 0)
		fail_msg("%s: %s", spec, err.msg);
	int64_t t = 0;
	int r = api_cron_next(&c, at(after), &t);
	if (r < 0) {
		snprintf(buf, sizeof(buf), "%d", r);
		return buf;
	}
	_cleanup_free_ char *s = api_time_rfc3339(t);
	snprintf(buf, sizeof(buf), "%s", s);
	return buf;
}

#define NOW "2026-12-07T05:12:30Z" /* a Monday */

static void test_next_basic(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *after, *want;
	} cases[] = {
		{ "0 0 0 * * *", NOW, "2026-12-08T00:00:00Z" },
		{ "*/15 * * * * *", NOW, "2026-12-07T05:12:45Z" },
		{ "* * * * * *", NOW, "2026-12-07T05:12:31Z" },
		/* strictly after: a fire time equal to `after` is skipped */
		{ "0 30 1 * * *", "2026-12-07T01:30:00Z", "2026-12-08T01:30:00Z" },
		{ "0 0 8,20 * * *", NOW, "2026-12-07T08:00:00Z" },
		{ "0 10-40/15 * * * *", NOW, "2026-12-07T05:25:00Z" },
		/* N/STEP: from N to the maximum */
		{ "30/10 * * * * *", NOW, "2026-12-07T05:12:40Z" },
		{ "30/10 * * * * *", "2026-12-07T05:12:55Z", "2026-12-07T05:13:30Z" },
		/* empty list elements are skipped, as robfig does */
		{ "0 0 8,,20 * * *", "2026-12-07T09:00:00Z", "2026-12-07T20:00:00Z" },
		/* names, any case */
		{ "0 0 9 1 jan-MAR *", NOW, "2027-01-01T09:00:00Z" },
		{ "0 0 0 * * sun", NOW, "2026-12-13T00:00:00Z" },
		{ "0 0 0 * * 0", NOW, "2026-12-13T00:00:00Z" },
		{ "0 0 0 * * MON-FRI", "2026-12-11T12:00:00Z", "2026-12-14T00:00:00Z" },
		/* year and month boundaries */
		{ "0 0 0 1 1 *", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z" },
		{ "0 0 0 31 * *", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z" },
		{ "59 59 23 31 12 *", "2026-12-31T23:59:58Z", "2026-12-31T23:59:59Z" },
		{ "0 0 0 1 * *", "2027-02-28T12:00:00Z", "2027-03-01T00:00:00Z" },
		/* five fields: the day of week is optional */
		{ "0 0 0 1 *", NOW, "2027-01-01T00:00:00Z" },
		{ "0 0 0 1 * ?", NOW, "2027-01-01T00:00:00Z" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		const char *got = next(cases[i].spec, cases[i].after);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("\"%s\" after %s: got %s, want %s", cases[i].spec, cases[i].after,
				 got, cases[i].want);
	}
}

static void test_next_feb29(void **state)
{
	(void)state;
	assert_string_equal(next("0 0 12 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T12:00:00Z");
	assert_string_equal(next("0 0 12 29 2 *", "2028-02-29T12:00:00Z"), "2032-02-29T12:00:00Z");
	/* 2100 is not a leap year: from 2097 the next is 2104, past five years */
	assert_string_equal(next("0 0 0 29 2 *", "2097-01-01T00:00:00Z"), "-2");
	assert_string_equal(next("0 0 0 29 2 *", "2099-01-01T00:00:00Z"), "2104-02-29T00:00:00Z");
	/* never: February 30th, April 31st */
	assert_string_equal(next("0 0 0 30 2 *", NOW), "-2");
	assert_string_equal(next("0 0 0 31 4 *", NOW), "-2");
}

/* robfig's dayMatches: when day-of-month or day-of-week is `*` or `?` (a step
 * above 1 clears that) both must match, otherwise either may. */
static void test_next_dom_dow(void **state)
{
	(void)state;
	/* neither is a star: the 13th OR a Friday; Friday the 11th comes first */
	assert_string_equal(next("0 0 0 13 * FRI", NOW), "2026-12-11T00:00:00Z");
	assert_string_equal(next("0 0 0 13 * FRI", "2026-12-11T00:00:00Z"),
			    "2026-12-13T00:00:00Z");
	/* day of week a star: the 13th only */
	assert_string_equal(next("0 0 0 13 * *", NOW), "2026-12-13T00:00:00Z");
	/* day of month a star or ?: Fridays only / Mondays only */
	assert_string_equal(next("0 0 0 * * FRI", NOW), "2026-12-11T00:00:00Z");
	assert_string_equal(next("0 0 0 ? * MON", NOW), "2026-12-14T00:00:00Z");
	/* `*` with a step above 1 is not a star: odd days OR Mondays -> the 9th */
	assert_string_equal(next("0 0 0 */2 * MON", NOW), "2026-12-09T00:00:00Z");
	/* `*` /1 keeps the star: every day AND Mondays */
	assert_string_equal(next("0 0 0 */1 * MON", NOW), "2026-12-14T00:00:00Z");
	/* neither a star: days 1-7 OR Sundays; from the 8th the next is Sunday the 13th */
	assert_string_equal(next("0 0 0 1-7 * SUN", NOW), "2026-12-13T00:00:00Z");
}

static void test_descriptors(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *want;
	} cases[] = {
		{ "@yearly", "2027-01-01T00:00:00Z" },	 { "@annually", "2027-01-01T00:00:00Z" },
		{ "@monthly", "2027-01-01T00:00:00Z" },	 { "@weekly", "2026-12-13T00:00:00Z" },
		{ "@daily", "2026-12-08T00:00:00Z" },	 { "@midnight", "2026-12-08T00:00:00Z" },
		{ "@hourly", "2026-12-07T06:00:00Z" },	 { "@every 1h30m", "2026-12-07T06:42:30Z" },
		{ "@every 90s", "2026-12-07T05:14:00Z" }, { "@every 1.5h", "2026-12-07T06:42:30Z" },
		/* under a second is a second; fractions of a second dropped */
		{ "@every 500ms", "2026-12-07T05:12:31Z" }, { "@every 2.7s", "2026-12-07T05:12:32Z" },
		{ "@every 0", "2026-12-07T05:12:31Z" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		const char *got = next(cases[i].spec, NOW);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("\"%s\": got %s, want %s", cases[i].spec, got, cases[i].want);
	}
	struct api_cron c;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_cron_parse("@daily", &c, &err), 0);
	assert_int_equal(c.n_fields, 0);
	assert_int_equal(api_cron_parse("0 0 0 * * *", &c, &err), 0);
	assert_int_equal(c.n_fields, 6);
	assert_int_equal(api_cron_parse("  0 0 0 * *  ", &c, &err), 0);
	assert_int_equal(c.n_fields, 5);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *msg;
	} cases[] = {
		{ "", "empty spec string" },
		{ "   ", "empty spec string" },
		{ "* * * *", "expected 5 or 6 fields" },
		{ "* * * * * * *", "found 7" },
		{ "60 * * * * *", "seconds field \"60\": end of range (60) above maximum (59)" },
		{ "* 61 * * * *", "minutes field \"61\": end of range (61) above maximum (59)" },
		{ "* * 24 * * *", "hours field \"24\": end of range (24) above maximum (23)" },
		{ "* * * 0 * *", "day-of-month field \"0\": beginning of range (0) below minimum (1)" },
		{ "* * * 32 * *", "day-of-month field \"32\"" },
		{ "* * * * 13 *", "month field \"13\": end of range (13) above maximum (12)" },
		{ "* * * * 0 *", "month field \"0\": beginning of range (0) below minimum (1)" },
		{ "* * * * * 7", "day-of-week field \"7\": end of range (7) above maximum (6)" },
		{ "* * * * FOO *", "month field \"FOO\": failed to parse int from FOO" },
		{ "* * * * * MONDAY", "day-of-week field \"MONDAY\"" },
		{ "*/0 * * * * *", "seconds field \"*/0\": step of range should be a positive number" },
		{ "5-1 * * * * *", "beginning of range (5) beyond end of range (1)" },
		{ "1/2/3 * * * * *", "too many slashes" },
		{ "1-2-3 * * * * *", "too many hyphens" },
		{ "-1 * * * * *", "seconds field \"-1\"" },
		{ "* -5 * * * *", "minutes field" },
		{ "1/ * * * * *", "seconds field \"1/\": empty number" },
		{ "* * * * * 1/-2", "negative number (-2) not allowed" },
		{ ",,, * * * * *", "seconds field \",,,\": no value" },
		{ "x * * * * *", "seconds field \"x\"" },
		{ "99999999999 * * * * *", "failed to parse int" },
		{ "@every", "unrecognized descriptor" },
		{ "@every x", "failed to parse duration \"x\"" },
		{ "@every 5", "failed to parse duration \"5\"" },
		{ "@every 5d", "failed to parse duration" },
		{ "@fortnightly", "unrecognized descriptor \"@fortnightly\"" },
		{ "TZ=Europe/Rome 0 0 0 * * *", "time zones are not supported" },
		{ "CRON_TZ=UTC 0 0 0 * * *", "time zones are not supported" },
		{ "0 0 0 * * *\n", "control character" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct api_cron c = { .every = 42 };
		struct op_err err = OP_ERR_INIT;
		if (api_cron_parse(cases[i].spec, &c, &err) != -EINVAL)
			fail_msg("\"%s\" parsed", cases[i].spec);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[i].spec, err.msg,
				 cases[i].msg);
		assert_int_equal(c.every, 42); /* untouched */
	}
	struct api_cron c;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_cron_parse(NULL, &c, &err), -EINVAL);
	char long_spec[API_CRON_MAX_LEN + 8];
	memset(long_spec, '1', sizeof(long_spec) - 1);
	long_spec[sizeof(long_spec) - 1] = '\0';
	assert_int_equal(api_cron_parse(long_spec, &c, &err), -EINVAL);
}

static void test_next_range(void **state)
{
	(void)state;
	struct api_cron c;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_cron_parse("0 0 0 * * *", &c, &err), 0);
	int64_t t = 0;
	assert_int_equal(api_cron_next(&c, -1, &t), -ERANGE);
	assert_int_equal(api_cron_next(&c, INT64_C(253402300800), &t), -ERANGE);
	assert_int_equal(api_cron_next(&c, 0, &t), 0);
	assert_int_equal(t, 86400);
	/* every second for a whole (leap) year: each step is exactly one second */
	assert_int_equal(api_cron_parse("* * * * * *", &c, &err), 0);
	int64_t from = at("2028-02-28T23:59:58Z");
	for (int64_t i = 0; i < 4; i++) {
		assert_int_equal(api_cron_next(&c, from + i, &t), 0);
		assert_int_equal(t, from + i + 1);
	}
	/* daily: 366 consecutive fire times through 2028, each 86400 apart */
	assert_int_equal(api_cron_parse("@daily", &c, &err), 0);
	int64_t prev = at("2027-12-31T00:00:00Z");
	for (int i = 0; i < 366; i++) {
		assert_int_equal(api_cron_next(&c, prev, &t), 0);
		assert_int_equal(t - prev, 86400);
		prev = t;
	}
	_cleanup_free_ char *s = api_time_rfc3339(prev);
	assert_string_equal(s, "2028-12-31T00:00:00Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_basic),   cmocka_unit_test(test_next_feb29),
		cmocka_unit_test(test_next_dom_dow), cmocka_unit_test(test_descriptors),
		cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_next_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
