/* apiserver/resources.c - the one table of resources and their columns, and
 * the discovery and OpenAPI documents generated from it. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

static const char *const read_verbs[] = { "get", "list", "watch", NULL };
static const char *const get_verbs[] = { "get", NULL };
static const char *const create_verbs[] = { "create", NULL };
static const char *const cluster_short[] = { "pglive", NULL };
static const char *const instance_short[] = { "pgi", NULL };
static const char *const categories[] = { "cnpg-live", NULL };

static const struct as_subresource cluster_subs[] = {
	{ "status", get_verbs },
	{ "switchover", create_verbs }, /* actions: apiserver/actions.c */
	{ "restart", create_verbs },
};

/* Columns: the order kubectl prints; priority 1 only with -o wide. */
static const struct as_column cluster_cols[] = {
	{ "Name", "string", "name", 0, "metadata.name", AS_CELL_STR, "Cluster name" },
	{ "Primary", "string", "", 0, "status.primary", AS_CELL_STR, "Current primary instance" },
	{ "Ready", "string", "", 0, "status.ready", AS_CELL_STR,
	  "Instances answering /pg/status over instance Pods" },
	{ "Sync", "string", "", 0, "status.sync", AS_CELL_STR,
	  "Synchronous replication: quorum N/M, sync N/M or async" },
	/* the text rc_repl_lag_text wrote into status.maxLag, as for the Cluster's
	 * status.maxLag (one formatter, reconciler/replication.h) */
	{ "Max Lag", "string", "", 0, "status.maxLag", AS_CELL_STR,
	  "Largest replica replay lag: bytes, and seconds while WAL flows" },
	{ "Timeline", "integer", "", 0, "status.timeline", AS_CELL_INT, "Primary timeline" },
	{ "Phase", "string", "", 0, "status.phase", AS_CELL_STR, "Cluster phase" },
	{ "Age", "string", "", 0, "metadata.creationTimestamp", AS_CELL_AGE, "Age" },
	{ "System ID", "string", "", 1, "status.systemID", AS_CELL_STR,
	  "PostgreSQL system identifier" },
	{ "Current WAL", "string", "", 1, "status.currentLSN", AS_CELL_STR,
	  "Current WAL position of the primary" },
	{ "Pending Restart", "integer", "", 1, "status.pendingRestart", AS_CELL_INT,
	  "Instances with parameters waiting for a restart" },
	{ "Last Seen", "string", "", 1, "status.lastSeen", AS_CELL_SEEN,
	  "Oldest successful /pg/status answer among the instances" },
};

static const struct as_column instance_cols[] = {
	{ "Name", "string", "name", 0, "metadata.name", AS_CELL_STR, "Instance (Pod) name" },
	{ "Cluster", "string", "", 0, "status.cluster", AS_CELL_STR, "Cluster" },
	{ "Role", "string", "", 0, "status.role", AS_CELL_STR,
	  "primary, sync standby, potential, async, cloning or unreachable" },
	{ "Reachable", "boolean", "", 0, "status.reachable", AS_CELL_BOOL,
	  "The last /pg/status fetch answered" },
	{ "Received LSN", "string", "", 0, "status.receivedLSN", AS_CELL_STR,
	  "WAL received (replicas) or written (primary)" },
	{ "Replayed LSN", "string", "", 0, "status.replayedLSN", AS_CELL_STR, "WAL replayed" },
	{ "Lag", "string", "", 0, "status", AS_CELL_LAG,
	  "Replay lag behind the primary: bytes, and seconds while WAL flows" },
	{ "Timeline", "integer", "", 0, "status.timeline", AS_CELL_INT, "Timeline" },
	{ "Pending Restart", "boolean", "", 1, "status.pendingRestart", AS_CELL_BOOL,
	  "A changed parameter waits for a restart" },
	{ "Node", "string", "", 1, "status.node", AS_CELL_STR, "Node of the Pod" },
	{ "Archived WAL", "string", "", 1, "status.lastArchivedWAL", AS_CELL_STR,
	  "Last WAL file archived to the object store" },
	{ "Archived", "string", "", 1, "status.lastArchivedWALTime", AS_CELL_SEEN,
	  "Age of the last archived WAL file" },
	{ "WAL Waiting", "integer", "", 1, "status.readyWALs", AS_CELL_INT,
	  "WAL files waiting to be archived" },
	{ "Last Seen", "string", "", 0, "status.lastSeen", AS_CELL_SEEN,
	  "Age of the last successful /pg/status answer" },
};

