/* reconciler/backup.c - a Cluster's Backups (postgresql.cnpg.io/v1), driven
 * by the Cluster's own reconcile (layer 3): the Backup and ScheduledBackup
 * informers enqueue the Cluster their spec.cluster.name names, and each
 * reconcile, which has just asked every instance for its /pg/status, moves
 * its Backups on:
 *  - a new Backup (no phase, or "pending") is refused in its status when it
 *    cannot run here (volumeSnapshot: no CSI snapshots; a Cluster without
 *    spec.backup.barmanObjectStore; an unknown method), else started on the
 *    target instance (spec.target, else the Cluster's spec.backup.target,
 *    else prefer-standby: the streaming standby that replayed the most, or
 *    the primary when none streams) with POST /pg/backup?name=&id= over
 *    mutual TLS (instance/basebackup.c), and marked "running" with the
 *    instance, the backup id and the store;
 *  - a running Backup is polled with GET /pg/backup on its instance until it
 *    reports completed or failed, whose fields (WAL, LSNs, times, error) go
 *    into the Backup's status; an instance that is gone fails it.
 * The Cluster's status (lastSuccessfulBackup, lastFailedBackup, condition
 * LastBackupSucceeded) is derived from its finished Backups at each
 * reconcile: the Cluster reconcile stays the one writer of Cluster status.
 * The instance managers have no RBAC on Backups: the operator writes them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/backup.h"
#include "api/plugin.h"
#include "api/timestamp.h"
#include "backup/backup.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define BACKUP_POLL_MS 3000
#define BACKUP_CALL_TIMEOUT_MS 5000

#define PHASE_COMPLETED api_backup_phase_name(API_BACKUP_PHASE_COMPLETED)
#define PHASE_FAILED api_backup_phase_name(API_BACKUP_PHASE_FAILED)

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool for_cluster(void *ud, json_object *o)
{
	return str_eq(op_json_str_at(o, "spec.cluster.name"), ud);
}

json_object *rc_backups_of(struct rc_controller *ctl, enum rc_inf kind, const char *ns,
			   const char *cluster)
{
	struct kube_informer *inf = rc_informer(ctl, kind, ns);
	json_object *out = inf ? kube_informer_list_filter(inf, ns, for_cluster, (void *)cluster)
			       : op_jarr();
	if (!out)
		op_oom(0);
	return out;
}

/* Merge-patches the Backup's status with st (owned, consumed). */
static int patch_status(struct rc_run *r, const char *name, json_object *st)
{
	json_object *doc = op_jobj();
	op_jset(doc, "status", st);
	const char *txt = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	_cleanup_free_ char *patch = op_strdup(txt ? txt : "{}");
	json_object_put(doc);
	json_object *res = NULL;
	struct op_err e = OP_ERR_INIT;
	int ret = kube_patch_status(r->ctl->kc, KUBE_BACKUPS, r->ns, name, KUBE_PATCH_MERGE, patch,
				    &res, &e);
	if (res)
		json_object_put(res);
	if (ret == -ENOENT)
		return 0; /* deleted meanwhile */
	return ret < 0 ? op_err_set(r->err, ret, "backup %s: %s", name, e.msg) : 0;
}

static char *now_rfc3339(const struct rc_run *r)
{
	return api_time_rfc3339(r->now);
}

/* Fails Backup name with why (a Warning Event on the Cluster says it too). */
__attribute__((format(printf, 4, 5))) static int fail(struct rc_run *r, const char *name,
						     const char *method, const char *fmt, ...)
{
	char why[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	json_object *st = op_jobj();
	op_jsets(st, "phase", PHASE_FAILED);
	op_jsets(st, "method", method);
	op_jsets(st, "error", why);
	_cleanup_free_ char *t = now_rfc3339(r);
	op_jsets(st, "stoppedAt", t);
	rc_event(r, "Warning", "BackupFailed", "backup %s failed: %s", name, why);
	return patch_status(r, name, st);
}

/* The instance to back up: for "primary" the primary; for "prefer-standby"
 * the streaming standby that replayed the most WAL, else the primary. NULL
 * when none answers. */
static const struct rc_instance *choose_target(const char *target, const struct rc_instance *v,
					       size_t n)
{
	const struct rc_instance *primary = NULL, *standby = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct rc_instance *in = &v[i];
		if (!in->has_status || !in->pod_ready || in->pod_terminating)
			continue;
		if (in->is_primary)
			primary = primary ? primary : in;
		else if (in->wal_receiver_active &&
			 (!standby || in->replay_lsn > standby->replay_lsn))
			standby = in;
	}
	if (str_eq(target, "primary"))
		return primary;
	return standby ? standby : primary;
}

