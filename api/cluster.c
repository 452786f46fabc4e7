/* api/cluster.c - decode a Cluster object into struct api_cluster (cluster.h). */
#include "api/cluster.h"

#include <errno.h>
#include <string.h>

#include "api/decode.h"
#include "support/alloc.h"
#include "support/json.h"


static void dec_metadata(struct api_dec *d, json_object *o, const char *p, struct api_metadata *m)
{
	STR(o, p, "name", &m->name);
	STR(o, p, "namespace", &m->namespace_);
	STR(o, p, "uid", &m->uid);
	STR(o, p, "resourceVersion", &m->resource_version);
	I64(o, p, "generation", &m->generation);
	api_dec_kvs(d, o, p, "labels", &m->labels, false);
	api_dec_kvs(d, o, p, "annotations", &m->annotations, false);
}

static void dec_secret_ref(struct api_dec *d, json_object *o, const char *p,
			   struct api_secret_ref *r)
{
	STR(o, p, "name", &r->name);
	STR(o, p, "key", &r->key);
}

static void dec_pvc_template(struct api_dec *d, json_object *o, const char *p,
			     struct api_storage *s)
{
	s->has_pvc_template = true;
	STR(o, p, "storageClassName", &s->pvc_storage_class);
	json_object *res = api_dec_obj(d, o, p, "resources");
	if (!res)
		return;
	_cleanup_free_ char *rp = api_dec_join(p, "resources");
	json_object *req = api_dec_obj(d, res, rp, "requests");
	if (!req)
		return;
	_cleanup_free_ char *qp = api_dec_join(rp, "requests");
	json_object *v = NULL;
	if (json_object_object_get_ex(req, "storage", &v) && v &&
	    (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
		free(s->pvc_request_storage);
		s->pvc_request_storage = op_strdup(json_object_get_string(v));
	} else {
		STR(req, qp, "storage", &s->pvc_request_storage);
	}
}

static void dec_storage(struct api_dec *d, json_object *o, const char *p, struct api_storage *s)
{
	s->present = true;
	STR(o, p, "size", &s->size);
	STR(o, p, "storageClass", &s->storage_class);
	BOOL(o, p, "resizeInUseVolumes", &s->resize_in_use_volumes);
	SUB(o, p, "pvcTemplate", dec_pvc_template, s);
}

static void dec_initdb(struct api_dec *d, json_object *o, const char *p, struct api_initdb *x)
{
	x->present = true;
	STR(o, p, "database", &x->database);
	STR(o, p, "owner", &x->owner);
	STR(o, p, "encoding", &x->encoding);
	STR(o, p, "localeCollate", &x->locale_collate);
	STR(o, p, "localeCType", &x->locale_ctype);
	STR(o, p, "locale", &x->locale);
	STR(o, p, "localeProvider", &x->locale_provider);
	STR(o, p, "icuLocale", &x->icu_locale);
	STR(o, p, "builtinLocale", &x->builtin_locale);
	SUB(o, p, "secret", dec_secret_ref, &x->secret);
	BOOL(o, p, "dataChecksums", &x->data_checksums);
	I64(o, p, "walSegmentSize", &x->wal_segment_size);
	api_dec_strv(d, o, p, "options", &x->options);
	api_dec_strv(d, o, p, "postInitSQL", &x->post_init_sql);
	api_dec_strv(d, o, p, "postInitApplicationSQL", &x->post_init_application_sql);
	api_dec_strv(d, o, p, "postInitTemplateSQL", &x->post_init_template_sql);
	json_object *imp = api_dec_obj(d, o, p, "import");
	if (imp) {
		_cleanup_free_ char *ip = api_dec_join(p, "import");
		STR(imp, ip, "type", &x->import_type);
		if (!x->import_type)
			x->import_type = op_strdup("");
	}
}

static void dec_pg_basebackup(struct api_dec *d, json_object *o, const char *p,
			      struct api_pg_basebackup *x)
{
	x->present = true;
	STR(o, p, "source", &x->source);
	STR(o, p, "database", &x->database);
	STR(o, p, "owner", &x->owner);
	SUB(o, p, "secret", dec_secret_ref, &x->secret);
}

static void dec_recovery_target(struct api_dec *d, json_object *o, const char *p,
				struct api_recovery *r)
{
	struct api_recovery_target *t = &r->target;
	r->has_recovery_target = true;
	STR(o, p, "backupID", &t->backup_id);
	STR(o, p, "targetTLI", &t->target_tli);
	STR(o, p, "targetXID", &t->target_xid);
	STR(o, p, "targetName", &t->target_name);
	STR(o, p, "targetLSN", &t->target_lsn);
	STR(o, p, "targetTime", &t->target_time);
	t->has_target_immediate = BOOL(o, p, "targetImmediate", &t->target_immediate);
	BOOL(o, p, "exclusive", &t->exclusive);
}

static void dec_recovery(struct api_dec *d, json_object *o, const char *p, struct api_recovery *x)
{
	x->present = true;
	STR(o, p, "source", &x->source);
	STR(o, p, "database", &x->database);
	STR(o, p, "owner", &x->owner);
	SUB(o, p, "secret", dec_secret_ref, &x->secret);
	json_object *b = api_dec_obj(d, o, p, "backup");
	if (b) {
		_cleanup_free_ char *bp = api_dec_join(p, "backup");
		STR(b, bp, "name", &x->backup_name);
		SUB(b, bp, "endpointCA", dec_secret_ref, &x->backup_endpoint_ca);
	}
	x->has_volume_snapshots = api_dec_obj(d, o, p, "volumeSnapshots") != NULL;
	SUB(o, p, "recoveryTarget", dec_recovery_target, x);
}

static void dec_bootstrap(struct api_dec *d, json_object *o, const char *p, struct api_bootstrap *b)
{
	SUB(o, p, "initdb", dec_initdb, &b->initdb);
	SUB(o, p, "pg_basebackup", dec_pg_basebackup, &b->pg_basebackup);
	SUB(o, p, "recovery", dec_recovery, &b->recovery);
}

static void dec_synchronous(struct api_dec *d, json_object *o, const char *p,
			    struct api_synchronous *s)
{
	s->present = true;
	STR(o, p, "method", &s->method);
	I64(o, p, "number", &s->number);
	I64(o, p, "maxStandbyNamesFromCluster", &s->max_standby_names_from_cluster);
	api_dec_strv(d, o, p, "standbyNamesPre", &s->standby_names_pre);
	api_dec_strv(d, o, p, "standbyNamesPost", &s->standby_names_post);
	STR(o, p, "dataDurability", &s->data_durability);
	BOOL(o, p, "failoverQuorum", &s->failover_quorum);
}

static void dec_postgresql(struct api_dec *d, json_object *o, const char *p,
			   struct api_postgresql *pg)
{
	api_dec_kvs(d, o, p, "parameters", &pg->parameters, false);
	api_dec_strv(d, o, p, "pg_hba", &pg->pg_hba);
	api_dec_strv(d, o, p, "pg_ident", &pg->pg_ident);
	api_dec_strv(d, o, p, "shared_preload_libraries", &pg->shared_preload_libraries);
	SUB(o, p, "synchronous", dec_synchronous, &pg->synchronous);
	BOOL(o, p, "enableAlterSystem", &pg->enable_alter_system);
}

static void dec_ha(struct api_dec *d, json_object *o, const char *p, struct api_replication_slots *r)
{
	BOOL(o, p, "enabled", &r->ha_enabled);
	STR(o, p, "slotPrefix", &r->slot_prefix);
}

static void dec_sync_replicas(struct api_dec *d, json_object *o, const char *p,
			      struct api_replication_slots *r)
{
	BOOL(o, p, "enabled", &r->sync_replicas_enabled);
	api_dec_strv(d, o, p, "excludePatterns", &r->sync_exclude_patterns);
}

static void dec_slots(struct api_dec *d, json_object *o, const char *p,
		      struct api_replication_slots *r)
{
	SUB(o, p, "highAvailability", dec_ha, r);
	I64(o, p, "updateInterval", &r->update_interval);
	SUB(o, p, "synchronizeReplicas", dec_sync_replicas, r);
}

static void dec_certificates(struct api_dec *d, json_object *o, const char *p,
			     struct api_certificates *c)
{
	STR(o, p, "serverCASecret", &c->server_ca_secret);
	STR(o, p, "serverTLSSecret", &c->server_tls_secret);
	STR(o, p, "replicationTLSSecret", &c->replication_tls_secret);
	STR(o, p, "clientCASecret", &c->client_ca_secret);
	api_dec_strv(d, o, p, "serverAltDNSNames", &c->server_alt_dns_names);
}

static void dec_s3_credentials(struct api_dec *d, json_object *o, const char *p,
			       struct api_barman_store *b)
{
	struct api_s3_credentials *s3 = &b->s3;
	b->has_s3_credentials = true;
	SUB(o, p, "accessKeyId", dec_secret_ref, &s3->access_key_id);
	SUB(o, p, "secretAccessKey", dec_secret_ref, &s3->secret_access_key);
	SUB(o, p, "region", dec_secret_ref, &s3->region);
	SUB(o, p, "sessionToken", dec_secret_ref, &s3->session_token);
	BOOL(o, p, "inheritFromIAMRole", &s3->inherit_from_iam_role);
}

static void dec_barman_wal(struct api_dec *d, json_object *o, const char *p,
			   struct api_barman_wal *w)
{
	STR(o, p, "compression", &w->compression);
	STR(o, p, "encryption", &w->encryption);
	I64(o, p, "maxParallel", &w->max_parallel);
	api_dec_strv(d, o, p, "archiveAdditionalCommandArgs", &w->archive_additional_command_args);
	api_dec_strv(d, o, p, "restoreAdditionalCommandArgs", &w->restore_additional_command_args);
}

static void dec_barman_data(struct api_dec *d, json_object *o, const char *p,
			    struct api_barman_data *x)
{
	STR(o, p, "compression", &x->compression);
	STR(o, p, "encryption", &x->encryption);
	I64(o, p, "jobs", &x->jobs);
	BOOL(o, p, "immediateCheckpoint", &x->immediate_checkpoint);
	api_dec_strv(d, o, p, "additionalCommandArgs", &x->additional_command_args);
	api_dec_strv(d, o, p, "restoreAdditionalCommandArgs", &x->restore_additional_command_args);
}

/* obj.key as a barman object store: *ret (owned) allocated when present. */
static void dec_barman_store(struct api_dec *d, json_object *obj, const char *path,
			     const char *key, struct api_barman_store **ret)
{
	json_object *o = api_dec_obj(d, obj, path, key);
	if (!o)
		return;
	_cleanup_free_ char *p = api_dec_join(path, key);
	struct api_barman_store *b = *ret = op_calloc(1, sizeof(*b));
	STR(o, p, "destinationPath", &b->destination_path);
	STR(o, p, "endpointURL", &b->endpoint_url);
	SUB(o, p, "endpointCA", dec_secret_ref, &b->endpoint_ca);
	STR(o, p, "serverName", &b->server_name);
	SUB(o, p, "s3Credentials", dec_s3_credentials, b);
	b->has_azure_credentials = api_dec_obj(d, o, p, "azureCredentials") != NULL;
	b->has_google_credentials = api_dec_obj(d, o, p, "googleCredentials") != NULL;
	SUB(o, p, "wal", dec_barman_wal, &b->wal);
	SUB(o, p, "data", dec_barman_data, &b->data);
	api_dec_kvs(d, o, p, "tags", &b->tags, false);
	api_dec_kvs(d, o, p, "historyTags", &b->history_tags, false);
}

/* A plugin entry (spec.plugins[i], externalClusters[i].plugin). */
static void dec_plugin(struct api_dec *d, json_object *o, const char *p, struct api_plugin *x)
{
	x->enabled = true;
	STR(o, p, "name", &x->name);
	BOOL(o, p, "enabled", &x->enabled);
	BOOL(o, p, "isWALArchiver", &x->is_wal_archiver);
	api_dec_kvs(d, o, p, "parameters", &x->parameters, false);
}

static void dec_backup(struct api_dec *d, json_object *o, const char *p, struct api_cluster_spec *s)
{
	struct api_backup *b = &s->backup;
	s->has_backup = true;
	dec_barman_store(d, o, p, "barmanObjectStore", &b->barman);
	STR(o, p, "retentionPolicy", &b->retention_policy);
	STR(o, p, "target", &b->target);
	if (!b->target)
		b->target = op_strdup("prefer-standby");
	b->has_volume_snapshot = api_dec_obj(d, o, p, "volumeSnapshot") != NULL;
}

/* spec[key]: an array of objects, decoded one by one by fn into a new array
 * (owned by the caller) of elements of size bytes; an element that is not an
 * object is an error at its index. *ret_n counts the decoded elements. */
static void *dec_obj_array(struct api_dec *d, json_object *spec, const char *p, const char *key,
			   size_t size, size_t *ret_n,
			   void (*fn)(struct api_dec *, json_object *, const char *, void *))
{
	json_object *a = api_dec_arr(d, spec, p, key);
	if (!a)
		return NULL;
	_cleanup_free_ char *ap = api_dec_join(p, key);
	size_t n = json_object_array_length(a);
	char *v = op_calloc(n ? n : 1, size);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		_cleanup_free_ char *ep = api_dec_index(ap, i);
		if (!e || !json_object_is_type(e, json_type_object)) {
			api_dec_error(d, ep, "expected object, got %s", op_json_type_name(e));
			continue;
		}
		fn(d, e, ep, v + (*ret_n)++ * size);
	}
	return v;
}

