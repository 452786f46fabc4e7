/* backup/backupinfo.c - barman's backup.info (infofile.py BackupInfo, as
 * barman-cloud 3.19.1 writes it) rendered and parsed, backup ids and the
 * keys of base backups (all pure).
 *
 * The format is FieldListFile.save(): for every Field of the class in sorted
 * name order "name=value\n", value being the field's dump (str() by default,
 * so None is "None"; repr() for backup_label, copy_stats, included_files;
 * a repr'd list of tuples for tablespaces; str(datetime) for the times).
 * load() strips key and value, turns "None" into None and applies the
 * field's load (int(), ast.literal_eval, dateutil). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backup/internal.h"
#include "support/alloc.h"

enum ftype { F_STR, F_PYSTR, F_RAW, F_INT, F_TIME, F_STATUS, F_TBS };

static const struct field {
	const char *name;
	enum ftype type;
	size_t off;
	bool hide_if_null; /* BackupInfo._hide_if_null */
} fields[] = {
#define FLD(n, t) { #n, t, offsetof(struct bk_backup_info, n), false }
	FLD(backup_label, F_PYSTR),
	{ "backup_name", F_STR, offsetof(struct bk_backup_info, backup_name), true },
	FLD(begin_offset, F_INT),
	FLD(begin_time, F_TIME),
	FLD(begin_wal, F_STR),
	FLD(begin_xlog, F_STR),
	FLD(children_backup_ids, F_STR),
	FLD(cluster_size, F_INT),
	FLD(compression, F_STR),
	FLD(config_file, F_STR),
	FLD(copy_stats, F_RAW),
	FLD(data_checksums, F_STR),
	FLD(deduplicated_size, F_INT),
	FLD(encryption, F_STR),
	FLD(end_offset, F_INT),
	FLD(end_time, F_TIME),
	FLD(end_wal, F_STR),
	FLD(end_xlog, F_STR),
	FLD(error, F_STR),
	FLD(hba_file, F_STR),
	FLD(ident_file, F_STR),
	FLD(included_files, F_RAW),
	FLD(mode, F_STR),
	FLD(parent_backup_id, F_STR),
	FLD(pgdata, F_STR),
	FLD(server_name, F_STR),
	FLD(size, F_INT),
	{ "snapshots_info", F_RAW, offsetof(struct bk_backup_info, snapshots_info), true },
	FLD(status, F_STATUS),
	FLD(summarize_wal, F_STR),
	FLD(systemid, F_STR),
	{ "tablespaces", F_TBS, 0, false },
	FLD(timeline, F_INT),
	FLD(version, F_INT),
	FLD(xlog_segment_size, F_INT),
#undef FLD
};

static const char *const status_names[] = {
	[BK_STATUS_EMPTY] = "EMPTY",	 [BK_STATUS_STARTED] = "STARTED",
	[BK_STATUS_WAITING_FOR_WALS] = "WAITING_FOR_WALS",
	[BK_STATUS_DONE] = "DONE",	 [BK_STATUS_SYNCING] = "SYNCING",
	[BK_STATUS_FAILED] = "FAILED",
};

const char *bk_backup_status_name(enum bk_backup_status s)
{
	return (size_t)s < OP_ARRAY_SIZE(status_names) ? status_names[s] : "?";
}

#define DEFAULT_XLOG_SEG_SIZE (16 * 1024 * 1024) /* barman.xlog.DEFAULT_XLOG_SEG_SIZE */

void bk_backup_info_init(struct bk_backup_info *bi)
{
	*bi = (struct bk_backup_info){ .status = BK_STATUS_EMPTY };
	bi->xlog_segment_size = (struct bk_opt_int){ .set = true, .v = DEFAULT_XLOG_SEG_SIZE };
}

static char **str_at(struct bk_backup_info *bi, const struct field *f)
{
	return (char **)(void *)((char *)bi + f->off);
}

