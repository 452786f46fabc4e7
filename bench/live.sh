#!/usr/bin/env bash
# e2e-timeout: 1500
# Benchmark (not a test): latency of the aggregated live API with 1 and with 10
# three-instance Clusters - p50/p99 of `kubectl get clusters.live -A` (Table, through
# kube-apiserver's aggregator) and of the same request sent straight to pgop's port
# (front-proxy client certificate, system:masters: no SubjectAccessReview) - plus the
# controller's VmRSS before the Clusters and after; the first request after the live
# API's 30 s interest window (it waits for the instances), pgop's own fetch and wait
# histograms, and the 10-Cluster p50/p99 again with one instance's network cut. Prints
# METRIC lines; fails only when a Cluster does not become healthy. pgop installed with
# its chart (one replica).
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
# the controller's Pod and process are looked up at each reading: the "after" reading of
# the first run came out empty because the process it had read "before" was gone
cpod() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 --field-selector=status.phase=Running \
	-o jsonpath='{.items[0].metadata.name}'; }
pod=$(cpod)
ip=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.podIP}')
rss() { # VmRSS (kB) of the controller (the node agent runs containers as host processes)
	local p pid v
	p=$(cpod)
	pid=$(cat "$PGOP_E2E_STATE/agent/run/${ns}_${p}_controller.pid" 2>/dev/null) ||
		{ e2e_log "rss: no pid file for pod '$p'"; echo 0; return; }
	v=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status" 2>/dev/null)
	[ -n "$v" ] || { e2e_log "rss: pod $p pid $pid has no /proc entry"; v=0; }
	e2e_log "controller $p pid $pid: $(awk '/^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem|Threads):/ { printf "%s %s ", $1, $2 }' "/proc/$pid/status" 2>/dev/null)"
	echo "$v"
}
restarts() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 \
	-o jsonpath='{range .items[*]}{.status.containerStatuses[0].restartCount}{" "}{end}'; }
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
# pgop's own view: its per-route latency histogram (pgop_http_request_duration_seconds)
metrics() { # on whichever of the controller's ports serves it (the probe port)
	local p
	for p in $(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.spec.containers[0].ports[*].containerPort}'); do
		curl -sf --max-time 5 "http://$ip:$p/metrics" 2>/dev/null && return 0
		curl -sfk --max-time 5 "https://$ip:$p/metrics" 2>/dev/null && return 0
	done
	true
}
live_sum_count() { # the "/apis*" route's latency sum (s) and count from the metrics text
	awk '/^pgop_http_request_duration_seconds_(sum|count)\{path="\/apis\*"/ {
		if ($1 ~ /_sum/) s = $2; else c = $2 } END { printf "%s %s\n", s + 0, c + 0 }'
}
raw() { # the same Table request through kube-apiserver's aggregator, without kubectl
	curl -s --cacert "$PGOP_E2E_CA" --cert "$P/admin.crt" --key "$P/admin.key" -o /dev/null \
		--max-time 10 -H "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json" \
		"$PGOP_E2E_APISERVER/apis/$G/v1/clusters"
}
hist_sum_count() { # NAME: the histogram's sum (s), count and count <= 1 ms from the metrics text
	awk -v n="$1" '$1 == n "_sum" { s = $2 } $1 == n "_count" { c = $2 }
		index($1, n "_bucket{le=\"0.001\"}") == 1 { f = $2 } END { printf "%s %s %s\n", s + 0, c + 0, f + 0 }'
}
measure() { # LABEL
	: >"$tmp/agg" && : >"$tmp/dir" && : >"$tmp/raw" && : >"$tmp/crd"
	# the first request after the instances were last asked for more than the interest
	# window ago (30 s) waits for their fetch: printed on its own, not in the samples
	echo "METRIC live_get_clusters_aggregator_${1}_first_ms=$(ms kubectl get clusters.live -A)"
	metrics >"$tmp/m0"
	read -r s0 c0 < <(live_sum_count <"$tmp/m0")
	for _ in $(seq 1 "$N"); do ms kubectl get clusters.live -A >>"$tmp/agg"; done
	read -r s1 c1 < <(metrics | live_sum_count)
	for _ in $(seq 1 "$N"); do ms direct >>"$tmp/dir"; done
	metrics >"$tmp/m1"
	for _ in $(seq 1 "$N"); do ms raw >>"$tmp/raw"; done
	for _ in $(seq 1 "$N"); do ms kubectl get clusters.postgresql -A >>"$tmp/crd"; done
	read -r a50 a99 < <(pct "$tmp/agg")
	read -r d50 d99 < <(pct "$tmp/dir")
	read -r r50 r99 < <(pct "$tmp/raw")
	read -r k50 k99 < <(pct "$tmp/crd")
	echo "METRIC live_get_clusters_aggregator_${1}_p50_ms=$a50"
	echo "METRIC live_get_clusters_aggregator_${1}_p99_ms=$a99"
	echo "METRIC live_get_clusters_direct_${1}_p50_ms=$d50"
	echo "METRIC live_get_clusters_direct_${1}_p99_ms=$d99"
	# where the aggregator figure goes: the raw request through kube-apiserver (no kubectl),
	# and kubectl's own cost on the CRD (same kubectl, no aggregator, no pgop)
	echo "METRIC live_get_clusters_aggregator_raw_${1}_p50_ms=$r50"
	echo "METRIC live_get_clusters_aggregator_raw_${1}_p99_ms=$r99"
	echo "METRIC crd_get_clusters_kubectl_${1}_p50_ms=$k50"
	echo "METRIC crd_get_clusters_kubectl_${1}_p99_ms=$k99"
	# pgop's time for the live requests the kubectl runs made (discovery included)
	awk -v s0="$s0" -v s1="$s1" -v c0="$c0" -v c1="$c1" -v l="$1" 'BEGIN { if (c1 > c0)
		printf "METRIC live_pgop_server_%s_requests=%d\nMETRIC live_pgop_server_%s_mean_ms=%.1f\n",
			l, c1 - c0, l, (s1 - s0) * 1000 / (c1 - c0) }'
	# inside pgop: one Cluster's instance fetch (background or waited for) and what the
	# requests of the kubectl and direct runs waited for snapshots
	local h
	for h in fetch wait; do
		read -r hs0 hc0 hf0 < <(hist_sum_count "pgop_live_${h}_duration_seconds" <"$tmp/m0")
		read -r hs1 hc1 hf1 < <(hist_sum_count "pgop_live_${h}_duration_seconds" <"$tmp/m1")
		awk -v a="$hs0" -v b="$hs1" -v c="$hc0" -v d="$hc1" -v f="$hf0" -v g="$hf1" -v l="$1" -v h="$h" 'BEGIN {
			if (d > c) printf "METRIC live_pgop_%s_%s_count=%d\nMETRIC live_pgop_%s_%s_mean_ms=%.1f\nMETRIC live_pgop_%s_%s_over_1ms=%d\n",
				h, l, d - c, h, l, (b - a) * 1000 / (d - c), h, l, (d - c) - (g - f) }'
	done
	e2e_log "slowest kubectl runs (ms): $(sort -n "$tmp/agg" | tail -3 | tr '\n' ' ')"
	# connections to pgop's port seen from the host (kube-apiserver's aggregator and curl):
	# many TIME-WAIT = a new TLS connection per request
	e2e_log "sockets to $ip:9443: $(ss -tan 2>/dev/null | awk -v d="$ip:9443" '$5 == d { n[$1]++ } END { for (s in n) printf "%s=%d ", s, n[s] }')"
	# one kubectl run's requests, with their latencies
	kubectl get clusters.live -A -v=6 2>&1 >/dev/null | grep -Eo '(GET|POST) https[^ ]+ [0-9]+ [A-Za-z ]+ in [0-9]+ milliseconds' |
		sed 's/^/    /' >&2 || true
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
sleep 31 # past the live API's interest window: the first request of measure is a cold one
measure 1
names=(b1)
for i in $(seq 2 10); do cluster "b$i"; names+=("b$i"); done
e2e_wait_for "all_healthy ${names[*]}" 1200 5 ||
	e2e_fail "not all healthy: $(kubectl -n "$ns" get cluster -o custom-columns=N:.metadata.name,R:.status.readyInstances --no-headers | tr '\n' ' ')"
