#!/usr/bin/env bash
# e2e-timeout: 900
# A failover in a Cluster that archives (issue 25's acceptance: archiving resumes on the
# new primary with no gap; timeline 2's .history and the old timeline's .partial in the
# store; a recovery to a target on timeline 2):
#   1. versitygw as a Pod over TLS (objstore_lib.sh); pgop from its Helm chart;
#      samples/cluster-backup-s3.yaml (3 instances, gzip WAL); rows 1-100 in a ledger; a
#      Backup (from a standby); a segment switched and archived on timeline 1;
#   2. the primary's Pod deleted: a standby promotes to timeline 2 and archives: a segment
#      it switches is in the store (METRIC: seconds from the deletion);
#   3. the store holds 00000002.history(.gz), the old timeline's last segment as
#      <segment>.partial.gz (postgres renames it at the promotion and archives it), and
#      every segment from the last one archived before the failover to the last after:
#      timeline 1's below the switch point, timeline 2's from it on (no gap);
#   4. rows 101-200 on the new primary, an LSN, rows 201-300: a recovery Cluster to that
#      LSN (recoveryTarget.targetLSN, from the timeline-1 backup through timeline 2) has
#      exactly rows 1-200, and runs on timeline 3;
#   5. what a CloudNativePG user's store holds: a local PostgreSQL 15 on the host backed up
#      by barman-cloud-backup 3.19.1 and its WAL archived by barman-cloud-wal-archive (both
#      as root: the venv is root's; postgres's archive_command only copies the segment to a
#      spool), into the same in-cluster store (its ClusterIP from the host); a recovery
#      Cluster from that server name has exactly its rows (started with step 4's, in
#      parallel).
# METRIC: failover (deletion) to new primary, to archiving resumed on timeline 2; recovery.
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
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
[ -x "$S3" ] || e2e_fail "pgop-s3 not built: $S3 (ninja -C BUILD_DIR pgop-s3)"
cluster_setup bkfo
osns=
local_pg=
bkfo_cleanup() {
	local rc=$?
	[ -z "$local_pg" ] || wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$local_pg" -m immediate stop >/dev/null 2>&1 || true
	if [ $rc -ne 0 ] && [ -n "$osns" ]; then
		e2e_log "--- the store's WAL"
		objstore_pod_s3 "$S3" list "pgop/cluster-backup-s3/wals/" >&2 || true
		k get backups -o json | jq -c '.items[] | {n: .metadata.name, s: .status}' >&2 || true
	fi
	[ -z "$osns" ] || kubectl delete namespace "$osns" --wait=false >/dev/null 2>&1 || true
	set +e # a failing (exit) under set -e would end the trap before the cleanup
	(exit $rc)
	cluster_cleanup
}
trap bkfo_cleanup EXIT
objstore_cluster_env
s3() { objstore_pod_s3 "$S3" "$@"; }
C=cluster-backup-s3
W=pgop/$C/wals
sed -e "s|https://versitygw.objstore.svc:7070|$OBJSTORE_ENDPOINT|" "$SAMPLES/cluster-backup-s3.yaml" |
	k apply -f - >/dev/null

# ---- 5 (first, while the Cluster starts). barman-cloud's own backup and WAL ------------
WAL_DIR=$tmp/barman
wal_init "$WAL_DIR" || e2e_fail "credentials for barman-cloud"
chmod 755 "$tmp"
spool=$tmp/spool
mkdir -p "$spool" "$tmp/pglog" && chown postgres:postgres "$spool" "$tmp/pglog"
wal_pg_init "$tmp/bsrc" "$tmp/pglog/initdb.log" || e2e_fail "initdb"
echo "archive_command = 'cp %p $spool/%f'" >>"$tmp/bsrc/postgresql.conf"
wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$tmp/bsrc" -l "$tmp/pglog/bsrc.log" -w start >/dev/null ||
	{ tail -n 20 "$tmp/pglog/bsrc.log" >&2; e2e_fail "the local PostgreSQL did not start"; }
