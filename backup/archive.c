/* backup/archive.c - archive_command: the requested WAL file, and with
 * maxParallel > 1 the next .ready ones in parallel (one thread and one
 * objstore client each). A file uploaded ahead is recorded as
 * <stateDir>/wal-archived/<name> holding its key, written only after the
 * upload succeeded; postgres's later call for it returns 0 at once. A
 * marker goes when postgres has renamed the .ready (to .done). */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"

struct job {
	const struct bk_config *cfg;
	struct os_client *client; /* owned */
	char *path;               /* owned: the WAL file */
	char *name;               /* borrowed from path */
	const char *tmpdir;       /* borrowed */
	struct bk_wal_upload up;  /* made ready (compressed) before its client exists: jobs[0] */
	bool prepared;
	int rc;
	struct op_err err;
	pthread_t th;
	bool started;
};

static void *job_run(void *ud)
{
	struct job *j = ud;
	if (!j->prepared)
		j->rc = bk_wal_prepare(j->cfg, j->path, j->tmpdir, &j->up, &j->err);
	j->prepared = true;
	if (j->rc == 0)
		j->rc = bk_wal_put(j->client, j->cfg, &j->up, &j->err);
	bk_wal_upload_done(&j->up);
	return NULL;
}

/* path when absolute, else PGDATA/path (archive_command runs in PGDATA). */
static char *resolve(const struct bk_config *cfg, const char *path)
{
	if (path[0] == '/' || !cfg->pgdata)
		return op_strdup(path);
	return op_asprintf("%s/%s", cfg->pgdata, path);
}

static bool marker_says(const char *markers, const char *name, const char *key)
{
	_cleanup_free_ char *p = op_asprintf("%s/%s", markers, name);
	struct op_buf b = OP_BUF_INIT(OS_KEY_MAX + 1);
	bool yes = bk_read_file(p, &b, NULL) == 0 && strcmp(op_buf_str(&b), key) == 0;
	op_buf_done(&b);
	return yes;
}

/* Drops the markers of files postgres no longer has .ready. */
static void markers_prune(const char *markers, const char *status)
{
	DIR *d = opendir(markers);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!bk_wal_name_valid(e->d_name))
			continue;
		_cleanup_free_ char *ready = op_asprintf("%s/%s.ready", status, e->d_name);
		if (access(ready, F_OK) < 0 && errno == ENOENT) {
			_cleanup_free_ char *m = op_asprintf("%s/%s", markers, e->d_name);
			unlink(m);
		}
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Up to max names of .ready files other than self with no marker, in WAL
 * order (owned array of owned strings; *ret_n of them). */
static char **ready_list(const char *status, const char *self, const char *markers, size_t max,
			 size_t *ret_n)
{
	size_t n = 0, cap = 16;
	char **v = op_calloc(cap, sizeof(*v));
	DIR *d = opendir(status);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 7 || strcmp(e->d_name + l - 6, ".ready") != 0 || l - 6 > BK_WAL_NAME_MAX)
			continue;
		char *name = op_strndup(e->d_name, l - 6);
		_cleanup_free_ char *m = op_asprintf("%s/%s", markers, name);
		if (!bk_wal_name_valid(name) || strcmp(name, self) == 0 || access(m, F_OK) == 0) {
			free(name);
			continue;
		}
		if (n == cap)
			v = op_realloc(v, (cap *= 2) * sizeof(*v));
		v[n++] = name;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = max; i < n; i++)
		free(v[i]);
	*ret_n = n < max ? n : max;
	return v;
}

/* Runs jobs[1..n) in threads and jobs[0] here (results in each job). */
static void run_jobs(struct job *jobs, size_t n)
{
	for (size_t i = 1; i < n; i++)
		jobs[i].started = pthread_create(&jobs[i].th, NULL, job_run, &jobs[i]) == 0;
	job_run(&jobs[0]);
	for (size_t i = 1; i < n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
		else
			job_run(&jobs[i]);
	}
}

/* After the parallel uploads: markers for the extras stored, warnings for the others. */
static void record_extras(const struct bk_config *cfg, struct job *jobs, size_t n,
			  const char *markers)
{
	for (size_t i = 1; i < n; i++) {
		if (jobs[i].rc < 0) {
			op_log_warn("WAL upload ahead failed (postgres will ask again)", "wal",
				    jobs[i].name, "error", jobs[i].err.msg);
			continue;
		}
		struct op_buf key = OP_BUF_INIT(OS_KEY_MAX);
		_cleanup_free_ char *m = op_asprintf("%s/%s", markers, jobs[i].name);
		struct op_err e = OP_ERR_INIT;
		if (bk_wal_key(cfg, jobs[i].name, cfg->compression, &key, &e) < 0 ||
		    bk_write_file(m, key.data, key.len, &e) < 0)
			op_log_warn("cannot record a WAL uploaded ahead", "wal", jobs[i].name,
				    "error", e.msg);
		op_buf_done(&key);
	}
}

/* The clients of the jobs and the destination's check, in a thread while the
 * requested file is compressed: loading libcurl and its libraries, and the
 * check's request, cost a call what they cost no more. */
struct clients {
	const struct bk_config *cfg;
	const struct bk_secrets *sec;
	struct job *jobs;
	size_t n;
	int rc;
	struct op_err err;
};

