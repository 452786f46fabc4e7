/* api/backup_status.c - the Backup and ScheduledBackup status as JSON, and
 * the Backup a ScheduledBackup creates (backup.h). */
#include "api/backup.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "api/timestamp.h"
#include "support/alloc.h"
#include "support/json.h"

/* Writes key: s when s is set; else null when nulls (a merge patch removes
 * it), else nothing. */
static void put_str(json_object *o, const char *key, const char *s, bool nulls)
{
	if (s && *s)
		op_jsets(o, key, s);
	else if (nulls)
		op_jset(o, key, NULL);
}

static void put_time(json_object *o, const char *key, int64_t t, bool nulls)
{
	if (t > 0) {
		_cleanup_free_ char *s = api_time_rfc3339(t);
		op_jsets(o, key, s);
	} else if (nulls) {
		op_jset(o, key, NULL);
	}
}

static json_object *secret_ref_json(const struct api_secret_ref *r)
{
	json_object *o = op_jobj();
	op_jsets(o, "name", r->name);
	if (r->key)
		op_jsets(o, "key", r->key);
	return o;
}

static void put_ref(json_object *o, const char *key, const struct api_secret_ref *r, bool nulls)
{
	if (r->name)
		op_jset(o, key, secret_ref_json(r));
	else if (nulls)
		op_jset(o, key, NULL);
}

static json_object *s3_json(const struct api_s3_credentials *s3)
{
	json_object *o = op_jobj();
	put_ref(o, "accessKeyId", &s3->access_key_id, false);
	put_ref(o, "secretAccessKey", &s3->secret_access_key, false);
	put_ref(o, "region", &s3->region, false);
	put_ref(o, "sessionToken", &s3->session_token, false);
	if (s3->inherit_from_iam_role)
		op_jset(o, "inheritFromIAMRole", op_jbool(true));
	return o;
}

static void put_instance_id(json_object *o, const struct api_instance_id *id, bool nulls)
{
	if (!id->pod_name && !id->container_id && !id->session_id) {
		if (nulls)
			op_jset(o, "instanceID", NULL);
		return;
	}
	json_object *i = op_jobj();
	put_str(i, "podName", id->pod_name, false);
	put_str(i, "ContainerID", id->container_id, false);
	put_str(i, "sessionID", id->session_id, false);
	op_jset(o, "instanceID", i);
}

static void put_snapshots(json_object *o, const struct api_strv *v, bool nulls)
{
	if (!v->n) {
		if (nulls)
			op_jset(o, "snapshotBackupStatus", NULL);
		return;
	}
	json_object *els = op_jarr();
	for (size_t i = 0; i < v->n; i++) {
		json_object *e = op_jobj();
		op_jsets(e, "name", v->items[i]);
		op_jpush(els, e);
	}
	json_object *s = op_jobj();
	op_jset(s, "elements", els);
	op_jset(o, "snapshotBackupStatus", s);
}

static void put_kvs(json_object *o, const char *key, const struct api_kvs *kvs, bool nulls)
{
	if (!kvs->n) {
		if (nulls)
			op_jset(o, key, NULL);
		return;
	}
	json_object *m = op_jobj();
	for (size_t i = 0; i < kvs->n; i++)
		op_jsets(m, kvs->items[i].key, kvs->items[i].value);
	op_jset(o, key, m);
}

static json_object *status_json(const struct api_backup_status *st, bool nulls)
{
	json_object *o = op_jobj();
	const char *phase = st->phase == API_BACKUP_PHASE_UNKNOWN ? st->phase_text
								    : api_backup_phase_name(st->phase);
	put_str(o, "phase", phase, nulls);
	put_str(o, "backupId", st->backup_id, nulls);
	put_str(o, "backupName", st->backup_name, nulls);
	put_str(o, "destinationPath", st->destination_path, nulls);
	put_str(o, "endpointURL", st->endpoint_url, nulls);
	put_str(o, "serverName", st->server_name, nulls);
	put_str(o, "encryption", st->encryption, nulls);
	put_ref(o, "endpointCA", &st->endpoint_ca, nulls);
	if (st->has_s3_credentials)
		op_jset(o, "s3Credentials", s3_json(&st->s3));
	else if (nulls)
		op_jset(o, "s3Credentials", NULL);
	put_str(o, "beginWal", st->begin_wal, nulls);
	put_str(o, "endWal", st->end_wal, nulls);
	put_str(o, "beginLSN", st->begin_lsn, nulls);
	put_str(o, "endLSN", st->end_lsn, nulls);
	put_time(o, "startedAt", st->started_at, nulls);
	put_time(o, "stoppedAt", st->stopped_at, nulls);
	put_str(o, "error", st->error, nulls);
	put_str(o, "commandOutput", st->command_output, nulls);
	put_str(o, "commandError", st->command_error, nulls);
	put_instance_id(o, &st->instance_id, nulls);
	put_str(o, "method", st->method, nulls);
	if (st->has_online)
		op_jset(o, "online", op_jbool(st->online));
	else if (nulls)
		op_jset(o, "online", NULL);
	put_str(o, "tablespaceMapFile", st->tablespace_map_file, nulls);
	put_str(o, "backupLabelFile", st->backup_label_file, nulls);
	if (st->major_version > 0)
		op_jset(o, "majorVersion", op_jint(st->major_version));
	else if (nulls)
		op_jset(o, "majorVersion", NULL);
	put_kvs(o, "pluginMetadata", &st->plugin_metadata, nulls);
	put_snapshots(o, &st->snapshots, nulls);
	return o;
}

