/* instance/state.c - the state `pgop instance run` shares between its
 * threads (struct inst_state, one mutex): the supervisor (instance/run.c)
 * writes the probe flags, the re-clone report and the newest Cluster; the
 * status server (instance/server.c) reads the flags and builds /pg/status.
 *
 * Below both: this file calls neither run.c nor server.c, so the status
 * server never calls back into the supervisor loop (docs/internals/instance.md,
 * "File layering").
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/fence.h"
#include "instance/internal.h"
#include "instance/lease.h"
#include "instance/metrics_internal.h"
#include "support/alloc.h"

struct inst_state {
	pthread_mutex_t lock;
	/* immutable after start */
	const struct inst_run_opts *o;
	char *sockdir;
	char session_id[40];
	/* guarded by lock */
	bool started, ready, rewinding, stopping;
	bool fenced; /* postgres stopped by the lease: alive and in control (healthz 200) */
	bool restarting; /* postgres (re)starting in place, not accepting connections yet */
	char *diverged; /* owned: why the replica cannot follow the primary (diverge.c);
			 * NULL = it can. Not ready while set. */
	/* pg_rewind failed and this manager re-cloned the data (reclone.c): set
	 * once, reported in /pg/status for the reconciler's Event */
	int reclone_status;   /* pg_rewind's exit status */
	char *reclone_source; /* owned: the host cloned from; NULL = no re-clone */
	char reclone_at[32];  /* RFC 3339 UTC */
	unsigned requests;             /* enum inst_request bits */
	struct api_cluster *pending;   /* newer Cluster from the watcher (owned) */
	bool wake;
	char *archive_error; /* owned: why WAL is not archived (inst_state_set_archive_error) */
	char *tablespaces;   /* owned: JSON array (inst_state_set_tablespaces), or NULL */
	struct inst_catalog *catalog; /* owned; immutable pointer (its own lock) */
	struct inst_metrics *metrics; /* borrowed (run.c), under lock; NULL = no exporter */
	/* its own lock; immutable pointer */
	struct inst_cut cut; /* the WAL receiver cut (instance/cut.c) */
};

/* ---- state ---- */

