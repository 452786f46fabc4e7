/* Unit tests: reconciler/objects*.c - desired objects built from a Cluster
 * (names, labels, selectors, owner references, volumes, commands, secrets). */
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

#include "api/cluster.h"
#include "reconciler/objects.h"
#include "support/base64.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml.h"

static const char cluster_json[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"cluster-example\",\"namespace\":\"db\",\"uid\":\"u-123\"},"
	"\"spec\":{\"instances\":3,\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:15\","
	"\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"fast\"},"
	"\"walStorage\":{\"size\":\"512Mi\"},"
	"\"bootstrap\":{\"initdb\":{\"database\":\"shop\",\"owner\":\"alice\",\"dataChecksums\":true,"
	"\"encoding\":\"UTF8\",\"postInitSQL\":[\"select 1\"]}},"
	"\"resources\":{\"requests\":{\"memory\":\"512Mi\"}},"
	"\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}}}";

static const char minimal_json[] =
	"{\"metadata\":{\"name\":\"m\",\"namespace\":\"default\",\"uid\":\"u-1\"},"
	"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}}}";

static struct api_cluster *decode(const char *txt)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(txt, strlen(txt), 64, &o, &err), 0);
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, &err), 0);
	json_object_put(o);
	return c;
}

static const struct rc_settings settings = { .operator_image = "pgop:test" };

static void assert_str_at(json_object *o, const char *path, const char *want)
{
	const char *got = op_json_str_at(o, path);
	if (!got)
		fail_msg("%s: absent", path);
	assert_string_equal(got, want);
}

static json_object *label_obj(json_object *o)
{
	return op_json_at(o, "metadata.labels");
}

static const char *label(json_object *o, const char *key)
{
	json_object *v = NULL;
	json_object *l = label_obj(o);
	return l && json_object_object_get_ex(l, key, &v) ? json_object_get_string(v) : NULL;
}

static void assert_owned(json_object *o)
{
	json_object *refs = op_json_at(o, "metadata.ownerReferences");
	assert_non_null(refs);
	assert_int_equal(json_object_array_length(refs), 1);
	json_object *r = json_object_array_get_idx(refs, 0);
	assert_str_at(r, "apiVersion", "postgresql.cnpg.io/v1");
	assert_str_at(r, "kind", "Cluster");
	assert_str_at(r, "uid", "u-123");
	assert_true(json_object_get_boolean(op_json_at(r, "controller")));
	assert_true(json_object_get_boolean(op_json_at(r, "blockOwnerDeletion")));
	assert_string_equal(label(o, RC_LABEL_CLUSTER), "cluster-example");
}

