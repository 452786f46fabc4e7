#!/usr/bin/env bash
# tests/e2e/test_metrics_local.sh - the instance exporter (port 9187) without
# Kubernetes: `pgop instance init` + `run` of one primary as the postgres OS
# user, the Cluster from a file with spec.monitoring (custom queries from a
# ConfigMap and a Secret laid out as the reconciler mounts them, TTL 0).
# Scrapes /metrics with curl and checks: CloudNativePG's collector and default
# query metrics by name and labels, `promtool check metrics`, a custom query's
# metric, a broken custom query (error metrics, the others keep flowing), a
# query that runs past the statement timeout, read-only transactions, the
# cache (metricsQueriesTTL), 404/405, concurrent scrapes, a replica
# (pg_replication lag / in_recovery / streaming_replicas from both sides), and
# /pg/status metricsErrors (the broken queries, for the reconciler's Event), a
# real Prometheus (tests/e2e/build-prometheus.sh) scraping both instances,
# then the replica again with spec.monitoring.tls.enabled (HTTPS only).
# Usage: test_metrics_local.sh [PGOP_BIN]. Prints "N passed, N failed".
set -uo pipefail

. "$(dirname "$0")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)

PGOP_BIN=${1:-${PGOP_BIN:-}}
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found (argument 1 or PGOP_BIN)"
PGOP_BIN=$(realpath "$PGOP_BIN")
for tool in certtool curl setpriv jq psql openssl; do
	command -v "$tool" >/dev/null || e2e_fail "$tool is required (scripts/setup-deps.sh installs it)"
done
[[ -x /usr/lib/postgresql/15/bin/initdb ]] || e2e_fail "PostgreSQL 15 binaries are required"
id postgres >/dev/null 2>&1 || e2e_fail "the postgres OS user is required"
[[ $(id -u) -eq 0 ]] || e2e_skip "must run as root (setpriv to postgres)"
PROM_BIN=$("$REPO/tests/e2e/build-prometheus.sh") || e2e_fail "promtool could not be built"

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
		return 1
	fi
}

T=$(mktemp -d /tmp/pgop-metrics.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
	local p i
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do # the replica first: no handover
		p=${PIDS[i]}
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 1 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 1 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
	done
	for d in "$T"/i1/pgdata "$T"/i2/pgdata; do
		[[ -f $d/postmaster.pid ]] && kill -QUIT "$(head -1 "$d/postmaster.pid")" 2>/dev/null
	done
	if [[ ${KEEP_TMP:-0} != 1 ]]; then rm -rf "$T"; fi
}
trap cleanup EXIT

base=$(e2e_free_ports 6) || e2e_fail "no free port"
P1=$base S1=$((base + 1)) M1=$((base + 2)) P2=$((base + 3)) S2=$((base + 4)) M2=$((base + 5))
C=mtest

# ---- certificates (the status server needs them) --------------------------
mkdir -p "$T/certs/server" "$T/certs/ca" "$T/certs/replication" "$T/pki" \
	"$T/secrets/app" "$T/secrets/superuser"
cd "$T/pki" || exit 1
gen_key() { certtool --generate-privkey --key-type=ecdsa --outfile "$1.key" 2>/dev/null; }
printf 'cn = %s\nca\ncert_signing_key\nexpiration_days = 30\n' "$C" >ca.tmpl
gen_key ca && certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl \
	--outfile ca.crt 2>/dev/null || e2e_fail "CA"
leaf() {
	local name=$1
	shift
	printf '%s\n' "$@" "expiration_days = 30" >"$name.tmpl"
	gen_key "$name" && certtool --generate-certificate --load-privkey "$name.key" \
		--load-ca-certificate ca.crt --load-ca-privkey ca.key \
		--template "$name.tmpl" --outfile "$name.crt" 2>/dev/null || e2e_fail "cert $name"
}
leaf server "cn = $C-rw" "dns_name = $C-rw" "ip_address = 127.0.0.1" tls_www_server signing_key encryption_key
leaf replication "cn = streaming_replica" tls_www_client signing_key
leaf operator "cn = pgop-operator" tls_www_client signing_key
cp server.crt "$T/certs/server/tls.crt" && cp server.key "$T/certs/server/tls.key"
cp ca.crt "$T/certs/ca/ca.crt"
cp replication.crt "$T/certs/replication/tls.crt" && cp replication.key "$T/certs/replication/tls.key"
printf 'app-pw' >"$T/secrets/app/password"
cd / || exit 1

