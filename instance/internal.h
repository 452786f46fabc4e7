/* instance/internal.h - helpers shared by the files of instance/ (not
 * exported to other modules). */
#ifndef PGOP_INSTANCE_INTERNAL_H
#define PGOP_INSTANCE_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "instance/instance.h"
#include "kube/kube.h"
#include "support/dl.h"

/* ---- dl_pq.c ---- */
/* libpq, loaded on first use (support/dl.h): the PQ* functions are dl_pq.c's
 * wrappers; inst_pg_connect() loads it first so a missing library is its error. */
#define INST_DL_PQ_SONAME "libpq.so.5"
extern struct op_dl_lib inst_dl_pq;
/* Whether the libpq loaded has pipeline mode (14+; loads it when needed). */
bool inst_pq_pipeline(void);

/* ---- files.c ---- */
/* Writes data to path through a temp file + rename, mode applied before the
 * rename. 0 or -errno. */
OP_MUST_CHECK int inst_write_file(const char *path, const char *data, size_t len, mode_t mode,
				  struct op_err *err);
/* Reads a whole file (capped at max) into out (appended). */
OP_MUST_CHECK
int inst_read_file(const char *path, size_t max, struct op_buf *out, struct op_err *err);
/* Writes path only when its content differs. Returns 1 written, 0 same. */
OP_MUST_CHECK int inst_write_if_changed(const char *path, const char *data, size_t len, mode_t mode,
					struct op_err *err);
bool inst_path_exists(const char *path);
/* Copies the mounted certificates (certs_dir/{server,ca,replication}) into
 * controller_dir/certificates with mode 0600. Missing replication files are
 * skipped. Returns 1 when anything changed, 0 when not. */
OP_MUST_CHECK int inst_sync_certificates(const struct inst_paths *p, struct op_err *err);
/* Trimmed content of a one-value Secret file (secrets_dir/<secret>/<key>);
 * *ret owned. */
OP_MUST_CHECK int inst_read_secret(const struct inst_paths *p, const char *secret, const char *key,
				   char **ret, struct op_err *err);

/* ---- archive.c ---- */
/* <controller>/run/wal-archive.json, the configuration wal-archive reads (owned). */
char *inst_archive_config_path(const struct inst_paths *p);
/* <controller>/run/wal: wal-archive's markers, spool and last error (owned). */
char *inst_archive_state_dir(const struct inst_paths *p);
struct inst_archive_input {
	const struct api_cluster *cluster; /* borrowed */
	const struct inst_paths *paths;    /* borrowed */
	const char *region;                /* borrowed: the region file's value, NULL = none */
};
/* The configuration (backup/backup.h's JSON) for the Cluster's WAL archive:
 * destination, server name, endpoint, the mounted credential files' paths,
 * compression, maxParallel, PGDATA, the state directory. -ENOENT when the
 * Cluster archives nowhere, -ENOTSUP for what pgop cannot archive with
 * (snappy, inheritFromIAMRole: err names the field). Appends to out. */
OP_MUST_CHECK int inst_archive_config_render(const struct inst_archive_input *in,
					     struct op_buf *out, struct op_err *err);
/* Writes the configuration when the Cluster archives WAL (1), removes it
 * when not (0), or -errno (err says why: postgres's archive_command then
 * fails, and keeps the WAL, until it is fixed). */
OP_MUST_CHECK int inst_archive_sync(const struct inst_paths *p, const struct api_cluster *c,
				    struct op_err *err);
/* The store's error of the last failed wal-archive (1, *ret owned), 0 when
 * the last one succeeded or none ran, -errno when unreadable. */
/* A fast stop (SIGINT) of the postgres child pid, waited for at most
 * timeout_s, then SIGQUIT: 0 when it exited cleanly. */
OP_MUST_CHECK int inst_stop_postgres(pid_t pid, unsigned timeout_s, struct op_err *err);
/* The store part of a wal-archive/wal-restore configuration (backup/backup.h's
 * JSON, owned): destination, server, endpoint, region, the credential files at
 * <secrets dir>/<prefix>-<file>/<file> (the mount contract: "barman" for the
 * archive's store, "recovery" for a recovery source's), maxParallel, pgdata. */
json_object *inst_store_config_new(const struct inst_paths *p, const struct api_barman_store *s,
				   const char *server, const char *region, const char *prefix);
