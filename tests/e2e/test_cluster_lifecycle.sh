#!/usr/bin/env bash
# e2e-timeout: 1500
# The Cluster controller, installed with its Helm chart and default values (namespaced
# RBAC for the test namespace, read-only root filesystem), against the real control plane
# and the node agent:
#   1. a 3-instance Cluster (samples/cluster-example.yaml) reaches
#      "Cluster in healthy state"; PKI/user Secrets, Services, PVCs exist with owner
#      references; the bootstrap Pods (no Jobs) are gone once their instances run; currentPrimary/targetPrimary/instanceNames/readyInstances are set;
#   2. the primary's pg_stat_replication shows 2 streaming replicas;
#   3. the -rw Service's endpoints are the primary only, -ro the replicas;
#   4. scale 3 -> 5 -> 2 (highest serials removed with their PVCs);
#   5. deleting the Cluster removes every object it owns (garbage collector).
# Prints METRIC lines with the times measured.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup cl
cluster_crd
cluster_helm_install
leader=$(cluster_leader)
e2e_log "reconciler Lease held by $leader"

# ---- 1. 3 instances -------------------------------------------------------------------
t0=$(date +%s)
# The sample as shipped (synchronous replication, ANY 1); PGOP_E2E_SYNC=0 drops that
# block to compare with asynchronous replication.
if [ "${PGOP_E2E_SYNC:-1}" = 1 ]; then
	cat "$SAMPLES/cluster-example.yaml"
else
	sed '/^  postgresql:/,/^$/d' "$SAMPLES/cluster-example.yaml"
