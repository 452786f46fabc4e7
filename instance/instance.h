/* instance/instance.h - the instance manager (`pgop instance init|join|run|status`).
 *
 * Pure parts (unit-tested): PostgreSQL configuration rendering (config.c),
 * synchronous_standby_names (syncnames.c), the /pg/status JSON encoding
 * (status.c) and the authorization table of the status endpoints (auth.c).
 * Process parts: init/join (bootstrap.c), the PID-1 supervisor (run.c), the
 * status server (server.c), PostgreSQL helpers (pg.c), files (files.c, also
 * the binary copy of `pgop bootstrap`).
 *
 * Contract with the reconciler: docs/instance-contract.md.
 */
#ifndef PGOP_INSTANCE_INSTANCE_H
#define PGOP_INSTANCE_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/cluster.h"
#include "support/buf.h"
#include "support/err.h"

/* ------------------------------------------------------------------------ */
/* Paths and identity                                                         */
/* ------------------------------------------------------------------------ */

#define INST_CONTROLLER_DIR "/controller"
#define INST_CERTS_DIR "/run/pgop/certs"
#define INST_SECRETS_DIR "/run/pgop/secrets"
#define INST_PG_PORT 5432
#define INST_STATUS_LISTEN "0.0.0.0:8000"
#define INST_OPERATOR_CN "pgop-operator"

/* Where an instance lives. All strings BORROWED (argv, env or static). */
struct inst_paths {
	const char *pgdata;         /* $PGDATA */
	const char *waldir;         /* NULL unless walStorage */
	const char *controller_dir; /* default INST_CONTROLLER_DIR */
	const char *certs_dir;      /* mounted Secrets, default INST_CERTS_DIR */
	const char *secrets_dir;    /* default INST_SECRETS_DIR */
	const char *tablespaces_dir; /* volumes of spec.tablespaces, NULL = CloudNativePG's
				      * API_TABLESPACE_MOUNT_ROOT (api/names.h) */
	const char *pg_bindir;      /* --pg-bindir; NULL = found (inst_paths_locate) */
	int pg_major;               /* --pg-major; 0 = the Cluster image's / PG_VERSION */
};

/* Fills unset fields with the defaults above. */
void inst_paths_default(struct inst_paths *p);

/* ------------------------------------------------------------------------ */
/* Configuration rendering (pure)                                             */
/* ------------------------------------------------------------------------ */

/* Everything the renderer reads. All pointers BORROWED. */
struct inst_config_input {
	const struct api_cluster *cluster;
	const char *pod_name;       /* this instance */
	const char *controller_dir; /* NULL = INST_CONTROLLER_DIR */
	const char *os_user;        /* OS user running postgres (pg_ident "local" map) */
	unsigned port;              /* 0 = INST_PG_PORT */
	int major;                  /* PostgreSQL major of the binaries (required, >= 13) */
	/* Healthy standbys (pod names, any order) for synchronous_standby_names;
	 * NULL = status.instancesStatus.healthy (published by the reconciler),
	 * or every name of status.instanceNames before it was written. */
	const struct api_strv *healthy_replicas;
	/* This binary (archive_command runs its wal-archive when the Cluster
	 * archives WAL); NULL = <controller dir>/pgop, where the Pod copies it. */
	const char *pgop_path;
};

/* custom.conf: operator defaults (admission-rules §7b), user parameters minus
 * fixed/blocked ones, mandatory settings (§7c), computed values (§7d), then
 * cnpg.config_sha256 = SHA-256 of everything before it. Keys sorted. Appends
 * to out. -EINVAL when a parameter name or value cannot be rendered safely
 * (newline, NUL, bad name; err names it). *ret_sha256 (may be NULL): owned
 * hex digest. */
OP_MUST_CHECK
int inst_render_postgresql_conf(const struct inst_config_input *in, struct op_buf *out,
				char **ret_sha256, struct op_err *err);
/* pg_hba.conf: fixed rules (§7e), spec.postgresql.pg_hba, default line. */
OP_MUST_CHECK
int inst_render_pg_hba(const struct inst_config_input *in, struct op_buf *out, struct op_err *err);
/* pg_ident.conf: "local" and cnpg_* maps, then spec.postgresql.pg_ident. */
OP_MUST_CHECK int inst_render_pg_ident(const struct inst_config_input *in, struct op_buf *out,
				       struct op_err *err);
