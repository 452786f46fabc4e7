/* api/cluster.h - the postgresql.cnpg.io/v1 Cluster decoded into C structs.
 *
 * Only the fields the operator acts on are decoded; everything else stays in
 * the JSON object. Decoding checks JSON types only (not semantics: that is the
 * webhooks' job) and collects EVERY type error with its JSON field path, e.g.
 *   path "spec.storage.size", msg "expected string, got integer".
 *
 * Ownership: every char * and array inside struct api_cluster is OWNED by the
 * cluster and released by api_cluster_free(). Absent fields are NULL / 0 /
 * empty, or the CRD default where one is documented below ("default: x").
 */
#ifndef PGOP_API_CLUSTER_H
#define PGOP_API_CLUSTER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"

/* One type error found while decoding. Both strings owned by the list. */
struct api_field_error {
	char *path; /* "spec.storage.size", "spec.externalClusters[1].name" */
	char *msg;  /* "expected string, got integer" */
};

/* Caller-owned list of field errors; api_errors_done() frees the contents. */
struct api_errors {
	struct api_field_error *items;
	size_t n;
};
void api_errors_done(struct api_errors *errs);
/* Appends one error (strings copied). Never fails (OOM aborts). */
void api_errors_add(struct api_errors *errs, const char *path, const char *msg);

/* Ordered key/value list (JSON object order kept). All strings owned. */
struct api_kv {
	char *key;
	char *value;
};
struct api_kvs {
	struct api_kv *items;
	size_t n;
};
/* Borrowed value for key, or NULL. */
const char *api_kvs_get(const struct api_kvs *kvs, const char *key);

/* Owned string vector. */
struct api_strv {
	char **items;
	size_t n;
};

struct api_metadata {
	char *name, *namespace_, *uid, *resource_version;
	int64_t generation;
	struct api_kvs labels, annotations;
};

struct api_storage {
	bool present;
	char *size;          /* quantity text ("1Gi"); parse with api_quantity_parse */
	char *storage_class; /* storageClass */
	bool resize_in_use_volumes; /* default: true */
	bool has_pvc_template;
	char *pvc_storage_class;    /* pvcTemplate.storageClassName */
	char *pvc_request_storage;  /* pvcTemplate.resources.requests.storage */
};

struct api_secret_ref {
	char *name; /* NULL when absent */
	char *key;  /* only for key selectors */
};

struct api_initdb {
	bool present;
	char *database, *owner, *encoding, *locale_collate, *locale_ctype, *locale;
	char *locale_provider, *icu_locale, *builtin_locale;
	struct api_secret_ref secret;
	bool data_checksums;
	int64_t wal_segment_size; /* MB, 0 = default */
	struct api_strv options, post_init_sql, post_init_application_sql, post_init_template_sql;
	char *import_type; /* import.type, NULL without import */
};

struct api_pg_basebackup {
	bool present;
	char *source, *database, *owner;
	struct api_secret_ref secret;
};

/* bootstrap.recovery.recoveryTarget: at most one of the target_* is set
 * (webhooks V10). Strings are the user's text, unparsed. */
struct api_recovery_target {
	char *backup_id;   /* backupID */
	char *target_tli;  /* targetTLI: "latest" or a number */
	char *target_xid;  /* targetXID */
	char *target_name; /* targetName (a restore point) */
	char *target_lsn;  /* targetLSN "X/Y" */
	char *target_time; /* targetTime (RFC 3339 or PostgreSQL timestamp) */
	bool target_immediate; /* targetImmediate */
	bool has_target_immediate; /* targetImmediate present, even false (CNPG tests != nil) */
	bool exclusive;    /* default: false (the target is included) */
};

struct api_recovery {
	bool present;
	char *source;      /* an externalClusters[].name */
	char *database, *owner;
	char *backup_name; /* backup.name: a Backup in the Cluster's namespace */
	struct api_secret_ref backup_endpoint_ca; /* backup.endpointCA */
	struct api_secret_ref secret;
	bool has_volume_snapshots;
	bool has_recovery_target;
	struct api_recovery_target target;
};

/* The S3 credentials of a barman object store: each a Secret key selector
 * ({name,key}, both NULL when absent). */
