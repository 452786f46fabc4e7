/* kube/kinds.c - the static resource table, URL paths, small shared utils. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "support/alloc.h"
#include "support/json.h"

const struct kube_kind kube_kinds[KUBE_K__COUNT] = {
	[KUBE_K_PODS] = { "", "v1", "pods", "Pod", true },
	[KUBE_K_SERVICES] = { "", "v1", "services", "Service", true },
	[KUBE_K_ENDPOINTS] = { "", "v1", "endpoints", "Endpoints", true },
	[KUBE_K_ENDPOINTSLICES] = { "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice",
				    true },
	[KUBE_K_SECRETS] = { "", "v1", "secrets", "Secret", true },
	[KUBE_K_CONFIGMAPS] = { "", "v1", "configmaps", "ConfigMap", true },
	[KUBE_K_PVCS] = { "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true },
	[KUBE_K_PVS] = { "", "v1", "persistentvolumes", "PersistentVolume", false },
	[KUBE_K_NODES] = { "", "v1", "nodes", "Node", false },
	[KUBE_K_EVENTS] = { "", "v1", "events", "Event", true },
	[KUBE_K_SERVICEACCOUNTS] = { "", "v1", "serviceaccounts", "ServiceAccount", true },
	[KUBE_K_ROLES] = { "rbac.authorization.k8s.io", "v1", "roles", "Role", true },
	[KUBE_K_ROLEBINDINGS] = { "rbac.authorization.k8s.io", "v1", "rolebindings",
				  "RoleBinding", true },
	[KUBE_K_CLUSTERROLES] = { "rbac.authorization.k8s.io", "v1", "clusterroles",
				  "ClusterRole", false },
	[KUBE_K_CLUSTERROLEBINDINGS] = { "rbac.authorization.k8s.io", "v1",
					 "clusterrolebindings", "ClusterRoleBinding", false },
	[KUBE_K_LEASES] = { "coordination.k8s.io", "v1", "leases", "Lease", true },
	[KUBE_K_DEPLOYMENTS] = { "apps", "v1", "deployments", "Deployment", true },
	[KUBE_K_REPLICASETS] = { "apps", "v1", "replicasets", "ReplicaSet", true },
	[KUBE_K_STATEFULSETS] = { "apps", "v1", "statefulsets", "StatefulSet", true },
	[KUBE_K_JOBS] = { "batch", "v1", "jobs", "Job", true },
	[KUBE_K_MUTATINGWEBHOOKCONFIGURATIONS] = { "admissionregistration.k8s.io", "v1",
						   "mutatingwebhookconfigurations",
						   "MutatingWebhookConfiguration", false },
	[KUBE_K_VALIDATINGWEBHOOKCONFIGURATIONS] = { "admissionregistration.k8s.io", "v1",
						     "validatingwebhookconfigurations",
						     "ValidatingWebhookConfiguration", false },
	[KUBE_K_APISERVICES] = { "apiregistration.k8s.io", "v1", "apiservices", "APIService",
				 false },
	[KUBE_K_CLUSTERS] = { "postgresql.cnpg.io", "v1", "clusters", "Cluster", true },
	[KUBE_K_CRDS] = { "apiextensions.k8s.io", "v1", "customresourcedefinitions",
			  "CustomResourceDefinition", false },
	[KUBE_K_STORAGECLASSES] = { "storage.k8s.io", "v1", "storageclasses", "StorageClass",
				    false },
	[KUBE_K_NAMESPACES] = { "", "v1", "namespaces", "Namespace", false },
	[KUBE_K_PODDISRUPTIONBUDGETS] = { "policy", "v1", "poddisruptionbudgets",
					  "PodDisruptionBudget", true },
	[KUBE_K_SUBJECTACCESSREVIEWS] = { "authorization.k8s.io", "v1", "subjectaccessreviews",
					  "SubjectAccessReview", false },
	[KUBE_K_TOKENREVIEWS] = { "authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
				  false },
	[KUBE_K_BACKUPS] = { "postgresql.cnpg.io", "v1", "backups", "Backup", true },
	[KUBE_K_SCHEDULEDBACKUPS] = { "postgresql.cnpg.io", "v1", "scheduledbackups",
				     "ScheduledBackup", true },
	[KUBE_K_OBJECTSTORES] = { "barmancloud.cnpg.io", "v1", "objectstores", "ObjectStore", true },
};

const struct kube_kind *kube_kind_lookup(const char *name)
{
	if (!name || !*name)
		return NULL;
	const char *dot = strchr(name, '.');
	size_t base = dot ? (size_t)(dot - name) : strlen(name);
	const char *group = dot ? dot + 1 : NULL;
	for (size_t i = 0; i < OP_ARRAY_SIZE(kube_kinds); i++) {
		const struct kube_kind *k = &kube_kinds[i];
		bool match = (strlen(k->resource) == base && !strncmp(k->resource, name, base)) ||
			     (strlen(k->kind) == base && !strncmp(k->kind, name, base));
		if (!match)
			continue;
		/* Group prefix match like kubectl ("clusters.postgresql"). */
		if (group && strncmp(k->group, group, strlen(group)) != 0)
			continue;
		return k;
	}
	return NULL;
}

