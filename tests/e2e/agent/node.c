/* tests/e2e/agent/node.c - the Node object (status + Lease heartbeats), the
 * default StorageClass pgop-e2e and its provisioner (a hostPath PV per
 * claim under STATE/volumes/pvc-<uid>, pre-bound through claimRef; released
 * volumes are deleted with their directory). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

static int node_create(struct na_agent *a, struct op_err *err)
{
	_cleanup_free_ char *body = op_asprintf(
		"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
		"\"labels\":{\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
		"\"kubernetes.io/arch\":\"amd64\"}},\"spec\":{\"podCIDR\":\"%s\","
		"\"podCIDRs\":[\"%s\"]}}",
		a->node_name, a->node_name, a->pod_cidr, a->pod_cidr);
	json_object *obj = NULL;
	int rc = op_json_parse(body, strlen(body), 8, &obj, err);
	if (rc < 0)
		return rc;
	rc = kube_create(a->kc, KUBE_NODES, NULL, obj, NULL, err);
	json_object_put(obj);
	if (rc == -EEXIST) {
		op_err_clear(err);
		rc = 0;
	}
	return rc;
}

static int node_status(struct na_agent *a, struct op_err *err)
{
	char now[32];
	na_rfc3339(now);
	struct sysinfo si;
	long long mem_ki = sysinfo(&si) == 0 ? (long long)si.totalram * si.mem_unit / 1024 : 4194304;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct utsname u;
	uname(&u);
	static const struct {
		const char *type, *status, *reason;
	} conds[] = {
		{ "MemoryPressure", "False", "KubeletHasSufficientMemory" },
		{ "DiskPressure", "False", "KubeletHasNoDiskPressure" },
		{ "PIDPressure", "False", "KubeletHasSufficientPID" },
		{ "Ready", "True", "KubeletReady" },
	};
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	/* the kubelet's default --max-pods; scale mode's pods cost nothing (1,000
	 * Clusters are 2,000 Pods with their bootstrap Pods) */
	const char *max_pods = a->scale_ns ? NA_SCALE_MAX_PODS : "110";
	int rc = op_buf_addf(&b, "{\"status\":{\"capacity\":{\"cpu\":\"%ld\",\"memory\":\"%lldKi\","
				 "\"pods\":\"%s\",\"ephemeral-storage\":\"100Gi\"},"
				 "\"allocatable\":{\"cpu\":\"%ld\",\"memory\":\"%lldKi\","
				 "\"pods\":\"%s\",\"ephemeral-storage\":\"100Gi\"},\"conditions\":[",
			     cpus > 0 ? cpus : 1, mem_ki, max_pods, cpus > 0 ? cpus : 1, mem_ki,
			     max_pods);
	for (size_t i = 0; rc == 0 && i < OP_ARRAY_SIZE(conds); i++)
		rc = op_buf_addf(&b,
				 "%s{\"type\":\"%s\",\"status\":\"%s\",\"reason\":\"%s\","
				 "\"lastHeartbeatTime\":\"%s\",\"lastTransitionTime\":\"%s\"}",
				 i ? "," : "", conds[i].type, conds[i].status, conds[i].reason, now,
				 now);
	if (rc == 0)
		rc = op_buf_addf(
			&b,
			"],\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"%s\"}],"
			"\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
			"\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\","
			"\"kernelVersion\":\"%s\",\"osImage\":\"pgop e2e\","
			"\"containerRuntimeVersion\":\"pgop-node-agent://0.1\","
			"\"kubeletVersion\":\"v1.34.1\",\"kubeProxyVersion\":\"v1.34.1\","
			"\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"}}}",
			a->host_ip, u.release);
	if (rc < 0) {
		op_buf_done(&b);
		return op_err_set(err, rc, "node status too large");
	}
	/* conditions keep their transition time after the first write: the server
	 * merges by type with a strategic merge patch */
	rc = kube_patch_status(a->kc, KUBE_NODES, NULL, a->node_name, KUBE_PATCH_STRATEGIC,
			       op_buf_str(&b), NULL, err);
	op_buf_done(&b);
	return rc;
}

