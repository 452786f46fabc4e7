#!/usr/bin/env bash
# e2e-timeout: 300
# The generated CRDs (crd/*.yaml: Cluster, Backup, ScheduledBackup, ObjectStore)
# against a REAL kube-apiserver: they are accepted and Established, `kubectl explain`
# reads our descriptions, the schema defaults apply, the CEL rules reject what they
# must, the status and scale subresources and printer columns work (`kubectl get
# backups` shows CloudNativePG's columns), and every Cluster, Backup, ScheduledBackup
# and ObjectStore of pgop's samples/ (plus the CloudNativePG corpus when
# PGOP_SHARED_DIR is set) passes a server-side dry run with strict field validation.
#
# Self-contained: its own etcd and kube-apiserver on loopback (token auth,
# AlwaysAllow) in a temp dir, killed on exit; it does not use the shared control
# plane. It never builds anything: when etcd / kube-apiserver / kubectl are not
# built yet (tests/e2e/build-k8s.sh) it skips with a message - exit 0 standalone,
# 77 (the runner's "skipped") under tests/e2e/run.sh.
#
# Environment: PGOP_E2E_BIN (binaries dir), PGOP_CRD_ETCD_PORT (23790),
# PGOP_CRD_ETCD_PEER_PORT (23791), PGOP_CRD_APISERVER_PORT (26543),
# PGOP_SHARED_DIR (optional: a directory holding samples/cnpg, checked too).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