static void test_services(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	static const struct {
		enum api_service svc;
		const char *name, *key, *value;
	} rows[] = {
		{ API_SVC_RW, "cluster-example-rw", RC_LABEL_INSTANCE_ROLE, "primary" },
		{ API_SVC_RO, "cluster-example-ro", RC_LABEL_INSTANCE_ROLE, "replica" },
		{ API_SVC_R, "cluster-example-r", RC_LABEL_POD_ROLE, "instance" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_object *s = rc_build_service(c, rows[i].svc);
		assert_str_at(s, "kind", "Service");
		assert_str_at(s, "metadata.name", rows[i].name);
		assert_str_at(s, "metadata.namespace", "db");
		assert_owned(s);
		json_object *sel = op_json_at(s, "spec.selector");
		assert_int_equal(json_object_object_length(sel), 2);
		json_object *v = NULL;
		assert_true(json_object_object_get_ex(sel, RC_LABEL_CLUSTER, &v));
		assert_string_equal(json_object_get_string(v), "cluster-example");
		assert_true(json_object_object_get_ex(sel, rows[i].key, &v));
		assert_string_equal(json_object_get_string(v), rows[i].value);
		json_object *port = json_object_array_get_idx(op_json_at(s, "spec.ports"), 0);
		assert_int_equal(json_object_get_int(op_json_at(port, "port")), 5432);
		assert_str_at(port, "targetPort", "postgresql");
		json_object_put(s);
	}
	api_cluster_free(c);
}

static void test_pvcs(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *p = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_pvc(c, 2, false, &p, &err), 0);
	assert_str_at(p, "metadata.name", "cluster-example-2");
	assert_owned(p);
	assert_string_equal(label(p, RC_LABEL_PVC_ROLE), "PG_DATA");
	assert_string_equal(label(p, RC_LABEL_INSTANCE_NAME), "cluster-example-2");
	assert_str_at(p, "spec.resources.requests.storage", "1Gi");
	assert_str_at(p, "spec.storageClassName", "fast");
	json_object *ann = op_json_at(p, "metadata.annotations");
	json_object *v = NULL;
	assert_true(json_object_object_get_ex(ann, RC_ANN_NODE_SERIAL, &v));
	assert_string_equal(json_object_get_string(v), "2");
	json_object_put(p);
	assert_int_equal(rc_build_pvc(c, 2, true, &p, &err), 0);
	assert_str_at(p, "metadata.name", "cluster-example-2-wal");
	assert_string_equal(label(p, RC_LABEL_PVC_ROLE), "PG_WAL");
	assert_str_at(p, "spec.resources.requests.storage", "512Mi");
	json_object_put(p);
	api_cluster_free(c);

	c = decode(minimal_json);
	p = NULL;
	assert_int_equal(rc_build_pvc(c, 1, true, &p, &err), -EINVAL); /* no walStorage */
	assert_null(p);
	api_cluster_free(c);
	c = decode("{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"},\"spec\":{\"storage\":"
		   "{\"size\":\"lots\"}}}");
	err = OP_ERR_INIT;
	assert_int_equal(rc_build_pvc(c, 1, false, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "spec.storage.size"));
	api_cluster_free(c);
}

static json_object *find_named(json_object *arr, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		if (strcmp(op_json_str_at(e, "name"), name) == 0)
			return e;
	}
	return NULL;
}

/* spec.tablespaces: a PVC per instance and tablespace in CloudNativePG's
 * names, its volume and mount in the Pod, the names annotation the rollout
 * compares. */
static void test_tablespaces(void **state)
{
	struct api_cluster *c = decode(
		"{\"metadata\":{\"name\":\"pg\",\"namespace\":\"n\"},\"spec\":{\"instances\":2,"
		"\"storage\":{\"size\":\"1Gi\"},\"tablespaces\":[{\"name\":\"tbs1\",\"storage\":{"
		"\"size\":\"2Gi\",\"storageClass\":\"slow\"},\"owner\":{\"name\":\"app\"}},"
		"{\"name\":\"_Tmp$x\",\"storage\":{\"size\":\"1Gi\"},\"temporary\":true}]}}");
	assert_int_equal(c->spec.n_tablespaces, 2);
	assert_string_equal(c->spec.tablespaces[0].owner, "app");
	assert_true(c->spec.tablespaces[1].temporary);
	json_object *p = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_tablespace_pvc(c, 2, 0, &p, &err), 0);
	assert_str_at(p, "metadata.name", "pg-2-tbs-tbs1");
	assert_string_equal(label(p, RC_LABEL_PVC_ROLE), "PG_TABLESPACE");
	assert_string_equal(label(p, RC_LABEL_TABLESPACE), "tbs1");
	assert_string_equal(label(p, RC_LABEL_INSTANCE_NAME), "pg-2");
	assert_str_at(p, "spec.resources.requests.storage", "2Gi");
	assert_str_at(p, "spec.storageClassName", "slow");
	json_object_put(p);
	assert_int_equal(rc_build_tablespace_pvc(c, 2, 1, &p, &err), 0);
	assert_str_at(p, "metadata.name", "pg-2-tbs-1tmp-x"); /* CloudNativePG's conversion */
	json_object_put(p);
	p = NULL;
	assert_int_equal(rc_build_tablespace_pvc(c, 2, 2, &p, &err), -EINVAL);
	assert_null(p);
	_cleanup_free_ char *names = rc_tablespace_names(c);
	assert_string_equal(names, "tbs1,_Tmp$x");
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	json_object *vol = find_named(op_json_at(p, "spec.volumes"), "tbs-tbs1");
	assert_non_null(vol);
	assert_str_at(vol, "persistentVolumeClaim.claimName", "pg-1-tbs-tbs1");
	json_object *ctr = json_object_array_get_idx(op_json_at(p, "spec.containers"), 0);
	json_object *m = find_named(op_json_at(ctr, "volumeMounts"), "tbs-1tmp-x");
	assert_non_null(m);
	assert_str_at(m, "mountPath", "/var/lib/postgresql/tablespaces/_Tmp$x");
	assert_string_equal(op_json_key_str(op_json_at(p, "metadata.annotations"),
					    RC_ANN_TABLESPACES), "tbs1,_Tmp$x");
	json_object_put(p);
	api_cluster_free(c);
	/* none: no annotation */
	c = decode(cluster_json);
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	assert_null(op_json_key_str(op_json_at(p, "metadata.annotations"), RC_ANN_TABLESPACES));
	json_object_put(p);
	api_cluster_free(c);
}

