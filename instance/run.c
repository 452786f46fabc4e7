/* instance/run.c - `pgop instance run`: PID 1 of an instance Pod.
 *
 * Threads: the main thread owns postgres (fork/exec, own process group) and
 * takes signals synchronously (sigtimedwait, signals blocked everywhere);
 * the watcher thread follows the Cluster (API watch, or the file's mtime with
 * --cluster-file); the status server answers on its own threads. Everything
 * they share is in struct inst_state behind one mutex (instance/state.c,
 * below both this file and server.c).
 *
 * Every tick (1 s, or within API_FENCE_CHECK_MS when the Cluster changed) the
 * main thread:
 * copies certificates (reload on change), renders the configuration (SIGHUP
 * on change), acts on the role (promote when targetPrimary is this pod,
 * shut down and exit when a primary is no longer the target, claim
 * currentPrimary when it is empty), keeps the HA slots on the primary,
 * renews the primary's lease and fences (stops postgres fast) when it
 * expired (api/fence.h, instance/lease.h, docs/internals/failover.md).
 * Between ticks a primary checks its lease every API_FENCE_CHECK_MS, on one
 * connection to its postgres kept from check to check.
 *
 * A former primary that another instance replaced rewinds at start
 * (pg_rewind), and is cloned again when pg_rewind cannot work (reclone.c);
 * so does a replica that replayed past the primary's fork (diverge.c), once
 * it finds it.
 *
 * SIGTERM on a primary with a streaming replica is a switchover: the most
 * advanced (synchronous first) replica is named targetPrimary, then postgres
 * stops fast (its walsenders send the last WAL first) and the replica
 * promotes once its WAL receiver has stopped.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/annotations.h"
#include "api/fence.h"
#include "api/names.h"
#include "api/plugin.h"
#include "api/timestamp.h"
#include "instance/internal.h"
#include "instance/metrics_internal.h"
#include "instance/lease.h"
#include "instance/pglog.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/json.h"
#include "support/log.h"

/* ---- the watcher thread ---- */

struct watcher {
	struct inst_state *st;
	struct inst_source src;
	struct kube_watch *w;
	pthread_t thread;
	bool running;
	atomic_bool stop;   /* file mode */
};

static void publish(struct inst_state *st, struct api_cluster *c)
{
	inst_state_publish(st, c);
	kill(getpid(), SIGUSR1); /* the main thread acts now, not at its next check */
}

static int on_event(void *ud, enum kube_watch_type type, json_object *obj)
{
	struct watcher *w = ud;
	if (type != KUBE_WATCH_ADDED && type != KUBE_WATCH_MODIFIED)
		return 0;
	struct api_cluster *c = NULL;
	struct op_err err = OP_ERR_INIT;
	if (api_cluster_decode(obj, NULL, &c, &err) == 0)
		publish(w->st, c);
	else
		op_log_warn("cannot decode the Cluster, ignoring", "error", err.msg);
	return 0;
}

static void *watch_main(void *arg)
{
	struct watcher *w = arg;
	if (w->src.cluster_file) {
		struct timespec last = { 0 };
		while (!atomic_load(&w->stop)) {
			struct stat sb;
			if (stat(w->src.cluster_file, &sb) == 0 &&
			    (sb.st_mtim.tv_sec != last.tv_sec || sb.st_mtim.tv_nsec != last.tv_nsec)) {
				struct api_cluster *c = NULL;
				struct op_err err = OP_ERR_INIT;
				if (inst_cluster_load(&w->src, &c, &err) == 0) {
					last = sb.st_mtim;
					publish(w->st, c);
				} else {
					op_log_warn("cannot load the cluster file, ignoring", "error",
						    err.msg);
				}
			}
			usleep(500 * 1000);
		}
		return NULL;
	}
	while (!kube_watch_stopped(w->w)) {
		struct op_err err = OP_ERR_INIT;
		int r = kube_watch_run(w->w, on_event, w, 0, &err);
		if (r == -ECANCELED)
			break;
		/* 410 or a hard error: get the object again and resume from it. */
		op_log_warn("cluster watch ended, relisting", "error", err.msg);
		json_object *obj = NULL;
		op_err_clear(&err);
		if (kube_get(w->src.kube, KUBE_CLUSTERS, w->src.ns, w->src.name, &obj, &err) == 0) {
			kube_watch_set_resource_version(w->w, kube_obj_resource_version(obj));
			on_event(w, KUBE_WATCH_MODIFIED, obj);
			json_object_put(obj);
		} else {
			sleep(2);
		}
	}
	return NULL;
}

static int watcher_start(struct watcher *w, const char *rv, struct op_err *err)
{
	if (!w->src.cluster_file) {
		_cleanup_free_ char *fs = op_asprintf("metadata.name=%s", w->src.name);
		struct kube_watch_opts wo = { .field_selector = fs, .resource_version = rv };
		int r = kube_watch_new(w->src.kube, KUBE_CLUSTERS, w->src.ns, &wo, &w->w, err);
		if (r)
			return r;
	}
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
		return op_err_set(err, -EAGAIN, "cannot start the watcher thread");
	w->running = true;
	return 0;
}

static void watcher_stop(struct watcher *w)
{
	atomic_store(&w->stop, true);
	if (w->w)
		kube_watch_stop(w->w);
	if (w->running)
		pthread_join(w->thread, NULL);
	w->running = false;
	w->w = kube_watch_free(w->w);
}

/* ---- postgres process ---- */

struct runner {
	const struct inst_run_opts *o;
	struct inst_state *st;
	struct inst_source *src;
	struct api_cluster *cluster; /* owned: the main thread's current view */
	pid_t pid;
	bool bootstrapped_primary;   /* no standby.signal when we started */
	time_t last_slots;
	time_t last_tablespaces;     /* the primary's last spec.tablespaces pass */
	bool pending_restart;        /* last seen, to log the change once */
	bool waiting_receiver;       /* the target waits for its WAL receiver to stop:
	                              * full ticks every FAST_TICK_MS */
	bool api_warned;             /* "lease: cannot read the Cluster" logged */
	int64_t crash_window;        /* crash_restart: start of the counting minute (ms) */
	unsigned crashes;            /* crash_restart: in-place restarts in that minute */
	int64_t started_ms;          /* when postgres was last (re)started (ms) */
	int64_t last_tick;           /* when the last full tick started (ms) */
	bool primary;                /* the last tick found postgres a primary */
	PGconn *conn;                /* owned: the kept connection to the local postgres
				      * (pg_conn); NULL = none, closed whenever postgres
				      * stops or starts */
	struct inst_lease lease;     /* the primary's lease (api/fence.h) */
	char *self;                  /* owned: this binary (/proc/self/exe), for
				      * archive_command; NULL = <controller>/pgop */
	char *archive_why;           /* owned: the last archive_sync error logged */
	int64_t plugins_ms;          /* when the plugin form was last resolved (ms); 0 = now */
	char *plugins_why;           /* owned: why it could not be, last logged */
	struct inst_metrics *metrics; /* borrowed (run_ctx); NULL = no exporter */
	struct inst_metrics_server *msrv; /* borrowed (run_ctx); NULL = no exporter */
	bool metrics_role_ok;        /* cnpg_metrics_exporter checked on this primary */
	bool user_fenced;            /* postgres stopped by cnpg.io/fencedInstances */
	bool reload_seen;            /* reloaded_at holds the first value read */
	char *reloaded_at;           /* owned: cnpg.io/reloadedAt last seen; NULL = none */
	struct inst_diverge_watch diverge; /* the replica's "diverged" verdicts (diverge.c) */
	int64_t diverge_asked;       /* when the primary's history was last asked (ms) */
	uint32_t primary_tli;        /* the primary's timeline the last check found; 0 = none */
	char *diverge_why;           /* owned: why it diverged, last logged; NULL = it follows */
};

static void pg_drop(struct runner *rn)
{
	if (rn->conn)
		PQfinish(rn->conn);
	rn->conn = NULL;
}

/* The kept connection to the local postgres (borrowed), connected when there
 * is none or the kept one broke; NULL when postgres accepts no connection. */
static PGconn *pg_conn(struct runner *rn)
{
	if (rn->conn && PQstatus(rn->conn) != CONNECTION_OK)
		pg_drop(rn);
	if (!rn->conn &&
	    inst_pg_connect(inst_state_sockdir(rn->st), rn->o->port, NULL, &rn->conn, NULL))
		rn->conn = NULL;
	return rn->conn;
}

static bool is_standby_dir(const char *pgdata)
{
	_cleanup_free_ char *sig = op_asprintf("%s/standby.signal", pgdata);
	return inst_path_exists(sig);
}

static int start_pg(struct runner *rn, struct op_err *err)
{
	pg_drop(rn);
	if (rn->metrics)
		inst_metrics_pause(rn->metrics, false);
	int r = inst_start_postgres(rn->o->paths.pg_bindir, rn->o->paths.pgdata, NULL, &rn->pid,
				    err);
	if (r)
		return r;
	inst_state_set_started(rn->st, true);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)rn->pid);
	op_log_info("postgres started", "pid", pid);
	return 0;
}