static void dec_plugin_elem(struct api_dec *d, json_object *o, const char *p, void *x)
{
	dec_plugin(d, o, p, x);
}

static void dec_plugins(struct api_dec *d, json_object *spec, const char *p,
			struct api_cluster_spec *s)
{
	s->plugins = dec_obj_array(d, spec, p, "plugins", sizeof(*s->plugins), &s->n_plugins,
				   dec_plugin_elem);
}

static void dec_ext_plugin(struct api_dec *d, json_object *o, const char *p,
			   struct api_external_cluster *e)
{
	e->plugin = op_calloc(1, sizeof(*e->plugin));
	dec_plugin(d, o, p, e->plugin);
}

static void dec_external_cluster(struct api_dec *d, json_object *o, const char *p,
				 struct api_external_cluster *e)
{
	STR(o, p, "name", &e->name);
	api_dec_kvs(d, o, p, "connectionParameters", &e->connection_parameters, false);
	SUB(o, p, "sslCert", dec_secret_ref, &e->ssl_cert);
	SUB(o, p, "sslKey", dec_secret_ref, &e->ssl_key);
	SUB(o, p, "sslRootCert", dec_secret_ref, &e->ssl_root_cert);
	SUB(o, p, "password", dec_secret_ref, &e->password);
	dec_barman_store(d, o, p, "barmanObjectStore", &e->barman_object_store);
	SUB(o, p, "plugin", dec_ext_plugin, e);
}

