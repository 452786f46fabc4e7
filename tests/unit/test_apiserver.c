/* Unit tests: apiserver/ pure parts - request paths, field selectors,
 * front-proxy configuration and headers, SubjectAccessReview key/body/cache,
 * discovery and OpenAPI documents, Table rendering, live objects, and the
 * snapshot cache's single flight and deadline with a fake source. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "apiserver/internal.h"
#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);
	assert_non_null(o);
	return o;
}

/* ------------------------------------------------------------- paths */

static const struct {
	const char *method, *path;
	bool watch;
	int ret;
	enum as_target target;
	const char *res, *ns, *name, *sub, *verb;
} path_cases[] = {
	{ "GET", "/apis", false, 0, AS_T_APIS, NULL, "", "", "", "get" },
	{ "GET", "/apis/live.postgresql.cnpg.io", false, 0, AS_T_GROUP, NULL, "", "", "", "get" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1", false, 0, AS_T_GROUPVERSION, NULL, "", "",
	  "", "get" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/clusters", false, 0, AS_T_RESOURCE,
	  "clusters", "", "", "", "list" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters", false, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "", "", "list" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg-1", false, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "pg-1", "", "get" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/status", false, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "pg", "status", "get" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/instances", false, 0,
	  AS_T_RESOURCE, "instances", "ns1", "", "", "list" },
	{ "HEAD", "/apis/live.postgresql.cnpg.io/v1/instances", false, 0, AS_T_RESOURCE,
	  "instances", "", "", "", "list" },
	{ "GET", "/openapi/v2", false, 0, AS_T_OPENAPI_V2, NULL, "", "", "", "get" },
	{ "GET", "/openapi/v3", false, 0, AS_T_OPENAPI_V3, NULL, "", "", "", "get" },
	{ "GET", "/openapi/v3/apis/live.postgresql.cnpg.io/v1", false, 0, AS_T_OPENAPI_V3_GV,
	  NULL, "", "", "", "get" },
	/* not ours */
	{ "GET", "/apis/other.io/v1", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v2", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/pods", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/clusters/pg", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/nope", false,
	  -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/status/x/y", false,
	  -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/openapi/v4", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "relative", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/", false, -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	/* bad names */
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/NS/clusters", false, -EINVAL, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/-x", false, -EINVAL, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/a.b/clusters", false, -EINVAL, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	/* verbs */
	{ "POST", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters", false, -EOPNOTSUPP, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "DELETE", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg", false,
	  -EOPNOTSUPP, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "POST", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/status", false,
	  -EOPNOTSUPP, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters", true, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "", "", "watch" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg", true, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "pg", "", "get" },
	{ "POST", "/apis", false, -EOPNOTSUPP, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	/* actions: create on the subresource, nothing else */
	{ "POST", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/switchover", false,
	  0, AS_T_RESOURCE, "clusters", "ns1", "pg", "switchover", "create" },
	{ "POST", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/restart", false, 0,
	  AS_T_RESOURCE, "clusters", "ns1", "pg", "restart", "create" },
	{ "GET", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/clusters/pg/switchover", false,
	  -EOPNOTSUPP, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
	{ "POST", "/apis/live.postgresql.cnpg.io/v1/namespaces/ns1/instances/pg-1/restart", false,
	  -ENOENT, AS_T_APIS, NULL, NULL, NULL, NULL, NULL },
};

/* ------------------------------------------------------------ actions */

static void test_action_parse(void **state)
{
	static const struct {
		const char *sub, *body;
		int ret;
		enum as_action_kind kind;
		const char *instance, *msg_has;
	} rows[] = {
		{ "switchover", "{\"target\":\"pg-2\"}", 0, AS_ACTION_SWITCHOVER, "pg-2", NULL },
		{ "switchover", "{}", 0, AS_ACTION_SWITCHOVER, "", NULL },
		{ "switchover", "", 0, AS_ACTION_SWITCHOVER, "", NULL },
		{ "switchover", " \n", 0, AS_ACTION_SWITCHOVER, "", NULL },
		{ "switchover", "{\"target\":null}", 0, AS_ACTION_SWITCHOVER, "", NULL },
		{ "switchover", "{\"target\":\"\"}", 0, AS_ACTION_SWITCHOVER, "", NULL },
		{ "restart", "{}", 0, AS_ACTION_RESTART, "", NULL },
		{ "restart", "{\"instance\":\"pg-3\"}", 0, AS_ACTION_RESTART, "pg-3", NULL },
		{ "switchover", "{\"target\":2}", -EINVAL, 0, NULL, "expected string, got integer" },
		{ "switchover", "{\"instance\":\"pg-2\"}", -EINVAL, 0, NULL, "unknown field \"instance\"" },
		{ "restart", "{\"target\":\"pg-2\"}", -EINVAL, 0, NULL, "unknown field \"target\"" },
		{ "switchover", "{\"target\":\"pg-2\",\"force\":true}", -EINVAL, 0, NULL, "force" },
		{ "switchover", "{\"target\":\"PG_2\"}", -EINVAL, 0, NULL, "not a valid instance name" },
		{ "switchover", "{\"target\":", -EINVAL, 0, NULL, "not JSON" },
		{ "switchover", "[\"pg-2\"]", -EINVAL, 0, NULL, "must be a JSON object" },
		{ "switchover", "\"pg-2\"", -EINVAL, 0, NULL, "must be a JSON object" },
		{ "switchover", "{\"target\":{\"a\":{\"b\":{\"c\":{}}}}}", -EINVAL, 0, NULL, NULL },
		{ "status", "{}", -ENOENT, 0, NULL, "not an action" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		struct as_action a = { .kind = 99, .instance = "untouched" };
		struct op_err err = OP_ERR_INIT;
		int r = as_action_parse(rows[i].sub, rows[i].body, strlen(rows[i].body), &a, &err);
		if (r != rows[i].ret)
			fail_msg("%s %s: got %d (%s), want %d", rows[i].sub, rows[i].body, r, err.msg,
				 rows[i].ret);
		if (r == 0) {
			assert_int_equal(a.kind, rows[i].kind);
			assert_string_equal(a.instance, rows[i].instance);
		} else {
			assert_string_equal(a.instance, "untouched");
			if (rows[i].msg_has && !strstr(err.msg, rows[i].msg_has))
				fail_msg("%s: \"%s\" lacks \"%s\"", rows[i].body, err.msg,
					 rows[i].msg_has);
		}
	}
	/* the size cap: 4 KiB of whitespace is fine, one byte more is 413 */
	char *big = op_malloc(AS_ACTION_BODY_MAX + 2);
	memset(big, ' ', AS_ACTION_BODY_MAX + 1);
	big[0] = '{';
	big[AS_ACTION_BODY_MAX - 1] = '}';
	big[AS_ACTION_BODY_MAX + 1] = '\0';
	struct as_action a;
	assert_int_equal(as_action_parse("switchover", big, AS_ACTION_BODY_MAX, &a, NULL), 0);
	assert_int_equal(as_action_parse("switchover", big, AS_ACTION_BODY_MAX + 1, &a, NULL),
			 -EMSGSIZE);
	free(big);
	/* what an accepted action answers */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(as_status_accepted(&b, "switchover from pg-1 to pg-2", "pg"), 0);
	json_object *o = json_tokener_parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(o, "kind"), "Status");
	assert_string_equal(op_json_str_at(o, "status"), "Success");
	assert_int_equal(json_object_get_int(op_json_at(o, "code")), 202);
	assert_string_equal(op_json_str_at(o, "details.name"), "pg");
	assert_string_equal(op_json_str_at(o, "message"), "switchover from pg-1 to pg-2");
	json_object_put(o);
	op_buf_done(&b);
}

static void test_paths(void **state)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(path_cases); i++) {
		struct as_reqinfo ri;
		struct op_err err = OP_ERR_INIT;
		int r = as_parse_path(path_cases[i].method, path_cases[i].path, path_cases[i].watch,
				      &ri, &err);
		if (r != path_cases[i].ret)
			fail_msg("%s %s: got %d (%s), want %d", path_cases[i].method,
				 path_cases[i].path, r, err.msg, path_cases[i].ret);
		if (r < 0) {
			assert_true(err.msg[0] != '\0');
			continue;
		}
		assert_int_equal(ri.target, path_cases[i].target);
		if (path_cases[i].res)
			assert_string_equal(ri.res->name, path_cases[i].res);
		assert_string_equal(ri.ns, path_cases[i].ns);
		assert_string_equal(ri.name, path_cases[i].name);
		assert_string_equal(ri.sub, path_cases[i].sub);
		assert_string_equal(ri.verb, path_cases[i].verb);
	}
	/* an over-long name is refused, not truncated */
	char path[600];
	int n = snprintf(path, sizeof(path), "/apis/live.postgresql.cnpg.io/v1/namespaces/a/clusters/");
	memset(path + n, 'a', 300);
	path[n + 300] = '\0';
	struct as_reqinfo ri;
	assert_int_equal(as_parse_path("GET", path, false, &ri, NULL), -EINVAL);
}

static void test_fieldsel(void **state)
{
	struct as_fieldsel f;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(as_fieldsel_parse("metadata.name=pg,metadata.namespace!=kube-system", &f,
					   &err), 0);
	assert_int_equal(f.n, 2);
	assert_true(as_fieldsel_match(&f, "ns1", "pg"));
	assert_false(as_fieldsel_match(&f, "kube-system", "pg"));
	assert_false(as_fieldsel_match(&f, "ns1", "other"));
	assert_int_equal(as_fieldsel_parse("metadata.name==pg", &f, &err), 0);
	assert_true(as_fieldsel_match(&f, "x", "pg"));
	assert_int_equal(as_fieldsel_parse(NULL, &f, &err), 0);
	assert_true(as_fieldsel_match(&f, "x", "y"));
	assert_int_equal(as_fieldsel_parse("", &f, &err), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(as_fieldsel_parse("status.phase=Running", &f, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "status.phase"));
	assert_int_equal(as_fieldsel_parse("metadata.name", &f, NULL), -EINVAL);
	assert_int_equal(as_fieldsel_parse("a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9", &f, NULL),
			 -EINVAL);
}

/* --------------------------------------------------------------- authn */

static const char cm_json[] =
	"{\"data\":{\"requestheader-client-ca-file\":\"-----BEGIN CERTIFICATE-----\\nX\\n-----END "
	"CERTIFICATE-----\\n\",\"requestheader-allowed-names\":\"[\\\"front-proxy-client\\\"]\","
	"\"requestheader-username-headers\":\"[\\\"X-Remote-User\\\"]\","
	"\"requestheader-group-headers\":\"[\\\"X-Remote-Group\\\"]\","
	"\"requestheader-extra-headers-prefix\":\"[\\\"X-Remote-Extra-\\\"]\","
	"\"requestheader-uid-headers\":\"null\"}}";

static void test_authn_config(void **state)
{
	json_object *cm = parse(cm_json);
	struct as_authn_cfg c;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(as_authn_parse(cm, &c, &err), 0);
	assert_int_equal(c.n_allowed, 1);
	assert_true(as_authn_cn_allowed(&c, "front-proxy-client"));
	assert_false(as_authn_cn_allowed(&c, "admin"));
	assert_false(as_authn_cn_allowed(&c, NULL));
	assert_string_equal(c.user_headers[0], "X-Remote-User");
	as_authn_cfg_done(&c);
	json_object_put(cm);

	/* null lists: no CN restriction, library default header names */
	cm = parse("{\"data\":{\"requestheader-client-ca-file\":\"-----BEGIN CERTIFICATE-----\","
		   "\"requestheader-allowed-names\":\"null\"}}");
	assert_int_equal(as_authn_parse(cm, &c, &err), 0);
	assert_true(as_authn_cn_allowed(&c, "anyone"));
	assert_string_equal(c.group_headers[0], "X-Remote-Group");
	assert_string_equal(c.extra_prefixes[0], "X-Remote-Extra-");
	as_authn_cfg_done(&c);
	json_object_put(cm);

	static const char *const bad[] = {
		"{\"data\":{}}",
		"{}",
		"{\"data\":{\"requestheader-client-ca-file\":\"-----BEGIN CERTIFICATE-----\","
		"\"requestheader-allowed-names\":\"front-proxy-client\"}}",
		"{\"data\":{\"requestheader-client-ca-file\":\"-----BEGIN CERTIFICATE-----\","
		"\"requestheader-group-headers\":\"[1]\"}}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		cm = parse(bad[i]);
		assert_int_equal(as_authn_parse(cm, &c, &err), -EINVAL);
		json_object_put(cm);
	}
}

static void test_authn_headers(void **state)
{
	json_object *cm = parse(cm_json);
	struct as_authn_cfg c;
	assert_int_equal(as_authn_parse(cm, &c, NULL), 0);
	json_object_put(cm);
	struct as_user u = { 0 };
	as_authn_header(&c, &u, "Host", "x");
	as_authn_header(&c, &u, "x-remote-user", "alice");
	as_authn_header(&c, &u, "X-Remote-User", "mallory"); /* first one wins */
	as_authn_header(&c, &u, "X-Remote-Group", "devs");
	as_authn_header(&c, &u, "X-REMOTE-GROUP", "ops");
	as_authn_header(&c, &u, "X-Remote-Extra-Scopes", "a");
	as_authn_header(&c, &u, "X-Remote-Extra-Example.com%2fkey", "b");
	as_authn_header(&c, &u, "X-Remote-Extra-", "ignored");
	assert_int_equal(as_authn_finish(&u, NULL), 0);
	assert_string_equal(u.name, "alice");
	assert_int_equal(u.n_groups, 3);
	assert_string_equal(u.groups[0], "devs");
	assert_string_equal(u.groups[1], "ops");
	assert_string_equal(u.groups[2], "system:authenticated");
	assert_int_equal(u.n_extra, 2);
	assert_string_equal(u.extra_keys[0], "scopes");
	assert_string_equal(u.extra_keys[1], "example.com/key");
	assert_string_equal(u.extra_vals[1], "b");
	as_user_done(&u);

	struct as_user none = { 0 };
	as_authn_header(&c, &none, "X-Remote-Group", "system:masters");
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(as_authn_finish(&none, &err), -EACCES);
	as_user_done(&none);
	/* caps: a flood of group headers is bounded */
	struct as_user many = { 0 };
	for (int i = 0; i < 1000; i++)
		as_authn_header(&c, &many, "X-Remote-Group", "g");
	assert_int_equal(many.n_groups, AS_MAX_GROUPS);
	as_user_done(&many);
	as_authn_cfg_done(&c);
}

/* ----------------------------------------------------------------- SAR */

static void test_sar(void **state)
{
	char *g1[] = { (char *)"devs", (char *)"system:authenticated" };
	char *ek[] = { (char *)"scopes" }, *ev[] = { (char *)"a" };
	struct as_user u = { .name = (char *)"alice", .groups = g1, .n_groups = 2,
			     .extra_keys = ek, .extra_vals = ev, .n_extra = 1 };
	struct as_attrs a = { .resource = true, .verb = "list", .resource_name = "clusters",
			      .subresource = "", .ns = "ns1", .name = "" };
	_cleanup_free_ char *body = as_sar_body(&u, &a);
	json_object *b = parse(body);
	assert_string_equal(op_json_str_at(b, "kind"), "SubjectAccessReview");
	assert_string_equal(op_json_str_at(b, "spec.user"), "alice");
	assert_string_equal(op_json_str_at(b, "spec.resourceAttributes.group"),
			    "live.postgresql.cnpg.io");
	assert_string_equal(op_json_str_at(b, "spec.resourceAttributes.verb"), "list");
	assert_string_equal(op_json_str_at(b, "spec.resourceAttributes.namespace"), "ns1");
	assert_int_equal(json_object_array_length(op_json_at(b, "spec.groups")), 2);
	assert_int_equal(json_object_array_length(op_json_at(b, "spec.extra.scopes")), 1);
	json_object_put(b);
	struct as_attrs nr = { .resource = false, .verb = "get", .path = "/apis" };
	_cleanup_free_ char *body2 = as_sar_body(&u, &nr);
	b = parse(body2);
	assert_string_equal(op_json_str_at(b, "spec.nonResourceAttributes.path"), "/apis");
	assert_null(op_json_at(b, "spec.resourceAttributes"));
	json_object_put(b);

	/* keys differ by user, group, verb, namespace */
	_cleanup_free_ char *k1 = as_sar_key(&u, &a);
	struct as_user u2 = u;
	u2.n_groups = 1;
	_cleanup_free_ char *k2 = as_sar_key(&u2, &a);
	struct as_attrs a2 = a;
	a2.ns = "ns2";
	_cleanup_free_ char *k3 = as_sar_key(&u, &a2);
	assert_string_not_equal(k1, k2);
	assert_string_not_equal(k1, k3);

	struct as_sar_cache *c = as_sar_cache_new(1000, 2);
	assert_int_equal(as_sar_cache_get(c, k1, 0), -ENOENT);
	as_sar_cache_put(c, k1, true, 0);
	as_sar_cache_put(c, k2, false, 0);
	assert_int_equal(as_sar_cache_get(c, k1, 999), 1);
	assert_int_equal(as_sar_cache_get(c, k2, 999), 0); /* negative answers are cached too */
	assert_int_equal(as_sar_cache_get(c, k1, 1000), -ENOENT); /* expired */
	as_sar_cache_put(c, k3, true, 10); /* capacity 2: the oldest insertion goes */
	assert_int_equal(as_sar_cache_get(c, k1, 10), -ENOENT);
	assert_int_equal(as_sar_cache_get(c, k3, 10), 1);
	as_sar_cache_put(c, k2, true, 20); /* update in place */
	assert_int_equal(as_sar_cache_get(c, k2, 20), 1);
	as_sar_cache_free(c);
}

/* ---------------------------------------------------------- discovery */

static json_object *doc(int (*fn)(struct op_buf *))
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	assert_int_equal(fn(&b), 0);
	json_object *o = parse(op_buf_str(&b));
	op_buf_done(&b);
	return o;
}

static void test_discovery(void **state)
{
	json_object *d = doc(as_doc_resource_list);
	assert_string_equal(op_json_str_at(d, "kind"), "APIResourceList");
	assert_string_equal(op_json_str_at(d, "groupVersion"), "live.postgresql.cnpg.io/v1");
	json_object *rs = op_json_at(d, "resources");
	bool clusters = false, status = false, instances = false;
	for (size_t i = 0; i < json_object_array_length(rs); i++) {
		json_object *r = json_object_array_get_idx(rs, i);
		const char *name = op_json_str_at(r, "name");
		assert_non_null(op_json_str_at(r, "kind")); /* client-go drops a resource without */
		if (strcmp(name, "clusters") == 0) {
			clusters = true;
			assert_string_equal(op_json_str_at(r, "kind"), "LiveCluster");
			assert_string_equal(json_object_get_string(json_object_array_get_idx(
						    op_json_at(r, "shortNames"), 0)),
					    "pglive");
			assert_true(json_object_array_length(op_json_at(r, "categories")) > 0);
		}
		status |= strcmp(name, "clusters/status") == 0;
		instances |= strcmp(name, "instances") == 0;
	}
	assert_true(clusters && status && instances);
	json_object_put(d);

	d = doc(as_doc_discovery_v2);
	assert_string_equal(op_json_str_at(d, "apiVersion"), "apidiscovery.k8s.io/v2");
	json_object *item = json_object_array_get_idx(op_json_at(d, "items"), 0);
	assert_string_equal(op_json_str_at(item, "metadata.name"), "live.postgresql.cnpg.io");
	json_object *ver = json_object_array_get_idx(op_json_at(item, "versions"), 0);
	json_object *r0 = json_object_array_get_idx(op_json_at(ver, "resources"), 0);
	assert_string_equal(op_json_str_at(r0, "scope"), "Namespaced");
	assert_string_equal(op_json_str_at(r0, "responseKind.kind"), "LiveCluster");
	json_object_put(d);

	d = doc(as_doc_group_list);
	assert_string_equal(op_json_str_at(d, "kind"), "APIGroupList");
	json_object_put(d);
	d = doc(as_doc_group);
	assert_string_equal(op_json_str_at(d, "preferredVersion.groupVersion"),
			    "live.postgresql.cnpg.io/v1");
	json_object_put(d);

	d = doc(as_doc_openapi_v3_gv);
	json_object *s = op_json_at(d, "components.schemas");
	json_object *lc = NULL;
	assert_true(json_object_object_get_ex(s, "io.cnpg.postgresql.live.v1.LiveCluster", &lc));
	assert_string_equal(
		op_json_str_at(json_object_array_get_idx(
				       op_json_at(lc, "x-kubernetes-group-version-kind"), 0),
			       "kind"),
		"LiveCluster");
	assert_non_null(op_json_at(lc, "properties.status.properties.sync"));
	json_object_put(d);
	d = doc(as_doc_openapi_v2);
	assert_string_equal(op_json_str_at(d, "swagger"), "2.0");
	json_object_put(d);
	d = doc(as_doc_openapi_v3_root);
	assert_non_null(op_json_at(d, "paths"));
	json_object_put(d);

	assert_true(as_accept_v2("application/json;g=apidiscovery.k8s.io;v=v2;as="
				 "APIGroupDiscoveryList,application/json"));
	assert_false(as_accept_v2("application/json"));
	assert_false(as_accept_v2(NULL));
	assert_true(as_accept_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/"
				    "json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
	assert_false(as_accept_table("application/json"));
	assert_false(as_accept_table(NULL));
}

/* ------------------------------------------------------- live objects */

static const char cluster_json[] =
	"{\"metadata\":{\"name\":\"pg\",\"namespace\":\"ns1\",\"uid\":\"u1\","
	"\"creationTimestamp\":\"2026-12-02T10:00:00Z\",\"labels\":{\"team\":\"a\"}},"
	"\"spec\":{\"instances\":3,\"postgresql\":{\"synchronous\":{\"method\":\"any\","
	"\"number\":1}}},\"status\":{\"phase\":\"Cluster in healthy state\","
	"\"currentPrimary\":\"pg-1\",\"certificates\":{\"expirations\":{\"pg-ca\":\"x\"}}}}";

static const char primary_doc[] =
	"{\"isPrimary\":true,\"currentLsn\":\"0/3000100\",\"timeLineID\":2,\"systemID\":\"7\","
	"\"pendingRestart\":true,\"replicationInfo\":["
	"{\"applicationName\":\"pg-2\",\"state\":\"streaming\",\"syncState\":\"quorum\","
	"\"replayLag\":\"00:00:01.5\"},"
	"{\"applicationName\":\"pg-3\",\"state\":\"streaming\",\"syncState\":\"quorum\","
	"\"replayLag\":null}]}";
static const char replica2_doc[] =
	"{\"isPrimary\":false,\"receivedLsn\":\"0/3000100\",\"replayLsn\":\"0/3000000\","
	"\"timeLineID\":2,\"isWalReceiverActive\":true}";

static json_object *pod(const char *name, const char *node)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"labels\":{\"cnpg.io/"
		 "cluster\":\"pg\"}},\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"podIP\":"
		 "\"10.0.0.1\"}}",
		 name, node);
	return parse(buf);
}

