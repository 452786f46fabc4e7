/* kube/verbs.c - get/list/create/update/patch/apply/delete on top of kube_request. */
#include <errno.h>
#include <string.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

#define KUBE_LIST_PAGE_DEFAULT 500
#define KUBE_LIST_MAX_PAGES 100000

static int ret_code(int r)
{
	return r < 0 ? r : 0;
}

int kube_get(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
	     json_object **ret_obj, struct op_err *err)
{
	const struct kube_request req = { .method = "GET", .kind = k, .ns = ns, .name = name,
					  .verb = "get" };
	json_object *o = NULL;
	int r = kube_request(c, &req, &o, err);
	if (r < 0)
		return r;
	if (!o)
		return op_err_set(err, -EPROTO, "get %s %s: empty response", k->resource, name);
	*ret_obj = o;
	return 0;
}

static int add_param(struct op_buf *q, const char *key, const char *val)
{
	int r;
	if (!val || !*val)
		return 0;
	if (q->len > 0 && (r = op_buf_addc(q, '&')) < 0)
		return r;
	if ((r = op_buf_addf(q, "%s=", key)) < 0)
		return r;
	return kube__escape(q, val);
}

static int list_query(struct op_buf *q, const struct kube_list_opts *o, long limit,
		      const char *cont)
{
	int r = 0;
	if (o) {
		r = add_param(q, "labelSelector", o->label_selector);
		if (r >= 0)
			r = add_param(q, "fieldSelector", o->field_selector);
		if (r >= 0 && !cont)
			r = add_param(q, "resourceVersion", o->resource_version);
	}
	if (r >= 0 && limit > 0)
		r = op_buf_addf(q, "%slimit=%ld", q->len ? "&" : "", limit);
	if (r >= 0)
		r = add_param(q, "continue", cont);
	return r;
}

int kube_list(struct kube_client *c, const struct kube_kind *k, const char *ns,
	      const struct kube_list_opts *opts, json_object **ret_list, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (list_query(&q, opts, opts ? opts->limit : 0, opts ? opts->continue_token : NULL) < 0)
		return op_err_set(err, -EINVAL, "list %s: query too long", k->resource);
	const struct kube_request req = { .method = "GET", .kind = k, .ns = ns,
					  .query = op_buf_str(&q), .verb = "list" };
	json_object *o = NULL;
	int r = kube_request(c, &req, &o, err);
	if (r < 0)
		return r;
	json_object *items;
	if (!o || !json_object_object_get_ex(o, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		json_object_put(o);
		return op_err_set(err, -EPROTO, "list %s: response has no items array", k->resource);
	}
	/* Items of a List carry no kind/apiVersion; fill them in from the kind
	 * so objects from lists and from watches look alike (Events need both). */
	_cleanup_(op_buf_donep) struct op_buf av = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (kube_kind_api_version(k, &av) < 0)
		av = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *it = json_object_array_get_idx(items, i);
		if (!json_object_is_type(it, json_type_object))
			continue;
		if (!json_object_object_get_ex(it, "kind", NULL))
			op_jsets(it, "kind", k->kind);
		if (!json_object_object_get_ex(it, "apiVersion", NULL))
			op_jsets(it, "apiVersion", op_buf_str(&av));
	}
	*ret_list = o;
	return 0;
}

int kube_list_all(struct kube_client *c, const struct kube_kind *k, const char *ns,
		  const struct kube_list_opts *opts, json_object **ret_list, struct op_err *err)
{
	struct kube_list_opts o = opts ? *opts : (struct kube_list_opts){ 0 };
	if (o.limit <= 0)
		o.limit = KUBE_LIST_PAGE_DEFAULT;
	o.continue_token = NULL;
	_cleanup_(op_json_putp) json_object *first = NULL;
	_cleanup_free_ char *cont = NULL;
	for (int page = 0; page < KUBE_LIST_MAX_PAGES; page++) {
		json_object *l = NULL;
		o.continue_token = cont;
		int r = kube_list(c, k, ns, &o, &l, err);
		if (r < 0)
			return r;
		free(cont);
		const char *nc = op_json_str_at(l, "metadata.continue");
		cont = nc && *nc ? op_strdup(nc) : NULL;
		if (!first) {
			first = l;
		} else {
			json_object *dst = json_object_object_get(first, "items");
			json_object *src = json_object_object_get(l, "items");
			for (size_t i = 0; i < json_object_array_length(src); i++)
				op_jpush(dst, json_object_get(json_object_array_get_idx(src, i)));
			json_object_put(l);
		}
		if (!cont) {
			json_object *md = json_object_object_get(first, "metadata");
			if (md)
				json_object_object_del(md, "continue");
			*ret_list = TAKE_PTR(first);
			return 0;
		}
	}
	return op_err_set(err, -E2BIG, "list %s: too many pages", k->resource);
}

static int send_obj(struct kube_client *c, const char *method, const char *verb,
		    const struct kube_kind *k, const char *ns, const char *name, const char *sub,
		    const char *query, json_object *obj, const char *ctype, json_object **ret_obj,
		    struct op_err *err)
{
	const char *body = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (!body)
		return op_err_set(err, -ENOMEM, "%s %s: cannot serialize", verb, k->resource);
	const struct kube_request req = { .method = method, .kind = k, .ns = ns, .name = name,
					  .subresource = sub, .query = query, .body = body,
					  .content_type = ctype, .verb = verb };
	json_object *o = NULL;
	int r = kube_request(c, &req, ret_obj ? &o : NULL, err);
	if (r < 0)
		return r;
	if (ret_obj)
		*ret_obj = o;
	return 0;
}

