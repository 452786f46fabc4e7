/* support/yaml_emit.c - json-c to YAML with libyaml emitter events (see
 * yaml_emit.h). Bounded: OP_YAML_EMIT_MAX_DEPTH and the op_buf cap.
 */
#include "support/yaml_emit.h"

#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml_internal.h"

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
 * string: our own reader's resolver (op_yaml_resolve_plain, which also
 * reads "-_8" as -8) decides first, then a wider net for YAML 1.1 and 1.2
 * readers elsewhere. */
static bool plain_is_ambiguous(const char *s)
{
	struct op_yaml_scalar r;
	op_yaml_resolve_plain(s, strlen(s), &r);
	if (r.kind != OP_YAML_STR)
		return true;
	static const char *const words[] = { "y", "n", "yes", "no", "on", "off", "true", "false",
					     "null", "~", "<<" };
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

static int emit_scalar(struct emit_ctx *c, const char *s, size_t len, bool is_string,
		       struct op_err *err)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	int plain_implicit = 1;
	if (is_string) {
		if (memchr(s, '\n', len)) {
			style = YAML_LITERAL_SCALAR_STYLE;
			plain_implicit = 0;
		} else if (plain_is_ambiguous(s)) {
			plain_implicit = 0;
		}
	}
	if (len > INT32_MAX)
		return op_err_set(err, -EMSGSIZE, "YAML scalar too large");
	/* A !!binary value may hold any bytes. libyaml's own check lets UTF-8
	 * surrogates through, which it then escapes as \uD8xx and cannot read
	 * back: the strict check is ours. */
	if (is_string && !op_utf8_valid(s, len))
		return op_err_set(err, -EINVAL, "YAML emitter: string is not valid UTF-8");
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len,
					  plain_implicit, 1, style))
		return op_err_set(err, -ENOMEM, "YAML emitter: out of memory");
	return emit(c, &ev, err);
}

static int emit_node(struct emit_ctx *c, json_object *o, int depth, struct op_err *err)
{
	yaml_event_t ev;
	int r;
	char num[64];

	if (depth > OP_YAML_EMIT_MAX_DEPTH)
		return op_err_set(err, -ELOOP, "YAML output nesting deeper than %d", OP_YAML_EMIT_MAX_DEPTH);
	switch (json_object_get_type(o)) {
	case json_type_null:
		return emit_scalar(c, "null", 4, false, err);
	case json_type_boolean:
		return json_object_get_boolean(o) ? emit_scalar(c, "true", 4, false, err)
						  : emit_scalar(c, "false", 5, false, err);
	case json_type_int:
		/* json-c prints int64 and uint64 (past INT64_MAX) alike */
		snprintf(num, sizeof(num), "%s",
			 json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		return emit_scalar(c, num, strlen(num), false, err);
	case json_type_double:
		snprintf(num, sizeof(num), "%.17g", json_object_get_double(o));
		if (!strpbrk(num, ".eEni")) {
			size_t l = strlen(num); /* "%.17g" is at most 24 bytes */
			if (l + 3 <= sizeof(num))
				memcpy(num + l, ".0", 3);
		}
		return emit_scalar(c, num, strlen(num), false, err);
	case json_type_string:
		return emit_scalar(c, json_object_get_string(o),
				   (size_t)json_object_get_string_len(o), true, err);
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
		size_t n, i;
		_cleanup_free_ const char **keys = op_json_sorted_keys(o, &n);
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE))
			return op_err_set(err, -ENOMEM, "cannot build YAML event");
		r = emit(c, &ev, err);
		if (r < 0)
			return r;
		for (i = 0; i < n; i++) {
			r = emit_scalar(c, keys[i], strlen(keys[i]), true, err);
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

int op_yaml_emit(json_object *obj, struct op_buf *out, struct op_err *err)
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