# ---- custom queries, laid out as the reconciler mounts them ----------------
mkdir -p "$T/mon/configmap/my-queries" "$T/mon/secret/my-secret-queries"
cat >"$T/mon/configmap/my-queries/custom.yaml" <<'EOF'
pgop_custom:
  query: "SELECT 'answer' AS kind, 42 AS value, 'running' AS state"
  metrics:
    - kind:
        usage: "LABEL"
        description: "What it is"
    - value:
        usage: "GAUGE"
        description: "A constant"
    - state:
        usage: "MAPPEDMETRIC"
        description: "A mapped state"
        metric_mapping:
          running: 1
          stopped: 0
pgop_broken:
  query: "SELECT * FROM no_such_table"
  metrics:
    - x:
        usage: "GAUGE"
        description: "never"
pgop_writer:
  query: "CREATE TABLE pgop_should_not_exist AS SELECT 1 AS one"
  metrics:
    - one:
        usage: "GAUGE"
        description: "a write attempt"
pgop_on_app:
  query: "SELECT pg_catalog.current_database() AS datname, 1 AS here"
  target_databases: ['app', 'postgres']
  metrics:
    - datname:
        usage: "LABEL"
        description: "Database"
    - here:
        usage: "COUNTER"
        description: "One per database"
pgop_old:
  runonserver: "<14.0.0"
  query: "SELECT 1 AS never"
  metrics:
    - never:
        usage: "GAUGE"
        description: "Only before 14"
EOF
cat >"$T/mon/secret/my-secret-queries/queries" <<'EOF'
pgop_slow:
  query: "SELECT 1 AS slow FROM pg_catalog.pg_sleep(7)"
  metrics:
    - slow:
        usage: "GAUGE"
        description: "past the statement timeout"
EOF

cat >"$T/cluster.json" <<EOF
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"$C","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":2,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "postgresql":{"parameters":{"shared_buffers":"16MB"}},
  "bootstrap":{"initdb":{"database":"app","owner":"app"}},
  "monitoring":{"metricsQueriesTTL":"0s",
    "customQueriesConfigMap":[{"name":"my-queries","key":"custom.yaml"}],
    "customQueriesSecret":[{"name":"my-secret-queries","key":"queries"}]},
  "storage":{"size":"1Gi"}},
 "status":{"instanceNames":["$C-1","$C-2"],"targetPrimary":"$C-1","currentPrimary":"",
  "firstRecoverabilityPoint":"2026-12-01T10:00:00Z","lastSuccessfulBackup":"2026-12-06T23:30:05Z"}}
EOF
"$PGOP_BIN" bootstrap "$T/pgop"
chown -R postgres: "$T"
AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)
common() {
	echo --pgdata "$T/i$1/pgdata" --controller-dir "$T/i$1/controller" --certs-dir "$T/certs" \
		--secrets-dir "$T/secrets" --cluster-file "$T/cluster.json" --pod-name "$C-$1" \
		--cluster-name "$C"
}
CURL=(curl -sS --max-time 20)

# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance init $(common 1) >"$T/init1.log" 2>&1 ||
	{ cat "$T/init1.log" >&2; e2e_fail "instance init"; }
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 1) --port "$P1" --status-listen "127.0.0.1:$S1" \
	--metrics-listen "127.0.0.1:$M1" --monitoring-dir "$T/mon" >"$T/run1.log" 2>&1 &
PIDS+=($!)
e2e_wait_for "curl -skf https://127.0.0.1:$S1/readyz" 60 || tail -20 "$T/run1.log" >&2
scrape() { "${CURL[@]}" "http://127.0.0.1:$1/metrics"; }
has_up() { grep -q "^cnpg_collector_up{cluster=\"$C\"} 1$" <<<"$(scrape "$M1")"; }
e2e_wait_for has_up 30
t0=$(date +%s%N)
scrape "$M1" >"$T/m1.txt"
ms=$((($(date +%s%N) - t0) / 1000000))
e2e_log "first scrape: $ms ms, $(wc -l <"$T/m1.txt") lines"
m() { grep -qE "^$1( |\{)" "$T/m1.txt"; }

check "Content-Type is the text format 0.0.4" \
	grep -qi '^content-type: text/plain; version=0.0.4' <("${CURL[@]}" -D - -o /dev/null "http://127.0.0.1:$M1/metrics")
