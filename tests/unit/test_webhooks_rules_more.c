/* tests/unit/test_webhooks_rules_more.c - webhooks/ rules for replica clusters and
 * backups (V24, V27-V29, V44, V45, V51-V56), spec.postgresql (V30-V36, V40) and
 * managed names (V37-V39, V47, V48). */
#include "webhooks_rules_harness.h"

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
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt','s3Credentials':{"
	  "'accessKeyId':{'name':'a','key':'k'},'secretAccessKey':{'name':'a','key':'s'}}}}}",
	  NULL },
	{ "V28 s3 IAM role", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt','s3Credentials':{"
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
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt'}}}",
	  "spec.backup.barmanObjectStore" },
	{ "V28 google without credentials", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'gs://x','googleCredentials':{}}}}",
	  "spec.backup.barmanObjectStore.googleCredentials" },
	{ "V28 s3 IAM role and keys", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt','s3Credentials':{"
	  "'inheritFromIAMRole':true,'accessKeyId':{'name':'a','key':'k'},'secretAccessKey':{"
	  "'name':'a','key':'s'}}}}}",
	  "spec.backup.barmanObjectStore.s3Credentials" },
	{ "V28 two credentials", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt','s3Credentials':{"
	  "'inheritFromIAMRole':true},'googleCredentials':{'gkeEnvironment':true}}}}",
	  "spec.backup.barmanObjectStore" },
	{ "V28 s3 without secret key", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://bkt','s3Credentials':{"
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
	  "'destinationPath':'s3://bkt','s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.plugins[0].isWALArchiver" },
};

static void test_replica_rules(void **state)
{
	(void)state;
	RUN(replica_rows);
}

/* ---- V51-V56 (pgop's own backup rules) ---- */

#define S3_KEYS                                                                             \
	"'s3Credentials':{'accessKeyId':{'name':'a','key':'k'},'secretAccessKey':{'name':'a',"  \
	"'key':'s'}}"
/* spec.backup.barmanObjectStore with S3 keys and the given extra members */
#define STORE(extra)                                                                        \
	"{'backup':{'barmanObjectStore':{" S3_KEYS "," extra "}}}"
/* the same store under spec.externalClusters[1] */
#define EXT_STORE(extra)                                                                    \
	"{'externalClusters':[{'name':'a','connectionParameters':{'host':'h'}},{'name':'b',"    \
	"'barmanObjectStore':{" S3_KEYS "," extra "}}]}"

