/* instance/basebackup.c - an online base backup of the local postgres into
 * the WAL archive's object store, as barman-cloud-backup 3.19.1 takes it
 * (barman/cloud.py CloudBackup.coordinate_backup, ConcurrentBackupStrategy):
 *
 *   metadata (version, data_directory, checksums, system id, settings files,
 *     tablespaces: name, oid, location)
 *   pg_backup_start(label, fast)         session kept open until the stop
 *   backup.info STARTED                  the backup is listed from now on
 *   <oid>.tar per tablespace (tar.c)     its PG_<major>_* directory
 *   data.tar streamed (backup/tar.c)     PGDATA, then global/pg_control, then
 *     pg_backup_stop (bounded wait)      called by the tar (bk_tar_label_fn):
 *     pg_switch_wal, restore point       the label goes into the tar last
 *   backup.info DONE                     or FAILED with its error
 *
 * On a standby (the default target is prefer-standby) barman's semantics:
 * no WAL switch and no restore point (postgres refuses both in recovery);
 * the end timeline is min_recovery_end_timeline; pg_backup_stop waits for
 * the archive only with archive_mode = always.
 *
 * Every statement has a statement_timeout: INST_BACKUP_START_TIMEOUT_S for
 * pg_backup_start (a spread checkpoint), the stop timeout for pg_backup_stop
 * (it waits for the archive: a failing archive_command would hold it
 * forever, as barman-cloud-backup is held), INST_BACKUP_QUERY_TIMEOUT_S for
 * the others. A failure before the stop closes the session, which aborts
 * the backup in postgres. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/timestamp.h"
#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/log.h"
#include "support/lsn.h"

struct bb {
	const struct inst_backup_opts *o; /* borrowed */
	struct bk_config cfg;
	PGconn *pg;             /* owned */
	int version;            /* server_version_num */
	bool standby;
	uint64_t seg_size;
	char id[BK_BACKUP_ID_LEN + 1];
	struct bk_backup_info bi;
	struct inst_backup_status *st; /* borrowed: the caller's */
	char *label;            /* owned: pg_backup_stop's labelfile */
	int64_t started_us;
};

static bool bb_cancelled(const struct bb *b)
{
	return b->o->cancel && atomic_load(b->o->cancel);
}

static char *bb_time_str(int64_t us)
{
	return api_time_rfc3339(us / 1000000);
}

static int set_timeout(struct bb *b, unsigned seconds, struct op_err *err)
{
	char sql[64];
	snprintf(sql, sizeof(sql), "SET statement_timeout = '%us'", seconds);
	return inst_pg_exec(b->pg, sql, 0, NULL, NULL, err);
}

static int bb_connect(struct bb *b, struct op_err *err)
{
	int r = inst_pg_connect(b->o->sockdir, b->o->port, "postgres", &b->pg, err);
	if (r < 0)
		return op_err_prefix(err, "base backup");
	/* the session outlives the copy: no idle timeout may end it */
	r = inst_pg_exec(b->pg, "SET idle_in_transaction_session_timeout = 0", 0, NULL, NULL, err);
	if (r == 0)
		r = inst_pg_exec(b->pg, "SET application_name = 'pgop-backup'", 0, NULL, NULL, err);
	return r < 0 ? r : set_timeout(b, INST_BACKUP_QUERY_TIMEOUT_S, err);
}

static void set_str(char **dst, PGresult *res, int col)
{
	free(*dst);
	*dst = PQgetisnull(res, 0, col) ? NULL : op_strdup(PQgetvalue(res, 0, col));
}

static int64_t col_i64(PGresult *res, int col)
{
	return PQgetisnull(res, 0, col) ? 0 : strtoll(PQgetvalue(res, 0, col), NULL, 10);
}

/* barman's _pg_get_metadata: what backup.info says about the server. */
static const char metadata_sql[] =
	"SELECT current_setting('server_version_num'), current_setting('data_directory'), "
	"current_setting('data_checksums'), pg_is_in_recovery()::text, "
	"(SELECT system_identifier::text FROM pg_control_system()), "
	"(SELECT setting FROM pg_settings WHERE name = 'wal_segment_size'), "
	"current_setting('config_file'), current_setting('hba_file'), "
	"current_setting('ident_file'), "
	"(SELECT sum(pg_tablespace_size(oid))::text FROM pg_tablespace), "
	"current_setting('summarize_wal', true)";

