/* tests/unit/test_instance_backup.c - the pure parts of base backups: the
 * status JSON of GET /pg/backup (round trip, malformed input), Backup names,
 * the routes' authorization, and backup/'s helpers the engine uses (LSNs to
 * WAL names as barman computes them, the data keys of the configuration,
 * Python list literals). The engine itself runs against a real PostgreSQL
 * and object store in tests/e2e/test_base_backup.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "backup/backup.h"
#include "instance/instance.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/lsn.h"

static void test_status_json(void **state)
{
	struct inst_backup_status s = {
		.name = op_strdup("nightly-1"), .backup_id = op_strdup("20261207T041939"),
		.phase = op_strdup("completed"), .begin_wal = op_strdup("000000010000000000000004"),
		.end_wal = op_strdup("000000010000000000000005"), .begin_lsn = op_strdup("0/4000028"),
		.end_lsn = op_strdup("0/5000100"), .started_at = op_strdup("2026-12-07T04:19:39Z"),
		.stopped_at = op_strdup("2026-12-07T04:19:45Z"), .pod_name = op_strdup("pg-2"),
		.destination_path = op_strdup("s3://b/p"), .server_name = op_strdup("pg"),
		.endpoint_url = op_strdup("https://s3:9000"), .timeline = 1, .size = 123456789,
	};
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_backup_status_to_json(&s, &b), 0);
	assert_non_null(strstr(op_buf_str(&b), "\"instanceID\":{\"podName\":\"pg-2\"}"));
	assert_non_null(strstr(op_buf_str(&b), "\"beginLSN\":\"0/4000028\""));
	assert_non_null(strstr(op_buf_str(&b), "\"endpointURL\":\"https://s3:9000\""));
	assert_null(strstr(op_buf_str(&b), "\"error\"")); /* absent members left out */
	struct inst_backup_status r;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_backup_status_parse(b.data, b.len, &r, &err), 0);
	assert_string_equal(r.name, "nightly-1");
	assert_string_equal(r.end_wal, "000000010000000000000005");
	assert_string_equal(r.pod_name, "pg-2");
	assert_int_equal(r.timeline, 1);
	assert_int_equal(r.size, 123456789);
	assert_null(r.error);
	struct op_buf b2 = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_backup_status_to_json(&r, &b2), 0);
	assert_string_equal(op_buf_str(&b), op_buf_str(&b2));
	inst_backup_status_done(&r);
	inst_backup_status_done(&s);
	op_buf_done(&b);
	op_buf_done(&b2);

	static const char *const bad[] = {
		"", "[]", "{", "{\"phase\":\"running\"}", "{\"name\":\"a\"}",
		"{\"name\":1,\"phase\":\"running\"}", "{\"name\":\"a\",\"phase\":\"x\",\"size\":\"1\"}",
		"{\"name\":\"a\",\"phase\":\"x\",\"instanceID\":[]}",
		"{\"name\":\"a\",\"phase\":\"x\",\"instanceID\":{\"podName\":2}}",
		"{\"name\":\"a\",\"phase\":\"x\",\"error\":null}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		err = OP_ERR_INIT;
		if (inst_backup_status_parse(bad[i], strlen(bad[i]), &r, &err) == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err.msg[0] != '\0');
	}
	/* unknown members (a newer manager's) are ignored */
	const char *newer = "{\"name\":\"a\",\"phase\":\"failed\",\"future\":{\"x\":1}}";
	assert_int_equal(inst_backup_status_parse(newer, strlen(newer), &r, NULL), 0);
	inst_backup_status_done(&r);
}

static void test_names(void **state)
{
	static const char *const good[] = { "a", "backup-1", "pg.nightly-20261207", "0", "a.b.c" };
	static const char *const bad[] = { "", "A", "-a", "a-", ".a", "a.", "a..b", "a_b", "a/b",
					   "a.-b", "a-.b", "bäckup", "a b" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(good); i++)
		if (!inst_backup_name_valid(good[i]))
			fail_msg("refused: %s", good[i]);
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++)
		if (inst_backup_name_valid(bad[i]))
			fail_msg("accepted: %s", bad[i]);
	assert_false(inst_backup_name_valid(NULL));
	char longest[254];
	memset(longest, 'a', 253);
	longest[253] = '\0';
	assert_true(inst_backup_name_valid(longest)); /* labels past 63 are the webhook's */
	char too_long[255];
	memset(too_long, 'a', 254);
	too_long[254] = '\0';
	assert_false(inst_backup_name_valid(too_long));
}

