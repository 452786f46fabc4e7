/* webhooks/result.c - wh_result: the errors and warnings admission collected,
 * and their messages in the words of Kubernetes' field.Error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "webhooks/webhooks.h"

/* A rendered value longer than this is cut (with "...") so a huge field
 * cannot blow up a message. */
#define VALUE_MAX 256

void wh_result_done(struct wh_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->n_errors; i++) {
		free(res->errors[i].path);
		free(res->errors[i].msg);
		free(res->errors[i].value);
	}
	free(res->errors);
	for (size_t i = 0; i < res->n_warnings; i++)
		free(res->warnings[i]);
	free(res->warnings);
	*res = (struct wh_result){ 0 };
}

/* vasprintf through the abort-on-OOM policy. */
static char *vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static char *vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return op_strdup("(unformattable message)");
	char *s = op_malloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* ---- the value at an error's path ---- */

/* The member of object o whose key is the longest prefix of p that ends at
 * the end, a '.' or a '[' of p (keys may hold dots: parameter names). */
static json_object *member_prefix(json_object *o, const char *p, size_t *ret_len)
{
	json_object *best = NULL;
	size_t best_len = 0;
	json_object_object_foreach(o, k, v)
	{
		size_t n = strlen(k);
		if (n > best_len && strncmp(p, k, n) == 0 &&
		    (p[n] == '\0' || p[n] == '.' || p[n] == '[')) {
			best = v;
			best_len = n;
		}
	}
	*ret_len = best_len;
	return best_len ? best : NULL;
}

/* The value at a path such as "spec.managed.roles[2].name" or
 * "metadata.annotations[cnpg.io/podPatch]"; found says whether it exists
 * (a JSON null found is NULL with *found true). Borrowed. */
static json_object *resolve(json_object *root, const char *path, bool *found)
{
	json_object *cur = root;
	const char *p = path;
	*found = false;
	if (!root || !*p)
		return NULL;
	while (*p) {
		if (*p == '[') {
			const char *end = strchr(p, ']');
			if (!end)
				return NULL;
			size_t n = (size_t)(end - p - 1);
			if (json_object_is_type(cur, json_type_array) && n > 0 &&
			    strspn(p + 1, "0123456789") == n && n < 10) {
				size_t idx = (size_t)strtoul(p + 1, NULL, 10);
				if (idx >= json_object_array_length(cur))
					return NULL;
				cur = json_object_array_get_idx(cur, idx);
			} else if (json_object_is_type(cur, json_type_object)) {
				_cleanup_free_ char *key = op_strndup(p + 1, n);
				if (!json_object_object_get_ex(cur, key, &cur))
					return NULL;
			} else {
				return NULL;
			}
			p = end + 1;
		} else {
			if (!json_object_is_type(cur, json_type_object))
				return NULL;
			size_t n;
			json_object *next = member_prefix(cur, p, &n);
			if (!n)
				return NULL;
			cur = next;
			p += n;
		}
		if (*p == '.')
			p++;
		if (*p && !cur)
			return NULL; /* below a null */
	}
	*found = true;
	return cur;
}

/* Appends at most what keeps the value within VALUE_MAX (+ a little): the
 * buffer's cap is never reached, so it is never dropped. */
static void put(struct op_buf *b, const char *p, size_t n)
{
	if (b->len >= VALUE_MAX + 8)
		return;
	if (n > VALUE_MAX + 8 - b->len)
		n = VALUE_MAX + 8 - b->len;
	if (op_buf_add(b, p, n) < 0)
		abort(); /* cannot happen: the cap is VALUE_MAX + 64 */
}

static void puts_(struct op_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Go's strconv.Quote of s (bytes >= 0x80 are kept as they are). */
static void quote(struct op_buf *b, const char *s, size_t n)
{
	put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\a': esc = "\\a"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\v': esc = "\\v"; break;
		default: break;
		}
		char hex[8];
		if (!esc && (c < 0x20 || c == 0x7f)) {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			esc = hex;
		}
		if (esc)
			puts_(b, esc);
		else
			put(b, s + i, 1);
	}
	put(b, "\"", 1);
}