static int bb_included_files(struct bb *b, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(b->pg,
			     "SELECT DISTINCT sourcefile FROM pg_settings WHERE sourcefile IS NOT "
			     "NULL AND sourcefile NOT IN (SELECT setting FROM pg_settings WHERE "
			     "name = 'config_file') ORDER BY 1", 0, NULL, &res, err);
	if (r < 0 || PQntuples(res) == 0)
		return r;
	size_t n = (size_t)PQntuples(res);
	_cleanup_free_ const char **v = op_calloc(n, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = PQgetvalue(res, (int)i, 0);
	struct op_buf lit = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (bk_py_repr_strv(v, n, &lit) < 0) {
		op_buf_done(&lit);
		return op_err_set(err, -EINVAL, "included configuration files: not UTF-8");
	}
	b->bi.included_files = op_buf_take(&lit, NULL);
	return 0;
}

/* barman's get_tablespaces: every tablespace with a location. A relative
 * one (allow_in_place_tablespaces: pg_tblspc/<oid> is a directory) or one
 * inside PGDATA is refused: its files would be in data.tar too. */
static int bb_tablespaces(struct bb *b, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(b->pg, "SELECT spcname, oid::text, pg_tablespace_location(oid) FROM "
			     "pg_tablespace WHERE pg_tablespace_location(oid) <> '' ORDER BY oid",
			     0, NULL, &res, err);
	if (r < 0)
		return op_err_prefix(err, "base backup: tablespaces");
	size_t n = (size_t)PQntuples(res), plen = strlen(b->bi.pgdata ? b->bi.pgdata : "");
	if (n == 0)
		return 0;
	struct bk_tablespace *v = op_calloc(n, sizeof(*v));
	b->bi.tablespaces = v;
	b->bi.n_tablespaces = n;
	for (size_t i = 0; i < n; i++) {
		const char *loc = PQgetvalue(res, (int)i, 2), *name = PQgetvalue(res, (int)i, 0);
		v[i] = (struct bk_tablespace){ .name = op_strdup(name), .location = op_strdup(loc),
					       .oid = (uint32_t)strtoul(PQgetvalue(res, (int)i, 1),
									NULL, 10) };
		if (loc[0] != '/' || (plen && !strncmp(loc, b->bi.pgdata, plen) &&
				      (loc[plen] == '/' || !loc[plen])))
			return op_err_set(err, -ENOTSUP, "base backup: tablespace %s is at %s: "
					  "in-place or inside PGDATA is not supported", name, loc);
	}
	return 0;
}

static int bb_metadata(struct bb *b, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(b->pg, metadata_sql, 0, NULL, &res, err);
	if (r < 0)
		return op_err_prefix(err, "base backup: server metadata");
	b->version = (int)col_i64(res, 0);
	b->standby = strcmp(PQgetvalue(res, 0, 3), "true") == 0;
	b->seg_size = (uint64_t)col_i64(res, 5);
	if (b->version < 140000)
		return op_err_set(err, -ENOTSUP, "base backup: PostgreSQL %d is not supported (14 "
				  "or later)", b->version);
	struct bk_backup_info *bi = &b->bi;
	bi->version = (struct bk_opt_int){ true, b->version };
	bi->xlog_segment_size = (struct bk_opt_int){ true, (int64_t)b->seg_size };
	bi->cluster_size = (struct bk_opt_int){ !PQgetisnull(res, 0, 9), col_i64(res, 9) };
	set_str(&bi->pgdata, res, 1);
	set_str(&bi->data_checksums, res, 2);
	set_str(&bi->systemid, res, 4);
	set_str(&bi->config_file, res, 6);
	set_str(&bi->hba_file, res, 7);
	set_str(&bi->ident_file, res, 8);
	set_str(&bi->summarize_wal, res, 10);
	if (b->version < 170000) { /* barman: None before 17 */
		free(bi->summarize_wal);
		bi->summarize_wal = NULL;
	}
	r = bb_included_files(b, err);
	return r < 0 ? r : bb_tablespaces(b, err);
}

/* An LSN, its timeline and the epoch microseconds into the WAL name and
 * offset fields; -EPROTO when postgres answered something else. */
static int bb_location(struct bb *b, PGresult *res, char **ret_xlog, char **ret_wal,
		       struct bk_opt_int *ret_off, int64_t *ret_tli, struct bk_time *ret_time,
		       struct op_err *err)
{
	uint64_t lsn, off;
	char wal[25];
	const char *text = PQgetvalue(res, 0, 0);
	int64_t tli = col_i64(res, 1);
	if (op_lsn_parse(text, &lsn) < 0 || tli < 1 || tli > UINT32_MAX ||
	    bk_lsn_to_wal(lsn, (uint32_t)tli, b->seg_size, wal, &off) < 0)
		return op_err_set(err, -EPROTO, "base backup: unexpected location '%.40s' on "
				  "timeline %lld", text, (long long)tli);
	*ret_xlog = op_strdup(text);
	*ret_wal = op_strdup(wal);
	*ret_off = (struct bk_opt_int){ true, (int64_t)off };
	*ret_tli = tli;
	*ret_time = (struct bk_time){ .set = true, .epoch_us = col_i64(res, 2) };
	return 0;
}

static int bb_start(struct bb *b, struct op_err *err)
{
	static const char *const sql[2] = {
		"SELECT l::text, (SELECT timeline_id FROM pg_control_checkpoint())::text, "
		"(extract(epoch FROM now()) * 1000000)::bigint::text "
		"FROM pg_backup_start($1, $2) AS l",
		"SELECT l::text, (SELECT timeline_id FROM pg_control_checkpoint())::text, "
		"(extract(epoch FROM now()) * 1000000)::bigint::text "
		"FROM pg_start_backup($1, $2, false) AS l",
	};
	_cleanup_free_ char *label = op_asprintf("Barman backup cloud %s", b->id);
	const char *params[] = { label, b->cfg.immediate_checkpoint ? "true" : "false" };
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = set_timeout(b, INST_BACKUP_START_TIMEOUT_S, err);
	if (r == 0)
		r = inst_pg_exec(b->pg, sql[b->version < 150000], 2, params, &res, err);
	if (r < 0)
		return op_err_prefix(err, "base backup: pg_backup_start");
	struct bk_backup_info *bi = &b->bi;
	int64_t tli;
	r = bb_location(b, res, &bi->begin_xlog, &bi->begin_wal, &bi->begin_offset, &tli,
			&bi->begin_time, err);
	if (r < 0)
		return r;
	bi->timeline = (struct bk_opt_int){ true, tli };
	bi->status = BK_STATUS_STARTED;
	b->st->begin_wal = op_strdup(bi->begin_wal);
	b->st->begin_lsn = op_strdup(bi->begin_xlog);
	b->st->timeline = tli;
	return set_timeout(b, INST_BACKUP_QUERY_TIMEOUT_S, err);
}

/* After the stop on a primary, as barman: a WAL switch (the segment holding
 * the end goes to the archive) and the restore point barman_<id>. Failures
 * are logged: the backup itself is complete. */
static void bb_after_stop(struct bb *b)
{
	if (b->standby)
		return;
	struct op_err e = OP_ERR_INIT;
	_cleanup_free_ char *point = op_asprintf("barman_%s", b->id);
	const char *params[] = { point };
	if (inst_pg_exec(b->pg, "SELECT pg_switch_wal()", 0, NULL, NULL, &e) < 0 ||
	    inst_pg_exec(b->pg, "SELECT pg_create_restore_point($1)", 1, params, NULL, &e) < 0)
		op_log_warn("base backup: after pg_backup_stop", "backup", b->id, "error", e.msg);
}

/* bk_tar_label_fn: the walk is done; pg_backup_stop gives the label. */
static int bb_stop(void *ud, const char **ret_label, struct op_err *err)
{
	static const char *const sql[2] = {
		"SELECT l.lsn::text, (SELECT CASE WHEN pg_is_in_recovery() THEN "
		"min_recovery_end_timeline ELSE timeline_id END FROM pg_control_checkpoint(), "
		"pg_control_recovery())::text, (extract(epoch FROM now()) * 1000000)::bigint::text, "
		"l.labelfile FROM pg_backup_stop() AS l",
		"SELECT l.lsn::text, (SELECT CASE WHEN pg_is_in_recovery() THEN "
		"min_recovery_end_timeline ELSE timeline_id END FROM pg_control_checkpoint(), "
		"pg_control_recovery())::text, (extract(epoch FROM now()) * 1000000)::bigint::text, "
		"l.labelfile FROM pg_stop_backup(false) AS l",
	};
	struct bb *b = ud;
	unsigned timeout = b->o->stop_timeout_s ? b->o->stop_timeout_s : INST_BACKUP_STOP_TIMEOUT_S;
	if (bb_cancelled(b))
		return op_err_set(err, -ECANCELED, "cancelled before pg_backup_stop");
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = set_timeout(b, timeout, err);
	if (r == 0 && (r = inst_pg_exec(b->pg, sql[b->version < 150000], 0, NULL, &res, err)) < 0)
		return op_err_prefix(err, "pg_backup_stop (waited up to %u s for the WAL archive)",
				     timeout);
	if (r < 0)
		return r;
	struct bk_backup_info *bi = &b->bi;
	int64_t tli;
	r = bb_location(b, res, &bi->end_xlog, &bi->end_wal, &bi->end_offset, &tli,
			&bi->end_time, err);
	if (r < 0)
		return r;
	b->label = PQgetisnull(res, 0, 3) ? NULL : op_strdup(PQgetvalue(res, 0, 3));
	bi->backup_label = b->label ? op_strdup(b->label) : NULL;
	bb_after_stop(b);
	*ret_label = b->label;
	return set_timeout(b, INST_BACKUP_QUERY_TIMEOUT_S, err);
}

/* barman's CloudUploadController.statistics(), one worker, no analysis. */
static char *copy_stats(double seconds, unsigned workers)
{
	return op_asprintf("{'total_time': %.6f, 'number_of_workers': %u, 'analysis_time': 0, "
			   "'analysis_time_per_item': {'data': 0}, 'copy_time_per_item': "
			   "{'data': %.6f}, 'serialized_copy_time_per_item': {'data': %.6f}, "
			   "'copy_time': %.6f, 'serialized_copy_time': %.6f}",
			   seconds, workers, seconds, seconds, seconds, seconds);
}

/* barman's order: each tablespace's <oid>.tar, then data.tar (whose end
 * calls pg_backup_stop); *ret_stored: their compressed bytes. */
/* The upload part: bk_tar_part_size's, at least minChunkSize
 * (barman-cloud-backup's --min-chunk-size). */
static size_t bb_part_size(const struct bk_config *cfg)
{
	size_t part = bk_tar_part_size(cfg->jobs);
	return cfg->min_chunk_size > part ? (size_t)cfg->min_chunk_size : part;
}

static int bb_tablespace_tars(struct bb *b, uint64_t *ret_stored, struct op_err *err)
{
	char prefix[16];
	bk_tablespace_prefix(b->version, prefix);
	for (size_t i = 0; i < b->bi.n_tablespaces; i++) {
		const struct bk_tablespace *ts = &b->bi.tablespaces[i];
		struct bk_tar_opts t = { .pgdata = ts->location, .tablespace_prefix = prefix,
					 .cancel = b->o->cancel,
					 .compression = b->cfg.data_compression, .jobs = b->cfg.jobs,
					 .max_archive_size = b->cfg.max_archive_size,
					 .part_size = bb_part_size(&b->cfg) };
		struct bk_tar_stats stats;
		int r = bk_upload_tablespace_tar(&b->cfg, b->id, ts->oid, &t, &stats, err);
		if (r < 0)
			return op_err_prefix(err, "tablespace %s (oid %u)", ts->name, ts->oid);
		char oid[16], bytes[24];
		snprintf(oid, sizeof(oid), "%u", ts->oid);
		snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)stats.stored_bytes);
		op_log_info("tablespace uploaded", "backup", b->id, "tablespace", ts->name, "oid", oid,
			    "bytes", bytes);
		*ret_stored += stats.stored_bytes;
	}
	return 0;
}

