/* support/http_server.c - TLS HTTP server on libmicrohttpd (see http_server.h).
 *
 * Lifetimes:
 *   struct conn_state  one per TCP connection: allocated in NOTIFY_CONNECTION
 *                      STARTED, freed in CLOSED; holds the TLS credentials the
 *                      connection's handshake used (one reference) and its entry
 *                      in the connection registry (request deadline, http_conns.h).
 *   struct listener    one per MHD daemon: the HTTPS one (every route) and the
 *                      optional plain-HTTP probe one (built-in routes only); the
 *                      cls of every MHD callback.
 *   struct req_state   one per request: allocated on the first access-handler
 *                      call, freed only in NOTIFY_COMPLETED (where the request
 *                      is also counted and logged).
 */
#include "support/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/http_conns.h"
#include "support/http_jobs.h"
#include "support/http_tls.h"
#include "support/log.h"
#include "support/metrics.h"

#define DEFAULT_LISTEN "0.0.0.0:9443"
#define MAX_LOGGED_PATH 256
/* A body passing the cap is read and dropped so the 413 can be sent; past this
 * much dropped data the connection is cut instead. */
#define MAX_DISCARD (16u * 1024 * 1024)

/* Defaults of struct op_http_config (see http_server.h). */
#define DEFAULT_CONNECTION_LIMIT 1024u
#define DEFAULT_PER_IP_LIMIT 64u
/* Longer than the idle timeout of the clients that keep connections (the
 * kube-apiserver's webhook and aggregation transports: Go's 90 s), so the
 * client closes an idle connection first: a server closing it as the client
 * reuses it fails that request (a POST is not retried: "broken pipe"). */
#define DEFAULT_IDLE_TIMEOUT_S 120u
#define DEFAULT_REQUEST_TIMEOUT_S 10u
/* Handler threads (http_jobs.h): the pool size, at least this many. */
#define HANDLER_THREADS_MIN 4u
/* The probe listener serves three cheap built-in routes on one thread. */
#define PROBE_CONNECTION_LIMIT 256u
/* libmicrohttpd messages (one per refused connection under a flood): at most
 * this many per second; the next line logged says how many were dropped. */
#define MHD_LOG_BURST 10u
#define MHD_LOG_WINDOW_NS (1000ull * 1000 * 1000)

struct op_http_server;

struct listener {
	struct op_http_server *srv;
	struct MHD_Daemon *daemon;
	size_t n_routes; /* routes served here: all but "unmatched", or N_BUILTIN */
	uint16_t port;
};

/* Status codes counted individually in pgop_http_requests_total; others go to "other". */
static const unsigned counted_codes[] = { 200, 201, 400, 401, 403, 404, 405,
					  409, 413, 415, 422, 429, 500, 503 };
#define N_CODES (OP_ARRAY_SIZE(counted_codes) + 1)

struct op_http_server {
	struct listener main;  /* HTTPS, every route */
	struct listener probe; /* plain HTTP, built-in routes; daemon NULL when not asked for */
	struct op_conns conns; /* every connection of both, with its request deadline */
	bool conns_ready;      /* conns initialised */
	pthread_mutex_t log_lock; /* MHD message rate limit */
	unsigned log_tokens;
	uint64_t log_window_end_ns, log_dropped;
	struct op_tls_slot slot;
	struct op_tls_files files; /* cert_file == NULL when started from PEM */
	const struct op_http_route *user_routes;
	size_t n_user;
	size_t n_paths;               /* built-in + user + 1 ("unmatched") */
	_Atomic uint64_t *requests;   /* [n_paths][N_CODES] */
	struct op_hist *latency;      /* [n_paths] */
	_Atomic int64_t in_flight;
	_Atomic uint64_t cert_swaps;
	_Atomic bool ready;
	_Atomic bool draining;        /* set by op_http_server_free: responses close */
	pthread_mutex_t streams_lock;
	struct op_http_stream *streams; /* streamed replies in flight (list) */
	struct op_jobs jobs;          /* the user routes' handlers (http_jobs.h) */
	void *userdata;
	void *ready_userdata;
	bool (*ready_fn)(void *userdata);
	char *trust_pem;              /* owned: makes gnutls request a client certificate */
	size_t max_body;
	unsigned drain_ms;
};

struct conn_state {
	struct op_conn link;      /* first: registry entry (request deadline) */
	struct op_http_server *srv;
	struct op_tls_cred *cred; /* reference for the connection's lifetime, or NULL */
};

struct req_state {
	struct op_http_server *srv;
	struct conn_state *cs; /* the connection's (borrowed; outlives the request) */
	size_t route;        /* index into the route space; srv->n_paths - 1 = unmatched */
	uint64_t start_ns;
	struct op_buf body;
	unsigned status;     /* of the queued response; 0 = none queued */
	bool too_big;
	size_t discarded;
	size_t bytes_out;
	char *method;        /* owned, for the log line */
	char *path;          /* owned, truncated to MAX_LOGGED_PATH */
	char *url;           /* owned: the full path (no query), given to handlers */
	char *error;         /* owned: why a 4xx/5xx was sent, or NULL */
	unsigned pending;    /* 404/405 decided on the first call, sent on the next */
	/* A user route's handler runs on a queue thread (http_jobs.h) while the
	 * connection is suspended; the resumed access handler sends its result. */
	struct op_job job;
	struct MHD_Connection *conn; /* borrowed, for the queue thread */
	enum { RQ_INLINE, RQ_QUEUED, RQ_HANDLED } async;
	int rc;                      /* the handler's return */
	struct op_http_reply rep;    /* the handler's reply (owned while RQ_HANDLED) */
	struct op_err err;
	char *pending_allow; /* owned: Allow header for a pending 405 */
	char peer[INET6_ADDRSTRLEN + 16];
};

/* ---- built-in routes ---------------------------------------------------- */

static int handle_healthz(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
			  struct op_err *err)
{
	rep->content_type = "text/plain; charset=utf-8";
	return op_buf_adds(&rep->body, "ok\n");
}

static int handle_readyz(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
			 struct op_err *err)
{
	struct op_http_server *srv = ud;
	bool ready = atomic_load_explicit(&srv->ready, memory_order_relaxed) &&
		     (!srv->ready_fn || srv->ready_fn(srv->ready_userdata));
	rep->content_type = "text/plain; charset=utf-8";
	rep->status = ready ? 200 : 503;
	return op_buf_adds(&rep->body, ready ? "ok\n" : "not ready\n");
}

