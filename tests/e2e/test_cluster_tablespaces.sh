#!/usr/bin/env bash
# e2e-timeout: 900
# Declarative tablespaces (spec.tablespaces) of samples/cluster-tablespaces.yaml (with a
# backup section added: versitygw as a Pod over TLS), pgop from its Helm chart:
#   1. healthy with 2 instances; each has its PGDATA PVC and one PVC per tablespace
#      (<pod>-tbs-<name>, pvcRole PG_TABLESPACE, cnpg.io/tablespaceName), mounted at
#      /var/lib/postgresql/tablespaces/<name>;
#   2. status.tablespacesStatus: both reconciled, owned by app (data_tbs names it,
#      scratch gets the application owner by defaulting, D10); on the primary
#      pg_tablespace has both at <mount>/data with those owners; temp_tablespaces is
#      "scratch" on both instances;
#   3. the app user makes a table in data_tbs: its file is under the tablespace's volume;
#      the replica reads the rows; a temporary table goes to scratch;
#   4. a third tablespace added to the running Cluster: the instances roll (the primary
#      last), each gets its new volume, the primary creates it (reconciled), a table there
#      is read on the replica;
#   5. scaled to 3: the new instance's clone (pg_basebackup) fills its tablespace volumes;
#      it reads every table;
#   6. a Backup (its tablespaces as barman's <oid>.tar), then a new Cluster recovering it
#      (bootstrap.recovery.backup.name) with the same spec.tablespaces: each tablespace
#      restored into its own volume, every row to the end of the WAL, its
#      tablespacesStatus reconciled.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup tbs
osns=
trap '[ -z "$osns" ] || kubectl delete namespace "$osns" --wait=false >/dev/null 2>&1 || true; cluster_cleanup' EXIT
objstore_cluster_env
C=cluster-tablespaces
ROOT=/var/lib/postgresql/tablespaces

# ---- 1. the volumes ------------------------------------------------------------------
t0=$(date +%s)
{
	cat "$SAMPLES/cluster-tablespaces.yaml"
	cat <<EOF

  backup:
    barmanObjectStore:
      destinationPath: s3://backups/pgop
      endpointURL: $OBJSTORE_ENDPOINT
      endpointCA: {name: objstore-ca, key: ca.crt}
      s3Credentials:
        accessKeyId: {name: objstore-credentials, key: ACCESS_KEY_ID}
        secretAccessKey: {name: objstore-credentials, key: ACCESS_SECRET_KEY}
      wal: {compression: gzip}
EOF
} | k apply -f - >/dev/null
wait_healthy 2 600
echo "METRIC tablespaces_cluster_healthy_s=$(($(date +%s) - t0))"
primary=$(status currentPrimary)
replica=$C-2
[ "$primary" = "$C-1" ] || replica=$C-1
pvcs() { k get pvc -l "cnpg.io/pvcRole=PG_TABLESPACE" -o jsonpath='{range .items[*]}{.metadata.name}:{.metadata.labels.cnpg\.io/tablespaceName} {end}'; }
e2e_assert_eq "$C-1-tbs-data-tbs:data-tbs $C-1-tbs-scratch:scratch $C-2-tbs-data-tbs:data-tbs $C-2-tbs-scratch:scratch " \
	"$(pvcs)" "tablespace PVCs (CloudNativePG's names and labels)"
for p in $C-1 $C-2; do
	claims=$(k get pod "$p" -o jsonpath='{range .spec.volumes[*]}{.persistentVolumeClaim.claimName} {end}')
	e2e_assert_match "$claims" "$p-tbs-data-tbs" "$p mounts its data_tbs volume"
	mounts=$(k get pod "$p" -o jsonpath='{range .spec.containers[0].volumeMounts[*]}{.mountPath} {end}')
	e2e_assert_match "$mounts" "$ROOT/data_tbs $ROOT/scratch" "$p: the mount paths"
done

# ---- 2. status and catalog ----------------------------------------------------------------
tstatus() { k get cluster $C -o jsonpath='{range .status.tablespacesStatus[*]}{.name}:{.state}:{.owner} {end}'; }
e2e_wait_for "[ \"\$(tstatus)\" = 'data_tbs:reconciled:app scratch:reconciled:app ' ]" 60 1 ||
	e2e_fail "status.tablespacesStatus: '$(tstatus)' ($(k get cluster $C -o jsonpath='{.status.tablespacesStatus}'))"