CRD=$top/crd/postgresql.cnpg.io_clusters.yaml
CRDS=("$top"/crd/*.yaml)
SAMPLES=$top/samples
SHARED_SAMPLES=${PGOP_SHARED_DIR:+$PGOP_SHARED_DIR/samples/cnpg}
ETCD_PORT=${PGOP_CRD_ETCD_PORT:-23790}
ETCD_PEER_PORT=${PGOP_CRD_ETCD_PEER_PORT:-23791}
API_PORT=${PGOP_CRD_APISERVER_PORT:-26543}
# CloudNativePG corpus samples its own CRD rejects too: tablespaces written as a map.
KNOWN_BAD="cluster-restore-with-tablespaces.yaml"

skip() {
	e2e_log "SKIP: $*"
	if [ -n "${PGOP_E2E_OWNER:-}" ]; then exit 77; fi
	exit 0
}

bin=
for d in "${PGOP_E2E_BIN:-}" "${PGOP_CACHE:-$HOME/.cache/pgop}"/bin-k8s-*; do
	if [ -n "$d" ] && [ -x "$d/kube-apiserver" ] && [ -x "$d/etcd" ] && [ -x "$d/kubectl" ]; then
		bin=$d
		break
	fi
done
[ -n "$bin" ] || skip "etcd, kube-apiserver and kubectl are not built (run tests/e2e/build-k8s.sh)"
[ -f "$CRD" ] || e2e_fail "$CRD is missing (ninja gen-crd)"
[ ${#CRDS[@]} -eq 4 ] || e2e_fail "expected 4 CRDs in crd/, found ${#CRDS[@]}"
# `pgop crd` prints exactly the committed files (when the binary is built)
if [ -x "${PGOP_BIN:-}" ]; then
	"$PGOP_BIN" crd --kind Cluster | cmp -s - "$CRD" || e2e_fail "pgop crd differs from $CRD: run ninja gen-crd"
	"$PGOP_BIN" crd --kind Backup | cmp -s - "$top/crd/postgresql.cnpg.io_backups.yaml" ||
		e2e_fail "pgop crd --kind Backup differs from crd/: run ninja gen-crd"
	{ "$PGOP_BIN" crd --kind Cluster -o json | jq -e '.spec.names.kind == "Cluster"' >/dev/null ||
		e2e_fail "pgop crd --kind Cluster -o json"; }
	{ "$PGOP_BIN" crd -o json | jq -e '.kind == "List" and (.items | length) == 4' >/dev/null ||
		e2e_fail "pgop crd -o json: a List of the 4 CRDs"; }
	[ "$("$PGOP_BIN" crd | grep -c '^kind: CustomResourceDefinition')" -eq 4 ] ||
		e2e_fail "pgop crd: 4 CRDs"
	e2e_log "pgop crd matches crd/"
fi
for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$API_PORT"; do
	if ss -Hltn "sport = :$p" | grep -q .; then e2e_fail "port $p is in use"; fi
done

tmp=$(mktemp -d /tmp/pgop-crd-e2e.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ "${KEEP_TMP:-}" = 1 ]; then e2e_log "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

e2e_log "binaries: $bin; temp dir: $tmp"
mkdir -p "$tmp/etcd" "$tmp/certs"
etcd_url=http://127.0.0.1:$ETCD_PORT
"$bin/etcd" --name pgop-crd --data-dir "$tmp/etcd" \
	--listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "pgop-crd=http://127.0.0.1:$ETCD_PEER_PORT" \
	--unsafe-no-fsync --log-level warn >"$tmp/etcd.log" 2>&1 &
pids+=($!)
e2e_wait_for "curl -sf --max-time 2 $etcd_url/health | grep -q '\"health\":\"true\"'" 30 ||
	{ tail -20 "$tmp/etcd.log" >&2; e2e_fail "etcd did not start"; }

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,pgop-crd-admin,pgop-crd-admin,\"system:masters\"" >"$tmp/tokens.csv"
openssl genrsa -out "$tmp/sa.key" 2048 2>/dev/null || e2e_fail "openssl genrsa"
openssl rsa -in "$tmp/sa.key" -pubout -out "$tmp/sa.pub" 2>/dev/null || e2e_fail "openssl rsa"
"$bin/kube-apiserver" --etcd-servers="$etcd_url" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
	--cert-dir="$tmp/certs" --token-auth-file="$tmp/tokens.csv" \
	--authorization-mode=AlwaysAllow \
	--service-cluster-ip-range=10.214.0.0/24 --endpoint-reconciler-type=none \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-account-key-file="$tmp/sa.pub" \
	--service-account-signing-key-file="$tmp/sa.key" \
	--profiling=false >"$tmp/apiserver.log" 2>&1 &
pids+=($!)

cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: crd
  cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: crd
  context: {cluster: crd, user: admin}
current-context: crd
EOF
export KUBECONFIG=$tmp/kubeconfig
k() { "$bin/kubectl" "$@"; }
e2e_wait_for "k get --raw /readyz" 90 ||
	{ tail -30 "$tmp/apiserver.log" >&2; e2e_fail "kube-apiserver did not become ready"; }
e2e_log "kube-apiserver $(k version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1) ready on 127.0.0.1:$API_PORT"

# 1. the CRDs are accepted (structural, CEL compiles within cost limits) and Established
for f in "${CRDS[@]}"; do
	out=$(k apply -f "$f" 2>&1) || e2e_fail "CRD $(basename "$f") rejected: $out"
	e2e_log "applied: $out"
done
for c in backups.postgresql.cnpg.io scheduledbackups.postgresql.cnpg.io objectstores.barmancloud.cnpg.io; do
	e2e_wait_for "k get crd $c -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}' | grep -qx True" 60 ||
		e2e_fail "CRD $c not Established: $(k get crd "$c" -o jsonpath='{.status.conditions}')"
done
# (not `kubectl wait`: right after the create it can read a status without conditions
# and fail with "accessor error: <nil>" instead of waiting)
e2e_wait_for "k get crd clusters.postgresql.cnpg.io -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}' | grep -qx True" 60 ||
	e2e_fail "CRD not Established: $(k get crd clusters.postgresql.cnpg.io -o jsonpath='{.status.conditions}')"
e2e_assert_eq True "$(k get crd clusters.postgresql.cnpg.io \
	-o jsonpath='{.status.conditions[?(@.type=="NamesAccepted")].status}')" "NamesAccepted"
e2e_log "CRD Established"

# 2. kubectl explain uses the published OpenAPI (takes a moment after Established)
e2e_wait_for "k explain cluster.spec.instances" 60 1 || e2e_fail "kubectl explain failed"
out=$(k explain cluster.spec.instances)
e2e_assert_contains "$out" "Number of instances" "explain cluster.spec.instances"
out=$(k explain cluster.spec.bootstrap.initdb.walSegmentSize)
e2e_assert_contains "$out" "power of 2" "explain walSegmentSize"
out=$(k explain cluster.status.targetPrimary)
e2e_assert_contains "$out" "switchover" "explain status.targetPrimary"
e2e_log "kubectl explain OK"

k create namespace crd-e2e >/dev/null || e2e_fail "create namespace"
N=crd-e2e

# dry-run FILE: server-side dry run with strict field validation
dry() { k apply -n "$N" --dry-run=server --validate=strict -f "$1" 2>&1; }
cluster() { # NAME SPEC-YAML (indented by 2) -> file path
	local f=$tmp/$1.yaml
	printf 'apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: %s\nspec:\n%s\n' \
		"$1" "$2" >"$f"
	echo "$f"
}
rejects() { # NAME SPEC MESSAGE-PART
	local out
	if out=$(dry "$(cluster "$1" "$2")"); then e2e_fail "$1: accepted, expected rejection"; fi
	e2e_assert_contains "$out" "$3" "$1 rejection message"
	e2e_log "rejected as expected: $1 -> $(grep -o "$3[^\"]*" <<<"$out" | head -1)"
}

# 3. CEL and OpenAPI rules
rejects max-sync-eq-instances "  instances: 3
  maxSyncReplicas: 3
  storage: {size: 1Gi}" "maxSyncReplicas must be lower than the number of instances"
rejects min-gt-max "  instances: 3
  minSyncReplicas: 2
  maxSyncReplicas: 1
  storage: {size: 1Gi}" "minSyncReplicas cannot be greater than maxSyncReplicas"
rejects two-bootstraps "  instances: 1
  storage: {size: 1Gi}
  bootstrap:
    initdb: {database: app, owner: app}
    pg_basebackup: {source: other}" "Only one bootstrap method can be specified at a time"
rejects image-and-catalog "  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:17.5
  imageCatalogRef: {apiGroup: postgresql.cnpg.io, kind: ImageCatalog, name: c, major: 17}
  storage: {size: 1Gi}" "imageName and imageCatalogRef are mutually exclusive"
rejects catalog-kind "  instances: 1
  imageCatalogRef: {apiGroup: postgresql.cnpg.io, kind: ConfigMap, name: c, major: 17}
  storage: {size: 1Gi}" "Only image catalogs are supported"
rejects sync-number-zero "  instances: 3
  storage: {size: 1Gi}
  postgresql:
    synchronous: {method: any, number: 0}" "The number of synchronous replicas should be greater than zero"
rejects durability-preferred "  instances: 3
  storage: {size: 1Gi}
  postgresql:
    synchronous: {method: any, number: 1, dataDurability: preferred, standbyNamesPre: [x]}" \
	"dataDurability set to 'preferred' requires empty"
rejects icu-without-provider "  instances: 1
  storage: {size: 1Gi}
  bootstrap:
    initdb: {icuLocale: en}" "icuLocale is only available when localeProvider is set to"
rejects zero-instances "  instances: 0
  storage: {size: 1Gi}" "should be greater than or equal to 1"
rejects bad-enum "  instances: 1
  primaryUpdateStrategy: sometimes
  storage: {size: 1Gi}" "Unsupported value"
rejects bad-slot-prefix "  instances: 1
  storage: {size: 1Gi}
  replicationSlots:
    highAvailability: {slotPrefix: Bad-Prefix}" "should match"
rejects unknown-field "  instances: 1
  storage: {size: 1Gi}
  notAField: true" "unknown field"

# 4. schema defaults (§6) are applied by the API server
f=$(cluster defaults "  storage: {size: 1Gi}")
out=$(k apply -n "$N" --dry-run=server -o json -f "$f" 2>&1) || e2e_fail "defaults: $out"
for want in '"instances": 1' '"postgresUID": 26' '"postgresGID": 26' '"slotPrefix": "_cnpg_"' \
	'"updateInterval": 30' '"primaryUpdateStrategy": "unsupervised"' \
	'"primaryUpdateMethod": "restart"' '"logLevel": "info"' '"enablePDB": true' \
	'"startDelay": 3600' '"stopDelay": 1800' '"smartShutdownTimeout": 180' \
	'"switchoverDelay": 3600' '"failoverDelay": 0' '"resizeInUseVolumes": true' \
	'"enableSuperuserAccess": false' '"maxSyncReplicas": 0'; do
	e2e_assert_contains "$out" "$want" "schema default"
done
e2e_log "schema defaults applied"

# 5. subresources, printer columns, immutability on a real object
f=$(cluster real "  instances: 1
  serviceAccountName: sa-one
  storage: {size: 1Gi}")
k apply -n "$N" -f "$f" >/dev/null || e2e_fail "create cluster real"
k scale -n "$N" cluster/real --replicas=3 >/dev/null || e2e_fail "scale subresource"
e2e_assert_eq 3 "$(k get -n "$N" cluster real -o jsonpath='{.spec.instances}')" "scaled instances"
hdr=$(k get -n "$N" clusters -o wide | head -1)
e2e_assert_match "$hdr" "^NAME +AGE +INSTANCES +READY +STATUS +PRIMARY +SYNC +MAX LAG +SYNCTOPOLOGY" "printer columns"
k patch -n "$N" cluster real --subresource=status --type=merge \
	-p '{"status":{"instances":3,"readyInstances":2,"phase":"Cluster in healthy state","currentPrimary":"real-1",
	  "conditions":[{"type":"SyncReplicationTopologySatisfied","status":"True","reason":"Satisfied",
	  "message":"","lastTransitionTime":"2026-12-02T10:00:00Z"}]}}' \
	>/dev/null || e2e_fail "status subresource patch"
row=$(k get -n "$N" cluster real -o wide --no-headers)
e2e_assert_match "$row" "^real +[0-9a-z]+ +3 +2 +Cluster in healthy state +real-1 +True *$" "printed row"
if out=$(k patch -n "$N" cluster real --subresource=status --type=merge \
	-p '{"status":{"conditions":[{"type":"Ready","status":"Maybe","reason":"x","message":"","lastTransitionTime":"2026-12-02T10:00:00Z"}]}}' 2>&1); then
	e2e_fail "condition with status Maybe accepted"
fi
e2e_assert_contains "$out" "Unsupported value" "condition status enum"
if out=$(k patch -n "$N" cluster real --type=merge -p '{"spec":{"serviceAccountName":"sa-two"}}' 2>&1); then
	e2e_fail "serviceAccountName changed"
fi
e2e_assert_contains "$out" "serviceAccountName is immutable" "immutability message"
e2e_assert_eq "backups clusters scheduledbackups" \
	"$(k api-resources --categories=cnpg -o name | sed 's/\..*//' | sort | tr '\n' ' ' | sed 's/ $//')" "category cnpg"
e2e_log "scale, status, printer columns, immutability, category OK"

# 5b. Backup, ScheduledBackup, ObjectStore: printer columns, status subresource, schema
# defaults, enums and patterns, Backup spec immutability (CloudNativePG's CEL rule)
cat >"$tmp/backup.yaml" <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: b1}
spec: {cluster: {name: real}}
EOF
k apply -n "$N" -f "$tmp/backup.yaml" >/dev/null || e2e_fail "create backup b1"
e2e_assert_eq barmanObjectStore "$(k get -n "$N" backup b1 -o jsonpath='{.spec.method}')" "Backup method default"
k patch -n "$N" backup b1 --subresource=status --type=merge \
	-p '{"status":{"phase":"failed","error":"volumeSnapshot is not supported","backupId":"20261207T051230","startedAt":"2026-12-07T05:12:30Z","instanceID":{"podName":"real-1"}}}' \
	>/dev/null || e2e_fail "backup status subresource patch"
