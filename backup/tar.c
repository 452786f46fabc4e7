/* backup/tar.c - PGDATA as the tar barman-cloud-backup writes (data.tar),
 * or a tablespace's directory as its <oid>.tar (opts.tablespace_prefix),
 * pulled through a compressor by the S3 upload: walk (fts) -> libarchive
 * (pax, through backup/dl_archive.c) -> bk_codec -> the reader's buffer.
 * Memory: one 64 KiB file chunk, libarchive's 10 KiB block, the
 * compressor's state and what one step of the walk produced. */
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/log.h"

#define CHUNK (64u * 1024)
#define PENDING_MAX (16u * 1024 * 1024) /* one step's output: far less in practice */

/* barman/postgres_plumbing.py PGDATA_EXCLUDE_LIST + EXCLUDE_LIST, matched as
 * barman/fs.py path_allowed() does. Its temporary-relation rule
 * ("**\/[0-9]*\/t[0-9]*_[0-9]*") is dead there (the translation escapes
 * '['); temp relations are left out here as pg_basebackup does instead
 * (is_temp_relation). */
static const char *const excludes[] = {
	"/pg_log/*",	   "/log/*",	       "/pg_xlog/*",
	"/pg_wal/*",	   "/global/pg_control", "pgsql_tmp*",
	"postgresql.auto.conf.tmp", "current_logfiles.tmp", "pg_internal.init",
	"postmaster.pid",  "postmaster.opts", "recovery.conf",
	"standby.signal",  "pg_dynshmem/*",   "pg_notify/*",
	"pg_replslot/*",   "pg_serial/*",     "pg_stat_tmp/*",
	"pg_snapshots/*",  "pg_subtrans/*",
};

/* barman's _translate_to_regexp: "**" any characters, "*" any but '/',
 * "?" any one, everything else literal; the whole path must match. */
static bool glob_match(const char *p, const char *s)
{
	if (!*p)
		return !*s;
	if (p[0] == '*' && p[1] == '*') {
		for (;; s++) {
			if (glob_match(p + 2, s))
				return true;
			if (!*s)
				return false;
		}
	}
	if (*p == '*') {
		for (;; s++) {
			if (glob_match(p + 1, s))
				return true;
			if (!*s || *s == '/')
				return false;
		}
	}
	if (!*s || (*p != '?' && *p != *s))
		return false;
	return glob_match(p + 1, s + 1);
}

/* barman's _match_path for one rule: '/' anchors, else any suffix after a
 * '/' may match too ("**\/" + rule). */
static bool rule_match(const char *rule, const char *path)
{
	if (rule[0] == '/')
		return glob_match(rule + 1, path);
	if (glob_match(rule, path))
		return true;
	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/'))
		if (glob_match(rule, s + 1))
			return true;
	return false;
}

static bool digits_only(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* pg_basebackup's looks_like_temp_rel_name in a database directory:
 * t<digits>_<digits>[_fsm|_vm|_init][.<digits>]. */
static bool is_temp_relation(const char *path)
{
	const char *base = strrchr(path, '/');
	if (!base || base == path)
		return false;
	const char *dir = base - 1;
	while (dir > path && dir[-1] != '/')
		dir--;
	base++;
	if (!digits_only(dir, (size_t)(base - 1 - dir)) || base[0] != 't')
		return false;
	size_t n = strspn(base + 1, "0123456789");
	const char *p = base + 1 + n;
	if (!n || *p != '_')
		return false;
	n = strspn(++p, "0123456789");
	if (!n)
		return false;
	p += n;
	if (!strncmp(p, "_fsm", 4) || !strncmp(p, "_init", 5))
		p += p[1] == 'f' ? 4 : 5;
	else if (!strncmp(p, "_vm", 3))
		p += 3;
	if (*p == '.' && digits_only(p + 1, strlen(p + 1)))
		return true;
	return *p == '\0';
}

static bool excluded(const char *path)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(excludes); i++)
		if (rule_match(excludes[i], path))
			return true;
	return is_temp_relation(path);
}

