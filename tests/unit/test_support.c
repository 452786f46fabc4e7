/* tests/unit/test_support.c - support/ core: op_buf caps and escaping,
 * op_err first-wins and prefixes, the JSON-lines logger, FNV-1a 64. (json, yaml and
 * base64 have their own test_support_<part>.c files.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/err.h"
#include "support/hash.h"
#include "support/json.h"
#include "support/log.h"
#include "support/memfile.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

/* ---- op_buf ---------------------------------------------------------------- */

static void test_buf_basics(void **state)
{
	(void)state;
	struct op_buf b = OP_BUF_INIT(100);
	assert_string_equal(op_buf_str(&b), "");
	assert_null(b.data);
	assert_int_equal(op_buf_adds(&b, "abc"), 0);
	assert_int_equal(op_buf_addc(&b, '-'), 0);
	assert_int_equal(op_buf_addf(&b, "%d/%s", 42, "x"), 0);
	assert_int_equal(op_buf_add(&b, "\0z", 2), 0); /* binary-safe */
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.data, "abc-42/x\0z", 10);
	assert_int_equal(b.data[b.len], '\0');
	op_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(op_buf_str(&b), "");
	assert_int_equal(op_buf_adds(&b, "again"), 0);
	assert_string_equal(op_buf_str(&b), "again");
	op_buf_done(&b);
	assert_null(b.data);
	op_buf_done(&b); /* twice is fine */
	op_buf_done(NULL);
	/* Growth past the first allocation keeps the contents. */
	struct op_buf big = OP_BUF_INIT(1u << 20);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(op_buf_addf(&big, "%04d", i % 10000), 0);
	assert_int_equal(big.len, 40000);
	assert_memory_equal(big.data + 4 * 9999, "9999", 4);
	op_buf_done(&big);
}

static void test_buf_caps(void **state)
{
	(void)state;
	struct op_buf b;
	op_buf_init(&b, 8);
	assert_int_equal(op_buf_adds(&b, "12345678"), 0); /* exactly the cap */
	assert_int_equal(b.len, 8);
	/* One more byte fails, frees the contents and leaves it empty. */
	assert_int_equal(op_buf_addc(&b, '9'), -EMSGSIZE);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	assert_int_equal(b.max, 8); /* the cap itself stays */
	assert_string_equal(op_buf_str(&b), "");
	/* Reusable after a failure. */
	assert_int_equal(op_buf_adds(&b, "ok"), 0);
	assert_string_equal(op_buf_str(&b), "ok");
	/* Formatted appends obey the cap too. */
	assert_int_equal(op_buf_addf(&b, "%s", "toolongvalue"), -EMSGSIZE);
	assert_null(b.data);
	/* A single huge add cannot overflow the length arithmetic. */
	assert_int_equal(op_buf_add(&b, "x", SIZE_MAX), -EMSGSIZE);
	struct op_buf z = OP_BUF_INIT(0);
	assert_int_equal(op_buf_add(&z, "", 0), 0);
	assert_int_equal(op_buf_addc(&z, 'a'), -EMSGSIZE);
	op_buf_done(&z);
	op_buf_done(&b);
}

static void test_buf_take(void **state)
{
	(void)state;
	struct op_buf b = OP_BUF_INIT(64);
	size_t len = 99;
	char *s = op_buf_take(&b, &len); /* empty: "" not NULL */
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	assert_int_equal(op_buf_adds(&b, "hello"), 0);
	s = op_buf_take(&b, &len);
	assert_string_equal(s, "hello");
	assert_int_equal(len, 5);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	free(s);
	s = op_buf_take(&b, NULL);
	free(s);
}

static char *json_str(const char *in)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_buf_add_json_str(&b, in), 0);
	return op_buf_take(&b, NULL);
}

