/* instance/files.c - atomic file writes, certificate copies and Secret files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"

bool inst_path_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int inst_write_file(const char *path, const char *data, size_t len, mode_t mode,
		    struct op_err *err)
{
	_cleanup_free_ char *tmp = op_asprintf("%s.pgop-tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return op_err_set(err, -errno, "open \"%s\": %s", tmp, strerror(errno));
	int r = 0;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = op_err_set(err, -errno, "write \"%s\": %s", tmp, strerror(errno));
			break;
		}
		off += (size_t)n;
	}
	if (r == 0 && fchmod(fd, mode) < 0)
		r = op_err_set(err, -errno, "chmod \"%s\": %s", tmp, strerror(errno));
	if (r == 0 && fsync(fd) < 0)
		r = op_err_set(err, -errno, "fsync \"%s\": %s", tmp, strerror(errno));
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = op_err_set(err, -errno, "rename to \"%s\": %s", path, strerror(errno));
	if (r)
		unlink(tmp);
	return r;
}

int inst_read_file(const char *path, size_t max, struct op_buf *out, struct op_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "open \"%s\": %s", path, strerror(errno));
	char chunk[8192];
	size_t total = 0;
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = op_err_set(err, -errno, "read \"%s\": %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > max || op_buf_add(out, chunk, (size_t)n)) {
			r = op_err_set(err, -EMSGSIZE, "\"%s\": larger than %zu bytes", path, max);
			break;
		}
	}
	close(fd);
	return r;
}

int inst_write_if_changed(const char *path, const char *data, size_t len, mode_t mode,
			  struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf cur = OP_BUF_INIT(OP_BUF_MAX_FILE);
	if (inst_read_file(path, OP_BUF_MAX_FILE, &cur, NULL) == 0 && cur.len == len &&
	    memcmp(op_buf_str(&cur), data, len) == 0)
		return 0;
	int r = inst_write_file(path, data, len, mode, err);
	return r ? r : 1;
}

/* source under certs_dir -> file under controller_dir/certificates */
static const struct {
	const char *src, *dst;
	bool optional;
} cert_files[] = {
	{ "server/tls.crt", "server.crt", false },
	{ "server/tls.key", "server.key", false },
	{ "ca/ca.crt", "client-ca.crt", false },
	{ "ca/ca.crt", "server-ca.crt", false },
	{ "replication/tls.crt", "streaming_replica.crt", true },
	{ "replication/tls.key", "streaming_replica.key", true },
};

int inst_sync_certificates(const struct inst_paths *p, struct op_err *err)
{
	_cleanup_free_ char *dir = op_asprintf("%s/certificates", p->controller_dir);
	int r = op_mkdir_p(dir, 0700, err);
	if (r)
		return r;
	int changed = 0;
	for (size_t i = 0; i < OP_ARRAY_SIZE(cert_files); i++) {
		_cleanup_free_ char *src = op_asprintf("%s/%s", p->certs_dir, cert_files[i].src);
		_cleanup_free_ char *dst = op_asprintf("%s/%s", dir, cert_files[i].dst);
		_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL * 4);
		r = inst_read_file(src, b.max, &b, cert_files[i].optional ? NULL : err);
		if (r == -ENOENT && cert_files[i].optional)
			continue;
		if (r)
			return r;
		r = inst_write_if_changed(dst, op_buf_str(&b), b.len, 0600, err);
		if (r < 0)
			return r;
		changed |= r;
	}
	return changed;
}

int inst_read_secret(const struct inst_paths *p, const char *secret, const char *key,
		     char **ret, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s/%s", p->secrets_dir, secret, key);
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = inst_read_file(path, b.max, &b, err);
	if (r)
		return r;
	size_t n = b.len;
	while (n && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r'))
		n--;
	*ret = op_strndup(op_buf_str(&b), n);
	return 0;
}

/* Copies src to dest through <dest>.tmp-<pid> (created exclusively, mode),
 * fsync, then rename; the temp file is removed on failure. */
static int copy_file_atomic(const char *src, const char *dest, mode_t mode, struct op_err *err)
{
	_cleanup_free_ char *tmp = op_asprintf("%s.tmp-%d", dest, (int)getpid());
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return op_err_set(err, -errno, "%s: %s", src, strerror(errno));
	int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		int r = op_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		close(in);
		return r;
	}
	char buf[65536];
	int e = 0; /* errno of the first failure */
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : 0;
			break;
		}
		for (ssize_t off = 0; off < n && !e;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				e = errno;
			else
				off += w;
		}
		if (e)
			break;
	}
	if (!e && (fchmod(out, mode) < 0 || fsync(out) < 0))
		e = errno;
	close(in);
	if (close(out) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, dest) < 0)
		e = errno;
	if (e) {
		unlink(tmp);
		return op_err_set(err, -e, "copy to %s failed: %s", dest, strerror(e));
	}
	return 0;
}

int inst_copy_self(const char *dest, struct op_err *err)
{
	return copy_file_atomic("/proc/self/exe", dest, 0755, err);
}
