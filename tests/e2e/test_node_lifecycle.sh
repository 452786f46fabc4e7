#!/usr/bin/env bash
# e2e-timeout: 300
# Kubelet semantics of the node agent: env (fieldRef, secretKeyRef, configMapKeyRef,
# envFrom, $(VAR)), workingDir, runAsUser, hostname; startup probe; configMap volume
# refresh; restartPolicy OnFailure / Never;
# init container failure; liveness restarts; readiness; termination grace (SIGTERM to the
# process group, SIGKILL after terminationGracePeriodSeconds).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
export PGOP_BIN
e2e_up
e2e_agent_up
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
ns=$(e2e_ns life)
cleanup() {
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	e2e_down
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
in_pod() {
	local pod=$1
	shift
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$pod" -- "$@"
}
jp() { k get pod "$1" -o jsonpath="$2"; }
wait_phase() { # POD PHASE TIMEOUT
	e2e_wait_for "[ \"\$(kubectl -n $ns get pod $1 -o jsonpath='{.status.phase}')\" = $2 ]" "$3" ||
		e2e_fail "pod $1 not $2: $(k get pod "$1" -o jsonpath='{.status}')"
}

k create secret generic creds --from-literal=password=s3cret >/dev/null
k create configmap conf --from-literal=mode=fast --from-literal=LEVEL=3 >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: envpod, labels: {app: env}}
spec:
  securityContext: {runAsUser: 26, runAsGroup: 26}
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'exec sleep 600']
    workingDir: /usr/share
    envFrom: [{configMapRef: {name: conf}, prefix: CFG_}]
    env:
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: PW, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: MODE, valueFrom: {configMapKeyRef: {name: conf, key: mode}}}
    - {name: GREETING, value: 'mode=\$(MODE) ns=\$(NS) lit=\$\$(MODE)'}
    readinessProbe: {tcpSocket: {port: 1}, periodSeconds: 1}
EOF
wait_phase envpod Running 60
# shellcheck disable=SC2016 # expanded inside the pod
out=$(in_pod envpod sh -c 'echo "$NODE|$SA|$NS|$PW|$MODE|$CFG_LEVEL|$GREETING|$(pwd)|$(id -u)|$(hostname)|$IP"')
ip=$(jp envpod '{.status.podIP}')
node=$(jp envpod '{.spec.nodeName}') # whichever node the scheduler chose
e2e_assert_match "$node" '^pgop-e2e-node(-[0-9]+)?$' "envpod's node"
e2e_assert_eq "$node|default|$ns|s3cret|fast|3|mode=fast ns=$ns lit=\$(MODE)|/usr/share|26|envpod|$ip" "$out" "container env"
# readiness fails (nothing listens on port 1): Running but not Ready
sleep 3
e2e_assert_eq "Running false False" "$(jp envpod '{.status.phase} {.status.containerStatuses[0].ready} {.status.conditions[?(@.type=="Ready")].status}')" "not ready"

# startup probe gates readiness; a configMap volume follows updates of its ConfigMap
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'sleep 3; touch /tmp/started; exec sleep 600']
    startupProbe: {exec: {command: [test, -f, /tmp/started]}, periodSeconds: 1, failureThreshold: 30}
    volumeMounts: [{name: conf, mountPath: /etc/conf}]
  volumes: [{name: conf, configMap: {name: conf}}]
EOF
wait_phase slow Running 60
e2e_assert_eq "false false" "$(jp slow '{.status.containerStatuses[0].started} {.status.containerStatuses[0].ready}')" "before the startup probe passed"
e2e_wait_for "[ \"\$(kubectl -n $ns get pod slow -o jsonpath='{.status.containerStatuses[0].ready}')\" = true ]" 30 ||
	e2e_fail "startup probe never passed: $(jp slow '{.status}')"
e2e_assert_eq "true" "$(jp slow '{.status.containerStatuses[0].started}')" "started after the startup probe"
e2e_assert_eq "fast" "$(in_pod slow cat /etc/conf/mode)" "configMap volume"
k create configmap conf --from-literal=mode=slow --from-literal=LEVEL=3 --dry-run=client -o yaml | k replace -f - >/dev/null
e2e_wait_for "[ \"\$('$AGENT' --state-dir '$AGENT_STATE' exec '$ns/slow' -- cat /etc/conf/mode)\" = slow ]" 40 ||
	e2e_fail "configMap volume not refreshed"

# OnFailure: exit 1 once, then 0 -> Succeeded after one restart
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: onfail}
spec:
  restartPolicy: OnFailure
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'if [ -f /scratch/ok ]; then exit 0; fi; touch /scratch/ok; exit 1']
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
EOF
wait_phase onfail Succeeded 60
e2e_assert_eq "1 0" "$(jp onfail '{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].state.terminated.exitCode}')" "OnFailure restarts"

# Never + failing init container: Failed, the container never starts
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: badinit}
spec:
  restartPolicy: Never
  initContainers: [{name: i, image: busybox, command: [sh, -c, 'exit 7']}]
  containers: [{name: c, image: busybox, command: [sh, -c, 'exec sleep 600']}]
EOF
wait_phase badinit Failed 60
e2e_assert_eq "7" "$(jp badinit '{.status.initContainerStatuses[0].state.terminated.exitCode}')" "init exit code"
e2e_assert_eq "False" "$(jp badinit '{.status.conditions[?(@.type=="Initialized")].status}')" "not initialized"
e2e_assert_eq "" "$(jp badinit '{.status.containerStatuses[0].state.running}')" "main container never ran"

# liveness: the probe file disappears after 2 s -> restarted
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'touch /tmp/alive; sleep 2; rm /tmp/alive; exec sleep 600']
    livenessProbe: {exec: {command: [test, -f, /tmp/alive]}, periodSeconds: 1, failureThreshold: 2}
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get pod live -o jsonpath='{.status.containerStatuses[0].restartCount}')\" -ge 1 ]" 60 ||
	e2e_fail "liveness failure did not restart the container: $(jp live '{.status}')"

# termination grace: SIGTERM ignored -> SIGKILL after 3 s; the pod object goes away
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'trap "" TERM; while :; do sleep 0.2; done']
EOF
wait_phase stubborn Running 60
pid=$(cat "$AGENT_STATE/run/${ns}_stubborn_c.pid")
t0=$(date +%s%N)
k delete pod stubborn --wait=true >/dev/null
dt=$((($(date +%s%N) - t0) / 1000000))
e2e_log "pod ignoring SIGTERM deleted in ${dt} ms (grace 3 s)"
((dt >= 2500 && dt < 15000)) || e2e_fail "grace period not honoured: ${dt} ms"
! kill -0 "$pid" 2>/dev/null || e2e_fail "container process $pid survived its pod"

e2e_log "node lifecycle: all checks passed"
