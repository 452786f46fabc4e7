/* Unit tests: reconciler/instance_client.c against real TLS servers
 * (support/http_server) with certificates from pki/: chain verification
 * without host name check, parallel fetches with per-instance deadlines. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
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

#include "reconciler/instance_client.h"
#include "support/json.h"
#include "support/alloc.h"
#include "support/http_server.h"

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int h_primary(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		     struct op_err *err)
{
	return op_buf_adds(&rep->body, "{\"isPrimary\":true,\"currentLsn\":\"0/3000060\","
				       "\"timeLineID\":1,\"replicationInfo\":"
				       "[{\"state\":\"streaming\"}]}");
}

static int h_slow(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		  struct op_err *err)
{
	usleep(2500 * 1000);
	return op_buf_adds(&rep->body, "{\"isPrimary\":false}");
}

static int h_garbage(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		     struct op_err *err)
{
	return op_buf_adds(&rep->body, "not json");
}

/* instance/server.c while postgres restarts in place */
static int h_restarting(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
			struct op_err *err)
{
	rep->status = 503;
	return op_buf_adds(&rep->body, "{\"error\":\"connect: no such file\",\"restarting\":true}");
}

static int h_unavailable(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
			 struct op_err *err)
{
	rep->status = 503;
	return op_buf_adds(&rep->body, "{\"error\":\"down\"}");
}

/* h_peer: records the client's address of each request (its source port tells
 * one TCP connection from another) */
static char peers[8][64];
static unsigned n_peers;
static int h_peer(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		  struct op_err *err)
{
	if (n_peers < 8)
		snprintf(peers[n_peers++], sizeof(peers[0]), "%s", req->peer);
	return op_buf_adds(&rep->body, "{\"isPrimary\":true,\"timeLineID\":1}");
}
static const struct op_http_route r_peer[] = { { "GET", "/pg/status", h_peer } };

/* instance/backupjob.c's answers: the job as JSON, 409 while another runs */
static int h_backup(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		    struct op_err *err)
{
	const char *name = op_http_query(req, "name");
	if (name && strcmp(name, "busy") == 0) {
		rep->status = 409;
		return op_buf_adds(&rep->body, "{\"error\":\"backup other is running\"}");
	}
	if (name && strcmp(name, "list") == 0)
		return op_buf_adds(&rep->body, "[1]");
	rep->status = 202; /* started (instance/server.c) */
	return op_buf_adds(&rep->body, "{\"name\":\"b\",\"phase\":\"running\"}");
}
static const struct op_http_route r_backup[] = { { "GET", "/pg/backup", h_backup } };

static const struct op_http_route r_restarting[] = { { "GET", "/pg/status", h_restarting } };
static const struct op_http_route r_unavailable[] = { { "GET", "/pg/status", h_unavailable } };
static const struct op_http_route r_primary[] = { { "GET", "/pg/status", h_primary } };
static const struct op_http_route r_slow[] = { { "GET", "/pg/status", h_slow } };
static const struct op_http_route r_garbage[] = { { "GET", "/pg/status", h_garbage } };

struct fixture {
	struct pki_pair ca, other_ca, server, other_server, client;
};

static void issue_server(const struct pki_pair *ca, struct pki_pair *out)
{
	/* SAN deliberately not 127.0.0.1: the client must not check host names */
	const char *sans[] = { "c-rw", "c-rw.ns.svc" };
	struct pki_leaf_req req = { .cn = "c-rw", .sans = sans, .n_sans = 2,
				    .usage = PKI_USAGE_SERVER, .now = time(NULL) };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_leaf_issue(ca, &req, out, &err), 0);
}

