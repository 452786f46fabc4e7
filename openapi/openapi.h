/* openapi/openapi.h - the OpenAPI v3 schemas of pgop's kinds (sources of
 * truth) and the CustomResourceDefinitions generated from them.
 *
 * Kinds (the table in crd.c, struct oa_kind): Cluster, Backup and
 * ScheduledBackup (postgresql.cnpg.io/v1) and ObjectStore
 * (barmancloud.cnpg.io/v1). Each has openapi/<name>.schema.yaml, embedded
 * into the binary at build time with openapi/definitions.yaml before it (one
 * YAML document: the `definitions` key holds anchors reused with `<<` merge
 * keys, never emitted; the `schema` key is the kind's openAPIV3Schema).
 * oa_kind_crd_json() wraps a schema into its CRD (names, short names,
 * categories, printer columns, subresources: the kind's row) and the
 * renderers write it as YAML with keys sorted, so the output is canonical;
 * crd/<group>_<plural>.yaml is exactly that output for each kind (target
 * gen-crd, stale check in tests/unit/test_openapi.c).
 *
 * Ownership: json-c objects returned through ret_* are OWNED by the caller
 * (json_object_put). Strings returned as const char * are static.
 */
#ifndef PGOP_OPENAPI_OPENAPI_H
#define PGOP_OPENAPI_OPENAPI_H

#include <json-c/json.h>
#include <stddef.h>

#include "support/buf.h"
#include "support/err.h"

/* Cap on a YAML document handled by oa_yaml_parse() and on rendered output. */
#define OA_MAX_DOC (4u * 1024 * 1024)
/* Cap on nesting of a YAML document. */
#define OA_MAX_DEPTH 64

#define OA_CRD_GROUP "postgresql.cnpg.io"
#define OA_CRD_NAME "clusters.postgresql.cnpg.io"

/* One additionalPrinterColumns entry. */
struct oa_printer_column {
	const char *name;
	const char *type;
	const char *json_path;
	const char *description; /* NULL: none (Age, like CloudNativePG) */
	int priority;            /* 0: shown by default; 1: only with -o wide */
};

/* A kind and its CRD-level settings. Rows are static (oa_kind_at). */
struct oa_kind {
	const char *group, *kind, *list_kind, *plural, *singular;
	const char *schema_file;          /* "openapi/cluster.schema.yaml" */
	const char *const *short_names;   /* NULL-terminated; NULL: none */
	const char *const *categories;    /* NULL-terminated; NULL: none */
	const struct oa_printer_column *columns;
	size_t n_columns;
	int scale;                        /* 1: the Cluster's scale subresource */
	const char *data;                 /* the embedded schema file */
	const size_t *data_len;
};

/* The kinds, in the order `pgop crd` prints them (Cluster first). */
size_t oa_kind_count(void);
const struct oa_kind *oa_kind_at(size_t i); /* NULL past the end */
/* A kind by kind, plural, singular, short name or <plural>.<group>, any
 * case; NULL when none. */
const struct oa_kind *oa_kind_find(const char *name);
/* "<group>_<plural>.yaml", the file name under crd/ and charts/pgop/crds/.
 * Owned. */
char *oa_kind_crd_file(const struct oa_kind *k);

/* The kind's openAPIV3Schema (definitions resolved). Owned by the caller. */
OP_MUST_CHECK int oa_kind_schema(const struct oa_kind *k, json_object **ret, struct op_err *err);
/* The kind's CustomResourceDefinition (owned), after oa_schema_check(). */
OP_MUST_CHECK int oa_kind_crd_json(const struct oa_kind *k, json_object **ret,
				   struct op_err *err);
/* Appends the kind's CRD as YAML to out (the content of its crd/ file). */
OP_MUST_CHECK int oa_kind_render_crd(const struct oa_kind *k, struct op_buf *out,
				     struct op_err *err);
/* Appends CRDs to out: k's alone, or every kind's when k is NULL. YAML:
 * documents each starting with "---"; JSON (json true): the CRD pretty-printed, or
 * a v1 List of all of them, then a newline. -EMSGSIZE past out's cap. */
OP_MUST_CHECK int oa_render_crds(const struct oa_kind *k, int json, struct op_buf *out,
				 struct op_err *err);

/* The embedded Cluster schema file text: static, NUL-terminated; *ret_len
 * (may be NULL) gets its length without the NUL. */
const char *oa_cluster_schema_text(size_t *ret_len);

/* Parses one YAML document into json-c with support/yaml (go-yaml v2 scalar
 * rules, as Kubernetes reads the CRD; anchors, aliases as deep copies and `<<`
 * merge keys), strictly: duplicate keys, more than one document, no document
 * (-ENODATA), nesting deeper than OA_MAX_DEPTH and inputs larger than
 * OA_MAX_DOC are errors naming the line. Rendering is op_yaml_emit()
 * (support/yaml_emit.h). */
OP_MUST_CHECK
int oa_yaml_parse(const char *data, size_t len, json_object **ret, struct op_err *err);

/* The Cluster openAPIV3Schema (oa_kind_schema of Cluster). Owned by the caller. */
OP_MUST_CHECK int oa_cluster_schema(json_object **ret, struct op_err *err);

/* Structural lint of a CRD schema, path-named errors (first one wins):
 * every node has a type (or x-kubernetes-int-or-string, or is an object with
 * x-kubernetes-preserve-unknown-fields), every property and the root has a
 * non-empty description, `required` names declared properties, enum values
 * and defaults match the node type, every x-kubernetes-validations entry has
 * a rule and a message, and only known keywords are used. Returns the
 * number of nodes checked on success, -EINVAL on the first violation. */
OP_MUST_CHECK int oa_schema_check(json_object *schema, struct op_err *err);

/* The Cluster CustomResourceDefinition as json-c (owned), after
 * oa_schema_check() passed on the schema. */
OP_MUST_CHECK int oa_crd_json(json_object **ret, struct op_err *err);

/* Appends the Cluster CRD as YAML to out (the content of
 * crd/postgresql.cnpg.io_clusters.yaml). */
OP_MUST_CHECK int oa_render_crd(struct op_buf *out, struct op_err *err);
/* Appends the Cluster CRD as pretty-printed JSON and a newline to out
 * (`pgop crd --kind Cluster -o json`). -EMSGSIZE past out's cap. */
OP_MUST_CHECK int oa_render_crd_json(struct op_buf *out, struct op_err *err);

#endif
