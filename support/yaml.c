/* support/yaml.c - YAML to json-c with libyaml events (see yaml.h).
 *
 * The parser is event driven: collections are built on an explicit stack
 * (so nesting is checked as soon as it happens, before any deep structure is
 * built), and anchors are kept per document in a json-c map from anchor name
 * to the finished value. An alias is a deep copy of that value, charged
 * against the node, byte and depth budgets before it is made.
 */
#include "support/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "support/alloc.h"
#include "support/base64.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/yaml_internal.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

struct frame {
	json_object *obj;  /* owned: the collection being built */
	char *anchor;      /* owned or NULL: registered when the collection ends */
	char *key;         /* owned: pending key of a mapping */
	json_object *seen; /* owned or NULL: keys written so far (strict mode only) */
	yaml_mark_t mark;  /* where the collection starts */
	bool is_map;
	bool have_key;     /* a key was read, its value is next */
	bool merge;        /* the pending key is the merge key "<<" */
};

struct ctx {
	struct op_yaml_limits lim;
	struct frame *stack; /* owned */
	unsigned depth, cap;
	json_object *anchors; /* owned: name -> value (one reference each) */
	json_object *docs;    /* owned: the result */
	json_object *root;    /* owned: root of the current document */
	size_t nodes;         /* nodes so far, aliases expanded */
	size_t alias_bytes;   /* scalar bytes added by alias copies */
	struct op_err *err;
};

