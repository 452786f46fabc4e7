/* support/jsonpatch.c - RFC 6902 JSON Patch application (jsonpatch.h). */
#include "support/jsonpatch.h"

#include <errno.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"

static json_object *copy_of(json_object *v)
{
	json_object *c = NULL;
	if (!v)
		return NULL;
	if (json_object_deep_copy(v, &c, NULL) != 0)
		op_oom(0);
	return c;
}

/* ---- apply ---- */

/* Unescapes one reference token (RFC 6901). Owned result, NULL on a bad escape. */
static char *unescape_token(const char *s, size_t n)
{
	char *out = op_malloc(n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '~') {
			out[o++] = s[i];
			continue;
		}
		if (i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1')) {
			out[o++] = s[i + 1] == '0' ? '~' : '/';
			i++;
			continue;
		}
		free(out);
		return NULL;
	}
	out[o] = '\0';
	return out;
}

/* Array index token: "0", "12" (no leading zeros), or "-" when dash_ok. */
static int array_index(const char *tok, size_t len, bool dash_ok, size_t *ret)
{
	if (dash_ok && strcmp(tok, "-") == 0) {
		*ret = len;
		return 0;
	}
	if (!*tok || (tok[0] == '0' && tok[1]) )
		return -EINVAL;
	size_t v = 0;
	for (const char *p = tok; *p; p++) {
		if (*p < '0' || *p > '9' || v > 100000000)
			return -EINVAL;
		v = v * 10 + (size_t)(*p - '0');
	}
	*ret = v;
	return 0;
}

/* Resolves path to (parent, last token). The root ("") has no parent. */
static int resolve_parent(json_object *doc, const char *path, json_object **ret_parent,
			  char **ret_tok)
{
	if (*path != '/')
		return -EINVAL;
	json_object *cur = doc;
	const char *p = path + 1;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		char *tok = unescape_token(p, n);
		if (!tok)
			return -EINVAL;
		if (!slash) {
			*ret_parent = cur;
			*ret_tok = tok;
			return 0;
		}
		json_object *next = NULL;
		if (json_object_is_type(cur, json_type_object)) {
			if (!json_object_object_get_ex(cur, tok, &next) || !next) {
				free(tok);
				return -ENOENT;
			}
		} else if (json_object_is_type(cur, json_type_array)) {
			size_t idx;
			if (array_index(tok, 0, false, &idx) < 0 ||
			    idx >= json_object_array_length(cur)) {
				free(tok);
				return -ENOENT;
			}
			next = json_object_array_get_idx(cur, idx);
		} else {
			free(tok);
			return -ENOENT;
		}
		free(tok);
		cur = next;
		p = slash + 1;
	}
}

/* Borrowed value at path, or NULL. */
static json_object *get_at(json_object *doc, const char *path)
{
	if (!*path)
		return doc;
	json_object *parent = NULL;
	char *tok = NULL;
	if (resolve_parent(doc, path, &parent, &tok) < 0)
		return NULL;
	json_object *v = NULL;
	if (json_object_is_type(parent, json_type_object)) {
		json_object_object_get_ex(parent, tok, &v);
	} else if (json_object_is_type(parent, json_type_array)) {
		size_t idx;
		if (array_index(tok, 0, false, &idx) == 0 &&
		    idx < json_object_array_length(parent))
			v = json_object_array_get_idx(parent, idx);
	}
	free(tok);
	return v;
}

/* Removes and returns (owned) the value at path. */
static int remove_at(json_object *doc, const char *path, json_object **ret_val)
{
	json_object *parent = NULL;
	_cleanup_free_ char *tok = NULL;
	int r = resolve_parent(doc, path, &parent, &tok);
	if (r < 0)
		return r;
	json_object *v = NULL;
	if (json_object_is_type(parent, json_type_object)) {
		if (!json_object_object_get_ex(parent, tok, &v))
			return -ENOENT;
		v = json_object_get(v);
		json_object_object_del(parent, tok);
	} else if (json_object_is_type(parent, json_type_array)) {
		size_t idx;
		if (array_index(tok, 0, false, &idx) < 0 || idx >= json_object_array_length(parent))
			return -ENOENT;
		v = json_object_get(json_object_array_get_idx(parent, idx));
		json_object_array_del_idx(parent, idx, 1);
	} else {
		return -ENOENT;
	}
	if (ret_val)
		*ret_val = v;
	else
		json_object_put(v);
	return 0;
}

