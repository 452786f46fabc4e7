#!/usr/bin/env bash
# e2e-timeout: 900
# Benchmark (not a test): CPU used by an idle node agent (tests/e2e/agent) hosting N pods.
# Default: each pod runs `sleep` with an exec readiness and an exec liveness probe every
# 10 s (the instance pods' period) behind one Service. BENCH_CLUSTER=1: what the demo
# runs instead - pgop installed with its chart (2 controller pods) and a Cluster of N
# instances (HTTPS probes, 5 Secret volumes, PVCs, 3 Services each). Once all are
# Ready/healthy and 10 s have passed, the agent's utime+stime+cutime+cstime
# (/proc/PID/stat; children = the exec probes) is read over a window. Prints METRIC
# agent_idle_cpu_pct (% of one core) and the raw ticks.
#   tests/e2e/run.sh "$PWD/build" "$PWD/bench/agent_idle_cpu.sh"
# Environment: BENCH_PODS (3), BENCH_SECONDS (60), BENCH_CLUSTER (0), PGOP_NODE_AGENT
# (binary to measure).
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
N=${BENCH_PODS:-3}
W=${BENCH_SECONDS:-60}
e2e_up
e2e_agent_up
if [ "${BENCH_CLUSTER:-0}" = 1 ]; then
	# shellcheck source=../tests/e2e/cluster_lib.sh
	. "$E2E_DIR/cluster_lib.sh"
	cluster_setup idlecl
	cluster_crd
	cluster_helm_install
	k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: $C}
spec:
  instances: $N
  storage: {size: 1Gi}
EOF
	wait_healthy "$N" 600
else
	ns=$(e2e_ns idlecpu)
	cleanup() {
		kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
		e2e_down
	}
	trap cleanup EXIT
	kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: idle}
spec:
  replicas: $N
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
        - name: main
          image: busybox
          command: [sh, -c, 'exec sleep 100000']
          ports: [{name: p, containerPort: 8080}]
          readinessProbe: {exec: {command: ["true"]}, periodSeconds: 10}
          livenessProbe: {exec: {command: ["true"]}, periodSeconds: 10}
---
apiVersion: v1
kind: Service
metadata: {name: idle}
spec:
  selector: {app: idle}
  ports: [{port: 80, targetPort: 8080}]
EOF
	e2e_wait_for "[ \"\$(kubectl -n $ns get deploy idle -o jsonpath='{.status.readyReplicas}')\" = $N ]" 120 ||
		e2e_fail "$N pods not Ready"
fi
sleep 10
pid=$(cat "$PGOP_E2E_STATE/agent/agent.pid")
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat"; }
self_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks) u0=$(self_ticks)
s0=$(date +%s.%N)
sleep "$W"
t1=$(ticks) u1=$(self_ticks)
s1=$(date +%s.%N)
pct() { awk -v d="$1" -v hz="$hz" -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", 100 * d / hz / (b - a) }'; }
pct=$(pct $((t1 - t0)))
echo "METRIC agent_idle_self_cpu_pct=$(pct $((u1 - u0)))"
echo "METRIC agent_idle_children_cpu_pct=$(pct $((t1 - t0 - u1 + u0)))"
e2e_log "idle agent ($(readlink -f "/proc/$pid/exe")) with $N pods: $((t1 - t0)) ticks (${hz}/s) in ${W}s = ${pct}% of one core"
echo "METRIC agent_idle_mode=$([ "${BENCH_CLUSTER:-0}" = 1 ] && echo cluster || echo sleep-pods)"
echo "METRIC agent_idle_pods=$N"
echo "METRIC agent_idle_cpu_ticks=$((t1 - t0))"
echo "METRIC agent_idle_cpu_pct=$pct"
