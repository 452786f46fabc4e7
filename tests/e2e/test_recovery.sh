#!/usr/bin/env bash
# e2e-timeout: 900
# Restore and point-in-time recovery (`pgop instance restore`: backup/catalog.c,
# backup/restore_base.c, instance/recovery.c) against a real S3 server (versitygw over
# TLS on loopback) and a local PostgreSQL 15 run as the postgres user (no Kubernetes):
#  - the source archives its WAL with pgop wal-archive (gzip, barman's objects) and is
#    backed up twice with barman-cloud-backup 3.19.1 (gzip, then uncompressed): what
#    CloudNativePG users' stores hold;
#  - a ledger table gets one row per step around recorded points: a commit time, an LSN,
#    an XID (txid_current), a restore point (pg_create_restore_point);
#  - pgop restores to each kind of target, inclusive and exclusive, and to the end of the
#    WAL: exactly the expected rows each time, from the backup the target needs (a time
#    before the second backup's end takes the first one);
#  - timeline 2: the end-of-WAL restore, promoted, archives into the source (pgop
#    wal-archive: its .history too) and writes more; a recovery to a time on timeline 2;
#  - hostile tars (python tarfile: "../", an absolute path, a symbolic link leaving PGDATA
#    then a file through it) are refused, clearly, and nothing is written outside;
#  - a missing backup id: a clear error.
# Figures (METRIC): seconds of the end-of-WAL restore.
# Usage: test_recovery.sh [PGOP_BIN]. Needs root (setpriv to postgres).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"
. "$E2E_DIR/wal_lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-}}
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found (argument 1 or PGOP_BIN)"
PGOP_BIN=$(realpath "$PGOP_BIN")
PGBIN=$WAL_PGBIN
[[ -x $PGBIN/initdb ]] || e2e_fail "PostgreSQL 15 binaries are required (scripts/setup-deps.sh)"
id postgres >/dev/null 2>&1 || e2e_fail "the postgres OS user is required"
[[ $(id -u) -eq 0 ]] || e2e_skip "must run as root (setpriv to postgres)"
BARMAN=$("$E2E_DIR/build-barman.sh" | tail -n 1) || e2e_fail "barman-cloud not installed"

PASS=0
FAIL=0
check() { # check NAME CMD...
	local name=$1
	shift
	if "$@"; then
		PASS=$((PASS + 1))
		e2e_log "ok: $name"
	else
		FAIL=$((FAIL + 1))
		e2e_log "FAIL: $name"
	fi
}

T=$(mktemp -d /tmp/pgop-rec.XXXXXX)
chmod 755 "$T"
cleanup() {
	local d
	for d in "$T"/pg1 "$RS"/r-* "$T"/boot/pgdata; do
		[[ -f $d/postmaster.pid ]] && wal_as_pg "$PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	objstore_stop
	if [[ ${KEEP_TMP:-0} != 1 ]]; then rm -rf "$T"; fi
}
trap cleanup EXIT
as_pg() { wal_as_pg "$@"; }

objstore_start "$T/s3" || e2e_fail "versitygw did not start"
cp "$PGOP_BIN" "$T/pgop" && chmod 755 "$T/pgop"
PGOP=$T/pgop
wal_init "$T" || e2e_fail "credentials"
DEST=$WAL_DEST
RS=$T/rs # the restored data directories (postgres creates them)
mkdir -p "$T/logs" "$T/sock" "$RS" && chown postgres:postgres "$T/logs" "$T/sock" "$RS"
RPORT=$(e2e_free_ports 2) || e2e_fail "no free port"
VPORT=$((RPORT + 1))

# ---- the source: PostgreSQL 15 archiving with pgop wal-archive (gzip) ------------------
# (barman-cloud-wal-archive cannot run as postgres here: its venv is root's; pgop's objects
# are barman's, test_wal_archive.sh checks it)
wal_cfg "$T/src.json" pg1 gzip
WAL_PG_PORT=$((RPORT + 2))
wal_pg_init "$T/pg1" "$T/logs/initdb.log" || e2e_fail "initdb"
cat >>"$T/pg1/postgresql.conf" <<EOF
archive_command = '$PGOP instance wal-archive --config $T/src.json %p'
track_commit_timestamp = on
wal_keep_size = '1GB'
EOF
as_pg "$PGBIN/pg_ctl" -D "$T/pg1" -l "$T/logs/pg1.log" -w start >/dev/null ||
	{ tail -20 "$T/logs/pg1.log"; e2e_fail "postgres start"; }
