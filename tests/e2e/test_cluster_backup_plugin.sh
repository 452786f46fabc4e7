#!/usr/bin/env bash
# e2e-timeout: 1200
# Backups in the plugin form newer CloudNativePG manifests use, served by pgop itself, in
# process, with no sidecar (issue 25, api/plugin.h):
#   1. an ObjectStore (barmancloud.cnpg.io/v1) holding the store (versitygw over TLS, as
#      test_cluster_backup.sh) and a retention policy; a 2-instance Cluster naming it in
#      spec.plugins (barman-cloud.cloudnative-pg.io, isWALArchiver, barmanObjectName):
#      condition ContinuousArchiving True, WAL at barman's keys under its serverName;
#   2. a Backup with method: plugin and pluginConfiguration.name: completed, on a standby;
#   3. a new Cluster recovers from it through externalClusters[].plugin (the same
#      ObjectStore and serverName): healthy, exactly the rows; another to a targetLSN
#      between two inserts: exactly the rows before it;
#   4. a Cluster naming an ObjectStore that does not exist: ContinuousArchiving False
#      naming it, and postgres keeps its WAL (archive_command never a no-op).
# METRIC: seconds from the Backup's creation to completed; recovery to healthy.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
[ -x "$S3" ] || e2e_fail "pgop-s3 not built: $S3"
cluster_setup plugin
osns=
plugin_cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		k get clusters,backups,objectstores -o wide >&2 || true
		k get backups -o json | jq -c '.items[] | {n: .metadata.name, s: .status}' >&2 || true
	fi
	[ -z "$osns" ] || kubectl delete namespace "$osns" --wait=false >/dev/null 2>&1 || true
	set +e # a failing (exit) under set -e would end the trap before the cleanup
	(exit $rc)
	cluster_cleanup
}
trap plugin_cleanup EXIT
objstore_cluster_env
s3() { objstore_pod_s3 "$S3" "$@"; }

# ---- 1. ObjectStore + Cluster with the plugin -----------------------------------------
k apply -f - >/dev/null <<EOF
apiVersion: barmancloud.cnpg.io/v1
kind: ObjectStore
metadata: {name: store}
spec:
  retentionPolicy: 30d
  configuration:
    destinationPath: s3://backups/plugin
    endpointURL: $OBJSTORE_ENDPOINT
    endpointCA: {name: objstore-ca, key: ca.crt}
    s3Credentials:
      accessKeyId: {name: objstore-credentials, key: ACCESS_KEY_ID}
      secretAccessKey: {name: objstore-credentials, key: ACCESS_SECRET_KEY}
    wal: {compression: zstd}
    data: {compression: gzip}
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: origin}
spec:
  instances: 2
  storage: {size: 1Gi}
  plugins:
    - name: barman-cloud.cloudnative-pg.io
      isWALArchiver: true
      parameters: {barmanObjectName: store, serverName: origin-v1}
EOF
C=origin
wait_healthy 2 600
primary=$(status currentPrimary)
cond() { k get cluster "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].$3}"; }
sql "$primary" "create table ledger (id int primary key)" >/dev/null
sql "$primary" "insert into ledger select generate_series(1, 700)" >/dev/null
seg=$(sql "$primary" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "[ \"\$(cond origin ContinuousArchiving status)\" = True ]" 90 ||
	e2e_fail "ContinuousArchiving '$(cond origin ContinuousArchiving status)': $(cond origin ContinuousArchiving message)"
e2e_wait_for "s3 list plugin/origin-v1/wals/${seg:0:16}/ | grep -q '$seg.zst'" 60 ||
	e2e_fail "$seg.zst not under plugin/origin-v1/wals/ (the ObjectStore's store, serverName parameter)"
e2e_log "archiving through the plugin form: $seg at s3://backups/plugin/origin-v1/wals/"

# ---- 2. a Backup with method: plugin ---------------------------------------------------
# prefer-standby takes the primary while no standby streams yet: wait for one
e2e_wait_for "[ \"\$(sql $primary 'select count(*) from pg_stat_replication where state = \$\$streaming\$\$')\" -ge 1 ]" 60 ||
	e2e_fail "no standby streams from $primary"
tb=$(date +%s)
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: viaplugin}
spec:
  cluster: {name: origin}
  method: plugin
  pluginConfiguration: {name: barman-cloud.cloudnative-pg.io}
