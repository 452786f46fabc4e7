/* tests/unit/test_webhooks_rules.c - webhooks/ validation rules V1-V50
 * (rules_spec*.c), the parameter tables (pgparams.c), reserved names
 * (reserved.c) and the rule helpers (rules_spec_util.c).
 *
 * The rule tests are table-driven: each row is a Cluster (a spec snippet
 * merged over a valid base spec, plus optional metadata) and the field path
 * of the error it must produce (NULL: it must be admitted with no error at
 * all). Rows go through wh_validate() (the driver: type checks, then every
 * rule table), so an admitted row also proves that no other rule fires by
 * accident.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml.h"
#include "webhooks/pgparams.h"
#include "webhooks/reserved.h"
#include "webhooks/rules_spec.h"

/* JSON written with ' for " (and ` for an escaped \" inside strings). */
static json_object *jparse(const char *src)
{
	size_t n = strlen(src);
	_cleanup_free_ char *s = op_malloc(2 * n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (src[i] == '\'') {
			s[o++] = '"';
		} else if (src[i] == '`') {
			s[o++] = '\\';
			s[o++] = '"';
		} else {
			s[o++] = src[i];
		}
	}
	s[o] = '\0';
	json_object *obj = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, o, OP_JSON_MAX_DEPTH, &obj, &err) < 0)
		fail_msg("bad test JSON %s: %s", s, err.msg);
	return obj;
}

#define BASE_SPEC                                                                          \
	"{'instances':1,'imageName':'ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie',"  \
	"'storage':{'size':'1Gi'},'bootstrap':{'initdb':{'database':'app','owner':'app'}}}"

/* Builds {metadata:{name:pg, ...meta}, spec:{BASE_SPEC ...spec}}; OWNED. */
static json_object *make_cluster(const char *meta, const char *spec)
{
	json_object *cluster = jparse("{'apiVersion':'postgresql.cnpg.io/v1','kind':'Cluster',"
				      "'metadata':{'name':'pg','namespace':'default'}}");
	json_object *base = jparse(BASE_SPEC);
	if (spec) {
		_cleanup_(op_json_putp) json_object *over = jparse(spec);
		json_object_object_foreach(over, k, v)
		{
			assert_int_equal(op_json_set(base, k, json_object_get(v)), 0);
		}
	}
	assert_int_equal(op_json_set(cluster, "spec", base), 0);
	if (meta) {
		_cleanup_(op_json_putp) json_object *over = jparse(meta);
		json_object *md = op_json_at(cluster, "metadata");
		json_object_object_foreach(over, k, v)
		{
			assert_int_equal(op_json_set(md, k, json_object_get(v)), 0);
		}
	}
	return cluster;
}

static void run_spec_rules(json_object *cluster, struct wh_result *res)
{
	struct wh_ctx ctx = { .obj = cluster,
			      .spec = op_json_at(cluster, "spec"),
			      .op = WH_OP_CREATE };
	for (size_t i = 0; i < wh_rules_spec_count; i++)
		wh_rules_spec[i].fn(&ctx, res);
}

struct row {
	const char *name;
	const char *meta; /* JSON object merged into metadata, or NULL */
	const char *spec; /* JSON object merged into the base spec, or NULL */
	const char *path; /* expected error path; NULL = admitted */
};

static void print_errors(const struct row *r, const struct wh_result *res)
{
	print_message("row '%s': %zu error(s)\n", r->name, res->n_errors);
	for (size_t i = 0; i < res->n_errors; i++)
		print_message("  %s: %s\n", res->errors[i].path, res->errors[i].msg);
}

static void run_rows(const struct row *rows, size_t n)
{
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		_cleanup_(op_json_putp) json_object *c = make_cluster(r->meta, r->spec);
		struct wh_result res = { 0 };
		int nerr = wh_validate(c, NULL, &res);
		assert_int_equal((size_t)nerr, res.n_errors);
		bool ok;
		if (!r->path) {
			ok = res.n_errors == 0;
		} else {
			ok = false;
			for (size_t e = 0; e < res.n_errors; e++)
				ok = ok || strcmp(res.errors[e].path, r->path) == 0;
		}
		if (!ok) {
			print_message("FAILED row '%s' (want %s)\n", r->name,
				      r->path ? r->path : "admitted");
			print_errors(r, &res);
			failures++;
		}
		wh_result_done(&res);
	}
	assert_int_equal(failures, 0);
}

#define RUN(rows) run_rows(rows, OP_ARRAY_SIZE(rows))

#define EXT_ORIGIN "'externalClusters':[{'name':'origin','connectionParameters':{'host':'h'}}]"

/* ---- V1-V7, V10, V20, V22, V23: bootstrap ---- */