psql1() { wal_psql "$1"; }
psql1 "CREATE TABLE ledger(id int PRIMARY KEY, note text)"
# add ID: one transaction; prints its xid and its commit time (RFC 3339, UTC)
add() {
	local xid
	xid=$(psql1 "BEGIN; INSERT INTO ledger VALUES ($1, 'row $1'); SELECT txid_current(); COMMIT;")
	echo "$xid $(psql1 "SELECT to_char(pg_xact_commit_timestamp('$xid'::xid) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")"
}
# barman-cloud-backup (root: its venv is root's; it reads PGDATA), credentials from files
cat >"$T/bm-backup.sh" <<EOF
#!/bin/sh
AWS_ACCESS_KEY_ID=\$(cat '$T/cred/access') AWS_SECRET_ACCESS_KEY=\$(cat '$T/cred/secret') \\
AWS_CA_BUNDLE='$T/cred/ca.crt' AWS_DEFAULT_REGION=us-east-1 \\
exec '$BARMAN/barman-cloud-backup' --endpoint-url '$OBJSTORE_ENDPOINT' -h '$WAL_PG_SOCK' \\
	-p '$WAL_PG_PORT' -U postgres -d postgres --immediate-checkpoint "\$@" '$DEST' pg1
EOF
chmod 755 "$T/bm-backup.sh"

add 1 >/dev/null
"$T/bm-backup.sh" --gzip >"$T/logs/bm-backup1.log" 2>&1 || { cat "$T/logs/bm-backup1.log" >&2; e2e_fail "barman-cloud-backup --gzip"; }
read -r XID2 TIME2 < <(add 2)
sleep 1.1
"$T/bm-backup.sh" >"$T/logs/bm-backup2.log" 2>&1 || { cat "$T/logs/bm-backup2.log" >&2; e2e_fail "barman-cloud-backup"; }
mapfile -t IDS < <(ls "$WAL_STORE/pg1/base")
check "two base backups by barman-cloud-backup (${IDS[*]})" test "${#IDS[@]}" = 2
B1=${IDS[0]} B2=${IDS[1]}
check "the first is data.tar.gz, the second data.tar" \
	test -f "$WAL_STORE/pg1/base/$B1/data.tar.gz" -a -f "$WAL_STORE/pg1/base/$B2/data.tar"
add 3 >/dev/null
LSN4=$(psql1 "SELECT pg_current_wal_insert_lsn()")
add 4 >/dev/null
read -r XID5 TIME5 < <(add 5)
add 6 >/dev/null
psql1 "SELECT pg_create_restore_point('before seven')" >/dev/null
add 7 >/dev/null
psql1 "SELECT pg_switch_wal()" >/dev/null
END_SEG=$(psql1 "SELECT pg_walfile_name(pg_current_wal_lsn())")
psql1 "SELECT pg_switch_wal()" >/dev/null
for i in $(seq 1 300); do
	[[ $(psql1 "SELECT coalesce(last_archived_wal, '') >= '$END_SEG' FROM pg_stat_archiver") == t ]] && break
	sleep 0.2
done
check "the source archived its WAL up to $END_SEG" \
	test "$(psql1 "SELECT coalesce(last_archived_wal, '') >= '$END_SEG' FROM pg_stat_archiver")" = t
e2e_log "points: B1=$B1 B2=$B2 xid2=$XID2 time2=$TIME2 lsn4=$LSN4 xid5=$XID5 time5=$TIME5"

# ---- restores ----------------------------------------------------------------------------
N=0
# restore NAME ARGS...: pgop instance restore into $RS/r-NAME; its log in $T/logs/r-NAME.log
restore() {
	local name=$1
	shift
	as_pg "$PGOP" instance restore --config "$T/src.json" --pgdata "$RS/r-$name" \
		--pg-bindir "$PGBIN" --port "$RPORT" --socket-dir "$T/sock" --timeout 300 "$@" \
		>"$T/logs/r-$name.log" 2>&1
}
# rows DIR: the ledger's ids of a restored PGDATA (started on its own port, archiving off)
rows() {
	as_pg "$PGBIN/pg_ctl" -D "$1" -l "$T/logs/$(basename "$1")-verify.log" \
		-o "-c port=$VPORT -c unix_socket_directories=$T/sock -c archive_mode=off -c listen_addresses=''" \
		-w start >/dev/null || { tail -5 "$T/logs/$(basename "$1")-verify.log" >&2; return 1; }
	as_pg psql -h "$T/sock" -p "$VPORT" -U postgres -d postgres -Atqc \
		"SELECT string_agg(id::text, ',' ORDER BY id) FROM ledger"
	as_pg "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null
}
# case NAME WANT ARGS...
case_rows() {
	local name=$1 want=$2 got
	shift 2
	if ! restore "$name" "$@"; then
		tail -n 5 "$T/logs/r-$name.log" >&2
		check "$name: restore $* succeeds" false
		return
	fi
	got=$(rows "$RS/r-$name")
	check "$name ($*): rows $want (got ${got:-none})" test "$got" = "$want"
}
chosen() { grep -o '"msg":"base backup chosen"[^}]*"backup":"[0-9T]*"' "$T/logs/r-$1.log" | grep -o '[0-9]\{8\}T[0-9]\{6\}'; }

t0=$(date +%s%3N)
case_rows end "1,2,3,4,5,6,7"
t1=$(date +%s%3N)
echo "METRIC recovery_end_of_wal_ms $((t1 - t0))"
check "end: the latest backup ($B2) chosen" test "$(chosen end)" = "$B2"
check "end: the settings file is gone, recovery.signal too" \
	test ! -e "$RS/r-end/pgop-recovery.conf" -a ! -e "$RS/r-end/recovery.signal"
case_rows time-incl "1,2" --target-time "$TIME2"
check "time before $B2 ended: $B1 (gzip) chosen" test "$(chosen time-incl)" = "$B1"
case_rows time-excl "1" --target-time "$TIME2" --exclusive
pgtime5=$(date -u -d "${TIME5%Z}Z" '+%Y-%m-%d %H:%M:%S').${TIME5:20:6}+00
case_rows time-pgform "1,2,3,4,5" --target-time "$pgtime5"
case_rows lsn "1,2,3" --target-lsn "$LSN4"
case_rows lsn-excl "1,2,3" --target-lsn "$LSN4" --exclusive
case_rows xid-incl "1,2,3,4,5" --target-xid "$XID5"
case_rows xid-excl "1,2,3,4" --target-xid "$XID5" --exclusive
case_rows name "1,2,3,4,5,6" --target-name "before seven"
case_rows immediate "1,2" --target-immediate
case_rows immediate-b1 "1" --target-immediate --backup-id "$B1"
check "immediate with --backup-id: $B1 restored" test "$(chosen immediate-b1)" = "$B1"

# ---- errors ------------------------------------------------------------------------------
rc=0
restore missing --backup-id 20000101T000000 || rc=$?
check "a missing backup id: exit 1, 'no such backup'" \
	bash -c "test $rc = 1 && grep -q 'no such backup' '$T/logs/r-missing.log'"
check "a missing backup id: nothing restored" test ! -e "$RS/r-missing/PG_VERSION"
rc=0
restore badtime --target-time "yesterday at noon" || rc=$?
check "a malformed targetTime: exit 1, the field named" \
	bash -c "test $rc = 1 && grep -q 'targetTime' '$T/logs/r-badtime.log'"
rc=0
restore two --target-xid 5 --target-name x || rc=$?
check "two targets: exit 1" bash -c "test $rc = 1 && grep -q 'at most one' '$T/logs/r-two.log'"
rc=0
restore past --target-time "2000-01-01T00:00:00Z" || rc=$?
check "a time before every backup: exit 1, no backup ends before it" \
	bash -c "test $rc = 1 && grep -q 'ends before the recovery target' '$T/logs/r-past.log'"

# ---- hostile tars ------------------------------------------------------------------------
HOSTILE_ID=20250101T000000
mkdir -p "$T/outside" && chown postgres:postgres "$T/outside"
python3 - "$T/hostile" "$T/outside" <<'EOF'
import io, os, sys, tarfile
out, outside = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
def tar(name, entries):
    with tarfile.open(os.path.join(out, name), "w", format=tarfile.PAX_FORMAT) as t:
        for kind, path, arg in entries:
            i = tarfile.TarInfo(path)
            if kind == "file":
                i.size = len(arg); t.addfile(i, io.BytesIO(arg))
            elif kind == "sym":
                i.type = tarfile.SYMTYPE; i.linkname = arg; t.addfile(i)
            elif kind == "hard":
                i.type = tarfile.LNKTYPE; i.linkname = arg; t.addfile(i)
            elif kind == "dev":
                i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; t.addfile(i)
ok = ("file", "PG_VERSION", b"15\n")
tar("dotdot.tar", [ok, ("file", "../../outside/dotdot", b"x")])
tar("abs.tar", [ok, ("file", outside + "/abs", b"x")])
tar("symlink.tar", [ok, ("sym", "escape", "../../outside"), ("file", "escape/through", b"x")])
tar("symthrough.tar", [ok, ("file", "base/f", b"x"), ("sym", "inside", "base"),
                       ("file", "inside/f2", b"x")])
tar("symdeep.tar", [ok, ("sym", "base/escape", "../../x")])
tar("hardlink.tar", [ok, ("hard", "hl", "../../outside/target")])
tar("device.tar", [ok, ("dev", "null", None)])
EOF
S3TOOL=$PGOP_BUILD_DIR/tests/e2e/tools/pgop-s3
[[ -x $S3TOOL ]] || S3TOOL=$(dirname "$PGOP_BIN")/../tests/e2e/tools/pgop-s3
s3() { "$S3TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" --creds "$OBJSTORE_CREDS" --ca "$OBJSTORE_CA" "$@"; }
for kind in dotdot abs symlink symthrough symdeep hardlink device; do
	sed 's/^status=.*/status=DONE/' "$WAL_STORE/pg1/base/$B2/backup.info" |
		s3 put "backups/pgop/evil-$kind/base/$HOSTILE_ID/backup.info" >/dev/null 2>&1
	s3 put "backups/pgop/evil-$kind/base/$HOSTILE_ID/data.tar" <"$T/hostile/$kind.tar" >/dev/null 2>&1
	wal_cfg "$T/evil-$kind.json" "evil-$kind" none
	rc=0
	as_pg "$PGOP" instance restore --config "$T/evil-$kind.json" --pgdata "$RS/r-evil-$kind" \
		--pg-bindir "$PGBIN" --port "$RPORT" --socket-dir "$T/sock" >"$T/logs/r-evil-$kind.log" 2>&1 || rc=$?
	check "hostile tar ($kind): refused (exit 1, 'refused' or 'leaves the directory')" \
		bash -c "test $rc = 1 && grep -qE 'refused|leaves the directory' '$T/logs/r-evil-$kind.log'"
done
check "hostile tars: nothing written outside PGDATA" \
	bash -c "test -z \"\$(ls -A '$T/outside')\" && test ! -e '$T/x' && test ! -e '$RS/x' && test ! -e '$T/abs'"
grep -h '"restore failed"' "$T"/logs/r-evil-*.log | head -n 7 | sed 's/^/    /' >&2

# ---- pgop instance init with spec.bootstrap.recovery ------------------------------------
# the Cluster names the source as an externalClusters entry with barmanObjectStore; the
# credentials as the reconciler mounts them (<secrets>/recovery-<file>/<file>)
B=$T/boot
mkdir -p "$B/certs/server" "$B/certs/ca" "$B/secrets/recovery-access-key-id" \
	"$B/secrets/recovery-secret-access-key" "$B/secrets/recovery-endpoint-ca" "$B/secrets/app"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=rec-rw" \
	-keyout "$B/certs/server/tls.key" -out "$B/certs/server/tls.crt" >/dev/null 2>&1
cp "$B/certs/server/tls.crt" "$B/certs/ca/ca.crt"
cp "$T/cred/access" "$B/secrets/recovery-access-key-id/access-key-id"
cp "$T/cred/secret" "$B/secrets/recovery-secret-access-key/secret-access-key"
cp "$T/cred/ca.crt" "$B/secrets/recovery-endpoint-ca/endpoint-ca"
printf 'app-pw' >"$B/secrets/app/password"
cat >"$B/cluster.json" <<JSON
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"rec","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":1,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "bootstrap":{"recovery":{"source":"origin","recoveryTarget":{"targetXID":"$XID5","exclusive":true}}},
  "externalClusters":[{"name":"origin","barmanObjectStore":{"destinationPath":"$DEST",
    "serverName":"pg1","endpointURL":"$OBJSTORE_ENDPOINT",
    "endpointCA":{"name":"ca","key":"ca.crt"},
    "s3Credentials":{"accessKeyId":{"name":"creds","key":"ACCESS_KEY_ID"},
      "secretAccessKey":{"name":"creds","key":"ACCESS_SECRET_KEY"}}}}],
  "storage":{"size":"1Gi"}},
 "status":{"instanceNames":["rec-1"],"targetPrimary":"rec-1","currentPrimary":""}}
