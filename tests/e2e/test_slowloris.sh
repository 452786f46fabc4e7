#!/usr/bin/env bash
# e2e-timeout: 480
# Slowloris against the Helm-installed controller (one replica, the chart's defaults: 64
# connections per client IP, 10 s request deadline, probes on the plain-HTTP probe port):
# ONE client - tests/e2e/tools/pgop-slowloris in a Pod's network namespace, so its address
# is not the API server's - holds 2,000 connections to the controller's HTTPS port for
# 2 minutes: TLS handshake, half a request header, then one byte a second (which
# defeats an idle timeout), each connection reopened 250 ms after the server closes it.
# Meanwhile, asserted:
#  - every `kubectl apply --dry-run=server` of a valid Cluster (every 5 s) is admitted,
#    an invalid one is refused with pgop's message naming the field (the webhook really
#    answers: failurePolicy is Fail), and one real `kubectl apply` creates a Cluster;
#  - GET /healthz on the probe port answers every second (5 s client timeout);
#  - the controller pod stays Ready and is not restarted;
#  - the attack was real: the client held >= 60 connections at once and the server
#    closed >= 1000 of its connections, some of them at the request deadline.
# Figures (METRIC): admission time under attack (max/median, kubectl included), healthz
# latency max, connections the server held, deadline closes, the client's totals.
# SLOWLORIS_CONNECTIONS / SLOWLORIS_SECONDS override 2000 / 120.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
e2e_up
e2e_agent_up
. "$E2E_DIR/cluster_lib.sh"

