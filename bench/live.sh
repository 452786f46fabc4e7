#!/usr/bin/env bash
# e2e-timeout: 1500
# Benchmark (not a test): latency of the aggregated live API with 1 and with 10
# three-instance Clusters - p50/p99 of `kubectl get clusters.live -A` (Table, through
# kube-apiserver's aggregator) and of the same request sent straight to pgop's port
# (front-proxy client certificate, system:masters: no SubjectAccessReview) - plus the
# controller's VmRSS before the Clusters and after. Prints METRIC lines; fails only when
# a Cluster does not become healthy. pgop installed with its chart (one replica).
#   tests/e2e/run.sh "$PWD/build" "$PWD/bench/live.sh"   (BENCH_SAMPLES=50)
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
export PGOP_BIN
e2e_up
e2e_agent_up
CHART=$(cd "$E2E_DIR/../../charts/pgop" && pwd)
. "$E2E_DIR/helm_lib.sh"
N=${BENCH_SAMPLES:-50}
ns=$(e2e_ns blive)
tmp=$(mktemp -d)
G=live.postgresql.cnpg.io
cleanup() {
	kubectl -n "$ns" delete cluster --all --wait=false >/dev/null 2>&1 || true
	helm uninstall r1 -n "$ns" --timeout 60s >/dev/null 2>&1 || true
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT
helm install r1 "$CHART" -n "$ns" --set "watchNamespaces={$ns}" --set replicas=1 \
	--wait --timeout 180s >"$tmp/install.out" 2>&1 || { cat "$tmp/install.out"; e2e_fail "helm install"; }
avail() { kubectl get apiservice "v1.$G" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}'; }
e2e_wait_for '[ "$(avail)" = True ]' 120 1 || e2e_fail "APIService not Available"
pod=$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 -o jsonpath='{.items[0].metadata.name}')
ip=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.podIP}')
rss() { # VmRSS (kB) of the controller (the node agent runs containers as host processes)
	local pid
	pid=$(cat "$PGOP_E2E_STATE/agent/run/${ns}_${pod}_controller.pid" 2>/dev/null) || { echo 0; return; }
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status"
}
echo "METRIC live_controller_rss_kb_before=$(rss)"

P=$PGOP_E2E_STATE/pki
direct() {
	curl -sk --cert "$P/front-proxy-client.crt" --key "$P/front-proxy-client.key" -o /dev/null \
		-w '%{http_code}' --max-time 10 -H "X-Remote-User: admin" -H "X-Remote-Group: system:masters" \
		-H "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json" \
		"https://$ip:9443/apis/$G/v1/clusters"
}
ms() { # CMD...: wall milliseconds of one run
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	echo $((($(date +%s%N) - t0) / 1000000))
}
pct() { # FILE: "p50 p99" of the numbers in FILE
	sort -n "$1" | awk '{ v[NR] = $1 } END { p = int(NR * 0.99 + 0.999); if (p < 1) p = 1;
		printf "%d %d\n", v[int((NR + 1) / 2)], v[p] }'
}
measure() { # LABEL
	: >"$tmp/agg" && : >"$tmp/dir"
	for _ in $(seq 1 "$N"); do ms kubectl get clusters.live -A >>"$tmp/agg"; done
	for _ in $(seq 1 "$N"); do ms direct >>"$tmp/dir"; done
	read -r a50 a99 < <(pct "$tmp/agg")
	read -r d50 d99 < <(pct "$tmp/dir")
	echo "METRIC live_get_clusters_aggregator_${1}_p50_ms=$a50"
	echo "METRIC live_get_clusters_aggregator_${1}_p99_ms=$a99"
	echo "METRIC live_get_clusters_direct_${1}_p50_ms=$d50"
	echo "METRIC live_get_clusters_direct_${1}_p99_ms=$d99"
}
cluster() {
	kubectl -n "$ns" apply -f - >/dev/null <<-YAML
	apiVersion: postgresql.cnpg.io/v1
	kind: Cluster
	metadata: {name: $1}
	spec: {instances: 3, storage: {size: 1Gi}}
YAML
}
healthy() { [ "$(kubectl -n "$ns" get cluster "$1" -o jsonpath='{.status.readyInstances}')" = 3 ]; }
all_healthy() { for c in "$@"; do healthy "$c" || return 1; done; }
cluster b1
e2e_wait_for "healthy b1" 300 2 || e2e_fail "b1 not healthy"
e2e_wait_for '[ "$(direct)" = 200 ]' 30 1 || e2e_fail "pgop's port does not answer: $(direct)"
measure 1
names=(b1)
for i in $(seq 2 10); do cluster "b$i"; names+=("b$i"); done
e2e_wait_for "all_healthy ${names[*]}" 1200 5 ||
	e2e_fail "not all healthy: $(kubectl -n "$ns" get cluster -o custom-columns=N:.metadata.name,R:.status.readyInstances --no-headers | tr '\n' ' ')"
measure 10
echo "METRIC live_controller_rss_kb_after=$(rss)"
e2e_log "live bench done ($N samples each)"
