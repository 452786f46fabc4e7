/* tests/unit/test_support_http.c - the TLS HTTP server over real sockets:
 * routes and status codes, health, metrics, certificate hot swap (memory and
 * files), swaps under parallel load, TLS version floor, graceful stop. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
/* cmocka maps malloc/free to its test allocator under UNIT_TESTING; our
 * memory comes from libc (op_malloc, op_buf, gnutls). */
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "support/alloc.h"
#include "support/buf.h"
#include "support/http_server.h"
#include "support/http_tls.h"
#include "support/log.h"
#include "support/metrics.h"
#include "tests/unit/test_http_cert.h"

/* ---- fixtures: two certificates, routes -------------------------------- */

/* cert_x: the chain served (leaf + CA), key_x: the leaf key, ca_x: the CA alone. */
static char *cert_a, *key_a, *ca_a, *cert_b, *key_b, *ca_b;
/* A one-certificate CA file for clients that do not verify: without it libcurl
 * parses the whole system bundle for every handle (~60 ms each under ASan). */
static char small_ca[] = "/tmp/pgop-http-smallca-XXXXXX";

static int echo(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		struct op_err *err)
{
	if (req->body_len && req->body[0] != '{')
		return op_err_set(err, -EINVAL, "body must be a JSON object");
	return op_buf_add(&rep->body, req->body, req->body_len);
}

static int hello(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		 struct op_err *err)
{
	rep->content_type = "text/plain";
	rep->status = 202;
	return op_buf_addf(&rep->body, "hello %s", (const char *)ud);
}

static int slow(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		struct op_err *err)
{
	struct timespec ts = { 0, 400 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	return op_buf_adds(&rep->body, "{\"slow\":true}");
}

static int broken(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		  struct op_err *err)
{
	return op_err_set(err, -EIO, "backend exploded");
}

/* Two requests meet here: each waits (at most 5 s) until both are inside a
 * handler at the same time, and answers whether they met. */
static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static unsigned meet_inside;

static int meet(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		struct op_err *err)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&meet_lock);
	meet_inside++;
	pthread_cond_broadcast(&meet_cond);
	int rc = 0;
	while (meet_inside < 2 && rc == 0)
		rc = pthread_cond_timedwait(&meet_cond, &meet_lock, &until);
	bool met = meet_inside >= 2;
	pthread_mutex_unlock(&meet_lock);
	return op_buf_adds(&rep->body, met ? "{\"met\":true}" : "{\"met\":false}");
}

static const struct op_http_route routes[] = {
	{ "GET", "/meet", meet },
	{ "POST", "/echo", echo },
	{ "GET", "/hello", hello },
	{ "GET", "/slow", slow },
	{ "GET", "/broken", broken },
};

static bool ready_flag = true;
static bool ready_fn(void *ud)
{
	return ready_flag;
}

static struct op_http_server *start_pem(const char *cert, const char *key)
{
	struct op_http_config cfg = {
		.listen = "127.0.0.1:0",
		.cert_pem = cert,
		.key_pem = key,
		.routes = routes,
		.n_routes = OP_ARRAY_SIZE(routes),
		.userdata = (void *)"world",
		.ready_fn = ready_fn,
		.threads = 2,
	};
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = op_http_server_start(&cfg, &srv, &err);
	if (r < 0)
		fail_msg("start: %s", err.msg);
	assert_non_null(srv);
	assert_true(op_http_server_port(srv) > 0);
	return srv;
}

/* ---- client ------------------------------------------------------------- */

struct resp {
	long code;
	long new_connections; /* CURLINFO_NUM_CONNECTS: 0 when a kept-alive one was reused */
	struct op_buf body;
	char *subject; /* peer leaf subject from CURLINFO_CERTINFO */
	char *allow;
	bool conn_close; /* the response said Connection: close */
	int curl_rc;
};

static void resp_done(struct resp *r)
{
	op_buf_done(&r->body);
	free(r->subject);
	free(r->allow);
	memset(r, 0, sizeof(*r));
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	return op_buf_add(&r->body, p, sz * n) < 0 ? 0 : sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	if (sz * n > 6 && strncasecmp(p, "Allow:", 6) == 0) {
		const char *v = p + 6;
		while (*v == ' ')
			v++;
		size_t len = sz * n - (size_t)(v - p);
		while (len && (v[len - 1] == '\r' || v[len - 1] == '\n'))
			len--;
		free(r->allow);
		r->allow = op_strndup(v, len);
	}
	if (sz * n >= 17 && strncasecmp(p, "Connection: close", 17) == 0)
		r->conn_close = true;
	return sz * n;
}

