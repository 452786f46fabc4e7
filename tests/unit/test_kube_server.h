/* tests/unit/test_kube_server.h - a scripted HTTPS API server for the kube/
 * tests (libmicrohttpd + gnutls self-signed certificate, thread per
 * connection so watch streams do not block other requests).
 * Included by tests/unit/test_kube*.c only; everything is static.
 */
#ifndef PGOP_TEST_KUBE_SERVER_H
#define PGOP_TEST_KUBE_SERVER_H

#pragma GCC diagnostic ignored "-Wunused-function"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/buf.h"

#define TS_MAX_LOG 512
#define TS_MAX_CHUNKS 32

struct ts_req {
	char *method;
	char *path;
	char *query; /* "k=v&k2=v2" (decoded values), "" when none */
	char *auth;  /* Authorization header or NULL */
	char *ctype; /* Content-Type or NULL */
	char *body;  /* "" when none */
	bool client_cert; /* a TLS client certificate was presented */
};

struct ts_resp {
	int status;
	char *body;               /* owned (free) or NULL */
	long retry_after;         /* seconds; -1 none */
	/* streaming (chunked) response: chunks sent in order, each after delay_ms */
	int nchunks;
	char *chunks[TS_MAX_CHUNKS]; /* owned */
	int delay_ms[TS_MAX_CHUNKS];
	int hold_ms;              /* after chunks, keep the stream open this long (keepalive "\n") */
	/* generated big body of 'x' */
	size_t big;
	bool big_chunked;
	bool close;               /* "Connection: close": the server closes after it */
};

struct ts;
typedef void (*ts_handler)(struct ts *s, const struct ts_req *req, struct ts_resp *resp);

struct ts {
	struct MHD_Daemon *d;
	unsigned port;
	char *cert_pem;
	char *key_pem;
	char dir[64];      /* temp dir holding ca.crt etc. */
	char ca_path[128];
	ts_handler handler;
	void *ud;
	pthread_mutex_t lock;
	struct ts_req log[TS_MAX_LOG];
	int nlog;
	atomic_size_t big_served;
	atomic_int streams_open;
	atomic_int streams_closed;
	atomic_int connections; /* TCP connections accepted */
};

/* ---- helpers ---- */

static char *ts_b64(const char *in, size_t len)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = op_malloc(((len + 2) / 3) * 4 + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)(unsigned char)in[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)in[i + 2];
		out[o++] = tbl[(v >> 18) & 63];
		out[o++] = tbl[(v >> 12) & 63];
		out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? tbl[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

static void ts_write_file(const char *path, const char *data)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs(data, f);
	fclose(f);
}

static int ts_read(const char *path, struct op_buf *b)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	op_buf_reset(b);
	char tmp[4096];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		if (op_buf_add(b, tmp, n) < 0)
			abort();
	fclose(f);
	return 0;
}

static void ts_sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static int64_t ts_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void ts_gen_cert(struct ts *s)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
	if (gnutls_x509_privkey_init(&key) < 0 ||
	    gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0)
		abort();
	if (gnutls_x509_crt_init(&crt) < 0)
		abort();
	time_t now = time(NULL);
	unsigned char serial[8] = { 1, 2, 3, 4, 5, 6, 7, (unsigned char)(now & 0x7f) };
	unsigned char ip[4] = { 127, 0, 0, 1 };
	if (gnutls_x509_crt_set_version(crt, 3) < 0 ||
	    gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)) < 0 ||
	    gnutls_x509_crt_set_activation_time(crt, now - 3600) < 0 ||
	    gnutls_x509_crt_set_expiration_time(crt, now + 86400) < 0 ||
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "kube-test", 9) < 0 ||
	    gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
						 GNUTLS_FSAN_APPEND) < 0 ||
	    gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
						 GNUTLS_FSAN_APPEND) < 0 ||
	    gnutls_x509_crt_set_basic_constraints(crt, 1, -1) < 0 ||
	    gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
						       GNUTLS_KEY_KEY_CERT_SIGN) < 0 ||
	    gnutls_x509_crt_set_key(crt, key) < 0 ||
	    gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0)
		abort();
	if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d) < 0)
		abort();
	s->cert_pem = op_strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	if (gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d) < 0)
		abort();
	s->key_pem = op_strndup((const char *)d.data, d.size);
	gnutls_free(d.data);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

/* ---- request plumbing ---- */

