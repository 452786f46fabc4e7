/* api/annotations.c - CloudNativePG's Cluster annotations (annotations.h). */
#include "api/annotations.h"

#include <string.h>

#include "support/json.h"

/* Annotations are capped at 256 KiB in all by the API server; the list of a
 * Cluster's instances is far smaller. */
#define FENCED_MAX_LEN (64u * 1024)

bool api_fenced(const struct api_kvs *annotations, const char *pod)
{
	const char *v = annotations ? api_kvs_get(annotations, API_ANN_FENCED_INSTANCES) : NULL;
	if (!v || !*v || !pod)
		return false;
	json_object *list = NULL;
	if (op_json_parse(v, strnlen(v, FENCED_MAX_LEN + 1), 4, &list, NULL) < 0)
		return false;
	bool fenced = false, valid = json_object_is_type(list, json_type_array);
	size_t n = valid ? json_object_array_length(list) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(list, i);
		if (!json_object_is_type(e, json_type_string)) {
			valid = false;
			break;
		}
		const char *s = json_object_get_string(e);
		fenced |= strcmp(s, API_FENCE_ALL) == 0 || strcmp(s, pod) == 0;
	}
	json_object_put(list);
	return valid && fenced;
}

bool api_hibernation_on(const struct api_kvs *annotations)
{
	const char *v = annotations ? api_kvs_get(annotations, API_ANN_HIBERNATION) : NULL;
	return v && strcmp(v, "on") == 0;
}

const char *api_obj_annotation(json_object *obj, const char *key)
{
	json_object *ann = NULL, *meta = NULL, *v = NULL;
	if (!json_object_object_get_ex(obj, "metadata", &meta) ||
	    !json_object_object_get_ex(meta, "annotations", &ann) ||
	    !json_object_object_get_ex(ann, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool api_reconciliation_disabled(json_object *cluster_obj)
{
	const char *v = api_obj_annotation(cluster_obj, API_ANN_RECONCILIATION_LOOP);
	return v && strcmp(v, "disabled") == 0;
}
