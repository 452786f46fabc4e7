/* webhooks/rules_spec_podpatch.c - V43: the cnpg.io/podPatch annotation must
 * be an RFC 6902 JSON patch that applies cleanly to the instance Pod the
 * operator would generate (CNPG validatePodPatchAnnotation).
 *
 * The Pod is a skeleton of what reconciler/ generates for instance 1: the
 * same containers, volumes, ports, probes and security contexts, plus the
 * cluster's env, resources, node selector, tolerations, WAL and tablespace
 * volumes. Patches that touch fields only set in other configurations may
 * therefore be judged against a slightly smaller Pod than the real one.
 */
#include "webhooks/rules_spec.h"

#include <string.h>

#include "api/annotations.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/jsonpatch.h"

#define ANN_PATH "metadata.annotations[" API_ANN_POD_PATCH "]"
#define ANN_MAX_LEN (256u * 1024) /* Kubernetes caps all annotations at 256 KiB */

/* The fixed part of the instance Pod; names are filled in by build_pod(). */
static const char pod_template[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	"\"metadata\":{\"name\":\"\",\"namespace\":\"\",\"labels\":{"
	"\"cnpg.io/cluster\":\"\",\"cnpg.io/instanceName\":\"\",\"cnpg.io/podRole\":\"instance\","
	"\"cnpg.io/instanceRole\":\"primary\",\"role\":\"primary\"},"
	"\"annotations\":{\"cnpg.io/operatorVersion\":\"" PGOP_VERSION "\"}},"
	"\"spec\":{\"hostname\":\"\",\"subdomain\":\"\",\"enableServiceLinks\":false,"
	"\"serviceAccountName\":\"\",\"terminationGracePeriodSeconds\":1800,"
	"\"initContainers\":[{\"name\":\"bootstrap-controller\",\"image\":\"\","
	"\"command\":[\"/manager\",\"bootstrap\",\"/controller/manager\"],"
	"\"volumeMounts\":[{\"name\":\"scratch-data\",\"mountPath\":\"/controller\"}],"
	"\"resources\":{},\"securityContext\":{\"allowPrivilegeEscalation\":false,"
	"\"capabilities\":{\"drop\":[\"ALL\"]},\"privileged\":false,"
	"\"readOnlyRootFilesystem\":true,\"runAsNonRoot\":true,"
	"\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}}],"
	"\"containers\":[{\"name\":\"postgres\",\"image\":\"\",\"imagePullPolicy\":\"IfNotPresent\","
	"\"command\":[\"/controller/manager\",\"instance\",\"run\"],"
	"\"env\":[{\"name\":\"PGDATA\",\"value\":\"/var/lib/postgresql/data/pgdata\"},"
	"{\"name\":\"POD_NAME\",\"value\":\"\"},{\"name\":\"NAMESPACE\",\"value\":\"\"},"
	"{\"name\":\"CLUSTER_NAME\",\"value\":\"\"},{\"name\":\"PGPORT\",\"value\":\"5432\"},"
	"{\"name\":\"PGHOST\",\"value\":\"/controller/run\"},"
	"{\"name\":\"TMPDIR\",\"value\":\"/controller/tmp\"}],"
	"\"ports\":[{\"name\":\"postgresql\",\"containerPort\":5432,\"protocol\":\"TCP\"},"
	"{\"name\":\"metrics\",\"containerPort\":9187,\"protocol\":\"TCP\"},"
	"{\"name\":\"status\",\"containerPort\":8000,\"protocol\":\"TCP\"}],"
	"\"volumeMounts\":[{\"name\":\"pgdata\",\"mountPath\":\"/var/lib/postgresql/data\"},"
	"{\"name\":\"scratch-data\",\"mountPath\":\"/run\"},"
	"{\"name\":\"scratch-data\",\"mountPath\":\"/controller\"},"
	"{\"name\":\"shm\",\"mountPath\":\"/dev/shm\"}],"
	"\"startupProbe\":{\"httpGet\":{\"path\":\"/startupz\",\"port\":8000,\"scheme\":\"HTTPS\"},"
	"\"periodSeconds\":10,\"failureThreshold\":360,\"timeoutSeconds\":5},"
	"\"livenessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":8000,\"scheme\":\"HTTPS\"},"
	"\"periodSeconds\":10,\"timeoutSeconds\":5},"
	"\"readinessProbe\":{\"httpGet\":{\"path\":\"/readyz\",\"port\":8000,\"scheme\":\"HTTPS\"},"
	"\"periodSeconds\":10,\"timeoutSeconds\":5},"
	"\"resources\":{},\"securityContext\":{\"allowPrivilegeEscalation\":false,"
	"\"capabilities\":{\"drop\":[\"ALL\"]},\"privileged\":false,"
	"\"readOnlyRootFilesystem\":true,\"runAsNonRoot\":true,"
	"\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}}],"
	"\"volumes\":[{\"name\":\"pgdata\",\"persistentVolumeClaim\":{\"claimName\":\"\"}},"
	"{\"name\":\"scratch-data\",\"emptyDir\":{}},"
	"{\"name\":\"shm\",\"emptyDir\":{\"medium\":\"Memory\"}}],"
	"\"securityContext\":{\"runAsUser\":26,\"runAsGroup\":26,\"fsGroup\":26,"
	"\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},"
	"\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
	"[{\"weight\":100,\"podAffinityTerm\":{\"labelSelector\":{\"matchExpressions\":[{"
	"\"key\":\"cnpg.io/cluster\",\"operator\":\"In\",\"values\":[\"\"]},{"
	"\"key\":\"cnpg.io/podRole\",\"operator\":\"In\",\"values\":[\"instance\"]}]},"
	"\"topologyKey\":\"kubernetes.io/hostname\"}}]}}}}";

static void set_copy(json_object *parent, const char *key, json_object *value)
{
	json_object *v = NULL;
	if (json_object_deep_copy(value, &v, NULL) < 0)
		op_oom(0);
	op_jset(parent, key, v);
}

/* Appends {"name": vol, "persistentVolumeClaim": {"claimName": claim}} to vols. */
static void add_pvc_volume(json_object *vols, const char *vol, const char *claim)
{
	json_object *v = op_jobj(), *pvc = op_jobj();
	op_jsets(pvc, "claimName", claim);
	op_jsets(v, "name", vol);
	op_jset(v, "persistentVolumeClaim", pvc);
	op_jpush(vols, v);
}

/* Appends {"name": vol, "mountPath": path} to mounts. */
static void add_mount(json_object *mounts, const char *vol, const char *path)
{
	json_object *m = op_jobj();
	op_jsets(m, "name", vol);
	op_jsets(m, "mountPath", path);
	op_jpush(mounts, m);
}

/* Returns the OWNED skeleton Pod of instance 1 of the cluster in ctx. */
static json_object *build_pod(const struct wh_ctx *ctx)
{
	json_object *pod = NULL;
	if (op_json_parse(pod_template, sizeof(pod_template) - 1, OP_JSON_MAX_DEPTH, &pod, NULL) <
	    0)
		abort(); /* the template is a constant */
	const char *cluster = wh_str(ctx->obj, "metadata.name");
	const char *ns = wh_str(ctx->obj, "metadata.namespace");
	cluster = cluster ? cluster : "";
	_cleanup_free_ char *name = op_asprintf("%s-1", cluster);
	const char *image = wh_str(ctx->spec, "imageName");
	op_jsets(op_json_at(pod, "metadata"), "name", name);
	op_jsets(op_json_at(pod, "metadata"), "namespace", ns);
	op_jsets(op_json_at(pod, "metadata.labels"), "cnpg.io/cluster", cluster);
	op_jsets(op_json_at(pod, "metadata.labels"), "cnpg.io/instanceName", name);
	op_jsets(op_json_at(pod, "spec"), "hostname", name);
	op_jsets(op_json_at(pod, "spec"), "subdomain", cluster);
	op_jsets(op_json_at(pod, "spec"), "serviceAccountName", cluster);
	json_object *init = json_object_array_get_idx(op_json_at(pod, "spec.initContainers"), 0);
	json_object *pg = json_object_array_get_idx(op_json_at(pod, "spec.containers"), 0);
	op_jsets(init, "image", image);
	op_jsets(pg, "image", image);
	json_object *env = op_json_at(pg, "env");
	op_jsets(json_object_array_get_idx(env, 1), "value", name);
	op_jsets(json_object_array_get_idx(env, 2), "value", ns);
	op_jsets(json_object_array_get_idx(env, 3), "value", cluster);
	json_object *terms = op_json_at(pod, "spec.affinity.podAntiAffinity");
	json_object *term0 = json_object_array_get_idx(
		op_json_at(terms, "preferredDuringSchedulingIgnoredDuringExecution"), 0);
	json_object *values = op_json_at(
		json_object_array_get_idx(op_json_at(term0, "podAffinityTerm.labelSelector."
								"matchExpressions"),
					  0),
		"values");
	if (json_object_array_put_idx(values, 0, op_jstr(cluster)) < 0)
		op_oom(0);
	_cleanup_free_ char *pvc = op_strdup(name);
	op_jsets(op_json_at(json_object_array_get_idx(op_json_at(pod, "spec.volumes"), 0),
			    "persistentVolumeClaim"),
		 "claimName", pvc);

	json_object *user_env = wh_arr(ctx->spec, "env");
	for (size_t i = 0; user_env && i < json_object_array_length(user_env); i++) {
		json_object *c = NULL;
		if (json_object_deep_copy(json_object_array_get_idx(user_env, i), &c, NULL) < 0)
			op_oom(0);
		op_jpush(env, c);
	}
	if (wh_obj(ctx->spec, "resources"))
		set_copy(pg, "resources", wh_obj(ctx->spec, "resources"));
	if (wh_obj(ctx->spec, "affinity.nodeSelector"))
		set_copy(op_json_at(pod, "spec"), "nodeSelector",
			 wh_obj(ctx->spec, "affinity.nodeSelector"));
	if (wh_arr(ctx->spec, "affinity.tolerations"))
		set_copy(op_json_at(pod, "spec"), "tolerations",
			 wh_arr(ctx->spec, "affinity.tolerations"));
	json_object *vols = op_json_at(pod, "spec.volumes");
	json_object *mounts = op_json_at(pg, "volumeMounts");
	if (wh_obj(ctx->spec, "walStorage")) {
		_cleanup_free_ char *wal = op_asprintf("%s-wal", name);
		add_pvc_volume(vols, "pg-wal", wal);
		add_mount(mounts, "pg-wal", "/var/lib/postgresql/wal");
	}
	json_object *ts = wh_arr(ctx->spec, "tablespaces");
	for (size_t i = 0; ts && i < json_object_array_length(ts); i++) {
		const char *tn = wh_str(json_object_array_get_idx(ts, i), "name");
		if (!tn)
			continue;
		_cleanup_free_ char *claim = op_asprintf("%s-tbs-%s", name, tn);
		_cleanup_free_ char *path = op_asprintf("/var/lib/postgresql/tablespaces/%s", tn);
		add_pvc_volume(vols, tn, claim);
		add_mount(mounts, tn, path);
	}
	return pod;
}

static bool str_in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

/* NULL when op is a well-formed RFC 6902 operation, else what is wrong. */
static const char *patch_op_problem(json_object *op)
{
	static const char *const ops[] = { "add", "remove", "replace", "move", "copy", "test" };
	if (!op || !json_object_is_type(op, json_type_object))
		return "each operation must be an object";
	const char *name = wh_str(op, "op");
	if (!name || !str_in(name, ops, OP_ARRAY_SIZE(ops)))
		return "unknown or missing operation";
	const char *path = wh_str(op, "path");
	if (!path || (*path && *path != '/'))
		return "path must be a JSON pointer";
	json_object *dummy = NULL;
	bool needs_value = strcmp(name, "add") == 0 || strcmp(name, "replace") == 0 ||
			   strcmp(name, "test") == 0;
	if (needs_value && !json_object_object_get_ex(op, "value", &dummy))
		return "missing value";
	if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
		const char *from = wh_str(op, "from");
		if (!from || (*from && *from != '/'))
			return "from must be a JSON pointer";
	}
	return NULL;
}

