#!/usr/bin/env bash
# e2e-timeout: 120
# `pgop controller` as the API server sees it, without Kubernetes: start it on
# loopback with a throwaway certificate and talk HTTPS to it with curl.
# Checks: denial naming spec.maxSyncReplicas (instances 3, maxSyncReplicas 3) and
# spec.bootstrap (initdb + pg_basebackup), defaults as a JSONPatch on mutate, the
# uid echoed, 400 on garbage, 405 on GET, 415 on a wrong Content-Type, 413 on a
# 4 MiB body, TLS below 1.2 refused, health/readiness/metrics, a certificate
# replaced on disk is served without restart, the server still serves after all
# that, SIGTERM stops it cleanly (exit 0), and SIGHUP forces a certificate reload.
#
# Usage: tests/e2e/test_webhook_https.sh [PGOP_BINARY]   (default $PGOP_BIN)
# Builds nothing. Needs curl, and certtool (gnutls-bin) or openssl.
# Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

PGOP=${1:-${PGOP_BIN:-}}
if [ -z "$PGOP" ] || [ ! -x "$PGOP" ]; then
	echo "usage: $0 PATH/TO/pgop (not executable: '${PGOP}')" >&2
	exit 2
fi
command -v curl >/dev/null || { echo "curl is required" >&2; exit 2; }

tmp=$(mktemp -d /tmp/pgop-webhook-e2e.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

passed=0 failed=0
pass() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; [ -n "${2:-}" ] && printf '     %s\n' "$2"; }
check() { # NAME CONDITION-CMD... : pass when the command succeeds
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "${detail:-}"; fi
	detail=
}
has() { grep -qF -- "$2" <<<"$1"; }
lacks() { ! grep -qF -- "$2" <<<"$1"; }

# ---- certificates (ECDSA P-256, SAN 127.0.0.1 + localhost) ------------------
gen_cert() { # DIR CN
	local d=$1 cn=$2
	mkdir -p "$d"
	if command -v certtool >/dev/null; then
		certtool --generate-privkey --key-type ecdsa --curve secp256r1 --outfile "$d/tls.key" \
			>/dev/null 2>&1 || return 1
		cat >"$d/tmpl" <<-EOF
			cn = "$cn"
			dns_name = "localhost"
			ip_address = "127.0.0.1"
			expiration_days = 1
			tls_www_server
			signing_key
			ca
		EOF
		certtool --generate-self-signed --load-privkey "$d/tls.key" --template "$d/tmpl" \
			--outfile "$d/tls.crt" >/dev/null 2>&1
	else
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$d/tls.key" -out "$d/tls.crt" -days 1 -subj "/CN=$cn" \
			-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
	fi
}
gen_cert "$tmp/a" pgop-e2e-a && gen_cert "$tmp/b" pgop-e2e-b ||
	{ echo "cannot generate certificates (certtool/openssl)" >&2; exit 2; }
mkdir -p "$tmp/live"
cp "$tmp/a/tls.crt" "$tmp/a/tls.key" "$tmp/live/"

# ---- start the controller on an ephemeral port ------------------------------
# Webhooks-only mode (explicit), whatever the caller's environment points at.
env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT \
	"$PGOP" controller --tls-cert-file "$tmp/live/tls.crt" --tls-key-file "$tmp/live/tls.key" \
	--listen 127.0.0.1:0 --cert-poll-interval 1 --log-level debug --webhooks-only \
	</dev/null >"$tmp/controller.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*"msg":"serving HTTPS".*"port":"\([0-9]*\)".*/\1/p' "$tmp/controller.log" 2>/dev/null)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then
	cat "$tmp/controller.log" >&2
	echo "the controller did not start" >&2
	exit 1
fi
base=https://127.0.0.1:$port
MUTATE=/mutate-postgresql-cnpg-io-v1-cluster
VALIDATE=/validate-postgresql-cnpg-io-v1-cluster