static void test_interval_age(void **state)
{
	double s = 0;
	assert_int_equal(rc_interval_seconds("00:00:01.5", &s), 0);
	assert_true(s > 1.49 && s < 1.51);
	assert_int_equal(rc_interval_seconds("01:02:03", &s), 0);
	assert_true(s > 3722.9 && s < 3723.1);
	assert_int_equal(rc_interval_seconds("1 day 00:00:10", &s), 0);
	assert_true(s > 86409.9 && s < 86410.1);
	assert_int_equal(rc_interval_seconds("2 days", &s), 0);
	assert_int_equal(rc_interval_seconds("", &s), -EINVAL);
	assert_int_equal(rc_interval_seconds(NULL, &s), -EINVAL);
	assert_int_equal(rc_interval_seconds("abc", &s), -EINVAL);
	assert_int_equal(rc_interval_seconds("00:99:00", &s), -EINVAL);
	char age[16];
	as_age(45, age, sizeof(age));
	assert_string_equal(age, "45s");
	as_age(300, age, sizeof(age));
	assert_string_equal(age, "5m");
	as_age(3 * 3600, age, sizeof(age));
	assert_string_equal(age, "3h");
	as_age(400 * 86400, age, sizeof(age));
	assert_string_equal(age, "400d");
	as_age(-5, age, sizeof(age));
	assert_string_equal(age, "0s");
}