static void test_buf_json_escaping(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} rows[] = {
		{ "", "\"\"" },
		{ "plain", "\"plain\"" },
		{ "q\"b\\", "\"q\\\"b\\\\\"" },
		{ "a\nb\rc\td", "\"a\\nb\\rc\\td\"" },
		{ "\x01\x1f\b\f", "\"\\u0001\\u001f\\u0008\\u000c\"" },
		{ "/ \x7f", "\"/ \x7f\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		/* invalid UTF-8: lone continuation, truncated, overlong, surrogate, > U+10FFFF */
		{ "a\x80z", "\"a\\ufffdz\"" },
		{ "\xc3", "\"\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		_cleanup_free_ char *got = json_str(rows[i].in);
		if (strcmp(got, rows[i].out) != 0)
			fail_msg("row %zu: got %s want %s", i, got, rows[i].out);
		/* Every output parses back as JSON. */
		json_object *o = NULL;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(op_json_parse(got, strlen(got), 4, &o, &err), 0);
		assert_true(json_object_is_type(o, json_type_string));
		json_object_put(o);
	}
	/* Escaping obeys the cap: 3 bytes of input, 8 of output. */
	struct op_buf b = OP_BUF_INIT(7);
	assert_int_equal(op_buf_add_json_str(&b, "\"\"\""), -EMSGSIZE);
	assert_null(b.data);
}

static void test_utf8_valid(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t len;
		bool valid;
	} rows[] = {
		{ "", 0, true },
		{ "a\0b", 3, true }, /* NUL is a character */
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, true },
		{ "\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7, true }, /* U+FFFF, U+10FFFF */
		{ "\xc3\xa9", 1, false },			  /* truncated by len, not by NUL */
		{ "\xe2\x82\xac", 2, false },
		{ "\xf0\x9f\x98\x80", 3, false },
		{ "a\x80", 2, false },				  /* lone continuation */
		{ "\xc0\xaf", 2, false },			  /* overlong */
		{ "\xe0\x80\xaf", 3, false },
		{ "\xed\xa0\x80", 3, false },			  /* U+D800 */
		{ "\xed\xb1\xbc", 3, false },			  /* U+DC7C (found by fuzz_yaml) */
		{ "\xf4\x90\x80\x80", 4, false },		  /* past U+10FFFF */
		{ "\xf9\xac", 2, false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++)
		if (op_utf8_valid(rows[i].s, rows[i].len) != rows[i].valid)
			fail_msg("row %zu: want %s", i, rows[i].valid ? "valid" : "invalid");
}

/* ---- op_err ---------------------------------------------------------------- */

static int fails_with(struct op_err *err, int code, const char *what)
{
	return op_err_set(err, code, "cannot %s", what);
}

static void test_err_first_wins(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	assert_false(op_err_isset(&err));
	assert_int_equal(fails_with(&err, -ENOENT, "open 'a'"), -ENOENT);
	assert_true(op_err_isset(&err));
	/* A later failure does not overwrite the root cause... */
	assert_int_equal(fails_with(&err, -EIO, "write 'b'"), -EIO);
	assert_int_equal(err.code, -ENOENT);
	assert_string_equal(err.msg, "cannot open 'a'");
	/* ...and NULL err is accepted everywhere. */
	assert_int_equal(fails_with(NULL, -EINVAL, "x"), -EINVAL);
	assert_false(op_err_isset(NULL));
	assert_int_equal(op_err_prefix(NULL, "ctx"), 0);
	op_err_clear(NULL);
	op_err_clear(&err);
	assert_false(op_err_isset(&err));
	assert_string_equal(err.msg, "");
	/* Long messages are truncated, not overflowed. */
	char long_name[2000];
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	fails_with(&err, -EINVAL, long_name);
	assert_int_equal(strlen(err.msg), OP_ERR_MSG_MAX - 1);
}

static void test_err_prefix(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	/* Prefixing an unset error is a no-op. */
	assert_int_equal(op_err_prefix(&err, "while %s", "x"), 0);
	assert_string_equal(err.msg, "");
	assert_false(op_err_isset(&err));

	op_err_set(&err, -EINVAL, "spec.instances: must be positive");
	assert_int_equal(op_err_prefix(&err, "cluster %s/%s", "ns", "c1"), -EINVAL);
	assert_string_equal(err.msg, "cluster ns/c1: spec.instances: must be positive");
	assert_int_equal(op_err_prefix(&err, "admission"), -EINVAL);
	assert_string_equal(err.msg, "admission: cluster ns/c1: spec.instances: must be positive");
	/* A prefix that fills the buffer truncates the tail, never overflows. */
	char big[OP_ERR_MSG_MAX + 10];
	memset(big, 'p', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	op_err_prefix(&err, "%s", big);
	assert_true(strlen(err.msg) < OP_ERR_MSG_MAX);
	assert_int_equal(err.code, -EINVAL);
}

/* ---- logger ------------------------------------------------------------------ */

struct log_capture {
	FILE *f;
};

static int log_setup(void **state)
{
	struct log_capture *c = calloc(1, sizeof(*c));
	c->f = tmpfile();
	assert_non_null(c->f);
	op_log_set_fd(fileno(c->f));
	op_log_set_level(OP_LOG_INFO);
	op_log_set_component(NULL);
	*state = c;
	return 0;
}

static int log_teardown(void **state)
{
	struct log_capture *c = *state;
	op_log_set_fd(2);
	op_log_set_level(OP_LOG_INFO);
	op_log_set_component(NULL);
	fclose(c->f);
	free(c);
	return 0;
}

/* Everything written so far, then truncates the capture. */
static char *log_take(struct log_capture *c)
{
	int fd = fileno(c->f);
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	char *s = op_malloc((size_t)end + 1);
	assert_int_equal(pread(fd, s, (size_t)end, 0), end);
	s[end] = '\0';
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return s;
}

static json_object *parse_line(const char *line)
{
	size_t n = strlen(line);
	assert_true(n > 0);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', n - 1)); /* exactly one line */
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(line, n, 8, &o, &err) != 0)
		fail_msg("log line is not JSON (%s): %s", err.msg, line);
	return o;
}

static void test_log_line(void **state)
{
	struct log_capture *c = *state;
	op_log_set_component("webhook");
	op_log_info("cluster \"c1\" rejected\n(see below)", "namespace", "default", "reason",
		    "bad\tvalue \x01", "empty", NULL);
	_cleanup_free_ char *line = log_take(c);
	json_object *o = parse_line(line);
	assert_string_equal(op_json_str_at(o, "level"), "info");
	assert_string_equal(op_json_str_at(o, "logger"), "webhook");
	assert_string_equal(op_json_str_at(o, "msg"), "cluster \"c1\" rejected\n(see below)");
	assert_string_equal(op_json_str_at(o, "namespace"), "default");
	assert_string_equal(op_json_str_at(o, "reason"), "bad\tvalue \x01");
	assert_string_equal(op_json_str_at(o, "empty"), ""); /* NULL value -> "" */
	/* ts: RFC 3339 UTC with milliseconds. */
	const char *ts = op_json_str_at(o, "ts");
	assert_non_null(ts);
	assert_int_equal(strlen(ts), strlen("2026-12-02T10:40:09.123Z"));
	assert_int_equal(ts[10], 'T');
	assert_int_equal(ts[19], '.');
	assert_int_equal(ts[23], 'Z');
	/* Key order: ts, level, logger, msg first. */
	assert_true(strstr(line, "\"ts\"") < strstr(line, "\"level\""));
	assert_true(strstr(line, "\"logger\"") < strstr(line, "\"msg\""));
	assert_true(strstr(line, "\"msg\"") < strstr(line, "\"namespace\""));
	json_object_put(o);

	/* A component with quotes is escaped too. */
	op_log_set_component("we\"ird");
	op_log_error("x");
	_cleanup_free_ char *line2 = log_take(c);
	o = parse_line(line2);
	assert_string_equal(op_json_str_at(o, "logger"), "we\"ird");
	assert_string_equal(op_json_str_at(o, "level"), "error");
	json_object_put(o);
}

static int side_effects;
static const char *counted(const char *s)
{
	side_effects++;
	return s;
}

static void test_log_levels(void **state)
{
	struct log_capture *c = *state;
	op_log_set_level(OP_LOG_WARN);
	assert_int_equal(op_log_get_level(), OP_LOG_WARN);
	assert_false(op_log_enabled(OP_LOG_INFO));
	assert_true(op_log_enabled(OP_LOG_ERROR));
	side_effects = 0;
	op_log_debug("hidden", "k", counted("v")); /* not even evaluated */
	assert_int_equal(side_effects, 0);
	op_log_info("hidden");
	op_log_warn("shown", "k", "v");
	_cleanup_free_ char *out = log_take(c);
	assert_null(strstr(out, "hidden"));
	json_object *o = parse_line(out);
	assert_string_equal(op_json_str_at(o, "level"), "warn");
	json_object_put(o);

	op_log_set_level(OP_LOG_DEBUG);
	op_log_debug("now shown", "k", counted("v"));
	assert_int_equal(side_effects, 1);
	_cleanup_free_ char *dbg = log_take(c);
	o = parse_line(dbg);
	assert_string_equal(op_json_str_at(o, "level"), "debug");
	json_object_put(o);

	enum op_log_level lvl = OP_LOG_ERROR;
	assert_int_equal(op_log_parse_level("DEBUG", &lvl), 0);
	assert_int_equal(lvl, OP_LOG_DEBUG);
	assert_int_equal(op_log_parse_level("warn", &lvl), 0);
	assert_int_equal(lvl, OP_LOG_WARN);
	assert_int_equal(op_log_parse_level("verbose", &lvl), -EINVAL);
	assert_int_equal(op_log_parse_level(NULL, &lvl), -EINVAL);
	assert_int_equal(lvl, OP_LOG_WARN); /* untouched on failure */
}

static void test_log_oversized(void **state)
{
	struct log_capture *c = *state;
	size_t n = OP_BUF_MAX_SMALL + 10;
	char *huge = op_malloc(n + 1);
	memset(huge, 'x', n);
	huge[n] = '\0';
	op_log_error("big", "payload", huge);
	free(huge);
	_cleanup_free_ char *out = log_take(c);
	json_object *o = parse_line(out);
	assert_string_equal(op_json_str_at(o, "msg"), "log line over size cap");
	json_object_put(o);
}

/* A memory file is readable by path (twice: each open starts at 0), refuses
 * writes (sealed), is gone once closed, and takes no filesystem space. */
static void test_memfile(void **state)
{
	(void)state;
	struct op_memfile m = OP_MEMFILE_INIT;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_memfile_open(&m, "t.key", "secret", 6, &err), 0);
	assert_true(m.fd >= 0);
	assert_non_null(strstr(m.path, "/proc/self/fd/"));
	for (int pass = 0; pass < 2; pass++) {
		char buf[16] = { 0 };
		int fd = open(m.path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, buf, sizeof(buf)), 6);
		assert_string_equal(buf, "secret");
		close(fd);
	}
	int wfd = open(m.path, O_WRONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	assert_int_equal(write(wfd, "x", 1), -1);
	assert_int_equal(errno, EPERM); /* F_SEAL_WRITE */
	close(wfd);
	char path[sizeof(m.path)];
	memcpy(path, m.path, sizeof(path));
	op_memfile_close(&m);
	assert_int_equal(m.fd, -1);
	op_memfile_close(&m); /* idempotent */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(op_memfile_open(&m, "empty", "", 0, &err), -EINVAL);
	assert_int_equal(m.fd, -1);
}

