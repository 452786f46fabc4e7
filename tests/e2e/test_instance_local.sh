#!/usr/bin/env bash
# tests/e2e/test_instance_local.sh - the instance manager without Kubernetes.
#
# Runs `pgop instance init` and `run` for a primary and `join` + `run` for a
# standby, as the `postgres` OS user (PostgreSQL refuses root), in a temp dir,
# with certificates made by certtool and the Cluster read from a file
# (--cluster-file). Checks /pg/status over TLS (primary, timeline, streaming
# standby, HA slot), the operator-certificate rules of /pg/status,
# `pgop instance status`, `pgop bootstrap`, a switchover whose old primary
# rewinds, a split brain whose old primary recycled the WAL pg_rewind needs
# (pg_rewind fails for real, the manager re-clones), a replica that streamed
# past a promotion (not ready, rewound, follows the new primary), and a clean
# SIGTERM shutdown.
# Usage: test_instance_local.sh [PGOP_BIN]. Prints "N passed, N failed"; exits 77
# (skipped) without root; fails without the postgres user, PostgreSQL 15 or the tools.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

PGOP_BIN=${1:-${PGOP_BIN:-}}
[[ -x $PGOP_BIN ]] || e2e_fail "pgop binary not found (argument 1 or PGOP_BIN)"
PGOP_BIN=$(realpath "$PGOP_BIN")
# What scripts/setup-deps.sh installs is required (a failure); only root is a skip.
for tool in certtool curl setpriv jq psql; do
	command -v "$tool" >/dev/null || e2e_fail "$tool is required (scripts/setup-deps.sh installs it)"
done
[[ -x /usr/lib/postgresql/15/bin/initdb ]] || e2e_fail "PostgreSQL 15 binaries are required (scripts/setup-deps.sh)"
id postgres >/dev/null 2>&1 || e2e_fail "the postgres OS user is required (package postgresql-15)"
[[ $(id -u) -eq 0 ]] || e2e_skip "must run as root (setpriv to postgres)"

PASS=0
FAIL=0
check() { # check NAME CMD...
	local name=$1
	shift
	if "$@"; then
		PASS=$((PASS + 1))
		e2e_log "ok: $name"
	else
		FAIL=$((FAIL + 1))
		e2e_log "FAIL: $name"
		return 1
	fi
}

T=$(mktemp -d /tmp/pgop-inst.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 1 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
	done
	# postgres children left behind by a killed manager (own process groups)
	for d in "$T"/i1/pgdata "$T"/i2/pgdata "$T"/i3/pgdata; do
		if [[ -f $d/postmaster.pid ]]; then
			kill -QUIT "$(head -1 "$d/postmaster.pid")" 2>/dev/null
		fi
	done
	if [[ ${KEEP_TMP:-0} != 1 ]]; then rm -rf "$T"; fi
}
trap cleanup EXIT

base=$(e2e_free_ports 6) || e2e_fail "no free port"
P1=$base P2=$((base + 1)) S1=$((base + 2)) S2=$((base + 3)) P3=$((base + 4)) S3=$((base + 5))
C=pgtest

# ---- certificates -------------------------------------------------------
mkdir -p "$T/certs/server" "$T/certs/ca" "$T/certs/replication" "$T/pki" \
	"$T/secrets/app" "$T/secrets/superuser"
cd "$T/pki" || exit 1
gen_key() { certtool --generate-privkey --key-type=ecdsa --outfile "$1.key" 2>/dev/null; }
printf 'cn = %s\nca\ncert_signing_key\nexpiration_days = 30\n' "$C" >ca.tmpl
if ! gen_key ca || ! certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl \
	--outfile ca.crt 2>/dev/null; then
	e2e_fail "CA"
fi
leaf() { # leaf NAME TEMPLATE-LINES (signed by ca, or by SIGNER)
	local name=$1 signer=${SIGNER:-ca}
	shift
	printf '%s\n' "$@" "expiration_days = 30" >"$name.tmpl"
	if ! gen_key "$name" || ! certtool --generate-certificate --load-privkey "$name.key" \
		--load-ca-certificate "$signer.crt" --load-ca-privkey "$signer.key" \
		--template "$name.tmpl" --outfile "$name.crt" 2>/dev/null; then
		e2e_fail "cert $name"
	fi
}
leaf server "cn = $C-rw" "dns_name = $C-rw" "dns_name = localhost" "ip_address = 127.0.0.1" \
	tls_www_server signing_key encryption_key
