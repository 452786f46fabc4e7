/* instance/archive.c - continuous WAL archiving's side in the instance
 * manager: the configuration file `pgop instance wal-archive` reads (the
 * format of backup/backup.h), rendered from spec.backup.barmanObjectStore and
 * the credential files the reconciler mounts (api/cluster.h,
 * api_barman_file_*) and, for base backups (basebackup.c), data.compression,
 * immediateCheckpoint and jobs, and the tags and encryption of uploads: the file holds their paths, never a secret, and
 * wal-archive reads them at each call, so a rotated Secret is used without a
 * restart. And the archive's last error, for /pg/status. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "api/barman_args.h"
#include "api/plugin.h"
#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/json.h"

char *inst_archive_config_path(const struct inst_paths *p)
{
	return op_asprintf("%s/run/wal-archive.json", p->controller_dir);
}

char *inst_archive_state_dir(const struct inst_paths *p)
{
	return op_asprintf("%s/run/wal", p->controller_dir);
}

/* <secrets dir>/<prefix>-<file>/<file> (owned): the mount contract of
 * api/cluster.h ("barman" for the archive's store, "recovery" for a
 * recovery source's, api_recovery_file_volume). */
static char *store_file(const struct inst_paths *p, const char *prefix, enum api_barman_file f)
{
	const char *n = api_barman_file_name(f);
	return op_asprintf("%s/%s-%s/%s", p->secrets_dir, prefix, n, n);
}

