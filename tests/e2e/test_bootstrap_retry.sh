#!/usr/bin/env bash
# e2e-timeout: 900
# A failed bootstrap can be retried (issue 11 §4): the `<c>-1-initdb` bootstrap Pod's
# process is killed (SIGKILL) after initdb, while its temporary postmaster creates the roles
# and the database, leaving PG_VERSION and a half-made data directory behind. The Pod's
# retry (restartPolicy OnFailure: its container restarts) must remove those leftovers (its
# log says so), bootstrap again and the Cluster must become healthy with the application
# database; the bootstrap Pod is deleted once the instance runs. Before, every retry failed with EEXIST
# ("already holds a data directory") and the Cluster was unrecoverable. The controller is
# the Helm-installed one (chart defaults).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup br
cluster_crd
cluster_helm_install

k apply -f - >/dev/null <<YAML
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $C
spec:
  instances: 1
  storage:
    size: 1Gi
YAML

e2e_wait_for "[ -n \"\$(k get pvc $C-1 -o jsonpath='{.spec.volumeName}')\" ]" 120 0.2 ||
	e2e_fail "no bound PVC $C-1"
# the volume's directory on whichever node holds it (the PV's hostPath)
pgdata=$(kubectl get pv "$(k get pvc "$C-1" -o jsonpath='{.spec.volumeName}')" -o jsonpath='{.spec.hostPath.path}')/pgdata

# initdb is done once its temporary postmaster runs (postmaster.pid); kill the manager then.
pid=
deadline=$(($(date +%s) + 300))
while [ -z "$pid" ]; do
	[ "$(date +%s)" -lt "$deadline" ] || e2e_fail "the bootstrap Pod never started its postmaster"
	if [ -f "$pgdata/postmaster.pid" ] && [ -f "$pgdata/PG_VERSION" ]; then
		pid=$(pgrep -f "instance init --cluster-name $C --namespace $ns " | head -n1 || true)
	fi
	[ -n "$pid" ] || sleep 0.05
done
kill -KILL "$pid"
e2e_log "killed the init process $pid after initdb"
sleep 1
[ -f "$pgdata/PG_VERSION" ] || e2e_fail "no PG_VERSION left behind: the kill came too early"

# the container restarts in place: one failed attempt
e2e_wait_for "[ \"\$(k get pod $C-1-initdb -o jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null)\" = 1 ]" 120 0.2 ||
	e2e_fail "the bootstrap Pod's container did not restart once: $(k get pod "$C-1-initdb" -o jsonpath='{.status}' 2>&1)"
wait_healthy 1 600
# the retry said what it did (node agent container logs: <ns>_<pod>_<container>.log)
grep -h "removing the leftovers of a failed bootstrap attempt" "$AGENT_STATE"/logs/"$ns"_"$C"-1-initdb_postgres.log >/dev/null ||
	e2e_fail "no retry log line about removing the leftovers"
e2e_wait_for "! k get pod $C-1-initdb >/dev/null 2>&1" 60 0.5 ||
	e2e_fail "the bootstrap Pod $C-1-initdb is still there with its instance running"
e2e_assert_eq "" "$(k get jobs -o name 2>/dev/null)" "Jobs (kube-controller-manager is not involved)"
e2e_assert_eq app "$(sql "$C-1" "select datname from pg_database where datname = 'app'")" "application database"
e2e_assert_eq "$C-1" "$(cat "$pgdata/pgop-bootstrapped")" "bootstrap marker"
e2e_log "PASS: a bootstrap Pod killed after initdb succeeded on its retry, and went"
