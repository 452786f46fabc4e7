/* openapi/crd.c - the Cluster CustomResourceDefinition built around the
 * embedded schema (see openapi.h). CRD-level settings are tables here;
 * everything about fields lives in cluster.schema.yaml.
 */
#include "openapi/openapi.h"

#include <errno.h>
#include <string.h>

#include "openapi/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml_emit.h"

/* additionalPrinterColumns, in CloudNativePG's order. */
struct printer_column {
	const char *name;
	const char *type;
	const char *json_path;
	const char *description; /* NULL: none (Age, like CloudNativePG) */
	int priority;            /* 0: shown by default; 1: only with -o wide */
};

static const struct printer_column printer_columns[] = {
	{ "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
	{ "Instances", "integer", ".status.instances", "Number of instances", 0 },
	{ "Ready", "integer", ".status.readyInstances", "Number of ready instances", 0 },
	{ "Status", "string", ".status.phase", "Cluster current status", 0 },
	{ "Primary", "string", ".status.currentPrimary", "Primary pod", 0 },
	/* pgop: the live API's SYNC and MAX LAG (kubectl get clusters.live) */
	{ "Sync", "string", ".status.sync",
	  "Synchronous replication: quorum N/M, sync N/M, async or unknown", 0 },
	{ "Max Lag", "string", ".status.maxLag",
	  "Largest replica replay lag: bytes, and seconds while WAL flows", 0 },
	{ "SyncTopology", "string",
	  ".status.conditions[?(@.type==\"SyncReplicationTopologySatisfied\")].status",
	  "Whether the synchronous replication topology constraints are satisfied", 1 },
};

/* Kubernetes names; CloudNativePG has no short names and no categories. We
 * add the category "cnpg" (kubectl get cnpg) but not "all", so `kubectl get
 * all` / `delete all` never touch databases. */
static const char *const categories[] = { "cnpg" };

static const struct {
	const char *key, *value;
} names[] = {
	{ "kind", "Cluster" },
	{ "listKind", "ClusterList" },
	{ "plural", "clusters" },
	{ "singular", "cluster" },
};

/* Scale subresource, as in CloudNativePG. */
static const struct {
	const char *key, *value;
} scale[] = {
	{ "specReplicasPath", ".spec.instances" },
	{ "statusReplicasPath", ".status.instances" },
	{ "labelSelectorPath", ".status.selector" },
};

const char *oa_cluster_schema_text(size_t *ret_len)
{
	if (ret_len)
		*ret_len = oa_schema_data_len;
	return oa_schema_data;
}

int oa_cluster_schema(json_object **ret, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *doc = NULL;
	int r = oa_yaml_parse(oa_schema_data, oa_schema_data_len, &doc, err);
	if (r < 0)
		return op_err_prefix(err, "openapi/cluster.schema.yaml");
	json_object *schema = NULL;
	if (!json_object_is_type(doc, json_type_object) ||
	    !json_object_object_get_ex(doc, "schema", &schema) ||
	    !json_object_is_type(schema, json_type_object))
		return op_err_set(err, -EINVAL,
				  "openapi/cluster.schema.yaml: no \"schema\" mapping at top level");
	*ret = json_object_get(schema);
	return 0;
}

static json_object *str(const char *s)
{
	json_object *o = json_object_new_string(s);
	if (!o)
		abort(); /* OOM policy: abort, as op_malloc does */
	return o;
}

static json_object *obj(void)
{
	json_object *o = json_object_new_object();
	if (!o)
		abort();
	return o;
}

static json_object *arr(void)
{
	json_object *o = json_object_new_array();
	if (!o)
		abort();
	return o;
}

/* json-c setters only fail on OOM; we abort then, like op_malloc. */
static void set(json_object *o, const char *k, json_object *v)
{
	if (op_json_set(o, k, v) < 0)
		abort();
}

static void append(json_object *a, json_object *v)
{
	if (op_json_append(a, v) < 0)
		abort();
}

static json_object *build_version(json_object *schema)
{
	json_object *v = obj();
	set(v, "name", str("v1"));
	set(v, "served", json_object_new_boolean(1));
	set(v, "storage", json_object_new_boolean(1));

	json_object *cols = arr();
	for (size_t i = 0; i < OP_ARRAY_SIZE(printer_columns); i++) {
		const struct printer_column *pc = &printer_columns[i];
		json_object *c = obj();
		set(c, "name", str(pc->name));
		set(c, "type", str(pc->type));
		set(c, "jsonPath", str(pc->json_path));
		if (pc->description)
			set(c, "description", str(pc->description));
		if (pc->priority)
			set(c, "priority", json_object_new_int(pc->priority));
		append(cols, c);
	}
	set(v, "additionalPrinterColumns", cols);

	json_object *s = obj();
	set(s, "openAPIV3Schema", schema);
	set(v, "schema", s);

	json_object *sub = obj();
	set(sub, "status", obj());
	json_object *sc = obj();
	for (size_t i = 0; i < OP_ARRAY_SIZE(scale); i++)
		set(sc, scale[i].key, str(scale[i].value));
	set(sub, "scale", sc);
	set(v, "subresources", sub);
	return v;
}

int oa_crd_json(json_object **ret, struct op_err *err)
{
	json_object *schema = NULL;
	int r = oa_cluster_schema(&schema, err);
	if (r < 0)
		return r;
	r = oa_schema_check(schema, err);
	if (r < 0) {
		json_object_put(schema);
		return op_err_prefix(err, "openapi/cluster.schema.yaml");
	}

	json_object *crd = obj();
	set(crd, "apiVersion", str("apiextensions.k8s.io/v1"));
	set(crd, "kind", str("CustomResourceDefinition"));
	json_object *md = obj();
	set(md, "name", str(OA_CRD_NAME));
	json_object *ann = obj();
	set(ann, "pgop.io/generated-from", str("openapi/cluster.schema.yaml"));
	set(md, "annotations", ann);
	set(crd, "metadata", md);

	json_object *spec = obj();
	set(spec, "group", str(OA_CRD_GROUP));
	json_object *n = obj();
	for (size_t i = 0; i < OP_ARRAY_SIZE(names); i++)
		set(n, names[i].key, str(names[i].value));
	json_object *cats = arr();
	for (size_t i = 0; i < OP_ARRAY_SIZE(categories); i++)
		append(cats, str(categories[i]));
	set(n, "categories", cats);
	set(spec, "names", n);
	set(spec, "scope", str("Namespaced"));
	json_object *versions = arr();
	append(versions, build_version(schema));
	set(spec, "versions", versions);
	set(crd, "spec", spec);

	*ret = crd;
	return 0;
}

int oa_render_crd(struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *crd = NULL;
	int r = oa_crd_json(&crd, err);
	if (r < 0)
		return r;
	return op_yaml_emit(crd, out, err);
}

int oa_render_crd_json(struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *crd = NULL;
	int r = oa_crd_json(&crd, err);
	if (r < 0)
		return r;
	const char *s = json_object_to_json_string_ext(
		crd, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return op_err_set(err, -ENOMEM, "cannot serialise the CRD as JSON");
	r = op_buf_adds(out, s);
	if (r == 0)
		r = op_buf_addc(out, '\n');
	if (r < 0)
		return op_err_set(err, r, "CRD JSON larger than the cap");
	return 0;
}
