/* tests/unit/test_backup_tar.c - backup/tar.c: a small PGDATA-like tree
 * streamed as barman's data.tar (plain and gzip), read back with libarchive:
 * names, sizes, modes, symlinks, barman's exclusions, pg_control and
 * backup_label last. */
#include <errno.h>
#include <fcntl.h>
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

#include <archive.h>
#include <archive_entry.h>

#include "backup/backup.h"
#include "backup/internal.h"
#include "support/alloc.h"

static char root[64];

static void put(const char *rel, const char *data, mode_t mode)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
	chmod(p, mode);
}

static void dir(const char *rel)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(mkdir(p, 0700), 0);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/pgop-tar-XXXXXX");
	assert_non_null(mkdtemp(root));
	static const char *dirs[] = { "base", "base/1", "global", "pg_wal", "pg_wal/archive_status",
				      "pg_replslot", "pg_replslot/slot1", "pg_stat_tmp", "log",
				      "base/pgsql_tmp", "pg_tblspc" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(dirs); i++)
		dir(dirs[i]);
	put("PG_VERSION", "15\n", 0600);
	put("postgresql.conf", "port = 5432\n", 0640);
	put("postmaster.pid", "123\n", 0600);
	put("postmaster.opts", "x\n", 0600);
	put("standby.signal", "", 0600);
	put("base/1/1259", "relation data", 0600);
	put("base/1/t3_16384", "temp relation", 0600);
	put("base/1/t3_16384_fsm", "temp fsm", 0600);
	put("base/1/pg_internal.init", "cache", 0600);
	put("base/pgsql_tmp/pgsql_tmp1.0", "sort", 0600);
	put("global/pg_control", "CONTROL", 0600);
	put("global/1262", "db", 0600);
	put("pg_wal/000000010000000000000001", "WAL", 0600);
	put("pg_wal/archive_status/000000010000000000000001.done", "", 0600);
	put("pg_replslot/slot1/state", "slot", 0600);
	put("pg_stat_tmp/global.stat", "s", 0600);
	put("log/postgresql.log", "log", 0600);
	char p[256];
	snprintf(p, sizeof(p), "%s/link_to_conf", root);
	assert_int_equal(symlink("postgresql.conf", p), 0);
	snprintf(p, sizeof(p), "%s/pg_tblspc/16400", root);
	assert_int_equal(symlink("/tmp", p), 0); /* a link to a directory: left out */
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void stream_all(enum bk_compression comp, struct op_buf *out, struct bk_tar_stats *st)
{
	struct bk_tar_opts o = { .pgdata = root, .backup_label = "START WAL LOCATION: 0/2\n",
				 .compression = comp };
	struct bk_tar_stream *s;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), 0);
	char buf[1000]; /* small reads: the stream resumes mid-chunk */
	ssize_t n;
	while ((n = bk_tar_stream_read(s, buf, sizeof(buf))) > 0)
		assert_int_equal(op_buf_add(out, buf, (size_t)n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bk_tar_stream_finish(s, st, &err), 0);
	bk_tar_stream_free(s);
}

struct seen {
	char names[64][128];
	size_t n;
};

static void read_back(const struct op_buf *tar, struct seen *seen)
{
	struct archive *a = archive_read_new();
	assert_non_null(a);
	assert_int_equal(archive_read_support_format_tar(a), ARCHIVE_OK);
	assert_int_equal(archive_read_support_filter_all(a), ARCHIVE_OK);
	assert_int_equal(archive_read_open_memory(a, tar->data, tar->len), ARCHIVE_OK);
	struct archive_entry *e;
	seen->n = 0;
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		assert_true(seen->n < 64);
		snprintf(seen->names[seen->n++], 128, "%s", name);
		char data[256] = { 0 };
		la_ssize_t n = archive_read_data(a, data, sizeof(data) - 1);
		if (!strcmp(name, "./PG_VERSION")) {
			assert_string_equal(data, "15\n");
			assert_int_equal(archive_entry_perm(e), 0600);
		}
		if (!strcmp(name, "./postgresql.conf"))
			assert_int_equal(archive_entry_perm(e), 0640);
		if (!strcmp(name, "base/1/1259"))
			assert_int_equal(archive_entry_size(e), 13);
		if (!strcmp(name, "./link_to_conf")) {
			assert_int_equal(archive_entry_filetype(e), AE_IFLNK);
			assert_string_equal(archive_entry_symlink(e), "postgresql.conf");
		}
		if (!strcmp(name, "backup_label"))
			assert_string_equal(data, "START WAL LOCATION: 0/2\n");
		if (!strcmp(name, "global/pg_control"))
			assert_int_equal(n, 7);
	}
	assert_int_equal(archive_read_free(a), ARCHIVE_OK);
}