/* Waits for the child for up to ms; true when it exited. */
static bool wait_child(pid_t pid, unsigned ms, int *ret_status)
{
	for (unsigned i = 0; i <= ms / 50; i++) {
		pid_t w = waitpid(pid, ret_status, WNOHANG);
		if (w == pid || (w < 0 && errno == ECHILD))
			return true;
		usleep(50 * 1000);
	}
	return false;
}

enum stop_mode {
	STOP_SIGTERM, /* the Pod is being stopped: smart, fast, immediate */
	STOP_DEMOTE,  /* no longer the target primary: fast for switchoverDelay */
	STOP_FAST,    /* restart, error paths: fast, immediate */
	STOP_FENCE,   /* the lease expired: fast for FENCE_FAST_S, then immediate */
};

#define FAST_TICK_MS 100 /* full ticks while postgres restarts or a target waits */
#define FENCE_FAST_S 5 /* sessions end at once; this bounds the shutdown checkpoint */

/* pg_ctl stop -m smart|fast|immediate without pg_ctl, with the timeouts of
 * inst_stop_timeouts (smartShutdownTimeout, stopDelay, switchoverDelay). */
static void stop_pg(struct runner *rn, enum stop_mode mode)
{
	pg_drop(rn); /* a session of ours would hold a smart shutdown */
	if (rn->metrics)
		inst_metrics_pause(rn->metrics, true); /* and the exporter's */
	if (rn->pid <= 0)
		return;
	int status;
	struct inst_stop_timeouts t;
	inst_stop_timeouts(rn->cluster, mode == STOP_DEMOTE, rn->o->stop_timeout_s, &t);
	if (mode == STOP_FENCE)
		t = (struct inst_stop_timeouts){ .smart_s = 0, .fast_s = FENCE_FAST_S };
	char smart_s[16], fast_s[16];
	snprintf(smart_s, sizeof(smart_s), "%u", t.smart_s);
	snprintf(fast_s, sizeof(fast_s), "%u", t.fast_s);
	if (mode == STOP_SIGTERM && t.smart_s > 0) {
		op_log_info("postgres: smart shutdown", "timeoutSeconds", smart_s);
		kill(rn->pid, SIGTERM);
		if (wait_child(rn->pid, t.smart_s * 1000, &status))
			goto done;
	}
	op_log_info("postgres: fast shutdown", "timeoutSeconds", fast_s);
	kill(rn->pid, SIGINT);
	if (wait_child(rn->pid, t.fast_s * 1000, &status))
		goto done;
	op_log_warn("postgres: immediate shutdown");
	kill(rn->pid, SIGQUIT);
	wait_child(rn->pid, 10 * 1000, &status);
done:
	rn->pid = -1;
	inst_state_set(rn->st, false, false);
}

/* ---- configuration ---- */

static int apply_config(struct runner *rn, bool *ret_changed, struct op_err *err)
{
	const struct inst_paths *p = &rn->o->paths;
	struct inst_config_input in = { .cluster = rn->cluster, .pod_name = rn->o->pod_name,
					.controller_dir = p->controller_dir,
					.os_user = inst_os_user(), .port = rn->o->port,
					.major = p->pg_major, .pgop_path = rn->self };
	_cleanup_(op_buf_donep) struct op_buf conf = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_(op_buf_donep) struct op_buf hba = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_(op_buf_donep) struct op_buf ident = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int r = inst_render_postgresql_conf(&in, &conf, NULL, err);
	r = r ? r : inst_render_pg_hba(&in, &hba, err);
	r = r ? r : inst_render_pg_ident(&in, &ident, err);
	if (r)
		return r;
	const struct {
		const char *name;
		const struct op_buf *b;
	} files[] = { { "custom.conf", &conf }, { "pg_hba.conf", &hba }, { "pg_ident.conf", &ident } };
	bool changed = false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(files); i++) {
		_cleanup_free_ char *path = op_asprintf("%s/%s", p->pgdata, files[i].name);
		r = inst_write_if_changed(path, op_buf_str(files[i].b), files[i].b->len, 0600, err);
		if (r < 0)
			return r;
		changed |= r > 0;
	}
	_cleanup_free_ char *main_conf = op_asprintf("%s/postgresql.conf", p->pgdata);
	r = inst_write_if_changed(main_conf, inst_postgresql_conf_includes,
				  strlen(inst_postgresql_conf_includes), 0600, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *ov = op_asprintf("%s/override.conf", p->pgdata);
	if (!inst_path_exists(ov) && (r = inst_write_file(ov, "", 0, 0600, err)))
		return r;
	*ret_changed = changed || r > 0;
	return 0;
}

static const char *primary_host(struct runner *rn, char **owned)
{
	if (rn->o->primary_host)
		return rn->o->primary_host;
	*owned = api_service_name(rn->o->cluster_name, API_SVC_RW);
	return *owned;
}

/* pg_rewind failed against a source that answers: clone again (reclone.c),
 * and remember it for /pg/status. */
static int reclone(struct runner *rn, int rewind_status, const char *host, struct op_err *err)
{
	char st[16];
	snprintf(st, sizeof(st), "%d", rewind_status);
	op_log_warn("pg_rewind failed: re-cloning from the primary (the old data is moved aside "
		    "until the clone completed)",
		    "pgRewindStatus", st, "source", host, "pgdata", rn->o->paths.pgdata);
	int r = inst_reclone(&rn->o->paths, rn->cluster, rn->o->pod_name, host,
			     rn->o->primary_port, err);
	if (r)
		return op_err_prefix(err, "pg_rewind exited with status %d, re-clone failed: ",
				     rewind_status);
	inst_state_set_recloned(rn->st, rewind_status, host);
	op_log_info("re-cloned: continuing as a replica", "source", host);
	return 0;
}

/* pg_rewind of the stopped postgres from the primary, then the standby
 * settings (CNPG verifyPgDataCoherenceForPrimary); when pg_rewind cannot
 * work, a fresh clone (inst_rewind_next). Both who need it come here: a former
 * primary that another instance replaced (at start, run_rejoin) and a replica
 * that diverged from the primary (diverge_repair); who names it in the log. */
static int rewind_from_primary(struct runner *rn, const char *who, struct op_err *err)
{
	const struct inst_paths *p = &rn->o->paths;
	_cleanup_free_ char *rw = NULL;
	const char *host = primary_host(rn, &rw);
	_cleanup_(op_buf_donep) struct op_buf ci = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (inst_primary_conninfo(rn->o->pod_name, p->controller_dir, host, rn->o->primary_port,
				  "postgres", &ci))
		return op_err_set(err, -EMSGSIZE, "conninfo too long");
	inst_state_set_rewinding(rn->st, true);
	const char *argv[] = { "pg_rewind", "-P", "--target-pgdata", p->pgdata, "--source-server",
			       op_buf_str(&ci), NULL };
	op_log_info("running pg_rewind", "instance", who, "source", host);
	int r = inst_run_cmd(p->pg_bindir, argv, err);
	bool answers = r > 0 && PQping(op_buf_str(&ci)) == PQPING_OK;
	enum inst_rewind_next next = inst_rewind_next(r, answers);
	switch (next) {
	case INST_REWIND_DONE:
		break;
	case INST_REWIND_RECLONE:
		r = reclone(rn, r, host, err);
		break;
	case INST_REWIND_FAIL:
		if (r > 0)
			r = op_err_set(err, -EIO,
				       "pg_rewind exited with status %d and %s does not answer", r,
				       host);
		break;
	}
	inst_state_set_rewinding(rn->st, false);
	if (r)
		return r;
	if (next == INST_REWIND_RECLONE)
		return 0; /* the clone wrote the standby settings (inst_clone_standby) */
	/* pg_rewind copied the source's files, its marker among them */
	if ((r = inst_marker_write(p->pgdata, rn->o->pod_name, err)))
		return r;
	_cleanup_(op_buf_donep) struct op_buf ov = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	r = inst_render_standby_override(rn->cluster, rn->o->pod_name, p->controller_dir, host,
					 rn->o->primary_port, &ov, err);
	_cleanup_free_ char *ovp = op_asprintf("%s/override.conf", p->pgdata);
	_cleanup_free_ char *sig = op_asprintf("%s/standby.signal", p->pgdata);
	r = r ? r : inst_write_file(ovp, op_buf_str(&ov), ov.len, 0600, err);
	return r ? r : inst_write_file(sig, "", 0, 0600, err);
}

/* ---- role handling ---- */

/* name is set, not "pending" and not me. */
static bool is_other(const char *name, const char *me)
{
	return name && *name && strcmp(name, me) != 0 && strcmp(name, API_PENDING_FAILOVER) != 0;
}

static int patch_current_primary(struct runner *rn, struct op_err *err)
{
	/* microseconds, as CloudNativePG writes it (and targetPrimaryTimestamp) */
	_cleanup_free_ char *ts = api_time_rfc3339_us(api_time_now_us());
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_adds(&b, "{\"status\":{\"currentPrimary\":");
	r = r ? r : op_buf_add_json_str(&b, rn->o->pod_name);
	r = r ? r : op_buf_addf(&b, ",\"currentPrimaryTimestamp\":\"%s\"}}", ts);
	if (r)
		return op_err_set(err, r, "patch too large");
	r = inst_cluster_patch_status(rn->src, op_buf_str(&b), err);
	if (r == 0) {
		free(rn->cluster->status.current_primary);
		rn->cluster->status.current_primary = op_strdup(rn->o->pod_name);
		op_log_info("status.currentPrimary set", "pod", rn->o->pod_name);
	}
	return r;
}

