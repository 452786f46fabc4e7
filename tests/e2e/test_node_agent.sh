#!/usr/bin/env bash
# e2e-timeout: 420
# The node agent plays kubelet + kube-proxy + DNS for real workloads on the shared control
# plane: the Node is Ready; a Deployment of 2 `pgop controller` pods (HTTPS, readiness
# probe) runs with distinct pod IPs; a Service gets EndpointSlices and one pod reaches the
# other through the Service name; a deleted pod is replaced; a PVC is provisioned, bound
# and its files survive a container restart and a new pod; a partition cuts a pod off.
# Prints the measured pod start latency (create -> Running).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
[ -x "$PGOP_BIN" ] || e2e_fail "pgop binary not built ($PGOP_BIN; tests/e2e/run.sh builds it)"
export PGOP_BIN
e2e_up
e2e_agent_up
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
NODE=${PGOP_E2E_NODE:-pgop-e2e-node}
ns=$(e2e_ns node)
tmp=$(mktemp -d)
cleanup() {
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
in_pod() { # POD CMD...: run CMD inside the pod's namespaces (like kubectl exec)
	local pod=$1
	shift
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$pod" -- "$@"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 1. the Node
e2e_assert_match "$(kubectl get nodes --no-headers)" "^$NODE +Ready " "node Ready"
e2e_assert_eq "pgop-e2e" "$(kubectl get sc -o jsonpath='{.items[?(@.metadata.annotations.storageclass\.kubernetes\.io/is-default-class=="true")].metadata.name}')" \
	"default StorageClass"
lease=$(kubectl -n kube-node-lease get lease "$NODE" -o jsonpath='{.spec.renewTime}')
e2e_assert_ne "" "$lease" "node lease renewTime"

# 2. pod start latency: one bare pod, create -> Running (polled every 50 ms)
t0=$(now_ms)
k run lat --image=busybox --restart=Never --command -- sh -c 'exec sleep 600' >/dev/null
until [ "$(k get pod lat -o jsonpath='{.status.phase}')" = Running ]; do
	(($(now_ms) - t0 < 60000)) || e2e_fail "pod lat not Running after 60 s"
	sleep 0.05
done
latency=$(($(now_ms) - t0))
e2e_log "pod start latency (create -> Running, kubectl view): ${latency} ms"
echo "METRIC pod_start_latency_ms=$latency"
k delete pod lat --wait=true >/dev/null

# 3. a Deployment of 2 pgop pods serving HTTPS
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=web" -addext "subjectAltName=DNS:web" \
	-keyout "$tmp/tls.key" -out "$tmp/tls.crt" >/dev/null 2>&1
k create secret tls web-tls --cert="$tmp/tls.crt" --key="$tmp/tls.key" >/dev/null
t0=$(now_ms)
k apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: pgop
        image: ghcr.io/pgop/pgop:dev
        command: [pgop, controller, --tls-cert-file=/tls/tls.crt, --tls-key-file=/tls/tls.key,
                  --listen=0.0.0.0:9443, --webhooks-only]
        ports: [{name: https, containerPort: 9443}]
        readinessProbe: {httpGet: {path: /readyz, port: https, scheme: HTTPS}, periodSeconds: 2}
        livenessProbe: {tcpSocket: {port: 9443}, periodSeconds: 5}
        volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
      volumes: [{name: tls, secret: {secretName: web-tls}}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get deploy web -o jsonpath='{.status.readyReplicas}')\" = 2 ]" 90 ||
	e2e_fail "deployment web not ready: $(k get pods -o wide 2>&1)"
e2e_log "deployment of 2 ready in $(($(now_ms) - t0)) ms"
mapfile -t pods < <(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
mapfile -t ips < <(k get pods -l app=web -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}')
e2e_assert_eq 2 "${#pods[@]}" "web pods"
e2e_assert_match "${ips[0]}" '^10\.244\.(21[3-9]|2[2-4][0-9]|250)\.[0-9]+$' "pod IP"
e2e_assert_ne "${ips[0]}" "${ips[1]}" "distinct pod IPs"
for p in "${pods[@]}"; do
	e2e_assert_eq "Running true" "$(k get pod "$p" -o jsonpath='{.status.phase} {.status.containerStatuses[0].ready}')" "pod $p"
done

# kubectl logs goes through the agent's kubelet API (containerLogs)
e2e_assert_contains "$(k logs "${pods[0]}" --tail=50)" "serving HTTPS" "kubectl logs"

# 4. Services: one for both, one selecting only the second pod
k label pod "${pods[1]}" pick=b >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: https, port: 443, targetPort: https}]
---
apiVersion: v1
kind: Service
metadata: {name: web-b}
spec:
  selector: {app: web, pick: b}
  ports: [{name: https, port: 443, targetPort: 9443}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[*].addresses[0]}' | wc -w)\" = 2 ]" 30 ||
	e2e_fail "no EndpointSlice with 2 endpoints for web"
e2e_wait_for "'$AGENT' --state-dir '$AGENT_STATE' exec '$ns/${pods[0]}' -- grep -q ' web.$ns.svc ' /etc/hosts" 10 ||
	e2e_fail "no web.$ns.svc in the pod's /etc/hosts: $(in_pod "${pods[0]}" cat /etc/hosts)"
# pod 0 -> Service web-b (only pod 1) by its short, namespaced and full names
for name in web-b "web-b.$ns" "web-b.$ns.svc.cluster.local"; do
	e2e_wait_for "'$AGENT' --state-dir '$AGENT_STATE' exec '$ns/${pods[0]}' -- curl -skf --max-time 3 https://$name/healthz" 20 ||
		e2e_fail "pod ${pods[0]} cannot reach https://$name/healthz"
done
out=$(in_pod "${pods[0]}" curl -sk --max-time 3 -o /dev/null -w '%{http_code} %{remote_ip}' "https://web-b/readyz")
e2e_assert_eq "200 $(k get svc web-b -o jsonpath='{.spec.clusterIP}')" "$out" "pod 0 -> web-b ClusterIP"
# both backends, the pod itself included (hairpin)
for _ in 1 2 3 4 5 6; do
	in_pod "${pods[1]}" curl -skf --max-time 3 "https://web/healthz" >/dev/null || e2e_fail "pod 1 -> web"
done
in_pod "${pods[1]}" curl -skf --max-time 3 "https://web-b/healthz" >/dev/null || e2e_fail "pod 1 -> itself through web-b"

e2e_log "pod ${pods[0]} reached pod ${pods[1]} through Service web-b"

# 5. partition: pod 1 cut off, then back
"$AGENT" --state-dir "$AGENT_STATE" partition "$ns/${pods[1]}" on >/dev/null
e2e_assert_fails in_pod "${pods[0]}" curl -skf --max-time 2 "https://${ips[1]}:9443/healthz"
"$AGENT" --state-dir "$AGENT_STATE" partition "$ns/${pods[1]}" off >/dev/null
e2e_wait_for "'$AGENT' --state-dir '$AGENT_STATE' exec '$ns/${pods[0]}' -- curl -skf --max-time 2 https://${ips[1]}:9443/healthz" 10 ||
	e2e_fail "pod 1 still cut off after partition off"

# 6. a deleted pod is replaced by the Deployment
k delete pod "${pods[0]}" --wait=true >/dev/null
e2e_wait_for "[ \"\$(kubectl -n $ns get deploy web -o jsonpath='{.status.readyReplicas}')\" = 2 ] && ! kubectl -n $ns get pod ${pods[0]}" 60 ||
	e2e_fail "deleted pod not replaced: $(k get pods -o wide 2>&1)"
e2e_assert_eq 2 "$(k get pods -l app=web --no-headers | grep -c Running)" "running web pods after delete"

# 7. a PVC is provisioned and bound; its files survive a container restart and a new pod
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {runAsUser: 26, fsGroup: 26}
  containers:
  - name: w
    image: postgres:15
    command: [sh, -c, 'echo boot >> /var/lib/postgresql/data/boots; exec sleep 600']
    volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get pvc data -o jsonpath='{.status.phase}')\" = Bound ]" 30 ||
	e2e_fail "PVC data not Bound"
