#!/usr/bin/env bash
# e2e-timeout: 1200
# Base backups (instance/basebackup.c, `pgop instance backup`) against a real S3 server
# (versitygw over TLS on loopback, objstore_lib.sh) and a local PostgreSQL 15 archiving
# through pgop (no Kubernetes), checked with barman-cloud 3.19.1 (build-barman.sh):
#  - a pgbench database and a marker table; pgop backs up the primary with each data
#    compression (none, gzip under a concurrent pgbench load, bzip2, lz4) and a streaming
#    standby (pg_basebackup -R);
#  - barman-cloud-backup-list lists every backup DONE, barman-cloud-backup-show reads one;
#    pgop's backup.info has every key barman-cloud-backup's own has, the same None ones;
#  - barman-cloud-restore + barman-cloud-wal-restore as restore_command bring up a
#    PostgreSQL with exactly the rows (count and md5 of pgbench_accounts and the marker);
#  - a wrong secret: exit 1 at once, no DONE backup.info; a failing archive_command:
#    pg_backup_stop gives up after --stop-timeout, backup.info FAILED with the error;
#  - the status server: POST /pg/backup on `pgop instance run` (operator certificate
#    only), 202 then 200 for the same name, 409 for another while one runs, GET until
#    completed, backup-state.json survives a restart, a restart mid-backup reports failed.
# Usage: test_base_backup.sh [PGOP_BIN]. Needs root (setpriv to postgres).
# BENCH-like figures are printed as METRIC lines (no assertion on them).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"
. "$E2E_DIR/wal_lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-}}
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found (argument 1 or PGOP_BIN)"
PGOP_BIN=$(realpath "$PGOP_BIN")
# BB_PGBIN: another major's bin directory (e.g. a relocatable 14 or 17 tree; its lib/
# goes on LD_LIBRARY_PATH); pgbench stays 15's. BB_HTTP=0 leaves out the status-server
# part (`pgop instance run` finds the Cluster image's major, 15).
PGBIN=${BB_PGBIN:-$WAL_PGBIN}
PGBENCH_BIN=/usr/lib/postgresql/15/bin/pgbench
if [[ -n ${BB_PGBIN:-} ]]; then
	WAL_PGBIN=$PGBIN
	export LD_LIBRARY_PATH=$PGBIN/../lib
fi
[[ -x $PGBIN/initdb ]] || e2e_fail "PostgreSQL 15 binaries are required (scripts/setup-deps.sh)"
id postgres >/dev/null 2>&1 || e2e_fail "the postgres OS user is required"
[[ $(id -u) -eq 0 ]] || e2e_skip "must run as root (setpriv to postgres)"
for tool in certtool curl jq; do
	command -v "$tool" >/dev/null || e2e_fail "$tool is required (scripts/setup-deps.sh)"
done
BARMAN=$("$E2E_DIR/build-barman.sh" | tail -n 1) || e2e_fail "barman-cloud not installed"
SCALE=${BB_SCALE:-5}

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

T=$(mktemp -d /tmp/pgop-bb.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
	local d p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for d in "$T"/pg1 "$T"/pg2 "$T"/r-* "$T"/i1/pgdata; do
		[[ -f $d/postmaster.pid ]] && as_pg "$PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	objstore_stop
	if [[ ${KEEP_TMP:-0} != 1 ]]; then rm -rf "$T"; fi
}
trap cleanup EXIT
as_pg() { wal_as_pg "$@"; }
ms() { date +%s%3N; }

