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
		OBJSTORE_PORT=$(e2e_free_ports 1) || { e2e_log "objstore: no free port"; return 1; }
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

# ---- the same store as a Pod in the e2e cluster (control plane + node agent) ----------
# For the Cluster tests (WAL archiving, backups, recovery): versitygw runs as a Pod
# (image name neither pgop nor postgres, so the node agent runs its command as given: the
# cached binary by its absolute path) behind a Service `versitygw` port 7070, TLS with a
# CA made here (SANs: the Service's DNS names and its ClusterIP), the root credentials
# generated per run and given to the Pod through env secretKeyRef (never in its argv),
# posix backend on an emptyDir, one bucket. Needs e2e_up + e2e_agent_up.
#
#   objstore_pod_up DIR NS [BUCKET]   # DIR: an empty host directory the test owns; NS:
#                                     # an existing namespace for the store
#   ...  $OBJSTORE_ENDPOINT (https://versitygw.NS.svc:7070: what Pods use),
#        $OBJSTORE_HOST_ENDPOINT (https://<ClusterIP>:7070: what the host uses; the
#        agent's nft output chain DNATs it), $OBJSTORE_BUCKET, $OBJSTORE_CA,
#        $OBJSTORE_CREDS / $OBJSTORE_ACCESS_FILE / $OBJSTORE_SECRET_FILE (as objstore_start),
#        $OBJSTORE_NS, $OBJSTORE_POD (versitygw), $OBJSTORE_SECRET (the Secret in NS:
#        tls.crt, tls.key, ROOT_ACCESS_KEY_ID, ROOT_SECRET_ACCESS_KEY)
#   objstore_pod_client_secrets NS CREDS CA   # in NS (a Cluster's namespace): Secret CREDS
#                                     # with ACCESS_KEY_ID / ACCESS_SECRET_KEY, Secret CA
#                                     # with ca.crt (samples/cluster-backup-s3.yaml's keys)
#   objstore_pod_s3 TOOL ARGS...      # tests/e2e/tools/pgop-s3 against the Pod, from the host
# The Pod, Service and Secret go with NS (the test deletes it); DIR is the test's.
# Secrets are made --from-file (values never in kubectl's argv).

# objstore_pod_pki DIR NS CLUSTERIP: DIR/ca.crt, ca.key, server.crt, server.key for the
# Service versitygw in NS.
objstore_pod_pki() {
	local d=$1 ns=$2 ip=$3 san
	san="DNS:versitygw.$ns.svc,DNS:versitygw.$ns.svc.cluster.local,DNS:versitygw.$ns,DNS:versitygw,IP:$ip"
	(
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj "/CN=pgop-e2e-objstore-ca" -keyout "$d/ca.key" -out "$d/ca.crt" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=versitygw.$ns.svc" -keyout "$d/server.key" -out "$d/server.csr"
		printf '%s\n' "subjectAltName=$san" "extendedKeyUsage=serverAuth" \
			"keyUsage=critical,digitalSignature" >"$d/server.ext"
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
			-CAcreateserial -days 2 -extfile "$d/server.ext" -out "$d/server.crt"
	) >/dev/null 2>&1 || { e2e_log "objstore: openssl failed"; return 1; }
	chmod 0644 "$d/ca.crt"
}

