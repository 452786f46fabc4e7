#!/usr/bin/env bash
# The e2e runner. Runs every tests/e2e/test_*.sh with a per-test timeout:
#   0. builds what the tests need: pgop, pgop-node-agent and pgop-slowloris in BUILD_DIR (ninja) and the
#      upstream Kubernetes binaries (build-k8s.sh) and the S3 store versitygw
#      (build-objstore.sh), no-ops on a warm cache;
#   1. tests that do not call e2e_up, without a control plane;
#   2. one control plane (cluster-up.sh), the tests that call e2e_up against it, then
#      cluster-down.sh, which must leave nothing behind (counted as a test).
# Prints "N passed, N failed, N skipped", the skipped tests with their reasons, and exits
# non-zero on any failure. Under CI=true or PGOP_TEST_STRICT=1 (scripts/test.sh all) a
# skipped test is a failure.
#
# Usage: tests/e2e/run.sh [BUILD_DIR] [TEST_NAME...]
#   BUILD_DIR     CMake build dir holding cmd/pgop (default: <repo>/build)
#   TEST_NAME     run only these (e.g. test_controlplane, or a path); default: all
# Environment:
#   PGOP_E2E_STATE    control-plane state dir (default /tmp/pgop-e2e)
#   PGOP_E2E_LOGS     per-test logs and a copy of the control-plane logs (default /tmp/pgop-e2e-logs)
#   E2E_TEST_TIMEOUT  seconds per test (default 600; a test may say "# e2e-timeout: N",
#                     which a larger E2E_TEST_TIMEOUT overrides)
#   E2E_VERBOSE=1     stream test output instead of showing it only on failure
# A test exits 0 (pass), 77 (skipped: e2e_skip REASON, which logs "SKIP: REASON") or else
# (fail); lines "METRIC name=value" in its output are collected into the summary.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(realpath -m "${1:-$top/build}")
shift || true
export PGOP_E2E_STATE=${PGOP_E2E_STATE:-/tmp/pgop-e2e}
# shellcheck source=lib.sh
. "$here/lib.sh"
S=$PGOP_E2E_STATE
e2e_check_state_dir "$S" || exit 2
LOGS=${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}
e2e_check_state_dir "$LOGS" || exit 2
# Host-wide names (netns prefix, bridge, nft table, ports): one run per machine at a time.
exec 9>"${PGOP_E2E_LOCK:-/tmp/pgop-e2e-run.lock}"
if ! flock -n 9; then
	e2e_log "another tests/e2e/run.sh is running; waiting for it (up to 30 min)"
	flock -w 1800 9 || { e2e_log "gave up waiting"; exit 2; }
fi
rm -rf "$LOGS" && mkdir -p "$LOGS"
export PGOP_BIN=$build/cmd/pgop PGOP_BUILD_DIR=$build
# Everything the tests start inherits this; cluster-down.sh finds strays by it.
export PGOP_E2E_OWNER=$S
run_pgid=$(e2e_pgid_of $$)
strict=
[ "${CI:-}" = true ] || [ "${PGOP_TEST_STRICT:-}" = 1 ] && strict=1

passed=0 failed=0 skipped=0 failures=() skips=()
result() { # NAME STATUS SECONDS [SKIP REASON]
	local why=${4:-no reason given}
	if [ "$2" = 77 ] && [ -n "$strict" ]; then
		failed=$((failed + 1)); failures+=("$1 (skipped under CI/strict: $why)")
		printf 'FAIL  %-40s %4ds (skipped: %s; a skip is a failure under CI=true / PGOP_TEST_STRICT=1)\n' "$1" "$3" "$why"
		return
	fi
	case $2 in
	0) passed=$((passed + 1)); printf 'PASS  %-40s %4ds\n' "$1" "$3" ;;
	77) skipped=$((skipped + 1)); skips+=("$1: $why"); printf 'SKIP  %-40s %4ds (%s)\n' "$1" "$3" "$why" ;;
	99) failed=$((failed + 1)); failures+=("$1"); printf 'FAIL  %-40s %4ds (left processes behind)\n' "$1" "$3" ;;
	*) failed=$((failed + 1)); failures+=("$1"); printf 'FAIL  %-40s %4ds (status %s)\n' "$1" "$3" "$2" ;;
	esac
}

