/* reconciler/objects_placement.c - where an instance (and its bootstrap Pod)
 * may run, as CloudNativePG renders it (pkg/specs/pods.go,
 * CreateAffinitySection): the generated pod anti-affinity between the
 * Cluster's instances, the user's node affinity, additional pod
 * (anti-)affinity, tolerations, nodeSelector and topologySpreadConstraints
 * (objects.h, rc_pod_placement), and its fingerprint (rc_placement_hash).
 * Pure. */
#include <string.h>

#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/hash.h"
#include "support/json.h"

#define RC_DEFAULT_TOPOLOGY_KEY "kubernetes.io/hostname"

static json_object *copy_of(json_object *v)
{
	json_object *c = NULL;
	if (json_object_deep_copy(v, &c, NULL) != 0)
		op_oom(0);
	return c;
}

static json_object *in_expr(const char *key, const char *value)
{
	json_object *e = op_jobj();
	op_jsets(e, "key", key);
	op_jsets(e, "operator", "In");
	op_jset(e, "values", op_jpush(op_jarr(), op_jstr(value)));
	return e;
}

/* The term matching the Cluster's instance Pods (cnpg.io/cluster and
 * cnpg.io/podRole=instance) over topology_key. */
static json_object *instance_term(const struct api_cluster *c)
{
	const char *key = c->spec.affinity.topology_key && *c->spec.affinity.topology_key
				  ? c->spec.affinity.topology_key
				  : RC_DEFAULT_TOPOLOGY_KEY;
	json_object *exprs = op_jarr();
	op_jpush(exprs, in_expr(RC_LABEL_CLUSTER, c->metadata.name));
	op_jpush(exprs, in_expr(RC_LABEL_POD_ROLE, "instance"));
	json_object *t = op_jobj();
	op_jset(op_jchild(t, "labelSelector"), "matchExpressions", exprs);
	op_jsets(t, "topologyKey", key);
	return t;
}

/* CreateGeneratedAntiAffinity: NULL when enablePodAntiAffinity is false or
 * the type is neither (an unset type is "preferred", admission's D4). */
static json_object *generated_anti_affinity(const struct api_cluster *c)
{
	const struct api_affinity *a = &c->spec.affinity;
	if (!a->enable_pod_anti_affinity)
		return NULL;
	const char *type = a->pod_anti_affinity_type ? a->pod_anti_affinity_type : "preferred";
	json_object *paa = op_jobj();
	if (strcmp(type, "required") == 0) {
		op_jset(paa, "requiredDuringSchedulingIgnoredDuringExecution",
			op_jpush(op_jarr(), instance_term(c)));
	} else if (strcmp(type, "preferred") == 0) {
		json_object *w = op_jobj();
		op_jset(w, "weight", op_jint(100));
		op_jset(w, "podAffinityTerm", instance_term(c));
		op_jset(paa, "preferredDuringSchedulingIgnoredDuringExecution",
			op_jpush(op_jarr(), w));
	} else {
		json_object_put(paa);
		return NULL;
	}
	return paa;
}

/* Appends copies of the elements of src.key (an array, borrowed) to dst.key. */
static void append_terms(json_object *dst, json_object *src, const char *key)
{
	json_object *from = op_json_at(src, key);
	if (!json_object_is_type(from, json_type_array) || !json_object_array_length(from))
		return;
	json_object *to = op_json_at(dst, key);
	if (!to) {
		to = op_jarr();
		op_jset(dst, key, to);
	}
	for (size_t i = 0; i < json_object_array_length(from); i++)
		op_jpush(to, copy_of(json_object_array_get_idx(from, i)));
}

json_object *rc_build_affinity(const struct api_cluster *c)
{
	const struct api_affinity *a = &c->spec.affinity;
	json_object *paa = generated_anti_affinity(c);
	if (!paa && !a->additional_pod_affinity && !a->additional_pod_anti_affinity &&
	    !a->node_affinity)
		return NULL;
	json_object *aff = op_jobj();
	if (a->additional_pod_affinity)
		op_jset(aff, "podAffinity", copy_of(a->additional_pod_affinity));
	if (a->additional_pod_anti_affinity) {
		if (!paa)
			paa = op_jobj();
		append_terms(paa, a->additional_pod_anti_affinity,
			     "requiredDuringSchedulingIgnoredDuringExecution");
		append_terms(paa, a->additional_pod_anti_affinity,
			     "preferredDuringSchedulingIgnoredDuringExecution");
	}
	if (paa)
		op_jset(aff, "podAntiAffinity", paa);
	if (a->node_affinity)
		op_jset(aff, "nodeAffinity", copy_of(a->node_affinity));
	return aff;
}

void rc_pod_placement(const struct api_cluster *c, json_object *spec)
{
	const struct api_affinity *a = &c->spec.affinity;
	json_object *aff = rc_build_affinity(c);
	if (aff)
		op_jset(spec, "affinity", aff);
	if (a->tolerations && json_object_array_length(a->tolerations))
		op_jset(spec, "tolerations", copy_of(a->tolerations));
	if (a->node_selector.n)
		op_jset(spec, "nodeSelector", rc_kvs_object(&a->node_selector));
	json_object *tsc = c->spec.topology_spread_constraints;
	if (tsc && json_object_array_length(tsc))
		op_jset(spec, "topologySpreadConstraints", copy_of(tsc));
}

char *rc_placement_hash(const struct api_cluster *c)
{
	json_object *spec = op_jobj();
	rc_pod_placement(c, spec);
	/* canonical: the copies of the Cluster's JSON keep the order its
	 * members came in, which says nothing about the placement */
	json_object *canon = op_json_sorted(spec);
	char *h = op_fingerprint(json_object_to_json_string_ext(
		canon, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(canon);
	json_object_put(spec);
	return h;
}
