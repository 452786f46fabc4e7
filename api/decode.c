/* api/decode.c - typed getters collecting every field type error (decode.h). */
#include "api/decode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"

void api_errors_done(struct api_errors *errs)
{
	if (!errs)
		return;
	for (size_t i = 0; i < errs->n; i++) {
		free(errs->items[i].path);
		free(errs->items[i].msg);
	}
	free(errs->items);
	errs->items = NULL;
	errs->n = 0;
}

void api_errors_add(struct api_errors *errs, const char *path, const char *msg)
{
	errs->items = op_realloc(errs->items, (errs->n + 1) * sizeof(*errs->items));
	errs->items[errs->n].path = op_strdup(path ? path : "");
	errs->items[errs->n].msg = op_strdup(msg ? msg : "");
	errs->n++;
}

char *api_dec_join(const char *path, const char *key)
{
	if (!path || !*path)
		return op_strdup(key);
	return op_asprintf("%s.%s", path, key);
}

char *api_dec_index(const char *path, size_t i)
{
	return op_asprintf("%s[%zu]", path ? path : "", i);
}

void api_dec_error(struct api_dec *d, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		abort(); /* OOM policy: abort */
	va_end(ap);
	if (!d->first)
		d->first = op_asprintf("%s: %s", path, msg);
	if (d->errs)
		api_errors_add(d->errs, path, msg);
	d->n++;
	free(msg);
}

static json_object *present(json_object *obj, const char *key)
{
	json_object *v = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v; /* NULL for JSON null */
}

static void type_error(struct api_dec *d, const char *path, const char *key, const char *want,
		       json_object *v)
{
	_cleanup_free_ char *p = api_dec_join(path, key);
	api_dec_error(d, p, "expected %s, got %s", want, op_json_type_name(v));
}

static json_object *typed(struct api_dec *d, json_object *obj, const char *path, const char *key,
			  json_type t, const char *want)
{
	json_object *v = present(obj, key);
	if (!v)
		return NULL;
	if (!json_object_is_type(v, t)) {
		type_error(d, path, key, want, v);
		return NULL;
	}
	return v;
}

json_object *api_dec_obj(struct api_dec *d, json_object *obj, const char *path, const char *key)
{
	return typed(d, obj, path, key, json_type_object, "object");
}

json_object *api_dec_arr(struct api_dec *d, json_object *obj, const char *path, const char *key)
{
	return typed(d, obj, path, key, json_type_array, "array");
}

bool api_dec_str(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 char **out)
{
	json_object *v = typed(d, obj, path, key, json_type_string, "string");
	if (!v)
		return false;
	free(*out);
	*out = op_strdup(json_object_get_string(v));
	return true;
}

bool api_dec_i64(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 int64_t *out)
{
	json_object *v = present(obj, key);
	if (!v)
		return false;
	if (op_json_to_i64(v, out) != 1) {
		type_error(d, path, key, "integer", v);
		return false;
	}
	return true;
}

bool api_dec_bool(struct api_dec *d, json_object *obj, const char *path, const char *key,
		  bool *out)
{
	json_object *v = typed(d, obj, path, key, json_type_boolean, "boolean");
	if (!v)
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

void api_strv_done(struct api_strv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++)
		free(v->items[i]);
	free(v->items);
	v->items = NULL;
	v->n = 0;
}

void api_kvs_done(struct api_kvs *kvs)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < kvs->n; i++) {
		free(kvs->items[i].key);
		free(kvs->items[i].value);
	}
	free(kvs->items);
	kvs->items = NULL;
	kvs->n = 0;
}

const char *api_kvs_get(const struct api_kvs *kvs, const char *key)
{
	for (size_t i = 0; kvs && i < kvs->n; i++)
		if (strcmp(kvs->items[i].key, key) == 0)
			return kvs->items[i].value;
	return NULL;
}

void api_dec_strv(struct api_dec *d, json_object *obj, const char *path, const char *key,
		  struct api_strv *out)
{
	json_object *a = api_dec_arr(d, obj, path, key);
	if (!a)
		return;
	_cleanup_free_ char *ap = api_dec_join(path, key);
	size_t n = json_object_array_length(a);
	api_strv_done(out);
	out->items = op_calloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		if (!e || !json_object_is_type(e, json_type_string)) {
			_cleanup_free_ char *ep = api_dec_index(ap, i);
			api_dec_error(d, ep, "expected string, got %s", op_json_type_name(e));
			continue;
		}
		out->items[out->n++] = op_strdup(json_object_get_string(e));
	}
}

void api_dec_kvs(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 struct api_kvs *out, bool numbers_ok)
{
	json_object *o = api_dec_obj(d, obj, path, key);
	if (!o)
		return;
	_cleanup_free_ char *op = api_dec_join(path, key);
	api_kvs_done(out);
	out->items = op_calloc((size_t)json_object_object_length(o) + 1, sizeof(*out->items));
	json_object_object_foreach(o, k, v)
	{
		bool ok = v && (json_object_is_type(v, json_type_string) ||
				(numbers_ok && (json_object_is_type(v, json_type_int) ||
						json_object_is_type(v, json_type_double))));
		if (!ok) {
			_cleanup_free_ char *kp = api_dec_join(op, k);
			api_dec_error(d, kp, "expected string, got %s", op_json_type_name(v));
			continue;
		}
		out->items[out->n].key = op_strdup(k);
		out->items[out->n].value = op_strdup(json_object_get_string(v));
		out->n++;
	}
}
