/* reconciler/objects_pod.c - instance Pods and bootstrap Pods
 * (docs/instance-contract.md "Pod" and "Bootstrap Pods"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reconciler/internal.h"
#include "reconciler/annotations.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

#define STATUS_PORT 8000
#define PG_PORT 5432
#define PGDATA_MOUNT "/var/lib/postgresql/data"
#define WAL_MOUNT "/var/lib/postgresql/wal"

static json_object *env_val(const char *name, const char *value)
{
	json_object *e = op_jobj();
	op_jsets(e, "name", name);
	op_jsets(e, "value", value);
	return e;
}

static json_object *env_field(const char *name, const char *path)
{
	json_object *e = op_jobj();
	op_jsets(e, "name", name);
	json_object *fr = op_jobj();
	op_jsets(fr, "apiVersion", "v1");
	op_jsets(fr, "fieldPath", path);
	op_jset(op_jchild(e, "valueFrom"), "fieldRef", fr);
	return e;
}

static json_object *mount(const char *name, const char *path, bool ro)
{
	json_object *m = op_jobj();
	op_jsets(m, "name", name);
	op_jsets(m, "mountPath", path);
	if (ro)
		op_jset(m, "readOnly", op_jbool(true));
	return m;
}

static json_object *vol_secret(const char *name, const char *secret, const char *only_key)
{
	json_object *v = op_jobj();
	op_jsets(v, "name", name);
	json_object *s = op_jobj();
	/* kubelet's default mode (0644): the instance manager copies the keys into
	 * /controller/certificates with 0600 for PostgreSQL */
	op_jsets(s, "secretName", secret);
	if (only_key) {
		json_object *item = op_jobj();
		op_jsets(item, "key", only_key);
		op_jsets(item, "path", only_key);
		op_jset(s, "items", op_jpush(op_jarr(), item));
	}
	op_jset(v, "secret", s);
	return v;
}

static json_object *vol_pvc(const char *name, const char *claim)
{
	json_object *v = op_jobj();
	op_jsets(v, "name", name);
	op_jsets(op_jchild(v, "persistentVolumeClaim"), "claimName", claim);
	return v;
}

static json_object *probe(const char *path, int period, int failure)
{
	json_object *p = op_jobj();
	json_object *h = op_jobj();
	op_jsets(h, "path", path);
	op_jset(h, "port", op_jint(STATUS_PORT));
	op_jsets(h, "scheme", "HTTPS");
	op_jset(p, "httpGet", h);
	op_jset(p, "periodSeconds", op_jint(period));
	op_jset(p, "timeoutSeconds", op_jint(5));
	op_jset(p, "failureThreshold", op_jint(failure));
	return p;
}

/* The Secret keys object store s names, one volume each holding just that
 * key as the file api_barman_file_name(f), under /run/pgop/secrets/<prefix>-<file>/
 * (api/cluster.h): prefix "barman" for the WAL archive's store (wal-archive
 * reads them there at each call), "recovery" for the store a recovery
 * bootstraps from (its bootstrap Pod only). */
static void add_store_volumes(const struct api_barman_store *s, const char *prefix,
			      json_object *vols, json_object *mounts)
{
	for (int f = 0; s && f < API_BARMAN_FILE__COUNT; f++) {
		const struct api_secret_ref *ref = api_barman_file_ref(s, f);
		if (!ref)
			continue;
		const char *file = api_barman_file_name(f);
		_cleanup_free_ char *name = op_asprintf("%s-%s", prefix, file);
		_cleanup_free_ char *path = op_asprintf("/run/pgop/secrets/%s", name);
		json_object *v = vol_secret(name, ref->name, ref->key);
		json_object *item = json_object_array_get_idx(op_json_at(v, "secret.items"), 0);
		op_jsets(item, "path", file); /* the key's file is named for its role */
		op_jpush(vols, v);
		op_jpush(mounts, mount(name, path, true));
	}
}

