/* instance/cut.c - a replica cuts its WAL receiver off a primary it cannot
 * reach, on the operator's request (POST /pg/cut, docs/internals/failover.md
 * "Partition: the cut").
 *
 * The operator asks when it cannot reach the primary either. The replica
 * first makes its own TCP connect to the primary's postgres port; only when
 * that fails too, or connects but its WAL receiver does not stream or has
 * received nothing for INST_CUT_SILENT_MS (a frozen node, whose kernel still
 * completes the handshake), does it cut (a receiver already silent for more
 * than a lease period is watched until that window is over, so one request
 * decides: inst_cut_wait_ms): override.conf gets an empty primary_conninfo
 * (marked INST_CUT_MARK), postgres reloads, and the answer waits until no WAL
 * receiver runs. From then on the replica receives nothing from the old
 * primary, so the primary's round-trip proofs through it (instance/lease.h)
 * all date from before the cut. The main thread undoes it
 * (inst_cut_may_undo) as soon as the Cluster names another primary (the
 * failover is over: "pending" came and went), or, while it still names the
 * old one, only after a hold of API_FENCE_CUT_HOLD_MS (a request during the
 * hold extends it) and a quorum read of the Cluster started after it that
 * does not say "pending": the operator writes "pending" only while every cut
 * it counted is still held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/fence.h"
#include "api/names.h"
#include "instance/internal.h"
#include "instance/lease.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/log.h"
#include "support/tcp_probe.h"

void inst_cut_init(struct inst_cut *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

void inst_cut_destroy(struct inst_cut *c)
{
	pthread_mutex_destroy(&c->lock);
}

static bool ip_ok(const char *s)
{
	unsigned char b[16];
	return s && (inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Writes override.conf (body) and reloads postgres through c; *ret_written
 * (may be NULL) says whether the file was written, whatever the reload did. */
static int write_and_reload(PGconn *c, const char *pgdata, const struct op_buf *body,
			    bool *ret_written, struct op_err *err)
{
	_cleanup_free_ char *ov = op_asprintf("%s/override.conf", pgdata);
	_cleanup_(inst_pqclearp) PGresult *res = NULL;
	int r = inst_write_file(ov, op_buf_str(body), body->len, 0600, err);
	if (ret_written)
		*ret_written = r == 0;
	return r ? r : inst_pg_exec(c, "SELECT pg_reload_conf()", 0, NULL, &res, err);
}

/* Waits until no WAL receiver has run for two looks 20 ms apart (the startup
 * process applies the reload within milliseconds; the second look covers a
 * receiver it started just before). -ETIMEDOUT after INST_CUT_WAIT_MS. */
static int wait_no_receiver(PGconn *c, struct op_err *err)
{
	int64_t end = inst_lease_now() + INST_CUT_WAIT_MS;
	int quiet = 0;
	while (quiet < 2) {
		_cleanup_(inst_pqclearp) PGresult *res = NULL;
		int r = inst_pg_exec(c, "SELECT count(*) FROM pg_stat_wal_receiver", 0, NULL, &res,
				     err);
		if (r)
			return r;
		bool none = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "0") == 0;
		quiet = none ? quiet + 1 : 0;
		if (quiet < 2 && inst_lease_now() > end)
			return op_err_set(err, -ETIMEDOUT,
					  "the WAL receiver still runs %d ms after the cut",
					  INST_CUT_WAIT_MS);
		if (quiet < 2)
			sleep_ms(none ? 20 : 10);
	}
	return 0;
}

bool inst_cut_allowed(bool probe_ok, bool refused, int64_t silent_ms)
{
	if (!probe_ok && !refused)
		return true;
	/* connected: only the primary's kernel may have answered (a frozen
	 * node). A receiver that streams but hears nothing is cut; so is one
	 * that does not stream (it may hang in its connection to that frozen
	 * primary, which libpq's asynchronous connect never times out, and would
	 * stream from it the moment it thaws, after the promotion) */
	return probe_ok && (silent_ms < 0 || silent_ms >= INST_CUT_SILENT_MS);
}

int64_t inst_cut_wait_ms(bool probe_ok, int64_t silent_ms)
{
	if (!probe_ok || silent_ms < INST_CUT_WAIT_FROM_MS || silent_ms >= INST_CUT_SILENT_MS)
		return 0;
	return INST_CUT_SILENT_MS - silent_ms + 20;
}

/* How long the streaming WAL receiver has received nothing (ms), -1 when
 * none streams. */
static int receiver_silent_ms(PGconn *c, int64_t *ret_ms, struct op_err *err)
{
	_cleanup_free_ char *v = NULL;
	int r = inst_pg_value(c,
			      "SELECT max((extract(epoch FROM clock_timestamp() - last_msg_receipt_time)"
			      " * 1000)::int8) FROM pg_stat_wal_receiver WHERE status = 'streaming'",
			      0, NULL, &v, err);
	if (r)
		return r;
	*ret_ms = v ? strtoll(v, NULL, 10) : -1;
	return 0;
}

