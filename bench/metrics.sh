#!/usr/bin/env bash
# bench/metrics.sh - the instance exporter's cost per scrape (issue 27): one
# primary (`pgop instance init` + `run`, PostgreSQL 15, no Kubernetes, root:
# postgres runs through setpriv), metricsQueriesTTL 0 (every scrape runs every
# default query, as postgres_exporter does), BENCH_SCRAPES sequential scrapes
# of /metrics with curl. Prints METRIC lines: latency p50/p99/max, the
# manager's CPU per scrape (utime+stime of the pgop process, /proc/PID/stat),
# the exporter's PostgreSQL backend's CPU per scrape, the exposition's size,
# the manager's VmRSS/VmHWM before and after.
# postgres_exporter (github.com/prometheus-community/postgres_exporter) is not
# served by the Go module proxy this project can reach (403 "not available"),
# so the side-by-side run of the issue is not possible here; see
# docs/internals/metrics.md.
# Usage: bench/metrics.sh [PGOP_BIN]   (BENCH_SCRAPES=300, BENCH_TTL=0s, KEEP_TMP=1)
set -uo pipefail
N=${BENCH_SCRAPES:-300}
TTL=${BENCH_TTL:-0s} # metricsQueriesTTL: 0s runs every query at every scrape
PGOP_BIN=$(realpath "${1:-build/cmd/pgop}")
[[ $(id -u) -eq 0 ]] || { echo "bench/metrics.sh: must run as root" >&2; exit 2; }
T=$(mktemp -d /tmp/pgop-bench-metrics.XXXXXX)
chmod 755 "$T"
PID=
cleanup() {
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
for _ in $(seq 1 300); do
	curl -s "http://127.0.0.1:$M1/metrics" | grep -q '^cnpg_collector_up{cluster="bench"} 1$' && break
	sleep 0.2
done
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # clock ticks
rss() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
tck=$(getconf CLK_TCK)
curl -s -o "$T/one.txt" "http://127.0.0.1:$M1/metrics"
backend=$("${AS_PG[@]}" psql -h "$T/i1/controller/run" -p "$P1" -U postgres -Atc \
	"SELECT pid FROM pg_stat_activity WHERE usename = 'cnpg_metrics_exporter' LIMIT 1")
echo "METRIC rss_before_kb=$(rss "$PID" VmRSS)"
c0=$(cpu "$PID") b0=$(cpu "$backend")
for _ in $(seq 1 "$N"); do
	curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$M1/metrics"
done >"$T/lat.txt"
c1=$(cpu "$PID") b1=$(cpu "$backend")
sort -n "$T/lat.txt" >"$T/lat.sorted"
pct() { awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100); if (i < 1) i = 1; printf "%.2f", v[i] * 1000 }' "$T/lat.sorted"; }
echo "METRIC scrapes=$N metrics_queries_ttl=$TTL"
echo "METRIC exposition_lines=$(wc -l <"$T/one.txt") exposition_bytes=$(wc -c <"$T/one.txt")"
echo "METRIC latency_ms_p50=$(pct 50) latency_ms_p99=$(pct 99) latency_ms_max=$(pct 100)"
echo "METRIC manager_cpu_ms_per_scrape=$(awk -v a="$c0" -v b="$c1" -v t="$tck" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1000 / t / n }')"
echo "METRIC backend_cpu_ms_per_scrape=$(awk -v a="$b0" -v b="$b1" -v t="$tck" -v n="$N" 'BEGIN { printf "%.3f", (b - a) * 1000 / t / n }')"
echo "METRIC rss_after_kb=$(rss "$PID" VmRSS) hwm_kb=$(rss "$PID" VmHWM)"
