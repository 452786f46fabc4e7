/* api/backup.c - Backup, ScheduledBackup and ObjectStore decoded into C
 * structs; the Backup and ScheduledBackup status encoded back (backup.h). */
#include "api/backup.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "api/decode.h"
#include "api/timestamp.h"
#include "support/alloc.h"
#include "support/json.h"


/* ---- phases and methods ---- */

static const char *const phase_names[] = {
	[API_BACKUP_PHASE_NONE] = "",
	[API_BACKUP_PHASE_PENDING] = "pending",
	[API_BACKUP_PHASE_STARTED] = "started",
	[API_BACKUP_PHASE_RUNNING] = "running",
	[API_BACKUP_PHASE_FINALIZING] = "finalizing",
	[API_BACKUP_PHASE_COMPLETED] = "completed",
	[API_BACKUP_PHASE_FAILED] = "failed",
	[API_BACKUP_PHASE_WAL_ARCHIVING_FAILING] = "walArchivingFailing",
	[API_BACKUP_PHASE_UNKNOWN] = "unknown",
};

const char *api_backup_phase_name(enum api_backup_phase p)
{
	return (unsigned)p < OP_ARRAY_SIZE(phase_names) ? phase_names[p] : "unknown";
}

enum api_backup_phase api_backup_phase_parse(const char *s)
{
	if (!s || !*s)
		return API_BACKUP_PHASE_NONE;
	for (unsigned i = API_BACKUP_PHASE_PENDING; i < API_BACKUP_PHASE_UNKNOWN; i++)
		if (strcmp(s, phase_names[i]) == 0)
			return (enum api_backup_phase)i;
	return API_BACKUP_PHASE_UNKNOWN;
}

bool api_backup_phase_is_done(enum api_backup_phase p)
{
	return p == API_BACKUP_PHASE_COMPLETED || p == API_BACKUP_PHASE_FAILED;
}

bool api_backup_phase_in_progress(enum api_backup_phase p)
{
	return p == API_BACKUP_PHASE_PENDING || p == API_BACKUP_PHASE_STARTED ||
	       p == API_BACKUP_PHASE_RUNNING || p == API_BACKUP_PHASE_FINALIZING;
}

static const char *const method_names[] = {
	[API_BACKUP_METHOD_BARMAN] = "barmanObjectStore",
	[API_BACKUP_METHOD_VOLUME_SNAPSHOT] = "volumeSnapshot",
	[API_BACKUP_METHOD_PLUGIN] = "plugin",
	[API_BACKUP_METHOD_UNKNOWN] = "unknown",
};

const char *api_backup_method_name(enum api_backup_method m)
{
	return (unsigned)m < OP_ARRAY_SIZE(method_names) ? method_names[m] : "unknown";
}

enum api_backup_method api_backup_method_parse(const char *s)
{
	if (!s)
		return API_BACKUP_METHOD_BARMAN;
	for (unsigned i = 0; i < API_BACKUP_METHOD_UNKNOWN; i++)
		if (strcmp(s, method_names[i]) == 0)
			return (enum api_backup_method)i;
	return API_BACKUP_METHOD_UNKNOWN;
}

/* ---- decoding ---- */

static void dec_cluster_ref(struct api_dec *d, json_object *o, const char *p,
			    struct api_backup_common *c)
{
	STR(o, p, "name", &c->cluster_name);
}

static void dec_plugin_config(struct api_dec *d, json_object *o, const char *p,
			      struct api_backup_common *c)
{
	c->has_plugin_configuration = true;
	STR(o, p, "name", &c->plugin_configuration.name);
	api_dec_kvs(d, o, p, "parameters", &c->plugin_configuration.parameters, false);
}

static void dec_online_config(struct api_dec *d, json_object *o, const char *p,
			      struct api_backup_common *c)
{
	struct api_online_config *oc = &c->online_configuration;
	c->has_online_configuration = true;
	oc->has_wait_for_archive = BOOL(o, p, "waitForArchive", &oc->wait_for_archive);
	oc->has_immediate_checkpoint =
		BOOL(o, p, "immediateCheckpoint", &oc->immediate_checkpoint);
}

