/* backup/restore_base.c - a base backup's PGDATA tar extracted from the store,
 * streamed: a thread GETs base/<id>/data.tar[suffix] through the bk_codec
 * decoder into one end of a socket pair (send with MSG_NOSIGNAL: a reader
 * that stops early makes the GET fail with EPIPE, no signal), the caller's
 * thread reads the other end with libarchive's tar reader (pax, GNU and
 * ustar headers: what Python's tarfile and pgop's tar.c write) and writes
 * each entry itself under the target directory. Memory: the socket's
 * buffer, libarchive's block, one 64 KiB chunk, the decoder's state.
 * Tablespaces as barman-cloud-restore: each <oid>.tar[suffix] the same way
 * into the location the caller maps its name to (backup.info gives the
 * name), then <target>/pg_tblspc/<oid> linked to that location.
 *
 * Path safety (what a hostile tar must not do): entry names are relative,
 * without "..", resolved one component at a time with openat(O_NOFOLLOW |
 * O_DIRECTORY) from the target's descriptor, files opened O_NOFOLLOW, so
 * nothing is written through a symbolic link whatever the tar created
 * before; symbolic links must stay inside the target lexically, hard links
 * must name an entry inside it; devices and FIFOs are refused. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"

#define CHUNK (64u * 1024)
#define NAME_MAX_DEPTH 64

/* ---- names (pure) ---- */

/* Normalises a tar entry name into out (PATH_MAX): leading "./" and empty
 * or "." components dropped. 1 when it names the target itself, 0 for a
 * path below it, -EPERM for an absolute name or a ".." component. */
int bk_entry_path(const char *name, char *out, size_t outlen)
{
	if (!name || name[0] == '/')
		return -EPERM;
	size_t n = 0;
	int depth = 0;
	for (const char *p = name; *p;) {
		const char *e = strchrnul(p, '/');
		size_t l = (size_t)(e - p);
		if (l == 2 && p[0] == '.' && p[1] == '.')
			return -EPERM;
		if (l > 0 && !(l == 1 && p[0] == '.')) {
			if (n + l + 2 > outlen || ++depth > NAME_MAX_DEPTH)
				return -ENAMETOOLONG;
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, l);
			n += l;
		}
		p = *e ? e + 1 : e;
	}
	out[n] = '\0';
	return n == 0 ? 1 : 0;
}

/* Whether a symbolic link at path (normalised) with target stays inside the
 * directory: relative, and never above the top when resolved lexically. */
bool bk_link_inside(const char *path, const char *target)
{
	if (!target || !*target || target[0] == '/')
		return false;
	int depth = 0; /* directories of path above the link */
	for (const char *p = path; (p = strchr(p, '/')); p++)
		depth++;
	for (const char *p = target; *p;) {
		const char *e = strchrnul(p, '/');
		size_t l = (size_t)(e - p);
		if (l == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (l > 0 && !(l == 1 && p[0] == '.')) {
			depth++;
		}
		p = *e ? e + 1 : e;
	}
	return true;
}

int bk_tablespace_locate(const struct bk_tablespace *t, const struct bk_tablespace_target *v,
			 size_t n, const char **ret, struct op_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].name && t->name && !strcmp(v[i].name, t->name)) {
			*ret = v[i].location;
			return 0;
		}
	return op_err_set(err, -ENOENT, "the backup has tablespace %s (oid %u, was at %s) but the "
			  "restoring cluster has no tablespace of that name", t->name ? t->name : "?",
			  t->oid, t->location ? t->location : "?");
}

int bk_tablespace_rule_parse(char *rule, struct bk_tablespace_target *ret, struct op_err *err)
{
	char *colon = strchr(rule, ':');
	if (!colon || colon == rule || colon[1] != '/')
		return op_err_set(err, -EINVAL, "tablespace rule '%.80s': expected NAME:/LOCATION",
				  rule);
	*colon = '\0';
	*ret = (struct bk_tablespace_target){ .name = rule, .location = colon + 1 };
	return 0;
}

/* ---- writing entries ---- */

