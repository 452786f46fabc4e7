/* tests/unit/test_openapi.c - openapi/: YAML loader and emitter, schema lint,
 * the Cluster schema's content, the CRD, and the committed crd/ file. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
/* cmocka maps malloc/free to its test allocator under UNIT_TESTING; our
 * memory comes from libc (op_malloc, json-c, op_buf). */
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "openapi/openapi.h"
#include "support/alloc.h"
#include "support/json.h"
#include "samples_dirs.h"

#define CRD_FILE PGOP_SOURCE_DIR "/crd/postgresql.cnpg.io_clusters.yaml"
/* the chart's copy (Helm installs only files inside the chart; gen-crd writes both) */
#define CHART_CRD_FILE PGOP_SOURCE_DIR "/charts/pgop/crds/postgresql.cnpg.io_clusters.yaml"

static json_object *parse_ok(const char *yaml)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = oa_yaml_parse(yaml, strlen(yaml), &o, &err);
	if (r < 0)
		fail_msg("parse failed: %s", err.msg);
	return o;
}

static int parse_err(const char *yaml, struct op_err *err)
{
	json_object *o = NULL;
	int r = oa_yaml_parse(yaml, strlen(yaml), &o, err);
	if (r == 0)
		json_object_put(o);
	return r;
}

static char *read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	char chunk[8192];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (op_buf_add(&b, chunk, n) < 0)
			break;
	fclose(f);
	return op_buf_take(&b, ret_len);
}

/* ---- YAML loader -------------------------------------------------------- */

static void test_yaml_scalars(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o =
		parse_ok("i: 42\nneg: -7\nf: 1.5\nt: true\nF: False\nnul: null\ntilde: ~\n"
			 "empty:\nq: \"42\"\nsq: 'true'\ns: hello world\nlit: |\n  a\n  b\n"
			 "flow: [1, x, {k: v}]\n");
	assert_true(json_object_is_type(json_object_object_get(o, "i"), json_type_int));
	assert_int_equal(json_object_get_int64(json_object_object_get(o, "i")), 42);
	assert_int_equal(json_object_get_int64(json_object_object_get(o, "neg")), -7);
	assert_true(json_object_is_type(json_object_object_get(o, "f"), json_type_double));
	assert_true(json_object_get_boolean(json_object_object_get(o, "t")));
	assert_true(json_object_is_type(json_object_object_get(o, "F"), json_type_boolean));
	assert_false(json_object_get_boolean(json_object_object_get(o, "F")));
	assert_true(json_object_object_get_ex(o, "nul", NULL));
	assert_null(json_object_object_get(o, "nul"));
	assert_null(json_object_object_get(o, "tilde"));
	assert_null(json_object_object_get(o, "empty"));
	assert_string_equal(op_json_str_at(o, "q"), "42");
	assert_string_equal(op_json_str_at(o, "sq"), "true");
	assert_string_equal(op_json_str_at(o, "s"), "hello world");
	assert_string_equal(op_json_str_at(o, "lit"), "a\nb\n");
	json_object *flow = json_object_object_get(o, "flow");
	assert_int_equal(json_object_array_length(flow), 3);
	assert_string_equal(op_json_str_at(json_object_array_get_idx(flow, 2), "k"), "v");
}

static void test_yaml_anchors_and_merge(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o =
		parse_ok("defs:\n  base: &base\n    type: string\n    description: base\n"
			 "  more: &more\n    pattern: x\n"
			 "use:\n  <<: *base\n  description: override\n"
			 "both:\n  <<: [*base, *more]\n"
			 "copy: *base\n");
	assert_string_equal(op_json_str_at(o, "use.type"), "string");
	assert_string_equal(op_json_str_at(o, "use.description"), "override");
	assert_null(op_json_at(o, "use.<<"));
	assert_string_equal(op_json_str_at(o, "both.pattern"), "x");
	assert_string_equal(op_json_str_at(o, "both.description"), "base");
	/* aliases are copies: the override did not leak into the anchor */
	assert_string_equal(op_json_str_at(o, "copy.description"), "base");
	assert_string_equal(op_json_str_at(o, "defs.base.description"), "base");
}

