/* webhooks/rules_backup.c - the rules of Backup, ScheduledBackup
 * (postgresql.cnpg.io/v1) and ObjectStore (barmancloud.cnpg.io/v1), in the
 * order of admission-rules.md §11, and their defaults:
 *   BD1 spec.method defaults to barmanObjectStore (Backup, ScheduledBackup)
 *   SD1 spec.backupOwnerReference defaults to none (ScheduledBackup)
 *   B1  spec.cluster.name required, a DNS-1123 subdomain
 *   B2  spec.method one of barmanObjectStore, volumeSnapshot, plugin
 *   B3  spec.target empty, primary or prefer-standby
 *   B4  method plugin requires spec.pluginConfiguration.name
 *   B5  online / onlineConfiguration only with method volumeSnapshot
 *   B6  (Backup, UPDATE) the spec is immutable
 *   BW1 method volumeSnapshot: pgop takes no CSI snapshots (the Backup fails)
 *   S1  spec.schedule required and a valid cron expression (api/cron.h)
 *   S2  spec.backupOwnerReference one of none, self, cluster
 *   SW1 a five-field schedule (CloudNativePG's warning: six are expected)
 *   SW2 a schedule that never fires (e.g. February 30th)
 *   O1  spec.configuration and its destinationPath required
 *   O2  spec.configuration credentials (as V28)
 *   O3  spec.configuration location, parallelism, codecs, serverName (V51-V54)
 *   O4  spec.retentionPolicy matches ^[1-9][0-9]*[dwm]$
 *   OW1 spec.instanceSidecarConfiguration is accepted and ignored
 * B1-B5 apply to Backup and ScheduledBackup alike (CloudNativePG
 * backup_webhook.go and scheduledbackup_webhook.go).
 */
#include <errno.h>
#include <string.h>

#include "api/cron.h"
#include "support/alloc.h"
#include "support/json.h"
#include "webhooks/rules_spec.h"

#define CU (WH_OP_CREATE | WH_OP_UPDATE)

static const char *const methods[] = { "barmanObjectStore", "volumeSnapshot", "plugin" };
static const char *const targets[] = { "primary", "prefer-standby" };
static const char *const owner_refs[] = { "none", "self", "cluster" };

static bool one_of(const char *v, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v, set[i]) == 0)
			return true;
	return false;
}

/* spec.method after BD1 (NULL when it is not a string). */
static const char *method_of(const struct wh_ctx *ctx)
{
	return wh_str(ctx->spec, "method");
}

/* ---- defaults ---- */

static void default_str(json_object *spec, const char *key, const char *value)
{
	json_object *v = NULL;
	bool present = json_object_object_get_ex(spec, key, &v);
	if (!present || v == NULL ||
	    (json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 0))
		op_jsets(spec, key, value);
}

void wh_backup_defaults_apply(json_object *obj, bool scheduled)
{
	json_object *spec = wh_obj(obj, "spec");
	if (!spec)
		return;
	default_str(spec, "method", "barmanObjectStore");
	if (scheduled)
		default_str(spec, "backupOwnerReference", "none");
}

/* ---- B rules (Backup and ScheduledBackup) ---- */

static WH_RULE_FN(b1_cluster_name)
{
	const char *name = wh_nstr(ctx->spec, "cluster.name");
	if (!name) {
		wh_result_typed(res, WH_ERR_REQUIRED, "spec.cluster.name",
				"the name of the Cluster to back up");
		return;
	}
	if (!wh_is_dns1123_subdomain(name))
		wh_result_error(res, "spec.cluster.name",
				"must be the name of a Cluster in the same namespace (a "
				"DNS-1123 subdomain: lower case alphanumerics, '-' and '.')");
}

static WH_RULE_FN(b2_method)
{
	const char *m = method_of(ctx);
	if (m && !one_of(m, methods, OP_ARRAY_SIZE(methods)))
		wh_result_unsupported(res, "spec.method", methods, OP_ARRAY_SIZE(methods));
}

static WH_RULE_FN(b3_target)
{
	const char *t = wh_str(ctx->spec, "target");
	if (t && *t && !one_of(t, targets, OP_ARRAY_SIZE(targets)))
		wh_result_unsupported(res, "spec.target", targets, OP_ARRAY_SIZE(targets));
}

static WH_RULE_FN(b4_plugin)
{
	const char *m = method_of(ctx);
	if (m && strcmp(m, "plugin") == 0 && !wh_nstr(ctx->spec, "pluginConfiguration.name"))
		wh_result_typed(res, WH_ERR_REQUIRED, "spec.pluginConfiguration.name",
				"cannot be empty when the backup method is plugin");
}

static WH_RULE_FN(b5_online)
{
	const char *m = method_of(ctx);
	if (!m || strcmp(m, "barmanObjectStore") != 0)
		return;
	if (wh_at(ctx->spec, "online"))
		wh_result_error(res, "spec.online", "Online parameter can be specified only if "
						    "the backup method is volumeSnapshot");
	if (wh_at(ctx->spec, "onlineConfiguration"))
		wh_result_error(res, "spec.onlineConfiguration",
				"OnlineConfiguration parameter can be specified only if the backup "
				"method is volumeSnapshot");
}

static WH_RULE_FN(b6_immutable)
{
	if (!ctx->old_spec || json_object_equal(ctx->spec, ctx->old_spec))
		return;
	wh_result_typed(res, WH_ERR_FORBIDDEN, "spec", "BackupSpec is immutable once set");
}

static WH_RULE_FN(bw1_volume_snapshot)
{
	const char *m = method_of(ctx);
	if (m && strcmp(m, "volumeSnapshot") == 0)
		wh_result_warn(res, "spec.method: volumeSnapshot is accepted, but pgop takes no CSI "
				    "volume snapshots: the Backup will fail with a status error saying "
				    "so; use barmanObjectStore or plugin");
}

