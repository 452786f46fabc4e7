/* tests/unit/test_webhooks_defaults.c - webhooks/: defaulting D1-D14 (patch round-trip, idempotence) and JSON patch diff/apply. */
#include "webhooks_test_util.h"

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
	assert_int_equal(op_jsonpatch_apply(a, patch, &out, NULL), 0);
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
	if (op_jsonpatch_apply(doc, patch, &out, &err) != 0)
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
		if (op_jsonpatch_apply(doc, patch, &out, &err) != -EINVAL)
			fail_msg("patch %s should fail", bad[i]);
		assert_null(out);
		assert_true(op_err_isset(&err));
		json_object_put(patch);
	}
	json_object_put(doc);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
