/* tests/e2e/tools/writer.c - `pgop-writer write`: one INSERT per id, each its own
 * (autocommit) transaction, every interval; a line "id epoch_ms server" in the ledger for
 * every acknowledged COMMIT, "id epoch_ms reason" in the uncertain file for every COMMIT
 * whose outcome is unknown (timeout, connection lost, FATAL, or a "canceling wait for
 * synchronous replication" warning: committed locally, maybe not replicated). A server
 * error (ERROR) is a definite failure: logged, counted, not written. Ids are never reused.
 * After any failure the connection is closed and opened again (after 100 ms), so through a
 * Service it follows the endpoints, and with a fixed host it stays on that instance. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/tools/tools.h"

struct writer {
	const char *conninfo, *table;
	int interval_ms, commit_timeout_ms;
	int64_t id;
	FILE *ledger, *uncertain;
	PGconn *conn;
	char server[128];
	bool table_ready, syncrep_warning;
	char last_err[256];
	int64_t acked, failed, unsure, last_fsync;
};

static void log_err(struct writer *w, const char *what, const char *err)
{
	/* one line per distinct error: a writer retrying every 100 ms does not flood */
	/* the kept copy is cut at sizeof - 1 bytes: a longer error compares by that much */
	size_t n = strnlen(err, sizeof(w->last_err) - 1);

	if (strncmp(w->last_err, err, sizeof(w->last_err) - 1) == 0)
		return;
	memcpy(w->last_err, err, n);
	w->last_err[n] = '\0';
	_cleanup_free_ char *id = op_asprintf("%" PRId64, w->id);
	op_log_warn(what, "table", w->table, "id", id, "server", w->server, "error", err);
}

static void on_notice(void *arg, const PGresult *r)
{
	struct writer *w = arg;
	const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);

	if (m && strstr(m, "synchronous replication"))
		w->syncrep_warning = true;
}

static void disconnect(struct writer *w)
{
	PQfinish(w->conn);
	w->conn = NULL;
	snprintf(w->server, sizeof(w->server), "-");
}

static void sync_files(struct writer *w, bool force)
{
	int64_t now = pw_mono_ms();

	fflush(w->ledger);
	fflush(w->uncertain);
	if (!force && now - w->last_fsync < 1000)
		return;
	fsync(fileno(w->ledger));
	fsync(fileno(w->uncertain));
	w->last_fsync = now;
}