objstore_start "$T/s3" || e2e_fail "versitygw did not start"
cp "$PGOP_BIN" "$T/pgop"
PGOP=$T/pgop
wal_init "$T" || e2e_fail "credentials"
echo wrong-secret >"$T/cred/wrong"
chown postgres:postgres "$T/cred/wrong" && chmod 0600 "$T/cred/wrong"
DEST=$WAL_DEST
STORE=$WAL_STORE
SRV=bb
# cfg FILE DATACOMPRESSION [SECRETFILE]: the wal-archive configuration plus the data keys
cfg() {
	wal_cfg "$1" "$SRV" gzip 1 "${3:-}" "" "$T/state"
	jq --arg c "$2" '. + {dataCompression: $c, immediateCheckpoint: true, jobs: 2}' "$1" >"$1.new" &&
		mv "$1.new" "$1" && chown postgres:postgres "$1" && chmod 0600 "$1"
}
barman_env() { wal_barman_env "$@"; }

# ---- a PostgreSQL 15 archiving through pgop, a pgbench database -------------------------
mkdir -p "$T/logs" && chown postgres:postgres "$T/logs"
wal_pg_init "$T/pg1" "$T/initdb1.log" || e2e_fail "initdb"
cfg "$T/wal.json" gzip
cat >>"$T/pg1/postgresql.conf" <<EOF
archive_command = '$PGOP instance wal-archive --config $T/wal.json %p'
max_wal_size = '1GB'
EOF
as_pg "$PGBIN/pg_ctl" -D "$T/pg1" -l "$T/logs/pg1.log" -w start >/dev/null || { tail -20 "$T/logs/pg1.log"; e2e_fail "postgres start"; }
P1=$WAL_PG_PORT
SOCK=$WAL_PG_SOCK
psql_at() { as_pg psql -h "$SOCK" -p "$1" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$2"; }
psql1() { psql_at "$P1" "$1"; }
as_pg "$PGBENCH_BIN" -h "$SOCK" -p "$P1" -U postgres -i -s "$SCALE" -q postgres >"$T/pgbench-init.log" 2>&1 ||
	e2e_fail "pgbench -i"
psql1 "CREATE TABLE marker(id int PRIMARY KEY, v text)"
MARK=0
mark() { # mark N: N more marker rows
	psql1 "INSERT INTO marker SELECT g, md5(g::text) FROM generate_series($((MARK + 1)), $((MARK + $1))) g"
	MARK=$((MARK + $1))
}
mark 1000
# sums PORT: the rows the restore must have (count and md5 of both tables)
sums() {
	psql_at "$1" "SELECT (SELECT count(*) || ':' || md5(string_agg(aid || '=' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts) || ' ' || (SELECT count(*) || ':' || md5(string_agg(id || '=' || v, ',' ORDER BY id)) FROM marker)"
}
wait_archived() { # wait_archived SEG on the primary (60 s)
	local i last
	for i in $(seq 1 600); do
		last=$(psql1 "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
		[[ $last > $1 || $last == "$1" ]] && return 0
		sleep 0.1
	done
	e2e_log "archiver at '$last', waiting for $1"
	return 1
}
switch_and_wait() { # the current segment goes to the archive
	local seg
	seg=$(psql1 "SELECT pg_walfile_name(pg_current_wal_lsn())")
	psql1 "SELECT pg_switch_wal()" >/dev/null
	wait_archived "$seg"
}
BASE=$(date -u +%s)
N_ID=0
next_id() { N_ID=$((N_ID + 1)); NEXT_ID=$(date -u -d "@$((BASE - 3600 + N_ID))" +%Y%m%dT%H%M%S); }
# backup CONFIG NAME ID PORT [flags]: pgop instance backup as postgres; JSON in $T/res-NAME.json
backup() {
	local c=$1 name=$2 id=$3 port=$4
	shift 4
	as_pg timeout 300 "$PGOP" instance backup --config "$c" --name "$name" --id "$id" \
		--socket-dir "$SOCK" --port "$port" "$@" >"$T/res-$name.json" 2>"$T/$name.log"
}
info() { cat "$STORE/$SRV/base/$1/backup.info"; }
info_key() { info "$1" | sed -n "s/^$2=//p"; }

# restore_command for postgres (which cannot enter root's cache): barman's packages copied
# where it can read them, run by Debian's python3 (the venv's); the credentials read from
# their files, not postgres's environment
cp -a "$(dirname "$BARMAN")"/lib/python3*/site-packages "$T/bm-site" && chmod -R a+rX "$T/bm-site"
cat >"$T/bm-wal-restore" <<EOF
#!/bin/sh
AWS_ACCESS_KEY_ID=\$(cat $T/cred/access) AWS_SECRET_ACCESS_KEY=\$(cat $T/cred/secret) \\
AWS_CA_BUNDLE=$T/cred/ca.crt AWS_DEFAULT_REGION=us-east-1 PYTHONPATH=$T/bm-site \\
exec /usr/bin/python3 -c 'import sys; from barman.clients.cloud_walrestore import main; sys.argv[0] = "barman-cloud-wal-restore"; sys.exit(main())' \\
	--endpoint-url $OBJSTORE_ENDPOINT $DEST $SRV "\$1" "\$2"
EOF
chmod 755 "$T/bm-wal-restore"
# restore ID EXPECTED [immediate|end]: barman-cloud-restore, recovery with
# barman-cloud-wal-restore, promoted; the rows must be EXPECTED
R_PORT=$((P1 + 10))
restore_check() {
	local id=$1 want=$2 mode=${3:-immediate} d=$T/r-$1 got t0 t1
	R_PORT=$((R_PORT + 1))
	t0=$(ms)
	barman_env "$BARMAN/barman-cloud-restore" --endpoint-url "$OBJSTORE_ENDPOINT" "$DEST" "$SRV" \
		"$id" "$d" >"$T/restore-$id.log" 2>&1 || { cat "$T/restore-$id.log" >&2; return 1; }
	t1=$(ms)
	echo "METRIC barman_cloud_restore_ms_$id $((t1 - t0))"
	chown -R postgres:postgres "$d" && chmod 0700 "$d"
	rm -f "$d/standby.signal"
	cat >>"$d/postgresql.conf" <<EOF
port = $R_PORT
archive_mode = off
primary_conninfo = ''
restore_command = '$T/bm-wal-restore %f %p'
recovery_target_action = 'promote'
EOF
	[[ $mode == immediate ]] && echo "recovery_target = 'immediate'" >>"$d/postgresql.conf"
	touch "$d/recovery.signal" && chown postgres:postgres "$d/recovery.signal"
	as_pg "$PGBIN/pg_ctl" -D "$d" -l "$T/logs/r-$id.log" -w -t 120 start >/dev/null ||
		{ tail -20 "$T/logs/r-$id.log" >&2; return 1; }
	local i
	for i in $(seq 1 600); do
		[[ $(psql_at "$R_PORT" "SELECT pg_is_in_recovery()" 2>/dev/null) == f ]] && break
		sleep 0.1
	done
	got=$(sums "$R_PORT")
	as_pg "$PGBIN/pg_ctl" -D "$d" -m fast stop >/dev/null 2>&1
	[[ $got == "$want" ]] || { e2e_log "restored $id: '$got', want '$want'"; return 1; }
}

# ---- backups of the primary, one per compression -------------------------------------
declare -A ID SUMS
for comp in none gzip bzip2 lz4; do
	cfg "$T/bb-$comp.json" "$comp"
	mark 100
	next_id
	ID[$comp]=$NEXT_ID
	load=
	if [[ $comp == gzip ]]; then # online: pgbench writes during the whole backup
		H0=$(psql1 "SELECT count(*) FROM pgbench_history")
		"${WAL_AS_PG[@]}" "$PGBENCH_BIN" -h "$SOCK" -p "$P1" -U postgres -c 2 -T 600 postgres >"$T/pgbench-load.log" 2>&1 &
		load=$! # setpriv execs pgbench: its pid
		PIDS+=("$load")
		sleep 1
	else
		SUMS[$comp]=$(sums "$P1")
	fi
	t0=$(ms)
	backup "$T/bb-$comp.json" "primary-$comp" "${ID[$comp]}" "$P1"
	rc=$?
	t1=$(ms)
	H1=$(psql1 "SELECT count(*) FROM pgbench_history")
	[[ -n $load ]] && { kill "$load" 2>/dev/null; wait "$load" 2>/dev/null; }
	check "$comp: pgop instance backup of the primary exits 0" test "$rc" = 0 ||
		cat "$T/primary-$comp.log" >&2
	size=$(du -sb "$STORE/$SRV/base/${ID[$comp]}" 2>/dev/null | cut -f1)
	echo "METRIC pgop_backup_ms_$comp $((t1 - t0))"
	echo "METRIC pgop_backup_stored_bytes_$comp ${size:-0}"
	tar=data.tar$(case $comp in gzip) echo .gz ;; bzip2) echo .bz2 ;; lz4) echo .lz4 ;; esac)
	check "$comp: base/${ID[$comp]}/$tar and backup.info stored" \
		test -f "$STORE/$SRV/base/${ID[$comp]}/$tar" -a -f "$STORE/$SRV/base/${ID[$comp]}/backup.info"
	check "$comp: backup.info status=DONE, backup_name, server_name=cloud" \
		bash -c "[[ '$(info_key "${ID[$comp]}" status)' == DONE && '$(info_key "${ID[$comp]}" backup_name)' == primary-$comp && '$(info_key "${ID[$comp]}" server_name)' == cloud ]]"
	check "$comp: the printed status says completed, with begin/end WAL" \
		test "$(jq -r '.phase + " " + (.beginWal|length|tostring) + " " + (.endWal|length|tostring) + " " + .backupId' "$T/res-primary-$comp.json")" = "completed 24 24 ${ID[$comp]}"
	if [[ $comp == gzip ]]; then
		check "gzip: pgbench committed transactions during the backup ($((H1 - H0)))" test "$((H1 - H0))" -gt 100
	fi
	switch_and_wait
