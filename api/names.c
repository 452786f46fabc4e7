/* api/names.c - derived object names (names.h). */
#include "api/names.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "support/alloc.h"

static const char *const service_suffix[] = {
	[API_SVC_RW] = "-rw",
	[API_SVC_RO] = "-ro",
	[API_SVC_R] = "-r",
	[API_SVC_ANY] = "-any",
};

static const char *const secret_suffix[] = {
	[API_SECRET_CA] = "-ca",
	[API_SECRET_CA_CERT] = "-ca-cert",
	[API_SECRET_SERVER] = "-server",
	[API_SECRET_REPLICATION] = "-replication",
	[API_SECRET_SUPERUSER] = "-superuser",
	[API_SECRET_APP] = "-app",
};

char *api_service_name(const char *cluster, enum api_service svc)
{
	const char *suf = (unsigned)svc < OP_ARRAY_SIZE(service_suffix) ? service_suffix[svc] : "";
	return op_asprintf("%s%s", cluster, suf);
}

char *api_secret_name(const char *cluster, enum api_secret which)
{
	const char *suf =
		(unsigned)which < OP_ARRAY_SIZE(secret_suffix) ? secret_suffix[which] : "";
	return op_asprintf("%s%s", cluster, suf);
}

char *api_pod_name(const char *cluster, int64_t serial)
{
	return op_asprintf("%s-%lld", cluster, (long long)serial);
}

char *api_pgdata_pvc_name(const char *cluster, int64_t serial)
{
	return api_pod_name(cluster, serial);
}

char *api_wal_pvc_name(const char *cluster, int64_t serial)
{
	return op_asprintf("%s-%lld-wal", cluster, (long long)serial);
}

char *api_tablespace_k8s_name(const char *tablespace)
{
	char *s = op_strdup(tablespace);
	if (s[0] == '_')
		s[0] = '1';
	for (char *p = s; *p; p++)
		*p = (*p == '_' || *p == '$') ? '-' : (char)tolower((unsigned char)*p);
	return s;
}

char *api_tablespace_pvc_name(const char *pod, const char *tablespace)
{
	_cleanup_free_ char *k = api_tablespace_k8s_name(tablespace);
	return op_asprintf("%s-tbs-%s", pod, k);
}

char *api_tablespace_volume_name(const char *tablespace)
{
	_cleanup_free_ char *k = api_tablespace_k8s_name(tablespace);
	return op_asprintf("tbs-%s", k);
}

char *api_tablespace_mount(const char *root, const char *tablespace)
{
	return op_asprintf("%s/%s", root ? root : API_TABLESPACE_MOUNT_ROOT, tablespace);
}

char *api_tablespace_location(const char *root, const char *tablespace)
{
	return op_asprintf("%s/%s/data", root ? root : API_TABLESPACE_MOUNT_ROOT, tablespace);
}

static bool slot_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

char *api_slot_name(const char *prefix, const char *pod)
{
	if (!prefix || !*prefix)
		prefix = "_cnpg_";
	size_t plen = strlen(prefix), n = strlen(pod);
	char *out = op_malloc(plen + n + 1);
	memcpy(out, prefix, plen);
	size_t o = plen;
	bool in_run = false;
	for (size_t i = 0; i < n; i++) {
		char c = pod[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (slot_char(c)) {
			out[o++] = c;
			in_run = false;
		} else if (!in_run) {
			out[o++] = '_';
			in_run = true;
		}
	}
	out[o] = '\0';
	return out;
}

int api_pod_serial(const char *cluster, const char *pod, int64_t *ret_serial, struct op_err *err)
{
	size_t cl = strlen(cluster);
	if (strncmp(pod, cluster, cl) != 0 || pod[cl] != '-')
		return op_err_set(err, -EINVAL, "pod '%s' does not belong to cluster '%s'", pod,
				  cluster);
	const char *p = pod + cl + 1;
	if (*p < '1' || *p > '9')
		return op_err_set(err, -EINVAL, "pod '%s' has no instance serial", pod);
	int64_t v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
			return op_err_set(err, -EINVAL, "pod '%s' has no valid instance serial",
					  pod);
		v = v * 10 + (*p - '0');
	}
	*ret_serial = v;
	return 0;
}