/* Connects, learns the server's address once, creates the table once. 0 or -1. */
static int ensure_connected(struct writer *w)
{
	char err[512];
	PGresult *r = NULL;
	_cleanup_free_ char *ddl = NULL;

	if (w->conn)
		return 0;
	w->conn = pw_connect(w->conninfo, NULL, err, sizeof(err));
	if (!w->conn) {
		log_err(w, "connect failed", err);
		return -1;
	}
	PQsetNoticeReceiver(w->conn, on_notice, w);
	if (pw_exec(w->conn,
		    "select coalesce(host(inet_server_addr()), 'socket') || ':' || "
		    "coalesce(inet_server_port()::text, '')",
		    0, NULL, 2000, &r, err, sizeof(err)) != PW_OK)
		goto fail;
	snprintf(w->server, sizeof(w->server), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	if (!w->table_ready) {
		ddl = op_asprintf("create table if not exists %s (id bigint primary key, "
				  "at timestamptz default now())",
				  w->table);
		if (pw_exec(w->conn, ddl, 0, NULL, w->commit_timeout_ms, NULL, err, sizeof(err)) !=
		    PW_OK)
			goto fail;
		w->table_ready = true;
	}
	op_log_info("connected", "table", w->table, "server", w->server);
	w->last_err[0] = '\0';
	return 0;
fail:
	PQclear(r);
	log_err(w, "set-up on a new connection failed", err);
	disconnect(w);
	return -1;
}

static void insert_one(struct writer *w)
{
	char err[512], idbuf[32];
	const char *params[] = { idbuf };
	_cleanup_free_ char *sql = op_asprintf("insert into %s (id) values ($1)", w->table);
	enum pw_result res;

	snprintf(idbuf, sizeof(idbuf), "%" PRId64, w->id);
	w->syncrep_warning = false;
	res = pw_exec(w->conn, sql, 1, params, w->commit_timeout_ms, NULL, err, sizeof(err));
	if (res == PW_OK && w->syncrep_warning) {
		res = PW_UNCERTAIN;
		snprintf(err, sizeof(err), "synchronous replication wait cancelled");
	}
	switch (res) {
	case PW_OK:
		fprintf(w->ledger, "%" PRId64 " %" PRId64 " %s\n", w->id, pw_now_ms(), w->server);
		w->acked++;
		break;
	case PW_UNCERTAIN:
		fprintf(w->uncertain, "%" PRId64 " %" PRId64 " %s\n", w->id, pw_now_ms(),
			w->server);
		w->unsure++;
		log_err(w, "commit outcome unknown", err);
		disconnect(w);
		break;
	case PW_FAILED:
		w->failed++;
		log_err(w, "insert failed", err);
		disconnect(w);
		break;
	}
	w->id++;
	sync_files(w, false);
}

static bool valid_table(const char *t)
{
	if (!*t || strlen(t) > 63 || isdigit((unsigned char)*t))
		return false;
	for (; *t; t++)
		if (!islower((unsigned char)*t) && !isdigit((unsigned char)*t) && *t != '_')
			return false;
	return true;
}

static FILE *open_append(const char *path)
{
	FILE *f = fopen(path, "a");

	if (!f)
		fprintf(stderr, "pgop-writer: %s: %s\n", path, strerror(errno));
	return f;
}

int pw_writer_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "conninfo", required_argument, NULL, 'c' },
		{ "ledger", required_argument, NULL, 'l' },
		{ "uncertain", required_argument, NULL, 'u' },
		{ "table", required_argument, NULL, 't' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "commit-timeout-ms", required_argument, NULL, 'T' },
		{ "start-id", required_argument, NULL, 's' },
		{ 0 },
	};
	struct writer w = { .table = "ledger", .interval_ms = 20, .commit_timeout_ms = 5000,
			    .id = 1, .server = "-" };
	const char *ledger = NULL, *uncertain = NULL;
	int64_t next;
	int o, rc = 1;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'c': w.conninfo = optarg; break;
		case 'l': ledger = optarg; break;
		case 'u': uncertain = optarg; break;
		case 't': w.table = optarg; break;
		case 'i': w.interval_ms = atoi(optarg); break;
		case 'T': w.commit_timeout_ms = atoi(optarg); break;
		case 's': w.id = strtoll(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!w.conninfo || !ledger || !uncertain || !valid_table(w.table) ||
	    w.interval_ms < 1 || w.commit_timeout_ms < 1 || w.id < 1) {
		fprintf(stderr, "usage: pgop-writer write --conninfo C --ledger F --uncertain F "
				"[--table T] [--interval-ms N] [--commit-timeout-ms N] "
				"[--start-id N]\n");
		return 2;
	}
	w.ledger = open_append(ledger);
	w.uncertain = open_append(uncertain);
	if (!w.ledger || !w.uncertain)
		goto out;
	next = pw_mono_ms();
	while (!pw_stop) {
		if (ensure_connected(&w) < 0) {
			pw_sleep_until(pw_mono_ms() + 100);
			continue;
		}
		pw_sleep_until(next);
		if (pw_stop)
			break;
		insert_one(&w);
		next += w.interval_ms;
		if (next < pw_mono_ms())
			next = pw_mono_ms(); /* after a stall: no burst to catch up */
		if (!w.conn)
			next = pw_mono_ms() + 100;
	}
	rc = 0;
out:
	if (w.ledger && w.uncertain)
		sync_files(&w, true);
	if (w.ledger)
		fclose(w.ledger);
	if (w.uncertain)
		fclose(w.uncertain);
	PQfinish(w.conn);
	{
		_cleanup_free_ char *a = op_asprintf("%" PRId64, w.acked);
		_cleanup_free_ char *f = op_asprintf("%" PRId64, w.failed);
		_cleanup_free_ char *u = op_asprintf("%" PRId64, w.unsure);
		op_log_info("writer stopped", "table", w.table, "acked", a, "failed", f,
			    "uncertain", u);
	}
	return rc;
}