# promtool's lint: nothing but the naming conventions CloudNativePG's own names
# break (counters without _total, gauges named *_total, errorUserQueries); a
# parse error ("error while ...") or any other finding fails.
promtool_ok() { # promtool_ok FILE
	"$PROM_BIN/promtool" check metrics <"$1" >"$1.lint" 2>&1
	test -z "$(grep -vE '(should (not )?have "_(total|count)" suffix|should be written in .snake_case.)' "$1.lint")"
}
no_dup_series() { test -z "$(grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort | uniq -d)"; }
check "promtool check metrics accepts the exposition" promtool_ok "$T/m1.txt"
check "no series twice" no_dup_series "$T/m1.txt"
check "cnpg_collector_up{cluster} 1" grep -q "^cnpg_collector_up{cluster=\"$C\"} 1$" "$T/m1.txt"
check "cnpg_collector_postgres_version{full=\"15.x\",cluster}" \
	grep -qE "^cnpg_collector_postgres_version\{full=\"15\.[0-9]+\",cluster=\"$C\"\} 15\.[0-9]+$" "$T/m1.txt"
check "cnpg_collector_sync_replicas{value=observed} 0 on the primary" \
	grep -q '^cnpg_collector_sync_replicas{value="observed"} 0$' "$T/m1.txt"
check "cnpg_collector_fencing_on 0" grep -q '^cnpg_collector_fencing_on 0$' "$T/m1.txt"
check "cnpg_collector_pg_wal{value=count} > 0" \
	awk '/^cnpg_collector_pg_wal\{value="count"\}/ { ok = $2 > 0 } END { exit !ok }' "$T/m1.txt"
check "cnpg_collector_pg_wal{value=max} = max_wal_size / segment (1024 MB / 16 MB = 64)" \
	grep -q '^cnpg_collector_pg_wal{value="max"} 64$' "$T/m1.txt"
