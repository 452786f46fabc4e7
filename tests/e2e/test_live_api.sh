#!/usr/bin/env bash
# e2e-timeout: 600
# The aggregated live API (live.postgresql.cnpg.io/v1) through the real kube-apiserver
# aggregator, pgop installed with its chart (certificate.mode=self) watching one namespace
# with a 2-instance Cluster:
#  - APIService v1.live.postgresql.cnpg.io Available, its caBundle = the CA Secret's ca.crt;
#  - kubectl api-resources lists clusters/instances; kubectl explain pglive, clusters
#    --api-version=live.postgresql.cnpg.io/v1 and instances.status describe the kinds;
#  - kubectl get clusters.live -A / pglive / instances.live -l cnpg.io/cluster=C -o wide /
#    -o yaml show the live primary, READY 2/2, roles, reachability, timelines;
#  - the CRD view agrees: kubectl get clusters.postgresql shows SYNC and MAX LAG, and the
#    server-side Table cells of the CRD (status.sync/maxLag, written by the reconciler) equal
#    those of clusters.live (same values, same text);
#  - the controller's /metrics has the pgop_ families (reconcile, work queue, informers, API
#    client, certificate expiry, unreachable instances) and pgop_reconcile_total moves after
#    a change to the Cluster;
#  - kubectl get clusters.live -w prints a MODIFIED row when the Cluster changes;
#  - a ServiceAccount without RBAC gets 403, with the view role it can get;
#  - straight to pgop's port: no client certificate -> 401 Unauthorized; the front-proxy
#    certificate as an unprivileged user -> 403 from pgop's own SubjectAccessReview; as
#    system:masters -> 200, and a Table when asked for one;
#  - switchover through kubectl create --raw …/switchover -f body.json: a bad target, a wrong
#    type, an unknown Cluster and the view role are refused and nothing changes; a real one
#    is accepted (202), a second one meanwhile gets 409, currentPrimary and the -rw endpoint
#    follow, kubectl get clusters.live -w shows the new primary, timeline 2; {} switches
#    back to the most advanced streaming replica;
#  - restart: {"instance": replica} recreates that Pod; {} (rolling) recreates every
#    instance Pod, the replica before the primary, the primary in place (no failover),
#    each Pod carries the Cluster's restartedAt, data intact, Events for each step;
#  - lag after a write burst (the replica's replay paused): instances.live lagBytes and
#    clusters.live MAX LAG show it, and it returns to 0 once replay resumes;
#  - kubectl get clusters / clusters.postgresql still mean the CRD;
#  - one instance's network cut (the node agent's partition: no Pod, not the controller,
#    reaches it): kubectl get instances.live answers within the fetch timeout + margin
#    (bounded at 5 s here; METRIC live_cut_get_instances_max_ms is the figure) and marks it
#    unreachable with its last-seen time, while kubectl get clusters.live -A still answers
#    for a second Cluster, whose row stays READY 1/1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
[ -x "$PGOP_BIN" ] || e2e_fail "pgop not built: $PGOP_BIN"
export PGOP_BIN
e2e_up
e2e_agent_up
command -v helm >/dev/null || e2e_fail "helm not in PATH ($PATH)"
CHART=$(cd "$E2E_DIR/../../charts/pgop" && pwd)
. "$E2E_DIR/helm_lib.sh"

ns=$(e2e_ns live)
tmp=$(mktemp -d)
C=live1
G=live.postgresql.cnpg.io
cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		kubectl get apiservice v1.$G -o yaml >&2 || true
		kubectl -n "$ns" get cluster,pods -o wide >&2 || true
		helm_debug "$ns" r1
	fi
	# a cut left on would cut off whichever later Pod gets its IP (the agent's
	# partition is by address)
	[ -z "${cut:-}" ] ||
		"$AGENT" --state-dir "$PGOP_E2E_STATE/agent" partition "$ns/$cut" off >/dev/null 2>&1 || true
	kubectl -n "$ns" delete cluster --all --wait=false >/dev/null 2>&1 || true
	helm uninstall r1 -n "$ns" --timeout 60s >/dev/null 2>&1 || true
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT

