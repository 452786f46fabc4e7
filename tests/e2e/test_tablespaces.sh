#!/usr/bin/env bash
# e2e-timeout: 600
# Tablespaces in base backups and their restore (instance/basebackup.c, backup/tar.c,
# backup/restore_base.c) against a real S3 server (versitygw over TLS on loopback) and a
# local PostgreSQL 15 run as the postgres user (no Kubernetes), checked with barman-cloud
# 3.19.1 (build-barman.sh):
#  - a source with tablespace ts1 at one location holding a table; pgop instance backup
#    stores base/<id>/<oid>.tar.gz beside data.tar.gz, backup.info lists
#    [('ts1', oid, 'location')], data.tar has no pg_tblspc/<oid> (barman's layout);
#  - pgop instance restore --tablespace ts1:<another location>: the tablespace's files
#    there, pg_tblspc/<oid> a link to it, every row (end of the WAL);
#  - without --tablespace: refused, naming ts1, nothing downloaded into the tablespace;
#  - barman-cloud-restore --tablespace ts1:<location> restores pgop's backup: the rows;
#  - barman-cloud-backup's backup with the tablespace: pgop restores it, the rows;
#  - pgop instance init of a Cluster with bootstrap.recovery and spec.tablespaces: ts1
#    restored into <--tablespaces-dir>/ts1/data (CloudNativePG's layout), a failed
#    attempt's leftovers there removed, every row;
#  - split tars (barman-cloud-backup's --max-archive-size; maxArchiveSize 1 MiB in pgop's
#    config): pgop's backup is data.tar.gz, data_0001.tar.gz... and <oid>_0001.tar.gz;
#    pgop and barman-cloud-restore restore every row of it; barman-cloud-backup
#    --max-archive-size 1MB's split backup is restored by pgop, every row; a part
#    removed from the store: pgop's restore refuses it naming the part.
# Usage: test_tablespaces.sh [PGOP_BIN]. Needs root (setpriv to postgres).
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
command -v jq >/dev/null || e2e_fail "jq is required"
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