objstore_pod_up() {
	local dir ns=$2 bucket=${3:-pgop-e2e} bin ip
	dir=$(realpath "$1")
	bin=$(objstore_bin) || { e2e_log "objstore: versitygw not built"; return 1; }
	mkdir -p "$dir/pki"
	OBJSTORE_DIR=$dir OBJSTORE_NS=$ns OBJSTORE_BUCKET=$bucket OBJSTORE_POD=versitygw
	OBJSTORE_SECRET=versitygw OBJSTORE_CA=$dir/pki/ca.crt OBJSTORE_DATA=
	OBJSTORE_ACCESS_FILE=$dir/access_key OBJSTORE_SECRET_FILE=$dir/secret_key
	OBJSTORE_CREDS=$dir/credentials
	(
		umask 077
		openssl rand -hex 10 | tr a-f A-F >"$OBJSTORE_ACCESS_FILE"
		openssl rand -base64 30 | tr -d '\n/+=' >"$OBJSTORE_SECRET_FILE"
		echo >>"$OBJSTORE_SECRET_FILE"
		cat "$OBJSTORE_ACCESS_FILE" "$OBJSTORE_SECRET_FILE" >"$OBJSTORE_CREDS"
		# the values without a newline, for Secrets made --from-file (not argv)
		mkdir -p "$dir/keys"
		printf %s "$(cat "$OBJSTORE_ACCESS_FILE")" >"$dir/keys/access"
		printf %s "$(cat "$OBJSTORE_SECRET_FILE")" >"$dir/keys/secret"
	)
	# the Service first: its ClusterIP goes into the certificate (the host's endpoint)
	kubectl -n "$ns" apply -f - >/dev/null <<-EOS || { e2e_log "objstore: cannot create the Service"; return 1; }
	apiVersion: v1
	kind: Service
	metadata: {name: versitygw}
	spec:
	  selector: {app: versitygw}
	  ports: [{name: s3, port: 7070, targetPort: 7070}]
	EOS
	ip=$(kubectl -n "$ns" get service versitygw -o jsonpath='{.spec.clusterIP}')
	[ -n "$ip" ] || { e2e_log "objstore: the Service has no ClusterIP"; return 1; }
	objstore_pod_pki "$dir/pki" "$ns" "$ip" || return 1
	kubectl -n "$ns" create secret generic "$OBJSTORE_SECRET" \
		--from-file=tls.crt="$dir/pki/server.crt" --from-file=tls.key="$dir/pki/server.key" \
		--from-file=ROOT_ACCESS_KEY_ID="$dir/keys/access" \
		--from-file=ROOT_SECRET_ACCESS_KEY="$dir/keys/secret" >/dev/null ||
		{ e2e_log "objstore: cannot create the Secret"; return 1; }
	kubectl -n "$ns" apply -f - >/dev/null <<-EOS || { e2e_log "objstore: cannot create the Pod"; return 1; }
	apiVersion: v1
	kind: Pod
	metadata:
	  name: versitygw
	  labels: {app: versitygw}
	spec:
	  containers:
	    - name: versitygw
	      image: versity/versitygw:v1.8.0
	      command: [$bin/versitygw, --port, ":7070", --cert, /tls/tls.crt, --key, /tls/tls.key,
	                --quiet, posix, /data]
	      env:
	        - name: ROOT_ACCESS_KEY_ID
	          valueFrom: {secretKeyRef: {name: $OBJSTORE_SECRET, key: ROOT_ACCESS_KEY_ID}}
	        - name: ROOT_SECRET_ACCESS_KEY
	          valueFrom: {secretKeyRef: {name: $OBJSTORE_SECRET, key: ROOT_SECRET_ACCESS_KEY}}
	      ports: [{containerPort: 7070, name: s3}]
	      readinessProbe:
	        tcpSocket: {port: 7070}
	        periodSeconds: 2
	      volumeMounts:
	        - {name: tls, mountPath: /tls, readOnly: true}
	        - {name: data, mountPath: /data}
	  volumes:
	    - name: tls
	      secret: {secretName: $OBJSTORE_SECRET, items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]}
	    - name: data
	      emptyDir: {}
	EOS
	OBJSTORE_ENDPOINT=https://versitygw.$ns.svc:7070
	OBJSTORE_HOST_ENDPOINT=https://$ip:7070
	export OBJSTORE_DIR OBJSTORE_NS OBJSTORE_BUCKET OBJSTORE_POD OBJSTORE_SECRET OBJSTORE_CA \
		OBJSTORE_DATA OBJSTORE_ACCESS_FILE OBJSTORE_SECRET_FILE OBJSTORE_CREDS OBJSTORE_ENDPOINT \
		OBJSTORE_HOST_ENDPOINT
	e2e_wait_for "[ \"\$(kubectl -n $ns get pod versitygw -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]" 60 ||
		{ e2e_log "objstore: versitygw Pod not Ready: $(kubectl -n "$ns" get pod versitygw -o jsonpath='{.status}')"; return 1; }
	# the Service's rule follows the ready endpoint (the agent re-renders within a second)
	e2e_wait_for "curl -s -o /dev/null --max-time 2 --cacert '$OBJSTORE_CA' '$OBJSTORE_HOST_ENDPOINT/'" 30 ||
		{ e2e_log "objstore: $OBJSTORE_HOST_ENDPOINT does not answer over TLS"; return 1; }
	OBJSTORE_ENDPOINT=$OBJSTORE_HOST_ENDPOINT objstore_curl -f -X PUT "$OBJSTORE_HOST_ENDPOINT/$bucket" >/dev/null ||
		{ e2e_log "objstore: cannot create bucket $bucket"; return 1; }
	e2e_log "objstore: versitygw Pod $ns/versitygw, $OBJSTORE_ENDPOINT (host: $OBJSTORE_HOST_ENDPOINT), bucket $bucket, CA $OBJSTORE_CA"
}

