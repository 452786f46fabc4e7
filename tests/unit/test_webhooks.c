/* tests/unit/test_webhooks.c - webhooks/: defaulting (D1-D14) and its patch,
 * JSON patch diff/apply, validation driver, U and W rules, AdmissionReview. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include <cmocka.h>
/* cmocka maps free to test_free under UNIT_TESTING; our memory comes from libc. */
#undef free

#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/yaml.h"
#include "webhooks/patch.h"
#include "webhooks/webhooks.h"

/* ---- helpers ---- */

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, strlen(s), 0, &o, &err) != 0)
		fail_msg("bad test JSON: %s: %s", err.msg, s);
	return o;
}

static json_object *at(json_object *o, const char *dotted)
{
	return op_json_at(o, dotted);
}

static const char *str_at(json_object *o, const char *dotted)
{
	json_object *v = at(o, dotted);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void assert_str_at(json_object *o, const char *dotted, const char *want)
{
	const char *got = str_at(o, dotted);
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: got %s, want '%s'", dotted, got ? got : "(none)", want);
}

static json_object *param_obj(json_object *o)
{
	return at(o, "spec.postgresql.parameters");
}

static const char *param(json_object *o, const char *key)
{
	json_object *p = param_obj(o), *v = NULL;
	if (!p || !json_object_object_get_ex(p, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Runs wh_default on a copy of src, checks that the patch applied to src
 * gives the defaulted object and that defaulting again yields an empty patch.
 * Returns the defaulted object (owned). */
static json_object *defaulted(const char *src)
{
	json_object *orig = parse(src), *obj = parse(src), *patch = NULL, *applied = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default(obj, &patch, &err), 0);
	assert_true(json_object_is_type(patch, json_type_array));
	if (wh_patch_apply(orig, patch, &applied, &err) != 0)
		fail_msg("patch does not apply: %s", err.msg);
	assert_true(json_object_equal(applied, obj));
	json_object_put(applied);
	json_object_put(patch);
	/* idempotent: an already-defaulted object gives an empty patch */
	assert_int_equal(wh_default(obj, &patch, &err), 0);
	if (json_object_array_length(patch) != 0)
		fail_msg("second defaulting not a no-op: %s", json_object_to_json_string(patch));
	json_object_put(patch);
	json_object_put(orig);
	return obj;
}

/* Number of operations wh_default produces for src. */
static size_t patch_len(const char *src)
{
	json_object *obj = parse(src), *patch = NULL;
	assert_int_equal(wh_default(obj, &patch, NULL), 0);
	size_t n = json_object_array_length(patch);
	json_object_put(patch);
	json_object_put(obj);
	return n;
}

#define META "\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":\"pg\"}"
#define CLUSTER(spec) "{" META ",\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}" spec "}}"
#define CLUSTER_ANN(ann, spec)                                                                     \
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":\"pg\"," \
	"\"annotations\":{" ann "}},\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}" spec   \
	"}}"

/* ---- defaulting ---- */

static void test_default_minimal_all_rules(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(""));
	assert_str_at(o, "spec.imageName", WH_DEFAULT_IMAGE);                  /* D1 */
	assert_non_null(at(o, "spec.bootstrap"));                              /* D2 */
	assert_str_at(o, "spec.bootstrap.initdb.database", "app");             /* D3 */
	assert_str_at(o, "spec.bootstrap.initdb.owner", "app");
	assert_str_at(o, "spec.bootstrap.initdb.encoding", "UTF8");
	assert_str_at(o, "spec.bootstrap.initdb.localeCollate", "C");
	assert_str_at(o, "spec.bootstrap.initdb.localeCType", "C");
	assert_str_at(o, "spec.affinity.podAntiAffinityType", "preferred");    /* D4 */
	assert_null(at(o, "spec.backup"));                                     /* D5 */
	assert_string_equal(param(o, "wal_level"), "logical");                 /* D6 */
	assert_string_equal(param(o, "archive_mode"), "on");
	assert_string_equal(param(o, "archive_timeout"), "5min");
	assert_string_equal(param(o, "shared_preload_libraries"), "");
	assert_string_equal(param(o, "ssl_max_protocol_version"), "TLSv1.3");
	assert_str_at(o, "spec.logLevel", "info");                             /* D7 */
	assert_true(json_object_is_type(at(o, "spec.monitoring"), json_type_object)); /* D8 */
	assert_int_equal(json_object_object_length(at(o, "spec.monitoring")), 0);
	assert_true(json_object_get_boolean(at(o, "spec.replicationSlots.highAvailability.enabled")));
	assert_str_at(o, "spec.replicationSlots.highAvailability.slotPrefix", "_cnpg_"); /* D9 */
	assert_true(json_object_get_boolean(at(o, "spec.replicationSlots.synchronizeReplicas.enabled")));
	assert_null(at(o, "spec.postgresql.synchronous"));                     /* D11 */
	assert_null(at(o, "spec.plugins"));                                    /* D12 */
	json_object *ic = at(o, "spec.probes.liveness.isolationCheck");        /* D13 */
	assert_true(json_object_get_boolean(at(ic, "enabled")));
	assert_int_equal(json_object_get_int(at(ic, "requestTimeout")), 1000);
	assert_int_equal(json_object_get_int(at(ic, "connectionTimeout")), 1000);
	/* D6 keys are sorted like Go's map encoding */
	const char *prev = "";
	json_object_object_foreach(param_obj(o), k, v)
	{
		(void)v;
		assert_true(strcmp(prev, k) < 0);
		prev = k;
	}
	json_object_put(o);
}

static void test_default_no_spec_and_errors(void **state)
{
	(void)state;
	json_object *o = defaulted("{" META "}");
	assert_str_at(o, "spec.imageName", WH_DEFAULT_IMAGE);
	json_object_put(o);
	/* spec of the wrong type: left alone for the validator */
	assert_int_equal(patch_len("{" META ",\"spec\":5}"), 0);
	json_object *arr = parse("[]"), *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default(arr, &patch, &err), -EINVAL);
	assert_null(patch);
	assert_string_equal(err.msg, "cluster: expected object, got array");
	json_object_put(arr);
	/* a wrongly typed sub-field is skipped, not "fixed" */
	o = defaulted(CLUSTER(",\"bootstrap\":\"x\",\"logLevel\":7"));
	assert_str_at(o, "spec.bootstrap", "x");
	assert_int_equal(json_object_get_int(at(o, "spec.logLevel")), 7);
	json_object_put(o);
}

static void test_default_d1_image(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(",\"imageName\":\"my/pg:16.1\""));
	assert_str_at(o, "spec.imageName", "my/pg:16.1");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"imageName\":\"\""));
	assert_str_at(o, "spec.imageName", WH_DEFAULT_IMAGE);
	json_object_put(o);
	o = defaulted(CLUSTER(",\"imageCatalogRef\":{\"kind\":\"ImageCatalog\",\"name\":\"c\",\"major\":16}"));
	assert_null(at(o, "spec.imageName"));
	assert_string_equal(param(o, "wal_level"), "logical"); /* D6 from the catalog major */
	json_object_put(o);
	o = defaulted(CLUSTER(",\"imageCatalogRef\":{\"kind\":\"ImageCatalog\",\"name\":\"c\"}"));
	assert_null(param_obj(o)); /* major unknown: D6 skipped */
	json_object_put(o);
	/* settings change the default image */
	static const struct wh_settings s = { .default_image = "example.org/pg:15.9" };
	wh_settings_set(&s);
	o = defaulted(CLUSTER(""));
	assert_str_at(o, "spec.imageName", "example.org/pg:15.9");
	json_object_put(o);
	wh_settings_set(NULL);
	assert_string_equal(wh_settings_get()->default_image, WH_DEFAULT_IMAGE);
}

