/* openapi/check.c - structural lint of a CRD schema (see oa_schema_check()).
 *
 * Stricter than kube-apiserver's structural-schema rules in three ways, so
 * `kubectl explain` is useful and mistakes show up at build time: every
 * property must carry a description, every node a type (int-or-string
 * excepted), and an object must declare properties, additionalProperties or
 * x-kubernetes-preserve-unknown-fields (otherwise everything is pruned).
 */
#include "openapi/openapi.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"

static const char *const known_keywords[] = {
	"type",
	"description",
	"properties",
	"additionalProperties",
	"items",
	"required",
	"enum",
	"default",
	"format",
	"pattern",
	"minimum",
	"maximum",
	"exclusiveMinimum",
	"exclusiveMaximum",
	"multipleOf",
	"minLength",
	"maxLength",
	"minItems",
	"maxItems",
	"uniqueItems",
	"minProperties",
	"maxProperties",
	"nullable",
	"anyOf",
	"x-kubernetes-preserve-unknown-fields",
	"x-kubernetes-int-or-string",
	"x-kubernetes-embedded-resource",
	"x-kubernetes-list-type",
	"x-kubernetes-list-map-keys",
	"x-kubernetes-map-type",
	"x-kubernetes-validations",
};

static const char *const known_types[] = { "object", "array", "string", "integer", "number",
					   "boolean" };

/* The json-c types a value of a schema type may have. */
static bool value_matches(const char *type, json_object *v)
{
	json_type t = json_object_get_type(v);
	if (strcmp(type, "string") == 0)
		return t == json_type_string;
	if (strcmp(type, "integer") == 0)
		return t == json_type_int;
	if (strcmp(type, "number") == 0)
		return t == json_type_int || t == json_type_double;
	if (strcmp(type, "boolean") == 0)
		return t == json_type_boolean;
	if (strcmp(type, "object") == 0)
		return t == json_type_object;
	if (strcmp(type, "array") == 0)
		return t == json_type_array;
	return false;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool flag(json_object *node, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(node, key, &v) && json_object_get_boolean(v);
}

static int check_node(json_object *node, const char *path, bool is_property, int depth,
		      struct op_err *err);

static int check_validations(json_object *list, const char *path, struct op_err *err)
{
	if (!json_object_is_type(list, json_type_array))
		return op_err_set(err, -EINVAL, "%s: x-kubernetes-validations must be a list", path);
	size_t n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(list, i);
		const char *rule = op_json_str_at(v, "rule");
		const char *msg = op_json_str_at(v, "message");
		if (!rule || !*rule)
			return op_err_set(err, -EINVAL, "%s: x-kubernetes-validations[%zu] has no rule",
					  path, i);
		if (!msg || !*msg)
			return op_err_set(err, -EINVAL,
					  "%s: x-kubernetes-validations[%zu] has no message", path, i);
	}
	return 0;
}

static int check_children(json_object *node, const char *path, const char *type, int depth,
			  struct op_err *err)
{
	int count = 0, r;
	json_object *props = NULL, *addl = NULL, *items = NULL, *req = NULL;
	bool has_props = json_object_object_get_ex(node, "properties", &props);
	bool has_addl = json_object_object_get_ex(node, "additionalProperties", &addl);
	bool has_items = json_object_object_get_ex(node, "items", &items);

	if (has_props && has_addl)
		return op_err_set(err, -EINVAL,
				  "%s: properties and additionalProperties are mutually exclusive",
				  path);
	if ((has_props || has_addl) && strcmp(type, "object") != 0)
		return op_err_set(err, -EINVAL, "%s: properties on a node of type %s", path, type);
	if (has_items != (strcmp(type, "array") == 0))
		return op_err_set(err, -EINVAL, "%s: %s", path,
				  has_items ? "items on a non-array node" : "array without items");
	if (strcmp(type, "object") == 0 && !has_props && !has_addl &&
	    !flag(node, "x-kubernetes-preserve-unknown-fields") &&
	    !(depth == 1 && strcmp(path, "metadata") == 0))
		return op_err_set(err, -EINVAL,
				  "%s: object with neither properties, additionalProperties nor "
				  "x-kubernetes-preserve-unknown-fields",
				  path);
	if (has_props) {
		if (!json_object_is_type(props, json_type_object))
			return op_err_set(err, -EINVAL, "%s: properties must be a mapping", path);
		json_object_object_foreach(props, k, v)
		{
			_cleanup_free_ char *sub = *path ? op_asprintf("%s.%s", path, k) : op_strdup(k);
			r = check_node(v, sub, true, depth + 1, err);
			if (r < 0)
				return r;
			count += r;
		}
	}
	if (has_addl && !json_object_is_type(addl, json_type_boolean)) {
		_cleanup_free_ char *sub = op_asprintf("%s[*]", path);
		r = check_node(addl, sub, false, depth + 1, err);
		if (r < 0)
			return r;
		count += r;
	}
	if (has_items) {
		_cleanup_free_ char *sub = op_asprintf("%s[]", path);
		r = check_node(items, sub, false, depth + 1, err);
		if (r < 0)
			return r;
		count += r;
	}
	if (json_object_object_get_ex(node, "required", &req)) {
		if (!json_object_is_type(req, json_type_array))
			return op_err_set(err, -EINVAL, "%s: required must be a list", path);
		size_t n = json_object_array_length(req);
		for (size_t i = 0; i < n; i++) {
			const char *name = json_object_get_string(json_object_array_get_idx(req, i));
			if (!has_props || !name || !json_object_object_get_ex(props, name, NULL))
				return op_err_set(err, -EINVAL,
						  "%s: required field \"%s\" is not a property", path,
						  name ? name : "?");
		}
	}
	return count;
}

