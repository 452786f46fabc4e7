#!/usr/bin/env bash
# e2e-timeout: 300
# The S3 client (objstore/) against a real S3 server: versitygw on loopback over TLS
# (objstore_lib.sh: own CA, random credentials in 0600 files, posix backend in this
# test's temp dir), driven through tests/e2e/tools/pgop-s3. No Kubernetes control plane.
#  - put (in memory, signed payload) + get round trip, sha256 equal; head size/ETag;
#  - 20 MB from stdin as a 4-part multipart upload (5 MiB parts) with the client's peak
#    RSS bounded (measured on a non-sanitized build only: ASan's quarantine holds freed
#    memory), get back with sha256 equal; an aborted multipart upload leaves no object;
#  - 1,100 keys: ListObjectsV2 pagination with 1000- and 100-key pages, prefix+delimiter
#    common prefixes; DeleteObjects of 1000 then 100 keys, the listing empty afterwards;
#  - errors named, nothing crashes: wrong secret -> 403 SignatureDoesNotMatch, missing
#    bucket -> 404 NoSuchBucket, missing key -> NoSuchKey, wrong CA / no CA -> TLS,
#    closed port -> connect, a get past --max -> capped;
#  - credentials never in argv (the gateway's nor the tool's command line);
#  - object tags and server-side encryption (barmanObjectStore tags, historyTags,
#    wal/data.encryption), on a second gateway logging requests (--log-level debug,
#    secrets masked): tags read back with GetObjectTagging after a single PUT, a
#    multipart upload (3 parts, 2 in flight) and `pgop instance wal-archive` of a
#    segment and of .history files (historyTags, else tags); a tag S3 refuses (the
#    euro sign) fails with versitygw's 400 InvalidTag; x-amz-server-side-encryption
#    (and x-amz-tagging) on PutObject and CreateMultipartUpload only, never on parts,
#    and in SigV4's signed headers (versitygw's canonical request of a refused
#    signature). versitygw v1.8.0 accepts AES256 and aws:kms with 200 and encrypts
#    nothing (no x-amz-server-side-encryption in its answers): what is asserted is
#    that pgop sends it, signed, and the store accepts the request.
# Figures (METRIC): put/get latency of a small object, 1,100 puts on one connection,
# the 20 MB multipart upload and download (time, client peak RSS).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/objstore_lib.sh"

build=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}
TOOL=$build/tests/e2e/tools/pgop-s3
PGOP=${1:-$build/cmd/pgop}
[ -x "$PGOP" ] || e2e_fail "pgop not built: $PGOP"
[ -x "$TOOL" ] || e2e_fail "pgop-s3 not built: $TOOL (ninja -C $build pgop-s3)"
asan=
nm "$TOOL" 2>/dev/null | grep -c __asan_init >/dev/null && asan=1 # -c reads it all: no SIGPIPE under pipefail

