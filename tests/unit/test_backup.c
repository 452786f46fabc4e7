/* tests/unit/test_backup.c - backup/: WAL names, barman-cloud layout,
 * configuration, compression round trips, corrupt/truncated input, caps,
 * system identifiers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include <cmocka.h>
/* op_malloc allocates with libc's malloc: free with libc's too */
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "backup/backup.h"
#include "backup/internal.h" /* BK_GZ_CHUNK */
#include "objstore/internal.h" /* the client's put header lines */
#include "support/alloc.h"

static void test_wal_names(void **state)
{
	struct bk_wal_name w;
	assert_int_equal(bk_wal_name_parse("000000010000000A000000FF", &w, NULL), 0);
	assert_int_equal(w.kind, BK_WAL_SEGMENT);
	assert_int_equal(w.tli, 1);
	assert_int_equal(w.log, 10);
	assert_int_equal(w.seg, 255);
	assert_int_equal(bk_wal_name_parse("00000002.history", &w, NULL), 0);
	assert_int_equal(w.kind, BK_WAL_HISTORY);
	assert_int_equal(w.tli, 2);
	assert_int_equal(bk_wal_name_parse("000000010000000000000003.partial", &w, NULL), 0);
	assert_int_equal(w.kind, BK_WAL_PARTIAL);
	assert_int_equal(bk_wal_name_parse("000000010000000000000003.00000028.backup", &w, NULL), 0);
	assert_int_equal(w.kind, BK_WAL_BACKUP);
	static const char *bad[] = {
		"", "00000001000000000000000", "0000000100000000000000030", "00000001000000000000000a",
		"pg_wal/000000010000000000000003", "000000010000000000000003.gz",
		"000000010000000000000003.partial.gz", "0000000G.history", "00000001.History",
		"000000010000000000000003.0000002.backup", "000000010000000000000003.backup",
		"../../etc/passwd", "000000010000000000000003 ", "000000010000000000000003.ready",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(bk_wal_name_parse(bad[i], &w, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "not a WAL file name"));
	}
	assert_false(bk_wal_name_valid(NULL));
}

static void test_next_segment(void **state)
{
	char n[25];
	assert_int_equal(bk_wal_next_segment("000000010000000000000003", 16u << 20, n), 0);
	assert_string_equal(n, "000000010000000000000004");
	assert_int_equal(bk_wal_next_segment("0000000100000000000000FF", 16u << 20, n), 0);
	assert_string_equal(n, "000000010000000100000000");
	assert_int_equal(bk_wal_next_segment("00000001000000000000003F", 64u << 20, n), 0);
	assert_string_equal(n, "000000010000000100000000");
	assert_int_equal(bk_wal_next_segment("00000001.history", 16u << 20, n), -EINVAL);
	assert_int_equal(bk_wal_next_segment("000000010000000000000003", 3u << 20, n), -EINVAL);
}

static void test_compression_names(void **state)
{
	enum bk_compression c;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_compression_parse("gzip", &c, NULL), 0);
	assert_int_equal(c, BK_COMP_GZIP);
	assert_string_equal(bk_compression_suffix(c), ".gz");
	assert_int_equal(bk_compression_parse("zstd", &c, NULL), 0);
	assert_string_equal(bk_compression_suffix(c), ".zst");
	assert_int_equal(bk_compression_parse("", &c, NULL), 0);
	assert_int_equal(c, BK_COMP_NONE);
	assert_int_equal(bk_compression_parse("snappy", &c, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "snappy is not supported"));
	assert_int_equal(bk_compression_parse("brotli", &c, NULL), -EINVAL);

	char name[BK_WAL_NAME_MAX + 1];
	assert_int_equal(bk_wal_stored_parse("000000010000000000000003.bz2", name, &c), 0);
	assert_string_equal(name, "000000010000000000000003");
	assert_int_equal(c, BK_COMP_BZIP2);
	assert_int_equal(bk_wal_stored_parse("000000010000000000000003.partial.lz4", name, &c), 0);
	assert_string_equal(name, "000000010000000000000003.partial");
	assert_int_equal(c, BK_COMP_LZ4);
	assert_int_equal(bk_wal_stored_parse("00000002.history.snappy", name, &c), 0);
	assert_int_equal(c, BK_COMP_SNAPPY);
	assert_int_equal(bk_wal_stored_parse("00000002.history", name, &c), 0);
	assert_int_equal(c, BK_COMP_NONE);
	assert_int_equal(bk_wal_stored_parse("000000010000000000000003.gz.gz", name, &c), -EINVAL);
	assert_int_equal(bk_wal_stored_parse("backup.info", name, &c), -EINVAL);
	assert_int_equal(bk_wal_stored_parse(".gz", name, &c), -EINVAL);
}

