/* tests/unit/test_api_backup.c - api/backup: Backup, ScheduledBackup and
 * ObjectStore decoding (field paths in errors, defaults), the Backup status
 * encoders and the Backup a ScheduledBackup creates. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef free

#include "api/backup.h"
#include "api/timestamp.h"
#include "support/alloc.h"
#include "support/json.h"

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, strlen(s), 0, &o, &err) < 0)
		fail_msg("%s: %s", err.msg, s);
	return o;
}

static const char *full_backup =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Backup\","
	"\"metadata\":{\"name\":\"b1\",\"namespace\":\"db\",\"uid\":\"u-b\"},"
	"\"spec\":{\"cluster\":{\"name\":\"pg\"},\"target\":\"primary\",\"method\":\"plugin\","
	"\"pluginConfiguration\":{\"name\":\"barman-cloud.cloudnative-pg.io\","
	"\"parameters\":{\"barmanObjectName\":\"store\"}},\"online\":false,"
	"\"onlineConfiguration\":{\"immediateCheckpoint\":true}},"
	"\"status\":{\"phase\":\"completed\",\"backupId\":\"20261207T051230\","
	"\"backupName\":\"backup-20261207051230\",\"destinationPath\":\"s3://bkt/x\","
	"\"endpointURL\":\"http://127.0.0.1:9000\",\"serverName\":\"pg\","
	"\"s3Credentials\":{\"accessKeyId\":{\"name\":\"s\",\"key\":\"id\"},"
	"\"secretAccessKey\":{\"name\":\"s\",\"key\":\"secret\"}},"
	"\"endpointCA\":{\"name\":\"ca\",\"key\":\"ca.crt\"},"
	"\"beginWal\":\"000000010000000000000004\",\"endWal\":\"000000010000000000000005\","
	"\"beginLSN\":\"0/4000028\",\"endLSN\":\"0/5000100\","
	"\"startedAt\":\"2026-12-07T05:12:30Z\",\"stoppedAt\":\"2026-12-07T05:13:00Z\","
	"\"instanceID\":{\"podName\":\"pg-2\",\"ContainerID\":\"containerd://abc\"},"
	"\"method\":\"plugin\",\"online\":true,\"majorVersion\":15,"
	"\"backupLabelFile\":\"QkFDS1VQ\",\"pluginMetadata\":{\"k\":\"v\"},"
	"\"snapshotBackupStatus\":{\"elements\":[{\"name\":\"snap-1\"}]}}}";

static void test_backup_decode_full(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = parse(full_backup);
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *b = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_backup_obj_decode(o, NULL, &b, &err), 0);
	assert_string_equal(b->metadata.name, "b1");
	assert_string_equal(b->metadata.namespace_, "db");
	assert_string_equal(b->spec.cluster_name, "pg");
	assert_string_equal(b->spec.target, "primary");
	assert_int_equal(b->spec.method, API_BACKUP_METHOD_PLUGIN);
	assert_true(b->spec.has_plugin_configuration);
	assert_string_equal(b->spec.plugin_configuration.name, "barman-cloud.cloudnative-pg.io");
	assert_string_equal(api_kvs_get(&b->spec.plugin_configuration.parameters,
					"barmanObjectName"),
			    "store");
	assert_true(b->spec.has_online);
	assert_false(b->spec.online);
	assert_true(b->spec.online_configuration.immediate_checkpoint);
	assert_true(b->spec.online_configuration.wait_for_archive); /* default */
	const struct api_backup_status *st = &b->status;
	assert_int_equal(st->phase, API_BACKUP_PHASE_COMPLETED);
	assert_true(api_backup_phase_is_done(st->phase));
	assert_string_equal(st->backup_id, "20261207T051230");
	assert_string_equal(st->s3.secret_access_key.key, "secret");
	assert_string_equal(st->endpoint_ca.name, "ca");
	assert_string_equal(st->end_lsn, "0/5000100");
	int64_t t0 = 0;
	assert_int_equal(api_time_parse("2026-12-07T05:12:30Z", &t0), 0);
	assert_int_equal(st->started_at, t0);
	assert_int_equal(st->stopped_at, t0 + 30);
	assert_string_equal(st->instance_id.pod_name, "pg-2");
	assert_string_equal(st->instance_id.container_id, "containerd://abc");
	assert_int_equal(st->major_version, 15);
	assert_true(st->has_online && st->online);
	assert_int_equal(st->snapshots.n, 1);
	assert_string_equal(st->snapshots.items[0], "snap-1");

	/* encoding gives back the same status */
	_cleanup_(op_json_putp) json_object *enc = api_backup_status_json(st);
	assert_true(json_object_equal(enc, op_json_at(o, "status")));
}

