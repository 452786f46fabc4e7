/* instance/diverge.c - a replica that streamed past a promotion
 * (docs/internals/failover.md, "A replica that diverged").
 *
 * A replica that received and replayed WAL from the old primary beyond the
 * point where the new primary's timeline forked cannot follow the new
 * primary: postgres logs "requested starting point ... is not in this
 * server's history" or "new timeline N forked off current database system
 * timeline M before current recovery point" at every retry, forever.
 *
 * Why not the log (instance/pglog.c): those messages are postgres's wording
 * (translated with lc_messages, changed between majors), and they only say
 * that something failed, not by how much. PostgreSQL answers the question
 * itself: the primary's timeline history (TIMELINE_HISTORY over a replication
 * connection, what the WAL receiver fetches too) says where each ancestor
 * timeline ended (its switchpoint); the replica's replay position
 * (pg_last_wal_replay_lsn) and its timeline say where it is. A replica on
 * timeline T whose replay position is beyond T's switchpoint in the primary's
 * history, or whose T is not in it at all, has diverged: the comparison
 * postgres makes itself in rescanLatestTimeLine ("before current recovery
 * point"). The replica's timeline is the larger of its last restartpoint's
 * and its minimum recovery point's (pg_control_checkpoint,
 * pg_control_recovery): it may lag the timeline replay is on, never lead it,
 * so the answer errs towards "diverged"; and a replica whose WAL receiver
 * streams the primary's timeline is not asked (inst_diverge_ask), and a
 * diverged answer must hold for INST_DIVERGE_CONFIRM_MS (inst_diverge_confirm).
 * Not "its WAL receiver streams" alone: a diverged replica's receiver streams
 * too, now and then: the new primary streams it the old timeline from the
 * segment it asks for up to the fork, ends it there, and the replica, which
 * cannot switch, asks again. A wrong "diverged" costs
 * a restart: pg_rewind of a replica that did not diverge rewinds nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "instance/internal.h"
#include "instance/lease.h"
#include "support/alloc.h"
#include "support/lsn.h"

/* One history line: "<parent tli><ws><switchpoint><ws><reason>"; 1 parsed,
 * 0 blank or a comment, -EINVAL otherwise. */
static int history_line(const char *line, size_t len, struct inst_tli_switch *ret)
{
	char buf[256];
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len] = '\0';
	const char *s = buf + strspn(buf, " \t\r");
	if (*s == '\0' || *s == '#')
		return 0;
	unsigned long tli;
	char lsn[32];
	if (sscanf(s, "%lu %31s", &tli, lsn) != 2 || tli == 0 || tli > UINT32_MAX)
		return -EINVAL;
	ret->tli = (uint32_t)tli;
	return op_lsn_parse(lsn, &ret->switchpoint) ? -EINVAL : 1;
}

int inst_tli_history_parse(const char *text, struct inst_tli_switch *out, size_t max,
			   size_t *ret_n, struct op_err *err)
{
	size_t n = 0;
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct inst_tli_switch sw;
		int r = history_line(p, len, &sw);
		if (r < 0)
			return op_err_set(err, -EINVAL, "timeline history: bad line \"%.*s\"",
					  (int)(len > 80 ? 80 : len), p);
		if (r > 0) {
			if (n == max)
				return op_err_set(err, -E2BIG, "timeline history: over %zu lines",
						  max);
			if (n > 0 && (sw.tli <= out[n - 1].tli ||
				      sw.switchpoint < out[n - 1].switchpoint))
				return op_err_set(err, -EINVAL,
						  "timeline history: timeline %" PRIu32
						  " out of order",
						  sw.tli);
			out[n++] = sw;
		}
		p = nl ? nl + 1 : NULL;
	}
	*ret_n = n;
	return 0;
}

enum inst_diverge inst_diverge_decide(uint32_t tli, uint64_t lsn, uint32_t primary_tli,
				      const struct inst_tli_switch *hist, size_t n,
				      uint64_t *ret_fork)
{
	*ret_fork = 0;
	if (tli == 0 || primary_tli == 0)
		return INST_DIVERGE_UNKNOWN;
	if (tli == primary_tli)
		return INST_DIVERGE_NO; /* the primary's own timeline: nothing forked since */
	for (size_t i = 0; i < n; i++) {
		if (hist[i].tli != tli)
			continue;
		*ret_fork = hist[i].switchpoint;
		/* the replay position is the end of the last record replayed: at the
		 * switchpoint itself nothing beyond the fork was replayed */
		return lsn > hist[i].switchpoint ? INST_DIVERGE_YES : INST_DIVERGE_NO;
	}
	/* a timeline the primary never was on (another promotion's branch, or
	 * one newer than the primary's): it cannot stream from the primary */
	return INST_DIVERGE_YES;
}

