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

static json_object *build_version(json_object *schema)
{
	json_object *v = op_jobj();
	op_jsets(v, "name", "v1");
	op_jset(v, "served", op_jbool(1));
	op_jset(v, "storage", op_jbool(1));

	json_object *cols = op_jarr();
	for (size_t i = 0; i < OP_ARRAY_SIZE(printer_columns); i++) {
		const struct printer_column *pc = &printer_columns[i];
		json_object *c = op_jobj();
		op_jsets(c, "name", pc->name);
		op_jsets(c, "type", pc->type);
		op_jsets(c, "jsonPath", pc->json_path);
		if (pc->description)
			op_jsets(c, "description", pc->description);
		if (pc->priority)
			op_jset(c, "priority", op_jint(pc->priority));
		op_jpush(cols, c);
	}
	op_jset(v, "additionalPrinterColumns", cols);

	json_object *s = op_jobj();
	op_jset(s, "openAPIV3Schema", schema);
	op_jset(v, "schema", s);

	json_object *sub = op_jobj();
	op_jset(sub, "status", op_jobj());
	json_object *sc = op_jobj();
	for (size_t i = 0; i < OP_ARRAY_SIZE(scale); i++)
		op_jsets(sc, scale[i].key, scale[i].value);
	op_jset(sub, "scale", sc);
	op_jset(v, "subresources", sub);
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

	json_object *crd = op_jobj();
	op_jsets(crd, "apiVersion", "apiextensions.k8s.io/v1");
	op_jsets(crd, "kind", "CustomResourceDefinition");
	json_object *md = op_jobj();
	op_jsets(md, "name", OA_CRD_NAME);
	json_object *ann = op_jobj();
	op_jsets(ann, "pgop.io/generated-from", "openapi/cluster.schema.yaml");
	op_jset(md, "annotations", ann);
	op_jset(crd, "metadata", md);

	json_object *spec = op_jobj();
	op_jsets(spec, "group", OA_CRD_GROUP);
	json_object *n = op_jobj();
	for (size_t i = 0; i < OP_ARRAY_SIZE(names); i++)
		op_jsets(n, names[i].key, names[i].value);
	json_object *cats = op_jarr();
	for (size_t i = 0; i < OP_ARRAY_SIZE(categories); i++)
		op_jpush(cats, op_jstr(categories[i]));
	op_jset(n, "categories", cats);
	op_jset(spec, "names", n);
	op_jsets(spec, "scope", "Namespaced");
	json_object *versions = op_jarr();
	op_jpush(versions, build_version(schema));
	op_jset(spec, "versions", versions);
	op_jset(crd, "spec", spec);

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
