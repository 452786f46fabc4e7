/* backup/retention.c - retentionPolicy (backup/retention.h): the decision
 * is pure; bk_retention_apply lists and deletes through objstore. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/internal.h"
#include "backup/retention.h"
#include "support/alloc.h"
#include "support/buf.h"

#define MAX_WINDOW_DAYS (100 * 366)

int bk_retention_parse(const char *s, struct bk_retention_policy *ret, struct op_err *err)
{
	size_t n = s ? strlen(s) : 0;
	bool ok = n >= 2 && n <= 8 && s[0] >= '1' && s[0] <= '9' && strchr("dwm", s[n - 1]);
	for (size_t i = 1; ok && i + 1 < n; i++)
		ok = s[i] >= '0' && s[i] <= '9';
	if (!ok)
		return op_err_set(err, -EINVAL,
				  "retention policy '%.40s' is not a number of days, weeks or months "
				  "(like 30d, 4w, 6m)", s ? s : "");
	struct bk_retention_policy p = { .value = strtoll(s, NULL, 10), .unit = s[n - 1] };
	if (bk_retention_window_s(&p) > (int64_t)MAX_WINDOW_DAYS * 86400)
		return op_err_set(err, -EINVAL, "retention policy '%s' is over 100 years", s);
	*ret = p;
	return 0;
}

int64_t bk_retention_window_s(const struct bk_retention_policy *p)
{
	int64_t days = p->unit == 'w' ? 7 : p->unit == 'm' ? 31 : 1;
	return p->value * days * 86400;
}

void bk_retention_describe(const struct bk_retention_policy *p, char *buf, size_t len)
{
	const char *u = p->unit == 'w' ? "WEEKS" : p->unit == 'm' ? "MONTHS" : "DAYS";
	snprintf(buf, len, "RECOVERY WINDOW OF %lld %s", (long long)p->value, u);
}

static bool done(const struct bk_retention_backup *b)
{
	return b->info && b->info->status == BK_STATUS_DONE;
}

void bk_retention_report(const struct bk_retention_backup *backups, size_t n, int64_t now_us,
			 const struct bk_retention_policy *p, enum bk_retention_verdict *verdicts)
{
	int64_t por = now_us - bk_retention_window_s(p) * 1000000;
	bool found = false; /* met the first DONE backup that ended before por */
	for (size_t k = n; k-- > 0;) {
		const struct bk_retention_backup *b = &backups[k];
		if (!done(b)) {
			verdicts[k] = BK_RETAIN_NONE;
			continue;
		}
		verdicts[k] = found ? BK_RETAIN_OBSOLETE : BK_RETAIN_VALID;
		/* barman: a DONE backup without an end time never ends the window */
		if (b->info->end_time.set && b->info->end_time.epoch_us < por)
			found = true;
	}
}

/* barman's DEFAULT_STATUS_FILTER for "the next backup": copied ones. */
static bool copied(const struct bk_retention_backup *b)
{
	return b->info && (b->info->status == BK_STATUS_DONE ||
			   b->info->status == BK_STATUS_WAITING_FOR_WALS);
}

static uint32_t backup_tli(const struct bk_retention_backup *b)
{
	return b->info && b->info->timeline.set ? (uint32_t)b->info->timeline.v : 0;
}

bool bk_retention_wal_deletable(const struct bk_retention_backup *backups, size_t n,
				const bool *gone, size_t del, const char *walname)
{
	struct bk_wal_name w;
	if (bk_wal_name_parse(walname, &w, NULL) < 0 || w.kind == BK_WAL_HISTORY)
		return false;
	/* remove_until: the next copied backup still there, else the deleted one */
	const struct bk_retention_backup *until = &backups[del];
	for (size_t k = del + 1; k < n; k++) {
		if (!gone[k] && copied(&backups[k])) {
			until = &backups[k];
			break;
		}
	}
	if (!until->info || !until->info->begin_wal)
		return false;
	/* WAL on a timeline another remaining backup is on stays */
	for (size_t k = 0; k < n; k++)
		if (!gone[k] && backup_tli(&backups[k]) == w.tli && w.tli != backup_tli(until))
			return false;
	return strcmp(walname, until->info->begin_wal) < 0; /* barman compares names */
}

void bk_retention_result_done(struct bk_retention_result *r)
{
	for (size_t i = 0; i < r->n_deleted; i++)
		free(r->deleted_ids[i]);
	free(r->deleted_ids);
	memset(r, 0, sizeof(*r));
}

/* Object keys collected by a listing (all owned). */
struct keys {
	char **v;
	size_t n, cap;
};

static void keys_done(struct keys *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

static int collect(void *ud, const struct os_list_entry *e)
{
	struct keys *k = ud;
	if (e->is_prefix)
		return 0;
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 64;
		k->v = op_realloc(k->v, k->cap * sizeof(*k->v));
	}
	k->v[k->n++] = op_strdup(e->key);
	return 0;
}

static int list_keys(struct os_client *c, const char *prefix, struct keys *ret,
		     struct op_err *err)
{
	struct os_list_opts o = { .prefix = prefix };
	int r = os_list(c, &o, collect, ret, err);
	return r < 0 ? r : 0;
}