/* The additionalCommandArgs options pgop acts on (api/barman_args.h) as
 * configuration keys into o: the archive's (wal.archive..., data.additional...)
 * or a recovery source's (wal.restore..., data.restore...). */
void inst_store_args_config(json_object *o, const struct api_barman_store *s, bool recovery);
OP_MUST_CHECK int inst_archive_error(const struct inst_paths *p, char **ret);

/* ---- recovery.c: a Cluster's recovery source ---- */
/* <controller>/run/recovery-source.json (owned). */
char *inst_recovery_source_path(const struct inst_paths *p);
/* The wal-restore configuration (backup/backup.h's JSON) of the store
 * spec.bootstrap.recovery.source names: its destination, the server name
 * (barmanObjectStore.serverName, else the external cluster's name), endpoint,
 * region (the value read from its file; NULL = none), the credential files
 * as mounted (<secrets dir>/recovery-<file>/<file>, api_recovery_file_volume),
 * PGDATA, the state directory <controller>/run/recovery-wal. -ENOENT when no
 * such source, -ENOTSUP without access keys. Appends to out. */
OP_MUST_CHECK int inst_recovery_source_render(const struct inst_paths *p,
					      const struct api_cluster *c, const char *region,
					      struct op_buf *out, struct op_err *err);
/* -EEXIST (err says why) when the Cluster's own WAL archive
 * (spec.backup.barmanObjectStore) is the recovery source's destination and
 * server name: the recovered cluster, with the source's system identifier,
 * would archive into the archive it comes from (CloudNativePG refuses a
 * non-empty archive at bootstrap). 0 otherwise. */
OP_MUST_CHECK int inst_recovery_archive_check(const struct api_cluster *c, struct op_err *err);
/* Renders it (the region read from its mounted file) into
 * inst_recovery_source_path, mode 0600; *ret_path owned. */
OP_MUST_CHECK int inst_recovery_source_write(const struct inst_paths *p,
					     const struct api_cluster *c, char **ret_path,
					     struct op_err *err);

/* ---- cluster.c ---- */
struct inst_source {
	const char *cluster_file;       /* borrowed; NULL = API server */
	struct kube_client *kube;       /* owned by the caller; NULL with cluster_file */
	struct kube_client *fast;       /* owned by the caller, may be NULL: short timeouts,
					 * no retries (the lease read, the SIGTERM handover) */
	const char *ns, *name;          /* borrowed */
};
/* The barman-cloud plugin form resolved on c (api/plugin.h) with GETs of its
 * ObjectStores through src->kube; -ENOENT/-EINVAL (err says which) when one
 * cannot be used. */
OP_MUST_CHECK int inst_cluster_resolve_plugins(const struct inst_source *src,
					       struct api_cluster *c, struct op_err *err);
/* Loads the Cluster (file: JSON or YAML, one document), the plugin form
 * resolved (a failure logged: the store stays unconfigured). *ret owned. */
OP_MUST_CHECK int inst_cluster_load(const struct inst_source *src, struct api_cluster **ret,
				    struct op_err *err);
/* Merge-patches clusters/status (file source: logged and ignored). */
OP_MUST_CHECK int inst_cluster_patch_status(const struct inst_source *src, const char *patch,
					    struct op_err *err);
/* The SIGTERM handover's write: while the Cluster names me (borrowed) target
 * and current primary, merge-patches status.targetPrimary to cand (borrowed)
 * and its timestamp, with the resourceVersion just read as the precondition;
 * a Conflict reads again, up to INST_HANDOVER_ATTEMPTS times in all. 0
 * written, 1 the Cluster no longer names me, -ESTALE still conflicting, or
 * another -errno; err says why. */
#define INST_HANDOVER_ATTEMPTS 5
OP_MUST_CHECK
int inst_cluster_hand_over(const struct inst_source *src, const char *me, const char *cand,
			   struct op_err *err);
/* Opens a client from --kubeconfig/$KUBECONFIG/in-cluster; fast: 1.5 s per
 * request, 1 s to connect, no retries (a partitioned primary must learn within
 * a tick that it cannot reach the API server). */
OP_MUST_CHECK int inst_kube_open(const char *kubeconfig, bool fast, struct kube_client **ret,
				 struct op_err *err);

/* ---- bootstrap.c ---- */
/* Name of the effective OS user (pg_ident "local" map). Borrowed (static). */
const char *inst_os_user(void);
/* Writes postgresql.conf (includes), custom.conf, pg_hba.conf, pg_ident.conf
 * and (unless keep_override and it exists) an empty override.conf. */
