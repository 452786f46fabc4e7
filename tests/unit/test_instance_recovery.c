/* tests/unit/test_instance_recovery.c - instance/recovery.c's pure parts: the
 * spec's recovery target validated and normalised, the settings file
 * rendered (restore_command quoted for the shell and the configuration
 * file), configuration strings quoted; and api's recovery-<file> contract. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/json.h"

static int parse(const struct api_recovery_target *a, struct inst_recovery_target *t,
		 struct op_err *err)
{
	*err = OP_ERR_INIT;
	return inst_recovery_target_parse(a, t, err);
}

static char *render(const struct api_recovery_target *a)
{
	struct inst_recovery_target t;
	struct op_err err;
	assert_int_equal(parse(a, &t, &err), 0);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_recovery_conf_render("/controller/pgop", "/controller/run/src.json", &t,
						   &b, &err),
			 0);
	inst_recovery_target_done(&t);
	char *s = strdup(op_buf_str(&b));
	op_buf_done(&b);
	return s;
}

static void test_render(void **state)
{
	static const char head[] =
		"# pgop: the recovery's settings (the temporary postmaster's config_file); "
		"removed when it ends\ninclude_if_exists = 'postgresql.conf'\n"
		"restore_command = '''/controller/pgop'' instance wal-restore --config "
		"''/controller/run/src.json'' %f %p'\n";
	char *s = render(NULL);
	char *want = op_asprintf("%srecovery_target_timeline = 'latest'\n"
				 "recovery_target_action = 'promote'\n", head);
	assert_string_equal(s, want);
	free(s);
	free(want);
	struct api_recovery_target a = { .target_time = "2024-01-02T03:04:05.5+01:00",
					 .exclusive = true, .target_tli = "2" };
	s = render(&a);
	want = op_asprintf("%srecovery_target_time = '2024-01-02 02:04:05.500000+00'\n"
			   "recovery_target_inclusive = 'off'\n"
			   "recovery_target_timeline = '2'\n"
			   "recovery_target_action = 'promote'\n", head);
	assert_string_equal(s, want);
	free(s);
	free(want);
	a = (struct api_recovery_target){ .target_name = "it's \\ here" };
	s = render(&a);
	assert_non_null(strstr(s, "recovery_target_name = 'it''s \\\\ here'\n"
				  "recovery_target_inclusive = 'on'\n"));
	free(s);
	a = (struct api_recovery_target){ .target_lsn = "0/abc", .target_tli = "current" };
	s = render(&a);
	assert_non_null(strstr(s, "recovery_target_lsn = '0/ABC'\n"));
	assert_non_null(strstr(s, "recovery_target_timeline = 'current'\n"));
	free(s);
	a = (struct api_recovery_target){ .target_xid = "00742" };
	s = render(&a);
	assert_non_null(strstr(s, "recovery_target_xid = '742'\n"));
	free(s);
	a = (struct api_recovery_target){ .target_immediate = true, .exclusive = true };
	s = render(&a);
	assert_non_null(strstr(s, "recovery_target = 'immediate'\nrecovery_target_timeline"));
	free(s);
}

static void test_invalid(void **state)
{
	static const struct {
		struct api_recovery_target a;
		const char *field;
	} bad[] = {
		{ { .target_time = "tomorrow" }, "targetTime" },
		{ { .target_time = "2024-01-02 03:04:05'\nrestore_command='x" }, "targetTime" },
		{ { .target_lsn = "0/1'" }, "targetLSN" },
		{ { .target_lsn = "123" }, "targetLSN" },
		{ { .target_xid = "12a" }, "targetXID" },
		{ { .target_xid = "" }, "targetXID" },
		{ { .target_xid = "1" }, "targetXID" },
		{ { .target_xid = "999999999999999999999" }, "targetXID" },
		{ { .target_name = "" }, "targetName" },
		{ { .target_name = "a\nb" }, "targetName" },
		{ { .target_name = "0123456789012345678901234567890123456789012345678901234567890123" },
		  "targetName" },
		{ { .target_tli = "0" }, "targetTLI" },
		{ { .target_tli = "-1" }, "targetTLI" },
		{ { .target_tli = "4294967296" }, "targetTLI" },
		{ { .target_tli = "newest" }, "targetTLI" },
		{ { .target_xid = "5", .target_name = "x" }, "at most one" },
		{ { .target_time = "2024-01-02 00:00:00", .target_immediate = true }, "at most one" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		struct inst_recovery_target t;
		struct op_err err;
		assert_int_equal(parse(&bad[i].a, &t, &err), -EINVAL);
		assert_non_null(strstr(err.msg, bad[i].field));
	}
	/* paths restore_command cannot carry */
	struct inst_recovery_target t;
	struct op_err err;
	assert_int_equal(parse(NULL, &t, &err), 0);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_recovery_conf_render("/x/pgop", "/x/a%fb.json", &t, &b, &err), -EINVAL);
	op_buf_reset(&b);
	assert_int_equal(inst_recovery_conf_render("/x/pg\nop", "/x/a.json", &t, &b, &err), -EINVAL);
	op_buf_reset(&b);
	/* a quote in a path: shell-quoted, then doubled for the file */
	err = OP_ERR_INIT;
	assert_int_equal(inst_recovery_conf_render("/x/it's/pgop", "/x/a.json", &t, &b, &err), 0);
	assert_non_null(strstr(op_buf_str(&b), "restore_command = '''/x/it''\\\\''''s/pgop'' "));
	op_buf_done(&b);
	inst_recovery_target_done(&t);
}

