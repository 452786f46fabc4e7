/* tests/unit/test_support_http_limits.c - the HTTP server under abuse, over real
 * loopback sockets: the per-IP connection cap, the request deadline (a client
 * trickling a TLS handshake, half a header or a body is closed at the deadline
 * although every byte resets the idle timeout), what the deadline must not cut
 * (a slow handler, a kept-alive connection reused in time), and the plain-HTTP
 * probe listener answering while the HTTPS port is full.
 *
 * Times: request timeout 2 s, idle timeout 30 s, bytes trickled every 100 ms.
 * Nothing asserts speed: "closed within 10 s" can only fail when the
 * connection is never closed (the idle timeout would need 30 s of silence and
 * gets a byte every 100 ms), "not before 2 s" is the deadline itself. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "support/alloc.h"
#include "support/buf.h"
#include "support/http_server.h"
#include "support/log.h"
#include "tests/unit/test_http_cert.h"
#include "tests/unit/test_tls_client.h"

#define DEADLINE_S 2

static char *cert, *key, *ca;
/* A one-certificate CA file: without one libcurl parses the system bundle per
 * handle, after the TCP connect, which eats into the deadline under ASan. */
static char small_ca[] = "/tmp/pgop-http-limits-ca-XXXXXX";

static int sleepy(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		  struct op_err *err)
{
	struct timespec ts = { DEADLINE_S, 500 * 1000 * 1000 }; /* longer than the deadline */
	nanosleep(&ts, NULL);
	return op_buf_adds(&rep->body, "{\"slept\":true}");
}

static int echo(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		struct op_err *err)
{
	return op_buf_add(&rep->body, req->body, req->body_len);
}

static const struct op_http_route routes[] = {
	{ "GET", "/sleepy", sleepy },
	{ "POST", "/echo", echo },
};

/* request_timeout_s DEADLINE_S, unless a test holds idle connections on purpose (30). */
static struct op_http_server *start(unsigned per_ip, unsigned conn_limit, unsigned threads,
				    const char *probe, unsigned request_timeout_s)
{
	struct op_http_config cfg = {
		.listen = "127.0.0.1:0",
		.cert_pem = cert,
		.key_pem = key,
		.routes = routes,
		.n_routes = OP_ARRAY_SIZE(routes),
		.threads = threads,
		.connection_limit = conn_limit,
		.per_ip_limit = per_ip,
		.idle_timeout_s = 30,
		.request_timeout_s = request_timeout_s,
		.probe_listen = probe,
		.drain_ms = 100,
	};
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_http_server_start(&cfg, &srv, &err) < 0)
		fail_msg("start: %s", err.msg);
	return srv;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* The value of an unlabelled sample in the server's metrics text, or -1. */
static long long metric(struct op_http_server *srv, const char *name)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	assert_int_equal(op_http_server_render_metrics(srv, &b), 0);
	long long v = -1;
	size_t n = strlen(name);
	for (const char *p = op_buf_str(&b); p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			v = strtoll(p + n + 1, NULL, 10);
			break;
		}
	}
	op_buf_done(&b);
	return v;
}

/* Waits (up to 5 s) until the server counts `want` open connections. */
static void wait_open(struct op_http_server *srv, long long want)
{
	for (int i = 0; i < 500 && metric(srv, "pgop_http_connections_open") != want; i++)
		sleep_ms(10);
	assert_int_equal(metric(srv, "pgop_http_connections_open"), want);
}

/* A TCP connection from src (NULL = any) to 127.0.0.1:port; the socket or fails. */
static int tcp_connect(const char *src, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	if (src) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		inet_pton(AF_INET, src, &a.sin_addr);
		assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	}
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&d, sizeof(d)), 0);
	return fd;
}

/* Whether the peer closed fd within ms (end of file or reset). */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return false;
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* GET over HTTPS (no verification) or plain HTTP, from src (NULL = any), giving
 * up after timeout_s; the status, 0 when there was no answer. */
static long get_t(bool tls, uint16_t port, const char *path, const char *src, struct op_buf *out,
		  long timeout_s)
{
	char url[128];
	snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", tls ? "https" : "http", port, path);
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, small_ca);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (src)
		curl_easy_setopt(c, CURLOPT_INTERFACE, src);
	char *text = NULL;
	size_t text_len = 0;
	FILE *mem = open_memstream(&text, &text_len);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	long code = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	fclose(mem);
	if (out)
		assert_int_equal(op_buf_add(out, text, text_len), 0);
	free(text);
	curl_easy_cleanup(c);
	return code;
}

static long get(bool tls, uint16_t port, const char *path, const char *src, struct op_buf *out)
{
	return get_t(tls, port, path, src, out, 10);
}

/* ---- per-IP cap ----------------------------------------------------------- */