struct extract {
	int root;                      /* the target directory (owned) */
	const struct bk_restore_opts *o; /* borrowed */
	struct bk_restore_stats st;
	char *buf;                     /* owned: CHUNK */
};

/* The directory holding path's last component, opened without following a
 * link at any level (created 0700 when absent); *ret_name points into path. */
static int open_parent(struct extract *x, char *path, const char **ret_name, int *ret_fd)
{
	int fd = dup(x->root);
	if (fd < 0)
		return -errno;
	char *p = path;
	for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST) {
			int e = -errno;
			*slash = '/';
			close(fd);
			return e;
		}
		int nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = nfd < 0 ? (errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno) : 0;
		*slash = '/';
		close(fd);
		if (nfd < 0)
			return e;
		fd = nfd;
	}
	*ret_name = p;
	*ret_fd = fd;
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w, len -= (size_t)w;
	}
	return 0;
}

static int put_file(struct extract *x, struct archive *a, int dir, const char *name,
		    mode_t mode, int64_t size, struct op_err *err)
{
	uint64_t max_entry = x->o->max_entry ? x->o->max_entry : BK_RESTORE_ENTRY_MAX;
	uint64_t max_total = x->o->max_total ? x->o->max_total : BK_RESTORE_TOTAL_MAX;
	if (size < 0 || (uint64_t)size > max_entry)
		return op_err_set(err, -EFBIG, "%lld bytes: larger than the cap (%llu)",
				  (long long)size, (unsigned long long)max_entry);
	if (x->st.bytes + (uint64_t)size > max_total)
		return op_err_set(err, -EFBIG, "the restored files pass the cap (%llu bytes)",
				  (unsigned long long)max_total);
	/* O_NOFOLLOW: never through a link an earlier entry made */
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			(mode & 0777) | 0600);
	if (fd < 0)
		return op_err_set(err, errno == ELOOP ? -EPERM : -errno, "create: %s",
				  errno == ELOOP ? "a symbolic link is in the way" : strerror(errno));
	int rc = 0;
	uint64_t got = 0;
	for (;;) {
		la_ssize_t n = archive_read_data(a, x->buf, CHUNK);
		if (n < 0) {
			rc = op_err_set(err, -EBADMSG, "tar: %s", archive_error_string(a));
			break;
		}
		if (n == 0)
			break;
		if ((got += (uint64_t)n) > (uint64_t)size) {
			rc = op_err_set(err, -EBADMSG, "more data than its header says");
			break;
		}
		if ((rc = write_all(fd, x->buf, (size_t)n)) < 0) {
			op_err_set(err, rc, "write: %s", strerror(-rc));
			break;
		}
	}
	if (rc == 0 && fchmod(fd, mode & 0777) < 0)
		rc = op_err_set(err, -errno, "chmod: %s", strerror(errno));
	if (close(fd) < 0 && rc == 0)
		rc = op_err_set(err, -errno, "close: %s", strerror(errno));
	if (rc == 0) {
		x->st.files++;
		x->st.bytes += got;
		if ((x->st.bytes >> 30) != ((x->st.bytes - got) >> 30)) { /* each GiB */
			char b[24], f[24];
			snprintf(b, sizeof(b), "%llu", (unsigned long long)x->st.bytes);
			snprintf(f, sizeof(f), "%llu", (unsigned long long)x->st.files);
			op_log_info("restoring the base backup", "bytes", b, "files", f);
		}
	}
	return rc;
}

static int put_dir(struct extract *x, int dir, const char *name, mode_t mode, struct op_err *err)
{
	if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
		return op_err_set(err, -errno, "mkdir: %s", strerror(errno));
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -EPERM, "not a directory (a link or a file is in the way)");
	/* the owner keeps rwx: later entries go inside */
	int rc = fchmod(fd, (mode & 0777) | 0700) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return op_err_set(err, rc, "chmod: %s", strerror(-rc));
	x->st.dirs++;
	return 0;
}

