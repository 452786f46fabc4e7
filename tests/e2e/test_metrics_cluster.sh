#!/usr/bin/env bash
# e2e-timeout: 420
# Observability in the local Kubernetes cluster (issue 27): pgop installed with its Helm
# chart (default values: two replicas, leader election), a 3-instance Cluster with
# spec.monitoring (metricsQueriesTTL 0s, a custom queries ConfigMap), and a real
# Prometheus (tests/e2e/build-prometheus.sh) run by the test on the host, finding its
# targets through Kubernetes service discovery (kubernetes_sd_configs, role pod) against
# the local API server with a ServiceAccount's token (a Role: pods get/list/watch):
#  - /api/v1/targets: the 3 instances' port `metrics` (9187) and both operator pods (the
#    chart's prometheus.io/* annotations: the probe port) are up;
#  - queries match the live API (kubectl get --raw .../live.postgresql.cnpg.io/.../status):
#    cnpg_collector_up 1 for every reachable instance, cnpg_pg_replication_in_recovery 0
#    on the live primary only, the primary's cnpg_pg_stat_replication_replay_diff_bytes of
#    a replica whose replay is paused after a write burst equals the live lagBytes (both
#    read pg_stat_replication; tolerance: the WAL written meanwhile), the operator's
#    pgop_cluster_ready_instances / timeline equal the live readyInstances / timeline,
#    and its reconcile rate (controller_runtime_reconcile_total) is positive;
#  - a switchover (live API switchover subresource): cnpg_pg_replication_in_recovery of
#    the new primary is 0 within one scrape interval of the live API naming it (+1 s of
#    polling), and the role label (relabeled from the Pod label cnpg.io/instanceRole)
#    follows the Pod label within Prometheus's service-discovery update period (5 s) plus
#    one scrape interval; the old primary is in recovery again;
#  - the custom queries ConfigMap adds a metric on every instance; a broken query added to
#    it (the node agent refreshes ConfigMap volumes every 15 s) raises cnpg_errors_total
#    and cnpg_last_error on every instance while the other metrics keep flowing, and the
#    Cluster gets ONE Warning Event MetricsQueryFailed (count 1) for it, not one per scrape.
# METRIC lines: targets up, seconds for the metrics and labels to follow the switchover,
# the Event count.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
PROM_BIN=$("$E2E_DIR/build-prometheus.sh") || e2e_fail "prometheus could not be built"
command -v jq >/dev/null || e2e_fail "jq is required"

SCRAPE_S=2 # the scrape interval
SD_S=5     # Prometheus's discovery manager sends target updates at most every 5 s
C=mc
G=live.postgresql.cnpg.io
prom_pid=
metrics_cleanup() {
	local rc=$?
	set +e
	if [ -n "$prom_pid" ]; then
		[ $rc -eq 0 ] || tail -n 20 "$tmp/prom/log" >&2
		kill -TERM "$prom_pid" 2>/dev/null
		wait "$prom_pid" 2>/dev/null
	fi
	(exit $rc)
	cluster_cleanup
}
cluster_setup mc
trap metrics_cleanup EXIT
cluster_crd
cluster_helm_install

# ---- the Cluster, its custom queries ---------------------------------------------
queries_good='pgop_e2e_answer:
  query: "SELECT 42 AS value"
  metrics:
    - value: {usage: GAUGE, description: "The answer, from a custom query."}'