static void dec_external_cluster_elem(struct api_dec *d, json_object *o, const char *p, void *x)
{
	dec_external_cluster(d, o, p, x);
}

static void dec_external_clusters(struct api_dec *d, json_object *spec, const char *p,
				  struct api_cluster_spec *s)
{
	s->external_clusters = dec_obj_array(d, spec, p, "externalClusters",
					     sizeof(*s->external_clusters),
					     &s->n_external_clusters, dec_external_cluster_elem);
}

static void dec_resources(struct api_dec *d, json_object *o, const char *p,
			  struct api_resources *r)
{
	api_dec_kvs(d, o, p, "requests", &r->requests, true);
	api_dec_kvs(d, o, p, "limits", &r->limits, true);
}

static void dec_image_catalog(struct api_dec *d, json_object *o, const char *p,
			      struct api_cluster_spec *s)
{
	s->has_image_catalog_ref = true;
	STR(o, p, "name", &s->image_catalog_name);
	I64(o, p, "major", &s->image_catalog_major);
}

static void dec_key_ref_elem(struct api_dec *d, json_object *o, const char *p, void *x)
{
	dec_secret_ref(d, o, p, x);
}

static void dec_monitoring_tls(struct api_dec *d, json_object *o, const char *p,
			       struct api_monitoring *m)
{
	BOOL(o, p, "enabled", &m->tls_enabled);
}

