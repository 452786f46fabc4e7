/* api/placement.c - where the instances run: spec.affinity (its Kubernetes
 * core types kept as JSON copies, passed through to the Pods as CloudNativePG
 * does) and spec.nodeMaintenanceWindow (api/cluster.h). */
#include <stdlib.h>

#include "api/cluster.h"
#include "api/decode.h"
#include "support/alloc.h"
#include "support/json.h"

json_object *api_dec_copy(struct api_dec *d, json_object *obj, const char *path, const char *key,
			  json_type t)
{
	json_object *v = t == json_type_array ? api_dec_arr(d, obj, path, key)
						: api_dec_obj(d, obj, path, key);
	json_object *copy = NULL;
	if (v && json_object_deep_copy(v, &copy, NULL) != 0)
		op_oom(0);
	return copy;
}

/* A copy replaces (and releases) what *slot held. */
static void set_copy(json_object **slot, json_object *copy)
{
	if (*slot)
		json_object_put(*slot);
	*slot = copy;
}

void api_dec_affinity(struct api_dec *d, json_object *o, const char *p, struct api_affinity *a)
{
	BOOL(o, p, "enablePodAntiAffinity", &a->enable_pod_anti_affinity);
	STR(o, p, "podAntiAffinityType", &a->pod_anti_affinity_type);
	STR(o, p, "topologyKey", &a->topology_key);
	api_dec_kvs(d, o, p, "nodeSelector", &a->node_selector, false);
	set_copy(&a->tolerations, api_dec_copy(d, o, p, "tolerations", json_type_array));
	set_copy(&a->node_affinity, api_dec_copy(d, o, p, "nodeAffinity", json_type_object));
	set_copy(&a->additional_pod_affinity,
		 api_dec_copy(d, o, p, "additionalPodAffinity", json_type_object));
	set_copy(&a->additional_pod_anti_affinity,
		 api_dec_copy(d, o, p, "additionalPodAntiAffinity", json_type_object));
}

void api_affinity_done(struct api_affinity *a)
{
	free(a->pod_anti_affinity_type);
	free(a->topology_key);
	api_kvs_done(&a->node_selector);
	set_copy(&a->tolerations, NULL);
	set_copy(&a->node_affinity, NULL);
	set_copy(&a->additional_pod_affinity, NULL);
	set_copy(&a->additional_pod_anti_affinity, NULL);
}

void api_dec_node_maintenance(struct api_dec *d, json_object *o, const char *p,
			      struct api_node_maintenance *m)
{
	m->present = true;
	BOOL(o, p, "inProgress", &m->in_progress);
	BOOL(o, p, "reusePVC", &m->reuse_pvc);
}

bool api_cluster_maintenance_in_progress(const struct api_cluster *c)
{
	return c && c->spec.node_maintenance.present && c->spec.node_maintenance.in_progress;
}

bool api_cluster_reuse_pvc(const struct api_cluster *c)
{
	return !c || !c->spec.node_maintenance.present || c->spec.node_maintenance.reuse_pvc;
}
