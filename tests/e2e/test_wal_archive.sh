#!/usr/bin/env bash
# e2e-timeout: 600
# WAL archiving and restoring (backup/, `pgop instance wal-archive|wal-restore`) against
# a real S3 server (versitygw over TLS on loopback, objstore_lib.sh) and a local
# PostgreSQL 15 run as the postgres user (no Kubernetes), checked against barman-cloud
# 3.19.1 (tests/e2e/build-barman.sh):
#  - archive_command = pgop instance wal-archive: segments at barman's keys for each
#    compression (none, gzip, bzip2, xz, lz4, zstd), .history files under wals/;
#  - barman-cloud-wal-restore reads what pgop wrote byte-identical, for every compression;
#    pgop wal-restore reads what barman-cloud-wal-archive wrote, for every compression;
#  - a missing file: wal-restore exits 1 with no error line;
#  - maxParallel: wal-archive uploads the next .ready files ahead (markers), wal-restore
#    prefetches into its spool and serves from it;
#  - another system (second initdb) archiving into the same path is refused, clearly;
#  - a wrong secret: exit 1, the S3 error in the log, no crash.
# Figures (METRIC): ms per segment and segments/s, pgop vs barman-cloud-wal-archive,
# 10 segments each, gzip, same store; the same uncompressed; wal-restore of those (gzip).
# Usage: test_wal_archive.sh [PGOP_BIN]. Needs root (setpriv to postgres).
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

