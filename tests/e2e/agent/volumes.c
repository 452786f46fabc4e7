/* tests/e2e/agent/volumes.c - pod volumes as host directories.
 *
 * emptyDir: STATE/volumes/pod-<uid>/<name> (kept across container restarts,
 * removed with the pod). PVC: the hostPath of the bound PV (made by our
 * provisioner under STATE/volumes/pvc-<uid>, survives pods). secret,
 * configMap, downwardAPI and projected (serviceAccountToken through the
 * TokenRequest API, configMap, secret, downwardAPI): files written under
 * STATE/pods/<uid>/vol/<name>, rewritten by every refresh (files are
 * replaced by rename, so readers never see half a file). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "tests/e2e/agent/na.h"

static mode_t mode_of(json_object *o, const char *key, mode_t dflt)
{
	json_object *v = op_json_at(o, key);
	if (v && json_object_is_type(v, json_type_int)) {
		int64_t m = json_object_get_int64(v);
		if (m >= 0 && m <= 0777)
			return (mode_t)m;
	}
	return dflt;
}

static int write_key(const char *dir, const char *rel, const void *data, size_t len, mode_t mode,
		     struct op_err *err)
{
	if (!rel || !*rel || rel[0] == '/' || strstr(rel, ".."))
		return op_err_set(err, -EINVAL, "bad volume item path '%s'", rel ? rel : "");
	_cleanup_free_ char *path = op_asprintf("%s/%s", dir, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	int rc = na_mkdir_p(path, 0755, err);
	*slash = '/';
	if (rc < 0)
		return rc;
	return na_write_file(path, data, len, mode, err);
}

/* Writes the data of a Secret/ConfigMap (items select and rename keys). */
static int write_data(const char *dir, json_object *obj, bool secret, json_object *items,
		      mode_t mode, struct op_err *err)
{
	json_object *data = op_json_at(obj, "data");
	int rc = 0;
	if (!data)
		return 0;
	json_object_object_foreach(data, key, val)
	{
		const char *path = key;
		mode_t m = mode;
		if (items) {
			path = NULL;
			for (size_t i = 0; i < json_object_array_length(items); i++) {
				json_object *it = json_object_array_get_idx(items, i);
				const char *k = op_json_str_at(it, "key");
				if (k && !strcmp(k, key)) {
					path = op_json_str_at(it, "path");
					m = mode_of(it, "mode", mode);
				}
			}
			if (!path)
				continue;
		}
		const char *s = json_object_get_string(val);
		if (secret) {
			_cleanup_free_ char *dec = NULL;
			size_t len = 0;
			if ((rc = op_base64_decode_str(s, strlen(s), 0, &dec, &len, err)) < 0)
				return op_err_prefix(err, "secret key %s", key);
			rc = write_key(dir, path, dec, len, m, err);
		} else {
			rc = write_key(dir, path, s, strlen(s), m, err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int from_object(struct na_agent *a, struct na_pod *p, const char *dir, bool secret,
		       const char *name, json_object *items, bool optional, mode_t mode,
		       struct op_err *err)
{
	json_object *obj = NULL;
	int rc = kube_get(a->kc, secret ? KUBE_SECRETS : KUBE_CONFIGMAPS, p->ns, name, &obj, err);
	if (rc == -ENOENT && optional) {
		op_err_clear(err);
		return 0;
	}
	if (rc < 0)
		return rc;
	rc = write_data(dir, obj, secret, items, mode, err);
	json_object_put(obj);
	return rc;
}

static int sa_token(struct na_agent *a, struct na_pod *p, const char *dir, json_object *src,
		    mode_t mode, struct op_err *err)
{
	const char *sa = op_json_str_at(p->obj, "spec.serviceAccountName");
	const char *path = op_json_str_at(src, "path");
	const char *aud = op_json_str_at(src, "audience");
	json_object *exp = op_json_at(src, "expirationSeconds");
	/* like the kubelet: a new token once 80 % of its lifetime has passed, not at
	 * every 15 s refresh (a TokenRequest per pod every 15 s loaded the apiserver) */
	long long ttl = exp ? (long long)json_object_get_int64(exp) : 3607LL;
	_cleanup_free_ char *tokf = op_asprintf("%s/%s", dir, path && *path ? path : "token");
	struct stat tst;
	if (stat(tokf, &tst) == 0 && time(NULL) - tst.st_mtime < ttl * 8 / 10)
		return 0;
	struct op_buf body = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int rc = op_buf_addf(&body,
			     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			     "\"spec\":{\"expirationSeconds\":%lld,\"boundObjectRef\":{\"apiVersion\":"
			     "\"v1\",\"kind\":\"Pod\",\"name\":",
			     exp ? (long long)json_object_get_int64(exp) : 3607LL);
	if (!rc)
		rc = op_buf_add_json_str(&body, p->name);
	if (!rc)
		rc = op_buf_adds(&body, ",\"uid\":");
	if (!rc)
		rc = op_buf_add_json_str(&body, p->uid);
	if (!rc)
		rc = op_buf_adds(&body, "}");
	if (!rc && aud) {
		rc = op_buf_adds(&body, ",\"audiences\":[");
		if (!rc)
			rc = op_buf_add_json_str(&body, aud);
		if (!rc)
			rc = op_buf_adds(&body, "]");
	}
	if (!rc)
		rc = op_buf_adds(&body, "}}");
	if (rc < 0) {
		op_buf_done(&body);
		return op_err_set(err, rc, "token request too large");
	}
	struct kube_request req = { .method = "POST",
				    .kind = KUBE_SERVICEACCOUNTS,
				    .ns = p->ns,
				    .name = sa ? sa : "default",
				    .subresource = "token",
				    .body = op_buf_str(&body),
				    .verb = "create token" };
	json_object *resp = NULL;
	rc = kube_request(a->kc, &req, &resp, err);
	op_buf_done(&body);
	if (rc < 0)
		return rc;
	const char *tok = op_json_str_at(resp, "status.token");
	if (!tok)
		rc = op_err_set(err, -EPROTO, "token request for %s/%s: no status.token", p->ns,
				sa ? sa : "default");
	else
		rc = write_key(dir, path ? path : "token", tok, strlen(tok), mode, err);
	json_object_put(resp);
	return rc;
}

static int downward(struct na_agent *a, struct na_pod *p, const char *dir, json_object *items, mode_t mode,
		    struct op_err *err)
{
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *it = json_object_array_get_idx(items, i);
		const char *fp = op_json_str_at(it, "fieldRef.fieldPath");
		const char *v = na_field_ref(p->obj, fp, p->ip, a->host_ip);
		if (!v)
			v = "";
		int rc = write_key(dir, op_json_str_at(it, "path"), v, strlen(v),
				   mode_of(it, "mode", mode), err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool bool_at(json_object *o, const char *key)
{
	json_object *v = op_json_at(o, key);
	return v && json_object_get_boolean(v);
}

static int one_volume(struct na_agent *a, struct na_pod *p, json_object *v, struct op_err *err)
{
	const char *name = op_json_str_at(v, "name");
	_cleanup_free_ char *dir = na_volume_dir(a, p, name);
	int rc;
	if (!dir)
		return op_err_set(err, -ENOTSUP, "volume %s: unsupported type or unbound claim",
				  name ? name : "?");
	json_object *src;
	if ((src = op_json_at(v, "emptyDir")) || (src = op_json_at(v, "persistentVolumeClaim")) ||
	    (src = op_json_at(v, "hostPath"))) {
		bool fresh = access(dir, F_OK) != 0;
		if ((rc = na_mkdir_p(dir, 0777, err)) < 0)
			return rc;
		const char *medium = op_json_str_at(v, "emptyDir.medium");
		if (fresh && medium && !strcmp(medium, "Memory")) {
			/* a tmpfs (sizeLimit = its size), unmounted by na_volumes_release */
			int64_t size = 0;
			const char *sl = op_json_str_at(v, "emptyDir.sizeLimit");
			if (sl && na_quantity_parse(sl, 1, &size) < 0)
				size = 0;
			json_object *g = op_json_at(p->obj, "spec.securityContext.fsGroup");
			_cleanup_free_ char *opts =
				size > 0 ? op_asprintf("mode=0777,gid=%lld,size=%lld",
						       g ? (long long)json_object_get_int64(g) : 0LL,
						       (long long)size)
					 : op_asprintf("mode=0777,gid=%lld",
						       g ? (long long)json_object_get_int64(g) : 0LL);
			if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
				return op_err_set(err, -errno, "volume %s: tmpfs on %s: %s", name, dir,
						  strerror(errno));
			return 0;
		}
		if (fresh)
			chmod(dir, 0777); /* kubelet: emptyDir is world-writable */
		json_object *fsg = op_json_at(p->obj, "spec.securityContext.fsGroup");
		if (fsg && fresh)
			(void)!chown(dir, (uid_t)-1, (gid_t)json_object_get_int64(fsg));
		return 0;
	}
	if ((rc = na_mkdir_p(dir, 0755, err)) < 0)
		return rc;
	if ((src = op_json_at(v, "secret")))
		return from_object(a, p, dir, true, op_json_str_at(src, "secretName"),
				   op_json_at(src, "items"), bool_at(src, "optional"),
				   mode_of(src, "defaultMode", 0644), err);
	if ((src = op_json_at(v, "configMap")))
		return from_object(a, p, dir, false, op_json_str_at(src, "name"),
				   op_json_at(src, "items"), bool_at(src, "optional"),
				   mode_of(src, "defaultMode", 0644), err);
	if ((src = op_json_at(v, "downwardAPI")))
		return downward(a, p, dir, op_json_at(src, "items"), mode_of(src, "defaultMode", 0644),
				err);
	if ((src = op_json_at(v, "projected"))) {
		mode_t mode = mode_of(src, "defaultMode", 0644);
		json_object *sources = op_json_at(src, "sources");
		for (size_t i = 0; sources && i < json_object_array_length(sources); i++) {
			json_object *s = json_object_array_get_idx(sources, i), *x;
			if ((x = op_json_at(s, "serviceAccountToken")))
				rc = sa_token(a, p, dir, x, mode, err);
			else if ((x = op_json_at(s, "secret")))
				rc = from_object(a, p, dir, true, op_json_str_at(x, "name"),
						 op_json_at(x, "items"), bool_at(x, "optional"),
						 mode, err);
			else if ((x = op_json_at(s, "configMap")))
				rc = from_object(a, p, dir, false, op_json_str_at(x, "name"),
						 op_json_at(x, "items"), bool_at(x, "optional"),
						 mode, err);
			else if ((x = op_json_at(s, "downwardAPI")))
				rc = downward(a, p, dir, op_json_at(x, "items"), mode, err);
			else
				rc = 0;
			if (rc < 0)
				return op_err_prefix(err, "volume %s", name);
		}
		return 0;
	}
	return op_err_set(err, -ENOTSUP, "volume %s: unsupported type", name);
}

void na_volumes_release(struct na_agent *a, struct na_pod *p)
{
	json_object *vols = op_json_at(p->obj, "spec.volumes");
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i);
		const char *medium = op_json_str_at(v, "emptyDir.medium");
		const char *n = op_json_str_at(v, "name");
		if (!n || !medium || strcmp(medium, "Memory") || strchr(n, '/'))
			continue;
		_cleanup_free_ char *dir = op_asprintf("%s/volumes/pod-%s/%s", a->state_dir, p->uid, n);
		umount2(dir, MNT_DETACH);
	}
}

char *na_volume_dir(struct na_agent *a, struct na_pod *p, const char *name)
{
	json_object *vols = op_json_at(p->obj, "spec.volumes");
	for (size_t i = 0; name && vols && i < json_object_array_length(vols); i++) {
		json_object *v = json_object_array_get_idx(vols, i), *src;
		const char *n = op_json_str_at(v, "name");
		if (!n || strcmp(n, name) || strchr(n, '/'))
			continue;
		if (op_json_at(v, "emptyDir"))
			return op_asprintf("%s/volumes/pod-%s/%s", a->state_dir, p->uid, n);
		if ((src = op_json_at(v, "hostPath"))) {
			const char *hp = op_json_str_at(src, "path");
			return hp ? op_strdup(hp) : NULL;
		}
		if ((src = op_json_at(v, "persistentVolumeClaim"))) {
			const char *claim = op_json_str_at(src, "claimName");
			json_object *pvc = NULL, *pv = NULL;
			char *dir = NULL;
			if (claim && kube_get(a->kc, KUBE_PVCS, p->ns, claim, &pvc, NULL) == 0) {
				const char *vn = op_json_str_at(pvc, "spec.volumeName");
				const char *phase = op_json_str_at(pvc, "status.phase");
				if (vn && phase && !strcmp(phase, "Bound") &&
				    kube_get(a->kc, KUBE_PVS, NULL, vn, &pv, NULL) == 0) {
					const char *hp = op_json_str_at(pv, "spec.hostPath.path");
					if (!hp)
						hp = op_json_str_at(pv, "spec.local.path");
					dir = hp ? op_strdup(hp) : NULL;
				}
			}
			if (pvc)
				json_object_put(pvc);
			if (pv)
				json_object_put(pv);
			return dir;
		}
		return op_asprintf("%s/pods/%s/vol/%s", a->state_dir, p->uid, n);
	}
	return NULL;
}

int na_volumes_setup(struct na_agent *a, struct na_pod *p, struct op_err *err)
{
	json_object *vols = op_json_at(p->obj, "spec.volumes");
	for (size_t i = 0; vols && i < json_object_array_length(vols); i++) {
		int rc = one_volume(a, p, json_object_array_get_idx(vols, i), err);
		if (rc < 0)
			return rc;
	}
	return 0;
}
