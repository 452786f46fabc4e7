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
#include <stdbool.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"

#define MARKER "pgop-bootstrapped"

int inst_marker_write(const char *pgdata, const char *pod, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/" MARKER, pgdata);
	_cleanup_free_ char *body = op_asprintf("%s\n", pod);
	int r = inst_write_if_changed(path, body, strlen(body), 0600, err);
	return r < 0 ? r : 0;
}

int inst_marker_is(const char *pgdata, const char *pod, struct op_err *err)
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

/* rm_one's state (nftw has no user data; only the main thread removes) */
static int rm_errno; /* first failure */
static char rm_path[256];
static bool rm_keep_top;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (ftw->level == 0 && rm_keep_top)
		return 0; /* the directory itself stays (it may be a mount point) */
	if (remove(path) < 0 && errno != ENOENT && !rm_errno) {
		rm_errno = errno;
		snprintf(rm_path, sizeof(rm_path), "%s", path);
	}
	return 0;
}

/* Removes everything under dir, and dir too unless keep_top (symlinks
 * removed, never followed; other file systems not entered). */
static int remove_under(const char *dir, bool keep_top, struct op_err *err)
{
	rm_errno = 0;
	rm_keep_top = keep_top;
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return op_err_set(err, -errno, "remove %s%s: %s", keep_top ? "the contents of " : "",
				  dir, strerror(errno));
	if (rm_errno)
		return op_err_set(err, -rm_errno, "remove %s: %s", rm_path, strerror(rm_errno));
	return 0;
}

int inst_pgdata_reclaim(const struct inst_paths *p, const char *pod, struct op_err *err)
{
	int r = op_dir_empty(p->pgdata, NULL, 0, err);
	if (r < 0)
		return r;
	int wal_empty = p->waldir ? op_dir_empty(p->waldir, NULL, 0, err) : 1;
	if (wal_empty < 0)
		return wal_empty;
	if (r == 1 && wal_empty == 1)
		return 0;
	int own = r == 1 ? 0 : inst_marker_is(p->pgdata, pod, err);
	if (own < 0)
		return own;
	if (own)
		return op_err_set(err, -EEXIST,
				  "%s already holds the data of %s (%s): it is never removed",
				  p->pgdata, pod, MARKER);
	op_log_warn("removing the leftovers of a failed bootstrap attempt", "pgdata", p->pgdata,
		    "pod", pod);
	r = remove_under(p->pgdata, true, err);
	if (r == 0 && p->waldir)
		r = remove_under(p->waldir, true, err);
	return r;
}

int inst_remove_tree(const char *dir, struct op_err *err)
{
	return remove_under(dir, false, err);
}