helm install r1 "$CHART" -n "$ns" --set "watchNamespaces={$ns}" --set replicas=1 \
	--set certificate.checkIntervalSeconds=5 --set certificate.settleSeconds=2 \
	--wait --timeout 180s >"$tmp/install.out" 2>&1 ||
	{ cat "$tmp/install.out"; e2e_fail "helm install"; }

cat >"$tmp/cluster.yaml" <<-YAML
	apiVersion: postgresql.cnpg.io/v1
	kind: Cluster
	metadata: {name: $C, namespace: $ns}
	spec:
	  instances: 2
	  storage: {size: 1Gi}
YAML
kubectl apply -f "$tmp/cluster.yaml" >/dev/null

# ---- registration ---------------------------------------------------------------
avail() { kubectl get apiservice "v1.$G" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}'; }
e2e_wait_for '[ "$(avail)" = True ]' 120 1 ||
	e2e_fail "APIService not Available: $(kubectl get apiservice v1.$G -o jsonpath='{.status.conditions}')"
ca=$(helm_secret_key "$ns" r1-pgop-ca ca.crt)
e2e_assert_eq "$ca" "$(kubectl get apiservice v1.$G -o jsonpath='{.spec.caBundle}' | base64 -d)" \
	"APIService caBundle is the CA Secret's ca.crt (CA only)"
res=$(kubectl api-resources --api-group=$G --no-headers)
e2e_assert_contains "$res" "pglive" "api-resources: clusters with short name pglive"
e2e_assert_contains "$res" "LiveInstance" "api-resources: instances"
# (kubectl explain reads "clusters.live" as field "live" of clusters: RESOURCE.FIELD)
e2e_wait_for "kubectl explain pglive >'$tmp/explain' 2>&1" 60 2 ||
	e2e_fail "kubectl explain pglive: $(cat "$tmp/explain")"
e2e_assert_contains "$(cat "$tmp/explain")" "LiveCluster" "explain pglive"
e2e_assert_contains "$(kubectl explain clusters --api-version=$G/v1 2>&1)" "KIND:       LiveCluster" \
	"explain clusters --api-version=$G/v1"
e2e_assert_contains "$(kubectl explain instances.status --api-version=$G/v1 2>&1)" "reachable" \
	"explain instances.status"