static int bb_copy(struct bb *b, struct op_err *err)
{
	struct bk_tar_opts t = { .pgdata = b->bi.pgdata, .label_fn = bb_stop, .label_ud = b,
				 .cancel = b->o->cancel, .compression = b->cfg.data_compression,
				 .jobs = b->cfg.jobs, .max_archive_size = b->cfg.max_archive_size,
				 .part_size = bb_part_size(&b->cfg) };
	struct bk_tar_stats stats;
	uint64_t tbs_stored = 0;
	int r = bb_tablespace_tars(b, &tbs_stored, err);
	if (r == 0)
		r = bk_upload_pgdata_tar(&b->cfg, b->id, &t, &stats, err);
	if (r < 0)
		return r;
	stats.stored_bytes += tbs_stored;
	int64_t now = api_time_now_us();
	free(b->bi.copy_stats);
	b->bi.copy_stats = copy_stats((double)(now - b->started_us) / 1e6, b->cfg.jobs ? b->cfg.jobs : 1);
	/* size and deduplicated_size stay None, as barman-cloud-backup leaves them */
	b->st->size = (int64_t)stats.stored_bytes;
	b->bi.status = BK_STATUS_DONE;
	return bk_backup_info_upload(&b->cfg, b->id, &b->bi, err);
}

