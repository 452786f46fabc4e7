/* cmd/validate.c - `pgop validate`: the admission webhooks, offline.
 *
 * Reads YAML or JSON files (several documents each, `kind: List` expanded),
 * and for every postgresql.cnpg.io Cluster runs what the API server would:
 * the mutating webhook's defaults, then validation (UPDATE rules too when
 * --old holds a Cluster of the same namespace/name, itself defaulted first).
 * An AdmissionReview document is answered exactly as the HTTPS endpoint
 * would (--webhook picks mutate or validate). Other kinds are listed as
 * skipped.
 *
 * Exit: 0 all admitted, 1 something denied, 2 usage, read or parse errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/log.h"
#include "support/yaml.h"
#include "webhooks/webhooks.h"

#define CLUSTER_GROUP "postgresql.cnpg.io/"

struct validate_opts {
	struct cmd_strings files;
	struct cmd_strings old_files;
	const char *output;
	const char *webhook;
};

static const struct cmd_flag validate_flags[] = {
	{ "file", 'f', CMD_FLAG_STRINGS, offsetof(struct validate_opts, files), 0, "FILE",
	  "manifest to check, YAML or JSON, '-' for stdin (repeatable, required)" },
	{ "old", 0, CMD_FLAG_STRINGS, offsetof(struct validate_opts, old_files), 0, "FILE",
	  "stored objects: a Cluster found here by namespace/name is checked as an UPDATE" },
	{ "output", 'o', CMD_FLAG_STRING, offsetof(struct validate_opts, output), 0, "FORMAT",
	  "text (default) or json" },
	{ "webhook", 0, CMD_FLAG_STRING, offsetof(struct validate_opts, webhook), 0, "KIND",
	  "for AdmissionReview input: validate (default) or mutate" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char validate_usage[] =
	"Usage: pgop validate -f FILE [-f FILE...] [FILE...] [--old FILE] [-o text|json]\n"
	"Runs the Cluster admission webhooks (defaults, then validation) on manifests.\n"
	"Exit status: 0 all admitted, 1 some object denied, 2 usage or input errors.\n\nFlags:\n";

struct run {
	bool json;
	enum wh_kind review_kind;
	json_object *old_clusters; /* owned array of defaulted Clusters from --old */
	json_object *results;      /* owned array (json mode) */
	unsigned admitted, denied, skipped, input_errors;
};

/* OOM policy: like op_malloc, a failed json-c constructor aborts. */
static json_object *jcheck(json_object *o)
{
	if (!o)
		abort();
	return o;
}

static void jset(json_object *obj, const char *key, json_object *val)
{
	if (op_json_set(obj, key, jcheck(val)) < 0)
		abort();
}

static void jappend(json_object *arr, json_object *val)
{
	if (op_json_append(arr, jcheck(val)) < 0)
		abort();
}

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
	json_object *flat = jcheck(json_object_new_array());
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		json_object *d = json_object_array_get_idx(docs, i);
		const char *kind = op_json_str_at(d, "kind");
		json_object *items = op_json_at(d, "items");
		if (kind && strcmp(kind, "List") == 0 && json_object_is_type(items, json_type_array)) {
			for (size_t j = 0; j < json_object_array_length(items); j++)
				jappend(flat, json_object_get(json_object_array_get_idx(items, j)));
		} else {
			jappend(flat, json_object_get(d));
		}
	}
	*ret = flat;
	return 0;
}