JSON
chown -R postgres:postgres "$B" && chmod -R go-rwx "$B/secrets" "$B/certs"
as_pg "$PGOP" instance init --pgdata "$B/pgdata" --controller-dir "$B/controller" \
	--certs-dir "$B/certs" --secrets-dir "$B/secrets" --cluster-file "$B/cluster.json" \
	--pod-name rec-1 --cluster-name rec --pg-bindir "$PGBIN" >"$T/logs/r-boot.log" 2>&1
rc=$?
check "instance init from a backup (targetXID $XID5, exclusive) exits 0" test "$rc" = 0 ||
	tail -n 20 "$T/logs/r-boot.log" >&2
check "instance init: the source configuration names the mounted recovery-<file> files" \
	grep -q "$B/secrets/recovery-secret-access-key/secret-access-key" "$B/controller/run/recovery-source.json"
check "instance init: the marker names the pod" grep -q "rec-1" "$B/pgdata/pgop-bootstrapped"
check "instance init: the Cluster's configuration, no recovery settings left" \
	bash -c "grep -q 'custom.conf' '$B/pgdata/postgresql.conf' && test ! -e '$B/pgdata/pgop-recovery.conf'"
got=$(rows "$B/pgdata")
check "instance init: rows 1,2,3,4 (got ${got:-none})" test "$got" = "1,2,3,4"
as_pg "$PGBIN/pg_ctl" -D "$B/pgdata" -l "$T/logs/boot-verify2.log" \
	-o "-c port=$VPORT -c unix_socket_directories=$T/sock -c archive_mode=off -c listen_addresses=''" \
	-w start >/dev/null
