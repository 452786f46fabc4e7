/* tests/unit/test_api.c - api/: Cluster decoding, quantities, image versions, names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
/* cmocka maps free to test_free under UNIT_TESTING; our strings come from libc. */
#undef free

#include "api/cluster.h"
#include "api/names.h"
#include "support/alloc.h"
#include "support/json.h"

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(s, strlen(s), 0, &o, &err), 0);
	return o;
}

static const char *full_cluster =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"pg\",\"namespace\":\"db\",\"uid\":\"u-1\",\"generation\":4,"
	"\"labels\":{\"a\":\"b\"},\"annotations\":{\"cnpg.io/validation\":\"enabled\"}},"
	"\"spec\":{\"instances\":3,\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:15.4\","
	"\"postgresql\":{\"parameters\":{\"work_mem\":\"8MB\",\"max_connections\":\"200\","
	"\"a_first\":\"x\"},\"pg_hba\":[\"host all all 10.0.0.0/8 md5\"],"
	"\"synchronous\":{\"method\":\"any\",\"number\":1,\"dataDurability\":\"required\"}},"
	"\"minSyncReplicas\":0,\"maxSyncReplicas\":1,"
	"\"bootstrap\":{\"initdb\":{\"database\":\"app\",\"owner\":\"app\",\"encoding\":\"UTF8\","
	"\"secret\":{\"name\":\"app-secret\"},\"walSegmentSize\":32,"
	"\"postInitSQL\":[\"select 1\",\"select 2\"]}},"
	"\"storage\":{\"size\":\"1Gi\",\"storageClass\":\"standard\"},"
	"\"walStorage\":{\"pvcTemplate\":{\"storageClassName\":\"fast\","
	"\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}}},"
	"\"superuserSecret\":{\"name\":\"su\"},\"enableSuperuserAccess\":true,"
	"\"primaryUpdateStrategy\":\"supervised\",\"primaryUpdateMethod\":\"switchover\","
	"\"replicationSlots\":{\"highAvailability\":{\"enabled\":false,\"slotPrefix\":\"_x_\"},"
	"\"updateInterval\":10},"
	"\"certificates\":{\"serverCASecret\":\"ca\",\"serverAltDNSNames\":[\"a.example\"]},"
	"\"externalClusters\":[{\"name\":\"src\",\"connectionParameters\":{\"host\":\"h\","
	"\"dbname\":\"postgres\"},\"password\":{\"name\":\"pw\",\"key\":\"password\"}}],"
	"\"tablespaces\":[{\"name\":\"ts1\",\"storage\":{\"size\":\"1Gi\"}},{\"name\":\"ts2\"}],"
	"\"resources\":{\"requests\":{\"cpu\":1,\"memory\":\"512Mi\"},\"limits\":{\"memory\":\"1Gi\"}},"
	"\"affinity\":{\"enablePodAntiAffinity\":false,\"podAntiAffinityType\":\"required\","
	"\"topologyKey\":\"zone\",\"nodeSelector\":{\"disk\":\"ssd\"}},"
	"\"stopDelay\":30,\"switchoverDelay\":40,\"failoverDelay\":5,\"smartShutdownTimeout\":15,"
	"\"serviceAccountName\":\"sa\"},"
	"\"status\":{\"phase\":\"Cluster in healthy state\",\"instances\":3,\"readyInstances\":2,"
	"\"currentPrimary\":\"pg-1\",\"targetPrimary\":\"pg-2\",\"latestGeneratedNode\":3,"
	"\"timelineID\":2,\"instanceNames\":[\"pg-1\",\"pg-2\",\"pg-3\"]}}";

