/* Unit tests: one rc_reconcile() against a scripted API server
 * (tests/unit/test_kube_server.h): what a fresh Cluster creates and in which
 * order, the admission guard, type errors, a completed bootstrap Pod, scale
 * down, and the resourceVersion precondition on every status patch. Workers
 * are kept idle (leader gate false): the test drives rc_reconcile itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "reconciler/ctl.h"
#include "reconciler/objects.h"
#include "reconciler/reconciler.h"
#include "reconciler/status.h"
#include "support/json.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/metrics.h"
#include "test_kube_server.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

/* Fixture objects served by LIST, per collection path suffix. */
struct fake {
	const char *clusters, *pods, *pvcs, *secrets, *services; /* JSON arrays */
	const char *backups, *scheduled, *object_stores;         /* JSON arrays */
	const char *pdbs, *nodes;                                /* JSON arrays */
	const char *secrets_listed; /* the Cluster's Secrets by label, when not `secrets` */
};

static const char cluster_ok[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":"
	"\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"41\"},\"spec\":{"
	"\"instances\":3,\"storage\":{\"size\":\"1Gi\"}}}";

static bool is_watch(const struct ts_req *req)
{
	return strstr(req->query, "watch=1") != NULL;
}

static char *list_of(const char *kind, const char *items)
{
	return op_asprintf("{\"kind\":\"%sList\",\"metadata\":{\"resourceVersion\":\"5\"},"
			   "\"items\":%s}",
			   kind, items ? items : "[]");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void h_api(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	struct fake *f = s->ud;
	if (strcmp(req->method, "GET") == 0) {
		if (is_watch(req)) {
			r->hold_ms = 20000;
			return;
		}
		static const struct {
			const char *suffix, *kind;
			size_t off;
		} lists[] = {
			{ "/clusters", "Cluster", offsetof(struct fake, clusters) },
			{ "/pods", "Pod", offsetof(struct fake, pods) },
			{ "/persistentvolumeclaims", "PersistentVolumeClaim",
			  offsetof(struct fake, pvcs) },
			{ "/secrets", "Secret", offsetof(struct fake, secrets) },
			{ "/services", "Service", offsetof(struct fake, services) },
			{ "/backups", "Backup", offsetof(struct fake, backups) },
			{ "/scheduledbackups", "ScheduledBackup",
			  offsetof(struct fake, scheduled) },
			{ "/objectstores", "ObjectStore", offsetof(struct fake, object_stores) },
			{ "/poddisruptionbudgets", "PodDisruptionBudget",
			  offsetof(struct fake, pdbs) },
			{ "/nodes", "Node", offsetof(struct fake, nodes) },
		};
		if (f->secrets_listed && ends_with(req->path, "/secrets") &&
		    strstr(req->query, "labelSelector=cnpg.io/cluster=c")) {
			r->body = list_of("Secret", f->secrets_listed);
			return;
		}
		for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
			if (ends_with(req->path, lists[i].suffix)) {
				const char *items = *(const char *const *)((const char *)f +
									   lists[i].off);
				r->body = list_of(lists[i].kind, items);
				return;
			}
		r->status = 404;
		r->body = ts_status(404, "NotFound", "no such thing");
		return;
	}
	if (strcmp(req->method, "POST") == 0) { /* the object, with a resourceVersion */
		r->status = 201;
		json_object *o = NULL;
		struct op_err e = OP_ERR_INIT;
		if (op_json_parse(req->body, strlen(req->body), 64, &o, &e) == 0 &&
		    json_object_is_type(json_object_object_get(o, "metadata"), json_type_object)) {
			json_object_object_add(json_object_object_get(o, "metadata"),
					       "resourceVersion", json_object_new_string("100"));
			r->body = op_strdup(json_object_to_json_string(o));
		} else {
			r->body = op_strdup(req->body);
		}
		if (o)
			json_object_put(o);
		return;
	}
	if (strcmp(req->method, "PATCH") == 0 && ends_with(req->path, "/status")) {
		r->body = op_strdup("{\"metadata\":{\"name\":\"c\",\"namespace\":\"db\","
				    "\"resourceVersion\":\"42\"},\"status\":{}}");
		return;
	}
	r->body = op_strdup("{}");
}

static bool never_leader(void *ud)
{
	return false;
}

static int guard_calls;
static int guard(void *ud, json_object *cluster, char **ret_reason)
{
	guard_calls++;
	const char *mode = ud;
	if (mode && strcmp(mode, "deny") == 0) {
		*ret_reason = op_strdup("spec.instances: must be odd");
		return 1;
	}
	return 0;
}

struct env {
	struct ts *s;
	struct kube_client *kc;
	struct rc_controller *rc;
};

static void env_start(struct env *e, struct fake *f, const char *guard_mode)
{
	e->s = ts_start(h_api, f);
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(e->s, "t"), NULL, &cfg, &err), 0);
	assert_int_equal(kube_client_new(cfg, NULL, &e->kc, &err), 0);
	static const char *const nss[] = { "db" };
	struct rc_controller_opts o = {
		.client = e->kc, .namespaces = nss, .n_namespaces = 1, .workers = 1,
		.settings = { .operator_image = "pgop:test" },
		.validate = guard, .validate_userdata = (void *)guard_mode,
		.status_timeout_ms = 300, .is_leader = never_leader,
	};
	assert_int_equal(rc_controller_start(&o, &e->rc, &err), 0);
	for (int i = 0; i < 200 && !rc_controller_synced(e->rc); i++)
		ts_sleep_ms(25);
	assert_true(rc_controller_synced(e->rc));
}

static void env_stop(struct env *e)
{
	rc_controller_free(e->rc);
	kube_client_free(e->kc);
	ts_stop(e->s);
}

/* Index of the first logged request with method and a path ending in suffix
 * at or after `from`; -1 when none. */
static int find_req(struct ts *s, int from, const char *method, const char *suffix)
{
	for (int i = from; i < ts_count(s); i++) {
		const struct ts_req *q = ts_at(s, i);
		if (strcmp(q->method, method) == 0 && ends_with(q->path, suffix))
			return i;
	}
	return -1;
}

static int count_req(struct ts *s, const char *method, const char *suffix)
{
	int n = 0;
	for (int i = 0; (i = find_req(s, i, method, suffix)) >= 0; i++)
		n++;
	return n;
}

/* The name of the object POSTed by request i. */
static const char *posted_name(struct ts *s, int i, json_object **keep)
{
	struct op_err err = OP_ERR_INIT;
	const struct ts_req *q = ts_at(s, i);
	assert_int_equal(op_json_parse(q->body, strlen(q->body), 64, keep, &err), 0);
	return op_json_str_at(*keep, "metadata.name");
}

