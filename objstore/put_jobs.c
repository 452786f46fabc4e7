/* objstore/put_jobs.c - os_put_from_reader_jobs(): a stream of unknown size
 * uploaded as a multipart upload with several parts in flight.
 *
 * The calling thread is the reader: it fills a free buffer with the next
 * part and queues it; n uploader threads (one os_client each) take queued
 * parts in order and PUT them. n + 1 buffers in all, so the reader is
 * never idle while an uploader is free, and memory does not grow with the
 * stream. The first failure (a read, a PUT) is kept and stops the reader
 * and the uploaders; os_put_parts (multipart.c) reads the first part,
 * makes the upload, completes or aborts it, as for os_put_from_reader. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/internal.h"
#include "support/alloc.h"
#include "support/log.h"

struct slot {
	char *buf;   /* owned: part_size bytes */
	size_t len;  /* bytes of the part held */
	unsigned no; /* its part number (1-based) */
};

struct jobs {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct os_mpu *m;       /* borrowed: etags recorded under mu */
	struct slot *slots;     /* owned: n + 1 */
	unsigned n_slots;
	unsigned *free_ix;      /* owned: stack of free slot indexes */
	unsigned n_free;
	unsigned *queue;        /* owned: ring of filled slot indexes, in part order */
	unsigned q_head, q_len;
	bool done;              /* the reader queued its last part */
	int rc;                 /* the first failure, 0 */
	struct op_err err;      /* its message */
};

struct uploader {
	struct jobs *j;         /* borrowed */
	struct os_client *c;    /* borrowed */
	pthread_t th;
	bool started;
};

/* Under mu: the first failure wins; everyone is woken to stop. */
static void fail_locked(struct jobs *j, int rc, const struct op_err *e)
{
	if (j->rc == 0) {
		j->rc = rc;
		op_err_set(&j->err, rc, "%s", e->msg);
	}
	pthread_cond_broadcast(&j->cv);
}