static void bb_progress(struct bb *b)
{
	if (b->o->progress)
		b->o->progress(b->o->progress_ud, b->st);
}

/* After pg_backup_start: STARTED is uploaded, the tar, DONE. */
static int bb_started(struct bb *b, struct op_err *err)
{
	int r = bk_backup_info_upload(&b->cfg, b->id, &b->bi, err);
	if (r < 0)
		return op_err_prefix(err, "backup.info");
	bb_progress(b);
	return bb_copy(b, err);
}

/* barman's handle_backup_errors: FAILED, "failure <action> (<first line>)". */
static void bb_failed(struct bb *b, bool started, struct op_err *err)
{
	const char *msg = err->msg[0] ? err->msg : "unknown error";
	size_t n = strcspn(msg, "\n");
	free(b->bi.error);
	b->bi.error = op_asprintf("failure uploading data (%.*s)", (int)n, msg);
	b->bi.status = BK_STATUS_FAILED;
	if (!started)
		return;
	struct op_err e = OP_ERR_INIT;
	if (bk_backup_info_upload(&b->cfg, b->id, &b->bi, &e) < 0) {
		struct op_err first = *err;
		op_err_clear(err);
		op_err_set(err, first.code, "%s; backup.info not marked FAILED: %s", first.msg,
			   e.msg);
	}
}

