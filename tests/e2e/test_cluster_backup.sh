#!/usr/bin/env bash
# e2e-timeout: 1500
# Base backups, scheduled backups and recovery of a Cluster on an object store in the
# cluster (issue 25's acceptance):
#   1. versitygw as a Pod over TLS (objstore_lib.sh); pgop from its Helm chart;
#      samples/cluster-backup-s3.yaml (3 instances, gzip WAL) pointed at it, with
#      data.additionalCommandArgs --max-archive-size=1MB (every backup split in
#      data.tar, data_0001.tar...); rows in a ledger table;
#   2. a Backup (the default method and target): completed, taken on a standby (not
#      the primary), with begin/end WAL and LSNs, backupId, the store in its status; the
#      Cluster's lastSuccessfulBackup and condition LastBackupSucceeded True;
#   3. barman-cloud 3.19.1's barman-cloud-backup-list lists it (DONE, same begin WAL),
#      and barman-cloud-restore + barman-cloud-wal-restore (restore_command) bring up a
#      local PostgreSQL 15 with exactly the rows committed before the backup ended;
#   4. a new Cluster bootstraps with bootstrap.recovery from that store
#      (externalClusters[].barmanObjectStore): healthy, exactly the same rows, and a
#      second one to a point in time between two rows (recoveryTarget.targetTime), a
#      third from the Backup object (bootstrap.recovery.backup.name);
#   5. method volumeSnapshot: the Backup fails with why (no CSI snapshots), at once;
#   6. a ScheduledBackup with immediate: one Backup at creation, completed;
#      suspended, no more Backups though its schedule fires every second; resumed, more;
#   7. retention (the sample's 30d): two backups written into the store as 60 and 40 days
#      old; the primary's manager deletes the 60-day one and the WAL only it needed, keeps
#      the 40-day one (recovering to 30 days ago starts there), records an Event, and the
#      Cluster's firstRecoverabilityPoint is the 40-day one's end;
#   8. the object store stopped (SIGSTOP) for 60 s under writes: ContinuousArchiving
#      False, nothing lost (every segment archived after it returns, condition True), and a
#      recovery to a time inside the outage has exactly the rows before it.
# METRIC: seconds from the Backup's creation to completed; recovery Cluster to healthy.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"
. "$E2E_DIR/wal_lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
[[ $(id -u) -eq 0 ]] || e2e_skip "must run as root (setpriv to postgres)"
BARMAN=$("$E2E_DIR/build-barman.sh" | tail -n 1) || e2e_fail "barman-cloud not installed"
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup backup
osns=
local_pg=
backup_cleanup() {
	local rc=$?
	[ -z "$local_pg" ] || wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$local_pg" -m immediate stop >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		e2e_log "--- backups"
		k get backups,scheduledbackups -o wide >&2 || true
		k get backups -o json | jq -c '.items[] | {n: .metadata.name, s: .status}' >&2 || true
	fi
	[ -z "$osns" ] || kubectl delete namespace "$osns" --wait=false >/dev/null 2>&1 || true
	set +e # a failing (exit) under set -e would end the trap before the cleanup
	(exit $rc)
	cluster_cleanup
}
trap backup_cleanup EXIT
objstore_cluster_env
C=cluster-backup-s3
t0=$(date +%s)
# with barman-cloud-backup's --max-archive-size as CloudNativePG users pass it: every base
# backup here is split in 1 MiB tars, which barman-cloud-restore (3.) and pgop's recovery
# (4.) then read
sed -e "s|https://versitygw.objstore.svc:7070|$OBJSTORE_ENDPOINT|" \
	-e 's|^        maxParallel: 4$|&\n      data:\n        additionalCommandArgs: ["--max-archive-size=1MB", "--read-timeout=60"]|' \
	"$SAMPLES/cluster-backup-s3.yaml" | k apply -f - >/dev/null
