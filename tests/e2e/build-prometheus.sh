#!/usr/bin/env bash
# Build (once per machine) the Prometheus server and promtool the metrics
# tests run: a real Prometheus scrapes pgop's /metrics (e2e), promtool checks
# the exposition format and the chart's alert rules. Cached outside the
# repository, in $PGOP_CACHE (default ~/.cache/pgop), keyed by version, like
# build-objstore.sh. The web UI's assets are not embedded (not needed: the
# tests use the HTTP API).
#
# Usage: tests/e2e/build-prometheus.sh       prints the bin directory on stdout
set -euo pipefail

PROMETHEUS_VERSION=v0.316.0 # Go module version of Prometheus 3.x
cache=${PGOP_CACHE:-$HOME/.cache/pgop}
bin="$cache/bin-prometheus-$PROMETHEUS_VERSION"
mkdir -p "$bin" "$cache/logs"
log="$cache/logs/build-prometheus.log"

step() { printf '[build-prometheus %4ds] %s (log: %s)\n' "$SECONDS" "$*" "$log" >&2; }
fail() { printf '[build-prometheus] FAILED: %s\n' "$*" >&2; tail -n 30 "$log" >&2; exit 1; }

if [ -x "$bin/prometheus" ] && [ -x "$bin/promtool" ]; then # warm cache
	echo "$bin"
	exit 0
fi
exec 9>"$cache/build-prometheus.lock"
if ! flock -n 9; then
	step "waiting for another build-prometheus.sh to finish"
	flock 9
fi
if [ -x "$bin/prometheus" ] && [ -x "$bin/promtool" ]; then
	step "done (built by another run)"
	echo "$bin"
	exit 0
fi

[ -x /usr/local/go/bin/go ] && ! command -v go >/dev/null && export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || fail "go is required to build prometheus"
export CGO_ENABLED=0
# Two cores are shared: one package compiled at a time.
export GOFLAGS="${GOFLAGS:-} -p=1"

tmp=$(mktemp -d "$cache/prometheus-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for cmd in promtool prometheus; do
	[ -x "$bin/$cmd" ] && continue
	step "building $cmd $PROMETHEUS_VERSION"
	GOBIN="$tmp" nice go install -trimpath -ldflags "-s -w" \
		"github.com/prometheus/prometheus/cmd/$cmd@$PROMETHEUS_VERSION" >>"$log" 2>&1 ||
		fail "go install $cmd"
	mv "$tmp/$cmd" "$bin/$cmd"
done
step "done"
echo "$bin"
