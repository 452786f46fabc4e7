#!/usr/bin/env bash
# e2e-timeout: 600
# Data path and day-2 of one 3-instance Cluster (samples/cluster-example.yaml,
# applied unchanged):
#   1. pgop runs from its Helm chart (default values: 2 replicas, leader election); the
#      leading controller pod is force-deleted (SIGKILL, no grace) while the second
#      instance's join Pod runs: the other replica takes the Lease over, the Deployment
#      replaces the pod, and the Cluster converges with exactly 3 pods and 3 PVCs (each
#      bootstrap Pod deleted once its instance runs; no Jobs), with CloudNativePG's two
#      PodDisruptionBudgets and the instances' preferred pod anti-affinity;
#   2. `kubectl get clusters.postgresql` prints INSTANCES 3, READY 3 and the primary;
#   3. a client in a Pod connects to <c>-rw.<ns>.svc as the app user over TLS
#      (sslmode=verify-ca with the <c>-ca ca.crt), writes rows and reads them back on every
#      replica (pod IPs);
#   4. a reloadable parameter (work_mem) reaches every instance without a restart
#      (pg_postmaster_start_time unchanged); a restart-only one (max_connections) is a
#      rolling restart (replicas, then the primary in place): every instance runs the new
#      value, the primary is unchanged, PendingRestart is False again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup data
cluster_crd
cluster_helm_install
healthy() { healthy_with 3; }

# ---- 1. kill the leading controller pod while the second instance joins --------------
t0=$(date +%s)
k apply -f "$SAMPLES/cluster-example.yaml" >/dev/null
e2e_wait_for "kubectl -n $ns get pod $C-2-join" 300 0.2 || e2e_fail "no join Pod for $C-2"
e2e_assert_ne Succeeded "$(k get pod $C-2-join -o jsonpath='{.status.phase}')" "join Pod still running when the controller is killed"
leader=$(cluster_leader)
[ -n "$leader" ] || e2e_fail "no controller pod holds the Lease"
kubectl -n "$opns" delete pod "$leader" --grace-period=0 --force >/dev/null 2>&1
e2e_log "leading controller pod $leader killed while $C-2-join runs ($(($(date +%s) - t0)) s after apply)"
e2e_wait_for "[ -n \"\$(cluster_leader)\" ] && [ \"\$(cluster_leader)\" != '$leader' ]" 90 1 ||
	e2e_fail "no other controller took the Lease over from $leader"
e2e_log "Lease taken over by $(cluster_leader) $(($(date +%s) - t0)) s after apply"
e2e_wait_for healthy 600 2 || e2e_fail "not healthy after the controller restart: $(status phase)"
echo "METRIC cluster_3_healthy_with_controller_kill_s=$(($(date +%s) - t0))"
e2e_assert_eq "$C-1 $C-2 $C-3" "$(k get pods -l cnpg.io/podRole=instance -o jsonpath='{.items[*].metadata.name}')" "instance pods"
e2e_assert_eq "$C-1 $C-2 $C-3" "$(k get pvc -o jsonpath='{.items[*].metadata.name}')" "PVCs in the namespace"
e2e_wait_for "[ \"\$(k get pods -o jsonpath='{.items[*].metadata.name}')\" = '$C-1 $C-2 $C-3' ]" 60 0.5 ||
	e2e_fail "pods in the namespace beyond the instances: $(k get pods -o jsonpath='{.items[*].metadata.name}')"
