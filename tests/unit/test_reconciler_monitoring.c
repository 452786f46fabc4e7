/* tests/unit/test_reconciler_monitoring.c - what spec.monitoring adds to the
 * objects (reconciler/objects_monitoring.c, podmonitor.c): the instance
 * Pod's port `metrics` and custom query volumes (one optional volume per
 * object, its keys as items, mounted where the exporter reads them), and the
 * PodMonitor (selector, port, TLS with the Cluster's CA, owner). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "api/cluster.h"
#include "reconciler/objects.h"
#include "support/json.h"

static struct api_cluster *cluster(const char *monitoring)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":"
		 "{\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\"},\"spec\":{\"instances\":1,"
		 "\"storage\":{\"size\":\"1Gi\"},\"monitoring\":%s}}",
		 monitoring);
	json_object *o = NULL;
	assert_int_equal(op_json_parse(buf, strlen(buf), 64, &o, NULL), 0);
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, NULL), 0);
	json_object_put(o);
	return c;
}

static const char *str(json_object *o, const char *path)
{
	const char *s = op_json_str_at(o, path);
	return s ? s : "(null)";
}

static void test_volumes_and_port(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(
		"{\"customQueriesConfigMap\":[{\"name\":\"q\",\"key\":\"a.yaml\"},"
		"{\"name\":\"q\",\"key\":\"b.yaml\"},{\"name\":\"r\",\"key\":\"x\"}],"
		"\"customQueriesSecret\":[{\"name\":\"s\",\"key\":\"queries\"}],\"metricsQueriesTTL\":\"1m\"}");
	assert_int_equal(c->spec.monitoring.n_custom_configmaps, 3);
	assert_string_equal(c->spec.monitoring.metrics_queries_ttl, "1m");
	json_object *vols = json_object_new_array(), *mounts = json_object_new_array();
	rc_monitoring_volumes(c, vols, mounts);
	assert_int_equal(json_object_array_length(vols), 3); /* q (two keys), r, s */
	json_object *q = json_object_array_get_idx(vols, 0);
	assert_string_equal(str(q, "configMap.name"), "q");
	assert_true(json_object_get_boolean(op_json_at(q, "configMap.optional")));
	assert_int_equal(json_object_array_length(op_json_at(q, "configMap.items")), 2);
	json_object *s = json_object_array_get_idx(vols, 2);
	assert_string_equal(str(s, "secret.secretName"), "s");
	assert_string_equal(str(json_object_array_get_idx(mounts, 0), "mountPath"),
			    "/run/pgop/monitoring/configmap/q");
	assert_string_equal(str(json_object_array_get_idx(mounts, 2), "mountPath"),
			    "/run/pgop/monitoring/secret/s");
	assert_true(json_object_get_boolean(op_json_at(json_object_array_get_idx(mounts, 2),
						       "readOnly")));
	json_object_put(vols);
	json_object_put(mounts);
	json_object *p = rc_metrics_port();
	assert_string_equal(str(p, "name"), "metrics");
	assert_int_equal(json_object_get_int(op_json_at(p, "containerPort")), 9187);
	json_object_put(p);
	api_cluster_free(c);
}

static void test_podmonitor(void **state)
{
	(void)state;
	struct api_cluster *c = cluster("{\"enablePodMonitor\":true}");
	json_object *pm = rc_build_podmonitor(c);
	assert_string_equal(str(pm, "kind"), "PodMonitor");
	assert_string_equal(str(pm, "apiVersion"), "monitoring.coreos.com/v1");
	assert_string_equal(str(pm, "metadata.name"), "c");
	assert_string_equal(str(pm, "metadata.namespace"), "db");
	assert_non_null(op_json_at(pm, "metadata.ownerReferences"));
	json_object *ep = json_object_array_get_idx(op_json_at(pm, "spec.podMetricsEndpoints"), 0);
	assert_string_equal(str(ep, "port"), "metrics");
	assert_null(op_json_at(ep, "scheme"));
	assert_string_equal(json_object_get_string(json_object_object_get(
				    op_json_at(pm, "spec.selector.matchLabels"), "cnpg.io/cluster")),
			    "c");
	json_object_put(pm);
	api_cluster_free(c);
	c = cluster("{\"enablePodMonitor\":true,\"tls\":{\"enabled\":true}}");
	pm = rc_build_podmonitor(c);
	ep = json_object_array_get_idx(op_json_at(pm, "spec.podMetricsEndpoints"), 0);
	assert_string_equal(str(ep, "scheme"), "https");
	assert_string_equal(str(ep, "tlsConfig.serverName"), "c-rw");
	assert_string_equal(str(ep, "tlsConfig.ca.secret.key"), "ca.crt");
	json_object_put(pm);
	api_cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_volumes_and_port),
		cmocka_unit_test(test_podmonitor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
