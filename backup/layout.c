/* backup/layout.c - WAL file names, compression names and suffixes, object
 * keys as barman-cloud lays them out, system identifiers (all pure). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backup/backup.h"

static const struct {
	enum bk_compression c;
	const char *name, *suffix;
} comps[] = {
	{ BK_COMP_NONE, "none", "" },	   { BK_COMP_GZIP, "gzip", ".gz" },
	{ BK_COMP_BZIP2, "bzip2", ".bz2" }, { BK_COMP_XZ, "xz", ".xz" },
	{ BK_COMP_LZ4, "lz4", ".lz4" },	   { BK_COMP_ZSTD, "zstd", ".zst" },
	{ BK_COMP_SNAPPY, "snappy", ".snappy" },
};

const char *bk_compression_name(enum bk_compression c)
{
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++)
		if (comps[i].c == c)
			return comps[i].name;
	return "?";
}

const char *bk_compression_suffix(enum bk_compression c)
{
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++)
		if (comps[i].c == c)
			return comps[i].suffix;
	return "";
}

int bk_compression_parse(const char *name, enum bk_compression *ret, struct op_err *err)
{
	if (!name || !*name) {
		*ret = BK_COMP_NONE;
		return 0;
	}
	if (strcmp(name, "snappy") == 0)
		return op_err_set(err, -ENOTSUP,
				  "compression snappy is not supported (no Debian library writes "
				  "python-snappy's framing format): use gzip, bzip2, xz, lz4 or zstd");
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		if (strcmp(comps[i].name, name) == 0) {
			*ret = comps[i].c;
			return 0;
		}
	}
	return op_err_set(err, -EINVAL,
			  "unknown compression '%.40s' (none, gzip, bzip2, xz, lz4, zstd)", name);
}

static bool hex_upper(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

static uint32_t hex32(const char *s)
{
	uint32_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 4 | (uint32_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'A' + 10);
	return v;
}

int bk_wal_name_parse(const char *name, struct bk_wal_name *ret, struct op_err *err)
{
	size_t n = name ? strlen(name) : 0;
	struct bk_wal_name w = { 0 };
	if (n == 16 && hex_upper(name, 8) && strcmp(name + 8, ".history") == 0) {
		w.kind = BK_WAL_HISTORY;
	} else if (n >= 24 && hex_upper(name, 24)) {
		const char *rest = name + 24;
		if (!*rest)
			w.kind = BK_WAL_SEGMENT;
		else if (strcmp(rest, ".partial") == 0)
			w.kind = BK_WAL_PARTIAL;
		else if (n == 40 && rest[0] == '.' && hex_upper(rest + 1, 8) &&
			 strcmp(rest + 9, ".backup") == 0)
			w.kind = BK_WAL_BACKUP;
		else
			goto bad;
		w.log = hex32(name + 8);
		w.seg = hex32(name + 16);
	} else {
		goto bad;
	}
	w.tli = hex32(name);
	if (ret)
		*ret = w;
	return 0;
bad:
	return op_err_set(err, -EINVAL,
			  "'%.60s' is not a WAL file name (24 hex digits, optionally .partial or "
			  ".NNNNNNNN.backup, or TTTTTTTT.history)",
			  name ? name : "");
}

bool bk_wal_name_valid(const char *name)
{
	return bk_wal_name_parse(name, NULL, NULL) == 0;
}

int bk_wal_next_segment(const char *seg, uint64_t seg_size, char ret[25])
{
	struct bk_wal_name w;
	if (bk_wal_name_parse(seg, &w, NULL) < 0 || w.kind != BK_WAL_SEGMENT)
		return -EINVAL;
	if (seg_size < (1u << 20) || seg_size > (1u << 30) || (seg_size & (seg_size - 1)))
		return -EINVAL;
	uint64_t per_log = 0x100000000ull / seg_size;
	uint64_t no = (uint64_t)w.log * per_log + w.seg + 1;
	if (no / per_log > UINT32_MAX)
		return -ERANGE;
	snprintf(ret, 25, "%08X%08X%08X", w.tli, (uint32_t)(no / per_log), (uint32_t)(no % per_log));
	return 0;
}

int bk_wal_stored_parse(const char *basename, char *ret_name, enum bk_compression *ret_comp)
{
	size_t n = strlen(basename);
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		size_t sl = strlen(comps[i].suffix);
		if (sl >= n || sl == 0 || strcmp(basename + n - sl, comps[i].suffix) != 0)
			continue;
		if (n - sl > BK_WAL_NAME_MAX)
			return -EINVAL;
		char name[BK_WAL_NAME_MAX + 1];
		memcpy(name, basename, n - sl);
		name[n - sl] = '\0';
		if (!bk_wal_name_valid(name))
			return -EINVAL;
		memcpy(ret_name, name, n - sl + 1);
		*ret_comp = comps[i].c;
		return 0;
	}
	if (n > BK_WAL_NAME_MAX || !bk_wal_name_valid(basename))
		return -EINVAL;
	memcpy(ret_name, basename, n + 1);
	*ret_comp = BK_COMP_NONE;
	return 0;
}

int bk_wals_prefix(const struct bk_config *cfg, struct op_buf *out)
{
	const char *p = cfg->dest.prefix;
	return op_buf_addf(out, "%s%s%s/wals/", p, *p ? "/" : "", cfg->server_name);
}

int bk_wal_key(const struct bk_config *cfg, const char *walname, enum bk_compression comp,
	       struct op_buf *out, struct op_err *err)
{
	struct bk_wal_name w;
	int rc = bk_wal_name_parse(walname, &w, err);
	if (rc < 0)
		return rc;
	rc = bk_wals_prefix(cfg, out);
	if (rc == 0 && w.kind != BK_WAL_HISTORY) /* barman: hash_dir() is "" for history */
		rc = op_buf_addf(out, "%.16s/", walname);
	if (rc == 0)
		rc = op_buf_addf(out, "%s%s", walname, bk_compression_suffix(comp));
	if (rc == 0 && !os_key_valid(op_buf_str(out)))
		rc = -EINVAL;
	return rc < 0 ? op_err_set(err, rc, "object key for %s too long or invalid", walname) : 0;
}

int bk_sysid_from_pg_control(const void *data, size_t len, uint64_t *ret, struct op_err *err)
{
	if (len < 8)
		return op_err_set(err, -EBADMSG, "pg_control: %zu bytes, too short", len);
	uint64_t id;
	memcpy(&id, data, sizeof(id)); /* the server's byte order: this machine's */
	if (id == 0)
		return op_err_set(err, -EBADMSG, "pg_control: system identifier is 0");
	*ret = id;
	return 0;
}

#define XLP_LONG_HEADER 0x0002
#define XLOG_SHORT_PHD 24 /* MAXALIGN(sizeof(XLogPageHeaderData)) */

int bk_sysid_from_wal(const void *data, size_t len, uint64_t *ret, struct op_err *err)
{
	if (len < XLOG_SHORT_PHD + 8)
		return op_err_set(err, -EBADMSG, "WAL segment: %zu bytes, too short for a header",
				  len);
	uint16_t info;
	memcpy(&info, (const char *)data + 2, sizeof(info));
	if (!(info & XLP_LONG_HEADER))
		return op_err_set(err, -EBADMSG, "WAL segment: first page has no long header");
	uint64_t id;
	memcpy(&id, (const char *)data + XLOG_SHORT_PHD, sizeof(id));
	*ret = id;
	return 0;
}