static const struct row bootstrap_rows[] = {
	{ "V1 full initdb", NULL,
	  "{'bootstrap':{'initdb':{'database':'app','owner':'app','walSegmentSize':32,"
	  "'postInitApplicationSQLRefs':{'secretRefs':[{'name':'s','key':'k'}]}}}}",
	  NULL },
	{ "V1 database without owner", NULL, "{'bootstrap':{'initdb':{'database':'app'}}}",
	  "spec.bootstrap.initdb.owner" },
	{ "V1 owner without database", NULL, "{'bootstrap':{'initdb':{'owner':'app'}}}",
	  "spec.bootstrap.initdb.database" },
	{ "V1 wal segment not power of 2", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','walSegmentSize':48}}}",
	  "spec.bootstrap.initdb.walSegmentSize" },
	{ "V1 sql ref without key", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a',"
	  "'postInitApplicationSQLRefs':{'configMapRefs':[{'name':'c'}]}}}}",
	  "spec.bootstrap.initdb.postInitApplicationSQLRefs.configMapRefs[0]" },
	{ "V1 template sql refs are not checked (as in CNPG)", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a',"
	  "'postInitTemplateSQLRefs':{'secretRefs':[{'key':'k'}]}}}}",
	  NULL },
	{ "V2 recovery app db", NULL,
	  "{'bootstrap':{'recovery':{'source':'origin','database':'app','owner':'app'}}," EXT_ORIGIN
	  "}",
	  NULL },
	{ "V2 recovery database without owner", NULL,
	  "{'bootstrap':{'recovery':{'source':'origin','database':'app'}}," EXT_ORIGIN "}",
	  "spec.bootstrap.recovery.owner" },
	{ "V3 pg_basebackup app db", NULL,
	  "{'bootstrap':{'pg_basebackup':{'source':'origin','database':'a','owner':'a'}}," EXT_ORIGIN
	  "}",
	  NULL },
	{ "V3 pg_basebackup owner without database", NULL,
	  "{'bootstrap':{'pg_basebackup':{'source':'origin','owner':'a'}}," EXT_ORIGIN "}",
	  "spec.bootstrap.pg_basebackup.database" },
	{ "V4 microservice", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','import':{'type':'microservice',"
	  "'databases':['db'],'source':{'externalCluster':'origin'}}}}," EXT_ORIGIN "}",
	  NULL },
	{ "V4 unknown type", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','import':{'type':'x',"
	  "'databases':['db']}}}}",
	  "spec.bootstrap.initdb.import.type" },
	{ "V4 microservice two databases", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','import':{'type':'microservice',"
	  "'databases':['a','b']}}}}",
	  "spec.bootstrap.initdb.import.databases" },
	{ "V4 microservice roles", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','import':{'type':'microservice',"
	  "'databases':['a'],'roles':['r']}}}}",
	  "spec.bootstrap.initdb.import.roles" },
	{ "V4 microservice wildcard", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a','import':{'type':'microservice',"
	  "'databases':['*']}}}}",
	  "spec.bootstrap.initdb.import.databases[0]" },
	{ "V4 monolith wildcards", NULL,
	  "{'bootstrap':{'initdb':{'import':{'type':'monolith','databases':['*'],'roles':['*']}}}}",
	  NULL },
	{ "V4 monolith no database", NULL,
	  "{'bootstrap':{'initdb':{'import':{'type':'monolith','databases':[]}}}}",
	  "spec.bootstrap.initdb.import.databases" },
	{ "V4 monolith wildcard mixed", NULL,
	  "{'bootstrap':{'initdb':{'import':{'type':'monolith','databases':['*','a']}}}}",
	  "spec.bootstrap.initdb.import.databases" },
	{ "V4 monolith role wildcard mixed", NULL,
	  "{'bootstrap':{'initdb':{'import':{'type':'monolith','databases':['a'],"
	  "'roles':['r','*']}}}}",
	  "spec.bootstrap.initdb.import.roles" },
	{ "V4 monolith post import SQL", NULL,
	  "{'bootstrap':{'initdb':{'import':{'type':'monolith','databases':['a'],"
	  "'postImportApplicationSQL':['select 1']}}}}",
	  "spec.bootstrap.initdb.import.postImportApplicationSQL" },
	{ "V7 two methods", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a'},'recovery':{'backup':{'name':'b'}}}}",
	  "spec.bootstrap" },
	{ "V7 null method ignored", NULL,
	  "{'bootstrap':{'initdb':{'database':'a','owner':'a'},'recovery':null}}", NULL },
	{ "V10 valid target", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetTime':'2024-01-02 10:00:00.123+00','targetTLI':'latest'}}}}",
	  NULL },
	{ "V10 RFC 3339 time and LSN alone", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetLSN':'0/3000028','targetTLI':'3'}}}}",
	  NULL },
	{ "V10 two targets", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetLSN':'0/1','targetTime':'2024-01-02T10:00:00Z'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget" },
	{ "V10 bad LSN", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'targetLSN':'zz'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.targetLSN" },
	{ "V10 bad time", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetTime':'yesterday'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.targetTime" },
	{ "V10 XID over uint32", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetXID':'4294967296','backupID':'x'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.targetXID" },
	{ "V10 name too long", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'backupID':'x',"
	  "'targetName':'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.targetName" },
	{ "V10 TLI zero", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'targetTLI':'0'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.targetTLI" },
	{ "V10 name without backupID", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'targetName':'rp'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.backupID" },
	{ "V10 targetImmediate false still counts", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetImmediate':false,'targetLSN':'0/1','backupID':'x'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget" },
	{ "V10 bare date", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{"
	  "'targetTime':'2024-01-02'}}}}",
	  NULL },
	{ "V10 name with backupID", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'targetName':'rp',"
	  "'backupID':'20240101T000000'}}}}",
	  NULL },
	{ "V20 pg_basebackup source found", NULL,
	  "{'bootstrap':{'pg_basebackup':{'source':'origin'}}," EXT_ORIGIN "}", NULL },
	{ "V20 pg_basebackup unknown source", NULL,
	  "{'bootstrap':{'pg_basebackup':{'source':'nope','database':'a','owner':'a'}}," EXT_ORIGIN
	  "}",
	  "spec.bootstrap.pg_basebackup.source" },
	{ "V22 recovery unknown source", NULL,
	  "{'bootstrap':{'recovery':{'source':'nope'}}," EXT_ORIGIN "}",
	  "spec.bootstrap.recovery.source" },
	{ "V22 recovery source without configuration", NULL,
	  "{'bootstrap':{'recovery':{'source':'origin'}},'externalClusters':[{'name':'origin'}]}",
	  "spec.bootstrap.recovery.source" },
	{ "V22 recovery source with plugin", NULL,
	  "{'bootstrap':{'recovery':{'source':'origin'}},'externalClusters':[{'name':'origin',"
	  "'plugin':{'name':'barman-cloud.cloudnative-pg.io'}}]}",
	  NULL },
	{ "V23 volume snapshots", NULL,
	  "{'bootstrap':{'recovery':{'volumeSnapshots':{'storage':{'name':'s','kind':"
	  "'VolumeSnapshot','apiGroup':'snapshot.storage.k8s.io'},'walStorage':{'name':'w',"
	  "'kind':'PersistentVolumeClaim'}}}},'walStorage':{'size':'1Gi'}}",
	  NULL },
	{ "V23 wrong kind", NULL,
	  "{'bootstrap':{'recovery':{'volumeSnapshots':{'storage':{'name':'s','kind':'Pod'}}}}}",
	  "spec.bootstrap.recovery.volumeSnapshots.storage" },
	{ "V23 wal snapshot without walStorage", NULL,
	  "{'bootstrap':{'recovery':{'volumeSnapshots':{'storage':{'name':'s','kind':"
	  "'PersistentVolumeClaim'},'walStorage':{'name':'w','kind':'PersistentVolumeClaim'}}}}}",
	  "spec.bootstrap.recovery.volumeSnapshots.walStorage" },
	{ "V23 backup with snapshots", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'volumeSnapshots':{'storage':{'name':"
	  "'s','kind':'PersistentVolumeClaim'}}}}}",
	  "spec.bootstrap.recovery.backup" },
	{ "V23 backupID with snapshots", NULL,
	  "{'bootstrap':{'recovery':{'recoveryTarget':{'backupID':'x'},'volumeSnapshots':{"
	  "'storage':{'name':'s','kind':'PersistentVolumeClaim'}}}}}",
	  "spec.bootstrap.recovery.recoveryTarget.backupID" },
};

static void test_bootstrap_rules(void **state)
{
	(void)state;
	RUN(bootstrap_rows);
}

/* ---- V5, V6, V8, V9, V11-V13, V18, V25, V26, V42, V43, V46, V49, V50 ---- */

static const struct row cluster_rows[] = {
	{ "V5 superuser secret", NULL, "{'superuserSecret':{'name':'s'}}", NULL },
	{ "V5 empty superuser secret", NULL, "{'superuserSecret':{}}",
	  "spec.superuserSecret.name" },
	{ "V6 server certificates", NULL,
	  "{'certificates':{'serverTLSSecret':'t','serverCASecret':'ca',"
	  "'replicationTLSSecret':'r','clientCASecret':'cc'}}",
	  NULL },
	{ "V6 alt names with server TLS", NULL,
	  "{'certificates':{'serverTLSSecret':'t','serverCASecret':'ca','serverAltDNSNames':['x']}}",
	  "spec.certificates.serverAltDNSNames" },
	{ "V6 alt names alone", NULL, "{'certificates':{'serverAltDNSNames':['x']}}", NULL },
	{ "V6 server TLS without CA", NULL, "{'certificates':{'serverTLSSecret':'t'}}",
	  "spec.certificates.serverCASecret" },
	{ "V6 replication TLS without client CA", NULL,
	  "{'certificates':{'replicationTLSSecret':'r'}}", "spec.certificates.clientCASecret" },
	{ "V8 plain tag", NULL, "{'imageName':'postgres:16'}", NULL },
	{ "V8 tag and digest", NULL,
	  "{'imageName':'ghcr.io/x/postgresql:17.2-bookworm@sha256:0123abcd'}", NULL },
	{ "V8 registry port", NULL, "{'imageName':'localhost:5000/postgres:17.2'}", NULL },
	{ "V8 latest", NULL, "{'imageName':'postgres:latest'}", "spec.imageName" },
	{ "V8 no tag means latest", NULL, "{'imageName':'localhost:5000/postgres'}",
	  "spec.imageName" },
	{ "V8 digest only", NULL, "{'imageName':'postgres@sha256:0123abcd'}", "spec.imageName" },
	{ "V8 tag not a version", NULL, "{'imageName':'postgres:bookworm'}", "spec.imageName" },
	{ "V8 catalog instead of image", NULL,
	  "{'imageName':null,'imageCatalogRef':{'apiGroup':'postgresql.cnpg.io','kind':"
	  "'ImageCatalog','name':'c','major':17}}",
	  NULL },
	{ "V9 pull policy", NULL, "{'imagePullPolicy':'IfNotPresent'}", NULL },
	{ "V9 bad pull policy", NULL, "{'imagePullPolicy':'Sometimes'}", "spec.imagePullPolicy" },
	{ "V11 supervised with 3", NULL, "{'instances':3,'primaryUpdateStrategy':'supervised'}",
	  NULL },
	{ "V11 supervised single instance", NULL, "{'primaryUpdateStrategy':'supervised'}",
	  "spec.primaryUpdateStrategy" },
	{ "V11 unknown strategy", NULL, "{'primaryUpdateStrategy':'sometimes'}",
	  "spec.primaryUpdateStrategy" },
	{ "V12 min <= max", NULL, "{'instances':3,'minSyncReplicas':1,'maxSyncReplicas':2}",
	  NULL },
	{ "V12 min > max", NULL, "{'instances':3,'minSyncReplicas':2,'maxSyncReplicas':1}",
	  "spec.minSyncReplicas" },
	{ "V12 negative min", NULL, "{'instances':3,'minSyncReplicas':-1}",
	  "spec.minSyncReplicas" },
	{ "V13 max == instances", NULL, "{'instances':3,'maxSyncReplicas':3}",
	  "spec.maxSyncReplicas" },
	{ "V13 max == instances - 1", NULL, "{'instances':3,'maxSyncReplicas':2}", NULL },
	{ "V18 bad name", "{'name':'Bad_Name'}", NULL, "metadata.name" },
	{ "V18 name too long", "{'name':'a23456789012345678901234567890123456789012345678901'}",
	  NULL, "metadata.name" },
	{ "V18 50 characters", "{'name':'a2345678901234567890123456789012345678901234567890'}",
	  NULL, NULL },
	{ "V25 tolerations", NULL,
	  "{'affinity':{'tolerations':[{'key':'example.com/k','operator':'Equal','value':'v',"
	  "'effect':'NoSchedule'},{'operator':'Exists'},{'key':'k','operator':'Exists',"
	  "'effect':'NoExecute','tolerationSeconds':30}]}}",
	  NULL },
	{ "V25 empty key needs Exists", NULL,
	  "{'affinity':{'tolerations':[{'operator':'Equal','value':'v'}]}}",
	  "spec.affinity.tolerations[0].operator" },
	{ "V25 tolerationSeconds needs NoExecute", NULL,
	  "{'affinity':{'tolerations':[{'key':'k','operator':'Exists','effect':'NoSchedule',"
	  "'tolerationSeconds':5}]}}",
	  "spec.affinity.tolerations[0].effect" },
	{ "V25 Exists with value", NULL,
	  "{'affinity':{'tolerations':[{'key':'k','operator':'Exists','value':'v'}]}}",
	  "spec.affinity.tolerations[0].operator" },
	{ "V25 unknown effect", NULL,
	  "{'affinity':{'tolerations':[{'key':'k','operator':'Exists','effect':'Sometimes'}]}}",
	  "spec.affinity.tolerations[0].effect" },
	{ "V25 bad key", NULL,
	  "{'affinity':{'tolerations':[{'key':'-bad','operator':'Exists'}]}}",
	  "spec.affinity.tolerations[0].key" },
	{ "V25 bad value", NULL,
	  "{'affinity':{'tolerations':[{'key':'k','value':'not ok'}]}}",
	  "spec.affinity.tolerations[0].value" },
	{ "V26 required", NULL, "{'affinity':{'podAntiAffinityType':'required'}}", NULL },
	{ "V26 unknown", NULL, "{'affinity':{'podAntiAffinityType':'sometimes'}}",
	  "spec.affinity.podAntiAffinityType" },
	{ "V42 hibernation on", "{'annotations':{'cnpg.io/hibernation':'on'}}", NULL, NULL },
	{ "V42 hibernation maybe", "{'annotations':{'cnpg.io/hibernation':'maybe'}}", NULL,
	  "metadata.annotations[cnpg.io/hibernation]" },
	{ "V43 valid pod patch",
	  "{'annotations':{'cnpg.io/podPatch':'[{`op`:`add`,`path`:`/metadata/labels/a`,"
	  "`value`:`b`},{`op`:`add`,`path`:`/spec/containers/0/env/-`,`value`:{`name`:`X`,"
	  "`value`:`1`}},{`op`:`replace`,`path`:`/spec/containers/0/securityContext/"
	  "readOnlyRootFilesystem`,`value`:false},{`op`:`remove`,`path`:`/spec/affinity`},"
	  "{`op`:`add`,`path`:`/spec/dnsPolicy`,`value`:`None`}]'}}",
	  NULL, NULL },
	{ "V43 patch on the WAL volume", "{'annotations':{'cnpg.io/podPatch':'[{`op`:`test`,"
					 "`path`:`/spec/volumes/3/name`,`value`:`pg-wal`}]'}}",
	  "{'walStorage':{'size':'1Gi'}}", NULL },
	{ "V43 patch does not apply",
	  "{'annotations':{'cnpg.io/podPatch':'[{`op`:`remove`,`path`:`/spec/nothing`}]'}}", NULL,
	  "metadata.annotations[cnpg.io/podPatch]" },
	{ "V43 test fails", "{'annotations':{'cnpg.io/podPatch':'[{`op`:`test`,"
			    "`path`:`/spec/containers/0/name`,`value`:`mysql`}]'}}",
	  NULL, "metadata.annotations[cnpg.io/podPatch]" },
	{ "V43 pod patch not JSON", "{'annotations':{'cnpg.io/podPatch':'not json'}}", NULL,
	  "metadata.annotations[cnpg.io/podPatch]" },
	{ "V43 pod patch unknown op",
	  "{'annotations':{'cnpg.io/podPatch':'[{`op`:`frob`,`path`:`/x`}]'}}", NULL,
	  "metadata.annotations[cnpg.io/podPatch]" },
	{ "V43 pod patch add without value",
	  "{'annotations':{'cnpg.io/podPatch':'[{`op`:`add`,`path`:`/x`}]'}}", NULL,
	  "metadata.annotations[cnpg.io/podPatch]" },
	{ "V46 liveness pinger",
	  "{'annotations':{'alpha.cnpg.io/livenessPinger':'{`enabled`:true,`requestTimeout`:500}'}}",
	  NULL, NULL },
	{ "V46 liveness pinger without enabled",
	  "{'annotations':{'alpha.cnpg.io/livenessPinger':'{`requestTimeout`:500}'}}", NULL,
	  "metadata.annotations[alpha.cnpg.io/livenessPinger]" },
	{ "V46 liveness pinger not JSON",
	  "{'annotations':{'alpha.cnpg.io/livenessPinger':'yes'}}", NULL,
	  "metadata.annotations[alpha.cnpg.io/livenessPinger]" },
	{ "V49 service account name", NULL, "{'serviceAccountName':'sa'}", NULL },
	{ "V49 name and template", NULL,
	  "{'serviceAccountName':'sa','serviceAccountTemplate':{'metadata':{}}}",
	  "spec.serviceAccountName" },
	{ "V50 default lease", NULL,
	  "{'primaryLease':{'leaseDurationSeconds':15,'renewDeadlineSeconds':10,"
	  "'retryPeriodSeconds':2}}",
	  NULL },
	{ "V50 lease not above renew", NULL,
	  "{'primaryLease':{'leaseDurationSeconds':10,'renewDeadlineSeconds':10}}",
	  "spec.primaryLease.leaseDurationSeconds" },
	{ "V50 renew not above 1.2 retry", NULL,
	  "{'primaryLease':{'renewDeadlineSeconds':6,'retryPeriodSeconds':5}}",
	  "spec.primaryLease.renewDeadlineSeconds" },
};

static void test_cluster_rules(void **state)
{
	(void)state;
	RUN(cluster_rows);
}

/* ---- V14-V17, V19, V21, V41: storage and resources ---- */

static const struct row storage_rows[] = {
	{ "V14 size from pvcTemplate", NULL,
	  "{'storage':{'pvcTemplate':{'resources':{'requests':{'storage':'1Gi'}}}}}", NULL },
	{ "V14 no size", NULL, "{'storage':{'storageClass':'standard'}}", "spec.storage.size" },
	{ "V14 no storage at all", NULL, "{'storage':null}", "spec.storage.size" },
	{ "V14 invalid size", NULL, "{'storage':{'size':'lots'}}", "spec.storage.size" },
	{ "V14 zero pvcTemplate request", NULL,
	  "{'storage':{'pvcTemplate':{'resources':{'requests':{'storage':'0'}}}}}",
	  "spec.storage.size" },
	{ "V15 wal storage", NULL, "{'walStorage':{'size':'500Mi'}}", NULL },
	{ "V15 invalid wal size", NULL, "{'walStorage':{'size':'1Gb'}}", "spec.walStorage.size" },
	{ "V16 size limit only", NULL,
	  "{'ephemeralVolumesSizeLimit':{'shm':'1Gi','temporaryData':'2Gi'}}", NULL },
	{ "V16 source and temporaryData", NULL,
	  "{'ephemeralVolumeSource':{'volumeClaimTemplate':{'spec':{}}},"
	  "'ephemeralVolumesSizeLimit':{'temporaryData':'2Gi'}}",
	  "spec.ephemeralVolumeSource" },
	{ "V17/V19 tablespaces", NULL,
	  "{'tablespaces':[{'name':'ts_1$','storage':{'size':'1Gi'}},{'name':'idx',"
	  "'storage':{'size':'2Gi'},'temporary':true}]}",
	  NULL },
	{ "V17 tablespace without size", NULL, "{'tablespaces':[{'name':'ts','storage':{}}]}",
	  "spec.tablespaces[0].storage.size" },
	{ "V19 duplicate case-insensitive", NULL,
	  "{'tablespaces':[{'name':'ts','storage':{'size':'1Gi'}},{'name':'TS','storage':"
	  "{'size':'1Gi'}}]}",
	  "spec.tablespaces[1]" },
	{ "V19 pg_ prefix", NULL, "{'tablespaces':[{'name':'pg_x','storage':{'size':'1Gi'}}]}",
	  "spec.tablespaces[0]" },
	{ "V19 bad identifier", NULL, "{'tablespaces':[{'name':'1ts','storage':{'size':'1Gi'}}]}",
	  "spec.tablespaces[0]" },
	{ "V19 same volume name", NULL,
	  "{'tablespaces':[{'name':'a_b','storage':{'size':'1Gi'}},{'name':'a$b','storage':"
	  "{'size':'1Gi'}}]}",
	  "spec.tablespaces[1]" },
	{ "V19 64 characters", NULL,
	  "{'tablespaces':[{'name':'"
	  "a234567890123456789012345678901234567890123456789012345678901234',"
	  "'storage':{'size':'1Gi'}}]}",
	  "spec.tablespaces[0]" },
	{ "V21 snapshot class for tablespace", NULL,
	  "{'tablespaces':[{'name':'ts','storage':{'size':'1Gi'}}],'backup':{'volumeSnapshot':"
	  "{'className':'c','tablespaceClassName':{'ts':'c2'}}}}",
	  NULL },
	{ "V21 snapshot class for unknown tablespace", NULL,
	  "{'backup':{'volumeSnapshot':{'tablespaceClassName':{'nope':'c2'}}}}",
	  "spec.backup.volumeSnapshot.tablespaceClassName.nope" },
	{ "V41 resources", NULL,
	  "{'resources':{'requests':{'cpu':'500m','memory':'1Gi'},'limits':{'cpu':1,"
	  "'memory':'1Gi'}}}",
	  NULL },
	{ "V41 cpu request above limit", NULL,
	  "{'resources':{'requests':{'cpu':'1500m'},'limits':{'cpu':'1'}}}",
	  "spec.resources.requests.cpu" },
	{ "V41 memory request above limit", NULL,
	  "{'resources':{'requests':{'memory':'2Gi'},'limits':{'memory':'2G'}}}",
	  "spec.resources.requests.memory" },
	{ "V41 ephemeral storage above limit", NULL,
	  "{'resources':{'requests':{'ephemeral-storage':'2Gi'},'limits':{'ephemeral-storage':"
	  "'1Gi'}}}",
	  "spec.resources.requests.ephemeral-storage" },
	{ "V41 hugepages request != limit", NULL,
	  "{'resources':{'requests':{'memory':'1Gi','hugepages-2Mi':'1Gi'},'limits':{"
	  "'hugepages-2Mi':'2Gi'}}}",
	  "spec.resources.requests.hugepages-2Mi" },
	{ "V41 hugepages alone", NULL,
	  "{'resources':{'requests':{'hugepages-2Mi':'1Gi'},'limits':{'hugepages-2Mi':'1Gi'}}}",
	  "spec.resources" },
	{ "V41 shared_buffers above memory", NULL,
	  "{'resources':{'requests':{'memory':'1Gi'}},'postgresql':{'parameters':{"
	  "'shared_buffers':'2GB'}}}",
	  "spec.resources.requests.memory" },
	{ "V41 hugepages request without limit", NULL,
	  "{'resources':{'requests':{'memory':'1Gi','hugepages-1Gi':'2Gi'}}}", NULL },
	{ "V41 shared_buffers without memory request", NULL,
	  "{'postgresql':{'parameters':{'shared_buffers':'2GB'}}}", NULL },
	{ "V41 bare shared_buffers is MB", NULL,
	  "{'resources':{'requests':{'memory':'1Gi'}},'postgresql':{'parameters':{"
	  "'shared_buffers':'1025'}}}",
	  "spec.resources.requests.memory" },
	{ "V41 shared_buffers backed by hugepages", NULL,
	  "{'resources':{'requests':{'memory':'1Gi','hugepages-2Mi':'4Gi'},'limits':{"
	  "'memory':'1Gi','hugepages-2Mi':'4Gi'}},'postgresql':{'parameters':{"
	  "'shared_buffers':'2GB'}}}",
	  NULL },
};

static void test_storage_rules(void **state)
{
	(void)state;
	RUN(storage_rows);
}

/* ---- V24, V27-V29, V44, V45 ---- */

#define TOKEN_OK                                                                            \
	"eyJsYXRlc3RDaGVja3BvaW50VGltZWxpbmVJRCI6ICIxIiwgInJlZG9XYWxGaWxlIjogIjAwMDAwMDAxMDAw" \
	"MDAwMDAwMDAwMDAwMyIsICJkYXRhYmFzZVN5c3RlbUlkZW50aWZpZXIiOiAiNzMwMDAwMDAwMDAwMDAwMDAw" \
	"MCIsICJsYXRlc3RDaGVja3BvaW50UkVET0xvY2F0aW9uIjogIjAvMzAwMDAyOCIsICJ0aW1lT2ZMYXRlc3RD" \
	"aGVja3BvaW50IjogIk1vbiAwMSBKYW4gMjAyNCIsICJvcGVyYXRvclZlcnNpb24iOiAiMS4zMC4wIn0="
/* the same without operatorVersion */
#define TOKEN_INCOMPLETE                                                                    \
	"eyJsYXRlc3RDaGVja3BvaW50VGltZWxpbmVJRCI6ICIxIiwgInJlZG9XYWxGaWxlIjogIjAwMDAwMDAxMDAw" \
	"MDAwMDAwMDAwMDAwMyIsICJkYXRhYmFzZVN5c3RlbUlkZW50aWZpZXIiOiAiNzMwMDAwMDAwMDAwMDAwMDAw" \
	"MCIsICJsYXRlc3RDaGVja3BvaW50UkVET0xvY2F0aW9uIjogIjAvMzAwMDAyOCIsICJ0aW1lT2ZMYXRlc3RD" \
	"aGVja3BvaW50IjogIk1vbiAwMSBKYW4gMjAyNCJ9"

#define EXT_PG_ORIGIN                                                                       \
	"'externalClusters':[{'name':'origin','connectionParameters':{'host':'h'}},"           \
	"{'name':'pg','connectionParameters':{'host':'p'}}]"
#define PRIMARY_PROMOTED "'replica':{'primary':'pg','source':'origin','promotionToken':'%s'}"

static const struct row replica_rows[] = {
	{ "V24 external clusters", NULL,
	  "{'externalClusters':[{'name':'a','connectionParameters':{'host':'h'},'sslCert':{"
	  "'name':'s','key':'tls.crt'}},{'name':'b','barmanObjectStore':{'destinationPath':"
	  "'s3://x'}}]}",
	  NULL },
	{ "V24 no configuration", NULL, "{'externalClusters':[{'name':'a'}]}",
	  "spec.externalClusters[0]" },
	{ "V24 name ..", NULL,
	  "{'externalClusters':[{'name':'..','connectionParameters':{'host':'h'}}]}",
	  "spec.externalClusters[0].name" },
	{ "V24 name with slash", NULL,
	  "{'externalClusters':[{'name':'a/b','connectionParameters':{'host':'h'}}]}",
	  "spec.externalClusters[0].name" },
	{ "V24 duplicate names", NULL,
	  "{'externalClusters':[{'name':'a','plugin':{'name':'p'}},{'name':'a','plugin':{"
	  "'name':'p'}}]}",
	  "spec.externalClusters[1].name" },
	{ "V24 ssl key with slash", NULL,
	  "{'externalClusters':[{'name':'a','connectionParameters':{'host':'h'},'sslKey':{"
	  "'name':'s','key':'..\\\\x'}}]}",
	  "spec.externalClusters[0].sslKey.key" },
	{ "V27 replica via pg_basebackup", NULL,
	  "{'replica':{'enabled':true,'source':'origin'},'bootstrap':{'pg_basebackup':{"
	  "'source':'origin','database':'a','owner':'a'}}," EXT_ORIGIN "}",
	  NULL },
	{ "V27 enabled with primary", NULL,
	  "{'replica':{'enabled':true,'primary':'origin','source':'origin'},'bootstrap':{"
	  "'pg_basebackup':{'source':'origin','database':'a','owner':'a'}}," EXT_ORIGIN "}",
	  "spec.replica.enabled" },
	{ "V27 replica bootstrapped by initdb on create", NULL,
	  "{'replica':{'enabled':true,'source':'origin'}," EXT_ORIGIN "}", "spec.bootstrap" },
	{ "V27 replica with initdb after create", "{'resourceVersion':'42'}",
	  "{'replica':{'enabled':true,'source':'origin'}," EXT_ORIGIN "}", NULL },
	{ "V27 replica without bootstrap", NULL,
	  "{'bootstrap':null,'replica':{'enabled':true,'source':'origin'}," EXT_ORIGIN "}",
	  "spec.bootstrap" },
	{ "V27 unknown source", NULL,
	  "{'replica':{'enabled':false,'source':'nope'}," EXT_ORIGIN "}", "spec.replica.source" },
	{ "V27 distributed topology, this is a replica", NULL,
	  "{'replica':{'primary':'origin','source':'origin'},'bootstrap':{'recovery':{"
	  "'source':'origin'}}," EXT_PG_ORIGIN "}",
	  NULL },
	{ "V27 distributed topology, this is the primary", NULL,
	  "{'replica':{'primary':'pg','source':'origin'}," EXT_PG_ORIGIN "}", NULL },
	{ "V27 self not an external cluster", NULL,
	  "{'replica':{'primary':'x','self':'me','source':'origin'},'bootstrap':{'recovery':{"
	  "'source':'origin'}}," EXT_ORIGIN "}",
	  "spec.replica.self" },
	{ "V27 primary not an external cluster", NULL,
	  "{'replica':{'primary':'x','source':'origin'},'bootstrap':{'recovery':{"
	  "'source':'origin'}}," EXT_ORIGIN "}",
	  "spec.replica.primary" },
	{ "V28 s3 keys", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
	  "'accessKeyId':{'name':'a','key':'k'},'secretAccessKey':{'name':'a','key':'s'}}}}}",
	  NULL },
	{ "V28 s3 IAM role", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
	  "'inheritFromIAMRole':true}}}}",
	  NULL },
	{ "V28 azure AD", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'https://x','azureCredentials':{"
	  "'inheritFromAzureAD':true}}}}",
	  NULL },
	{ "V28 google", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'gs://x','googleCredentials':{"
	  "'gkeEnvironment':true}}}}",
	  NULL },
	{ "V28 no credentials", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b'}}}",
	  "spec.backup.barmanObjectStore" },
	{ "V28 google without credentials", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'gs://x','googleCredentials':{}}}}",
	  "spec.backup.barmanObjectStore.googleCredentials" },
	{ "V28 s3 IAM role and keys", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
	  "'inheritFromIAMRole':true,'accessKeyId':{'name':'a','key':'k'},'secretAccessKey':{"
	  "'name':'a','key':'s'}}}}}",
	  "spec.backup.barmanObjectStore.s3Credentials" },
	{ "V28 two credentials", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
	  "'inheritFromIAMRole':true},'googleCredentials':{'gkeEnvironment':true}}}}",
	  "spec.backup.barmanObjectStore" },
	{ "V28 s3 without secret key", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
	  "'accessKeyId':{'name':'a','key':'k'}}}}}",
	  "spec.backup.barmanObjectStore.s3Credentials" },
	{ "V28 azure connection string and account", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'https://x','azureCredentials':{"
	  "'connectionString':{'name':'a','key':'c'},'storageAccount':{'name':'a','key':'s'}}}}}",
	  "spec.backup.barmanObjectStore.azureCredentials" },
	{ "V28 azure key without account", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'https://x','azureCredentials':{"
	  "'storageKey':{'name':'a','key':'k'}}}}}",
	  "spec.backup.barmanObjectStore.azureCredentials" },
	{ "V28 azure key and SAS", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'https://x','azureCredentials':{"
	  "'storageAccount':{'name':'a','key':'s'},'storageKey':{'name':'a','key':'k'},"
	  "'storageSasToken':{'name':'a','key':'t'}}}}}",
	  "spec.backup.barmanObjectStore.azureCredentials" },
	{ "V29 retention", NULL, "{'backup':{'retentionPolicy':'30d'}}", NULL },
	{ "V29 bad unit", NULL, "{'backup':{'retentionPolicy':'30x'}}",
	  "spec.backup.retentionPolicy" },
	{ "V29 zero", NULL, "{'backup':{'retentionPolicy':'0d'}}", "spec.backup.retentionPolicy" },
	{ "V44 promotion token on the primary", NULL,
	  "{'replica':{'primary':'pg','source':'origin','promotionToken':'" TOKEN_OK "'},"
	  EXT_PG_ORIGIN "}",
	  NULL },
	{ "V44 token not base64", NULL,
	  "{'replica':{'primary':'pg','source':'origin','promotionToken':'not-base64!'},"
	  EXT_PG_ORIGIN "}",
	  "spec.replica.promotionToken" },
	{ "V44 token missing a field", NULL,
	  "{'replica':{'primary':'pg','source':'origin','promotionToken':'" TOKEN_INCOMPLETE
	  "'}," EXT_PG_ORIGIN "}",
	  "spec.replica.promotionToken" },
	{ "V44 token on a replica", NULL,
	  "{'replica':{'primary':'origin','source':'origin','promotionToken':'" TOKEN_OK "'},"
	  "'bootstrap':{'recovery':{'source':'origin'}}," EXT_PG_ORIGIN "}",
	  "spec.replica.promotionToken" },
	{ "V44 token with minApplyDelay", NULL,
	  "{'replica':{'primary':'pg','source':'origin','minApplyDelay':'1h','promotionToken':'"
	  TOKEN_OK "'}," EXT_PG_ORIGIN "}",
	  "spec.replica.minApplyDelay" },
	{ "V45 one WAL archiver", NULL,
	  "{'plugins':[{'name':'a','isWALArchiver':true},{'name':'b','enabled':false,"
	  "'isWALArchiver':true},{'name':'c'}]}",
	  NULL },
	{ "V45 two WAL archivers", NULL,
	  "{'plugins':[{'name':'a','isWALArchiver':true},{'name':'b','isWALArchiver':true}]}",
	  "spec.plugins[1].isWALArchiver" },
	{ "V45 WAL archiver with barman", NULL,
	  "{'plugins':[{'name':'a','isWALArchiver':true}],'backup':{'barmanObjectStore':{"
	  "'destinationPath':'s3://b','s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.plugins[0].isWALArchiver" },
};

static void test_replica_rules(void **state)
{
	(void)state;
	RUN(replica_rows);
}

/* ---- V30-V36, V40 ---- */

#define PARAMS(p) "{'postgresql':{'parameters':{" p "}}}"

static const struct row postgres_rows[] = {
	{ "V30a legacy and new synchronous", NULL,
	  "{'instances':3,'minSyncReplicas':1,'maxSyncReplicas':1,'postgresql':{'synchronous':{"
	  "'method':'any','number':1}}}",
	  "spec.postgresql.synchronous" },
	{ "V30b PostgreSQL 12", NULL, "{'imageName':'postgres:12.4'}", "spec.imageName" },
	{ "V30b catalog major 12", NULL,
	  "{'imageName':null,'imageCatalogRef':{'apiGroup':'postgresql.cnpg.io','kind':"
	  "'ImageCatalog','name':'c','major':12}}",
	  "spec.imageCatalogRef.major" },
	{ "V30c bad parameter name", NULL, PARAMS("'bad-name':'1'"),
	  "spec.postgresql.parameters.bad-name" },
	{ "V30c dotted parameter name", NULL, PARAMS("'pgaudit.log':'all','work_mem':'4MB'"),
	  NULL },
	{ "V30d CNPG defaults of fixed parameters", NULL,
	  PARAMS("'logging_collector':'on','log_destination':'csvlog',"
		 "'shared_preload_libraries':'','archive_mode':'on','wal_level':'logical'"),
	  NULL },
	{ "V30d archive_command", NULL, PARAMS("'archive_command':'true'"),
	  "spec.postgresql.parameters.archive_command" },
	{ "V30d case-insensitive name", NULL, PARAMS("'Archive_Command':'true'"),
	  "spec.postgresql.parameters.Archive_Command" },
	{ "V30d blocked with other value", NULL, PARAMS("'logging_collector':'off'"),
	  "spec.postgresql.parameters.logging_collector" },
	{ "V30d port", NULL, PARAMS("'port':'5433'"), "spec.postgresql.parameters.port" },
	{ "V30d archive_mode always on a primary", NULL, PARAMS("'archive_mode':'always'"),
	  "spec.postgresql.parameters.archive_mode" },
	{ "V30d archive_mode off when skipping archiving",
	  "{'annotations':{'cnpg.io/skipWalArchiving':'enabled'}}", PARAMS("'archive_mode':'off'"),
	  NULL },
	{ "V30d ssl_ecdh_curve no longer fixed", NULL, PARAMS("'ssl_ecdh_curve':'prime256v1'"),
	  NULL },
	{ "V30b-d skipped when the major does not resolve", NULL,
	  "{'imageName':null,'postgresql':{'parameters':{'archive_command':'true'}}}", NULL },
	{ "V30e unknown wal_level", NULL, PARAMS("'wal_level':'archive'"),
	  "spec.postgresql.parameters.wal_level" },
	{ "V30e minimal with 3 instances", NULL,
	  "{'instances':3,'postgresql':{'parameters':{'wal_level':'minimal','max_wal_senders':"
	  "'0'}}}",
	  "spec.postgresql.parameters.wal_level" },
	{ "V30e minimal with archiving", NULL,
	  PARAMS("'wal_level':'minimal','max_wal_senders':'0'"),
	  "spec.postgresql.parameters.wal_level" },
	{ "V30e minimal on a single instance without archiving",
	  "{'annotations':{'cnpg.io/skipWalArchiving':'enabled'}}",
	  PARAMS("'wal_level':'minimal','max_wal_senders':'0','archive_mode':'off'"), NULL },
	{ "V30f minimal without max_wal_senders 0",
	  "{'annotations':{'cnpg.io/skipWalArchiving':'enabled'}}", PARAMS("'wal_level':'minimal'"),
	  "spec.postgresql.parameters.max_wal_senders" },
	{ "V30g shared_buffers", NULL, PARAMS("'shared_buffers':'256MB','work_mem':'8MB'"), NULL },
	{ "V30g bare shared_buffers", NULL, PARAMS("'shared_buffers':'512'"), NULL },
	{ "V30g bad shared_buffers", NULL, PARAMS("'shared_buffers':'lots'"),
	  "spec.postgresql.parameters.shared_buffers" },
	{ "V30g shared_buffers with 8kB unit", NULL, PARAMS("'shared_buffers':'8kB'"), NULL },
	{ "V30h booleans", NULL,
	  PARAMS("'hot_standby_feedback':'of','sync_replication_slots':'Yes',"
		 "'wal_log_hints':'1'"),
	  NULL },
	{ "V30h bad boolean", NULL, PARAMS("'hot_standby_feedback':'maybe'"),
	  "spec.postgresql.parameters.hot_standby_feedback" },
	{ "V30h ambiguous o", NULL, PARAMS("'sync_replication_slots':'o'"),
	  "spec.postgresql.parameters.sync_replication_slots" },
	{ "V30i wal_log_hints off with replicas", NULL,
	  "{'instances':2,'postgresql':{'parameters':{'wal_log_hints':'off'}}}",
	  "spec.postgresql.parameters.wal_log_hints" },
	{ "V30i wal_log_hints off single instance", NULL, PARAMS("'wal_log_hints':'off'"), NULL },
	{ "V30j min_wal_size above default max", NULL, PARAMS("'min_wal_size':'2GB'"),
	  "spec.postgresql.parameters.min_wal_size" },
	{ "V30j bad max_wal_size", NULL, PARAMS("'max_wal_size':'big'"),
	  "spec.postgresql.parameters.max_wal_size" },
	{ "V30j wal sizes", NULL, PARAMS("'min_wal_size':'1GB','max_wal_size':'4096'"), NULL },
	{ "V30j max_wal_size over WAL volume", NULL,
	  "{'walStorage':{'size':'1Gi'},'postgresql':{'parameters':{'max_wal_size':'2GB'}}}",
	  "spec.postgresql.parameters.max_wal_size" },
	{ "V30j max_wal_size within WAL volume", NULL,
	  "{'walStorage':{'size':'10Gi'},'postgresql':{'parameters':{'max_wal_size':'2GB'}}}",
	  NULL },
	{ "V30k election constraint without labels", NULL,
	  "{'postgresql':{'syncReplicaElectionConstraint':{'enabled':true}}}",
	  "spec.postgresql.syncReplicaElectionConstraint.nodeLabelsAntiAffinity" },
	{ "V30k election constraint with labels", NULL,
	  "{'postgresql':{'syncReplicaElectionConstraint':{'enabled':true,"
	  "'nodeLabelsAntiAffinity':['topology.kubernetes.io/zone']}}}",
	  NULL },
	{ "V31 synchronous", NULL,
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':1}}}", NULL },
	{ "V31 number == instances", NULL,
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':3}}}",
	  "spec.postgresql.synchronous" },
	{ "V31 standby names count", NULL,
	  "{'instances':2,'postgresql':{'synchronous':{'method':'first','number':2,"
	  "'standbyNamesPre':['x']}}}",
	  NULL },
	{ "V32 annotation true with synchronous", "{'annotations':{'alpha.cnpg.io/failoverQuorum':"
						  "'true'}}",
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':1}}}", NULL },
	{ "V32 annotation not a bool", "{'annotations':{'alpha.cnpg.io/failoverQuorum':'maybe'}}",
	  NULL, "metadata.annotations[alpha.cnpg.io/failoverQuorum]" },
	{ "V32 annotation true without synchronous",
	  "{'annotations':{'alpha.cnpg.io/failoverQuorum':'t'}}", NULL,
	  "spec.postgresql.synchronous" },
	{ "V33 quorum", NULL,
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':1,"
	  "'failoverQuorum':true}}}",
	  NULL },
	{ "V33 quorum number not above names", NULL,
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':1,"
	  "'standbyNamesPost':['x'],'failoverQuorum':true}}}",
	  "spec.postgresql.synchronous.number" },
	{ "V34 ldap", NULL,
	  "{'postgresql':{'ldap':{'server':'ldap.example.com','bindAsAuth':{'prefix':'cn='}}}}",
	  NULL },
	{ "V34 ldap without server", NULL, "{'postgresql':{'ldap':{'port':389}}}",
	  "spec.postgresql.ldap.server" },
	{ "V34 both bind methods", NULL,
	  "{'postgresql':{'ldap':{'server':'s','bindAsAuth':{'prefix':'cn='},"
	  "'bindSearchAuth':{'baseDN':'dc=x'}}}}",
	  "spec.postgresql.ldap" },
	{ "V35 exclude patterns", NULL,
	  "{'replicationSlots':{'synchronizeReplicas':{'enabled':true,'excludePatterns':"
	  "['^foo','bar$']}}}",
	  NULL },
	{ "V35 bad pattern", NULL,
	  "{'replicationSlots':{'synchronizeReplicas':{'enabled':true,'excludePatterns':"
	  "['(unclosed']}}}",
	  "spec.replicationSlots.synchronizeReplicas.excludePatterns[0]" },
	{ "V35 bad pattern, only HA slots enabled", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true},'synchronizeReplicas':{"
	  "'enabled':false,'excludePatterns':['a[']}}}",
	  "spec.replicationSlots.synchronizeReplicas.excludePatterns[0]" },
	{ "V35 bad pattern but disabled", NULL,
	  "{'replicationSlots':{'synchronizeReplicas':{'enabled':false,'excludePatterns':"
	  "['(unclosed']}}}",
	  NULL },
	{ "V36 logical decoding on PG 18", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true,'synchronizeLogicalDecoding':"
	  "true}},'postgresql':{'parameters':{'hot_standby_feedback':'on',"
	  "'sync_replication_slots':'on'}}}",
	  NULL },
	{ "V36 logical decoding without parameters", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true,'synchronizeLogicalDecoding':"
	  "true}}}",
	  "spec.postgresql.parameters.hot_standby_feedback" },
	{ "V36 logical decoding without sync_replication_slots", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true,'synchronizeLogicalDecoding':"
	  "true}},'postgresql':{'parameters':{'hot_standby_feedback':'on'}}}",
	  "spec.postgresql.parameters.sync_replication_slots" },
	{ "V36 skipped when the major does not resolve", NULL,
	  "{'imageName':null,'replicationSlots':{'highAvailability':{'enabled':true,"
	  "'synchronizeLogicalDecoding':true}}}",
	  NULL },
	{ "V36 logical decoding on PG 16", NULL,
	  "{'imageName':'postgres:16.4','replicationSlots':{'highAvailability':{'enabled':true,"
	  "'synchronizeLogicalDecoding':true}},'postgresql':{'parameters':{"
	  "'hot_standby_feedback':'on'}}}",
	  "spec.replicationSlots.highAvailability.synchronizeLogicalDecoding" },
	{ "V36/V40 PG 16 with pg_failover_slots", NULL,
	  "{'imageName':'postgres:16.4','replicationSlots':{'highAvailability':{'enabled':true,"
	  "'synchronizeLogicalDecoding':true}},'postgresql':{'parameters':{"
	  "'hot_standby_feedback':'on','pg_failover_slots.synchronize_slot_names':'name_like:%'}}}",
	  NULL },
	{ "V40 pg_failover_slots without feedback", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true}},'postgresql':{'parameters':{"
	  "'pg_failover_slots.synchronize_slot_names':'x'}}}",
	  "spec.postgresql.parameters.hot_standby_feedback" },
	{ "V40 pg_failover_slots without replicationSlots", NULL,
	  "{'postgresql':{'parameters':{'hot_standby_feedback':'on',"
	  "'pg_failover_slots.synchronize_slot_names':'x'}}}",
	  "spec.replicationSlots" },
	{ "V40 pg_failover_slots without HA slots", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':false}},'postgresql':{'parameters':{"
	  "'hot_standby_feedback':'on','pg_failover_slots.synchronize_slot_names':'x'}}}",
	  "spec.replicationSlots.highAvailability.enabled" },
};

static void test_postgres_rules(void **state)
{
	(void)state;
	RUN(postgres_rows);
}

/* ---- V37-V39, V47, V48 ---- */

static const struct row managed_rows[] = {
	{ "V37 env", NULL, "{'env':[{'name':'TZ','value':'UTC'}]}", NULL },
	{ "V37 PG prefix", NULL, "{'env':[{'name':'TZ'},{'name':'PGDATA','value':'/x'}]}",
	  "spec.env[1].name" },
	{ "V37 cnpg prefix any case", NULL, "{'env':[{'name':'cnpg_x'}]}", "spec.env[0].name" },
	{ "V37 POD_NAME", NULL, "{'env':[{'name':'POD_NAME'}]}", "spec.env[0].name" },
	{ "V38 services", NULL,
	  "{'managed':{'services':{'disabledDefaultServices':['ro','r'],'additional':[{"
	  "'selectorType':'rw','serviceTemplate':{'metadata':{'name':'pg-lb'},'spec':{"
	  "'type':'LoadBalancer'}}}]}}}",
	  NULL },
	{ "V38 disable rw", NULL, "{'managed':{'services':{'disabledDefaultServices':['rw']}}}",
	  "spec.managed.services.disabledDefaultServices" },
	{ "V38 reserved name", NULL,
	  "{'managed':{'services':{'additional':[{'selectorType':'rw','serviceTemplate':{"
	  "'metadata':{'name':'pg-any'}}}]}}}",
	  "spec.managed.services.additional[0].serviceTemplate.metadata.name" },
	{ "V38 duplicate name", NULL,
	  "{'managed':{'services':{'additional':[{'selectorType':'rw','serviceTemplate':{"
	  "'metadata':{'name':'x'}}},{'selectorType':'ro','serviceTemplate':{'metadata':{"
	  "'name':'x'}}}]}}}",
	  "spec.managed.services.additional[1].serviceTemplate.metadata.name" },
	{ "V38 selector", NULL,
	  "{'managed':{'services':{'additional':[{'selectorType':'rw','serviceTemplate':{"
	  "'metadata':{'name':'x'},'spec':{'selector':{'app':'y'}}}}]}}}",
	  "spec.managed.services.additional[0].serviceTemplate.spec.selector" },
	{ "V38 missing name", NULL,
	  "{'managed':{'services':{'additional':[{'selectorType':'rw','serviceTemplate':{"
	  "'metadata':{}}}]}}}",
	  "spec.managed.services.additional[0].serviceTemplate.metadata.name" },
	{ "V39 roles", NULL,
	  "{'managed':{'roles':[{'name':'dante','connectionLimit':-1,'passwordSecret':{'name':"
	  "'s'}},{'name':'app2','disablePassword':true}]}}",
	  NULL },
	{ "V39 duplicate role", NULL, "{'managed':{'roles':[{'name':'a'},{'name':'a'}]}}",
	  "spec.managed.roles[1].name" },
	{ "V39 reserved postgres", NULL, "{'managed':{'roles':[{'name':'postgres'}]}}",
	  "spec.managed.roles[0].name" },
	{ "V39 reserved pg_ prefix", NULL, "{'managed':{'roles':[{'name':'pg_monitor'}]}}",
	  "spec.managed.roles[0].name" },
	{ "V39 connection limit", NULL,
	  "{'managed':{'roles':[{'name':'a','connectionLimit':-2}]}}",
	  "spec.managed.roles[0].connectionLimit" },
	{ "V39 disablePassword and passwordSecret", NULL,
	  "{'managed':{'roles':[{'name':'a','disablePassword':true,'passwordSecret':{'name':"
	  "'s'}}]}}",
	  "spec.managed.roles[0]" },
	{ "V47 pod selector in pg_hba", NULL,
	  "{'podSelectorRefs':[{'name':'app','selector':{'matchLabels':{'app':'web'},"
	  "'matchExpressions':[{'key':'tier','operator':'In','values':['a','b']}]}}],"
	  "'postgresql':{'pg_hba':['host all all ${podselector:app} scram-sha-256',"
	  "'host all all 10.0.0.0/8 md5']}}",
	  NULL },
	{ "V47 unknown descriptor", NULL,
	  "{'postgresql':{'pg_hba':['host all all 1.2.3.4/32 md5','host all all ${foo:bar} md5']}}",
	  "spec.postgresql.pg_hba[1]" },
	{ "V47 two references", NULL,
	  "{'podSelectorRefs':[{'name':'a','selector':{}}],'postgresql':{'pg_hba':["
	  "'host all ${podselector:a} ${podselector:a} md5']}}",
	  "spec.postgresql.pg_hba[0]" },
	{ "V47 selector not found", NULL,
	  "{'postgresql':{'pg_hba':['host all all ${podselector:nope} md5']}}",
	  "spec.postgresql.pg_hba[0]" },
	{ "V47 duplicate selector", NULL,
	  "{'podSelectorRefs':[{'name':'a','selector':{}},{'name':'a','selector':{}}]}",
	  "spec.podSelectorRefs[1].name" },
	{ "V47 bad selector operator", NULL,
	  "{'podSelectorRefs':[{'name':'a','selector':{'matchExpressions':[{'key':'k',"
	  "'operator':'Near'}]}}]}",
	  "spec.podSelectorRefs[0].selector.matchExpressions[0]" },
	{ "V47 bad label value", NULL,
	  "{'podSelectorRefs':[{'name':'a','selector':{'matchLabels':{'k':'no spaces'}}}]}",
	  "spec.podSelectorRefs[0].selector" },
	{ "V48 extension", NULL,
	  "{'postgresql':{'extensions':[{'name':'postgis','image':{'reference':"
	  "'ghcr.io/x/postgis:3'},'extension_control_path':['share'],'dynamic_library_path':"
	  "['lib','./lib/x'],'ld_library_path':['system'],'env':[{'name':'GDAL_DATA','value':"
	  "'${image_root}/share/gdal'}]}]}}",
	  NULL },
	{ "V48 extension from catalog", NULL,
	  "{'imageName':null,'imageCatalogRef':{'apiGroup':'postgresql.cnpg.io','kind':"
	  "'ImageCatalog','name':'c','major':18},'postgresql':{'extensions':[{'name':'pgvector'}]}}",
	  NULL },
	{ "V48 no image", NULL, "{'postgresql':{'extensions':[{'name':'postgis'}]}}",
	  "spec.postgresql.extensions[0].image.reference" },
	{ "V48 no name", NULL,
	  "{'postgresql':{'extensions':[{'image':{'reference':'x:1'}}]}}",
	  "spec.postgresql.extensions[0].name" },
	{ "V48 duplicate", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'}},{'name':'a',"
	  "'image':{'reference':'x:1'}}]}}",
	  "spec.postgresql.extensions[1].name" },
	{ "V48 same volume name", NULL,
	  "{'postgresql':{'extensions':[{'name':'a_b','image':{'reference':'x:1'}},{'name':"
	  "'a-b','image':{'reference':'x:1'}}]}}",
	  "spec.postgresql.extensions[1].name" },
	{ "V48 escaping path", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'bin_path':"
	  "['bin/../../x']}]}}",
	  "spec.postgresql.extensions[0].bin_path[0]" },
	{ "V48 absolute path", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},"
	  "'dynamic_library_path':['/usr/lib']}]}}",
	  "spec.postgresql.extensions[0].dynamic_library_path[0]" },
	{ "V48 empty path", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},"
	  "'ld_library_path':['']}]}}",
	  "spec.postgresql.extensions[0].ld_library_path[0]" },
	{ "V48 duplicate path", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},"
	  "'extension_control_path':['share','share']}]}}",
	  "spec.postgresql.extensions[0].extension_control_path[1]" },
	{ "V48 env PATH", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'PATH','value':'/bin'}]}]}}",
	  "spec.postgresql.extensions[0].env[0].name" },
	{ "V48 env reserved", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'PGHOST','value':'x'}]}]}}",
	  "spec.postgresql.extensions[0].env[0].name" },
	{ "V48 env duplicate", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'A','value':'x'},{'name':'A','value':'y'}]}]}}",
	  "spec.postgresql.extensions[0].env[1].name" },
	{ "V48 env other placeholder", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'A','value':'${HOME}/x'}]}]}}",
	  "spec.postgresql.extensions[0].env[0].value" },
};