static int handle_metrics(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
			  struct op_err *err)
{
	rep->content_type = "text/plain; version=0.0.4; charset=utf-8";
	int r = op_http_server_render_metrics(ud, &rep->body);
	if (r < 0)
		return op_err_set(err, r, "metrics text over %zu bytes", rep->body.max);
	return 0;
}

static const struct op_http_route builtin_routes[] = {
	{ "GET", "/healthz", handle_healthz },
	{ "GET", "/readyz", handle_readyz },
	{ "GET", "/metrics", handle_metrics },
};
#define N_BUILTIN OP_ARRAY_SIZE(builtin_routes)

static const struct op_http_route *route_at(const struct op_http_server *srv, size_t i)
{
	if (i < N_BUILTIN)
		return &builtin_routes[i];
	if (i - N_BUILTIN < srv->n_user)
		return &srv->user_routes[i - N_BUILTIN];
	return NULL;
}

static const char *route_label(const struct op_http_server *srv, size_t i)
{
	const struct op_http_route *r = route_at(srv, i);
	return r ? r->path : "unmatched";
}

/* Exact path, or a prefix when the route's path ends in '*'. */
static bool path_matches(const char *route_path, const char *url)
{
	size_t n = strlen(route_path);
	if (n && route_path[n - 1] == '*')
		return strncmp(route_path, url, n - 1) == 0;
	return strcmp(route_path, url) == 0;
}

static bool method_matches(const char *route_method, const char *method)
{
	if (strcmp(route_method, method) == 0)
		return true;
	return strcmp(route_method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

static bool method_has_body(const char *method)
{
	return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "PATCH") == 0;
}

/* ---- helpers ------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void format_peer(struct MHD_Connection *conn, char *out, size_t outlen)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	bool v6 = false;
	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;
		if (sa->sa_family == AF_INET) {
			const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
			inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
			port = ntohs(in->sin_port);
		} else if (sa->sa_family == AF_INET6) {
			const struct sockaddr_in6 *in6 =
				(const struct sockaddr_in6 *)(const void *)sa;
			inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
			port = ntohs(in6->sin6_port);
			v6 = true;
		}
	}
	snprintf(out, outlen, v6 ? "[%s]:%u" : "%s:%u", ip, port);
}

/* Content-Type is application/json, optionally with parameters, or absent
 * (read as JSON: `kubectl create --raw -f` sends none). */
static bool is_json_content_type(const char *ct)
{
	static const char want[] = "application/json";
	if (!ct)
		return true;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return false;
	char next = ct[sizeof(want) - 1];
	return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* Strict decimal Content-Length; false when absent or malformed. */
static bool parse_content_length(const char *s, uint64_t *ret)
{
	if (!s || !*s)
		return false;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*ret = v;
	return true;
}

static enum MHD_Result queue_reply(struct MHD_Connection *conn, struct req_state *rq,
				   unsigned status, const char *content_type, struct op_buf *body,
				   const char *allow, bool close, const char *hname, const char *hvalue)
{
	/* While draining, tell keep-alive clients to go elsewhere. */
	close = close || atomic_load_explicit(&rq->srv->draining, memory_order_relaxed);
	size_t len = 0;
	char *data = op_buf_take(body, &len);
	struct MHD_Response *resp =
		MHD_create_response_from_buffer_with_free_callback(len, data, free);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	enum MHD_Result ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
						     content_type);
	if (ok == MHD_YES && allow)
		ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	if (ok == MHD_YES && hname && hvalue)
		ok = MHD_add_response_header(resp, hname, hvalue);
	if (ok == MHD_YES && close)
		ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (ok == MHD_YES)
		ok = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	if (ok == MHD_YES) {
		rq->status = status;
		rq->bytes_out = len;
	}
	return ok;
}

/* A JSON error body {"code":N,"message":"..."}; the message is kept for the log. */
static enum MHD_Result queue_error(struct MHD_Connection *conn, struct req_state *rq,
				   unsigned status, const char *allow, bool close, const char *msg)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_addf(&b, "{\"code\":%u,\"message\":", status);
	if (!r)
		r = op_buf_add_json_str(&b, msg);
	if (!r)
		r = op_buf_adds(&b, "}\n");
	(void)r; /* on overflow the body is empty: the status still says it */
	free(rq->error);
	rq->error = op_strdup(msg);
	return queue_reply(conn, rq, status, "application/json", &b, allow, close, NULL, NULL);
}

/* "GET, HEAD" etc. for every route on path among the first n. */
static char *allowed_methods(const struct op_http_server *srv, size_t n, const char *path)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = 0;
	for (size_t i = 0; !r && i < n; i++) {
		const struct op_http_route *rt = route_at(srv, i);
		if (!path_matches(rt->path, path))
			continue;
		r = op_buf_addf(&b, "%s%s%s", b.len ? ", " : "", rt->method,
				strcmp(rt->method, "GET") == 0 ? ", HEAD" : "");
	}
	return op_buf_take(&b, NULL);
}

/* ---- request lifecycle --------------------------------------------------- */

static enum MHD_Result queue_pending(struct MHD_Connection *conn, struct req_state *rq)
{
	if (rq->pending == MHD_HTTP_NOT_FOUND)
		return queue_error(conn, rq, MHD_HTTP_NOT_FOUND, NULL, false, "not found");
	return queue_error(conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED, rq->pending_allow, false,
			   "method not allowed");
}

/* First call: route, then the checks that need no body. Queues an error or
 * returns MHD_YES to go on reading.
 *
 * MHD closes the connection after a response queued on the first call (it
 * cannot know whether a body follows), so that is kept for rejections of
 * requests that carry a body (413, 415, and 404/405 of a POST). A 404/405 of
 * a GET is only decided here and sent on the next call, keeping the
 * connection alive, as does every successful GET. */