leaf replication "cn = streaming_replica" tls_www_client signing_key
leaf operator "cn = pgop-operator" tls_www_client signing_key
leaf intruder "cn = someone-else" tls_www_client signing_key
printf 'cn = rogue\nca\ncert_signing_key\nexpiration_days = 30\n' >rogue.tmpl
gen_key rogue && certtool --generate-self-signed --load-privkey rogue.key --template rogue.tmpl \
	--outfile rogue.crt 2>/dev/null
SIGNER=rogue leaf untrusted "cn = pgop-operator" tls_www_client signing_key
cp server.crt "$T/certs/server/tls.crt" && cp server.key "$T/certs/server/tls.key"
cp ca.crt "$T/certs/ca/ca.crt"
cp replication.crt "$T/certs/replication/tls.crt" && cp replication.key "$T/certs/replication/tls.key"
printf 'app-secret-pw' >"$T/secrets/app/password"
printf 'su-secret-pw' >"$T/secrets/superuser/password"
cd / || exit 1

# ---- the Cluster --------------------------------------------------------
cat >"$T/cluster.json" <<EOF
{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",
 "metadata":{"name":"$C","namespace":"default","resourceVersion":"1"},
 "spec":{"instances":2,"imageName":"ghcr.io/cloudnative-pg/postgresql:15",
  "enableSuperuserAccess":true,
  "postgresql":{"parameters":{"max_connections":"50","shared_buffers":"16MB",
    "port":"9999","log_min_duration_statement":"1s"},
    "pg_hba":["host all all 10.0.0.0/8 scram-sha-256"]},
  "bootstrap":{"initdb":{"database":"app","owner":"app",
    "postInitApplicationSQL":["CREATE TABLE pgop_probe(id int)"]}},
  "storage":{"size":"1Gi"}},
 "status":{"instanceNames":["$C-1","$C-2"],"targetPrimary":"$C-1","currentPrimary":""}}
EOF

"$PGOP_BIN" bootstrap "$T/pgop"
check "pgop bootstrap copies the binary with mode 0755" \
	test "$(stat -c %a "$T/pgop")" = 755 -a -s "$T/pgop"
cmp -s "$PGOP_BIN" "$T/pgop" || e2e_fail "bootstrap copy differs"
chown -R postgres: "$T"

# setpriv execs (runuser forks and forwards signals its own way): $! is pgop itself.
AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)
as_pg() { "${AS_PG[@]}" "$@"; }
common() { # common N
	echo --pgdata "$T/i$1/pgdata" --controller-dir "$T/i$1/controller" --certs-dir "$T/certs" \
		--secrets-dir "$T/secrets" --cluster-file "${CF:-$T/cluster.json}" --pod-name "$C-$1" \
		--cluster-name "$C"
}
CURL=(curl -sS --max-time 10 --cacert "$T/pki/ca.crt")
OPCERT=(--cert "$T/pki/operator.crt" --key "$T/pki/operator.key")
status() { "${CURL[@]}" "${OPCERT[@]}" "https://127.0.0.1:$1/pg/status"; }

# ---- primary ------------------------------------------------------------
e2e_log "instance init (primary)"
# shellcheck disable=SC2046
as_pg "$T/pgop" instance init $(common 1) --initdb-flag -k --initdb-flag --encoding=UTF8 \
	--initdb-flag --lc-collate=C --initdb-flag --lc-ctype=C >"$T/init1.log" 2>&1
check "instance init exits 0" test $? -eq 0 || cat "$T/init1.log" >&2
check "init wrote the includes into postgresql.conf" \
	grep -q "include 'custom.conf'" "$T/i1/pgdata/postgresql.conf"
check "custom.conf keeps the operator port over the user's" \
	grep -q "^port = '5432'" "$T/i1/pgdata/custom.conf"
# a bootstrap Pod started again after it completed: nothing to do, the volume untouched
sysid1=$(as_pg /usr/lib/postgresql/15/bin/pg_controldata "$T/i1/pgdata" 2>/dev/null | awk -F': *' '/system identifier/ { print $2 }')
# shellcheck disable=SC2046
as_pg "$T/pgop" instance init $(common 1) >"$T/init1b.log" 2>&1
check "instance init again exits 0" test $? -eq 0 || cat "$T/init1b.log" >&2
check "instance init again does nothing" grep -q "already holds this instance: nothing to do" "$T/init1b.log"
check "instance init again keeps the data (same system identifier)" \
	test -n "$sysid1" -a "$sysid1" = "$(as_pg /usr/lib/postgresql/15/bin/pg_controldata "$T/i1/pgdata" 2>/dev/null | awk -F': *' '/system identifier/ { print $2 }')"

# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 1) --port "$P1" --status-listen "127.0.0.1:$S1" \
	>"$T/run1.log" 2>&1 &
PIDS+=($!)
RUN1=$!
if ! e2e_wait_for "${CURL[*]} -f https://127.0.0.1:$S1/readyz" 60; then
	tail -20 "$T/run1.log" >&2
