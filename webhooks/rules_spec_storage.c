/* webhooks/rules_spec_storage.c - storage and resources: volume sizes
 * (V14, V15, V17), ephemeral volumes (V16), tablespace names (V19) and
 * snapshot classes (V21), pod resources against shared_buffers (V41).
 * CNPG cluster_webhook.go.
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "support/alloc.h"
#include "webhooks/reserved.h"

/* V14/V15/V17: storage at path (a StorageConfiguration object). */
static void check_storage_size(json_object *storage, const char *path, struct wh_result *res)
{
	_cleanup_free_ char *p = op_asprintf("%s.size", path);
	long double v;
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
	long double req = 0;
	if (wh_quantity_at(storage, "pvcTemplate.resources.requests.storage", &req) <= 0 ||
	    req == 0)
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
		wh_result_error(res, "spec.ephemeralVolumeSource",
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

/* Kubernetes volume name of a tablespace: lower case, '_' -> '-'. */
static char *ts_volume_name(const char *name)
{
	char *s = op_strdup(name);
	for (char *p = s; *p; p++)
		*p = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
	return s;
}

WH_RULE_FN(wh_v19_tablespace_names)
{
	json_object *ts = wh_arr(ctx->spec, "tablespaces");
	size_t n = ts ? json_object_array_length(ts) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = wh_str(json_object_array_get_idx(ts, i), "name");
		name = name ? name : "";
		_cleanup_free_ char *p = op_asprintf("spec.tablespaces[%zu]", i);
		bool dup = false, vdup = false;
		_cleanup_free_ char *vol = ts_volume_name(name);
		for (size_t j = 0; j < i; j++) {
			const char *other = wh_str(json_object_array_get_idx(ts, j), "name");
			if (!other)
				continue;
			_cleanup_free_ char *ovol = ts_volume_name(other);
			dup = dup || strcasecmp(name, other) == 0;
			vdup = vdup || strcmp(vol, ovol) == 0;
		}
		if (dup)
			wh_result_error(res, p, "duplicate tablespace name %s", name);
		else if (vdup)
			wh_result_error(res, p, "duplicate tablespace volume name for %s", name);
		if (wh_reserved_tablespace_name(name))
			wh_result_error(res, p, "tablespace names beginning with 'pg_' are reserved "
						"for Postgres");
		else if (!wh_is_pg_ident(name, strlen(name)) || strlen(name) > 63)
			wh_result_error(res, p, "tablespace name must be a valid Postgres identifier "
						"of at most 63 characters: letters, digits, '_' "
						"and '$', starting with a letter or '_'");
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
		wh_result_error(res, p, "specified tablespace %s doesn't exist in the cluster", k);
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

WH_RULE_FN(wh_v41_resources)
{
	json_object *r = wh_obj(ctx->spec, "resources");
	if (!r)
		return;
	json_object *req = wh_obj(r, "requests"), *lim = wh_obj(r, "limits");
	for (size_t i = 0; i < OP_ARRAY_SIZE(compared_resources); i++) {
		long double rq, lm;
		if (wh_quantity_at(req, compared_resources[i].name, &rq) == 1 &&
		    wh_quantity_at(lim, compared_resources[i].name, &lm) == 1 && rq > lm) {
			_cleanup_free_ char *p =
				op_asprintf("spec.resources.requests.%s", compared_resources[i].name);
			wh_result_error(res, p, "%s request is greater than the limit",
					compared_resources[i].label);
		}
	}
	/* hugepages: requests must equal limits; every size counts as backing */
	bool has_hugepages = false;
	long double max_hugepages = 0;
	json_object *sides[] = { req, lim };
	for (size_t s = 0; s < 2; s++) {
		if (!sides[s])
			continue;
		json_object_object_foreach(sides[s], k, v)
		{
			(void)v;
			if (strncmp(k, "hugepages-", 10) != 0)
				continue;
			has_hugepages = true;
			long double a = 0, b = 0;
			int ra = wh_quantity_at(req, k, &a);
			int rb = wh_quantity_at(lim, k, &b);
			if (rb == 1 && b > max_hugepages)
				max_hugepages = b;
			if (ra == 1 && rb == 1 && a > max_hugepages)
				max_hugepages = a;
			if (s == 0 && ra == 1 && (rb != 1 || a != b)) {
				_cleanup_free_ char *p = op_asprintf("spec.resources.requests.%s", k);
				wh_result_error(res, p, "HugePages requests must equal the limits");
			}
		}
	}
	if (has_hugepages && !wh_at(req, "cpu") && !wh_at(req, "memory") && !wh_at(lim, "cpu") &&
	    !wh_at(lim, "memory"))
		wh_result_error(res, "spec.resources", "HugePages require cpu or memory");
	long double mem = 0;
	const char *sb = wh_param(ctx, "shared_buffers");
	int64_t sb_kb = 0;
	if (sb && wh_quantity_at(req, "memory", &mem) == 1 && mem > 0 &&
	    wh_pg_size_parse(sb, 1024, &sb_kb) == 0) {
		long double sb_bytes = (long double)sb_kb * 1024;
		if (sb_bytes > mem && sb_bytes > max_hugepages)
			wh_result_error(res, "spec.resources.requests.memory",
					"Memory request is lower than PostgreSQL `shared_buffers` "
					"value");
	}
}
