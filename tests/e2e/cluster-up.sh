#!/usr/bin/env bash
# Bring up, from nothing, a local Kubernetes control plane on loopback: etcd,
# kube-apiserver (RBAC, aggregation, service accounts), kube-controller-manager and
# kube-scheduler, with freshly generated PKI. No kubelet: the node agent under
# tests/e2e/agent plays that part.
#
# Usage: tests/e2e/cluster-up.sh [STATE_DIR]      (default /tmp/pgop-e2e)
# Writes STATE_DIR/kubeconfig (admin) and STATE_DIR/env (source it). Ports and the
# service range come from PGOP_E2E_* (see lib.sh). Take it down with cluster-down.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export PGOP_E2E_STATE=${1:-${PGOP_E2E_STATE:-/tmp/pgop-e2e}}
# shellcheck source=lib.sh
. "$here/lib.sh"
S=$PGOP_E2E_STATE
e2e_check_state_dir "$S"
up_t0=$(date +%s)

step_log=/dev/null
step() { # MSG LOG
	step_log=$2
	e2e_log "$1 (log: $2)"
}
die() {
	e2e_log "FAILED: $*"
	if [ -f "$step_log" ]; then
		echo "----- last 40 lines of $step_log -----" >&2
		tail -n 40 "$step_log" >&2
		echo "-----" >&2
	fi
	# Stop what we started; keep the directory (logs) for inspection.
	PGOP_E2E_KEEP_STATE=1 "$here/cluster-down.sh" "$S" >&2 || true
	exit 1
}
trap 'die "unexpected error at line $LINENO"' ERR

