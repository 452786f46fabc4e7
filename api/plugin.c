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