static void test_default_d3_bootstrap(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(",\"bootstrap\":{\"initdb\":{\"database\":\"db\"}}"));
	assert_str_at(o, "spec.bootstrap.initdb.owner", "db");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"bootstrap\":{\"initdb\":{\"database\":\"db\",\"owner\":\"me\","
			      "\"encoding\":\"LATIN1\",\"localeCollate\":\"en_US\"}}"));
	assert_str_at(o, "spec.bootstrap.initdb.owner", "me");
	assert_str_at(o, "spec.bootstrap.initdb.encoding", "LATIN1");
	assert_str_at(o, "spec.bootstrap.initdb.localeCollate", "en_US");
	assert_str_at(o, "spec.bootstrap.initdb.localeCType", "C");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"bootstrap\":{\"initdb\":{\"import\":{\"type\":\"monolith\"}}}"));
	assert_null(at(o, "spec.bootstrap.initdb.database"));
	assert_null(at(o, "spec.bootstrap.initdb.owner"));
	json_object_put(o);
	o = defaulted(CLUSTER(",\"bootstrap\":{\"recovery\":{\"source\":\"s\"}}"));
	assert_str_at(o, "spec.bootstrap.recovery.database", "app");
	assert_str_at(o, "spec.bootstrap.recovery.owner", "app");
	assert_null(at(o, "spec.bootstrap.initdb"));
	json_object_put(o);
	o = defaulted(CLUSTER(",\"bootstrap\":{\"pg_basebackup\":{\"source\":\"s\",\"owner\":\"o\"}}"));
	assert_str_at(o, "spec.bootstrap.pg_basebackup.database", "app");
	assert_str_at(o, "spec.bootstrap.pg_basebackup.owner", "o");
	assert_null(at(o, "spec.bootstrap.initdb"));
	json_object_put(o);
}

static void test_default_d4_d5_d7(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(",\"affinity\":{\"enablePodAntiAffinity\":false}"));
	assert_null(at(o, "spec.affinity.podAntiAffinityType"));
	json_object_put(o);
	o = defaulted(CLUSTER(",\"affinity\":{\"podAntiAffinityType\":\"required\"}"));
	assert_str_at(o, "spec.affinity.podAntiAffinityType", "required");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"backup\":{}"));
	assert_str_at(o, "spec.backup.target", "prefer-standby");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"backup\":{\"target\":\"primary\"},\"logLevel\":\"debug\""));
	assert_str_at(o, "spec.backup.target", "primary");
	assert_str_at(o, "spec.logLevel", "debug");
	json_object_put(o);
}

static void test_default_d6_parameters(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(",\"postgresql\":{\"parameters\":{\"wal_level\":\"replica\","
					   "\"work_mem\":\"8MB\",\"archive_mode\":\"off\","
					   "\"port\":\"5433\"}}"));
	assert_string_equal(param(o, "wal_level"), "replica");
	assert_string_equal(param(o, "work_mem"), "8MB");
	assert_string_equal(param(o, "archive_mode"), "on"); /* computed, user value replaced */
	assert_string_equal(param(o, "port"), "5433");       /* fixed kept for V30 to reject */
	json_object_put(o);
	o = defaulted(CLUSTER_ANN("\"cnpg.io/skipWalArchiving\":\"enabled\"", ""));
	assert_string_equal(param(o, "archive_mode"), "off");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"replica\":{\"enabled\":true,\"source\":\"s\"}"));
	assert_string_equal(param(o, "archive_mode"), "always");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"replica\":{\"primary\":\"other\",\"source\":\"s\"}"));
	assert_string_equal(param(o, "archive_mode"), "always"); /* self (name) != primary */
	json_object_put(o);
	o = defaulted(CLUSTER(",\"replica\":{\"primary\":\"pg\",\"source\":\"s\"}"));
	assert_string_equal(param(o, "archive_mode"), "on");
	json_object_put(o);
	static const char *const unresolved[] = { "x/pg:latest", "x/pg", "x/pg@sha256:abc" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(unresolved); i++) {
		char buf[256];
		snprintf(buf, sizeof(buf), CLUSTER(",\"imageName\":\"%s\""), unresolved[i]);
		o = defaulted(buf);
		assert_null(param_obj(o));
		json_object_put(o);
	}
	o = defaulted(CLUSTER(",\"imageName\":\"x/pg:16.2-bookworm\""));
	assert_non_null(param_obj(o));
	json_object_put(o);
}

static void test_default_d8_monitoring(void **state)
{
	(void)state;
	static const struct wh_settings s = { .monitoring_configmap = "cnpg-default-monitoring",
					      .monitoring_secret = "sec" };
	wh_settings_set(&s);
	json_object *o = defaulted(CLUSTER(",\"monitoring\":{\"customQueriesConfigMap\":[{\"name\":"
					   "\"mine\",\"key\":\"q\"}]}"));
	json_object *cm = at(o, "spec.monitoring.customQueriesConfigMap");
	assert_int_equal(json_object_array_length(cm), 2);
	assert_str_at(json_object_array_get_idx(cm, 0), "name", "cnpg-default-monitoring");
	assert_str_at(json_object_array_get_idx(cm, 0), "key", "queries");
	assert_str_at(json_object_array_get_idx(cm, 1), "name", "mine");
	assert_int_equal(json_object_array_length(at(o, "spec.monitoring.customQueriesSecret")), 1);
	json_object_put(o);
	/* already listed: unchanged */
	o = defaulted(CLUSTER(",\"monitoring\":{\"customQueriesConfigMap\":[{\"name\":\"x\"},{\"name\":"
			      "\"cnpg-default-monitoring\",\"key\":\"other\"}]}"));
	assert_int_equal(json_object_array_length(at(o, "spec.monitoring.customQueriesConfigMap")), 2);
	json_object_put(o);
	o = defaulted(CLUSTER(",\"monitoring\":{\"disableDefaultQueries\":true}"));
	assert_null(at(o, "spec.monitoring.customQueriesConfigMap"));
	json_object_put(o);
	wh_settings_set(NULL);
	o = defaulted(CLUSTER(""));
	assert_null(at(o, "spec.monitoring.customQueriesConfigMap"));
	json_object_put(o);
}