static void test_fresh_cluster(void **state)
{
	struct fake f = { .clusters = "[" /* one Cluster */ };
	_cleanup_free_ char *arr = op_asprintf("[%s]", cluster_ok);
	f.clusters = arr;
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	guard_calls = 0;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(guard_calls, 1);
	assert_true(requeue > 0 && requeue <= 10000);
	/* Secrets: CA first, its certificate alone for the instances (issue 10 §3),
	 * then server, replication, app; no superuser (enableSuperuserAccess is
	 * false by default, and CloudNativePG makes none then) */
	static const char *const secrets[] = { "c-ca", "c-ca-cert", "c-server", "c-replication",
					       "c-app" };
	int at = before;
	for (size_t i = 0; i < OP_ARRAY_SIZE(secrets); i++) {
		at = find_req(e.s, at, "POST", "/namespaces/db/secrets");
		assert_true(at >= 0);
		json_object *o = NULL;
		assert_string_equal(posted_name(e.s, at, &o), secrets[i]);
		if (strcmp(secrets[i], "c-ca-cert") == 0) {
			json_object *data = op_json_at(o, "data");
			assert_int_equal(json_object_object_length(data), 1);
			assert_non_null(json_object_object_get(data, "ca.crt"));
			assert_null(json_object_object_get(data, "ca.key"));
		}
		json_object_put(o);
		at++;
	}
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/serviceaccounts"), 1);
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/roles"), 1);
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/rolebindings"), 1);
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/services"), 3);
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/persistentvolumeclaims"), 1);
	/* the bootstrap Pod, no Job (kube-controller-manager is not involved) */
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/pods"), 1);
	assert_int_equal(count_req(e.s, "POST", "/jobs"), 0);
	int job = find_req(e.s, before, "POST", "/namespaces/db/pods");
	assert_true(job >= 0);
	json_object *o = NULL;
	assert_string_equal(posted_name(e.s, job, &o), "c-1-initdb");
	assert_string_equal(op_json_str_at(o, "spec.restartPolicy"), "OnFailure");
	json_object_put(o);
	/* the serial is reserved in status before the bootstrap Pod exists */
	int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
	assert_true(st >= 0 && st < job);
	json_object *p = NULL;
	const struct ts_req *q = ts_at(e.s, st);
	assert_int_equal(op_json_parse(q->body, strlen(q->body), 64, &p, &err), 0);
	assert_string_equal(op_json_str_at(p, "metadata.resourceVersion"), "41");
	assert_string_equal(op_json_str_at(p, "status.phase"), "Setting up primary");
	assert_string_equal(op_json_str_at(p, "status.targetPrimary"), "c-1");
	assert_string_equal(op_json_str_at(p, "status.currentPrimary"), "c-1");
	assert_int_equal(json_object_get_int(op_json_at(p, "status.latestGeneratedNode")), 1);
	json_object *ex = op_json_at(p, "status.certificates.expirations");
	assert_int_equal(json_object_object_length(ex), 3);
	json_object_put(p);
	/* a later patch in the same reconcile uses the new resourceVersion */
	int st2 = find_req(e.s, st + 1, "PATCH", "/clusters/c/status");
	if (st2 >= 0) {
		q = ts_at(e.s, st2);
		assert_int_equal(op_json_parse(q->body, strlen(q->body), 64, &p, &err), 0);
		assert_string_equal(op_json_str_at(p, "metadata.resourceVersion"), "42");
		json_object_put(p);
	}
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0); /* posted in the background */
	assert_true(count_req(e.s, "POST", "/namespaces/db/events") >= 2);
	struct rc_controller_stats stats;
	rc_controller_stats(e.rc, &stats);
	/* 5 secrets, SA/Role/RB, 3 services, 2 PodDisruptionBudgets, PVC, bootstrap Pod */
	assert_int_equal(stats.objects_created, 15);
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/secrets"), 5);
	/* both PDBs, as CloudNativePG makes them for 3 instances (issue 26) */
	assert_int_equal(count_req(e.s, "POST", "/namespaces/db/poddisruptionbudgets"), 2);
	for (int k = 0; (k = find_req(e.s, k, "POST", "/namespaces/db/poddisruptionbudgets")) >= 0;
	     k++) {
		json_object *pdb = NULL;
		const char *n = posted_name(e.s, k, &pdb);
		bool prim = strcmp(n, "c-primary") == 0;
		assert_true(prim || strcmp(n, "c") == 0);
		assert_int_equal(json_object_get_int(op_json_at(pdb, "spec.minAvailable")), 1);
		json_object *ml = op_json_at(pdb, "spec.selector.matchLabels");
		assert_string_equal(json_object_get_string(json_object_object_get(
					    ml, "cnpg.io/instanceRole")),
				    prim ? "primary" : "replica");
		json_object_put(pdb);
	}
	env_stop(&e);
}

/* The user Secrets as CloudNativePG makes them: <c>-superuser only with
 * enableSuperuserAccess and no spec.superuserSecret, <c>-app unless the
 * bootstrap method names a secret; the Pod mounts the ones the spec names.
 * With superuser access off, a <c>-superuser this Cluster owns (an older pgop
 * made one always) is deleted, one someone else made is left alone. */
static void test_user_secrets(void **state)
{
	static const struct {
		const char *spec;      /* extra spec fields */
		const char *su_exists; /* ownerReferences uid of an existing c-superuser, or NULL */
		int created_su, created_app, deleted_su;
	} rows[] = {
		{ "", NULL, 0, 1, 0 },
		{ ",\"enableSuperuserAccess\":true", NULL, 1, 1, 0 },
		{ ",\"enableSuperuserAccess\":true,\"superuserSecret\":{\"name\":\"mine\"}", NULL, 0, 1, 0 },
		{ ",\"bootstrap\":{\"initdb\":{\"secret\":{\"name\":\"app-creds\"}}}", NULL, 0, 0, 0 },
		{ "", "u1", 0, 1, 1 },
		{ "", "someone-else", 0, 1, 0 },
		{ ",\"enableSuperuserAccess\":true", "u1", 0, 1, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		_cleanup_free_ char *cl = op_asprintf(
			"[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
			"\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"41\"},"
			"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}%s}}]",
			rows[i].spec);
		_cleanup_free_ char *su = rows[i].su_exists
			? op_asprintf("[{\"metadata\":{\"name\":\"c-superuser\",\"namespace\":\"db\","
				      "\"resourceVersion\":\"3\",\"labels\":{\"cnpg.io/cluster\":\"c\"},"
				      "\"ownerReferences\":[{\"kind\":\"Cluster\",\"name\":\"c\","
				      "\"uid\":\"%s\"}]},\"type\":\"kubernetes.io/basic-auth\"}]",
				      rows[i].su_exists)
			: NULL;
		struct fake f = { .clusters = cl, .secrets = su };
		struct env e;
		env_start(&e, &f, NULL);
		long requeue = -1;
		struct op_err err = OP_ERR_INIT;
		int before = ts_count(e.s);
		assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
		int su_posts = 0, app_posts = 0;
		for (int k = before; (k = find_req(e.s, k, "POST", "/namespaces/db/secrets")) >= 0; k++) {
			json_object *o = NULL;
			const char *n = posted_name(e.s, k, &o);
			su_posts += strcmp(n, "c-superuser") == 0;
			app_posts += strcmp(n, "c-app") == 0;
			json_object_put(o);
		}
		if (su_posts != rows[i].created_su || app_posts != rows[i].created_app ||
		    count_req(e.s, "DELETE", "/namespaces/db/secrets/c-superuser") != rows[i].deleted_su)
			fail_msg("row %zu: superuser created %d, app created %d, superuser deleted %d", i,
				 su_posts, app_posts,
				 count_req(e.s, "DELETE", "/namespaces/db/secrets/c-superuser"));
		env_stop(&e);
	}
}

static void test_guard_denies(void **state)
{
	_cleanup_free_ char *arr = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = arr };
	struct env e;
	env_start(&e, &f, "deny");
	int before = ts_count(e.s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(requeue, 0);
	assert_int_equal(find_req(e.s, before, "POST", "/secrets"), -1);
	assert_int_equal(find_req(e.s, before, "POST", "/pods"), -1);
	int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
	assert_true(st >= 0);
	json_object *p = NULL;
	const struct ts_req *q = ts_at(e.s, st);
	assert_int_equal(op_json_parse(q->body, strlen(q->body), 64, &p, &err), 0);
	assert_string_equal(op_json_str_at(p, "status.phase"), "Invalid cluster definition");
	assert_string_equal(op_json_str_at(p, "status.phaseReason"), "spec.instances: must be odd");
	json_object_put(p);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	assert_true(find_req(e.s, before, "POST", "/events") >= 0);
	env_stop(&e);
}

static void test_type_error_and_absent(void **state)
{
	struct fake f = { .clusters = "[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":"
				      "\"Cluster\",\"metadata\":{\"name\":\"c\",\"namespace\":"
				      "\"db\",\"resourceVersion\":\"3\"},\"spec\":{\"instances\":"
				      "\"three\"}}]" };
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	guard_calls = 0;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(guard_calls, 0); /* type errors stop before the guard */
	int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
	assert_true(st >= 0);
	assert_non_null(strstr(ts_at(e.s, st)->body, "spec.instances: expected integer"));
	/* a Cluster that is not in the cache: nothing at all */
	before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/gone", &requeue, &err), 0);
	assert_int_equal(requeue, 0);
	assert_int_equal(find_req(e.s, before, "POST", ""), -1);
	assert_int_equal(find_req(e.s, before, "PATCH", ""), -1);
	assert_int_equal(rc_reconcile(e.rc, "no-slash", &requeue, &err), -EINVAL);
	env_stop(&e);
}

/* A Cluster whose PKI and user Secrets exist (taken from a first reconcile). */
static char *secrets_of_first_run(void)
{
	_cleanup_free_ char *arr = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = arr };
	struct env e;
	env_start(&e, &f, NULL);
	long requeue;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	assert_int_equal(op_buf_adds(&b, "["), 0);
	int n = 0;
	for (int i = 0; (i = find_req(e.s, i, "POST", "/namespaces/db/secrets")) >= 0; i++) {
		json_object *o = NULL;
		(void)posted_name(e.s, i, &o);
		json_object_object_add(json_object_object_get(o, "metadata"), "resourceVersion",
				       json_object_new_string("7"));
		assert_int_equal(op_buf_addf(&b, "%s%s", n++ ? "," : "",
					     json_object_to_json_string(o)),
				 0);
		json_object_put(o);
	}
	assert_int_equal(op_buf_adds(&b, "]"), 0);
	env_stop(&e);
	return op_buf_take(&b, NULL);
}

