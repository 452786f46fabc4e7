/* support/file.c - small filesystem helpers (file.h). */
#include "support/file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "support/alloc.h"

int op_mkdir_p(const char *path, mode_t mode, struct op_err *err)
{
	_cleanup_free_ char *p = op_strdup(path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return op_err_set(err, -errno, "mkdir \"%s\": %s", p, strerror(errno));
		*s = c;
		if (!c)
			return 0;
	}
}
