/* reconciler/objects.c - desired metadata, Services, PVCs, Secrets and RBAC
 * of a Cluster (objects.h). Pods and Jobs are in objects_pod.c. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

#include "reconciler/internal.h"
#include "api/plugin.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"

#define PG_PORT 5432

static const char *const job_role_names[] = {
	[RC_JOB_INITDB] = "initdb",
	[RC_JOB_JOIN] = "join",
};

const char *rc_job_role_name(enum rc_job_role role)
{
	return (unsigned)role < OP_ARRAY_SIZE(job_role_names) ? job_role_names[role] : "unknown";
}

char *rc_job_name(const char *cluster, int64_t serial, enum rc_job_role role)
{
	return op_asprintf("%s-%lld-%s", cluster, (long long)serial, rc_job_role_name(role));
}

json_object *rc_owner_ref(const struct api_cluster *c)
{
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", "postgresql.cnpg.io/v1");
	op_jsets(o, "kind", "Cluster");
	op_jsets(o, "name", c->metadata.name);
	op_jsets(o, "uid", c->metadata.uid ? c->metadata.uid : "");
	op_jset(o, "controller", op_jbool(true));
	op_jset(o, "blockOwnerDeletion", op_jbool(true));
	return o;
}

/* metadata {name, namespace, labels {cnpg.io/cluster}, ownerReferences}. */
static json_object *meta_new(const struct api_cluster *c, const char *name)
{
	json_object *m = op_jobj();
	op_jsets(m, "name", name);
	op_jsets(m, "namespace", c->metadata.namespace_);
	json_object *labels = op_jobj();
	op_jsets(labels, RC_LABEL_CLUSTER, c->metadata.name);
	op_jset(m, "labels", labels);
	op_jset(m, "ownerReferences", op_jpush(op_jarr(), rc_owner_ref(c)));
	return m;
}

static json_object *object_new(const char *api_version, const char *kind, json_object *meta)
{
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", api_version);
	op_jsets(o, "kind", kind);
	op_jset(o, "metadata", meta);
	return o;
}

void rc_adopt(const struct api_cluster *c, json_object *obj)
{
	json_object *m = op_jchild(obj, "metadata");
	op_jsets(op_jchild(m, "labels"), RC_LABEL_CLUSTER, c->metadata.name);
	op_jset(m, "ownerReferences", op_jpush(op_jarr(), rc_owner_ref(c)));
}

/* The app.kubernetes.io labels CNPG puts on Pods and Services. */
static void app_labels(const struct api_cluster *c, json_object *labels)
{
	op_jsets(labels, "app.kubernetes.io/name", "postgresql");
	op_jsets(labels, "app.kubernetes.io/instance", c->metadata.name);
	op_jsets(labels, "app.kubernetes.io/component", "database");
	op_jsets(labels, "app.kubernetes.io/managed-by", "pgop");
}

json_object *rc_build_service(const struct api_cluster *c, enum api_service svc)
{
	_cleanup_free_ char *name = api_service_name(c->metadata.name, svc);
	json_object *m = meta_new(c, name);
	app_labels(c, json_object_object_get(m, "labels"));
	json_object *o = object_new("v1", "Service", m);
	json_object *spec = op_jchild(o, "spec");
	op_jsets(spec, "type", "ClusterIP");
	json_object *port = op_jobj();
	op_jsets(port, "name", "postgres");
	op_jsets(port, "protocol", "TCP");
	op_jset(port, "port", op_jint(PG_PORT));
	op_jsets(port, "targetPort", "postgresql");
	op_jset(spec, "ports", op_jpush(op_jarr(), port));
	json_object *sel = op_jobj();
	op_jsets(sel, RC_LABEL_CLUSTER, c->metadata.name);
	switch (svc) {
	case API_SVC_RW:
		op_jsets(sel, RC_LABEL_INSTANCE_ROLE, RC_ROLE_PRIMARY);
		break;
	case API_SVC_RO:
		op_jsets(sel, RC_LABEL_INSTANCE_ROLE, RC_ROLE_REPLICA);
		break;
	case API_SVC_R:
	case API_SVC_ANY:
		op_jsets(sel, RC_LABEL_POD_ROLE, "instance");
		break;
	}
	if (svc == API_SVC_ANY)
		op_jset(spec, "publishNotReadyAddresses", op_jbool(true));
	op_jset(spec, "selector", sel);
	return o;
}

/* One PVC of instance serial: storage st (its size at path), named name,
 * pvcRole role, cnpg.io/tablespaceName tbs (NULL: none). */
