/* webhooks/offline.c - admission offline (see offline.h): the pipeline of
 * `pgop validate`.
 */
#include "webhooks/offline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/yaml.h"

struct run {
	bool json;
	enum wh_kind review_kind;
	FILE *out, *diag;          /* borrowed */
	json_object *old_objects;  /* owned array of defaulted objects from the old files */
	json_object *results;      /* owned array (json mode) */
	struct wh_offline_summary sum;
};

static int read_input(const char *path, struct op_buf *out, struct op_err *err)
{
	bool is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "cannot open: %s", strerror(errno));
	int ret = 0;
	char chunk[16384];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = op_err_set(err, -errno, "cannot read: %s", strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (op_buf_add(out, chunk, (size_t)n) < 0) {
			ret = op_err_set(err, -EMSGSIZE, "larger than %u bytes", OP_BUF_MAX_FILE);
			break;
		}
	}
	if (!is_stdin)
		close(fd);
	return ret;
}

/* Parses a file into an OWNED flat array of documents (List items expanded). */
static int load_docs(const char *path, json_object **ret, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf data = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_(op_json_putp) json_object *docs = NULL;
	int r = read_input(path, &data, err);
	if (r < 0)
		return r;
	r = op_yaml_or_json_parse_docs(data.data, data.len, NULL, &docs, err);
	if (r < 0)
		return r;
	json_object *flat = op_jarr();
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		json_object *d = json_object_array_get_idx(docs, i);
		const char *kind = op_json_str_at(d, "kind");
		json_object *items = op_json_at(d, "items");
		if (kind && strcmp(kind, "List") == 0 && json_object_is_type(items, json_type_array)) {
			for (size_t j = 0; j < json_object_array_length(items); j++)
				op_jpush(flat, json_object_get(json_object_array_get_idx(items, j)));
		} else {
			op_jpush(flat, json_object_get(d));
		}
	}
	*ret = flat;
	return 0;
}

/* The kind admission knows d as (wh_resource_of), or -ENOENT. */
static int resource_of(json_object *d)
{
	return json_object_is_type(d, json_type_object) ? wh_resource_of(d) : -ENOENT;
}

static bool is_review(json_object *d)
{
	const char *kind = op_json_str_at(d, "kind");
	return kind && strcmp(kind, "AdmissionReview") == 0;
}

static const char *ns_of(json_object *d)
{
	const char *ns = op_json_str_at(d, "metadata.namespace");
	return ns && *ns ? ns : "default";
}

static const char *name_of(json_object *d)
{
	const char *n = op_json_str_at(d, "metadata.name");
	return n && *n ? n : "(unnamed)";
}

/* The old object of the same kind, namespace and name as d, or NULL. */
static json_object *find_old(struct run *run, json_object *d)
{
	for (size_t i = 0; run->old_objects && i < json_object_array_length(run->old_objects);
	     i++) {
		json_object *o = json_object_array_get_idx(run->old_objects, i);
		if (resource_of(o) == resource_of(d) && strcmp(name_of(o), name_of(d)) == 0 &&
		    strcmp(ns_of(o), ns_of(d)) == 0)
			return o;
	}
	return NULL;
}

/* Loads and defaults the admitted objects of the old files into
 * run->old_objects. -errno with err = "FILE: why" when a file or one of its
 * objects is unusable. */
static int load_old(struct run *run, const char *const *files, size_t n_files,
		    struct op_err *err)
{
	run->old_objects = op_jarr();
	for (size_t f = 0; f < n_files; f++) {
		_cleanup_(op_json_putp) json_object *docs = NULL;
		int r = load_docs(files[f], &docs, err);
		if (r < 0) {
			op_err_prefix(err, "%s", files[f]);
			return -EINVAL;
		}
		for (size_t i = 0; i < json_object_array_length(docs); i++) {
			json_object *d = json_object_array_get_idx(docs, i);
			int rs = resource_of(d);
			if (rs < 0)
				continue;
			json_object *patch = NULL;
			if (wh_default_resource((enum wh_resource)rs, d, &patch, err) < 0) {
				op_err_prefix(err, "%s: %s/%s", files[f], ns_of(d), name_of(d));
				return -EINVAL;
			}
			json_object_put(patch);
			op_jpush(run->old_objects, json_object_get(d));
		}
	}
	return 0;
}