# curl against the server, trusting certificate A (or $CA).
CA=$tmp/a/tls.crt
req() { curl -sS --max-time 20 --cacert "$CA" "$@"; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 20 --cacert "$CA" "$@"; }
review() { # PATH UID OPERATION SPEC-JSON
	local body
	body=$(printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"postgresql.cnpg.io","version":"v1","kind":"Cluster"},"resource":{"group":"postgresql.cnpg.io","version":"v1","resource":"clusters"},"name":"c","namespace":"default","operation":"%s","userInfo":{"username":"e2e"},"object":{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":"c","namespace":"default"},"spec":%s},"oldObject":null,"dryRun":false}}' "$2" "$3" "$4")
	req -X POST -H 'Content-Type: application/json' --data-binary "$body" "$base$1?timeout=10s"
}

# ---- admission ---------------------------------------------------------------
out=$(review "$VALIDATE" uid-sync-1 CREATE '{"instances":3,"maxSyncReplicas":3,"storage":{"size":"1Gi"}}')
detail=$out
check "validate: instances 3 + maxSyncReplicas 3 is denied" has "$out" '"allowed":false'
detail=$out
check "validate: the denial names spec.maxSyncReplicas" has "$out" 'spec.maxSyncReplicas'
check "validate: the message reads like field.Invalid (with the value)" has "$out" \
	'"message":"Cluster.postgresql.cnpg.io \"c\" is invalid: spec.maxSyncReplicas: Invalid value: 3: maxSyncReplicas must be lower than the number of instances"'
check "validate: the cause has the body and reason FieldValueInvalid" has "$out" \
	'{"reason":"FieldValueInvalid","message":"Invalid value: 3: maxSyncReplicas must be lower than the number of instances","field":"spec.maxSyncReplicas"}'
detail=$out
check "validate: uid echoed" has "$out" '"uid":"uid-sync-1"'
detail=$out
check "validate: apiVersion/kind echoed" has "$out" '"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"'

out=$(review "$VALIDATE" uid-boot-2 CREATE '{"instances":1,"storage":{"size":"1Gi"},"bootstrap":{"initdb":{"database":"app","owner":"app"},"pg_basebackup":{"source":"origin"}},"externalClusters":[{"name":"origin","connectionParameters":{"host":"origin"}}]}')
detail=$out
check "validate: initdb + pg_basebackup is denied" has "$out" '"allowed":false'
detail=$out
check "validate: the denial names spec.bootstrap" has "$out" 'spec.bootstrap'
check "validate: two bootstrap methods are Forbidden" has "$out" \
	'{"reason":"FieldValueForbidden","message":"Forbidden: Only one bootstrap method can be specified at a time","field":"spec.bootstrap"}'

out=$(review "$VALIDATE" uid-ok-3 CREATE '{"instances":3,"storage":{"size":"1Gi"}}')
detail=$out
check "validate: a sound Cluster is allowed" has "$out" '"allowed":true'
detail=$out
check "validate: no patch on the validate path" lacks "$out" '"patch"'

out=$(review "$MUTATE" uid-mut-4 CREATE '{"instances":3,"storage":{"size":"1Gi"}}')
detail=$out
check "mutate: allowed with patchType JSONPatch" has "$out" '"patchType":"JSONPatch"'
detail=$out
check "mutate: uid echoed" has "$out" '"uid":"uid-mut-4"'
patch=$(sed -n 's/.*"patch":"\([^"]*\)".*/\1/p' <<<"$out" | base64 -d 2>/dev/null)
detail=$patch
check "mutate: the patch is a JSONPatch array of add operations" has "$patch" '[{"op":"add","path":"/spec/'
detail=$patch
check "mutate: the patch sets defaults (imageName, bootstrap.initdb)" \
	bash -c 'grep -qF "/spec/imageName" <<<"$1" && grep -qF "initdb" <<<"$1"' _ "$patch"

# ---- HTTP errors ---------------------------------------------------------------
c=$(code -X POST -H 'Content-Type: application/json' --data-binary 'garbage{' "$base$VALIDATE")
detail="status $c"
check "garbage body -> 400" test "$c" = 400
c=$(code -X POST -H 'Content-Type: application/json' --data-binary '{"kind":"AdmissionReview"}' "$base$VALIDATE")
detail="status $c"
check "AdmissionReview without request -> 400" test "$c" = 400
c=$(code "$base$VALIDATE")
detail="status $c"
check "GET on the webhook -> 405" test "$c" = 405
allow=$(curl -s -D - -o /dev/null --max-time 20 --cacert "$CA" "$base$MUTATE" | tr -d '\r' | sed -n 's/^[Aa]llow: //p')
detail="Allow: $allow"
check "405 carries Allow: POST" test "$allow" = POST
c=$(code -X POST -H 'Content-Type: text/plain' --data-binary '{}' "$base$VALIDATE")
detail="status $c"
check "text/plain body -> 415" test "$c" = 415
c=$(code "$base/nope")
detail="status $c"
check "unknown path -> 404" test "$c" = 404
head -c $((4 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
c=$(code -X POST -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" "$base$VALIDATE")
detail="status $c"
check "4 MiB body -> 413" test "$c" = 413
c=$(code -X POST -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
	--data-binary @"$tmp/big.json" "$base$VALIDATE")
detail="status $c"
check "4 MiB chunked body (no Content-Length) -> 413" test "$c" = 413

# ---- TLS -----------------------------------------------------------------------
if curl -s -o /dev/null --max-time 10 --cacert "$CA" --tlsv1.0 --tls-max 1.1 "$base/healthz"; then
	fail "TLS 1.1 is refused"
else
	pass "TLS 1.1 is refused"
fi
c=$(code --tlsv1.2 --tls-max 1.2 "$base/healthz")
detail="status $c"
check "TLS 1.2 is accepted" test "$c" = 200
c=$(code --tlsv1.3 "$base/healthz")
detail="status $c"
check "TLS 1.3 is accepted" test "$c" = 200

# ---- health, readiness, metrics -------------------------------------------------
c=$(code "$base/healthz")
check "/healthz -> 200" test "$c" = 200
c=$(code "$base/readyz")
check "/readyz -> 200" test "$c" = 200
m=$(req "$base/metrics")
detail=$(grep pgop_http_requests_total <<<"$m" | head -5)
check "/metrics counts validate 200s" has "$m" "pgop_http_requests_total{path=\"$VALIDATE\",code=\"200\"} 3"
check "/metrics counts the 413s" has "$m" "pgop_http_requests_total{path=\"$VALIDATE\",code=\"413\"} 2"
check "/metrics has the latency histogram (mutate: one 200, one 405)" has "$m" "pgop_http_request_duration_seconds_bucket{path=\"$MUTATE\",le=\"+Inf\"} 2"
check "/metrics has the in-flight gauge" has "$m" "pgop_http_requests_in_flight "

# ---- certificate rotation on disk ------------------------------------------------
# Replace the files the way a Secret volume does (new files renamed into place).
cp "$tmp/b/tls.key" "$tmp/live/.tls.key.new" && mv "$tmp/live/.tls.key.new" "$tmp/live/tls.key"
cp "$tmp/b/tls.crt" "$tmp/live/.tls.crt.new" && mv "$tmp/live/.tls.crt.new" "$tmp/live/tls.crt"
rotated=no
for _ in $(seq 50); do
	if [ "$(CA=$tmp/b/tls.crt code "$base/healthz")" = 200 ]; then rotated=yes; break; fi
	sleep 0.2
done
detail=$(grep -i certificate "$tmp/controller.log" | tail -3)
check "a certificate replaced on disk is served without restart" test "$rotated" = yes
c=$(code "$base/healthz")
detail="status $c"
check "clients trusting only the old certificate are refused after rotation" test "$c" != 200
CA=$tmp/b/tls.crt

# ---- still serving ------------------------------------------------------------------
out=$(review "$VALIDATE" uid-after-5 CREATE '{"instances":3,"storage":{"size":"1Gi"}}')
detail=$out
check "still serving admission after all of the above" has "$out" '"uid":"uid-after-5","allowed":true'
detail=$(grep -c '"level":"error"' "$tmp/controller.log")
check "no error-level log lines" test "$detail" = 0

# ---- graceful stop ----------------------------------------------------------------
kill -TERM "$pid"
rc=
for _ in $(seq 100); do
	if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
	sleep 0.1
done
detail="exit status '${rc}'"
check "SIGTERM stops the controller with status 0" test "${rc:-x}" = 0
pid=
detail=$(tail -2 "$tmp/controller.log")
check "the log says it stopped" grep -q '"msg":"stopped"' "$tmp/controller.log"
if grep -q '"--webhooks-only: serving admission webhooks, not reconciling"' "$tmp/controller.log"; then
	pass "the log says it serves admission webhooks only (--webhooks-only)"
else
	fail "the log says it serves admission webhooks only (--webhooks-only)"
fi

# ---- SIGHUP forces a reload (polling effectively off) ------------------------------
cp "$tmp/a/tls.crt" "$tmp/a/tls.key" "$tmp/live/"
env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT \
	"$PGOP" controller --tls-cert-file "$tmp/live/tls.crt" --tls-key-file "$tmp/live/tls.key" \
	--listen 127.0.0.1:0 --cert-poll-interval 3600 </dev/null >"$tmp/controller2.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*"msg":"serving HTTPS".*"port":"\([0-9]*\)".*/\1/p' "$tmp/controller2.log" 2>/dev/null)
	[ -n "$port" ] && break
	sleep 0.1
done
base=https://127.0.0.1:$port
CA=$tmp/a/tls.crt
c=$(code "$base/healthz")
detail="status $c"
check "second controller serves certificate A" test "$c" = 200
sleep 1.2 # past the first retry (500 ms): still not ready, still logged once
readyz2=$(code "$base/readyz")
cp "$tmp/b/tls.key" "$tmp/live/.k" && mv "$tmp/live/.k" "$tmp/live/tls.key"
cp "$tmp/b/tls.crt" "$tmp/live/.c" && mv "$tmp/live/.c" "$tmp/live/tls.crt"
sleep 1.5
c=$(code "$base/healthz")
detail="status $c"
check "without SIGHUP (1 h poll) the old certificate is still served" test "$c" = 200
kill -HUP "$pid"
hup=no
for _ in $(seq 30); do
	if [ "$(CA=$tmp/b/tls.crt code "$base/healthz")" = 200 ]; then hup=yes; break; fi
	sleep 0.1
done
detail=$(tail -3 "$tmp/controller2.log")
check "SIGHUP reloads the certificate at once" test "$hup" = yes
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
detail="exit status $rc"
check "second controller stops with status 0" test "$rc" = 0
# The second controller ran WITHOUT --webhooks-only and without cluster access: that is
# an error (retried, logged), not a mode; it serves admission but never reports Ready.
detail=$(grep -c 'no usable cluster access' "$tmp/controller2.log" || true)
check "without --webhooks-only, missing cluster access is logged once as an error" test "$detail" = 1
detail="readyz while it ran: ${readyz2:-?}"
check "without --webhooks-only and cluster access, /readyz is 503 (healthz 200)" test "${readyz2:-}" = 503

if [ "$failed" -gt 0 ]; then
	echo "--- controller log (last 30 lines) ---"
	tail -n 30 "$tmp/controller.log"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