static void tablespaces_free(struct bk_tablespace *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		free(t[i].name);
		free(t[i].location);
	}
	free(t);
}

void bk_backup_info_done(struct bk_backup_info *bi)
{
	if (!bi)
		return;
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++) {
		enum ftype t = fields[i].type;
		if (t == F_STR || t == F_PYSTR || t == F_RAW)
			free(*str_at(bi, &fields[i]));
	}
	tablespaces_free(bi->tablespaces, bi->n_tablespaces);
	bk_backup_info_init(bi);
}

/* ---- rendering ---- */

/* Python's str(datetime) of an aware datetime. */
static int render_time(const struct bk_time *t, struct op_buf *out)
{
	int64_t local_us = t->epoch_us + (int64_t)t->utc_offset_s * 1000000;
	int64_t secs = local_us / 1000000, us = local_us % 1000000;
	if (us < 0)
		us += 1000000, secs--;
	time_t tt = (time_t)secs;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return -EINVAL;
	int rc = op_buf_addf(out, "%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900,
			     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (rc == 0 && us)
		rc = op_buf_addf(out, ".%06d", (int)us);
	int32_t off = t->utc_offset_s < 0 ? -t->utc_offset_s : t->utc_offset_s;
	if (rc == 0)
		rc = op_buf_addf(out, "%c%02d:%02d", t->utc_offset_s < 0 ? '-' : '+',
				 (int)(off / 3600), (int)(off / 60 % 60));
	if (rc == 0 && off % 60)
		rc = op_buf_addf(out, ":%02d", (int)(off % 60));
	return rc;
}

/* repr([tuple(t) for t in tablespaces]): [('name', oid, 'location'), ...] */
static int render_tablespaces(const struct bk_backup_info *bi, struct op_buf *out)
{
	if (!bi->tablespaces || bi->n_tablespaces == 0)
		return op_buf_adds(out, "None"); /* output_tablespace_list: [] is None */
	int rc = op_buf_addc(out, '[');
	for (size_t i = 0; rc == 0 && i < bi->n_tablespaces; i++) {
		const struct bk_tablespace *t = &bi->tablespaces[i];
		rc = op_buf_adds(out, i ? ", (" : "(");
		if (rc == 0)
			rc = bk_py_repr_str(t->name ? t->name : "", out);
		if (rc == 0)
			rc = op_buf_addf(out, ", %u, ", t->oid);
		if (rc == 0)
			rc = bk_py_repr_str(t->location ? t->location : "", out);
		if (rc == 0)
			rc = op_buf_addc(out, ')');
	}
	return rc ? rc : op_buf_addc(out, ']');
}

static bool one_line(const char *s)
{
	return !strpbrk(s, "\r\n");
}

/* The value of field f; 1 when it is None and hidden (nothing written). */
static int render_value(const struct bk_backup_info *bi, const struct field *f,
			struct op_buf *out)
{
	const void *at = (const char *)bi + f->off;
	const char *s = NULL;
	switch (f->type) {
	case F_STR:
	case F_PYSTR:
	case F_RAW:
		s = *(char *const *)at;
		if (!s)
			return f->hide_if_null ? 1 : op_buf_adds(out, "None");
		if (f->type == F_PYSTR)
			return *s ? bk_py_repr_str(s, out) : op_buf_adds(out, "None"); /* null_repr */
		if (f->type == F_RAW && !*s)
			return op_buf_adds(out, "None");
		return one_line(s) ? op_buf_adds(out, s) : -EINVAL;
	case F_INT: {
		const struct bk_opt_int *v = at;
		return v->set ? op_buf_addf(out, "%lld", (long long)v->v) : op_buf_adds(out, "None");
	}
	case F_TIME: {
		const struct bk_time *t = at;
		return t->set ? render_time(t, out) : op_buf_adds(out, "None");
	}
	case F_STATUS:
		return (size_t)bi->status < OP_ARRAY_SIZE(status_names)
			       ? op_buf_adds(out, status_names[bi->status])
			       : -EINVAL;
	case F_TBS:
		return render_tablespaces(bi, out);
	}
	return -EINVAL;
}

int bk_backup_info_render(const struct bk_backup_info *bi, struct op_buf *out, struct op_err *err)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++) {
		size_t mark = out->len;
		int rc = op_buf_addf(out, "%s=", fields[i].name);
		if (rc == 0)
			rc = render_value(bi, &fields[i], out);
		if (rc == 1) {
			op_buf_truncate(out, mark);
			continue;
		}
		if (rc == 0)
			rc = op_buf_addc(out, '\n');
		if (rc == -EINVAL)
			return op_err_set(err, rc, "backup.info: field %s: not renderable "
					  "(line break, invalid UTF-8 or unknown value)", fields[i].name);
		if (rc < 0)
			return op_err_set(err, rc, "backup.info: too large at field %s",
					  fields[i].name);
	}
	return 0;
}