WH_RULE_FN(wh_v43_pod_patch_annotation)
{
	const char *v = wh_annotation(ctx, API_ANN_POD_PATCH);
	if (!v)
		return;
	_cleanup_(op_json_putp) json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(v, strnlen(v, ANN_MAX_LEN + 1), OP_JSON_MAX_DEPTH, &patch, &err) < 0 ||
	    !json_object_is_type(patch, json_type_array)) {
		wh_result_error(res, ANN_PATH, "error decoding JSON patch: %s",
				op_err_isset(&err) ? err.msg : "expected an array of operations");
		return;
	}
	size_t n = json_object_array_length(patch);
	for (size_t i = 0; i < n; i++) {
		const char *problem = patch_op_problem(json_object_array_get_idx(patch, i));
		if (problem) {
			wh_result_error(res, ANN_PATH, "error decoding JSON patch: operation %zu: %s",
					i, problem);
			return;
		}
	}
	_cleanup_(op_json_putp) json_object *pod = build_pod(ctx);
	_cleanup_(op_json_putp) json_object *patched = NULL;
	if (op_jsonpatch_apply(pod, patch, &patched, &err) < 0)
		wh_result_error(res, ANN_PATH, "jsonpatch doesn't apply cleanly to the pod: %s",
				err.msg);
}
