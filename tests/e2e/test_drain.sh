#!/usr/bin/env bash
# e2e-timeout: 600
# Drains (issue 26), on the multi-node substrate (three nodes or more): the sample Cluster
# (3 instances, ANY 1 synchronous) under the fault suite's writers (faults_lib.sh), pgop
# installed by its chart:
#   - the three instances run on three different nodes (the default preferred pod
#     anti-affinity), both PodDisruptionBudgets exist (<c>-primary minAvailable 1, <c>
#     minAvailable 1 of the replicas);
#   - `kubectl drain` of the primary's node (its Cluster's pods): the primary's PDB refuses
#     the eviction until the reconciler, seeing the node cordoned, has switched over to the
#     most advanced replica on another node; targetPrimary changes before the old primary's
#     Pod is evicted; the drain completes; 0 acknowledged COMMITs lost (synchronous), never
#     two primaries; `kubectl uncordon` and the Cluster is whole again (the old primary back
#     on its volume as a replica);
#   - the same once more, now that the primary is not serial 1;
#   - a placement change (nodeSelector on a label every node has, a toleration of a taint
#     none has) rolls the instances: each Pod recreated with the new placement and the
#     same pgop.io/placementHash, replicas before the primary, still on three nodes, Events
#     RestartingInstance saying the placement is why, healthy again, 0 COMMITs lost;
#   - nodeMaintenanceWindow {inProgress: true, reusePVC: false} and a drain of a replica's
#     node: the replica's Pod and PVCs deleted, a new instance cloned on another node, no
#     failover, 0 COMMITs lost.
# Figures (METRIC fault_sync_drain<N>_*): switchover_ms (drain -> targetPrimary moved),
# evicted_ms (drain -> the old primary's Pod deleted), drained_ms (kubectl drain returned),
# outage_ms (longest gap between two acknowledged -rw COMMITs), lost, healthy_s;
# fault_sync_placement_rolled_ms (patch -> every Pod recreated with the new placement);
# fault_sync_reusepvc_{pvc_deleted_ms,replaced_ms} (drain -> the replica's PVC gone, healthy
# with its replacement).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
# shellcheck source=faults_lib.sh
. "$(dirname "$0")/faults_lib.sh"
cluster_setup drain
n_nodes=$(kubectl get nodes --no-headers | wc -l)
[ "$n_nodes" -ge 3 ] || e2e_fail "test_drain needs three nodes, the substrate has $n_nodes"
cluster_crd
cluster_helm_install
faults_setup 1
node_of() { k get pod "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null; }

# ---- placement and PDBs ---------------------------------------------------------------
placed=$(for i in 1 2 3; do node_of "$C-$i"; echo; done | sort -u | grep -c . || true)
e2e_assert_eq 3 "$placed" "nodes the three instances run on ($(for i in 1 2 3; do printf '%s ' "$C-$i@$(node_of "$C-$i")"; done))"
pdbs=$(k get pdb -o jsonpath='{range .items[*]}{.metadata.name}:{.spec.minAvailable}:{.spec.selector.matchLabels.cnpg\.io/instanceRole} {end}')
e2e_assert_eq "$C:1:replica $C-primary:1:primary " "$pdbs" "PodDisruptionBudgets"
e2e_log "instances on $placed nodes; PDBs $pdbs"

# watch_drain OLD UID OUT: every 100 ms, the first time (ms) targetPrimary leaves OLD, the
# first time OLD's Pod (uid UID) is deleted or terminating, and the first time
# currentPrimary leaves OLD, into OUT as "sw ev cur".
watch_drain() {
	trap 'exit 0' TERM
	local sw=0 ev=0 cur=0 t v
	while :; do
		# each observation stamped with the time its query started
		if [ "$sw" = 0 ]; then
			t=$(now_ms)
			v=$(status targetPrimary) || v=
			[ -n "$v" ] && [ "$v" != "$1" ] && sw=$t
		fi
		if [ "$cur" = 0 ]; then
			t=$(now_ms)
			v=$(status currentPrimary) || v=
			[ -n "$v" ] && [ "$v" != "$1" ] && cur=$t
		fi
		if [ "$ev" = 0 ]; then
			t=$(now_ms)
			v=$(k get pod "$1" -o jsonpath='{.metadata.uid}/{.metadata.deletionTimestamp}' 2>/dev/null) || v=gone/
			{ [ "${v%%/*}" != "$2" ] || [ -n "${v#*/}" ]; } && ev=$t
		fi
		echo "$sw $ev $cur" >"$3.new" && mv "$3.new" "$3"
		sleep 0.1
	done
}

drain_once() { # N
	scen=drain$1
	local p node uid t0 sw ev cur wpid
	p=$(status currentPrimary)
	node=$(node_of "$p")
	uid=$(k get pod "$p" -o jsonpath='{.metadata.uid}')
	e2e_log "=== $scen: draining $node, the node of the primary $p (serial ${p##*-})"
	[ "$1" = 1 ] || e2e_assert_ne 1 "${p##*-}" "$scen: the primary's serial (the second drain is of another)"
	pin_start "$p"
	watch_drain "$p" "$uid" "$tmp/faults/$scen.watch" &
	wpid=$!
	faults_pids+=("$wpid")
	t0=$(now_ms)
	kubectl drain "$node" --pod-selector "cnpg.io/cluster=$C" --ignore-daemonsets \
		--delete-emptydir-data --timeout=150s >"$tmp/faults/$scen.drain.log" 2>&1 ||
		{ cat "$tmp/faults/$scen.drain.log" >&2; e2e_fail "$scen: kubectl drain $node"; }
	m drained_ms $(($(now_ms) - t0))
	e2e_wait_for "read -r _ ev _ <'$tmp/faults/$scen.watch' && [ \"\$ev\" != 0 ]" 10 0.2 || true
	kill -TERM "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null || true
	read -r sw ev cur <"$tmp/faults/$scen.watch"
	[ "$sw" != 0 ] || e2e_fail "$scen: targetPrimary never left $p"
	[ "$ev" != 0 ] || e2e_fail "$scen: $p was never evicted"
	m switchover_ms $((sw - t0))
	m evicted_ms $((ev - t0))
	[ "$cur" = 0 ] || m promoted_ms $((cur - t0))
	((sw < ev)) || e2e_fail "$scen: $p evicted ($((ev - t0)) ms) before the switchover ($((sw - t0)) ms)"
	e2e_assert_contains "$(cat "$tmp/faults/$scen.drain.log")" "evicted" "$scen: kubectl drain evicted"
	grep -q "disruption budget" "$tmp/faults/$scen.drain.log" &&
		e2e_log "$scen: the primary's PDB held the eviction: $(grep -m1 'disruption budget' "$tmp/faults/$scen.drain.log")"
	e2e_assert_eq True "$(kubectl get node "$node" -o jsonpath='{.spec.unschedulable}' | sed 's/true/True/')" "$scen: $node cordoned"
	kubectl uncordon "$node" >/dev/null
	finish "$t0" "$p" failover
}

# placement_roll: a placement change is a rolling restart (reconciler.md, "Placement").
placement_roll() {
	scen=placement
	local p t0 i uid=() born=() hashes
	p=$(status currentPrimary)
	for i in 1 2 3; do uid[i]=$(k get pod "$C-$i" -o jsonpath='{.metadata.uid}'); done
	e2e_log "=== $scen: nodeSelector and tolerations patched (primary $p)"
	pin_start "$p"
	t0=$(now_ms)
	k patch cluster "$C" --type merge -p '{"spec":{"affinity":{"nodeSelector":{"kubernetes.io/os":"linux"},"tolerations":[{"key":"pgop.io/e2e-placement","operator":"Exists","effect":"NoSchedule"}]}}}' >/dev/null
	for i in 1 2 3; do
		e2e_wait_for "v=\$(k get pod $C-$i -o jsonpath='{.metadata.uid}/{.spec.nodeSelector.kubernetes\\.io/os}') && [ \"\${v%%/*}\" != '${uid[i]}' ] && [ \"\${v#*/}\" = linux ]" 240 1 ||
			e2e_fail "$scen: $C-$i was not recreated with the new nodeSelector"
	done
	m rolled_ms $(($(now_ms) - t0))
	finish "$t0" "$p" any
	for i in 1 2 3; do
		e2e_assert_contains "$(k get pod "$C-$i" -o jsonpath='{.spec.tolerations[*].key}')" \
			pgop.io/e2e-placement "$scen: $C-$i tolerations"
		born[i]=$(k get pod "$C-$i" -o jsonpath='{.metadata.creationTimestamp}')
	done
	hashes=$(for i in 1 2 3; do k get pod "$C-$i" -o jsonpath='{.metadata.annotations.pgop\.io/placementHash}'; echo; done | sort -u)
	e2e_assert_eq 1 "$(grep -c . <<<"$hashes")" "$scen: one placementHash on the three Pods ($hashes)"
	for i in 1 2 3; do # the primary's Pod last (RFC 3339 UTC compares as text)
		[ "$C-$i" = "$p" ] || [[ ! ${born[${p##*-}]} < ${born[i]} ]] ||
			e2e_fail "$scen: $p recreated (${born[${p##*-}]}) before the replica $C-$i (${born[i]})"
	done
	placed=$(for i in 1 2 3; do node_of "$C-$i"; echo; done | sort -u | grep -c . || true)
	e2e_assert_eq 3 "$placed" "$scen: nodes the three instances run on"
	e2e_assert_contains "$(k get events --field-selector reason=RestartingInstance -o jsonpath='{.items[*].message}')" \
		"new placement" "$scen: the RestartingInstance Events say why"
	e2e_log "$scen: rolled in $(($(now_ms) - t0)) ms, placementHash $hashes"
}

# reuse_pvc_false: nodeMaintenanceWindow {inProgress: true, reusePVC: false} and a drain of
# a replica's node: the evicted replica's new Pod cannot be placed (its volume is on the
# cordoned node), so its Pod and PVCs are deleted and a new instance is cloned on another
# node (CloudNativePG's semantics); no failover, 0 lost.
reuse_pvc_false() {
	scen=reusepvc
	local p r node t0 before newp
	p=$(status currentPrimary)
	before=$(k get pods -l "cnpg.io/cluster=$C,cnpg.io/podRole=instance" \
		-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
	for r in $before; do [ "$r" != "$p" ] && break; done
	node=$(node_of "$r")
	e2e_log "=== $scen: maintenance window (reusePVC false), draining $node, the node of the replica $r"
	k patch cluster "$C" --type merge \
		-p '{"spec":{"nodeMaintenanceWindow":{"inProgress":true,"reusePVC":false}}}' >/dev/null
	t0=$(now_ms)
	kubectl drain "$node" --pod-selector "cnpg.io/cluster=$C" --ignore-daemonsets \
		--delete-emptydir-data --timeout=150s >"$tmp/faults/$scen.drain.log" 2>&1 ||
		{ cat "$tmp/faults/$scen.drain.log" >&2; e2e_fail "$scen: kubectl drain $node"; }
	e2e_wait_for "! k get pvc $r >/dev/null 2>&1" 120 1 ||
		e2e_fail "$scen: the PVC of $r still there ($(k get pod,pvc --no-headers 2>&1 | tr '\n' ' '))"
	m pvc_deleted_ms $(($(now_ms) - t0))
	wait_healthy 3 300
	m replaced_ms $(($(now_ms) - t0))
	newp=$(k get pods -l "cnpg.io/cluster=$C,cnpg.io/podRole=instance" \
		-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | grep -v -x -F "$before" | head -n 1 || true)
	[ -n "$newp" ] || e2e_fail "$scen: no new instance replaced $r"
	e2e_assert_ne "$node" "$(node_of "$newp")" "$scen: the node of the new instance $newp"
	e2e_assert_eq t "$(sql "$newp" 'select pg_is_in_recovery()')" "$scen: $newp is a replica"
	kubectl uncordon "$node" >/dev/null
	k patch cluster "$C" --type merge \
		-p '{"spec":{"nodeMaintenanceWindow":{"inProgress":false,"reusePVC":true}}}' >/dev/null
	finish "$t0" "$p" same
	e2e_log "$scen: $r replaced by $newp on $(node_of "$newp")"
}

drain_once 1
drain_once 2
placement_roll
reuse_pvc_false
e2e_log "drains, the placement roll and reusePVC false: all checks passed"