/* Go's %v of a float64: the shortest %g that reads back the same. */
static void add_double(struct op_buf *b, double d)
{
	char tmp[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	puts_(b, tmp);
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %v of a decoded JSON value: strings bare inside composites and quoted
 * at the top (field.Error's %q), maps as map[k:v ...] with sorted keys, lists
 * as [a b]. */
static void render(struct op_buf *b, json_object *v, bool top)
{
	if (b->len > VALUE_MAX)
		return;
	switch (json_object_get_type(v)) {
	case json_type_null: puts_(b, top ? "null" : "<nil>"); break;
	case json_type_boolean: puts_(b, json_object_get_boolean(v) ? "true" : "false"); break;
	case json_type_int: {
		char tmp[32];
		snprintf(tmp, sizeof(tmp), "%lld", (long long)json_object_get_int64(v));
		puts_(b, tmp);
		break;
	}
	case json_type_double: add_double(b, json_object_get_double(v)); break;
	case json_type_string:
		if (top)
			quote(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		else
			put(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		break;
	case json_type_array:
		put(b, "[", 1);
		for (size_t i = 0; i < json_object_array_length(v) && b->len <= VALUE_MAX; i++) {
			if (i)
				put(b, " ", 1);
			render(b, json_object_array_get_idx(v, i), false);
		}
		put(b, "]", 1);
		break;
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(v), i = 0;
		const char **keys = op_malloc((n ? n : 1) * sizeof(*keys));
		json_object_object_foreach(v, k, m)
		{
			(void)m;
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), cmp_keys);
		puts_(b, "map[");
		for (i = 0; i < n && b->len <= VALUE_MAX; i++) {
			if (i)
				put(b, " ", 1);
			puts_(b, keys[i]);
			put(b, ":", 1);
			render(b, json_object_object_get(v, keys[i]), false);
		}
		put(b, "]", 1);
		free(keys);
		break;
	}
	}
}

/* The rendered value at path in subject (owned), or NULL when absent. */
static char *value_at(json_object *subject, const char *path, bool *found)
{
	json_object *v = resolve(subject, path, found);
	if (!*found)
		return NULL;
	struct op_buf b = OP_BUF_INIT(VALUE_MAX + 64);
	render(&b, v, true);
	if (b.len > VALUE_MAX) {
		b.len = VALUE_MAX;
		b.data[b.len] = '\0';
		if (op_buf_adds(&b, "...") < 0)
			abort(); /* within the cap */
	}
	char *s = op_buf_take(&b, NULL);
	return s ? s : op_strdup("");
}

static void add_error(struct wh_result *res, enum wh_error_type type, const char *path,
		      char *msg)
{
	path = path ? path : "";
	bool found = false;
	char *value = NULL;
	if (type != WH_ERR_REQUIRED && type != WH_ERR_FORBIDDEN && res->subject) {
		value = value_at(res->subject, path, &found);
		if (!found && type == WH_ERR_INVALID && *path)
			type = WH_ERR_REQUIRED; /* nothing there: it is missing */
	}
	res->errors = op_realloc(res->errors, (res->n_errors + 1) * sizeof(*res->errors));
	res->errors[res->n_errors] = (struct wh_issue){
		.path = op_strdup(path), .msg = msg, .type = type, .value = value
	};
	res->n_errors++;
}

void wh_result_error(struct wh_result *res, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	add_error(res, WH_ERR_INVALID, path, msg);
}

void wh_result_typed(struct wh_result *res, enum wh_error_type type, const char *path,
		     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	add_error(res, type, path, msg);
}

void wh_result_unsupported(struct wh_result *res, const char *path,
			   const char *const *supported, size_t n_supported)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_adds(&b, "supported values: ");
	for (size_t i = 0; r == 0 && i < n_supported; i++) {
		struct op_buf q = OP_BUF_INIT(VALUE_MAX + 64);
		quote(&q, supported[i], strlen(supported[i]));
		r = op_buf_addf(&b, "%s%s", i ? ", " : "", op_buf_str(&q));
		op_buf_done(&q);
	}
	add_error(res, WH_ERR_UNSUPPORTED, path, op_buf_take(&b, NULL));
}

void wh_result_warn(struct wh_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	res->warnings = op_realloc(res->warnings, (res->n_warnings + 1) * sizeof(*res->warnings));
	res->warnings[res->n_warnings++] = msg;
}

static const struct {
	const char *words, *reason;
} error_types[] = {
	[WH_ERR_INVALID] = { "Invalid value", "FieldValueInvalid" },
	[WH_ERR_REQUIRED] = { "Required value", "FieldValueRequired" },
	[WH_ERR_FORBIDDEN] = { "Forbidden", "FieldValueForbidden" },
	[WH_ERR_DUPLICATE] = { "Duplicate value", "FieldValueDuplicate" },
	[WH_ERR_UNSUPPORTED] = { "Unsupported value", "FieldValueNotSupported" },
};

const char *wh_error_reason(enum wh_error_type type)
{
	return (size_t)type < OP_ARRAY_SIZE(error_types) ? error_types[type].reason
							 : "FieldValueInvalid";
}

char *wh_issue_body(const struct wh_issue *e)
{
	size_t t = (size_t)e->type < OP_ARRAY_SIZE(error_types) ? (size_t)e->type : 0;
	const char *words = error_types[t].words;
	const char *msg = e->msg ? e->msg : "";
	if (e->value && *msg)
		return op_asprintf("%s: %s: %s", words, e->value, msg);
	if (e->value)
		return op_asprintf("%s: %s", words, e->value);
	if (*msg)
		return op_asprintf("%s: %s", words, msg);
	return op_strdup(words);
}