queries_broken="$queries_good
pgop_e2e_broken:
  query: \"SELECT value FROM pgop_e2e_no_such_table\"
  metrics:
    - value: {usage: GAUGE, description: \"Never collected.\"}"
k create configmap mc-queries --from-literal=queries.yaml="$queries_good" >/dev/null
k apply -f - >/dev/null <<-YAML
	apiVersion: postgresql.cnpg.io/v1
	kind: Cluster
	metadata: {name: $C}
	spec:
	  instances: 3
	  storage: {size: 1Gi}
	  monitoring:
	    metricsQueriesTTL: 0s
	    customQueriesConfigMap: [{name: mc-queries, key: queries.yaml}]
YAML

# ---- Prometheus: Kubernetes service discovery with a ServiceAccount's token --------
k create serviceaccount prometheus >/dev/null
for n in "$ns" "$opns"; do
	kubectl -n "$n" create role prometheus-sd --verb=get,list,watch --resource=pods >/dev/null
	kubectl -n "$n" create rolebinding prometheus-sd --role=prometheus-sd \
		--serviceaccount="$ns:prometheus" >/dev/null
done
mkdir -p "$tmp/prom"
k create token prometheus --duration=1h >"$tmp/prom/token" || e2e_fail "no token for the ServiceAccount"
PP=$(e2e_free_ports 1) || e2e_fail "no free port"
sd() { # sd NAMESPACE: one kubernetes_sd_configs entry
	cat <<-EOF
		      - role: pod
		        api_server: $PGOP_E2E_APISERVER
		        namespaces: {names: [$1]}
		        authorization: {credentials_file: $tmp/prom/token}
		        tls_config: {ca_file: $PGOP_E2E_CA}
	EOF
}
cat >"$tmp/prom/prometheus.yml" <<EOF
global: {scrape_interval: ${SCRAPE_S}s, scrape_timeout: ${SCRAPE_S}s, evaluation_interval: ${SCRAPE_S}s}
scrape_configs:
  - job_name: pgop-instances
    kubernetes_sd_configs:
$(sd "$ns")
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_phase], regex: Running, action: keep}
      - {source_labels: [__meta_kubernetes_pod_label_cnpg_io_cluster], regex: $C, action: keep}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
      - {source_labels: [__meta_kubernetes_pod_label_cnpg_io_instanceRole], target_label: role}
  - job_name: pgop-operator
    kubernetes_sd_configs:
$(sd "$opns")
    relabel_configs:
      - {source_labels: [__meta_kubernetes_pod_phase], regex: Running, action: keep}
      - {source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape], regex: "true", action: keep}
      - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: probes, action: keep}
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        regex: '([^:]+)(?::\d+)?;(\d+)'
        replacement: '\$1:\$2'
        target_label: __address__
      - {source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path], regex: (.+), target_label: __metrics_path__}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
EOF
"$PROM_BIN/promtool" check config "$tmp/prom/prometheus.yml" >/dev/null 2>"$tmp/prom/check" ||
	e2e_fail "promtool check config: $(cat "$tmp/prom/check")"
"$PROM_BIN/prometheus" --config.file="$tmp/prom/prometheus.yml" --storage.tsdb.path="$tmp/prom/data" \
	--web.listen-address="127.0.0.1:$PP" >"$tmp/prom/log" 2>&1 &
prom_pid=$!