json_object *inst_store_config_new(const struct inst_paths *p, const struct api_barman_store *s,
				   const char *server, const char *region, const char *prefix)
{
	json_object *o = op_jobj();
	op_jsets(o, "destinationPath", s->destination_path);
	op_jsets(o, "serverName", server);
	if (s->endpoint_url && *s->endpoint_url)
		op_jsets(o, "endpointURL", s->endpoint_url);
	if (region && *region)
		op_jsets(o, "region", region);
	static const struct {
		enum api_barman_file f;
		const char *key;
	} files[] = {
		{ API_BARMAN_ACCESS_KEY_ID, "accessKeyIdFile" },
		{ API_BARMAN_SECRET_ACCESS_KEY, "secretAccessKeyFile" },
		{ API_BARMAN_SESSION_TOKEN, "sessionTokenFile" },
		{ API_BARMAN_ENDPOINT_CA, "endpointCAFile" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(files); i++) {
		if (!api_barman_file_ref(s, files[i].f))
			continue;
		_cleanup_free_ char *path = store_file(p, prefix, files[i].f);
		op_jsets(o, files[i].key, path);
	}
	op_jset(o, "maxParallel", op_jint(s->wal.max_parallel > 0 ? s->wal.max_parallel : 1));
	op_jsets(o, "pgdata", p->pgdata);
	return o;
}

/* args (tool's additionalCommandArgs) parsed: false when absent or when
 * they do not parse (V58 refuses those at admission; a Cluster admitted
 * before keeps archiving, its arguments ignored). */
static bool parse_args(const struct api_barman_store *s, enum api_barman_tool tool,
		       struct api_barman_args *ret)
{
	static const size_t offs[] = {
		[API_BARMAN_WAL_ARCHIVE] = offsetof(struct api_barman_store, wal.archive_additional_command_args),
		[API_BARMAN_WAL_RESTORE] = offsetof(struct api_barman_store, wal.restore_additional_command_args),
		[API_BARMAN_BACKUP] = offsetof(struct api_barman_store, data.additional_command_args),
		[API_BARMAN_RESTORE] = offsetof(struct api_barman_store, data.restore_additional_command_args),
	};
	const struct api_strv *v = (const void *)((const char *)s + offs[tool]);
	struct op_err err = OP_ERR_INIT;
	return v->n > 0 && api_barman_args_parse(tool, (const char *const *)v->items, v->n, ret,
						 NULL, NULL, &err) == 0;
}

void inst_store_args_config(json_object *o, const struct api_barman_store *s, bool recovery)
{
	struct api_barman_args a;
	if (parse_args(s, recovery ? API_BARMAN_WAL_RESTORE : API_BARMAN_WAL_ARCHIVE, &a) &&
	    a.read_timeout_s)
		op_jset(o, "walReadTimeout", op_jint(a.read_timeout_s));
	if (!parse_args(s, recovery ? API_BARMAN_RESTORE : API_BARMAN_BACKUP, &a))
		return;
	if (a.read_timeout_s)
		op_jset(o, "dataReadTimeout", op_jint(a.read_timeout_s));
	if (a.max_archive_size)
		op_jset(o, "maxArchiveSize", json_object_new_int64((int64_t)a.max_archive_size));
	if (a.min_chunk_size)
		op_jset(o, "minChunkSize", json_object_new_int64((int64_t)a.min_chunk_size));
	/* the fields win over the arguments (CloudNativePG passes its own --jobs) */
	if (a.jobs && !(s->data.jobs > 0) && a.jobs <= BK_MAX_PARALLEL)
		op_jset(o, "jobs", op_jint(a.jobs));
	if (a.immediate_checkpoint)
		op_jset(o, "immediateCheckpoint", op_jbool(true));
}

/* walCompression from wal.compression: what wal-archive writes. */
static int compression(const struct api_barman_store *s, const char **ret, struct op_err *err)
{
	const char *c = s->wal.compression;
	if (!c || !*c) {
		*ret = "none";
		return 0;
	}
	enum bk_compression k;
	if (bk_compression_parse(c, &k, NULL) < 0)
		return op_err_set(err, -ENOTSUP,
				  "spec.backup.barmanObjectStore.wal.compression: %s is not supported "
				  "by pgop (gzip, bzip2, xz, lz4, zstd)", c);
	*ret = c;
	return 0;
}

/* tags, historyTags (S3 object tags) and wal/data encryption into o: checked
 * at admission (V53) and again by the file's parser (backup/config.c). */
static void store_attrs(json_object *o, const struct api_barman_store *s)
{
	const struct {
		const struct api_kvs *kvs;
		const char *key;
	} sets[] = { { &s->tags, "tags" }, { &s->history_tags, "historyTags" } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(sets); i++) {
		if (sets[i].kvs->n == 0)
			continue;
		json_object *t = op_jobj();
		for (size_t j = 0; j < sets[i].kvs->n; j++)
			op_jsets(t, sets[i].kvs->items[j].key, sets[i].kvs->items[j].value);
		op_jset(o, sets[i].key, t);
	}
	if (s->wal.encryption && *s->wal.encryption)
		op_jsets(o, "walEncryption", s->wal.encryption);
	if (s->data.encryption && *s->data.encryption)
		op_jsets(o, "dataEncryption", s->data.encryption);
}

int inst_archive_config_render(const struct inst_archive_input *in, struct op_buf *out,
			       struct op_err *err)
{
	const struct api_barman_store *s = api_cluster_wal_store(in->cluster);
	if (!s)
		return op_err_set(err, -ENOENT, "the Cluster archives WAL nowhere");
	if (!api_barman_file_ref(s, API_BARMAN_ACCESS_KEY_ID) ||
	    !api_barman_file_ref(s, API_BARMAN_SECRET_ACCESS_KEY))
		return op_err_set(err, -ENOTSUP,
				  "spec.backup.barmanObjectStore.s3Credentials: pgop needs "
				  "accessKeyId and secretAccessKey (inheritFromIAMRole is not "
				  "supported)");
	const char *comp = NULL;
	int r = compression(s, &comp, err);
	if (r < 0)
		return r;
	const struct inst_paths *p = in->paths;
	json_object *o = inst_store_config_new(p, s, api_barman_server_name(in->cluster, s),
					       in->region, "barman");
	op_jsets(o, "walCompression", comp);
	if (s->data.compression && *s->data.compression)
		op_jsets(o, "dataCompression", s->data.compression);
	if (s->data.immediate_checkpoint)
		op_jset(o, "immediateCheckpoint", op_jbool(true));
	if (s->data.jobs > 0 && s->data.jobs <= BK_MAX_PARALLEL)
		op_jset(o, "jobs", op_jint(s->data.jobs));
	store_attrs(o, s);
	inst_store_args_config(o, s, false);
	_cleanup_free_ char *state = inst_archive_state_dir(p);
	op_jsets(o, "stateDir", state);
	r = op_buf_adds(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return r ? op_err_set(err, r, "archive configuration too large") : 0;
}

/* The region value from its mounted file (not a secret, but a Secret key in
 * CloudNativePG's API); NULL when the store names none. */
static int read_region(const struct inst_paths *p, const struct api_barman_store *s,
		       char **ret, struct op_err *err)
{
	*ret = NULL;
	if (!api_barman_file_ref(s, API_BARMAN_REGION))
		return 0;
	const char *n = api_barman_file_name(API_BARMAN_REGION);
	_cleanup_free_ char *dir = op_asprintf("barman-%s", n);
	return inst_read_secret(p, dir, n, ret, err);
}

int inst_archive_sync(const struct inst_paths *p, const struct api_cluster *c, struct op_err *err)
{
	_cleanup_free_ char *path = inst_archive_config_path(p);
	const struct api_barman_store *s = api_cluster_wal_store(c);
	if (!s) {
		if (unlink(path) < 0 && errno != ENOENT)
			return op_err_set(err, -errno, "%s: cannot remove: %s", path, strerror(errno));
		if (api_cluster_archives_wal(c)) /* the plugin's ObjectStore is not resolved */
			return op_err_set(err, -ENOENT, "spec.plugins: the %s plugin's ObjectStore "
					  "%s cannot be read", API_BARMAN_PLUGIN,
					  api_plugin_object_name(api_cluster_barman_plugin(c)) ?: "?");
		return 0;
	}
	_cleanup_free_ char *region = NULL;
	int r = read_region(p, s, &region, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *state = inst_archive_state_dir(p);
	if ((r = op_mkdir_p(state, 0700, err)) < 0)
		return r;
	_cleanup_(op_buf_donep) struct op_buf conf = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct inst_archive_input in = { .cluster = c, .paths = p, .region = region };
	if ((r = inst_archive_config_render(&in, &conf, err)) < 0)
		return r;
	r = inst_write_if_changed(path, op_buf_str(&conf), conf.len, 0600, err);
	return r < 0 ? r : 1;
}

int inst_archive_error(const struct inst_paths *p, char **ret)
{
	_cleanup_free_ char *state = inst_archive_state_dir(p);
	*ret = NULL;
	return bk_archive_error_read(state, ret);
}
