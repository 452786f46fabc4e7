/* reconciler/scheduled.c - a Cluster's ScheduledBackups (layer 3), driven by
 * the Cluster's reconcile as its Backups are (reconciler/backup.c), with
 * CloudNativePG's semantics (scheduledbackup_controller.go):
 *  - suspended: nothing happens;
 *  - first seen (no lastCheckTime): with `immediate` a Backup is created at
 *    once, otherwise lastCheckTime is set to now and nextScheduleTime to the
 *    schedule's next fire time after it;
 *  - later: once the next fire time after lastCheckTime has come, a Backup
 *    named <scheduled>-<YYYYMMDDhhmmss> is created (owned as
 *    backupOwnerReference says) and lastCheckTime, lastScheduleTime and
 *    nextScheduleTime move on; while a Backup it made is still in progress
 *    the next one waits for it.
 * The reconcile is requeued for the earliest next fire time. */
#include <errno.h>
#include <string.h>

#include "api/backup.h"
#include "api/cron.h"
#include "kube/kube.h"
#include "reconciler/ctl.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

/* A schedule's next fire time comes at most this late (clock steps, a long
 * reconcile): never sooner than a second. */
#define MIN_REQUEUE_MS 1000

static int patch_status(struct rc_run *r, const char *name,
			const struct api_scheduled_backup_status *st)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int ret = api_scheduled_backup_status_merge_patch(st, &b, r->err);
	json_object *res = NULL;
	struct op_err e = OP_ERR_INIT;
	if (ret == 0) {
		ret = kube_patch_status(r->ctl->kc, KUBE_SCHEDULEDBACKUPS, r->ns, name,
					KUBE_PATCH_MERGE, op_buf_str(&b), &res, &e);
		if (ret == -ENOENT)
			ret = 0;
		else if (ret < 0)
			op_err_set(r->err, ret, "scheduled backup %s: %s", name, e.msg);
	}
	if (res)
		json_object_put(res);
	op_buf_done(&b);
	return ret;
}

/* True when a Backup s created is not finished yet. */
static bool one_in_progress(json_object *backups, const char *scheduled)
{
	for (size_t i = 0; i < json_object_array_length(backups); i++) {
		json_object *b = json_object_array_get_idx(backups, i);
		const char *by = op_json_key_str(op_json_at(b, "metadata.labels"),
						 "cnpg.io/scheduled-backup");
		if (!by || strcmp(by, scheduled) != 0)
			continue;
		if (!api_backup_phase_is_done(
			    api_backup_phase_parse(op_json_str_at(b, "status.phase"))))
			return true;
	}
	return false;
}

/* Creates the Backup of s for `when`; 0 created (or already there). */
static int create_backup(struct rc_run *r, const struct api_scheduled_backup *s, int64_t when)
{
	json_object *b = api_scheduled_backup_new_backup(s, when, r->c->metadata.uid);
	int ret = rc_create(r, KUBE_BACKUPS, b);
	if (ret > 0)
		rc_event(r, "Normal", "BackupScheduled", "scheduled backup %s created backup %s",
			 s->metadata.name, kube_obj_name(b));
	json_object_put(b);
	return ret < 0 ? ret : 0;
}

/* One ScheduledBackup; *next_ms: the earliest time (Unix ms) to look again. */
static int one(struct rc_run *r, json_object *obj, json_object *backups, int64_t *next_ms)
{
	_cleanup_(api_scheduled_backup_freep) struct api_scheduled_backup *s = NULL;
	struct op_err e = OP_ERR_INIT;
	if (api_scheduled_backup_decode(obj, NULL, &s, &e) < 0) {
		op_log_warn("scheduled backup: cannot decode it", "cluster", r->key, "name",
			    kube_obj_name(obj), "error", e.msg);
		return 0; /* admission refuses such objects; nothing to do with one */
	}
	struct api_cron cron;
	if (s->suspend || api_cron_parse(s->schedule, &cron, &e) < 0)
		return 0;
	const int64_t now = r->now;
	struct api_scheduled_backup_status st = s->status;
	int64_t next = 0;
	if (!st.last_check_time && !s->immediate) {
		st.last_check_time = now;
		if (api_cron_next(&cron, now, &next) == 0)
			st.next_schedule_time = next;
		*next_ms = next ? next * 1000 : *next_ms;
		return patch_status(r, s->metadata.name, &st);
	}
	if (st.last_check_time) {
		if (api_cron_next(&cron, st.last_check_time, &next) < 0)
			return 0; /* never fires again */
		if (now < next || one_in_progress(backups, s->metadata.name)) {
			int64_t at = now < next ? next * 1000 : (now + 5) * 1000;
			if (!*next_ms || at < *next_ms)
				*next_ms = at;
			return 0;
		}
	}
	int ret = create_backup(r, s, now);
	if (ret < 0)
		return ret;
	st.last_check_time = now;
	st.last_schedule_time = now;
	if (api_cron_next(&cron, now, &next) == 0) {
		st.next_schedule_time = next;
		if (!*next_ms || next * 1000 < *next_ms)
			*next_ms = next * 1000;
	}
	return patch_status(r, s->metadata.name, &st);
}

int rc_scheduled_backups_step(struct rc_run *r, json_object *backups)
{
	json_object *list = rc_backups_of(r->ctl, RC_INF_SCHEDULED_BACKUPS, r->ns, r->name);
	int64_t next_ms = 0;
	int ret = 0;
	for (size_t i = 0; i < json_object_array_length(list) && ret == 0; i++) {
		json_object *s = json_object_array_get_idx(list, i);
		if (op_json_at(s, "metadata.deletionTimestamp"))
			continue;
		ret = one(r, s, backups, &next_ms);
	}
	if (next_ms) {
		long wait = (long)(next_ms - r->now_ms);
		rc_requeue(r, wait < MIN_REQUEUE_MS ? MIN_REQUEUE_MS : wait);
	}
	json_object_put(list);
	return ret;
}
