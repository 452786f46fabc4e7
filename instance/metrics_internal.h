/* instance/metrics_internal.h - the instance's Prometheus exporter (port 9187),
 * shared by the files of instance/ and the unit tests (docs/internals/metrics.md).
 *
 *   metrics_queries.c  CloudNativePG's query-file format (YAML) -> struct inst_mq_set
 *                      (pure), the semver ranges of runonserver, Go durations
 *   metrics_render.c   one query's rows -> metric families; families -> text
 *                      exposition 0.0.4 (pure)
 *   metrics_collect.c  the live collection: collector metrics (cnpg_collector_*),
 *                      every query in a read-only transaction with a statement
 *                      timeout, the caches (metricsQueriesTTL, cache_seconds)
 *   metrics_pipeline.c a collection's statements on one connection in one libpq
 *                      pipeline, each isolated from the others' errors (the
 *                      plan and its verdicts are pure)
 *   metrics_server.c   GET /metrics on its own listener (plain, or TLS with the
 *                      instance's server certificate)
 */
#ifndef PGOP_INSTANCE_METRICS_INTERNAL_H
#define PGOP_INSTANCE_METRICS_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/cluster.h"
#include "support/buf.h"
#include "support/err.h"

#define INST_METRICS_LISTEN "0.0.0.0:9187"
#define INST_METRICS_PREFIX "cnpg"
/* Where the reconciler mounts spec.monitoring's custom query ConfigMaps and
 * Secrets: <dir>/configmap/<name>/<key>, <dir>/secret/<name>/<key>. */
#define INST_MONITORING_DIR "/run/pgop/monitoring"
/* A query file (or the embedded defaults) is read up to this size. */
#define INST_MQ_MAX_FILE (1024u * 1024)
/* The body of one /metrics answer. */
#define INST_METRICS_MAX_BODY (8u * 1024 * 1024)
/* metricsQueriesTTL when unset (CloudNativePG's default). */
#define INST_METRICS_DEFAULT_TTL_MS 30000

/* The embedded default queries (instance/default-queries.yaml). */
extern const char inst_default_queries_data[];
extern const size_t inst_default_queries_data_len;

enum inst_mq_usage {
	INST_MQ_DISCARD,
	INST_MQ_LABEL,
	INST_MQ_COUNTER,
	INST_MQ_GAUGE,
	INST_MQ_MAPPEDMETRIC,
	INST_MQ_DURATION,
};

struct inst_mq_map { /* metric_mapping of a MAPPEDMETRIC column */
	char *text;  /* owned */
	double value;
};

struct inst_mq_col { /* every string owned */
	char *column;      /* the result column */
	char *name;        /* "name": replaces the column in the metric name; NULL = column */
	char *description; /* HELP; "" when absent */
	enum inst_mq_usage usage;
	struct inst_mq_map *map;
	size_t n_map;
};

struct inst_mq { /* one query; every string owned */
	char *key;       /* the map key */
	char *name;      /* "name": the metric namespace; NULL = key */
	char *query, *predicate_query; /* predicate_query NULL = none */
	char *runonserver;             /* semver range; NULL = any */
	bool primary;                  /* primary or master: only on the primary */
	uint64_t cache_seconds;        /* 0 = metricsQueriesTTL */
	char **targets;                /* target_databases; n_targets 0 = the default database */
	size_t n_targets;
	struct inst_mq_col *cols;
	size_t n_cols;
};

struct inst_mq_set { /* owned queries, in file order (a later key replaces an earlier one) */
	struct inst_mq *q;
	size_t n;
};

/* Parses a query file (YAML map name -> query) and merges its queries into set
 * (a key already there is replaced in place). -EINVAL with err naming the
 * query and field ("pg_x.metrics[2].size: unknown usage \"GAUGES\"");
 * nothing is merged then. what names the source in errors. */
OP_MUST_CHECK int inst_mq_parse(const char *data, size_t len, const char *what,
				struct inst_mq_set *set, struct op_err *err);
