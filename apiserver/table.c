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
	json_object *d = json_object_new_object();
	op_json_set(d, "kind", json_object_new_string("Status"));
	op_json_set(d, "apiVersion", json_object_new_string("v1"));
	op_json_set(d, "metadata", json_object_new_object());
	op_json_set(d, "status", json_object_new_string("Failure"));
	op_json_set(d, "message", json_object_new_string(msg ? msg : reason));
	op_json_set(d, "reason", json_object_new_string(reason));
	op_json_set(d, "code", json_object_new_int((int)code));
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
	return json_object_new_string(txt);
}

static json_object *cell(const struct as_column *c, json_object *obj, int64_t now_s)
{
	json_object *v = op_json_at(obj, c->path);
	char age[32];
	int64_t t = 0;
	switch (c->cell) {
	case AS_CELL_STR:
		return json_object_new_string(v && json_object_is_type(v, json_type_string)
						      ? json_object_get_string(v)
						      : "");
	case AS_CELL_INT: {
		int64_t i = 0;
		return v && op_json_to_i64(v, &i) == 1 ? json_object_new_int64(i) : NULL;
	}
	case AS_CELL_BOOL:
		return json_object_new_boolean(v && json_object_get_boolean(v));
	case AS_CELL_AGE:
	case AS_CELL_SEEN:
		if (!v || !json_object_is_type(v, json_type_string) ||
		    api_time_parse(json_object_get_string(v), &t) < 0)
			return json_object_new_string(c->cell == AS_CELL_SEEN ? "never" : "<unknown>");
		as_age(now_s - t, age, sizeof(age));
		if (c->cell == AS_CELL_SEEN) {
			char ago[48];
			snprintf(ago, sizeof(ago), "%s ago", age);
			return json_object_new_string(ago);
		}
		return json_object_new_string(age);
	case AS_CELL_LAG:
		return lag_cell(v);
	}
	return NULL;
}

static json_object *partial_metadata(json_object *obj)
{
	json_object *o = json_object_new_object();
	op_json_set(o, "kind", json_object_new_string("PartialObjectMetadata"));
	op_json_set(o, "apiVersion", json_object_new_string("meta.k8s.io/v1"));
	json_object *md = NULL;
	if (json_object_deep_copy(op_json_at(obj, "metadata"), &md, NULL) == 0)
		op_json_set(o, "metadata", md);
	return o;
}

int as_render_table(struct op_buf *out, const struct as_resource *res, json_object *objs,
		    const char *rv, int64_t now_s, bool with_headers)
{
	json_object *d = json_object_new_object();
	op_json_set(d, "kind", json_object_new_string("Table"));
	op_json_set(d, "apiVersion", json_object_new_string("meta.k8s.io/v1"));
	json_object *md = json_object_new_object();
	op_json_set(md, "resourceVersion", json_object_new_string(rv ? rv : ""));
	op_json_set(d, "metadata", md);
	json_object *defs = json_object_new_array();
	for (size_t i = 0; with_headers && i < res->n_cols; i++) {
		const struct as_column *c = &res->cols[i];
		json_object *cd = json_object_new_object();
		op_json_set(cd, "name", json_object_new_string(c->name));
		op_json_set(cd, "type", json_object_new_string(c->type));
		op_json_set(cd, "format", json_object_new_string(c->format));
		op_json_set(cd, "description", json_object_new_string(c->description));
		op_json_set(cd, "priority", json_object_new_int(c->priority));
		op_json_append(defs, cd);
	}
	op_json_set(d, "columnDefinitions", defs);
	json_object *rows = json_object_new_array();
	for (size_t k = 0; k < json_object_array_length(objs); k++) {
		json_object *obj = json_object_array_get_idx(objs, k);
		json_object *cells = json_object_new_array();
		for (size_t i = 0; i < res->n_cols; i++)
			json_object_array_add(cells, cell(&res->cols[i], obj, now_s));
		json_object *row = json_object_new_object();
		op_json_set(row, "cells", cells);
		op_json_set(row, "object", partial_metadata(obj));
		op_json_append(rows, row);
	}
	op_json_set(d, "rows", rows);
	return emit(out, d);
}

int as_render_list(struct op_buf *out, const struct as_resource *res, json_object *objs,
		   const char *rv)
{
	json_object *d = json_object_new_object();
	op_json_set(d, "kind", json_object_new_string(res->list_kind));
	op_json_set(d, "apiVersion", json_object_new_string(AS_GROUP_VERSION));
	json_object *md = json_object_new_object();
	op_json_set(md, "resourceVersion", json_object_new_string(rv ? rv : ""));
	op_json_set(d, "metadata", md);
	op_json_set(d, "items", json_object_get(objs));
	return emit(out, d);
}
