/* tests/fuzz/fuzz_restore.c - arbitrary bytes where a recovery reads what it
 * did not write: the first byte picks the target, the rest is
 *   - a tar extracted by bk_restore_tar_fd (backup/restore_base.c) into a
 *     fresh directory, or
 *   - a recovery target time, LSN and tar entry name (catalog.c, restore_base.c).
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks):
 *   - nothing is ever created outside the target: its sibling "outside"
 *     stays empty and no symbolic link under the target points elsewhere
 *     (absolute, or above the top);
 *   - a refused tar says why (err set);
 *   - a parsed time formats and parses back to the same instant; a
 *     normalised entry name holds no "..", no leading '/' and no empty
 *     component.
 * Seeds: tests/fuzz/corpus/restore/.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/internal.h"
#include "support/lsn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[] = "/tmp/pgop-fuzz-restore-XXXXXX";
static char target[PATH_MAX], outside[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int check_link(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	if (flag != FTW_SL)
		return 0;
	char l[PATH_MAX];
	ssize_t n = readlink(p, l, sizeof(l) - 1);
	if (n < 0)
		abort();
	l[n] = '\0';
	if (!bk_link_inside(p + strlen(target) + 1, l))
		abort(); /* a link leaving the target was made */
	return 0;
}

/* base holds the target and "outside" only, and "outside" is empty */
static void check_base(void)
{
	DIR *d = opendir(base);
	if (!d)
		abort();
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "t") &&
		    strcmp(e->d_name, "outside"))
			abort(); /* written next to the target */
	closedir(d);
	if (rmdir(outside) < 0 || mkdir(outside, 0700) < 0)
		abort(); /* written into a sibling */
}

static void tar(const uint8_t *p, size_t n)
{
	static bool ready;
	if (!ready) {
		if (!mkdtemp(base))
			abort();
		snprintf(target, sizeof(target), "%s/t", base);
		snprintf(outside, sizeof(outside), "%s/outside", base);
		if (mkdir(outside, 0700) < 0)
			abort();
		ready = true;
	}
	if (mkdir(target, 0700) < 0)
		abort();
	int fd = memfd_create("tar", MFD_CLOEXEC);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	struct bk_restore_opts o = { .target = target, .max_entry = 1u << 20, .max_total = 4u << 20 };
	struct op_err err = OP_ERR_INIT;
	if (bk_restore_tar_fd(fd, &o, NULL, &err) < 0 && !err.msg[0])
		abort();
	close(fd);
	nftw(target, check_link, 16, FTW_PHYS);
	check_base();
	nftw(target, rm_one, 16, FTW_PHYS | FTW_DEPTH);
}

static void names(const uint8_t *p, size_t n)
{
	char s[256], out[PATH_MAX];
	if (n >= sizeof(s))
		n = sizeof(s) - 1;
	memcpy(s, p, n);
	s[n] = '\0';
	int64_t us, back;
	char norm[BK_TARGET_TIME_LEN + 1];
	if (bk_target_time_parse(s, &us) == 0 && bk_target_time_format(us, norm) == 0 &&
	    (bk_target_time_parse(norm, &back) != 0 || back != us))
		abort();
	uint64_t lsn;
	(void)!op_lsn_parse(s, &lsn);
	if (bk_entry_path(s, out, sizeof(out)) == 0 &&
	    (out[0] == '/' || strstr(out, "//") || !strcmp(out, "..") || !strncmp(out, "../", 3) ||
	     strstr(out, "/../") || (strlen(out) >= 3 && !strcmp(out + strlen(out) - 3, "/..")) ||
	     out[strlen(out) - 1] == '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		tar(data + 1, size - 1);
	else
		names(data + 1, size - 1);
	return 0;
}