T=$(mktemp -d /tmp/pgop-tbs.XXXXXX)
chmod 755 "$T"
cleanup() {
	local d
	for d in "$T"/pg1 "$T"/rs/* "$T"/boot/pgdata; do
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
STORE=$WAL_STORE
SRV=tbs
mkdir -p "$T/logs" "$T/sock" "$T/rs" "$T/tbs" && chown postgres:postgres "$T/logs" "$T/sock" "$T/rs" "$T/tbs"
RPORT=$(e2e_free_ports 2) || e2e_fail "no free port"
VPORT=$((RPORT + 1))
wal_cfg "$T/src.json" "$SRV" gzip 1 "" "" "$T/state"
jq '. + {dataCompression: "gzip", immediateCheckpoint: true}' "$T/src.json" >"$T/src.new" &&
	mv "$T/src.new" "$T/src.json" && chown postgres:postgres "$T/src.json" && chmod 0600 "$T/src.json"
wal_cfg "$T/rest.json" "$SRV" gzip 1 "" "" "$T/state-r" # the restores' (their own state)

# ---- the source: a tablespace ts1 with a table --------------------------------------------
WAL_PG_PORT=$((RPORT + 2))
wal_pg_init "$T/pg1" "$T/logs/initdb.log" || e2e_fail "initdb"
cat >>"$T/pg1/postgresql.conf" <<EOF
archive_command = '$PGOP instance wal-archive --config $T/src.json %p'
EOF
as_pg "$PGBIN/pg_ctl" -D "$T/pg1" -l "$T/logs/pg1.log" -w start >/dev/null ||
	{ tail -20 "$T/logs/pg1.log"; e2e_fail "postgres start"; }
psql1() { wal_psql "$1"; }
LOC=$T/tbs/orig
as_pg mkdir "$LOC"
psql1 "CREATE TABLESPACE ts1 LOCATION '$LOC'"
psql1 "CREATE TABLE t(id int PRIMARY KEY, v text) TABLESPACE ts1"
psql1 "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 5000) g"
OID=$(psql1 "SELECT oid FROM pg_tablespace WHERE spcname = 'ts1'")
sum1() { psql1 "SELECT count(*) || ':' || md5(string_agg(id || '=' || v, ',' ORDER BY id)) FROM t"; }
switch_and_wait() {
	local seg i
	seg=$(psql1 "SELECT pg_walfile_name(pg_current_wal_lsn())")
	psql1 "SELECT pg_switch_wal()" >/dev/null
	for i in $(seq 1 300); do
		[[ $(psql1 "SELECT coalesce(last_archived_wal, '') >= '$seg' FROM pg_stat_archiver") == t ]] && return 0
		sleep 0.2
	done
	return 1
}

# pgop_backup CONFIG WHAT ID: pgop instance backup named tbs-WHAT (log: backup-WHAT.log)
pgop_backup() {
	as_pg timeout 300 "$PGOP" instance backup --config "$1" --name "tbs-$2" --id "$3" \
		--socket-dir "$WAL_PG_SOCK" --port "$WAL_PG_PORT" >"$T/res-$2.json" 2>"$T/logs/backup-$2.log"
}

# ---- pgop's backup -------------------------------------------------------------------------
ID1=$(date -u -d "-1 hour" +%Y%m%dT%H%M%S)
pgop_backup "$T/src.json" one "$ID1"
check "pgop instance backup with a tablespace exits 0" test $? = 0 || cat "$T/logs/backup-one.log" >&2
SUM_B1=$(sum1)
B=$STORE/$SRV/base/$ID1
check "base/$ID1 has $OID.tar.gz and data.tar.gz" test -f "$B/$OID.tar.gz" -a -f "$B/data.tar.gz"
check "backup.info: tablespaces=[('ts1', $OID, '$LOC')]" \
	test "$(sed -n 's/^tablespaces=//p' "$B/backup.info")" = "[('ts1', $OID, '$LOC')]"
tar tzf "$B/$OID.tar.gz" >"$T/tbs-tar.list" 2>/dev/null
check "the tablespace tar holds PG_15_*/<db oid>/<relfilenodes> and nothing else" \
	bash -c "grep -q '^PG_15_[0-9]*/[0-9]*/[0-9]*\$' '$T/tbs-tar.list' && ! grep -Evq '^PG_15_[0-9]+/([0-9]+/([0-9]+(_fsm|_vm|_init|\.[0-9]+)?)?)?\$' '$T/tbs-tar.list'"
tar tzf "$B/data.tar.gz" >"$T/data-tar.list" 2>/dev/null
check "data.tar has pg_tblspc but no pg_tblspc/$OID (barman's layout)" \
	bash -c "grep -q '^pg_tblspc/\\?\$' '$T/data-tar.list' && ! grep -q 'pg_tblspc/$OID' '$T/data-tar.list'"
psql1 "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(5001, 6000) g"
SUM_END=$(sum1)
check "the WAL after the backup is archived" switch_and_wait

# ---- restores --------------------------------------------------------------------------------
# restore NAME ARGS...: pgop instance restore into $T/rs/NAME
restore() {
	local name=$1
	shift
	as_pg "$PGOP" instance restore --config "$T/rest.json" --pgdata "$T/rs/$name" \
		--pg-bindir "$PGBIN" --port "$RPORT" --socket-dir "$T/sock" --timeout 300 "$@" \
		>"$T/logs/r-$name.log" 2>&1
}
# sums DIR: t's rows of a restored PGDATA (started on its own port, archiving off)
sums() {
	as_pg "$PGBIN/pg_ctl" -D "$1" -l "$T/logs/$(basename "$1")-verify.log" \
		-o "-c port=$VPORT -c unix_socket_directories=$T/sock -c archive_mode=off -c listen_addresses=''" \
		-w start >/dev/null || { tail -5 "$T/logs/$(basename "$1")-verify.log" >&2; return 1; }
	as_pg psql -h "$T/sock" -p "$VPORT" -U postgres -d postgres -Atqc \
		"SELECT count(*) || ':' || md5(string_agg(id || '=' || v, ',' ORDER BY id)) FROM t"
	as_pg "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null
}

restore nomap --backup-id "$ID1"
rc=$?
check "pgop restore without --tablespace fails, naming ts1" \
	bash -c "[[ $rc != 0 ]] && grep -q 'tablespace ts1' '$T/logs/r-nomap.log'"

NEW=$T/tbs/pgop-restore
if restore pgop --backup-id "$ID1" --tablespace "ts1:$NEW"; then
	check "pgop restore: pg_tblspc/$OID -> $NEW" test "$(readlink "$T/rs/pgop/pg_tblspc/$OID")" = "$NEW"
	check "pgop restore: the tablespace's files under $NEW/PG_15_*" bash -c "ls -d '$NEW'/PG_15_* >/dev/null"
	got=$(sums "$T/rs/pgop")
	check "pgop restore --tablespace ts1:$NEW: every row (got $got)" test "$got" = "$SUM_END"
else
	tail -5 "$T/logs/r-pgop.log" >&2
	check "pgop restore --tablespace succeeds" false
fi

# bm_restore ID DIR LOC: barman-cloud-restore of backup ID into DIR (ts1 at LOC), set to
# recover to the backup's end with pgop's wal-restore (log: bm-restore-<dir name>.log)
bm_restore() {
	wal_barman_env "$BARMAN/barman-cloud-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
		--tablespace "ts1:$3" "$DEST" "$SRV" "$1" "$2" >"$T/logs/bm-restore-$(basename "$2").log" 2>&1 ||
		return 1
	chown -R postgres:postgres "$2" "$3" && chmod 0700 "$2"
	cat >>"$2/postgresql.conf" <<EOF
restore_command = '$PGOP instance wal-restore --config $T/rest.json %f %p'
recovery_target = 'immediate'
recovery_target_action = 'promote'
EOF
	as_pg touch "$2/recovery.signal"
}

# barman-cloud-restore of pgop's backup, recovered with pgop's wal-restore to its end
BMR=$T/rs/bm-of-pgop
BMLOC=$T/tbs/bm-restore
if bm_restore "$ID1" "$BMR" "$BMLOC"; then
	check "barman-cloud-restore: pg_tblspc/$OID -> $BMLOC" test "$(readlink "$BMR/pg_tblspc/$OID")" = "$BMLOC"
	got=$(sums "$BMR")
	check "barman-cloud-restore --tablespace of pgop's backup: the rows at its end (got $got)" \
		test "$got" = "$SUM_B1"
else
	cat "$T/logs/bm-restore-bm-of-pgop.log" >&2
	check "barman-cloud-restore --tablespace of pgop's backup succeeds" false
fi

# barman-cloud-backup with the tablespace (root: its venv is root's), restored by pgop
sleep 1.1
wal_barman_env "$BARMAN/barman-cloud-backup" --endpoint-url "$OBJSTORE_ENDPOINT" -h "$WAL_PG_SOCK" \
	-p "$WAL_PG_PORT" -U postgres -d postgres --immediate-checkpoint --gzip "$DEST" "$SRV" \
	>"$T/logs/bm-backup.log" 2>&1
check "barman-cloud-backup with a tablespace exits 0" test $? = 0 || cat "$T/logs/bm-backup.log" >&2
ID2=$(ls "$STORE/$SRV/base" | sort | tail -n 1)
tar tzf "$STORE/$SRV/base/$ID2/$OID.tar.gz" >"$T/bm-tbs-tar.list" 2>/dev/null
check "barman's tablespace tar has the directories pgop's has, named alike" \
	test "$(grep '/$' "$T/bm-tbs-tar.list" | sort)" = "$(grep '/$' "$T/tbs-tar.list" | sort)"
check "barman's backup $ID2 has $OID.tar.gz" test -f "$STORE/$SRV/base/$ID2/$OID.tar.gz"
psql1 "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(6001, 6500) g"
SUM_END2=$(sum1)
check "the WAL after barman's backup is archived" switch_and_wait
NEW2=$T/tbs/pgop-of-bm
if restore of-bm --backup-id "$ID2" --tablespace "ts1:$NEW2"; then
	check "pgop restore of barman's backup: pg_tblspc/$OID -> $NEW2" \
		test "$(readlink "$T/rs/of-bm/pg_tblspc/$OID")" = "$NEW2"
	got=$(sums "$T/rs/of-bm")
	check "pgop restore of barman-cloud-backup's backup with ts1: every row (got $got)" \
		test "$got" = "$SUM_END2"
else
	tail -5 "$T/logs/r-of-bm.log" >&2
	check "pgop restore of barman-cloud-backup's backup succeeds" false
fi

# ---- pgop instance init of a Cluster with bootstrap.recovery and spec.tablespaces --------
# (the volumes' directory moved by --tablespaces-dir; a failed attempt's leftovers there)
BT=$T/boot
mkdir -p "$BT/certs/server" "$BT/certs/ca" "$BT/secrets/recovery-access-key-id" \
	"$BT/secrets/recovery-secret-access-key" "$BT/secrets/recovery-endpoint-ca" "$BT/secrets/app" \
	"$BT/vol/ts1/data/PG_15_0"
echo leftover >"$BT/vol/ts1/data/PG_15_0/junk"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=rec-rw" \
	-keyout "$BT/certs/server/tls.key" -out "$BT/certs/server/tls.crt" >/dev/null 2>&1
cp "$BT/certs/server/tls.crt" "$BT/certs/ca/ca.crt"
cp "$T/cred/access" "$BT/secrets/recovery-access-key-id/access-key-id"
cp "$T/cred/secret" "$BT/secrets/recovery-secret-access-key/secret-access-key"
cp "$T/cred/ca.crt" "$BT/secrets/recovery-endpoint-ca/endpoint-ca"
printf 'app-pw' >"$BT/secrets/app/password"
cat >"$BT/cluster.json" <<JSON
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"rec","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":1,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "bootstrap":{"recovery":{"source":"origin","recoveryTarget":{"backupID":"$ID1"}}},
  "externalClusters":[{"name":"origin","barmanObjectStore":{"destinationPath":"$DEST",
    "serverName":"$SRV","endpointURL":"$OBJSTORE_ENDPOINT",
    "endpointCA":{"name":"ca","key":"ca.crt"},
    "s3Credentials":{"accessKeyId":{"name":"creds","key":"ACCESS_KEY_ID"},
      "secretAccessKey":{"name":"creds","key":"ACCESS_SECRET_KEY"}}}}],
  "tablespaces":[{"name":"ts1","storage":{"size":"1Gi"}}],
  "storage":{"size":"1Gi"}},
 "status":{"instanceNames":["rec-1"],"targetPrimary":"rec-1","currentPrimary":""}}
