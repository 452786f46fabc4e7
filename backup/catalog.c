/* backup/catalog.c - the base backups of a server in the store (every
 * <prefix>/<server>/base/<id>/backup.info, parsed) and the choice of the one
 * a recovery starts from, as barman-cloud-restore and CloudNativePG make it
 * (barman/cloud.py CloudBackupCatalog, cloudnative-pg's
 * barman-cloud/pkg/catalog FindBackupInfo): the latest DONE backup, by end
 * time, that ends at or before the target. Recovery targets are parsed and
 * normalised here too (pure), so the choice and the configuration postgres
 * gets (instance/recovery.c) read the same values. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/lsn.h"

int bk_client_open(const struct bk_config *cfg, struct os_client **ret, struct op_err *err)
{
	struct bk_secrets s;
	int rc = bk_secrets_load(cfg, &s, err);
	if (rc < 0)
		return rc;
	rc = bk_client_new_data(cfg, &s, ret, err);
	bk_secrets_done(&s);
	return rc;
}

/* ---- listing ---- */

struct lister {
	const char *base; /* borrowed: "<prefix>/<server>/base/" */
	size_t base_len;
	struct bk_catalog cat; /* owned until returned */
	size_t cap;
};

static int list_entry(void *ud, const struct os_list_entry *e)
{
	struct lister *l = ud;
	if (e->is_prefix || strncmp(e->key, l->base, l->base_len) != 0)
		return 0;
	const char *id = e->key + l->base_len;
	if (strlen(id) != BK_BACKUP_ID_LEN + 1 + strlen(BK_BACKUP_INFO_NAME) ||
	    id[BK_BACKUP_ID_LEN] != '/' || strcmp(id + BK_BACKUP_ID_LEN + 1, BK_BACKUP_INFO_NAME))
		return 0;
	char idbuf[BK_BACKUP_ID_LEN + 1];
	memcpy(idbuf, id, BK_BACKUP_ID_LEN);
	idbuf[BK_BACKUP_ID_LEN] = '\0';
	if (!bk_backup_id_valid(idbuf))
		return 0;
	if (l->cat.n == BK_CATALOG_MAX)
		return -E2BIG;
	if (l->cat.n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->cat.v = op_realloc(l->cat.v, l->cap * sizeof(*l->cat.v));
	}
	struct bk_catalog_entry *x = &l->cat.v[l->cat.n++];
	memset(x, 0, sizeof(*x));
	memcpy(x->id, idbuf, sizeof(idbuf));
	x->size = e->size;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(((const struct bk_catalog_entry *)a)->id,
		      ((const struct bk_catalog_entry *)b)->id);
}

/* GETs and parses one backup.info; a failure is recorded in x->error. */
static int load_info(struct os_client *c, const struct bk_config *cfg,
		     struct bk_catalog_entry *x, struct op_err *err)
{
	struct op_buf key = OP_BUF_INIT(OS_KEY_MAX + 1);
	struct op_buf text = OP_BUF_INIT(BK_BACKUP_INFO_MAX);
	struct op_err e = OP_ERR_INIT;
	int rc = bk_backup_key(cfg, x->id, BK_BACKUP_INFO_NAME, &key, &e);
	if (rc == 0)
		rc = os_get_buf(c, op_buf_str(&key), &text, &e);
	/* a transport failure is the listing's failure, not one backup's */
	if (rc < 0 && rc != -ENOENT && rc != -EMSGSIZE && rc != -EFBIG) {
		op_err_set(err, rc, "%s", e.msg);
	} else if (rc < 0) {
		x->error = op_strdup(e.msg);
		rc = 0;
	} else if (bk_backup_info_parse(text.data ? text.data : "", text.len, &x->info, &e) < 0) {
		x->error = op_asprintf("backup.info: %s", e.msg);
	} else {
		x->ok = true;
	}
	op_buf_done(&key);
	op_buf_done(&text);
	return rc;
}