/* One reconcile of db/c that must succeed; the index of the first request it
 * made (find_req's `from`). */
static int reconcile_once(struct env *e)
{
	int before = ts_count(e->s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_reconcile(e->rc, "db/c", &requeue, &err), 0);
	return before;
}

/* The Cluster c with `instances`, its first instance c-1 bootstrapping
 * (serial 1 reserved, the primary named). Owned. */
static char *first_primary_bootstrapping(int instances)
{
	return op_asprintf(
		"[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
		"\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"50\"},"
		"\"spec\":{\"instances\":%d,\"storage\":{\"size\":\"1Gi\"}},\"status\":{"
		"\"latestGeneratedNode\":1,\"currentPrimary\":\"c-1\",\"targetPrimary\":\"c-1\"}}]",
		instances);
}

#define POD(n)                                                                                     \
	"{\"metadata\":{\"name\":\"c-" #n "\",\"namespace\":\"db\",\"labels\":{"                  \
	"\"cnpg.io/cluster\":\"c\",\"cnpg.io/podRole\":\"instance\",\"cnpg.io/instanceRole\":"    \
	"\"replica\"}},\"status\":{\"podIP\":\"127.0.0.1\",\"conditions\":[{\"type\":\"Ready\","  \
	"\"status\":\"True\"}]}}"
#define BOOT_POD(phase, restarts)                                                           \
	"{\"metadata\":{\"name\":\"c-1-initdb\",\"namespace\":\"db\",\"labels\":{"          \
	"\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceName\":\"c-1\","                      \
	"\"cnpg.io/jobRole\":\"initdb\"}},\"status\":{\"phase\":\"" phase "\","            \
	"\"containerStatuses\":[{\"name\":\"postgres\",\"restartCount\":" #restarts "}]}}"
#define JOB_POD(phase)                                                                      \
	"{\"metadata\":{\"name\":\"c-1-initdb-x7k2p\",\"namespace\":\"db\",\"labels\":{"    \
	"\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceName\":\"c-1\","                      \
	"\"cnpg.io/jobRole\":\"initdb\"}},\"status\":{\"phase\":\"" phase "\"}}"
#define EVICTED_POD                                                                         \
	"{\"metadata\":{\"name\":\"c-1-initdb\",\"namespace\":\"db\",\"labels\":{"          \
	"\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceName\":\"c-1\","                      \
	"\"cnpg.io/jobRole\":\"initdb\"}},\"status\":{\"phase\":\"Failed\","               \
	"\"reason\":\"Evicted\"}}"
#define PVC1                                                                                \
	"[{\"metadata\":{\"name\":\"c-1\",\"namespace\":\"db\",\"labels\":{"              \
	"\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceName\":\"c-1\","                      \
	"\"cnpg.io/pvcRole\":\"PG_DATA\"}}}]"

static void test_completed_bootstrap_gets_its_pod(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	_cleanup_free_ char *cl = first_primary_bootstrapping(3);
	struct fake f = {
		.clusters = cl,
		.secrets = secrets,
		.pods = "[" BOOT_POD("Succeeded", 1) "]",
		.pvcs = PVC1,
	};
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(find_req(e.s, before, "POST", "/secrets"), -1); /* all exist */
	int mark = find_req(e.s, before, "PATCH", "/persistentvolumeclaims/c-1");
	assert_true(mark >= 0);
	json_object *pm = NULL;
	const char *mb = ts_at(e.s, mark)->body;
	assert_int_equal(op_json_parse(mb, strlen(mb), 64, &pm, &err), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(
				    op_json_at(pm, "metadata.annotations"), "cnpg.io/pvcStatus")),
			    "ready");
	json_object_put(pm);
	int pod = find_req(e.s, before, "POST", "/namespaces/db/pods");
	assert_true(pod > mark);
	json_object *o = NULL;
	assert_string_equal(posted_name(e.s, pod, &o), "c-1");
	assert_string_equal(json_object_get_string(json_object_object_get(
				    op_json_at(o, "metadata.labels"), "cnpg.io/instanceRole")),
			    "primary");
	json_object_put(o);
	assert_int_equal(count_req(e.s, "POST", "/pods"), 1); /* no join yet */
	/* the bootstrap Pod stays until the instance Pod is seen */
	assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-1-initdb"), -1);
	env_stop(&e);
}

/* What the Job controller did, and what the bootstrap Pod's states mean: the
 * instance Pod seen -> the bootstrap Pod goes; lost before it succeeded ->
 * made again; failed RC_BOOTSTRAP_RESTARTS times -> unrecoverable; running
 * -> waited for; evicted -> deleted (made again once gone). A Job's Pod
 * left by an earlier pgop is waited for in any phase, its success used, and
 * never deleted. */