static int lease_renew(struct na_agent *a, struct op_err *err)
{
	char now[64];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char base[24];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(now, sizeof(now), "%.20s.%06dZ", base, (int)(ts.tv_nsec / 1000) % 1000000);
	_cleanup_free_ char *patch = op_asprintf("{\"spec\":{\"renewTime\":\"%s\"}}", now);
	int rc = kube_patch(a->kc, KUBE_LEASES, "kube-node-lease", a->node_name, KUBE_PATCH_MERGE,
			    patch, NULL, err);
	if (rc != -ENOENT)
		return rc;
	op_err_clear(err);
	_cleanup_free_ char *body = op_asprintf(
		"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
		"{\"name\":\"%s\",\"namespace\":\"kube-node-lease\"},\"spec\":{\"holderIdentity\":"
		"\"%s\",\"leaseDurationSeconds\":40,\"renewTime\":\"%s\"}}",
		a->node_name, a->node_name, now);
	json_object *obj = NULL;
	if ((rc = op_json_parse(body, strlen(body), 8, &obj, err)) < 0)
		return rc;
	rc = kube_create(a->kc, KUBE_LEASES, "kube-node-lease", obj, NULL, err);
	json_object_put(obj);
	return rc == -EEXIST ? 0 : rc;
}

int na_node_heartbeat(struct na_agent *a, struct op_err *err)
{
	int rc;
	if (!a->node_registered) {
		if ((rc = node_create(a, err)) < 0)
			return rc;
		a->node_registered = true;
	}
	if ((rc = node_status(a, err)) < 0)
		return rc;
	return lease_renew(a, err);
}

int na_storage_setup(struct na_agent *a, struct op_err *err)
{
	static const char sc[] =
		"{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":"
		"{\"name\":\"" NA_STORAGE_CLASS "\",\"annotations\":{\"storageclass.kubernetes.io/"
		"is-default-class\":\"true\"}},\"provisioner\":\"" NA_PROVISIONER "\","
		"\"reclaimPolicy\":\"Delete\",\"volumeBindingMode\":\"WaitForFirstConsumer\","
		"\"allowVolumeExpansion\":true}";
	json_object *obj = NULL;
	int rc = op_json_parse(sc, sizeof(sc) - 1, 8, &obj, err);
	if (rc < 0)
		return rc;
	rc = kube_create(a->kc, KUBE_STORAGECLASSES, NULL, obj, NULL, err);
	json_object_put(obj);
	if (rc == -EEXIST) {
		op_err_clear(err);
		rc = 0;
	}
	return rc;
}

