/* tests/unit/test_instance_pglog.c - postgres's csvlog records as the
 * manager's JSON lines (instance/pglog.c): CSV splitting, severities, and a
 * real FIFO read by the thread. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free
#include <json-c/json.h>

#include "instance/internal.h"
#include "instance/pglog.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"
#include "test_tmpdir.h"

static void test_split(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t n;
		const char *want[5];
	} rows[] = {
		{ "", 1, { "" } },
		{ "a,b,c", 3, { "a", "b", "c" } },
		{ ",,", 3, { "", "", "" } },
		{ "\"x,y\",z", 2, { "x,y", "z" } },
		{ "\"say \"\"hi\"\"\",2", 2, { "say \"hi\"", "2" } },
		{ "\"two\nlines\",", 2, { "two\nlines", "" } },
		{ "\"unterminated,x", 1, { "unterminated,x" } },
		{ "\"q\"junk,b", 2, { "q", "b" } },
		{ "1,2,3,4,5,6,7", 5, { "1", "2", "3", "4", "5" } }, /* max 5: the rest dropped */
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		char *rec = op_strdup(rows[i].in);
		char *f[5];
		size_t n = inst_pglog_split(rec, strlen(rec), f, 5);
		if (n != rows[i].n)
			fail_msg("row %zu: %zu fields, want %zu", i, n, rows[i].n);
		for (size_t k = 0; k < n; k++)
			if (strcmp(f[k], rows[i].want[k]) != 0)
				fail_msg("row %zu field %zu: \"%s\", want \"%s\"", i, k, f[k],
					 rows[i].want[k]);
		free(rec);
	}
}

static void test_level(void **state)
{
	(void)state;
	static const struct {
		const char *severity;
		enum op_log_level level;
	} rows[] = {
		{ "LOG", OP_LOG_INFO },	     { "NOTICE", OP_LOG_INFO },	 { "INFO", OP_LOG_INFO },
		{ "WARNING", OP_LOG_WARN },  { "ERROR", OP_LOG_ERROR },	 { "FATAL", OP_LOG_ERROR },
		{ "PANIC", OP_LOG_ERROR },   { "DEBUG1", OP_LOG_DEBUG }, { "DEBUG5", OP_LOG_DEBUG },
		{ "STATEMENT", OP_LOG_INFO }, { "", OP_LOG_INFO },	 { NULL, OP_LOG_INFO },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++)
		if (inst_pglog_level(rows[i].severity) != rows[i].level)
			fail_msg("row %zu (%s)", i, rows[i].severity ? rows[i].severity : "NULL");
}

/* Every line the log fd got, parsed; the capture file is closed. */
static json_object *lines_of(FILE *f)
{
	json_object *arr = json_object_new_array();
	char line[65536];
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		json_object *o = json_tokener_parse(line);
		if (!o)
			fail_msg("not JSON: %s", line);
		json_object_array_add(arr, o);
	}
	fclose(f);
	return arr;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* A real FIFO: records written by a writer that comes and goes (postgres
 * restarting), one split over two writes, one with a quoted newline, one
 * over the record cap. */