static int put_link(struct extract *x, int dir, const char *path, const char *name,
		    struct archive_entry *e, bool hard, struct op_err *err)
{
	const char *target = hard ? archive_entry_hardlink(e) : archive_entry_symlink(e);
	char norm[PATH_MAX];
	if (hard) {
		if (!target || bk_entry_path(target, norm, sizeof(norm)) != 0)
			return op_err_set(err, -EPERM, "hard link to %s leaves the directory",
					  target ? target : "(none)");
		const char *tname;
		int tdir;
		int rc = open_parent(x, norm, &tname, &tdir);
		if (rc < 0)
			return op_err_set(err, rc, "hard link to %s: %s", target, strerror(-rc));
		/* no AT_SYMLINK_FOLLOW: a link to a symbolic link links the link */
		rc = linkat(tdir, tname, dir, name, 0) < 0 ? -errno : 0;
		close(tdir);
		if (rc < 0)
			return op_err_set(err, rc, "hard link to %s: %s", target, strerror(-rc));
		x->st.hardlinks++;
		return 0;
	}
	if (!bk_link_inside(path, target))
		return op_err_set(err, -EPERM, "symbolic link to %s leaves the directory",
				  target ? target : "(none)");
	if (symlinkat(target, dir, name) < 0)
		return op_err_set(err, -errno, "symlink: %s", strerror(errno));
	x->st.symlinks++;
	return 0;
}

/* One entry: its name checked, then written by its type. */
static int put_entry(struct extract *x, struct archive *a, struct archive_entry *e,
		     struct op_err *err)
{
	const char *raw = archive_entry_pathname(e);
	char path[PATH_MAX];
	int kind = bk_entry_path(raw, path, sizeof(path));
	mode_t type = archive_entry_filetype(e);
	const char *hl = archive_entry_hardlink(e);
	if (kind < 0)
		return op_err_set(err, -EPERM, "tar entry %s: %s", raw ? raw : "(no name)",
				  kind == -EPERM ? "absolute or with \"..\": refused"
						 : "name too long or too deep");
	if (kind == 1) /* "." or "./": the target itself */
		return type == AE_IFDIR ? 0
					: op_err_set(err, -EPERM, "tar entry %s: not a directory", raw);
	if (!hl && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return op_err_set(err, -EPERM, "tar entry %s: a device, FIFO or socket: refused",
				  raw);
	const char *name;
	int dir;
	int rc = open_parent(x, path, &name, &dir);
	if (rc < 0)
		return op_err_set(err, rc, "tar entry %s: %s", raw,
				  rc == -EPERM ? "a parent is a link or a file: refused"
					       : strerror(-rc));
	if (hl)
		rc = put_link(x, dir, path, name, e, true, err);
	else if (type == AE_IFLNK)
		rc = put_link(x, dir, path, name, e, false, err);
	else if (type == AE_IFDIR)
		rc = put_dir(x, dir, name, archive_entry_perm(e), err);
	else
		rc = put_file(x, a, dir, name, archive_entry_perm(e), archive_entry_size(e), err);
	close(dir);
	return rc < 0 ? op_err_prefix(err, "tar entry %s", raw) : 0;
}

int bk_restore_tar_fd(int fd, const struct bk_restore_opts *opts, struct bk_restore_stats *ret,
		      struct op_err *err)
{
	int rc = op_dl_load(&bk_dl_archive, err);
	if (rc < 0)
		return rc;
	struct extract x = { .o = opts };
	x.root = open(opts->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.root < 0)
		return op_err_set(err, -errno, "%s: %s", opts->target, strerror(errno));
	struct archive *a = archive_read_new();
	if (!a || archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_open_fd(a, fd, CHUNK) != ARCHIVE_OK) {
		rc = op_err_set(err, -EBADMSG, "tar: %s",
				a ? archive_error_string(a) : "libarchive: out of memory");
		goto out;
	}
	x.buf = op_malloc(CHUNK);
	for (uint64_t n = 0;; n++) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = op_err_set(err, -EBADMSG, "tar: %s", archive_error_string(a));
			break;
		}
		if (n == BK_RESTORE_ENTRIES_MAX) {
			rc = op_err_set(err, -EFBIG, "tar: more than %u entries", BK_RESTORE_ENTRIES_MAX);
			break;
		}
		if ((rc = put_entry(&x, a, e, err)) < 0)
			break;
	}