static void test_managed_rules(void **state)
{
	(void)state;
	RUN(managed_rows);
}

/* ---- the table itself ---- */

static void test_table_order(void **state)
{
	(void)state;
	assert_int_equal(wh_rules_spec_count, 50);
	for (size_t i = 0; i < wh_rules_spec_count; i++) {
		char want[32];
		snprintf(want, sizeof(want), "V%zu", i + 1);
		assert_string_equal(wh_rules_spec[i].id, want);
		assert_int_equal(wh_rules_spec[i].ops, WH_OP_CREATE | WH_OP_UPDATE);
		assert_non_null(wh_rules_spec[i].fn);
	}
}

/* Applies the mutating webhook's defaults to c, as the API server would. */
static void defaulted(json_object *c)
{
	_cleanup_(op_json_putp) json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default(c, &patch, &err), 0);
}

/* The V rules run on UPDATE too (CNPG validate() is called for both). */
static void test_rules_run_on_update(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *old = make_cluster("{'resourceVersion':'7'}", NULL);
	_cleanup_(op_json_putp) json_object *bad =
		make_cluster("{'resourceVersion':'7'}", "{'instances':2,'maxSyncReplicas':2}");
	defaulted(bad);
	struct wh_result res = { 0 };
	assert_int_equal(wh_validate(bad, old, &res), 1);
	assert_string_equal(res.errors[0].path, "spec.maxSyncReplicas");
	assert_string_equal(res.errors[0].msg,
			    "maxSyncReplicas must be lower than the number of instances");
	wh_result_done(&res);
	/* V27's bootstrap method check is CREATE-only (resourceVersion set) */
	_cleanup_(op_json_putp) json_object *replica = make_cluster(
		"{'resourceVersion':'7'}", "{'replica':{'enabled':true,'source':'origin'}," EXT_ORIGIN "}");
	defaulted(replica);
	assert_int_equal(wh_validate(replica, old, &res), 0);
	wh_result_done(&res);
}

