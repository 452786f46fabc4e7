/* tests/unit/test_kube.c - kube/: configuration, REST verbs and wire behaviour
 * against a scripted local HTTPS server (tests/unit/test_kube_server.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "support/json.h"
#include "test_kube_server.h"

#include <cmocka.h>
/* Memory here comes from op_malloc/json-c, not cmocka's test allocator. */
#undef malloc
#undef calloc
#undef realloc
#undef free

/* ---- scripted handlers ---- */

static void h_basic(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	const char *p = req->path;
	if (!strcmp(req->method, "GET") && !strcmp(p, "/api/v1/namespaces/ns1/pods/p1")) {
		r->body = op_strdup("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
				    "\"name\":\"p1\",\"namespace\":\"ns1\",\"resourceVersion\":\"7\"}}");
	} else if (!strcmp(p, "/api/v1/namespaces/ns1/pods/missing")) {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "pods \\\"missing\\\" not found");
	} else if (!strcmp(req->method, "POST") && !strcmp(p, "/api/v1/namespaces/ns1/configmaps")) {
		r->status = 409;
		r->body = ts_status(409, "AlreadyExists", "configmaps \\\"cm\\\" already exists");
	} else if (!strcmp(req->method, "PUT") &&
		   !strcmp(p, "/api/v1/namespaces/ns1/configmaps/cm")) {
		r->status = 409;
		r->body = ts_status(409, "Conflict",
				    "Operation cannot be fulfilled on configmaps \\\"cm\\\": the "
				    "object has been modified");
	} else if (!strcmp(req->method, "POST") &&
		   !strcmp(p, "/apis/postgresql.cnpg.io/v1/namespaces/ns1/clusters")) {
		r->status = 422;
		r->body = ts_status(422, "Invalid",
				    "Cluster.postgresql.cnpg.io \\\"pg\\\" is invalid: spec.instances: "
				    "Invalid value: 0");
	} else if (!strcmp(p, "/api/v1/namespaces/ns1/secrets/s")) {
		r->status = 403;
		r->body = ts_status(403, "Forbidden", "secrets \\\"s\\\" is forbidden");
	} else if (!strcmp(p, "/api/v1/namespaces/ns1/pods") && !strcmp(req->method, "GET")) {
		/* paging: 3 pages of 2,2,1 */
		const char *q = req->query;
		if (!strstr(q, "continue="))
			r->body = op_strdup("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":"
					    "\"100\",\"continue\":\"tok/1\"},\"items\":["
					    "{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]}");
		else if (strstr(q, "continue=tok/1"))
			r->body = op_strdup("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":"
					    "\"100\",\"continue\":\"tok2\"},\"items\":["
					    "{\"metadata\":{\"name\":\"c\"}},{\"metadata\":{\"name\":\"d\"}}]}");
		else
			r->body = op_strdup("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":"
					    "\"100\"},\"items\":[{\"metadata\":{\"name\":\"e\"}}]}");
	} else if (!strcmp(p, "/api/v1/namespaces/ns1/pods/p1/status") ||
		   !strcmp(p, "/apis/postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/status") ||
		   !strcmp(p, "/apis/apps/v1/namespaces/ns1/deployments/d") ||
		   !strcmp(p, "/api/v1/namespaces/ns1/pods/p2")) {
		r->body = op_strdup("{\"kind\":\"X\",\"metadata\":{\"name\":\"x\"}}");
	} else {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "no route");
	}
}

static struct kube_client *client_for(struct ts *s, const struct kube_client_opts *o)
{
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(s, "tok-1"), NULL, &cfg, &err), 0);
	struct kube_client *c = NULL;
	assert_int_equal(kube_client_new(cfg, o, &c, &err), 0);
	return c;
}

/* ---- tests ---- */

