/* tests/unit/test_instance_pgbin.c - finding the PostgreSQL programs of the
 * Cluster's major (instance/pgbin.c) with fake bindirs of shell scripts whose
 * `postgres -V` prints a chosen version: explicit dir, PATH (through a
 * symlink), the major check against the image and PG_VERSION, missing
 * programs, and the version line parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/json.h"

static char dir[] = "/tmp/pgop-test-pgbin-XXXXXX";

static const char *const progs[] = { "postgres", "initdb", "pg_ctl", "pg_basebackup",
				     "pg_rewind" };

static void write_exec(const char *path, const char *content)
{
	assert_int_equal(inst_write_file(path, content, strlen(content), 0755, NULL), 0);
}

/* dir/<name>/ with every program; postgres -V prints version. Owned path. */
static char *fake_bindir(const char *name, const char *version, const char *skip)
{
	char *d = op_asprintf("%s/%s", dir, name);
	assert_int_equal(op_mkdir_p(d, 0755, NULL), 0);
	for (size_t i = 0; i < OP_ARRAY_SIZE(progs); i++) {
		if (skip && strcmp(skip, progs[i]) == 0)
			continue;
		char *p = op_asprintf("%s/%s", d, progs[i]);
		char *body = op_asprintf("#!/bin/sh\necho 'postgres (PostgreSQL) %s'\n", version);
		write_exec(p, body);
		free(body);
		free(p);
	}
	return d;
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char *cmd = op_asprintf("rm -rf '%s'", dir);
	int r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -1;
}

static void test_version_line(void **state)
{
	static const struct {
		const char *in;
		int major;
	} t[] = {
		{ "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)\n", 15 },
		{ "postgres (PostgreSQL) 16.4\n", 16 },
		{ "postgres (PostgreSQL) 17beta1\n", 17 },
		{ "postgres (PostgreSQL) 18.0", 18 },
		{ "PostgreSQL 17.2", 17 },
		{ "postgres (PostgreSQL) 9.6.24", 0 }, /* below 10: not a major we run */
		{ "postgres (PostgreSQL) x", 0 },
		{ "bash: postgres: not found", 0 },
		{ "postgres (PostgreSQL) 12345", 0 },
		{ "", 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++)
		if (inst_pg_version_major(t[i].in) != t[i].major)
			fail_msg("%s: got %d, want %d", t[i].in, inst_pg_version_major(t[i].in),
				 t[i].major);
	assert_int_equal(inst_pg_version_major(NULL), 0);
}

static void test_explicit_dir(void **state)
{
	char *d16 = fake_bindir("pg16", "16.4", NULL);
	char *bindir = NULL;
	int major = 0;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pg_locate(d16, "", 16, "image x:16", &bindir, &major, &err), 0);
	assert_string_equal(bindir, d16);
	assert_int_equal(major, 16);
	free(bindir);
	bindir = NULL;
	/* any major */
	assert_int_equal(inst_pg_locate(d16, "", 0, NULL, &bindir, &major, &err), 0);
	assert_int_equal(major, 16);
	free(bindir);
	bindir = NULL;
	/* the image wants 17: both majors named */
	assert_int_equal(inst_pg_locate(d16, "", 17, "image ghcr.io/x/postgresql:17", &bindir,
					&major, &err),
			 -ENOENT);
	assert_null(bindir);
	assert_non_null(strstr(err.msg, "PostgreSQL 17 (image ghcr.io/x/postgresql:17)"));
	assert_non_null(strstr(err.msg, "is PostgreSQL 16"));
	free(d16);
}

static void test_missing_program(void **state)
{
	char *d = fake_bindir("norewind", "16.1", "pg_rewind");
	char *bindir = NULL;
	int major = 0;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pg_locate(d, "", 16, "x", &bindir, &major, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no pg_rewind"));
	free(d);
}

static void test_path_through_symlink(void **state)
{
	char *d18 = fake_bindir("pg18", "18.0", NULL);
	char *links = op_asprintf("%s/links", dir);
	assert_int_equal(op_mkdir_p(links, 0755, NULL), 0);
	char *src = op_asprintf("%s/postgres", d18);
	char *lnk = op_asprintf("%s/postgres", links);
	assert_int_equal(symlink(src, lnk), 0);
	char *path = op_asprintf("/nonexistent-pgop:%s:/usr/bin", links);
	char *bindir = NULL;
	int major = 0;
	struct op_err err = OP_ERR_INIT;
	/* the link's target directory, which holds initdb & co. */
	assert_int_equal(inst_pg_locate(NULL, path, 18, "image x:18", &bindir, &major, &err), 0);
	char *real = realpath(d18, NULL);
	assert_string_equal(bindir, real);
	assert_int_equal(major, 18);
	free(bindir);
	free(real);
	free(path);
	free(lnk);
	free(src);
	free(links);
	free(d18);
}

static void test_path_wrong_major_falls_through(void **state)
{
	/* PATH holds 13 only; the fallbacks (pg_config, /usr/lib/postgresql/42/bin)
	 * have no 42 either: the error names the candidates */
	char *d13 = fake_bindir("pg13", "13.9", NULL);
	char *bindir = NULL;
	int major = 0;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pg_locate(NULL, d13, 42, "image x:42", &bindir, &major, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "PostgreSQL 42 (image x:42) not found"));
	assert_non_null(strstr(err.msg, "is PostgreSQL 13"));
	assert_non_null(strstr(err.msg, "/usr/lib/postgresql/42/bin: no postgres"));
	free(d13);
}