struct req_opts {
	const char *method;
	const char *path;
	const char *content_type;
	const char *body;
	size_t body_len;
	bool chunked;
	const char *cafile; /* verify against this CA instead of not verifying */
	long tls_max;       /* CURL_SSLVERSION_MAX_* or 0 */
	long tls_min;
};

static int do_request(CURL *c, uint16_t port, const struct req_opts *o, struct resp *out)
{
	char url[128];
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL, *resolve = NULL;
	bool own = !c;
	if (own)
		c = curl_easy_init();
	memset(out, 0, sizeof(*out));
	out->body = OP_BUF_INIT(16u * 1024 * 1024);
	snprintf(url, sizeof(url), "https://%s:%u%s", o->cafile ? "localhost" : "127.0.0.1", port,
		 o->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (o->cafile) {
		char r[64];
		snprintf(r, sizeof(r), "localhost:%u:127.0.0.1", port);
		resolve = curl_slist_append(resolve, r);
		curl_easy_setopt(c, CURLOPT_CAINFO, o->cafile);
		curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
	} else {
		curl_easy_setopt(c, CURLOPT_CAINFO, small_ca);
		curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_SESSIONID_CACHE, 0L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (o->tls_min || o->tls_max)
		curl_easy_setopt(c, CURLOPT_SSLVERSION, o->tls_min | o->tls_max);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, o->method);
	if (o->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
	} else if (strcmp(o->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, o->method);
	}
	if (o->content_type) {
		char h[128];
		snprintf(h, sizeof(h), "Content-Type: %s", o->content_type);
		hdrs = curl_slist_append(hdrs, h);
	}
	if (o->chunked)
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);

	out->curl_rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->code);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &out->new_connections);
	struct curl_certinfo *ci = NULL;
	if (curl_easy_getinfo(c, CURLINFO_CERTINFO, &ci) == CURLE_OK && ci && ci->num_of_certs > 0) {
		for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next) {
			if (strncmp(s->data, "Subject:", 8) == 0) {
				out->subject = op_strdup(s->data + 8);
				break;
			}
		}
	}
	if (out->curl_rc != CURLE_OK && getenv("TEST_VERBOSE"))
		fprintf(stderr, "curl: %s\n", errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_RESOLVE, NULL);
	curl_slist_free_all(hdrs);
	curl_slist_free_all(resolve);
	if (own)
		curl_easy_cleanup(c);
	return out->curl_rc;
}

static long get(uint16_t port, const char *path, struct resp *out)
{
	struct req_opts o = { .method = "GET", .path = path };
	do_request(NULL, port, &o, out);
	return out->code;
}

static long post(uint16_t port, const char *path, const char *ctype, const char *body,
		 struct resp *out)
{
	struct req_opts o = { .method = "POST", .path = path, .content_type = ctype,
			      .body = body, .body_len = strlen(body) };
	do_request(NULL, port, &o, out);
	return out->code;
}

/* ---- tests -------------------------------------------------------------- */

static void test_routes_and_codes(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct resp r;

	assert_int_equal(post(port, "/echo", "application/json", "{\"a\":1}", &r), 200);
	assert_string_equal(op_buf_str(&r.body), "{\"a\":1}");
	resp_done(&r);
	assert_int_equal(post(port, "/echo", "application/json; charset=utf-8", "{}", &r), 200);
	resp_done(&r);

	assert_int_equal(get(port, "/hello", &r), 202);
	assert_string_equal(op_buf_str(&r.body), "hello world");
	resp_done(&r);

	struct req_opts head = { .method = "HEAD", .path = "/hello" };
	do_request(NULL, port, &head, &r);
	assert_int_equal(r.code, 202);
	assert_int_equal(r.body.len, 0);
	resp_done(&r);

	assert_int_equal(get(port, "/nope", &r), 404);
	assert_non_null(strstr(op_buf_str(&r.body), "\"code\":404"));
	resp_done(&r);
	assert_int_equal(get(port, "/echo/", &r), 404);
	resp_done(&r);

	assert_int_equal(get(port, "/echo", &r), 405);
	assert_non_null(r.allow);
	assert_string_equal(r.allow, "POST");
	resp_done(&r);
	assert_int_equal(post(port, "/hello", "application/json", "{}", &r), 405);
	assert_string_equal(r.allow, "GET, HEAD");
	resp_done(&r);

	assert_int_equal(post(port, "/echo", "text/plain", "{}", &r), 415);
	resp_done(&r);
	assert_int_equal(post(port, "/echo", "application/jsonx", "{}", &r), 415);
	resp_done(&r);
	struct req_opts noct = { .method = "POST", .path = "/echo", .body = "{}", .body_len = 2 };
	do_request(NULL, port, &noct, &r);
	/* curl adds application/x-www-form-urlencoded by default */
	assert_int_equal(r.code, 415);
	resp_done(&r);

	assert_int_equal(post(port, "/echo", "application/json", "[1]", &r), 400);
	assert_non_null(strstr(op_buf_str(&r.body), "body must be a JSON object"));
	resp_done(&r);

	assert_int_equal(get(port, "/broken", &r), 500);
	assert_non_null(strstr(op_buf_str(&r.body), "backend exploded"));
	resp_done(&r);

	op_http_server_free(srv);
}