e2e_assert_eq "" "$(k get jobs -o name)" "Jobs in the namespace"
e2e_assert_eq "$C-1 $C-2 $C-3" "$(status 'instanceNames[*]')" "instanceNames"
e2e_assert_eq 3 "$(status latestGeneratedNode)" "latestGeneratedNode (no serial skipped)"
primary=$(status currentPrimary)
e2e_assert_eq "$C-1" "$primary" "currentPrimary"
# PodDisruptionBudgets and placement as CloudNativePG makes them (issue 26): <c>-primary
# (minAvailable 1, the primary) and <c> (3 instances: minAvailable 1 of the replicas); the
# instance Pods' preferred anti-affinity on the Cluster's instances over the hostname
pdbs=$(k get pdb -o jsonpath='{range .items[*]}{.metadata.name}:{.spec.minAvailable}:{.spec.selector.matchLabels.cnpg\.io/instanceRole} {end}')
e2e_assert_eq "$C:1:replica $C-primary:1:primary " "$pdbs" "PodDisruptionBudgets"
aff=$(k get pod "$C-2" -o jsonpath='{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight}/{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}')
e2e_assert_eq "100/kubernetes.io/hostname" "$aff" "the instance Pods' anti-affinity"
e2e_log "PDBs: $pdbs; anti-affinity $aff"

# ---- 2. kubectl get clusters.postgresql ----------------------------------------------
table=$(k get clusters.postgresql)
e2e_log "kubectl get clusters.postgresql:"$'\n'"$table"
# STATUS has spaces: cut each column at the header's offsets.
col() { # NAME: value of that column in the first data row
	awk -v want="$1" 'NR == 1 { s = index($0, want); rest = substr($0, s + length(want));
		match(rest, /[^ ]/); e = (RSTART ? s + length(want) + RSTART - 1 : 0); next }
		NR == 2 { v = e ? substr($0, s, e - s) : substr($0, s); gsub(/^ +| +$/, "", v); print v; exit }' <<<"$table"
}
e2e_assert_eq "$C" "$(col NAME)" "NAME column"
e2e_assert_eq 3 "$(col INSTANCES)" "INSTANCES column"
e2e_assert_eq 3 "$(col READY)" "READY column"
e2e_assert_eq "Cluster in healthy state" "$(col STATUS)" "STATUS column"
e2e_assert_eq "$primary" "$(col PRIMARY)" "PRIMARY column"

# ---- 3. a client pod: TLS to -rw as the app user, reads on every replica --------------
user=$(k get secret $C-app -o jsonpath='{.data.username}' | base64 -d)
pass=$(k get secret $C-app -o jsonpath='{.data.password}' | base64 -d)
dbname=$(k get secret $C-app -o jsonpath='{.data.dbname}' | base64 -d)
e2e_assert_eq app "$user" "app user"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
    - name: psql
      image: ghcr.io/cloudnative-pg/postgresql:15
      command: [sleep, infinity]
      volumeMounts:
        - {name: ca, mountPath: /ca, readOnly: true}
  volumes:
    - name: ca
      secret: {secretName: $C-ca, items: [{key: ca.crt, path: ca.crt}]}
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get pod client -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
	e2e_fail "client pod not Running"
client() { # HOST SQL: psql in the client pod as the app user, TLS verified with the cluster CA
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/client" -c psql -- psql \
		"host=$1 port=5432 dbname=$dbname user=$user password=$pass sslmode=verify-ca sslrootcert=/ca/ca.crt connect_timeout=5" \
		-v ON_ERROR_STOP=1 -Atc "$2"
}
rw=$C-rw.$ns.svc
e2e_wait_for "client $rw 'select 1'" 60 1 || e2e_fail "client cannot connect to $rw: $(client "$rw" 'select 1' 2>&1 || true)"
e2e_assert_eq "t|f" "$(client "$rw" 'select ssl, pg_is_in_recovery() from pg_stat_ssl where pid = pg_backend_pid()')" \
	"-rw: TLS and the primary"
client "$rw" "create table e2e_data (id int primary key, v text); insert into e2e_data select g, md5(g::text) from generate_series(1, 1000) g" >/dev/null
want=$(client "$rw" 'select count(*), sum(id), md5(string_agg(v, $$,$$ order by id)) from e2e_data')
e2e_assert_eq 1000 "${want%%|*}" "rows written through -rw"
for p in $C-2 $C-3; do
	ip=$(k get pod "$p" -o jsonpath='{.status.podIP}')
	e2e_wait_for "[ \"\$(client $ip 'select count(*), sum(id), md5(string_agg(v, \$\$,\$\$ order by id)) from e2e_data')\" = '$want' ]" 60 1 ||
		e2e_fail "replica $p ($ip) does not have the rows: $(client "$ip" 'select count(*) from e2e_data' 2>&1 || true)"
	e2e_assert_eq "t|t" "$(client "$ip" 'select ssl, pg_is_in_recovery() from pg_stat_ssl where pid = pg_backend_pid()')" \
		"$p: TLS and a replica"