/* ST_PART_END: a part's tar is closed; bk_tar_stream_next_part goes on in
 * `resume` with a new one. */
enum tar_state { ST_WALK, ST_FILE, ST_CONTROL, ST_LABEL, ST_CLOSE, ST_PART_END, ST_DONE };

struct bk_tar_stream {
	struct bk_tar_opts opts; /* strings borrowed */
	FTS *fts;                /* owned */
	size_t root_len;
	struct archive *a;       /* owned */
	struct bk_codec *codec;  /* owned */
	struct op_buf pending;   /* compressed bytes not read yet, from pend_off */
	size_t pend_off;
	enum tar_state state, after_file; /* after_file: ST_FILE's next state */
	enum tar_state resume;   /* ST_PART_END's next state */
	uint64_t part_start;     /* stats.stored_bytes when the current part began */
	int fd; /* the file being written, -1 */
	uint64_t remaining;
	char name[4096];
	char *chunk; /* owned, CHUNK bytes */
	struct stat root_st;
	struct bk_tar_stats stats;
	int rc;
	struct op_err err;
};

static int fail(struct bk_tar_stream *s, int rc)
{
	if (s->rc == 0)
		s->rc = rc;
	return rc;
}

static int fail_archive(struct bk_tar_stream *s, const char *what)
{
	op_err_set(&s->err, -EIO, "tar %s: %s", what, archive_error_string(s->a));
	return fail(s, -EIO);
}

static int codec_sink(void *ud, const void *buf, size_t len)
{
	struct bk_tar_stream *s = ud;
	s->stats.stored_bytes += len;
	return op_buf_add(&s->pending, buf, len);
}

static la_ssize_t archive_out(struct archive *a, void *ud, const void *buf, size_t len)
{
	(void)a;
	struct bk_tar_stream *s = ud;
	s->stats.tar_bytes += len;
	int rc = bk_codec_write(s->codec, buf, len, &s->err);
	if (rc < 0) {
		fail(s, rc);
		return -1;
	}
	return (la_ssize_t)len;
}

static int write_header(struct bk_tar_stream *s, const char *name, unsigned type, mode_t perm,
			int64_t size, const struct stat *st, const char *link)
{
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return fail_archive(s, "entry");
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm & 07777);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, st ? st->st_mtime : time(NULL), 0);
	archive_entry_set_uid(e, st ? st->st_uid : s->root_st.st_uid);
	archive_entry_set_gid(e, st ? st->st_gid : s->root_st.st_gid);
	if (link)
		archive_entry_set_symlink(e, link);
	int rc = archive_write_header(s->a, e);
	archive_entry_free(e);
	if (rc < ARCHIVE_WARN)
		return fail_archive(s, name);
	return s->rc;
}

/* Opens path and writes its header; ST_FILE then copies it. 1 when it
 * vanished (skipped). */
static int add_file(struct bk_tar_stream *s, const char *path, const char *name,
		    enum tar_state after)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		op_err_set(&s->err, -e, "%s: %s", path, strerror(e));
		return fail(s, -e);
	}
	int rc = write_header(s, name, AE_IFREG, st.st_mode, st.st_size, &st, NULL);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	s->fd = fd, s->remaining = (uint64_t)st.st_size;
	s->stats.files++;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->state = ST_FILE, s->after_file = after;
	return 0;
}

/* One chunk of the current file; past its end (it shrank) zeros. */
static int step_file(struct bk_tar_stream *s)
{
	size_t want = s->remaining < CHUNK ? (size_t)s->remaining : CHUNK;
	ssize_t n = want ? read(s->fd, s->chunk, want) : 0;
	if (n < 0 && errno != EINTR) {
		op_err_set(&s->err, -errno, "%s: read: %s", s->name, strerror(errno));
		return fail(s, -errno);
	}
	if (n <= 0 && want) { /* truncated while we read: pad, WAL replay repairs it */
		memset(s->chunk, 0, want);
		n = (ssize_t)want;
	} else {
		s->stats.data_bytes += (uint64_t)n;
	}
	if (n > 0 && archive_write_data(s->a, s->chunk, (size_t)n) != n)
		return s->rc ? s->rc : fail_archive(s, s->name);
	s->remaining -= (uint64_t)n;
	if (s->remaining)
		return s->rc;
	close(s->fd);
	s->fd = -1;
	if (archive_write_finish_entry(s->a) < ARCHIVE_WARN)
		return fail_archive(s, s->name);
	s->state = s->after_file;
	return s->rc;
}

