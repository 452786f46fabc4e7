/* Unit tests: where the instances run and what may disrupt them (issue 26):
 * the rendered placement of instance and bootstrap Pods
 * (reconciler/objects_placement.c, as CloudNativePG's CreateAffinitySection)
 * and its fingerprint (rc_placement_hash, on the instance Pods),
 * the PodDisruptionBudgets (rc_pdb_decide, rc_build_pdb), a node being
 * drained (rc_node_draining), the drain switchover (rc_drain_decide) and an
 * unschedulable Pod (rc_pod_unschedulable), a node lost for good
 * (rc_node_lost_since, rc_node_lost_pick). */
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

#include "api/annotations.h"
#include "api/cluster.h"
#include "reconciler/annotations.h"
#include "reconciler/disruption.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"
#include "test_json.h"


/* A Cluster "c" in "db" with these spec fields after instances/storage. */
static struct api_cluster *cluster(int instances, const char *extra)
{
	_cleanup_free_ char *txt = op_asprintf(
		"{\"metadata\":{\"name\":\"c\",\"namespace\":\"db\",\"uid\":\"u\"},\"spec\":{"
		"\"instances\":%d,\"storage\":{\"size\":\"1Gi\"}%s}}",
		instances, extra);
	json_object *o = parse(txt);
	struct api_cluster *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_cluster_decode(o, NULL, &c, &err), 0);
	json_object_put(o);
	return c;
}

static void assert_json(json_object *got, const char *want_txt)
{
	json_object *want = parse(want_txt);
	if (!json_object_equal(got, want))
		fail_msg("got %s\nwant %s",
			 got ? json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN) : "NULL",
			 json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
	json_object_put(want);
}

#define TERM(key)                                                                                  \
	"{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"cnpg.io/cluster\",\"operator\":"    \
	"\"In\",\"values\":[\"c\"]},{\"key\":\"cnpg.io/podRole\",\"operator\":\"In\",\"values\":" \
	"[\"instance\"]}]},\"topologyKey\":\"" key "\"}"