check "cnpg_collector_pg_wal_archive_status ready and done" \
	test "$(grep -c "^cnpg_collector_pg_wal_archive_status{" "$T/m1.txt")" = 2
check "cnpg_collector_wal_records{stats_reset} (pg_stat_wal)" m cnpg_collector_wal_records
# the backup times come from the Cluster's status (the reconciler writes them), as
# CloudNativePG's collector reads them; no failed backup: 0
check "cnpg_collector_collections_total, duration, the backup times of the Cluster's status" \
	bash -c "grep -q '^cnpg_collector_collections_total ' '$T/m1.txt' &&
		grep -q '^cnpg_collector_collection_duration_seconds{collector=\"Collect.up\"}' '$T/m1.txt' &&
		grep -q '^cnpg_collector_last_available_backup_timestamp $(date -ud 2026-12-06T23:30:05Z +%s)$' '$T/m1.txt' &&
		grep -q '^cnpg_collector_first_recoverability_point $(date -ud 2026-12-01T10:00:00Z +%s)$' '$T/m1.txt' &&
		grep -q '^cnpg_collector_last_failed_backup_timestamp 0$' '$T/m1.txt'"
for name in cnpg_backends_total cnpg_backends_max_tx_duration_seconds cnpg_backends_waiting_total \
	cnpg_pg_database_size_bytes cnpg_pg_database_xid_age cnpg_pg_postmaster_start_time \
	cnpg_pg_replication_lag cnpg_pg_replication_in_recovery cnpg_pg_replication_is_wal_receiver_up \
	cnpg_pg_replication_streaming_replicas cnpg_pg_stat_archiver_archived_count \
	cnpg_pg_stat_bgwriter_checkpoints_timed cnpg_pg_stat_bgwriter_buffers_alloc \
	cnpg_pg_stat_database_xact_commit cnpg_pg_stat_database_blks_hit cnpg_pg_settings_setting \
	cnpg_pg_extensions_update_available cnpg_collector_lo_pages; do
	check "default query metric $name" m "$name"
done
check "cnpg_pg_stat_checkpointer (PostgreSQL 17+) absent on 15 (runonserver)" \
	bash -c "! grep -q '^cnpg_pg_stat_checkpointer' '$T/m1.txt'"
check "cnpg_pg_database_size_bytes{datname=\"app\"}" grep -q '^cnpg_pg_database_size_bytes{datname="app"} [0-9]' "$T/m1.txt"
check "cnpg_pg_settings_setting{name=\"max_connections\"} 100" \
	grep -q '^cnpg_pg_settings_setting{name="max_connections"} 100$' "$T/m1.txt"
check "counters typed counter, gauges gauge" bash -c "
	grep -q '^# TYPE cnpg_pg_stat_database_xact_commit counter$' '$T/m1.txt' &&
	grep -q '^# TYPE cnpg_pg_replication_lag gauge$' '$T/m1.txt'"
check "pg_replication on the primary: in_recovery 0" grep -q '^cnpg_pg_replication_in_recovery 0$' "$T/m1.txt"
check "custom query from the ConfigMap: cnpg_pgop_custom_value{kind=\"answer\"} 42" \
	grep -q '^cnpg_pgop_custom_value{kind="answer"} 42$' "$T/m1.txt"
check "MAPPEDMETRIC: cnpg_pgop_custom_state{kind=\"answer\"} 1" \
	grep -q '^cnpg_pgop_custom_state{kind="answer"} 1$' "$T/m1.txt"
check "target_databases: one sample per database" \
	test "$(grep -c '^cnpg_pgop_on_app_here{datname="\(app\|postgres\)"} 1$' "$T/m1.txt")" = 2
check "runonserver <14 skips the query on 15" bash -c "! grep -q '^cnpg_pgop_old' '$T/m1.txt'"
check "a broken query: cnpg_errors_total names it" \
	grep -q '^cnpg_errors_total{errorUserQueries="pgop_broken: .*no_such_table' "$T/m1.txt"
check "a write in a query fails (read-only transaction)" \
	grep -q '^cnpg_errors_total{errorUserQueries="pgop_writer: .*read-only' "$T/m1.txt"
check "a query past the statement timeout fails" \
	grep -q '^cnpg_errors_total{errorUserQueries="pgop_slow: .*statement timeout' "$T/m1.txt"
check "cnpg_last_error 1 and cnpg_collector_last_collection_error 1" bash -c "
	grep -q '^cnpg_last_error 1$' '$T/m1.txt' && grep -q '^cnpg_collector_last_collection_error 1$' '$T/m1.txt'"
check "nothing was written by the writer query" test "$("${AS_PG[@]}" psql -h "$T/i1/controller/run" \
	-p "$P1" -U postgres -Atc "SELECT count(*) FROM pg_class WHERE relname = 'pgop_should_not_exist'")" = 0
check "the exporter connects as cnpg_metrics_exporter (pg_monitor, not superuser)" \
	test "$("${AS_PG[@]}" psql -h "$T/i1/controller/run" -p "$P1" -U postgres -Atc \
	"SELECT rolsuper::text || pg_has_role(oid, 'pg_monitor', 'member')::text FROM pg_roles WHERE rolname = 'cnpg_metrics_exporter'")" = falsetrue
check "404 for another path, 405 for POST" bash -c "
	test \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$M1/nope)\" = 404 &&
	test \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:$M1/metrics)\" = 405"
# /pg/status reports the broken queries for the reconciler's Event (metricsErrors)
pg_status() {
	"${CURL[@]}" --cacert "$T/pki/ca.crt" --cert "$T/pki/operator.crt" --key "$T/pki/operator.key" \
		"https://127.0.0.1:$S1/pg/status"
}
status_errors() { # "source matched" per entry: its error names its cause
	pg_status | jq -r '[.metricsErrors[] | .source + " " +
		(.error | test("no_such_table|read-only|statement timeout") | tostring)] | sort | join(",")'
}
check "/pg/status metricsErrors: the broken, writer and slow queries with their errors" \
	test "$(status_errors)" = "pgop_broken true,pgop_slow true,pgop_writer true"

# ---- the broken query fixed: the error clears; 4 concurrent scrapes -------
sed -i 's/no_such_table/pg_catalog.pg_class LIMIT 0/; s/SELECT \* FROM/SELECT 1 AS x FROM/' \
	"$T/mon/configmap/my-queries/custom.yaml"
printf 'pgop_slow:\n  query: "SELECT 1 AS slow"\n  metrics:\n    - slow:\n        usage: GAUGE\n        description: fast now\n' \
	>"$T/mon/secret/my-secret-queries/queries"