static int setup(void **state)
{
	struct fixture *f = op_calloc(1, sizeof(*f));
	struct op_err err = OP_ERR_INIT;
	struct pki_ca_req ca = { .cn = "c", .ou = "ns", .now = time(NULL) };
	assert_int_equal(pki_ca_create(&ca, &f->ca, &err), 0);
	ca.cn = "intruder";
	assert_int_equal(pki_ca_create(&ca, &f->other_ca, &err), 0);
	issue_server(&f->ca, &f->server);
	issue_server(&f->other_ca, &f->other_server);
	assert_int_equal(rc_operator_client_cert(&f->ca, time(NULL), &f->client, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	pki_pair_done(&f->ca);
	pki_pair_done(&f->other_ca);
	pki_pair_done(&f->server);
	pki_pair_done(&f->other_server);
	pki_pair_done(&f->client);
	free(f);
	return 0;
}

static struct op_http_server *serve(const struct pki_pair *cert, const struct op_http_route *r)
{
	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_pem = cert->cert_pem,
				      .key_pem = cert->key_pem, .routes = r, .n_routes = 1,
				      .threads = 2, .drain_ms = 100 };
	struct op_http_server *s = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_http_server_start(&cfg, &s, &err) < 0)
		fail_msg("server: %s", err.msg);
	return s;
}

static void test_client_cert(void **state)
{
	struct fixture *f = *state;
	struct pki_cert_info info;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_cert_info_parse(f->client.cert_pem, NULL, &info, &err), 0);
	assert_string_equal(info.subject_cn, "pgop-operator");
	assert_int_equal(info.usage, PKI_USAGE_CLIENT);
	assert_false(info.is_ca);
	pki_cert_info_done(&info);
	assert_int_equal(pki_verify(f->client.cert_pem, f->ca.cert_pem, time(NULL),
				    PKI_USAGE_CLIENT, &err),
			 0);
}

static void test_fetch_ok_and_failures(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *good = serve(&f->server, r_primary);
	struct op_http_server *bad = serve(&f->other_server, r_primary);
	struct op_http_server *junk = serve(&f->server, r_garbage);
	/* one server per port: each instance is a different "pod" on 127.0.0.1,
	 * so the port is part of the address here */
	struct rc_instance v[3] = {
		{ .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1") },
		{ .name = op_strdup("c-2"), .ip = op_strdup("127.0.0.1") },
		{ .name = op_strdup("c-3") }, /* no IP yet */
	};
	struct op_err err = OP_ERR_INIT;
	struct rc_fetch_opts o = { .timeout_ms = 2000, .port = op_http_server_port(good) };
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 3, &o, &err), 2);
	assert_true(v[0].has_status);
	assert_true(v[0].is_primary);
	assert_true(v[0].current_lsn == 0x3000060);
	assert_int_equal(v[0].streaming_replicas, 1);
	assert_null(v[0].error);
	assert_false(v[2].has_status);
	assert_string_equal(v[2].error, "no pod IP");

	/* a server whose certificate another CA signed is refused */
	o.port = op_http_server_port(bad);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 1, &o, &err), 0);
	assert_false(v[0].has_status);
	assert_non_null(v[0].error);

	/* a 200 that is not JSON is an error, not a status */
	o.port = op_http_server_port(junk);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, NULL, v, 1, &o, &err), 0);
	assert_non_null(strstr(v[0].error, "JSON"));

	/* 404 */
	o.port = op_http_server_port(good);
	o.path = "/nope";
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, NULL, v, 1, &o, &err), 0);
	assert_string_equal(v[0].error, "GET /nope: HTTP 404");

	/* 503 "restarting": no status, but the reconciler knows postgres restarts in
	 * place; a plain 503 (or the next answer) clears it */
	struct op_http_server *rst = serve(&f->server, r_restarting);
	struct op_http_server *down = serve(&f->server, r_unavailable);
	o.path = NULL;
	o.port = op_http_server_port(rst);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 1, &o, &err), 0);
	assert_false(v[0].has_status);
	assert_true(v[0].restarting);
	assert_string_equal(v[0].error, "GET /pg/status: HTTP 503");
	o.port = op_http_server_port(down);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 1, &o, &err), 0);
	assert_false(v[0].restarting);
	o.port = op_http_server_port(rst);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 1, &o, &err), 0);
	assert_true(v[0].restarting);
	o.port = op_http_server_port(good);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 1, &o, &err), 1);
	assert_true(v[0].has_status);
	assert_false(v[0].restarting);
	op_http_server_free(rst);
	op_http_server_free(down);

	assert_int_equal(rc_fetch_statuses(NULL, NULL, v, 1, &o, &err), -EINVAL);
	for (size_t i = 0; i < 3; i++)
		rc_instance_done(&v[i]);
	op_http_server_free(good);
	op_http_server_free(bad);
	op_http_server_free(junk);
}