static void test_routes(void **state)
{
	assert_true(inst_route_is_protected("POST", "/pg/backup"));
	assert_true(inst_route_is_protected("GET", "/pg/backup"));
	assert_int_equal(inst_auth_decide("POST", "/pg/backup", INST_PEER_NONE, NULL), 401);
	assert_int_equal(inst_auth_decide("POST", "/pg/backup", INST_PEER_TRUSTED, "someone"), 403);
	assert_int_equal(inst_auth_decide("POST", "/pg/backup", INST_PEER_TRUSTED, INST_OPERATOR_CN), 0);
	assert_int_equal(inst_auth_decide("GET", "/pg/backup", INST_PEER_TRUSTED, INST_OPERATOR_CN), 0);
	assert_int_equal(inst_auth_decide("DELETE", "/pg/backup", INST_PEER_TRUSTED, INST_OPERATOR_CN), 405);
	assert_int_equal(inst_auth_decide("POST", "/pg/backup", INST_PEER_NOT_CLIENT, INST_OPERATOR_CN), 403);
}

/* barman's xlog.location_to_xlogfile_name_offset */
static void test_lsn(void **state)
{
	uint64_t lsn, off;
	char wal[25];
	assert_int_equal(op_lsn_parse("16/B374D848", &lsn), 0);
	assert_true(lsn == 0x16B374D848ull);
	assert_int_equal(bk_lsn_to_wal(lsn, 1, 16u << 20, wal, &off), 0);
	assert_string_equal(wal, "0000000100000016000000B3");
	assert_true(off == 0x74D848);
	assert_int_equal(op_lsn_parse("0/4000028", &lsn), 0);
	assert_int_equal(bk_lsn_to_wal(lsn, 2, 16u << 20, wal, &off), 0);
	assert_string_equal(wal, "000000020000000000000004");
	assert_true(off == 0x28);
	assert_int_equal(bk_lsn_to_wal(0xFFFFFFFFull, 1, 1u << 30, wal, &off), 0);
	assert_string_equal(wal, "000000010000000000000003"); /* 1 GiB segments */
	assert_int_equal(bk_lsn_to_wal(lsn, 1, 3u << 20, wal, &off), -EINVAL);
	assert_int_equal(bk_lsn_to_wal(lsn, 1, 1u << 19, wal, &off), -EINVAL);
	static const char *const bad[] = { "", "/", "0/", "/1", "1", "0/123456789", "123456789/0",
					   "g/1", "0/1 ", " 0/1", "0//1" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++)
		if (op_lsn_parse(bad[i], &lsn) == 0)
			fail_msg("accepted: '%s'", bad[i]);
	assert_int_equal(op_lsn_parse(NULL, &lsn), -EINVAL);
}

static void test_py_list(void **state)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	const char *v[] = { "/pg/custom.conf", "it's" };
	assert_int_equal(bk_py_repr_strv(v, 2, &b), 0);
	assert_string_equal(op_buf_str(&b), "['/pg/custom.conf', \"it's\"]");
	op_buf_reset(&b);
	assert_int_equal(bk_py_repr_strv(NULL, 0, &b), 0);
	assert_string_equal(op_buf_str(&b), "[]");
	op_buf_reset(&b);
	const char *invalid[] = { "\xff" };
	assert_true(bk_py_repr_strv(invalid, 1, &b) < 0);
	op_buf_done(&b);
}

#define CFG                                                                                        \
	"{\"destinationPath\":\"s3://bucket/p\",\"serverName\":\"pg\",\"accessKeyIdFile\":\"/a\","  \
	"\"secretAccessKeyFile\":\"/s\",\"stateDir\":\"/r\""

