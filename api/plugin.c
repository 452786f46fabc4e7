/* api/plugin.c - the barman-cloud plugin form resolved into the in-tree one
 * (api/plugin.h). */
#include <errno.h>
#include <string.h>

#include "api/backup.h"
#include "api/decode.h"
#include "api/plugin.h"
#include "support/alloc.h"
#include "support/json.h"

bool api_plugin_is_barman(const struct api_plugin *p)
{
	return p && p->name && strcmp(p->name, API_BARMAN_PLUGIN) == 0;
}

const struct api_plugin *api_cluster_barman_plugin(const struct api_cluster *c)
{
	for (size_t i = 0; i < c->spec.n_plugins; i++) {
		const struct api_plugin *p = &c->spec.plugins[i];
		if (p->enabled && api_plugin_is_barman(p))
			return p;
	}
	return NULL;
}

bool api_cluster_archives_wal(const struct api_cluster *c)
{
	const struct api_plugin *p = api_cluster_barman_plugin(c);
	return api_cluster_wal_store(c) || (p && p->is_wal_archiver);
}

const char *api_plugin_object_name(const struct api_plugin *p)
{
	return p ? api_kvs_get(&p->parameters, "barmanObjectName") : NULL;
}

/* The ObjectStore plugin p names, decoded: its configuration (*ret_store,
 * owned) with the serverName parameter, and its retentionPolicy
 * (*ret_retention, owned, may be NULL). field: the plugin's path, for errors. */
static int object_store(const struct api_plugin *p, const char *field, api_object_store_fn get,
			void *ud, struct api_barman_store **ret_store, char **ret_retention,
			struct op_err *err)
{
	const char *name = api_plugin_object_name(p);
	if (!name || !*name)
		return op_err_set(err, -EINVAL, "%s.parameters.barmanObjectName: required by the "
				  "%s plugin", field, API_BARMAN_PLUGIN);
	json_object *os = get(ud, name);
	if (!os)
		return op_err_set(err, -ENOENT, "%s: ObjectStore %s does not exist", field, name);
	_cleanup_(api_object_store_freep) struct api_object_store *o = NULL;
	struct op_err de = OP_ERR_INIT;
	int r = api_object_store_decode(os, NULL, &o, &de);
	json_object_put(os);
	if (r < 0 || !o->configuration)
		return op_err_set(err, -EINVAL, "%s: ObjectStore %s: %s", field, name,
				  r < 0 ? de.msg : "spec.configuration is missing");
	struct api_barman_store *s = TAKE_PTR(o->configuration);
	char *retention = TAKE_PTR(o->retention_policy);
	const char *server = api_kvs_get(&p->parameters, "serverName");
	if (server && *server) {
		free(s->server_name);
		s->server_name = op_strdup(server);
	}
	*ret_store = s;
	*ret_retention = retention;
	return 0;
}

/* The Cluster's WAL archiver plugin into spec.backup. */
static int resolve_archiver(struct api_cluster *c, api_object_store_fn get, void *ud,
			    struct op_err *err)
{
	const struct api_plugin *p = api_cluster_barman_plugin(c);
	struct api_backup *b = &c->spec.backup;
	if (!p || !p->is_wal_archiver || (c->spec.has_backup && b->barman && !b->barman_from_plugin))
		return 0;
	struct api_barman_store *s = NULL;
	char *retention = NULL;
	int r = object_store(p, "spec.plugins", get, ud, &s, &retention, err);
	if (r)
		return r;
	if (!c->spec.has_backup) {
		c->spec.has_backup = true;
		b->target = op_strdup("prefer-standby");
	}
	api_barman_store_free(b->barman); /* an earlier resolution's */
	b->barman = s;
	if (retention && (!b->retention_policy || b->barman_from_plugin)) {
		free(b->retention_policy);
		b->retention_policy = retention;
	} else {
		free(retention);
	}
	b->barman_from_plugin = true;
	return 0;
}