sed -i '/^pgop_writer:/,/a write attempt"/d' "$T/mon/configmap/my-queries/custom.yaml"
scrape "$M1" >"$T/m2.txt"
check "fixed queries: cnpg_last_error 0, no cnpg_errors_total" bash -c "
	grep -q '^cnpg_last_error 0$' '$T/m2.txt' && ! grep -q '^cnpg_errors_total{' '$T/m2.txt' &&
	grep -q '^cnpg_collector_last_collection_error 0$' '$T/m2.txt' &&
	grep -q '^cnpg_pgop_slow_slow 1$' '$T/m2.txt'"
check "fixed queries: no metricsErrors in /pg/status" test "$(pg_status | jq -c .metricsErrors)" = null
SCRAPERS=()
for i in 1 2 3 4; do
	scrape "$M1" >"$T/c$i.txt" &
	SCRAPERS+=($!)
done
wait "${SCRAPERS[@]}"
check "4 concurrent scrapes all answered with the collector up" bash -c "
	for i in 1 2 3 4; do grep -q '^cnpg_collector_up{cluster=\"$C\"} 1$' '$T/c'\$i.txt || exit 1; done"

# ---- the cache: metricsQueriesTTL 1h ------------------------------------------
sed -i 's/"metricsQueriesTTL":"0s"/"metricsQueriesTTL":"1h"/' "$T/cluster.json"
sleep 2.5 # the watcher (file mtime) and a tick
scrape "$M1" >/dev/null
scrape "$M1" >"$T/m3.txt"
check "TTL 1h: the second scrape is a cache hit" bash -c "
	grep -q '^cnpg_cache_miss 0$' '$T/m3.txt' && grep -qE '^cnpg_cache_hits [1-9]' '$T/m3.txt'"

# ---- a replica --------------------------------------------------------------
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance join $(common 2) --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/join2.log" 2>&1 || { tail -20 "$T/join2.log" >&2; e2e_fail "join"; }
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 2) --port "$P2" --status-listen "127.0.0.1:$S2" \
	--metrics-listen "127.0.0.1:$M2" --monitoring-dir "$T/mon" --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/run2.log" 2>&1 &
PIDS+=($!)
RUN2=$!
sed -i 's/"metricsQueriesTTL":"1h"/"metricsQueriesTTL":"0s"/' "$T/cluster.json"
rep_up() { grep -q '^cnpg_pg_replication_is_wal_receiver_up 1$' <<<"$(scrape "$M2")"; }
e2e_wait_for rep_up 60 || tail -20 "$T/run2.log" >&2
scrape "$M2" >"$T/r.txt"
check "replica: in_recovery 1, WAL receiver up, lag reported" bash -c "
	grep -q '^cnpg_pg_replication_in_recovery 1$' '$T/r.txt' &&
	grep -q '^cnpg_pg_replication_is_wal_receiver_up 1$' '$T/r.txt' &&
	grep -qE '^cnpg_pg_replication_lag [0-9]' '$T/r.txt'"
check "replica: no primary-only query (pg_stat_replication), no sync_replicas" bash -c "
	! grep -q '^cnpg_pg_stat_replication_' '$T/r.txt' && ! grep -q '^cnpg_collector_sync_replicas' '$T/r.txt'"
prim_sees() { grep -q '^cnpg_pg_replication_streaming_replicas 1$' <<<"$(scrape "$M1")"; }
e2e_wait_for prim_sees 20
scrape "$M1" >"$T/m4.txt"
check "primary: streaming_replicas 1 and pg_stat_replication of $C-2" bash -c "
	grep -q '^cnpg_pg_replication_streaming_replicas 1$' '$T/m4.txt' &&
	grep -q '^cnpg_pg_stat_replication_replay_diff_bytes{usename=\"streaming_replica\",application_name=\"$C-2\"' '$T/m4.txt'"
check "replica exposition passes promtool" promtool_ok "$T/r.txt"
# CloudNativePG's Grafana dashboard (shipped by the chart) finds every cnpg_*
# metric it queries (the primary with its replica, and the replica)
dash_names() {
	grep -o 'cnpg_[a-zA-Z0-9_]*[a-zA-Z0-9]' "$REPO/charts/pgop/files/grafana-dashboard.json" |
		grep -v '^cnpg_pg_stat$' | sort -u
}
dash_missing() {
	local n missing=""
	for n in $(dash_names); do
		grep -qE "^$n( |\{)" "$T/m4.txt" "$T/r.txt" || missing="$missing $n"
	done
	[[ -z $missing ]] || e2e_log "not exported:$missing"
	[[ -z $missing && $(dash_names | wc -l) -gt 30 ]]
}
check "every cnpg_* metric of CloudNativePG's Grafana dashboard is exported" dash_missing