static void dec_monitoring(struct api_dec *d, json_object *o, const char *p,
			   struct api_monitoring *m)
{
	BOOL(o, p, "disableDefaultQueries", &m->disable_default_queries);
	BOOL(o, p, "enablePodMonitor", &m->enable_pod_monitor);
	STR(o, p, "metricsQueriesTTL", &m->metrics_queries_ttl);
	SUB(o, p, "tls", dec_monitoring_tls, m);
	m->custom_configmaps = dec_obj_array(d, o, p, "customQueriesConfigMap",
					     sizeof(*m->custom_configmaps),
					     &m->n_custom_configmaps, dec_key_ref_elem);
	m->custom_secrets = dec_obj_array(d, o, p, "customQueriesSecret",
					  sizeof(*m->custom_secrets), &m->n_custom_secrets,
					  dec_key_ref_elem);
}

static void dec_tablespace_owner(struct api_dec *d, json_object *o, const char *p, void *x)
{
	struct api_tablespace *t = x;
	STR(o, p, "name", &t->owner);
}

static void dec_tablespace_elem(struct api_dec *d, json_object *o, const char *p, void *x)
{
	struct api_tablespace *t = x;
	STR(o, p, "name", &t->name);
	t->storage.resize_in_use_volumes = true;
	SUB(o, p, "storage", dec_storage, &t->storage);
	SUB(o, p, "owner", dec_tablespace_owner, t);
	BOOL(o, p, "temporary", &t->temporary);
}

