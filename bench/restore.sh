#!/usr/bin/env bash
# Benchmark (not a test): restoring a base backup, pgop vs barman-cloud-restore 3.19.1 (what
# CloudNativePG runs), one store (versitygw over TLS on loopback), a local PostgreSQL 15
# (no Kubernetes). A pgbench database of BENCH_SCALE (20: ~300 MB) is backed up by
# barman-cloud-backup per compression (BENCH_COMPRESSIONS: "gzip none"), then restored:
#  - barman-cloud-restore DEST SERVER ID DIR: the tar only;
#  - pgop instance restore --target-immediate: the tar (its own figure from the log line
#    "base backup restored") and the whole recovery (WAL to consistency, promotion, stop).
# Wall ms, CPU ms (user+sys of the process tree, /usr/bin/time), peak RSS. Kept out of
# bench/backup.sh (one function per measure there; the base backup figures live there).
#   bench/restore.sh [PGOP_BIN]   (default build/cmd/pgop); KEEP_TMP=1 keeps the temp dir.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/e2e/lib.sh"
. "$E2E_DIR/objstore_lib.sh"
. "$E2E_DIR/wal_lib.sh"

SCALE=${BENCH_SCALE:-20}
COMPS=${BENCH_COMPRESSIONS:-gzip none}
[[ $(id -u) -eq 0 ]] || e2e_fail "must run as root (setpriv to postgres)"
[[ -x /usr/bin/time && -x $WAL_PGBIN/pgbench ]] || e2e_fail "needs /usr/bin/time and pgbench"
PGOP_BIN=${1:-$top/build/cmd/pgop}
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found: $PGOP_BIN"
BARMAN=$(timeout 900 "$E2E_DIR/build-barman.sh" | tail -n 1) || e2e_fail "barman-cloud not installed"

T=$(mktemp -d /tmp/pgop-bench-restore.XXXXXX)
chmod 755 "$T"
cleanup() {
	local d
	for d in "$T"/pg "$T"/rs/*; do
		[[ -f $d/postmaster.pid ]] && wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1
	done
	objstore_stop
	if [[ ${KEEP_TMP:-0} == 1 ]]; then e2e_log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
objstore_start "$T/s3" || e2e_fail "versitygw did not start"
cp "$PGOP_BIN" "$T/pgop" && chmod 755 "$T/pgop"
wal_init "$T" || e2e_fail "credentials"
wal_cfg "$T/src.json" pg gzip
mkdir -p "$T/rs" "$T/sock2" "$T/logs" && chown postgres:postgres "$T/rs" "$T/sock2" "$T/logs"
wal_pg_init "$T/pg" "$T/initdb.log" || e2e_fail "initdb"
echo "archive_command = '$T/pgop instance wal-archive --config $T/src.json %p'" >>"$T/pg/postgresql.conf"
wal_as_pg "$WAL_PGBIN/pg_ctl" -D "$T/pg" -l "$T/logs/pg.log" -w start >/dev/null || e2e_fail "postgres start"
wal_as_pg "$WAL_PGBIN/pgbench" -h "$WAL_PG_SOCK" -p "$WAL_PG_PORT" -U postgres -i -q -s "$SCALE" postgres \
	>"$T/pgbench.log" 2>&1 || e2e_fail "pgbench -i"
size=$(wal_psql "SELECT pg_database_size('postgres') / 1048576")
e2e_log "database: $size MB (pgbench scale $SCALE)"

# timed FILE CMD...: "wall_ms cpu_ms maxrss_kb" into FILE
timed() {
	local f=$1 t0 t1 u s r
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$f.time" "$@" >"$f.log" 2>&1 || { tail -5 "$f.log" >&2; return 1; }
	t1=$(date +%s%N)
	read -r u s r <"$f.time"
	awk -v w=$(((t1 - t0) / 1000000)) -v u="$u" -v s="$s" -v r="$r" \
		'BEGIN { printf "%d %d %d\n", w, (u + s) * 1000, r }' >"$f"
}

bench_restore_compression() { # COMPRESSION: one backup, restored by both
	local comp=$1 flag= id dir
	[[ $comp == gzip ]] && flag=--gzip
	wal_barman_env "$BARMAN/barman-cloud-backup" --endpoint-url "$OBJSTORE_ENDPOINT" -h "$WAL_PG_SOCK" \
		-p "$WAL_PG_PORT" -U postgres -d postgres --immediate-checkpoint $flag "$WAL_DEST" pg \
		>"$T/backup-$comp.log" 2>&1 || { tail -5 "$T/backup-$comp.log" >&2; return 1; }
	id=$(ls -t "$WAL_STORE/pg/base" | head -n 1)
	dir=$T/rs/barman-$comp
	( # barman reads its credentials from the environment (this subshell's, not argv)
		AWS_ACCESS_KEY_ID=$(cat "$WAL_DIR/cred/access") AWS_SECRET_ACCESS_KEY=$(cat "$WAL_DIR/cred/secret")
		export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_CA_BUNDLE=$WAL_DIR/cred/ca.crt \
			AWS_DEFAULT_REGION=us-east-1
		timed "$T/m-barman-$comp" "$BARMAN/barman-cloud-restore" \
			--endpoint-url "$OBJSTORE_ENDPOINT" "$WAL_DEST" pg "$id" "$dir"
	) || return 1
	rm -rf "$dir"
	dir=$T/rs/pgop-$comp
	timed "$T/m-pgop-$comp" "${WAL_AS_PG[@]}" "$T/pgop" instance restore --config "$T/src.json" \
		--pgdata "$dir" --backup-id "$id" --target-immediate --pg-bindir "$WAL_PGBIN" \
		--port "$((WAL_PG_PORT + 1))" --socket-dir "$T/sock2" || return 1
	grep -o '"msg":"base backup restored".*"ms":"[0-9]*"' "$T/m-pgop-$comp.log" |
		grep -o '"ms":"[0-9]*"' | tr -dc 0-9 >"$T/m-pgop-tar-$comp"
	rm -rf "$dir"
}

printf '%-44s %14s %14s\n' "restore of a ${size} MB database" pgop barman-cloud >"$T/table"
for comp in $COMPS; do
	bench_restore_compression "$comp" || e2e_fail "$comp"
	read -r pw pc pr <"$T/m-pgop-$comp"
	read -r bw bc br <"$T/m-barman-$comp"
	pt=$(cat "$T/m-pgop-tar-$comp")
	echo "METRIC restore_${comp}_pgop_tar_ms=$pt"
	echo "METRIC restore_${comp}_pgop_total_ms=$pw"
	echo "METRIC restore_${comp}_barman_ms=$bw"
	printf '%-44s %14s %14s\n' "$comp: tar download + extract (ms)" "$pt" "$bw" \
		"$comp: whole command wall / CPU (ms)" "$pw / $pc" "$bw / $bc" \
		"$comp: peak RSS (MB)" "$((pr / 1024))" "$((br / 1024))" >>"$T/table"
done
cat "$T/table"
