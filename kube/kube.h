/* kube/kube.h - the Kubernetes API client: configuration, resource addressing
 * and REST verbs (libcurl + json-c).
 *
 * Watch streams and the informer cache are in kube/watch.h, events and
 * Lease-based leader election in kube/leader.h.
 *
 * Threads: a struct kube_client is safe for concurrent use by any number of
 * threads (one curl easy handle per request, connection/TLS-session/DNS cache
 * shared through a locked CURLSH). kube_client_new() loads libcurl
 * (support/dl_curl.h; a missing library is its error) and runs
 * curl_global_init(CURL_GLOBAL_ALL) once.
 *
 * Errors: every call that talks to the API server returns 0 (or a count) on
 * success and a negative errno on failure, and fills the caller's op_err with
 * "<verb> <resource> <ns>/<name>: <Status.reason>: <Status.message> (<http>)".
 * HTTP status mapping (kube_errno_from_http):
 *   404 NotFound            -ENOENT
 *   409 AlreadyExists       -EEXIST   (create of an existing name)
 *   409 Conflict            -ESTALE   (update/patch with a stale resourceVersion)
 *   400 BadRequest, 422     -EINVAL   (validation; the Status message names the field)
 *   401, 403                -EACCES
 *   410 Gone/Expired        -ETIME    (stale resourceVersion on list/watch: relist)
 *   429 after retries       -EBUSY
 *   5xx after retries       -EIO      (503 -> -EAGAIN)
 *   response over the cap   -EMSGSIZE
 *   request timeout         -ETIMEDOUT
 *   connection refused / DNS / TLS  -ECONNREFUSED / -EHOSTUNREACH / -EPROTO
 *   kube_watch_stop / stop flag     -ECANCELED
 */
#ifndef PGOP_KUBE_KUBE_H
#define PGOP_KUBE_KUBE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"
#include "support/memfile.h"

/* ------------------------------------------------------------------------ */
/* Configuration                                                              */
/* ------------------------------------------------------------------------ */

/* Default service-account directory; env PGOP_SA_DIR overrides it (tests). */
#define KUBE_SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

/* How to reach and authenticate to one API server. All strings are owned by
 * the struct and freed by kube_config_free(). Inline *-data from a kubeconfig
 * is held in sealed memory files (support/memfile.h, /proc/self/fd/N, closed
 * by kube_config_free): every credential is reachable as a path for libcurl
 * and none is ever written to a filesystem. */
struct kube_config {
	char *server;            /* "https://host:port", no trailing slash */
	char *ca_file;           /* PEM CA bundle path, NULL = system roots */
	bool insecure_skip_tls_verify;
	char *client_cert_file;  /* PEM client certificate path, or NULL */
	char *client_key_file;   /* PEM client key path, or NULL */
	char *token;             /* static bearer token, or NULL */
	char *token_file;        /* bearer token file, re-read when it changes, or NULL */
	char *username;          /* basic auth (rare), or NULL */
	char *password;
	char *namespace;         /* context / in-cluster namespace; never NULL ("default") */
	char *context;           /* context name used, NULL for in-cluster */
	bool in_cluster;
	struct op_memfile mem[3]; /* materialized *-data; the first n_mem are open */
	size_t n_mem;
};

/* Loads the configuration: `path` (a --kubeconfig flag) when non-NULL, else
 * the first existing file in $KUBECONFIG (colon-separated; no merging), else
 * in-cluster. Returns 0 and an owned config in *ret_cfg; -ENOENT when there
 * is no cluster access at all (no kubeconfig and not in a pod: the controller
 * then serves webhooks only); -EINVAL for a malformed kubeconfig. A path given
 * explicitly that does not exist is -ENOENT too, with the path in err. */
OP_MUST_CHECK
int kube_config_load(const char *path, struct kube_config **ret_cfg, struct op_err *err);

/* Parses one kubeconfig file (YAML). context: NULL = current-context.
 * Supports clusters[].cluster.{server,certificate-authority(-data),
 * insecure-skip-tls-verify}, users[].user.{client-certificate(-data),
 * client-key(-data),token,tokenFile,username,password},
 * contexts[].context.{cluster,user,namespace}. Relative paths are resolved
 * against the kubeconfig's directory. */
OP_MUST_CHECK
int kube_config_from_file(const char *path, const char *context, struct kube_config **ret_cfg,
			  struct op_err *err);

/* Same from YAML text already in memory (base_dir resolves relative paths;
 * NULL = current directory). */