static void test_decode_full(void **state)
{
	(void)state;
	json_object *o = parse(full_cluster);
	struct api_errors errs = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, &errs, &c, &err), 0);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c->metadata.name, "pg");
	assert_string_equal(c->metadata.namespace_, "db");
	assert_string_equal(c->metadata.uid, "u-1");
	assert_int_equal(c->metadata.generation, 4);
	assert_string_equal(api_kvs_get(&c->metadata.labels, "a"), "b");
	assert_string_equal(api_kvs_get(&c->metadata.annotations, "cnpg.io/validation"),
			    "enabled");
	const struct api_cluster_spec *s = &c->spec;
	assert_int_equal(s->instances, 3);
	assert_string_equal(s->image_name, "ghcr.io/cloudnative-pg/postgresql:15.4");
	/* parameters keep JSON order */
	assert_int_equal(s->postgresql.parameters.n, 3);
	assert_string_equal(s->postgresql.parameters.items[0].key, "work_mem");
	assert_string_equal(s->postgresql.parameters.items[1].key, "max_connections");
	assert_string_equal(s->postgresql.parameters.items[2].key, "a_first");
	assert_string_equal(s->postgresql.parameters.items[1].value, "200");
	assert_int_equal(s->postgresql.pg_hba.n, 1);
	assert_true(s->postgresql.synchronous.present);
	assert_string_equal(s->postgresql.synchronous.method, "any");
	assert_int_equal(s->postgresql.synchronous.number, 1);
	assert_int_equal(s->max_sync_replicas, 1);
	assert_true(s->bootstrap.initdb.present);
	assert_false(s->bootstrap.recovery.present);
	assert_false(s->bootstrap.pg_basebackup.present);
	assert_string_equal(s->bootstrap.initdb.secret.name, "app-secret");
	assert_int_equal(s->bootstrap.initdb.wal_segment_size, 32);
	assert_int_equal(s->bootstrap.initdb.post_init_sql.n, 2);
	assert_string_equal(s->bootstrap.initdb.post_init_sql.items[1], "select 2");
	assert_true(s->storage.present);
	assert_string_equal(s->storage.size, "1Gi");
	assert_string_equal(s->storage.storage_class, "standard");
	assert_true(s->storage.resize_in_use_volumes);
	assert_true(s->wal_storage.present);
	assert_null(s->wal_storage.size);
	assert_true(s->wal_storage.has_pvc_template);
	assert_string_equal(s->wal_storage.pvc_request_storage, "2Gi");
	assert_string_equal(s->wal_storage.pvc_storage_class, "fast");
	assert_string_equal(s->superuser_secret.name, "su");
	assert_true(s->enable_superuser_access);
	assert_string_equal(s->primary_update_strategy, "supervised");
	assert_string_equal(s->primary_update_method, "switchover");
	assert_false(s->replication_slots.ha_enabled);
	assert_string_equal(api_cluster_slot_prefix(c), "_x_");
	assert_int_equal(s->replication_slots.update_interval, 10);
	assert_true(s->replication_slots.sync_replicas_enabled);
	assert_string_equal(s->certificates.server_ca_secret, "ca");
	assert_string_equal(s->certificates.server_alt_dns_names.items[0], "a.example");
	assert_int_equal(s->n_external_clusters, 1);
	assert_int_equal(s->n_tablespaces, 2);
	assert_string_equal(s->tablespaces[0].name, "ts1");
	assert_string_equal(s->tablespaces[1].name, "ts2");
	assert_string_equal(s->external_clusters[0].name, "src");
	assert_string_equal(api_kvs_get(&s->external_clusters[0].connection_parameters, "dbname"),
			    "postgres");
	assert_string_equal(s->external_clusters[0].password.key, "password");
	assert_string_equal(api_kvs_get(&s->resources.requests, "cpu"), "1");
	assert_string_equal(api_kvs_get(&s->resources.limits, "memory"), "1Gi");
	assert_false(s->affinity.enable_pod_anti_affinity);
	assert_string_equal(s->affinity.pod_anti_affinity_type, "required");
	assert_string_equal(api_kvs_get(&s->affinity.node_selector, "disk"), "ssd");
	assert_int_equal(s->postgres_uid, 26);
	assert_int_equal(s->stop_delay, 30);
	assert_int_equal(s->switchover_delay, 40);
	assert_int_equal(s->failover_delay, 5);
	assert_int_equal(s->smart_shutdown_timeout, 15);
	assert_int_equal(s->start_delay, 3600);
	assert_string_equal(s->service_account_name, "sa");
	const struct api_cluster_status *st = &c->status;
	assert_string_equal(st->phase, "Cluster in healthy state");
	assert_int_equal(st->instances, 3);
	assert_int_equal(st->ready_instances, 2);
	assert_string_equal(st->current_primary, "pg-1");
	assert_string_equal(st->target_primary, "pg-2");
	assert_int_equal(st->latest_generated_node, 3);
	assert_int_equal(st->timeline_id, 2);
	assert_int_equal(st->instance_names.n, 3);
	api_cluster_free(c);
	api_errors_done(&errs);
	json_object_put(o);
}

static void test_decode_defaults(void **state)
{
	(void)state;
	json_object *o = parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, NULL), 0);
	assert_int_equal(c->spec.instances, 1);
	assert_int_equal(c->spec.start_delay, 3600);
	assert_int_equal(c->spec.stop_delay, 1800);
	assert_int_equal(c->spec.smart_shutdown_timeout, 180);
	assert_int_equal(c->spec.switchover_delay, 3600);
	assert_int_equal(c->spec.failover_delay, 0);
	assert_null(c->spec.service_account_name);
	assert_true(c->spec.replication_slots.ha_enabled);
	assert_string_equal(api_cluster_slot_prefix(c), "_cnpg_");
	assert_true(c->spec.affinity.enable_pod_anti_affinity);
	assert_false(c->spec.enable_superuser_access);
	assert_false(c->spec.storage.present);
	assert_false(c->spec.postgresql.synchronous.present);
	assert_null(c->spec.image_name);
	assert_int_equal(c->spec.postgresql.parameters.n, 0);
	api_cluster_free(c);
	json_object_put(o);
	assert_null(api_cluster_free(NULL));
}