static bool has_arg_pair(json_object *cmd, const char *flag, const char *value)
{
	size_t n = json_object_array_length(cmd);
	for (size_t i = 0; i + 1 < n; i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(cmd, i)), flag) == 0 &&
		    strcmp(json_object_get_string(json_object_array_get_idx(cmd, i + 1)), value) == 0)
			return true;
	return false;
}

static void test_pod(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *p = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	assert_str_at(p, "metadata.name", "cluster-example-1");
	assert_owned(p);
	assert_string_equal(label(p, RC_LABEL_INSTANCE_NAME), "cluster-example-1");
	assert_string_equal(label(p, RC_LABEL_POD_ROLE), "instance");
	assert_string_equal(label(p, RC_LABEL_INSTANCE_ROLE), "primary");
	assert_string_equal(label(p, RC_LABEL_ROLE), "primary");
	json_object *spec = op_json_at(p, "spec");
	assert_str_at(spec, "serviceAccountName", "cluster-example");
	assert_int_equal(json_object_get_int(op_json_at(spec, "securityContext.runAsUser")), 26);
	json_object *init = json_object_array_get_idx(op_json_at(spec, "initContainers"), 0);
	assert_str_at(init, "name", "bootstrap-controller");
	assert_str_at(init, "image", "pgop:test");
	json_object *pg = json_object_array_get_idx(op_json_at(spec, "containers"), 0);
	assert_str_at(pg, "name", "postgres");
	assert_str_at(pg, "image", "ghcr.io/cloudnative-pg/postgresql:15");
	json_object *cmd = op_json_at(pg, "command");
	assert_int_equal(json_object_array_length(cmd), 11);
	assert_true(has_arg_pair(cmd, "--pg-major", "15")); /* from the image tag */
	assert_true(has_arg_pair(cmd, "--pod-name", "cluster-example-1"));
	assert_true(has_arg_pair(cmd, "--namespace", "db"));
	assert_true(has_arg_pair(cmd, "--cluster-name", "cluster-example"));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 0)),
			    "/controller/pgop");
	assert_str_at(pg, "readinessProbe.httpGet.path", "/readyz");
	assert_str_at(pg, "readinessProbe.httpGet.scheme", "HTTPS");
	assert_str_at(pg, "startupProbe.httpGet.path", "/startupz");
	assert_str_at(pg, "livenessProbe.httpGet.path", "/healthz");
	assert_str_at(pg, "resources.requests.memory", "512Mi");
	json_object *env = op_json_at(pg, "env");
	assert_str_at(find_named(env, "CLUSTER_NAME"), "value", "cluster-example");
	assert_str_at(find_named(env, "PGDATA"), "value", "/var/lib/postgresql/data/pgdata");
	assert_str_at(find_named(env, "POD_NAME"), "valueFrom.fieldRef.fieldPath", "metadata.name");
	assert_str_at(find_named(env, "POD_IP"), "valueFrom.fieldRef.fieldPath", "status.podIP");
	json_object *vols = op_json_at(spec, "volumes");
	assert_str_at(find_named(vols, "pgdata"), "persistentVolumeClaim.claimName",
		      "cluster-example-1");
	assert_str_at(find_named(vols, "pg-wal"), "persistentVolumeClaim.claimName",
		      "cluster-example-1-wal");
	assert_str_at(find_named(vols, "server-tls"), "secret.secretName", "cluster-example-server");
	assert_str_at(find_named(vols, "replication-tls"), "secret.secretName",
		      "cluster-example-replication");
	/* enableSuperuserAccess false (default): the superuser password is not mounted */
	assert_null(find_named(vols, "superuser"));
	assert_str_at(find_named(vols, "app"), "secret.secretName", "cluster-example-app");
	json_object *ca = find_named(vols, "ca");
	assert_str_at(ca, "secret.secretName", "cluster-example-ca-cert"); /* not -ca (ca.key) */
	json_object *items = op_json_at(ca, "secret.items");
	assert_int_equal(json_object_array_length(items), 1); /* never ca.key */
	assert_str_at(json_object_array_get_idx(items, 0), "key", "ca.crt");
	assert_non_null(find_named(vols, "controller"));
	json_object *mounts = op_json_at(pg, "volumeMounts");
	assert_str_at(find_named(mounts, "pgdata"), "mountPath", "/var/lib/postgresql/data");
	assert_str_at(find_named(mounts, "pg-wal"), "mountPath", "/var/lib/postgresql/wal");
	assert_str_at(find_named(mounts, "server-tls"), "mountPath", "/run/pgop/certs/server");
	assert_str_at(find_named(mounts, "controller"), "mountPath", "/controller");
	assert_null(find_named(mounts, "superuser"));
	json_object_put(p);
	c->spec.enable_superuser_access = true;
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	spec = op_json_at(p, "spec");
	assert_str_at(find_named(op_json_at(spec, "volumes"), "superuser"), "secret.secretName",
		      "cluster-example-superuser");
	pg = json_object_array_get_idx(op_json_at(spec, "containers"), 0);
	assert_str_at(find_named(op_json_at(pg, "volumeMounts"), "superuser"), "mountPath",
		      "/run/pgop/secrets/superuser");
	json_object_put(p);
	/* the Secrets the spec names are the ones mounted (spec.superuserSecret, the
	 * bootstrap method's secret for the application owner) */
	c->spec.superuser_secret.name = op_strdup("my-superuser");
	c->spec.bootstrap.initdb.present = true;
	c->spec.bootstrap.initdb.secret.name = op_strdup("my-app");
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	spec = op_json_at(p, "spec");
	assert_str_at(find_named(op_json_at(spec, "volumes"), "superuser"), "secret.secretName",
		      "my-superuser");
	assert_str_at(find_named(op_json_at(spec, "volumes"), "app"), "secret.secretName", "my-app");
	json_object_put(p);
	assert_false(rc_user_secret_generated(c, API_SECRET_SUPERUSER));
	assert_false(rc_user_secret_generated(c, API_SECRET_APP));
	assert_int_equal(rc_build_pod(c, &settings, 0, NULL, &p, &err), -EINVAL);
	api_cluster_free(c);
	/* the rolling restart's marker: the Pod carries the Cluster's restartedAt, or none */
	c = decode("{\"metadata\":{\"name\":\"m\",\"namespace\":\"default\",\"uid\":\"u-1\","
		   "\"annotations\":{\"kubectl.kubernetes.io/restartedAt\":\"2026-12-03T07:00:00Z\"}},"
		   "\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}}}");
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	json_object *ann = op_json_at(p, "metadata.annotations"), *v = NULL;
	assert_true(json_object_object_get_ex(ann, RC_ANN_RESTARTED_AT, &v));
	assert_string_equal(json_object_get_string(v), "2026-12-03T07:00:00Z");
	json_object_put(p);
	api_cluster_free(c);
	c = decode(minimal_json);
	assert_int_equal(rc_build_pod(c, &settings, 1, RC_ROLE_PRIMARY, &p, &err), 0);
	assert_false(json_object_object_get_ex(op_json_at(p, "metadata.annotations"),
					       RC_ANN_RESTARTED_AT, &v));
	json_object_put(p);
	api_cluster_free(c);
}