int bk_catalog_list_client(struct os_client *c, const struct bk_config *cfg,
			   struct bk_catalog *ret, struct op_err *err)
{
	struct op_buf base = OP_BUF_INIT(OS_KEY_MAX + 1);
	if (bk_base_prefix(cfg, &base) < 0)
		return op_err_set(err, -EINVAL, "base backups' prefix too long");
	struct lister l = { .base = op_buf_str(&base), .base_len = base.len };
	struct os_list_opts lo = { .prefix = l.base, .max_entries = 16 * BK_CATALOG_MAX };
	int rc = os_list(c, &lo, list_entry, &l, err);
	if (rc == -E2BIG)
		op_err_set(err, rc, "more than %u base backups under s3://%s/%s", BK_CATALOG_MAX,
			   cfg->dest.bucket, l.base);
	if (rc >= 0 && l.cat.n)
		qsort(l.cat.v, l.cat.n, sizeof(*l.cat.v), cmp_id);
	for (size_t i = 0; rc >= 0 && i < l.cat.n; i++)
		rc = load_info(c, cfg, &l.cat.v[i], err);
	op_buf_done(&base);
	if (rc < 0) {
		bk_catalog_free(&l.cat);
		return rc;
	}
	*ret = l.cat;
	return 0;
}

int bk_catalog_list(const struct bk_config *cfg, struct bk_catalog *ret, struct op_err *err)
{
	struct os_client *c = NULL;
	int rc = bk_client_open(cfg, &c, err);
	if (rc == 0)
		rc = bk_catalog_list_client(c, cfg, ret, err);
	os_client_free(c);
	return rc;
}

void bk_catalog_free(struct bk_catalog *cat)
{
	if (!cat)
		return;
	for (size_t i = 0; i < cat->n; i++) {
		if (cat->v[i].ok)
			bk_backup_info_done(&cat->v[i].info);
		free(cat->v[i].error);
	}
	free(cat->v);
	cat->v = NULL;
	cat->n = 0;
}

/* ---- recovery targets (pure) ---- */

static int ndigits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

/* "", "Z", "z", "+HH", "+HHMM", "+HH:MM" (and '-'): the offset east of UTC. */
static int parse_zone(const char *p, int32_t *ret)
{
	int h = 0, m = 0;
	if (!*p || ((p[0] == 'Z' || p[0] == 'z') && !p[1])) {
		*ret = 0;
		return 0;
	}
	if (*p == ' ')
		p++;
	if (*p != '+' && *p != '-')
		return -EINVAL;
	int sign = *p++ == '-' ? -1 : 1;
	if (ndigits(&p, 2, &h) < 0)
		return -EINVAL;
	if (*p == ':')
		p++;
	if (*p && ndigits(&p, 2, &m) < 0)
		return -EINVAL;
	if (*p || h > 15 || m > 59)
		return -EINVAL;
	*ret = sign * (h * 3600 + m * 60);
	return 0;
}

int bk_target_time_parse(const char *s, int64_t *ret_us)
{
	int y, mo, d, h, mi, sec = 0, us = 0;
	const char *p = s;
	if (!s || strlen(s) > 64 || ndigits(&p, 4, &y) || *p++ != '-' || ndigits(&p, 2, &mo) ||
	    *p++ != '-' || ndigits(&p, 2, &d) || (*p != ' ' && *p != 'T' && *p != 't'))
		return -EINVAL;
	p++;
	if (ndigits(&p, 2, &h) || *p++ != ':' || ndigits(&p, 2, &mi))
		return -EINVAL;
	if (*p == ':' && (p++, ndigits(&p, 2, &sec)))
		return -EINVAL;
	if (*p == '.') {
		int n = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 6)
				us = us * 10 + (*p - '0');
		if (n == 0)
			return -EINVAL;
		for (; n < 6; n++)
			us *= 10;
	}
	int32_t off;
	if (parse_zone(p, &off) < 0 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			 .tm_hour = h, .tm_min = mi, .tm_sec = sec };
	time_t t = timegm(&tm);
	if (t == (time_t)-1 || tm.tm_mday != d)
		return -EINVAL; /* February 30th */
	*ret_us = ((int64_t)t - off) * 1000000 + us;
	return 0;
}