tmp=$(mktemp -d /tmp/pgop-e2e-objstore.XXXXXX)
cleanup() {
	objstore_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
objstore_start "$tmp/s3" || e2e_fail "versitygw did not start"

s3() { "$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" \
	--creds "$OBJSTORE_CREDS" --ca "$OBJSTORE_CA" "$@"; }
ms() { date +%s%3N; }
sha() { sha256sum | cut -d' ' -f1; }
# crashed: a signal (exit > 128) or a sanitizer report is a failure in every case
check_no_crash() { # RC OUTPUT WHAT
	[ "$1" -lt 128 ] || e2e_fail "$3: pgop-s3 died with status $1: $2"
	[[ $2 != *"Sanitizer"* && $2 != *"runtime error"* ]] || e2e_fail "$3: sanitizer: $2"
}
expect_error() { # TEXT WHAT CMD...: fails, says TEXT, no crash
	local text=$1 what=$2 out rc=0
	shift 2
	out=$("$@" 2>&1 </dev/null) || rc=$?
	check_no_crash "$rc" "$out" "$what"
	[ "$rc" -ne 0 ] || e2e_fail "$what: succeeded: $out"
	[[ $out == *"$text"* ]] || e2e_fail "$what: no '$text' in: $out"
	e2e_log "$what: $out"
}

e2e_log "put + get round trip (small object, signed payload)"
head -c 100000 /dev/urandom >"$tmp/small"
t0=$(ms); s3 put-mem dir/small <"$tmp/small"; t1=$(ms)
got=$(s3 get dir/small | sha); t2=$(ms)
e2e_assert_eq "$(sha <"$tmp/small")" "$got" "sha256 of the object read back"
read -r size etag < <(s3 head dir/small)
e2e_assert_eq 100000 "$size" "HEAD size"
e2e_assert_eq "\"$(md5sum <"$tmp/small" | cut -d' ' -f1)\"" "$etag" "HEAD ETag (MD5)"
echo "METRIC objstore_put_100k_ms $((t1 - t0))"
echo "METRIC objstore_get_100k_ms $((t2 - t1))"
e2e_log "100 kB put $((t1 - t0)) ms, get $((t2 - t1)) ms (process start, TLS handshake included)"

e2e_log "20 MB from stdin: multipart upload in 5 MiB parts"
head -c 20000000 /dev/urandom >"$tmp/big"
t0=$(ms)
s3 --stats --part-size 5 put wals/big <"$tmp/big" 2>"$tmp/put.stats"
t1=$(ms)
read -r size etag < <(s3 head wals/big)
e2e_assert_eq 20000000 "$size" "multipart object size"
[[ $etag == *-4\" ]] || e2e_fail "ETag $etag is not a 4-part multipart ETag"
got=$(s3 --stats get wals/big 2>"$tmp/get.stats" | sha); t2=$(ms)
e2e_assert_eq "$(sha <"$tmp/big")" "$got" "sha256 of the 20 MB object read back"
put_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$tmp/put.stats")
get_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$tmp/get.stats")
echo "METRIC objstore_multipart_20mb_put_ms $((t1 - t0))"
echo "METRIC objstore_20mb_get_ms $((t2 - t1))"
echo "METRIC objstore_multipart_put_maxrss_kb $put_rss"
echo "METRIC objstore_get_maxrss_kb $get_rss"
e2e_log "20 MB multipart put $((t1 - t0)) ms (peak RSS $put_rss kB), get $((t2 - t1)) ms (peak RSS $get_rss kB)${asan:+ [ASan build: RSS not bounded-checked]}"
if [ -z "$asan" ]; then
	# get: the process's base (~11 MB: libcurl, gnutls, the CA) and no object buffer;
	# put: that plus one 5 MiB part buffer. Holding the 20 MB object would pass both.
	[ "$get_rss" -lt 16384 ] || e2e_fail "get peak RSS $get_rss kB: not streamed"
	[ "$put_rss" -lt $((get_rss + 8192)) ] ||
		e2e_fail "multipart put peak RSS $put_rss kB (get: $get_rss kB): more than one part held"
fi

e2e_log "20 MB from stdin, 3 parts in flight at once (--jobs 3, 5 MiB parts)"
t0=$(ms)
s3 --stats --part-size 5 --jobs 3 put par/big3 <"$tmp/big" 2>"$tmp/put3.stats"
t1=$(ms)
read -r size etag < <(s3 head par/big3)
e2e_assert_eq 20000000 "$size" "parallel multipart object size"
[[ $etag == *-4\" ]] || e2e_fail "ETag $etag is not a 4-part multipart ETag"
e2e_assert_eq "$(sha <"$tmp/big")" "$(s3 get par/big3 | sha)" "sha256 of the parallel upload read back"
put3_rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$tmp/put3.stats")
echo "METRIC objstore_multipart_20mb_put_jobs3_ms $((t1 - t0))"
e2e_log "20 MB parallel put $((t1 - t0)) ms (peak RSS $put3_rss kB)"
if [ -z "$asan" ]; then
	# 4 part buffers (3 uploading, 1 being read) of 5 MiB, and 2 more clients
	[ "$put3_rss" -lt $((get_rss + 4 * 5120 + 8192)) ] ||
		e2e_fail "parallel put peak RSS $put3_rss kB (get: $get_rss kB): more than jobs + 1 parts held"
fi
e2e_log "a parallel upload to a bucket that does not exist fails, clearly"
rc=0
out=$("$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket no-such-bucket --creds "$OBJSTORE_CREDS" \
	--ca "$OBJSTORE_CA" --part-size 5 --jobs 3 put par/x <"$tmp/big" 2>&1) || rc=$?
check_no_crash "$rc" "$out" "parallel put to a missing bucket"
[ "$rc" -ne 0 ] && [[ $out == *NoSuchBucket* ]] ||
	e2e_fail "parallel put to a missing bucket: rc $rc: $out"

e2e_log "aborted multipart upload leaves nothing"
s3 mpu-abort wals/aborted
expect_error "404" "HEAD of the aborted upload's key" s3 head wals/aborted

e2e_log "1,100 keys: pagination, prefix, delimiter"
out=$(s3 put-many many/k 1100)
e2e_log "$out"
n=${out#put-many: 1100 in }; n=${n% ms}
echo "METRIC objstore_put_small_avg_us $((n * 1000 / 1100))"
e2e_assert_eq 1100 "$(s3 list many/ | sort -u | wc -l)" "keys listed in 1000-key pages"
e2e_assert_eq 1100 "$(s3 --page 100 list many/ | sort -u | wc -l)" "keys listed in 100-key pages"
e2e_assert_eq "many/k000000 many/k001099" "$(s3 --page 7 list many/ | awk 'NR==1{a=$2} {b=$2} END{print a, b}')" \
	"first and last key over 7-key pages"
e2e_assert_eq "P dir/|P many/|P par/|P wals/" "$(s3 list '' / | paste -sd'|')" "common prefixes at the root"
e2e_assert_eq "O wals/big 20000000" "$(s3 list wals/ /)" "objects under wals/ with a delimiter"

e2e_log "DeleteObjects: 1000 keys, then 100"
s3 list many/ | awk '{print $2}' >"$tmp/keys"
head -n 1000 "$tmp/keys" | s3 delete -
e2e_assert_eq 100 "$(s3 list many/ | wc -l)" "keys left after deleting 1000"
tail -n 100 "$tmp/keys" | s3 delete -
e2e_assert_eq 0 "$(s3 list many/ | wc -l)" "keys left after deleting all"
s3 delete dir/small
expect_error "NoSuchKey" "GET of a deleted key" s3 get dir/small

e2e_log "errors: named, mapped, nothing crashes"
(umask 077 && { head -n 1 "$OBJSTORE_CREDS"; echo wrong-secret; } >"$tmp/wrong")
expect_error "403 SignatureDoesNotMatch" "wrong secret" \
	"$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" --creds "$tmp/wrong" \
	--ca "$OBJSTORE_CA" get wals/big
expect_error "404 NoSuchBucket" "missing bucket" \
	"$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket no-such-bucket --creds "$OBJSTORE_CREDS" \
	--ca "$OBJSTORE_CA" list
objstore_pki_other=$tmp/other && mkdir -p "$objstore_pki_other" && objstore_pki "$objstore_pki_other"
expect_error "TLS: server certificate verification failed" "another CA" \
	"$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" --creds "$OBJSTORE_CREDS" \
	--ca "$objstore_pki_other/ca.crt" get wals/big
expect_error "TLS:" "the system store (no CA given)" \
	"$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" --creds "$OBJSTORE_CREDS" \
	get wals/big
port=$(e2e_free_ports 1)
expect_error "connect:" "closed port" \
	"$TOOL" --endpoint "https://127.0.0.1:$port" --bucket "$OBJSTORE_BUCKET" \
	--creds "$OBJSTORE_CREDS" --ca "$OBJSTORE_CA" get wals/big
expect_error "response larger than its cap (1000 bytes)" "get past --max" s3 --max 1000 get wals/big
expect_error "NoSuchKey" "missing key" s3 get nope
expect_error "endpoint URL" "endpoint with userinfo" \
	"$TOOL" --endpoint "https://u:p@127.0.0.1:1" --bucket "$OBJSTORE_BUCKET" --creds "$OBJSTORE_CREDS" list

e2e_log "credentials stay out of argv"
secret=$(sed -n 2p "$OBJSTORE_CREDS")
if tr '\0' ' ' <"/proc/$OBJSTORE_PID/cmdline" | grep -qF -- "$secret"; then
	e2e_fail "the secret is in versitygw's command line"
fi
! grep -rqF -- "$secret" "$OBJSTORE_LOG" || e2e_fail "the secret is in versitygw's log"

e2e_log "tags and server-side encryption: a gateway that logs requests"
objstore_stop
VGW_LOG_LEVEL=debug objstore_start "$tmp/s3tags" || e2e_fail "versitygw (debug log) did not start"
# vlog: the gateway's log without colours; sent HEADER: "URL HEADER : VALUE" per request
vlog() { sed 's/\x1b\[[0-9;]*m//g' "$OBJSTORE_LOG"; }
sent() { vlog | awk -v h="$1" '/\[URL\]:/ {u = $2} index($0, h " ") {gsub(/[│ ]+/, " "); print u $0}'; }
tags_of() { s3 get-tagging "$1" | sort | paste -sd'|'; }

echo small | s3 --tag env=prod --tag 'team name=a=b c' --tag 'path=/x:y@z+1' put-mem t/put
e2e_assert_eq "env=prod|path=/x:y@z+1|team name=a=b c" "$(tags_of t/put)" "tags of a single PUT"
head -c 12000000 "$tmp/big" | s3 --part-size 5 --jobs 2 --tag 'équipe=été' --sse aws:kms put t/mpu
read -r size etag < <(s3 head t/mpu)
[[ $etag == *-3\" ]] || e2e_fail "ETag $etag is not a 3-part multipart ETag"
e2e_assert_eq "équipe=été" "$(tags_of t/mpu)" "tags of a multipart upload (unicode)"
echo x | s3 put-mem t/put-none
e2e_assert_eq "" "$(tags_of t/put-none)" "no tags without --tag"
expect_error "400 InvalidTag" "a tag S3 refuses (pgop-s3 does not check, as admission would)" \
	sh -c 'echo x | "$@"' _ "$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" \
	--creds "$OBJSTORE_CREDS" --ca "$OBJSTORE_CA" --tag-unchecked 'cost=10€' put-mem t/euro
sse=$(sent X-Amz-Server-Side-Encryption)
e2e_log "x-amz-server-side-encryption sent: $(echo "$sse" | awk '{print $1}' | sed 's|.*/pgop-e2e/||' | paste -sd' ')"
grep -q "t/mpu?uploads.*: aws:kms" <<<"$sse" || e2e_fail "CreateMultipartUpload without SSE: $sse"
! grep -q "partNumber" <<<"$sse" || e2e_fail "an UploadPart carried SSE: $sse"
! grep -q "t/put " <<<"$sse" || e2e_fail "SSE sent without --sse: $sse"
grep -q "t/mpu?uploads.*: %C3%A9quipe=%C3%A9t%C3%A9" <<<"$(sent X-Amz-Tagging)" ||
	e2e_fail "CreateMultipartUpload without its encoded tagging: $(sent X-Amz-Tagging)"
# SigV4 signs both: versitygw shows its canonical request when a signature is refused
(umask 077 && { head -n 1 "$OBJSTORE_CREDS"; echo wrong-secret; } >"$tmp/wrong")
expect_error "403 SignatureDoesNotMatch" "a signed tagged, encrypted PUT (wrong secret)" \
	sh -c 'echo x | "$@"' _ "$TOOL" --endpoint "$OBJSTORE_ENDPOINT" --bucket "$OBJSTORE_BUCKET" \
	--creds "$tmp/wrong" --ca "$OBJSTORE_CA" --tag a=b --sse AES256 put-mem t/signed
vlog | grep -q "host;x-amz-content-sha256;x-amz-date;x-amz-server-side-encryption;x-amz-tagging" ||
	e2e_fail "x-amz-server-side-encryption and x-amz-tagging are not in the signed headers"

e2e_log "pgop instance wal-archive: tags, historyTags, walEncryption"
wal=$tmp/wal && mkdir -p "$wal/pgdata/global" "$wal/pg_wal/archive_status" "$wal/state" "$wal/state2"
head -c 8 /dev/urandom >"$wal/pgdata/global/pg_control" && head -c 8184 /dev/zero >>"$wal/pgdata/global/pg_control"
head -c 1048576 /dev/urandom >"$wal/pg_wal/000000010000000000000001"
printf '1\t0/3000000\tno recovery target specified\n' >"$wal/pg_wal/00000002.history"
wal_cfg() { # FILE SERVER STATE EXTRA-JSON
	(umask 077 && cat >"$1" <<JSON
{"destinationPath":"s3://$OBJSTORE_BUCKET/backups","serverName":"$2","endpointURL":"$OBJSTORE_ENDPOINT",
 "accessKeyIdFile":"$OBJSTORE_ACCESS_FILE","secretAccessKeyFile":"$OBJSTORE_SECRET_FILE",
 "endpointCAFile":"$OBJSTORE_CA","pgdata":"$wal/pgdata","stateDir":"$3"$4}
JSON
	)
}
wal_cfg "$wal/a.json" srv-a "$wal/state" ',"tags":{"env":"prod","cluster":"pg a"},
 "historyTags":{"kind":"history"},"walEncryption":"AES256","dataEncryption":"aws:kms"'
wal_cfg "$wal/b.json" srv-b "$wal/state2" ',"tags":{"env":"test"}'
"$PGOP" instance wal-archive --config "$wal/a.json" "$wal/pg_wal/000000010000000000000001" ||
	e2e_fail "wal-archive of a segment"
"$PGOP" instance wal-archive --config "$wal/a.json" "$wal/pg_wal/00000002.history" ||
	e2e_fail "wal-archive of a .history file"
"$PGOP" instance wal-archive --config "$wal/b.json" "$wal/pg_wal/00000002.history" ||
	e2e_fail "wal-archive of a .history file without historyTags"
e2e_assert_eq "cluster=pg a|env=prod" \
	"$(tags_of backups/srv-a/wals/0000000100000000/000000010000000000000001)" "a WAL segment's tags"
e2e_assert_eq "kind=history" "$(tags_of backups/srv-a/wals/00000002.history)" "a .history file's tags (historyTags)"
e2e_assert_eq "env=test" "$(tags_of backups/srv-b/wals/00000002.history)" "a .history file's tags (no historyTags: tags)"
sse=$(sent X-Amz-Server-Side-Encryption | grep "/backups/")
e2e_assert_eq 2 "$(grep -c ": AES256" <<<"$sse")" "WAL PUTs with walEncryption AES256 (segment, history)"
! grep -q "srv-b" <<<"$sse" || e2e_fail "SSE sent without walEncryption: $sse"
e2e_log "refused before any request: a bad tag in the file"
wal_cfg "$wal/c.json" srv-c "$wal/state" ',"tags":{"cost":"10€"}'
expect_error 'config: tags: \"cost\": tag value: only letters' "wal-archive with a tag S3 refuses" \
	"$PGOP" instance wal-archive --config "$wal/c.json" "$wal/pg_wal/000000010000000000000001"
secret=$(sed -n 2p "$OBJSTORE_CREDS")
! grep -rqF -- "$secret" "$OBJSTORE_LOG" || e2e_fail "the secret is in versitygw's debug log"
e2e_log "PASS"