struct api_s3_credentials {
	struct api_secret_ref access_key_id, secret_access_key, region, session_token;
	bool inherit_from_iam_role; /* default: false */
};

/* barmanObjectStore.wal */
struct api_barman_wal {
	char *compression; /* gzip | bzip2 | lz4 | snappy | xz | zstd; NULL: none */
	char *encryption;  /* AES256 | aws:kms; NULL: none */
	int64_t max_parallel; /* 0 = unset (barman-cloud's default: 1) */
	struct api_strv archive_additional_command_args, restore_additional_command_args;
};

/* barmanObjectStore.data */
struct api_barman_data {
	char *compression, *encryption;
	int64_t jobs; /* 0 = unset (barman-cloud's default: 2) */
	bool immediate_checkpoint;
	struct api_strv additional_command_args, restore_additional_command_args;
};

/* CloudNativePG's BarmanObjectStoreConfiguration (barman-cloud
 * pkg/api/config.go), in spec.backup.barmanObjectStore and
 * spec.externalClusters[].barmanObjectStore. Everything OWNED by the
 * struct; freed with the cluster. Azure and Google credentials are only
 * noted (pgop talks to S3-compatible stores). */
struct api_barman_store {
	char *destination_path; /* "s3://bucket/path" (required by the schema) */
	char *endpoint_url;     /* NULL: AWS */
	struct api_secret_ref endpoint_ca;
	char *server_name;      /* NULL: see api_barman_server_name() */
	bool has_s3_credentials;
	struct api_s3_credentials s3;
	bool has_azure_credentials, has_google_credentials;
	struct api_barman_wal wal;
	struct api_barman_data data;
	struct api_kvs tags, history_tags;
};

/* spec.backup */
struct api_backup {
	struct api_barman_store *barman; /* barmanObjectStore; NULL when absent */
	bool barman_from_plugin;         /* barman is the plugin's ObjectStore (api/plugin.h) */
	char *retention_policy;          /* "30d"; NULL when absent */
	char *target;                    /* default: "prefer-standby" */
	bool has_volume_snapshot;        /* volumeSnapshot set */
};

/* A CNPG-I plugin: spec.plugins[i] and externalClusters[i].plugin. */
struct api_plugin {
	char *name;
	bool enabled;         /* default: true (spec.plugins only) */
	bool is_wal_archiver; /* default: false (spec.plugins only) */
	struct api_kvs parameters;
};

struct api_bootstrap {
	struct api_initdb initdb;
	struct api_pg_basebackup pg_basebackup;
	struct api_recovery recovery;
};

struct api_synchronous {
	bool present;
	char *method;          /* "any" | "first" */
	int64_t number;
	int64_t max_standby_names_from_cluster; /* -1 when absent */
	struct api_strv standby_names_pre, standby_names_post;
	char *data_durability; /* "required" | "preferred" */
	bool failover_quorum;
};

struct api_postgresql {
	struct api_kvs parameters; /* spec.postgresql.parameters, in JSON order */
	struct api_strv pg_hba, pg_ident, shared_preload_libraries;
	struct api_synchronous synchronous;
	bool enable_alter_system;
};

struct api_replication_slots {
	bool ha_enabled;   /* default: true */
	char *slot_prefix; /* default: NULL meaning "_cnpg_" (see api_cluster_slot_prefix) */
	int64_t update_interval; /* default: 30 */
	bool sync_replicas_enabled; /* default: true */
	struct api_strv sync_exclude_patterns;
};

struct api_certificates {
	char *server_ca_secret, *server_tls_secret, *replication_tls_secret, *client_ca_secret;
	struct api_strv server_alt_dns_names;
};

struct api_external_cluster {
	char *name;
	struct api_kvs connection_parameters; /* values are strings */
	struct api_secret_ref ssl_cert, ssl_key, ssl_root_cert, password;
	struct api_barman_store *barman_object_store; /* NULL when absent */
	bool store_from_plugin; /* barman_object_store is the plugin's ObjectStore (api/plugin.h) */
	struct api_plugin *plugin;                    /* NULL when absent */
};

struct api_resources {
	struct api_kvs requests, limits; /* quantity strings ("500m", "1Gi") */
};

