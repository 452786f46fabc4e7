#!/usr/bin/env bash
# e2e-timeout: 240
# kubectl exec through the node agent's kubelet API: kubectl speaks WebSocket (v5) to the
# kube-apiserver, which dials the agent with SPDY/3.1 (remotecommand v4). In a pod running
# PostgreSQL: psql prints its result, exit codes propagate, stdin reaches the command
# (including EOF), stdout and stderr stay apart, 1 MB each way goes through whole, -it
# gives a terminal of the client's size, a missing container is an error, a client that
# leaves takes its command along; kubectl port-forward reaches PostgreSQL on the pod's
# localhost (psql from the host through it, a closed port is an error); kubectl logs
# still works. Prints the exec round trip.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

e2e_up
e2e_agent_up
ns=$(e2e_ns exec)
tmp=$(mktemp -d)
pf=
cleanup() {
	[ -z "$pf" ] || kill "$pf" 2>/dev/null || true
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
	e2e_down
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

installed=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | head -1)
[ -n "$installed" ] || e2e_fail "no PostgreSQL installed on this host (scripts/setup-deps.sh)"
major=$(basename "$(dirname "$installed")")
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: pg}
spec:
  securityContext: {runAsUser: 26, runAsGroup: 26}
  containers:
    - name: postgres
      image: "ghcr.io/cloudnative-pg/postgresql:$major"
      env:
        - {name: PGHOST, value: /tmp}
        - {name: PGUSER, value: postgres}
        - {name: PGDATABASE, value: postgres}
      command: [sh, -c, 'initdb -D /tmp/pgdata -U postgres -A trust >/tmp/initdb.log 2>&1 && exec postgres -D /tmp/pgdata -k /tmp -c listen_addresses=127.0.0.1']
YAML
e2e_wait_for "k exec pg -- pg_isready -q" 60 || e2e_fail "pg not ready through kubectl exec: $(k exec pg -- true 2>&1 || true)"

# 1. psql prints its result; the round trip (kubectl -> apiserver -> agent -> psql)
t0=$(now_ms)
out=$(k exec pg -- psql -Atc 'select 1')
rt=$(($(now_ms) - t0))
e2e_assert_eq "1" "$out" "kubectl exec pg -- psql -c 'select 1'"
e2e_log "kubectl exec round trip (psql select 1): ${rt} ms"
echo "METRIC kubectl_exec_roundtrip_ms=$rt"
e2e_assert_contains "$(k exec pg -c postgres -- psql -c 'select 1 as one')" "(1 row)" "psql's table output"

# 2. exit codes
set +e
k exec pg -- sh -c 'exit 3'
rc=$?
k exec pg -- true
rc0=$?
k exec pg -- sh -c 'kill -TERM $$'
rcsig=$?
set -e
e2e_assert_eq 3 "$rc" "exit code 3 propagates"
e2e_assert_eq 0 "$rc0" "exit code 0"
e2e_assert_eq 143 "$rcsig" "a command killed by SIGTERM exits 128+15"

# 3. stdin, and its EOF
e2e_assert_eq "42" "$(echo 'select 42' | k exec -i pg -- psql -At)" "stdin reaches psql"
e2e_assert_eq "3" "$(printf 'a\nb\nc\n' | k exec -i pg -- wc -l)" "stdin EOF closes the command's stdin"

# 4. stdout and stderr apart
k exec pg -- sh -c 'echo out; echo err >&2' >"$tmp/out" 2>"$tmp/err"
e2e_assert_eq "out" "$(cat "$tmp/out")" "stdout"
e2e_assert_eq "err" "$(cat "$tmp/err")" "stderr"

# 5. 1 MB each way, whole and in order (many DATA frames, back-pressure on both sides)
head -c 1000000 /dev/urandom >"$tmp/big"
t0=$(now_ms)
k exec -i pg -- cat <"$tmp/big" >"$tmp/back"
e2e_log "1 MB through cat and back: $(($(now_ms) - t0)) ms"
cmp -s "$tmp/big" "$tmp/back" || e2e_fail "1 MB through kubectl exec -i cat came back different ($(wc -c <"$tmp/back") bytes)"