hdr=$(k get -n "$N" backups | head -1)
e2e_assert_match "$hdr" "^NAME +AGE +CLUSTER +METHOD +PHASE +ERROR *$" "backup printer columns"
row=$(k get -n "$N" backups --no-headers)
e2e_assert_match "$row" "^b1 +[0-9a-z]+ +real +barmanObjectStore +failed +volumeSnapshot is not supported *$" "backup row"
if out=$(k patch -n "$N" backup b1 --type=merge -p '{"spec":{"cluster":{"name":"other"}}}' 2>&1); then
	e2e_fail "Backup spec changed"
fi
e2e_assert_contains "$out" "BackupSpec is immutable once set" "Backup spec immutability"
cat >"$tmp/sb.yaml" <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: ScheduledBackup
metadata: {name: nightly}
spec: {schedule: "0 0 0 * * *", cluster: {name: real}}
EOF
k apply -n "$N" -f "$tmp/sb.yaml" >/dev/null || e2e_fail "create scheduledbackup"
e2e_assert_eq none "$(k get -n "$N" scheduledbackup nightly -o jsonpath='{.spec.backupOwnerReference}')" "backupOwnerReference default"
k patch -n "$N" scheduledbackup nightly --subresource=status --type=merge \
	-p '{"status":{"lastScheduleTime":"2026-12-07T00:00:00Z","nextScheduleTime":"2026-12-08T00:00:00Z"}}' \
	>/dev/null || e2e_fail "scheduledbackup status patch"
