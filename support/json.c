/* support/json.c - json-c helpers (see json.h). */
#include "support/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"

/* json-c accepts NaN and Infinity even in strict mode; JSON (and Kubernetes)
 * does not. Recursion is bounded by the parser's depth limit. */
static bool all_finite(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_double: return isfinite(json_object_get_double(o));
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (!all_finite(json_object_array_get_idx(o, i)))
				return false;
		return true;
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			(void)k;
			if (!all_finite(v))
				return false;
		}
		return true;
	}
	default: return true;
	}
}

int op_json_parse(const char *data, size_t len, int max_depth, json_object **ret,
		  struct op_err *err)
{
	if (len > (size_t)INT32_MAX)
		return op_err_set(err, -EMSGSIZE, "JSON document too large (%zu bytes)", len);
	/* json-c counts the top level as one stack entry: depth N allows N-1
	 * nested containers, so ask for one more to allow max_depth of them. */
	if (max_depth <= 0 || max_depth > 100000)
		max_depth = OP_JSON_MAX_DEPTH;
	json_tokener *tok = json_tokener_new_ex(max_depth + 1);
	if (!tok)
		return op_err_set(err, -ENOMEM, "cannot allocate JSON parser");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	json_object *o = json_tokener_parse_ex(tok, data ? data : "", (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t off = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue && len > 0) {
		/* A bare top-level number ("5") is only complete at end of input:
		 * json-c needs to see a terminator to finish it. */
		o = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (jerr != json_tokener_success)
			off = len;
	}
	json_tokener_free(tok);
	if (jerr == json_tokener_continue) {
		json_object_put(o);
		return op_err_set(err, -EINVAL, "invalid JSON: unexpected end of input");
	}
	if (jerr != json_tokener_success) {
		json_object_put(o);
		return op_err_set(err, -EINVAL, "invalid JSON at offset %zu: %s", off,
				  json_tokener_error_desc(jerr));
	}
	if (!all_finite(o)) {
		json_object_put(o);
		return op_err_set(err, -EINVAL, "invalid JSON: NaN and Infinity are not numbers");
	}
	for (size_t i = off; i < len; i++) {
		if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r' && data[i] != '\n') {
			json_object_put(o);
			return op_err_set(err, -EINVAL,
					  "invalid JSON at offset %zu: trailing data after value", i);
		}
	}
	*ret = o;
	return 0;
}

const char *op_json_type_name(const json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null: return "null";
	case json_type_boolean: return "boolean";
	case json_type_double: return "number";
	case json_type_int: return "integer";
	case json_type_object: return "object";
	case json_type_array: return "array";
	case json_type_string: return "string";
	}
	return "unknown";
}

static int get_typed(json_object *obj, const char *key, const char *path, json_type want,
		     const char *want_name, json_object **ret, struct op_err *err)
{
	json_object *v = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, want))
		return op_err_set(err, -EINVAL, "%s%s%s: expected %s, got %s", path ? path : "",
				  path && *path ? "." : "", key, want_name, op_json_type_name(v));
	*ret = v;
	return 1;
}

int op_json_get_obj(json_object *obj, const char *key, const char *path, json_object **ret,
		    struct op_err *err)
{
	return get_typed(obj, key, path, json_type_object, "object", ret, err);
}

int op_json_get_arr(json_object *obj, const char *key, const char *path, json_object **ret,
		    struct op_err *err)
{
	return get_typed(obj, key, path, json_type_array, "array", ret, err);
}

int op_json_get_str(json_object *obj, const char *key, const char *path, const char **ret,
		    struct op_err *err)
{
	json_object *v = NULL;
	int r = get_typed(obj, key, path, json_type_string, "string", &v, err);
	if (r == 1)
		*ret = json_object_get_string(v);
	return r;
}

int op_json_to_i64(json_object *v, int64_t *ret)
{
	if (json_object_is_type(v, json_type_int)) {
		errno = 0;
		int64_t i = json_object_get_int64(v);
		/* json-c clamps unsigned values past INT64_MAX instead of failing. */
		if (errno == EINVAL || errno == ERANGE ||
		    (i == INT64_MAX && json_object_get_uint64(v) != (uint64_t)INT64_MAX))
			return -ERANGE;
		*ret = i;
		return 1;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (isfinite(d) && d == floor(d) && fabs(d) < 9.0e15) {
			*ret = (int64_t)d;
			return 1;
		}
	}
	return 0;
}

int op_json_get_i64(json_object *obj, const char *key, const char *path, int64_t *ret,
		    struct op_err *err)
{
	json_object *v = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) || !v)
		return 0;
	const char *sep = path && *path ? "." : "";
	int r = op_json_to_i64(v, ret);
	if (r == 1)
		return 1;
	if (r == -ERANGE)
		return op_err_set(err, -EINVAL, "%s%s%s: integer out of range", path ? path : "",
				  sep, key);
	return op_err_set(err, -EINVAL, "%s%s%s: expected integer, got %s", path ? path : "", sep,
			  key, op_json_type_name(v));
}