/* One call to one instance (path: its query included), answer kept whole in
 * *ret_doc (owned) on success. */
static int call_instance(struct rc_run *r, const struct rc_instance *target, const char *path,
			 bool post, json_object **ret_doc, char **ret_error)
{
	struct rc_instance one = { .name = op_strdup(target->name),
				   .ip = target->ip ? op_strdup(target->ip) : NULL };
	struct rc_fetch_opts fo = { .timeout_ms = BACKUP_CALL_TIMEOUT_MS, .path = path,
				    .post = post, .raw = true };
	struct op_err e = OP_ERR_INIT;
	int ret = rc_fetch_statuses(r->ca.cert_pem, r->client.cert_pem ? &r->client : NULL, &one,
				    1, &fo, &e);
	if (ret == 1 && one.has_status) {
		*ret_doc = TAKE_PTR(one.doc);
		ret = 0;
	} else {
		*ret_error = op_strdup(ret < 0 ? e.msg : one.error ? one.error : "no answer");
		ret = -EIO;
	}
	rc_instance_done(&one);
	return ret;
}

static void ref_copy(struct api_secret_ref *dst, const struct api_secret_ref *src)
{
	dst->name = src->name ? op_strdup(src->name) : NULL;
	dst->key = src->key ? op_strdup(src->key) : NULL;
}

/* The running status of a Backup started on `in` with backup id `id`, with
 * the store and its Secret references, as CloudNativePG records them (a
 * recovery from this Backup reads them: bootstrap.recovery.backup.name). */
static json_object *running_status(struct rc_run *r, const struct api_barman_store *s,
				   const struct rc_instance *in, const char *id, const char *method)
{
	struct api_backup_status st = {
		.phase = API_BACKUP_PHASE_RUNNING,
		.method = op_strdup(method),
		.has_online = true,
		.online = true,
		.backup_id = op_strdup(id),
		.started_at = r->now,
		.destination_path = op_strdup(s->destination_path),
		.endpoint_url = s->endpoint_url ? op_strdup(s->endpoint_url) : NULL,
		.server_name = op_strdup(api_barman_server_name(r->c, s)),
		.has_s3_credentials = s->has_s3_credentials,
	};
	st.instance_id.pod_name = op_strdup(in->name);
	ref_copy(&st.endpoint_ca, &s->endpoint_ca);
	ref_copy(&st.s3.access_key_id, &s->s3.access_key_id);
	ref_copy(&st.s3.secret_access_key, &s->s3.secret_access_key);
	ref_copy(&st.s3.region, &s->s3.region);
	ref_copy(&st.s3.session_token, &s->s3.session_token);
	json_object *o = api_backup_status_json(&st);
	api_backup_status_done(&st);
	return o;
}