#define E2 "\xc3\xa9\xc3\xa9"
#define E4 E2 E2
#define E16 E4 E4 E4 E4
#define K64 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
static const struct row backup_rows[] = {
	{ "V51 full S3 store", NULL,
	  STORE("'destinationPath':'s3://backups/pgop','endpointURL':"
		"'https://versitygw.objstore.svc:7070','endpointCA':{'name':'ca','key':'ca.crt'},"
		"'serverName':'pg-a','wal':{'compression':'gzip','maxParallel':4},"
		"'data':{'compression':'zstd','jobs':2,'encryption':'AES256'}"),
	  NULL },
	{ "V51 bucket only, trailing slash", NULL, STORE("'destinationPath':'s3://backups/'"),
	  NULL },
	{ "V51 IPv6 endpoint", NULL,
	  STORE("'destinationPath':'s3://backups','endpointURL':'http://[::1]:9000/'"), NULL },
	{ "V51 azure destination is not an s3 URL", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'https://acct.blob.core.windows.net/c',"
	  "'azureCredentials':{'inheritFromAzureAD':true}}}}",
	  NULL },
	{ "V51 not s3://", NULL, STORE("'destinationPath':'gs://backups'"),
	  "spec.backup.barmanObjectStore.destinationPath" },
	{ "V51 bad bucket (a warning only)", NULL, STORE("'destinationPath':'s3://BUCKET_NAME/path'"), NULL },
	{ "V51 empty segment (a warning only)", NULL, STORE("'destinationPath':'s3://backups/a//b'"), NULL },
	{ "V51 no destination with s3 credentials", NULL, "{'backup':{'barmanObjectStore':{"
	  S3_KEYS "}}}",
	  "spec.backup.barmanObjectStore.destinationPath" },
	{ "V51 IAM role too", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3:///x','s3Credentials':{"
	  "'inheritFromIAMRole':true}}}}",
	  "spec.backup.barmanObjectStore.destinationPath" },
	{ "V51 no bucket", NULL, STORE("'destinationPath':'s3://'"),
	  "spec.backup.barmanObjectStore.destinationPath" },
	{ "V51 a blank inside", NULL, STORE("'destinationPath':'s3://my bucket/x'"),
	  "spec.backup.barmanObjectStore.destinationPath" },
	{ "V51 endpoint with a path (a warning only)", NULL,
	  STORE("'destinationPath':'s3://backups','endpointURL':'http://minio:9000/bucket'"),
	  NULL },
	{ "V51 endpoint without a host", NULL,
	  STORE("'destinationPath':'s3://backups','endpointURL':'https://'"),
	  "spec.backup.barmanObjectStore.endpointURL" },
	{ "V51 endpoint scheme", NULL,
	  STORE("'destinationPath':'s3://backups','endpointURL':'minio:9000'"),
	  "spec.backup.barmanObjectStore.endpointURL" },
	{ "V51 endpoint placeholder (CloudNativePG's sample: a warning only)", NULL,
	  STORE("'destinationPath':'s3://backups','endpointURL':'https://s3.<region>.scw.cloud'"),
	  NULL },
	{ "V51 external cluster placeholder (a warning only)", NULL,
	  EXT_STORE("'destinationPath':'s3://<bucket>/x'"), NULL },
	{ "V51 external cluster", NULL, EXT_STORE("'destinationPath':'backups/x'"),
	  "spec.externalClusters[1].barmanObjectStore.destinationPath" },
	{ "V52 bounds", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'maxParallel':64},'data':{'jobs':1}"),
	  NULL },
	{ "V52 maxParallel 0", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'maxParallel':0}"),
	  "spec.backup.barmanObjectStore.wal.maxParallel" },
	{ "V52 maxParallel 65", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'maxParallel':65}"),
	  "spec.backup.barmanObjectStore.wal.maxParallel" },
	{ "V52 jobs negative", NULL, STORE("'destinationPath':'s3://backups','data':{'jobs':-1}"),
	  "spec.backup.barmanObjectStore.data.jobs" },
	{ "V52 external cluster", NULL,
	  EXT_STORE("'destinationPath':'s3://backups','data':{'jobs':1000}"),
	  "spec.externalClusters[1].barmanObjectStore.data.jobs" },
	{ "V53 every compression", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'compression':'lz4'},"
		"'data':{'compression':'bzip2','encryption':'aws:kms'}"),
	  NULL },
	{ "V53 wal compression", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'compression':'brotli'}"),
	  "spec.backup.barmanObjectStore.wal.compression" },
	{ "V53 data compression", NULL,
	  STORE("'destinationPath':'s3://backups','data':{'compression':'GZIP'}"),
	  "spec.backup.barmanObjectStore.data.compression" },
	{ "V53 encryption", NULL,
	  STORE("'destinationPath':'s3://backups','wal':{'encryption':'rot13'}"),
	  "spec.backup.barmanObjectStore.wal.encryption" },
	{ "V53 tags: S3's characters, empty value, unicode letters, 10 of them", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'env':'prod','team name':'db +-=._:/@',"
		"'empty':'','\xc3\xa9quipe':'\xe5\x9b\xa2\xe9\x98\x9f','k5':'v','k6':'v',"
		"'k7':'v','k8':'v','k9':'v','k10':'v'},'historyTags':{'kind':'history'}"),
	  NULL },
	{ "V53 tag value with a currency sign (S3: InvalidTag)", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'cost':'10\xe2\x82\xac'}"),
	  "spec.backup.barmanObjectStore.tags.cost" },
	{ "V53 tag value with '&'", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'env':'a&b'}"),
	  "spec.backup.barmanObjectStore.tags.env" },
	{ "V53 tag key with '*'", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'ok':'1','a*b':'x'}"),
	  "spec.backup.barmanObjectStore.tags.a*b" },
	{ "V53 empty tag key", NULL, STORE("'destinationPath':'s3://backups','tags':{'':'x'}"),
	  "spec.backup.barmanObjectStore.tags." },
	{ "V53 tag key of 129 characters", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'" K64 K64 "k':'v'}"),
	  "spec.backup.barmanObjectStore.tags." K64 K64 "k" },
	{ "V53 tag key of 128, value of 256 characters", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'" K64 K64 "':'" K64 K64 K64 K64 "'}"),
	  NULL },
	{ "V53 tag value of 257 characters", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'v':'" K64 K64 K64 K64 "k'}"),
	  "spec.backup.barmanObjectStore.tags.v" },
	{ "V53 long unicode key: 131 characters, named by its first 129 bytes (whole characters)", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'a" E16 E16 E16 E16 E16 E16 E16 E16 E2 "':'v'}"),
	  "spec.backup.barmanObjectStore.tags.a" E16 E16 E16 E16 },
	{ "V53 reserved aws: prefix", NULL,
	  STORE("'destinationPath':'s3://backups','historyTags':{'aws:x':'v'}"),
	  "spec.backup.barmanObjectStore.historyTags.aws:x" },
	{ "V53 eleven tags", NULL,
	  STORE("'destinationPath':'s3://backups','tags':{'a':'','b':'','c':'','d':'','e':'',"
		"'f':'','g':'','h':'','i':'','j':'','k':''}"),
	  "spec.backup.barmanObjectStore.tags" },
	{ "V53 history tag value control character", NULL,
	  EXT_STORE("'destinationPath':'s3://backups','historyTags':{'h':'a\\nb'}"),
	  "spec.externalClusters[1].barmanObjectStore.historyTags.h" },
	{ "V54 empty server name is the cluster's", NULL,
	  STORE("'destinationPath':'s3://backups','serverName':''"), NULL },
	{ "V54 slash", NULL, STORE("'destinationPath':'s3://backups','serverName':'a/b'"),
	  "spec.backup.barmanObjectStore.serverName" },
	{ "V54 dot dot", NULL, STORE("'destinationPath':'s3://backups','serverName':'..'"),
	  "spec.backup.barmanObjectStore.serverName" },
	{ "V54 control character", NULL,
	  STORE("'destinationPath':'s3://backups','serverName':'a\\nb'"),
	  "spec.backup.barmanObjectStore.serverName" },
	{ "V54 too long", NULL,
	  STORE("'destinationPath':'s3://backups','serverName':'"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"),
	  "spec.backup.barmanObjectStore.serverName" },
	{ "V54 external cluster, without s3 credentials too", NULL,
	  "{'externalClusters':[{'name':'b','barmanObjectStore':{'destinationPath':"
	  "'https://x','serverName':'a/b','azureCredentials':{'inheritFromAzureAD':true}}}]}",
	  "spec.externalClusters[0].barmanObjectStore.serverName" },
	{ "V55 backup name", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'backup-2026.01'}}}}", NULL },
	{ "V55 backup in another namespace", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'other/backup-1'}}}}",
	  "spec.bootstrap.recovery.backup.name" },
	{ "V55 upper case", NULL, "{'bootstrap':{'recovery':{'backup':{'name':'Backup'}}}}",
	  "spec.bootstrap.recovery.backup.name" },
	{ "V55 no name", NULL, "{'bootstrap':{'recovery':{'backup':{}}}}",
	  "spec.bootstrap.recovery.backup.name" },
	{ "V56 distinct plugins", NULL, "{'plugins':[{'name':'a'},{'name':'b'}]}", NULL },
	{ "V56 duplicate plugin", NULL,
	  "{'plugins':[{'name':'a'},{'name':'b'},{'name':'a','enabled':false}]}",
	  "spec.plugins[2].name" },
	/* V10 already covers targetImmediate among the exclusive targets */
	{ "V10 immediate and a time", NULL,
	  "{'bootstrap':{'recovery':{'backup':{'name':'b'},'recoveryTarget':{'backupID':'x',"
	  "'targetImmediate':true,'targetTime':'2026-01-02T03:04:05Z'}}}}",
	  "spec.bootstrap.recovery.recoveryTarget" },
};

