/* webhooks/rules_update.c - U1-U9: rules that compare the new Cluster with the
 * stored one on UPDATE (admission-rules.md §4b, CNPG validateClusterChanges).
 * ctx->old has been through wh_defaults_apply(old, false) like CNPG's
 * old.SetDefaults().
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/cluster.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "webhooks/lookup.h"
#include "webhooks/rules.h"

#define U WH_OP_UPDATE

/* U1: no major downgrade; major upgrades only to 16 or higher. */
static void u1_image_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *path = wh_obj(ctx->spec, "imageCatalogRef") ? "spec.imageCatalogRef.major"
								     : "spec.imageName";
	int new_major;
	int64_t old_major;
	if (!wh_cluster_major(ctx->obj, &new_major))
		return; /* V8 / V30b report it */
	if (!wh_obj(ctx->old, "status.pgDataImageInfo") ||
	    !wh_i64(ctx->old, "status.pgDataImageInfo.majorVersion", &old_major))
		return;
	if (old_major > new_major)
		wh_result_error(res, path, "can't downgrade from major %" PRId64 " to %d", old_major,
				new_major);
	if (old_major < new_major && new_major < 16)
		wh_result_error(res, path, "major upgrades are only supported to version 16 or higher");
}

/* Appends the keys whose values differ between two parameter objects. */
static int param_differences(json_object *a, json_object *b, struct op_buf *out)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++) {
		json_object *x = pass ? b : a, *y = pass ? a : b;
		if (!x)
			continue;
		json_object_object_foreach(x, k, v)
		{
			json_object *w = NULL;
			bool in_y = y && json_object_object_get_ex(y, k, &w);
			if (pass && in_y)
				continue; /* compared in the first pass */
			if (in_y && json_object_equal(v, w))
				continue;
			if (op_buf_addf(out, "%s%s", n ? ", " : "", k) < 0)
				return n;
			n++;
		}
	}
	return n;
}

/* U2: with primaryUpdateMethod=switchover, not image and parameters together. */
static void u2_configuration_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *method = wh_str(ctx->spec, "primaryUpdateMethod");
	if (!method || strcmp(method, "switchover") != 0)
		return;
	const char *ni = wh_str(ctx->spec, "imageName"), *oi = wh_str(ctx->old_spec, "imageName");
	if (strcmp(ni ? ni : "", oi ? oi : "") == 0)
		return;
	_cleanup_(op_buf_donep) struct op_buf diff = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (param_differences(wh_obj(ctx->old_spec, "postgresql.parameters"),
			      wh_obj(ctx->spec, "postgresql.parameters"), &diff) > 0)
		wh_result_error(res, "spec.imageName",
				"Can't change image name and configuration at the same time. "
				"There are differences in PostgreSQL configuration parameters: %s",
				op_buf_str(&diff));
}

/* Size of a storage section (size, else pvcTemplate request); false if unreadable. */
static bool storage_size(json_object *st, int64_t *ret, const char **ret_text)
{
	const char *s = wh_str(st, "size");
	if (!s || !*s)
		s = wh_str(st, "pvcTemplate.resources.requests.storage");
	if (!s || !*s || api_quantity_parse(s, ret, NULL) < 0)
		return false;
	*ret_text = s;
	return true;
}

static void storage_change(json_object *old_st, json_object *new_st, const char *path,
			   struct wh_result *res)
{
	int64_t o, n;
	const char *ot, *nt;
	if (!storage_size(old_st, &o, &ot) || !storage_size(new_st, &n, &nt))
		return;
	if (n < o)
		wh_result_error(res, path, "can't shrink existing storage from %s to %s", ot, nt);
}

/* U3: PGDATA storage can grow, not shrink. */
static void u3_storage_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	storage_change(wh_obj(ctx->old_spec, "storage"), wh_obj(ctx->spec, "storage"),
		       "spec.storage", res);
}

/* U4: walStorage can grow, not shrink, and cannot be removed. */
static void u4_wal_storage_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *o = wh_obj(ctx->old_spec, "walStorage");
	if (!o)
		return;
	json_object *n = wh_obj(ctx->spec, "walStorage");
	if (!n) {
		wh_result_error(res, "spec.walStorage", "walStorage cannot be disabled once configured");
		return;
	}
	storage_change(o, n, "spec.walStorage", res);
}

static json_object *tablespace_named(json_object *arr, const char *name)
{
	size_t n = arr ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *t = json_object_array_get_idx(arr, i);
		const char *tn = wh_str(t, "name");
		if (tn && strcmp(tn, name) == 0)
			return t;
	}
	return NULL;
}

/* U5: tablespaces cannot be removed; their storage cannot shrink. */
static void u5_tablespaces_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *old = wh_arr(ctx->old_spec, "tablespaces");
	if (!old)
		return;
	json_object *cur = wh_arr(ctx->spec, "tablespaces");
	if (!cur) {
		wh_result_error(res, "spec.tablespaces", "Can't remove tablespaces section");
		return;
	}
	for (size_t i = 0; i < json_object_array_length(old); i++) {
		const char *name = wh_str(json_object_array_get_idx(old, i), "name");
		if (!name)
			continue;
		_cleanup_free_ char *path = op_asprintf("spec.tablespaces.%s", name);
		json_object *t = tablespace_named(cur, name);
		if (!t) {
			wh_result_error(res, path, "no tablespace can be removed once created");
			continue;
		}
		storage_change(wh_obj(json_object_array_get_idx(old, i), "storage"),
			       wh_obj(t, "storage"), path, res);
	}
}