done
check "pg_backup_start/stop left no backup running (backup_label absent from PGDATA)" test ! -e "$T/pg1/backup_label"

# ---- what barman-cloud makes of them ---------------------------------------------------
barman_env "$BARMAN/barman-cloud-backup-list" --endpoint-url "$OBJSTORE_ENDPOINT" --format json "$DEST" "$SRV" \
	>"$T/list.json" 2>"$T/list.log"
for comp in none gzip bzip2 lz4; do
	check "barman-cloud-backup-list: ${ID[$comp]} ($comp) DONE" \
		test "$(jq -r --arg id "${ID[$comp]}" '.backups_list[] | select(.backup_id == $id) | .status' "$T/list.json")" = DONE
done
barman_env "$BARMAN/barman-cloud-backup-show" --endpoint-url "$OBJSTORE_ENDPOINT" --format json "$DEST" "$SRV" \
	"${ID[gzip]}" >"$T/show.json" 2>"$T/show.log"
check "barman-cloud-backup-show reads the gzip backup (begin/end WAL)" \
	test "$(jq -r '.. | .begin_wal? // empty' "$T/show.json" | head -1)" = "$(info_key "${ID[gzip]}" begin_wal)"
# the reference: barman-cloud-backup's own backup.info of the same server
BM_ID=
t0=$(ms)
barman_env "$BARMAN/barman-cloud-backup" --endpoint-url "$OBJSTORE_ENDPOINT" -h "$SOCK" -p "$P1" -U postgres \
	--immediate-checkpoint --name barman-ref "$DEST" "$SRV" >"$T/bm-backup.log" 2>&1