/* Successful requests and 404/405 of a GET keep the connection open. */
static void test_keepalive(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	CURL *c = curl_easy_init();
	static const struct {
		const char *method, *path, *body;
		long code;
	} steps[] = {
		{ "GET", "/healthz", NULL, 200 },  { "GET", "/healthz", NULL, 200 },
		{ "GET", "/nope", NULL, 404 },     { "GET", "/echo", NULL, 405 },
		{ "POST", "/echo", "{}", 200 },    { "POST", "/echo", "{}", 200 },
		{ "GET", "/metrics", NULL, 200 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(steps); i++) {
		struct req_opts o = { .method = steps[i].method, .path = steps[i].path,
				      .body = steps[i].body,
				      .body_len = steps[i].body ? strlen(steps[i].body) : 0,
				      .content_type = steps[i].body ? "application/json" : NULL };
		struct resp r;
		do_request(c, port, &o, &r);
		assert_int_equal(r.code, steps[i].code);
		assert_false(r.conn_close);
		if (i > 0 && r.new_connections != 0)
			fail_msg("step %zu (%s %s) opened a new connection", i, steps[i].method,
				 steps[i].path);
		resp_done(&r);
	}
	curl_easy_cleanup(c);
	op_http_server_free(srv);
}

static void test_body_limit(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct resp r;
	size_t big = 4u * 1024 * 1024;
	char *body = op_malloc(big + 1);
	memset(body, ' ', big);
	body[0] = '{';
	body[big - 1] = '}';
	body[big] = '\0';

	/* Content-Length over the cap: rejected before the body is read. */
	struct req_opts o = { .method = "POST", .path = "/echo", .content_type = "application/json",
			      .body = body, .body_len = big };
	do_request(NULL, port, &o, &r);
	assert_int_equal(r.code, 413);
	resp_done(&r);

	/* Chunked, no Content-Length: rejected once the stream passes the cap. */
	o.chunked = true;
	do_request(NULL, port, &o, &r);
	assert_int_equal(r.code, 413);
	assert_non_null(strstr(op_buf_str(&r.body), "over the"));
	resp_done(&r);

	/* Exactly at the cap is fine. */
	size_t cap = OP_BUF_MAX_HTTP_BODY;
	body[cap - 1] = '}';
	o.chunked = false;
	o.body_len = cap;
	do_request(NULL, port, &o, &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.body.len, cap);
	resp_done(&r);
	free(body);

	/* And the server still serves. */
	assert_int_equal(post(port, "/echo", "application/json", "{}", &r), 200);
	resp_done(&r);
	op_http_server_free(srv);
}

static void test_health_and_ready(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct resp r;
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_string_equal(op_buf_str(&r.body), "ok\n");
	resp_done(&r);
	assert_int_equal(get(port, "/readyz", &r), 200);
	resp_done(&r);

	op_http_server_set_ready(srv, false);
	assert_int_equal(get(port, "/readyz", &r), 503);
	resp_done(&r);
	assert_int_equal(get(port, "/healthz", &r), 200); /* liveness is unaffected */
	resp_done(&r);
	op_http_server_set_ready(srv, true);
	ready_flag = false;
	assert_int_equal(get(port, "/readyz", &r), 503);
	resp_done(&r);
	ready_flag = true;
	assert_int_equal(get(port, "/readyz", &r), 200);
	resp_done(&r);
	op_http_server_free(srv);
}

static void test_metrics(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct resp r;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(post(port, "/echo", "application/json", "{}", &r), 200);
		resp_done(&r);
	}
	assert_int_equal(get(port, "/nope", &r), 404);
	resp_done(&r);
	assert_int_equal(get(port, "/echo", &r), 405);
	resp_done(&r);

	/* A request is counted when MHD reports it complete, which can be just after
	 * the client has its response: scrape until the figures settle (<= 2 s). */
	static const char *const want[] = {
		"# TYPE pgop_http_requests_total counter\n",
		"pgop_http_requests_total{path=\"/echo\",code=\"200\"} 3\n",
		"pgop_http_requests_total{path=\"/echo\",code=\"405\"} 1\n",
		"pgop_http_requests_total{path=\"unmatched\",code=\"404\"} 1\n",
		"# TYPE pgop_http_request_duration_seconds histogram\n",
		"pgop_http_request_duration_seconds_bucket{path=\"/echo\",le=\"+Inf\"} 4\n",
		"pgop_http_request_duration_seconds_count{path=\"/echo\"} 4\n",
		"pgop_http_requests_in_flight 1\n", /* this scrape */
		"pgop_http_tls_cert_swaps_total 0\n",
	};
	const char *missing = NULL;
	for (int attempt = 0; attempt < 100; attempt++) {
		assert_int_equal(get(port, "/metrics", &r), 200);
		missing = NULL;
		for (size_t i = 0; i < OP_ARRAY_SIZE(want) && !missing; i++)
			if (!strstr(op_buf_str(&r.body), want[i]))
				missing = want[i];
		resp_done(&r);
		if (!missing)
			break;
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (missing)
		fail_msg("/metrics never showed: %s", missing);
	op_http_server_free(srv);
}

static void test_cert_swap(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct op_err err = OP_ERR_INIT;
	struct resp r;

	/* A keep-alive connection opened before the swap. */
	CURL *keep = curl_easy_init();
	struct req_opts o = { .method = "GET", .path = "/healthz" };
	do_request(keep, port, &o, &r);
	assert_int_equal(r.code, 200);
	assert_non_null(r.subject);
	assert_non_null(strstr(r.subject, "pgop-test-a"));
	resp_done(&r);

	assert_int_equal(op_http_server_set_cert(srv, cert_b, key_b, &err), 0);
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_non_null(r.subject);
	assert_non_null(strstr(r.subject, "pgop-test-b"));
	resp_done(&r);

	/* The old connection still works (its credentials are still referenced). */
	do_request(keep, port, &o, &r);
	assert_int_equal(r.code, 200);
	resp_done(&r);
	curl_easy_cleanup(keep);

	/* Rejected swaps leave the current certificate in place. */
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, "garbage", key_a, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "certificate"));
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, cert_a, key_b, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "does not match"));
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, cert_a, "nope", &err), -EBADMSG);
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_non_null(strstr(r.subject, "pgop-test-b"));
	resp_done(&r);

	assert_int_equal(get(port, "/metrics", &r), 200);
	assert_non_null(strstr(op_buf_str(&r.body), "pgop_http_tls_cert_swaps_total 1\n"));
	resp_done(&r);
	op_http_server_free(srv);
}