OP_MUST_CHECK
int inst_write_config(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		      unsigned port, bool keep_override, struct op_err *err);
/* pg_basebackup of host:port into p->pgdata (and p->waldir when set; both
 * absent or empty), then the configuration, the standby settings and, last,
 * the marker naming pod: `join`, and `run`'s re-clone (reclone.c). */
OP_MUST_CHECK
int inst_clone_standby(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		       const char *host, unsigned port, struct op_err *err);
/* Loads the Cluster once from the file or the API server. *ret owned. */
OP_MUST_CHECK int inst_load_for(const char *cluster_file, const char *kubeconfig, const char *ns,
				const char *name, struct api_cluster **ret, struct op_err *err);

/* ---- reclaim.c ---- */
/* Records that pod's PGDATA bootstrapped / ran (PGDATA/pgop-bootstrapped). */
OP_MUST_CHECK int inst_marker_write(const char *pgdata, const char *pod, struct op_err *err);
/* 1 when PGDATA's marker names pod, 0 when it is absent or another pod's
 * (pg_basebackup copies the primary's), -errno when it cannot be read. */
OP_MUST_CHECK int inst_marker_is(const char *pgdata, const char *pod, struct op_err *err);
/* Removes dir and everything under it (symlinks removed, never followed;
 * other file systems not entered); an absent dir is 0. Main thread only. */
OP_MUST_CHECK int inst_remove_tree(const char *dir, struct op_err *err);
/* Before init/join: 0 when PGDATA (and waldir) are absent or empty, or held
 * the leftovers of a failed attempt, now removed (contents only, symlinks not
 * followed); -EEXIST when the marker names pod (never removed). */
OP_MUST_CHECK
int inst_pgdata_reclaim(const struct inst_paths *p, const char *pod, struct op_err *err);

/* ---- reclone.c (a former primary pg_rewind cannot bring back) ---- */
#define INST_ASIDE_SUFFIX ".rewind-failed"
enum inst_rewind_next {
	INST_REWIND_DONE,    /* pg_rewind succeeded */
	INST_REWIND_RECLONE, /* it failed against a source that answers: re-clone */
	INST_REWIND_FAIL,    /* it did not run, or the source does not answer: error, the
			      * next start tries pg_rewind again */
};
/* Pure: what follows pg_rewind's exit status (0..255, or -errno when it did
 * not run), given whether its source answered a ping afterwards. */
enum inst_rewind_next inst_rewind_next(int status, bool source_answers);
enum inst_aside_action {
	INST_ASIDE_NONE,    /* no moved-aside PGDATA */
	INST_ASIDE_DROP,    /* PGDATA is a completed clone: remove the aside copies */
	INST_ASIDE_RESTORE, /* the re-clone did not complete: remove what PGDATA holds and
			     * put the aside copies back */
};
/* Pure: at start, with PGDATA.rewind-failed present (aside_exists), from
 * whether PGDATA's marker names this pod (written last by a clone). */
enum inst_aside_action inst_aside_decide(bool aside_exists, bool pgdata_ours);
/* PGDATA, the WAL directory its pg_wal links to (NULL when pg_wal is a
 * directory; read from the aside copy when there is one), the tablespaces'
 * locations (spec.tablespaces: pg_basebackup writes each one back where it
 * was, and wants it empty) and their moved-aside siblings
 * (<path>.rewind-failed). Every string owned. */
struct inst_reclone_paths {
	char *pgdata, *aside, *waldir, *wal_aside;
	char **tbs, **tbs_aside; /* n_tbs each */
	size_t n_tbs;
};
OP_MUST_CHECK
int inst_reclone_paths(const char *pgdata, struct inst_reclone_paths *ret, struct op_err *err);
/* The tablespace locations of c (api_tablespace_location under p's
 * tablespaces_dir) added to rp. */
void inst_reclone_paths_tablespaces(struct inst_reclone_paths *rp, const struct inst_paths *p,
				    const struct api_cluster *c);
/* Frees the strings (usable as _cleanup_). */
void inst_reclone_paths_done(struct inst_reclone_paths *rp);
/* Renames PGDATA, then the WAL directory, then each tablespace location
 * (made again, empty) to their asides (-EEXIST when an aside exists). */