/* The entry name barman gives fts entry e: "." for the root, "./x" for a
 * file at the top (os.path.join(".", x)), "a" for a directory there (its
 * os.walk relpath), "a/b" below. */
static void entry_name(struct bk_tar_stream *s, const FTSENT *e, char *out, size_t n)
{
	if (e->fts_level == 0)
		snprintf(out, n, ".");
	else if (e->fts_level == 1 && e->fts_info != FTS_D)
		snprintf(out, n, "./%s", e->fts_name);
	else
		snprintf(out, n, "%s", e->fts_path + s->root_len + 1);
}

/* The path matched against the exclusions: barman's relpath (no "./"). */
static const char *match_name(const char *name)
{
	return name[0] == '.' && name[1] == '/' ? name + 2 : name;
}

static int add_symlink(struct bk_tar_stream *s, FTSENT *e, const char *name)
{
	struct stat target;
	if (e->fts_info == FTS_SL && stat(e->fts_accpath, &target) == 0 && S_ISDIR(target.st_mode)) {
		if (e->fts_level != 1 || strcmp(e->fts_name, "pg_wal"))
			return 1; /* os.walk: a link to a directory is no file and not followed */
		s->stats.dirs++;
		return write_header(s, "pg_wal", AE_IFDIR, 0700, 0, e->fts_statp, NULL);
	}
	char link[4096];
	ssize_t n = readlink(e->fts_accpath, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT ? 1 : (op_err_set(&s->err, -errno, "%s: readlink: %s", name,
							 strerror(errno)), fail(s, -errno));
	link[n] = 0;
	s->stats.symlinks++;
	return write_header(s, name, AE_IFLNK, 0777, 0, e->fts_statp, link);
}

/* A tablespace's tar: 0 to go on with e, 1 to leave it out (a top
 * directory not of this server's version is not walked into). */
static int tablespace_filter(struct bk_tar_stream *s, FTSENT *e)
{
	const char *prefix = s->opts.tablespace_prefix;
	if (e->fts_level == 0) /* barman excludes "." (its rule "/ *"); errors go on */
		return e->fts_info == FTS_D;
	if (e->fts_level > 1)
		return 0;
	if (e->fts_info == FTS_D && !strncmp(e->fts_name, prefix, strlen(prefix)))
		return 0;
	if (e->fts_info == FTS_D)
		fts_set(s->fts, e, FTS_SKIP);
	return 1;
}

static int step_entry(struct bk_tar_stream *s, FTSENT *e)
{
	char name[4096];
	if (s->opts.tablespace_prefix && e->fts_info != FTS_DP && tablespace_filter(s, e))
		return 0;
	entry_name(s, e, name, sizeof(name));
	bool skip_dir_files = e->fts_parent && e->fts_parent->fts_number;
	switch (e->fts_info) {
	case FTS_D:
		if (e->fts_level > 0 && excluded(match_name(name))) {
			e->fts_number = 1; /* barman: the directory and its files, not subdirs */
			return 0;
		}
		s->stats.dirs++;
		return write_header(s, name, AE_IFDIR, e->fts_statp->st_mode, 0, e->fts_statp, NULL);
	case FTS_F:
		if (skip_dir_files || excluded(match_name(name)))
			return 0;
		return add_file(s, e->fts_accpath, name, ST_WALK) == 1 ? (s->stats.skipped++, 0) : s->rc;
	case FTS_SL:
	case FTS_SLNONE:
		if (skip_dir_files || excluded(match_name(name)))
			return 0;
		return add_symlink(s, e, name) == 1 ? (s->stats.skipped++, 0) : s->rc;
	case FTS_DP:
		return 0;
	case FTS_DNR:
	case FTS_ERR:
	case FTS_NS:
		if (e->fts_errno == ENOENT) {
			s->stats.skipped++;
			return 0;
		}
		op_err_set(&s->err, -e->fts_errno, "%s: %s", e->fts_path, strerror(e->fts_errno));
		return fail(s, -e->fts_errno);
	default: /* sockets, devices, cycles: not PostgreSQL's */
		s->stats.skipped++;
		return 0;
	}
}

/* ./backup_label as barman's add_fileobj: mode 0644, PGDATA's owner. */
static int write_label(struct bk_tar_stream *s)
{
	size_t len = strlen(s->opts.backup_label);
	int rc = write_header(s, "backup_label", AE_IFREG, 0644, (int64_t)len, NULL, NULL);
	if (rc < 0)
		return rc;
	if (len && archive_write_data(s->a, s->opts.backup_label, len) != (la_ssize_t)len)
		return s->rc ? s->rc : fail_archive(s, "backup_label");
	s->stats.files++;
	return archive_write_finish_entry(s->a) < ARCHIVE_WARN ? fail_archive(s, "backup_label")
							       : s->rc;
}

/* Closes the current part's tar (its end blocks, the compressor's end)
 * when it has passed max_archive_size and an entry is about to be added:
 * 1 when it did, the next part then starting in the state it interrupted. */
static int end_part_if_full(struct bk_tar_stream *s)
{
	uint64_t max = s->opts.max_archive_size ? s->opts.max_archive_size
						: BK_TAR_MAX_ARCHIVE_DEFAULT;
	if (s->stats.stored_bytes - s->part_start <= max)
		return 0;
	s->resume = s->state;
	s->state = ST_PART_END;
	if (archive_write_close(s->a) < ARCHIVE_WARN)
		return s->rc ? s->rc : fail_archive(s, "close");
	int rc = s->rc ? s->rc : fail(s, bk_codec_finish(s->codec, &s->err));
	return rc < 0 ? rc : 1;
}

static int step(struct bk_tar_stream *s)
{
	char path[4096];
	/* before each entry: the walk's next, pg_control, the label (when there
	 * is one); a tablespace's walk that ends right after a split leaves an
	 * empty last part (a valid tar) */
	if (s->state == ST_WALK || s->state == ST_CONTROL ||
	    (s->state == ST_LABEL && (s->opts.label_fn || s->opts.backup_label))) {
		int rc = end_part_if_full(s);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	switch (s->state) {
	case ST_WALK: {
		errno = 0;
		FTSENT *e = fts_read(s->fts);
		if (e)
			return step_entry(s, e);
		if (errno) {
			op_err_set(&s->err, -errno, "%s: walk: %s", s->opts.pgdata, strerror(errno));
			return fail(s, -errno);
		}
		s->state = s->opts.tablespace_prefix ? ST_CLOSE : ST_CONTROL;
		return 0;
	}
	case ST_FILE:
		return step_file(s);
	case ST_CONTROL: /* barman adds pg_control after everything else */
		snprintf(path, sizeof(path), "%s/global/pg_control", s->opts.pgdata);
		if (add_file(s, path, "global/pg_control", ST_LABEL) == 1) {
			op_err_set(&s->err, -ENOENT, "%s: no such file: not a PGDATA", path);
			return fail(s, -ENOENT);
		}
		return s->rc;
	case ST_LABEL:
		s->state = ST_CLOSE;
		if (s->opts.label_fn) { /* pg_backup_stop: the label exists only now */
			int rc = s->opts.label_fn(s->opts.label_ud, &s->opts.backup_label, &s->err);
			if (rc < 0)
				return fail(s, rc);
		}
		if (!s->opts.backup_label)
			return 0;
		return write_label(s);
	case ST_CLOSE:
		s->state = ST_DONE;
		if (archive_write_close(s->a) < ARCHIVE_WARN)
			return s->rc ? s->rc : fail_archive(s, "close");
		return s->rc ? s->rc : fail(s, bk_codec_finish(s->codec, &s->err));
	case ST_PART_END:
	case ST_DONE:
		return 0;
	}
	return -EINVAL;
}

static int by_name(const FTSENT **a, const FTSENT **b)
{
	return strcmp((*a)->fts_name, (*b)->fts_name);
}

/* A new tar writer and compressor for the next part (the first included). */
static int open_part(struct bk_tar_stream *s, struct op_err *err)
{
	int rc = bk_codec_new_tar(s->opts.compression, UINT64_MAX, codec_sink, s, &s->codec, err);
	if (rc < 0)
		return rc;
	if ((rc = op_dl_load(&bk_dl_archive, err)) < 0)
		return rc;
	s->part_start = s->stats.stored_bytes;
	s->stats.parts++;
	s->a = archive_write_new();
	if (!s->a)
		return op_err_set(err, -ENOMEM, "libarchive: cannot make a writer");
	if (archive_write_set_format_pax_restricted(s->a) < ARCHIVE_WARN ||
	    archive_write_open(s->a, s, NULL, archive_out, NULL) < ARCHIVE_WARN)
		return op_err_set(err, -EIO, "libarchive: %s", archive_error_string(s->a));
	return 0;
}

static int stream_open(struct bk_tar_stream *s, struct op_err *err)
{
	char *roots[] = { (char *)s->opts.pgdata, NULL };
	if (stat(s->opts.pgdata, &s->root_st) < 0 || !S_ISDIR(s->root_st.st_mode))
		return op_err_set(err, -ENOTDIR, "%s: not a directory", s->opts.pgdata);
	/* FTS_COMFOLLOW: a PGDATA that is itself a link is followed, as barman does */
	s->fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_COMFOLLOW, by_name);
	if (!s->fts)
		return op_err_set(err, -errno, "%s: %s", s->opts.pgdata, strerror(errno));
	return open_part(s, err);
}

int bk_tar_stream_new(const struct bk_tar_opts *opts, struct bk_tar_stream **ret,
		      struct op_err *err)
{
	if (opts->compression == BK_COMP_XZ || opts->compression == BK_COMP_ZSTD ||
	    opts->compression == BK_COMP_SNAPPY)
		return op_err_set(err, -ENOTSUP, "base backup tars: %s is not supported "
				  "(none, gzip, bzip2, lz4)", bk_compression_name(opts->compression));
	struct bk_tar_stream *s = op_calloc(1, sizeof(*s));
	s->opts = *opts;
	s->fd = -1;
	s->root_len = strlen(opts->pgdata);
	while (s->root_len > 1 && opts->pgdata[s->root_len - 1] == '/')
		s->root_len--;
	s->pending = OP_BUF_INIT(PENDING_MAX);
	s->chunk = op_malloc(CHUNK);
	int rc = stream_open(s, err);
	if (rc < 0) {
		bk_tar_stream_free(s);
		return rc;
	}
	*ret = s;
	return 0;
}

ssize_t bk_tar_stream_read(void *ud, void *buf, size_t len)
{
	struct bk_tar_stream *s = ud;
	if (s->rc == 0 && s->opts.cancel && atomic_load(s->opts.cancel)) {
		op_err_set(&s->err, -ECANCELED, "tar of %s: cancelled", s->opts.pgdata);
		fail(s, -ECANCELED);
	}
	while (s->rc == 0 && s->pend_off == s->pending.len && s->state != ST_DONE &&
	       s->state != ST_PART_END) {
		op_buf_reset(&s->pending);
		s->pend_off = 0;
		int rc = step(s);
		if (rc < 0)
			fail(s, rc);
	}
	if (s->rc < 0)
		return s->rc;
	size_t n = s->pending.len - s->pend_off;
	if (n > len)
		n = len;
	memcpy(buf, s->pending.data + s->pend_off, n);
	s->pend_off += n;
	return (ssize_t)n;
}

bool bk_tar_stream_part_ended(const struct bk_tar_stream *s)
{
	return s->rc == 0 && s->state == ST_PART_END && s->pend_off == s->pending.len;
}

int bk_tar_stream_next_part(struct bk_tar_stream *s, struct op_err *err)
{
	if (!bk_tar_stream_part_ended(s))
		return op_err_set(err, -EINVAL, "tar of %s: no part ended", s->opts.pgdata);
	(void)archive_write_free(s->a); /* closed by end_part_if_full */
	s->a = NULL;
	bk_codec_free(s->codec);
	s->codec = NULL;
	int rc = open_part(s, err);
	if (rc < 0)
		return fail(s, rc);
	s->state = s->resume;
	return 0;
}

int bk_tar_stream_finish(struct bk_tar_stream *s, struct bk_tar_stats *ret, struct op_err *err)
{
	if (s->rc < 0) {
		if (op_err_isset(&s->err))
			return op_err_set(err, s->rc, "%s", s->err.msg);
		return op_err_set(err, s->rc, "tar of %s: %s", s->opts.pgdata, strerror(-s->rc));
	}
	if (s->state != ST_DONE || s->pend_off != s->pending.len)
		return op_err_set(err, -EINVAL, "tar of %s: not read to its end", s->opts.pgdata);
	if (ret)
		*ret = s->stats;
	return 0;
}

void bk_tar_stream_free(struct bk_tar_stream *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->fts)
		fts_close(s->fts);
	if (s->a)
		(void)archive_write_free(s->a); /* after a failure: must not flush into the codec */
	bk_codec_free(s->codec);
	op_buf_done(&s->pending);
	free(s->chunk);
	free(s);
}