rc=$?
t1=$(ms)
echo "METRIC barman_cloud_backup_ms_none $((t1 - t0))"
BM_ID=$(ls -t "$STORE/$SRV/base" | head -1)
check "barman-cloud-backup of the same server works (the reference)" test "$rc" = 0 -a "$(info_key "$BM_ID" backup_name)" = barman-ref
keys() { info "$1" | cut -d= -f1 | sort; }
check "pgop's backup.info has the keys barman-cloud-backup's has" \
	diff <(keys "$BM_ID") <(keys "${ID[none]}")
nones() { info "$1" | grep '=None$' | cut -d= -f1 | sort; }
check "and the same ones None" diff <(nones "$BM_ID") <(nones "${ID[none]}")
diff <(info "$BM_ID") <(info "${ID[none]}") >"$T/info.diff"
e2e_log "backup.info, barman-cloud-backup vs pgop: $(grep -c '^>' "$T/info.diff") lines differ ($(grep '^>' "$T/info.diff" | cut -d= -f1 | tr -d '> ' | tr '\n' ' '))"
switch_and_wait

# ---- restores with barman-cloud ----------------------------------------------------------
for comp in none bzip2 lz4; do
	check "$comp: barman-cloud-restore + barman-cloud-wal-restore: the same rows (target immediate)" \
		restore_check "${ID[$comp]}" "${SUMS[$comp]}" immediate