static void bb_status_init(struct bb *b)
{
	struct inst_backup_status *s = b->st;
	s->name = op_strdup(b->o->name);
	s->backup_id = op_strdup(b->id);
	s->phase = op_strdup("running");
	s->started_at = bb_time_str(b->started_us);
	s->pod_name = b->o->pod_name ? op_strdup(b->o->pod_name) : NULL;
}

static int bb_prepare(struct bb *b, struct op_err *err)
{
	if (!inst_backup_name_valid(b->o->name))
		return op_err_set(err, -EINVAL, "backup name: not a DNS-1123 subdomain");
	if (b->o->backup_id && !bk_backup_id_valid(b->o->backup_id))
		return op_err_set(err, -EINVAL, "backup id: expected YYYYMMDDTHHMMSS");
	if (b->o->backup_id)
		snprintf(b->id, sizeof(b->id), "%s", b->o->backup_id);
	else if (bk_backup_id_format(b->started_us / 1000000, b->id) < 0)
		return op_err_set(err, -EINVAL, "backup id: cannot format the time");
	bb_status_init(b);
	int r = bk_config_load(b->o->config_path, &b->cfg, err);
	if (r < 0)
		return r;
	b->st->destination_path = op_strdup(b->cfg.destination_path);
	b->st->server_name = op_strdup(b->cfg.server_name);
	b->st->endpoint_url = b->cfg.endpoint_url ? op_strdup(b->cfg.endpoint_url) : NULL;
	b->bi.server_name = op_strdup("cloud"); /* what barman-cloud-backup writes */
	b->bi.backup_name = op_strdup(b->o->name);
	return 0;
}

int inst_backup_run(const struct inst_backup_opts *o, struct inst_backup_status *ret,
		    struct op_err *ret_err)
{
	struct op_err e = OP_ERR_INIT, *err = &e;
	struct bb b = { .o = o, .st = ret, .started_us = api_time_now_us() };
	memset(ret, 0, sizeof(*ret));
	bk_backup_info_init(&b.bi);
	bool started = false;
	int r = bb_prepare(&b, err);
	if (r == 0)
		r = bb_connect(&b, err);
	if (r == 0)
		r = bb_metadata(&b, err);
	if (r == 0 && (r = bb_start(&b, err)) == 0) {
		started = true;
		r = bb_started(&b, err);
	}
	if (r < 0)
		bb_failed(&b, started, err);
	if (r < 0 && !err->msg[0])
		op_err_set(err, r, "%s", strerror(-r));
	if (!ret->name) /* refused before anything was known */
		ret->name = op_strdup(o->name ? o->name : "");
	free(ret->phase);
	ret->phase = op_strdup(r < 0 ? "failed" : "completed");
	ret->error = r < 0 ? op_strdup(err->msg) : NULL;
	ret->end_wal = b.bi.end_wal ? op_strdup(b.bi.end_wal) : NULL;
	ret->end_lsn = b.bi.end_xlog ? op_strdup(b.bi.end_xlog) : NULL;
	ret->stopped_at = bb_time_str(api_time_now_us());
	bb_progress(&b);
	inst_pqfinishp(&b.pg); /* a backup not stopped yet is aborted by postgres */
	free(b.label);
	bk_backup_info_done(&b.bi);
	bk_config_done(&b.cfg);
	return r < 0 ? op_err_set(ret_err, r, "%s", e.msg) : 0;
}
