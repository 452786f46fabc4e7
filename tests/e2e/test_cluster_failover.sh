#!/usr/bin/env bash
# e2e-timeout: 900
# Primary Pod deletion, with pgop installed by its Helm chart (default values, namespaced
# RBAC): a 3-instance Cluster loses its primary Pod; on SIGTERM the primary names its most
# advanced streaming replica targetPrimary and stops fast (a handover,
# docs/internals/failover.md), the replica promotes and writes currentPrimary; -rw follows;
# the old primary's volume gets its Pod back as a replica and the Cluster is healthy again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup fo
cluster_crd
cluster_helm_install
healthy() { [ "$(status phase)" = "Cluster in healthy state" ] && [ "$(status readyInstances)" = 3 ]; }
if [ "${PGOP_E2E_SYNC:-1}" = 1 ]; then # see test_cluster_lifecycle.sh
	cat "$SAMPLES/cluster-example.yaml"
else
	sed '/^  postgresql:/,/^$/d' "$SAMPLES/cluster-example.yaml"
fi | k apply -f - >/dev/null
e2e_wait_for healthy 600 2 || e2e_fail "not healthy: $(status phase)"
old=$(status currentPrimary)
e2e_log "primary $old; deleting its pod"
t0=$(date +%s)
k delete pod "$old" --wait=false >/dev/null
e2e_wait_for "[ -n \"\$(kubectl -n $ns get cluster $C -o jsonpath='{.status.currentPrimary}' | grep -vx '$old')\" ]" 300 1 ||
	e2e_fail "no new primary (targetPrimary '$(status targetPrimary)', phase '$(status phase)')"
new=$(status currentPrimary)
echo "METRIC failover_new_primary_s=$(($(date +%s) - t0))"
e2e_log "new primary $new"
e2e_assert_eq "$new" "$(status targetPrimary)" "targetPrimary"
ip=$(k get pod "$new" -o jsonpath='{.status.podIP}')
e2e_wait_for "[ \"\$(kubectl -n $ns get endpointslices -l kubernetes.io/service-name=$C-rw -o jsonpath='{.items[*].endpoints[*].addresses[*]}')\" = '$ip' ]" 120 ||
	e2e_fail "-rw does not point at $new"
e2e_wait_for healthy 600 2 || e2e_fail "not healthy again: $(status phase)"
echo "METRIC failover_healthy_again_s=$(($(date +%s) - t0))"
e2e_assert_eq replica "$(k get pod "$old" -o jsonpath='{.metadata.labels.cnpg\.io/instanceRole}')" "old primary is a replica"
# a deleted primary comes back on its volume: no new serial (was <c>-4, PVC + join Job, leaked)
e2e_assert_eq "$C-1 $C-2 $C-3" "$(k get pvc -o jsonpath='{.items[*].metadata.name}')" "PVCs"
e2e_assert_eq "" "$(k get pods -l cnpg.io/cluster=$C -o name | grep -v -e "^pod/$C-[123]\$" || true)" "pods of a new serial (or bootstrap Pods)"
e2e_assert_eq "[]" "$(k get cluster $C -o jsonpath='{.status.instancesStatus.failed}')" "instancesStatus.failed cleared"
