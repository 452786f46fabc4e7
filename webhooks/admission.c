/* webhooks/admission.c - AdmissionReview v1 envelope (kubernetes-api.md §5):
 * decode the request, run defaulting or validation, encode the response.
 *
 * A broken envelope (not JSON, wrong apiVersion/kind, no request.uid, no
 * usable object) is -EINVAL, which the HTTP layer turns into 400. A request
 * for another resource kind is answered allowed=false. Denials mirror CNPG's
 * apierrors.NewInvalid: status.code 422, reason Invalid, details.causes[].
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/base64.h"
#include "support/buf.h"
#include "support/json.h"
#include "webhooks/defaults.h"
#include "webhooks/lookup.h"
#include "webhooks/webhooks.h"

#define REVIEW_API_VERSION "admission.k8s.io/v1"
#define REVIEW_KIND "AdmissionReview"
#define CLUSTER_GROUP "postgresql.cnpg.io"
#define CLUSTER_KIND "Cluster"

static json_object *new_obj(void)
{
	json_object *o = json_object_new_object();
	if (!o)
		abort(); /* OOM policy */
	return o;
}

static void put(json_object *o, const char *key, json_object *v)
{
	if (!v || op_json_set(o, key, v) < 0)
		abort(); /* OOM policy */
}

static void put_str(json_object *o, const char *key, const char *s)
{
	put(o, key, json_object_new_string(s));
}

static void put_warnings(json_object *resp, const struct wh_result *res)
{
	if (!res->n_warnings)
		return;
	json_object *w = json_object_new_array();
	if (!w)
		abort();
	for (size_t i = 0; i < res->n_warnings; i++)
		if (op_json_append(w, json_object_new_string(res->warnings[i])) < 0)
			abort();
	put(resp, "warnings", w);
}

/* allowed=false with a plain status (code, reason, message). */
static void deny(json_object *resp, int code, const char *reason, const char *message)
{
	json_object *st = new_obj();
	put_str(st, "status", "Failure");
	put_str(st, "message", message);
	put_str(st, "reason", reason);
	put(st, "code", json_object_new_int(code));
	put(resp, "allowed", json_object_new_boolean(0));
	put(resp, "status", st);
}

/* CNPG apierrors.NewInvalid(GroupKind{postgresql.cnpg.io, Cluster}, name, errs). */
static int deny_invalid(json_object *resp, const char *name, const struct wh_result *res)
{
	_cleanup_(op_buf_donep) struct op_buf msg = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_addf(&msg, "%s.%s \"%s\" is invalid: ", CLUSTER_KIND, CLUSTER_GROUP, name);
	json_object *causes = json_object_new_array();
	if (!causes)
		abort();
	for (size_t i = 0; i < res->n_errors; i++) {
		const struct wh_issue *e = &res->errors[i];
		_cleanup_free_ char *body = wh_issue_body(e);
		if (r == 0)
			r = op_buf_addf(&msg, "%s%s%s%s", i ? ", " : (res->n_errors > 1 ? "[" : ""),
					e->path, *e->path ? ": " : "", body);
		json_object *c = new_obj();
		put_str(c, "reason", wh_error_reason(e->type));
		put_str(c, "message", body);
		put_str(c, "field", e->path);
		if (op_json_append(causes, c) < 0)
			abort();
	}
	if (r == 0 && res->n_errors > 1)
		r = op_buf_addc(&msg, ']'); /* utilerrors.NewAggregate: "[a, b]" */
	if (r < 0) { /* message past OP_BUF_MAX_SMALL: keep the head, causes have it all */
		op_buf_reset(&msg);
		r = op_buf_addf(&msg, "%s.%s \"%s\" is invalid: %zu errors (see details.causes)",
				CLUSTER_KIND, CLUSTER_GROUP, name, res->n_errors);
		if (r < 0) {
			json_object_put(causes);
			return r;
		}
	}
	json_object *details = new_obj();
	put_str(details, "name", name);
	put_str(details, "group", CLUSTER_GROUP);
	put_str(details, "kind", CLUSTER_KIND);
	put(details, "causes", causes);
	json_object *st = new_obj();
	put_str(st, "apiVersion", "v1");
	put_str(st, "kind", "Status");
	put(st, "metadata", new_obj());
	put_str(st, "status", "Failure");
	put_str(st, "message", op_buf_str(&msg));
	put_str(st, "reason", "Invalid");
	put(st, "details", details);
	put(st, "code", json_object_new_int(422));
	put(resp, "allowed", json_object_new_boolean(0));
	put(resp, "status", st);
	return 0;
}

/* object is the request's own (modified in place: nothing reads it after). */
static int do_mutate(json_object *resp, json_object *object, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf patch = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	size_t n_ops = 0;
	int r = wh_default_text(object, &patch, &n_ops, err);
	if (r < 0) {
		op_err_prefix(err, "request.object");
		return r == -EMSGSIZE ? op_err_set(err, r, "patch too large") : r;
	}
	put(resp, "allowed", json_object_new_boolean(1));
	if (n_ops == 0)
		return 0;
	_cleanup_(op_buf_donep) struct op_buf b64 = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	if (op_base64_encode(patch.data, patch.len, 0, &b64) < 0)
		return op_err_set(err, -EMSGSIZE, "patch too large (%zu bytes)", patch.len);
	put_str(resp, "patchType", "JSONPatch");
	put(resp, "patch", json_object_new_string_len(b64.data, (int)b64.len));
	return 0;
}