JSON
chown -R postgres:postgres "$BT" && chmod -R go-rwx "$BT/secrets" "$BT/certs"
as_pg "$PGOP" instance init --pgdata "$BT/pgdata" --controller-dir "$BT/controller" \
	--certs-dir "$BT/certs" --secrets-dir "$BT/secrets" --cluster-file "$BT/cluster.json" \
	--tablespaces-dir "$BT/vol" --pod-name rec-1 --cluster-name rec --pg-bindir "$PGBIN" \
	>"$T/logs/r-boot.log" 2>&1
check "instance init from backup $ID1 with spec.tablespaces exits 0" test $? = 0 ||
	tail -n 20 "$T/logs/r-boot.log" >&2
check "instance init: pg_tblspc/$OID -> <tablespaces-dir>/ts1/data, the leftover gone" \
	bash -c "test \"\$(readlink '$BT/pgdata/pg_tblspc/$OID')\" = '$BT/vol/ts1/data' && test ! -e '$BT/vol/ts1/data/PG_15_0'"
got=$(sums "$BT/pgdata")
check "instance init: every row (got $got)" test "$got" = "$SUM_END2"

# ---- split tars ------------------------------------------------------------------------------
psql1 "INSERT INTO t SELECT g, md5(g::text) || md5((g * 7)::text) FROM generate_series(6501, 60000) g"
jq '. + {maxArchiveSize: 1048576}' "$T/src.json" >"$T/split.json" && chown postgres:postgres "$T/split.json" &&
	chmod 0600 "$T/split.json"