OP_MUST_CHECK int inst_reclone_move_aside(const struct inst_reclone_paths *rp, struct op_err *err);
/* Removes what PGDATA, the WAL directory and each tablespace location with
 * an aside hold and renames the asides back (PGDATA last). */
OP_MUST_CHECK int inst_reclone_restore(const struct inst_reclone_paths *rp, struct op_err *err);
/* Removes the aside copies (the tablespaces', the WAL directory's, then
 * PGDATA's: a tablespace or WAL aside exists only while PGDATA's does). */
OP_MUST_CHECK int inst_reclone_drop_aside(const struct inst_reclone_paths *rp, struct op_err *err);
/* At start, before anything reads PGDATA: acts on inst_aside_decide (logs
 * what it did). */
OP_MUST_CHECK int inst_reclone_leftover(const struct inst_paths *p, const struct api_cluster *c,
				       const char *pod, struct op_err *err);
/* Moves PGDATA (and its WAL directory) aside, clones from host:port
 * (inst_clone_standby), removes the aside copies; a failed clone puts the old
 * data back before returning its error. */
OP_MUST_CHECK
int inst_reclone(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		 const char *host, unsigned port, struct op_err *err);

/* ---- diverge.c: a replica that streamed past a promotion ---- */
/* One line of a timeline history file: timeline tli ended at switchpoint
 * (the next one forked there). */
struct inst_tli_switch {
	uint32_t tli;
	uint64_t switchpoint;
};
/* Pure: the lines of a .history file (blank and # lines skipped) into out
 * (at most max, in order: timelines and switchpoints increasing); -EINVAL
 * (err quotes the line), -E2BIG. */
OP_MUST_CHECK int inst_tli_history_parse(const char *text, struct inst_tli_switch *out, size_t max,
					 size_t *ret_n, struct op_err *err);
enum inst_diverge {
	INST_DIVERGE_UNKNOWN, /* nothing known (no timeline) */
	INST_DIVERGE_NO,      /* the primary's history contains the replica's position */
	INST_DIVERGE_YES,     /* it does not: the replica cannot follow the primary */
};
/* Pure: a replica that replayed up to lsn on timeline tli, against a primary
 * on primary_tli whose history is hist[n]: YES when tli is not in the history
 * or lsn is beyond its switchpoint (*ret_fork, 0 when not in it). */
enum inst_diverge inst_diverge_decide(uint32_t tli, uint64_t lsn, uint32_t primary_tli,
				      const struct inst_tli_switch *hist, size_t n,
				      uint64_t *ret_fork);
/* A verdict of YES must hold this long (a WAL receiver retries every
 * wal_retrieve_retry_interval, 5 s) before the replica is rewound. */
#define INST_DIVERGE_CONFIRM_MS 10000
/* The replica asks at most this often while its WAL receiver does not stream. */
#define INST_DIVERGE_EVERY_MS 3000
/* ... and gives the connection to the primary this long, then its two replication
 * commands as long again (diverge.c). */
#define INST_DIVERGE_CONNECT_MS 500
struct inst_diverge_watch {
	int64_t since; /* monotonic ms: diverged since; 0 = not diverged */
};
/* Pure: records the verdict at now (ms); true once diverged held without a
 * break for INST_DIVERGE_CONFIRM_MS. */
bool inst_diverge_confirm(struct inst_diverge_watch *w, bool diverged, int64_t now);
struct inst_diverge_info {
	enum inst_diverge verdict;
	uint32_t tli, primary_tli; /* the replica's and the primary's timelines */
	uint64_t lsn, fork;        /* its replay position; where its timeline ended */
};
/* Pure: whether to ask the primary, from the timeline the replica's WAL
 * receiver streams (0: none streams) and the primary's timeline the last
 * check found (0: none yet): not while it streams that one. */
bool inst_diverge_ask(uint32_t streaming_tli, uint32_t known_primary_tli);
/* Whether the replica local (its postgres) diverged from the primary at
 * primary_conninfo (inst_primary_conninfo, no dbname): NO without asking the
 * primary when !inst_diverge_ask (ret->primary_tli = known_primary_tli); else
 * IDENTIFY_SYSTEM and TIMELINE_HISTORY over a replication connection
 * (-EXDEV: another system). */
OP_MUST_CHECK
int inst_diverge_check(PGconn *local, const char *primary_conninfo, uint32_t known_primary_tli,
		       struct inst_diverge_info *ret, struct op_err *err);