static void *clients_run(void *ud)
{
	struct clients *x = ud;
	for (size_t i = 0; i < x->n && x->rc == 0; i++)
		x->rc = bk_client_new(x->cfg, x->sec, &x->jobs[i].client, &x->err);
	if (x->rc == 0)
		x->rc = bk_check_archive(x->jobs[0].client, x->cfg, &x->err);
	return NULL;
}

static int archive_with(const struct bk_config *cfg, const struct bk_secrets *sec,
			struct job *jobs, size_t n, const char *markers, struct op_err *err)
{
	struct clients x = { .cfg = cfg, .sec = sec, .jobs = jobs, .n = n, .err = OP_ERR_INIT };
	pthread_t th;
	bool threaded = pthread_create(&th, NULL, clients_run, &x) == 0;
	if (!threaded)
		clients_run(&x);
	jobs[0].rc = bk_wal_prepare(cfg, jobs[0].path, jobs[0].tmpdir, &jobs[0].up, &jobs[0].err);
	jobs[0].prepared = true;
	if (threaded)
		pthread_join(th, NULL);
	if (x.rc < 0) { /* the store's refusal first: it says more than the file */
		bk_wal_upload_done(&jobs[0].up);
		return op_err_set(err, x.rc, "%s", x.err.msg);
	}
	run_jobs(jobs, n);
	record_extras(cfg, jobs, n, markers);
	if (jobs[0].rc < 0)
		op_err_set(err, jobs[0].rc, "%s", jobs[0].err.msg);
	return jobs[0].rc;
}

/* bk_wal_archive without recording its outcome. */
static int archive_run(const struct bk_config *cfg, const char *path, struct op_err *err)
{
	_cleanup_free_ char *full = resolve(cfg, path);
	_cleanup_free_ char *dcopy = op_strdup(full), *bcopy = op_strdup(full);
	const char *name = basename(bcopy);
	int rc = bk_wal_name_parse(name, NULL, err);
	if (rc < 0)
		return rc;
	_cleanup_free_ char *status = op_asprintf("%s/archive_status", dirname(dcopy));
	_cleanup_free_ char *markers = op_asprintf("%s/" BK_MARKERS_DIR, cfg->state_dir);
	if ((rc = op_mkdir_p(markers, 0700, err)) < 0)
		return rc;
	markers_prune(markers, status);
	struct op_buf key = OP_BUF_INIT(OS_KEY_MAX);
	if ((rc = bk_wal_key(cfg, name, cfg->compression, &key, err)) < 0)
		return rc;
	bool done = marker_says(markers, name, op_buf_str(&key));
	op_buf_done(&key);
	if (done)
		return 0; /* uploaded ahead by an earlier call */
	size_t n_extra = 0;
	char **extra = cfg->max_parallel > 1
			       ? ready_list(status, name, markers, cfg->max_parallel - 1, &n_extra)
			       : NULL;
	struct job *jobs = op_calloc(1 + n_extra, sizeof(*jobs));
	jobs[0] = (struct job){ .cfg = cfg, .path = op_strdup(full), .tmpdir = cfg->state_dir };
	for (size_t i = 0; i < n_extra; i++)
		jobs[1 + i] = (struct job){ .cfg = cfg, .tmpdir = cfg->state_dir,
					    .path = op_asprintf("%s/../%s", status, extra[i]) };
	for (size_t i = 0; i <= n_extra; i++)
		jobs[i].name = strrchr(jobs[i].path, '/') ? strrchr(jobs[i].path, '/') + 1 : jobs[i].path;
	struct bk_secrets sec;
	rc = bk_secrets_load(cfg, &sec, err);
	if (rc == 0) {
		rc = archive_with(cfg, &sec, jobs, 1 + n_extra, markers, err);
		bk_secrets_done(&sec);
	}
	for (size_t i = 0; i <= n_extra; i++) {
		os_client_free(jobs[i].client);
		free(jobs[i].path);
	}
	for (size_t i = 0; i < n_extra; i++)
		free(extra[i]);
	free(extra);
	free(jobs);
	return rc;
}

/* The outcome for the instance manager's status (BK_ARCHIVE_ERROR_FILE):
 * the error of a failed call, removed by a successful one. Best effort: a
 * state directory that cannot be written already failed the call. */
static void outcome_record(const struct bk_config *cfg, int rc, const struct op_err *err)
{
	_cleanup_free_ char *p = op_asprintf("%s/" BK_ARCHIVE_ERROR_FILE, cfg->state_dir);
	if (rc >= 0) {
		unlink(p);
		return;
	}
	const char *msg = err && err->msg[0] ? err->msg : "WAL archive failed";
	struct op_err e = OP_ERR_INIT;
	if (bk_write_file(p, msg, strlen(msg), &e) < 0)
		op_log_debug("archive outcome not recorded", "error", e.msg);
}

int bk_wal_archive(const struct bk_config *cfg, const char *path, struct op_err *err)
{
	int rc = archive_run(cfg, path, err);
	outcome_record(cfg, rc, err);
	return rc;
}

int bk_archive_error_read(const char *state_dir, char **ret)
{
	_cleanup_free_ char *p = op_asprintf("%s/" BK_ARCHIVE_ERROR_FILE, state_dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	char buf[OP_ERR_MSG_MAX];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	*ret = op_strdup(buf);
	return 1;
}
