/* instance/metrics_collect.c - the live collection behind GET /metrics.
 *
 * One collection at a time (scrape lock; a second scrape waits, bounded).
 * PostgreSQL is reached over the unix socket as cnpg_metrics_exporter (peer,
 * pg_monitor, no superuser: CloudNativePG's role), with
 * default_transaction_read_only on; every statement runs in a READ ONLY
 * transaction with SET LOCAL statement_timeout, is sent with the extended
 * protocol (one statement, no "COMMIT; ..." escape) and is awaited with
 * poll() against the collection's deadline (budget_ms): a postgres that stops
 * answering costs one budget and a reconnection, never a hung scrape.
 *
 * Round trips per connection and collection (libpq 14+: pipelines,
 * metrics_pipeline.c, each statement isolated from the others' errors):
 * the collector's query (with the database list when due queries target
 * '*'), the due queries' predicates (when any), then pg_stat_wal, the due
 * queries and the ROLLBACK; one more per query that fails. An older libpq:
 * one round trip per statement (begin_ro, exec_deadline), as before.
 *
 * Query results are cached per query for metricsQueriesTTL (default 30 s) or
 * the query's cache_seconds; errors too (CloudNativePG caches the whole set).
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "api/timestamp.h"
#include "instance/internal.h"
#include "instance/lease.h"
#include "instance/metrics_internal.h"
#include "support/alloc.h"
#include "support/log.h"
#include "support/metrics.h"

#define STMT_TIMEOUT_MS 5000
#define ROLLBACK_MS 1000 /* the ROLLBACK that ends a collection's transaction */
#define MAX_TARGET_DBS 64
#define MAX_POOL 8 /* kept connections to target databases; others connect per run */

/* collection_errors_total{collector}: CloudNativePG's labels. */
enum coll { C_UP, C_QUERIES, C_ARCHIVE, C_WALSET, C_VERSION, C_WALSTAT, C_SYNC, C_N };
static const char *const coll_names[C_N] = {
	"Collect.up",	       "Collect.cnpg",	     "Collect.PgWALArchiveStats",
	"Collect.PGWalSettings", "Collect.PGVersion", "Collect.PGWALStat",
	"Collect.SynchronousStandbys",
};

struct qcache { /* one query's last run */
	char *key;      /* owned */
	int64_t at_ms;  /* monotonic */
	char *error;    /* owned; NULL = it worked */
	bool broken;    /* error is the query's own (query_fault): /pg/status reports it */
	struct inst_mfams fams;
	bool used;      /* still in the effective set */
};

/* The Cluster's backup times (its status, written by the reconciler) as
 * unix seconds, 0 when none: CloudNativePG's collector reads the same. */
struct backup_times {
	double first_point, last_ok, last_failed;
};

struct inst_metrics {
	char *sockdir, *pgdata, *mondir, *user; /* owned copies */
	unsigned port, budget_ms;
	pthread_mutex_t lock; /* the view below */
	char *cluster;        /* owned */
	struct backup_times backups;
	int64_t ttl_ms;
	bool disable_default, primary, fenced, up_hint;
	_Atomic bool paused;  /* read without the lock by collect() */
	char **custom_files;  /* owned paths of the custom query files */
	size_t n_custom;
	pthread_mutex_t scrape; /* everything below: one collection at a time */
	PGconn *conn;           /* the default database, kept between scrapes */
	struct {                /* other target databases' connections, kept too */
		char *db;       /* owned */
		PGconn *c;      /* owned; NULL = to connect */
	} pool[MAX_POOL];
	size_t n_pool;
	struct inst_mq_set defaults, custom;
	bool custom_loaded;
	uint64_t custom_sig;
	char **file_errors; /* owned: custom files that could not be loaded, why */
	char **file_error_paths; /* owned: their paths (same index) */
	size_t n_file_errors;
	struct qcache *qc;
	size_t n_qc;
	uint64_t collections, coll_errors[C_N], cache_hits;
	bool cache_miss;
	int64_t last_update_s;
	int64_t deadline_ms; /* of the collection running */
	char *errors_json;   /* owned, under lock: the failing queries and files as
			      * /pg/status's metricsErrors (inst_metrics_errors_json) */
};

static void trim_msg(const char *m, struct op_err *err, int code)
{
	size_t len = m ? strlen(m) : 0;
	while (len && (m[len - 1] == '\n' || m[len - 1] == ' '))
		len--;
	op_err_set(err, code, "%.*s", (int)len, m ? m : "");
}

/* ---- statements against a deadline ---- */

/* Sends sql and waits for its results until m->deadline_ms: one statement
 * through the extended protocol (queries from files: no second statement can
 * ride along), or, with simple, our own constant statements in one round
 * trip. *ret owned: the last result (TUPLES_OK or COMMAND_OK); the first
 * failed one is the error, -EBADMSG (the server answered with an error:
 * the statement's fault, statement_timeout included). -ETIMEDOUT: the
 * connection is no longer usable (the caller drops it); -EIO: it could not
 * be sent. */
static int exec_sql(struct inst_metrics *m, PGconn *c, const char *sql, bool simple,
		    PGresult **ret, struct op_err *err)
{
	int sent = simple ? PQsendQuery(c, sql)
			  : PQsendQueryParams(c, sql, 0, NULL, NULL, NULL, NULL, 0);
	if (!sent) {
		trim_msg(PQerrorMessage(c), err, -EIO);
		return -EIO;
	}
	PGresult *res = NULL, *next;
	int r = 0;
	for (;;) {
		int w = inst_pq_next_result(c, m->deadline_ms, &next, err);
		if (w) {
			if (res)
				PQclear(res);
			return -ETIMEDOUT; /* either way the connection is dropped */
		}
		if (!next)
			break;
		ExecStatusType st = PQresultStatus(next);
		if (!r && st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
			trim_msg(PQresultErrorMessage(next), err, -EBADMSG);
			r = -EBADMSG; /* the server answered: an error of the statement */
		}
		if (res)
			PQclear(res);
		res = next;
	}
	if (!r && !res)
		r = op_err_set(err, -EIO, "no result");
	if (!r && ret)
		*ret = res;
	else if (res)
		PQclear(res);
	return r;
}

static int exec_deadline(struct inst_metrics *m, PGconn *c, const char *sql, PGresult **ret,
			 struct op_err *err)
{
	return exec_sql(m, c, sql, false, ret, err);
}

/* Without pipelines (libpq < 14): the queries of one collection on one
 * connection share a READ ONLY
 * transaction with the collection's statement timeout: BEGIN with the first
 * of them, ROLLBACK at the collection's end (rollback_all), and after a
 * query that failed, in the same round trip as the next BEGIN. Three
 * statements and round trips per query became one (bench/metrics.sh). */