static void test_default_d9_d10_d11(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER(",\"replicationSlots\":{\"highAvailability\":{\"enabled\":false}}"));
	assert_false(json_object_get_boolean(at(o, "spec.replicationSlots.highAvailability.enabled")));
	assert_null(at(o, "spec.replicationSlots.highAvailability.slotPrefix"));
	assert_non_null(at(o, "spec.replicationSlots.synchronizeReplicas"));
	json_object_put(o);
	o = defaulted(CLUSTER(",\"bootstrap\":{\"initdb\":{\"database\":\"db\",\"owner\":\"own\"}},"
			      "\"tablespaces\":[{\"name\":\"a\"},{\"name\":\"b\",\"owner\":{\"name\":\"x\"}}]"));
	assert_str_at(json_object_array_get_idx(at(o, "spec.tablespaces"), 0), "owner.name", "own");
	assert_str_at(json_object_array_get_idx(at(o, "spec.tablespaces"), 1), "owner.name", "x");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"replica\":{\"enabled\":true,\"source\":\"s\"},"
			      "\"bootstrap\":{\"pg_basebackup\":{\"source\":\"s\"}},"
			      "\"tablespaces\":[{\"name\":\"a\"}]"));
	assert_str_at(json_object_array_get_idx(at(o, "spec.tablespaces"), 0), "owner.name", "postgres");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}"));
	assert_str_at(o, "spec.postgresql.synchronous.dataDurability", "required");
	json_object_put(o);
	o = defaulted(CLUSTER(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1,"
			      "\"dataDurability\":\"preferred\"}}"));
	assert_str_at(o, "spec.postgresql.synchronous.dataDurability", "preferred");
	json_object_put(o);
}

static void test_default_d12_plugins(void **state)
{
	(void)state;
	static const struct wh_settings s = { .include_plugins = " a , b,,a" };
	wh_settings_set(&s);
	json_object *o = defaulted(CLUSTER(",\"plugins\":[{\"name\":\"a\",\"enabled\":false}]"));
	json_object *p = at(o, "spec.plugins");
	assert_int_equal(json_object_array_length(p), 2);
	assert_false(json_object_get_boolean(at(json_object_array_get_idx(p, 0), "enabled")));
	assert_str_at(json_object_array_get_idx(p, 1), "name", "b");
	assert_true(json_object_get_boolean(at(json_object_array_get_idx(p, 1), "enabled")));
	json_object_put(o);
	o = defaulted(CLUSTER(""));
	assert_int_equal(json_object_array_length(at(o, "spec.plugins")), 2);
	json_object_put(o);
	wh_settings_set(NULL);
}

static void test_default_d13_d14(void **state)
{
	(void)state;
	json_object *o = defaulted(CLUSTER_ANN(
		"\"alpha.cnpg.io/livenessPinger\":\"{\\\"enabled\\\":false,\\\"requestTimeout\\\":500}\"", ""));
	json_object *ic = at(o, "spec.probes.liveness.isolationCheck");
	assert_false(json_object_get_boolean(at(ic, "enabled")));
	assert_int_equal(json_object_get_int(at(ic, "requestTimeout")), 500);
	assert_int_equal(json_object_get_int(at(ic, "connectionTimeout")), 1000);
	json_object_put(o);
	o = defaulted(CLUSTER(",\"probes\":{\"liveness\":{\"isolationCheck\":{\"enabled\":false}}}"));
	assert_null(at(o, "spec.probes.liveness.isolationCheck.requestTimeout"));
	json_object_put(o);
	o = defaulted(CLUSTER_ANN("\"alpha.cnpg.io/failoverQuorum\":\"true\"",
				  ",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1,"
				  "\"failoverQuorum\":false}}"));
	assert_true(json_object_get_boolean(at(o, "spec.postgresql.synchronous.failoverQuorum")));
	json_object_put(o);
	o = defaulted(CLUSTER_ANN("\"alpha.cnpg.io/failoverQuorum\":\"maybe\"",
				  ",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}"));
	assert_null(at(o, "spec.postgresql.synchronous.failoverQuorum"));
	json_object_put(o);
	o = defaulted(CLUSTER_ANN("\"alpha.cnpg.io/failoverQuorum\":\"true\"", ""));
	assert_null(at(o, "spec.postgresql.synchronous"));
	json_object_put(o);
}

/* ---- patch ---- */

static void test_patch_diff_escaping(void **state)
{
	(void)state;
	json_object *a = parse("{\"m\":{\"a/b\":1,\"x~y\":2,\"gone\":true},\"arr\":[1,2],\"same\":{\"k\":1}}");
	json_object *b = parse("{\"m\":{\"a/b\":3,\"x~y\":2,\"new\":{\"n\":null}},\"arr\":[1,2,3],\"same\":{\"k\":1}}");
	json_object *patch = NULL, *out = NULL;
	assert_int_equal(wh_patch_diff(a, b, &patch, NULL), 0);
	const char *txt = json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE);
	assert_non_null(strstr(txt, "{\"op\":\"remove\",\"path\":\"/m/gone\"}"));
	assert_non_null(strstr(txt, "{\"op\":\"replace\",\"path\":\"/m/a~1b\",\"value\":3}"));
	assert_non_null(strstr(txt, "{\"op\":\"add\",\"path\":\"/m/new\",\"value\":{\"n\":null}}"));
	assert_non_null(strstr(txt, "{\"op\":\"replace\",\"path\":\"/arr\",\"value\":[1,2,3]}"));
	assert_int_equal(json_object_array_length(patch), 4);
	assert_int_equal(wh_patch_apply(a, patch, &out, NULL), 0);
	assert_true(json_object_equal(out, b));
	json_object_put(out);
	json_object_put(patch);
	assert_int_equal(wh_patch_diff(a, a, &patch, NULL), 0);
	assert_int_equal(json_object_array_length(patch), 0);
	json_object_put(patch);
	json_object_put(a);
	json_object_put(b);
}