#define CFG_OK                                                                                     \
	"{\"destinationPath\":\"s3://bucket/some/path\",\"serverName\":\"pg\","                    \
	"\"endpointURL\":\"https://127.0.0.1:9000\",\"accessKeyIdFile\":\"/s/a\","                 \
	"\"secretAccessKeyFile\":\"/s/s\",\"stateDir\":\"/run/x\""

static void test_layout_keys(void **state)
{
	struct bk_config cfg;
	struct op_err err = OP_ERR_INIT;
	const char *j = CFG_OK ",\"walCompression\":\"xz\",\"maxParallel\":4}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, &err), 0);
	struct op_buf b = OP_BUF_INIT(OS_KEY_MAX);
	assert_int_equal(bk_wal_key(&cfg, "000000010000000A000000FF", BK_COMP_GZIP, &b, NULL), 0);
	assert_string_equal(op_buf_str(&b), "some/path/pg/wals/000000010000000A/000000010000000A000000FF.gz");
	op_buf_reset(&b);
	assert_int_equal(bk_wal_key(&cfg, "00000002.history", BK_COMP_NONE, &b, NULL), 0);
	assert_string_equal(op_buf_str(&b), "some/path/pg/wals/00000002.history");
	op_buf_reset(&b);
	assert_int_equal(bk_wal_key(&cfg, "000000020000000000000003.partial", BK_COMP_ZSTD, &b, NULL), 0);
	assert_string_equal(op_buf_str(&b), "some/path/pg/wals/0000000200000000/000000020000000000000003.partial.zst");
	op_buf_reset(&b);
	assert_int_equal(bk_wal_key(&cfg, "000000010000000000000003.00000028.backup", BK_COMP_NONE, &b, NULL), 0);
	assert_string_equal(op_buf_str(&b), "some/path/pg/wals/0000000100000000/000000010000000000000003.00000028.backup");
	op_buf_reset(&b);
	assert_int_equal(bk_wal_key(&cfg, "nope", BK_COMP_NONE, &b, &err), -EINVAL);
	op_buf_done(&b);
	bk_config_done(&cfg);

	j = "{\"destinationPath\":\"s3://bucket\",\"serverName\":\"pg\",\"accessKeyIdFile\":\"/a\","
	    "\"secretAccessKeyFile\":\"/s\",\"stateDir\":\"/r\"}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	b = OP_BUF_INIT(OS_KEY_MAX);
	assert_int_equal(bk_wal_key(&cfg, "000000010000000000000001", BK_COMP_NONE, &b, NULL), 0);
	assert_string_equal(op_buf_str(&b), "pg/wals/0000000100000000/000000010000000000000001");
	op_buf_done(&b);
	bk_config_done(&cfg);
}

/* tags, historyTags, walEncryption, dataEncryption: parsed, encoded, and the
 * header lines each kind of upload gets. */