static void test_kinds_and_paths(void **state)
{
	struct op_buf b = OP_BUF_INIT(4096);
	assert_int_equal(kube_path(&b, KUBE_PODS, "ns", "p", "status"), 0);
	assert_string_equal(op_buf_str(&b), "/api/v1/namespaces/ns/pods/p/status");
	op_buf_reset(&b);
	assert_int_equal(kube_path(&b, KUBE_LEASES, "kube-system", NULL, NULL), 0);
	assert_string_equal(op_buf_str(&b), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
	op_buf_reset(&b);
	/* cluster-scoped ignores ns; names are escaped */
	assert_int_equal(kube_path(&b, KUBE_NODES, "ns", "a b/c", NULL), 0);
	assert_string_equal(op_buf_str(&b), "/api/v1/nodes/a%20b%2Fc");
	op_buf_reset(&b);
	assert_int_equal(kube_path(&b, KUBE_ENDPOINTSLICES, NULL, NULL, NULL), 0);
	assert_string_equal(op_buf_str(&b), "/apis/discovery.k8s.io/v1/endpointslices");
	op_buf_reset(&b);
	static const struct kube_kind sts = { "apps", "v1", "statefulsets", "StatefulSet", true };
	assert_int_equal(kube_path(&b, &sts, "x", "y", NULL), 0);
	assert_string_equal(op_buf_str(&b), "/apis/apps/v1/namespaces/x/statefulsets/y");
	assert_int_equal(kube_kind_api_version(KUBE_CLUSTERS, &b), 0);
	assert_string_equal(op_buf_str(&b), "postgresql.cnpg.io/v1");
	assert_int_equal(kube_kind_api_version(KUBE_PODS, &b), 0);
	assert_string_equal(op_buf_str(&b), "v1");
	op_buf_done(&b);
	assert_ptr_equal(kube_kind_lookup("pods"), KUBE_PODS);
	assert_ptr_equal(kube_kind_lookup("Lease"), KUBE_LEASES);
	assert_ptr_equal(kube_kind_lookup("clusters.postgresql"), KUBE_CLUSTERS);
	assert_ptr_equal(kube_kind_lookup("apiservices.apiregistration.k8s.io"), KUBE_APISERVICES);
	assert_null(kube_kind_lookup("clusters.apps"));
	assert_null(kube_kind_lookup("widgets"));
	for (int i = 0; i < KUBE_K__COUNT; i++) {
		assert_non_null(kube_kinds[i].resource);
		assert_non_null(kube_kinds[i].kind);
	}
}

static void test_errno_mapping(void **state)
{
	assert_int_equal(kube_errno_from_http(404, "NotFound"), -ENOENT);
	assert_int_equal(kube_errno_from_http(409, "AlreadyExists"), -EEXIST);
	assert_int_equal(kube_errno_from_http(409, "Conflict"), -ESTALE);
	assert_int_equal(kube_errno_from_http(422, "Invalid"), -EINVAL);
	assert_int_equal(kube_errno_from_http(403, NULL), -EACCES);
	assert_int_equal(kube_errno_from_http(401, NULL), -EACCES);
	assert_int_equal(kube_errno_from_http(410, "Expired"), -ETIME);
	assert_int_equal(kube_errno_from_http(429, NULL), -EBUSY);
	assert_int_equal(kube_errno_from_http(500, NULL), -EIO);
	assert_int_equal(kube_errno_from_http(503, NULL), -EAGAIN);
}

static void test_selector(void **state)
{
	json_object *o = json_tokener_parse("{\"metadata\":{\"labels\":{\"app\":\"pg\","
					    "\"role\":\"primary\",\"cnpg.io/cluster\":\"c1\","
					    "\"empty\":\"\"}}}");
	static const struct {
		const char *sel;
		int want;
	} rows[] = {
		{ NULL, 1 },
		{ "", 1 },
		{ "app=pg", 1 },
		{ "app==pg", 1 },
		{ "app = pg , role=primary", 1 },
		{ "app=pg,role=replica", 0 },
		{ "app!=pg", 0 },
		{ "missing!=x", 1 },
		{ "cnpg.io/cluster=c1", 1 },
		{ "cnpg.io/cluster", 1 },
		{ "!cnpg.io/cluster", 0 },
		{ "!missing", 1 },
		{ "missing", 0 },
		{ "role in (primary, replica)", 1 },
		{ "role in (replica)", 0 },
		{ "role notin (replica)", 1 },
		{ "missing notin (a)", 1 },
		{ "missing in (a)", 0 },
		{ "empty=", 1 },
		{ "empty in (,x)", 1 },
		{ "app=pg,", -EINVAL },
		{ "=pg", -EINVAL },
		{ "role in primary", -EINVAL },
		{ "role in (a b)", -EINVAL },
		{ "app=pg;x", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct op_err err = OP_ERR_INIT;
		int r = kube_selector_match(rows[i].sel, o, &err);
		if (r != rows[i].want)
			fail_msg("selector \"%s\": got %d, want %d (%s)",
				 rows[i].sel ? rows[i].sel : "(null)", r, rows[i].want, err.msg);
		if (r < 0)
			assert_non_null(strstr(err.msg, "label selector"));
	}
	/* an object without labels */
	json_object *bare = json_tokener_parse("{\"metadata\":{}}");
	assert_int_equal(kube_selector_match("a", bare, NULL), 0);
	assert_int_equal(kube_selector_match("a!=b", bare, NULL), 1);
	json_object_put(bare);
	json_object_put(o);
}

static void test_kubeconfig_parse(void **state)
{
	const char *yaml =
		"apiVersion: v1\n"
		"current-context: b\n"
		"clusters:\n"
		"- name: one\n"
		"  cluster: {server: 'https://one:6443', insecure-skip-tls-verify: true}\n"
		"- name: two\n"
		"  cluster:\n"
		"    server: https://10.0.0.1:443/\n"
		"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFCQwo=\n"
		"contexts:\n"
		"- name: a\n"
		"  context: {cluster: one, user: tok}\n"
		"- name: b\n"
		"  context: {cluster: two, user: cert, namespace: prod}\n"
		"users:\n"
		"- name: tok\n"
		"  user: {token: abc, tokenFile: secret/tok}\n"
		"- name: cert\n"
		"  user:\n"
		"    client-certificate-data: Y2VydA==\n"
		"    client-key: keys/k.pem\n";
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_yaml(yaml, strlen(yaml), "/etc/kc", NULL, &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://10.0.0.1:443");
	assert_string_equal(cfg->namespace, "prod");
	assert_string_equal(cfg->context, "b");
	assert_false(cfg->insecure_skip_tls_verify);
	assert_null(cfg->token);
	assert_non_null(cfg->ca_file);
	assert_non_null(cfg->client_cert_file);
	assert_string_equal(cfg->client_key_file, "/etc/kc/keys/k.pem");
	struct op_buf b = OP_BUF_INIT(4096);
	assert_int_equal(ts_read(cfg->ca_file, &b), 0);
	assert_string_equal(op_buf_str(&b), "-----BEGIN CERTIFICATE-----\nABC\n");
	assert_int_equal(ts_read(cfg->client_cert_file, &b), 0);
	assert_string_equal(op_buf_str(&b), "cert");
	/* inline data is never written to a filesystem: memory files only */
	assert_non_null(strstr(cfg->ca_file, "/proc/self/fd/"));
	assert_non_null(strstr(cfg->client_cert_file, "/proc/self/fd/"));
	assert_int_equal(cfg->n_mem, 2);
	char *ca_path = op_strdup(cfg->ca_file);
	cfg = kube_config_free(cfg);
	assert_int_equal(ts_read(ca_path, &b), -ENOENT); /* closed with the config */
	free(ca_path);

	assert_int_equal(kube_config_from_yaml(yaml, strlen(yaml), "/etc/kc", "a", &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://one:6443");
	assert_true(cfg->insecure_skip_tls_verify);
	assert_string_equal(cfg->token, "abc");
	assert_string_equal(cfg->token_file, "/etc/kc/secret/tok");
	assert_string_equal(cfg->namespace, "default");
	assert_int_equal(cfg->n_mem, 0);
	cfg = kube_config_free(cfg);

	err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_yaml(yaml, strlen(yaml), NULL, "nope", &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "context \"nope\" not found"));
	err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_yaml("a: [", 4, NULL, NULL, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid YAML"));
	/* billion laughs: bounded by the node budget, fails fast */
	const char *laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
			     "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
			     "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
			     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
			     "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
			     "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
	err = OP_ERR_INIT;
	int64_t t0 = ts_now_ms();
	assert_true(kube_config_from_yaml(laughs, strlen(laughs), NULL, NULL, &cfg, &err) < 0);
	assert_true(ts_now_ms() - t0 < 2000);
	err = OP_ERR_INIT;
	const char *bad = "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n"
			  "clusters:\n- name: c\n  cluster: {server: ftp}\n";
	assert_int_equal(kube_config_from_yaml(bad, strlen(bad), NULL, NULL, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no valid server"));
	op_buf_done(&b);
}

static void test_config_load_order(void **state)
{
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_int_equal(kube_config_load(NULL, &cfg, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no cluster access"));
	err = OP_ERR_INIT;
	assert_int_equal(kube_config_load("/nonexistent/kc", &cfg, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/kc"));

	struct ts *s = ts_start(h_basic, NULL);
	const char *kc = ts_kubeconfig(s, "tok-env");
	char *env = op_asprintf("/nonexistent/a:%s", kc);
	setenv("KUBECONFIG", env, 1);
	free(env);
	err = OP_ERR_INIT;
	assert_int_equal(kube_config_load(NULL, &cfg, &err), 0);
	assert_string_equal(cfg->token, "tok-env");
	assert_string_equal(cfg->namespace, "ns1");
	cfg = kube_config_free(cfg);
	unsetenv("KUBECONFIG");

	/* in-cluster via PGOP_SA_DIR */
	char p[256];
	snprintf(p, sizeof(p), "%s/token", s->dir);
	ts_write_file(p, "sa-token-1\n");
	snprintf(p, sizeof(p), "%s/namespace", s->dir);
	ts_write_file(p, "pgns\n");
	setenv("PGOP_SA_DIR", s->dir, 1);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	char port[16];
	snprintf(port, sizeof(port), "%u", s->port);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	assert_int_equal(kube_config_load(NULL, &cfg, &err), 0);
	assert_true(cfg->in_cluster);
	assert_string_equal(cfg->namespace, "pgns");
	assert_non_null(cfg->ca_file);
	char *want = op_asprintf("https://127.0.0.1:%u", s->port);
	assert_string_equal(cfg->server, want);
	free(want);

	/* the token is sent and re-read after rotation */
	struct kube_client *c = NULL;
	assert_int_equal(kube_client_new(cfg, NULL, &c, &err), 0);
	json_object *o = NULL;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &o, &err), 0);
	json_object_put(o);
	assert_string_equal(ts_at(s, -1)->auth, "Bearer sa-token-1");
	snprintf(p, sizeof(p), "%s/token", s->dir);
	ts_sleep_ms(20);
	ts_write_file(p, "sa-token-2-longer\n");
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &o, &err), 0);
	json_object_put(o);
	assert_string_equal(ts_at(s, -1)->auth, "Bearer sa-token-2-longer");
	kube_client_free(c);
	unsetenv("PGOP_SA_DIR");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	ts_stop(s);
}

static void test_get_and_errors(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	struct kube_client *c = client_for(s, NULL);
	assert_string_equal(kube_client_namespace(c), "ns1");
	struct op_err err = OP_ERR_INIT;
	json_object *o = NULL;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &o, &err), 0);
	assert_string_equal(kube_obj_name(o), "p1");
	assert_string_equal(kube_obj_resource_version(o), "7");
	json_object_put(o);
	const struct ts_req *r = ts_at(s, -1);
	assert_string_equal(r->auth, "Bearer tok-1");
	assert_string_equal(r->method, "GET");

	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "missing", &o, &err), -ENOENT);
	assert_string_equal(err.msg,
			    "get pods ns1/missing: NotFound: pods \"missing\" not found (404)");

	json_object *cm = json_tokener_parse("{\"metadata\":{\"name\":\"cm\",\"resourceVersion\":\"3\"}}");
	err = OP_ERR_INIT;
	assert_int_equal(kube_create(c, KUBE_CONFIGMAPS, "ns1", cm, NULL, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "create configmaps ns1/cm: AlreadyExists"));
	assert_string_equal(ts_at(s, -1)->ctype, "application/json");
	err = OP_ERR_INIT;
	assert_int_equal(kube_update(c, KUBE_CONFIGMAPS, "ns1", cm, NULL, &err), -ESTALE);
	assert_non_null(strstr(err.msg, "update configmaps ns1/cm: Conflict: Operation cannot"));
	assert_non_null(strstr(ts_at(s, -1)->body, "\"resourceVersion\":\"3\""));
	json_object_put(cm);

	json_object *pg = json_tokener_parse("{\"metadata\":{\"name\":\"pg\"},\"spec\":{\"instances\":0}}");
	err = OP_ERR_INIT;
	assert_int_equal(kube_create(c, KUBE_CLUSTERS, "ns1", pg, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "spec.instances: Invalid value: 0 (422)"));
	json_object_put(pg);
	err = OP_ERR_INIT;
	assert_int_equal(kube_get(c, KUBE_SECRETS, "ns1", "s", &o, &err), -EACCES);
	kube_client_free(c);
	ts_stop(s);
}

static void test_list_paging(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	struct kube_client *c = client_for(s, NULL);
	struct op_err err = OP_ERR_INIT;
	json_object *l = NULL;
	struct kube_list_opts lo = { .label_selector = "app=pg,role in (a,b)", .limit = 2 };
	assert_int_equal(kube_list_all(c, KUBE_PODS, "ns1", &lo, &l, &err), 0);
	json_object *items = json_object_object_get(l, "items");
	assert_int_equal(json_object_array_length(items), 5);
	const char *names = "abcde";
	for (int i = 0; i < 5; i++) {
		char n[2] = { names[i], 0 };
		assert_string_equal(kube_obj_name(json_object_array_get_idx(items, (size_t)i)), n);
	}
	assert_string_equal(op_json_str_at(l, "metadata.resourceVersion"), "100");
	assert_null(op_json_at(l, "metadata.continue"));
	json_object *first = json_object_array_get_idx(items, 0);
	assert_string_equal(op_json_str_at(first, "kind"), "Pod");
	assert_string_equal(op_json_str_at(first, "apiVersion"), "v1");
	json_object_put(l);
	int n = ts_count(s);
	assert_int_equal(n, 3);
	assert_non_null(strstr(ts_at(s, 0)->query, "labelSelector=app=pg,role in (a,b)"));
	assert_non_null(strstr(ts_at(s, 0)->query, "limit=2"));
	assert_non_null(strstr(ts_at(s, 1)->query, "continue=tok/1"));
	assert_non_null(strstr(ts_at(s, 2)->query, "continue=tok2"));

	/* single page */
	assert_int_equal(kube_list(c, KUBE_PODS, "ns1", &lo, &l, &err), 0);
	assert_string_equal(op_json_str_at(l, "metadata.continue"), "tok/1");
	json_object_put(l);
	kube_client_free(c);
	ts_stop(s);
}

static void test_patch_delete_status(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	struct kube_client *c = client_for(s, NULL);
	struct op_err err = OP_ERR_INIT;
	json_object *o = NULL;
	assert_int_equal(kube_patch_status(c, KUBE_CLUSTERS, "ns1", "pg", KUBE_PATCH_MERGE,
					   "{\"status\":{\"phase\":\"x\"}}", &o, &err), 0);
	assert_non_null(o);
	json_object_put(o);
	const struct ts_req *r = ts_at(s, -1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->path, "/apis/postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/status");
	assert_string_equal(r->ctype, "application/merge-patch+json");
	assert_string_equal(r->body, "{\"status\":{\"phase\":\"x\"}}");

	assert_int_equal(kube_patch(c, KUBE_PODS, "ns1", "p2", KUBE_PATCH_JSON,
				    "[{\"op\":\"add\",\"path\":\"/metadata/labels/a\",\"value\":\"b\"}]",
				    NULL, &err), 0);
	assert_string_equal(ts_at(s, -1)->ctype, "application/json-patch+json");
	assert_int_equal(kube_patch(c, KUBE_PODS, "ns1", "p2", KUBE_PATCH_STRATEGIC, "{}", NULL, &err), 0);
	assert_string_equal(ts_at(s, -1)->ctype, "application/strategic-merge-patch+json");

	json_object *d = json_tokener_parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
					    "\"metadata\":{\"name\":\"d\"}}");
	assert_int_equal(kube_apply(c, KUBE_DEPLOYMENTS, "ns1", d, "pgop-test", true, NULL, &err), 0);
	r = ts_at(s, -1);
	assert_string_equal(r->ctype, "application/apply-patch+yaml");
	assert_non_null(strstr(r->query, "fieldManager=pgop-test"));
	assert_non_null(strstr(r->query, "force=true"));
	json_object_put(d);

	json_object *pod = json_tokener_parse("{\"metadata\":{\"name\":\"p1\"},\"status\":{}}");
	assert_int_equal(kube_update_status(c, KUBE_PODS, "ns1", pod, NULL, &err), 0);
	assert_string_equal(ts_at(s, -1)->method, "PUT");
	assert_string_equal(ts_at(s, -1)->path, "/api/v1/namespaces/ns1/pods/p1/status");
	json_object_put(pod);

	struct kube_delete_opts dopt = { .propagation = KUBE_PROPAGATE_FOREGROUND,
					 .precondition_uid = "u-1",
					 .precondition_resource_version = "9",
					 .grace_period_seconds = 0 };
	assert_int_equal(kube_delete(c, KUBE_PODS, "ns1", "p2", &dopt, &err), 0);
	r = ts_at(s, -1);
	assert_string_equal(r->method, "DELETE");
	json_object *b = json_tokener_parse(r->body);
	assert_string_equal(op_json_str_at(b, "propagationPolicy"), "Foreground");
	assert_string_equal(op_json_str_at(b, "preconditions.uid"), "u-1");
	assert_string_equal(op_json_str_at(b, "preconditions.resourceVersion"), "9");
	assert_int_equal(json_object_get_int(op_json_at(b, "gracePeriodSeconds")), 0);
	json_object_put(b);
	assert_int_equal(kube_delete(c, KUBE_PODS, "ns1", "missing", NULL, &err), -ENOENT);
	assert_string_equal(ts_at(s, -1)->body, "");

	/* general request for other paths */
	const struct kube_request req = { .method = "GET", .path = "/version", .verb = "version" };
	err = OP_ERR_INIT;
	assert_int_equal(kube_request(c, &req, NULL, &err), -ENOENT);
	assert_string_equal(ts_at(s, -1)->path, "/version");
	kube_client_free(c);
	ts_stop(s);
}

/* 429 then 503 then success */
static atomic_int flaky_calls;
static void h_flaky(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	int n = atomic_fetch_add(&flaky_calls, 1);
	if (!strcmp(req->path, "/api/v1/namespaces/ns1/pods/limited")) {
		r->status = 429;
		r->retry_after = 0;
		r->body = ts_status(429, "TooManyRequests", "slow down");
		return;
	}
	if (!strcmp(req->method, "POST")) {
		r->status = 503;
		r->body = ts_status(503, "ServiceUnavailable", "busy");
		return;
	}
	if (n == 0) {
		r->status = 429;
		r->retry_after = 1;
		r->body = ts_status(429, "TooManyRequests", "slow down");
	} else if (n == 1) {
		r->status = 503;
		r->body = ts_status(503, "ServiceUnavailable", "busy");
	} else {
		r->body = op_strdup("{\"metadata\":{\"name\":\"p1\"}}");
	}
}

static void test_retry_429_and_5xx(void **state)
{
	atomic_store(&flaky_calls, 0);
	struct ts *s = ts_start(h_flaky, NULL);
	struct kube_client_opts o = { .max_retries = 3 };
	struct kube_client *c = client_for(s, &o);
	struct op_err err = OP_ERR_INIT;
	json_object *obj = NULL;
	int64_t t0 = ts_now_ms();
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &obj, &err), 0);
	int64_t dt = ts_now_ms() - t0;
	json_object_put(obj);
	assert_true(dt >= 1000); /* honoured Retry-After: 1 */
	assert_true(dt < 5000);
	assert_int_equal(ts_count(s), 3);
	struct kube_client_stats st;
	kube_client_stats(c, &st);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.retries, 2);

	/* bounded: 1 + 3 retries, then -EBUSY */
	err = OP_ERR_INIT;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "limited", &obj, &err), -EBUSY);
	assert_int_equal(ts_count(s), 7);
	assert_non_null(strstr(err.msg, "TooManyRequests"));

	/* POST is not idempotent: a 503 is not retried */
	json_object *cm = json_tokener_parse("{\"metadata\":{\"name\":\"x\"}}");
	err = OP_ERR_INIT;
	assert_int_equal(kube_create(c, KUBE_CONFIGMAPS, "ns1", cm, NULL, &err), -EAGAIN);
	assert_int_equal(ts_count(s), 8);
	json_object_put(cm);
	kube_client_free(c);
	ts_stop(s);
}

