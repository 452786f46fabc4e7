#!/usr/bin/env bash
# Take down everything the e2e suite started, then verify that nothing is left:
#   - the control plane (STATE/pids/*.pid, each its own process group),
#   - the node agent and its pods (STATE/agent/**/*.pid, every process inside a
#     pgop-e2e-* network namespace or a namespace bind-mounted under STATE, and any
#     process carrying PGOP_E2E_OWNER=STATE in its environment),
#   - network namespaces pgop-e2e-*, the bridge pgope2e0 and every link enslaved to it,
#     host links pgope2e* / pe2e* / pgop-e2e*, links listed in STATE/agent/links, the
#     nftables tables pgop_e2e and pgop_e2e_<n> (any family), sysctls listed in STATE/agent/sysctl.restore,
#   - mounts under STATE; then STATE itself (unless PGOP_E2E_KEEP_STATE=1).
#
# Usage: tests/e2e/cluster-down.sh [STATE_DIR]      (default /tmp/pgop-e2e)
# Exit status: 0 when nothing is left behind, 1 otherwise (leftovers are listed).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export PGOP_E2E_STATE=${1:-${PGOP_E2E_STATE:-/tmp/pgop-e2e}}
# shellcheck source=lib.sh
. "$here/lib.sh"
S=$(realpath -m "$PGOP_E2E_STATE")
e2e_check_state_dir "$S" || exit 2

# Never signal ourselves, a caller or our own process group: run.sh exports
# PGOP_E2E_OWNER to its tests so that strays they leave are found, and its pipelines
# (e.g. "cluster-down.sh | tee") carry it too.
declare -A protected=()
p=$$
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
	protected[$p]=1
	p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
done
my_pgid=$(e2e_pgid_of $$)

host_netns=$(readlink /proc/1/ns/net)