/* postgresql.conf written by init: only the two include directives. */
extern const char inst_postgresql_conf_includes[];

/* synchronous_standby_names from the spec (legacy min/maxSyncReplicas or the
 * synchronous stanza, runtime.md §4.3). Appends the value (without quotes of
 * the conf file) to out; nothing when the parameter stays unset. Returns 0. */
OP_MUST_CHECK
int inst_sync_standby_names(const struct api_cluster *c, const char *primary,
			    const struct api_strv *healthy_replicas, struct op_buf *out,
			    struct op_err *err);

/* How long each shutdown mode may take (CloudNativePG): on SIGTERM smart for
 * smartShutdownTimeout (skipped when 0), then fast for
 * max(stopDelay - smartShutdownTimeout, 30) s, then immediate; a primary that
 * is no longer the target (switchover) stops fast for switchoverDelay, then
 * immediate. smart_override_s (--stop-timeout, 0 = none) replaces
 * smartShutdownTimeout. */
struct inst_stop_timeouts {
	unsigned smart_s, fast_s;
};
void inst_stop_timeouts(const struct api_cluster *c, bool demotion, unsigned smart_override_s,
			struct inst_stop_timeouts *ret);

/* override.conf of a standby: recovery_target_timeline, primary_conninfo
 * (sslmode verify-ca with the streaming_replica certificate) and
 * primary_slot_name when HA slots are enabled. host/port: the primary.
 * c NULL: the settings of a replica whose WAL receiver is cut
 * (instance/cut.c): primary_conninfo empty, marked with INST_CUT_MARK. */
#define INST_CUT_MARK "# pgop: WAL receiver cut (the primary was unreachable)"
OP_MUST_CHECK
int inst_render_standby_override(const struct api_cluster *c, const char *pod_name,
				 const char *controller_dir, const char *host, unsigned port,
				 struct op_buf *out, struct op_err *err);
/* The conninfo used by join, pg_rewind and primary_conninfo. dbname may be NULL. */
OP_MUST_CHECK
int inst_primary_conninfo(const char *pod_name, const char *controller_dir, const char *host,
			  unsigned port, const char *dbname, struct op_buf *out);

/* ------------------------------------------------------------------------ */
/* /pg/status (pure encoding)                                                 */
/* ------------------------------------------------------------------------ */

struct inst_repl_info {
	char *application_name, *state, *sent_lsn, *write_lsn, *flush_lsn, *replay_lsn;
	char *write_lag, *flush_lag, *replay_lag, *sync_state;
	int64_t sync_priority;
};

struct inst_slot_info {
	char *slot_name, *plugin, *slot_type, *database, *restart_lsn, *wal_status;
	int64_t datoid, safe_wal_size; /* datoid 0 = none */
	bool active;
};

/* Every string OWNED (NULL = omitted / empty). */
struct inst_pg_status {
	char *current_lsn, *received_lsn, *replay_lsn, *system_id;
	bool is_primary, replay_paused, pending_restart, is_wal_receiver_active;
	bool is_pg_rewind_running;   /* pg_rewind, or the re-clone after it failed */
	int64_t timeline_id;
	/* pg_rewind failed and this manager re-cloned the instance (`recloned`):
	 * pg_rewind's exit status, the host cloned from, when (RFC 3339); NULL
	 * reclone_at = omitted */
	int reclone_rewind_status;
	char *reclone_source, *reclone_at;
	char *loaded_configuration_hash, *session_id, *pod_name;
	int64_t lease_ms; /* `leaseMs`: this manager's lease (API_FENCE_MS); 0 omits it */
	/* the WAL receiver cut off an unreachable primary (instance/cut.c):
	 * `walReceiverCut` {primary, holdMs}; omitted when !cut */
	bool cut;
	char *cut_primary;
	int64_t cut_hold_ms;
	struct inst_repl_info *repl;
	size_t n_repl;
	struct inst_slot_info *slots;
	size_t n_slots;
	/* WAL archiving (pg_stat_archiver, CloudNativePG's names): archive_mode
	 * archives here (on a primary, or `always`); the last archived and last
	 * failed file and when (RFC 3339); failures so far; .ready files waiting
	 * (pgop: `readyWALs`); the store's own error of the last failed
	 * wal-archive, NULL when the last call succeeded (`archiveError`) */
	bool is_archiving_wal;
	char *last_archived_wal, *last_archived_wal_time, *last_failed_wal, *last_failed_wal_time;
	int64_t archiver_failed_count, ready_wals;
	char *archive_error;
	/* the replica cannot follow the primary: it replayed past the point where
	 * the primary's timeline forked (instance/diverge.c), why; NULL = omitted
	 * (`timelineDiverged`) */
	char *timeline_diverged;
	char *backup_catalog; /* owned JSON object text (instance/catalog.c), or NULL */
	/* owned JSON array text: the exporter's failing queries and custom query
	 * files, [{"source", "error"}] (instance/metrics_collect.c), or NULL */
	char *metrics_errors;
	/* owned JSON array text: the primary's spec.tablespaces states
	 * (instance/tablespaces.c), or NULL */
	char *tablespaces;
};