/* Why it diverged, for /pg/status and the log (owned). */
char *inst_diverge_reason(const struct inst_diverge_info *d);

/* ---- pgbin.c ---- */
/* The major of a `postgres -V` line ("postgres (PostgreSQL) 16.4 ..."); 0
 * when s holds none. */
OP_MUST_CHECK int inst_pg_version_major(const char *s);
/* The major in pgdata/PG_VERSION. */
OP_MUST_CHECK int inst_pgdata_major(const char *pgdata, int *ret, struct op_err *err);
/* Finds the PostgreSQL programs (pgbin.c header: explicit_dir, else PATH,
 * pg_config --bindir, /usr/lib/postgresql/<want>/bin) whose `postgres -V`
 * is major want (0 = any). want_from names where want came from (errors).
 * *ret_bindir owned. -ENOENT naming every candidate and its major. */
OP_MUST_CHECK
int inst_pg_locate(const char *explicit_dir, const char *path_env, int want,
		   const char *want_from, char **ret_bindir, int *ret_major, struct op_err *err);
/* Sets p->pg_bindir and p->pg_major: the wanted major is p->pg_major, else
 * the major of c's spec.imageName (c may be NULL); with data_exists the data
 * directory's PG_VERSION must match it (or decides it). Prepends the bindir
 * to PATH. *ret_owned: the string p->pg_bindir now points to (free it after
 * the last use of p). */
OP_MUST_CHECK
int inst_paths_locate(struct inst_paths *p, const struct api_cluster *c, bool data_exists,
		      char **ret_owned, struct op_err *err);

/* ---- pg.c ---- */
/* Runs argv[0] (searched in bindir when not absolute) and waits. Returns the
 * exit status (0..255) or -errno; output goes to our stderr. uid of the
 * caller. */
OP_MUST_CHECK int inst_run_cmd(const char *bindir, const char *const *argv, struct op_err *err);
/* Starts `postgres -D pgdata [-c k=v ...]` in its own process group. */
OP_MUST_CHECK
int inst_start_postgres(const char *bindir, const char *pgdata, const char *const *extra,
			pid_t *ret_pid, struct op_err *err);
/* Connects over the unix socket in sockdir as postgres. *ret owned (PQfinish). */
OP_MUST_CHECK
int inst_pg_connect(const char *sockdir, unsigned port, const char *dbname, PGconn **ret,
		    struct op_err *err);
/* Waits up to timeout_s until a connection succeeds. */
OP_MUST_CHECK int inst_pg_wait_ready(const char *sockdir, unsigned port, unsigned timeout_s,
				     struct op_err *err);
/* Runs sql with text parameters; expects COMMAND_OK or TUPLES_OK. *ret may be
 * NULL; otherwise an owned PGresult (PQclear). */
OP_MUST_CHECK int inst_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
			       PGresult **ret, struct op_err *err);
/* Against a deadline (CLOCK_MONOTONIC ms, inst_lease_now's clock), on a
 * connection in nonblocking use (PQsend*, PQconnectStart*): polls c for
 * events (at most 1 s at a time) and reads what arrived; -ETIMEDOUT past
 * the deadline, -EIO when the connection failed (its message in err). */
OP_MUST_CHECK int inst_pq_wait(PGconn *c, short events, int64_t deadline_ms, struct op_err *err);
/* The next result without blocking past deadline_ms; *ret owned, NULL at
 * the command's end. Errors as inst_pq_wait. */
OP_MUST_CHECK int inst_pq_next_result(PGconn *c, int64_t deadline_ms, PGresult **ret,
				      struct op_err *err);
/* One text value (row 0, column 0) as an owned string; NULL when SQL NULL. */
OP_MUST_CHECK int inst_pg_value(PGconn *c, const char *sql, int nparams, const char *const *params,
				char **ret, struct op_err *err);
/* Fills a PostgresqlStatus from a live connection. cluster_name filters
 * replicationInfo to this cluster's pods. */
OP_MUST_CHECK
int inst_pg_query_status(PGconn *c, const char *cluster_name, struct inst_pg_status *s,
			 struct op_err *err);
/* Primary: creates the HA slots of `wanted` (slot names) and drops inactive
 * slots with `prefix` that are not wanted. Returns the number of changes. */
OP_MUST_CHECK int inst_pg_reconcile_slots(PGconn *c, const char *prefix, const char *const *wanted,
					  size_t n_wanted, struct op_err *err);
