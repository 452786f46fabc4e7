#!/usr/bin/env bash
# e2e-timeout: 300
# The node agent honours the pod-spec fields pgop sets or refuses the pod naming the field
# (tests/e2e/agent/podspec.c, docs/internals/node-agent.md "Pod spec"):
#  1. a field the agent does not support (lifecycle.preStop) -> container waiting
#     CreateContainerConfigError naming the field + a Warning Event naming it;
#  2. securityContext as the Helm chart sets it (readOnlyRootFilesystem, runAsUser/Group,
#     fsGroup, allowPrivilegeEscalation false, capabilities drop ALL): the container's own
#     process sees uid/gid/groups, NoNewPrivs 1, CapEff 0, a read-only root (/, /etc, /tmp
#     not writable), a writable emptyDir volume owned by the fsGroup and a Memory emptyDir
#     that is a tmpfs of its sizeLimit;
#  3. runAsNonRoot with runAsUser 0 -> refused;
#  4. resources.limits.memory -> the container's memory cgroup limit, or a refusal that
#     says why (no usable cgroup on this node);
#  5. an image whose PostgreSQL major is not installed -> waiting ErrImagePull "PostgreSQL
#     99 is not installed on this node (image ...)" + a Warning Event; an installed major's
#     bindir is first on the container's PATH.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/cmd/pgop}}
[ -x "$PGOP_BIN" ] || e2e_fail "pgop binary not built ($PGOP_BIN; tests/e2e/run.sh builds it)"
export PGOP_BIN
e2e_up
e2e_agent_up
AGENT=${PGOP_NODE_AGENT:-${PGOP_BUILD_DIR:-$E2E_DIR/../../build}/tests/e2e/agent/pgop-node-agent}
AGENT_STATE=$PGOP_E2E_STATE/agent
ns=$(e2e_ns podspec)
cleanup() {
	kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	e2e_down
}
trap cleanup EXIT
k() { kubectl -n "$ns" "$@"; }
in_pod() { # POD CMD...
	local pod=$1
	shift
	"$AGENT" --state-dir "$AGENT_STATE" exec "$ns/$pod" -- "$@"
}
waiting() { # POD FIELD(reason|message) [INDEX]
	k get pod "$1" -o jsonpath="{.status.containerStatuses[${3:-0}].state.waiting.$2}"
}
events_of() { # POD: messages of the Warning Events about it
	k get events --field-selector "involvedObject.name=$1,type=Warning" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'
}

# 1. an unsupported field
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: unsupported}
spec:
  containers:
    - name: main
      image: busybox
      command: [sh, -c, 'exec sleep 600']
      lifecycle: {preStop: {exec: {command: ["true"]}}}
EOF
e2e_wait_for "[ \"\$(waiting unsupported reason)\" = CreateContainerConfigError ]" 30 ||
	e2e_fail "pod with lifecycle not refused: $(k get pod unsupported -o jsonpath='{.status.containerStatuses}')"
e2e_assert_contains "$(waiting unsupported message)" "spec.containers[0].lifecycle" "waiting message names the field"
e2e_wait_for "events_of unsupported | grep -qF 'spec.containers[0].lifecycle'" 20 ||
	e2e_fail "no Warning Event naming spec.containers[0].lifecycle: $(events_of unsupported)"
e2e_assert_eq Pending "$(k get pod unsupported -o jsonpath='{.status.phase}')" "refused pod phase"
[ ! -f "$AGENT_STATE/run/${ns}_unsupported_main.pid" ] || e2e_fail "the refused pod's container was started"
e2e_log "unsupported field refused: $(events_of unsupported | head -1)"

# 2. the chart's securityContext, with a report written by the container itself
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: secure}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10002, fsGroup: 10003}
  containers:
    - name: main
      image: busybox
      command:
        - sh
        - -c
        - |
          r=/data/report
          { echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
            grep -E '^(NoNewPrivs|CapEff|CapBnd):' /proc/self/status
            for p in /root-file /etc/x /tmp/x /var/x; do
              if touch "$p" 2>/dev/null; then echo "write $p ok"; else echo "write $p refused"; fi
            done
            if touch /data/x; then echo "write /data ok"; fi
            stat -c 'data group %g mode %a' /data
            echo "mem fs $(stat -f -c %T /mem) size $(df -k /mem | awk 'NR==2 {print $2}')"
            if touch /mem/x; then echo "write /mem ok"; fi
          } >"$r.tmp" 2>&1 && mv "$r.tmp" "$r"
          exec sleep 600
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities: {drop: [ALL]}
      volumeMounts: [{name: data, mountPath: /data}, {name: mem, mountPath: /mem}]
  volumes: [{name: data, emptyDir: {}}, {name: mem, emptyDir: {medium: Memory, sizeLimit: 8Mi}}]
EOF
e2e_wait_for "[ \"\$(k get pod secure -o jsonpath='{.status.phase}')\" = Running ]" 60 ||
	e2e_fail "secure pod not Running: $(k get pod secure -o jsonpath='{.status.containerStatuses}')"