/* What set_cert accepts and refuses, through the public API. */
static void test_cert_inputs(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	struct op_err err = OP_ERR_INIT;

	/* Leaf alone (no chain) is fine. */
	const char *end = strstr(cert_a, "-----END CERTIFICATE-----");
	assert_non_null(end);
	_cleanup_free_ char *leaf = op_strndup(cert_a, (size_t)(end - cert_a) + 26);
	assert_int_equal(op_http_server_set_cert(srv, leaf, key_a, &err), 0);

	/* CA first, leaf second: refused (the leaf must come first, sorted). */
	_cleanup_free_ char *ca_first = op_asprintf("%s%s", ca_a, leaf);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, ca_first, key_a, &err), -EBADMSG);

	/* Empty, NULL and oversized inputs. */
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, "", key_a, &err), -EBADMSG);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, cert_a, NULL, &err), -EBADMSG);
	size_t big = OP_TLS_MAX_PEM + 1;
	char *huge = op_malloc(big + 1);
	memset(huge, 'A', big);
	huge[big] = '\0';
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, huge, key_a, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "larger than"));
	free(huge);

	/* A certificate as key and a key as certificate. */
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, key_a, key_a, &err), -EBADMSG);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, cert_a, cert_a, &err), -EBADMSG);

	/* Still serving the last good one (the leaf of A). */
	struct resp r;
	assert_int_equal(get(op_http_server_port(srv), "/healthz", &r), 200);
	assert_non_null(strstr(r.subject, "pgop-test-a"));
	resp_done(&r);
	op_http_server_free(srv);
}