/* ---- S rules (ScheduledBackup) ---- */

static WH_RULE_FN(s1_schedule)
{
	const char *s = wh_nstr(ctx->spec, "schedule");
	if (!s) {
		wh_result_typed(res, WH_ERR_REQUIRED, "spec.schedule",
				"a cron expression with seconds, e.g. \"0 0 0 * * *\"");
		return;
	}
	struct api_cron c;
	struct op_err err = OP_ERR_INIT;
	if (api_cron_parse(s, &c, &err) < 0)
		wh_result_error(res, "spec.schedule", "%s", err.msg);
}

static WH_RULE_FN(s2_owner_reference)
{
	const char *o = wh_str(ctx->spec, "backupOwnerReference");
	if (o && !one_of(o, owner_refs, OP_ARRAY_SIZE(owner_refs)))
		wh_result_unsupported(res, "spec.backupOwnerReference", owner_refs,
				      OP_ARRAY_SIZE(owner_refs));
}

/* spec.schedule parsed, or NULL (S1 reported why). */
static bool parsed_schedule(const struct wh_ctx *ctx, struct api_cron *ret)
{
	const char *s = wh_nstr(ctx->spec, "schedule");
	return s && api_cron_parse(s, ret, NULL) == 0;
}

static WH_RULE_FN(sw1_five_fields)
{
	struct api_cron c;
	if (parsed_schedule(ctx, &c) && c.n_fields == 5) /* CloudNativePG's words */
		wh_result_warn(res, "Schedule parameter may not have the right number of arguments "
				    "(usually six arguments are needed)");
}

static WH_RULE_FN(sw2_never_fires)
{
	struct api_cron c;
	int64_t next = 0;
	/* fixed instants, so the verdict does not depend on the clock: 1970 and 1974
	 * (each looks five years ahead, so every leap day is within reach) */
	if (parsed_schedule(ctx, &c) && api_cron_next(&c, 0, &next) == -ENOENT &&
	    api_cron_next(&c, 4 * 365 * 86400, &next) == -ENOENT)
		wh_result_warn(res, "spec.schedule: \"%s\" never fires (no date matches it): no "
				    "Backup will be created",
			       wh_nstr(ctx->spec, "schedule"));
}

/* ---- O rules (ObjectStore) ---- */

#define CONF "spec.configuration"

static WH_RULE_FN(o1_configuration)
{
	json_object *conf = wh_obj(ctx->spec, "configuration");
	if (!conf) {
		wh_result_typed(res, WH_ERR_REQUIRED, CONF, "the object store");
		return;
	}
	if (!wh_nstr(conf, "destinationPath"))
		wh_result_typed(res, WH_ERR_REQUIRED, CONF ".destinationPath",
				"where backups and WAL files go, e.g. s3://bucket/path");
}

static WH_RULE_FN(o2_credentials)
{
	json_object *conf = wh_obj(ctx->spec, "configuration");
	if (conf)
		wh_check_store_credentials(conf, CONF, res);
}

static WH_RULE_FN(o3_store)
{
	json_object *conf = wh_obj(ctx->spec, "configuration");
	if (conf)
		wh_check_barman_store(conf, CONF, res);
}

/* ^[1-9][0-9]*[dwm]$ */
static bool retention_ok(const char *p)
{
	size_t n = strlen(p);
	if (n < 2 || p[0] < '1' || p[0] > '9' || !strchr("dwm", p[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

static WH_RULE_FN(o4_retention)
{
	const char *p = wh_str(ctx->spec, "retentionPolicy");
	if (p && *p && !retention_ok(p))
		wh_result_error(res, "spec.retentionPolicy",
				"not a valid retention policy: must match ^[1-9][0-9]*[dwm]$ "
				"(e.g. 30d, 4w, 6m)");
}

static WH_RULE_FN(ow1_sidecar)
{
	if (wh_at(ctx->spec, "instanceSidecarConfiguration"))
		wh_result_warn(res, "spec.instanceSidecarConfiguration is accepted and ignored: "
				    "pgop runs no barman-cloud sidecar");
}

/* ---- tables ---- */

const struct wh_rule wh_rules_backup[] = {
	{ "B1", CU, b1_cluster_name }, { "B2", CU, b2_method },
	{ "B3", CU, b3_target },       { "B4", CU, b4_plugin },
	{ "B5", CU, b5_online },       { "B6", WH_OP_UPDATE, b6_immutable },
	{ "BW1", CU, bw1_volume_snapshot },
};
const size_t wh_rules_backup_count = OP_ARRAY_SIZE(wh_rules_backup);

const struct wh_rule wh_rules_scheduled_backup[] = {
	{ "S1", CU, s1_schedule },      { "B1", CU, b1_cluster_name },
	{ "B2", CU, b2_method },        { "B3", CU, b3_target },
	{ "B4", CU, b4_plugin },        { "B5", CU, b5_online },
	{ "S2", CU, s2_owner_reference }, { "SW1", CU, sw1_five_fields },
	{ "SW2", CU, sw2_never_fires },   { "BW1", CU, bw1_volume_snapshot },
};
const size_t wh_rules_scheduled_backup_count = OP_ARRAY_SIZE(wh_rules_scheduled_backup);

const struct wh_rule wh_rules_object_store[] = {
	{ "O1", CU, o1_configuration }, { "O2", CU, o2_credentials }, { "O3", CU, o3_store },
	{ "O4", CU, o4_retention },     { "OW1", CU, ow1_sidecar },
};
const size_t wh_rules_object_store_count = OP_ARRAY_SIZE(wh_rules_object_store);
