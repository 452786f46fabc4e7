/* webhooks/rules_spec_cluster.c - cluster-level rules: superuser secret
 * (V5), certificates (V6), image (V8, V9), primary update strategy (V11),
 * synchronous replica bounds (V12, V13), name (V18), tolerations and
 * anti-affinity (V25, V26), annotations (V42, V46; V43 lives in
 * rules_spec_podpatch.c), service account (V49) and primary lease timings
 * (V50). CNPG cluster_webhook.go.
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <string.h>

#include "api/annotations.h"
#include "support/alloc.h"
#include "support/json.h"

#define ANN_LIVENESS_PINGER "alpha.cnpg.io/livenessPinger"
#define ANN_MAX_LEN (256u * 1024) /* annotations total at most 256 KiB in Kubernetes */

WH_RULE_FN(wh_v5_superuser_secret)
{
	json_object *s = wh_obj(ctx->spec, "superuserSecret");
	if (s && !wh_nstr(s, "name"))
		wh_result_error(res, "spec.superuserSecret.name",
				"Super user secret name can't be empty");
}

WH_RULE_FN(wh_v6_certs)
{
	json_object *c = wh_obj(ctx->spec, "certificates");
	if (!c)
		return;
	bool server_tls = wh_nstr(c, "serverTLSSecret") != NULL;
	if (server_tls && wh_len(c, "serverAltDNSNames") > 0)
		wh_result_error(res, "spec.certificates.serverAltDNSNames",
				"Server alternative DNS names can't be defined when server TLS "
				"secret is provided");
	if (server_tls && !wh_nstr(c, "serverCASecret"))
		wh_result_error(res, "spec.certificates.serverCASecret",
				"Server CA secret can't be empty when server TLS secret is "
				"provided");
	if (wh_nstr(c, "replicationTLSSecret") && !wh_nstr(c, "clientCASecret"))
		wh_result_error(res, "spec.certificates.clientCASecret",
				"Client CA secret can't be empty when client replication secret "
				"is provided");
}

WH_RULE_FN(wh_v8_image_name)
{
	const char *image = wh_nstr(ctx->spec, "imageName");
	if (!image)
		return;
	const char *tag;
	size_t n;
	bool digest;
	api_image_tag(image, &tag, &n, &digest);
	if (n == 6 && strncmp(tag, "latest", 6) == 0)
		wh_result_error(res, "spec.imageName",
				"Can't use 'latest' as image tag as we can't detect upgrades");
	else if (n == 0 && digest)
		wh_result_error(res, "spec.imageName",
				"Can't use just the image sha as we can't detect upgrades");
	else if (api_version_from_tag(tag, n, &(int){ 0 }, NULL) < 0)
		wh_result_error(res, "spec.imageName", "invalid version tag");
}

WH_RULE_FN(wh_v9_image_pull_policy)
{
	static const char *const ok[] = { "Always", "IfNotPresent", "Never" };
	const char *p = wh_str(ctx->spec, "imagePullPolicy");
	if (!p || !*p)
		return;
	for (size_t i = 0; i < OP_ARRAY_SIZE(ok); i++)
		if (strcmp(p, ok[i]) == 0)
			return;
	wh_result_unsupported(res, "spec.imagePullPolicy", ok, OP_ARRAY_SIZE(ok));
}

WH_RULE_FN(wh_v11_primary_update_strategy)
{
	const char *s = wh_str(ctx->spec, "primaryUpdateStrategy");
	if (!s || !*s)
		return;
	int64_t instances = 1;
	wh_i64(ctx->spec, "instances", &instances);
	if (strcmp(s, "supervised") == 0) {
		if (instances == 1)
			wh_result_error(res, "spec.primaryUpdateStrategy",
					"supervised update strategy is not allowed for clusters "
					"with a single instance");
	} else if (strcmp(s, "unsupervised") != 0) {
		static const char *const ok[] = { "supervised", "unsupervised" };
		wh_result_unsupported(res, "spec.primaryUpdateStrategy", ok, OP_ARRAY_SIZE(ok));
	}
}

WH_RULE_FN(wh_v12_min_sync_replicas)
{
	int64_t min = 0, max = 0;
	wh_i64(ctx->spec, "minSyncReplicas", &min);
	wh_i64(ctx->spec, "maxSyncReplicas", &max);
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
	wh_i64(ctx->spec, "maxSyncReplicas", &max);
	wh_i64(ctx->spec, "instances", &instances);
	if (max < 0)
		wh_result_error(res, "spec.maxSyncReplicas",
				"maxSyncReplicas must be a non negative integer");
	if (max >= instances)
		wh_result_error(res, "spec.maxSyncReplicas",
				"maxSyncReplicas must be lower than the number of instances");
}

WH_RULE_FN(wh_v18_name)
{
	const char *name = wh_str(ctx->obj, "metadata.name");
	if (!name)
		return;
	if (!wh_is_dns1035_label(name))
		wh_result_error(res, "metadata.name", "cluster name must be a valid DNS label");
	if (strlen(name) > 50)
		wh_result_error(res, "metadata.name",
				"the maximum length of a cluster name is 50 characters");
}

/* ---- V25 tolerations (Kubernetes ValidateTolerations) ---- */

static bool str_in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