/* Deletes keys[0..n) in DeleteObjects batches. */
static int delete_keys(struct os_client *c, char *const *keys, size_t n, struct op_err *err)
{
	for (size_t i = 0; i < n; i += OS_DELETE_BATCH_MAX) {
		size_t m = n - i < OS_DELETE_BATCH_MAX ? n - i : OS_DELETE_BATCH_MAX;
		int r = os_delete_batch(c, (const char *const *)keys + i, m, err);
		if (r > 0)
			return -EIO; /* err names the first key the store kept */
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every object under base/<id>/, backup.info last. */
static int delete_backup(struct os_client *c, const struct bk_config *cfg, const char *id,
			 uint64_t *count, struct op_err *err)
{
	struct op_buf prefix = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct keys k = { 0 };
	int r = bk_base_prefix(cfg, &prefix) ? -EMSGSIZE : op_buf_addf(&prefix, "%s/", id);
	if (r)
		r = op_err_set(err, -EMSGSIZE, "backup prefix too long");
	r = r ? r : list_keys(c, op_buf_str(&prefix), &k, err);
	size_t info = k.n;
	for (size_t i = 0; r == 0 && i < k.n; i++) {
		const char *slash = strrchr(k.v[i], '/');
		if (slash && strcmp(slash + 1, BK_BACKUP_INFO_NAME) == 0)
			info = i;
	}
	if (r == 0 && info < k.n) { /* move backup.info to the end */
		char *t = k.v[info];
		memmove(k.v + info, k.v + info + 1, (k.n - info - 1) * sizeof(*k.v));
		k.v[k.n - 1] = t;
	}
	r = r ? r : delete_keys(c, k.v, k.n, err);
	if (r == 0)
		*count += k.n;
	keys_done(&k);
	op_buf_done(&prefix);
	return r;
}

/* The WAL objects backups[del]'s deletion frees (wals: every key under
 * wals/, borrowed). */
static int delete_wals(struct os_client *c, const struct bk_retention_backup *backups, size_t n,
		       const bool *gone, size_t del, const struct keys *wals, uint64_t *count,
		       struct op_err *err)
{
	struct keys sel = { 0 };
	for (size_t i = 0; i < wals->n; i++) {
		const char *base = strrchr(wals->v[i], '/');
		char name[BK_WAL_NAME_MAX + 1];
		enum bk_compression comp;
		if (!base || !wals->v[i][0] ||
		    bk_wal_stored_parse(base + 1, name, &comp) < 0 ||
		    !bk_retention_wal_deletable(backups, n, gone, del, name))
			continue;
		if (sel.n == sel.cap) {
			sel.cap = sel.cap ? 2 * sel.cap : 64;
			sel.v = op_realloc(sel.v, sel.cap * sizeof(*sel.v));
		}
		sel.v[sel.n++] = wals->v[i]; /* borrowed */
	}
	int r = delete_keys(c, sel.v, sel.n, err);
	if (r == 0)
		*count += sel.n;
	for (size_t i = 0; r == 0 && i < sel.n; i++)
		sel.v[i][0] = '\0'; /* gone: skipped by the next backup's pass */
	free(sel.v);
	return r;
}

static int apply(struct os_client *c, const struct bk_config *cfg,
		 const struct bk_retention_backup *backups, size_t n,
		 const enum bk_retention_verdict *verdicts, bool *gone,
		 struct bk_retention_result *ret, struct op_err *err)
{
	struct op_buf prefix = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct keys wals = { 0 };
	int r = bk_wals_prefix(cfg, &prefix) ? op_err_set(err, -EMSGSIZE, "WAL prefix too long")
					     : 0;
	r = r ? r : list_keys(c, op_buf_str(&prefix), &wals, err);
	for (size_t k = 0; r == 0 && k < n; k++) {
		if (verdicts[k] != BK_RETAIN_OBSOLETE)
			continue;
		r = delete_backup(c, cfg, backups[k].id, &ret->objects_deleted, err);
		if (r)
			break;
		gone[k] = true;
		ret->deleted_ids = op_realloc(ret->deleted_ids,
					      (ret->n_deleted + 1) * sizeof(*ret->deleted_ids));
		ret->deleted_ids[ret->n_deleted++] = op_strdup(backups[k].id);
		r = delete_wals(c, backups, n, gone, k, &wals, &ret->wals_deleted, err);
	}
	keys_done(&wals);
	op_buf_done(&prefix);
	return r;
}

int bk_retention_apply(const struct bk_config *cfg, const struct bk_retention_backup *backups,
		       size_t n, int64_t now_us, const struct bk_retention_policy *p,
		       struct bk_retention_result *ret, struct op_err *err)
{
	memset(ret, 0, sizeof(*ret));
	enum bk_retention_verdict *verdicts = op_calloc(n ? n : 1, sizeof(*verdicts));
	bool *gone = op_calloc(n ? n : 1, sizeof(*gone));
	bk_retention_report(backups, n, now_us, p, verdicts);
	bool any = false;
	for (size_t k = 0; k < n; k++)
		any = any || verdicts[k] == BK_RETAIN_OBSOLETE;
	int r = 0;
	if (any) {
		struct bk_secrets sec;
		struct os_client *c = NULL;
		r = bk_secrets_load(cfg, &sec, err);
		if (r == 0) {
			r = bk_client_new_data(cfg, &sec, &c, err);
			bk_secrets_done(&sec);
		}
		r = r ? r : apply(c, cfg, backups, n, verdicts, gone, ret, err);
		os_client_free(c);
	}
	free(gone);
	free(verdicts);
	return r;
}