/* Bootstrap Pods (no Jobs): owned by the Cluster, retried in place. */
static void test_bootstrap_pods(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *j = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_bootstrap_pod(c, &settings, 1, RC_JOB_INITDB, &j, &err), 0);
	assert_str_at(j, "apiVersion", "v1");
	assert_str_at(j, "kind", "Pod");
	assert_str_at(j, "metadata.name", "cluster-example-1-initdb");
	assert_owned(j);
	assert_string_equal(label(j, RC_LABEL_JOB_ROLE), "initdb");
	assert_string_equal(label(j, RC_LABEL_INSTANCE_NAME), "cluster-example-1");
	assert_string_equal(label(j, RC_LABEL_CLUSTER), "cluster-example");
	/* not an instance: no Service selects it, the inventory does not count it */
	assert_null(label(j, RC_LABEL_POD_ROLE));
	json_object *ps = op_json_at(j, "spec");
	assert_str_at(ps, "restartPolicy", "OnFailure");
	json_object *pg = json_object_array_get_idx(op_json_at(ps, "containers"), 0);
	assert_null(op_json_at(pg, "readinessProbe"));
	json_object *cmd = op_json_at(pg, "command");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 2)), "init");
	assert_true(has_arg_pair(cmd, "--app-db-name", "shop"));
	assert_true(has_arg_pair(cmd, "--app-user", "alice"));
	/* one initdb argument per element, never joined */
	assert_true(has_arg_pair(cmd, "--initdb-flag", "-k"));
	assert_true(has_arg_pair(cmd, "--initdb-flag", "--encoding=UTF8"));
	assert_true(has_arg_pair(cmd, "--pg-major", "15"));
	assert_true(has_arg_pair(cmd, "--post-init-sql", "select 1"));
	assert_true(has_arg_pair(cmd, "--pg-wal", "/var/lib/postgresql/wal/pg_wal"));
	assert_str_at(find_named(op_json_at(ps, "volumes"), "pgdata"),
		      "persistentVolumeClaim.claimName", "cluster-example-1");
	json_object_put(j);
	assert_int_equal(rc_build_bootstrap_pod(c, &settings, 4, RC_JOB_JOIN, &j, &err), 0);
	assert_str_at(j, "metadata.name", "cluster-example-4-join");
	assert_string_equal(label(j, RC_LABEL_JOB_ROLE), "join");
	cmd = op_json_at(json_object_array_get_idx(op_json_at(j, "spec.containers"), 0),
			 "command");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 2)), "join");
	assert_true(has_arg_pair(cmd, "--primary-host", "cluster-example-rw"));
	assert_true(has_arg_pair(cmd, "--pod-name", "cluster-example-4"));
	json_object_put(j);
	api_cluster_free(c);

	c = decode(minimal_json); /* defaults: app/app, no initdb flags */
	assert_int_equal(rc_build_bootstrap_pod(c, NULL, 1, RC_JOB_INITDB, &j, &err), 0);
	cmd = op_json_at(json_object_array_get_idx(op_json_at(j, "spec.containers"), 0),
			 "command");
	assert_true(has_arg_pair(cmd, "--app-db-name", "app"));
	assert_true(has_arg_pair(cmd, "--app-user", "app"));
	for (size_t i = 0; i < json_object_array_length(cmd); i++)
		assert_string_not_equal(json_object_get_string(json_object_array_get_idx(cmd, i)),
					"--initdb-flag");
	/* the default image (settings NULL) is PostgreSQL 15 */
	assert_true(has_arg_pair(cmd, "--pg-major", "15"));
	json_object_put(j);
	api_cluster_free(c);
}