done
SUMS[end]=$(sums "$P1") # every WAL archived: the primary's rows now
check "gzip (taken under load): restored and replayed to the archive's end: the primary's rows" \
	restore_check "${ID[gzip]}" "${SUMS[end]}" end

# ---- a streaming standby --------------------------------------------------------------
mkdir -p "$T/pg2" && chown postgres:postgres "$T/pg2" && chmod 0700 "$T/pg2"
as_pg "$PGBIN/pg_basebackup" -h "$SOCK" -p "$P1" -U postgres -D "$T/pg2" -R -X stream -c fast >"$T/basebackup.log" 2>&1 ||
	e2e_fail "pg_basebackup"
P2=$((P1 + 1))
echo "port = $P2" >>"$T/pg2/postgresql.conf"
as_pg "$PGBIN/pg_ctl" -D "$T/pg2" -l "$T/logs/pg2.log" -w start >/dev/null || { tail -20 "$T/logs/pg2.log"; e2e_fail "standby start"; }
mark 100
lsn=$(psql1 "SELECT pg_current_wal_lsn()")
for i in $(seq 1 300); do
	[[ $(psql_at "$P2" "SELECT pg_last_wal_replay_lsn() >= '$lsn'") == t ]] && break
	sleep 0.1
done
check "the standby is in recovery and caught up" test "$(psql_at "$P2" "SELECT pg_is_in_recovery() AND pg_last_wal_replay_lsn() >= '$lsn'")" = t
SUMS[standby]=$(sums "$P1")
next_id
ID[standby]=$NEXT_ID
cfg "$T/bb-standby.json" lz4
backup "$T/bb-standby.json" standby "${ID[standby]}" "$P2"
check "standby: pgop instance backup exits 0" test $? = 0 || cat "$T/standby.log" >&2
check "standby: backup.info DONE, timeline 1" \
	test "$(info_key "${ID[standby]}" status) $(info_key "${ID[standby]}" timeline)" = "DONE 1"
psql1 "SELECT pg_switch_wal()" >/dev/null # the standby's end WAL: archived by the primary
switch_and_wait
check "standby: barman-cloud-restore + wal-restore: the same rows" \
	restore_check "${ID[standby]}" "${SUMS[standby]}" immediate

# ---- failures: a wrong secret, a failing archive ------------------------------------------
cfg "$T/wrong.json" gzip "$T/cred/wrong"
next_id
WID=$NEXT_ID
t0=$(ms)
backup "$T/wrong.json" wrong "$WID" "$P1"
rc=$?
t1=$(ms)
e2e_log "wrong secret: $(tail -1 "$T/wrong.log")"
check "wrong secret: exit 1 within 60 s, no crash" \
	bash -c "test $rc = 1 -a $((t1 - t0)) -lt 60000 && ! grep -qE 'Sanitizer|runtime error' '$T/wrong.log'"
check "wrong secret: the S3 error in the log, phase failed" \
	bash -c "grep -q '403' '$T/wrong.log' && test \"\$(jq -r .phase '$T/res-wrong.json')\" = failed"