local_pg=$tmp/bsrc
wal_psql "create table ledger (id int primary key); insert into ledger select generate_series(1, 50)"
barman() { wal_barman_env "$BARMAN/$1" --endpoint-url "$OBJSTORE_HOST_ENDPOINT" "${@:2}"; }
barman barman-cloud-backup -h "$WAL_PG_SOCK" -p "$WAL_PG_PORT" -U postgres -d postgres \
	--immediate-checkpoint --gzip s3://backups/pgop barman-src >"$tmp/bm-backup.log" 2>&1 ||
	{ cat "$tmp/bm-backup.log" >&2; e2e_fail "barman-cloud-backup"; }
wal_psql "insert into ledger select generate_series(51, 80)"
bend=$(wal_psql "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "[ -f '$spool/$bend' ]" 30 0.5 || e2e_fail "the local PostgreSQL did not archive $bend"
wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$tmp/bsrc" -m fast -w stop >/dev/null
local_pg=
nb=0
for f in "$spool"/*; do # in name order: the segments as postgres archived them
	barman barman-cloud-wal-archive --gzip s3://backups/pgop barman-src "$f" 2>>"$tmp/bm-wal.log" ||
		{ cat "$tmp/bm-wal.log" >&2; e2e_fail "barman-cloud-wal-archive $f"; }
	nb=$((nb + 1))
done
e2e_log "barman-src: a base backup by barman-cloud-backup ($(s3 list pgop/barman-src/base/ | grep -c backup.info) backup.info), $nb WAL files by barman-cloud-wal-archive up to $bend"

wait_healthy 3 600
old=$(status currentPrimary)
sql "$old" "create table ledger (id int primary key)" >/dev/null
sql "$old" "insert into ledger select generate_series(1, 100)" >/dev/null
# stored SEGMENT[SUFFIX]: the object <segment>[suffix].gz is in the store
stored() { s3 head "$W/${1:0:16}/$1.gz" >/dev/null 2>&1; }

# ---- 1. a backup on timeline 1, a segment archived ------------------------------------
e2e_wait_for "[ \"\$(sql $old 'select count(*) from pg_stat_replication where state = \$\$streaming\$\$')\" -ge 2 ]" 60 ||
	e2e_fail "the standbys do not stream from $old"
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: tl1}
spec: {cluster: {name: $C}}
EOF
e2e_wait_for "[ \"\$(k get backup tl1 -o jsonpath='{.status.phase}')\" = completed ]" 300 2 ||
	e2e_fail "Backup tl1 not completed: phase '$(k get backup tl1 -o jsonpath='{.status.phase}')', error '$(k get backup tl1 -o jsonpath='{.status.error}')'"
e2e_assert_ne "$old" "$(k get backup tl1 -o jsonpath='{.status.instanceID.podName}')" \
	"backup tl1 taken on a standby"
before=$(sql "$old" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "stored $before" 60 1 || e2e_fail "$before (timeline 1) not archived within 60 s"
e2e_log "backup tl1 done on $(k get backup tl1 -o jsonpath='{.status.instanceID.podName}'); $before archived; deleting the primary $old"

# ---- 2. failover: the new primary archives on timeline 2 --------------------------------
t0=$(date +%s)
k delete pod "$old" --wait=false >/dev/null
e2e_wait_for "[ -n \"\$(status currentPrimary | grep -vx '$old')\" ]" 300 1 ||
	e2e_fail "no new primary (targetPrimary '$(status targetPrimary)', phase '$(status phase)')"
new=$(status currentPrimary)
echo "METRIC backup_failover_new_primary_s=$(($(date +%s) - t0))"
first2=
until [ -n "$first2" ] && stored "$first2"; do
	(($(date +%s) - t0 < 240)) || e2e_fail "no timeline-2 segment archived by $new 240 s after the deletion (last '$first2')"
	s=$(sql "$new" "select pg_walfile_name(pg_switch_wal())" 2>/dev/null | tail -n 1) || s=
	[[ $s == 00000002* ]] && [ -z "$first2" ] && first2=$s
	sleep 1
done
resumed=$(($(date +%s) - t0))
echo "METRIC backup_failover_archiving_resumed_s=$resumed"
e2e_log "new primary $new; $first2 (timeline 2) archived ${resumed} s after the deletion"

# ---- 4 (writes first). rows on timeline 2 around an LSN ---------------------------------
sql "$new" "insert into ledger select generate_series(101, 200)" >/dev/null
lsn=$(sql "$new" "select pg_current_wal_insert_lsn()")
sql "$new" "insert into ledger select generate_series(201, 300)" >/dev/null
last=$(sql "$new" "select pg_walfile_name(pg_switch_wal())")
e2e_wait_for "stored $last" 60 1 || e2e_fail "$last not archived within 60 s"

# ---- 3. the store: .history, .partial, no gap ------------------------------------------
s3 get "$W/00000002.history.gz" | gunzip >"$tmp/tl2.history" || e2e_fail "$W/00000002.history.gz not in the store"
# "1<TAB>X/Y<TAB>reason": timeline 1 ends at X/Y
sw=$(awk '$1 == 1 { print $2 }' "$tmp/tl2.history")
e2e_assert_match "$sw" '^[0-9A-F]+/[0-9A-F]+$' "switch point in 00000002.history"
hi=$((16#${sw%/*})) lo=$((16#${sw#*/}))
sseg=$((hi * 256 + lo / 16777216)) # 16 MiB segments: 256 per log file
name() { printf '%08X%08X%08X' "$1" $(($2 / 256)) $(($2 % 256)); } # TLI SEGNO
segno() { echo $((16#${1:8:8} * 256 + 16#${1:16:8})); }
if ((lo % 16777216 != 0)); then
	stored "$(name 1 $sseg).partial" || e2e_fail "$(name 1 $sseg).partial.gz (timeline 1's last segment) not in the store: $(s3 list "$W/" | grep -i partial)"
	e2e_log "switch point $sw: timeline 1 ends in $(name 1 $sseg); $(name 1 $sseg).partial.gz is in the store"
fi
n=0
for ((i = $(segno "$before"); i <= $(segno "$last"); i++)); do
	if ((i < sseg)); then want=$(name 1 $i); else want=$(name 2 $i); fi
	stored "$want" || e2e_fail "gap: $want not in the store (timeline 1 ends at $sw; archived $before .. $last)"
	n=$((n + 1))
done
echo "METRIC backup_failover_segments_checked=$n"
e2e_log "no gap: $n segments from $before to $last in the store, 00000002.history too"

# ---- 4. recovery to the LSN on timeline 2 (and 5: from barman-cloud's objects) ---------
tr=$(date +%s)
objstore_recovery_cluster tl2 "$C" "      recoveryTarget: {targetLSN: \"$lsn\"}"
objstore_recovery_cluster frombarman barman-src
C=tl2 wait_healthy 1 600
echo "METRIC backup_failover_recovery_healthy_s=$(($(date +%s) - tr))"
e2e_assert_eq "200:20100" "$(sql tl2-1 "select count(*) || ':' || sum(id) from ledger")" \
	"recovery to $lsn (timeline 2): rows 1-200 exactly"
e2e_assert_eq 3 "$(sql tl2-1 'select timeline_id from pg_control_checkpoint()')" \
	"the recovered Cluster promoted from timeline 2 to 3"
e2e_log "recovery to $lsn on timeline 2: rows 1-200, timeline 3 ($(($(date +%s) - tr)) s)"
C=frombarman wait_healthy 1 600
echo "METRIC backup_barman_written_recovery_healthy_s=$(($(date +%s) - tr))"
e2e_assert_eq "80:3240" "$(sql frombarman-1 "select count(*) || ':' || sum(id) from ledger")" \
	"recovery from barman-cloud-backup + barman-cloud-wal-archive: rows 1-80 exactly"
e2e_log "recovered from barman-cloud's backup and WAL: rows 1-80"
e2e_log "PASS"