char *rc_archive_volumes(const struct api_cluster *c)
{
	const struct api_barman_store *s = api_cluster_wal_store(c);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int e = op_buf_adds(&b, "");
	for (int f = 0; e == 0 && s && f < API_BARMAN_FILE__COUNT; f++) {
		const struct api_secret_ref *ref = api_barman_file_ref(s, f);
		if (ref)
			e = op_buf_addf(&b, "%s%s=%s/%s", b.len ? ";" : "", api_barman_file_name(f),
					ref->name, ref->key);
	}
	char *out = op_strdup(e == 0 ? op_buf_str(&b) : "?"); /* "?": over the cap, still differs */
	op_buf_done(&b);
	return out;
}

/* Volumes and mounts shared by the instance Pod and its bootstrap Pod. */
static void add_volumes(const struct api_cluster *c, int64_t serial, bool recovering,
			json_object *spec, json_object *mounts)
{
	const char *cn = c->metadata.name;
	_cleanup_free_ char *pvc = api_pgdata_pvc_name(cn, serial);
	_cleanup_free_ char *wal = api_wal_pvc_name(cn, serial);
	_cleanup_free_ char *s_srv = api_secret_name(cn, API_SECRET_SERVER);
	_cleanup_free_ char *s_ca = api_secret_name(cn, API_SECRET_CA_CERT); /* no ca.key */
	_cleanup_free_ char *s_rep = api_secret_name(cn, API_SECRET_REPLICATION);
	_cleanup_free_ char *s_su = rc_user_secret_name(c, API_SECRET_SUPERUSER);
	_cleanup_free_ char *s_app = rc_user_secret_name(c, API_SECRET_APP);
	json_object *vols = op_jarr();
	op_jpush(vols, vol_pvc("pgdata", pvc));
	op_jpush(mounts, mount("pgdata", PGDATA_MOUNT, false));
	if (c->spec.wal_storage.present) {
		op_jpush(vols, vol_pvc("pg-wal", wal));
		op_jpush(mounts, mount("pg-wal", WAL_MOUNT, false));
	}
	_cleanup_free_ char *pod = api_pod_name(cn, serial);
	for (size_t i = 0; i < c->spec.n_tablespaces; i++) { /* CloudNativePG's names and paths */
		const char *t = c->spec.tablespaces[i].name;
		if (!t)
			continue;
		_cleanup_free_ char *vol = api_tablespace_volume_name(t);
		_cleanup_free_ char *claim = api_tablespace_pvc_name(pod, t);
		_cleanup_free_ char *at = api_tablespace_mount(NULL, t);
		op_jpush(vols, vol_pvc(vol, claim));
		op_jpush(mounts, mount(vol, at, false));
	}
	json_object *ctl = op_jobj();
	op_jsets(ctl, "name", "controller");
	op_jset(ctl, "emptyDir", op_jobj());
	op_jpush(vols, ctl);
	op_jpush(mounts, mount("controller", "/controller", false));
	op_jpush(vols, vol_secret("server-tls", s_srv, NULL));
	op_jpush(mounts, mount("server-tls", "/run/pgop/certs/server", true));
	op_jpush(vols, vol_secret("ca", s_ca, "ca.crt"));
	op_jpush(mounts, mount("ca", "/run/pgop/certs/ca", true));
	op_jpush(vols, vol_secret("replication-tls", s_rep, NULL));
	op_jpush(mounts, mount("replication-tls", "/run/pgop/certs/replication", true));
	if (c->spec.enable_superuser_access) { /* otherwise no pod needs the password */
		op_jpush(vols, vol_secret("superuser", s_su, NULL));
		op_jpush(mounts, mount("superuser", "/run/pgop/secrets/superuser", true));
	}
	op_jpush(vols, vol_secret("app", s_app, NULL));
	op_jpush(mounts, mount("app", "/run/pgop/secrets/app", true));
	add_store_volumes(api_cluster_wal_store(c), "barman", vols, mounts);
	const struct api_external_cluster *src = recovering ? api_cluster_recovery_source(c) : NULL;
	if (src) /* the names api_recovery_file_volume gives */
		add_store_volumes(src->barman_object_store, "recovery", vols, mounts);
	rc_monitoring_volumes(c, vols, mounts);
	op_jset(spec, "volumes", vols);
}