static inline void inst_pqfinishp(PGconn **c)
{
	if (*c)
		PQfinish(*c);
}
static inline void inst_pqclearp(PGresult **r)
{
	if (*r)
		PQclear(*r);
}

/* ---- server.c ---- */
struct inst_server;
/* ---- cut.c ---- */
/* The replica's WAL receiver cut (instance/cut.c); shared by the status
 * server's threads (the request) and the main thread (undo, report). */
#define INST_CUT_PROBE_MS 150 /* the replica's own TCP connect to the primary */
#define INST_CUT_WAIT_MS 2000 /* for the WAL receiver to exit after the reload */
/* A primary that accepts the TCP connect but from which the streaming WAL
 * receiver got nothing for this long is silent (a frozen node: its kernel
 * still completes handshakes, its processes answer nothing). Its lease
 * commits every API_FENCE_CHECK_MS, so a live one sends WAL 4 times a second. */
#define INST_CUT_SILENT_MS (4 * API_FENCE_CHECK_MS)
/* A receiver already silent this long (more than one lease period) when a
 * cut is asked for is watched until INST_CUT_SILENT_MS instead of refused:
 * one request decides (inst_cut_wait_ms). */
#define INST_CUT_WAIT_FROM_MS (API_FENCE_CHECK_MS + 50)
struct inst_cut {
	pthread_mutex_t lock; /* held while override.conf is rewritten */
	bool on;              /* override.conf says cut */
	int64_t until;        /* monotonic ms: the hold ends */
	char primary[64];     /* the primary it was cut off */
};
struct inst_cut_env {
	const char *pgdata, *sockdir; /* borrowed */
	const char *cluster_name;     /* borrowed: the primary must be one of its instances */
	unsigned port;                /* the local postgres */
	unsigned primary_port;        /* 0 = INST_PG_PORT */
};
void inst_cut_init(struct inst_cut *c);
void inst_cut_destroy(struct inst_cut *c);
/* POST /pg/cut?primary=&ip= (a status server thread): -EINVAL bad argument,
 * -EPERM not a replica, -EBUSY the primary answers a TCP connect from here
 * and its WAL still arrives (inst_cut_allowed);
 * 0 with *ret_hold_ms, how long the cut is held at least from now. A cut
 * written but whose WAL receiver did not exit in time stays (held) and the
 * error is returned. */
OP_MUST_CHECK
int inst_cut_request(struct inst_cut *c, const struct inst_cut_env *env, const char *primary,
		     const char *ip, int64_t *ret_hold_ms, struct op_err *err);
/* Pure: whether the replica may cut off the primary. probe_ok: its TCP
 * connect succeeded; refused: it was refused (a host that answers);
 * silent_ms: how long the streaming WAL receiver has received nothing, -1
 * when none streams. A primary that does not connect is cut; one that
 * refuses is not; one that connects only when no receiver streams (one may
 * hang in a connect to a frozen primary, never timed out, and stream from
 * it once it thaws) or it has heard nothing for INST_CUT_SILENT_MS. */
bool inst_cut_allowed(bool probe_ok, bool refused, int64_t silent_ms);
/* Pure: how long a cut request waits before it looks at the receiver again
 * (0: decide now). When the primary connects and the streaming receiver has
 * heard nothing for INST_CUT_WAIT_FROM_MS but not yet INST_CUT_SILENT_MS, the
 * rest of that (+20 ms): the operator, which asks only once its watch lost the
 * primary, then gets its answer from this request instead of a refusal and
 * another request a reconcile later (each up to ~0.5 s). */
int64_t inst_cut_wait_ms(bool probe_ok, int64_t silent_ms);
/* Pure: a cut off cut_primary may be undone when a read of the Cluster that
 * succeeded names another primary (not "pending"), or still names it (or
 * none) and started at or after the hold ended (read_started 0: the watched
 * Cluster, not a fresh read). An empty or NULL cut_primary (a cut found at
 * start) waits for the hold and a fresh read whatever the Cluster names. */
bool inst_cut_may_undo(bool on, const char *cut_primary, int64_t until, int64_t read_started,
		       bool read_ok, const char *target);
/* Undoes the cut when inst_cut_may_undo (re-checked under the lock: a request
 * may have extended the hold): writes override (the standby settings) and
 * reloads. */
OP_MUST_CHECK
int inst_cut_undo(struct inst_cut *c, const struct inst_cut_env *env, int64_t read_started,
		  const char *target, const struct op_buf *override, struct op_err *err);