check "wrong secret: no DONE backup.info" bash -c "! grep -qs '^status=DONE' '$STORE/$SRV/base/$WID/backup.info'"
check "the secret is in no log" bash -c "! grep -rqF -- '$(cat "$T/cred/secret")' '$T'/*.log '$T'/*.json"
psql1 "ALTER SYSTEM SET archive_command = '/bin/false'" && psql1 "SELECT pg_reload_conf()" >/dev/null
sleep 1
psql1 "INSERT INTO marker VALUES (-1, 'x')"
next_id
AID=$NEXT_ID
t0=$(ms)
backup "$T/bb-none.json" stuck "$AID" "$P1" --stop-timeout 5
rc=$?
t1=$(ms)
check "archive failing: pg_backup_stop gives up after --stop-timeout (exit 1 in $((t1 - t0)) ms)" \
	test "$rc" = 1 -a $((t1 - t0)) -lt 60000
check "archive failing: backup.info FAILED with pg_backup_stop's error" \
	bash -c "[[ '$(info_key "$AID" status)' == FAILED ]] && grep -q '^error=failure uploading data (pg_backup_stop' '$STORE/$SRV/base/$AID/backup.info'"
check "archive failing: no multipart upload left behind (no data.tar)" test ! -e "$STORE/$SRV/base/$AID/data.tar"
psql1 "ALTER SYSTEM RESET archive_command" && psql1 "SELECT pg_reload_conf()" >/dev/null
rc=0
"$PGOP" instance backup --config "$T/wal.json" >/dev/null 2>&1 || rc=$?
check "usage: exit 2 without --name" test "$rc" = 2
rc=0
as_pg "$PGOP" instance backup --config "$T/wal.json" --name Bad_Name --socket-dir "$SOCK" --port "$P1" >"$T/badname.json" 2>"$T/badname.log" || rc=$?
check "a name that is no DNS-1123 subdomain: exit 1, said so" \
	bash -c "test $rc = 1 && grep -q 'DNS-1123' '$T/badname.log'"


# ---- the status server: POST/GET /pg/backup on `pgop instance run` ----------------------
http_certs() { # DIR CLUSTER: ca, server, replication, operator and intruder certificates
	local C=$2
	cd "$1" || return 1
	gen_key() { certtool --generate-privkey --key-type=ecdsa --outfile "$1.key" 2>/dev/null; }
	printf 'cn = %s\nca\ncert_signing_key\nexpiration_days = 30\n' "$C" >ca.tmpl
	gen_key ca && certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl --outfile ca.crt 2>/dev/null || return 1
	leaf() {
		local name=$1
		shift
		printf '%s\n' "$@" "expiration_days = 30" >"$name.tmpl"
		gen_key "$name" && certtool --generate-certificate --load-privkey "$name.key" --load-ca-certificate ca.crt \
			--load-ca-privkey ca.key --template "$name.tmpl" --outfile "$name.crt" 2>/dev/null
	}
	leaf server "cn = $C-rw" "dns_name = localhost" "ip_address = 127.0.0.1" tls_www_server signing_key encryption_key &&
		leaf replication "cn = streaming_replica" tls_www_client signing_key &&
		leaf operator "cn = pgop-operator" tls_www_client signing_key &&
		leaf intruder "cn = someone-else" tls_www_client signing_key
}

http_cluster() { # FILE CLUSTER: a Cluster backing up to serverName bbhttp, data gzip
	cat >"$1" <<EOF
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"$2","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":1,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "postgresql":{"parameters":{"shared_buffers":"16MB"}},
  "backup":{"barmanObjectStore":{"destinationPath":"$DEST","serverName":"bbhttp",
    "endpointURL":"$OBJSTORE_ENDPOINT","endpointCA":{"name":"s3","key":"ca.crt"},
    "s3Credentials":{"accessKeyId":{"name":"s3","key":"ACCESS"},"secretAccessKey":{"name":"s3","key":"SECRET"}},
    "wal":{"compression":"gzip"},"data":{"compression":"gzip","immediateCheckpoint":true}}},
  "bootstrap":{"initdb":{"database":"app","owner":"app"}},"storage":{"size":"1Gi"}},
 "status":{"instanceNames":["$2-1"],"targetPrimary":"$2-1","currentPrimary":""}}
