#!/usr/bin/env bash
# e2e-timeout: 600
# The Cluster annotations CloudNativePG users and its kubectl plugin set (issue 26), with
# pgop installed by its Helm chart, on a 2-instance asynchronous Cluster:
#   cnpg.io/fencedInstances  a fenced replica: postgres down, Pod kept, not Ready (the
#                            readiness probe: up to 30 s),
#                            cnpg_collector_fencing_on 1, the primary keeps writing;
#                            a fenced primary: no write accepted, no failover; unfenced:
#                            back with the same data
#   cnpg.io/reloadedAt       a new value reloads every instance (pg_conf_load_time moves,
#                            the postmaster is not restarted)
#   cnpg.io/reconciliationLoop: disabled  a deleted Service is not made again; enabled: it is
#   status.targetPrimary     patched by a client (kubectl cnpg promote): a switchover to it
#   cnpg.io/podPatch         a label and an env added to the Pods, which roll
#   cnpg.io/hibernation      on: Pods gone, PVCs kept, condition Hibernated;
#                            off: back with the same primary and the same rows
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup ann
cluster_crd
cluster_helm_install
C=ann
T0=$(date +%s)
k apply -f - >/dev/null <<YAML
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $C
spec:
  instances: 2
  storage:
    size: 1Gi
YAML
wait_healthy 2 300
e2e_log "healthy after $(($(date +%s) - T0)) s"
p=$(status currentPrimary)
r=$C-1
[ "$p" = "$C-1" ] && r=$C-2
ready() { k get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null; }
rows() { sql "$1" "SELECT count(*) FROM t"; }
fencing_on() { # POD: the exporter's cnpg_collector_fencing_on
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$1" -c postgres -- \
		curl -s http://127.0.0.1:9187/metrics | awk '$1 == "cnpg_collector_fencing_on" { print $2 }'
}
sql "$p" "CREATE TABLE t (i int); INSERT INTO t SELECT generate_series(1, 100)" >/dev/null
e2e_wait_for "[ \"\$(rows $r)\" = 100 ]" 30 || e2e_fail "the replica $r did not get the rows"

# ---- fencing a replica
t=$(date +%s)
k annotate cluster "$C" "cnpg.io/fencedInstances=[\"$r\"]" >/dev/null
e2e_wait_for "! sql $r 'SELECT 1'" 30 || e2e_fail "$r still answers while fenced"
e2e_wait_for "[ \"\$(ready $r)\" = False ]" 60 || e2e_fail "fenced $r still Ready"
e2e_log "replica $r fenced: postgres down and not Ready after $(($(date +%s) - t)) s"
echo "METRIC fence_replica_s=$(($(date +%s) - t))"
e2e_assert_eq 1 "$(fencing_on "$r")" "cnpg_collector_fencing_on on $r"
e2e_assert_eq 0 "$(fencing_on "$p")" "cnpg_collector_fencing_on on $p"
k get pod "$r" >/dev/null || e2e_fail "the fenced $r's Pod is gone"
sql "$p" "INSERT INTO t SELECT generate_series(101, 200)" >/dev/null || e2e_fail "the primary takes no write"
e2e_assert_eq "$p" "$(status currentPrimary)" "currentPrimary"
t=$(date +%s)
k annotate cluster "$C" cnpg.io/fencedInstances- >/dev/null
e2e_wait_for "[ \"\$(rows $r)\" = 200 ]" 60 || e2e_fail "unfenced $r does not catch up"
wait_healthy 2 60
e2e_log "replica $r unfenced: healthy, caught up after $(($(date +%s) - t)) s"
echo "METRIC unfence_replica_s=$(($(date +%s) - t))"

# ---- fencing the primary
t=$(date +%s)
k annotate cluster "$C" "cnpg.io/fencedInstances=[\"$p\"]" >/dev/null
e2e_wait_for "! sql $p 'SELECT 1'" 30 || e2e_fail "$p still answers while fenced"
# the kubelet's readiness (period 10 s, 3 failures, as CloudNativePG's) takes up to 30 s:
# all that time the primary is out and no failover happens
e2e_wait_for "[ \"\$(ready $p)\" = False ]" 60 || e2e_fail "fenced $p still Ready"
e2e_log "primary $p fenced, not Ready after $(($(date +%s) - t)) s"
echo "METRIC fence_primary_not_ready_s=$(($(date +%s) - t))"
e2e_assert_fails sql "$p" "INSERT INTO t VALUES (0)"
e2e_assert_eq "$p" "$(status currentPrimary)" "currentPrimary while the primary is fenced"
e2e_assert_eq "$p" "$(status targetPrimary)" "targetPrimary while the primary is fenced"
e2e_assert_eq t "$(sql "$r" 'SELECT pg_is_in_recovery()')" "$r still a replica"
e2e_assert_eq 1 "$(fencing_on "$p")" "cnpg_collector_fencing_on on $p"
t=$(date +%s)
k annotate cluster "$C" cnpg.io/fencedInstances- >/dev/null
e2e_wait_for "sql $p 'INSERT INTO t SELECT generate_series(201, 300)'" 60 || e2e_fail "unfenced $p takes no write"
wait_healthy 2 60
e2e_log "primary $p unfenced: writes again after $(($(date +%s) - t)) s"
echo "METRIC unfence_primary_s=$(($(date +%s) - t))"
e2e_assert_eq 300 "$(rows "$p")" "rows on $p"
e2e_assert_eq "$p" "$(status currentPrimary)" "currentPrimary after unfencing"