/* Issue 10 §8: a value with blanks stays one initdb argument (it was joined
 * with spaces and re-split, so "C --pgdata=/tmp/x" became a second flag), and
 * options that are not initdb options or are operator-managed are refused. */
static void test_job_initdb_argv(void **state)
{
	struct api_cluster *c = decode(
		"{\"metadata\":{\"name\":\"m\",\"namespace\":\"d\",\"uid\":\"u\"},"
		"\"spec\":{\"instances\":1,\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:17.2\","
		"\"storage\":{\"size\":\"1Gi\"},"
		"\"bootstrap\":{\"initdb\":{\"locale\":\"C --pgdata=/tmp/x\"}}}}");
	json_object *j = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_bootstrap_pod(c, &settings, 1, RC_JOB_INITDB, &j, &err), 0);
	json_object *cmd = op_json_at(
		json_object_array_get_idx(op_json_at(j, "spec.containers"), 0),
		"command");
	assert_true(has_arg_pair(cmd, "--initdb-flag", "--locale=C --pgdata=/tmp/x"));
	assert_true(has_arg_pair(cmd, "--pg-major", "17"));
	for (size_t i = 0; i < json_object_array_length(cmd); i++)
		assert_null(strstr(json_object_get_string(json_object_array_get_idx(cmd, i)),
				   "--initdb-flags"));
	json_object_put(j);
	api_cluster_free(c);

	static const struct {
		const char *options, *field;
	} bad[] = {
		{ "[\"-k\",\"--pgdata=/tmp/x\"]", "spec.bootstrap.initdb.options[1]" },
		{ "[\"--locale\",\"C\"]", "spec.bootstrap.initdb.options[1]" },
		{ "[\"-U\"]", "spec.bootstrap.initdb.options[0]" },
		{ "[\"-kD/tmp/x\"]", "spec.bootstrap.initdb.options[0]" },
		{ "[\"--\",\"-x\"]", "spec.bootstrap.initdb.options[0]" },
		{ "[\"--locale=C\\n-D\"]", "spec.bootstrap.initdb.options[0]" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		char *js = op_asprintf(
			"{\"metadata\":{\"name\":\"m\",\"namespace\":\"d\",\"uid\":\"u\"},"
			"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"},"
			"\"bootstrap\":{\"initdb\":{\"options\":%s}}}}",
			bad[i].options);
		c = decode(js);
		err = (struct op_err)OP_ERR_INIT;
		j = NULL;
		if (rc_build_bootstrap_pod(c, &settings, 1, RC_JOB_INITDB, &j, &err) != -EINVAL)
			fail_msg("%s: accepted", bad[i].options);
		assert_null(j);
		if (!strstr(err.msg, bad[i].field))
			fail_msg("%s: error \"%s\" does not name %s", bad[i].options, err.msg,
				 bad[i].field);
		api_cluster_free(c);
		free(js);
	}
	/* accepted options go through unchanged, one element each */
	c = decode("{\"metadata\":{\"name\":\"m\",\"namespace\":\"d\",\"uid\":\"u\"},"
		   "\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"},"
		   "\"bootstrap\":{\"initdb\":{\"options\":[\"-k\",\"--locale=en US\",\"-EUTF8\"]}}}}");
	assert_int_equal(rc_build_bootstrap_pod(c, &settings, 1, RC_JOB_INITDB, &j, &err), 0);
	cmd = op_json_at(json_object_array_get_idx(op_json_at(j, "spec.containers"), 0),
			 "command");
	assert_true(has_arg_pair(cmd, "--initdb-flag", "-k"));
	assert_true(has_arg_pair(cmd, "--initdb-flag", "--locale=en US"));
	assert_true(has_arg_pair(cmd, "--initdb-flag", "-EUTF8"));
	json_object_put(j);
	api_cluster_free(c);
}