#define LAG_PROPS                                                                                  \
	"\"lagBytes\":{\"type\":\"integer\",\"description\":\"Replay lag in bytes behind the "    \
	"primary's current WAL position.\"},"                                                      \
	"\"lagSeconds\":{\"type\":\"number\",\"description\":\"Replay lag in seconds; only "      \
	"present while WAL is flowing (PostgreSQL reports no lag for an idle standby).\"},"

static const char cluster_schema[] =
	"{\"type\":\"object\",\"description\":\"Live view of a CloudNativePG Cluster, computed "
	"on request from the operator's caches and each instance's /pg/status (at most about 1 s "
	"old). Read-only.\",\"properties\":{"
	"\"apiVersion\":{\"type\":\"string\",\"description\":\"live.postgresql.cnpg.io/v1\"},"
	"\"kind\":{\"type\":\"string\",\"description\":\"LiveCluster\"},"
	"\"metadata\":{\"type\":\"object\",\"description\":\"The Cluster's metadata.\"},"
	"\"status\":{\"type\":\"object\",\"description\":\"What the instances report now.\","
	"\"properties\":{"
	"\"primary\":{\"type\":\"string\",\"description\":\"Instance reporting itself primary "
	"(else status.currentPrimary of the Cluster).\"},"
	"\"instances\":{\"type\":\"integer\",\"description\":\"Instance Pods.\"},"
	"\"readyInstances\":{\"type\":\"integer\",\"description\":\"Instances that answered.\"},"
	"\"ready\":{\"type\":\"string\",\"description\":\"readyInstances/instances.\"},"
	"\"sync\":{\"type\":\"string\",\"description\":\"quorum N/M (ANY), sync N/M (FIRST) or "
	"async, from the primary's pg_stat_replication.\"},"
	"\"maxLagBytes\":{\"type\":\"integer\",\"description\":\"Largest replica replay lag in "
	"bytes.\"},"
	"\"maxLagSeconds\":{\"type\":\"number\",\"description\":\"Largest replay lag in seconds "
	"while WAL flows.\"},"
	"\"timeline\":{\"type\":\"integer\",\"description\":\"Primary's timeline.\"},"
	"\"phase\":{\"type\":\"string\",\"description\":\"Cluster status.phase.\"},"
	"\"systemID\":{\"type\":\"string\",\"description\":\"PostgreSQL system identifier.\"},"
	"\"currentLSN\":{\"type\":\"string\",\"description\":\"Primary's current WAL "
	"position.\"},"
	"\"pendingRestart\":{\"type\":\"integer\",\"description\":\"Instances waiting for a "
	"restart.\"},"
	"\"lastSeen\":{\"type\":\"string\",\"description\":\"Oldest last successful answer "
	"(RFC 3339).\"},"
	"\"unreachable\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
	"\"Instances whose last fetch failed.\"},"
	"\"members\":{\"type\":\"array\",\"description\":\"Per instance (status subresource only): "
	"the LiveInstance status plus the raw /pg/status document.\",\"items\":{\"type\":"
	"\"object\"}},"
	"\"certificates\":{\"type\":\"object\",\"description\":\"Certificate expirations from "
	"the Cluster status (status subresource only).\"}}}}}";