static int promote(struct runner *rn, PGconn *c, struct op_err *err)
{
	op_log_info("promoting", "pod", rn->o->pod_name);
	/* each step's milliseconds, logged: a slow promotion says where it went */
	int64_t t0 = inst_lease_now();
	const char *argv[] = { "pg_ctl", "promote", "-w", "-t", "60", "-D", rn->o->paths.pgdata,
			       NULL };
	int r = inst_run_cmd(rn->o->paths.pg_bindir, argv, err);
	if (r > 0)
		return op_err_set(err, -EIO, "pg_ctl promote exited with status %d", r);
	if (r < 0)
		return r;
	int64_t t1 = inst_lease_now();
	for (int i = 0; i < 600; i++) {
		_cleanup_free_ char *rec = NULL;
		r = inst_pg_value(c, "SELECT pg_is_in_recovery()::text", 0, NULL, &rec, err);
		if (r)
			return r;
		if (rec && strcmp(rec, "false") == 0)
			break;
		usleep(100 * 1000);
	}
	/* before currentPrimary: a former primary rewinds from this one once it
	 * names it, and pg_rewind reads the new timeline from its control file */
	int64_t t2 = inst_lease_now();
	r = inst_pg_exec(c, "CHECKPOINT", 0, NULL, NULL, err);
	int64_t t3 = inst_lease_now();
	r = r ? r : patch_current_primary(rn, err);
	if (r == 0) {
		const int64_t t[] = { t0, t1, t2, t3, inst_lease_now() };
		char ms[4][24];
		for (size_t i = 0; i < OP_ARRAY_SIZE(ms); i++)
			snprintf(ms[i], sizeof(ms[i]), "%lld", (long long)(t[i + 1] - t[i]));
		op_log_info("promoted", "pod", rn->o->pod_name, "pgCtlMs", ms[0], "writableMs",
			    ms[1], "checkpointMs", ms[2], "statusMs", ms[3]);
	}
	return r;
}

static int keep_slots(struct runner *rn, PGconn *c, struct op_err *err)
{
	const struct api_cluster *cl = rn->cluster;
	if (!cl->spec.replication_slots.ha_enabled)
		return 0;
	const struct api_strv *names = &cl->status.instance_names;
	char **wanted = op_calloc(names->n + 1, sizeof(*wanted));
	size_t n = 0;
	for (size_t i = 0; i < names->n; i++)
		if (strcmp(names->items[i], rn->o->pod_name) != 0)
			wanted[n++] = api_slot_name(api_cluster_slot_prefix(cl), names->items[i]);
	int r = inst_pg_reconcile_slots(c, api_cluster_slot_prefix(cl), (const char *const *)wanted,
					n, err);
	for (size_t i = 0; i < n; i++)
		free(wanted[i]);
	free(wanted);
	return r < 0 ? r : 0;
}

/* ---- the primary's lease (api/fence.h) ---- */

/* How long the check that finds the lease expired waits for the replicas to
 * receive its own mark before it fences (part of the margin's slack). */
#define LAST_ROUND_TRIP_MS 100

/* Instances the lease counts: the larger of spec.instances and the names in
 * the status (a majority of the larger is never smaller). */
static unsigned cluster_size(const struct api_cluster *c)
{
	int64_t n = c->spec.instances;
	if ((int64_t)c->status.instance_names.n > n)
		n = (int64_t)c->status.instance_names.n;
	return n < 0 ? 0 : n > 1000 ? 1000 : (unsigned)n;
}

/* Another instance the reconciler names healthy could take over: only then
 * is there anything to fence against. */
static bool others_can_take_over(const struct runner *rn)
{
	const struct api_strv *h = &rn->cluster->status.healthy;
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->items[i], rn->o->pod_name) != 0)
			return true;
	return false;
}

/* A byte position ("1234", numeric text of an LSN minus 0/0); 0 for NULL. */
static uint64_t lsn_bytes(PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return 0;
	return strtoull(PQgetvalue(res, row, col), NULL, 10);
}

/* One round trip of the lease (instance/lease.h): commits a transaction of
 * its own (synchronous_commit = local: it never waits for a replica), marks
 * (now, flush LSN after it), and returns the streaming replicas' proof through
 * *ret_proof (the need-th most recent) and how many prove it within
 * API_FENCE_MS, from their write_lsn (received is enough, and a replica's slow
 * fsync does not delay it). `now` was read before the commit. No connection or
 * a failed query observes nothing (the marks stay). */
static unsigned lease_peers(struct runner *rn, PGconn *c, int64_t now, unsigned need,
			    int64_t *ret_proof)
{
	const char *p[] = { rn->o->cluster_name };
	_cleanup_(inst_pqclearp) PGresult *mark = NULL;
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	*ret_proof = 0;
	if (!c ||
	    inst_pg_exec(c, "SELECT set_config('synchronous_commit', 'local', false), txid_current()",
			 0, NULL, &mark, NULL) ||
	    inst_pg_exec(c,
			 "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::text, "
			 "(r.write_lsn - '0/0'::pg_lsn)::text FROM (SELECT 1) x "
			 "LEFT JOIN pg_stat_replication r ON r.usename = 'streaming_replica' "
			 "AND r.state = 'streaming' AND starts_with(r.application_name, $1 || '-')",
			 1, p, &res, NULL) ||
	    PQntuples(res) < 1)
		return 0; /* a broken connection is replaced at the next check (pg_conn) */
	if (inst_lease_mark(&rn->lease, now, lsn_bytes(res, 0, 0)) < 0)
		op_log_debug("lease mark going backwards ignored");
	uint64_t written[INST_LEASE_MAX_PEERS];
	size_t n = 0;
	for (int i = 0; i < PQntuples(res) && n < INST_LEASE_MAX_PEERS; i++)
		if (!PQgetisnull(res, i, 1))
			written[n++] = lsn_bytes(res, i, 1);
	*ret_proof = inst_lease_peers_proof(&rn->lease, written, n, need);
	return inst_lease_heard(&rn->lease, written, n, now);
}

/* A fresh (quorum) read of the Cluster with the fast client (for `what`: the
 * lease, the cut); the result replaces the main thread's view. A failure is
 * logged once until a read succeeds again. */
static bool fresh_read(struct runner *rn, const char *what)
{
	struct inst_source fast = *rn->src;
	if (rn->src->fast)
		fast.kube = rn->src->fast;
	struct api_cluster *c = NULL;
	struct op_err e = OP_ERR_INIT;
	if (inst_cluster_load(&fast, &c, &e) != 0) {
		if (!rn->api_warned)
			op_log_warn("cannot read the Cluster", "for", what, "error", e.msg);
		rn->api_warned = true;
		return false;
	}
	rn->api_warned = false;
	api_cluster_free(rn->cluster);
	rn->cluster = c;
	return true;
}

/* A fresh read proves the lease when it still names this pod targetPrimary.
 * File mode has no API server: the file is the truth. */
static void lease_api(struct runner *rn, int64_t now)
{
	rn->lease.api_try = now;
	if (rn->src->cluster_file) {
		inst_lease_prove(&rn->lease, now);
		return;
	}
	if (!fresh_read(rn, "the lease"))
		return;
	const char *t = rn->cluster->status.target_primary;
	if (t && strcmp(t, rn->o->pod_name) == 0)
		inst_lease_prove(&rn->lease, now);
}

/* A replica whose WAL receiver is cut (instance/cut.c): the watched Cluster
 * naming another primary undoes it at once; else, once the hold is over, a
 * fresh read (started after it) that does not say "pending". */
static int cut_tick(struct runner *rn, struct op_err *err)
{
	struct inst_cut_env env;
	struct inst_cut *cut = inst_state_cut(rn->st, &env);
	int64_t now = inst_lease_now(), read_started = 0, hold;
	char from[sizeof(cut->primary)];
	const char *t = rn->cluster->status.target_primary;
	if (!inst_cut_report(cut, now, from, sizeof(from), &hold) ||
	    (t && strcmp(t, rn->o->pod_name) == 0))
		return 0; /* this replica is to promote: a WAL receiver would only delay it */
	if (hold == 0 && (rn->src->cluster_file || fresh_read(rn, "the cut")))
		read_started = now;
	/* inst_cut_undo looks again under its lock (a request may extend the hold) */
	if (!inst_cut_may_undo(true, from, now + hold, read_started, true,
			       rn->cluster->status.target_primary))
		return 0;
	_cleanup_(op_buf_donep) struct op_buf ov = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	_cleanup_free_ char *rw = NULL;
	const struct inst_paths *p = &rn->o->paths;
	int r = inst_render_standby_override(rn->cluster, rn->o->pod_name, p->controller_dir,
					     primary_host(rn, &rw), rn->o->primary_port, &ov, err);
	return r ? r : inst_cut_undo(cut, &env, read_started, rn->cluster->status.target_primary,
				     &ov, err);
}

