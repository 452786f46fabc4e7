/* instance/metrics_render.c - query rows to metric families, families to the
 * Prometheus text exposition format 0.0.4 (pure; see metrics_internal.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance/metrics_internal.h"
#include "support/alloc.h"
#include "support/metrics.h"

void inst_mfams_done(struct inst_mfams *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].help);
		op_buf_done(&f->v[i].samples);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

struct inst_mfam *inst_mfams_get(struct inst_mfams *f, const char *name, const char *type,
				 const char *help)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->v[i].name, name) == 0)
			return strcmp(f->v[i].type, type) == 0 ? &f->v[i] : NULL;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->v = op_realloc(f->v, f->cap * sizeof(*f->v));
	}
	struct inst_mfam *m = &f->v[f->n++];
	m->name = op_strdup(name);
	m->help = op_strdup(help ? help : "");
	m->type = type;
	op_buf_init(&m->samples, INST_METRICS_MAX_BODY);
	return m;
}

int inst_metrics_add_value(struct op_buf *out, double v)
{
	if (isnan(v))
		return op_buf_adds(out, "NaN");
	if (isinf(v))
		return op_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
	if (v == floor(v) && fabs(v) < 9007199254740992.0) /* exact: printed as an integer */
		return op_buf_addf(out, "%lld", (long long)v);
	char b[64];
	for (int prec = 15; prec <= 17; prec++) { /* the shortest that reads back */
		snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	return op_buf_adds(out, b);
}

int inst_mfam_sample(struct inst_mfam *fam, const char *labels, double v)
{
	int r = op_buf_adds(&fam->samples, fam->name);
	if (!r && labels && *labels) {
		r = op_buf_addc(&fam->samples, '{');
		r = r ? r : op_buf_adds(&fam->samples, labels);
		r = r ? r : op_buf_addc(&fam->samples, '}');
	}
	r = r ? r : op_buf_addc(&fam->samples, ' ');
	r = r ? r : inst_metrics_add_value(&fam->samples, v);
	return r ? r : op_buf_addc(&fam->samples, '\n');
}

/* HELP text escaping: backslash and line feed. */
static int add_help(struct op_buf *out, const char *s)
{
	int r = 0;
	for (; !r && *s; s++)
		r = *s == '\\' ? op_buf_adds(out, "\\\\")
		    : *s == '\n' ? op_buf_adds(out, "\\n")
				 : op_buf_addc(out, *s);
	return r;
}

/* A family of one set, for grouping the sets' families by name. */
struct famref {
	const struct inst_mfam *f; /* borrowed */
	size_t set, idx;           /* where it is: the order of first appearance */
	size_t head;               /* the index (in the sorted refs) of its name's first */
};