static json_object *env_list(const struct api_cluster *c)
{
	json_object *env = op_jarr();
	op_jpush(env, env_field("POD_NAME", "metadata.name"));
	op_jpush(env, env_field("NAMESPACE", "metadata.namespace"));
	op_jpush(env, env_field("POD_IP", "status.podIP"));
	op_jpush(env, env_val("CLUSTER_NAME", c->metadata.name));
	op_jpush(env, env_val("PGDATA", PGDATA_MOUNT "/pgdata"));
	op_jpush(env, env_val("PGHOST", "/controller/run"));
	op_jpush(env, env_val("PGPORT", "5432"));
	return env;
}

static json_object *str_array(const char *const *v, size_t n)
{
	json_object *a = op_jarr();
	for (size_t i = 0; i < n; i++)
		op_jpush(a, op_jstr(v[i]));
	return a;
}

/* The instance's identity as flags too (the same values as the POD_NAME,
 * NAMESPACE and CLUSTER_NAME environment): explicit and easy to read in
 * `ps`, and independent of how the instance manager reads its environment. */
static void identity_args(json_object *cmd, const struct api_cluster *c, const char *pod)
{
	op_jpush(cmd, op_jstr("--cluster-name"));
	op_jpush(cmd, op_jstr(c->metadata.name));
	op_jpush(cmd, op_jstr("--namespace"));
	op_jpush(cmd, op_jstr(c->metadata.namespace_ ? c->metadata.namespace_ : "default"));
	op_jpush(cmd, op_jstr("--pod-name"));
	op_jpush(cmd, op_jstr(pod));
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
	op_jpush(cmd, op_jstr("--pg-major"));
	op_jpush(cmd, op_jstr(n));
}

/* The pod spec of an instance (command NULL) or of a bootstrap Pod (command
 * given). */
static json_object *pod_spec(const struct api_cluster *c, const struct rc_settings *s,
			     int64_t serial, json_object *command, bool recovering)
{
	const char *image = s && s->operator_image ? s->operator_image : "pgop:latest";
	json_object *spec = op_jobj();
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	json_object *mounts = op_jarr();
	add_volumes(c, serial, recovering, spec, mounts);

	json_object *init = op_jobj();
	op_jsets(init, "name", "bootstrap-controller");
	op_jsets(init, "image", image);
	static const char *const boot[] = { "pgop", "bootstrap", "/controller/pgop" };
	op_jset(init, "command", str_array(boot, OP_ARRAY_SIZE(boot)));
	op_jset(init, "volumeMounts", op_jpush(op_jarr(), mount("controller", "/controller", false)));
	op_jset(spec, "initContainers", op_jpush(op_jarr(), init));

	json_object *pg = op_jobj();
	op_jsets(pg, "name", RC_CONTAINER_POSTGRES);
	op_jsets(pg, "image", rc_pg_image(c, s));
	if (c->spec.image_pull_policy)
		op_jsets(pg, "imagePullPolicy", c->spec.image_pull_policy);
	if (command) {
		op_jset(pg, "command", command);
	} else {
		static const char *const run[] = { "/controller/pgop", "instance", "run" };
		json_object *cmd = str_array(run, OP_ARRAY_SIZE(run));
		identity_args(cmd, c, pod);
		major_args(cmd, c, s);
		op_jset(pg, "command", cmd);
		json_object *ports = op_jarr();
		json_object *p = op_jobj();
		op_jsets(p, "name", "postgresql");
		op_jset(p, "containerPort", op_jint(PG_PORT));
		op_jsets(p, "protocol", "TCP");
		op_jpush(ports, p);
		p = op_jobj();
		op_jsets(p, "name", "status");
		op_jset(p, "containerPort", op_jint(STATUS_PORT));
		op_jsets(p, "protocol", "TCP");
		op_jpush(ports, p);
		op_jpush(ports, rc_metrics_port());
		op_jset(pg, "ports", ports);
		/* Startup and readiness are probed every second and every 2 s (CNPG:
		 * 10 s): a restarted container (its instance manager killed) is back
		 * in the Services a second after postgres accepts connections, not up
		 * to 20 s later. The probes are a plain-HTTP flag read (port 8080);
		 * readiness keeps CNPG's 30 s of failures before a Pod leaves them. */
		int64_t start = c->spec.start_delay > 0 ? c->spec.start_delay : 3600;
		op_jset(pg, "startupProbe", probe("/startupz", 1, (int)(start > 0 ? start : 1)));
		op_jset(pg, "readinessProbe", probe("/readyz", 2, 15));
		int64_t live = c->spec.liveness_probe_timeout > 0 ? c->spec.liveness_probe_timeout / 10
								  : 3;
		op_jset(pg, "livenessProbe", probe("/healthz", 10, live > 0 ? (int)live : 1));
	}
	op_jset(pg, "env", env_list(c));
	op_jset(pg, "volumeMounts", mounts);
	if (c->spec.resources.requests.n || c->spec.resources.limits.n) {
		json_object *res = op_jobj();
		if (c->spec.resources.requests.n)
			op_jset(res, "requests", rc_kvs_object(&c->spec.resources.requests));
		if (c->spec.resources.limits.n)
			op_jset(res, "limits", rc_kvs_object(&c->spec.resources.limits));
		op_jset(pg, "resources", res);
	}
	op_jset(spec, "containers", op_jpush(op_jarr(), pg));

	json_object *sc = op_jobj();
	op_jset(sc, "runAsUser", op_jint(c->spec.postgres_uid));
	op_jset(sc, "runAsGroup", op_jint(c->spec.postgres_gid));
	op_jset(sc, "fsGroup", op_jint(c->spec.postgres_gid));
	op_jset(sc, "runAsNonRoot", op_jbool(true));
	op_jset(spec, "securityContext", sc);
	op_jsets(spec, "serviceAccountName",
	      c->spec.service_account_name && *c->spec.service_account_name
		      ? c->spec.service_account_name
		      : c->metadata.name);
	op_jsets(spec, "hostname", pod);
	rc_pod_placement(c, spec); /* objects_placement.c: affinity, tolerations, nodeSelector */
	int64_t stop = c->spec.stop_delay > 0 ? c->spec.stop_delay : 1800;
	op_jset(spec, "terminationGracePeriodSeconds", op_jint(stop));
	return spec;
}