static struct api_cluster *cluster(const char *image)
{
	char *js = op_asprintf("{\"metadata\":{\"name\":\"c\"},\"spec\":{\"imageName\":\"%s\"}}",
			       image);
	json_object *o = json_tokener_parse(js);
	assert_non_null(o);
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, NULL), 0);
	json_object_put(o);
	free(js);
	return c;
}

static void test_paths_locate(void **state)
{
	char *d16 = fake_bindir("loc16", "16.2", NULL);
	char *pgdata = op_asprintf("%s/pgdata", dir);
	assert_int_equal(op_mkdir_p(pgdata, 0700, NULL), 0);
	char *ver = op_asprintf("%s/PG_VERSION", pgdata);
	assert_int_equal(inst_write_file(ver, "15\n", 3, 0600, NULL), 0);
	char *old_path = op_strdup(getenv("PATH"));
	struct api_cluster *c16 = cluster("ghcr.io/cloudnative-pg/postgresql:16.2");
	struct api_cluster *c17 = cluster("ghcr.io/cloudnative-pg/postgresql:17");
	struct op_err err = OP_ERR_INIT;
	char *owned = NULL;

	/* init/join: the image's major decides */
	struct inst_paths p = { .pgdata = pgdata, .pg_bindir = d16 };
	assert_int_equal(inst_paths_locate(&p, c16, false, &owned, &err), 0);
	assert_int_equal(p.pg_major, 16);
	assert_string_equal(p.pg_bindir, d16);
	assert_ptr_equal(p.pg_bindir, owned);
	assert_true(strncmp(getenv("PATH"), d16, strlen(d16)) == 0); /* prepended */
	free(owned);
	owned = NULL;
	p = (struct inst_paths){ .pgdata = pgdata, .pg_bindir = d16 };
	err = (struct op_err)OP_ERR_INIT;
	assert_int_equal(inst_paths_locate(&p, c17, false, &owned, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "PostgreSQL 17 (image ghcr.io/cloudnative-pg/postgresql:17)"));
	/* --pg-major wins over the image */
	p = (struct inst_paths){ .pgdata = pgdata, .pg_bindir = d16, .pg_major = 16 };
	assert_int_equal(inst_paths_locate(&p, c17, false, &owned, &err), 0);
	free(owned);
	owned = NULL;

	/* run: PG_VERSION 15 against an image of 16 */
	err = (struct op_err)OP_ERR_INIT;
	p = (struct inst_paths){ .pgdata = pgdata, .pg_bindir = d16 };
	assert_int_equal(inst_paths_locate(&p, c16, true, &owned, &err), -EINVAL);
	if (!strstr(err.msg, "PostgreSQL 15 data directory"))
		fail_msg("%s", err.msg);
	assert_non_null(strstr(err.msg, "PostgreSQL 16 (image"));
	/* run with no image: PG_VERSION decides, and 16 binaries do not fit 15 */
	err = (struct op_err)OP_ERR_INIT;
	struct api_cluster *none = cluster("");
	p = (struct inst_paths){ .pgdata = pgdata, .pg_bindir = d16 };
	assert_int_equal(inst_paths_locate(&p, none, true, &owned, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "PostgreSQL 15 (PG_VERSION)"));
	assert_int_equal(inst_write_file(ver, "16\n", 3, 0600, NULL), 0);
	p = (struct inst_paths){ .pgdata = pgdata, .pg_bindir = d16 };
	assert_int_equal(inst_paths_locate(&p, none, true, &owned, &err), 0);
	assert_int_equal(p.pg_major, 16);
	free(owned);
	/* a garbled PG_VERSION */
	assert_int_equal(inst_write_file(ver, "x\n", 2, 0600, NULL), 0);
	assert_int_equal(inst_pgdata_major(pgdata, &p.pg_major, &err), -EINVAL);

	setenv("PATH", old_path, 1);
	free(old_path);
	api_cluster_free(none);
	api_cluster_free(c16);
	api_cluster_free(c17);
	free(ver);
	free(pgdata);
	free(d16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_line),
		cmocka_unit_test(test_explicit_dir),
		cmocka_unit_test(test_missing_program),
		cmocka_unit_test(test_path_through_symlink),
		cmocka_unit_test(test_path_wrong_major_falls_through),
		cmocka_unit_test(test_paths_locate),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