int inst_cut_request(struct inst_cut *cut, const struct inst_cut_env *env, const char *primary,
		     const char *ip, int64_t *ret_hold_ms, struct op_err *err)
{
	int64_t serial;
	if (!primary)
		return op_err_set(err, -EINVAL, "primary: missing");
	int r = api_pod_serial(env->cluster_name, primary, &serial, err);
	if (r) {
		op_err_prefix(err, "primary: ");
		return r;
	}
	if (!ip_ok(ip))
		return op_err_set(err, -EINVAL, "ip: not an IPv4 or IPv6 address");
	_cleanup_(inst_pqfinishp) PGconn *c = NULL;
	_cleanup_(inst_pqclearp) PGresult *rec = NULL;
	r = inst_pg_connect(env->sockdir, env->port, NULL, &c, err);
	r = r ? r : inst_pg_exec(c, "SELECT pg_is_in_recovery()", 0, NULL, &rec, err);
	if (r)
		return r;
	if (PQntuples(rec) != 1 || strcmp(PQgetvalue(rec, 0, 0), "t") != 0)
		return op_err_set(err, -EPERM, "not a replica");
	int e = 0;
	const char *hosts[] = { ip };
	unsigned port = env->primary_port ? env->primary_port : INST_PG_PORT;
	int ok = op_tcp_probe(hosts, 1, port, INST_CUT_PROBE_MS, &e);
	int64_t silent = -1, wait;
	if (ok == 1 && (r = receiver_silent_ms(c, &silent, err)) != 0)
		return r;
	if ((wait = inst_cut_wait_ms(ok == 1, silent)) > 0) {
		usleep((useconds_t)wait * 1000);
		if ((r = receiver_silent_ms(c, &silent, err)) != 0)
			return r;
	}
	if (!inst_cut_allowed(ok == 1, e == ECONNREFUSED, silent))
		return op_err_set(err, -EBUSY,
				  "primary %s (%s port %u) is reachable from here (WAL received %lld ms ago)",
				  primary, ip, port, (long long)silent);
	pthread_mutex_lock(&cut->lock);
	if (!cut->on) {
		_cleanup_(op_buf_donep) struct op_buf body = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		bool written = false;
		r = inst_render_standby_override(NULL, NULL, NULL, NULL, 0, &body, err);
		r = r ? r : write_and_reload(c, env->pgdata, &body, &written, err);
		/* from the write on, the cut stands (and is held) even if what follows fails */
		cut->on = written;
		r = r ? r : wait_no_receiver(c, err);
		if (r == 0)
			op_log_warn("WAL receiver cut: the primary is unreachable", "primary", primary,
				    "ip", ip);
	}
	int64_t now = inst_lease_now();
	if (cut->on && cut->until < now + API_FENCE_CUT_HOLD_MS)
		cut->until = now + API_FENCE_CUT_HOLD_MS;
	if (cut->on)
		snprintf(cut->primary, sizeof(cut->primary), "%s", primary);
	*ret_hold_ms = cut->until - now;
	pthread_mutex_unlock(&cut->lock);
	return r;
}

bool inst_cut_may_undo(bool on, const char *cut_primary, int64_t until, int64_t read_started,
		       bool read_ok, const char *target)
{
	if (!on || !read_ok || (target && strcmp(target, API_PENDING_FAILOVER) == 0))
		return false;
	/* a new primary is named: "pending" came and went (not known for a cut
	 * found at start, which never knew whom it was cut off) */
	if (target && *target && cut_primary && *cut_primary && strcmp(target, cut_primary) != 0)
		return true;
	return read_started >= until;
}

int inst_cut_undo(struct inst_cut *cut, const struct inst_cut_env *env, int64_t read_started,
		  const char *target, const struct op_buf *override, struct op_err *err)
{
	pthread_mutex_lock(&cut->lock);
	int r = 0;
	if (inst_cut_may_undo(cut->on, cut->primary, cut->until, read_started, true, target)) {
		_cleanup_(inst_pqfinishp) PGconn *c = NULL;
		r = inst_pg_connect(env->sockdir, env->port, NULL, &c, err);
		r = r ? r : write_and_reload(c, env->pgdata, override, NULL, err);
		if (r == 0) {
			op_log_info("WAL receiver cut undone: the Cluster names no pending failover",
				    "primary", cut->primary, "targetPrimary", target ? target : "");
			cut->on = false;
		}
	}
	pthread_mutex_unlock(&cut->lock);
	return r;
}

void inst_cut_forget(struct inst_cut *cut)
{
	pthread_mutex_lock(&cut->lock);
	cut->on = false;
	pthread_mutex_unlock(&cut->lock);
}

void inst_cut_resume(struct inst_cut *cut, const char *pgdata, int64_t now)
{
	_cleanup_free_ char *ov = op_asprintf("%s/override.conf", pgdata);
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err e = OP_ERR_INIT;
	if (inst_read_file(ov, OP_BUF_MAX_SMALL, &b, &e) != 0 || !strstr(op_buf_str(&b), INST_CUT_MARK))
		return;
	pthread_mutex_lock(&cut->lock);
	cut->on = true;
	cut->until = now + API_FENCE_CUT_HOLD_MS;
	pthread_mutex_unlock(&cut->lock);
	op_log_warn("WAL receiver cut found at start: held again before it is undone");
}

bool inst_cut_report(struct inst_cut *cut, int64_t now, char *primary, size_t n,
		     int64_t *ret_hold_ms)
{
	pthread_mutex_lock(&cut->lock);
	bool on = cut->on;
	snprintf(primary, n, "%s", cut->primary);
	*ret_hold_ms = on && cut->until > now ? cut->until - now : 0;
	pthread_mutex_unlock(&cut->lock);
	return on;
}