struct load {
	uint16_t port;
	int n;
	int ok;
	int failed;
};

static void *load_thread(void *arg)
{
	struct load *l = arg;
	for (int i = 0; i < l->n; i++) {
		struct resp r;
		struct req_opts o = { .method = "POST", .path = "/echo",
				      .content_type = "application/json", .body = "{\"x\":1}",
				      .body_len = 7 };
		do_request(NULL, l->port, &o, &r); /* fresh connection: a handshake each */
		if (r.code == 200 && r.curl_rc == CURLE_OK && r.subject)
			l->ok++;
		else
			l->failed++;
		resp_done(&r);
	}
	return NULL;
}

static void test_swap_under_load(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	enum { THREADS = 4, PER_THREAD = 100 };
	struct load l[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		l[i] = (struct load){ .port = op_http_server_port(srv), .n = PER_THREAD };
		assert_int_equal(pthread_create(&t[i], NULL, load_thread, &l[i]), 0);
	}
	int swaps = 0;
	for (int done = 0; !done; swaps++) {
		struct op_err err = OP_ERR_INIT;
		bool b = swaps % 2 == 0;
		assert_int_equal(op_http_server_set_cert(srv, b ? cert_b : cert_a,
							 b ? key_b : key_a, &err), 0);
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		done = 1;
		for (int i = 0; i < THREADS; i++)
			if (l[i].ok + l[i].failed < PER_THREAD)
				done = 0;
	}
	int ok = 0, failed = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ok += l[i].ok;
		failed += l[i].failed;
	}
	print_message("swap under load: %d swaps, %d ok, %d failed\n", swaps, ok, failed);
	assert_true(swaps > 5);
	assert_int_equal(failed, 0);
	assert_int_equal(ok, THREADS * PER_THREAD);
	op_http_server_free(srv);
}

static void write_file(const char *dir, const char *name, const char *data)
{
	char tmp[512], path[512];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(data, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0); /* a new inode, like a Secret volume swap */
}

static void test_reload_files(void **state)
{
	char dir[] = "/tmp/pgop-http-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cert[512], key[512];
	snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
	snprintf(key, sizeof(key), "%s/tls.key", dir);
	write_file(dir, "tls.crt", cert_a);
	write_file(dir, "tls.key", key_a);

	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_file = cert, .key_file = key,
				      .threads = 1 };
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_http_server_start(&cfg, &srv, &err), 0);
	uint16_t port = op_http_server_port(srv);
	struct resp r;
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_non_null(strstr(r.subject, "pgop-test-a"));
	resp_done(&r);

	assert_int_equal(op_http_server_reload_files(srv, false, &err), 0); /* unchanged */

	write_file(dir, "tls.crt", cert_b);
	/* Cert replaced but key not yet: the mismatch is refused, A keeps serving. */
	assert_true(op_http_server_reload_files(srv, false, &err) < 0);
	assert_non_null(strstr(err.msg, "does not match"));
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_non_null(strstr(r.subject, "pgop-test-a"));
	resp_done(&r);

	write_file(dir, "tls.key", key_b);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_reload_files(srv, false, &err), 1);
	assert_int_equal(op_http_server_reload_files(srv, false, &err), 0);
	assert_int_equal(op_http_server_reload_files(srv, true, &err), 1);
	assert_int_equal(get(port, "/healthz", &r), 200);
	assert_non_null(strstr(r.subject, "pgop-test-b"));
	resp_done(&r);

	unlink(key);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_reload_files(srv, false, &err), -ENOENT);
	assert_int_equal(get(port, "/healthz", &r), 200);
	resp_done(&r);

	op_http_server_free(srv);
	unlink(cert);
	rmdir(dir);

	/* PEM-started servers have no files to reload. */
	srv = start_pem(cert_a, key_a);
	err = OP_ERR_INIT;
	assert_int_equal(op_http_server_reload_files(srv, true, &err), -EINVAL);
	op_http_server_free(srv);
}