fi
S=$(status "$S1")
check "primary /pg/status says isPrimary" test "$(jq -r .isPrimary <<<"$S")" = true
# postgres's own records reach the manager's output (a FIFO, instance/pglog.c)
pg_ready_logged() {
	grep '"logger":"postgres"' "$T/run1.log" |
		jq -e 'select(.msg == "database system is ready to accept connections"
			and .error_severity == "LOG" and .level == "info"
			and .backend_type == "postmaster")' >/dev/null
}
e2e_wait_for pg_ready_logged 10
check "postgres's records are JSON lines in the manager's output" pg_ready_logged
check "no postgres record is left on disk (postgres.csv is a FIFO)" \
	test -p "$T/i1/controller/log/postgres.csv"
check "primary /pg/status has timeline 1" test "$(jq -r .timeLineID <<<"$S")" = 1
check "primary /pg/status has a systemID and currentLsn" \
	test -n "$(jq -r '.systemID // empty' <<<"$S")" -a -n "$(jq -r '.currentLsn // empty' <<<"$S")"
check "loadedConfigurationHash is the sha256 in custom.conf" \
	grep -q "cnpg.config_sha256 = '$(jq -r .loadedConfigurationHash <<<"$S")'" \
	"$T/i1/pgdata/custom.conf"
check "pod name reported" test "$(jq -r .pod.metadata.name <<<"$S")" = "$C-1"
check "healthz 200" "${CURL[@]}" -f -o /dev/null "https://127.0.0.1:$S1/healthz"
check "unknown path 404" test "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
	"https://127.0.0.1:$S1/nope")" = 404
check "app database owned by app, postInitApplicationSQL ran" \
	test "$(as_pg psql -h "$T/i1/controller/run" -p "$P1" -U postgres -d app -Atc \
		"SELECT pg_get_userbyid(d.datdba) || count(t.*) FROM pg_database d \
		 LEFT JOIN pg_tables t ON t.tablename = 'pgop_probe' \
		 WHERE d.datname = 'app' GROUP BY d.datdba")" = app1
check "app owner password works over TLS (scram)" \
	env PGPASSWORD=app-secret-pw PGSSLMODE=require psql -h 127.0.0.1 -p "$P1" -U app -d app \
	-Atc "SELECT current_user" -q
check "initdb flags applied (checksums, encoding, collation)" \
	test "$(as_pg psql -h "$T/i1/controller/run" -p "$P1" -U postgres -Atc \
		"SELECT current_setting('data_checksums') || pg_encoding_to_char(encoding) || datcollate \
		 FROM pg_database WHERE datname = 'app'")" = onUTF8C
check "streaming_replica role has REPLICATION" test "$(as_pg psql -h "$T/i1/controller/run" \
	-p "$P1" -U postgres -Atc "SELECT rolreplication FROM pg_roles WHERE rolname='streaming_replica'")" = t

# ---- operator-only status, no state-changing endpoints --------------------
code() { "${CURL[@]}" -o /dev/null -w '%{http_code}' "$@"; }
check "GET /pg/status without a client cert: 401" \
	test "$(code "https://127.0.0.1:$S1/pg/status")" = 401
check "GET /pg/status with a cert from another CA: 401" \
	test "$(code --cert "$T/pki/untrusted.crt" --key "$T/pki/untrusted.key" \
		"https://127.0.0.1:$S1/pg/status")" = 401
check "GET /pg/status with another CN: 403" \
	test "$(code --cert "$T/pki/intruder.crt" --key "$T/pki/intruder.key" \
		"https://127.0.0.1:$S1/pg/status")" = 403
check "GET /pg/status with the operator cert: 200" \
	test "$(code "${OPCERT[@]}" "https://127.0.0.1:$S1/pg/status")" = 200
check "POST /pg/reload is gone: 404" \
	test "$(code -X POST "${OPCERT[@]}" "https://127.0.0.1:$S1/pg/reload")" = 404

# ---- standby ------------------------------------------------------------
e2e_log "instance join (standby)"
# shellcheck disable=SC2046
as_pg "$T/pgop" instance join $(common 2) --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/join2.log" 2>&1
check "instance join exits 0" test $? -eq 0 || cat "$T/join2.log" >&2
# shellcheck disable=SC2046
as_pg "$T/pgop" instance join $(common 2) --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/join2b.log" 2>&1
check "instance join again exits 0 and does nothing" \
	grep -q "already holds this instance: nothing to do" "$T/join2b.log"
