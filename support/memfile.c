/* support/memfile.c - secrets in sealed anonymous memory files (memfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support/memfile.h"

int op_memfile_open(struct op_memfile *m, const char *name, const void *data, size_t len,
		    struct op_err *err)
{
	if (len == 0 || len > OP_MEMFILE_MAX)
		return op_err_set(err, -EINVAL, "memory file %s: size %zu not in 1..%u", name, len,
				  OP_MEMFILE_MAX);
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return op_err_set(err, -errno, "memory file %s: memfd_create: %s", name,
				  strerror(errno));
	const char *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			return op_err_set(err, -e, "memory file %s: write: %s", name, strerror(e));
		}
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = errno;
		close(fd);
		return op_err_set(err, -e, "memory file %s: seal: %s", name, strerror(e));
	}
	m->fd = fd;
	snprintf(m->path, sizeof(m->path), "/proc/self/fd/%d", fd);
	return 0;
}

void op_memfile_close(struct op_memfile *m)
{
	if (!m || m->fd < 0)
		return;
	close(m->fd);
	*m = OP_MEMFILE_INIT;
}