/* ---- parsing ---- */

static bool py_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* [*p, *end) stripped of Python whitespace on both sides. */
static void strip(const char **p, const char **end)
{
	while (*p < *end && py_space(**p))
		(*p)++;
	while (*end > *p && py_space((*end)[-1]))
		(*end)--;
}

static int digits(const char **p, const char *end, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (*p >= end || **p < '0' || **p > '9')
			return -EBADMSG;
		v = v * 10 + (**p - '0');
	}
	*ret = v;
	return 0;
}

static bool eat(const char **p, const char *end, char c)
{
	if (*p < end && **p == c) {
		(*p)++;
		return true;
	}
	return false;
}

/* ".ffffff" (1 to 6 digits) when present, as microseconds. */
static int parse_fraction(const char **p, const char *end, int *ret_us)
{
	*ret_us = 0;
	if (!eat(p, end, '.'))
		return 0;
	int n = 0, us = 0;
	for (; *p < end && **p >= '0' && **p <= '9'; (*p)++, n++)
		if (n < 6)
			us = us * 10 + (**p - '0');
	if (n == 0)
		return -EBADMSG;
	for (; n < 6; n++)
		us *= 10;
	*ret_us = us;
	return 0;
}

/* "+HH:MM[:SS]", "-HH:MM", "Z" or nothing (naive: UTC here). */
static int parse_offset(const char **p, const char *end, int32_t *ret)
{
	*ret = 0;
	if (*p == end || eat(p, end, 'Z'))
		return *p == end ? 0 : -EBADMSG;
	int sign = eat(p, end, '+') ? 1 : eat(p, end, '-') ? -1 : 0;
	int hh, mm, ss = 0;
	if (!sign || digits(p, end, 2, &hh) || !eat(p, end, ':') || digits(p, end, 2, &mm))
		return -EBADMSG;
	if (eat(p, end, ':') && digits(p, end, 2, &ss))
		return -EBADMSG;
	if (*p != end || hh > 23 || mm > 59 || ss > 59)
		return -EBADMSG;
	*ret = sign * (hh * 3600 + mm * 60 + ss);
	return 0;
}

/* Python's str(datetime) (or isoformat(), with 'T'). */
static int parse_time(const char *p, const char *end, struct bk_time *ret)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, s, us;
	int32_t off;
	if (digits(&p, end, 4, &y) || !eat(&p, end, '-') || digits(&p, end, 2, &mo) ||
	    !eat(&p, end, '-') || digits(&p, end, 2, &d) ||
	    !(eat(&p, end, ' ') || eat(&p, end, 'T')) || digits(&p, end, 2, &h) ||
	    !eat(&p, end, ':') || digits(&p, end, 2, &mi) || !eat(&p, end, ':') ||
	    digits(&p, end, 2, &s) || parse_fraction(&p, end, &us) ||
	    parse_offset(&p, end, &off))
		return -EBADMSG;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59 || y < 1970)
		return -EBADMSG;
	tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
	tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
	time_t t = timegm(&tm);
	if (t == (time_t)-1 || tm.tm_mday != d)
		return -EBADMSG; /* timegm normalised an impossible date (Feb 30) */
	*ret = (struct bk_time){ .set = true,
				 .epoch_us = ((int64_t)t - off) * 1000000 + us,
				 .utc_offset_s = off };
	return 0;
}