static void test_yaml_errors(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(parse_err("a: 1\nb: 2\na: 3\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 3"));
	assert_non_null(strstr(err.msg, "duplicate key \"a\""));

	err = OP_ERR_INIT;
	assert_int_equal(parse_err("a: 1\n---\nb: 2\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "single document"));

	err = OP_ERR_INIT;
	assert_int_equal(parse_err("a: *nope\n", &err), -EINVAL);

	err = OP_ERR_INIT;
	assert_int_equal(parse_err("a: [1, 2\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "YAML: line 2"));

	err = OP_ERR_INIT;
	assert_int_equal(parse_err("", &err), -ENODATA);

	/* past uint64 a plain number is a float, as go-yaml v2 (Kubernetes) reads it */
	_cleanup_(op_json_putp) json_object *big = parse_ok("a: 99999999999999999999\n");
	assert_true(json_object_is_type(json_object_object_get(big, "a"), json_type_double));
	assert_true(json_object_get_double(json_object_object_get(big, "a")) == 1e20);

	/* nesting is capped */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	for (int i = 0; i < OA_MAX_DEPTH + 5; i++)
		assert_int_equal(op_buf_adds(&b, "["), 0);
	for (int i = 0; i < OA_MAX_DEPTH + 5; i++)
		assert_int_equal(op_buf_adds(&b, "]"), 0);
	err = OP_ERR_INIT;
	assert_int_equal(parse_err(op_buf_str(&b), &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "nesting deeper than"));
	op_buf_done(&b);

	/* merge of a non-mapping */
	err = OP_ERR_INIT;
	assert_int_equal(parse_err("a:\n  <<: 3\n", &err), -EINVAL);
}

/* ---- schema lint ----------------------------------------------------------- */

static int lint(const char *yaml, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *s = parse_ok(yaml);
	return oa_schema_check(s, err);
}

static void test_check_accepts_minimal(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	int n = lint("type: object\ndescription: root\nproperties:\n"
		     "  a: {type: string, description: A, enum: [x, z], default: x}\n"
		     "  m: {type: object, description: M, additionalProperties: {type: string}}\n"
		     "  l: {type: array, description: L, items: {type: integer}}\n"
		     "  q: {x-kubernetes-int-or-string: true, description: Q,\n"
		     "      anyOf: [{type: integer}, {type: string}]}\n"
		     "  p: {type: object, description: P, x-kubernetes-preserve-unknown-fields: true}\n"
		     "required: [a]\n"
		     "x-kubernetes-validations:\n  - {rule: 'has(self.a)', message: need a}\n",
		     &err);
	if (n < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(n, 8); /* root, a, m, m[*], l, l[], q, p */
}

static void test_check_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *yaml;
		const char *msg;
	} cases[] = {
		{ "type: object\nproperties:\n  a: {type: string, description: A}\n",
		  "(root): missing description" },
		{ "type: object\ndescription: r\nproperties:\n  a: {type: string}\n",
		  "a: missing description" },
		{ "type: object\ndescription: r\nproperties:\n  a: {description: A}\n",
		  "a: missing type" },
		{ "type: object\ndescription: r\nproperties:\n  a: {type: strin, description: A}\n",
		  "unknown type" },
		{ "type: object\ndescription: r\nproperties:\n  a: {type: string, description: A}\n"
		  "required: [b]\n",
		  "required field \"b\"" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: integer, description: A, enum: [1, x]}\n",
		  "enum[1] is not a integer" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: integer, description: A, default: '1'}\n",
		  "a: default is not a integer" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: string, description: A, enum: [x], default: z}\n",
		  "default is not in enum" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: array, description: A}\n",
		  "array without items" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: object, description: A}\n",
		  "a: object with neither" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: string, description: A, $ref: x}\n",
		  "unknown schema keyword \"$ref\"" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: string, description: A}\n"
		  "x-kubernetes-validations:\n  - {rule: 'true'}\n",
		  "has no message" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: integer, description: A, pattern: x}\n",
		  "pattern only on strings" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  a: {type: object, description: A, properties: {b: {type: object,\n"
		  "      description: B, properties: {c: {type: string}}}}}\n",
		  "a.b.c: missing description" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  metadata: {type: object, description: M}\n",
		  "metadata: only `type: object` is allowed" },
		{ "type: object\ndescription: r\nproperties:\n"
		  "  s: {type: object, description: S, properties: {metadata: {type: object,\n"
		  "      description: M}}}\n",
		  "s.metadata: object with neither" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(lint(cases[i].yaml, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err.msg, cases[i].msg);
	}
}

/* ---- the Cluster schema ------------------------------------------------------- */

static json_object *cluster_schema(void)
{
	json_object *s = NULL;
	struct op_err err = OP_ERR_INIT;
	if (oa_cluster_schema(&s, &err) < 0)
		fail_msg("%s", err.msg);
	return s;
}

/* Schema node at a dotted field path ("spec.bootstrap.initdb"), following
 * properties; "[]" steps into items. Borrowed. */
static json_object *node_at(json_object *schema, const char *dotted)
{
	_cleanup_free_ char *copy = op_strdup(dotted);
	json_object *n = schema;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ".", &save); tok && n; tok = strtok_r(NULL, ".", &save)) {
		if (strcmp(tok, "[]") == 0) {
			n = json_object_object_get(n, "items");
			continue;
		}
		n = op_json_at(n, "properties");
		n = n ? json_object_object_get(n, tok) : NULL;
	}
	return n;
}

