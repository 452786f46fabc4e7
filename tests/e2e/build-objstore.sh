#!/usr/bin/env bash
# Build (once per machine) the S3-compatible object store the e2e tests run
# against: versitygw (github.com/versity/versitygw), a single static Go binary
# with a posix (plain directory) backend. Cached outside the repository, in
# $PGOP_CACHE (default ~/.cache/pgop), keyed by version, like build-k8s.sh.
#
# Usage: tests/e2e/build-objstore.sh       prints the bin directory on stdout
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
cache=${PGOP_CACHE:-$HOME/.cache/pgop}
bin="$cache/bin-versitygw-$VERSITYGW_VERSION"
mkdir -p "$bin" "$cache/logs"
log="$cache/logs/build-objstore.log"

step() { printf '[build-objstore %4ds] %s (log: %s)\n' "$SECONDS" "$*" "$log" >&2; }
fail() { printf '[build-objstore] FAILED: %s\n' "$*" >&2; tail -n 30 "$log" >&2; exit 1; }

if [ -x "$bin/versitygw" ]; then # warm cache: no Go needed, no lock
	echo "$bin"
	exit 0
fi
# One build at a time per cache (several engineers or runners may start one).
exec 9>"$cache/build-objstore.lock"
if ! flock -n 9; then
	step "waiting for another build-objstore.sh to finish"
	flock 9
fi
if [ -x "$bin/versitygw" ]; then
	step "done (built by another run)"
	echo "$bin"
	exit 0
fi

[ -x /usr/local/go/bin/go ] && ! command -v go >/dev/null && export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || fail "go is required to build versitygw"
export CGO_ENABLED=0

step "building versitygw $VERSITYGW_VERSION"
tmp=$(mktemp -d "$cache/versitygw-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install -trimpath -ldflags "-s -w" \
	"github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >>"$log" 2>&1 ||
	fail "go install versitygw"
mv "$tmp/versitygw" "$bin/versitygw"
step "done"
echo "$bin"
