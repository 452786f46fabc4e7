#!/usr/bin/env bash
# bench/metrics.sh - the instance exporter's cost per scrape (issue 27): one
# primary (`pgop instance init` + `run`, PostgreSQL 15, no Kubernetes, root:
# postgres runs through setpriv), metricsQueriesTTL 0 (every scrape runs every
# default query, as postgres_exporter does), BENCH_SCRAPES sequential scrapes
# of /metrics with curl. Prints METRIC lines: latency p50/p99/max, the
# manager's CPU per scrape (utime+stime of the pgop process, /proc/PID/stat),
# the exporter's PostgreSQL backend's CPU per scrape, the exposition's size,
# the manager's VmRSS/VmHWM before and after (and before its first scrape: what the
# exporter adds), RssAnon.
# Side by side, on the same database and the same query set: postgres_exporter
# (github.com/prometheus-community/postgres_exporter; the Go module proxy here
# refuses it, 403, so Debian's build of it, 0.11.1, unpacked from its .deb into
# ~/.cache/pgop without installing its service) with pgop's default queries
# (instance/default-queries.yaml, CloudNativePG's format, which is
# postgres_exporter's own plus keys it ignores) as --extend.query-path and its
# built-in collectors off, so both run the same SQL per scrape. The last lines
# are the figures side by side with the ratios pgop/postgres_exporter.
# Usage: bench/metrics.sh [PGOP_BIN]   (BENCH_SCRAPES=300, BENCH_TTL=0s, KEEP_TMP=1,
#        BENCH_BASELINE=0 leaves postgres_exporter out)
set -uo pipefail
N=${BENCH_SCRAPES:-300}
TTL=${BENCH_TTL:-0s} # metricsQueriesTTL: 0s runs every query at every scrape
PGOP_BIN=$(realpath "${1:-build/cmd/pgop}")
[[ $(id -u) -eq 0 ]] || { echo "bench/metrics.sh: must run as root" >&2; exit 2; }
T=$(mktemp -d /tmp/pgop-bench-metrics.XXXXXX)
chmod 755 "$T"
PID= PE_PID=
cleanup() {
	[[ -n $PE_PID ]] && kill -TERM "$PE_PID" 2>/dev/null
	[[ -n $PID ]] && kill -TERM "$PID" 2>/dev/null && sleep 3 && kill -KILL "$PID" 2>/dev/null
	[[ -f $T/i1/pgdata/postmaster.pid ]] && kill -QUIT "$(head -1 "$T/i1/pgdata/postmaster.pid")" 2>/dev/null
	[[ ${KEEP_TMP:-0} == 1 ]] || rm -rf "$T"
}
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
P1=$base S1=$((base + 1)) M1=$((base + 2))
C=bench
mkdir -p "$T/certs/server" "$T/certs/ca" "$T/certs/replication" "$T/pki" "$T/secrets/app"
(
	cd "$T/pki" || exit 1
	certtool --generate-privkey --key-type=ecdsa --outfile ca.key 2>/dev/null
	printf 'cn = ca\nca\ncert_signing_key\nexpiration_days = 3\n' >ca.tmpl
	certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl --outfile ca.crt 2>/dev/null
	for n in server replication; do
		certtool --generate-privkey --key-type=ecdsa --outfile $n.key 2>/dev/null
		printf 'cn = %s\ntls_www_server\ntls_www_client\nexpiration_days = 3\n' $n >$n.tmpl
		certtool --generate-certificate --load-privkey $n.key --load-ca-certificate ca.crt \
			--load-ca-privkey ca.key --template $n.tmpl --outfile $n.crt 2>/dev/null
	done
)
cp "$T/pki/server.crt" "$T/certs/server/tls.crt" && cp "$T/pki/server.key" "$T/certs/server/tls.key"
cp "$T/pki/ca.crt" "$T/certs/ca/ca.crt"
cp "$T/pki/replication.crt" "$T/certs/replication/tls.crt" && cp "$T/pki/replication.key" "$T/certs/replication/tls.key"
printf 'pw' >"$T/secrets/app/password"
cat >"$T/cluster.json" <<EOF
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"$C","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":1,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "bootstrap":{"initdb":{"database":"app","owner":"app"}},
  "monitoring":{"metricsQueriesTTL":"$TTL"}, "storage":{"size":"1Gi"}},
 "status":{"instanceNames":["$C-1"],"targetPrimary":"$C-1","currentPrimary":""}}
EOF
cp "$PGOP_BIN" "$T/pgop"
chown -R postgres: "$T"
AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)
common=(--pgdata "$T/i1/pgdata" --controller-dir "$T/i1/controller" --certs-dir "$T/certs"
	--secrets-dir "$T/secrets" --cluster-file "$T/cluster.json" --pod-name "$C-1" --cluster-name "$C")
