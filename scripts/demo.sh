#!/usr/bin/env bash
# The README's main command: build pgop, start a local Kubernetes control plane
# (tests/e2e/cluster-up.sh: etcd, kube-apiserver, controller-manager, scheduler) and three
# nodes (a node agent each, PGOP_E2E_NODES) that run pods as local processes, install pgop with its Helm chart
# (charts/pgop, certificate.mode=self: pgop makes its own CA and serving certificate and
# registers its webhooks), then show kube-apiserver refusing an invalid Cluster with
# pgop's message, admitting a valid one with pgop's defaults, and the reconciler bringing
# that sample Cluster (a primary and two streaming replicas, samples/cluster-backup-s3.yaml)
# to a healthy state, archiving its WAL to an S3 object store (versitygw as a Pod, TLS with
# its own CA) until the condition ContinuousArchiving is True, then takes a base backup
# (a Backup) and waits until it completed.
#
#   scripts/demo.sh            leave everything running; prints how to use and stop it
#   scripts/demo.sh --down     tear everything down at the end
#
# State lives in $PGOP_DEMO_STATE (default /tmp/pgop-demo). Needs root (network namespaces
# for the pods). The first run builds the upstream binaries (~10 min on 2 cores).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
down=
[ "${1:-}" != "--down" ] || down=1
export PGOP_E2E_STATE=${PGOP_DEMO_STATE:-/tmp/pgop-demo}
build=${PGOP_DEMO_BUILD:-$top/build-demo}
t0=$SECONDS
say() { printf '\n=== [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }

say "dependencies (scripts/setup-deps.sh)"
scripts/setup-deps.sh >/dev/null

say "building pgop and the node agent ($build)"
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C "$build" -j"$(nproc)" pgop pgop-node-agent pgop-s3 >"$build.log" 2>&1 ||
	{ tail -20 "$build.log" >&2; echo "build failed (log: $build.log)" >&2; exit 1; }
export PGOP_BIN=$build/cmd/pgop PGOP_BUILD_DIR=$build

say "upstream Kubernetes binaries (tests/e2e/build-k8s.sh; ~6 min on a cold cache)"
# progress lines (step, elapsed time, log path) go to stderr; stdout is the bin dir
tests/e2e/build-k8s.sh >/dev/null
say "the S3 object store's binary, versitygw (tests/e2e/build-objstore.sh; ~6 min on a cold cache)"
tests/e2e/build-objstore.sh >/dev/null

. tests/e2e/lib.sh
if e2e_ready; then
	say "control plane already running ($PGOP_E2E_STATE)"
else
	say "starting the control plane ($PGOP_E2E_STATE)"
	# prints each step with its elapsed time and log; on failure the step and its log's end
	tests/e2e/cluster-up.sh "$PGOP_E2E_STATE" ||
		{ echo "cluster-up.sh failed: logs in $PGOP_E2E_STATE/logs" >&2; exit 1; }
fi
# shellcheck source=/dev/null
. "$PGOP_E2E_STATE/env"
finish() { [ -z "$down" ] || tests/e2e/cluster-down.sh "$PGOP_E2E_STATE"; }
trap finish EXIT
say "starting the node agents: $PGOP_E2E_NODES nodes (PGOP_E2E_NODES), each its own pod CIDR"
e2e_agent_up
kubectl get nodes -o custom-columns='NAME:.metadata.name,STATUS:.status.conditions[?(@.type=="Ready")].status,INTERNAL-IP:.status.addresses[0].address,POD-CIDR:.spec.podCIDR'

say "helm install pgop charts/pgop -n pgop-system --wait"
t_install=$SECONDS
helm upgrade --install pgop charts/pgop -n pgop-system --create-namespace --wait --timeout 180s
kubectl -n pgop-system get pods,secrets -l app.kubernetes.io/instance=pgop
kubectl -n pgop-system get secrets pgop-pgop-ca pgop-pgop-tls
echo "installed and ready in $((SECONDS - t_install)) s"

kubectl create namespace demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
say "an S3 object store: versitygw as a Pod, Service versitygw.objstore.svc:7070 over TLS (its own CA)"
# shellcheck source=/dev/null
. tests/e2e/objstore_lib.sh
kubectl create namespace objstore --dry-run=client -o yaml | kubectl apply -f - >/dev/null
s3dir=$PGOP_E2E_STATE/demo-objstore
rm -rf "$s3dir" && mkdir -p "$s3dir"
if ! kubectl -n objstore get pod versitygw >/dev/null 2>&1; then
	objstore_pod_up "$s3dir" objstore backups || { echo "versitygw did not start" >&2; exit 1; }
else
	echo "versitygw already running in namespace objstore"
fi
# the sample's Secrets: the store's keys and its CA, in the Cluster's namespace
kubectl -n demo delete secret objstore-credentials objstore-ca --ignore-not-found >/dev/null
objstore_pod_client_secrets demo objstore-credentials objstore-ca ||
	{ echo "cannot create the object store's Secrets" >&2; exit 1; }
say "an invalid Cluster: kube-apiserver refuses it with pgop's message"
bad=$(mktemp)
cat >"$bad" <<'EOF'
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: broken, namespace: demo}
spec:
  instances: 3
  storage: {size: 1Gi}
  postgresql:
    parameters: {listen_addresses: "*", wal_level: minimal}
EOF
cat "$bad"
if kubectl apply -f "$bad"; then
	echo "unexpectedly admitted" >&2
	exit 1
fi
rm -f "$bad"

