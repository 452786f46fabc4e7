# shellcheck shell=bash
# Helpers shared by tests/e2e/test_helm_*.sh (sourced after lib.sh and e2e_up).

# helm_cluster_yaml NS NAME [EXTRA-SPEC-LINE]: a minimal Cluster manifest.
helm_cluster_yaml() {
	cat <<-EOF
		apiVersion: postgresql.cnpg.io/v1
		kind: Cluster
		metadata: {name: $2, namespace: $1}
		spec:
		  instances: 1
		  storage: {size: 1Gi}
	EOF
	[ -z "${3:-}" ] || echo "  $3"
}

# helm_debug NS RELEASE: what went wrong (pods, events, controller logs).
helm_debug() {
	kubectl -n "$1" get pods,secrets,leases -o wide >&2 || true
	kubectl -n "$1" get events --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
	local s=${PGOP_E2E_STATE:-/tmp/pgop-e2e}/agent
	grep -h "\"$1\"\|$2-pgop" "$s/agent.log" 2>/dev/null | tail -20 >&2 || true
	find "$s" -path "*$1*" -name '*.log' 2>/dev/null | head -4 | while read -r f; do
		echo "== $f" >&2
		tail -20 "$f" >&2
	done
}

# helm_secret_key NS SECRET KEY: the decoded value.
helm_secret_key() {
	local k=${3//./\\.}
	kubectl -n "$1" get secret "$2" -o jsonpath="{.data.$k}" | base64 -d
}

# helm_bundle KIND NAME: the decoded caBundle of webhooks[0] (KIND validating|mutating).
helm_bundle() {
	kubectl get "${1}webhookconfiguration" "$2" -o jsonpath='{.webhooks[0].clientConfig.caBundle}' |
		base64 -d
}

# helm_split_pem FILE DIR: one file per certificate (DIR/cert-N.pem); prints the count.
helm_split_pem() {
	mkdir -p "$2"
	rm -f "$2"/cert-*.pem
	awk -v d="$2" '/BEGIN CERTIFICATE/ {n++} n {print > (d "/cert-" n ".pem")}' "$1"
	find "$2" -name 'cert-*.pem' | wc -l
}

# helm_bundle_is_ca_secret NS RELEASE: both caBundles are exactly the CA Secret's ca.crt.
helm_bundle_is_ca_secret() {
	local ca
	ca=$(helm_secret_key "$1" "$2-pgop-ca" ca.crt) || return 1
	[ "$(helm_bundle validating "$1-$2-pgop")" == "$ca" ] &&
		[ "$(helm_bundle mutating "$1-$2-pgop")" == "$ca" ]
}

# helm_ca_only FILE WHAT DIR [LEAF_FP]: the PEM bundle FILE holds at least one
# certificate, only CA certificates, and not the leaf whose SHA-256 fingerprint
# (openssl x509 -fingerprint) is LEAF_FP; WHAT names it in the failure; DIR is scratch.
helm_ca_only() {
	local n i
	n=$(helm_split_pem "$1" "$3")
	[ "$n" -ge 1 ] || e2e_fail "$2 is empty"
	for ((i = 1; i <= n; i++)); do
		openssl x509 -in "$3/cert-$i.pem" -noout -text | grep -q "CA:TRUE" ||
			e2e_fail "$2 holds a non-CA certificate"
		[ -z "${4:-}" ] || [ "$(openssl x509 -in "$3/cert-$i.pem" -noout -fingerprint -sha256)" != "$4" ] ||
			e2e_fail "$2 holds the leaf"
	done
}

# helm_check_bundles NS RELEASE TMP: both webhook caBundles, and the live APIService's
# when it points at this release, hold CA certificates only, never the leaf; they trust
# the leaf in the serving Secret; every ready pod serves a certificate for the Service
# name that they trust (checked by curl against each pod IP).
helm_check_bundles() {
	local ns=$1 rel=$2 d=$3/bundles kind leaf_fp ip svc
	mkdir -p "$d"
	helm_secret_key "$ns" "$rel-pgop-tls" tls.crt >"$d/leaf.pem"
	leaf_fp=$(openssl x509 -in "$d/leaf.pem" -noout -fingerprint -sha256)
	for kind in validating mutating; do
		helm_bundle "$kind" "$ns-$rel-pgop" >"$d/$kind.pem"
		helm_ca_only "$d/$kind.pem" "$kind caBundle of $ns-$rel-pgop" "$d/$kind" "$leaf_fp"
		openssl verify -CAfile "$d/$kind.pem" -purpose sslserver "$d/leaf.pem" >/dev/null 2>&1 ||
			e2e_fail "$kind caBundle does not trust the serving Secret's leaf"
	done
	svc=$(kubectl get apiservice v1.live.postgresql.cnpg.io -o jsonpath='{.spec.service.namespace}/{.spec.service.name}' 2>/dev/null || true)
	if [ "$svc" = "$ns/$rel-pgop" ]; then
		e2e_wait_for '[ -n "$(kubectl get apiservice v1.live.postgresql.cnpg.io -o jsonpath="{.spec.caBundle}")" ]' 30 1 ||
			e2e_fail "APIService caBundle never published"
		kubectl get apiservice v1.live.postgresql.cnpg.io -o jsonpath='{.spec.caBundle}' | base64 -d >"$d/apiservice.pem"
		helm_ca_only "$d/apiservice.pem" "APIService caBundle" "$d/apiservice" "$leaf_fp"
		openssl verify -CAfile "$d/apiservice.pem" -purpose sslserver "$d/leaf.pem" >/dev/null 2>&1 ||
			e2e_fail "APIService caBundle does not trust the serving Secret's leaf"
	fi
	for ip in $(kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$rel" --field-selector=status.phase=Running \
		-o jsonpath='{range .items[?(@.status.podIP)]}{.status.podIP}{" "}{end}'); do
		curl -sf --max-time 5 --cacert "$d/validating.pem" \
			--resolve "$rel-pgop.$ns.svc:9443:$ip" "https://$rel-pgop.$ns.svc:9443/healthz" >/dev/null ||
			e2e_fail "pod $ip does not serve a certificate the caBundle trusts"
	done
}