# ---- live values once the Cluster is healthy -------------------------------------
healthy() { [ "$(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.readyInstances}')" = 2 ]; }
healthy_phase() { [ "$(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.phase}')" = "Cluster in healthy state" ]; }
e2e_wait_for healthy 300 2 || e2e_fail "Cluster not healthy: $(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.phase}')"
primary=$(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.currentPrimary}')
row() { kubectl get clusters.live -A --no-headers | awk -v c=$C '$2 == c'; }
e2e_wait_for '[ "$(row | awk "{print \$4}")" = 2/2 ]' 30 1 || e2e_fail "clusters.live -A: $(row)"
line=$(row)
e2e_log "clusters.live -A: $line"
e2e_assert_eq "$ns $C $primary 2/2" "$(echo "$line" | awk '{print $1, $2, $3, $4}')" "NAMESPACE NAME PRIMARY READY"
e2e_assert_match "$(kubectl get clusters.live -A | head -1)" "PRIMARY +READY +SYNC +MAX LAG +TIMELINE +PHASE +AGE" "headers"
e2e_assert_contains "$(kubectl -n "$ns" get pglive $C -o wide)" "SYSTEM ID" "pglive -o wide"
tli=$(kubectl -n "$ns" get pglive $C -o jsonpath='{.status.timeline}')
e2e_assert_eq 1 "$tli" "timeline"
# Ready (the probes run every 1-2 s) can come before the replica streams: the live view
# shows "standby (not streaming)" until it does, then its role
e2e_wait_for "kubectl -n $ns get instances.live -l cnpg.io/cluster=$C -o wide >'$tmp/inst' && grep -v '^$primary ' '$tmp/inst' | tail -1 | grep -Eq ' +$C +(sync standby|async|potential) +true '" 30 0.5 || true
e2e_log "$(cat "$tmp/inst")"
e2e_assert_eq 2 "$(tail -n +2 "$tmp/inst" | wc -l)" "two instances"
e2e_assert_match "$(grep "^$primary " "$tmp/inst")" "^$primary +$C +primary +true " "primary row"
e2e_assert_match "$(grep -v "^$primary " "$tmp/inst" | tail -1)" " +$C +(sync standby|async|potential) +true " "replica row"
kubectl -n "$ns" get instances.live "$primary" -o yaml >"$tmp/inst.yaml"
e2e_assert_contains "$(cat "$tmp/inst.yaml")" "kind: LiveInstance" "-o yaml kind"
e2e_assert_contains "$(cat "$tmp/inst.yaml")" "role: primary" "-o yaml role"
# ---- the CRD view agrees with the live view (issue 8 scope 7) ----------------------
P=$PGOP_E2E_STATE/pki
# CELL PATH COLUMN: the first row's cell of COLUMN in the server-side Table of PATH
cell() {
	curl -sf --max-time 10 --cacert "$PGOP_E2E_CA" --cert "$P/admin.crt" --key "$P/admin.key" \
		-H "Accept: application/json;as=Table;v=v1;g=meta.k8s.io" "$PGOP_E2E_APISERVER$1" |
		jq -r --arg c "$2" '(.columnDefinitions | map(.name) | index($c)) as $i |
			if $i == null then "no column \($c)" else (.rows[0].cells[$i] // "<none>") end'
}
crd_path=/apis/postgresql.cnpg.io/v1/namespaces/$ns/clusters/$C
live_path=/apis/$G/v1/namespaces/$ns/clusters/$C
# the reconciler writes status.sync/maxLag on its next poll (every 5 s)
e2e_wait_for '[ "$(cell $crd_path Sync)" != "<none>" ] && [ "$(cell $crd_path "Max Lag")" != "<none>" ]' 30 1 ||
	e2e_fail "CRD Sync/Max Lag never filled: $(kubectl -n "$ns" get cluster $C -o jsonpath='{.status}')"
# PAIR PATH: "Sync|Max Lag" of the first row, both cells from one Table (one read)
pair() {
	curl -sf --max-time 10 --cacert "$PGOP_E2E_CA" --cert "$P/admin.crt" --key "$P/admin.key" \
		-H "Accept: application/json;as=Table;v=v1;g=meta.k8s.io" "$PGOP_E2E_APISERVER$1" |
		jq -r '(.columnDefinitions | map(.name)) as $n |
			[($n | index("Sync")), ($n | index("Max Lag"))] as $i |
			"\(.rows[0].cells[$i[0]] // "<none>")|\(.rows[0].cells[$i[1]] // "<none>")"'
}
# Both views print one computation and one text (rc_repl_summarize, rc_repl_lag_text) but
# of different snapshots: the CRD's is the reconciler's last poll (every 5 s), the live
# view's at most 1 s old. A primary with a replica writes WAL at every lease check (250 ms)
# and pg_stat_replication.replay_lag turns NULL once the replica reported twice that it
# replayed everything, so MAX LAG moves between "0 B" and "N B / 0.0s". Each view's two
# cells come from one read; the pair is read again until both views hold the same text
# (at most 60 s: 12 status refreshes), and the values that agreed are the ones checked.
agreed=""
seen=""
deadline=$(($(date +%s) + 60))
while :; do
	crd_cells=$(pair $crd_path || true)
	live_cells=$(pair $live_path || true)
	if [ -n "$crd_cells" ] && [ "$crd_cells" = "$live_cells" ]; then agreed=$crd_cells; break; fi
	seen="$seen [CRD '$crd_cells' live '$live_cells']"
	(($(date +%s) < deadline)) || break
	sleep 1
done
e2e_log "CRD Sync|Max Lag: $crd_cells; live: $live_cells"
[ -n "$agreed" ] || e2e_fail "kubectl get clusters.postgresql SYNC|MAX LAG never equal to clusters.live's within 60 s (status.sync/maxLag refreshed every 5 s); reads:$seen"
e2e_assert_match "$agreed" "^async\|[0-9]+ B" "a 2-instance Cluster without synchronous replication: async, lag in bytes"
e2e_assert_match "$(kubectl -n "$ns" get clusters.postgresql $C | head -1)" "PRIMARY +SYNC +MAX LAG" \
	"clusters.postgresql printer columns SYNC and MAX LAG"
st=$(kubectl get --raw "/apis/$G/v1/namespaces/$ns/clusters/$C/status")
e2e_assert_contains "$st" '"pgStatus"' "status subresource carries each /pg/status"
e2e_assert_contains "$(kubectl get --raw "/apis/$G/v1/namespaces/$ns/clusters/nope" 2>&1 || true)" "NotFound" "404 Status"

# ---- controller metrics (issue 12 scope 4): the counters move with a reconcile -------
pgop_ip=$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 -o jsonpath='{.items[0].status.podIP}')
scrape() { # /metrics of the controller, on whichever of its ports serves it
	local p
	for p in $(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 \
		-o jsonpath='{.items[0].spec.containers[0].ports[*].containerPort}'); do
		curl -sfk --max-time 5 "https://$pgop_ip:$p/metrics" 2>/dev/null && return 0
		curl -sf --max-time 5 "http://$pgop_ip:$p/metrics" 2>/dev/null && return 0
	done
	return 1
}
reconciles() { scrape | awk '/^pgop_reconcile_total\{/ { n += $2 } END { print n + 0 }'; }
m=$(scrape) || e2e_fail "no /metrics on the controller's ports"
for fam in pgop_reconcile_total pgop_reconcile_errors_total pgop_reconcile_duration_seconds_bucket \
	pgop_workqueue_depth pgop_workqueue_queue_duration_seconds_count 'pgop_informer_objects{kind="clusters"} 1' \
	'pgop_kube_requests_total{verb="watch"' pgop_instances_unreachable \
	'pgop_certificate_expiry_timestamp_seconds{certificate="serving"}' 'pgop_leader 1'; do
	e2e_assert_contains "$m" "$fam" "/metrics has $fam"
