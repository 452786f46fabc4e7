/* tests/unit/test_webhooks_offline.c - wh_validate_files() (webhooks/offline.c),
 * the pipeline of `pgop validate`, on the repository's samples: a valid
 * Cluster is admitted, an invalid one is denied naming its field path (text
 * and JSON reports), unreadable inputs are input errors, an unreadable old
 * file stops the run. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

#include "samples_dirs.h"
#include "support/json.h"
#include "webhooks/offline.h"

#define VALID REPO_SAMPLES_DIR "/cluster-example.yaml"
#define INVALID REPO_INVALID_SAMPLES_DIR "/max-sync-replicas.yaml"
#define INVALID_FIELD "spec.maxSyncReplicas" /* its `# pgop-denied:` line */
#define MISSING PGOP_SOURCE_DIR "/samples/no-such-file.yaml"

/* One run with out and diag captured; *ret_out and *ret_diag owned. */
static int run(const char *const *files, size_t n, const char *const *old, size_t n_old,
	       bool json, struct wh_offline_summary *sum, char **ret_out, char **ret_diag,
	       struct op_err *err)
{
	FILE *out = tmpfile(), *diag = tmpfile();
	assert_non_null(out);
	assert_non_null(diag);
	const struct wh_offline_opts o = {
		.files = files, .n_files = n, .old_files = old, .n_old_files = n_old,
		.json = json, .review_kind = WH_VALIDATE, .diag = diag,
	};
	int r = wh_validate_files(&o, out, sum, err);
	FILE *f[2] = { out, diag };
	char **ret[2] = { ret_out, ret_diag };
	for (int i = 0; i < 2; i++) {
		long len = ftell(f[i]);
		assert_true(len >= 0);
		rewind(f[i]);
		char *s = calloc(1, (size_t)len + 1);
		assert_non_null(s);
		assert_int_equal(fread(s, 1, (size_t)len, f[i]), (size_t)len);
		fclose(f[i]);
		*ret[i] = s;
	}
	return r;
}

static void test_valid_admitted(void **state)
{
	const char *files[] = { VALID };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 1, NULL, 0, false, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.admitted, 1);
	assert_int_equal(sum.denied, 0);
	assert_int_equal(sum.input_errors, 0);
	assert_non_null(strstr(out, VALID ": default/cluster-example: admitted\n"));
	assert_non_null(strstr(diag, "1 admitted, 0 denied, 0 skipped, 0 input errors"));
	free(out);
	free(diag);
}

static void test_invalid_names_field_text(void **state)
{
	const char *files[] = { VALID, INVALID };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 2, NULL, 0, false, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.admitted, 1);
	assert_int_equal(sum.denied, 1);
	if (!strstr(out, INVALID ": default/invalid-max-sync: " INVALID_FIELD ": Invalid value: 3"))
		fail_msg("denial does not name " INVALID_FIELD ": %s", out);
	free(out);
	free(diag);
}

static void test_invalid_names_field_json(void **state)
{
	const char *files[] = { INVALID };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 1, NULL, 0, true, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.denied, 1);
	assert_string_equal(diag, ""); /* the JSON report holds everything */
	json_object *doc = NULL;
	assert_int_equal(op_json_parse(out, strlen(out), 0, &doc, &err), 0);
	assert_false(json_object_get_boolean(op_json_at(doc, "admitted")));
	json_object *res = json_object_array_get_idx(op_json_at(doc, "results"), 0);
	assert_non_null(res);
	assert_string_equal(op_json_str_at(res, "operation"), "CREATE");
	assert_false(json_object_get_boolean(op_json_at(res, "admitted")));
	json_object *e = json_object_array_get_idx(op_json_at(res, "errors"), 0);
	assert_non_null(e);
	assert_string_equal(op_json_str_at(e, "field"), INVALID_FIELD);
	assert_string_equal(op_json_str_at(e, "reason"), "FieldValueInvalid");
	json_object_put(doc);
	free(out);
	free(diag);
}

static void test_old_makes_update(void **state)
{
	const char *files[] = { VALID }, *old[] = { VALID };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 1, old, 1, true, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.admitted, 1);
	assert_non_null(strstr(out, "\"operation\": \"UPDATE\""));
	free(out);
	free(diag);
}