static const char instance_schema[] =
	"{\"type\":\"object\",\"description\":\"Live view of one PostgreSQL instance (Pod) of a "
	"CloudNativePG Cluster. Read-only.\",\"properties\":{"
	"\"apiVersion\":{\"type\":\"string\",\"description\":\"live.postgresql.cnpg.io/v1\"},"
	"\"kind\":{\"type\":\"string\",\"description\":\"LiveInstance\"},"
	"\"metadata\":{\"type\":\"object\",\"description\":\"The Pod's metadata.\"},"
	"\"status\":{\"type\":\"object\",\"description\":\"What the instance reports now.\","
	"\"properties\":{"
	"\"cluster\":{\"type\":\"string\",\"description\":\"Cluster name.\"},"
	"\"role\":{\"type\":\"string\",\"description\":\"primary, sync standby, potential, "
	"async, cloning or unreachable.\"},"
	"\"reachable\":{\"type\":\"boolean\",\"description\":\"The last /pg/status fetch "
	"answered.\"},"
	"\"receivedLSN\":{\"type\":\"string\",\"description\":\"Last WAL received (replica) or "
	"current WAL (primary).\"},"
	"\"replayedLSN\":{\"type\":\"string\",\"description\":\"Last WAL replayed.\"},"
	LAG_PROPS
	"\"timeline\":{\"type\":\"integer\",\"description\":\"Timeline.\"},"
	"\"pendingRestart\":{\"type\":\"boolean\",\"description\":\"A changed parameter waits "
	"for a restart.\"},"
	"\"node\":{\"type\":\"string\",\"description\":\"Node of the Pod.\"},"
	"\"lastArchivedWAL\":{\"type\":\"string\",\"description\":\"Last WAL file "
	"archived to the object store (pg_stat_archiver).\"},"
	"\"lastArchivedWALTime\":{\"type\":\"string\",\"description\":\"When (RFC "
	"3339).\"},"
	"\"readyWALs\":{\"type\":\"integer\",\"description\":\"WAL files waiting to be "
	"archived.\"},"
	"\"timelineDiverged\":{\"type\":\"string\",\"description\":\"Why this "
	"replica cannot follow the primary: it replayed past the point where the "
	"primary's timeline forked (it is rewound).\"},"
	"\"archiveError\":{\"type\":\"string\",\"description\":\"Why WAL is not "
	"archived: the object store's own error of the last failed archive.\"},"
	"\"lastSeen\":{\"type\":\"string\",\"description\":\"Last successful answer (RFC "
	"3339).\"},"
	"\"error\":{\"type\":\"string\",\"description\":\"Why the last fetch failed.\"}}}}}";

const struct as_resource as_resources[] = {
	{ "clusters", "cluster", "LiveCluster", "LiveClusterList", read_verbs, cluster_short,
	  categories, cluster_subs, OP_ARRAY_SIZE(cluster_subs), cluster_cols,
	  OP_ARRAY_SIZE(cluster_cols), cluster_schema },
	{ "instances", "instance", "LiveInstance", "LiveInstanceList", read_verbs, instance_short,
	  categories, NULL, 0, instance_cols, OP_ARRAY_SIZE(instance_cols), instance_schema },
};
const size_t as_n_resources = OP_ARRAY_SIZE(as_resources);

const struct as_resource *as_resource_find(const char *plural)
{
	for (size_t i = 0; i < as_n_resources; i++)
		if (strcmp(as_resources[i].name, plural) == 0)
			return &as_resources[i];
	return NULL;
}

const struct as_resource *as_resource_clusters(void)
{
	return &as_resources[0];
}

const struct as_resource *as_resource_instances(void)
{
	return &as_resources[1];
}

/* ------------------------------------------------------------ helpers */

static int emit(struct op_buf *out, json_object *doc)
{
	int r = op_buf_adds(out, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return r;
}

static json_object *gv(void)
{
	json_object *v = op_jobj();
	op_jsets(v, "groupVersion", AS_GROUP_VERSION);
	op_jsets(v, "version", AS_VERSION);
	return v;
}

static json_object *group_body(void)
{
	json_object *g = op_jobj();
	op_jsets(g, "name", AS_GROUP);
	json_object *vs = op_jarr();
	op_jpush(vs, gv());
	op_jset(g, "versions", vs);
	op_jset(g, "preferredVersion", gv());
	return g;
}

/* ---------------------------------------------------------- discovery */

int as_doc_group_list(struct op_buf *out)
{
	json_object *d = op_jobj();
	op_jsets(d, "kind", "APIGroupList");
	op_jsets(d, "apiVersion", "v1");
	json_object *gs = op_jarr();
	op_jpush(gs, group_body());
	op_jset(d, "groups", gs);
	return emit(out, d);
}

int as_doc_group(struct op_buf *out)
{
	json_object *d = group_body();
	op_jsets(d, "kind", "APIGroup");
	op_jsets(d, "apiVersion", "v1");
	return emit(out, d);
}

static json_object *api_resource(const struct as_resource *r, const char *sub,
				 const char *const *verbs)
{
	json_object *o = op_jobj();
	_cleanup_free_ char *name = sub ? op_asprintf("%s/%s", r->name, sub) : op_strdup(r->name);
	op_jsets(o, "name", name);
	op_jsets(o, "singularName", sub ? "" : r->singular);
	op_jset(o, "namespaced", op_jbool(1));
	op_jsets(o, "group", AS_GROUP);
	op_jsets(o, "version", AS_VERSION);
	op_jsets(o, "kind", r->kind);
	op_jset(o, "verbs", op_jstrv(verbs));
	if (!sub) {
		op_jset(o, "shortNames", op_jstrv(r->short_names));
		op_jset(o, "categories", op_jstrv(r->categories));
	}
	return o;
}

int as_doc_resource_list(struct op_buf *out)
{
	json_object *d = op_jobj();
	op_jsets(d, "kind", "APIResourceList");
	op_jsets(d, "apiVersion", "v1");
	op_jsets(d, "groupVersion", AS_GROUP_VERSION);
	json_object *rs = op_jarr();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		op_jpush(rs, api_resource(r, NULL, r->verbs));
		for (size_t k = 0; k < r->n_subs; k++)
			op_jpush(rs, api_resource(r, r->subs[k].name, r->subs[k].verbs));
	}
	op_jset(d, "resources", rs);
	return emit(out, d);
}