int bk_target_time_format(int64_t epoch_us, char ret[BK_TARGET_TIME_LEN + 1])
{
	time_t t = (time_t)(epoch_us / 1000000);
	struct tm tm;
	if (epoch_us < 0 || !gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999)
		return -EINVAL;
	int n = snprintf(ret, BK_TARGET_TIME_LEN + 1, "%04d-%02d-%02d %02d:%02d:%02d.%06d+00",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (int)(epoch_us % 1000000));
	return n == BK_TARGET_TIME_LEN ? 0 : -EINVAL;
}

/* ---- choosing the backup (pure) ---- */

static bool usable(const struct bk_catalog_entry *x, const struct bk_selection *s)
{
	if (!x->ok || x->info.status != BK_STATUS_DONE || !x->info.end_time.set)
		return false;
	/* a backup on a later timeline than the one asked for cannot lead to it */
	return !s->tli || !x->info.timeline.set || x->info.timeline.v <= (int64_t)s->tli;
}

/* Whether x ends at or before the target (time, LSN); any other kind: yes. */
static bool before_target(const struct bk_catalog_entry *x, const struct bk_selection *s)
{
	uint64_t end;
	switch (s->kind) {
	case BK_TARGET_TIME:
		return x->info.end_time.epoch_us <= s->time_us;
	case BK_TARGET_LSN:
		return x->info.end_xlog && op_lsn_parse(x->info.end_xlog, &end) == 0 &&
		       end <= s->lsn;
	default:
		return true;
	}
}

int bk_catalog_select(const struct bk_catalog *cat, const struct bk_selection *s,
		      const struct bk_catalog_entry **ret, struct op_err *err)
{
	if (s->backup_id) {
		for (size_t i = 0; i < cat->n; i++) {
			const struct bk_catalog_entry *x = &cat->v[i];
			if (strcmp(x->id, s->backup_id) != 0)
				continue;
			if (!x->ok)
				return op_err_set(err, -EINVAL, "backup %s is unusable: %s", x->id,
						  x->error);
			if (x->info.status != BK_STATUS_DONE)
				return op_err_set(err, -EINVAL, "backup %s is %s, not DONE", x->id,
						  bk_backup_status_name(x->info.status));
			*ret = x;
			return 0;
		}
		return op_err_set(err, -ENOENT, "backup %s: no such backup in the store (%zu found)",
				  s->backup_id, cat->n);
	}
	const struct bk_catalog_entry *best = NULL;
	size_t done = 0;
	for (size_t i = 0; i < cat->n; i++) {
		const struct bk_catalog_entry *x = &cat->v[i];
		if (!usable(x, s))
			continue;
		done++;
		if (before_target(x, s) &&
		    (!best || x->info.end_time.epoch_us > best->info.end_time.epoch_us))
			best = x;
	}
	if (!best && !done)
		return op_err_set(err, -ENOENT, "no DONE base backup in the store (%zu found)",
				  cat->n);
	if (!best)
		return op_err_set(err, -ENOENT, "no DONE base backup ends before the recovery "
				  "target (%zu DONE backups)", done);
	*ret = best;
	return 0;
}

int bk_catalog_first_point(const struct bk_catalog *cat, int64_t *ret_us)
{
	for (size_t i = 0; i < cat->n; i++) { /* sorted by id: the oldest first */
		const struct bk_catalog_entry *x = &cat->v[i];
		if (x->ok && x->info.status == BK_STATUS_DONE && x->info.end_time.set) {
			*ret_us = x->info.end_time.epoch_us;
			return 0;
		}
	}
	return -ENOENT;
}
