/* tests/unit/test_instance_kube.c - the instance manager's API-server side
 * against the scripted HTTPS server of the kube tests: GET of its Cluster
 * through a kubeconfig, 404, and the merge patch of clusters/status that
 * reports currentPrimary. */
#include <curl/curl.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "instance/internal.h"
#include "support/json.h"
#include "tests/unit/test_kube_server.h"

#define CLUSTER_PATH "/apis/postgresql.cnpg.io/v1/namespaces/ns1/clusters/c"

static void handler(struct ts *s, const struct ts_req *req, struct ts_resp *resp)
{
	if (strcmp(req->method, "GET") == 0 && strcmp(req->path, CLUSTER_PATH) == 0) {
		resp->status = 200;
		resp->body = op_strdup(
			"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
			"\"metadata\":{\"name\":\"c\",\"namespace\":\"ns1\",\"resourceVersion\":\"7\"},"
			"\"spec\":{\"instances\":3},"
			"\"status\":{\"targetPrimary\":\"c-2\",\"currentPrimary\":\"c-1\","
			"\"instanceNames\":[\"c-1\",\"c-2\",\"c-3\"]}}");
		return;
	}
	if (strcmp(req->method, "PATCH") == 0 && strcmp(req->path, CLUSTER_PATH "/status") == 0) {
		resp->status = 200;
		resp->body = op_strdup("{\"metadata\":{\"name\":\"c\"}}");
		return;
	}
	resp->status = 404;
	resp->body = ts_status(404, "NotFound", "clusters.postgresql.cnpg.io not found");
}

static void test_load_and_patch(void **state)
{
	curl_global_init(CURL_GLOBAL_ALL);
	struct ts *s = ts_start(handler, NULL);
	struct inst_source src = { .ns = "ns1", .name = "c" };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_kube_open(ts_kubeconfig(s, "sa-token"), false, &src.kube, &err), 0);

	struct api_cluster *c = NULL;
	assert_int_equal(inst_cluster_load(&src, &c, &err), 0);
	assert_string_equal(c->status.target_primary, "c-2");
	assert_string_equal(c->status.current_primary, "c-1");
	assert_int_equal(c->status.instance_names.n, 3);
	assert_string_equal(c->metadata.resource_version, "7");
	api_cluster_free(c);
	const struct ts_req *r = ts_at(s, -1);
	assert_string_equal(r->auth, "Bearer sa-token");

	const char *patch = "{\"status\":{\"currentPrimary\":\"c-2\"}}";
	assert_int_equal(inst_cluster_patch_status(&src, patch, &err), 0);
	r = ts_at(s, -1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->path, CLUSTER_PATH "/status");
	assert_string_equal(r->ctype, "application/merge-patch+json");
	assert_string_equal(r->body, patch);

	struct inst_source other = src;
	other.name = "missing";
	c = NULL;
	op_err_clear(&err);
	assert_int_equal(inst_cluster_load(&other, &c, &err), -ENOENT);
	assert_null(c);
	assert_non_null(strstr(err.msg, "missing"));

	kube_client_free(src.kube);
	ts_stop(s);
	curl_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