static bool has(const struct seen *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name) ||
		    (strlen(s->names[i]) == strlen(name) + 1 && !strncmp(s->names[i], name, strlen(name)) &&
		     s->names[i][strlen(name)] == '/'))
			return true;
	return false;
}

static void check(const struct seen *s)
{
	static const char *want[] = { ".", "./PG_VERSION", "./postgresql.conf", "./link_to_conf",
				      "base", "base/1", "base/1/1259", "global", "global/1262",
				      "pg_wal", "pg_replslot", "pg_stat_tmp", "log", "pg_tblspc",
				      "global/pg_control", "backup_label" };
	static const char *not[] = { "./postmaster.pid", "./postmaster.opts", "./standby.signal",
				     "base/1/t3_16384", "base/1/t3_16384_fsm",
				     "base/1/pg_internal.init", "base/pgsql_tmp",
				     "base/pgsql_tmp/pgsql_tmp1.0", "pg_wal/000000010000000000000001",
				     "pg_wal/archive_status",
				     "pg_wal/archive_status/000000010000000000000001.done",
				     "pg_replslot/slot1", "pg_replslot/slot1/state",
				     "pg_stat_tmp/global.stat", "log/postgresql.log",
				     "pg_tblspc/16400" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(want); i++)
		if (!has(s, want[i]))
			fail_msg("missing from the tar: %s", want[i]);
	for (size_t i = 0; i < OP_ARRAY_SIZE(not); i++)
		if (has(s, not[i]))
			fail_msg("in the tar, excluded by barman: %s", not[i]);
	assert_string_equal(s->names[s->n - 2], "global/pg_control");
	assert_string_equal(s->names[s->n - 1], "backup_label");
}

static void test_plain(void **state)
{
	struct op_buf tar = OP_BUF_INIT(OP_BUF_MAX_FILE);
	struct bk_tar_stats st;
	stream_all(BK_COMP_NONE, &tar, &st);
	assert_int_equal(tar.len % 10240, 0); /* tar records, as python's tarfile */
	assert_int_equal(st.tar_bytes, tar.len);
	assert_int_equal(st.stored_bytes, tar.len);
	struct seen s;
	read_back(&tar, &s);
	check(&s);
	assert_int_equal(st.files, 6); /* PG_VERSION conf 1259 1262 pg_control backup_label */
	assert_int_equal(st.symlinks, 1);
	op_buf_done(&tar);
}

static void test_gzip_and_errors(void **state)
{
	struct op_buf tar = OP_BUF_INIT(OP_BUF_MAX_FILE);
	struct bk_tar_stats st;
	stream_all(BK_COMP_GZIP, &tar, &st);
	assert_int_equal((unsigned char)tar.data[0], 0x1f);
	assert_true(st.stored_bytes < st.tar_bytes);
	struct seen s;
	read_back(&tar, &s);
	check(&s);
	op_buf_done(&tar);

	struct bk_tar_opts o = { .pgdata = "/nonexistent/pgdata" };
	struct bk_tar_stream *ts;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &ts, &err), -ENOTDIR);
	o.pgdata = root;
	o.compression = BK_COMP_ZSTD;
	assert_int_equal(bk_tar_stream_new(&o, &ts, NULL), -ENOTSUP);
	/* no global/pg_control: not a PGDATA */
	char p[256];
	snprintf(p, sizeof(p), "%s/global/pg_control", root);
	assert_int_equal(unlink(p), 0);
	o.compression = BK_COMP_NONE;
	assert_int_equal(bk_tar_stream_new(&o, &ts, NULL), 0);
	char buf[4096];
	ssize_t n;
	while ((n = bk_tar_stream_read(ts, buf, sizeof(buf))) > 0)
		;
	assert_int_equal(n, -ENOENT);
	err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_finish(ts, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "pg_control"));
	bk_tar_stream_free(ts);
	put("global/pg_control", "CONTROL", 0600);
}