ID3=$(date -u -d "-30 minutes" +%Y%m%dT%H%M%S)
pgop_backup "$T/split.json" split "$ID3"
check "pgop instance backup with maxArchiveSize 1 MiB exits 0" test $? = 0 || cat "$T/logs/backup-split.log" >&2
SUM_B3=$(sum1)
B3=$STORE/$SRV/base/$ID3
ls "$B3" >"$T/split.list"
check "pgop's split backup: data.tar.gz, data_0001.tar.gz, $OID.tar.gz, ${OID}_0001.tar.gz ($(tr '\n' ' ' <"$T/split.list"))" \
	bash -c "grep -qx data.tar.gz '$T/split.list' && grep -qx data_0001.tar.gz '$T/split.list' && grep -qx '$OID.tar.gz' '$T/split.list' && grep -qx '${OID}_0001.tar.gz' '$T/split.list'"
check "each part is a whole gzip tar" bash -c "for f in '$B3'/*.tar.gz; do tar tzf \"\$f\" >/dev/null || exit 1; done"
psql1 "INSERT INTO t VALUES (60001, 'after the split backup')"
SUM_END3=$(sum1)
check "the WAL after the split backup is archived" switch_and_wait
NEW3=$T/tbs/pgop-split
if restore split --backup-id "$ID3" --tablespace "ts1:$NEW3"; then
	got=$(sums "$T/rs/split")
	check "pgop restore of its split backup: every row (got $got)" test "$got" = "$SUM_END3"