say "a valid Cluster (samples/cluster-backup-s3.yaml: 3 instances, WAL archived to the store)"
sample=${PGOP_DEMO_SAMPLE:-$top/samples/cluster-backup-s3.yaml}
kubectl -n demo apply -f "$sample"
name=$(kubectl -n demo get -f "$sample" -o jsonpath='{.metadata.name}')
kubectl -n demo get cluster "$name" -o jsonpath='{"imageName: "}{.spec.imageName}{"\nbootstrap: "}{.spec.bootstrap}{"\n"}'

say "the reconciler brings $name up: bootstrap Pods, then instance Pods, PVCs, Services, Secrets"
t_create=$SECONDS
want=$(kubectl -n demo get cluster "$name" -o jsonpath='{.spec.instances}')
until [ "$(kubectl -n demo get cluster "$name" -o jsonpath='{.status.phase}/{.status.readyInstances}')" = "Cluster in healthy state/$want" ]; do
	if [ $((SECONDS - t_create)) -gt 600 ]; then
		echo "Cluster $name is not healthy after 600 s:" >&2
		kubectl -n demo get cluster "$name" -o jsonpath='{.status.phase}: {.status.phaseReason}{"\n"}' >&2
		exit 1
	fi
	printf '  [%4ds] %s\n' "$((SECONDS - t_create))" \
		"$(kubectl -n demo get cluster "$name" -o jsonpath='{.status.phase} ({.status.readyInstances}/{.spec.instances} ready)')"
	sleep 5
done
echo "healthy in $((SECONDS - t_create)) s"
kubectl -n demo get clusters
kubectl -n demo get pods -o wide -l cnpg.io/cluster="$name" # NODE: where the scheduler put each
kubectl -n demo get svc,pvc,secrets -l cnpg.io/cluster="$name"

if [ -n "$(kubectl -n demo get cluster "$name" -o jsonpath='{.spec.backup.barmanObjectStore.destinationPath}')" ]; then
	say "continuous WAL archiving: a WAL switch on the primary, then condition ContinuousArchiving"
	primary=$(kubectl -n demo get cluster "$name" -o jsonpath='{.status.currentPrimary}')
	"$PGOP_BUILD_DIR/tests/e2e/agent/pgop-node-agent" --state-dir "$PGOP_E2E_STATE/agent" exec \
		"demo/$primary" -c postgres -- psql -h /controller/run -U postgres -d postgres -Atc \
		"select pg_walfile_name(pg_switch_wal())" || true
	t_arch=$SECONDS
	until [ "$(kubectl -n demo get cluster "$name" -o jsonpath='{.status.conditions[?(@.type=="ContinuousArchiving")].status}')" = True ]; do
		if [ $((SECONDS - t_arch)) -gt 120 ]; then
			echo "ContinuousArchiving is not True after 120 s:" >&2
			kubectl -n demo get cluster "$name" -o jsonpath='{.status.conditions}' >&2
			exit 1
		fi
		sleep 2
	done
	kubectl -n demo get cluster "$name" -o jsonpath='{range .status.conditions[?(@.type=="ContinuousArchiving")]}{.type}={.status} ({.reason}): {.message}{"\n"}{end}'
	objstore_pod_s3 "$PGOP_BUILD_DIR/tests/e2e/tools/pgop-s3" list pgop/ 2>/dev/null | head -5 || true

	say "a base backup (kind Backup): taken on a standby, streamed to the store"
	kubectl -n demo apply -f - <<-EOB
	apiVersion: postgresql.cnpg.io/v1
	kind: Backup
	metadata: {name: $name-demo}
	spec: {cluster: {name: $name}}
	EOB
	t_bk=$SECONDS
	until [ "$(kubectl -n demo get backup "$name-demo" -o jsonpath='{.status.phase}')" = completed ]; do
		if [ "$(kubectl -n demo get backup "$name-demo" -o jsonpath='{.status.phase}')" = failed ] ||
			[ $((SECONDS - t_bk)) -gt 300 ]; then
			echo "the Backup did not complete:" >&2
			kubectl -n demo get backup "$name-demo" -o jsonpath='{.status}' >&2
			exit 1
		fi
		sleep 2
	done
	echo "completed in $((SECONDS - t_bk)) s"
	kubectl -n demo get backups
	kubectl -n demo get backup "$name-demo" -o jsonpath='{"backupId "}{.status.backupId}{" on "}{.status.instanceID.podName}{", WAL "}{.status.beginWal}{".."}{.status.endWal}{"\n"}'
fi

say "helm test pgop (pgop selftest through the API server)"
helm test pgop -n pgop-system | grep -E "^(TEST SUITE|Phase)" | awk '!seen[$0]++' || true
kubectl -n pgop-system logs pgop-pgop-selftest || true

say "live status through plain kubectl (aggregated API live.postgresql.cnpg.io)"
for _ in $(seq 60); do
	[ "$(kubectl get apiservice v1.live.postgresql.cnpg.io -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ] && break
	sleep 1
done
kubectl -n demo get clusters.postgresql
kubectl -n demo get clusters.live
kubectl -n demo get instances.live -l cnpg.io/cluster="$name" -o wide

cat <<EOF

pgop is running in $PGOP_E2E_STATE:
  . $PGOP_E2E_STATE/env && kubectl get clusters -A
  kubectl get clusters.live -A; kubectl get instances.live -A -o wide   # live, from every instance
  kubectl -n demo exec -it $name-1 -- psql                               # a psql session in an instance
  tests/e2e/cluster-down.sh $PGOP_E2E_STATE      # stop and remove everything
EOF
