/* instance/backupjob.c - base backups started over HTTP: POST /pg/backup
 * runs inst_backup_run (basebackup.c) in a background thread, one at a
 * time; GET /pg/backup answers the running or last one. The last status is
 * kept in <controller>/run/backup-state.json (mode 0600), so a restarted
 * instance manager still answers it; a backup that was running when the
 * process died is reported failed ("instance manager restarted").
 * Also the status's JSON (pure) and the name check. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "api/timestamp.h"
#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define STATE_MAX (64u * 1024)

/* ---- the status (pure) ---- */

#define SOFF(f) offsetof(struct inst_backup_status, f)
static const struct {
	const char *key;
	size_t off; /* of a char * */
} str_members[] = {
	{ "name", SOFF(name) },		    { "backupId", SOFF(backup_id) },
	{ "phase", SOFF(phase) },	    { "beginWal", SOFF(begin_wal) },
	{ "endWal", SOFF(end_wal) },	    { "beginLSN", SOFF(begin_lsn) },
	{ "endLSN", SOFF(end_lsn) },	    { "startedAt", SOFF(started_at) },
	{ "stoppedAt", SOFF(stopped_at) },  { "error", SOFF(error) },
	{ "destinationPath", SOFF(destination_path) }, { "serverName", SOFF(server_name) },
	{ "endpointURL", SOFF(endpoint_url) },
};

static char **member(struct inst_backup_status *s, size_t off)
{
	return (char **)(void *)((char *)s + off);
}

void inst_backup_status_done(struct inst_backup_status *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_members); i++)
		free(*member(s, str_members[i].off));
	free(s->pod_name);
	memset(s, 0, sizeof(*s));
}

int inst_backup_status_to_json(const struct inst_backup_status *s, struct op_buf *out)
{
	struct inst_backup_status *m = (struct inst_backup_status *)s; /* read only */
	json_object *o = op_jobj();
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_members); i++) {
		const char *v = *member(m, str_members[i].off);
		if (v)
			op_jsets(o, str_members[i].key, v);
	}
	if (s->pod_name)
		op_jsets(op_jchild(o, "instanceID"), "podName", s->pod_name);
	if (s->timeline)
		op_jset(o, "timeline", op_jint(s->timeline));
	if (s->size)
		op_jset(o, "size", op_jint(s->size));
	int r = op_buf_adds(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return r;
}

static int parse_members(json_object *root, struct inst_backup_status *s, struct op_err *err)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_members); i++) {
		json_object *v;
		if (!json_object_object_get_ex(root, str_members[i].key, &v))
			continue;
		if (!json_object_is_type(v, json_type_string))
			return op_err_set(err, -EINVAL, "backup status: %s: expected string",
					  str_members[i].key);
		*member(s, str_members[i].off) = op_strdup(json_object_get_string(v));
	}
	json_object *v;
	if (json_object_object_get_ex(root, "instanceID", &v)) {
		json_object *p;
		if (!json_object_is_type(v, json_type_object))
			return op_err_set(err, -EINVAL, "backup status: instanceID: expected object");
		if (json_object_object_get_ex(v, "podName", &p)) {
			if (!json_object_is_type(p, json_type_string))
				return op_err_set(err, -EINVAL, "backup status: podName: expected "
						  "string");
			s->pod_name = op_strdup(json_object_get_string(p));
		}
	}
	static const char *const ints[] = { "timeline", "size" };
	int64_t *dst[] = { &s->timeline, &s->size };
	for (size_t i = 0; i < OP_ARRAY_SIZE(ints); i++)
		if (json_object_object_get_ex(root, ints[i], &v) && op_json_to_i64(v, dst[i]) != 1)
			return op_err_set(err, -EINVAL, "backup status: %s: expected an integer",
					  ints[i]);
	if (!s->name || !s->phase)
		return op_err_set(err, -EINVAL, "backup status: name and phase are required");
	return 0;
}