static int do_validate(json_object *resp, json_object *request, json_object *object,
		       json_object *old)
{
	struct wh_result res = { 0 };
	wh_validate(object, old, &res);
	int r = 0;
	if (res.n_errors) {
		const char *name = wh_str(object, "metadata.name");
		if (!name)
			name = wh_str(request, "name");
		r = deny_invalid(resp, name ? name : "", &res);
	} else {
		put(resp, "allowed", json_object_new_boolean(1));
	}
	put_warnings(resp, &res);
	wh_result_done(&res);
	return r;
}

/* Decodes and answers the request; fills the "response" object. */
static int review(enum wh_kind kind, json_object *root, json_object *resp, struct op_err *err)
{
	const char *av = wh_str(root, "apiVersion"), *k = wh_str(root, "kind");
	if (!av || strcmp(av, REVIEW_API_VERSION) != 0)
		return op_err_set(err, -EINVAL, "apiVersion: expected %s, got %s",
				  REVIEW_API_VERSION, av ? av : "nothing");
	if (!k || strcmp(k, REVIEW_KIND) != 0)
		return op_err_set(err, -EINVAL, "kind: expected %s, got %s", REVIEW_KIND,
				  k ? k : "nothing");
	json_object *req = wh_at(root, "request");
	if (!req || !json_object_is_type(req, json_type_object))
		return op_err_set(err, -EINVAL, "request: expected object");
	const char *uid = wh_str(req, "uid");
	if (!uid || !*uid)
		return op_err_set(err, -EINVAL, "request.uid: required");
	put_str(resp, "uid", uid);

	const char *op = wh_str(req, "operation");
	if (!op)
		return op_err_set(err, -EINVAL, "request.operation: required");
	bool update = strcmp(op, "UPDATE") == 0;
	if (!update && strcmp(op, "CREATE") != 0) {
		if (strcmp(op, "DELETE") != 0 && strcmp(op, "CONNECT") != 0)
			return op_err_set(err, -EINVAL, "request.operation: unknown value '%s'", op);
		put(resp, "allowed", json_object_new_boolean(1)); /* not registered; no-op */
		return 0;
	}
	json_object *rk = wh_at(req, "kind");
	if (!rk || !json_object_is_type(rk, json_type_object))
		return op_err_set(err, -EINVAL, "request.kind: expected object");
	const char *group = wh_str(rk, "group"), *rkind = wh_str(rk, "kind");
	if (!group || strcmp(group, CLUSTER_GROUP) != 0 || !rkind ||
	    strcmp(rkind, CLUSTER_KIND) != 0) {
		_cleanup_free_ char *m = op_asprintf(
			"this webhook only admits %s.%s objects, got %s.%s", CLUSTER_KIND,
			CLUSTER_GROUP, rkind ? rkind : "?", group ? group : "?");
		deny(resp, 400, "BadRequest", m);
		return 0;
	}
	json_object *obj = wh_at(req, "object");
	if (!obj || !json_object_is_type(obj, json_type_object))
		return op_err_set(err, -EINVAL, "request.object: expected object, got %s",
				  op_json_type_name(obj));
	json_object *old = NULL;
	if (update) {
		old = wh_at(req, "oldObject");
		if (!old || !json_object_is_type(old, json_type_object))
			return op_err_set(err, -EINVAL,
					  "request.oldObject: expected object on UPDATE, got %s",
					  op_json_type_name(old));
	}
	if (kind == WH_MUTATE)
		return do_mutate(resp, obj, err);
	int r = do_validate(resp, req, obj, old);
	if (r < 0)
		return op_err_set(err, r, "cannot build the admission response");
	return 0;
}

int wh_handle_review(enum wh_kind kind, const char *body, size_t len, struct op_buf *resp,
		     struct op_err *err)
{
	if (len > OP_BUF_MAX_HTTP_BODY)
		return op_err_set(err, -EINVAL, "AdmissionReview too large (%zu bytes, max %u)", len,
				  OP_BUF_MAX_HTTP_BODY);
	_cleanup_(op_json_putp) json_object *root = NULL;
	int r = op_json_parse(body, len, OP_JSON_MAX_DEPTH, &root, err);
	if (r < 0) {
		op_err_prefix(err, "AdmissionReview");
		return r;
	}
	if (!json_object_is_type(root, json_type_object))
		return op_err_set(err, -EINVAL, "AdmissionReview: expected object, got %s",
				  op_json_type_name(root));
	_cleanup_(op_json_putp) json_object *out = new_obj();
	json_object *response = new_obj();
	put(out, "apiVersion", json_object_new_string(wh_str(root, "apiVersion") ?: ""));
	put(out, "kind", json_object_new_string(wh_str(root, "kind") ?: ""));
	put(out, "response", response);
	r = review(kind, root, response, err);
	if (r < 0)
		return r;
	size_t n = 0;
	const char *txt = json_object_to_json_string_length(
		out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!txt)
		return op_err_set(err, -ENOMEM, "cannot serialise the AdmissionReview response");
	r = op_buf_add(resp, txt, n);
	if (r < 0)
		return op_err_set(err, r, "AdmissionReview response too large (%zu bytes)", n);
	return 0;
}