static char *secret_value(json_object *s, const char *key)
{
	json_object *d = op_json_at(s, "data");
	json_object *v = NULL;
	if (!json_object_object_get_ex(d, key, &v))
		fail_msg("data.%s absent", key);
	char *out = NULL;
	struct op_err err = OP_ERR_INIT;
	const char *b64 = json_object_get_string(v);
	assert_int_equal(op_base64_decode_str(b64, strlen(b64), 0, &out, NULL, &err), 0);
	return out;
}

static void assert_secret_value(json_object *s, const char *key, const char *want)
{
	char *v = secret_value(s, key);
	assert_string_equal(v, want);
	free(v);
}

static void test_basic_auth_secrets(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *s = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_build_basic_auth_secret(c, NULL, API_SECRET_APP, "pw1", &s, &err), 0);
	assert_str_at(s, "metadata.name", "cluster-example-app");
	assert_str_at(s, "type", "kubernetes.io/basic-auth");
	assert_owned(s);
	assert_secret_value(s, "username", "alice");
	assert_secret_value(s, "user", "alice");
	assert_secret_value(s, "password", "pw1");
	assert_secret_value(s, "dbname", "shop");
	assert_secret_value(s, "host", "cluster-example-rw");
	assert_secret_value(s, "port", "5432");
	assert_secret_value(s, "pgpass", "cluster-example-rw:5432:shop:alice:pw1\n");
	assert_secret_value(s, "uri", "postgresql://alice:pw1@cluster-example-rw.db:5432/shop");
	assert_secret_value(s, "jdbc-uri",
			    "jdbc:postgresql://cluster-example-rw.db:5432/shop?password=pw1&user=alice");
	assert_secret_value(s, "fqdn-uri",
			    "postgresql://alice:pw1@cluster-example-rw.db.svc.cluster.local:5432/shop");
	assert_secret_value(s, "fqdn-jdbc-uri",
			    "jdbc:postgresql://cluster-example-rw.db.svc.cluster.local:5432/shop"
			    "?password=pw1&user=alice");
	assert_int_equal(json_object_object_length(op_json_at(s, "data")), 11);
	json_object_put(s);
	assert_int_equal(rc_build_basic_auth_secret(c, NULL, API_SECRET_SUPERUSER, "x", &s, &err), 0);
	assert_str_at(s, "metadata.name", "cluster-example-superuser");
	assert_secret_value(s, "username", "postgres");
	assert_string_equal(label(s, RC_LABEL_USER_TYPE), "superuser");
	json_object_put(s);
	assert_int_equal(rc_build_basic_auth_secret(c, NULL, API_SECRET_CA, "x", &s, &err), -EINVAL);
	api_cluster_free(c);
}

