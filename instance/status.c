/* instance/status.c - PostgresqlStatus JSON (runtime.md §2.1) from a struct.
 *
 * Field names follow CNPG (pkg/postgres/status.go) so the reconciler and
 * `kubectl cnpg status` read it unchanged. NULL strings are omitted, booleans
 * and the timeline are always present. `pod` carries only the name, both as
 * `pod.metadata.name` (CNPG: a corev1.Pod) and `pod.name`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "instance/instance.h"

static void repl_done(struct inst_repl_info *r)
{
	free(r->application_name);
	free(r->state);
	free(r->sent_lsn);
	free(r->write_lsn);
	free(r->flush_lsn);
	free(r->replay_lsn);
	free(r->write_lag);
	free(r->flush_lag);
	free(r->replay_lag);
	free(r->sync_state);
}

static void slot_done(struct inst_slot_info *s)
{
	free(s->slot_name);
	free(s->plugin);
	free(s->slot_type);
	free(s->database);
	free(s->restart_lsn);
	free(s->wal_status);
}

void inst_pg_status_done(struct inst_pg_status *s)
{
	if (!s)
		return;
	free(s->current_lsn);
	free(s->received_lsn);
	free(s->replay_lsn);
	free(s->cut_primary);
	free(s->system_id);
	free(s->loaded_configuration_hash);
	free(s->session_id);
	free(s->pod_name);
	free(s->reclone_source);
	free(s->reclone_at);
	free(s->last_archived_wal);
	free(s->last_archived_wal_time);
	free(s->last_failed_wal);
	free(s->last_failed_wal_time);
	free(s->archive_error);
	free(s->timeline_diverged);
	free(s->backup_catalog);
	free(s->metrics_errors);
	free(s->tablespaces);
	for (size_t i = 0; i < s->n_repl; i++)
		repl_done(&s->repl[i]);
	free(s->repl);
	for (size_t i = 0; i < s->n_slots; i++)
		slot_done(&s->slots[i]);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* ,"key":"value" (nothing when value is NULL). *first tracks the comma. */
static int kv_str(struct op_buf *b, bool *first, const char *key, const char *value)
{
	if (!value)
		return 0;
	int r = op_buf_addf(b, "%s\"%s\":", *first ? "" : ",", key);
	*first = false;
	return r ? r : op_buf_add_json_str(b, value);
}

static int kv_bool(struct op_buf *b, bool *first, const char *key, bool v)
{
	int r = op_buf_addf(b, "%s\"%s\":%s", *first ? "" : ",", key, v ? "true" : "false");
	*first = false;
	return r;
}

static int kv_int(struct op_buf *b, bool *first, const char *key, int64_t v)
{
	int r = op_buf_addf(b, "%s\"%s\":%lld", *first ? "" : ",", key, (long long)v);
	*first = false;
	return r;
}

static int repl_json(struct op_buf *b, const struct inst_repl_info *r)
{
	bool f = true;
	int e = op_buf_addc(b, '{');
	e = e ? e : kv_str(b, &f, "applicationName", r->application_name);
	e = e ? e : kv_str(b, &f, "state", r->state);
	e = e ? e : kv_str(b, &f, "receivedLsn", r->sent_lsn);
	e = e ? e : kv_str(b, &f, "writeLsn", r->write_lsn);
	e = e ? e : kv_str(b, &f, "flushLsn", r->flush_lsn);
	e = e ? e : kv_str(b, &f, "replayLsn", r->replay_lsn);
	e = e ? e : kv_str(b, &f, "writeLag", r->write_lag);
	e = e ? e : kv_str(b, &f, "flushLag", r->flush_lag);
	e = e ? e : kv_str(b, &f, "replayLag", r->replay_lag);
	e = e ? e : kv_str(b, &f, "syncState", r->sync_state);
	e = e ? e : kv_int(b, &f, "syncPriority", r->sync_priority);
	return e ? e : op_buf_addc(b, '}');
}

static int slot_json(struct op_buf *b, const struct inst_slot_info *s)
{
	bool f = true;
	int e = op_buf_addc(b, '{');
	e = e ? e : kv_str(b, &f, "slotName", s->slot_name);
	e = e ? e : kv_str(b, &f, "plugin", s->plugin ? s->plugin : "");
	e = e ? e : kv_str(b, &f, "slotType", s->slot_type);
	e = e ? e : kv_int(b, &f, "datoid", s->datoid);
	e = e ? e : kv_str(b, &f, "database", s->database ? s->database : "");
	e = e ? e : kv_str(b, &f, "restartLsn", s->restart_lsn);
	e = e ? e : kv_str(b, &f, "walStatus", s->wal_status);
	e = e ? e : kv_int(b, &f, "safeWalSize", s->safe_wal_size);
	e = e ? e : kv_bool(b, &f, "active", s->active);
	return e ? e : op_buf_addc(b, '}');
}

