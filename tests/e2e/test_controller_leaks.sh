#!/usr/bin/env bash
# e2e-timeout: 420
# Leak check of the controller (issue 12, the CI-kept short variant of the long run in
# bench/idle_memory.sh): the ASan/LSan build of `pgop controller` (build-asan/, which
# scripts/test.sh builds before the e2e stage; PGOP_ASAN_BIN overrides) runs as a host
# process against the real control plane and node agent through one Cluster's lifecycle
# (1 instance: created, healthy, deleted) and is stopped with SIGTERM; it must exit 0 with
# no LeakSanitizer (or AddressSanitizer) report. Instance pods run the normal build.
# That it can fail was checked by hand: the same binary with a 4 KiB allocation dropped by
# an LD_PRELOADed constructor exits 66 after SIGTERM with "Direct leak of 4096 byte(s)".
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
asan=${PGOP_ASAN_BIN:-$E2E_DIR/../../build-asan/cmd/pgop}
[ -x "$asan" ] || e2e_skip "no ASan build of pgop at $asan (cmake -B build-asan -DPGOP_SANITIZE=ON)"
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$E2E_DIR/cluster_lib.sh"
cluster_setup leak
cluster_crd
# abort_on_error: an ASan error ends the process at once (exit code checked below)
PGOP_CTL_WRAP="env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=66" \
	PGOP_BIN=$asan cluster_controller_start --workers 2 --leader-elect false
k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $C
spec:
  instances: 1
  storage:
    size: 1Gi
EOF
wait_healthy 1 300
e2e_log "Cluster healthy under the ASan controller"
# a few reconciles of the healthy Cluster (every 5 s), then its deletion
sleep 12
k delete cluster "$C" --wait=false >/dev/null
e2e_wait_for "[ \"\$(k get pods -l cnpg.io/cluster=$C --no-headers 2>/dev/null | wc -l)\" = 0 ]" 120 ||
	e2e_fail "the Cluster's Pods are still there"
sleep 3
kill -TERM "$ctl_pid"
rc=0
wait "$ctl_pid" || rc=$?
ctl_pid=
if grep -qE 'LeakSanitizer|AddressSanitizer|runtime error:' "$tmp/controller.log"; then
	grep -E -A30 'LeakSanitizer|AddressSanitizer|runtime error:' "$tmp/controller.log" | head -n 80 >&2
	e2e_fail "the ASan controller reported an error (exit $rc)"
fi
e2e_assert_eq 0 "$rc" "ASan controller exit status after SIGTERM"
e2e_log "no leak reported by LeakSanitizer over the Cluster's lifecycle"
