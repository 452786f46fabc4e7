/* webhooks/clusterinfo.h - internal to webhooks/: small read-only facts about
 * a Cluster JSON object shared by defaulting and the U/W rules.
 *
 * All json_object pointers are BORROWED; nothing allocates.
 */
#ifndef PGOP_WEBHOOKS_CLUSTERINFO_H
#define PGOP_WEBHOOKS_CLUSTERINFO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* Value at a dotted path if it has the wanted type, else NULL / false. */
json_object *wh_ci_obj(json_object *root, const char *dotted);
json_object *wh_ci_arr(json_object *root, const char *dotted);
const char *wh_ci_str(json_object *root, const char *dotted); /* NULL when absent */
bool wh_ci_i64(json_object *root, const char *dotted, int64_t *ret);
bool wh_ci_bool(json_object *root, const char *dotted, bool *ret);
/* True when key is present with a non-null value. */
bool wh_ci_has(json_object *root, const char *dotted);

/* PostgreSQL major version of the cluster (CNPG GetPostgresqlMajorVersion):
 * imageCatalogRef.major when a catalog is used, else the imageName tag.
 * Returns false when it does not resolve. */
bool wh_ci_major(json_object *cluster, int *ret_major);

/* CNPG IsReplica(): replica.enabled when set, else (replica.self or
 * metadata.name) != replica.primary; false without spec.replica. */
bool wh_ci_is_replica(json_object *cluster);

/* metadata.annotations[key] or NULL. */
const char *wh_ci_annotation(json_object *cluster, const char *key);

/* Go strconv.ParseBool. */
bool wh_ci_parse_go_bool(const char *s, bool *ret);

#endif