TOOL=${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/tools/pgop-slowloris
[ -x "$TOOL" ] || e2e_fail "pgop-slowloris not built: $TOOL"
N=${SLOWLORIS_CONNECTIONS:-2000}
SECS=${SLOWLORIS_SECONDS:-120}
PROBE_PORT=8080

cluster_setup slowloris
watcher=
# The watcher loop ends when $tmp/stop exists (no signal: its sleep would be left behind).
stop_watcher() {
	if [ -n "$watcher" ]; then
		touch "$tmp/stop"
		wait "$watcher" 2>/dev/null || true
	fi
	watcher=
}
trap '[ -z "${attacker:-}" ] || kill "$attacker" 2>/dev/null || true; stop_watcher; cluster_cleanup' EXIT
cluster_crd
cluster_helm_install --set replicas=1
pod=$(kubectl -n "$opns" get pods -l "app.kubernetes.io/instance=$REL" -o jsonpath='{.items[0].metadata.name}')
ip=$(kubectl -n "$opns" get pod "$pod" -o jsonpath='{.status.podIP}')
restarts0=$(kubectl -n "$opns" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')
[ -n "$ip" ] || e2e_fail "controller pod $pod has no IP"
e2e_log "controller pod $pod at $ip (HTTPS 9443, probes $PROBE_PORT)"
e2e_assert_eq "ok" "$(curl -sf --max-time 5 "http://$ip:$PROBE_PORT/healthz")" "healthz on the probe port"

helm_cluster_yaml "$ns" valid >"$tmp/valid.yaml"
helm_cluster_yaml "$ns" real >"$tmp/real.yaml"
helm_cluster_yaml "$ns" invalid 'postgresql: {parameters: {listen_addresses: "*"}}' >"$tmp/invalid.yaml"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
admit() { # LOG-FILE: one server-side dry run of the valid Cluster; appends its ms
	local t0 out
	t0=$(now_ms)
	out=$(kubectl apply --dry-run=server -f "$tmp/valid.yaml" 2>&1) ||
		e2e_fail "a valid Cluster was not admitted under attack: $out"
	echo $(($(now_ms) - t0)) >>"$1"
}
: >"$tmp/admit-during.ms"
admit "$tmp/admit-before.ms"
e2e_log "admission before the attack: $(cat "$tmp/admit-before.ms") ms"

attacker=
# The attacker: the host binary run in a Pod's network namespace (its own address on the
# node's bridge). Not the Pod's command: each container gets a fresh /tmp, so a build
# under /tmp (a fresh clone there) is not visible inside it.
k run slowloris --image=busybox --restart=Never --command -- sh -c 'exec sleep 3600' >/dev/null
e2e_wait_for "[ \"\$(kubectl -n $ns get pod slowloris -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
	e2e_fail "attacker pod not running: $(k get pod slowloris -o wide 2>&1)"
apid=$(cat "$AGENT_STATE/run/${ns}_slowloris_slowloris.pid") || e2e_fail "no pid for the attacker pod"
nsenter --net="/proc/$apid/ns/net" "$TOOL" --target "$ip:9443" --connections "$N" --duration-s "$SECS" \
	--mode header --trickle-ms 1000 --reopen-ms 250 --report-s 10 </dev/null >"$tmp/attacker.log" 2>&1 &
attacker=$!
attack_t0=$(date +%s)
e2e_log "attack started: $N connections for $SECS s from $(k get pod slowloris -o jsonpath='{.status.podIP}')"

# /healthz on the probe port and the server's connection count, every second.
(
	set +e
	while [ ! -e "$tmp/stop" ]; do
		t0=$(now_ms)
		if curl -sf --max-time 5 -o /dev/null "http://$ip:$PROBE_PORT/healthz"; then
			echo "ok $(($(now_ms) - t0))"
		else
			echo "FAIL $(($(now_ms) - t0))"
		fi
		curl -sf --max-time 5 "http://$ip:$PROBE_PORT/metrics" 2>/dev/null |
			awk '$1 == "pgop_http_connections_open" { print "open", $2 }'
		sleep 1
	done
) >"$tmp/watch.log" 2>&1 &
watcher=$!

sleep 5
t0=$(now_ms)
out=$(kubectl apply -f "$tmp/real.yaml" 2>&1) || e2e_fail "kubectl apply of a Cluster under attack: $out"
real_ms=$(($(now_ms) - t0))
e2e_assert_eq real "$(k get cluster real -o jsonpath='{.metadata.name}')" "Cluster stored under attack"
k delete cluster real --wait=false >/dev/null
e2e_assert_fails_with "spec.postgresql.parameters.listen_addresses" kubectl apply --dry-run=server -f "$tmp/invalid.yaml"
while (($(date +%s) - attack_t0 < SECS - 5)); do
	admit "$tmp/admit-during.ms"
	sleep 5
done
arc=0
wait "$attacker" || arc=$?
[ "$arc" = 0 ] || e2e_fail "the attacker exited with status $arc: $(tail -n 20 "$tmp/attacker.log")"
stop_watcher

# What the attacker saw.
alog=$(cat "$tmp/attacker.log")
echo "$alog" | tail -n 3
final=$(grep '^slowloris: ' <<<"$alog" | tail -n 1)
[ -n "$final" ] || e2e_fail "no totals from the attacker: $alog"
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$final"; }
held_max=$(field held_max)
closed=$(field closed_by_server)

# Probes, pod health, server side.
healthz_fail=$(grep -c '^FAIL' "$tmp/watch.log" || true)
healthz_ok=$(grep -c '^ok' "$tmp/watch.log" || true)
healthz_max=$(awk '$1 == "ok" || $1 == "FAIL" { if ($2 > m) m = $2 } END { print m + 0 }' "$tmp/watch.log")
open_max=$(awk '$1 == "open" { if ($2 > m) m = $2 } END { print m + 0 }' "$tmp/watch.log")
cuts=$(curl -sf --max-time 5 "http://$ip:$PROBE_PORT/metrics" |
	awk '$1 == "pgop_http_request_deadline_closes_total" { print $2 }')
restarts=$(kubectl -n "$opns" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')
ready=$(kubectl -n "$opns" get pod "$pod" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
sorted=$(sort -n "$tmp/admit-during.ms")
n_admit=$(wc -l <<<"$sorted")
admit_max=$(tail -n 1 <<<"$sorted")
admit_median=$(sed -n "$(((n_admit + 1) / 2))p" <<<"$sorted")

echo "METRIC slowloris_connections=$N"
echo "METRIC slowloris_seconds=$SECS"
echo "METRIC slowloris_client_attempts=$(field attempts)"
echo "METRIC slowloris_client_handshakes=$(field handshakes)"
echo "METRIC slowloris_client_closed_by_server=$closed"
echo "METRIC slowloris_client_held_max=$held_max"
echo "METRIC slowloris_server_connections_open_max=$open_max"
echo "METRIC slowloris_server_deadline_closes=${cuts:-0}"
echo "METRIC slowloris_admission_before_ms=$(cat "$tmp/admit-before.ms")"
echo "METRIC slowloris_admission_real_apply_ms=$real_ms"
echo "METRIC slowloris_admission_count=$n_admit"
echo "METRIC slowloris_admission_median_ms=$admit_median"
echo "METRIC slowloris_admission_max_ms=$admit_max"
echo "METRIC slowloris_healthz_ok=$healthz_ok"
echo "METRIC slowloris_healthz_failed=$healthz_fail"
echo "METRIC slowloris_healthz_max_ms=$healthz_max"

e2e_assert_eq 0 "$healthz_fail" "healthz on the probe port failed during the attack ($(grep -m3 '^FAIL' "$tmp/watch.log" | tr '\n' ' '))"
[ "$healthz_ok" -ge $((SECS / 4)) ] || e2e_fail "only $healthz_ok healthz probes answered in $SECS s"
e2e_assert_eq "$restarts0" "$restarts" "controller restarts"
e2e_assert_eq True "$ready" "controller Ready after the attack"
[ "$held_max" -ge 60 ] || e2e_fail "the attacker never held more than $held_max connections: no attack"
[ "$closed" -ge 1000 ] || e2e_fail "the server closed only $closed of the attacker's connections"
[ "${cuts:-0}" -ge 1 ] || e2e_fail "no connection was closed at the request deadline"
e2e_assert_ok kubectl apply --dry-run=server -f "$tmp/valid.yaml"
e2e_log "slowloris: $n_admit admissions (max ${admit_max} ms), $healthz_ok healthz answers, 0 failures"
