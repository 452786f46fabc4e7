/* tests/unit/test_tmpdir.h - a temporary directory for one test executable
 * (cmocka group setup/teardown) and small file helpers under it. Include once
 * per test file, after cmocka.h and instance/internal.h. All helpers abort the
 * test on failure; strings they return are owned by the caller. */
#ifndef PGOP_TEST_TMPDIR_H
#define PGOP_TEST_TMPDIR_H

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/file.h"

static char dir[] = "/tmp/pgop-test-XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char *cmd = op_asprintf("rm -rf '%s'", dir);
	int r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -1;
}

/* dir/rel (owned) */
static char *at(const char *rel)
{
	return op_asprintf("%s/%s", dir, rel);
}

/* dir/rel with content (0600), its parent directories made (0700) */
static void put(const char *rel, const char *content)
{
	char *p = at(rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	assert_int_equal(op_mkdir_p(p, 0700, NULL), 0);
	*slash = '/';
	assert_int_equal(inst_write_file(p, content, strlen(content), 0600, NULL), 0);
	free(p);
}

/* dir/rel exists (a dangling symlink too) */
static bool exists(const char *rel)
{
	char *p = at(rel);
	struct stat sb;
	bool e = lstat(p, &sb) == 0;
	free(p);
	return e;
}

#endif