void inst_mq_set_done(struct inst_mq_set *set);
/* Masterminds/semver ranges as CloudNativePG's runonserver: ">=17.0.0",
 * "<17", ">=12.0.0 <16.0.0", ">= 13, < 15", "~15.2", "^16", "=15.4.0",
 * alternatives with "||". v = {major, minor, patch}. 1 match, 0 not,
 * -EINVAL for a range it cannot read. */
OP_MUST_CHECK int inst_semver_match(const char *range, const unsigned v[3]);
/* A Go duration ("30s", "1m30s", "250ms", "0s", "0") in milliseconds;
 * -EINVAL otherwise. */
OP_MUST_CHECK int inst_go_duration_ms(const char *s, int64_t *ret_ms);

/* ---- families (metrics_render.c) ---- */
struct inst_mfam { /* owned */
	char *name, *help;
	const char *type; /* static: "gauge", "counter" */
	struct op_buf samples; /* sample lines, name included */
};
struct inst_mfams {
	struct inst_mfam *v;
	size_t n, cap;
};
void inst_mfams_done(struct inst_mfams *f);
/* The family name (created with type and help when new); NULL when it exists
 * with another type. Borrowed from f. */
struct inst_mfam *inst_mfams_get(struct inst_mfams *f, const char *name, const char *type,
				 const char *help);
/* One sample: name{labels} value. labels: "k=\"v\",..." already escaped, or NULL. */
OP_MUST_CHECK int inst_mfam_sample(struct inst_mfam *fam, const char *labels, double v);
/* A double as the text format writes it: NaN, +Inf, -Inf, integers without
 * a fraction, others with 17 significant digits at most. */
OP_MUST_CHECK int inst_metrics_add_value(struct op_buf *out, double v);
/* Appends every family of sets[0..n) to out: a family that several sets hold
 * is written once (its HELP/TYPE from its first set) with all their samples. */
OP_MUST_CHECK int inst_mfams_render(const struct inst_mfams *const *sets, size_t n,
				    struct op_buf *out);
/* A cell as a sample value (CloudNativePG's DBToFloat64 for libpq text):
 * NULL -> NaN, t/f -> 1/0, a number; 0 or -EINVAL. */
OP_MUST_CHECK int inst_metrics_parse_value(const char *s, double *ret);
/* One query's result (cells row-major, NULL = SQL NULL) into families named
 * <prefix>_<name or key>_<column or its name>: LABEL columns are the labels
 * (in the order of metrics), the other mapped columns samples. A column
 * count other than the mapping's, or a family of another type, is -EINVAL. */
OP_MUST_CHECK
int inst_mq_render(const struct inst_mq *q, const char *prefix, size_t ncols,
		   const char *const *cols, size_t nrows, const char *const *cells,
		   struct inst_mfams *out, struct op_err *err);

/* ---- the exporter (metrics_collect.c, metrics_server.c) ---- */
struct inst_metrics;
/* What the supervisor tells the exporter at each tick (copied). */
struct inst_metrics_view {
	const struct api_cluster *cluster; /* borrowed for the call; NULL = unchanged */
	bool primary, fenced, postgres_up;
};
struct inst_metrics_opts {
	const char *sockdir;        /* postgres's socket directory (borrowed, outlives) */
	unsigned port;              /* postgres's port */
	const char *pgdata;         /* borrowed, outlives */
	const char *monitoring_dir; /* NULL = INST_MONITORING_DIR */
	const char *user;           /* role the exporter connects as; NULL = cnpg_metrics_exporter */
	unsigned budget_ms;         /* one collection, every query included; 0 = 10000 */
};
OP_MUST_CHECK int inst_metrics_new(const struct inst_metrics_opts *o, struct inst_metrics **ret,
				   struct op_err *err);