static void test_per_ip_limit(void **state)
{
	struct op_http_server *srv = start(4, 0, 2, NULL, 30);
	uint16_t port = op_http_server_port(srv);
	int held[4];
	for (int i = 0; i < 4; i++)
		held[i] = tcp_connect("127.0.0.1", port);
	wait_open(srv, 4);

	/* The fifth from the same address is closed at once; the four stay. */
	int extra = tcp_connect("127.0.0.1", port);
	assert_true(closed_within(extra, 5000));
	close(extra);
	for (int i = 0; i < 4; i++)
		assert_false(closed_within(held[i], 0));
	assert_int_equal(get(true, port, "/healthz", "127.0.0.1", NULL), 0);

	/* Another address (127.0.0.2 is loopback too) is served. */
	assert_int_equal(get(true, port, "/healthz", "127.0.0.2", NULL), 200);

	/* A slot freed is usable again. */
	close(held[0]);
	wait_open(srv, 3);
	assert_int_equal(get(true, port, "/healthz", "127.0.0.1", NULL), 200);
	for (int i = 1; i < 4; i++)
		close(held[i]);
	op_http_server_free(srv);
}

/* ---- request deadline ------------------------------------------------------ */

/* Sends one byte of data every 100 ms (data wraps around) until the server
 * closes the connection or 10 s pass; returns the seconds it lasted, or -1 when
 * it was never closed. send_fn returns < 0 once the connection is gone. */
typedef ssize_t (*send_fn)(void *ctx, const char *b, size_t n);

static double trickle(int fd, send_fn send_one, void *ctx, const char *data, double t0)
{
	size_t len = strlen(data);
	for (size_t i = 0; now_s() - t0 < 10; i++) {
		if (closed_within(fd, 100))
			return now_s() - t0;
		if (send_one(ctx, &data[i % len], 1) < 0)
			return now_s() - t0;
	}
	return -1;
}

static ssize_t raw_send(void *ctx, const char *b, size_t n)
{
	return send(*(int *)ctx, b, n, MSG_NOSIGNAL);
}

static ssize_t tls_send(void *ctx, const char *b, size_t n)
{
	ssize_t r = gnutls_record_send(ctx, b, n);
	return r < 0 ? -1 : r;
}

static void test_deadline_tls_half_header(void **state)
{
	struct op_http_server *srv = start(0, 0, 2, NULL, DEADLINE_S);
	double t0 = now_s();
	int fd = tcp_connect(NULL, op_http_server_port(srv));
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	assert_int_equal(test_tls_client_open(fd, &s, &cred), 0);

	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	assert_int_equal(gnutls_record_send(s, head, sizeof(head) - 1), (ssize_t)sizeof(head) - 1);
	double lasted = trickle(fd, tls_send, s, "abcdefgh", t0);
	assert_true(lasted > 0);    /* closed (-1: never) */
	assert_true(lasted >= DEADLINE_S); /* not before the deadline */
	assert_true(metric(srv, "pgop_http_request_deadline_closes_total") >= 1);
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(fd);
	op_http_server_free(srv);
}

static void test_deadline_tls_handshake(void **state)
{
	struct op_http_server *srv = start(0, 0, 2, NULL, DEADLINE_S);
	double t0 = now_s();
	int fd = tcp_connect(NULL, op_http_server_port(srv));
	/* A TLS handshake record announcing 512 bytes, then its body one byte at a time. */
	static const char rec[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01 };
	assert_int_equal(send(fd, rec, sizeof(rec), MSG_NOSIGNAL), (ssize_t)sizeof(rec));
	double lasted = trickle(fd, raw_send, &fd, "\x01", t0);
	assert_true(lasted > 0);
	assert_true(lasted >= DEADLINE_S);
	close(fd);
	op_http_server_free(srv);
}

/* The body is trickled by curl's read callback. */
struct slow_body {
	size_t left;
	double t0;
};

static size_t slow_read(char *buf, size_t size, size_t nitems, void *ud)
{
	struct slow_body *b = ud;
	if (!b->left || now_s() - b->t0 > 10)
		return 0;
	sleep_ms(100);
	buf[0] = ' ';
	b->left--;
	return 1;
}

static void test_deadline_slow_body(void **state)
{
	struct op_http_server *srv = start(0, 0, 2, NULL, DEADLINE_S);
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/echo", op_http_server_port(srv));
	CURL *c = curl_easy_init();
	struct slow_body b = { .left = 200, .t0 = now_s() };
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, small_ca);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)200);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, slow_read);
	curl_easy_setopt(c, CURLOPT_READDATA, &b);
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	double lasted = now_s() - b.t0;
	fclose(devnull);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	/* Cut before the 200 bytes (20 s) were sent: curl saw the connection go. */
	assert_int_not_equal(rc, CURLE_OK);
	assert_int_not_equal(code, 200);
	assert_true(b.left > 0);
	assert_true(lasted >= DEADLINE_S);
	assert_true(metric(srv, "pgop_http_request_deadline_closes_total") >= 1);
	op_http_server_free(srv);
}

