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

static json_object *jstr(const char *s)
{
	json_object *o = json_object_new_string(s);
	if (!o)
		abort();
	return o;
}

static json_object *jobj(void)
{
	json_object *o = json_object_new_object();
	if (!o)
		abort();
	return o;
}

static json_object *jstrv(const char *const *v)
{
	json_object *a = json_object_new_array();
	if (!a)
		abort();
	for (; v && *v; v++)
		op_json_append(a, jstr(*v));
	return a;
}

static int emit(struct op_buf *out, json_object *doc)
{
	int r = op_buf_adds(out, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return r;
}

static json_object *gv(void)
{
	json_object *v = jobj();
	op_json_set(v, "groupVersion", jstr(AS_GROUP_VERSION));
	op_json_set(v, "version", jstr(AS_VERSION));
	return v;
}

static json_object *group_body(void)
{
	json_object *g = jobj();
	op_json_set(g, "name", jstr(AS_GROUP));
	json_object *vs = json_object_new_array();
	op_json_append(vs, gv());
	op_json_set(g, "versions", vs);
	op_json_set(g, "preferredVersion", gv());
	return g;
}

/* ---------------------------------------------------------- discovery */

int as_doc_group_list(struct op_buf *out)
{
	json_object *d = jobj();
	op_json_set(d, "kind", jstr("APIGroupList"));
	op_json_set(d, "apiVersion", jstr("v1"));
	json_object *gs = json_object_new_array();
	op_json_append(gs, group_body());
	op_json_set(d, "groups", gs);
	return emit(out, d);
}

int as_doc_group(struct op_buf *out)
{
	json_object *d = group_body();
	op_json_set(d, "kind", jstr("APIGroup"));
	op_json_set(d, "apiVersion", jstr("v1"));
	return emit(out, d);
}

static json_object *api_resource(const struct as_resource *r, const char *sub,
				 const char *const *verbs)
{
	json_object *o = jobj();
	_cleanup_free_ char *name = sub ? op_asprintf("%s/%s", r->name, sub) : op_strdup(r->name);
	op_json_set(o, "name", jstr(name));
	op_json_set(o, "singularName", jstr(sub ? "" : r->singular));
	op_json_set(o, "namespaced", json_object_new_boolean(1));
	op_json_set(o, "group", jstr(AS_GROUP));
	op_json_set(o, "version", jstr(AS_VERSION));
	op_json_set(o, "kind", jstr(r->kind));
	op_json_set(o, "verbs", jstrv(verbs));
	if (!sub) {
		op_json_set(o, "shortNames", jstrv(r->short_names));
		op_json_set(o, "categories", jstrv(r->categories));
	}
	return o;
}

int as_doc_resource_list(struct op_buf *out)
{
	json_object *d = jobj();
	op_json_set(d, "kind", jstr("APIResourceList"));
	op_json_set(d, "apiVersion", jstr("v1"));
	op_json_set(d, "groupVersion", jstr(AS_GROUP_VERSION));
	json_object *rs = json_object_new_array();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		op_json_append(rs, api_resource(r, NULL, r->verbs));
		for (size_t k = 0; k < r->n_subs; k++)
			op_json_append(rs, api_resource(r, r->subs[k].name, r->subs[k].verbs));
	}
	op_json_set(d, "resources", rs);
	return emit(out, d);
}

static json_object *gvk(const char *kind)
{
	json_object *k = jobj();
	op_json_set(k, "group", jstr(AS_GROUP));
	op_json_set(k, "version", jstr(AS_VERSION));
	op_json_set(k, "kind", jstr(kind));
	return k;
}

int as_doc_discovery_v2(struct op_buf *out)
{
	json_object *rs = json_object_new_array();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		json_object *o = jobj();
		op_json_set(o, "resource", jstr(r->name));
		op_json_set(o, "responseKind", gvk(r->kind));
		op_json_set(o, "scope", jstr("Namespaced"));
		op_json_set(o, "singularResource", jstr(r->singular));
		op_json_set(o, "verbs", jstrv(r->verbs));
		op_json_set(o, "shortNames", jstrv(r->short_names));
		op_json_set(o, "categories", jstrv(r->categories));
		json_object *subs = json_object_new_array();
		for (size_t k = 0; k < r->n_subs; k++) {
			json_object *s = jobj();
			op_json_set(s, "subresource", jstr(r->subs[k].name));
			op_json_set(s, "responseKind", gvk(r->kind));
			op_json_set(s, "verbs", jstrv(r->subs[k].verbs));
			op_json_append(subs, s);
		}
		op_json_set(o, "subresources", subs);
		op_json_append(rs, o);
	}
	json_object *ver = jobj();
	op_json_set(ver, "version", jstr(AS_VERSION));
	op_json_set(ver, "resources", rs);
	op_json_set(ver, "freshness", jstr("Current"));
	json_object *vers = json_object_new_array();
	op_json_append(vers, ver);
	json_object *item = jobj();
	json_object *md = jobj();
	op_json_set(md, "name", jstr(AS_GROUP));
	op_json_set(item, "metadata", md);
	op_json_set(item, "versions", vers);
	json_object *items = json_object_new_array();
	op_json_append(items, item);
	json_object *d = jobj();
	op_json_set(d, "kind", jstr("APIGroupDiscoveryList"));
	op_json_set(d, "apiVersion", jstr("apidiscovery.k8s.io/v2"));
	op_json_set(d, "metadata", jobj());
	op_json_set(d, "items", items);
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
	json_object *g = json_object_new_array();
	op_json_append(g, gvk(r->kind));
	op_json_set(s, "x-kubernetes-group-version-kind", g);
	return s;
}