int kube_kind_api_version(const struct kube_kind *k, struct op_buf *b)
{
	op_buf_reset(b);
	if (k->group && *k->group)
		return op_buf_addf(b, "%s/%s", k->group, k->version);
	return op_buf_adds(b, k->version);
}

int kube__escape(struct op_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
			    ch == '~';
		int r = keep ? op_buf_addc(b, (char)ch)
			     : op_buf_addf(b, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
		if (r < 0)
			return r;
	}
	return 0;
}

int kube_path(struct op_buf *b, const struct kube_kind *k, const char *ns, const char *name,
	      const char *subresource)
{
	int r;
	if (k->group && *k->group)
		r = op_buf_addf(b, "/apis/%s/%s", k->group, k->version);
	else
		r = op_buf_addf(b, "/api/%s", k->version);
	if (r < 0)
		return r;
	if (k->namespaced && ns && *ns) {
		if ((r = op_buf_adds(b, "/namespaces/")) < 0 || (r = kube__escape(b, ns)) < 0)
			return r;
	}
	if ((r = op_buf_addf(b, "/%s", k->resource)) < 0)
		return r;
	if (name && *name) {
		if ((r = op_buf_addc(b, '/')) < 0 || (r = kube__escape(b, name)) < 0)
			return r;
		if (subresource && *subresource && (r = op_buf_addf(b, "/%s", subresource)) < 0)
			return r;
	}
	return 0;
}

const char *kube_obj_name(json_object *obj)
{
	return op_json_str_at(obj, "metadata.name");
}

const char *kube_obj_namespace(json_object *obj)
{
	return op_json_str_at(obj, "metadata.namespace");
}

const char *kube_obj_resource_version(json_object *obj)
{
	return op_json_str_at(obj, "metadata.resourceVersion");
}

const char *kube_obj_uid(json_object *obj)
{
	return op_json_str_at(obj, "metadata.uid");
}

int64_t kube__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kube__wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kube__sleep_ms(long ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void kube__deadline(struct timespec *ret_ts, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	*ret_ts = ts;
}

void kube__wait_stop(pthread_mutex_t *lock, pthread_cond_t *cond, atomic_bool *stop, long ms)
{
	struct timespec ts;
	kube__deadline(&ts, ms);
	pthread_mutex_lock(lock);
	while (!atomic_load(stop) && pthread_cond_timedwait(cond, lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(lock);
}

int kube__read_file(const char *path, size_t max, struct op_buf *b, struct op_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "cannot open \"%s\": %s", path, strerror(errno));
	op_buf_done(b);
	op_buf_init(b, max);
	int r = 0;
	char chunk[8192];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = op_err_set(err, -errno, "cannot read \"%s\": %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (op_buf_add(b, chunk, (size_t)n) < 0) {
			r = op_err_set(err, -EMSGSIZE, "\"%s\" is larger than %zu bytes", path, max);
			break;
		}
	}
	close(fd);
	return r;
}
