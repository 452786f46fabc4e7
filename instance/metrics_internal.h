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