done
r0=$(reconciles)
events() { scrape | awk '/^pgop_reconcile_event_latency_seconds_count/ { print $2 }'; }
e0=$(events)
kubectl -n "$ns" annotate cluster $C live-e2e/metrics=1 >/dev/null
e2e_wait_for '[ "$(reconciles)" -gt "$r0" ]' 30 1 || e2e_fail "pgop_reconcile_total did not move: $r0 -> $(reconciles)"
e2e_log "pgop_reconcile_total: $r0 -> $(reconciles)"
# the annotation is an informer event: event -> status latency counts its reconcile
e2e_wait_for '[ "$(events)" -gt "${e0:-0}" ]' 30 1 ||
	e2e_fail "pgop_reconcile_event_latency_seconds did not count the event: ${e0:-0} -> $(events)"

# ---- watch: kubectl get -w through the aggregator (Table events) -------------------
timeout 12 kubectl -n "$ns" get clusters.live -w --output-watch-events >"$tmp/watch.out" 2>&1 &
wpid=$!
sleep 4
kubectl -n "$ns" label cluster $C live-e2e=changed >/dev/null
wait $wpid || true
e2e_log "watch: $(tr '\n' '|' <"$tmp/watch.out")"
e2e_assert_match "$(cat "$tmp/watch.out")" "MODIFIED +$C +$primary +2/2" "kubectl get clusters.live -w sees the change"

# ---- authorization through kube-apiserver -----------------------------------------
kubectl -n "$ns" create serviceaccount nobody >/dev/null
kubectl -n "$ns" create serviceaccount viewer >/dev/null
kubectl -n "$ns" create rolebinding viewer --clusterrole=view --serviceaccount="$ns:viewer" >/dev/null
e2e_assert_fails_with "Forbidden" kubectl --as="system:serviceaccount:$ns:nobody" -n "$ns" get clusters.live
e2e_wait_for "kubectl --as=system:serviceaccount:$ns:viewer -n $ns get clusters.live $C >/dev/null 2>&1" 30 1 ||
	e2e_fail "view role cannot get clusters.live"

# ---- actions: switchover -----------------------------------------------------------
sw=/apis/$G/v1/namespaces/$ns/clusters/$C/switchover
replica=$(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.instanceNames}' | tr -d '[]"' |
	tr ',' '\n' | grep -vx "$primary" | head -1)
