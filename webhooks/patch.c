/* webhooks/patch.c - JSON diff to RFC 6902 patch, and patch application (patch.h). */
#include "webhooks/patch.h"

#include <errno.h>
#include <string.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

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