/* Rules must cope with a spec whose fields have the wrong JSON types (the
 * schema normally prevents it, but `pgop validate` runs without it). */
static void test_wrong_types_do_not_crash(void **state)
{
	(void)state;
	static const char *const specs[] = {
		"{'instances':'three','storage':7,'bootstrap':[],'postgresql':'x'}",
		"{'externalClusters':{'a':1},'tablespaces':'ts','managed':{'roles':{},"
		"'services':[]},'replica':{'enabled':'yes','source':3}}",
		"{'postgresql':{'parameters':{'wal_level':3,'shared_buffers':true},"
		"'pg_hba':[1,null],'extensions':[null,{'name':5}],'synchronous':{'number':'x'}}}",
		"{'affinity':{'tolerations':[null,3]},'resources':{'requests':{'cpu':[]}},"
		"'env':[{'name':null}],'plugins':[1],'podSelectorRefs':[{'selector':'x'}]}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(specs); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster("{'annotations':3}", specs[i]);
		struct wh_result res = { 0 };
		run_spec_rules(c, &res);
		wh_result_done(&res);
	}
}

/* ---- the CNPG sample manifests must be admitted ---- */

#define SAMPLES_DIR PGOP_SHARED_DIR "/samples/cnpg"
#define SAMPLE_MAX (1024u * 1024)