[ -n "$replica" ] || e2e_fail "no replica name"
status_pair() { kubectl -n "$ns" get cluster $C -o jsonpath='{.status.currentPrimary} {.status.targetPrimary}'; }
echo '{"target":"'$C'-9"}' >"$tmp/bad.json"
e2e_assert_fails_with "$C-9 is not an instance of this cluster" kubectl create --raw "$sw" -f "$tmp/bad.json"
echo '{"target":"'$primary'"}' >"$tmp/self.json"
e2e_assert_fails_with "is already the primary" kubectl create --raw "$sw" -f "$tmp/self.json"
echo '{"target":7}' >"$tmp/type.json"
e2e_assert_fails_with "expected string" kubectl create --raw "$sw" -f "$tmp/type.json"
echo '{"target":"'$replica'"}' >"$tmp/sw.json"
e2e_assert_fails_with "NotFound" kubectl create --raw "/apis/$G/v1/namespaces/$ns/clusters/nope/switchover" -f "$tmp/sw.json"
e2e_assert_fails_with "Forbidden" kubectl --as="system:serviceaccount:$ns:viewer" create --raw "$sw" -f "$tmp/sw.json"
e2e_assert_eq "$primary $primary" "$(status_pair)" "refused switchovers changed nothing"
timeout 90 kubectl -n "$ns" get clusters.live -w --output-watch-events >"$tmp/watch-sw.out" 2>&1 &
wpid=$!
sleep 2
out=$(kubectl create --raw "$sw" -f "$tmp/sw.json")
e2e_log "switchover: $out"
e2e_assert_contains "$out" '"status":"Success"' "switchover accepted"
e2e_assert_contains "$out" "switchover from $primary to $replica" "accepted message"
# while it runs, another request is refused (409: in progress, or the Cluster changed)
e2e_assert_fails_with "Conflict" kubectl create --raw "$sw" -f "$tmp/sw.json"
e2e_wait_for '[ "$(status_pair)" = "$replica $replica" ]' 90 1 || e2e_fail "switchover did not finish: $(status_pair)"
rw() { kubectl -n "$ns" get endpoints $C-rw -o jsonpath='{.subsets[*].addresses[*].targetRef.name}'; }
e2e_wait_for '[ "$(rw)" = "$replica" ]' 60 1 || e2e_fail "-rw does not follow the new primary: $(rw)"
e2e_wait_for '[ "$(row | awk "{print \$3, \$4}")" = "$replica 2/2" ]' 120 1 || e2e_fail "clusters.live after switchover: $(row)"
e2e_wait_for "grep -Eq 'MODIFIED +$C +$replica ' '$tmp/watch-sw.out'" 30 1 ||
	e2e_fail "kubectl get clusters.live -w did not show the new primary: $(tr '\n' '|' <"$tmp/watch-sw.out")"
kill $wpid 2>/dev/null || true
wait $wpid 2>/dev/null || true
e2e_assert_eq 2 "$(kubectl -n "$ns" get pglive $C -o jsonpath='{.status.timeline}')" "timeline after the switchover"
e2e_assert_contains "$(kubectl -n "$ns" get events --field-selector reason=SwitchoverRequested -o jsonpath='{.items[*].message}')" \
	"requested by" "Event SwitchoverRequested names the user"
# {} picks the most advanced healthy streaming replica: the old primary, once it streams again
streaming() { kubectl -n "$ns" get instances.live $primary -o jsonpath='{.status.role}' 2>/dev/null; }
e2e_wait_for 'healthy_phase && [ "$(streaming)" != "" ] && [ "$(streaming)" != primary ] && [ "$(streaming)" != unreachable ] && [ "$(streaming)" != "standby (not streaming)" ] && [ "$(streaming)" != cloning ]' 120 1 ||
	e2e_fail "old primary not streaming: $(streaming)"
echo '{}' >"$tmp/any.json"
out=$(kubectl create --raw "$sw" -f "$tmp/any.json")
e2e_assert_contains "$out" "switchover from $replica to $primary" "{} picks the streaming replica"
e2e_wait_for '[ "$(status_pair)" = "$primary $primary" ]' 90 1 || e2e_fail "second switchover did not finish: $(status_pair)"
e2e_wait_for healthy_phase 120 1 || e2e_fail "not healthy after the switchovers"

