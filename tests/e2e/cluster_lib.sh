# shellcheck shell=bash
# Shared set-up for the test_cluster_*.sh tests: the pgop controller runs as a host process
# with the admin kubeconfig against the shared control plane and node agent, watching one
# fresh namespace. Source it after lib.sh and after e2e_up + e2e_agent_up:
#
#   e2e_up; e2e_agent_up
#   . "$(dirname "$0")/cluster_lib.sh"
#   cluster_setup PREFIX            # $tmp, $ns, k(), cleanup trap with diagnostics
#   cluster_crd                     # apply the CRD (pgop crd) and wait until Established
#   cluster_controller_start [FLAG...]  # start the controller; waits for the reconciler
#   status FIELD / healthy_with N / wait_healthy N TIMEOUT / sql POD SQL
# It defines PGOP_BIN, SAMPLES, AGENT, AGENT_STATE, C (the sample's Cluster name).

PGOP_BIN=${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}
export PGOP_BIN
[ -x "$PGOP_BIN" ] || e2e_fail "pgop not built: $PGOP_BIN"
SAMPLES=${PGOP_SHARED_DIR:-$E2E_DIR/../../../shared}/samples/cnpg
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
C=cluster-example
ctl_pid=

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
		for f in "$AGENT_STATE"/logs/"$ns"_*; do
			[ -f "$f" ] || continue
			e2e_log "--- $f (tail)"
			tail -n 15 "$f" >&2
		done
	fi
	[ -n "$ctl_pid" ] && kill -TERM "$ctl_pid" 2>/dev/null && wait "$ctl_pid" 2>/dev/null
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

# cluster_controller_start [FLAG...]: a throwaway serving certificate, then
# `pgop controller` watching $ns with the given extra flags; waits for the reconciler.
cluster_controller_start() {
	[ -f "$tmp/tls.crt" ] ||
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
			-subj /CN=pgop-e2e -keyout "$tmp/tls.key" -out "$tmp/tls.crt" >/dev/null 2>&1 ||
		e2e_fail "openssl"
	"$PGOP_BIN" controller --tls-cert-file "$tmp/tls.crt" --tls-key-file "$tmp/tls.key" \
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
