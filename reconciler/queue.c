/* reconciler/queue.c - de-duplicating, delaying, rate-limited work queue.
 *
 * One mutex, one condition variable on CLOCK_MONOTONIC. Entries live in a
 * small array scanned linearly: a queue holds one key per Cluster, so a few
 * hundred at most, and every operation is O(n) on a list that fits in cache.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "reconciler/queue.h"
#include "support/alloc.h"

struct ent {
	char *key;
	bool queued;     /* ready, waiting for a worker (order by seq) */
	bool processing; /* handed to a worker */
	bool dirty;      /* added while processing: queue again on done */
	uint64_t seq;
	int64_t ready_ms; /* monotonic: when it was last queued */
	int64_t due_ms;  /* delayed until this monotonic time; 0 = not delayed */
	int64_t event_ms; /* monotonic: the oldest rc_queue_add not handed to a worker yet; 0 = none */
	unsigned failures;
};

struct rc_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ent *v;
	size_t n, cap;
	uint64_t next_seq;
	bool shutdown;
	long base_ms, max_ms;
	struct op_hist wait; /* ready -> taken by a worker */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct rc_queue *rc_queue_new(const struct rc_queue_opts *opts)
{
	struct rc_queue *q = op_calloc(1, sizeof(*q));
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	q->base_ms = opts && opts->base_backoff_ms > 0 ? opts->base_backoff_ms : 5;
	q->max_ms = opts && opts->max_backoff_ms > 0 ? opts->max_backoff_ms : 300000;
	op_hist_init(&q->wait, &op_hist_bounds_slow);
	return q;
}

struct rc_queue *rc_queue_free(struct rc_queue *q)
{
	if (!q)
		return NULL;
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].key);
	free(q->v);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
	return NULL;
}

static struct ent *find(struct rc_queue *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->v[i].key, key) == 0)
			return &q->v[i];
	return NULL;
}

static struct ent *find_or_add(struct rc_queue *q, const char *key)
{
	struct ent *e = find(q, key);
	if (e)
		return e;
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 16;
		q->v = op_realloc(q->v, q->cap * sizeof(*q->v));
	}
	e = &q->v[q->n++];
	*e = (struct ent){ .key = op_strdup(key) };
	return e;
}

/* Drops an entry that carries no state any more. */
static void maybe_drop(struct rc_queue *q, struct ent *e)
{
	if (e->queued || e->processing || e->dirty || e->due_ms || e->failures || e->event_ms)
		return;
	free(e->key);
	*e = q->v[--q->n];
}

/* Caller holds mu. */
static void make_ready(struct rc_queue *q, struct ent *e)
{
	int64_t now = now_ms(), since = e->due_ms && e->due_ms < now ? e->due_ms : now;
	/* a delayed key has been ready since its due time */
	e->due_ms = 0;
	if (e->processing) {
		e->dirty = true;
		return;
	}
	if (!e->queued) {
		e->queued = true;
		e->seq = q->next_seq++;
		e->ready_ms = since;
		pthread_cond_signal(&q->cv);
	}
}

