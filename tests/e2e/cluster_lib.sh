# shellcheck shell=bash
# Shared set-up for the test_cluster_*.sh tests against the shared control plane and node
# agent. The controller is what production runs: pgop installed with its Helm chart and the
# chart's default values (two replicas, leader election, non-root, read-only root
# filesystem, no writable /tmp), in its own namespace $opns, watching the test namespace
# $ns (so with the chart's namespaced RBAC, the only rules it has). Source it after lib.sh
# and after e2e_up + e2e_agent_up:
#
#   e2e_up; e2e_agent_up
#   . "$(dirname "$0")/cluster_lib.sh"
#   cluster_setup PREFIX            # $tmp, $ns, k(), cleanup trap with diagnostics
#   cluster_crd                     # apply the CRD (pgop crd) and wait until Established
#   cluster_helm_install [HELM-ARG...]  # helm install --wait; every replica Ready means its
#                                   # reconciler runs with cluster access and synced caches
#   cluster_leader                  # the controller pod holding the reconciler's Lease
#   cluster_controller_rss_kb POD   # VmRSS of that pod's controller process
#   cluster_controller_start [FLAG...]  # host-process controller (admin kubeconfig), only
#                                   # for bench/ scripts, which read its /proc; with
#                                   # PGOP_CTL_WRAP (e.g. "heaptrack -o F") run under it
#   status FIELD / healthy_with N / wait_healthy N TIMEOUT / sql POD SQL
# It defines PGOP_BIN, SAMPLES, AGENT, AGENT_STATE, CHART, REL, C (the sample's Cluster name).

PGOP_BIN=${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}
export PGOP_BIN
[ -x "$PGOP_BIN" ] || e2e_fail "pgop not built: $PGOP_BIN"
# shellcheck source=helm_lib.sh
. "$E2E_DIR/helm_lib.sh"
SAMPLES=$E2E_DIR/../../samples
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
CHART=$(cd "$E2E_DIR/../../charts/pgop" && pwd)
REL=pgop
C=cluster-example
ctl_pid=
opns=
if ! command -v helm >/dev/null; then
	PATH=${PGOP_E2E_BIN:-$("$E2E_DIR/build-k8s.sh" | tail -n 1)}:$PATH
fi

# cluster_cleanup: on failure print the Cluster, its objects, the controller's and the
# instances' log tails; always stop the controller and drop the namespace.
cluster_cleanup() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		e2e_log "--- cluster status"
		kubectl -n "$ns" get cluster,pods,jobs,pvc -o wide >&2 || true
		kubectl -n "$ns" get cluster -o jsonpath='{.items[*].status}' >&2 || true
		echo >&2
		e2e_log "--- controller log (tail)"
		tail -n 60 "$tmp/controller.log" >&2 || true
		if [ -n "$opns" ]; then
			kubectl -n "$opns" get pods,lease -o wide >&2 || true
			kubectl -n "$opns" logs -l "app.kubernetes.io/instance=$REL" --prefix --tail=40 >&2 || true
		fi
		for f in "$AGENT_STATE"/logs/"$ns"_*; do
			[ -f "$f" ] || continue
			e2e_log "--- $f (tail)"
			tail -n 15 "$f" >&2
		done
	fi
	[ -n "$ctl_pid" ] && kill -TERM "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
	# Clusters first, while the controller still runs (the garbage collector removes their
	# objects), then the release, then both namespaces.
	kubectl -n "$ns" delete cluster --all --wait=false >/dev/null 2>&1 || true
	if [ -n "$opns" ]; then
		timeout 120 helm uninstall "$REL" -n "$opns" --wait >/dev/null 2>&1 || true
		kubectl delete namespace "$opns" --wait=false >/dev/null 2>&1 || true
	fi
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}

# cluster_setup PREFIX: a temp dir, a fresh namespace PREFIX-..., the cleanup trap.
cluster_setup() {
	tmp=$(mktemp -d "/tmp/pgop-e2e-$1.XXXXXX")
	ns=$(e2e_ns "$1")
	trap cluster_cleanup EXIT
}
k() { kubectl -n "$ns" "$@"; }