static json_object *result_base(const char *file, json_object *d, const char *kind)
{
	json_object *o = op_jobj();
	op_jset(o, "file", op_jstr(file));
	op_jset(o, "kind", op_jstr(kind));
	op_jset(o, "namespace", op_jstr(ns_of(d)));
	op_jset(o, "name", op_jstr(name_of(d)));
	return o;
}

static void report_skip(struct run *run, const char *file, json_object *d)
{
	const char *kind = op_json_str_at(d, "kind");
	run->sum.skipped++;
	if (!run->json) {
		fprintf(run->out,
			"%s: %s/%s: skipped (%s is not a kind pgop admits: Cluster, Backup, "
			"ScheduledBackup, ObjectStore)\n",
			file, ns_of(d), name_of(d), kind ? kind : "a document without kind");
		return;
	}
	json_object *o = result_base(file, d, kind ? kind : "");
	op_jset(o, "skipped", op_jbool(1));
	op_jpush(run->results, o);
}

static void report_object(struct run *run, const char *file, json_object *d,
			  enum wh_resource rs, bool update, const struct wh_result *res)
{
	bool ok = res->n_errors == 0;
	if (ok)
		run->sum.admitted++;
	else
		run->sum.denied++;
	if (!run->json) {
		if (ok)
			fprintf(run->out, "%s: %s/%s: admitted\n", file, ns_of(d), name_of(d));
		for (size_t i = 0; i < res->n_errors; i++) {
			const struct wh_issue *e = &res->errors[i];
			_cleanup_free_ char *body = wh_issue_body(e);
			fprintf(run->out, "%s: %s/%s: %s%s%s\n", file, ns_of(d), name_of(d),
				e->path ? e->path : "", e->path && *e->path ? ": " : "", body);
		}
		for (size_t i = 0; i < res->n_warnings; i++)
			fprintf(run->out, "%s: %s/%s: warning: %s\n", file, ns_of(d), name_of(d),
				res->warnings[i]);
		return;
	}
	json_object *o = result_base(file, d, wh_resource_kind(rs));
	op_jset(o, "operation", op_jstr(update ? "UPDATE" : "CREATE"));
	op_jset(o, "admitted", op_jbool(ok));
	json_object *errs = op_jarr();
	for (size_t i = 0; i < res->n_errors; i++) {
		json_object *e = op_jobj();
		op_jset(e, "field", op_jstr(res->errors[i].path ? res->errors[i].path : ""));
		_cleanup_free_ char *body = wh_issue_body(&res->errors[i]);
		op_jset(e, "message", op_jstr(body));
		op_jset(e, "reason", op_jstr(wh_error_reason(res->errors[i].type)));
		op_jpush(errs, e);
	}
	op_jset(o, "errors", errs);
	json_object *warns = op_jarr();
	for (size_t i = 0; i < res->n_warnings; i++)
		op_jpush(warns, op_jstr(res->warnings[i]));
	op_jset(o, "warnings", warns);
	op_jpush(run->results, o);
}

static void report_input_error(struct run *run, const char *file, const char *what,
			       const char *msg)
{
	run->sum.input_errors++;
	fprintf(run->diag, "%s: %s%s%s\n", file, what ? what : "", what ? ": " : "", msg);
	if (!run->json)
		return;
	json_object *o = op_jobj();
	op_jset(o, "file", op_jstr(file));
	op_jset(o, "error", op_jstr(msg));
	op_jpush(run->results, o);
}

static void check_object(struct run *run, const char *file, json_object *d, enum wh_resource rs)
{
	struct op_err err = OP_ERR_INIT;
	json_object *patch = NULL;
	if (wh_default_resource(rs, d, &patch, &err) < 0) {
		_cleanup_free_ char *what = op_asprintf("%s/%s", ns_of(d), name_of(d));
		report_input_error(run, file, what, err.msg);
		return;
	}
	json_object_put(patch);
	json_object *old = find_old(run, d);
	struct wh_result res = { 0 };
	wh_validate_resource(rs, d, old, &res);
	report_object(run, file, d, rs, old != NULL, &res);
	wh_result_done(&res);
}

