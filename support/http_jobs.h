/* support/http_jobs.h - internal to support/: the HTTPS server's handler
 * queue (used by support/http_server.c).
 *
 * libmicrohttpd keeps a kept-alive connection on the pool worker that accepted
 * it, and one worker may accept a whole burst: with the few long-lived
 * connections kube-apiserver holds to a webhook, every request then ran its
 * handler on one worker while the other cores idled. The server suspends the
 * connection once a request has fully arrived and pushes it here; N threads
 * take requests in arrival order, whatever connection or worker they came
 * from, run the handler and resume the connection (MHD then sends the reply
 * from its worker). TLS and HTTP parsing stay on the workers.
 *
 * Items are embedded in the caller's per-request state (struct op_job); the
 * queue never allocates or frees them.
 */
#ifndef PGOP_SUPPORT_HTTP_JOBS_H
#define PGOP_SUPPORT_HTTP_JOBS_H

#include <pthread.h>
#include <stdbool.h>

#include "support/err.h"

struct op_job {
	struct op_job *next; /* under op_jobs.lock */
};

/* Runs a job on a queue thread (run) or, for a job still queued when the queue
 * stops, on the stopping thread (cancel). Either is called exactly once per
 * pushed job. */
typedef void (*op_job_fn)(struct op_job *job, void *ud);

struct op_jobs {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct op_job *head, *tail;
	bool stop;
	unsigned n_threads;
	pthread_t *threads; /* owned, n_threads */
	op_job_fn run;
	void *ud; /* borrowed */
};

/* Starts n (>= 1) threads named "pgop-http-job" calling run(job, ud).
 * Returns 0 or a negative errno (err says why; nothing left running). */
OP_MUST_CHECK
int op_jobs_start(struct op_jobs *q, unsigned n, op_job_fn run, void *ud, struct op_err *err);
/* Queues job (BORROWED until run or cancel is called for it). Thread-safe. */
void op_jobs_push(struct op_jobs *q, struct op_job *job);
/* Lets the threads finish the job each is running, joins them, then calls
 * cancel for every job still queued, in order, on this thread. Frees the
 * queue's own state. A no-op on a queue never started. */
void op_jobs_stop(struct op_jobs *q, op_job_fn cancel);

#endif