static void test_live_objects(void **state)
{
	json_object *cl = parse(cluster_json);
	json_object *p1 = pod("pg-1", "n1"), *p2 = pod("pg-2", "n2"), *p3 = pod("pg-3", "n3");
	json_object *d1 = parse(primary_doc), *d2 = parse(replica2_doc);
	int64_t now = 1796212800000LL; /* 2026-12-02T12:00:00Z */
	struct as_inst_view v[3] = {
		{ .pod = p1, .doc = d1, .reachable = true, .seen_ms = now - 500 },
		{ .pod = p2, .doc = d2, .reachable = true, .seen_ms = now - 200 },
		{ .pod = p3, .doc = NULL, .reachable = false, .seen_ms = now - 60000,
		  .error = "GET /pg/status: Timeout" },
	};
	json_object *i1 = as_live_instance(cl, &v[0], d1, now, false);
	assert_string_equal(op_json_str_at(i1, "kind"), "LiveInstance");
	assert_string_equal(op_json_str_at(i1, "status.role"), "primary");
	assert_string_equal(op_json_str_at(i1, "status.receivedLSN"), "0/3000100");
	assert_string_equal(op_json_str_at(i1, "status.node"), "n1");
	assert_string_equal(op_json_str_at(i1, "metadata.labels.cnpg.io/cluster") ?: "pg", "pg");
	json_object *i2 = as_live_instance(cl, &v[1], d1, now, false);
	assert_string_equal(op_json_str_at(i2, "status.role"), "sync standby");
	assert_int_equal(json_object_get_int64(op_json_at(i2, "status.lagBytes")), 0x100);
	assert_true(json_object_get_double(op_json_at(i2, "status.lagSeconds")) > 1.4);
	assert_int_equal(json_object_get_int64(op_json_at(i2, "status.timeline")), 2);
	json_object *i3 = as_live_instance(cl, &v[2], d1, now, false);
	assert_string_equal(op_json_str_at(i3, "status.role"), "unreachable");
	assert_false(json_object_get_boolean(op_json_at(i3, "status.reachable")));
	assert_string_equal(op_json_str_at(i3, "status.error"), "GET /pg/status: Timeout");
	assert_non_null(op_json_str_at(i3, "status.lastSeen"));
	assert_null(op_json_at(i3, "status.lagSeconds")); /* no WAL flowing: no seconds */
	assert_null(op_json_at(i3, "status.lastArchivedWAL")); /* nothing said: omitted */
	/* the archiver as the instance reports it */
	json_object *da = parse("{\"isPrimary\":true,\"lastArchivedWAL\":\"000000020000000000000007\","
				"\"lastArchivedWALTime\":\"2026-12-02T11:59:00Z\",\"readyWALs\":3,"
				"\"archiveError\":\"PUT s3://b/k: 403 AccessDenied\"}");
	struct as_inst_view va = { .pod = p1, .doc = da, .reachable = true, .seen_ms = now };
	json_object *ia = as_live_instance(cl, &va, da, now, false);
	assert_string_equal(op_json_str_at(ia, "status.lastArchivedWAL"), "000000020000000000000007");
	assert_string_equal(op_json_str_at(ia, "status.lastArchivedWALTime"),
			    "2026-12-02T11:59:00Z");
	assert_int_equal(json_object_get_int64(op_json_at(ia, "status.readyWALs")), 3);
	assert_string_equal(op_json_str_at(ia, "status.archiveError"),
			    "PUT s3://b/k: 403 AccessDenied");
	json_object_put(ia);
	json_object_put(da);

	json_object *lc = as_live_cluster(cl, v, 3, now, false);
	assert_string_equal(op_json_str_at(lc, "kind"), "LiveCluster");
	assert_string_equal(op_json_str_at(lc, "status.primary"), "pg-1");
	assert_string_equal(op_json_str_at(lc, "status.ready"), "2/3");
	assert_string_equal(op_json_str_at(lc, "status.sync"), "quorum 1/2");
	assert_int_equal(json_object_get_int64(op_json_at(lc, "status.maxLagBytes")), 0x100);
	assert_int_equal(json_object_get_int64(op_json_at(lc, "status.timeline")), 2);
	assert_int_equal(json_object_get_int64(op_json_at(lc, "status.pendingRestart")), 1);
	assert_string_equal(op_json_str_at(lc, "status.systemID"), "7");
	assert_string_equal(op_json_str_at(lc, "status.phase"), "Cluster in healthy state");
	assert_int_equal(json_object_array_length(op_json_at(lc, "status.unreachable")), 1);
	assert_null(op_json_at(lc, "status.members"));
	json_object *full = as_live_cluster(cl, v, 3, now, true);
	assert_int_equal(json_object_array_length(op_json_at(full, "status.members")), 3);
	assert_non_null(op_json_at(full, "status.certificates.expirations"));

	/* Table: one cell per column, wide columns at priority 1, rv set */
	json_object *objs = json_object_new_array();
	op_jpush(objs, json_object_get(lc));
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	assert_int_equal(as_render_table(&b, as_resource_clusters(), objs, "42", now / 1000, true),
			 0);
	json_object *t = parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(t, "kind"), "Table");
	assert_string_equal(op_json_str_at(t, "metadata.resourceVersion"), "42");
	json_object *defs = op_json_at(t, "columnDefinitions");
	json_object *row = json_object_array_get_idx(op_json_at(t, "rows"), 0);
	json_object *cells = op_json_at(row, "cells");
	assert_int_equal(json_object_array_length(defs), json_object_array_length(cells));
	for (size_t i = 0; i < json_object_array_length(defs); i++) {
		json_object *d = json_object_array_get_idx(defs, i);
		const char *name = op_json_str_at(d, "name");
		int prio = json_object_get_int(op_json_at(d, "priority"));
		bool wide = strcmp(name, "System ID") == 0 || strcmp(name, "Current WAL") == 0 ||
			    strcmp(name, "Pending Restart") == 0 || strcmp(name, "Last Seen") == 0;
		assert_int_equal(prio, wide ? 1 : 0);
		const char *cell = json_object_get_string(json_object_array_get_idx(cells, i));
		if (strcmp(name, "Max Lag") == 0) /* = status.maxLag, the Cluster's column */
			assert_string_equal(cell, op_json_str_at(lc, "status.maxLag"));
		if (strcmp(name, "Max Lag") == 0)
			assert_string_equal(cell, "256 B / 1.5s");
		if (strcmp(name, "Sync") == 0)
			assert_string_equal(cell, "quorum 1/2");
		if (strcmp(name, "Age") == 0)
			assert_string_equal(cell, "2h");
	}
	assert_string_equal(op_json_str_at(row, "object.kind"), "PartialObjectMetadata");
	assert_string_equal(op_json_str_at(row, "object.metadata.namespace"), "ns1");
	json_object_put(t);
	op_buf_reset(&b);
	assert_int_equal(as_render_list(&b, as_resource_clusters(), objs, "42"), 0);
	t = parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(t, "kind"), "LiveClusterList");
	assert_int_equal(json_object_array_length(op_json_at(t, "items")), 1);
	json_object_put(t);
	op_buf_reset(&b);
	assert_int_equal(as_status(&b, 404, "NotFound", "clusters \"x\" not found"), 0);
	t = parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(t, "kind"), "Status");
	assert_int_equal(json_object_get_int(op_json_at(t, "code")), 404);
	assert_string_equal(op_json_str_at(t, "reason"), "NotFound");
	json_object_put(t);
	op_buf_done(&b);

	/* no primary answering: sync unknown, primary from the Cluster status */
	struct as_inst_view down[1] = { { .pod = p1, .reachable = false } };
	json_object *lc2 = as_live_cluster(cl, down, 1, now, false);
	assert_string_equal(op_json_str_at(lc2, "status.primary"), "pg-1");
	assert_string_equal(op_json_str_at(lc2, "status.sync"), "unknown");
	assert_string_equal(op_json_str_at(lc2, "status.ready"), "0/1");

	json_object *all[] = { objs, lc, lc2, full, i1, i2, i3, d1, d2, p1, p2, p3, cl };
	for (size_t i = 0; i < OP_ARRAY_SIZE(all); i++)
		json_object_put(all[i]);
}

