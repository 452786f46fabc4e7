/* webhooks/rules_spec_storage.c - storage and resources: volume sizes
 * (V14, V15, V17), ephemeral volumes (V16), tablespace names (V19) and
 * snapshot classes (V21), pod resources against shared_buffers (V41).
 * CNPG cluster_webhook.go.
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "api/names.h"
#include "support/alloc.h"
#include "webhooks/reserved.h"

/* V14/V15/V17: storage at path (a StorageConfiguration object). */
static void check_storage_size(json_object *storage, const char *path, struct wh_result *res)
{
	_cleanup_free_ char *p = op_asprintf("%s.size", path);
	struct api_quantity v;
	int r = wh_quantity_at(storage, "size", &v);
	json_object *size = wh_at(storage, "size");
	bool empty = !size || (json_object_is_type(size, json_type_string) &&
			       !*json_object_get_string(size));
	if (!empty && r < 0) {
		wh_result_error(res, p, "Size value isn't valid");
		return;
	}
	if (!empty)
		return;
	struct api_quantity req = { 0 };
	if (wh_quantity_at(storage, "pvcTemplate.resources.requests.storage", &req) <= 0 ||
	    req.nano == 0)
		wh_result_error(res, p, "Size not configured. Please add it, or a storage request "
					"in the pvcTemplate.");
}

WH_RULE_FN(wh_v14_storage_size)
{
	check_storage_size(wh_obj(ctx->spec, "storage"), "spec.storage", res);
}

WH_RULE_FN(wh_v15_wal_storage_size)
{
	json_object *wal = wh_obj(ctx->spec, "walStorage");
	if (wal)
		check_storage_size(wal, "spec.walStorage", res);
}

WH_RULE_FN(wh_v16_ephemeral_volume_source)
{
	if (wh_at(ctx->spec, "ephemeralVolumeSource") &&
	    wh_at(ctx->spec, "ephemeralVolumesSizeLimit.temporaryData"))
		wh_result_typed(res, WH_ERR_DUPLICATE, "spec.ephemeralVolumeSource",
				"Conflicting settings: provide either ephemeralVolumeSource or "
				"ephemeralVolumesSizeLimit.TemporaryData, not both.");
}

WH_RULE_FN(wh_v17_tablespace_storage_size)
{
	json_object *ts = wh_arr(ctx->spec, "tablespaces");
	size_t n = ts ? json_object_array_length(ts) : 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *p = op_asprintf("spec.tablespaces[%zu].storage", i);
		check_storage_size(wh_obj(json_object_array_get_idx(ts, i), "storage"), p, res);
	}
}

/* Kubernetes volume name of a tablespace (api/names.h). */
static char *ts_volume_name(const char *name)
{
	return api_tablespace_k8s_name(name);
}

WH_RULE_FN(wh_v19_tablespace_names)
{
	json_object *ts = wh_arr(ctx->spec, "tablespaces");
	size_t n = ts ? json_object_array_length(ts) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = wh_str(json_object_array_get_idx(ts, i), "name");
		name = name ? name : "";
		_cleanup_free_ char *p = op_asprintf("spec.tablespaces[%zu]", i);
		_cleanup_free_ char *vol = ts_volume_name(name);
		bool dup = false, vdup = false;
		for (size_t j = 0; j < i; j++) {
			const char *other = wh_str(json_object_array_get_idx(ts, j), "name");
			if (!other)
				continue;
			_cleanup_free_ char *ovol = ts_volume_name(other);
			dup = dup || strcasecmp(name, other) == 0;
			vdup = vdup || strcmp(vol, ovol) == 0;
		}
		if (dup) { /* PostgreSQL identifiers are case-insensitive */
			wh_result_typed(res, WH_ERR_DUPLICATE, p, "duplicate tablespace name");
			continue;
		}
		if (wh_reserved_tablespace_name(name))
			wh_result_error(res, p, "tablespace names beginning 'pg_' are reserved for "
						"Postgres");
		else if (!wh_is_pg_ident(name, strlen(name)))
			wh_result_error(res, p, "tablespace names must be valid Postgres "
						"identifiers: alphanumeric characters, '_', '$', "
						"and must start with a letter or an underscore");
		else if (strlen(name) > 63)
			wh_result_error(res, p,
					"the maximum length of an identifier is 63 characters");
		else if (vdup)
			wh_result_error(res, p,
					"tablespace name results in duplicate volume name \"%s\" "
					"after sanitization",
					vol);
	}
}