static int check_node(json_object *node, const char *path, bool is_property, int depth,
		      struct op_err *err)
{
	const char *where = *path ? path : "(root)";
	if (depth > OA_MAX_DEPTH)
		return op_err_set(err, -ELOOP, "%s: schema nested too deeply", where);
	if (!json_object_is_type(node, json_type_object))
		return op_err_set(err, -EINVAL, "%s: schema node must be a mapping", where);

	json_object_object_foreach(node, key, val)
	{
		(void)val;
		if (!in_list(key, known_keywords, OP_ARRAY_SIZE(known_keywords)))
			return op_err_set(err, -EINVAL, "%s: unknown schema keyword \"%s\"", where,
					  key);
	}

	/* the root metadata may only say `type: object` (kube-apiserver rule) */
	bool root_metadata = depth == 1 && strcmp(path, "metadata") == 0;
	if (root_metadata && json_object_object_length(node) != 1)
		return op_err_set(err, -EINVAL, "metadata: only `type: object` is allowed");
	const char *desc = op_json_str_at(node, "description");
	if ((is_property || depth == 0) && !root_metadata && (!desc || !*desc))
		return op_err_set(err, -EINVAL, "%s: missing description", where);

	bool int_or_string = flag(node, "x-kubernetes-int-or-string");
	const char *type = op_json_str_at(node, "type");
	if (int_or_string) {
		if (type)
			return op_err_set(err, -EINVAL, "%s: int-or-string must not set type", where);
	} else {
		if (json_object_object_get_ex(node, "anyOf", NULL))
			return op_err_set(err, -EINVAL, "%s: anyOf only with int-or-string", where);
		if (!type)
			return op_err_set(err, -EINVAL, "%s: missing type", where);
		if (!in_list(type, known_types, OP_ARRAY_SIZE(known_types)))
			return op_err_set(err, -EINVAL, "%s: unknown type \"%s\"", where, type);
	}

	json_object *v = NULL;
	if (type && json_object_object_get_ex(node, "enum", &v)) {
		if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0)
			return op_err_set(err, -EINVAL, "%s: enum must be a non-empty list", where);
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!value_matches(type, json_object_array_get_idx(v, i)))
				return op_err_set(err, -EINVAL, "%s: enum[%zu] is not a %s", where, i,
						  type);
	}
	if (type && json_object_object_get_ex(node, "default", &v)) {
		if (!value_matches(type, v))
			return op_err_set(err, -EINVAL, "%s: default is not a %s", where, type);
		json_object *e = NULL;
		if (json_object_object_get_ex(node, "enum", &e)) {
			bool found = false;
			for (size_t i = 0; i < json_object_array_length(e); i++)
				found = found || json_object_equal(v, json_object_array_get_idx(e, i));
			if (!found)
				return op_err_set(err, -EINVAL, "%s: default is not in enum", where);
		}
	}
	if (json_object_object_get_ex(node, "pattern", &v) &&
	    ((!int_or_string && strcmp(type, "string") != 0) ||
	     !json_object_is_type(v, json_type_string)))
		return op_err_set(err, -EINVAL, "%s: pattern only on strings", where);
	if (json_object_object_get_ex(node, "x-kubernetes-validations", &v)) {
		int r = check_validations(v, where, err);
		if (r < 0)
			return r;
	}
	if (int_or_string)
		return 1;
	int r = check_children(node, path, type, depth, err);
	if (r < 0)
		return r;
	return r + 1;
}

int oa_schema_check(json_object *schema, struct op_err *err)
{
	return check_node(schema, "", false, 0, err);
}
