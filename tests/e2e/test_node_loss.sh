#!/usr/bin/env bash
# e2e-timeout: 600
# Node loss (issue 26), on the multi-node substrate (three nodes): the sample Cluster (3
# instances, ANY 1 synchronous) under the fault suite's writers (faults_lib.sh), pgop
# installed by its chart. The operator and the client Pod (the -rw writer's network) are
# kept on the first node, so the node that fails holds the primary and nothing else of
# the test's:
#   (a) stop: the primary's node frozen (e2e_node_stop: its agent and its Pods' processes
#       SIGSTOPped, no heartbeats): writes resume on a replica on another node, 0
#       acknowledged COMMITs lost, never two primaries, -rw never back on the old primary;
#       the Node turning NotReady ~20 s later changes nothing (no second failover); the
#       node thawed, the old primary rejoins as a replica;
#   (b) cut: the network of the (then) primary's node cut as a whole (e2e_node_cut): the
#       same, and the isolated primary stops answering (fences itself) before a replica
#       is promoted; uncut, it rejoins;
#   (c) gone: the node of a replica killed and left dead (e2e_node_kill): once its Node
#       has been unreachable for --node-lost-timeout (the chart's nodeLostTimeoutSeconds,
#       15 s here) the instance's Pod and PVCs are deleted (Event InstanceNodeLost) and a
#       new instance (a new serial) is cloned from the primary on a live node; no
#       failover, 0 acknowledged COMMITs lost, healthy with 3 instances again;
#   (d) deleted: the same, and its Node object deleted outright: the pod garbage collector
#       deletes the Pod, the new one cannot be placed (its volume is pinned to the missing
#       node) and after --node-lost-timeout of that the instance is rebuilt the same way.
# Figures (METRIC fault_sync_node_{stop,cut}_*): detect_ms, promoted_ms, rw_ms,
# outage_ms (longest gap between two acknowledged -rw COMMITs), outage_fast_ms (the same
# for a second -rw writer whose COMMITs give up after 1 s), lost, notready_ms (the
# Node NotReady), rejoin_s (node back -> Cluster healthy), healthy_s, and for the cut
# fenced_ms (the poller's last answer from the isolated primary as a primary) and
# promoted_poll_ms (the poller's first answer from the new primary as a primary); for
# gone and deleted (METRIC fault_sync_node_{gone,deleted}_*): deleted_ms (the lost
# instance's Pod and PVCs gone) and rebuilt_ms (healthy with its replacement).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
# shellcheck source=faults_lib.sh
. "$(dirname "$0")/faults_lib.sh"
cluster_setup loss
n_nodes=$(kubectl get nodes --no-headers | wc -l)
[ "$n_nodes" -ge 3 ] || e2e_fail "test_node_loss needs three nodes, the substrate has $n_nodes"
home=$(e2e_node_names | head -n 1)
cluster_crd
LOST_TIMEOUT=15
cluster_helm_install --set "nodeSelector.kubernetes\.io/hostname=$home" --set "nodeLostTimeoutSeconds=$LOST_TIMEOUT"
FAULTS_CLIENT_NODE=$home faults_setup 1
# A second -rw writer whose COMMITs give up after 1 s (an application with a short timeout;
# the fault suite's writer waits 5 s): the connection of an application to a frozen
# primary hangs until its own timeout (the frozen kernel ACKs it), so when writes resume
# for one that does not wait is this writer's outage (outage_fast_ms).
nsenter --net="/proc/$(cat "$AGENT_STATE/run/${ns}_client_client.pid")/ns/net" "$WRITER" write \
	--conninfo "host=$(k get svc "$C-rw" -o jsonpath='{.spec.clusterIP}')" --table ledger_rw1 \
	--ledger "$tmp/faults/rw1.ledger" --uncertain "$tmp/faults/rw1.uncertain" \
	--commit-timeout-ms 1000 </dev/null >"$tmp/faults/rw1.log" 2>&1 &