/* Renews the lease of a running primary (c: its postgres, NULL when it
 * accepts no connection: only the API server can prove it then); -ENOLCK when
 * it expired and another instance could take over (the caller fences). */
static int lease_renew(struct runner *rn, PGconn *c, struct op_err *err)
{
	int64_t now = inst_lease_now();
	unsigned need = api_fence_peers_needed(cluster_size(rn->cluster));
	if (need == 0) {
		inst_lease_prove(&rn->lease, now); /* one instance: nobody to fence against */
		return 0;
	}
	int64_t proof;
	unsigned heard = lease_peers(rn, c, now, need, &proof);
	inst_lease_prove(&rn->lease, proof);
	/* not "heard < need": a replica heard counts for API_FENCE_MS, but a read
	 * must start within API_FENCE_MS - INST_LEASE_READ_TIMEOUT_MS of the last
	 * proof to prove anything; a replica gone silent would fence the primary
	 * before any read was tried */
	if (inst_lease_stale(&rn->lease, now) && inst_lease_want_api(&rn->lease, now) &&
	    inst_lease_read_fits(&rn->lease, now))
		lease_api(rn, now);
	if (inst_lease_expired(&rn->lease, now) && others_can_take_over(rn) && c) {
		/* one last round trip before fencing: the mark just made, received
		 * by the replicas within LAST_ROUND_TRIP_MS, proves the lease from
		 * `now` (a manager held past its checks, not replicas gone) */
		struct timespec ts = { 0, LAST_ROUND_TRIP_MS * 1000000L };
		nanosleep(&ts, NULL);
		heard = lease_peers(rn, c, inst_lease_now(), need, &proof);
		inst_lease_prove(&rn->lease, proof);
	}
	if (inst_lease_expired(&rn->lease, now) && others_can_take_over(rn)) {
		char h[16], n[16];
		snprintf(h, sizeof(h), "%u", heard);
		snprintf(n, sizeof(n), "%u", need);
		return op_err_set(err, -ENOLCK,
				  "lease expired: %s of %s replicas heard and the Cluster not read "
				  "for over %d ms",
				  h, n, API_FENCE_MS);
	}
	return 0;
}

/* Fenced: postgres is down. Once a fresh read of the Cluster still names this
 * pod the primary, start it again; when it names another, exit to come back as
 * a replica (-ESHUTDOWN). */
static int lease_fenced_tick(struct runner *rn, struct op_err *err)
{
	int64_t now = inst_lease_now();
	if (!inst_lease_want_api(&rn->lease, now))
		return 0;
	int64_t before = rn->lease.proven;
	lease_api(rn, now);
	const char *t = rn->cluster->status.target_primary;
	const char *cur = rn->cluster->status.current_primary;
	if (is_other(t, rn->o->pod_name))
		return op_err_set(err, -ESHUTDOWN, "fenced, and targetPrimary is now %s", t);
	if (rn->lease.proven == before || (cur && *cur && strcmp(cur, rn->o->pod_name) != 0))
		return 0;
	rn->lease.fenced = false;
	if (rn->user_fenced || api_fenced(&rn->cluster->metadata.annotations, rn->o->pod_name)) {
		/* cnpg.io/fencedInstances too: postgres stays down until it is lifted
		 * (user_unfence), not even one step writable */
		op_log_info("lease renewed through the API server; fenced by cnpg.io/fencedInstances: "
			    "postgres stays down");
		rn->user_fenced = true;
		return 0;
	}
	op_log_info("lease renewed through the API server: starting postgres again");
	inst_state_set_fenced(rn->st, false);
	return start_pg(rn, err);
}

static void fence(struct runner *rn, const char *why)
{
	op_log_error("fencing: stopping postgres fast, this primary cannot prove it is still "
		     "the primary",
		     "reason", why);
	stop_pg(rn, STOP_FENCE);
	rn->lease.fenced = true;
	inst_state_set_fenced(rn->st, true);
}

/* ---- cnpg.io/fencedInstances (api/annotations.h) ---- */

/* Unfenced: postgres starts again. A former primary whose Cluster now names
 * another instance exits to come back as a replica (-ESHUTDOWN); one still
 * named starts only once a fresh read (lease_api) proves its lease and still
 * names it: until then it stays fenced and the next step asks again. 0
 * started, 1 still fenced, -errno (err). */
static int user_unfence(struct runner *rn, struct op_err *err)
{
	const char *me = rn->o->pod_name;
	const char *t = rn->cluster->status.target_primary;
	bool primary_dir = !is_standby_dir(rn->o->paths.pgdata);
	if (primary_dir && is_other(t, me))
		return op_err_set(err, -ESHUTDOWN, "unfenced, and targetPrimary is now %s", t);
	if (primary_dir && t && strcmp(t, me) == 0) {
		int64_t now = inst_lease_now(), before = rn->lease.proven;
		if (!inst_lease_want_api(&rn->lease, now))
			return 1;
		lease_api(rn, now); /* may replace rn->cluster */
		t = rn->cluster->status.target_primary;
		if (is_other(t, me))
			return op_err_set(err, -ESHUTDOWN, "unfenced, and targetPrimary is now %s", t);
		if (rn->lease.proven == before)
			return 1;
	}
	op_log_info("fencing lifted (cnpg.io/fencedInstances): starting postgres again");
	int r = start_pg(rn, err);
	if (r)
		return r; /* still fenced: the next step tries again */
	rn->user_fenced = false;
	inst_state_set_fenced(rn->st, false);
	inst_state_set_restarting(rn->st, true);
	rn->started_ms = inst_lease_now();
	return 0;
}

/* Fencing asked by the Cluster's cnpg.io/fencedInstances (CloudNativePG's
 * reconcileFencing): postgres stopped fast then immediate, the Pod kept (its
 * probes: /healthz 200, /readyz 503), nothing else done while fenced; lifted,
 * postgres starts again. Returns 1 when fenced (the step is done), 0 when
 * not, -errno from the restart (err). */
static int user_fence_step(struct runner *rn, struct op_err *err)
{
	bool want = api_fenced(&rn->cluster->metadata.annotations, rn->o->pod_name);
	if (want && !rn->user_fenced) {
		op_log_info("fenced (cnpg.io/fencedInstances): stopping postgres, the Pod and its "
			    "data stay");
		stop_pg(rn, STOP_FENCE);
		rn->user_fenced = true;
		inst_state_set_fenced(rn->st, true);
		return 1;
	}
	if (!want && rn->user_fenced)
		return user_unfence(rn, err);
	return want ? 1 : 0;
}

/* cnpg.io/reloadedAt (`kubectl cnpg reload`): a new value reloads postgres
 * (SIGHUP: configuration files, and the certificates the tick just copied
 * from the mounted Secrets). The value found at start-up reloads nothing. */
static void reload_on_request(struct runner *rn)
{
	const char *v = api_kvs_get(&rn->cluster->metadata.annotations, API_ANN_RELOADED_AT);
	bool changed = (v == NULL) != (rn->reloaded_at == NULL) ||
		       (v && strcmp(v, rn->reloaded_at) != 0);
	bool first = !rn->reload_seen; /* the value (or none) found at start-up */
	rn->reload_seen = true;
	if (!changed)
		return;
	free(rn->reloaded_at);
	rn->reloaded_at = v ? op_strdup(v) : NULL;
	if (first || !v || rn->pid <= 0)
		return;
	op_log_info("reload requested (cnpg.io/reloadedAt): reloading postgres", "reloadedAt", v);
	kill(rn->pid, SIGHUP);
}

/* ---- SIGTERM on a primary: hand over ---- */

/* Names the most advanced streaming replica (synchronous ones first)
 * targetPrimary, with the resourceVersion of a fresh read as precondition
 * (the Cluster must still name this pod target and current primary). Returns
 * true when handed over. */
static bool hand_over(struct runner *rn)
{
	const char *me = rn->o->pod_name;
	const char *skip = api_kvs_get(&rn->cluster->metadata.annotations, API_ANN_IN_PLACE_RESTART);
	if (rn->pid <= 0 || rn->lease.fenced || rn->src->cluster_file ||
	    (skip && strcmp(skip, me) == 0))
		return false;
	PGconn *c = NULL;
	if (inst_pg_connect(inst_state_sockdir(rn->st), rn->o->port, NULL, &c, NULL))
		return false;
	_cleanup_(inst_pqfinishp) PGconn *conn = c;
	const char *p[] = { rn->o->cluster_name };
	_cleanup_free_ char *cand = NULL;
	struct op_err e = OP_ERR_INIT;
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	if (inst_pg_exec(conn,
			 "SELECT application_name FROM pg_stat_replication "
			 "WHERE NOT pg_is_in_recovery() AND usename = 'streaming_replica' "
			 "AND state = 'streaming' AND starts_with(application_name, $1 || '-') "
			 "ORDER BY sync_state IN ('sync', 'quorum') DESC, flush_lsn DESC NULLS LAST, "
			 "application_name LIMIT 1",
			 1, p, &res, &e)) {
		op_log_warn("SIGTERM: cannot list the replicas, no handover", "error", e.msg);
		return false;
	}
	if (PQntuples(res) < 1) {
		op_log_info("SIGTERM: no streaming replica to hand over to");
		return false;
	}
	cand = op_strdup(PQgetvalue(res, 0, 0));
	struct inst_source fast = *rn->src;
	if (rn->src->fast)
		fast.kube = rn->src->fast;
	int r = inst_cluster_hand_over(&fast, me, cand, &e); /* clears e at each try */
	if (r == 1) {
		op_log_info("SIGTERM: the Cluster no longer names this pod the primary, no handover");
		return false;
	}
	if (r) {
		op_log_warn("SIGTERM: handover not written", "target", cand, "error", e.msg);
		return false;
	}
	op_log_info("SIGTERM: handing over to the most advanced replica", "targetPrimary", cand);
	return true;
}