EOF
bst() { k get backup "$1" -o jsonpath="{.status.$2}" 2>/dev/null; }
e2e_wait_for "[ \"\$(bst viaplugin phase)\" = completed ] || [ \"\$(bst viaplugin phase)\" = failed ]" 300 ||
	e2e_fail "backup viaplugin phase '$(bst viaplugin phase)'"
e2e_assert_eq completed "$(bst viaplugin phase)" "Backup viaplugin ($(bst viaplugin error))"
echo "METRIC plugin_backup_completed_s=$(($(date +%s) - tb))"
e2e_assert_eq plugin "$(bst viaplugin method)" "status.method"
e2e_assert_ne "$primary" "$(bst viaplugin instanceID.podName)" "taken on a standby"
id=$(bst viaplugin backupId)
e2e_assert_contains "$(s3 list "plugin/origin-v1/base/$id/")" "data.tar.gz" "the base backup under the plugin's store"
sql "$primary" "insert into ledger select generate_series(701, 900)" >/dev/null
sw=$(sql "$primary" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "s3 list plugin/origin-v1/wals/${sw:0:16}/ | grep -q '$sw.zst'" 60 || e2e_fail "$sw not archived"
want=$(sql "$primary" "select count(*) || ':' || sum(id) from ledger")
# a point in time: the LSN after row 900; rows 901-1000 come after it
lsn=$(sql "$primary" "select pg_current_wal_lsn()")
sql "$primary" "insert into ledger select generate_series(901, 1000)" >/dev/null
sw=$(sql "$primary" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "s3 list plugin/origin-v1/wals/${sw:0:16}/ | grep -q '$sw.zst'" 60 || e2e_fail "$sw not archived"
all=$(sql "$primary" "select count(*) || ':' || sum(id) from ledger")

# ---- 3. recovery through externalClusters[].plugin ------------------------------------
# plugin_recovery NAME [RECOVERY-YAML]: a 1-instance Cluster recovering from the
# ObjectStore through externalClusters[].plugin; RECOVERY-YAML: more lines under
# bootstrap.recovery (6 spaces in)
plugin_recovery() {
	k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: $1}
spec:
  instances: 1
  storage: {size: 1Gi}
  bootstrap:
    recovery:
      source: origin
${2:-}
  externalClusters:
    - name: origin
      plugin:
        name: barman-cloud.cloudnative-pg.io
        parameters: {barmanObjectName: store, serverName: origin-v1}
EOF
}
tr0=$(date +%s)
plugin_recovery restored
C=restored wait_healthy 1 600
echo "METRIC plugin_recovery_healthy_s=$(($(date +%s) - tr0))"
e2e_assert_eq "$all" "$(sql restored-1 "select count(*) || ':' || sum(id) from ledger")" \
	"recovered through the plugin form: the same rows"
# point-in-time through the plugin form: to the LSN after row 900
plugin_recovery pitr "      recoveryTarget: {targetLSN: \"$lsn\"}"
C=pitr wait_healthy 1 600
e2e_assert_eq "$want" "$(sql pitr-1 "select count(*) || ':' || sum(id) from ledger")" \
	"recovered through the plugin form to targetLSN $lsn: rows 1-900 exactly"

# ---- 4. an ObjectStore that does not exist ---------------------------------------------
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: nostore}
spec:
  instances: 1
  storage: {size: 1Gi}
  plugins:
    - name: barman-cloud.cloudnative-pg.io
      isWALArchiver: true
      parameters: {barmanObjectName: missing}
EOF
C=nostore wait_healthy 1 600
e2e_wait_for "[ \"\$(cond nostore ContinuousArchiving status)\" = False ]" 60 ||
	e2e_fail "ContinuousArchiving '$(cond nostore ContinuousArchiving status)' with a missing ObjectStore"
e2e_assert_contains "$(cond nostore ContinuousArchiving message)" "missing" "the condition names the ObjectStore"
ac=$(sql nostore-1 "show archive_command")
e2e_assert_ne "/bin/true" "$ac" "archive_command is no no-op"
n=$(sql nostore-1 "select count(*) from pg_ls_dir('pg_wal/archive_status') f where f like '%.ready'")
for i in 1 2; do
	sql nostore-1 "create table if not exists t (i int); insert into t values ($i); select pg_switch_wal()" >/dev/null
done
e2e_wait_for "[ \"\$(sql nostore-1 \"select count(*) from pg_ls_dir('pg_wal/archive_status') f where f like '%.ready'\")\" -gt $n ]" 30 ||
	e2e_fail "the WAL is not kept (.ready files) while the ObjectStore is missing"
e2e_log "PASS"