/* The instance is primary now: nothing to undo. */
void inst_cut_forget(struct inst_cut *c);
/* At start: an override.conf that says cut is held again from now. */
void inst_cut_resume(struct inst_cut *c, const char *pgdata, int64_t now);
/* Whether cut; the primary (into primary, n bytes) and the hold left. */
bool inst_cut_report(struct inst_cut *c, int64_t now, char *primary, size_t n,
		     int64_t *ret_hold_ms);

struct inst_state;
/* Starts the status server on listen with the server cert/key and trusting
 * ca_file for client certificates. */
OP_MUST_CHECK
int inst_server_start(const char *listen, const char *cert_file, const char *key_file,
		      const char *ca_file, struct inst_state *st, struct inst_server **ret,
		      struct op_err *err);
/* Reloads the certificates when any file changed: 1 reloaded, 0 same. */
OP_MUST_CHECK int inst_server_reload(struct inst_server *srv, struct op_err *err);
void inst_server_free(struct inst_server *srv);
/* The bound TCP port (after listening on port 0). */
uint16_t inst_server_port(struct inst_server *srv);

/* ---- state.c: state shared by the threads of `run` (one mutex) ----
 * Written by the supervisor (run.c), read by the status server (server.c);
 * state.c calls neither of them. */
enum inst_request {
	INST_REQ_NONE = 0,
	INST_REQ_PROMOTE = 1 << 0,
	INST_REQ_DEMOTE = 1 << 1,
	INST_REQ_RELOAD = 1 << 2,
	INST_REQ_RESTART = 1 << 3,
};
/* The shared state of `run` (owned; inst_state_free). o is borrowed. */
struct inst_state *inst_state_new(const struct inst_run_opts *o);
void inst_state_free(struct inst_state *st);
/* Probe flags: postgres started, accepting connections. */
void inst_state_set(struct inst_state *st, bool started, bool ready);
/* postgres was (not) started; ready left as it is. */
void inst_state_set_started(struct inst_state *st, bool started);
/* Why WAL is not archived (/pg/status archiveError; msg copied, NULL = it is). */
void inst_state_set_archive_error(struct inst_state *st, const char *msg);
/* The primary's tablespace states (inst_tablespaces_reconcile's JSON; taken
 * over, NULL clears) for /pg/status "tablespaces". */
void inst_state_set_tablespaces(struct inst_state *st, char *json);
/* pg_rewind (or the re-clone after it) runs: /pg/status says so. */
void inst_state_set_rewinding(struct inst_state *st, bool v);
/* The replica diverged from the primary (why: copied, /pg/status
 * timelineDiverged; NULL = it follows): not ready while set. */
void inst_state_set_diverged(struct inst_state *st, const char *why);
/* The exporter whose failing queries /pg/status reports (metricsErrors);
 * borrowed; NULL before it is freed (a status request holds the state's
 * lock while it reads it). */
struct inst_metrics;
void inst_state_set_metrics(struct inst_state *st, struct inst_metrics *m);
/* The backup catalog's looks (instance/catalog.c), owned by the state
 * (borrowed from it; lives as long as st). */
struct inst_catalog *inst_state_catalog(struct inst_state *st);

/* ---- tablespaces.c: spec.tablespaces (CloudNativePG's declarative ones) ---- */
/* Each spec tablespace whose volume is mounted (api_tablespace_mount under
 * p->tablespaces_dir) gets its location directory (mode 0700): before
 * postgres starts, and before a clone. c NULL: none. */
OP_MUST_CHECK int inst_tablespace_dirs(const struct inst_paths *p, const struct api_cluster *c,
				       struct op_err *err);
/* The primary (conn, borrowed): each spec tablespace created at its location
 * with its owner when missing, its owner set when it differs. The states as
 * a JSON array of {name, owner, state: reconciled|pending, error} (owned;
 * NULL when the Cluster has none). */
char *inst_tablespaces_reconcile(PGconn *conn, const struct inst_paths *p,
				 const struct api_cluster *c);

/* ---- catalog.c: the store's backups, retention (the primary only) ---- */
#define INST_CATALOG_EVERY_S 60
struct inst_catalog;
struct inst_catalog *inst_catalog_new(void); /* owned: inst_catalog_free */
/* NULL ok. A look still running is detached and keeps c (the manager is
 * exiting: it never waits on the store). */