static enum MHD_Result first_call(const struct listener *lst, struct MHD_Connection *conn,
				  struct req_state *rq, const char *url, const char *method)
{
	struct op_http_server *srv = lst->srv;
	bool path_known = false;
	rq->route = srv->n_paths - 1;
	for (size_t i = 0; i < lst->n_routes; i++) {
		const struct op_http_route *rt = route_at(srv, i);
		if (!path_matches(rt->path, url))
			continue;
		path_known = true;
		if (method_matches(rt->method, method)) {
			rq->route = i;
			break;
		}
	}
	if (rq->route == srv->n_paths - 1) {
		if (path_known) {
			rq->pending = MHD_HTTP_METHOD_NOT_ALLOWED;
			rq->pending_allow = allowed_methods(srv, lst->n_routes, url);
			for (size_t i = 0; i < lst->n_routes; i++) {
				if (path_matches(route_at(srv, i)->path, url)) {
					rq->route = i; /* count 405s under their path */
					break;
				}
			}
		} else {
			rq->pending = MHD_HTTP_NOT_FOUND;
		}
		if (method_has_body(method))
			return queue_pending(conn, rq);
		return MHD_YES;
	}
	if (!method_has_body(method))
		return MHD_YES;

	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t len = 0;
	if (cl && parse_content_length(cl, &len) && len > srv->max_body) {
		_cleanup_free_ char *m =
			op_asprintf("request body of %llu bytes is over the %zu byte limit",
				    (unsigned long long)len, srv->max_body);
		return queue_error(conn, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, true, m);
	}
	const char *ct =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!is_json_content_type(ct))
		return queue_error(conn, rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, true,
				   "content type must be application/json");
	return MHD_YES;
}

/* ---- streamed replies ------------------------------------------------------ */

#define STREAM_BACKLOG_MAX (1024u * 1024)

struct op_http_stream {
	pthread_mutex_t lock;
	_Atomic unsigned refs;          /* producer + server (the MHD response) */
	struct op_http_server *srv;     /* set when queued */
	struct MHD_Connection *conn;
	struct op_buf pending;
	bool suspended, closed, gone;
	struct op_http_stream *next, *prev; /* srv->streams, under srv->streams_lock */
};

struct op_http_stream *op_http_reply_stream(struct op_http_reply *rep)
{
	if (rep->stream)
		return rep->stream;
	struct op_http_stream *st = op_calloc(1, sizeof(*st));
	pthread_mutex_init(&st->lock, NULL);
	atomic_init(&st->refs, 2);
	st->pending = OP_BUF_INIT(STREAM_BACKLOG_MAX);
	rep->stream = st;
	return st;
}

static void stream_unref(struct op_http_stream *st)
{
	if (atomic_fetch_sub(&st->refs, 1) != 1)
		return;
	op_buf_done(&st->pending);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* Under st->lock. */
static void stream_wake(struct op_http_stream *st)
{
	if (st->suspended && st->conn) {
		st->suspended = false;
		MHD_resume_connection(st->conn);
	}
}

int op_http_stream_write(struct op_http_stream *st, const char *data, size_t len)
{
	pthread_mutex_lock(&st->lock);
	int r = 0;
	if (st->gone || st->closed) {
		r = -EPIPE;
	} else if (op_buf_add(&st->pending, data, len) < 0) {
		st->closed = true; /* op_buf emptied itself: end the stream */
		r = -EMSGSIZE;
	}
	stream_wake(st);
	pthread_mutex_unlock(&st->lock);
	return r;
}

bool op_http_stream_gone(struct op_http_stream *st)
{
	pthread_mutex_lock(&st->lock);
	bool g = st->gone || st->closed;
	pthread_mutex_unlock(&st->lock);
	return g;
}

void op_http_stream_close(struct op_http_stream *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->closed = true;
	stream_wake(st);
	pthread_mutex_unlock(&st->lock);
	stream_unref(st);
}

/* MHD content reader: what is pending, else end (closed) or suspend until a
 * write (MHD allows suspending from the content reader callback). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct op_http_stream *st = cls;
	pthread_mutex_lock(&st->lock);
	ssize_t n = 0;
	if (st->pending.len) {
		size_t k = st->pending.len < max ? st->pending.len : max;
		memcpy(buf, st->pending.data, k);
		memmove(st->pending.data, st->pending.data + k, st->pending.len - k);
		st->pending.len -= k;
		st->pending.data[st->pending.len] = '\0';
		n = (ssize_t)k;
	} else if (st->closed || st->gone) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		st->suspended = true;
		MHD_suspend_connection(st->conn);
	}
	pthread_mutex_unlock(&st->lock);
	return n;
}

/* The response is destroyed: the request is over. */
static void stream_done(void *cls)
{
	struct op_http_stream *st = cls;
	struct op_http_server *srv = st->srv;
	pthread_mutex_lock(&srv->streams_lock);
	if (st->prev)
		st->prev->next = st->next;
	else
		srv->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	pthread_mutex_unlock(&srv->streams_lock);
	pthread_mutex_lock(&st->lock);
	st->gone = true;
	st->conn = NULL;
	pthread_mutex_unlock(&st->lock);
	stream_unref(st);
}

static enum MHD_Result queue_stream(struct MHD_Connection *conn, struct req_state *rq,
				    struct op_http_reply *rep)
{
	struct op_http_stream *st = rep->stream;
	struct op_http_server *srv = rq->srv;
	st->srv = srv;
	st->conn = conn;
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_done);
	if (!resp) {
		stream_unref(st); /* the server's reference; the producer's writes see gone */
		pthread_mutex_lock(&st->lock);
		st->gone = true;
		pthread_mutex_unlock(&st->lock);
		return MHD_NO;
	}
	pthread_mutex_lock(&srv->streams_lock);
	st->next = srv->streams;
	if (st->next)
		st->next->prev = st;
	srv->streams = st;
	pthread_mutex_unlock(&srv->streams_lock);
	enum MHD_Result ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
						     rep->content_type);
	if (ok == MHD_YES && rep->header_name && rep->header_value)
		ok = MHD_add_response_header(resp, rep->header_name, rep->header_value);
	if (ok == MHD_YES)
		ok = MHD_queue_response(conn, rep->status, resp);
	MHD_destroy_response(resp); /* stream_done runs when the connection lets go */
	if (ok == MHD_YES)
		rq->status = rep->status;
	return ok;
}

/* Server stopping: every stream ends (producers see gone). */
static void streams_end_all(struct op_http_server *srv)
{
	pthread_mutex_lock(&srv->streams_lock);
	for (struct op_http_stream *st = srv->streams; st; st = st->next) {
		pthread_mutex_lock(&st->lock);
		st->gone = true;
		stream_wake(st);
		pthread_mutex_unlock(&st->lock);
	}
	pthread_mutex_unlock(&srv->streams_lock);
}