int op_json_get_bool(json_object *obj, const char *key, const char *path, bool *ret,
		     struct op_err *err)
{
	json_object *v = NULL;
	int r = get_typed(obj, key, path, json_type_boolean, "boolean", &v, err);
	if (r == 1)
		*ret = json_object_get_boolean(v);
	return r;
}

json_object *op_json_at(json_object *root, const char *dotted)
{
	json_object *cur = root;
	const char *p = dotted;
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		_cleanup_free_ char *key = op_strndup(p, n);
		json_object *next = NULL;
		if (!json_object_is_type(cur, json_type_object) ||
		    !json_object_object_get_ex(cur, key, &next))
			return NULL;
		cur = next;
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

static json_object *member(json_object *obj, const char *key)
{
	json_object *v = NULL;
	return obj && json_object_is_type(obj, json_type_object) &&
			       json_object_object_get_ex(obj, key, &v)
		       ? v
		       : NULL;
}

const char *op_json_key_str(json_object *obj, const char *key)
{
	json_object *v = member(obj, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

bool op_json_key_bool(json_object *obj, const char *key)
{
	json_object *v = member(obj, key);
	return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

int op_json_key_i64(json_object *obj, const char *key, int64_t *ret)
{
	json_object *v = member(obj, key);
	return v ? op_json_to_i64(v, ret) : 0;
}

const char *op_json_str_at(json_object *root, const char *dotted)
{
	json_object *v = op_json_at(root, dotted);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int op_json_path_join(struct op_buf *b, const char *path, const char *key)
{
	if (path && *path) {
		int r = op_buf_adds(b, path);
		if (r)
			return r;
		if (key && *key && (r = op_buf_addc(b, '.')))
			return r;
	}
	return key ? op_buf_adds(b, key) : 0;
}

int op_json_pointer_escape(struct op_buf *b, const char *key)
{
	int r = 0;
	const char *p = key;
	while (r == 0 && *p) {
		size_t run = strcspn(p, "~/");
		if (run)
			r = op_buf_add(b, p, run);
		p += run;
		if (r == 0 && *p)
			r = op_buf_add(b, *p == '~' ? "~0" : "~1", 2);
		p += *p != '\0';
	}
	return r;
}

/* The builders' one out-of-memory policy (support/alloc.h): abort. */
static json_object *j_check(json_object *o)
{
	if (!o)
		op_oom(0);
	return o;
}

json_object *op_jstr(const char *s) { return j_check(json_object_new_string(s ? s : "")); }

json_object *op_jstrn(const char *s, size_t len)
{
	if (len > INT_MAX)
		op_oom(0); /* json-c takes an int length; nothing here builds 2 GiB strings */
	return j_check(json_object_new_string_len(s ? s : "", s ? (int)len : 0));
}

json_object *op_jint(int64_t v) { return j_check(json_object_new_int64(v)); }
json_object *op_jbool(bool v) { return j_check(json_object_new_boolean(v)); }
json_object *op_jdouble(double v) { return j_check(json_object_new_double(v)); }
json_object *op_jobj(void) { return j_check(json_object_new_object()); }
json_object *op_jarr(void) { return j_check(json_object_new_array()); }

json_object *op_jstrv(const char *const *v)
{
	json_object *a = op_jarr();
	for (; v && *v; v++)
		op_jpush(a, op_jstr(*v));
	return a;
}

json_object *op_jset(json_object *obj, const char *key, json_object *val)
{
	if (json_object_object_add(obj, key, val) != 0)
		op_oom(0);
	return obj;
}

json_object *op_jsets(json_object *obj, const char *key, const char *s)
{
	return op_jset(obj, key, op_jstr(s));
}

json_object *op_jpush(json_object *arr, json_object *val)
{
	if (json_object_array_add(arr, val) != 0)
		op_oom(0);
	return arr;
}

json_object *op_jchild(json_object *obj, const char *key)
{
	json_object *v = NULL;
	if (json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_object))
		return v;
	v = op_jobj();
	op_jset(obj, key, v);
	return v;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **op_json_sorted_keys(json_object *o, size_t *ret_n)
{
	size_t n = (size_t)json_object_object_length(o), k = 0;
	const char **keys = op_calloc(n ? n : 1, sizeof(*keys));
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	qsort(keys, k, sizeof(*keys), key_cmp);
	*ret_n = k;
	return keys;
}

/* v's members in key order (v an object, borrowed). */
static json_object *sorted_object(json_object *v)
{
	size_t k;
	const char **keys = op_json_sorted_keys(v, &k);
	json_object *o = op_jobj();
	for (size_t i = 0; i < k; i++)
		op_jset(o, keys[i], op_json_sorted(json_object_object_get(v, keys[i])));
	free(keys);
	return o;
}

json_object *op_json_sorted(json_object *v)
{
	if (!v)
		return NULL;
	if (json_object_is_type(v, json_type_object))
		return sorted_object(v);
	if (json_object_is_type(v, json_type_array)) {
		json_object *a = op_jarr();
		for (size_t i = 0; i < json_object_array_length(v); i++)
			op_jpush(a, op_json_sorted(json_object_array_get_idx(v, i)));
		return a;
	}
	json_object *c = NULL;
	if (json_object_deep_copy(v, &c, NULL) != 0)
		op_oom(0);
	return c;
}