/* label_fn: asked once, after global/pg_control (which is in the tar by
 * then), for the label pg_backup_stop would give. */
struct label_call {
	int calls;
	size_t bytes_before; /* what the stream had produced when asked */
	int fail;
};

static int give_label(void *ud, const char **ret, struct op_err *err)
{
	struct label_call *c = ud;
	c->calls++;
	if (c->fail)
		return op_err_set(err, -ETIMEDOUT, "pg_backup_stop: canceling statement due to "
				  "statement timeout");
	*ret = "START WAL LOCATION: 0/2\n";
	return 0;
}

static void test_label_fn(void **state)
{
	struct label_call call = { 0 };
	struct bk_tar_opts o = { .pgdata = root, .label_fn = give_label, .label_ud = &call };
	struct bk_tar_stream *s;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), 0);
	struct op_buf tar = OP_BUF_INIT(OP_BUF_MAX_FILE);
	char buf[777];
	ssize_t n;
	while ((n = bk_tar_stream_read(s, buf, sizeof(buf))) > 0)
		assert_int_equal(op_buf_add(&tar, buf, (size_t)n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bk_tar_stream_finish(s, NULL, &err), 0);
	bk_tar_stream_free(s);
	assert_int_equal(call.calls, 1);
	struct seen seen;
	read_back(&tar, &seen); /* checks backup_label's text */
	check(&seen);
	op_buf_done(&tar);

	/* the stop fails: the tar fails with its error, nothing after it */
	call = (struct label_call){ .fail = 1 };
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), 0);
	while ((n = bk_tar_stream_read(s, buf, sizeof(buf))) > 0)
		;
	assert_int_equal(n, -ETIMEDOUT);
	err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_finish(s, NULL, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "pg_backup_stop"));
	bk_tar_stream_free(s);
}

static void test_cancel(void **state)
{
	_Atomic bool cancel = false;
	struct bk_tar_opts o = { .pgdata = root, .backup_label = "x", .cancel = &cancel };
	struct bk_tar_stream *s;
	assert_int_equal(bk_tar_stream_new(&o, &s, NULL), 0);
	char buf[512];
	assert_true(bk_tar_stream_read(s, buf, sizeof(buf)) > 0);
	cancel = true;
	assert_int_equal(bk_tar_stream_read(s, buf, sizeof(buf)), -ECANCELED);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_finish(s, NULL, &err), -ECANCELED);
	assert_non_null(strstr(err.msg, "cancelled"));
	bk_tar_stream_free(s);
}

/* A tablespace's tar: only PG_15_* trees, as barman's include/exclude rules */
static void test_tablespace(void **state)
{
	char prefix[16];
	bk_tablespace_prefix(150004, prefix);
	assert_string_equal(prefix, "PG_15_");
	bk_tablespace_prefix(170000, prefix);
	assert_string_equal(prefix, "PG_17_");
	static const char *dirs[] = { "tbs", "tbs/PG_15_202209061", "tbs/PG_15_202209061/16384",
				      "tbs/PG_14_202107181", "tbs/PG_14_202107181/1", "tbs/lost+found" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(dirs); i++)
		dir(dirs[i]);
	put("tbs/PG_15_202209061/16384/16385", "rel", 0600);
	put("tbs/PG_15_202209061/16384/16385_fsm", "fsm", 0600);
	put("tbs/PG_15_202209061/16384/t3_99", "temp", 0600);
	put("tbs/PG_14_202107181/1/2", "old", 0600);
	put("tbs/junk", "top file", 0600);
	put("tbs/lost+found/x", "lost", 0600);
	char loc[128];
	snprintf(loc, sizeof(loc), "%s/tbs", root);
	struct bk_tar_opts o = { .pgdata = loc, .tablespace_prefix = prefix };
	bk_tablespace_prefix(150004, prefix);
	struct bk_tar_stream *s;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), 0);
	struct op_buf tar = OP_BUF_INIT(OP_BUF_MAX_FILE);
	char buf[700];
	ssize_t n;
	while ((n = bk_tar_stream_read(s, buf, sizeof(buf))) > 0)
		assert_int_equal(op_buf_add(&tar, buf, (size_t)n), 0);
	assert_int_equal(n, 0);
	struct bk_tar_stats st;
	assert_int_equal(bk_tar_stream_finish(s, &st, &err), 0);
	bk_tar_stream_free(s);
	struct seen seen;
	read_back(&tar, &seen);
	static const char *want[] = { "PG_15_202209061", "PG_15_202209061/16384",
				      "PG_15_202209061/16384/16385",
				      "PG_15_202209061/16384/16385_fsm" };
	assert_int_equal(seen.n, OP_ARRAY_SIZE(want)); /* no ".", label, pg_control, others */
	for (size_t i = 0; i < OP_ARRAY_SIZE(want); i++)
		assert_true(has(&seen, want[i]));
	assert_int_equal(st.files, 2);
	op_buf_done(&tar);
}