static void dec_spec(struct api_dec *d, json_object *o, const char *p, struct api_cluster_spec *s)
{
	I64(o, p, "instances", &s->instances);
	STR(o, p, "imageName", &s->image_name);
	SUB(o, p, "imageCatalogRef", dec_image_catalog, s);
	STR(o, p, "imagePullPolicy", &s->image_pull_policy);
	SUB(o, p, "postgresql", dec_postgresql, &s->postgresql);
	I64(o, p, "minSyncReplicas", &s->min_sync_replicas);
	I64(o, p, "maxSyncReplicas", &s->max_sync_replicas);
	SUB(o, p, "bootstrap", dec_bootstrap, &s->bootstrap);
	SUB(o, p, "storage", dec_storage, &s->storage);
	SUB(o, p, "walStorage", dec_storage, &s->wal_storage);
	SUB(o, p, "superuserSecret", dec_secret_ref, &s->superuser_secret);
	BOOL(o, p, "enableSuperuserAccess", &s->enable_superuser_access);
	STR(o, p, "primaryUpdateStrategy", &s->primary_update_strategy);
	STR(o, p, "primaryUpdateMethod", &s->primary_update_method);
	SUB(o, p, "replicationSlots", dec_slots, &s->replication_slots);
	SUB(o, p, "certificates", dec_certificates, &s->certificates);
	dec_external_clusters(d, o, p, s);
	s->tablespaces = dec_obj_array(d, o, p, "tablespaces", sizeof(*s->tablespaces),
				       &s->n_tablespaces, dec_tablespace_elem);
	SUB(o, p, "resources", dec_resources, &s->resources);
	SUB(o, p, "affinity", api_dec_affinity, &s->affinity);
	s->topology_spread_constraints =
		api_dec_copy(d, o, p, "topologySpreadConstraints", json_type_array);
	SUB(o, p, "nodeMaintenanceWindow", api_dec_node_maintenance, &s->node_maintenance);
	I64(o, p, "postgresUID", &s->postgres_uid);
	I64(o, p, "postgresGID", &s->postgres_gid);
	STR(o, p, "logLevel", &s->log_level);
	BOOL(o, p, "enablePDB", &s->enable_pdb);
	I64(o, p, "startDelay", &s->start_delay);
	I64(o, p, "stopDelay", &s->stop_delay);
	I64(o, p, "smartShutdownTimeout", &s->smart_shutdown_timeout);
	I64(o, p, "switchoverDelay", &s->switchover_delay);
	I64(o, p, "failoverDelay", &s->failover_delay);
	I64(o, p, "livenessProbeTimeout", &s->liveness_probe_timeout);
	STR(o, p, "serviceAccountName", &s->service_account_name);
	SUB(o, p, "backup", dec_backup, s);
	dec_plugins(d, o, p, s);
	SUB(o, p, "monitoring", dec_monitoring, &s->monitoring);
}

static void dec_instances_status(struct api_dec *d, json_object *o, const char *p,
				 struct api_cluster_status *st)
{
	st->has_instances_status = true;
	api_dec_strv(d, o, p, "healthy", &st->healthy);
}

static void dec_status(struct api_dec *d, json_object *o, const char *p,
		       struct api_cluster_status *st)
{
	STR(o, p, "phase", &st->phase);
	STR(o, p, "phaseReason", &st->phase_reason);
	I64(o, p, "instances", &st->instances);
	I64(o, p, "readyInstances", &st->ready_instances);
	STR(o, p, "currentPrimary", &st->current_primary);
	STR(o, p, "targetPrimary", &st->target_primary);
	I64(o, p, "latestGeneratedNode", &st->latest_generated_node);
	I64(o, p, "timelineID", &st->timeline_id);
	api_dec_strv(d, o, p, "instanceNames", &st->instance_names);
	SUB(o, p, "instancesStatus", dec_instances_status, st);
	STR(o, p, "firstRecoverabilityPoint", &st->first_recoverability_point);
	STR(o, p, "lastSuccessfulBackup", &st->last_successful_backup);
	STR(o, p, "lastFailedBackup", &st->last_failed_backup);
}

