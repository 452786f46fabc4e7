#!/usr/bin/env bash
# tests/e2e/test_metrics_rules.sh - the chart's alert rules (no Kubernetes):
# `promtool check rules` on charts/pgop/files/alerts.yaml, `promtool test rules`
# with tests/e2e/rules/alerts_test.yaml (each alert fires on its condition and
# not on healthy series), and the PrometheusRule the chart renders
# (monitoring.prometheusRule.enabled) carrying the same groups, which promtool
# accepts too; the Grafana dashboard ConfigMap (monitoring.grafanaDashboard.create).
# Usage: test_metrics_rules.sh [PGOP_BIN] (unused). Prints "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PROM_BIN=$("$HERE/build-prometheus.sh") || e2e_fail "promtool could not be built"
HELM=$(ls -d "${PGOP_CACHE:-$HOME/.cache/pgop}"/bin-k8s-*/helm 2>/dev/null | head -1)
[[ -x $HELM ]] || HELM=$(command -v helm) || e2e_fail "helm is required (tests/e2e/build-k8s.sh builds it)"
PASS=0
FAIL=0
check() {
	local name=$1
	shift
	if "$@"; then
		PASS=$((PASS + 1))
		e2e_log "ok: $name"
	else
		FAIL=$((FAIL + 1))
		e2e_log "FAIL: $name"
	fi
}
T=$(mktemp -d /tmp/pgop-rules.XXXXXX)
trap 'rm -rf "$T"' EXIT
check "promtool check rules: charts/pgop/files/alerts.yaml" \
	"$PROM_BIN/promtool" check rules "$ROOT/charts/pgop/files/alerts.yaml"
check "promtool test rules: every alert fires on its fixture" \
	bash -c "cd '$HERE/rules' && '$PROM_BIN/promtool' test rules alerts_test.yaml"
"$HELM" template t "$ROOT/charts/pgop" --set monitoring.prometheusRule.enabled=true \
	--show-only templates/monitoring.yaml >"$T/rule.yaml" 2>"$T/helm.err"
check "the chart renders a PrometheusRule" grep -q '^kind: PrometheusRule$' "$T/rule.yaml"
# the rendered spec (groups) as a rule file
awk '/^spec:/ { on = 1; next } on { sub(/^  /, ""); print }' "$T/rule.yaml" >"$T/groups.yaml"
check "the rendered PrometheusRule's groups pass promtool check rules" \
	"$PROM_BIN/promtool" check rules "$T/groups.yaml"
check "the rendered rules are the tested rules (7 alerts)" \
	test "$(grep -c 'alert: PGOP' "$T/groups.yaml")" = 7
check "no PrometheusRule unless enabled" bash -c "! '$HELM' template t '$ROOT/charts/pgop' 2>/dev/null | grep -q 'kind: PrometheusRule'"
"$HELM" template t "$ROOT/charts/pgop" --set monitoring.grafanaDashboard.create=true \
	--show-only templates/monitoring.yaml >"$T/dash.yaml" 2>>"$T/helm.err"
check "the chart's Grafana dashboard ConfigMap holds CloudNativePG's dashboard (valid JSON)" \
	bash -c "grep -q '^    grafana_dashboard: \"1\"$' '$T/dash.yaml' &&
		test \"\$(sed -n '/^  cnp.json: |-$/,\$p' '$T/dash.yaml' | tail -n +2 | sed 's/^    //' | jq -r .title)\" = CloudNativePG"
echo "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]]
