/* instance/metrics_pipeline.c - a collection's statements on one connection
 * in one libpq pipeline (metrics_internal.h tells the design: one segment,
 * the items after a failed one again in a next round, a ROLLBACK TO
 * SAVEPOINT guard after each custom query). The plan and the verdicts are
 * pure (tests/unit/test_instance_metrics.c); inst_pl_run sends and reads
 * against a deadline.
 *
 * Why not the alternatives: a Sync after every item isolates errors without
 * rounds but the server then flushes once per item and the client wakes up
 * once per item (measured: no CPU saved); SAVEPOINT per query inside one
 * segment does not isolate anything (after an error the server skips every
 * message up to the Sync, the ROLLBACK TO included); one implicit transaction
 * per item would rely on default_transaction_read_only, which a query can
 * switch off for the next ones (SET default_transaction_read_only = off
 * commits with its implicit transaction). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance/internal.h"
#include "instance/metrics_internal.h"
#include "support/alloc.h"

#define SAVEPOINT_NAME "pgop_metrics"

/* ---- the plan and the verdicts (pure) ---- */

static size_t add(struct inst_pl_cmd *out, size_t k, enum inst_pl_kind kind, size_t item)
{
	out[k].kind = kind;
	out[k].item = item;
	return k + 1;
}

size_t inst_pl_plan(size_t from, size_t n, enum inst_pl_setup setup, bool end,
		    const bool *trusted, struct inst_pl_cmd *out)
{
	size_t k = 0;
	for (size_t i = from; i < n; i++) {
		if (i == from && setup != INST_PL_KEEP) {
			if (setup == INST_PL_RENEW)
				k = add(out, k, INST_PL_ROLLBACK, 0);
			k = add(out, k, INST_PL_BEGIN, 0);
			k = add(out, k, INST_PL_SET, 0);
			k = add(out, k, INST_PL_SAVEPOINT, 0);
		} else if (i == from || !trusted || !trusted[i - 1]) {
			k = add(out, k, INST_PL_GUARD, i);
		}
		k = add(out, k, INST_PL_ITEM, i);
	}
	if (end && (from < n || setup == INST_PL_KEEP))
		k = add(out, k, INST_PL_END, 0);
	if (k)
		k = add(out, k, INST_PL_SYNC, 0);
	return k;
}

static bool is_setup(enum inst_pl_kind k)
{
	return k == INST_PL_ROLLBACK || k == INST_PL_BEGIN || k == INST_PL_SET ||
	       k == INST_PL_SAVEPOINT;
}

size_t inst_pl_judge(const struct inst_pl_cmd *cmds, const enum inst_pl_st *st, size_t nread,
		     size_t from, size_t n, enum inst_pl_outcome *out, size_t *ret_cause,
		     bool *ret_lost_tx)
{
	for (size_t i = from; i < n; i++)
		out[i] = INST_PL_UNREAD;
	*ret_cause = nread;
	*ret_lost_tx = false;
	for (size_t k = 0; k < nread; k++) {
		const struct inst_pl_cmd *c = &cmds[k];
		if (is_setup(c->kind) && st[k] != INST_PL_OK) {
			for (size_t i = from; i < n; i++)
				out[i] = INST_PL_LOST;
			*ret_cause = k;
			return n;
		}
		if (c->kind == INST_PL_GUARD && st[k] != INST_PL_OK) {
			for (size_t i = c->item; i < n; i++)
				out[i] = INST_PL_AGAIN;
			*ret_lost_tx = true;
			return c->item;
		}
		if (c->kind != INST_PL_ITEM)
			continue;
		if (st[k] == INST_PL_ERROR) { /* the rest of the segment was skipped */
			out[c->item] = INST_PL_FAILED;
			for (size_t i = c->item + 1; i < n; i++)
				out[i] = INST_PL_AGAIN;
			return c->item + 1;
		}
		out[c->item] = st[k] == INST_PL_OK ? INST_PL_RAN : INST_PL_LOST;
	}
	return n;
}

/* ---- sending and reading ---- */

static void set_msg(char **dst, const char *m)
{
	size_t len = m ? strlen(m) : 0;
	while (len && (m[len - 1] == '\n' || m[len - 1] == ' '))
		len--;
	free(*dst);
	*dst = op_strndup(m ? m : "", len);
}