static void set_crd_defaults(struct api_cluster_spec *s)
{
	s->instances = 1;
	s->storage.resize_in_use_volumes = true;
	s->wal_storage.resize_in_use_volumes = true;
	s->postgresql.synchronous.max_standby_names_from_cluster = -1;
	s->replication_slots.ha_enabled = true;
	s->replication_slots.update_interval = 30;
	s->replication_slots.sync_replicas_enabled = true;
	s->affinity.enable_pod_anti_affinity = true;
	s->postgres_uid = 26;
	s->postgres_gid = 26;
	s->enable_pdb = true;
	s->node_maintenance.reuse_pvc = true;
	s->start_delay = 3600;
	s->stop_delay = 1800;
	s->smart_shutdown_timeout = 180;
	s->switchover_delay = 3600;
}

int api_cluster_decode(json_object *obj, struct api_errors *errs, struct api_cluster **ret_cluster,
		       struct op_err *err)
{
	struct api_dec dd = { .errs = errs }, *d = &dd;
	if (!obj || !json_object_is_type(obj, json_type_object)) {
		api_dec_error(d, "", "expected object, got %s", op_json_type_name(obj));
		int r = op_err_set(err, -EINVAL, "cluster: expected object, got %s",
				   op_json_type_name(obj));
		free(dd.first);
		return r;
	}
	_cleanup_(api_cluster_freep) struct api_cluster *c = op_calloc(1, sizeof(*c));
	set_crd_defaults(&c->spec);
	SUB(obj, "", "metadata", dec_metadata, &c->metadata);
	SUB(obj, "", "spec", dec_spec, &c->spec);
	SUB(obj, "", "status", dec_status, &c->status);
	if (dd.n > 0) {
		int r = op_err_set(err, -EINVAL, "%s%s", dd.first,
				   dd.n > 1 ? " (and more type errors)" : "");
		free(dd.first);
		return r;
	}
	*ret_cluster = TAKE_PTR(c);
	return 0;
}

static void secret_ref_done(struct api_secret_ref *r)
{
	free(r->name);
	free(r->key);
}

static void storage_done(struct api_storage *s)
{
	free(s->size);
	free(s->storage_class);
	free(s->pvc_storage_class);
	free(s->pvc_request_storage);
}

static void bootstrap_done(struct api_bootstrap *b)
{
	struct api_initdb *i = &b->initdb;
	free(i->database), free(i->owner), free(i->encoding), free(i->locale_collate);
	free(i->locale_ctype), free(i->locale), free(i->locale_provider), free(i->icu_locale);
	free(i->builtin_locale), free(i->import_type);
	secret_ref_done(&i->secret);
	api_strv_done(&i->options);
	api_strv_done(&i->post_init_sql);
	api_strv_done(&i->post_init_application_sql);
	api_strv_done(&i->post_init_template_sql);
	struct api_pg_basebackup *pb = &b->pg_basebackup;
	free(pb->source), free(pb->database), free(pb->owner);
	secret_ref_done(&pb->secret);
	struct api_recovery *r = &b->recovery;
	free(r->source), free(r->database), free(r->owner), free(r->backup_name);
	secret_ref_done(&r->secret);
	struct api_recovery_target *t = &r->target;
	free(t->backup_id), free(t->target_tli), free(t->target_xid), free(t->target_name);
	free(t->target_lsn), free(t->target_time);
	secret_ref_done(&r->backup_endpoint_ca);
}

static struct api_barman_store *barman_store_free(struct api_barman_store *b)
{
	if (!b)
		return NULL;
	free(b->destination_path), free(b->endpoint_url), free(b->server_name);
	secret_ref_done(&b->endpoint_ca);
	secret_ref_done(&b->s3.access_key_id);
	secret_ref_done(&b->s3.secret_access_key);
	secret_ref_done(&b->s3.region);
	secret_ref_done(&b->s3.session_token);
	free(b->wal.compression), free(b->wal.encryption);
	api_strv_done(&b->wal.archive_additional_command_args);
	api_strv_done(&b->wal.restore_additional_command_args);
	free(b->data.compression), free(b->data.encryption);
	api_strv_done(&b->data.additional_command_args);
	api_strv_done(&b->data.restore_additional_command_args);
	api_kvs_done(&b->tags);
	api_kvs_done(&b->history_tags);
	free(b);
	return NULL;
}