/* One multi-document file: a Cluster, a Backup, a bad ScheduledBackup, an
 * ObjectStore and a ConfigMap; each admitted kind judged, the rest skipped.
 * With the same file as --old, a changed Backup spec is an UPDATE denial. */
static void test_backup_kinds_multidoc(void **state)
{
	char path[] = "/tmp/pgop-offline-XXXXXX.yaml", old_path[] = "/tmp/pgop-offline-XXXXXX.yaml";
	static const char head[] =
		"apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: pg}\n"
		"spec: {instances: 1, storage: {size: 1Gi}}\n---\n"
		"apiVersion: postgresql.cnpg.io/v1\nkind: ScheduledBackup\nmetadata: {name: s}\n"
		"spec: {schedule: '0 0 0 * * 8', cluster: {name: pg}}\n---\n"
		"apiVersion: barmancloud.cnpg.io/v1\nkind: ObjectStore\nmetadata: {name: o}\n"
		"spec: {configuration: {destinationPath: 's3://bkt', s3Credentials: "
		"{inheritFromIAMRole: true}}}\n---\n"
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
		"apiVersion: postgresql.cnpg.io/v1\nkind: Backup\nmetadata: {name: b}\n";
	const char *specs[2] = { "spec: {cluster: {name: pg}}\n", "spec: {cluster: {name: pg2}}\n" };
	char *paths[2] = { path, old_path };
	for (int i = 0; i < 2; i++) {
		int fd = mkstemps(paths[i], 5);
		assert_true(fd >= 0);
		FILE *f = fdopen(fd, "w");
		assert_non_null(f);
		fputs(head, f);
		fputs(specs[i], f);
		fclose(f);
	}
	const char *files[] = { path }, *old[] = { old_path };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 1, NULL, 0, false, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.admitted, 3);
	assert_int_equal(sum.denied, 1);
	assert_int_equal(sum.skipped, 1);
	if (!strstr(out, "default/s: spec.schedule: Invalid value: \"0 0 0 * * 8\": day-of-week "
			 "field \"8\""))
		fail_msg("no schedule denial: %s", out);
	assert_non_null(strstr(out, "default/c: skipped (ConfigMap is not a kind pgop admits"));
	free(out);
	free(diag);
	/* old file: the Backup named b had cluster pg2; now pg: B6 */
	assert_int_equal(run(files, 1, old, 1, false, &sum, &out, &diag, &err), 0);
	if (!strstr(out, "default/b: spec: Forbidden: BackupSpec is immutable once set"))
		fail_msg("no B6 denial: %s", out);
	assert_int_equal(sum.denied, 2);
	free(out);
	free(diag);
	unlink(path);
	unlink(old_path);
}

static void test_unreadable_inputs(void **state)
{
	/* an unreadable manifest is an input error, the run goes on */
	const char *files[] = { MISSING, VALID };
	struct wh_offline_summary sum = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *out = NULL, *diag = NULL;
	assert_int_equal(run(files, 2, NULL, 0, false, &sum, &out, &diag, &err), 0);
	assert_int_equal(sum.input_errors, 1);
	assert_int_equal(sum.admitted, 1);
	assert_non_null(strstr(diag, MISSING ": cannot open: "));
	free(out);
	free(diag);

	/* an unreadable old file stops the run before anything is written */
	const char *old[] = { MISSING };
	sum = (struct wh_offline_summary){ 7, 7, 7, 7 };
	assert_int_equal(run(files + 1, 1, old, 1, false, &sum, &out, &diag, &err), -EINVAL);
	assert_int_equal(strncmp(err.msg, MISSING ": cannot open: ", strlen(MISSING) + 15), 0);
	assert_int_equal(sum.admitted, 7); /* not written on failure */
	assert_string_equal(out, "");
	assert_string_equal(diag, "");
	free(out);
	free(diag);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_admitted),
		cmocka_unit_test(test_invalid_names_field_text),
		cmocka_unit_test(test_invalid_names_field_json),
		cmocka_unit_test(test_old_makes_update),
		cmocka_unit_test(test_backup_kinds_multidoc),
		cmocka_unit_test(test_unreadable_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