check "instance init: streaming_replica created" test "$(as_pg psql -h "$T/sock" -p "$VPORT" \
	-U postgres -d postgres -Atqc "SELECT count(*) FROM pg_roles WHERE rolname = 'streaming_replica'")" = 1
as_pg "$PGBIN/pg_ctl" -D "$B/pgdata" -m fast -w stop >/dev/null

# ---- timeline 2 --------------------------------------------------------------------------
# the end-of-WAL restore was promoted to timeline 2: it archives into the source (same
# system) with pgop, its .history first, and writes more
R=$RS/r-end
cat >>"$R/postgresql.conf" <<EOF
archive_command = '$PGOP instance wal-archive --config $T/src.json %p'
EOF
as_pg "$PGBIN/pg_ctl" -D "$R" -l "$T/logs/tl2.log" \
	-o "-c port=$VPORT -c unix_socket_directories=$T/sock -c listen_addresses=''" -w start >/dev/null ||
	{ tail -20 "$T/logs/tl2.log"; e2e_fail "timeline 2 start"; }
psqlr() { as_pg psql -h "$T/sock" -p "$VPORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"; }
check "the restored instance is on timeline 2" \
	test "$(psqlr "SELECT timeline_id FROM pg_control_checkpoint()")" = 2
psqlr "INSERT INTO ledger VALUES (20, 'tl2')"
XID20=$(psqlr "SELECT xmin FROM ledger WHERE id = 20")
TIME20=$(psqlr "SELECT to_char(pg_xact_commit_timestamp('$XID20'::xid) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
psqlr "INSERT INTO ledger VALUES (21, 'tl2')"
psqlr "SELECT pg_switch_wal()" >/dev/null
SEG=$(psqlr "SELECT pg_walfile_name(pg_current_wal_lsn())")
psqlr "SELECT pg_switch_wal()" >/dev/null
for i in $(seq 1 150); do
	[[ $(psqlr "SELECT coalesce(last_archived_wal, '') >= '$SEG' FROM pg_stat_archiver") == t ]] && break
	sleep 0.2
done
as_pg "$PGBIN/pg_ctl" -D "$R" -m fast -w stop >/dev/null
check "timeline 2: 00000002.history archived into the source" \
	bash -c "ls '$WAL_STORE/pg1/wals/' | grep -q '^00000002.history'"
case_rows tl2 "1,2,3,4,5,6,7,20" --target-time "$TIME20"

check "no sanitizer report or crash in any pgop log" \
	bash -c "! grep -lE 'Sanitizer|runtime error|LeakSanitizer' '$T'/logs/r-*.log"
check "no secret in any log" bash -c "! grep -rqF \"\$(cat '$T/cred/secret')\" '$T/logs'"

e2e_log "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]] || exit 1
e2e_log "PASS"