static void test_cluster_schema_lints(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *s = cluster_schema();
	struct op_err err = OP_ERR_INIT;
	int n = oa_schema_check(s, &err);
	if (n < 0)
		fail_msg("%s", err.msg);
	/* every spec and status field of admission-rules.md §9/§10 is there */
	assert_true(n > 400);
}

static void test_cluster_schema_fields(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *s = cluster_schema();
	static const struct {
		const char *path, *type;
	} fields[] = {
		{ "spec.instances", "integer" },
		{ "spec.imageName", "string" },
		{ "spec.postgresql.parameters", "object" },
		{ "spec.postgresql.synchronous.method", "string" },
		{ "spec.bootstrap.initdb.walSegmentSize", "integer" },
		{ "spec.bootstrap.recovery.recoveryTarget.targetTime", "string" },
		{ "spec.bootstrap.pg_basebackup.source", "string" },
		{ "spec.replicationSlots.highAvailability.slotPrefix", "string" },
		{ "spec.managed.roles.[].ensure", "string" },
		{ "spec.tablespaces.[].storage.size", "string" },
		{ "spec.externalClusters.[].connectionParameters", "object" },
		{ "spec.probes.liveness.isolationCheck.requestTimeout", "integer" },
		{ "spec.primaryLease.leaseDurationSeconds", "integer" },
		{ "status.instances", "integer" },
		{ "status.readyInstances", "integer" },
		{ "status.selector", "string" },
		{ "status.instancesStatus", "object" },
		{ "status.currentPrimary", "string" },
		{ "status.targetPrimary", "string" },
		{ "status.conditions.[].type", "string" },
		{ "status.pgDataImageInfo.majorVersion", "integer" },
		{ "status.switchReplicaClusterStatus.inProgress", "boolean" },
		{ "status.secretsResourceVersion.managedRoleSecretVersion", "object" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++) {
		json_object *n = node_at(s, fields[i].path);
		if (!n)
			fail_msg("missing %s", fields[i].path);
		const char *t = op_json_str_at(n, "type");
		if (!t || strcmp(t, fields[i].type) != 0)
			fail_msg("%s: type %s, want %s", fields[i].path, t ? t : "(none)",
				 fields[i].type);
	}
	/* §6 constraints and defaults */
	json_object *inst = node_at(s, "spec.instances");
	assert_int_equal(json_object_get_int(op_json_at(inst, "default")), 1);
	assert_int_equal(json_object_get_int(op_json_at(inst, "minimum")), 1);
	assert_int_equal(json_object_get_int(op_json_at(node_at(s, "spec.postgresUID"), "default")),
			 26);
	assert_string_equal(op_json_str_at(node_at(s, "spec.primaryUpdateStrategy"), "default"),
			    "unsupervised");
	assert_string_equal(op_json_str_at(node_at(s, "spec.replicationSlots.highAvailability"
						       ".slotPrefix"),
					   "pattern"),
			    "^[0-9a-z_]*$");
	json_object *ws = node_at(s, "spec.bootstrap.initdb.walSegmentSize");
	assert_int_equal(json_object_get_int(op_json_at(ws, "minimum")), 1);
	assert_int_equal(json_object_get_int(op_json_at(ws, "maximum")), 1024);
	json_object *req = op_json_at(node_at(s, "spec"), "required");
	assert_non_null(req);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(req, 0)), "instances");
	assert_int_equal(json_object_array_length(op_json_at(node_at(s, "spec.logLevel"), "enum")),
			 5);
}

/* True when some x-kubernetes-validations rule on node contains all needles. */
static bool has_rule(json_object *node, const char *const *needles, size_t n)
{
	json_object *list = op_json_at(node, "x-kubernetes-validations");
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		const char *rule = op_json_str_at(json_object_array_get_idx(list, i), "rule");
		bool all = rule != NULL;
		for (size_t j = 0; all && j < n; j++)
			all = strstr(rule, needles[j]) != NULL;
		if (all)
			return true;
	}
	return false;
}