static void make_session_id(char *out, size_t n)
{
	unsigned char b[16];
	FILE *f = fopen("/dev/urandom", "rb");
	size_t got = f ? fread(b, 1, sizeof(b), f) : 0;
	if (f)
		fclose(f);
	if (got != sizeof(b))
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)(rand() ^ (int)time(NULL));
	snprintf(out, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

struct inst_state *inst_state_new(const struct inst_run_opts *o)
{
	struct inst_state *st = op_calloc(1, sizeof(*st));
	st->o = o;
	pthread_mutex_init(&st->lock, NULL);
	st->sockdir = op_asprintf("%s/run", o->paths.controller_dir ? o->paths.controller_dir
								     : INST_CONTROLLER_DIR);
	make_session_id(st->session_id, sizeof(st->session_id));
	st->catalog = inst_catalog_new();
	inst_cut_init(&st->cut);
	return st;
}

const struct inst_run_opts *inst_state_run_opts(const struct inst_state *st)
{
	return st->o;
}

void inst_state_free(struct inst_state *st)
{
	if (!st)
		return;
	api_cluster_free(st->pending);
	free(st->reclone_source);
	free(st->archive_error);
	free(st->tablespaces);
	free(st->diverged);
	inst_catalog_free(st->catalog);
	free(st->sockdir);
	inst_cut_destroy(&st->cut);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

void inst_state_set(struct inst_state *st, bool started, bool ready)
{
	pthread_mutex_lock(&st->lock);
	st->started = started;
	st->ready = ready;
	pthread_mutex_unlock(&st->lock);
}

unsigned inst_state_take_requests(struct inst_state *st)
{
	pthread_mutex_lock(&st->lock);
	unsigned r = st->requests;
	st->requests = 0;
	pthread_mutex_unlock(&st->lock);
	return r;
}

/* ---- state accessors (server threads) ---- */

bool inst_state_started(struct inst_state *st)
{
	pthread_mutex_lock(&st->lock);
	bool v = st->started || st->rewinding || st->fenced;
	pthread_mutex_unlock(&st->lock);
	return v;
}

bool inst_state_restarting(struct inst_state *st)
{
	pthread_mutex_lock(&st->lock);
	bool v = st->restarting;
	pthread_mutex_unlock(&st->lock);
	return v;
}

void inst_state_set_tablespaces(struct inst_state *st, char *json)
{
	pthread_mutex_lock(&st->lock);
	free(st->tablespaces);
	st->tablespaces = json;
	pthread_mutex_unlock(&st->lock);
}

void inst_state_set_archive_error(struct inst_state *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	free(st->archive_error);
	st->archive_error = msg ? op_strdup(msg) : NULL;
	pthread_mutex_unlock(&st->lock);
}

void inst_state_set_restarting(struct inst_state *st, bool v)
{
	pthread_mutex_lock(&st->lock);
	st->restarting = v;
	pthread_mutex_unlock(&st->lock);
}

bool inst_state_ready(struct inst_state *st)
{
	pthread_mutex_lock(&st->lock);
	bool v = st->ready && !st->diverged; /* up, but following nobody */
	pthread_mutex_unlock(&st->lock);
	return v;
}

void inst_state_request(struct inst_state *st, enum inst_request req)
{
	pthread_mutex_lock(&st->lock);
	st->requests |= (unsigned)req;
	st->wake = true;
	pthread_mutex_unlock(&st->lock);
}

struct inst_cut *inst_state_cut(struct inst_state *st, struct inst_cut_env *ret_env)
{
	*ret_env = (struct inst_cut_env){ .pgdata = st->o->paths.pgdata,
					  .sockdir = st->sockdir,
					  .cluster_name = st->o->cluster_name,
					  .port = st->o->port,
					  .primary_port = st->o->primary_port };
	return &st->cut;
}

int inst_state_status_json(struct inst_state *st, struct op_buf *out, struct op_err *err)
{
	struct inst_pg_status s = { 0 };
	char cut_primary[64];
	s.cut = inst_cut_report(&st->cut, inst_lease_now(), cut_primary, sizeof(cut_primary),
				&s.cut_hold_ms);
	s.cut_primary = s.cut ? op_strdup(cut_primary) : NULL;
	s.lease_ms = API_FENCE_MS; /* the reconciler waits for this lease, not its own idea of it */
	pthread_mutex_lock(&st->lock);
	bool rewinding = st->rewinding;
	if (st->reclone_source) {
		s.reclone_rewind_status = st->reclone_status;
		s.reclone_source = op_strdup(st->reclone_source);
		s.reclone_at = op_strdup(st->reclone_at);
	}
	s.archive_error = st->archive_error ? op_strdup(st->archive_error) : NULL;
	s.timeline_diverged = st->diverged ? op_strdup(st->diverged) : NULL;
	s.tablespaces = st->tablespaces ? op_strdup(st->tablespaces) : NULL;
	pthread_mutex_unlock(&st->lock);
	s.backup_catalog = inst_catalog_json(st->catalog);
	pthread_mutex_lock(&st->lock); /* held: run.c unsets it before freeing it */
	s.metrics_errors = inst_metrics_errors_json(st->metrics);
	pthread_mutex_unlock(&st->lock);
	int r = 0;
	if (!rewinding) {
		PGconn *c = NULL;
		r = inst_pg_connect(st->sockdir, st->o->port, NULL, &c, err);
		r = r ? r : inst_pg_query_status(c, st->o->cluster_name, &s, err);
		if (c)
			PQfinish(c);
	}
	if (r && inst_state_restarting(st))
		r = -EAGAIN; /* the server answers 503 "restarting" (instance/server.c) */
	s.is_pg_rewind_running = rewinding;
	s.pod_name = op_strdup(st->o->pod_name);
	s.session_id = op_strdup(st->session_id);
	if (r == 0 && inst_status_to_json(&s, out))
		r = op_err_set(err, -EMSGSIZE, "status too large");
	inst_pg_status_done(&s);
	return r;
}


/* ---- writers (the supervisor's main thread) ---- */

void inst_state_set_started(struct inst_state *st, bool started)
{
	pthread_mutex_lock(&st->lock);
	st->started = started;
	pthread_mutex_unlock(&st->lock);
}

void inst_state_set_metrics(struct inst_state *st, struct inst_metrics *m)
{
	pthread_mutex_lock(&st->lock);
	st->metrics = m;
	pthread_mutex_unlock(&st->lock);
}

struct inst_catalog *inst_state_catalog(struct inst_state *st)
{
	return st->catalog;
}

void inst_state_set_rewinding(struct inst_state *st, bool v)
{
	pthread_mutex_lock(&st->lock);
	st->rewinding = v;
	pthread_mutex_unlock(&st->lock);
}

void inst_state_set_diverged(struct inst_state *st, const char *why)
{
	pthread_mutex_lock(&st->lock);
	free(st->diverged);
	st->diverged = why ? op_strdup(why) : NULL;
	pthread_mutex_unlock(&st->lock);
}

void inst_state_set_fenced(struct inst_state *st, bool v)
{
	pthread_mutex_lock(&st->lock);
	st->fenced = v;
	pthread_mutex_unlock(&st->lock);
}

/* The current time as RFC 3339 UTC ("2026-12-03T09:00:00Z"), for status timestamps. */
static void utc_now(char *out, size_t n)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void inst_state_set_recloned(struct inst_state *st, int rewind_status, const char *host)
{
	pthread_mutex_lock(&st->lock);
	st->reclone_status = rewind_status;
	free(st->reclone_source);
	st->reclone_source = op_strdup(host);
	utc_now(st->reclone_at, sizeof(st->reclone_at));
	pthread_mutex_unlock(&st->lock);
}

unsigned inst_state_postgres_seen(struct inst_state *st, bool up)
{
	pthread_mutex_lock(&st->lock);
	st->ready = up;
	if (up)
		st->restarting = false;
	unsigned req = st->requests;
	st->requests = 0;
	pthread_mutex_unlock(&st->lock);
	return req;
}

void inst_state_publish(struct inst_state *st, struct api_cluster *c)
{
	pthread_mutex_lock(&st->lock);
	api_cluster_free(st->pending);
	st->pending = c;
	st->wake = true;
	pthread_mutex_unlock(&st->lock);
}

struct api_cluster *inst_state_take_cluster(struct inst_state *st, bool *ret_woken)
{
	pthread_mutex_lock(&st->lock);
	struct api_cluster *c = st->pending;
	st->pending = NULL;
	if (ret_woken)
		*ret_woken = st->wake;
	st->wake = false;
	pthread_mutex_unlock(&st->lock);
	return c;
}

const char *inst_state_sockdir(const struct inst_state *st)
{
	return st->sockdir;
}