k get cluster $C -o jsonpath='{.spec.backup.barmanObjectStore.data.additionalCommandArgs}' | grep -q max-archive-size ||
	e2e_fail "the Cluster lacks data.additionalCommandArgs (the sample changed?)"
wait_healthy 3 600
primary=$(status currentPrimary)
e2e_log "healthy, primary $primary ($(($(date +%s) - t0)) s)"
sql "$primary" "create table ledger (id int primary key, at timestamptz default clock_timestamp())" >/dev/null
sql "$primary" "insert into ledger (id) select generate_series(1, 1000)" >/dev/null

bst() { k get backup "$1" -o jsonpath="{.status.$2}" 2>/dev/null; }
wait_backup() { # NAME TIMEOUT: until completed (fails the test on failed)
	local deadline=$(($(date +%s) + $2)) phase
	while :; do
		phase=$(bst "$1" phase)
		[ "$phase" = completed ] && return 0
		[ "$phase" = failed ] && e2e_fail "backup $1 failed: $(bst "$1" error)"
		[ "$(date +%s)" -lt "$deadline" ] || e2e_fail "backup $1 not completed after $2 s (phase '$phase')"
		sleep 2
	done
}

# ---- 2. a Backup, from a standby ----------------------------------------------------
# prefer-standby takes the primary while no standby streams yet: wait for them
e2e_wait_for "[ \"\$(sql $primary 'select count(*) from pg_stat_replication where state = \$\$streaming\$\$')\" -ge 2 ]" 60 ||
	e2e_fail "the standbys do not stream from $primary"
tb=$(date +%s)
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: first}
spec: {cluster: {name: $C}}
EOF
wait_backup first 300
echo "METRIC backup_first_completed_s=$(($(date +%s) - tb))"
pod=$(bst first instanceID.podName)
e2e_assert_ne "" "$pod" "status.instanceID.podName"
e2e_assert_ne "$primary" "$pod" "prefer-standby: the backup ran on a standby"
id=$(bst first backupId)
e2e_assert_match "$id" '^[0-9]{8}T[0-9]{6}$' "status.backupId"
for f in beginWal endWal; do e2e_assert_match "$(bst first $f)" '^[0-9A-F]{24}$' "status.$f"; done
for f in beginLSN endLSN; do e2e_assert_match "$(bst first $f)" '^[0-9A-F]+/[0-9A-F]+$' "status.$f"; done
e2e_assert_eq "s3://backups/pgop" "$(bst first destinationPath)" "status.destinationPath"
e2e_assert_eq "$C" "$(bst first serverName)" "status.serverName"
e2e_assert_ne "" "$(bst first stoppedAt)" "status.stoppedAt"
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
parts=$(objstore_pod_s3 "$S3" list "pgop/$C/base/$id/" | awk '{ sub(".*/", "", $2); print $2 }' | tr '\n' ' ')
e2e_assert_match "$parts" 'data\.tar.* data_0001\.tar' "--max-archive-size=1MB: the backup is split ($parts)"
e2e_wait_for "[ -n \"\$(status lastSuccessfulBackup)\" ]" 30 || e2e_fail "no lastSuccessfulBackup"
cond() { k get cluster $C -o jsonpath="{.status.conditions[?(@.type==\"$1\")].$2}"; }
e2e_wait_for "[ \"\$(cond LastBackupSucceeded status)\" = True ]" 30 ||
	e2e_fail "condition LastBackupSucceeded '$(cond LastBackupSucceeded status)': $(cond LastBackupSucceeded message)"