static bool tablespace_exists(const struct wh_ctx *ctx, const char *name)
{
	json_object *ts = wh_arr(ctx->spec, "tablespaces");
	size_t n = ts ? json_object_array_length(ts) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *tn = wh_str(json_object_array_get_idx(ts, i), "name");
		if (tn && strcmp(tn, name) == 0)
			return true;
	}
	return false;
}

WH_RULE_FN(wh_v21_tablespace_backup_snapshot)
{
	json_object *cls = wh_obj(ctx->spec, "backup.volumeSnapshot.tablespaceClassName");
	if (!cls)
		return;
	json_object_object_foreach(cls, k, v)
	{
		(void)v;
		if (tablespace_exists(ctx, k))
			continue;
		_cleanup_free_ char *p =
			op_asprintf("spec.backup.volumeSnapshot.tablespaceClassName.%s", k);
		wh_result_error(res, p,
				"specified the VolumeSnapshot backup configuration for the "
				"tablespace: %s, but it can't be found in the '.spec.tablespaces' "
				"stanza",
				k);
	}
}

/* ---- V41 resources ---- */

static const struct {
	const char *name;
	const char *label;
} compared_resources[] = {
	{ "cpu", "CPU" },
	{ "memory", "Memory" },
	{ "ephemeral-storage", "Ephemeral storage" },
};

/* A quantity of requests/limits, 0 when absent or invalid (Quantity.IsZero). */
static __int128 quantity_of(json_object *list, const char *name)
{
	struct api_quantity v;
	json_object *q = NULL;
	if (!list || !json_object_object_get_ex(list, name, &q) || !q ||
	    wh_quantity_value(q, &v) < 0)
		return 0;
	return v.nano;
}

/* Hugepages: requests must equal limits; returns the largest hugepages
 * quantity (limits, then requests without a limit) and whether any is set. */
static __int128 check_hugepages(json_object *req, json_object *lim, bool *ret_any,
				   struct wh_result *res)
{
	__int128 largest = 0;
	bool any = false;
	if (lim) {
		json_object_object_foreach(lim, k, v)
		{
			(void)v;
			if (strncmp(k, "hugepages-", 10) != 0)
				continue;
			any = true;
			__int128 q = quantity_of(lim, k);
			largest = q > largest ? q : largest;
		}
	}
	if (req) {
		json_object_object_foreach(req, k, v)
		{
			(void)v;
			if (strncmp(k, "hugepages-", 10) != 0)
				continue;
			any = true;
			__int128 q = quantity_of(req, k);
			json_object *l = NULL;
			if (lim && json_object_object_get_ex(lim, k, &l)) {
				if (q != quantity_of(lim, k)) {
					_cleanup_free_ char *p =
						op_asprintf("spec.resources.requests.%s", k);
					wh_result_error(res, p,
							"HugePages requests must equal the limits");
				}
				continue;
			}
			largest = q > largest ? q : largest;
		}
	}
	*ret_any = any;
	return largest;
}

WH_RULE_FN(wh_v41_resources)
{
	json_object *r = wh_obj(ctx->spec, "resources");
	json_object *req = wh_obj(r, "requests"), *lim = wh_obj(r, "limits");
	for (size_t i = 0; i < OP_ARRAY_SIZE(compared_resources); i++) {
		__int128 rq = quantity_of(req, compared_resources[i].name);
		__int128 lm = quantity_of(lim, compared_resources[i].name);
		if (rq != 0 && lm != 0 && rq > lm) {
			_cleanup_free_ char *p =
				op_asprintf("spec.resources.requests.%s", compared_resources[i].name);
			wh_result_error(res, p, "%s request is greater than the limit",
					compared_resources[i].label);
		}
	}
	bool any_hugepages = false;
	__int128 largest_hugepages = check_hugepages(req, lim, &any_hugepages, res);
	__int128 mem = quantity_of(req, "memory");
	if (any_hugepages && quantity_of(req, "cpu") == 0 && quantity_of(lim, "cpu") == 0 &&
	    mem == 0 && quantity_of(lim, "memory") == 0)
		wh_result_typed(res, WH_ERR_FORBIDDEN, "spec.resources",
				"HugePages require cpu or memory");
	const char *sb = wh_param(ctx, "shared_buffers");
	struct api_quantity sb_bytes = { 0 };
	if (sb && *sb && api_pg_size_parse(sb, &sb_bytes) == 0 && mem != 0 && sb_bytes.nano > mem &&
	    !(any_hugepages && sb_bytes.nano <= largest_hugepages))
		wh_result_error(res, "spec.resources.requests.memory",
				"Memory request is lower than PostgreSQL `shared_buffers` value");
}