static json_object *pod_meta(const struct api_cluster *c, const char *name, int64_t serial)
{
	json_object *m = op_jobj();
	op_jsets(m, "name", name);
	op_jsets(m, "namespace", c->metadata.namespace_);
	json_object *labels = op_jobj();
	op_jsets(labels, RC_LABEL_CLUSTER, c->metadata.name);
	op_jset(m, "labels", labels);
	_cleanup_free_ char *ser = op_asprintf("%lld", (long long)serial);
	op_jsets(op_jchild(m, "annotations"), RC_ANN_NODE_SERIAL, ser);
	op_jset(m, "ownerReferences", op_jpush(op_jarr(), rc_owner_ref(c)));
	return m;
}

int rc_build_pod(const struct api_cluster *c, const struct rc_settings *s, int64_t serial,
		 const char *role, json_object **ret, struct op_err *err)
{
	if (serial <= 0)
		return op_err_set(err, -EINVAL, "instance serial %lld", (long long)serial);
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", "v1");
	op_jsets(o, "kind", "Pod");
	json_object *m = pod_meta(c, pod, serial);
	json_object *labels = json_object_object_get(m, "labels");
	op_jsets(labels, RC_LABEL_INSTANCE_NAME, pod);
	op_jsets(labels, RC_LABEL_POD_ROLE, "instance");
	if (role) {
		op_jsets(labels, RC_LABEL_INSTANCE_ROLE, role);
		op_jsets(labels, RC_LABEL_ROLE, role);
	}
	op_jsets(labels, "app.kubernetes.io/name", "postgresql");
	op_jsets(labels, "app.kubernetes.io/instance", c->metadata.name);
	op_jsets(labels, "app.kubernetes.io/component", "database");
	op_jsets(labels, "app.kubernetes.io/managed-by", "pgop");
	const char *restarted = api_kvs_get(&c->metadata.annotations, RC_ANN_RESTARTED_AT);
	if (restarted)
		op_jsets(op_jchild(m, "annotations"), RC_ANN_RESTARTED_AT, restarted);
	op_jsets(op_jchild(m, "annotations"), RC_ANN_IMAGE, rc_pg_image(c, s));
	_cleanup_free_ char *vols = rc_archive_volumes(c);
	if (*vols)
		op_jsets(op_jchild(m, "annotations"), RC_ANN_ARCHIVE_VOLUMES, vols);
	_cleanup_free_ char *tbs = rc_tablespace_names(c);
	if (*tbs)
		op_jsets(op_jchild(m, "annotations"), RC_ANN_TABLESPACES, tbs);
	_cleanup_free_ char *place = rc_placement_hash(c);
	op_jsets(op_jchild(m, "annotations"), RC_ANN_PLACEMENT_HASH, place);
	op_jset(o, "metadata", m);
	op_jset(o, "spec", pod_spec(c, s, serial, NULL, false));
	/* last: cnpg.io/podPatch sees the whole Pod (reconciler/annotations.h) */
	int r = rc_pod_patch_apply(c, &o, err);
	if (r < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

/* The bootstrap Pod's command; NULL with err set when spec.bootstrap.initdb
 * holds an argument that cannot go to initdb. */
static json_object *bootstrap_command(const struct api_cluster *c, const struct rc_settings *s,
				      int64_t serial, enum rc_job_role role, struct op_err *err)
{
	json_object *a = op_jarr();
	op_jpush(a, op_jstr("/controller/pgop"));
	op_jpush(a, op_jstr("instance"));
	op_jpush(a, op_jstr(role == RC_JOB_JOIN ? "join" : "init"));
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	identity_args(a, c, pod);
	major_args(a, c, s);
	if (c->spec.wal_storage.present) {
		op_jpush(a, op_jstr("--pg-wal"));
		op_jpush(a, op_jstr(WAL_MOUNT "/pg_wal"));
	}
	if (role == RC_JOB_JOIN) {
		_cleanup_free_ char *rw = api_service_name(c->metadata.name, API_SVC_RW);
		op_jpush(a, op_jstr("--primary-host"));
		op_jpush(a, op_jstr(rw));
		return a;
	}
	const struct api_initdb *i = &c->spec.bootstrap.initdb;
	struct api_strv flags = { 0 };
	int r = api_initdb_args(i, &flags, err);
	for (size_t k = 0; r == 0 && k < flags.n; k++) { /* one flag, one element */
		op_jpush(a, op_jstr("--initdb-flag"));
		op_jpush(a, op_jstr(flags.items[k]));
	}
	api_strv_done(&flags);
	if (r) {
		json_object_put(a);
		return NULL;
	}
	const char *db = i->database && *i->database ? i->database : "app";
	const char *owner = i->owner && *i->owner ? i->owner : db;
	op_jpush(a, op_jstr("--app-db-name"));
	op_jpush(a, op_jstr(db));
	op_jpush(a, op_jstr("--app-user"));
	op_jpush(a, op_jstr(owner));
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
			op_jpush(a, op_jstr(sql[k].flag));
			op_jpush(a, op_jstr(sql[k].v->items[j]));
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
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", "v1");
	op_jsets(o, "kind", "Pod");
	json_object *m = pod_meta(c, name, serial);
	json_object *labels = json_object_object_get(m, "labels");
	op_jsets(labels, RC_LABEL_INSTANCE_NAME, pod);
	op_jsets(labels, RC_LABEL_JOB_ROLE, rc_job_role_name(role));
	op_jset(o, "metadata", m);
	/* the first instance of a recovery restores from its source's store */
	json_object *ps = pod_spec(c, s, serial, cmd, role == RC_JOB_INITDB);
	/* a failed attempt is retried in place, with the kubelet's back-off
	 * (the Job's backoffLimit is RC_BOOTSTRAP_RESTARTS in the reconciler) */
	op_jsets(ps, "restartPolicy", "OnFailure");
	op_jset(o, "spec", ps);
	*ret = o;
	return 0;
}