static void test_bootstrap_pod_states(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	_cleanup_free_ char *cl = first_primary_bootstrapping(1);
	static const struct {
		const char *pods, *pvcs;
		const char *post, *del, *phase; /* NULL: none asked for; del: deleted */
	} rows[] = {
		{ "[" BOOT_POD("Succeeded", 0) "," POD(1) "]", PVC1, NULL, "/pods/c-1-initdb", NULL },
		{ "[]", PVC1, "c-1-initdb", NULL, RC_PHASE_FIRST_PRIMARY },
		{ "[" BOOT_POD("Running", 6) "]", PVC1, NULL, NULL, RC_PHASE_UNRECOVERABLE },
		{ "[" BOOT_POD("Failed", 0) "]", PVC1, NULL, NULL, RC_PHASE_UNRECOVERABLE },
		{ "[" BOOT_POD("Running", 5) "]", PVC1, NULL, NULL, RC_PHASE_FIRST_PRIMARY },
		/* evicted: made again (by step 3, once it is gone) */
		{ "[" EVICTED_POD "]", PVC1, NULL, "/pods/c-1-initdb", RC_PHASE_FIRST_PRIMARY },
		/* an earlier pgop's Job Pod: its Job retries, nothing beside it */
		{ "[" JOB_POD("Failed") "]", PVC1, NULL, NULL, RC_PHASE_FIRST_PRIMARY },
		{ "[" JOB_POD("Running") "]", PVC1, NULL, NULL, RC_PHASE_FIRST_PRIMARY },
		{ "[" JOB_POD("Succeeded") "]", PVC1, "c-1", NULL, RC_PHASE_FIRST_PRIMARY },
		{ "[" JOB_POD("Succeeded") "," POD(1) "]", PVC1, NULL, NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct fake f = { .clusters = cl, .secrets = secrets, .pods = rows[i].pods,
				  .pvcs = rows[i].pvcs };
		struct env e;
		env_start(&e, &f, NULL);
		int before = reconcile_once(&e);
		int post = find_req(e.s, before, "POST", "/namespaces/db/pods");
		if (rows[i].post) {
			json_object *o = NULL;
			assert_true(post >= 0);
			assert_string_equal(posted_name(e.s, post, &o), rows[i].post);
			json_object_put(o);
		} else {
			assert_int_equal(post, -1);
		}
		assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-1-initdb") >= 0,
				 rows[i].del != NULL);
		assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-1"), -1);
		assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-1-initdb-x7k2p"), -1);
		if (rows[i].phase) {
			int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
			assert_true(st >= 0);
			assert_non_null(strstr(ts_at(e.s, st)->body, rows[i].phase));
		}
		env_stop(&e);
	}
}

/* <c>-ca-cert follows the CA: a stale copy (here a certificate that is not
 * the CA's) is replaced, the up-to-date one is left alone. */
static void test_ca_cert_follows_the_ca(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	json_object *arr = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(secrets, strlen(secrets), 64, &arr, &err), 0);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		if (strcmp(op_json_str_at(o, "metadata.name"), "c-ca-cert") == 0)
			json_object_object_add(json_object_object_get(o, "data"), "ca.crt",
					       json_object_new_string("c3RhbGUK")); /* "stale\n" */
	}
	_cleanup_free_ char *stale = op_strdup(json_object_to_json_string(arr));
	json_object_put(arr);
	_cleanup_free_ char *cl = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = cl, .secrets = stale };
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_true(find_req(e.s, before, "PUT", "/namespaces/db/secrets/c-ca-cert") >= 0);
	assert_int_equal(find_req(e.s, before, "PUT", "/namespaces/db/secrets/c-ca"), -1);
	assert_int_equal(find_req(e.s, before, "POST", "/namespaces/db/secrets"), -1);
	env_stop(&e);

	f.secrets = secrets; /* up to date: nothing written */
	env_start(&e, &f, NULL);
	before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(find_req(e.s, before, "PUT", "/namespaces/db/secrets/c-ca-cert"), -1);
	env_stop(&e);
}

/* PUTs and POSTs of Secrets since request `from`. */
static int secret_writes(struct ts *s, int from)
{
	int n = 0;
	for (int i = from; i < ts_count(s); i++) {
		const struct ts_req *q = ts_at(s, i);
		n += (strcmp(q->method, "PUT") == 0 || strcmp(q->method, "POST") == 0) &&
		     strstr(q->path, "/secrets") != NULL;
	}
	return n;
}

/* Reads of the Cluster's Secrets with their data (one LIST by its label). */
static int data_lists(struct ts *s, int from)
{
	int n = 0;
	for (int i = from; (i = find_req(s, i, "GET", "/namespaces/db/secrets")) >= 0; i++)
		n += strstr(ts_at(s, i)->query, "labelSelector=cnpg.io/cluster=c") != NULL;
	return n;
}

/* Issue 12: the Secrets cache holds no data. A reconcile reads the Cluster's
 * Secrets (one LIST) only for what it has not seen at that resourceVersion;
 * what it created it knows from the API server's answer. */
static void test_secret_data_read_when_needed(void **state)
{
	_cleanup_free_ char *cl = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = cl };
	struct env e;
	env_start(&e, &f, NULL);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	int before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_true(find_req(e.s, before, "POST", "/namespaces/db/secrets") >= 0);
	assert_int_equal(data_lists(e.s, before), 0); /* created: nothing to read */
	env_stop(&e);

	_cleanup_free_ char *secrets = secrets_of_first_run();
	f.secrets = secrets; /* they exist (resourceVersion 7) */
	env_start(&e, &f, NULL);
	before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(data_lists(e.s, before), 1); /* the CA, its copy and both leaves */
	assert_int_equal(secret_writes(e.s, before), 0);
	before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(data_lists(e.s, before), 0); /* known at these resourceVersions */
	assert_int_equal(secret_writes(e.s, before), 0);
	env_stop(&e);
}

/* A Secret the cache still has but that is gone when its data is read (deleted
 * meanwhile): nothing is written over it, and the reconcile looks again. */
static void test_secret_gone_when_read(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	_cleanup_free_ char *cl = op_asprintf("[%s]", cluster_ok);
	json_object *arr = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(secrets, strlen(secrets), 64, &arr, &err), 0);
	json_object *kept = json_object_new_array(); /* all but c-server */
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		if (strcmp(op_json_str_at(o, "metadata.name"), "c-server") != 0)
			json_object_array_add(kept, json_object_get(o));
	}
	_cleanup_free_ char *listed = op_strdup(json_object_to_json_string(kept));
	json_object_put(kept);
	json_object_put(arr);
	struct fake f = { .clusters = cl, .secrets = secrets, .secrets_listed = listed };
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(secret_writes(e.s, before), 0);
	assert_true(requeue > 0 && requeue <= 1000);
	env_stop(&e);

	f.secrets_listed = "[]"; /* the CA too: the reconcile stops there */
	env_start(&e, &f, NULL);
	before = ts_count(e.s);
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	assert_int_equal(find_req(e.s, before, "PUT", ""), -1);
	assert_int_equal(find_req(e.s, before, "POST", ""), -1);
	assert_true(requeue > 0 && requeue <= 1000);
	env_stop(&e);
}

/* The CA key is read when something must be signed, from <c>-ca as it is
 * now: not when the CA has none, and not when <c>-ca no longer holds the
 * certificate the reconcile started with. */
