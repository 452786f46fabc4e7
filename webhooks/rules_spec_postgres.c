/* webhooks/rules_spec_postgres.c - spec.postgresql rules: parameters
 * (V30), synchronous replication (V31-V33), LDAP (V34), replication slots
 * (V35, V36) and pg_failover_slots (V40). CNPG cluster_webhook.go and
 * pkg/postgres/configuration.go.
 */
#include "webhooks/rules_spec.h"

#include <regex.h>
#include <string.h>
#include <strings.h>

#include "support/alloc.h"
#include "api/pgparams.h"

#define PARAMS_PATH "spec.postgresql.parameters"
#define SYNC_PATH "spec.postgresql.synchronous"
#define ANN_SKIP_WAL_ARCHIVING "cnpg.io/skipWalArchiving"
#define ANN_FAILOVER_QUORUM "alpha.cnpg.io/failoverQuorum"

/* V30c: [A-Za-z_][A-Za-z0-9_$]* with at most one ".part" of the same shape. */
static bool param_name_valid(const char *k)
{
	const char *dot = strchr(k, '.');
	if (!dot)
		return wh_is_pg_ident(k, strlen(k));
	return wh_is_pg_ident(k, (size_t)(dot - k)) && wh_is_pg_ident(dot + 1, strlen(dot + 1));
}

static int64_t instances_of(const struct wh_ctx *ctx)
{
	int64_t n = 1;
	wh_i64(ctx->spec, "instances", &n);
	return n;
}

static bool skip_wal_archiving(const struct wh_ctx *ctx)
{
	const char *s = wh_annotation(ctx, ANN_SKIP_WAL_ARCHIVING);
	return s && strcmp(s, "enabled") == 0;
}

static void check_fixed_params(const struct wh_ctx *ctx, json_object *params,
			       struct wh_result *res)
{
	const char *archive_mode = api_pg_archive_mode(skip_wal_archiving(ctx), wh_is_replica(ctx));
	json_object_object_foreach(params, k, v)
	{
		_cleanup_free_ char *p = op_asprintf(PARAMS_PATH ".%s", k);
		if (!param_name_valid(k)) {
			wh_result_error(res, p, "Invalid parameter name");
			continue;
		}
		if (!api_pg_param_is_fixed(k))
			continue;
		const char *sanitized = strcasecmp(k, "archive_mode") == 0
						? archive_mode
						: api_pg_param_default(k);
		const char *value = v && json_object_is_type(v, json_type_string)
					    ? json_object_get_string(v)
					    : NULL;
		if (!sanitized || !value || strcmp(value, sanitized) != 0)
			wh_result_error(res, p, "Can't set fixed configuration parameter");
	}
}

/* V30e/f. wal_level and archive_mode are read from the sanitized
 * configuration: the user's wal_level over the default, and the computed
 * archive_mode (a user archive_mode is a fixed parameter, V30d). */
static void check_wal_level(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *wl = wh_param(ctx, "wal_level");
	if (!wl)
		wl = api_pg_param_default("wal_level");
	const char *am = api_pg_archive_mode(skip_wal_archiving(ctx), wh_is_replica(ctx));
	bool requirement = instances_of(ctx) > 1 || strcmp(am, "off") != 0 || wh_is_replica(ctx);
	if (strcmp(wl, "logical") != 0 && strcmp(wl, "replica") != 0 &&
	    strcmp(wl, "minimal") != 0) {
		wh_result_error(res, PARAMS_PATH ".wal_level",
				"unrecognized `wal_level` value - allowed values: `logical`, "
				"`replica`, `minimal`");
		return;
	}
	if (strcmp(wl, "minimal") != 0)
		return;
	if (requirement)
		wh_result_error(res, PARAMS_PATH ".wal_level",
				"`wal_level` should be set at `logical` or `replica` when "
				"`archive_mode` is `on`, '.instances' field is greater than 1, or "
				"this is a replica cluster");
	const char *senders = wh_param(ctx, "max_wal_senders");
	if (!senders || strcmp(senders, "0") != 0)
		wh_result_error(res, PARAMS_PATH ".max_wal_senders",
				"`max_wal_senders` should be set at `0` when `wal_level` is "
				"`minimal`");
}

