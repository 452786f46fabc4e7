/* tests/unit/test_api_plugin.c - the barman-cloud plugin form resolved into
 * the in-tree one (api/plugin.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/cluster.h"
#include "api/plugin.h"
#include "support/json.h"

static const char *const STORE =
	"{\"apiVersion\":\"barmancloud.cnpg.io/v1\",\"kind\":\"ObjectStore\","
	"\"metadata\":{\"name\":\"store\",\"namespace\":\"db\"},"
	"\"spec\":{\"retentionPolicy\":\"7d\",\"configuration\":{"
	"\"destinationPath\":\"s3://b/p\",\"endpointURL\":\"https://s3:9000\","
	"\"s3Credentials\":{\"accessKeyId\":{\"name\":\"c\",\"key\":\"ID\"},"
	"\"secretAccessKey\":{\"name\":\"c\",\"key\":\"KEY\"}},"
	"\"wal\":{\"compression\":\"zstd\"}}}}";

struct lookups {
	int calls;
	const char *last;
	const char *doc; /* NULL: no such ObjectStore */
};

static json_object *get(void *ud, const char *name)
{
	struct lookups *l = ud;
	l->calls++;
	l->last = name;
	json_object *o = NULL;
	struct op_err e = OP_ERR_INIT;
	if (!l->doc || op_json_parse(l->doc, strlen(l->doc), 64, &o, &e) < 0)
		return NULL;
	return o;
}

static struct api_cluster *cluster(const char *spec)
{
	static char txt[4096];
	int n = snprintf(txt, sizeof(txt), "{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":"
			 "\"Cluster\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"db\"},"
			 "\"spec\":%s}", spec);
	assert_true(n > 0 && (size_t)n < sizeof(txt));
	json_object *o = NULL;
	struct op_err e = OP_ERR_INIT;
	assert_int_equal(op_json_parse(txt, strlen(txt), 64, &o, &e), 0);
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, &e), 0);
	json_object_put(o);
	return c;
}

static void test_archiver(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(
		"{\"instances\":1,\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\","
		"\"isWALArchiver\":true,\"parameters\":{\"barmanObjectName\":\"store\","
		"\"serverName\":\"old\"}}]}");
	assert_true(api_cluster_archives_wal(c));
	assert_null(api_cluster_wal_store(c));
	struct lookups l = { .doc = STORE };
	struct op_err e = OP_ERR_INIT;
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), 0);
	assert_string_equal(l.last, "store");
	const struct api_barman_store *s = api_cluster_wal_store(c);
	assert_non_null(s);
	assert_string_equal(s->destination_path, "s3://b/p");
	assert_string_equal(api_barman_server_name(c, s), "old");
	assert_string_equal(s->wal.compression, "zstd");
	assert_string_equal(c->spec.backup.retention_policy, "7d");
	assert_string_equal(c->spec.backup.target, "prefer-standby");
	assert_true(c->spec.backup.barman_from_plugin);
	/* resolved again (the instance manager refreshes): replaced, not leaked */
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), 0);
	assert_int_equal(l.calls, 2);
	api_cluster_free(c);
}

static void test_missing_and_malformed(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(
		"{\"instances\":1,\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\","
		"\"isWALArchiver\":true,\"parameters\":{\"barmanObjectName\":\"gone\"}}]}");
	struct lookups l = { .doc = NULL };
	struct op_err e = OP_ERR_INIT;
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "ObjectStore gone does not exist"));
	assert_null(api_cluster_wal_store(c));
	assert_true(api_cluster_archives_wal(c)); /* archive_command fails, never a no-op */
	l.doc = "{\"kind\":\"ObjectStore\",\"metadata\":{\"name\":\"gone\"},"
		"\"spec\":{\"configuration\":{\"destinationPath\":7}}}";
	op_err_clear(&e);
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "destinationPath"));
	api_cluster_free(c);

	c = cluster("{\"instances\":1,\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\","
		    "\"isWALArchiver\":true}]}");
	op_err_clear(&e);
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "barmanObjectName"));
	api_cluster_free(c);
}

static void test_recovery_source_and_intree(void **state)
{
	(void)state;
	/* an in-tree store is never replaced; a plugin recovery source is resolved */
	struct api_cluster *c = cluster(
		"{\"instances\":1,\"backup\":{\"barmanObjectStore\":{\"destinationPath\":"
		"\"s3://mine/x\",\"s3Credentials\":{\"accessKeyId\":{\"name\":\"a\",\"key\":\"b\"},"
		"\"secretAccessKey\":{\"name\":\"a\",\"key\":\"c\"}}}},"
		"\"plugins\":[{\"name\":\"barman-cloud.cloudnative-pg.io\",\"isWALArchiver\":true,"
		"\"parameters\":{\"barmanObjectName\":\"store\"}}],"
		"\"bootstrap\":{\"recovery\":{\"source\":\"origin\"}},"
		"\"externalClusters\":[{\"name\":\"origin\",\"plugin\":{\"name\":"
		"\"barman-cloud.cloudnative-pg.io\",\"parameters\":{\"barmanObjectName\":\"store\","
		"\"serverName\":\"src\"}}}]}");
	struct lookups l = { .doc = STORE };
	struct op_err e = OP_ERR_INIT;
	assert_int_equal(api_cluster_resolve_plugins(c, get, &l, &e), 0);
	assert_string_equal(api_cluster_wal_store(c)->destination_path, "s3://mine/x");
	const struct api_external_cluster *src = api_cluster_recovery_source(c);
	assert_non_null(src);
	assert_string_equal(src->barman_object_store->destination_path, "s3://b/p");
	assert_string_equal(src->barman_object_store->server_name, "src");
	assert_int_equal(l.calls, 1);
	api_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_archiver),
		cmocka_unit_test(test_missing_and_malformed),
		cmocka_unit_test(test_recovery_source_and_intree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