OP_MUST_CHECK
int kube_config_from_yaml(const char *yaml, size_t len, const char *base_dir, const char *context,
			  struct kube_config **ret_cfg, struct op_err *err);

/* In-cluster: $KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT, and
 * {token,ca.crt,namespace} under sa_dir (NULL = $PGOP_SA_DIR or
 * KUBE_SA_DIR_DEFAULT). -ENOENT when not running in a pod. */
OP_MUST_CHECK
int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret_cfg, struct op_err *err);

/* Frees everything (and closes the memory files). Accepts NULL; returns NULL. */
struct kube_config *kube_config_free(struct kube_config *cfg);

/* ------------------------------------------------------------------------ */
/* Resource addressing                                                        */
/* ------------------------------------------------------------------------ */

/* One group/version/resource. group "" = the core API (/api/v1). Any GVR can
 * be addressed with a caller-defined struct (static const or a compound
 * literal), e.g.
 *   static const struct kube_kind k = {"apps", "v1", "statefulsets", "StatefulSet", true};
 */
struct kube_kind {
	const char *group;     /* "" for core */
	const char *version;   /* "v1" */
	const char *resource;  /* plural, lower case: "pods" */
	const char *kind;      /* "Pod" */
	bool namespaced;
};

/* The built-in table, indexed by enum kube_kind_id. */
enum kube_kind_id {
	KUBE_K_PODS,
	KUBE_K_SERVICES,
	KUBE_K_ENDPOINTS,
	KUBE_K_ENDPOINTSLICES,
	KUBE_K_SECRETS,
	KUBE_K_CONFIGMAPS,
	KUBE_K_PVCS,
	KUBE_K_PVS,
	KUBE_K_NODES,
	KUBE_K_EVENTS,
	KUBE_K_SERVICEACCOUNTS,
	KUBE_K_ROLES,
	KUBE_K_ROLEBINDINGS,
	KUBE_K_CLUSTERROLES,
	KUBE_K_CLUSTERROLEBINDINGS,
	KUBE_K_LEASES,
	KUBE_K_DEPLOYMENTS,
	KUBE_K_REPLICASETS,
	KUBE_K_STATEFULSETS,
	KUBE_K_JOBS,
	KUBE_K_MUTATINGWEBHOOKCONFIGURATIONS,
	KUBE_K_VALIDATINGWEBHOOKCONFIGURATIONS,
	KUBE_K_APISERVICES,
	KUBE_K_CLUSTERS, /* postgresql.cnpg.io/v1 Cluster */
	KUBE_K_CRDS,
	KUBE_K_STORAGECLASSES,
	KUBE_K_NAMESPACES,
	KUBE_K_PODDISRUPTIONBUDGETS,
	KUBE_K_SUBJECTACCESSREVIEWS, /* create only: authorization.k8s.io/v1 */
	KUBE_K_TOKENREVIEWS,         /* create only: authentication.k8s.io/v1 */
	KUBE_K_BACKUPS,              /* postgresql.cnpg.io/v1 Backup */
	KUBE_K_SCHEDULEDBACKUPS,     /* postgresql.cnpg.io/v1 ScheduledBackup */
	KUBE_K_OBJECTSTORES,         /* barmancloud.cnpg.io/v1 ObjectStore */
	KUBE_K__COUNT
};

extern const struct kube_kind kube_kinds[KUBE_K__COUNT];