/* V30j: min_wal_size < max_wal_size, and explicit values < the WAL volume. */
static void check_wal_sizes(const struct wh_ctx *ctx, struct wh_result *res)
{
	static const struct {
		const char *name, *dflt;
	} sizes[] = { { "min_wal_size", "80MB" }, { "max_wal_size", "1GB" } };
	struct api_quantity bytes[2] = { { 0 }, { 0 } };
	bool set[2];
	for (size_t i = 0; i < 2; i++) {
		const char *v = wh_param(ctx, sizes[i].name);
		set[i] = v && *v;
		if (api_pg_size_parse(set[i] ? v : sizes[i].dflt, &bytes[i]) < 0) {
			_cleanup_free_ char *p = op_asprintf(PARAMS_PATH ".%s", sizes[i].name);
			wh_result_error(res, p, "Invalid value for configuration parameter %s",
					sizes[i].name);
			bytes[i].nano = 0;
		}
	}
	if (bytes[0].nano != 0 && bytes[1].nano != 0 && bytes[0].nano >= bytes[1].nano)
		wh_result_error(res, PARAMS_PATH ".min_wal_size",
				"Invalid value. Parameter min_wal_size (default 80MB) should be "
				"smaller than parameter max_wal_size (default 1GB)");
	struct api_quantity wal_volume = { 0 };
	json_object *wal = wh_obj(ctx->spec, "walStorage");
	if (!wal || wh_quantity_at(wal, "size", &wal_volume) != 1)
		return;
	for (size_t i = 0; i < 2; i++) {
		if (!set[i] || bytes[i].nano == 0 || bytes[i].nano < wal_volume.nano)
			continue;
		_cleanup_free_ char *p = op_asprintf(PARAMS_PATH ".%s", sizes[i].name);
		wh_result_error(res, p,
				"Invalid value. Parameter %s (default %s) should be smaller than "
				"WAL volume size",
				sizes[i].name, sizes[i].dflt);
	}
}

/* V30h: parses a boolean parameter; records an error when it is not one.
 * Returns 1 (true), 0 (false) or -1 (absent or invalid). */
static int bool_param(const struct wh_ctx *ctx, const char *name, struct wh_result *res)
{
	const char *v = wh_param(ctx, name);
	bool b;
	if (!v)
		return -1;
	if (api_pg_bool_parse(v, &b))
		return b;
	_cleanup_free_ char *p = op_asprintf(PARAMS_PATH ".%s", name);
	wh_result_error(res, p, "invalid `%s` value. Must be a postgres boolean", name);
	return -1;
}

WH_RULE_FN(wh_v30_configuration)
{
	int64_t min = 0, max = 0;
	wh_i64(ctx->spec, "minSyncReplicas", &min);
	wh_i64(ctx->spec, "maxSyncReplicas", &max);
	if (wh_at(ctx->spec, "postgresql.synchronous") && (min > 0 || max > 0))
		wh_result_error(res, SYNC_PATH, "Can't have both legacy synchronous replica "
						"configuration and new one");
	int major = api_pg_major(ctx);
	if (major < 0)
		return; /* V8 reports the image */
	if (major < 13)
		wh_result_error(res,
				wh_at(ctx->spec, "imageCatalogRef") ? "spec.imageCatalogRef.major"
								     : "spec.imageName",
				"Unsupported PostgreSQL version. Versions 13 or newer are "
				"supported");
	json_object *params = wh_obj(ctx->spec, "postgresql.parameters");
	if (params)
		check_fixed_params(ctx, params, res);
	check_wal_level(ctx, res);
	const char *sb = wh_param(ctx, "shared_buffers");
	struct api_quantity sb_bytes;
	if (sb && *sb && api_pg_size_parse(sb, &sb_bytes) < 0)
		wh_result_error(res, PARAMS_PATH ".shared_buffers",
				"Invalid value for configuration parameter shared_buffers. More "
				"info on accepted values format: https://www.postgresql.org/docs/"
				"current/config-setting.html#CONFIG-SETTING-NAMES-VALUES");
	bool_param(ctx, "hot_standby_feedback", res);
	bool_param(ctx, "sync_replication_slots", res);
	if (bool_param(ctx, "wal_log_hints", res) == 0 && instances_of(ctx) > 1)
		wh_result_error(res, PARAMS_PATH ".wal_log_hints",
				"`wal_log_hints` must be set to `on` when `instances` > 1");
	check_wal_sizes(ctx, res);
	bool enabled = false;
	if (wh_bool(ctx->spec, "postgresql.syncReplicaElectionConstraint.enabled", &enabled) &&
	    enabled &&
	    wh_len(ctx->spec, "postgresql.syncReplicaElectionConstraint.nodeLabelsAntiAffinity") ==
		    0)
		wh_result_error(res,
				"spec.postgresql.syncReplicaElectionConstraint.nodeLabelsAntiAffinity",
				"Can't enable syncReplicaConstraints without passing labels for "
				"comparison inside nodeLabelsAntiAffinity");
}

