/* api/decode.h - internal to api/: typed JSON getters that record every type
 * error with its field path instead of stopping at the first one.
 *
 * All json_object pointers are BORROWED from the document being decoded.
 * Strings written through char ** are OWNED by the caller (freed with free()).
 */
#ifndef PGOP_API_DECODE_H
#define PGOP_API_DECODE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/cluster.h"

struct api_dec {
	struct api_errors *errs; /* borrowed, may be NULL */
	size_t n;                /* errors seen (also when errs is NULL) */
	char *first;             /* owned: "path: msg" of the first error */
};

/* Owned "path.key" ("key" when path is empty). */
char *api_dec_join(const char *path, const char *key);
/* Owned "path[i]". */
char *api_dec_index(const char *path, size_t i);
void api_dec_error(struct api_dec *d, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Each getter: absent or null -> false, nothing written; wrong type -> error
 * recorded, false; right type -> true and *out written (a string replaces
 * and frees any previous *out). */
json_object *api_dec_obj(struct api_dec *d, json_object *obj, const char *path, const char *key);
json_object *api_dec_arr(struct api_dec *d, json_object *obj, const char *path, const char *key);
bool api_dec_str(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 char **out);
bool api_dec_i64(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 int64_t *out);
bool api_dec_bool(struct api_dec *d, json_object *obj, const char *path, const char *key,
		  bool *out);
/* Array of strings. */
void api_dec_strv(struct api_dec *d, json_object *obj, const char *path, const char *key,
		  struct api_strv *out);
/* Object of strings (numbers too when numbers_ok: quantities like `cpu: 1`). */
void api_dec_kvs(struct api_dec *d, json_object *obj, const char *path, const char *key,
		 struct api_kvs *out, bool numbers_ok);

void api_kvs_done(struct api_kvs *kvs);

/* Decoders shared by cluster.c and backup.c (defined in cluster.c). */
void api_dec_metadata(struct api_dec *d, json_object *o, const char *p, struct api_metadata *m);
void api_dec_secret_ref(struct api_dec *d, json_object *o, const char *p,
			struct api_secret_ref *r);
/* s3Credentials into b->s3 (sets b->has_s3_credentials). */
void api_dec_s3_credentials(struct api_dec *d, json_object *o, const char *p,
			    struct api_barman_store *b);
/* obj.key as a barman object store: *ret (owned, api_barman_store_free)
 * allocated when present. */
void api_dec_barman_store(struct api_dec *d, json_object *obj, const char *path, const char *key,
			  struct api_barman_store **ret);
/* Frees a store and everything in it; accepts NULL; returns NULL. */
struct api_barman_store *api_barman_store_free(struct api_barman_store *b);
void api_secret_ref_done(struct api_secret_ref *r);
void api_s3_credentials_done(struct api_s3_credentials *s3);
void api_metadata_done(struct api_metadata *m);

/* placement.c: spec.affinity into a (its JSON copies owned by a), and
 * spec.nodeMaintenanceWindow into m; api_affinity_done frees a's contents. */
void api_dec_affinity(struct api_dec *d, json_object *o, const char *p, struct api_affinity *a);
void api_dec_node_maintenance(struct api_dec *d, json_object *o, const char *p,
			      struct api_node_maintenance *m);
void api_affinity_done(struct api_affinity *a);
/* An owned deep copy of obj.key when it has JSON type t (an error recorded
 * otherwise); NULL when absent, null or mistyped. */
json_object *api_dec_copy(struct api_dec *d, json_object *obj, const char *path, const char *key,
			  json_type t);

/* Shorthands for the decoders (a `struct api_dec *d` in scope): every one
 * takes (obj, path, key) where path names obj. */
#define STR(o, p, k, out) api_dec_str(d, o, p, k, out)
#define I64(o, p, k, out) api_dec_i64(d, o, p, k, out)
#define BOOL(o, p, k, out) api_dec_bool(d, o, p, k, out)
/* Decodes obj.key as an object and calls fn(d, child, child_path, arg). */
#define SUB(o, p, k, fn, arg)                                                                      \
	do {                                                                                       \
		json_object *_c = api_dec_obj(d, o, p, k);                                         \
		if (_c) {                                                                          \
			_cleanup_free_ char *_cp = api_dec_join(p, k);                             \
			fn(d, _c, _cp, arg);                                                       \
		}                                                                                  \
	} while (0)

#endif
