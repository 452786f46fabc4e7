/* webhooks/rules_spec_backup.c - pgop's own backup rules (V51-V56): what
 * CloudNativePG leaves to barman-cloud at run time, pgop refuses at
 * admission, because its archiver (backup/, through objstore/) builds object
 * keys and requests from these values.
 *
 *   V51 an S3 store's destinationPath and endpointURL parse (objstore's own
 *       parsers: one grammar for admission and the archiver)
 *   V52 wal.maxParallel and data.jobs in 1..WH_STORE_PARALLEL_MAX
 *   V53 wal/data compression and encryption are known values; tags and
 *       historyTags are S3 object tags (objstore's os_tag_check, the
 *       archiver's own check; at most OS_TAGS_MAX)
 *   V54 serverName is one safe object-key segment
 *   V55 bootstrap.recovery.backup.name is a Backup's name (DNS-1123)
 *   V56 spec.plugins[].name unique
 *   V57 spec.backup.target is primary or prefer-standby
 *   V58 the additionalCommandArgs options pgop acts on (api/barman_args.h)
 *       have values it can use
 *
 * V51-V54 apply to every barmanObjectStore: spec.backup's and each
 * spec.externalClusters[i]'s. Recovery targets are V10 (rules_spec_bootstrap.c).
 */
#include "webhooks/rules_spec.h"

#include <stdio.h>
#include <string.h>

#include "api/barman_args.h"
#include "objstore/objstore.h"
#include "support/alloc.h"

/* Upper bound of wal.maxParallel and data.jobs (also the schema's maximum):
 * each is a connection and a buffer of the archiver. */
#define WH_STORE_PARALLEL_MAX 64
/* Longest serverName: a key segment under destinationPath. */
#define WH_SERVER_NAME_MAX 128

typedef void (*store_check_fn)(json_object *store, const char *path, struct wh_result *res);

/* Calls fn on spec.backup.barmanObjectStore and on each
 * spec.externalClusters[i].barmanObjectStore, with its path. */
static void for_each_store(const struct wh_ctx *ctx, store_check_fn fn, struct wh_result *res)
{
	json_object *b = wh_obj(ctx->spec, "backup.barmanObjectStore");
	if (b)
		fn(b, "spec.backup.barmanObjectStore", res);
	json_object *ecs = wh_arr(ctx->spec, "externalClusters");
	for (size_t i = 0; ecs && i < json_object_array_length(ecs); i++) {
		json_object *s = wh_obj(json_object_array_get_idx(ecs, i), "barmanObjectStore");
		if (!s)
			continue;
		_cleanup_free_ char *p = op_asprintf("spec.externalClusters[%zu].barmanObjectStore", i);
		fn(s, p, res);
	}
}

/* The parser's reason without the prefix it adds ("destination path \"x\": "). */
static const char *reason(const struct op_err *err, const char *what, const char *value)
{
	char lead[OP_ERR_MSG_MAX];
	int n = snprintf(lead, sizeof(lead), "%s \"%.200s\": ", what, value ? value : "");
	if (n > 0 && (size_t)n < sizeof(lead) && strncmp(err->msg, lead, (size_t)n) == 0)
		return err->msg + n;
	return err->msg;
}

/* ---- V51 destination and endpoint of an S3 store ---- */

/* The shape CloudNativePG itself accepts: scheme, then a non-empty first
 * segment (bucket or host), no blank or control character. A value of that
 * shape that objstore's parser still refuses (an upper-case bucket, a
 * "<placeholder>" host, as in CloudNativePG's own samples) is admitted with a
 * warning, so manifests CloudNativePG admits stay admitted; anything else is
 * refused. */
static bool shaped(const char *v, const char *const *schemes, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		size_t k = strlen(schemes[i]);
		if (strncmp(v, schemes[i], k) != 0)
			continue;
		if (v[k] == '\0' || v[k] == '/')
			return false;
		for (const char *p = v; *p; p++)
			if ((unsigned char)*p <= ' ' || *p == 0x7f)
				return false;
		return true;
	}
	return false;
}

static void location_check(const char *v, const char *field, const char *shape,
			   const char *const *schemes, size_t n, bool parsed,
			   const struct op_err *err, const char *what, struct wh_result *res)
{
	if (parsed)
		return;
	if (!shaped(v, schemes, n)) {
		wh_result_error(res, field, "must be %s: %s", shape, reason(err, what, v));
		return;
	}
	wh_result_warn(res, "%s: %s: archiving to it will fail", field, reason(err, what, v));
}