# Host-wide names (netns pgop-e2e-*, bridge pgope2e0, pe2e* links, nft pgop_e2e) are shared
# by every e2e environment on the machine. While another one is live (e.g. an engineer's
# own cluster), leave them to it and remove only what is provably ours.
mapfile -t others < <(e2e_other_envs "$S")
global=1
if ((${#others[@]})); then
	global=
	e2e_log "another e2e environment is live (${others[*]}): leaving host-wide names to it"
fi

# PIDs from pid files, only if the process is older than its pid file: a PID reused
# since (e.g. a state dir that survived a reboot) belongs to someone else.
btime=$(awk '/^btime/ {print $2}' /proc/stat)
hz=$(getconf CLK_TCK)
pids_from_files() { # FILE...
	local f pid start
	for f in "$@"; do
		[ -f "$f" ] || continue
		pid=$(head -c 32 "$f" | tr -dc 0-9)
		if [ -z "$pid" ] || [ ! -r "/proc/$pid/stat" ]; then continue; fi
		start=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk -v b="$btime" -v hz="$hz" '{print int(b + $20 / hz)}')
		[ -n "$start" ] && [ "$start" -le $(($(stat -c %Y "$f") + 2)) ] && echo "$pid"
	done
}

# Inodes of our network namespaces: named ones with our prefix, and nsfs mounts under S.
our_netns() {
	local f
	[ -n "$global" ] && for f in /run/netns/"$E2E_NETNS_PREFIX"*; do
		[ -e "$f" ] && echo "net:[$(stat -L -c %i "$f" 2>/dev/null)]"
	done
	awk -v s="$S" '{ for (i = 7; $i != "-"; i++); if ($(i+1) == "nsfs" && ($5 == s || index($5, s "/") == 1)) print $5 }' \
		/proc/self/mountinfo | while read -r f; do
		echo "net:[$(stat -L -c %i "$f" 2>/dev/null)]"
	done
}

# Every live process that belongs to this e2e state dir, one PID per line.
our_pids() {
	local f pid ns
	{
		pids_from_files "$S"/pids/*.pid
		[ -d "$S/agent" ] && find "$S/agent" -name '*.pid' -type f -print0 2>/dev/null |
			while IFS= read -r -d '' f; do pids_from_files "$f"; done
		grep -lsxzF "PGOP_E2E_OWNER=$S" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
		mapfile -t nss < <(our_netns | grep -vxF "$host_netns" | sort -u)
		if ((${#nss[@]})); then
			for f in /proc/[0-9]*/ns/net; do
				ns=$(readlink "$f" 2>/dev/null) || continue
				for n in "${nss[@]}"; do
					if [ "$ns" = "$n" ]; then
						pid=${f#/proc/}
						echo "${pid%%/*}"
					fi
				done
			done
		fi
	} 2>/dev/null | grep -E '^[0-9]+$' | sort -un | while read -r pid; do
		[ -n "${protected[$pid]:-}" ] && continue
		[ "$(e2e_pgid_of "$pid")" = "$my_pgid" ] && continue
		# Zombies are dead already; their parent reaps them.
		[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && continue
		kill -0 "$pid" 2>/dev/null && echo "$pid"
	done
}

signal_all() { # SIG PID...
	local sig=$1 pid
	shift
	for pid in "$@"; do
		# A daemon started by cluster-up.sh leads its own process group: signal the group.
		if [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ]; then
			kill "-$sig" -- "-$pid" 2>/dev/null
		fi
		kill "-$sig" "$pid" 2>/dev/null
		kill -CONT "$pid" 2>/dev/null # a node a test stopped (e2e_node_stop)
	done
}

wait_gone() { # TIMEOUT
	local deadline=$(($(date +%s) + $1))
	while [ -n "$(our_pids)" ]; do
		(($(date +%s) < deadline)) || return 1
		sleep 0.2
	done
}

# 1. The node agent first, so it does not restart pods we are about to kill.
if [ -d "$S/agent" ]; then
	mapfile -t agent < <(pids_from_files "$S"/agent/*.pid "$S"/agent/nodes/*/agent.pid)
	if ((${#agent[@]})); then
		signal_all TERM "${agent[@]}"
		sleep 1
	fi
fi
# 2. Everything else, scheduler/controller-manager before the apiserver before etcd.
mapfile -t first < <(pids_from_files "$S/pids/kube-scheduler.pid" "$S/pids/kube-controller-manager.pid")
((${#first[@]})) && signal_all TERM "${first[@]}"
mapfile -t pids < <(our_pids)
if ((${#pids[@]})); then
	e2e_log "stopping ${#pids[@]} processes of $S"
	signal_all TERM "${pids[@]}"
	if ! wait_gone "${PGOP_E2E_TERM_GRACE:-10}"; then
		mapfile -t pids < <(our_pids)
		e2e_log "killing ${#pids[@]} processes that ignored SIGTERM: ${pids[*]}"
		signal_all KILL "${pids[@]}"
		wait_gone 10
	fi
fi

# 3. Network: namespaces, links, nftables.
our_named_netns() { [ -n "$global" ] && ls -d /run/netns/"$E2E_NETNS_PREFIX"* 2>/dev/null; }
for f in $(our_named_netns); do
	ip netns delete "${f##*/}" 2>/dev/null || { umount -l "$f" 2>/dev/null; rm -f "$f"; }
done
links() {
	# Ports of the bridge first (veths with any name), then the bridge and prefixed links.
	if [ -n "$global" ]; then
		ip -o link show master "$E2E_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1
		ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "$E2E_LINK_RE"
	fi
	[ -f "$S/agent/links" ] && grep -vE '^\s*(#|$)' "$S/agent/links" | while read -r l; do
		ip link show "$l" >/dev/null 2>&1 && echo "$l"
	done
}
for l in $(links | awk '!seen[$0]++'); do ip link delete "$l" 2>/dev/null; done
# Sysctls the agent changed (e.g. ip_forward), as "key=old value" lines to restore.
if [ -f "$S/agent/sysctl.restore" ]; then
	grep -E '^[a-z0-9_./-]+=[0-9a-zA-Z ]*$' "$S/agent/sysctl.restore" | while IFS='=' read -r k v; do
		[ -e "/proc/sys/${k//.//}" ] && sysctl -q -w "$k=$v" >/dev/null 2>&1
	done
fi
# "FAMILY NAME" lines: pgop_e2e and the other nodes' pgop_e2e_<n> (an agent killed with
# SIGKILL leaves its tables)
nft_tables() {
	[ -n "$global" ] || return 0
	nft list tables 2>/dev/null |
		awk -v t="$E2E_NFT_TABLE" '$1 == "table" && ($3 == t || $3 ~ "^" t "_[0-9]+$") {print $2, $3}'
}
if command -v nft >/dev/null; then
	nft_tables | while read -r fam tbl; do nft delete table "$fam" "$tbl"; done
fi

# 4. Mounts under S, deepest first.
mounts() {
	awk -v s="$S" '$5 == s || index($5, s "/") == 1 {print $5}' /proc/self/mountinfo |
		awk '{print length, $0}' | sort -rn | cut -d' ' -f2-
}
for m in $(mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done

# 5. The state itself.
if [ -z "${PGOP_E2E_KEEP_STATE:-}" ] && [ -d "$S" ]; then
	rm -rf --one-file-system "$S" 2>/dev/null || rm -rf "$S"
fi

# 6. Verify.
left=()
mapfile -t pids < <(our_pids)
for p in "${pids[@]}"; do left+=("process $p: $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | cut -c1-120)"); done
for f in $(our_named_netns); do left+=("netns ${f##*/}"); done
for l in $(links | sort -u); do left+=("link $l"); done
while read -r fam tbl; do left+=("nft table $fam $tbl"); done < <(nft_tables)
for m in $(mounts); do left+=("mount $m"); done
[ -z "${PGOP_E2E_KEEP_STATE:-}" ] && [ -e "$S" ] && left+=("directory $S")
if ((${#left[@]})); then
	e2e_log "cluster-down: left behind:"
	printf '  %s\n' "${left[@]}" >&2
	exit 1
fi
e2e_log "cluster-down: nothing left of $S"
