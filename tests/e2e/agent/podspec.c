/* tests/e2e/agent/podspec.c - which pod-spec fields the agent honours.
 *
 * The agent is the e2e suite's kubelet: a field it would silently ignore makes
 * a test pass that production would fail (issue 11). So every field of
 * spec.* is looked up in one table; a field not in it, or with a value the
 * agent cannot honour, refuses the pod (status + Warning Event naming the
 * field). Pure: host facts (cgroups, installed PostgreSQL majors) come in
 * through struct na_host. Unit-tested in test_na.c. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"
#include "tests/e2e/agent/na.h"

enum rule {
	R_OBJ,   /* object: its keys are looked up in the table */
	R_LEAF,  /* honoured as is */
	R_TREE,  /* honoured (or nothing to do on a node), the subtree is not looked into */
	R_CHECK, /* honoured when check() accepts the value */
};

typedef const char *(*check_fn)(json_object *v, const struct na_host *h);

struct field {
	const char *path; /* "[]" for array elements, "*" for any map key */
	enum rule rule;
	check_fn check;   /* R_CHECK: NULL = accepted, else why it is refused */
	const char *how;  /* what the agent does with it (docs, and why a no-op is fine) */
};

static bool is_false(json_object *v) { return !v || !json_object_get_boolean(v); }

static const char *only_false(json_object *v, const struct na_host *h)
{
	(void)h;
	return is_false(v) ? NULL : "only false is supported";
}

static const char *empty_array(json_object *v, const struct na_host *h)
{
	(void)h;
	return !v || (json_object_is_type(v, json_type_array) && !json_object_array_length(v))
		       ? NULL
		       : "adding capabilities is not supported";
}

static const char *drop_all(json_object *v, const struct na_host *h)
{
	(void)h;
	for (size_t i = 0; v && json_object_is_type(v, json_type_array) &&
			   i < json_object_array_length(v);
	     i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(v, i)), "ALL"))
			return NULL;
	return "only [ALL] is supported";
}

static const char *str_in(json_object *v, const char *const *ok)
{
	const char *s = v ? json_object_get_string(v) : "";
	for (; *ok; ok++)
		if (!strcmp(s, *ok))
			return NULL;
	return "unsupported value";
}

static const char *medium(json_object *v, const struct na_host *h)
{
	(void)h;
	static const char *const ok[] = { "", "Memory", NULL };
	return str_in(v, ok);
}

static const char *dns_policy(json_object *v, const struct na_host *h)
{
	(void)h;
	static const char *const ok[] = { "ClusterFirst", NULL };
	return str_in(v, ok) ? "only ClusterFirst (/etc/hosts with the Services) is supported"
			     : NULL;
}

static const char *mount_propagation(json_object *v, const struct na_host *h)
{
	(void)h;
	static const char *const ok[] = { "", "None", NULL };
	return str_in(v, ok);
}

static const char *proc_mount(json_object *v, const struct na_host *h)
{
	(void)h;
	static const char *const ok[] = { "", "Default", NULL };
	return str_in(v, ok);
}

static const char *policy_file(json_object *v, const struct na_host *h)
{
	(void)h;
	static const char *const ok[] = { "File", NULL };
	return str_in(v, ok);
}

static const char *quantity(json_object *v, const struct na_host *h)
{
	(void)h;
	int64_t x;
	return na_quantity_parse(json_object_get_string(v), 1, &x) < 0 ? "not a quantity" : NULL;
}

/* sizeLimit is the tmpfs size of a Memory emptyDir; on disk nothing would enforce it. */
static const char *size_limit(json_object *v, const struct na_host *h)
{
	(void)h;
	int64_t x;
	return na_quantity_parse(json_object_get_string(v), 1, &x) < 0 ? "not a quantity" : NULL;
}

static const char *mem_limit(json_object *v, const struct na_host *h)
{
	int64_t x;
	if (na_quantity_parse(json_object_get_string(v), 1, &x) < 0 || x <= 0)
		return "not a positive quantity";
	return h->memory_cgroup ? NULL : h->no_cgroup_why;
}