static void check_s3_location(json_object *store, const char *path, struct wh_result *res)
{
	static const char *const s3[] = { "s3://" }, *const http[] = { "https://", "http://" };
	if (!wh_obj(store, "s3Credentials"))
		return; /* Azure and Google stores have https destinations */
	const char *dest = wh_str(store, "destinationPath");
	struct os_dest d;
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *dp = op_asprintf("%s.destinationPath", path);
	bool ok = os_dest_parse(dest, &d, &err) == 0;
	location_check(dest, dp, "s3://bucket[/path]", s3, 1, ok, &err, "destination path", res);
	const char *url = wh_str(store, "endpointURL");
	if (!url || !*url)
		return;
	struct os_endpoint ep;
	err = OP_ERR_INIT;
	_cleanup_free_ char *ep_path = op_asprintf("%s.endpointURL", path);
	ok = os_endpoint_parse(url, &ep, &err) == 0;
	location_check(url, ep_path, "http(s)://host[:port]", http, 2, ok, &err, "endpoint URL",
		       res);
}

WH_RULE_FN(wh_v51_store_location)
{
	for_each_store(ctx, check_s3_location, res);
}

/* ---- V52 parallelism ---- */

static void check_parallel(json_object *store, const char *path, struct wh_result *res)
{
	static const char *const fields[] = { "wal.maxParallel", "data.jobs" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++) {
		int64_t v;
		if (!wh_i64(store, fields[i], &v) || (v >= 1 && v <= WH_STORE_PARALLEL_MAX))
			continue;
		_cleanup_free_ char *p = op_asprintf("%s.%s", path, fields[i]);
		wh_result_error(res, p, "must be between 1 and %d", WH_STORE_PARALLEL_MAX);
	}
}

WH_RULE_FN(wh_v52_store_parallelism)
{
	for_each_store(ctx, check_parallel, res);
}

/* ---- V53 compression and encryption ---- */

static const char *const compressions[] = { "bzip2", "gzip", "lz4", "snappy", "xz", "zstd" };
static const char *const encryptions[] = { "AES256", "aws:kms" };

static bool one_of(const char *v, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v, set[i]) == 0)
			return true;
	return false;
}

static void check_codecs(json_object *store, const char *path, struct wh_result *res)
{
	static const char *const sections[] = { "wal", "data" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(sections); i++) {
		json_object *sec = wh_obj(store, sections[i]);
		const char *c = wh_nstr(sec, "compression"), *e = wh_nstr(sec, "encryption");
		if (c && !one_of(c, compressions, OP_ARRAY_SIZE(compressions))) {
			_cleanup_free_ char *p = op_asprintf("%s.%s.compression", path, sections[i]);
			wh_result_unsupported(res, p, compressions, OP_ARRAY_SIZE(compressions));
		}
		if (e && !one_of(e, encryptions, OP_ARRAY_SIZE(encryptions))) {
			_cleanup_free_ char *p = op_asprintf("%s.%s.encryption", path, sections[i]);
			wh_result_unsupported(res, p, encryptions, OP_ARRAY_SIZE(encryptions));
		}
	}
}

/* tags / historyTags (field) of the store at path: each tag one S3 accepts,
 * named by its key. */
static void check_tag_set(json_object *store, const char *path, const char *field,
			  struct wh_result *res)
{
	json_object *t = wh_obj(store, field);
	if (!t)
		return;
	if ((size_t)json_object_object_length(t) > OS_TAGS_MAX) {
		_cleanup_free_ char *p = op_asprintf("%s.%s", path, field);
		wh_result_error(res, p, "at most %u tags (S3's limit on an object)", OS_TAGS_MAX);
	}
	json_object_object_foreach(t, k, v)
	{
		if (!json_object_is_type(v, json_type_string))
			continue; /* the schema's type check names it */
		struct op_err err = OP_ERR_INIT;
		if (os_tag_check(k, json_object_get_string(v), &err) == 0)
			continue;
		int n = (int)strnlen(k, 130); /* cut at a UTF-8 boundary */
		while (n > 0 && k[n] && ((unsigned char)k[n] & 0xc0) == 0x80)
			n--;
		_cleanup_free_ char *p = op_asprintf("%s.%s.%.*s", path, field, n, k);
		wh_result_error(res, p, "not an S3 object tag: %s", err.msg);
	}
}

static void check_codecs_and_tags(json_object *store, const char *path, struct wh_result *res)
{
	check_codecs(store, path, res);
	check_tag_set(store, path, "tags", res);
	check_tag_set(store, path, "historyTags", res);
}

WH_RULE_FN(wh_v53_store_codecs)
{
	for_each_store(ctx, check_codecs_and_tags, res);
}

/* ---- V54 serverName ---- */