static int fail_at(struct ctx *c, const yaml_mark_t *m, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail_at(struct ctx *c, const yaml_mark_t *m, int code, const char *fmt, ...)
{
	char msg[OP_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return op_err_set(c->err, code, "line %zu, column %zu: %s", m->line + 1, m->column + 1,
			  msg);
}

static void limits_resolve(struct op_yaml_limits *out, const struct op_yaml_limits *in)
{
	*out = in ? *in : (struct op_yaml_limits){ 0 };
	if (!out->max_bytes)
		out->max_bytes = OP_YAML_DEFAULT_MAX_BYTES;
	if (!out->max_depth)
		out->max_depth = OP_YAML_DEFAULT_MAX_DEPTH;
	if (!out->max_nodes)
		out->max_nodes = OP_YAML_DEFAULT_MAX_NODES;
}

static int count_node(struct ctx *c, const yaml_mark_t *m)
{
	if (c->nodes >= c->lim.max_nodes)
		return fail_at(c, m, -EMSGSIZE, "document has more than %zu nodes",
			       c->lim.max_nodes);
	c->nodes++;
	return 0;
}

/* ---- keys ---------------------------------------------------------------- */

/* The JSON key for a resolved key value, as sigs.k8s.io/yaml prints it. */
static int key_string(struct ctx *c, json_object *v, const yaml_mark_t *m, char **ret)
{
	char fbuf[OP_YAML_FLOAT_KEY_MAX];
	switch (json_object_get_type(v)) {
	case json_type_string: {
		const char *s = json_object_get_string(v);
		if (strlen(s) != (size_t)json_object_get_string_len(v))
			return fail_at(c, m, -EINVAL, "mapping key contains a NUL character");
		*ret = op_strdup(s);
		return 0;
	}
	case json_type_int:
	case json_type_boolean:
		*ret = op_strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		return 0;
	case json_type_double:
		op_yaml_format_float_key(json_object_get_double(v), fbuf);
		*ret = op_strdup(fbuf);
		return 0;
	case json_type_null:
		return fail_at(c, m, -EINVAL, "null mapping keys are not supported");
	case json_type_object:
	case json_type_array: break;
	}
	return fail_at(c, m, -EINVAL, "mapping keys must be scalars, got %s",
		       op_json_type_name(v));
}

/* ---- attaching finished values --------------------------------------------- */

/* go-yaml v2 merge: keys of the merged map(s) are set in order, so later
 * explicit keys win; in a list, earlier maps win (applied last). */
static int merge_into(struct ctx *c, json_object *dst, json_object *src, const yaml_mark_t *m)
{
	if (json_object_is_type(src, json_type_object)) {
		json_object_object_foreach(src, k, v)
		{
			op_jset(dst, k, json_object_get(v));
		}
		return 0;
	}
	if (json_object_is_type(src, json_type_array)) {
		size_t n = json_object_array_length(src);
		for (size_t i = 0; i < n; i++)
			if (!json_object_is_type(json_object_array_get_idx(src, i), json_type_object))
				goto bad;
		for (size_t i = n; i-- > 0;) {
			int r = merge_into(c, dst, json_object_array_get_idx(src, i), m);
			if (r < 0)
				return r;
		}
		return 0;
	}
bad:
	return fail_at(c, m, -EINVAL,
		       "map merge requires map or sequence of maps as the value");
}

/* Takes ownership of v (a finished node) and attaches it where it belongs. */
static int deliver(struct ctx *c, json_object *v, const yaml_mark_t *m)
{
	struct frame *f = c->depth ? &c->stack[c->depth - 1] : NULL;
	bool as_key = f && f->is_map && !f->have_key;
	if (!as_key && json_object_is_type(v, json_type_double) &&
	    !isfinite(json_object_get_double(v))) {
		json_object_put(v);
		return fail_at(c, m, -EINVAL, "infinity and NaN cannot be represented in JSON");
	}
	if (!f) {
		json_object_put(c->root);
		c->root = v;
		return 0;
	}
	if (!f->is_map) {
		op_jpush(f->obj, v);
		return 0;
	}
	if (as_key) {
		int r = key_string(c, v, m, &f->key);
		json_object_put(v);
		if (r < 0)
			return r;
		f->have_key = true;
		return 0;
	}
	f->have_key = false;
	if (f->merge) {
		f->merge = false;
		int r = merge_into(c, f->obj, v, m);
		json_object_put(v);
		return r;
	}
	_cleanup_free_ char *key = TAKE_PTR(f->key);
	if (f->seen) {
		if (json_object_object_get_ex(f->seen, key, NULL)) {
			json_object_put(v);
			return fail_at(c, m, -EINVAL, "duplicate key \"%.64s\"", key);
		}
		op_jset(f->seen, key, NULL);
	}
	/* Duplicate keys: the last value wins (json-c replaces in place). */
	op_jset(f->obj, key, v);
	return 0;
}

static int anchor_register(struct ctx *c, const char *name, json_object *v)
{
	op_jset(c->anchors, name, json_object_get(v));
	return 0;
}

/* ---- scalars --------------------------------------------------------------- */

static json_object *json_from_resolved(const struct op_yaml_scalar *r, const char *s, size_t n)
{
	switch (r->kind) {
	case OP_YAML_NULL: return NULL;
	case OP_YAML_BOOL: return op_jbool(r->b);
	case OP_YAML_INT: return op_jint(r->i);
	case OP_YAML_UINT: return json_object_new_uint64(r->u);
	case OP_YAML_FLOAT: {
		char text[OP_YAML_FLOAT_TEXT_MAX];
		op_yaml_format_float_json(r->d, text);
		return json_object_new_double_s(r->d, text);
	}
	case OP_YAML_STR: break;
	}
	return op_jstrn(s, n);
}

static bool looks_like_timestamp(const char *s, size_t n)
{
	return n > 4 && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' &&
	       s[2] >= '0' && s[2] <= '9' && s[3] >= '0' && s[3] <= '9' && s[4] == '-';
}

/* The value of a scalar event (NULL for null). */
static int scalar_value(struct ctx *c, const yaml_event_t *ev, json_object **ret)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	const yaml_mark_t *m = &ev->start_mark;
	struct op_yaml_scalar r = { .kind = OP_YAML_STR };
	if (n > (size_t)INT32_MAX)
		return fail_at(c, m, -EMSGSIZE, "scalar too large");

	if (!tag) {
		if (ev->data.scalar.plain_implicit)
			op_yaml_resolve_plain(s, n, &r);
	} else if (strcmp(tag, TAG_PREFIX "binary") == 0) {
		_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(n);
		struct op_err e = OP_ERR_INIT;
		if (op_base64_decode(s, n, OP_BASE64_IGNORE_NEWLINES, &b, &e) < 0)
			return fail_at(c, m, -EINVAL, "!!binary value contains invalid base64 data");
		*ret = op_jstrn(op_buf_str(&b), b.len);
		return 0;
	} else if (strncmp(tag, TAG_PREFIX, sizeof(TAG_PREFIX) - 1) == 0 &&
		   strcmp(tag, TAG_PREFIX "str") != 0) {
		const char *want = tag + sizeof(TAG_PREFIX) - 1;
		op_yaml_resolve_plain(s, n, &r);
		bool ok = false;
		if (strcmp(want, "null") == 0)
			ok = r.kind == OP_YAML_NULL;
		else if (strcmp(want, "bool") == 0)
			ok = r.kind == OP_YAML_BOOL;
		else if (strcmp(want, "int") == 0)
			ok = r.kind == OP_YAML_INT || r.kind == OP_YAML_UINT;
		else if (strcmp(want, "float") == 0) {
			if (r.kind == OP_YAML_INT)
				r = (struct op_yaml_scalar){ .kind = OP_YAML_FLOAT, .d = (double)r.i };
			else if (r.kind == OP_YAML_UINT)
				r = (struct op_yaml_scalar){ .kind = OP_YAML_FLOAT, .d = (double)r.u };
			ok = r.kind == OP_YAML_FLOAT;
		} else if (strcmp(want, "timestamp") == 0) {
			ok = r.kind == OP_YAML_STR && looks_like_timestamp(s, n);
		} else {
			/* !!map, !!seq, !!merge or unknown on a scalar: keep the text. */
			r.kind = OP_YAML_STR;
			ok = true;
		}
		if (!ok)
			return fail_at(c, m, -EINVAL, "cannot decode %s `%.*s` as a !!%s",
				       op_yaml_kind_tag(r.kind), n > 40 ? 40 : (int)n, s, want);
	}
	/* Any other tag (!!str, local tags, "!"): a string, as go-yaml does. */

	json_object *o = json_from_resolved(&r, s, n);
	if (!o && r.kind != OP_YAML_NULL)
		op_oom(0); /* json-c could not allocate the scalar */
	*ret = o;
	return 0;
}

static int on_scalar(struct ctx *c, const yaml_event_t *ev)
{
	const yaml_mark_t *m = &ev->start_mark;
	int r = count_node(c, m);
	if (r < 0)
		return r;
	struct frame *f = c->depth ? &c->stack[c->depth - 1] : NULL;
	const char *tag = (const char *)ev->data.scalar.tag;
	if (f && f->is_map && !f->have_key && ev->data.scalar.length == 2 &&
	    memcmp(ev->data.scalar.value, "<<", 2) == 0 &&
	    ((!tag && ev->data.scalar.plain_implicit) ||
	     (tag && strcmp(tag, TAG_PREFIX "merge") == 0))) {
		f->have_key = true;
		f->merge = true;
		return 0;
	}
	json_object *v = NULL;
	r = scalar_value(c, ev, &v);
	if (r < 0)
		return r;
	if (ev->data.scalar.anchor) {
		r = anchor_register(c, (const char *)ev->data.scalar.anchor, v);
		if (r < 0) {
			json_object_put(v);
			return r;
		}
	}
	return deliver(c, v, m);
}

/* ---- aliases --------------------------------------------------------------- */

struct cost {
	size_t nodes, bytes;
	unsigned depth;
};

/* Adds the size of v to *acc; false as soon as a budget is passed. */
static bool measure(json_object *v, unsigned depth, struct cost *acc, const struct cost *budget)
{
	if (++acc->nodes > budget->nodes)
		return false;
	switch (json_object_get_type(v)) {
	case json_type_string:
		acc->bytes += (size_t)json_object_get_string_len(v);
		return acc->bytes <= budget->bytes;
	case json_type_array:
		if (depth + 1 > acc->depth)
			acc->depth = depth + 1;
		if (acc->depth > budget->depth)
			return false;
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!measure(json_object_array_get_idx(v, i), depth + 1, acc, budget))
				return false;
		return true;
	case json_type_object:
		if (depth + 1 > acc->depth)
			acc->depth = depth + 1;
		if (acc->depth > budget->depth)
			return false;
		json_object_object_foreach(v, k, child)
		{
			acc->nodes++;
			acc->bytes += strlen(k);
			if (!measure(child, depth + 1, acc, budget))
				return false;
		}
		return true;
	default: return true;
	}
}