static void test_watch_event(void **state)
{
	json_object *o = parse("{\"kind\":\"LiveCluster\",\"apiVersion\":\"live.postgresql.cnpg.io/v1\","
			       "\"metadata\":{\"name\":\"pg\",\"namespace\":\"ns1\","
			       "\"resourceVersion\":\"7\"},\"status\":{\"primary\":\"pg-1\"}}");
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	assert_int_equal(as_watch_event(&b, "ADDED", as_resource_clusters(), o, false, false, 0), 0);
	assert_int_equal(b.data[b.len - 1], '\n'); /* one JSON object per line */
	assert_null(memchr(b.data, '\n', b.len - 1));
	json_object *e = parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(e, "type"), "ADDED");
	assert_string_equal(op_json_str_at(e, "object.status.primary"), "pg-1");
	json_object_put(e);
	assert_int_equal(as_watch_event(&b, "MODIFIED", as_resource_clusters(), o, true, true, 0), 0);
	e = parse(op_buf_str(&b));
	assert_string_equal(op_json_str_at(e, "object.kind"), "Table");
	assert_string_equal(op_json_str_at(e, "object.metadata.resourceVersion"), "7");
	assert_int_equal(json_object_array_length(op_json_at(e, "object.rows")), 1);
	assert_true(json_object_array_length(op_json_at(e, "object.columnDefinitions")) > 0);
	json_object_put(e);
	/* later Table events carry no column definitions */
	assert_int_equal(as_watch_event(&b, "MODIFIED", as_resource_clusters(), o, true, false, 0), 0);
	e = parse(op_buf_str(&b));
	assert_int_equal(json_object_array_length(op_json_at(e, "object.columnDefinitions")), 0);
	json_object_put(e);
	op_buf_done(&b);
	json_object_put(o);
}

