# shellcheck shell=bash
# An S3 object store for a test: versitygw (tests/e2e/build-objstore.sh) on loopback,
# posix backend in the test's own directory, TLS with its own CA (openssl), root
# credentials generated per run and kept in files (0600; never in argv), one bucket.
# Source after lib.sh. Needs no Kubernetes control plane.
#
#   objstore_start DIR [BUCKET]   # DIR: an empty directory the test owns
#   ...  $OBJSTORE_ENDPOINT (https://127.0.0.1:PORT), $OBJSTORE_BUCKET,
#        $OBJSTORE_CA (CA PEM), $OBJSTORE_CREDS (file: access key line, secret key line),
#        $OBJSTORE_ACCESS_FILE / $OBJSTORE_SECRET_FILE (one value each), $OBJSTORE_DATA
#        (the posix root: DATA/BUCKET/key), $OBJSTORE_PID, $OBJSTORE_LOG
#   objstore_stop                 # kills the gateway (the test removes DIR)

# objstore_bin: directory of the versitygw binary (builds it once per machine).
objstore_bin() {
	if [ -n "${PGOP_E2E_OBJSTORE_BIN:-}" ] && [ -x "$PGOP_E2E_OBJSTORE_BIN/versitygw" ]; then
		echo "$PGOP_E2E_OBJSTORE_BIN"
		return 0
	fi
	"$E2E_DIR/build-objstore.sh" | tail -n 1
}

# objstore_pki DIR: DIR/ca.crt, ca.key, server.crt, server.key (127.0.0.1, ::1, localhost).
objstore_pki() {
	local d=$1
	(
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj "/CN=pgop-e2e-objstore-ca" -keyout "$d/ca.key" -out "$d/ca.crt" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=127.0.0.1" -keyout "$d/server.key" -out "$d/server.csr"
		printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost" \
			"extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature" >"$d/server.ext"
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
			-CAcreateserial -days 2 -extfile "$d/server.ext" -out "$d/server.crt"
	) >/dev/null 2>&1 || { e2e_log "objstore: openssl failed"; return 1; }
	chmod 0644 "$d/ca.crt"
}

# objstore_free_port: a loopback TCP port nobody listens on (20000-32767).
objstore_free_port() {
	local p i
	for i in $(seq 1 50); do
		p=$((20000 + (RANDOM % 12768)))
		ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return 0; }
	done
	return 1
}

# objstore_curl ARGS...: curl signing with the root credentials, passed in a config
# file (not argv), trusting the store's CA. curl 7.88 does not send the payload hash
# S3 requires (x-amz-content-sha256): the empty body's is added (requests without a body).
OBJSTORE_EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
objstore_curl() {
	local cfg=$OBJSTORE_DIR/curl.cfg
	(umask 077 && printf 'user = "%s:%s"\n' "$(cat "$OBJSTORE_ACCESS_FILE")" \
		"$(cat "$OBJSTORE_SECRET_FILE")" >"$cfg")
	curl -sS --max-time 30 -K "$cfg" --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H "x-amz-content-sha256: $OBJSTORE_EMPTY_SHA256" --cacert "$OBJSTORE_CA" "$@"
	local rc=$?
	rm -f "$cfg"
	return $rc
}

objstore_start() {
	local dir bucket=${2:-pgop-e2e} bin try
	dir=$(realpath "$1")
	bin=$(objstore_bin) || { e2e_log "objstore: versitygw not built"; return 1; }
	mkdir -p "$dir/data" "$dir/pki"
	objstore_pki "$dir/pki" || return 1
	OBJSTORE_DIR=$dir OBJSTORE_DATA=$dir/data OBJSTORE_BUCKET=$bucket
	OBJSTORE_CA=$dir/pki/ca.crt OBJSTORE_LOG=$dir/versitygw.log
	OBJSTORE_ACCESS_FILE=$dir/access_key OBJSTORE_SECRET_FILE=$dir/secret_key
	OBJSTORE_CREDS=$dir/credentials
	(
		umask 077
		openssl rand -hex 10 | tr a-f A-F >"$OBJSTORE_ACCESS_FILE"
		openssl rand -base64 30 | tr -d '\n/+=' >"$OBJSTORE_SECRET_FILE"
		echo >>"$OBJSTORE_SECRET_FILE"
		cat "$OBJSTORE_ACCESS_FILE" "$OBJSTORE_SECRET_FILE" >"$OBJSTORE_CREDS"
	)
	for try in 1 2 3; do
		OBJSTORE_PORT=$(objstore_free_port) || { e2e_log "objstore: no free port"; return 1; }
		# credentials through the environment of this one process, never its argv
		ROOT_ACCESS_KEY_ID=$(cat "$OBJSTORE_ACCESS_FILE") \
			ROOT_SECRET_ACCESS_KEY=$(cat "$OBJSTORE_SECRET_FILE") \
			"$bin/versitygw" --port "127.0.0.1:$OBJSTORE_PORT" --cert "$dir/pki/server.crt" \
			--key "$dir/pki/server.key" --quiet posix "$OBJSTORE_DATA" \
			>>"$OBJSTORE_LOG" 2>&1 9>&- &
		OBJSTORE_PID=$!
		OBJSTORE_ENDPOINT=https://127.0.0.1:$OBJSTORE_PORT
		local i
		for i in $(seq 1 100); do
			kill -0 "$OBJSTORE_PID" 2>/dev/null || break
			curl -s -o /dev/null --max-time 2 --cacert "$OBJSTORE_CA" "$OBJSTORE_ENDPOINT/" && break
			sleep 0.1
		done
		kill -0 "$OBJSTORE_PID" 2>/dev/null && break
		wait "$OBJSTORE_PID" 2>/dev/null || true
		OBJSTORE_PID=
		e2e_log "objstore: versitygw exited (port $OBJSTORE_PORT taken?), retrying"
	done
	[ -n "$OBJSTORE_PID" ] || { tail -n 20 "$OBJSTORE_LOG" >&2; return 1; }
	export OBJSTORE_DIR OBJSTORE_DATA OBJSTORE_BUCKET OBJSTORE_CA OBJSTORE_LOG OBJSTORE_PORT \
		OBJSTORE_ENDPOINT OBJSTORE_PID OBJSTORE_ACCESS_FILE OBJSTORE_SECRET_FILE OBJSTORE_CREDS
	objstore_curl -f -X PUT "$OBJSTORE_ENDPOINT/$OBJSTORE_BUCKET" >/dev/null ||
		{ e2e_log "objstore: cannot create bucket $OBJSTORE_BUCKET"; tail -n 20 "$OBJSTORE_LOG" >&2; return 1; }
	e2e_log "objstore: versitygw pid $OBJSTORE_PID on $OBJSTORE_ENDPOINT, bucket $OBJSTORE_BUCKET"
}

objstore_stop() {
	if [ -n "${OBJSTORE_PID:-}" ]; then
		kill "$OBJSTORE_PID" 2>/dev/null || true
		wait "$OBJSTORE_PID" 2>/dev/null || true
		OBJSTORE_PID=
	fi
}