static void test_tls_versions_and_verification(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	uint16_t port = op_http_server_port(srv);
	struct resp r;

	/* TLS 1.1 and below are refused. */
	struct req_opts old = { .method = "GET", .path = "/healthz",
				.tls_min = CURL_SSLVERSION_TLSv1_0,
				.tls_max = CURL_SSLVERSION_MAX_TLSv1_1 };
	do_request(NULL, port, &old, &r);
	assert_int_not_equal(r.curl_rc, CURLE_OK);
	resp_done(&r);
	/* TLS 1.2 exactly works. */
	struct req_opts v12 = { .method = "GET", .path = "/healthz",
				.tls_min = CURL_SSLVERSION_TLSv1_2,
				.tls_max = CURL_SSLVERSION_MAX_TLSv1_2 };
	do_request(NULL, port, &v12, &r);
	assert_int_equal(r.code, 200);
	resp_done(&r);

	/* A verifying client that trusts CA a accepts the served chain for localhost. */
	char ca[] = "/tmp/pgop-http-ca-XXXXXX";
	int fd = mkstemp(ca);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, ca_a, strlen(ca_a)), (ssize_t)strlen(ca_a));
	close(fd);
	struct req_opts verified = { .method = "GET", .path = "/healthz", .cafile = ca };
	do_request(NULL, port, &verified, &r);
	assert_int_equal(r.curl_rc, CURLE_OK);
	assert_int_equal(r.code, 200);
	resp_done(&r);
	/* ... and rejects the server after a swap to a chain from another CA. */
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_http_server_set_cert(srv, cert_b, key_b, &err), 0);
	do_request(NULL, port, &verified, &r);
	assert_int_not_equal(r.curl_rc, CURLE_OK);
	resp_done(&r);
	unlink(ca);
	op_http_server_free(srv);
}

static void test_bad_config(void **state)
{
	struct op_http_server *srv = NULL;
	static const char *const bad_listen[] = { "nonsense", "127.0.0.1:99999", "localhost:1",
						  "[::1]8443", "1.2.3.4:", "1.2.3.4:12a" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad_listen); i++) {
		struct op_err err = OP_ERR_INIT;
		struct op_http_config cfg = { .listen = bad_listen[i], .cert_pem = cert_a,
					      .key_pem = key_a };
		assert_int_equal(op_http_server_start(&cfg, &srv, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "listen address"));
		assert_null(srv);
	}
	struct op_err err = OP_ERR_INIT;
	struct op_http_config both = { .listen = "127.0.0.1:0", .cert_pem = cert_a,
				       .key_pem = key_a, .cert_file = "/x", .key_file = "/y" };
	assert_int_equal(op_http_server_start(&both, &srv, &err), -EINVAL);
	err = OP_ERR_INIT;
	struct op_http_config none = { .listen = "127.0.0.1:0" };
	assert_int_equal(op_http_server_start(&none, &srv, &err), -EINVAL);
	err = OP_ERR_INIT;
	struct op_http_config missing = { .listen = "127.0.0.1:0", .cert_file = "/nonexistent/c",
					  .key_file = "/nonexistent/k" };
	assert_int_equal(op_http_server_start(&missing, &srv, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/c"));
	err = OP_ERR_INIT;
	struct op_http_config badpem = { .listen = "127.0.0.1:0", .cert_pem = "x", .key_pem = "y" };
	assert_int_equal(op_http_server_start(&badpem, &srv, &err), -EBADMSG);
	assert_null(srv);

	/* Port already in use. */
	struct op_http_server *a = start_pem(cert_a, key_a);
	char listen[32];
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", op_http_server_port(a));
	err = OP_ERR_INIT;
	struct op_http_config dup = { .listen = listen, .cert_pem = cert_a, .key_pem = key_a };
	assert_true(op_http_server_start(&dup, &srv, &err) < 0);
	assert_non_null(strstr(err.msg, "cannot listen"));
	op_http_server_free(a);

	op_http_server_free(NULL); /* accepted */
}

struct slow_client {
	uint16_t port;
	long code;
	bool conn_close;
};

static void *slow_thread(void *arg)
{
	struct slow_client *s = arg;
	struct resp r;
	get(s->port, "/slow", &r);
	s->code = r.code;
	s->conn_close = r.conn_close;
	resp_done(&r);
	return NULL;
}

static void test_graceful_stop(void **state)
{
	struct op_http_server *srv = start_pem(cert_a, key_a);
	struct slow_client s = { .port = op_http_server_port(srv) };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, slow_thread, &s), 0);
	/* Wait until the request is inside the handler (in-flight gauge 1). */
	bool inside = false;
	for (int i = 0; i < 1000 && !inside; i++) {
		struct op_buf m = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
		assert_int_equal(op_http_server_render_metrics(srv, &m), 0);
		inside = strstr(op_buf_str(&m), "pgop_http_requests_in_flight 1\n") != NULL;
		op_buf_done(&m);
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	assert_true(inside);
	op_http_server_free(srv); /* drains: the slow request still gets its 200 */
	pthread_join(t, NULL);
	assert_int_equal(s.code, 200);
	assert_true(s.conn_close); /* and is told not to come back on this connection */
}

