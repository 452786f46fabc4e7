#!/usr/bin/env bash
# Benchmark (not a test): every fault scenario of the fault suite (tests/e2e/faults_lib.sh)
# BENCH_RUNS times (default 5) on a synchronous and on an asynchronous 3-instance Cluster,
# through the e2e runner (real control plane, node agent, Helm-installed pgop), then per
# scenario: detection time, write outage (min/median/max), time to healthy, acknowledged
# COMMITs lost (max; must be 0 for synchronous) and objects left behind (max; must be 0).
#   bench/failover.sh [BUILD_DIR]     (BENCH_RUNS=5; BENCH_SYNC / BENCH_ASYNC: scenario lists)
# Then the node scenarios (issue 26) on the three-node substrate, side by side with the
# one-node scenarios above: test_drain (the primary's node drained, twice per run) and
# test_node_loss (the primary's node stopped, its network cut, a replica's node gone for
# good), each BENCH_RUNS times (BENCH_NODES=0 skips them, BENCH_ONE_NODE=0 runs them
# alone): detection, promotion, -rw and
# write-outage times min/median/max, lost COMMITs.
# The runs fail like the tests when a scenario's assertion fails (a lost synchronous COMMIT,
# two primaries); the table shows what was measured until then.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
logs=${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}
runs=${BENCH_RUNS:-5}
export FAULTS_RUNS=$runs E2E_TEST_TIMEOUT=$((runs * 900))
rc=0
# empty lists: each test's own default (every scenario it has)
if [ "${BENCH_ONE_NODE:-1}" != 0 ]; then # BENCH_ONE_NODE=0: the node scenarios alone
	FAULTS_SCENARIOS=${BENCH_SYNC:-} "$top/tests/e2e/run.sh" "$build" test_faults_sync || rc=1
	cp "$logs/test_faults_sync.log" /tmp/bench-failover-sync.log 2>/dev/null
	FAULTS_SCENARIOS=${BENCH_ASYNC:-} "$top/tests/e2e/run.sh" "$build" test_faults_async || rc=1
	cp "$logs/test_faults_async.log" /tmp/bench-failover-async.log 2>/dev/null
else
	rm -f /tmp/bench-failover-sync.log /tmp/bench-failover-async.log
fi
: >/tmp/bench-failover-nodes.log
if [ "${BENCH_NODES:-1}" != 0 ]; then
	for i in $(seq "$runs"); do
		for t in test_drain test_node_loss; do
			"$top/tests/e2e/run.sh" "$build" "$t" || rc=1
			cat "$logs/$t.log" >>/tmp/bench-failover-nodes.log 2>/dev/null
		done
	done
fi

# METRIC fault_<mode>_<scenario>_<what>=V lines -> one row per mode and scenario
cat /tmp/bench-failover-sync.log /tmp/bench-failover-async.log /tmp/bench-failover-nodes.log 2>/dev/null |
	sed -n 's/^METRIC fault_//p' | sed 's/^sync_drain[0-9]*_/sync_node_drain_/' |
	awk -F= '
	{
		key = $1; v = $2; what = ""
		nw = split("detect_ms promoted_ms rw_ms outage_ms healthy_s lost leftover failover acked_after_fence acked_by_isolated switchover_ms rw_left_old_ms deleted_ms rebuilt_ms", w, " ")
		for (i = 1; i <= nw; i++)
			if (substr(key, length(key) - length(w[i])) == "_" w[i]) { what = w[i]; break }
		if (what == "") next
		key = substr(key, 1, length(key) - length(what) - 1)
		if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
		vals[key, what] = vals[key, what] " " v
	}
	function stats(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		if (n == 0) return "-"
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[1] "/" a[int((n + 1) / 2)] "/" a[n]
	}
	function maxof(s,   a, n, i, m) {
		n = split(s, a, " "); if (n == 0) return "-"
		m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]
		return m
	}
	END {
		printf "%-24s %5s %16s %22s %14s %8s %8s %9s\n", "scenario", "runs", "detect ms", "outage ms min/med/max", "healthy s", "lost", "left", "failover"
		for (i = 1; i <= nk; i++) {
			k = order[i]
			runs = split(vals[k, "outage_ms"], tmp, " ")
			printf "%-24s %5d %16s %22s %14s %8s %8s %9s\n", k, runs, stats(vals[k, "detect_ms"]), stats(vals[k, "outage_ms"]),
				stats(vals[k, "healthy_s"]), maxof(vals[k, "lost"]), maxof(vals[k, "leftover"]), stats(vals[k, "failover"])
			if (vals[k, "promoted_ms"] vals[k, "switchover_ms"] vals[k, "rebuilt_ms"] != "")
				printf "%-24s switchover ms %s, promoted ms %s, -rw left the old primary ms %s, lost instance deleted ms %s, rebuilt ms %s\n", "",
					stats(vals[k, "switchover_ms"]), stats(vals[k, "promoted_ms"]), stats(vals[k, "rw_left_old_ms"]),
					stats(vals[k, "deleted_ms"]), stats(vals[k, "rebuilt_ms"])
			if (vals[k, "acked_by_isolated"] != "")
				printf "%-24s isolated primary acknowledged (max) %s, after T_fence (max) %s\n", "", maxof(vals[k, "acked_by_isolated"]), maxof(vals[k, "acked_after_fence"])
		}
	}'
exit $rc