/* spec.affinity (CloudNativePG's AffinityConfiguration; api/placement.c).
 * The Kubernetes core types (tolerations, nodeAffinity, the additional pod
 * (anti-)affinity) are passed through to the Pods unchanged, as CloudNativePG
 * does: they are kept as OWNED deep copies (json_object_put), NULL when
 * absent; the API server validates them against the CRD schema and again in
 * the Pod. */
struct api_affinity {
	bool enable_pod_anti_affinity; /* default: true */
	char *pod_anti_affinity_type;  /* "preferred" | "required" | NULL (= preferred, D4) */
	char *topology_key;            /* NULL = "kubernetes.io/hostname" */
	struct api_kvs node_selector;
	json_object *tolerations;                  /* array */
	json_object *node_affinity;                /* object (core/v1 NodeAffinity) */
	json_object *additional_pod_affinity;      /* object (core/v1 PodAffinity) */
	json_object *additional_pod_anti_affinity; /* object (core/v1 PodAntiAffinity) */
};

/* spec.nodeMaintenanceWindow (CloudNativePG's NodeMaintenanceWindow). */
struct api_node_maintenance {
	bool present;
	bool in_progress; /* inProgress; default: false */
	bool reuse_pvc;   /* reusePVC; default: true */
};

/* spec.monitoring (CloudNativePG's MonitoringConfiguration). */
struct api_monitoring {
	bool disable_default_queries;   /* default: false */
	bool enable_pod_monitor;        /* default: false */
	bool tls_enabled;               /* tls.enabled; default: false */
	char *metrics_queries_ttl;      /* a Go duration ("30s"); NULL = unset (no cache) */
	struct api_secret_ref *custom_configmaps; /* customQueriesConfigMap[]: name + key */
	size_t n_custom_configmaps;
	struct api_secret_ref *custom_secrets;    /* customQueriesSecret[]: name + key */
	size_t n_custom_secrets;
};

/* spec.tablespaces[]: a volume per instance (api_tablespace_pvc_name),
 * mounted where the tablespace's location is (api_tablespace_location),
 * and the tablespace the primary creates there. */
struct api_tablespace {
	char *name;
	struct api_storage storage;
	char *owner;    /* owner.name; D10 defaults it (NULL: the application owner) */
	bool temporary; /* in temp_tablespaces */
};

struct api_cluster_spec {
	int64_t instances;         /* default: 1 */
	char *image_name;
	bool has_image_catalog_ref;
	char *image_catalog_name;
	int64_t image_catalog_major; /* 0 when absent */
	char *image_pull_policy;
	struct api_postgresql postgresql;
	int64_t min_sync_replicas, max_sync_replicas; /* default: 0 */
	struct api_bootstrap bootstrap;
	struct api_storage storage, wal_storage;
	struct api_secret_ref superuser_secret;
	bool enable_superuser_access; /* default: false */
	char *primary_update_strategy; /* NULL = "unsupervised" */
	char *primary_update_method;   /* NULL = "restart" */
	struct api_replication_slots replication_slots;
	struct api_certificates certificates;
	struct api_external_cluster *external_clusters;
	size_t n_external_clusters;
	struct api_tablespace *tablespaces; /* spec.tablespaces, n_tablespaces entries */
	size_t n_tablespaces;
	struct api_resources resources;
	struct api_affinity affinity;
	int64_t postgres_uid, postgres_gid; /* default: 26 */
	char *log_level;
	bool enable_pdb; /* default: true */
	json_object *topology_spread_constraints; /* owned array copy, NULL when absent */
	struct api_node_maintenance node_maintenance; /* nodeMaintenanceWindow */
	/* Delays in seconds (CRD defaults): startDelay 3600, stopDelay 1800,
	 * smartShutdownTimeout 180, switchoverDelay 3600, failoverDelay 0;
	 * livenessProbeTimeout 0 = unset. */
	int64_t start_delay, stop_delay, smart_shutdown_timeout, switchover_delay, failover_delay;
	int64_t liveness_probe_timeout;
	char *service_account_name;
	bool has_backup;
	struct api_backup backup; /* meaningful when has_backup */
	struct api_plugin *plugins; /* spec.plugins, n_plugins entries */
	size_t n_plugins;
	struct api_monitoring monitoring;
};

