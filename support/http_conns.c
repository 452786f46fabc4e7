/* support/http_conns.c - connection registry and request deadline (see http_conns.h). */
#include "support/http_conns.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "support/log.h"

uint64_t op_conns_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void op_conns_init(struct op_conns *cs, uint64_t timeout_ns)
{
	memset(cs, 0, sizeof(*cs));
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	cs->timeout_ns = timeout_ns;
	atomic_init(&cs->open, 0);
	atomic_init(&cs->used, false);
	atomic_init(&cs->cuts, 0);
}

void op_conns_add(struct op_conns *cs, struct op_conn *c, int fd, uint64_t now_ns)
{
	c->fd = fd;
	c->cut = false;
	atomic_init(&c->deadline_ns, now_ns + cs->timeout_ns);
	pthread_mutex_lock(&cs->lock);
	c->prev = NULL;
	c->next = cs->head;
	if (cs->head)
		cs->head->prev = c;
	cs->head = c;
	pthread_mutex_unlock(&cs->lock);
	atomic_fetch_add_explicit(&cs->open, 1, memory_order_relaxed);
	atomic_store_explicit(&cs->used, true, memory_order_relaxed);
}

void op_conns_remove(struct op_conns *cs, struct op_conn *c)
{
	pthread_mutex_lock(&cs->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	pthread_mutex_unlock(&cs->lock);
	atomic_fetch_sub_explicit(&cs->open, 1, memory_order_relaxed);
}

void op_conns_received(struct op_conn *c)
{
	atomic_store_explicit(&c->deadline_ns, 0, memory_order_relaxed);
}

void op_conns_done_request(struct op_conns *cs, struct op_conn *c, uint64_t now_ns)
{
	atomic_store_explicit(&c->deadline_ns, now_ns + cs->timeout_ns, memory_order_relaxed);
}

unsigned op_conns_sweep(struct op_conns *cs, uint64_t now_ns)
{
	unsigned n = 0;
	pthread_mutex_lock(&cs->lock);
	for (struct op_conn *c = cs->head; c; c = c->next) {
		uint64_t d = atomic_load_explicit(&c->deadline_ns, memory_order_relaxed);
		if (!d || now_ns < d || c->cut)
			continue;
		/* Counted first: whoever sees the close also sees the count. The
		 * descriptor is open: MHD closes it only after removing the entry. */
		atomic_fetch_add_explicit(&cs->cuts, 1, memory_order_relaxed);
		shutdown(c->fd, SHUT_RDWR);
		c->cut = true;
		n++;
	}
	pthread_mutex_unlock(&cs->lock);
	return n;
}

/* One warning per OP_CONNS_LOG_INTERVAL_NS at most, with the count since the last. */
static void report_cuts(struct op_conns *cs, uint64_t now_ns)
{
	uint64_t total = atomic_load_explicit(&cs->cuts, memory_order_relaxed);
	if (total == cs->logged_cuts || now_ns - cs->last_log_ns < OP_CONNS_LOG_INTERVAL_NS)
		return;
	char n[24], t[24];
	snprintf(n, sizeof(n), "%llu", (unsigned long long)(total - cs->logged_cuts));
	snprintf(t, sizeof(t), "%.3f", (double)cs->timeout_ns / 1e9);
	op_log_warn("closed connections that did not send a complete request in time", "count", n,
		    "request_timeout_s", t);
	cs->logged_cuts = total;
	cs->last_log_ns = now_ns;
}

/* Once every connection has gone after some were served, the memory their
 * requests freed goes back to the system: glibc keeps freed chunks in each
 * thread's arena (handler threads, workers), so an idle server otherwise stays
 * at its peak (bench_webhook: 5.4 MiB before the clients, 10-11.7 MiB after). */
static void give_back_memory(struct op_conns *cs)
{
	if (atomic_load_explicit(&cs->open, memory_order_relaxed) != 0 ||
	    !atomic_exchange_explicit(&cs->used, false, memory_order_relaxed))
		return;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

static void *sweeper_main(void *arg)
{
	struct op_conns *cs = arg;
	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)OP_CONNS_SWEEP_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
		if (cs->stop)
			break;
		pthread_mutex_unlock(&cs->lock);
		uint64_t now = op_conns_now_ns();
		op_conns_sweep(cs, now);
		report_cuts(cs, now);
		give_back_memory(cs);
		pthread_mutex_lock(&cs->lock);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int op_conns_start(struct op_conns *cs, struct op_err *err)
{
	int e = pthread_create(&cs->thread, NULL, sweeper_main, cs);
	if (e)
		return op_err_set(err, -e, "http server: cannot start the deadline thread: %s",
				  strerror(e));
	cs->running = true;
	return 0;
}

void op_conns_done(struct op_conns *cs)
{
	if (cs->running) {
		pthread_mutex_lock(&cs->lock);
		cs->stop = true;
		pthread_cond_signal(&cs->wake);
		pthread_mutex_unlock(&cs->lock);
		pthread_join(cs->thread, NULL);
		cs->running = false;
	}
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
}
