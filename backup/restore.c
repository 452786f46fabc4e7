/* backup/restore.c - restore_command, as barman-cloud-wal-restore does it
 * (cloud.py CloudWalDownloader): one listing finds the stored object
 * (any compression suffix; X.partial serves a request for X), and with
 * maxParallel > 1 the next maxParallel - 1 segments of the same hash
 * directory are fetched in parallel into <stateDir>/wal-spool/ (named
 * without suffix nor .partial); a later request is served from there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"

struct fetch {
	char key[OS_KEY_MAX + 1];
	char name[BK_WAL_NAME_MAX + 1]; /* the WAL name, compression suffix dropped */
	enum bk_compression comp;
	char *dest; /* owned */
	struct os_client *client; /* owned */
	int rc;
	struct op_err err;
	pthread_t th;
	bool started;
};

struct found {
	const char *want; /* borrowed: the requested name */
	size_t max;       /* entries wanted: the request + prefetches */
	size_t n;
	struct fetch *v;  /* owned, max entries */
};

static int found_entry(void *ud, const struct os_list_entry *e)
{
	struct found *f = ud;
	const char *slash = strrchr(e->key, '/');
	char name[BK_WAL_NAME_MAX + 1];
	enum bk_compression comp;
	struct bk_wal_name w;
	if (e->is_prefix || strlen(e->key) > OS_KEY_MAX ||
	    bk_wal_stored_parse(slash ? slash + 1 : e->key, name, &comp) < 0 ||
	    bk_wal_name_parse(name, &w, NULL) < 0)
		return 0;
	size_t wl = strlen(f->want);
	bool is_req = strcmp(name, f->want) == 0 ||
		      (strncmp(name, f->want, wl) == 0 && strcmp(name + wl, ".partial") == 0);
	if (f->n == 0 && !is_req)
		return 0; /* before the requested file */
	if (f->n > 0 && (is_req || (w.kind != BK_WAL_SEGMENT && w.kind != BK_WAL_PARTIAL)))
		return 0; /* another copy of it, a .backup file */
	struct fetch *x = &f->v[f->n++];
	strcpy(x->key, e->key);
	snprintf(x->name, sizeof(x->name), "%.24s", name); /* .partial dropped */
	x->comp = comp;
	return f->n == f->max ? 1 : 0;
}

/* Moves src to dest (a streamed copy + unlink across file systems). */
static int move_file(const char *src, const char *dest, struct op_err *err)
{
	if (rename(src, dest) == 0)
		return 0;
	if (errno != EXDEV)
		return op_err_set(err, -errno, "rename %s to %s: %s", src, dest, strerror(errno));
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return op_err_set(err, -errno, "%s: %s", src, strerror(errno));
	struct bk_codec *copy = NULL; /* BK_COMP_NONE: a capped pass-through */
	int out = -1;
	_cleanup_free_ char *tmp = op_asprintf("%s.pgop-tmp", dest);
	int rc = bk_codec_new(BK_COMP_NONE, true, BK_WAL_MAX_BYTES, bk_sink_to_fd, &out, &copy, err);
	if (rc == 0 && (out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		rc = op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	char buf[16384];
	for (ssize_t n = 1; rc == 0 && n > 0;) {
		n = read(in, buf, sizeof(buf));
		if (n < 0 && errno != EINTR)
			rc = op_err_set(err, -errno, "%s: %s", src, strerror(errno));
		else if (n > 0)
			rc = bk_codec_write(copy, buf, (size_t)n, err);
	}
	bk_codec_free(copy);
	close(in);
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	if (rc == 0 && rename(tmp, dest) < 0)
		rc = op_err_set(err, -errno, "rename to %s: %s", dest, strerror(errno));
	if (rc < 0 && out >= 0)
		unlink(tmp);
	if (rc == 0)
		unlink(src);
	return rc;
}

/* Spool files older than want are of no use any more. */
static void spool_prune(const char *spool, const char *want)
{
	DIR *d = opendir(spool);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, want) >= 0)
			continue;
		_cleanup_free_ char *p = op_asprintf("%s/%s", spool, e->d_name);
		unlink(p);
	}
	closedir(d);
}