static void test_cluster_schema_cel(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *s = cluster_schema();
	static const struct {
		const char *path;
		const char *needles[3];
	} rules[] = {
		{ "spec", { "self.minSyncReplicas <= self.maxSyncReplicas" } },
		{ "spec", { "self.maxSyncReplicas < self.instances" } },
		{ "spec", { "imageName", "imageCatalogRef" } },
		{ "spec.bootstrap", { "initdb", "recovery", "pg_basebackup" } },
		{ "spec.imageCatalogRef", { "ClusterImageCatalog" } },
		{ "spec.imageCatalogRef", { "postgresql.cnpg.io" } },
		{ "spec.postgresql.synchronous.number", { "self > 0" } },
		{ "spec.postgresql.synchronous", { "preferred", "standbyNamesPre", "standbyNamesPost" } },
		{ "spec.postgresql.synchronous", { "podFailureDomainKeys", "nodeFailureDomainKeys" } },
		{ "spec.postgresql", { "syncReplicaElectionConstraint", "FailureDomainKeys" } },
		{ "spec.bootstrap.initdb", { "builtinLocale", "builtin" } },
		{ "spec.bootstrap.initdb", { "icuLocale", "icu" } },
		{ "spec.bootstrap.initdb", { "icuRules", "icu" } },
		{ "spec.serviceAccountName", { "self == oldSelf" } },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rules); i++) {
		size_t n = 0;
		while (n < 3 && rules[i].needles[n])
			n++;
		if (!has_rule(node_at(s, rules[i].path), rules[i].needles, n))
			fail_msg("no CEL rule on %s with \"%s\"", rules[i].path, rules[i].needles[0]);
	}
}

/* ---- the CRD -------------------------------------------------------------------- */

