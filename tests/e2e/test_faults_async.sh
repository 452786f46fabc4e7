#!/usr/bin/env bash
# e2e-timeout: 900
# The fault suite, asynchronous (issue 9): the sample Cluster without synchronous
# replication, under the same writers (faults_lib.sh): a 60 s partition of the primary (the
# isolated primary acknowledges nothing after T_fence; what it acknowledged before is the
# bounded loss, printed) and kill -9 of the primary's postmaster. Never two primaries,
# nothing left behind. FAULTS_SCENARIOS / FAULTS_RUNS as in test_faults_sync.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "${1:-}" ] || PGOP_BIN=$1
e2e_up
e2e_agent_up
# shellcheck source=cluster_lib.sh
. "$(dirname "$0")/cluster_lib.sh"
# shellcheck source=faults_lib.sh
. "$(dirname "$0")/faults_lib.sh"
faults_suite fa 0 "partition postmaster_kill"