promq() { # promq QUERY: the result vector as "pod value" lines, sorted
	curl -sS --max-time 5 "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | "\(.metric.pod // "-") \(.value[1])"' | sort
}
promv() { promq "$1" | awk 'NR == 1 { print $2 }'; } # the first value
live() { kubectl get --raw "/apis/$G/v1/namespaces/$ns/clusters/$C/status"; }
# "pod role" lines of the live API's members, sorted
live_roles() { live | jq -r '.status.members[] | "\(.metadata.name) \(.status.role)"' | sort; }

wait_healthy 3 240
e2e_log "Cluster $C healthy with 3 instances"

# ---- targets --------------------------------------------------------------------------
targets() { # "job pod health" lines of the active targets
	curl -sS --max-time 5 "http://127.0.0.1:$PP/api/v1/targets?state=active" |
		jq -r '.data.activeTargets[] | "\(.labels.job) \(.labels.pod) \(.health)"' | sort
}
all_up() {
	[ "$(targets | grep -c ' up$')" = 5 ] &&
		[ "$(targets | grep -c '^pgop-instances ')" = 3 ] && [ "$(targets | grep -c '^pgop-operator ')" = 2 ]
}
e2e_wait_for all_up 60 1 || e2e_fail "targets: $(targets | tr '\n' ';')"
e2e_log "targets: $(targets | tr '\n' ';')"
echo "METRIC metrics_targets_up=$(targets | grep -c ' up$')"
for p in $C-1 $C-2 $C-3; do
	e2e_assert_contains "$(targets)" "pgop-instances $p up" "instance target $p"
done

# ---- values that match the live API -------------------------------------------------
primary=$(live | jq -r .status.primary)
e2e_assert_eq "$primary" "$(status currentPrimary)" "live primary = status.currentPrimary"
reachable=$(live | jq -r '[.status.members[] | select(.status.reachable)] | length')
e2e_assert_eq 3 "$reachable" "live API: every instance reachable"
e2e_wait_for '[ "$(promq "cnpg_collector_up == 1" | wc -l)" = 3 ]' 20 1 ||
	e2e_fail "cnpg_collector_up: $(promq cnpg_collector_up | tr '\n' ';')"
expect_rec() { # expect_rec PRIMARY: in_recovery lines as they must be
	for p in $C-1 $C-2 $C-3; do
		if [ "$p" = "$1" ]; then echo "$p 0"; else echo "$p 1"; fi
	done
}
e2e_wait_for '[ "$(promq cnpg_pg_replication_in_recovery)" = "$(expect_rec "$primary")" ]' 20 1 ||
	e2e_fail "in_recovery: $(promq cnpg_pg_replication_in_recovery | tr '\n' ';') (primary $primary)"
e2e_log "ok: cnpg_collector_up 1 on 3 instances; in_recovery 0 on the live primary $primary only"
# the operator: per-Cluster gauges equal the live API's, and it reconciles
op_ready() { promv "max(pgop_cluster_ready_instances{namespace=\"$ns\",name=\"$C\"})"; }
e2e_wait_for '[ "$(op_ready)" = "$(live | jq -r .status.readyInstances)" ]' 20 1 ||
	e2e_fail "pgop_cluster_ready_instances $(op_ready) vs live $(live | jq -r .status.readyInstances)"
e2e_assert_eq "$(live | jq -r .status.timeline)" \
	"$(promv "max(pgop_cluster_timeline_id{namespace=\"$ns\",name=\"$C\"})")" "pgop_cluster_timeline_id = live timeline"
rate_q='sum(rate(controller_runtime_reconcile_total{job="pgop-operator",controller="cluster"}[20s]))'
e2e_wait_for '[ "$(promv "$rate_q > 0")" != "" ]' 30 1 || e2e_fail "reconcile rate: $(promv "$rate_q")"
e2e_log "ok: operator: ready instances $(op_ready), reconcile rate $(promv "$rate_q")/s"
echo "METRIC metrics_operator_reconcile_rate=$(promv "$rate_q")"

# replication lag: one replica's replay paused, a write burst on the primary
lagging=$(live_roles | awk -v p="$primary" '$1 != p { print $1; exit }')
sql "$lagging" "SELECT pg_wal_replay_pause()" >/dev/null || e2e_fail "cannot pause replay on $lagging"
sql "$primary" "CREATE TABLE burst AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g" \
	>/dev/null || e2e_fail "write burst on $primary"
live_lag() { live | jq -r --arg p "$lagging" '.status.members[] | select(.metadata.name == $p) | .status.lagBytes // 0'; }
prom_lag() {
	promv "cnpg_pg_stat_replication_replay_diff_bytes{pod=\"$primary\",application_name=\"$lagging\"}"
}
lag_agrees() { # both above 1 MB, within 256 kB of each other
	local a b
	a=$(live_lag) b=$(prom_lag)
	b=${b%.*}
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -gt 1000000 ] && [ "$b" -gt 1000000 ] &&
		[ $((a > b ? a - b : b - a)) -lt 262144 ]
}
e2e_wait_for lag_agrees 30 1 || e2e_fail "lag of $lagging: live $(live_lag) B, Prometheus $(prom_lag) B"
e2e_log "ok: lag of $lagging with replay paused: live API $(live_lag) B, Prometheus $(prom_lag) B"
e2e_wait_for '[ "$(promv "cnpg_pg_replication_lag{pod=\"$lagging\"} > 0")" != "" ]' 20 1 ||
	e2e_fail "cnpg_pg_replication_lag of $lagging: $(promq cnpg_pg_replication_lag | tr '\n' ';')"
sql "$lagging" "SELECT pg_wal_replay_resume()" >/dev/null || e2e_fail "cannot resume replay on $lagging"
e2e_wait_for '[ "$(live_lag)" -lt 262144 ] && [ "$(prom_lag | cut -d. -f1)" -lt 262144 ]' 30 1 ||
	e2e_fail "lag after the resume: live $(live_lag) B, Prometheus $(prom_lag) B"

# ---- custom queries: a metric added, then a broken query ------------------------------
e2e_wait_for '[ "$(promq "cnpg_pgop_e2e_answer_value == 42" | wc -l)" = 3 ]' 30 1 ||
	e2e_fail "custom metric: $(promq cnpg_pgop_e2e_answer_value | tr '\n' ';')"
e2e_log "ok: the custom query's cnpg_pgop_e2e_answer_value 42 on 3 instances"
k create configmap mc-queries --from-literal=queries.yaml="$queries_broken" --dry-run=client -o yaml |
	k apply -f - >/dev/null
t0=$(date +%s)
broken_q='cnpg_errors_total{errorUserQueries=~"(?s)pgop_e2e_broken: .*pgop_e2e_no_such_table.*"}'
e2e_wait_for '[ "$(promq "$broken_q" | wc -l)" = 3 ]' 45 1 ||
	e2e_fail "error metric: $(promq cnpg_errors_total | tr '\n' ';')"
e2e_log "ok: $broken_q on 3 instances $(($(date +%s) - t0)) s after the ConfigMap changed"
e2e_assert_eq 3 "$(promq 'cnpg_last_error == 1' | wc -l)" "cnpg_last_error 1 on every instance"
# the other metrics keep flowing: fresh samples of the custom and the default queries
for m in cnpg_pgop_e2e_answer_value cnpg_pg_database_size_bytes cnpg_backends_total cnpg_collector_up; do
	e2e_assert_eq 3 "$(promq "count by (pod) (time() - timestamp($m) < $((2 * SCRAPE_S + 1)))" | wc -l)" \
		"fresh $m on every instance with the broken query"
done
e2e_assert_eq "" "$(promq 'cnpg_pgop_e2e_broken_value')" "the broken query produces no metric"
ev() { # the MetricsQueryFailed Events of the Cluster as "count message" lines
	k get events --field-selector "reason=MetricsQueryFailed,involvedObject.name=$C" -o json |
		jq -r '.items[] | "\(.count) \(.message | gsub("\n"; " "))"'
}
e2e_wait_for '[ -n "$(ev)" ]' 30 1 || e2e_fail "no Event MetricsQueryFailed"
e2e_log "Event: $(ev)"
# many scrapes (every 2 s) and reconciles (every 5 s) later: still one Event, counted once
sleep $((6 * SCRAPE_S))
e2e_assert_eq 1 "$(ev | wc -l)" "one MetricsQueryFailed Event: $(ev)"
e2e_assert_match "$(ev)" "^1 monitoring query pgop_e2e_broken fails on $C-[123].*pgop_e2e_no_such_table" \
	"the Event names the query, an instance and the error, count 1"
echo "METRIC metrics_query_failed_events=$(ev | wc -l)"
echo "METRIC metrics_query_failed_event_count=$(ev | awk '{ n += $1 } END { print n + 0 }')"

# ---- switchover: the metrics and the role labels follow ---------------------------------
target=$(live_roles | awk -v p="$primary" '$1 != p { print $1; exit }')
echo '{"target":"'"$target"'"}' >"$tmp/sw.json"
t_req=$(date +%s%N)
kubectl create --raw "/apis/$G/v1/namespaces/$ns/clusters/$C/switchover" -f "$tmp/sw.json" >/dev/null ||
	e2e_fail "switchover to $target refused"
ms() { echo $((($(date +%s%N) - t_req) / 1000000)); }
t_live= t_rec= t_label= t_role=
deadline=$(($(date +%s) + 90))
while [ -z "$t_live" ] || [ -z "$t_rec" ] || [ -z "$t_label" ] || [ -z "$t_role" ]; do
	[ "$(date +%s)" -lt "$deadline" ] ||
		e2e_fail "switchover not followed in 90 s: live ${t_live:-no} ms, in_recovery ${t_rec:-no} ms, Pod label ${t_label:-no} ms, role label ${t_role:-no} ms"
	[ -n "$t_live" ] || [ "$(live | jq -r .status.primary)" != "$target" ] || t_live=$(ms)
	[ -n "$t_rec" ] || [ "$(promv "cnpg_pg_replication_in_recovery{pod=\"$target\"}")" != 0 ] || t_rec=$(ms)
	[ -n "$t_label" ] || [ "$(k get pod "$target" -o jsonpath='{.metadata.labels.cnpg\.io/instanceRole}')" != primary ] ||
		t_label=$(ms)
	[ -n "$t_role" ] || [ "$(promq 'up{job="pgop-instances",role="primary"}' | awk '{ print $1 }' | tr '\n' ' ')" != "$target " ] ||
		t_role=$(ms)
	sleep 0.2
done
e2e_log "switchover to $target: live API at ${t_live} ms, in_recovery 0 at ${t_rec} ms, Pod label at ${t_label} ms, role label at ${t_role} ms"
rec_follow=$((t_rec - t_live)) role_follow=$((t_role - t_label))
echo "METRIC metrics_switchover_in_recovery_after_live_ms=$rec_follow"
echo "METRIC metrics_switchover_role_label_after_pod_label_ms=$role_follow"
[ "$rec_follow" -le $((SCRAPE_S * 1000 + 1000)) ] ||
	e2e_fail "in_recovery followed the live API after $rec_follow ms (bound: one scrape interval, ${SCRAPE_S} s, + 1 s)"
[ "$role_follow" -le $(((SD_S + SCRAPE_S) * 1000 + 1000)) ] ||
	e2e_fail "the role label followed the Pod label after $role_follow ms (bound: SD update ${SD_S} s + scrape interval ${SCRAPE_S} s + 1 s)"
e2e_wait_for '[ "$(promq cnpg_pg_replication_in_recovery)" = "$(expect_rec "$target")" ]' 60 1 ||
	e2e_fail "in_recovery after the switchover: $(promq cnpg_pg_replication_in_recovery | tr '\n' ';')"
e2e_wait_for '[ "$(promq "up{job=\"pgop-instances\",role=\"replica\"} == 1" | wc -l)" = 2 ]' 30 1 ||
	e2e_fail "replica role labels: $(promq 'up{job="pgop-instances"}' | tr '\n' ';')"
e2e_wait_for '[ "$(promv "max(pgop_cluster_timeline_id{namespace=\"$ns\",name=\"$C\"})")" = "$(live | jq -r .status.timeline)" ]' 30 1 ||
	e2e_fail "timeline after the switchover: operator $(promv "max(pgop_cluster_timeline_id{namespace=\"$ns\",name=\"$C\"})"), live $(live | jq -r .status.timeline)"
e2e_assert_eq 1 "$(ev | wc -l)" "still one MetricsQueryFailed Event after the switchover (same error)"
e2e_log "metrics in the cluster ok"