struct api_cluster_status {
	char *phase, *phase_reason;
	int64_t instances, ready_instances;
	char *current_primary, *target_primary;
	int64_t latest_generated_node, timeline_id;
	struct api_strv instance_names;
	/* instancesStatus.healthy, written by the reconciler each reconcile */
	bool has_instances_status;
	struct api_strv healthy;
	/* the backups' times (RFC 3339, written by the reconciler's Backup
	 * steps), NULL when none yet */
	char *first_recoverability_point, *last_successful_backup, *last_failed_backup;
};

struct api_cluster {
	struct api_metadata metadata;
	struct api_cluster_spec spec;
	struct api_cluster_status status;
};

/* Decodes a Cluster object. obj is borrowed (nothing in the result points
 * into it). Every JSON type error is appended to errs (may be NULL to ignore
 * them). Returns 0 and writes *ret_cluster (owned, free with
 * api_cluster_free) when there was no type error; otherwise returns -EINVAL,
 * err names the first error and *ret_cluster is untouched. */
OP_MUST_CHECK
int api_cluster_decode(json_object *obj, struct api_errors *errs, struct api_cluster **ret_cluster,
		       struct op_err *err);

/* Frees everything; accepts NULL; returns NULL. */
struct api_cluster *api_cluster_free(struct api_cluster *c);
static inline void api_cluster_freep(struct api_cluster **c) { api_cluster_free(*c); }

/* The server name a barman object store files this Cluster under
 * (<destinationPath>/<serverName>/): store->server_name when set and not
 * empty, else the Cluster's metadata.name. Borrowed from store or c (lives
 * as long as they do); NULL when c has no name and the store none. */
const char *api_barman_server_name(const struct api_cluster *c,
				   const struct api_barman_store *store);

/* The object store of WAL archiving: spec.backup.barmanObjectStore with S3
 * credentials (or the IAM role), NULL otherwise (borrowed). */
const struct api_barman_store *api_cluster_wal_store(const struct api_cluster *c);

/* The Secret keys a barman object store names, as the instance Pod sees them:
 * the reconciler mounts each as volume "barman-<file>" holding just that key
 * as the file <file>, at <secrets dir>/barman-<file>/<file> (the instance
 * manager's --secrets-dir, INST_SECRETS_DIR in the Pod), and wal-archive
 * reads them from there at each call (a rotated Secret is used once the
 * kubelet refreshed the volume). */
enum api_barman_file {
	API_BARMAN_ACCESS_KEY_ID,
	API_BARMAN_SECRET_ACCESS_KEY,
	API_BARMAN_SESSION_TOKEN,
	API_BARMAN_REGION,
	API_BARMAN_ENDPOINT_CA,
	API_BARMAN_FILE__COUNT
};
/* "access-key-id", "secret-access-key", "session-token", "region", "endpoint-ca". */
const char *api_barman_file_name(enum api_barman_file f);
/* The Secret key selector behind f (borrowed); NULL when the store names none. */
const struct api_secret_ref *api_barman_file_ref(const struct api_barman_store *s,
						 enum api_barman_file f);

/* The recovery source's store (spec.bootstrap.recovery.source naming an
 * externalClusters[] entry with barmanObjectStore): its Secret keys are
 * mounted like the archive's, each as volume "recovery-<file>" holding the
 * file <file> (api_barman_file_name), at <secrets dir>/recovery-<file>/<file>;
 * `pgop instance init` reads them there to restore. This returns the volume
 * (and directory) name: "recovery-access-key-id", ... (static). */
const char *api_recovery_file_volume(enum api_barman_file f);
/* The externalClusters[] entry spec.bootstrap.recovery.source names when it
 * has a barmanObjectStore (borrowed), NULL otherwise. Its server name is
 * barmanObjectStore.serverName, else the entry's name (CloudNativePG). */
const struct api_external_cluster *api_cluster_recovery_source(const struct api_cluster *c);

/* CloudNativePG's IsNodeMaintenanceWindowInProgress and IsReusePVCEnabled
 * (api/placement.c): nodeMaintenanceWindow.inProgress, and its reusePVC
 * (true when the window or the field is absent). */
