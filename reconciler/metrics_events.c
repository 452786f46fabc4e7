/* reconciler/metrics_events.c - the Event of a broken monitoring query
 * (issue 27): each instance's exporter reports the queries and custom query
 * files that fail in its /pg/status as
 *   "metricsErrors": [{"source": query key or file path, "error": why}]
 * (instance/metrics_collect.c; the instance managers have no RBAC for
 * Events, docs/instance-contract.md). One Warning Event MetricsQueryFailed
 * per source and error text for the whole Cluster, naming the instances that
 * report it at that reconcile: not one per scrape, nor one per instance. A
 * source no instance reports any more, once every instance answered, is
 * forgotten, so the same error coming back is an Event again. What was
 * reported is remembered by this process (rc_note_report): an operator
 * restart or a new leader reports a standing error once more. */
#include <stdio.h>
#include <string.h>

#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "support/alloc.h"
#include "support/json.h"

#define SUBJECT_PREFIX "metrics/"
#define MAX_SOURCES 16 /* per reconcile: the instances report at most 16 each */

struct failing { /* one source and its error text (the smallest the instances
		  * report: the same whatever order they answer in) */
	const char *source, *error; /* borrowed from the instances' documents */
	char who[256];              /* the instances reporting this error, ", "-separated */
	char *subject;              /* owned: SUBJECT_PREFIX source */
};

static struct failing *find(struct failing *f, size_t n, const char *source)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(f[i].source, source) == 0)
			return &f[i];
	return NULL;
}

static void add_who(struct failing *f, const char *pod)
{
	size_t len = strlen(f->who);
	snprintf(f->who + len, sizeof(f->who) - len, "%s%s", len ? ", " : "", pod);
}

/* The failing sources of the instances v[0..n) into f (at most MAX_SOURCES);
 * returns how many. *ret_all: every instance answered (its report is complete). */
static size_t gather(const struct rc_instance *v, size_t n, struct failing *f, bool *ret_all)
{
	size_t nf = 0;
	bool all = n > 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].has_status || !v[i].doc) {
			all = false;
			continue;
		}
		json_object *a = op_json_at(v[i].doc, "metricsErrors");
		size_t len = json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
		for (size_t k = 0; k < len; k++) {
			json_object *e = json_object_array_get_idx(a, k);
			const char *src = op_json_key_str(e, "source");
			const char *why = op_json_key_str(e, "error");
			if (!src || !*src || !why)
				continue;
			struct failing *x = find(f, nf, src);
			if (!x && nf < MAX_SOURCES) {
				x = &f[nf++];
				*x = (struct failing){ .source = src, .error = why };
				x->subject = op_asprintf(SUBJECT_PREFIX "%s", src);
			}
			if (x && strcmp(why, x->error) < 0) { /* the smallest text: stable */
				x->error = why;
				x->who[0] = '\0';
			}
			if (x && strcmp(x->error, why) == 0)
				add_who(x, v[i].name);
		}
	}
	*ret_all = all;
	return nf;
}

/* why with each run of white space (PostgreSQL's "LINE 1: ..." lines) as one
 * space, cut to fit out: an Event message on one line. */
static void one_line(const char *why, char *out, size_t len)
{
	size_t o = 0;
	bool space = false;
	for (const char *p = why; *p && o + 1 < len; p++) {
		bool ws = *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r';
		if (ws && !space && o)
			out[o++] = ' ';
		else if (!ws)
			out[o++] = *p;
		space = ws;
	}
	out[o] = '\0';
}

void rc_metrics_error_events(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	struct failing f[MAX_SOURCES];
	bool all = false;
	size_t nf = gather(v, n, f, &all);
	const char *keep[MAX_SOURCES];
	for (size_t i = 0; i < nf; i++) {
		keep[i] = f[i].subject;
		/* the id is the error text: a change of it is a new Event */
		if (!rc_note_report(r->ctl, r->key, f[i].subject, f[i].error))
			continue;
		char why[640];
		one_line(f[i].error, why, sizeof(why));
		rc_event(r, "Warning", "MetricsQueryFailed",
			 "monitoring query %.128s fails on %s: %s (cnpg_errors_total counts it; "
			 "the other metrics are collected)",
			 f[i].source, f[i].who, why);
	}
	if (all)
		rc_note_forget(r->ctl, r->key, SUBJECT_PREFIX, keep, nf);
	for (size_t i = 0; i < nf; i++)
		free(f[i].subject);
}