/* event: stamp the entry's event time (rc_queue_add), not a requeue */
static void add_now(struct rc_queue *q, const char *key, bool event)
{
	pthread_mutex_lock(&q->mu);
	if (!q->shutdown) {
		struct ent *e = find_or_add(q, key);
		if (event && !e->event_ms)
			e->event_ms = now_ms();
		make_ready(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

void rc_queue_add(struct rc_queue *q, const char *key)
{
	add_now(q, key, true);
}

void rc_queue_add_after(struct rc_queue *q, const char *key, long delay_ms)
{
	if (delay_ms <= 0) {
		add_now(q, key, false);
		return;
	}
	pthread_mutex_lock(&q->mu);
	if (!q->shutdown) {
		struct ent *e = find_or_add(q, key);
		int64_t due = now_ms() + delay_ms;
		if (!e->queued && !e->dirty && (e->due_ms == 0 || due < e->due_ms)) {
			e->due_ms = due;
			pthread_cond_broadcast(&q->cv); /* a waiter may need to wake earlier */
		}
	}
	pthread_mutex_unlock(&q->mu);
}

long rc_queue_add_rate_limited(struct rc_queue *q, const char *key)
{
	long delay;
	pthread_mutex_lock(&q->mu);
	struct ent *e = find_or_add(q, key);
	unsigned f = e->failures < 63 ? e->failures : 63;
	e->failures++;
	delay = q->base_ms;
	for (unsigned i = 0; i < f && delay < q->max_ms; i++)
		delay *= 2;
	if (delay > q->max_ms)
		delay = q->max_ms;
	pthread_mutex_unlock(&q->mu);
	rc_queue_add_after(q, key, delay);
	return delay;
}

void rc_queue_forget(struct rc_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct ent *e = find(q, key);
	if (e) {
		e->failures = 0;
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

unsigned rc_queue_failures(struct rc_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct ent *e = find(q, key);
	unsigned f = e ? e->failures : 0;
	pthread_mutex_unlock(&q->mu);
	return f;
}

/* Moves due entries to ready; returns the earliest remaining due time (0 = none). */
static int64_t promote_due(struct rc_queue *q, int64_t now)
{
	int64_t next = 0;
	for (size_t i = 0; i < q->n; i++) {
		struct ent *e = &q->v[i];
		if (!e->due_ms)
			continue;
		if (e->due_ms <= now)
			make_ready(q, e);
		else if (!next || e->due_ms < next)
			next = e->due_ms;
	}
	return next;
}

static struct ent *first_ready(struct rc_queue *q)
{
	struct ent *best = NULL;
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].queued && (!best || q->v[i].seq < best->seq))
			best = &q->v[i];
	return best;
}

int rc_queue_get(struct rc_queue *q, long timeout_ms, char **ret_key, int64_t *ret_event_ms)
{
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;
	int r = 0;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		if (q->shutdown) {
			r = -ECANCELED;
			break;
		}
		int64_t now = now_ms();
		int64_t next = promote_due(q, now);
		struct ent *e = first_ready(q);
		if (e) {
			e->queued = false;
			e->processing = true;
			op_hist_observe(&q->wait, (uint64_t)(now > e->ready_ms ? now - e->ready_ms : 0) *
							  1000000u);
			*ret_key = op_strdup(e->key);
			if (ret_event_ms)
				*ret_event_ms = e->event_ms;
			e->event_ms = 0; /* events from now on are the next round's */
			break;
		}
		if (timeout_ms >= 0 && now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		int64_t wake = next;
		if (timeout_ms >= 0 && (!wake || deadline < wake))
			wake = deadline;
		if (!wake) {
			pthread_cond_wait(&q->cv, &q->mu);
		} else {
			struct timespec ts = { (time_t)(wake / 1000), (long)(wake % 1000) * 1000000 };
			pthread_cond_timedwait(&q->cv, &q->mu, &ts);
		}
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

void rc_queue_done(struct rc_queue *q, const char *key)
{
	pthread_mutex_lock(&q->mu);
	struct ent *e = find(q, key);
	if (e) {
		e->processing = false;
		if (e->dirty && !q->shutdown) {
			e->dirty = false;
			make_ready(q, e);
		}
		e->dirty = false;
		maybe_drop(q, e);
	}
	pthread_mutex_unlock(&q->mu);
}

void rc_queue_shutdown(struct rc_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->shutdown = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

size_t rc_queue_len(struct rc_queue *q)
{
	size_t n = 0;
	pthread_mutex_lock(&q->mu);
	for (size_t i = 0; i < q->n; i++)
		n += q->v[i].queued;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t rc_queue_delayed(struct rc_queue *q)
{
	size_t n = 0;
	pthread_mutex_lock(&q->mu);
	for (size_t i = 0; i < q->n; i++)
		n += q->v[i].due_ms != 0;
	pthread_mutex_unlock(&q->mu);
	return n;
}

const struct op_hist *rc_queue_wait_hist(struct rc_queue *q)
{
	return &q->wait;
}
