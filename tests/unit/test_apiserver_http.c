/* Unit tests: the live API through the real HTTPS server (support/http_server
 * with request_client_cert) and curl clients with certificates from pki/:
 * front-proxy authentication (no certificate, another CA, a CN not allowed,
 * no user header -> 401), authorization (hook denies -> 403, system:masters
 * skips it, decisions cached), discovery v2 content type, Table vs List,
 * NotFound Status, 429 with Retry-After beyond the in-flight cap, and that
 * routes without client certificates (/healthz, the webhooks) keep working. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "apiserver/internal.h"
#include "pki/pki.h"
#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"
#include "test_http_cert.h"

static char dir[] = "/tmp/pgop-test-as-XXXXXX";
static char *front_ca_pem;
static struct op_http_server *srv;
static struct as_server *as;
static char *srv_chain, *srv_key; /* the server's certificate, for a second server */
static int authz_calls;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fetch_sleep_ms;

static const struct op_http_route routes[] = { AS_HTTP_ROUTES };

static void write_file(const char *name, const char *text)
{
	_cleanup_free_ char *p = op_asprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A client pair CN=cn from ca, written as <name>.crt/<name>.key. */
static void client_cert(const struct pki_pair *ca, const char *cn, const char *name)
{
	struct pki_leaf_req req = { .cn = cn, .usage = PKI_USAGE_CLIENT, .now = time(NULL),
				    .lifetime_s = PKI_DAY_S };
	struct pki_pair leaf = { 0 };
	assert_int_equal(pki_leaf_issue(ca, &req, &leaf, NULL), 0);
	_cleanup_free_ char *crt = op_asprintf("%s.crt", name), *key = op_asprintf("%s.key", name);
	write_file(crt, leaf.cert_pem);
	write_file(key, leaf.key_pem);
	pki_pair_done(&leaf);
}

static json_object *fake_clusters(void *ud, const char *ns)
{
	return json_tokener_parse("[{\"metadata\":{\"name\":\"pg\",\"namespace\":\"ns1\","
				  "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
				  "\"status\":{\"phase\":\"Cluster in healthy state\"}}]");
}

static json_object *fake_pods(void *ud, const char *ns, const char *cluster)
{
	return json_tokener_parse("[{\"metadata\":{\"name\":\"pg-1\",\"namespace\":\"ns1\"},"
				  "\"status\":{\"podIP\":\"10.0.0.1\"}}]");
}

static int timeline = 3;

static int fake_fetch(void *ud, const char *ns, const char *cluster, struct rc_live_instance *v,
		      size_t n, long timeout_ms, struct rc_status_pool *pool, struct op_err *err)
{
	pthread_mutex_lock(&mu);
	int ms = fetch_sleep_ms, tli = timeline;
	pthread_mutex_unlock(&mu);
	usleep((useconds_t)ms * 1000);
	char doc[128];
	snprintf(doc, sizeof(doc), "{\"isPrimary\":true,\"timeLineID\":%d,"
		 "\"currentLsn\":\"0/5000000\"}", tli);
	for (size_t i = 0; i < n; i++)
		v[i].doc = json_tokener_parse(doc);
	return (int)n;
}

/* The last action the fake reconciler was asked for. */
static struct {
	int calls;
	char ns[64], name[64], instance[256], user[64];
	enum as_action_kind kind;
	int answer; /* what it returns */
} act;

static int fake_act(void *ud, const char *ns, const char *name, const struct as_action *a,
		    const char *user, char **ret_msg, struct op_err *err)
{
	pthread_mutex_lock(&mu);
	act.calls++;
	snprintf(act.ns, sizeof(act.ns), "%s", ns);
	snprintf(act.name, sizeof(act.name), "%s", name);
	snprintf(act.instance, sizeof(act.instance), "%s", a->instance);
	snprintf(act.user, sizeof(act.user), "%s", user);
	act.kind = a->kind;
	int r = act.answer;
	pthread_mutex_unlock(&mu);
	*ret_msg = op_asprintf("fake answer %d for %s", r, a->instance);
	return r;
}

static int fake_authorize(void *ud, const struct as_user *u, const struct as_attrs *a,
			  char **ret_reason, struct op_err *err)
{
	pthread_mutex_lock(&mu);
	authz_calls++;
	pthread_mutex_unlock(&mu);
	if (strcmp(u->name, "alice") == 0)
		return 1;
	/* viewer: may read, not act (the chart's view vs edit roles) */
	if (strcmp(u->name, "viewer") == 0 && strcmp(a->verb, "create") != 0)
		return 1;
	*ret_reason = op_strdup("no RBAC");
	return 0;
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	char *chain = NULL, *key = NULL, *srv_ca = NULL;
	assert_int_equal(test_http_cert_make("pgop", &chain, &key, &srv_ca), 0);
	write_file("server-ca.crt", srv_ca);
	struct pki_pair fca = { 0 }, other = { 0 };
	struct pki_ca_req r1 = { .cn = "front-proxy-ca", .now = time(NULL), .lifetime_s = PKI_DAY_S };
	struct pki_ca_req r2 = { .cn = "other-ca", .now = time(NULL), .lifetime_s = PKI_DAY_S };
	assert_int_equal(pki_ca_create(&r1, &fca, NULL), 0);
	assert_int_equal(pki_ca_create(&r2, &other, NULL), 0);
	client_cert(&fca, "front-proxy-client", "proxy");
	client_cert(&fca, "someone-else", "wrongcn");
	client_cert(&other, "front-proxy-client", "otherca");
	front_ca_pem = op_strdup(fca.cert_pem);
	json_object *cm = json_object_new_object(), *data = json_object_new_object();
	op_jset(data, "requestheader-client-ca-file", json_object_new_string(fca.cert_pem));
	op_jset(data, "requestheader-allowed-names",
		json_object_new_string("[\"front-proxy-client\"]"));
	op_jset(cm, "data", data);
	struct as_config ac = {
		.source = { .clusters = fake_clusters, .pods = fake_pods, .fetch = fake_fetch,
			    .act = fake_act },
		.max_age_ms = 50,
		.timeout_ms = 2000,
		.max_inflight = 1,
		.authorize = fake_authorize,
		.requestheader_json = json_object_to_json_string(cm),
	};
	assert_int_equal(as_new(&ac, &as, NULL), 0);
	json_object_put(cm);
	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_pem = chain, .key_pem = key,
				      .routes = routes, .n_routes = OP_ARRAY_SIZE(routes),
				      .userdata = as, .request_client_cert = true, .threads = 4 };
	struct op_err err = OP_ERR_INIT;
	if (op_http_server_start(&cfg, &srv, &err) < 0)
		fail_msg("server: %s", err.msg);
	pki_pair_done(&fca);
	pki_pair_done(&other);
	srv_chain = chain;
	srv_key = key;
	free(srv_ca);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int teardown(void **state)
{
	op_http_server_free(srv);
	as_free(as);
	free(front_ca_pem);
	free(srv_chain);
	free(srv_key);
	_cleanup_free_ char *cmd = op_asprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	curl_global_cleanup();
	return 0;
}

struct resp {
	long code;
	struct op_buf body;
	char ctype[128];
	char retry_after[16];
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	return op_buf_add(&((struct resp *)ud)->body, p, sz * n) < 0 ? 0 : sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct resp *r = ud;
	size_t len = sz * n;
	if (len > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
		snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)(len - 15), p + 13);
	return len;
}

