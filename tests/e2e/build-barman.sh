#!/usr/bin/env bash
# Install (once per machine) barman-cloud, the client CloudNativePG-compatible
# backups are written and read with, into a virtualenv cached outside the
# repository, in $PGOP_CACHE (default ~/.cache/pgop), keyed by version.
# The e2e compatibility tests use it to list/restore what pgop wrote.
#
# Usage: tests/e2e/build-barman.sh         prints the venv's bin directory
set -euo pipefail

BARMAN_VERSION=3.19.1
cache=${PGOP_CACHE:-$HOME/.cache/pgop}
venv="$cache/barman-$BARMAN_VERSION"
mkdir -p "$cache/logs"
log="$cache/logs/build-barman.log"

step() { printf '[build-barman %4ds] %s (log: %s)\n' "$SECONDS" "$*" "$log" >&2; }
fail() { printf '[build-barman] FAILED: %s\n' "$*" >&2; tail -n 30 "$log" >&2; exit 1; }

installed() { [ -f "$venv/.pgop-installed" ] && [ -x "$venv/bin/barman-cloud-backup-list" ]; }
if installed; then
	echo "$venv/bin"
	exit 0
fi
exec 9>"$cache/build-barman.lock"
if ! flock -n 9; then
	step "waiting for another build-barman.sh to finish"
	flock 9
fi
if installed; then
	echo "$venv/bin"
	exit 0
fi

command -v python3 >/dev/null || fail "python3 is required"
step "creating venv $venv"
rm -rf "$venv"
python3 -m venv "$venv" >>"$log" 2>&1 || fail "python3 -m venv (is python3-venv installed?)"
step "installing barman[cloud,snappy,zstandard,lz4]==$BARMAN_VERSION"
"$venv/bin/pip" install --disable-pip-version-check -q \
	"barman[cloud,snappy,zstandard,lz4]==$BARMAN_VERSION" >>"$log" 2>&1 || fail "pip install barman"
"$venv/bin/barman-cloud-backup-list" --help >>"$log" 2>&1 || fail "barman-cloud-backup-list --help"
touch "$venv/.pgop-installed"
step "done"
echo "$venv/bin"
