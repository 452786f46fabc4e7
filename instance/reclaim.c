/* instance/reclaim.c - a retried bootstrap starts from a clean PGDATA.
 *
 * init and join write PGDATA/pgop-bootstrapped (the pod name) once they
 * completed, and run writes it when an instance starts, so the marker names
 * every instance that ever ran as part of the cluster. A PGDATA without it
 * (or with another pod's, copied by pg_basebackup from the primary) holds
 * the leftovers of a failed init or join attempt (initdb done, then killed):
 * the next attempt removes them instead of failing with EEXIST forever. A
 * PGDATA whose marker names this pod is never touched.
 */
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/log.h"

#define MARKER "pgop-bootstrapped"

int inst_marker_write(const char *pgdata, const char *pod, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/" MARKER, pgdata);
	_cleanup_free_ char *body = op_asprintf("%s\n", pod);
	int r = inst_write_if_changed(path, body, strlen(body), 0600, err);
	return r < 0 ? r : 0;
}

/* 1 when the marker names pod, 0 when absent or another pod's. */
static int marker_is(const char *pgdata, const char *pod, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/" MARKER, pgdata);
	if (!inst_path_exists(path))
		return 0;
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(1024);
	int r = inst_read_file(path, b.max, &b, err);
	if (r)
		return r;
	const char *s = op_buf_str(&b);
	size_t n = strcspn(s, "\r\n");
	return n == strlen(pod) && strncmp(s, pod, n) == 0;
}

/* 1 empty (or absent), 0 not empty. */
static int dir_empty(const char *dir, struct op_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 1 : op_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	int empty = 1;
	struct dirent *e;
	while (empty && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	return empty;
}

static int rm_errno; /* first failure of rm_one (nftw has no user data) */
static char rm_path[256];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (ftw->level == 0)
		return 0; /* the directory itself stays (it may be a mount point) */
	if (remove(path) < 0 && errno != ENOENT && !rm_errno) {
		rm_errno = errno;
		snprintf(rm_path, sizeof(rm_path), "%s", path);
	}
	return 0;
}

/* Removes everything under dir (symlinks removed, never followed; other
 * file systems not entered). */
static int empty_dir(const char *dir, struct op_err *err)
{
	rm_errno = 0;
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return op_err_set(err, -errno, "remove the contents of %s: %s", dir,
				  strerror(errno));
	if (rm_errno)
		return op_err_set(err, -rm_errno, "remove %s: %s", rm_path, strerror(rm_errno));
	return 0;
}

int inst_pgdata_reclaim(const struct inst_paths *p, const char *pod, struct op_err *err)
{
	int r = dir_empty(p->pgdata, err);
	if (r < 0)
		return r;
	int wal_empty = p->waldir ? dir_empty(p->waldir, err) : 1;
	if (wal_empty < 0)
		return wal_empty;
	if (r == 1 && wal_empty == 1)
		return 0;
	int own = r == 1 ? 0 : marker_is(p->pgdata, pod, err);
	if (own < 0)
		return own;
	if (own)
		return op_err_set(err, -EEXIST,
				  "%s already holds the data of %s (%s): it is never removed",
				  p->pgdata, pod, MARKER);
	op_log_warn("removing the leftovers of a failed bootstrap attempt", "pgdata", p->pgdata,
		    "pod", pod);
	r = empty_dir(p->pgdata, err);
	if (r == 0 && p->waldir)
		r = empty_dir(p->waldir, err);
	return r;
}