static int begin_ro(struct inst_metrics *m, PGconn *c, struct op_err *err)
{
	int64_t left = m->deadline_ms - inst_lease_now();
	if (left < 20)
		return op_err_set(err, -ETIMEDOUT, "collection budget exhausted");
	PGTransactionStatusType ts = PQtransactionStatus(c);
	if (ts == PQTRANS_INTRANS)
		return 0; /* this collection's, still good */
	int64_t t = left < STMT_TIMEOUT_MS ? left : STMT_TIMEOUT_MS;
	char sql[224];
	snprintf(sql, sizeof(sql),
		 "%sBEGIN READ ONLY; SET LOCAL statement_timeout = %lld; "
		 "SET LOCAL search_path = pg_catalog, public, pg_temp",
		 ts == PQTRANS_INERROR ? "ROLLBACK; " : "", (long long)t);
	return exec_sql(m, c, sql, true, NULL, err);
}

/* After a statement: a connection that is stuck (no answer within the
 * budget) or broken is dropped, a fresh one next time; otherwise its
 * transaction goes on (a failed one is rolled back by the next begin_ro). */
static void end_tx(PGconn **c, int r)
{
	if (*c && (r == -ETIMEDOUT || PQstatus(*c) != CONNECTION_OK)) {
		PQfinish(*c);
		*c = NULL;
	}
}

/* Ends c's transaction, if any, within ROLLBACK_MS (the collection's budget
 * may be spent); a connection that cannot is dropped. */
static void rollback_one(struct inst_metrics *m, PGconn **c)
{
	if (!*c || PQtransactionStatus(*c) == PQTRANS_IDLE)
		return;
	int64_t deadline = m->deadline_ms;
	m->deadline_ms = inst_lease_now() + ROLLBACK_MS;
	if (exec_deadline(m, *c, "ROLLBACK", NULL, NULL) ||
	    PQtransactionStatus(*c) != PQTRANS_IDLE) {
		PQfinish(*c);
		*c = NULL;
	}
	m->deadline_ms = deadline;
}

static int connect_db(struct inst_metrics *m, const char *db, PGconn **ret, struct op_err *err)
{
	char port[16];
	snprintf(port, sizeof(port), "%u", m->port ? m->port : INST_PG_PORT);
	const char *keys[] = { "host", "port", "user", "dbname", "application_name",
			       "connect_timeout", "options", NULL };
	const char *vals[] = { m->sockdir, port, m->user, db, "cnpg_metrics_exporter", "2",
			       "-c default_transaction_read_only=on", NULL };
	int r = op_dl_load(&inst_dl_pq, err);
	if (r < 0)
		return r;
	PGconn *c = PQconnectdbParams(keys, vals, 0);
	if (!c)
		return op_err_set(err, -ENOMEM, "libpq: out of memory");
	if (PQstatus(c) != CONNECTION_OK) {
		trim_msg(PQerrorMessage(c), err, -ECONNREFUSED);
		PQfinish(c);
		return -ECONNREFUSED;
	}
	*ret = c;
	return 0;
}

/* ---- statements of a collection ---- */

/* Pipelines when libpq has them, unless PGOP_METRICS_NO_PIPELINE is set
 * (non-empty): a test's way to run the one-at-a-time path on libpq 14+. */
static bool use_pipeline(void)
{
	const char *off = getenv("PGOP_METRICS_NO_PIPELINE");
	return inst_pq_pipeline() && !(off && *off);
}

static void item_fail(struct inst_pl_item *it, int r, const char *msg)
{
	it->r = r;
	free(it->error);
	it->error = op_strdup(msg);
}

/* Runs it[0..n) on *c, each in the collection's READ ONLY transaction with
 * its statement timeout: in one pipeline when the libpq loaded has pipeline
 * mode (14+; metrics_pipeline.c), else one statement and round trip at a
 * time (begin_ro, exec_deadline). With end, the pipeline's last segment ends
 * the transaction (otherwise rollback_all does). A connection that failed
 * (no answer in time, broken) is dropped: *c NULL, a new one next time. */
static void run_items(struct inst_metrics *m, PGconn **c, struct inst_pl_item *it, size_t n,
		      bool end)
{
	struct op_err err = OP_ERR_INIT;
	int64_t left = m->deadline_ms - inst_lease_now();
	if (n == 0 && !end)
		return;
	if (*c && use_pipeline()) {
		int r = left < 20 ? op_err_set(&err, -ETIMEDOUT, "collection budget exhausted")
				  : inst_pl_run(*c, it, n, end, m->deadline_ms,
						left < STMT_TIMEOUT_MS ? left : STMT_TIMEOUT_MS, &err);
		for (size_t i = 0; left < 20 && i < n; i++)
			item_fail(&it[i], r, err.msg);
		if (r) {
			PQfinish(*c);
			*c = NULL;
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		op_err_clear(&err);
		int r = *c ? begin_ro(m, *c, &err) : op_err_set(&err, -ECONNREFUSED, "not connected");
		r = r ? r : exec_deadline(m, *c, it[i].sql, &it[i].res, &err);
		if (r)
			item_fail(&it[i], r, err.msg);
		end_tx(c, r);
	}
}

/* The databases a '*' or glob target matches: those the role may connect to. */
#define LIST_DBS_SQL                                                                               \
	"SELECT datname FROM pg_catalog.pg_database WHERE datallowconn AND NOT datistemplate AND " \
	"pg_catalog.has_database_privilege(datname, 'CONNECT') ORDER BY 1"

struct dbs { /* the '*' expansion, listed once per collection */
	char **v;   /* owned */
	size_t n;
	bool listed;
	char *error; /* owned: why it could not be listed (for the first query using it) */
};

static void dbs_done(struct dbs *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
	free(d->error);
}

/* The list from LIST_DBS_SQL's item. */
static void dbs_take(struct dbs *d, const struct inst_pl_item *it)
{
	d->listed = true;
	if (it->r) {
		d->error = op_strdup(it->error ? it->error : "");
		return;
	}
	size_t n = (size_t)PQntuples(it->res);
	if (n > MAX_TARGET_DBS)
		n = MAX_TARGET_DBS;
	d->v = op_calloc(n + 1, sizeof(*d->v));
	for (size_t i = 0; i < n; i++)
		d->v[i] = op_strdup(PQgetvalue(it->res, (int)i, 0));
	d->n = n;
}

static void list_dbs(struct inst_metrics *m, struct dbs *d)
{
	struct inst_pl_item it = { .sql = LIST_DBS_SQL, .trusted = true };
	run_items(m, &m->conn, &it, 1, false);
	dbs_take(d, &it);
	inst_pl_items_done(&it, 1);
}

/* ---- the query set and its cache ---- */

static struct qcache *qcache_get(struct inst_metrics *m, const char *key)
{
	for (size_t i = 0; i < m->n_qc; i++)
		if (strcmp(m->qc[i].key, key) == 0)
			return &m->qc[i];
	m->qc = op_realloc(m->qc, (m->n_qc + 1) * sizeof(*m->qc));
	struct qcache *e = &m->qc[m->n_qc++];
	memset(e, 0, sizeof(*e));
	e->key = op_strdup(key);
	return e;
}

static void qcache_clear(struct qcache *e)
{
	inst_mfams_done(&e->fams);
	free(e->error);
	e->error = NULL;
	e->broken = false;
}

/* Drops the entries of queries no longer in the set. */
static void qcache_sweep(struct inst_metrics *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->n_qc; i++) {
		if (m->qc[i].used) {
			m->qc[k++] = m->qc[i];
			continue;
		}
		qcache_clear(&m->qc[i]);
		free(m->qc[i].key);
	}
	m->n_qc = k;
}