static unsigned status_for_error(int r)
{
	return r == -EINVAL || r == -EBADMSG ? MHD_HTTP_BAD_REQUEST
	       : r == -ECANCELED	     ? MHD_HTTP_SERVICE_UNAVAILABLE
					     : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* Runs the route's handler; the result goes to rq->rc, rq->rep, rq->err. */
static void run_handler(struct op_http_server *srv, struct MHD_Connection *conn,
			struct req_state *rq)
{
	const struct op_http_route *rt = route_at(srv, rq->route);
	struct op_http_request req = {
		.method = rq->method,
		.path = rq->url,
		.body = op_buf_str(&rq->body),
		.body_len = rq->body.len,
		.peer = rq->peer,
		.conn = (struct op_http_conn *)conn,
	};
	rq->rep = (struct op_http_reply){
		.status = MHD_HTTP_OK,
		.content_type = "application/json",
		.body = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY),
	};
	rq->err = (struct op_err)OP_ERR_INIT;
	void *ud = rq->route < N_BUILTIN ? (void *)srv : srv->userdata;
	rq->rc = rt->fn(ud, &req, &rq->rep, &rq->err);
	op_buf_done(&rq->body); /* the request body is no longer needed */
}

/* Queues the response of a handler that has run. */
static enum MHD_Result queue_result(struct MHD_Connection *conn, struct req_state *rq)
{
	struct op_http_reply *rep = &rq->rep;
	int r = rq->rc;
	if (r < 0) {
		op_buf_done(&rep->body);
		if (rep->stream) { /* never queued: drop both references */
			op_http_stream_close(rep->stream);
			stream_unref(rep->stream);
			rep->stream = NULL;
		}
		return queue_error(conn, rq, status_for_error(r), NULL, false,
				   rq->err.code ? rq->err.msg : strerror(-r));
	}
	if (rep->stream) {
		op_buf_done(&rep->body);
		enum MHD_Result ok = queue_stream(conn, rq, rep);
		rep->stream = NULL;
		return ok;
	}
	enum MHD_Result ok = queue_reply(conn, rq, rep->status, rep->content_type, &rep->body,
					 NULL, false, rep->header_name, rep->header_value);
	op_buf_done(&rep->body);
	return ok;
}

/* Queue thread: the handler, then the connection goes back to its worker,
 * which calls on_request again and sends the result. */
static void job_run(struct op_job *job, void *ud)
{
	struct req_state *rq = (struct req_state *)((char *)job - offsetof(struct req_state, job));
	run_handler(ud, rq->conn, rq);
	rq->async = RQ_HANDLED;
	MHD_resume_connection(rq->conn);
}

/* Server stopping with the job still queued: 503 without running the handler. */
static void job_cancel(struct op_job *job, void *ud)
{
	struct req_state *rq = (struct req_state *)((char *)job - offsetof(struct req_state, job));
	op_buf_done(&rq->body);
	rq->rep = (struct op_http_reply){ .body = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY) };
	rq->err = (struct op_err)OP_ERR_INIT;
	rq->rc = op_err_set(&rq->err, -ECANCELED, "server stopping");
	rq->async = RQ_HANDLED;
	MHD_resume_connection(rq->conn);
}

static enum MHD_Result dispatch(struct op_http_server *srv, const struct listener *lst,
				struct MHD_Connection *conn, struct req_state *rq)
{
	if (rq->async == RQ_HANDLED)
		return queue_result(conn, rq);
	/* user routes go to the queue; the built-ins are cheap and answer here */
	if (lst == &srv->main && rq->route >= N_BUILTIN && srv->jobs.threads) {
		rq->async = RQ_QUEUED;
		rq->conn = conn;
		MHD_suspend_connection(conn);
		op_jobs_push(&srv->jobs, &rq->job);
		return MHD_YES;
	}
	run_handler(srv, conn, rq);
	return queue_result(conn, rq);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	const struct listener *lst = cls;
	struct op_http_server *srv = lst->srv;
	struct req_state *rq = *con_cls;

	if (!rq) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		rq = op_calloc(1, sizeof(*rq));
		rq->srv = srv;
		rq->cs = ci ? ci->socket_context : NULL;
		rq->start_ns = now_ns();
		rq->body = OP_BUF_INIT(srv->max_body);
		rq->method = op_strndup(method, 16);
		rq->path = op_strndup(url, MAX_LOGGED_PATH);
		rq->url = op_strdup(url);
		format_peer(conn, rq->peer, sizeof(rq->peer));
		*con_cls = rq;
		atomic_fetch_add_explicit(&srv->in_flight, 1, memory_order_relaxed);
		enum MHD_Result ok = first_call(lst, conn, rq, url, method);
		if (rq->status && rq->cs) /* answered early: no deadline while it is sent */
			op_conns_received(&rq->cs->link);
		return ok;
	}
	if (rq->status)
		return MHD_YES; /* answered early; MHD closes the connection */
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (!rq->too_big && op_buf_add(&rq->body, upload_data, n) < 0)
			rq->too_big = true; /* op_buf freed what it had */
		if (rq->too_big) {
			rq->discarded += n;
			if (rq->discarded > MAX_DISCARD)
				return MHD_NO;
		}
		return MHD_YES;
	}
	/* The whole request is in: the deadline stops while it is handled and answered. */
	if (rq->cs)
		op_conns_received(&rq->cs->link);
	if (rq->pending)
		return queue_pending(conn, rq);
	if (rq->too_big) {
		_cleanup_free_ char *m =
			op_asprintf("request body is over the %zu byte limit", srv->max_body);
		return queue_error(conn, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, true, m);
	}
	return dispatch(srv, lst, conn, rq);
}