/* Starts Backup b (borrowed) of the Cluster. */
static int start(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *b)
{
	const char *name = kube_obj_name(b);
	const char *method_text = op_json_str_at(b, "spec.method");
	enum api_backup_method m = api_backup_method_parse(method_text);
	const char *method = api_backup_method_name(m);
	if (m == API_BACKUP_METHOD_VOLUME_SNAPSHOT)
		return fail(r, name, method, "method volumeSnapshot needs CSI volume snapshots, "
			    "which this Kubernetes does not have: use barmanObjectStore");
	const char *plugin = op_json_str_at(b, "spec.pluginConfiguration.name");
	if (m == API_BACKUP_METHOD_PLUGIN && (!plugin || strcmp(plugin, API_BARMAN_PLUGIN) != 0))
		return fail(r, name, method, "plugin %.64s is not served by pgop (only %s, in "
			    "process)", plugin ? plugin : "(none)", API_BARMAN_PLUGIN);
	if (m != API_BACKUP_METHOD_BARMAN && m != API_BACKUP_METHOD_PLUGIN)
		return fail(r, name, method_text ? method_text : "?",
			    "method %.64s is not supported by pgop (barmanObjectStore, plugin)",
			    method_text ? method_text : "?");
	if (m == API_BACKUP_METHOD_PLUGIN && !r->c->spec.backup.barman_from_plugin)
		return fail(r, name, method, "cluster %s archives with no %s plugin%s%s", r->name,
			    API_BARMAN_PLUGIN, r->plugin_error ? ": " : "",
			    r->plugin_error ? r->plugin_error : "");
	const struct api_barman_store *s = api_cluster_wal_store(r->c);
	if (!s)
		return fail(r, name, method, "cluster %s has no spec.backup.barmanObjectStore "
			    "with S3 credentials", r->name);
	const char *target = op_json_str_at(b, "spec.target");
	if (!target || !*target)
		target = r->c->spec.backup.target;
	const struct rc_instance *in = choose_target(target, v, n);
	if (!in) { /* no instance answers yet: look again soon */
		rc_requeue(r, BACKUP_POLL_MS);
		return 0;
	}
	char id[BK_BACKUP_ID_LEN + 1];
	if (bk_backup_id_format(r->now, id) < 0)
		return op_err_set(r->err, -EINVAL, "backup %s: cannot format a backup id", name);
	_cleanup_free_ char *path = op_asprintf("/pg/backup?name=%s&id=%s", name, id);
	json_object *doc = NULL;
	_cleanup_free_ char *error = NULL;
	if (call_instance(r, in, path, true, &doc, &error) < 0) {
		op_log_warn("backup: the instance did not start it", "cluster", r->key, "backup",
			    name, "pod", in->name, "error", error);
		rc_requeue(r, BACKUP_POLL_MS);
		return 0;
	}
	/* the instance's own id: a POST repeated for the same Backup (our first
	 * status patch not seen yet) answers with the backup already running */
	const char *took = op_json_key_str(doc, "backupId");
	if (took && bk_backup_id_valid(took))
		snprintf(id, sizeof(id), "%s", took);
	json_object_put(doc);
	rc_event(r, "Normal", "BackupStarted", "backup %s started on %s (%s, id %s)", name,
		 in->name, in->is_primary ? "primary" : "standby", id);
	rc_requeue(r, BACKUP_POLL_MS);
	return patch_status(r, name, running_status(r, s, in, id, method));
}

/* The fields of the instance's GET /pg/backup answer a finished Backup's
 * status takes, under CloudNativePG's names. */
static void copy_result(json_object *st, json_object *doc)
{
	static const char *const keys[] = { "beginWal", "endWal",   "beginLSN", "endLSN",
					    "startedAt", "stoppedAt", "error" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(keys); i++) {
		const char *v = op_json_key_str(doc, keys[i]);
		if (v && *v)
			op_jsets(st, keys[i], v);
	}
}

/* Polls running Backup b (borrowed) on its instance. */
static int poll(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *b)
{
	const char *name = kube_obj_name(b);
	const char *method = op_json_str_at(b, "status.method");
	const char *pod = op_json_str_at(b, "status.instanceID.podName");
	const struct rc_instance *in = NULL;
	for (size_t i = 0; pod && i < n; i++)
		if (str_eq(v[i].name, pod))
			in = &v[i];
	if (!in)
		return fail(r, name, method ? method : "barmanObjectStore",
			    "instance %s, which was taking the backup, is gone", pod ? pod : "?");
	json_object *doc = NULL;
	_cleanup_free_ char *error = NULL;
	rc_requeue(r, BACKUP_POLL_MS);
	if (call_instance(r, in, "/pg/backup", false, &doc, &error) < 0) {
		op_log_debug("backup: no answer from its instance", "cluster", r->key, "backup",
			     name, "pod", in->name, "error", error);
		return 0; /* the instance restarts or is busy: the next poll sees */
	}
	const char *phase = op_json_key_str(doc, "phase");
	int ret = 0;
	if (!str_eq(op_json_key_str(doc, "name"), name)) {
		ret = fail(r, name, method ? method : "barmanObjectStore",
			   "instance %s does not run this backup any more", in->name);
	} else if (str_eq(phase, PHASE_COMPLETED) || str_eq(phase, PHASE_FAILED)) {
		json_object *st = op_jobj();
		op_jsets(st, "phase", phase);
		copy_result(st, doc);
		if (str_eq(phase, PHASE_COMPLETED))
			rc_event(r, "Normal", "BackupCompleted", "backup %s completed on %s", name,
				 in->name);
		else
			rc_event(r, "Warning", "BackupFailed", "backup %s failed on %s: %.512s", name,
				 in->name, op_json_key_str(doc, "error") ? op_json_key_str(doc, "error")
									  : "unknown error");
		ret = patch_status(r, name, st);
	}
	json_object_put(doc);
	return ret;
}

