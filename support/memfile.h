/* support/memfile.h - a secret handed by path to a library that only takes
 * paths (libcurl 7.88 with GnuTLS refuses CURLOPT_CAINFO_BLOB and ignores
 * CURLOPT_SSLCERT_BLOB/SSLKEY_BLOB), without touching any filesystem.
 *
 * The bytes live in an anonymous memory file (memfd_create, close-on-exec,
 * sealed against writes, resizing and further seals once filled) reached as
 * /proc/self/fd/N. Nothing is written to $TMPDIR or the root filesystem, so it
 * works with readOnlyRootFilesystem and no writable /tmp, and nothing is left
 * behind after a crash: the kernel frees the memory with the last descriptor.
 * Every open of the path is a fresh read-only description at offset 0, so a
 * library may re-read it per connection.
 *
 * The struct is embedded by its owner; op_memfile_close() releases it.
 */
#ifndef PGOP_SUPPORT_MEMFILE_H
#define PGOP_SUPPORT_MEMFILE_H

#include <stddef.h>

#include "support/err.h"

#define OP_MEMFILE_MAX (1024u * 1024) /* a PEM bundle or key: far below */

struct op_memfile {
	int fd;        /* owned; -1 when closed */
	char path[40]; /* "/proc/self/fd/N", valid while fd is open */
};

#define OP_MEMFILE_INIT ((struct op_memfile){ .fd = -1 })

/* Creates the memory file holding data[0..len) (name: shown in /proc/PID/fd
 * only). len 0 or above OP_MEMFILE_MAX is -EINVAL. *m must be closed or
 * OP_MEMFILE_INIT; it is filled only on success. */
OP_MUST_CHECK
int op_memfile_open(struct op_memfile *m, const char *name, const void *data, size_t len,
		    struct op_err *err);

/* Closes the descriptor (the path stops resolving). Idempotent; NULL accepted. */
void op_memfile_close(struct op_memfile *m);

static inline void op_memfile_closep(struct op_memfile *m) { op_memfile_close(m); }

#endif