void inst_metrics_free(struct inst_metrics *m);
void inst_metrics_update(struct inst_metrics *m, const struct inst_metrics_view *v);
/* Paused: the kept connection is closed (after a collection running, at most
 * its budget) and none is opened (postgres stops: a session of the exporter
 * would hold a smart shutdown); cnpg_collector_up is 0 meanwhile. */
void inst_metrics_pause(struct inst_metrics *m, bool paused);
/* One scrape: the whole exposition into out. Serialised (one collection at
 * a time); waits at most wait_ms for another to finish (-EBUSY). */
OP_MUST_CHECK int inst_metrics_scrape(struct inst_metrics *m, unsigned wait_ms,
				      struct op_buf *out, struct op_err *err);
/* The broken queries (the server answered them with an error, or their
 * result does not fit their metrics; not a lost connection or the budget
 * spent) and the custom query files that cannot be loaded, of the last
 * collection that ran queries, as /pg/status's metricsErrors: an owned JSON array text
 * [{"source": query key or file path, "error": why}], NULL when none (or m
 * NULL). At most INST_METRICS_MAX_REPORTED entries. Thread-safe. */
#define INST_METRICS_MAX_REPORTED 16
char *inst_metrics_errors_json(struct inst_metrics *m);
/* Creates cnpg_metrics_exporter (LOGIN, no password, pg_monitor) on a
 * primary when missing; 1 created or repaired, 0 fine. conn: superuser. */
OP_MUST_CHECK int inst_metrics_ensure_role(PGconn *conn, struct op_err *err);

/* ---- metrics_pipeline.c ----
 * A collection's statements on one connection go in one pipeline (libpq 14+):
 * one flush, one segment (one Sync, so the server flushes its answers once,
 * or when its buffer fills), one read loop, instead of a poll, a send and a
 * context switch per statement. Errors: in a segment, the server skips every
 * command after a failed one up to the Sync; so after an item fails, the
 * items after it run again in a next round in the same transaction (a guard
 * first: ROLLBACK TO SAVEPOINT puts the aborted READ ONLY transaction back
 * as it was after the setup). A broken query costs one round trip more, the
 * others keep their results. Guard also before every item that follows an
 * untrusted one (a custom query: it could be COMMIT, ROLLBACK, RELEASE, SET):
 * it undoes the previous item's SET and fails when the transaction is no
 * longer ours, so the rest of the segment is skipped by the server, never run
 * outside the READ ONLY transaction; those items run again in a new one. The
 * embedded queries (ours) need no guard between them. The transaction's setup
 * (BEGIN READ ONLY, SET LOCAL statement_timeout and search_path as
 * set_config, SAVEPOINT) shares the segment: if it fails, nothing runs.
 * statement_timeout applies to each Execute (the server restarts it per
 * message), as with one statement per round trip. */
enum inst_pl_kind {
	INST_PL_ROLLBACK,  /* setup: ends the transaction we lost (after a restart) */
	INST_PL_BEGIN,     /* setup: BEGIN READ ONLY */
	INST_PL_SET,       /* setup: statement_timeout, search_path (set_config local) */
	INST_PL_SAVEPOINT, /* setup: the point each guard returns to */
	INST_PL_GUARD,     /* ROLLBACK TO SAVEPOINT before an item */
	INST_PL_ITEM,      /* the item's statement */
	INST_PL_SYNC,      /* PQpipelineSync: the segment's end */
	INST_PL_END,       /* ROLLBACK: the collection's transaction ends */
};
enum inst_pl_setup {
	INST_PL_KEEP,  /* the transaction goes on (a guard before the first item) */
	INST_PL_NEW,   /* none open: BEGIN ... */
	INST_PL_RENEW, /* one open that is no longer ours: ROLLBACK, BEGIN ... */
};
struct inst_pl_cmd {
	enum inst_pl_kind kind;
	size_t item; /* GUARD, ITEM: the item's index */
};
/* What the commands of a plan for items [from, n) can number at most. */
#define INST_PL_MAX_CMDS(from, n) (2 * ((n) - (from)) + 7)
/* The commands for items [from, n) into out (INST_PL_MAX_CMDS): the setup
 * (or with KEEP a guard), the items (a guard before each one whose previous
 * item is not trusted[]: NULL none is), with end ROLLBACK, then one Sync.
 * No items: just the end (or nothing). Returns how many. */
