/* support/http_server.h - the TLS HTTP server (libmicrohttpd + gnutls).
 *
 * One HTTPS listener with an internal thread pool (epoll), TLS 1.2+ only, a
 * certificate that can be replaced at run time, and a route table given by the
 * owner. Built in: GET /healthz, GET /readyz, GET /metrics (Prometheus text).
 *
 * Request handling, in order: unknown path -> 404; known path, other method ->
 * 405 with Allow; POST whose Content-Length is over the cap -> 413 before the
 * body is read (and 413 when a streamed body passes the cap); POST whose
 * Content-Type is present and not application/json -> 415 (none = JSON); then
 * the handler. A handler
 * returning -EINVAL (or -EBADMSG) becomes 400 with its op_err message, any other
 * failure 500.
 *
 * Certificates: the serving certificate lives in a swappable slot and is handed
 * to gnutls per handshake (MHD_OPTION_HTTPS_CERT_CALLBACK). A connection keeps a
 * reference to the credentials it handshook with until it closes, so a swap
 * never disturbs a handshake or a request in flight; the old credentials are
 * freed when their last connection closes.
 *
 * Abuse: connections per client IP are capped, a request must arrive whole
 * within request_timeout_s (trickling bytes does not extend it; see
 * support/http_conns.h), and an optional plain-HTTP probe listener keeps
 * /healthz, /readyz and /metrics answering while the HTTPS port is saturated.
 *
 * Threads: user handlers run on the server's handler threads, concurrently
 * (the connection is suspended meanwhile; built-in routes run on the
 * libmicrohttpd workers); the userdata they get is shared. All public functions are thread-safe.
 */
#ifndef PGOP_SUPPORT_HTTP_SERVER_H
#define PGOP_SUPPORT_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/buf.h"
#include "support/err.h"

/* TLS 1.2 and 1.3 only (gnutls priority string). */
#define OP_HTTP_TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"

struct op_http_server;
struct op_http_conn; /* the connection (opaque); NULL in requests built by tests */

/* What a handler sees. Every pointer is borrowed for the duration of the call. */
struct op_http_request {
	const char *method;
	const char *path;   /* without the query string (the full path, also for prefix routes) */
	const char *body;   /* NUL-terminated ("" when there is none) */
	size_t body_len;
	const char *peer;   /* "1.2.3.4:5678" or "[::1]:5678" */
	struct op_http_conn *conn; /* for the accessors below */
};

/* What a handler fills. Owned by the server; body is pre-initialised with the
 * response cap (OP_BUF_MAX_HTTP_BODY). */
struct op_http_reply {
	unsigned status;          /* default 200 */
	const char *content_type; /* static string; default "application/json" */
	struct op_buf body;
	/* One extra response header (e.g. Retry-After), both borrowed until the
	 * handler returns and copied; NULL = none. */
	const char *header_name, *header_value;
	struct op_http_stream *stream; /* set by op_http_reply_stream; owned by the server */
};

/* ---- streamed replies (watch) ----------------------------------------------
 * A handler may answer with a chunked stream instead of a body: it calls
 * op_http_reply_stream (status, content type and header as usual, body
 * ignored), hands the returned reference to a producer thread and returns.
 * The producer writes with op_http_stream_write and ends with
 * op_http_stream_close. While nothing is pending the connection is suspended
 * (no thread waits, no polling); a write resumes it. When the client goes
 * away or the server stops, writes fail with -EPIPE and op_http_stream_gone
 * turns true: the producer should close. */
struct op_http_stream;
/* Returns the producer's reference (release with op_http_stream_close). */
struct op_http_stream *op_http_reply_stream(struct op_http_reply *rep);
/* Appends a copy of data. -EPIPE: the client or server is gone; -EMSGSIZE:
 * more than 1 MiB waits unsent (a client not reading): the stream is ended. */
OP_MUST_CHECK int op_http_stream_write(struct op_http_stream *s, const char *data, size_t len);
bool op_http_stream_gone(struct op_http_stream *s);
/* Ends the stream after what is pending and drops the producer's reference. */
void op_http_stream_close(struct op_http_stream *s);

/* Returns 0 (reply filled) or -errno (err filled): -EINVAL/-EBADMSG -> 400,
 * anything else -> 500. userdata is op_http_config.userdata. */
typedef int (*op_http_handler_fn)(void *userdata, const struct op_http_request *req,
				  struct op_http_reply *reply, struct op_err *err);

struct op_http_route {
	const char *method; /* "GET" (also serves HEAD), "POST", ... */
	const char *path;   /* exact match, or a prefix when it ends in '*' ("/apis*") */
	op_http_handler_fn fn;
};

