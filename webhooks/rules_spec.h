/* webhooks/rules_spec.h - internal to webhooks/: the V1-V58 rule functions
 * (defined in rules_spec_<area>.c, listed in order by rules_spec.c) and the
 * small read-only helpers they share (rules_spec_util.c).
 *
 * All json_object pointers taken or returned here are BORROWED from the
 * context (ctx->obj / ctx->spec) and live as long as it. Returned strings
 * are borrowed from the JSON tree too, unless stated otherwise.
 */
#ifndef PGOP_WEBHOOKS_RULES_SPEC_H
#define PGOP_WEBHOOKS_RULES_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "api/barman_args.h"
#include "api/cluster.h"
#include "webhooks/lookup.h"
#include "webhooks/rules.h"

/* ---- helpers (rules_spec_util.c) ---- */

/* Typed lookups (wh_at, wh_obj, wh_str, wh_i64, ...) are in lookup.h. */

/* metadata.annotations[key] of the Cluster, or NULL. */
static inline const char *wh_annotation(const struct wh_ctx *ctx, const char *key)
{
	return wh_cluster_annotation(ctx->obj, key);
}
/* spec.postgresql.parameters[key] (string), or NULL. */
const char *wh_param(const struct wh_ctx *ctx, const char *key);
/* Whether spec.externalClusters has an entry called name (borrowed entry). */
json_object *wh_external_cluster(const struct wh_ctx *ctx, const char *name);

/* A quantity value v (borrowed, not NULL): a JSON string or number. 0 or
 * -EINVAL. */
OP_MUST_CHECK int wh_quantity_value(json_object *v, struct api_quantity *ret);
/* A quantity field that may be a JSON string or number (its text is parsed,
 * as Quantity.UnmarshalJSON does), exact (api_quantity_parse_exact). 1 =
 * parsed, 0 = absent, -EINVAL = present but invalid. */
OP_MUST_CHECK int wh_quantity_at(json_object *root, const char *dotted, struct api_quantity *ret);

/* PostgreSQL major version of the cluster (wh_cluster_major), -1 when it
 * does not resolve. */
static inline int api_pg_major(const struct wh_ctx *ctx)
{
	int major;
	return wh_cluster_major(ctx->obj, &major) ? major : -1;
}
/* CNPG IsReplica() of the cluster (wh_cluster_is_replica). */
static inline bool wh_is_replica(const struct wh_ctx *ctx)
{
	return wh_cluster_is_replica(ctx->obj);
}
/* PostgreSQL boolean (parse_bool): on/off/true/false/yes/no/1/0 and
 * unambiguous prefixes, case-insensitive. */
bool api_pg_bool_parse(const char *v, bool *ret);
/* A PostgreSQL size as CNPG reads it (parsePostgresQuantityValue): a bare
 * number means MB, otherwise the value must end in "B" ("8kB", "128 MB",
 * "1.5GB", "100B") and kB/MB/GB/TB are binary multiples. Writes the exact
 * byte count (api_quantity nano-units); 0 or -EINVAL. */
OP_MUST_CHECK int api_pg_size_parse(const char *v, struct api_quantity *ret_bytes);
/* Postgres-identifier-like regex ^[A-Za-z_][A-Za-z0-9_$]*$ on s[0..n). */
bool wh_is_pg_ident(const char *s, size_t n);
/* DNS-1035 label / RFC 1123 label / subdomain / qualified name / label value. */
bool wh_is_dns1035_label(const char *s);
bool wh_is_dns1123_subdomain(const char *s);
bool wh_is_qualified_name(const char *s);
bool wh_is_label_value(const char *s);
/* Validates a metav1.LabelSelector at path; records errors in res. */
void wh_check_label_selector(json_object *sel, const char *path, struct wh_result *res);

/* A barmanObjectStore at path (a Cluster's, or an ObjectStore's
 * spec.configuration): V51 location, V52 parallelism, V53 codecs, V54
 * serverName (rules_spec_backup.c). */
void wh_check_barman_store(json_object *store, const char *path, struct wh_result *res);
/* V28's credentials check of the barmanObjectStore at path: one and only one
 * of s3/azure/google credentials, each complete (rules_spec_replica.c). */
void wh_check_store_credentials(json_object *store, const char *path, struct wh_result *res);