/* U6: postgresUID and postgresGID are immutable (absent means the CRD default 26). */
static void u6_unix_ids(const struct wh_ctx *ctx, struct wh_result *res)
{
	static const struct {
		const char *field, *path, *label;
	} ids[] = {
		{ "postgresUID", "spec.postgresUID", "PostgresUID" },
		{ "postgresGID", "spec.postgresGID", "PostgresGID" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(ids); i++) {
		int64_t o = 26, n = 26;
		wh_i64(ctx->old_spec, ids[i].field, &o);
		wh_i64(ctx->spec, ids[i].field, &n);
		if (o != n)
			wh_result_error(res, ids[i].path, "%s can't be changed", ids[i].label);
	}
}

/* enabled flag of a section; absent means enabled (CNPG GetEnabled). */
static bool section_enabled(json_object *sec)
{
	bool en = true;
	wh_bool(sec, "enabled", &en);
	return en;
}

/* U7: HA slots and synchronizeReplicas cannot be removed while enabled;
 * the slot prefix cannot change while HA slots are enabled. */
static void u7_replication_slots_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *ors = wh_obj(ctx->old_spec, "replicationSlots");
	json_object *nrs = wh_obj(ctx->spec, "replicationSlots");
	json_object *oha = wh_obj(ors, "highAvailability");
	if (oha && section_enabled(oha)) {
		json_object *nha = wh_obj(nrs, "highAvailability");
		if (!nrs || !nha) {
			const char *path = nrs ? "spec.replicationSlots.highAvailability"
					       : "spec.replicationSlots";
			wh_result_error(res, path,
					"Cannot remove %s section while highAvailability is enabled",
					path);
		} else {
			const char *op = wh_str(oha, "slotPrefix"), *np = wh_str(nha, "slotPrefix");
			if (strcmp(op ? op : "", np ? np : "") != 0)
				wh_result_error(res, "spec.replicationSlots.highAvailability.slotPrefix",
						"Cannot change replication slot prefix while "
						"highAvailability is enabled");
		}
	}
	json_object *osr = wh_obj(ors, "synchronizeReplicas");
	if (osr && section_enabled(osr) && !wh_obj(nrs, "synchronizeReplicas"))
		wh_result_error(res, "spec.replicationSlots.synchronizeReplicas",
				"Cannot remove synchronizeReplicas section while it is enabled, "
				"disable it first");
}

/* U8: wal_level cannot change to minimal on an existing cluster. */
static void u8_wal_level_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *n = wh_str(wh_obj(ctx->spec, "postgresql.parameters"), "wal_level");
	const char *o = wh_str(wh_obj(ctx->old_spec, "postgresql.parameters"), "wal_level");
	if (n && strcmp(n, "minimal") == 0 && o && *o && strcmp(o, n) != 0)
		wh_result_error(res, "spec.postgresql.parameters.wal_level",
				"Change of `wal_level` to `%s` not allowed on an existing cluster "
				"(from `%s`)",
				n, o);
}

/* U9: no replica/primary flip while a replica-cluster switch is in progress. */
static void u9_replica_cluster_change(const struct wh_ctx *ctx, struct wh_result *res)
{
	if (wh_cluster_is_replica(ctx->obj) == wh_cluster_is_replica(ctx->old))
		return;
	bool busy = false;
	if (wh_bool(ctx->old, "status.switchReplicaClusterStatus.inProgress", &busy) && busy)
		wh_result_typed(res, WH_ERR_FORBIDDEN, "spec.replica.enabled",
				"cannot modify the field while there is an ongoing operation to "
				"enable the replica cluster");
}

/* CRD CEL rule (§4b.8): serviceAccountName is immutable. */
static void cel_service_account_name(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *n = wh_str(ctx->spec, "serviceAccountName");
	const char *o = wh_str(ctx->old_spec, "serviceAccountName");
	if (strcmp(n ? n : "", o ? o : "") != 0)
		wh_result_error(res, "spec.serviceAccountName", "serviceAccountName is immutable");
}

const struct wh_rule wh_rules_update[] = {
	{ "U1", U, u1_image_change },
	{ "U2", U, u2_configuration_change },
	{ "U3", U, u3_storage_change },
	{ "U4", U, u4_wal_storage_change },
	{ "U5", U, u5_tablespaces_change },
	{ "U6", U, u6_unix_ids },
	{ "U7", U, u7_replication_slots_change },
	{ "U8", U, u8_wal_level_change },
	{ "U9", U, u9_replica_cluster_change },
	{ "CEL-SA", U, cel_service_account_name },
};
const size_t wh_rules_update_count = OP_ARRAY_SIZE(wh_rules_update);
