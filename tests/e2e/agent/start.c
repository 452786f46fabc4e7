/* tests/e2e/agent/start.c - starting one container: command and image
 * policy, environment (envFrom, env with $(VAR), fieldRef, secretKeyRef,
 * configMapKeyRef), mounts, identity files, the container-init spec, then
 * fork + exec of `pgop-node-agent container-init`. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

extern char **environ;

/* ------------------------------------------------------------ start */

struct strv {
	char **v;
	size_t n;
};

static void strv_add(struct strv *s, char *owned)
{
	s->v = op_realloc(s->v, (s->n + 2) * sizeof(*s->v));
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){ 0 };
}

static void env_set(struct strv *env, const char *k, const char *v)
{
	size_t kl = strlen(k);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], k, kl) && env->v[i][kl] == '=') {
			free(env->v[i]);
			env->v[i] = op_asprintf("%s=%s", k, v);
			return;
		}
	strv_add(env, op_asprintf("%s=%s", k, v));
}

/* Value of key in a Secret/ConfigMap (decoded). Owned or NULL. */
static char *object_key(struct na_agent *a, struct na_pod *p, bool secret, json_object *ref,
			struct op_err *err)
{
	const char *name = op_json_str_at(ref, "name"), *key = op_json_str_at(ref, "key");
	json_object *optional = op_json_at(ref, "optional");
	json_object *obj = NULL;
	if (!name || !key) {
		op_err_set(err, -EINVAL, "keyRef without name/key");
		return NULL;
	}
	int rc = kube_get(a->kc, secret ? KUBE_SECRETS : KUBE_CONFIGMAPS, p->ns, name, &obj, err);
	if (rc < 0) {
		if (rc == -ENOENT && optional && json_object_get_boolean(optional)) {
			op_err_clear(err);
			return op_strdup("");
		}
		return NULL;
	}
	json_object *data = op_json_at(obj, "data"), *v;
	char *out = NULL;
	if (data && json_object_object_get_ex(data, key, &v)) {
		const char *s = json_object_get_string(v);
		if (secret) {
			size_t len;
			if (op_base64_decode_str(s, strlen(s), 0, &out, &len, err) < 0)
				out = NULL;
		} else {
			out = op_strdup(s);
		}
	} else if (optional && json_object_get_boolean(optional)) {
		out = op_strdup("");
	} else {
		op_err_set(err, -ENOENT, "key %s not found in %s %s/%s", key,
			   secret ? "secret" : "configmap", p->ns, name);
	}
	json_object_put(obj);
	return out;
}

/* enableServiceLinks (default true): like the kubelet, <SVC>_SERVICE_HOST/_PORT
 * (+ _PORT_<NAME>) and the Docker-link variables for every Service with a
 * ClusterIP in the pod's namespace. */