faults_pids+=($!)
e2e_wait_for "[ -s '$tmp/faults/rw1.ledger' ]" 30 || e2e_fail "the 1 s -rw writer acknowledged nothing"
# fast_checks T0: the 1 s writer's longest gap from T0 and its lost COMMITs (none).
fast_checks() {
	local l
	m outage_fast_ms "$(outage "$1" "$tmp/faults/rw1.ledger")"
	l=$(lost ledger_rw1 "$tmp/faults/rw1.ledger")
	m lost_fast "$l"
	e2e_assert_eq 0 "$l" "$scen: acknowledged COMMITs of the 1 s writer lost"
}
node_of() { k get pod "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }
# instances: the names of the Cluster's instance Pods, sorted (the scenario that rebuilds
# one leaves serials other than 1-3)
instances() {
	k get pods -l "cnpg.io/cluster=$C,cnpg.io/podRole=instance" \
		-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort
}
for p in $(kubectl -n "$opns" get pods -o name) pod/client; do
	pn=${p#pod/}
	n=$(kubectl -n "$opns" get pod "$pn" -o jsonpath='{.spec.nodeName}' 2>/dev/null || node_of "$pn")
	e2e_assert_eq "$home" "$n" "the node of $pn"
done
placed=$(for i in 1 2 3; do node_of "$C-$i"; echo; done | sort -u | grep -c . || true)
e2e_assert_eq 3 "$placed" "nodes the three instances run on"

# primary_off_home: the primary runs on another node than $home (a switchover to the
# instance on the next node when it does not).
primary_off_home() {
	local p i
	p=$(status currentPrimary)
	[ "$(node_of "$p")" != "$home" ] && return 0
	for i in $(instances); do [ "$(node_of "$i")" != "$home" ] && break; done
	e2e_log "the primary $p runs on $home: switchover to $i on $(node_of "$i")"
	echo "{\"target\":\"$i\"}" >"$tmp/faults/sw.json"
	kubectl create --raw "/apis/live.postgresql.cnpg.io/v1/namespaces/$ns/clusters/$C/switchover" \
		-f "$tmp/faults/sw.json" >/dev/null
	e2e_wait_for "[ \"\$(status currentPrimary)\" = $i ]" 60 0.2 || e2e_fail "switchover to $i"
	wait_healthy 3 120
}

# watch_rw OUT: every 100 ms "ms addresses" of -rw's endpoints into OUT.
watch_rw() {
	trap 'exit 0' TERM
	local t v
	while :; do
		t=$(now_ms)
		v=$(k get endpointslices -l "kubernetes.io/service-name=$C-rw" \
			-o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null) || v='?'
		echo "$t ${v:--}" >>"$1"
		sleep 0.1
	done
}

# rw_check T0 OLD_IP: -rw left OLD_IP after T0 and never came back to it.
rw_check() {
	local left back
	left=$(awk -v t="$1" -v ip="$2" '$1 >= t && $0 !~ (" " ip "( |$)") && $2 != "?" { print $1 - t; exit }' "$tmp/faults/$scen.rw")
	[ -n "$left" ] || e2e_fail "$scen: -rw never left $2"
	m rw_left_old_ms "$left"
	back=$(awk -v t="$(($1 + left))" -v ip="$2" '$1 > t && $0 ~ (" " ip "( |$)") { print; exit }' "$tmp/faults/$scen.rw")
	e2e_assert_eq "" "$back" "$scen: -rw back on the old primary $2 after it left it"
}

# notready_then_nothing NODE T0 OLD: the Node turns NotReady; 5 s later the primary is
# still the one the failover chose (no second failover).
notready_then_nothing() {
	local cur tgt
	cur=$(status currentPrimary)
	e2e_wait_for "! e2e_node_ready $1" 60 0.5 || e2e_fail "$scen: $1 never NotReady"
	m notready_ms $(($(now_ms) - $2))
	sleep 5
	tgt=$(status targetPrimary)
	e2e_assert_eq "$cur" "$(status currentPrimary)" "$scen: currentPrimary after the Node turned NotReady"
	e2e_assert_eq "$cur" "$tgt" "$scen: targetPrimary after the Node turned NotReady"
	e2e_assert_ne "$3" "$cur" "$scen: the primary after the failover"
}

# all_streaming: both replicas stream from the primary (a Ready replica may not: one that
# streamed from the old primary past the promotion can follow nobody).
all_streaming() {
	local p
	p=$(status currentPrimary)
	e2e_wait_for "[ \"\$(sql $p \"select count(*) from pg_stat_replication where state = 'streaming'\")\" = 2 ]" 30 0.5 ||
		e2e_fail "$scen: replicas streaming from $p: $(sql "$p" "select string_agg(application_name || ':' || state, ' ') from pg_stat_replication")"
}

# rejoin_how POD: pg_rewind or re-clone, from the instance's log.
rejoin_how() {
	local log="$AGENT_STATE/logs/${ns}_$1_postgres.log"
	if grep -q "re-cloned" "$log" 2>/dev/null; then echo reclone
	elif grep -qi "pg_rewind" "$log" 2>/dev/null; then echo rewind
	else echo unknown; fi
}

node_loss() { # stop|cut
	scen=node_$1
	local p ip node t0 wpid tb
	primary_off_home
	p=$(status currentPrimary)
	ip=$(pod_ip "$p")
	node=$(node_of "$p")
	e2e_log "=== $scen: node $node of the primary $p ($ip)"
	pin_start "$p"
	watch_rw "$tmp/faults/$scen.rw" &
	wpid=$!
	faults_pids+=("$wpid")
	t0=$(now_ms)
	if [ "$1" = stop ]; then e2e_node_stop "$node"; else e2e_node_cut "$node"; fi
	wait_new_primary "$p" "$t0" 60
	m detect_ms "$detect_ms"
	wait_promoted "$p" "$t0"
	notready_then_nothing "$node" "$t0" "$p"
	kill -TERM "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null || true
	rw_check "$t0" "$ip"
	if [ "$1" = cut ]; then
		assert_fenced "$t0" "$ip"
		fence_vs_promotion "$t0" "$p"
	fi
	tb=$(now_ms)
	if [ "$1" = stop ]; then e2e_node_start "$node"; else e2e_node_uncut "$node"; fi
	noticed=1
	finish "$t0" "$p" failover
	fast_checks "$t0"
	m rejoin_s $((($(now_ms) - tb) / 1000))
	all_streaming
	e2e_log "$scen: $p rejoined by $(rejoin_how "$p")"
}

# fence_vs_promotion T0 OLD: from the poller (host -> Pod IPs, which a cut still lets
# through; a STATE line at each change), the isolated primary stops answering as a primary
# (fenced) before another instance answers as one (promoted).
fence_vs_promotion() {
	local fenced first new
	new=$(status currentPrimary)
	fenced=$(awk -v t="$1" -v o="$2" '$1 >= t && $2 == "STATE" { for (i = 3; i <= NF; i++)
		if (index($i, o "=") == 1 && $i != o "=P") { print $1; exit } }' "$tmp/faults/poll.out")
	first=$(awk -v t="$1" -v n="$new" '$1 >= t && $2 == "STATE" { for (i = 3; i <= NF; i++) if ($i == n "=P") { print $1; exit } }' \
		"$tmp/faults/poll.out")
	[ -n "$first" ] || e2e_fail "$scen: the poller never saw $new primary"
	[ -n "$fenced" ] || e2e_fail "$scen: the poller saw $2 answer as a primary all along"
	m fenced_ms $((fenced - $1))
	m promoted_poll_ms $((first - $1))
	((fenced < first)) || e2e_fail "$scen: $2 answered as a primary until +$((fenced - $1)) ms, $new as one from +$((first - $1)) ms"
}

# node_gone [deleted]: scenario (c); "deleted": (d).
node_gone() {
	scen=node_${1:-gone}
	local p r n rnode t0 l1 newp now before wait_s=$((LOST_TIMEOUT + 120))
	primary_off_home
	p=$(status currentPrimary)
	before=$(instances)
	for r in $before; do
		n=$(node_of "$r")
		[ "$r" != "$p" ] && [ "$n" != "$home" ] && break
	done
	rnode=$(node_of "$r")
	[ "$r" != "$p" ] && [ "$rnode" != "$home" ] || e2e_fail "$scen: no replica off $home"
	e2e_log "=== $scen: node $rnode of the replica $r, left dead"
	t0=$(now_ms)
	e2e_node_kill "$rnode"
	if [ "$scen" = node_deleted ]; then
		# the pod garbage collector deletes Pods of a missing Node after 40 s; the new Pod
		# is then unschedulable (its volume is pinned to the node) for LOST_TIMEOUT
		kubectl delete node "$rnode" --wait=false >/dev/null
		wait_s=$((LOST_TIMEOUT + 180))
	fi
	e2e_wait_for "! k get pod $r >/dev/null 2>&1 && ! k get pvc $r >/dev/null 2>&1" $wait_s 1 ||
		e2e_fail "$scen: $r and its PVC still there $wait_s s after its node died ($(k get pod,pvc --no-headers 2>&1 | tr '\n' ' '))"
	m deleted_ms $(($(now_ms) - t0))
	k get events --field-selector reason=InstanceNodeLost -o jsonpath='{.items[*].message}' | grep -q "$r" ||
		e2e_fail "$scen: no InstanceNodeLost Event naming $r"
	wait_healthy 3 300
	m rebuilt_ms $(($(now_ms) - t0))
	e2e_assert_eq "$p" "$(status currentPrimary)" "$scen: the primary (no failover for a replica's node)"
	newp=$(instances | grep -v -x -F "$before" | head -n 1 || true)
	[ -n "$newp" ] || e2e_fail "$scen: no new instance ($(k get pods --no-headers | awk '{print $1}' | tr '\n' ' '))"
	e2e_assert_ne "$rnode" "$(node_of "$newp")" "$scen: the node of the new instance $newp"
	e2e_assert_eq t "$(sql "$newp" 'select pg_is_in_recovery()')" "$scen: $newp is a replica"
	all_streaming
	now=$(now_ms)
	e2e_wait_for "awk -v t=$now '\$2 > t { f = 1 } END { exit !f }' '$tmp/faults/rw.ledger'" 60 ||
		e2e_fail "$scen: the -rw writer is not writing"
	l1=$(lost ledger_rw "$tmp/faults/rw.ledger")
	m lost "$l1"
	e2e_assert_eq 0 "$l1" "$scen: acknowledged COMMITs lost"
	fast_checks "$t0"
	e2e_assert_eq 0 "$(two_primaries)" "$scen: two primaries at once"
	e2e_log "$scen: $r rebuilt as $newp on $(node_of "$newp")"
	e2e_node_start "$rnode"
	e2e_wait_for "e2e_node_ready $rnode" 90 1 || e2e_fail "$scen: $rnode not Ready again"
	rebalance "$newp"
}

# rebalance POD: the rebuilt replica POD was placed beside another instance while its
# node was dead; the next scenario needs one instance per node again. Delete POD with its
# PVCs, as a user would: the Cluster makes a new replica, which the scheduler's
# anti-affinity puts on the node that came back.
rebalance() {
	local n=$(node_of "$1") i shared=0
	for i in $(instances); do [ "$i" != "$1" ] && [ "$(node_of "$i")" = "$n" ] && shared=1; done
	((shared)) || return 0
	e2e_log "$scen: $1 shares $n with another instance: rebuilt once more, on the free node"
	k delete pvc -l "cnpg.io/instanceName=$1" --wait=false >/dev/null
	k delete pod "$1" --wait=false >/dev/null
	e2e_wait_for "! k get pod $1 >/dev/null 2>&1" 60 1 || e2e_fail "$scen: $1 not deleted"
	wait_healthy 3 300
	placed=$(for i in $(instances); do node_of "$i"; echo; done | sort -u | grep -c . || true)
	e2e_assert_eq 3 "$placed" "$scen: nodes the three instances run on after the rebalance"
}

node_loss stop
node_loss cut
node_gone
node_gone deleted
e2e_log "node loss: all checks passed"
