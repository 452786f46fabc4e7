/* backup/retention.h - retentionPolicy: which base backups and WAL files a
 * recovery window no longer needs, decided as barman-cloud-backup-delete
 * 3.19.1 decides it (barman/retention_policies.py
 * RecoveryWindowRetentionPolicy, barman/clients/cloud_backup_delete.py
 * _remove_wals_for_backup), and deleting them from the store.
 *
 * The decision (pure): walking the backups newest first, every DONE backup
 * is kept until the first one that ended before the point of
 * recoverability (now - window) — that one is kept too, since recovering
 * to a time just inside the window starts from it — and every older DONE
 * backup is obsolete. Backups in any other state are left alone (barman's
 * NONE). So the newest DONE backup is never deleted. Obsolete backups are
 * deleted oldest first; after each, the WAL files before the begin_wal of
 * the next backup are deleted, except .history files and WAL of timelines
 * another remaining backup is on. A month is 31 days, as barman counts it.
 */
#ifndef PGOP_BACKUP_RETENTION_H
#define PGOP_BACKUP_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/backup.h"
#include "support/err.h"

/* CloudNativePG's retentionPolicy: ^[1-9][0-9]*[dwm]$ ("30d", "4w", "6m"). */
struct bk_retention_policy {
	int64_t value;
	char unit; /* 'd', 'w' or 'm' */
};

/* -EINVAL (err quotes it) for anything but the pattern above or a window
 * over 100 years. */
OP_MUST_CHECK
int bk_retention_parse(const char *s, struct bk_retention_policy *ret, struct op_err *err);
/* The window in seconds. */
int64_t bk_retention_window_s(const struct bk_retention_policy *p);
/* barman's name of the policy: "RECOVERY WINDOW OF 30 DAYS". */
void bk_retention_describe(const struct bk_retention_policy *p, char *buf, size_t len);

/* One backup of the catalog. Both pointers borrowed. */
struct bk_retention_backup {
	const char *id;
	const struct bk_backup_info *info;
};

enum bk_retention_verdict {
	BK_RETAIN_VALID,    /* DONE, needed for the window */
	BK_RETAIN_NONE,     /* not DONE: left alone */
	BK_RETAIN_OBSOLETE, /* DONE, older than the first backup outside the window */
};

/* verdicts[i] for backups[i]; backups sorted by id ascending (ids are start
 * times), n of them; now_us: microseconds since the epoch. */
void bk_retention_report(const struct bk_retention_backup *backups, size_t n, int64_t now_us,
			 const struct bk_retention_policy *p, enum bk_retention_verdict *verdicts);

/* The WAL rule when backups[del] is deleted and gone[i] says which backups
 * are already deleted (gone[del] included): true when walname (a WAL file
 * name, bk_wal_name_parse) may be deleted. */
bool bk_retention_wal_deletable(const struct bk_retention_backup *backups, size_t n,
				const bool *gone, size_t del, const char *walname);

/* The first recoverability point: the end time of the oldest DONE backup
 * (epoch microseconds); false when there is none. */
bool bk_first_recoverability_point(const struct bk_retention_backup *backups, size_t n,
				   int64_t *ret_us);

/* What bk_retention_apply deleted (ids and counts), for the Event. */
struct bk_retention_result {
	char **deleted_ids; /* owned, n_deleted of them, oldest first */
	size_t n_deleted;
	uint64_t objects_deleted; /* base backup objects */
	uint64_t wals_deleted;
};
void bk_retention_result_done(struct bk_retention_result *r);

/* Applies the policy to cfg's destination: deletes the obsolete backups of
 * backups[] (every object under base/<id>/, backup.info last, so a backup
 * half deleted is still listed and deleted again next time) and the WAL
 * they alone needed. Stops at the first failure (err names the object);
 * *ret says what was deleted until then, either way. */
OP_MUST_CHECK
int bk_retention_apply(const struct bk_config *cfg, const struct bk_retention_backup *backups,
		       size_t n, int64_t now_us, const struct bk_retention_policy *p,
		       struct bk_retention_result *ret, struct op_err *err);

#endif