objstore_pod_client_secrets() { # NS CREDS CA
	kubectl -n "$1" create secret generic "$2" \
		--from-file=ACCESS_KEY_ID="$OBJSTORE_DIR/keys/access" \
		--from-file=ACCESS_SECRET_KEY="$OBJSTORE_DIR/keys/secret" >/dev/null &&
		kubectl -n "$1" create secret generic "$3" --from-file=ca.crt="$OBJSTORE_CA" >/dev/null
}

objstore_pod_s3() { # TOOL ARGS...
	local tool=$1
	shift
	"$tool" --endpoint "$OBJSTORE_HOST_ENDPOINT" --bucket "$OBJSTORE_BUCKET" \
		--creds "$OBJSTORE_CREDS" --ca "$OBJSTORE_CA" "$@"
}

# objstore_cluster_env: what the Cluster backup tests stand on: the store as a Pod in its
# own namespace (osns, bucket backups, under $tmp/s3) and pgop from its chart in $ns with
# the client Secrets objstore-credentials and objstore-ca (cluster_lib.sh sourced). osns
# is set first, so the test's cleanup trap finds the namespace whatever fails after.
objstore_cluster_env() {
	osns=$(e2e_ns objstore)
	objstore_pod_up "$tmp/s3" "$osns" backups || e2e_fail "versitygw Pod did not start"
	cluster_crd
	cluster_helm_install
	objstore_pod_client_secrets "$ns" objstore-credentials objstore-ca || e2e_fail "client Secrets"
}

# objstore_recovery_cluster NAME SERVER [RECOVERY-YAML]: a 1-instance Cluster NAME in $ns
# (k() of cluster_lib.sh) bootstrapped by recovery from the Pod store's s3://BUCKET/pgop,
# server SERVER, through externalClusters[].barmanObjectStore with the Secrets
# objstore_pod_client_secrets made (objstore-credentials, objstore-ca), gzip WAL;
# RECOVERY-YAML: more lines under bootstrap.recovery (6 spaces in, e.g. a recoveryTarget).
objstore_recovery_cluster() {
	k apply -f - >/dev/null <<EOR
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: $1}
spec:
  instances: 1
  storage: {size: 1Gi}
  bootstrap:
    recovery:
      source: origin
${3:-}
  externalClusters:
    - name: origin
      barmanObjectStore:
        destinationPath: s3://$OBJSTORE_BUCKET/pgop
        endpointURL: $OBJSTORE_ENDPOINT
        endpointCA: {name: objstore-ca, key: ca.crt}
        serverName: $2
        s3Credentials:
          accessKeyId: {name: objstore-credentials, key: ACCESS_KEY_ID}
          secretAccessKey: {name: objstore-credentials, key: ACCESS_SECRET_KEY}
        wal: {compression: gzip}
EOR
}
