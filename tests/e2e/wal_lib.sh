# shellcheck shell=bash
# WAL archiving against the test object store (objstore_lib.sh), shared by
# tests/e2e/test_wal_archive.sh and bench/backup.sh: a local PostgreSQL 15 run as the
# postgres user (setpriv), pgop's wal-archive/wal-restore configuration files, and
# barman-cloud 3.19.1 (build-barman.sh) with the store's credentials. Source after lib.sh
# and objstore_lib.sh; needs root (setpriv) and no Kubernetes.
#
#   wal_init DIR        # after objstore_start: DIR/cred/{access,secret,ca.crt} (postgres's,
#                       # 0600), $WAL_DEST (s3://BUCKET/backups/pgop), $WAL_STORE (its posix
#                       # directory: WAL_STORE/SERVER/wals/...), $WAL_PGBIN, $WAL_DIR
#   wal_as_pg CMD...    # CMD as the postgres user
#   wal_cfg FILE SERVER COMPRESSION [MAXPARALLEL [SECRETFILE [PGDATA [STATE]]]]
#   wal_suffix COMPRESSION          # barman's object suffix (.gz, ...; none: empty)
#   wal_barman_env CMD...           # CMD with the store's credentials in its environment
#   wal_pg_init PGDATA LOG          # initdb (trust, user postgres), $WAL_PG_PORT/$WAL_PG_SOCK
#                                   # in postgresql.conf, archive_mode on; add archive_command
#   wal_psql SQL                    # psql -Atq on that instance's socket

WAL_PGBIN=/usr/lib/postgresql/15/bin
WAL_AS_PG=(setpriv --reuid=postgres --regid=postgres --init-groups --)

wal_as_pg() { "${WAL_AS_PG[@]}" "$@"; }

wal_init() {
	WAL_DIR=$1
	mkdir -p "$WAL_DIR/cred"
	cp "$OBJSTORE_ACCESS_FILE" "$WAL_DIR/cred/access" && cp "$OBJSTORE_SECRET_FILE" "$WAL_DIR/cred/secret" &&
		cp "$OBJSTORE_CA" "$WAL_DIR/cred/ca.crt" || return 1
	chown -R postgres:postgres "$WAL_DIR/cred" && chmod 0600 "$WAL_DIR"/cred/*
	WAL_DEST=s3://$OBJSTORE_BUCKET/backups/pgop
	WAL_STORE=$OBJSTORE_DATA/$OBJSTORE_BUCKET/backups/pgop # versitygw posix: one file per object
}

wal_cfg() {
	local f=$1 server=$2 comp=$3 par=${4:-1} secret=${5:-$WAL_DIR/cred/secret} pgdata=${6:-}
	local state=${7:-$WAL_DIR/state-$2} pgline=
	[[ -n $pgdata ]] && pgline="\"pgdata\":\"$pgdata\","
	mkdir -p "$state" && chown postgres:postgres "$state"
	cat >"$f" <<EOF
{"destinationPath":"$WAL_DEST","serverName":"$server","endpointURL":"$OBJSTORE_ENDPOINT",
 "accessKeyIdFile":"$WAL_DIR/cred/access","secretAccessKeyFile":"$secret",
 "endpointCAFile":"$WAL_DIR/cred/ca.crt","walCompression":"$comp","maxParallel":$par,
 $pgline "stateDir":"$state"}
EOF
	chown postgres:postgres "$f" && chmod 0600 "$f"
}

wal_suffix() { case $1 in gzip) echo .gz ;; bzip2) echo .bz2 ;; xz) echo .xz ;; lz4) echo .lz4 ;; zstd) echo .zst ;; *) echo ;; esac; }

# (assignments, not env(1)'s argv: the secret stays out of ps; CMD may be a shell function)
wal_barman_env() {
	AWS_ACCESS_KEY_ID="$(cat "$WAL_DIR/cred/access")" AWS_SECRET_ACCESS_KEY="$(cat "$WAL_DIR/cred/secret")" \
		AWS_CA_BUNDLE="$WAL_DIR/cred/ca.crt" AWS_DEFAULT_REGION=us-east-1 "$@"
}

wal_pg_init() {
	local d=$1 log=$2
	: "${WAL_PG_PORT:=$(e2e_free_ports 1)}"
	: "${WAL_PG_SOCK:=$WAL_DIR/sock}"
	mkdir -p "$d" "$WAL_PG_SOCK" && chown postgres:postgres "$d" "$WAL_PG_SOCK" && chmod 0700 "$d"
	wal_as_pg "$WAL_PGBIN/initdb" -D "$d" -U postgres -A trust >"$log" 2>&1 || return 1
	cat >>"$d/postgresql.conf" <<EOF
port = $WAL_PG_PORT
listen_addresses = ''
unix_socket_directories = '$WAL_PG_SOCK'
archive_mode = on
EOF
}

wal_psql() {
	wal_as_pg psql -h "$WAL_PG_SOCK" -p "$WAL_PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -Atqc "$1"
}