static void *fetch_run(void *ud)
{
	struct fetch *x = ud;
	x->rc = bk_download(x->client, x->key, x->comp, x->dest, NULL, &x->err);
	return NULL;
}

static int list_wanted(struct os_client *c, const struct bk_config *cfg, const char *walname,
		       struct found *f, struct op_err *err)
{
	struct bk_wal_name w;
	int rc = bk_wal_name_parse(walname, &w, err); /* checked by the caller already */
	if (rc < 0)
		return rc;
	struct op_buf prefix = OP_BUF_INIT(OS_KEY_MAX);
	rc = bk_wal_key(cfg, walname, BK_COMP_NONE, &prefix, err);
	if (rc < 0)
		return rc;
	if (f->max > 1) /* the whole hash directory */
		op_buf_truncate(&prefix, (size_t)(strrchr(prefix.data, '/') - prefix.data) + 1);
	struct os_list_opts lo = { .prefix = op_buf_str(&prefix), .max_entries = 100000 };
	rc = os_list(c, &lo, found_entry, f, err);
	if (rc >= 0 && f->n == 0)
		rc = op_err_set(err, -ENOENT, "WAL file %s not found under s3://%s/%s", walname,
				cfg->dest.bucket, op_buf_str(&prefix));
	op_buf_done(&prefix);
	return rc < 0 ? rc : 0;
}

static int fetch_all(const struct bk_config *cfg, struct found *f, struct op_err *err)
{
	struct bk_secrets sec;
	int rc = bk_secrets_load(cfg, &sec, err);
	for (size_t i = 1; i < f->n && rc == 0; i++)
		rc = bk_client_new(cfg, &sec, &f->v[i].client, err);
	bk_secrets_done(&sec);
	if (rc < 0)
		return rc;
	for (size_t i = 1; i < f->n; i++)
		f->v[i].started = pthread_create(&f->v[i].th, NULL, fetch_run, &f->v[i]) == 0;
	fetch_run(&f->v[0]);
	for (size_t i = 1; i < f->n; i++) {
		if (f->v[i].started)
			pthread_join(f->v[i].th, NULL);
		if (f->v[i].rc < 0)
			op_log_warn("WAL prefetch failed", "wal", f->v[i].name, "error", f->v[i].err.msg);
	}
	if (f->v[0].rc < 0)
		op_err_set(err, f->v[0].rc, "%s", f->v[0].err.msg);
	return f->v[0].rc;
}

int bk_wal_restore(const struct bk_config *cfg, const char *walname, const char *dest,
		   struct op_err *err)
{
	struct bk_wal_name w;
	int rc = bk_wal_name_parse(walname, &w, err);
	if (rc < 0)
		return rc;
	_cleanup_free_ char *spool = op_asprintf("%s/" BK_SPOOL_DIR, cfg->state_dir);
	_cleanup_free_ char *spooled = op_asprintf("%s/%s", spool, walname);
	if (access(spooled, F_OK) == 0)
		return move_file(spooled, dest, err);
	bool prefetch = cfg->max_parallel > 1 && w.kind == BK_WAL_SEGMENT;
	if (prefetch) {
		if ((rc = op_mkdir_p(spool, 0700, err)) < 0)
			return rc;
		spool_prune(spool, walname);
	}
	struct found f = { .want = walname, .max = prefetch ? cfg->max_parallel : 1 };
	f.v = op_calloc(f.max, sizeof(*f.v));
	struct bk_secrets sec;
	if ((rc = bk_secrets_load(cfg, &sec, err)) == 0) {
		rc = bk_client_new(cfg, &sec, &f.v[0].client, err);
		bk_secrets_done(&sec);
	}
	if (rc == 0)
		rc = list_wanted(f.v[0].client, cfg, walname, &f, err);
	if (rc == 0) {
		f.v[0].dest = op_strdup(dest);
		for (size_t i = 1; i < f.n; i++)
			f.v[i].dest = op_asprintf("%s/%s", spool, f.v[i].name);
		rc = fetch_all(cfg, &f, err);
	}
	for (size_t i = 0; i < f.max; i++) {
		os_client_free(f.v[i].client);
		free(f.v[i].dest);
	}
	free(f.v);
	return rc;
}
