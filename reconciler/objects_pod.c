/* reconciler/objects_pod.c - instance Pods and bootstrap Pods
 * (docs/instance-contract.md "Pod" and "Bootstrap Pods"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/buf.h"

#define STATUS_PORT 8000
#define PG_PORT 5432
#define PGDATA_MOUNT "/var/lib/postgresql/data"
#define WAL_MOUNT "/var/lib/postgresql/wal"

static json_object *env_val(const char *name, const char *value)
{
	json_object *e = jobj();
	jsets(e, "name", name);
	jsets(e, "value", value);
	return e;
}

static json_object *env_field(const char *name, const char *path)
{
	json_object *e = jobj();
	jsets(e, "name", name);
	json_object *fr = jobj();
	jsets(fr, "apiVersion", "v1");
	jsets(fr, "fieldPath", path);
	jset(jchild(e, "valueFrom"), "fieldRef", fr);
	return e;
}

static json_object *mount(const char *name, const char *path, bool ro)
{
	json_object *m = jobj();
	jsets(m, "name", name);
	jsets(m, "mountPath", path);
	if (ro)
		jset(m, "readOnly", jbool(true));
	return m;
}

static json_object *vol_secret(const char *name, const char *secret, const char *only_key)
{
	json_object *v = jobj();
	jsets(v, "name", name);
	json_object *s = jobj();
	/* kubelet's default mode (0644): the instance manager copies the keys into
	 * /controller/certificates with 0600 for PostgreSQL */
	jsets(s, "secretName", secret);
	if (only_key) {
		json_object *item = jobj();
		jsets(item, "key", only_key);
		jsets(item, "path", only_key);
		jset(s, "items", jpush(jarr(), item));
	}
	jset(v, "secret", s);
	return v;
}

static json_object *vol_pvc(const char *name, const char *claim)
{
	json_object *v = jobj();
	jsets(v, "name", name);
	jsets(jchild(v, "persistentVolumeClaim"), "claimName", claim);
	return v;
}

static json_object *probe(const char *path, int period, int failure)
{
	json_object *p = jobj();
	json_object *h = jobj();
	jsets(h, "path", path);
	jset(h, "port", jint(STATUS_PORT));
	jsets(h, "scheme", "HTTPS");
	jset(p, "httpGet", h);
	jset(p, "periodSeconds", jint(period));
	jset(p, "timeoutSeconds", jint(5));
	jset(p, "failureThreshold", jint(failure));
	return p;
}

static json_object *kvs_object(const struct api_kvs *kvs)
{
	json_object *o = jobj();
	for (size_t i = 0; i < kvs->n; i++)
		jsets(o, kvs->items[i].key, kvs->items[i].value);
	return o;
}

/* Volumes and mounts shared by the instance Pod and its bootstrap Pod. */
static void add_volumes(const struct api_cluster *c, int64_t serial, json_object *spec,
			json_object *mounts)
{
	const char *cn = c->metadata.name;
	_cleanup_free_ char *pvc = api_pgdata_pvc_name(cn, serial);
	_cleanup_free_ char *wal = api_wal_pvc_name(cn, serial);
	_cleanup_free_ char *s_srv = api_secret_name(cn, API_SECRET_SERVER);
	_cleanup_free_ char *s_ca = api_secret_name(cn, API_SECRET_CA_CERT); /* no ca.key */
	_cleanup_free_ char *s_rep = api_secret_name(cn, API_SECRET_REPLICATION);
	_cleanup_free_ char *s_su = rc_user_secret_name(c, API_SECRET_SUPERUSER);
	_cleanup_free_ char *s_app = rc_user_secret_name(c, API_SECRET_APP);
	json_object *vols = jarr();
	jpush(vols, vol_pvc("pgdata", pvc));
	jpush(mounts, mount("pgdata", PGDATA_MOUNT, false));
	if (c->spec.wal_storage.present) {
		jpush(vols, vol_pvc("pg-wal", wal));
		jpush(mounts, mount("pg-wal", WAL_MOUNT, false));
	}
	json_object *ctl = jobj();
	jsets(ctl, "name", "controller");
	jset(ctl, "emptyDir", jobj());
	jpush(vols, ctl);
	jpush(mounts, mount("controller", "/controller", false));
	jpush(vols, vol_secret("server-tls", s_srv, NULL));
	jpush(mounts, mount("server-tls", "/run/pgop/certs/server", true));
	jpush(vols, vol_secret("ca", s_ca, "ca.crt"));
	jpush(mounts, mount("ca", "/run/pgop/certs/ca", true));
	jpush(vols, vol_secret("replication-tls", s_rep, NULL));
	jpush(mounts, mount("replication-tls", "/run/pgop/certs/replication", true));
	if (c->spec.enable_superuser_access) { /* otherwise no pod needs the password */
		jpush(vols, vol_secret("superuser", s_su, NULL));
		jpush(mounts, mount("superuser", "/run/pgop/secrets/superuser", true));
	}
	jpush(vols, vol_secret("app", s_app, NULL));
	jpush(mounts, mount("app", "/run/pgop/secrets/app", true));
	jset(spec, "volumes", vols);
}