static bool is_cluster(json_object *d)
{
	const char *kind = op_json_str_at(d, "kind");
	const char *api = op_json_str_at(d, "apiVersion");
	return kind && api && strcmp(kind, "Cluster") == 0 &&
	       strncmp(api, CLUSTER_GROUP, strlen(CLUSTER_GROUP)) == 0;
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

static json_object *find_old(struct run *run, json_object *d)
{
	for (size_t i = 0; run->old_clusters && i < json_object_array_length(run->old_clusters);
	     i++) {
		json_object *o = json_object_array_get_idx(run->old_clusters, i);
		if (strcmp(name_of(o), name_of(d)) == 0 && strcmp(ns_of(o), ns_of(d)) == 0)
			return o;
	}
	return NULL;
}

static int load_old(struct run *run, const struct cmd_strings *files)
{
	run->old_clusters = jcheck(json_object_new_array());
	for (size_t f = 0; f < files->n; f++) {
		_cleanup_(op_json_putp) json_object *docs = NULL;
		struct op_err err = OP_ERR_INIT;
		if (load_docs(files->v[f], &docs, &err) < 0) {
			fprintf(stderr, "%s: %s\n", files->v[f], err.msg);
			return -EINVAL;
		}
		for (size_t i = 0; i < json_object_array_length(docs); i++) {
			json_object *d = json_object_array_get_idx(docs, i);
			if (!is_cluster(d))
				continue;
			json_object *patch = NULL;
			if (wh_default(d, &patch, &err) < 0) {
				fprintf(stderr, "%s: %s/%s: %s\n", files->v[f], ns_of(d), name_of(d),
					err.msg);
				return -EINVAL;
			}
			json_object_put(patch);
			jappend(run->old_clusters, json_object_get(d));
		}
	}
	return 0;
}

static json_object *result_base(const char *file, json_object *d, const char *kind)
{
	json_object *o = jcheck(json_object_new_object());
	jset(o, "file", json_object_new_string(file));
	jset(o, "kind", json_object_new_string(kind));
	jset(o, "namespace", json_object_new_string(ns_of(d)));
	jset(o, "name", json_object_new_string(name_of(d)));
	return o;
}

static void report_skip(struct run *run, const char *file, json_object *d)
{
	const char *kind = op_json_str_at(d, "kind");
	run->skipped++;
	if (!run->json) {
		printf("%s: %s/%s: skipped (%s is not a postgresql.cnpg.io Cluster)\n", file,
		       ns_of(d), name_of(d), kind ? kind : "a document without kind");
		return;
	}
	json_object *o = result_base(file, d, kind ? kind : "");
	jset(o, "skipped", json_object_new_boolean(1));
	jappend(run->results, o);
}

static void report_cluster(struct run *run, const char *file, json_object *d, bool update,
			   const struct wh_result *res)
{
	bool ok = res->n_errors == 0;
	if (ok)
		run->admitted++;
	else
		run->denied++;
	if (!run->json) {
		if (ok)
			printf("%s: %s/%s: admitted\n", file, ns_of(d), name_of(d));
		for (size_t i = 0; i < res->n_errors; i++) {
			const struct wh_issue *e = &res->errors[i];
			_cleanup_free_ char *body = wh_issue_body(e);
			printf("%s: %s/%s: %s%s%s\n", file, ns_of(d), name_of(d),
			       e->path ? e->path : "", e->path && *e->path ? ": " : "", body);
		}
		for (size_t i = 0; i < res->n_warnings; i++)
			printf("%s: %s/%s: warning: %s\n", file, ns_of(d), name_of(d),
			       res->warnings[i]);
		return;
	}
	json_object *o = result_base(file, d, "Cluster");
	jset(o, "operation", json_object_new_string(update ? "UPDATE" : "CREATE"));
	jset(o, "admitted", json_object_new_boolean(ok));
	json_object *errs = jcheck(json_object_new_array());
	for (size_t i = 0; i < res->n_errors; i++) {
		json_object *e = jcheck(json_object_new_object());
		jset(e, "field", json_object_new_string(res->errors[i].path ? res->errors[i].path : ""));
		_cleanup_free_ char *body = wh_issue_body(&res->errors[i]);
		jset(e, "message", json_object_new_string(body));
		jset(e, "reason", json_object_new_string(wh_error_reason(res->errors[i].type)));
		jappend(errs, e);
	}
	jset(o, "errors", errs);
	json_object *warns = jcheck(json_object_new_array());
	for (size_t i = 0; i < res->n_warnings; i++)
		jappend(warns, json_object_new_string(res->warnings[i]));
	jset(o, "warnings", warns);
	jappend(run->results, o);
}

static void report_input_error(struct run *run, const char *file, const char *what,
			       const char *msg)
{
	run->input_errors++;
	fprintf(stderr, "%s: %s%s%s\n", file, what ? what : "", what ? ": " : "", msg);
	if (!run->json)
		return;
	json_object *o = jcheck(json_object_new_object());
	jset(o, "file", json_object_new_string(file));
	jset(o, "error", json_object_new_string(msg));
	jappend(run->results, o);
}

static void check_cluster(struct run *run, const char *file, json_object *d)
{
	struct op_err err = OP_ERR_INIT;
	json_object *patch = NULL;
	if (wh_default(d, &patch, &err) < 0) {
		_cleanup_free_ char *what = op_asprintf("%s/%s", ns_of(d), name_of(d));
		report_input_error(run, file, what, err.msg);
		return;
	}
	json_object_put(patch);
	json_object *old = find_old(run, d);
	struct wh_result res = { 0 };
	wh_validate(d, old, &res);
	report_cluster(run, file, d, old != NULL, &res);
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
		run->admitted++;
	else
		run->denied++;
	if (!run->json) {
		printf("%s\n", json_object_to_json_string_ext(parsed, JSON_C_TO_STRING_PRETTY |
									      JSON_C_TO_STRING_SPACED |
									      JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	json_object *o = jcheck(json_object_new_object());
	jset(o, "file", json_object_new_string(file));
	jset(o, "kind", json_object_new_string("AdmissionReview"));
	jset(o, "uid", json_object_new_string(uid ? uid : ""));
	jset(o, "admitted", json_object_new_boolean(ok));
	jset(o, "response", json_object_get(parsed));
	jappend(run->results, o);
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
		if (!json_object_is_type(d, json_type_object))
			report_input_error(run, file, NULL, "a document is not an object");
		else if (is_cluster(d))
			check_cluster(run, file, d);
		else if (is_review(d))
			check_review(run, file, d);
		else
			report_skip(run, file, d);
	}
}

static int finish(struct run *run)
{
	int rc = run->input_errors ? 2 : run->denied ? 1 : 0;
	if (run->json) {
		json_object *top = jcheck(json_object_new_object());
		jset(top, "admitted", json_object_new_boolean(rc == 0));
		json_object *sum = jcheck(json_object_new_object());
		jset(sum, "admitted", json_object_new_int((int)run->admitted));
		jset(sum, "denied", json_object_new_int((int)run->denied));
		jset(sum, "skipped", json_object_new_int((int)run->skipped));
		jset(sum, "inputErrors", json_object_new_int((int)run->input_errors));
		jset(top, "summary", sum);
		jset(top, "results", json_object_get(run->results));
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
									   JSON_C_TO_STRING_SPACED |
									   JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	} else {
		fprintf(stderr, "%u admitted, %u denied, %u skipped, %u input errors\n",
			run->admitted, run->denied, run->skipped, run->input_errors);
	}
	return rc;
}

int cmd_validate(int argc, char **argv)
{
	struct validate_opts o = { 0 };
	struct run run = { .review_kind = WH_VALIDATE };
	int rc = 2;
	int first_arg = argc;
	int r = cmd_parse_flags(validate_flags, OP_ARRAY_SIZE(validate_flags), validate_usage,
				argc, argv, &o, &first_arg);
	if (r == CMD_FLAGS_HELP) {
		rc = 0;
		goto out;
	}
	if (r)
		goto out;
	/* A shell glob after -f expands to one -f and more names: take those as files too. */
	for (int i = first_arg; i < argc; i++) {
		o.files.v = op_realloc(o.files.v, (o.files.n + 1) * sizeof(*o.files.v));
		o.files.v[o.files.n++] = argv[i];
	}
	if (o.files.n == 0) {
		fputs("pgop validate: at least one -f FILE is required\n"
		      "Try 'pgop validate --help'.\n",
		      stderr);
		goto out;
	}
	if (o.output && strcmp(o.output, "json") != 0 && strcmp(o.output, "text") != 0) {
		fprintf(stderr, "pgop validate: -o: expected text or json, got '%s'\n", o.output);
		goto out;
	}
	if (o.webhook && strcmp(o.webhook, "validate") != 0 && strcmp(o.webhook, "mutate") != 0) {
		fprintf(stderr, "pgop validate: --webhook: expected validate or mutate, got '%s'\n",
			o.webhook);
		goto out;
	}
	op_log_set_component("validate");
	run.json = o.output && strcmp(o.output, "json") == 0;
	run.review_kind = o.webhook && strcmp(o.webhook, "mutate") == 0 ? WH_MUTATE : WH_VALIDATE;
	run.results = jcheck(json_object_new_array());
	if (load_old(&run, &o.old_files) < 0)
		goto out;
	for (size_t i = 0; i < o.files.n; i++)
		check_file(&run, o.files.v[i]);
	rc = finish(&run);
out:
	json_object_put(run.old_clusters);
	json_object_put(run.results);
	cmd_strings_done(&o.files);
	cmd_strings_done(&o.old_files);
	return rc;
}
