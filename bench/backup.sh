#!/usr/bin/env bash
# Benchmark (not a test): pgop's WAL archiving and restoring against barman-cloud 3.19.1
# (what CloudNativePG runs), side by side in one run on one store: versitygw over TLS on
# loopback (tests/e2e/objstore_lib.sh), a local PostgreSQL 15 run as the postgres user
# (tests/e2e/wal_lib.sh; no Kubernetes).
#  1. archive: BENCH_SEGMENTS real 16 MB segments (a pgbench load's), one call per segment
#     as archive_command makes them, pgop `instance wal-archive` and
#     `barman-cloud-wal-archive` interleaved, per compression (BENCH_COMPRESSIONS): wall ms
#     and CPU ms (user+sys, /usr/bin/time) per segment, segments/s, peak RSS; `gzip -6` alone
#     on each segment (the floor both gzip figures share); pgop with maxParallel 4
#     called the same way (its later calls return from the markers): the total.
#  2. restore: the same segments by `instance wal-restore` and `barman-cloud-wal-restore`
#     (checked byte-identical), and pgop with maxParallel 4 (prefetch into its spool).
#  3. archive lag under load: pgbench for BENCH_LOAD_SECONDS with archive_command = pgop
#     (gzip, maxParallel 4); .ready files and pg_stat_archiver sampled every second: max and
#     median .ready, WAL MB/s, CPU per archived segment (the archiver's children), time to
#     drain; then the same with barman-cloud-wal-archive (BENCH_LOAD_BARMAN=1), run by a root
#     helper the archive_command hands each segment to (postgres cannot execute the venv
#     under /root; ~20 ms polling added per segment).
#  4. base backups (BENCH_PARTS has "base"): a pgbench database of BENCH_BASE_SCALE (70,
#     ~1 GB), `pgop instance backup` and `barman-cloud-backup -J 2` per compression
#     (BENCH_BASE_COMPRESSIONS, "none gzip lz4"): wall s, MB/s of the database, CPU s, peak
#     RSS, stored MB; `barman-cloud-restore` of each backup (wall s).
# Prints METRIC name=value lines and a table; ratios are pgop/barman. Nothing is asserted.
#   bench/backup.sh [PGOP_BIN]    (default build/cmd/pgop, built when missing)
# Variables: BENCH_SEGMENTS (20), BENCH_LOAD_SECONDS (60), BENCH_CLIENTS (4, pgbench),
# BENCH_SCALE (10, pgbench -i), BENCH_COMPRESSIONS ("gzip none lz4 zstd"; gzip is needed
# for maxParallel 4 and the load), BENCH_LOAD_BARMAN (1), BENCH_DRAIN_SECONDS (120),
# BENCH_TIMEOUT (2400: the whole run), BENCH_PARTS ("wal base"), BENCH_BASE_SCALE (70),
# BENCH_BASE_COMPRESSIONS ("none gzip lz4"), KEEP_TMP=1 keeps the temp dir. Needs root.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/e2e/lib.sh"
. "$E2E_DIR/objstore_lib.sh"
. "$E2E_DIR/wal_lib.sh"

N=${BENCH_SEGMENTS:-20}
LOAD=${BENCH_LOAD_SECONDS:-60}
CLIENTS=${BENCH_CLIENTS:-4}
SCALE=${BENCH_SCALE:-10}
LOAD_BARMAN=${BENCH_LOAD_BARMAN:-1}
DRAIN=${BENCH_DRAIN_SECONDS:-120}
COMPS=${BENCH_COMPRESSIONS:-gzip none lz4 zstd}
PARTS=${BENCH_PARTS:-wal base}
MAXT=${BENCH_TIMEOUT:-2400}
CALL_T=180 # seconds allowed to one archive or restore call