static bool has_error(const struct api_errors *e, const char *path, const char *msg)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->items[i].path, path) == 0 && strcmp(e->items[i].msg, msg) == 0)
			return true;
	return false;
}

static void test_decode_collects_all_type_errors(void **state)
{
	(void)state;
	json_object *o = parse(
		"{\"metadata\":{\"name\":5,\"labels\":{\"a\":1}},"
		"\"spec\":{\"instances\":\"3\",\"storage\":{\"size\":1024},"
		"\"postgresql\":{\"parameters\":{\"ok\":\"x\",\"bad\":true},\"pg_hba\":[\"a\",7]},"
		"\"bootstrap\":{\"initdb\":\"yes\"},\"walStorage\":[],"
		"\"externalClusters\":[{\"name\":\"ok\"},3,{\"name\":[]}],"
		"\"enableSuperuserAccess\":\"true\",\"minSyncReplicas\":1.5},"
		"\"status\":{\"timelineID\":\"2\"}}");
	struct api_errors errs = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct api_cluster *c = (struct api_cluster *)(uintptr_t)0x1;
	assert_int_equal(api_cluster_decode(o, &errs, &c, &err), -EINVAL);
	assert_ptr_equal(c, (struct api_cluster *)(uintptr_t)0x1); /* untouched on failure */
	assert_true(has_error(&errs, "metadata.name", "expected string, got integer"));
	assert_true(has_error(&errs, "metadata.labels.a", "expected string, got integer"));
	assert_true(has_error(&errs, "spec.instances", "expected integer, got string"));
	assert_true(has_error(&errs, "spec.storage.size", "expected string, got integer"));
	assert_true(has_error(&errs, "spec.postgresql.parameters.bad",
			      "expected string, got boolean"));
	assert_true(has_error(&errs, "spec.postgresql.pg_hba[1]", "expected string, got integer"));
	assert_true(has_error(&errs, "spec.bootstrap.initdb", "expected object, got string"));
	assert_true(has_error(&errs, "spec.walStorage", "expected object, got array"));
	assert_true(has_error(&errs, "spec.externalClusters[1]", "expected object, got integer"));
	assert_true(has_error(&errs, "spec.externalClusters[2].name", "expected string, got array"));
	assert_true(has_error(&errs, "spec.enableSuperuserAccess", "expected boolean, got string"));
	assert_true(has_error(&errs, "spec.minSyncReplicas", "expected integer, got number"));
	assert_true(has_error(&errs, "status.timelineID", "expected integer, got string"));
	assert_int_equal(errs.n, 13);
	assert_string_equal(err.msg,
			    "metadata.name: expected string, got integer (and more type errors)");
	api_errors_done(&errs);
	json_object_put(o);
}

/* JSON written with ' for " (no ' inside values). */
static json_object *parse_q(const char *q)
{
	_cleanup_free_ char *s = op_strdup(q);
	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	return parse(s);
}

/* Every field of spec.backup, spec.plugins, externalClusters[].barmanObjectStore
 * and .plugin, and bootstrap.recovery. */
static const char *backup_cluster =
	"{'metadata':{'name':'pg'},'spec':{'instances':3,"
	"'backup':{'retentionPolicy':'30d','target':'primary',"
	"'volumeSnapshot':{'className':'csi'},"
	"'barmanObjectStore':{'destinationPath':'s3://backups/pgop',"
	"'endpointURL':'https://versitygw.objstore.svc:7070',"
	"'endpointCA':{'name':'store-ca','key':'ca.crt'},'serverName':'pg-a',"
	"'s3Credentials':{'accessKeyId':{'name':'s3','key':'id'},"
	"'secretAccessKey':{'name':'s3','key':'secret'},'region':{'name':'s3','key':'region'},"
	"'sessionToken':{'name':'s3','key':'token'},'inheritFromIAMRole':false},"
	"'wal':{'compression':'gzip','encryption':'AES256','maxParallel':4,"
	"'archiveAdditionalCommandArgs':['--a'],'restoreAdditionalCommandArgs':['--r1','--r2']},"
	"'data':{'compression':'zstd','encryption':'aws:kms','jobs':3,'immediateCheckpoint':true,"
	"'additionalCommandArgs':['--d'],'restoreAdditionalCommandArgs':['--dr']},"
	"'tags':{'env':'test','team':'db'},'historyTags':{'kind':'history'}}},"
	"'plugins':[{'name':'barman-cloud.cloudnative-pg.io','isWALArchiver':true,"
	"'parameters':{'barmanObjectName':'store'}},{'name':'other','enabled':false}],"
	"'bootstrap':{'recovery':{'source':'origin','database':'app','owner':'app',"
	"'backup':{'name':'b-1','endpointCA':{'name':'bca','key':'ca'}},"
	"'recoveryTarget':{'backupID':'20260101T000000','targetTLI':'latest',"
	"'targetTime':'2026-01-02 03:04:05+00','targetImmediate':false,'exclusive':true}}},"
	"'externalClusters':[{'name':'origin','barmanObjectStore':{"
	"'destinationPath':'s3://backups/origin','azureCredentials':{'storageAccount':"
	"{'name':'az','key':'a'}},'googleCredentials':{'gkeEnvironment':true}}},"
	"{'name':'viaplugin','plugin':{'name':'barman-cloud.cloudnative-pg.io',"
	"'parameters':{'barmanObjectName':'x','serverName':'old'}}}]}}";

