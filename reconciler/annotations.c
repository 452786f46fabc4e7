/* reconciler/annotations.c - cnpg.io/podPatch on the instance Pods, and
 * whether a Pod is outdated by it or by the Cluster's placement
 * (annotations.h). Pure: layer 0. */
#include "reconciler/annotations.h"

#include <errno.h>
#include <string.h>

#include "api/annotations.h"
#include "support/alloc.h"
#include "support/hash.h"
#include "support/json.h"
#include "support/jsonpatch.h"

/* Kubernetes caps a Cluster's annotations at 256 KiB in all. */
#define POD_PATCH_MAX_LEN (256u * 1024)

static const char *pod_patch_text(const struct api_cluster *c)
{
	const char *v = api_kvs_get(&c->metadata.annotations, API_ANN_POD_PATCH);
	return v && *v ? v : NULL;
}

char *rc_pod_patch_hash(const struct api_cluster *c)
{
	const char *v = pod_patch_text(c);
	return v ? op_fingerprint(v) : NULL;
}

int rc_pod_patch_apply(const struct api_cluster *c, json_object **pod, struct op_err *err)
{
	const char *v = pod_patch_text(c);
	if (!v)
		return 0;
	json_object *patch = NULL, *out = NULL;
	struct op_err e = OP_ERR_INIT;
	if (op_json_parse(v, strnlen(v, POD_PATCH_MAX_LEN + 1), OP_JSON_MAX_DEPTH, &patch, &e) <
	    0)
		return op_err_set(err, -EINVAL, "metadata.annotations[%s]: %s", API_ANN_POD_PATCH,
				  e.msg);
	int r = op_jsonpatch_apply(*pod, patch, &out, &e);
	json_object_put(patch);
	if (r < 0)
		return op_err_set(err, -EINVAL, "metadata.annotations[%s] does not apply to the "
				  "Pod: %s", API_ANN_POD_PATCH, e.msg);
	json_object *meta = op_json_at(out, "metadata");
	if (!json_object_is_type(meta, json_type_object)) {
		json_object_put(out);
		return op_err_set(err, -EINVAL, "metadata.annotations[%s] removes the Pod's "
				  "metadata", API_ANN_POD_PATCH);
	}
	json_object *ann = NULL;
	if (!json_object_object_get_ex(meta, "annotations", &ann) ||
	    !json_object_is_type(ann, json_type_object)) {
		ann = op_jobj();
		op_jset(meta, "annotations", ann);
	}
	_cleanup_free_ char *h = rc_pod_patch_hash(c);
	op_jsets(ann, RC_ANN_POD_PATCH_HASH, h);
	json_object_put(*pod);
	*pod = out;
	return 0;
}

bool rc_pod_patch_outdated(json_object *pod, const char *cluster_hash)
{
	const char *have = api_obj_annotation(pod, RC_ANN_POD_PATCH_HASH);
	return strcmp(have ? have : "", cluster_hash ? cluster_hash : "") != 0;
}

bool rc_placement_outdated(json_object *pod, const char *cluster_hash)
{
	const char *have = api_obj_annotation(pod, RC_ANN_PLACEMENT_HASH);
	return have && cluster_hash && strcmp(have, cluster_hash) != 0;
}