size_t bk_tar_part_size(unsigned jobs)
{
	size_t part = BK_TAR_UPLOAD_MEM / ((size_t)(jobs ? jobs : 1) + 1);
	return part > BK_TAR_PART_DEFAULT ? BK_TAR_PART_DEFAULT
	       : part < BK_TAR_PART_FLOOR ? BK_TAR_PART_FLOOR
					  : part;
}

/* The tar stream s to key with jobs clients of cfg (one per upload thread). */
static int upload_stream(const struct bk_config *cfg, const struct bk_secrets *sec,
			 const char *key, struct bk_tar_stream *s, const struct bk_tar_opts *opts,
			 struct op_err *err)
{
	unsigned jobs = opts->jobs ? opts->jobs : 1;
	if (jobs > BK_MAX_PARALLEL)
		return op_err_set(err, -EINVAL, "base backup: jobs %u past %d", jobs, BK_MAX_PARALLEL);
	struct os_client **cs = op_calloc(jobs, sizeof(*cs));
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < jobs; i++)
		if ((rc = bk_client_new_data(cfg, sec, &cs[i], err)) == 0)
			rc = bk_client_set_attrs(cs[i], cfg, BK_PUT_DATA, err);
	if (rc == 0) {
		size_t part = opts->part_size ? opts->part_size : bk_tar_part_size(jobs);
		rc = os_put_from_reader_jobs(cs, jobs, key, bk_tar_stream_read, s, part, NULL, err);
	}
	for (unsigned i = 0; i < jobs; i++)
		os_client_free(cs[i]);
	free(cs);
	return rc;
}

