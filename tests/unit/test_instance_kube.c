/* tests/unit/test_instance_kube.c - the instance manager's API-server side
 * against the scripted HTTPS server of the kube tests: GET of its Cluster
 * through a kubeconfig, 404, the merge patch of clusters/status that
 * reports currentPrimary, and the SIGTERM handover's write (Conflicts read
 * again). */
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

/* ---- the SIGTERM handover's write ---- */

struct ho_state {
	int rv;             /* the Cluster's resourceVersion */
	const char *target; /* status.targetPrimary */
	int conflicts;      /* the next patches meet a reconciler write first */
	int gets, patches;
};
static struct ho_state ho;

static void ho_handler(struct ts *s, const struct ts_req *req, struct ts_resp *resp)
{
	(void)s;
	if (strcmp(req->method, "GET") == 0 && strcmp(req->path, CLUSTER_PATH) == 0) {
		ho.gets++;
		resp->status = 200;
		resp->body = op_asprintf(
			"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
			"\"metadata\":{\"name\":\"c\",\"namespace\":\"ns1\",\"resourceVersion\":\"%d\"},"
			"\"status\":{\"targetPrimary\":\"%s\",\"currentPrimary\":\"c-1\"}}",
			ho.rv, ho.target);
		return;
	}
	if (strcmp(req->method, "PATCH") == 0 && strcmp(req->path, CLUSTER_PATH "/status") == 0) {
		ho.patches++;
		json_object *p = json_tokener_parse(req->body);
		const char *rv = op_json_str_at(p, "metadata.resourceVersion");
		bool stale = !rv || atoi(rv) != ho.rv;
		if (ho.conflicts > 0) { /* the reconciler wrote the status just before */
			ho.conflicts--;
			ho.rv++;
			stale = true;
		}
		if (stale) {
			resp->status = 409;
			resp->body = ts_status(409, "Conflict", "the object has been modified");
		} else {
			ho.rv++;
			ho.target = strcmp(op_json_str_at(p, "status.targetPrimary"), "c-2") == 0
					    ? "c-2" : "other";
			resp->status = 200;
			resp->body = op_strdup("{\"metadata\":{\"name\":\"c\"}}");
		}
		json_object_put(p);
		return;
	}
	resp->status = 404;
	resp->body = ts_status(404, "NotFound", "no route");
}

static void test_hand_over(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_ALL);
	struct ts *s = ts_start(ho_handler, NULL);
	struct inst_source src = { .ns = "ns1", .name = "c" };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_kube_open(ts_kubeconfig(s, "sa-token"), true, &src.kube, &err), 0);

	/* two reconciler writes in between: read again each time, then written
	 * with the third read's resourceVersion and a microsecond timestamp */
	ho = (struct ho_state){ .rv = 10, .target = "c-1", .conflicts = 2 };
	assert_int_equal(inst_cluster_hand_over(&src, "c-1", "c-2", &err), 0);
	assert_int_equal(ho.gets, 3);
	assert_int_equal(ho.patches, 3);
	assert_string_equal(ho.target, "c-2");
	json_object *p = json_tokener_parse(ts_at(s, -1)->body);
	assert_string_equal(op_json_str_at(p, "metadata.resourceVersion"), "12");
	assert_string_equal(op_json_str_at(p, "status.targetPrimary"), "c-2");
	const char *stamp = op_json_str_at(p, "status.targetPrimaryTimestamp");
	assert_non_null(stamp);
	assert_non_null(strchr(stamp, '.')); /* microseconds, as CloudNativePG */
	json_object_put(p);

	/* the Cluster already names another target: nothing written */
	ho = (struct ho_state){ .rv = 20, .target = "c-3" };
	assert_int_equal(inst_cluster_hand_over(&src, "c-1", "c-2", &err), 1);
	assert_int_equal(ho.patches, 0);

	/* conflicting every time: gives up after INST_HANDOVER_ATTEMPTS */
	ho = (struct ho_state){ .rv = 30, .target = "c-1", .conflicts = 100 };
	assert_int_equal(inst_cluster_hand_over(&src, "c-1", "c-2", &err), -ESTALE);
	assert_int_equal(ho.patches, INST_HANDOVER_ATTEMPTS);
	assert_string_equal(ho.target, "c-1");

	kube_client_free(src.kube);
	ts_stop(s);
	curl_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_patch),
		cmocka_unit_test(test_hand_over),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
