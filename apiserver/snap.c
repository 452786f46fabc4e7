/* apiserver/snap.c - one /pg/status snapshot per instance, refreshed on
 * demand with single flight.
 *
 * A request needing instance X looks at X's entry: fresh (younger than
 * max_age) -> used, and when older than max_age / 2 also fetched again in the
 * background (refresh ahead: requests at least every max_age / 2 never wait);
 * stale and being fetched -> wait for it; stale -> this request marks it in
 * flight and starts a fetch thread for its Cluster (an entry whose last fetch
 * failed is never waited for: shown unreachable at once, fetched again in the
 * background as a silent instance: a TCP probe first) (all the instances of one
 * Cluster that need a fetch in one parallel rc fetch). Every waiter gives up at
 * timeout + AS_MARGIN_MS and renders what the entry holds then (the last
 * answer, marked unreachable when the last fetch failed). Fetch threads are
 * detached; as_snaps_free waits for them.
 *
 * Interest window: a refresher thread keeps refreshing ahead the entries
 * requested within interest_ms (AS_INTEREST_MS in production; past half
 * their age, checked every max_age / 4), so a user who runs kubectl every few
 * seconds, or a watch, never waits for an instance; after that window without
 * requests the entries age and the next request fetches (and waits, bounded
 * as above).
 *
 * Each Cluster's fetches share one rc_status_pool (kept-alive connections to
 * its instances: a refresh is then one HTTP request per instance instead of a
 * mutual TLS handshake); a pool nobody used for POOL_IDLE_MS is closed by the
 * next request.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "support/metrics.h"

#define FORGET_MS (10 * 60 * 1000) /* entries not asked for this long are dropped */
#define MAX_FETCH_THREADS 64
#define FETCH_NICE 10 /* fetch threads' nice value (request threads keep the process's) */
#define POOL_IDLE_MS (30 * 1000) /* a Cluster's kept-alive connections outlive its last fetch this long */

struct entry {
	char *key; /* "ns/pod" */
	char *cluster; /* its Cluster's name (the refresher groups by it), owned */
	char *ip;
	json_object *doc;  /* last answer, owned */
	bool ok;           /* the last fetch answered */
	char *error;
	int64_t done_ms;   /* monotonic: end of the last fetch; 0 = never */
	int64_t seen_ms;   /* wall: last answer */
	int64_t used_ms;   /* monotonic: last asked for */
	bool in_flight;
};

struct pool_ent {
	char *key; /* "ns/cluster" */
	struct rc_status_pool *pool;
	int64_t used_ms; /* monotonic: end of the last fetch using it */
	unsigned users;  /* fetch threads using it now */
};

struct as_snaps {
	struct as_source src;
	long max_age_ms, timeout_ms, interest_ms;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct entry *e;
	size_t n, cap;
	struct pool_ent *pools;
	size_t n_pools, cap_pools;
	unsigned threads; /* running fetch threads */
	pthread_t refresher;
	bool refresher_started, stop;
	struct op_hist fetch_h; /* one Cluster's parallel fetch, start to end */
	struct op_hist wait_h;  /* what a request waited for entries that were stale */
};

static int collect(void *ud, struct op_buf *out)
{
	struct as_snaps *s = ud;
	int r = op_metrics_header(out, "pgop_live_fetch_duration_seconds", "histogram",
				  "Duration of one Cluster's parallel /pg/status fetch for the live API");
	r = r ? r : op_metrics_hist(out, "pgop_live_fetch_duration_seconds", NULL, &s->fetch_h);
	r = r ? r : op_metrics_header(out, "pgop_live_wait_duration_seconds", "histogram",
				      "Time a live API request waited for instance snapshots (0 when all were fresh)");
	return r ? r : op_metrics_hist(out, "pgop_live_wait_duration_seconds", NULL, &s->wait_h);
}