# ---------------------------------------------------------------- preflight
if [ -d "$S" ]; then
	if compgen -G "$S/pids/*.pid" >/dev/null; then
		for f in "$S"/pids/*.pid; do
			if kill -0 "$(cat "$f")" 2>/dev/null; then
				e2e_log "a control plane already runs in $S (pid $(cat "$f")); run cluster-down.sh first"
				exit 1
			fi
		done
	fi
	e2e_log "removing stale state in $S"
	"$here/cluster-down.sh" "$S" >&2
fi
mkdir -p "$S"/{pki,logs,pids,etcd,kcm,scheduler}
chmod 700 "$S"

step "building/locating the control-plane binaries" "$HOME/.cache/pgop/logs/build-k8s.log"
BIN=$(e2e_k8s_bin) || die "build-k8s.sh failed"
export PATH=$BIN:$PATH
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	[ -x "$BIN/$b" ] || die "$BIN/$b is missing"
done
step_log=/dev/null
command -v openssl >/dev/null || die "openssl is required (scripts/setup-deps.sh installs it)"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$PGOP_E2E_ETCD_PORT" "$PGOP_E2E_ETCD_PEER_PORT" "$PGOP_E2E_APISERVER_PORT" \
	"$PGOP_E2E_KCM_PORT" "$PGOP_E2E_SCHEDULER_PORT"; do
	port_free "$p" || die "port $p on 127.0.0.1 is in use (override with PGOP_E2E_*_PORT)"
done

# The service range is only used inside network namespaces we create, but it must not
# shadow a real route of this host.
[[ $PGOP_E2E_SERVICE_CIDR =~ ^([0-9]{1,3}\.){3}0/(1[2-9]|2[0-4])$ ]] ||
	die "PGOP_E2E_SERVICE_CIDR must look like 10.213.0.0/16 (prefix 12..24): $PGOP_E2E_SERVICE_CIDR"
svc_net=${PGOP_E2E_SERVICE_CIDR%/*}
first_svc_ip=${svc_net%.*}.$((${svc_net##*.} + 1))
if ip -4 route get "$first_svc_ip" 2>/dev/null | head -n 1 | grep -qv ' via '; then
	die "service range $PGOP_E2E_SERVICE_CIDR overlaps a directly connected network here"
fi
if ip -4 -o addr 2>/dev/null | awk '{print $4}' | grep -q "^${svc_net%.*.*}\."; then
	die "service range $PGOP_E2E_SERVICE_CIDR overlaps an address of this host"
fi

# The apiserver listens on loopback by default. A node agent whose pods must reach it
# from their network namespaces may set PGOP_E2E_BIND_ADDRESS (e.g. 0.0.0.0) and
# PGOP_E2E_ADVERTISE_ADDRESS / PGOP_E2E_APISERVER_EXTRA_SANS ("IP:10.214.0.1,...").
case $PGOP_E2E_BIND_ADDRESS in
0.0.0.0 | ::) advertise=${PGOP_E2E_ADVERTISE_ADDRESS:-127.0.0.1} ;;
*) advertise=${PGOP_E2E_ADVERTISE_ADDRESS:-$PGOP_E2E_BIND_ADDRESS} ;;
esac

case $PGOP_E2E_BIND_ADDRESS in
0.0.0.0 | 127.0.0.1) api_url=https://127.0.0.1:$PGOP_E2E_APISERVER_PORT ;;
*) api_url=https://$PGOP_E2E_BIND_ADDRESS:$PGOP_E2E_APISERVER_PORT ;;
esac

# ---------------------------------------------------------------- PKI
P=$S/pki
step "generating PKI in $P" "$S/logs/pki.log"
exec 4>>"$S/logs/pki.log"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>&4; }
ca() { # NAME CN
	key "$P/$1.key"
	openssl req -x509 -new -key "$P/$1.key" -subj "/CN=$2" -days 3650 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "$P/$1.crt" 2>&4
}
leaf() { # NAME CA SUBJ EKU [SANS]
	local ext=$P/$1.ext
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$4"
		[ -z "${5:-}" ] || echo "subjectAltName=$5"
	} >"$ext"
	key "$P/$1.key"
	openssl req -new -key "$P/$1.key" -subj "$3" -out "$P/$1.csr" 2>&4
	openssl x509 -req -in "$P/$1.csr" -CA "$P/$2.crt" -CAkey "$P/$2.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$ext" -out "$P/$1.crt" 2>&4
	rm -f "$P/$1.csr" "$ext"
}
ca ca "pgop-e2e-ca"
sans="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
sans+=",DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$first_svc_ip"
[ "$advertise" = 127.0.0.1 ] || sans+=",IP:$advertise"
[ -z "${PGOP_E2E_APISERVER_EXTRA_SANS:-}" ] || sans+=",$PGOP_E2E_APISERVER_EXTRA_SANS"
leaf apiserver ca "/CN=kube-apiserver" serverAuth "$sans"
leaf admin ca "/O=system:masters/CN=pgop-e2e-admin" clientAuth
leaf kcm ca "/CN=system:kube-controller-manager" clientAuth
leaf scheduler ca "/CN=system:kube-scheduler" clientAuth
leaf node ca "/O=system:nodes/CN=system:node:${PGOP_E2E_NODE:-pgop-e2e-node}" clientAuth
leaf apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
ca front-proxy-ca "pgop-e2e-front-proxy-ca"
leaf front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
key "$P/sa.key"
openssl pkey -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>&4
chmod 600 "$P"/*.key

kubeconfig() { # FILE USER CERTNAME
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pgop-e2e
  cluster:
    server: $api_url
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$P/$3.crt")
    client-key-data: $(base64 -w0 "$P/$3.key")
contexts:
- name: pgop-e2e
  context: {cluster: pgop-e2e, user: "$2"}
current-context: pgop-e2e
EOF
	chmod 600 "$1"
}
kubeconfig "$S/kubeconfig" pgop-e2e-admin admin
kubeconfig "$S/kcm/kubeconfig" system:kube-controller-manager kcm
kubeconfig "$S/scheduler/kubeconfig" system:kube-scheduler scheduler
# For a node agent that wants the kubelet's identity (Node authorizer, NodeRestriction).
kubeconfig "$S/node.kubeconfig" "system:node:${PGOP_E2E_NODE:-pgop-e2e-node}" node
exec 4>&-

# ---------------------------------------------------------------- processes
# Each daemon runs in its own session (PID = process group id), marked with
# PGOP_E2E_OWNER so cluster-down.sh can find strays, and recorded in STATE/pids.
start() { # NAME CMD...
	local name=$1
	shift
	PGOP_E2E_OWNER=$S setsid "$@" </dev/null >>"$S/logs/$name.log" 2>&1 &
	echo $! >"$S/pids/$name.pid"
}
alive() { kill -0 "$(cat "$S/pids/$1.pid")" 2>/dev/null; }
wait_up() { # NAME TIMEOUT CMD
	local name=$1 deadline=$(($(date +%s) + $2))
	until eval "$3" >/dev/null 2>&1; do
		alive "$name" || die "$name exited"
		(($(date +%s) < deadline)) || die "$name not healthy after $2s"
		sleep 0.2
	done
}
ccurl() { curl -sf --max-time 3 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "$@"; }

step "starting etcd on 127.0.0.1:$PGOP_E2E_ETCD_PORT" "$S/logs/etcd.log"
etcd_url=http://127.0.0.1:$PGOP_E2E_ETCD_PORT
peer_url=http://127.0.0.1:$PGOP_E2E_ETCD_PEER_PORT
start etcd etcd --name pgop-e2e --data-dir "$S/etcd/data" \
	--listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
	--listen-peer-urls "$peer_url" --initial-advertise-peer-urls "$peer_url" \
	--initial-cluster "pgop-e2e=$peer_url" --initial-cluster-state new \
	--unsafe-no-fsync --log-level warn
wait_up etcd 30 "curl -sf --max-time 2 $etcd_url/health | grep -q '\"health\":\"true\"'"

step "starting kube-apiserver on $api_url" "$S/logs/kube-apiserver.log"
start kube-apiserver kube-apiserver \
	--etcd-servers="$etcd_url" \
	--bind-address="$PGOP_E2E_BIND_ADDRESS" --secure-port="$PGOP_E2E_APISERVER_PORT" \
	--advertise-address="$advertise" \
	--endpoint-reconciler-type=none \
	--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
	--client-ca-file="$P/ca.crt" \
	--service-cluster-ip-range="$PGOP_E2E_SERVICE_CIDR" \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$P/sa.pub" \
	--service-account-signing-key-file="$P/sa.key" \
	--authorization-mode=Node,RBAC \
	--enable-admission-plugins=NodeRestriction \
	--allow-privileged=true \
	--kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
	--kubelet-client-key="$P/apiserver-kubelet-client.key" \
	--kubelet-preferred-address-types=InternalIP,Hostname \
	--requestheader-client-ca-file="$P/front-proxy-ca.crt" \
	--requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User \
	--requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$P/front-proxy-client.crt" \
	--proxy-client-key-file="$P/front-proxy-client.key" \
	--enable-aggregator-routing=true \
	--profiling=false
wait_up kube-apiserver 90 "ccurl $api_url/readyz"

step "starting kube-controller-manager (secure port $PGOP_E2E_KCM_PORT)" "$S/logs/kube-controller-manager.log"
# extra flags: PGOP_E2E_KCM_ARGS (bench/scale.sh's BENCH_KCM_QPS)
# shellcheck disable=SC2086
start kube-controller-manager kube-controller-manager \
	--kubeconfig="$S/kcm/kubeconfig" \
	--authentication-kubeconfig="$S/kcm/kubeconfig" \
	--authorization-kubeconfig="$S/kcm/kubeconfig" \
	--bind-address=127.0.0.1 --secure-port="$PGOP_E2E_KCM_PORT" --cert-dir="$S/kcm" \
	--controllers='*' \
	--use-service-account-credentials=true \
	--root-ca-file="$P/ca.crt" \
	--service-account-private-key-file="$P/sa.key" \
	--cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
	--cluster-name=pgop-e2e \
	--leader-elect=false \
	--node-monitor-period=2s --node-monitor-grace-period=20s \
	--profiling=false ${PGOP_E2E_KCM_ARGS:-}
wait_up kube-controller-manager 60 "curl -skf --max-time 3 https://127.0.0.1:$PGOP_E2E_KCM_PORT/healthz"

step "starting kube-scheduler (secure port $PGOP_E2E_SCHEDULER_PORT)" "$S/logs/kube-scheduler.log"
start kube-scheduler kube-scheduler \
	--kubeconfig="$S/scheduler/kubeconfig" \
	--authentication-kubeconfig="$S/scheduler/kubeconfig" \
	--authorization-kubeconfig="$S/scheduler/kubeconfig" \
	--bind-address=127.0.0.1 --secure-port="$PGOP_E2E_SCHEDULER_PORT" --cert-dir="$S/scheduler" \
	--leader-elect=false \
	--profiling=false
wait_up kube-scheduler 60 "curl -skf --max-time 3 https://127.0.0.1:$PGOP_E2E_SCHEDULER_PORT/readyz"

step "waiting for the default namespace and the default ServiceAccount" "$S/logs/kube-controller-manager.log"
export KUBECONFIG=$S/kubeconfig
wait_up kube-controller-manager 60 "kubectl get serviceaccount default -n default"

cat >"$S/env" <<EOF
# Generated by tests/e2e/cluster-up.sh; source it.
export KUBECONFIG=$S/kubeconfig
export PATH=$BIN:\$PATH
export PGOP_E2E_STATE=$S
export PGOP_E2E_BIN=$BIN
export PGOP_E2E_APISERVER=$api_url
export PGOP_E2E_APISERVER_PORT=$PGOP_E2E_APISERVER_PORT
export PGOP_E2E_ETCD=$etcd_url
export PGOP_E2E_CA=$P/ca.crt
export PGOP_E2E_SERVICE_CIDR=$PGOP_E2E_SERVICE_CIDR
export PGOP_E2E_FIRST_SERVICE_IP=$first_svc_ip
EOF
trap - ERR
e2e_log "control plane ready in $(($(date +%s) - up_t0))s: . $S/env"