static void test_ca_key_read_on_demand(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	_cleanup_free_ char *cl = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = cl, .secrets = secrets };
	struct env e;
	env_start(&e, &f, NULL);
	json_object *arr = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(secrets, strlen(secrets), 64, &arr, &err), 0);
	struct pki_secret_data d = { 0 };
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		if (strcmp(op_json_str_at(o, "metadata.name"), "c-ca") == 0)
			assert_int_equal(pki_secret_parse(PKI_SECRET_CA, o, &d, &err), 0);
	}
	json_object_put(arr);
	assert_non_null(d.key);
	struct rc_run r = { .ctl = e.rc, .key = "db/c", .ns = "db", .name = "c", .err = &err,
			    .ca_has_key = false };
	r.ca.cert_pem = op_strdup(d.crt);
	int before = ts_count(e.s);
	assert_int_equal(rc_ca_key(&r), -ENOKEY); /* the memo says it has none: not read */
	assert_int_equal(data_lists(e.s, before), 0);
	r.ca_has_key = true;
	assert_int_equal(rc_ca_key(&r), 0);
	assert_string_equal(r.ca.key_pem, d.key);
	assert_int_equal(rc_ca_key(&r), 0); /* once per reconcile */
	assert_int_equal(data_lists(e.s, before), 1);
	pki_pair_done(&r.ca);
	json_object_put(r.secrets);

	struct rc_run stale = { .ctl = e.rc, .key = "db/c", .ns = "db", .name = "c", .err = &err,
				.ca_has_key = true };
	stale.ca.cert_pem = op_strdup("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n");
	assert_int_equal(rc_ca_key(&stale), -ESTALE);
	assert_null(stale.ca.key_pem);
	assert_non_null(strstr(err.msg, "c-ca"));
	pki_pair_done(&stale.ca);
	json_object_put(stale.secrets);
	pki_secret_data_done(&d);
	env_stop(&e);
}

/* Issue 11 §4: a bootstrap Pod the node cannot start (the node agent's
 * ErrImagePull for a PostgreSQL major it does not have) is the Cluster's phase
 * and an Event naming the message, not a generic "Setting up primary". */
static void test_image_error_surfaces(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	static const char msg[] = "PostgreSQL 16 is not installed on this node "
				  "(image ghcr.io/cloudnative-pg/postgresql:16)";
	_cleanup_free_ char *cl = op_asprintf(
		"[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
		"\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"50\"},"
		"\"spec\":{\"instances\":1,\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:16\","
		"\"storage\":{\"size\":\"1Gi\"}},\"status\":{"
		"\"latestGeneratedNode\":1,\"currentPrimary\":\"c-1\",\"targetPrimary\":\"c-1\"}}]");
	_cleanup_free_ char *pods = op_asprintf(
		"[{\"metadata\":{\"name\":\"c-1-initdb\",\"namespace\":\"db\",\"labels\":{"
		"\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceName\":\"c-1\","
		"\"cnpg.io/jobRole\":\"initdb\"}},\"status\":{\"phase\":\"Pending\","
		"\"initContainerStatuses\":[{\"name\":\"bootstrap-controller\",\"state\":{"
		"\"terminated\":{\"exitCode\":0}}}],"
		"\"containerStatuses\":[{\"name\":\"postgres\",\"state\":{\"waiting\":{"
		"\"reason\":\"ErrImagePull\",\"message\":\"%s\"}}}]}}]",
		msg);
	struct fake f = {
		.clusters = cl,
		.secrets = secrets,
		.pods = pods,
		.pvcs = PVC1,
	};
	struct env e;
	env_start(&e, &f, NULL);
	int before = reconcile_once(&e);
	struct op_err err = OP_ERR_INIT;
	int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
	assert_true(st >= 0);
	json_object *o = NULL;
	const char *body = ts_at(e.s, st)->body;
	assert_int_equal(op_json_parse(body, strlen(body), 64, &o, &err), 0);
	assert_string_equal(op_json_str_at(o, "status.phase"), RC_PHASE_IMAGE_ERROR);
	const char *reason = op_json_str_at(o, "status.phaseReason");
	assert_non_null(reason);
	assert_non_null(strstr(reason, "pod c-1-initdb: ErrImagePull: PostgreSQL 16 is not "
					"installed on this node"));
	json_object_put(o);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	int ev = find_req(e.s, before, "POST", "/events");
	assert_true(ev >= 0);
	assert_non_null(strstr(ts_at(e.s, ev)->body, "PostgreSQL 16 is not installed"));
	assert_non_null(strstr(ts_at(e.s, ev)->body, "Warning"));
	assert_int_equal(find_req(e.s, before, "POST", "/pods"), -1);
	env_stop(&e);
}

static void test_scale_down_removes_highest_replica(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	_cleanup_free_ char *cl = op_asprintf(
		"[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
		"\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"60\"},"
		"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}},\"status\":{"
		"\"latestGeneratedNode\":3,\"currentPrimary\":\"c-3\",\"targetPrimary\":\"c-3\"}}]");
	struct fake f = { .clusters = cl, .secrets = secrets,
			  .pods = "[" POD(1) "," POD(2) "," POD(3) "]" };
	struct env e;
	env_start(&e, &f, NULL);
	int before = ts_count(e.s);
	long requeue = -1;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
	/* c-3 is the primary: c-2 goes (its bootstrap Pods and volumes first,
	 * then the pod) */
	int pvc = find_req(e.s, before, "DELETE", "/persistentvolumeclaims/c-2");
	int wal = find_req(e.s, before, "DELETE", "/persistentvolumeclaims/c-2-wal");
	int pod = find_req(e.s, before, "DELETE", "/pods/c-2");
	assert_true(pvc >= 0 && wal >= 0 && pod > pvc);
	int boot = find_req(e.s, before, "DELETE", "/pods/c-2-join");
	assert_true(boot >= 0 && boot < pod);
	assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-3"), -1);
	assert_int_equal(find_req(e.s, before, "DELETE", "/pods/c-1"), -1); /* one at a time */
	/* role labels follow currentPrimary */
	assert_true(find_req(e.s, before, "PATCH", "/pods/c-3") >= 0);
	env_stop(&e);
}

/* CloudNativePG's annotations (issue 26, reconciler/annotations.h): a
 * disabled reconciliation loop asks nothing of the API server; hibernation
 * deletes one Pod at a time, the replicas first (highest serial) and the
 * primary last, only from a healthy Cluster unless it has begun, ends
 * Hibernated with no Pod, and rehydration makes the primary's Pod first. */
