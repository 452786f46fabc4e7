/* openapi/openapi.h - the OpenAPI v3 schema of Cluster (source of truth) and
 * the CustomResourceDefinition generated from it.
 *
 * openapi/cluster.schema.yaml is embedded into the binary at build time. It
 * holds two top-level keys: `definitions` (YAML anchors reused with `<<` merge
 * keys; never emitted) and `schema` (the openAPIV3Schema of the Cluster kind).
 * oa_render_crd() wraps the schema into the CRD (names, printer columns,
 * subresources: tables in crd.c) and renders it as YAML with keys sorted, so
 * the output is canonical; crd/postgresql.cnpg.io_clusters.yaml is exactly
 * that output (target gen-crd, stale check in tests/unit/test_openapi.c).
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

/* The embedded schema file text: static, NUL-terminated; *ret_len (may be
 * NULL) gets its length without the NUL. */
const char *oa_cluster_schema_text(size_t *ret_len);

/* Parses one YAML document into json-c with support/yaml (go-yaml v2 scalar
 * rules, as Kubernetes reads the CRD; anchors, aliases as deep copies and `<<`
 * merge keys), strictly: duplicate keys, more than one document, no document
 * (-ENODATA), nesting deeper than OA_MAX_DEPTH and inputs larger than
 * OA_MAX_DOC are errors naming the line. Rendering is op_yaml_emit()
 * (support/yaml_emit.h). */
OP_MUST_CHECK
int oa_yaml_parse(const char *data, size_t len, json_object **ret, struct op_err *err);

/* The Cluster openAPIV3Schema (the `schema` key of the embedded file), after
 * merge keys are resolved. Owned by the caller. */
OP_MUST_CHECK int oa_cluster_schema(json_object **ret, struct op_err *err);

/* Structural lint of a CRD schema, path-named errors (first one wins):
 * every node has a type (or x-kubernetes-int-or-string, or is an object with
 * x-kubernetes-preserve-unknown-fields), every property and the root has a
 * non-empty description, `required` names declared properties, enum values
 * and defaults match the node type, every x-kubernetes-validations entry has
 * a rule and a message, and only known keywords are used. Returns the
 * number of nodes checked on success, -EINVAL on the first violation. */
OP_MUST_CHECK int oa_schema_check(json_object *schema, struct op_err *err);

/* The whole CustomResourceDefinition as json-c (owned), after
 * oa_schema_check() passed on the schema. */
OP_MUST_CHECK int oa_crd_json(json_object **ret, struct op_err *err);

/* Appends the CRD as YAML to out (the content of
 * crd/postgresql.cnpg.io_clusters.yaml). */
OP_MUST_CHECK int oa_render_crd(struct op_buf *out, struct op_err *err);
/* Appends the CRD as pretty-printed JSON and a newline to out (`pgop crd -o
 * json`). -EMSGSIZE past out's cap. */
OP_MUST_CHECK int oa_render_crd_json(struct op_buf *out, struct op_err *err);

#endif