check "standby.signal written" test -f "$T/i2/pgdata/standby.signal"
check "override.conf names the HA slot" \
	grep -q "primary_slot_name = '_cnpg_pgtest_2'" "$T/i2/pgdata/override.conf"
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 2) --port "$P2" --status-listen "127.0.0.1:$S2" \
	--primary-host 127.0.0.1 --primary-port "$P1" >"$T/run2.log" 2>&1 &
PIDS+=($!)
RUN2=$!
streaming() {
	status "$S1" | jq -e '.replicationInfo[]? | select(.applicationName=="pgtest-2" and .state=="streaming")'
}
if ! e2e_wait_for streaming 60; then
	tail -20 "$T/run2.log" >&2
fi
check "primary sees pgtest-2 streaming in replicationInfo" streaming

# ---- the cut (POST /pg/cut): the operator only, and never off a primary the replica reaches
post_cut() { code -X POST "$@"; }
check "POST /pg/cut without a client cert: 401" \
	test "$(post_cut "https://127.0.0.1:$S2/pg/cut?primary=$C-1&ip=127.0.0.1")" = 401
check "POST /pg/cut with another CN: 403" \
	test "$(post_cut --cert "$T/pki/intruder.crt" --key "$T/pki/intruder.key" \
		"https://127.0.0.1:$S2/pg/cut?primary=$C-1&ip=127.0.0.1")" = 403
check "POST /pg/cut with a bad primary name: 400" \
	test "$(post_cut "${OPCERT[@]}" "https://127.0.0.1:$S2/pg/cut?primary=..%2Fx&ip=127.0.0.1")" = 400
check "POST /pg/cut with a bad address: 400" \
	test "$(post_cut "${OPCERT[@]}" "https://127.0.0.1:$S2/pg/cut?primary=$C-1&ip=nowhere")" = 400
check "POST /pg/cut while the replica reaches the primary: 409, still streaming" \
	test "$(post_cut "${OPCERT[@]}" "https://127.0.0.1:$S2/pg/cut?primary=$C-1&ip=127.0.0.1")" = 409
check "POST /pg/cut asked of the primary: 409 (not a replica)" \
	test "$(post_cut "${OPCERT[@]}" "https://127.0.0.1:$S1/pg/cut?primary=$C-2&ip=127.0.0.1")" = 409
check "after the refused cuts the replica still streams" streaming
check "GET /pg/cut: 405" test "$(code "${OPCERT[@]}" "https://127.0.0.1:$S2/pg/cut")" = 405
slot_active() {
	status "$S1" | jq -e '.replicationSlotsInfo[] | select(.slotName=="_cnpg_pgtest_2" and .active)' \
		>/dev/null
}
check "primary keeps an active HA slot for pgtest-2" slot_active
S=$(status "$S2")
check "standby /pg/status: not primary, WAL receiver active" \
	test "$(jq -r '.isPrimary,.isWalReceiverActive' <<<"$S" | tr '\n' ' ')" = "false true "
check "pgop instance status prints the standby's status" \
	bash -o pipefail -c "'$T/pgop' instance status --url https://127.0.0.1:$S2/pg/status --cert '$T/pki/operator.crt' --key '$T/pki/operator.key' | jq -e '.pod.name==\"pgtest-2\"'" \
	>/dev/null

# ---- configuration change reloads ---------------------------------------
sed -i 's/"log_min_duration_statement":"1s"/"log_min_duration_statement":"2s"/' "$T/cluster.json"
reloaded() {
	test "$(as_pg psql -h "$T/i1/controller/run" -p "$P1" -U postgres -Atc \
		"SHOW log_min_duration_statement")" = 2s
}
e2e_wait_for reloaded 20
check "a Cluster change is rendered and reloaded" reloaded

set_status() { # [CF=FILE] set_status JQ-EXPR (default FILE: cluster.json)
	local f=${CF:-$T/cluster.json}
	jq "$1" "$f" >"$f.new" && mv "$f.new" "$f"
	chmod 644 "$f"
}