static void test_patch_apply_ops(void **state)
{
	(void)state;
	json_object *doc = parse("{\"a\":[1,2,3],\"o\":{\"k\":\"v\",\"t~\":1}}");
	json_object *patch = parse(
		"[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":9},"
		"{\"op\":\"add\",\"path\":\"/a/-\",\"value\":4},"
		"{\"op\":\"remove\",\"path\":\"/a/0\"},"
		"{\"op\":\"test\",\"path\":\"/o/t~0\",\"value\":1},"
		"{\"op\":\"copy\",\"from\":\"/o/k\",\"path\":\"/c\"},"
		"{\"op\":\"move\",\"from\":\"/o\",\"path\":\"/m\"},"
		"{\"op\":\"replace\",\"path\":\"/m/k\",\"value\":\"w\"}]");
	json_object *out = NULL, *want = parse("{\"a\":[9,2,3,4],\"c\":\"v\",\"m\":{\"k\":\"w\",\"t~\":1}}");
	struct op_err err = OP_ERR_INIT;
	if (wh_patch_apply(doc, patch, &out, &err) != 0)
		fail_msg("%s", err.msg);
	assert_true(json_object_equal(out, want));
	json_object_put(out);
	json_object_put(want);
	json_object_put(patch);
	static const char *const bad[] = {
		"[{\"op\":\"remove\",\"path\":\"/nope\"}]",
		"[{\"op\":\"replace\",\"path\":\"/nope\",\"value\":1}]",
		"[{\"op\":\"test\",\"path\":\"/o/k\",\"value\":\"x\"}]",
		"[{\"op\":\"add\",\"path\":\"/a/7\",\"value\":1}]",
		"[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":1}]",
		"[{\"op\":\"add\",\"path\":\"/o/k\"}]",
		"[{\"op\":\"frob\",\"path\":\"/o\"}]",
		"[{\"op\":\"move\",\"from\":\"/o\",\"path\":\"/o/x\"}]",
		"[{\"op\":\"add\",\"path\":\"nope\",\"value\":1}]",
		"[{\"op\":\"add\",\"path\":\"/o/~2\",\"value\":1}]",
		"[7]",
		"{}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		patch = parse(bad[i]);
		out = NULL;
		err = OP_ERR_INIT;
		if (wh_patch_apply(doc, patch, &out, &err) != -EINVAL)
			fail_msg("patch %s should fail", bad[i]);
		assert_null(out);
		assert_true(op_err_isset(&err));
		json_object_put(patch);
	}
	json_object_put(doc);
}

/* ---- validation driver, U and W rules ---- */

static bool has_error(const struct wh_result *r, const char *path, const char *msg_part)
{
	for (size_t i = 0; i < r->n_errors; i++)
		if (strcmp(r->errors[i].path, path) == 0 &&
		    (!msg_part || strstr(r->errors[i].msg, msg_part)))
			return true;
	return false;
}

static bool has_error_path(const struct wh_result *r, const char *path)
{
	return has_error(r, path, NULL);
}

static bool has_warning(const struct wh_result *r, const char *part)
{
	for (size_t i = 0; i < r->n_warnings; i++)
		if (strstr(r->warnings[i], part))
			return true;
	return false;
}

/* Validates defaulted(new_src) against defaulted(old_src) (old NULL = CREATE). */
static void validate_pair(const char *new_src, const char *old_src, struct wh_result *res)
{
	json_object *n = defaulted(new_src), *o = old_src ? defaulted(old_src) : NULL;
	int r = wh_validate(n, o, res);
	assert_int_equal((size_t)r, res->n_errors);
	json_object_put(n);
	json_object_put(o);
}

static void test_validate_bypass_annotation(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	json_object *o = parse(CLUSTER_ANN("\"cnpg.io/validation\":\"disabled\"", ",\"instances\":\"x\""));
	assert_int_equal(wh_validate(o, NULL, &res), 0);
	assert_int_equal(res.n_errors, 0);
	assert_true(has_warning(&res, "validation webhook is disabled"));
	json_object_put(o);
	wh_result_done(&res);
	o = parse(CLUSTER_ANN("\"cnpg.io/validation\":\"off\"", ",\"instances\":\"x\""));
	assert_int_equal(wh_validate(o, NULL, &res), 1);
	assert_true(has_warning(&res, "invalid value 'off' for annotation cnpg.io/validation"));
	assert_true(has_error(&res, "spec.instances", "expected integer, got string"));
	json_object_put(o);
	wh_result_done(&res);
	o = parse(CLUSTER_ANN("\"cnpg.io/validation\":\"enabled\"", ",\"instances\":\"x\""));
	assert_int_equal(wh_validate(o, NULL, &res), 1);
	assert_int_equal(res.n_warnings, 0);
	json_object_put(o);
	wh_result_done(&res);
}

static void test_validate_type_errors(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	json_object *o = parse(CLUSTER(",\"storage\":{\"size\":10},\"postgresql\":{\"parameters\":"
				       "{\"work_mem\":4}},\"walStorage\":\"big\""));
	assert_int_equal(wh_validate(o, NULL, &res), 3);
	assert_true(has_error(&res, "spec.storage.size", "expected string, got integer"));
	assert_true(has_error(&res, "spec.postgresql.parameters.work_mem", "expected string"));
	assert_true(has_error(&res, "spec.walStorage", "expected object, got string"));
	json_object_put(o);
	wh_result_done(&res);
	wh_result_done(&res); /* done twice is harmless */
	wh_result_done(NULL);
}

static void test_validate_sample_clean(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}"),
		      NULL, &res);
	for (size_t i = 0; i < res.n_errors; i++)
		print_error("unexpected: %s: %s\n", res.errors[i].path, res.errors[i].msg);
	assert_int_equal(res.n_errors, 0);
	for (size_t i = 0; i < res.n_warnings; i++)
		print_error("unexpected warning: %s\n", res.warnings[i]);
	assert_int_equal(res.n_warnings, 0);
	wh_result_done(&res);
}

#define PGDATA_INFO(m) ",\"status\":{\"pgDataImageInfo\":{\"image\":\"x\",\"majorVersion\":" #m "}}"
#define CLUSTER_ST(spec, status)                                                                   \
	"{" META ",\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}" spec "}" status "}"

static void test_u1_image_change(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"imageName\":\"x/pg:15\""),
		      CLUSTER_ST(",\"imageName\":\"x/pg:16\"", PGDATA_INFO(16)), &res);
	assert_true(has_error(&res, "spec.imageName", "can't downgrade from major 16 to 15"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"imageName\":\"x/pg:15\""),
		      CLUSTER_ST(",\"imageName\":\"x/pg:14\"", PGDATA_INFO(14)), &res);
	assert_true(has_error(&res, "spec.imageName", "only supported to version 16 or higher"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"imageName\":\"x/pg:17\""),
		      CLUSTER_ST(",\"imageName\":\"x/pg:15\"", PGDATA_INFO(15)), &res);
	assert_false(has_error_path(&res, "spec.imageName"));
	wh_result_done(&res);
	/* no pgDataImageInfo: skipped */
	validate_pair(CLUSTER(",\"imageName\":\"x/pg:15\""), CLUSTER(",\"imageName\":\"x/pg:16\""), &res);
	assert_false(has_error_path(&res, "spec.imageName"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"imageCatalogRef\":{\"kind\":\"ImageCatalog\",\"apiGroup\":"
			      "\"postgresql.cnpg.io\",\"name\":\"c\",\"major\":15}"),
		      CLUSTER_ST(",\"imageName\":\"x/pg:16\"", PGDATA_INFO(16)), &res);
	assert_true(has_error(&res, "spec.imageCatalogRef.major", "can't downgrade"));
	wh_result_done(&res);
}