/* The connection for db: the kept one for "postgres", a kept one per other
 * database (MAX_POOL), else a new one into *tmp (the caller finishes it).
 * *ret borrowed. */
static int conn_for(struct inst_metrics *m, const char *db, PGconn ***ret, PGconn **tmp,
		    struct op_err *err)
{
	if (strcmp(db, "postgres") == 0) {
		*ret = &m->conn;
		return m->conn ? 0 : op_err_set(err, -ECONNREFUSED, "not connected");
	}
	size_t i = 0;
	while (i < m->n_pool && strcmp(m->pool[i].db, db) != 0)
		i++;
	if (i == m->n_pool && m->n_pool < MAX_POOL)
		m->pool[m->n_pool++].db = op_strdup(db);
	PGconn **c = i < m->n_pool ? &m->pool[i].c : tmp;
	*ret = c;
	return *c ? 0 : connect_db(m, db, c, err);
}

/* Ends the collection's transaction on every kept connection. */
static void rollback_all(struct inst_metrics *m)
{
	rollback_one(m, &m->conn);
	for (size_t i = 0; i < m->n_pool; i++)
		rollback_one(m, &m->pool[i].c);
}

/* Closes every kept connection (under the scrape lock). */
static void drop_conns(struct inst_metrics *m)
{
	if (m->conn)
		PQfinish(m->conn);
	m->conn = NULL;
	for (size_t i = 0; i < m->n_pool; i++) {
		if (m->pool[i].c)
			PQfinish(m->pool[i].c);
		free(m->pool[i].db);
	}
	m->n_pool = 0;
}

/* An error that is the query's own: the server answered it with an error
 * (SQL, permissions, a write in the read-only transaction, statement_timeout)
 * or its result does not fit its metrics. Not one of the connection (lost,
 * refused, the collection budget spent: a restart, a switchover), which
 * counts in cnpg_errors_total but is no broken query. */
static bool query_fault(int r)
{
	return r == -EBADMSG || r == -EINVAL;
}

/* Whether q runs here: primary-only queries, runonserver against v. */
static bool applies(const struct inst_mq *q, bool primary, const unsigned v[3])
{
	if (q->primary && !primary)
		return false;
	return !q->runonserver || inst_semver_match(q->runonserver, v) == 1;
}

/* A cheap signature of the custom files (path, inode, size, mtime): they
 * are read and parsed again only when it changes. */
static uint64_t files_sig(char **files, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		uint64_t v[4] = { 0 };
		if (stat(files[i], &st) == 0)
			v[0] = st.st_ino, v[1] = (uint64_t)st.st_size,
			v[2] = (uint64_t)st.st_mtim.tv_sec, v[3] = (uint64_t)st.st_mtim.tv_nsec;
		for (const char *p = files[i]; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		for (int k = 0; k < 4; k++)
			h = (h ^ v[k]) * 1099511628211ull;
	}
	return h;
}

static void file_errors_free(struct inst_metrics *m)
{
	for (size_t i = 0; i < m->n_file_errors; i++) {
		free(m->file_errors[i]);
		free(m->file_error_paths[i]);
	}
	free(m->file_errors);
	free(m->file_error_paths);
	m->file_errors = m->file_error_paths = NULL;
	m->n_file_errors = 0;
}

/* Reads the custom query files into m->custom when they changed; a file
 * that cannot be read or parsed is kept as an error (its queries are not
 * run: the others are). */
static void load_custom(struct inst_metrics *m, char **files, size_t n)
{
	uint64_t sig = files_sig(files, n);
	if (m->custom_loaded && sig == m->custom_sig)
		return;
	inst_mq_set_done(&m->custom);
	file_errors_free(m);
	for (size_t i = 0; i < n; i++) {
		struct op_buf b = OP_BUF_INIT(INST_MQ_MAX_FILE);
		struct op_err err = OP_ERR_INIT;
		int r = inst_read_file(files[i], INST_MQ_MAX_FILE, &b, &err);
		r = r ? r : inst_mq_parse(op_buf_str(&b), b.len, files[i], &m->custom, &err);
		if (r) {
			op_log_warn("metrics: custom queries not loaded", "file", files[i], "error",
				    err.msg);
			size_t sz = (m->n_file_errors + 1) * sizeof(char *);
			m->file_errors = op_realloc(m->file_errors, sz);
			m->file_error_paths = op_realloc(m->file_error_paths, sz);
			m->file_error_paths[m->n_file_errors] = op_strdup(files[i]);
			m->file_errors[m->n_file_errors++] = op_strdup(err.msg);
		}
		op_buf_done(&b);
	}
	m->custom_sig = sig;
	m->custom_loaded = true;
}

/* The queries to run, borrowed: the defaults (unless disabled), each custom
 * query replacing a default of the same key or appended. *ret owned array. */
static size_t effective_set(struct inst_metrics *m, bool disable_default,
			    const struct inst_mq ***ret)
{
	size_t n = 0;
	const struct inst_mq **v =
		op_calloc(m->defaults.n + m->custom.n + 1, sizeof(*v));
	for (size_t i = 0; !disable_default && i < m->defaults.n; i++)
		v[n++] = &m->defaults.q[i];
	for (size_t i = 0; i < m->custom.n; i++) {
		size_t k = 0;
		while (k < n && strcmp(v[k]->key, m->custom.q[i].key) != 0)
			k++;
		v[k] = &m->custom.q[i];
		if (k == n)
			n++;
	}
	*ret = v;
	return n;
}

/* ---- the collector's own metrics (cnpg_collector_*) ---- */

struct core { /* what one collection learnt */
	bool up, error;
	unsigned v[3];       /* semver of the server: major.0.minor (CloudNativePG's) */
	bool primary;
	double sync;         /* requested synchronous standbys; NAN = not reported */
	double wal_seg, min_wal, max_wal, keep_wal, slots_max; /* settings (MB but wal_seg) */
	char *walstat[9];    /* pg_stat_wal's columns (owned), last = stats_reset */
	size_t n_walstat;
	double dur_up;
};

#define CORE_SQL                                                                                   \
	"SELECT pg_catalog.current_setting('server_version_num'), pg_catalog.pg_is_in_recovery(), " \
	"pg_catalog.current_setting('synchronous_standby_names'), "                                \
	"s.seg, s.min, s.max, s.keep, s.slots FROM (SELECT "                                         \
	"max(setting) FILTER (WHERE name = 'wal_segment_size') AS seg, "                           \
	"max(setting) FILTER (WHERE name = 'min_wal_size') AS min, "                               \
	"max(setting) FILTER (WHERE name = 'max_wal_size') AS max, "                               \
	"max(setting) FILTER (WHERE name = 'wal_keep_size') AS keep, "                             \
	"max(setting) FILTER (WHERE name = 'max_slot_wal_keep_size') AS slots "                    \
	"FROM pg_catalog.pg_settings WHERE name IN ('wal_segment_size', 'min_wal_size', "          \
	"'max_wal_size', 'wal_keep_size', 'max_slot_wal_keep_size')) s"