int64_t as_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CLOCK_MONOTONIC time left_ms from now, for pthread_cond_timedwait on cond. */
static struct timespec ts_in(int64_t left_ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += left_ms / 1000;
	ts.tv_nsec += (left_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

int64_t as_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *refresher_main(void *arg); /* below */

struct as_snaps *as_snaps_new(const struct as_source *src, long max_age_ms, long timeout_ms,
			      long interest_ms)
{
	struct as_snaps *s = op_calloc(1, sizeof(*s));
	s->src = *src;
	s->interest_ms = interest_ms;
	s->max_age_ms = max_age_ms > 0 ? max_age_ms : AS_MAX_AGE_MS_DEFAULT;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : AS_TIMEOUT_MS_DEFAULT;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	op_hist_init(&s->fetch_h, &op_hist_bounds_http);
	op_hist_init(&s->wait_h, &op_hist_bounds_http);
	if (op_metrics_register(collect, s) < 0)
		op_log_warn("live API: no room for its metrics collector");
	s->refresher_started =
		interest_ms > 0 && pthread_create(&s->refresher, NULL, refresher_main, s) == 0;
	if (interest_ms > 0 && !s->refresher_started)
		op_log_warn("live API: no refresher thread: every request past max age waits");
	return s;
}

static void entry_done(struct entry *e)
{
	free(e->key);
	free(e->cluster);
	free(e->ip);
	free(e->error);
	if (e->doc)
		json_object_put(e->doc);
}

void as_snaps_free(struct as_snaps *s)
{
	if (!s)
		return;
	op_metrics_unregister(collect, s);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (s->refresher_started)
		pthread_join(s->refresher, NULL);
	pthread_mutex_lock(&s->mu);
	while (s->threads)
		pthread_cond_wait(&s->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		entry_done(&s->e[i]);
	free(s->e);
	for (size_t i = 0; i < s->n_pools; i++) {
		free(s->pools[i].key);
		rc_status_pool_free(s->pools[i].pool);
	}
	free(s->pools);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* Under mu. */
static struct entry *entry_get(struct as_snaps *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->e[i].key, key) == 0)
			return &s->e[i];
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->e = op_realloc(s->e, s->cap * sizeof(*s->e));
	}
	struct entry *e = &s->e[s->n++];
	*e = (struct entry){ .key = op_strdup(key) };
	return e;
}

/* Under mu: the pool of Cluster key, created when it has none; users++. */
static struct rc_status_pool *pool_take(struct as_snaps *s, const char *key)
{
	struct pool_ent *p = NULL;
	for (size_t i = 0; i < s->n_pools && !p; i++)
		if (strcmp(s->pools[i].key, key) == 0)
			p = &s->pools[i];
	if (!p) {
		if (s->n_pools == s->cap_pools) {
			s->cap_pools = s->cap_pools ? s->cap_pools * 2 : 8;
			s->pools = op_realloc(s->pools, s->cap_pools * sizeof(*s->pools));
		}
		p = &s->pools[s->n_pools++];
		*p = (struct pool_ent){ .key = op_strdup(key), .pool = rc_status_pool_new() };
	}
	p->users++;
	return p->pool;
}

/* Under mu: users-- of the pool of Cluster key. */
static void pool_give(struct as_snaps *s, const char *key, int64_t now)
{
	for (size_t i = 0; i < s->n_pools; i++)
		if (strcmp(s->pools[i].key, key) == 0) {
			s->pools[i].users--;
			s->pools[i].used_ms = now;
			return;
		}
}

/* Under mu: drops entries nobody asked for in FORGET_MS (not in flight) and
 * closes the pools no fetch used for POOL_IDLE_MS. */
static void forget_old(struct as_snaps *s, int64_t now)
{
	for (size_t i = 0; i < s->n_pools;) {
		struct pool_ent *p = &s->pools[i];
		if (!p->users && now - p->used_ms > POOL_IDLE_MS) {
			free(p->key);
			rc_status_pool_free(p->pool);
			s->pools[i] = s->pools[--s->n_pools];
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < s->n;) {
		if (!s->e[i].in_flight && now - s->e[i].used_ms > FORGET_MS) {
			entry_done(&s->e[i]);
			s->e[i] = s->e[--s->n];
		} else {
			i++;
		}
	}
}

struct job {
	struct as_snaps *s;
	char *ns, *cluster;
	char *pool_key;               /* "ns/cluster", owned */
	struct rc_status_pool *pool;  /* borrowed from s->pools while the job runs */
	bool ahead;                   /* a refresh ahead: no request waits for it */
	struct rc_live_instance *v; /* name = pod, ip */
	char **keys;
	size_t n;
};

static void job_free(struct job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		rc_live_instance_done(&j->v[i]);
		free(j->keys[i]);
	}
	free(j->v);
	free(j->keys);
	free(j->pool_key);
	free(j->ns);
	free(j->cluster);
	free(j);
}

static void *fetch_main(void *arg)
{
	struct job *j = arg;
	struct as_snaps *s = j->s;
	/* a refresh ahead runs below the request threads: it competes with the
	 * rendering of the request that started it for the CPU (bench/live.sh: the
	 * requests that started the refresh threads of ten Clusters took 80-230 ms
	 * instead of 6-30 ms on two loaded cores); a fetch a request waits for keeps
	 * the process's priority. Linux nice values are per thread. */
	if (j->ahead && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FETCH_NICE) < 0)
		op_log_debug("live API: cannot lower the fetch thread's priority", "error",
			     strerror(errno));
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = as_now_ms();
	int r = s->src.fetch(s->src.ud, j->ns, j->cluster, j->v, j->n, s->timeout_ms, j->pool,
			     &err);
	int64_t now = as_now_ms(), wall = as_wall_ms();
	op_hist_observe(&s->fetch_h, (uint64_t)(now - t0) * 1000000);
	pthread_mutex_lock(&s->mu);
	pool_give(s, j->pool_key, now);
	for (size_t i = 0; i < j->n; i++) {
		struct entry *e = entry_get(s, j->keys[i]);
		e->in_flight = false;
		e->done_ms = now;
		free(e->error);
		e->error = NULL;
		if (r >= 0 && j->v[i].doc) {
			if (e->doc)
				json_object_put(e->doc);
			e->doc = TAKE_PTR(j->v[i].doc);
			e->ok = true;
			e->seen_ms = wall;
		} else {
			e->ok = false;
			e->error = op_strdup(r < 0 ? err.msg
					     : j->v[i].error ? j->v[i].error
							     : "no answer");
		}
	}
	s->threads--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (r < 0)
		op_log_warn("live API: cannot query instances", "namespace", j->ns, "cluster",
			    j->cluster, "error", err.msg);
	job_free(j);
	return NULL;
}

