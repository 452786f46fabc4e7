/* openapi/crd.c - the CustomResourceDefinitions built around the embedded
 * schemas (see openapi.h). CRD-level settings are the table of kinds here;
 * everything about fields lives in <kind>.schema.yaml.
 */
#include "openapi/openapi.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "openapi/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml_emit.h"

/* additionalPrinterColumns, in CloudNativePG's order. */
static const struct oa_printer_column cluster_columns[] = {
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

static const struct oa_printer_column backup_columns[] = {
	{ "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
	{ "Cluster", "string", ".spec.cluster.name", NULL, 0 },
	{ "Method", "string", ".spec.method", NULL, 0 },
	{ "Phase", "string", ".status.phase", NULL, 0 },
	{ "Error", "string", ".status.error", NULL, 0 },
};

static const struct oa_printer_column scheduled_backup_columns[] = {
	{ "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
	{ "Cluster", "string", ".spec.cluster.name", NULL, 0 },
	{ "Last Backup", "date", ".status.lastScheduleTime", NULL, 0 },
};

static const struct oa_printer_column object_store_columns[] = {
	{ "Age", "date", ".metadata.creationTimestamp", NULL, 0 },
};

/* CloudNativePG has no short names and no categories. We add the category
 * "cnpg" (kubectl get cnpg) but not "all", so `kubectl get all` / `delete
 * all` never touch databases or their backups. */
static const char *const cnpg_categories[] = { "cnpg", NULL };

static const struct oa_kind kinds[] = {
	{ "postgresql.cnpg.io", "Cluster", "ClusterList", "clusters", "cluster",
	  "openapi/cluster.schema.yaml", NULL, cnpg_categories, cluster_columns,
	  OP_ARRAY_SIZE(cluster_columns), 1, oa_cluster_data, &oa_cluster_data_len },
	{ "postgresql.cnpg.io", "Backup", "BackupList", "backups", "backup",
	  "openapi/backup.schema.yaml", NULL, cnpg_categories, backup_columns,
	  OP_ARRAY_SIZE(backup_columns), 0, oa_backup_data, &oa_backup_data_len },
	{ "postgresql.cnpg.io", "ScheduledBackup", "ScheduledBackupList", "scheduledbackups",
	  "scheduledbackup", "openapi/scheduledbackup.schema.yaml", NULL, cnpg_categories,
	  scheduled_backup_columns, OP_ARRAY_SIZE(scheduled_backup_columns), 0,
	  oa_scheduledbackup_data, &oa_scheduledbackup_data_len },
	{ "barmancloud.cnpg.io", "ObjectStore", "ObjectStoreList", "objectstores", "objectstore",
	  "openapi/objectstore.schema.yaml", NULL, NULL, object_store_columns,
	  OP_ARRAY_SIZE(object_store_columns), 0, oa_objectstore_data, &oa_objectstore_data_len },
};

/* Scale subresource, as in CloudNativePG (Cluster only). */
static const struct {
	const char *key, *value;
} scale[] = {
	{ "specReplicasPath", ".spec.instances" },
	{ "statusReplicasPath", ".status.instances" },
	{ "labelSelectorPath", ".status.selector" },
};

size_t oa_kind_count(void)
{
	return OP_ARRAY_SIZE(kinds);
}

const struct oa_kind *oa_kind_at(size_t i)
{
	return i < OP_ARRAY_SIZE(kinds) ? &kinds[i] : NULL;
}

const struct oa_kind *oa_kind_find(const char *name)
{
	for (size_t i = 0; name && i < OP_ARRAY_SIZE(kinds); i++) {
		const struct oa_kind *k = &kinds[i];
		_cleanup_free_ char *full = op_asprintf("%s.%s", k->plural, k->group);
		if (strcasecmp(name, k->kind) == 0 || strcasecmp(name, k->plural) == 0 ||
		    strcasecmp(name, k->singular) == 0 || strcasecmp(name, full) == 0)
			return k;
		for (size_t j = 0; k->short_names && k->short_names[j]; j++)
			if (strcasecmp(name, k->short_names[j]) == 0)
				return k;
	}
	return NULL;
}

char *oa_kind_crd_file(const struct oa_kind *k)
{
	return op_asprintf("%s_%s.yaml", k->group, k->plural);
}

const char *oa_cluster_schema_text(size_t *ret_len)
{
	if (ret_len)
		*ret_len = oa_cluster_data_len;
	return oa_cluster_data;
}

int oa_kind_schema(const struct oa_kind *k, json_object **ret, struct op_err *err)
{
	/* definitions.yaml then the kind's file: one document, so anchors resolve */
	_cleanup_(op_buf_donep) struct op_buf text = OP_BUF_INIT(OA_MAX_DOC);
	if (op_buf_add(&text, oa_definitions_data, oa_definitions_data_len) < 0 ||
	    op_buf_add(&text, k->data, *k->data_len) < 0)
		return op_err_set(err, -EMSGSIZE, "%s: larger than %u bytes", k->schema_file,
				  OA_MAX_DOC);
	_cleanup_(op_json_putp) json_object *doc = NULL;
	int r = oa_yaml_parse(op_buf_str(&text), text.len, &doc, err);
	if (r < 0)
		return op_err_prefix(err, "openapi/definitions.yaml + %s", k->schema_file);
	json_object *schema = NULL;
	if (!json_object_is_type(doc, json_type_object) ||
	    !json_object_object_get_ex(doc, "schema", &schema) ||
	    !json_object_is_type(schema, json_type_object))
		return op_err_set(err, -EINVAL, "%s: no \"schema\" mapping at top level",
				  k->schema_file);
	*ret = json_object_get(schema);
	return 0;
}

int oa_cluster_schema(json_object **ret, struct op_err *err)
{
	return oa_kind_schema(&kinds[0], ret, err);
}

static json_object *build_version(const struct oa_kind *k, json_object *schema)
{
	json_object *v = op_jobj();
	op_jsets(v, "name", "v1");
	op_jset(v, "served", op_jbool(1));
	op_jset(v, "storage", op_jbool(1));

	json_object *cols = op_jarr();
	for (size_t i = 0; i < k->n_columns; i++) {
		const struct oa_printer_column *pc = &k->columns[i];
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
	if (k->scale) {
		json_object *sc = op_jobj();
		for (size_t i = 0; i < OP_ARRAY_SIZE(scale); i++)
			op_jsets(sc, scale[i].key, scale[i].value);
		op_jset(sub, "scale", sc);
	}
	op_jset(v, "subresources", sub);
	return v;
}

/* spec.names of k's CRD. */
static json_object *build_names(const struct oa_kind *k)
{
	json_object *n = op_jobj();
	op_jsets(n, "kind", k->kind);
	op_jsets(n, "listKind", k->list_kind);
	op_jsets(n, "plural", k->plural);
	op_jsets(n, "singular", k->singular);
	if (k->short_names && k->short_names[0])
		op_jset(n, "shortNames", op_jstrv(k->short_names));
	if (k->categories && k->categories[0])
		op_jset(n, "categories", op_jstrv(k->categories));
	return n;
}

int oa_kind_crd_json(const struct oa_kind *k, json_object **ret, struct op_err *err)
{
	json_object *schema = NULL;
	int r = oa_kind_schema(k, &schema, err);
	if (r < 0)
		return r;
	r = oa_schema_check(schema, err);
	if (r < 0) {
		json_object_put(schema);
		return op_err_prefix(err, "%s", k->schema_file);
	}

	json_object *crd = op_jobj();
	op_jsets(crd, "apiVersion", "apiextensions.k8s.io/v1");
	op_jsets(crd, "kind", "CustomResourceDefinition");
	json_object *md = op_jobj();
	_cleanup_free_ char *name = op_asprintf("%s.%s", k->plural, k->group);
	op_jsets(md, "name", name);
	json_object *ann = op_jobj();
	op_jsets(ann, "pgop.io/generated-from", k->schema_file);
	op_jset(md, "annotations", ann);
	op_jset(crd, "metadata", md);

	json_object *spec = op_jobj();
	op_jsets(spec, "group", k->group);
	op_jset(spec, "names", build_names(k));
	op_jsets(spec, "scope", "Namespaced");
	json_object *versions = op_jarr();
	op_jpush(versions, build_version(k, schema));
	op_jset(spec, "versions", versions);
	op_jset(crd, "spec", spec);

	*ret = crd;
	return 0;
}

int oa_crd_json(json_object **ret, struct op_err *err)
{
	return oa_kind_crd_json(&kinds[0], ret, err);
}

int oa_kind_render_crd(const struct oa_kind *k, struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *crd = NULL;
	int r = oa_kind_crd_json(k, &crd, err);
	if (r < 0)
		return r;
	return op_yaml_emit(crd, out, err);
}

int oa_render_crd(struct op_buf *out, struct op_err *err)
{
	return oa_kind_render_crd(&kinds[0], out, err);
}

static int add_json(json_object *o, struct op_buf *out, struct op_err *err)
{
	const char *s = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return op_err_set(err, -ENOMEM, "cannot serialise the CRD as JSON");
	int r = op_buf_adds(out, s);
	if (r == 0)
		r = op_buf_addc(out, '\n');
	if (r < 0)
		return op_err_set(err, r, "CRD JSON larger than the cap");
	return 0;
}

int oa_render_crd_json(struct op_buf *out, struct op_err *err)
{
	return oa_render_crds(&kinds[0], 1, out, err);
}

/* Every kind's CRD as a v1 List (owned). */
static int all_json(json_object **ret, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *list = op_jobj();
	op_jsets(list, "apiVersion", "v1");
	op_jsets(list, "kind", "List");
	json_object *items = op_jarr();
	op_jset(list, "items", items);
	for (size_t i = 0; i < OP_ARRAY_SIZE(kinds); i++) {
		json_object *crd = NULL;
		int r = oa_kind_crd_json(&kinds[i], &crd, err);
		if (r < 0)
			return r;
		op_jpush(items, crd);
	}
	*ret = TAKE_PTR(list);
	return 0;
}

int oa_render_crds(const struct oa_kind *k, int json, struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *o = NULL;
	int r;
	if (json) {
		r = k ? oa_kind_crd_json(k, &o, err) : all_json(&o, err);
		return r < 0 ? r : add_json(o, out, err);
	}
	if (k)
		return oa_kind_render_crd(k, out, err);
	/* each emitted document starts with its own "---" */
	for (size_t i = 0; i < OP_ARRAY_SIZE(kinds); i++) {
		r = oa_kind_render_crd(&kinds[i], out, err);
		if (r < 0)
			return r;
	}
	return 0;
}
