/* openapi/yaml.c - YAML <-> json-c for the schema and the CRD (see openapi.h).
 *
 * The loader is a recursive descent over libyaml parser events; the emitter
 * feeds libyaml emitter events. Both are bounded (OA_MAX_DOC, OA_MAX_DEPTH).
 */
#include "openapi/openapi.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "support/alloc.h"
#include "support/json.h"

struct loader {
	yaml_parser_t parser;
	json_object *anchors; /* owned: anchor name -> node (shared reference) */
	struct op_err *err;
};

static void loader_done(struct loader *l)
{
	yaml_parser_delete(&l->parser);
	if (l->anchors)
		json_object_put(l->anchors);
}

static int next_event(struct loader *l, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&l->parser, ev))
		return op_err_set(l->err, -EINVAL, "YAML line %zu: %s",
				  l->parser.problem_mark.line + 1,
				  l->parser.problem ? l->parser.problem : "parse error");
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Float per the YAML 1.2 core schema (no .inf/.nan). */
static bool is_float(const char *s)
{
	bool digits = false;
	if (*s == '+' || *s == '-')
		s++;
	while (*s >= '0' && *s <= '9') {
		s++;
		digits = true;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!all_digits(s))
			return false;
		return true;
	}
	return *s == '\0';
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL" };
static const char *const true_words[] = { "true", "True", "TRUE" };
static const char *const false_words[] = { "false", "False", "FALSE" };

static bool in_words(const char *s, const char *const *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, w[i]) == 0)
			return true;
	return false;
}

static int resolve_plain(struct loader *l, const char *s, size_t line, json_object **ret)
{
	if (in_words(s, null_words, OP_ARRAY_SIZE(null_words))) {
		*ret = NULL;
		return 0;
	}
	if (in_words(s, true_words, OP_ARRAY_SIZE(true_words)) ||
	    in_words(s, false_words, OP_ARRAY_SIZE(false_words))) {
		*ret = json_object_new_boolean(s[0] == 't' || s[0] == 'T');
		return 0;
	}
	const char *d = (*s == '-' || *s == '+') ? s + 1 : s;
	if (all_digits(d)) {
		errno = 0;
		char *end = NULL;
		long long v = strtoll(s, &end, 10);
		if (errno != 0 || !end || *end != '\0')
			return op_err_set(l->err, -ERANGE, "YAML line %zu: integer out of range: %s",
					  line, s);
		*ret = json_object_new_int64((int64_t)v);
		return 0;
	}
	if (is_float(s)) {
		errno = 0;
		char *end = NULL;
		double v = strtod(s, &end);
		if (errno != 0 || !end || *end != '\0')
			return op_err_set(l->err, -ERANGE, "YAML line %zu: bad number: %s", line, s);
		*ret = json_object_new_double(v);
		return 0;
	}
	*ret = json_object_new_string(s);
	return 0;
}

static int remember_anchor(struct loader *l, const yaml_char_t *anchor, json_object *node)
{
	if (!anchor)
		return 0;
	return op_json_set(l->anchors, (const char *)anchor, json_object_get(node));
}

static int load_node(struct loader *l, yaml_event_t *ev, int depth, json_object **ret);