struct ts_conn {
	struct op_buf body;
};

static enum MHD_Result ts_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			      const char *value)
{
	struct op_buf *q = cls;
	if (q->len && op_buf_addc(q, '&') < 0)
		abort();
	if (op_buf_addf(q, "%s=%s", key, value ? value : "") < 0)
		abort();
	return MHD_YES;
}

struct ts_stream {
	struct ts *s;
	struct ts_resp r;
	int next;
	size_t off;     /* offset in current chunk */
	int64_t hold_until;
	bool delayed;
};

static void ts_resp_done(struct ts_resp *r)
{
	free(r->body);
	for (int i = 0; i < r->nchunks; i++)
		free(r->chunks[i]);
}

static ssize_t ts_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ts_stream *st = cls;
	if (st->next < st->r.nchunks) {
		if (!st->delayed) {
			ts_sleep_ms(st->r.delay_ms[st->next]);
			st->delayed = true;
		}
		const char *c = st->r.chunks[st->next];
		size_t left = strlen(c) - st->off;
		size_t n = left < max ? left : max;
		memcpy(buf, c + st->off, n);
		st->off += n;
		if (st->off >= strlen(c)) {
			st->next++;
			st->off = 0;
			st->delayed = false;
			if (st->next == st->r.nchunks)
				st->hold_until = ts_now_ms() + st->r.hold_ms;
		}
		if (n > 0)
			return (ssize_t)n;
	}
	if (st->r.nchunks == 0 && st->hold_until == 0)
		st->hold_until = ts_now_ms() + st->r.hold_ms;
	if (ts_now_ms() < st->hold_until) {
		ts_sleep_ms(100);
		buf[0] = '\n';
		return 1;
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void ts_stream_free(void *cls)
{
	struct ts_stream *st = cls;
	atomic_fetch_add(&st->s->streams_closed, 1);
	ts_resp_done(&st->r);
	free(st);
}

struct ts_big {
	struct ts *s;
	size_t total;
};

static ssize_t ts_big_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ts_big *b = cls;
	if (pos >= b->total)
		return MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = b->total - pos < max ? b->total - pos : max;
	memset(buf, 'x', n);
	atomic_fetch_add(&b->s->big_served, n);
	return (ssize_t)n;
}

static enum MHD_Result ts_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct ts *s = cls;
	struct ts_conn *cc = *con_cls;
	if (!cc) {
		cc = op_calloc(1, sizeof(*cc));
		op_buf_init(&cc->body, 4u << 20);
		*con_cls = cc;
		return MHD_YES;
	}
	if (*upload_size) {
		if (op_buf_add(&cc->body, upload, *upload_size) < 0)
			abort();
		*upload_size = 0;
		return MHD_YES;
	}
	struct op_buf q = OP_BUF_INIT(1u << 20);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, ts_arg, &q);
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	struct ts_req req = {
		.method = op_strdup(method),
		.path = op_strdup(url),
		.query = op_strdup(op_buf_str(&q)),
		.auth = auth ? op_strdup(auth) : NULL,
		.ctype = ct ? op_strdup(ct) : NULL,
		.body = op_strdup(op_buf_str(&cc->body)),
	};
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session) {
		unsigned int n = 0;
		req.client_cert = gnutls_certificate_get_peers(ci->tls_session, &n) && n > 0;
	}
	op_buf_done(&q);
	struct ts_resp r = { .status = 200, .retry_after = -1 };
	s->handler(s, &req, &r);
	pthread_mutex_lock(&s->lock);
	if (s->nlog < TS_MAX_LOG) {
		s->log[s->nlog++] = req;
	} else {
		free(req.method), free(req.path), free(req.query), free(req.auth), free(req.ctype),
			free(req.body);
	}
	pthread_mutex_unlock(&s->lock);

	struct MHD_Response *resp;
	if (r.big) {
		struct ts_big *b = op_calloc(1, sizeof(*b));
		b->s = s;
		b->total = r.big;
		resp = MHD_create_response_from_callback(r.big_chunked ? MHD_SIZE_UNKNOWN : r.big,
							 65536, ts_big_read, b, free);
	} else if (r.nchunks > 0 || r.hold_ms > 0) {
		struct ts_stream *st = op_calloc(1, sizeof(*st));
		st->s = s;
		st->r = r;
		memset(&r, 0, sizeof(r));
		atomic_fetch_add(&s->streams_open, 1);
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, ts_stream_read, st,
							 ts_stream_free);
		r.status = st->r.status;
	} else {
		const char *b = r.body ? r.body : "";
		resp = MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
	}
	if (!resp)
		abort();
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (r.close)
		MHD_add_response_header(resp, "Connection", "close");
	if (r.retry_after >= 0) {
		char v[32];
		snprintf(v, sizeof(v), "%ld", r.retry_after);
		MHD_add_response_header(resp, "Retry-After", v);
	}
	enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r.status, resp);
	MHD_destroy_response(resp);
	ts_resp_done(&r);
	return ret;
}