static const char *cmd_sql(const struct inst_pl_cmd *cmd, const struct inst_pl_item *it,
			   const char *set_sql)
{
	switch (cmd->kind) {
	case INST_PL_ROLLBACK:
	case INST_PL_END:
		return "ROLLBACK";
	case INST_PL_BEGIN:
		return "BEGIN READ ONLY";
	case INST_PL_SET:
		return set_sql;
	case INST_PL_SAVEPOINT:
		return "SAVEPOINT " SAVEPOINT_NAME;
	case INST_PL_GUARD:
		return "ROLLBACK TO SAVEPOINT " SAVEPOINT_NAME;
	case INST_PL_ITEM:
		return it[cmd->item].sql;
	case INST_PL_SYNC:
		break;
	}
	return NULL;
}

/* Queues the commands (extended protocol: one statement each) and flushes
 * them, nonblocking: the server's answers are read meanwhile, so neither
 * side can stall on a full socket buffer. */
static int send_all(PGconn *c, const struct inst_pl_cmd *cmds, size_t ncmds,
		    const struct inst_pl_item *it, int64_t stmt_timeout_ms, int64_t deadline_ms,
		    struct op_err *err)
{
	char set_sql[192];
	snprintf(set_sql, sizeof(set_sql),
		 "SELECT pg_catalog.set_config('statement_timeout', '%lld', true), "
		 "pg_catalog.set_config('search_path', 'pg_catalog, public, pg_temp', true)",
		 (long long)stmt_timeout_ms);
	for (size_t k = 0; k < ncmds; k++) {
		const char *sql = cmd_sql(&cmds[k], it, set_sql);
		int ok = sql ? PQsendQueryParams(c, sql, 0, NULL, NULL, NULL, NULL, 0)
			     : PQpipelineSync(c);
		if (!ok)
			return op_err_set(err, -EIO, "%s", PQerrorMessage(c));
	}
	int f;
	while ((f = PQflush(c)) == 1) {
		int r = inst_pq_wait(c, POLLIN | POLLOUT, deadline_ms, err);
		if (r)
			return r;
	}
	return f < 0 ? op_err_set(err, -EIO, "%s", PQerrorMessage(c)) : 0;
}

/* One command's answer: *st, the item's result or error (ITEM), the setup's
 * error (*cause_msg). A COPY or a Sync out of place: the connection is out of
 * step (-EIO). */
static int read_cmd(PGconn *c, const struct inst_pl_cmd *cmd, struct inst_pl_item *it,
		    int64_t deadline_ms, enum inst_pl_st *st, char **cause_msg, struct op_err *err)
{
	PGresult *res = NULL;
	int r = inst_pq_next_result(c, deadline_ms, &res, err);
	if (r)
		return r;
	ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	bool sync = cmd->kind == INST_PL_SYNC;
	if (!res || (s == PGRES_PIPELINE_SYNC) != sync || s == PGRES_COPY_OUT ||
	    s == PGRES_COPY_IN || s == PGRES_COPY_BOTH) {
		PQclear(res);
		return op_err_set(err, -EIO, "pipeline out of step (result status %d)", (int)s);
	}
	*st = s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK || sync ? INST_PL_OK
	      : s == PGRES_PIPELINE_ABORTED			     ? INST_PL_ABORTED
								     : INST_PL_ERROR;
	if (*st == INST_PL_ERROR) {
		const char *msg = PQresultErrorMessage(res);
		set_msg(cmd->kind == INST_PL_ITEM ? &it[cmd->item].error : cause_msg,
			msg && *msg ? msg : s == PGRES_EMPTY_QUERY ? "empty query" : "no result");
	}
	if (cmd->kind == INST_PL_ITEM && *st == INST_PL_OK) {
		PQclear(it[cmd->item].res);
		it[cmd->item].res = res;
	} else {
		PQclear(res);
	}
	if (sync)
		return 0; /* no NULL follows a Sync's result */
	for (;;) { /* the command's end */
		if ((r = inst_pq_next_result(c, deadline_ms, &res, err)))
			return r;
		if (!res)
			return 0;
		s = PQresultStatus(res);
		PQclear(res);
		if (s == PGRES_PIPELINE_SYNC || s == PGRES_COPY_OUT || s == PGRES_COPY_IN ||
		    s == PGRES_COPY_BOTH)
			return op_err_set(err, -EIO, "pipeline out of step (result status %d)",
					  (int)s);
	}
}

/* One pipeline: items [from, n) planned with setup. Their outcomes into
 * it[] (AGAIN ones cleared); returns the first to run again (n: none), or
 * the connection's error (*ret_next untouched). */