size_t inst_pl_plan(size_t from, size_t n, enum inst_pl_setup setup, bool end,
		    const bool *trusted, struct inst_pl_cmd *out);
enum inst_pl_st {  /* the server's answer to one command */
	INST_PL_OK,      /* TUPLES_OK, COMMAND_OK, PIPELINE_SYNC */
	INST_PL_ERROR,   /* it failed (FATAL_ERROR) */
	INST_PL_ABORTED, /* skipped: an earlier command of its segment failed */
};
enum inst_pl_outcome {
	INST_PL_UNREAD,  /* no answer read (the connection failed first) */
	INST_PL_RAN,     /* it ran, its result is its own */
	INST_PL_FAILED,  /* it ran and failed: its own error (SQL, rights, timeout) */
	INST_PL_AGAIN,   /* not run (an item before it failed or ended the
			  * transaction): to run in the next round */
	INST_PL_LOST,    /* not run: the setup failed (*ret_cause names the command) */
};
/* The items' outcomes from the answers st[0..nread) to cmds (nread <= the
 * plan's length: fewer when the connection failed): out[from..n). Returns the
 * first item to run again, n when none; *ret_lost_tx: a guard failed (the
 * transaction is no longer ours: the next round needs a new one), else the
 * next round goes on in it. *ret_cause: the index of the setup command that
 * failed (LOST), else nread. */
size_t inst_pl_judge(const struct inst_pl_cmd *cmds, const enum inst_pl_st *st, size_t nread,
		     size_t from, size_t n, enum inst_pl_outcome *out, size_t *ret_cause,
		     bool *ret_lost_tx);

struct inst_pl_item { /* one statement of a pipeline */
	const char *sql;  /* borrowed */
	bool trusted;     /* ours (embedded): cannot end the transaction, no guard after it */
	PGresult *res;    /* owned (PQclear): the result when r == 0 */
	int r;            /* 0; -EBADMSG: the server refused it (its own fault); or
			   * the connection's error (-ETIMEDOUT, -EIO, -ECONNREFUSED) */
	char *error;      /* owned: why, when r */
};
/* Runs it[0..n) on c in pipelines (again from the first item left AGAIN),
 * each item in the READ ONLY transaction with stmt_timeout_ms (SET LOCAL),
 * every wait bounded by deadline_ms (monotonic ms). With end, the transaction
 * ends (ROLLBACK) in the last round. Returns 0, or the connection's error
 * (-ETIMEDOUT: no answer in time, -EIO: broken; c is then unusable: the
 * caller drops it); the items not run carry it too. Needs inst_pq_pipeline(). */
int inst_pl_run(PGconn *c, struct inst_pl_item *it, size_t n, bool end, int64_t deadline_ms,
		int64_t stmt_timeout_ms, struct op_err *err);
/* Clears it[0..n)'s results and errors. */
void inst_pl_items_done(struct inst_pl_item *it, size_t n);

struct inst_metrics_server;
/* Serves GET /metrics on listen ("ADDR:PORT"); TLS with cert/key files when
 * both are set. */
OP_MUST_CHECK
int inst_metrics_server_start(const char *listen, const char *cert_file, const char *key_file,
			      struct inst_metrics *m, struct inst_metrics_server **ret,
			      struct op_err *err);
uint16_t inst_metrics_server_port(struct inst_metrics_server *s);
/* TLS: serves the certificate files again when they changed (1), 0 same or
 * plain HTTP; on an error the old pair keeps being served. Main thread. */
OP_MUST_CHECK int inst_metrics_server_reload(struct inst_metrics_server *s, struct op_err *err);
void inst_metrics_server_free(struct inst_metrics_server *s);

#endif