/* Shorthands: KUBE_PODS is a `const struct kube_kind *`. */
#define KUBE_KIND(id) (&kube_kinds[(id)])
#define KUBE_PODS KUBE_KIND(KUBE_K_PODS)
#define KUBE_SERVICES KUBE_KIND(KUBE_K_SERVICES)
#define KUBE_ENDPOINTS KUBE_KIND(KUBE_K_ENDPOINTS)
#define KUBE_ENDPOINTSLICES KUBE_KIND(KUBE_K_ENDPOINTSLICES)
#define KUBE_SECRETS KUBE_KIND(KUBE_K_SECRETS)
#define KUBE_CONFIGMAPS KUBE_KIND(KUBE_K_CONFIGMAPS)
#define KUBE_PVCS KUBE_KIND(KUBE_K_PVCS)
#define KUBE_PVS KUBE_KIND(KUBE_K_PVS)
#define KUBE_NODES KUBE_KIND(KUBE_K_NODES)
#define KUBE_EVENTS KUBE_KIND(KUBE_K_EVENTS)
#define KUBE_SERVICEACCOUNTS KUBE_KIND(KUBE_K_SERVICEACCOUNTS)
#define KUBE_ROLES KUBE_KIND(KUBE_K_ROLES)
#define KUBE_ROLEBINDINGS KUBE_KIND(KUBE_K_ROLEBINDINGS)
#define KUBE_CLUSTERROLES KUBE_KIND(KUBE_K_CLUSTERROLES)
#define KUBE_CLUSTERROLEBINDINGS KUBE_KIND(KUBE_K_CLUSTERROLEBINDINGS)
#define KUBE_LEASES KUBE_KIND(KUBE_K_LEASES)
#define KUBE_DEPLOYMENTS KUBE_KIND(KUBE_K_DEPLOYMENTS)
#define KUBE_REPLICASETS KUBE_KIND(KUBE_K_REPLICASETS)
#define KUBE_STATEFULSETS KUBE_KIND(KUBE_K_STATEFULSETS)
#define KUBE_JOBS KUBE_KIND(KUBE_K_JOBS)
#define KUBE_MUTATINGWEBHOOKCONFIGURATIONS KUBE_KIND(KUBE_K_MUTATINGWEBHOOKCONFIGURATIONS)
#define KUBE_VALIDATINGWEBHOOKCONFIGURATIONS KUBE_KIND(KUBE_K_VALIDATINGWEBHOOKCONFIGURATIONS)
#define KUBE_APISERVICES KUBE_KIND(KUBE_K_APISERVICES)
#define KUBE_CLUSTERS KUBE_KIND(KUBE_K_CLUSTERS)
#define KUBE_BACKUPS KUBE_KIND(KUBE_K_BACKUPS)
#define KUBE_SCHEDULEDBACKUPS KUBE_KIND(KUBE_K_SCHEDULEDBACKUPS)
#define KUBE_OBJECTSTORES KUBE_KIND(KUBE_K_OBJECTSTORES)
#define KUBE_CRDS KUBE_KIND(KUBE_K_CRDS)
#define KUBE_STORAGECLASSES KUBE_KIND(KUBE_K_STORAGECLASSES)
#define KUBE_NAMESPACES KUBE_KIND(KUBE_K_NAMESPACES)
#define KUBE_PODDISRUPTIONBUDGETS KUBE_KIND(KUBE_K_PODDISRUPTIONBUDGETS)
#define KUBE_SUBJECTACCESSREVIEWS KUBE_KIND(KUBE_K_SUBJECTACCESSREVIEWS)
#define KUBE_TOKENREVIEWS KUBE_KIND(KUBE_K_TOKENREVIEWS)

/* Finds a built-in kind by plural resource name ("pods") or Kind ("Pod"),
 * optionally qualified by group ("leases.coordination.k8s.io"). Borrowed
 * static pointer, or NULL. */
const struct kube_kind *kube_kind_lookup(const char *name);

/* "apiVersion" for the kind ("v1", "apps/v1"): writes into b (cleared first). */
struct op_buf;
OP_MUST_CHECK int kube_kind_api_version(const struct kube_kind *k, struct op_buf *b);

/* Appends the URL path for kind/ns/name/subresource to b (percent-encoding
 * ns and name): /api/v1/namespaces/<ns>/pods/<name>/status. ns NULL or "" for
 * cluster-scoped kinds or for "all namespaces"; name NULL for the collection. */
OP_MUST_CHECK
int kube_path(struct op_buf *b, const struct kube_kind *k, const char *ns, const char *name,
	      const char *subresource);

/* ------------------------------------------------------------------------ */
/* Client                                                                     */
/* ------------------------------------------------------------------------ */

struct kube_client;

/* The client-side rate limit (a token bucket per client). Creating one
 * Cluster takes ~23 requests, so 20/s (controller-runtime's default) made
 * the creation of 1,000 Clusters wait ~1,150 s on the client alone, and 50/s
 * ~460 s (bench/scale.sh, docs/internals/memory.md); the API server protects
 * itself (priority and fairness, 429 + Retry-After, which the client
 * honours). `pgop controller --kube-api-qps/--kube-api-burst` and the
 * chart's kubeAPI values override them. */
#define KUBE_QPS_DEFAULT 100 /* also spelled in `pgop controller --help` (KUBE__XSTR) */
#define KUBE_BURST_DEFAULT 200
#define KUBE__STR(x) #x
#define KUBE__XSTR(x) KUBE__STR(x)