/* The affinity section, row by row against CloudNativePG's pods_test.go cases. */
static void test_affinity_rendering(void **state)
{
	(void)state;
	static const struct {
		const char *what, *spec, *want; /* want NULL: no affinity */
	} rows[] = {
		{ "default: preferred, weight 100, hostname", "",
		  "{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
		  "\"weight\":100,\"podAffinityTerm\":" TERM("kubernetes.io/hostname") "}]}}" },
		{ "required over a zone",
		  ",\"affinity\":{\"podAntiAffinityType\":\"required\",\"topologyKey\":"
		  "\"topology.kubernetes.io/zone\"}",
		  "{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
		  TERM("topology.kubernetes.io/zone") "]}}" },
		{ "disabled", ",\"affinity\":{\"enablePodAntiAffinity\":false}", NULL },
		{ "an unknown type renders nothing (admission refuses it)",
		  ",\"affinity\":{\"podAntiAffinityType\":\"sometimes\"}", NULL },
		{ "disabled, with node affinity and additional terms",
		  ",\"affinity\":{\"enablePodAntiAffinity\":false,\"nodeAffinity\":{"
		  "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
		  "\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"In\",\"values\":[\"ssd\"]}]}]}},"
		  "\"additionalPodAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
		  "\"weight\":5,\"podAffinityTerm\":{\"topologyKey\":\"zone\"}}]},"
		  "\"additionalPodAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
		  "{\"topologyKey\":\"rack\"}]}}",
		  "{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
		  "\"weight\":5,\"podAffinityTerm\":{\"topologyKey\":\"zone\"}}]},"
		  "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
		  "{\"topologyKey\":\"rack\"}]},"
		  "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
		  "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":"
		  "\"In\",\"values\":[\"ssd\"]}]}]}}}" },
		{ "additional anti-affinity appended after the generated term",
		  ",\"affinity\":{\"additionalPodAntiAffinity\":{"
		  "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,"
		  "\"podAffinityTerm\":{\"topologyKey\":\"rack\"}}],"
		  "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"zone\"}]}}",
		  "{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
		  "\"weight\":100,\"podAffinityTerm\":" TERM("kubernetes.io/hostname") "},{\"weight\":1,"
		  "\"podAffinityTerm\":{\"topologyKey\":\"rack\"}}],"
		  "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"zone\"}]}}" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		struct api_cluster *c = cluster(3, rows[i].spec);
		json_object *a = rc_build_affinity(c);
		if (!rows[i].want && a)
			fail_msg("%s: got %s, want none", rows[i].what,
				 json_object_to_json_string(a));
		if (rows[i].want)
			assert_json(a, rows[i].want);
		if (a)
			json_object_put(a);
		api_cluster_free(c);
	}
}

/* The instance Pod and both bootstrap Pods carry the same placement. */
static void test_pods_placement(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(
		3, ",\"affinity\":{\"podAntiAffinityType\":\"required\",\"nodeSelector\":{"
		   "\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"dedicated\",\"operator\":"
		   "\"Equal\",\"value\":\"pg\",\"effect\":\"NoSchedule\"}]},"
		   "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
		   "\"whenUnsatisfiable\":\"DoNotSchedule\"}]");
	static const struct rc_settings s = { .operator_image = "pgop:test" };
	struct op_err err = OP_ERR_INIT;
	json_object *pods[3] = { 0 };
	assert_int_equal(rc_build_pod(c, &s, 2, "replica", &pods[0], &err), 0);
	assert_int_equal(rc_build_bootstrap_pod(c, &s, 1, RC_JOB_INITDB, &pods[1], &err), 0);
	assert_int_equal(rc_build_bootstrap_pod(c, &s, 2, RC_JOB_JOIN, &pods[2], &err), 0);
	for (size_t i = 0; i < 3; i++) {
		json_object *spec = op_json_at(pods[i], "spec");
		assert_json(op_json_at(spec, "affinity"),
			    "{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
			    TERM("kubernetes.io/hostname") "]}}");
		assert_json(op_json_at(spec, "nodeSelector"), "{\"disk\":\"ssd\"}");
		assert_json(op_json_at(spec, "tolerations"),
			    "[{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"pg\","
			    "\"effect\":\"NoSchedule\"}]");
		assert_json(op_json_at(spec, "topologySpreadConstraints"),
			    "[{\"maxSkew\":1,\"topologyKey\":\"zone\",\"whenUnsatisfiable\":"
			    "\"DoNotSchedule\"}]");
		json_object_put(pods[i]);
	}
	api_cluster_free(c);
	/* nothing asked: only the default anti-affinity */
	c = cluster(1, "");
	assert_int_equal(rc_build_pod(c, &s, 1, "primary", &pods[0], &err), 0);
	json_object *spec = op_json_at(pods[0], "spec");
	assert_non_null(op_json_at(spec, "affinity.podAntiAffinity"));
	assert_null(op_json_at(spec, "nodeSelector"));
	assert_null(op_json_at(spec, "tolerations"));
	assert_null(op_json_at(spec, "topologySpreadConstraints"));
	json_object_put(pods[0]);
	api_cluster_free(c);
}

#define SEL_TOL                                                                                    \
	",\"affinity\":{\"nodeSelector\":{\"disk\":\"ssd\",\"zone\":\"a\"},\"tolerations\":[{"    \
	"\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"pg\",\"effect\":\"NoSchedule\"}]}"

/* The fingerprint of the rendered placement: equal for specs that render
 * alike (key order, explicit defaults), different for any change of what
 * the Pod gets; rc_build_pod carries it. */
static void test_placement_hash(void **state)
{
	(void)state;
	static const struct {
		const char *what, *a, *b;
		bool same;
	} rows[] = {
		{ "the same spec", SEL_TOL, SEL_TOL, true },
		{ "members in another order (nodeSelector, a toleration)", SEL_TOL,
		  ",\"affinity\":{\"tolerations\":[{\"effect\":\"NoSchedule\",\"value\":\"pg\","
		  "\"operator\":\"Equal\",\"key\":\"dedicated\"}],\"nodeSelector\":{\"zone\":\"a\","
		  "\"disk\":\"ssd\"}}",
		  true },
		{ "explicit defaults render the same", "",
		  ",\"affinity\":{\"enablePodAntiAffinity\":true,\"podAntiAffinityType\":"
		  "\"preferred\",\"topologyKey\":\"kubernetes.io/hostname\"}",
		  true },
		{ "fields that are not placement", "", ",\"primaryUpdateMethod\":\"switchover\"",
		  true },
		{ "a nodeSelector value", SEL_TOL,
		  ",\"affinity\":{\"nodeSelector\":{\"disk\":\"hdd\",\"zone\":\"a\"},\"tolerations\":[{"
		  "\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"pg\",\"effect\":"
		  "\"NoSchedule\"}]}",
		  false },
		{ "a nodeSelector added", "", ",\"affinity\":{\"nodeSelector\":{\"disk\":\"ssd\"}}",
		  false },
		{ "a toleration's effect", SEL_TOL,
		  ",\"affinity\":{\"nodeSelector\":{\"disk\":\"ssd\",\"zone\":\"a\"},\"tolerations\":[{"
		  "\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"pg\",\"effect\":"
		  "\"NoExecute\"}]}",
		  false },
		{ "the anti-affinity type", "", ",\"affinity\":{\"podAntiAffinityType\":\"required\"}",
		  false },
		{ "the topology key", "", ",\"affinity\":{\"topologyKey\":\"zone\"}", false },
		{ "anti-affinity disabled", "", ",\"affinity\":{\"enablePodAntiAffinity\":false}",
		  false },
		{ "node affinity", "",
		  ",\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
		  "[{\"weight\":1,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":"
		  "\"Exists\"}]}}]}}",
		  false },
		{ "additional anti-affinity", "",
		  ",\"affinity\":{\"additionalPodAntiAffinity\":{"
		  "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"rack\"}]}}",
		  false },
		{ "topologySpreadConstraints", "",
		  ",\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
		  "\"whenUnsatisfiable\":\"DoNotSchedule\"}]",
		  false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		struct api_cluster *a = cluster(3, rows[i].a), *b = cluster(3, rows[i].b);
		char *ha = rc_placement_hash(a), *hb = rc_placement_hash(b);
		assert_int_equal(strlen(ha), 16);
		if ((strcmp(ha, hb) == 0) != rows[i].same)
			fail_msg("%s: %s vs %s, want %s", rows[i].what, ha, hb,
				 rows[i].same ? "equal" : "different");
		free(ha);
		free(hb);
		api_cluster_free(a);
		api_cluster_free(b);
	}
	/* the instance Pod carries it; the bootstrap Pods are never rolled */
	struct api_cluster *c = cluster(3, SEL_TOL);
	static const struct rc_settings s = { .operator_image = "pgop:test" };
	struct op_err err = OP_ERR_INIT;
	json_object *pod = NULL, *boot = NULL;
	assert_int_equal(rc_build_pod(c, &s, 2, "replica", &pod, &err), 0);
	assert_int_equal(rc_build_bootstrap_pod(c, &s, 2, RC_JOB_JOIN, &boot, &err), 0);
	char *h = rc_placement_hash(c);
	const char *on_pod = api_obj_annotation(pod, RC_ANN_PLACEMENT_HASH);
	assert_non_null(on_pod);
	assert_string_equal(on_pod, h);
	assert_null(api_obj_annotation(boot, RC_ANN_PLACEMENT_HASH));
	assert_false(rc_placement_outdated(pod, h));
	free(h);
	json_object_put(boot);
	json_object_put(pod);
	api_cluster_free(c);
}

static void test_maintenance_window_decode(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(3, "");
	assert_false(api_cluster_maintenance_in_progress(c));
	assert_true(api_cluster_reuse_pvc(c));
	api_cluster_free(c);
	c = cluster(3, ",\"nodeMaintenanceWindow\":{\"inProgress\":true}");
	assert_true(api_cluster_maintenance_in_progress(c));
	assert_true(api_cluster_reuse_pvc(c)); /* CNPG's default */
	api_cluster_free(c);
	c = cluster(3, ",\"nodeMaintenanceWindow\":{\"inProgress\":true,\"reusePVC\":false}");
	assert_true(api_cluster_maintenance_in_progress(c));
	assert_false(api_cluster_reuse_pvc(c));
	api_cluster_free(c);
}

/* rc_pdb_decide: CloudNativePG's reconcilePodDisruptionBudget, plus the
 * single instance on a drained node. */
static void test_pdb_decide(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		int instances;
		const char *spec;
		bool draining;
		bool primary, replicas;
		int64_t min;
	} rows[] = {
		{ "3 instances: both, one replica at a time", 3, "", false, true, true, 1 },
		{ "5 instances: 3 of 4 replicas available", 5, "", false, true, true, 3 },
		{ "2 instances: no replicas' PDB (CNPG: fewer than 3)", 2, "", false, true, false, 0 },
		{ "1 instance: the primary's", 1, "", false, true, false, 0 },
		{ "1 instance on a drained node: none, the drain goes on", 1, "", true, false, false, 0 },
		{ "3 instances, primary drained: both still (switch over first)", 3, "", true, true,
		  true, 1 },
		{ "enablePDB false: none", 3, ",\"enablePDB\":false", false, false, false, 0 },
		{ "maintenance, reusePVC: no replicas' PDB", 3,
		  ",\"nodeMaintenanceWindow\":{\"inProgress\":true}", false, true, false, 0 },
		{ "maintenance, reusePVC, single instance: none", 1,
		  ",\"nodeMaintenanceWindow\":{\"inProgress\":true}", false, false, false, 0 },
		{ "maintenance without reusePVC: both (CNPG)", 3,
		  ",\"nodeMaintenanceWindow\":{\"inProgress\":true,\"reusePVC\":false}", false, true,
		  true, 1 },
		{ "a window not in progress changes nothing", 1,
		  ",\"nodeMaintenanceWindow\":{\"inProgress\":false}", false, true, false, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		struct api_cluster *c = cluster(rows[i].instances, rows[i].spec);
		struct rc_pdb_want w;
		rc_pdb_decide(c, rows[i].draining, &w);
		if (w.primary != rows[i].primary || w.replicas != rows[i].replicas ||
		    (w.replicas && w.replicas_min != rows[i].min))
			fail_msg("%s: got primary %d replicas %d min %lld", rows[i].what, w.primary,
				 w.replicas, (long long)w.replicas_min);
		api_cluster_free(c);
	}
}

static void test_pdb_objects(void **state)
{
	(void)state;
	struct api_cluster *c = cluster(5, "");
	json_object *p = rc_build_pdb(c, true, 1);
	assert_json(p, "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
		       "\"metadata\":{\"name\":\"c-primary\",\"namespace\":\"db\",\"labels\":{"
		       "\"cnpg.io/cluster\":\"c\",\"app.kubernetes.io/name\":\"postgresql\","
		       "\"app.kubernetes.io/instance\":\"c\",\"app.kubernetes.io/component\":"
		       "\"database\",\"app.kubernetes.io/managed-by\":\"pgop\"},"
		       "\"ownerReferences\":[{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":"
		       "\"Cluster\",\"name\":\"c\",\"uid\":\"u\",\"controller\":true,"
		       "\"blockOwnerDeletion\":true}]},\"spec\":{\"selector\":{\"matchLabels\":{"
		       "\"cnpg.io/cluster\":\"c\",\"cnpg.io/instanceRole\":\"primary\"}},"
		       "\"minAvailable\":1}}");
	json_object_put(p);
	p = rc_build_pdb(c, false, 3);
	assert_string_equal(op_json_str_at(p, "metadata.name"), "c");
	assert_int_equal(json_object_get_int(op_json_at(p, "spec.minAvailable")), 3);
	assert_string_equal(json_object_get_string(json_object_object_get(
				    op_json_at(p, "spec.selector.matchLabels"), "cnpg.io/instanceRole")),
			    "replica");
	json_object_put(p);
	api_cluster_free(c);
}

static void test_node_draining(void **state)
{
	(void)state;
	static const struct {
		const char *node;
		bool draining;
	} rows[] = {
		{ "{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", false },
		{ "{\"spec\":{\"unschedulable\":true}}", true },                   /* kubectl cordon */
		{ "{\"spec\":{\"unschedulable\":false}}", false },
		{ "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unschedulable\","
		  "\"effect\":\"NoSchedule\"}]}}", true },
		{ "{\"spec\":{\"taints\":[{\"key\":\"ToBeDeletedByClusterAutoscaler\"}]}}", true },
		{ "{\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disrupted\"}]}}", true },
		{ "{\"spec\":{\"taints\":[{\"key\":\"karpenter.sh/disruption\"}]}}", true },
		{ "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\"}]}}", false },
		{ "{\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"pg\"}]}}", false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *n = parse(rows[i].node);
		if (rc_node_draining(n) != rows[i].draining)
			fail_msg("%s: want draining %d", rows[i].node, rows[i].draining);
		json_object_put(n);
	}
	assert_false(rc_node_draining(NULL));
}

/* name, ready, status, primary, terminating, walReceiver */
#define I(nm, rdy, st, prim, term, wr)                                                             \
	{ .name = (char *)(nm), .pod_ready = (rdy), .has_status = (st), .is_primary = (prim),    \
	  .pod_terminating = (term), .wal_receiver_active = (wr) }

/* rc_drain_decide: the primary on a node being drained hands over to the
 * most advanced streaming replica on another node, whatever its serial. */
static void test_drain_decide(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		struct rc_instance v[3]; /* sorted: most advanced first */
		bool draining[3];
		const char *current, *target;
		enum rc_drain_action action;
		const char *to;
	} rows[] = {
		{ "no node drained",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 0, 0, 0 }, "c-1", "c-1", RC_DRAIN_NONE, NULL },
		{ "a replica's node drained: nothing (its PDB paces it)",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 0, 1, 0 }, "c-1", "c-1", RC_DRAIN_NONE, NULL },
		{ "primary c-1 drained: the most advanced replica",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-1", "c-1", RC_DRAIN_SWITCHOVER, "c-2" },
		{ "primary c-3 (not serial 1) drained: c-1 takes over",
		  { I("c-3", 1, 1, 1, 0, 0), I("c-1", 1, 1, 0, 0, 1), I("c-2", 1, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-3", "c-3", RC_DRAIN_SWITCHOVER, "c-1" },
		{ "the most advanced replica is on a drained node too: the next one",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 1, 1, 0 }, "c-1", "c-1", RC_DRAIN_SWITCHOVER, "c-3" },
		{ "a replica not streaming, the other not Ready: wait",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 0), I("c-3", 0, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-1", "c-1", RC_DRAIN_WAIT, NULL },
		{ "a replica without status, the other terminating: wait",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 0, 0, 0, 0), I("c-3", 1, 1, 0, 1, 1) },
		  { 1, 0, 0 }, "c-1", "c-1", RC_DRAIN_WAIT, NULL },
		{ "a single instance: wait (its PDB is gone, rc_pdb_decide)",
		  { I("c-1", 1, 1, 1, 0, 0) }, { 1 }, "c-1", "c-1", RC_DRAIN_WAIT, NULL },
		{ "a switchover under way: nothing more",
		  { I("c-1", 1, 1, 1, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-1", "c-2", RC_DRAIN_NONE, NULL },
		{ "a failover under way: nothing more",
		  { I("c-2", 1, 1, 0, 0, 0), I("c-3", 1, 1, 0, 0, 0), I("c-1", 0, 0, 0, 0, 0) },
		  { 0, 0, 1 }, "c-1", "pending", RC_DRAIN_NONE, NULL },
		{ "the primary does not answer as primary: the failover's business",
		  { I("c-1", 1, 0, 0, 0, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-1", "c-1", RC_DRAIN_NONE, NULL },
		{ "the primary's Pod is already terminating: the SIGTERM handover's business",
		  { I("c-1", 1, 1, 1, 1, 0), I("c-2", 1, 1, 0, 0, 1), I("c-3", 1, 1, 0, 0, 1) },
		  { 1, 0, 0 }, "c-1", "c-1", RC_DRAIN_NONE, NULL },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		size_t n = 0;
		while (n < 3 && rows[i].v[n].name)
			n++;
		struct rc_drain_decision d;
		rc_drain_decide(rows[i].v, n, rows[i].draining, rows[i].current, rows[i].target, &d);
		if (d.action != rows[i].action ||
		    (rows[i].to && (!d.target || strcmp(d.target, rows[i].to) != 0)))
			fail_msg("%s: got %s %s, want %s %s", rows[i].what,
				 rc_drain_action_str(d.action), d.target ? d.target : "-",
				 rc_drain_action_str(rows[i].action), rows[i].to ? rows[i].to : "-");
	}
	assert_string_equal(rc_drain_action_str((enum rc_drain_action)9), "unknown");
}

static void test_pod_unschedulable(void **state)
{
	(void)state;
	static const struct {
		const char *pod;
		bool want;
	} rows[] = {
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}", true },
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"True\"}]}}", false },
		{ "{\"status\":{\"phase\":\"Pending\"}}", false },
		{ "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}", false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *p = parse(rows[i].pod);
		if (rc_pod_unschedulable(p) != rows[i].want)
			fail_msg("%s: want %d", rows[i].pod, rows[i].want);
		json_object_put(p);
	}
}

/* Since when a Pod has been unschedulable: its PodScheduled condition's
 * lastTransitionTime, only while it is (and the time parses). */
static void test_pod_unschedulable_since(void **state)
{
	(void)state;
	static const struct {
		const char *pod;
		int64_t want;
	} rows[] = {
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\","
		  "\"status\":\"False\",\"lastTransitionTime\":\"2026-12-07T11:00:00Z\"},"
		  "{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","
		  "\"lastTransitionTime\":\"2026-12-07T12:00:00Z\"}]}}",
		  1796644800 },
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
		  -1 },
		{ "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\","
		  "\"lastTransitionTime\":\"soon\"}]}}",
		  -1 },
		{ "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"True\",\"lastTransitionTime\":\"2026-12-07T12:00:00Z\"}]}}",
		  -1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *p = parse(rows[i].pod);
		if (rc_pod_unschedulable_since(p) != rows[i].want)
			fail_msg("%s: want %lld, got %lld", rows[i].pod, (long long)rows[i].want,
				 (long long)rc_pod_unschedulable_since(p));
		json_object_put(p);
	}
}

static void test_node_lost_since(void **state)
{
	(void)state;
	static const struct {
		const char *node;
		int64_t since;
	} rows[] = {
		{ "{}", -1 },
		{ "{\"spec\":{\"unschedulable\":true}}", -1 },
		/* the NoSchedule twin has no timeAdded: the NoExecute one dates it */
		{ "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\","
		  "\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/unreachable\","
		  "\"effect\":\"NoExecute\",\"timeAdded\":\"2026-12-07T12:00:00Z\"}]}}",
		  1796644800 },
		{ "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\","
		  "\"timeAdded\":\"2026-12-07T12:00:10Z\"},{\"key\":\"node.kubernetes.io/"
		  "unreachable\",\"timeAdded\":\"2026-12-07T12:00:05Z\"}]}}",
		  1796644805 },
		{ "{\"spec\":{\"taints\":[{\"key\":\"example.com/other\","
		  "\"timeAdded\":\"2026-12-07T12:00:00Z\"}]}}",
		  -1 },
		{ "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\","
		  "\"timeAdded\":\"yesterday\"}]}}",
		  -1 },
		{ "{\"spec\":{\"taints\":{\"key\":\"node.kubernetes.io/unreachable\"}}}", -1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *n = parse(rows[i].node);
		if (rc_node_lost_since(n) != rows[i].since)
			fail_msg("%s: want %lld, got %lld", rows[i].node, (long long)rows[i].since,
				 (long long)rc_node_lost_since(n));
		json_object_put(n);
	}
	assert_int_equal(rc_node_lost_since(NULL), -1);
}

/* Table: instances (name, lost since, answers as primary), now 1000,
 * timeout 300, current and target primary: the pick and the wait. */
static void test_node_lost_pick(void **state)
{
	(void)state;
	static const struct {
		const char *why;
		struct rc_node_lost_in v[3];
		unsigned timeout;
		const char *current, *target, *pick;
		int64_t wait;
	} rows[] = {
		{ "nothing lost", { { "c-1", -1, true }, { "c-2", -1, false }, { "c-3", -1, false } },
		  300, "c-1", "c-1", NULL, -1 },
		{ "a replica lost long enough",
		  { { "c-1", -1, true }, { "c-2", 700, false }, { "c-3", -1, false } },
		  300, "c-1", "c-1", "c-2", -1 },
		{ "a replica lost, not long enough: the wait",
		  { { "c-1", -1, true }, { "c-2", 800, false }, { "c-3", 750, false } },
		  300, "c-1", "c-1", NULL, 50 },
		{ "the primary's node lost: never the primary",
		  { { "c-1", 100, true }, { "c-2", -1, false }, { "c-3", -1, false } },
		  300, "c-1", "c-1", NULL, -1 },
		{ "the primary does not answer: nothing",
		  { { "c-1", -1, false }, { "c-2", 100, false }, { "c-3", -1, false } },
		  300, "c-1", "c-1", NULL, -1 },
		{ "a failover under way: nothing",
		  { { "c-1", -1, true }, { "c-2", 100, false }, { "c-3", -1, false } },
		  300, "c-1", "c-3", NULL, -1 },
		{ "never",
		  { { "c-1", -1, true }, { "c-2", 100, false }, { "c-3", -1, false } },
		  RC_NODE_LOST_NEVER, "c-1", "c-1", NULL, -1 },
		{ "no primary named",
		  { { "c-1", -1, true }, { "c-2", 100, false }, { "c-3", -1, false } },
		  300, NULL, NULL, NULL, -1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		int64_t wait = -2;
		const char *got = rc_node_lost_pick(rows[i].v, 3, 1000, rows[i].timeout,
						    rows[i].current, rows[i].target, &wait);
		if ((got == NULL) != (rows[i].pick == NULL) ||
		    (got && strcmp(got, rows[i].pick) != 0) || wait != rows[i].wait)
			fail_msg("%s: got %s wait %lld", rows[i].why, got ? got : "none",
				 (long long)wait);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_affinity_rendering),
		cmocka_unit_test(test_pods_placement),
		cmocka_unit_test(test_placement_hash),
		cmocka_unit_test(test_maintenance_window_decode),
		cmocka_unit_test(test_pdb_decide),
		cmocka_unit_test(test_pdb_objects),
		cmocka_unit_test(test_node_draining),
		cmocka_unit_test(test_drain_decide),
		cmocka_unit_test(test_pod_unschedulable),
		cmocka_unit_test(test_pod_unschedulable_since),
		cmocka_unit_test(test_node_lost_since),
		cmocka_unit_test(test_node_lost_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
