/* tests/unit/test_instance_reclone.c - a former primary that pg_rewind
 * cannot bring back is cloned again (instance/reclone.c): when to re-clone
 * (pg_rewind's status, whether its source answers), the old data moved aside
 * inside its volume (PGDATA and the WAL directory pg_wal links to), put back
 * when the clone fails or was interrupted, removed only once a clone
 * completed (its marker names the pod). pg_basebackup is a shell script
 * here; tests/e2e/test_instance_local.sh runs the real one after a real
 * pg_rewind failure. */
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
#include "support/json.h"

#include "test_tmpdir.h"

/* The content of a small file, "" when absent (static buffer). */
static const char *content(const char *rel)
{
	static char buf[256];
	buf[0] = '\0';
	char *p = at(rel);
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return buf;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void wal_symlink(const char *pgdata, const char *wal)
{
	char *l = op_asprintf("%s/%s/pg_wal", dir, pgdata);
	char *target = at(wal);
	assert_int_equal(symlink(target, l), 0);
	free(target);
	free(l);
}

/* A former primary: PGDATA with its marker, pg_wal -> the WAL volume. */
static void old_primary(const char *pgdata, const char *wal, const char *pod)
{
	char *f = op_asprintf("%s/PG_VERSION", pgdata);
	put(f, "15\n");
	free(f);
	f = op_asprintf("%s/base/1/1259", pgdata);
	put(f, "old relation");
	free(f);
	f = op_asprintf("%s/pgop-bootstrapped", pgdata);
	char *m = op_asprintf("%s\n", pod);
	put(f, m);
	free(m);
	free(f);
	f = op_asprintf("%s/000000020000000000000007", wal);
	put(f, "old wal");
	free(f);
	wal_symlink(pgdata, wal);
}

static void test_rewind_next(void **state)
{
	static const struct {
		int status;
		bool answers;
		enum inst_rewind_next want;
	} t[] = {
		{ 0, true, INST_REWIND_DONE },
		{ 0, false, INST_REWIND_DONE },
		/* "could not find previous WAL record": the source answers */
		{ 1, true, INST_REWIND_RECLONE },
		{ 2, true, INST_REWIND_RECLONE },
		/* the primary is not reachable: keep the data, retry pg_rewind */
		{ 1, false, INST_REWIND_FAIL },
		/* pg_rewind did not run (missing program): never a re-clone */
		{ -ENOENT, true, INST_REWIND_FAIL },
		{ -ENOENT, false, INST_REWIND_FAIL },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(inst_rewind_next(t[i].status, t[i].answers), t[i].want);
}

static void test_aside_decide(void **state)
{
	assert_int_equal(inst_aside_decide(false, false), INST_ASIDE_NONE);
	assert_int_equal(inst_aside_decide(false, true), INST_ASIDE_NONE);
	assert_int_equal(inst_aside_decide(true, true), INST_ASIDE_DROP);
	assert_int_equal(inst_aside_decide(true, false), INST_ASIDE_RESTORE);
}

static void test_paths(void **state)
{
	old_primary("p/pgdata", "p/wal/pg_wal", "c-1");
	char *pg = op_asprintf("%s/p/pgdata//", dir);
	struct inst_reclone_paths rp = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	char *want = at("p/pgdata");
	assert_string_equal(rp.pgdata, want); /* trailing slashes: never an aside inside PGDATA */
	free(want);
	want = at("p/pgdata.rewind-failed");
	assert_string_equal(rp.aside, want);
	free(want);
	want = at("p/wal/pg_wal");
	assert_string_equal(rp.waldir, want);
	free(want);
	want = at("p/wal/pg_wal.rewind-failed");
	assert_string_equal(rp.wal_aside, want);
	free(want);
	inst_reclone_paths_done(&rp);
	/* pg_wal a directory: no WAL directory of its own */
	put("q/pgdata/pg_wal/000000010000000000000001", "wal");
	free(pg);
	pg = at("q/pgdata");
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	assert_null(rp.waldir);
	assert_null(rp.wal_aside);
	inst_reclone_paths_done(&rp);
	assert_int_equal(inst_reclone_paths("/", &rp, &err), -EINVAL);
	free(pg);
}

/* Moved aside; then a clone completed (its marker names the pod): the next
 * start removes the old copies and leaves the clone alone. */
static void test_completed_clone_drops_aside(void **state)
{
	old_primary("a/pgdata", "a/wal/pg_wal", "c-2");
	char *pg = at("a/pgdata");
	struct inst_reclone_paths rp = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	assert_int_equal(inst_reclone_move_aside(&rp, &err), 0);
	assert_false(exists("a/pgdata"));
	assert_false(exists("a/wal/pg_wal"));
	assert_string_equal(content("a/pgdata.rewind-failed/base/1/1259"), "old relation");
	assert_string_equal(content("a/wal/pg_wal.rewind-failed/000000020000000000000007"),
			    "old wal");
	/* a second move while the aside exists is refused */
	err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_move_aside(&rp, &err), -EEXIST);
	/* the clone: the primary's files, its marker, then ours written last */
	put("a/pgdata/PG_VERSION", "15\n");
	put("a/pgdata/base/1/1259", "primary relation");
	put("a/pgdata/standby.signal", "");
	put("a/pgdata/pgop-bootstrapped", "c-2\n");
	put("a/wal/pg_wal/000000030000000000000009", "primary wal");
	wal_symlink("a/pgdata", "a/wal/pg_wal");
	err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_leftover(&(struct inst_paths){ .pgdata = pg }, NULL, "c-2", &err), 0);
	assert_false(exists("a/pgdata.rewind-failed"));
	assert_false(exists("a/wal/pg_wal.rewind-failed"));
	assert_string_equal(content("a/pgdata/base/1/1259"), "primary relation");
	assert_string_equal(content("a/wal/pg_wal/000000030000000000000009"), "primary wal");
	/* nothing aside: nothing to do */
	assert_int_equal(inst_reclone_leftover(&(struct inst_paths){ .pgdata = pg }, NULL, "c-2", &err), 0);
	assert_string_equal(content("a/pgdata/base/1/1259"), "primary relation");
	inst_reclone_paths_done(&rp);
	free(pg);
}