fi | k apply -f - >/dev/null
wait_healthy 3 600
t_healthy=$(($(date +%s) - t0))
echo "METRIC cluster_3_instances_healthy_s=$t_healthy"
echo "METRIC controller_leader_rss_kb=$(cluster_controller_rss_kb "$leader" || echo unknown)"
e2e_log "healthy with 3 instances in ${t_healthy}s"
e2e_assert_eq "$C-1" "$(status currentPrimary)" "currentPrimary"
e2e_assert_eq "$C-1" "$(status targetPrimary)" "targetPrimary"
e2e_assert_eq "$C-1 $C-2 $C-3" "$(status 'instanceNames[*]')" "instanceNames"
e2e_assert_eq 3 "$(status latestGeneratedNode)" "latestGeneratedNode"
e2e_assert_eq True "$(k get cluster $C -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" "Ready condition"
exp=$(status 'certificates.expirations')
e2e_assert_contains "$exp" "$C-server" "certificate expirations"
for s in ca ca-cert server replication app; do
	owner=$(k get secret "$C-$s" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')
	e2e_assert_eq "Cluster/$C" "$owner" "owner of secret $C-$s"
done
# enableSuperuserAccess is false by default: no superuser password (as CloudNativePG)
if k get secret "$C-superuser" >/dev/null 2>&1; then
	e2e_fail "secret $C-superuser exists without enableSuperuserAccess"
fi
e2e_assert_eq kubernetes.io/basic-auth "$(k get secret $C-app -o jsonpath='{.type}')" "app secret type"
e2e_assert_eq "$C-1 $C-2 $C-3" "$(k get pvc -l cnpg.io/cluster=$C -o jsonpath='{.items[*].metadata.name}')" "PVCs"
e2e_wait_for "[ \"\$(k get pods -l cnpg.io/cluster=$C -o jsonpath='{.items[*].metadata.name}')\" = '$C-1 $C-2 $C-3' ]" 60 0.5 ||
	e2e_fail "pods beyond the instances: $(k get pods -l cnpg.io/cluster=$C -o jsonpath='{.items[*].metadata.name}')"
e2e_assert_eq "" "$(k get jobs -o name)" "Jobs"
e2e_assert_eq primary "$(k get pod $C-1 -o jsonpath='{.metadata.labels.cnpg\.io/instanceRole}')" "role of $C-1"
e2e_assert_eq replica "$(k get pod $C-2 -o jsonpath='{.metadata.labels.cnpg\.io/instanceRole}')" "role of $C-2"

# ---- 2. streaming replication ------------------------------------------------------
e2e_wait_for "[ \"\$(sql $C-1 \"select count(*) from pg_stat_replication where state = 'streaming'\")\" = 2 ]" 120 ||
	e2e_fail "pg_stat_replication on $C-1: $(sql $C-1 'select application_name, state from pg_stat_replication' || true)"
names=$(sql $C-1 "select string_agg(application_name, ' ' order by application_name) from pg_stat_replication")
e2e_assert_eq "$C-2 $C-3" "$names" "streaming replicas"

# ---- 3. service endpoints ----------------------------------------------------------
ip_of() { k get pod "$1" -o jsonpath='{.status.podIP}'; }
eps() { k get endpointslices -l "kubernetes.io/service-name=$1" -o jsonpath='{.items[*].endpoints[*].addresses[*]}' | tr ' ' '\n' | sort | xargs; }
e2e_wait_for "[ \"\$(eps $C-rw)\" = '$(ip_of $C-1)' ]" 60 || e2e_fail "-rw endpoints: $(eps $C-rw)"
want_ro=$(printf '%s\n' "$(ip_of $C-2)" "$(ip_of $C-3)" | sort | xargs)
e2e_wait_for "[ \"\$(eps $C-ro)\" = '$want_ro' ]" 60 || e2e_fail "-ro endpoints: $(eps $C-ro), want $want_ro"

# ---- 4. scale 3 -> 5 -> 2 -------------------------------------------------------------
t0=$(date +%s)
k patch cluster $C --type merge -p '{"spec":{"instances":5}}' >/dev/null
wait_healthy 5 600
echo "METRIC cluster_scale_3_to_5_s=$(($(date +%s) - t0))"
e2e_assert_eq "$C-1 $C-2 $C-3 $C-4 $C-5" "$(status 'instanceNames[*]')" "instanceNames after scale up"
e2e_wait_for "[ \"\$(sql $C-1 \"select count(*) from pg_stat_replication where state = 'streaming'\")\" = 4 ]" 120 ||
	e2e_fail "4 streaming replicas expected"
t0=$(date +%s)
k patch cluster $C --type merge -p '{"spec":{"instances":2}}' >/dev/null
e2e_wait_for "[ \"\$(kubectl -n $ns get pods -l cnpg.io/podRole=instance -o jsonpath='{.items[*].metadata.name}')\" = '$C-1 $C-2' ]" 300 2 ||
	e2e_fail "pods after scale down: $(k get pods -l cnpg.io/podRole=instance -o name | xargs)"
wait_healthy 2 300
echo "METRIC cluster_scale_5_to_2_s=$(($(date +%s) - t0))"
e2e_wait_for "[ \"\$(kubectl -n $ns get pvc -l cnpg.io/cluster=$C -o jsonpath='{.items[*].metadata.name}')\" = '$C-1 $C-2' ]" 120 ||
	e2e_fail "PVCs after scale down: $(k get pvc -o name | xargs)"
e2e_assert_eq "$C-1 $C-2" "$(status 'instanceNames[*]')" "instanceNames after scale down"

# ---- 5. delete ---------------------------------------------------------------------
t0=$(date +%s)
k delete cluster $C --wait=false >/dev/null
left() { k get pods,pvc,jobs,services,secrets,serviceaccounts,roles,rolebindings -l cnpg.io/cluster=$C -o name 2>/dev/null | xargs; }
e2e_wait_for "[ -z \"\$(left)\" ]" 300 2 || e2e_fail "left after deleting the Cluster: $(left)"
echo "METRIC cluster_delete_gc_s=$(($(date +%s) - t0))"
e2e_log "all objects of $C are gone"