static json_object *gvk(const char *kind)
{
	json_object *k = op_jobj();
	op_jsets(k, "group", AS_GROUP);
	op_jsets(k, "version", AS_VERSION);
	op_jsets(k, "kind", kind);
	return k;
}

int as_doc_discovery_v2(struct op_buf *out)
{
	json_object *rs = op_jarr();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		json_object *o = op_jobj();
		op_jsets(o, "resource", r->name);
		op_jset(o, "responseKind", gvk(r->kind));
		op_jsets(o, "scope", "Namespaced");
		op_jsets(o, "singularResource", r->singular);
		op_jset(o, "verbs", op_jstrv(r->verbs));
		op_jset(o, "shortNames", op_jstrv(r->short_names));
		op_jset(o, "categories", op_jstrv(r->categories));
		json_object *subs = op_jarr();
		for (size_t k = 0; k < r->n_subs; k++) {
			json_object *s = op_jobj();
			op_jsets(s, "subresource", r->subs[k].name);
			op_jset(s, "responseKind", gvk(r->kind));
			op_jset(s, "verbs", op_jstrv(r->subs[k].verbs));
			op_jpush(subs, s);
		}
		op_jset(o, "subresources", subs);
		op_jpush(rs, o);
	}
	json_object *ver = op_jobj();
	op_jsets(ver, "version", AS_VERSION);
	op_jset(ver, "resources", rs);
	op_jsets(ver, "freshness", "Current");
	json_object *vers = op_jarr();
	op_jpush(vers, ver);
	json_object *item = op_jobj();
	json_object *md = op_jobj();
	op_jsets(md, "name", AS_GROUP);
	op_jset(item, "metadata", md);
	op_jset(item, "versions", vers);
	json_object *items = op_jarr();
	op_jpush(items, item);
	json_object *d = op_jobj();
	op_jsets(d, "kind", "APIGroupDiscoveryList");
	op_jsets(d, "apiVersion", "apidiscovery.k8s.io/v2");
	op_jset(d, "metadata", op_jobj());
	op_jset(d, "items", items);
	return emit(out, d);
}

/* Media-type list contains the v2 discovery type before plain JSON. */
bool as_accept_v2(const char *accept)
{
	return accept && strstr(accept, "g=apidiscovery.k8s.io") && strstr(accept, "v=v2") &&
	       strstr(accept, "as=APIGroupDiscoveryList");
}

