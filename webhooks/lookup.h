/* webhooks/lookup.h - internal to webhooks/: typed read-only lookups on a
 * borrowed JSON tree, and small facts about a Cluster object, shared by
 * defaulting (defaults.c), the V rules (rules_spec*.c), the U/W rules and
 * validate.c. One helper set: everything typed on a dotted path is here.
 *
 * All json_object pointers taken or returned are BORROWED and live as long
 * as the tree; returned strings too. Nothing allocates. A JSON null counts
 * as absent everywhere.
 */
#ifndef PGOP_WEBHOOKS_LOOKUP_H
#define PGOP_WEBHOOKS_LOOKUP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Value at a dotted path (support/json op_json_at), or NULL when absent or null. */
json_object *wh_at(json_object *root, const char *dotted);
/* True when the dotted path holds a non-null value. */
bool wh_has(json_object *root, const char *dotted);
/* Same as wh_at, but only when the value is an object / array / string. */
json_object *wh_obj(json_object *root, const char *dotted);
json_object *wh_arr(json_object *root, const char *dotted);
const char *wh_str(json_object *root, const char *dotted);
/* A string that is present and non-empty, else NULL. */
const char *wh_nstr(json_object *root, const char *dotted);
/* Integer at a dotted path: true and *ret written when it is a JSON integer
 * within int64 or an integral double (3.0): op_json_to_i64, as api/ decodes. */
bool wh_i64(json_object *root, const char *dotted, int64_t *ret);
/* Boolean at a dotted path: true and *ret written when present as one. */
bool wh_bool(json_object *root, const char *dotted, bool *ret);
/* Number of elements of the array at dotted (0 when absent). */
size_t wh_len(json_object *root, const char *dotted);
/* Whether the string array at dotted contains s. */
bool wh_arr_has_str(json_object *root, const char *dotted, const char *s);

/* PostgreSQL major version of a Cluster (CNPG GetPostgresqlMajorVersion):
 * spec.imageCatalogRef.major (1..99999) when a catalog is used, else the
 * spec.imageName tag (api_image_major_version). False when it does not
 * resolve. */
bool wh_cluster_major(json_object *cluster, int *ret_major);
/* CNPG IsReplica(): spec.replica.enabled when set, else (replica.self, or
 * metadata.name when self is empty) != replica.primary; false without
 * spec.replica. */
bool wh_cluster_is_replica(json_object *cluster);
/* metadata.annotations[key] when a string, else NULL. */
const char *wh_cluster_annotation(json_object *cluster, const char *key);
/* Go strconv.ParseBool ("1 t T TRUE true True", "0 f F FALSE false False"). */
bool wh_parse_go_bool(const char *s, bool *ret);

#endif