/* Asks the local postgres whether it is a primary on the kept connection,
 * connecting once more when the kept one broke. -ECONNREFUSED (err not set):
 * postgres accepts no connection. */
static int pg_role(struct runner *rn, bool *ret_primary, struct op_err *err)
{
	for (int attempt = 0;; attempt++) {
		bool fresh = !rn->conn;
		PGconn *c = pg_conn(rn);
		if (!c)
			return -ECONNREFUSED;
		_cleanup_free_ char *rec = NULL;
		struct op_err e = OP_ERR_INIT;
		int r = inst_pg_value(c, "SELECT pg_is_in_recovery()::text", 0, NULL, &rec, &e);
		if (r == 0) {
			*ret_primary = rec && strcmp(rec, "false") == 0;
			return 0;
		}
		pg_drop(rn);
		if (fresh || attempt > 0)
			return op_err_set(err, r, "%s", e.msg);
	}
}

/* Between ticks: a running primary checks its lease (every
 * API_FENCE_CHECK_MS), on the kept connection. -ENOLCK: fence. */
static int lease_check(struct runner *rn, struct op_err *err)
{
	if (!rn->primary || rn->pid <= 0 || rn->lease.fenced)
		return 0;
	return lease_renew(rn, pg_conn(rn), err);
}

/* Tick, promotion: a replica that is targetPrimary. While another instance
 * is still currentPrimary, it waits until that one stopped streaming to it
 * (it shuts down when it sees the new target): promoting with every WAL
 * record it wrote avoids a divergence (CNPG waits for the WAL receiver to
 * stop too). was_waiting: the last tick waited already (logged once). */
static int promote_when_target(struct runner *rn, PGconn *conn, bool was_waiting,
			       struct op_err *err)
{
	const char *me = rn->o->pod_name;
	const char *current = rn->cluster->status.current_primary;
	if (current && *current && strcmp(current, me) != 0) {
		_cleanup_free_ char *active = NULL;
		int r = inst_pg_value(conn, "SELECT (count(*) > 0)::text FROM pg_stat_wal_receiver",
				      0, NULL, &active, err);
		if (r)
			return r;
		if (active && strcmp(active, "true") == 0) {
			if (!was_waiting)
				op_log_info("promotion: waiting for the WAL receiver to stop",
					    "currentPrimary", current);
			rn->waiting_receiver = true;
			return 0;
		}
	}
	return promote(rn, conn, err);
}

/* How often the primary checks spec.tablespaces against pg_tablespace. */
#define TABLESPACES_EVERY_S 10

/* Tick, a running primary: demotion when the Cluster targets another
 * instance (-ESHUTDOWN, before and after the lease's fresh read), the lease
 * (-ENOLCK: fence), currentPrimary claimed (first bootstrap, or a promotion
 * whose patch failed earlier: retried every tick until it sticks),
 * spec.tablespaces every TABLESPACES_EVERY_S, the HA slots every 5 s. */
static int primary_tick(struct runner *rn, PGconn *conn, struct op_err *err)
{
	const char *me = rn->o->pod_name;
	const char *target = rn->cluster->status.target_primary;
	if (is_other(target, me))
		return op_err_set(err, -ESHUTDOWN, "targetPrimary is %s, not this instance", target);
	int r = lease_renew(rn, conn, err);
	if (r)
		return r;
	target = rn->cluster->status.target_primary; /* lease_renew may have re-read it */
	const char *current = rn->cluster->status.current_primary;
	if (is_other(target, me))
		return op_err_set(err, -ESHUTDOWN, "targetPrimary is %s, not this instance", target);
	bool current_me = current && strcmp(current, me) == 0;
	bool target_me = target && strcmp(target, me) == 0;
	if (!current_me && (target_me || ((!current || !*current) && rn->bootstrapped_primary))) {
		r = patch_current_primary(rn, err);
		if (r)
			return r;
		current = rn->cluster->status.current_primary; /* replaced by the patch */
	}
	if (rn->metrics && !rn->metrics_role_ok) {
		struct op_err me_err = OP_ERR_INIT;
		int m = inst_metrics_ensure_role(conn, &me_err);
		if (m < 0)
			op_log_warn("metrics: role cnpg_metrics_exporter not ready", "error",
				    me_err.msg);
		else if (m > 0)
			op_log_info("metrics: role cnpg_metrics_exporter created");
		rn->metrics_role_ok = m >= 0;
	}
	if (time(NULL) - rn->last_tablespaces >= TABLESPACES_EVERY_S) {
		rn->last_tablespaces = time(NULL);
		inst_state_set_tablespaces(rn->st, inst_tablespaces_reconcile(conn, &rn->o->paths,
									      rn->cluster));
	}
	if ((!current || strcmp(current, me) == 0 || !*current) &&
	    time(NULL) - rn->last_slots >= 5) {
		rn->last_slots = time(NULL);
		r = keep_slots(rn, conn, err);
		if (r)
			return r;
	}
	return 0;
}

/* Tick: logs once when a parameter change starts waiting for a restart. */
static void note_pending_restart(struct runner *rn, PGconn *conn)
{
	_cleanup_free_ char *pending = NULL;
	if (inst_pg_value(conn, "SELECT EXISTS(SELECT 1 FROM pg_settings WHERE pending_restart)::text",
			  0, NULL, &pending, NULL) == 0) {
		bool p = pending && strcmp(pending, "true") == 0;
		if (p && !rn->pending_restart)
			op_log_info("a parameter change needs a restart (pendingRestart)");
		rn->pending_restart = p;
	}
}

/* The replica follows the primary again (or is not asked): ready again. */
static void diverge_clear(struct runner *rn)
{
	rn->diverge = (struct inst_diverge_watch){ 0 };
	if (!rn->diverge_why)
		return;
	free(rn->diverge_why);
	rn->diverge_why = NULL;
	inst_state_set_diverged(rn->st, NULL);
}

/* Tick, a replica that is not the target: unless its WAL receiver streams
 * the primary's timeline (the last check's: inst_diverge_ask), at most every
 * INST_DIVERGE_EVERY_MS, whether it replayed past the
 * primary's fork (instance/diverge.c). Diverged: not ready at once (/pg/status
 * timelineDiverged, logged once); -EREMCHG (after_step: diverge_repair) once
 * it held for INST_DIVERGE_CONFIRM_MS. A cut replica (it streams from nobody
 * on purpose) and one whose Cluster names no settled other primary
 * (currentPrimary == targetPrimary) are not asked; a check that fails (the
 * primary does not answer within INST_DIVERGE_CONNECT_MS) changes nothing. */
static int diverge_tick(struct runner *rn, PGconn *conn, struct op_err *err)
{
	int64_t now = inst_lease_now(), hold;
	struct inst_cut_env env;
	char from[sizeof(((struct inst_cut *)0)->primary)];
	const char *cur = rn->cluster->status.current_primary;
	const char *tgt = rn->cluster->status.target_primary;
	/* settled: a switchover or failover (targetPrimary not yet currentPrimary)
	 * is no time to judge whom a replica follows, nor to hold its tick */
	bool settled = is_other(cur, rn->o->pod_name) && tgt && strcmp(cur, tgt) == 0;
	if (inst_cut_report(inst_state_cut(rn->st, &env), now, from, sizeof(from), &hold) ||
	    !settled) {
		diverge_clear(rn);
		return 0;
	}
	if (rn->diverge_asked && now - rn->diverge_asked < INST_DIVERGE_EVERY_MS)
		return 0;
	rn->diverge_asked = now;
	_cleanup_free_ char *rw = NULL;
	_cleanup_(op_buf_donep) struct op_buf ci = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (inst_primary_conninfo(rn->o->pod_name, rn->o->paths.controller_dir,
				  primary_host(rn, &rw), rn->o->primary_port, NULL, &ci))
		return op_err_set(err, -EMSGSIZE, "conninfo too long");
	struct inst_diverge_info d;
	struct op_err e = OP_ERR_INIT;
	if (inst_diverge_check(conn, op_buf_str(&ci), rn->primary_tli, &d, &e)) {
		op_log_debug("divergence not checked", "error", e.msg);
		return 0;
	}
	rn->primary_tli = d.primary_tli;
	bool confirmed = inst_diverge_confirm(&rn->diverge, d.verdict == INST_DIVERGE_YES, now);
	if (d.verdict != INST_DIVERGE_YES) {
		diverge_clear(rn);
		return 0;
	}
	_cleanup_free_ char *why = inst_diverge_reason(&d);
	if (!rn->diverge_why || strcmp(rn->diverge_why, why) != 0) {
		op_log_warn("replica diverged from the primary: it cannot follow it (not ready)",
			    "reason", why);
		free(rn->diverge_why);
		rn->diverge_why = op_strdup(why);
		inst_state_set_diverged(rn->st, why);
	}
	return confirmed ? op_err_set(err, -EREMCHG, "%s", why) : 0;
}