static json_object *env_list(const struct api_cluster *c)
{
	json_object *env = jarr();
	jpush(env, env_field("POD_NAME", "metadata.name"));
	jpush(env, env_field("NAMESPACE", "metadata.namespace"));
	jpush(env, env_field("POD_IP", "status.podIP"));
	jpush(env, env_val("CLUSTER_NAME", c->metadata.name));
	jpush(env, env_val("PGDATA", PGDATA_MOUNT "/pgdata"));
	jpush(env, env_val("PGHOST", "/controller/run"));
	jpush(env, env_val("PGPORT", "5432"));
	return env;
}

static json_object *str_array(const char *const *v, size_t n)
{
	json_object *a = jarr();
	for (size_t i = 0; i < n; i++)
		jpush(a, jstr(v[i]));
	return a;
}

/* The instance's identity as flags too (the same values as the POD_NAME,
 * NAMESPACE and CLUSTER_NAME environment): explicit and easy to read in
 * `ps`, and independent of how the instance manager reads its environment. */
static void identity_args(json_object *cmd, const struct api_cluster *c, const char *pod)
{
	jpush(cmd, jstr("--cluster-name"));
	jpush(cmd, jstr(c->metadata.name));
	jpush(cmd, jstr("--namespace"));
	jpush(cmd, jstr(c->metadata.namespace_ ? c->metadata.namespace_ : "default"));
	jpush(cmd, jstr("--pod-name"));
	jpush(cmd, jstr(pod));
}

const char *rc_pg_image(const struct api_cluster *c, const struct rc_settings *s)
{
	return c->spec.image_name && *c->spec.image_name ? c->spec.image_name
	       : s && s->default_image			  ? s->default_image
							  : "ghcr.io/cloudnative-pg/postgresql:15";
}

/* --pg-major from the image's tag: the instance manager runs the programs of
 * that major and fails naming both majors when the node has others. */
static void major_args(json_object *cmd, const struct api_cluster *c, const struct rc_settings *s)
{
	int major;
	if (api_image_major_version(rc_pg_image(c, s), &major, NULL) < 0)
		return; /* a digest-only image: the instance manager takes any major */
	char n[16];
	snprintf(n, sizeof(n), "%d", major);
	jpush(cmd, jstr("--pg-major"));
	jpush(cmd, jstr(n));
}

/* The pod spec of an instance (command NULL) or of a bootstrap Pod (command
 * given). */
