/* apiserver/internal.h - shared between the apiserver/ files (not exported). */
#ifndef PGOP_APISERVER_INTERNAL_H
#define PGOP_APISERVER_INTERNAL_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "apiserver/apiserver.h"
#include "support/buf.h"

#define AS_NAME_MAX 253
#define AS_MAX_GROUPS 64
#define AS_MAX_EXTRA 32

/* ------------------------------------------------------------- requests */

/* Who asks (from the X-Remote-* headers). All strings owned. */
struct as_user {
	char *name;
	char **groups;
	size_t n_groups;
	char **extra_keys, **extra_vals; /* parallel; a key may repeat */
	size_t n_extra;
};
void as_user_done(struct as_user *u);

/* What is asked, for authorization (strings borrowed from the as_reqinfo). */
struct as_attrs {
	bool resource;           /* false: non-resource (path + verb) */
	const char *verb;        /* get, list, watch, create */
	const char *resource_name; /* "clusters" */
	const char *subresource; /* "" or "status" */
	const char *ns;          /* "" = all namespaces */
	const char *name;        /* "" = collection */
	const char *path;        /* non-resource */
};

enum as_target {
	AS_T_APIS,        /* /apis */
	AS_T_GROUP,       /* /apis/G */
	AS_T_GROUPVERSION, /* /apis/G/v1 */
	AS_T_OPENAPI_V2,
	AS_T_OPENAPI_V3,  /* root */
	AS_T_OPENAPI_V3_GV,
	AS_T_RESOURCE,
};

struct as_resource;

/* A parsed request path (as_parse_path, pure). */
struct as_reqinfo {
	enum as_target target;
	const struct as_resource *res; /* AS_T_RESOURCE */
	char ns[AS_NAME_MAX + 1];       /* "" = all namespaces */
	char name[AS_NAME_MAX + 1];     /* "" = collection */
	char sub[32];                   /* "" or a subresource name */
	const char *verb;               /* static */
};

/* Splits method + path. -ENOENT: not a path we serve (404); -EINVAL: a bad
 * name or namespace (400); -EOPNOTSUPP: method/verb not allowed on it (405).
 * err says why. watch: the query asked ?watch=true. */
OP_MUST_CHECK
int as_parse_path(const char *method, const char *path, bool watch, struct as_reqinfo *ri,
		  struct op_err *err);

/* Field selector of metadata.name / metadata.namespace terms ("=", "==",
 * "!="), comma separated. */
#define AS_FIELD_TERMS_MAX 8
struct as_fieldsel {
	struct {
		bool name; /* metadata.name, else metadata.namespace */
		bool neg;
		char value[AS_NAME_MAX + 1];
	} t[AS_FIELD_TERMS_MAX];
	size_t n;
};
/* -EINVAL (err: which term) for another field or a malformed selector. */
OP_MUST_CHECK int as_fieldsel_parse(const char *s, struct as_fieldsel *ret, struct op_err *err);
bool as_fieldsel_match(const struct as_fieldsel *f, const char *ns, const char *name);

/* Selectors and output form of a get/list/watch. */
struct as_query {
	const char *label; /* labelSelector, borrowed; NULL = all */
	struct as_fieldsel fields;
	bool table;
};

/* ------------------------------------------------------------ resources */

enum as_cell { AS_CELL_STR, AS_CELL_INT, AS_CELL_BOOL, AS_CELL_AGE, AS_CELL_LAG, AS_CELL_SEEN };

struct as_column {
	const char *name;
	const char *type;   /* OpenAPI type: string, integer, boolean */
	const char *format; /* "name" for the identity column, else "" */
	int priority;       /* 1 = -o wide */
	const char *path;   /* dotted path in the rendered object */
	enum as_cell cell;
	const char *description;
};

struct as_subresource {
	const char *name;
	const char *const *verbs; /* NULL-terminated */
};

struct as_resource {
	const char *name;      /* plural */
	const char *singular;
	const char *kind;
	const char *list_kind;
	const char *const *verbs;
	const char *const *short_names;
	const char *const *categories;
	const struct as_subresource *subs;
	size_t n_subs;
	const struct as_column *cols;
	size_t n_cols;
	const char *schema; /* OpenAPI v3 schema of the kind, JSON text */
};