static void test_decode_backup_full(void **state)
{
	(void)state;
	json_object *o = parse_q(backup_cluster);
	struct api_errors errs = { 0 };
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, &errs, &c, NULL), 0);
	assert_int_equal(errs.n, 0);
	const struct api_cluster_spec *s = &c->spec;
	assert_true(s->has_backup);
	const struct api_backup *b = &s->backup;
	assert_string_equal(b->retention_policy, "30d");
	assert_string_equal(b->target, "primary");
	assert_true(b->has_volume_snapshot);
	const struct api_barman_store *st = b->barman;
	assert_non_null(st);
	assert_string_equal(st->destination_path, "s3://backups/pgop");
	assert_string_equal(st->endpoint_url, "https://versitygw.objstore.svc:7070");
	assert_string_equal(st->endpoint_ca.name, "store-ca");
	assert_string_equal(st->endpoint_ca.key, "ca.crt");
	assert_string_equal(st->server_name, "pg-a");
	assert_string_equal(api_barman_server_name(c, st), "pg-a");
	assert_true(st->has_s3_credentials);
	assert_string_equal(st->s3.access_key_id.name, "s3");
	assert_string_equal(st->s3.access_key_id.key, "id");
	assert_string_equal(st->s3.secret_access_key.key, "secret");
	assert_string_equal(st->s3.region.key, "region");
	assert_string_equal(st->s3.session_token.key, "token");
	assert_false(st->s3.inherit_from_iam_role);
	assert_false(st->has_azure_credentials);
	assert_false(st->has_google_credentials);
	assert_string_equal(st->wal.compression, "gzip");
	assert_string_equal(st->wal.encryption, "AES256");
	assert_int_equal(st->wal.max_parallel, 4);
	assert_int_equal(st->wal.archive_additional_command_args.n, 1);
	assert_string_equal(st->wal.restore_additional_command_args.items[1], "--r2");
	assert_string_equal(st->data.compression, "zstd");
	assert_string_equal(st->data.encryption, "aws:kms");
	assert_int_equal(st->data.jobs, 3);
	assert_true(st->data.immediate_checkpoint);
	assert_string_equal(st->data.additional_command_args.items[0], "--d");
	assert_string_equal(st->data.restore_additional_command_args.items[0], "--dr");
	assert_int_equal(st->tags.n, 2);
	assert_string_equal(api_kvs_get(&st->tags, "team"), "db");
	assert_string_equal(api_kvs_get(&st->history_tags, "kind"), "history");
	/* plugins */
	assert_int_equal(s->n_plugins, 2);
	assert_string_equal(s->plugins[0].name, "barman-cloud.cloudnative-pg.io");
	assert_true(s->plugins[0].enabled);
	assert_true(s->plugins[0].is_wal_archiver);
	assert_string_equal(api_kvs_get(&s->plugins[0].parameters, "barmanObjectName"), "store");
	assert_string_equal(s->plugins[1].name, "other");
	assert_false(s->plugins[1].enabled);
	assert_false(s->plugins[1].is_wal_archiver);
	/* recovery */
	const struct api_recovery *r = &s->bootstrap.recovery;
	assert_true(r->present);
	assert_string_equal(r->source, "origin");
	assert_string_equal(r->backup_name, "b-1");
	assert_string_equal(r->backup_endpoint_ca.name, "bca");
	assert_string_equal(r->backup_endpoint_ca.key, "ca");
	assert_true(r->has_recovery_target);
	assert_string_equal(r->target.backup_id, "20260101T000000");
	assert_string_equal(r->target.target_tli, "latest");
	assert_string_equal(r->target.target_time, "2026-01-02 03:04:05+00");
	assert_true(r->target.has_target_immediate);
	assert_false(r->target.target_immediate);
	assert_true(r->target.exclusive);
	assert_null(r->target.target_lsn);
	/* external clusters */
	assert_int_equal(s->n_external_clusters, 2);
	const struct api_barman_store *ext = s->external_clusters[0].barman_object_store;
	assert_non_null(ext);
	assert_null(s->external_clusters[0].plugin);
	assert_string_equal(ext->destination_path, "s3://backups/origin");
	assert_false(ext->has_s3_credentials);
	assert_true(ext->has_azure_credentials);
	assert_true(ext->has_google_credentials);
	assert_null(ext->server_name);
	assert_string_equal(api_barman_server_name(c, ext), "pg");
	const struct api_plugin *ep = s->external_clusters[1].plugin;
	assert_null(s->external_clusters[1].barman_object_store);
	assert_non_null(ep);
	assert_string_equal(ep->name, "barman-cloud.cloudnative-pg.io");
	assert_string_equal(api_kvs_get(&ep->parameters, "serverName"), "old");
	api_cluster_free(c);
	json_object_put(o);
}