e2e_wait_for "in_pod secure test -f /data/report" 20 || e2e_fail "no report from the secure pod"
report=$(in_pod secure cat /data/report)
e2e_log "secure pod report: $(tr '\n' ';' <<<"$report")"
e2e_assert_contains "$report" "uid=10001 gid=10002" "runAsUser/runAsGroup"
e2e_assert_match "$report" "groups=10002 10003|groups=10002.* 10003" "fsGroup is a supplementary group"
e2e_assert_match "$report" "NoNewPrivs:[[:space:]]+1" "allowPrivilegeEscalation false: no_new_privs"
e2e_assert_match "$report" "CapEff:[[:space:]]+0000000000000000" "no effective capabilities"
e2e_assert_match "$report" "CapBnd:[[:space:]]+0000000000000000" "capabilities drop ALL: empty bounding set"
for p in /root-file /etc/x /tmp/x /var/x; do
	e2e_assert_contains "$report" "write $p refused" "readOnlyRootFilesystem blocks $p"
done
e2e_assert_contains "$report" "write /data ok" "the emptyDir volume is writable"
e2e_assert_contains "$report" "data group 10003" "fsGroup owns the emptyDir"
e2e_assert_contains "$report" "mem fs tmpfs size 8192" "emptyDir medium Memory: a tmpfs of sizeLimit"
e2e_assert_contains "$report" "write /mem ok" "the Memory emptyDir is writable"
# the same from outside: the root of the container's mount namespace is read-only
e2e_assert_fails in_pod secure touch /etc/pgop-e2e-write
[ ! -e /etc/pgop-e2e-write ] || e2e_fail "a write went to the host's /etc"

# 3. runAsNonRoot with uid 0
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: rootnonroot}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 0}
  containers: [{name: main, image: busybox, command: [sleep, "600"]}]
EOF
e2e_wait_for "[ \"\$(waiting rootnonroot reason)\" = CreateContainerConfigError ]" 30 ||
	e2e_fail "runAsNonRoot with uid 0 not refused"
e2e_assert_contains "$(waiting rootnonroot message)" "runAsNonRoot" "refusal names runAsNonRoot"

# 4. a memory limit: a cgroup limit, or a refusal saying why
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: limited}
spec:
  containers:
    - name: main
      image: busybox
      command: [sh, -c, 'exec sleep 600']
      resources: {limits: {memory: 64Mi}}
EOF
e2e_wait_for "[ \"\$(k get pod limited -o jsonpath='{.status.phase}')\" = Running ] || [ -n \"\$(waiting limited reason)\" -a \"\$(waiting limited reason)\" != ContainerCreating ]" 30 ||
	e2e_fail "memory-limited pod neither Running nor refused"
if [ "$(k get pod limited -o jsonpath='{.status.phase}')" = Running ]; then
	pid=$(cat "$AGENT_STATE/run/${ns}_limited_main.pid")
	if grep -q '^0::' "/proc/$pid/cgroup" && [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		cg=/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
		limit=$(cat "$cg/memory.max")
	else
		cg=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' "/proc/$pid/cgroup")
		limit=$(cat "$cg/memory.limit_in_bytes")
	fi
	e2e_assert_eq 67108864 "$limit" "memory limit of the container's cgroup ($cg)"
	e2e_log "memory limit enforced by $cg"
else
	e2e_assert_eq CreateContainerConfigError "$(waiting limited reason)" "memory limit refusal"
	e2e_assert_contains "$(waiting limited message)" "resources.limits.memory" "refusal names the field"
	e2e_assert_contains "$(waiting limited message)" "cgroup" "refusal says why"
	e2e_log "memory limit refused: $(waiting limited message)"
fi

# 5. PostgreSQL majors: one that is not installed, and the host's own
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: pg99}
spec:
  containers: [{name: postgres, image: "ghcr.io/cloudnative-pg/postgresql:99.1", command: [sleep, "600"]}]
EOF
want='PostgreSQL 99 is not installed on this node (image ghcr.io/cloudnative-pg/postgresql:99.1)'
e2e_wait_for "[ \"\$(waiting pg99 reason)\" = ErrImagePull ]" 30 || e2e_fail "pg99 not ErrImagePull"
e2e_assert_eq "$want" "$(waiting pg99 message)" "ErrImagePull message"
e2e_wait_for "events_of pg99 | grep -qF '$want'" 20 || e2e_fail "no Warning Event for pg99: $(events_of pg99)"
installed=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | head -1)
[ -n "$installed" ] || e2e_fail "no PostgreSQL installed on this host (scripts/setup-deps.sh)"
major=$(basename "$(dirname "$installed")")
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: pghost}
spec:
  containers:
    - name: postgres
      image: "ghcr.io/cloudnative-pg/postgresql:$major-bookworm"
      command: [sh, -c, 'echo "\$PATH" >/data/path; command -v initdb >>/data/path; exec sleep 600']
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
EOF
e2e_wait_for "in_pod pghost test -s /data/path" 40 || e2e_fail "pghost did not start"
path=$(in_pod pghost cat /data/path)
e2e_assert_match "$path" "^/usr/lib/postgresql/$major/bin:" "the image's major bindir first on PATH"
e2e_assert_contains "$path" "/usr/lib/postgresql/$major/bin/initdb" "initdb found through PATH"
e2e_log "node podspec: all checks passed"
