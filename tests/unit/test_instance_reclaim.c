/* tests/unit/test_instance_reclaim.c - a retried init/join starts from a
 * clean PGDATA (instance/reclaim.c): leftovers of a failed attempt are
 * removed (symlinks not followed, the WAL directory too), the data of an
 * instance whose marker names it are never touched. Before: any PG_VERSION
 * made every retry fail with EEXIST. */
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

#include "test_tmpdir.h"
#include "support/file.h"

/* A failed init: initdb ran (PG_VERSION, base/, pg_wal -> the WAL volume),
 * then the process was killed. */
static void leftover(const char *pgdata, const char *wal)
{
	char *f = op_asprintf("%s/PG_VERSION", pgdata);
	put(f, "16\n");
	free(f);
	f = op_asprintf("%s/base/1/1259", pgdata);
	put(f, "relation");
	free(f);
	f = op_asprintf("%s/000000010000000000000001", wal);
	put(f, "wal");
	free(f);
	char *link = at(pgdata);
	char *l = op_asprintf("%s/pg_wal", link);
	char *target = at(wal);
	assert_int_equal(symlink(target, l), 0);
	free(target);
	free(l);
	free(link);
}

static void test_absent_and_empty(void **state)
{
	char *pg = at("absent");
	struct inst_paths p = { .pgdata = pg };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pgdata_reclaim(&p, "c-1", &err), 0);
	assert_int_equal(op_mkdir_p(pg, 0700, NULL), 0);
	assert_int_equal(inst_pgdata_reclaim(&p, "c-1", &err), 0);
	assert_true(exists("absent")); /* the directory itself stays */
	free(pg);
}

static void test_failed_attempt_is_removed(void **state)
{
	leftover("a/pgdata", "a/wal");
	put("outside/keep", "not ours"); /* reached only through a symlink */
	char *pg = at("a/pgdata"), *wal = at("a/wal"), *out = at("outside");
	char *l = op_asprintf("%s/evil", pg);
	assert_int_equal(symlink(out, l), 0);
	struct inst_paths p = { .pgdata = pg, .waldir = wal };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pgdata_reclaim(&p, "c-1", &err), 0);
	assert_true(exists("a/pgdata"));
	assert_false(exists("a/pgdata/PG_VERSION"));
	assert_false(exists("a/pgdata/base"));
	assert_false(exists("a/pgdata/pg_wal"));
	assert_false(exists("a/pgdata/evil"));
	assert_true(exists("a/wal"));
	assert_false(exists("a/wal/000000010000000000000001"));
	assert_true(exists("outside/keep")); /* symlinks are not followed */
	/* a WAL directory alone with leftovers is cleaned too */
	put("a/wal/000000010000000000000002", "wal");
	assert_int_equal(inst_pgdata_reclaim(&p, "c-1", &err), 0);
	assert_false(exists("a/wal/000000010000000000000002"));
	free(l);
	free(out);
	free(wal);
	free(pg);
}

static void test_copied_marker_is_not_ours(void **state)
{
	/* pg_basebackup copied the primary's marker, then join failed */
	put("b/pgdata/PG_VERSION", "16\n");
	put("b/pgdata/pgop-bootstrapped", "c-1\n");
	char *pg = at("b/pgdata");
	struct inst_paths p = { .pgdata = pg };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_pgdata_reclaim(&p, "c-2", &err), 0);
	assert_false(exists("b/pgdata/PG_VERSION"));
	free(pg);
}

static void test_own_data_is_never_removed(void **state)
{
	leftover("c/pgdata", "c/wal");
	char *pg = at("c/pgdata"), *wal = at("c/wal");
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_marker_write(pg, "c-1", &err), 0);
	struct inst_paths p = { .pgdata = pg, .waldir = wal };
	assert_int_equal(inst_pgdata_reclaim(&p, "c-1", &err), -EEXIST);
	assert_non_null(strstr(err.msg, "never removed"));
	assert_true(exists("c/pgdata/PG_VERSION"));
	assert_true(exists("c/pgdata/base/1/1259"));
	assert_true(exists("c/wal/000000010000000000000001"));
	/* the marker is idempotent */
	assert_int_equal(inst_marker_write(pg, "c-1", &err), 0);
	free(wal);
	free(pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absent_and_empty),
		cmocka_unit_test(test_failed_attempt_is_removed),
		cmocka_unit_test(test_copied_marker_is_not_ours),
		cmocka_unit_test(test_own_data_is_never_removed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