echo "METRIC live_controller_rss_kb_10_clusters=$(rss)"
sleep 31
measure 10
# one instance unreachable (the node agent's partition of b1-2: no Pod and not the
# controller reaches it): it may add at most the 2 s fetch timeout, and only to the
# first request that finds it gone
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
"$AGENT" --state-dir "$PGOP_E2E_STATE/agent" partition "$ns/b1-2" on >/dev/null || e2e_fail "partition b1-2"
: >"$tmp/cut"
for _ in $(seq 1 "$N"); do ms kubectl get clusters.live -A >>"$tmp/cut"; done
read -r u50 u99 < <(pct "$tmp/cut")
echo "METRIC live_get_clusters_aggregator_10_one_unreachable_p50_ms=$u50"
echo "METRIC live_get_clusters_aggregator_10_one_unreachable_p99_ms=$u99"
kubectl get clusters.live -A --no-headers | awk '$2 == "b1"' >&2
"$AGENT" --state-dir "$PGOP_E2E_STATE/agent" partition "$ns/b1-2" off >/dev/null || e2e_fail "partition off b1-2"
echo "METRIC live_controller_rss_kb_after=$(rss)"
echo "METRIC live_controller_restarts=$(restarts | xargs)"
e2e_log "live bench done ($N samples each)"