static int build_pvc(const struct api_cluster *c, int64_t serial, const struct api_storage *st,
		     const char *path, const char *name, const char *role, const char *tbs,
		     json_object **ret, struct op_err *err)
{
	const char *size = st->size ? st->size : st->pvc_request_storage;
	if (!size || !*size)
		return op_err_set(err, -EINVAL, "%s: no size given", path);
	int64_t bytes = 0;
	int r = api_quantity_parse(size, &bytes, err);
	if (r < 0)
		return op_err_prefix(err, "%s", path);
	const char *sc = st->storage_class ? st->storage_class : st->pvc_storage_class;

	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	json_object *m = meta_new(c, name);
	json_object *labels = json_object_object_get(m, "labels");
	op_jsets(labels, RC_LABEL_INSTANCE_NAME, pod);
	op_jsets(labels, RC_LABEL_PVC_ROLE, role);
	if (tbs) {
		_cleanup_free_ char *k = api_tablespace_k8s_name(tbs);
		op_jsets(labels, RC_LABEL_TABLESPACE, k);
	}
	_cleanup_free_ char *ser = op_asprintf("%lld", (long long)serial);
	op_jsets(op_jchild(m, "annotations"), RC_ANN_NODE_SERIAL, ser);
	json_object *o = object_new("v1", "PersistentVolumeClaim", m);
	json_object *spec = op_jchild(o, "spec");
	op_jset(spec, "accessModes", op_jpush(op_jarr(), op_jstr("ReadWriteOnce")));
	op_jsets(op_jchild(op_jchild(spec, "resources"), "requests"), "storage", size);
	if (sc)
		op_jsets(spec, "storageClassName", sc);
	op_jsets(spec, "volumeMode", "Filesystem");
	*ret = o;
	return 0;
}

int rc_build_pvc(const struct api_cluster *c, int64_t serial, bool wal, json_object **ret,
		 struct op_err *err)
{
	if (wal && !c->spec.wal_storage.present)
		return op_err_set(err, -EINVAL, "spec.walStorage: not configured");
	_cleanup_free_ char *name = wal ? api_wal_pvc_name(c->metadata.name, serial)
					: api_pgdata_pvc_name(c->metadata.name, serial);
	return build_pvc(c, serial, wal ? &c->spec.wal_storage : &c->spec.storage,
			 wal ? "spec.walStorage.size" : "spec.storage.size", name,
			 wal ? "PG_WAL" : "PG_DATA", NULL, ret, err);
}

int rc_build_tablespace_pvc(const struct api_cluster *c, int64_t serial, size_t i,
			    json_object **ret, struct op_err *err)
{
	if (i >= c->spec.n_tablespaces || !c->spec.tablespaces[i].name)
		return op_err_set(err, -EINVAL, "spec.tablespaces[%zu]: no such tablespace", i);
	const struct api_tablespace *t = &c->spec.tablespaces[i];
	_cleanup_free_ char *pod = api_pod_name(c->metadata.name, serial);
	_cleanup_free_ char *name = api_tablespace_pvc_name(pod, t->name);
	_cleanup_free_ char *path = op_asprintf("spec.tablespaces[%zu].storage.size", i);
	return build_pvc(c, serial, &t->storage, path, name, "PG_TABLESPACE", t->name, ret, err);
}

char *rc_tablespace_names(const struct api_cluster *c)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int e = op_buf_adds(&b, "");
	for (size_t i = 0; e == 0 && i < c->spec.n_tablespaces; i++)
		e = op_buf_addf(&b, "%s%s", i ? "," : "", c->spec.tablespaces[i].name ?: "");
	char *out = op_strdup(e == 0 ? op_buf_str(&b) : "?"); /* "?": over the cap, still differs */
	op_buf_done(&b);
	return out;
}

static const char *named_user_secret(const struct api_cluster *c, enum api_secret which)
{
	const struct api_bootstrap *b = &c->spec.bootstrap;
	if (which == API_SECRET_SUPERUSER)
		return c->spec.superuser_secret.name;
	if (b->initdb.present)
		return b->initdb.secret.name;
	if (b->pg_basebackup.present)
		return b->pg_basebackup.secret.name;
	if (b->recovery.present)
		return b->recovery.secret.name;
	return NULL;
}

char *rc_user_secret_name(const struct api_cluster *c, enum api_secret which)
{
	const char *named = named_user_secret(c, which);
	return named && *named ? op_strdup(named) : api_secret_name(c->metadata.name, which);
}

bool rc_user_secret_generated(const struct api_cluster *c, enum api_secret which)
{
	const char *named = named_user_secret(c, which);
	if (named && *named)
		return false;
	return which == API_SECRET_APP || c->spec.enable_superuser_access;
}