bool as_accept_table(const char *accept)
{
	if (!accept)
		return false;
	/* any media range of the list naming as=Table;g=meta.k8s.io (v1 or v1beta1) */
	const char *p = accept;
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char one[256];
		if (len < sizeof(one)) {
			memcpy(one, p, len);
			one[len] = '\0';
			if (strstr(one, "as=Table") && strstr(one, "g=meta.k8s.io"))
				return true;
		}
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* ------------------------------------------------------------ OpenAPI */

static const char *schema_name(const struct as_resource *r)
{
	return strcmp(r->kind, "LiveCluster") == 0 ? "io.cnpg.postgresql.live.v1.LiveCluster"
						   : "io.cnpg.postgresql.live.v1.LiveInstance";
}

static json_object *schema_of(const struct as_resource *r)
{
	json_object *s = json_tokener_parse(r->schema);
	if (!s)
		abort(); /* static text: a unit test parses it */
	json_object *g = op_jarr();
	op_jpush(g, gvk(r->kind));
	op_jset(s, "x-kubernetes-group-version-kind", g);
	return s;
}

/* One GET operation: kubectl explain finds the kind of a resource through the
 * x-kubernetes-group-version-kind of the GET on its path, then the schema. */
static json_object *get_op(const struct as_resource *r, const char *action, bool v3)
{
	_cleanup_free_ char *ref = op_asprintf(v3 ? "#/components/schemas/%s" : "#/definitions/%s",
					       schema_name(r));
	json_object *schema = op_jobj();
	op_jsets(schema, "$ref", ref);
	json_object *ok = op_jobj();
	op_jsets(ok, "description", "OK");
	if (v3) {
		json_object *mt = op_jobj();
		op_jset(mt, "schema", schema);
		json_object *content = op_jobj();
		op_jset(content, "application/json", mt);
		op_jset(ok, "content", content);
	} else {
		op_jset(ok, "schema", schema);
	}
	json_object *responses = op_jobj();
	op_jset(responses, "200", ok);
	json_object *op = op_jobj();
	_cleanup_free_ char *id = op_asprintf("%sLiveV1%s", action, r->kind);
	op_jsets(op, "operationId", id);
	op_jset(op, "responses", responses);
	op_jsets(op, "x-kubernetes-action", action);
	op_jset(op, "x-kubernetes-group-version-kind", gvk(r->kind));
	json_object *item = op_jobj();
	op_jset(item, "get", op);
	return item;
}

static json_object *openapi_paths(bool v3)
{
	json_object *paths = op_jobj();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		_cleanup_free_ char *all = op_asprintf("/apis/%s/%s", AS_GROUP_VERSION, r->name);
		_cleanup_free_ char *list = op_asprintf("/apis/%s/namespaces/{namespace}/%s",
							AS_GROUP_VERSION, r->name);
		_cleanup_free_ char *one = op_asprintf("%s/{name}", list);
		op_jset(paths, all, get_op(r, "list", v3));
		op_jset(paths, list, get_op(r, "list", v3));
		op_jset(paths, one, get_op(r, "get", v3));
	}
	return paths;
}

int as_doc_openapi_v2(struct op_buf *out)
{
	json_object *defs = op_jobj();
	for (size_t i = 0; i < as_n_resources; i++)
		op_jset(defs, schema_name(&as_resources[i]), schema_of(&as_resources[i]));
	json_object *info = op_jobj();
	op_jsets(info, "title", "pgop live API");
	op_jsets(info, "version", AS_VERSION);
	json_object *d = op_jobj();
	op_jsets(d, "swagger", "2.0");
	op_jset(d, "info", info);
	op_jset(d, "paths", openapi_paths(false));
	op_jset(d, "definitions", defs);
	return emit(out, d);
}

int as_doc_openapi_v3_root(struct op_buf *out)
{
	json_object *u = op_jobj();
	op_jsets(u, "serverRelativeURL", "/openapi/v3/apis/" AS_GROUP_VERSION);
	json_object *paths = op_jobj();
	op_jset(paths, "apis/" AS_GROUP_VERSION, u);
	json_object *d = op_jobj();
	op_jset(d, "paths", paths);
	return emit(out, d);
}

int as_doc_openapi_v3_gv(struct op_buf *out)
{
	json_object *schemas = op_jobj();
	for (size_t i = 0; i < as_n_resources; i++)
		op_jset(schemas, schema_name(&as_resources[i]), schema_of(&as_resources[i]));
	json_object *comp = op_jobj();
	op_jset(comp, "schemas", schemas);
	json_object *info = op_jobj();
	op_jsets(info, "title", "pgop live API");
	op_jsets(info, "version", AS_VERSION);
	json_object *d = op_jobj();
	op_jsets(d, "openapi", "3.0.0");
	op_jset(d, "info", info);
	op_jset(d, "paths", openapi_paths(true));
	op_jset(d, "components", comp);
	return emit(out, d);
}