# ---- cnpg.io/reloadedAt
before_p=$(sql "$p" "SELECT pg_conf_load_time()"); before_r=$(sql "$r" "SELECT pg_conf_load_time()")
start_p=$(sql "$p" "SELECT pg_postmaster_start_time()")
k annotate cluster "$C" "cnpg.io/reloadedAt=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --overwrite >/dev/null
e2e_wait_for "[ \"\$(sql $p 'SELECT pg_conf_load_time()')\" != '$before_p' ]" 20 || e2e_fail "$p not reloaded"
e2e_wait_for "[ \"\$(sql $r 'SELECT pg_conf_load_time()')\" != '$before_r' ]" 20 || e2e_fail "$r not reloaded"
e2e_assert_eq "$start_p" "$(sql "$p" "SELECT pg_postmaster_start_time()")" "postmaster start time (no restart)"
e2e_log "reloadedAt: both instances reloaded"

# ---- cnpg.io/reconciliationLoop
k annotate cluster "$C" cnpg.io/reconciliationLoop=disabled >/dev/null
sleep 2
k delete service "$C-r" >/dev/null
sleep 10
e2e_assert_fails k get service "$C-r"
k annotate cluster "$C" cnpg.io/reconciliationLoop=enabled --overwrite >/dev/null
e2e_wait_for "k get service $C-r" 30 || e2e_fail "$C-r not made again once the loop is enabled"
e2e_log "reconciliationLoop: paused (the Service stayed deleted 10 s), resumed (made again)"

# ---- promotion by a status patch (kubectl cnpg promote)
t=$(date +%s)
ts=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
k patch cluster "$C" --subresource=status --type=merge \
	-p "{\"status\":{\"targetPrimary\":\"$r\",\"targetPrimaryTimestamp\":\"$ts\",\"phase\":\"Switchover in progress\",\"phaseReason\":\"Switching over to $r\"}}" >/dev/null
e2e_wait_for "[ \"\$(status currentPrimary)\" = $r ]" 60 || e2e_fail "no switchover to $r (target '$(status targetPrimary)')"
echo "METRIC promote_s=$(($(date +%s) - t))"
wait_healthy 2 120
e2e_assert_eq f "$(sql "$r" 'SELECT pg_is_in_recovery()')" "$r is the primary"
e2e_assert_eq t "$(sql "$p" 'SELECT pg_is_in_recovery()')" "$p is a replica"
e2e_log "promote: $r primary after $(($(date +%s) - t)) s, healthy"
old=$p; p=$r; r=$old
sql "$p" "INSERT INTO t SELECT generate_series(301, 400)" >/dev/null

# ---- cnpg.io/podPatch
t=$(date +%s)
patch='[{"op":"add","path":"/metadata/labels/pgop-e2e","value":"patched"},{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"E2E_PATCHED","value":"yes"}}]'
k annotate cluster "$C" "cnpg.io/podPatch=$patch" >/dev/null
for pod in "$p" "$r"; do
	e2e_wait_for "[ \"\$(k get pod $pod -o jsonpath='{.metadata.labels.pgop-e2e}')\" = patched ]" 180 ||
		e2e_fail "$pod not patched"
	e2e_assert_contains "$(k get pod "$pod" -o jsonpath='{.spec.containers[0].env[*].name}')" E2E_PATCHED "$pod env"
done
wait_healthy 2 120
echo "METRIC pod_patch_rolled_s=$(($(date +%s) - t))"
e2e_log "podPatch: both Pods rebuilt with the label and the env in $(($(date +%s) - t)) s"
p=$(status currentPrimary)
e2e_assert_eq 400 "$(rows "$p")" "rows after the roll"

# ---- cnpg.io/hibernation
t=$(date +%s)
k annotate cluster "$C" cnpg.io/hibernation=on >/dev/null
e2e_wait_for "[ -z \"\$(k get pods -l cnpg.io/cluster=$C -o name)\" ]" 120 || e2e_fail "Pods not deleted"
e2e_wait_for "[ \"\$(k get cluster $C -o jsonpath='{.status.conditions[?(@.type==\"cnpg.io/hibernation\")].reason}')\" = Hibernated ]" 30 ||
	e2e_fail "condition not Hibernated: $(k get cluster "$C" -o jsonpath='{.status.conditions}')"
echo "METRIC hibernate_s=$(($(date +%s) - t))"
e2e_assert_eq "$C-1 $C-2" "$(k get pvc -o jsonpath='{.items[*].metadata.name}')" "PVCs kept"
e2e_assert_eq "$p" "$(status currentPrimary)" "currentPrimary kept"
e2e_log "hibernated in $(($(date +%s) - t)) s: no Pod, PVCs kept"
t=$(date +%s)
k annotate cluster "$C" cnpg.io/hibernation=off --overwrite >/dev/null
wait_healthy 2 180
echo "METRIC rehydrate_s=$(($(date +%s) - t))"
e2e_assert_eq "$p" "$(status currentPrimary)" "the same primary after hibernation"
e2e_assert_eq f "$(sql "$p" 'SELECT pg_is_in_recovery()')" "$p is the primary"
e2e_assert_eq 400 "$(rows "$p")" "rows after hibernation"
e2e_wait_for "[ \"\$(rows $r)\" = 400 ]" 30 || e2e_fail "rows on $r after hibernation"
e2e_assert_eq "" "$(k get cluster "$C" -o jsonpath='{.status.conditions[?(@.type=="cnpg.io/hibernation")].type}')" "hibernation condition removed"
e2e_log "rehydrated in $(($(date +%s) - t)) s: same primary $p, 400 rows on both"
echo "METRIC annotations_total_s=$(($(date +%s) - T0))"