/* GET path with the client pair NAME (NULL = none) and extra headers. */
static CURL *request(const char *path, const char *pair, const char *const *hdrs,
		     struct resp *r, struct curl_slist **ret_list)
{
	CURL *c = curl_easy_init();
	_cleanup_free_ char *url =
		op_asprintf("https://127.0.0.1:%u%s", op_http_server_port(srv), path);
	_cleanup_free_ char *ca = op_asprintf("%s/server-ca.crt", dir);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	if (pair) {
		_cleanup_free_ char *crt = op_asprintf("%s/%s.crt", dir, pair);
		_cleanup_free_ char *key = op_asprintf("%s/%s.key", dir, pair);
		curl_easy_setopt(c, CURLOPT_SSLCERT, crt);
		curl_easy_setopt(c, CURLOPT_SSLKEY, key);
	}
	struct curl_slist *l = NULL;
	for (; hdrs && *hdrs; hdrs++)
		l = curl_slist_append(l, *hdrs);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, l);
	r->body = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	*ret_list = l;
	return c;
}

static json_object *get(const char *path, const char *pair, const char *const *hdrs,
			struct resp *r)
{
	struct curl_slist *l = NULL;
	CURL *c = request(path, pair, hdrs, r, &l);
	CURLcode cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		fail_msg("%s: %s", path, curl_easy_strerror(cc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
	char *ct = NULL;
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	snprintf(r->ctype, sizeof(r->ctype), "%s", ct ? ct : "");
	curl_slist_free_all(l);
	curl_easy_cleanup(c);
	json_object *o = json_tokener_parse(op_buf_str(&r->body));
	op_buf_done(&r->body);
	return o;
}

#define GV "/apis/live.postgresql.cnpg.io/v1"
static const char *const alice[] = { "X-Remote-User: alice", "X-Remote-Group: devs", NULL };

static void expect_status(json_object *o, const struct resp *r, long code, const char *reason)
{
	assert_int_equal(r->code, code);
	assert_non_null(o);
	assert_string_equal(op_json_str_at(o, "kind"), "Status");
	assert_string_equal(op_json_str_at(o, "reason"), reason);
	assert_int_equal(json_object_get_int(op_json_at(o, "code")), code);
}

static void test_authentication(void **state)
{
	struct resp r;
	json_object *o = get(GV "/namespaces/ns1/clusters", NULL, alice, &r);
	expect_status(o, &r, 401, "Unauthorized");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters", "otherca", alice, &r);
	expect_status(o, &r, 401, "Unauthorized");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters", "wrongcn", alice, &r);
	expect_status(o, &r, 401, "Unauthorized");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters", "proxy", NULL, &r); /* no X-Remote-User */
	expect_status(o, &r, 401, "Unauthorized");
	json_object_put(o);
	/* a route that is not the live API takes clients without certificates */
	o = get("/healthz", NULL, NULL, &r);
	assert_int_equal(r.code, 200);
	if (o)
		json_object_put(o);
}

/* Before the front-proxy configuration is loaded (no ConfigMap read yet): 503
 * with Retry-After, not 401 - kube-aggregator left the group out of discovery
 * for seconds after a 401 at start-up (test_helm_rotation) */
static void test_not_loaded_yet(void **state)
{
	struct as_config ac = {
		.source = { .clusters = fake_clusters, .pods = fake_pods, .fetch = fake_fetch,
			    .act = fake_act },
		.authorize = fake_authorize,
	};
	struct as_server *a2 = NULL;
	assert_int_equal(as_new(&ac, &a2, NULL), 0);
	struct op_http_config cfg = { .listen = "127.0.0.1:0", .cert_pem = srv_chain,
				      .key_pem = srv_key, .routes = routes,
				      .n_routes = OP_ARRAY_SIZE(routes), .userdata = a2,
				      .request_client_cert = true, .threads = 2 };
	struct op_http_server *s2 = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_http_server_start(&cfg, &s2, &err) < 0)
		fail_msg("server: %s", err.msg);
	struct op_http_server *keep = srv;
	srv = s2; /* request() asks the global server */
	struct resp r;
	json_object *o = get(GV "/namespaces/ns1/clusters", "proxy", alice, &r);
	srv = keep;
	expect_status(o, &r, 503, "ServiceUnavailable");
	assert_string_equal(r.retry_after, "1");
	json_object_put(o);
	op_http_server_free(s2);
	as_free(a2);
}

static void test_authorization(void **state)
{
	struct resp r;
	const char *const bob[] = { "X-Remote-User: bob", NULL };
	json_object *o = get(GV "/namespaces/ns1/clusters", "proxy", bob, &r);
	expect_status(o, &r, 403, "Forbidden");
	assert_non_null(strstr(op_json_str_at(o, "message"), "User \"bob\" cannot list resource "
							     "\"clusters\""));
	assert_non_null(strstr(op_json_str_at(o, "message"), "no RBAC"));
	json_object_put(o);
	int before = authz_calls;
	o = get(GV "/namespaces/ns1/clusters", "proxy", bob, &r); /* cached denial */
	expect_status(o, &r, 403, "Forbidden");
	json_object_put(o);
	assert_int_equal(authz_calls, before);
	const char *const master[] = { "X-Remote-User: system:kube-aggregator",
				       "X-Remote-Group: system:masters", NULL };
	o = get(GV, "proxy", master, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(op_json_str_at(o, "kind"), "APIResourceList");
	json_object_put(o);
	assert_int_equal(authz_calls, before); /* system:masters: no review */
}

static void test_resources(void **state)
{
	struct resp r;
	json_object *o = get(GV "/namespaces/ns1/clusters", "proxy", alice, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(op_json_str_at(o, "kind"), "LiveClusterList");
	json_object *item = json_object_array_get_idx(op_json_at(o, "items"), 0);
	assert_string_equal(op_json_str_at(item, "status.primary"), "pg-1");
	assert_string_equal(op_json_str_at(item, "status.ready"), "1/1");
	assert_int_equal(json_object_get_int(op_json_at(item, "status.timeline")), 3);
	json_object_put(o);

	const char *const table[] = { "X-Remote-User: alice",
				      "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,"
				      "application/json",
				      NULL };
	o = get(GV "/instances?labelSelector=cnpg.io%2Fcluster%21%3Dother", "proxy", table, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(op_json_str_at(o, "kind"), "Table");
	assert_int_equal(json_object_array_length(op_json_at(o, "rows")), 1);
	json_object_put(o);
	o = get(GV "/namespaces/ns1/instances?fieldSelector=metadata.name%3Dnope", "proxy", alice,
		&r);
	assert_int_equal(json_object_array_length(op_json_at(o, "items")), 0);
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters/nope", "proxy", alice, &r);
	expect_status(o, &r, 404, "NotFound");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters/pg/status", "proxy", alice, &r);
	assert_int_equal(r.code, 200);
	assert_non_null(op_json_at(o, "status.members"));
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters?fieldSelector=spec.x%3D1", "proxy", alice, &r);
	expect_status(o, &r, 400, "BadRequest");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters?labelSelector=a%20in%20(", "proxy", alice, &r);
	expect_status(o, &r, 400, "BadRequest");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters?watch=true&labelSelector=a%20in%20(", "proxy", alice,
		&r);
	expect_status(o, &r, 400, "BadRequest");
	json_object_put(o);
	o = get(GV "/namespaces/ns1/clusters/pg?watch=nope", "proxy", alice, &r);
	assert_int_equal(r.code, 200); /* a named GET stays a GET */
	json_object_put(o);
	const char *const v2[] = { "X-Remote-User: alice",
				   "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as="
				   "APIGroupDiscoveryList,application/json",
				   NULL };
	o = get("/apis", "proxy", v2, &r);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.ctype, AS_V2_CONTENT_TYPE);
	json_object_put(o);
}

struct par {
	struct resp r;
	long code;
};

static void *par_main(void *arg)
{
	struct par *p = arg;
	struct curl_slist *l = NULL;
	CURL *c = request(GV "/namespaces/ns1/clusters", "proxy", alice, &p->r, &l);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &p->code);
	curl_slist_free_all(l);
	curl_easy_cleanup(c);
	return NULL;
}

/* POST path with body (ctype NULL = no Content-Type header at all). */
static json_object *post(const char *path, const char *const *hdrs, const char *ctype,
			 const char *body, struct resp *r)
{
	const char *h[8];
	size_t k = 0;
	for (; hdrs && *hdrs && k < 5; hdrs++)
		h[k++] = *hdrs;
	_cleanup_free_ char *ct = ctype ? op_asprintf("Content-Type: %s", ctype) : NULL;
	h[k++] = ct ? ct : "Content-Type:"; /* "Content-Type:" makes curl send none */
	h[k] = NULL;
	struct curl_slist *l = NULL;
	CURL *c = request(path, "proxy", h, r, &l);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	CURLcode cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		fail_msg("%s: %s", path, curl_easy_strerror(cc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
	curl_slist_free_all(l);
	curl_easy_cleanup(c);
	json_object *o = json_tokener_parse(op_buf_str(&r->body));
	op_buf_done(&r->body);
	return o;
}

static void test_actions(void **state)
{
	struct resp r;
	const char *sw = GV "/namespaces/ns1/clusters/pg/switchover";
	/* no Content-Type (kubectl create --raw -f): read as JSON, accepted */
	json_object *o = post(sw, alice, NULL, "{\"target\":\"pg-2\"}", &r);
	assert_int_equal(r.code, 202);
	assert_string_equal(op_json_str_at(o, "status"), "Success");
	assert_string_equal(op_json_str_at(o, "message"), "fake answer 0 for pg-2");
	json_object_put(o);
	assert_int_equal(act.calls, 1);
	assert_string_equal(act.ns, "ns1");
	assert_string_equal(act.name, "pg");
	assert_string_equal(act.instance, "pg-2");
	assert_string_equal(act.user, "alice");
	assert_int_equal(act.kind, AS_ACTION_SWITCHOVER);
	o = post(GV "/namespaces/ns1/clusters/pg/restart", alice, "application/json", "{}", &r);
	assert_int_equal(r.code, 202);
	json_object_put(o);
	assert_int_equal(act.kind, AS_ACTION_RESTART);
	assert_string_equal(act.instance, "");
	/* refusals map to codes: the reconciler's -errno */
	static const struct {
		int answer;
		long code;
		const char *reason;
	} maps[] = {
		{ -EBUSY, 409, "Conflict" },  { -ESTALE, 409, "Conflict" },
		{ -EINVAL, 422, "Invalid" },  { -ENOENT, 404, "NotFound" },
		{ -EIO, 500, "InternalError" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(maps); i++) {
		act.answer = maps[i].answer;
		o = post(sw, alice, "application/json", "{\"target\":\"pg-3\"}", &r);
		expect_status(o, &r, maps[i].code, maps[i].reason);
		assert_non_null(strstr(op_json_str_at(o, "message"), "pg-3"));
		json_object_put(o);
	}
	act.answer = 0;
	/* bad bodies never reach the reconciler */
	int calls = act.calls;
	o = post(sw, alice, NULL, "{\"target\":1}", &r);
	expect_status(o, &r, 400, "BadRequest");
	json_object_put(o);
	o = post(sw, alice, NULL, "{\"tagret\":\"pg-2\"}", &r);
	expect_status(o, &r, 400, "BadRequest");
	assert_non_null(strstr(op_json_str_at(o, "message"), "tagret"));
	json_object_put(o);
	o = post(sw, alice, NULL, "not json", &r);
	expect_status(o, &r, 400, "BadRequest");
	json_object_put(o);
	char big[AS_ACTION_BODY_MAX + 64];
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	o = post(sw, alice, NULL, big, &r);
	expect_status(o, &r, 413, "RequestEntityTooLarge");
	json_object_put(o);
	o = post(sw, alice, "text/plain", "{}", &r);
	assert_int_equal(r.code, 415);
	if (o)
		json_object_put(o);
	/* authorized on the subresource: the view role may get, not switch over */
	const char *const viewer[] = { "X-Remote-User: viewer", NULL };
	o = get(GV "/namespaces/ns1/clusters/pg", "proxy", viewer, &r);
	assert_int_equal(r.code, 200);
	json_object_put(o);
	o = post(sw, viewer, NULL, "{}", &r);
	expect_status(o, &r, 403, "Forbidden");
	assert_non_null(strstr(op_json_str_at(o, "message"),
			       "cannot create resource \"clusters/switchover\""));
	json_object_put(o);
	o = post(GV "/namespaces/ns1/clusters/pg/switchover/x", alice, NULL, "{}", &r);
	assert_int_equal(r.code, 404);
	json_object_put(o);
	assert_int_equal(act.calls, calls);
}

static void test_too_many(void **state)
{
	pthread_mutex_lock(&mu);
	fetch_sleep_ms = 700;
	pthread_mutex_unlock(&mu);
	usleep(100 * 1000); /* past max_age: the next request fetches (slowly) */
	struct par p[2] = { { .code = 0 }, { .code = 0 } };
	pthread_t t[2];
	pthread_create(&t[0], NULL, par_main, &p[0]);
	usleep(300 * 1000); /* the first one is waiting for its fetch */
	pthread_create(&t[1], NULL, par_main, &p[1]);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	assert_int_equal(p[0].code, 200);
	assert_int_equal(p[1].code, 429);
	assert_string_equal(p[1].r.retry_after, "1");
	json_object *o = json_tokener_parse(op_buf_str(&p[1].r.body));
	assert_string_equal(op_json_str_at(o, "reason"), "TooManyRequests");
	json_object_put(o);
	op_buf_done(&p[0].r.body);
	op_buf_done(&p[1].r.body);
	pthread_mutex_lock(&mu);
	fetch_sleep_ms = 0;
	pthread_mutex_unlock(&mu);
}

/* Lines of a finished watch stream, parsed. */
static json_object *watch_lines(const char *query, const char *const *hdrs, int64_t *ret_ms)
{
	struct resp r;
	struct curl_slist *l = NULL;
	_cleanup_free_ char *path = op_asprintf(GV "/namespaces/ns1/clusters?watch=true&%s", query);
	CURL *c = request(path, "proxy", hdrs, &r, &l);
	int64_t t0 = as_now_ms();
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	*ret_ms = as_now_ms() - t0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	assert_int_equal(r.code, 200);
	curl_slist_free_all(l);
	curl_easy_cleanup(c);
	json_object *arr = json_object_new_array();
	char *save = NULL;
	for (char *line = strtok_r(r.body.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		op_jpush(arr, json_tokener_parse(line));
	op_buf_done(&r.body);
	return arr;
}

static void *bump_timeline(void *arg)
{
	usleep(1200 * 1000);
	pthread_mutex_lock(&mu);
	timeline = 4;
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void test_watch(void **state)
{
	int64_t ms = 0;
	/* resourceVersion 0: the current objects as ADDED first; ends at timeoutSeconds */
	json_object *ev = watch_lines("resourceVersion=0&timeoutSeconds=1", alice, &ms);
	assert_true(ms >= 900 && ms < 3500);
	assert_true(json_object_array_length(ev) >= 1);
	json_object *e0 = json_object_array_get_idx(ev, 0);
	assert_string_equal(op_json_str_at(e0, "type"), "ADDED");
	assert_string_equal(op_json_str_at(e0, "object.kind"), "LiveCluster");
	assert_non_null(op_json_str_at(e0, "object.metadata.resourceVersion"));
	json_object_put(ev);
	/* a concrete resourceVersion: no replay; a change shows as MODIFIED (a Table
	 * row with the definitions on the first event) */
	pthread_t t;
	pthread_create(&t, NULL, bump_timeline, NULL);
	const char *const table[] = { "X-Remote-User: alice",
				      "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,"
				      "application/json",
				      NULL };
	ev = watch_lines("resourceVersion=12345&timeoutSeconds=3", table, &ms);
	pthread_join(t, NULL);
	assert_int_equal(json_object_array_length(ev), 1);
	e0 = json_object_array_get_idx(ev, 0);
	assert_string_equal(op_json_str_at(e0, "type"), "MODIFIED");
	assert_string_equal(op_json_str_at(e0, "object.kind"), "Table");
	assert_true(json_object_array_length(op_json_at(e0, "object.columnDefinitions")) > 0);
	json_object_put(ev);
	pthread_mutex_lock(&mu);
	timeline = 3;
	pthread_mutex_unlock(&mu);
}

static void *long_watch(void *arg)
{
	int64_t *ms = arg;
	json_object *ev = watch_lines("timeoutSeconds=100", alice, ms);
	json_object_put(ev);
	return NULL;
}

/* Stopping the server ends a watch in flight at once (suspended connection
 * resumed, stream ended), and the watch thread is gone before as_free returns. */
static void test_watch_ends_at_stop(void **state)
{
	int64_t ms = 0;
	pthread_t t;
	pthread_create(&t, NULL, long_watch, &ms);
	usleep(700 * 1000);
	int64_t t0 = as_now_ms();
	op_http_server_free(srv);
	srv = NULL;
	pthread_join(t, NULL);
	assert_true(as_now_ms() - t0 < 3000);
	assert_true(ms < 5000);
	as_free(as);
	as = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_authentication),
		cmocka_unit_test(test_not_loaded_yet),
		cmocka_unit_test(test_authorization),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_actions),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_watch_ends_at_stop), /* last: stops the server */
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
