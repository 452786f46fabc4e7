# shellcheck shell=bash
# The fault suite's scenarios (tests/e2e/test_faults_*.sh, bench/failover.sh), issue 9:
# a Cluster under writers that record every acknowledged COMMIT, one fault at a time, then
# the ledger compared with the primary's table. Source after lib.sh, e2e_up, e2e_agent_up
# and cluster_lib.sh:
#
#   cluster_setup PREFIX; cluster_crd; cluster_helm_install
#   faults_setup SYNC              # SYNC 1: the sample (ANY 1 synchronous), 0: asynchronous;
#                                  # applies it, waits healthy, starts the instruments
#   faults_run SCENARIO...         # each: inject, recover, check, print METRIC lines
#
# Instruments (tests/e2e/tools, pgop-writer; docs/internals/e2e.md "Fault suite"):
#   - the -rw writer: in a client Pod's network namespace (nsenter), through the -rw
#     Service's ClusterIP, so it follows the endpoints as an application does;
#   - the pinned writer: on the host, connected to the primary's Pod IP before the fault
#     (an application already connected to the old primary), one table per scenario;
#   - the poller: every instance every 200 ms from the host, reports two primaries at once.
# A partition (`pgop-node-agent partition`) is a node partition: the Pod cannot reach the
# API server or any other Pod, nor they it, while its node (the agent's probes, the host's
# pinned writer and poller) still can.
#
# Per scenario it prints METRIC lines named fault_<sync|async>_<scenario>_<what>:
#   detect_ms   fault -> targetPrimary names another instance (failover scenarios)
#   outage_ms   the longest gap between two acknowledged COMMITs of the -rw writer
#   healthy_s   fault -> the Cluster healthy with every instance ready again
#   lost        acknowledged COMMITs (both writers) missing from the primary's table
#   leftover    objects beyond the Cluster's own (PVCs, Pods: a new serial, a bootstrap Pod)
# and asserts: never two primaries; synchronous: 0 lost; the old primary rejoins; no
# failover where none is due (blip, API-server outage), no postgres restart in an outage.

WRITER=${PGOP_WRITER:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-writer}
[ -x "$WRITER" ] || e2e_fail "pgop-writer not built: $WRITER (tests/e2e/run.sh builds it)"
# api/fence.h API_FENCE_MS: an unproven primary stops within it (read from the header: one place)
API_FENCE_MS=$(awk '$1 == "#define" && $2 == "API_FENCE_MS" { print $3 }' "$E2E_DIR/../../api/fence.h")
[ -n "$API_FENCE_MS" ] || e2e_fail "API_FENCE_MS not found in api/fence.h"
FAULTS_PARTITION_S=${FAULTS_PARTITION_S:-60}
FAULTS_OUTAGE_S=${FAULTS_OUTAGE_S:-30}
faults_mode=
faults_pids=()
pin_pid=
watch_pid=
scen_n=0