static void test_backup_rules(void **state)
{
	(void)state;
	RUN(backup_rows);
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
	{ "V31 huge instances do not overflow", NULL,
	  "{'instances':9223372036854775807,'postgresql':{'synchronous':{'method':'any',"
	  "'number':1,'standbyNamesPre':['a']}}}",
	  NULL },
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
	  "['^foo','bar$','(?i)^Temp_','^(?:a|b)+\\\\d$']}}}",
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
	/* "$$" escapes '$': "$${HOME}" is the literal "${HOME}", not a placeholder */
	{ "V48 env escaped placeholder", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'A','value':'$${HOME}/x:${image_root}/y:$$$${Z}'}]}]}}",
	  NULL },
	{ "V48 env escaped dollar then placeholder", NULL,
	  "{'postgresql':{'extensions':[{'name':'a','image':{'reference':'x:1'},'env':[{"
	  "'name':'A','value':'$$${HOME}'}]}]}}",
	  "spec.postgresql.extensions[0].env[0].value" },
	{ "V48 multi-extension image paths", NULL,
	  "{'postgresql':{'extensions':[{'name':'geospatial','image':{'reference':'x:1'},"
	  "'extension_control_path':['postgis/share','pgrouting/share'],"
	  "'dynamic_library_path':['postgis/lib','pgrouting/lib']}]}}",
	  NULL },
};

static void test_managed_rules(void **state)
{
	(void)state;
	RUN(managed_rows);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replica_rules),
		cmocka_unit_test(test_backup_rules),
		cmocka_unit_test(test_postgres_rules),
		cmocka_unit_test(test_managed_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