/* CloudNativePG's archiver fields, and pgop's readyWALs and archiveError. */
static int archiver_json(struct op_buf *out, bool *f, const struct inst_pg_status *s)
{
	int e = kv_bool(out, f, "isArchivingWAL", s->is_archiving_wal);
	e = e ? e : kv_str(out, f, "lastArchivedWAL", s->last_archived_wal);
	e = e ? e : kv_str(out, f, "lastArchivedWALTime", s->last_archived_wal_time);
	e = e ? e : kv_str(out, f, "lastFailedWAL", s->last_failed_wal);
	e = e ? e : kv_str(out, f, "lastFailedWALTime", s->last_failed_wal_time);
	e = e ? e : kv_int(out, f, "archiverFailedCount", s->archiver_failed_count);
	e = e ? e : kv_int(out, f, "readyWALs", s->ready_wals);
	return e ? e : kv_str(out, f, "archiveError", s->archive_error);
}

int inst_status_to_json(const struct inst_pg_status *s, struct op_buf *out)
{
	bool f = true;
	int e = op_buf_addc(out, '{');
	e = e ? e : kv_str(out, &f, "currentLsn", s->current_lsn);
	e = e ? e : kv_str(out, &f, "receivedLsn", s->received_lsn);
	e = e ? e : kv_str(out, &f, "replayLsn", s->replay_lsn);
	e = e ? e : kv_str(out, &f, "systemID", s->system_id);
	e = e ? e : kv_bool(out, &f, "isPrimary", s->is_primary);
	e = e ? e : kv_bool(out, &f, "replayPaused", s->replay_paused);
	e = e ? e : kv_bool(out, &f, "pendingRestart", s->pending_restart);
	e = e ? e : kv_bool(out, &f, "isWalReceiverActive", s->is_wal_receiver_active);
	e = e ? e : kv_bool(out, &f, "isPgRewindRunning", s->is_pg_rewind_running);
	e = e ? e : kv_int(out, &f, "timeLineID", s->timeline_id);
	e = e ? e : kv_str(out, &f, "timelineDiverged", s->timeline_diverged);
	e = e ? e : archiver_json(out, &f, s);
	if (e == 0 && s->lease_ms)
		e = kv_int(out, &f, "leaseMs", s->lease_ms);
	if (e == 0 && s->n_repl) {
		e = op_buf_adds(out, ",\"replicationInfo\":[");
		for (size_t i = 0; e == 0 && i < s->n_repl; i++) {
			e = i ? op_buf_addc(out, ',') : 0;
			e = e ? e : repl_json(out, &s->repl[i]);
		}
		e = e ? e : op_buf_addc(out, ']');
	}
	if (e == 0 && s->n_slots) {
		e = op_buf_adds(out, ",\"replicationSlotsInfo\":[");
		for (size_t i = 0; e == 0 && i < s->n_slots; i++) {
			e = i ? op_buf_addc(out, ',') : 0;
			e = e ? e : slot_json(out, &s->slots[i]);
		}
		e = e ? e : op_buf_addc(out, ']');
	}
	if (e == 0 && s->reclone_at) {
		bool rf = true;
		e = op_buf_adds(out, ",\"recloned\":{");
		e = e ? e : kv_int(out, &rf, "pgRewindExitStatus", s->reclone_rewind_status);
		e = e ? e : kv_str(out, &rf, "source", s->reclone_source);
		e = e ? e : kv_str(out, &rf, "time", s->reclone_at);
		e = e ? e : op_buf_addc(out, '}');
	}
	if (e == 0 && s->cut) {
		bool cf = true;
		e = op_buf_adds(out, ",\"walReceiverCut\":{");
		e = e ? e : kv_str(out, &cf, "primary", s->cut_primary);
		e = e ? e : kv_int(out, &cf, "holdMs", s->cut_hold_ms);
		e = e ? e : op_buf_addc(out, '}');
	}
	if (e == 0 && s->backup_catalog) { /* already JSON (instance/catalog.c) */
		e = op_buf_adds(out, ",\"backupCatalog\":");
		e = e ? e : op_buf_adds(out, s->backup_catalog);
	}
	if (e == 0 && s->tablespaces) { /* already JSON (instance/tablespaces.c) */
		e = op_buf_adds(out, ",\"tablespaces\":");
		e = e ? e : op_buf_adds(out, s->tablespaces);
	}
	if (e == 0 && s->metrics_errors) { /* already JSON (instance/metrics_collect.c) */
		e = op_buf_adds(out, ",\"metricsErrors\":");
		e = e ? e : op_buf_adds(out, s->metrics_errors);
	}
	e = e ? e : kv_str(out, &f, "loadedConfigurationHash", s->loaded_configuration_hash);
	e = e ? e : kv_str(out, &f, "sessionID", s->session_id);
	e = e ? e : kv_str(out, &f, "instanceManagerVersion", PGOP_VERSION);
	if (e == 0 && s->pod_name) {
		e = op_buf_adds(out, ",\"pod\":{\"metadata\":{\"name\":");
		e = e ? e : op_buf_add_json_str(out, s->pod_name);
		e = e ? e : op_buf_adds(out, "},\"name\":");
		e = e ? e : op_buf_add_json_str(out, s->pod_name);
		e = e ? e : op_buf_addc(out, '}');
	}
	return e ? e : op_buf_addc(out, '}');
}
