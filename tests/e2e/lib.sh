# shellcheck shell=bash
# shellcheck disable=SC2034  # E2E_* names are used by the scripts that source this file
# Shared helpers for the e2e suite. Source it; it only defines functions and defaults.
#
#   . "$(dirname "$0")/lib.sh"
#   e2e_up                      # control plane up (reuses the runner's), sources STATE/env
#   e2e_log "creating things"
#   e2e_wait_for "kubectl get ns foo" 30
#   e2e_assert_eq "want" "$got" "what is compared"
#
# The contract between tests/e2e/run.sh and a test (see docs/internals/e2e.md):
#   $1 / PGOP_BIN        path to the pgop binary (may not exist if the build failed)
#   $2 / PGOP_E2E_STATE  control-plane state dir (default /tmp/pgop-e2e, never in the repo)
#   PGOP_E2E_DIR         this directory
#   PGOP_E2E_BIN         directory with kube-apiserver, kubectl, etcd, helm, ...
#   PGOP_BUILD_DIR       the CMake build dir (pgop-node-agent: tests/e2e/agent/ in it)
# A test that needs the control plane calls e2e_up (run.sh greps for it to decide which
# tests run against the shared cluster). Tests create their own namespaces and clean up.

E2E_DIR=${PGOP_E2E_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export PGOP_E2E_DIR=$E2E_DIR
PGOP_E2E_STATE=$(realpath -m "${PGOP_E2E_STATE:-/tmp/pgop-e2e}")
export PGOP_E2E_STATE
E2E_T0=${E2E_T0:-$(date +%s)}
export E2E_T0

# Default ports: fixed, high, loopback only. Override through the environment.
: "${PGOP_E2E_ETCD_PORT:=22379}"
: "${PGOP_E2E_ETCD_PEER_PORT:=22380}"
: "${PGOP_E2E_APISERVER_PORT:=26443}"
: "${PGOP_E2E_KCM_PORT:=20257}"
: "${PGOP_E2E_SCHEDULER_PORT:=20259}"
# Service addresses exist only inside network namespaces the tests create; this range is
# not routed on the build hosts (checked against `ip route` by cluster-up.sh).
: "${PGOP_E2E_SERVICE_CIDR:=10.213.0.0/16}"
: "${PGOP_E2E_BIND_ADDRESS:=127.0.0.1}"
export PGOP_E2E_ETCD_PORT PGOP_E2E_ETCD_PEER_PORT PGOP_E2E_APISERVER_PORT PGOP_E2E_KCM_PORT \
	PGOP_E2E_SCHEDULER_PORT PGOP_E2E_SERVICE_CIDR PGOP_E2E_BIND_ADDRESS

# Prefixes of everything the suite creates on the host; cluster-down.sh removes them all.
E2E_NETNS_PREFIX=pgop-e2e-  # network namespaces (ip netns)
E2E_BRIDGE=pgope2e0         # the node agent's bridge; links enslaved to it go with it
E2E_LINK_RE='^(pgope2e|pe2e|pgop-e2e)'  # other host-side links (IFNAMSIZ: 15 chars)
E2E_NFT_TABLE=pgop_e2e      # nftables table, any family

e2e_log() { printf '[e2e %4ds] %s\n' "$(($(date +%s) - E2E_T0))" "$*" >&2; }

# e2e_free_ports [N]: the first of N consecutive loopback TCP ports nobody listens on, in
# 20000-32767: below the kernel's ephemeral range (32768-60999), whose ports outgoing
# connections take at any moment (a test port picked there failed to bind: "cannot
# listen on 127.0.0.1:34392", 2026-12-07). Fails after 50 tries.
e2e_free_ports() {
	local n=${1:-1} base i p busy
	for _ in $(seq 1 50); do
		base=$((20000 + RANDOM % (12768 - n)))
		busy=
		for ((i = 0; i < n; i++)); do
			p=$((base + i))
			ss -Hltn "sport = :$p" | grep -q . && { busy=1; break; }
		done
		[ -z "$busy" ] && { echo "$base"; return 0; }
	done
	return 1
}

# e2e_fail MSG: log and exit the test with status 1.
e2e_fail() {
	e2e_log "FAIL: $*"
	exit 1
}

# e2e_skip REASON: the test cannot run here; log "SKIP: REASON" (run.sh prints it) and exit
# 77. Under CI=true or PGOP_TEST_STRICT=1 the runner counts it as a failure. Use it only
# for what the test command cannot install or build (e.g. not root, another environment
# holds the host-wide names); prerequisites are build steps of run.sh / setup-deps.sh.
e2e_skip() {
	e2e_log "SKIP: $*"
	exit 77
}

# e2e_wait_for CMD TIMEOUT [INTERVAL]: eval CMD until it succeeds; 1 on timeout.
e2e_wait_for() {
	local cmd=$1 timeout=${2:-60} interval=${3:-0.5}
	local deadline=$(($(date +%s) + timeout))
	while :; do
		if eval "$cmd" >/dev/null 2>&1; then return 0; fi
		if (($(date +%s) >= deadline)); then
			e2e_log "timed out after ${timeout}s waiting for: $cmd"
			return 1
		fi
		sleep "$interval"
	done
}

e2e_assert_eq() { # EXPECTED ACTUAL [WHAT]
	[ "$1" == "$2" ] || e2e_fail "${3:-values differ}: expected '$1', got '$2'"
}

e2e_assert_ne() { # UNEXPECTED ACTUAL [WHAT]
	[ "$1" != "$2" ] || e2e_fail "${3:-values equal}: did not expect '$1'"
}

e2e_assert_contains() { # HAYSTACK NEEDLE [WHAT]
	[[ $1 == *"$2"* ]] || e2e_fail "${3:-missing text}: '$2' not in '$1'"
}

e2e_assert_match() { # STRING ERE [WHAT]
	[[ $1 =~ $2 ]] || e2e_fail "${3:-no match}: '$1' does not match /$2/"
}

e2e_assert_ok() { # CMD...: the command must succeed
	local out
	out=$("$@" 2>&1) || e2e_fail "command failed: $* -> $out"
}

e2e_assert_fails() { # CMD...: the command must fail
	local out
	if out=$("$@" 2>&1); then e2e_fail "command unexpectedly succeeded: $* -> $out"; fi
}

e2e_assert_fails_with() { # TEXT CMD...: the command must fail and say TEXT
	local text=$1 out
	shift
	if out=$("$@" 2>&1); then e2e_fail "command unexpectedly succeeded: $* -> $out"; fi
	[[ $out == *"$text"* ]] || e2e_fail "command failed without '$text': $* -> $out"
}

# e2e_k8s_bin: directory of the upstream binaries (builds them once per machine).
e2e_k8s_bin() {
	if [ -n "${PGOP_E2E_BIN:-}" ] && [ -x "$PGOP_E2E_BIN/kube-apiserver" ]; then
		echo "$PGOP_E2E_BIN"
		return 0
	fi
	"$E2E_DIR/build-k8s.sh"
}

# e2e_ready: 0 when the control plane of PGOP_E2E_STATE answers /readyz.
e2e_ready() {
	local s=$PGOP_E2E_STATE
	[ -f "$s/env" ] || return 1
	local url
	url=$(sed -n 's/^export PGOP_E2E_APISERVER=//p' "$s/env")
	curl -sf --max-time 5 --cacert "$s/pki/ca.crt" --cert "$s/pki/admin.crt" \
		--key "$s/pki/admin.key" "${url:-https://127.0.0.1:$PGOP_E2E_APISERVER_PORT}/readyz" >/dev/null
}

# e2e_up: make sure the control plane runs and source its env. Reuses the runner's
# control plane; a test started on its own brings one up and takes it down on exit.
e2e_up() {
	if ! e2e_ready; then
		[ -z "${PGOP_E2E_SHARED:-}" ] || e2e_fail "the runner's control plane is not ready"
		"$E2E_DIR/cluster-up.sh" "$PGOP_E2E_STATE" || e2e_fail "cluster-up.sh failed"
		E2E_OWN_CLUSTER=1
		trap e2e_down EXIT
	fi
	# shellcheck source=/dev/null
	. "$PGOP_E2E_STATE/env"
}

# e2e_down: take the control plane down if this shell brought it up.
e2e_down() {
	if [ -n "${E2E_OWN_CLUSTER:-}" ]; then
		E2E_OWN_CLUSTER=
		"$E2E_DIR/cluster-down.sh" "$PGOP_E2E_STATE"
	fi
}

# The local cluster's nodes: PGOP_E2E_NODES node agents (default 3), one per Node:
# pgop-e2e-node (state STATE/agent, as with one node), pgop-e2e-node-2, pgop-e2e-node-3, ...
# (state STATE/agent/nodes/<name>). They share STATE/agent/{run,logs,partition} (--shared-dir),
# so `pgop-node-agent --state-dir STATE/agent exec|partition NS/POD` and the
# STATE/agent/run/<ns>_<pod>_<container>.pid files work whatever node runs the pod.
# A test that needs at least N nodes raises PGOP_E2E_NODES before e2e_agent_up (the extra
# agents then stay for the rest of the run).
: "${PGOP_E2E_NODES:=3}"
export PGOP_E2E_NODES

# e2e_node_names: the node names, one per line.
e2e_node_names() {
	local i
	echo pgop-e2e-node
	for ((i = 2; i <= PGOP_E2E_NODES; i++)); do echo "pgop-e2e-node-$i"; done
}

# e2e_node_dir NAME: the node agent's state dir.
e2e_node_dir() {
	if [ "$1" = pgop-e2e-node ]; then echo "$PGOP_E2E_STATE/agent"; else echo "$PGOP_E2E_STATE/agent/nodes/$1"; fi
}

# e2e_node_pid NAME: the node agent's PID, if it runs (stopped counts as running).
e2e_node_pid() {
	local f pid
	f="$(e2e_node_dir "$1")/agent.pid"
	pid=$(cat "$f" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null && ! e2e_is_zombie "$pid" && echo "$pid"
}

# e2e_node_ready NAME: 0 when the Node's Ready condition is True.
e2e_node_ready() {
	[ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# e2e_node_table NAME: the node's nftables table (ip and bridge families).
e2e_node_table() {
	local oct
	oct=$(cat "$(e2e_node_dir "$1")/subnet" 2>/dev/null) || return 1
	if [ "$oct" = 213 ]; then echo "$E2E_NFT_TABLE"; else echo "${E2E_NFT_TABLE}_$oct"; fi
}

# e2e_node_pod_pids NAME: PIDs of every process in the network namespace of a pod of the
# node (containers, their children, exec'd commands).
e2e_node_pod_pids() {
	local d uid
	for d in "$(e2e_node_dir "$1")"/pods/*/; do
		[ -d "$d" ] || continue
		uid=$(basename "$d")
		uid=${uid//-/}
		ip netns pids "$E2E_NETNS_PREFIX${uid:0:8}" 2>/dev/null
	done
}

# e2e_agent_start NAME: start the node agent of NAME unless it runs (in its own session,
# PGOP_E2E_OWNER=STATE, pid in DIR/agent.pid, log DIR/agent.log). Fails when not built.
e2e_agent_start() {
	local name=$1 s=$PGOP_E2E_STATE bin dir pid
	bin=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
	e2e_node_pid "$name" >/dev/null && return 0
	[ -x "$bin" ] || e2e_fail "node agent not built ($bin; tests/e2e/run.sh builds it: ninja -C BUILD_DIR pgop-node-agent)"
	dir=$(e2e_node_dir "$name")
	mkdir -p "$dir"
	e2e_log "starting the node agent of $name (log: $dir/agent.log)"
	# shellcheck disable=SC2086
	PGOP_E2E_OWNER=$s setsid "$bin" --kubeconfig "$s/kubeconfig" --state-dir "$dir" \
		--shared-dir "$s/agent" --node-name "$name" \
		--pgop-binary "${PGOP_BIN:-pgop}" ${PGOP_NODE_AGENT_ARGS:-} \
		</dev/null >>"$dir/agent.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/agent.pid"
}

# e2e_agent_up: make sure every node's agent runs for this control plane and its Node is
# Ready (a node a previous test left stopped or cut is brought back). Shared by all tests
# of a run like the control plane: the agents are recorded in their DIR/agent.pid (so
# they are not "strays") and stopped by cluster-down.sh. Call after e2e_up. The command
# line is the contract with the agent; extra flags: PGOP_NODE_AGENT_ARGS. The agents start
# one after the other, so pgop-e2e-node gets 10.244.213.0/24, the next 214, ...
e2e_agent_up() {
	local name
	while read -r name; do
		e2e_node_thaw "$name"
		rm -f "$PGOP_E2E_STATE/agent/partition/node.$name"
		e2e_agent_start "$name"
		e2e_wait_for "e2e_node_ready $name" 60 ||
			e2e_fail "node $name not Ready (agent pid $(e2e_node_pid "$name"), log $(e2e_node_dir "$name")/agent.log)"
	done < <(e2e_node_names)
}

# e2e_node_stop NAME: freeze the node: SIGSTOP to its agent (no heartbeats: the Node goes
# NotReady after kube-controller-manager's --node-monitor-grace-period) and to every
# process of its pods (they answer nothing; connections to them hang). The PIDs are kept
# in DIR/stopped for e2e_node_start.
e2e_node_stop() {
	local name=$1 dir pid pass
	dir=$(e2e_node_dir "$name")
	pid=$(e2e_node_pid "$name") || e2e_fail "node $name: no agent running"
	kill -STOP "$pid"
	echo "$pid" >"$dir/stopped"
	# twice: a process forked while the first pass ran is stopped by the second
	for pass in 1 2; do
		for pid in $(e2e_node_pod_pids "$name"); do
			kill -STOP "$pid" 2>/dev/null && echo "$pid" >>"$dir/stopped"
		done
	done
	e2e_log "node $name stopped ($(sort -u "$dir/stopped" | wc -l) processes frozen)"
}

# e2e_node_start NAME: bring a node back: a stopped one is thawed (pods first, then the
# agent), a killed one gets its agent started again (it re-adopts its pods). Waits until
# the Node is Ready.
e2e_node_start() {
	local name=$1
	e2e_node_thaw "$name"
	e2e_agent_start "$name"
	e2e_wait_for "e2e_node_ready $name" 60 || e2e_fail "node $name not Ready again"
	e2e_log "node $name started"
}

# e2e_node_thaw NAME: SIGCONT to what e2e_node_stop froze (pods first, then the agent).
e2e_node_thaw() {
	local dir pid
	dir=$(e2e_node_dir "$1")
	[ -f "$dir/stopped" ] || return 0
	# a PID may be gone (a zombie frozen, reaped since): errexit must not stop the thaw
	for pid in $(tac "$dir/stopped"); do kill -CONT "$pid" 2>/dev/null || true; done
	rm -f "$dir/stopped"
}

# e2e_node_kill NAME: the node dies: SIGKILL to its agent and every process of its pods.
# Its pods' network namespaces and volumes stay (the machine is off, not wiped);
# e2e_node_start NAME boots it again.
e2e_node_kill() {
	local name=$1 dir pid pass
	dir=$(e2e_node_dir "$name")
	pid=$(e2e_node_pid "$name") && kill -KILL "$pid" || true
	for pass in 1 2; do
		for pid in $(e2e_node_pod_pids "$name"); do kill -KILL "$pid" 2>/dev/null || true; done
	done
	rm -f "$dir/stopped"
	e2e_log "node $name killed"
}

# e2e_node_cut NAME / e2e_node_uncut NAME: cut the node's network as a whole and restore
# it. While cut, nothing is routed between its pods and other nodes' pods, its pods reach
# neither the API server nor the host, the API server and host clients do not reach them
# through Services nor its kubelet port, and its agent makes no API calls (no heartbeats:
# NotReady after the grace period; no Pod status, no deletions). Its own probes (host ->
# pod IP) and host clients dialling a pod IP still get through, as with `partition`.
# The mark is STATE/agent/partition/node.NAME; these wait (5 s) until the agent applied it.
e2e_node_cut() {
	local name=$1 table
	table=$(e2e_node_table "$name") || e2e_fail "node $name: no subnet yet"
	touch "$PGOP_E2E_STATE/agent/partition/node.$name"
	e2e_wait_for "nft list chain ip $table node_cut" 5 0.1 || e2e_fail "node $name: cut not applied"
	e2e_log "node $name cut off"
}
e2e_node_uncut() {
	local name=$1 table
	table=$(e2e_node_table "$name") || e2e_fail "node $name: no subnet yet"
	rm -f "$PGOP_E2E_STATE/agent/partition/node.$name"
	e2e_wait_for "! nft list chain ip $table node_cut" 5 0.1 || e2e_fail "node $name: cut not lifted"
	e2e_log "node $name reconnected"
}

# e2e_ns PREFIX: create a fresh namespace and print its name.
e2e_ns() {
	local ns
	ns="$1-$(date +%s%N | tail -c 7)"
	kubectl create namespace "$ns" >/dev/null || e2e_fail "create namespace $ns"
	echo "$ns"
}

# e2e_pgid_of PID: process group of PID (fails if PID is gone).
e2e_pgid_of() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	# shellcheck disable=SC2086
	set -- $st
	echo "$3"
}

# e2e_other_envs STATE: state dirs of OTHER live e2e environments on this host (from the
# PGOP_E2E_OWNER marker of their processes), one per line. Our ancestors and our own
# process group do not count (run.sh exports its marker to the tests it runs).
e2e_other_envs() {
	local s=$1 f pid p v mypg
	local -A anc=()
	p=$$
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		anc[$p]=1
		p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
	done
	mypg=$(e2e_pgid_of $$)
	while read -r f; do
		pid=${f#/proc/}
		pid=${pid%%/*}
		[ -n "${anc[$pid]:-}" ] && continue
		[ "$(e2e_pgid_of "$pid")" = "$mypg" ] && continue
		e2e_is_zombie "$pid" && continue
		v=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | sed -n 's/^PGOP_E2E_OWNER=//p') || continue
		[ -n "$v" ] && [ "$v" != "$s" ] && echo "$v"
	done < <(grep -lsz '^PGOP_E2E_OWNER=' /proc/[0-9]*/environ 2>/dev/null) | sort -u
}

# e2e_is_zombie PID
e2e_is_zombie() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# e2e_check_state_dir DIR: refuse paths that rm -rf must never touch.
e2e_check_state_dir() {
	local d=$1 top
	case $d in
	/*) ;;
	*) echo "state dir must be absolute: $d" >&2; return 1 ;;
	esac
	d=$(realpath -m "$d")
	case $d in
	/ | /tmp | /root | /home | /usr | /usr/* | /etc | /etc/* | /var | /proc/* | /sys/* | /dev/*)
		echo "refusing state dir $d" >&2; return 1 ;;
	esac
	top=$(realpath -m "$E2E_DIR/../..")
	case $d/ in
	"$top"/*) echo "state dir must not be inside the repository: $d" >&2; return 1 ;;
	esac
	return 0
}
