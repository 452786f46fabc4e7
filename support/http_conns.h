/* support/http_conns.h - the HTTP servers' connection registry and request
 * deadline (used by support/http_server.c and instance/server.c).
 *
 * libmicrohttpd's MHD_OPTION_CONNECTION_TIMEOUT is an idle timeout: every byte
 * received resets it, so a client trickling one byte a second holds a
 * connection for ever. The registry adds the deadline MHD lacks: a request's
 * headers and body must have arrived within `timeout` of the connection's
 * accept (first request) or of the end of the previous response (next request
 * on a kept-alive connection). While a request is being handled or its
 * response sent there is no deadline (the idle timeout still applies).
 *
 * MHD has no call to close a connection from outside its own threads, so a
 * sweeper thread (every OP_CONNS_SWEEP_MS) shuts the socket down
 * (shutdown(SHUT_RDWR)): MHD's next read sees end-of-file (epoll wakes it) and
 * it closes the connection through its normal path (NOTIFY_CONNECTION CLOSED,
 * then close()). MHD calls NOTIFY_CONNECTION CLOSED, which removes the entry
 * under the registry lock, before it closes the descriptor, so the sweeper,
 * which only touches descriptors of registered entries under that lock, never
 * shuts down a reused descriptor.
 *
 * The sweeper also calls malloc_trim(0) when the last connection has gone
 * after some were served (freed request memory back to the system).
 *
 * Threads: op_conns_add/remove/received/done run on MHD's threads, the sweeper
 * on its own; all take the registry lock or use atomics.
 */
#ifndef PGOP_SUPPORT_HTTP_CONNS_H
#define PGOP_SUPPORT_HTTP_CONNS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "support/err.h"

#define OP_CONNS_SWEEP_MS 200u
/* At most one warning per this interval about connections cut at the deadline. */
#define OP_CONNS_LOG_INTERVAL_NS (10ull * 1000 * 1000 * 1000)

/* One per connection; embedded in the owner's per-connection state. */
struct op_conn {
	struct op_conn *next, *prev; /* under op_conns.lock */
	int fd;
	_Atomic uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none (request being served) */
	bool cut;                     /* shut down by the sweeper (under the lock) */
};

struct op_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct op_conn *head;
	uint64_t timeout_ns;
	bool running, stop;
	pthread_t thread;
	_Atomic uint64_t open;  /* registered connections */
	_Atomic bool used;      /* a connection came since the last malloc_trim */
	_Atomic uint64_t cuts;  /* connections shut down at the deadline, since start */
	uint64_t logged_cuts;   /* cuts already reported in a warning (sweeper only) */
	uint64_t last_log_ns;   /* sweeper only */
};

/* timeout_ns > 0. Does not start the sweeper. */
void op_conns_init(struct op_conns *cs, uint64_t timeout_ns);
/* Starts the sweeper thread. -errno (err filled) when it cannot. */
OP_MUST_CHECK int op_conns_start(struct op_conns *cs, struct op_err *err);
/* Stops the sweeper (if started) and destroys the lock. Entries still
 * registered are left alone (the owner frees them). */
void op_conns_done(struct op_conns *cs);

/* A new connection (fd = its socket) accepted at now_ns: the deadline runs. */
void op_conns_add(struct op_conns *cs, struct op_conn *c, int fd, uint64_t now_ns);
/* The connection is closing (before its descriptor is closed). */
void op_conns_remove(struct op_conns *cs, struct op_conn *c);
/* The whole request (headers and body) has arrived: no deadline while it is served. */
void op_conns_received(struct op_conn *c);
/* The response is complete at now_ns: the next request's deadline runs. */
void op_conns_done_request(struct op_conns *cs, struct op_conn *c, uint64_t now_ns);

/* One sweep at now_ns (the sweeper's body; tests call it directly): shuts down
 * every connection past its deadline. Returns how many it shut down. */
unsigned op_conns_sweep(struct op_conns *cs, uint64_t now_ns);

uint64_t op_conns_now_ns(void);

#endif
