/* instance/pg.c - running PostgreSQL programs and talking to the server
 * through libpq (parameters only: PQexecParams). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "instance/internal.h"
#include "instance/lease.h"
#include "support/alloc.h"
#include "support/log.h"

static char *program_path(const char *bindir, const char *prog)
{
	if (strchr(prog, '/'))
		return op_strdup(prog);
	return op_asprintf("%s/%s", bindir, prog);
}

/* In the child: default signal dispositions and an empty mask (the parent
 * blocks the signals it takes with sigtimedwait). */
static void child_reset_signals(void)
{
	sigset_t none;
	sigemptyset(&none);
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2,
				    SIGPIPE };
	for (size_t i = 0; i < OP_ARRAY_SIZE(sigs); i++)
		signal(sigs[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int spawn(const char *bindir, const char *const *argv, bool own_group, pid_t *ret_pid,
		 struct op_err *err)
{
	_cleanup_free_ char *path = program_path(bindir, argv[0]);
	pid_t pid = fork();
	if (pid < 0)
		return op_err_set(err, -errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		child_reset_signals();
		if (own_group) {
			setpgid(0, 0);
			/* If the manager dies without stopping it (crash, SIGKILL outside
			 * a pod), postgres shuts down immediately instead of living on. */
			prctl(PR_SET_PDEATHSIG, SIGQUIT);
		}
		execv(path, (char *const *)argv);
		fprintf(stderr, "pgop: exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	if (own_group)
		setpgid(pid, pid); /* both sides: no race with the first signal */
	*ret_pid = pid;
	return 0;
}

int inst_run_cmd(const char *bindir, const char *const *argv, struct op_err *err)
{
	pid_t pid;
	int r = spawn(bindir, argv, false, &pid, err);
	if (r)
		return r;
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return op_err_set(err, -errno, "waitpid %s: %s", argv[0], strerror(errno));
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int inst_start_postgres(const char *bindir, const char *pgdata, const char *const *extra,
			pid_t *ret_pid, struct op_err *err)
{
	const char *argv[32] = { "postgres", "-D", pgdata };
	size_t n = 3;
	for (size_t i = 0; extra && extra[i] && n < OP_ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	return spawn(bindir, argv, true, ret_pid, err);
}

int inst_pg_connect(const char *sockdir, unsigned port, const char *dbname, PGconn **ret,
		    struct op_err *err)
{
	char ports[16];
	snprintf(ports, sizeof(ports), "%u", port ? port : INST_PG_PORT);
	const char *keys[] = { "host", "port", "user", "dbname", "application_name",
			       "connect_timeout", NULL };
	const char *vals[] = { sockdir, ports, "postgres", dbname ? dbname : "postgres",
			       "pgop-instance", "5", NULL };
	int lr = op_dl_load(&inst_dl_pq, err); /* a missing libpq.so.5 is this error */
	if (lr < 0)
		return lr;
	PGconn *c = PQconnectdbParams(keys, vals, 0);
	if (!c)
		return op_err_set(err, -ENOMEM, "libpq: out of memory");
	if (PQstatus(c) != CONNECTION_OK) {
		char *m = PQerrorMessage(c);
		size_t len = strlen(m);
		while (len && m[len - 1] == '\n')
			len--;
		op_err_set(err, -ECONNREFUSED, "connect to %s/.s.PGSQL.%s: %.*s", sockdir, ports,
			   (int)len, m);
		PQfinish(c);
		return -ECONNREFUSED;
	}
	*ret = c;
	return 0;
}

int inst_pg_wait_ready(const char *sockdir, unsigned port, unsigned timeout_s,
		       struct op_err *err)
{
	struct op_err last = OP_ERR_INIT;
	for (unsigned i = 0; i < timeout_s * 10; i++) {
		PGconn *c = NULL;
		op_err_clear(&last);
		if (inst_pg_connect(sockdir, port, NULL, &c, &last) == 0) {
			PQfinish(c);
			return 0;
		}
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return op_err_set(err, -ETIMEDOUT, "postgres not ready after %u s: %s", timeout_s,
			  last.msg);
}

int inst_pq_wait(PGconn *c, short events, int64_t deadline_ms, struct op_err *err)
{
	int64_t left = deadline_ms - inst_lease_now();
	if (left <= 0)
		return op_err_set(err, -ETIMEDOUT, "no answer within the deadline");
	struct pollfd p = { .fd = PQsocket(c), .events = events };
	if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
		return op_err_set(err, -EIO, "poll: %s", strerror(errno));
	if ((p.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(c)) {
		const char *m = PQerrorMessage(c);
		return op_err_set(err, -EIO, "%.*s", (int)strcspn(m, "\n"), m);
	}
	return 0;
}

int inst_pq_next_result(PGconn *c, int64_t deadline_ms, PGresult **ret, struct op_err *err)
{
	while (PQisBusy(c)) {
		int r = inst_pq_wait(c, POLLIN, deadline_ms, err);
		if (r)
			return r;
	}
	*ret = PQgetResult(c);
	return 0;
}

int inst_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
		 PGresult **ret, struct op_err *err)
{
	PGresult *res = PQexecParams(c, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		const char *m = res ? PQresultErrorMessage(res) : PQerrorMessage(c);
		size_t len = strlen(m);
		while (len && m[len - 1] == '\n')
			len--;
		op_err_set(err, -EIO, "%.*s", (int)len, m);
		if (res)
			PQclear(res);
		return -EIO;
	}
	if (ret)
		*ret = res;
	else
		PQclear(res);
	return 0;
}

int inst_pg_value(PGconn *c, const char *sql, int nparams, const char *const *params,
		  char **ret, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(c, sql, nparams, params, &res, err);
	if (r)
		return r;
	if (PQntuples(res) < 1 || PQnfields(res) < 1)
		return op_err_set(err, -EPROTO, "query returned no value");
	*ret = PQgetisnull(res, 0, 0) ? NULL : op_strdup(PQgetvalue(res, 0, 0));
	return 0;
}

static char *col(PGresult *res, int row, int c)
{
	if (PQgetisnull(res, row, c))
		return NULL;
	return op_strdup(PQgetvalue(res, row, c));
}

static bool col_bool(PGresult *res, int row, int c)
{
	return !PQgetisnull(res, row, c) && PQgetvalue(res, row, c)[0] == 't';
}

static int64_t col_i64(PGresult *res, int row, int c)
{
	if (PQgetisnull(res, row, c))
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(PQgetvalue(res, row, c), &end, 10);
	return errno || *end ? 0 : (int64_t)v;
}

/* pg_stat_archiver and the .ready files waiting (superuser: the manager's
 * own connection). Times in UTC, RFC 3339. */
static int query_archiver(PGconn *c, struct inst_pg_status *s, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(
		c,
		"SELECT current_setting('archive_mode') = 'always' OR "
		"(current_setting('archive_mode') = 'on' AND NOT pg_is_in_recovery()), "
		"last_archived_wal, "
		"to_char(last_archived_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
		"last_failed_wal, "
		"to_char(last_failed_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
		"failed_count::int8, "
		"(SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready')::int8 "
		"FROM pg_stat_archiver",
		0, NULL, &res, err);
	if (r)
		return r;
	if (PQntuples(res) != 1 || PQnfields(res) != 7)
		return op_err_set(err, -EPROTO, "archiver query: unexpected shape");
	s->is_archiving_wal = col_bool(res, 0, 0);
	s->last_archived_wal = col(res, 0, 1);
	s->last_archived_wal_time = col(res, 0, 2);
	s->last_failed_wal = col(res, 0, 3);
	s->last_failed_wal_time = col(res, 0, 4);
	s->archiver_failed_count = col_i64(res, 0, 5);
	s->ready_wals = col_i64(res, 0, 6);
	return 0;
}

int inst_pg_query_status(PGconn *c, const char *cluster_name, struct inst_pg_status *s,
			 struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(
		c,
		"SELECT NOT pg_is_in_recovery(), (pg_control_system()).system_identifier::text, "
		/* a primary's timeline is its WAL's: pg_control's lags after a
		 * promotion until the next checkpoint */
		"CASE WHEN pg_is_in_recovery() "
		"THEN (SELECT timeline_id FROM pg_control_checkpoint())::int8 "
		"ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int8 "
		"END, "
		"current_setting('cnpg.config_sha256', true), "
		"EXISTS(SELECT 1 FROM pg_settings WHERE pending_restart), "
		"(SELECT count(*) FROM pg_stat_wal_receiver) > 0, "
		"CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END, "
		"pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text, "
		"CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END, "
		"(SELECT received_tli FROM pg_stat_wal_receiver)::int8",
		0, NULL, &res, err);
	if (r)
		return r;
	if (PQntuples(res) != 1 || PQnfields(res) != 11)
		return op_err_set(err, -EPROTO, "status query: unexpected shape");
	s->is_primary = col_bool(res, 0, 0);
	s->system_id = col(res, 0, 1);
	s->timeline_id = col_i64(res, 0, 2);
	s->loaded_configuration_hash = col(res, 0, 3);
	s->pending_restart = col_bool(res, 0, 4);
	s->is_wal_receiver_active = col_bool(res, 0, 5);
	s->current_lsn = col(res, 0, 6);
	s->received_lsn = col(res, 0, 7);
	s->replay_lsn = col(res, 0, 8);
	s->replay_paused = col_bool(res, 0, 9);
	if (!s->is_primary && col_i64(res, 0, 10) > s->timeline_id)
		s->timeline_id = col_i64(res, 0, 10);

	_cleanup_(inst_pqclearp) PGresult *rep = NULL;
	_cleanup_free_ char *like = op_asprintf("%s-", cluster_name ? cluster_name : "");
	const char *p1[] = { like };
	r = inst_pg_exec(c,
			 "SELECT application_name, state, sent_lsn::text, write_lsn::text, "
			 "flush_lsn::text, replay_lsn::text, write_lag::text, flush_lag::text, "
			 "replay_lag::text, sync_state, sync_priority::int8 "
			 "FROM pg_stat_replication WHERE usename = 'streaming_replica' "
			 "AND starts_with(application_name, $1) ORDER BY application_name",
			 1, p1, &rep, err);
	if (r)
		return r;
	int n = PQntuples(rep);
	if (n > 0 && PQnfields(rep) == 11) {
		s->repl = op_calloc((size_t)n, sizeof(*s->repl));
		for (int i = 0; i < n; i++) {
			struct inst_repl_info *x = &s->repl[s->n_repl++];
			x->application_name = col(rep, i, 0);
			x->state = col(rep, i, 1);
			x->sent_lsn = col(rep, i, 2);
			x->write_lsn = col(rep, i, 3);
			x->flush_lsn = col(rep, i, 4);
			x->replay_lsn = col(rep, i, 5);
			x->write_lag = col(rep, i, 6);
			x->flush_lag = col(rep, i, 7);
			x->replay_lag = col(rep, i, 8);
			x->sync_state = col(rep, i, 9);
			x->sync_priority = col_i64(rep, i, 10);
		}
	}
	if ((r = query_archiver(c, s, err)) < 0)
		return r;
	_cleanup_(inst_pqclearp) PGresult *sl = NULL;
	r = inst_pg_exec(c,
			 "SELECT slot_name::text, plugin::text, slot_type, coalesce(datoid, 0)::int8, "
			 "database::text, restart_lsn::text, wal_status, "
			 "coalesce(safe_wal_size, 0)::int8, active "
			 "FROM pg_replication_slots ORDER BY slot_name",
			 0, NULL, &sl, err);
	if (r)
		return r;
	n = PQntuples(sl);
	if (n > 0 && PQnfields(sl) == 9) {
		s->slots = op_calloc((size_t)n, sizeof(*s->slots));
		for (int i = 0; i < n; i++) {
			struct inst_slot_info *x = &s->slots[s->n_slots++];
			x->slot_name = col(sl, i, 0);
			x->plugin = col(sl, i, 1);
			x->slot_type = col(sl, i, 2);
			x->datoid = col_i64(sl, i, 3);
			x->database = col(sl, i, 4);
			x->restart_lsn = col(sl, i, 5);
			x->wal_status = col(sl, i, 6);
			x->safe_wal_size = col_i64(sl, i, 7);
			x->active = col_bool(sl, i, 8);
		}
	}
	return 0;
}

int inst_pg_reconcile_slots(PGconn *c, const char *prefix, const char *const *wanted,
			    size_t n_wanted, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	const char *p1[] = { prefix };
	int r = inst_pg_exec(c,
			     "SELECT slot_name::text, active FROM pg_replication_slots "
			     "WHERE slot_type = 'physical' AND starts_with(slot_name::text, $1)",
			     1, p1, &res, err);
	if (r)
		return r;
	int changes = 0, n = PQntuples(res);
	for (size_t w = 0; w < n_wanted; w++) {
		bool found = false;
		for (int i = 0; i < n && !found; i++)
			found = strcmp(PQgetvalue(res, i, 0), wanted[w]) == 0;
		if (found)
			continue;
		const char *p[] = { wanted[w] };
		r = inst_pg_exec(c, "SELECT pg_create_physical_replication_slot($1, true)", 1, p,
				 NULL, err);
		if (r)
			return op_err_prefix(err, "create slot %s: ", wanted[w]);
		op_log_info("replication slot created", "slot", wanted[w]);
		changes++;
	}
	for (int i = 0; i < n; i++) {
		const char *name = PQgetvalue(res, i, 0);
		bool keep = col_bool(res, i, 1);
		for (size_t w = 0; w < n_wanted && !keep; w++)
			keep = strcmp(name, wanted[w]) == 0;
		if (keep)
			continue;
		const char *p[] = { name };
		r = inst_pg_exec(c, "SELECT pg_drop_replication_slot($1)", 1, p, NULL, err);
		if (r)
			return op_err_prefix(err, "drop slot %s: ", name);
		op_log_info("stale replication slot dropped", "slot", name);
		changes++;
	}
	return changes;
}