#define WALSTAT_SQL                                                                                \
	"SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync, "          \
	"wal_write_time, wal_sync_time, stats_reset FROM pg_catalog.pg_stat_wal"
#define WALSTAT18_SQL                                                                              \
	"SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, stats_reset "                   \
	"FROM pg_catalog.pg_stat_wal"

static double cell_num(PGresult *res, int col)
{
	double v = NAN;
	if (!PQgetisnull(res, 0, col) && inst_metrics_parse_value(PQgetvalue(res, 0, col), &v))
		v = NAN;
	return v;
}

/* "ANY 2 (a,b)" / "FIRST 1 (...)" -> 2 / 1; "" -> 0; else -1 (CloudNativePG). */
static double sync_number(const char *s)
{
	if (!s || !*s)
		return 0;
	const char *p = strncmp(s, "ANY ", 4) == 0 ? s + 4 : strncmp(s, "FIRST ", 6) == 0 ? s + 6 : NULL;
	char *end;
	long n = p ? strtol(p, &end, 10) : -1;
	return p && end != p && strncmp(end, " (", 2) == 0 ? (double)n : -1;
}

static void core_settings(PGresult *res, struct core *k)
{
	long num = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	k->v[0] = (unsigned)(num / 10000), k->v[1] = 0, k->v[2] = (unsigned)(num % 100);
	k->primary = strcmp(PQgetvalue(res, 0, 1), "t") != 0;
	k->sync = k->primary ? sync_number(PQgetvalue(res, 0, 2)) : NAN;
	k->wal_seg = cell_num(res, 3);
	k->min_wal = cell_num(res, 4);
	k->max_wal = cell_num(res, 5);
	k->keep_wal = cell_num(res, 6);
	k->slots_max = cell_num(res, 7);
}

/* The settings over the kept connection; with list, the databases too (into
 * *dbs: the queries due have '*' targets), in the same round trip. */
static int core_query(struct inst_metrics *m, struct core *k, struct dbs *dbs, bool list,
		      struct op_err *err)
{
	struct inst_pl_item it[2] = { { .sql = CORE_SQL, .trusted = true },
				      { .sql = LIST_DBS_SQL, .trusted = true } };
	run_items(m, &m->conn, it, list ? 2 : 1, false);
	int r = it[0].r ? op_err_set(err, it[0].r, "%s", it[0].error ? it[0].error : "") : 0;
	if (!r && PQntuples(it[0].res) == 1 && PQnfields(it[0].res) == 8)
		core_settings(it[0].res, k);
	else if (!r)
		r = op_err_set(err, -EIO, "unexpected settings row");
	if (list && !it[1].r)
		dbs_take(dbs, &it[1]); /* a failed list is listed again when needed */
	inst_pl_items_done(it, 2);
	return r;
}

/* pg_stat_wal's row (PostgreSQL 14+), run with the queries: one collector
 * among others, its error counts in collection_errors_total. */
static void walstat_take(struct inst_metrics *m, struct core *k, const struct inst_pl_item *it)
{
	if (it->r) {
		m->coll_errors[C_WALSTAT]++;
		k->error = true;
		return;
	}
	if (PQntuples(it->res) != 1)
		return;
	k->n_walstat = (size_t)PQnfields(it->res) <= 9 ? (size_t)PQnfields(it->res) : 9;
	for (size_t i = 0; i < k->n_walstat; i++)
		k->walstat[i] = op_strdup(PQgetisnull(it->res, 0, (int)i)
						  ? ""
						  : PQgetvalue(it->res, 0, (int)i));
}

/* Files in pg_wal (24 hex digits) and pg_wal/archive_status (.ready, .done). */
static int count_wal(const char *pgdata, double *segs, double *ready, double *done)
{
	char path[4096];
	*segs = *ready = *done = 0;
	for (int pass = 0; pass < 2; pass++) {
		snprintf(path, sizeof(path), "%s/pg_wal%s", pgdata, pass ? "/archive_status" : "");
		DIR *d = opendir(path);
		if (!d)
			return -errno;
		struct dirent *e;
		while ((e = readdir(d))) {
			const char *n = e->d_name;
			size_t len = strlen(n);
			if (pass == 0)
				*segs += len == 24 && strspn(n, "0123456789ABCDEF") == 24;
			else if (len > 6 && strcmp(n + len - 6, ".ready") == 0)
				*ready += 1;
			else if (len > 5 && strcmp(n + len - 5, ".done") == 0)
				*done += 1;
		}
		closedir(d);
	}
	return 0;
}

static int put(struct inst_mfams *f, const char *name, const char *type, const char *help,
	       const char *labels, double v)
{
	struct inst_mfam *fam = inst_mfams_get(f, name, type, help);
	return fam ? inst_mfam_sample(fam, labels, v) : -EINVAL;
}

/* k="v" (v escaped), a second pair when k2 is set, into buf (n bytes). */
static const char *lbl(char *buf, size_t n, const char *k, const char *v, const char *k2,
		       const char *v2)
{
	struct op_buf b = OP_BUF_INIT(n - 1);
	int r = op_buf_addf(&b, "%s=\"", k);
	r = r ? r : op_metrics_label_value(&b, v ? v : "");
	r = r ? r : op_buf_addc(&b, '"');
	if (k2) {
		r = r ? r : op_buf_addf(&b, ",%s=\"", k2);
		r = r ? r : op_metrics_label_value(&b, v2 ? v2 : "");
		r = r ? r : op_buf_addc(&b, '"');
	}
	snprintf(buf, n, "%s", r ? "" : op_buf_str(&b));
	op_buf_done(&b);
	return buf;
}

#define G(name, help, labels, v) r = r ? r : put(f, "cnpg_collector_" name, "gauge", help, labels, v)
#define MB (1024.0 * 1024.0)

