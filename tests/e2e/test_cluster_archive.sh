#!/usr/bin/env bash
# e2e-timeout: 900
# Continuous WAL archiving of a 3-instance Cluster to an object store in the cluster
# (issue 25's acceptance, first part):
#   1. versitygw runs as a Pod behind the Service versitygw in its own namespace, TLS with
#      a CA made here, root credentials from a Secret through env (objstore_lib.sh,
#      objstore_pod_up); bucket `backups`;
#   2. pgop from its Helm chart; samples/cluster-backup-s3.yaml (3 instances, gzip) pointed
#      at that Service, the CA Secret as endpointCA, the credentials Secret;
#   3. healthy; after pg_switch_wal() on the primary its /pg/status (live API) reports that
#      segment as lastArchivedWAL, the object is at barman's key
#      pgop/<cluster>/wals/<16hex>/<segment>.gz, condition ContinuousArchiving True;
#   4. the credentials Secret gets a wrong secret key: ContinuousArchiving False with the
#      store's error (SignatureDoesNotMatch) in its message, archiveError says it, the WAL
#      stays in pg_wal (readyWALs > 0); the right key back: archiving catches up (every
#      segment switched during the outage in the store, readyWALs 0, condition True),
#      postgres never restarted (pg_postmaster_start_time unchanged on every instance);
#   5. a destinationPath in a bucket that does not exist, then another CA in the Secret
#      endpointCA names: each time ContinuousArchiving False with the store's own error
#      (NoSuchBucket; TLS certificate verification) in its message and archiveError, the
#      WAL kept in pg_wal, and once fixed the condition True and every segment stored; no
#      container restarted, postgres never restarted.
# METRIC: seconds from the bad key to condition False, from the fixed key to True,
# segments caught up; the same for the missing bucket and the wrong CA.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
S3=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-s3
[ -x "$S3" ] || e2e_fail "pgop-s3 not built: $S3 (ninja -C BUILD_DIR pgop-s3)"
cluster_setup archive
osns=
archive_cleanup() {
	local rc=$?
	if [ $rc -ne 0 ] && [ -n "$osns" ]; then
		e2e_log "--- object store"
		kubectl -n "$osns" get pods,svc,endpointslices -o wide >&2 || true
		tail -n 20 "$AGENT_STATE/logs/${osns}_versitygw_versitygw.log" >&2 2>/dev/null || true
	fi
	[ -z "$osns" ] || kubectl delete namespace "$osns" --wait=false >/dev/null 2>&1 || true
	set +e # a failing (exit) under set -e would end the trap before the cleanup
	(exit $rc)
	cluster_cleanup
}
trap archive_cleanup EXIT
objstore_cluster_env
vpid=$(cat "$AGENT_STATE/run/${osns}_versitygw_versitygw.pid" 2>/dev/null || true)
if [ -n "$vpid" ] && tr '\0' ' ' <"/proc/$vpid/cmdline" | grep -qF -- "$(sed -n 2p "$OBJSTORE_CREDS")"; then
	e2e_fail "the root secret key is in versitygw's command line"
fi
s3() { objstore_pod_s3 "$S3" "$@"; }
e2e_assert_eq "" "$(s3 list)" "the new bucket is empty"

C=cluster-backup-s3
PREFIX=pgop/$C/wals
t0=$(date +%s)
sed -e "s|https://versitygw.objstore.svc:7070|$OBJSTORE_ENDPOINT|" "$SAMPLES/cluster-backup-s3.yaml" |
	k apply -f - >/dev/null
e2e_assert_eq "$OBJSTORE_ENDPOINT" "$(k get cluster $C -o jsonpath='{.spec.backup.barmanObjectStore.endpointURL}')" "endpointURL"
wait_healthy 3 600
echo "METRIC archive_cluster_3_healthy_s=$(($(date +%s) - t0))"
primary=$(status currentPrimary)
e2e_log "healthy, primary $primary ($(($(date +%s) - t0)) s)"