static void test_u2_configuration_change(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"primaryUpdateMethod\":\"switchover\",\"imageName\":\"x/pg:15.5\","
			      "\"postgresql\":{\"parameters\":{\"work_mem\":\"8MB\"}}"),
		      CLUSTER(",\"primaryUpdateMethod\":\"switchover\",\"imageName\":\"x/pg:15.4\""), &res);
	assert_true(has_error(&res, "spec.imageName", "differences in PostgreSQL configuration "
						      "parameters: work_mem"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"primaryUpdateMethod\":\"restart\",\"imageName\":\"x/pg:15.5\","
			      "\"postgresql\":{\"parameters\":{\"work_mem\":\"8MB\"}}"),
		      CLUSTER(",\"imageName\":\"x/pg:15.4\""), &res);
	assert_false(has_error_path(&res, "spec.imageName"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"primaryUpdateMethod\":\"switchover\",\"imageName\":\"x/pg:15.5\""),
		      CLUSTER(",\"imageName\":\"x/pg:15.4\""), &res);
	assert_false(has_error_path(&res, "spec.imageName"));
	wh_result_done(&res);
}

#define SPEC(storage, rest) "{" META ",\"spec\":{\"instances\":3,\"storage\":" storage rest "}}"

static void test_u3_u4_u5_storage(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ""), SPEC("{\"size\":\"2Gi\"}", ""), &res);
	assert_true(has_error(&res, "spec.storage", "can't shrink existing storage from 2Gi to 1Gi"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"3Gi\"}", ""), SPEC("{\"size\":\"2048Mi\"}", ""), &res);
	assert_false(has_error_path(&res, "spec.storage"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ",\"walStorage\":{\"size\":\"1Gi\"}"),
		      SPEC("{\"size\":\"1Gi\"}", ",\"walStorage\":{\"pvcTemplate\":{\"resources\":"
						 "{\"requests\":{\"storage\":\"5Gi\"}}}}"),
		      &res);
	assert_true(has_error(&res, "spec.walStorage", "can't shrink"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ""), SPEC("{\"size\":\"1Gi\"}", ",\"walStorage\":{\"size\":\"1Gi\"}"),
		      &res);
	assert_true(has_error(&res, "spec.walStorage", "cannot be disabled once configured"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ",\"walStorage\":{\"size\":\"1Gi\"}"),
		      SPEC("{\"size\":\"1Gi\"}", ""), &res);
	assert_false(has_error_path(&res, "spec.walStorage")); /* adding later is fine */
	wh_result_done(&res);
#define TBS(n, s) "{\"name\":\"" n "\",\"storage\":{\"size\":\"" s "\"}}"
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ",\"tablespaces\":[" TBS("a", "1Gi") "]"),
		      SPEC("{\"size\":\"1Gi\"}", ",\"tablespaces\":[" TBS("a", "2Gi") "," TBS("b", "1Gi") "]"),
		      &res);
	assert_true(has_error(&res, "spec.tablespaces.a", "can't shrink"));
	assert_true(has_error(&res, "spec.tablespaces.b", "no tablespace can be removed"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ""),
		      SPEC("{\"size\":\"1Gi\"}", ",\"tablespaces\":[" TBS("a", "1Gi") "]"), &res);
	assert_true(has_error(&res, "spec.tablespaces", "Can't remove tablespaces section"));
	wh_result_done(&res);
	validate_pair(SPEC("{\"size\":\"1Gi\"}", ",\"tablespaces\":[" TBS("a", "1Gi") "," TBS("c", "1Gi") "]"),
		      SPEC("{\"size\":\"1Gi\"}", ",\"tablespaces\":[" TBS("a", "1Gi") "]"), &res);
	assert_false(has_error_path(&res, "spec.tablespaces"));
	assert_false(has_error_path(&res, "spec.tablespaces.a"));
	wh_result_done(&res);
}

static void test_u6_u8(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"postgresUID\":1000"), CLUSTER(""), &res);
	assert_true(has_error(&res, "spec.postgresUID", "can't be changed"));
	assert_false(has_error_path(&res, "spec.postgresGID"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"postgresGID\":26"), CLUSTER(""), &res);
	assert_false(has_error_path(&res, "spec.postgresGID"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"instances\":1,\"postgresql\":{\"parameters\":{\"wal_level\":\"minimal\","
			      "\"max_wal_senders\":\"0\"}}"),
		      CLUSTER(""), &res);
	assert_true(has_error(&res, "spec.postgresql.parameters.wal_level",
			      "Change of `wal_level` to `minimal` not allowed on an existing cluster "
			      "(from `logical`)"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"postgresql\":{\"parameters\":{\"wal_level\":\"replica\"}}"), CLUSTER(""),
		      &res);
	assert_false(has_error_path(&res, "spec.postgresql.parameters.wal_level"));
	wh_result_done(&res);
}

static void test_u7_replication_slots(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"replicationSlots\":{\"highAvailability\":{\"enabled\":true,"
			      "\"slotPrefix\":\"_x_\"}}"),
		      CLUSTER(""), &res);
	assert_true(has_error(&res, "spec.replicationSlots.highAvailability.slotPrefix",
			      "Cannot change replication slot prefix"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"replicationSlots\":{\"highAvailability\":{\"enabled\":false,"
			      "\"slotPrefix\":\"_cnpg_\"}}"),
		      CLUSTER(""), &res);
	assert_int_equal(res.n_errors, 0); /* disabling keeps the prefix: fine */
	wh_result_done(&res);
	/* removal can only be seen on an object that was not defaulted */
	json_object *n = parse(CLUSTER(",\"replicationSlots\":{}")), *o = defaulted(CLUSTER(""));
	assert_true(wh_validate(n, o, &res) > 0);
	assert_true(has_error(&res, "spec.replicationSlots.highAvailability", "Cannot remove"));
	assert_true(has_error(&res, "spec.replicationSlots.synchronizeReplicas", "Cannot remove"));
	wh_result_done(&res);
	json_object_put(n);
	n = parse(CLUSTER(""));
	wh_validate(n, o, &res);
	assert_true(has_error(&res, "spec.replicationSlots",
			      "Cannot remove spec.replicationSlots section while highAvailability"));
	wh_result_done(&res);
	json_object_put(n);
	json_object_put(o);
}