extern const struct as_resource as_resources[];
extern const size_t as_n_resources;
const struct as_resource *as_resource_find(const char *plural);
const struct as_resource *as_resource_clusters(void);
const struct as_resource *as_resource_instances(void);

/* Discovery and OpenAPI documents into out (JSON). */
OP_MUST_CHECK int as_doc_group_list(struct op_buf *out);
OP_MUST_CHECK int as_doc_group(struct op_buf *out);
OP_MUST_CHECK int as_doc_resource_list(struct op_buf *out);
OP_MUST_CHECK int as_doc_discovery_v2(struct op_buf *out);
OP_MUST_CHECK int as_doc_openapi_v2(struct op_buf *out);
OP_MUST_CHECK int as_doc_openapi_v3_root(struct op_buf *out);
OP_MUST_CHECK int as_doc_openapi_v3_gv(struct op_buf *out);
#define AS_V2_CONTENT_TYPE "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
/* True when an Accept header asks for aggregated discovery v2 first. */
bool as_accept_v2(const char *accept);
/* True when an Accept header asks for a meta.k8s.io Table. */
bool as_accept_table(const char *accept);

/* ------------------------------------------------------ live objects */

/* What is known of one instance for rendering (borrowed pointers). */
struct as_inst_view {
	json_object *pod;  /* the Pod */
	json_object *doc;  /* last /pg/status, or NULL (never answered) */
	bool reachable;    /* the last fetch answered */
	int64_t seen_ms;   /* wall clock ms of the last answer; 0 = never */
	const char *error; /* why the last fetch failed, or NULL */
};

/* LiveInstance object for view i of cluster (owned). primary_doc: the
 * cluster primary's /pg/status (borrowed, may be NULL). now_ms: wall clock. */
json_object *as_live_instance(json_object *cluster, const struct as_inst_view *v,
			      json_object *primary_doc, int64_t now_ms, bool full);
/* LiveCluster object (owned) from the Cluster and its instances; full adds
 * status.instances[] with each instance's document and the certificates. */
json_object *as_live_cluster(json_object *cluster, const struct as_inst_view *v, size_t n,
			     int64_t now_ms, bool full);
/* Age like kubectl: 45s, 5m, 3h, 2d, 400d. */
void as_age(int64_t seconds, char *out, size_t len);

/* --------------------------------------------------------- rendering */

/* A Status error body into out; reason e.g. "NotFound". */
OP_MUST_CHECK int as_status(struct op_buf *out, unsigned code, const char *reason, const char *msg);
/* A Table (cells from res->cols) or a List of objs (borrowed array), or a
 * single object when single is set. rv: list resourceVersion. */
OP_MUST_CHECK
int as_render_table(struct op_buf *out, const struct as_resource *res, json_object *objs,
		    const char *rv, int64_t now_s, bool with_headers);
OP_MUST_CHECK
int as_render_list(struct op_buf *out, const struct as_resource *res, json_object *objs,
		   const char *rv);

/* ------------------------------------------------------------- actions */

/* The body of POST clusters/NAME/<sub> (sub "switchover" or "restart"):
 * a JSON object (an empty body counts as {}) with at most the one optional
 * string field the action takes ("target" / "instance", a DNS-1123 name).
 * -EINVAL (400, err says why: not JSON, not an object, unknown field, wrong
 * type, bad name), -EMSGSIZE (413) over AS_ACTION_BODY_MAX, -ENOENT: sub is
 * not an action. */
OP_MUST_CHECK
int as_action_parse(const char *sub, const char *body, size_t len, struct as_action *ret,
		    struct op_err *err);
/* A Status {"status":"Success","code":202,message,details{name,group,kind}}
 * into out (what an accepted action answers). */
OP_MUST_CHECK int as_status_accepted(struct op_buf *out, const char *msg, const char *name);

/* ----------------------------------------------------------- snapshots */

struct as_snaps;
/* interest_ms: entries asked for this recently are refreshed ahead by a
 * background thread (0 = none; production: AS_INTEREST_MS). */
struct as_snaps *as_snaps_new(const struct as_source *src, long max_age_ms, long timeout_ms,
			      long interest_ms);