/* Under mu: starts a fetch of the stale instances of one Cluster. */
static void start_job(struct as_snaps *s, struct job *j)
{
	if (j->n == 0 || s->threads >= MAX_FETCH_THREADS) {
		for (size_t i = 0; i < j->n; i++) { /* give the entries back */
			struct entry *e = entry_get(s, j->keys[i]);
			e->in_flight = false;
		}
		job_free(j);
		return;
	}
	j->pool_key = op_asprintf("%s/%s", j->ns, j->cluster);
	j->pool = pool_take(s, j->pool_key);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	s->threads++;
	if (pthread_create(&t, &at, fetch_main, j) != 0) {
		s->threads--;
		pool_give(s, j->pool_key, as_now_ms());
		for (size_t i = 0; i < j->n; i++)
			entry_get(s, j->keys[i])->in_flight = false;
		job_free(j);
	}
	pthread_attr_destroy(&at);
}

/* Under mu: one refresh-ahead job per Cluster for the entries asked for
 * within interest_ms that are past half their age and not in flight. */
static void refresh_interest(struct as_snaps *s, int64_t now)
{
	bool *taken = op_calloc(s->n ? s->n : 1, sizeof(*taken));
	for (size_t i = 0; i < s->n; i++) {
		struct entry *e = &s->e[i];
		taken[i] = !e->cluster || !e->ip || e->in_flight || !e->done_ms ||
			   now - e->used_ms >= s->interest_ms || now - e->done_ms < s->max_age_ms / 2;
	}
	for (size_t i = 0; i < s->n; i++) {
		const char *slash = strchr(s->e[i].key, '/');
		if (taken[i] || !slash)
			continue;
		struct job *j = op_calloc(1, sizeof(*j));
		j->s = s;
		j->ns = op_strndup(s->e[i].key, (size_t)(slash - s->e[i].key));
		j->cluster = op_strdup(s->e[i].cluster);
		j->ahead = true;
		j->v = op_calloc(s->n, sizeof(*j->v));
		j->keys = op_calloc(s->n, sizeof(*j->keys));
		size_t nsl = strlen(j->ns);
		for (size_t k = i; k < s->n; k++) { /* this Cluster's entries, i first */
			struct entry *e = &s->e[k];
			if (taken[k] || strcmp(e->cluster, j->cluster) != 0 ||
			    strncmp(e->key, j->ns, nsl) != 0 || e->key[nsl] != '/')
				continue;
			taken[k] = true;
			e->in_flight = true;
			j->v[j->n].name = op_strdup(e->key + nsl + 1);
			j->v[j->n].ip = op_strdup(e->ip);
			j->v[j->n].silent = !e->ok;
			j->keys[j->n] = op_strdup(e->key);
			j->n++;
		}
		start_job(s, j);
	}
	free(taken);
}