static const char *cpu_limit(json_object *v, const struct na_host *h)
{
	int64_t x;
	if (na_quantity_parse(json_object_get_string(v), 1000, &x) < 0 || x <= 0)
		return "not a positive quantity";
	return h->cpu_cgroup ? NULL : h->no_cgroup_why;
}

#define F2(k, rule, chk, how) { "spec.containers[]" k, rule, chk, how }, \
			     { "spec.initContainers[]" k, rule, chk, how }
#define PROBE(p)                                                                      \
	F2("." p, R_OBJ, NULL, "probe"),                                              \
	F2("." p ".httpGet", R_OBJ, NULL, "GET from the node to the pod IP"),        \
	F2("." p ".httpGet.path", R_LEAF, NULL, ""),                                  \
	F2("." p ".httpGet.port", R_LEAF, NULL, "number or container port name"),     \
	F2("." p ".httpGet.scheme", R_LEAF, NULL, "HTTP/HTTPS (no certificate check)"), \
	F2("." p ".tcpSocket", R_OBJ, NULL, "connect from the node"),                 \
	F2("." p ".tcpSocket.port", R_LEAF, NULL, ""),                                \
	F2("." p ".exec", R_OBJ, NULL, "inside the container, killed after timeoutSeconds"), \
	F2("." p ".exec.command", R_LEAF, NULL, ""),                                  \
	F2("." p ".initialDelaySeconds", R_LEAF, NULL, ""),                           \
	F2("." p ".periodSeconds", R_LEAF, NULL, "probes run at this period only"),   \
	F2("." p ".timeoutSeconds", R_LEAF, NULL, "connect+response / exec deadline"), \
	F2("." p ".successThreshold", R_LEAF, NULL, ""),                              \
	F2("." p ".failureThreshold", R_LEAF, NULL, "")

#define KEYS(base) \
	{ base ".items", R_OBJ, NULL, "" }, { base ".items[].key", R_LEAF, NULL, "" }, \
	{ base ".items[].path", R_LEAF, NULL, "" }, { base ".items[].mode", R_LEAF, NULL, "" }