live() { kubectl get --raw "/apis/live.postgresql.cnpg.io/v1/namespaces/$ns/clusters/$C/status"; }
# pgst FIELD: the primary's /pg/status field, through the live API (at most 1 s old)
pgst() {
	live | jq -r --arg p "$primary" --arg f "$1" \
		'.status.members[] | select(.metadata.name == $p) | .status.pgStatus[$f] // empty | tostring'
}
cond() { k get cluster $C -o jsonpath="{.status.conditions[?(@.type==\"ContinuousArchiving\")].$1}"; }
# switch: some WAL, then a segment switch on the primary; prints the segment it closed
switch() {
	sql "$primary" "insert into e2e_arch values (now()); select pg_walfile_name(pg_switch_wal())" | tail -n 1
}
in_pg_wal() { [ "$(sql "$primary" "select count(*) from pg_ls_waldir() where name = '$1'")" = 1 ]; }
stored() { s3 list "$PREFIX/${1:0:16}/" | grep -c "^O $PREFIX/${1:0:16}/$1.gz " >/dev/null; }

# ---- 1. archiving works ---------------------------------------------------------------
e2e_assert_eq true "$(pgst isArchivingWAL)" "primary isArchivingWAL"
sql "$primary" "create table e2e_arch (at timestamptz)" >/dev/null
seg=$(switch)
e2e_assert_match "$seg" '^[0-9A-F]{24}$' "segment closed by pg_switch_wal"
t1=$(date +%s)
# later switches (the instance manager's own, or ours) may archive past it: compare names
e2e_wait_for "[ \"\$(pgst lastArchivedWAL)\" \\> '$seg' ] || [ \"\$(pgst lastArchivedWAL)\" = '$seg' ]" 60 1 ||
	e2e_fail "lastArchivedWAL '$(pgst lastArchivedWAL)' did not reach $seg within 60 s (archiveError '$(pgst archiveError)', failed '$(pgst lastFailedWAL)')"
e2e_log "lastArchivedWAL $(pgst lastArchivedWAL) at $(pgst lastArchivedWALTime), $(($(date +%s) - t1)) s after pg_switch_wal ($seg)"
echo "METRIC archive_first_segment_s=$(($(date +%s) - t1))"
stored "$seg" || e2e_fail "$PREFIX/${seg:0:16}/$seg.gz not in the store: $(s3 list "$PREFIX/" | head -n 5)"
e2e_log "s3://backups/$PREFIX/${seg:0:16}/$seg.gz is in the store"
e2e_wait_for "[ \"\$(cond status)\" = True ]" 60 1 ||
	e2e_fail "condition ContinuousArchiving not True within 60 s of a successful archive (status '$(cond status)', reason '$(cond reason)', message '$(cond message)'; needs the ContinuousArchiving condition from main)"
e2e_assert_eq ContinuousArchivingSuccess "$(cond reason)" "ContinuousArchiving reason"

declare -A started
for p in $C-1 $C-2 $C-3; do started[$p]=$(sql "$p" 'select pg_postmaster_start_time()'); done

# ---- 2. a wrong secret key: failing, WAL kept ------------------------------------------
good=$(k get secret objstore-credentials -o jsonpath='{.data.ACCESS_SECRET_KEY}')
bad=$(printf 'wrong-%s' "$(openssl rand -hex 8)" | base64 -w0)
k patch secret objstore-credentials -p "{\"data\":{\"ACCESS_SECRET_KEY\":\"$bad\"}}" >/dev/null
tbad=$(date +%s)
outage=()
# keep WAL coming (a failing archive_command is retried when a segment is ready)
until [ "$(cond status)" = False ]; do
	(($(date +%s) - tbad < 90)) ||
		e2e_fail "condition ContinuousArchiving not False 90 s after the wrong key (status '$(cond status)', message '$(cond message)', archiveError '$(pgst archiveError)', lastFailedWAL '$(pgst lastFailedWAL)')"
	outage+=("$(switch)")
	sleep 3