static char *read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	char *data = op_malloc(SAMPLE_MAX + 1);
	size_t n = fread(data, 1, SAMPLE_MAX + 1, f);
	fclose(f);
	assert_true(n <= SAMPLE_MAX);
	data[n] = '\0';
	*ret_len = n;
	return data;
}

/* Defaults then validates every Cluster document of one sample file;
 * returns the number of Cluster documents. */
static int check_sample(const char *file, int *failures)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s", SAMPLES_DIR, file);
	size_t len;
	_cleanup_free_ char *data = read_file(path, &len);
	_cleanup_(op_json_putp) json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_yaml_parse_docs(data, len, NULL, &docs, &err) < 0)
		fail_msg("%s: %s", file, err.msg);
	int clusters = 0;
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		json_object *doc = json_object_array_get_idx(docs, i);
		const char *kind = op_json_str_at(doc, "kind");
		if (!kind || strcmp(kind, "Cluster") != 0)
			continue;
		clusters++;
		_cleanup_(op_json_putp) json_object *patch = NULL;
		assert_int_equal(wh_default(doc, &patch, &err), 0);
		struct wh_result res = { 0 };
		wh_validate(doc, NULL, &res);
		if (res.n_errors) {
			print_message("FAILED sample %s\n", file);
			for (size_t e = 0; e < res.n_errors; e++)
				print_message("  %s: %s\n", res.errors[e].path, res.errors[e].msg);
			(*failures)++;
		}
		wh_result_done(&res);
	}
	return clusters;
}