static void test_config_data_keys(void **state)
{
	struct bk_config cfg;
	const char *j = CFG "}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	assert_int_equal(cfg.data_compression, BK_COMP_NONE);
	assert_false(cfg.immediate_checkpoint);
	assert_int_equal(cfg.jobs, BK_JOBS_DEFAULT);
	bk_config_done(&cfg);
	j = CFG ",\"dataCompression\":\"bzip2\",\"immediateCheckpoint\":true,\"jobs\":4}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	assert_int_equal(cfg.data_compression, BK_COMP_BZIP2);
	assert_true(cfg.immediate_checkpoint);
	assert_int_equal(cfg.jobs, 4);
	bk_config_done(&cfg);
	/* what the tar cannot write is the backup's error, not the WAL archive's */
	j = CFG ",\"dataCompression\":\"snappy\"}";
	assert_int_equal(bk_config_parse(j, strlen(j), &cfg, NULL), 0);
	assert_int_equal(cfg.data_compression, BK_COMP_SNAPPY);
	bk_config_done(&cfg);
	struct bk_tar_opts o = { .pgdata = "/", .compression = BK_COMP_SNAPPY };
	struct bk_tar_stream *s;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_tar_stream_new(&o, &s, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "snappy"));

	static const struct { const char *json, *msg; } bad[] = {
		{ CFG ",\"dataCompression\":\"lzo\"}", "dataCompression" },
		{ CFG ",\"dataCompression\":2}", "dataCompression: expected string" },
		{ CFG ",\"immediateCheckpoint\":\"yes\"}", "immediateCheckpoint" },
		{ CFG ",\"jobs\":0}", "jobs" },
		{ CFG ",\"jobs\":33}", "jobs" },
		{ CFG ",\"jobs\":1.5}", "jobs" },
		{ CFG ",\"data\":{}}", "unknown key 'data'" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		err = OP_ERR_INIT;
		if (bk_config_parse(bad[i].json, strlen(bad[i].json), &cfg, &err) == 0)
			fail_msg("accepted: %s", bad[i].json);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].json, err.msg, bad[i].msg);
	}
}

/* backup-state.json: what a restarted manager answers; one left running by
 * a process that died is failed; a POST without archiving configured is
 * refused saying why, a bad name before anything. */
static void test_job_state(void **state)
{
	char dir[] = "/tmp/pgop-bbjob-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char run[64], file[96];
	snprintf(run, sizeof(run), "%s/run", dir);
	assert_int_equal(mkdir(run, 0700), 0);
	snprintf(file, sizeof(file), "%s/" INST_BACKUP_STATE_FILE, run);
	struct inst_paths p = { .pgdata = "/nonexistent", .controller_dir = dir };
	struct inst_backup_job *j = inst_backup_job_new(&p, run, 5432, "pg-1");
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(inst_backup_job_json(j, &b), -ENOENT);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_backup_job_start(j, "Bad_Name", NULL, &err), -EINVAL);
	err = OP_ERR_INIT;
	assert_int_equal(inst_backup_job_start(j, "ok", "2024", &err), -EINVAL);
	err = OP_ERR_INIT;
	int r = inst_backup_job_start(j, "ok", NULL, &err);
	assert_true(r < 0 && r != -EINVAL && r != -EBUSY);
	assert_non_null(strstr(err.msg, "WAL archiving is not configured"));
	inst_backup_job_free(j);

	const char *running = "{\"name\":\"b1\",\"backupId\":\"20261207T041939\","
			      "\"phase\":\"running\",\"beginWal\":\"000000010000000000000004\"}";
	struct op_err werr = OP_ERR_INIT;
	assert_int_equal(inst_write_file(file, running, strlen(running), 0600, &werr), 0);
	j = inst_backup_job_new(&p, run, 5432, "pg-1");
	assert_int_equal(inst_backup_job_json(j, &b), 0);
	struct inst_backup_status s;
	assert_int_equal(inst_backup_status_parse(b.data, b.len, &s, NULL), 0);
	assert_string_equal(s.phase, "failed");
	assert_string_equal(s.error, "instance manager restarted");
	assert_string_equal(s.begin_wal, "000000010000000000000004");
	assert_non_null(s.stopped_at);
	inst_backup_status_done(&s);
	/* the same name again answers it (1), nothing is started */
	assert_int_equal(inst_backup_job_start(j, "b1", NULL, NULL), 1);
	inst_backup_job_free(j);
	/* saved as failed: a third manager reads failed from the file */
	op_buf_reset(&b);
	assert_int_equal(inst_read_file(file, OP_BUF_MAX_SMALL, &b, NULL), 0);
	assert_non_null(strstr(op_buf_str(&b), "\"phase\":\"failed\""));
	/* garbage in the file: ignored, no backup known */
	assert_int_equal(inst_write_file(file, "{garbage", 8, 0600, &werr), 0);
	j = inst_backup_job_new(&p, run, 5432, NULL);
	op_buf_reset(&b);
	assert_int_equal(inst_backup_job_json(j, &b), -ENOENT);
	inst_backup_job_free(j);
	op_buf_done(&b);
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_json), cmocka_unit_test(test_names),
		cmocka_unit_test(test_routes),	    cmocka_unit_test(test_lsn),
		cmocka_unit_test(test_py_list),	    cmocka_unit_test(test_config_data_keys),
		cmocka_unit_test(test_job_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