e2e_assert_eq "data_tbs|app|$ROOT/data_tbs/data scratch|app|$ROOT/scratch/data" \
	"$(sql "$primary" "select string_agg(spcname || '|' || pg_get_userbyid(spcowner) || '|' || pg_tablespace_location(oid), ' ' order by spcname) from pg_tablespace where spcname not like 'pg\_%'")" \
	"pg_tablespace on the primary"
for p in $C-1 $C-2; do
	e2e_assert_eq '"scratch"' "$(sql "$p" 'show temp_tablespaces')" "$p: temp_tablespaces"
done

# ---- 3. data in the tablespace ----------------------------------------------------------
app() { # POD SQL: as the app user in its database, over the pod's socket
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$1" -c postgres -- \
		psql -h /controller/run -U postgres -d app -v ON_ERROR_STOP=1 -qAtc "set role app; $2"
}
app "$primary" "create table t1 (id int primary key, v text) tablespace data_tbs; insert into t1 select g, md5(g::text) from generate_series(1, 2000) g" >/dev/null
path=$(app "$primary" "select pg_relation_filepath('t1')")
e2e_assert_match "$path" '^pg_tblspc/[0-9]+/PG_' "t1's file in a tablespace ($path)"
loc=$(app "$primary" "select pg_tablespace_location(reltablespace) from pg_class where relname = 't1'")
e2e_assert_eq "$ROOT/data_tbs/data" "$loc" "t1's tablespace location"
want=$(app "$primary" 'select count(*), md5(string_agg(v, $$,$$ order by id)) from t1')
e2e_wait_for "[ \"\$(app $replica 'select count(*), md5(string_agg(v, \$\$,\$\$ order by id)) from t1' 2>/dev/null)\" = '$want' ]" 60 1 ||
	e2e_fail "the replica $replica does not read t1: $(app "$replica" 'select count(*) from t1' 2>&1 || true)"
tmp_ts=$(app "$primary" "create temp table tt as select 1 as x; select spcname from pg_tablespace where oid = (select reltablespace from pg_class where relname = 'tt')")
e2e_assert_eq scratch "$tmp_ts" "a temporary table's tablespace"
e2e_log "2000 rows in data_tbs ($path), read on $replica; temporary tables in scratch"

# ---- 4. a tablespace added to the running Cluster -------------------------------------
t0=$(date +%s)
k patch cluster $C --type json -p '[{"op":"add","path":"/spec/tablespaces/-","value":{"name":"added","storage":{"size":"1Gi"}}}]' >/dev/null
e2e_wait_for "[ \"\$(k get cluster $C -o jsonpath='{.status.tablespacesStatus[?(@.name==\"added\")].state}')\" = reconciled ]" 600 2 ||
	e2e_fail "tablespace 'added' not reconciled: $(k get cluster $C -o jsonpath='{.status.tablespacesStatus}'); phase '$(status phase)'"
echo "METRIC tablespaces_added_reconciled_s=$(($(date +%s) - t0))"
wait_healthy 2 300
for p in $C-1 $C-2; do
	e2e_assert_eq "$p-tbs-added" "$(k get pvc "$p-tbs-added" -o jsonpath='{.metadata.name}')" "$p's new tablespace PVC"
done
primary=$(status currentPrimary)
replica=$C-2
[ "$primary" = "$C-1" ] || replica=$C-1
app "$primary" "create table t2 tablespace added as select g as id from generate_series(1, 500) g" >/dev/null
e2e_wait_for "[ \"\$(app $replica 'select count(*) from t2' 2>/dev/null)\" = 500 ]" 60 1 ||
	e2e_fail "the replica $replica does not read t2 (in 'added'): $(app "$replica" 'select count(*) from t2' 2>&1 || true)"
e2e_log "tablespace 'added' reconciled $(($(date +%s) - t0)) s after the patch; t2 read on $replica"