hdr=$(k get -n "$N" scheduledbackups | head -1)
e2e_assert_match "$hdr" "^NAME +AGE +CLUSTER +LAST BACKUP *$" "scheduledbackup printer columns"
rejects_doc() { # NAME YAML MESSAGE-PART
	local out f=$tmp/$1.yaml
	printf '%s\n' "$2" >"$f"
	if out=$(dry "$f"); then e2e_fail "$1: accepted, expected rejection"; fi
	e2e_assert_contains "$out" "$3" "$1 rejection message"
	e2e_log "rejected as expected: $1"
}
rejects_doc backup-bad-method "apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: bm}
spec: {cluster: {name: real}, method: tape}" 'spec.method: Unsupported value: "tape"'
rejects_doc backup-no-cluster "apiVersion: postgresql.cnpg.io/v1
kind: Backup
metadata: {name: bn}
spec: {method: plugin}" "spec.cluster: Required value"
rejects_doc sb-bad-owner "apiVersion: postgresql.cnpg.io/v1
kind: ScheduledBackup
metadata: {name: so}
spec: {schedule: '@daily', cluster: {name: real}, backupOwnerReference: me}" 'spec.backupOwnerReference: Unsupported value: "me"'
rejects_doc store-bad-retention "apiVersion: barmancloud.cnpg.io/v1
kind: ObjectStore
metadata: {name: os}
spec: {retentionPolicy: 30days, configuration: {destinationPath: 's3://b', s3Credentials: {inheritFromIAMRole: true}}}" "spec.retentionPolicy: Invalid value"
rejects_doc store-unknown-field "apiVersion: barmancloud.cnpg.io/v1
kind: ObjectStore
metadata: {name: os}
spec: {configuration: {destinationPath: 's3://b', notAField: 1}}" "unknown field"
out=$(k explain backup.status.backupId) || e2e_fail "kubectl explain backup"
e2e_assert_contains "$out" "barman" "explain backup.status.backupId"
e2e_log "Backup, ScheduledBackup, ObjectStore: columns, status, defaults, enums, immutability OK"