/* ---------------------------------------------------------- snapshots */

struct fake {
	pthread_mutex_t mu;
	int fetches;
	int done; /* fetches finished */
	int sleep_ms;
	struct rc_status_pool *pools[8]; /* what each fetch was given */
};

static json_object *fake_clusters(void *ud, const char *ns)
{
	return parse("[{\"metadata\":{\"name\":\"pg\",\"namespace\":\"ns1\"}}]");
}

static json_object *fake_pods(void *ud, const char *ns, const char *cluster)
{
	return parse("[{\"metadata\":{\"name\":\"pg-1\",\"namespace\":\"ns1\"},\"status\":"
		     "{\"podIP\":\"10.0.0.1\"}},{\"metadata\":{\"name\":\"pg-2\",\"namespace\":"
		     "\"ns1\"},\"status\":{\"podIP\":\"10.0.0.2\"}}]");
}

static int fake_fetch(void *ud, const char *ns, const char *cluster, struct rc_live_instance *v,
		      size_t n, long timeout_ms, struct rc_status_pool *pool, struct op_err *err)
{
	struct fake *f = ud;
	pthread_mutex_lock(&f->mu);
	if (f->fetches < 8)
		f->pools[f->fetches] = pool;
	f->fetches++;
	pthread_mutex_unlock(&f->mu);
	int wait = f->sleep_ms < timeout_ms ? f->sleep_ms : (int)timeout_ms;
	usleep((useconds_t)wait * 1000);
	pthread_mutex_lock(&f->mu);
	f->done++;
	pthread_mutex_unlock(&f->mu);
	for (size_t i = 0; i < n; i++) {
		if (f->sleep_ms > timeout_ms || strcmp(v[i].name, "pg-2") == 0) {
			v[i].error = op_strdup("GET /pg/status: Timeout was reached");
			continue;
		}
		v[i].doc = parse("{\"isPrimary\":true}");
	}
	return 0;
}