static void h_big(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	r->big = 100u << 20;
	r->big_chunked = strstr(req->path, "chunked") != NULL;
}

static void test_capped_body(void **state)
{
	struct ts *s = ts_start(h_big, NULL);
	struct kube_client *c = client_for(s, NULL);
	struct op_err err = OP_ERR_INIT;
	json_object *o = NULL;
	/* Content-Length 100 MiB > 64 MiB cap: refused before the body is read */
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "big", &o, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "larger than"));
	ts_sleep_ms(200);
	size_t served = atomic_load(&s->big_served);
	print_message("100 MiB with Content-Length: server wrote %zu bytes before the client hung up\n",
		      served);
	assert_true(served < (8u << 20));
	kube_client_free(c);

	/* chunked (no length): stops at the cap (here 1 MiB) */
	atomic_store(&s->big_served, 0);
	struct kube_client_opts opt = { .max_response = 1u << 20 };
	c = client_for(s, &opt);
	err = OP_ERR_INIT;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "big-chunked", &o, &err), -EMSGSIZE);
	ts_sleep_ms(200);
	served = atomic_load(&s->big_served);
	print_message("100 MiB chunked, 1 MiB cap: server wrote %zu bytes\n", served);
	assert_true(served < (16u << 20));
	kube_client_free(c);
	ts_stop(s);
}