# 6. every Cluster, Backup, ScheduledBackup and ObjectStore of samples/ (top level: samples/invalid/ is for admission, some of it
# is refused by the CEL rules too) and of the optional CloudNativePG corpus
[ -d "$SAMPLES" ] || e2e_fail "samples not found in $SAMPLES"
if [ -n "$SHARED_SAMPLES" ] && [ ! -d "$SHARED_SAMPLES" ]; then
	e2e_fail "PGOP_SHARED_DIR=$PGOP_SHARED_DIR has no samples/cnpg"
fi
mkdir -p "$tmp/samples"
total=0 ok=0 bad=()
while IFS= read -r file; do
	base=${file##*/}
	rm -f "$tmp"/samples/doc.*
	awk -v out="$tmp/samples/doc." 'BEGIN{n=0} /^---/{n++; next} {print > (out n)}' "$file"
	for doc in "$tmp"/samples/doc.*; do
		grep -Eq '^kind: (Cluster|Backup|ScheduledBackup|ObjectStore) *$' "$doc" || continue
		total=$((total + 1))
		if out=$(dry "$doc"); then
			ok=$((ok + 1))
			case " $KNOWN_BAD " in *" $base "*) e2e_fail "$base: accepted, but CloudNativePG rejects it" ;; esac
		else
			case " $KNOWN_BAD " in
			*" $base "*) e2e_log "rejected as in CloudNativePG: $base: $(tr '\n' ' ' <<<"$out" | cut -c1-200)" ;;
			*) bad+=("$base: $(tr '\n' ' ' <<<"$out" | cut -c1-300)") ;;
			esac
		fi
	done
done < <({ find "$SAMPLES" -maxdepth 1 -name '*.yaml'
	[ -z "$SHARED_SAMPLES" ] || find "$SHARED_SAMPLES" -name '*.yaml'; } | sort)
e2e_log "samples: $ok of $total Cluster, Backup, ScheduledBackup and ObjectStore documents admitted (known bad: $KNOWN_BAD)"
if [ ${#bad[@]} -gt 0 ]; then
	printf '  %s\n' "${bad[@]}" >&2
	e2e_fail "${#bad[@]} sample document(s) rejected"
fi
repo=$(find "$SAMPLES" -maxdepth 1 -name '*.yaml' -exec cat {} + | grep -c '^kind: Cluster *$')
[ "$repo" -ge 7 ] || e2e_fail "only $repo Cluster documents in $SAMPLES"
[ -z "$SHARED_SAMPLES" ] || [ "$total" -ge $((repo + 60)) ] ||
	e2e_fail "only $((total - repo)) Cluster documents found in $SHARED_SAMPLES"
e2e_log "PASS"