struct op_http_config {
	/* "ADDR:PORT": "0.0.0.0:9443", "127.0.0.1:0" (ephemeral), "[::]:9443", ":9443".
	 * NULL means "0.0.0.0:9443". */
	const char *listen;
	/* Certificate and key: PEM in memory, or files (reloadable, see
	 * op_http_server_reload_files). Exactly one pair. Borrowed: copied. */
	const char *cert_pem;
	const char *key_pem;
	const char *cert_file;
	const char *key_file;
	/* Routes besides the built-in ones. Borrowed: must outlive the server (a
	 * static const table). */
	const struct op_http_route *routes;
	size_t n_routes;
	void *userdata; /* passed to handlers (and ready_fn unless ready_userdata); borrowed */
	/* Optional readiness probe for /readyz (ANDed with op_http_server_set_ready). */
	bool (*ready_fn)(void *userdata);
	void *ready_userdata; /* for ready_fn; NULL = userdata */
	/* Ask every client for a certificate during the handshake (never required:
	 * clients without one still connect). Handlers check it with
	 * op_http_peer_verify against the CA they trust at that moment. */
	bool request_client_cert;
	/* libmicrohttpd's worker threads (TLS, HTTP parsing, sending); 0 = number of
	 * CPUs (max 16). */
	unsigned threads;
	/* Threads running the user routes' handlers (support/http_jobs.h): every
	 * request goes to them in arrival order whatever worker holds its
	 * connection. 0 = threads, at least 4. Built-in routes run on the workers. */
	unsigned handler_threads;
	unsigned connection_limit; /* concurrent HTTPS connections; 0 = 1024 */
	/* Concurrent connections from one client IP address, on each listener; more
	 * are closed at accept. 0 = 64. */
	unsigned per_ip_limit;
	/* A connection on which nothing is received or sent for this long is closed
	 * (libmicrohttpd's timeout; every byte resets it). 0 = 120 (above the
	 * kube-apiserver's 90 s for its kept connections). */
	unsigned idle_timeout_s;
	/* A request's headers and body must have arrived within this many seconds of
	 * the connection's accept (first request; the TLS handshake counts) or of the
	 * end of the previous response (next request on a kept-alive connection, so
	 * an idle kept-alive connection is closed after it too), however steadily
	 * bytes trickle in; otherwise the connection is closed. It does not bound
	 * the handler or the response. 0 = 10. */
	unsigned request_timeout_s;
	/* Optional second listener, plain HTTP, serving only GET /healthz, /readyz and
	 * /metrics (same state as the HTTPS ones), on its own thread with its own
	 * connection limit (256, per_ip_limit per IP): probes and scrapes answer while
	 * the HTTPS port is saturated. "ADDR:PORT" as listen; NULL = none. */
	const char *probe_listen;
	size_t max_body;           /* request body cap; 0 = OP_BUF_MAX_HTTP_BODY */
	unsigned drain_ms;         /* op_http_server_free waits this long for requests; 0 = 5000 */
};

/* Loads the certificate, binds and starts serving. On success *ret_srv is an
 * OWNED server (release with op_http_server_free). Errors: -EINVAL bad config
 * or listen address, -EBADMSG unusable certificate or key (err says which),
 * -ENOENT/-EACCES reading the files, -EADDRINUSE and friends from bind. */
OP_MUST_CHECK
int op_http_server_start(const struct op_http_config *cfg, struct op_http_server **ret_srv,
			 struct op_err *err);

/* Stops accepting, waits up to drain_ms for requests in flight, stops the
 * threads and frees everything. Accepts NULL. */
void op_http_server_free(struct op_http_server *srv);

/* The bound TCP port (useful after listening on port 0). */
uint16_t op_http_server_port(const struct op_http_server *srv);
/* The probe listener's bound port; 0 when there is none. */
uint16_t op_http_server_probe_port(const struct op_http_server *srv);

/* Replaces the serving certificate (PEM chain, leaf first) and key. New
 * handshakes use it at once; existing connections keep theirs. On failure
 * (-EBADMSG: unparsable, key does not match the leaf) the old one stays. */
OP_MUST_CHECK int op_http_server_set_cert(struct op_http_server *srv, const char *cert_pem,
					  const char *key_pem, struct op_err *err);

/* Re-reads cert_file/key_file given at start when either changed (inode,
 * size or mtime; a Kubernetes Secret volume swaps a symlink) or when force is
 * set. Returns 1 when the certificate was replaced, 0 when nothing changed,
 * -errno on failure (the old certificate stays; call again later: a pair caught
 * half-written fails the key match and is retried). -EINVAL when the server
 * was started from PEM in memory. */
OP_MUST_CHECK
int op_http_server_reload_files(struct op_http_server *srv, bool force, struct op_err *err);

/* Drives /readyz (initially true). Lock-free. */
void op_http_server_set_ready(struct op_http_server *srv, bool ready);

/* Appends the Prometheus text of this server's metrics to out:
 *   pgop_http_requests_total{path,code}, pgop_http_request_duration_seconds{path},
 *   pgop_http_requests_in_flight, pgop_http_tls_cert_swaps_total,
 *   pgop_http_connections_open, pgop_http_request_deadline_closes_total.
 * Returns 0 or -EMSGSIZE (out emptied). */
OP_MUST_CHECK int op_http_server_render_metrics(struct op_http_server *srv, struct op_buf *out);

/* ---- request accessors (handlers only, on the handler's thread) ---------- */

/* A request header (case-insensitive name), borrowed; NULL when absent. */
const char *op_http_header(const struct op_http_request *req, const char *name);
/* A decoded query argument, borrowed; NULL when absent (or given without "="). */
const char *op_http_query(const struct op_http_request *req, const char *key);
/* Calls fn for every request header in arrival order (repeated headers once
 * each); a non-zero return stops. */
typedef int (*op_http_header_fn)(void *ud, const char *name, const char *value);
void op_http_headers_each(const struct op_http_request *req, op_http_header_fn fn, void *ud);
/* Verifies the client certificate chain presented in the handshake against
 * ca_pem (a PEM bundle, borrowed) for client authentication and writes the
 * leaf's CN into ret_cn (NUL-terminated, "" when it has none). Returns 0,
 * -ENOKEY when the client sent no certificate, -EACCES when the chain does
 * not verify, -EBADMSG when ca_pem holds no certificate. */
OP_MUST_CHECK
int op_http_peer_verify(const struct op_http_request *req, const char *ca_pem, char *ret_cn,
			size_t cn_len, struct op_err *err);

#endif