WH_RULE_FN(wh_v31_synchronous)
{
	json_object *sync = wh_obj(ctx->spec, "postgresql.synchronous");
	int64_t number = 0;
	if (!sync || !wh_i64(sync, "number", &number))
		return;
	__int128 total = (__int128)instances_of(ctx) + wh_len(sync, "standbyNamesPre") +
			 wh_len(sync, "standbyNamesPost"); /* instances may be huge */
	if (number >= total)
		wh_result_error(res, SYNC_PATH,
				"Invalid synchronous configuration: the number of synchronous "
				"replicas must be less than the total number of instances and the "
				"provided standby names.");
}

/* Go strconv.ParseBool. */
static bool go_bool_parse(const char *v, bool *ret)
{
	static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++) {
		if (strcmp(v, t[i]) == 0)
			return *ret = true, true;
		if (strcmp(v, f[i]) == 0)
			return *ret = false, true;
	}
	return false;
}

WH_RULE_FN(wh_v32_failover_quorum_annotation)
{
	const char *v = wh_annotation(ctx, ANN_FAILOVER_QUORUM);
	if (!v)
		return;
	bool b;
	if (!go_bool_parse(v, &b)) {
		wh_result_error(res, "metadata.annotations[" ANN_FAILOVER_QUORUM "]",
				"Invalid failoverQuorum annotation value, expected boolean.");
		return;
	}
	if (b && !wh_at(ctx->spec, "postgresql.synchronous"))
		wh_result_error(res, SYNC_PATH,
				"Invalid failoverQuorum configuration: synchronous replication "
				"configuration is required.");
}

WH_RULE_FN(wh_v33_failover_quorum)
{
	json_object *sync = wh_obj(ctx->spec, "postgresql.synchronous");
	bool fq = false;
	if (!sync || !wh_bool(sync, "failoverQuorum", &fq) || !fq)
		return;
	int64_t number = 0;
	wh_i64(sync, "number", &number);
	int64_t names = (int64_t)wh_len(sync, "standbyNamesPre") +
			(int64_t)wh_len(sync, "standbyNamesPost");
	if (number <= names)
		wh_result_error(res, SYNC_PATH ".number",
				"Invalid failoverQuorum configuration: "
				"spec.postgresql.synchronous.number must be greater than the total "
				"number of instances in spec.postgresql.synchronous.standbyNamesPre "
				"and spec.postgresql.synchronous.standbyNamesPost to allow "
				"automatic failover.");
}

WH_RULE_FN(wh_v34_ldap)
{
	json_object *ldap = wh_obj(ctx->spec, "postgresql.ldap");
	if (!ldap)
		return;
	if (!wh_nstr(ldap, "server"))
		wh_result_error(res, "spec.postgresql.ldap.server", "ldap server cannot be empty if any other ldap parameters are specified");
	if (wh_at(ldap, "bindAsAuth") && wh_at(ldap, "bindSearchAuth"))
		wh_result_error(res, "spec.postgresql.ldap",
				"only bind+search or bind method can be specified");
}

/* Compiles a Go RE2 pattern with POSIX ERE after rewriting the RE2-only
 * group syntax ERE lacks: "(?:" becomes "(" and flag groups such as "(?i)"
 * are dropped (the check is "does it compile", not the match semantics). */