int inst_backup_status_parse(const char *json, size_t len, struct inst_backup_status *ret,
			     struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *root = NULL;
	int r = op_json_parse(json, len, 8, &root, err);
	if (r < 0)
		return op_err_prefix(err, "backup status");
	if (!json_object_is_type(root, json_type_object))
		return op_err_set(err, -EINVAL, "backup status: expected a JSON object");
	struct inst_backup_status s = { 0 };
	r = parse_members(root, &s, err);
	if (r < 0) {
		inst_backup_status_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/* RFC 1123 labels of [a-z0-9-], not starting or ending with '-', joined by
 * '.', 253 bytes at most (Kubernetes' IsDNS1123Subdomain). */
bool inst_backup_name_valid(const char *name)
{
	if (!name)
		return false;
	size_t n = strlen(name);
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i], prev = i ? name[i - 1] : '.', next = name[i + 1];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (alnum)
			continue;
		if (c == '-' && prev != '.' && next && next != '.')
			continue;
		if (c == '.' && prev != '.' && prev != '-' && next && next != '-')
			continue;
		return false;
	}
	return name[0] != '.' && name[n - 1] != '.';
}

/* ---- the job ---- */

struct inst_backup_job {
	pthread_mutex_t lock;
	/* immutable after new */
	char *config_path, *state_path, *sockdir, *pod_name; /* owned */
	unsigned port;
	_Atomic bool cancel;
	/* guarded by lock */
	bool running, joinable;
	pthread_t thread;
	struct inst_backup_status last; /* name NULL: none yet */
	char *req_name, *req_id;        /* owned: the running request's */
};

/* A deep copy through the JSON (one encoding to keep right). */
static void status_copy(const struct inst_backup_status *s, struct inst_backup_status *ret)
{
	struct op_buf b = OP_BUF_INIT(STATE_MAX);
	memset(ret, 0, sizeof(*ret));
	if (inst_backup_status_to_json(s, &b) == 0 &&
	    inst_backup_status_parse(op_buf_str(&b), b.len, ret, NULL) < 0)
		memset(ret, 0, sizeof(*ret));
	op_buf_done(&b);
}

/* Under the lock: backup-state.json from j->last. */
static void persist(struct inst_backup_job *j)
{
	struct op_buf b = OP_BUF_INIT(STATE_MAX);
	struct op_err err = OP_ERR_INIT;
	if (inst_backup_status_to_json(&j->last, &b) < 0 ||
	    inst_write_file(j->state_path, op_buf_str(&b), b.len, 0600, &err) < 0)
		op_log_warn("base backup: state not saved", "file", j->state_path, "error",
			    err.msg[0] ? err.msg : "too large");
	op_buf_done(&b);
}

static void on_progress(void *ud, const struct inst_backup_status *s)
{
	struct inst_backup_job *j = ud;
	struct inst_backup_status copy;
	status_copy(s, &copy);
	if (!copy.name)
		return;
	pthread_mutex_lock(&j->lock);
	inst_backup_status_done(&j->last);
	j->last = copy;
	persist(j);
	pthread_mutex_unlock(&j->lock);
}