# ---- actions: restart ---------------------------------------------------------------
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
sql() { "$AGENT" --state-dir "$PGOP_E2E_STATE/agent" exec "$ns/$1" -c postgres -- \
	psql -h /controller/run -U postgres -d postgres -Atc "$2"; }
rs=/apis/$G/v1/namespaces/$ns/clusters/$C/restart
uid() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null; }
created() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.creationTimestamp}' 2>/dev/null; }
sql "$primary" "CREATE TABLE restart_check(x int); INSERT INTO restart_check VALUES (42)" >/dev/null ||
	e2e_fail "cannot write on $primary"
echo '{"instance":"'$C'-9"}' >"$tmp/r-bad.json"
e2e_assert_fails_with "$C-9 is not an instance of this cluster" kubectl create --raw "$rs" -f "$tmp/r-bad.json"
e2e_assert_fails_with "Forbidden" kubectl --as="system:serviceaccount:$ns:viewer" create --raw "$rs" -f "$tmp/any.json"
# one replica: its Pod is recreated on its volume
u=$(uid "$replica")
echo '{"instance":"'$replica'"}' >"$tmp/r-one.json"
out=$(kubectl create --raw "$rs" -f "$tmp/r-one.json")
e2e_assert_contains "$out" "restart of replica $replica requested by" "one-instance restart accepted"
e2e_wait_for '[ -n "$(uid $replica)" ] && [ "$(uid $replica)" != "$u" ]' 60 1 || e2e_fail "$replica not recreated"
e2e_wait_for healthy_phase 120 1 || e2e_fail "not healthy after restarting $replica"
# rolling restart: every instance Pod recreated, replicas before the primary, in place
up=$(uid "$primary")
ur=$(uid "$replica")
out=$(kubectl create --raw "$rs" -f "$tmp/any.json")
e2e_log "restart: $out"
e2e_assert_contains "$out" "rolling restart of $C requested by" "rolling restart accepted"
at=$(kubectl -n "$ns" get cluster $C -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}')
[ -n "$at" ] || e2e_fail "no restartedAt annotation on the Cluster"
new_pods() { [ -n "$(uid $primary)" ] && [ "$(uid $primary)" != "$up" ] && [ -n "$(uid $replica)" ] && [ "$(uid $replica)" != "$ur" ]; }
e2e_wait_for new_pods 180 1 || e2e_fail "not every Pod was recreated: $(kubectl -n "$ns" get pods -o wide)"
e2e_wait_for healthy_phase 180 1 || e2e_fail "not healthy after the rolling restart: $(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.phase}')"
cr=$(created "$replica") cp=$(created "$primary")
e2e_log "rolling restart: $replica recreated at $cr, $primary at $cp"
[[ ! $cp < $cr ]] || e2e_fail "the primary ($cp) was restarted before the replica ($cr)"
e2e_assert_eq "$primary $primary" "$(status_pair)" "the primary restarted in place (no failover; pgop.io/inPlaceRestart contract)"
for p in "$primary" "$replica"; do
	e2e_assert_eq "$at" "$(kubectl -n "$ns" get pod "$p" -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}')" \
		"$p carries the Cluster's restartedAt"
done
e2e_wait_for '[ -z "$(kubectl -n "$ns" get cluster $C -o jsonpath="{.metadata.annotations.pgop\.io/inPlaceRestart}")" ]' 30 1 ||
	e2e_fail "pgop.io/inPlaceRestart not removed"
e2e_assert_eq 42 "$(sql "$primary" "SELECT x FROM restart_check")" "data intact after the rolling restart"
e2e_wait_for '[ "$(sql "$replica" "SELECT x FROM restart_check" 2>/dev/null)" = 42 ]' 60 1 || e2e_fail "replica lacks the data"
ev=$(kubectl -n "$ns" get events -o jsonpath='{range .items[*]}{.reason} {end}')
e2e_assert_contains "$ev" "RestartRequested" "Event RestartRequested"
e2e_assert_contains "$ev" "RestartingInstance" "Event RestartingInstance"
e2e_assert_contains "$ev" "RestartingPrimary" "Event RestartingPrimary"

# ---- lag after a write burst: the replica's replay paused while the primary writes ----
sql "$replica" "SELECT pg_wal_replay_pause()" >/dev/null || e2e_fail "cannot pause replay on $replica"
sql "$primary" "CREATE TABLE burst AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g" >/dev/null ||
	e2e_fail "write burst on $primary"