/* Each part of the tar stream s to base/<backup_id>/<base>[_NNNN].tar[suffix],
 * one after the other. */
static int upload_parts(const struct bk_config *cfg, const struct bk_secrets *sec,
			const char *backup_id, const char *base, struct bk_tar_stream *s,
			const struct bk_tar_opts *opts, struct op_err *err)
{
	int rc = 0;
	for (unsigned part = 0; rc == 0; part++) {
		struct op_buf name = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		struct op_buf key = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		rc = bk_backup_tar_part_name(base, part, opts->compression, &name, err);
		if (rc == 0)
			rc = bk_backup_key(cfg, backup_id, op_buf_str(&name), &key, err);
		if (rc == 0) {
			if (part > 0)
				op_log_info("base backup: the tar goes on in a new part", "object",
					    op_buf_str(&key));
			rc = upload_stream(cfg, sec, op_buf_str(&key), s, opts, err);
		}
		op_buf_done(&key);
		op_buf_done(&name);
		if (rc < 0 || !bk_tar_stream_part_ended(s))
			break;
		rc = bk_tar_stream_next_part(s, err);
	}
	return rc;
}

/* The tar of opts to base/<backup_id>/<base>.tar[suffix] (and its parts). */
static int upload_tar(const struct bk_config *cfg, const char *backup_id, const char *base,
		      const struct bk_tar_opts *opts, struct bk_tar_stats *ret, struct op_err *err)
{
	struct op_buf name = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct bk_secrets sec = { 0 };
	struct bk_tar_stream *s = NULL;
	int rc = bk_backup_tar_name(base, opts->compression, &name, err); /* xz, zstd refused */
	if (rc == 0)
		rc = bk_secrets_load(cfg, &sec, err);
	if (rc == 0)
		rc = bk_tar_stream_new(opts, &s, err);
	if (rc == 0) {
		struct op_err put_err = OP_ERR_INIT;
		rc = upload_parts(cfg, &sec, backup_id, base, s, opts, &put_err);
		int trc = bk_tar_stream_finish(s, ret, err); /* the walk's own failure first */
		if (rc < 0 && trc == 0)
			op_err_set(err, rc, "%s", put_err.msg);
		rc = rc < 0 ? rc : trc;
	}
	bk_tar_stream_free(s);
	bk_secrets_done(&sec);
	op_buf_done(&name);
	return rc;
}