/* Checks the .yaml files of SAMPLES_DIR/sub (sub "" = the top) and its
 * subfolders. */
static void check_sample_dir(const char *sub, int *clusters, int *failures)
{
	_cleanup_free_ char *dir = op_asprintf("%s/%s", SAMPLES_DIR, sub);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		_cleanup_free_ char *rel = op_asprintf("%s%s%s", sub, *sub ? "/" : "", e->d_name);
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			check_sample_dir(rel, clusters, failures);
		else if (n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0)
			*clusters += check_sample(rel, failures);
	}
	closedir(d);
}

static void test_samples_admitted(void **state)
{
	(void)state;
	int failures = 0, clusters = 0;
	check_sample_dir("", &clusters, &failures);
	if (clusters == 0)
		skip();
	print_message("%d sample Cluster(s) checked\n", clusters);
	assert_int_equal(failures, 0);
}

/* ---- pgparams.c and reserved.c ---- */

static void test_pgparams(void **state)
{
	(void)state;
	static const char *const fixed[] = { "archive_mode", "cluster_name", "port",
					     "recovery_target_xid", "shared_preload_libraries",
					     "ssl_key_file", "synchronized_standby_slots",
					     "pg_failover_slots.primary_dsn", "hot_standby",
					     "logging_collector", "unix_socket_permissions",
					     "ARCHIVE_COMMAND" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fixed); i++)
		assert_true(wh_pg_param_is_fixed(fixed[i]));
	static const char *const free_params[] = { "work_mem", "shared_buffers", "wal_level",
						   "ssl_ecdh_curve", "pg_failover_slots.x",
						   "archive_timeout", "" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(free_params); i++)
		assert_false(wh_pg_param_is_fixed(free_params[i]));
	assert_false(wh_pg_param_is_fixed(NULL));
	assert_true(wh_pg_param_is_blocked("log_directory"));
	assert_false(wh_pg_param_is_blocked("archive_mode"));
	assert_int_equal(wh_pg_default_params_count, 22);
	assert_string_equal(wh_pg_param_default("wal_level"), "logical");
	assert_string_equal(wh_pg_param_default("archive_timeout"), "5min");
	assert_string_equal(wh_pg_param_default("shared_preload_libraries"), "");
	assert_string_equal(wh_pg_param_default("SSL_MIN_PROTOCOL_VERSION"), "TLSv1.3");
	assert_null(wh_pg_param_default("work_mem"));
	assert_null(wh_pg_param_default(NULL));
	for (size_t i = 0; i < wh_pg_mandatory_params_count; i++)
		assert_true(wh_pg_param_is_fixed(wh_pg_mandatory_params[i].name));
	assert_string_equal(wh_pg_archive_mode(true, true), "off");
	assert_string_equal(wh_pg_archive_mode(false, true), "always");
	assert_string_equal(wh_pg_archive_mode(false, false), "on");
}

