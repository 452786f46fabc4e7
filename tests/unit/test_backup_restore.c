/* tests/unit/test_backup_restore.c - backup/catalog.c and restore_base.c:
 * the choice of a recovery's base backup, recovery target times and LSNs,
 * tar entry names and links, and extraction of real tars (ustar written
 * here byte by byte): modes kept, hostile entries refused with nothing
 * written outside the target. */
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

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/lsn.h"

/* ---- selection ---- */

#define S(x) ((int64_t)(x) * 1000000)

static void add(struct bk_catalog *c, const char *id, enum bk_backup_status st, int64_t begin_s,
		int64_t end_s, const char *end_xlog, int64_t tli)
{
	c->v = realloc(c->v, (c->n + 1) * sizeof(*c->v));
	struct bk_catalog_entry *x = &c->v[c->n++];
	memset(x, 0, sizeof(*x));
	strcpy(x->id, id);
	x->ok = true;
	bk_backup_info_init(&x->info);
	x->info.status = st;
	x->info.begin_time = (struct bk_time){ .set = true, .epoch_us = S(begin_s) };
	x->info.end_time = (struct bk_time){ .set = true, .epoch_us = S(end_s) };
	x->info.end_xlog = end_xlog ? strdup(end_xlog) : NULL;
	x->info.timeline = (struct bk_opt_int){ .set = true, .v = tli };
}

static const char *pick(const struct bk_catalog *c, struct bk_selection s)
{
	const struct bk_catalog_entry *e = NULL;
	struct op_err err = OP_ERR_INIT;
	return bk_catalog_select(c, &s, &e, &err) == 0 ? e->id : NULL;
}