static int emit_wal(struct inst_mfams *f, const struct core *k, const char *pgdata,
		    uint64_t *errors)
{
	static const char *const names[] = { "wal_records", "wal_fpi", "wal_bytes",
					     "wal_buffers_full", "wal_write", "wal_sync",
					     "wal_write_time", "wal_sync_time" };
	char l[512], name[96];
	int r = 0;
	double segs, ready, done;
	if (count_wal(pgdata, &segs, &ready, &done) == 0) {
		const char *h = "Number of WAL segments in the 'pg_wal/archive_status' directory "
				"(ready, done)";
		G("pg_wal_archive_status", h, lbl(l, sizeof(l), "value", "ready", NULL, NULL), ready);
		G("pg_wal_archive_status", h, lbl(l, sizeof(l), "value", "done", NULL, NULL), done);
		const char *hw = "Total size in bytes of WAL segments in the 'pg_wal' directory "
				 " computed as (wal_segment_size * count)";
		const struct {
			const char *v;
			double x;
		} w[] = {
			{ "count", segs },
			{ "size", segs * k->wal_seg },
			{ "min", k->min_wal * MB / k->wal_seg },
			{ "max", k->max_wal * MB / k->wal_seg },
			{ "keep", k->keep_wal * MB / k->wal_seg },
			{ "slots_max", k->slots_max < 0 ? NAN : k->slots_max * MB / k->wal_seg },
			{ "volume_size", NAN },
			{ "volume_max", NAN },
		};
		for (size_t i = 0; i < OP_ARRAY_SIZE(w); i++)
			G("pg_wal", hw, lbl(l, sizeof(l), "value", w[i].v, NULL, NULL), w[i].x);
	} else {
		errors[C_ARCHIVE]++;
		errors[C_WALSET]++;
	}
	const char *reset = k->n_walstat ? k->walstat[k->n_walstat - 1] : "";
	for (size_t i = 0; !r && k->n_walstat && i + 1 < k->n_walstat; i++) {
		double v = NAN;
		if (inst_metrics_parse_value(k->walstat[i], &v))
			continue;
		snprintf(name, sizeof(name), "cnpg_collector_%s", names[i]);
		r = put(f, name, "gauge", "pg_stat_wal (PostgreSQL 14+; write and sync until 17).",
			lbl(l, sizeof(l), "stats_reset", reset, NULL, NULL), v);
	}
	return r;
}

static int emit_core(struct inst_metrics *m, struct inst_mfams *f, const struct core *k,
		     const char *cluster, bool fenced, const struct backup_times *bt,
		     double dur_queries)
{
	char l[512], full[32];
	int r = 0;
	if (!r)
		r = put(f, "cnpg_collector_collections_total", "counter",
			"Total number of times PostgreSQL was accessed for metrics.", NULL,
			(double)m->collections);
	G("last_collection_error", "1 if the last collection ended with error, 0 otherwise.", NULL,
	  k->error);
	for (int i = 0; !r && i < C_N; i++)
		if (m->coll_errors[i])
			r = put(f, "cnpg_collector_collection_errors_total", "counter",
				"Total errors occurred accessing PostgreSQL for metrics.",
				lbl(l, sizeof(l), "collector", coll_names[i], NULL, NULL),
				(double)m->coll_errors[i]);
	G("up", "1 if PostgreSQL is up, 0 otherwise.", lbl(l, sizeof(l), "cluster", cluster, NULL, NULL),
	  k->up);
	G("manual_switchover_required", "1 if a manual switchover is required, 0 otherwise", NULL, 0);
	G("collection_duration_seconds", "Collection time duration in seconds",
	  lbl(l, sizeof(l), "collector", "Collect.up", NULL, NULL), k->dur_up);
	if (dur_queries >= 0)
		G("collection_duration_seconds", "Collection time duration in seconds",
		  lbl(l, sizeof(l), "collector", "Collect.cnpg", NULL, NULL), dur_queries);
	if (k->up && k->primary)
		G("sync_replicas", "Number of requested synchronous replicas (synchronous_standby_names)",
		  lbl(l, sizeof(l), "value", "observed", NULL, NULL), k->sync);
	G("replica_mode", "1 if the cluster is in replica mode, 0 otherwise", NULL, 0);
	if (k->up)
		r = r ? r : emit_wal(f, k, m->pgdata, m->coll_errors);
	if (k->up) {
		snprintf(full, sizeof(full), "%u.%u", k->v[0], k->v[2]);
		G("postgres_version", "Postgres version",
		  lbl(l, sizeof(l), "full", full, "cluster", cluster), strtod(full, NULL));
	}
	G("first_recoverability_point",
	  "The first point of recoverability for the cluster as a unix timestamp (Deprecated)", NULL,
	  bt->first_point);
	G("last_available_backup_timestamp",
	  "The last available backup as a unix timestamp (Deprecated)", NULL, bt->last_ok);
	G("last_failed_backup_timestamp", "The last failed backup as a unix timestamp (Deprecated)",
	  NULL, bt->last_failed);
	G("fencing_on", "1 if the instance is fenced, 0 otherwise", NULL, fenced);
	G("nodes_used", "NodesUsed represents the count of distinct nodes accommodating the "
			"instances. A value of '-1' suggests that the metric is not available.",
	  NULL, -1);
	return r;
}
#undef G

/* ---- the queries' collection (CloudNativePG's "cnpg" QueriesCollector) ---- */

struct qplan { /* the effective query set and which of it is due, before the collector's query */
	const struct inst_mq **qs; /* owned array, borrowed queries (effective_set) */
	bool *due;                 /* owned: qs[i]'s cache expired */
	size_t n;
	bool any_due, any_glob;    /* one is due; one due has a '*' target */
	int64_t t0;
};

static void qplan_make(struct inst_metrics *m, char **files, size_t n_files, bool disable_default,
		       int64_t ttl_ms, struct qplan *p)
{
	p->t0 = inst_lease_now();
	load_custom(m, files, n_files);
	p->n = effective_set(m, disable_default, &p->qs);
	p->due = op_calloc(p->n + 1, sizeof(*p->due));
	for (size_t i = 0; i < p->n; i++) {
		const struct inst_mq *q = p->qs[i];
		const struct qcache *e = NULL;
		for (size_t j = 0; j < m->n_qc && !e; j++)
			e = strcmp(m->qc[j].key, q->key) == 0 ? &m->qc[j] : NULL;
		int64_t ttl = q->cache_seconds ? (int64_t)q->cache_seconds * 1000 : ttl_ms;
		p->due[i] = !e || !e->at_ms || p->t0 - e->at_ms >= ttl;
		p->any_due |= p->due[i];
		for (size_t t = 0; p->due[i] && t < q->n_targets; t++)
			p->any_glob |= strpbrk(q->targets[t], "*?[") != NULL;
	}
}

static void qplan_done(struct qplan *p)
{
	free(p->qs);
	free(p->due);
}

struct run { /* one query on one database in this collection */
	const struct inst_mq *q; /* borrowed */
	size_t e;                /* its m->qc entry (indexes stay until qcache_sweep) */
	const char *db;          /* borrowed: "postgres", a target, a listed database */
	bool named;              /* from target_databases: its error names db */
	struct inst_pl_item pred, main; /* pred.sql NULL: no predicate_query */
};

struct runs {
	struct run *v; /* owned */
	size_t n;
};

static void runs_add(struct runs *rs, const struct inst_mq *q, size_t e, const char *db,
		     bool named, bool ours)
{
	rs->v = op_realloc(rs->v, (rs->n + 1) * sizeof(*rs->v));
	rs->v[rs->n++] = (struct run){ .q = q, .e = e, .db = db, .named = named,
				       .pred = { .sql = q->predicate_query, .trusted = ours },
				       .main = { .sql = q->query, .trusted = ours } };
}

/* q's runs: the default database, or each of its target databases (a glob
 * against the role's databases, listed once per collection: its error is the
 * first such query's). */