static void test_backup_decode_defaults(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o =
		parse("{\"metadata\":{\"name\":\"b\"},\"spec\":{\"cluster\":{\"name\":\"pg\"}}}");
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *b = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_backup_obj_decode(o, NULL, &b, &err), 0);
	assert_string_equal(b->spec.method_text, "barmanObjectStore");
	assert_int_equal(b->spec.method, API_BACKUP_METHOD_BARMAN);
	assert_null(b->spec.target);
	assert_false(b->spec.has_online);
	assert_int_equal(b->status.phase, API_BACKUP_PHASE_NONE);
	/* unknown values are kept, not errors: admission judges them */
	_cleanup_(op_json_putp) json_object *o2 =
		parse("{\"spec\":{\"method\":\"tape\"},\"status\":{\"phase\":\"weird\"}}");
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *b2 = NULL;
	assert_int_equal(api_backup_obj_decode(o2, NULL, &b2, &err), 0);
	assert_int_equal(b2->spec.method, API_BACKUP_METHOD_UNKNOWN);
	assert_int_equal(b2->status.phase, API_BACKUP_PHASE_UNKNOWN);
	assert_string_equal(b2->status.phase_text, "weird");
	_cleanup_(op_json_putp) json_object *enc = api_backup_status_json(&b2->status);
	assert_string_equal(op_json_str_at(enc, "phase"), "weird");
}

static void test_backup_decode_errors(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o =
		parse("{\"spec\":{\"cluster\":{\"name\":3},\"online\":\"yes\","
		      "\"pluginConfiguration\":{\"parameters\":{\"a\":1}}},"
		      "\"status\":{\"startedAt\":\"yesterday\",\"instanceID\":[],"
		      "\"snapshotBackupStatus\":{\"elements\":[7]}}}");
	struct api_errors errs = { 0 };
	struct api_backup_obj *b = (struct api_backup_obj *)0x1;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_backup_obj_decode(o, &errs, &b, &err), -EINVAL);
	assert_ptr_equal(b, (struct api_backup_obj *)0x1); /* untouched */
	assert_non_null(strstr(err.msg, "spec.cluster.name: expected string, got integer"));
	static const char *const paths[] = {
		"spec.cluster.name",	    "spec.pluginConfiguration.parameters.a",
		"spec.online",		    "status.startedAt",
		"status.instanceID",	    "status.snapshotBackupStatus.elements[0]",
	};
	assert_int_equal(errs.n, OP_ARRAY_SIZE(paths));
	for (size_t i = 0; i < OP_ARRAY_SIZE(paths); i++) {
		bool found = false;
		for (size_t j = 0; j < errs.n; j++)
			found = found || strcmp(errs.items[j].path, paths[i]) == 0;
		if (!found)
			fail_msg("no error at %s", paths[i]);
	}
	api_errors_done(&errs);
	_cleanup_(op_json_putp) json_object *arr = parse("[]");
	assert_int_equal(api_backup_obj_decode(arr, NULL, &b, &err), -EINVAL);
	assert_int_equal(api_backup_obj_decode(NULL, NULL, &b, &err), -EINVAL);
}

