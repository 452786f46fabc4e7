/* webhooks/clusterinfo.c - read-only Cluster facts (clusterinfo.h). */
#include "webhooks/clusterinfo.h"

#include <string.h>

#include "api/cluster.h"
#include "support/json.h"

static json_object *typed(json_object *root, const char *dotted, json_type t)
{
	json_object *v = op_json_at(root, dotted);
	return v && json_object_is_type(v, t) ? v : NULL;
}

json_object *wh_ci_obj(json_object *root, const char *dotted)
{
	return typed(root, dotted, json_type_object);
}

json_object *wh_ci_arr(json_object *root, const char *dotted)
{
	return typed(root, dotted, json_type_array);
}

const char *wh_ci_str(json_object *root, const char *dotted)
{
	json_object *v = typed(root, dotted, json_type_string);
	return v ? json_object_get_string(v) : NULL;
}

bool wh_ci_i64(json_object *root, const char *dotted, int64_t *ret)
{
	json_object *v = typed(root, dotted, json_type_int);
	if (!v)
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

bool wh_ci_bool(json_object *root, const char *dotted, bool *ret)
{
	json_object *v = typed(root, dotted, json_type_boolean);
	if (!v)
		return false;
	*ret = json_object_get_boolean(v);
	return true;
}

bool wh_ci_has(json_object *root, const char *dotted)
{
	return op_json_at(root, dotted) != NULL;
}

bool wh_ci_major(json_object *cluster, int *ret_major)
{
	if (wh_ci_obj(cluster, "spec.imageCatalogRef")) {
		int64_t m = 0;
		if (!wh_ci_i64(cluster, "spec.imageCatalogRef.major", &m) || m <= 0 || m > 100000)
			return false;
		*ret_major = (int)m;
		return true;
	}
	const char *img = wh_ci_str(cluster, "spec.imageName");
	return img && api_image_major_version(img, ret_major, NULL) == 0;
}

bool wh_ci_is_replica(json_object *cluster)
{
	json_object *r = wh_ci_obj(cluster, "spec.replica");
	if (!r)
		return false;
	bool enabled;
	if (wh_ci_bool(r, "enabled", &enabled))
		return enabled;
	const char *self = wh_ci_str(r, "self");
	if (!self || !*self)
		self = wh_ci_str(cluster, "metadata.name");
	const char *primary = wh_ci_str(r, "primary");
	return strcmp(self ? self : "", primary ? primary : "") != 0;
}

const char *wh_ci_annotation(json_object *cluster, const char *key)
{
	json_object *a = wh_ci_obj(cluster, "metadata.annotations"), *v = NULL;
	if (!a || !json_object_object_get_ex(a, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

bool wh_ci_parse_go_bool(const char *s, bool *ret)
{
	static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False" };
	if (!s)
		return false;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
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
