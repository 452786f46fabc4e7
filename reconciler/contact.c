/* reconciler/contact.c - which instances answer /pg/status, and the prober
 * that watches Clusters none of whose instances does (ctl.h).
 *
 * A reconcile asks every instance of its Cluster for /pg/status. One that did
 * not answer last time (or never did at its IP) is asked only after a bare TCP
 * connect succeeded within RC_STATUS_CONNECT_SILENT_MS (instance_client.c).
 * When no instance with an IP answers at all (a Cluster whose node is cut
 * off, the node agent's scale mode) there is nothing to decide from them, so
 * the reconciles stop asking: the Cluster goes to the prober, one thread that
 * TCP-probes all such instances of all Clusters at once (support/tcp_probe.h)
 * every 1 s, doubling to 10 s, and queues a Cluster as soon as one of its
 * instances connects. A reconcile never holds a worker for an instance known
 * not to answer, so 1,000 unreachable Clusters cost no worker time
 * (docs/internals/memory.md, Unreachable instances).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "support/alloc.h"
#include "support/log.h"
#include "support/tcp_probe.h"
#include "support/tls_hello.h"

/* "name@ip": an instance at one address (a recreated Pod with a new IP is a
 * new contact). Owned. */
static char *contact_id(const struct rc_instance *in)
{
	return op_asprintf("%s@%s", in->name, in->ip ? in->ip : "");
}

static bool listed(char *const *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], id) == 0)
			return true;
	return false;
}

static bool silent_now(const struct rc_instance *in)
{
	return in->ip && !in->pod_terminating && !in->has_status && !in->restarting;
}

long rc_probe_delay_ms(unsigned streak)
{
	long d = 1000;
	for (unsigned i = 0; i < streak && d < RC_PROBE_MAX_DELAY_MS; i++)
		d *= 2;
	return d < RC_PROBE_MAX_DELAY_MS ? d : RC_PROBE_MAX_DELAY_MS;
}

void rc_note_unreachable(struct rc_controller *c, const char *key, const struct rc_instance *v,
			 size_t n, int64_t now_ms)
{
	unsigned count = 0, with_ip = 0, answered = 0;
	for (size_t i = 0; i < n; i++) {
		count += silent_now(&v[i]);
		with_ip += v[i].ip != NULL;
		answered += v[i].has_status;
	}
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_find(c, key);
	if (!s && (count || answered))
		s = rc_state_get(c, key);
	if (s) {
		s->unreachable = count;
		rc_strv_free(&s->silent, &s->n_silent);
		rc_strv_free(&s->answered, &s->n_answered);
		for (size_t i = 0; i < n; i++) {
			if (!v[i].ip)
				continue;
			_cleanup_free_ char *id = contact_id(&v[i]);
			if (silent_now(&v[i]))
				rc_strv_push(&s->silent, &s->n_silent, id);
			else if (v[i].has_status || v[i].restarting)
				rc_strv_push(&s->answered, &s->n_answered, id);
		}
		/* the primary watch: only with another instance to fail over to; the
		 * lost ones stay lost while they are silent instances of the Cluster */
		free(s->watch);
		s->watch = NULL;
		for (size_t i = 0; i < n; i++)
			if (v[i].has_status && v[i].is_primary)
				s->primary_lease_ms = v[i].lease_ms;
		for (size_t i = 0; i < n && n > 1; i++)
			if (v[i].ip && v[i].has_status && v[i].is_primary && !v[i].pod_terminating) {
				s->watch = contact_id(&v[i]);
				s->watch_next_ms = now_ms + RC_WATCH_MS;
			}
		for (size_t k = s->n_lost; k-- > 0;)
			if (!listed(s->silent, s->n_silent, s->lost[k])) {
				free(s->lost[k]);
				s->lost[k] = s->lost[--s->n_lost];
			}
		if (answered)
			s->probe_streak = 0;
		bool all_silent = count > 0 && count == with_ip;
		if (all_silent && !s->probe_bg)
			s->probe_next_ms = now_ms + rc_probe_delay_ms(s->probe_streak);
		s->probe_bg = all_silent;
	}
	pthread_mutex_unlock(&c->mu);
}

bool rc_mark_silent(struct rc_controller *c, const char *key, struct rc_instance *v, size_t n)
{
	bool watched = true; /* every instance with an IP is one the prober watches */
	size_t with_ip = 0;
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, key);
	for (size_t i = 0; i < n; i++) {
		v[i].silent = v[i].unreachable = false;
		if (!v[i].ip)
			continue;
		with_ip++;
		_cleanup_free_ char *id = contact_id(&v[i]);
		bool was_silent = s && listed(s->silent, s->n_silent, id);
		v[i].unreachable = s && listed(s->lost, s->n_lost, id);
		v[i].silent = was_silent || !s || !listed(s->answered, s->n_answered, id);
		watched &= was_silent && !v[i].pod_terminating;
	}
	bool skip = s && s->probe_bg && with_ip > 0 && watched;
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; skip && i < n; i++) {
		if (!v[i].ip)
			continue;
		free(v[i].error);
		v[i].error = op_strdup("GET /pg/status: no answer at the last reconcile; "
				       "TCP-probed in the background until it connects");
		v[i].has_status = false;
	}
	return skip;
}