static void test_reserved(void **state)
{
	(void)state;
	assert_true(wh_reserved_env_name("PGDATA"));
	assert_true(wh_reserved_env_name("pgport"));
	assert_true(wh_reserved_env_name("CNPG_SECRET"));
	assert_true(wh_reserved_env_name("namespace"));
	assert_true(wh_reserved_env_name("CLUSTER_NAME"));
	assert_false(wh_reserved_env_name("TZ"));
	assert_false(wh_reserved_env_name("CNPGX"));
	assert_false(wh_reserved_env_name("POD_NAMES"));
	assert_false(wh_reserved_env_name(NULL));
	assert_true(wh_reserved_role_name("postgres"));
	assert_true(wh_reserved_role_name("streaming_replica"));
	assert_true(wh_reserved_role_name("cnpg_pooler_pgbouncer"));
	assert_true(wh_reserved_role_name("pg_monitor"));
	assert_false(wh_reserved_role_name("app"));
	assert_false(wh_reserved_role_name("postgres2"));
	assert_true(wh_reserved_service_name("pg", "pg-rw"));
	assert_true(wh_reserved_service_name("pg", "pg-any"));
	assert_true(wh_reserved_service_name("pg", "pg-r"));
	assert_false(wh_reserved_service_name("pg", "pg-rwx"));
	assert_false(wh_reserved_service_name("pg", "other-rw"));
	assert_false(wh_reserved_service_name(NULL, "pg-rw"));
	assert_true(wh_reserved_tablespace_name("pg_x"));
	assert_false(wh_reserved_tablespace_name("app_pg_x"));
}