json_object *api_backup_status_json(const struct api_backup_status *st)
{
	return status_json(st, false);
}

/* Appends {"status": status} (status owned, consumed) to out. */
static int status_patch(json_object *status, struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *p = op_jobj();
	op_jset(p, "status", status);
	size_t n = 0;
	const char *s = json_object_to_json_string_length(
		p, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!s)
		return op_err_set(err, -ENOMEM, "cannot serialise the status patch");
	int r = op_buf_add(out, s, n);
	if (r < 0)
		return op_err_set(err, r, "status patch larger than %zu bytes", out->max);
	return 0;
}

int api_backup_status_merge_patch(const struct api_backup_status *st, struct op_buf *out,
				  struct op_err *err)
{
	return status_patch(status_json(st, true), out, err);
}

int api_scheduled_backup_status_merge_patch(const struct api_scheduled_backup_status *st,
					    struct op_buf *out, struct op_err *err)
{
	json_object *o = op_jobj();
	put_time(o, "lastCheckTime", st->last_check_time, true);
	put_time(o, "lastScheduleTime", st->last_schedule_time, true);
	put_time(o, "nextScheduleTime", st->next_schedule_time, true);
	return status_patch(o, out, err);
}

/* ---- the Backup of a ScheduledBackup ---- */

static json_object *owner_ref(const char *api_version, const char *kind, const char *name,
			      const char *uid, bool controller)
{
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", api_version);
	op_jsets(o, "kind", kind);
	op_jsets(o, "name", name);
	op_jsets(o, "uid", uid);
	if (controller)
		op_jset(o, "controller", op_jbool(true));
	op_jset(o, "blockOwnerDeletion", op_jbool(true));
	return o;
}

static json_object *backup_spec(const struct api_backup_common *c)
{
	json_object *spec = op_jobj();
	json_object *cl = op_jobj();
	op_jsets(cl, "name", c->cluster_name);
	op_jset(spec, "cluster", cl);
	if (c->target)
		op_jsets(spec, "target", c->target);
	op_jsets(spec, "method", c->method_text ? c->method_text : "barmanObjectStore");
	if (c->has_online)
		op_jset(spec, "online", op_jbool(c->online));
	if (c->has_online_configuration) {
		const struct api_online_config *oc = &c->online_configuration;
		json_object *o = op_jobj();
		if (oc->has_wait_for_archive)
			op_jset(o, "waitForArchive", op_jbool(oc->wait_for_archive));
		if (oc->has_immediate_checkpoint)
			op_jset(o, "immediateCheckpoint", op_jbool(oc->immediate_checkpoint));
		op_jset(spec, "onlineConfiguration", o);
	}
	if (c->has_plugin_configuration) {
		json_object *pc = op_jobj();
		op_jsets(pc, "name", c->plugin_configuration.name);
		put_kvs(pc, "parameters", &c->plugin_configuration.parameters, false);
		op_jset(spec, "pluginConfiguration", pc);
	}
	return spec;
}

json_object *api_scheduled_backup_new_backup(const struct api_scheduled_backup *s, int64_t when,
					     const char *cluster_uid)
{
	time_t tt = (time_t)when;
	struct tm tm;
	char stamp[32] = "";
	if (gmtime_r(&tt, &tm))
		strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	const char *name = s->metadata.name ? s->metadata.name : "";
	json_object *b = op_jobj();
	op_jsets(b, "apiVersion", API_BACKUP_API_VERSION);
	op_jsets(b, "kind", "Backup");
	json_object *md = op_jobj();
	_cleanup_free_ char *bname = op_asprintf("%s-%s", name, stamp);
	op_jsets(md, "name", bname);
	if (s->metadata.namespace_)
		op_jsets(md, "namespace", s->metadata.namespace_);
	json_object *labels = op_jobj();
	op_jsets(labels, "cnpg.io/cluster", s->spec.cluster_name);
	op_jsets(labels, "cnpg.io/scheduled-backup", name);
	op_jset(md, "labels", labels);
	const char *owner = s->backup_owner_reference ? s->backup_owner_reference : "none";
	json_object *refs = NULL;
	if (strcmp(owner, "self") == 0 && s->metadata.uid)
		refs = op_jpush(op_jarr(), owner_ref(API_BACKUP_API_VERSION, "ScheduledBackup",
						     name, s->metadata.uid, true));
	else if (strcmp(owner, "cluster") == 0 && cluster_uid)
		refs = op_jpush(op_jarr(), owner_ref(API_BACKUP_API_VERSION, "Cluster",
						     s->spec.cluster_name, cluster_uid, true));
	if (refs)
		op_jset(md, "ownerReferences", refs);
	op_jset(b, "metadata", md);
	op_jset(b, "spec", backup_spec(&s->spec));
	return b;
}
