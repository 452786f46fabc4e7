/* tests/unit/webhooks_rules_harness.h - shared by the test_webhooks_rules*
 * executables: builds Clusters from compact JSON and runs table rows through
 * wh_validate().
 *
 * A row is a Cluster (a spec snippet merged over a valid base spec, plus
 * optional metadata) and the field path of the error it must produce (NULL:
 * it must be admitted with no error at all). Rows go through wh_validate()
 * (type checks, then every rule table), so an admitted row also proves that
 * no other rule fires by accident. JSON is written with ' for " and ` for an
 * escaped \".
 */
#ifndef PGOP_TESTS_WEBHOOKS_RULES_HARNESS_H
#define PGOP_TESTS_WEBHOOKS_RULES_HARNESS_H

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
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "support/alloc.h"
#include "support/json.h"
#include "webhooks/rules_spec.h"

static inline json_object *jparse(const char *src)
{
	size_t n = strlen(src);
	_cleanup_free_ char *s = op_malloc(2 * n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (src[i] == '\'') {
			s[o++] = '"';
		} else if (src[i] == '`') {
			s[o++] = '\\';
			s[o++] = '"';
		} else {
			s[o++] = src[i];
		}
	}
	s[o] = '\0';
	json_object *obj = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, o, OP_JSON_MAX_DEPTH, &obj, &err) < 0)
		fail_msg("bad test JSON %s: %s", s, err.msg);
	return obj;
}

#define BASE_SPEC                                                                          \
	"{'instances':1,'imageName':'ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie',"  \
	"'storage':{'size':'1Gi'},'bootstrap':{'initdb':{'database':'app','owner':'app'}}}"

/* Builds {metadata:{name:pg, ...meta}, spec:{BASE_SPEC ...spec}}; OWNED. */
static inline json_object *make_cluster(const char *meta, const char *spec)
{
	json_object *cluster = jparse("{'apiVersion':'postgresql.cnpg.io/v1','kind':'Cluster',"
				      "'metadata':{'name':'pg','namespace':'default'}}");
	json_object *base = jparse(BASE_SPEC);
	if (spec) {
		_cleanup_(op_json_putp) json_object *over = jparse(spec);
		json_object_object_foreach(over, k, v)
		{
			op_jset(base, k, json_object_get(v));
		}
	}
	op_jset(cluster, "spec", base);
	if (meta) {
		_cleanup_(op_json_putp) json_object *over = jparse(meta);
		json_object *md = op_json_at(cluster, "metadata");
		json_object_object_foreach(over, k, v)
		{
			op_jset(md, k, json_object_get(v));
		}
	}
	return cluster;
}

static inline void run_spec_rules(json_object *cluster, struct wh_result *res)
{
	struct wh_ctx ctx = { .obj = cluster,
			      .spec = op_json_at(cluster, "spec"),
			      .op = WH_OP_CREATE };
	for (size_t i = 0; i < wh_rules_spec_count; i++)
		wh_rules_spec[i].fn(&ctx, res);
}

struct row {
	const char *name;
	const char *meta; /* JSON object merged into metadata, or NULL */
	const char *spec; /* JSON object merged into the base spec, or NULL */
	const char *path; /* expected error path; NULL = admitted */
};

static inline void print_errors(const struct row *r, const struct wh_result *res)
{
	print_message("row '%s': %zu error(s)\n", r->name, res->n_errors);
	for (size_t i = 0; i < res->n_errors; i++)
		print_message("  %s: %s\n", res->errors[i].path, res->errors[i].msg);
}

static inline void run_rows(const struct row *rows, size_t n)
{
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		_cleanup_(op_json_putp) json_object *c = make_cluster(r->meta, r->spec);
		struct wh_result res = { 0 };
		int nerr = wh_validate(c, NULL, &res);
		assert_int_equal((size_t)nerr, res.n_errors);
		bool ok;
		if (!r->path) {
			ok = res.n_errors == 0;
		} else {
			ok = false;
			for (size_t e = 0; e < res.n_errors; e++)
				ok = ok || strcmp(res.errors[e].path, r->path) == 0;
		}
		if (!ok) {
			print_message("FAILED row '%s' (want %s)\n", r->name,
				      r->path ? r->path : "admitted");
			print_errors(r, &res);
			failures++;
		}
		wh_result_done(&res);
	}
	assert_int_equal(failures, 0);
}

#define RUN(rows) run_rows(rows, OP_ARRAY_SIZE(rows))

#define EXT_ORIGIN "'externalClusters':[{'name':'origin','connectionParameters':{'host':'h'}}]"


#endif
