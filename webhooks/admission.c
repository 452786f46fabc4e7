/* webhooks/admission.c - AdmissionReview v1 envelope (kubernetes-api.md §5):
 * decode the request, run defaulting or validation, encode the response.
 *
 * A broken envelope (not JSON, wrong apiVersion/kind, no request.uid, no
 * usable object) is -EINVAL, which the HTTP layer turns into 400. A request
 * for another kind than the route's (enum wh_resource) is answered
 * allowed=false. Denials mirror CNPG's
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

static void put_warnings(json_object *resp, const struct wh_result *res)
{
	if (!res->n_warnings)
		return;
	json_object *w = op_jarr();
	for (size_t i = 0; i < res->n_warnings; i++)
		op_jpush(w, op_jstr(res->warnings[i]));
	op_jset(resp, "warnings", w);
}

/* allowed=false with a plain status (code, reason, message). */
static void deny(json_object *resp, int code, const char *reason, const char *message)
{
	json_object *st = op_jobj();
	op_jsets(st, "status", "Failure");
	op_jsets(st, "message", message);
	op_jsets(st, "reason", reason);
	op_jset(st, "code", op_jint(code));
	op_jset(resp, "allowed", op_jbool(0));
	op_jset(resp, "status", st);
}

/* CNPG apierrors.NewInvalid(GroupKind{group, kind}, name, errs). */
static int deny_invalid(json_object *resp, enum wh_resource rs, const char *name,
			const struct wh_result *res)
{
	const char *group = wh_resource_group(rs), *kind = wh_resource_kind(rs);
	_cleanup_(op_buf_donep) struct op_buf msg = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_addf(&msg, "%s.%s \"%s\" is invalid: ", kind, group, name);
	json_object *causes = op_jarr();
	for (size_t i = 0; i < res->n_errors; i++) {
		const struct wh_issue *e = &res->errors[i];
		_cleanup_free_ char *body = wh_issue_body(e);
		if (r == 0)
			r = op_buf_addf(&msg, "%s%s%s%s", i ? ", " : (res->n_errors > 1 ? "[" : ""),
					e->path, *e->path ? ": " : "", body);
		json_object *c = op_jobj();
		op_jsets(c, "reason", wh_error_reason(e->type));
		op_jsets(c, "message", body);
		op_jsets(c, "field", e->path);
		op_jpush(causes, c);
	}
	if (r == 0 && res->n_errors > 1)
		r = op_buf_addc(&msg, ']'); /* utilerrors.NewAggregate: "[a, b]" */
	if (r < 0) { /* message past OP_BUF_MAX_SMALL: keep the head, causes have it all */
		op_buf_reset(&msg);
		r = op_buf_addf(&msg, "%s.%s \"%s\" is invalid: %zu errors (see details.causes)",
				kind, group, name, res->n_errors);
		if (r < 0) {
			json_object_put(causes);
			return r;
		}
	}
	json_object *details = op_jobj();
	op_jsets(details, "name", name);
	op_jsets(details, "group", group);
	op_jsets(details, "kind", kind);
	op_jset(details, "causes", causes);
	json_object *st = op_jobj();
	op_jsets(st, "apiVersion", "v1");
	op_jsets(st, "kind", "Status");
	op_jset(st, "metadata", op_jobj());
	op_jsets(st, "status", "Failure");
	op_jsets(st, "message", op_buf_str(&msg));
	op_jsets(st, "reason", "Invalid");
	op_jset(st, "details", details);
	op_jset(st, "code", op_jint(422));
	op_jset(resp, "allowed", op_jbool(0));
	op_jset(resp, "status", st);
	return 0;
}