bool api_cluster_maintenance_in_progress(const struct api_cluster *c);
bool api_cluster_reuse_pvc(const struct api_cluster *c);

/* Effective replication slot prefix (spec value or "_cnpg_"); borrowed. */
const char *api_cluster_slot_prefix(const struct api_cluster *c);

/* Kubernetes resource quantity ("1Gi", "500M", "1.5Gi", "100m", "1e3") to
 * an integer, rounded up like resource.Quantity.Value(). Returns 0, or
 * -EINVAL (syntax) / -ERANGE (does not fit int64) with err saying why. */
OP_MUST_CHECK int api_quantity_parse(const char *s, int64_t *ret_value, struct op_err *err);

/* The exact value of a quantity, in nano-units (value x 1e9; GNU __int128,
 * |value| < 1.7e29). Digits past nano round up (away from zero), as
 * Kubernetes does when it parses a Quantity. "500m" is 5e8, "1Gi" 2^30 x 1e9. */
struct api_quantity {
	__int128 nano;
};

/* Same syntax and errors as api_quantity_parse (one parser), exact:
 * "100m" < "101m", "1.5Gi" is exactly 1.5 x 2^30. -ERANGE past 1.7e29. */
OP_MUST_CHECK
int api_quantity_parse_exact(const char *s, struct api_quantity *ret, struct op_err *err);

/* -1, 0 or 1 as a <, ==, > b (Quantity.Cmp). */
OP_MUST_CHECK int api_quantity_cmp(const struct api_quantity *a, const struct api_quantity *b);

/* Tag of an image reference: the text after the last ':' that follows the
 * last '/', before any "@digest" ("reg:5000/a/b:17.2@sha256:x" -> "17.2").
 * Writes a pointer into image (borrowed) and its length, and whether a
 * digest is present. Returns false when there is no explicit tag; the tag is
 * then "latest" (static), or "" when the reference has a digest. */
bool api_image_tag(const char *image, const char **ret_tag, size_t *ret_len, bool *ret_digest);

/* CloudNativePG's version.FromTag on tag[0..n): the longest prefix of
 * digits and single dots ("17.2" of "17.2-bookworm", "17" of "17beta1",
 * "18" of "18rc1"); its first number is the major, the second (if any) the
 * minor, which must be < 100. 0, or -EINVAL ("latest", "17.", "x17"). */
OP_MUST_CHECK int api_version_from_tag(const char *tag, size_t n, int *ret_major, int *ret_minor);

/* PostgreSQL major version from an image reference: api_version_from_tag of
 * its tag ("...:15", ":15.4", ":16.2-bookworm", ":17beta1", ":18rc1",
 * ":18.6-system-trixie@sha256:..."). Returns 0 and *ret_major, or -EINVAL
 * when there is no tag or it does not start with a version ("latest",
 * digest-only). */
OP_MUST_CHECK int api_image_major_version(const char *image, int *ret_major, struct op_err *err);

/* Frees the items of v and empties it (v itself is not freed). */
void api_strv_done(struct api_strv *v);
/* Appends a copy of s. */
void api_strv_push(struct api_strv *v, const char *s);

/* initdb (api/initdb.c) */

/* The initdb arguments of spec.bootstrap.initdb (CloudNativePG
 * buildInitDBFlags), one argv element each ("-k", "--encoding=UTF8"; a value
 * with blanks stays one element); a non-empty `options` replaces them all.
 * Each is checked with api_initdb_arg_check; -EINVAL names the field.
 * Appends owned copies to out. */
OP_MUST_CHECK
int api_initdb_args(const struct api_initdb *i, struct api_strv *out, struct op_err *err);
/* One initdb argument: an option ("-k", "--locale=C": a value goes after
 * '='), never a bare word (initdb would take it as the data directory), no
 * control characters, and not one the instance manager sets itself
 * (-D/--pgdata, -X/--waldir, -U/--username, --pwfile, --pwprompt, -W,
 * -A/--auth*). field names it in err ("spec.bootstrap.initdb.options[2]"). */
OP_MUST_CHECK int api_initdb_arg_check(const char *arg, const char *field, struct op_err *err);

#endif