# 6. a tty (script(1) gives kubectl a terminal of 100x30): the command has a terminal of
#    that size and the exit code still propagates
set +e
script -qec "stty cols 100 rows 30; kubectl -n $ns exec -it pg -- sh -c 'tty; stty size; exit 4'" \
	"$tmp/typescript" </dev/null >/dev/null
rc=$?
set -e
e2e_assert_eq 4 "$rc" "exit code through -it"
e2e_assert_contains "$(tr -d '\r' <"$tmp/typescript")" "/dev/pts/" "the command has a terminal"
e2e_assert_contains "$(tr -d '\r' <"$tmp/typescript")" "30 100" "its window size"

# 6b. errors: a container that does not exist, a command that does not
e2e_assert_fails k exec pg -c nope -- true
set +e
k exec pg -- /no/such/command >"$tmp/out" 2>&1
rc=$?
set -e
e2e_assert_ne 0 "$rc" "a missing command fails"

# 7. a client that leaves takes its command along; the pod is untouched
kubectl -n "$ns" exec pg -- sleep 299.5 >/dev/null 2>&1 &
kpid=$!
# the command must have started, or its absence afterwards proves nothing
e2e_wait_for "pgrep -fx 'sleep 299.5' >/dev/null" 10 || e2e_fail "kubectl exec pg -- sleep 299.5 did not start"
kill "$kpid" 2>/dev/null || true
wait "$kpid" 2>/dev/null || true
e2e_wait_for "! pgrep -fx 'sleep 299.5'" 20 || e2e_fail "the command outlived its kubectl exec"
e2e_assert_eq "1" "$(k exec pg -- psql -Atc 'select 1')" "postgres still up after the sessions"

# 8. kubectl port-forward: psql on the host reaches postgres on the pod's localhost
# (kubectl itself in the background, not the k function: $! must be kubectl's pid)
kubectl -n "$ns" port-forward pod/pg :5432 >"$tmp/pf.log" 2>&1 &
pf=$!
e2e_wait_for "grep -q 'Forwarding from 127.0.0.1:' '$tmp/pf.log'" 20 || e2e_fail "port-forward: $(cat "$tmp/pf.log")"
lport=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/pf.log" | head -1)
e2e_assert_eq "7" "$(psql -h 127.0.0.1 -p "$lport" -U postgres -d postgres -Atc 'select 7')" "psql through kubectl port-forward"
e2e_assert_eq "3" "$(for i in 1 2 3; do psql -h 127.0.0.1 -p "$lport" -U postgres -d postgres -Atc "select $i" & done | wc -l)" "3 connections at once"
kill "$pf" 2>/dev/null || true
wait "$pf" 2>/dev/null || true
kubectl -n "$ns" port-forward pod/pg :5433 >"$tmp/pf2.log" 2>&1 &
pf=$!
e2e_wait_for "grep -q 'Forwarding from 127.0.0.1:' '$tmp/pf2.log'" 20 || e2e_fail "port-forward: $(cat "$tmp/pf2.log")"
lport=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$tmp/pf2.log" | head -1)
psql -h 127.0.0.1 -p "$lport" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 &&
	e2e_fail "psql through a port-forward to a closed port succeeded"
e2e_wait_for "grep -q 'error forwarding port 5433' '$tmp/pf2.log'" 10 ||
	e2e_fail "no error for a closed port: $(cat "$tmp/pf2.log")"
kill "$pf" 2>/dev/null || true
wait "$pf" 2>/dev/null || true

# 9. kubectl logs still works
e2e_assert_contains "$(k logs pg)" "database system is ready to accept connections" "kubectl logs"
e2e_log "kubectl exec: all checks passed"