struct meet_client {
	uint16_t port;
	long code;
	char body[32];
};

static void *meet_thread(void *arg)
{
	struct meet_client *m = arg;
	struct resp r;
	get(m->port, "/meet", &r);
	m->code = r.code;
	snprintf(m->body, sizeof(m->body), "%s", op_buf_str(&r.body));
	resp_done(&r);
	return NULL;
}

/* Handlers do not run on the worker that holds the connection: with ONE
 * libmicrohttpd thread, two requests are inside a handler at the same time
 * (before, the first blocked the only worker and the second waited for it). */
static void test_handlers_off_the_worker(void **state)
{
	struct op_http_config cfg = {
		.listen = "127.0.0.1:0",
		.cert_pem = cert_a,
		.key_pem = key_a,
		.routes = routes,
		.n_routes = OP_ARRAY_SIZE(routes),
		.threads = 1,
	};
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_http_server_start(&cfg, &srv, &err), 0);
	meet_inside = 0;
	struct meet_client m[2] = { { .port = op_http_server_port(srv) },
				    { .port = op_http_server_port(srv) } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, meet_thread, &m[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(m[i].code, 200);
		assert_string_equal(m[i].body, "{\"met\":true}");
	}
	/* the built-ins still answer on the worker */
	struct resp r;
	assert_int_equal(get(op_http_server_port(srv), "/healthz", &r), 200);
	resp_done(&r);
	op_http_server_free(srv);
}

static void test_ipv6_listen(void **state)
{
	struct op_http_config cfg = { .listen = "[::1]:0", .cert_pem = cert_a, .key_pem = key_a,
				      .threads = 1 };
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = op_http_server_start(&cfg, &srv, &err);
	if (r < 0) {
		print_message("no IPv6 loopback here: %s\n", err.msg);
		skip();
	}
	char url[64];
	snprintf(url, sizeof(url), "https://[::1]:%u/healthz", op_http_server_port(srv));
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	assert_int_equal(code, 200);
	curl_easy_cleanup(c);
	op_http_server_free(srv);
}

static void test_metrics_primitives(void **state)
{
	static const double le[] = { 0.001, 0.01 };
	static const struct op_hist_bounds bounds = { le, 2 };
	struct op_hist h;
	op_hist_init(&h, &bounds);
	op_hist_observe(&h, 500 * 1000);       /* 0.5 ms -> le 0.001 */
	op_hist_observe(&h, 1000 * 1000);      /* exactly 1 ms -> le 0.001 (inclusive) */
	op_hist_observe(&h, 5 * 1000 * 1000);  /* 5 ms -> le 0.01 */
	op_hist_observe(&h, 2000000000ull);    /* 2 s -> +Inf */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_metrics_hist(&b, "x_seconds", "path=\"/a\"", &h), 0);
	assert_string_equal(op_buf_str(&b),
			    "x_seconds_bucket{path=\"/a\",le=\"0.001\"} 2\n"
			    "x_seconds_bucket{path=\"/a\",le=\"0.01\"} 3\n"
			    "x_seconds_bucket{path=\"/a\",le=\"+Inf\"} 4\n"
			    "x_seconds_sum{path=\"/a\"} 2.006500000\n"
			    "x_seconds_count{path=\"/a\"} 4\n");
	op_buf_reset(&b);
	assert_int_equal(op_metrics_hist(&b, "y", NULL, &h), 0);
	assert_non_null(strstr(op_buf_str(&b), "y_bucket{le=\"+Inf\"} 4\ny_sum 2.006500000\ny_count 4\n"));
	op_buf_reset(&b);
	assert_int_equal(op_metrics_label_value(&b, "a\"b\\c\nd"), 0);
	assert_string_equal(op_buf_str(&b), "a\\\"b\\\\c\\nd");
	op_buf_reset(&b);
	assert_int_equal(op_metrics_sample(&b, "z_total", NULL, 7), 0);
	assert_int_equal(op_metrics_sample(&b, "z_total", "k=\"v\"", 8), 0);
	assert_string_equal(op_buf_str(&b), "z_total 7\nz_total{k=\"v\"} 8\n");
	op_buf_done(&b);

	/* A full buffer fails cleanly. */
	struct op_buf tiny = OP_BUF_INIT(16);
	assert_int_equal(op_metrics_hist(&tiny, "long_metric_name", NULL, &h), -EMSGSIZE);
	op_buf_done(&tiny);
}