static const struct field fields[] = {
	{ "spec", R_OBJ, NULL, "" },
	{ "spec.containers", R_OBJ, NULL, "processes in the pod's namespaces" },
	{ "spec.initContainers", R_OBJ, NULL, "run in order before the containers" },
	{ "spec.volumes", R_OBJ, NULL, "" },
	{ "spec.restartPolicy", R_LEAF, NULL, "Always/OnFailure/Never with back-off" },
	{ "spec.terminationGracePeriodSeconds", R_LEAF, NULL, "SIGTERM, SIGKILL after it" },
	{ "spec.hostname", R_LEAF, NULL, "UTS namespace hostname" },
	{ "spec.subdomain", R_LEAF, NULL, "/etc/hosts entry" },
	{ "spec.serviceAccountName", R_LEAF, NULL, "projected token volume" },
	{ "spec.serviceAccount", R_LEAF, NULL, "deprecated alias" },
	{ "spec.automountServiceAccountToken", R_LEAF, NULL, "applied by admission (volume)" },
	{ "spec.nodeName", R_LEAF, NULL, "this node" },
	{ "spec.dnsPolicy", R_CHECK, dns_policy, "" },
	{ "spec.enableServiceLinks", R_LEAF, NULL, "<SVC>_SERVICE_HOST/_PORT env" },
	{ "spec.nodeSelector", R_TREE, NULL, "scheduling: nothing for a kubelet" },
	{ "spec.affinity", R_TREE, NULL, "scheduling" },
	{ "spec.tolerations", R_TREE, NULL, "scheduling" },
	{ "spec.schedulerName", R_LEAF, NULL, "scheduling" },
	{ "spec.priority", R_LEAF, NULL, "scheduling" },
	{ "spec.priorityClassName", R_LEAF, NULL, "scheduling" },
	{ "spec.preemptionPolicy", R_LEAF, NULL, "scheduling" },
	{ "spec.topologySpreadConstraints", R_TREE, NULL, "scheduling" },
	{ "spec.securityContext", R_OBJ, NULL, "" },
	{ "spec.securityContext.runAsUser", R_LEAF, NULL, "setuid before exec" },
	{ "spec.securityContext.runAsGroup", R_LEAF, NULL, "setgid before exec" },
	{ "spec.securityContext.runAsNonRoot", R_LEAF, NULL, "refused when the uid is 0" },
	{ "spec.securityContext.fsGroup", R_LEAF, NULL, "supplementary group; owns volumes" },
	{ "spec.securityContext.fsGroupChangePolicy", R_LEAF, NULL, "volumes are chowned once" },
	{ "spec.securityContext.supplementalGroups", R_LEAF, NULL, "setgroups" },
	F2("", R_OBJ, NULL, ""),
	F2(".name", R_LEAF, NULL, ""),
	F2(".image", R_LEAF, NULL, "pgop: the built binary; postgresql:<major>: host install"),
	F2(".imagePullPolicy", R_LEAF, NULL, "no images are pulled"),
	F2(".command", R_LEAF, NULL, "$(VAR) expanded"),
	F2(".args", R_LEAF, NULL, "$(VAR) expanded"),
	F2(".workingDir", R_LEAF, NULL, "chdir"),
	F2(".env", R_OBJ, NULL, ""),
	F2(".env[].name", R_LEAF, NULL, ""),
	F2(".env[].value", R_LEAF, NULL, ""),
	F2(".env[].valueFrom", R_OBJ, NULL, ""),
	F2(".env[].valueFrom.fieldRef", R_OBJ, NULL, ""),
	F2(".env[].valueFrom.fieldRef.fieldPath", R_LEAF, NULL, ""),
	F2(".env[].valueFrom.fieldRef.apiVersion", R_LEAF, NULL, ""),
	F2(".env[].valueFrom.secretKeyRef", R_TREE, NULL, "name, key, optional"),
	F2(".env[].valueFrom.configMapKeyRef", R_TREE, NULL, "name, key, optional"),
	F2(".envFrom", R_OBJ, NULL, ""),
	F2(".envFrom[].prefix", R_LEAF, NULL, ""),
	F2(".envFrom[].secretRef", R_TREE, NULL, ""),
	F2(".envFrom[].configMapRef", R_TREE, NULL, ""),
	F2(".ports", R_OBJ, NULL, ""),
	F2(".ports[].name", R_LEAF, NULL, "probe port names"),
	F2(".ports[].containerPort", R_LEAF, NULL, "informational (pod network)"),
	F2(".ports[].protocol", R_LEAF, NULL, ""),
	F2(".volumeMounts", R_OBJ, NULL, ""),
	F2(".volumeMounts[].name", R_LEAF, NULL, ""),
	F2(".volumeMounts[].mountPath", R_LEAF, NULL, "bind mount"),
	F2(".volumeMounts[].readOnly", R_LEAF, NULL, "read-only bind"),
	F2(".volumeMounts[].subPath", R_LEAF, NULL, ""),
	F2(".volumeMounts[].mountPropagation", R_CHECK, mount_propagation, ""),
	F2(".resources", R_OBJ, NULL, ""),
	F2(".resources.requests", R_OBJ, NULL, "scheduling"),
	F2(".resources.requests.*", R_CHECK, quantity, "scheduling"),
	F2(".resources.limits", R_OBJ, NULL, ""),
	F2(".resources.limits.memory", R_CHECK, mem_limit, "cgroup memory limit"),
	F2(".resources.limits.cpu", R_CHECK, cpu_limit, "cgroup CPU quota"),
	F2(".securityContext", R_OBJ, NULL, ""),
	F2(".securityContext.runAsUser", R_LEAF, NULL, "setuid before exec"),
	F2(".securityContext.runAsGroup", R_LEAF, NULL, "setgid before exec"),
	F2(".securityContext.runAsNonRoot", R_LEAF, NULL, "refused when the uid is 0"),
	F2(".securityContext.readOnlyRootFilesystem", R_LEAF, NULL,
	   "every mount but the volumes (and /dev, /proc) remounted read-only"),
	F2(".securityContext.allowPrivilegeEscalation", R_LEAF, NULL, "false: PR_SET_NO_NEW_PRIVS"),
	F2(".securityContext.privileged", R_CHECK, only_false, ""),
	F2(".securityContext.procMount", R_CHECK, proc_mount, ""),
	F2(".securityContext.capabilities", R_OBJ, NULL, ""),
	F2(".securityContext.capabilities.drop", R_CHECK, drop_all,
	   "[ALL]: bounding set and capability sets emptied"),
	F2(".securityContext.capabilities.add", R_CHECK, empty_array, ""),
	F2(".terminationMessagePath", R_LEAF, NULL, "not reported (documented limit)"),
	F2(".terminationMessagePolicy", R_CHECK, policy_file, "not reported (documented limit)"),
	F2(".stdin", R_CHECK, only_false, ""),
	F2(".stdinOnce", R_CHECK, only_false, ""),
	F2(".tty", R_CHECK, only_false, ""),
	PROBE("startupProbe"),
	PROBE("readinessProbe"),
	PROBE("livenessProbe"),
	{ "spec.volumes[]", R_OBJ, NULL, "" },
	{ "spec.volumes[].name", R_LEAF, NULL, "" },
	{ "spec.volumes[].emptyDir", R_OBJ, NULL, "STATE/volumes/pod-<uid>/<name>" },
	{ "spec.volumes[].emptyDir.medium", R_CHECK, medium, "Memory: a tmpfs" },
	{ "spec.volumes[].emptyDir.sizeLimit", R_CHECK, size_limit, "tmpfs size (Memory only)" },
	{ "spec.volumes[].persistentVolumeClaim", R_OBJ, NULL, "" },
	{ "spec.volumes[].persistentVolumeClaim.claimName", R_LEAF, NULL, "hostPath PV" },
	{ "spec.volumes[].persistentVolumeClaim.readOnly", R_CHECK, only_false, "" },
	{ "spec.volumes[].secret", R_OBJ, NULL, "files, refreshed every 15 s" },
	{ "spec.volumes[].secret.secretName", R_LEAF, NULL, "" },
	{ "spec.volumes[].secret.defaultMode", R_LEAF, NULL, "file mode" },
	{ "spec.volumes[].secret.optional", R_LEAF, NULL, "" },
	KEYS("spec.volumes[].secret"),
	{ "spec.volumes[].configMap", R_OBJ, NULL, "" },
	{ "spec.volumes[].configMap.name", R_LEAF, NULL, "" },
	{ "spec.volumes[].configMap.defaultMode", R_LEAF, NULL, "" },
	{ "spec.volumes[].configMap.optional", R_LEAF, NULL, "" },
	KEYS("spec.volumes[].configMap"),
	{ "spec.volumes[].downwardAPI", R_OBJ, NULL, "" },
	{ "spec.volumes[].downwardAPI.defaultMode", R_LEAF, NULL, "" },
	{ "spec.volumes[].downwardAPI.items", R_OBJ, NULL, "" },
	{ "spec.volumes[].downwardAPI.items[].path", R_LEAF, NULL, "" },
	{ "spec.volumes[].downwardAPI.items[].mode", R_LEAF, NULL, "" },
	{ "spec.volumes[].downwardAPI.items[].fieldRef", R_TREE, NULL, "" },
	{ "spec.volumes[].projected", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.defaultMode", R_LEAF, NULL, "" },
	{ "spec.volumes[].projected.sources", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.sources[].serviceAccountToken", R_TREE, NULL, "TokenRequest" },
	{ "spec.volumes[].projected.sources[].configMap", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.sources[].configMap.name", R_LEAF, NULL, "" },
	{ "spec.volumes[].projected.sources[].configMap.optional", R_LEAF, NULL, "" },
	KEYS("spec.volumes[].projected.sources[].configMap"),
	{ "spec.volumes[].projected.sources[].secret", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.sources[].secret.name", R_LEAF, NULL, "" },
	{ "spec.volumes[].projected.sources[].secret.optional", R_LEAF, NULL, "" },
	KEYS("spec.volumes[].projected.sources[].secret"),
	{ "spec.volumes[].projected.sources[].downwardAPI", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.sources[].downwardAPI.items", R_OBJ, NULL, "" },
	{ "spec.volumes[].projected.sources[].downwardAPI.items[].path", R_LEAF, NULL, "" },
	{ "spec.volumes[].projected.sources[].downwardAPI.items[].mode", R_LEAF, NULL, "" },
	{ "spec.volumes[].projected.sources[].downwardAPI.items[].fieldRef", R_TREE, NULL, "" },
};

static const struct field *lookup(const char *pattern)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++)
		if (!strcmp(fields[i].path, pattern))
			return &fields[i];
	/* "a.b.*": any key of map a.b */
	const char *dot = strrchr(pattern, '.');
	if (!dot)
		return NULL;
	char wild[256];
	if (snprintf(wild, sizeof(wild), "%.*s.*", (int)(dot - pattern), pattern) >=
	    (int)sizeof(wild))
		return NULL;
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++)
		if (!strcmp(fields[i].path, wild))
			return &fields[i];
	return NULL;
}

static int refuse(struct op_buf *msg, const char *path, const char *why)
{
	op_buf_reset(msg);
	(void)!op_buf_addf(msg, "%s: %s", path, why);
	return -ENOTSUP;
}

/* Walks value v at (concrete path, table pattern). */
static int walk(json_object *v, const char *path, const char *pattern, const struct na_host *h,
		struct op_buf *msg, int depth)
{
	static const struct field element = { "", R_OBJ, NULL, "" };
	const struct field *f = lookup(pattern);
	size_t pl = strlen(pattern);
	if (!f && pl > 2 && !strcmp(pattern + pl - 2, "[]"))
		f = &element; /* an element of a listed array: its keys are looked up */
	if (!f)
		return refuse(msg, path, "not supported by pgop-node-agent");
	if (depth > 16)
		return refuse(msg, path, "nested too deeply");
	if (f->rule == R_LEAF || f->rule == R_TREE)
		return 0;
	if (f->rule == R_CHECK) {
		const char *why = f->check(v, h);
		if (!why)
			return 0;
		const char *val = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "";
		char detail[512];
		snprintf(detail, sizeof(detail), "%s (value %.200s)", why, val);
		return refuse(msg, path, detail);
	}
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			char p2[512], t2[256];
			if (snprintf(p2, sizeof(p2), "%s[%zu]", path, i) >= (int)sizeof(p2) ||
			    snprintf(t2, sizeof(t2), "%s[]", pattern) >= (int)sizeof(t2))
				return refuse(msg, path, "field path too long");
			int rc = walk(json_object_array_get_idx(v, i), p2, t2, h, msg, depth + 1);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (!json_object_is_type(v, json_type_object))
		return 0; /* null or a scalar where an object is expected: the API server's job */
	json_object_object_foreach(v, k, child)
	{
		char p2[512], t2[256];
		if (snprintf(p2, sizeof(p2), "%s.%s", path, k) >= (int)sizeof(p2) ||
		    snprintf(t2, sizeof(t2), "%s.%s", pattern, k) >= (int)sizeof(t2))
			return refuse(msg, path, "field name too long");
		int rc = walk(child, p2, t2, h, msg, depth + 1);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static json_object *sc_field(json_object *pod, json_object *ctr, const char *key)
{
	json_object *v = NULL, *sc;
	if (json_object_object_get_ex(ctr, "securityContext", &sc) &&
	    json_object_object_get_ex(sc, key, &v))
		return v;
	json_object *psc = op_json_at(pod, "spec.securityContext");
	if (psc && json_object_object_get_ex(psc, key, &v))
		return v;
	return NULL;
}

int na_podspec_check(json_object *pod, const struct na_host *h, struct na_refusal *out)
{
	struct op_buf msg = OP_BUF_INIT(1024);
	json_object *spec = op_json_at(pod, "spec");
	*out = (struct na_refusal){ .container = -1 };
	int rc = spec ? walk(spec, "spec", "spec", h, &msg, 0) : 0;
	if (rc < 0) {
		out->reason = "CreateContainerConfigError";
		out->message = op_buf_take(&msg, NULL);
		return rc;
	}
	json_object *vols = op_json_at(pod, "spec.volumes");
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i);
		const char *medium = op_json_str_at(v, "emptyDir.medium");
		if (op_json_at(v, "emptyDir.sizeLimit") && (!medium || strcmp(medium, "Memory"))) {
			op_buf_reset(&msg);
			(void)!op_buf_addf(&msg, "spec.volumes[%zu].emptyDir.sizeLimit: only enforced for "
						 "medium: Memory (a sized tmpfs)", i);
			out->reason = "CreateContainerConfigError";
			out->message = op_buf_take(&msg, NULL);
			return -ENOTSUP;
		}
	}
	static const char *const keys[] = { "spec.initContainers", "spec.containers" };
	for (int k = 0; k < 2; k++) {
		json_object *arr = op_json_at(pod, keys[k]);
		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			json_object *c = json_object_array_get_idx(arr, i);
			json_object *uid = sc_field(pod, c, "runAsUser");
			json_object *nonroot = sc_field(pod, c, "runAsNonRoot");
			if (!is_false(nonroot) && (!uid || json_object_get_int64(uid) == 0)) {
				op_buf_reset(&msg);
				(void)!op_buf_addf(&msg, "%s[%zu].securityContext.runAsNonRoot: container has "
						  "runAsNonRoot and %s",
					    keys[k], i,
					    uid ? "runAsUser 0" : "no runAsUser (the image runs as root)");
				out->reason = "CreateContainerConfigError";
				out->message = op_buf_take(&msg, NULL);
				out->container = (int)i;
				out->init = k == 0;
				return -EPERM;
			}
			const char *image = op_json_str_at(c, "image");
			if (na_image_kind(image) != NA_IMAGE_POSTGRES)
				continue;
			int major = na_image_pg_major(image);
			if (major < 0) {
				op_buf_reset(&msg);
				(void)!op_buf_addf(&msg, "image %s: no PostgreSQL major in its tag", image);
				out->reason = "ErrImagePull";
				out->message = op_buf_take(&msg, NULL);
				out->container = (int)i;
				out->init = k == 0;
				return -ENOENT;
			}
			if (h->pg_major_installed && !h->pg_major_installed(major, h->userdata)) {
				op_buf_reset(&msg);
				(void)!op_buf_addf(&msg, "PostgreSQL %d is not installed on this node (image %s)",
					    major, image);
				out->reason = "ErrImagePull";
				out->message = op_buf_take(&msg, NULL);
				out->container = (int)i;
				out->init = k == 0;
				return -ENOENT;
			}
		}
	}
	op_buf_done(&msg);
	return 0;
}

void na_refusal_done(struct na_refusal *r)
{
	free(r->message);
	r->message = NULL;
}

int na_image_pg_major(const char *image)
{
	if (!image)
		return -1;
	const char *slash = strrchr(image, '/');
	const char *colon = strchr(slash ? slash : image, ':');
	if (!colon || !isdigit((unsigned char)colon[1]))
		return -1;
	char *end;
	long m = strtol(colon + 1, &end, 10);
	/* 16, 16.2, 17beta1, 15.4-bookworm, 18rc1, 16-bullseye */
	if (m < 10 || m > 99 || (*end && *end != '.' && *end != '-' && *end != '@' &&
				 strncmp(end, "beta", 4) && strncmp(end, "rc", 2) &&
				 strncmp(end, "alpha", 5)))
		return -1;
	return (int)m;
}

int na_quantity_parse(const char *s, int64_t scale, int64_t *out)
{
	if (!s || !*s || strlen(s) > 40)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	static const struct {
		const char *sfx;
		double mul;
	} units[] = {
		{ "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
		{ "Ti", 1099511627776.0 }, { "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 },
		{ "T", 1e12 }, { "m", 1e-3 }, { "", 1.0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].sfx)) {
			double r = v * units[i].mul * (double)scale;
			if (r > 9.2e18)
				return -ERANGE;
			*out = (int64_t)(r + 0.5);
			return 0;
		}
	return -EINVAL;
}