now_ms() { echo $(($(date +%s%N) / 1000000)); }
pod_ip() { k get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
im_pid() { cat "$AGENT_STATE/run/${ns}_$1_postgres.pid" 2>/dev/null; }
postmaster_pid() { # POD: the postmaster, child of the instance manager
	local im
	im=$(im_pid "$1") || return 1
	pgrep -P "$im" -x postgres | head -n 1
}
app_sql() { # POD SQL: as postgres in the app database (the writers' tables)
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$1" -c postgres -- \
		psql -h /controller/run -U postgres -d app -Atc "$2"
}
timeline() { sql "$1" "select timeline_id from pg_control_checkpoint()" 2>/dev/null; }
started_at() { sql "$1" "select pg_postmaster_start_time()" 2>/dev/null; }

faults_cleanup() {
	local rc=$? p
	set +e # a trap under errexit: every step runs
	for p in "${faults_pids[@]}" $pin_pid $watch_pid; do kill -TERM "$p" 2>/dev/null; done
	for p in "${faults_pids[@]}" $pin_pid $watch_pid; do wait "$p" 2>/dev/null; done
	if [ -n "${opns:-}" ]; then # a test that stopped mid-fault
		kill -CONT "$(cat "$PGOP_E2E_STATE/pids/kube-apiserver.pid" 2>/dev/null)" 2>/dev/null
		for p in $(k get pods -o name 2>/dev/null); do
			"$AGENT" --state-dir "$AGENT_STATE" partition "$ns/${p#pod/}" off >/dev/null 2>&1
		done
	fi
	# FAULTS_KEEP=1: the ledgers and the instance logs kept when the test passes too
	if [ "${FAULTS_KEEP:-0}" = 1 ] && [ -d "${tmp:-}/faults" ]; then
		cp -r "$tmp/faults" "${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}/faults-$ns" 2>/dev/null
		cp "$AGENT_STATE"/logs/"${ns}"_* "$AGENT_STATE"/logs/"${opns:-none}"_* \
			"${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}/faults-$ns/" 2>/dev/null
	fi
	if [ "$rc" != 0 ] && [ -d "${tmp:-}/faults" ]; then
		cp -r "$tmp/faults" "${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}/faults-$ns" 2>/dev/null &&
			e2e_log "ledgers and instrument logs kept in ${PGOP_E2E_LOGS:-/tmp/pgop-e2e-logs}/faults-$ns"
		e2e_log "--- poller (tail)"
		tail -n 20 "$tmp/faults/poll.out" >&2 || true
		e2e_log "--- writer logs (tail)"
		tail -n 10 "$tmp"/faults/*.log >&2 || true
	fi
	(exit "$rc")
	cluster_cleanup
}

# faults_setup SYNC: the Cluster, its app credentials, the client Pod, the -rw writer, the
# poller and the targets file it follows (refreshed every second).
faults_setup() {
	faults_mode=$([ "$1" = 1 ] && echo sync || echo async)
	trap faults_cleanup EXIT
	mkdir -p "$tmp/faults"
	# smartShutdownTimeout 10 (CloudNativePG's default is 180): the poller keeps a session
	# on every instance, so each stop of a rolling restart would wait for it 180 s
	if [ "$1" = 1 ]; then
		cat "$SAMPLES/cluster-example.yaml"
	else
		sed '/^  postgresql:/,/^$/d' "$SAMPLES/cluster-example.yaml"
	fi | sed 's/^  instances: 3$/&\n  smartShutdownTimeout: 10/' | k apply -f - >/dev/null
	e2e_assert_eq 10 "$(k get cluster "$C" -o jsonpath='{.spec.smartShutdownTimeout}')" "smartShutdownTimeout"
	# FAULTS_CLIENT_NODE: the client Pod (the -rw writer's network) bound to that node
	k run client --image=busybox --restart=Never \
		${FAULTS_CLIENT_NODE:+--overrides="{\"apiVersion\":\"v1\",\"spec\":{\"nodeName\":\"$FAULTS_CLIENT_NODE\"}}"} \
		--command -- sh -c 'exec sleep 86400' >/dev/null
	wait_healthy 3 600
	# synchronous: the replicas a dataDurability-required failover may promote are kept in
	# the Cluster's status (they survive an operator restart, scen_operator_kill)
	if [ "$1" = 1 ]; then
		e2e_wait_for '[ -n "$(status synchronousStandbys)" ]' 60 1 ||
			e2e_fail "status.synchronousStandbys not written"
		e2e_log "status.synchronousStandbys: $(status synchronousStandbys)"
	fi
	e2e_wait_for "[ \"\$(kubectl -n $ns get pod client -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
		e2e_fail "client pod not Running"
	PGUSER=$(k get secret "$C-app" -o jsonpath='{.data.username}' | base64 -d)
	PGPASSWORD=$(k get secret "$C-app" -o jsonpath='{.data.password}' | base64 -d)
	export PGUSER PGPASSWORD PGDATABASE=app
	local rwip cpid
	rwip=$(k get svc "$C-rw" -o jsonpath='{.spec.clusterIP}')
	cpid=$(cat "$AGENT_STATE/run/${ns}_client_client.pid") || e2e_fail "no pid for the client pod"
	faults_targets_loop &
	watch_pid=$!
	nsenter --net="/proc/$cpid/ns/net" "$WRITER" write --conninfo "host=$rwip" --table ledger_rw \
		--ledger "$tmp/faults/rw.ledger" --uncertain "$tmp/faults/rw.uncertain" \
		</dev/null >"$tmp/faults/rw.log" 2>&1 &
	faults_pids+=($!)
	"$WRITER" poll --targets "$tmp/faults/targets" --out "$tmp/faults/poll.out" \
		</dev/null >"$tmp/faults/poll.log" 2>&1 &
	faults_pids+=($!)
	e2e_wait_for "[ -s '$tmp/faults/rw.ledger' ]" 30 || e2e_fail "the -rw writer acknowledged nothing"
	e2e_log "faults ($faults_mode): writers and poller running (-rw $rwip)"
}

faults_targets_loop() {
	local out
	# TERM ends the loop after its current command: killed outright, the subshell left its
	# `sleep 1` behind, which the runner counts as a process left running (a CI failure)
	trap 'exit 0' TERM
	while :; do
		out=$(kubectl -n "$ns" get pods -l "cnpg.io/cluster=$C" \
			-o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' 2>/dev/null |
			awk 'NF == 2') && [ -n "$out" ] && { echo "$out" >"$tmp/faults/targets.new" &&
			mv "$tmp/faults/targets.new" "$tmp/faults/targets"; }
		sleep 1
	done
}

# pin_start POD: the pinned writer, on the host, connected to POD's IP, own table and ids.
pin_start() {
	scen_n=$((scen_n + 1))
	pin_table=ledger_pin_$scen_n
	"$WRITER" write --conninfo "host=$(pod_ip "$1")" --table "$pin_table" \
		--start-id $((scen_n * 10000000)) --ledger "$tmp/faults/$pin_table.ledger" \
		--uncertain "$tmp/faults/$pin_table.uncertain" </dev/null >"$tmp/faults/$pin_table.log" 2>&1 &
	pin_pid=$!
	e2e_wait_for "[ -s '$tmp/faults/$pin_table.ledger' ]" 30 || e2e_fail "the pinned writer acknowledged nothing"
}
pin_stop() {
	[ -n "$pin_pid" ] || return 0
	kill -TERM "$pin_pid" 2>/dev/null
	wait "$pin_pid" 2>/dev/null || true
	pin_pid=
}

# lost TABLE LEDGER: acknowledged ids (acked before the query began) not in the primary's
# TABLE.
lost() {
	local p tq
	p=$(status currentPrimary)
	tq=$(now_ms)
	[ "$(app_sql "$p" "select to_regclass('$1') is not null")" = t ] || { wc -l <"$2"; return; }
	app_sql "$p" "copy (select id from $1) to stdout" | sort >"$tmp/faults/have"
	awk -v tq="$tq" '$2 < tq { print $1 }' "$2" | sort | comm -23 - "$tmp/faults/have" >"$tmp/faults/lost.$1"
	wc -l <"$tmp/faults/lost.$1"
}
# lost_ranges TABLE LEDGER: the lost ids as "first-last server (n)" runs, for a failure message.
lost_ranges() {
	awk 'NR == FNR { l[$1] = 1; next } ($1 in l) {
		if ($3 != srv || $1 != last + 1) { if (n) printf "%s-%s %s (%d, %s); ", first, last, srv, n, t; first = $1; srv = $3; n = 0; t = $2 }
		last = $1; n++ } END { if (n) printf "%s-%s %s (%d, %s)", first, last, srv, n, t }' "$tmp/faults/lost.$1" "$2"
}
# outage T0: the longest gap (ms) between consecutive -rw acknowledgements from the last one
# before T0 to now.
outage() { # T0 [LEDGER]: the longest gap between two acknowledged COMMITs from T0 (ms)
	awk -v t0="$1" '{ if ($2 < t0) { prev = $2; next } if (prev && $2 - prev > max) max = $2 - prev; prev = $2 }
		END { print max + 0 }' "${2:-$tmp/faults/rw.ledger}"
}
two_primaries() { grep -c TWO_PRIMARIES "$tmp/faults/poll.out" || true; }
# leftover: PVCs and Pods beyond the Cluster's instance Pods (whatever their serials: a
# scenario may rebuild one) and the client Pod (bootstrap Pods go once their instance runs)
leftover() {
	local inst pvc pods
	inst=$(k get pods -l "cnpg.io/cluster=$C,cnpg.io/podRole=instance" \
		-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null)
	[ -n "$inst" ] || inst=-
	pvc=$(k get pvc -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null |
		grep -v -x -F -e "$inst" | grep -c . || true)
	pods=$(k get pods -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null |
		grep -v -x -F -e "$inst" -e client | grep -c . || true)
	echo $((pvc + pods))
}

# wait_new_primary OLD T0 TIMEOUT: until targetPrimary names another instance; sets
# detect_ms (from T0).
wait_new_primary() {
	local deadline=$(($(date +%s) + $3)) t
	while :; do
		t=$(status targetPrimary)
		if [ -n "$t" ] && [ "$t" != "$1" ]; then
			detect_ms=$(($(now_ms) - $2))
			return 0
		fi
		(($(date +%s) < deadline)) || e2e_fail "no failover from $1 after $3 s (phase '$(status phase)')"
		sleep 0.2
	done
}

# wait_promoted OLD T0: until currentPrimary names another instance (promoted_ms) and -rw's
# endpoints are that instance alone (rw_ms), both from T0.
wait_promoted() {
	local deadline=$(($(date +%s) + 180)) cur ip eps got=
	while :; do
		cur=$(status currentPrimary)
		if [ -n "$cur" ] && [ "$cur" != "$1" ]; then
			[ -n "$got" ] || { m promoted_ms $(($(now_ms) - $2)); got=1; }
			ip=$(pod_ip "$cur")
			eps=$(k get endpointslices -l "kubernetes.io/service-name=$C-rw" -o jsonpath='{.items[*].endpoints[*].addresses[*]}' 2>/dev/null)
			if [ "$eps" = "$ip" ]; then
				m rw_ms $(($(now_ms) - $2))
				return 0
			fi
		fi
		(($(date +%s) < deadline)) || e2e_fail "$scen: no promotion from $1 with -rw on it (currentPrimary '$cur', -rw '${eps:-}')"
		sleep 0.2
	done
}

m() { echo "METRIC fault_${faults_mode}_${scen}_$1=$2"; }

# finish T0 OLD EXPECT: wait healthy, then the checks and the figures. EXPECT is failover
# (currentPrimary changed, OLD rejoined as a replica), same (no failover), or any.
finish() {
	local t0=$1 old=$2 expect=$3 now cur l1 l2
	# a status written before the fault was noticed still says healthy: for a fault that
	# may fail over, first see it noticed (not healthy, or another primary), for up to 20 s
	[ "$expect" = same ] || [ -n "${noticed:-}" ] ||
		e2e_wait_for "! healthy_with 3 || [ \"\$(status currentPrimary)\" != '$old' ]" 20 0.2 ||
		e2e_log "$scen: the Cluster never looked unhealthy"
	noticed=
	wait_healthy 3 420
	m healthy_s $((($(now_ms) - t0) / 1000))
	pin_stop
	# the -rw writer must be writing again
	now=$(now_ms)
	e2e_wait_for "awk -v t=$now '\$2 > t { f = 1 } END { exit !f }' '$tmp/faults/rw.ledger'" 60 ||
		e2e_fail "$scen: the -rw writer did not resume"
	cur=$(status currentPrimary)
	case $expect in
	failover)
		e2e_assert_ne "$old" "$cur" "$scen: currentPrimary after a failover"
		e2e_assert_eq replica "$(k get pod "$old" -o jsonpath='{.metadata.labels.cnpg\.io/instanceRole}')" "$scen: $old rejoined as a replica"
		e2e_assert_eq f "$(sql "$old" 'select not pg_is_in_recovery()')" "$scen: $old is in recovery"
		;;
	same) e2e_assert_eq "$old" "$cur" "$scen: no failover" ;;
	esac
	[ "$cur" = "$old" ] && m failover 0 || m failover 1
	m outage_ms "$(outage "$t0")"
	l1=$(lost ledger_rw "$tmp/faults/rw.ledger")
	l2=0
	[ -n "${pin_table:-}" ] && l2=$(lost "$pin_table" "$tmp/faults/$pin_table.ledger")
	m lost $((l1 + l2))
	m leftover "$(leftover)"
	e2e_assert_eq 0 "$(two_primaries)" "$scen: two primaries at once (poller: $(grep TWO_PRIMARIES "$tmp/faults/poll.out" | head -n 3))"
	if [ $((l1 + l2)) != 0 ]; then
		e2e_log "$scen: lost -rw: $(lost_ranges ledger_rw "$tmp/faults/rw.ledger")"
		[ -z "${pin_table:-}" ] || e2e_log "$scen: lost pinned: $(lost_ranges "$pin_table" "$tmp/faults/$pin_table.ledger")"
		e2e_log "$scen: the primary $cur has ids $(head -n 1 "$tmp/faults/have")..$(sort -n "$tmp/faults/have" | tail -n 1) ($(wc -l <"$tmp/faults/have") rows)"
	fi
	[ "$faults_mode" = async ] || e2e_assert_eq 0 $((l1 + l2)) "$scen: acknowledged COMMITs lost (-rw $l1, pinned $l2)"
	e2e_assert_eq 0 "$(leftover)" "$scen: objects left behind ($(k get pvc,pods --no-headers 2>&1 | awk '{print $1}' | tr '\n' ' '))"
	e2e_log "$scen: done (primary $old -> $cur, lost -rw $l1 pinned $l2)"
	pin_table=
}

# ---- scenarios: scen_NAME, each from a healthy Cluster back to a healthy Cluster --------

# kill_primary PID_OF WHAT: kill -9 of the primary's process that PID_OF POD names; the
# instance manager restarts it in place (or its container restarts) or a replica takes over.
kill_primary() {
	local p t0 st
	p=$(status currentPrimary)
	st=$(started_at "$p")
	pin_start "$p"
	t0=$(now_ms)
	kill -9 "$("$1" "$p")" || e2e_fail "no $2 for $p"
	# noticed once postgres on it restarted (in place, often before any status says so)
	# or the Cluster looks unhealthy (finish)
	e2e_wait_for "kp_st=\$(started_at '$p'); [ -n \"\$kp_st\" ] && [ \"\$kp_st\" != '$st' ]" 20 0.2 && noticed=1
	finish "$t0" "$p" any
}

scen_postmaster_kill() { kill_primary postmaster_pid postmaster; }
scen_manager_kill() { kill_primary im_pid "instance manager"; }

scen_pod_delete() {
	local p t0
	p=$(status currentPrimary)
	pin_start "$p"
	t0=$(now_ms)
	k delete pod "$p" --wait=false >/dev/null
	failover_done "$t0" "$p" 120
}

scen_switchover() {
	local p t0
	p=$(status currentPrimary)
	pin_start "$p"
	t0=$(now_ms)
	live_action switchover
	failover_done "$t0" "$p" 60
}

scen_rolling_restart() {
	local p t0
	p=$(status currentPrimary)
	pin_start "$p"
	t0=$(now_ms)
	live_action restart
	# until every instance's postmaster started after the request
	local i
	for i in 1 2 3; do
		e2e_wait_for "[ \"\$(sql $C-$i \"select extract(epoch from pg_postmaster_start_time()) * 1000 > $t0\")\" = t ]" 420 2 ||
			e2e_fail "$scen: $C-$i was not restarted"
	done
	finish "$t0" "$p" any
}

# partition POD SECONDS: cut POD off for SECONDS (0: until a new primary serves -rw).
partition() {
	"$AGENT" --state-dir "$AGENT_STATE" partition "$ns/$1" on >/dev/null || e2e_fail "partition $1"
}
unpartition() {
	"$AGENT" --state-dir "$AGENT_STATE" partition "$ns/$1" off >/dev/null || e2e_fail "partition off $1"
}

# The isolated primary must acknowledge nothing later than T_fence + 2 s after the partition
# began (docs/internals/failover.md: it fences within API_FENCE_CHECK_MS of its lease's expiry,
# the lease dates from replies it received before the partition; the rest is slack for a
# loaded machine). last_ack_isolated_ms: its last acknowledgement after T0, measured only.
assert_fenced() { # T0 OLD-IP
	local late
	late=$(awk -v t="$(($1 + API_FENCE_MS + 2000))" -v ip="$2" '$2 > t && index($3, ip ":") == 1' \
		"$tmp/faults/$pin_table.ledger" | wc -l)
	m acked_after_fence "$late"
	e2e_assert_eq 0 "$late" "$scen: COMMITs the isolated primary acknowledged after T_fence"
	m acked_by_isolated "$(awk -v t="$1" -v ip="$2" '$2 > t && index($3, ip ":") == 1' "$tmp/faults/$pin_table.ledger" | wc -l)"
	m last_ack_isolated_ms "$(awk -v t="$1" -v ip="$2" 'BEGIN { l = 0 }
		$2 > t && index($3, ip ":") == 1 && $2 - t > l { l = $2 - t } END { print l }' \
		"$tmp/faults/$pin_table.ledger")"
}

# failover_done T0 OLD WAIT_S [OLD-IP HOLD_S]: OLD must be failed over within WAIT_S of T0;
# for a partitioned OLD (OLD-IP given) the partition ends HOLD_S after T0 (at once when that
# has passed) and its fence is checked; then the common checks.
failover_done() {
	wait_new_primary "$2" "$1" "$3"
	m detect_ms "$detect_ms"
	wait_promoted "$2" "$1"
	if [ -n "${4:-}" ]; then
		sleep $(($5 - (($(now_ms) - $1) / 1000))) 2>/dev/null || true
		unpartition "$2"
		assert_fenced "$1" "$4"
	fi
	finish "$1" "$2" failover
}

# live_action ACTION: POST {} to the live API's clusters/$C/ACTION (switchover, restart).
live_action() {
	local out
	echo '{}' >"$tmp/faults/$1.json"
	out=$(kubectl create --raw "/apis/live.postgresql.cnpg.io/v1/namespaces/$ns/clusters/$C/$1" \
		-f "$tmp/faults/$1.json" 2>&1) || e2e_fail "$1 refused: $out"
}

scen_partition() {
	local p ip t0
	p=$(status currentPrimary)
	ip=$(pod_ip "$p")
	pin_start "$p"
	t0=$(now_ms)
	partition "$p"
	failover_done "$t0" "$p" "$FAULTS_PARTITION_S" "$ip" "$FAULTS_PARTITION_S"
}

scen_blip() {
	local p t0 tl
	k patch cluster "$C" --type merge -p '{"spec":{"failoverDelay":5}}' >/dev/null
	p=$(status currentPrimary)
	tl=$(timeline "$p")
	pin_start "$p"
	t0=$(now_ms)
	partition "$p"
	sleep 2
	unpartition "$p"
	sleep 8 # past failoverDelay
	finish "$t0" "$p" same
	e2e_assert_eq "$tl" "$(timeline "$p")" "$scen: timeline after a blip"
	k patch cluster "$C" --type merge -p '{"spec":{"failoverDelay":0}}' >/dev/null
}

scen_api_outage() {
	local p t0 tl st apid
	p=$(status currentPrimary)
	tl=$(timeline "$p")
	st=$(started_at "$p")
	apid=$(cat "$PGOP_E2E_STATE/pids/kube-apiserver.pid")
	pin_start "$p"
	t0=$(now_ms)
	kill -STOP "$apid"
	sleep "$FAULTS_OUTAGE_S"
	kill -CONT "$apid"
	e2e_wait_for e2e_ready 60 || e2e_fail "API server not ready after the outage"
	finish "$t0" "$p" same
	e2e_assert_eq "$tl" "$(timeline "$p")" "$scen: timeline after an API-server outage"
	e2e_assert_eq "$st" "$(started_at "$p")" "$scen: postgres restarted during the API-server outage"
}

# The leader pgop controller is killed (-9) once the failover of a partitioned primary has
# begun (phase "Failing over" or targetPrimary moved); the other replica takes the Lease and
# finishes it. The partition ends once a new primary serves.
scen_operator_kill() {
	local p ip t0 leader lpid ph
	p=$(status currentPrimary)
	ip=$(pod_ip "$p")
	pin_start "$p"
	t0=$(now_ms)
	partition "$p"
	e2e_wait_for "ph=\$(kubectl -n $ns get cluster $C -o jsonpath='{.status.phase}|{.status.targetPrimary}'); [ \"\${ph%%|*}\" = 'Failing over' ] || [ \"\${ph#*|}\" != '$p' ]" 90 0.2 ||
		e2e_fail "$scen: no failover began"
	ph=$(status phase)
	leader=$(cluster_leader)
	lpid=$(cat "$AGENT_STATE/run/${opns}_${leader}_controller.pid")
	kill -9 "$lpid"
	e2e_log "$scen: killed leader $leader (pid $lpid) in phase '$ph' after $(($(now_ms) - t0)) ms"
	failover_done "$t0" "$p" 120 "$ip" 0
}

faults_run() {
	for scen in "$@"; do
		e2e_log "=== scenario $scen ($faults_mode)"
		"scen_$scen"
	done
}

# faults_suite PREFIX SYNC DEFAULT_SCENARIOS: the body of test_faults_*.sh: the sample Cluster
# (synchronous when SYNC is 1) in a fresh namespace named with PREFIX, pgop installed by its
# chart, then FAULTS_SCENARIOS (default: DEFAULT_SCENARIOS) FAULTS_RUNS times (default 1).
faults_suite() {
	cluster_setup "$1"
	cluster_crd
	cluster_helm_install
	faults_setup "$2"
	for _ in $(seq "${FAULTS_RUNS:-1}"); do
		# shellcheck disable=SC2086
		faults_run ${FAULTS_SCENARIOS:-$3}
	done
}