/* Under mu: waits until the monotonic ms deadline or stop (other broadcasts
 * on cond, the fetches' ends, do not cut the wait short). */
static void wait_until(struct as_snaps *s, int64_t deadline)
{
	while (!s->stop) {
		int64_t left = deadline - as_now_ms();
		if (left <= 0)
			return;
		struct timespec ts = ts_in(left);
		pthread_cond_timedwait(&s->cond, &s->mu, &ts);
	}
}

static void *refresher_main(void *arg)
{
	struct as_snaps *s = arg;
	long step = s->max_age_ms / 4 > 0 ? s->max_age_ms / 4 : 1;
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		int64_t now = as_now_ms();
		refresh_interest(s, now);
		wait_until(s, now + step);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void as_views_free(struct as_views *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		for (size_t k = 0; k < v[i].n; k++) {
			if (v[i].v[k].doc)
				json_object_put(v[i].v[k].doc);
			free((char *)v[i].v[k].error);
		}
		free(v[i].v);
		if (v[i].pods)
			json_object_put(v[i].pods);
	}
}

static char *pod_key(json_object *pod)
{
	return op_asprintf("%s/%s", op_json_str_at(pod, "metadata.namespace") ?: "",
			   op_json_str_at(pod, "metadata.name") ?: "");
}

/* Under mu: the entry of pod (in Cluster cluster) used now, its Cluster and
 * IP brought up to date; *ret_ip_changed when the Pod's IP is not the one
 * last fetched. */
static struct entry *pod_entry(struct as_snaps *s, json_object *pod, const char *cluster,
			       int64_t now, bool *ret_ip_changed)
{
	_cleanup_free_ char *key = pod_key(pod);
	const char *ip = op_json_str_at(pod, "status.podIP");
	struct entry *e = entry_get(s, key);
	e->used_ms = now;
	if (!e->cluster || strcmp(e->cluster, cluster) != 0) {
		free(e->cluster);
		e->cluster = op_strdup(cluster);
	}
	bool ip_changed = (ip && (!e->ip || strcmp(ip, e->ip) != 0)) || (!ip && e->ip);
	if (ip_changed) {
		free(e->ip);
		e->ip = ip ? op_strdup(ip) : NULL;
	}
	*ret_ip_changed = ip_changed;
	return e;
}

/* Under mu: one Cluster's pods (view->pods) not fresh or fetched ahead go
 * into one job, started at once; need[k]: the request waits for pod k (it
 * was not fresh and did not fail last time). */
static void schedule_cluster(struct as_snaps *s, json_object *cl, const struct as_views *view,
			     int64_t now, bool *need)
{
	size_t np = json_object_array_length(view->pods);
	struct job *j = op_calloc(1, sizeof(*j));
	j->s = s;
	j->ns = op_strdup(op_json_str_at(cl, "metadata.namespace") ?: "");
	j->cluster = op_strdup(op_json_str_at(cl, "metadata.name") ?: "");
	j->v = op_calloc(np ? np : 1, sizeof(*j->v));
	j->keys = op_calloc(np ? np : 1, sizeof(*j->keys));
	j->ahead = true;
	for (size_t k = 0; k < np; k++) {
		json_object *pod = json_object_array_get_idx(view->pods, k);
		bool ip_changed;
		struct entry *e = pod_entry(s, pod, j->cluster, now, &ip_changed);
		bool fresh = e->done_ms && now - e->done_ms < s->max_age_ms && !ip_changed;
		/* refresh ahead: past half its age a fresh entry is fetched again in
		 * the background while this request uses it, so a steady stream of
		 * requests never waits for an instance (bench/live.sh) */
		bool ahead = fresh && now - e->done_ms >= s->max_age_ms / 2;
		/* an instance whose last fetch failed is shown unreachable at once,
		 * never waited for again: its next fetch runs in the background */
		bool failed = e->done_ms && !e->ok && !ip_changed;
		need[k] = !fresh && !failed;
		if ((fresh && !ahead) || e->in_flight)
			continue;
		e->in_flight = true;
		j->ahead &= !need[k];
		j->v[j->n].name = op_strdup(op_json_str_at(pod, "metadata.name") ?: "");
		j->v[j->n].ip = e->ip ? op_strdup(e->ip) : NULL;
		j->v[j->n].silent = failed; /* TCP probe first, fresh connection */
		j->keys[j->n] = op_strdup(e->key);
		j->n++;
	}
	start_job(s, j);
}