/* raw: any JSON object is the answer (POST /pg/backup), kept whole; an
 * error status carries the answer's own words. */
static void test_fetch_raw(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *srv = serve(&f->server, r_backup);
	struct rc_instance v = { .name = op_strdup("c-2"), .ip = op_strdup("127.0.0.1") };
	struct op_err err = OP_ERR_INIT;
	struct rc_fetch_opts o = { .timeout_ms = 2000, .port = op_http_server_port(srv),
				   .path = "/pg/backup?name=b&id=20261207T050000",
				   .raw = true };
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 1);
	assert_true(v.has_status);
	assert_false(v.is_primary); /* nothing parsed as a status */
	assert_string_equal(op_json_str_at(v.doc, "phase"), "running");
	o.path = "/pg/backup?name=busy&id=20261207T050000";
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 0);
	assert_false(v.has_status);
	assert_string_equal(v.error, "GET /pg/backup: HTTP 409: backup other is running");
	o.path = "/pg/backup?name=list&id=20261207T050000";
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 0);
	assert_non_null(strstr(v.error, "not a JSON object"));
	rc_instance_done(&v);
	op_http_server_free(srv);
}

/* A silent instance (not known to answer) is asked only after a bare TCP
 * connect succeeded within RC_STATUS_CONNECT_SILENT_MS: one whose SYN is
 * dropped (a listener with a full accept queue, as a partitioned Pod) fails
 * fast with the probe's error, one that accepts is fetched as usual with its
 * whole timeout for the TLS handshake and the answer. */
static void test_silent_tcp_probe_first(void **state)
{
	struct fixture *f = *state;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 0), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	int filler = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0); /* queue full */
	struct rc_instance v = { .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1"),
				 .silent = true };
	struct rc_fetch_opts o = { .timeout_ms = 2000, .port = ntohs(a.sin_port) };
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = mono_ms();
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 0);
	int64_t took = mono_ms() - t0;
	assert_false(v.has_status);
	assert_non_null(strstr(v.error, "TCP connect to 127.0.0.1 port"));
	assert_true(took < 1500); /* the probe's 300 ms, not the 2 s timeout */
	close(filler);
	close(l);
	struct op_http_server *good = serve(&f->server, r_primary);
	o.port = op_http_server_port(good);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 1);
	assert_true(v.is_primary);
	rc_instance_done(&v);
	op_http_server_free(good);
}

/* A silent instance that accepts the TCP connect but never answers (a frozen
 * node: a listener that never accepts) is given up after
 * RC_STATUS_SILENT_WAIT_MS, not its whole timeout; one known to answer keeps
 * the timeout. */
static void test_silent_hung_given_up(void **state)
{
	struct fixture *f = *state;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 16), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	struct rc_instance v = { .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1"),
				 .silent = true };
	struct rc_fetch_opts o = { .timeout_ms = 3000, .port = ntohs(a.sin_port) };
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = mono_ms();
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 0);
	int64_t took = mono_ms() - t0;
	assert_false(v.has_status);
	assert_non_null(strstr(v.error, "silent last time"));
	assert_true(took >= RC_STATUS_SILENT_WAIT_MS);
	assert_true(took < 2000);
	v.silent = false;
	o.timeout_ms = 1000;
	t0 = mono_ms();
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 0);
	took = mono_ms() - t0;
	assert_non_null(strstr(v.error, "imeout"));
	assert_true(took >= 950);
	rc_instance_done(&v);
	close(l);
}