static void service_links(struct na_agent *a, struct na_pod *p, struct strv *env)
{
	json_object *el = op_json_at(p->obj, "spec.enableServiceLinks");
	if (el && !json_object_get_boolean(el))
		return;
	json_object *svcs = kube_informer_list(a->svcs, p->ns);
	for (size_t i = 0; svcs && i < json_object_array_length(svcs); i++) {
		json_object *s = json_object_array_get_idx(svcs, i);
		const char *ip = op_json_str_at(s, "spec.clusterIP");
		const char *name = kube_obj_name(s);
		json_object *ports = op_json_at(s, "spec.ports");
		if (!ip || !*ip || !strcmp(ip, "None") || !name || !ports ||
		    !json_object_array_length(ports))
			continue;
		char up[256];
		size_t k = 0;
		for (; name[k] && k < sizeof(up) - 1; k++)
			up[k] = name[k] == '-' ? '_' : (char)(name[k] >= 'a' && name[k] <= 'z'
								 ? name[k] - 32 : name[k]);
		up[k] = '\0';
		for (size_t j = 0; j < json_object_array_length(ports); j++) {
			json_object *pt = json_object_array_get_idx(ports, j);
			json_object *pn = op_json_at(pt, "port");
			const char *proto = op_json_str_at(pt, "protocol");
			const char *pname = op_json_str_at(pt, "name");
			int port = pn ? json_object_get_int(pn) : 0;
			char lp[16];
			snprintf(lp, sizeof(lp), "%s", proto && !strcmp(proto, "UDP") ? "udp" : "tcp");
			_cleanup_free_ char *portv = op_asprintf("%d", port);
			_cleanup_free_ char *url = op_asprintf("%s://%s:%d", lp, ip, port);
			if (j == 0) {
				_cleanup_free_ char *h = op_asprintf("%s_SERVICE_HOST", up);
				_cleanup_free_ char *sp = op_asprintf("%s_SERVICE_PORT", up);
				_cleanup_free_ char *dp = op_asprintf("%s_PORT", up);
				env_set(env, h, ip);
				env_set(env, sp, portv);
				env_set(env, dp, url);
			}
			if (pname && *pname) {
				char pu[128];
				size_t q = 0;
				for (; pname[q] && q < sizeof(pu) - 1; q++)
					pu[q] = pname[q] == '-' ? '_' : (char)(pname[q] >= 'a' && pname[q] <= 'z'
									? pname[q] - 32 : pname[q]);
				pu[q] = '\0';
				_cleanup_free_ char *np = op_asprintf("%s_SERVICE_PORT_%s", up, pu);
				env_set(env, np, portv);
			}
			char LP[4] = { (char)(lp[0] - 32), (char)(lp[1] - 32), (char)(lp[2] - 32), 0 };
			_cleanup_free_ char *base = op_asprintf("%s_PORT_%d_%s", up, port, LP);
			_cleanup_free_ char *bp = op_asprintf("%s_PROTO", base);
			_cleanup_free_ char *bpo = op_asprintf("%s_PORT", base);
			_cleanup_free_ char *ba = op_asprintf("%s_ADDR", base);
			env_set(env, base, url);
			env_set(env, bp, lp);
			env_set(env, bpo, portv);
			env_set(env, ba, ip);
		}
	}
	if (svcs)
		json_object_put(svcs);
}