static void test_backup_status_patch(void **state)
{
	(void)state;
	struct api_backup_status st = { 0 };
	st.phase = API_BACKUP_PHASE_RUNNING;
	st.backup_id = op_strdup("20261207T051230");
	st.started_at = 1796620350; /* 2026-12-07T05:12:30Z */
	st.instance_id.pod_name = op_strdup("pg-1");
	st.has_online = true, st.online = true;
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_backup_status_merge_patch(&st, &out, &err), 0);
	_cleanup_(op_json_putp) json_object *p = parse(op_buf_str(&out));
	json_object *s = op_json_at(p, "status");
	assert_string_equal(op_json_str_at(s, "phase"), "running");
	assert_string_equal(op_json_str_at(s, "backupId"), "20261207T051230");
	assert_string_equal(op_json_str_at(s, "startedAt"), "2026-12-07T05:12:30Z");
	assert_string_equal(op_json_str_at(s, "instanceID.podName"), "pg-1");
	assert_true(json_object_get_boolean(op_json_at(s, "online")));
	/* unset fields are null: the merge patch removes stale values */
	json_object *v = (json_object *)0x1;
	assert_true(json_object_object_get_ex(s, "error", &v));
	assert_null(v);
	assert_true(json_object_object_get_ex(s, "stoppedAt", &v));
	assert_null(v);
	/* failed: phase and error */
	api_backup_status_set_failed(&st, "volumeSnapshot: no CSI snapshot support");
	op_buf_reset(&out);
	assert_int_equal(api_backup_status_merge_patch(&st, &out, &err), 0);
	_cleanup_(op_json_putp) json_object *p2 = parse(op_buf_str(&out));
	assert_string_equal(op_json_str_at(p2, "status.phase"), "failed");
	assert_string_equal(op_json_str_at(p2, "status.error"),
			    "volumeSnapshot: no CSI snapshot support");
	/* the omitempty form has no nulls */
	_cleanup_(op_json_putp) json_object *j = api_backup_status_json(&st);
	assert_false(json_object_object_get_ex(j, "stoppedAt", NULL));
	/* a cap too small is -EMSGSIZE */
	struct op_buf tiny = OP_BUF_INIT(16);
	assert_int_equal(api_backup_status_merge_patch(&st, &tiny, &err), -EMSGSIZE);
	op_buf_done(&tiny);
	op_buf_done(&out);
	api_backup_status_done(&st);
	assert_null(st.error);
}

static void test_phases_methods(void **state)
{
	(void)state;
	for (int p = API_BACKUP_PHASE_NONE; p < API_BACKUP_PHASE_UNKNOWN; p++)
		assert_int_equal(api_backup_phase_parse(api_backup_phase_name(p)), p);
	assert_int_equal(api_backup_phase_parse(NULL), API_BACKUP_PHASE_NONE);
	assert_string_equal(api_backup_phase_name(API_BACKUP_PHASE_WAL_ARCHIVING_FAILING),
			    "walArchivingFailing");
	assert_true(api_backup_phase_in_progress(API_BACKUP_PHASE_PENDING));
	assert_true(api_backup_phase_in_progress(API_BACKUP_PHASE_FINALIZING));
	assert_false(api_backup_phase_in_progress(API_BACKUP_PHASE_FAILED));
	assert_false(api_backup_phase_is_done(API_BACKUP_PHASE_RUNNING));
	for (int m = 0; m < API_BACKUP_METHOD_UNKNOWN; m++)
		assert_int_equal(api_backup_method_parse(api_backup_method_name(m)), m);
	assert_int_equal(api_backup_method_parse("Plugin"), API_BACKUP_METHOD_UNKNOWN);
}

