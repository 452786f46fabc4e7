#!/usr/bin/env bash
# e2e-timeout: 600
# Certificate rotation under load, chart mode self, 2 replicas, short lifetimes
# (CA 9m, leaf 8m: both are back-dated 5 min, so the leaf renews ~20 s after issuance and
# the CA ~60 s after), check period 5 s, settle 3 s:
#  - a client loops `kubectl apply --dry-run=server` while the leader renews the leaf at
#    least twice and rotates the CA once (new CA published, leaf re-issued from it, old CA
#    dropped): zero failed requests, both replicas served requests, every observed
#    caBundle is CA-only;
#  - meanwhile a second client polls the aggregated live API every 200 ms (APIService
#    v1.live.postgresql.cnpg.io Available, and `kubectl get clusters.live -A` through the
#    aggregator, which verifies pgop's serving certificate against the APIService caBundle):
#    zero failures, and the APIService caBundle is CA-only and equals the CA Secret after;
#  - killing the leader pod (SIGKILL, no Lease release): another replica takes the Lease
#    and keeps rotating.
# Prints METRIC rotation_requests, rotation_failed_requests (must be 0), leaf/CA rotations,
# rotation_live_polls, rotation_live_failed_polls (must be 0).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
if [ ! -x "$PGOP_BIN" ]; then
	e2e_log "skip: pgop binary not built ($PGOP_BIN)"
	exit 77
fi
export PGOP_BIN
e2e_up
e2e_agent_up
command -v helm >/dev/null || e2e_fail "helm not in PATH ($PATH)"
CHART=$(cd "$E2E_DIR/../../charts/pgop" && pwd)
. "$E2E_DIR/helm_lib.sh"