static int on_alias(struct ctx *c, const yaml_event_t *ev)
{
	const yaml_mark_t *m = &ev->start_mark;
	const char *name = (const char *)ev->data.alias.anchor;
	json_object *v = NULL;
	if (!json_object_object_get_ex(c->anchors, name, &v))
		return fail_at(c, m, -EINVAL, "unknown anchor '%.64s' referenced", name);

	struct cost budget = {
		.nodes = c->lim.max_nodes - c->nodes,
		.bytes = c->lim.max_bytes - c->alias_bytes,
		.depth = c->lim.max_depth - c->depth,
	};
	struct cost used = { 0 };
	if (!measure(v, 0, &used, &budget)) {
		if (used.depth > budget.depth)
			return fail_at(c, m, -EMSGSIZE,
				       "alias '%.64s' nests deeper than %u levels", name,
				       c->lim.max_depth);
		return fail_at(c, m, -EMSGSIZE,
			       "alias '%.64s' expands past the limits (%zu nodes, %zu bytes)",
			       name, c->lim.max_nodes, c->lim.max_bytes);
	}
	c->nodes += used.nodes;
	c->alias_bytes += used.bytes;

	json_object *copy = NULL;
	if (v && json_object_deep_copy(v, &copy, NULL) != 0)
		op_oom(0);
	return deliver(c, copy, m);
}