/* A replica that diverged (diverge_tick): postgres stopped fast, pg_rewind
 * from the primary (re-clone when it cannot work: rewind_from_primary, as a
 * former primary), started again as a replica. A failed rewind is logged and
 * postgres starts on the old data: still diverged (not ready), the next
 * confirmation tries again. */
static int diverge_repair(struct runner *rn, const char *why, struct op_err *err)
{
	op_log_warn("diverged replica: stopping postgres to rewind it from the primary", "reason",
		    why);
	stop_pg(rn, STOP_FAST);
	struct op_err e = OP_ERR_INIT;
	if (rewind_from_primary(rn, "diverged replica", &e) == 0) {
		diverge_clear(rn);
		op_log_info("diverged replica rewound: starting it as a replica");
	} else {
		op_log_error("diverged replica not rewound: starting postgres on its old data, "
			     "retrying later",
			     "error", e.msg);
	}
	rn->diverge = (struct inst_diverge_watch){ 0 };
	rn->diverge_asked = 0;
	bool changed; /* pg_rewind copied the source's configuration files too */
	op_err_clear(&e);
	if (apply_config(rn, &changed, &e))
		op_log_error("configuration not rendered, keeping the previous one", "error", e.msg);
	inst_state_set_restarting(rn->st, true);
	rn->started_ms = inst_lease_now();
	return start_pg(rn, err);
}

/* Tick, the role: whether postgres is up and a primary, the WAL receiver
 * cut (a replica) or forgotten (a primary), the operator's requests, then
 * promotion (promote_when_target) or the primary's duties (primary_tick).
 * -ESHUTDOWN: this instance must stop and exit (demotion); -ENOLCK: the
 * lease expired (fence); -EREMCHG: the replica diverged (rewind it); 1:
 * restart requested. */
static int reconcile_role(struct runner *rn, struct op_err *err)
{
	bool primary = false;
	int r = pg_role(rn, &primary, err);
	unsigned req = inst_state_postgres_seen(rn->st, r != -ECONNREFUSED);
	if (r == -ECONNREFUSED)
		return 0; /* not up yet */
	if (r)
		return r;
	rn->primary = primary;
	struct inst_cut_env cut_env;
	if (primary)
		inst_cut_forget(inst_state_cut(rn->st, &cut_env));
	else if ((r = cut_tick(rn, err)))
		return r;
	PGconn *conn = rn->conn;
	const char *me = rn->o->pod_name;
	const char *target = rn->cluster->status.target_primary;
	if (req & INST_REQ_RELOAD)
		kill(rn->pid, SIGHUP);
	if (req & INST_REQ_DEMOTE && primary)
		return op_err_set(err, -ESHUTDOWN, "demotion requested");
	if (!primary && (req & INST_REQ_PROMOTE))
		return promote(rn, conn, err);
	bool was_waiting = rn->waiting_receiver;
	rn->waiting_receiver = false; /* set again while it still waits */
	if (!primary && target && strcmp(target, me) == 0)
		return promote_when_target(rn, conn, was_waiting, err);
	if (primary)
		diverge_clear(rn);
	else if (rn->last_tablespaces) { /* demoted: the new primary reports them */
		rn->last_tablespaces = 0;
		inst_state_set_tablespaces(rn->st, NULL);
	}
	if ((r = primary ? primary_tick(rn, conn, err) : diverge_tick(rn, conn, err)))
		return r;
	note_pending_restart(rn, conn);
	if (req & INST_REQ_RESTART)
		return 1;
	return 0;
}

/* The plugin form's ObjectStores are read again this often (they have no
 * watch here; a changed store is used within this). */
#define PLUGIN_REFRESH_MS 30000

/* The newest Cluster the watcher published (and the plugin form's stores,
 * at most every PLUGIN_REFRESH_MS). Whether the supervisor was woken (a new
 * Cluster or a request) since the last call. */
static bool take_cluster(struct runner *rn)
{
	bool woken = false;
	struct api_cluster *c = inst_state_take_cluster(rn->st, &woken);
	if (c) {
		api_cluster_free(rn->cluster);
		rn->cluster = c;
		rn->plugins_ms = 0;
	}
	int64_t now = api_time_now_us() / 1000;
	if (!api_cluster_barman_plugin(rn->cluster) && !rn->plugins_why)
		return woken;
	if (rn->plugins_ms && now - rn->plugins_ms < PLUGIN_REFRESH_MS)
		return woken;
	rn->plugins_ms = now;
	struct op_err e = OP_ERR_INIT;
	int r = inst_cluster_resolve_plugins(rn->src, rn->cluster, &e);
	if (r < 0 && (!rn->plugins_why || strcmp(rn->plugins_why, e.msg) != 0))
		op_log_error("the barman-cloud plugin's ObjectStore cannot be used", "error", e.msg);
	free(rn->plugins_why);
	rn->plugins_why = r < 0 ? op_strdup(e.msg) : NULL;
	return woken;
}

/* The full tick: the newest Cluster, the certificates copied (the status
 * server reloads them), the configuration rendered (postgres reloads when
 * either changed), then the role (reconcile_role). */
/* The WAL archive's configuration (instance/archive.c) and why WAL is not
 * archived, for /pg/status: the configuration's own error first (the Secret
 * files are not mounted yet, snappy...), else the store's error of the last
 * failed wal-archive. A new configuration error is logged once. */
static void archive_tick(struct runner *rn)
{
	struct op_err e = OP_ERR_INIT;
	_cleanup_free_ char *why = NULL;
	if (inst_archive_sync(&rn->o->paths, rn->cluster, &e) < 0) {
		why = op_strdup(e.msg);
		if (!rn->archive_why || strcmp(rn->archive_why, why) != 0)
			op_log_error("WAL archive not configured: archive_command fails and "
				     "postgres keeps the WAL", "error", why);
	} else if (inst_archive_error(&rn->o->paths, &why) < 0) {
		why = NULL; /* unreadable: nothing known */
	}
	free(rn->archive_why);
	rn->archive_why = why ? op_strdup(why) : NULL;
	inst_state_set_archive_error(rn->st, why);
	/* the store's backups and retention, on the primary, once archiving is set up */
	bool configured = api_cluster_wal_store(rn->cluster) && !why;
	_cleanup_free_ char *cfg = configured ? inst_archive_config_path(&rn->o->paths) : NULL;
	inst_catalog_tick(inst_state_catalog(rn->st), rn->primary, cfg,
			  rn->cluster->spec.backup.retention_policy);
}

/* The certificates copied from their mounted Secrets and the status and
 * metrics servers' reloaded; also while fenced (postgres down), so a
 * rotation during a fence is not missed. inst_sync_certificates's result
 * (> 0: changed). */
static int certificates_step(struct runner *rn, struct inst_server *srv)
{
	struct op_err e = OP_ERR_INIT;
	int certs = inst_sync_certificates(&rn->o->paths, &e);
	if (certs < 0)
		op_log_warn("certificates not copied, retrying", "error", e.msg);
	op_err_clear(&e);
	if (srv && inst_server_reload(srv, &e) < 0)
		op_log_warn("status server certificate not reloaded, retrying", "error", e.msg);
	op_err_clear(&e);
	if (rn->msrv && inst_metrics_server_reload(rn->msrv, &e) < 0)
		op_log_warn("metrics server certificate not reloaded, retrying", "error", e.msg);
	return certs;
}

/* The full tick (loop_step took the Cluster just before). */
static int tick(struct runner *rn, struct inst_server *srv, struct op_err *err)
{
	int certs = certificates_step(rn, srv);
	struct op_err e = OP_ERR_INIT;
	bool changed = false;
	archive_tick(rn);
	if (apply_config(rn, &changed, &e))
		op_log_error("configuration not rendered, keeping the previous one", "error", e.msg);
	if ((changed || certs > 0) && rn->pid > 0) {
		op_log_info("configuration or certificates changed: reloading postgres");
		kill(rn->pid, SIGHUP);
	}
	reload_on_request(rn);
	return reconcile_role(rn, err);
}

/* A postmaster that died (kill -9, OOM) under a live instance manager. Its
 * backends would keep running until they notice (asynchronously they would
 * keep acknowledging commits no replica receives), so its process group
 * (instance/pg.c) goes first. Then postgres is started again in place (crash
 * recovery) instead of a container restart and a failover: at most
 * INST_CRASH_RESTARTS times a minute, and a primary only while its lease holds
 * and the Cluster names no other instance (docs/internals/failover.md). 0 when
 * restarted; otherwise the error that ends the manager (its container restarts). */
#define INST_CRASH_RESTARTS 3

