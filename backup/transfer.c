/* backup/transfer.c - one WAL file up (compressed through an unlinked temp
 * file, then one PUT of a known size) or down (GET streamed through the
 * decoder into a temp file renamed into place), and small file helpers. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/internal.h"
#include "support/alloc.h"

/* Compressed WAL can be a little larger than the WAL (incompressible data). */
#define BK_STORED_MAX (BK_WAL_MAX_BYTES + BK_WAL_MAX_BYTES / 64 + 1024 * 1024)

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
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

int bk_write_file(const char *path, const void *data, size_t len, struct op_err *err)
{
	_cleanup_free_ char *tmp = op_asprintf("%s.tmp-%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	int rc = write_all(fd, data, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		return op_err_set(err, rc, "%s: %s", path, strerror(-rc));
	}
	return 0;
}

int bk_sink_to_fd(void *ud, const void *buf, size_t len)
{
	return write_all(*(int *)ud, buf, len);
}

static ssize_t read_fd(void *ud, void *buf, size_t len)
{
	ssize_t n;
	do
		n = read(*(int *)ud, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* An unlinked read-write file in dir (O_TMPFILE, or mkstemp + unlink). */
static int tmpfile_in(const char *dir, struct op_err *err)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : op_err_set(err, -errno, "temp file in %s: %s", dir, strerror(errno));
	_cleanup_free_ char *t = op_asprintf("%s/.pgop-wal-XXXXXX", dir);
	fd = mkostemp(t, O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "temp file in %s: %s", dir, strerror(errno));
	unlink(t);
	return fd;
}

/* in (size bytes) compressed into a temp file; *ret_fd at offset 0. */
static int compress_to_tmp(int in, enum bk_compression comp, const char *tmpdir, int *ret_fd,
			   uint64_t *ret_size, struct op_err *err)
{
	int out = tmpfile_in(tmpdir, err);
	if (out < 0)
		return out;
	struct bk_codec *c = NULL;
	int rc = bk_codec_new(comp, false, BK_STORED_MAX, bk_sink_to_fd, &out, &c, err);
	enum { CHUNK = BK_GZ_CHUNK }; /* one member's input per read: 16 reads a segment */
	_cleanup_free_ char *buf = op_malloc(CHUNK);
	while (rc == 0) {
		ssize_t n = read_fd(&in, buf, CHUNK);
		if (n < 0)
			rc = op_err_set(err, (int)n, "reading the WAL file: %s", strerror((int)-n));
		else if (n == 0)
			break;
		else
			rc = bk_codec_write(c, buf, (size_t)n, err);
	}
	if (rc == 0)
		rc = bk_codec_finish(c, err);
	if (rc == 0) {
		*ret_size = bk_codec_out_bytes(c);
		if (lseek(out, 0, SEEK_SET) < 0)
			rc = op_err_set(err, -errno, "temp file: %s", strerror(errno));
	}
	bk_codec_free(c);
	if (rc < 0) {
		close(out);
		return rc;
	}
	*ret_fd = out;
	return 0;
}

void bk_wal_upload_done(struct bk_wal_upload *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	op_buf_done(&u->key);
}

int bk_wal_prepare(const struct bk_config *cfg, const char *path, const char *tmpdir,
		   struct bk_wal_upload *ret, struct op_err *err)
{
	*ret = (struct bk_wal_upload){ .key = OP_BUF_INIT(OS_KEY_MAX), .fd = -1 };
	_cleanup_free_ char *copy = op_strdup(path);
	const char *name = basename(copy);
	struct bk_wal_name wn;
	int rc = bk_wal_key(cfg, name, cfg->compression, &ret->key, err);
	if (rc == 0 && (rc = bk_wal_name_parse(name, &wn, err)) == 0)
		ret->kind = wn.kind == BK_WAL_HISTORY ? BK_PUT_HISTORY : BK_PUT_WAL;
	if (rc < 0)
		return rc;
	int in = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0) {
		rc = op_err_set(err, -errno, "%s: %s", path, strerror(errno));
	} else if ((uint64_t)st.st_size > BK_WAL_MAX_BYTES) {
		rc = op_err_set(err, -EFBIG, "%s: larger than 1 GiB, not a WAL file", path);
	} else if (cfg->compression == BK_COMP_NONE) {
		ret->fd = in;
		ret->size = (uint64_t)st.st_size;
		return 0;
	} else {
		rc = compress_to_tmp(in, cfg->compression, tmpdir, &ret->fd, &ret->size, err);
	}
	if (in >= 0)
		close(in);
	return rc;
}

int bk_wal_put(struct os_client *c, const struct bk_config *cfg, struct bk_wal_upload *u,
	       struct op_err *err)
{
	int rc = bk_client_set_attrs(c, cfg, u->kind, err);
	return rc < 0 ? rc : os_put_stream(c, op_buf_str(&u->key), read_fd, &u->fd, u->size, err);
}

int bk_upload_wal(struct os_client *c, const struct bk_config *cfg, const char *path,
		  const char *tmpdir, struct op_err *err)
{
	struct bk_wal_upload u;
	int rc = bk_wal_prepare(cfg, path, tmpdir, &u, err);
	if (rc == 0)
		rc = bk_wal_put(c, cfg, &u, err);
	bk_wal_upload_done(&u);
	return rc;
}

struct dl {
	struct bk_codec *codec;
	struct op_err err; /* the decoder's or the file's failure */
};

static int dl_write(void *ud, const void *buf, size_t len)
{
	struct dl *d = ud;
	return bk_codec_write(d->codec, buf, len, &d->err);
}

int bk_download(struct os_client *c, const char *key, enum bk_compression comp, const char *dest,
		uint64_t *ret_size, struct op_err *err)
{
	_cleanup_free_ char *tmp = op_asprintf("%s.pgop-tmp", dest);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	struct dl d = { .err = OP_ERR_INIT };
	int rc = bk_codec_new(comp, true, BK_WAL_MAX_BYTES, bk_sink_to_fd, &out, &d.codec, err);
	if (rc == 0) {
		struct op_err gerr = OP_ERR_INIT;
		rc = os_get(c, key, dl_write, &d, BK_STORED_MAX, NULL, &gerr);
		if (rc < 0 && op_err_isset(&d.err))
			op_err_set(err, d.err.code, "GET s3://%s/%s: %s", os_client_bucket(c), key,
				   d.err.msg);
		else if (rc < 0)
			op_err_set(err, rc, "%s", gerr.msg);
	}
	if (rc == 0 && (rc = bk_codec_finish(d.codec, err)) < 0)
		op_err_prefix(err, "GET s3://%s/%s", os_client_bucket(c), key);
	uint64_t size = d.codec ? bk_codec_out_bytes(d.codec) : 0;
	bk_codec_free(d.codec);
	if (close(out) < 0 && rc == 0)
		rc = op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	if (rc == 0 && rename(tmp, dest) < 0)
		rc = op_err_set(err, -errno, "rename to %s: %s", dest, strerror(errno));
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	if (ret_size)
		*ret_size = size;
	return 0;
}