/* What one round probes: instance i of the round belongs to keys[owner[i]]. */
struct round {
	char **keys;   /* owned */
	size_t n_keys;
	char **ids;    /* owned: "name@ip" */
	const char **ips; /* borrowed from ids */
	size_t *owner;
	int *err;
	size_t n;
};

static void round_done(struct round *r)
{
	rc_strv_free(&r->keys, &r->n_keys);
	rc_strv_free(&r->ids, &r->n);
	free(r->ips);
	free(r->owner);
	free(r->err);
}

/* Under mu: every silent instance of every Cluster due at now_ms. */
static void collect(struct rc_controller *c, int64_t now_ms, struct round *r)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_states; i++) {
		const struct rc_cluster_state *s = &c->states[i];
		if (!s->probe_bg || s->probe_next_ms > now_ms || !s->n_silent)
			continue;
		rc_strv_push(&r->keys, &r->n_keys, s->key);
		for (size_t k = 0; k < s->n_silent; k++) {
			size_t at = n++;
			r->owner = op_realloc(r->owner, n * sizeof(*r->owner));
			r->owner[at] = r->n_keys - 1;
			size_t m = r->n;
			rc_strv_push(&r->ids, &m, s->silent[k]);
			r->n = m;
		}
	}
	r->ips = op_calloc(n ? n : 1, sizeof(*r->ips));
	r->err = op_calloc(n ? n : 1, sizeof(*r->err));
	for (size_t i = 0; i < n; i++) {
		char *at = strrchr(r->ids[i], '@');
		r->ips[i] = at ? at + 1 : "";
		r->err[i] = ETIMEDOUT;
	}
}

/* Removes id from a list of "name@ip"; true when it was there. */
static bool strv_remove(char **v, size_t *n, const char *id)
{
	for (size_t k = 0; k < *n; k++)
		if (strcmp(v[k], id) == 0) {
			free(v[k]);
			v[k] = v[--*n];
			return true;
		}
	return false;
}

/* Removes id from s->silent (the instance connected: the next reconcile asks it). */
static void unsilence(struct rc_cluster_state *s, const char *id)
{
	(void)strv_remove(s->silent, &s->n_silent, id);
}

size_t rc_probe_round(struct rc_controller *c, int64_t now_ms, rc_probe_fn probe)
{
	struct round r = { 0 };
	pthread_mutex_lock(&c->mu);
	collect(c, now_ms, &r);
	pthread_mutex_unlock(&c->mu);
	if (!r.n_keys) {
		round_done(&r);
		return 0;
	}
	if (r.n)
		(void)probe((const char *const *)r.ips, r.n, RC_STATUS_PORT, RC_PROBE_TIMEOUT_MS,
			    r.err);
	bool *up = op_calloc(r.n_keys, sizeof(*up));
	for (size_t i = 0; i < r.n; i++)
		up[r.owner[i]] |= r.err[i] == 0;
	pthread_mutex_lock(&c->mu);
	for (size_t k = 0; k < r.n_keys; k++) {
		struct rc_cluster_state *s = rc_state_find(c, r.keys[k]);
		if (!s || !s->probe_bg)
			continue; /* a reconcile got there first */
		s->probe_streak++;
		if (!up[k]) {
			s->probe_next_ms = now_ms + rc_probe_delay_ms(s->probe_streak);
			continue;
		}
		for (size_t i = 0; i < r.n; i++)
			if (r.owner[i] == k && r.err[i] == 0)
				unsilence(s, r.ids[i]);
		s->probe_bg = false;
	}
	pthread_mutex_unlock(&c->mu);
	size_t queued = 0;
	for (size_t k = 0; k < r.n_keys; k++)
		if (up[k]) {
			op_log_info("instance connects again: reconciling", "cluster", r.keys[k]);
			rc_queue_add(c->q, r.keys[k]);
			queued++;
		}
	free(up);
	round_done(&r);
	return queued;
}