# ---- cnpg.io/reloadedAt and cnpg.io/fencedInstances (issue 26) -------------
q1() { as_pg psql -h "$T/i1/controller/run" -p "$P1" -U postgres -Atc "$1" 2>/dev/null; }
q2() { as_pg psql -h "$T/i2/controller/run" -p "$P2" -U postgres -Atc "$1" 2>/dev/null; }
LOAD1=$(q1 "SELECT pg_conf_load_time()") LOAD2=$(q2 "SELECT pg_conf_load_time()")
START1=$(q1 "SELECT pg_postmaster_start_time()")
set_status '.metadata.annotations["cnpg.io/reloadedAt"] = "2026-12-07T10:00:00Z"'
reloaded_at() { [ "$(q1 "SELECT pg_conf_load_time()")" != "$LOAD1" ] && [ "$(q2 "SELECT pg_conf_load_time()")" != "$LOAD2" ]; }
e2e_wait_for reloaded_at 20
check "cnpg.io/reloadedAt: both instances reload" reloaded_at
check "cnpg.io/reloadedAt: no restart" test "$(q1 "SELECT pg_postmaster_start_time()")" = "$START1"
code() { "${CURL[@]}" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$1/$2"; }
set_status '.metadata.annotations["cnpg.io/fencedInstances"] = "[\"pgtest-2\"]"'
fenced2() { ! q2 "SELECT 1" >/dev/null && [ "$(code "$S2" readyz)" != 200 ]; }
e2e_wait_for fenced2 30
check "fenced standby: postgres down, /readyz not 200" fenced2
check "fenced standby: /healthz 200" test "$(code "$S2" healthz)" = 200
check "fenced standby: the primary writes" q1 "CREATE TABLE fence_t AS SELECT 1 AS i"
set_status '.metadata.annotations["cnpg.io/fencedInstances"] = "[\"pgtest-1\"]"'
fenced1() { ! q1 "SELECT 1" >/dev/null && [ "$(code "$S1" readyz)" != 200 ]; }
e2e_wait_for fenced1 30
check "fenced primary: postgres down, /readyz not 200" fenced1
standby_back() { [ "$(q2 "SELECT pg_is_in_recovery()")" = t ]; }
e2e_wait_for standby_back 30
check "the primary fenced instead: the standby starts again, still a standby" standby_back
set_status 'del(.metadata.annotations["cnpg.io/fencedInstances"])'
primary_back() { [ "$(q1 "SELECT pg_is_in_recovery()")" = f ] && [ "$(code "$S1" readyz)" = 200 ]; }
e2e_wait_for primary_back 30
check "unfenced: the primary is back, Ready" primary_back
caught_up() { [ "$(q2 "SELECT count(*) FROM fence_t")" = 1 ]; }
e2e_wait_for caught_up 30
check "unfenced: the standby follows again (the rows written while it was fenced)" caught_up

# ---- switchover: promote pgtest-2, the old primary rewinds and follows ----
e2e_log "switchover to $C-2"
# currentPrimary as the first primary's patch would have left it: the standby
# waits for its WAL receiver to stop (old primary down) before promoting.
set_status '.status.targetPrimary = "pgtest-2" | .status.currentPrimary = "pgtest-1"'
i2_primary() { test "$(status "$S2" | jq -r .isPrimary)" = true; }
e2e_wait_for i2_primary 60 || tail -20 "$T/run2.log" >&2
check "targetPrimary=pgtest-2: the standby promotes" i2_primary
check "the new primary is on timeline 2" test "$(status "$S2" | jq -r .timeLineID)" = 2
e2e_wait_for "! kill -0 $RUN1" 60
wait "$RUN1"
rc1=$?
check "the old primary shuts down and exits non-zero (pod restart)" test "$rc1" -ne 0
set_status '.status.currentPrimary = "pgtest-2"' # what the new primary's status patch does
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 1) --port "$P1" --status-listen "127.0.0.1:$S1" \
	--primary-host 127.0.0.1 --primary-port "$P2" >"$T/run1b.log" 2>&1 &
PIDS=("$RUN2" $!)
RUN1=$!
follows() {
	status "$S2" | jq -e '.replicationInfo[]? | select(.applicationName=="pgtest-1" and .state=="streaming")' \
		>/dev/null
}
e2e_wait_for follows 90 || tail -20 "$T/run1b.log" >&2
check "the old primary ran pg_rewind" grep -q "running pg_rewind" "$T/run1b.log"
# The standby promoted only after the old primary's WAL receiver stopped, so it has
# every record the old primary wrote: nothing to rewind.
check "clean switchover: pg_rewind had nothing to rewind" \
	grep -q "no rewind required" "$T/run1b.log"
check "the old primary streams from the new one" follows
check "the old primary reports isPrimary false" \
	test "$(status "$S1" | jq -r .isPrimary)" = false
slot1() {
	status "$S2" | jq -e '.replicationSlotsInfo[] | select(.slotName=="_cnpg_pgtest_1" and .active)' \
		>/dev/null
}
check "the new primary keeps the HA slot of the old one" slot1

