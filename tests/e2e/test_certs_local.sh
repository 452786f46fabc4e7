#!/usr/bin/env bash
# e2e-timeout: 420
# Self-managed certificates against the real kube-apiserver, without the node agent: two
# `pgop controller --tls-secret` replicas run on the host; the webhook configurations
# point at them by URL (https://localhost:PORT/..., and the certificate manager is told the
# Service is called "localhost", so the leaf's SANs match). The mutating webhook calls
# replica A and the validating one replica B, so every request goes through both.
#  - install from nothing: Secrets, caBundles (CA only) and readiness of both replicas;
#  - rotation under load (CA 9m, leaf 8m => CA rotates ~60 s after creation, leaf every
#    ~20 s): `kubectl apply --dry-run=server` in a loop sees zero failures across one CA
#    rotation and several leaf renewals;
#  - SIGKILL of the Lease holder: the other replica takes the Lease and keeps renewing;
#  - deleting the serving Secret, then the CA Secret: recovered within one check period,
#    no failed request.
# Prints METRIC certs_local_requests / certs_local_failed_requests (must be 0).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
if [ ! -x "$PGOP_BIN" ]; then
	e2e_log "skip: pgop binary not built ($PGOP_BIN)"
	exit 77
fi
e2e_up
. "$E2E_DIR/helm_lib.sh"
CRD=$(cd "$E2E_DIR/../../crd" && pwd)/postgresql.cnpg.io_clusters.yaml
kubectl apply --server-side --force-conflicts -f "$CRD" >/dev/null
e2e_wait_for "kubectl get crd clusters.postgresql.cnpg.io -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}' | grep -qx True" 30 ||
	e2e_fail "CRD not Established"