static void provision_one(struct na_agent *a, json_object *pvc)
{
	const char *ns = kube_obj_namespace(pvc), *name = kube_obj_name(pvc);
	const char *uid = kube_obj_uid(pvc);
	const char *cls = op_json_str_at(pvc, "spec.storageClassName");
	const char *phase = op_json_str_at(pvc, "status.phase");
	const char *req = op_json_str_at(pvc, "spec.resources.requests.storage");
	if (!ns || !name || !uid || !cls || strcmp(cls, NA_STORAGE_CLASS) ||
	    op_json_str_at(pvc, "spec.volumeName") || (phase && strcmp(phase, "Pending")) ||
	    op_json_str_at(pvc, "metadata.deletionTimestamp"))
		return;
	/* WaitForFirstConsumer: the scheduler picks the node first (it also retries
	 * the pod by itself, which Immediate claims bound after the pod was seen
	 * do not get); a claim selected for another node is not ours */
	json_object *ann = op_json_at(pvc, "metadata.annotations"), *sel = NULL;
	if (!ann || !json_object_object_get_ex(ann, "volume.kubernetes.io/selected-node", &sel) ||
	    strcmp(json_object_get_string(sel), a->node_name))
		return;
	_cleanup_free_ char *dir = op_asprintf("%s/volumes/pvc-%s", a->state_dir, uid);
	struct op_err err = OP_ERR_INIT;
	if (na_mkdir_p(dir, 0777, &err) < 0) {
		op_log_warn("provision", "claim", name, "error", err.msg);
		return;
	}
	chmod(dir, 0777);
	json_object *modes = op_json_at(pvc, "spec.accessModes");
	json_object *pv = op_jobj(), *md = op_jobj();
	json_object *spec = op_jobj(), *pv_ann = op_jobj();
	_cleanup_free_ char *pvname = op_asprintf("pvc-%s", uid);
	op_jsets(pv, "apiVersion", "v1");
	op_jsets(pv, "kind", "PersistentVolume");
	op_jsets(md, "name", pvname);
	op_jsets(pv_ann, "pv.kubernetes.io/provisioned-by", NA_PROVISIONER);
	op_jset(md, "annotations", pv_ann);
	op_jset(pv, "metadata", md);
	json_object *cap = op_jobj(), *hp = op_jobj();
	op_jsets(cap, "storage", req ? req : "1Gi");
	op_jset(spec, "capacity", cap);
	op_jset(spec, "accessModes", modes ? json_object_get(modes) : op_jarr());
	op_jsets(hp, "path", dir);
	op_jsets(hp, "type", "DirectoryOrCreate");
	op_jset(spec, "hostPath", hp);
	op_jsets(spec, "storageClassName", NA_STORAGE_CLASS);
	op_jsets(spec, "persistentVolumeReclaimPolicy", "Delete");
	json_object *vm = op_json_at(pvc, "spec.volumeMode");
	if (vm)
		op_jset(spec, "volumeMode", json_object_get(vm));
	json_object *ref = op_jobj();
	op_jsets(ref, "kind", "PersistentVolumeClaim");
	op_jsets(ref, "apiVersion", "v1");
	op_jsets(ref, "namespace", ns);
	op_jsets(ref, "name", name);
	op_jsets(ref, "uid", uid);
	op_jset(spec, "claimRef", ref);
	_cleanup_free_ char *aff = op_asprintf(
		"{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
		"\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}",
		a->node_name);
	json_object *affo = NULL;
	if (op_json_parse(aff, strlen(aff), 16, &affo, NULL) == 0)
		op_jset(spec, "nodeAffinity", affo);
	op_jset(pv, "spec", spec);
	int rc = kube_create(a->kc, KUBE_PVS, NULL, pv, NULL, &err);
	json_object_put(pv);
	if (rc == 0)
		op_log_info("provisioned volume", "claim", name, "namespace", ns, "volume", pvname,
			    "path", dir);
	else if (rc != -EEXIST)
		op_log_warn("provision", "claim", name, "namespace", ns, "error", err.msg);
}

static void reclaim_one(struct na_agent *a, json_object *pv)
{
	const char *by = NULL;
	json_object *ann = op_json_at(pv, "metadata.annotations"), *v;
	if (ann && json_object_object_get_ex(ann, "pv.kubernetes.io/provisioned-by", &v))
		by = json_object_get_string(v);
	const char *phase = op_json_str_at(pv, "status.phase");
	const char *policy = op_json_str_at(pv, "spec.persistentVolumeReclaimPolicy");
	const char *path = op_json_str_at(pv, "spec.hostPath.path");
	if (!by || strcmp(by, NA_PROVISIONER) || !phase || strcmp(phase, "Released") || !policy ||
	    strcmp(policy, "Delete") || !path)
		return;
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *guard = op_asprintf("%s/volumes", a->state_dir);
	size_t gl = strlen(guard);
	if (strncmp(path, guard, gl) || path[gl] != '/')
		return; /* another node's volume: that node's agent reclaims it */
	if (na_rm_rf(path, guard, &err) < 0) {
		op_log_warn("reclaim", "volume", kube_obj_name(pv), "error", err.msg);
		return;
	}
	int rc = kube_delete(a->kc, KUBE_PVS, NULL, kube_obj_name(pv), NULL, &err);
	if (rc == 0)
		op_log_info("deleted released volume", "volume", kube_obj_name(pv));
}

void na_provision(struct na_agent *a)
{
	json_object *pvcs = kube_informer_list(a->pvcs, NULL);
	for (size_t i = 0; pvcs && i < json_object_array_length(pvcs); i++)
		provision_one(a, json_object_array_get_idx(pvcs, i));
	if (pvcs)
		json_object_put(pvcs);
	json_object *pvs = kube_informer_list(a->pvs, NULL);
	for (size_t i = 0; pvs && i < json_object_array_length(pvs); i++)
		reclaim_one(a, json_object_array_get_idx(pvs, i));
	if (pvs)
		json_object_put(pvs);
}
