/* webhooks/kinds.c - the kinds admission knows (enum wh_resource): their
 * group and kind, defaulting, and the validation driver of Backup,
 * ScheduledBackup and ObjectStore (Cluster's is validate.c): the bypass
 * annotation (Backup and ScheduledBackup, as CloudNativePG), JSON types
 * through api/backup.h, then the kind's rule table (rules_backup.c).
 */
#include <errno.h>
#include <string.h>

#include "api/backup.h"
#include "support/alloc.h"
#include "support/json.h"
#include "webhooks/defaults.h"
#include "webhooks/lookup.h"
#include "webhooks/patch.h"
#include "webhooks/rules.h"
#include "webhooks/webhooks.h"

#define VALIDATION_ANNOTATION "cnpg.io/validation"

typedef size_t (*type_check_fn)(json_object *obj, struct api_errors *errs);

static size_t backup_types(json_object *obj, struct api_errors *errs)
{
	struct api_backup_obj *b = NULL;
	if (api_backup_obj_decode(obj, errs, &b, NULL) == 0)
		api_backup_obj_free(b);
	return errs->n;
}

static size_t scheduled_types(json_object *obj, struct api_errors *errs)
{
	struct api_scheduled_backup *s = NULL;
	if (api_scheduled_backup_decode(obj, errs, &s, NULL) == 0)
		api_scheduled_backup_free(s);
	return errs->n;
}

static size_t object_store_types(json_object *obj, struct api_errors *errs)
{
	struct api_object_store *o = NULL;
	if (api_object_store_decode(obj, errs, &o, NULL) == 0)
		api_object_store_free(o);
	return errs->n;
}

static const struct {
	const char *group, *kind;
	const struct wh_rule *rules; /* NULL for Cluster (validate.c) */
	const size_t *n_rules;
	type_check_fn types;
	bool bypass;                 /* honours cnpg.io/validation: disabled */
} resources[WH_RES__COUNT] = {
	[WH_RES_CLUSTER] = { "postgresql.cnpg.io", "Cluster", NULL, NULL, NULL, true },
	[WH_RES_BACKUP] = { "postgresql.cnpg.io", "Backup", wh_rules_backup,
			    &wh_rules_backup_count, backup_types, true },
	[WH_RES_SCHEDULED_BACKUP] = { "postgresql.cnpg.io", "ScheduledBackup",
				      wh_rules_scheduled_backup,
				      &wh_rules_scheduled_backup_count, scheduled_types, true },
	[WH_RES_OBJECT_STORE] = { "barmancloud.cnpg.io", "ObjectStore", wh_rules_object_store,
				  &wh_rules_object_store_count, object_store_types, false },
};

const char *wh_resource_group(enum wh_resource r)
{
	return (unsigned)r < WH_RES__COUNT ? resources[r].group : "";
}

const char *wh_resource_kind(enum wh_resource r)
{
	return (unsigned)r < WH_RES__COUNT ? resources[r].kind : "";
}

int wh_resource_find(const char *group, const char *kind)
{
	for (int i = 0; group && kind && i < WH_RES__COUNT; i++)
		if (strcmp(group, resources[i].group) == 0 && strcmp(kind, resources[i].kind) == 0)
			return i;
	return -ENOENT;
}

int wh_resource_of(json_object *obj)
{
	const char *api = wh_str(obj, "apiVersion"), *kind = wh_str(obj, "kind");
	const char *slash = api ? strchr(api, '/') : NULL;
	if (!slash || !kind)
		return -ENOENT;
	_cleanup_free_ char *group = op_strndup(api, (size_t)(slash - api));
	return wh_resource_find(group, kind);
}

/* Applies r's defaults to obj in place (an object). */
static void apply(enum wh_resource r, json_object *obj)
{
	if (r == WH_RES_BACKUP || r == WH_RES_SCHEDULED_BACKUP)
		wh_backup_defaults_apply(obj, r == WH_RES_SCHEDULED_BACKUP);
}