static void ts_notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
			   enum MHD_ConnectionNotificationCode toe)
{
	struct ts *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add(&s->connections, 1);
}

static void ts_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct ts_conn *cc = *con_cls;
	if (cc) {
		op_buf_done(&cc->body);
		free(cc);
		*con_cls = NULL;
	}
}

static struct ts *ts_start(ts_handler h, void *ud)
{
	struct ts *s = op_calloc(1, sizeof(*s));
	s->handler = h;
	s->ud = ud;
	pthread_mutex_init(&s->lock, NULL);
	ts_gen_cert(s);
	snprintf(s->dir, sizeof(s->dir), "/tmp/pgop-kube-test-XXXXXX");
	if (!mkdtemp(s->dir))
		abort();
	snprintf(s->ca_path, sizeof(s->ca_path), "%s/ca.crt", s->dir);
	ts_write_file(s->ca_path, s->cert_pem);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
					MHD_USE_TLS | MHD_USE_ERROR_LOG,
				0, NULL, NULL, ts_access, s, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_HTTPS_MEM_KEY, s->key_pem, MHD_OPTION_HTTPS_MEM_CERT,
				s->cert_pem, MHD_OPTION_HTTPS_MEM_TRUST, s->cert_pem,
				MHD_OPTION_NOTIFY_COMPLETED, ts_completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, ts_notify_conn, s,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
	if (!s->d)
		abort();
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di->port;
	return s;
}

static void ts_stop(struct ts *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	for (int i = 0; i < s->nlog; i++) {
		struct ts_req *r = &s->log[i];
		free(r->method), free(r->path), free(r->query), free(r->auth), free(r->ctype),
			free(r->body);
	}
	char p[256];
	static const char *const files[] = { "ca.crt", "kubeconfig", "token", "namespace",
					     "client.crt", "client.key" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", s->dir, files[i]);
		unlink(p);
	}
	rmdir(s->dir);
	pthread_mutex_destroy(&s->lock);
	free(s->cert_pem);
	free(s->key_pem);
	free(s);
}

/* Copy of log entry i (under the lock), -1 = last. Returns NULL if none. */
static int ts_count(struct ts *s)
{
	pthread_mutex_lock(&s->lock);
	int n = s->nlog;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static const struct ts_req *ts_at(struct ts *s, int i)
{
	pthread_mutex_lock(&s->lock);
	const struct ts_req *r = i < 0 ? (s->nlog ? &s->log[s->nlog - 1] : NULL)
				       : (i < s->nlog ? &s->log[i] : NULL);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Writes <dir>/kubeconfig with CA data and a token user; returns its path (static). */
static const char *ts_kubeconfig(struct ts *s, const char *token)
{
	static char path[256];
	char *ca = ts_b64(s->cert_pem, strlen(s->cert_pem));
	char *yaml = op_asprintf("apiVersion: v1\n"
				 "kind: Config\n"
				 "current-context: test\n"
				 "clusters:\n"
				 "- name: c1\n"
				 "  cluster:\n"
				 "    server: https://127.0.0.1:%u/\n"
				 "    certificate-authority-data: %s\n"
				 "contexts:\n"
				 "- name: test\n"
				 "  context:\n"
				 "    cluster: c1\n"
				 "    user: u1\n"
				 "    namespace: ns1\n"
				 "users:\n"
				 "- name: u1\n"
				 "  user:\n"
				 "    token: %s\n",
				 s->port, ca, token);
	snprintf(path, sizeof(path), "%s/kubeconfig", s->dir);
	ts_write_file(path, yaml);
	free(yaml);
	free(ca);
	return path;
}

static char *ts_status(int code, const char *reason, const char *msg)
{
	return op_asprintf("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
			   "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\","
			   "\"code\":%d}",
			   msg, reason, code);
}

#endif