done
e2e_log "1000 rows written through $rw read back on $C-2 and $C-3 (app user, verify-ca)"

# ---- 4. parameters: reload vs pending restart -------------------------------------
declare -A started
for p in $C-1 $C-2 $C-3; do
	started[$p]=$(sql "$p" 'select pg_postmaster_start_time()')
	e2e_assert_ne 12MB "$(sql "$p" 'show work_mem')" "$p: work_mem before"
done
t0=$(date +%s)
k patch cluster $C --type merge -p '{"spec":{"postgresql":{"parameters":{"work_mem":"12MB"}}}}' >/dev/null
for p in $C-1 $C-2 $C-3; do
	e2e_wait_for "[ \"\$(sql $p 'show work_mem')\" = 12MB ]" 60 1 || e2e_fail "$p: work_mem is $(sql "$p" 'show work_mem')"
done
echo "METRIC cluster_reload_parameter_s=$(($(date +%s) - t0))"
for p in $C-1 $C-2 $C-3; do
	e2e_assert_eq "${started[$p]}" "$(sql "$p" 'select pg_postmaster_start_time()')" "$p: postmaster start time after a reload"
done
e2e_log "work_mem 12MB on every instance, no restart"
cond() { k get cluster $C -o jsonpath="{.status.conditions[?(@.type==\"PendingRestart\")].$1}"; }
e2e_assert_eq False "$(cond status)" "PendingRestart before a restart-only change"
maxc=$(sql $C-1 'show max_connections')
primary=$(status currentPrimary)
t0=$(date +%s)
k patch cluster $C --type merge -p "{\"spec\":{\"postgresql\":{\"parameters\":{\"max_connections\":\"$((maxc + 50))\"}}}}" >/dev/null
# a restart-only parameter is a rolling restart: replicas one by one, then the primary in
# place (primaryUpdateMethod restart, the default)
for p in $C-1 $C-2 $C-3; do
	e2e_wait_for "[ \"\$(sql $p 'show max_connections' 2>/dev/null)\" = $((maxc + 50)) ]" 300 2 ||
		e2e_fail "$p: max_connections is $(sql "$p" 'show max_connections' 2>&1) (PendingRestart '$(cond status)' '$(cond message)', phase '$(status phase)')"
done
e2e_wait_for "healthy_with 3" 300 2 || e2e_fail "not healthy after the rolling restart: $(status phase)"
echo "METRIC cluster_rolling_restart_s=$(($(date +%s) - t0))"
for p in $C-1 $C-2 $C-3; do
	e2e_assert_ne "${started[$p]}" "$(sql "$p" 'select pg_postmaster_start_time()')" "$p: restarted"
	e2e_assert_eq f "$(sql "$p" 'select bool_or(pending_restart) from pg_settings')" "$p: pg_settings.pending_restart"
done
e2e_assert_eq "$primary" "$(status currentPrimary)" "primary after an in-place restart"
e2e_wait_for "[ \"\$(kubectl -n $ns get cluster $C -o jsonpath='{.status.conditions[?(@.type==\"PendingRestart\")].status}')\" = False ]" 60 1 ||
	e2e_fail "PendingRestart after the rolling restart: '$(cond status)' '$(cond message)'"
e2e_wait_for "kubectl -n $ns get events --field-selector reason=RestartingInstance -o name | grep -q ." 30 ||
	e2e_fail "no RestartingInstance Event"
e2e_log "max_connections $((maxc + 50)) on every instance after a rolling restart; primary $primary kept"