static int load_sequence(struct loader *l, int depth, json_object *arr)
{
	for (;;) {
		yaml_event_t ev;
		int r = next_event(l, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		json_object *item = NULL;
		r = load_node(l, &ev, depth + 1, &item);
		if (r < 0)
			return r;
		r = op_json_append(arr, item);
		if (r < 0)
			return op_err_set(l->err, r, "out of memory");
	}
}

/* Adds the keys of one merge source that obj does not have yet. */
static int merge_into(struct loader *l, json_object *obj, json_object *src, size_t line)
{
	if (!json_object_is_type(src, json_type_object))
		return op_err_set(l->err, -EINVAL, "YAML line %zu: merge key value is not a mapping",
				  line);
	json_object_object_foreach(src, k, v)
	{
		if (json_object_object_get_ex(obj, k, NULL))
			continue;
		if (op_json_set(obj, k, json_object_get(v)) < 0)
			return op_err_set(l->err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int load_mapping(struct loader *l, int depth, json_object *obj)
{
	_cleanup_(op_json_putp) json_object *merges = json_object_new_array();
	size_t merge_line = 0;
	if (!merges)
		return op_err_set(l->err, -ENOMEM, "out of memory");
	for (;;) {
		yaml_event_t kev;
		int r = next_event(l, &kev);
		if (r < 0)
			return r;
		if (kev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&kev);
			break;
		}
		size_t line = kev.start_mark.line + 1;
		if (kev.type != YAML_SCALAR_EVENT) {
			yaml_event_delete(&kev);
			return op_err_set(l->err, -EINVAL, "YAML line %zu: mapping keys must be scalars",
					  line);
		}
		bool is_merge = kev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
				strcmp((const char *)kev.data.scalar.value, "<<") == 0;
		_cleanup_free_ char *key = op_strdup((const char *)kev.data.scalar.value);
		yaml_event_delete(&kev);

		yaml_event_t vev;
		r = next_event(l, &vev);
		if (r < 0)
			return r;
		json_object *val = NULL;
		r = load_node(l, &vev, depth + 1, &val);
		if (r < 0)
			return r;
		if (is_merge) {
			merge_line = line;
			if (json_object_is_type(val, json_type_array)) {
				size_t n = json_object_array_length(val);
				for (size_t i = 0; i < n; i++)
					if (op_json_append(merges, json_object_get(json_object_array_get_idx(
									   val, i))) < 0)
						return op_err_set(l->err, -ENOMEM, "out of memory");
				json_object_put(val);
			} else if (op_json_append(merges, val) < 0) {
				return op_err_set(l->err, -ENOMEM, "out of memory");
			}
			continue;
		}
		if (json_object_object_get_ex(obj, key, NULL)) {
			json_object_put(val);
			return op_err_set(l->err, -EINVAL, "YAML line %zu: duplicate key \"%s\"", line,
					  key);
		}
		if (op_json_set(obj, key, val) < 0)
			return op_err_set(l->err, -ENOMEM, "out of memory");
	}
	size_t n = json_object_array_length(merges);
	for (size_t i = 0; i < n; i++) {
		int r = merge_into(l, obj, json_object_array_get_idx(merges, i), merge_line);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Consumes ev (always deleted). */
static int load_node(struct loader *l, yaml_event_t *ev, int depth, json_object **ret)
{
	int r = 0;
	size_t line = ev->start_mark.line + 1;
	json_object *node = NULL;

	if (depth > OA_MAX_DEPTH) {
		r = op_err_set(l->err, -ELOOP, "YAML line %zu: nesting deeper than %d", line,
			       OA_MAX_DEPTH);
		goto out;
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT: {
		json_object *target = NULL;
		const char *name = (const char *)ev->data.alias.anchor;
		if (!json_object_object_get_ex(l->anchors, name, &target)) {
			r = op_err_set(l->err, -EINVAL, "YAML line %zu: unknown anchor \"%s\"", line,
				       name);
			goto out;
		}
		if (target && json_object_deep_copy(target, &node, NULL) != 0) {
			r = op_err_set(l->err, -ENOMEM, "out of memory");
			goto out;
		}
		break;
	}
	case YAML_SCALAR_EVENT: {
		const char *s = (const char *)ev->data.scalar.value;
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
			r = resolve_plain(l, s, line, &node);
			if (r < 0)
				goto out;
		} else {
			node = json_object_new_string_len(s, (int)ev->data.scalar.length);
		}
		r = remember_anchor(l, ev->data.scalar.anchor, node);
		break;
	}
	case YAML_SEQUENCE_START_EVENT:
		node = json_object_new_array();
		r = load_sequence(l, depth, node);
		if (r == 0)
			r = remember_anchor(l, ev->data.sequence_start.anchor, node);
		break;
	case YAML_MAPPING_START_EVENT:
		node = json_object_new_object();
		r = load_mapping(l, depth, node);
		if (r == 0)
			r = remember_anchor(l, ev->data.mapping_start.anchor, node);
		break;
	default:
		r = op_err_set(l->err, -EINVAL, "YAML line %zu: unexpected event %d", line,
			       (int)ev->type);
		break;
	}
out:
	yaml_event_delete(ev);
	if (r < 0) {
		if (node)
			json_object_put(node);
		return r;
	}
	*ret = node;
	return 0;
}

/* Reads one event and requires a type. */
static int expect(struct loader *l, yaml_event_type_t type, const char *what)
{
	yaml_event_t ev;
	int r = next_event(l, &ev);
	if (r < 0)
		return r;
	bool ok = ev.type == type;
	size_t line = ev.start_mark.line + 1;
	yaml_event_delete(&ev);
	if (!ok)
		return op_err_set(l->err, -EINVAL, "YAML line %zu: expected %s", line, what);
	return 0;
}

int oa_yaml_parse(const char *data, size_t len, json_object **ret, struct op_err *err)
{
	if (len > OA_MAX_DOC)
		return op_err_set(err, -EMSGSIZE, "YAML document too large (%zu bytes, max %u)", len,
				  OA_MAX_DOC);
	struct loader l = { .err = err };
	if (!yaml_parser_initialize(&l.parser))
		return op_err_set(err, -ENOMEM, "cannot allocate YAML parser");
	l.anchors = json_object_new_object();
	json_object *root = NULL;
	int r = 0;
	if (!l.anchors) {
		r = op_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	yaml_parser_set_input_string(&l.parser, (const unsigned char *)(data ? data : ""), len);
	r = expect(&l, YAML_STREAM_START_EVENT, "stream start");
	if (r < 0)
		goto out;
	yaml_event_t ev;
	r = next_event(&l, &ev);
	if (r < 0)
		goto out;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		r = op_err_set(err, -ENODATA, "YAML: empty document");
		goto out;
	}
	if (ev.type != YAML_DOCUMENT_START_EVENT) {
		yaml_event_delete(&ev);
		r = op_err_set(err, -EINVAL, "YAML: expected a document");
		goto out;
	}
	yaml_event_delete(&ev);
	r = next_event(&l, &ev);
	if (r < 0)
		goto out;
	r = load_node(&l, &ev, 0, &root);
	if (r < 0)
		goto out;
	r = expect(&l, YAML_DOCUMENT_END_EVENT, "document end");
	if (r < 0)
		goto out;
	r = expect(&l, YAML_STREAM_END_EVENT, "a single document");
	if (r < 0)
		goto out;
	*ret = TAKE_PTR(root);
out:
	if (root)
		json_object_put(root);
	loader_done(&l);
	return r;
}

/* ---- emitter ---------------------------------------------------------- */

struct emit_ctx {
	yaml_emitter_t em;
	struct op_buf *out;
	int out_err; /* -EMSGSIZE when the buffer cap was hit */
};

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct emit_ctx *c = data;
	int r = op_buf_add(c->out, buffer, size);
	if (r < 0) {
		c->out_err = r;
		return 0;
	}
	return 1;
}

static int emit(struct emit_ctx *c, yaml_event_t *ev, struct op_err *err)
{
	if (!yaml_emitter_emit(&c->em, ev)) {
		if (c->out_err)
			return op_err_set(err, c->out_err, "YAML output larger than the cap");
		return op_err_set(err, -EINVAL, "YAML emitter: %s",
				  c->em.problem ? c->em.problem : "error");
	}
	return 0;
}

/* True when s written plain would read back as something other than this
 * string (YAML 1.1 and 1.2 resolvers both considered). */
static bool plain_is_ambiguous(const char *s)
{
	static const char *const words[] = { "y", "n", "yes", "no", "on", "off", "true", "false",
					     "null", "~" };
	if (!*s)
		return true;
	for (size_t i = 0; i < OP_ARRAY_SIZE(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	const char *d = (*s == '-' || *s == '+' || *s == '.') ? s + 1 : s;
	if ((*d >= '0' && *d <= '9') || *d == '.')
		return true;
	if (strcasecmp(d, "inf") == 0 || strcasecmp(d, "nan") == 0)
		return true;
	return false;
}

static int emit_scalar(struct emit_ctx *c, const char *s, bool is_string, struct op_err *err)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	int plain_implicit = 1;
	if (is_string) {
		if (strchr(s, '\n')) {
			style = YAML_LITERAL_SCALAR_STYLE;
			plain_implicit = 0;
		} else if (plain_is_ambiguous(s)) {
			plain_implicit = 0;
		}
	}
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s),
					  plain_implicit, 1, style))
		return op_err_set(err, -ENOMEM, "cannot build YAML event");
	return emit(c, &ev, err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int emit_node(struct emit_ctx *c, json_object *o, int depth, struct op_err *err)
{
	yaml_event_t ev;
	int r;
	char num[64];

	if (depth > OA_MAX_DEPTH)
		return op_err_set(err, -ELOOP, "YAML output nesting deeper than %d", OA_MAX_DEPTH);
	switch (json_object_get_type(o)) {
	case json_type_null:
		return emit_scalar(c, "null", false, err);
	case json_type_boolean:
		return emit_scalar(c, json_object_get_boolean(o) ? "true" : "false", false, err);
	case json_type_int:
		snprintf(num, sizeof(num), "%" PRId64, json_object_get_int64(o));
		return emit_scalar(c, num, false, err);
	case json_type_double:
		snprintf(num, sizeof(num), "%.17g", json_object_get_double(o));
		if (!strpbrk(num, ".eEni"))
			strncat(num, ".0", sizeof(num) - strlen(num) - 1);
		return emit_scalar(c, num, false, err);
	case json_type_string:
		return emit_scalar(c, json_object_get_string(o), true, err);
	case json_type_array: {
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  YAML_BLOCK_SEQUENCE_STYLE))
			return op_err_set(err, -ENOMEM, "cannot build YAML event");
		r = emit(c, &ev, err);
		if (r < 0)
			return r;
		size_t n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++) {
			r = emit_node(c, json_object_array_get_idx(o, i), depth + 1, err);
			if (r < 0)
				return r;
		}
		yaml_sequence_end_event_initialize(&ev);
		return emit(c, &ev, err);
	}
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(o), i = 0;
		_cleanup_free_ const char **keys = op_calloc(n ? n : 1, sizeof(*keys));
		json_object_object_foreach(o, k, v)
		{
			(void)v;
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), cmp_str);
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE))
			return op_err_set(err, -ENOMEM, "cannot build YAML event");
		r = emit(c, &ev, err);
		if (r < 0)
			return r;
		for (i = 0; i < n; i++) {
			r = emit_scalar(c, keys[i], true, err);
			if (r < 0)
				return r;
			r = emit_node(c, json_object_object_get(o, keys[i]), depth + 1, err);
			if (r < 0)
				return r;
		}
		yaml_mapping_end_event_initialize(&ev);
		return emit(c, &ev, err);
	}
	}
	return op_err_set(err, -EINVAL, "cannot render JSON type %s as YAML",
			  op_json_type_name(o));
}

