#!/usr/bin/env bash
# Build (once per machine) the upstream binaries the e2e tests run against:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, helm.
# They are cached outside the repository, in $PGOP_CACHE (default
# ~/.cache/pgop), keyed by version, so a warm cache costs nothing.
#
# Usage: tests/e2e/build-k8s.sh            prints the bin directory on stdout
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.34.1
ETCD_VERSION=v3.5.21
HELM_VERSION=v3.19.0
cache=${PGOP_CACHE:-$HOME/.cache/pgop}
bin="$cache/bin-k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION"
mkdir -p "$bin" "$cache/logs"
log="$cache/logs/build-k8s.log"

step() { printf '[build-k8s %4ds] %s (log: %s)\n' "$SECONDS" "$*" "$log" >&2; }
fail() { printf '[build-k8s] FAILED: %s\n' "$*" >&2; tail -n 30 "$log" >&2; exit 1; }

all_built() {
	local b
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd helm; do
		[ -x "$bin/$b" ] || return 1
	done
}
if all_built; then # warm cache: no Go needed, no lock
	echo "$bin"
	exit 0
fi
# One build at a time per cache (several engineers or runners may start one).
exec 9>"$cache/build-k8s.lock"
if ! flock -n 9; then
	step "waiting for another build-k8s.sh to finish"
	flock 9
fi
if all_built; then
	step "done (built by another run)"
	echo "$bin"
	exit 0
fi

[ -x /usr/local/go/bin/go ] && ! command -v go >/dev/null && export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || fail "go is required to build the upstream Kubernetes binaries"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
kver="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	[ -x "$bin/$cmd" ] && continue
	step "building $cmd $K8S_VERSION"
	(cd "$here/k8s" && go build -trimpath -ldflags "-s -w $kver" -o "$bin/$cmd.tmp" \
		"k8s.io/kubernetes/cmd/$cmd") >>"$log" 2>&1 || fail "go build $cmd"
	mv "$bin/$cmd.tmp" "$bin/$cmd"
done

if [ ! -x "$bin/etcd" ]; then
	step "building etcd $ETCD_VERSION"
	(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" \
		go.etcd.io/etcd/server/v3) >>"$log" 2>&1 || fail "go build etcd"
	mv "$bin/etcd.tmp" "$bin/etcd"
fi

if [ ! -x "$bin/helm" ]; then
	step "building helm $HELM_VERSION"
	GOBIN="$bin" go install -trimpath -ldflags "-s -w \
		-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
		-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
		-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor" \
		"helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >>"$log" 2>&1 || fail "go install helm"
fi
step "done"
echo "$bin"