/* lastSuccessfulBackup, lastFailedBackup and LastBackupSucceeded from the
 * finished Backups (their stoppedAt: RFC 3339 in UTC, so they sort as text). */
static void summarise(struct rc_run *r, json_object *list)
{
	const char *ok = NULL, *bad = NULL, *bad_error = NULL, *bad_name = NULL;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *b = json_object_array_get_idx(list, i);
		const char *phase = op_json_str_at(b, "status.phase");
		const char *at = op_json_str_at(b, "status.stoppedAt");
		if (!at)
			continue;
		if (str_eq(phase, PHASE_COMPLETED) && (!ok || strcmp(at, ok) > 0))
			ok = at;
		if (str_eq(phase, PHASE_FAILED) && (!bad || strcmp(at, bad) > 0)) {
			bad = at;
			bad_error = op_json_str_at(b, "status.error");
			bad_name = kube_obj_name(b);
		}
	}
	struct rc_status *w = &r->want;
	if (ok) {
		free(w->last_successful_backup);
		w->last_successful_backup = op_strdup(ok);
	}
	if (bad) {
		free(w->last_failed_backup);
		w->last_failed_backup = op_strdup(bad);
	}
	if (!ok && !bad)
		return;
	free(w->backup_msg);
	if (bad && (!ok || strcmp(bad, ok) > 0)) {
		w->backup_cond = RC_BACKUP_COND_FAILED;
		w->backup_msg = op_asprintf("backup %s failed: %.512s", bad_name ? bad_name : "?",
					    bad_error ? bad_error : "unknown error");
	} else {
		w->backup_cond = RC_BACKUP_COND_OK;
		w->backup_msg = op_strdup("the last backup succeeded");
	}
}

/* The primary's view of the store (its /pg/status backupCatalog,
 * instance/catalog.c): the first recoverability point, the newest backup the
 * store holds, and an Event once per retention run that deleted anything. */
static void catalog(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	json_object *cat = NULL;
	for (size_t i = 0; i < n && !cat; i++)
		if (v[i].has_status && v[i].is_primary && v[i].doc)
			cat = op_json_at(v[i].doc, "backupCatalog");
	if (!json_object_is_type(cat, json_type_object))
		return;
	struct rc_status *w = &r->want;
	const char *frp = op_json_key_str(cat, "firstRecoverabilityPoint");
	if (frp && api_time_parse(frp, &(int64_t){ 0 }) == 0) {
		free(w->first_recoverability_point);
		w->first_recoverability_point = op_strdup(frp);
	}
	const char *last = op_json_key_str(cat, "lastSuccessfulBackup");
	if (last && api_time_parse(last, &(int64_t){ 0 }) == 0 &&
	    (!w->last_successful_backup || strcmp(last, w->last_successful_backup) > 0)) {
		free(w->last_successful_backup);
		w->last_successful_backup = op_strdup(last);
	}
	json_object *ret = op_json_at(cat, "retention");
	const char *at = op_json_key_str(ret, "at");
	if (!at || !rc_note_report(r->ctl, r->key, "retention", at))
		return;
	json_object *ids = op_json_at(ret, "deleted");
	const char *txt = ids ? json_object_to_json_string_ext(ids, JSON_C_TO_STRING_PLAIN) : "[]";
	int64_t wals = 0;
	if (op_json_key_i64(ret, "walsDeleted", &wals) < 0)
		wals = 0;
	rc_event(r, "Normal", "RetentionPolicyApplied", "%.64s: deleted backups %.1024s and %lld "
		 "WAL files they alone needed", op_json_key_str(ret, "policy") ?
		 op_json_key_str(ret, "policy") : "retention policy", txt, (long long)wals);
}

int rc_backups_step(struct rc_run *r, const struct rc_instance *v, size_t n, json_object *list)
{
	int ret = 0;
	for (size_t i = 0; i < json_object_array_length(list) && ret == 0; i++) {
		json_object *b = json_object_array_get_idx(list, i);
		if (op_json_at(b, "metadata.deletionTimestamp"))
			continue;
		enum api_backup_phase ph = api_backup_phase_parse(op_json_str_at(b, "status.phase"));
		if (ph == API_BACKUP_PHASE_NONE || ph == API_BACKUP_PHASE_PENDING)
			ret = r->ca.cert_pem ? start(r, v, n, b) : 0;
		else if (api_backup_phase_in_progress(ph))
			ret = poll(r, v, n, b);
	}
	summarise(r, list);
	catalog(r, v, n);
	return ret;
}