static size_t code_index(unsigned status)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(counted_codes); i++)
		if (counted_codes[i] == status)
			return i;
	return N_CODES - 1;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	const struct listener *lst = cls;
	struct op_http_server *srv = lst->srv;
	struct req_state *rq = *con_cls;
	if (!rq)
		return;
	*con_cls = NULL;
	uint64_t end = now_ns();
	uint64_t ns = end - rq->start_ns;
	if (rq->cs) /* a kept-alive connection: the next request's deadline runs */
		op_conns_done_request(&srv->conns, &rq->cs->link, end);
	if (rq->status) {
		op_counter_add(&srv->requests[rq->route * N_CODES + code_index(rq->status)], 1);
		op_hist_observe(&srv->latency[rq->route], ns);
	}
	atomic_fetch_sub_explicit(&srv->in_flight, 1, memory_order_relaxed);

	bool failed = rq->status >= 400 || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK;
	if (failed || op_log_enabled(OP_LOG_DEBUG)) {
		char status[16], dur[32], out[32];
		snprintf(status, sizeof(status), "%u", rq->status);
		snprintf(dur, sizeof(dur), "%.3f", (double)ns / 1e6);
		snprintf(out, sizeof(out), "%zu", rq->bytes_out);
		const char *why = rq->error;
		if (!why && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
			why = "connection ended before the response was complete";
		op_log_kv(failed ? OP_LOG_WARN : OP_LOG_DEBUG, "http request", "method", rq->method,
			  "path", rq->path, "status", status, "duration_ms", dur, "bytes_out", out,
			  "peer", rq->peer, why ? "error" : NULL, why, (const char *)NULL);
	}
	op_buf_done(&rq->body);
	if (rq->async == RQ_HANDLED) { /* handled, never sent (the daemon stopped) */
		op_buf_done(&rq->rep.body);
		if (rq->rep.stream) {
			op_http_stream_close(rq->rep.stream);
			stream_unref(rq->rep.stream);
		}
	}
	free(rq->method);
	free(rq->path);
	free(rq->url);
	free(rq->error);
	free(rq->pending_allow);
	free(rq);
}

/* ---- connections and TLS -------------------------------------------------- */

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	const struct listener *lst = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct conn_state *cs = op_calloc(1, sizeof(*cs));
		cs->srv = lst->srv;
		op_conns_add(&cs->srv->conns, &cs->link, ci ? ci->connect_fd : -1, now_ns());
		*socket_context = cs;
		return;
	}
	struct conn_state *cs = *socket_context;
	if (!cs)
		return;
	/* MHD closes the descriptor after this returns: unregister it first. */
	op_conns_remove(&cs->srv->conns, &cs->link);
	op_tls_cred_unref(cs->cred);
	free(cs);
	*socket_context = NULL;
}

/* gnutls asks which certificate to present. MHD sets the session pointer to the
 * MHD connection; its socket context is our conn_state, which keeps the
 * credentials referenced until the connection closes. */
static int on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
		   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
		   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct MHD_Connection *conn = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *ci =
		conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
	struct conn_state *cs = ci ? ci->socket_context : NULL;
	if (!cs)
		return -1;
	if (!cs->cred) /* a renegotiation keeps the credentials of the first handshake */
		cs->cred = op_tls_slot_get(&cs->srv->slot);
	if (!cs->cred)
		return -1;
	*pcert = cs->cred->pcerts;
	*pcert_length = cs->cred->n_pcerts;
	*pkey = cs->cred->key;
	return 0;
}

/* At most MHD_LOG_BURST lines per MHD_LOG_WINDOW_NS. Returns whether to log, and
 * in *ret_dropped how many were dropped before this one. */
static bool mhd_log_admit(struct op_http_server *srv, uint64_t *ret_dropped)
{
	uint64_t now = now_ns();
	pthread_mutex_lock(&srv->log_lock);
	if (now >= srv->log_window_end_ns) {
		srv->log_window_end_ns = now + MHD_LOG_WINDOW_NS;
		}
	bool ok = srv->log_tokens > 0;
	if (ok) {
		srv->log_tokens--;
		*ret_dropped = srv->log_dropped;
		srv->log_dropped = 0;
	} else {
		srv->log_dropped++;
	}
	pthread_mutex_unlock(&srv->log_lock);
	return ok;
}

/* MHD's messages, rate-limited: a flood of refused connections ("Server reached
 * connection limit") must not turn into a flood of log lines. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt,
							      va_list ap)
{
	uint64_t dropped = 0;
	if (!mhd_log_admit(cls, &dropped))
		return;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (op_buf_vaddf(&b, fmt, ap) == 0) {
		while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
			b.data[--b.len] = '\0';
		char d[24];
		snprintf(d, sizeof(d), "%llu", (unsigned long long)dropped);
		op_log_warn("libmicrohttpd", "detail", op_buf_str(&b), dropped ? "dropped" : NULL,
			    d);
	}
	op_buf_done(&b);
}

/* ---- configuration -------------------------------------------------------- */

static int parse_port(const char *s, uint16_t *ret)
{
	uint64_t v = 0;
	if (!parse_content_length(s, &v) || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* "ADDR:PORT", "[V6]:PORT" or ":PORT" into a sockaddr. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, bool *ret_v6,
			struct op_err *err)
{
	_cleanup_free_ char *host = NULL;
	const char *port;
	memset(ss, 0, sizeof(*ss));
	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');
		if (!end || end[1] != ':')
			return op_err_set(err, -EINVAL, "listen address '%s': expected [ADDR]:PORT",
					  listen);
		host = op_strndup(listen + 1, (size_t)(end - listen - 1));
		port = end + 2;
	} else {
		const char *colon = strrchr(listen, ':');
		if (!colon)
			return op_err_set(err, -EINVAL, "listen address '%s': expected ADDR:PORT",
					  listen);
		host = op_strndup(listen, (size_t)(colon - listen));
		port = colon + 1;
	}
	uint16_t p;
	if (parse_port(port, &p) < 0)
		return op_err_set(err, -EINVAL, "listen address '%s': bad port '%s'", listen, port);
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (!*host) {
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		in->sin_port = htons(p);
		*ret_v6 = false;
	} else if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		*ret_v6 = false;
	} else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		*ret_v6 = true;
	} else {
		return op_err_set(err, -EINVAL, "listen address '%s': '%s' is not a numeric IP",
				  listen, host);
	}
	return 0;
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 16 ? 16 : (unsigned)n;
}

static void server_free_state(struct op_http_server *srv)
{
	if (srv->conns_ready)
		op_conns_done(&srv->conns);
	pthread_mutex_destroy(&srv->log_lock);
	op_tls_slot_done(&srv->slot);
	op_tls_files_done(&srv->files);
	free(srv->requests);
	free(srv->latency);
	free(srv->trust_pem);
	pthread_mutex_destroy(&srv->streams_lock);
	free(srv);
}