/* The spec fields Backup and ScheduledBackup share. */
static void dec_common(struct api_dec *d, json_object *o, const char *p, struct api_backup_common *c)
{
	SUB(o, p, "cluster", dec_cluster_ref, c);
	STR(o, p, "target", &c->target);
	STR(o, p, "method", &c->method_text);
	SUB(o, p, "pluginConfiguration", dec_plugin_config, c);
	c->has_online = BOOL(o, p, "online", &c->online);
	SUB(o, p, "onlineConfiguration", dec_online_config, c);
}

static void common_finish(struct api_backup_common *c)
{
	if (!c->method_text)
		c->method_text = op_strdup("barmanObjectStore");
	c->method = api_backup_method_parse(c->method_text);
	if (!c->online_configuration.has_wait_for_archive)
		c->online_configuration.wait_for_archive = true;
}

/* A timestamp field: RFC 3339 into Unix seconds; a string that does not
 * parse is an error on its path. */
static void dec_time(struct api_dec *d, json_object *o, const char *p, const char *key,
		     int64_t *out)
{
	_cleanup_free_ char *s = NULL;
	if (!STR(o, p, key, &s))
		return;
	if (api_time_parse(s, out) < 0) {
		_cleanup_free_ char *kp = api_dec_join(p, key);
		api_dec_error(d, kp, "expected an RFC 3339 time, got \"%.64s\"", s);
	}
}

static void dec_instance_id(struct api_dec *d, json_object *o, const char *p,
			    struct api_instance_id *id)
{
	STR(o, p, "podName", &id->pod_name);
	STR(o, p, "ContainerID", &id->container_id);
	STR(o, p, "sessionID", &id->session_id);
}

static void dec_snapshots(struct api_dec *d, json_object *o, const char *p, struct api_strv *v)
{
	json_object *els = api_dec_arr(d, o, p, "elements");
	_cleanup_free_ char *ep = api_dec_join(p, "elements");
	for (size_t i = 0; els && i < json_object_array_length(els); i++) {
		json_object *e = json_object_array_get_idx(els, i);
		_cleanup_free_ char *ip = api_dec_index(ep, i);
		_cleanup_free_ char *name = NULL;
		if (!e || !json_object_is_type(e, json_type_object))
			api_dec_error(d, ip, "expected object, got %s", op_json_type_name(e));
		else if (STR(e, ip, "name", &name))
			api_strv_push(v, name);
	}
}

static void dec_status_strings(struct api_dec *d, json_object *o, const char *p,
			       struct api_backup_status *st)
{
	static const struct {
		const char *key;
		size_t off;
	} fields[] = {
		{ "backupId", offsetof(struct api_backup_status, backup_id) },
		{ "backupName", offsetof(struct api_backup_status, backup_name) },
		{ "destinationPath", offsetof(struct api_backup_status, destination_path) },
		{ "endpointURL", offsetof(struct api_backup_status, endpoint_url) },
		{ "serverName", offsetof(struct api_backup_status, server_name) },
		{ "encryption", offsetof(struct api_backup_status, encryption) },
		{ "beginWal", offsetof(struct api_backup_status, begin_wal) },
		{ "endWal", offsetof(struct api_backup_status, end_wal) },
		{ "beginLSN", offsetof(struct api_backup_status, begin_lsn) },
		{ "endLSN", offsetof(struct api_backup_status, end_lsn) },
		{ "error", offsetof(struct api_backup_status, error) },
		{ "commandOutput", offsetof(struct api_backup_status, command_output) },
		{ "commandError", offsetof(struct api_backup_status, command_error) },
		{ "method", offsetof(struct api_backup_status, method) },
		{ "tablespaceMapFile", offsetof(struct api_backup_status, tablespace_map_file) },
		{ "backupLabelFile", offsetof(struct api_backup_status, backup_label_file) },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(fields); i++)
		STR(o, p, fields[i].key, (char **)((char *)st + fields[i].off));
}