static void test_select(void **state)
{
	struct bk_catalog c = { 0 };
	add(&c, "20240101T000000", BK_STATUS_DONE, 100, 200, "0/3000000", 1);
	add(&c, "20240102T000000", BK_STATUS_DONE, 300, 400, "0/5000000", 1);
	add(&c, "20240103T000000", BK_STATUS_FAILED, 500, 600, "0/7000000", 1);
	add(&c, "20240104T000000", BK_STATUS_DONE, 700, 800, "0/9000000", 2);
	c.v = realloc(c.v, (c.n + 1) * sizeof(*c.v));
	memset(&c.v[c.n], 0, sizeof(c.v[c.n]));
	strcpy(c.v[c.n].id, "20240105T000000");
	c.v[c.n].error = strdup("backup.info: line 3 malformed");
	c.n++;
	/* none, xid, name, immediate: the latest DONE */
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_NONE }),
			    "20240104T000000");
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_XID }),
			    "20240104T000000");
	/* time: the latest ending at or before it (equal counts; FAILED skipped) */
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_TIME,
							.time_us = S(400) }),
			    "20240102T000000");
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_TIME,
							.time_us = S(700) }),
			    "20240102T000000");
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_TIME,
							.time_us = S(399) }),
			    "20240101T000000");
	assert_null(pick(&c, (struct bk_selection){ .kind = BK_TARGET_TIME, .time_us = S(150) }));
	/* LSN */
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_LSN,
							.lsn = 0x5000000 }),
			    "20240102T000000");
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_LSN,
							.lsn = 0x4FFFFFF }),
			    "20240101T000000");
	/* a timeline asked for: later timelines' backups left out */
	assert_string_equal(pick(&c, (struct bk_selection){ .kind = BK_TARGET_NONE, .tli = 1 }),
			    "20240102T000000");
	/* explicit ids */
	assert_string_equal(pick(&c, (struct bk_selection){ .backup_id = "20240101T000000" }),
			    "20240101T000000");
	const struct bk_catalog_entry *e = NULL;
	struct op_err err = OP_ERR_INIT;
	struct bk_selection s = { .backup_id = "20240103T000000" };
	assert_int_equal(bk_catalog_select(&c, &s, &e, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "FAILED"));
	err = OP_ERR_INIT;
	s.backup_id = "20240105T000000";
	assert_int_equal(bk_catalog_select(&c, &s, &e, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "malformed"));
	err = OP_ERR_INIT;
	s.backup_id = "20990101T000000";
	assert_int_equal(bk_catalog_select(&c, &s, &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no such backup"));
	/* the first recoverability point: the oldest DONE backup's end */
	int64_t first;
	assert_int_equal(bk_catalog_first_point(&c, &first), 0);
	assert_int_equal(first, S(200));
	bk_catalog_free(&c);
	struct bk_catalog empty = { 0 };
	assert_int_equal(bk_catalog_first_point(&empty, &first), -ENOENT);
	err = OP_ERR_INIT;
	s = (struct bk_selection){ .kind = BK_TARGET_NONE };
	assert_int_equal(bk_catalog_select(&empty, &s, &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no DONE base backup"));
}

static void test_targets(void **state)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "2024-01-02T03:04:05Z", "2024-01-02 03:04:05.000000+00" },
		{ "2024-01-02t03:04:05.5z", "2024-01-02 03:04:05.500000+00" },
		{ "2024-01-02T03:04:05.123456789+02:00", "2024-01-02 01:04:05.123456+00" },
		{ "2024-01-02 03:04:05.123456+02", "2024-01-02 01:04:05.123456+00" },
		{ "2024-01-02 03:04:05-0530", "2024-01-02 08:34:05.000000+00" },
		{ "2024-01-02 03:04", "2024-01-02 03:04:00.000000+00" },
		{ "2024-02-29 00:00:00", "2024-02-29 00:00:00.000000+00" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(good); i++) {
		int64_t us;
		char out[BK_TARGET_TIME_LEN + 1];
		assert_int_equal(bk_target_time_parse(good[i].in, &us), 0);
		assert_int_equal(bk_target_time_format(us, out), 0);
		assert_string_equal(out, good[i].out);
	}
	static const char *bad[] = {
		"", "yesterday", "2024-01-02", "2024-13-02 00:00:00", "2023-02-29 00:00:00",
		"2024-01-02 03:04:05 UTC", "2024-01-02 03:04:05+", "2024-01-02 03:04:05.",
		"2024-01-02 24:00:00", "2024-01-02 03:04:05+16", "2024-01-02\n03:04:05",
		"2024-01-02 03:04:05Z'; DROP",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		int64_t us;
		assert_int_equal(bk_target_time_parse(bad[i], &us), -EINVAL);
	}
	uint64_t lsn;
	assert_int_equal(op_lsn_parse("0/3000060", &lsn), 0);
	assert_true(lsn == 0x3000060);
	assert_int_equal(op_lsn_parse("1A/FF", &lsn), 0);
	assert_true(lsn == ((0x1Aull << 32) | 0xFF));
	static const char *badlsn[] = { "", "0", "/1", "1/", "123456789/0", "0/x", "0/1/2", "-1/0" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(badlsn); i++)
		assert_int_equal(op_lsn_parse(badlsn[i], &lsn), -EINVAL);
}

static void test_entry_names(void **state)
{
	char out[4096];
	assert_int_equal(bk_entry_path("./PG_VERSION", out, sizeof(out)), 0);
	assert_string_equal(out, "PG_VERSION");
	assert_int_equal(bk_entry_path("base/1//112", out, sizeof(out)), 0);
	assert_string_equal(out, "base/1/112");
	assert_int_equal(bk_entry_path("./", out, sizeof(out)), 1);
	assert_int_equal(bk_entry_path(".", out, sizeof(out)), 1);
	assert_int_equal(bk_entry_path("", out, sizeof(out)), 1);
	assert_int_equal(bk_entry_path("/etc/passwd", out, sizeof(out)), -EPERM);
	assert_int_equal(bk_entry_path("../x", out, sizeof(out)), -EPERM);
	assert_int_equal(bk_entry_path("a/../../x", out, sizeof(out)), -EPERM);
	assert_int_equal(bk_entry_path("a/..", out, sizeof(out)), -EPERM);
	assert_int_equal(bk_entry_path(NULL, out, sizeof(out)), -EPERM);
	assert_int_equal(bk_entry_path("a/b", out, 3), -ENAMETOOLONG);
	assert_true(bk_link_inside("pg_wal", "base"));
	assert_true(bk_link_inside("a/b/link", "../c"));
	assert_true(bk_link_inside("a/b/link", "../../c"));
	assert_false(bk_link_inside("a/b/link", "../../../c"));
	assert_false(bk_link_inside("link", "../x"));
	assert_false(bk_link_inside("link", "/abs"));
	assert_false(bk_link_inside("link", ""));
	assert_false(bk_link_inside("a/link", "x/../../.."));
}

/* ---- extraction of tars written here (ustar) ---- */

static char dir[] = "/tmp/pgop-test-restore-XXXXXX";

static void octal(char *f, size_t n, uint64_t v)
{
	char tmp[32]; /* a value too large for the field is cut, as a test may want */
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)n - 1, (unsigned long long)v);
	memcpy(f, tmp, n - 1);
	f[n - 1] = '\0';
}