static bool re2_compiles(const char *pat)
{
	size_t n = strlen(pat);
	_cleanup_free_ char *ere = op_malloc(n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (pat[i] == '\\' && i + 1 < n) {
			ere[o++] = pat[i++];
			ere[o++] = pat[i++];
		} else if (strncmp(pat + i, "(?:", 3) == 0) {
			ere[o++] = '(';
			i += 3;
		} else if (strncmp(pat + i, "(?", 2) == 0) {
			size_t j = i + 2;
			while (j < n && strchr("imsU-", pat[j]))
				j++;
			if (j < n && pat[j] == ')' && j > i + 2)
				i = j + 1;
			else
				ere[o++] = pat[i++];
		} else {
			ere[o++] = pat[i++];
		}
	}
	ere[o] = '\0';
	regex_t re;
	if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	regfree(&re);
	return true;
}

WH_RULE_FN(wh_v35_replication_slots)
{
	/* CNPG: checked when HA slots or synchronizeReplicas are enabled; an
	 * absent replicationSlots counts as both enabled (and has no patterns) */
	bool ha = false, sync = false;
	wh_bool(ctx->spec, "replicationSlots.highAvailability.enabled", &ha);
	wh_bool(ctx->spec, "replicationSlots.synchronizeReplicas.enabled", &sync);
	if (!ha && !sync)
		return;
	json_object *pats = wh_arr(ctx->spec, "replicationSlots.synchronizeReplicas.excludePatterns");
	size_t n = pats ? json_object_array_length(pats) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(pats, i);
		const char *pat = e && json_object_is_type(e, json_type_string)
					  ? json_object_get_string(e)
					  : NULL;
		if (pat && re2_compiles(pat))
			continue;
		_cleanup_free_ char *p = op_asprintf(
			"spec.replicationSlots.synchronizeReplicas.excludePatterns[%zu]", i);
		wh_result_error(res, p,
				"Cannot configure synchronizeReplicas. Invalid regexes were found");
	}
}

static bool has_failover_slots_param(const struct wh_ctx *ctx)
{
	json_object *params = wh_obj(ctx->spec, "postgresql.parameters");
	if (!params)
		return false;
	json_object_object_foreach(params, k, v)
	{
		(void)v;
		if (strncmp(k, "pg_failover_slots.", 18) == 0)
			return true;
	}
	return false;
}

static bool param_true(const struct wh_ctx *ctx, const char *name)
{
	bool b = false;
	return api_pg_bool_parse(wh_param(ctx, name), &b) && b;
}

WH_RULE_FN(wh_v36_synchronize_logical_decoding)
{
	bool sld = false;
	if (!wh_bool(ctx->spec, "replicationSlots.highAvailability.synchronizeLogicalDecoding",
		     &sld) ||
	    !sld || has_failover_slots_param(ctx))
		return;
	int major = api_pg_major(ctx);
	if (major < 0)
		return;
	if (major < 17) {
		wh_result_error(res,
				"spec.replicationSlots.highAvailability.synchronizeLogicalDecoding",
				"pg_failover_slots extension must be enabled to use "
				"synchronizeLogicalDecoding with Postgres versions < 17");
		return;
	}
	if (!param_true(ctx, "hot_standby_feedback"))
		wh_result_error(res, PARAMS_PATH ".hot_standby_feedback",
				"`hot_standby_feedback` must be enabled to enable "
				"`spec.replicationSlots.highAvailability.synchronizeLogicalDecoding`");
	if (!param_true(ctx, "sync_replication_slots"))
		wh_result_error(res, PARAMS_PATH ".sync_replication_slots",
				"either `sync_replication_slots` setting or pg_failover_slots "
				"extension must be enabled to enable "
				"`spec.replicationSlots.highAvailability.synchronizeLogicalDecoding`");
}

WH_RULE_FN(wh_v40_pg_failover_slots)
{
	if (!has_failover_slots_param(ctx))
		return;
	if (!param_true(ctx, "hot_standby_feedback"))
		wh_result_error(res, PARAMS_PATH ".hot_standby_feedback",
				"`hot_standby_feedback` must be enabled to use pg_failover_slots "
				"extension");
	if (!wh_obj(ctx->spec, "replicationSlots")) {
		wh_result_error(res, "spec.replicationSlots", "replicationSlots must be enabled");
		return;
	}
	bool ha = false;
	if (!wh_bool(ctx->spec, "replicationSlots.highAvailability.enabled", &ha) || !ha)
		wh_result_error(res, "spec.replicationSlots.highAvailability.enabled",
				"High Availability replication slots must be enabled");
}
