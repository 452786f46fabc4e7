/* webhooks/rules_spec.c - the table of validation rules V1-V58 that run on
 * CREATE and UPDATE, in the order of admission-rules.md §4 (CNPG's
 * validate() for V1-V50, then pgop's own backup rules V51-V58). The rule
 * functions live in rules_spec_<area>.c; the table is the only place that
 * fixes their order.
 */
#include "webhooks/rules_spec.h"

#include "support/alloc.h"

#define CU (WH_OP_CREATE | WH_OP_UPDATE)

const struct wh_rule wh_rules_spec[] = {
	{ "V1", CU, wh_v1_initdb },
	{ "V2", CU, wh_v2_recovery_app_db },
	{ "V3", CU, wh_v3_pg_basebackup_app_db },
	{ "V4", CU, wh_v4_import },
	{ "V5", CU, wh_v5_superuser_secret },
	{ "V6", CU, wh_v6_certs },
	{ "V7", CU, wh_v7_bootstrap_method },
	{ "V8", CU, wh_v8_image_name },
	{ "V9", CU, wh_v9_image_pull_policy },
	{ "V10", CU, wh_v10_recovery_target },
	{ "V11", CU, wh_v11_primary_update_strategy },
	{ "V12", CU, wh_v12_min_sync_replicas },
	{ "V13", CU, wh_v13_max_sync_replicas },
	{ "V14", CU, wh_v14_storage_size },
	{ "V15", CU, wh_v15_wal_storage_size },
	{ "V16", CU, wh_v16_ephemeral_volume_source },
	{ "V17", CU, wh_v17_tablespace_storage_size },
	{ "V18", CU, wh_v18_name },
	{ "V19", CU, wh_v19_tablespace_names },
	{ "V20", CU, wh_v20_pg_basebackup_source },
	{ "V21", CU, wh_v21_tablespace_backup_snapshot },
	{ "V22", CU, wh_v22_recovery_source },
	{ "V23", CU, wh_v23_recovery_data_source },
	{ "V24", CU, wh_v24_external_clusters },
	{ "V25", CU, wh_v25_tolerations },
	{ "V26", CU, wh_v26_anti_affinity },
	{ "V27", CU, wh_v27_replica_mode },
	{ "V28", CU, wh_v28_backup_configuration },
	{ "V29", CU, wh_v29_retention_policy },
	{ "V30", CU, wh_v30_configuration },
	{ "V31", CU, wh_v31_synchronous },
	{ "V32", CU, wh_v32_failover_quorum_annotation },
	{ "V33", CU, wh_v33_failover_quorum },
	{ "V34", CU, wh_v34_ldap },
	{ "V35", CU, wh_v35_replication_slots },
	{ "V36", CU, wh_v36_synchronize_logical_decoding },
	{ "V37", CU, wh_v37_env },
	{ "V38", CU, wh_v38_managed_services },
	{ "V39", CU, wh_v39_managed_roles },
	{ "V40", CU, wh_v40_pg_failover_slots },
	{ "V41", CU, wh_v41_resources },
	{ "V42", CU, wh_v42_hibernation_annotation },
	{ "V43", CU, wh_v43_pod_patch_annotation },
	{ "V44", CU, wh_v44_promotion_token },
	{ "V45", CU, wh_v45_plugins },
	{ "V46", CU, wh_v46_liveness_pinger },
	{ "V47", CU, wh_v47_pod_selector_refs },
	{ "V48", CU, wh_v48_extensions },
	{ "V49", CU, wh_v49_service_account },
	{ "V50", CU, wh_v50_primary_lease },
	/* pgop's own (after CNPG's): backups */
	{ "V51", CU, wh_v51_store_location },
	{ "V52", CU, wh_v52_store_parallelism },
	{ "V53", CU, wh_v53_store_codecs },
	{ "V54", CU, wh_v54_store_server_name },
	{ "V55", CU, wh_v55_recovery_backup_name },
	{ "V56", CU, wh_v56_plugin_names },
	{ "V57", CU, wh_v57_backup_target },
	{ "V58", CU, wh_v58_store_command_args },
};

const size_t wh_rules_spec_count = OP_ARRAY_SIZE(wh_rules_spec);