/* Under mu: waits until none of the entries the request needs is in flight,
 * or the deadline (monotonic ms). */
static void wait_needed(struct as_snaps *s, const struct as_views *out, size_t nc,
			bool *const *need, int64_t deadline)
{
	for (;;) {
		bool busy = false;
		for (size_t c = 0; c < nc && !busy; c++)
			for (size_t k = 0; k < json_object_array_length(out[c].pods) && !busy; k++) {
				if (!need[c][k])
					continue;
				_cleanup_free_ char *key =
					pod_key(json_object_array_get_idx(out[c].pods, k));
				busy = entry_get(s, key)->in_flight;
			}
		if (!busy)
			return;
		int64_t left = deadline - as_now_ms();
		if (left <= 0)
			return;
		struct timespec ts = ts_in(left);
		pthread_cond_timedwait(&s->cond, &s->mu, &ts);
	}
}

/* Under mu: what the entries hold, copied into one Cluster's views. */
static void copy_views(struct as_snaps *s, struct as_views *view)
{
	size_t np = json_object_array_length(view->pods);
	view->v = op_calloc(np ? np : 1, sizeof(*view->v));
	view->n = np;
	for (size_t k = 0; k < np; k++) {
		json_object *pod = json_object_array_get_idx(view->pods, k);
		_cleanup_free_ char *key = pod_key(pod);
		struct entry *e = entry_get(s, key);
		struct as_inst_view *v = &view->v[k];
		v->pod = pod;
		if (e->doc)
			json_object_deep_copy(e->doc, &v->doc, NULL);
		v->reachable = e->ok && e->done_ms;
		v->seen_ms = e->seen_ms;
		v->error = e->in_flight && !e->done_ms ? op_strdup("no answer yet")
			   : e->error		       ? op_strdup(e->error)
						       : NULL;
		if (e->in_flight && e->done_ms && !e->ok && !v->error)
			v->error = op_strdup("no answer");
	}
}

void as_snaps_get(struct as_snaps *s, json_object *clusters, struct as_views *out)
{
	size_t nc = json_object_array_length(clusters);
	int64_t start = as_now_ms();
	int64_t deadline = start + s->timeout_ms + AS_MARGIN_MS;
	/* each Cluster's pods, before the lock */
	for (size_t c = 0; c < nc; c++) {
		json_object *cl = json_object_array_get_idx(clusters, c);
		const char *ns = op_json_str_at(cl, "metadata.namespace");
		const char *name = op_json_str_at(cl, "metadata.name");
		out[c] = (struct as_views){ 0 };
		out[c].pods = ns && name ? s->src.pods(s->src.ud, ns, name) : op_jarr();
	}
	/* need[c][k]: the request waits for this entry (it was not fresh) */
	bool **need = op_calloc(nc ? nc : 1, sizeof(*need));
	pthread_mutex_lock(&s->mu);
	int64_t now = as_now_ms();
	forget_old(s, now);
	for (size_t c = 0; c < nc; c++) {
		size_t np = json_object_array_length(out[c].pods);
		need[c] = op_calloc(np ? np : 1, sizeof(**need));
		schedule_cluster(s, json_object_array_get_idx(clusters, c), &out[c], now, need[c]);
	}
	int64_t wait0 = as_now_ms();
	wait_needed(s, out, nc, need, deadline);
	op_hist_observe(&s->wait_h, (uint64_t)(as_now_ms() - wait0) * 1000000);
	for (size_t c = 0; c < nc; c++)
		copy_views(s, &out[c]);
	pthread_mutex_unlock(&s->mu);
	for (size_t c = 0; c < nc; c++)
		free(need[c]);
	free(need);
}
