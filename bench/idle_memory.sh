#!/usr/bin/env bash
# e2e-timeout: 5400
# Benchmark (not a test): memory of an idle controller managing one Cluster (the demo's
# 3-instance cluster-example by default). A host-process controller (so /proc and a
# heap profiler can see it), the Cluster made healthy, then VmRSS/VmHWM/RssAnon sampled
# every BENCH_INTERVAL s (60) for BENCH_SECONDS s (600); prints METRIC lines, the first,
# last, min and max sample and the least-squares slope (kB per hour). With
# BENCH_HEAPTRACK=FILE the controller runs under heaptrack (Debian package) and the
# profile is written to FILE.zst (read it with heaptrack_print). Run through the e2e runner:
#   tests/e2e/run.sh "$PWD/build" "$PWD/bench/idle_memory.sh"
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
interval=${BENCH_INTERVAL:-60}
seconds=${BENCH_SECONDS:-600}
instances=${BENCH_INSTANCES:-3}
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$E2E_DIR/cluster_lib.sh"
cluster_setup idlemem
cluster_crd
if [ -n "${BENCH_HEAPTRACK:-}" ]; then
	command -v heaptrack >/dev/null || e2e_fail "heaptrack not installed (apt-get install heaptrack)"
	export PGOP_CTL_WRAP="heaptrack -o $BENCH_HEAPTRACK"
fi
cluster_controller_start --workers 2 --leader-elect false
pid=$ctl_pid
if [ -n "${BENCH_HEAPTRACK:-}" ]; then # the wrapper's child is the controller
	pid=$(pgrep -n -f -- "$PGOP_BIN controller") || e2e_fail "controller process not found"
fi
kb() { # FIELD: kB value of /proc/<controller>/status FIELD
	[ -r "/proc/$pid/status" ] || e2e_fail "the controller (pid $pid) is gone"
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"
}
echo "METRIC controller_no_cluster_rss_kb=$(kb VmRSS)"
k apply -f - >/dev/null <<YAML
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $C
spec:
  instances: $instances
  storage:
    size: 1Gi
YAML
wait_healthy "$instances" 300
echo "METRIC controller_healthy_rss_kb=$(kb VmRSS)"
samples=()
t0=$(date +%s)
while :; do
	t=$(($(date +%s) - t0))
	r=$(kb VmRSS)
	samples+=("$t $r")
	e2e_log "t=${t}s VmRSS ${r} kB RssAnon $(kb RssAnon) kB VmHWM $(kb VmHWM) kB threads $(kb Threads)"
	((t >= seconds)) && break
	sleep "$interval"
done
healthy_with "$instances" || e2e_fail "Cluster no longer healthy"
printf '%s\n' "${samples[@]}" | awk '
	{ n++; x[n] = $1; y[n] = $2; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2
	  if (n == 1 || $2 < mn) mn = $2; if ($2 > mx) mx = $2 }
	END { d = n * sxx - sx * sx; slope = d ? (n * sxy - sx * sy) / d * 3600 : 0
	  printf "METRIC controller_idle_rss_first_kb=%d\nMETRIC controller_idle_rss_last_kb=%d\n", y[1], y[n]
	  printf "METRIC controller_idle_rss_min_kb=%d\nMETRIC controller_idle_rss_max_kb=%d\n", mn, mx
	  printf "METRIC controller_idle_rss_slope_kb_per_h=%.0f\nMETRIC controller_idle_samples=%d\n", slope, n }'
echo "METRIC controller_idle_hwm_kb=$(kb VmHWM)"
# Where the resident pages are: the main heap, other anonymous mappings (glibc's
# per-thread malloc arenas are 64 MiB reservations, thread stacks 8 MiB), files.
awk '
	function flush() { if (name == "") return
		what = name == "[heap]" ? "heap" : name ~ /^\// ? "file" : name == "anon" ? "anon" : "other"
		# glibc arena: an rw part and its PROT_NONE rest, 64 MiB together
		if (what == "anon" && pperm == "rw-p" && perm == "---p" && psize + size == 65536) pwhat = "arena"
		if (pname != "") { rss[pwhat] += prss; n[pwhat]++ }
		pname = name; pwhat = what; pperm = perm; psize = size; prss = r }
	/^[0-9a-f]+-[0-9a-f]+ / { flush(); perm = $2; name = $6 == "" ? "anon" : $6; next }
	$1 == "Size:" { size = $2 } $1 == "Rss:" { r = $2 }
	END { flush(); name = "x"; flush()
		for (w in rss) printf "METRIC controller_idle_rss_%s_kb=%d\nMETRIC controller_idle_mappings_%s=%d\n", w, rss[w], w, n[w] }' "/proc/$pid/smaps"
if [ -n "${BENCH_HEAPTRACK:-}" ]; then
	kill -TERM "$pid"
	wait "$ctl_pid" 2>/dev/null || true
	ctl_pid=
	e2e_log "heap profile: $(ls "$BENCH_HEAPTRACK"* 2>/dev/null)"
fi