static int crash_restart(struct runner *rn, int status, struct op_err *err)
{
	kill(-rn->pid, SIGKILL);
	rn->pid = -1;
	pg_drop(rn);
	inst_state_set(rn->st, false, false);
	int64_t now = inst_lease_now();
	if (now - rn->crash_window > 60 * 1000) {
		rn->crash_window = now;
		rn->crashes = 0;
	}
	const bool primary = !is_standby_dir(rn->o->paths.pgdata);
	const char *t = rn->cluster->status.target_primary;
	const char *why = NULL;
	if (++rn->crashes > INST_CRASH_RESTARTS)
		why = "restarted in place too often";
	else if (primary && is_other(t, rn->o->pod_name))
		why = "targetPrimary names another instance";
	else if (primary && inst_lease_expired(&rn->lease, now) && others_can_take_over(rn))
		why = "the lease expired";
	if (why)
		return op_err_set(err, -ECHILD, "postgres exited unexpectedly (status %d); %s",
				  status, why);
	char st[16];
	snprintf(st, sizeof(st), "%d", status);
	op_log_warn("postgres exited unexpectedly: restarting it in place (crash recovery)",
		    "status", st, "role", primary ? "primary" : "replica");
	inst_state_set_restarting(rn->st, true);
	rn->started_ms = now;
	return start_pg(rn, err);
}

static int setup_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGPIPE);
	sigaddset(set, SIGUSR1); /* the watcher's wake-up (publish) */
	return -pthread_sigmask(SIG_BLOCK, set, NULL);
}


/* A former primary whose Cluster targets another instance waits until that
 * instance has promoted (currentPrimary == targetPrimary) before rewinding
 * (CNPG: ErrNextLoop in verifyPgDataCoherenceForPrimary). -ECANCELED on
 * SIGTERM/SIGINT. */
static int wait_switchover(struct runner *rn, const sigset_t *set, struct op_err *err)
{
	for (unsigned i = 0;; i++) {
		const char *tgt = rn->cluster->status.target_primary;
		const char *cur = rn->cluster->status.current_primary;
		if (!is_other(tgt, rn->o->pod_name) || (cur && strcmp(cur, tgt) == 0))
			return 0;
		if (i % 15 == 0)
			op_log_info("former primary: waiting for the new primary to promote",
				    "targetPrimary", tgt, "currentPrimary", cur ? cur : "");
		struct timespec to = { 2, 0 };
		int sig = sigtimedwait(set, NULL, &to);
		if (sig == SIGTERM || sig == SIGINT)
			return op_err_set(err, -ECANCELED, "stopped while waiting for a switchover");
		struct api_cluster *c = NULL;
		struct op_err e = OP_ERR_INIT;
		if (inst_cluster_load(rn->src, &c, &e) == 0) {
			api_cluster_free(rn->cluster);
			rn->cluster = c;
		}
	}
}

/* ---- inst_run's steps ---- */

/* Everything `run` owns, on inst_run's stack (rn points into it: never
 * copied or moved); run_ctx_done frees it. */
struct run_ctx {
	struct inst_run_opts located; /* the options; paths.pg_bindir/pg_major found */
	char *bindir;                 /* owned: what located.paths.pg_bindir points to */
	sigset_t set;                 /* the signals taken by sigtimedwait */
	struct inst_state *st;        /* owned */
	struct inst_source src;       /* its clients owned */
	struct runner rn;
	struct inst_pglog pglog;
	struct watcher w;
	struct inst_server *srv;      /* owned; NULL until started */
	struct inst_metrics *metrics; /* owned; NULL = no exporter */
	struct inst_metrics_server *msrv; /* owned; NULL = no exporter */
};

static void run_ctx_init(struct run_ctx *x)
{
	const struct inst_run_opts *o = &x->located;
	x->st = inst_state_new(o);
	x->src = (struct inst_source){ .cluster_file = o->cluster_file, .ns = o->namespace_,
				       .name = o->cluster_name };
	x->rn = (struct runner){ .o = o, .st = x->st, .src = &x->src, .pid = -1,
				 .self = realpath("/proc/self/exe", NULL) };
	x->pglog = (struct inst_pglog)INST_PGLOG_INIT;
	x->w = (struct watcher){ .st = x->st };
}

/* Start-up 1: the API clients and the Cluster (the API server may be briefly
 * unreachable at start: retried for a minute). The lease starts proven when
 * the Cluster just read names this pod targetPrimary. */
static int run_load_cluster(struct run_ctx *x, struct op_err *err)
{
	const struct inst_run_opts *o = &x->located;
	struct runner *rn = &x->rn;
	int r;
	if (!o->cluster_file && (r = inst_kube_open(o->kubeconfig, false, &x->src.kube, err)))
		return r;
	for (int i = 0;; i++) {
		struct op_err e = OP_ERR_INIT;
		r = inst_cluster_load(&x->src, &rn->cluster, &e);
		if (r == 0)
			break;
		if (i == 30)
			return op_err_set(err, r, "%s", e.msg);
		op_log_warn("cannot load the Cluster, retrying", "error", e.msg);
		sleep(2);
	}
	if (rn->cluster->status.target_primary &&
	    strcmp(rn->cluster->status.target_primary, o->pod_name) == 0)
		inst_lease_prove(&rn->lease, inst_lease_now());
	if (!o->cluster_file && (r = inst_kube_open(o->kubeconfig, true, &x->src.fast, err)))
		return r;
	return 0;
}

/* Start-up 2: PGDATA (an interrupted re-clone undone first: it may be absent
 * or a partial clone), the PostgreSQL programs, the marker (never reclaimed
 * from now on), the socket and log directories, postgres's log reader, the
 * certificates. */
static int run_prepare_dirs(struct run_ctx *x, struct op_err *err)
{
	const struct inst_run_opts *o = &x->located;
	_cleanup_free_ char *run = op_asprintf("%s/run", o->paths.controller_dir);
	_cleanup_free_ char *log = op_asprintf("%s/log", o->paths.controller_dir);
	int r;
	if ((r = inst_reclone_leftover(&o->paths, x->rn.cluster, o->pod_name, err)) ||
	    (r = inst_paths_locate(&x->located.paths, x->rn.cluster, true, &x->bindir, err)) ||
	    (r = inst_tablespace_dirs(&o->paths, x->rn.cluster, err)) ||
	    (r = inst_marker_write(o->paths.pgdata, o->pod_name, err)))
		return r;
	r = op_mkdir_p(run, 0700, err);
	r = r ? r : op_mkdir_p(log, 0700, err);
	if (r)
		return r;
	struct op_err le = OP_ERR_INIT;
	if (inst_pglog_start(&x->pglog, log, &le) < 0)
		op_log_warn("postgres's records stay in its log directory", "error", le.msg);
	r = inst_sync_certificates(&o->paths, err);
	return r < 0 ? r : 0;
}

/* Start-up 3b: the Prometheus exporter (instance/metrics_server.c), TLS
 * with the server certificate when spec.monitoring.tls.enabled. A port it
 * cannot listen on is logged, and the manager runs on without it. */
static int run_start_metrics(struct run_ctx *x, const char *cert, const char *key,
			     struct op_err *err)
{
	const struct inst_run_opts *o = &x->located;
	if (o->metrics_listen && strcmp(o->metrics_listen, "off") == 0)
		return 0;
	_cleanup_free_ char *sock = op_asprintf("%s/run", o->paths.controller_dir);
	struct inst_metrics_opts mo = { .sockdir = sock, .port = o->port,
					.pgdata = o->paths.pgdata,
					.monitoring_dir = o->monitoring_dir };
	int r = inst_metrics_new(&mo, &x->metrics, err);
	if (r)
		return r;
	inst_state_set_metrics(x->st, x->metrics);
	struct inst_metrics_view v = { .cluster = x->rn.cluster };
	inst_metrics_update(x->metrics, &v);
	bool tls = x->rn.cluster->spec.monitoring.tls_enabled;
	struct op_err me = OP_ERR_INIT;
	r = inst_metrics_server_start(o->metrics_listen, tls ? cert : NULL, tls ? key : NULL,
				      x->metrics, &x->msrv, &me);
	if (r) { /* no metrics is no reason to leave postgres unsupervised */
		op_log_error("metrics exporter not started: postgres runs without it", "error",
			     me.msg);
		x->msrv = NULL;
		return 0;
	}
	x->rn.metrics = x->metrics;
	x->rn.msrv = x->msrv;
	op_log_info("metrics exporter listening", "listen",
		    o->metrics_listen ? o->metrics_listen : INST_METRICS_LISTEN, "tls",
		    tls ? "true" : "false");
	return 0;
}

/* Start-up 3: the status server, with the certificates just copied. */
static int run_start_server(struct run_ctx *x, struct op_err *err)
{
	const struct inst_run_opts *o = &x->located;
	const char *dir = o->paths.controller_dir;
	_cleanup_free_ char *cert = op_asprintf("%s/certificates/server.crt", dir);
	_cleanup_free_ char *key = op_asprintf("%s/certificates/server.key", dir);
	_cleanup_free_ char *ca = op_asprintf("%s/certificates/client-ca.crt", dir);
	int r = inst_server_start(o->status_listen, cert, key, ca, x->st, &x->srv, err);
	if (r)
		return r;
	op_log_info("status server listening", "listen",
		    o->status_listen ? o->status_listen : INST_STATUS_LISTEN);
	return run_start_metrics(x, cert, key, err);
}