static int collect_a(void *ud, struct op_buf *out)
{
	int r = op_metrics_header(out, "a_total", "counter", "A.");
	return r ? r : op_metrics_sample(out, "a_total", NULL, *(uint64_t *)ud);
}

/* Collectors: rendered in order after registration, gone after unregistration,
 * bounded; /metrics of a server renders them after its own families. */
static void test_metrics_collectors(void **state)
{
	uint64_t v = 42;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_metrics_register(collect_a, &v), 0);
	assert_int_equal(op_metrics_render_collectors(&b), 0);
	assert_string_equal(op_buf_str(&b), "# HELP a_total A.\n# TYPE a_total counter\na_total 42\n");
	struct op_http_server *srv = NULL;
	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_pem = cert_a, .key_pem = key_a,
				      .threads = 1 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_http_server_start(&cfg, &srv, &err), 0);
	op_buf_reset(&b);
	assert_int_equal(op_http_server_render_metrics(srv, &b), 0);
	const char *own = strstr(op_buf_str(&b), "pgop_http_tls_cert_swaps_total");
	const char *theirs = strstr(op_buf_str(&b), "a_total 42\n");
	assert_non_null(own);
	assert_non_null(theirs);
	assert_true(own < theirs);
	assert_non_null(strstr(op_buf_str(&b), "pgop_certificate_expiry_timestamp_seconds{certificate=\"serving\"} "));
	op_http_server_free(srv);
	op_metrics_unregister(collect_a, &v);
	op_buf_reset(&b);
	assert_int_equal(op_metrics_render_collectors(&b), 0);
	assert_string_equal(op_buf_str(&b), "");
	uint64_t n[OP_METRICS_MAX_COLLECTORS + 1];
	for (size_t i = 0; i < OP_METRICS_MAX_COLLECTORS; i++)
		assert_int_equal(op_metrics_register(collect_a, &n[i]), 0);
	assert_int_equal(op_metrics_register(collect_a, &n[OP_METRICS_MAX_COLLECTORS]), -ENOSPC);
	for (size_t i = 0; i < OP_METRICS_MAX_COLLECTORS; i++)
		op_metrics_unregister(collect_a, &n[i]);
	op_buf_done(&b);
}

static int setup_all(void **state)
{
	op_log_set_level(getenv("TEST_VERBOSE") ? OP_LOG_DEBUG : OP_LOG_ERROR);
	curl_global_init(CURL_GLOBAL_ALL);
	if (test_http_cert_make("pgop-test-a", &cert_a, &key_a, &ca_a) < 0 ||
	    test_http_cert_make("pgop-test-b", &cert_b, &key_b, &ca_b) < 0)
		return -1;
	int fd = mkstemp(small_ca);
	if (fd < 0)
		return -1;
	bool ok = write(fd, ca_a, strlen(ca_a)) == (ssize_t)strlen(ca_a);
	close(fd);
	return ok ? 0 : -1;
}

static int teardown_all(void **state)
{
	unlink(small_ca);
	free(cert_a);
	free(key_a);
	free(ca_a);
	free(cert_b);
	free(key_b);
	free(ca_b);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_and_codes),
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_health_and_ready),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_cert_swap),
		cmocka_unit_test(test_cert_inputs),
		cmocka_unit_test(test_swap_under_load),
		cmocka_unit_test(test_reload_files),
		cmocka_unit_test(test_tls_versions_and_verification),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_graceful_stop),
		cmocka_unit_test(test_handlers_off_the_worker),
		cmocka_unit_test(test_ipv6_listen),
		cmocka_unit_test(test_metrics_primitives),
		cmocka_unit_test(test_metrics_collectors),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
