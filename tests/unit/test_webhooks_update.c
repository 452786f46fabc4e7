/* tests/unit/test_webhooks_update.c - webhooks/: validation driver (bypass, type errors), U1-U9 and W1-W9 rules. */
#include "webhooks_test_util.h"

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
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\"}}"),
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
		  "spec.backup.volumeSnapshot is accepted but not implemented by pgop yet", true },
		/* barman-cloud is served in process; other plugins are not */
		{ CLUSTER(",\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\"}]"),
		  "is accepted but not implemented", false },
		{ CLUSTER(",\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\"},"
			  "{\"name\":\"other.example.com\"}]"),
		  "spec.plugins[1].name is accepted but not implemented by pgop yet (CNPG-I plugins "
		  "other than barman-cloud.cloudnative-pg.io)", true },
		{ CLUSTER(",\"monitoring\":{\"customQueriesConfigMap\":[{\"name\":\"q\",\"key\":\"k\"}]}"),
		  "spec.monitoring", false }, /* implemented: the exporter (issue 27) */
		{ CLUSTER(",\"monitoring\":{\"enablePodMonitor\":true}"), "accepted but not implemented",
		  false }, /* implemented (CloudNativePG's deprecation warning still fires) */
		{ CLUSTER(",\"monitoring\":{\"podMonitorRelabelings\":[{\"action\":\"keep\"}]}"),
		  "spec.monitoring.podMonitorRelabelings is accepted but not implemented", true },
		{ CLUSTER(",\"monitoring\":{\"disableDefaultQueries\":false,\"enablePodMonitor\":false}"),
		  "spec.monitoring is accepted", false },
		{ CLUSTER(",\"managed\":{\"roles\":[{\"name\":\"r\"}]}"),
		  "spec.managed is accepted but not implemented", true },
		{ CLUSTER(",\"projectedVolumeTemplate\":{\"sources\":[{}]}"),
		  "spec.projectedVolumeTemplate is accepted", true },
		{ CLUSTER(",\"replica\":{\"enabled\":false}"), "spec.replica is accepted", false },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"a\",\"plugin\":{\"name\":\"p\"}}]"),
		  "spec.externalClusters[0].plugin.name is accepted but not implemented", true },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"a\",\"plugin\":{\"name\":"
			  "\"barman-cloud.cloudnative-pg.io\"}}]"),
		  "is accepted but not implemented", false },
		/* each row says what is missing; the broadest row that applies speaks,
		 * the precise ones under it stay silent while it is there */
		/* WAL archiving is implemented: spec.backup and its store do not warn,
		 * what pgop's archiver cannot do and base backups do */
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup is accepted", false },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup.barmanObjectStore is accepted", false },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup.barmanObjectStore.s3Credentials.inheritFromIAMRole is not supported by "
		  "pgop's WAL archiver", true },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"wal\":{\"compression\":\"snappy\"},\"data\":{\"jobs\":2},"
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup.barmanObjectStore.wal.compression: snappy is not supported", true },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"wal\":{\"compression\":\"snappy\"},\"data\":{\"jobs\":2},"
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup.barmanObjectStore.data is accepted", false },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "spec.backup.target", false },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"o\",\"barmanObjectStore\":{"
			  "\"destinationPath\":\"s3://bkt\",\"tags\":{\"a\":\"b\"},"
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}]"),
		  "spec.externalClusters[0].barmanObjectStore is accepted", false },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"o\",\"barmanObjectStore\":{"
			  "\"destinationPath\":\"s3://bkt\",\"tags\":{\"a\":\"b\"},"
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}]"),
		  "spec.externalClusters[0].barmanObjectStore.tags", false }, /* built: no warning */
		{ CLUSTER(",\"bootstrap\":{\"recovery\":{\"backup\":{\"name\":\"b\"},"
			  "\"recoveryTarget\":{\"targetLSN\":\"0/1\"}}}"),
		  "spec.bootstrap.recovery is accepted", false },
		{ CLUSTER(",\"bootstrap\":{\"recovery\":{\"backup\":{\"name\":\"b\"},"
			  "\"recoveryTarget\":{\"targetLSN\":\"0/1\"}}}"),
		  "recoveryTarget is accepted", false },
		/* only S3-compatible stores */
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"https://x\","
			  "\"azureCredentials\":{\"inheritFromAzureAD\":true}}}"),
		  "spec.backup.barmanObjectStore.azureCredentials is accepted but pgop supports only "
		  "S3-compatible object stores", true },
		{ CLUSTER(",\"externalClusters\":[{\"name\":\"o\",\"barmanObjectStore\":{"
			  "\"destinationPath\":\"gs://x\",\"googleCredentials\":{\"gkeEnvironment\":"
			  "true}}}]"),
		  "spec.externalClusters[0].barmanObjectStore.googleCredentials is accepted but pgop "
		  "supports only S3-compatible", true },
		{ CLUSTER(",\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"s3://bkt\","
			  "\"s3Credentials\":{\"inheritFromIAMRole\":true}}}"),
		  "S3-compatible", false },
		/* user-provided certificates (pgop issues its own); the superuser and
		 * bootstrap secrets are implemented: no warning */
		{ CLUSTER(",\"certificates\":{\"serverTLSSecret\":\"tls\",\"serverCASecret\":\"ca\"}"),
		  "spec.certificates.serverTLSSecret is accepted but not implemented", true },
		{ CLUSTER(",\"certificates\":{\"serverAltDNSNames\":[\"db.example\"]}"),
		  "spec.certificates", false },
		{ CLUSTER(",\"enableSuperuserAccess\":true,\"superuserSecret\":{\"name\":\"s\"}"),
		  "superuserSecret", false },
		/* annotations CloudNativePG acts on, implemented (issue 26): no warning */
		{ CLUSTER_ANN("\"cnpg.io/hibernation\":\"on\"", ""), "cnpg.io/hibernation", false },
		{ CLUSTER_ANN("\"cnpg.io/fencedInstances\":\"[\\\"pg-1\\\"]\"", ""),
		  "fencedInstances", false },
		{ CLUSTER_ANN("\"cnpg.io/reconciliationLoop\":\"disabled\"", ""),
		  "reconciliationLoop", false },
		{ CLUSTER_ANN("\"cnpg.io/podPatch\":\"[{\\\"op\\\":\\\"add\\\",\\\"path\\\":"
			      "\\\"/metadata/annotations/a\\\",\\\"value\\\":\\\"b\\\"}]\"", ""),
		  "podPatch", false },
		/* isolationCheck: pgop's lease always fences; its defaults say nothing */
		{ CLUSTER(",\"probes\":{\"liveness\":{\"isolationCheck\":{\"enabled\":false}}}"),
		  "isolationCheck.enabled: false is not honoured", true },
		{ CLUSTER(",\"probes\":{\"liveness\":{\"isolationCheck\":{\"enabled\":true,"
			  "\"requestTimeout\":1000,\"connectionTimeout\":1000}}}"),
		  "isolationCheck", false },
		{ CLUSTER(",\"probes\":{\"liveness\":{\"isolationCheck\":{\"enabled\":true,"
			  "\"requestTimeout\":5000}}}"),
		  "isolationCheck.requestTimeout is accepted but not implemented", true },
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

int main(void)
{
	const struct CMUnitTest tests[] = {
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