static void test_random_password(void **state)
{
	char *a = NULL, *b = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_random_password(64, &a, &err), 0);
	assert_int_equal(rc_random_password(64, &b, &err), 0);
	assert_int_equal(strlen(a), 64);
	assert_string_not_equal(a, b);
	for (const char *p = a; *p; p++)
		assert_true((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9'));
	free(a);
	free(b);
	assert_int_equal(rc_random_password(0, &a, &err), -EINVAL);
}

static void test_rbac(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *sa = rc_build_service_account(c);
	assert_str_at(sa, "kind", "ServiceAccount");
	assert_str_at(sa, "metadata.name", "cluster-example");
	assert_owned(sa);
	json_object *role = rc_build_role(c);
	assert_str_at(role, "kind", "Role");
	json_object *rules = op_json_at(role, "rules");
	/* exactly what the instance manager calls; no Secrets (ca.key), no Events */
	assert_int_equal(json_object_array_length(rules), 2);
	json_object *r0 = json_object_array_get_idx(rules, 0);
	assert_string_equal(json_object_to_json_string_ext(op_json_at(r0, "verbs"),
							   JSON_C_TO_STRING_PLAIN),
			    "[\"get\",\"watch\"]");
	/* the status rule names only this cluster */
	json_object *r1 = json_object_array_get_idx(rules, 1);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(
				    op_json_at(r1, "resources"), 0)),
			    "clusters/status");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(
				    op_json_at(r1, "resourceNames"), 0)),
			    "cluster-example");
	assert_string_equal(json_object_to_json_string_ext(op_json_at(r1, "verbs"),
							   JSON_C_TO_STRING_PLAIN),
			    "[\"get\",\"patch\"]");
	json_object *rb = rc_build_role_binding(c);
	assert_str_at(rb, "roleRef.name", "cluster-example");
	assert_str_at(json_object_array_get_idx(op_json_at(rb, "subjects"), 0), "namespace", "db");
	json_object_put(sa);
	json_object_put(role);
	json_object_put(rb);
	api_cluster_free(c);
}

static bool str_in(json_object *arr, const char *s)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s) == 0)
			return true;
	return false;
}

