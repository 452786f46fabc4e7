/* webhooks/webhooks.h - admission for postgresql.cnpg.io/v1 Cluster, Backup
 * and ScheduledBackup, and barmancloud.cnpg.io/v1 ObjectStore.
 *
 * Admission is a pure function of (old, new): no network I/O, no locks, no
 * globals besides the read-only operator settings. The rules mirror
 * CloudNativePG (docs/admission-rules.md, with the rule IDs) and report the real
 * JSON field path of each problem.
 *
 * Files:
 *   admission.c   AdmissionReview v1 envelope (request decode, response encode)
 *   result.c      wh_result: collected errors and warnings
 *   defaults.c    D1-D14: defaulting, returned as a JSONPatch
 *   validate.c    the driver: bypass annotation, then every rule table in order
 *   rules_*.c     validation rules, one static const table per file (rules.h)
 *   kinds.c       the admitted kinds (enum wh_resource): defaulting and the
 *                 validation driver of Backup, ScheduledBackup, ObjectStore
 *   rules_backup.c their rules (B, S, O and their warnings)
 *   offline.c     `pgop validate`: the pipeline on manifest files (offline.h)
 *   http.c        the HTTPS handlers and route rows (http.h)
 *   guard.c       wh_guard, the reconciler's admission guard
 */
#ifndef PGOP_WEBHOOKS_WEBHOOKS_H
#define PGOP_WEBHOOKS_WEBHOOKS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "support/buf.h"
#include "support/err.h"

enum wh_op { WH_OP_CREATE = 1, WH_OP_UPDATE = 2 };
enum wh_kind { WH_MUTATE, WH_VALIDATE };

/* The kinds admission knows (docs/admission-rules.md). */
enum wh_resource {
	WH_RES_CLUSTER = 0,      /* postgresql.cnpg.io Cluster */
	WH_RES_BACKUP,           /* postgresql.cnpg.io Backup */
	WH_RES_SCHEDULED_BACKUP, /* postgresql.cnpg.io ScheduledBackup */
	WH_RES_OBJECT_STORE,     /* barmancloud.cnpg.io ObjectStore */
	WH_RES__COUNT,
};
/* Group and kind of r ("postgresql.cnpg.io", "Backup"). Static. */
const char *wh_resource_group(enum wh_resource r);
const char *wh_resource_kind(enum wh_resource r);
/* The resource of group/kind, or -ENOENT when pgop does not admit it. */
int wh_resource_find(const char *group, const char *kind);
/* The resource of an object from its apiVersion ("<group>/<version>") and
 * kind; -ENOENT when none. obj borrowed. */
int wh_resource_of(json_object *obj);

/* The kind of a field error, as Kubernetes' field.ErrorType (apimachinery
 * pkg/util/validation/field): it decides the words of the message and the
 * cause's reason. */
enum wh_error_type {
	WH_ERR_INVALID,     /* "Invalid value: <v>: <detail>"     FieldValueInvalid */
	WH_ERR_REQUIRED,    /* "Required value: <detail>"         FieldValueRequired */
	WH_ERR_FORBIDDEN,   /* "Forbidden: <detail>"              FieldValueForbidden */
	WH_ERR_DUPLICATE,   /* "Duplicate value: <v>"             FieldValueDuplicate */
	WH_ERR_UNSUPPORTED, /* "Unsupported value: <v>: supported values: ..."
			     *                                    FieldValueNotSupported */
};

/* One field error: path is the JSON path ("spec.maxSyncReplicas"), msg the
 * detail text, value the offending value rendered as Go's %v renders it in
 * field.Error (strings quoted; NULL when the message omits it). All owned. */
struct wh_issue {
	char *path;
	char *msg;
	enum wh_error_type type;
	char *value;
};

/* Everything admission found; owned by the caller, released with wh_result_done(). */
struct wh_result {
	struct wh_issue *errors;
	size_t n_errors;
	char **warnings; /* each owned */
	size_t n_warnings;
	/* BORROWED, set by wh_validate() while it runs: the object whose values
	 * error messages quote (looked up by the error's path). NULL elsewhere. */
	json_object *subject;
};

void wh_result_done(struct wh_result *res);
/* Record an error (formatted detail). The value is the one at path in
 * res->subject; when subject is set and nothing is at path the error is a
 * "Required value". Never fails (OOM aborts). */
