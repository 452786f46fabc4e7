/* webhooks/rules_spec_cluster.c - cluster-level rules: bootstrap method
 * count (V7), synchronous replica bounds (V12, V13).
 */
#include "webhooks/rules_spec.h"

#include "support/json.h"

static bool get_i64(json_object *o, const char *dotted, int64_t *ret)
{
	json_object *v = op_json_at(o, dotted);
	if (!v || !json_object_is_type(v, json_type_int))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

WH_RULE_FN(wh_v7_bootstrap_method)
{
	json_object *b = op_json_at(ctx->spec, "bootstrap");
	if (!b || !json_object_is_type(b, json_type_object))
		return;
	static const char *const methods[] = { "initdb", "recovery", "pg_basebackup" };
	int n = 0;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		json_object *m = op_json_at(b, methods[i]);
		if (m && !json_object_is_type(m, json_type_null))
			n++;
	}
	if (n > 1)
		wh_result_error(res, "spec.bootstrap",
				"Only one bootstrap method can be specified at a time");
}

WH_RULE_FN(wh_v12_min_sync_replicas)
{
	int64_t min = 0, max = 0;
	get_i64(ctx->spec, "minSyncReplicas", &min);
	get_i64(ctx->spec, "maxSyncReplicas", &max);
	if (min < 0)
		wh_result_error(res, "spec.minSyncReplicas",
				"minSyncReplicas must be a non negative integer");
	if (min > max)
		wh_result_error(res, "spec.minSyncReplicas",
				"minSyncReplicas cannot be greater than maxSyncReplicas");
}

WH_RULE_FN(wh_v13_max_sync_replicas)
{
	int64_t max = 0, instances = 1;
	get_i64(ctx->spec, "maxSyncReplicas", &max);
	get_i64(ctx->spec, "instances", &instances);
	if (max < 0)
		wh_result_error(res, "spec.maxSyncReplicas",
				"maxSyncReplicas must be a non negative integer");
	if (max >= instances)
		wh_result_error(res, "spec.maxSyncReplicas",
				"maxSyncReplicas must be lower than the number of instances");
}