# Processes a test started (they inherit PGOP_E2E_OWNER) that outlived it, as "PID CMD"
# lines. The control-plane daemons and the node agent (pid files under STATE, with
# their process groups) and pod processes (another network namespace) are not strays.
strays() {
	local f pid pg hostnet
	declare -A infra=()
	for f in "$S"/pids/*.pid "$S"/agent/*.pid "$S"/agent/nodes/*/agent.pid; do
		[ -f "$f" ] && infra[$(cat "$f")]=1
	done
	hostnet=$(readlink /proc/$$/ns/net)
	while read -r f; do
		pid=${f#/proc/}
		pid=${pid%%/*}
		pg=$(e2e_pgid_of "$pid") || continue
		[ "$pg" = "$run_pgid" ] && continue
		[ -n "${infra[$pg]:-}" ] && continue
		e2e_is_zombie "$pid" && continue
		[ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$hostnet" ] || continue
		echo "$pid $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-150)"
	done < <(grep -lsxzF "PGOP_E2E_OWNER=$S" /proc/[0-9]*/environ 2>/dev/null)
}
kill_strays() { # "PID CMD" LINES
	local pids
	pids=$(awk '{print $1}' <<<"$1")
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null
	sleep 2
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
}

run_test() { # FILE
	local t=$1 name to t1 rc
	name=$(basename "$t" .sh)
	to=$(sed -n 's/^# e2e-timeout: *\([0-9][0-9]*\).*/\1/p' "$t" | head -n 1)
	to=${to:-${E2E_TEST_TIMEOUT:-600}}
	# a longer E2E_TEST_TIMEOUT wins over the test's own (bench/failover.sh's repeated runs)
	[ "${E2E_TEST_TIMEOUT:-0}" -gt "$to" ] && to=$E2E_TEST_TIMEOUT
	t1=$(date +%s)
	e2e_log "running $name (timeout ${to}s, log: $LOGS/$name.log)"
	if [ -n "${E2E_VERBOSE:-}" ]; then
		timeout -k 10 "$to" bash "$t" "$PGOP_BIN" "$S" 9>&- 2>&1 | tee "$LOGS/$name.log"
		rc=${PIPESTATUS[0]}
	else
		timeout -k 10 "$to" bash "$t" "$PGOP_BIN" "$S" 9>&- >"$LOGS/$name.log" 2>&1
		rc=$?
	fi
	[ "$rc" = 124 ] && echo "timed out after ${to}s" >>"$LOGS/$name.log"
	local left
	left=$(strays)
	if [ -n "$left" ]; then
		{
			echo "left processes running after it exited (now killed):"
			echo "$left"
		} >>"$LOGS/$name.log"
		kill_strays "$left"
		[ "$rc" = 0 ] && rc=99
	fi
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -z "${E2E_VERBOSE:-}" ]; then
		echo "----- $name: last 40 lines of $LOGS/$name.log -----"
		tail -n 40 "$LOGS/$name.log"
		echo "-----"
	fi
	local why=
	# the reason a skipped test gave (e2e_skip logs "SKIP: REASON")
	[ "$rc" = 77 ] && why=$(grep -ioE 'skip(ped)?: .*' "$LOGS/$name.log" | tail -n 1 | sed -E 's/^[a-zA-Z]+: //')
	result "$name" "$rc" $(($(date +%s) - t1)) "$why"
}