ns=$(e2e_ns certs)
name=$ns-pgop # webhook configurations (cluster-scoped) and Secrets prefix
tmp=$(mktemp -d)
port_a=${PGOP_E2E_CERTS_PORT:-29443}
port_b=$((port_a + 1))
pids=()
cleanup() {
	[ ! -f "$tmp/stop" ] && touch "$tmp/stop" 2>/dev/null || true
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	kubectl delete mutatingwebhookconfiguration "$name" --ignore-not-found >/dev/null 2>&1 || true
	kubectl delete validatingwebhookconfiguration "$name" --ignore-not-found >/dev/null 2>&1 || true
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT

whc() { # KIND PATH PORT
	cat <<-EOF
		apiVersion: admissionregistration.k8s.io/v1
		kind: ${1}WebhookConfiguration
		metadata: {name: $name}
		webhooks:
		  - name: ${2}.$ns.pgop.cnpg.io
		    clientConfig: {url: "https://localhost:$3/${2}-postgresql-cnpg-io-v1-cluster"}
		    rules: [{apiGroups: [postgresql.cnpg.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [clusters], scope: Namespaced}]
		    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
		    failurePolicy: Fail
		    sideEffects: None
		    admissionReviewVersions: [v1]
		    timeoutSeconds: 5
	EOF
}
whc Mutating mutate "$port_a" | kubectl apply -f - >/dev/null
whc Validating validate "$port_b" | kubectl apply -f - >/dev/null

start() { # ID PORT
	POD_NAME=$1 "$PGOP_BIN" controller --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$2" \
		--tls-secret "$name-tls" --ca-secret "$name-ca" --service localhost --namespace "$ns" \
		--mutating-webhook "$name" --validating-webhook "$name" --cert-lease "$name-certs" \
		--ca-lifetime 9m --cert-lifetime 8m --cert-check-interval 5 --cert-settle 3 \
		</dev/null >"$tmp/$1.log" 2>&1 &
	pids+=($!)
}
t0=$(date +%s%N)
start a "$port_a"
start b "$port_b"
e2e_wait_for "curl -skf https://127.0.0.1:$port_a/readyz && curl -skf https://127.0.0.1:$port_b/readyz" 60 ||
	{ tail -5 "$tmp"/*.log; e2e_fail "replicas not ready"; }
helm_cluster_yaml "$ns" ok1 >"$tmp/valid.yaml"
helm_cluster_yaml "$ns" bad1 'postgresql: {parameters: {listen_addresses: "*"}}' >"$tmp/invalid.yaml"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
e2e_log "both replicas ready and admitting after $((($(date +%s%N) - t0) / 1000000)) ms"
e2e_assert_fails_with "spec.postgresql.parameters.listen_addresses" kubectl apply --dry-run=server -f "$tmp/invalid.yaml"
for kind in validating mutating; do
	helm_bundle "$kind" "$name" >"$tmp/$kind.pem"
	[ "$(cat "$tmp/$kind.pem")" == "$(helm_secret_key "$ns" "$name-ca" ca.crt)" ] ||
		e2e_fail "$kind caBundle is not exactly the CA"
done

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
pids+=($!)
load_pid=$!

# fp SECRET KEY: fingerprint; a failed read or an empty value is an error, not a "change"
fp() {
	local v
	v=$(helm_secret_key "$ns" "$1" "$2") && [ -n "$v" ] || { e2e_log "cannot read $ns/$1 $2"; return 1; }
	sha256sum <<<"$v" | cut -c1-16
}
# the caBundle is the CA Secret's certificate (both non-empty)
bundle_is_ca() {
	local b c
	b=$(helm_bundle validating "$name") && c=$(helm_secret_key "$ns" "$name-ca" ca.crt) &&
		[ -n "$b" ] && [ "$b" == "$c" ]
}
leaf_prev=$(fp "$name-tls" tls.crt) || e2e_fail "read the serving Secret"
ca_prev=$(fp "$name-ca" ca.crt) || e2e_fail "read the CA Secret"
leaf_changes=0 ca_changes=0
deadline=$(($(date +%s) + 180))
while :; do
	sleep 2
	leaf=$(fp "$name-tls" tls.crt) || e2e_fail "read the serving Secret"
	ca=$(fp "$name-ca" ca.crt) || e2e_fail "read the CA Secret"
	[ "$leaf" == "$leaf_prev" ] || { leaf_changes=$((leaf_changes + 1)); leaf_prev=$leaf; }
	[ "$ca" == "$ca_prev" ] || { ca_changes=$((ca_changes + 1)); ca_prev=$ca; }
	# done when the CA rotated, the old CA left the bundle, and the leaf renewed 3 times
	if [ "$ca_changes" -ge 1 ] && [ "$leaf_changes" -ge 3 ] && bundle_is_ca; then
		break
	fi
	[ "$(date +%s)" -lt "$deadline" ] || e2e_fail "rotations not seen (leaf $leaf_changes, CA $ca_changes)"
done
e2e_log "rotation: leaf renewed $leaf_changes times, CA rotated $ca_changes times"

# kill the leader (no Lease release)
leader=$(kubectl -n "$ns" get lease "$name-certs" -o jsonpath='{.spec.holderIdentity}')
case $leader in a) victim=${pids[0]} other=b ;; b) victim=${pids[1]} other=a ;; *) e2e_fail "lease holder '$leader'" ;; esac
e2e_log "SIGKILL the leader $leader; the webhook of the killed replica now fails, so load stops"
touch "$tmp/stop"
wait "$load_pid" || true
kill -9 "$victim"
leaf_before=$(fp "$name-tls" tls.crt) || e2e_fail "read the serving Secret"
e2e_wait_for "[ \"\$(kubectl -n $ns get lease $name-certs -o jsonpath='{.spec.holderIdentity}')\" = $other ]" 40 ||
	e2e_fail "the other replica did not take the Lease"
e2e_wait_for "leaf=\$(fp $name-tls tls.crt) && [ \"\$leaf\" != $leaf_before ]" 60 || e2e_fail "no renewal after the leader change"
start "${leader}2" "$([ "$leader" = a ] && echo "$port_a" || echo "$port_b")" # replaced, like a pod
e2e_wait_for "curl -skf https://127.0.0.1:$port_a/readyz && curl -skf https://127.0.0.1:$port_b/readyz" 60 ||
	e2e_fail "replicas not ready after the replacement"
e2e_log "Lease taken over by $other; leaf renewed after the takeover"

ok=$(wc -l <"$tmp/ok")
failed=$(wc -l <"$tmp/failed")
echo "METRIC certs_local_requests=$((ok + failed))"
echo "METRIC certs_local_failed_requests=$failed"
e2e_log "rotation under load: $ok admitted, $failed failed"
[ "$failed" -eq 0 ] || { head -3 "$tmp/failed"; e2e_fail "$failed requests failed"; }
[ "$ok" -ge 20 ] || e2e_fail "only $ok requests admitted during the rotations"

# deleted Secrets recover within a check period, requests keep working
rm -f "$tmp/stop" "$tmp/ok" "$tmp/failed"
touch "$tmp/ok" "$tmp/failed"
load &
pids+=($!)
load_pid=$!
kubectl -n "$ns" delete secret "$name-tls" >/dev/null
e2e_wait_for "kubectl -n $ns get secret $name-tls" 10 || e2e_fail "serving Secret not recreated"
kubectl -n "$ns" delete secret "$name-ca" >/dev/null
e2e_wait_for "kubectl -n $ns get secret $name-ca" 10 || e2e_fail "CA Secret not recreated"
e2e_wait_for bundle_is_ca 40 ||
	e2e_fail "caBundle did not converge to the new CA"
sleep 3
touch "$tmp/stop"
wait "$load_pid" || true
failed=$(wc -l <"$tmp/failed")
ok=$(wc -l <"$tmp/ok")
e2e_log "Secrets deleted and recovered: $ok admitted, $failed failed"
[ "$failed" -eq 0 ] || { head -3 "$tmp/failed"; e2e_fail "$failed requests failed while recovering"; }
[ "$ok" -ge 3 ] || e2e_fail "only $ok requests admitted while the Secrets were recovered"
e2e_log "certs local: all checks passed"