/* The manager was killed during pg_basebackup: PGDATA is a partial clone
 * with the primary's marker (and a symlink out of it). The next start
 * removes it and puts the old data back, WAL included. */
static void test_interrupted_clone_is_undone(void **state)
{
	old_primary("b/pgdata", "b/wal/pg_wal", "c-2");
	put("outside/keep", "not ours");
	char *pg = at("b/pgdata");
	struct inst_reclone_paths rp = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	assert_int_equal(inst_reclone_move_aside(&rp, &err), 0);
	put("b/pgdata/PG_VERSION", "15\n");
	put("b/pgdata/pgop-bootstrapped", "c-1\n"); /* copied from the primary */
	put("b/wal/pg_wal/000000030000000000000009", "partial");
	wal_symlink("b/pgdata", "b/wal/pg_wal");
	char *l = op_asprintf("%s/evil", pg), *out = at("outside");
	assert_int_equal(symlink(out, l), 0);
	assert_int_equal(inst_reclone_leftover(&(struct inst_paths){ .pgdata = pg }, NULL, "c-2", &err), 0);
	assert_false(exists("b/pgdata.rewind-failed"));
	assert_false(exists("b/wal/pg_wal.rewind-failed"));
	assert_string_equal(content("b/pgdata/base/1/1259"), "old relation");
	assert_string_equal(content("b/pgdata/pgop-bootstrapped"), "c-2\n");
	assert_false(exists("b/pgdata/evil"));
	assert_string_equal(content("b/wal/pg_wal/000000020000000000000007"), "old wal");
	assert_false(exists("b/wal/pg_wal/000000030000000000000009"));
	assert_string_equal(content("outside/keep"), "not ours"); /* symlinks not followed */
	/* the old data links to its WAL again */
	assert_string_equal(content("b/pgdata/pg_wal/000000020000000000000007"), "old wal");
	inst_reclone_paths_done(&rp);
	free(l);
	free(out);
	free(pg);
}

/* Killed right after the first rename (PGDATA absent, the WAL directory not
 * moved yet), or before pg_basebackup created PGDATA: put back as it was. */
static void test_killed_between_renames(void **state)
{
	old_primary("c/pgdata", "c/wal/pg_wal", "c-2");
	char *pg = at("c/pgdata"), *aside = at("c/pgdata.rewind-failed");
	assert_int_equal(rename(pg, aside), 0);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_reclone_leftover(&(struct inst_paths){ .pgdata = pg }, NULL, "c-2", &err), 0);
	assert_false(exists("c/pgdata.rewind-failed"));
	assert_string_equal(content("c/pgdata/base/1/1259"), "old relation");
	assert_string_equal(content("c/wal/pg_wal/000000020000000000000007"), "old wal");
	/* both moved, nothing cloned yet */
	struct inst_reclone_paths rp = { 0 };
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	assert_int_equal(inst_reclone_move_aside(&rp, &err), 0);
	inst_reclone_paths_done(&rp);
	assert_int_equal(inst_reclone_leftover(&(struct inst_paths){ .pgdata = pg }, NULL, "c-2", &err), 0);
	assert_false(exists("c/pgdata.rewind-failed"));
	assert_false(exists("c/wal/pg_wal.rewind-failed"));
	assert_string_equal(content("c/pgdata/base/1/1259"), "old relation");
	assert_string_equal(content("c/pgdata/pg_wal/000000020000000000000007"), "old wal");
	free(aside);
	free(pg);
}

static struct api_cluster *tbs_cluster(void)
{
	static const char *json = "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"tablespaces\":["
				  "{\"name\":\"t1\",\"storage\":{\"size\":\"1Gi\"}},"
				  "{\"name\":\"t2\",\"storage\":{\"size\":\"1Gi\"}}]}}";
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(json, strlen(json), 16, &o, &err), 0);
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, &err), 0);
	json_object_put(o);
	return c;
}

/* spec.tablespaces: the locations are made where the volumes are mounted
 * (t2's is not: left alone); a re-clone moves each location aside with
 * PGDATA (an empty one made for pg_basebackup), puts it back when the clone
 * did not complete, drops it when it did. */