int bk_upload_pgdata_tar(const struct bk_config *cfg, const char *backup_id,
			 const struct bk_tar_opts *opts, struct bk_tar_stats *ret,
			 struct op_err *err)
{
	if (opts->tablespace_prefix)
		return op_err_set(err, -EINVAL, "data.tar: a tablespace prefix is set");
	return upload_tar(cfg, backup_id, "data", opts, ret, err);
}

int bk_upload_tablespace_tar(const struct bk_config *cfg, const char *backup_id, uint32_t oid,
			     const struct bk_tar_opts *opts, struct bk_tar_stats *ret,
			     struct op_err *err)
{
	char base[16];
	if (!opts->tablespace_prefix || !*opts->tablespace_prefix || oid == 0)
		return op_err_set(err, -EINVAL, "tablespace tar: no directory prefix or oid 0");
	snprintf(base, sizeof(base), "%u", oid);
	return upload_tar(cfg, backup_id, base, opts, ret, err);
}

void bk_tablespace_prefix(int server_version_num, char ret[16])
{
	snprintf(ret, 16, "PG_%d_", server_version_num / 10000);
}

int bk_backup_info_upload(const struct bk_config *cfg, const char *backup_id,
			  const struct bk_backup_info *bi, struct op_err *err)
{
	struct op_buf key = OP_BUF_INIT(OP_BUF_MAX_SMALL), text = OP_BUF_INIT(BK_BACKUP_INFO_MAX);
	struct bk_secrets sec = { 0 };
	struct os_client *c = NULL;
	int rc = bk_backup_key(cfg, backup_id, BK_BACKUP_INFO_NAME, &key, err);
	if (rc == 0)
		rc = bk_backup_info_render(bi, &text, err);
	if (rc == 0)
		rc = bk_secrets_load(cfg, &sec, err);
	if (rc == 0)
		rc = bk_client_new_data(cfg, &sec, &c, err);
	if (rc == 0)
		rc = bk_client_set_attrs(c, cfg, BK_PUT_DATA, err);
	if (rc == 0)
		rc = os_put(c, op_buf_str(&key), text.data, text.len, err);
	os_client_free(c);
	bk_secrets_done(&sec);
	op_buf_done(&text);
	op_buf_done(&key);
	return rc;
}