static void test_config_attrs(void **state)
{
	(void)state;
	struct bk_config cfg;
	struct op_err err = OP_ERR_INIT;
	const char *j = CFG_OK ",\"tags\":{\"env\":\"prod\",\"team name\":\"a=b\"},"
			       "\"historyTags\":{\"kind\":\"history\"},\"walEncryption\":\"AES256\","
			       "\"dataEncryption\":\"aws:kms\"}";
	if (bk_config_parse(j, strlen(j), &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.tagging, "env=prod&team%20name=a%3Db");
	assert_string_equal(cfg.history_tagging, "kind=history");
	struct os_config oc = { .endpoint = "https://127.0.0.1:9", .bucket = "bucket",
				.access_key = "AK", .secret_key = "SK" };
	struct os_client *c = NULL;
	assert_int_equal(os_client_new(&oc, &c, &err), 0);
	static const struct {
		enum bk_put_kind kind;
		const char *tagging, *sse;
	} kinds[] = {
		{ BK_PUT_WAL, "x-amz-tagging: env=prod&team%20name=a%3Db",
		  "x-amz-server-side-encryption: AES256" },
		{ BK_PUT_HISTORY, "x-amz-tagging: kind=history", "x-amz-server-side-encryption: AES256" },
		{ BK_PUT_DATA, "x-amz-tagging: env=prod&team%20name=a%3Db",
		  "x-amz-server-side-encryption: aws:kms" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(kinds); i++) {
		assert_int_equal(bk_client_set_attrs(c, &cfg, kinds[i].kind, &err), 0);
		assert_string_equal(c->put_hdrs[0], kinds[i].tagging);
		assert_string_equal(c->put_hdrs[1], kinds[i].sse);
	}
	bk_config_done(&cfg);
	/* no historyTags: .history files get the tags; nothing set: no header */
	j = CFG_OK ",\"tags\":{\"env\":\"\\u00e9t\\u00e9\"}}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, &err), 0);
	assert_null(cfg.history_tagging);
	assert_int_equal(bk_client_set_attrs(c, &cfg, BK_PUT_HISTORY, &err), 0);
	assert_string_equal(c->put_hdrs[0], "x-amz-tagging: env=%C3%A9t%C3%A9");
	assert_null(c->put_hdrs[1]);
	bk_config_done(&cfg);
	j = CFG_OK ",\"tags\":{}}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, &err), 0);
	assert_null(cfg.tagging);
	assert_int_equal(bk_client_set_attrs(c, &cfg, BK_PUT_DATA, &err), 0);
	assert_null(c->put_hdrs[0]);
	bk_config_done(&cfg);
	os_client_free(c);

	static const struct { const char *json, *msg; } bad[] = {
		{ CFG_OK ",\"tags\":[]}", "tags: expected an object" },
		{ CFG_OK ",\"tags\":{\"k\":1}}", "tags.k: expected string" },
		{ CFG_OK ",\"tags\":{\"a&b\":\"v\"}}", "config: tags: \"a&b\": tag key: only" },
		{ CFG_OK ",\"historyTags\":{\"aws:k\":\"v\"}}", "historyTags: \"aws:k\": tag key" },
		{ CFG_OK ",\"tags\":{\"a\":\"\",\"b\":\"\",\"c\":\"\",\"d\":\"\",\"e\":\"\",\"f\":\"\","
			 "\"g\":\"\",\"h\":\"\",\"i\":\"\",\"j\":\"\",\"k\":\"\"}}", "at most 10 tags" },
		{ CFG_OK ",\"walEncryption\":\"rot13\"}", "walEncryption: \"rot13\": expected AES256" },
		{ CFG_OK ",\"dataEncryption\":\"aes256\"}", "dataEncryption" },
		{ CFG_OK ",\"dataEncryption\":5}", "dataEncryption: expected string" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		err = (struct op_err)OP_ERR_INIT;
		int rc = bk_config_parse(bad[i].json, strlen(bad[i].json), &cfg, &err);
		if (rc != -EINVAL || !strstr(err.msg, bad[i].msg))
			fail_msg("bad[%zu]: rc %d, %s (want %s)", i, rc, err.msg, bad[i].msg);
	}
}

static void test_config(void **state)
{
	struct bk_config cfg;
	const char *j = CFG_OK ",\"walCompression\":\"lz4\",\"maxParallel\":8,\"region\":\"eu\","
			       "\"sessionTokenFile\":\"/s/t\",\"endpointCAFile\":\"/s/ca\",\"pgdata\":\"/pg\"}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	assert_int_equal(cfg.compression, BK_COMP_LZ4);
	assert_int_equal(cfg.max_parallel, 8);
	assert_string_equal(cfg.dest.bucket, "bucket");
	assert_string_equal(cfg.dest.prefix, "some/path");
	assert_string_equal(cfg.region, "eu");
	assert_string_equal(cfg.pgdata, "/pg");
	bk_config_done(&cfg);
	j = CFG_OK "}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	assert_int_equal(cfg.compression, BK_COMP_NONE);
	assert_int_equal(cfg.max_parallel, 1);
	assert_int_equal(cfg.jobs, BK_JOBS_DEFAULT);
	assert_null(cfg.session_token_file);
	bk_config_done(&cfg);
	/* the tar's part size: jobs + 1 buffers within BK_TAR_UPLOAD_MEM, floored */
	assert_int_equal(bk_tar_part_size(0), BK_TAR_PART_DEFAULT);
	assert_int_equal(bk_tar_part_size(1), BK_TAR_PART_DEFAULT);
	assert_int_equal(bk_tar_part_size(3), BK_TAR_UPLOAD_MEM / 4);
	assert_true(bk_tar_part_size(2) * 3 <= BK_TAR_UPLOAD_MEM);
	assert_int_equal(bk_tar_part_size(BK_MAX_PARALLEL), BK_TAR_PART_FLOOR);

	static const struct { const char *json, *msg; } bad[] = {
		{ "", "config" },
		{ "[]", "expected a JSON object" },
		{ "{\"serverName\":\"pg\"}", "is required" },
		{ CFG_OK ",\"walCompression\":\"snappy\"}", "snappy is not supported" },
		{ CFG_OK ",\"walCompression\":\"lzo\"}", "unknown compression" },
		{ CFG_OK ",\"walCompression\":1}", "expected string" },
		{ CFG_OK ",\"maxParallel\":0}", "maxParallel" },
		{ CFG_OK ",\"maxParallel\":1000}", "maxParallel" },
		{ CFG_OK ",\"maxParallel\":\"2\"}", "maxParallel" },
		{ CFG_OK ",\"maxArchiveSize\":1000}", "maxArchiveSize" },
		{ CFG_OK ",\"maxArchiveSize\":\"100GB\"}", "maxArchiveSize" },
		{ CFG_OK ",\"minChunkSize\":1048576}", "minChunkSize" },
		{ CFG_OK ",\"minChunkSize\":1073741824}", "minChunkSize" },
		{ CFG_OK ",\"walReadTimeout\":0}", "walReadTimeout" },
		{ CFG_OK ",\"dataReadTimeout\":86401}", "dataReadTimeout" },
		{ CFG_OK ",\"secretAccessKey\":\"inline\"}", "unknown key 'secretAccessKey'" },
		{ CFG_OK ",\"region\":5}", "region: expected string" },
		{ CFG_OK ",\"region\":\"\"}", "empty" },
		{ "{\"destinationPath\":\"http://x\",\"serverName\":\"pg\",\"accessKeyIdFile\":\"/a\","
		  "\"secretAccessKeyFile\":\"/s\",\"stateDir\":\"/r\"}", "config" },
		{ "{\"destinationPath\":\"s3://bucket\",\"serverName\":\"a/b\",\"accessKeyIdFile\":\"/a\","
		  "\"secretAccessKeyFile\":\"/s\",\"stateDir\":\"/r\"}", "serverName" },
		{ "{\"destinationPath\":\"s3://bucket\",\"serverName\":\"pg\",\"accessKeyIdFile\":\"/a\","
		  "\"secretAccessKeyFile\":\"/s\"}", "stateDir is required" },
		{ "{\"destinationPath\":\"s3://bucket\",\"serverName\":\"pg\",\"accessKeyIdFile\":\"/a\","
		  "\"secretAccessKeyFile\":\"/s\",\"stateDir\":\"/r\",\"endpointURL\":\"ftp://x\"}", "config" },
		{ CFG_OK, "config" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		struct op_err err = OP_ERR_INIT;
		int rc = bk_config_parse(bad[i].json, strlen(bad[i].json), &cfg, &err);
		if (rc == 0)
			fail_msg("accepted: %s", bad[i].json);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].json, err.msg, bad[i].msg);
	}
}

/* ---- compression ---- */

struct mem {
	unsigned char *p;
	size_t len, cap;
	int fail_after; /* sink fails (-EIO) after this many calls; 0: never */
	int calls;
};

static int mem_sink(void *ud, const void *buf, size_t len)
{
	struct mem *m = ud;
	if (m->fail_after && ++m->calls > m->fail_after)
		return -EIO;
	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->p = op_realloc(m->p, m->cap);
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

/* Pseudo WAL: compressible text with some noise, n bytes. */
static unsigned char *sample(size_t n)
{
	unsigned char *p = op_malloc(n);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		p[i] = (i % 97 < 60) ? (unsigned char)"INSERT INTO t VALUES "[i % 21] : (unsigned char)(x >> 24);
	}
	return p;
}

/* Feeds in in chunks of step bytes. */
static int feed(struct bk_codec *c, const unsigned char *in, size_t len, size_t step,
		struct op_err *err)
{
	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;
		int rc = bk_codec_write(c, in + off, n, err);
		if (rc < 0)
			return rc;
	}
	return bk_codec_finish(c, err);
}

static int run_codec(enum bk_compression comp, bool dec, const unsigned char *in, size_t len,
		     size_t step, uint64_t cap, struct mem *out, struct op_err *err)
{
	struct bk_codec *c = NULL;
	int rc = bk_codec_new(comp, dec, cap, mem_sink, out, &c, err);
	if (rc == 0)
		rc = feed(c, in, len, step, err);
	bk_codec_free(c);
	return rc;
}

static const enum bk_compression all[] = { BK_COMP_NONE, BK_COMP_GZIP, BK_COMP_BZIP2,
					   BK_COMP_XZ, BK_COMP_LZ4, BK_COMP_ZSTD };
/* The first bytes each format starts with (barman's compression.py MAGIC). */
static const char *magic[] = { "", "\x1f\x8b\x08", "BZh", "\xfd" "7zXZ", "\x04\x22\x4d\x18",
			       "\x28\xb5\x2f\xfd" };

/* The tar encoder (bk_codec_new_tar): every format reads back with the
 * common decoder; lz4 at barman-cloud-backup's fast level is larger than at
 * the WAL archiver's 6 on the same compressible input. */
static void test_tar_encoder(void **state)
{
	(void)state;
	const size_t n = 1u << 20;
	unsigned char *in = sample(n);
	size_t lz4_sizes[2] = { 0, 0 };
	for (size_t i = 0; i < OP_ARRAY_SIZE(all); i++) {
		struct mem enc = { 0 }, dec = { 0 };
		struct op_err err = OP_ERR_INIT;
		struct bk_codec *c = NULL;
		assert_int_equal(bk_codec_new_tar(all[i], UINT64_MAX, mem_sink, &enc, &c, &err), 0);
		assert_int_equal(feed(c, in, n, 65536, &err), 0);
		bk_codec_free(c);
		assert_int_equal(run_codec(all[i], true, enc.p, enc.len, 65536, n, &dec, &err), 0);
		assert_int_equal(dec.len, n);
		assert_memory_equal(dec.p, in, n);
		if (all[i] == BK_COMP_LZ4) {
			struct mem wal = { 0 };
			assert_int_equal(run_codec(BK_COMP_LZ4, false, in, n, 65536, UINT64_MAX, &wal,
						   &err),
					 0);
			lz4_sizes[0] = enc.len;
			lz4_sizes[1] = wal.len;
			free(wal.p);
		}
		free(enc.p);
		free(dec.p);
	}
	assert_true(lz4_sizes[0] > lz4_sizes[1]);
	free(in);
}

static void test_round_trips(void **state)
{
	const size_t n = 3u << 20;
	unsigned char *in = sample(n);
	for (size_t i = 0; i < OP_ARRAY_SIZE(all); i++) {
		for (size_t step = 1000; step <= 1000000; step *= 1000) {
			struct mem z = { 0 }, back = { 0 };
			struct op_err err = OP_ERR_INIT;
			assert_int_equal(run_codec(all[i], false, in, n, step, UINT64_MAX, &z, &err), 0);
			assert_memory_equal(z.p, magic[i], strlen(magic[i]));
			if (all[i] != BK_COMP_NONE)
				assert_true(z.len < n / 2);
			if (run_codec(all[i], true, z.p, z.len, step * 7, n, &back, &err) != 0)
				fail_msg("%s, %zu-byte writes: %s", bk_compression_name(all[i]), step,
					 err.msg);
			assert_int_equal(back.len, n);
			assert_memory_equal(back.p, in, n);
			free(z.p);
			free(back.p);
		}
		/* empty input */
		struct mem z = { 0 }, back = { 0 };
		assert_int_equal(run_codec(all[i], false, in, 0, 1, UINT64_MAX, &z, NULL), 0);
		assert_int_equal(run_codec(all[i], true, z.p, z.len, 3, 10, &back, NULL), 0);
		assert_int_equal(back.len, 0);
		free(z.p);
		free(back.p);
	}
	free(in);
}

/* The sizes of the gzip members of z[0, len) (zlib, member by member), at
 * most max of them; the number of members, or -1 when z is not whole gzip. */
static int gzip_members(const unsigned char *z, size_t len, size_t *sizes, int max)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	unsigned char *out = op_malloc(65536);
	s.next_in = (Bytef *)(uintptr_t)z;
	s.avail_in = (uInt)len;
	int n = 0;
	size_t member = 0;
	while (n >= 0 && s.avail_in > 0) {
		s.next_out = out;
		s.avail_out = 65536;
		int zr = inflate(&s, Z_NO_FLUSH);
		member += 65536 - s.avail_out;
		if (zr == Z_STREAM_END) {
			assert_true(n < max);
			sizes[n++] = member;
			member = 0;
			assert_int_equal(inflateReset(&s), Z_OK);
		} else if (zr != Z_OK) {
			n = -1;
		}
	}
	if (member > 0)
		n = -1; /* ends inside a member */
	inflateEnd(&s);
	free(out);
	return n;
}