/* A file of n pseudo-random (incompressible) bytes at rel. */
static void put_random(const char *rel, size_t n, unsigned seed)
{
	char *data = op_malloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		data[i] = (char)('A' + (seed >> 16) % 26);
	}
	data[n] = 0;
	put(rel, data, 0600);
	free(data);
}

/* One part read to its end: its bytes into out; 0 at its end. */
static void read_part(struct bk_tar_stream *s, struct op_buf *out)
{
	char buf[4096];
	ssize_t n;
	while ((n = bk_tar_stream_read(s, buf, sizeof(buf))) > 0)
		assert_int_equal(op_buf_add(out, buf, (size_t)n), 0);
	assert_int_equal(n, 0);
}

/* max_archive_size: the tar goes on in a second part, split before the
 * entry that follows the crossing, each part a whole tar; pg_control and
 * the label in the last. */
static void test_split(void **state)
{
	static const char *dirs[] = { "split", "split/base", "split/base/2", "split/global" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(dirs); i++)
		dir(dirs[i]);
	put("split/PG_VERSION", "15\n", 0600);
	put_random("split/base/2/a", 600 * 1024, 1);
	put_random("split/base/2/b", 600 * 1024, 2);
	put_random("split/base/2/c", 600 * 1024, 3);
	put("split/global/pg_control", "CONTROL", 0600);
	char loc[128];
	snprintf(loc, sizeof(loc), "%s/split", root);
	struct bk_tar_opts o = { .pgdata = loc, .backup_label = "START WAL LOCATION: 0/2\n",
				 .max_archive_size = 1024 * 1024 };
	struct bk_tar_stream *s;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), 0);
	assert_int_equal(bk_tar_stream_next_part(s, &err), -EINVAL); /* nothing ended yet */
	struct op_buf p0 = OP_BUF_INIT(OP_BUF_MAX_FILE), p1 = OP_BUF_INIT(OP_BUF_MAX_FILE);
	read_part(s, &p0);
	assert_true(bk_tar_stream_part_ended(s));
	assert_int_equal(bk_tar_stream_finish(s, NULL, &err), -EINVAL); /* not at its end */
	assert_int_equal(bk_tar_stream_next_part(s, &err), 0);
	read_part(s, &p1);
	assert_false(bk_tar_stream_part_ended(s));
	struct bk_tar_stats st;
	assert_int_equal(bk_tar_stream_finish(s, &st, &err), 0);
	bk_tar_stream_free(s);
	assert_int_equal(st.parts, 2);
	assert_int_equal(st.files, 6); /* PG_VERSION, a, b, c, pg_control, backup_label */
	assert_int_equal(st.stored_bytes, p0.len + p1.len);
	struct seen a, b;
	read_back(&p0, &a);
	read_back(&p1, &b);
	assert_true(has(&a, "./PG_VERSION") && has(&a, "base/2/a") && has(&a, "base/2/b"));
	assert_false(has(&a, "base/2/c") || has(&a, "global/pg_control"));
	assert_int_equal(b.n, 4);
	assert_string_equal(b.names[0], "base/2/c");
	assert_true(has(&b, "global") && !strncmp(b.names[1], "global", 6));
	assert_string_equal(b.names[2], "global/pg_control");
	assert_string_equal(b.names[3], "backup_label");
	op_buf_done(&p0);
	op_buf_done(&p1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_gzip_and_errors),
		cmocka_unit_test(test_label_fn),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_tablespace),
		cmocka_unit_test(test_split),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