static void test_fifo(void **state)
{
	(void)state;
	FILE *cap = tmpfile();
	assert_non_null(cap);
	op_log_set_fd(fileno(cap));
	op_log_set_level(OP_LOG_INFO);
	char *logdir = at("log");
	assert_int_equal(op_mkdir_p(logdir, 0700, NULL), 0);
	/* an older manager's regular file is replaced */
	put("log/postgres.csv", "old records\n");

	struct inst_pglog l = INST_PGLOG_INIT;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pglog_start(&l, logdir, &err), 0);
	char *path = at("log/postgres.csv");
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_true(exists("log/postgres.csv"));

	static const char r1[] =
		"2026-12-05 10:00:00.001 UTC,\"app\",\"appdb\",42,\"10.0.0.1:5000\",abc.1,1,"
		"\"INSERT\",2026-12-05 10:00:00 UTC,3/4,0,ERROR,23505,\"duplicate key value "
		"violates unique constraint \"\"t_pkey\"\"\",\"Key (id)=(1) already exists.\",,,,,"
		"\"insert into t values (1)\",,,\"psql\",\"client backend\",,0\n";
	static const char r2[] = "2026-12-05 10:00:01.000 UTC,,,7,,abc.2,1,,2026-12-05 10:00:00 "
				 "UTC,,0,LOG,00000,\"two\nlines\",,,,,,,,,\"\",\"checkpointer\",,0\n";
	int w = open(path, O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(write(w, r1, 40), 40); /* a record in two writes */
	assert_int_equal(write(w, r1 + 40, sizeof(r1) - 1 - 40), (ssize_t)(sizeof(r1) - 1 - 40));
	close(w); /* postgres restarts: its end closes */
	w = open(path, O_WRONLY);
	assert_true(w >= 0);
	assert_int_equal(write(w, r2, sizeof(r2) - 1), (ssize_t)(sizeof(r2) - 1));
	/* a record over the cap: cut, and the next one still read */
	char *big = op_malloc(INST_PGLOG_RECORD_MAX + 100);
	memset(big, 'x', INST_PGLOG_RECORD_MAX + 98);
	memcpy(big, "t,,,1,,s,1,,t,,0,WARNING,01000,", 31);
	big[INST_PGLOG_RECORD_MAX + 98] = '\n';
	size_t off = 0, total = INST_PGLOG_RECORD_MAX + 99;
	while (off < total) { /* the FIFO holds 64 kB: the reader drains it meanwhile */
		ssize_t n = write(w, big + off, total - off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	free(big);
	static const char r4[] = "t,,,2,,s,2,,t,,0,FATAL,57P01,\"bye\"\n";
	assert_int_equal(write(w, r4, sizeof(r4) - 1), (ssize_t)(sizeof(r4) - 1));
	close(w);
	inst_pglog_stop(&l); /* reads what is in the FIFO first */
	assert_int_equal(l.fd, -1);
	op_log_set_fd(2);

	json_object *lines = lines_of(cap);
	assert_int_equal(json_object_array_length(lines), 4);
	json_object *a = json_object_array_get_idx(lines, 0);
	assert_string_equal(str(a, "logger"), "postgres");
	assert_string_equal(str(a, "level"), "error");
	assert_string_equal(str(a, "msg"), "duplicate key value violates unique constraint \"t_pkey\"");
	assert_string_equal(str(a, "sql_state_code"), "23505");
	assert_string_equal(str(a, "user_name"), "app");
	assert_string_equal(str(a, "database_name"), "appdb");
	assert_string_equal(str(a, "detail"), "Key (id)=(1) already exists.");
	assert_string_equal(str(a, "query"), "insert into t values (1)");
	assert_string_equal(str(a, "backend_type"), "client backend");
	assert_null(str(a, "hint")); /* empty columns are left out */
	assert_null(str(a, "message"));
	json_object *b = json_object_array_get_idx(lines, 1);
	assert_string_equal(str(b, "level"), "info");
	assert_string_equal(str(b, "msg"), "two\nlines");
	assert_null(str(b, "application_name"));
	json_object *c = json_object_array_get_idx(lines, 2);
	assert_string_equal(str(c, "level"), "warn");
	const char *m = str(c, "msg");
	assert_int_equal(strlen(m), INST_PGLOG_FIELD_MAX);
	assert_string_equal(m + INST_PGLOG_FIELD_MAX - 3, "...");
	json_object *d = json_object_array_get_idx(lines, 3);
	assert_string_equal(str(d, "msg"), "bye");
	assert_string_equal(str(d, "level"), "error");
	json_object_put(lines);

	/* started again on the FIFO left behind */
	assert_int_equal(inst_pglog_start(&l, logdir, &err), 0);
	inst_pglog_stop(&l);
	inst_pglog_stop(&l); /* twice: harmless */
	free(path);
	free(logdir);
}

static void test_start_fails(void **state)
{
	(void)state;
	struct inst_pglog l = INST_PGLOG_INIT;
	struct op_err err = OP_ERR_INIT;
	char *missing = at("no/such/dir");
	assert_int_equal(inst_pglog_start(&l, missing, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "postgres.csv"));
	assert_int_equal(l.fd, -1);
	inst_pglog_stop(&l); /* never started: harmless */
	free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_level),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_start_fails),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