static void test_decode_backup_defaults(void **state)
{
	(void)state;
	json_object *o = parse_q("{'metadata':{'name':'pg'},'spec':{'backup':{"
				 "'barmanObjectStore':{'destinationPath':'s3://b-1',"
				 "'serverName':'','s3Credentials':{'inheritFromIAMRole':true}}},"
				 "'plugins':[{'name':'p'}],'bootstrap':{'recovery':{"
				 "'recoveryTarget':{'targetLSN':'0/1'}}},"
				 "'externalClusters':[{'name':'e','connectionParameters':{}}]}}");
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, NULL, &c, NULL), 0);
	const struct api_backup *b = &c->spec.backup;
	assert_true(c->spec.has_backup);
	assert_string_equal(b->target, "prefer-standby");
	assert_null(b->retention_policy);
	assert_false(b->has_volume_snapshot);
	const struct api_barman_store *st = b->barman;
	assert_non_null(st);
	assert_null(st->endpoint_url);
	assert_null(st->endpoint_ca.name);
	assert_true(st->has_s3_credentials);
	assert_true(st->s3.inherit_from_iam_role);
	assert_null(st->s3.access_key_id.name);
	assert_null(st->wal.compression);
	assert_int_equal(st->wal.max_parallel, 0);
	assert_int_equal(st->data.jobs, 0);
	assert_false(st->data.immediate_checkpoint);
	assert_int_equal(st->tags.n, 0);
	/* an empty serverName means the Cluster's name */
	assert_string_equal(api_barman_server_name(c, st), "pg");
	assert_int_equal(c->spec.n_plugins, 1);
	assert_true(c->spec.plugins[0].enabled);
	assert_false(c->spec.plugins[0].is_wal_archiver);
	assert_int_equal(c->spec.plugins[0].parameters.n, 0);
	const struct api_recovery_target *t = &c->spec.bootstrap.recovery.target;
	assert_string_equal(t->target_lsn, "0/1");
	assert_false(t->has_target_immediate);
	assert_false(t->exclusive);
	assert_null(c->spec.bootstrap.recovery.backup_name);
	assert_null(c->spec.external_clusters[0].barman_object_store);
	assert_null(c->spec.external_clusters[0].plugin);
	api_cluster_free(c);
	json_object_put(o);
	/* no spec.backup at all */
	o = parse_q("{'metadata':{'name':'pg'},'spec':{}}");
	assert_int_equal(api_cluster_decode(o, NULL, &c, NULL), 0);
	assert_false(c->spec.has_backup);
	assert_null(c->spec.backup.barman);
	assert_null(c->spec.backup.target);
	assert_int_equal(c->spec.n_plugins, 0);
	assert_null(c->spec.plugins);
	assert_null(api_barman_server_name(NULL, NULL));
	api_cluster_free(c);
	json_object_put(o);
}