/* ---- rules_spec_util.c ---- */

static void test_helpers(void **state)
{
	(void)state;
	bool b = false;
	static const struct {
		const char *in;
		int ok;
		bool val;
	} bools[] = { { "on", 1, true }, { "OFF", 1, false }, { "of", 1, false },
		      { "o", 0, false }, { "t", 1, true },    { "FALSE", 1, false },
		      { "y", 1, true },  { "no", 1, false },  { "1", 1, true },
		      { "0", 1, false }, { "", 0, false },    { "truex", 0, false },
		      { "2", 0, false } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bools); i++) {
		assert_int_equal(wh_pg_bool_parse(bools[i].in, &b), bools[i].ok);
		if (bools[i].ok)
			assert_int_equal(b, bools[i].val);
	}
	static const struct {
		const char *in;
		int rc;
		long double bytes;
	} sizes[] = {
		{ "128MB", 0, 128.0L * 1048576 },  { "2", 0, 2.0L * 1048576 },
		{ "1TB", 0, 1099511627776.0L },    { "8kB", 0, 8192.0L },
		{ "128 MB", 0, 128.0L * 1048576 }, { "1.5GB", 0, 1.5L * 1073741824 },
		{ "100B", 0, 100.0L },             { "1Gi", -EINVAL, 0 },
		{ "MB", -EINVAL, 0 },              { "1mB", -EINVAL, 0 },
		{ "", -EINVAL, 0 },                { "10 kb", -EINVAL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(sizes); i++) {
		long double bytes = -1;
		assert_int_equal(wh_pg_size_parse(sizes[i].in, &bytes), sizes[i].rc);
		if (sizes[i].rc == 0)
			assert_true(bytes == sizes[i].bytes);
	}

	long double q = 0;
	assert_int_equal(wh_quantity_parse("1Gi", &q), 0);
	assert_true(q == 1073741824.0L);
	assert_int_equal(wh_quantity_parse("500m", &q), 0);
	assert_true(q > 0.4999L && q < 0.5001L);
	assert_int_equal(wh_quantity_parse("1.5G", &q), 0);
	assert_true(q == 1.5e9L);
	assert_int_equal(wh_quantity_parse("1e3", &q), 0);
	assert_true(q == 1000.0L);
	assert_int_equal(wh_quantity_parse("1Gb", &q), -EINVAL);
	assert_int_equal(wh_quantity_parse("", &q), -EINVAL);
	assert_int_equal(wh_quantity_parse(".", &q), -EINVAL);
	assert_int_equal(wh_quantity_parse("1..2", &q), -EINVAL);

	const char *tag;
	size_t n;
	bool digest;
	wh_image_tag("reg:5000/a/b:17.2@sha256:ab", &tag, &n, &digest);
	assert_int_equal(n, 4);
	assert_memory_equal(tag, "17.2", 4);
	assert_true(digest);
	wh_image_tag("reg:5000/a/b", &tag, &n, &digest);
	assert_string_equal(tag, "latest");
	assert_false(digest);
	wh_image_tag("b@sha256:ab", &tag, &n, &digest);
	assert_int_equal(n, 0);
	assert_true(digest);

	assert_true(wh_is_dns1035_label("pg-1"));
	assert_false(wh_is_dns1035_label("1pg"));
	assert_false(wh_is_dns1035_label("pg-"));
	assert_true(wh_is_dns1123_subdomain("a.b-c.d"));
	assert_false(wh_is_dns1123_subdomain("a..b"));
	assert_true(wh_is_qualified_name("example.com/Key_1"));
	assert_false(wh_is_qualified_name("a/b/c"));
	assert_false(wh_is_qualified_name(""));
	assert_true(wh_is_label_value(""));
	assert_false(wh_is_label_value("a b"));
}

static void test_major_and_replica(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		int major;
	} majors[] = {
		{ "{'imageName':'postgres:16.4-bookworm'}", 16 },
		{ "{'imageName':'x/postgresql:18@sha256:ab'}", 18 },
		{ "{'imageName':'postgres:latest'}", -1 },
		{ "{'imageName':null}", -1 },
		{ "{'imageName':null,'imageCatalogRef':{'name':'c','major':15}}", 15 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(majors); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster(NULL, majors[i].spec);
		struct wh_ctx ctx = { .obj = c, .spec = op_json_at(c, "spec") };
		assert_int_equal(wh_pg_major(&ctx), majors[i].major);
	}
	static const struct {
		const char *spec;
		bool replica;
	} replicas[] = {
		{ "{}", false },
		{ "{'replica':{'enabled':true}}", true },
		{ "{'replica':{'enabled':false,'primary':'x'}}", false },
		{ "{'replica':{'primary':'pg'}}", false },
		{ "{'replica':{'primary':'other'}}", true },
		{ "{'replica':{'primary':'a','self':'a'}}", false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(replicas); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster(NULL, replicas[i].spec);
		struct wh_ctx ctx = { .obj = c, .spec = op_json_at(c, "spec") };
		assert_int_equal(wh_is_replica(&ctx), replicas[i].replica);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_order),
		cmocka_unit_test(test_bootstrap_rules),
		cmocka_unit_test(test_cluster_rules),
		cmocka_unit_test(test_storage_rules),
		cmocka_unit_test(test_replica_rules),
		cmocka_unit_test(test_postgres_rules),
		cmocka_unit_test(test_managed_rules),
		cmocka_unit_test(test_rules_run_on_update),
		cmocka_unit_test(test_wrong_types_do_not_crash),
		cmocka_unit_test(test_samples_admitted),
		cmocka_unit_test(test_pgparams),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_major_and_replica),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
