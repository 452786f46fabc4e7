/* reconciler/objects_monitoring.c - what spec.monitoring adds to an instance
 * Pod (issue 27): the exporter's container port 9187 "metrics", and the
 * custom query ConfigMaps and Secrets mounted where the instance manager
 * reads them (instance/metrics_internal.h, INST_MONITORING_DIR):
 * /run/pgop/monitoring/configmap/<name>/<key> and .../secret/<name>/<key>.
 * One volume per distinct object (its keys as items), optional: a missing
 * object or key does not keep the Pod from starting, the exporter reports
 * the file it cannot read (cnpg_errors_total). Kept apart from objects_pod.c
 * so the Pod builder only calls in. */
#include <stdbool.h>
#include <string.h>

#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"

#define MONITORING_DIR "/run/pgop/monitoring"
#define METRICS_PORT 9187

json_object *rc_metrics_port(void)
{
	json_object *p = op_jobj();
	op_jsets(p, "name", "metrics");
	op_jset(p, "containerPort", op_jint(METRICS_PORT));
	op_jsets(p, "protocol", "TCP");
	return p;
}

/* One kind (configmap or secret): a volume per distinct name. */
static void add_kind(const char *kind, const struct api_secret_ref *refs, size_t n,
		     json_object *vols, json_object *mounts)
{
	bool cm = kind[0] == 'c';
	for (size_t i = 0; i < n; i++) {
		if (!refs[i].name || !refs[i].key)
			continue;
		bool seen = false;
		for (size_t j = 0; !seen && j < i; j++)
			seen = refs[j].name && refs[j].key && strcmp(refs[j].name, refs[i].name) == 0;
		if (seen)
			continue;
		json_object *items = op_jarr();
		for (size_t j = i; j < n; j++) {
			if (!refs[j].name || !refs[j].key || strcmp(refs[j].name, refs[i].name))
				continue;
			json_object *it = op_jobj();
			op_jsets(it, "key", refs[j].key);
			op_jsets(it, "path", refs[j].key);
			op_jpush(items, it);
		}
		_cleanup_free_ char *vname = op_asprintf("mon-%s-%zu", cm ? "cm" : "secret", i);
		json_object *src = op_jobj();
		op_jsets(src, cm ? "name" : "secretName", refs[i].name);
		op_jset(src, "items", items);
		op_jset(src, "optional", op_jbool(true));
		json_object *v = op_jobj();
		op_jsets(v, "name", vname);
		op_jset(v, cm ? "configMap" : "secret", src);
		op_jpush(vols, v);
		_cleanup_free_ char *path = op_asprintf("%s/%s/%s", MONITORING_DIR, kind, refs[i].name);
		json_object *m = op_jobj();
		op_jsets(m, "name", vname);
		op_jsets(m, "mountPath", path);
		op_jset(m, "readOnly", op_jbool(true));
		op_jpush(mounts, m);
	}
}

void rc_monitoring_volumes(const struct api_cluster *c, json_object *vols, json_object *mounts)
{
	const struct api_monitoring *m = &c->spec.monitoring;
	add_kind("configmap", m->custom_configmaps, m->n_custom_configmaps, vols, mounts);
	add_kind("secret", m->custom_secrets, m->n_custom_secrets, vols, mounts);
}
