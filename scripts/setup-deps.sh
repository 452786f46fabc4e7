#!/usr/bin/env bash
# Install (when missing) everything pgop needs to build, test and run its local control
# plane: the Debian packages (the tests call jq, curl, openssl, certtool, psql,
# pg_basebackup, setpriv, nsenter, unshare, flock, ip, ss, nft, timeout; bench/backup.sh
# /usr/bin/time and pgbench, which comes with postgresql-15) and, when the
# upstream Kubernetes binaries or the S3 store are not cached yet, a Go toolchain to build
# them (tests/e2e/build-k8s.sh, tests/e2e/build-objstore.sh). Idempotent: a machine that has them all is left alone.
# Exits non-zero when something cannot be installed (a missing prerequisite is an error
# here, never a skipped test later).
set -euo pipefail

pkgs=(
	build-essential cmake pkg-config git curl ca-certificates
	libmicrohttpd-dev libgnutls28-dev gnutls-bin libcurl4-gnutls-dev libjson-c-dev
	libpq-dev libyaml-dev libcmocka-dev libexpat1-dev openssl
	zlib1g-dev libdeflate-dev libbz2-dev liblzma-dev liblz4-dev libzstd-dev libarchive-dev
	postgresql-15 postgresql-client-15
	clang libclang-rt-14-dev
	iproute2 nftables util-linux procps psmisc coreutils jq tar time
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup-deps: installing ${missing[*]}" >&2
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for t in jq curl openssl certtool psql pg_basebackup setpriv nsenter unshare flock ip ss nft timeout; do
	command -v "$t" >/dev/null || { echo "setup-deps: $t is still missing after installing" >&2; exit 1; }
done

# Go builds the upstream Kubernetes binaries for the e2e tests only (Debian 12's golang
# is 1.19; tests/e2e/k8s/go.mod needs 1.24): needed only while ~/.cache/pgop is cold.
top=$(cd "$(dirname "$0")/.." && pwd)
GO_VERSION=${PGOP_GO_VERSION:-1.24.6}
k8s_cached() {
	local v
	v=$(sed -n 's/^K8S_VERSION=//p; s/^ETCD_VERSION=//p; s/^HELM_VERSION=//p' "$top/tests/e2e/build-k8s.sh" | paste -sd' ')
	# shellcheck disable=SC2086
	set -- $v
	local d=${PGOP_CACHE:-$HOME/.cache/pgop}/bin-k8s-$1-etcd-$2-helm-$3 b
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd helm; do
		[ -x "$d/$b" ] || return 1
	done
}
objstore_cached() {
	local v
	v=$(sed -n 's/^VERSITYGW_VERSION=//p' "$top/tests/e2e/build-objstore.sh")
	[ -x "${PGOP_CACHE:-$HOME/.cache/pgop}/bin-versitygw-$v/versitygw" ]
}
[ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH
if ! command -v go >/dev/null && ! { k8s_cached && objstore_cached; }; then
	arch=$(dpkg --print-architecture)
	tgz=go$GO_VERSION.linux-$arch.tar.gz
	echo "setup-deps: installing Go $GO_VERSION into /usr/local/go (builds the e2e Kubernetes binaries)" >&2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	curl -fsSL --retry 3 -o "$tmp/$tgz" "https://dl.google.com/go/$tgz" &&
		curl -fsSL --retry 3 -o "$tmp/$tgz.sha256" "https://dl.google.com/go/$tgz.sha256" ||
		{ echo "setup-deps: could not download $tgz" >&2; exit 1; }
	echo "$(cat "$tmp/$tgz.sha256")  $tmp/$tgz" | sha256sum -c --quiet - ||
		{ echo "setup-deps: checksum mismatch for $tgz" >&2; exit 1; }
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO rm -rf /usr/local/go && $SUDO tar -C /usr/local -xzf "$tmp/$tgz" ||
		{ echo "setup-deps: could not unpack $tgz into /usr/local" >&2; exit 1; }
fi
exit 0