# ---- a real Prometheus scrapes both instances (loopback, static targets) ----
PP=$((base + 6))
mkdir -p "$T/prom"
cat >"$T/prom/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: pgop-instances
    static_configs: [{targets: ["127.0.0.1:$M1", "127.0.0.1:$M2"]}]
EOF
"$PROM_BIN/prometheus" --config.file="$T/prom/prometheus.yml" --storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PP" >"$T/prom/log" 2>&1 &
PIDS+=($!)
promq() { # promq QUERY: the result vector as "instance value" lines
	curl -sS --max-time 5 "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | "\(.metric.instance) \(.value[1])"' | sort
}
targets_up() { test "$(promq 'up == 1' | wc -l)" = 2; }
e2e_wait_for targets_up 60 || tail -5 "$T/prom/log" >&2
check "Prometheus: both instance targets up" targets_up
both_up() { test "$(promq 'cnpg_collector_up == 1' | wc -l)" = 2; }
e2e_wait_for both_up 15
check "Prometheus: cnpg_collector_up 1 for both" both_up
check "Prometheus: in_recovery 1 for the replica only (matches the roles)" \
	test "$(promq cnpg_pg_replication_in_recovery)" = "$(printf '127.0.0.1:%s 0\n127.0.0.1:%s 1' "$M1" "$M2")"
check "Prometheus: replication lag of the replica is a number" \
	test "$(promq "cnpg_pg_replication_lag{instance=\"127.0.0.1:$M2\"} >= 0" | wc -l)" = 1

# ---- TLS (spec.monitoring.tls.enabled): the replica started again with it ----
kill -TERM "$RUN2"
for _ in $(seq 1 100); do kill -0 "$RUN2" 2>/dev/null || break; sleep 0.1; done
sed -i 's/"monitoring":{/"monitoring":{"tls":{"enabled":true},/' "$T/cluster.json"
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 2) --port "$P2" --status-listen "127.0.0.1:$S2" \
	--metrics-listen "127.0.0.1:$M2" --monitoring-dir "$T/mon" --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/run2b.log" 2>&1 &
PIDS+=($!)
tls_up() { # the whole body first: grep -q closing the pipe early fails curl (pipefail)
	local body
	body=$("${CURL[@]}" --cacert "$T/pki/ca.crt" "https://127.0.0.1:$M2/metrics") &&
		grep -q '^cnpg_collector_up{cluster="mtest"} 1$' <<<"$body"
}
e2e_wait_for tls_up 60 || tail -5 "$T/run2b.log" >&2
check "TLS: /metrics over HTTPS with the instance's server certificate" tls_up
check "TLS: plain HTTP is refused" bash -c "! curl -s --max-time 5 http://127.0.0.1:$M2/metrics | grep -q cnpg_collector_up"

# the server certificate rotated (same CA, new key): served at the next tick
served_fp() {
	openssl s_client -connect "127.0.0.1:$M2" </dev/null 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
old_fp=$(served_fp)
(
	cd "$T/pki" || exit 1
	certtool --generate-privkey --key-type=ecdsa --outfile server2.key 2>/dev/null
	certtool --generate-certificate --load-privkey server2.key --load-ca-certificate ca.crt \
		--load-ca-privkey ca.key --template server.tmpl --outfile server2.crt 2>/dev/null
)
new_fp=$(openssl x509 -noout -fingerprint -sha256 -in "$T/pki/server2.crt")
cp "$T/pki/server2.key" "$T/certs/server/tls.key.new" && cp "$T/pki/server2.crt" "$T/certs/server/tls.crt.new"
mv "$T/certs/server/tls.key.new" "$T/certs/server/tls.key" && mv "$T/certs/server/tls.crt.new" "$T/certs/server/tls.crt"
chown -R postgres: "$T/certs"
rotated() { test "$(served_fp)" = "$new_fp"; }
e2e_wait_for rotated 15
check "TLS: a rotated server certificate is served without a restart" \
	bash -c "test -n '$old_fp' -a '$old_fp' != '$new_fp' && test \"\$(openssl s_client -connect 127.0.0.1:$M2 </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256)\" = '$new_fp'"
check "TLS: still scraping after the rotation" tls_up

echo "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]]