/* Inserts val (ownership taken) before index idx < length (json-c 0.16 has no insert). */
static void array_insert(json_object *arr, size_t idx, json_object *val)
{
	size_t len = json_object_array_length(arr);
	json_object **tail = op_calloc(len - idx, sizeof(*tail));
	for (size_t i = idx; i < len; i++)
		tail[i - idx] = json_object_get(json_object_array_get_idx(arr, i));
	json_object_array_del_idx(arr, idx, len - idx);
	op_jpush(arr, val);
	for (size_t i = 0; i < len - idx; i++)
		op_jpush(arr, tail[i]);
	free(tail);
}

/* Adds val (ownership taken) at path; replace_only requires the target to exist. */
static int add_at(json_object **doc, const char *path, json_object *val, bool replace_only)
{
	if (!*path) {
		json_object_put(*doc);
		*doc = val;
		return 0;
	}
	json_object *parent = NULL;
	_cleanup_free_ char *tok = NULL;
	int r = resolve_parent(*doc, path, &parent, &tok);
	if (r < 0) {
		json_object_put(val);
		return r;
	}
	if (json_object_is_type(parent, json_type_object)) {
		if (replace_only && !json_object_object_get_ex(parent, tok, NULL)) {
			json_object_put(val);
			return -ENOENT;
		}
		op_jset(parent, tok, val);
		return 0;
	}
	if (json_object_is_type(parent, json_type_array)) {
		size_t len = json_object_array_length(parent), idx;
		if (array_index(tok, len, !replace_only, &idx) < 0 || idx > len ||
		    (replace_only && idx >= len)) {
			json_object_put(val);
			return -ENOENT;
		}
		if (replace_only)
			return json_object_array_put_idx(parent, idx, val) == 0 ? 0 : -ENOMEM;
		if (idx == len)
			op_jpush(parent, val);
		else
			array_insert(parent, idx, val);
		return 0;
	}
	json_object_put(val);
	return -ENOENT;
}

static int apply_one(json_object **doc, json_object *op, size_t i, struct op_err *err)
{
	const char *name = NULL, *path = NULL, *from = NULL;
	json_object *value = NULL;
	if (!json_object_is_type(op, json_type_object) ||
	    op_json_get_str(op, "op", "", &name, NULL) != 1 ||
	    op_json_get_str(op, "path", "", &path, NULL) != 1)
		return op_err_set(err, -EINVAL, "patch operation %zu: needs string op and path", i);
	bool has_value = json_object_object_get_ex(op, "value", &value);
	if (op_json_get_str(op, "from", "", &from, NULL) < 0)
		from = NULL; /* not a string: as absent (the ops that need it say so) */
	int r;
	if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
		if (!has_value)
			return op_err_set(err, -EINVAL, "patch operation %zu (%s %s): missing value",
					  i, name, path);
		r = add_at(doc, path, copy_of(value), name[0] == 'r');
	} else if (strcmp(name, "remove") == 0) {
		r = *path ? remove_at(*doc, path, NULL) : -EINVAL;
	} else if (strcmp(name, "test") == 0) {
		json_object *cur = get_at(*doc, path);
		r = (cur || !value) && json_object_equal(cur, value) ? 0 : -EINVAL;
		if (r == 0 && !cur && !json_object_object_get_ex(op, "value", NULL))
			r = -EINVAL;
	} else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
		if (!from)
			return op_err_set(err, -EINVAL, "patch operation %zu (%s %s): missing from",
					  i, name, path);
		json_object *v = NULL;
		if (name[0] == 'm') {
			size_t fl = strlen(from);
			if (strncmp(path, from, fl) == 0 && path[fl] == '/')
				return op_err_set(err, -EINVAL,
						  "patch operation %zu: cannot move into a child", i);
			r = *from ? remove_at(*doc, from, &v) : -EINVAL;
		} else {
			json_object *src = get_at(*doc, from);
			r = src ? 0 : -ENOENT;
			v = copy_of(src);
		}
		if (r == 0)
			r = add_at(doc, path, v, false);
	} else {
		return op_err_set(err, -EINVAL, "patch operation %zu: unknown op '%s'", i, name);
	}
	if (r < 0)
		return op_err_set(err, -EINVAL, "patch operation %zu (%s %s) does not apply", i,
				  name, path);
	return 0;
}

int op_jsonpatch_apply(json_object *doc, json_object *patch, json_object **ret_doc, struct op_err *err)
{
	if (!json_object_is_type(patch, json_type_array))
		return op_err_set(err, -EINVAL, "patch: expected array, got %s",
				  op_json_type_name(patch));
	json_object *out = copy_of(doc);
	size_t n = json_object_array_length(patch);
	for (size_t i = 0; i < n; i++) {
		int r = apply_one(&out, json_object_array_get_idx(patch, i), i, err);
		if (r < 0) {
			json_object_put(out);
			return r;
		}
	}
	*ret_doc = out;
	return 0;
}