static void *job_main(void *arg)
{
	struct inst_backup_job *j = arg;
	struct inst_backup_opts o = { .config_path = j->config_path, .name = j->req_name,
				      .backup_id = j->req_id, .sockdir = j->sockdir,
				      .port = j->port, .pod_name = j->pod_name,
				      .cancel = &j->cancel, .progress = on_progress,
				      .progress_ud = j };
	struct inst_backup_status st;
	struct op_err err = OP_ERR_INIT;
	int r = inst_backup_run(&o, &st, &err); /* the last progress call saved st */
	if (r < 0)
		op_log_error("base backup failed", "backup", j->req_name, "id", st.backup_id,
			     "error", err.msg);
	else
		op_log_info("base backup completed", "backup", j->req_name, "id", st.backup_id,
			    "endWal", st.end_wal);
	inst_backup_status_done(&st);
	pthread_mutex_lock(&j->lock);
	j->running = false;
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* A status saved as running by a process that is gone: failed. */
static void load_state(struct inst_backup_job *j)
{
	struct op_buf b = OP_BUF_INIT(STATE_MAX);
	struct op_err err = OP_ERR_INIT;
	int r = inst_read_file(j->state_path, STATE_MAX, &b, &err);
	if (r == 0 && (r = inst_backup_status_parse(op_buf_str(&b), b.len, &j->last, &err)) < 0)
		op_log_warn("base backup: state unreadable, ignored", "file", j->state_path,
			    "error", err.msg);
	op_buf_done(&b);
	if (r < 0 || strcmp(j->last.phase, "running") != 0)
		return;
	free(j->last.phase);
	free(j->last.error);
	j->last.phase = op_strdup("failed");
	j->last.error = op_strdup("instance manager restarted");
	free(j->last.stopped_at);
	j->last.stopped_at = api_time_rfc3339(api_time_now_us() / 1000000);
	persist(j);
}

struct inst_backup_job *inst_backup_job_new(const struct inst_paths *p, const char *sockdir,
					    unsigned port, const char *pod_name)
{
	struct inst_backup_job *j = op_calloc(1, sizeof(*j));
	struct inst_paths paths = *p;
	inst_paths_default(&paths);
	pthread_mutex_init(&j->lock, NULL);
	j->config_path = inst_archive_config_path(&paths);
	j->state_path = op_asprintf("%s/run/%s", paths.controller_dir, INST_BACKUP_STATE_FILE);
	j->sockdir = op_strdup(sockdir);
	j->pod_name = pod_name ? op_strdup(pod_name) : NULL;
	j->port = port;
	atomic_init(&j->cancel, false);
	load_state(j);
	return j;
}

/* Under the lock, nothing running: the request becomes the running one. */
static int launch(struct inst_backup_job *j, const char *name, const char *id,
		  struct op_err *err)
{
	if (j->joinable) { /* the previous thread has returned (!running) */
		pthread_join(j->thread, NULL);
		j->joinable = false;
	}
	free(j->req_name);
	free(j->req_id);
	j->req_name = op_strdup(name);
	j->req_id = id ? op_strdup(id) : NULL;
	inst_backup_status_done(&j->last);
	j->last.name = op_strdup(name);
	j->last.backup_id = id ? op_strdup(id) : NULL;
	j->last.phase = op_strdup("running");
	j->last.started_at = api_time_rfc3339(api_time_now_us() / 1000000);
	j->last.pod_name = j->pod_name ? op_strdup(j->pod_name) : NULL;
	j->running = true;
	int r = pthread_create(&j->thread, NULL, job_main, j);
	if (r) {
		j->running = false;
		free(j->last.phase);
		j->last.phase = op_strdup("failed");
		j->last.error = op_strdup("cannot start a thread");
		persist(j);
		return op_err_set(err, -r, "base backup: cannot start a thread: %s", strerror(r));
	}
	j->joinable = true;
	persist(j);
	return 0;
}

int inst_backup_job_start(struct inst_backup_job *j, const char *name, const char *id,
			  struct op_err *err)
{
	if (!inst_backup_name_valid(name))
		return op_err_set(err, -EINVAL, "name: a Backup's name is required (DNS-1123 "
				  "subdomain, at most 253 characters)");
	if (id && !bk_backup_id_valid(id))
		return op_err_set(err, -EINVAL, "id: expected a backup id YYYYMMDDTHHMMSS");
	pthread_mutex_lock(&j->lock);
	int r = 0;
	if (j->last.name && strcmp(j->last.name, name) == 0) {
		r = 1; /* the same Backup again: its status */
	} else if (j->running) {
		r = op_err_set(err, -EBUSY, "backup %s is running", j->last.name);
	} else {
		struct bk_config cfg;
		r = bk_config_load(j->config_path, &cfg, err);
		if (r < 0)
			r = op_err_prefix(err, "WAL archiving is not configured, no object store "
					  "to back up to");
		else
			bk_config_done(&cfg);
		if (r == 0)
			r = launch(j, name, id, err);
	}
	pthread_mutex_unlock(&j->lock);
	return r;
}

int inst_backup_job_json(struct inst_backup_job *j, struct op_buf *out)
{
	pthread_mutex_lock(&j->lock);
	int r = j->last.name ? inst_backup_status_to_json(&j->last, out) : -ENOENT;
	pthread_mutex_unlock(&j->lock);
	return r;
}

void inst_backup_job_free(struct inst_backup_job *j)
{
	if (!j)
		return;
	atomic_store(&j->cancel, true);
	if (j->joinable)
		pthread_join(j->thread, NULL);
	inst_backup_status_done(&j->last);
	free(j->req_name);
	free(j->req_id);
	free(j->config_path);
	free(j->state_path);
	free(j->sockdir);
	free(j->pod_name);
	pthread_mutex_destroy(&j->lock);
	free(j);
}