static void test_quote(void **state)
{
	struct op_buf b = OP_BUF_INIT(64);
	assert_int_equal(inst_conf_quote("a'b\\c", &b), 0);
	assert_string_equal(op_buf_str(&b), "'a''b\\\\c'");
	op_buf_reset(&b);
	assert_int_equal(inst_conf_quote("a\rb", &b), -EINVAL);
	op_buf_reset(&b);
	assert_int_equal(inst_conf_quote("tab\there", &b), -EINVAL);
	op_buf_done(&b);
}

static void test_contract(void **state)
{
	assert_string_equal(api_recovery_file_volume(API_BARMAN_ACCESS_KEY_ID),
			    "recovery-access-key-id");
	assert_string_equal(api_recovery_file_volume(API_BARMAN_ENDPOINT_CA),
			    "recovery-endpoint-ca");
	for (int f = 0; f < API_BARMAN_FILE__COUNT; f++) {
		char *want = op_asprintf("recovery-%s", api_barman_file_name(f));
		assert_string_equal(api_recovery_file_volume(f), want);
		free(want);
	}
}

static struct api_cluster *cluster(const char *json)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(json, strlen(json), 64, &o, &err), 0);
	struct api_cluster *c = NULL;
	if (api_cluster_decode(o, NULL, &c, &err))
		fail_msg("decode: %s", err.msg);
	json_object_put(o);
	return c;
}

#define REC_CLUSTER(store)                                                                         \
	"{\"metadata\":{\"name\":\"new\"},\"spec\":{\"bootstrap\":{\"recovery\":{\"source\":"      \
	"\"origin\"}},\"externalClusters\":[{\"name\":\"other\"},{\"name\":\"origin\","           \
	"\"barmanObjectStore\":" store "}]}}"