static void runs_of(struct inst_metrics *m, const struct inst_mq *q, size_t e, struct dbs *dbs,
		    struct runs *rs)
{
	/* the embedded defaults are ours: no guard after them (metrics_pipeline.c) */
	bool ours = q >= m->defaults.q && q < m->defaults.q + m->defaults.n;
	if (q->n_targets == 0)
		runs_add(rs, q, e, "postgres", false, ours);
	for (size_t t = 0; t < q->n_targets; t++) {
		const char *pat = q->targets[t];
		bool glob = strpbrk(pat, "*?[") != NULL;
		if (glob && !dbs->listed)
			list_dbs(m, dbs);
		if (glob && dbs->error) {
			if (!m->qc[e].error)
				m->qc[e].error = dbs->error;
			else
				free(dbs->error);
			dbs->error = NULL;
		}
		for (size_t i = 0; i < (glob ? dbs->n : 1); i++)
			if (!glob || fnmatch(pat, dbs->v[i], 0) == 0)
				runs_add(rs, q, e, glob ? dbs->v[i] : pat, true, ours);
	}
}

/* Moves the chosen items of db's runs into buf (which: 0 the predicates,
 * 1 the queries whose predicate held) and back; head: the collector's item
 * first (pg_stat_wal on the default database). */
static void run_pass(struct inst_metrics *m, PGconn **c, struct runs *rs, const char *db,
		     int which, struct inst_pl_item *head, struct inst_pl_item *buf, size_t *idx)
{
	size_t k = 0;
	if (head)
		buf[k] = *head, idx[k++] = SIZE_MAX;
	for (size_t i = 0; i < rs->n; i++) {
		struct run *x = &rs->v[i];
		if (strcmp(x->db, db) != 0 || (which == 0 && !x->pred.sql))
			continue;
		if (which == 1 && x->pred.sql &&
		    (x->pred.r || PQntuples(x->pred.res) < 1 || PQnfields(x->pred.res) < 1 ||
		     PQgetisnull(x->pred.res, 0, 0) || strcmp(PQgetvalue(x->pred.res, 0, 0), "t"))) {
			if (x->pred.r) /* its predicate's error is the query's */
				item_fail(&x->main, x->pred.r, x->pred.error ? x->pred.error : "");
			continue; /* else not to run: no sample */
		}
		buf[k] = which ? x->main : x->pred;
		idx[k++] = i;
	}
	run_items(m, c, buf, k, which == 1);
	for (size_t j = 0; j < k; j++) {
		struct inst_pl_item *dst = idx[j] == SIZE_MAX ? head
					   : which	      ? &rs->v[idx[j]].main
							      : &rs->v[idx[j]].pred;
		*dst = buf[j];
	}
}

/* Each database's runs on its connection, in pipelines: the predicates, then
 * the queries whose predicate held, ending the transaction (with walstat on
 * the default database's connection). */
static void exec_runs(struct inst_metrics *m, struct runs *rs, struct inst_pl_item *walstat)
{
	const char **dbv = op_calloc(rs->n + 2, sizeof(*dbv));
	struct inst_pl_item *buf = op_calloc(rs->n + 2, sizeof(*buf));
	size_t *idx = op_calloc(rs->n + 2, sizeof(*idx)), nd = 0;
	dbv[nd++] = "postgres";
	for (size_t i = 0; i < rs->n; i++) {
		size_t d = 0;
		while (d < nd && strcmp(dbv[d], rs->v[i].db) != 0)
			d++;
		if (d == nd)
			dbv[nd++] = rs->v[i].db;
	}
	for (size_t d = 0; d < nd; d++) {
		struct op_err err = OP_ERR_INIT;
		PGconn **c = NULL, *tmp = NULL;
		struct inst_pl_item *head = d == 0 ? walstat : NULL;
		if (conn_for(m, dbv[d], &c, &tmp, &err)) {
			for (size_t i = 0; i < rs->n; i++)
				if (strcmp(rs->v[i].db, dbv[d]) == 0)
					item_fail(&rs->v[i].main, err.code, err.msg);
			if (head)
				item_fail(head, err.code, err.msg);
			continue;
		}
		run_pass(m, c, rs, dbv[d], 0, NULL, buf, idx);
		run_pass(m, c, rs, dbv[d], 1, head, buf, idx);
		if (tmp)
			PQfinish(tmp);
	}
	free(dbv);
	free(buf);
	free(idx);
}

/* A run's result into its query's families; its error (the first of the
 * query's) into the query's cache entry. */
static void run_render(struct inst_metrics *m, struct run *x)
{
	struct qcache *e = &m->qc[x->e];
	struct op_err err = OP_ERR_INIT;
	int r = x->main.r;
	const char *msg = x->main.error ? x->main.error : "";
	PGresult *res = x->main.res;
	if (!r && res) {
		size_t nc = (size_t)PQnfields(res), nr = (size_t)PQntuples(res);
		const char **cols = op_calloc(nc + 1, sizeof(*cols));
		const char **cells = op_calloc(nc * nr + 1, sizeof(*cells));
		for (size_t i = 0; i < nc; i++)
			cols[i] = PQfname(res, (int)i);
		for (size_t row = 0; row < nr; row++)
			for (size_t i = 0; i < nc; i++)
				cells[row * nc + i] = PQgetisnull(res, (int)row, (int)i)
							      ? NULL
							      : PQgetvalue(res, (int)row, (int)i);
		r = inst_mq_render(x->q, INST_METRICS_PREFIX, nc, cols, nr, cells, &e->fams, &err);
		msg = err.msg;
		free(cols);
		free(cells);
	}
	if (!r || e->error)
		return;
	char full[OP_ERR_MSG_MAX + 160];
	snprintf(full, sizeof(full), "on db %.128s: %s", x->db, msg);
	e->error = op_strdup(x->named ? full : msg);
	e->broken = query_fault(r);
}

/* Runs the queries whose cache expired (p: qplan_make before the collector's
 * query) and pg_stat_wal. Returns the seconds it took, or -1 when every
 * result came from the cache. */
static double update_queries(struct inst_metrics *m, struct core *k, const struct qplan *p,
			     struct dbs *dbs)
{
	struct runs rs = { 0 };
	size_t *due = op_calloc(p->n + 1, sizeof(*due)), ndue = 0;
	for (size_t i = 0; i < m->n_qc; i++)
		m->qc[i].used = false;
	for (size_t i = 0; i < p->n; i++) {
		const struct inst_mq *q = p->qs[i];
		struct qcache *entry = qcache_get(m, q->key); /* may move m->qc */
		size_t e = (size_t)(entry - m->qc);
		m->qc[e].used = true;
		if (!p->due[i])
			continue;
		qcache_clear(&m->qc[e]);
		m->qc[e].at_ms = p->t0 ? p->t0 : 1;
		due[ndue++] = e;
		if (applies(q, k->primary, k->v))
			runs_of(m, q, e, dbs, &rs);
	}
	struct inst_pl_item ws = { .sql = k->v[0] >= 18 ? WALSTAT18_SQL : WALSTAT_SQL,
				   .trusted = true };
	exec_runs(m, &rs, k->v[0] >= 14 ? &ws : NULL);
	if (k->v[0] >= 14)
		walstat_take(m, k, &ws);
	inst_pl_items_done(&ws, 1);
	for (size_t i = 0; i < rs.n; i++) {
		run_render(m, &rs.v[i]);
		inst_pl_items_done(&rs.v[i].pred, 1);
		inst_pl_items_done(&rs.v[i].main, 1);
	}
	for (size_t i = 0; i < ndue; i++)
		if (m->qc[due[i]].error)
			op_log_warn("metrics: query failed", "query", m->qc[due[i]].key, "error",
				    m->qc[due[i]].error);
	qcache_sweep(m);
	free(rs.v);
	free(due);
	if (ndue) {
		m->cache_miss = true;
		m->cache_hits = 0;
		m->last_update_s = (int64_t)time(NULL);
		return (double)(inst_lease_now() - p->t0) / 1000.0;
	}
	m->cache_miss = false;
	m->cache_hits++;
	return -1;
}

