/* backup/check.c - before the first archive into a destination: its wals/
 * must be empty or hold WAL of this very system.
 *
 * barman-cloud-check-wal-archive (what CloudNativePG runs before the first
 * WAL) refuses any non-empty wals/ ("Expected empty archive", xlog.py
 * check_archive_usable()): a cluster recreated from its own backup then
 * stops archiving (cnpg #6137). pgop refuses only what is dangerous, WAL
 * of another system: it reads the system identifier in the long header of
 * the first stored segment (a few bytes decompressed, the GET cut short)
 * and compares it with pg_control's. A passed check is remembered in
 * <stateDir>/wal-archive-checked ("<wals prefix URL> <sysid>") and not
 * repeated while that file says the same. */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "backup/internal.h"
#include "support/alloc.h"

#define HEADER_BYTES 64

struct scan {
	size_t n;           /* entries seen */
	char key[OS_KEY_MAX + 1]; /* first segment found, "" when none */
	enum bk_compression comp;
};

static int scan_entry(void *ud, const struct os_list_entry *e)
{
	struct scan *s = ud;
	s->n++;
	const char *slash = strrchr(e->key, '/');
	char name[BK_WAL_NAME_MAX + 1];
	enum bk_compression comp;
	struct bk_wal_name w;
	if (bk_wal_stored_parse(slash ? slash + 1 : e->key, name, &comp) < 0 ||
	    comp == BK_COMP_SNAPPY || bk_wal_name_parse(name, &w, NULL) < 0 ||
	    (w.kind != BK_WAL_SEGMENT && w.kind != BK_WAL_PARTIAL) || strlen(e->key) > OS_KEY_MAX)
		return 0;
	strcpy(s->key, e->key);
	s->comp = comp;
	return 1; /* one is enough */
}

struct head {
	unsigned char b[HEADER_BYTES];
	size_t len;
	struct bk_codec *codec;
};

static int head_sink(void *ud, const void *buf, size_t len)
{
	struct head *h = ud;
	size_t n = len < sizeof(h->b) - h->len ? len : sizeof(h->b) - h->len;
	memcpy(h->b + h->len, buf, n);
	h->len += n;
	return h->len == sizeof(h->b) ? -ECANCELED : 0; /* enough: cut the GET short */
}

static int head_write(void *ud, const void *buf, size_t len)
{
	struct head *h = ud;
	return bk_codec_write(h->codec, buf, len, NULL);
}

/* The system identifier of the stored segment key (comp). */
static int stored_sysid(struct os_client *c, const char *key, enum bk_compression comp,
			uint64_t *ret, struct op_err *err)
{
	struct head h = { .len = 0 };
	int rc = bk_codec_new(comp, true, BK_WAL_MAX_BYTES, head_sink, &h, &h.codec, err);
	if (rc < 0)
		return rc;
	struct op_err gerr = OP_ERR_INIT;
	rc = os_get(c, key, head_write, &h, BK_WAL_MAX_BYTES * 2, NULL, &gerr);
	if (rc < 0 && h.len < sizeof(h.b)) /* a failure before the header arrived */
		op_err_set(err, rc, "%s", gerr.msg);
	bk_codec_free(h.codec);
	if (rc < 0 && h.len < sizeof(h.b))
		return rc;
	rc = bk_sysid_from_wal(h.b, h.len, ret, err);
	return rc < 0 ? op_err_prefix(err, "s3://%s/%s", os_client_bucket(c), key) : 0;
}

static int local_sysid(const struct bk_config *cfg, uint64_t *ret, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/global/pg_control", cfg->pgdata ? cfg->pgdata : ".");
	struct op_buf b = OP_BUF_INIT(64 * 1024);
	int rc = bk_read_file(path, &b, err);
	if (rc == 0)
		rc = bk_sysid_from_pg_control(b.data, b.len, ret, err);
	op_buf_done(&b);
	return rc;
}

int bk_check_archive(struct os_client *c, const struct bk_config *cfg, struct op_err *err)
{
	uint64_t mine, theirs;
	int rc = local_sysid(cfg, &mine, err);
	if (rc < 0)
		return rc;
	struct op_buf prefix = OP_BUF_INIT(OS_KEY_MAX);
	if (bk_wals_prefix(cfg, &prefix) < 0)
		return op_err_set(err, -EINVAL, "WAL prefix too long");
	_cleanup_free_ char *marker = op_asprintf("%s/" BK_CHECK_MARKER, cfg->state_dir);
	_cleanup_free_ char *want = op_asprintf("s3://%s/%s %" PRIu64 "\n", cfg->dest.bucket,
						 op_buf_str(&prefix), mine);
	struct op_buf have = OP_BUF_INIT(4096);
	if (bk_read_file(marker, &have, NULL) == 0 && strcmp(op_buf_str(&have), want) == 0)
		goto out; /* checked before */
	struct scan s = { .n = 0 };
	struct os_list_opts lo = { .prefix = op_buf_str(&prefix), .max_entries = 1000000 };
	rc = os_list(c, &lo, scan_entry, &s, err);
	if (rc >= 0 && s.n > 0 && !s.key[0])
		rc = op_err_set(err, -EEXIST, "s3://%s/%s is not empty (%zu files, no WAL segment to "
				"read a system identifier from): expected an empty archive; use another "
				"serverName or destinationPath", cfg->dest.bucket, op_buf_str(&prefix), s.n);
	if (rc >= 0 && s.key[0] && (rc = stored_sysid(c, s.key, s.comp, &theirs, err)) == 0 &&
	    theirs != mine)
		rc = op_err_set(err, -EEXIST, "s3://%s/%s holds WAL of another system (system "
				"identifier %" PRIu64 " in %s, this one is %" PRIu64 "): refusing to "
				"archive into it; use another serverName or destinationPath",
				cfg->dest.bucket, op_buf_str(&prefix), theirs, s.key, mine);
	if (rc >= 0)
		rc = bk_write_file(marker, want, strlen(want), err);
out:
	op_buf_done(&have);
	op_buf_done(&prefix);
	return rc < 0 ? rc : 0;
}