"${AS_PG[@]}" "$T/pgop" instance init "${common[@]}" >"$T/init.log" 2>&1 || { cat "$T/init.log"; exit 1; }
"${AS_PG[@]}" "$T/pgop" instance run "${common[@]}" --port "$P1" --status-listen "127.0.0.1:$S1" \
	--metrics-listen "127.0.0.1:$M1" >"$T/run.log" 2>&1 &
PID=$!
# postgres up and the manager settled (its status port answers), before any scrape: the
# RSS the exporter adds is counted from here
for _ in $(seq 1 300); do
	"${AS_PG[@]}" psql -h "$T/i1/controller/run" -p "$P1" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break
	sleep 0.2
done
sleep 3
RSS_UNSCRAPED=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$PID/status")
for _ in $(seq 1 300); do
	grep -q '^cnpg_collector_up{cluster="bench"} 1$' <<<"$(curl -s "http://127.0.0.1:$M1/metrics")" && break
	sleep 0.2
done
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # clock ticks
cpus() { local t=0 p; for p in "$@"; do t=$((t + $(cpu "$p"))); done; echo "$t"; }
rss() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
tck=$(getconf CLK_TCK)
psql_pg() { "${AS_PG[@]}" psql -h "$T/i1/controller/run" -p "$P1" -U postgres -d postgres -Atc "$1"; }
backends() { psql_pg "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY pid"; }
pct() { awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100); if (i < 1) i = 1; printf "%.2f", v[i] * 1000 }' "$2"; }
# measure NAME URL PID BACKEND_PIDS...: N sequential scrapes; METRIC lines NAME_*,
# and the figures in $T/fig.NAME for the side-by-side table
measure() {
	local name=$1 url=$2 pid=$3 c0 c1 b0 b1 r0 rpre=${RSS_UNSCRAPED:-0}
	shift 3
	curl -s -o "$T/one.$name.txt" "$url"
	r0=$(rss "$pid" VmRSS)
	c0=$(cpu "$pid") b0=$(cpus "$@")
	local t0=$EPOCHREALTIME i0 i1
	for _ in $(seq 1 "$N"); do
		curl -s -o /dev/null -w '%{time_total}\n' "$url"
	done >"$T/lat.$name.txt"
	c1=$(cpu "$pid") b1=$(cpus "$@")
	# the process's CPU while nobody scrapes, over as long as the scrapes took (pgop's
	# figure is its whole instance manager: the supervisor's ticks are not the exporter's)
	local secs
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	i0=$(cpu "$pid")
	sleep "$secs"
	i1=$(cpu "$pid")
	sort -n "$T/lat.$name.txt" >"$T/lat.$name.sorted"
	local p50 p99 mx mcpu bcpu
	p50=$(pct 50 "$T/lat.$name.sorted") p99=$(pct 99 "$T/lat.$name.sorted") mx=$(pct 100 "$T/lat.$name.sorted")
	mcpu=$(awk -v a="$c0" -v b="$c1" -v t="$tck" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1000 / t / n }')
	local idle net
	idle=$(awk -v a="$i0" -v b="$i1" -v t="$tck" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1000 / t / n }')
	net=$(awk -v a="$mcpu" -v b="$idle" 'BEGIN { printf "%.3f", a - b }')
	bcpu=$(awk -v a="$b0" -v b="$b1" -v t="$tck" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1000 / t / n }')
	echo "METRIC ${name}_exposition_lines=$(wc -l <"$T/one.$name.txt") ${name}_exposition_bytes=$(wc -c <"$T/one.$name.txt")"
	echo "METRIC ${name}_latency_ms_p50=$p50 ${name}_latency_ms_p99=$p99 ${name}_latency_ms_max=$mx"
	echo "METRIC ${name}_cpu_ms_per_scrape=$mcpu ${name}_idle_cpu_ms_per_scrape_time=$idle ${name}_net_cpu_ms_per_scrape=$net ${name}_backend_cpu_ms_per_scrape=$bcpu"
	echo "METRIC ${name}_rss_unscraped_kb=$rpre ${name}_rss_before_kb=$r0 ${name}_rss_after_kb=$(rss "$pid" VmRSS) ${name}_hwm_kb=$(rss "$pid" VmHWM) ${name}_rss_anon_kb=$(rss "$pid" RssAnon)"
	printf '%s %s %s %s %s %s %s %s %s\n' "$p50" "$p99" "$mcpu" "$bcpu" "$(rss "$pid" VmHWM)" \
		"$(wc -l <"$T/one.$name.txt")" "$net" "$(rss "$pid" RssAnon)" \
		"$(($(rss "$pid" VmHWM) - rpre))" >"$T/fig.$name"
}
echo "METRIC scrapes=$N metrics_queries_ttl=$TTL"
measure pgop "http://127.0.0.1:$M1/metrics" "$PID" "$(psql_pg "SELECT pid FROM pg_stat_activity WHERE usename = 'cnpg_metrics_exporter' LIMIT 1")"