static void test_annotation_steps(void **state)
{
	_cleanup_free_ char *secrets = secrets_of_first_run();
	static const char healthy[] = "Cluster in healthy state";
	static const struct {
		const char *what, *ann, *phase, *reason; /* reason: of the condition read back */
		const char *pods;
		bool writes;            /* any POST, PATCH or DELETE at all */
		const char *del, *post; /* the one Pod deleted / made; NULL: none */
		const char *cond;       /* in the status patch; NULL: not checked */
		const char *primary;    /* currentPrimary and targetPrimary; NULL: c-1 */
	} rows[] = {
		{ "loop disabled", "\"cnpg.io/reconciliationLoop\":\"disabled\"", healthy, NULL,
		  "[" POD(1) "," POD(2) "," POD(3) "]", false, NULL, NULL, NULL, NULL },
		{ "hibernation: the highest replica first", "\"cnpg.io/hibernation\":\"on\"",
		  healthy, NULL, "[" POD(1) "," POD(2) "," POD(3) "]", true, "/pods/c-3", NULL,
		  "DeletingPods", NULL },
		{ "hibernation: a replica before a primary of the highest serial",
		  "\"cnpg.io/hibernation\":\"on\"", healthy, NULL,
		  "[" POD(1) "," POD(2) "," POD(3) "]", true, "/pods/c-2", NULL, "DeletingPods",
		  "c-3" },
		{ "hibernation: the primary last", "\"cnpg.io/hibernation\":\"on\"", healthy,
		  "DeletingPods", "[" POD(1) "]", true, "/pods/c-1", NULL, "DeletingPods", NULL },
		{ "hibernation waits for a healthy Cluster", "\"cnpg.io/hibernation\":\"on\"",
		  RC_PHASE_WAITING_ACTIVE, NULL, "[" POD(1) "," POD(2) "," POD(3) "]", true, NULL,
		  NULL, "WaitingForHealthy", NULL },
		{ "hibernated", "\"cnpg.io/hibernation\":\"on\"", healthy, "DeletingPods", "[]",
		  true, NULL, NULL, "\"Hibernated\"", NULL },
		{ "rehydration: the primary first", "\"cnpg.io/hibernation\":\"off\"", healthy,
		  "Hibernated", "[]", true, NULL, "c-1", "Rehydrating", NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		_cleanup_free_ char *conds =
			rows[i].reason ? op_asprintf("[{\"type\":\"cnpg.io/hibernation\",\"status\":"
						     "\"False\",\"reason\":\"%s\",\"message\":\"\","
						     "\"lastTransitionTime\":\"2026-12-07T00:00:00Z\"}]",
						     rows[i].reason)
				       : op_strdup("[]");
		_cleanup_free_ char *cl = op_asprintf(
			"[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
			"\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u1\",\"resourceVersion\":\"60\","
			"\"annotations\":{%s}},\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}},"
			"\"status\":{\"latestGeneratedNode\":3,\"currentPrimary\":\"%s\","
			"\"targetPrimary\":\"%s\",\"phase\":\"%s\",\"conditions\":%s}}]",
			rows[i].ann, rows[i].primary ? rows[i].primary : "c-1",
			rows[i].primary ? rows[i].primary : "c-1", rows[i].phase, conds);
		struct fake f = { .clusters = cl, .secrets = secrets, .pods = rows[i].pods,
				  .pvcs = PVC1 };
		struct env e;
		env_start(&e, &f, NULL);
		int before = ts_count(e.s);
		long requeue = -1;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(rc_reconcile(e.rc, "db/c", &requeue, &err), 0);
		int writes = 0;
		for (int j = before; j < ts_count(e.s); j++)
			writes += strcmp(ts_at(e.s, j)->method, "GET") != 0;
		if ((writes > 0) != rows[i].writes)
			fail_msg("%s: %d writes", rows[i].what, writes);
		int deletes = count_req(e.s, "DELETE", "");
		if (rows[i].del) {
			if (find_req(e.s, before, "DELETE", rows[i].del) < 0 || deletes != 1)
				fail_msg("%s: %s not (alone) deleted", rows[i].what, rows[i].del);
		} else if (deletes) {
			fail_msg("%s: %d deletions", rows[i].what, deletes);
		}
		int pod = find_req(e.s, before, "POST", "/namespaces/db/pods");
		if (rows[i].post) {
			json_object *o = NULL;
			assert_true(pod >= 0);
			assert_string_equal(posted_name(e.s, pod, &o), rows[i].post);
			json_object_put(o);
			assert_int_equal(count_req(e.s, "POST", "/pods"), 1);
		} else if (pod >= 0) {
			fail_msg("%s: a Pod made", rows[i].what);
		}
		if (rows[i].cond) {
			int st = find_req(e.s, before, "PATCH", "/clusters/c/status");
			if (st < 0 || !strstr(ts_at(e.s, st)->body, rows[i].cond))
				fail_msg("%s: no %s in the status patch %s", rows[i].what,
					 rows[i].cond, st < 0 ? "(none)" : ts_at(e.s, st)->body);
		}
		env_stop(&e);
	}
}

static atomic_bool leader_flag;
static bool flag_leader(void *ud)
{
	return atomic_load(&leader_flag);
}

/* The Prometheus text format (0.0.4): every line is "# HELP name text",
 * "# TYPE name counter|gauge|histogram", or "name{k="v",...} value" whose
 * family was TYPEd before; names [a-zA-Z_:][a-zA-Z0-9_:]*, values numbers. */
static void check_exposition(const char *text)
{
	char typed[64][96];
	size_t n_typed = 0;
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		assert_non_null(end); /* every line ends with a newline */
		_cleanup_free_ char *line = op_strndup(l, (size_t)(end - l));
		l = end + 1;
		if (strncmp(line, "# HELP ", 7) == 0)
			continue;
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char name[96], type[16];
			assert_int_equal(sscanf(line + 7, "%95s %15s", name, type), 2);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
				    strcmp(type, "histogram") == 0);
			assert_true(n_typed < 64);
			snprintf(typed[n_typed++], sizeof(typed[0]), "%s", name);
			continue;
		}
		size_t k = strspn(line, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:0123456789");
		assert_true(k > 0 && !(line[0] >= '0' && line[0] <= '9'));
		bool known = false;
		for (size_t i = 0; i < n_typed && !known; i++) {
			size_t tl = strlen(typed[i]);
			known = strncmp(line, typed[i], tl) == 0 &&
				(k == tl || (strcmp(line + tl, "") != 0 &&
					     (strncmp(line + tl, "_bucket", 7) == 0 ||
					      strncmp(line + tl, "_sum", 4) == 0 ||
					      strncmp(line + tl, "_count", 6) == 0)));
		}
		if (!known)
			fail_msg("sample before its # TYPE: %s", line);
		const char *p = line + k;
		if (*p == '{') {
			const char *close = strchr(p, '}');
			assert_non_null(close);
			for (const char *q = p + 1; q < close;) { /* k="v" pairs */
				size_t kl = strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789");
				assert_true(kl > 0);
				assert_true(q[kl] == '=' && q[kl + 1] == '"');
				q += kl + 2;
				while (*q && *q != '"')
					q += *q == '\\' ? 2 : 1;
				assert_int_equal(*q, '"');
				q++;
				if (*q == ',')
					q++;
			}
			p = close + 1;
		}
		assert_int_equal(*p, ' ');
		char *vend = NULL;
		(void)strtod(p + 1, &vend);
		assert_true(vend != p + 1 && *vend == '\0');
	}
}