e2e_wait_for "[ \"\$(kubectl -n $ns get pod writer -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
	e2e_fail "writer not Running"
e2e_assert_eq "1" "$(in_pod writer sh -c 'wc -l < /var/lib/postgresql/data/boots')" "boots after start"
kill "$(cat "$AGENT_STATE/run/${ns}_writer_w.pid")" # the container's process, from the host
e2e_wait_for "[ \"\$(kubectl -n $ns get pod writer -o jsonpath='{.status.containerStatuses[0].restartCount}')\" = 1 ] && [ \"\$(kubectl -n $ns get pod writer -o jsonpath='{.status.phase}')\" = Running ]" 30 ||
	e2e_fail "writer not restarted: $(k get pod writer -o yaml | tail -30)"
e2e_wait_for "[ \"\$('$AGENT' --state-dir '$AGENT_STATE' exec '$ns/writer' -- sh -c 'wc -l < /var/lib/postgresql/data/boots')\" = 2 ]" 10 ||
	e2e_fail "PVC file lost across a container restart"
k delete pod writer --wait=true >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: r
    image: busybox
    command: [sh, -c, 'exec sleep 600']
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get pod reader -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
	e2e_fail "reader not Running"
e2e_assert_eq "2" "$(in_pod reader sh -c 'wc -l < /data/boots')" "PVC files in a new pod"
[ ! -e /var/lib/postgresql/data/boots ] || e2e_fail "the host's /var/lib/postgresql/data was written"

e2e_log "node agent: all checks passed (pod start ${latency} ms)"
