#!/usr/bin/env bash
# e2e-timeout: 7200
# Benchmark (not a test): the Helm-installed controller (one replica) managing N
# one-instance Clusters whose Pods run in the node agent's scale mode (scheduled, Running,
# Ready, deleted, no containers: docs/internals/node-agent.md; their instances never
# answer). For each N of BENCH_N (default "10 100 1000", cumulative) it prints:
#   time until every Cluster has its objects (instance Pod Ready, 3 Services, 4 Secrets),
#   the controller's VmRSS/VmHWM, p50/p99 reconcile duration, p50/p99 event -> status
#   (pgop_reconcile_event_latency_seconds) over the creation burst and in steady state, the Kubernetes API
#   requests/s by verb over a BENCH_STEADY s (60) steady-state window (pgop's own
#   /metrics: pgop_reconcile_duration_seconds, pgop_kube_requests_total), 429s seen, and
#   the creation burst's API requests per new Cluster (by verb), client-side rate-limiter
#   waits and the admission webhooks' p99 (pgop_http_request_duration_seconds).
#   The steady-state window starts 10 s after the work queue is empty (every Cluster's
#   status written), and the time until then is printed too. Alongside (BENCH_REAL=1,
#   default) a real 3-instance Cluster (the sample, PostgreSQL running): its primary Pod is
#   deleted BENCH_FAILOVERS times (3) before the first N and after the last one, and the
#   seconds until -rw is on the new primary are printed for each, with their medians.
# One command (it calls the e2e runner itself, with the agent's --scale-mode):
#   bench/scale.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BENCH_SCALE_INNER:-}" ]; then
	build=${1:-$top/build}
	export BENCH_SCALE_INNER=1 PGOP_NODE_AGENT_ARGS="--scale-mode bscale-[0-9]*"
	# BENCH_KCM_QPS: kube-controller-manager's client limit (upstream default 20/s, burst
	# 30, per controller): its Job controller tracked every bootstrap Job's Pod until pgop
	# made its bootstrap Pods itself (2026-12-05); its endpoint controllers remain
	[ -z "${BENCH_KCM_QPS:-}" ] ||
		export PGOP_E2E_KCM_ARGS="--kube-api-qps=$BENCH_KCM_QPS --kube-api-burst=$((2 * BENCH_KCM_QPS))"
	exec "$top/tests/e2e/run.sh" "$build" "$top/bench/scale.sh"
fi
. "$top/tests/e2e/lib.sh"
e2e_up
e2e_agent_up
# shellcheck source=../tests/e2e/cluster_lib.sh
. "$E2E_DIR/cluster_lib.sh"
cluster_setup bscale # namespace bscale-...: its Pods are the scale-mode ones
cluster_crd
steady=${BENCH_STEADY:-60}
# The real Cluster alongside (BENCH_REAL=0: none): the sample (3 instances, ANY 1
# synchronous) in its own namespace, whose Pods run PostgreSQL; its primary Pod is deleted
# (a handover, docs/internals/failover.md) before the first N and after the last one.
rns=
if [ "${BENCH_REAL:-1}" = 1 ]; then
	rns=$(e2e_ns breal) # not matched by the agent's --scale-mode glob
	bench_cleanup() {
		local rc=$?
		kubectl -n "$rns" delete cluster --all --wait=false >/dev/null 2>&1 || true
		kubectl delete namespace "$rns" --wait=false >/dev/null 2>&1 || true
		set +e
		(exit "$rc")
		cluster_cleanup
	}
	trap bench_cleanup EXIT
	cluster_helm_install --set replicas=1 --set "watchNamespaces={$ns,$rns}"
else
	cluster_helm_install --set replicas=1
fi

cpod() { kubectl -n "$opns" get pods -l "app.kubernetes.io/instance=$REL" \
	--field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}'; }