static void dec_backup_status(struct api_dec *d, json_object *o, const char *p,
			      struct api_backup_status *st)
{
	_cleanup_free_ char *phase = NULL;
	STR(o, p, "phase", &phase);
	st->phase = api_backup_phase_parse(phase);
	if (st->phase == API_BACKUP_PHASE_UNKNOWN)
		st->phase_text = TAKE_PTR(phase);
	dec_status_strings(d, o, p, st);
	SUB(o, p, "endpointCA", api_dec_secret_ref, &st->endpoint_ca);
	json_object *s3 = api_dec_obj(d, o, p, "s3Credentials");
	if (s3) {
		_cleanup_free_ char *sp = api_dec_join(p, "s3Credentials");
		struct api_barman_store tmp = { 0 };
		api_dec_s3_credentials(d, s3, sp, &tmp);
		st->has_s3_credentials = true;
		st->s3 = tmp.s3;
	}
	st->has_azure_credentials = api_dec_obj(d, o, p, "azureCredentials") != NULL;
	st->has_google_credentials = api_dec_obj(d, o, p, "googleCredentials") != NULL;
	dec_time(d, o, p, "startedAt", &st->started_at);
	dec_time(d, o, p, "stoppedAt", &st->stopped_at);
	SUB(o, p, "instanceID", dec_instance_id, &st->instance_id);
	st->has_online = BOOL(o, p, "online", &st->online);
	I64(o, p, "majorVersion", &st->major_version);
	api_dec_kvs(d, o, p, "pluginMetadata", &st->plugin_metadata, false);
	SUB(o, p, "snapshotBackupStatus", dec_snapshots, &st->snapshots);
}

/* The envelope every kind shares: obj must be an object; metadata decoded;
 * fn(d, obj, x) decodes the rest. 0, or -EINVAL with err set. */
static int decode_kind(const char *what, json_object *obj, struct api_errors *errs,
		       struct api_metadata *md, void (*fn)(struct api_dec *, json_object *, void *),
		       void *x, struct op_err *err)
{
	struct api_dec dd = { .errs = errs }, *d = &dd;
	if (!obj || !json_object_is_type(obj, json_type_object)) {
		api_dec_error(d, "", "expected object, got %s", op_json_type_name(obj));
		free(dd.first);
		return op_err_set(err, -EINVAL, "%s: expected object, got %s", what,
				  op_json_type_name(obj));
	}
	SUB(obj, "", "metadata", api_dec_metadata, md);
	fn(d, obj, x);
	if (dd.n > 0) {
		int r = op_err_set(err, -EINVAL, "%s%s", dd.first,
				   dd.n > 1 ? " (and more type errors)" : "");
		free(dd.first);
		return r;
	}
	return 0;
}

static void dec_backup_body(struct api_dec *d, json_object *obj, void *x)
{
	struct api_backup_obj *b = x;
	SUB(obj, "", "spec", dec_common, &b->spec);
	common_finish(&b->spec);
	SUB(obj, "", "status", dec_backup_status, &b->status);
}