static void test_decode_backup_type_errors(void **state)
{
	(void)state;
	json_object *o = parse_q(
		"{'metadata':{'name':'pg'},'spec':{'backup':{'retentionPolicy':30,"
		"'target':true,'volumeSnapshot':[],'barmanObjectStore':{'destinationPath':1,"
		"'endpointURL':{},'endpointCA':'ca','serverName':2,"
		"'s3Credentials':{'accessKeyId':'id','inheritFromIAMRole':'yes',"
		"'region':{'name':3}},'azureCredentials':true,"
		"'wal':{'compression':1,'maxParallel':'4','archiveAdditionalCommandArgs':[1]},"
		"'data':{'jobs':1.5,'immediateCheckpoint':'true'},'tags':{'a':1},"
		"'historyTags':[]}},"
		"'plugins':[{'name':'ok'},'p',{'name':1,'enabled':'no','parameters':{'x':false}}],"
		"'bootstrap':{'recovery':{'backup':{'name':1,'endpointCA':[]},"
		"'recoveryTarget':{'targetImmediate':'true','exclusive':1,'targetXID':7}}},"
		"'externalClusters':[{'name':'e','barmanObjectStore':[],'plugin':{'name':[]}},"
		"{'name':'f','barmanObjectStore':{'wal':{'maxParallel':'x'}},'plugin':'p'}]}}");
	struct api_errors errs = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, &errs, &c, &err), -EINVAL);
	assert_null(c);
	static const struct {
		const char *path, *msg;
	} want[] = {
		{ "spec.backup.retentionPolicy", "expected string, got integer" },
		{ "spec.backup.target", "expected string, got boolean" },
		{ "spec.backup.volumeSnapshot", "expected object, got array" },
		{ "spec.backup.barmanObjectStore.destinationPath", "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.endpointURL", "expected string, got object" },
		{ "spec.backup.barmanObjectStore.endpointCA", "expected object, got string" },
		{ "spec.backup.barmanObjectStore.serverName", "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.s3Credentials.accessKeyId",
		  "expected object, got string" },
		{ "spec.backup.barmanObjectStore.s3Credentials.inheritFromIAMRole",
		  "expected boolean, got string" },
		{ "spec.backup.barmanObjectStore.s3Credentials.region.name",
		  "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.azureCredentials", "expected object, got boolean" },
		{ "spec.backup.barmanObjectStore.wal.compression", "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.wal.maxParallel", "expected integer, got string" },
		{ "spec.backup.barmanObjectStore.wal.archiveAdditionalCommandArgs[0]",
		  "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.data.jobs", "expected integer, got number" },
		{ "spec.backup.barmanObjectStore.data.immediateCheckpoint",
		  "expected boolean, got string" },
		{ "spec.backup.barmanObjectStore.tags.a", "expected string, got integer" },
		{ "spec.backup.barmanObjectStore.historyTags", "expected object, got array" },
		{ "spec.plugins[1]", "expected object, got string" },
		{ "spec.plugins[2].name", "expected string, got integer" },
		{ "spec.plugins[2].enabled", "expected boolean, got string" },
		{ "spec.plugins[2].parameters.x", "expected string, got boolean" },
		{ "spec.bootstrap.recovery.backup.name", "expected string, got integer" },
		{ "spec.bootstrap.recovery.backup.endpointCA", "expected object, got array" },
		{ "spec.bootstrap.recovery.recoveryTarget.targetImmediate",
		  "expected boolean, got string" },
		{ "spec.bootstrap.recovery.recoveryTarget.exclusive", "expected boolean, got integer" },
		{ "spec.bootstrap.recovery.recoveryTarget.targetXID", "expected string, got integer" },
		{ "spec.externalClusters[0].barmanObjectStore", "expected object, got array" },
		{ "spec.externalClusters[0].plugin.name", "expected string, got array" },
		{ "spec.externalClusters[1].barmanObjectStore.wal.maxParallel",
		  "expected integer, got string" },
		{ "spec.externalClusters[1].plugin", "expected object, got string" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has_error(&errs, want[i].path, want[i].msg))
			fail_msg("no error %s: %s", want[i].path, want[i].msg);
	if (errs.n != sizeof(want) / sizeof(want[0]))
		for (size_t i = 0; i < errs.n; i++)
			print_error("  %s: %s\n", errs.items[i].path, errs.items[i].msg);
	assert_int_equal(errs.n, sizeof(want) / sizeof(want[0]));
	api_errors_done(&errs);
	json_object_put(o);
}

static void test_decode_not_object(void **state)
{
	(void)state;
	json_object *o = parse("[1]");
	struct api_errors errs = { 0 };
	struct op_err err = OP_ERR_INIT;
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(o, &errs, &c, &err), -EINVAL);
	assert_null(c);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.items[0].msg, "expected object, got array");
	api_errors_done(&errs);
	json_object_put(o);
	o = parse("{\"spec\":\"x\"}");
	assert_int_equal(api_cluster_decode(o, &errs, &c, NULL), -EINVAL);
	assert_string_equal(errs.items[0].path, "spec");
	api_errors_done(&errs);
	json_object_put(o);
}