size_t rc_watch_round(struct rc_controller *c, int64_t now_ms, rc_answer_fn probe)
{
	struct rc_strv keys = { 0 }, ids = { 0 };
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->n_states; i++) {
		struct rc_cluster_state *s = &c->states[i];
		if ((!s->watch && !s->n_lost) || s->watch_next_ms > now_ms)
			continue;
		s->watch_next_ms = now_ms + RC_WATCH_MS;
		for (size_t k = 0; k <= s->n_lost; k++) {
			const char *id = k < s->n_lost ? s->lost[k] : s->watch;
			if (!id)
				continue;
			rc_strv_push(&keys.v, &keys.n, s->key);
			rc_strv_push(&ids.v, &ids.n, id);
		}
	}
	pthread_mutex_unlock(&c->mu);
	size_t queued = 0;
	if (!ids.n)
		return 0;
	const char **ips = op_calloc(ids.n, sizeof(*ips));
	int *err = op_calloc(ids.n, sizeof(*err));
	for (size_t i = 0; i < ids.n; i++) {
		char *at = strrchr(ids.v[i], '@');
		ips[i] = at ? at + 1 : "";
		err[i] = ETIMEDOUT;
	}
	(void)probe(ips, ids.n, RC_STATUS_PORT, RC_STATUS_CONNECT_SILENT_MS, c->watch_hello,
		    c->watch_hello_len, RC_WATCH_ANSWER_MS, err);
	for (size_t i = 0; i < ids.n; i++) {
		bool queue = false, lost = false;
		pthread_mutex_lock(&c->mu);
		struct rc_cluster_state *s = rc_state_find(c, keys.v[i]);
		if (s && err[i] == 0 && strv_remove(s->lost, &s->n_lost, ids.v[i])) {
			unsilence(s, ids.v[i]); /* back: the next reconcile asks it */
			queue = true;
		} else if (s && err[i] && s->watch && strcmp(s->watch, ids.v[i]) == 0) {
			free(s->watch);
			s->watch = NULL;
			if (!listed(s->silent, s->n_silent, ids.v[i]))
				rc_strv_push(&s->silent, &s->n_silent, ids.v[i]);
			if (!listed(s->lost, s->n_lost, ids.v[i]))
				rc_strv_push(&s->lost, &s->n_lost, ids.v[i]);
			queue = lost = true;
		}
		pthread_mutex_unlock(&c->mu);
		if (lost && err[i] == ETIME)
			op_log_warn("primary accepts a TCP connect but its status server does not "
				    "answer (a frozen node?): reconciling",
				    "cluster", keys.v[i], "instance", ids.v[i]);
		else if (lost)
			op_log_warn("primary does not accept a TCP connect: reconciling", "cluster",
				    keys.v[i], "instance", ids.v[i], "error", strerror(err[i]));
		else if (queue)
			op_log_info("instance connects again: reconciling", "cluster", keys.v[i],
				    "instance", ids.v[i]);
		if (queue) {
			rc_queue_add(c->q, keys.v[i]);
			queued++;
		}
	}
	free(err);
	free(ips);
	rc_strv_free(&keys.v, &keys.n);
	rc_strv_free(&ids.v, &ids.n);
	return queued;
}

bool rc_instance_lost(struct rc_controller *c, const char *key, const struct rc_instance *in)
{
	if (!in->ip)
		return false;
	_cleanup_free_ char *id = contact_id(in);
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, key);
	bool lost = s && listed(s->lost, s->n_lost, id);
	pthread_mutex_unlock(&c->mu);
	return lost;
}

int64_t rc_fence_lease_ms(struct rc_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, key);
	int64_t ms = s ? s->primary_lease_ms : 0;
	pthread_mutex_unlock(&c->mu);
	return ms > 0 ? ms : API_FENCE_LEGACY_MS;
}

int64_t rc_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *prober_main(void *arg)
{
	struct rc_controller *c = arg;
	while (!atomic_load(&c->stopping)) {
		usleep(50 * 1000); /* each round looks at what is due (RC_WATCH_MS, back-offs) */
		if (atomic_load(&c->stopping))
			break;
		if (!c->is_leader || c->is_leader(c->leader_ud)) {
			rc_watch_round(c, rc_mono_ms(), op_tcp_probe_answer);
			rc_probe_round(c, rc_mono_ms(), op_tcp_probe);
		}
	}
	return NULL;
}

int rc_prober_start(struct rc_controller *c, struct op_err *err)
{
	if (!c->watch_hello) {
		int r = op_tls_client_hello(&c->watch_hello, &c->watch_hello_len, err);
		if (r < 0) {
			(void)op_err_prefix(err, "reconciler: primary watch");
			return r;
		}
	}
	int e = pthread_create(&c->prober, NULL, prober_main, c);
	if (e)
		return op_err_set(err, -e, "reconciler: prober thread: %s", strerror(e));
	c->prober_started = true;
	return 0;
}

void rc_prober_stop(struct rc_controller *c)
{
	if (c->prober_started)
		pthread_join(c->prober, NULL);
	c->prober_started = false;
	free(c->watch_hello);
	c->watch_hello = NULL;
}