/* One ustar header (+ data, padded) appended to the file fd. */
static void entry(int fd, const char *name, char type, unsigned mode, const char *link,
		  const char *data)
{
	char h[512] = { 0 };
	size_t len = data ? strlen(data) : 0;
	snprintf(h, 100, "%s", name);
	octal(h + 100, 8, mode);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, len);
	octal(h + 136, 12, 0);
	memset(h + 148, ' ', 8);
	h[156] = type;
	if (link)
		snprintf(h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	if (type == '3') {
		octal(h + 329, 8, 1);
		octal(h + 337, 8, 3);
	}
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	assert_int_equal(write(fd, h, 512), 512);
	if (len) {
		char pad[512] = { 0 };
		assert_int_equal(write(fd, data, len), (ssize_t)len);
		if (len % 512)
			assert_int_equal(write(fd, pad, 512 - len % 512), (ssize_t)(512 - len % 512));
	}
}

static int tar_open(const char *name)
{
	char *p = op_asprintf("%s/%s.tar", dir, name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	free(p);
	assert_true(fd >= 0);
	return fd;
}

/* Ends the tar, extracts it into dir/<name>/pgdata: the result. */
static int extract(int fd, const char *name, struct op_err *err)
{
	char zero[1024] = { 0 };
	assert_int_equal(write(fd, zero, sizeof(zero)), (ssize_t)sizeof(zero));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	char *target = op_asprintf("%s/%s/pgdata", dir, name);
	char *parent = op_asprintf("%s/%s", dir, name);
	assert_int_equal(mkdir(parent, 0700), 0);
	assert_int_equal(mkdir(target, 0700), 0);
	struct bk_restore_opts o = { .target = target, .max_entry = 1024 * 1024 };
	struct bk_restore_stats st;
	int rc = bk_restore_tar_fd(fd, &o, &st, err);
	close(fd);
	free(target);
	free(parent);
	return rc;
}

/* dir/name/rel exists (a link counts) */
static bool exists(const char *name, const char *rel)
{
	char *p = op_asprintf("%s/%s/%s", dir, name, rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;
	free(p);
	return r;
}

static void test_tablespace_mapping(void **state)
{
	const struct bk_tablespace_target v[] = { { "ts1", "/new/one" }, { "ts2", "/new/two" },
						  { "ts1", "/later" } };
	struct bk_tablespace t = { .name = "ts2", .oid = 16385, .location = "/old/two" };
	const char *loc = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tablespace_locate(&t, v, 3, &loc, &err), 0);
	assert_string_equal(loc, "/new/two");
	t.name = "ts1";
	assert_int_equal(bk_tablespace_locate(&t, v, 3, &loc, &err), 0);
	assert_string_equal(loc, "/new/one"); /* the first of its name */
	t.name = "ts3";
	assert_int_equal(bk_tablespace_locate(&t, v, 3, &loc, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "tablespace ts3 (oid 16385"));
	assert_int_equal(bk_tablespace_locate(&t, NULL, 0, &loc, &err), -ENOENT);

	char r1[] = "ts1:/a/b:c", r2[] = "nocolon", r3[] = ":/x", r4[] = "ts:relative";
	struct bk_tablespace_target x;
	assert_int_equal(bk_tablespace_rule_parse(r1, &x, &err), 0);
	assert_string_equal(x.name, "ts1");
	assert_string_equal(x.location, "/a/b:c");
	assert_int_equal(bk_tablespace_rule_parse(r2, &x, &err), -EINVAL);
	assert_int_equal(bk_tablespace_rule_parse(r3, &x, &err), -EINVAL);
	assert_int_equal(bk_tablespace_rule_parse(r4, &x, &err), -EINVAL);

	static const struct {
		const char *name;
		uint32_t oid;
		unsigned part;
		enum bk_compression comp;
	} good[] = {
		{ "16384.tar", 16384, 0, BK_COMP_NONE },
		{ "4294967295.tar.gz", 4294967295u, 0, BK_COMP_GZIP },
		{ "16384.tar.lz4", 16384, 0, BK_COMP_LZ4 },
		{ "data.tar", 0, 0, BK_COMP_NONE },
		{ "data.tar.bz2", 0, 0, BK_COMP_BZIP2 },
		{ "data_0001.tar.gz", 0, 1, BK_COMP_GZIP },
		{ "data_0012.tar", 0, 12, BK_COMP_NONE },
		{ "data_12345.tar", 0, 12345, BK_COMP_NONE },
		{ "16384_0001.tar", 16384, 1, BK_COMP_NONE },
		{ "16384.tar.snappy", 16384, 0, BK_COMP_SNAPPY },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(good); i++) {
		uint32_t oid = 7;
		unsigned part = 7;
		enum bk_compression comp = BK_COMP_XZ;
		if (bk_tar_object_parse(good[i].name, &oid, &part, &comp) != 0)
			fail_msg("refused: %s", good[i].name);
		if (oid != good[i].oid || part != good[i].part || comp != good[i].comp)
			fail_msg("%s: oid %u part %u comp %d", good[i].name, oid, part, (int)comp);
	}
	static const char *bad[] = { "4294967296.tar", "016384.tar", "16384.tar.xz", "16384",
				     ".tar", "16384.tgz", "data_001.tar", "data_0000.tar",
				     "data_99999999999.tar", "data_0001", "data.0001.tar",
				     "datax.tar", "data_0001.tar.gz.tar", "_0001.tar", "data_.tar",
				     "backup.info", "16384_0001_0002.tar" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		uint32_t oid;
		unsigned part;
		enum bk_compression comp;
		if (bk_tar_object_parse(bad[i], &oid, &part, &comp) != -EINVAL)
			fail_msg("accepted as a backup tar: %s", bad[i]);
	}
}

static void test_extract_good(void **state)
{
	int fd = tar_open("good");
	entry(fd, "./", '5', 0700, NULL, NULL);
	entry(fd, "./PG_VERSION", '0', 0600, NULL, "15\n");
	entry(fd, "base/1/112", '0', 0640, NULL, "relation"); /* parents made */
	entry(fd, "pg_wal", '5', 0700, NULL, NULL);
	entry(fd, "link", '2', 0777, "base/1", NULL);
	entry(fd, "hard", '1', 0600, "PG_VERSION", NULL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(extract(fd, "good", &err), 0);
	char *p = op_asprintf("%s/good/pgdata/base/1/112", dir);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(st.st_size, 8);
	free(p);
	assert_true(exists("good", "pgdata/pg_wal"));
	assert_true(exists("good", "pgdata/link"));
	p = op_asprintf("%s/good/pgdata/hard", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	free(p);
}

static void test_extract_hostile(void **state)
{
	static const struct {
		const char *name;
		char type;
		const char *path, *link;
		const char *want;
	} cases[] = {
		{ "dotdot", '0', "../escaped", NULL, "refused" },
		{ "dotdot2", '0', "a/../../escaped", NULL, "refused" },
		{ "abs", '0', "/tmp/pgop-test-restore-escaped", NULL, "refused" },
		{ "sym", '2', "escape", "../", "leaves the directory" },
		{ "symabs", '2', "escape", "/tmp", "leaves the directory" },
		{ "hard", '1', "escape", "../escaped", "leaves the directory" },
		{ "dev", '3', "null", NULL, "device" },
		{ "fifo", '6', "fifo", NULL, "device" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		int fd = tar_open(cases[i].name);
		entry(fd, "PG_VERSION", '0', 0600, NULL, "15\n");
		entry(fd, cases[i].path, cases[i].type, 0600, cases[i].link,
		      cases[i].type == '0' ? "x" : NULL);
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(extract(fd, cases[i].name, &err), -EPERM);
		assert_non_null(strstr(err.msg, cases[i].want));
		assert_false(exists(cases[i].name, "escaped"));
	}
	assert_int_equal(access("/tmp/pgop-test-restore-escaped", F_OK), -1);
	/* a link inside is fine, but nothing is written through it */
	int fd = tar_open("through");
	entry(fd, "sub", '5', 0700, NULL, NULL);
	entry(fd, "inside", '2', 0777, "sub", NULL);
	entry(fd, "inside/file", '0', 0600, NULL, "x");
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(extract(fd, "through", &err), -EPERM);
	assert_false(exists("through", "pgdata/sub/file"));
	/* a file over a link made before: not followed */
	fd = tar_open("over");
	entry(fd, "victim", '2', 0777, "sub", NULL);
	entry(fd, "sub", '5', 0700, NULL, NULL);
	entry(fd, "victim", '0', 0600, NULL, "x");
	err = OP_ERR_INIT;
	assert_int_equal(extract(fd, "over", &err), -EPERM);
	/* size caps: an entry past max_entry */
	fd = tar_open("big");
	char *big = malloc(2 * 1024 * 1024 + 1);
	memset(big, 'a', 2 * 1024 * 1024);
	big[2 * 1024 * 1024] = '\0';
	entry(fd, "big", '0', 0600, NULL, big);
	free(big);
	err = OP_ERR_INIT;
	assert_int_equal(extract(fd, "big", &err), -EFBIG);
	assert_false(exists("big", "pgdata/big"));
	/* garbage is no tar */
	fd = tar_open("garbage");
	assert_int_equal(write(fd, "not a tar at all", 16), 16);
	err = OP_ERR_INIT;
	assert_int_equal(extract(fd, "garbage", &err), -EBADMSG);
}

/* what pgop's own tar.c writes for a PGDATA comes back identical */
static void test_pgop_tar_round_trip(void **state)
{
	char *src = op_asprintf("%s/src", dir);
	char *cmd = op_asprintf("mkdir -p %s/base/1 %s/pg_wal %s/global && printf 15 > %s/PG_VERSION"
				" && head -c 300000 /dev/urandom > %s/base/1/112 && chmod 0640 "
				"%s/base/1/112 && printf ctl > %s/global/pg_control && printf seg > "
				"%s/pg_wal/000000010000000000000001",
				src, src, src, src, src, src, src, src);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	struct bk_tar_opts o = { .pgdata = src, .backup_label = "START WAL LOCATION: 0/2\n",
				 .compression = BK_COMP_NONE };
	struct bk_tar_stream *ts = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &ts, &err), 0);
	int fd = tar_open("pgop");
	char buf[65536];
	ssize_t n;
	while ((n = bk_tar_stream_read(ts, buf, sizeof(buf))) > 0)
		assert_int_equal(write(fd, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	assert_int_equal(bk_tar_stream_finish(ts, NULL, &err), 0);
	bk_tar_stream_free(ts);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	char *target = op_asprintf("%s/pgop-out", dir);
	assert_int_equal(mkdir(target, 0700), 0);
	struct bk_restore_opts ro = { .target = target };
	struct bk_restore_stats st;
	assert_int_equal(bk_restore_tar_fd(fd, &ro, &st, &err), 0);
	close(fd);
	cmd = op_asprintf("cmp %s/base/1/112 %s/base/1/112 && cmp %s/global/pg_control "
			  "%s/global/pg_control && test -d %s/pg_wal && test ! -e "
			  "%s/pg_wal/000000010000000000000001 && test \"$(stat -c %%a "
			  "%s/base/1/112)\" = 640 && grep -q 'START WAL' %s/backup_label",
			  src, target, src, target, target, target, target, target);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(target);
	free(src);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_entry_names),
		cmocka_unit_test(test_tablespace_mapping),
		cmocka_unit_test(test_extract_good),
		cmocka_unit_test(test_extract_hostile),
		cmocka_unit_test(test_pgop_tar_round_trip),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