/* Sequential and concurrent requests reuse connections through the CURLSH
 * connection cache instead of a TLS handshake per request. */
struct par {
	struct kube_client *c;
	int n; /* GETs to make */
	int fails;
};

static void *par_get(void *arg)
{
	struct par *p = arg;
	for (int i = 0; i < p->n; i++) {
		json_object *o = NULL;
		struct op_err err = OP_ERR_INIT;
		if (kube_get(p->c, KUBE_PODS, "ns1", "p1", &o, &err) < 0 ||
		    strcmp(kube_obj_name(o), "p1") != 0)
			p->fails++;
		json_object_put(o);
	}
	return NULL;
}

static void test_connection_reuse(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	struct kube_client_opts o = { .qps = 10000, .burst = 10000 };
	struct kube_client *c = client_for(s, &o);
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = ts_now_ms();
	for (int i = 0; i < 50; i++) {
		json_object *obj = NULL;
		assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &obj, &err), 0);
		json_object_put(obj);
	}
	int64_t dt = ts_now_ms() - t0;
	print_message("50 sequential GETs: %lld ms, %d TCP connection(s)\n", (long long)dt,
		      atomic_load(&s->connections));
	assert_int_equal(atomic_load(&s->connections), 1);

	/* 4 threads x 25 requests on one client: all succeed, few connections */
	struct par ps[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		ps[i] = (struct par){ .c = c, .n = 25 };
		pthread_create(&th[i], NULL, par_get, &ps[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(ps[i].fails, 0);
	}
	int conns = atomic_load(&s->connections);
	print_message("100 GETs from 4 threads: %d TCP connection(s) in total\n", conns);
	assert_true(conns <= 5);
	kube_client_free(c);
	ts_stop(s);
}

/* Many threads on one client while the server closes every third connection
 * after its answer: connections come and go under concurrent requests (the
 * node agent crashed in libcurl there when the connection cache was shared
 * between threads). Every request succeeds, ASan sees nothing, and the
 * connections left open are reused (with the shared cache and the pool
 * together: 308-313 connections for 320 requests). */
static atomic_int closing_n;
static void h_closing(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	h_basic(s, req, r);
	r->close = atomic_fetch_add(&closing_n, 1) % 3 == 2;
}

static void test_threads_and_closed_connections(void **state)
{
	struct ts *s = ts_start(h_closing, NULL);
	struct kube_client_opts o = { .qps = 100000, .burst = 100000, .max_retries = -1 };
	struct kube_client *c = client_for(s, &o);
	enum { T = 8 };
	struct par ps[T];
	pthread_t th[T];
	for (int i = 0; i < T; i++) {
		ps[i] = (struct par){ .c = c, .n = 40 };
		pthread_create(&th[i], NULL, par_get, &ps[i]);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(ps[i].fails, 0);
	}
	int conns = atomic_load(&s->connections);
	print_message("%d GETs from %d threads, every third answer closing: %d connections\n",
		      T * 40, T, conns);
	/* closed ones are replaced, kept ones reused: about a third of the requests */
	assert_true(conns >= T * 40 / 3 - T);
	assert_true(conns <= T * 40 / 2);
	kube_client_free(c);
	ts_stop(s);
}

static void test_rate_limit(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	struct kube_client_opts o = { .qps = 10, .burst = 2 };
	struct kube_client *c = client_for(s, &o);
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = ts_now_ms();
	for (int i = 0; i < 6; i++) {
		json_object *obj = NULL;
		assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &obj, &err), 0);
		json_object_put(obj);
	}
	int64_t dt = ts_now_ms() - t0;
	/* 2 from the burst, 4 more at 10/s: >= ~400 ms */
	assert_true(dt >= 350);
	/* The wait depends on how long each request took (tokens refill
	 * meanwhile), so only the total is a stable property. */
	struct kube_client_stats st;
	kube_client_stats(c, &st);
	assert_int_equal(st.requests, 6);
	/* Events have their own bucket (2 tokens): they do not wait behind the
	 * drained main one, and do not take from it */
	uint64_t waited = st.throttled_ms;
	for (int i = 0; i < 2; i++) {
		json_object *obj = NULL;
		int r = kube_get(c, KUBE_EVENTS, "ns1", "e1", &obj, &err);
		(void)r; /* the answer does not matter */
		json_object_put(obj);
	}
	kube_client_stats(c, &st);
	assert_int_equal(st.requests, 8);
	assert_int_equal(st.throttled_ms, waited);
	kube_client_free(c);
	ts_stop(s);
}

