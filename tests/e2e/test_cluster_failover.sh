#!/usr/bin/env bash
# e2e-timeout: 900
# Failover: a 3-instance Cluster loses its primary Pod; the controller marks
# targetPrimary "pending", relabels nothing to -rw until the most advanced replica is
# chosen, the instance manager promotes it and writes currentPrimary; -rw follows; the
# old primary's volume gets its Pod back as a replica and the Cluster is healthy again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
export PGOP_BIN
[ -x "$PGOP_BIN" ] || e2e_fail "pgop not built: $PGOP_BIN"
SAMPLES=${PGOP_SHARED_DIR:-$E2E_DIR/../../../shared}/samples/cnpg
e2e_up
e2e_agent_up
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
tmp=$(mktemp -d /tmp/pgop-e2e-failover.XXXXXX)
ns=$(e2e_ns fo)
ctl_pid=
cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		kubectl -n "$ns" get cluster,pods -o wide >&2 || true
		kubectl -n "$ns" get cluster -o jsonpath='{.items[*].status}' >&2 || true
		echo >&2
		tail -n 40 "$tmp/controller.log" >&2 || true
	fi
	[ -n "$ctl_pid" ] && kill -TERM "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
C=cluster-example
"$PGOP_BIN" crd | kubectl apply --server-side -f - >/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=pgop-e2e -keyout "$tmp/tls.key" -out "$tmp/tls.crt" >/dev/null 2>&1
"$PGOP_BIN" controller --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" \
	--listen 127.0.0.1:0 --kubeconfig "$KUBECONFIG" --watch-namespaces "$ns" \
	--leader-elect false </dev/null >"$tmp/controller.log" 2>&1 &
ctl_pid=$!
status() { k get cluster $C -o jsonpath="{.status.$1}" 2>/dev/null; }
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