# ---- 5. a new instance clones the tablespaces ---------------------------------------------
t0=$(date +%s)
k patch cluster $C --type merge -p '{"spec":{"instances":3}}' >/dev/null
wait_healthy 3 600
echo "METRIC tablespaces_scale_up_s=$(($(date +%s) - t0))"
e2e_assert_eq "$want" "$(app $C-3 'select count(*), md5(string_agg(v, $$,$$ order by id)) from t1')" "$C-3 reads t1"
e2e_assert_eq 500 "$(app $C-3 'select count(*) from t2')" "$C-3 reads t2"
e2e_assert_eq 3 "$(k get pvc -l "cnpg.io/instanceName=$C-3,cnpg.io/pvcRole=PG_TABLESPACE" -o name | wc -l)" "$C-3's tablespace PVCs"
e2e_log "$C-3 cloned with its three tablespace volumes ($(($(date +%s) - t0)) s)"

# ---- 6. a backup with the tablespaces, recovered into a new Cluster -----------------------
primary=$(status currentPrimary)
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: tbs-first}
spec: {cluster: {name: $C}}
EOF
bphase() { k get backup tbs-first -o jsonpath='{.status.phase}' 2>/dev/null; }
e2e_wait_for "[ \"\$(bphase)\" = completed ] || [ \"\$(bphase)\" = failed ]" 300 2 ||
	e2e_fail "Backup tbs-first: phase '$(bphase)'"
e2e_assert_eq completed "$(bphase)" "Backup tbs-first ($(k get backup tbs-first -o jsonpath='{.status.error}'))"
id=$(k get backup tbs-first -o jsonpath='{.status.backupId}')
app "$primary" "insert into t1 values (2001, 'after the backup')" >/dev/null
want=$(app "$primary" 'select count(*), md5(string_agg(v, $$,$$ order by id)) from t1')
sw=$(sql "$primary" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "[ \"\$(sql $primary 'select coalesce(last_archived_wal, 0::text) from pg_stat_archiver')\" \\> '$sw' ] || [ \"\$(sql $primary 'select last_archived_wal from pg_stat_archiver')\" = '$sw' ]" 60 ||
	e2e_fail "$sw not archived within 60 s"
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
objs=$(objstore_pod_s3 "$S3" list "pgop/$C/base/$id/" | awk '{ sub(".*/", "", $2); print $2 }' | tr '\n' ' ')
e2e_assert_match "$objs" '^([0-9]+\.tar ){3}backup\.info data\.tar $' "the backup's objects: one <oid>.tar per tablespace ($objs)"
t0=$(date +%s)
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: tbs-restore}
spec:
  instances: 1
  storage: {size: 1Gi}
  tablespaces:
    - {name: data_tbs, owner: {name: app}, storage: {size: 1Gi}}
    - {name: scratch, temporary: true, storage: {size: 1Gi}}
    - {name: added, storage: {size: 1Gi}}
  bootstrap:
    recovery:
      backup: {name: tbs-first}
EOF
C=tbs-restore wait_healthy 1 600
echo "METRIC tablespaces_recovery_healthy_s=$(($(date +%s) - t0))"
e2e_assert_eq "$want" "$(app tbs-restore-1 'select count(*), md5(string_agg(v, $$,$$ order by id)) from t1')" \
	"the recovered Cluster: t1 to the end of the WAL"
e2e_assert_eq 500 "$(app tbs-restore-1 'select count(*) from t2')" "the recovered Cluster: t2"
e2e_assert_eq "$ROOT/data_tbs/data" \
	"$(app tbs-restore-1 "select pg_tablespace_location(reltablespace) from pg_class where relname = 't1'")" \
	"the recovered t1's tablespace location (its own volume)"
e2e_wait_for "[ \"\$(k get cluster tbs-restore -o jsonpath='{range .status.tablespacesStatus[*]}{.state} {end}')\" = 'reconciled reconciled reconciled ' ]" 60 1 ||
	e2e_fail "tbs-restore tablespacesStatus: $(k get cluster tbs-restore -o jsonpath='{.status.tablespacesStatus}')"
e2e_log "backup $id with 3 tablespaces recovered into tbs-restore ($(($(date +%s) - t0)) s): every row, each tablespace on its volume"
e2e_log "PASS"