static void test_tls_verification(void **state)
{
	struct ts *s = ts_start(h_basic, NULL);
	/* a CA that does not match: -EPROTO */
	struct kube_config *cfg = op_calloc(1, sizeof(*cfg));
	cfg->server = op_asprintf("https://127.0.0.1:%u", s->port);
	cfg->namespace = op_strdup("default");
	cfg->ca_file = op_strdup("/etc/ssl/certs/ca-certificates.crt");
	struct kube_client *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_client_new(cfg, NULL, &c, &err), 0);
	json_object *o = NULL;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &o, &err), -EPROTO);
	kube_client_free(c);

	/* insecure + client certificate from files */
	cfg = op_calloc(1, sizeof(*cfg));
	cfg->server = op_asprintf("https://127.0.0.1:%u", s->port);
	cfg->namespace = op_strdup("default");
	cfg->insecure_skip_tls_verify = true;
	char *crt = op_asprintf("%s/client.crt", s->dir);
	char *key = op_asprintf("%s/client.key", s->dir);
	ts_write_file(crt, s->cert_pem);
	ts_write_file(key, s->key_pem);
	cfg->client_cert_file = crt;
	cfg->client_key_file = key;
	err = OP_ERR_INIT;
	assert_int_equal(kube_client_new(cfg, NULL, &c, &err), 0);
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &o, &err), 0);
	json_object_put(o);
	assert_true(ts_at(s, -1)->client_cert);
	assert_null(ts_at(s, -1)->auth);
	kube_client_free(c);
	ts_stop(s);
}