else
	tail -5 "$T/logs/r-split.log" >&2
	check "pgop restore of its split backup succeeds" false
fi
BMR3=$T/rs/bm-of-split
if bm_restore "$ID3" "$BMR3" "$T/tbs/bm-split"; then
	got=$(sums "$BMR3")
	check "barman-cloud-restore of pgop's split backup: the rows at its end (got $got)" test "$got" = "$SUM_B3"
else
	cat "$T/logs/bm-restore-bm-of-split.log" >&2
	check "barman-cloud-restore of pgop's split backup succeeds" false
fi
sleep 1.1
wal_barman_env "$BARMAN/barman-cloud-backup" --endpoint-url "$OBJSTORE_ENDPOINT" -h "$WAL_PG_SOCK" \
	-p "$WAL_PG_PORT" -U postgres -d postgres --immediate-checkpoint --gzip --max-archive-size 1MB \
	"$DEST" "$SRV" >"$T/logs/bm-backup-split.log" 2>&1
check "barman-cloud-backup --max-archive-size 1MB exits 0" test $? = 0 || cat "$T/logs/bm-backup-split.log" >&2
ID4=$(ls "$STORE/$SRV/base" | sort | tail -n 1)
check "barman's split backup $ID4 has data_0001.tar.gz" test -f "$STORE/$SRV/base/$ID4/data_0001.tar.gz"
psql1 "INSERT INTO t VALUES (60002, 'after barman''s split backup')"
SUM_END4=$(sum1)
check "the WAL after barman's split backup is archived" switch_and_wait
if restore of-bm-split --backup-id "$ID4" --tablespace "ts1:$T/tbs/pgop-of-bm-split"; then
	got=$(sums "$T/rs/of-bm-split")
	check "pgop restore of barman-cloud-backup's split backup: every row (got $got)" test "$got" = "$SUM_END4"
else
	tail -5 "$T/logs/r-of-bm-split.log" >&2
	check "pgop restore of barman-cloud-backup's split backup succeeds" false
fi
mv "$B3/data_0001.tar.gz" "$T/data_0001.tar.gz.away"
restore split-gap --backup-id "$ID3" --tablespace "ts1:$T/tbs/pgop-split-gap"
rc=$?
check "a part missing from the store: pgop's restore fails naming it" \
	bash -c "[[ $rc != 0 ]] && grep -q 'part 1 of the tar is missing' '$T/logs/r-split-gap.log'"
check "... before anything is extracted" bash -c "! ls '$T/rs/split-gap/base' >/dev/null 2>&1"

check "no sanitizer report or crash in any pgop log" \
	bash -c "! grep -lE 'Sanitizer|runtime error|LeakSanitizer' '$T'/logs/*.log"
e2e_log "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]] || exit 1
e2e_log "PASS"