static json_object *pod_spec(const struct api_cluster *c, const struct rc_settings *s,
			     int64_t serial, json_object *command)
{
	const char *image = s && s->operator_image ? s->operator_image : "pgop:latest";
	json_object *spec = jobj();
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	json_object *mounts = jarr();
	add_volumes(c, serial, spec, mounts);

	json_object *init = jobj();
	jsets(init, "name", "bootstrap-controller");
	jsets(init, "image", image);
	static const char *const boot[] = { "pgop", "bootstrap", "/controller/pgop" };
	jset(init, "command", str_array(boot, OP_ARRAY_SIZE(boot)));
	jset(init, "volumeMounts", jpush(jarr(), mount("controller", "/controller", false)));
	jset(spec, "initContainers", jpush(jarr(), init));

	json_object *pg = jobj();
	jsets(pg, "name", RC_CONTAINER_POSTGRES);
	jsets(pg, "image", rc_pg_image(c, s));
	if (c->spec.image_pull_policy)
		jsets(pg, "imagePullPolicy", c->spec.image_pull_policy);
	if (command) {
		jset(pg, "command", command);
	} else {
		static const char *const run[] = { "/controller/pgop", "instance", "run" };
		json_object *cmd = str_array(run, OP_ARRAY_SIZE(run));
		identity_args(cmd, c, pod);
		major_args(cmd, c, s);
		jset(pg, "command", cmd);
		json_object *ports = jarr();
		json_object *p = jobj();
		jsets(p, "name", "postgresql");
		jset(p, "containerPort", jint(PG_PORT));
		jsets(p, "protocol", "TCP");
		jpush(ports, p);
		p = jobj();
		jsets(p, "name", "status");
		jset(p, "containerPort", jint(STATUS_PORT));
		jsets(p, "protocol", "TCP");
		jpush(ports, p);
		jset(pg, "ports", ports);
		/* Startup and readiness are probed every second and every 2 s (CNPG:
		 * 10 s): a restarted container (its instance manager killed) is back
		 * in the Services a second after postgres accepts connections, not up
		 * to 20 s later. The probes are a plain-HTTP flag read (port 8080);
		 * readiness keeps CNPG's 30 s of failures before a Pod leaves them. */
		int64_t start = c->spec.start_delay > 0 ? c->spec.start_delay : 3600;
		jset(pg, "startupProbe", probe("/startupz", 1, (int)(start > 0 ? start : 1)));
		jset(pg, "readinessProbe", probe("/readyz", 2, 15));
		int64_t live = c->spec.liveness_probe_timeout > 0 ? c->spec.liveness_probe_timeout / 10
								  : 3;
		jset(pg, "livenessProbe", probe("/healthz", 10, live > 0 ? (int)live : 1));
	}
	jset(pg, "env", env_list(c));
	jset(pg, "volumeMounts", mounts);
	if (c->spec.resources.requests.n || c->spec.resources.limits.n) {
		json_object *res = jobj();
		if (c->spec.resources.requests.n)
			jset(res, "requests", kvs_object(&c->spec.resources.requests));
		if (c->spec.resources.limits.n)
			jset(res, "limits", kvs_object(&c->spec.resources.limits));
		jset(pg, "resources", res);
	}
	jset(spec, "containers", jpush(jarr(), pg));

	json_object *sc = jobj();
	jset(sc, "runAsUser", jint(c->spec.postgres_uid));
	jset(sc, "runAsGroup", jint(c->spec.postgres_gid));
	jset(sc, "fsGroup", jint(c->spec.postgres_gid));
	jset(sc, "runAsNonRoot", jbool(true));
	jset(spec, "securityContext", sc);
	jsets(spec, "serviceAccountName",
	      c->spec.service_account_name && *c->spec.service_account_name
		      ? c->spec.service_account_name
		      : c->metadata.name);
	jsets(spec, "hostname", pod);
	if (c->spec.affinity.node_selector.n)
		jset(spec, "nodeSelector", kvs_object(&c->spec.affinity.node_selector));
	int64_t stop = c->spec.stop_delay > 0 ? c->spec.stop_delay : 1800;
	jset(spec, "terminationGracePeriodSeconds", jint(stop));
	return spec;
}

static json_object *pod_meta(const struct api_cluster *c, const char *name, int64_t serial)
{
	json_object *m = jobj();
	jsets(m, "name", name);
	jsets(m, "namespace", c->metadata.namespace_);
	json_object *labels = jobj();
	jsets(labels, RC_LABEL_CLUSTER, c->metadata.name);
	jset(m, "labels", labels);
	_cleanup_free_ char *ser = op_asprintf("%lld", (long long)serial);
	jsets(jchild(m, "annotations"), RC_ANN_NODE_SERIAL, ser);
	jset(m, "ownerReferences", jpush(jarr(), rc_owner_ref(c)));
	return m;
}

int rc_build_pod(const struct api_cluster *c, const struct rc_settings *s, int64_t serial,
		 const char *role, json_object **ret, struct op_err *err)
{
	if (serial <= 0)
		return op_err_set(err, -EINVAL, "instance serial %lld", (long long)serial);
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	json_object *o = jobj();
	jsets(o, "apiVersion", "v1");
	jsets(o, "kind", "Pod");
	json_object *m = pod_meta(c, pod, serial);
	json_object *labels = json_object_object_get(m, "labels");
	jsets(labels, RC_LABEL_INSTANCE_NAME, pod);
	jsets(labels, RC_LABEL_POD_ROLE, "instance");
	if (role) {
		jsets(labels, RC_LABEL_INSTANCE_ROLE, role);
		jsets(labels, RC_LABEL_ROLE, role);
	}
	jsets(labels, "app.kubernetes.io/name", "postgresql");
	jsets(labels, "app.kubernetes.io/instance", c->metadata.name);
	jsets(labels, "app.kubernetes.io/component", "database");
	jsets(labels, "app.kubernetes.io/managed-by", "pgop");
	const char *restarted = api_kvs_get(&c->metadata.annotations, RC_ANN_RESTARTED_AT);
	if (restarted)
		jsets(jchild(m, "annotations"), RC_ANN_RESTARTED_AT, restarted);
	jsets(jchild(m, "annotations"), RC_ANN_IMAGE, rc_pg_image(c, s));
	jset(o, "metadata", m);
	jset(o, "spec", pod_spec(c, s, serial, NULL));
	*ret = o;
	return 0;
}