/* The value of the sample line starting with prefix (name and labels), or -1. */
static double sample(const char *text, const char *prefix)
{
	_cleanup_free_ char *pat = op_asprintf("\n%s ", prefix);
	const char *p = strstr(text, pat);
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

/* Informer events reach the queue, workers wait for the Lease, then reconcile. */
static void test_workers_follow_the_leader_gate(void **state)
{
	_cleanup_free_ char *arr = op_asprintf("[%s]", cluster_ok);
	struct fake f = { .clusters = arr };
	struct ts *s = ts_start(h_api, &f);
	struct kube_config *cfg = NULL;
	struct kube_client *kc = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(s, "t"), NULL, &cfg, &err), 0);
	assert_int_equal(kube_client_new(cfg, NULL, &kc, &err), 0);
	atomic_store(&leader_flag, false);
	struct rc_controller_opts o = { .client = kc, .workers = 2, .is_leader = flag_leader };
	struct rc_controller *rc = NULL;
	assert_int_equal(rc_controller_start(&o, &rc, &err), 0); /* all namespaces */
	for (int i = 0; i < 200 && !rc_controller_synced(rc); i++)
		ts_sleep_ms(25);
	ts_sleep_ms(600);
	assert_int_equal(count_req(s, "POST", "/secrets"), 0); /* not leading: nothing */
	struct rc_controller_stats st;
	rc_controller_stats(rc, &st);
	assert_int_equal(st.reconciles, 0);
	/* metrics while not leading: nothing reconciled, the Cluster waits in the queue */
	struct op_buf m = OP_BUF_INIT(1 << 20);
	assert_int_equal(op_buf_addc(&m, '\n'), 0);
	assert_int_equal(rc_controller_render_metrics(rc, &m), 0);
	check_exposition(op_buf_str(&m) + 1);
	assert_true(sample(op_buf_str(&m), "pgop_reconcile_total{result=\"success\"}") == 0);
	assert_true(sample(op_buf_str(&m), "pgop_reconcile_errors_total") == 0);
	assert_true(sample(op_buf_str(&m), "pgop_leader") == 0);
	assert_true(sample(op_buf_str(&m), "pgop_workqueue_depth") == 1);
	assert_true(sample(op_buf_str(&m), "pgop_informer_objects{kind=\"clusters\"}") == 1);
	assert_true(sample(op_buf_str(&m), "pgop_kube_requests_total{verb=\"get\",code=\"200\"}") >= 5);
	assert_true(sample(op_buf_str(&m), "pgop_kube_requests_total{verb=\"post\",code=\"201\"}") < 0);
	atomic_store(&leader_flag, true);
	/* up to 30 s: key generation under ASan on a loaded 2-core host takes seconds */
	for (int i = 0; i < 600 && count_req(s, "POST", "/namespaces/db/pods") == 0; i++)
		ts_sleep_ms(50);
	assert_int_equal(count_req(s, "POST", "/namespaces/db/pods"), 1); /* c-1-initdb */
	for (int i = 0; i < 200 && (rc_controller_stats(rc, &st), st.reconciles == 0); i++)
		ts_sleep_ms(50); /* counted when the reconcile returns */
	assert_true(st.reconciles >= 1);
	/* the counters moved: one reconcile (it asks to look again), its duration,
	 * the queue wait, the objects it created */
	op_buf_reset(&m);
	assert_int_equal(op_buf_addc(&m, '\n'), 0);
	assert_int_equal(rc_controller_render_metrics(rc, &m), 0);
	check_exposition(op_buf_str(&m) + 1);
	const char *t = op_buf_str(&m);
	double total = sample(t, "pgop_reconcile_total{result=\"success\"}") +
		       sample(t, "pgop_reconcile_total{result=\"requeue\"}") +
		       sample(t, "pgop_reconcile_total{result=\"error\"}");
	assert_true(total >= 1);
	/* controller-runtime's names count the same (metrics_clusters.c) */
	assert_true(sample(t, "controller_runtime_reconcile_total{controller=\"cluster\",result=\"success\"}") +
			    sample(t, "controller_runtime_reconcile_total{controller=\"cluster\",result=\"requeue\"}") +
			    sample(t, "controller_runtime_reconcile_total{controller=\"cluster\",result=\"error\"}") >=
		    total);
	assert_non_null(strstr(t, "# TYPE pgop_cluster_instances gauge\n"));
	assert_true(sample(t, "pgop_reconcile_duration_seconds_count{result=\"requeue\"}") +
			    sample(t, "pgop_reconcile_duration_seconds_count{result=\"success\"}") +
			    sample(t, "pgop_reconcile_duration_seconds_count{result=\"error\"}") ==
		    total);
	assert_true(sample(t, "pgop_workqueue_queue_duration_seconds_count") >= 1);
	assert_true(sample(t, "pgop_leader") == 1);
	assert_true(sample(t, "pgop_kube_requests_total{verb=\"post\",code=\"201\"}") >= 1);
	op_buf_done(&m);
	rc_controller_free(rc);
	kube_client_free(kc);
	ts_stop(s);
}

/* dataDurability required: the replicas the primary last reported sync or
 * quorum are remembered per Cluster (a set that empties is forgotten) */
static void test_sync_set_memory(void **state)
{
	struct fake f = { .clusters = "[]" };
	struct env e;
	env_start(&e, &f, NULL);
	json_object *doc = json_tokener_parse(
		"{\"replicationInfo\":[{\"applicationName\":\"c-2\",\"syncState\":\"sync\"},"
		"{\"applicationName\":\"c-3\",\"syncState\":\"potential\"},"
		"{\"applicationName\":\"c-4\",\"syncState\":\"quorum\"},{\"syncState\":\"sync\"}]}");
	json_object *none = json_tokener_parse("{\"replicationInfo\":[]}");
	char **v = NULL;
	size_t n = 0;
	rc_sync_set_get(e.rc, "db/c", &v, &n);
	assert_int_equal(n, 0);
	rc_note_sync_set(e.rc, "db/c", doc);
	rc_sync_set_get(e.rc, "db/c", &v, &n);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "c-2");
	assert_string_equal(v[1], "c-4");
	rc_strv_free(&v, &n);
	rc_note_sync_set(e.rc, "db/other", none); /* nothing to remember, no state */
	rc_sync_set_get(e.rc, "db/other", &v, &n);
	assert_int_equal(n, 0);
	/* a report of none keeps the last set (commits acknowledged before were
	 * acknowledged by one of them) */
	rc_note_sync_set(e.rc, "db/c", none);
	rc_sync_set_get(e.rc, "db/c", &v, &n);
	assert_int_equal(n, 2);
	assert_string_equal(v[1], "c-4");
	rc_strv_free(&v, &n);
	rc_note_sync_set(e.rc, "db/c", NULL); /* no document: unchanged */
	rc_sync_set_get(e.rc, "db/c", &v, &n);
	assert_int_equal(n, 2);
	rc_strv_free(&v, &n);

	/* status.synchronousStandbys: a known set replaces the list read back... */
	rc_strv_push(&v, &n, "c-9");
	rc_sync_set_merge(e.rc, "db/c", &v, &n);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "c-2");
	assert_string_equal(v[1], "c-4");
	rc_strv_free(&v, &n);
	/* ...and where this process knows none (a restart, a new leader), the list
	 * read from the status becomes the set the failover uses */
	rc_strv_push(&v, &n, "c-3");
	rc_sync_set_merge(e.rc, "db/restarted", &v, &n);
	assert_int_equal(n, 1);
	rc_strv_free(&v, &n);
	rc_sync_set_get(e.rc, "db/restarted", &v, &n);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "c-3");
	rc_strv_free(&v, &n);
	/* neither: nothing */
	rc_sync_set_merge(e.rc, "db/none", &v, &n);
	assert_int_equal(n, 0);
	rc_sync_set_get(e.rc, "db/none", &v, &n);
	assert_int_equal(n, 0);
	json_object_put(doc);
	json_object_put(none);
	env_stop(&e);
}

/* RewindFailedRecloned once per re-clone: an id (session and time) is new
 * once per pod; another re-clone of the same pod, or of another pod, is new
 * again; Clusters are kept apart */
