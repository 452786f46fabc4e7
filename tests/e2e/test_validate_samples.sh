#!/usr/bin/env bash
# e2e-timeout: 120
# `pgop validate` on every sample manifest of samples/ (plus the CloudNativePG
# corpus, dc/ included, when PGOP_SHARED_DIR names a directory holding
# samples/cnpg): every Cluster, Backup, ScheduledBackup and ObjectStore must be
# admitted (exit 0), the other kinds listed as skipped. Also checks the JSON output
# agrees, that every samples/invalid/ document is denied with exit 1 naming the field
# of its "# pgop-denied:" line, that a known-bad Cluster is denied with exit 1 naming
# the field, and that a Backup's spec may not change (--old: UPDATE).
#
# Usage: tests/e2e/test_validate_samples.sh [PGOP_BINARY]   (default $PGOP_BIN)
# Builds nothing. Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

PGOP=${1:-${PGOP_BIN:-}}
if [ -z "$PGOP" ] || [ ! -x "$PGOP" ]; then
	echo "usage: $0 PATH/TO/pgop (not executable: '${PGOP}')" >&2
	exit 2
fi
top=$(cd "$(dirname "$0")/../.." && pwd)
samples=$top/samples
[ -d "$samples" ] || { echo "no samples at $samples" >&2; exit 1; }

tmp=$(mktemp -d /tmp/pgop-validate-e2e.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; }

files=("$samples"/*.yaml)
if [ -n "${PGOP_SHARED_DIR:-}" ]; then # the optional CloudNativePG corpus
	[ -d "$PGOP_SHARED_DIR/samples/cnpg" ] ||
		{ echo "PGOP_SHARED_DIR=$PGOP_SHARED_DIR has no samples/cnpg" >&2; exit 1; }
	files+=("$PGOP_SHARED_DIR"/samples/cnpg/*.yaml "$PGOP_SHARED_DIR"/samples/cnpg/dc/*.yaml)
fi
"$PGOP" validate -f "${files[@]}" >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
if [ "$rc" -eq 0 ]; then
	pass "pgop validate admits every sample Cluster (${#files[@]} files)"
else
	fail "pgop validate admits every sample Cluster (exit $rc)"
	grep -v ': admitted$\|: skipped\|: warning: ' "$tmp/out.txt" | head -40
	head -20 "$tmp/err.txt"
fi
clusters=$(cat "${files[@]}" | grep -Ec '^kind: (Cluster|Backup|ScheduledBackup|ObjectStore)$')
admitted=$(grep -c ': admitted$' "$tmp/out.txt")
[ "$admitted" -eq "$clusters" ] && pass "one 'admitted' line per admitted kind ($admitted)" ||
	fail "one 'admitted' line per admitted kind: $admitted admitted, $clusters in the files"
[ "$(cat "$samples"/*.yaml | grep -Ec '^kind: (Backup|ScheduledBackup|ObjectStore)$')" -ge 3 ] &&
	pass "samples hold a Backup, a ScheduledBackup and an ObjectStore" ||
	fail "samples hold a Backup, a ScheduledBackup and an ObjectStore"
others=$(cat "${files[@]}" | grep -c '^kind: ')
skipped=$(grep -c ': skipped (' "$tmp/out.txt")
[ "$skipped" -eq $((others - clusters)) ] && pass "other kinds listed as skipped ($skipped)" ||
	fail "other kinds listed as skipped: $skipped, expected $((others - clusters))"

"$PGOP" validate -o json -f "${files[@]}" >"$tmp/out.json" 2>/dev/null
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^  "admitted": true,' "$tmp/out.json" &&
	grep -q "\"admitted\": $clusters," "$tmp/out.json"; then
	pass "-o json agrees (admitted: true, $clusters Clusters)"
else
	fail "-o json agrees (exit $rc)"
	head -20 "$tmp/out.json"
fi

ninvalid=0
for f in "$samples"/invalid/*.yaml; do
	ninvalid=$((ninvalid + 1))
	field=$(sed -n 's/^# pgop-denied: //p' "$f")
	name=$(sed -n 's/^  name: //p' "$f" | head -1)
	out=$("$PGOP" validate -f "$f" 2>/dev/null)
	rc=$?
	if [ -n "$field" ] && [ "$rc" -eq 1 ] &&
		grep -qF "$(basename "$f"): default/$name: $field: " <<<"$out"; then
		pass "invalid/$(basename "$f") denied on $field"
	else
		fail "invalid/$(basename "$f") denied on '$field' (exit $rc: $out)"
	fi
done
[ "$ninvalid" -ge 10 ] && pass "$ninvalid invalid samples" || fail "only $ninvalid invalid samples"

cat >"$tmp/bad.yaml" <<'YAML'
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: too-many-sync
spec:
  instances: 3
  maxSyncReplicas: 3
  storage:
    size: 1Gi
YAML
out=$("$PGOP" validate -f "$tmp/bad.yaml" 2>/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && grep -q "bad.yaml: default/too-many-sync: spec.maxSyncReplicas: " <<<"$out"; then
	pass "a denied Cluster exits 1 and names spec.maxSyncReplicas"
else
	fail "a denied Cluster exits 1 and names spec.maxSyncReplicas (exit $rc: $out)"
fi
# UPDATE: the stored object (--old) had 10Gi; shrinking the volume is refused.
cat >"$tmp/new.yaml" <<'YAML'
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: grow
spec:
  instances: 3
  storage:
    size: 1Gi
YAML
sed 's/size: 1Gi/size: 10Gi/' "$tmp/new.yaml" >"$tmp/old.yaml"
"$PGOP" validate -f "$tmp/new.yaml" >/dev/null 2>&1
rc_create=$?
out=$("$PGOP" validate -f "$tmp/new.yaml" --old "$tmp/old.yaml" -o json 2>/dev/null)
rc=$?
if [ "$rc_create" -eq 0 ] && [ "$rc" -eq 1 ] && grep -q '"operation": "UPDATE"' <<<"$out" &&
	grep -q '"field": "spec.storage' <<<"$out"; then
	pass "--old makes it an UPDATE: shrinking storage is denied (CREATE alone admitted)"
else
	fail "--old makes it an UPDATE (create exit $rc_create, update exit $rc: $out)"
fi
# UPDATE of a Backup: its spec is immutable (B6); the CREATE alone is admitted.
cat >"$tmp/b-old.yaml" <<'YAML'
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata:
  name: b1
spec:
  cluster:
    name: pg
YAML
sed 's/name: pg/name: other/' "$tmp/b-old.yaml" >"$tmp/b-new.yaml"
out=$("$PGOP" validate -f "$tmp/b-new.yaml" --old "$tmp/b-old.yaml" 2>/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && grep -q "b-new.yaml: default/b1: spec: Forbidden: BackupSpec is immutable once set" <<<"$out"; then
	pass "a Backup's spec is immutable (--old)"
else
	fail "a Backup's spec is immutable (exit $rc: $out)"
fi
printf 'kind: [unterminated\n' >"$tmp/broken.yaml"
"$PGOP" validate -f "$tmp/broken.yaml" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] && pass "unparsable input exits 2" || fail "unparsable input exits 2 (got $rc)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
