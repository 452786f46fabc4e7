/* apiserver/table.c - Status errors, Lists and meta.k8s.io/v1 Tables. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/timestamp.h"
#include "apiserver/internal.h"
#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"

static int emit(struct op_buf *out, json_object *doc)
{
	int r = op_buf_adds(out, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	return r;
}

int as_status(struct op_buf *out, unsigned code, const char *reason, const char *msg)
{
	json_object *d = op_jobj();
	op_jsets(d, "kind", "Status");
	op_jsets(d, "apiVersion", "v1");
	op_jset(d, "metadata", op_jobj());
	op_jsets(d, "status", "Failure");
	op_jsets(d, "message", msg ? msg : reason);
	op_jsets(d, "reason", reason);
	op_jset(d, "code", op_jint((int)code));
	op_buf_reset(out);
	return emit(out, d);
}

/* The lag text of a LiveInstance status (lagBytes, lagSeconds), formatted by
 * rc_repl_lag_text like the Cluster's status.maxLag (reconciler/replication.h);
 * a LiveCluster's Max Lag is the status.maxLag text that function wrote. */
static json_object *lag_cell(json_object *st)
{
	struct rc_repl_lag l = { 0 };
	json_object *b = op_json_at(st, "lagBytes");
	json_object *s = op_json_at(st, "lagSeconds");
	l.has_bytes = b && op_json_to_i64(b, &l.bytes) == 1;
	if (s) {
		l.has_seconds = true;
		l.seconds = json_object_get_double(s);
	}
	char txt[64];
	rc_repl_lag_text(&l, txt, sizeof(txt));
	return op_jstr(txt);
}

static json_object *cell(const struct as_column *c, json_object *obj, int64_t now_s)
{
	json_object *v = op_json_at(obj, c->path);
	char age[32];
	int64_t t = 0;
	switch (c->cell) {
	case AS_CELL_STR:
		return op_jstr(v && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
									     : "");
	case AS_CELL_INT: {
		int64_t i = 0;
		return v && op_json_to_i64(v, &i) == 1 ? op_jint(i) : NULL;
	}
	case AS_CELL_BOOL:
		return op_jbool(v && json_object_get_boolean(v));
	case AS_CELL_AGE:
	case AS_CELL_SEEN:
		if (!v || !json_object_is_type(v, json_type_string) ||
		    api_time_parse(json_object_get_string(v), &t) < 0)
			return op_jstr(c->cell == AS_CELL_SEEN ? "never" : "<unknown>");
		as_age(now_s - t, age, sizeof(age));
		if (c->cell == AS_CELL_SEEN) {
			char ago[48];
			snprintf(ago, sizeof(ago), "%s ago", age);
			return op_jstr(ago);
		}
		return op_jstr(age);
	case AS_CELL_LAG:
		return lag_cell(v);
	}
	return NULL;
}

static json_object *partial_metadata(json_object *obj)
{
	json_object *o = op_jobj();
	op_jsets(o, "kind", "PartialObjectMetadata");
	op_jsets(o, "apiVersion", "meta.k8s.io/v1");
	json_object *md = NULL;
	if (json_object_deep_copy(op_json_at(obj, "metadata"), &md, NULL) == 0)
		op_jset(o, "metadata", md);
	return o;
}

int as_render_table(struct op_buf *out, const struct as_resource *res, json_object *objs,
		    const char *rv, int64_t now_s, bool with_headers)
{
	json_object *d = op_jobj();
	op_jsets(d, "kind", "Table");
	op_jsets(d, "apiVersion", "meta.k8s.io/v1");
	json_object *md = op_jobj();
	op_jsets(md, "resourceVersion", rv);
	op_jset(d, "metadata", md);
	json_object *defs = op_jarr();
	for (size_t i = 0; with_headers && i < res->n_cols; i++) {
		const struct as_column *c = &res->cols[i];
		json_object *cd = op_jobj();
		op_jsets(cd, "name", c->name);
		op_jsets(cd, "type", c->type);
		op_jsets(cd, "format", c->format);
		op_jsets(cd, "description", c->description);
		op_jset(cd, "priority", op_jint(c->priority));
		op_jpush(defs, cd);
	}
	op_jset(d, "columnDefinitions", defs);
	json_object *rows = op_jarr();
	for (size_t k = 0; k < json_object_array_length(objs); k++) {
		json_object *obj = json_object_array_get_idx(objs, k);
		json_object *cells = op_jarr();
		for (size_t i = 0; i < res->n_cols; i++)
			op_jpush(cells, cell(&res->cols[i], obj, now_s));
		json_object *row = op_jobj();
		op_jset(row, "cells", cells);
		op_jset(row, "object", partial_metadata(obj));
		op_jpush(rows, row);
	}
	op_jset(d, "rows", rows);
	return emit(out, d);
}

int as_render_list(struct op_buf *out, const struct as_resource *res, json_object *objs,
		   const char *rv)
{
	json_object *d = op_jobj();
	op_jsets(d, "kind", res->list_kind);
	op_jsets(d, "apiVersion", AS_GROUP_VERSION);
	json_object *md = op_jobj();
	op_jsets(md, "resourceVersion", rv);
	op_jset(d, "metadata", md);
	op_jset(d, "items", json_object_get(objs));
	return emit(out, d);
}