/* A WAL file's gzip is written one member per BK_GZ_CHUNK of input, whatever
 * the writes' sizes: empty input is one empty member, exactly one chunk one
 * member, a chunk and a byte two; each reads back through pgop's decoder. */
static void test_gzip_members(void **state)
{
	(void)state;
	const size_t C = BK_GZ_CHUNK;
	unsigned char *in = sample(3 * C + 5);
	static const struct {
		size_t len, step;
		int members;
	} cases[] = {
		{ 0, 1, 1 },
		{ 1, 1, 1 },
		{ BK_GZ_CHUNK - 1, 4096, 1 },
		{ BK_GZ_CHUNK, 4096, 1 },
		{ BK_GZ_CHUNK, BK_GZ_CHUNK, 1 },
		{ BK_GZ_CHUNK + 1, 4096, 2 },
		{ BK_GZ_CHUNK + 1, BK_GZ_CHUNK + 1, 2 },
		{ 3 * BK_GZ_CHUNK + 5, 999, 4 },
		{ 3 * BK_GZ_CHUNK + 5, 3 * BK_GZ_CHUNK + 5, 4 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct mem z = { 0 }, back = { 0 };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(run_codec(BK_COMP_GZIP, false, in, cases[i].len, cases[i].step,
					   UINT64_MAX, &z, &err),
				 0);
		size_t sizes[8];
		int n = gzip_members(z.p, z.len, sizes, 8);
		if (n != cases[i].members)
			fail_msg("%zu bytes in %zu-byte writes: %d members", cases[i].len, cases[i].step, n);
		for (int k = 0; k < n; k++) /* full chunks, then the rest */
			assert_int_equal(sizes[k], k + 1 < n ? C : cases[i].len - (size_t)k * C);
		assert_int_equal(run_codec(BK_COMP_GZIP, true, z.p, z.len, 777, cases[i].len, &back,
					   &err),
				 0);
		assert_int_equal(back.len, cases[i].len);
		if (cases[i].len)
			assert_memory_equal(back.p, in, cases[i].len);
		free(z.p);
		free(back.p);
	}
	/* a tar's is one member whatever its size: tarfile's "r|gz" stream, which
	 * barman-cloud-restore reads it with, stops after the first */
	struct mem z = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct bk_codec *c = NULL;
	assert_int_equal(bk_codec_new_tar(BK_COMP_GZIP, UINT64_MAX, mem_sink, &z, &c, &err), 0);
	assert_int_equal(feed(c, in, 3 * C + 5, 65536, &err), 0);
	bk_codec_free(c);
	size_t size;
	assert_int_equal(gzip_members(z.p, z.len, &size, 1), 1);
	assert_int_equal(size, 3 * C + 5);
	free(z.p);
	free(in);
}

/* The gzip encoder holds less than one batch of chunks (one per lane): the
 * batch's members reach the sink, whole and in order, as soon as its last
 * chunk is complete, before finish. With 1 lane and with this machine's. */
static int mem_emit(void *ud, const void *p, size_t n, struct op_err *err)
{
	(void)err;
	return mem_sink(ud, p, n);
}

static void gzip_bounded(unsigned lanes)
{
	const size_t C = BK_GZ_CHUNK, B = lanes * C;
	unsigned char *in = sample(3 * B);
	struct mem z = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct bk_gz_lanes *g = NULL;
	assert_int_equal(op_dl_load(&bk_dl_deflate, &err), 0);
	assert_int_equal(bk_gz_lanes_new(lanes, &g), 0);
	size_t sizes[3 * BK_GZ_LANES_MAX + 1];
	for (size_t k = 1; k <= 3; k++) {
		/* a batch less a byte: nothing more out yet */
		size_t before = z.len;
		assert_int_equal(bk_gz_lanes_write(g, in + (k - 1) * B, B - 1, false, mem_emit, &z, &err), 0);
		assert_int_equal(z.len, before);
		/* its last byte: its members are out, and whole */
		assert_int_equal(bk_gz_lanes_write(g, in + k * B - 1, 1, false, mem_emit, &z, &err), 0);
		assert_true(z.len > before);
		assert_int_equal(gzip_members(z.p, z.len, sizes, OP_ARRAY_SIZE(sizes)), (int)(k * lanes));
		for (size_t i = 0; i < k * lanes; i++)
			assert_int_equal(sizes[i], C);
	}
	size_t before = z.len;
	assert_int_equal(bk_gz_lanes_write(g, NULL, 0, true, mem_emit, &z, &err), 0);
	assert_int_equal(z.len, before); /* nothing left: no empty member */
	struct mem back = { 0 };
	assert_int_equal(run_codec(BK_COMP_GZIP, true, z.p, z.len, 4096, UINT64_MAX, &back, NULL), 0);
	assert_int_equal(back.len, 3 * B);
	assert_memory_equal(back.p, in, 3 * B);
	bk_gz_lanes_free(g);
	free(back.p);
	free(z.p);
	free(in);
}

static void test_gzip_bounded(void **state)
{
	(void)state;
	gzip_bounded(1);
	gzip_bounded(3);
	gzip_bounded(bk_gz_lanes_default());
	assert_true(bk_gz_lanes_default() >= 1 && bk_gz_lanes_default() <= BK_GZ_LANES_MAX);
}

/* Two gzip members / bzip2 streams / xz streams / frames read as one (Python does). */
static void test_concatenated(void **state)
{
	unsigned char *in = sample(100000);
	for (size_t i = 1; i < OP_ARRAY_SIZE(all); i++) {
		struct mem z = { 0 }, back = { 0 };
		assert_int_equal(run_codec(all[i], false, in, 60000, 4096, UINT64_MAX, &z, NULL), 0);
		assert_int_equal(run_codec(all[i], false, in + 60000, 40000, 4096, UINT64_MAX, &z, NULL), 0);
		struct op_err err = OP_ERR_INIT;
		if (run_codec(all[i], true, z.p, z.len, 999, UINT64_MAX, &back, &err) != 0)
			fail_msg("%s: %s", bk_compression_name(all[i]), err.msg);
		assert_int_equal(back.len, 100000);
		assert_memory_equal(back.p, in, 100000);
		free(z.p);
		free(back.p);
	}
	free(in);
}

static void test_corrupt_and_truncated(void **state)
{
	const size_t n = 1u << 20;
	unsigned char *in = sample(n);
	for (size_t i = 1; i < OP_ARRAY_SIZE(all); i++) {
		struct mem z = { 0 };
		assert_int_equal(run_codec(all[i], false, in, n, 65536, UINT64_MAX, &z, NULL), 0);
		/* truncated at several points: an error, never a crash nor success */
		size_t cuts[] = { 1, 3, 10, z.len / 2, z.len - 1 };
		for (size_t k = 0; k < OP_ARRAY_SIZE(cuts); k++) {
			struct mem back = { 0 };
			struct op_err err = OP_ERR_INIT;
			int rc = run_codec(all[i], true, z.p, cuts[k], 4096, n, &back, &err);
			if (rc != -EBADMSG)
				fail_msg("%s cut at %zu: rc %d (%s)", bk_compression_name(all[i]), cuts[k], rc, err.msg);
			free(back.p);
		}
		/* flipped bytes in the middle: an error (checksums) or at worst different
		 * bytes, never a crash; the header destroyed: an error */
		unsigned char *bad = op_malloc(z.len);
		memcpy(bad, z.p, z.len);
		for (size_t k = z.len / 3; k < z.len / 3 + 64; k++)
			bad[k] ^= 0x5a;
		struct mem back = { 0 };
		int rc = run_codec(all[i], true, bad, z.len, 4096, n, &back, NULL);
		if (rc == 0)
			assert_true(back.len != n || memcmp(back.p, in, n) != 0 || all[i] == BK_COMP_LZ4);
		free(back.p);
		back = (struct mem){ 0 };
		memcpy(bad, "garbage!", 8);
		assert_int_equal(run_codec(all[i], true, bad, z.len, 4096, n, &back, NULL), -EBADMSG);
		free(back.p);
		/* trailing garbage after a complete stream */
		back = (struct mem){ 0 };
		unsigned char *tail = op_malloc(z.len + 16);
		memcpy(tail, z.p, z.len);
		memset(tail + z.len, 'x', 16);
		assert_int_equal(run_codec(all[i], true, tail, z.len + 16, 4096, n, &back, NULL), -EBADMSG);
		free(back.p);
		free(tail);
		free(bad);
		free(z.p);
	}
	free(in);
}

static void test_caps_and_sink_errors(void **state)
{
	const size_t n = 2u << 20;
	unsigned char *in = sample(n);
	for (size_t i = 0; i < OP_ARRAY_SIZE(all); i++) {
		struct mem z = { 0 }, back = { 0 };
		assert_int_equal(run_codec(all[i], false, in, n, 65536, UINT64_MAX, &z, NULL), 0);
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(run_codec(all[i], true, z.p, z.len, 65536, n - 1, &back, &err), -EFBIG);
		assert_non_null(strstr(err.msg, "larger than its cap"));
		assert_true(back.len <= n - 1);
		free(back.p);
		back = (struct mem){ .fail_after = 2 };
		assert_int_equal(run_codec(all[i], true, z.p, z.len, 65536, n, &back, NULL), -EIO);
		free(back.p);
		free(z.p);
	}
	struct bk_codec *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_codec_new(BK_COMP_SNAPPY, true, 1, mem_sink, NULL, &c, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "snappy"));
	free(in);
}