/* Start-up 4: a former primary (no standby.signal) whose Cluster names
 * another instance waits for it to promote, then rewinds (or re-clones) and
 * comes back as a standby. */
static int run_rejoin(struct run_ctx *x, struct op_err *err)
{
	struct runner *rn = &x->rn;
	const char *me = x->located.pod_name;
	int r;
	rn->bootstrapped_primary = !is_standby_dir(x->located.paths.pgdata);
	if (rn->bootstrapped_primary && (r = wait_switchover(rn, &x->set, err)))
		return r;
	const char *cur = rn->cluster->status.current_primary;
	const char *tgt = rn->cluster->status.target_primary;
	if (rn->bootstrapped_primary && cur && *cur && strcmp(cur, me) != 0 &&
	    !(tgt && strcmp(tgt, me) == 0)) {
		if ((r = rewind_from_primary(rn, "former primary", err)))
			return r;
		rn->bootstrapped_primary = false;
	}
	return 0;
}

/* Start-up 5: the configuration rendered, postgres started (restarting until
 * it accepts connections; a cut found in override.conf held again), then the
 * Cluster watcher from the resourceVersion just read. */
static int run_start_postgres(struct run_ctx *x, struct op_err *err)
{
	struct runner *rn = &x->rn;
	const char *pgdata = x->located.paths.pgdata;
	inst_state_set_restarting(x->st, true);
	rn->started_ms = inst_lease_now();
	if (is_standby_dir(pgdata)) {
		struct inst_cut_env env;
		inst_cut_resume(inst_state_cut(x->st, &env), pgdata, rn->started_ms);
	}
	bool changed;
	int r = apply_config(rn, &changed, err);
	rn->user_fenced = api_fenced(&rn->cluster->metadata.annotations, x->located.pod_name);
	if (rn->user_fenced) { /* not even for a moment: a fenced primary takes no write */
		op_log_info("fenced (cnpg.io/fencedInstances): postgres is not started");
		inst_state_set_fenced(x->st, true);
		inst_state_set_restarting(x->st, false);
	}
	r = r || rn->user_fenced ? r : start_pg(rn, err);
	x->w.src = x->src;
	return r ? r : watcher_start(&x->w, rn->cluster->metadata.resource_version, err);
}

/* The loop's wait for a signal: a full tick every second (or when the Cluster
 * changed), the lease checked every API_FENCE_CHECK_MS in between; while
 * postgres comes back, a full tick every FAST_TICK_MS (for as long as the
 * operator waits for it, RC_RESTART_GRACE_S): the lease is checked as soon as
 * it accepts connections; and while a switchover's target waits for its WAL
 * receiver to stop: it promotes within FAST_TICK_MS of the old primary's stop
 * rather than at the next second's tick. *ret_fast: every wake-up is a full
 * tick. */
static struct timespec loop_wait(const struct runner *rn, bool *ret_fast)
{
	bool restarting = inst_state_restarting(rn->st) &&
			  inst_lease_now() - rn->started_ms < 10 * 1000;
	*ret_fast = restarting || rn->waiting_receiver;
	if (*ret_fast)
		return (struct timespec){ 0, FAST_TICK_MS * 1000L * 1000L };
	return (struct timespec){ 0, API_FENCE_CHECK_MS * 1000L * 1000L };
}

/* Shutdown: SIGTERM or SIGINT. A primary with a streaming replica hands over
 * first (then stops fast for switchoverDelay), any other stops smart, fast,
 * immediate (inst_stop_timeouts). */
static void shutdown_on_signal(struct runner *rn, int sig)
{
	op_log_info("signal received: shutting down", "signal", strsignal(sig));
	take_cluster(rn);
	stop_pg(rn, hand_over(rn) ? STOP_DEMOTE : STOP_SIGTERM);
	op_log_info("postgres stopped, exiting");
}

/* What the exporter shows about the supervisor: the Cluster (TTL, custom
 * queries), fencing. */
static void metrics_view(struct runner *rn)
{
	if (!rn->metrics)
		return;
	struct inst_metrics_view v = { .cluster = rn->cluster, .primary = rn->primary,
				       .fenced = rn->lease.fenced || rn->user_fenced,
				       .postgres_up = rn->conn != NULL };
	inst_metrics_update(rn->metrics, &v);
}

/* The tick: a fenced primary waits for a fresh read of the Cluster
 * (lease_fenced_tick); a full tick (certificates, configuration render +
 * reload, promotion, demotion, slots: tick()) when due; otherwise the lease
 * check of a running primary. Returns what the step returned, e says why. */
static int loop_step(struct runner *rn, struct inst_server *srv, bool fast, struct op_err *e)
{
	int64_t now = inst_lease_now();
	metrics_view(rn);
	if (rn->lease.fenced) {
		take_cluster(rn);
		return lease_fenced_tick(rn, e);
	}
	bool woken = take_cluster(rn); /* a new Cluster or a request: a full tick now */
	int r = user_fence_step(rn, e);
	if (r > 0 && now - rn->last_tick >= 1000) { /* fenced: the certificates still */
		rn->last_tick = now;
		(void)certificates_step(rn, srv);
	}
	if (r != 0)
		return r < 0 ? r : 0;
	if (fast || woken || now - rn->last_tick >= 1000) {
		rn->last_tick = now;
		return tick(rn, srv, e);
	}
	return lease_check(rn, e);
}

/* Acts on a step's result r (e: its error): -ENOLCK fences, -ESHUTDOWN stops
 * postgres for a demotion and ends the loop, -EREMCHG rewinds a diverged
 * replica (diverge_repair), 1 restarts postgres, any other
 * failure is logged and retried at the next tick. 0: the loop goes on;
 * -errno: it ends with err set. */
static int after_step(struct runner *rn, int r, const struct op_err *e, struct op_err *err)
{
	if (r == -ENOLCK) {
		fence(rn, e->msg);
		return 0;
	}
	if (r == -ESHUTDOWN) {
		op_log_info("shutting down to come back as a replica", "reason", e->msg);
		stop_pg(rn, STOP_DEMOTE);
		op_err_set(err, r, "%s", e->msg);
		return r;
	}
	if (r == -EREMCHG)
		return diverge_repair(rn, e->msg, err);
	if (r == 1) {
		op_log_info("restart requested");
		stop_pg(rn, STOP_FAST);
		return start_pg(rn, err);
	}
	if (r < 0)
		op_log_warn("reconcile failed, retrying", "error", e->msg);
	return 0;
}

/* The supervisor loop: waits for a signal or the next tick (signal handling:
 * SIGTERM/SIGINT shut down, SIGHUP is passed to postgres), restarts a
 * postmaster that died (crash_restart), then runs one step. 0 after SIGTERM,
 * -errno when postgres cannot be kept running or the instance demotes. */
static int run_loop(struct runner *rn, struct inst_server *srv, const sigset_t *set,
		    struct op_err *err)
{
	for (;;) {
		bool fast;
		struct timespec to = loop_wait(rn, &fast);
		siginfo_t si;
		int sig = sigtimedwait(set, &si, &to);
		if (sig == SIGTERM || sig == SIGINT) {
			shutdown_on_signal(rn, sig);
			return 0;
		}
		if (sig == SIGHUP && rn->pid > 0)
			kill(rn->pid, SIGHUP);
		int status, r;
		if (rn->pid > 0 && waitpid(rn->pid, &status, WNOHANG) == rn->pid &&
		    (r = crash_restart(rn, status, err)))
			return r;
		struct op_err e = OP_ERR_INIT;
		r = loop_step(rn, srv, fast, &e);
		if ((r = after_step(rn, r, &e, err)))
			return r;
	}
}

/* Shutdown, on every path: the watcher and the status server first, then
 * postgres (fast, when still running), its log reader after its last records,
 * then what the start-up allocated. */
static void run_ctx_done(struct run_ctx *x)
{
	pg_drop(&x->rn);
	watcher_stop(&x->w);
	inst_metrics_server_free(x->msrv); /* before the exporter it serves */
	if (x->st)
		inst_state_set_metrics(x->st, NULL);
	inst_metrics_free(x->metrics);
	inst_server_free(x->srv);
	if (x->rn.pid > 0)
		stop_pg(&x->rn, STOP_FAST);
	inst_pglog_stop(&x->pglog);
	api_cluster_free(x->rn.cluster);
	kube_client_free(x->src.kube);
	kube_client_free(x->src.fast);
	inst_state_free(x->st);
	free(x->bindir);
	free(x->rn.self);
	free(x->rn.archive_why);
	free(x->rn.plugins_why);
	free(x->rn.reloaded_at);
	free(x->rn.diverge_why);
}

int inst_run(const struct inst_run_opts *o_in, struct op_err *err)
{
	struct run_ctx x = { .located = *o_in };
	int r = setup_signals(&x.set);
	if (r)
		return op_err_set(err, r, "cannot block signals");
	run_ctx_init(&x);
	r = run_load_cluster(&x, err);
	r = r ? r : run_prepare_dirs(&x, err);
	r = r ? r : run_start_server(&x, err);
	r = r ? r : run_rejoin(&x, err);
	r = r ? r : run_start_postgres(&x, err);
	r = r ? r : run_loop(&x.rn, x.srv, &x.set, err);
	run_ctx_done(&x);
	return r;
}