cluster_crd() {
	"$PGOP_BIN" crd | kubectl apply --server-side -f - >/dev/null
	e2e_wait_for "kubectl get crd clusters.postgresql.cnpg.io -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}' | grep -qx True" 60 ||
		e2e_fail "CRD not established"
}

# cluster_helm_install [HELM-ARG...]: pgop from charts/pgop with the chart's default values
# except watchNamespaces={$ns}, in a fresh namespace $opns; waits until the Deployment is
# Ready (readiness includes the reconciler: cluster access, informers synced).
cluster_helm_install() {
	opns=$(e2e_ns "${ns%-*}-op")
	local t0
	t0=$(date +%s%N)
	helm install "$REL" "$CHART" -n "$opns" --set "watchNamespaces={$ns}" "$@" \
		--wait --timeout 180s >"$tmp/helm-install.out" 2>&1 ||
		{ cat "$tmp/helm-install.out" >&2; helm_debug "$opns" "$REL"; e2e_fail "helm install $REL"; }
	e2e_log "pgop installed with its chart in $opns (watching $ns), Ready after $((($(date +%s%N) - t0) / 1000000)) ms"
	echo "METRIC helm_controller_ready_ms=$((($(date +%s%N) - t0) / 1000000))"
	e2e_wait_for "[ -n \"\$(cluster_leader)\" ]" 60 || e2e_fail "no controller pod holds the Lease $REL-pgop"
}
# cluster_leader: the controller pod holding the reconciler's Lease (empty when none).
cluster_leader() {
	kubectl -n "$opns" get lease "$REL-pgop" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null
}
# cluster_controller_rss_kb POD: VmRSS (kB) of POD's controller process (the node agent
# runs containers as host processes and records their PIDs).
cluster_controller_rss_kb() {
	local pid
	pid=$(cat "$AGENT_STATE/run/${opns}_$1_controller.pid" 2>/dev/null) || return 1
	e2e_log "controller $1: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-60)...)" \
		"$(awk '/^(VmRSS|RssAnon|RssFile|RssShmem|Threads):/ { printf "%s %s ", $1, $2 }' "/proc/$pid/status")"
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status"
}

# cluster_controller_start [FLAG...]: a throwaway serving certificate, then
# `pgop controller` watching $ns with the given extra flags; waits for the reconciler.
cluster_controller_start() {
	[ -f "$tmp/tls.crt" ] ||
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
			-subj /CN=pgop-e2e -keyout "$tmp/tls.key" -out "$tmp/tls.crt" >/dev/null 2>&1 ||
		e2e_fail "openssl"
	# shellcheck disable=SC2086 # PGOP_CTL_WRAP is a command line
	${PGOP_CTL_WRAP:-} "$PGOP_BIN" controller --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" \
		--listen 127.0.0.1:0 --kubeconfig "$KUBECONFIG" --watch-namespaces "$ns" "$@" \
		</dev/null >>"$tmp/controller.log" 2>&1 &
	ctl_pid=$!
	e2e_wait_for "grep -q '\"reconciler started\"' '$tmp/controller.log'" 30 ||
		e2e_fail "controller did not start"
}

status() { k get cluster "$C" -o jsonpath="{.status.$1}" 2>/dev/null; }
# healthy_with N: 0 when healthy with N ready instances; exits the test on a terminal phase.
healthy_with() {
	local phase
	phase=$(status phase)
	case $phase in
	"Cluster is unrecoverable"* | "Invalid cluster definition")
		e2e_fail "terminal phase '$phase': $(status phaseReason)" ;;
	esac
	[ "$phase" = "Cluster in healthy state" ] && [ "$(status readyInstances)" = "$1" ]
}
wait_healthy() { # N TIMEOUT
	local deadline=$(($(date +%s) + $2))
	until healthy_with "$1"; do
		[ "$(date +%s)" -lt "$deadline" ] ||
			e2e_fail "cluster not healthy with $1 ready instances after $2 s (phase '$(status phase)', ready '$(status readyInstances)')"
		sleep 2
	done
}
sql() { # POD SQL
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$1" -c postgres -- \
		psql -h /controller/run -U postgres -d postgres -Atc "$2"
}