/* one fetch of instance c-1 (silent as given); 1 when it answered */
static int fetch_one(struct fixture *f, const struct pki_pair *client, unsigned port,
		     struct rc_status_pool *pool, bool silent)
{
	struct rc_instance v = { .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1"),
				 .silent = silent };
	struct rc_fetch_opts o = { .timeout_ms = 2000, .port = port, .pool = pool };
	struct op_err err = OP_ERR_INIT;
	int r = rc_fetch_statuses(f->ca.cert_pem, client, &v, 1, &o, &err);
	rc_instance_done(&v);
	return r;
}

static void test_pool_keeps_connections(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *s = serve(&f->server, r_peer);
	unsigned port = op_http_server_port(s);
	n_peers = 0;
	/* without a pool: a new connection each time */
	assert_int_equal(fetch_one(f, &f->client, port, NULL, false), 1);
	assert_int_equal(fetch_one(f, &f->client, port, NULL, false), 1);
	assert_int_equal(n_peers, 2);
	assert_string_not_equal(peers[0], peers[1]);
	/* with one: the second fetch reuses the first one's connection */
	struct rc_status_pool *pool = rc_status_pool_new();
	assert_int_equal(fetch_one(f, &f->client, port, pool, false), 1);
	assert_int_equal(fetch_one(f, &f->client, port, pool, false), 1);
	assert_int_equal(n_peers, 4);
	assert_string_equal(peers[2], peers[3]);
	/* a silent instance gets a fresh connection (its short connect timeout) */
	assert_int_equal(fetch_one(f, &f->client, port, pool, true), 1);
	assert_int_equal(n_peers, 5);
	assert_string_not_equal(peers[4], peers[3]);
	/* a new client certificate: the old connections are not used again */
	struct pki_pair other = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_operator_client_cert(&f->ca, time(NULL), &other, &err), 0);
	assert_int_equal(fetch_one(f, &other, port, pool, false), 1);
	assert_int_equal(n_peers, 6);
	assert_string_not_equal(peers[5], peers[4]);
	assert_string_not_equal(peers[5], peers[3]);
	/* a server the CA does not trust fails with the pool as without it, and the
	 * pool works again afterwards */
	struct op_http_server *bad = serve(&f->other_server, r_peer);
	assert_int_equal(fetch_one(f, &other, op_http_server_port(bad), pool, false), 0);
	assert_int_equal(n_peers, 6);
	assert_int_equal(fetch_one(f, &other, port, pool, false), 1);
	assert_int_equal(n_peers, 7);
	rc_status_pool_free(pool);
	rc_status_pool_free(NULL);
	pki_pair_done(&other);
	op_http_server_free(bad);
	op_http_server_free(s);
}

static void test_dead_instances_do_not_stall(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *slow = serve(&f->server, r_slow);
	enum { N = 4 };
	struct rc_instance v[N];
	for (int i = 0; i < N; i++)
		v[i] = (struct rc_instance){ .name = op_asprintf("c-%d", i + 1),
					     .ip = op_strdup("127.0.0.1") };
	struct op_err err = OP_ERR_INIT;
	struct rc_fetch_opts o = { .timeout_ms = 500, .port = op_http_server_port(slow) };
	int64_t t0 = mono_ms();
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, N, &o, &err), 0);
	int64_t took = mono_ms() - t0;
	/* four 2.5 s handlers, 500 ms each, in parallel: about 500 ms in total */
	assert_true(took >= 450);
	assert_true(took < 1500);
	for (int i = 0; i < N; i++) {
		assert_false(v[i].has_status);
		assert_non_null(strstr(v[i].error, "imeout"));
		rc_instance_done(&v[i]);
	}
	op_http_server_free(slow);
}

