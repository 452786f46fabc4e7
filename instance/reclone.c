/* instance/reclone.c - a former primary that pg_rewind cannot bring back is
 * cloned again from the primary (docs/internals/failover.md, "Rejoin").
 *
 * pg_rewind reads the target's own WAL from the last checkpoint before the
 * divergence; a former primary that kept writing and checkpointing after
 * another instance was promoted may have recycled it, and then pg_rewind fails
 * at every start. When pg_rewind exits non-zero while its source answers
 * (inst_rewind_next), `run` re-clones (inst_reclone):
 *
 *   1. PGDATA is renamed to its sibling PGDATA.rewind-failed (same volume: an
 *      atomic rename, no copy), then the WAL directory PGDATA/pg_wal links to
 *      (walStorage) to WALDIR.rewind-failed;
 *   2. pg_basebackup from the primary into PGDATA exactly as `join` does
 *      (inst_clone_standby: configuration, standby settings, and last the
 *      marker naming this pod);
 *   3. the moved-aside copies are removed.
 *
 * Nothing is deleted before the clone completed. A failed clone puts the old
 * data back at once. A manager killed midway finds the aside at its next
 * start (inst_reclone_leftover): a PGDATA whose marker names this pod is a
 * completed clone (the aside is removed); anything else (absent, empty, a
 * partial clone carrying the primary's marker) is removed and the old data put
 * back, so the next pg_rewind, and re-clone, start from it again. The volume
 * must hold both copies while the clone runs.
 *
 * Order keeps one invariant: a WAL aside exists only while the PGDATA aside
 * does (moved after it, put back and removed before it).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/names.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/log.h"

enum inst_rewind_next inst_rewind_next(int status, bool source_answers)
{
	if (status == 0)
		return INST_REWIND_DONE;
	/* pg_rewind ran and failed against a source that answers: it will fail
	 * the same way next time. A source that does not answer (or pg_rewind
	 * not run at all) is a retry at the next start, never a reason to throw
	 * the data away. */
	return status > 0 && source_answers ? INST_REWIND_RECLONE : INST_REWIND_FAIL;
}

enum inst_aside_action inst_aside_decide(bool aside_exists, bool pgdata_ours)
{
	if (!aside_exists)
		return INST_ASIDE_NONE;
	return pgdata_ours ? INST_ASIDE_DROP : INST_ASIDE_RESTORE;
}

static bool lexists(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0;
}

/* The absolute target of dir/pg_wal when it is a symlink; NULL (0) when it
 * is a directory or absent. */
static int wal_link(const char *dir, char **ret, struct op_err *err)
{
	_cleanup_free_ char *l = op_asprintf("%s/pg_wal", dir);
	char buf[PATH_MAX];
	ssize_t n = readlink(l, buf, sizeof(buf) - 1);
	*ret = NULL;
	if (n < 0)
		return errno == EINVAL || errno == ENOENT ? 0
							  : op_err_set(err, -errno, "readlink %s: %s", l,
								       strerror(errno));
	buf[n] = '\0';
	if (buf[0] != '/')
		return op_err_set(err, -EINVAL, "%s links to a relative path (%s)", l, buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	*ret = op_strdup(buf);
	return 0;
}

void inst_reclone_paths_done(struct inst_reclone_paths *rp)
{
	free(rp->pgdata);
	free(rp->aside);
	free(rp->waldir);
	free(rp->wal_aside);
	for (size_t i = 0; i < rp->n_tbs; i++) {
		free(rp->tbs[i]);
		free(rp->tbs_aside[i]);
	}
	free(rp->tbs);
	free(rp->tbs_aside);
	*rp = (struct inst_reclone_paths){ 0 };
}

int inst_reclone_paths(const char *pgdata, struct inst_reclone_paths *ret, struct op_err *err)
{
	size_t n = strlen(pgdata);
	while (n > 1 && pgdata[n - 1] == '/')
		n--;
	if (n <= 1)
		return op_err_set(err, -EINVAL, "PGDATA %s has no parent to move it aside in",
				  pgdata);
	struct inst_reclone_paths rp = { .pgdata = op_strndup(pgdata, n) };
	rp.aside = op_asprintf("%s" INST_ASIDE_SUFFIX, rp.pgdata);
	/* the moved-aside copy still links to the WAL directory: after a crash
	 * PGDATA may be absent or a partial clone */
	int r = wal_link(lexists(rp.aside) ? rp.aside : rp.pgdata, &rp.waldir, err);
	if (r) {
		inst_reclone_paths_done(&rp);
		return r;
	}
	if (rp.waldir)
		rp.wal_aside = op_asprintf("%s" INST_ASIDE_SUFFIX, rp.waldir);
	*ret = rp;
	return 0;
}

void inst_reclone_paths_tablespaces(struct inst_reclone_paths *rp, const struct inst_paths *p,
				    const struct api_cluster *c)
{
	size_t n = c ? c->spec.n_tablespaces : 0;
	rp->tbs = op_calloc(n + 1, sizeof(*rp->tbs));
	rp->tbs_aside = op_calloc(n + 1, sizeof(*rp->tbs_aside));
	for (size_t i = 0; i < n; i++) {
		const char *t = c->spec.tablespaces[i].name;
		if (!t || !*t || strchr(t, '/'))
			continue;
		rp->tbs[rp->n_tbs] = api_tablespace_location(p->tablespaces_dir, t);
		rp->tbs_aside[rp->n_tbs] = op_asprintf("%s" INST_ASIDE_SUFFIX, rp->tbs[rp->n_tbs]);
		rp->n_tbs++;
	}
}

static int move(const char *from, const char *to, struct op_err *err)
{
	if (rename(from, to) < 0)
		return op_err_set(err, -errno, "rename %s to %s: %s", from, to, strerror(errno));
	return 0;
}

int inst_reclone_move_aside(const struct inst_reclone_paths *rp, struct op_err *err)
{
	if (lexists(rp->aside) || (rp->wal_aside && lexists(rp->wal_aside)))
		return op_err_set(err, -EEXIST, "%s already exists (a re-clone in progress)",
				  lexists(rp->aside) ? rp->aside : rp->wal_aside);
	int r = move(rp->pgdata, rp->aside, err);
	if (r == 0 && rp->waldir && (r = move(rp->waldir, rp->wal_aside, err)) &&
	    rename(rp->aside, rp->pgdata) < 0)
		op_err_prefix(err, "%s left at %s: ", rp->pgdata, rp->aside);
	for (size_t i = 0; r == 0 && i < rp->n_tbs; i++) {
		if (!lexists(rp->tbs[i]))
			continue; /* not mounted: nothing to keep */
		r = move(rp->tbs[i], rp->tbs_aside[i], err);
		if (r == 0 && mkdir(rp->tbs[i], 0700) < 0)
			r = op_err_set(err, -errno, "mkdir %s: %s", rp->tbs[i], strerror(errno));
	}
	if (r && lexists(rp->aside)) { /* a tablespace could not move: everything back */
		struct op_err e = OP_ERR_INIT;
		if (inst_reclone_restore(rp, &e))
			op_err_prefix(err, "the old data was not put back (%s) after: ", e.msg);
	}
	return r;
}

int inst_reclone_restore(const struct inst_reclone_paths *rp, struct op_err *err)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < rp->n_tbs; i++) {
		if (!lexists(rp->tbs_aside[i]))
			continue; /* never moved: it holds the old data still */
		r = lexists(rp->tbs[i]) ? inst_remove_tree(rp->tbs[i], err) : 0;
		r = r ? r : move(rp->tbs_aside[i], rp->tbs[i], err);
	}
	if (r == 0 && rp->wal_aside && lexists(rp->wal_aside)) {
		r = inst_remove_tree(rp->waldir, err);
		r = r ? r : move(rp->wal_aside, rp->waldir, err);
	}
	r = r ? r : inst_remove_tree(rp->pgdata, err);
	return r ? r : move(rp->aside, rp->pgdata, err);
}