/* object is the request's own (modified in place: nothing reads it after). */
static int do_mutate(json_object *resp, enum wh_resource rs, json_object *object,
		     struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf patch = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	size_t n_ops = 0;
	int r = wh_default_resource_text((int)rs, object, &patch, &n_ops, err);
	if (r < 0) {
		op_err_prefix(err, "request.object");
		return r == -EMSGSIZE ? op_err_set(err, r, "patch too large") : r;
	}
	op_jset(resp, "allowed", op_jbool(1));
	if (n_ops == 0)
		return 0;
	_cleanup_(op_buf_donep) struct op_buf b64 = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	if (op_base64_encode(patch.data, patch.len, 0, &b64) < 0)
		return op_err_set(err, -EMSGSIZE, "patch too large (%zu bytes)", patch.len);
	op_jsets(resp, "patchType", "JSONPatch");
	op_jset(resp, "patch", op_jstrn(b64.data, b64.len));
	return 0;
}

static int do_validate(json_object *resp, enum wh_resource rs, json_object *request,
		       json_object *object, json_object *old)
{
	struct wh_result res = { 0 };
	wh_validate_resource(rs, object, old, &res);
	int r = 0;
	if (res.n_errors) {
		const char *name = wh_str(object, "metadata.name");
		if (!name)
			name = wh_str(request, "name");
		r = deny_invalid(resp, rs, name ? name : "", &res);
	} else {
		op_jset(resp, "allowed", op_jbool(1));
	}
	put_warnings(resp, &res);
	wh_result_done(&res);
	return r;
}

/* Decodes and answers the request to rs's webhook; fills the "response" object. */
static int review(enum wh_kind kind, enum wh_resource rs, json_object *root, json_object *resp,
		  struct op_err *err)
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
	op_jsets(resp, "uid", uid);

	const char *op = wh_str(req, "operation");
	if (!op)
		return op_err_set(err, -EINVAL, "request.operation: required");
	bool update = strcmp(op, "UPDATE") == 0;
	if (!update && strcmp(op, "CREATE") != 0) {
		if (strcmp(op, "DELETE") != 0 && strcmp(op, "CONNECT") != 0)
			return op_err_set(err, -EINVAL, "request.operation: unknown value '%s'", op);
		op_jset(resp, "allowed", op_jbool(1)); /* not registered; no-op */
		return 0;
	}
	json_object *rk = wh_at(req, "kind");
	if (!rk || !json_object_is_type(rk, json_type_object))
		return op_err_set(err, -EINVAL, "request.kind: expected object");
	const char *group = wh_str(rk, "group"), *rkind = wh_str(rk, "kind");
	if (!group || strcmp(group, wh_resource_group(rs)) != 0 || !rkind ||
	    strcmp(rkind, wh_resource_kind(rs)) != 0) {
		_cleanup_free_ char *m = op_asprintf(
			"this webhook only admits %s.%s objects, got %s.%s", wh_resource_kind(rs),
			wh_resource_group(rs), rkind ? rkind : "?", group ? group : "?");
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
		return do_mutate(resp, rs, obj, err);
	int r = do_validate(resp, rs, req, obj, old);
	if (r < 0)
		return op_err_set(err, r, "cannot build the admission response");
	return 0;
}

int wh_handle_review(enum wh_kind kind, const char *body, size_t len, struct op_buf *resp,
		     struct op_err *err)
{
	return wh_handle_review_resource(kind, WH_RES_CLUSTER, body, len, resp, err);
}

int wh_handle_review_resource(enum wh_kind kind, enum wh_resource rs, const char *body, size_t len,
			      struct op_buf *resp, struct op_err *err)
{
	if ((unsigned)rs >= WH_RES__COUNT)
		return op_err_set(err, -EINVAL, "no webhook for resource %d", (int)rs);
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
	_cleanup_(op_json_putp) json_object *out = op_jobj();
	json_object *response = op_jobj();
	op_jsets(out, "apiVersion", wh_str(root, "apiVersion"));
	op_jsets(out, "kind", wh_str(root, "kind"));
	op_jset(out, "response", response);
	r = review(kind, rs, root, response, err);
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