# ---- pg_rewind cannot work: the old primary re-clones ----------------------
# A split brain of the kind the lease prevents when both instances read one API
# server (docs/internals/failover.md): pgtest-1 reads its own copy of the
# Cluster (cluster-1.json), which promotes it, while pgtest-2 keeps reading
# cluster.json, which still names it the primary: it keeps running and writing.
# It switches WAL segments and checkpoints with wal_keep_size 0 and no slot
# holding the divergence's segment, so the WAL from before the divergence, which
# pg_rewind must read, is recycled. Then pgtest-2 learns it was replaced, stops,
# and its next start runs pg_rewind, which fails for real: the manager re-clones.
e2e_log "pg_rewind cannot work: split brain, the old primary's WAL recycled"
pg1() { as_pg psql -h "$T/i1/controller/run" -p "$P1" -U postgres -d app -v ON_ERROR_STOP=1 -Atqc "$1"; }
pg2() { as_pg psql -h "$T/i2/controller/run" -p "$P2" -U postgres -d app -v ON_ERROR_STOP=1 -Atqc "$1"; }
set_status '.spec.postgresql.parameters.wal_keep_size = "0"'
keep0() { test "$(pg2 "SHOW wal_keep_size")" = 0; }
e2e_wait_for keep0 20
check "wal_keep_size 0 rendered and reloaded on the primary" keep0
pg2 "CREATE TABLE reclone_probe(v text); INSERT INTO reclone_probe VALUES ('before')"
replicated() { test "$(pg1 "SELECT count(*) FROM reclone_probe WHERE v = 'before'" 2>/dev/null)" = 1; }
e2e_wait_for replicated 30
check "a row written before the divergence reached pgtest-1" replicated
# pgtest-1's manager restarts on its own copy of the Cluster
kill -TERM "$RUN1"
wait "$RUN1"
cp "$T/cluster.json" "$T/cluster-1.json"
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(CF=$T/cluster-1.json common 1) --port "$P1" \
	--status-listen "127.0.0.1:$S1" --primary-host 127.0.0.1 --primary-port "$P2" \
	>"$T/run1c.log" 2>&1 &
RUN1=$!
PIDS=("$RUN2" "$RUN1")
e2e_wait_for follows 60 || tail -20 "$T/run1c.log" >&2
check "pgtest-1 streams again, reading cluster-1.json" follows
# currentPrimary empty: pgtest-1 promotes without waiting for its WAL receiver
CF=$T/cluster-1.json set_status '.status.targetPrimary = "pgtest-1" | .status.currentPrimary = ""'
i1_primary() { test "$(status "$S1" | jq -r .isPrimary)" = true; }
e2e_wait_for i1_primary 60 || tail -20 "$T/run1c.log" >&2
check "pgtest-1 promotes while pgtest-2 stays primary (split brain)" \
	test "$(status "$S1" | jq -r .isPrimary)$(status "$S2" | jq -r .isPrimary)" = truetrue
TL1=$(status "$S1" | jq -r .timeLineID)
DIVERGED_AT=$(tail -1 "$(printf '%s/i1/pgdata/pg_wal/%08X.history' "$T" "$TL1")" | cut -f2)
check "the new primary's history names the divergence point" test -n "$DIVERGED_AT"
SEG=$(pg2 "SELECT pg_walfile_name('$DIVERGED_AT')")
# slots on the old primary holding the divergence's segment
OLD_SLOTS="FROM pg_replication_slots WHERE restart_lsn IS NOT NULL
           AND pg_walfile_name(restart_lsn) <= '$SEG'"
recycled() { # the old primary writes on: rows only it has, new segments, a checkpoint
	local i
	for i in 1 2 3; do
		pg2 "INSERT INTO reclone_probe VALUES ('diverged'); SELECT pg_switch_wal()" >/dev/null
	done
	# pgtest-2's manager keeps the HA slot of pgtest-1, reserved where pgtest-1
	# stopped streaming (or where the manager created it again): dropped, it
	# comes back at the current position, past the divergence's segment
	pg2 "SELECT count(pg_drop_replication_slot(slot_name)) $OLD_SLOTS AND NOT active" >/dev/null
	pg2 "CHECKPOINT"
	test ! -e "$T/i2/pgdata/pg_wal/$SEG"
}
e2e_wait_for recycled 60
check "no replication slot on the old primary retains the divergence's segment $SEG" \
	test "$(pg2 "SELECT count(*) $OLD_SLOTS")" = 0
check "the old primary recycled $SEG, the WAL segment of the divergence" \
	test -n "$SEG" -a ! -e "$T/i2/pgdata/pg_wal/$SEG"
pg1 "INSERT INTO reclone_probe VALUES ('new primary')"
# pgtest-2 learns it was replaced (what pgtest-1's status patch does): it stops
set_status '.status.targetPrimary = "pgtest-1" | .status.currentPrimary = "pgtest-1"'
CF=$T/cluster-1.json set_status '.status.currentPrimary = "pgtest-1"'
e2e_wait_for "! kill -0 $RUN2" 60
wait "$RUN2"
rc2=$?
check "the replaced primary shuts down and exits non-zero (pod restart)" test "$rc2" -ne 0
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 2) --port "$P2" --status-listen "127.0.0.1:$S2" \
	--primary-host 127.0.0.1 --primary-port "$P1" >"$T/run2b.log" 2>&1 &