# Which tests, and which of them need the control plane.
all=()
if (($#)); then
	for n in "$@"; do
		case $n in
		*/*) all+=("$n") ;;
		*) all+=("$here/${n%.sh}.sh") ;;
		esac
	done
else
	for t in "$here"/test_*.sh; do [ -f "$t" ] && all+=("$t"); done
fi
plain=() cluster=()
for t in "${all[@]}"; do
	[ -f "$t" ] || { result "$(basename "$t" .sh)" 127 0; continue; }
	if grep -qE '^[^#]*\be2e_up\b' "$t"; then cluster+=("$t"); else plain+=("$t"); fi
done
e2e_log "${#all[@]} tests: ${#plain[@]} without and ${#cluster[@]} with the control plane; state $S, logs $LOGS"

ncleanups=0
cleanup() {
	local sfx=
	ncleanups=$((ncleanups + 1))
	((ncleanups == 1)) || sfx=.$ncleanups # a control plane that was restarted
	if [ -d "$S/logs" ]; then
		mkdir -p "$LOGS/controlplane$sfx" && cp -r "$S/logs/." "$LOGS/controlplane$sfx/"
	fi
	if [ -d "$S/agent" ]; then
		mkdir -p "$LOGS/agent$sfx" &&
			find "$S/agent" -maxdepth 2 -name '*.log' -exec cp {} "$LOGS/agent$sfx/" \; 2>/dev/null
		for f in "$S"/agent/nodes/*/agent.log; do # the other nodes' agents
			[ -f "$f" ] && cp "$f" "$LOGS/agent$sfx/agent-$(basename "$(dirname "$f")").log"
		done
	fi
	"$here/cluster-down.sh" "$S" 9>&-
}
trap 'e2e_log "interrupted"; cleanup; exit 130' INT TERM

# A previous run that was killed may have left a control plane behind.
if [ -e "$S" ]; then
	e2e_log "removing the leftovers of a previous run in $S"
	"$here/cluster-down.sh" "$S" 9>&- || e2e_log "warning: previous state not fully removed"
fi

# Prerequisites are build steps, before any test runs: pgop and the node agent in the
# build dir, then the upstream binaries (tests such as test_crd need them too).
t1=$(date +%s)
if [ -f "$build/build.ninja" ]; then
	e2e_log "building pgop and pgop-node-agent in $build (log: $LOGS/build.log)"
	if nice -n 10 ninja -C "$build" -j"${E2E_BUILD_JOBS:-2}" pgop pgop-node-agent pgop-slowloris pgop-writer pgop-s3 >"$LOGS/build.log" 2>&1; then
		result "build (pgop, pgop-node-agent)" 0 $(($(date +%s) - t1))
	else
		tail -n 40 "$LOGS/build.log"
		result "build (pgop, pgop-node-agent)" 1 $(($(date +%s) - t1))
	fi
else
	for b in "$PGOP_BIN" "$build/tests/e2e/agent/pgop-node-agent"; do
		[ -x "$b" ] || { e2e_log "$b is not built and $build is not a ninja build dir"; result "build ($(basename "$b"))" 1 0; }
	done
fi
t1=$(date +%s)
e2e_log "building the control-plane binaries if needed (tests/e2e/build-k8s.sh)"
k8s_ok=
if bin=$("$here/build-k8s.sh" 9>&-); then
	export PGOP_E2E_BIN=$bin
	k8s_ok=1
	result build-k8s 0 $(($(date +%s) - t1))
else
	result build-k8s 1 $(($(date +%s) - t1))
fi
t1=$(date +%s)
e2e_log "building the S3 object store if needed (tests/e2e/build-objstore.sh)"
if bin=$("$here/build-objstore.sh" 9>&-); then
	export PGOP_E2E_OBJSTORE_BIN=$bin
	result build-objstore 0 $(($(date +%s) - t1))
else
	result build-objstore 1 $(($(date +%s) - t1))
fi

for t in "${plain[@]}"; do run_test "$t"; done

if ((${#cluster[@]})); then
	if [ -z "$k8s_ok" ]; then
		for t in "${cluster[@]}"; do result "$(basename "$t" .sh)" 1 0; done
	else
		t1=$(date +%s)
		if "$here/cluster-up.sh" "$S" 9>&- 2>&1 | tee "$LOGS/cluster-up.log" >&2; then
			result cluster-up 0 $(($(date +%s) - t1))
			export PGOP_E2E_SHARED=1
			for t in "${cluster[@]}"; do
				run_test "$t"
				# A test that broke the shared control plane is named, and the next
				# tests get a fresh one.
				if ! e2e_ready; then
					result "control plane healthy after $(basename "$t" .sh)" 1 0
					cleanup >&2
					"$here/cluster-up.sh" "$S" 9>&- >>"$LOGS/cluster-up.log" 2>&1 ||
						e2e_log "could not bring the control plane back (log: $LOGS/cluster-up.log)"
				fi
			done
			unset PGOP_E2E_SHARED
		else
			result cluster-up 1 $(($(date +%s) - t1))
			for t in "${cluster[@]}"; do result "$(basename "$t" .sh)" 1 0; done
		fi
	fi
fi

# Always: take everything down and prove that nothing is left (also after plain tests).
t1=$(date +%s)
if cleanup 2>&1 | tee "$LOGS/cluster-down.log" >&2; then
	result "cluster-down (nothing left behind)" 0 $(($(date +%s) - t1))
else
	result "cluster-down (nothing left behind)" 1 $(($(date +%s) - t1))
fi

# Figures the tests printed as "METRIC name=value" lines.
metrics=$(grep -h '^METRIC ' "$LOGS"/*.log 2>/dev/null | sed 's/^METRIC /  /')
[ -z "$metrics" ] || printf 'metrics:\n%s\n' "$metrics"
for f in "${failures[@]+"${failures[@]}"}"; do echo "  failed: $f"; done
for f in "${skips[@]+"${skips[@]}"}"; do echo "  skipped: $f"; done
summary="$passed passed, $failed failed, $skipped skipped"
echo "$summary (e2e, $(($(date +%s) - E2E_T0))s; logs in $LOGS)"
[ "$failed" -eq 0 ]