/* ---- rule functions, one per V rule (admission-rules.md §4) ---- */
#define WH_RULE_FN(name) void name(const struct wh_ctx *ctx, struct wh_result *res)
/* rules_spec_bootstrap.c */
WH_RULE_FN(wh_v1_initdb);
WH_RULE_FN(wh_v2_recovery_app_db);
WH_RULE_FN(wh_v3_pg_basebackup_app_db);
WH_RULE_FN(wh_v4_import);
WH_RULE_FN(wh_v7_bootstrap_method);
WH_RULE_FN(wh_v10_recovery_target);
WH_RULE_FN(wh_v20_pg_basebackup_source);
WH_RULE_FN(wh_v22_recovery_source);
WH_RULE_FN(wh_v23_recovery_data_source);
/* rules_spec_cluster.c */
WH_RULE_FN(wh_v5_superuser_secret);
WH_RULE_FN(wh_v6_certs);
WH_RULE_FN(wh_v8_image_name);
WH_RULE_FN(wh_v9_image_pull_policy);
WH_RULE_FN(wh_v11_primary_update_strategy);
WH_RULE_FN(wh_v12_min_sync_replicas);
WH_RULE_FN(wh_v13_max_sync_replicas);
WH_RULE_FN(wh_v18_name);
WH_RULE_FN(wh_v25_tolerations);
WH_RULE_FN(wh_v26_anti_affinity);
WH_RULE_FN(wh_v42_hibernation_annotation);
WH_RULE_FN(wh_v43_pod_patch_annotation); /* rules_spec_podpatch.c */
WH_RULE_FN(wh_v46_liveness_pinger);
WH_RULE_FN(wh_v49_service_account);
WH_RULE_FN(wh_v50_primary_lease);
/* rules_spec_storage.c */
WH_RULE_FN(wh_v14_storage_size);
WH_RULE_FN(wh_v15_wal_storage_size);
WH_RULE_FN(wh_v16_ephemeral_volume_source);
WH_RULE_FN(wh_v17_tablespace_storage_size);
WH_RULE_FN(wh_v19_tablespace_names);
WH_RULE_FN(wh_v21_tablespace_backup_snapshot);
WH_RULE_FN(wh_v41_resources);
/* rules_spec_replica.c */
WH_RULE_FN(wh_v24_external_clusters);
WH_RULE_FN(wh_v27_replica_mode);
WH_RULE_FN(wh_v28_backup_configuration);
WH_RULE_FN(wh_v29_retention_policy);
WH_RULE_FN(wh_v44_promotion_token);
WH_RULE_FN(wh_v45_plugins);
/* rules_spec_managed.c */
WH_RULE_FN(wh_v37_env);
WH_RULE_FN(wh_v38_managed_services);
WH_RULE_FN(wh_v39_managed_roles);
WH_RULE_FN(wh_v47_pod_selector_refs);
WH_RULE_FN(wh_v48_extensions);
/* rules_spec_postgres.c */
WH_RULE_FN(wh_v30_configuration);
WH_RULE_FN(wh_v31_synchronous);
WH_RULE_FN(wh_v32_failover_quorum_annotation);
WH_RULE_FN(wh_v33_failover_quorum);
WH_RULE_FN(wh_v34_ldap);
WH_RULE_FN(wh_v35_replication_slots);
WH_RULE_FN(wh_v36_synchronize_logical_decoding);
WH_RULE_FN(wh_v40_pg_failover_slots);
/* rules_spec_backup.c (pgop's own) */
WH_RULE_FN(wh_v51_store_location);
WH_RULE_FN(wh_v52_store_parallelism);
WH_RULE_FN(wh_v53_store_codecs);
WH_RULE_FN(wh_v54_store_server_name);
WH_RULE_FN(wh_v55_recovery_backup_name);
WH_RULE_FN(wh_v56_plugin_names);
WH_RULE_FN(wh_v57_backup_target);
WH_RULE_FN(wh_v58_store_command_args);
/* The additionalCommandArgs of tool in store (a barmanObjectStore) parsed
 * (api_barman_args_parse): for V58 and the warnings on the options pgop does
 * not act on (rules_warnings.c). */
int wh_store_args_parse(json_object *store, enum api_barman_tool tool,
			struct api_barman_args *ret, api_barman_ignored_fn ignored, void *ud,
			struct op_err *err);

#endif
