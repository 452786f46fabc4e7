#!/usr/bin/env bash
# e2e-timeout: 600
# Benchmark (not a test): time to healthy of a 1-instance and of a 3-instance Cluster (created one after
# the other), and the controller's memory (VmRSS/VmHWM from /proc) while it manages 3
# Clusters (1 + 3 + 1 instances) at once. Prints METRIC lines; fails only when a Cluster
# does not become healthy or the controller dies. Runs through the e2e runner (host lock,
# control plane, node agent, teardown):
#   tests/e2e/run.sh "$PWD/build" "$PWD/bench/cluster_rss.sh"
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$E2E_DIR/cluster_lib.sh"
cluster_setup rss
cluster_crd
cluster_controller_start --workers 2 --leader-elect false

kb() { # FIELD: kB value of /proc/<controller>/status FIELD
	[ -r "/proc/$ctl_pid/status" ] || e2e_fail "the controller (pid $ctl_pid) is gone"
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$ctl_pid/status"
}
echo "METRIC controller_idle_rss_kb=$(kb VmRSS)"

cluster() { # NAME INSTANCES
	k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $1
spec:
  instances: $2
  storage:
    size: 1Gi
EOF
}
healthy() { # NAME N
	[ "$(k get cluster "$1" -o jsonpath='{.status.phase}')" = "Cluster in healthy state" ] &&
		[ "$(k get cluster "$1" -o jsonpath='{.status.readyInstances}')" = "$2" ]
}
timed() { # NAME N: creates, waits, prints seconds
	local t0
	t0=$(date +%s.%N)
	cluster "$1" "$2"
	e2e_wait_for "healthy $1 $2" 300 0.5 || e2e_fail "$1 not healthy: $(k get cluster "$1" -o jsonpath='{.status.phase}')"
	awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'
}
t1=$(timed one 1)
echo "METRIC cluster_1_instance_healthy_s=$t1"
t3=$(timed three 3)
echo "METRIC cluster_3_instances_healthy_s=$t3"
t1b=$(timed other 1)
e2e_log "healthy: 1 instance ${t1}s, 3 instances ${t3}s, third Cluster (1 instance) ${t1b}s"
# A few healthy polls (every 10 s per Cluster) with all three managed.
max=0
for _ in $(seq 1 8); do
	r=$(kb VmRSS)
	((r > max)) && max=$r
	sleep 2
done
for c in "one 1" "three 3" "other 1"; do
	# shellcheck disable=SC2086
	healthy $c || e2e_fail "Cluster $c no longer healthy"
done
echo "METRIC controller_3_clusters_rss_kb=$max"
echo "METRIC controller_3_clusters_hwm_kb=$(kb VmHWM)"
e2e_log "controller RSS with 3 Clusters (5 instances): ${max} kB, high-water mark $(kb VmHWM) kB"