static void test_u9_replica_change(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"replica\":{\"enabled\":false,\"source\":\"s\"}"),
		      CLUSTER_ST(",\"replica\":{\"enabled\":true,\"source\":\"s\"}",
				 ",\"status\":{\"switchReplicaClusterStatus\":{\"inProgress\":true}}"),
		      &res);
	assert_true(has_error(&res, "spec.replica.enabled", "ongoing operation"));
	wh_result_done(&res);
	validate_pair(CLUSTER(",\"replica\":{\"enabled\":false,\"source\":\"s\"}"),
		      CLUSTER(",\"replica\":{\"enabled\":true,\"source\":\"s\"}"), &res);
	assert_false(has_error_path(&res, "spec.replica.enabled"));
	wh_result_done(&res);
	/* serviceAccountName immutable (CRD CEL) */
	validate_pair(CLUSTER(",\"serviceAccountName\":\"b\""), CLUSTER(",\"serviceAccountName\":\"a\""),
		      &res);
	assert_true(has_error(&res, "spec.serviceAccountName", "immutable"));
	wh_result_done(&res);
}

static void test_update_rules_not_on_create(void **state)
{
	(void)state;
	struct wh_result res = { 0 };
	validate_pair(CLUSTER(",\"postgresUID\":1000"), NULL, &res);
	assert_false(has_error_path(&res, "spec.postgresUID"));
	wh_result_done(&res);
}

struct wcase {
	const char *src;
	const char *warning;
	bool fires;
};

static void test_warnings(void **state)
{
	(void)state;
	static const struct wcase cases[] = {
		{ CLUSTER(",\"nodeMaintenanceWindow\":{\"inProgress\":false}"), "enablePDB", true },
		{ CLUSTER(""), "enablePDB", false },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://b\"}}"),
		  "Found usage in: spec.backup.barmanObjectStore", true },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"a\",\"connectionParameters\":{}},"
			  "{\"name\":\"b\",\"barmanObjectStore\":{\"destinationPath\":\"x\"}}]"),
		  "Found usage in: spec.externalClusters[1].barmanObjectStore", true },
		{ CLUSTER(""), "Barman Cloud", false },
		{ CLUSTER(",\"backup\":{\"retentionPolicy\":\"30d\"}"), "retentionPolicy", true },
		{ CLUSTER(",\"backup\":{\"retentionPolicy\":\"30d\",\"barmanObjectStore\":{}}"),
		  "Retention policies", false },
		{ SPEC("{\"size\":\"1Gi\",\"storageClass\":\"a\",\"pvcTemplate\":{\"storageClassName\":\"b\"}}", ""),
		  "spec.storage: both storageClass and pvcTemplate.storageClassName", true },
		{ SPEC("{\"size\":\"1Gi\"}", ",\"walStorage\":{\"size\":\"1Gi\",\"pvcTemplate\":{\"resources\":"
					     "{\"requests\":{\"storage\":\"2Gi\"}}}}"),
		  "spec.walStorage: both size and pvcTemplate.resources.requests.storage", true },
		{ SPEC("{\"size\":\"1Gi\",\"storageClass\":\"a\"}", ""), "both", false },
		{ CLUSTER(",\"postgresql\":{\"parameters\":{\"shared_buffers\":\"1024\"}}"),
		  "shared_buffers: value '1024' has no unit", true },
		{ CLUSTER(",\"postgresql\":{\"parameters\":{\"shared_buffers\":\"1GB\"}}"), "no unit",
		  false },
		{ CLUSTER(",\"monitoring\":{\"metricsQueriesTTL\":\"0s\"}"), "metricsQueriesTTL is 0",
		  true },
		{ CLUSTER(",\"monitoring\":{\"metricsQueriesTTL\":\"30s\"}"), "metricsQueriesTTL is 0",
		  false },
		{ CLUSTER(",\"monitoring\":{\"enablePodMonitor\":true}"),
		  "spec.monitoring.enablePodMonitor is deprecated", true },
		{ CLUSTER(",\"monitoring\":{\"enablePodMonitor\":false}"), "deprecated", false },
		{ CLUSTER(""), "no synchronous replication is configured for a cluster with 3", true },
		{ CLUSTER(",\"instances\":1"), "no synchronous replication", false },
		{ CLUSTER(",\"maxSyncReplicas\":1,\"minSyncReplicas\":1"), "no synchronous replication", false },
		{ CLUSTER(",\"replica\":{\"enabled\":true,\"source\":\"s\"}"),
		  "no synchronous replication", false },
		{ CLUSTER_ST(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1,"
			     "\"podFailureDomainKeys\":[\"zone\"]}}",
			     ",\"status\":{\"conditions\":[{\"type\":\"SyncReplicationTopologySatisfied\","
			     "\"status\":\"False\",\"message\":\"only one zone\"}]}"),
		  "failure-domain keys are not satisfied by the current topology: only one zone", true },
		{ CLUSTER_ST(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1,"
			     "\"podFailureDomainKeys\":[\"zone\"]}}",
			     ",\"status\":{\"conditions\":[{\"type\":\"SyncReplicationTopologySatisfied\","
			     "\"status\":\"True\"}]}"),
		  "failure-domain", false },
		/* accepted but not implemented by pgop */
		{ CLUSTER(",\"backup\":{\"volumeSnapshot\":{\"className\":\"x\"}}"),
		  "spec.backup is accepted but not implemented by pgop yet", true },
		{ CLUSTER(",\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\"}]"),
		  "spec.plugins is accepted but not implemented", true },
		{ CLUSTER(",\"monitoring\":{\"customQueriesConfigMap\":[{\"name\":\"q\",\"key\":\"k\"}]}"),
		  "spec.monitoring is accepted but not implemented", true },
		{ CLUSTER(",\"monitoring\":{\"disableDefaultQueries\":false,\"enablePodMonitor\":false}"),
		  "spec.monitoring is accepted", false },
		{ CLUSTER(",\"managed\":{\"roles\":[{\"name\":\"r\"}]}"),
		  "spec.managed is accepted but not implemented", true },
		{ CLUSTER(",\"projectedVolumeTemplate\":{\"sources\":[{}]}"),
		  "spec.projectedVolumeTemplate is accepted", true },
		{ CLUSTER(",\"replica\":{\"enabled\":false}"), "spec.replica is accepted", false },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"a\",\"plugin\":{\"name\":\"p\"}}]"),
		  "spec.externalClusters[0].plugin is accepted but not implemented", true },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct wh_result res = { 0 };
		validate_pair(cases[i].src, NULL, &res);
		if (has_warning(&res, cases[i].warning) != cases[i].fires) {
			for (size_t j = 0; j < res.n_warnings; j++)
				print_error("  warning: %s\n", res.warnings[j]);
			fail_msg("case %zu: warning '%s' should %sfire", i, cases[i].warning,
				 cases[i].fires ? "" : "not ");
		}
		wh_result_done(&res);
	}
}

/* ---- AdmissionReview envelope ---- */

static char *b64decode(const char *s)
{
	char *out = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_base64_decode_str(s, strlen(s), 0, &out, NULL, &err) != 0)
		fail_msg("patch is not base64: %s", err.msg);
	return out;
}