static int by_name_then_place(const void *a, const void *b)
{
	const struct famref *x = a, *y = b;
	int c = strcmp(x->f->name, y->f->name);
	if (c)
		return c;
	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_place(const void *a, const void *b)
{
	const struct famref *x = *(const struct famref *const *)a, *y = *(const struct famref *const *)b;
	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Writes the family at refs[h] (the first of its name) with the samples of
 * every family of that name and type, refs[h..end). */
static int render_group(const struct famref *refs, size_t h, size_t end, struct op_buf *out)
{
	const struct inst_mfam *f = refs[h].f;
	int r = op_buf_adds(out, "# HELP ");
	r = r ? r : op_buf_adds(out, f->name);
	r = r ? r : op_buf_addc(out, ' ');
	r = r ? r : add_help(out, f->help);
	r = r ? r : op_buf_addf(out, "\n# TYPE %s %s\n", f->name, f->type);
	for (size_t k = h; !r && k < end; k++)
		if (strcmp(refs[k].f->type, f->type) == 0)
			r = op_buf_add(out, op_buf_str(&refs[k].f->samples), refs[k].f->samples.len);
	return r;
}

int inst_mfams_render(const struct inst_mfams *const *sets, size_t n, struct op_buf *out)
{
	size_t total = 0;
	for (size_t s = 0; s < n; s++)
		total += sets[s] ? sets[s]->n : 0;
	struct famref *refs = op_calloc(total ? total : 1, sizeof(*refs));
	size_t k = 0;
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0; sets[s] && i < sets[s]->n; i++)
			refs[k++] = (struct famref){ .f = &sets[s]->v[i], .set = s, .idx = i };
	qsort(refs, total, sizeof(*refs), by_name_then_place);
	/* the heads, in the order their families first appear */
	const struct famref **heads = op_calloc(total ? total : 1, sizeof(*heads));
	size_t nh = 0;
	for (size_t i = 0; i < total; i++) {
		bool first = i == 0 || strcmp(refs[i - 1].f->name, refs[i].f->name) != 0;
		refs[i].head = first ? i : refs[i - 1].head;
		if (first)
			heads[nh++] = &refs[i];
	}
	qsort(heads, nh, sizeof(*heads), by_place);
	int r = 0;
	for (size_t g = 0; !r && g < nh; g++) {
		size_t h = (size_t)(heads[g] - refs), end = h + 1;
		while (end < total && refs[end].head == h)
			end++;
		r = render_group(refs, h, end, out);
	}
	free(heads);
	free(refs);
	return r;
}

int inst_metrics_parse_value(const char *s, double *ret)
{
	if (!s) {
		*ret = NAN;
		return 0;
	}
	if (!strcmp(s, "t") || !strcmp(s, "true")) {
		*ret = 1;
		return 0;
	}
	if (!strcmp(s, "f") || !strcmp(s, "false")) {
		*ret = 0;
		return 0;
	}
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static const struct inst_mq_col *find_col(const struct inst_mq *q, const char *column)
{
	for (size_t i = 0; i < q->n_cols; i++)
		if (strcmp(q->cols[i].column, column) == 0)
			return &q->cols[i];
	return NULL;
}

/* The labels of one row: LABEL columns in the order of metrics (NULL = ""). */
static int row_labels(const struct inst_mq *q, size_t ncols, const char *const *cols,
		      const char *const *row, struct op_buf *out)
{
	int r = 0;
	for (size_t i = 0; !r && i < q->n_cols; i++) {
		if (q->cols[i].usage != INST_MQ_LABEL)
			continue;
		const char *v = "";
		for (size_t c = 0; c < ncols; c++)
			if (strcmp(cols[c], q->cols[i].column) == 0)
				v = row[c] ? row[c] : "";
		r = op_buf_addf(out, "%s%s=\"", out->len ? "," : "", q->cols[i].column);
		r = r ? r : op_metrics_label_value(out, v);
		r = r ? r : op_buf_addc(out, '"');
	}
	return r;
}

/* A cell of a sample column: its value, or -EINVAL (skipped, CloudNativePG
 * logs and drops it too). */
static int cell_value(const struct inst_mq_col *col, const char *cell, double *ret)
{
	if (col->usage == INST_MQ_MAPPEDMETRIC) {
		for (size_t i = 0; cell && i < col->n_map; i++)
			if (strcmp(col->map[i].text, cell) == 0) {
				*ret = col->map[i].value;
				return 0;
			}
		return -EINVAL;
	}
	if (col->usage == INST_MQ_DURATION) {
		int64_t ms;
		if (!cell || strcmp(cell, "-1") == 0 || inst_go_duration_ms(cell, &ms))
			return -EINVAL;
		*ret = (double)ms;
		return 0;
	}
	return inst_metrics_parse_value(cell, ret);
}

static int col_family(const struct inst_mq *q, const char *prefix, const struct inst_mq_col *col,
		      struct inst_mfams *out, struct inst_mfam **ret, struct op_err *err)
{
	char name[512];
	snprintf(name, sizeof(name), "%s_%s_%s%s", prefix, q->name ? q->name : q->key,
		 col->name ? col->name : col->column,
		 col->usage == INST_MQ_DURATION ? "_milliseconds" : "");
	const char *type = col->usage == INST_MQ_COUNTER ? "counter" : "gauge";
	*ret = inst_mfams_get(out, name, type, col->description);
	if (!*ret)
		return op_err_set(err, -EINVAL, "%s: metric %s already exists with another type",
				  q->key, name);
	return 0;
}

int inst_mq_render(const struct inst_mq *q, const char *prefix, size_t ncols,
		   const char *const *cols, size_t nrows, const char *const *cells,
		   struct inst_mfams *out, struct op_err *err)
{
	if (ncols != q->n_cols)
		return op_err_set(err, -EINVAL,
				  "%s: the query returns %zu columns, its metrics map %zu", q->key,
				  ncols, q->n_cols);
	struct op_buf labels = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = 0;
	for (size_t c = 0; !r && c < ncols; c++) {
		const struct inst_mq_col *col = find_col(q, cols[c]);
		if (!col || col->usage == INST_MQ_LABEL || col->usage == INST_MQ_DISCARD)
			continue;
		struct inst_mfam *fam = NULL;
		r = col_family(q, prefix, col, out, &fam, err);
		for (size_t row = 0; !r && row < nrows; row++) {
			double v;
			if (cell_value(col, cells[row * ncols + c], &v))
				continue;
			op_buf_reset(&labels);
			r = row_labels(q, ncols, cols, &cells[row * ncols], &labels);
			r = r ? r : inst_mfam_sample(fam, op_buf_str(&labels), v);
			if (r)
				op_err_set(err, r, "%s: too much output", q->key);
		}
	}
	op_buf_done(&labels);
	return r;
}