static void test_reclone_memory(void **state)
{
	struct fake f = { .clusters = "[]" };
	struct env e;
	env_start(&e, &f, NULL);
	assert_true(rc_note_report(e.rc, "db/c", "c-1", "s1 t1"));
	assert_false(rc_note_report(e.rc, "db/c", "c-1", "s1 t1")); /* the next reconciles */
	assert_true(rc_note_report(e.rc, "db/c", "c-2", "s2 t1"));
	assert_false(rc_note_report(e.rc, "db/c", "c-1", "s1 t1"));
	assert_true(rc_note_report(e.rc, "db/other", "c-1", "s1 t1"));
	/* c-1's manager restarted and re-cloned again */
	assert_true(rc_note_report(e.rc, "db/c", "c-1", "s3 t2"));
	assert_false(rc_note_report(e.rc, "db/c", "c-1", "s3 t2"));
	assert_false(rc_note_report(e.rc, "db/c", "c-2", "s2 t1"));
	/* a pod name that is a prefix of another is its own pod */
	assert_true(rc_note_report(e.rc, "db/c", "c-", "s1 t1"));
	assert_false(rc_note_report(e.rc, "db/c", "c-2", "s2 t1"));
	env_stop(&e);
}

/* The messages of the Events POSTed from request from on, "|"-joined. */
static void posted_events(struct ts *s, int from, char *out, size_t len)
{
	out[0] = '\0';
	for (int i = from; (i = find_req(s, i, "POST", "/namespaces/db/events")) >= 0; i++) {
		json_object *o = NULL;
		struct op_err err = OP_ERR_INIT;
		const struct ts_req *q = ts_at(s, i);
		assert_int_equal(op_json_parse(q->body, strlen(q->body), 64, &o, &err), 0);
		assert_string_equal(op_json_str_at(o, "reason"), "MetricsQueryFailed");
		size_t n = strlen(out);
		snprintf(out + n, len - n, "%s%s", n ? "|" : "", op_json_str_at(o, "message"));
		json_object_put(o);
	}
}

static json_object *doc_of(const char *errors)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *t = op_asprintf("{\"isPrimary\":true,\"metricsErrors\":%s}", errors);
	assert_int_equal(op_json_parse(t, strlen(t), 16, &o, &err), 0);
	return o;
}

static void set_docs(struct rc_instance *v, const char *e1, const char *e2)
{
	for (int i = 0; i < 2; i++) {
		if (v[i].doc)
			json_object_put(v[i].doc);
		v[i].doc = doc_of(i ? e2 : e1);
	}
}

/* MetricsQueryFailed (metrics_events.c): one Event per failing query and
 * error text for the Cluster, however many instances report it and however
 * many reconciles see it; its text on one line; a new text is a new Event; an
 * error that cleared while every instance answered is new again when it comes
 * back, not while an instance does not answer. */
static void test_metrics_query_events(void **state)
{
	struct fake f = { .clusters = "[]" };
	struct env e;
	env_start(&e, &f, NULL);
	struct op_err err = OP_ERR_INIT;
	json_object *obj = NULL;
	assert_int_equal(op_json_parse(cluster_ok, strlen(cluster_ok), 16, &obj, &err), 0);
	struct rc_run r = { .key = "db/c", .obj = obj, .ns = "db", .name = "c", .err = &err };
	r.ctl = e.rc;
	struct rc_instance v[2] = { { .name = "c-1", .has_status = true },
				    { .name = "c-2", .has_status = true } };
	static const char boom[] = "[{\"source\":\"q1\",\"error\":\"ERROR:  boom\\nLINE 1: x\"}]";
	char msgs[4096];
	int at = ts_count(e.s);
	set_docs(v, boom, boom);
	for (int i = 0; i < 3; i++) /* three reconciles */
		rc_metrics_error_events(&r, v, 2);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	posted_events(e.s, at, msgs, sizeof(msgs));
	assert_string_equal(msgs, "monitoring query q1 fails on c-1, c-2: ERROR: boom LINE 1: x "
				  "(cnpg_errors_total counts it; the other metrics are collected)");
	/* another text on c-2 (the smaller one is the query's): a new Event */
	at = ts_count(e.s);
	set_docs(v, boom, "[{\"source\":\"q1\",\"error\":\"ERROR:  another\"}]");
	rc_metrics_error_events(&r, v, 2);
	rc_metrics_error_events(&r, v, 2);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	posted_events(e.s, at, msgs, sizeof(msgs));
	assert_non_null(strstr(msgs, "q1 fails on c-2: ERROR: another ("));
	assert_null(strchr(msgs, '|'));
	/* cleared on c-1 while c-2 does not answer: still remembered */
	at = ts_count(e.s);
	set_docs(v, "[]", "[]");
	v[1].has_status = false;
	rc_metrics_error_events(&r, v, 2);
	v[1].has_status = true;
	set_docs(v, "[{\"source\":\"q1\",\"error\":\"ERROR:  another\"}]", "[]");
	rc_metrics_error_events(&r, v, 2);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	posted_events(e.s, at, msgs, sizeof(msgs));
	assert_string_equal(msgs, "");
	/* cleared everywhere, then back: a new Event; a second source has its own */
	set_docs(v, "[]", "[]");
	rc_metrics_error_events(&r, v, 2);
	set_docs(v, "[{\"source\":\"q1\",\"error\":\"ERROR:  another\"},"
		    "{\"source\":\"/run/pgop/monitoring/configmap/m/q.yaml\",\"error\":\"bad\"}]",
		 "[{\"source\":\"\",\"error\":\"no source: ignored\"}]");
	rc_metrics_error_events(&r, v, 2);
	rc_metrics_error_events(&r, v, 2);
	assert_int_equal(rc_controller_flush_events(e.rc, 5000), 0);
	posted_events(e.s, at, msgs, sizeof(msgs));
	assert_non_null(strstr(msgs, "q1 fails on c-1: ERROR: another ("));
	assert_non_null(strstr(msgs, "|monitoring query /run/pgop/monitoring/configmap/m/q.yaml "
				     "fails on c-1: bad ("));
	assert_null(strstr(msgs, "no source"));
	/* the subjects of other reports (a re-clone) are not forgotten with them */
	assert_true(rc_note_report(e.rc, "db/c", "c-1", "s1 t1"));
	set_docs(v, "[]", "[]");
	rc_metrics_error_events(&r, v, 2);
	assert_false(rc_note_report(e.rc, "db/c", "c-1", "s1 t1"));
	for (int i = 0; i < 2; i++)
		json_object_put(v[i].doc);
	json_object_put(obj);
	env_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_cluster),
		cmocka_unit_test(test_guard_denies),
		cmocka_unit_test(test_type_error_and_absent),
		cmocka_unit_test(test_completed_bootstrap_gets_its_pod),
		cmocka_unit_test(test_bootstrap_pod_states),
		cmocka_unit_test(test_image_error_surfaces),
		cmocka_unit_test(test_ca_cert_follows_the_ca),
		cmocka_unit_test(test_secret_data_read_when_needed),
		cmocka_unit_test(test_ca_key_read_on_demand),
		cmocka_unit_test(test_secret_gone_when_read),
		cmocka_unit_test(test_user_secrets),
		cmocka_unit_test(test_scale_down_removes_highest_replica),
		cmocka_unit_test(test_annotation_steps),
		cmocka_unit_test(test_workers_follow_the_leader_gate),
		cmocka_unit_test(test_sync_set_memory),
		cmocka_unit_test(test_reclone_memory),
		cmocka_unit_test(test_metrics_query_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
