#!/usr/bin/env bash
# e2e-timeout: 240
# The multi-node substrate (docs/internals/node-agent.md "Several nodes"): three node agents,
# each its own Node with its own pod CIDR and InternalIP; the real kube-scheduler places
# Pods (here by nodeSelector); Pods on different nodes reach each other, the API server and
# a Service whose only endpoint runs on a third node; `kubectl logs` reaches every node's
# kubelet port. Node operations of lib.sh: a node cut off (e2e_node_cut) is unreachable
# both ways and goes NotReady after kube-controller-manager's grace period, then comes
# back (e2e_node_uncut); a stopped node (e2e_node_stop: agent and pods frozen) goes
# NotReady and its Pods answer nothing, then is Ready again after e2e_node_start, and its
# Pods are Ready again (the agent re-sends what the node lifecycle controller overwrote).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

e2e_up
((PGOP_E2E_NODES >= 3)) || PGOP_E2E_NODES=3
e2e_agent_up
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
mapfile -t nodes < <(e2e_node_names)
n1=${nodes[0]} n2=${nodes[1]} n3=${nodes[2]}

ns=$(e2e_ns nodes)
cleanup() {
	local rc=$?
	set +e
	# leave every node as e2e_agent_up wants it for the next test
	for n in "$n2" "$n3"; do
		e2e_node_thaw "$n"
		rm -f "$AGENT_STATE/partition/node.$n"
	done
	if ((rc)); then
		kubectl get nodes -o wide >&2
		kubectl -n "$ns" get pods -o wide >&2
	fi
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
	e2e_down
	(exit $rc)
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
in_pod() { # POD CMD...
	local pod=$1
	shift
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$pod" -- "$@"
}
# get POD URL: the body, 2 s at most
get() { in_pod "$1" curl -sf --max-time 2 "$2"; }
# api POD: the HTTP status of the API server's /healthz seen from POD (000: unreachable)
api() { in_pod "$1" curl -sk -o /dev/null -w '%{http_code}' --max-time 2 https://kubernetes.default.svc/healthz || true; }
node_ready() { kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }

# 1. three Nodes Ready, each with its own pod CIDR and InternalIP (the first address of it)
declare -A cidr=()
for n in "$n1" "$n2" "$n3"; do
	e2e_assert_eq True "$(node_ready "$n")" "node $n Ready"
	c=$(kubectl get node "$n" -o jsonpath='{.spec.podCIDR}')
	ip=$(kubectl get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
	e2e_assert_match "$c" '^10\.244\.[0-9]+\.0/24$' "node $n podCIDR"
	e2e_assert_eq "${c%.0/24}.1" "$ip" "node $n InternalIP in its podCIDR"
	[ -z "${cidr[$c]:-}" ] || e2e_fail "nodes ${cidr[$c]} and $n share podCIDR $c"
	cidr[$c]=$n
done
e2e_log "nodes: $(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.spec.podCIDR} {end}')"

# 2. a web server on each node (a on n1, b on n2, srv on n3) and a Service for srv
for p in a:"$n1" b:"$n2" srv:"$n3"; do
	k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ${p%%:*}, labels: {app: ${p%%:*}}}
spec:
  nodeSelector: {kubernetes.io/hostname: ${p#*:}}
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: python
    env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    command: [sh, -c, 'mkdir -p /tmp/w && echo \$POD > /tmp/w/who && cd /tmp/w && exec /usr/bin/python3 -m http.server 8080']
    readinessProbe: {httpGet: {path: /who, port: 8080}, periodSeconds: 1}
EOF
done
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: srv}
spec:
  selector: {app: srv}
  ports: [{port: 80, targetPort: 8080}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get pods -o jsonpath='{.items[*].status.containerStatuses[0].ready}')\" = 'true true true' ]" 60 ||
	e2e_fail "web pods not ready: $(k get pods -o wide)"
declare -A ip=()
for p in a:"$n1" b:"$n2" srv:"$n3"; do
	e2e_assert_eq "${p#*:}" "$(k get pod "${p%%:*}" -o jsonpath='{.spec.nodeName}')" "pod ${p%%:*}'s node"
	ip[${p%%:*}]=$(k get pod "${p%%:*}" -o jsonpath='{.status.podIP}')
	c=$(kubectl get node "${p#*:}" -o jsonpath='{.spec.podCIDR}')
	[[ ${ip[${p%%:*}]} == "${c%.0/24}".* ]] || e2e_fail "pod ${p%%:*} (${ip[${p%%:*}]}) outside its node's podCIDR $c"
done

# 3. across nodes: pod to pod, pod to a Service on a third node, pod to the API server
e2e_assert_eq b "$(get a "http://${ip[b]}:8080/who")" "a (node 1) -> b (node 2)"
e2e_assert_eq a "$(get b "http://${ip[a]}:8080/who")" "b (node 2) -> a (node 1)"
e2e_wait_for "[ \"\$(in_pod a curl -sf --max-time 2 http://srv/who)\" = srv ]" 10 ||
	e2e_fail "a (node 1) -> Service srv (endpoint on node 3)"
e2e_assert_eq srv "$(get b "http://srv.$ns.svc/who")" "b (node 2) -> Service srv (endpoint on node 3)"
e2e_assert_eq srv "$(get srv "http://srv/who")" "srv -> its own Service"
e2e_assert_match "$(api b)" '^(200|401|403)$' "b (node 2) -> API server"
e2e_assert_contains "$(k logs b --request-timeout=5s)" "GET /who" "kubectl logs of a pod on node 2"
e2e_assert_contains "$(k logs srv --request-timeout=5s)" "GET /who" "kubectl logs of a pod on node 3"

# 4. node 3's network cut: unreachable both ways, NotReady after the grace period
t0=$(date +%s)
e2e_node_cut "$n3"
get a "http://${ip[srv]}:8080/who" >/dev/null && e2e_fail "node 1 still reaches a pod of the cut node 3"
get a "http://srv/who" >/dev/null && e2e_fail "node 1 still reaches the Service backed by the cut node 3"
get srv "http://${ip[a]}:8080/who" >/dev/null && e2e_fail "the cut node 3 still reaches node 1"
e2e_assert_eq 000 "$(api srv)" "the cut node 3 -> API server"
k logs srv --request-timeout=3s >/dev/null 2>&1 && e2e_fail "kubectl logs still reaches the cut node's kubelet"
e2e_assert_eq b "$(get a "http://${ip[b]}:8080/who")" "nodes 1 and 2 unaffected by the cut"
e2e_assert_eq srv "$(get srv "http://${ip[srv]}:8080/who")" "inside the cut node"
e2e_wait_for "[ \"\$(node_ready $n3)\" = Unknown ]" 60 1 || e2e_fail "cut node $n3 not NotReady"
echo "METRIC node_cut_notready_s=$(($(date +%s) - t0))"
e2e_log "cut node NotReady after $(($(date +%s) - t0)) s"
e2e_assert_eq True "$(node_ready "$n1")" "node 1 Ready during the cut"
e2e_node_uncut "$n3"
e2e_wait_for "[ \"\$(node_ready $n3)\" = True ]" 30 || e2e_fail "node $n3 not Ready after the cut"
e2e_assert_eq srv "$(get a "http://${ip[srv]}:8080/who")" "node 1 -> node 3 after the cut"
e2e_assert_match "$(api srv)" '^(200|401|403)$' "node 3 -> API server after the cut"
# the node lifecycle controller marked srv not ready: its agent says otherwise again
e2e_wait_for "[ \"\$(in_pod a curl -sf --max-time 2 http://srv/who)\" = srv ]" 30 ||
	e2e_fail "Service srv not back after the cut: $(k get pod srv -o jsonpath='{.status.conditions}')"

# 5. node 2 stopped (agent and pods frozen): NotReady, its pods answer nothing; then back
t0=$(date +%s)
e2e_node_stop "$n2"
get a "http://${ip[b]}:8080/who" >/dev/null && e2e_fail "a frozen pod answered"
e2e_wait_for "[ \"\$(node_ready $n2)\" = Unknown ]" 60 1 || e2e_fail "stopped node $n2 not NotReady"
echo "METRIC node_stop_notready_s=$(($(date +%s) - t0))"
e2e_log "stopped node NotReady after $(($(date +%s) - t0)) s"
e2e_wait_for "[ \"\$(k get pod b -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = False ]" 20 ||
	e2e_fail "pod b of the stopped node still Ready"
e2e_node_start "$n2"
e2e_assert_eq b "$(get a "http://${ip[b]}:8080/who")" "a -> b after the node came back"
e2e_wait_for "[ \"\$(k get pod b -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]" 20 ||
	e2e_fail "pod b not Ready again after its node came back"
e2e_log "nodes: all checks passed"