/* the source configuration: what wal-restore and the catalog read */
static void test_source_render(void **state)
{
	struct inst_paths p = { .pgdata = "/var/lib/postgresql/data/pgdata" };
	inst_paths_default(&p);
	struct api_cluster *c = cluster(REC_CLUSTER(
		"{\"destinationPath\":\"s3://bucket/p\",\"endpointURL\":\"https://s3:9000\","
		"\"endpointCA\":{\"name\":\"ca\",\"key\":\"ca.crt\"},\"s3Credentials\":{"
		"\"accessKeyId\":{\"name\":\"s\",\"key\":\"A\"},\"secretAccessKey\":{\"name\":\"s\","
		"\"key\":\"S\"}},\"wal\":{\"maxParallel\":4,\"restoreAdditionalCommandArgs\":["
		"\"--read-timeout=45\",\"--no-partial\"]},\"data\":{\"restoreAdditionalCommandArgs\":["
		"\"--read-timeout\",\"120\"]}}"));
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_recovery_source_render(&p, c, "eu-west-1", &b, &err), 0);
	struct bk_config cfg;
	if (bk_config_parse(b.data, b.len, &cfg, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.server_name, "origin"); /* no serverName: the entry's name */
	assert_string_equal(cfg.destination_path, "s3://bucket/p");
	assert_string_equal(cfg.region, "eu-west-1");
	assert_string_equal(cfg.access_key_file,
			    INST_SECRETS_DIR "/recovery-access-key-id/access-key-id");
	assert_string_equal(cfg.secret_key_file,
			    INST_SECRETS_DIR "/recovery-secret-access-key/secret-access-key");
	assert_string_equal(cfg.ca_file, INST_SECRETS_DIR "/recovery-endpoint-ca/endpoint-ca");
	assert_null(cfg.session_token_file);
	assert_int_equal(cfg.max_parallel, 4);
	assert_int_equal(cfg.wal_read_timeout_s, 45);  /* wal.restoreAdditionalCommandArgs */
	assert_int_equal(cfg.data_read_timeout_s, 120); /* data.restoreAdditionalCommandArgs */
	assert_string_equal(cfg.state_dir, INST_CONTROLLER_DIR "/run/recovery-wal");
	bk_config_done(&cfg);
	op_buf_done(&b);
	api_cluster_free(c);
	/* serverName wins */
	c = cluster(REC_CLUSTER("{\"destinationPath\":\"s3://bucket\",\"serverName\":\"old\","
				"\"s3Credentials\":{\"accessKeyId\":{\"name\":\"s\",\"key\":\"A\"},"
				"\"secretAccessKey\":{\"name\":\"s\",\"key\":\"S\"}}}"));
	b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_recovery_source_render(&p, c, NULL, &b, &err), 0);
	assert_non_null(strstr(op_buf_str(&b), "\"serverName\":\"old\""));
	op_buf_done(&b);
	api_cluster_free(c);
	/* the IAM role: not supported; no such source */
	c = cluster(REC_CLUSTER("{\"destinationPath\":\"s3://bucket\",\"s3Credentials\":"
				"{\"inheritFromIAMRole\":true}}"));
	b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_recovery_source_render(&p, c, NULL, &b, &err), -ENOTSUP);
	api_cluster_free(c);
	c = cluster("{\"metadata\":{\"name\":\"new\"},\"spec\":{\"bootstrap\":{\"recovery\":"
		    "{\"source\":\"nowhere\"}}}}");
	err = OP_ERR_INIT;
	assert_int_equal(inst_recovery_source_render(&p, c, NULL, &b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nowhere"));
	assert_null(api_cluster_recovery_source(c));
	op_buf_done(&b);
	api_cluster_free(c);
}

static void test_archive_check(void **state)
{
	static const char *const creds =
		"\"s3Credentials\":{\"accessKeyId\":{\"name\":\"s\",\"key\":\"A\"},"
		"\"secretAccessKey\":{\"name\":\"s\",\"key\":\"S\"}}";
	static const struct {
		const char *own_dest, *own_server, *src_dest, *src_server;
		int want;
	} cases[] = {
		{ "s3://bucket/p", NULL, "s3://bucket/p/", NULL, 0 },    /* new vs origin */
		{ "s3://bucket/p", "origin", "s3://bucket/p/", NULL, -EEXIST },
		{ "s3://bucket/p", "x", "s3://bucket/p", "x", -EEXIST },
		{ "s3://bucket/q", "x", "s3://bucket/p", "x", 0 },
		{ "s3://bucket/p", NULL, "s3://bucket/p", "new", -EEXIST },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		char own_sn[64] = "", src_sn[64] = "";
		if (cases[i].own_server)
			snprintf(own_sn, sizeof(own_sn), "\"serverName\":\"%s\",", cases[i].own_server);
		if (cases[i].src_server)
			snprintf(src_sn, sizeof(src_sn), "\"serverName\":\"%s\",", cases[i].src_server);
		char *json = op_asprintf(
			"{\"metadata\":{\"name\":\"new\"},\"spec\":{\"backup\":{\"barmanObjectStore\":"
			"{\"destinationPath\":\"%s\",%s%s}},\"bootstrap\":{\"recovery\":{\"source\":"
			"\"origin\"}},\"externalClusters\":[{\"name\":\"origin\",\"barmanObjectStore\":"
			"{\"destinationPath\":\"%s\",%s%s}}]}}",
			cases[i].own_dest, own_sn, creds, cases[i].src_dest, src_sn, creds);
		struct api_cluster *c = cluster(json);
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(inst_recovery_archive_check(c, &err), cases[i].want);
		api_cluster_free(c);
		free(json);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_contract),
		cmocka_unit_test(test_source_render),
		cmocka_unit_test(test_archive_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
