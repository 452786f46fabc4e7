/* tests/unit/test_cmd_flags.c - cmd/flags.c, the table-driven flag parser the
 * subcommands use (compiled in directly: cmd/ is an executable, not a library). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "cmd/flags.c"

struct opts {
	const char *name;
	struct cmd_strings files;
	unsigned n;
	enum op_log_level level;
	bool dry;
};

static const struct cmd_flag flags[] = {
	{ "name", 0, CMD_FLAG_STRING, offsetof(struct opts, name), 0, "NAME", "a name" },
	{ "file", 'f', CMD_FLAG_STRINGS, offsetof(struct opts, files), 0, "FILE", "files" },
	{ "count", 'n', CMD_FLAG_UINT, offsetof(struct opts, n), 100, "N", "a count" },
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, offsetof(struct opts, level), 0, "L", "level" },
	{ "dry", 0, CMD_FLAG_BOOL, offsetof(struct opts, dry), 0, NULL, "a switch" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

/* Runs the parser on a NULL-terminated argument list (argv[0] = "sub"), with
 * stdout/stderr silenced. */
static int parse(struct opts *o, int *first_arg, ...)
{
	char *argv[16] = { (char *)"sub" };
	int argc = 1;
	va_list ap;
	va_start(ap, first_arg);
	for (char *a; argc < 15 && (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	int out = dup(1), errfd = dup(2);
	FILE *null = fopen("/dev/null", "w");
	dup2(fileno(null), 1);
	dup2(fileno(null), 2);
	int r = cmd_parse_flags(flags, OP_ARRAY_SIZE(flags), "usage\n", argc, argv, o, first_arg);
	fflush(stdout);
	fflush(stderr);
	dup2(out, 1);
	dup2(errfd, 2);
	close(out);
	close(errfd);
	fclose(null);
	return r;
}

static void test_values(void **state)
{
	struct opts o = { .level = OP_LOG_INFO };
	assert_int_equal(parse(&o, NULL, "--name", "x", "-f", "a", "--file=b", "-n", "42",
			       "--log-level", "debug", NULL),
			 0);
	assert_string_equal(o.name, "x");
	assert_int_equal(o.files.n, 2);
	assert_string_equal(o.files.v[0], "a");
	assert_string_equal(o.files.v[1], "b");
	assert_int_equal(o.n, 42);
	assert_int_equal(o.level, OP_LOG_DEBUG);
	assert_false(o.dry);
	cmd_strings_done(&o.files);
	assert_null(o.files.v);
	/* a switch takes no value: the next word stays a positional */
	int first = -1;
	assert_int_equal(parse(&o, &first, "--dry", "pos", NULL), 0);
	assert_true(o.dry);
	assert_int_equal(first, 2);
	assert_int_equal(parse(&o, NULL, "--dry=yes", NULL), CMD_FLAGS_USAGE);
}

static void test_usage_errors(void **state)
{
	struct opts o = { 0 };
	assert_int_equal(parse(&o, NULL, "--nope", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "-z", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "--name", NULL), CMD_FLAGS_USAGE); /* missing value */
	assert_int_equal(parse(&o, NULL, "-n", "101", NULL), CMD_FLAGS_USAGE); /* over max */
	assert_int_equal(parse(&o, NULL, "-n", "-1", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "-n", "1x", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "-n", "", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "-n", "99999999999999999999", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "--log-level", "loud", NULL), CMD_FLAGS_USAGE);
	assert_int_equal(parse(&o, NULL, "stray", NULL), CMD_FLAGS_USAGE); /* no positionals */
	assert_int_equal(o.n, 0); /* rejected values are not stored */
	cmd_strings_done(&o.files);
}

static void test_help_and_positionals(void **state)
{
	struct opts o = { 0 };
	assert_int_equal(parse(&o, NULL, "--help", NULL), CMD_FLAGS_HELP);
	assert_int_equal(parse(&o, NULL, "-h", NULL), CMD_FLAGS_HELP);

	int first = -1;
	/* GNU getopt moves positionals to the end: a glob after -f works. */
	assert_int_equal(parse(&o, &first, "-f", "a", "b", "c", "-n", "3", NULL), 0);
	assert_int_equal(first, 5);
	assert_int_equal(o.files.n, 1);
	assert_int_equal(o.n, 3);
	cmd_strings_done(&o.files);
	assert_int_equal(parse(&o, &first, "-n", "4", NULL), 0);
	assert_int_equal(first, 3); /* == argc: none */
}

static void test_print_flags(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	cmd_print_flags(f, flags, OP_ARRAY_SIZE(flags));
	fclose(f);
	assert_non_null(strstr(buf, "  -f, --file FILE"));
	assert_non_null(strstr(buf, "      --name NAME"));
	assert_non_null(strstr(buf, "  -h, --help"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_help_and_positionals),
		cmocka_unit_test(test_print_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