struct getter {
	struct as_snaps *s;
	int reachable;
};

static void *get_main(void *arg)
{
	struct getter *g = arg;
	json_object *cl = fake_clusters(NULL, NULL);
	struct as_views v[1];
	as_snaps_get(g->s, cl, v);
	g->reachable = 0;
	for (size_t k = 0; k < v[0].n; k++)
		g->reachable += v[0].v[k].reachable;
	as_views_free(v, 1);
	json_object_put(cl);
	return NULL;
}

static void test_snaps_single_flight(void **state)
{
	struct fake f = { .sleep_ms = 150 };
	pthread_mutex_init(&f.mu, NULL);
	struct as_source src = { .clusters = fake_clusters, .pods = fake_pods, .fetch = fake_fetch,
				 .ud = &f };
	struct as_snaps *s = as_snaps_new(&src, 1000, 2000, 0);
	pthread_t t[6];
	struct getter g[6];
	for (int i = 0; i < 6; i++) {
		g[i] = (struct getter){ s, -1 };
		pthread_create(&t[i], NULL, get_main, &g[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(g[i].reachable, 1); /* pg-1 answered, pg-2 did not */
	}
	assert_int_equal(f.fetches, 1); /* six concurrent requests, one fetch */
	/* fresh: no new fetch */
	get_main(&g[0]);
	assert_int_equal(f.fetches, 1);
	/* older than max_age: fetched again */
	usleep(1100 * 1000);
	get_main(&g[0]);
	assert_int_equal(f.fetches, 2);
	/* past half its age: refreshed ahead in the background, the request uses the
	 * current entry and does not wait for that (slow) fetch */
	f.sleep_ms = 800;
	usleep(600 * 1000);
	get_main(&g[0]);
	assert_int_equal(g[0].reachable, 1);
	pthread_mutex_lock(&f.mu);
	int done_then = f.done;
	pthread_mutex_unlock(&f.mu);
	assert_int_equal(done_then, 2); /* returned before the refresh ended */
	for (int i = 0; i < 100; i++) { /* the refresh thread starts soon after */
		pthread_mutex_lock(&f.mu);
		int n = f.fetches;
		pthread_mutex_unlock(&f.mu);
		if (n == 3)
			break;
		usleep(10 * 1000);
	}
	assert_int_equal(f.fetches, 3);
	/* every fetch of the Cluster had the same pool of kept-alive connections */
	assert_non_null(f.pools[0]);
	assert_ptr_equal(f.pools[1], f.pools[0]);
	assert_ptr_equal(f.pools[2], f.pools[0]);

	/* the unreachable instance keeps its error and no status */
	json_object *cl = fake_clusters(NULL, NULL);
	struct as_views v[1];
	as_snaps_get(s, cl, v);
	assert_false(v[0].v[1].reachable);
	assert_non_null(strstr(v[0].v[1].error, "Timeout"));
	assert_true(v[0].v[0].reachable);
	assert_non_null(v[0].v[0].doc);
	as_views_free(v, 1);
	json_object_put(cl);
	as_snaps_free(s);
	pthread_mutex_destroy(&f.mu);
}

static int fetches_of(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->fetches;
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void test_snaps_interest(void **state)
{
	/* instances asked for within the interest window are refreshed in the
	 * background (past half their age) without further requests, and a request
	 * then finds them fresh; after the window they are left alone */
	struct fake f = { .sleep_ms = 10 };
	pthread_mutex_init(&f.mu, NULL);
	struct as_source src = { .clusters = fake_clusters, .pods = fake_pods, .fetch = fake_fetch,
				 .ud = &f };
	struct as_snaps *s = as_snaps_new(&src, 400, 2000, 1500);
	struct getter g = { s, -1 };
	get_main(&g);
	assert_int_equal(fetches_of(&f), 1);
	usleep(700 * 1000); /* past half its age twice: refreshed by the refresher */
	int n = fetches_of(&f);
	assert_true(n >= 2);
	get_main(&g); /* fresh thanks to the refresher: no fetch of its own, no wait */
	assert_true(fetches_of(&f) <= n + 1);
	assert_int_equal(g.reachable, 1);
	usleep(2500 * 1000); /* past the interest window: no more refreshes */
	n = fetches_of(&f);
	usleep(600 * 1000);
	assert_int_equal(fetches_of(&f), n);
	as_snaps_free(s);
	pthread_mutex_destroy(&f.mu);
}

static void test_snaps_deadline(void **state)
{
	/* a fetch that takes far longer than the timeout: the request still returns
	 * within timeout + margin, with the instances marked not reachable */
	struct fake f = { .sleep_ms = 100000 };
	pthread_mutex_init(&f.mu, NULL);
	struct as_source src = { .clusters = fake_clusters, .pods = fake_pods, .fetch = fake_fetch,
				 .ud = &f };
	struct as_snaps *s = as_snaps_new(&src, 1000, 300, 0);
	json_object *cl = fake_clusters(NULL, NULL);
	struct as_views v[1];
	int64_t t0 = as_now_ms();
	as_snaps_get(s, cl, v);
	int64_t took = as_now_ms() - t0;
	assert_true(took < 300 + AS_MARGIN_MS + 200);
	assert_false(v[0].v[0].reachable);
	assert_false(v[0].v[1].reachable);
	as_views_free(v, 1);
	assert_int_equal(fetches_of(&f), 1);
	/* stale now, and known unreachable: the next request does not wait for the
	 * new fetch (300 ms here) but shows them unreachable at once, the fetch
	 * running in the background */
	usleep(1100 * 1000);
	t0 = as_now_ms();
	as_snaps_get(s, cl, v);
	took = as_now_ms() - t0;
	assert_true(took < 150);
	assert_false(v[0].v[0].reachable);
	assert_non_null(v[0].v[0].error);
	as_views_free(v, 1);
	for (int i = 0; i < 100 && fetches_of(&f) < 2; i++)
		usleep(10 * 1000);
	assert_int_equal(fetches_of(&f), 2);
	json_object_put(cl);
	as_snaps_free(s); /* waits for the fetch thread */
	pthread_mutex_destroy(&f.mu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_action_parse),
		cmocka_unit_test(test_fieldsel),
		cmocka_unit_test(test_authn_config),
		cmocka_unit_test(test_authn_headers),
		cmocka_unit_test(test_sar),
		cmocka_unit_test(test_discovery),
		cmocka_unit_test(test_interval_age),
		cmocka_unit_test(test_live_objects),
		cmocka_unit_test(test_watch_event),
		cmocka_unit_test(test_snaps_single_flight),
		cmocka_unit_test(test_snaps_interest),
		cmocka_unit_test(test_snaps_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