#define REVIEW(op, kind, obj, old)                                                                 \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"      \
	"\"uid\":\"705ab4f5-1\",\"kind\":" kind ",\"operation\":\"" op "\",\"name\":\"pg\","      \
	"\"object\":" obj ",\"oldObject\":" old ",\"dryRun\":false}}"
#define CKIND "{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"kind\":\"Cluster\"}"

/* Runs a review; returns the parsed response (owned) or NULL with *ret_rc set. */
static json_object *review(enum wh_kind kind, const char *body, int *ret_rc, struct op_err *err)
{
	struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	int r = wh_handle_review(kind, body, strlen(body), &resp, err);
	*ret_rc = r;
	json_object *out = NULL;
	if (r == 0)
		out = parse(op_buf_str(&resp));
	else
		assert_int_equal(resp.len, 0);
	op_buf_done(&resp);
	return out;
}

static void test_review_mutate_patch(void **state)
{
	(void)state;
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *out = review(WH_MUTATE, REVIEW("CREATE", CKIND, CLUSTER(""), "null"), &rc, &err);
	assert_int_equal(rc, 0);
	assert_str_at(out, "apiVersion", "admission.k8s.io/v1");
	assert_str_at(out, "kind", "AdmissionReview");
	assert_str_at(out, "response.uid", "705ab4f5-1");
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_str_at(out, "response.patchType", "JSONPatch");
	char *ptxt = b64decode(str_at(out, "response.patch"));
	json_object *patch = parse(ptxt), *orig = parse(CLUSTER("")), *applied = NULL;
	free(ptxt);
	assert_int_equal(wh_patch_apply(orig, patch, &applied, NULL), 0);
	assert_str_at(applied, "spec.imageName", WH_DEFAULT_IMAGE);
	json_object *expect = defaulted(CLUSTER(""));
	assert_true(json_object_equal(applied, expect));
	json_object_put(expect);
	json_object_put(applied);
	json_object_put(orig);
	json_object_put(patch);
	json_object_put(out);
	/* already defaulted: no patch at all */
	json_object *d = defaulted(CLUSTER(""));
	_cleanup_free_ char *body = op_asprintf(REVIEW("UPDATE", CKIND, "%s", "%s"),
						json_object_to_json_string(d),
						json_object_to_json_string(d));
	out = review(WH_MUTATE, body, &rc, &err);
	assert_int_equal(rc, 0);
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_null(at(out, "response.patch"));
	assert_null(at(out, "response.patchType"));
	json_object_put(out);
	json_object_put(d);
}

static void test_review_validate(void **state)
{
	(void)state;
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *d = defaulted(CLUSTER(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}"));
	_cleanup_free_ char *ok = op_asprintf(REVIEW("CREATE", CKIND, "%s", "null"),
					      json_object_to_json_string(d));
	json_object *out = review(WH_VALIDATE, ok, &rc, &err);
	assert_int_equal(rc, 0);
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_null(at(out, "response.status"));
	assert_null(at(out, "response.patch"));
	json_object_put(out);
	json_object_put(d);

	/* denied: 422 Invalid with causes; warnings still returned */
	const char *bad = REVIEW("CREATE", CKIND,
				 CLUSTER(",\"storage\":{\"size\":5},\"instances\":\"three\","
					 "\"nodeMaintenanceWindow\":{}"),
				 "null");
	out = review(WH_VALIDATE, bad, &rc, &err);
	assert_int_equal(rc, 0);
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_int_equal(json_object_get_int(at(out, "response.status.code")), 422);
	assert_str_at(out, "response.status.reason", "Invalid");
	assert_str_at(out, "response.status.status", "Failure");
	assert_str_at(out, "response.status.message",
		      "Cluster.postgresql.cnpg.io \"pg\" is invalid: spec.instances: expected "
		      "integer, got string, spec.storage.size: expected string, got integer");
	json_object *causes = at(out, "response.status.details.causes");
	assert_int_equal(json_object_array_length(causes), 2);
	assert_str_at(json_object_array_get_idx(causes, 0), "field", "spec.instances");
	assert_str_at(json_object_array_get_idx(causes, 0), "reason", "FieldValueInvalid");
	assert_str_at(out, "response.status.details.kind", "Cluster");
	assert_str_at(out, "response.status.details.group", "postgresql.cnpg.io");
	assert_str_at(out, "response.status.details.name", "pg");
	json_object_put(out);

	/* UPDATE runs the U rules */
	json_object *n = defaulted(SPEC("{\"size\":\"1Gi\"}", "")), *o = defaulted(SPEC("{\"size\":\"2Gi\"}", ""));
	_cleanup_free_ char *upd = op_asprintf(REVIEW("UPDATE", CKIND, "%s", "%s"),
					       json_object_to_json_string(n),
					       json_object_to_json_string(o));
	out = review(WH_VALIDATE, upd, &rc, &err);
	assert_int_equal(rc, 0);
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_non_null(strstr(str_at(out, "response.status.message"),
			       "spec.storage: can't shrink existing storage from 2Gi to 1Gi"));
	json_object *warn = at(out, "response.warnings");
	assert_true(json_object_is_type(warn, json_type_array));
	json_object_put(out);
	json_object_put(n);
	json_object_put(o);
}

static void test_review_envelope_errors(void **state)
{
	(void)state;
	static const struct {
		const char *body, *msg;
	} bad[] = {
		{ "{not json", "AdmissionReview: invalid JSON" },
		{ "[]", "AdmissionReview: expected object, got array" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
		  "apiVersion: expected admission.k8s.io/v1, got admission.k8s.io/v1beta1" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\",\"request\":{}}",
		  "kind: expected AdmissionReview, got Review" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
		  "request: expected object" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
		  "{\"operation\":\"CREATE\"}}",
		  "request.uid: required" },
		{ REVIEW("CREATE", CKIND, "\"str\"", "null"), "request.object: expected object, got string" },
		{ REVIEW("CREATE", CKIND, "null", "null"), "request.object: expected object, got null" },
		{ REVIEW("UPDATE", CKIND, CLUSTER(""), "null"), "request.oldObject: expected object on UPDATE" },
		{ REVIEW("PATCH", CKIND, CLUSTER(""), "null"), "request.operation: unknown value 'PATCH'" },
		{ REVIEW("CREATE", "7", CLUSTER(""), "null"), "request.kind: expected object" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		for (int k = 0; k < 2; k++) {
			int rc;
			struct op_err err = OP_ERR_INIT;
			json_object *out = review(k ? WH_VALIDATE : WH_MUTATE, bad[i].body, &rc, &err);
			assert_null(out);
			assert_int_equal(rc, -EINVAL);
			if (!strstr(err.msg, bad[i].msg))
				fail_msg("case %zu: '%s' does not contain '%s'", i, err.msg, bad[i].msg);
		}
	}
}

static void test_review_other_kind_and_delete(void **state)
{
	(void)state;
	int rc;
	json_object *out = review(WH_VALIDATE,
				  REVIEW("CREATE", "{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"}",
					 "{}", "null"),
				  &rc, NULL);
	assert_int_equal(rc, 0);
	assert_str_at(out, "response.uid", "705ab4f5-1");
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_int_equal(json_object_get_int(at(out, "response.status.code")), 400);
	assert_non_null(strstr(str_at(out, "response.status.message"), "got Deployment.apps"));
	json_object_put(out);
	for (int k = 0; k < 2; k++) {
		out = review(k ? WH_VALIDATE : WH_MUTATE, REVIEW("DELETE", CKIND, "null", CLUSTER("")),
			     &rc, NULL);
		assert_int_equal(rc, 0);
		assert_true(json_object_get_boolean(at(out, "response.allowed")));
		assert_null(at(out, "response.patch"));
		assert_str_at(out, "response.uid", "705ab4f5-1");
		json_object_put(out);
	}
}

static void test_review_response_cap(void **state)
{
	(void)state;
	const char *body = REVIEW("CREATE", CKIND, CLUSTER(""), "null");
	struct op_buf small = OP_BUF_INIT(64);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_handle_review(WH_MUTATE, body, strlen(body), &small, &err), -EMSGSIZE);
	assert_int_equal(small.len, 0);
	op_buf_done(&small);
}

