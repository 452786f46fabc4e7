/* tests/unit/test_instance_server.c - the instance status server over real
 * TLS sockets: probes, the operator-certificate rules of /pg/status (no
 * cert, other CA, other CN, no clientAuth, operator), the per-IP connection
 * cap, and certificate + CA rotation through inst_server_reload().
 * Certificates come from pki/. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "instance/internal.h"
#include "pki/pki.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/tcp_probe.h"
#include "support/tls_hello.h"
#include "tests/unit/test_tls_client.h"

static char dir[] = "/tmp/pgop-test-instsrv-XXXXXX";
static struct inst_run_opts opts;
static struct inst_state *st;
static struct inst_server *srv;
static struct pki_pair ca, ca2, rogue;

static char *path(const char *rel)
{
	return op_asprintf("%s/%s", dir, rel);
}

static void write_pem(const char *rel, const char *pem)
{
	char *p = path(rel);
	assert_int_equal(inst_write_file(p, pem, strlen(pem), 0600, NULL), 0);
	free(p);
}

/* Issues a leaf from `issuer` and writes NAME.crt / NAME.key. */
static void leaf(const struct pki_pair *issuer, const char *name, const char *cn, unsigned usage)
{
	static const char *const sans[] = { "127.0.0.1", "localhost" };
	struct pki_leaf_req req = { .cn = cn, .sans = sans, .n_sans = 2, .usage = usage,
				    .now = time(NULL) };
	struct pki_pair p = { 0 };
	struct op_err err = OP_ERR_INIT;
	if (pki_leaf_issue(issuer, &req, &p, &err))
		fail_msg("leaf %s: %s", name, err.msg);
	char *crt = op_asprintf("%s.crt", name), *key = op_asprintf("%s.key", name);
	write_pem(crt, p.cert_pem);
	write_pem(key, p.key_pem);
	free(crt);
	free(key);
	pki_pair_done(&p);
}

static void new_ca(const char *cn, struct pki_pair *ret)
{
	struct pki_ca_req req = { .cn = cn, .now = time(NULL) };
	assert_int_equal(pki_ca_create(&req, ret, NULL), 0);
}

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	curl_global_init(CURL_GLOBAL_ALL);
	new_ca("c", &ca);
	new_ca("c2", &ca2);
	new_ca("rogue", &rogue);
	write_pem("ca.crt", ca.cert_pem);
	write_pem("ca2.crt", ca2.cert_pem);
	write_pem("ca1.crt", ca.cert_pem);
	leaf(&ca, "server", "c-rw", PKI_USAGE_SERVER);
	leaf(&ca, "operator", INST_OPERATOR_CN, PKI_USAGE_CLIENT);
	leaf(&ca, "intruder", "streaming_replica", PKI_USAGE_CLIENT);
	leaf(&rogue, "rogue-operator", INST_OPERATOR_CN, PKI_USAGE_CLIENT);
	leaf(&ca2, "operator2", INST_OPERATOR_CN, PKI_USAGE_CLIENT);
	/* what an instance could present: its CA, the operator's CN, server use only */
	leaf(&ca, "server-eku", INST_OPERATOR_CN, PKI_USAGE_SERVER);
	/* The server reads copies that rotation replaces. */
	char *c = path("server.crt"), *k = path("server.key"), *t = path("ca.crt");
	opts = (struct inst_run_opts){ .pod_name = "c-1", .cluster_name = "c",
				       .paths.controller_dir = dir };
	st = inst_state_new(&opts);
	struct op_err err = OP_ERR_INIT;
	int r = inst_server_start("127.0.0.1:0", c, k, t, st, &srv, &err);
	free(c);
	free(k);
	free(t);
	if (r) {
		fprintf(stderr, "server: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	inst_server_free(srv);
	inst_state_free(st);
	pki_pair_done(&ca);
	pki_pair_done(&ca2);
	pki_pair_done(&rogue);
	curl_global_cleanup();
	char *cmd = op_asprintf("rm -rf '%s'", dir);
	int r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -1;
}

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
	return op_buf_add(ud, p, size * n) ? 0 : size * n;
}

/* Returns the HTTP status, or -1 when TLS/transport failed. client: name
 * of a leaf written by setup (NULL = no client certificate). */
