#!/usr/bin/env bash
# e2e-timeout: 600
# Any PostgreSQL major (issue 11 §4): a Cluster whose image is of a major this node does not
# have installed (the e2e host has PostgreSQL 15 only; the node agent maps an image's major
# to /usr/lib/postgresql/<major>/bin and refuses the pod with ErrImagePull otherwise) is
# admitted, and then reports the missing major: phase "Unable to start the PostgreSQL image",
# phaseReason and a Warning Event ImageError naming "PostgreSQL N is not installed on this
# node", not a generic initdb failure or "Setting up primary" forever. The bootstrap Pod
# gets --pg-major N from the image tag.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
cluster_setup mj
cluster_crd
cluster_helm_install

major=
for m in 18 17 16 14 13; do
	[ -x "/usr/lib/postgresql/$m/bin/postgres" ] || { major=$m; break; }
done
[ -n "$major" ] || e2e_fail "every PostgreSQL major 13-18 is installed here: nothing to test"
image=ghcr.io/cloudnative-pg/postgresql:$major

k apply -f - >/dev/null <<YAML
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: $C
spec:
  instances: 1
  imageName: $image
  storage:
    size: 1Gi
YAML

e2e_wait_for "[ \"\$(status phase)\" = 'Unable to start the PostgreSQL image' ]" 180 1 ||
	e2e_fail "phase '$(status phase)' ($(status phaseReason)), want 'Unable to start the PostgreSQL image'"
reason=$(status phaseReason)
e2e_assert_contains "$reason" "ErrImagePull: PostgreSQL $major is not installed on this node (image $image)" "phaseReason"
e2e_assert_contains "$reason" "pod $C-1-initdb: " "phaseReason names the bootstrap Pod"
e2e_wait_for "k get events --field-selector reason=ImageError,involvedObject.name=$C -o jsonpath='{.items[*].message}' | grep -q 'PostgreSQL $major is not installed'" 60 ||
	e2e_fail "no ImageError Event on the Cluster"
e2e_assert_eq Warning "$(k get events --field-selector reason=ImageError,involvedObject.name=$C -o jsonpath='{.items[0].type}')" "Event type"
args=$(k get pod "$C-1-initdb" -o jsonpath='{.spec.containers[0].command}')
e2e_assert_contains "$args" "\"--pg-major\",\"$major\"" "the bootstrap Pod's --pg-major"
e2e_log "PASS: a :$major image on a node without PostgreSQL $major reports the missing major"
