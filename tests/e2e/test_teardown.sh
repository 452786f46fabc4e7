#!/usr/bin/env bash
# cluster-down.sh removes everything a node agent and its pods can leave behind, and
# reports what it could not remove. Runs without the control plane, on a throw-away
# state dir, with the same kinds of objects the node agent creates: a pod network
# namespace (named and bind-mounted under STATE), a bridge and veths, the nftables
# table, a volume mount, an agent process (pid file) and a pod process in the netns.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || e2e_skip "needs root (network namespaces)"
# Run in private network, PID and mount namespaces (own /run/netns, links, nft tables,
# process table), so the host-wide names of a live e2e environment are never touched and
# cluster-down.sh's host-wide sweep is exercised for real.
if [ -z "${E2E_TEARDOWN_ISOLATED:-}" ] && unshare --net --pid --fork --kill-child --mount-proc \
	--mount --propagation private true 2>/dev/null; then
	# shellcheck disable=SC2016  # $0 expands in the inner shell
	exec unshare --net --pid --fork --kill-child --mount-proc --mount --propagation private \
		env E2E_TEARDOWN_ISOLATED=1 bash -c \
		'mkdir -p /run/netns && mount -t tmpfs e2e-netns /run/netns && ip link set lo up && exec bash "$0"' "$0"
fi
command -v nft >/dev/null || e2e_fail "nft missing (scripts/setup-deps.sh installs nftables)"
if [ -e /run/netns/"${E2E_NETNS_PREFIX}"teardown ]; then e2e_fail "netns ${E2E_NETNS_PREFIX}teardown exists already"; fi

S=/tmp/pgop-e2e-teardown-test
others=$(e2e_other_envs "$S")
if [ -n "$others" ]; then
	e2e_skip "another e2e environment is live ($others); this test needs the host-wide names"
fi
export PGOP_E2E_STATE=$S
# Our processes belong to this throw-away environment (not to the runner's).
export PGOP_E2E_OWNER=$S
"$E2E_DIR/cluster-down.sh" "$S" >/dev/null 2>&1 || true
mkdir -p "$S/agent/pods/p1/vol" "$S/agent/netns" "$S/pids"
ns=${E2E_NETNS_PREFIX}teardown

e2e_log "creating what an agent would: netns $ns, bridge, veth, nft table, mounts, processes"
ip netns add "$ns"
ip link add "$E2E_BRIDGE" type bridge
ip link add vethe2etd0 type veth peer name eth0 netns "$ns"   # found as a port of the bridge
ip link set vethe2etd0 master "$E2E_BRIDGE"
ip link add pgope2ex type veth peer name vethe2ex1               # found by its prefix
ip link add e2elst0 type veth peer name e2elst1   # a link known only from agent/links
echo e2elst0 >"$S/agent/links"
nft add table inet "$E2E_NFT_TABLE"
# A sysctl the agent changed and recorded for restoring (harmless one: ARP on lo).
old_arp=$(sysctl -n net.ipv4.conf.lo.arp_ignore)
echo "net.ipv4.conf.lo.arp_ignore=$old_arp" >"$S/agent/sysctl.restore"
sysctl -q -w net.ipv4.conf.lo.arp_ignore=$(((old_arp + 1) % 2))
mount -t tmpfs -o size=1m e2e-vol "$S/agent/pods/p1/vol"
# A pod process inside the named netns, detached and ignoring SIGTERM.
ip netns exec "$ns" setsid bash -c 'trap "" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &
pod_pid=$!
# A second pod namespace that exists only as a bind mount under STATE (unshare --net=FILE).
touch "$S/agent/netns/p2"
unshare --net="$S/agent/netns/p2" true
nsenter --net="$S/agent/netns/p2" setsid sleep 600 </dev/null >/dev/null 2>&1 &
pod2_pid=$!
# The agent itself, known by its pid file, and a helper known only by the owner marker.
setsid sleep 600 </dev/null >/dev/null 2>&1 &
echo $! >"$S/agent/agent.pid"
agent_pid=$!
PGOP_E2E_OWNER=$S setsid sleep 600 </dev/null >/dev/null 2>&1 &
marked_pid=$!
sleep 0.5
for p in $pod_pid $pod2_pid $agent_pid $marked_pid; do kill -0 "$p" || e2e_fail "setup: $p not running"; done

e2e_log "cluster-down.sh $S"
PGOP_E2E_TERM_GRACE=2 "$E2E_DIR/cluster-down.sh" "$S" || e2e_fail "cluster-down.sh reported leftovers"

e2e_log "checking that nothing is left"
sleep 0.2
for p in $pod_pid $pod2_pid $agent_pid $marked_pid; do
	if kill -0 "$p" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ]; then
		e2e_fail "process $p still runs"
	fi
done
[ ! -e "/run/netns/$ns" ] || e2e_fail "netns $ns still exists"
for l in "$E2E_BRIDGE" vethe2etd0 pgope2ex vethe2ex1 e2elst0 e2elst1; do
	! ip link show "$l" >/dev/null 2>&1 || e2e_fail "link $l still exists"
done
! nft list table inet "$E2E_NFT_TABLE" >/dev/null 2>&1 || e2e_fail "nft table still exists"
! grep -q " $S" /proc/self/mountinfo || e2e_fail "mounts under $S remain"
[ ! -e "$S" ] || e2e_fail "$S still exists"
e2e_assert_eq "$old_arp" "$(sysctl -n net.ipv4.conf.lo.arp_ignore)" "restored sysctl"

e2e_log "a leftover it cannot remove is reported (exit 1)"
mkdir -p "$S/pids"
setsid sleep 600 </dev/null >/dev/null 2>&1 &
stuck=$!
echo $stuck >"$S/pids/stuck.pid"
# Keep the process alive: SIGSTOP it would still die on SIGKILL, so instead check the
# report with a directory we make undeletable for the duration.
chattr +i "$S/pids" 2>/dev/null && immutable=1 || immutable=
if [ -n "$immutable" ]; then
	if "$E2E_DIR/cluster-down.sh" "$S" 2>"$S.err"; then
		chattr -i "$S/pids"
		e2e_fail "cluster-down.sh succeeded although $S could not be removed"
	fi
	chattr -i "$S/pids"
	grep -q "directory $S" "$S.err" || e2e_fail "leftover not reported: $(cat "$S.err")"
	rm -f "$S.err"
fi
"$E2E_DIR/cluster-down.sh" "$S" >/dev/null 2>&1 || e2e_fail "final cleanup"
kill -0 $stuck 2>/dev/null && [ "$(awk '{print $3}' "/proc/$stuck/stat")" != Z ] && e2e_fail "pid-file process survived"
e2e_log "ok"