static int one_pipeline(PGconn *c, struct inst_pl_item *it, size_t from, size_t n,
			enum inst_pl_setup setup, bool end, int64_t deadline_ms,
			int64_t stmt_timeout_ms, size_t *ret_next, bool *ret_lost_tx,
			struct op_err *err)
{
	size_t max = INST_PL_MAX_CMDS(from, n);
	struct inst_pl_cmd *cmds = op_calloc(max, sizeof(*cmds));
	enum inst_pl_st *st = op_calloc(max, sizeof(*st));
	enum inst_pl_outcome *out = op_calloc(n + 1, sizeof(*out));
	bool *trusted = op_calloc(n + 1, sizeof(*trusted));
	for (size_t i = 0; i < n; i++)
		trusted[i] = it[i].trusted;
	size_t ncmds = inst_pl_plan(from, n, setup, end, trusted, cmds), nread = 0, cause = 0;
	char *cause_msg = NULL;
	int r = PQenterPipelineMode(c) && PQsetnonblocking(c, 1) == 0
			? 0
			: op_err_set(err, -EIO, "pipeline mode: %s", PQerrorMessage(c));
	r = r ? r : send_all(c, cmds, ncmds, it, stmt_timeout_ms, deadline_ms, err);
	while (!r && nread < ncmds) {
		r = read_cmd(c, &cmds[nread], it, deadline_ms, &st[nread], &cause_msg, err);
		nread += r == 0;
	}
	if (!r && (PQsetnonblocking(c, 0) != 0 || !PQexitPipelineMode(c)))
		r = op_err_set(err, -EIO, "pipeline mode: %s", PQerrorMessage(c));
	size_t next = inst_pl_judge(cmds, st, nread, from, n, out, &cause, ret_lost_tx);
	for (size_t i = from; i < n; i++) {
		struct inst_pl_item *x = &it[i];
		if (out[i] == INST_PL_RAN)
			continue;
		PQclear(x->res);
		x->res = NULL;
		if (out[i] == INST_PL_FAILED) {
			x->r = -EBADMSG;
		} else if (out[i] == INST_PL_LOST) {
			x->r = -EIO;
			char m[OP_ERR_MSG_MAX];
			snprintf(m, sizeof(m), "the read-only transaction could not begin: %s",
				 cause_msg ? cause_msg : "its statement was skipped");
			set_msg(&x->error, m);
		} else if (out[i] == INST_PL_UNREAD && r) {
			x->r = r;
			set_msg(&x->error, err->msg);
		} else {
			free(x->error);
			x->error = NULL;
		}
	}
	*ret_next = next;
	free(cause_msg);
	free(trusted);
	free(cmds);
	free(st);
	free(out);
	return r;
}

int inst_pl_run(PGconn *c, struct inst_pl_item *it, size_t n, bool end, int64_t deadline_ms,
		int64_t stmt_timeout_ms, struct op_err *err)
{
	for (size_t i = 0; i < n; i++)
		it[i].r = 0;
	PGTransactionStatusType ts = PQtransactionStatus(c);
	enum inst_pl_setup setup = ts == PQTRANS_IDLE ? INST_PL_NEW : INST_PL_KEEP;
	size_t from = 0;
	for (;;) {
		size_t next = n;
		bool lost_tx = false;
		int r = one_pipeline(c, it, from, n, setup, end, deadline_ms, stmt_timeout_ms, &next,
				     &lost_tx, err);
		ts = PQtransactionStatus(c);
		if (r || (next >= n && (!end || ts == PQTRANS_IDLE || from == n)))
			return r;
		/* Again from item next: after one that failed, in the same transaction
		 * (its guard returns to the savepoint); after the transaction was lost
		 * (an item ended it), in a new one. A plan with a setup has no guard
		 * before its first item, so a round that makes no progress is followed
		 * by one that does. With end, the last round may be the ROLLBACK alone
		 * (the last item failed: the ROLLBACK after it was skipped). */
		from = next;
		setup = ts == PQTRANS_IDLE ? INST_PL_NEW
			: lost_tx	   ? INST_PL_RENEW
					   : INST_PL_KEEP;
	}
}

void inst_pl_items_done(struct inst_pl_item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		PQclear(it[i].res);
		it[i].res = NULL;
		free(it[i].error);
		it[i].error = NULL;
		it[i].r = 0;
	}
}