bool inst_diverge_confirm(struct inst_diverge_watch *w, bool diverged, int64_t now)
{
	if (!diverged) {
		w->since = 0;
		return false;
	}
	if (w->since == 0)
		w->since = now ? now : 1;
	return now - w->since >= INST_DIVERGE_CONFIRM_MS;
}

bool inst_diverge_ask(uint32_t streaming_tli, uint32_t known_primary_tli)
{
	/* a receiver streaming the primary's timeline follows it; one streaming an
	 * older timeline may be a replica catching up, or a diverged one the
	 * primary streams its old timeline to up to the fork, again and again */
	return streaming_tli == 0 || streaming_tli != known_primary_tli;
}

/* The replica's side: the timeline its WAL receiver streams (0: none), its
 * timeline, its replay position, its system identifier. */
struct local_view {
	uint32_t streaming_tli;
	uint32_t tli;
	uint64_t lsn;
	char sysid[32];
};

static int local_view(PGconn *c, struct local_view *v, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_pg_exec(c,
			     "SELECT coalesce((SELECT received_tli FROM pg_stat_wal_receiver "
			     "WHERE status = 'streaming'), 0)::text, "
			     "greatest((pg_control_checkpoint()).timeline_id, "
			     "(pg_control_recovery()).min_recovery_end_timeline)::text, "
			     "pg_last_wal_replay_lsn()::text, "
			     "(pg_control_system()).system_identifier::text",
			     0, NULL, &res, err);
	if (r)
		return r;
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 1) || PQgetisnull(res, 0, 2))
		return op_err_set(err, -ENODATA, "no replay position (not a replica)");
	v->streaming_tli = (uint32_t)strtoul(PQgetvalue(res, 0, 0), NULL, 10);
	v->tli = (uint32_t)strtoul(PQgetvalue(res, 0, 1), NULL, 10);
	snprintf(v->sysid, sizeof(v->sysid), "%s", PQgetvalue(res, 0, 3));
	if (op_lsn_parse(PQgetvalue(res, 0, 2), &v->lsn))
		return op_err_set(err, -EINVAL, "bad replay LSN %s", PQgetvalue(res, 0, 2));
	return 0;
}

/* A replication command (simple protocol: a walsender refuses the extended
 * one inst_pg_exec speaks) answering rows, by deadline_ms; *ret owned. */
static int repl_exec(PGconn *p, const char *cmd, int64_t deadline_ms, PGresult **ret,
		     struct op_err *err)
{
	if (!PQsendQuery(p, cmd)) {
		const char *m = PQerrorMessage(p);
		return op_err_set(err, -EIO, "the primary: %s: %.*s", cmd, (int)strcspn(m, "\n"), m);
	}
	PGresult *res = NULL, *next;
	int r;
	while ((r = inst_pq_next_result(p, deadline_ms, &next, err)) == 0 && next) {
		if (res)
			PQclear(res);
		res = next;
	}
	if (r == 0 && res && PQresultStatus(res) == PGRES_TUPLES_OK) {
		*ret = res;
		return 0;
	}
	if (r == 0) {
		const char *m = res ? PQresultErrorMessage(res) : "no result";
		r = op_err_set(err, -EIO, "%.*s", (int)strcspn(m, "\n"), m);
	}
	if (res)
		PQclear(res);
	op_err_prefix(err, "the primary: %s", cmd);
	return r;
}

/* The primary's system identifier and timeline (IDENTIFY_SYSTEM), and its
 * timeline history (TIMELINE_HISTORY; none on timeline 1) into hist. */
static int primary_view(PGconn *p, int64_t deadline_ms, char sysid[32], uint32_t *ret_tli,
			struct inst_tli_switch *hist, size_t max, size_t *ret_n, struct op_err *err)
{
	_cleanup_(inst_pqclearp) PGresult *id = NULL;
	int r = repl_exec(p, "IDENTIFY_SYSTEM", deadline_ms, &id, err);
	if (r)
		return r;
	if (PQntuples(id) != 1 || PQnfields(id) < 2)
		return op_err_set(err, -EPROTO, "the primary: IDENTIFY_SYSTEM answered no row");
	snprintf(sysid, 32, "%s", PQgetvalue(id, 0, 0));
	unsigned long tli = strtoul(PQgetvalue(id, 0, 1), NULL, 10);
	if (tli == 0 || tli > UINT32_MAX)
		return op_err_set(err, -EPROTO, "the primary: timeline %s", PQgetvalue(id, 0, 1));
	*ret_tli = (uint32_t)tli;
	*ret_n = 0;
	if (tli == 1)
		return 0;
	char cmd[32];
	snprintf(cmd, sizeof(cmd), "TIMELINE_HISTORY %lu", tli);
	_cleanup_(inst_pqclearp) PGresult *h = NULL;
	r = repl_exec(p, cmd, deadline_ms, &h, err);
	if (r)
		return r;
	if (PQntuples(h) != 1 || PQnfields(h) < 2)
		return op_err_set(err, -EPROTO, "the primary: TIMELINE_HISTORY answered no row");
	return inst_tli_history_parse(PQgetvalue(h, 0, 1), hist, max, ret_n, err);
}