[[ $(id -u) -eq 0 ]] || e2e_fail "must run as root (setpriv to postgres)"
[[ -x $WAL_PGBIN/initdb && -x $WAL_PGBIN/pgbench ]] || e2e_fail "PostgreSQL 15 and pgbench are required (scripts/setup-deps.sh)"
id postgres >/dev/null 2>&1 || e2e_fail "the postgres OS user is required"
[[ -x /usr/bin/time ]] || e2e_fail "/usr/bin/time is required (Debian package time; scripts/setup-deps.sh)"
if [[ -n ${1:-} ]]; then
	PGOP_BIN=$1
else
	PGOP_BIN=$top/build/cmd/pgop
	if [[ ! -x $PGOP_BIN ]]; then
		e2e_log "building $PGOP_BIN"
		(cd "$top" && timeout 1800 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
			timeout 1800 ninja -C build -j2 pgop >/dev/null) || e2e_fail "build failed"
	fi
fi
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found: $PGOP_BIN"
BARMAN=$(timeout 900 "$E2E_DIR/build-barman.sh" | tail -n 1) || e2e_fail "barman-cloud not installed"

T=$(mktemp -d /tmp/pgop-bench-backup.XXXXXX)
chmod 755 "$T"
PG=$T/pg
WATCHDOG=
BROKER=
cleanup() {
	[[ -n $BROKER ]] && { touch "$T/bmq/stop" 2>/dev/null; kill "$BROKER" 2>/dev/null; wait "$BROKER" 2>/dev/null; }
	[[ -f $PG/postmaster.pid ]] && timeout 60 "${WAL_AS_PG[@]}" "$WAL_PGBIN/pg_ctl" -D "$PG" -m immediate -t 50 stop >/dev/null 2>&1
	objstore_stop
	[[ -n $WATCHDOG ]] && kill "$WATCHDOG" 2>/dev/null
	if [[ ${KEEP_TMP:-0} == 1 ]]; then e2e_log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'e2e_log "interrupted"; exit 1' INT TERM
(sleep "$MAXT" && e2e_log "BENCH_TIMEOUT ($MAXT s) reached" && kill -TERM $$) 2>/dev/null &
WATCHDOG=$!

ns() { date +%s%N; }
declare -A MET
metric() { echo "METRIC $1=$2"; MET[$1]=$2; }
pgsql() { timeout 60 "${WAL_AS_PG[@]}" psql -h "$WAL_PG_SOCK" -p "$WAL_PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"; }

# timed LABEL CMD...: runs CMD (CALL_T s at most), appends "wall_ms cpu_ms maxrss_kb rc" to $T/m/LABEL
mkdir -p "$T/m"
timed() {
	local label=$1 t0 t1 rc u s r
	shift
	t0=$(ns)
	timeout "$CALL_T" /usr/bin/time -f '%U %S %M' -o "$T/m/.time" "$@" >>"$T/m/$label.log" 2>&1
	rc=$?
	t1=$(ns)
	read -r u s r < <(tail -n 1 "$T/m/.time" 2>/dev/null) || true
	awk -v w=$(((t1 - t0) / 1000000)) -v u="${u:-0}" -v s="${s:-0}" -v r="${r:-0}" -v rc=$rc \
		'BEGIN { printf "%d %d %d %d\n", w, (u + s) * 1000, r, rc }' >>"$T/m/$label"
	return $rc
}
# stats LABEL: "calls wall_ms_total cpu_ms_total maxrss_kb failures"
stats() {
	awk '{ n++; w += $1; c += $2; if ($3 > r) r = $3; if ($4 != 0) f++ }
		END { printf "%d %d %d %d %d\n", n, w, c, r, f }' "$T/m/$1" 2>/dev/null
}

# ---- store, PostgreSQL, segments --------------------------------------------------
objstore_start "$T/s3" || e2e_fail "versitygw did not start"
wal_init "$T" || e2e_fail "credentials"
cp "$PGOP_BIN" "$T/pgop" # postgres must be able to execute it
PGOP=$T/pgop
nm "$PGOP" 2>/dev/null | grep -q __asan_init && e2e_log "note: $PGOP_BIN is an ASan build; figures are not representative"
mkdir -p "$T/logs" "$T/out" && chown postgres:postgres "$T/logs" "$T/out"
wal_pg_init "$PG" "$T/logs/initdb.log" || e2e_fail "initdb"
cat >>"$PG/postgresql.conf" <<EOF
archive_command = '/bin/true'
wal_keep_size = '8GB'
max_wal_size = '1GB'
synchronous_commit = off
EOF
timeout 90 "${WAL_AS_PG[@]}" "$WAL_PGBIN/pg_ctl" -D "$PG" -l "$T/logs/pg.log" -w -t 60 start >/dev/null ||
	{ tail -20 "$T/logs/pg.log"; e2e_fail "postgres start"; }
PGBENCH=("${WAL_AS_PG[@]}" env PGHOST="$WAL_PG_SOCK" PGPORT="$WAL_PG_PORT" PGUSER=postgres PGDATABASE=postgres "$WAL_PGBIN/pgbench")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-") printf "%.2f", a / b; else printf "-" }'; }
TABLE=$T/table
row() { printf '%-34s %12s %12s %12s\n' "$@" >>"$TABLE"; }
row "" "pgop" "barman" "pgop/barman"
set_archive_command() {
	pgsql "ALTER SYSTEM SET archive_command = '$1'" && pgsql "ALTER SYSTEM SET wal_keep_size = 0" &&
		pgsql "SELECT pg_reload_conf()" >/dev/null && sleep 1
}

# ---- 4. base backups ---------------------------------------------------------------------
# A pgbench database of BENCH_BASE_SCALE (70: ~1 GB) archiving through pgop (none; both
# backups wait for their end WAL in pg_backup_stop), then per compression
# (BENCH_BASE_COMPRESSIONS) `pgop instance backup` and `barman-cloud-backup` (-J 2, its
# default in CloudNativePG) on the same store: wall, CPU (user+sys of the process tree),
# peak RSS, MB/s of the database's size; barman-cloud-restore of each (wall).
base_part() {
	local scale=${BENCH_BASE_SCALE:-70} comps=${BENCH_BASE_COMPRESSIONS:-none gzip lz4} comp id n w c r f
	wal_cfg "$T/base.json" base none 1 "" "$PG"
	set_archive_command "$PGOP instance wal-archive --config $T/base.json %p" || e2e_fail "archive_command"
	e2e_log "base: pgbench -i -s $scale"
	timeout 3600 "${PGBENCH[@]}" -i -q -s "$scale" >"$T/logs/pgbench-base.log" 2>&1 || e2e_fail "pgbench -i -s $scale"
	pgsql "CHECKPOINT" >/dev/null
	local db_bytes
	db_bytes=$(pgsql "SELECT sum(pg_database_size(datname)) FROM pg_database")
	metric base_db_mb "$((db_bytes / 1048576))"
	local i=0 flag
	for comp in $comps; do
		i=$((i + 1))
		id=$(date -u -d "@$(($(date +%s) - 7200 + i))" +%Y%m%dT%H%M%S)
		jq --arg c "$comp" '. + {dataCompression: $c, immediateCheckpoint: true}' "$T/base.json" >"$T/base-$comp.json"
		chown postgres:postgres "$T/base-$comp.json" && chmod 0600 "$T/base-$comp.json"
		e2e_log "base: pgop instance backup ($comp)"
		CALL_T=3600 timed "base-pgop-$comp" "${WAL_AS_PG[@]}" "$PGOP" instance backup --config "$T/base-$comp.json" \
			--name "bench-$comp" --id "$id" --socket-dir "$WAL_PG_SOCK" --port "$WAL_PG_PORT" ||
			e2e_log "base: pgop backup ($comp) failed: $(tail -n 2 "$T/m/base-pgop-$comp.log")"
		flag=
		case $comp in gzip) flag=--gzip ;; bzip2) flag=--bzip2 ;; lz4) flag=--lz4 ;; esac
		e2e_log "base: barman-cloud-backup ($comp)"
		CALL_T=3600 wal_barman_env timed "base-barman-$comp" "$BARMAN/barman-cloud-backup" --endpoint-url "$OBJSTORE_ENDPOINT" \
			-h "$WAL_PG_SOCK" -p "$WAL_PG_PORT" -U postgres --immediate-checkpoint -J 2 ${flag:+"$flag"} \
			"$WAL_DEST" base-barman ||
			e2e_log "base: barman-cloud-backup ($comp) failed: $(tail -n 2 "$T/m/base-barman-$comp.log")"
		metric "base_pgop_${comp}_stored_mb" "$(($(du -sb "$WAL_STORE/base/base/$id" 2>/dev/null | cut -f1) / 1048576))"
		local bid
		bid=$(ls -t "$WAL_STORE/base-barman/base" 2>/dev/null | head -n 1)
		metric "base_barman_${comp}_stored_mb" "$(($(du -sb "$WAL_STORE/base-barman/base/$bid" 2>/dev/null | cut -f1) / 1048576))"
		pgsql "SELECT pg_switch_wal()" >/dev/null
		rm -rf "$T/r-pgop" "$T/r-barman"
		CALL_T=3600 wal_barman_env timed "base-restore-pgop-$comp" "$BARMAN/barman-cloud-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
			"$WAL_DEST" base "$id" "$T/r-pgop"
		CALL_T=3600 wal_barman_env timed "base-restore-barman-$comp" "$BARMAN/barman-cloud-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
			"$WAL_DEST" base-barman "$bid" "$T/r-barman"
		rm -rf "$T/r-pgop" "$T/r-barman"
		for who in pgop barman; do
			read -r n w c r f < <(stats "base-$who-$comp")
			metric "base_${who}_${comp}_s" "$(awk -v w="$w" 'BEGIN { printf "%.1f", w / 1000 }')"
			metric "base_${who}_${comp}_mb_per_s" "$(awk -v w="$w" -v b="$db_bytes" 'BEGIN { printf "%.1f", w ? b / 1048576 / (w / 1000) : 0 }')"
			metric "base_${who}_${comp}_cpu_s" "$(awk -v c="$c" 'BEGIN { printf "%.1f", c / 1000 }')"
			metric "base_${who}_${comp}_rss_mb" "$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 1024 }')"
			metric "base_${who}_${comp}_failed" "$f"
			read -r n w c r f < <(stats "base-restore-$who-$comp")
			metric "base_restore_${who}_${comp}_s" "$(awk -v w="$w" 'BEGIN { printf "%.1f", w / 1000 }')"
		done
	done
	set_archive_command /bin/true
	for comp in $comps; do
		for k in s mb_per_s cpu_s rss_mb stored_mb; do
			p=${MET[base_pgop_${comp}_$k]:--} b=${MET[base_barman_${comp}_$k]:--}
			row "base $comp: $k" "$p" "$b" "$(ratio "$p" "$b")"
		done
		p=${MET[base_restore_pgop_${comp}_s]:--} b=${MET[base_restore_barman_${comp}_s]:--}
		row "base $comp: barman-cloud-restore s" "$p" "$b" "$(ratio "$p" "$b")"
	done
}