lagb() { kubectl -n "$ns" get instances.live "$replica" -o jsonpath='{.status.lagBytes}' 2>/dev/null; }
e2e_wait_for '[ "$(lagb)" -gt 1000000 ] 2>/dev/null' 30 0.5 ||
	e2e_fail "instances.live $replica: lagBytes '$(lagb)' after a 4 MB burst with replay paused"
e2e_log "lag with replay paused: $(kubectl -n "$ns" get instances.live -l cnpg.io/cluster=$C --no-headers | tr -s ' ' | tr '\n' ';')"
e2e_assert_match "$(kubectl -n "$ns" get pglive $C -o jsonpath='{.status.maxLag}')" "^[1-9][0-9]{6,} B" \
	"clusters.live MAX LAG after the burst"
sql "$replica" "SELECT pg_wal_replay_resume()" >/dev/null || e2e_fail "cannot resume replay on $replica"
e2e_wait_for '[ "$(lagb)" = 0 ]' 60 0.5 || e2e_fail "lag of $replica after replay resumed: $(lagb)"

# ---- straight to pgop: front-proxy authentication and pgop's own SAR --------------
ip=$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 -o jsonpath='{.items[0].status.podIP}')
P=$PGOP_E2E_STATE/pki
url="https://$ip:9443/apis/$G/v1/namespaces/$ns/clusters"
code=$(curl -sk -o "$tmp/body" -w '%{http_code}' --max-time 5 "$url")
e2e_assert_eq 401 "$code" "no client certificate"
e2e_assert_contains "$(cat "$tmp/body")" '"reason":"Unauthorized"' "401 Status"
fp=(--cert "$P/front-proxy-client.crt" --key "$P/front-proxy-client.key")
code=$(curl -sk "${fp[@]}" -o "$tmp/body" -w '%{http_code}' --max-time 5 -H "X-Remote-User: mallory" "$url")
e2e_assert_eq 403 "$code" "front-proxy cert, user without RBAC: pgop's SubjectAccessReview says no"
code=$(curl -sk "${fp[@]}" -o "$tmp/body" -w '%{http_code}' --max-time 5 \
	-H "X-Remote-User: admin" -H "X-Remote-Group: system:masters" \
	-H "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json" "$url")
e2e_assert_eq 200 "$code" "front-proxy cert as system:masters"
e2e_assert_contains "$(cat "$tmp/body")" '"kind":"Table"' "Table when asked for"
code=$(curl -sk --cert "$P/admin.crt" --key "$P/admin.key" -o /dev/null -w '%{http_code}' --max-time 5 \
	-H "X-Remote-User: admin" -H "X-Remote-Group: system:masters" "$url" 2>/dev/null || true)
[ ! -f "$P/admin.crt" ] || e2e_assert_eq 401 "$code" "a client certificate from another CA"

# ---- the CRD keeps its names -------------------------------------------------------
e2e_assert_match "$(kubectl -n "$ns" get clusters | head -1)" "INSTANCES +READY +STATUS" "kubectl get clusters is the CRD"
e2e_assert_match "$(kubectl -n "$ns" get clusters.postgresql | head -1)" "INSTANCES +READY +STATUS" "clusters.postgresql"

# ---- one instance's network cut: bounded answers, marked unreachable ---------------
kubectl apply -f - >/dev/null <<-YAML
	apiVersion: postgresql.cnpg.io/v1
	kind: Cluster
	metadata: {name: live2, namespace: $ns}
	spec: {instances: 1, storage: {size: 1Gi}}
YAML
e2e_wait_for '[ "$(kubectl -n "$ns" get cluster live2 -o jsonpath="{.status.readyInstances}")" = 1 ]' 180 1 ||
	e2e_fail "live2 not ready"
e2e_wait_for '[ "$(healthy_phase && kubectl get clusters.live -n "$ns" live2 --no-headers | awk "{print \$3}")" = 1/1 ]' 60 1 ||
	e2e_fail "live2 not 1/1 in clusters.live: $(kubectl get clusters.live -n "$ns" live2 --no-headers)"