#define HISTORY_MAX 256

/* A replication connection to the primary (conninfo expanded from dbname),
 * established within INST_DIVERGE_CONNECT_MS or given up: the supervisor's
 * main thread asks, and a primary that drops SYNs or a frozen one that never
 * finishes the TLS handshake must not hold its tick (a promotion waits on it)
 * for libpq's connect_timeout. *ret owned (PQfinish). */
static int connect_within(const char *conninfo, PGconn **ret, struct op_err *err)
{
	const char *const keys[] = { "dbname", "replication", NULL };
	const char *const vals[] = { conninfo, "true", NULL };
	PGconn *p = PQconnectStartParams(keys, vals, 1);
	int64_t deadline = inst_lease_now() + INST_DIVERGE_CONNECT_MS;
	/* libpq: poll as if PQconnectPoll had answered WRITING first */
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (p && PQstatus(p) != CONNECTION_BAD && st != PGRES_POLLING_FAILED) {
		if (st == PGRES_POLLING_OK) {
			*ret = p;
			return 0;
		}
		int64_t left = deadline - inst_lease_now();
		struct pollfd pfd = { .fd = PQsocket(p),
				      .events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
			PQfinish(p);
			return op_err_set(err, -ETIMEDOUT, "the primary: no connection within %d ms",
					  INST_DIVERGE_CONNECT_MS);
		}
		st = PQconnectPoll(p);
	}
	size_t len = p ? strcspn(PQerrorMessage(p), "\n") : 0;
	int r = op_err_set(err, -ECONNREFUSED, "the primary: %.*s", (int)len,
			   p ? PQerrorMessage(p) : "out of memory");
	if (p)
		PQfinish(p);
	return r;
}

int inst_diverge_check(PGconn *local, const char *primary_conninfo, uint32_t known_primary_tli,
		       struct inst_diverge_info *ret, struct op_err *err)
{
	struct local_view v = { 0 };
	*ret = (struct inst_diverge_info){ .verdict = INST_DIVERGE_UNKNOWN };
	int r = local_view(local, &v, err);
	if (r)
		return r;
	ret->tli = v.tli;
	ret->lsn = v.lsn;
	if (!inst_diverge_ask(v.streaming_tli, known_primary_tli)) {
		ret->primary_tli = known_primary_tli;
		ret->verdict = INST_DIVERGE_NO;
		return 0;
	}
	/* libpq is loaded: local is connected */
	_cleanup_(inst_pqfinishp) PGconn *p = NULL;
	if ((r = connect_within(primary_conninfo, &p, err)))
		return r;
	char sysid[32];
	struct inst_tli_switch *hist = op_calloc(HISTORY_MAX, sizeof(*hist));
	size_t n = 0;
	/* the two commands get as long as the connection had: a primary that
	 * froze after answering the connect must not hold the tick either */
	r = primary_view(p, inst_lease_now() + INST_DIVERGE_CONNECT_MS, sysid, &ret->primary_tli,
			 hist, HISTORY_MAX, &n, err);
	if (r == 0 && strcmp(sysid, v.sysid) != 0)
		r = op_err_set(err, -EXDEV, "the primary's system identifier %s is not ours (%s)",
			       sysid, v.sysid);
	if (r == 0)
		ret->verdict = inst_diverge_decide(v.tli, v.lsn, ret->primary_tli, hist, n,
						   &ret->fork);
	free(hist);
	return r;
}

char *inst_diverge_reason(const struct inst_diverge_info *d)
{
	char at[OP_LSN_LEN], fork[OP_LSN_LEN];
	op_lsn_format(d->lsn, at);
	op_lsn_format(d->fork, fork);
	if (d->fork == 0)
		return op_asprintf("replayed up to %s on timeline %" PRIu32
				   ", which is not in the primary's history (timeline %" PRIu32 ")",
				   at, d->tli, d->primary_tli);
	return op_asprintf("replayed up to %s on timeline %" PRIu32
			   ", past %s where the primary's history (timeline %" PRIu32
			   ") left it",
			   at, d->tli, fork, d->primary_tli);
}