static long req(const char *method, const char *url_path, const char *client, const char *cafile,
		struct op_buf *body)
{
	CURL *h = curl_easy_init();
	assert_non_null(h);
	char *url = op_asprintf("https://127.0.0.1:%u%s", inst_server_port(srv), url_path);
	char *ca_path = path(cafile ? cafile : "ca.crt");
	char *crt = NULL, *key = NULL;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca_path);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "POST") == 0)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
	if (client) {
		char *c = op_asprintf("%s.crt", client), *k = op_asprintf("%s.key", client);
		crt = path(c);
		key = path(k);
		free(c);
		free(k);
		curl_easy_setopt(h, CURLOPT_SSLCERT, crt);
		curl_easy_setopt(h, CURLOPT_SSLKEY, key);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	struct op_buf tmp = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body ? body : &tmp);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	long code = -1;
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	op_buf_done(&tmp);
	free(url);
	free(ca_path);
	free(crt);
	free(key);
	return code;
}

static void test_probes(void **state)
{
	inst_state_set(st, false, false);
	assert_int_equal(req("GET", "/healthz", NULL, NULL, NULL), 500);
	assert_int_equal(req("GET", "/readyz", NULL, NULL, NULL), 503);
	assert_int_equal(req("GET", "/startupz", NULL, NULL, NULL), 503);
	inst_state_set(st, true, true);
	assert_int_equal(req("GET", "/healthz", NULL, NULL, NULL), 200);
	assert_int_equal(req("GET", "/readyz", NULL, NULL, NULL), 200);
	assert_int_equal(req("GET", "/startupz", NULL, NULL, NULL), 200);
	assert_int_equal(req("GET", "/nope", NULL, NULL, NULL), 404);
	/* the state-changing endpoints are gone (the reconciler never called them) */
	assert_int_equal(req("POST", "/pg/promote", "operator", NULL, NULL), 404);
	assert_int_equal(req("POST", "/pg/restart", "operator", NULL, NULL), 404);
	/* No postgres behind it: 500 with the reason as JSON, for the operator only. */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(req("GET", "/pg/status", "operator", NULL, &b), 500);
	json_object *o = NULL;
	assert_int_equal(op_json_parse(b.data, b.len, 8, &o, NULL), 0);
	assert_non_null(strstr(op_json_str_at(o, "error"), "connect to"));
	assert_null(op_json_at(o, "restarting"));
	json_object_put(o);
	op_buf_done(&b);
	/* postgres restarting in place (a crash, or the manager just started): 503
	 * saying so, which holds the operator's failover off (reconciler/status.c) */
	inst_state_set_restarting(st, true);
	b = (struct op_buf)OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(req("GET", "/pg/status", "operator", NULL, &b), 503);
	assert_int_equal(op_json_parse(b.data, b.len, 8, &o, NULL), 0);
	assert_true(json_object_get_boolean(op_json_at(o, "restarting")));
	assert_non_null(strstr(op_json_str_at(o, "error"), "connect to"));
	json_object_put(o);
	op_buf_done(&b);
	inst_state_set_restarting(st, false);
	assert_int_equal(req("GET", "/pg/status", "operator", NULL, NULL), 500);
}

/* Issue 10 §3/§4: GET /pg/status was open to anyone and checked chain + CN only. */
static void test_operator_auth(void **state)
{
	static const struct {
		const char *client;
		long want;
	} t[] = {
		{ NULL, 401 },            /* no certificate */
		{ "rogue-operator", 401 }, /* another CA */
		{ "intruder", 403 },      /* streaming_replica */
		{ "server-eku", 403 },    /* the operator's CN without clientAuth */
		{ "operator", 500 },      /* allowed; no postgres behind it */
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++) {
		long code = req("GET", "/pg/status", t[i].client, NULL, NULL);
		if (code != t[i].want)
			fail_msg("GET /pg/status as %s: %ld, want %ld",
				 t[i].client ? t[i].client : "-", code, t[i].want);
	}
}

/* A TCP connection to the server (no TLS), or -1. */
static int tcp_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(inst_server_port(srv)) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* True when the server closed fd within timeout_ms (EOF or reset). */
static bool closed_by_server(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) <= 0)
		return false;
	char c;
	return read(fd, &c, 1) <= 0;
}

/* Issue 10 §4: one client cannot hold more than 8 connections (one thread
 * each); they are refused at once, and the probes answer again when the
 * client lets go. */
static void test_per_ip_cap(void **state)
{
	inst_state_set(st, true, true);
	int held[8];
	for (size_t i = 0; i < OP_ARRAY_SIZE(held); i++) {
		held[i] = tcp_connect();
		assert_true(held[i] >= 0);
	}
	usleep(200 * 1000); /* accepted by the daemon's thread */
	for (size_t i = 0; i < OP_ARRAY_SIZE(held); i++)
		assert_false(closed_by_server(held[i], 0));
	int extra = tcp_connect();
	assert_true(extra >= 0);
	assert_true(closed_by_server(extra, 2000));
	close(extra);
	for (size_t i = 0; i < OP_ARRAY_SIZE(held); i++)
		close(held[i]);
	long code = -1;
	for (int i = 0; i < 50 && code != 200; i++) {
		code = req("GET", "/healthz", NULL, NULL, NULL);
		if (code != 200)
			usleep(100 * 1000);
	}
	assert_int_equal(code, 200);
}