static int load_initial_cert(struct op_http_server *srv, const struct op_http_config *cfg,
			     struct op_err *err)
{
	bool pem = cfg->cert_pem || cfg->key_pem;
	bool files = cfg->cert_file || cfg->key_file;
	if (pem == files || (pem && !(cfg->cert_pem && cfg->key_pem)) ||
	    (files && !(cfg->cert_file && cfg->key_file)))
		return op_err_set(err, -EINVAL,
				  "http server: give either cert_pem+key_pem or cert_file+key_file");
	struct op_tls_cred *c = NULL;
	int r;
	if (pem) {
		r = op_tls_cred_load(cfg->cert_pem, strlen(cfg->cert_pem), cfg->key_pem,
				     strlen(cfg->key_pem), &c, err);
	} else {
		op_tls_files_init(&srv->files, cfg->cert_file, cfg->key_file);
		r = op_tls_files_load(&srv->files, true, &c, err);
	}
	if (r < 0)
		return r;
	op_tls_slot_swap(&srv->slot, c);
	return 0;
}

/* The trust list given to gnutls only makes it send a CertificateRequest; the
 * serving leaf stands in for it (nothing is verified against it). */
static int trust_from_leaf(struct op_http_server *srv, struct op_err *err)
{
	struct op_tls_cred *c = op_tls_slot_get(&srv->slot);
	gnutls_datum_t out = { NULL, 0 };
	int g = c ? gnutls_pem_base64_encode2("CERTIFICATE", &c->pcerts[0].cert, &out) : -1;
	op_tls_cred_unref(c);
	if (g < 0)
		return op_err_set(err, -EBADMSG, "http server: cannot encode the trust anchor");
	srv->trust_pem = op_strndup((const char *)out.data, out.size);
	gnutls_free(out.data);
	return 0;
}

static int listen_failed(const char *what, const char *listen, struct op_err *err)
{
	int e = errno ? errno : EADDRNOTAVAIL;
	return op_err_set(err, -e, "http server: cannot listen on %s (%s): %s", listen, what,
			  strerror(e));
}

static uint16_t bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	return di ? di->port : 0;
}

/* The HTTPS daemon, the probe daemon when asked for, then the deadline sweeper.
 * On failure what was started is stopped again. */
static int start_daemons(struct op_http_server *srv, const struct op_http_config *cfg,
			 struct sockaddr_storage *ss, bool v6, struct op_err *err)
{
	unsigned threads = cfg->threads ? cfg->threads : default_threads();
	unsigned idle_s = cfg->idle_timeout_s ? cfg->idle_timeout_s : DEFAULT_IDLE_TIMEOUT_S;
	unsigned per_ip = cfg->per_ip_limit ? cfg->per_ip_limit : DEFAULT_PER_IP_LIMIT;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TLS |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME |
			 (v6 ? MHD_USE_IPv6 : 0);
	srv->main = (struct listener){ .srv = srv, .n_routes = srv->n_paths - 1 };
	srv->probe = (struct listener){ .srv = srv, .n_routes = N_BUILTIN };
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv },
		{ MHD_OPTION_SOCK_ADDR, 0, ss },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)OP_HTTP_TLS_PRIORITY },
		{ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)on_cert },
		{ MHD_OPTION_CONNECTION_LIMIT,
		  cfg->connection_limit ? cfg->connection_limit : DEFAULT_CONNECTION_LIMIT, NULL },
		{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)per_ip, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_s, NULL },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, &srv->main },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, &srv->main },
		/* A trust list makes MHD ask for a client certificate (optional: a client
		 * without one still connects). Verification is per request. */
		{ srv->trust_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_CONNECTION_TIMEOUT,
		  srv->trust_pem ? 0 : (intptr_t)idle_s, srv->trust_pem },
		/* Keep last: a single thread means no pool, so the option is cut off. */
		{ threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	const char *listen = cfg->listen ? cfg->listen : DEFAULT_LISTEN;
	/* as many handler threads as workers, at least HANDLER_THREADS_MIN: every core
	 * runs handlers whatever worker holds the connections, and a handler that
	 * waits (a live request on slow instances) does not hold up the others */
	unsigned handlers = cfg->handler_threads ? cfg->handler_threads
			    : threads < HANDLER_THREADS_MIN ? HANDLER_THREADS_MIN
							    : threads;
	if (op_jobs_start(&srv->jobs, handlers, job_run, srv, err) < 0)
		return err->code;
	errno = 0;
	srv->main.daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, &srv->main,
					    MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!srv->main.daemon) {
		int r = listen_failed("https", listen, err);
		op_jobs_stop(&srv->jobs, job_cancel);
		return r;
	}
	srv->main.port = bound_port(srv->main.daemon);

	if (cfg->probe_listen) {
		struct sockaddr_storage pss;
		bool pv6 = false;
		int r = parse_listen(cfg->probe_listen, &pss, &pv6, err);
		if (r < 0)
			goto fail;
		unsigned pflags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
				  MHD_USE_ERROR_LOG | MHD_USE_ITC | (pv6 ? MHD_USE_IPv6 : 0);
		struct MHD_OptionItem popts[] = {
			{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv },
			{ MHD_OPTION_SOCK_ADDR, 0, &pss },
			{ MHD_OPTION_CONNECTION_LIMIT, PROBE_CONNECTION_LIMIT, NULL },
			{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)per_ip, NULL },
			{ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)idle_s, NULL },
			{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, &srv->probe },
			{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, &srv->probe },
			{ MHD_OPTION_END, 0, NULL },
		};
		errno = 0;
		srv->probe.daemon = MHD_start_daemon(pflags, 0, NULL, NULL, on_request, &srv->probe,
						     MHD_OPTION_ARRAY, popts, MHD_OPTION_END);
		if (!srv->probe.daemon) {
			listen_failed("probes", cfg->probe_listen, err);
			goto fail;
		}
		srv->probe.port = bound_port(srv->probe.daemon);
	}
	if (op_conns_start(&srv->conns, err) < 0)
		goto fail;
	return 0;
fail:
	if (srv->probe.daemon)
		MHD_stop_daemon(srv->probe.daemon);
	op_jobs_stop(&srv->jobs, job_cancel); /* resumes what it had before the stop */
	MHD_stop_daemon(srv->main.daemon);
	srv->probe.daemon = srv->main.daemon = NULL;
	return err->code ? err->code : -EINVAL;
}

int op_http_server_start(const struct op_http_config *cfg, struct op_http_server **ret_srv,
			 struct op_err *err)
{
	struct sockaddr_storage ss;
	bool v6 = false;
	int r = parse_listen(cfg->listen ? cfg->listen : DEFAULT_LISTEN, &ss, &v6, err);
	if (r < 0)
		return r;
	if (cfg->n_routes && !cfg->routes)
		return op_err_set(err, -EINVAL, "http server: n_routes without routes");

