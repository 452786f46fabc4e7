/* api/backup.h - the backup kinds decoded into C structs, and the Backup and
 * ScheduledBackup status the controllers write:
 *   Backup, ScheduledBackup   postgresql.cnpg.io/v1 (CloudNativePG 1.27/1.28)
 *   ObjectStore               barmancloud.cnpg.io/v1 (plugin-barman-cloud)
 * Named api_backup_obj so it does not clash with struct api_backup, the
 * Cluster's spec.backup (api/cluster.h).
 *
 * Decoding is api_cluster_decode's contract: JSON types only (semantics are
 * the webhooks'), EVERY type error collected with its field path
 * ("spec.cluster.name" / "expected string, got integer"), -EINVAL and nothing
 * written when there was one. Absent fields are NULL / 0 / empty, or the CRD
 * default noted ("default: x").
 *
 * Ownership: every char * and array inside the structs is OWNED by the
 * object and released by its *_free(). Encoders return OWNED json-c objects
 * (json_object_put) or append to a caller-owned op_buf.
 */
#ifndef PGOP_API_BACKUP_H
#define PGOP_API_BACKUP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/cluster.h"
#include "support/buf.h"
#include "support/err.h"

#define API_BACKUP_GROUP "postgresql.cnpg.io"
#define API_BACKUP_API_VERSION "postgresql.cnpg.io/v1"
#define API_OBJECT_STORE_GROUP "barmancloud.cnpg.io"
#define API_OBJECT_STORE_API_VERSION "barmancloud.cnpg.io/v1"

/* Backup.status.phase (CloudNativePG's BackupPhase). */
enum api_backup_phase {
	API_BACKUP_PHASE_NONE = 0,    /* no phase yet (a new Backup) */
	API_BACKUP_PHASE_PENDING,     /* "pending" */
	API_BACKUP_PHASE_STARTED,     /* "started" */
	API_BACKUP_PHASE_RUNNING,     /* "running" */
	API_BACKUP_PHASE_FINALIZING,  /* "finalizing" */
	API_BACKUP_PHASE_COMPLETED,   /* "completed" */
	API_BACKUP_PHASE_FAILED,      /* "failed" */
	API_BACKUP_PHASE_WAL_ARCHIVING_FAILING, /* "walArchivingFailing" */
	API_BACKUP_PHASE_UNKNOWN,     /* any other text (kept in phase_text) */
};
/* The phase's text ("" for NONE, "unknown" for UNKNOWN). Static. */
const char *api_backup_phase_name(enum api_backup_phase p);
/* The phase of a text; NULL or "" -> NONE; unknown text -> UNKNOWN. */
enum api_backup_phase api_backup_phase_parse(const char *s);
/* completed or failed: nothing more will happen (CloudNativePG IsDone). */
bool api_backup_phase_is_done(enum api_backup_phase p);
/* pending, started, running or finalizing (CloudNativePG IsInProgress, and
 * finalizing, which is still in progress). */
bool api_backup_phase_in_progress(enum api_backup_phase p);

/* spec.method of Backup and ScheduledBackup. */
enum api_backup_method {
	API_BACKUP_METHOD_BARMAN = 0,    /* "barmanObjectStore" (the default) */
	API_BACKUP_METHOD_VOLUME_SNAPSHOT, /* "volumeSnapshot" */
	API_BACKUP_METHOD_PLUGIN,        /* "plugin" */
	API_BACKUP_METHOD_UNKNOWN,       /* anything else (admission refuses it) */
};
const char *api_backup_method_name(enum api_backup_method m); /* static */
enum api_backup_method api_backup_method_parse(const char *s); /* NULL -> BARMAN */

/* spec.pluginConfiguration */
struct api_plugin_config {
	char *name;
	struct api_kvs parameters;
};

/* spec.onlineConfiguration */
struct api_online_config {
	bool has_wait_for_archive, wait_for_archive;         /* default: true */
	bool has_immediate_checkpoint, immediate_checkpoint; /* default: false */
};

/* The parts of the spec Backup and ScheduledBackup share. */
struct api_backup_common {
	char *cluster_name;  /* cluster.name (required by the schema) */
	char *target;        /* "primary" | "prefer-standby"; NULL: the Cluster's spec.backup.target */
	char *method_text;   /* default: "barmanObjectStore" */
	enum api_backup_method method;
	bool has_plugin_configuration;
	struct api_plugin_config plugin_configuration;
	bool has_online;     /* online set: else the method's default (true) */
	bool online;
	bool has_online_configuration;
	struct api_online_config online_configuration;
};

/* status.instanceID */
struct api_instance_id {
	char *pod_name;
	char *container_id; /* JSON "ContainerID" (CloudNativePG's spelling) */
	char *session_id;   /* "sessionID" */
};

/* Backup.status: decoded from the object and encoded back by
 * api_backup_status_json() / api_backup_status_merge_patch(). Timestamps
 * are Unix seconds (0 = unset), written as RFC 3339 ("…Z"). */