static void check_toleration(json_object *t, size_t i, struct wh_result *res)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	_cleanup_free_ char *base = op_asprintf("spec.affinity.tolerations[%zu]", i);
	const char *key = wh_str(t, "key");
	const char *op = wh_str(t, "operator");
	const char *value = wh_str(t, "value");
	const char *effect = wh_str(t, "effect");
	key = key ? key : "";
	op = op ? op : "";
	value = value ? value : "";
	effect = effect ? effect : "";
	if (*key && !wh_is_qualified_name(key)) {
		_cleanup_free_ char *p = op_asprintf("%s.key", base);
		wh_result_error(res, p, "name part must consist of alphanumeric characters, "
					"'-', '_' or '.', and must start and end with an "
					"alphanumeric character");
	}
	if (!*key && strcmp(op, "Exists") != 0) {
		_cleanup_free_ char *p = op_asprintf("%s.operator", base);
		wh_result_error(res, p, "operator must be Exists when `key` is empty, which means "
					"\"match all values and all keys\"");
	}
	if (wh_at(t, "tolerationSeconds") && strcmp(effect, "NoExecute") != 0) {
		_cleanup_free_ char *p = op_asprintf("%s.effect", base);
		wh_result_error(res, p, "effect must be 'NoExecute' when `tolerationSeconds` is set");
	}
	if (!*op || strcmp(op, "Equal") == 0) {
		if (!wh_is_label_value(value)) {
			_cleanup_free_ char *p = op_asprintf("%s.value", base);
			wh_result_error(res, p, "a valid label must be an empty string or consist "
						"of alphanumeric characters, '-', '_' or '.', and "
						"must start and end with an alphanumeric character");
		}
	} else if (strcmp(op, "Exists") == 0) {
		if (*value) {
			_cleanup_free_ char *p = op_asprintf("%s.operator", base);
			wh_result_error(res, p, "value must be empty when `operator` is 'Exists'");
		}
	} else {
		_cleanup_free_ char *p = op_asprintf("%s.operator", base);
		wh_result_error(res, p, "Unsupported value: \"%s\": supported values: \"Equal\", "
					"\"Exists\"", op);
	}
	if (*effect && !str_in(effect, effects, OP_ARRAY_SIZE(effects))) {
		_cleanup_free_ char *p = op_asprintf("%s.effect", base);
		wh_result_error(res, p, "Unsupported value: \"%s\": supported values: "
					"\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"", effect);
	}
}

WH_RULE_FN(wh_v25_tolerations)
{
	json_object *tol = wh_arr(ctx->spec, "affinity.tolerations");
	size_t n = tol ? json_object_array_length(tol) : 0;
	for (size_t i = 0; i < n; i++)
		check_toleration(json_object_array_get_idx(tol, i), i, res);
}

WH_RULE_FN(wh_v26_anti_affinity)
{
	const char *t = wh_str(ctx->spec, "affinity.podAntiAffinityType");
	static const char *const ok[] = { "preferred", "required" };
	if (t && *t && strcmp(t, ok[0]) != 0 && strcmp(t, ok[1]) != 0)
		wh_result_unsupported(res, "spec.affinity.podAntiAffinityType", ok,
				      OP_ARRAY_SIZE(ok));
}

WH_RULE_FN(wh_v42_hibernation_annotation)
{
	const char *v = wh_annotation(ctx, API_ANN_HIBERNATION);
	static const char *const ok[] = { "off", "on" };
	if (v && strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
		wh_result_unsupported(res, "metadata.annotations[" API_ANN_HIBERNATION "]", ok,
				      OP_ARRAY_SIZE(ok));
}

WH_RULE_FN(wh_v46_liveness_pinger)
{
	const char *v = wh_annotation(ctx, ANN_LIVENESS_PINGER);
	if (!v)
		return;
	const char *path = "metadata.annotations[" ANN_LIVENESS_PINGER "]";
	_cleanup_(op_json_putp) json_object *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(v, strnlen(v, ANN_MAX_LEN + 1), OP_JSON_MAX_DEPTH, &cfg, &err) < 0 ||
	    !json_object_is_type(cfg, json_type_object)) {
		wh_result_error(res, path, "error decoding liveness pinger config: %s",
				op_err_isset(&err) ? err.msg : "expected an object");
		return;
	}
	bool enabled;
	if (!wh_bool(cfg, "enabled", &enabled)) {
		wh_result_error(res, path,
				"error decoding liveness pinger config: the 'enabled' field is "
				"required");
		return;
	}
	static const char *const timeouts[] = { "requestTimeout", "connectionTimeout" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(timeouts); i++) {
		int64_t t;
		if (wh_at(cfg, timeouts[i]) && !wh_i64(cfg, timeouts[i], &t))
			wh_result_error(res, path,
					"error decoding liveness pinger config: '%s' must be an "
					"integer",
					timeouts[i]);
	}
}

WH_RULE_FN(wh_v49_service_account)
{
	if (wh_nstr(ctx->spec, "serviceAccountName") && wh_at(ctx->spec, "serviceAccountTemplate"))
		wh_result_error(res, "spec.serviceAccountName",
				"serviceAccountName and serviceAccountTemplate are mutually "
				"exclusive");
}

WH_RULE_FN(wh_v50_primary_lease)
{
	json_object *l = wh_obj(ctx->spec, "primaryLease");
	if (!l)
		return;
	int64_t lease = 15, renew = 10, retry = 2;
	wh_i64(l, "leaseDurationSeconds", &lease);
	wh_i64(l, "renewDeadlineSeconds", &renew);
	wh_i64(l, "retryPeriodSeconds", &retry);
	if (lease <= renew)
		wh_result_error(res, "spec.primaryLease.leaseDurationSeconds",
				"leaseDurationSeconds must be greater than renewDeadlineSeconds");
	if ((__int128)5 * renew <= (__int128)6 * retry) /* no overflow on huge values */
		wh_result_error(res, "spec.primaryLease.renewDeadlineSeconds",
				"renewDeadlineSeconds must be greater than 1.2 * retryPeriodSeconds");
}
