#!/usr/bin/env bash
# The local control plane is a real one: version, readiness, the controllers of
# kube-controller-manager (service accounts, deployments, namespaces, GC) and the
# aggregator's APIService type all work.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_up

e2e_log "server version"
ver=$(kubectl version | awk '/^Server Version:/ {print $3}')
e2e_assert_eq v1.34.1 "$ver" "kube-apiserver version"
client=$(kubectl version --client -o yaml | awk '/gitVersion:/ {print $2}')
e2e_assert_eq v1.34.1 "$client" "kubectl version"

e2e_assert_match "$(helm version --short)" '^v3\.19\.0' "helm version"
releases=$(helm list --all-namespaces --short 2>&1) || e2e_fail "helm list: $releases"
e2e_assert_eq "" "$releases" "helm talks to the cluster (no releases)"

e2e_log "readiness and liveness"
e2e_assert_eq ok "$(kubectl get --raw /readyz)" "/readyz"
e2e_assert_eq ok "$(kubectl get --raw /livez)" "/livez"
verbose=$(kubectl get --raw '/readyz?verbose')
e2e_assert_contains "$verbose" "[+]etcd ok" "/readyz?verbose"
e2e_assert_contains "$verbose" "[+]poststarthook/apiservice-registration-controller ok" "/readyz?verbose"

e2e_log "bootstrap namespaces, RBAC roles and the front-proxy ConfigMap"
for ns in default kube-system kube-public kube-node-lease; do
	e2e_assert_eq "$ns" "$(kubectl get namespace "$ns" -o jsonpath='{.metadata.name}')" "namespace $ns"
done
e2e_assert_ok kubectl get clusterrole system:kube-controller-manager
rh=$(kubectl -n kube-system get configmap extension-apiserver-authentication \
	-o jsonpath='{.data.requestheader-allowed-names}')
e2e_assert_eq '["front-proxy-client"]' "$rh" "requestheader-allowed-names"
whoami=$(kubectl auth whoami -o jsonpath='{.status.userInfo.groups}')
e2e_assert_contains "$whoami" system:masters "admin groups"
e2e_log "component identities; the Node authorizer confines the node identity"
e2e_assert_eq system:kube-controller-manager \
	"$(kubectl --kubeconfig "$PGOP_E2E_STATE/kcm/kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}')" "kcm identity"
e2e_assert_eq system:kube-scheduler \
	"$(kubectl --kubeconfig "$PGOP_E2E_STATE/scheduler/kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}')" "scheduler identity"
node_kc=$PGOP_E2E_STATE/node.kubeconfig
e2e_assert_eq system:node:pgop-e2e-node \
	"$(kubectl --kubeconfig "$node_kc" auth whoami -o jsonpath='{.status.userInfo.username}')" "node identity"
e2e_assert_fails_with Forbidden kubectl --kubeconfig "$node_kc" -n kube-system get secrets
e2e_assert_fails_with Forbidden kubectl --kubeconfig "$node_kc" -n kube-system get configmap extension-apiserver-authentication
svc_ip=$(kubectl -n default get service kubernetes -o jsonpath='{.spec.clusterIP}')
e2e_assert_eq "$PGOP_E2E_FIRST_SERVICE_IP" "$svc_ip" "clusterIP of default/kubernetes"

ns=$(e2e_ns e2e-cp)
e2e_log "namespace $ns: the default ServiceAccount appears (kube-controller-manager)"
e2e_wait_for "kubectl -n $ns get serviceaccount default" 30 ||
	e2e_fail "no default ServiceAccount in $ns"
e2e_log "controllers run with their own ServiceAccounts (--use-service-account-credentials)"
for sa in namespace-controller deployment-controller generic-garbage-collector; do
	e2e_wait_for "kubectl -n kube-system get serviceaccount $sa" 30 || e2e_fail "no ServiceAccount $sa"
done