static int build_env(struct na_agent *a, struct na_pod *p, json_object *spec, int pg_major,
		     struct strv *env, struct op_err *err)
{
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	/* a PostgreSQL image provides its major's binaries on PATH */
	_cleanup_free_ char *pgbin = op_asprintf(NA_PG_BIN_FMT, pg_major);
	_cleanup_free_ char *pgpath = op_asprintf("%s:%s", pgbin, path);
	env_set(env, "PATH", pg_major > 0 ? pgpath : path);
	env_set(env, "HOSTNAME", p->name);
	env_set(env, "HOME", "/root");
	env_set(env, "KUBERNETES_SERVICE_HOST", a->net.kube_svc_ip);
	env_set(env, "KUBERNETES_SERVICE_PORT", "443");
	env_set(env, "KUBERNETES_SERVICE_PORT_HTTPS", "443");
	_cleanup_free_ char *kp = op_asprintf("tcp://%s:443", a->net.kube_svc_ip);
	env_set(env, "KUBERNETES_PORT", kp);
	const char *owner = getenv("PGOP_E2E_OWNER");
	if (owner)
		env_set(env, "PGOP_E2E_OWNER", owner);
	service_links(a, p, env);
	json_object *from = op_json_at(spec, "envFrom");
	for (size_t i = 0; from && i < json_object_array_length(from); i++) {
		json_object *f = json_object_array_get_idx(from, i), *ref, *obj = NULL;
		bool secret = (ref = op_json_at(f, "secretRef")) != NULL;
		if (!secret && !(ref = op_json_at(f, "configMapRef")))
			continue;
		const char *prefix = op_json_str_at(f, "prefix");
		int rc = kube_get(a->kc, secret ? KUBE_SECRETS : KUBE_CONFIGMAPS, p->ns,
				  op_json_str_at(ref, "name"), &obj, err);
		if (rc < 0)
			return rc;
		json_object *data = op_json_at(obj, "data");
		if (data) {
			json_object_object_foreach(data, k, v)
			{
				_cleanup_free_ char *dec = NULL;
				size_t len;
				const char *s = json_object_get_string(v);
				if (secret && op_base64_decode_str(s, strlen(s), 0, &dec, &len, NULL) == 0)
					s = dec;
				_cleanup_free_ char *key = op_asprintf("%s%s", prefix ? prefix : "", k);
				env_set(env, key, s);
			}
		}
		json_object_put(obj);
	}
	json_object *list = op_json_at(spec, "env");
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i), *vf, *ref;
		const char *name = op_json_str_at(e, "name");
		if (!name)
			continue;
		if ((vf = op_json_at(e, "valueFrom"))) {
			_cleanup_free_ char *val = NULL;
			if ((ref = op_json_at(vf, "fieldRef"))) {
				const char *v = na_field_ref(p->obj, op_json_str_at(ref, "fieldPath"),
							     p->ip, a->host_ip);
				val = op_strdup(v ? v : "");
			} else if ((ref = op_json_at(vf, "secretKeyRef"))) {
				if (!(val = object_key(a, p, true, ref, err)))
					return err ? err->code : -ENOENT;
			} else if ((ref = op_json_at(vf, "configMapKeyRef"))) {
				if (!(val = object_key(a, p, false, ref, err)))
					return err ? err->code : -ENOENT;
			} else {
				val = op_strdup(""); /* resourceFieldRef: not modelled */
			}
			env_set(env, name, val);
			continue;
		}
		const char *v = op_json_str_at(e, "value");
		struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		if (na_expand_vars(&b, v ? v : "", env->v, env->n) < 0)
			op_buf_reset(&b);
		env_set(env, name, op_buf_str(&b));
		op_buf_done(&b);
	}
	return 0;
}

static int64_t sc_int(json_object *pod, json_object *spec, const char *key, int64_t dflt)
{
	_cleanup_free_ char *ck = op_asprintf("securityContext.%s", key);
	_cleanup_free_ char *pk = op_asprintf("spec.securityContext.%s", key);
	json_object *v = op_json_at(spec, ck);
	if (!v)
		v = op_json_at(pod, pk);
	return v ? json_object_get_int64(v) : dflt;
}

/* /etc/passwd and /etc/group with an entry for uid/gid when the host has none
 * (initdb needs one), or NULL when the host's files do. */