int api_backup_obj_decode(json_object *obj, struct api_errors *errs, struct api_backup_obj **ret,
			  struct op_err *err)
{
	_cleanup_(api_backup_obj_freep) struct api_backup_obj *b = op_calloc(1, sizeof(*b));
	int r = decode_kind("backup", obj, errs, &b->metadata, dec_backup_body, b, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(b);
	return 0;
}

static void common_done(struct api_backup_common *c)
{
	free(c->cluster_name), free(c->target), free(c->method_text);
	free(c->plugin_configuration.name);
	api_kvs_done(&c->plugin_configuration.parameters);
}

void api_backup_status_done(struct api_backup_status *st)
{
	free(st->phase_text), free(st->backup_id), free(st->backup_name);
	free(st->destination_path), free(st->endpoint_url), free(st->server_name);
	free(st->encryption), free(st->begin_wal), free(st->end_wal), free(st->begin_lsn);
	free(st->end_lsn), free(st->error), free(st->command_output), free(st->command_error);
	free(st->method), free(st->tablespace_map_file), free(st->backup_label_file);
	free(st->instance_id.pod_name), free(st->instance_id.container_id);
	free(st->instance_id.session_id);
	api_secret_ref_done(&st->endpoint_ca);
	api_s3_credentials_done(&st->s3);
	api_kvs_done(&st->plugin_metadata);
	api_strv_done(&st->snapshots);
	memset(st, 0, sizeof(*st));
}

struct api_backup_obj *api_backup_obj_free(struct api_backup_obj *b)
{
	if (!b)
		return NULL;
	api_metadata_done(&b->metadata);
	common_done(&b->spec);
	api_backup_status_done(&b->status);
	free(b);
	return NULL;
}

void api_backup_status_set_failed(struct api_backup_status *st, const char *error)
{
	st->phase = API_BACKUP_PHASE_FAILED;
	free(st->phase_text);
	st->phase_text = NULL;
	free(st->error);
	st->error = error ? op_strdup(error) : NULL;
}

/* ---- ScheduledBackup ---- */

static void dec_scheduled_spec(struct api_dec *d, json_object *o, const char *p,
			       struct api_scheduled_backup *s)
{
	dec_common(d, o, p, &s->spec);
	STR(o, p, "schedule", &s->schedule);
	BOOL(o, p, "suspend", &s->suspend);
	BOOL(o, p, "immediate", &s->immediate);
	STR(o, p, "backupOwnerReference", &s->backup_owner_reference);
}

static void dec_scheduled_status(struct api_dec *d, json_object *o, const char *p,
				 struct api_scheduled_backup_status *st)
{
	dec_time(d, o, p, "lastCheckTime", &st->last_check_time);
	dec_time(d, o, p, "lastScheduleTime", &st->last_schedule_time);
	dec_time(d, o, p, "nextScheduleTime", &st->next_schedule_time);
}

static void dec_scheduled_body(struct api_dec *d, json_object *obj, void *x)
{
	struct api_scheduled_backup *s = x;
	SUB(obj, "", "spec", dec_scheduled_spec, s);
	common_finish(&s->spec);
	if (!s->backup_owner_reference)
		s->backup_owner_reference = op_strdup("none");
	SUB(obj, "", "status", dec_scheduled_status, &s->status);
}

int api_scheduled_backup_decode(json_object *obj, struct api_errors *errs,
				struct api_scheduled_backup **ret, struct op_err *err)
{
	_cleanup_(api_scheduled_backup_freep) struct api_scheduled_backup *s =
		op_calloc(1, sizeof(*s));
	int r = decode_kind("scheduledbackup", obj, errs, &s->metadata, dec_scheduled_body, s, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

struct api_scheduled_backup *api_scheduled_backup_free(struct api_scheduled_backup *s)
{
	if (!s)
		return NULL;
	api_metadata_done(&s->metadata);
	common_done(&s->spec);
	free(s->schedule), free(s->backup_owner_reference);
	free(s);
	return NULL;
}

/* ---- ObjectStore ---- */

static void dec_object_store_spec(struct api_dec *d, json_object *o, const char *p,
				  struct api_object_store *x)
{
	api_dec_barman_store(d, o, p, "configuration", &x->configuration);
	STR(o, p, "retentionPolicy", &x->retention_policy);
	x->has_instance_sidecar_configuration =
		api_dec_obj(d, o, p, "instanceSidecarConfiguration") != NULL;
}

static void dec_object_store_body(struct api_dec *d, json_object *obj, void *x)
{
	SUB(obj, "", "spec", dec_object_store_spec, (struct api_object_store *)x);
	(void)api_dec_obj(d, obj, "", "status");
}

int api_object_store_decode(json_object *obj, struct api_errors *errs,
			    struct api_object_store **ret, struct op_err *err)
{
	_cleanup_(api_object_store_freep) struct api_object_store *o = op_calloc(1, sizeof(*o));
	int r = decode_kind("objectstore", obj, errs, &o->metadata, dec_object_store_body, o, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(o);
	return 0;
}

struct api_object_store *api_object_store_free(struct api_object_store *o)
{
	if (!o)
		return NULL;
	api_metadata_done(&o->metadata);
	api_barman_store_free(o->configuration);
	free(o->retention_policy);
	free(o);
	return NULL;
}