void wh_result_error(struct wh_result *res, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with an explicit type (Required and Forbidden omit the value). */
void wh_result_typed(struct wh_result *res, enum wh_error_type type, const char *path,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* "Unsupported value: <v>: supported values: "a", "b"" for the value at path. */
void wh_result_unsupported(struct wh_result *res, const char *path,
			   const char *const *supported, size_t n_supported);
/* Record a warning (formatted message). */
void wh_result_warn(struct wh_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The message of an error without its path, as field.Error.ErrorBody():
 * "Invalid value: 3: maxSyncReplicas must be lower than ...". Owned. */
char *wh_issue_body(const struct wh_issue *e);
/* The cause reason of an error type ("FieldValueInvalid", ...). Static. */
const char *wh_error_reason(enum wh_error_type type);

/* Operator settings that defaulting reads (CNPG's operator configuration).
 * Set once at start-up, read-only afterwards. All strings are BORROWED and
 * must outlive every admission call; NULL or "" means unset. */
struct wh_settings {
	const char *default_image;        /* D1 POSTGRES_IMAGE_NAME; default WH_DEFAULT_IMAGE */
	const char *monitoring_configmap; /* D8 MONITORING_QUERIES_CONFIGMAP; default unset */
	const char *monitoring_secret;    /* D8 MONITORING_QUERIES_SECRET; default unset */
	const char *include_plugins;      /* D12 INCLUDE_PLUGINS, comma separated; default unset */
};

/* pgop runs PostgreSQL 15 (CNPG's default is 18.6-system-trixie). */
#define WH_DEFAULT_IMAGE "ghcr.io/cloudnative-pg/postgresql:15"

/* Installs settings (borrowed, must outlive use); NULL restores the defaults.
 * Not thread-safe: call before serving. */
void wh_settings_set(const struct wh_settings *settings);
/* The settings in force (never NULL; default_image never NULL or ""). */
const struct wh_settings *wh_settings_get(void);

/* Applies the defaulting rules to cluster (a Cluster object, modified in place).
 * On success *ret_patch is an OWNED JSON array of RFC 6902 operations turning
 * the input into the defaulted object (empty array when nothing changed).
 * Returns 0, or -EINVAL when cluster is not an object (err says why). */
OP_MUST_CHECK int wh_default(json_object *cluster, json_object **ret_patch, struct op_err *err);

/* Validates a (defaulted) Cluster. old is NULL on CREATE, else the stored
 * object (UPDATE rules run too). Borrowed arguments; findings go to res.
 * Returns the number of errors (0 = admitted). */
int wh_validate(json_object *cluster, json_object *old, struct wh_result *res);

/* Defaulting of any admitted kind (wh_default for a Cluster): obj modified
 * in place, *ret_patch the owned JSONPatch. 0 or -EINVAL (not an object). */
OP_MUST_CHECK int wh_default_resource(enum wh_resource r, json_object *obj,
				      json_object **ret_patch, struct op_err *err);
/* Validation of any admitted kind (wh_validate for a Cluster): obj and old
 * (NULL on CREATE) borrowed, already defaulted; findings in res. Returns the
 * number of errors. */
int wh_validate_resource(enum wh_resource r, json_object *obj, json_object *old,
			 struct wh_result *res);

/* Handles one AdmissionReview for the webhook of resource r (its route): a
 * request for another kind is answered allowed=false, 400. Otherwise as
 * wh_handle_review. */
OP_MUST_CHECK
int wh_handle_review_resource(enum wh_kind kind, enum wh_resource r, const char *body, size_t len,
			      struct op_buf *resp, struct op_err *err);

/* Handles one AdmissionReview request body for the Cluster's mutate or
 * validate path (wh_handle_review_resource with WH_RES_CLUSTER).
 * On success writes the AdmissionReview response into resp and returns 0 (HTTP
 * 200; a denied object is still 200 with allowed=false). Returns -EINVAL when
 * the body is not a usable AdmissionReview (HTTP 400; err names the field),
 * -EMSGSIZE when the response would exceed resp's cap. */
OP_MUST_CHECK
int wh_handle_review(enum wh_kind kind, const char *body, size_t len, struct op_buf *resp,
		     struct op_err *err);

/* The reconciler's admission guard (reconciler/reconciler.h rc_validate_fn,
 * matched by signature so webhooks/ does not depend on reconciler/; cmd/
 * wires it): defaults a copy of cluster (borrowed, left untouched) and
 * validates it with the CREATE rules. Returns 0 when admitted; 1 when not,
 * with *ret_reason (owned) "path: message, path: message" or the defaulting
 * error; -ENOMEM when the copy cannot be made. userdata unused. */
OP_MUST_CHECK int wh_guard(void *userdata, json_object *cluster, char **ret_reason);

#endif