/* The bootstrap Pod's command; NULL with err set when spec.bootstrap.initdb
 * holds an argument that cannot go to initdb. */
static json_object *bootstrap_command(const struct api_cluster *c, const struct rc_settings *s,
				      int64_t serial, enum rc_job_role role, struct op_err *err)
{
	json_object *a = jarr();
	jpush(a, jstr("/controller/pgop"));
	jpush(a, jstr("instance"));
	jpush(a, jstr(role == RC_JOB_JOIN ? "join" : "init"));
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	identity_args(a, c, pod);
	major_args(a, c, s);
	if (c->spec.wal_storage.present) {
		jpush(a, jstr("--pg-wal"));
		jpush(a, jstr(WAL_MOUNT "/pg_wal"));
	}
	if (role == RC_JOB_JOIN) {
		_cleanup_free_ char *rw = api_service_name(c->metadata.name, API_SVC_RW);
		jpush(a, jstr("--primary-host"));
		jpush(a, jstr(rw));
		return a;
	}
	const struct api_initdb *i = &c->spec.bootstrap.initdb;
	struct api_strv flags = { 0 };
	int r = api_initdb_args(i, &flags, err);
	for (size_t k = 0; r == 0 && k < flags.n; k++) { /* one flag, one element */
		jpush(a, jstr("--initdb-flag"));
		jpush(a, jstr(flags.items[k]));
	}
	api_strv_done(&flags);
	if (r) {
		json_object_put(a);
		return NULL;
	}
	const char *db = i->database && *i->database ? i->database : "app";
	const char *owner = i->owner && *i->owner ? i->owner : db;
	jpush(a, jstr("--app-db-name"));
	jpush(a, jstr(db));
	jpush(a, jstr("--app-user"));
	jpush(a, jstr(owner));
	const struct {
		const char *flag;
		const struct api_strv *v;
	} sql[] = {
		{ "--post-init-sql", &i->post_init_sql },
		{ "--post-init-application-sql", &i->post_init_application_sql },
		{ "--post-init-template-sql", &i->post_init_template_sql },
	};
	for (size_t k = 0; k < OP_ARRAY_SIZE(sql); k++)
		for (size_t j = 0; j < sql[k].v->n; j++) {
			jpush(a, jstr(sql[k].flag));
			jpush(a, jstr(sql[k].v->items[j]));
		}
	return a;
}

int rc_build_bootstrap_pod(const struct api_cluster *c, const struct rc_settings *s,
			   int64_t serial, enum rc_job_role role, json_object **ret,
			   struct op_err *err)
{
	if (serial <= 0)
		return op_err_set(err, -EINVAL, "instance serial %lld", (long long)serial);
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	_cleanup_free_ char *name = rc_job_name(c->metadata.name, serial, role);
	json_object *cmd = bootstrap_command(c, s, serial, role, err);
	if (!cmd)
		return -EINVAL;
	json_object *o = jobj();
	jsets(o, "apiVersion", "v1");
	jsets(o, "kind", "Pod");
	json_object *m = pod_meta(c, name, serial);
	json_object *labels = json_object_object_get(m, "labels");
	jsets(labels, RC_LABEL_INSTANCE_NAME, pod);
	jsets(labels, RC_LABEL_JOB_ROLE, rc_job_role_name(role));
	jset(o, "metadata", m);
	json_object *ps = pod_spec(c, s, serial, cmd);
	/* a failed attempt is retried in place, with the kubelet's back-off
	 * (the Job's backoffLimit is RC_BOOTSTRAP_RESTARTS in the reconciler) */
	jsets(ps, "restartPolicy", "OnFailure");
	jset(o, "spec", ps);
	*ret = o;
	return 0;
}