/* Application owner and database: spec.bootstrap.initdb.{owner,database}, default "app". */
static void app_identity(const struct api_cluster *c, const char **user, const char **db)
{
	const struct api_initdb *i = &c->spec.bootstrap.initdb;
	*db = i->database && *i->database ? i->database : "app";
	*user = i->owner && *i->owner ? i->owner : *db;
}

static void add_data(json_object *data, const char *key, const char *value)
{
	_cleanup_free_ char *b64 = op_base64_encode_str(value, strlen(value), 0);
	op_jsets(data, key, b64);
}

int rc_build_basic_auth_secret(const struct api_cluster *c, const struct rc_settings *s,
			       enum api_secret which, const char *password, json_object **ret,
			       struct op_err *err)
{
	const char *user, *db;
	app_identity(c, &user, &db);
	if (which == API_SECRET_SUPERUSER) {
		user = "postgres";
		db = "*";
	} else if (which != API_SECRET_APP) {
		return op_err_set(err, -EINVAL, "not a basic-auth secret");
	}
	const char *domain = s && s->cluster_domain ? s->cluster_domain : "cluster.local";
	const char *ns = c->metadata.namespace_;
	_cleanup_free_ char *host = api_service_name(c->metadata.name, API_SVC_RW);
	_cleanup_free_ char *name = api_secret_name(c->metadata.name, which);
	/* The URIs name a real database: the superuser connects to "postgres". */
	const char *uridb = which == API_SECRET_SUPERUSER ? "postgres" : db;
	_cleanup_free_ char *pgpass =
		op_asprintf("%s:%d:%s:%s:%s\n", host, PG_PORT, db, user, password);
	_cleanup_free_ char *uri = op_asprintf("postgresql://%s:%s@%s.%s:%d/%s", user, password,
					       host, ns, PG_PORT, uridb);
	_cleanup_free_ char *jdbc = op_asprintf("jdbc:postgresql://%s.%s:%d/%s?password=%s&user=%s",
						host, ns, PG_PORT, uridb, password, user);
	_cleanup_free_ char *furi =
		op_asprintf("postgresql://%s:%s@%s.%s.svc.%s:%d/%s", user, password, host, ns,
			    domain, PG_PORT, uridb);
	_cleanup_free_ char *fjdbc =
		op_asprintf("jdbc:postgresql://%s.%s.svc.%s:%d/%s?password=%s&user=%s", host, ns,
			    domain, PG_PORT, uridb, password, user);
	_cleanup_free_ char *port = op_asprintf("%d", PG_PORT);
	const struct {
		const char *k, *v;
	} kv[] = {
		{ "username", user }, { "user", user },	    { "password", password },
		{ "dbname", db },     { "host", host },	    { "port", port },
		{ "pgpass", pgpass }, { "uri", uri },	    { "jdbc-uri", jdbc },
		{ "fqdn-uri", furi }, { "fqdn-jdbc-uri", fjdbc },
	};
	json_object *m = meta_new(c, name);
	json_object *labels = json_object_object_get(m, "labels");
	op_jsets(labels, RC_LABEL_USER_TYPE, which == API_SECRET_SUPERUSER ? "superuser" : "app");
	op_jsets(labels, RC_LABEL_RELOAD, "true");
	json_object *o = object_new("v1", "Secret", m);
	op_jsets(o, "type", "kubernetes.io/basic-auth");
	json_object *data = op_jchild(o, "data");
	for (size_t i = 0; i < OP_ARRAY_SIZE(kv); i++) {
		add_data(data, kv[i].k, kv[i].v);
	}
	*ret = o;
	return 0;
}

int rc_random_password(size_t n, char **ret, struct op_err *err)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	if (n == 0 || n > 1024)
		return op_err_set(err, -EINVAL, "password length %zu out of range", n);
	char *p = op_malloc(n + 1);
	size_t i = 0;
	while (i < n) {
		unsigned char rnd[64];
		int r = gnutls_rnd(GNUTLS_RND_KEY, rnd, sizeof(rnd));
		if (r < 0) {
			free(p);
			return op_err_set(err, -EIO, "gnutls_rnd: %s", gnutls_strerror(r));
		}
		for (size_t j = 0; j < sizeof(rnd) && i < n; j++)
			if (rnd[j] < 248) /* 248 = 4 * 62: no modulo bias */
				p[i++] = alnum[rnd[j] % 62];
	}
	p[n] = '\0';
	*ret = p;
	return 0;
}

static const char *sa_name(const struct api_cluster *c)
{
	return c->spec.service_account_name && *c->spec.service_account_name
		       ? c->spec.service_account_name
		       : c->metadata.name;
}

json_object *rc_build_service_account(const struct api_cluster *c)
{
	return object_new("v1", "ServiceAccount", meta_new(c, sa_name(c)));
}

