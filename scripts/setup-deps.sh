#!/usr/bin/env bash
# Install (when missing) the Debian packages pgop needs to build, test and run
# its local control plane. Idempotent: a machine that has them all is left alone.
set -euo pipefail

pkgs=(
	build-essential cmake pkg-config git curl ca-certificates
	libmicrohttpd-dev libgnutls28-dev gnutls-bin libcurl4-gnutls-dev libjson-c-dev
	libpq-dev libyaml-dev libcmocka-dev openssl
	postgresql-15 postgresql-client-15
	clang libclang-rt-14-dev
	iproute2 nftables util-linux procps psmisc
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
# Go builds the upstream Kubernetes binaries for the e2e tests only.
command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && export PATH=/usr/local/go/bin:$PATH; } || true
command -v go >/dev/null || echo "setup-deps: warning: go not found; e2e tests need it to build kube-apiserver" >&2
exit 0