int wh_default_resource(enum wh_resource r, json_object *obj, json_object **ret_patch,
			struct op_err *err)
{
	if (r == WH_RES_CLUSTER)
		return wh_default(obj, ret_patch, err);
	if (!obj || !json_object_is_type(obj, json_type_object))
		return op_err_set(err, -EINVAL, "%s: expected object, got %s", wh_resource_kind(r),
				  op_json_type_name(obj));
	_cleanup_(op_json_putp) json_object *orig = NULL;
	if (json_object_deep_copy(obj, &orig, NULL) != 0)
		return op_err_set(err, -ENOMEM, "cannot copy the %s", wh_resource_kind(r));
	apply(r, obj);
	return wh_patch_diff(orig, obj, ret_patch, err);
}

int wh_default_resource_text(int r, json_object *obj, struct op_buf *patch,
			     size_t *ret_n_ops, struct op_err *err)
{
	if (r == WH_RES_CLUSTER)
		return wh_default_text(obj, patch, ret_n_ops, err);
	_cleanup_(op_json_putp) json_object *orig = NULL;
	if (json_object_deep_copy(obj, &orig, NULL) != 0)
		return op_err_set(err, -ENOMEM, "cannot copy the %s", wh_resource_kind(r));
	apply(r, obj);
	return wh_patch_diff_text(orig, obj, patch, ret_n_ops, err);
}

static void run_table(const struct wh_rule *rules, size_t n, const struct wh_ctx *ctx,
		      struct wh_result *res)
{
	for (size_t i = 0; i < n; i++)
		if (rules[i].ops & (unsigned)ctx->op)
			rules[i].fn(ctx, res);
}

/* true when the annotation turns validation off (a warning says so). */
static bool bypassed(json_object *obj, struct wh_result *res)
{
	const char *v = wh_cluster_annotation(obj, VALIDATION_ANNOTATION);
	if (v && strcmp(v, "disabled") == 0) {
		wh_result_warn(res, "validation webhook is disabled — all changes are accepted "
				    "without validation (annotation %s=disabled)",
			       VALIDATION_ANNOTATION);
		return true;
	}
	return false;
}

static int validate_other(enum wh_resource r, json_object *obj, json_object *old,
			  struct wh_result *res)
{
	size_t before = res->n_errors;
	if (resources[r].bypass && bypassed(obj, res))
		return 0;
	struct api_errors errs = { 0 };
	if (resources[r].types(obj, &errs) > 0) {
		for (size_t i = 0; i < errs.n; i++)
			wh_result_error(res, errs.items[i].path, "%s", errs.items[i].msg);
		api_errors_done(&errs);
		return (int)(res->n_errors - before);
	}
	_cleanup_(op_json_putp) json_object *empty = op_jobj(), *old_defaulted = NULL;
	json_object *spec = wh_obj(obj, "spec");
	struct wh_ctx ctx = {
		.obj = obj,
		.spec = spec ? spec : empty,
		.op = old ? WH_OP_UPDATE : WH_OP_CREATE,
	};
	if (old) {
		if (!json_object_is_type(old, json_type_object) ||
		    json_object_deep_copy(old, &old_defaulted, NULL) != 0) {
			wh_result_error(res, "", "old object: expected object, got %s",
					op_json_type_name(old));
			return (int)(res->n_errors - before);
		}
		apply(r, old_defaulted);
		json_object *os = wh_obj(old_defaulted, "spec");
		ctx.old = old_defaulted;
		ctx.old_spec = os ? os : empty;
	}
	run_table(resources[r].rules, *resources[r].n_rules, &ctx, res);
	return (int)(res->n_errors - before);
}

int wh_validate_resource(enum wh_resource r, json_object *obj, json_object *old,
			 struct wh_result *res)
{
	if (r == WH_RES_CLUSTER)
		return wh_validate(obj, old, res);
	if ((unsigned)r >= WH_RES__COUNT)
		return 0;
	json_object *outer = res->subject;
	res->subject = obj; /* messages quote the new object's values */
	int n = validate_other(r, obj, old, res);
	res->subject = outer;
	return n;
}