/* One GET operation: kubectl explain finds the kind of a resource through the
 * x-kubernetes-group-version-kind of the GET on its path, then the schema. */
static json_object *get_op(const struct as_resource *r, const char *action, bool v3)
{
	_cleanup_free_ char *ref = op_asprintf(v3 ? "#/components/schemas/%s" : "#/definitions/%s",
					       schema_name(r));
	json_object *schema = jobj();
	op_json_set(schema, "$ref", jstr(ref));
	json_object *ok = jobj();
	op_json_set(ok, "description", jstr("OK"));
	if (v3) {
		json_object *mt = jobj();
		op_json_set(mt, "schema", schema);
		json_object *content = jobj();
		op_json_set(content, "application/json", mt);
		op_json_set(ok, "content", content);
	} else {
		op_json_set(ok, "schema", schema);
	}
	json_object *responses = jobj();
	op_json_set(responses, "200", ok);
	json_object *op = jobj();
	_cleanup_free_ char *id = op_asprintf("%sLiveV1%s", action, r->kind);
	op_json_set(op, "operationId", jstr(id));
	op_json_set(op, "responses", responses);
	op_json_set(op, "x-kubernetes-action", jstr(action));
	op_json_set(op, "x-kubernetes-group-version-kind", gvk(r->kind));
	json_object *item = jobj();
	op_json_set(item, "get", op);
	return item;
}

static json_object *openapi_paths(bool v3)
{
	json_object *paths = jobj();
	for (size_t i = 0; i < as_n_resources; i++) {
		const struct as_resource *r = &as_resources[i];
		_cleanup_free_ char *all = op_asprintf("/apis/%s/%s", AS_GROUP_VERSION, r->name);
		_cleanup_free_ char *list = op_asprintf("/apis/%s/namespaces/{namespace}/%s",
							AS_GROUP_VERSION, r->name);
		_cleanup_free_ char *one = op_asprintf("%s/{name}", list);
		op_json_set(paths, all, get_op(r, "list", v3));
		op_json_set(paths, list, get_op(r, "list", v3));
		op_json_set(paths, one, get_op(r, "get", v3));
	}
	return paths;
}

int as_doc_openapi_v2(struct op_buf *out)
{
	json_object *defs = jobj();
	for (size_t i = 0; i < as_n_resources; i++)
		op_json_set(defs, schema_name(&as_resources[i]), schema_of(&as_resources[i]));
	json_object *info = jobj();
	op_json_set(info, "title", jstr("pgop live API"));
	op_json_set(info, "version", jstr(AS_VERSION));
	json_object *d = jobj();
	op_json_set(d, "swagger", jstr("2.0"));
	op_json_set(d, "info", info);
	op_json_set(d, "paths", openapi_paths(false));
	op_json_set(d, "definitions", defs);
	return emit(out, d);
}

int as_doc_openapi_v3_root(struct op_buf *out)
{
	json_object *u = jobj();
	op_json_set(u, "serverRelativeURL", jstr("/openapi/v3/apis/" AS_GROUP_VERSION));
	json_object *paths = jobj();
	op_json_set(paths, "apis/" AS_GROUP_VERSION, u);
	json_object *d = jobj();
	op_json_set(d, "paths", paths);
	return emit(out, d);
}

int as_doc_openapi_v3_gv(struct op_buf *out)
{
	json_object *schemas = jobj();
	for (size_t i = 0; i < as_n_resources; i++)
		op_json_set(schemas, schema_name(&as_resources[i]), schema_of(&as_resources[i]));
	json_object *comp = jobj();
	op_json_set(comp, "schemas", schemas);
	json_object *info = jobj();
	op_json_set(info, "title", jstr("pgop live API"));
	op_json_set(info, "version", jstr(AS_VERSION));
	json_object *d = jobj();
	op_json_set(d, "openapi", jstr("3.0.0"));
	op_json_set(d, "info", info);
	op_json_set(d, "paths", openapi_paths(true));
	op_json_set(d, "components", comp);
	return emit(out, d);
}