# ---- 1.-3. WAL archiving and restoring ----------------------------------------------------
wal_parts() {

e2e_log "pgbench -i -s $SCALE"
timeout 600 "${PGBENCH[@]}" -i -q -s "$SCALE" >"$T/logs/pgbench-init.log" 2>&1 || e2e_fail "pgbench -i"
# the segments benchmarked: a pgbench (TPC-B-like) run's, full-page images and all
pgsql "CHECKPOINT" >/dev/null
lsn0=$(pgsql "SELECT pg_current_wal_lsn()")
gen0=$(ns)
while :; do
	mb=$(pgsql "SELECT (pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0') / 1048576)::int")
	((mb >= (N + 2) * 16)) && break
	(($(ns) - gen0 > 600000000000)) && { e2e_log "pgbench made $mb MB in 600 s; using older segments too"; break; }
	timeout 60 "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T 10 >>"$T/logs/pgbench-gen.log" 2>&1 || e2e_fail "pgbench"
done
e2e_log "pgbench wrote $mb MB of WAL in $((($(ns) - gen0) / 1000000000)) s"
cur=$(pgsql "SELECT pg_walfile_name(pg_current_wal_lsn())")
# complete segments before the current one, the last N (the current one is still written)
mapfile -t SEGS < <(ls "$PG/pg_wal" | grep -E '^[0-9A-F]{24}$' | awk -v c="$cur" '$0 < c' | sort | tail -n "$N")
((${#SEGS[@]} == N)) || e2e_fail "only ${#SEGS[@]} complete segments in pg_wal"
F=$T/fake # a PGDATA holding only these segments and pg_control (the destination check reads it)
mkdir -p "$F/pg_wal/archive_status" "$F/global"
cp "$PG/global/pg_control" "$F/global/"
for s in "${SEGS[@]}"; do cp "$PG/pg_wal/$s" "$F/pg_wal/"; done
chown -R postgres:postgres "$F"
e2e_log "segments ${SEGS[0]} .. ${SEGS[-1]} ($N), a pgbench -c $CLIENTS load's"
metric backup_bench_segments "$N"
pgop_archive() { # LABEL CONFIG SEGMENT
	timed "$1" "${WAL_AS_PG[@]}" env -C "$F" "$PGOP" instance wal-archive --config "$2" "pg_wal/$3"
}
barman_archive() { # LABEL SERVER SEGMENT [FLAG]
	wal_barman_env timed "$1" "$BARMAN/barman-cloud-wal-archive" --endpoint-url "$OBJSTORE_ENDPOINT" \
		${4:+"$4"} "$WAL_DEST" "$2" "$F/pg_wal/$3"
}

# ---- 1. archive ---------------------------------------------------------------------
for comp in $COMPS; do wal_cfg "$T/p-$comp.json" "p-$comp" "$comp" 1 "" "$F"; done
e2e_log "archiving $N segments one call each: pgop and barman-cloud interleaved, $COMPS"
for s in "${SEGS[@]}"; do
	for comp in $COMPS; do
		flag=
		[[ $comp != none ]] && flag=--$comp
		pgop_archive "arch-pgop-$comp" "$T/p-$comp.json" "$s" || e2e_log "pgop $comp failed on $s"
		barman_archive "arch-barman-$comp" "b-$comp" "$s" $flag || e2e_log "barman $comp failed on $s"
	done
	# the floor for gzip: zlib level 6 alone (what both use), no process start, no upload
	timed ref-gzip sh -c 'gzip -6 -c "$1" >/dev/null' sh "$F/pg_wal/$s"
done
e2e_log "pgop maxParallel 4, gzip: postgres's calls in order, each .ready renamed .done after its call"
for s in "${SEGS[@]}"; do touch "$F/pg_wal/archive_status/$s.ready"; done
chown -R postgres:postgres "$F/pg_wal/archive_status"
wal_cfg "$T/p-par.json" p-par gzip 4 "" "$F"
t0=$(ns)
for s in "${SEGS[@]}"; do
	pgop_archive arch-pgop-par4 "$T/p-par.json" "$s" || e2e_log "pgop maxParallel 4 failed on $s"
	mv "$F/pg_wal/archive_status/$s.ready" "$F/pg_wal/archive_status/$s.done"
done
par_total=$((($(ns) - t0) / 1000000))
stored() { find "$WAL_STORE/$1/wals" -type f -name '0*' 2>/dev/null | grep -c -E '/[0-9A-F]{24}(\.[a-z0-9]+)?$'; }
bytes() { find "$WAL_STORE/$1/wals" -type f -name '0*' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
for srv in $(for c in $COMPS; do echo "p-$c b-$c"; done) p-par; do
	n=$(stored $srv)
	[[ $n == "$N" ]] || e2e_log "WARNING: $srv stored $n of $N segments"
done
raw=$((N * 16 * 1048576))
metric wal_gzip_ratio_pgop "$(awk -v a="$(bytes p-gzip)" -v r=$raw 'BEGIN { printf "%.3f", a / r }')"
metric wal_gzip_ratio_barman "$(awk -v a="$(bytes b-gzip)" -v r=$raw 'BEGIN { printf "%.3f", a / r }')"

# ---- 2. restore ---------------------------------------------------------------------
pgop_restore() { # LABEL CONFIG SEGMENT
	timed "$1" "${WAL_AS_PG[@]}" "$PGOP" instance wal-restore --config "$2" "$3" "$T/out/$3"
}
barman_restore() { # LABEL SERVER SEGMENT
	wal_barman_env timed "$1" "$BARMAN/barman-cloud-wal-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
		"$WAL_DEST" "$2" "$3" "$T/out/$3"
}
BAD=0
same() { # SEGMENT: the restored copy is the original; removed
	cmp -s "$T/out/$1" "$F/pg_wal/$1" || { BAD=$((BAD + 1)) && e2e_log "WARNING: restored $1 differs"; }
	rm -f "$T/out/$1"
}
e2e_log "restoring the $N segments one call each: pgop and barman-cloud interleaved"
for s in "${SEGS[@]}"; do
	for comp in $COMPS; do
		pgop_restore "rest-pgop-$comp" "$T/p-$comp.json" "$s"; same "$s"
		barman_restore "rest-barman-$comp" "b-$comp" "$s"; same "$s"
	done
done
wal_cfg "$T/r-par.json" p-gzip gzip 4 "" "$F" "$T/state-r-par"
t0=$(ns)
for s in "${SEGS[@]}"; do pgop_restore rest-pgop-par4 "$T/r-par.json" "$s"; same "$s"; done
rpar_total=$((($(ns) - t0) / 1000000))
metric wal_restore_mismatches "$BAD"

# ---- figures of 1 and 2 ---------------------------------------------------------------
# one LABEL: METRIC lines and sets W (ms/segment), R (segments/s), C (CPU ms/segment), M (peak RSS MB)
one() {
	local n w c r f
	read -r n w c r f < <(stats "$1")
	((n > 0)) || { W=- R=- C=- M=-; return; }
	W=$(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.0f", w / n }')
	R=$(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.2f", w ? n * 1000 / w : 0 }')
	C=$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.0f", c / n }')
	M=$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 1024 }')
	local k=${1//-/_}
	metric "${k}_ms_per_segment" "$W"
	metric "${k}_segments_per_s" "$R"
	metric "${k}_cpu_ms_per_segment" "$C"
	metric "${k}_peak_rss_mb" "$M"
	((f == 0)) || metric "${k}_failed_calls" "$f"
}
for op in arch rest; do
	for comp in $COMPS; do
		one "$op-pgop-$comp"
		pw=$W pr=$R pc=$C pm=$M
		one "$op-barman-$comp"
		what=$([[ $op == arch ]] && echo archive || echo restore)
		row "$what $comp: ms/segment" "$pw" "$W" "$(ratio "$pw" "$W")"
		row "$what $comp: segments/s" "$pr" "$R" "$(ratio "$pr" "$R")"
		row "$what $comp: CPU ms/segment" "$pc" "$C" "$(ratio "$pc" "$C")"
		row "$what $comp: peak RSS MB" "$pm" "$M" "$(ratio "$pm" "$M")"
	done
	if [[ $op == arch ]]; then
		one ref-gzip
		row "gzip -6 alone (zlib, no upload)" "$W" "" ""
		row "  ... CPU ms/segment" "$C" "" ""
	fi
	one "$op-pgop-par4"
	total=$([[ $op == arch ]] && echo $par_total || echo $rpar_total)
	metric "${op}_pgop_par4_total_ms" "$total"
	row "$what gzip maxParallel 4: total ms" "$total" "" ""
	row "  ... ms/segment" "$(awk -v t="$total" -v n="$N" 'BEGIN { printf "%.0f", t / n }')" "" ""
	row "  ... CPU ms/segment" "$C" "" ""
	row "  ... peak RSS MB" "$M" "" ""
done

# ---- 3. archive lag under load --------------------------------------------------------
# load NAME: BENCH_LOAD_SECONDS of pgbench, sampling every second; METRIC load_NAME_*
archiver_ticks() { # cutime+cstime of the archiver (its archive_command children), clock ticks
	local pid
	pid=$(pgsql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'archiver'")
	awk '{ print $16 + $17 }' "/proc/$pid/stat" 2>/dev/null || echo 0
}
ready() { find "$PG/pg_wal/archive_status" -name '*.ready' 2>/dev/null | wc -l; }
load() {
	local name=$1 samples=() lsn_a lsn_b arch_a arch_b fail_a fail_b tk_a tk_b t0 t1 pb i d
	wait_for_ready 0 60 || e2e_log "$name: .ready files left from before: $(ready)"
	pgsql "CHECKPOINT" >/dev/null
	lsn_a=$(pgsql "SELECT pg_current_wal_lsn()")
	read -r arch_a fail_a < <(pgsql "SELECT archived_count, failed_count FROM pg_stat_archiver" | tr '|' ' ')
	tk_a=$(archiver_ticks)
	t0=$(ns)
	timeout $((LOAD + 60)) "${PGBENCH[@]}" -n -c "$CLIENTS" -j 2 -T "$LOAD" >"$T/logs/pgbench-$name.log" 2>&1 &
	pb=$!
	for ((i = 0; i < LOAD + 30; i++)); do
		kill -0 "$pb" 2>/dev/null || break
		samples+=("$(ready)")
		sleep 1
	done
	wait "$pb" || e2e_log "$name: pgbench exited $?"
	t1=$(ns)
	lsn_b=$(pgsql "SELECT pg_current_wal_lsn()")
	local mb
	mb=$(pgsql "SELECT round(pg_wal_lsn_diff('$lsn_b', '$lsn_a') / 1048576)")
	metric "load_${name}_wal_mb_per_s" "$(awk -v m="$mb" -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", m * 1e9 / t }')"
	metric "load_${name}_tps" "$(sed -n 's/^tps = \([0-9]*\).*/\1/p' "$T/logs/pgbench-$name.log" | head -n 1)"
	metric "load_${name}_ready_max" "$(printf '%s\n' "${samples[@]}" | sort -n | tail -n 1)"
	metric "load_${name}_ready_median" "$(printf '%s\n' "${samples[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
	metric "load_${name}_ready_at_end" "$(ready)"
	pgsql "SELECT pg_switch_wal()" >/dev/null # the last partly written segment too
	d=$(ns)
	wait_for_ready 0 "$DRAIN" || e2e_log "$name: $(ready) .ready left after $DRAIN s"
	metric "load_${name}_drain_s" "$(awk -v t=$(($(ns) - d)) 'BEGIN { printf "%.1f", t / 1e9 }')"
	read -r arch_b fail_b < <(pgsql "SELECT archived_count, failed_count FROM pg_stat_archiver" | tr '|' ' ')
	tk_b=$(archiver_ticks)
	metric "load_${name}_archived" "$((arch_b - arch_a))"
	metric "load_${name}_archive_failures" "$((fail_b - fail_a))"
	LOAD_TICKS=$((tk_b - tk_a)) LOAD_ARCHIVED=$((arch_b - arch_a))
}
wait_for_ready() { # COUNT SECONDS: until at most COUNT .ready files are left
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		(($(ready) <= $1)) && return 0
		sleep 0.2
	done
	return 1
}
HZ=$(getconf CLK_TCK)
wal_cfg "$T/load-pgop.json" load-pgop gzip 4 "" "$PG"
set_archive_command "$PGOP instance wal-archive --config $T/load-pgop.json %p" || e2e_fail "archive_command"
e2e_log "load: pgbench -c $CLIENTS for $LOAD s, archive_command = pgop (gzip, maxParallel 4)"
load pgop
metric load_pgop_cpu_ms_per_segment "$(awk -v t=$LOAD_TICKS -v n=$LOAD_ARCHIVED -v hz="$HZ" 'BEGIN { printf "%.0f", n ? t * 1000 / hz / n : 0 }')"

if [[ $LOAD_BARMAN == 1 ]]; then
	# postgres cannot execute barman's venv (under /root): archive_command hands the path to
	# a root helper through $T/bmq and waits for its exit status (polls every 20 ms)
	Q=$T/bmq
	mkdir -p "$Q" && chown postgres:postgres "$Q" && chmod 0700 "$Q"
	cat >"$T/bm-archive.sh" <<EOF
#!/bin/sh
# archive_command: hands %p (relative to PGDATA, the cwd) to the root helper, waits ($CALL_T s)
id=\$\$
echo "\$PWD/\$1" >"$Q/req.\$id.tmp" && mv "$Q/req.\$id.tmp" "$Q/req.\$id" || exit 1
i=0
while [ ! -s "$Q/res.\$id" ]; do
	sleep 0.02
	i=\$((i + 1))
	[ \$i -gt $((CALL_T * 50)) ] && { rm -f "$Q/req.\$id"; exit 1; }
done
rc=\$(cat "$Q/res.\$id")
rm -f "$Q/res.\$id"
exit "\$rc"
EOF
	chmod 0755 "$T/bm-archive.sh"
	broker() {
		local r id p rc
		while [[ ! -e $Q/stop ]]; do
			for r in "$Q"/req.*; do
				[[ -e $r && $r != *.tmp ]] || continue
				id=${r##*/req.}
				p=$(cat "$r")
				rm -f "$r"
				wal_barman_env timed load-barman "$BARMAN/barman-cloud-wal-archive" --endpoint-url "$OBJSTORE_ENDPOINT" \
					--gzip "$WAL_DEST" load-barman "$p"
				rc=$?
				echo "$rc" >"$Q/res.$id.tmp" && chown postgres:postgres "$Q/res.$id.tmp" && mv "$Q/res.$id.tmp" "$Q/res.$id"
			done
			sleep 0.02
		done
	}
	broker &
	BROKER=$!
	set_archive_command "$T/bm-archive.sh %p" || e2e_fail "archive_command"
	e2e_log "load: pgbench -c $CLIENTS for $LOAD s, archive_command = barman-cloud-wal-archive --gzip"
	load barman
	read -r n w c r f < <(stats load-barman)
	metric load_barman_cpu_ms_per_segment "$(awk -v c="$c" -v n="$n" 'BEGIN { printf "%.0f", n ? c / n : 0 }')"
	metric load_barman_ms_per_call "$(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.0f", n ? w / n : 0 }')"
	set_archive_command /bin/true
	touch "$Q/stop"
	wait "$BROKER" 2>/dev/null
	BROKER=
fi

for k in wal_mb_per_s tps ready_max ready_median drain_s archived cpu_ms_per_segment; do
	p=${MET[load_pgop_$k]:--} b=${MET[load_barman_$k]:--}
	row "load ${LOAD}s: $k" "$p" "$b" "$([[ $k == cpu_ms_per_segment ]] && ratio "$p" "$b")"
done
} # wal_parts

[[ $PARTS == *wal* ]] && wal_parts
[[ $PARTS == *base* ]] && base_part
echo
echo "pgop vs barman-cloud 3.19.1 ($(nproc) cores), versitygw over TLS on loopback; WAL: $N segments of 16 MB, one call per segment; base: a pgbench database of scale ${BENCH_BASE_SCALE:-70}"
cat "$TABLE"
echo "targets (issue 25): archive rate >= 10x barman's, CPU <= 1/10; lag under load < 2 segments"
