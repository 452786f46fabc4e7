#!/usr/bin/env bash
# e2e-timeout: 600
# pgop installed with its chart (certificate.mode=self, the default) on the real control
# plane + node agent:
#  - helm install from nothing (--wait), then at once: an invalid Cluster is refused by
#    kube-apiserver with pgop's message naming the field, a valid one is stored with its
#    defaults, `kubectl apply --dry-run=server` works; `helm test` (pgop selftest) passes;
#  - both caBundles hold the CA only (never the leaf), and trust the served certificate;
#  - deleting the serving Secret, then the CA Secret, recovers within one check period
#    while requests keep being admitted;
#  - a second release in another namespace installs side by side; every Cluster of
#    samples/invalid/ (injection attempts among them) is refused naming its field;
#  - helm upgrade with changed values (webhook timeout, log level) keeps the caBundle and
#    admission working;
#  - the Backup and ScheduledBackup webhooks refuse a bad schedule naming spec.schedule
#    and warn on volumeSnapshot Backups;
#  - helm uninstall removes the release and pgop's Secrets; the CRD stays (helm never
#    deletes crds/).
# Prints METRIC helm_install_to_first_admitted_ms.
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

ns1=$(e2e_ns helm-a)
ns2=$(e2e_ns helm-b)
tmp=$(mktemp -d)
cleanup() {
	helm uninstall r1 -n "$ns1" >/dev/null 2>&1 || true
	helm uninstall r2 -n "$ns2" >/dev/null 2>&1 || true
	kubectl delete namespace "$ns1" "$ns2" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT

# Each release reconciles its own namespace (namespaced RBAC: the reconciler's Role is
# created there); this test is about admission and certificates, test_cluster_* run
# Clusters through the chart.
common=(--set certificate.checkIntervalSeconds=5 --set certificate.settleSeconds=2)

# 1. install from nothing; the first request right after --wait must be admitted.
t0=$(date +%s%N)
helm install r1 "$CHART" -n "$ns1" "${common[@]}" --set "watchNamespaces={$ns1}" --wait --timeout 180s >"$tmp/install.out" 2>&1 ||
	{ cat "$tmp/install.out"; helm_debug "$ns1" r1; e2e_fail "helm install r1"; }
t1=$(date +%s%N)
helm_cluster_yaml "$ns1" ok1 >"$tmp/valid.yaml"
helm_cluster_yaml "$ns1" bad1 'postgresql: {parameters: {listen_addresses: "*"}}' >"$tmp/invalid.yaml"
if ! out=$(kubectl apply --dry-run=server -f "$tmp/valid.yaml" 2>&1); then
	helm_debug "$ns1" r1
	e2e_fail "first request after helm install --wait was not admitted: $out"
fi
t2=$(date +%s%N)
e2e_log "helm install --wait: $(((t1 - t0) / 1000000)) ms; first admitted request after $(((t2 - t0) / 1000000)) ms"
echo "METRIC helm_install_wait_ms=$(((t1 - t0) / 1000000))"
echo "METRIC helm_install_to_first_admitted_ms=$(((t2 - t0) / 1000000))"

# 2. admission through kube-apiserver
e2e_assert_fails_with "spec.postgresql.parameters.listen_addresses: Invalid value: \"*\": Can't set fixed configuration parameter" \
	kubectl apply -f "$tmp/invalid.yaml"
e2e_assert_ok kubectl apply -f "$tmp/valid.yaml"
e2e_assert_eq "ghcr.io/cloudnative-pg/postgresql:15" \
	"$(kubectl -n "$ns1" get cluster ok1 -o jsonpath='{.spec.imageName}')" "defaulted imageName"
e2e_assert_eq "app" "$(kubectl -n "$ns1" get cluster ok1 -o jsonpath='{.spec.bootstrap.initdb.database}')" \
	"defaulted initdb database"
kubectl -n "$ns1" delete cluster ok1 --wait=false >/dev/null
e2e_assert_contains "$(kubectl apply --dry-run=server -f "$tmp/valid.yaml" 2>&1)" "(server dry run)" \
	"server-side dry run"
e2e_assert_fails kubectl apply --dry-run=server -f "$tmp/invalid.yaml"

# 3. helm test: pgop selftest in a pod
helm test r1 -n "$ns1" --timeout 120s >"$tmp/test.out" 2>&1 ||
	{ cat "$tmp/test.out"; kubectl -n "$ns1" logs r1-pgop-selftest 2>&1 | tail -5; e2e_fail "helm test r1"; }
e2e_assert_eq Succeeded "$(kubectl -n "$ns1" get pod r1-pgop-selftest -o jsonpath='{.status.phase}')" \
	"selftest pod phase"
e2e_assert_match "$(cat "$tmp/test.out")" "Phase: +Succeeded" "helm test output"

# 4. caBundles: CA only, equal to the CA Secret, trusting the served leaf
helm_check_bundles "$ns1" r1 "$tmp"

# 5. deleting the Secrets recovers within one check period (5 s; allow 3 periods)
old_leaf=$(helm_secret_key "$ns1" r1-pgop-tls tls.crt | sha256sum)
kubectl -n "$ns1" delete secret r1-pgop-tls >/dev/null
e2e_wait_for "kubectl -n $ns1 get secret r1-pgop-tls" 15 || e2e_fail "serving Secret not recreated"
e2e_assert_ne "$old_leaf" "$(helm_secret_key "$ns1" r1-pgop-tls tls.crt | sha256sum)" "re-issued leaf"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
old_ca=$(helm_secret_key "$ns1" r1-pgop-ca ca.crt | sha256sum)
kubectl -n "$ns1" delete secret r1-pgop-ca >/dev/null
e2e_wait_for "kubectl -n $ns1 get secret r1-pgop-ca" 15 || e2e_fail "CA Secret not recreated"
e2e_assert_ne "$old_ca" "$(helm_secret_key "$ns1" r1-pgop-ca ca.crt | sha256sum)" "new CA"
# new CA published next to the old one, leaf re-issued from it, old CA dropped
e2e_wait_for "helm_bundle_is_ca_secret $ns1 r1" 40 || e2e_fail "caBundle did not converge to the new CA"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
helm_check_bundles "$ns1" r1 "$tmp"
e2e_log "Secrets deleted and recovered"

# 6. a second release in another namespace, side by side
helm install r2 "$CHART" -n "$ns2" "${common[@]}" --set "watchNamespaces={$ns2}" --set replicas=1 --wait --timeout 180s \
	>"$tmp/install2.out" 2>&1 || { cat "$tmp/install2.out"; helm_debug "$ns2" r2; e2e_fail "helm install r2"; }
helm_check_bundles "$ns2" r2 "$tmp"
e2e_assert_ne "$(helm_secret_key "$ns1" r1-pgop-ca ca.crt)" "$(helm_secret_key "$ns2" r2-pgop-ca ca.crt)" \
	"separate CAs"
helm_cluster_yaml "$ns2" ok2 >"$tmp/valid2.yaml"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid2.yaml"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
e2e_assert_fails_with "listen_addresses" kubectl apply --dry-run=server -f "$tmp/invalid.yaml"
e2e_log "two releases side by side"

# 6b. every Cluster of samples/invalid/ (configuration injection through parameter names,
# line breaks in pg_hba, fixed parameters, ...) is refused at kubectl apply, by the
# Helm-installed webhook, naming the field its "# pgop-denied:" line gives
n=0 out=
for f in "$E2E_DIR"/../../samples/invalid/*.yaml; do
	field=$(sed -n 's/^# pgop-denied: //p' "$f")
	[ -n "$field" ] || e2e_fail "$(basename "$f") has no '# pgop-denied:' line"
	if out=$(kubectl -n "$ns1" apply --dry-run=server -f "$f" 2>&1); then
		e2e_fail "$(basename "$f") was admitted"
	fi
	# pgop's webhook names the path; the CRD's own CEL rules (checked first by the API
	# server, e.g. maxSyncReplicas) name the field in their message
	[[ $out == *"$field"* ]] || { [[ $out == *"is invalid"* ]] && [[ $out == *"${field##*.}"* ]]; } ||
		e2e_fail "$(basename "$f") refused without naming $field: $out"
	n=$((n + 1))
done
e2e_log "$n invalid samples refused at kubectl apply, each naming its field"
# 6c. the Backup kinds' webhooks are registered: a ScheduledBackup with an hour 25 (the
# CRD has no pattern for it) is refused by pgop naming spec.schedule and the part; a
# Backup with method volumeSnapshot is admitted with a warning
out=$(kubectl -n "$ns1" apply --dry-run=server -f "$E2E_DIR/../../samples/invalid/scheduled-backup-schedule.yaml" 2>&1) &&
	e2e_fail "a ScheduledBackup with schedule '0 0 25 * * *' was admitted"
e2e_assert_contains "$out" 'spec.schedule: Invalid value: "0 0 25 * * *": hours field' "bad schedule refused"
out=$(printf '%s\n' "apiVersion: postgresql.cnpg.io/v1" "kind: Backup" "metadata: {name: snap}" \
	"spec: {cluster: {name: pg}, method: volumeSnapshot}" |
	kubectl -n "$ns1" apply --dry-run=server -f - 2>&1) || e2e_fail "volumeSnapshot Backup refused: $out"
e2e_assert_contains "$out" "pgop takes no CSI volume snapshots" "volumeSnapshot warning"
e2e_log "Backup and ScheduledBackup admission through the Helm-installed webhooks"

# 7. helm upgrade with changed values
bundle_before=$(kubectl get validatingwebhookconfiguration "$ns1-r1-pgop" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
helm upgrade r1 "$CHART" -n "$ns1" "${common[@]}" --set "watchNamespaces={$ns1}" --set webhook.timeoutSeconds=7 --set logLevel=debug \
	--wait --timeout 180s >"$tmp/upgrade.out" 2>&1 || { cat "$tmp/upgrade.out"; e2e_fail "helm upgrade r1"; }
e2e_assert_eq 7 "$(kubectl get validatingwebhookconfiguration "$ns1-r1-pgop" -o jsonpath='{.webhooks[0].timeoutSeconds}')" \
	"upgraded webhook timeout"
e2e_assert_eq "$bundle_before" \
	"$(kubectl get validatingwebhookconfiguration "$ns1-r1-pgop" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" \
	"caBundle kept across the upgrade"
e2e_assert_contains "$(kubectl -n "$ns1" get deploy r1-pgop -o jsonpath='{.spec.template.spec.containers[0].args}')" \
	"--log-level=debug" "upgraded args"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
e2e_log "helm upgrade done"

# 8. uninstall: release objects go; the CRD stays (helm never deletes crds/); the CA and
# serving Secrets pgop created are owned by the Service and garbage-collected.
helm uninstall r2 -n "$ns2" --wait >/dev/null
helm uninstall r1 -n "$ns1" --wait >/dev/null
e2e_assert_fails kubectl get validatingwebhookconfiguration "$ns1-r1-pgop"
e2e_assert_fails kubectl get mutatingwebhookconfiguration "$ns2-r2-pgop"
e2e_assert_ok kubectl get crd clusters.postgresql.cnpg.io
e2e_wait_for "! kubectl -n $ns1 get secret r1-pgop-ca r1-pgop-tls -o name 2>/dev/null | grep -q ." 30 ||
	e2e_fail "the certificate Secrets were not garbage-collected after uninstall"
e2e_log "uninstalled; CRD clusters.postgresql.cnpg.io kept"
e2e_log "helm install: all checks passed"