e2e_log "backup first: $id on $pod, WAL $(bst first beginWal)..$(bst first endWal), LSN $(bst first beginLSN)..$(bst first endLSN)"
# rows committed after the backup: a recovery to the end of the WAL has them too
sql "$primary" "insert into ledger (id) select generate_series(1001, 1500)" >/dev/null
sw=$(sql "$primary" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "[ \"\$(sql $primary 'select coalesce(last_archived_wal, 0::text) from pg_stat_archiver')\" \\> '$sw' ] || [ \"\$(sql $primary 'select last_archived_wal from pg_stat_archiver')\" = '$sw' ]" 60 ||
	e2e_fail "$sw not archived within 60 s"
want_sum=$(sql "$primary" "select count(*) || ':' || sum(id) from ledger")

# ---- 3. barman-cloud lists and restores it ------------------------------------------
WAL_DIR=$tmp/barman
wal_init "$WAL_DIR" || e2e_fail "credentials for barman-cloud"
barman() { wal_barman_env "$BARMAN/$1" --endpoint-url "$OBJSTORE_HOST_ENDPOINT" "${@:2}"; }
list=$(barman barman-cloud-backup-list --format json s3://backups/pgop "$C" 2>"$tmp/list.err") ||
	e2e_fail "barman-cloud-backup-list failed: $list $(cat "$tmp/list.err")"
e2e_log "barman-cloud-backup-list: $(jq -c '[.backups_list[] | {backup_id, status}]' <<<"$list" 2>&1) $(head -c 600 "$tmp/list.err")"
e2e_assert_eq DONE "$(jq -r --arg id "$id" '.backups_list[] | select(.backup_id == $id) | .status' <<<"$list")" \
	"barman-cloud-backup-list: $id DONE"
e2e_assert_eq "$(bst first beginWal)" "$(jq -r --arg id "$id" '.backups_list[] | select(.backup_id == $id) | .begin_wal' <<<"$list")" \
	"barman-cloud-backup-list: begin_wal"
local_pg=$tmp/restored
chmod 755 "$tmp"
# barman-cloud runs as root (its venv is in root's cache): the base backup, then every
# archived WAL segment from the backup's first on, each fetched by barman-cloud-wal-restore;
# postgres's restore_command copies from there
barman barman-cloud-restore s3://backups/pgop "$C" "$id" "$local_pg" || e2e_fail "barman-cloud-restore failed"
walsrc=$tmp/barman-wal
mkdir -p "$walsrc"
seg=$(bst first beginWal)
fetched=0
while barman barman-cloud-wal-restore s3://backups/pgop "$C" "$seg" "$walsrc/$seg" 2>/dev/null; do
	fetched=$((fetched + 1))
	lo=$((16#${seg:16:8} + 1)) hi=$((16#${seg:8:8}))
	((lo > 255)) && lo=0 hi=$((hi + 1))
	seg=$(printf '%s%08X%08X' "${seg:0:8}" "$hi" "$lo")
done
((fetched >= 2)) || e2e_fail "barman-cloud-wal-restore fetched $fetched segments from $(bst first beginWal)"
e2e_log "barman-cloud-restore of $id, then $fetched WAL segments by barman-cloud-wal-restore"
chown -R postgres:postgres "$local_pg" "$walsrc" && chmod 0700 "$local_pg"
WAL_PG_PORT=$(e2e_free_ports 1) || e2e_fail "no free port"
WAL_PG_SOCK=$tmp/sock
mkdir -p "$WAL_PG_SOCK" && chown postgres:postgres "$WAL_PG_SOCK"
cat >"$tmp/restore.sh" <<EOF
#!/bin/sh
exec cp "$walsrc/\$1" "\$2"
EOF
chmod 755 "$tmp/restore.sh"
# the restored PGDATA holds the instance's configuration, written for its Pod (its
# certificates, /controller paths): a local server gets a configuration of its own
cat >"$local_pg/postgresql.conf" <<EOF
port = $WAL_PG_PORT
listen_addresses = ''
unix_socket_directories = '$WAL_PG_SOCK'
hba_file = '$local_pg/pg_hba.local'
ident_file = '$local_pg/pg_ident.local'
restore_command = '$tmp/restore.sh %f %p'
recovery_target_action = 'promote'
EOF
# the settings a standby of that primary needs at least as high as the primary's
for p in max_connections max_worker_processes max_wal_senders max_prepared_transactions \
	max_locks_per_transaction; do
	echo "$p = $(sql "$primary" "show $p")" >>"$local_pg/postgresql.conf"
done
: >"$local_pg/postgresql.auto.conf"
printf 'local all all trust\n' >"$local_pg/pg_hba.local"
: >"$local_pg/pg_ident.local"
touch "$local_pg/recovery.signal"
chown -R postgres:postgres "$local_pg"
mkdir -p "$tmp/pglog" && chown postgres:postgres "$tmp/pglog"
wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$local_pg" -l "$tmp/pglog/restored.log" -w -t 300 \
	start >/dev/null ||
	{ tail -n 30 "$tmp/pglog/restored.log" >&2; e2e_fail "the barman-cloud-restored PostgreSQL did not start"; }
e2e_wait_for "[ \"\$(wal_psql 'select pg_is_in_recovery()')\" = f ]" 300 ||
	{ tail -n 30 "$tmp/pglog/restored.log" >&2; e2e_fail "barman-cloud-restored PostgreSQL still in recovery"; }
e2e_assert_eq "$want_sum" "$(wal_psql "select count(*) || ':' || sum(id) from ledger")" \
	"barman-cloud-restore + barman-cloud-wal-restore: the same rows"
wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$local_pg" -m fast stop >/dev/null
local_pg=

# ---- 4. pgop recovers a new Cluster from the store -----------------------------------
recovery_cluster() { objstore_recovery_cluster "$1" cluster-backup-s3 "${2:-}"; } # NAME [TARGET-YAML]
tr0=$(date +%s)
recovery_cluster restored
C=restored wait_healthy 1 600
echo "METRIC recovery_cluster_healthy_s=$(($(date +%s) - tr0))"
e2e_assert_eq "$want_sum" "$(sql restored-1 "select count(*) || ':' || sum(id) from ledger")" \
	"the recovered Cluster has the same rows"
# a point in time between two rows
sql "$primary" "insert into ledger (id) values (2001)" >/dev/null
sleep 1
tt=$(sql "$primary" "select to_char(now() at time zone 'utc', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
sleep 1
sql "$primary" "insert into ledger (id) values (2002)" >/dev/null
sql "$primary" "select pg_switch_wal()" >/dev/null
e2e_wait_for "[ \"\$(k get cluster $C -o jsonpath='{.status.conditions[?(@.type==\"ContinuousArchiving\")].status}')\" = True ]" 60 || true
sleep 5
recovery_cluster pitr "      recoveryTarget: {targetTime: \"$tt\"}"
C=pitr wait_healthy 1 600
e2e_assert_eq "1:0" "$(sql pitr-1 "select count(*) filter (where id = 2001) || ':' || count(*) filter (where id = 2002) from ledger")" \
	"recovery to $tt: row 2001 in, row 2002 out"

# from the Backup object (bootstrap.recovery.backup.name): its status names the store
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: frombackup}
spec:
  instances: 1
  storage: {size: 1Gi}
  bootstrap:
    recovery:
      backup: {name: first}
EOF
C=frombackup wait_healthy 1 600
e2e_assert_eq "1" "$(sql frombackup-1 "select count(*) from ledger where id = 2002")" \
	"recovery from Backup first to the end of the WAL: the last row is there"

# ---- 5. volumeSnapshot: refused in the Backup's status -------------------------------
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: snap}
spec: {cluster: {name: $C}, method: volumeSnapshot}
EOF
e2e_wait_for "[ \"\$(bst snap phase)\" = failed ]" 30 || e2e_fail "volumeSnapshot backup phase '$(bst snap phase)'"
e2e_assert_contains "$(bst snap error)" "CSI" "volumeSnapshot: the error says why"

# ---- 6. ScheduledBackup: immediate, suspend, resume ----------------------------------
count_sched() { k get backups -l cnpg.io/scheduled-backup=nightly -o name | wc -l; }
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: ScheduledBackup
metadata: {name: nightly}
spec: {cluster: {name: $C}, schedule: "0 0 0 1 1 *", immediate: true, backupOwnerReference: self}
EOF
e2e_wait_for "[ \"\$(count_sched)\" -ge 1 ]" 30 || e2e_fail "immediate: no Backup created"
b1=$(k get backups -l cnpg.io/scheduled-backup=nightly -o jsonpath='{.items[0].metadata.name}')
wait_backup "$b1" 300
e2e_assert_eq 1 "$(count_sched)" "immediate: exactly one Backup"
e2e_assert_ne "" "$(k get scheduledbackup nightly -o jsonpath='{.status.lastScheduleTime}')" "lastScheduleTime"
e2e_assert_contains "$(k get scheduledbackup nightly -o jsonpath='{.status.nextScheduleTime}')" "-01-01T00:00:00" "nextScheduleTime"
k patch scheduledbackup nightly --type merge -p '{"spec":{"suspend":true,"schedule":"*/2 * * * * *"}}' >/dev/null
sleep 10
e2e_assert_eq 1 "$(count_sched)" "suspended: no new Backup in 10 s of a 2-second schedule"
k patch scheduledbackup nightly --type merge -p '{"spec":{"suspend":false}}' >/dev/null
e2e_wait_for "[ \"\$(count_sched)\" -ge 2 ]" 60 || e2e_fail "resumed: no new Backup"
e2e_log "scheduled backups: $(count_sched) after resuming"
k patch scheduledbackup nightly --type merge -p '{"spec":{"suspend":true}}' >/dev/null

# ---- 7. retention (retentionPolicy: 30d): two backups made to look 60 and 40 days old --
C=cluster-backup-s3
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
[ -x "$S3" ] || e2e_fail "pgop-s3 not built: $S3"
s3() { objstore_pod_s3 "$S3" "$@"; }
BASE=pgop/$C/base
fake_backup() { # DAYS-AGO BEGIN-WAL: prints the backup id
	local at id t
	at=$(($(date +%s) - $1 * 86400))
	id=$(date -u -d "@$at" +%Y%m%dT%H%M%S)
	t=$(date -u -d "@$at" '+%Y-%m-%d %H:%M:%S+00:00')
	printf '%s\n' "backup_label=None" "begin_time=$t" "begin_wal=$2" "begin_xlog=0/1000028" \
		"end_time=$t" "end_wal=$2" "end_xlog=0/1000100" "mode=concurrent" \
		"server_name=$C" "status=DONE" "timeline=1" "version=150000" \
		"xlog_segment_size=16777216" | s3 put "$BASE/$id/backup.info" >/dev/null ||
		e2e_fail "cannot write $BASE/$id/backup.info"
	echo tar | s3 put "$BASE/$id/data.tar" >/dev/null
	echo "$id"
}
old60=$(fake_backup 60 000000010000000000000001)
old40=$(fake_backup 40 000000010000000000000003)
W=pgop/$C/wals/0000000100000000
for n in 1 2 3; do
	s3 head "$W/00000001000000000000000$n.gz" >/dev/null 2>&1 ||
		echo wal | s3 put "$W/00000001000000000000000$n.gz" >/dev/null
done
e2e_log "retention: fake backups $old60 (60 days) and $old40 (40 days) in the store"
tr0=$(date +%s)
e2e_wait_for "! s3 list '$BASE/$old60/' | grep -q ." 180 3 ||
	e2e_fail "retention did not delete $old60 within 180 s"
echo "METRIC retention_applied_s=$(($(date +%s) - tr0))"
e2e_assert_contains "$(s3 list "$BASE/$old40/")" "backup.info" "$old40 (the newest older than 30 days) is kept"
e2e_assert_contains "$(s3 list "$BASE/$id/")" "backup.info" "backup first is kept"
# the backup goes first (backup.info last), then the WAL only it needed
for n in 1 2; do
	e2e_wait_for "! s3 list '$W/' | grep -q 00000001000000000000000$n.gz" 30 1 ||
		e2e_fail "WAL 00000001000000000000000$n (needed only by $old60) not deleted"
done
wals=$(s3 list "$W/")
e2e_assert_contains "$wals" "000000010000000000000003.gz" "WAL from $old40's begin is kept"
e2e_assert_contains "$wals" "$(bst first beginWal).gz" "backup first's WAL is kept"
e2e_wait_for "k get events --field-selector reason=RetentionPolicyApplied,involvedObject.name=$C -o jsonpath='{.items[*].message}' | grep -q $old60" 60 ||
	e2e_fail "no Event RetentionPolicyApplied naming $old60"
frp=$(date -u -d "@$(($(date +%s) - 40 * 86400))" +%Y-%m-%d)
e2e_wait_for "[ \"\$(status firstRecoverabilityPoint | cut -c1-10)\" = $frp ]" 90 ||
	e2e_fail "firstRecoverabilityPoint '$(status firstRecoverabilityPoint)', want $old40's end ($frp)"
e2e_log "retention: $old60 and its WAL deleted, firstRecoverabilityPoint $(status firstRecoverabilityPoint)"

# ---- 8. the object store stopped for 60 s under writes ---------------------------------
vpid=$(cat "$AGENT_STATE/run/${osns}_versitygw_versitygw.pid" 2>/dev/null) || e2e_fail "versitygw's pid"
primary=$(status currentPrimary)
write_switch() { sql "$primary" "insert into ledger (id) values ($1); select pg_walfile_name(pg_switch_wal())"; }
kill -STOP "$vpid"
t_stop=$(date +%s)
row=3000 last=
in_time=
while (($(date +%s) - t_stop < 60)); do
	row=$((row + 1))
	last=$(write_switch $row | tail -n 1)
	# a time inside the outage, between two committed rows
	if [ -z "$in_time" ] && (($(date +%s) - t_stop >= 20)); then
		sleep 1
		in_time=$(sql "$primary" "select to_char(now() at time zone 'utc', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
		in_row=$row
		sleep 1
	fi
	[ -n "${false_s:-}" ] || [ "$(cond ContinuousArchiving status)" != False ] ||
		false_s=$(($(date +%s) - t_stop))
	sleep 3
done
kill -CONT "$vpid"
[ -n "${false_s:-}" ] || e2e_fail "ContinuousArchiving not False during a 60 s store outage ('$(cond ContinuousArchiving status)')"
echo "METRIC outage_condition_false_s=$false_s"
e2e_log "store stopped 60 s: ContinuousArchiving False after ${false_s} s: $(cond ContinuousArchiving message)"
t_cont=$(date +%s)
e2e_wait_for "[ \"\$(sql $primary 'select last_archived_wal from pg_stat_archiver')\" \\> '$last' ] || [ \"\$(sql $primary 'select last_archived_wal from pg_stat_archiver')\" = '$last' ]" 180 2 ||
	e2e_fail "archiving did not catch up to $last within 180 s of the store's return"
echo "METRIC outage_catch_up_s=$(($(date +%s) - t_cont))"
e2e_wait_for "[ \"\$(cond ContinuousArchiving status)\" = True ]" 120 ||
	e2e_fail "ContinuousArchiving not True again: $(cond ContinuousArchiving message)"
e2e_log "caught up to $last in $(($(date +%s) - t_cont)) s; recovering to $in_time (inside the outage, after row $in_row)"
recovery_cluster outage "      recoveryTarget: {targetTime: \"$in_time\"}"
C=outage wait_healthy 1 600
e2e_assert_eq "$((in_row - 3000)):0" \
	"$(sql outage-1 "select count(*) filter (where id between 3001 and $in_row) || ':' || count(*) filter (where id > $in_row and id < 4000) from ledger")" \
	"recovery to a time inside the outage: every row before it, none after"
e2e_log "PASS"
