/* webhooks/lookup.c - typed lookups and Cluster facts (lookup.h). */
#include "webhooks/lookup.h"

#include <string.h>

#include "api/cluster.h"
#include "support/alloc.h"
#include "support/json.h"

json_object *wh_at(json_object *root, const char *dotted)
{
	json_object *v = op_json_at(root, dotted);
	return v && !json_object_is_type(v, json_type_null) ? v : NULL;
}

bool wh_has(json_object *root, const char *dotted)
{
	return wh_at(root, dotted) != NULL;
}

json_object *wh_obj(json_object *root, const char *dotted)
{
	json_object *v = wh_at(root, dotted);
	return v && json_object_is_type(v, json_type_object) ? v : NULL;
}

json_object *wh_arr(json_object *root, const char *dotted)
{
	json_object *v = wh_at(root, dotted);
	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

const char *wh_str(json_object *root, const char *dotted)
{
	json_object *v = wh_at(root, dotted);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

const char *wh_nstr(json_object *root, const char *dotted)
{
	const char *s = wh_str(root, dotted);
	return s && *s ? s : NULL;
}

bool wh_i64(json_object *root, const char *dotted, int64_t *ret)
{
	return op_json_to_i64(wh_at(root, dotted), ret) == 1;
}

bool wh_bool(json_object *root, const char *dotted, bool *ret)
{
	json_object *v = wh_at(root, dotted);
	if (!v || !json_object_is_type(v, json_type_boolean))
		return false;
	*ret = json_object_get_boolean(v);
	return true;
}

size_t wh_len(json_object *root, const char *dotted)
{
	json_object *a = wh_arr(root, dotted);
	return a ? json_object_array_length(a) : 0;
}

bool wh_arr_has_str(json_object *root, const char *dotted, const char *s)
{
	json_object *a = wh_arr(root, dotted);
	size_t n = a ? json_object_array_length(a) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		if (e && json_object_is_type(e, json_type_string) &&
		    strcmp(json_object_get_string(e), s) == 0)
			return true;
	}
	return false;
}

bool wh_cluster_major(json_object *cluster, int *ret_major)
{
	if (wh_obj(cluster, "spec.imageCatalogRef")) {
		int64_t m = 0;
		if (!wh_i64(cluster, "spec.imageCatalogRef.major", &m) || m <= 0 || m >= 100000)
			return false;
		*ret_major = (int)m;
		return true;
	}
	const char *img = wh_nstr(cluster, "spec.imageName");
	return img && api_image_major_version(img, ret_major, NULL) == 0;
}

bool wh_cluster_is_replica(json_object *cluster)
{
	json_object *r = wh_obj(cluster, "spec.replica");
	if (!r)
		return false;
	bool enabled;
	if (wh_bool(r, "enabled", &enabled))
		return enabled;
	const char *self = wh_nstr(r, "self");
	if (!self)
		self = wh_str(cluster, "metadata.name");
	const char *primary = wh_str(r, "primary");
	return strcmp(primary ? primary : "", self ? self : "") != 0;
}

const char *wh_cluster_annotation(json_object *cluster, const char *key)
{
	json_object *ann = wh_obj(cluster, "metadata.annotations");
	json_object *v = NULL;
	if (!ann || !json_object_object_get_ex(ann, key, &v) || !v ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool wh_parse_go_bool(const char *s, bool *ret)
{
	static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False" };
	if (!s)
		return false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++) {
		if (strcmp(s, t[i]) == 0) {
			*ret = true;
			return true;
		}
		if (strcmp(s, f[i]) == 0) {
			*ret = false;
			return true;
		}
	}
	return false;
}