struct kube_client_opts {
	double qps;                /* token bucket refill per second; 0 = KUBE_QPS_DEFAULT */
	int burst;                 /* bucket size; 0 = KUBE_BURST_DEFAULT */
	long timeout_ms;           /* whole non-watch request; 0 = 30000 */
	long connect_timeout_ms;   /* 0 = 10000 */
	int max_retries;           /* 429 and idempotent 5xx/connect retries; 0 = 5, -1 = none */
	long max_retry_after_ms;   /* cap on a server Retry-After; 0 = 10000 */
	size_t max_response;       /* body cap; 0 = OP_BUF_MAX_KUBE_RESPONSE */
	const char *user_agent;    /* borrowed during kube_client_new; NULL = "pgop/<ver>" */
};

/* Creates a client. Takes ownership of cfg (freed by kube_client_free, also
 * on failure). opts may be NULL (defaults above). */
OP_MUST_CHECK int kube_client_new(struct kube_config *cfg, const struct kube_client_opts *opts,
				  struct kube_client **ret_client, struct op_err *err);

/* Frees the client. All requests, watches and informers using it must have
 * finished. Accepts NULL; returns NULL. */
struct kube_client *kube_client_free(struct kube_client *c);

/* Borrowed: the configuration the client was built from. */
const struct kube_config *kube_client_config(const struct kube_client *c);
/* Borrowed: the default namespace (kubeconfig context / in-cluster file). */
const char *kube_client_namespace(const struct kube_client *c);

/* Request counters (for tests and metrics). */
struct kube_client_stats {
	uint64_t requests;     /* HTTP requests sent, retries included */
	uint64_t retries;      /* of which retries */
	uint64_t throttled_ms; /* time spent waiting for the client-side rate limiter */
};
void kube_client_stats(struct kube_client *c, struct kube_client_stats *ret_stats);
/* Appends the Prometheus family pgop_kube_requests_total{verb,code} (every
 * request and watch stream sent, retries included; verb = the HTTP method in
 * lower case or "watch"; code = the HTTP status, "other" for an uncounted
 * one, "error" when no answer came) and pgop_kube_throttled_seconds_total to
 * out (support/buf.h). Returns 0 or the op_buf error. */
struct op_buf;
OP_MUST_CHECK int kube_client_render_metrics(struct kube_client *c, struct op_buf *out);

/* ------------------------------------------------------------------------ */
/* Verbs                                                                      */
/* ------------------------------------------------------------------------ */

/* GET one object. *ret_obj: owned (json_object_put). */
OP_MUST_CHECK
int kube_get(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
	     json_object **ret_obj, struct op_err *err);

struct kube_list_opts {
	const char *label_selector;   /* "app=x,role in (a,b)", NULL = all */
	const char *field_selector;   /* "metadata.name=x", NULL = all */
	long limit;                   /* page size; 0 = server default (no paging) */
	const char *continue_token;   /* from metadata.continue of the previous page */
	const char *resource_version; /* NULL = most recent (quorum read) */
};

/* One LIST page (ns NULL = all namespaces). *ret_list: owned list object
 * ({"items":[...],"metadata":{"resourceVersion","continue"}}). Items get
 * "kind" and "apiVersion" from k when the server left them out (it does in
 * lists), so listed and watched objects look alike. */
OP_MUST_CHECK
int kube_list(struct kube_client *c, const struct kube_kind *k, const char *ns,
	      const struct kube_list_opts *opts, json_object **ret_list, struct op_err *err);

/* LIST following metadata.continue until done (page size opts->limit, 0 =
 * 500). *ret_list: owned, all items merged, metadata.resourceVersion of the
 * first page. A 410 on a continue token is -ETIME (restart the list). */
OP_MUST_CHECK
int kube_list_all(struct kube_client *c, const struct kube_kind *k, const char *ns,
		  const struct kube_list_opts *opts, json_object **ret_list, struct op_err *err);

/* Note for create/update/apply: obj is serialized with json-c, which caches
 * the text inside obj (a write): do not pass an object that another thread
 * is reading or serializing at the same time (informer copies are private).
 *
 * POST obj (borrowed) into ns. ret_obj may be NULL; else owned server copy.
 * An existing name is -EEXIST. */
OP_MUST_CHECK
int kube_create(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
		json_object **ret_obj, struct op_err *err);