struct api_backup_status {
	enum api_backup_phase phase;
	char *phase_text;            /* only for API_BACKUP_PHASE_UNKNOWN */
	char *backup_id;             /* backupId: barman's YYYYMMDDTHHMMSS */
	char *backup_name;           /* backupName */
	char *destination_path, *endpoint_url, *server_name, *encryption;
	struct api_secret_ref endpoint_ca;     /* endpointCA {name,key} */
	bool has_s3_credentials;
	struct api_s3_credentials s3;          /* s3Credentials (Secret refs) */
	bool has_azure_credentials, has_google_credentials; /* kept as-is on decode only */
	char *begin_wal, *end_wal, *begin_lsn, *end_lsn;
	int64_t started_at, stopped_at;
	char *error, *command_output, *command_error;
	struct api_instance_id instance_id;
	char *method;                /* the method used */
	bool has_online, online;
	char *tablespace_map_file;   /* base64, as CloudNativePG's []byte */
	char *backup_label_file;     /* base64 */
	int64_t major_version;       /* majorVersion; 0 = unset */
	struct api_kvs plugin_metadata; /* pluginMetadata */
	struct api_strv snapshots;   /* snapshotBackupStatus.elements[].name */
};

struct api_backup_obj {
	struct api_metadata metadata;
	struct api_backup_common spec;
	struct api_backup_status status;
};

/* Decodes a Backup (obj borrowed; see the top of this file). Returns 0 and
 * *ret (owned, api_backup_obj_free) or -EINVAL (err names the first error,
 * errs, when not NULL, gets them all). */
OP_MUST_CHECK int api_backup_obj_decode(json_object *obj, struct api_errors *errs,
					struct api_backup_obj **ret, struct op_err *err);
/* Frees everything; accepts NULL; returns NULL. */
struct api_backup_obj *api_backup_obj_free(struct api_backup_obj *b);
static inline void api_backup_obj_freep(struct api_backup_obj **b) { api_backup_obj_free(*b); }

/* Releases what st owns and zeroes it (for a status built by the caller). */
void api_backup_status_done(struct api_backup_status *st);
/* Sets st->error (copied; NULL clears) and the phase to failed
 * (CloudNativePG SetAsFailed). */
void api_backup_status_set_failed(struct api_backup_status *st, const char *error);

/* The status as a JSON object, set fields only (omitempty, as CloudNativePG
 * marshals it). Owned. */
json_object *api_backup_status_json(const struct api_backup_status *st);
/* Appends the JSON merge patch (RFC 7386) {"status": {...}} that makes the
 * object's status exactly st: every field st knows is written, unset ones as
 * null (removed). For PATCH .../backups/<name>/status with content type
 * application/merge-patch+json. -EMSGSIZE past out's cap (err says so). */
OP_MUST_CHECK int api_backup_status_merge_patch(const struct api_backup_status *st,
						struct op_buf *out, struct op_err *err);

/* ---- ScheduledBackup ---- */

struct api_scheduled_backup_status {
	int64_t last_check_time, last_schedule_time, next_schedule_time; /* 0 = unset */
};

struct api_scheduled_backup {
	struct api_metadata metadata;
	struct api_backup_common spec; /* cluster, target, method, online, plugin */
	char *schedule;                /* spec.schedule (api/cron.h) */
	bool suspend;                  /* default: false */
	bool immediate;                /* default: false */
	char *backup_owner_reference;  /* "none" | "self" | "cluster"; default: "none" */
	struct api_scheduled_backup_status status;
};

OP_MUST_CHECK int api_scheduled_backup_decode(json_object *obj, struct api_errors *errs,
					      struct api_scheduled_backup **ret,
					      struct op_err *err);
struct api_scheduled_backup *api_scheduled_backup_free(struct api_scheduled_backup *s);
static inline void api_scheduled_backup_freep(struct api_scheduled_backup **s)
{
	api_scheduled_backup_free(*s);
}
/* {"status": {lastCheckTime, lastScheduleTime, nextScheduleTime}} as a merge
 * patch (unset ones null). -EMSGSIZE past out's cap. */
OP_MUST_CHECK int api_scheduled_backup_status_merge_patch(
	const struct api_scheduled_backup_status *st, struct op_buf *out, struct op_err *err);

/* The Backup a ScheduledBackup creates at `when` (Unix seconds): name
 * "<scheduled>-<YYYYMMDDhhmmss>" (CloudNativePG's), namespace, labels
 * cnpg.io/cluster and cnpg.io/scheduled-backup, the spec copied (cluster,
 * target, method, online, onlineConfiguration, pluginConfiguration), and
 * ownerReferences per backupOwnerReference: "self" -> the ScheduledBackup,
 * "cluster" -> cluster_uid's Cluster (cluster_uid may be NULL for "none"
 * and "self"). Owned. */
json_object *api_scheduled_backup_new_backup(const struct api_scheduled_backup *s, int64_t when,
					     const char *cluster_uid);

/* ---- ObjectStore (barmancloud.cnpg.io/v1) ---- */

struct api_object_store {
	struct api_metadata metadata;
	struct api_barman_store *configuration; /* spec.configuration; NULL when absent */
	char *retention_policy;                 /* spec.retentionPolicy; NULL when absent */
	bool has_instance_sidecar_configuration; /* accepted, not acted on */
};

OP_MUST_CHECK int api_object_store_decode(json_object *obj, struct api_errors *errs,
					  struct api_object_store **ret, struct op_err *err);
struct api_object_store *api_object_store_free(struct api_object_store *o);
static inline void api_object_store_freep(struct api_object_store **o)
{
	api_object_store_free(*o);
}

#endif