static void test_crd_shape(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *crd = NULL;
	struct op_err err = OP_ERR_INIT;
	if (oa_crd_json(&crd, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(op_json_str_at(crd, "metadata.name"), "clusters.postgresql.cnpg.io");
	assert_string_equal(op_json_str_at(crd, "spec.group"), "postgresql.cnpg.io");
	assert_string_equal(op_json_str_at(crd, "spec.names.kind"), "Cluster");
	assert_string_equal(op_json_str_at(crd, "spec.names.listKind"), "ClusterList");
	assert_string_equal(op_json_str_at(crd, "spec.names.plural"), "clusters");
	assert_string_equal(op_json_str_at(crd, "spec.names.singular"), "cluster");
	assert_null(op_json_at(crd, "spec.names.shortNames"));
	assert_string_equal(op_json_str_at(crd, "spec.scope"), "Namespaced");
	json_object *vs = op_json_at(crd, "spec.versions");
	assert_int_equal(json_object_array_length(vs), 1);
	json_object *v = json_object_array_get_idx(vs, 0);
	assert_string_equal(op_json_str_at(v, "name"), "v1");
	assert_true(json_object_get_boolean(op_json_at(v, "storage")));
	assert_non_null(op_json_at(v, "subresources.status"));
	assert_string_equal(op_json_str_at(v, "subresources.scale.specReplicasPath"),
			    ".spec.instances");
	assert_string_equal(op_json_str_at(v, "subresources.scale.statusReplicasPath"),
			    ".status.instances");
	assert_string_equal(op_json_str_at(v, "subresources.scale.labelSelectorPath"),
			    ".status.selector");
	static const char *const cols[] = { "Age",  "Instances", "Ready",	"Status",
					    "Primary", "Sync", "Max Lag", "SyncTopology" };
	json_object *pc = op_json_at(v, "additionalPrinterColumns");
	assert_int_equal(json_object_array_length(pc), OP_ARRAY_SIZE(cols));
	for (size_t i = 0; i < OP_ARRAY_SIZE(cols); i++)
		assert_string_equal(op_json_str_at(json_object_array_get_idx(pc, i), "name"),
				    cols[i]);
	assert_int_equal(json_object_get_int(op_json_at(json_object_array_get_idx(pc, 7),
							"priority")),
			 1);
	/* pgop's Sync and Max Lag (the live API's text, reconciler/replication.h) */
	assert_string_equal(op_json_str_at(json_object_array_get_idx(pc, 5), "jsonPath"),
			    ".status.sync");
	assert_string_equal(op_json_str_at(json_object_array_get_idx(pc, 6), "jsonPath"),
			    ".status.maxLag");
	assert_non_null(op_json_at(v, "schema.openAPIV3Schema.properties.status.properties.sync"));
	assert_non_null(op_json_at(v, "schema.openAPIV3Schema.properties.status.properties.maxLag"));
	assert_non_null(op_json_at(v, "schema.openAPIV3Schema.properties.spec"));
}

/* `pgop crd -o json`: pretty JSON ending in a newline, the same object. */
static void test_crd_render_json(void **state)
{
	(void)state;
	struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
	struct op_err err = OP_ERR_INIT;
	if (oa_render_crd_json(&out, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(out.len > 2);
	assert_int_equal(op_buf_str(&out)[out.len - 1], '\n');
	json_object *back = NULL, *crd = NULL;
	assert_int_equal(op_json_parse(op_buf_str(&out), out.len, 0, &back, &err), 0);
	assert_int_equal(oa_crd_json(&crd, &err), 0);
	assert_true(json_object_equal(back, crd));
	json_object_put(back);
	json_object_put(crd);
	op_buf_done(&out);
}

/* One kind's committed crd/ file (and the chart's copy) is exactly what the
 * generator produces. */
static void check_kind_file(const struct oa_kind *k)
{
	struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
	struct op_err err = OP_ERR_INIT;
	if (oa_kind_render_crd(k, &out, &err) < 0)
		fail_msg("%s: %s", k->kind, err.msg);
	_cleanup_free_ char *name = oa_kind_crd_file(k);
	_cleanup_free_ char *file = op_asprintf("%s/crd/%s", PGOP_SOURCE_DIR, name);
	_cleanup_free_ char *chart_file =
		op_asprintf("%s/charts/pgop/crds/%s", PGOP_SOURCE_DIR, name);
	size_t len = 0;
	_cleanup_free_ char *committed = read_file(file, &len);
	if (!committed)
		fail_msg("cannot read %s: run `ninja gen-crd`", file);
	if (len != out.len || memcmp(committed, op_buf_str(&out), len) != 0) {
		size_t i = 0;
		while (i < len && i < out.len && committed[i] == op_buf_str(&out)[i])
			i++;
		fail_msg("%s is stale (first difference at byte %zu): run `ninja gen-crd`", file, i);
	}
	size_t clen = 0;
	_cleanup_free_ char *chart = read_file(chart_file, &clen);
	if (!chart || clen != len || memcmp(chart, committed, len) != 0)
		fail_msg("%s differs from %s: run `ninja gen-crd`", chart_file, file);
	/* and it reads back to the same object */
	json_object *back = NULL, *crd = NULL;
	assert_int_equal(oa_yaml_parse(committed, len, &back, &err), 0);
	assert_int_equal(oa_kind_crd_json(k, &crd, &err), 0);
	assert_true(json_object_equal(back, crd));
	json_object_put(back);
	json_object_put(crd);
	op_buf_done(&out);
}

static void test_crd_file_not_stale(void **state)
{
	(void)state;
	assert_string_equal(CRD_FILE, PGOP_SOURCE_DIR "/crd/postgresql.cnpg.io_clusters.yaml");
	assert_string_equal(CHART_CRD_FILE,
			    PGOP_SOURCE_DIR "/charts/pgop/crds/postgresql.cnpg.io_clusters.yaml");
	assert_int_equal(oa_kind_count(), 4);
	for (size_t i = 0; i < oa_kind_count(); i++)
		check_kind_file(oa_kind_at(i));
	/* no stray generated file: crd/ holds exactly one YAML file per kind */
	DIR *dh = opendir(PGOP_SOURCE_DIR "/crd");
	assert_non_null(dh);
	size_t yamls = 0;
	for (struct dirent *e; (e = readdir(dh));) {
		size_t n = strlen(e->d_name);
		yamls += n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0;
	}
	closedir(dh);
	assert_int_equal(yamls, oa_kind_count());
}

/* The other kinds: names, columns, subresources, the fields of CloudNativePG
 * 1.27/1.28 and plugin-barman-cloud. */
static void test_crd_backup_kinds(void **state)
{
	(void)state;
	static const struct {
		const char *find, *crd_name, *kind, *cols[6];
		const char *fields[12];
	} cases[] = {
		{ "Backup", "backups.postgresql.cnpg.io", "Backup",
		  { "Age", "Cluster", "Method", "Phase", "Error" },
		  { "spec.cluster.name", "spec.target", "spec.method", "spec.pluginConfiguration.name",
		    "spec.online", "spec.onlineConfiguration.waitForArchive", "status.backupId",
		    "status.instanceID.podName", "status.s3Credentials.accessKeyId.name",
		    "status.snapshotBackupStatus.elements.[].name", "status.backupLabelFile",
		    "status.pluginMetadata" } },
		{ "scheduledbackups", "scheduledbackups.postgresql.cnpg.io", "ScheduledBackup",
		  { "Age", "Cluster", "Last Backup" },
		  { "spec.schedule", "spec.suspend", "spec.immediate", "spec.cluster.name",
		    "spec.backupOwnerReference", "spec.target", "spec.method", "spec.online",
		    "spec.onlineConfiguration", "spec.pluginConfiguration.parameters",
		    "status.lastCheckTime", "status.nextScheduleTime" } },
		{ "objectstores.barmancloud.cnpg.io", "objectstores.barmancloud.cnpg.io",
		  "ObjectStore", { "Age" },
		  { "spec.configuration.destinationPath", "spec.configuration.s3Credentials",
		    "spec.configuration.wal.maxParallel", "spec.configuration.data.jobs",
		    "spec.retentionPolicy", "spec.instanceSidecarConfiguration.env",
		    "spec.instanceSidecarConfiguration.retentionPolicyIntervalSeconds",
		    "status.serverRecoveryWindow" } },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		const struct oa_kind *k = oa_kind_find(cases[i].find);
		assert_non_null(k);
		_cleanup_(op_json_putp) json_object *crd = NULL;
		struct op_err err = OP_ERR_INIT;
		if (oa_kind_crd_json(k, &crd, &err) < 0)
			fail_msg("%s", err.msg);
		assert_string_equal(op_json_str_at(crd, "metadata.name"), cases[i].crd_name);
		assert_string_equal(op_json_str_at(crd, "spec.names.kind"), cases[i].kind);
		json_object *v = json_object_array_get_idx(op_json_at(crd, "spec.versions"), 0);
		assert_non_null(op_json_at(v, "subresources.status"));
		assert_null(op_json_at(v, "subresources.scale"));
		json_object *pc = op_json_at(v, "additionalPrinterColumns");
		size_t n = 0;
		while (n < 6 && cases[i].cols[n])
			n++;
		assert_int_equal(json_object_array_length(pc), n);
		for (size_t j = 0; j < n; j++)
			assert_string_equal(op_json_str_at(json_object_array_get_idx(pc, j), "name"),
					    cases[i].cols[j]);
		json_object *s = op_json_at(v, "schema.openAPIV3Schema");
		for (size_t j = 0; j < 12 && cases[i].fields[j]; j++)
			if (!node_at(s, cases[i].fields[j]))
				fail_msg("%s: no %s", cases[i].kind, cases[i].fields[j]);
	}
	/* enums and defaults that admission also checks */
	const struct oa_kind *b = oa_kind_find("backup");
	_cleanup_(op_json_putp) json_object *s = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(oa_kind_schema(b, &s, &err), 0);
	assert_int_equal(json_object_array_length(op_json_at(node_at(s, "spec.method"), "enum")), 3);
	assert_string_equal(op_json_str_at(node_at(s, "spec.method"), "default"),
			    "barmanObjectStore");
	const char *const needles[] = { "self == oldSelf" };
	assert_true(has_rule(node_at(s, "spec"), needles, 1));
	_cleanup_(op_json_putp) json_object *sb = NULL;
	assert_int_equal(oa_kind_schema(oa_kind_find("ScheduledBackup"), &sb, &err), 0);
	assert_string_equal(op_json_str_at(node_at(sb, "spec.backupOwnerReference"), "default"),
			    "none");
	/* ObjectStore.spec.configuration is the Cluster's barmanObjectStore */
	_cleanup_(op_json_putp) json_object *os = NULL, *cl = cluster_schema();
	assert_int_equal(oa_kind_schema(oa_kind_find("objectstore"), &os, &err), 0);
	assert_true(json_object_equal(op_json_at(node_at(os, "spec.configuration"), "properties"),
				      op_json_at(node_at(cl, "spec.backup.barmanObjectStore"),
						 "properties")));
	/* lookups */
	assert_null(oa_kind_find("nope"));
	assert_null(oa_kind_find(NULL));
	assert_ptr_equal(oa_kind_find("CLUSTERS"), oa_kind_at(0));
	assert_null(oa_kind_at(oa_kind_count()));
}

/* `pgop crd`: every kind, YAML documents or a JSON List. */
static void test_crd_render_all(void **state)
{
	(void)state;
	struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(oa_render_crds(NULL, 0, &out, &err), 0);
	_cleanup_(op_json_putp) json_object *docs = NULL;
	size_t docs_n = 0; /* each document starts with "---" */
	for (const char *p = op_buf_str(&out); (p = strstr(p, "---\n")); p += 4)
		docs_n++;
	assert_int_equal(docs_n, oa_kind_count());
	op_buf_reset(&out);
	assert_int_equal(oa_render_crds(NULL, 1, &out, &err), 0);
	assert_int_equal(op_json_parse(op_buf_str(&out), out.len, 0, &docs, &err), 0);
	assert_string_equal(op_json_str_at(docs, "kind"), "List");
	assert_int_equal(json_object_array_length(op_json_at(docs, "items")), oa_kind_count());
	op_buf_done(&out);
}

/* ---- samples vs. schema (what strict field validation would say) ---------------- */

__attribute__((format(printf, 2, 3))) static int why_fail(struct op_buf *why, const char *fmt,
							    ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (op_buf_vaddf(why, fmt, ap) < 0)
		print_message("(reason too long)\n");
	va_end(ap);
	return -1;
}

/* Checks value against schema node like kube-apiserver's strict decoding and
 * type validation would: unknown fields, wrong types, enums. */
static int conform(json_object *v, json_object *node, const char *path, struct op_buf *why)
{
	if (!node)
		return why_fail(why, "%s: unknown field", path);
	if (v == NULL)
		return 0;
	if (json_object_get_boolean(op_json_at(node, "x-kubernetes-int-or-string")))
		return (json_object_is_type(v, json_type_int) ||
			json_object_is_type(v, json_type_string))
			       ? 0
			       : why_fail(why, "%s: not int-or-string", path);
	const char *type = op_json_str_at(node, "type");
	json_type jt = json_object_get_type(v);
	bool ok = !type || (strcmp(type, "string") == 0 && jt == json_type_string) ||
		  (strcmp(type, "integer") == 0 && jt == json_type_int) ||
		  (strcmp(type, "number") == 0 && (jt == json_type_int || jt == json_type_double)) ||
		  (strcmp(type, "boolean") == 0 && jt == json_type_boolean) ||
		  (strcmp(type, "object") == 0 && jt == json_type_object) ||
		  (strcmp(type, "array") == 0 && jt == json_type_array);
	if (!ok)
		return why_fail(why, "%s: %s is not %s", path, op_json_type_name(v), type);
	json_object *e = op_json_at(node, "enum");
	if (e) {
		bool found = false;
		for (size_t i = 0; i < json_object_array_length(e); i++)
			found = found || json_object_equal(v, json_object_array_get_idx(e, i));
		if (!found)
			return why_fail(why, "%s: %s not in enum", path, json_object_get_string(v));
	}
	if (jt == json_type_array) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			_cleanup_free_ char *sub = op_asprintf("%s[%zu]", path, i);
			if (conform(json_object_array_get_idx(v, i), op_json_at(node, "items"), sub,
				    why) < 0)
				return -1;
		}
	}
	if (jt == json_type_object) {
		json_object *props = op_json_at(node, "properties");
		json_object *addl = op_json_at(node, "additionalProperties");
		bool preserve = json_object_get_boolean(
			op_json_at(node, "x-kubernetes-preserve-unknown-fields"));
		json_object_object_foreach(v, k, val)
		{
			_cleanup_free_ char *sub = op_asprintf("%s.%s", path, k);
			json_object *child = NULL;
			if (props)
				json_object_object_get_ex(props, k, &child);
			if (!child && addl)
				child = addl;
			if (!child && preserve)
				continue;
			if (conform(val, child, sub, why) < 0)
				return -1;
		}
	}
	return 0;
}

/* Samples CloudNativePG's own CRD rejects as well (tablespaces written as a
 * map instead of a list). */
static const char *const known_bad_samples[] = { "cluster-restore-with-tablespaces.yaml" };

static int check_sample_file(json_object *schema, const char *dir, const char *name,
			     int *clusters)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s", dir, name);
	size_t len = 0;
	_cleanup_free_ char *text = read_file(path, &len);
	assert_non_null(text);
	int bad = 0;
	/* split on document markers; the loader takes one document */
	char *doc = text;
	while (doc) {
		char *next = strstr(doc, "\n---");
		if (next) {
			*next = '\0';
			next += 4;
		}
		json_object *o = NULL;
		struct op_err err = OP_ERR_INIT;
		int r = oa_yaml_parse(doc, strlen(doc), &o, &err);
		const char *kind = r == 0 && o ? op_json_str_at(o, "kind") : NULL;
		const struct oa_kind *k = kind ? oa_kind_find(kind) : NULL;
		if (k && strcmp(k->kind, kind) == 0) {
			/* Clusters against schema; the other kinds against their own */
			_cleanup_(op_json_putp) json_object *own = NULL;
			struct op_err kerr = OP_ERR_INIT;
			if (strcmp(kind, "Cluster") == 0)
				(*clusters)++;
			else if (oa_kind_schema(k, &own, &kerr) < 0)
				fail_msg("%s: %s", kind, kerr.msg);
			struct op_buf why = OP_BUF_INIT(OP_BUF_MAX_SMALL);
			json_object *spec = op_json_at(o, "spec");
			if (conform(spec, op_json_at(own ? own : schema, "properties.spec"), "spec",
				    &why) < 0) {
				print_message("%s: %s\n", name, op_buf_str(&why));
				bad++;
			}
			op_buf_done(&why);
		}
		if (o)
			json_object_put(o);
		doc = next;
	}
	return bad;
}

/* Checks the .yaml files of dir against the schema; returns the Cluster
 * documents seen. known_bad files must be rejected, every other file conform.
 * A directory that cannot be opened fails the test. */
static int conform_dir(json_object *schema, const char *dir, const char *const *known_bad,
		       size_t n_known_bad)
{
	int clusters = 0, unexpected = 0;
	size_t expected_bad = 0;
	DIR *dh = opendir(dir);
	if (!dh)
		fail_msg("cannot open %s", dir);
	struct dirent *de;
	while ((de = readdir(dh))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0)
			continue;
		int bad = check_sample_file(schema, dir, de->d_name, &clusters);
		bool known = false;
		for (size_t i = 0; i < n_known_bad; i++)
			known = known || strcmp(de->d_name, known_bad[i]) == 0;
		if (known) {
			assert_true(bad > 0); /* still rejected, like CloudNativePG */
			expected_bad++;
		} else {
			unexpected += bad;
		}
	}
	closedir(dh);
	assert_int_equal(expected_bad, n_known_bad);
	assert_int_equal(unexpected, 0);
	return clusters;
}