static int identity_files(struct na_pod *p, int64_t uid, int64_t gid, json_object *mounts,
			  struct op_err *err)
{
	static const char *const ids[] = { "passwd", "group" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(ids); i++) {
		_cleanup_free_ char *host = op_asprintf("/etc/%s", ids[i]);
		struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
		int rc = na_read_file(host, &b, err);
		long long id = i == 0 ? uid : gid;
		_cleanup_free_ char *needle = op_asprintf(":x:%lld:", id);
		bool has = rc == 0 && strstr(op_buf_str(&b), needle);
		if (rc == 0 && !has) {
			if (i == 0)
				rc = op_buf_addf(&b, "postgres:x:%lld:%lld:PostgreSQL:/var/lib/postgresql:"
						     "/bin/sh\n",
						 (long long)uid, (long long)gid);
			else
				rc = op_buf_addf(&b, "postgres:x:%lld:\n", (long long)gid);
			_cleanup_free_ char *path = op_asprintf("%s/%s", p->dir, ids[i]);
			if (rc == 0)
				rc = na_write_file(path, b.data, b.len, 0644, err);
			if (rc == 0) {
				json_object *m = op_jobj();
				op_jsets(m, "src", path);
				op_jsets(m, "dst", host);
				op_jpush(mounts, m);
			}
		}
		op_buf_done(&b);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void add_mount(json_object *mounts, const char *src, const char *dst, bool ro)
{
	json_object *m = op_jobj();
	op_jsets(m, "src", src);
	op_jsets(m, "dst", dst);
	op_jset(m, "ro", op_jbool(ro));
	op_jpush(mounts, m);
}

static json_object *strv_json(struct strv *s)
{
	json_object *a = op_jarr();
	for (size_t i = 0; i < s->n; i++)
		op_jpush(a, op_jstr(s->v[i]));
	return a;
}

int na_ctr_start(struct na_agent *a, struct na_pod *p, struct na_ctr *c, struct op_err *err)
{
	_cleanup_free_ char *hosts = NULL, *resolv = NULL, *rootfs = NULL, *netns = NULL, *specf = NULL;
	_cleanup_free_ char *logdir = NULL, *logf = NULL, *rundir = NULL, *pf = NULL;
	json_object *spec = na_ctr_spec(p, c);
	if (!spec)
		return op_err_set(err, -ENOENT, "container %s not in spec", c->name);
	enum na_image_kind kind = na_image_kind(op_json_str_at(spec, "image"));
	struct strv env = { 0 }, argv = { 0 };
	json_object *doc = op_jobj(), *mounts = op_jarr();
	int pg_major = kind == NA_IMAGE_POSTGRES ? na_image_pg_major(op_json_str_at(spec, "image")) : 0;
	int rc = build_env(a, p, spec, pg_major, &env, err);
	if (rc < 0)
		goto out;
	json_object *cmd = op_json_at(spec, "command"), *args = op_json_at(spec, "args");
	for (int k = 0; k < 2; k++) {
		json_object *arr = k ? args : cmd;
		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
			if (na_expand_vars(&b, json_object_get_string(json_object_array_get_idx(arr, i)),
					   env.v, env.n) < 0)
				op_buf_reset(&b);
			strv_add(&argv, op_buf_take(&b, NULL));
		}
	}
	if (kind == NA_IMAGE_PGOP) {
		/* pgop image: the entry point (no command, or one naming pgop/manager) is
		 * the built binary */
		const char *base = argv.n ? strrchr(argv.v[0], '/') : NULL;
		base = base ? base + 1 : (argv.n ? argv.v[0] : NULL);
		if (!cmd || !argv.n) {
			strv_add(&argv, NULL);
			memmove(argv.v + 1, argv.v, (argv.n - 1) * sizeof(*argv.v));
			argv.v[0] = op_strdup(a->pgop_binary);
		} else if (strstr(base, "pgop") || !strcmp(base, "manager") ||
			   (argv.v[0][0] == '/' && access(argv.v[0], X_OK) != 0)) {
			free(argv.v[0]);
			argv.v[0] = op_strdup(a->pgop_binary);
		}
	} else if (kind == NA_IMAGE_POSTGRES && !cmd) {
		strv_add(&argv, NULL);
		memmove(argv.v + 1, argv.v, (argv.n - 1) * sizeof(*argv.v));
		argv.v[0] = op_strdup("postgres");
	}
	if (!argv.n) {
		rc = op_err_set(err, -EINVAL, "container %s: no command for image %s", c->name,
				op_json_str_at(spec, "image"));
		goto out;
	}
	int64_t uid = sc_int(p->obj, spec, "runAsUser", 0);
	int64_t gid = sc_int(p->obj, spec, "runAsGroup", uid);
	json_object *vm = op_json_at(spec, "volumeMounts");
	for (size_t i = 0; vm && i < json_object_array_length(vm); i++) {
		json_object *m = json_object_array_get_idx(vm, i);
		const char *vname = op_json_str_at(m, "name"), *mp = op_json_str_at(m, "mountPath");
		const char *sub = op_json_str_at(m, "subPath");
		_cleanup_free_ char *dir = na_volume_dir(a, p, vname);
		if (!dir || !mp) {
			rc = op_err_set(err, -ENOENT, "container %s: volume %s not ready", c->name,
					vname ? vname : "?");
			goto out;
		}
		_cleanup_free_ char *src = sub && *sub && !strstr(sub, "..")
						   ? op_asprintf("%s/%s", dir, sub)
						   : op_strdup(dir);
		if (sub && *sub && access(src, F_OK) != 0 && (rc = na_mkdir_p(src, 0777, err)) < 0)
			goto out;
		json_object *ro = op_json_at(m, "readOnly");
		add_mount(mounts, src, mp, ro && json_object_get_boolean(ro));
	}
	/* the pgop "image" content: the built binary, visible at its own path even when
	 * it lives under /tmp (each container gets a fresh /tmp) */
	if (kind == NA_IMAGE_PGOP)
		add_mount(mounts, a->pgop_binary, a->pgop_binary, true);
	hosts = op_asprintf("%s/hosts", p->dir);
	if (access(hosts, F_OK) == 0)
		add_mount(mounts, hosts, "/etc/hosts", true);
	resolv = op_asprintf("%s/resolv.conf", p->dir);
	if (access(resolv, F_OK) == 0)
		add_mount(mounts, resolv, "/etc/resolv.conf", true);
	if ((rc = identity_files(p, uid, gid, mounts, err)) < 0)
		goto out;
	rootfs = op_asprintf("%s/rootfs", p->dir);
	netns = op_asprintf("/run/netns/%s", p->netns);
	if ((rc = na_mkdir_p(rootfs, 0755, err)) < 0)
		goto out;
	op_jsets(doc, "netns", netns);
	op_jsets(doc, "rootfs", rootfs);
	op_jset(doc, "mounts", json_object_get(mounts));
	const char *hn = op_json_str_at(p->obj, "spec.hostname");
	op_jsets(doc, "hostname", hn ? hn : p->name);
	op_jset(doc, "uid", op_jint(uid));
	op_jset(doc, "gid", op_jint(gid));
	json_object *groups = op_jarr();
	json_object *fsg = op_json_at(p->obj, "spec.securityContext.fsGroup");
	if (fsg)
		op_jpush(groups, op_jint(json_object_get_int64(fsg)));
	json_object *sup = op_json_at(p->obj, "spec.securityContext.supplementalGroups");
	for (size_t i = 0; sup && i < json_object_array_length(sup); i++)
		op_jpush(groups, op_jint(json_object_get_int64(json_object_array_get_idx(sup, i))));
	op_jset(doc, "groups", groups);
	/* securityContext (na_podspec_check refused what is not honoured here) */
	json_object *ro = op_json_at(spec, "securityContext.readOnlyRootFilesystem");
	op_jset(doc, "read_only_root", op_jbool(ro && json_object_get_boolean(ro)));
	json_object *ape = op_json_at(spec, "securityContext.allowPrivilegeEscalation");
	op_jset(doc, "no_new_privs", op_jbool(ape && !json_object_get_boolean(ape)));
	json_object *drop = op_json_at(spec, "securityContext.capabilities.drop");
	op_jset(doc, "drop_all_caps", op_jbool(drop && json_object_array_length(drop)));
	/* resources.limits: cgroups the container joins before exec */
	int64_t mem = 0, cpu = 0;
	const char *ml = op_json_str_at(spec, "resources.limits.memory");
	const char *cl = op_json_str_at(spec, "resources.limits.cpu");
	if (ml && na_quantity_parse(ml, 1, &mem) < 0)
		mem = 0;
	if (cl && na_quantity_parse(cl, 1000, &cpu) < 0)
		cpu = 0;
	if (c->cgroups) {
		na_cgroup_remove(c->cgroups);
		free(c->cgroups);
		c->cgroups = NULL;
	}
	if (mem || cpu) {
		_cleanup_free_ char *cgname = op_asprintf("%.8s-%s%s", p->uid, c->init ? "init-" : "",
							  c->name);
		if ((rc = na_cgroup_create(cgname, mem, cpu, &c->cgroups, err)) < 0)
			goto out;
		json_object *cgs = op_jarr();
		for (size_t i = 0; c->cgroups && c->cgroups[i]; i++)
			op_jpush(cgs, op_jstr(c->cgroups[i]));
		op_jset(doc, "cgroups", cgs);
	}
	const char *wd = op_json_str_at(spec, "workingDir");
	if (wd)
		op_jsets(doc, "cwd", wd);
	op_jset(doc, "argv", strv_json(&argv));
	op_jset(doc, "env", strv_json(&env));
	specf = op_asprintf("%s/%s.json", p->dir, c->name);
	const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	if ((rc = na_write_file(specf, text, strlen(text), 0600, err)) < 0)
		goto out;
	logdir = op_asprintf("%s/logs", a->shared_dir);
	logf =
		op_asprintf("%s/%s_%s_%s.log", logdir, p->ns, p->name, c->name);
	if ((rc = na_mkdir_p(logdir, 0755, err)) < 0)
		goto out;
	int logfd = open(logf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0) {
		rc = op_err_set(err, -errno, "open %s: %s", logf, strerror(errno));
		goto out;
	}
	char *const child_argv[] = { "pgop-node-agent", "container-init", specf, NULL };
	/* posix_spawn: safe from a multi-threaded process and cheap for a big one.
	 * The container gets an empty signal mask and default SIGPIPE/TERM/INT/HUP
	 * (the agent blocks some and ignores SIGPIPE). */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, logfd, 1);
	posix_spawn_file_actions_adddup2(&fa, logfd, 2);
	posix_spawnattr_init(&at);
	sigset_t none, dflt;
	sigemptyset(&none);
	sigemptyset(&dflt);
	sigaddset(&dflt, SIGPIPE);
	sigaddset(&dflt, SIGTERM);
	sigaddset(&dflt, SIGINT);
	sigaddset(&dflt, SIGHUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dflt);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int se = posix_spawn(&pid, a->self_exe, &fa, &at, child_argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(logfd);
	if (se != 0) {
		rc = op_err_set(err, -se, "spawn container-init: %s", strerror(se));
		goto out;
	}
	c->pid = pid;
	c->state = NA_RUNNING;
	c->ever_started = true;
	c->ready = false;
	c->started = false;
	c->started_ms = na_now_ms();
	for (int k = 0; k < NA_PROBE__N; k++) {
		c->probe_ok[k] = c->probe_fail[k] = 0;
		c->probe_passed[k] = false;
		c->next_probe_ms[k] = 0;
	}
	na_set_reason(&c->reason, NULL);
	na_rfc3339(c->started_at);
	rundir = op_asprintf("%s/run", a->shared_dir);
	pf =
		op_asprintf("%s/%s_%s_%s.pid", rundir, p->ns, p->name, c->name);
	char pidtxt[16];
	snprintf(pidtxt, sizeof(pidtxt), "%d", (int)pid);
	if (na_mkdir_p(rundir, 0755, NULL) == 0) {
		na_write_file(pf, pidtxt, strlen(pidtxt), 0644, NULL);
		if (!c->init && c == &p->ctrs[0]) {
			_cleanup_free_ char *pf0 = op_asprintf("%s/%s_%s.pid", rundir, p->ns, p->name);
			na_write_file(pf0, pidtxt, strlen(pidtxt), 0644, NULL);
		}
	}
	op_log_info("container started", "pod", p->name, "namespace", p->ns, "container",
		    c->name, "pid", pidtxt, "command", argv.v[0]);
	rc = 0;
out:
	json_object_put(mounts);
	json_object_put(doc);
	strv_free(&env);
	strv_free(&argv);
	return rc;
}