static void check_server_name(json_object *store, const char *path, struct wh_result *res)
{
	const char *s = wh_nstr(store, "serverName");
	if (!s)
		return; /* empty: the Cluster's name */
	bool ok = strlen(s) <= WH_SERVER_NAME_MAX && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
	for (const unsigned char *p = (const unsigned char *)s; ok && *p; p++)
		ok = *p >= 0x20 && *p != 0x7f && *p != '/' && *p != '\\';
	if (ok)
		return;
	_cleanup_free_ char *p = op_asprintf("%s.serverName", path);
	wh_result_error(res, p, "must be one path segment: at most %d bytes, not '.' or '..', "
				"without '/', '\\' or control characters",
			WH_SERVER_NAME_MAX);
}

WH_RULE_FN(wh_v54_store_server_name)
{
	for_each_store(ctx, check_server_name, res);
}

void wh_check_barman_store(json_object *store, const char *path, struct wh_result *res)
{
	check_s3_location(store, path, res);
	check_parallel(store, path, res);
	check_codecs_and_tags(store, path, res);
	check_server_name(store, path, res);
}

/* ---- V55 recovery.backup.name ---- */

WH_RULE_FN(wh_v55_recovery_backup_name)
{
	json_object *b = wh_obj(ctx->spec, "bootstrap.recovery.backup");
	if (!b)
		return;
	const char *name = wh_str(b, "name");
	if (name && strchr(name, '/'))
		wh_result_error(res, "spec.bootstrap.recovery.backup.name",
				"a Backup in another namespace cannot be used: name a Backup "
				"in the Cluster's namespace, without \"namespace/\"");
	else if (!wh_is_dns1123_subdomain(name))
		wh_result_error(res, "spec.bootstrap.recovery.backup.name",
				"must be the name of a Backup in the Cluster's namespace (a "
				"DNS-1123 subdomain: lower case alphanumerics, '-' and '.')");
}

/* ---- V56 plugin names ---- */

WH_RULE_FN(wh_v56_plugin_names)
{
	json_object *plugins = wh_arr(ctx->spec, "plugins");
	size_t n = plugins ? json_object_array_length(plugins) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = wh_str(json_object_array_get_idx(plugins, i), "name");
		for (size_t j = 0; name && j < i; j++) {
			const char *other = wh_str(json_object_array_get_idx(plugins, j), "name");
			if (!other || strcmp(other, name) != 0)
				continue;
			_cleanup_free_ char *p = op_asprintf("spec.plugins[%zu].name", i);
			wh_result_typed(res, WH_ERR_DUPLICATE, p, "plugin names must be unique");
			break;
		}
	}
}

/* ---- V57 spec.backup.target ---- */

WH_RULE_FN(wh_v57_backup_target)
{
	static const char *const targets[] = { "primary", "prefer-standby" };
	const char *t = wh_str(ctx->spec, "backup.target");
	if (t && *t && !one_of(t, targets, OP_ARRAY_SIZE(targets)))
		wh_result_unsupported(res, "spec.backup.target", targets, OP_ARRAY_SIZE(targets));
}

/* ---- V58 additionalCommandArgs ---- */

int wh_store_args_parse(json_object *store, enum api_barman_tool tool,
			struct api_barman_args *ret, api_barman_ignored_fn ignored, void *ud,
			struct op_err *err)
{
	json_object *arr = wh_arr(store, api_barman_args_field(tool));
	size_t n = arr ? json_object_array_length(arr) : 0;
	_cleanup_free_ const char **args = op_calloc(n + 1, sizeof(*args));
	for (size_t i = 0; i < n; i++) /* not a string: the schema's type check names it */
		args[i] = json_object_get_string(json_object_array_get_idx(arr, i));
	return api_barman_args_parse(tool, args, n, ret, ignored, ud, err);
}

static void check_args(json_object *store, const char *path, struct wh_result *res)
{
	for (enum api_barman_tool t = 0; t < API_BARMAN_TOOLS; t++) {
		struct api_barman_args a;
		struct op_err err = OP_ERR_INIT;
		if (wh_store_args_parse(store, t, &a, NULL, NULL, &err) == 0)
			continue;
		/* err.msg starts with the element: "[2]: --read-timeout: ..." */
		const char *close = strstr(err.msg, "]: ");
		_cleanup_free_ char *p = op_asprintf("%s.%s%.*s", path, api_barman_args_field(t),
						     close ? (int)(close - err.msg + 1) : 0, err.msg);
		wh_result_error(res, p, "%s", close ? close + 3 : err.msg);
	}
}

WH_RULE_FN(wh_v58_store_command_args)
{
	for_each_store(ctx, check_args, res);
}
