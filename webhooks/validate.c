/* webhooks/validate.c - wh_validate(): the safety rules (P, always), the
 * bypass annotation (§2), JSON type checks through api/ (every type error
 * becomes an error with its path), then the rule tables in order: spec (V),
 * update (U, UPDATE only), warnings (W).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/cluster.h"
#include "support/alloc.h"
#include "support/json.h"
#include "webhooks/lookup.h"
#include "webhooks/defaults.h"
#include "webhooks/rules.h"
#include "webhooks/webhooks.h"

#define VALIDATION_ANNOTATION "cnpg.io/validation"

static void run_table(const struct wh_rule *rules, size_t n, const struct wh_ctx *ctx,
		      struct wh_result *res)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].ops & (unsigned)ctx->op)
			rules[i].fn(ctx, res);
}

/* Adds every JSON type error of obj to res under prefix; returns their count. */
static size_t type_errors(json_object *obj, const char *prefix, struct wh_result *res)
{
	struct api_errors errs = { 0 };
	struct api_cluster *c = NULL;
	if (api_cluster_decode(obj, &errs, &c, NULL) == 0) {
		api_cluster_free(c);
		return 0;
	}
	for (size_t i = 0; i < errs.n; i++) {
		if (prefix)
			wh_result_error(res, errs.items[i].path, "%s: %s", prefix, errs.items[i].msg);
		else
			wh_result_error(res, errs.items[i].path, "%s", errs.items[i].msg);
	}
	size_t n = errs.n;
	api_errors_done(&errs);
	return n;
}

static int validate(json_object *cluster, json_object *old, struct wh_result *res)
{
	size_t before = res->n_errors;
	/* P rules first and whatever the bypass annotation says: what reaches
	 * configuration files and command lines is never left unchecked */
	_cleanup_(op_json_putp) json_object *none = op_jobj();
	json_object *s0 = NULL;
	json_object_object_get_ex(cluster, "spec", &s0);
	struct wh_ctx safety = {
		.obj = cluster,
		.spec = s0 && json_object_is_type(s0, json_type_object) ? s0 : none,
		.op = old ? WH_OP_UPDATE : WH_OP_CREATE,
	};
	run_table(wh_rules_safety, wh_rules_safety_count, &safety, res);
	const char *bypass = wh_cluster_annotation(cluster, VALIDATION_ANNOTATION);
	if (bypass && strcmp(bypass, "disabled") == 0) {
		if (res->n_errors > before)
			return (int)(res->n_errors - before);
		wh_result_warn(res, "validation webhook is disabled — all changes are accepted "
				    "without validation (annotation %s=disabled)",
			       VALIDATION_ANNOTATION);
		return 0;
	}
	if (bypass && *bypass && strcmp(bypass, "enabled") != 0)
		wh_result_warn(res, "invalid value '%s' for annotation %s (expected 'enabled' or "
				    "'disabled'): validation stays enabled",
			       bypass, VALIDATION_ANNOTATION);

	if (type_errors(cluster, NULL, res) > 0)
		return (int)(res->n_errors - before);

	_cleanup_(op_json_putp) json_object *old_defaulted = NULL;
	_cleanup_(op_json_putp) json_object *empty = op_jobj();
	json_object *spec = NULL;
	json_object_object_get_ex(cluster, "spec", &spec);
	struct wh_ctx ctx = {
		.obj = cluster,
		.spec = spec && json_object_is_type(spec, json_type_object) ? spec : empty,
		.op = old ? WH_OP_UPDATE : WH_OP_CREATE,
	};
	if (old) {
		/* A stored object that no longer decodes cannot be compared field by
		 * field: report it instead of guessing (the new object is fine). */
		if (!json_object_is_type(old, json_type_object) ||
		    json_object_deep_copy(old, &old_defaulted, NULL) != 0) {
			wh_result_error(res, "", "old object: expected object, got %s",
					op_json_type_name(old));
			return (int)(res->n_errors - before);
		}
		wh_defaults_apply(old_defaulted, false);
		json_object *os = NULL;
		json_object_object_get_ex(old_defaulted, "spec", &os);
		ctx.old = old_defaulted;
		ctx.old_spec = os && json_object_is_type(os, json_type_object) ? os : empty;
	}
	run_table(wh_rules_spec, wh_rules_spec_count, &ctx, res);
	if (old)
		run_table(wh_rules_update, wh_rules_update_count, &ctx, res);
	run_table(wh_rules_warnings, wh_rules_warnings_count, &ctx, res);
	return (int)(res->n_errors - before);
}

int wh_validate(json_object *cluster, json_object *old, struct wh_result *res)
{
	json_object *outer = res->subject;
	res->subject = cluster; /* messages quote the new object's values */
	int n = validate(cluster, old, res);
	res->subject = outer;
	return n;
}