/* rc_fetch_opts.abandon: asked while the transfer runs; c-1 is given up on
 * its second question (mid-transfer: its handler takes 2.5 s), c-2 is never
 * and runs into its timeout. The fetch ends with c-2's timeout, not c-1's
 * (both 3 s would have been waited for without abandon). */
struct abandon_probe {
	int asked_c1;
	int asked_c2;
};

static bool abandon_c1(void *ctx, const struct rc_instance *in)
{
	struct abandon_probe *p = ctx;
	if (strcmp(in->name, "c-1") == 0)
		return ++p->asked_c1 >= 2;
	p->asked_c2++;
	return false;
}

static void test_fetch_abandon(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *slow = serve(&f->server, r_slow);
	struct rc_instance v[2] = {
		{ .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1") },
		{ .name = op_strdup("c-2"), .ip = op_strdup("127.0.0.1") },
	};
	struct abandon_probe p = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct rc_fetch_opts o = { .timeout_ms = 600, .port = op_http_server_port(slow),
				   .abandon = abandon_c1, .abandon_ctx = &p };
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, v, 2, &o, &err), 0);
	assert_int_equal(p.asked_c1, 2); /* not asked again once given up */
	assert_true(p.asked_c2 >= 2);
	assert_false(v[0].has_status);
	assert_non_null(strstr(v[0].error, "GET /pg/status: given up: it stopped accepting TCP "
					   "connects"));
	assert_false(v[1].has_status);
	assert_non_null(strstr(v[1].error, "imeout"));
	rc_instance_done(&v[0]);
	rc_instance_done(&v[1]);
	op_http_server_free(slow);
}

/* The chart runs the controller with readOnlyRootFilesystem and no writable
 * /tmp: fetching must not need $TMPDIR (it created a directory there with the
 * CA and the operator's client key on every call). Fails on the old code with
 * "mkdtemp ...: No such file or directory". */
static void test_fetch_needs_no_writable_tmpdir(void **state)
{
	struct fixture *f = *state;
	struct op_http_server *good = serve(&f->server, r_primary);
	char dir[] = "/tmp/pgop-test-rc-XXXXXX";
	assert_non_null(mkdtemp(dir));
	_cleanup_free_ char *gone = op_asprintf("%s/not-there", dir);
	const char *old = getenv("TMPDIR");
	_cleanup_free_ char *saved = old ? op_strdup(old) : NULL;
	setenv("TMPDIR", gone, 1);
	struct rc_instance v = { .name = op_strdup("c-1"), .ip = op_strdup("127.0.0.1") };
	struct op_err err = OP_ERR_INIT;
	struct rc_fetch_opts o = { .timeout_ms = 2000, .port = op_http_server_port(good) };
	int r = rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err);
	if (r != 1)
		fail_msg("fetch with no usable TMPDIR: %d %s %s", r, err.msg,
			 v.error ? v.error : "");
	assert_true(v.is_primary);
	/* and nothing was left in an existing TMPDIR either */
	setenv("TMPDIR", dir, 1);
	assert_int_equal(rc_fetch_statuses(f->ca.cert_pem, &f->client, &v, 1, &o, &err), 1);
	assert_int_equal(rmdir(dir), 0); /* fails with ENOTEMPTY if anything was written */
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	rc_instance_done(&v);
	op_http_server_free(good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_cert),
		cmocka_unit_test(test_fetch_ok_and_failures),
		cmocka_unit_test(test_fetch_raw),
		cmocka_unit_test(test_silent_tcp_probe_first),
		cmocka_unit_test(test_silent_hung_given_up),
		cmocka_unit_test(test_fetch_abandon),
		cmocka_unit_test(test_pool_keeps_connections),
		cmocka_unit_test(test_dead_instances_do_not_stall),
		cmocka_unit_test(test_fetch_needs_no_writable_tmpdir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