out:
	if (a)
		archive_read_free(a);
	free(x.buf);
	close(x.root);
	if (rc == 0 && ret)
		*ret = x.st;
	return rc;
}

/* ---- the download ---- */

struct producer {
	struct os_client *client; /* borrowed */
	const char *key;          /* borrowed */
	enum bk_compression comp;
	int fd;                   /* owned: the writing end, closed when done */
	uint64_t max;             /* decoded bytes at most */
	struct bk_codec *codec;
	uint64_t stored;
	int rc;
	struct op_err err;
};

static int sink_send(void *ud, const void *buf, size_t len)
{
	int fd = *(int *)ud;
	const char *p = buf;
	while (len > 0) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w, len -= (size_t)w;
	}
	return 0;
}

static int produce_write(void *ud, const void *buf, size_t len)
{
	struct producer *p = ud;
	p->stored += len;
	return bk_codec_write(p->codec, buf, len, &p->err);
}

static void *produce(void *ud)
{
	struct producer *p = ud;
	struct op_err gerr = OP_ERR_INIT;
	p->rc = bk_codec_new(p->comp, true, p->max, sink_send, &p->fd, &p->codec, &p->err);
	if (p->rc == 0) {
		p->rc = os_get(p->client, p->key, produce_write, p, UINT64_MAX, NULL, &gerr);
		if (p->rc < 0 && !op_err_isset(&p->err))
			op_err_set(&p->err, p->rc, "%s", gerr.msg);
	}
	if (p->rc == 0)
		p->rc = bk_codec_finish(p->codec, &p->err);
	bk_codec_free(p->codec);
	shutdown(p->fd, SHUT_WR);
	close(p->fd);
	return NULL;
}

/* Reads what is left of the stream (the tar's trailing blocks). */
static void drain(int fd)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
}

/* One tar object of a backup: data's or a tablespace's, one part of it. */
struct tar_object {
	uint32_t oid;  /* 0: data */
	unsigned part; /* 0: <base>.tar, n: <base>_%04u.tar */
	enum bk_compression comp;
	char name[48]; /* "16384_0001.tar.gz" */
};

/* Objects kept at most: data's and each tablespace's parts (backupinfo.c
 * caps backup.info's list at 4096 tablespaces; a part is 100 GB by default). */
#define TARS_MAX 65536u

struct objects {
	const char *dir; /* borrowed: "<base>/<id>/" */
	size_t dir_len;
	struct tar_object *tars; /* owned, n_tars of them, sorted by (oid, part) once listed */
	size_t n_tars, n_alloc;
	char other[64];  /* a tar that is neither data's nor a tablespace's, "" when none */
};

static const struct {
	const char *suffix;
	enum bk_compression comp;
} tar_suffixes[] = {
	{ ".tar", BK_COMP_NONE },   { ".tar.gz", BK_COMP_GZIP },
	{ ".tar.bz2", BK_COMP_BZIP2 }, { ".tar.lz4", BK_COMP_LZ4 },
	{ ".tar.snappy", BK_COMP_SNAPPY },
};

/* The compression of a name ending in a tar suffix from its first '.';
 * -EINVAL when it has none. */
static int tar_comp(const char *name, enum bk_compression *ret)
{
	const char *dot = strchr(name, '.');
	for (size_t i = 0; dot && i < OP_ARRAY_SIZE(tar_suffixes); i++)
		if (!strcmp(dot, tar_suffixes[i].suffix)) {
			*ret = tar_suffixes[i].comp;
			return 0;
		}
	return -EINVAL;
}

/* A decimal number of 1..max at p, n digits, no leading zero unless
 * zero_ok (a part's "_0001"). */