static void test_quantity(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t want;
	} ok[] = {
		{ "1Gi", 1073741824LL },   { "500M", 500000000LL }, { "1.5Gi", 1610612736LL },
		{ "0.5Gi", 536870912LL },  { "1Ki", 1024 },          { "100", 100 },
		{ "1k", 1000 },            { "2Ti", 2199023255552LL }, { "1e3", 1000 },
		{ "100m", 1 },             { "1500m", 2 },           { "0", 0 },
		{ "+1Mi", 1048576 },       { "-1Mi", -1048576 },     { ".5Ki", 512 },
		{ "1.05k", 1050 },         { "0.001Ki", 2 },         { "7Ei", 8070450532247928832LL },
		{ "1E", 1000000000000000000LL }, { "1E-3", 1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(ok); i++) {
		int64_t v = -7;
		struct op_err err = OP_ERR_INIT;
		int r = api_quantity_parse(ok[i].in, &v, &err);
		if (r != 0)
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (v != ok[i].want)
			fail_msg("%s: got %lld want %lld", ok[i].in, (long long)v,
				 (long long)ok[i].want);
	}
	static const char *const bad[] = { "",     "Gi",  "1GiB", "1 Gi", "1.2.3", "abc",
					   "1gi",  "1e",  "1e+",  "--1",  "1Gi ",  ".",
					   "1e3x" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		int64_t v = 42;
		struct op_err err = OP_ERR_INIT;
		if (api_quantity_parse(bad[i], &v, &err) != -EINVAL)
			fail_msg("'%s' should be invalid", bad[i]);
		assert_int_equal(v, 42);
		assert_true(op_err_isset(&err));
	}
	int64_t v = 0;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(api_quantity_parse("8Ei", &v, &err), -ERANGE);
	assert_int_equal(api_quantity_parse("99999999999999999999999", &v, NULL), -ERANGE);
	assert_string_equal(err.msg, "quantity '8Ei' is too large");
}

/* The exact form (nano-units) behind the webhooks' comparisons. */
static void test_quantity_exact(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		__int128 nano;
	} ok[] = {
		/* the rows webhooks/ used to check with its own parser */
		{ "1Gi", (__int128)1073741824 * 1000000000 },
		{ "500m", 500000000 },
		{ "1.5G", (__int128)1500000000 * 1000000000 },
		{ "1e3", (__int128)1000 * 1000000000 },
		/* exact where a float is not */
		{ "0.1", 100000000 },
		{ "100m", 100000000 },
		{ "1.5Gi", (__int128)1610612736 * 1000000000 },
		{ "1n", 1 },
		{ "1u", 1000 },
		{ "1.0000000001", 1000000001 }, /* past nano: rounded up */
		{ "-1.5m", -1500000 },
		{ "-0.0000000001", -1 },
		{ "0.000000000000000001E-18", 1 },
		{ "7Ei", (__int128)8070450532247928832LL * 1000000000 },
		{ "100000000000E", (__int128)100000000000LL * 1000000000000000000LL * 1000000000 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(ok); i++) {
		struct api_quantity q = { -7 };
		struct op_err err = OP_ERR_INIT;
		if (api_quantity_parse_exact(ok[i].in, &q, &err) != 0)
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (q.nano != ok[i].nano)
			fail_msg("%s: got %lld (low bits) want %lld", ok[i].in, (long long)q.nano,
				 (long long)ok[i].nano);
	}
	/* same syntax errors as api_quantity_parse, incl. webhooks' old rows */
	static const char *const bad[] = { "",    "Gi",   "1GiB", "1 Gi", "1.2.3", "abc", "1gi",
					   "1e",  "1e+",  "--1",  "1Gi ", ".",     "1e3x", "1Gb",
					   "1..2" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		struct api_quantity q = { 42 };
		if (api_quantity_parse_exact(bad[i], &q, NULL) != -EINVAL)
			fail_msg("'%s' should be invalid", bad[i]);
		assert_true(q.nano == 42);
	}
	struct api_quantity q;
	struct op_err err = OP_ERR_INIT;
	/* 1e18 x 1e18 units x 1e9 does not fit 128 bits */
	assert_int_equal(api_quantity_parse_exact("999999999999999999E", &q, &err), -ERANGE);
	assert_string_equal(err.msg, "quantity '999999999999999999E' is too large");
	/* 8Ei does not fit int64 but is exact here */
	assert_int_equal(api_quantity_parse_exact("8Ei", &q, NULL), 0);
	struct api_quantity a, b;
	assert_int_equal(api_quantity_parse_exact("100m", &a, NULL), 0);
	assert_int_equal(api_quantity_parse_exact("101m", &b, NULL), 0);
	assert_int_equal(api_quantity_cmp(&a, &b), -1);
	assert_int_equal(api_quantity_cmp(&b, &a), 1);
	assert_int_equal(api_quantity_parse_exact("0.1", &b, NULL), 0);
	assert_int_equal(api_quantity_cmp(&a, &b), 0);
}

