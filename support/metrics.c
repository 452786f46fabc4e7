/* support/metrics.c - Prometheus primitives (see metrics.h). */
#include "support/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static const double http_le[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
				  0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
				  1,      2.5,     5,      10 };
const struct op_hist_bounds op_hist_bounds_http = { http_le, sizeof(http_le) / sizeof(http_le[0]) };

static const double slow_le[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
				  0.5,   1,      2.5,   5,    10,    30,   60 };
const struct op_hist_bounds op_hist_bounds_slow = { slow_le, sizeof(slow_le) / sizeof(slow_le[0]) };

void op_hist_init(struct op_hist *h, const struct op_hist_bounds *bounds)
{
	h->bounds = bounds;
	for (size_t i = 0; i <= OP_HIST_MAX_BUCKETS; i++)
		atomic_init(&h->buckets[i], 0);
	atomic_init(&h->sum_ns, 0);
	atomic_init(&h->count, 0);
}

void op_hist_observe(struct op_hist *h, uint64_t ns)
{
	size_t n = h->bounds->n < OP_HIST_MAX_BUCKETS ? h->bounds->n : OP_HIST_MAX_BUCKETS;
	double s = (double)ns / 1e9;
	size_t i = 0;
	while (i < n && s > h->bounds->le[i])
		i++;
	op_counter_add(&h->buckets[i], 1);
	op_counter_add(&h->sum_ns, ns);
	op_counter_add(&h->count, 1);
}

int op_metrics_header(struct op_buf *out, const char *name, const char *type, const char *help)
{
	return op_buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int op_metrics_sample(struct op_buf *out, const char *name, const char *labels, uint64_t value)
{
	if (labels && *labels)
		return op_buf_addf(out, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
	return op_buf_addf(out, "%s %llu\n", name, (unsigned long long)value);
}

int op_metrics_hist(struct op_buf *out, const char *name, const char *labels,
		    const struct op_hist *h)
{
	const char *sep = labels && *labels ? "," : "";
	const char *lb = labels ? labels : "";
	size_t n = h->bounds->n < OP_HIST_MAX_BUCKETS ? h->bounds->n : OP_HIST_MAX_BUCKETS;
	uint64_t cum = 0;
	int r = 0;
	for (size_t i = 0; !r && i < n; i++) {
		cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
		r = op_buf_addf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, lb, sep,
				h->bounds->le[i], (unsigned long long)cum);
	}
	cum += atomic_load_explicit(&h->buckets[n], memory_order_relaxed);
	uint64_t sum = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
	if (!r)
		r = op_buf_addf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lb, sep,
				(unsigned long long)cum);
	const char *open = *lb ? "{" : "", *close = *lb ? "}" : "";
	if (!r)
		r = op_buf_addf(out, "%s_sum%s%s%s %.9f\n", name, open, lb, close,
				(double)sum / 1e9);
	if (!r)
		r = op_buf_addf(out, "%s_count%s%s%s %llu\n", name, open, lb, close,
				(unsigned long long)cum);
	return r;
}

int op_metrics_label_value(struct op_buf *out, const char *v)
{
	int r = 0;
	for (const char *p = v; !r && *p; p++) {
		switch (*p) {
		case '\\': r = op_buf_adds(out, "\\\\"); break;
		case '"': r = op_buf_adds(out, "\\\""); break;
		case '\n': r = op_buf_adds(out, "\\n"); break;
		default: r = op_buf_addc(out, *p); break;
		}
	}
	return r;
}

/* ---- collectors ---------------------------------------------------------- */

static pthread_rwlock_t collectors_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct {
	op_metrics_collect_fn fn;
	void *ud;
} collectors[OP_METRICS_MAX_COLLECTORS];
static size_t n_collectors;

int op_metrics_register(op_metrics_collect_fn fn, void *ud)
{
	int r = 0;
	pthread_rwlock_wrlock(&collectors_lock);
	if (n_collectors == OP_METRICS_MAX_COLLECTORS) {
		r = -ENOSPC;
	} else {
		collectors[n_collectors].fn = fn;
		collectors[n_collectors].ud = ud;
		n_collectors++;
	}
	pthread_rwlock_unlock(&collectors_lock);
	return r;
}

void op_metrics_unregister(op_metrics_collect_fn fn, void *ud)
{
	pthread_rwlock_wrlock(&collectors_lock); /* a scrape holds the read side */
	for (size_t i = 0; i < n_collectors; i++) {
		if (collectors[i].fn != fn || collectors[i].ud != ud)
			continue;
		memmove(&collectors[i], &collectors[i + 1],
			(n_collectors - i - 1) * sizeof(collectors[0]));
		n_collectors--;
		break;
	}
	pthread_rwlock_unlock(&collectors_lock);
}

int op_metrics_render_collectors(struct op_buf *out)
{
	int r = 0;
	pthread_rwlock_rdlock(&collectors_lock);
	for (size_t i = 0; !r && i < n_collectors; i++)
		r = collectors[i].fn(collectors[i].ud, out);
	pthread_rwlock_unlock(&collectors_lock);
	return r;
}