/* ---- FNV-1a 64 ------------------------------------------------------------- */

/* The published test vectors (draft-eastlake-fnv), chaining, the hex form. */
static void test_fnv1a64(void **state)
{
	(void)state;
	assert_true(op_fnv1a64(OP_FNV1A64_INIT, "", 0) == 0xcbf29ce484222325ull);
	assert_true(op_fnv1a64(OP_FNV1A64_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(op_fnv1a64(OP_FNV1A64_INIT, "foobar", 6) == 0x85944171f73967e8ull);
	assert_true(op_fnv1a64(op_fnv1a64(OP_FNV1A64_INIT, "foo", 3), "bar", 3) ==
		    0x85944171f73967e8ull);
	char *h = op_fingerprint("foobar");
	assert_string_equal(h, "85944171f73967e8");
	free(h);
	h = op_fingerprint("a");
	assert_string_equal(h, "af63dc4c8601ec8c");
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_basics),
		cmocka_unit_test(test_memfile),
		cmocka_unit_test(test_buf_caps),
		cmocka_unit_test(test_buf_take),
		cmocka_unit_test(test_buf_json_escaping),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_err_first_wins),
		cmocka_unit_test(test_err_prefix),
		cmocka_unit_test(test_fnv1a64),
		cmocka_unit_test_setup_teardown(test_log_line, log_setup, log_teardown),
		cmocka_unit_test_setup_teardown(test_log_levels, log_setup, log_teardown),
		cmocka_unit_test_setup_teardown(test_log_oversized, log_setup, log_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