void inst_pg_status_done(struct inst_pg_status *s);
/* PostgresqlStatus JSON (runtime.md §2.1) appended to out. */
OP_MUST_CHECK int inst_status_to_json(const struct inst_pg_status *s, struct op_buf *out);

/* ------------------------------------------------------------------------ */
/* Endpoint authorization (pure)                                              */
/* ------------------------------------------------------------------------ */

enum inst_peer_cert {
	INST_PEER_NONE,      /* no client certificate */
	INST_PEER_UNTRUSTED, /* presented, does not chain to the cluster CA */
	INST_PEER_NOT_CLIENT, /* chains to the cluster CA, no clientAuth extended key usage */
	INST_PEER_TRUSTED,   /* chains to the cluster CA, extended key usage clientAuth */
};

/* The HTTP status to answer before running the handler: 0 = go on, 404
 * unknown path, 405 known path other method, 401 operator-only endpoint
 * without a trusted certificate, 403 trusted but without clientAuth or with
 * CN != INST_OPERATOR_CN. cn may be NULL. */
unsigned inst_auth_decide(const char *method, const char *path, enum inst_peer_cert peer,
			  const char *cn);
/* True when the endpoint needs the operator certificate. */
bool inst_route_is_protected(const char *method, const char *path);

/* ------------------------------------------------------------------------ */
/* Subcommands (cmd/instance.c parses flags, these do the work)               */
/* ------------------------------------------------------------------------ */

struct inst_init_opts {
	struct inst_paths paths;
	const char *cluster_file;   /* --cluster-file: read the Cluster from a file */
	const char *kubeconfig;
	const char *cluster_name, *namespace_, *pod_name;
	const char *app_db, *app_user;
	const char *const *initdb_flags; /* extra flags, n_initdb_flags */
	size_t n_initdb_flags;
	const char *const *post_init_sql, *const *post_init_app_sql, *const *post_init_tpl_sql;
	size_t n_post_init_sql, n_post_init_app_sql, n_post_init_tpl_sql;
};

struct inst_join_opts {
	struct inst_paths paths;
	const char *cluster_file;
	const char *kubeconfig;
	const char *cluster_name, *namespace_, *pod_name;
	const char *primary_host;
	unsigned primary_port; /* 0 = 5432 */
};

struct inst_run_opts {
	struct inst_paths paths;
	const char *cluster_file;
	const char *kubeconfig;
	const char *cluster_name, *namespace_, *pod_name;
	unsigned port;              /* 0 = 5432 */
	const char *status_listen;  /* NULL = INST_STATUS_LISTEN */
	const char *metrics_listen; /* exporter; NULL = 0.0.0.0:9187, "off" = none */
	const char *monitoring_dir; /* custom query files; NULL = /run/pgop/monitoring */
	const char *primary_host;   /* for pg_rewind/standby config; NULL = <c>-rw */
	unsigned primary_port;      /* 0 = 5432 */
	unsigned stop_timeout_s;    /* smart shutdown before fast; 0 = spec.smartShutdownTimeout */
};

/* Each returns 0 or -errno with err set. */
OP_MUST_CHECK int inst_init(const struct inst_init_opts *o, struct op_err *err);
OP_MUST_CHECK int inst_join(const struct inst_join_opts *o, struct op_err *err);
/* Runs until SIGTERM (0) or postgres dies / demotion (-errno, exit non-zero). */
OP_MUST_CHECK int inst_run(const struct inst_run_opts *o, struct op_err *err);
/* `pgop bootstrap DEST` (the init container): copies this binary
 * (/proc/self/exe) to dest through a temp file + fsync + rename, mode 0755.
 * 0, or -errno with err naming the file ("copy to DEST failed: ..."). */