static void test_sysid(void **state)
{
	unsigned char ctl[296] = { 0 };
	uint64_t id = 7300000000000000001ull, got;
	memcpy(ctl, &id, 8);
	assert_int_equal(bk_sysid_from_pg_control(ctl, sizeof(ctl), &got, NULL), 0);
	assert_true(got == id);
	assert_int_equal(bk_sysid_from_pg_control(ctl, 4, &got, NULL), -EBADMSG);
	unsigned char page[64] = { 0 };
	page[0] = 0x10, page[1] = 0xd1; /* xlp_magic 0xD110 (PostgreSQL 15) */
	page[2] = 0x02;                 /* XLP_LONG_HEADER */
	memcpy(page + 24, &id, 8);
	assert_int_equal(bk_sysid_from_wal(page, sizeof(page), &got, NULL), 0);
	assert_true(got == id);
	page[2] = 0;
	assert_int_equal(bk_sysid_from_wal(page, sizeof(page), &got, NULL), -EBADMSG);
	assert_int_equal(bk_sysid_from_wal(page, 20, &got, NULL), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wal_names),
		cmocka_unit_test(test_next_segment),
		cmocka_unit_test(test_compression_names),
		cmocka_unit_test(test_layout_keys),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_attrs),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_tar_encoder),
		cmocka_unit_test(test_concatenated),
		cmocka_unit_test(test_gzip_members),
		cmocka_unit_test(test_gzip_bounded),
		cmocka_unit_test(test_corrupt_and_truncated),
		cmocka_unit_test(test_caps_and_sink_errors),
		cmocka_unit_test(test_sysid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