/* pgop's samples/ (valid and invalid/) conform to the schema (Backup, ScheduledBackup and
 * ObjectStore samples to theirs); with PGOP_SHARED_DIR set, so does the
 * CloudNativePG corpus (but for the file its own CRD rejects as well). */
static void test_samples_conform(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *s = cluster_schema();
	assert_int_equal(conform_dir(s, REPO_SAMPLES_DIR, NULL, 0), REPO_SAMPLE_CLUSTERS);
	/* the invalid ones are well-typed: refusing them is admission's job */
	assert_int_equal(conform_dir(s, REPO_INVALID_SAMPLES_DIR, NULL, 0),
			 REPO_INVALID_SAMPLE_CLUSTERS);
	const char *shared = samples_shared_dir();
	if (!shared)
		return;
	_cleanup_free_ char *cnpg = op_asprintf("%s/samples/cnpg", shared);
	_cleanup_free_ char *dc = op_asprintf("%s/samples/cnpg/dc", shared);
	int clusters = conform_dir(s, cnpg, known_bad_samples, OP_ARRAY_SIZE(known_bad_samples));
	clusters += conform_dir(s, dc, NULL, 0);
	print_message("%d CloudNativePG sample Clusters conform (%s)\n", clusters, cnpg);
	assert_true(clusters >= CNPG_SAMPLE_CLUSTERS_MIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_scalars),
		cmocka_unit_test(test_yaml_anchors_and_merge),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_check_accepts_minimal),
		cmocka_unit_test(test_check_rejects),
		cmocka_unit_test(test_cluster_schema_lints),
		cmocka_unit_test(test_cluster_schema_fields),
		cmocka_unit_test(test_cluster_schema_cel),
		cmocka_unit_test(test_crd_shape),
		cmocka_unit_test(test_crd_render_json),
		cmocka_unit_test(test_crd_file_not_stale),
		cmocka_unit_test(test_crd_backup_kinds),
		cmocka_unit_test(test_crd_render_all),
		cmocka_unit_test(test_samples_conform),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