static void check_review(struct run *run, const char *file, json_object *d)
{
	const char *body = json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN);
	_cleanup_(op_buf_donep) struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_err err = OP_ERR_INIT;
	_cleanup_(op_json_putp) json_object *parsed = NULL;
	const char *uid = op_json_str_at(d, "request.uid");
	if (wh_handle_review(run->review_kind, body, strlen(body), &resp, &err) < 0) {
		_cleanup_free_ char *what = op_asprintf("AdmissionReview %s", uid ? uid : "");
		report_input_error(run, file, what, err.msg);
		return;
	}
	if (op_json_parse(resp.data, resp.len, 0, &parsed, &err) < 0) {
		report_input_error(run, file, "AdmissionReview response", err.msg);
		return;
	}
	json_object *allowed = op_json_at(parsed, "response.allowed");
	bool ok = allowed && json_object_get_boolean(allowed);
	if (ok)
		run->sum.admitted++;
	else
		run->sum.denied++;
	if (!run->json) {
		fprintf(run->out, "%s\n",
			json_object_to_json_string_ext(parsed, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_SPACED |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	json_object *o = op_jobj();
	op_jset(o, "file", op_jstr(file));
	op_jset(o, "kind", op_jstr("AdmissionReview"));
	op_jset(o, "uid", op_jstr(uid ? uid : ""));
	op_jset(o, "admitted", op_jbool(ok));
	op_jset(o, "response", json_object_get(parsed));
	op_jpush(run->results, o);
}

static void check_file(struct run *run, const char *file)
{
	_cleanup_(op_json_putp) json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	if (load_docs(file, &docs, &err) < 0) {
		report_input_error(run, file, NULL, err.msg);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		json_object *d = json_object_array_get_idx(docs, i);
		int rs = resource_of(d);
		if (!json_object_is_type(d, json_type_object))
			report_input_error(run, file, NULL, "a document is not an object");
		else if (rs >= 0)
			check_object(run, file, d, (enum wh_resource)rs);
		else if (is_review(d))
			check_review(run, file, d);
		else
			report_skip(run, file, d);
	}
}

/* Writes the JSON document (json mode) or the summary line (text mode). */
static void finish(struct run *run)
{
	const struct wh_offline_summary *s = &run->sum;
	if (run->json) {
		json_object *top = op_jobj();
		op_jset(top, "admitted", op_jbool(s->input_errors == 0 && s->denied == 0));
		json_object *sum = op_jobj();
		op_jset(sum, "admitted", op_jint((int)s->admitted));
		op_jset(sum, "denied", op_jint((int)s->denied));
		op_jset(sum, "skipped", op_jint((int)s->skipped));
		op_jset(sum, "inputErrors", op_jint((int)s->input_errors));
		op_jset(top, "summary", sum);
		op_jset(top, "results", json_object_get(run->results));
		fprintf(run->out, "%s\n",
			json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
								    JSON_C_TO_STRING_SPACED |
								    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	} else {
		fprintf(run->diag, "%u admitted, %u denied, %u skipped, %u input errors\n",
			s->admitted, s->denied, s->skipped, s->input_errors);
	}
}

int wh_validate_files(const struct wh_offline_opts *opts, FILE *out,
		      struct wh_offline_summary *ret_sum, struct op_err *err)
{
	struct run run = {
		.json = opts->json,
		.review_kind = opts->review_kind,
		.out = out,
		.diag = opts->diag ? opts->diag : stderr,
	};
	int r = load_old(&run, opts->old_files, opts->n_old_files, err);
	if (r == 0) {
		run.results = op_jarr();
		for (size_t i = 0; i < opts->n_files; i++)
			check_file(&run, opts->files[i]);
		finish(&run);
		if (ret_sum)
			*ret_sum = run.sum;
	}
	json_object_put(run.old_objects);
	json_object_put(run.results);
	return r;
}