static void test_scheduled_backup(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = parse(
		"{\"metadata\":{\"name\":\"nightly\",\"namespace\":\"db\",\"uid\":\"u-s\"},"
		"\"spec\":{\"schedule\":\"0 0 0 * * *\",\"cluster\":{\"name\":\"pg\"},"
		"\"immediate\":true,\"backupOwnerReference\":\"self\",\"method\":\"barmanObjectStore\","
		"\"onlineConfiguration\":{\"waitForArchive\":false}},"
		"\"status\":{\"lastScheduleTime\":\"2026-12-07T00:00:00Z\"}}");
	_cleanup_(api_scheduled_backup_freep) struct api_scheduled_backup *s = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_scheduled_backup_decode(o, NULL, &s, &err), 0);
	assert_string_equal(s->schedule, "0 0 0 * * *");
	assert_true(s->immediate);
	assert_false(s->suspend);
	assert_string_equal(s->backup_owner_reference, "self");
	assert_false(s->spec.online_configuration.wait_for_archive);
	assert_true(s->status.last_schedule_time > 0);
	assert_int_equal(s->status.next_schedule_time, 0);

	_cleanup_(op_json_putp) json_object *b = api_scheduled_backup_new_backup(s, 1796620350, NULL);
	assert_string_equal(op_json_str_at(b, "kind"), "Backup");
	assert_string_equal(op_json_str_at(b, "metadata.name"), "nightly-20261207051230");
	assert_string_equal(op_json_str_at(b, "metadata.namespace"), "db");
	assert_string_equal(op_json_str_at(b, "spec.cluster.name"), "pg");
	assert_string_equal(op_json_str_at(b, "spec.method"), "barmanObjectStore");
	assert_false(json_object_get_boolean(
		op_json_at(b, "spec.onlineConfiguration.waitForArchive")));
	json_object *refs = op_json_at(b, "metadata.ownerReferences");
	assert_int_equal(json_object_array_length(refs), 1);
	assert_string_equal(op_json_str_at(json_object_array_get_idx(refs, 0), "kind"),
			    "ScheduledBackup");
	assert_string_equal(op_json_str_at(json_object_array_get_idx(refs, 0), "uid"), "u-s");
	/* the Backup decodes, and admission-relevant fields survive */
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *bo = NULL;
	assert_int_equal(api_backup_obj_decode(b, NULL, &bo, &err), 0);
	assert_string_equal(bo->spec.cluster_name, "pg");

	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	s->status.next_schedule_time = 1796688000;
	assert_int_equal(api_scheduled_backup_status_merge_patch(&s->status, &out, &err), 0);
	_cleanup_(op_json_putp) json_object *p = parse(op_buf_str(&out));
	assert_string_equal(op_json_str_at(p, "status.nextScheduleTime"), "2026-12-08T00:00:00Z");
	json_object *v = (json_object *)0x1;
	assert_true(json_object_object_get_ex(op_json_at(p, "status"), "lastCheckTime", &v));
	assert_null(v);
	op_buf_done(&out);

	/* defaults and type errors */
	_cleanup_(op_json_putp) json_object *o2 =
		parse("{\"spec\":{\"schedule\":5,\"suspend\":\"no\"},"
		      "\"status\":{\"nextScheduleTime\":\"soon\"}}");
	struct api_errors errs = { 0 };
	struct api_scheduled_backup *s2 = NULL;
	assert_int_equal(api_scheduled_backup_decode(o2, &errs, &s2, &err), -EINVAL);
	assert_int_equal(errs.n, 3);
	assert_string_equal(errs.items[0].path, "spec.schedule");
	api_errors_done(&errs);
	_cleanup_(op_json_putp) json_object *o3 = parse("{\"spec\":{}}");
	assert_int_equal(api_scheduled_backup_decode(o3, NULL, &s2, &err), 0);
	assert_string_equal(s2->backup_owner_reference, "none");
	api_scheduled_backup_free(s2);
}

static void test_object_store(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = parse(
		"{\"apiVersion\":\"barmancloud.cnpg.io/v1\",\"kind\":\"ObjectStore\","
		"\"metadata\":{\"name\":\"store\"},\"spec\":{\"retentionPolicy\":\"30d\","
		"\"configuration\":{\"destinationPath\":\"s3://bkt/pg\",\"endpointURL\":"
		"\"http://minio:9000\",\"s3Credentials\":{\"accessKeyId\":{\"name\":\"s\",\"key\":"
		"\"id\"},\"secretAccessKey\":{\"name\":\"s\",\"key\":\"k\"}},"
		"\"wal\":{\"compression\":\"gzip\",\"maxParallel\":4}},"
		"\"instanceSidecarConfiguration\":{\"retentionPolicyIntervalSeconds\":1800}}}");
	_cleanup_(api_object_store_freep) struct api_object_store *s = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_object_store_decode(o, NULL, &s, &err), 0);
	assert_non_null(s->configuration);
	assert_string_equal(s->configuration->destination_path, "s3://bkt/pg");
	assert_string_equal(s->configuration->wal.compression, "gzip");
	assert_int_equal(s->configuration->wal.max_parallel, 4);
	assert_true(s->configuration->has_s3_credentials);
	assert_string_equal(s->retention_policy, "30d");
	assert_true(s->has_instance_sidecar_configuration);

	_cleanup_(op_json_putp) json_object *bad =
		parse("{\"spec\":{\"configuration\":{\"destinationPath\":1,"
		      "\"wal\":{\"maxParallel\":\"x\"}}}}");
	struct api_errors errs = { 0 };
	struct api_object_store *s2 = NULL;
	assert_int_equal(api_object_store_decode(bad, &errs, &s2, &err), -EINVAL);
	assert_int_equal(errs.n, 2);
	assert_string_equal(errs.items[0].path, "spec.configuration.destinationPath");
	assert_string_equal(errs.items[1].path, "spec.configuration.wal.maxParallel");
	api_errors_done(&errs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backup_decode_full),
		cmocka_unit_test(test_backup_decode_defaults),
		cmocka_unit_test(test_backup_decode_errors),
		cmocka_unit_test(test_backup_status_patch),
		cmocka_unit_test(test_phases_methods),
		cmocka_unit_test(test_scheduled_backup),
		cmocka_unit_test(test_object_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
