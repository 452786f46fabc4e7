/* support/http_jobs.c - the handler queue (see http_jobs.h). */
#include "support/http_jobs.h"

#include <errno.h>
#include <string.h>

#include "support/alloc.h"

static void *job_thread(void *arg)
{
	struct op_jobs *q = arg;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stop)
			pthread_cond_wait(&q->wake, &q->lock);
		if (q->stop)
			break; /* what is still queued goes to cancel */
		struct op_job *j = q->head;
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		pthread_mutex_unlock(&q->lock);
		q->run(j, q->ud);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int op_jobs_start(struct op_jobs *q, unsigned n, op_job_fn run, void *ud, struct op_err *err)
{
	*q = (struct op_jobs){ .run = run, .ud = ud };
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	q->threads = op_calloc(n ? n : 1, sizeof(*q->threads));
	for (unsigned i = 0; i < (n ? n : 1); i++) {
		int e = pthread_create(&q->threads[i], NULL, job_thread, q);
		if (e) {
			op_jobs_stop(q, NULL);
			return op_err_set(err, -e, "http server: cannot start a handler thread: %s",
					  strerror(e));
		}
		pthread_setname_np(q->threads[i], "pgop-http-job");
		q->n_threads++;
	}
	return 0;
}

void op_jobs_push(struct op_jobs *q, struct op_job *job)
{
	job->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = job;
	else
		q->head = job;
	q->tail = job;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

void op_jobs_stop(struct op_jobs *q, op_job_fn cancel)
{
	if (!q->threads)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_broadcast(&q->wake);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->n_threads; i++)
		pthread_join(q->threads[i], NULL);
	struct op_job *j = q->head;
	q->head = q->tail = NULL;
	while (j) {
		struct op_job *next = j->next;
		if (cancel)
			cancel(j, q->ud);
		j = next;
	}
	free(q->threads);
	q->threads = NULL;
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
}