static int parse_int(const char *p, const char *end, struct bk_opt_int *ret)
{
	bool neg = eat(&p, end, '-');
	struct bk_pylit c = { p, end };
	uint64_t v;
	int rc = bk_pylit_uint(&c, INT64_MAX, &v);
	if (rc < 0 || c.p != end)
		return -EBADMSG;
	*ret = (struct bk_opt_int){ .set = true, .v = neg ? -(int64_t)v : (int64_t)v };
	return 0;
}

static int parse_status(const char *p, const char *end, enum bk_backup_status *ret)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(status_names); i++)
		if (strlen(status_names[i]) == (size_t)(end - p) &&
		    !memcmp(status_names[i], p, (size_t)(end - p))) {
			*ret = (enum bk_backup_status)i;
			return 0;
		}
	return -EBADMSG;
}

static int parse_pystr(const char *p, const char *end, char **ret)
{
	struct op_buf b = OP_BUF_INIT(BK_BACKUP_INFO_MAX);
	struct bk_pylit c = { p, end };
	int rc = bk_pylit_str(&c, &b);
	bk_pylit_ws(&c);
	if (rc == 0 && c.p != end)
		rc = -EBADMSG;
	if (rc < 0) {
		op_buf_done(&b);
		return -EBADMSG;
	}
	*ret = op_buf_take(&b, NULL);
	return 0;
}

/* One ('name', oid, 'location') tuple (a trailing comma allowed). */
static int parse_tuple(struct bk_pylit *c, struct bk_tablespace *t)
{
	struct op_buf name = OP_BUF_INIT(OP_BUF_MAX_SMALL), loc = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	uint64_t oid = 0;
	int rc = bk_pylit_eat(c, '(') ? bk_pylit_str(c, &name) : -EBADMSG;
	if (rc == 0)
		rc = bk_pylit_eat(c, ',') ? bk_pylit_uint(c, UINT32_MAX, &oid) : -EBADMSG;
	if (rc == 0)
		rc = bk_pylit_eat(c, ',') ? bk_pylit_str(c, &loc) : -EBADMSG;
	if (rc == 0) {
		(void)bk_pylit_eat(c, ',');
		rc = bk_pylit_eat(c, ')') ? 0 : -EBADMSG;
	}
	if (rc < 0) {
		op_buf_done(&name);
		op_buf_done(&loc);
		return -EBADMSG;
	}
	*t = (struct bk_tablespace){ .name = op_buf_take(&name, NULL), .oid = (uint32_t)oid,
				     .location = op_buf_take(&loc, NULL) };
	return 0;
}

#define BK_TABLESPACES_MAX 4096u

/* load_tablespace_list: [(...), ...]; [] is None. */
static int parse_tablespaces(const char *p, const char *end, struct bk_backup_info *bi)
{
	struct bk_pylit c = { p, end };
	if (!bk_pylit_eat(&c, '['))
		return -EBADMSG;
	struct bk_tablespace *v = NULL;
	size_t n = 0;
	int rc = 0;
	while (rc == 0 && !bk_pylit_eat(&c, ']')) {
		if (n && !bk_pylit_eat(&c, ','))
			rc = -EBADMSG;
		else if (n && bk_pylit_eat(&c, ']'))
			break; /* trailing comma */
		else if (n == BK_TABLESPACES_MAX)
			rc = -EBADMSG;
		if (rc == 0) {
			v = op_realloc(v, (n + 1) * sizeof(*v));
			rc = parse_tuple(&c, &v[n]);
			n += rc == 0;
		}
	}
	bk_pylit_ws(&c);
	if (rc == 0 && c.p != end)
		rc = -EBADMSG;
	if (rc < 0) {
		tablespaces_free(v, n);
		return -EBADMSG;
	}
	tablespaces_free(bi->tablespaces, bi->n_tablespaces);
	bi->tablespaces = n ? v : NULL, bi->n_tablespaces = n;
	if (!n)
		free(v);
	return 0;
}