	struct op_http_server *srv = op_calloc(1, sizeof(*srv));
	op_tls_slot_init(&srv->slot);
	pthread_mutex_init(&srv->streams_lock, NULL);
	srv->user_routes = cfg->routes;
	srv->n_user = cfg->n_routes;
	srv->n_paths = N_BUILTIN + cfg->n_routes + 1;
	srv->requests = op_calloc(srv->n_paths * N_CODES, sizeof(*srv->requests));
	srv->latency = op_calloc(srv->n_paths, sizeof(*srv->latency));
	for (size_t i = 0; i < srv->n_paths; i++)
		op_hist_init(&srv->latency[i], &op_hist_bounds_http);
	atomic_init(&srv->ready, true);
	atomic_init(&srv->draining, false);
	srv->userdata = cfg->userdata;
	srv->ready_fn = cfg->ready_fn;
	srv->ready_userdata = cfg->ready_userdata ? cfg->ready_userdata : cfg->userdata;
	srv->max_body = cfg->max_body ? cfg->max_body : OP_BUF_MAX_HTTP_BODY;
	srv->drain_ms = cfg->drain_ms ? cfg->drain_ms : 5000;
	pthread_mutex_init(&srv->log_lock, NULL);
	unsigned req_s = cfg->request_timeout_s ? cfg->request_timeout_s : DEFAULT_REQUEST_TIMEOUT_S;
	op_conns_init(&srv->conns, (uint64_t)req_s * 1000000000u);
	srv->conns_ready = true;

	r = load_initial_cert(srv, cfg, err);
	if (r < 0) {
		server_free_state(srv);
		return r;
	}

	if (cfg->request_client_cert) {
		r = trust_from_leaf(srv, err);
		if (r < 0) {
			server_free_state(srv);
			return r;
		}
	}
	r = start_daemons(srv, cfg, &ss, v6, err);
	if (r < 0) {
		server_free_state(srv);
		return r;
	}
	*ret_srv = srv;
	return 0;
}

void op_http_server_free(struct op_http_server *srv)
{
	if (!srv)
		return;
	if (srv->main.daemon) {
		/* Not MHD_quiesce_daemon: in libmicrohttpd 0.9.75 it races the pool's
		 * workers taking the listening socket out of their epoll sets and
		 * aborts ("Failed to remove listen FD from epoll set", daemon.c:5531,
		 * test_support_http_limits under ASan in fresh-clone CI runs, also
		 * after the socket's close moved behind MHD_stop_daemon). While
		 * draining, a new connection is still accepted, and its answer says
		 * Connection: close (respond()). */
		atomic_store(&srv->draining, true);
		streams_end_all(srv); /* watches end now; their clients reconnect elsewhere */
		uint64_t deadline = now_ns() + (uint64_t)srv->drain_ms * 1000000u;
		while (atomic_load(&srv->in_flight) > 0 && now_ns() < deadline) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		/* Handlers still running finish; queued ones answer 503. Every
		 * suspended connection is resumed before MHD frees connections. */
		op_jobs_stop(&srv->jobs, job_cancel);
		MHD_stop_daemon(srv->main.daemon);
	}
	if (srv->probe.daemon) /* probes answer until the end of the drain */
		MHD_stop_daemon(srv->probe.daemon);
	server_free_state(srv);
}

uint16_t op_http_server_port(const struct op_http_server *srv)
{
	return srv->main.port;
}

uint16_t op_http_server_probe_port(const struct op_http_server *srv)
{
	return srv->probe.daemon ? srv->probe.port : 0;
}

int op_http_server_set_cert(struct op_http_server *srv, const char *cert_pem,
			    const char *key_pem, struct op_err *err)
{
	struct op_tls_cred *c = NULL;
	int r = op_tls_cred_load(cert_pem, cert_pem ? strlen(cert_pem) : 0, key_pem,
				 key_pem ? strlen(key_pem) : 0, &c, err);
	if (r < 0)
		return r;
	op_log_info("serving certificate replaced", "subject", c->subject);
	op_tls_slot_swap(&srv->slot, c);
	op_counter_add(&srv->cert_swaps, 1);
	return 0;
}

int op_http_server_reload_files(struct op_http_server *srv, bool force, struct op_err *err)
{
	if (!srv->files.cert_file)
		return op_err_set(err, -EINVAL, "http server: not started from certificate files");
	struct op_tls_cred *c = NULL;
	int r = op_tls_files_load(&srv->files, force, &c, err);
	if (r <= 0)
		return r;
	op_log_info("serving certificate reloaded", "subject", c->subject, "file",
		    srv->files.cert_file);
	op_tls_slot_swap(&srv->slot, c);
	op_counter_add(&srv->cert_swaps, 1);
	return 1;
}

void op_http_server_set_ready(struct op_http_server *srv, bool ready)
{
	atomic_store_explicit(&srv->ready, ready, memory_order_relaxed);
}