OP_MUST_CHECK int inst_copy_self(const char *dest, struct op_err *err);
/* GET https://<listen>/pg/status (server not verified: local) into out, with
 * the client certificate files cert/key (NULL = none: the server answers 401). */
OP_MUST_CHECK
int inst_status_fetch(const char *url, const char *cert, const char *key, struct op_buf *out,
		      struct op_err *err);

/* ------------------------------------------------------------------------ */
/* Recovery from a barman object store (instance/recovery.c)                 */
/* ------------------------------------------------------------------------ */

/* A recovery target validated and normalised (recovery.c): nothing of the
 * spec reaches postgresql.conf otherwise. Strings owned. */
struct inst_recovery_target {
	int kind;          /* enum bk_target_kind (backup/backup.h) */
	char *value;       /* time "YYYY-MM-DD HH:MM:SS.ffffff+00", LSN "X/Y", xid
			    * digits, restore point name; NULL for none/immediate */
	int64_t time_us;   /* the time's epoch microseconds */
	uint64_t lsn;
	bool inclusive;    /* !exclusive */
	char *timeline;    /* "latest", "current" or digits (default "latest") */
	uint32_t tli;      /* the numeric timeline, 0 otherwise */
};
/* From the spec's recoveryTarget (t may be NULL: end of WAL). -EINVAL with
 * err naming the field (spec.bootstrap.recovery.recoveryTarget.targetTime,
 * ...) for a value postgres would refuse or that cannot be written safely,
 * or for two targets at once. */
OP_MUST_CHECK int inst_recovery_target_parse(const struct api_recovery_target *t,
					     struct inst_recovery_target *ret, struct op_err *err);
void inst_recovery_target_done(struct inst_recovery_target *t);

/* The recovery settings file (pure): restore_command running
 * `<pgop> instance wal-restore --config <config> %f %p` (both paths quoted
 * for the shell, then as a configuration string), the target,
 * recovery_target_inclusive, recovery_target_timeline and
 * recovery_target_action = 'promote'. Appends to out. */
OP_MUST_CHECK int inst_recovery_conf_render(const char *pgop, const char *config,
					    const struct inst_recovery_target *t,
					    struct op_buf *out, struct op_err *err);
/* Appends value as a PostgreSQL configuration string: '...' with ' and \
 * doubled; -EINVAL for control characters (a line break would end the
 * setting). */
OP_MUST_CHECK int inst_conf_quote(const char *value, struct op_buf *out);

struct bk_tablespace_target;
/* Where the base backup and the WAL come from. All borrowed. */
struct inst_recovery_source {
	const char *config;    /* the wal-restore configuration (backup/backup.h's JSON,
				* mode 0600) of the SOURCE store */
	const char *backup_id; /* NULL or "latest": chosen for the target (catalog) */
};
/* After promotion, before the stop: the roles, passwords... (NULL: none). */
typedef int (*inst_recovery_hook)(void *ud, const char *sockdir, unsigned port,
				  struct op_err *err);
struct inst_recovery_opts {
	const struct api_recovery_target *target; /* borrowed; NULL: end of WAL */
	const char *pgop;         /* this binary for restore_command; NULL: /proc/self/exe */
	unsigned timeout_s;       /* recovery (WAL replay) at most; 0: INST_RECOVERY_TIMEOUT_S */
	unsigned port;            /* the temporary postmaster's; 0: INST_PG_PORT */
	const char *sockdir;      /* its socket directory; NULL: <controller dir>/run */
	/* after the tar is extracted, before postgres starts (the Cluster's
	 * configuration files; sockdir NULL, port 0); NULL: none */
	inst_recovery_hook before_start;
	inst_recovery_hook after_promote;
	void *ud; /* passed to both */
	/* borrowed: where the backup's tablespaces go, by name (backup/backup.h);
	 * a tablespace of the backup not here fails the restore */
	const struct bk_tablespace_target *tablespaces;
	size_t n_tablespaces;
};
#define INST_RECOVERY_TIMEOUT_S (24u * 3600)
#define INST_RECOVERY_CONF "pgop-recovery.conf"
/* Restores into p->pgdata (absent or empty): the backup chosen (catalog), its
 * tar extracted, INST_RECOVERY_CONF and recovery.signal written, a
 * temporary postmaster started with config_file = that file (which includes
 * postgresql.conf, then sets the recovery) and archive_command failing (no
 * WAL reaches the source; .ready files stay for the real archiver), waited
 * on until it promoted (progress logged every 10 s; a postmaster that exits
 * is its error), the hook, a fast stop, the settings file removed. Sets
 * p->pg_bindir/pg_major from PG_VERSION when unset (*ret_bindir owned). */
