/* webhooks/patch.c - JSON diff to RFC 6902 patch, and patch application (patch.h). */
#include "webhooks/patch.h"

#include <errno.h>
#include <string.h>

#include "support/alloc.h"
#include "support/buf.h"
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

/* The diff writes the patch as text, exactly as json-c prints the array of
 * operation objects with JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE
 * (what admission used to build and print): no intermediate objects, no value
 * copies, one path buffer for the whole walk. */
struct emit {
	struct op_buf *out;  /* borrowed: the patch text */
	struct op_buf path;  /* owned: JSON Pointer of the node being diffed */
	size_t n_ops;
};

/* s[0..n) as a JSON string the way json-c 0.16 escapes it with
 * NOSLASHESCAPE (\b \f \n \r \t \" \\, other bytes below 0x20 as \u00xx,
 * everything else raw). */
static int add_json_c_str(struct op_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	int r = op_buf_addc(b, '"');
	size_t run = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		size_t el = 2;
		switch (c) {
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		default:
			if (c >= 0x20)
				continue;
			esc = u;
			el = sizeof(u);
		}
		if (i > run)
			r = op_buf_add(b, s + run, i - run);
		if (r == 0)
			r = op_buf_add(b, esc, el);
		run = i + 1;
	}
	if (r == 0 && n > run)
		r = op_buf_add(b, s + run, n - run);
	return r ? r : op_buf_addc(b, '"');
}

/* Appends {"op":op,"path":<path>[,"value":value]} to the patch. */
static int add_op(struct emit *e, const char *op, json_object *value, bool with_value)
{
	int r = op_buf_adds(e->out, e->n_ops ? ",{\"op\":\"" : "{\"op\":\"");
	if (r == 0)
		r = op_buf_adds(e->out, op);
	if (r == 0)
		r = op_buf_adds(e->out, "\",\"path\":");
	if (r == 0)
		r = add_json_c_str(e->out, e->path.data ? e->path.data : "", e->path.len);
	if (r == 0 && with_value) {
		size_t n = 0;
		const char *txt = json_object_to_json_string_length(
			value, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
		if (!txt)
			return -ENOMEM;
		r = op_buf_adds(e->out, ",\"value\":");
		if (r == 0)
			r = op_buf_add(e->out, txt, n);
	}
	if (r == 0)
		r = op_buf_addc(e->out, '}');
	e->n_ops += r == 0;
	return r;
}

static bool same_type(json_object *a, json_object *b)
{
	return json_object_get_type(a) == json_object_get_type(b);
}

static int diff(json_object *from, json_object *to, struct emit *e);

/* Diffs member key of two objects: e->path gets "/key" for the call. */
static int diff_member(const char *key, json_object *from, json_object *to, bool added,
		       struct emit *e)
{
	size_t at = e->path.len;
	int r = op_buf_addc(&e->path, '/');
	if (r == 0)
		r = op_json_pointer_escape(&e->path, key);
	if (r == 0)
		r = added ? add_op(e, "add", to, true)
		    : to  ? diff(from, to, e)
			  : add_op(e, "remove", NULL, false);
	op_buf_truncate(&e->path, at);
	return r;
}

static int diff(json_object *from, json_object *to, struct emit *e)
{
	if (from == to) /* shared (the defaults left it alone) */
		return 0;
	if (!from || !to || !same_type(from, to) || !json_object_is_type(from, json_type_object)) {
		if (json_object_equal(from, to))
			return 0;
		return add_op(e, "replace", to, true);
	}
	int r;
	json_object_object_foreach(from, k1, v1)
	{
		if (json_object_object_get_ex(to, k1, NULL))
			continue;
		if ((r = diff_member(k1, v1, NULL, false, e)) < 0)
			return r;
	}
	json_object_object_foreach(to, k2, v2)
	{
		json_object *old = NULL;
		bool added = !json_object_object_get_ex(from, k2, &old);
		if ((r = diff_member(k2, old, v2, added, e)) < 0)
			return r;
	}
	return 0;
}

int wh_patch_diff_text(json_object *from, json_object *to, struct op_buf *out, size_t *ret_n_ops,
		       struct op_err *err)
{
	struct emit e = { .out = out, .path = OP_BUF_INIT(OP_BUF_MAX_SMALL) };
	int r = op_buf_addc(out, '[');
	if (r == 0)
		r = diff(from, to, &e);
	if (r == 0)
		r = op_buf_addc(out, ']');
	op_buf_done(&e.path);
	if (r < 0)
		return op_err_set(err, r, "cannot build patch (%s)",
				  r == -EMSGSIZE ? "too large" : "out of memory");
	if (ret_n_ops)
		*ret_n_ops = e.n_ops;
	return 0;
}

int wh_patch_diff(json_object *from, json_object *to, json_object **ret_patch, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf txt = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	int r = wh_patch_diff_text(from, to, &txt, NULL, err);
	if (r < 0)
		return r;
	/* values nest at most OP_JSON_MAX_DEPTH deep, the array and op add two */
	r = op_json_parse(op_buf_str(&txt), txt.len, OP_JSON_MAX_DEPTH + 2, ret_patch, err);
	return r < 0 ? op_err_set(err, -ENOMEM, "cannot build patch") : 0;
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

int wh_patch_apply(json_object *doc, json_object *patch, json_object **ret_doc, struct op_err *err)
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