/* The chart's reconciler rules (the "pgop.reconcilerRules" block of
 * charts/pgop/templates/rbac.yaml, plain YAML) as a JSON array. */
static json_object *chart_reconciler_rules(void)
{
	FILE *f = fopen(PGOP_SOURCE_DIR "/charts/pgop/templates/rbac.yaml", "r");
	assert_non_null(f);
	char line[512];
	struct op_buf b = OP_BUF_INIT(1u << 20);
	bool in = false;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "define \"pgop.reconcilerRules\"")) {
			in = true;
			continue;
		}
		if (in && strstr(line, "{{- end }}"))
			break;
		if (in)
			assert_int_equal(op_buf_adds(&b, line), 0);
	}
	fclose(f);
	assert_true(b.len > 0);
	const struct op_yaml_limits lim = { .max_bytes = 1u << 20, .max_depth = 16,
					    .max_nodes = 100000 };
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_parse_docs(op_buf_str(&b), b.len, &lim, &docs, &err), 1);
	op_buf_done(&b);
	json_object *rules = json_object_get(json_object_array_get_idx(docs, 0));
	json_object_put(docs);
	assert_true(json_object_is_type(rules, json_type_array));
	return rules;
}

/* RBAC escalation check, offline: the API server lets the operator create the
 * instance Role only if the operator holds every permission in it, so each
 * (group, resource, verb) of rc_build_role must be granted by a chart rule
 * without resourceNames. */
static void test_instance_role_grantable(void **state)
{
	struct api_cluster *c = decode(cluster_json);
	json_object *role = rc_build_role(c);
	json_object *chart = chart_reconciler_rules();
	json_object *rules = op_json_at(role, "rules");
	size_t checked = 0;
	for (size_t i = 0; i < json_object_array_length(rules); i++) {
		json_object *r = json_object_array_get_idx(rules, i);
		json_object *groups = op_json_at(r, "apiGroups"), *res = op_json_at(r, "resources"),
			    *verbs = op_json_at(r, "verbs");
		for (size_t g = 0; g < json_object_array_length(groups); g++)
			for (size_t k = 0; k < json_object_array_length(res); k++)
				for (size_t v = 0; v < json_object_array_length(verbs); v++) {
					const char *gs = json_object_get_string(
						json_object_array_get_idx(groups, g));
					const char *rs = json_object_get_string(
						json_object_array_get_idx(res, k));
					const char *vs = json_object_get_string(
						json_object_array_get_idx(verbs, v));
					bool held = false;
					for (size_t j = 0; j < json_object_array_length(chart); j++) {
						json_object *cr = json_object_array_get_idx(chart, j);
						if (!op_json_at(cr, "resourceNames") &&
						    str_in(op_json_at(cr, "apiGroups"), gs) &&
						    str_in(op_json_at(cr, "resources"), rs) &&
						    str_in(op_json_at(cr, "verbs"), vs))
							held = true;
					}
					if (!held)
						fail_msg("instance Role grants %s %s/%s, which the "
							 "chart does not give the operator",
							 vs, gs, rs);
					checked++;
				}
	}
	assert_true(checked >= 4);
	json_object_put(chart);
	json_object_put(role);
	api_cluster_free(c);
}

static void test_names(void **state)
{
	char *n = rc_job_name("c", 3, RC_JOB_JOIN);
	assert_string_equal(n, "c-3-join");
	free(n);
	assert_string_equal(rc_job_role_name(RC_JOB_INITDB), "initdb");
	assert_string_equal(rc_job_role_name((enum rc_job_role)9), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_services),  cmocka_unit_test(test_pvcs),
		cmocka_unit_test(test_tablespaces),
		cmocka_unit_test(test_pod),	  cmocka_unit_test(test_bootstrap_pods),
		cmocka_unit_test(test_job_initdb_argv),
		cmocka_unit_test(test_basic_auth_secrets), cmocka_unit_test(test_random_password),
		cmocka_unit_test(test_rbac),	  cmocka_unit_test(test_names),
		cmocka_unit_test(test_instance_role_grantable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