int op_http_server_render_metrics(struct op_http_server *srv, struct op_buf *out)
{
	static const char req[] = "pgop_http_requests_total";
	static const char lat[] = "pgop_http_request_duration_seconds";
	struct op_buf lb = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_metrics_header(out, req, "counter", "HTTP requests by path and status code.");
	for (size_t p = 0; !r && p < srv->n_paths; p++) {
		for (size_t c = 0; !r && c < N_CODES; c++) {
			uint64_t v = op_counter_get(&srv->requests[p * N_CODES + c]);
			if (!v)
				continue;
			op_buf_reset(&lb);
			r = op_buf_adds(&lb, "path=\"");
			if (!r)
				r = op_metrics_label_value(&lb, route_label(srv, p));
			if (!r && c < N_CODES - 1)
				r = op_buf_addf(&lb, "\",code=\"%u\"", counted_codes[c]);
			else if (!r)
				r = op_buf_adds(&lb, "\",code=\"other\"");
			if (!r)
				r = op_metrics_sample(out, req, lb.data, v);
		}
	}
	if (!r)
		r = op_metrics_header(out, lat, "histogram", "HTTP request latency by path.");
	for (size_t p = 0; !r && p < srv->n_paths; p++) {
		op_buf_reset(&lb);
		r = op_buf_adds(&lb, "path=\"");
		if (!r)
			r = op_metrics_label_value(&lb, route_label(srv, p));
		if (!r)
			r = op_buf_addc(&lb, '"');
		if (!r)
			r = op_metrics_hist(out, lat, lb.data, &srv->latency[p]);
	}
	op_buf_done(&lb);
	if (!r)
		r = op_metrics_header(out, "pgop_http_requests_in_flight", "gauge",
				      "HTTP requests being served.");
	if (!r) {
		int64_t v = atomic_load_explicit(&srv->in_flight, memory_order_relaxed);
		r = op_metrics_sample(out, "pgop_http_requests_in_flight", NULL,
				      v > 0 ? (uint64_t)v : 0);
	}
	if (!r)
		r = op_metrics_header(out, "pgop_http_tls_cert_swaps_total", "counter",
				      "Serving certificate replacements since start.");
	if (!r)
		r = op_metrics_sample(out, "pgop_http_tls_cert_swaps_total", NULL,
				      op_counter_get(&srv->cert_swaps));
	if (!r)
		r = op_metrics_header(out, "pgop_http_connections_open", "gauge",
				      "Open connections (HTTPS and probe listeners).");
	if (!r)
		r = op_metrics_sample(out, "pgop_http_connections_open", NULL,
				      atomic_load_explicit(&srv->conns.open, memory_order_relaxed));
	if (!r)
		r = op_metrics_header(out, "pgop_http_request_deadline_closes_total", "counter",
				      "Connections closed because a request did not arrive "
				      "whole within the request timeout.");
	if (!r)
		r = op_metrics_sample(out, "pgop_http_request_deadline_closes_total", NULL,
				      atomic_load_explicit(&srv->conns.cuts, memory_order_relaxed));
	struct op_tls_cred *cred = r ? NULL : op_tls_slot_get(&srv->slot);
	if (cred) {
		r = op_metrics_header(out, "pgop_certificate_expiry_timestamp_seconds", "gauge",
				      "Expiry (Unix seconds) of the certificates this process uses.");
		if (!r)
			r = op_metrics_sample(out, "pgop_certificate_expiry_timestamp_seconds",
					      "certificate=\"serving\"",
					      cred->not_after > 0 ? (uint64_t)cred->not_after : 0);
		op_tls_cred_unref(cred);
	}
	if (!r) /* the modules' own families (support/metrics.h collectors) */
		r = op_metrics_render_collectors(out);
	return r;
}

/* ---- request accessors ---------------------------------------------------- */

const char *op_http_header(const struct op_http_request *req, const char *name)
{
	if (!req->conn)
		return NULL;
	return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_HEADER_KIND,
					   name);
}

const char *op_http_query(const struct op_http_request *req, const char *key)
{
	if (!req->conn)
		return NULL;
	return MHD_lookup_connection_value((struct MHD_Connection *)req->conn,
					   MHD_GET_ARGUMENT_KIND, key);
}

struct each_ctx {
	op_http_header_fn fn;
	void *ud;
};

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct each_ctx *x = cls;
	return x->fn(x->ud, key, value ? value : "") == 0 ? MHD_YES : MHD_NO;
}

void op_http_headers_each(const struct op_http_request *req, op_http_header_fn fn, void *ud)
{
	if (!req->conn)
		return;
	struct each_ctx x = { fn, ud };
	MHD_get_connection_values((struct MHD_Connection *)req->conn, MHD_HEADER_KIND, each_header,
				  &x);
}

#define MAX_PEER_CHAIN 8u

int op_http_peer_verify(const struct op_http_request *req, const char *ca_pem, char *ret_cn,
			size_t cn_len, struct op_err *err)
{
	const union MHD_ConnectionInfo *ci =
		req->conn ? MHD_get_connection_info((struct MHD_Connection *)req->conn,
						    MHD_CONNECTION_INFO_GNUTLS_SESSION)
			  : NULL;
	gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	unsigned n = 0;
	const gnutls_datum_t *der = s ? gnutls_certificate_get_peers(s, &n) : NULL;
	if (!der || n == 0)
		return op_err_set(err, -ENOKEY, "no client certificate");
	if (n > MAX_PEER_CHAIN)
		return op_err_set(err, -EACCES, "client certificate chain of %u is over %u", n,
				  MAX_PEER_CHAIN);
	if (!ca_pem || !*ca_pem || strlen(ca_pem) > OP_TLS_MAX_PEM)
		return op_err_set(err, -EBADMSG, "no usable client CA");
	gnutls_x509_crt_t crts[MAX_PEER_CHAIN] = { 0 };
	gnutls_x509_trust_list_t tl = NULL;
	int r = 0;
	unsigned imported = 0;
	for (; imported < n; imported++) {
		if (gnutls_x509_crt_init(&crts[imported]) < 0 ||
		    gnutls_x509_crt_import(crts[imported], &der[imported], GNUTLS_X509_FMT_DER) < 0) {
			if (crts[imported])
				imported++;
			r = op_err_set(err, -EACCES, "client certificate %u unparsable", imported);
			goto out;
		}
	}
	if (gnutls_x509_trust_list_init(&tl, 0) < 0) {
		r = op_err_set(err, -ENOMEM, "gnutls_x509_trust_list_init failed");
		goto out;
	}
	gnutls_datum_t ca = { (unsigned char *)(uintptr_t)ca_pem, (unsigned)strlen(ca_pem) };
	if (gnutls_x509_trust_list_add_trust_mem(tl, &ca, NULL, GNUTLS_X509_FMT_PEM, 0, 0) <= 0) {
		r = op_err_set(err, -EBADMSG, "client CA bundle holds no certificate");
		goto out;
	}
	gnutls_typed_vdata_st purpose = { GNUTLS_DT_KEY_PURPOSE_OID,
					  (unsigned char *)(uintptr_t)GNUTLS_KP_TLS_WWW_CLIENT, 0 };
	unsigned status = 0;
	if (gnutls_x509_trust_list_verify_crt2(tl, crts, n, &purpose, 1, 0, &status, NULL) < 0 ||
	    status != 0) {
		r = op_err_set(err, -EACCES, "client certificate not trusted (status 0x%x)", status);
		goto out;
	}
	size_t sz = cn_len;
	if (gnutls_x509_crt_get_dn_by_oid(crts[0], GNUTLS_OID_X520_COMMON_NAME, 0, 0, ret_cn,
					  &sz) < 0) {
		if (cn_len)
			ret_cn[0] = '\0';
	}
out:
	if (tl)
		gnutls_x509_trust_list_deinit(tl, 1);
	for (unsigned i = 0; i < imported && i < MAX_PEER_CHAIN; i++)
		if (crts[i])
			gnutls_x509_crt_deinit(crts[i]);
	return r;
}