/* ---- collections ----------------------------------------------------------- */

static int on_start(struct ctx *c, const yaml_event_t *ev, bool is_map)
{
	const yaml_mark_t *m = &ev->start_mark;
	int r = count_node(c, m);
	if (r < 0)
		return r;
	struct frame *top = c->depth ? &c->stack[c->depth - 1] : NULL;
	if (top && top->is_map && !top->have_key)
		return fail_at(c, m, -EINVAL, "mapping keys must be scalars, got %s",
			       is_map ? "a mapping" : "a sequence");
	if (c->depth >= c->lim.max_depth)
		return fail_at(c, m, -EMSGSIZE, "nesting deeper than %u levels",
			       c->lim.max_depth);
	if (c->depth == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->stack = op_realloc(c->stack, c->cap * sizeof(*c->stack));
	}
	json_object *o = is_map ? op_jobj() : op_jarr();
	json_object *seen = is_map && c->lim.reject_duplicate_keys ? op_jobj() : NULL;
	const yaml_char_t *anchor = is_map ? ev->data.mapping_start.anchor
					   : ev->data.sequence_start.anchor;
	c->stack[c->depth++] = (struct frame){
		.obj = o,
		.anchor = anchor ? op_strdup((const char *)anchor) : NULL,
		.seen = seen,
		.mark = *m,
		.is_map = is_map,
	};
	return 0;
}

static int on_end(struct ctx *c)
{
	/* libyaml guarantees balanced start/end events. */
	struct frame f = c->stack[--c->depth];
	free(f.key);
	json_object_put(f.seen);
	if (f.anchor) {
		int r = anchor_register(c, f.anchor, f.obj);
		free(f.anchor);
		if (r < 0) {
			json_object_put(f.obj);
			return r;
		}
	}
	return deliver(c, f.obj, &f.mark);
}

static void drop_stack(struct ctx *c)
{
	while (c->depth) {
		struct frame *f = &c->stack[--c->depth];
		json_object_put(f->obj);
		json_object_put(f->seen);
		free(f->anchor);
		free(f->key);
	}
	free(c->stack);
	c->stack = NULL;
	c->cap = 0;
}