metrics() { curl -sf --max-time 10 "http://$(kubectl -n "$opns" get pod "$(cpod)" -o jsonpath='{.status.podIP}'):8080/metrics"; }
proc() { # FIELD: kB of the controller process
	local pid
	pid=$(cat "$AGENT_STATE/run/${opns}_$(cpod)_controller.pid") || return 1
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"
}
# cpu_all: "name=seconds" of CPU (user+system, children not counted) used so far by the
# controller, the node agent and each control-plane process: where a burst's time goes
# on this machine (they share its cores)
cpu_all() {
	local name pid
	local -A pids=([pgop]="$(cat "$AGENT_STATE/run/${opns}_$(cpod)_controller.pid" 2>/dev/null)"
		[agent]="$(cat "$AGENT_STATE/agent.pid" 2>/dev/null)")
	for name in kube-apiserver etcd kube-controller-manager kube-scheduler; do
		pids[$name]=$(pgrep -x "${name:0:15}" | head -1) # comm: 15 characters
	done
	for name in pgop agent kube-apiserver etcd kube-controller-manager kube-scheduler; do
		pid=${pids[$name]}
		[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || continue
		awk -v n="$name" -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%s=%.1f ", n, ($12 + $13) / hz }' "/proc/$pid/stat"
	done
}
# cpu_delta BEFORE AFTER: the seconds each used in between
cpu_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); for (i = 1; i <= n; i++) { split(x[i], kv, "="); s[kv[1]] = kv[2] }
		n = split(b, y, " "); for (i = 1; i <= n; i++) { split(y[i], kv, "="); if (kv[1] in s) printf "%s=%.1f ", kv[1], kv[2] - s[kv[1]] } }'
}
clusters() { # FROM TO: Cluster YAML documents scale-FROM..scale-TO
	for i in $(seq "$1" "$2"); do
		printf -- '---\napiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: s%05d\nspec:\n  instances: 1\n  storage:\n    size: 1Gi\n' "$i"
	done
}
count() { # KIND [SELECTOR]: objects in $ns
	k get "$1" ${2:+-l "$2"} --no-headers 2>/dev/null | wc -l
}
ready_pods() {
	k get pods -l cnpg.io/podRole=instance -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True || true
}
all_objects() { # N
	[ "$(ready_pods)" -ge "$1" ] && [ "$(count services cnpg.io/cluster)" -ge $((3 * $1)) ] &&
		[ "$(count secrets cnpg.io/cluster)" -ge $((4 * $1)) ]
}
# hist_q FILE_BEFORE FILE_AFTER METRIC Q [LABEL]: quantile (seconds) of the histogram's
# increase (only its series whose labels contain LABEL, e.g. path="/validate-...")
hist_q() {
	awk -v m="$3" -v q="$4" -v lf="${5:-}" '
		FNR == 1 { f++ }
		index($0, m "_bucket{") == 1 && index($0, lf) { match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
			v[f, le] += $NF; les[le] = 1 }
		END { n = 0; for (le in les) { k[++n] = le }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if ((k[j] == "+Inf" ? 1e99 : k[j] + 0) < (k[i] == "+Inf" ? 1e99 : k[i] + 0)) { t = k[i]; k[i] = k[j]; k[j] = t }
			tot = v[2, "+Inf"] - v[1, "+Inf"]; if (tot <= 0) { print "n/a"; exit }
			for (i = 1; i <= n; i++) if (v[2, k[i]] - v[1, k[i]] >= q * tot) { print k[i]; exit } }' "$1" "$2"
}
# per_s FILE_BEFORE FILE_AFTER SECONDS: pgop_kube_requests_total increase per verb, per second
per_s() {
	awk -v s="$3" '
		FNR == 1 { f++ }
		/^pgop_kube_requests_total\{/ { match($0, /verb="[^"]*"/); vb = substr($0, RSTART + 6, RLENGTH - 7)
			c[f, vb] += $NF; verbs[vb] = 1 }
		END { for (vb in verbs) printf "%s=%.2f ", vb, (c[2, vb] - c[1, vb]) / s }' "$1" "$2"
}
# per_cluster FILE_BEFORE FILE_AFTER N: pgop_kube_requests_total increase per verb, per new Cluster
per_cluster() {
	awk -v n="$3" '
		FNR == 1 { f++ }
		/^pgop_kube_requests_total\{/ { match($0, /verb="[^"]*"/); vb = substr($0, RSTART + 6, RLENGTH - 7)
			c[f, vb] += $NF; verbs[vb] = 1 }
		END { for (vb in verbs) { d = (c[2, vb] - c[1, vb]) / n; t += d; printf "%s=%.1f ", vb, d }
			printf "all=%.1f", t }' "$1" "$2"
}
# throttled FILE_BEFORE FILE_AFTER: seconds the client's rate limiter made requests wait
throttled() {
	awk '/^pgop_kube_throttled_seconds_total / { v[++f] = $NF } END { printf "%.1f", v[2] - v[1] }' "$1" "$2"
}
c429() { awk '/^pgop_kube_requests_total\{/ && /code="429"/ { n += $NF } END { print n + 0 }' "$1"; }
# c429_where FILE: pgop's 429s by verb and resource (its own counter's labels)
c429_where() { awk '/^pgop_kube_requests_total\{/ && /code="429"/ && $NF > 0 { print }' "$1" | tr '\n' ' '; }
# apiserver_rejected: what kube-apiserver's priority and fairness rejected, by priority
# level and reason (its /metrics), for a 429 to be explained
apiserver_rejected() {
	kubectl get --raw /metrics 2>/dev/null |
		awk '/^apiserver_flowcontrol_rejected_requests_total\{/ && $NF > 0 { print }' | tr '\n' ' '
}

rk() { kubectl -n "$rns" "$@"; }
# since_stamp RFC3339 T0: seconds from T0 (epoch, fractional) to the timestamp
since_stamp() {
	local e
	e=$(date -d "$1" +%s.%N 2>/dev/null) || { echo "?"; return; }
	awk -v a="$e" -v b="$2" 'BEGIN { printf "%.2f", a - b }'
}
# real_moved OLD: the real Cluster names a new currentPrimary and -rw's ready endpoints
# are that Pod's IP alone
real_moved() {
	local new ip eps
	new=$(rk get cluster "$C" -o jsonpath='{.status.currentPrimary}')
	[ -n "$new" ] && [ "$new" != "$1" ] || return 1
	ip=$(rk get pod "$new" -o jsonpath='{.status.podIP}')
	eps=$(rk get endpointslices -l "kubernetes.io/service-name=$C-rw" \
		-o jsonpath='{.items[*].endpoints[?(@.conditions.ready==true)].addresses[*]}')
	[ -n "$ip" ] && [ "$eps" = "$ip" ]
}
real_healthy() {
	[ "$(rk get cluster "$C" -o jsonpath='{.status.phase}')" = "Cluster in healthy state" ] &&
		[ "$(rk get cluster "$C" -o jsonpath='{.status.readyInstances}')" = 3 ]
}
# real_failover_once LABEL: deletes the real Cluster's primary Pod; appends to fo_s, fo_tp
# and fo_cp the seconds until -rw is on the new primary (kubectl polls: ~0.5 s
# resolution), targetPrimary moved and the promotion; waits until healthy again
real_failover_once() {
	local old t0 t
	old=$(rk get cluster "$C" -o jsonpath='{.status.currentPrimary}')
	t0=$(date +%s.%N)
	rk delete pod "$old" --wait=false >/dev/null
	e2e_wait_for "real_moved '$old'" 300 0.2 ||
		e2e_fail "real Cluster ($1): -rw not on a new primary 300 s after deleting $old"
	t=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
	# where the time went: the handover's targetPrimary and the promotion's
	# currentPrimary (both stamped in microseconds by the instances), then -rw
	local tp cp
	tp=$(since_stamp "$(rk get cluster "$C" -o jsonpath='{.status.targetPrimaryTimestamp}')" "$t0")
	cp=$(since_stamp "$(rk get cluster "$C" -o jsonpath='{.status.currentPrimaryTimestamp}')" "$t0")
	e2e_wait_for real_healthy 600 2 || e2e_fail "real Cluster ($1): not healthy again"
	e2e_log "real Cluster ($1): primary Pod $old deleted; targetPrimary moved after ${tp}s, promoted (currentPrimary) after ${cp}s, -rw on the new primary after ${t}s"
	fo_s="$fo_s $t" fo_tp="$fo_tp $tp" fo_cp="$fo_cp $cp"
}
median() { tr ' ' '\n' <<<"$*" | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# real_failover LABEL: BENCH_FAILOVERS (default 3) failovers of the real Cluster, one
# after the other; prints each and the medians (one failover's figure is only as good as
# the moment it fell on: a 1,000-Cluster run once took 2.1 s where the others took 0.6-0.9)
real_failover() {
	local i fo_s="" fo_tp="" fo_cp=""
	for i in $(seq "${BENCH_FAILOVERS:-3}"); do
		real_failover_once "$1"
	done
	echo "METRIC scale_real_failover_${1}_target_s=$(median "$fo_tp")"
	echo "METRIC scale_real_failover_${1}_promoted_s=$(median "$fo_cp")"
	echo "METRIC scale_real_failover_${1}_s=$(median "$fo_s")"
	echo "METRIC scale_real_failover_${1}_runs_s=$(tr ' ' ',' <<<"${fo_s# }")"
	eval "real_failover_$1=$(median "$fo_s")"
}
if [ -n "$rns" ]; then
	rk apply -f "$SAMPLES/cluster-example.yaml" >/dev/null
	e2e_wait_for real_healthy 600 2 || e2e_fail "the real Cluster is not healthy"
	real_failover alone
fi

have=0
for n in ${BENCH_N:-10 100 1000}; do
	((n > have)) || continue
	metrics >"$tmp/m0" || e2e_fail "no /metrics"
	cpu0=$(cpu_all)
	t0=$(date +%s.%N)
	clusters $((have + 1)) "$n" | k apply -f - >/dev/null
	e2e_wait_for "all_objects $n" $((300 + n)) 2 ||
		e2e_fail "N=$n: objects missing after $((300 + n)) s: $(ready_pods) Ready instance Pods, $(count services cnpg.io/cluster) Services, $(count secrets cnpg.io/cluster) Secrets"
	t=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
	cpu=$(cpu_delta "$cpu0" "$(cpu_all)")
	prev=$have have=$n
	# every Cluster's status written: the work queue empty (the objects can be there
	# minutes before the reconciles that report them, when the API client is the limit)
	e2e_wait_for "[ \"\$(metrics | awk '/^pgop_workqueue_depth / { print \$2 }')\" = 0 ]" 900 2 ||
		e2e_log "N=$n: the work queue is still not empty 900 s after the objects"
	td=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
	echo "METRIC scale_${n}_queue_drained_s=$td"
	sleep 10 # the creation burst's last reconciles
	metrics >"$tmp/m1" || e2e_fail "no /metrics"
	sleep "$steady"
	metrics >"$tmp/m2" || e2e_fail "no /metrics"
	burst=$(per_cluster "$tmp/m0" "$tmp/m1" $((n - prev)))
	waited=$(throttled "$tmp/m0" "$tmp/m1")
	p50=$(hist_q "$tmp/m1" "$tmp/m2" pgop_reconcile_duration_seconds 0.5)
	p99=$(hist_q "$tmp/m1" "$tmp/m2" pgop_reconcile_duration_seconds 0.99)
	rps=$(per_s "$tmp/m1" "$tmp/m2" "$steady")
	# event -> status (pgop_reconcile_event_latency_seconds): over the creation burst, and
	# in the steady-state window (n/a when no event came in it)
	ev50=$(hist_q "$tmp/m0" "$tmp/m1" pgop_reconcile_event_latency_seconds 0.5)
	ev99=$(hist_q "$tmp/m0" "$tmp/m1" pgop_reconcile_event_latency_seconds 0.99)
	es50=$(hist_q "$tmp/m1" "$tmp/m2" pgop_reconcile_event_latency_seconds 0.5)
	es99=$(hist_q "$tmp/m1" "$tmp/m2" pgop_reconcile_event_latency_seconds 0.99)
	# the admission webhooks' own latency (pgop's side) over the creation burst
	wh="pgop_http_request_duration_seconds"
	mut99=$(hist_q "$tmp/m0" "$tmp/m1" "$wh" 0.99 'path="/mutate-postgresql-cnpg-io-v1-cluster"')
	val99=$(hist_q "$tmp/m0" "$tmp/m1" "$wh" 0.99 'path="/validate-postgresql-cnpg-io-v1-cluster"')
	e2e_log "N=$n: all objects after ${t}s, the work queue empty after ${td}s; VmRSS $(proc VmRSS) kB VmHWM $(proc VmHWM) kB;" \
		"reconcile p50 <= ${p50}s p99 <= ${p99}s; API requests/s ${rps}; 429s $(c429 "$tmp/m2")"
	echo "METRIC scale_${n}_objects_s=$t"
	e2e_log "N=$n: CPU seconds used until every Cluster had its objects (2 cores: $(awk -v t="$t" 'BEGIN { printf "%.0f", 2 * t }') s available): $cpu"
	for kv in $cpu; do echo "METRIC scale_${n}_burst_cpu_s_${kv}"; done
	echo "METRIC scale_${n}_rss_kb=$(proc VmRSS)"
	echo "METRIC scale_${n}_hwm_kb=$(proc VmHWM)"
	echo "METRIC scale_${n}_reconcile_p50_le_s=$p50"
	echo "METRIC scale_${n}_reconcile_p99_le_s=$p99"
	echo "METRIC scale_${n}_event_to_status_burst_p50_le_s=$ev50"
	echo "METRIC scale_${n}_event_to_status_burst_p99_le_s=$ev99"
	echo "METRIC scale_${n}_event_to_status_steady_p50_le_s=$es50"
	echo "METRIC scale_${n}_event_to_status_steady_p99_le_s=$es99"
	for kv in $rps; do echo "METRIC scale_${n}_api_rps_${kv}"; done
	e2e_log "N=$n: creation burst: API requests per new Cluster ${burst}; rate limiter waits ${waited} s"
	for kv in $burst; do echo "METRIC scale_${n}_burst_requests_per_cluster_${kv}"; done
	echo "METRIC scale_${n}_burst_throttled_s=$waited"
	e2e_log "N=$n: admission webhooks over the creation burst: mutate p99 <= ${mut99}s, validate p99 <= ${val99}s"
	echo "METRIC scale_${n}_webhook_mutate_p99_le_s=$mut99"
	echo "METRIC scale_${n}_webhook_validate_p99_le_s=$val99"
	echo "METRIC scale_${n}_429s=$(c429 "$tmp/m2")"
	# kube-controller-manager's own client-side waits (client-go logs those over 1 s)
	echo "METRIC scale_${n}_kcm_qps=${BENCH_KCM_QPS:-20}"
	echo "METRIC scale_${n}_kcm_throttle_log_lines=$(grep -c 'client-side throttling' "$PGOP_E2E_STATE/logs/kube-controller-manager.log" 2>/dev/null || true)"
	if [ "$(c429 "$tmp/m2")" != 0 ]; then
		e2e_log "N=$n: 429s: pgop's: $(c429_where "$tmp/m2"); kube-apiserver rejected: $(apiserver_rejected)"
		# also in the summary (the run's logs are replaced by the next run)
		echo "METRIC scale_${n}_429_apiserver_rejected=$(apiserver_rejected | tr -s ' ' ';')"
	fi
done
if [ -n "$rns" ]; then
	real_failover "with_$have"
	e2e_log "real Cluster failover (median of ${BENCH_FAILOVERS:-3}): alone ${real_failover_alone}s, with $have scale-mode Clusters $(eval echo "\$real_failover_with_$have")s"
fi