cur=$(kubectl -n "$ns" get cluster $C -o jsonpath='{.status.currentPrimary}')
cut=$(kubectl -n "$ns" get pods -l cnpg.io/cluster=$C,cnpg.io/instanceRole=replica -o jsonpath='{.items[0].metadata.name}')
[ -n "$cut" ] || e2e_fail "no replica of $C to cut"
"$AGENT" --state-dir "$PGOP_E2E_STATE/agent" partition "$ns/$cut" on >/dev/null || e2e_fail "partition $cut"
e2e_log "network of $cut cut (primary $cur)"
max_ms=0 tries=0
timed_instances() { # one kubectl get instances.live, its time folded into max_ms
	local t0 d
	t0=$(date +%s%N)
	timeout 30 kubectl -n "$ns" get instances.live -l cnpg.io/cluster=$C -o wide >"$tmp/cut" 2>&1 || true
	d=$((($(date +%s%N) - t0) / 1000000))
	tries=$((tries + 1))
	[ "$d" -le "$max_ms" ] || max_ms=$d
	grep -Eq "^$cut +$C +unreachable +false " "$tmp/cut"
}
e2e_wait_for timed_instances 30 0.2 || e2e_fail "$cut not shown unreachable: $(cat "$tmp/cut")"
for _ in 1 2 3 4 5; do timed_instances || e2e_fail "$cut not unreachable any more: $(cat "$tmp/cut")"; done
e2e_log "instances.live with $cut cut ($tries requests, slowest $max_ms ms):"
e2e_log "$(cat "$tmp/cut")"
echo "METRIC live_cut_get_instances_max_ms=$max_ms"
[ "$max_ms" -le 5000 ] || e2e_fail "kubectl get instances.live took $max_ms ms with an instance cut (bound: 2 s timeout + 0.5 s margin)"
e2e_assert_match "$(grep "^$cut " "$tmp/cut")" " unreachable +false .* [0-9]+[smh]+ ago *$" "the cut instance shows its last-seen age"
e2e_assert_match "$(grep "^$cur " "$tmp/cut")" "^$cur +$C +primary +true " "the primary still answers"
# Each controller replica keeps its own snapshots, and one whose last fetch of an
# instance failed (the rolling restart above) shows it unreachable at once while it
# fetches it again in the background (apiserver/snap.c): the next request has it.
live_all() {
	local t0
	t0=$(date +%s%N)
	all=$(timeout 30 kubectl get clusters.live -A --no-headers) || return 1
	e2e_log "clusters.live -A with $cut cut ($((($(date +%s%N) - t0) / 1000000)) ms): $(echo "$all" | tr -s ' ' | tr '\n' ';')"
	[[ "$(echo "$all" | awk -v n="$ns" -v c=$C '$1 == n && $2 == c')" =~ ^$ns\ +$C\ +$cur\ +1/2\  ]]
}
e2e_wait_for live_all 10 1 || true
e2e_log "clusters.live -A with $cut cut: $(echo "$all" | tr -s ' ' | tr '\n' ';')"
e2e_assert_match "$(echo "$all" | awk -v n="$ns" '$1 == n && $2 == "live2"')" "^$ns +live2 +live2-1 +1/1 " "the other Cluster answers, READY 1/1"
e2e_assert_match "$(echo "$all" | awk -v n="$ns" -v c=$C '$1 == n && $2 == c')" "^$ns +$C +$cur +1/2 " "$C: READY 1/2 with $cut cut"
"$AGENT" --state-dir "$PGOP_E2E_STATE/agent" partition "$ns/$cut" off >/dev/null || e2e_fail "partition off $cut"
e2e_wait_for 'kubectl -n "$ns" get instances.live "$cut" --no-headers | grep -q " true "' 60 1 ||
	e2e_fail "$cut not reachable again after the cut: $(kubectl -n "$ns" get instances.live "$cut" --no-headers)"
cut= # undone: nothing for the cleanup to undo

# ---- latency figure ---------------------------------------------------------------
t0=$(date +%s%N)
for _ in 1 2 3 4 5 6 7 8 9 10; do kubectl get clusters.live -A >/dev/null; done
echo "METRIC live_get_clusters_avg_ms=$((($(date +%s%N) - t0) / 10000000))"
e2e_log "live API ok"
