/* webhooks/rules_spec_replica.c - topology and backup rules: external
 * clusters (V24), replica clusters (V27), barman object store credentials
 * (V28), retention policy (V29), promotion token (V44) and WAL archiver
 * plugins (V45). CNPG cluster_webhook.go and barman-cloud webhooks.
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <string.h>

#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"

#define TOKEN_MAX (64u * 1024)

/* A name used as a file name: not ".", "..", no '/' or '\'. */
static bool safe_file_name(const char *s)
{
	return strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/') && !strchr(s, '\\');
}

WH_RULE_FN(wh_v24_external_clusters)
{
	static const char *const ssl_fields[] = { "sslCert", "sslKey", "sslRootCert" };
	static const char *const sel_fields[] = { "name", "key" };
	json_object *ecs = wh_arr(ctx->spec, "externalClusters");
	size_t n = ecs ? json_object_array_length(ecs) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *ec = json_object_array_get_idx(ecs, i);
		_cleanup_free_ char *base = op_asprintf("spec.externalClusters[%zu]", i);
		if (!wh_at(ec, "connectionParameters") && !wh_at(ec, "plugin") &&
		    !wh_at(ec, "barmanObjectStore"))
			wh_result_error(res, base, "one of connectionParameters, plugin and "
						   "barmanObjectStore is required");
		const char *name = wh_str(ec, "name");
		name = name ? name : "";
		_cleanup_free_ char *np = op_asprintf("%s.name", base);
		if (!safe_file_name(name))
			wh_result_error(res, np, "external cluster name must not be '.', '..' or "
						 "contain '/' or '\\'");
		for (size_t j = 0; j < i; j++) {
			const char *other = wh_str(json_object_array_get_idx(ecs, j), "name");
			if (other && strcmp(other, name) == 0) {
				wh_result_typed(res, WH_ERR_DUPLICATE, np, "the list of external clusters contains "
							 "duplicate values");
				break;
			}
		}
		for (size_t f = 0; f < OP_ARRAY_SIZE(ssl_fields); f++) {
			json_object *sel = wh_obj(ec, ssl_fields[f]);
			for (size_t k = 0; sel && k < OP_ARRAY_SIZE(sel_fields); k++) {
				const char *v = wh_str(sel, sel_fields[k]);
				if (!v || safe_file_name(v))
					continue;
				_cleanup_free_ char *p =
					op_asprintf("%s.%s.%s", base, ssl_fields[f], sel_fields[k]);
				wh_result_error(res, p, "value must not be '.', '..' or contain "
							"'/' or '\\'");
			}
		}
	}
}

WH_RULE_FN(wh_v27_replica_mode)
{
	json_object *r = wh_obj(ctx->spec, "replica");
	if (!r)
		return;
	bool enabled;
	bool has_enabled = wh_bool(r, "enabled", &enabled);
	const char *primary = wh_nstr(r, "primary");
	if (has_enabled && primary)
		wh_result_typed(res, WH_ERR_FORBIDDEN, "spec.replica.enabled",
				"replica mode enabled is not compatible with the primary field");
	if (wh_is_replica(ctx)) {
		json_object *b = wh_obj(ctx->spec, "bootstrap");
		const char *rv = wh_str(ctx->obj, "metadata.resourceVersion");
		if (!b)
			wh_result_error(res, "spec.bootstrap",
					"bootstrap configuration is required for replica mode");
		else if ((!rv || !*rv) && !wh_at(b, "pg_basebackup") && !wh_at(b, "recovery"))
			wh_result_error(res, "spec.bootstrap",
					"replica mode bootstrap is compatible only with "
					"pg_basebackup or recovery");
	}
	const char *src = wh_str(r, "source");
	if (!wh_external_cluster(ctx, src))
		wh_result_error(res, "spec.replica.source", "External cluster %s not found",
				src ? src : "");
	const char *self = wh_nstr(r, "self");
	if (self && !wh_external_cluster(ctx, self))
		wh_result_error(res, "spec.replica.self", "External cluster %s not found", self);
	if (primary && !wh_external_cluster(ctx, primary))
		wh_result_error(res, "spec.replica.primary", "External cluster %s not found",
				primary);
}

/* ---- V28 barman object store credentials ---- */

static void check_s3(json_object *s3, const char *path, struct wh_result *res)
{
	bool inherit = false;
	wh_bool(s3, "inheritFromIAMRole", &inherit);
	bool id = wh_at(s3, "accessKeyId") != NULL, secret = wh_at(s3, "secretAccessKey") != NULL;
	int methods = inherit + (id || secret);
	if (id != secret)
		wh_result_error(res, path, "when using AWS credentials both accessKeyId and "
					   "secretAccessKey must be provided");
	if (methods == 0)
		wh_result_error(res, path, "at least one AWS authentication method should be "
					   "supplied");
	if (methods > 1)
		wh_result_error(res, path, "only one AWS authentication method should be supplied");
}

static void check_azure(json_object *az, const char *path, struct wh_result *res)
{
	bool ad = false, dflt = false;
	wh_bool(az, "inheritFromAzureAD", &ad);
	wh_bool(az, "useDefaultAzureCredentials", &dflt);
	bool key = wh_at(az, "storageKey"), sas = wh_at(az, "storageSasToken");
	bool account = wh_at(az, "storageAccount");
	if (wh_at(az, "connectionString")) {
		if (account || key || sas || ad || dflt)
			wh_result_error(res, path, "when connection string is specified, the "
						   "other parameters must be empty");
		return;
	}
	if (key + sas + ad + dflt != 1)
		wh_result_error(res, path, "when connection string is not specified, one and only "
					   "one of storage key, storage SAS token, Azure AD or "
					   "default Azure credentials is allowed");
	if ((key || sas) && !account)
		wh_result_error(res, path, "storage account is required when using a storage key "
					   "or a storage SAS token");
}

