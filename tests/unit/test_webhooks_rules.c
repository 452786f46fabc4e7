/* tests/unit/test_webhooks_rules.c - webhooks/ rules V1-V26 and V42-V50 outside
 * spec.postgresql: bootstrap, cluster-level and storage rows
 * (webhooks_rules_harness.h explains the rows). */
#include "webhooks_rules_harness.h"

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
	/* pre-release tags: CloudNativePG's version.FromTag reads the leading
	 * digits-and-dots, so these are majors 17 and 18 */
	{ "V8 beta tag", NULL, "{'imageName':'ghcr.io/cloudnative-pg/postgresql:17beta1'}", NULL },
	{ "V8 rc tag", NULL, "{'imageName':'ghcr.io/cloudnative-pg/postgresql:18rc1'}", NULL },
	{ "V8 alpha tag", NULL, "{'imageName':'postgres:17alpha2'}", NULL },
	{ "V8 suffixed minor", NULL, "{'imageName':'postgres:16.2-bookworm'}", NULL },
	{ "V8 trailing dot", NULL, "{'imageName':'postgres:17.'}", "spec.imageName" },
	{ "V8 minor of 100", NULL, "{'imageName':'postgres:17.100'}", "spec.imageName" },
	{ "V8 letter first", NULL, "{'imageName':'postgres:v17'}", "spec.imageName" },
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
	{ "V46 liveness pinger timeout not a number",
	  "{'annotations':{'alpha.cnpg.io/livenessPinger':'{`enabled`:true,`requestTimeout`:`1s`}'}}",
	  NULL, "metadata.annotations[alpha.cnpg.io/livenessPinger]" },
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
	{ "V50 huge values do not overflow", NULL,
	  "{'primaryLease':{'leaseDurationSeconds':9223372036854775807,"
	  "'renewDeadlineSeconds':9223372036854775806,'retryPeriodSeconds':2}}",
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bootstrap_rules),
		cmocka_unit_test(test_cluster_rules),
		cmocka_unit_test(test_storage_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