int inst_reclone_drop_aside(const struct inst_reclone_paths *rp, struct op_err *err)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < rp->n_tbs; i++)
		r = lexists(rp->tbs_aside[i]) ? inst_remove_tree(rp->tbs_aside[i], err) : 0;
	r = r ? r : rp->wal_aside ? inst_remove_tree(rp->wal_aside, err) : 0;
	return r ? r : inst_remove_tree(rp->aside, err);
}

int inst_reclone_leftover(const struct inst_paths *p, const struct api_cluster *c,
			  const char *pod, struct op_err *err)
{
	_cleanup_(inst_reclone_paths_done) struct inst_reclone_paths rp = { 0 };
	int r = inst_reclone_paths(p->pgdata, &rp, err);
	if (r)
		return r;
	inst_reclone_paths_tablespaces(&rp, p, c);
	bool aside = lexists(rp.aside);
	int ours = aside ? inst_marker_is(rp.pgdata, pod, err) : 0;
	if (ours < 0)
		return ours;
	switch (inst_aside_decide(aside, ours == 1)) {
	case INST_ASIDE_NONE:
		return 0;
	case INST_ASIDE_DROP:
		op_log_info("re-clone completed earlier: removing the old data moved aside", "aside",
			    rp.aside);
		return inst_reclone_drop_aside(&rp, err);
	case INST_ASIDE_RESTORE:
		op_log_warn("a re-clone did not complete: putting the old data back", "aside",
			    rp.aside, "pgdata", rp.pgdata);
		return inst_reclone_restore(&rp, err);
	}
	return 0;
}

int inst_reclone(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		 const char *host, unsigned port, struct op_err *err)
{
	_cleanup_(inst_reclone_paths_done) struct inst_reclone_paths rp = { 0 };
	int r = inst_reclone_paths(p->pgdata, &rp, err);
	if (r == 0)
		inst_reclone_paths_tablespaces(&rp, p, c);
	r = r ? r : inst_reclone_move_aside(&rp, err);
	if (r)
		return r;
	struct inst_paths cp = *p;
	cp.waldir = rp.waldir; /* the clone's WAL goes where the old WAL was */
	r = inst_clone_standby(&cp, c, pod, host, port, err);
	if (r) {
		struct op_err e = OP_ERR_INIT;
		if (inst_reclone_restore(&rp, &e))
			op_err_prefix(err, "the old data was not put back (%s) after: ", e.msg);
		return r;
	}
	struct op_err e = OP_ERR_INIT;
	if (inst_reclone_drop_aside(&rp, &e)) /* the next start removes it */
		op_log_warn("re-cloned, but the old data moved aside was not removed", "error",
			    e.msg);
	return 0;
}