e2e_log "a token for the default ServiceAccount authenticates (SA signing keys)"
token=$(kubectl -n "$ns" create token default --duration=10m)
who=$(kubectl --token="$token" --kubeconfig=/dev/null --server="$PGOP_E2E_APISERVER" \
	--certificate-authority="$PGOP_E2E_CA" auth whoami -o jsonpath='{.status.userInfo.username}')
e2e_assert_eq "system:serviceaccount:$ns:default" "$who" "token identity"

e2e_log "a Deployment makes a ReplicaSet and Pods (Pending: they fit no node)"
# The node selector keeps the pods off any node (a node agent may run for other tests).
kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {e2e.pgop.test/no-such-node: "true"}
      containers: [{name: web, image: registry.invalid/web:1}]
EOF
e2e_wait_for "[ \"\$(kubectl -n $ns get replicasets -l app=web -o name | wc -l)\" = 1 ]" 30 ||
	e2e_fail "no ReplicaSet for deployment web"
e2e_wait_for "[ \"\$(kubectl -n $ns get pods -l app=web -o name | wc -l)\" = 2 ]" 30 ||
	e2e_fail "no Pods for deployment web"
rs=$(kubectl -n "$ns" get replicasets -l app=web -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}')
e2e_assert_eq Deployment/web "$rs" "ReplicaSet owner"
phase=$(kubectl -n "$ns" get pods -l app=web -o jsonpath='{.items[0].status.phase}')
e2e_assert_eq Pending "$phase" "pod phase without a node"
e2e_log "kube-scheduler reports the pods Unschedulable"
e2e_wait_for "kubectl -n $ns get pods -l app=web -o jsonpath='{.items[0].status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -qx Unschedulable" 30 ||
	e2e_fail "kube-scheduler did not mark the pod Unschedulable"

e2e_log "garbage collector: deleting the Deployment removes its ReplicaSet and Pods"
kubectl -n "$ns" delete deployment web --wait=false >/dev/null
e2e_wait_for "[ -z \"\$(kubectl -n $ns get replicasets,pods -o name)\" ]" 60 ||
	e2e_fail "ReplicaSet/Pods not garbage collected"

e2e_log "a Service gets an EndpointSlice (endpointslice controller)"
kubectl -n "$ns" create service clusterip db --tcp=5432:5432 >/dev/null
e2e_wait_for "kubectl -n $ns get endpointslices -l kubernetes.io/service-name=db -o name | grep -q ." 30 ||
	e2e_fail "no EndpointSlice for service db"
ip=$(kubectl -n "$ns" get service db -o jsonpath='{.spec.clusterIP}')
e2e_assert_match "$ip" "^${PGOP_E2E_SERVICE_CIDR%.*.*}\." "service IP from the service range"

e2e_log "a deleted namespace finishes terminating (namespace controller)"
kubectl delete namespace "$ns" --wait=false >/dev/null
e2e_wait_for "! kubectl get namespace $ns" 60 || e2e_fail "namespace $ns still $(kubectl get ns "$ns" -o jsonpath='{.status.phase}')"

e2e_log "an APIService can be created, is reported unavailable without a backend, and deleted"
svc_ns=$(e2e_ns e2e-apisvc)
kubectl -n "$svc_ns" create service clusterip e2e-api --tcp=443:8443 >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.e2e.pgop.test}
spec:
  group: e2e.pgop.test
  version: v1alpha1
  service: {namespace: $svc_ns, name: e2e-api, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 1000
  versionPriority: 15
EOF
e2e_assert_eq e2e.pgop.test "$(kubectl get apiservice v1alpha1.e2e.pgop.test -o jsonpath='{.spec.group}')" "APIService group"
e2e_wait_for "kubectl get apiservice v1alpha1.e2e.pgop.test -o jsonpath='{.status.conditions[?(@.type==\"Available\")].status}' | grep -qx False" 30 ||
	e2e_fail "APIService has no Available=False condition"
kubectl delete apiservice v1alpha1.e2e.pgop.test >/dev/null
kubectl delete namespace "$svc_ns" --wait=false >/dev/null
e2e_log "ok"
