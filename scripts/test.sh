#!/usr/bin/env bash
# Run every pgop test: unit tests under ASan+UBSan (ctest), the fuzz targets
# briefly, then the end-to-end suite against a real local control plane.
# Installs what it needs (Debian packages; the upstream Kubernetes binaries are
# built once per machine into ~/.cache/pgop). This is the README's test command
# and what .ci/run calls.
#
#   scripts/test.sh            everything
#   scripts/test.sh unit       unit tests only (ASan+UBSan)
#   scripts/test.sh release    the Release build of every target (warnings as errors)
#   scripts/test.sh fuzz       fuzz targets only
#   scripts/test.sh e2e        end-to-end only
#
# A skipped test is not a pass: under `all` or CI=true a cmocka test that reports SKIPPED
# or an e2e test that exits 77 fails its stage, with the reason (PGOP_TEST_STRICT=1 is
# exported to tests/e2e/run.sh).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
what=${1:-all}
strict=
if [ "$what" = all ] || [ "${CI:-}" = true ]; then strict=1; export PGOP_TEST_STRICT=1; fi
jobs=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
[ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin

t0=$SECONDS
passed=0 failed=0 failures=()
stage() { printf '\n=== [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }
ok() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
ko() { failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"; }

stage "installing dependencies (scripts/setup-deps.sh)"
scripts/setup-deps.sh || { echo "dependency installation failed"; exit 2; }

run_unit() {
	stage "unit tests under ASan+UBSan (build-asan/)"
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPGOP_SANITIZE=ON >/dev/null &&
		ninja -C build-asan -j"$jobs" >build-asan.log 2>&1 ||
		{ tail -n 40 build-asan.log; ko "build (asan)"; return; }
	ok "build (asan, warnings as errors)"
	if (cd build-asan && ctest --output-on-failure -j"$jobs"); then
		ok "ctest (asan+ubsan)"
	else
		ko "ctest (asan+ubsan)"
	fi
	# ctest counts a cmocka skip() as passed; LastTest.log holds every test's output.
	local skipped
	skipped=$(grep -hE '^\[ +SKIPPED +\] ' build-asan/Testing/Temporary/LastTest*.log 2>/dev/null |
		sed -E 's/^\[ +SKIPPED +\] +//' | grep -v 'test(s), listed below' | sort -u)
	if [ -n "$skipped" ]; then
		echo "cmocka tests that skipped:"
		sed 's/^/  /' <<<"$skipped"
		if [ -n "$strict" ]; then
			ko "unit tests skipped under all/CI: $(paste -sd' ' <<<"$skipped")"
		else
			echo "(not a failure outside CI=true / scripts/test.sh all)"
		fi
	fi
}

# A packager builds Release (-O3 inlines more, so GCC's flow-sensitive warnings such
# as -Wformat-truncation see more): every target, warnings as errors, nothing run.
run_release() {
	stage "release build, every target, warnings as errors (build-release/)"
	cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
		ninja -C build-release -j"$jobs" >build-release.log 2>&1 ||
		{ tail -n 40 build-release.log; ko "build (Release)"; return; }
	ok "build (Release, warnings as errors)"
}

run_fuzz() {
	stage "fuzz targets, ${FUZZ_SECONDS}s each (build-fuzz/)"
	command -v clang >/dev/null || { ko "fuzz: clang missing"; return; }
	CC=clang cmake -S . -B build-fuzz -G Ninja -DPGOP_FUZZ=ON -DPGOP_TESTS=OFF \
		-DCMAKE_C_COMPILER=clang >/dev/null &&
		ninja -C build-fuzz -j"$jobs" >build-fuzz.log 2>&1 ||
		{ tail -n 40 build-fuzz.log; ko "build (fuzz)"; return; }
	local n=0
	for f in build-fuzz/tests/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		n=$((n + 1))
		name=$(basename "$f")
		corpus=tests/fuzz/corpus/${name#fuzz_}
		work=$(mktemp -d)
		[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
		if "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 \
			"$work" >"build-fuzz/$name.log" 2>&1; then
			ok "$name (${FUZZ_SECONDS}s, $(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "build-fuzz/$name.log" | tail -1) runs)"
		else
			tail -n 30 "build-fuzz/$name.log"; ko "$name"
		fi
		rm -rf "$work"
	done
	[ "$n" -gt 0 ] || ko "fuzz: no fuzz targets built"
}

run_e2e() {
	stage "end-to-end tests (tests/e2e/run.sh)"
	cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		ninja -C build -j"$jobs" >build.log 2>&1 ||
		{ tail -n 40 build.log; ko "build (RelWithDebInfo, e2e)"; return; }
	if tests/e2e/run.sh "$top/build"; then
		ok "e2e suite"
	else
		ko "e2e suite"
	fi
}

# The tree must not lean on files beside it: no path into a sibling "shared" checkout
# (the optional CloudNativePG corpus is only read through $PGOP_SHARED_DIR, never by a
# path written in the tree). The patterns are bracketed so this check does not match itself.
check_self_contained() {
	stage "self-contained: no reference to a sibling shared/ directory"
	local re='[.][.][/]shared|[/]shared[/]' hits
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		hits=$(git -C "$top" grep -nIE "$re" -- . 2>/dev/null)
	else
		hits=$(grep -rnIE --exclude-dir='build*' --exclude-dir=.git "$re" "$top" 2>/dev/null)
	fi
	if [ -n "$hits" ]; then
		printf '%s\n' "$hits"
		ko "self-contained (references to a sibling shared directory above)"
	else
		ok "self-contained (no reference to a sibling shared directory)"
	fi
	# every admission rule ID the code, tests and docs cite has its entry (a bold
	# "**ID" list head) in docs/admission-rules.md
	local id missing=()
	for id in $(git -C "$top" grep -ohE '\b([DVUWP][0-9]{1,2}[a-l]?|CEL-SA|WU)\b' -- \
		webhooks tests/unit cmd api docs samples ':!docs/admission-rules.md' | sort -u); do
		grep -qE "\*\*([A-Z0-9a-z-]+, )*$id\b" "$top/docs/admission-rules.md" || missing+=("$id")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		ok "every cited admission rule ID is in docs/admission-rules.md"
	else
		ko "admission rule IDs without an entry in docs/admission-rules.md: ${missing[*]}"
	fi
}
check_self_contained

# The upstream binaries the e2e suite runs (Kubernetes, versitygw, Prometheus, barman-cloud)
# take ~20 minutes to build on a cold 2-core machine: started here, in the background, they
# build while the unit, release and fuzz stages run; each build script holds its own lock,
# so run.sh and the tests wait for a build in progress instead of starting another, and a
# warm cache makes all of this a no-op.
prefetch_upstream() {
	local log=${PGOP_CACHE:-$HOME/.cache/pgop}/logs/prefetch.log b
	mkdir -p "$(dirname "$log")"
	echo "upstream binaries building in the background (log: $log)"
	(for b in k8s objstore prometheus barman; do
		echo "== build-$b.sh"
		tests/e2e/build-$b.sh || echo "build-$b.sh failed: the e2e stage retries it"
	done) </dev/null >"$log" 2>&1 &
}

case $what in
all) prefetch_upstream; run_unit; run_release; run_fuzz; run_e2e ;;
unit) run_unit ;;
release) run_release ;;
fuzz) run_fuzz ;;
e2e) run_e2e ;;
*) echo "usage: $0 [all|unit|release|fuzz|e2e]"; exit 2 ;;
esac

stage "summary"
for f in "${failures[@]+"${failures[@]}"}"; do echo "  failed: $f"; done
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