/* ---- every CNPG sample through the whole admission path ---- */

#define SAMPLES_DIR PGOP_SHARED_DIR "/samples/cnpg"
#define SAMPLE_MAX (1024u * 1024)

struct sample_stats {
	int clusters, denied, with_warnings, unsupported_warnings;
};

/* One AdmissionReview round: returns the response object (owned). */
static json_object *review_obj(enum wh_kind kind, const char *op, json_object *obj,
			       json_object *old)
{
	_cleanup_free_ char *body = op_asprintf(
		REVIEW("%s", CKIND, "%s", "%s"), op, json_object_to_json_string(obj),
		old ? json_object_to_json_string(old) : "null");
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *out = review(kind, body, &rc, &err);
	if (rc != 0)
		fail_msg("review failed: %s", err.msg);
	return out;
}

/* mutate (apply the patch), validate CREATE, then validate a no-op UPDATE. */
static void admit_sample(const char *file, json_object *doc, struct sample_stats *st)
{
	json_object *out = review_obj(WH_MUTATE, "CREATE", doc, NULL), *obj = NULL;
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	const char *p64 = str_at(out, "response.patch");
	if (p64) {
		_cleanup_free_ char *ptxt = b64decode(p64);
		json_object *patch = parse(ptxt);
		assert_int_equal(wh_patch_apply(doc, patch, &obj, NULL), 0);
		json_object_put(patch);
	} else {
		obj = json_object_get(doc);
	}
	json_object_put(out);
	for (int pass = 0; pass < 2; pass++) {
		out = review_obj(WH_VALIDATE, pass ? "UPDATE" : "CREATE", obj, pass ? obj : NULL);
		if (!json_object_get_boolean(at(out, "response.allowed"))) {
			print_error("sample %s (%s) denied: %s\n", file, pass ? "UPDATE" : "CREATE",
				    str_at(out, "response.status.message"));
			st->denied++;
		}
		json_object *w = at(out, "response.warnings");
		if (!pass && w) {
			st->with_warnings++;
			for (size_t i = 0; i < json_object_array_length(w); i++)
				if (strstr(json_object_get_string(json_object_array_get_idx(w, i)),
					   "not implemented by pgop"))
					st->unsupported_warnings++;
		}
		json_object_put(out);
	}
	json_object_put(obj);
	st->clusters++;
}

static void admit_dir(const char *dir, struct sample_stats *st)
{
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *path = op_asprintf("%s/%s", dir, e->d_name);
		size_t n = strlen(e->d_name);
		if (e->d_type == DT_DIR) {
			admit_dir(path, st);
			continue;
		}
		if (n < 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
			continue;
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		_cleanup_free_ char *data = op_malloc(SAMPLE_MAX + 1);
		size_t len = fread(data, 1, SAMPLE_MAX + 1, f);
		fclose(f);
		assert_true(len <= SAMPLE_MAX);
		json_object *docs = NULL;
		struct op_err err = OP_ERR_INIT;
		if (op_yaml_parse_docs(data, len, NULL, &docs, &err) < 0)
			fail_msg("%s: %s", path, err.msg);
		for (size_t i = 0; i < json_object_array_length(docs); i++) {
			json_object *doc = json_object_array_get_idx(docs, i);
			const char *kind = str_at(doc, "kind");
			if (kind && strcmp(kind, "Cluster") == 0)
				admit_sample(e->d_name, doc, st);
		}
		json_object_put(docs);
	}
	closedir(d);
}

static void test_samples_through_admission(void **state)
{
	(void)state;
	struct sample_stats st = { 0 };
	admit_dir(SAMPLES_DIR, &st);
	print_message("%d sample Clusters: %d denied, %d with warnings, %d unsupported-field "
		      "warnings\n",
		      st.clusters, st.denied, st.with_warnings, st.unsupported_warnings);
	assert_true(st.clusters >= 60);
	assert_int_equal(st.denied, 0);
	assert_true(st.unsupported_warnings > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_minimal_all_rules),
		cmocka_unit_test(test_default_no_spec_and_errors),
		cmocka_unit_test(test_default_d1_image),
		cmocka_unit_test(test_default_d3_bootstrap),
		cmocka_unit_test(test_default_d4_d5_d7),
		cmocka_unit_test(test_default_d6_parameters),
		cmocka_unit_test(test_default_d8_monitoring),
		cmocka_unit_test(test_default_d9_d10_d11),
		cmocka_unit_test(test_default_d12_plugins),
		cmocka_unit_test(test_default_d13_d14),
		cmocka_unit_test(test_patch_diff_escaping),
		cmocka_unit_test(test_patch_apply_ops),
		cmocka_unit_test(test_validate_bypass_annotation),
		cmocka_unit_test(test_validate_type_errors),
		cmocka_unit_test(test_validate_sample_clean),
		cmocka_unit_test(test_u1_image_change),
		cmocka_unit_test(test_u2_configuration_change),
		cmocka_unit_test(test_u3_u4_u5_storage),
		cmocka_unit_test(test_u6_u8),
		cmocka_unit_test(test_u7_replication_slots),
		cmocka_unit_test(test_u9_replica_change),
		cmocka_unit_test(test_update_rules_not_on_create),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_review_mutate_patch),
		cmocka_unit_test(test_review_validate),
		cmocka_unit_test(test_review_envelope_errors),
		cmocka_unit_test(test_review_other_kind_and_delete),
		cmocka_unit_test(test_review_response_cap),
		cmocka_unit_test(test_samples_through_admission),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
