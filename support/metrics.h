/* support/metrics.h - lock-free Prometheus primitives and text exposition.
 *
 * Counters, gauges and histograms are plain C11 atomics updated with relaxed
 * ordering: an update is one or two atomic adds, no lock, no allocation. A
 * scrape reads each value once; a scrape racing with updates may see a
 * histogram whose _count and buckets differ by the requests in flight, which
 * Prometheus tolerates.
 *
 * Rendering appends the text format (version 0.0.4) to a caller-owned op_buf;
 * like every op_buf append it fails with -EMSGSIZE (buffer emptied) at the cap.
 */
#ifndef PGOP_SUPPORT_METRICS_H
#define PGOP_SUPPORT_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "support/buf.h"
#include "support/err.h"

#define OP_HIST_MAX_BUCKETS 16

/* Upper bounds in seconds, ascending, without +Inf. Borrowed: use a static const table. */
struct op_hist_bounds {
	const double *le;
	size_t n;
};

/* Latency buckets for HTTP handlers: 100 us .. 10 s. */
extern const struct op_hist_bounds op_hist_bounds_http;
/* Buckets for slower work (a reconcile, a wait in the work queue): 1 ms .. 60 s. */
extern const struct op_hist_bounds op_hist_bounds_slow;

struct op_hist {
	const struct op_hist_bounds *bounds; /* borrowed, static */
	_Atomic uint64_t buckets[OP_HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t count;
};

/* Sets bounds (n <= OP_HIST_MAX_BUCKETS) and zeroes the counts. Can't fail. */
void op_hist_init(struct op_hist *h, const struct op_hist_bounds *bounds);
/* Records one observation of ns nanoseconds. Lock-free, can't fail. */
void op_hist_observe(struct op_hist *h, uint64_t ns);

static inline void op_counter_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}
static inline uint64_t op_counter_get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* "# HELP name help\n# TYPE name type\n". type: "counter", "gauge", "histogram". */
OP_MUST_CHECK
int op_metrics_header(struct op_buf *out, const char *name, const char *type, const char *help);
/* One sample line: name{labels} value. labels is the inside of the braces
 * ("path=\"/x\",code=\"200\"") or NULL/"" for none; the caller escapes values
 * with op_metrics_label_value(). */
OP_MUST_CHECK
int op_metrics_sample(struct op_buf *out, const char *name, const char *labels, uint64_t value);
/* The _bucket/_sum/_count lines of one histogram series (labels as above). */
OP_MUST_CHECK int op_metrics_hist(struct op_buf *out, const char *name, const char *labels,
				  const struct op_hist *h);
/* Appends a label value escaped for the text format (\\, \", \n). */
OP_MUST_CHECK int op_metrics_label_value(struct op_buf *out, const char *v);

/* ---- collectors: modules that own metrics render them on every scrape ----
 * A collector appends complete families (header + samples) to out and
 * returns 0 or the op_buf error. The process-wide list is what /metrics
 * serves after the HTTP server's own families (support/http_server). */
typedef int (*op_metrics_collect_fn)(void *ud, struct op_buf *out);
/* Adds fn(ud) (at most OP_METRICS_MAX_COLLECTORS; -ENOSPC beyond). */
#define OP_METRICS_MAX_COLLECTORS 16
OP_MUST_CHECK int op_metrics_register(op_metrics_collect_fn fn, void *ud);
/* Removes fn(ud); waits for a scrape running it to finish, so ud may be freed
 * afterwards. Unknown pairs are ignored. */
void op_metrics_unregister(op_metrics_collect_fn fn, void *ud);
/* Runs every registered collector in registration order. */
OP_MUST_CHECK int op_metrics_render_collectors(struct op_buf *out);

#endif