/* PUT obj (borrowed; name from metadata.name, metadata.resourceVersion is the
 * optimistic-concurrency precondition). Stale resourceVersion is -ESTALE.
 * ret_obj may be NULL. */
OP_MUST_CHECK
int kube_update(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
		json_object **ret_obj, struct op_err *err);
/* Same on the status subresource (PUT .../<name>/status). */
OP_MUST_CHECK
int kube_update_status(struct kube_client *c, const struct kube_kind *k, const char *ns,
		       json_object *obj, json_object **ret_obj, struct op_err *err);

enum kube_patch_type {
	KUBE_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
	KUBE_PATCH_JSON,      /* application/json-patch+json (RFC 6902) */
	KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (core types only) */
	KUBE_PATCH_APPLY,     /* application/apply-patch+yaml (server-side apply; JSON is YAML) */
};

/* PATCH with a JSON document given as text (borrowed). ret_obj may be NULL. */
OP_MUST_CHECK
int kube_patch(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
	       enum kube_patch_type type, const char *patch, json_object **ret_obj,
	       struct op_err *err);
/* Same on the status subresource. */
OP_MUST_CHECK
int kube_patch_status(struct kube_client *c, const struct kube_kind *k, const char *ns,
		      const char *name, enum kube_patch_type type, const char *patch,
		      json_object **ret_obj, struct op_err *err);

/* Server-side apply of obj (borrowed) as field_manager (force = take
 * conflicting fields). Name from metadata.name. */
OP_MUST_CHECK
int kube_apply(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
	       const char *field_manager, bool force, json_object **ret_obj, struct op_err *err);

enum kube_propagation {
	KUBE_PROPAGATE_DEFAULT,    /* server default for the kind */
	KUBE_PROPAGATE_BACKGROUND,
	KUBE_PROPAGATE_FOREGROUND,
	KUBE_PROPAGATE_ORPHAN,
};

struct kube_delete_opts {
	enum kube_propagation propagation;
	const char *precondition_uid;              /* NULL = none */
	const char *precondition_resource_version; /* NULL = none; mismatch = -ESTALE */
	long grace_period_seconds;                 /* -1 = default; 0 = now */
};

/* DELETE. opts may be NULL. Not found is -ENOENT (callers that do not care
 * treat it as success). */
OP_MUST_CHECK
int kube_delete(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
		const struct kube_delete_opts *opts, struct op_err *err);

/* The general request every verb above goes through; use it for other
 * subresources (pods/eviction, serviceaccounts/token, apiservices/status...). */
struct kube_request {
	const char *method;           /* "GET", "POST", "PUT", "PATCH", "DELETE" */
	const struct kube_kind *kind; /* NULL: `path` is used as is */
	const char *ns;
	const char *name;
	const char *subresource;      /* "status", "eviction", "token", or NULL */
	const char *path;             /* raw path when kind is NULL ("/version") */
	const char *query;            /* already encoded, without '?', or NULL */
	const char *body;             /* borrowed, NUL-terminated, or NULL */
	const char *content_type;     /* NULL = "application/json" when body is set */
	const char *verb;             /* for messages ("get", "create"...), NULL = method */
	const char *msg_name;         /* name for messages when name is NULL (create) */
};

/* Sends req and parses a JSON reply. ret_obj may be NULL (body discarded);
 * otherwise owned, or NULL when the reply had no body. Returns the HTTP
 * status (2xx) on success. */
OP_MUST_CHECK
int kube_request(struct kube_client *c, const struct kube_request *req, json_object **ret_obj,
		 struct op_err *err);

/* Maps an HTTP status (+ Status.reason, may be NULL) to the -errno above. */
OP_MUST_CHECK int kube_errno_from_http(long http_status, const char *reason);

/* Label selectors evaluated client-side (e.g. on informer caches), same
 * grammar as the API server: comma-separated requirements, each one of
 *   key=value  key==value  key!=value  key  !key
 *   key in (v1,v2)  key notin (v1,v2)
 * Returns 1 when obj's metadata.labels match (an empty/NULL selector matches
 * everything), 0 when not, -EINVAL for a malformed selector (err says where). */
OP_MUST_CHECK int kube_selector_match(const char *selector, json_object *obj, struct op_err *err);

/* Small helpers on objects (borrowed results, NULL when absent). */
const char *kube_obj_name(json_object *obj);
const char *kube_obj_namespace(json_object *obj);
const char *kube_obj_resource_version(json_object *obj);
const char *kube_obj_uid(json_object *obj);

#endif