int kube_create(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
		json_object **ret_obj, struct op_err *err)
{
	const char *name = kube_obj_name(obj);
	if (!name)
		name = op_json_str_at(obj, "metadata.generateName");
	const char *body = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (!body)
		return op_err_set(err, -ENOMEM, "create %s: cannot serialize", k->resource);
	/* POST goes to the collection; the name is only for messages. */
	const struct kube_request req = { .method = "POST", .kind = k, .ns = ns, .body = body,
					  .verb = "create", .msg_name = name };
	json_object *o = NULL;
	int r = kube_request(c, &req, ret_obj ? &o : NULL, err);
	if (r < 0)
		return r;
	if (ret_obj)
		*ret_obj = o;
	return 0;
}

static int update_impl(struct kube_client *c, const struct kube_kind *k, const char *ns,
		       json_object *obj, const char *sub, json_object **ret_obj, struct op_err *err)
{
	const char *name = kube_obj_name(obj);
	if (!name || !*name)
		return op_err_set(err, -EINVAL, "update %s: object has no metadata.name",
				  k->resource);
	return send_obj(c, "PUT", sub ? "update status" : "update", k, ns, name, sub, NULL, obj,
			NULL, ret_obj, err);
}

int kube_update(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
		json_object **ret_obj, struct op_err *err)
{
	return update_impl(c, k, ns, obj, NULL, ret_obj, err);
}

int kube_update_status(struct kube_client *c, const struct kube_kind *k, const char *ns,
		       json_object *obj, json_object **ret_obj, struct op_err *err)
{
	return update_impl(c, k, ns, obj, "status", ret_obj, err);
}

static const char *const patch_ctypes[] = {
	[KUBE_PATCH_MERGE] = "application/merge-patch+json",
	[KUBE_PATCH_JSON] = "application/json-patch+json",
	[KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	[KUBE_PATCH_APPLY] = "application/apply-patch+yaml",
};

static int patch_impl(struct kube_client *c, const struct kube_kind *k, const char *ns,
		      const char *name, const char *sub, enum kube_patch_type type,
		      const char *patch, const char *query, json_object **ret_obj,
		      struct op_err *err)
{
	if ((unsigned)type >= OP_ARRAY_SIZE(patch_ctypes))
		return op_err_set(err, -EINVAL, "patch %s: bad patch type", k->resource);
	const struct kube_request req = { .method = "PATCH", .kind = k, .ns = ns, .name = name,
					  .subresource = sub, .query = query, .body = patch,
					  .content_type = patch_ctypes[type],
					  .verb = sub ? "patch status" : "patch" };
	json_object *o = NULL;
	int r = kube_request(c, &req, ret_obj ? &o : NULL, err);
	if (r < 0)
		return r;
	if (ret_obj)
		*ret_obj = o;
	return 0;
}

int kube_patch(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
	       enum kube_patch_type type, const char *patch, json_object **ret_obj,
	       struct op_err *err)
{
	return patch_impl(c, k, ns, name, NULL, type, patch, NULL, ret_obj, err);
}

int kube_patch_status(struct kube_client *c, const struct kube_kind *k, const char *ns,
		      const char *name, enum kube_patch_type type, const char *patch,
		      json_object **ret_obj, struct op_err *err)
{
	return patch_impl(c, k, ns, name, "status", type, patch, NULL, ret_obj, err);
}

int kube_apply(struct kube_client *c, const struct kube_kind *k, const char *ns, json_object *obj,
	       const char *field_manager, bool force, json_object **ret_obj, struct op_err *err)
{
	const char *name = kube_obj_name(obj);
	if (!name || !*name)
		return op_err_set(err, -EINVAL, "apply %s: object has no metadata.name", k->resource);
	_cleanup_(op_buf_donep) struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (add_param(&q, "fieldManager", field_manager ? field_manager : "pgop") < 0 ||
	    (force && op_buf_adds(&q, "&force=true") < 0))
		return op_err_set(err, -EINVAL, "apply %s: query too long", k->resource);
	const char *body = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (!body)
		return op_err_set(err, -ENOMEM, "apply %s: cannot serialize", k->resource);
	return patch_impl(c, k, ns, name, NULL, KUBE_PATCH_APPLY, body, op_buf_str(&q), ret_obj,
			  err);
}

static const char *const propagation_names[] = {
	[KUBE_PROPAGATE_DEFAULT] = NULL,
	[KUBE_PROPAGATE_BACKGROUND] = "Background",
	[KUBE_PROPAGATE_FOREGROUND] = "Foreground",
	[KUBE_PROPAGATE_ORPHAN] = "Orphan",
};

int kube_delete(struct kube_client *c, const struct kube_kind *k, const char *ns, const char *name,
		const struct kube_delete_opts *opts, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *body = NULL;
	if (opts) {
		body = op_jobj();
		op_jsets(body, "kind", "DeleteOptions");
		op_jsets(body, "apiVersion", "v1");
		if ((unsigned)opts->propagation < OP_ARRAY_SIZE(propagation_names) &&
		    propagation_names[opts->propagation])
			op_jsets(body, "propagationPolicy", propagation_names[opts->propagation]);
		if (opts->grace_period_seconds >= 0)
			op_jset(body, "gracePeriodSeconds", op_jint(opts->grace_period_seconds));
		if (opts->precondition_uid || opts->precondition_resource_version) {
			json_object *pre = op_jobj();
			if (opts->precondition_uid)
				op_jsets(pre, "uid", opts->precondition_uid);
			if (opts->precondition_resource_version)
				op_jsets(pre, "resourceVersion", opts->precondition_resource_version);
			op_jset(body, "preconditions", pre);
		}
	}
	const struct kube_request req = {
		.method = "DELETE", .kind = k, .ns = ns, .name = name, .verb = "delete",
		.body = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL
	};
	return ret_code(kube_request(c, &req, NULL, err));
}