void inst_catalog_free(struct inst_catalog *c);
/* From the supervisor's tick: starts a look in the background when one is due
 * and this is the primary. cfg_path: the WAL archive's configuration file
 * (NULL: the Cluster archives nowhere); retention: spec.backup.retentionPolicy
 * or NULL. Both copied. */
void inst_catalog_tick(struct inst_catalog *c, bool primary, const char *cfg_path,
		       const char *retention);
/* Asks for a look at the next tick (a base backup just ended). */
void inst_catalog_poke(struct inst_catalog *c);
/* The last look as a JSON object's text (owned), NULL before the first. */
char *inst_catalog_json(struct inst_catalog *c);
/* postgres stopped by the lease (fenced): the probes still answer. */
void inst_state_set_fenced(struct inst_state *st, bool v);
/* pg_rewind exited with rewind_status and the data was cloned again from host
 * (borrowed, copied): reported in /pg/status from now on, with the time. */
void inst_state_set_recloned(struct inst_state *st, int rewind_status, const char *host);
/* The supervisor's tick found postgres accepting connections (up) or not:
 * sets ready (a restart in place ends when up). Returns and clears the
 * pending operator requests (enum inst_request bits), under the same lock. */
unsigned inst_state_postgres_seen(struct inst_state *st, bool up);
/* Returns and clears the pending operator requests (enum inst_request bits). */
unsigned inst_state_take_requests(struct inst_state *st);
/* The watcher hands over a newer Cluster (c owned by the state from now on;
 * an older one not yet taken is freed) and wakes the supervisor. */
void inst_state_publish(struct inst_state *st, struct api_cluster *c);
/* The newest Cluster published since the last call (owned by the caller), or
 * NULL; clears the wake-up, and says in *ret_woken (optional) whether it was
 * set (a new Cluster or a request since the last call), in the same lock: a
 * wake-up is never cleared unseen. */
struct api_cluster *inst_state_take_cluster(struct inst_state *st, bool *ret_woken);
/* <controller-dir>/run, postgres's socket directory (borrowed, lives as long as st). */
const char *inst_state_sockdir(const struct inst_state *st);
/* Called by the server: /pg/status JSON into out. */
OP_MUST_CHECK
int inst_state_status_json(struct inst_state *st, struct op_buf *out, struct op_err *err);
bool inst_state_ready(struct inst_state *st);
/* postgres is (re)starting in place (the manager just started, or it restarts a
 * crashed postmaster) and does not accept connections yet: /pg/status says so. */
bool inst_state_restarting(struct inst_state *st);
void inst_state_set_restarting(struct inst_state *st, bool v);
bool inst_state_started(struct inst_state *st);
void inst_state_request(struct inst_state *st, enum inst_request req);
/* The WAL receiver cut (borrowed, lives as long as st) and its environment. */
struct inst_cut *inst_state_cut(struct inst_state *st, struct inst_cut_env *ret_env);

/* ---- backupjob.c: POST/GET /pg/backup (one base backup at a time) ---- */
#define INST_BACKUP_STATE_FILE "backup-state.json" /* in <controller>/run */
struct inst_backup_job;
/* The job of `run`: the wal-archive configuration and the state file of p
 * (borrowed for the call), postgres's socket directory and port, the pod
 * (copied). The saved state is loaded: one left running is now failed
 * ("instance manager restarted"). Owned by the caller (inst_backup_job_free). */
struct inst_backup_job *inst_backup_job_new(const struct inst_paths *p, const char *sockdir,
					    unsigned port, const char *pod_name);
/* Starts the backup name (id NULL: the start time) in a thread: 0 started,
 * 1 name is the running or last one already (nothing started), -EINVAL bad
 * name or id, -EBUSY another one runs (err names it), another -errno when
 * WAL archiving is not configured (err says why). name and id copied. */
OP_MUST_CHECK int inst_backup_job_start(struct inst_backup_job *j, const char *name,
					const char *id, struct op_err *err);
/* The running or last backup's status JSON appended to out; -ENOENT none. */
OP_MUST_CHECK int inst_backup_job_json(struct inst_backup_job *j, struct op_buf *out);
/* Cancels a running upload (the tar's next read fails), joins, frees. */
void inst_backup_job_free(struct inst_backup_job *j);
/* The options `run` was started with (borrowed, lives as long as st). */
const struct inst_run_opts *inst_state_run_opts(const struct inst_state *st);

#endif
