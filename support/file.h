/* support/file.h - small filesystem helpers shared by the modules that keep
 * files (instance/, backup/). */
#ifndef PGOP_SUPPORT_FILE_H
#define PGOP_SUPPORT_FILE_H

#include <sys/types.h>

#include "support/err.h"

/* mkdir -p: creates path and its missing parents with mode (existing ones are
 * left as they are). 0, or -errno with err naming the directory. */
OP_MUST_CHECK int op_mkdir_p(const char *path, mode_t mode, struct op_err *err);

/* 1 when the directory path is empty or absent, 0 when it holds an entry
 * (its name copied into first, size first_size, when first is not NULL),
 * -errno with err naming it when it cannot be read. */
OP_MUST_CHECK int op_dir_empty(const char *path, char *first, size_t first_size,
			       struct op_err *err);

#endif