/* Sets field f from the stripped value [p, end); "None" clears it. */
static int set_field(struct bk_backup_info *bi, const struct field *f, const char *p,
		     const char *end)
{
	void *at = (char *)bi + f->off;
	bool none = end - p == 4 && !memcmp(p, "None", 4);
	if (f->type == F_STR || f->type == F_PYSTR || f->type == F_RAW) {
		char **s = at, *v = NULL;
		if (!none && f->type == F_PYSTR && parse_pystr(p, end, &v) < 0)
			return -EBADMSG;
		if (!none && f->type != F_PYSTR)
			v = op_strndup(p, (size_t)(end - p));
		free(*s);
		*s = v;
		return 0;
	}
	if (f->type == F_INT)
		return none ? (*(struct bk_opt_int *)at = (struct bk_opt_int){ 0 }, 0)
			    : parse_int(p, end, at);
	if (f->type == F_TIME)
		return none ? (*(struct bk_time *)at = (struct bk_time){ 0 }, 0)
			    : parse_time(p, end, at);
	if (f->type == F_STATUS)
		return none ? (bi->status = BK_STATUS_EMPTY, 0) : parse_status(p, end, &bi->status);
	if (none) {
		tablespaces_free(bi->tablespaces, bi->n_tablespaces);
		bi->tablespaces = NULL, bi->n_tablespaces = 0;
		return 0;
	}
	return parse_tablespaces(p, end, bi);
}

static const struct field *field_find(const char *k, size_t klen)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++)
		if (strlen(fields[i].name) == klen && !memcmp(fields[i].name, k, klen))
			return &fields[i];
	return NULL;
}

/* One line [p, end) (no '\n'): a comment, blank, or "key = value". */
static int parse_line(struct bk_backup_info *bi, const char *p, const char *end)
{
	const char *k = p, *kend = end;
	strip(&k, &kend);
	if (k == kend || *p == '#')
		return 0; /* barman: isspace() or rstrip().startswith("#") */
	const char *eq = memchr(p, '=', (size_t)(end - p));
	if (!eq)
		return -EBADMSG;
	const char *v = eq + 1, *vend = end;
	k = p, kend = eq;
	strip(&k, &kend);
	strip(&v, &vend);
	const struct field *f = field_find(k, (size_t)(kend - k));
	return f ? set_field(bi, f, v, vend) : 0; /* a newer barman's field: ignored */
}

int bk_backup_info_parse(const char *text, size_t len, struct bk_backup_info *ret,
			 struct op_err *err)
{
	if (len > BK_BACKUP_INFO_MAX)
		return op_err_set(err, -EFBIG, "backup.info: %zu bytes, more than %u", len,
				  BK_BACKUP_INFO_MAX);
	if (memchr(text, '\0', len) || !op_utf8_valid(text, len))
		return op_err_set(err, -EBADMSG, "backup.info: not UTF-8 text");
	struct bk_backup_info bi;
	bk_backup_info_init(&bi);
	const char *p = text, *end = text + len;
	for (unsigned line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *lend = nl ? nl : end;
		if (parse_line(&bi, p, lend) < 0) {
			bk_backup_info_done(&bi);
			return op_err_set(err, -EBADMSG, "backup.info: line %u: malformed: %.*s",
					  line, (int)(lend - p > 80 ? 80 : lend - p), p);
		}
		p = nl ? nl + 1 : end;
	}
	*ret = bi;
	return 0;
}

/* ---- backup ids and keys ---- */