static void *uploader_main(void *arg)
{
	struct uploader *u = arg;
	struct jobs *j = u->j;
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (j->q_len == 0 && !j->done && j->rc == 0)
			pthread_cond_wait(&j->cv, &j->mu);
		if (j->rc != 0 || j->q_len == 0)
			break;
		unsigned ix = j->queue[j->q_head];
		j->q_head = (j->q_head + 1) % j->n_slots;
		j->q_len--;
		struct slot *s = &j->slots[ix];
		pthread_mutex_unlock(&j->mu);
		char *etag = NULL;
		struct op_err e = OP_ERR_INIT;
		int rc = os_mpu_upload_part_no(u->c, j->m, s->no, s->buf, s->len, &etag, &e);
		pthread_mutex_lock(&j->mu);
		if (rc < 0)
			fail_locked(j, rc, &e);
		else
			os_mpu_set_etag(j->m, s->no, etag);
		j->free_ix[j->n_free++] = ix;
		pthread_cond_broadcast(&j->cv);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* A free slot for the reader, or -1 once something failed. */
static int take_free(struct jobs *j)
{
	pthread_mutex_lock(&j->mu);
	while (j->n_free == 0 && j->rc == 0)
		pthread_cond_wait(&j->cv, &j->mu);
	int ix = j->rc == 0 ? (int)j->free_ix[--j->n_free] : -1;
	pthread_mutex_unlock(&j->mu);
	return ix;
}

static void queue_part(struct jobs *j, unsigned ix, bool last)
{
	pthread_mutex_lock(&j->mu);
	j->queue[(j->q_head + j->q_len) % j->n_slots] = ix;
	j->q_len++;
	j->done = last;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

static void give_back(struct jobs *j, unsigned ix, bool last)
{
	pthread_mutex_lock(&j->mu);
	j->free_ix[j->n_free++] = ix;
	j->done = j->done || last;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* The reader: slot first holds part 1 already (len bytes, more to come).
 * Queues parts until the stream ends or something fails; *total counts the
 * bytes read. */
static void read_parts(struct jobs *j, os_read_fn read, void *ud, size_t part, unsigned first,
		       uint64_t *total, const char *bucket, const char *key)
{
	unsigned ix = first, no = 1;
	bool eof = false;
	for (;;) {
		j->slots[ix].no = no++;
		*total += j->slots[ix].len;
		queue_part(j, ix, eof);
		if (eof)
			return;
		int next = take_free(j);
		if (next < 0)
			return;
		ix = (unsigned)next;
		size_t len = 0;
		int rc = os_read_full(read, ud, j->slots[ix].buf, part, &len, &eof);
		if (rc < 0) {
			struct op_err e = OP_ERR_INIT;
			op_err_set(&e, rc, "PUT s3://%s/%.300s: read failed", bucket, key);
			pthread_mutex_lock(&j->mu);
			fail_locked(j, rc, &e);
			pthread_mutex_unlock(&j->mu);
			give_back(j, ix, true);
			return;
		}
		if (len == 0) { /* the stream ended on a part boundary */
			give_back(j, ix, true);
			return;
		}
		j->slots[ix].len = len;
	}
}

/* Slot 0 is the reader's first part (first, len: os_put_parts's buffer,
 * borrowed); the n_slots - 1 others are allocated here, free. */
static void jobs_init(struct jobs *j, struct os_mpu *m, unsigned n_slots, char *first,
		      size_t len, size_t part)
{
	*j = (struct jobs){ .m = m, .n_slots = n_slots };
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->slots = op_calloc(n_slots, sizeof(*j->slots));
	j->free_ix = op_calloc(n_slots, sizeof(*j->free_ix));
	j->queue = op_calloc(n_slots, sizeof(*j->queue));
	j->slots[0] = (struct slot){ .buf = first, .len = len };
	for (unsigned i = 1; i < n_slots; i++) {
		j->slots[i].buf = op_malloc(part);
		j->free_ix[j->n_free++] = i;
	}
}

static void jobs_done(struct jobs *j)
{
	for (unsigned i = 1; i < j->n_slots; i++) /* slot 0's buffer is the caller's */
		free(j->slots[i].buf);
	free(j->slots);
	free(j->free_ix);
	free(j->queue);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
}

/* What upload_parallel needs besides os_put_parts's arguments (borrowed). */
struct jobs_ctx {
	struct os_client *const *clients;
	unsigned n;
	const char *key;
};

/* os_rest_fn of os_put_from_reader_jobs: part 1 (buf, len) and the rest of
 * the stream uploaded by x->n threads while this one reads. */
static int upload_parallel(void *ctx, struct os_mpu *m, os_read_fn read, void *ud, char *buf,
			   size_t part, size_t len, uint64_t *total, struct op_err *err)
{
	const struct jobs_ctx *x = ctx;
	struct jobs j;
	jobs_init(&j, m, x->n + 1, buf, len, part);
	struct uploader *u = op_calloc(x->n, sizeof(*u));
	bool any = false;
	for (unsigned i = 0; i < x->n; i++) {
		u[i] = (struct uploader){ .j = &j, .c = x->clients[i] };
		u[i].started = pthread_create(&u[i].th, NULL, uploader_main, &u[i]) == 0;
		any = any || u[i].started;
	}
	const char *bucket = x->clients[0]->bucket;
	if (any) {
		read_parts(&j, read, ud, part, 0, total, bucket, x->key);
	} else {
		struct op_err e = OP_ERR_INIT;
		op_err_set(&e, -EAGAIN, "PUT s3://%s: no upload thread could start", bucket);
		pthread_mutex_lock(&j.mu);
		fail_locked(&j, -EAGAIN, &e);
		pthread_mutex_unlock(&j.mu);
	}
	for (unsigned i = 0; i < x->n; i++)
		if (u[i].started)
			pthread_join(u[i].th, NULL);
	free(u);
	int rc = j.rc;
	if (rc < 0)
		op_err_set(err, rc, "%s", j.err.msg);
	jobs_done(&j);
	return rc;
}

int os_put_from_reader_jobs(struct os_client *const *clients, unsigned n_clients, const char *key,
			    os_read_fn read, void *ud, size_t part_size, uint64_t *ret_size,
			    struct op_err *err)
{
	if (n_clients == 0)
		return op_err_set(err, -EINVAL, "PUT %.300s: no client", key ? key : "");
	struct jobs_ctx x = { .clients = clients, .n = n_clients, .key = key };
	return os_put_parts(clients[0], key, read, ud, part_size, upload_parallel, &x, ret_size,
			     err);
}