static void test_tablespaces(void **state)
{
	struct api_cluster *c = tbs_cluster();
	old_primary("t/pgdata", "t/wal/pg_wal", "c-2");
	char *pg = at("t/pgdata"), *root = at("t/tbs"), *mnt = at("t/tbs/t1");
	assert_int_equal(op_mkdir_p(mnt, 0700, NULL), 0);
	struct inst_paths p = { .pgdata = pg, .tablespaces_dir = root };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_tablespace_dirs(&p, c, &err), 0);
	assert_true(exists("t/tbs/t1/data"));
	assert_false(exists("t/tbs/t2"));
	assert_int_equal(inst_tablespace_dirs(&p, c, &err), 0); /* again: nothing to do */
	put("t/tbs/t1/data/PG_15_1/1/16384", "old tablespace relation");
	/* moved aside; the clone writes into the empty location; killed before
	 * its marker: the next start puts every old copy back */
	struct inst_reclone_paths rp = { 0 };
	assert_int_equal(inst_reclone_paths(pg, &rp, &err), 0);
	inst_reclone_paths_tablespaces(&rp, &p, c);
	assert_int_equal(rp.n_tbs, 2);
	assert_int_equal(inst_reclone_move_aside(&rp, &err), 0);
	assert_true(exists("t/tbs/t1/data"));
	assert_false(exists("t/tbs/t1/data/PG_15_1"));
	assert_string_equal(content("t/tbs/t1/data.rewind-failed/PG_15_1/1/16384"),
			    "old tablespace relation");
	put("t/tbs/t1/data/PG_15_1/1/16384", "partial clone");
	put("t/pgdata/pgop-bootstrapped", "c-1\n");
	assert_int_equal(inst_reclone_leftover(&p, c, "c-2", &err), 0);
	assert_false(exists("t/tbs/t1/data.rewind-failed"));
	assert_string_equal(content("t/tbs/t1/data/PG_15_1/1/16384"), "old tablespace relation");
	assert_string_equal(content("t/pgdata/base/1/1259"), "old relation");
	/* again, the clone completing: the old copies dropped */
	assert_int_equal(inst_reclone_move_aside(&rp, &err), 0);
	put("t/tbs/t1/data/PG_15_1/1/16384", "primary's tablespace relation");
	put("t/pgdata/PG_VERSION", "15\n");
	put("t/pgdata/pgop-bootstrapped", "c-2\n");
	assert_int_equal(inst_reclone_leftover(&p, c, "c-2", &err), 0);
	assert_false(exists("t/tbs/t1/data.rewind-failed"));
	assert_false(exists("t/pgdata.rewind-failed"));
	assert_string_equal(content("t/tbs/t1/data/PG_15_1/1/16384"), "primary's tablespace relation");
	inst_reclone_paths_done(&rp);
	api_cluster_free(c);
	free(mnt);
	free(root);
	free(pg);
}

/* pg_basebackup fails after writing part of PGDATA and of the WAL
 * directory: inst_reclone returns its error with the old data back in place. */
static void test_failed_clone_puts_data_back(void **state)
{
	old_primary("d/pgdata", "d/wal/pg_wal", "c-2");
	put("d/bin/pg_basebackup",
	    "#!/bin/sh\n"
	    "# -D DIR ... --waldir WAL: a partial copy, then a failure\n"
	    "mkdir -p \"$2\" && echo partial > \"$2/PG_VERSION\"\n"
	    "for a; do [ \"$prev\" = --waldir ] && mkdir -p \"$a\" && echo x > \"$a/seg\"; "
	    "prev=$a; done\n"
	    "exit 1\n");
	char *bin = at("d/bin"), *script = at("d/bin/pg_basebackup"), *pg = at("d/pgdata");
	char *ctl = at("d/controller");
	assert_int_equal(chmod(script, 0700), 0);
	struct inst_paths p = { .pgdata = pg, .controller_dir = ctl, .pg_bindir = bin,
				.pg_major = 15 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_reclone(&p, NULL, "c-2", "c-rw", 5432, &err), -EIO);
	assert_non_null(strstr(err.msg, "pg_basebackup exited with status 1"));
	assert_false(exists("d/pgdata.rewind-failed"));
	assert_false(exists("d/wal/pg_wal.rewind-failed"));
	assert_string_equal(content("d/pgdata/PG_VERSION"), "15\n");
	assert_string_equal(content("d/pgdata/base/1/1259"), "old relation");
	assert_string_equal(content("d/wal/pg_wal/000000020000000000000007"), "old wal");
	assert_false(exists("d/wal/pg_wal/seg"));
	free(ctl);
	free(pg);
	free(script);
	free(bin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rewind_next),
		cmocka_unit_test(test_aside_decide),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_completed_clone_drops_aside),
		cmocka_unit_test(test_interrupted_clone_is_undone),
		cmocka_unit_test(test_killed_between_renames),
		cmocka_unit_test(test_failed_clone_puts_data_back),
		cmocka_unit_test(test_tablespaces),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