done
false_s=$(($(date +%s) - tbad))
echo "METRIC archive_bad_key_to_condition_false_s=$false_s"
e2e_log "ContinuousArchiving False ${false_s} s after the wrong key: $(cond reason): $(cond message)"
e2e_assert_eq ContinuousArchivingFailing "$(cond reason)" "ContinuousArchiving reason while failing"
e2e_assert_contains "$(cond message)" SignatureDoesNotMatch "condition message: the store's error"
aerr=$(pgst archiveError)
e2e_assert_contains "$aerr" SignatureDoesNotMatch "the primary's archiveError"
e2e_assert_contains "$(cond message)" "$aerr" "condition message holds archiveError"
e2e_assert_ne "" "$(pgst lastFailedWAL)" "lastFailedWAL"
# kubectl describe shows it too: a Warning Event with the store's error
e2e_wait_for "k get events --field-selector reason=ContinuousArchivingFailing,involvedObject.name=$C -o jsonpath='{.items[*].message}' | grep -q SignatureDoesNotMatch" 30 ||
	e2e_fail "no Warning Event ContinuousArchivingFailing naming the store's error"
e2e_assert_eq Warning "$(k get events --field-selector reason=ContinuousArchivingFailing,involvedObject.name=$C -o jsonpath='{.items[0].type}')" "Event type"
# three more segments while it fails: each stays ready (.ready) in pg_wal
for i in 1 2 3; do outage+=("$(switch)"); done
e2e_wait_for "[ \"\$(pgst readyWALs)\" -ge 3 ]" 30 1 || e2e_fail "readyWALs '$(pgst readyWALs)' after 3 segment switches while archiving fails"
ready=$(pgst readyWALs)
missing=()
for s in "${outage[@]}"; do
	stored "$s" && continue
	in_pg_wal "$s" || e2e_fail "$s neither in pg_wal nor in the store"
	missing+=("$s")
