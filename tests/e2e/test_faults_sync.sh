#!/usr/bin/env bash
# e2e-timeout: 1500
# The fault suite, synchronous (issue 9): the sample Cluster (3 instances, ANY 1
# synchronous) under a -rw writer and a pinned writer that record every acknowledged
# COMMIT, with pgop installed by its Helm chart, through each fault in turn (faults_lib.sh):
# a planned switchover, the primary Pod deleted, kill -9 of the primary's postmaster and of
# its instance manager, a 2 s blip with failoverDelay 5, a 30 s API-server outage, a 60 s
# partition of the primary, the operator killed in the middle of a failover, a rolling
# restart. Every scenario: 0 acknowledged COMMITs lost, never two primaries, nothing left
# behind; no failover for the blip and the outage, no postgres restart in the outage.
# FAULTS_SCENARIOS (a list) and FAULTS_RUNS (default 1) choose what runs (bench/failover.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
# shellcheck source=faults_lib.sh
. "$(dirname "$0")/faults_lib.sh"
faults_suite fs 1 "switchover pod_delete postmaster_kill manager_kill blip api_outage partition operator_kill rolling_restart"