/* The deadline bounds receiving only: a handler slower than it still answers;
 * a kept-alive connection reused before it is kept; one idle past it is closed
 * (curl then opens a new one). */
static void test_deadline_spares_handler_and_keepalive(void **state)
{
	struct op_http_server *srv = start(0, 0, 2, NULL, DEADLINE_S);
	char url[64], url2[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/sleepy", op_http_server_port(srv));
	snprintf(url2, sizeof(url2), "https://127.0.0.1:%u/healthz", op_http_server_port(srv));
	CURL *c = curl_easy_init();
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(c, CURLOPT_CAINFO, small_ca);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
	long code = 0, conns = 0;

	curl_easy_setopt(c, CURLOPT_URL, url);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	assert_int_equal(code, 200);

	sleep_ms(300);
	curl_easy_setopt(c, CURLOPT_URL, url2);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(conns, 0); /* the same connection */

	sleep_ms(DEADLINE_S * 1000 + 1500);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &conns);
	assert_int_equal(code, 200);
	assert_int_equal(conns, 1); /* the idle one was closed at its deadline */
	fclose(devnull);
	curl_easy_cleanup(c);
	op_http_server_free(srv);
}

/* ---- probe listener ---------------------------------------------------------- */

static void test_probe_listener(void **state)
{
	struct op_http_server *srv = start(0, 4, 1, "127.0.0.1:0", 30);
	uint16_t port = op_http_server_port(srv), pport = op_http_server_probe_port(srv);
	assert_true(pport > 0);
	assert_int_not_equal(pport, port);

	/* Fill the HTTPS port: libmicrohttpd stops accepting, a new HTTPS client waits in
	 * the listen backlog (here for the 30 s deadline of the held ones). */
	int held[4];
	for (int i = 0; i < 4; i++)
		held[i] = tcp_connect(NULL, port);
	wait_open(srv, 4);
	assert_int_equal(get_t(true, port, "/healthz", NULL, NULL, 1), 0);

	/* The probe port answers, over plain HTTP, the built-in routes only. */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	assert_int_equal(get(false, pport, "/healthz", NULL, &b), 200);
	assert_string_equal(op_buf_str(&b), "ok\n");
	op_buf_reset(&b);
	op_http_server_set_ready(srv, false);
	assert_int_equal(get(false, pport, "/readyz", NULL, NULL), 503);
	op_http_server_set_ready(srv, true);
	assert_int_equal(get(false, pport, "/readyz", NULL, NULL), 200);
	assert_int_equal(get(false, pport, "/metrics", NULL, &b), 200);
	assert_non_null(strstr(op_buf_str(&b), "pgop_http_connections_open "));
	assert_non_null(strstr(op_buf_str(&b), "pgop_http_request_deadline_closes_total "));
	op_buf_done(&b);
	assert_int_equal(get(false, pport, "/sleepy", NULL, NULL), 404);
	/* and is not TLS */
	assert_int_equal(get(true, pport, "/healthz", NULL, NULL), 0);

	for (int i = 0; i < 4; i++)
		close(held[i]);
	op_http_server_free(srv);

	/* Without probe_listen there is none. */
	srv = start(0, 0, 1, NULL, DEADLINE_S);
	assert_int_equal(op_http_server_probe_port(srv), 0);
	op_http_server_free(srv);

	/* A bad probe address fails the start. */
	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_pem = cert, .key_pem = key,
				      .probe_listen = "nowhere" };
	struct op_err err = OP_ERR_INIT;
	srv = NULL;
	assert_int_equal(op_http_server_start(&cfg, &srv, &err), -EINVAL);
	assert_null(srv);
}

static int setup_all(void **state)
{
	op_log_set_level(getenv("TEST_VERBOSE") ? OP_LOG_DEBUG : OP_LOG_ERROR);
	curl_global_init(CURL_GLOBAL_ALL);
	if (test_http_cert_make("pgop-limits", &cert, &key, &ca) < 0)
		return -1;
	int fd = mkstemp(small_ca);
	if (fd < 0)
		return -1;
	bool ok = write(fd, ca, strlen(ca)) == (ssize_t)strlen(ca);
	close(fd);
	return ok ? 0 : -1;
}

static int teardown_all(void **state)
{
	unlink(small_ca);
	free(cert);
	free(key);
	free(ca);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_ip_limit),
		cmocka_unit_test(test_deadline_tls_half_header),
		cmocka_unit_test(test_deadline_tls_handshake),
		cmocka_unit_test(test_deadline_slow_body),
		cmocka_unit_test(test_deadline_spares_handler_and_keepalive),
		cmocka_unit_test(test_probe_listener),
	};
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