static void check_gcs(json_object *gcs, const char *path, struct wh_result *res)
{
	bool gke = false;
	wh_bool(gcs, "gkeEnvironment", &gke);
	bool creds = wh_at(gcs, "applicationCredentials") != NULL;
	if (!gke && !creds)
		wh_result_error(res, path, "if gkeEnvironment is false, secret with credentials "
					   "must be provided");
	if (gke && creds)
		wh_result_error(res, path, "if gkeEnvironment is true, secret with credentials "
					   "must not be provided");
}

void wh_check_store_credentials(json_object *bos, const char *path, struct wh_result *res)
{
	json_object *s3 = wh_obj(bos, "s3Credentials"), *az = wh_obj(bos, "azureCredentials");
	json_object *gcs = wh_obj(bos, "googleCredentials");
	int n = !!s3 + !!az + !!gcs;
	if (n != 1)
		wh_result_error(res, path,
				"%s credentials. One and only one of azureCredentials, "
				"s3Credentials and googleCredentials are required",
				n == 0 ? "missing" : "too many");
	_cleanup_free_ char *s3p = op_asprintf("%s.s3Credentials", path);
	_cleanup_free_ char *azp = op_asprintf("%s.azureCredentials", path);
	_cleanup_free_ char *gcsp = op_asprintf("%s.googleCredentials", path);
	if (s3)
		check_s3(s3, s3p, res);
	if (az)
		check_azure(az, azp, res);
	if (gcs)
		check_gcs(gcs, gcsp, res);
}

WH_RULE_FN(wh_v28_backup_configuration)
{
	json_object *bos = wh_obj(ctx->spec, "backup.barmanObjectStore");
	if (bos)
		wh_check_store_credentials(bos, "spec.backup.barmanObjectStore", res);
}

WH_RULE_FN(wh_v29_retention_policy)
{
	const char *p = wh_str(ctx->spec, "backup.retentionPolicy");
	if (!p || !*p)
		return;
	size_t n = strlen(p), i = 0;
	bool ok = n >= 2 && p[0] >= '1' && p[0] <= '9';
	for (i = 1; ok && i + 1 < n; i++)
		ok = isdigit((unsigned char)p[i]) != 0;
	ok = ok && n <= 12 && strchr("dwm", p[n - 1]);
	if (!ok)
		wh_result_error(res, "spec.backup.retentionPolicy", "not a valid retention policy");
}

/* ---- V44 promotion token ---- */

static const char *const token_fields[] = {
	"latestCheckpointTimelineID", "redoWalFile",		 "databaseSystemIdentifier",
	"latestCheckpointREDOLocation", "timeOfLatestCheckpoint", "operatorVersion",
};

/* NULL when token is a valid pg_controldata token, else the problem. */
static const char *token_problem(const char *token)
{
	size_t len = strnlen(token, TOKEN_MAX + 1);
	_cleanup_free_ char *raw = NULL;
	size_t raw_len = 0;
	/* Go's base64.StdEncoding skips line breaks, so we do too */
	if (len > TOKEN_MAX ||
	    op_base64_decode_str(token, len, OP_BASE64_IGNORE_NEWLINES, &raw, &raw_len, NULL) < 0)
		return "not valid base64";
	_cleanup_(op_json_putp) json_object *doc = NULL;
	if (op_json_parse(raw, raw_len, OP_JSON_MAX_DEPTH, &doc, NULL) < 0 ||
	    !json_object_is_type(doc, json_type_object))
		return "not a JSON object";
	for (size_t i = 0; i < OP_ARRAY_SIZE(token_fields); i++)
		if (!wh_nstr(doc, token_fields[i]))
			return token_fields[i];
	return NULL;
}

WH_RULE_FN(wh_v44_promotion_token)
{
	const char *token = wh_nstr(ctx->spec, "replica.promotionToken");
	if (!token)
		return;
	if (wh_at(ctx->spec, "replica.minApplyDelay")) {
		wh_result_error(res, "spec.replica.minApplyDelay",
				"minApplyDelay cannot be applied with a promotion token");
		return;
	}
	if (wh_is_replica(ctx)) {
		wh_result_error(res, "spec.replica.promotionToken",
				"promotionToken is only allowed for primary clusters");
		return;
	}
	const char *problem = token_problem(token);
	if (problem)
		wh_result_error(res, "spec.replica.promotionToken",
				"Invalid promotionToken format: %s", problem);
}

WH_RULE_FN(wh_v45_plugins)
{
	json_object *plugins = wh_arr(ctx->spec, "plugins");
	size_t n = plugins ? json_object_array_length(plugins) : 0;
	bool barman = wh_at(ctx->spec, "backup.barmanObjectStore") != NULL;
	size_t archivers = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(plugins, i);
		bool enabled = true, archiver = false;
		wh_bool(p, "enabled", &enabled);
		wh_bool(p, "isWALArchiver", &archiver);
		if (!enabled || !archiver)
			continue;
		archivers++;
		_cleanup_free_ char *path = op_asprintf("spec.plugins[%zu].isWALArchiver", i);
		if (barman)
			wh_result_error(res, path,
					"Cannot enable a WAL archiver plugin when barmanObjectStore "
					"is configured");
		if (archivers == 2)
			wh_result_error(res, path,
					"Cannot enable more than one WAL archiver plugin");
	}
}