RUN2=$!
PIDS=("$RUN1" "$RUN2")
# not the primary's replicationInfo alone: pg_basebackup's WAL stream is named
# pgtest-2 too while the clone runs
recloned_streams() { status "$S2" | jq -e '.recloned and .isWalReceiverActive' >/dev/null; }
e2e_wait_for recloned_streams 120 || tail -30 "$T/run2b.log" >&2
check "the old primary ran pg_rewind" grep -q "running pg_rewind" "$T/run2b.log"
check "pg_rewind failed for real: the WAL before the divergence is gone" \
	grep -Eq "could not (open file|find previous WAL record)" "$T/run2b.log"
FALLBACK=$(grep '"msg":"pg_rewind failed: re-cloning' "$T/run2b.log")
check "the fallback is logged once, with pg_rewind's status and the source" \
	test "$(jq -sc 'map({pgRewindStatus, source})' <<<"$FALLBACK")" = \
	'[{"pgRewindStatus":"1","source":"127.0.0.1"}]'
recloned_follows() { recloned_streams && streaming; }
check "the old primary re-cloned and streams from the new primary" recloned_follows
S=$(status "$S2")
check "pgtest-2 /pg/status reports the re-clone (recloned)" \
	test "$(jq -c '.recloned | {pgRewindExitStatus, source}' <<<"$S")" = \
	'{"pgRewindExitStatus":1,"source":"127.0.0.1"}'
# its timeLineID is its checkpoint's, or its WAL receiver's once that reports: converges
on_new_tl() { test "$(status "$S2" | jq -r '"\(.isPrimary) \(.timeLineID)"')" = "false $TL1"; }
e2e_wait_for on_new_tl 30 || status "$S2" | jq -c '{isPrimary, timeLineID}' >&2
check "pgtest-2 is a replica on the new primary's timeline" on_new_tl
check "pgtest-2 has the new primary's rows, none written only on the diverged old primary" \
	test "$(pg2 "SELECT string_agg(v, ',' ORDER BY v) FROM reclone_probe")" = "before,new primary"
pg1 "INSERT INTO reclone_probe VALUES ('after')"
after() { test "$(pg2 "SELECT count(*) FROM reclone_probe WHERE v = 'after'")" = 1; }
e2e_wait_for after 30
check "a write on the new primary after the re-clone reaches pgtest-2" after
check "the old data moved aside is removed once the clone completed" \
	test ! -e "$T/i2/pgdata.rewind-failed"

# ---- a replica that streamed past a promotion is rewound (issue 26) ------
# pgtest-3 streams from pgtest-1. pgtest-2 is promoted (cluster.json) while
# pgtest-1 stays primary (cluster-1.json): pgtest-3 keeps streaming pgtest-1's
# WAL past the point where pgtest-2's timeline forked. Then it is pointed at
# pgtest-2 (its primary_conninfo, what the -rw Service moving does in a
# Kubernetes cluster): it cannot follow it, says so and is not ready, is
# rewound from pgtest-2, and streams from it with its rows only.
e2e_log "a replica that streamed past a promotion"
NAMES='.status.instanceNames = ["pgtest-1","pgtest-2","pgtest-3"]'
set_status "$NAMES"
CF=$T/cluster-1.json set_status "$NAMES"
# shellcheck disable=SC2046
as_pg "$T/pgop" instance join $(common 3) --primary-host 127.0.0.1 --primary-port "$P1" \
	>"$T/join3.log" 2>&1
check "pgtest-3 joins from pgtest-1" test $? -eq 0 || cat "$T/join3.log" >&2
# its manager's primary (pg_rewind's source, the history it compares with) is
# pgtest-2, the primary to be; its postgres streams from pgtest-1 (override.conf)
# shellcheck disable=SC2046
"${AS_PG[@]}" "$T/pgop" instance run $(common 3) --port "$P3" --status-listen "127.0.0.1:$S3" \
	--primary-host 127.0.0.1 --primary-port "$P2" >"$T/run3.log" 2>&1 &