int bk_backup_id_format(int64_t epoch_s, char ret[BK_BACKUP_ID_LEN + 1])
{
	time_t t = (time_t)epoch_s;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1970)
		return -EINVAL;
	return strftime(ret, BK_BACKUP_ID_LEN + 1, "%Y%m%dT%H%M%S", &tm) == BK_BACKUP_ID_LEN
		       ? 0
		       : -EINVAL;
}

bool bk_backup_id_valid(const char *id)
{
	if (!id || strlen(id) != BK_BACKUP_ID_LEN || id[8] != 'T')
		return false;
	for (int i = 0; i < BK_BACKUP_ID_LEN; i++)
		if (i != 8 && (id[i] < '0' || id[i] > '9'))
			return false;
	char stamp[32];
	struct bk_time t;
	snprintf(stamp, sizeof(stamp), "%.4s-%.2s-%.2s %.2s:%.2s:%.2s", id, id + 4, id + 6,
		 id + 9, id + 11, id + 13);
	return parse_time(stamp, stamp + strlen(stamp), &t) == 0;
}

int bk_base_prefix(const struct bk_config *cfg, struct op_buf *out)
{
	const char *p = cfg->dest.prefix;
	return op_buf_addf(out, "%s%s%s/base/", p, *p ? "/" : "", cfg->server_name);
}

int bk_backup_tar_name(const char *name, enum bk_compression comp, struct op_buf *out,
		       struct op_err *err)
{
	return bk_backup_tar_part_name(name, 0, comp, out, err);
}

int bk_backup_tar_part_name(const char *name, unsigned part, enum bk_compression comp,
			    struct op_buf *out, struct op_err *err)
{
	if (comp == BK_COMP_XZ || comp == BK_COMP_ZSTD)
		return op_err_set(err, -ENOTSUP, "base backups: %s is no compression barman-cloud "
				  "can restore a tar from (none, gzip, bzip2, lz4, snappy)",
				  bk_compression_name(comp));
	int rc = part ? op_buf_addf(out, "%s_%04u.tar%s", name, part, bk_compression_suffix(comp))
		      : op_buf_addf(out, "%s.tar%s", name, bk_compression_suffix(comp));
	return rc < 0 ? op_err_set(err, rc, "tar name too long") : 0;
}

int bk_backup_key(const struct bk_config *cfg, const char *id, const char *file,
		  struct op_buf *out, struct op_err *err)
{
	if (!bk_backup_id_valid(id))
		return op_err_set(err, -EINVAL, "%s: not a backup id (YYYYMMDDTHHMMSS)", id);
	if (!*file || strchr(file, '/') || !strcmp(file, ".") || !strcmp(file, ".."))
		return op_err_set(err, -EINVAL, "%s: not a file name", file);
	int rc = bk_base_prefix(cfg, out);
	if (rc == 0)
		rc = op_buf_addf(out, "%s/%s", id, file);
	if (rc == 0 && !os_key_valid(op_buf_str(out)))
		rc = -EINVAL;
	return rc < 0 ? op_err_set(err, rc, "object key for backup %s too long or invalid", id)
		      : 0;
}

int bk_lsn_to_wal(uint64_t lsn, uint32_t tli, uint64_t seg_size, char ret_name[25],
		  uint64_t *ret_offset)
{
	if (seg_size < (1u << 20) || seg_size > (1u << 30) || (seg_size & (seg_size - 1)))
		return -EINVAL;
	uint32_t log = (uint32_t)(lsn >> 32);
	uint64_t seg = (lsn & 0xFFFFFFFFu) / seg_size;
	snprintf(ret_name, 25, "%08X%08X%08X", tli, log, (uint32_t)seg);
	*ret_offset = lsn & (seg_size - 1);
	return 0;
}

int bk_py_repr_strv(const char *const *v, size_t n, struct op_buf *out)
{
	int rc = op_buf_adds(out, "[");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i)
			rc = op_buf_adds(out, ", ");
		if (rc == 0)
			rc = bk_py_repr_str(v[i], out);
	}
	return rc ? rc : op_buf_adds(out, "]");
}