ns=$(e2e_ns helm-rot)
tmp=$(mktemp -d)
load_pid= live_pid=
cleanup() {
	local p
	for p in $load_pid $live_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	timeout 90 helm uninstall r1 -n "$ns" --timeout 60s >/dev/null 2>&1 || true
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT

helm install r1 "$CHART" -n "$ns" --set "watchNamespaces={$ns}" \
	--set certificate.caLifetime=9m --set certificate.leafLifetime=8m \
	--set certificate.checkIntervalSeconds=5 --set certificate.settleSeconds=3 \
	--wait --timeout 180s >"$tmp/install.out" 2>&1 ||
	{ cat "$tmp/install.out"; helm_debug "$ns" r1; e2e_fail "helm install"; }
helm_cluster_yaml "$ns" ok1 >"$tmp/valid.yaml"

# fp SECRET KEY: fingerprint of a Secret key; a failed read or an empty value is an error
# (an empty fingerprint would count as a "change" or hide one).
fp() {
	local v
	v=$(helm_secret_key "$ns" "$1" "$2") || { e2e_log "cannot read Secret $ns/$1 key $2"; return 1; }
	[ -n "$v" ] || { e2e_log "Secret $ns/$1 key $2 is empty"; return 1; }
	sha256sum <<<"$v" | cut -c1-16
}

# load: one request at a time, as fast as kubectl goes; results appended to files
load() {
	while [ ! -f "$tmp/stop" ]; do
		if out=$(kubectl apply --dry-run=server -f "$tmp/valid.yaml" 2>&1); then
			echo ok >>"$tmp/ok"
		else
			echo "$(date +%T) $out" >>"$tmp/failed"
		fi
	done
}
touch "$tmp/ok" "$tmp/failed"
load &
load_pid=$!

# live: the aggregated API every 200 ms - the APIService Available and a request through
# the aggregator to pgop (kube-apiserver checks pgop's certificate against the APIService
# caBundle the certificate manager keeps: a stale bundle fails the request)
G=live.postgresql.cnpg.io
avail() { kubectl get apiservice "v1.$G" -o jsonpath='{.status.conditions[?(@.type=="Available")].status}'; }
e2e_wait_for '[ "$(avail)" = True ]' 120 1 || e2e_fail "APIService v1.$G not Available after install"
# and in discovery (the aggregator lists the group once it fetched pgop's discovery):
# from here on, through the rotations, every poll must succeed
e2e_wait_for 'kubectl get clusters.live -n "$ns" >/dev/null 2>&1' 60 0.5 ||
	e2e_fail "kubectl get clusters.live never answered: $(kubectl get clusters.live -n "$ns" 2>&1)"
live() {
	local a out
	while [ ! -f "$tmp/stop" ]; do
		a=$(avail 2>&1)
		if [ "$a" = True ]; then echo ok >>"$tmp/live_ok"; else echo "$(date +%T.%N) apiservice: $a" >>"$tmp/live_failed"; fi
		if out=$(kubectl get clusters.live -n "$ns" 2>&1); then
			echo ok >>"$tmp/live_ok"
		else
			echo "$(date +%T.%N) get clusters.live: $out" >>"$tmp/live_failed"
		fi
		sleep 0.2
	done
}
touch "$tmp/live_ok" "$tmp/live_failed"
live &
live_pid=$!

# watch the Secrets until 2 leaf renewals and 1 completed CA rotation, checking the
# caBundles at every step
ca0=$(fp r1-pgop-ca ca.crt) || e2e_fail "read the CA Secret"
leaf_prev=$(fp r1-pgop-tls tls.crt) || e2e_fail "read the serving Secret"
leaf_changes=0 ca_changes=0 ca_prev=$ca0
deadline=$(($(date +%s) + 300))
while :; do
	sleep 2
	leaf=$(fp r1-pgop-tls tls.crt) || e2e_fail "read the serving Secret"
	ca=$(fp r1-pgop-ca ca.crt) || e2e_fail "read the CA Secret"
	[ "$leaf" == "$leaf_prev" ] || { leaf_changes=$((leaf_changes + 1)); leaf_prev=$leaf; }
	[ "$ca" == "$ca_prev" ] || { ca_changes=$((ca_changes + 1)); ca_prev=$ca; }
	for kind in validating mutating; do
		helm_bundle "$kind" "$ns-r1-pgop" >"$tmp/b.pem"
		helm_ca_only "$tmp/b.pem" "$kind caBundle" "$tmp/split"
	done
	# done when the CA rotated and its old CA left the bundle, and the leaf renewed twice
	if [ "$ca_changes" -ge 1 ] && [ "$leaf_changes" -ge 3 ] && helm_bundle_is_ca_secret "$ns" r1; then
		break
	fi
	[ "$(date +%s)" -lt "$deadline" ] ||
		e2e_fail "rotations not seen in time (leaf $leaf_changes, CA $ca_changes)"
done
ok_rotated=$(wc -l <"$tmp/ok")
sleep 5 # a few more requests after the old CA was dropped
touch "$tmp/stop"
wait "$load_pid" || true
wait "$live_pid" || true
load_pid= live_pid=
ok=$(wc -l <"$tmp/ok")
# admitted (not merely "not failed") after the old CA left the bundle
[ $((ok - ok_rotated)) -ge 3 ] || e2e_fail "only $((ok - ok_rotated)) requests admitted in the 5 s after the CA rotation"
failed=$(wc -l <"$tmp/failed")
e2e_log "rotation under load: $ok requests admitted, $failed failed; leaf renewed $leaf_changes times, CA rotated $ca_changes times"
echo "METRIC rotation_requests=$((ok + failed))"
echo "METRIC rotation_failed_requests=$failed"
echo "METRIC rotation_leaf_renewals=$leaf_changes"
echo "METRIC rotation_ca_rotations=$ca_changes"
[ "$failed" -eq 0 ] || { head -5 "$tmp/failed"; e2e_fail "$failed requests failed during rotation"; }
[ "$ok" -ge 20 ] || e2e_fail "too few requests ($ok)"
live_ok=$(wc -l <"$tmp/live_ok") live_failed=$(wc -l <"$tmp/live_failed")
e2e_log "live API during rotation: $live_ok polls ok, $live_failed failed"
echo "METRIC rotation_live_polls=$((live_ok + live_failed))"
echo "METRIC rotation_live_failed_polls=$live_failed"
[ "$live_failed" -eq 0 ] || { head -5 "$tmp/live_failed"; e2e_fail "$live_failed live API polls failed during rotation"; }
[ "$live_ok" -ge 20 ] || e2e_fail "too few live API polls ($live_ok)"
helm_check_bundles "$ns" r1 "$tmp"
# the APIService's caBundle (CA-only, trusting the leaf: helm_check_bundles above) is the
# CA Secret's once the old CA left
as_bundle() { kubectl get apiservice "v1.$G" -o jsonpath='{.spec.caBundle}' | base64 -d; }
e2e_wait_for '[ "$(as_bundle)" = "$(helm_secret_key "$ns" r1-pgop-ca ca.crt)" ]' 30 1 ||
	e2e_fail "APIService caBundle is not the CA Secret's ca.crt after the rotation"
grep -q "CAPromoted" <<<"$(kubectl -n "$ns" get events -o jsonpath='{.items[*].reason}')" ||
	e2e_fail "no CAPromoted event"

# both replicas serve admission with a certificate the published caBundle trusts. How the
# load spreads over them is kube-apiserver's choice (it keeps its connections to one
# backend), so each replica is also asked directly, as kube-apiserver would ask it.
helm_bundle validating "$ns-r1-pgop" >"$tmp/bundle.pem"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"rot-1","kind":{"group":"postgresql.cnpg.io","version":"v1","kind":"Cluster"},"resource":{"group":"postgresql.cnpg.io","version":"v1","resource":"clusters"},"operation":"CREATE","name":"direct","namespace":"default","object":{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":"direct","namespace":"default"},"spec":{"instances":1,"storage":{"size":"1Gi"}}}}}'
replicas=0
for ip in $(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=r1 --field-selector=status.phase=Running -o jsonpath='{.items[*].status.podIP}'); do
	served=$(curl -sk --max-time 5 "https://$ip:9443/metrics" |
		awk '/^pgop_http_requests_total\{path="\/validate-postgresql-cnpg-io-v1-cluster"/ {s += $NF} END {print s + 0}')
	e2e_log "replica $ip served $served validation requests through kube-apiserver"
	out=$(curl -sS --max-time 5 --cacert "$tmp/bundle.pem" \
		--connect-to "r1-pgop.$ns.svc:9443:$ip:9443" -H 'Content-Type: application/json' \
		-d "$review" "https://r1-pgop.$ns.svc:9443/validate-postgresql-cnpg-io-v1-cluster") ||
		e2e_fail "replica $ip does not serve with a certificate the caBundle trusts"
	e2e_assert_contains "$out" '"uid":"rot-1"' "replica $ip answers an AdmissionReview"
	replicas=$((replicas + 1))
done
[ "$replicas" -ge 2 ] || e2e_fail "only $replicas Running replicas were asked directly (want 2)"

# kill the leader (no graceful Lease release): another replica takes over and rotates
leader=$(kubectl -n "$ns" get lease r1-pgop-certs -o jsonpath='{.spec.holderIdentity}')
[ -n "$leader" ] || e2e_fail "no certificate Lease holder"
e2e_log "killing the leader $leader"
leaf_before=$(fp r1-pgop-tls tls.crt) || e2e_fail "read the serving Secret"
kubectl -n "$ns" delete pod "$leader" --grace-period=0 --force >/dev/null 2>&1
e2e_wait_for "[ -n \"\$(kubectl -n $ns get lease r1-pgop-certs -o jsonpath='{.spec.holderIdentity}')\" ] && [ \"\$(kubectl -n $ns get lease r1-pgop-certs -o jsonpath='{.spec.holderIdentity}')\" != $leader ]" 60 ||
	e2e_fail "nobody took the Lease from $leader"
new_leader=$(kubectl -n "$ns" get lease r1-pgop-certs -o jsonpath='{.spec.holderIdentity}')
e2e_log "new leader: $new_leader"
e2e_wait_for "leaf=\$(fp r1-pgop-tls tls.crt) && [ \"\$leaf\" != $leaf_before ]" 60 ||
	e2e_fail "the new leader did not renew the leaf"
e2e_wait_for "kubectl apply --dry-run=server -f $tmp/valid.yaml" 30 || e2e_fail "admission after the leader change"
helm_check_bundles "$ns" r1 "$tmp"
e2e_log "helm rotation: all checks passed"