T=$(mktemp -d /tmp/pgop-wal.XXXXXX)
chmod 755 "$T"
cleanup() {
	local d
	for d in "$T"/pg1 "$T"/pg2; do
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
cfg() { wal_cfg "$@"; }
suffix() { wal_suffix "$@"; }
barman_env() { wal_barman_env "$@"; }
no_crash() { # RC LOGFILE
	[[ $1 -lt 128 ]] && ! grep -qE "Sanitizer|runtime error" "$2"
}

# ---- a PostgreSQL 15 archiving through pgop -----------------------------------
mkdir -p "$T/pg2" "$T/logs" && chown postgres:postgres "$T/pg2" "$T/logs"
chmod 0700 "$T/pg2"
wal_pg_init "$T/pg1" "$T/initdb1.log" || e2e_fail "initdb"
cfg "$T/wal.json" pg1 gzip
cat >>"$T/pg1/postgresql.conf" <<EOF
archive_command = '$PGOP instance wal-archive --config $T/wal.json %p'
wal_keep_size = '2GB'
max_wal_size = '2GB'
EOF
as_pg "$PGBIN/pg_ctl" -D "$T/pg1" -l "$T/logs/pg1.log" -w start >/dev/null || { tail -20 "$T/logs/pg1.log"; e2e_fail "postgres start"; }
psql1() { wal_psql "$1"; }
SYSID1=$(as_pg "$PGBIN/pg_controldata" "$T/pg1" | awk -F': *' '/system identifier/ { print $2 }')
psql1 "CREATE TABLE t(id int, v text)"

# wait_archived SEG: pg_stat_archiver reached SEG (30 s)
wait_archived() {
	local i last
	for i in $(seq 1 300); do
		last=$(psql1 "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
		[[ $last > $1 || $last == "$1" ]] && return 0
		sleep 0.1
	done
	e2e_log "archiver at '$last', waiting for $1: $(psql1 "SELECT failed_count, last_failed_wal FROM pg_stat_archiver")"
	return 1
}
declare -A SEG # compression -> a segment archived with it
for comp in gzip none bzip2 xz lz4 zstd; do
	cfg "$T/wal.json" pg1 "$comp"
	psql1 "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 50000) g"
	seg=$(psql1 "SELECT pg_walfile_name(pg_current_wal_lsn())")
	psql1 "SELECT pg_switch_wal()" >/dev/null
	SEG[$comp]=$seg
	check "$comp: postgres archived $seg through pgop" wait_archived "$seg"
	key=$STORE/pg1/wals/${seg:0:16}/$seg$(suffix "$comp")
	check "$comp: stored at barman's key .../wals/${seg:0:16}/$seg$(suffix "$comp")" test -f "$key"
done
check "the first segment's object is gzip (barman's magic 1f8b08)" \
	test "$(head -c 3 "$STORE/pg1/wals/0000000100000000/000000010000000000000001.gz" | od -An -tx1 | tr -d ' ')" = 1f8b08
check "check marker remembers the destination and the system identifier" \
	grep -q " $SYSID1\$" "$T/state-pg1/wal-archive-checked"
check "no error line in postgres's log from archiving" bash -c "! grep -q '\"level\":\"error\"' '$T/logs/pg1.log'"

# ---- barman-cloud reads what pgop wrote -----------------------------------------
mkdir -p "$T/out" && chown postgres:postgres "$T/out"
for comp in none gzip bzip2 xz lz4 zstd; do
	seg=${SEG[$comp]}
	rm -f "$T/out/$seg"
	barman_env "$BARMAN/barman-cloud-wal-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
		"$DEST" pg1 "$seg" "$T/out/$seg" >"$T/bm-restore-$comp.log" 2>&1
	check "$comp: barman-cloud-wal-restore of pgop's $seg is byte-identical" \
		cmp -s "$T/out/$seg" "$T/pg1/pg_wal/$seg"
done

# ---- pgop reads what barman-cloud wrote -----------------------------------------
cfg "$T/bm.json" bm none
for comp in none gzip bzip2 xz lz4 zstd; do
	seg=${SEG[$comp]}
	flag=; [[ $comp != none ]] && flag=--$comp
	barman_env "$BARMAN/barman-cloud-wal-archive" --endpoint-url "$OBJSTORE_ENDPOINT" $flag \
		"$DEST" bm "$T/pg1/pg_wal/$seg" >"$T/bm-archive-$comp.log" 2>&1 ||
		{ cat "$T/bm-archive-$comp.log" >&2; }
	rm -f "$T/out/$seg"
	as_pg "$PGOP" instance wal-restore --config "$T/bm.json" "$seg" "$T/out/$seg" 2>"$T/restore-$comp.log"
	check "$comp: pgop wal-restore of barman-cloud-wal-archive's $seg is byte-identical" \
		cmp -s "$T/out/$seg" "$T/pg1/pg_wal/$seg"
done

# ---- timeline history, missing files --------------------------------------------
printf '1\t0/3000000\tno recovery target specified\n' >"$T/pg1/pg_wal/00000002.history"
chown postgres:postgres "$T/pg1/pg_wal/00000002.history"
(cd "$T/pg1" && as_pg "$PGOP" instance wal-archive --config "$T/wal.json" pg_wal/00000002.history 2>"$T/hist.log")
check ".history stored directly under wals/ (no hash directory)" test -f "$STORE/pg1/wals/00000002.history.zst"
rc=0
as_pg "$PGOP" instance wal-restore --config "$T/wal.json" 00000002.history "$T/out/h" 2>"$T/hist-r.log" || rc=$?
check ".history restored byte-identical" cmp -s "$T/out/h" "$T/pg1/pg_wal/00000002.history"
rc=0
as_pg "$PGOP" instance wal-restore --config "$T/wal.json" 00000009.history "$T/out/none" 2>"$T/missing.log" || rc=$?
check "a missing .history: exit 1, nothing on stderr, no file" \
	test "$rc" = 1 -a ! -s "$T/missing.log" -a ! -e "$T/out/none"
rc=0
as_pg "$PGOP" instance wal-archive --config "$T/wal.json" pg_wal/../postgresql.conf 2>"$T/badname.log" || rc=$?
check "a non-WAL file name is refused" grep -q "not a WAL file name" "$T/badname.log"

# ---- maxParallel: archive ahead, restore with prefetch ----------------------------
cfg "$T/wal.json" pg1 gzip
for i in 1 2 3 4 5 6; do # more segments with real content
	psql1 "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 100000) g"
	# the segment this switch completed (not the current position less one: WAL written in
	# the background after the switch, autovacuum's after these inserts, moves it into the
	# next segment, which nothing completes)
	last_switched=$(psql1 "SELECT pg_walfile_name(pg_switch_wal() - 1)")
done
check "postgres archived 6 more segments" wait_archived "$last_switched"
mapfile -t segs < <(ls "$T/pg1/pg_wal" | grep -E '^[0-9A-F]{24}$' | sort | head -n 12)
[[ ${#segs[@]} -ge 10 ]] || e2e_fail "only ${#segs[@]} segments in pg_wal"
F=$T/fake
mkdir -p "$F/pg_wal/archive_status" "$F/global"
cp "$T/pg1/global/pg_control" "$F/global/"
for s in "${segs[@]:0:5}"; do cp "$T/pg1/pg_wal/$s" "$F/pg_wal/" && touch "$F/pg_wal/archive_status/$s.ready"; done
chown -R postgres:postgres "$F"
cfg "$T/par.json" par lz4 4 "" "$F"
as_pg "$PGOP" instance wal-archive --config "$T/par.json" "pg_wal/${segs[0]}" 2>"$T/par.log"
n=0
for s in "${segs[@]:0:4}"; do [[ -f $STORE/par/wals/${s:0:16}/$s.lz4 ]] && n=$((n + 1)); done
check "maxParallel 4: one call stored the requested segment and the next 3 .ready" test "$n" = 4
check "markers for the 3 uploaded ahead" test "$(ls "$T/state-par/wal-archived" | wc -l)" = 3
check "the 5th was left for later" test ! -e "$STORE/par/wals/${segs[4]:0:16}/${segs[4]}.lz4"
rm "$STORE/par/wals/${segs[1]:0:16}/${segs[1]}.lz4" # proves the next call uploads nothing
as_pg "$PGOP" instance wal-archive --config "$T/par.json" "pg_wal/${segs[1]}" 2>>"$T/par.log"
check "postgres's call for a segment uploaded ahead returns 0 from the marker" \
	test ! -e "$STORE/par/wals/${segs[1]:0:16}/${segs[1]}.lz4"
mv "$F/pg_wal/archive_status/${segs[1]}.ready" "$F/pg_wal/archive_status/${segs[1]}.done"
as_pg "$PGOP" instance wal-archive --config "$T/par.json" "pg_wal/${segs[2]}" 2>>"$T/par.log"
check "the marker goes once postgres marked the segment .done" test ! -e "$T/state-par/wal-archived/${segs[1]}"
rm -rf "$T/state-par/wal-spool"
as_pg "$PGOP" instance wal-restore --config "$T/par.json" "${segs[2]}" "$T/out/p2" 2>"$T/par-r.log"
check "restore with maxParallel 4: the requested segment byte-identical" cmp -s "$T/out/p2" "$T/pg1/pg_wal/${segs[2]}"
check "restore with maxParallel 4: the next one prefetched into the spool" test -f "$T/state-par/wal-spool/${segs[3]}"
as_pg "$PGOP" instance wal-restore --config "$T/par.json" "${segs[3]}" "$T/out/p3" 2>>"$T/par-r.log"
check "a later request served from the spool, byte-identical, spool emptied" \
	bash -c "cmp -s '$T/out/p3' '$T/pg1/pg_wal/${segs[3]}' && test ! -e '$T/state-par/wal-spool/${segs[3]}'"

# ---- another system archiving into the same path ----------------------------------
as_pg "$PGBIN/initdb" -D "$T/pg2" -U postgres -A trust >"$T/initdb2.log" 2>&1 || e2e_fail "initdb 2"
SYSID2=$(as_pg "$PGBIN/pg_controldata" "$T/pg2" | awk -F': *' '/system identifier/ { print $2 }')
seg2=$(ls "$T/pg2/pg_wal" | grep -E '^[0-9A-F]{24}$' | head -n 1)
cfg "$T/other.json" pg1 gzip 1 "" "" "$T/state-other"
rc=0
(cd "$T/pg2" && as_pg "$PGOP" instance wal-archive --config "$T/other.json" "pg_wal/$seg2" 2>"$T/other.log") || rc=$?
e2e_log "other system: $(cat "$T/other.log")"
check "another system's first archive is refused (exit 1)" test "$rc" = 1
check "the refusal names both system identifiers" \
	bash -c "grep -q 'holds WAL of another system' '$T/other.log' && grep -q '$SYSID1' '$T/other.log' && grep -q '$SYSID2' '$T/other.log'"
check "the stored $seg2 is still the first system's" \
	bash -c "zcat '$STORE/pg1/wals/${seg2:0:16}/$seg2.gz' | cmp -s - '$T/pg1/pg_wal/$seg2'"

# ---- wrong secret --------------------------------------------------------------
cfg "$T/wrong.json" pg1 gzip 1 "$T/cred/wrong" "" "$T/state-wrong"
rc=0
(cd "$T/pg1" && as_pg "$PGOP" instance wal-archive --config "$T/wrong.json" "pg_wal/${segs[5]}" 2>"$T/wrong.log") || rc=$?
e2e_log "wrong secret: $(cat "$T/wrong.log")"
check "wrong secret: exit 1, no crash" bash -c "test $rc = 1 && ! grep -qE 'Sanitizer|runtime error' '$T/wrong.log'"
check "wrong secret: the S3 error in the JSON log line" grep -q '"level":"error".*403 SignatureDoesNotMatch' "$T/wrong.log"
check "the secret is in no log" bash -c "! grep -rqF -- '$(cat "$T/cred/secret")' '$T'/*.log"
rc=0
as_pg "$PGOP" instance wal-restore --config "$T/wrong.json" "${segs[5]}" "$T/out/w" 2>"$T/wrong-r.log" || rc=$?
check "wrong secret on restore: exit 1 with the S3 error" bash -c "test $rc = 1 && grep -q 403 '$T/wrong-r.log'"

# ---- figures: 10 segments, gzip, pgop vs barman-cloud-wal-archive ------------------
B=$T/bench
mkdir -p "$B/pg_wal/archive_status" "$B/global"
cp "$T/pg1/global/pg_control" "$B/global/"
for s in "${segs[@]:0:10}"; do cp "$T/pg1/pg_wal/$s" "$B/pg_wal/"; done
chown -R postgres:postgres "$B"
cfg "$T/bench.json" bench-pgop gzip 1 "" "$B"
t0=$(ms)
for s in "${segs[@]:0:10}"; do
	as_pg "$PGOP" instance wal-archive --config "$T/bench.json" "pg_wal/$s" 2>>"$T/bench.log" || e2e_log "bench: pgop failed on $s"
done
t1=$(ms)
for s in "${segs[@]:0:10}"; do
	barman_env "$BARMAN/barman-cloud-wal-archive" --endpoint-url "$OBJSTORE_ENDPOINT" --gzip \
		"$DEST" bench-barman "$B/pg_wal/$s" >>"$T/bench-bm.log" 2>&1 || e2e_log "bench: barman failed on $s"
done
t2=$(ms)
n_p=$(ls "$STORE/bench-pgop/wals/${segs[0]:0:16}" | wc -l)
n_b=$(ls "$STORE/bench-barman/wals/${segs[0]:0:16}" | wc -l)
check "bench: 10 segments stored by each" test "$n_p" = 10 -a "$n_b" = 10
p=$(((t1 - t0) / 10)) b=$(((t2 - t1) / 10))
echo "METRIC wal_archive_pgop_ms_per_segment $p"
echo "METRIC wal_archive_barman_ms_per_segment $b"
echo "METRIC wal_archive_pgop_segments_per_s $(awk -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", 10000 / t }')"
echo "METRIC wal_archive_barman_segments_per_s $(awk -v t=$((t2 - t1)) 'BEGIN { printf "%.1f", 10000 / t }')"
e2e_log "10 segments, gzip: pgop $p ms/segment, barman-cloud-wal-archive $b ms/segment$(nm "$PGOP" 2>/dev/null | grep -c __asan_init >/dev/null && echo ' [pgop: ASan build]')"
# the same without compression: what is left is the process, TLS and the PUT
cfg "$T/bench0.json" bench-pgop-none none 1 "" "$B"
t0=$(ms)
for s in "${segs[@]:0:10}"; do
	as_pg "$PGOP" instance wal-archive --config "$T/bench0.json" "pg_wal/$s" 2>>"$T/bench.log"
done
t1=$(ms)
for s in "${segs[@]:0:10}"; do
	barman_env "$BARMAN/barman-cloud-wal-archive" --endpoint-url "$OBJSTORE_ENDPOINT" \
		"$DEST" bench-barman-none "$B/pg_wal/$s" >>"$T/bench-bm.log" 2>&1
done
t2=$(ms)
echo "METRIC wal_archive_nocompression_pgop_ms_per_segment $(((t1 - t0) / 10))"
echo "METRIC wal_archive_nocompression_barman_ms_per_segment $(((t2 - t1) / 10))"
t0=$(ms)
for s in "${segs[@]:0:10}"; do
	as_pg "$PGOP" instance wal-restore --config "$T/bench.json" "$s" "$T/out/b-$s" 2>>"$T/bench.log"
done
t1=$(ms)
for s in "${segs[@]:0:10}"; do
	barman_env "$BARMAN/barman-cloud-wal-restore" --endpoint-url "$OBJSTORE_ENDPOINT" \
		"$DEST" bench-barman "$s" "$T/out/bb-$s" >>"$T/bench-bm.log" 2>&1
done
t2=$(ms)
echo "METRIC wal_restore_pgop_ms_per_segment $(((t1 - t0) / 10))"
echo "METRIC wal_restore_barman_ms_per_segment $(((t2 - t1) / 10))"

check "no sanitizer report or crash in any pgop log" \
	bash -c "! grep -lE 'Sanitizer|runtime error|LeakSanitizer' '$T'/*.log '$T'/logs/*.log"

e2e_log "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]] || exit 1
e2e_log "PASS"