static void plugin_done(struct api_plugin *x)
{
	if (!x)
		return;
	free(x->name);
	api_kvs_done(&x->parameters);
}

struct api_cluster *api_cluster_free(struct api_cluster *c)
{
	if (!c)
		return NULL;
	struct api_metadata *m = &c->metadata;
	free(m->name), free(m->namespace_), free(m->uid), free(m->resource_version);
	api_kvs_done(&m->labels);
	api_kvs_done(&m->annotations);

	struct api_cluster_spec *s = &c->spec;
	free(s->image_name), free(s->image_catalog_name), free(s->image_pull_policy);
	api_kvs_done(&s->postgresql.parameters);
	api_strv_done(&s->postgresql.pg_hba);
	api_strv_done(&s->postgresql.pg_ident);
	api_strv_done(&s->postgresql.shared_preload_libraries);
	struct api_synchronous *sy = &s->postgresql.synchronous;
	free(sy->method), free(sy->data_durability);
	api_strv_done(&sy->standby_names_pre);
	api_strv_done(&sy->standby_names_post);
	bootstrap_done(&s->bootstrap);
	storage_done(&s->storage);
	storage_done(&s->wal_storage);
	secret_ref_done(&s->superuser_secret);
	free(s->primary_update_strategy), free(s->primary_update_method);
	free(s->replication_slots.slot_prefix);
	api_strv_done(&s->replication_slots.sync_exclude_patterns);
	struct api_certificates *ce = &s->certificates;
	free(ce->server_ca_secret), free(ce->server_tls_secret);
	free(ce->replication_tls_secret), free(ce->client_ca_secret);
	api_strv_done(&ce->server_alt_dns_names);
	for (size_t i = 0; i < s->n_external_clusters; i++) {
		struct api_external_cluster *e = &s->external_clusters[i];
		free(e->name);
		api_kvs_done(&e->connection_parameters);
		secret_ref_done(&e->ssl_cert);
		secret_ref_done(&e->ssl_key);
		secret_ref_done(&e->ssl_root_cert);
		secret_ref_done(&e->password);
		barman_store_free(e->barman_object_store);
		plugin_done(e->plugin);
		free(e->plugin);
	}
	free(s->external_clusters);
	for (size_t i = 0; i < s->n_tablespaces; i++) {
		free(s->tablespaces[i].name);
		free(s->tablespaces[i].owner);
		storage_done(&s->tablespaces[i].storage);
	}
	free(s->tablespaces);
	barman_store_free(s->backup.barman);
	free(s->backup.retention_policy), free(s->backup.target);
	for (size_t i = 0; i < s->n_plugins; i++)
		plugin_done(&s->plugins[i]);
	free(s->plugins);
	struct api_monitoring *mo = &s->monitoring;
	free(mo->metrics_queries_ttl);
	for (size_t i = 0; i < mo->n_custom_configmaps; i++)
		secret_ref_done(&mo->custom_configmaps[i]);
	free(mo->custom_configmaps);
	for (size_t i = 0; i < mo->n_custom_secrets; i++)
		secret_ref_done(&mo->custom_secrets[i]);
	free(mo->custom_secrets);
	api_kvs_done(&s->resources.requests);
	api_kvs_done(&s->resources.limits);
	api_affinity_done(&s->affinity);
	if (s->topology_spread_constraints)
		json_object_put(s->topology_spread_constraints);
	free(s->log_level);
	free(s->service_account_name);

	struct api_cluster_status *st = &c->status;
	free(st->phase), free(st->phase_reason), free(st->current_primary), free(st->target_primary);
	free(st->first_recoverability_point), free(st->last_successful_backup);
	free(st->last_failed_backup);
	api_strv_done(&st->instance_names);
	api_strv_done(&st->healthy);
	free(c);
	return NULL;
}

const char *api_cluster_slot_prefix(const struct api_cluster *c)
{
	if (c && c->spec.replication_slots.slot_prefix && *c->spec.replication_slots.slot_prefix)
		return c->spec.replication_slots.slot_prefix;
	return "_cnpg_";
}

const struct api_barman_store *api_cluster_wal_store(const struct api_cluster *c)
{
	const struct api_barman_store *s = c->spec.has_backup ? c->spec.backup.barman : NULL;
	return s && (s->has_s3_credentials || s->s3.inherit_from_iam_role) ? s : NULL;
}