/* cnpg_errors_total{errorUserQueries}, cnpg_last_error, the cache gauges. */
static int emit_query_status(struct inst_metrics *m, struct inst_mfams *f, bool *ret_error)
{
	char l[768], msg[600];
	int r = 0;
	bool any = false;
	for (size_t i = 0; !r && i < m->n_file_errors + m->n_qc; i++) {
		bool file = i < m->n_file_errors;
		const char *e = file ? m->file_errors[i] : m->qc[i - m->n_file_errors].error;
		if (!e)
			continue;
		any = true;
		if (file)
			snprintf(msg, sizeof(msg), "%.580s", e);
		else
			snprintf(msg, sizeof(msg), "%.64s: %.520s", m->qc[i - m->n_file_errors].key, e);
		r = put(f, "cnpg_errors_total", "counter",
			"Total errors occurred performing user queries.",
			lbl(l, sizeof(l), "errorUserQueries", msg, NULL, NULL), 1);
	}
	r = r ? r : put(f, "cnpg_last_error", "gauge",
			"1 if the last collection ended with error, 0 otherwise.", NULL, any);
	r = r ? r : put(f, "cnpg_last_update_timestamp", "gauge",
			"Timestamp of the last metrics update.", NULL, (double)m->last_update_s);
	r = r ? r : put(f, "cnpg_cache_hits", "gauge",
			"Total number of hits for the current cache.", NULL, (double)m->cache_hits);
	r = r ? r : put(f, "cnpg_cache_miss", "gauge",
			"Indicator: 1 if metrics were recomputed on last update (cache miss), 0 if "
			"cache used.",
			NULL, m->cache_miss);
	*ret_error = any;
	return r;
}

/* The broken queries (query_fault: not a lost connection) and the custom
 * files that cannot be loaded as a JSON array of {"source": query
 * key or file path, "error": why} (NULL when none), published under lock for
 * /pg/status: the reconciler records one Event per source and error
 * (reconciler/metrics_events.c). At most INST_METRICS_MAX_REPORTED. */
static void publish_errors(struct inst_metrics *m)
{
	struct op_buf b = OP_BUF_INIT(64 * 1024);
	size_t n = 0;
	int r = op_buf_addc(&b, '[');
	for (size_t i = 0; !r && i < m->n_file_errors + m->n_qc; i++) {
		bool file = i < m->n_file_errors;
		const char *e = file ? m->file_errors[i] : m->qc[i - m->n_file_errors].error;
		if (!e || (!file && !m->qc[i - m->n_file_errors].broken) ||
		    n == INST_METRICS_MAX_REPORTED)
			continue;
		char msg[600];
		snprintf(msg, sizeof(msg), "%.580s", e);
		r = n++ ? op_buf_addc(&b, ',') : 0;
		r = r ? r : op_buf_adds(&b, "{\"source\":");
		r = r ? r : op_buf_add_json_str(&b, file ? m->file_error_paths[i]
						      : m->qc[i - m->n_file_errors].key);
		r = r ? r : op_buf_adds(&b, ",\"error\":");
		r = r ? r : op_buf_add_json_str(&b, msg);
		r = r ? r : op_buf_addc(&b, '}');
	}
	r = r ? r : op_buf_addc(&b, ']');
	char *json = !r && n ? op_strdup(op_buf_str(&b)) : NULL;
	op_buf_done(&b);
	pthread_mutex_lock(&m->lock);
	free(m->errors_json);
	m->errors_json = json;
	pthread_mutex_unlock(&m->lock);
}

char *inst_metrics_errors_json(struct inst_metrics *m)
{
	if (!m)
		return NULL;
	pthread_mutex_lock(&m->lock);
	char *s = m->errors_json ? op_strdup(m->errors_json) : NULL;
	pthread_mutex_unlock(&m->lock);
	return s;
}

/* ---- one scrape ---- */

struct view_copy {
	char *cluster;
	struct backup_times backups;
	int64_t ttl_ms;
	bool disable_default, fenced, up_hint;
	char **files;
	size_t n_files;
};

static void view_take(struct inst_metrics *m, struct view_copy *v)
{
	pthread_mutex_lock(&m->lock);
	v->cluster = op_strdup(m->cluster ? m->cluster : "");
	v->backups = m->backups;
	v->ttl_ms = m->ttl_ms;
	v->disable_default = m->disable_default;
	v->fenced = m->fenced;
	v->up_hint = m->up_hint;
	v->n_files = m->n_custom;
	v->files = op_calloc(m->n_custom + 1, sizeof(char *));
	for (size_t i = 0; i < m->n_custom; i++)
		v->files[i] = op_strdup(m->custom_files[i]);
	pthread_mutex_unlock(&m->lock);
}

static void view_done(struct view_copy *v)
{
	free(v->cluster);
	for (size_t i = 0; i < v->n_files; i++)
		free(v->files[i]);
	free(v->files);
}

static void core_done(struct core *k)
{
	for (size_t i = 0; i < k->n_walstat; i++)
		free(k->walstat[i]);
}

/* Under the scrape lock: the collection and the rendering. */
static int collect(struct inst_metrics *m, struct op_buf *out, struct op_err *err)
{
	struct view_copy v = { 0 };
	view_take(m, &v);
	struct core k = { .sync = NAN };
	struct inst_mfams core = { 0 }, status = { 0 };
	int64_t t0 = inst_lease_now();
	m->deadline_ms = t0 + m->budget_ms;
	m->collections++;
	struct op_err cerr = OP_ERR_INIT;
	int r = v.fenced || atomic_load(&m->paused) ? -ESHUTDOWN : 0;
	struct qplan plan = { 0 };
	struct dbs dbs = { 0 };
	if (!r && !m->conn)
		r = connect_db(m, "postgres", &m->conn, &cerr);
	if (!r) /* which queries are due, so that the databases '*' targets need are
		 * listed in the round trip of the collector's query */
		qplan_make(m, v.files, v.n_files, v.disable_default, v.ttl_ms, &plan);
	r = r ? r : core_query(m, &k, &dbs, plan.any_glob, &cerr);
	k.up = r == 0;
	k.dur_up = (double)(inst_lease_now() - t0) / 1000.0;
	if (r && r != -ESHUTDOWN) {
		m->coll_errors[C_UP]++;
		k.error = true;
		op_log_debug("metrics: postgres not reachable", "error", cerr.msg);
	}
	double dq = -1;
	if (k.up) {
		dq = update_queries(m, &k, &plan, &dbs);
		publish_errors(m);
	}
	qplan_done(&plan);
	dbs_done(&dbs);
	rollback_all(m);
	bool qerr = false;
	r = emit_query_status(m, &status, &qerr);
	k.error |= qerr; /* pgop: a failed query also sets cnpg_collector_last_collection_error */
	r = r ? r : emit_core(m, &core, &k, v.cluster, v.fenced, &v.backups, dq);
	size_t nsets = 0;
	const struct inst_mfams **sets = op_calloc(m->n_qc + 2, sizeof(*sets));
	sets[nsets++] = &core;
	for (size_t i = 0; k.up && i < m->n_qc; i++)
		sets[nsets++] = &m->qc[i].fams;
	sets[nsets++] = &status;
	r = r ? r : inst_mfams_render(sets, nsets, out);
	free(sets);
	inst_mfams_done(&core);
	inst_mfams_done(&status);
	core_done(&k);
	view_done(&v);
	return r ? op_err_set(err, r, "metrics: the exposition is too large") : 0;
}