OP_MUST_CHECK int inst_recover(struct inst_paths *p, const struct inst_recovery_source *src,
			       const struct inst_recovery_opts *o, char **ret_bindir,
			       struct op_err *err);
/* ------------------------------------------------------------------------ */
/* Base backups (basebackup.c: the engine; backupjob.c: POST/GET /pg/backup)  */
/* ------------------------------------------------------------------------ */

/* What GET /pg/backup answers and backup-state.json keeps. Every string
 * OWNED, NULL = omitted; timeline and size 0 = omitted. phase: "running",
 * "completed" or "failed"; times RFC 3339 (api/timestamp.h); LSNs as
 * postgres prints them; WAL names of 24 hex. */
struct inst_backup_status {
	char *name, *backup_id, *phase, *begin_wal, *end_wal, *begin_lsn, *end_lsn;
	char *started_at, *stopped_at, *error, *pod_name;
	char *destination_path, *server_name, *endpoint_url;
	int64_t timeline, size;
};
void inst_backup_status_done(struct inst_backup_status *s);
/* {"name","backupId","phase","beginWal","endWal","beginLSN","endLSN",
 * "startedAt","stoppedAt","error","instanceID":{"podName"},
 * "destinationPath","serverName","endpointURL","timeline","size"} appended
 * to out (absent members left out). */
OP_MUST_CHECK int inst_backup_status_to_json(const struct inst_backup_status *s,
					     struct op_buf *out);
/* Parses that JSON (unknown members ignored, wrong types refused). *ret
 * owns everything on success, nothing on failure. */
OP_MUST_CHECK int inst_backup_status_parse(const char *json, size_t len,
					   struct inst_backup_status *ret, struct op_err *err);
/* A Kubernetes object name: DNS-1123 subdomain, 1..253 bytes. */
bool inst_backup_name_valid(const char *name);

#define INST_BACKUP_START_TIMEOUT_S 3600 /* pg_backup_start: a spread checkpoint */
#define INST_BACKUP_STOP_TIMEOUT_S 600   /* pg_backup_stop waiting for the archive */
#define INST_BACKUP_QUERY_TIMEOUT_S 60   /* every other statement */
struct inst_backup_opts {
	const char *config_path;   /* borrowed: the wal-archive configuration (backup.h) */
	const char *name;          /* borrowed: the Backup's name (backup.info backup_name) */
	const char *backup_id;     /* borrowed: YYYYMMDDTHHMMSS; NULL = now (UTC) */
	const char *sockdir;       /* borrowed: postgres's socket directory */
	unsigned port;             /* 0 = INST_PG_PORT */
	const char *pod_name;      /* borrowed, may be NULL: instanceID.podName */
	unsigned stop_timeout_s;   /* 0 = INST_BACKUP_STOP_TIMEOUT_S */
	const _Atomic bool *cancel; /* borrowed, may be NULL: true stops the upload */
	/* called (ud = progress_ud) with the status once the backup started and
	 * at its end; s borrowed for the call */
	void (*progress)(void *ud, const struct inst_backup_status *s);
	void *progress_ud;
};
/* An online base backup of the local postgres (primary or standby) into
 * the configuration's destination, barman-cloud's layout: backup.info
 * STARTED, data.tar streamed, pg_backup_stop, backup.info DONE (or FAILED
 * with its error). 0 only when DONE. *ret (always filled, owned by the
 * caller: inst_backup_status_done) says how it went either way. */
OP_MUST_CHECK int inst_backup_run(const struct inst_backup_opts *o,
				  struct inst_backup_status *ret, struct op_err *err);

#endif