static void h_slow(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	r->chunks[0] = op_strdup("{\"metadata\":{\"name\":\"late\"}}");
	r->delay_ms[0] = 3000;
	r->nchunks = 1;
}

static void test_request_timeout(void **state)
{
	struct ts *s = ts_start(h_slow, NULL);
	struct kube_client_opts o = { .timeout_ms = 500 };
	struct kube_client *c = client_for(s, &o);
	struct op_err err = OP_ERR_INIT;
	json_object *obj = NULL;
	int64_t t0 = ts_now_ms();
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &obj, &err), -ETIMEDOUT);
	int64_t dt = ts_now_ms() - t0;
	assert_true(dt >= 450 && dt < 2500);
	/* a timeout is not retried (on a slow machine the request may not even
	 * have reached the handler) */
	assert_true(ts_count(s) <= 1);
	kube_client_free(c);
	ts_stop(s);
}

static void test_connection_refused(void **state)
{
	struct kube_config *cfg = op_calloc(1, sizeof(*cfg));
	cfg->server = op_strdup("https://127.0.0.1:1");
	cfg->namespace = op_strdup("default");
	struct kube_client_opts o = { .max_retries = -1 };
	struct kube_client *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_client_new(cfg, &o, &c, &err), 0);
	json_object *obj = NULL;
	assert_int_equal(kube_get(c, KUBE_PODS, "ns1", "p1", &obj, &err), -ECONNREFUSED);
	assert_non_null(strstr(err.msg, "get https://127.0.0.1:1/api/v1/namespaces/ns1/pods/p1"));
	kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_paths),
		cmocka_unit_test(test_errno_mapping),
		cmocka_unit_test(test_selector),
		cmocka_unit_test(test_kubeconfig_parse),
		cmocka_unit_test(test_config_load_order),
		cmocka_unit_test(test_get_and_errors),
		cmocka_unit_test(test_list_paging),
		cmocka_unit_test(test_patch_delete_status),
		cmocka_unit_test(test_retry_429_and_5xx),
		cmocka_unit_test(test_capped_body),
		cmocka_unit_test(test_connection_reuse),
		cmocka_unit_test(test_threads_and_closed_connections),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_tls_verification),
		cmocka_unit_test(test_request_timeout),
		cmocka_unit_test(test_connection_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