int inst_metrics_scrape(struct inst_metrics *m, unsigned wait_ms, struct op_buf *out,
			struct op_err *err)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	if (pthread_mutex_timedlock(&m->scrape, &until) != 0)
		return op_err_set(err, -EBUSY, "another collection is still running");
	int r = collect(m, out, err);
	pthread_mutex_unlock(&m->scrape);
	return r;
}

/* ---- life cycle ---- */

int inst_metrics_new(const struct inst_metrics_opts *o, struct inst_metrics **ret,
		     struct op_err *err)
{
	struct inst_metrics *m = op_calloc(1, sizeof(*m));
	m->sockdir = op_strdup(o->sockdir);
	m->pgdata = op_strdup(o->pgdata);
	m->mondir = op_strdup(o->monitoring_dir ? o->monitoring_dir : INST_MONITORING_DIR);
	m->user = op_strdup(o->user ? o->user : "cnpg_metrics_exporter");
	m->port = o->port;
	m->budget_ms = o->budget_ms ? o->budget_ms : 10000;
	m->ttl_ms = INST_METRICS_DEFAULT_TTL_MS;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->scrape, NULL);
	int r = inst_mq_parse(inst_default_queries_data, inst_default_queries_data_len,
			      "default queries", &m->defaults, err);
	if (r) {
		inst_metrics_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

static void custom_files_free(struct inst_metrics *m)
{
	for (size_t i = 0; i < m->n_custom; i++)
		free(m->custom_files[i]);
	free(m->custom_files);
	m->custom_files = NULL;
	m->n_custom = 0;
}

void inst_metrics_free(struct inst_metrics *m)
{
	if (!m)
		return;
	drop_conns(m);
	for (size_t i = 0; i < m->n_qc; i++) {
		qcache_clear(&m->qc[i]);
		free(m->qc[i].key);
	}
	free(m->qc);
	file_errors_free(m);
	free(m->errors_json);
	inst_mq_set_done(&m->defaults);
	inst_mq_set_done(&m->custom);
	custom_files_free(m);
	free(m->cluster), free(m->sockdir), free(m->pgdata), free(m->mondir), free(m->user);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->scrape);
	free(m);
}

/* <mondir>/<kind>/<name>/<key> for each reference. */
static void add_refs(struct inst_metrics *m, const char *kind, const struct api_secret_ref *refs,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!refs[i].name || !refs[i].key)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s/%s/%s", m->mondir, kind, refs[i].name,
			 refs[i].key);
		m->custom_files = op_realloc(m->custom_files, (m->n_custom + 1) * sizeof(char *));
		m->custom_files[m->n_custom++] = op_strdup(path);
	}
}

/* An RFC 3339 time as unix seconds; 0 when absent or unreadable. */
static double unix_seconds(const char *rfc3339)
{
	int64_t ms = 0;
	if (!rfc3339 || !*rfc3339 || api_time_parse_ms(rfc3339, &ms) < 0)
		return 0;
	return (double)(ms / 1000);
}

void inst_metrics_update(struct inst_metrics *m, const struct inst_metrics_view *v)
{
	pthread_mutex_lock(&m->lock);
	m->fenced = v->fenced;
	m->primary = v->primary;
	m->up_hint = v->postgres_up;
	const struct api_cluster *c = v->cluster;
	if (c) {
		free(m->cluster);
		m->cluster = op_strdup(c->metadata.name ? c->metadata.name : "");
		m->backups = (struct backup_times){
			.first_point = unix_seconds(c->status.first_recoverability_point),
			.last_ok = unix_seconds(c->status.last_successful_backup),
			.last_failed = unix_seconds(c->status.last_failed_backup),
		};
		const struct api_monitoring *mo = &c->spec.monitoring;
		int64_t ttl = INST_METRICS_DEFAULT_TTL_MS;
		if (mo->metrics_queries_ttl && inst_go_duration_ms(mo->metrics_queries_ttl, &ttl))
			ttl = INST_METRICS_DEFAULT_TTL_MS;
		m->ttl_ms = ttl;
		m->disable_default = mo->disable_default_queries;
		custom_files_free(m);
		add_refs(m, "configmap", mo->custom_configmaps, mo->n_custom_configmaps);
		add_refs(m, "secret", mo->custom_secrets, mo->n_custom_secrets);
	}
	pthread_mutex_unlock(&m->lock);
}

void inst_metrics_pause(struct inst_metrics *m, bool paused)
{
	atomic_store(&m->paused, paused);
	if (!paused)
		return;
	pthread_mutex_lock(&m->scrape); /* a collection running ends within its budget */
	drop_conns(m);
	pthread_mutex_unlock(&m->scrape);
}

int inst_metrics_ensure_role(PGconn *conn, struct op_err *err)
{
	_cleanup_free_ char *ok = NULL;
	int r = inst_pg_value(conn,
			      "SELECT COALESCE((SELECT rolcanlogin AND rolinherit AND NOT rolsuper AND "
			      "NOT rolcreatedb AND NOT rolcreaterole AND NOT rolreplication AND NOT "
			      "rolbypassrls AND pg_catalog.pg_has_role(oid, 'pg_monitor', 'member') "
			      "FROM pg_catalog.pg_roles WHERE rolname = 'cnpg_metrics_exporter'), "
			      "false)::text",
			      0, NULL, &ok, err);
	if (r || (ok && strcmp(ok, "true") == 0))
		return r;
	r = inst_pg_exec(conn,
			 "DO $$BEGIN "
			 "IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = "
			 "'cnpg_metrics_exporter') THEN CREATE ROLE cnpg_metrics_exporter; END IF; "
			 "ALTER ROLE cnpg_metrics_exporter WITH LOGIN INHERIT NOSUPERUSER NOCREATEDB "
			 "NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD NULL; "
			 "GRANT pg_monitor TO cnpg_metrics_exporter; END$$",
			 0, NULL, NULL, err);
	return r ? r : 1;
}