/* The operator's primary watch (reconciler/contact.c): the ClientHello gnutls
 * builds gets a ServerHello from the status server (a real answer, not a
 * close over garbage), op_tcp_probe_answer counts it, and many probes in a
 * row (each reset after the first byte) leave no connection behind to fill
 * the per-IP cap. */
static void test_watch_hello(void **state)
{
	(void)state;
	inst_state_set(st, true, true);
	unsigned char *hello = NULL;
	size_t len = 0;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_tls_client_hello(&hello, &len, &err), 0);
	assert_true(len > 5 && len <= OP_TLS_HELLO_MAX);
	assert_int_equal(hello[0], 0x16); /* a handshake record */
	assert_int_equal(hello[5], 0x01); /* ClientHello */
	int fd = tcp_connect();
	assert_true(fd >= 0);
	assert_int_equal(send(fd, hello, len, MSG_NOSIGNAL), (ssize_t)len);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	unsigned char head[6];
	size_t got = 0;
	while (got < sizeof(head)) {
		ssize_t n = read(fd, head + got, sizeof(head) - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_int_equal(head[0], 0x16); /* the server's handshake record */
	assert_int_equal(head[5], 0x02); /* ServerHello */
	close(fd);
	const char *hosts[] = { "127.0.0.1" };
	for (int i = 0; i < 20; i++) {
		int e = -1;
		assert_int_equal(op_tcp_probe_answer(hosts, 1, inst_server_port(srv), 1000, hello, len,
						     5000, &e),
				 1);
		assert_int_equal(e, 0);
	}
	free(hello);
	assert_int_equal(req("GET", "/healthz", NULL, NULL, NULL), 200);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the server closed fd within ms: end of file or reset (TLS bytes the
 * server sends, e.g. a session ticket, are read and ignored). */
static bool peer_gone(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return false;
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Issue 10 (the controller's slowloris class, here): a client that finished
 * the TLS handshake and trickles half a header one byte every 200 ms keeps
 * resetting the 10 s idle timeout; the request deadline still closes it 10 s
 * after the accept. Before the fix it held its thread, and one of the 8 slots
 * of its address, for as long as it trickled (the 25 s of this test). */
static void test_trickle_deadline(void **state)
{
	double t0 = mono_s();
	int fd = tcp_connect();
	assert_true(fd >= 0);
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	assert_int_equal(test_tls_client_open(fd, &s, &cred), 0);
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	assert_int_equal(gnutls_record_send(s, head, sizeof(head) - 1), (ssize_t)sizeof(head) - 1);
	bool closed = false;
	while (!closed && mono_s() - t0 < 25) {
		closed = peer_gone(fd, 200);
		if (!closed && gnutls_record_send(s, "a", 1) < 0)
			closed = true;
	}
	double lasted = mono_s() - t0;
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(fd);
	assert_true(closed);
	assert_true(lasted >= 9.5); /* the deadline, not sooner */
}

static void test_rotation(void **state)
{
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_server_reload(srv, &err), 0); /* nothing changed */
	uint16_t port = inst_server_port(srv);
	/* A key that does not match: refused, the old certificate keeps serving. */
	struct pki_pair other = { 0 };
	new_ca("x", &other);
	write_pem("server.key", other.key_pem);
	pki_pair_done(&other);
	assert_true(inst_server_reload(srv, &err) < 0);
	assert_int_equal(req("GET", "/healthz", NULL, NULL, NULL), 200);
	/* New CA and server certificate: same port, new chain, new client trust. */
	leaf(&ca2, "server", "c-rw", PKI_USAGE_SERVER);
	write_pem("ca.crt", ca2.cert_pem);
	op_err_clear(&err);
	int r = inst_server_reload(srv, &err);
	if (r != 1)
		fail_msg("reload: %d %s", r, err.msg);
	assert_int_equal(inst_server_port(srv), port);
	assert_int_equal(req("GET", "/healthz", NULL, "ca2.crt", NULL), 200);
	assert_int_equal(req("GET", "/healthz", NULL, "ca1.crt", NULL), -1);
	assert_int_equal(req("GET", "/pg/status", "operator", "ca2.crt", NULL), 401);
	assert_int_equal(req("GET", "/pg/status", "operator2", "ca2.crt", NULL), 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes),
		cmocka_unit_test(test_operator_auth),
		cmocka_unit_test(test_per_ip_cap),
		cmocka_unit_test(test_watch_hello),
		cmocka_unit_test(test_trickle_deadline),
		cmocka_unit_test(test_rotation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