done
[ ${#missing[@]} -ge 3 ] || e2e_fail "only ${#missing[@]} outage segments missing from the store: ${missing[*]}"
e2e_log "archiveError '$aerr'; readyWALs $ready, ${#outage[@]} segments switched during the outage, ${#missing[@]} not archived (all in pg_wal)"

# ---- 3. the right key back: catching up ------------------------------------------------
k patch secret objstore-credentials -p "{\"data\":{\"ACCESS_SECRET_KEY\":\"$good\"}}" >/dev/null
tfix=$(date +%s)
# postgres retries a failed segment when the next one is ready (or after 60 s idle)
until [ "$(cond status)" = True ]; do
	(($(date +%s) - tfix < 120)) ||
		e2e_fail "condition ContinuousArchiving not True 120 s after the right key (status '$(cond status)', message '$(cond message)', archiveError '$(pgst archiveError)', readyWALs '$(pgst readyWALs)')"
	outage+=("$(switch)")
	sleep 3
done
true_s=$(($(date +%s) - tfix))
echo "METRIC archive_fixed_key_to_condition_true_s=$true_s"
e2e_assert_eq ContinuousArchivingSuccess "$(cond reason)" "ContinuousArchiving reason after the fix"
e2e_wait_for "k get events --field-selector reason=ContinuousArchivingSuccess,involvedObject.name=$C -o name | grep -q ." 30 ||
	e2e_fail "no Event ContinuousArchivingSuccess once archiving works again"
e2e_wait_for "[ \"\$(pgst readyWALs)\" = 0 ]" 60 1 || e2e_fail "readyWALs still '$(pgst readyWALs)' 60 s after the condition turned True"
for s in "${outage[@]}"; do
	stored "$s" || e2e_fail "$s (switched during the outage) not in the store after the catch-up"
done
echo "METRIC archive_segments_caught_up=${#missing[@]}"
e2e_log "caught up: condition True ${true_s} s after the right key, ${#missing[@]} segments archived late, readyWALs 0, ${#outage[@]} outage segments in the store"

# ---- 4. a missing bucket, then a wrong CA: each fails with the store's own words ------
# break_then_fix NAME EXPECT-REGEX BREAK FIX: BREAK (a command) makes archiving fail:
# condition False with EXPECT in its message and in the primary's archiveError, the
# segments switched meanwhile kept in pg_wal; FIX: condition True again, each of them in
# the store.
break_then_fix() {
	local name=$1 want=$2 t s seg kept=0
	local -a segs=()
	$3
	t=$(date +%s)
	until [ "$(cond status)" = False ]; do
		(($(date +%s) - t < 60)) ||
			e2e_fail "$name: condition not False in 60 s (message '$(cond message)', archiveError '$(pgst archiveError)')"
		segs+=("$(switch)")
		sleep 2
	done
	echo "METRIC archive_${name}_to_condition_false_s=$(($(date +%s) - t))"
	e2e_log "$name: ContinuousArchiving False after $(($(date +%s) - t)) s: $(cond message)"
	e2e_assert_eq ContinuousArchivingFailing "$(cond reason)" "$name: reason"
	[[ $(cond message) =~ $want ]] || e2e_fail "$name: condition message '$(cond message)' does not match /$want/"
	[[ $(pgst archiveError) =~ $want ]] || e2e_fail "$name: archiveError '$(pgst archiveError)' does not match /$want/"
	segs+=("$(switch)")
	seg=${segs[-1]}
	e2e_wait_for "[ \"\$(pgst readyWALs)\" -ge 1 ]" 20 1 || e2e_fail "$name: readyWALs '$(pgst readyWALs)' while failing"
	for s in "${segs[@]}"; do
		stored "$s" && continue
		in_pg_wal "$s" || e2e_fail "$name: $s neither in pg_wal nor in the store"
		kept=$((kept + 1))
	done
	((kept >= 1)) || e2e_fail "$name: no segment waiting in pg_wal (the last: $seg)"
	$4
	t=$(date +%s)
	until [ "$(cond status)" = True ]; do
		(($(date +%s) - t < 90)) ||
			e2e_fail "$name: condition not True 90 s after the fix (message '$(cond message)', readyWALs '$(pgst readyWALs)')"
		segs+=("$(switch)")
		sleep 2
	done
	echo "METRIC archive_${name}_fixed_to_condition_true_s=$(($(date +%s) - t))"
	e2e_wait_for "[ \"\$(pgst readyWALs)\" = 0 ]" 60 1 || e2e_fail "$name: readyWALs '$(pgst readyWALs)' after the fix"
	for s in "${segs[@]}"; do stored "$s" || e2e_fail "$name: $s not in the store after the fix"; done
	e2e_log "$name: $kept segments kept in pg_wal, archived after the fix ($(($(date +%s) - t)) s)"
}
restarts() { k get pods -l cnpg.io/cluster=$C -o jsonpath='{range .items[*]}{.metadata.name}={.status.containerStatuses[*].restartCount} {end}'; }
restarts0=$(restarts)
dest=$(k get cluster $C -o jsonpath='{.spec.backup.barmanObjectStore.destinationPath}')
set_dest() { k patch cluster $C --type merge -p "{\"spec\":{\"backup\":{\"barmanObjectStore\":{\"destinationPath\":\"$1\"}}}}" >/dev/null; }
no_bucket() { set_dest "s3://missing-$(openssl rand -hex 4)/pgop"; }
bucket_back() { set_dest "$dest"; }
break_then_fix missing_bucket 'NoSuchBucket' no_bucket bucket_back
# another CA in the Secret endpointCA names: the store's certificate fails verification
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=another-ca \
	-keyout "$tmp/other-ca.key" -out "$tmp/other-ca.crt" >/dev/null 2>&1 || e2e_fail "openssl"
set_ca() { k create secret generic objstore-ca --from-file=ca.crt="$1" --dry-run=client -o yaml | k replace -f - >/dev/null; }
other_ca() { set_ca "$tmp/other-ca.crt"; }
right_ca() { set_ca "$OBJSTORE_CA"; }
break_then_fix wrong_ca 'TLS.*certificate' other_ca right_ca
e2e_assert_eq "$restarts0" "$(restarts)" "container restart counts"
for p in $C-1 $C-2 $C-3; do
	e2e_assert_eq "${started[$p]}" "$(sql "$p" 'select pg_postmaster_start_time()')" "$p: postmaster start time (rotated Secrets and a new destination need no restart)"
done
e2e_assert_eq "$primary" "$(status currentPrimary)" "primary unchanged"
e2e_log "PASS"
