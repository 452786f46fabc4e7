/* api/plugin.h - the plugin form of backups (issue 25): CloudNativePG's
 * barman-cloud plugin (`barman-cloud.cloudnative-pg.io`, plugin-barman-cloud)
 * served by pgop itself, in process, with no sidecar.
 *
 * A Cluster names the plugin in spec.plugins (isWALArchiver: true, parameters
 * barmanObjectName and optionally serverName) and a recovery source names it
 * in externalClusters[].plugin (the same parameters); the store's settings
 * live in an ObjectStore (barmancloud.cnpg.io/v1) of the Cluster's namespace,
 * spec.configuration (the barmanObjectStore fields) and spec.retentionPolicy.
 * api_cluster_resolve_plugins turns that form into the in-tree one on the
 * decoded Cluster: the WAL archiver's store becomes spec.backup.barmanObjectStore
 * (with the ObjectStore's retentionPolicy), a plugin recovery source gets its
 * barmanObjectStore, both with the serverName parameter. Everything downstream
 * (archive_command, base backups, retention, recovery, the Secret volumes)
 * then works on one form. The reconciler resolves with its ObjectStore
 * informer, the instance manager with GETs of the ObjectStores it needs. */
#ifndef PGOP_API_PLUGIN_H
#define PGOP_API_PLUGIN_H

#include <json-c/json.h>

#include "api/cluster.h"
#include "support/err.h"

#define API_BARMAN_PLUGIN "barman-cloud.cloudnative-pg.io"
#define API_OBJECT_STORES_RESOURCE "objectstores" /* barmancloud.cnpg.io/v1 */

/* The enabled barman-cloud entry of spec.plugins (borrowed), or NULL. */
const struct api_plugin *api_cluster_barman_plugin(const struct api_cluster *c);
/* True when p is the barman-cloud plugin. */
bool api_plugin_is_barman(const struct api_plugin *p);
/* Its barmanObjectName parameter (borrowed), or NULL. */
const char *api_plugin_object_name(const struct api_plugin *p);

/* True when the Cluster archives WAL: an in-tree store with credentials
 * (api_cluster_wal_store) or the barman-cloud plugin as its WAL archiver,
 * resolved or not. archive_command is never a no-op then: an unresolved
 * ObjectStore fails it, and postgres keeps the WAL. */
bool api_cluster_archives_wal(const struct api_cluster *c);

/* Returns the ObjectStore named name in the Cluster's namespace as JSON
 * (owned by the caller of the callback), or NULL when there is none. */
typedef json_object *(*api_object_store_fn)(void *ud, const char *name);

/* Resolves the plugin form in c (see the top). A plugin naming no
 * barmanObjectName, or an ObjectStore that does not exist or does not decode,
 * is -ENOENT / -EINVAL with err naming the field and the ObjectStore; what
 * could be resolved is resolved anyway. Never replaces an in-tree
 * barmanObjectStore (admission refuses having both). */
OP_MUST_CHECK int api_cluster_resolve_plugins(struct api_cluster *c, api_object_store_fn get,
					      void *ud, struct op_err *err);

/* bootstrap.recovery.backup.name: the Backup (obj, borrowed: the object as
 * the API server returns it) becomes the recovery source, as if an
 * externalClusters[] entry named "backup/<name>" (no real entry can have a
 * slash) held the store its status records (destinationPath, endpointURL,
 * endpointCA, serverName, s3Credentials), and recoveryTarget.backupID is its
 * backupId unless one was given. -EINVAL (err names the Backup and why) when
 * it is not a completed object-store backup of this namespace. */
OP_MUST_CHECK int api_cluster_use_backup(struct api_cluster *c, json_object *obj,
					 struct op_err *err);

#endif