EOF
}

http_part() {
	local C=bbh PH=$((P1 + 40)) SH=$((P1 + 41)) I=$T/i1 k
	mkdir -p "$T/certs/server" "$T/certs/ca" "$T/certs/replication" "$T/pki" "$T/secrets/app" \
		"$T/secrets/superuser"
	(http_certs "$T/pki" "$C") || e2e_fail "certificates"
	cp "$T/pki/server.crt" "$T/certs/server/tls.crt" && cp "$T/pki/server.key" "$T/certs/server/tls.key"
	cp "$T/pki/ca.crt" "$T/certs/ca/ca.crt"
	cp "$T/pki/replication.crt" "$T/certs/replication/tls.crt" && cp "$T/pki/replication.key" "$T/certs/replication/tls.key"
	printf 'app-secret-pw' >"$T/secrets/app/password"
	printf 'su-secret-pw' >"$T/secrets/superuser/password"
	for k in access-key-id:access secret-access-key:secret endpoint-ca:ca.crt; do
		mkdir -p "$T/secrets/barman-${k%%:*}" && cp "$T/cred/${k#*:}" "$T/secrets/barman-${k%%:*}/${k%%:*}"
	done
	http_cluster "$T/cluster.json" "$C"
	chown -R postgres:postgres "$T/certs" "$T/secrets" "$T/pki" "$T/cluster.json"
	chmod -R go-rwx "$T/secrets" "$T/certs"
	local common=(--pgdata "$I/pgdata" --controller-dir "$I/controller" --certs-dir "$T/certs"
		--secrets-dir "$T/secrets" --cluster-file "$T/cluster.json" --pod-name "$C-1" --cluster-name "$C")
	mkdir -p "$I" && chown postgres:postgres "$I"
	as_pg "$PGOP" instance init "${common[@]}" >"$T/http-init.log" 2>&1 || { tail -5 "$T/http-init.log" >&2; return 1; }
	RUN=
	start_run() {
		"${WAL_AS_PG[@]}" "$PGOP" instance run "${common[@]}" --port "$PH" --status-listen "127.0.0.1:$SH" >>"$T/http-run.log" 2>&1 &
		RUN=$!
		PIDS+=("$RUN")
		e2e_wait_for "curl -sSfk --max-time 5 https://127.0.0.1:$SH/readyz" 60
	}
	stop_run() { kill -TERM "$RUN" && wait "$RUN"; }
	start_run || { tail -20 "$T/http-run.log" >&2; return 1; }
	CURL=(curl -sS --max-time 10 --cacert "$T/pki/ca.crt")
	OP=(--cert "$T/pki/operator.crt" --key "$T/pki/operator.key")
	local URL=https://127.0.0.1:$SH/pg/backup
	as_pg "$PGBENCH_BIN" -h "$I/controller/run" -p "$PH" -U postgres -i -s "$SCALE" -q app >"$T/http-pgbench.log" 2>&1
	code() { "${CURL[@]}" -o "$T/http.out" -w '%{http_code}' "$@"; }
	check "http: POST /pg/backup without a client certificate: 401" test "$(code -X POST "$URL?name=h1")" = 401
	check "http: another CN: 403" test "$(code --cert "$T/pki/intruder.crt" --key "$T/pki/intruder.key" -X POST "$URL?name=h1")" = 403
	check "http: GET before any backup: 404" test "$(code "${OP[@]}" "$URL")" = 404
	check "http: a bad name: 400" test "$(code "${OP[@]}" -X POST "$URL?name=Not_DNS")" = 400
	check "http: a bad id: 400" test "$(code "${OP[@]}" -X POST "$URL?name=h1&id=2024")" = 400
	local HID
	next_id
	HID=$NEXT_ID
	e2e_wait_for "test -s $I/controller/run/wal-archive.json" 30
	check "http: POST name=h1: 202 running" \
		test "$(code "${OP[@]}" -X POST "$URL?name=h1&id=$HID") $(jq -r .phase "$T/http.out")" = "202 running"
	check "http: another name while h1 runs: 409" test "$(code "${OP[@]}" -X POST "$URL?name=h2")" = 409
	check "http: the 409 names the running backup" grep -q "backup h1 is running" "$T/http.out"
	check "http: the same name again: 200" test "$(code "${OP[@]}" -X POST "$URL?name=h1&id=$HID")" = 200
	local i phase=
	for i in $(seq 1 300); do
		"${CURL[@]}" "${OP[@]}" "$URL" >"$T/http-get.json" 2>/dev/null
		phase=$(jq -r .phase "$T/http-get.json" 2>/dev/null)
		[[ $phase == running ]] || break
		sleep 0.2
	done
	e2e_log "GET /pg/backup: $(cat "$T/http-get.json")"
	check "http: GET says completed with every field" jq -e --arg id "$HID" --arg d "$DEST" --arg e "$OBJSTORE_ENDPOINT" \
		'.phase == "completed" and .name == "h1" and .backupId == $id and (.beginWal|length) == 24 and (.endWal|length) == 24
		 and (.beginLSN|test("/")) and (.endLSN|test("/")) and (.startedAt|endswith("Z")) and (.stoppedAt|endswith("Z"))
		 and .instanceID.podName == "bbh-1" and .destinationPath == $d and .serverName == "bbhttp"
		 and .endpointURL == $e and .timeline == 1 and .size > 0 and (has("error")|not)' "$T/http-get.json"
	check "http: backup.info DONE with data.tar.gz (the Cluster's data.compression)" \
		bash -c "grep -q '^status=DONE' '$STORE/bbhttp/base/$HID/backup.info' && test -f '$STORE/bbhttp/base/$HID/data.tar.gz'"
	check "http: backup-state.json mode 0600" test "$(stat -c %a "$I/controller/run/backup-state.json")" = 600
	stop_run
	start_run
	check "http: after a restart GET still answers the completed h1" \
		test "$("${CURL[@]}" "${OP[@]}" "$URL" | jq -r '.name + " " + .phase')" = "h1 completed"
	stop_run
	jq '.phase = "running" | del(.stoppedAt)' "$I/controller/run/backup-state.json" >"$T/st.json" &&
		cp "$T/st.json" "$I/controller/run/backup-state.json"
	start_run
	"${CURL[@]}" "${OP[@]}" "$URL" >"$T/http-died.json"
	e2e_log "GET after a restart with a running backup saved: $(cat "$T/http-died.json")"
	check "http: a backup running when the manager died is failed, \"instance manager restarted\"" \
		test "$(jq -r '.phase + " " + .error' "$T/http-died.json")" = "failed instance manager restarted"
	local HID2
	next_id
	HID2=$NEXT_ID
	check "http: a new name after that: 202" test "$(code "${OP[@]}" -X POST "$URL?name=h3&id=$HID2")" = 202
	for i in $(seq 1 300); do
		[[ $("${CURL[@]}" "${OP[@]}" "$URL" | jq -r .phase) == running ]] || break
		sleep 0.2
	done
	check "http: h3 completed" test "$("${CURL[@]}" "${OP[@]}" "$URL" | jq -r .phase)" = completed
	stop_run
}
[[ ${BB_HTTP:-1} == 1 ]] && http_part

check "no sanitizer report or crash in any pgop log" \
	bash -c "! grep -lE 'Sanitizer|runtime error|LeakSanitizer' '$T'/*.log '$T'/logs/*.log"
e2e_log "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]] || exit 1
e2e_log "PASS"