static json_object *rule(const char *group, const char *const *resources, size_t nres,
			 const char *const *verbs, size_t nverbs, const char *const *names,
			 size_t nnames)
{
	json_object *r = op_jobj();
	op_jset(r, "apiGroups", op_jpush(op_jarr(), op_jstr(group)));
	json_object *a = op_jarr();
	for (size_t i = 0; i < nres; i++)
		op_jpush(a, op_jstr(resources[i]));
	op_jset(r, "resources", a);
	a = op_jarr();
	for (size_t i = 0; i < nverbs; i++)
		op_jpush(a, op_jstr(verbs[i]));
	op_jset(r, "verbs", a);
	if (nnames) {
		a = op_jarr();
		for (size_t i = 0; i < nnames; i++)
			op_jpush(a, op_jstr(names[i]));
		op_jset(r, "resourceNames", a);
	}
	return r;
}

json_object *rc_build_role(const struct api_cluster *c)
{
	const char *cn = c->metadata.name;
	json_object *o = object_new("rbac.authorization.k8s.io/v1", "Role", meta_new(c, cn));
	json_object *rules = op_jarr();
	static const char *const clusters[] = { "clusters" };
	static const char *const status[] = { "clusters/status" };
	static const char *const get_watch[] = { "get", "watch" };
	static const char *const get_patch[] = { "get", "patch" };
	const char *names[] = { cn };
	/* What the instance manager calls (instance/cluster.c, run.c): GET and a
	 * metadata.name watch of its Cluster, merge patches of its status. No
	 * Secrets: it reads them from its volumes (never <c>-ca's ca.key through
	 * the API), and it records no Events and takes no Lease. The operator must
	 * hold every permission it grants here (RBAC escalation check): the chart's
	 * reconciler rules (charts/pgop/templates/rbac.yaml) are its upper bound. */
	op_jpush(rules, rule("postgresql.cnpg.io", clusters, 1, get_watch, 2, names, 1));
	op_jpush(rules, rule("postgresql.cnpg.io", status, 1, get_patch, 2, names, 1));
	/* the plugin form (api/plugin.h): GET of the ObjectStores it names, which
	 * the instance manager resolves itself (instance/cluster.c) */
	const char *stores[1 + 64];
	size_t ns = 0;
	const struct api_plugin *p = api_cluster_barman_plugin(c);
	if (p && p->is_wal_archiver && api_plugin_object_name(p))
		stores[ns++] = api_plugin_object_name(p);
	for (size_t i = 0; i < c->spec.n_external_clusters && ns < OP_ARRAY_SIZE(stores); i++) {
		const struct api_plugin *x = c->spec.external_clusters[i].plugin;
		if (api_plugin_is_barman(x) && api_plugin_object_name(x))
			stores[ns++] = api_plugin_object_name(x);
	}
	static const char *const get[] = { "get" };
	/* bootstrap.recovery.backup.name: GET of that Backup (instance/cluster.c) */
	const struct api_recovery *rec = &c->spec.bootstrap.recovery;
	static const char *const backups[] = { "backups" };
	const char *bname[] = { rec->backup_name };
	if (rec->present && rec->backup_name)
		op_jpush(rules, rule("postgresql.cnpg.io", backups, 1, get, 1, bname, 1));
	static const char *const objectstores[] = { API_OBJECT_STORES_RESOURCE };
	if (ns)
		op_jpush(rules, rule("barmancloud.cnpg.io", objectstores, 1, get, 1, stores, ns));
	op_jset(o, "rules", rules);
	return o;
}

json_object *rc_build_role_binding(const struct api_cluster *c)
{
	const char *cn = c->metadata.name;
	json_object *o =
		object_new("rbac.authorization.k8s.io/v1", "RoleBinding", meta_new(c, cn));
	json_object *subj = op_jobj();
	op_jsets(subj, "kind", "ServiceAccount");
	op_jsets(subj, "name", sa_name(c));
	op_jsets(subj, "namespace", c->metadata.namespace_);
	op_jset(o, "subjects", op_jpush(op_jarr(), subj));
	json_object *ref = op_jobj();
	op_jsets(ref, "apiGroup", "rbac.authorization.k8s.io");
	op_jsets(ref, "kind", "Role");
	op_jsets(ref, "name", cn);
	op_jset(o, "roleRef", ref);
	return o;
}

json_object *rc_kvs_object(const struct api_kvs *kvs)
{
	json_object *o = op_jobj();
	for (size_t i = 0; i < kvs->n; i++)
		op_jsets(o, kvs->items[i].key, kvs->items[i].value);
	return o;
}
