/* reconciler/queue.h - the work queue between informers and reconcile workers
 * (client-go workqueue semantics).
 *
 * Keys are strings ("namespace/name"), copied on entry. Guarantees:
 * - de-duplication: a key waiting in the queue is queued once however many
 *   times it is added;
 * - exclusivity: a key handed to a worker by rc_queue_get() is not handed to
 *   another worker until rc_queue_done(); adds meanwhile mark it dirty and it
 *   is queued again by rc_queue_done();
 * - delays: rc_queue_add_after() makes a key ready at now+delay (the earliest
 *   of several pending delays wins; a key already queued stays queued);
 * - back-off: rc_queue_add_rate_limited() delays by base * 2^(failures-1),
 *   capped at max; rc_queue_forget() resets the failure count.
 * Thread-safe; any number of producers and workers.
 */
#ifndef PGOP_RECONCILER_QUEUE_H
#define PGOP_RECONCILER_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "support/metrics.h"
#include "support/err.h"

struct rc_queue;

struct rc_queue_opts {
	long base_backoff_ms; /* first failure delay; 0 = 5 ms (client-go) */
	long max_backoff_ms;  /* cap; 0 = 300000 (5 min) */
};

/* opts may be NULL. Never fails (OOM aborts). */
struct rc_queue *rc_queue_new(const struct rc_queue_opts *opts);
/* Frees; no thread may be using the queue. Accepts NULL; returns NULL. */
struct rc_queue *rc_queue_free(struct rc_queue *q);

/* key borrowed (copied). Adds after shutdown are ignored. rc_queue_add is an
 * event (an informer change, an action): the first one not yet handed to a
 * worker stamps the key's event time (rc_queue_get); a requeue
 * (rc_queue_add_after, rate-limited adds) does not. */
void rc_queue_add(struct rc_queue *q, const char *key);
void rc_queue_add_after(struct rc_queue *q, const char *key, long delay_ms);
/* Counts one more failure for key and adds it after the back-off delay.
 * Returns the delay used (ms). */
long rc_queue_add_rate_limited(struct rc_queue *q, const char *key);
/* Forgets key's failures (call after a successful reconcile). */
void rc_queue_forget(struct rc_queue *q, const char *key);
/* Current failure count of key. */
unsigned rc_queue_failures(struct rc_queue *q, const char *key);

/* Waits for a ready key, up to timeout_ms (< 0 = forever). Returns 0 and
 * *ret_key (owned, free()) - the caller must call rc_queue_done(key) when
 * finished - and *ret_event_ms (may be NULL): the monotonic ms time of the
 * oldest event (rc_queue_add) this round handles, 0 when it is a requeue only;
 * -ETIMEDOUT; or -ECANCELED once the queue is shut down. */
OP_MUST_CHECK
int rc_queue_get(struct rc_queue *q, long timeout_ms, char **ret_key, int64_t *ret_event_ms);
/* Marks key processed; re-queues it if it was added while processing. */
void rc_queue_done(struct rc_queue *q, const char *key);

/* Wakes every waiting worker with -ECANCELED; later adds are ignored. */
void rc_queue_shutdown(struct rc_queue *q);
/* Keys ready now (queued, not processing, not delayed). */
size_t rc_queue_len(struct rc_queue *q);
/* Keys waiting on a delay. */
size_t rc_queue_delayed(struct rc_queue *q);
/* Borrowed, lives as long as q: how long keys waited between becoming ready
 * (added, or their delay over) and a worker taking them. */
const struct op_hist *rc_queue_wait_hist(struct rc_queue *q);

#endif