static void test_image_major(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int want;
	} ok[] = {
		{ "ghcr.io/cloudnative-pg/postgresql:15", 15 },
		{ "ghcr.io/cloudnative-pg/postgresql:15.4", 15 },
		{ "ghcr.io/cloudnative-pg/postgresql:16.2-bookworm", 16 },
		{ "ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie", 18 },
		{ "localhost:5000/pg:17@sha256:abcd", 17 },
		{ "postgres:13", 13 },
		/* pre-release and suffixed tags, as CloudNativePG's version.FromTag */
		{ "ghcr.io/cloudnative-pg/postgresql:17beta1", 17 },
		{ "ghcr.io/cloudnative-pg/postgresql:18rc1", 18 },
		{ "ghcr.io/cloudnative-pg/postgresql:17alpha2", 17 },
		{ "ghcr.io/cloudnative-pg/postgresql:18beta2-standard-bookworm", 18 },
		{ "pg:15x", 15 },
		{ "pg:12.3.2.1-1", 12 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(ok); i++) {
		int m = 0;
		assert_int_equal(api_image_major_version(ok[i].in, &m, NULL), 0);
		assert_int_equal(m, ok[i].want);
	}
	static const char *const bad[] = { "postgres", "postgres:latest", "localhost:5000/pg",
					   "pg@sha256:abc", "pg:17.", "pg:x17", "pg:17.100",
					   "pg:beta1", "" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		int m = -1;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(api_image_major_version(bad[i], &m, &err), -EINVAL);
		assert_int_equal(m, -1);
	}
	/* the tag parser behind it (webhooks V8 uses it too) */
	const char *tag;
	size_t n;
	bool digest;
	assert_true(api_image_tag("reg:5000/a/b:17.2@sha256:ab", &tag, &n, &digest));
	assert_int_equal(n, 4);
	assert_memory_equal(tag, "17.2", 4);
	assert_true(digest);
	assert_false(api_image_tag("reg:5000/a/b", &tag, &n, &digest));
	assert_string_equal(tag, "latest");
	assert_false(digest);
	assert_false(api_image_tag("b@sha256:ab", &tag, &n, &digest));
	assert_int_equal(n, 0);
	assert_true(digest);
	assert_true(api_image_tag("localhost:5000/pg:17", &tag, &n, &digest));
	assert_int_equal(n, 2);
	assert_false(digest);
}

static void check_name(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void test_names(void **state)
{
	(void)state;
	check_name(api_service_name("pg", API_SVC_RW), "pg-rw");
	check_name(api_service_name("pg", API_SVC_RO), "pg-ro");
	check_name(api_service_name("pg", API_SVC_R), "pg-r");
	check_name(api_service_name("pg", API_SVC_ANY), "pg-any");
	check_name(api_secret_name("pg", API_SECRET_CA), "pg-ca");
	check_name(api_secret_name("pg", API_SECRET_SERVER), "pg-server");
	check_name(api_secret_name("pg", API_SECRET_REPLICATION), "pg-replication");
	check_name(api_secret_name("pg", API_SECRET_SUPERUSER), "pg-superuser");
	check_name(api_secret_name("pg", API_SECRET_APP), "pg-app");
	check_name(api_pod_name("cluster-example", 3), "cluster-example-3");
	check_name(api_pgdata_pvc_name("cluster-example", 3), "cluster-example-3");
	check_name(api_wal_pvc_name("cluster-example", 12), "cluster-example-12-wal");
	check_name(api_tablespace_pvc_name("pg-1", "tbs1"), "pg-1-tbs-tbs1");
	check_name(api_tablespace_location(NULL, "tbs1"), "/var/lib/postgresql/tablespaces/tbs1/data");
	check_name(api_tablespace_location("/t", "a"), "/t/a/data");
	check_name(api_slot_name(NULL, "cluster-example-2"), "_cnpg_cluster_example_2");
	check_name(api_slot_name("", "pg-1"), "_cnpg_pg_1");
	check_name(api_slot_name("_x_", "Pg--a.b-1"), "_x_pg_a_b_1");
}

static void test_pod_serial(void **state)
{
	(void)state;
	int64_t s = 0;
	assert_int_equal(api_pod_serial("pg", "pg-12", &s, NULL), 0);
	assert_int_equal(s, 12);
	assert_int_equal(api_pod_serial("pg-a", "pg-a-1", &s, NULL), 0);
	assert_int_equal(s, 1);
	s = 99;
	static const char *const bad[] = { "pg-0", "pg-01", "pg-", "pg", "pgx-1", "pg-1a",
					   "other-1", "pg-99999999999999999999" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++)
		assert_int_equal(api_pod_serial("pg", bad[i], &s, NULL), -EINVAL);
	assert_int_equal(s, 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_full),
		cmocka_unit_test(test_decode_defaults),
		cmocka_unit_test(test_decode_collects_all_type_errors),
		cmocka_unit_test(test_decode_not_object),
		cmocka_unit_test(test_decode_backup_full),
		cmocka_unit_test(test_decode_backup_defaults),
		cmocka_unit_test(test_decode_backup_type_errors),
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_quantity_exact),
		cmocka_unit_test(test_image_major),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_pod_serial),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
