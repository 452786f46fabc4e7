/* support/file.c - small filesystem helpers (file.h). */
#include "support/file.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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

int op_dir_empty(const char *path, char *first, size_t first_size, struct op_err *err)
{
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? 1 : op_err_set(err, -errno, "%s: %s", path, strerror(errno));
	int empty = 1;
	struct dirent *e;
	while (empty && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = 0;
			if (first && first_size)
				snprintf(first, first_size, "%s", e->d_name);
		}
	closedir(d);
	return empty;
}