# ---- postgres_exporter on the same database, the same queries -------------------------
[[ ${BENCH_BASELINE:-1} == 1 ]] || exit 0
PE_VER=0.11.1
PE_DIR=${PGOP_CACHE:-$HOME/.cache/pgop}/postgres-exporter-$PE_VER
PE=$PE_DIR/usr/bin/prometheus-postgres-exporter
if [[ ! -x $PE ]]; then
	(cd "$T" && apt-get download "prometheus-postgres-exporter=$PE_VER*" >"$T/pe-dl.log" 2>&1) &&
		mkdir -p "$PE_DIR" && dpkg -x "$T"/prometheus-postgres-exporter_*.deb "$PE_DIR" ||
		{ echo "bench/metrics.sh: postgres_exporter $PE_VER not available from Debian: $(tail -1 "$T/pe-dl.log")" >&2; exit 1; }
fi
top=$(cd "$(dirname "$0")/.." && pwd)
cp "$top/instance/default-queries.yaml" "$T/queries.yaml" && chown postgres: "$T/queries.yaml"
PE_PORT=$((base + 3))
before=$(backends)
# DATA_SOURCE_NAME: the local socket, no password (nothing secret in the environment)
DATA_SOURCE_NAME="host=$T/i1/controller/run port=$P1 user=postgres dbname=postgres sslmode=disable" \
	"${AS_PG[@]}" "$PE" --web.listen-address="127.0.0.1:$PE_PORT" --disable-default-metrics \
	--disable-settings-metrics --no-collector.database --no-collector.bgwriter \
	--extend.query-path="$T/queries.yaml" >"$T/pe.log" 2>&1 &
PE_PID=$!
# grep reads the whole answer first: `curl | grep -q` under pipefail fails when grep
# stops at the match and curl gets SIGPIPE
pe_up() { grep -q '^pg_up 1' <<<"$(curl -s "http://127.0.0.1:$PE_PORT/metrics")"; }
for _ in $(seq 1 100); do
	pe_up && break
	sleep 0.2
done
pe_up ||
	{ echo "bench/metrics.sh: postgres_exporter did not connect:" >&2; tail -5 "$T/pe.log" >&2; exit 1; }
pe_backends=$(comm -13 <(sort <<<"$before") <(backends | sort) | paste -sd' ')
# shellcheck disable=SC2086 # one argument per backend
RSS_UNSCRAPED=0 measure postgres_exporter "http://127.0.0.1:$PE_PORT/metrics" "$PE_PID" $pe_backends
grep -h '^pg_exporter_last_scrape_error\|^pg_exporter_user_queries_load_error' "$T/one.postgres_exporter.txt" |
	sed 's/^/METRIC postgres_exporter_/'
read -r a50 a99 acpu abk ahwm alines anet aanon aadd <"$T/fig.pgop"
read -r b50 b99 bcpu bbk bhwm blines bnet banon _ <"$T/fig.postgres_exporter"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
echo
echo "same database, same queries (instance/default-queries.yaml), $N scrapes each, metricsQueriesTTL $TTL"
printf '%-32s %12s %18s %12s\n' "" pgop postgres_exporter pgop/pe
printf '%-32s %12s %18s %12s\n' "latency p50 ms" "$a50" "$b50" "$(ratio "$a50" "$b50")"
printf '%-32s %12s %18s %12s\n' "latency p99 ms" "$a99" "$b99" "$(ratio "$a99" "$b99")"
printf '%-32s %12s %18s %12s\n' "process CPU ms per scrape" "$acpu" "$bcpu" "$(ratio "$acpu" "$bcpu")"
printf '%-32s %12s %18s %12s\n' "  less its idle CPU" "$anet" "$bnet" "$(ratio "$anet" "$bnet")"
printf '%-32s %12s %18s %12s\n' "its backends' CPU ms per scrape" "$abk" "$bbk" "$(ratio "$abk" "$bbk")"
printf '%-32s %12s %18s %12s\n' "process peak RSS kB" "$ahwm" "$bhwm" "$(ratio "$ahwm" "$bhwm")"
printf '%-32s %12s %18s %12s\n' "  its anonymous RSS kB" "$aanon" "$banon" "$(ratio "$aanon" "$banon")"
printf '%-32s %12s %18s %12s\n' "RSS the exporter adds kB" "$aadd" "$bhwm" "$(ratio "$aadd" "$bhwm")"
printf '%-32s %12s %18s %12s\n' "exposition lines" "$alines" "$blines" "$(ratio "$alines" "$blines")"
echo "pgop's process is the whole instance manager (supervisor, status server, exporter);"
echo "what its exporter adds is its peak RSS less its RSS before the first scrape, against"
echo "postgres_exporter's whole process (it exists only to export)."
echo "targets (issue 27): CPU per scrape <= 1/3, memory <= 1/4, p99 < 50 ms"