int oa_yaml_emit(json_object *obj, struct op_buf *out, struct op_err *err)
{
	struct emit_ctx c = { .out = out };
	size_t start = out->len;
	yaml_event_t ev;
	int r;

	if (!yaml_emitter_initialize(&c.em))
		return op_err_set(err, -ENOMEM, "cannot allocate YAML emitter");
	yaml_emitter_set_output(&c.em, write_handler, &c);
	yaml_emitter_set_unicode(&c.em, 1);
	yaml_emitter_set_indent(&c.em, 2);
	yaml_emitter_set_width(&c.em, -1); /* never fold: one line per scalar */

	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	r = emit(&c, &ev, err);
	if (r < 0)
		goto out;
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0);
	r = emit(&c, &ev, err);
	if (r < 0)
		goto out;
	r = emit_node(&c, obj, 0, err);
	if (r < 0)
		goto out;
	yaml_document_end_event_initialize(&ev, 1);
	r = emit(&c, &ev, err);
	if (r < 0)
		goto out;
	yaml_stream_end_event_initialize(&ev);
	r = emit(&c, &ev, err);
	if (r < 0)
		goto out;
	if (!yaml_emitter_flush(&c.em))
		r = op_err_set(err, c.out_err ? c.out_err : -EIO, "YAML emitter flush failed");
out:
	yaml_emitter_delete(&c.em);
	if (r < 0 && out->data && out->len > start) {
		/* nothing half-written is left behind */
		out->len = start;
		out->data[start] = '\0';
	}
	return r;
}