static int parse_number(const char *p, size_t n, bool zero_ok, unsigned long long max,
			unsigned long long *ret)
{
	if (n == 0 || n > 10 || (!zero_ok && p[0] == '0'))
		return -EINVAL;
	unsigned long long v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(p[i] - '0');
	if (v == 0 || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int bk_tar_object_parse(const char *name, uint32_t *ret_oid, unsigned *ret_part,
			enum bk_compression *ret_comp)
{
	unsigned long long oid = 0, part = 0;
	size_t n = strspn(name, "0123456789");
	if (n == 0 && !strncmp(name, "data", 4))
		n = 4;
	else if (parse_number(name, n, false, UINT32_MAX, &oid) < 0)
		return -EINVAL;
	const char *p = name + n;
	if (*p == '_') {
		size_t d = strspn(++p, "0123456789");
		if (d < 4 || parse_number(p, d, true, TARS_MAX, &part) < 0)
			return -EINVAL;
		p += d;
	}
	if (*p != '.' || strchr(name, '.') != p || tar_comp(name, ret_comp) < 0)
		return -EINVAL;
	*ret_oid = (uint32_t)oid;
	*ret_part = (unsigned)part;
	return 0;
}

static int object_entry(void *ud, const struct os_list_entry *e)
{
	struct objects *o = ud;
	if (e->is_prefix || strncmp(e->key, o->dir, o->dir_len) != 0)
		return 0;
	const char *name = e->key + o->dir_len;
	struct tar_object t;
	enum bk_compression comp;
	if (bk_tar_object_parse(name, &t.oid, &t.part, &t.comp) == 0 &&
	    strlen(name) < sizeof(t.name)) {
		if (o->n_tars == TARS_MAX)
			return -E2BIG;
		if (o->n_tars == o->n_alloc) {
			o->n_alloc = o->n_alloc ? o->n_alloc * 2 : 8;
			o->tars = op_realloc(o->tars, o->n_alloc * sizeof(*o->tars));
		}
		strcpy(t.name, name);
		o->tars[o->n_tars++] = t;
	} else if (tar_comp(name, &comp) == 0 && !o->other[0]) {
		snprintf(o->other, sizeof(o->other), "%s", name);
	}
	return 0;
}

static int by_oid_part(const void *a, const void *b)
{
	const struct tar_object *x = a, *y = b;
	if (x->oid != y->oid)
		return x->oid < y->oid ? -1 : 1;
	return x->part < y->part ? -1 : x->part > y->part;
}

/* The parts of oid's tar in o (sorted): *ret_first and *ret_n; 0 parts
 * when there is none. -EBADMSG when a part is missing or the parts'
 * compressions differ. */
static int tar_parts(const struct objects *o, uint32_t oid, const struct tar_object **ret_first,
		     size_t *ret_n, struct op_err *err)
{
	size_t i = 0, n = 0;
	while (i < o->n_tars && o->tars[i].oid < oid)
		i++;
	while (i + n < o->n_tars && o->tars[i + n].oid == oid)
		n++;
	const struct tar_object *t = o->tars + i;
	for (size_t k = 0; k < n; k++) {
		if (t[k].part != k)
			return op_err_set(err, -EBADMSG, "%s: part %zu of the tar is missing",
					  t[k].name, k);
		if (t[k].comp != t[0].comp)
			return op_err_set(err, -EBADMSG, "%s: compressed unlike %s", t[k].name,
					  t[0].name);
		if (t[k].comp == BK_COMP_SNAPPY)
			return op_err_set(err, -ENOTSUP, "%s: snappy is not supported", t[k].name);
	}
	*ret_first = t;
	*ret_n = n;
	return 0;
}

/* The tar objects of backup id, sorted by (oid, part); ret->tars owned by
 * the caller on success. Data's tar must be there, whole. */
static int find_tars(struct os_client *c, const struct bk_config *cfg, const char *id,
		     struct objects *ret, struct op_err *err)
{
	struct op_buf dir = OP_BUF_INIT(OS_KEY_MAX + 1);
	int rc = bk_backup_key(cfg, id, BK_BACKUP_INFO_NAME, &dir, err);
	if (rc < 0)
		return rc;
	op_buf_truncate(&dir, dir.len - strlen(BK_BACKUP_INFO_NAME));
	struct objects o = { .dir = op_buf_str(&dir), .dir_len = dir.len };
	struct os_list_opts lo = { .prefix = o.dir, .max_entries = 100000 };
	rc = os_list(c, &lo, object_entry, &o, err);
	if (rc == -E2BIG)
		rc = op_err_set(err, rc, "backup %s: more than %u tar objects", id, TARS_MAX);
	if (o.n_tars)
		qsort(o.tars, o.n_tars, sizeof(*o.tars), by_oid_part);
	const struct tar_object *data;
	size_t n_data = 0;
	if (rc >= 0 && (rc = tar_parts(&o, 0, &data, &n_data, err)) < 0)
		op_err_prefix(err, "backup %s", id);
	if (rc >= 0 && n_data == 0)
		rc = op_err_set(err, -ENOENT, "backup %s: no data.tar in s3://%s/%s", id,
				cfg->dest.bucket, o.dir);
	else if (rc >= 0 && o.other[0])
		rc = op_err_set(err, -ENOTSUP, "backup %s: %s is no tar barman-cloud-backup writes",
				id, o.other);
	op_buf_done(&dir);
	if (rc < 0) {
		free(o.tars);
		return rc;
	}
	o.dir = NULL;
	*ret = o;
	return 0;
}

/* A client for the whole download: a transfer may take hours; a stall of
 * 60 s below 1 KiB/s still ends it. */
static int restore_client(const struct bk_config *cfg, long timeout_ms, struct os_client **ret,
			  struct op_err *err)
{
	struct bk_secrets s;
	int rc = bk_secrets_load(cfg, &s, err);
	if (rc < 0)
		return rc;
	struct os_config oc = {
		.endpoint = cfg->endpoint_url, .region = cfg->region, .bucket = cfg->dest.bucket,
		.access_key = op_buf_str(&s.access), .secret_key = op_buf_str(&s.secret),
		.session_token = s.token.len ? op_buf_str(&s.token) : NULL,
		.ca_pem = s.ca.len ? s.ca.data : NULL, .ca_pem_len = s.ca.len,
		.transfer_timeout_ms = timeout_ms ? timeout_ms : BK_RESTORE_TIMEOUT_MS,
		.low_speed_seconds = cfg->data_read_timeout_s,
	};
	rc = os_client_new(&oc, ret, err);
	bk_secrets_done(&s);
	return rc;
}

/* GET in a thread into one end of a socket pair, extraction from the other. */
static int stream_extract(struct os_client *c, const char *key, enum bk_compression comp,
			  const struct bk_restore_opts *opts, struct bk_restore_stats *st,
			  struct op_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return op_err_set(err, -errno, "socketpair: %s", strerror(errno));
	uint64_t total = opts->max_total ? opts->max_total : BK_RESTORE_TOTAL_MAX;
	struct producer p = { .client = c, .key = key, .comp = comp, .fd = sv[1],
			      .max = total + total / 16 + (64u << 20), .err = OP_ERR_INIT };
	pthread_t th;
	int rc = pthread_create(&th, NULL, produce, &p);
	if (rc != 0) {
		close(sv[0]);
		close(sv[1]);
		return op_err_set(err, -rc, "thread: %s", strerror(rc));
	}
	struct op_err xerr = OP_ERR_INIT;
	rc = bk_restore_tar_fd(sv[0], opts, st, &xerr);
	if (rc == 0)
		drain(sv[0]);
	shutdown(sv[0], SHUT_RDWR); /* a producer still sending fails with EPIPE */
	pthread_join(th, NULL);
	close(sv[0]);
	st->stored_bytes = p.stored;
	/* the download's failure explains a truncated tar better than the tar does */
	if (p.rc < 0 && (rc == 0 || rc == -EBADMSG))
		return op_err_set(err, p.rc, "GET s3://%s/%s: %s", os_client_bucket(c), key,
				  p.err.msg);
	if (rc < 0)
		return op_err_set(err, rc, "%s", xerr.msg);
	return 0;
}

/* The backup's tablespaces: each object listed in backup.info, each one
 * located by name (err names what is missing), each location empty. */
static int plan_tablespaces(const struct objects *o, const struct bk_backup_info *bi,
			    const struct bk_restore_opts *opts, const char **locs,
			    struct op_err *err)
{
	for (size_t i = 0; i < o->n_tars; i++) {
		bool listed = o->tars[i].oid == 0;
		for (size_t j = 0; j < bi->n_tablespaces; j++)
			listed |= bi->tablespaces[j].oid == o->tars[i].oid;
		if (!listed)
			return op_err_set(err, -EBADMSG, "%s: no tablespace of oid %u in backup.info",
					  o->tars[i].name, o->tars[i].oid);
	}
	for (size_t j = 0; j < bi->n_tablespaces; j++) {
		const struct bk_tablespace *t = &bi->tablespaces[j];
		const struct tar_object *tars;
		size_t n;
		int rc = tar_parts(o, t->oid, &tars, &n, err);
		if (rc < 0)
			return op_err_prefix(err, "tablespace %s", t->name);
		if (n == 0)
			return op_err_set(err, -ENOENT, "tablespace %s (oid %u): no <oid>.tar",
					  t->name, t->oid);
		rc = bk_tablespace_locate(t, opts->tablespaces, opts->n_tablespaces, &locs[j], err);
		if (rc < 0)
			return rc;
		if (!locs[j] || locs[j][0] != '/')
			return op_err_set(err, -EINVAL, "tablespace %s: location %s is not absolute",
					  t->name, locs[j] ? locs[j] : "(none)");
		if ((rc = op_mkdir_p(locs[j], 0700, err)) < 0)
			return op_err_prefix(err, "tablespace %s", t->name);
		char first[256];
		if ((rc = op_dir_empty(locs[j], first, sizeof(first), err)) < 0)
			return op_err_prefix(err, "tablespace %s", t->name);
		if (rc == 0)
			return op_err_set(err, -ENOTEMPTY, "tablespace %s: %s: not empty (%s)",
					  t->name, locs[j], first);
	}
	return 0;
}

/* GETs and parses backup id's backup.info into *bi. */
static int fetch_info(struct os_client *c, const struct bk_config *cfg, const char *id,
		      struct bk_backup_info *bi, struct op_err *err)
{
	struct op_buf key = OP_BUF_INIT(OS_KEY_MAX + 1), text = OP_BUF_INIT(BK_BACKUP_INFO_MAX);
	int rc = bk_backup_key(cfg, id, BK_BACKUP_INFO_NAME, &key, err);
	if (rc == 0)
		rc = os_get_buf(c, op_buf_str(&key), &text, err);
	if (rc == 0 && (rc = bk_backup_info_parse(text.data ? text.data : "", text.len, bi,
						  err)) < 0)
		op_err_prefix(err, "backup %s: backup.info", id);
	op_buf_done(&text);
	op_buf_done(&key);
	return rc;
}

static void stats_add(struct bk_restore_stats *to, const struct bk_restore_stats *st)
{
	to->files += st->files;
	to->dirs += st->dirs;
	to->bytes += st->bytes;
	to->symlinks += st->symlinks;
	to->hardlinks += st->hardlinks;
	to->stored_bytes += st->stored_bytes;
}

/* What is left of the cap on restored bytes after used (never 0, which
 * would mean the default cap). */
static uint64_t cap_left(uint64_t total, uint64_t used)
{
	return used < total ? total - used : 1;
}

/* oid's tar, each of its parts in order, into opts->target; st adds them
 * up. The cap on the restored bytes counts them all. */
static int extract_parts(struct os_client *c, const struct bk_config *cfg, const char *id,
			 const struct objects *o, uint32_t oid, const struct bk_restore_opts *opts,
			 struct bk_restore_stats *st, struct op_err *err)
{
	const struct tar_object *t;
	size_t n;
	int rc = tar_parts(o, oid, &t, &n, err);
	uint64_t total = opts->max_total ? opts->max_total : BK_RESTORE_TOTAL_MAX;
	for (size_t k = 0; rc == 0 && k < n; k++) {
		struct op_buf key = OP_BUF_INIT(OS_KEY_MAX + 1);
		struct bk_restore_opts po = *opts;
		po.max_total = cap_left(total, st->bytes);
		struct bk_restore_stats ps = { 0 };
		rc = bk_backup_key(cfg, id, t[k].name, &key, err);
		if (rc == 0) {
			op_log_info("restoring a tar", "backup", id, "object", op_buf_str(&key),
				    "target", opts->target);
			rc = stream_extract(c, op_buf_str(&key), t[k].comp, &po, &ps, err);
		}
		op_buf_done(&key);
		if (rc == 0)
			stats_add(st, &ps);
	}
	return rc;
}

/* One tablespace: its tar into loc, then <pgdata>/pg_tblspc/<oid> -> loc. */
static int restore_tablespace(struct os_client *c, const struct bk_config *cfg, const char *id,
			      const struct objects *o, const struct bk_tablespace *t,
			      const char *loc, const struct bk_restore_opts *opts,
			      struct bk_restore_stats *st, struct op_err *err)
{
	struct bk_restore_opts to = *opts;
	to.target = loc;
	uint64_t total = opts->max_total ? opts->max_total : BK_RESTORE_TOTAL_MAX;
	to.max_total = cap_left(total, st->bytes);
	struct bk_restore_stats ts = { 0 };
	int rc = extract_parts(c, cfg, id, o, t->oid, &to, &ts, err);
	_cleanup_free_ char *dir = op_asprintf("%s/pg_tblspc", opts->target);
	_cleanup_free_ char *link = op_asprintf("%s/%u", dir, t->oid);
	if (rc == 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
		rc = op_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	if (rc == 0 && symlink(loc, link) < 0)
		rc = op_err_set(err, -errno, "%s -> %s: %s", link, loc, strerror(errno));
	if (rc < 0)
		return op_err_prefix(err, "tablespace %s", t->name);
	stats_add(st, &ts);
	st->tablespaces++;
	return 0;
}

static int restore_all(struct os_client *c, const struct bk_config *cfg, const char *id,
		       const struct objects *o, const struct bk_restore_opts *opts,
		       struct bk_restore_stats *st, struct op_err *err)
{
	struct bk_backup_info bi;
	bk_backup_info_init(&bi);
	int rc = fetch_info(c, cfg, id, &bi, err);
	_cleanup_free_ const char **locs = op_calloc(bi.n_tablespaces + 1, sizeof(*locs));
	if (rc == 0)
		rc = plan_tablespaces(o, &bi, opts, locs, err);
	if (rc == 0)
		rc = extract_parts(c, cfg, id, o, 0, opts, st, err);
	for (size_t j = 0; rc == 0 && j < bi.n_tablespaces; j++)
		rc = restore_tablespace(c, cfg, id, o, &bi.tablespaces[j], locs[j], opts, st, err);
	bk_backup_info_done(&bi);
	return rc;
}

int bk_restore_base(const struct bk_config *cfg, const char *id, const struct bk_restore_opts *opts,
		    struct bk_restore_stats *ret, struct op_err *err)
{
	struct os_client *c = NULL;
	int rc = restore_client(cfg, opts->timeout_ms, &c, err);
	struct objects o = { 0 };
	if (rc == 0)
		rc = find_tars(c, cfg, id, &o, err);
	struct bk_restore_stats st = { 0 };
	if (rc == 0)
		rc = restore_all(c, cfg, id, &o, opts, &st, err);
	if (rc == 0) {
		const struct tar_object *data;
		size_t n = 0;
		(void)tar_parts(&o, 0, &data, &n, NULL); /* checked by find_tars */
		snprintf(st.tar_name, sizeof(st.tar_name), "%s", n ? data->name : "");
		st.parts = (unsigned)n;
		if (ret)
			*ret = st;
	}
	free(o.tars);
	os_client_free(c);
	return rc;
}