RUN3=$!
PIDS=("$RUN1" "$RUN2" "$RUN3")
pg3() { as_pg psql -h "$T/i3/controller/run" -p "$P3" -U postgres -d app -v ON_ERROR_STOP=1 -Atqc "$1"; }
streams_from() { # streams_from STATUS-PORT POD
	status "$1" | jq -e --arg p "$2" \
		'.replicationInfo[]? | select(.applicationName==$p and .state=="streaming")' >/dev/null
}
e2e_wait_for "streams_from $S1 pgtest-3" 60 || tail -20 "$T/run3.log" >&2
check "pgtest-3 streams from pgtest-1" streams_from "$S1" pgtest-3
# pgtest-2 promotes at once (currentPrimary empty); pgtest-1 stays primary
set_status '.status.targetPrimary = "pgtest-2" | .status.currentPrimary = ""'
e2e_wait_for i2_primary 60 || tail -20 "$T/run2.log" >&2
check "pgtest-2 promotes while pgtest-1 stays primary" \
	test "$(status "$S1" | jq -r .isPrimary)$(status "$S2" | jq -r .isPrimary)" = truetrue
TL2=$(status "$S2" | jq -r .timeLineID)
pg2 "INSERT INTO reclone_probe VALUES ('pgtest-2 only')"
pg1 "INSERT INTO reclone_probe VALUES ('pgtest-1 only')"
past_fork() { test "$(pg3 "SELECT count(*) FROM reclone_probe WHERE v = 'pgtest-1 only'")" = 1; }
e2e_wait_for past_fork 30
check "pgtest-3 replayed pgtest-1's WAL past pgtest-2's fork" past_fork
set_status '.status.currentPrimary = "pgtest-2"' # the new primary's status patch
check "pgtest-3 is Ready while it streams from pgtest-1" test "$(code "$S3" readyz)" = 200
sed -i "/primary_conninfo/s/\b$P1\b/$P2/g" "$T/i3/pgdata/override.conf"
grep -q "$P2" "$T/i3/pgdata/override.conf" || e2e_log "override.conf: $(cat "$T/i3/pgdata/override.conf")"
kill -HUP "$RUN3" # the manager passes it to postgres: primary_conninfo reloaded
diverged3() {
	status "$S3" | jq -e '.timelineDiverged | strings' >/dev/null &&
		[ "$(code "$S3" readyz)" != 200 ]
}
e2e_wait_for diverged3 60 0.3 || tail -20 "$T/run3.log" >&2
check "pgtest-3 says it diverged (timelineDiverged) and is not Ready" diverged3
DIVERGED_LOG=$(grep '"msg":"replica diverged from the primary' "$T/run3.log")
check "the divergence is logged once, with the fork" \
	test "$(jq -s 'length' <<<"$DIVERGED_LOG")" = 1 -a -n "$(jq -r '.reason | select(test("past [0-9A-F]+/[0-9A-F]+ where"))' <<<"$DIVERGED_LOG")"
rewound3() {
	streams_from "$S2" pgtest-3 && [ "$(code "$S3" readyz)" = 200 ] &&
		! status "$S3" | jq -e 'has("timelineDiverged")' >/dev/null
}
e2e_wait_for rewound3 45 || tail -30 "$T/run3.log" >&2
check "pgtest-3 ran pg_rewind as a diverged replica" \
	grep -q '"msg":"running pg_rewind","instance":"diverged replica"' "$T/run3.log"
check "pgtest-3 rewound, Ready again, streams from pgtest-2" rewound3
check "pgtest-3 was rewound, not re-cloned" test "$(status "$S3" | jq -r '.recloned // "none"')" = none
on_tl2() { test "$(status "$S3" | jq -r '"\(.isPrimary) \(.timeLineID)"')" = "false $TL2"; }
e2e_wait_for on_tl2 30
check "pgtest-3 is a replica on pgtest-2's timeline" on_tl2
check "pgtest-3 has pgtest-2's rows, not those only pgtest-1 wrote" \
	test "$(pg3 "SELECT string_agg(v, ',' ORDER BY v) FROM reclone_probe")" = "after,before,new primary,pgtest-2 only"
pg2 "INSERT INTO reclone_probe VALUES ('after rewind')"
after3() { test "$(pg3 "SELECT count(*) FROM reclone_probe WHERE v = 'after rewind'")" = 1; }
e2e_wait_for after3 30
check "a write on pgtest-2 after the rewind reaches pgtest-3" after3

# ---- shutdown -----------------------------------------------------------
kill -TERM "$RUN3" "$RUN2" "$RUN1"
wait "$RUN3"
rc3=$?
wait "$RUN2"
rc2=$?
wait "$RUN1"
rc1=$?
PIDS=()
check "SIGTERM: the managers exit 0" test "$rc1$rc2$rc3" = 000
check "SIGTERM: postgres stopped (no postmaster.pid)" \
	test ! -e "$T/i1/pgdata/postmaster.pid" -a ! -e "$T/i2/pgdata/postmaster.pid" \
	-a ! -e "$T/i3/pgdata/postmaster.pid"

echo "$PASS passed, $FAIL failed"
[[ $FAIL -eq 0 ]]