void as_snaps_free(struct as_snaps *s); /* waits for fetch threads */
/* The instance views of the given Clusters, refreshed as needed: at most
 * max_age old, each fetch bounded by timeout, returns within timeout +
 * AS_MARGIN_MS. For each cluster i, *ret_pods[i] is an owned Pod array and
 * views[i] an owned array (as_views_free). */
struct as_views {
	json_object *pods;        /* owned array */
	struct as_inst_view *v;   /* owned, v[k].doc owned deep copy */
	size_t n;
};
void as_snaps_get(struct as_snaps *s, json_object *clusters, struct as_views *ret_views);
void as_views_free(struct as_views *v, size_t n);

/* The selected live objects (*ret owned array), snapshots refreshed as
 * needed (as_snaps_get bounds). -EINVAL: malformed label selector. */
OP_MUST_CHECK
int as_collect(struct as_snaps *snaps, const struct as_source *src, const struct as_reqinfo *ri,
	       const struct as_query *q, json_object **ret, struct op_err *err);

/* ------------------------------------------------------------- watch */

struct as_watches;
struct as_watches *as_watches_new(unsigned max);
/* Ends every watch and waits for their threads. Accepts NULL. */
void as_watches_free(struct as_watches *w);
/* Turns rep into a watch stream served by a new thread (429 beyond max). */
OP_MUST_CHECK
int as_watch_start(struct as_watches *w, struct as_snaps *snaps, const struct as_source *src,
		   const struct op_http_request *req, const struct as_reqinfo *ri,
		   const struct as_query *q, struct op_http_reply *rep, struct op_err *err);
/* One watch event line ("{type,object}\n") into out; the object is wrapped
 * into a one-row Table when table (column definitions only when headers). */
OP_MUST_CHECK
int as_watch_event(struct op_buf *out, const char *type, const struct as_resource *res,
		   json_object *obj, bool table, bool headers, int64_t now_s);
#define AS_WATCH_MAX_DEFAULT 64
#define AS_WATCH_PERIOD_MS 1000
#define AS_WATCH_BOOKMARK_MS 10000
#define AS_WATCH_TIMEOUT_MAX_S 1800

/* --------------------------------------------------------- authn/authz */

struct as_authn_cfg {
	char *ca_pem;            /* requestheader-client-ca-file, owned */
	char **allowed;          /* allowed names (empty = any CN) */
	size_t n_allowed;
	char **user_headers, **group_headers, **extra_prefixes;
	size_t n_user_headers, n_group_headers, n_extra_prefixes;
};
void as_authn_cfg_done(struct as_authn_cfg *c);
/* From the ConfigMap object (borrowed). -EINVAL when there is no
 * requestheader CA or a list value is not a JSON string array. */
OP_MUST_CHECK int as_authn_parse(json_object *cm, struct as_authn_cfg *ret, struct op_err *err);
bool as_authn_cn_allowed(const struct as_authn_cfg *c, const char *cn);
/* One header into u (called for each request header in order). */
void as_authn_header(const struct as_authn_cfg *c, struct as_user *u, const char *name,
		     const char *value);
/* After the headers: -EACCES without a user; adds system:authenticated. */
OP_MUST_CHECK int as_authn_finish(struct as_user *u, struct op_err *err);

struct as_sar_cache;
struct as_sar_cache *as_sar_cache_new(long ttl_ms, size_t cap);
void as_sar_cache_free(struct as_sar_cache *c);
/* 1/0 cached decision, -ENOENT when not cached (or expired). now_ms monotonic. */
OP_MUST_CHECK int as_sar_cache_get(struct as_sar_cache *c, const char *key, int64_t now_ms);
void as_sar_cache_put(struct as_sar_cache *c, const char *key, bool allowed, int64_t now_ms);
/* The cache key of (u, a) (owned). */
char *as_sar_key(const struct as_user *u, const struct as_attrs *a);
/* The SubjectAccessReview body (owned JSON text). */
char *as_sar_body(const struct as_user *u, const struct as_attrs *a);

int64_t as_now_ms(void);      /* CLOCK_MONOTONIC */
int64_t as_wall_ms(void);     /* CLOCK_REALTIME */

#endif