int api_cluster_resolve_plugins(struct api_cluster *c, api_object_store_fn get, void *ud,
				struct op_err *err)
{
	int ret = resolve_archiver(c, get, ud, err);
	for (size_t i = 0; i < c->spec.n_external_clusters; i++) {
		struct api_external_cluster *e = &c->spec.external_clusters[i];
		if ((e->barman_object_store && !e->store_from_plugin) ||
		    !api_plugin_is_barman(e->plugin))
			continue;
		_cleanup_free_ char *field = op_asprintf("spec.externalClusters[%zu].plugin", i);
		char *retention = NULL;
		struct api_barman_store *s = NULL;
		struct op_err e2 = OP_ERR_INIT;
		int r = object_store(e->plugin, field, get, ud, &s, &retention, ret ? &e2 : err);
		free(retention);
		if (r == 0) {
			api_barman_store_free(e->barman_object_store);
			e->barman_object_store = s;
			e->store_from_plugin = true;
		}
		if (r && !ret)
			ret = r;
	}
	return ret;
}

static void ref_copy(struct api_secret_ref *dst, const struct api_secret_ref *src)
{
	dst->name = src->name ? op_strdup(src->name) : NULL;
	dst->key = src->key ? op_strdup(src->key) : NULL;
}

/* The store a completed Backup's status records (owned). */
static struct api_barman_store *store_of(const struct api_backup_status *st)
{
	struct api_barman_store *s = op_calloc(1, sizeof(*s));
	s->destination_path = op_strdup(st->destination_path);
	s->endpoint_url = st->endpoint_url ? op_strdup(st->endpoint_url) : NULL;
	s->server_name = st->server_name ? op_strdup(st->server_name) : NULL;
	ref_copy(&s->endpoint_ca, &st->endpoint_ca);
	s->has_s3_credentials = st->has_s3_credentials;
	ref_copy(&s->s3.access_key_id, &st->s3.access_key_id);
	ref_copy(&s->s3.secret_access_key, &st->s3.secret_access_key);
	ref_copy(&s->s3.region, &st->s3.region);
	ref_copy(&s->s3.session_token, &st->s3.session_token);
	s->s3.inherit_from_iam_role = st->s3.inherit_from_iam_role;
	return s;
}

int api_cluster_use_backup(struct api_cluster *c, json_object *obj, struct op_err *err)
{
	struct api_recovery *rec = &c->spec.bootstrap.recovery;
	const char *name = rec->backup_name;
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *b = NULL;
	struct op_err de = OP_ERR_INIT;
	if (api_backup_obj_decode(obj, NULL, &b, &de) < 0)
		return op_err_set(err, -EINVAL, "spec.bootstrap.recovery.backup.name: Backup %s: %s",
				  name, de.msg);
	const struct api_backup_status *st = &b->status;
	if (st->phase != API_BACKUP_PHASE_COMPLETED || !st->backup_id || !st->destination_path)
		return op_err_set(err, -EINVAL, "spec.bootstrap.recovery.backup.name: Backup %s is "
				  "not a completed object-store backup (phase %s)", name,
				  api_backup_phase_name(st->phase));
	if (!st->server_name && !b->spec.cluster_name)
		return op_err_set(err, -EINVAL, "spec.bootstrap.recovery.backup.name: Backup %s "
				  "names no server", name);
	struct api_barman_store *s = store_of(st);
	if (!s->server_name) /* CloudNativePG: the Cluster the Backup was taken of */
		s->server_name = op_strdup(b->spec.cluster_name);
	size_t n = c->spec.n_external_clusters;
	c->spec.external_clusters = op_realloc(c->spec.external_clusters,
					       (n + 1) * sizeof(*c->spec.external_clusters));
	struct api_external_cluster *e = &c->spec.external_clusters[n];
	memset(e, 0, sizeof(*e));
	e->name = op_asprintf("backup/%s", name);
	e->barman_object_store = s;
	c->spec.n_external_clusters = n + 1;
	free(rec->source);
	rec->source = op_strdup(e->name);
	if (!rec->target.backup_id)
		rec->target.backup_id = op_strdup(st->backup_id);
	return 0;
}