static const char *const barman_file_names[API_BARMAN_FILE__COUNT] = {
	[API_BARMAN_ACCESS_KEY_ID] = "access-key-id",
	[API_BARMAN_SECRET_ACCESS_KEY] = "secret-access-key",
	[API_BARMAN_SESSION_TOKEN] = "session-token",
	[API_BARMAN_REGION] = "region",
	[API_BARMAN_ENDPOINT_CA] = "endpoint-ca",
};

const char *api_barman_file_name(enum api_barman_file f)
{
	return (unsigned)f < API_BARMAN_FILE__COUNT ? barman_file_names[f] : "unknown";
}

static const char *const recovery_file_volumes[API_BARMAN_FILE__COUNT] = {
	[API_BARMAN_ACCESS_KEY_ID] = "recovery-access-key-id",
	[API_BARMAN_SECRET_ACCESS_KEY] = "recovery-secret-access-key",
	[API_BARMAN_SESSION_TOKEN] = "recovery-session-token",
	[API_BARMAN_REGION] = "recovery-region",
	[API_BARMAN_ENDPOINT_CA] = "recovery-endpoint-ca",
};

const char *api_recovery_file_volume(enum api_barman_file f)
{
	return (unsigned)f < API_BARMAN_FILE__COUNT ? recovery_file_volumes[f] : "recovery-unknown";
}

const struct api_external_cluster *api_cluster_recovery_source(const struct api_cluster *c)
{
	const struct api_recovery *r = &c->spec.bootstrap.recovery;
	if (!r->present || !r->source)
		return NULL;
	for (size_t i = 0; i < c->spec.n_external_clusters; i++) {
		const struct api_external_cluster *x = &c->spec.external_clusters[i];
		if (x->name && !strcmp(x->name, r->source))
			return x->barman_object_store ? x : NULL;
	}
	return NULL;
}

const struct api_secret_ref *api_barman_file_ref(const struct api_barman_store *s,
						 enum api_barman_file f)
{
	const struct api_secret_ref *r = NULL;
	switch (f) {
	case API_BARMAN_ACCESS_KEY_ID: r = &s->s3.access_key_id; break;
	case API_BARMAN_SECRET_ACCESS_KEY: r = &s->s3.secret_access_key; break;
	case API_BARMAN_SESSION_TOKEN: r = &s->s3.session_token; break;
	case API_BARMAN_REGION: r = &s->s3.region; break;
	case API_BARMAN_ENDPOINT_CA: r = &s->endpoint_ca; break;
	case API_BARMAN_FILE__COUNT: break;
	}
	return r && r->name && r->key ? r : NULL;
}

const char *api_barman_server_name(const struct api_cluster *c,
				   const struct api_barman_store *store)
{
	if (store && store->server_name && *store->server_name)
		return store->server_name;
	return c ? c->metadata.name : NULL;
}

/* ---- shared with backup.c (decode.h) ---- */

void api_dec_metadata(struct api_dec *d, json_object *o, const char *p, struct api_metadata *m)
{
	dec_metadata(d, o, p, m);
}

void api_dec_secret_ref(struct api_dec *d, json_object *o, const char *p,
			struct api_secret_ref *r)
{
	dec_secret_ref(d, o, p, r);
}

void api_dec_s3_credentials(struct api_dec *d, json_object *o, const char *p,
			    struct api_barman_store *b)
{
	dec_s3_credentials(d, o, p, b);
}

void api_dec_barman_store(struct api_dec *d, json_object *obj, const char *path, const char *key,
			  struct api_barman_store **ret)
{
	dec_barman_store(d, obj, path, key, ret);
}

struct api_barman_store *api_barman_store_free(struct api_barman_store *b)
{
	return barman_store_free(b);
}

void api_secret_ref_done(struct api_secret_ref *r)
{
	secret_ref_done(r);
	r->name = r->key = NULL;
}

void api_s3_credentials_done(struct api_s3_credentials *s3)
{
	api_secret_ref_done(&s3->access_key_id);
	api_secret_ref_done(&s3->secret_access_key);
	api_secret_ref_done(&s3->region);
	api_secret_ref_done(&s3->session_token);
}

void api_metadata_done(struct api_metadata *m)
{
	free(m->name), free(m->namespace_), free(m->uid), free(m->resource_version);
	api_kvs_done(&m->labels);
	api_kvs_done(&m->annotations);
	memset(m, 0, sizeof(*m));
}