static int on_document_end(struct ctx *c)
{
	json_object_put(c->anchors);
	c->anchors = op_jobj();
	if (!c->root)
		return 0; /* empty or null document */
	json_object *root = TAKE_PTR(c->root);
	op_jpush(c->docs, root);
	return 0;
}

static int on_event(struct ctx *c, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT: return on_scalar(c, ev);
	case YAML_ALIAS_EVENT: return on_alias(c, ev);
	case YAML_SEQUENCE_START_EVENT: return on_start(c, ev, false);
	case YAML_MAPPING_START_EVENT: return on_start(c, ev, true);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return on_end(c);
	case YAML_DOCUMENT_END_EVENT: return on_document_end(c);
	case YAML_DOCUMENT_START_EVENT:
		json_object_put(TAKE_PTR(c->root));
		return 0;
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT: return 0;
	}
	return 0;
}

static int parser_error(struct ctx *c, const yaml_parser_t *p)
{
	switch (p->error) {
	case YAML_MEMORY_ERROR: return op_err_set(c->err, -ENOMEM, "out of memory");
	case YAML_READER_ERROR:
		return op_err_set(c->err, -EINVAL, "offset %zu: %s", p->problem_offset,
				  p->problem ? p->problem : "cannot read input");
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
		if (p->context)
			return fail_at(c, &p->problem_mark, -EINVAL,
				       "%s (%s at line %zu, column %zu)",
				       p->problem ? p->problem : "syntax error", p->context,
				       p->context_mark.line + 1, p->context_mark.column + 1);
		return fail_at(c, &p->problem_mark, -EINVAL, "%s",
			       p->problem ? p->problem : "syntax error");
	default: return op_err_set(c->err, -EINVAL, "invalid YAML");
	}
}

int op_yaml_parse_docs(const char *data, size_t len, const struct op_yaml_limits *lim,
		       json_object **ret_array, struct op_err *err)
{
	struct ctx c = { .err = err };
	limits_resolve(&c.lim, lim);
	if (len > c.lim.max_bytes)
		return op_err_set(err, -EMSGSIZE, "YAML input too large (%zu bytes, limit %zu)",
				  len, c.lim.max_bytes);

	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return op_err_set(err, -ENOMEM, "cannot allocate YAML parser");
	yaml_parser_set_input_string(&parser, (const unsigned char *)(data ? data : ""), len);
	c.docs = op_jarr();
	c.anchors = op_jobj();
	int r = 0;
	while (r == 0) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			r = parser_error(&c, &parser);
			break;
		}
		r = on_event(&c, &ev);
		bool done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (done)
			break;
	}
	yaml_parser_delete(&parser);
	drop_stack(&c);
	json_object_put(c.anchors);
	json_object_put(c.root);
	if (r < 0) {
		json_object_put(c.docs);
		return r;
	}
	size_t n = json_object_array_length(c.docs);
	*ret_array = c.docs;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int op_yaml_or_json_parse_docs(const char *data, size_t len, const struct op_yaml_limits *lim,
			       json_object **ret_array, struct op_err *err)
{
	size_t i = 0;
	while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
		i++;
	if (i == len || (data[i] != '{' && data[i] != '['))
		return op_yaml_parse_docs(data, len, lim, ret_array, err);

	struct op_yaml_limits l;
	limits_resolve(&l, lim);
	if (len > l.max_bytes)
		return op_err_set(err, -EMSGSIZE, "JSON input too large (%zu bytes, limit %zu)",
				  len, l.max_bytes);
	json_object *v = NULL;
	int r = op_json_parse(data, len, (int)(l.max_depth > 100000 ? 100000 : l.max_depth), &v, err);
	if (r < 0)
		return r;
	json_object *arr = op_jarr();
	if (v)
		op_jpush(arr, v);
	*ret_array = arr;
	return v ? 1 : 0;
}
