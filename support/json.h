/* support/json.h - json-c helpers: bounded parsing and typed getters that
 * name the field path in their errors.
 *
 * Ownership: json-c objects follow json-c rules. Getters return BORROWED
 * pointers that live as long as the parent object. op_json_parse() returns an
 * OWNED object (release with json_object_put or _cleanup_(op_json_putp)).
 *
 * Typed getters return 1 when the key is present with the right type (and
 * write *ret), 0 when it is absent or null (ret untouched), and -EINVAL when
 * present with the wrong type; the error then reads
 *   "spec.instances: expected integer, got string".
 * `path` is the JSON path of `obj` ("" for the root, "spec", "spec.storage").
 */
#ifndef PGOP_SUPPORT_JSON_H
#define PGOP_SUPPORT_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/buf.h"
#include "support/err.h"

#define OP_JSON_MAX_DEPTH 64

static inline void op_json_putp(json_object **p)
{
	if (*p)
		json_object_put(*p);
}

/* Parses exactly one JSON value from data[0..len) (trailing whitespace
 * allowed), nesting at most max_depth. On failure err says what and where
 * ("invalid JSON at offset 17: unexpected character"). */
OP_MUST_CHECK int op_json_parse(const char *data, size_t len, int max_depth, json_object **ret,
				struct op_err *err);

/* Name of a json-c type for messages: "string", "integer", "object"... */
const char *op_json_type_name(const json_object *o);

OP_MUST_CHECK
int op_json_get_obj(json_object *obj, const char *key, const char *path, json_object **ret,
		    struct op_err *err);
OP_MUST_CHECK
int op_json_get_arr(json_object *obj, const char *key, const char *path, json_object **ret,
		    struct op_err *err);
OP_MUST_CHECK
int op_json_get_str(json_object *obj, const char *key, const char *path, const char **ret,
		    struct op_err *err);
/* A JSON value (borrowed, may be NULL) as an integer: 1 and *ret for a JSON
 * integer within int64 or an integral double below 9e15 (3.0); -ERANGE for
 * an integer outside int64 (json-c would clamp it); 0 for anything else. */
OP_MUST_CHECK int op_json_to_i64(json_object *v, int64_t *ret);

/* Integers: JSON numbers with no fraction; doubles like 3.0 are accepted. */
OP_MUST_CHECK int op_json_get_i64(json_object *obj, const char *key, const char *path, int64_t *ret,
				  struct op_err *err);
OP_MUST_CHECK int op_json_get_bool(json_object *obj, const char *key, const char *path, bool *ret,
				   struct op_err *err);

/* One member of an object (obj may be NULL or not an object): the string
 * (borrowed) or NULL; true only for a JSON true; 1 and *ret for an integer
 * as op_json_to_i64, 0 otherwise. No error reporting, no allocation (the
 * /pg/status documents the reconciler and the live API read). */
const char *op_json_key_str(json_object *obj, const char *key);
bool op_json_key_bool(json_object *obj, const char *key);
OP_MUST_CHECK int op_json_key_i64(json_object *obj, const char *key, int64_t *ret);

/* Convenience: borrowed string at a dotted path ("metadata.name"), or NULL when
 * absent or not a string. No error reporting. */
const char *op_json_str_at(json_object *root, const char *dotted);
/* Borrowed value at a dotted path, or NULL. */
json_object *op_json_at(json_object *root, const char *dotted);

/* Appends "path.key" (or "key" when path is empty) to b. */
OP_MUST_CHECK int op_json_path_join(struct op_buf *b, const char *path, const char *key);
/* Appends key escaped for a JSON Pointer (RFC 6901: ~ -> ~0, / -> ~1). */
OP_MUST_CHECK int op_json_pointer_escape(struct op_buf *b, const char *key);

/* Builders: the project's one set of JSON-building helpers. Each constructor
 * returns a new OWNED value; json-c failing to allocate aborts, the same
 * out-of-memory policy as op_malloc (support/alloc.h), so callers check
 * nothing. */
json_object *op_jstr(const char *s); /* NULL -> "" */
json_object *op_jstrn(const char *s, size_t len);
json_object *op_jint(int64_t v);
json_object *op_jbool(bool v);
json_object *op_jdouble(double v);
json_object *op_jobj(void);
json_object *op_jarr(void);
/* An array of the strings of the NULL-terminated v (NULL = empty array). */
json_object *op_jstrv(const char *const *v);
/* Sets obj[key] = val (val owned by obj afterwards, NULL = JSON null; an
 * existing member is replaced). Returns obj (borrowed) for chaining. */
json_object *op_jset(json_object *obj, const char *key, json_object *val);
/* op_jset(obj, key, op_jstr(s)). */
json_object *op_jsets(json_object *obj, const char *key, const char *s);
/* Appends val (owned by arr afterwards, NULL = JSON null). Returns arr. */
json_object *op_jpush(json_object *arr, json_object *val);
/* obj[key] when it is an object, else a new empty object set there
 * (replacing a non-object member). Borrowed from obj. */
json_object *op_jchild(json_object *obj, const char *key);

/* The keys of the object o (borrowed) in byte order, *ret_n of them: an
 * OWNED array (free) of keys borrowed from o. */
const char **op_json_sorted_keys(json_object *o, size_t *ret_n);

/* A deep copy of v (borrowed; NULL = JSON null, copied as NULL) whose
 * objects, at every level, hold their members in byte order of their keys
 * (json-c keeps insertion order): its serialization is canonical, the same
 * for equal values however they were built (array order is kept). OWNED. */
json_object *op_json_sorted(json_object *v);

#endif
