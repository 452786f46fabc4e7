/* tests/e2e/agent/util.c - processes, files and clocks for the node agent. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/alloc.h"
#include "tests/e2e/agent/na.h"

extern char **environ;

int64_t na_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void na_rfc3339(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int na_run(const char *const argv[], const char *input, struct op_buf *out, struct op_err *err)
{
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 };
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0) {
		int e = -errno;
		if (in[0] >= 0) {
			close(in[0]);
			close(in[1]);
		}
		return op_err_set(err, e, "pipe: %s", strerror(-e));
	}
	/* posix_spawn (clone(CLONE_VM|CLONE_VFORK) in glibc): no page-table copy of
	 * the multi-threaded, ASan-sized agent. The caller's signal mask is kept:
	 * in the agent SIGTERM is blocked, so a teardown that signals every process
	 * of the environment cannot kill the ip/nft commands that clean up. */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 2);
	pid_t pid;
	int se = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (se != 0) {
		close(in[0]);
		close(in[1]);
		close(outp[0]);
		close(outp[1]);
		return op_err_set(err, -se, "spawn %s: %s", argv[0], strerror(se));
	}
	close(in[0]);
	close(outp[1]);
	size_t in_len = input ? strlen(input) : 0, in_off = 0;
	if (in_len == 0) {
		close(in[1]);
		in[1] = -1;
	}
	struct op_buf local = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_buf *o = out ? out : &local;
	op_buf_reset(o);
	bool overflow = false;
	for (;;) {
		struct pollfd p[2] = { { outp[0], POLLIN, 0 }, { in[1], POLLOUT, 0 } };
		int np = in[1] >= 0 ? 2 : 1;
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(in[1], input + in_off, in_len - in_off);
			if (w > 0)
				in_off += (size_t)w;
			if (w < 0 || in_off >= in_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char chunk[4096];
			ssize_t r = read(outp[0], chunk, sizeof(chunk));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			if (!overflow && op_buf_add(o, chunk, (size_t)r) < 0)
				overflow = true;
		}
	}
	if (in[1] >= 0)
		close(in[1]);
	close(outp[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		struct op_buf cmd = OP_BUF_INIT(OP_BUF_MAX_SMALL);
		for (size_t i = 0; argv[i] && i < 16; i++)
			if (op_buf_addf(&cmd, "%s%s", i ? " " : "", argv[i]) < 0)
				break;
		rc = op_err_set(err, -EIO, "%s: exit %d: %.300s", op_buf_str(&cmd),
				WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
				op_buf_str(o));
		op_buf_done(&cmd);
	}
	op_buf_done(&local);
	return rc;
}

int na_mkdir_p(const char *path, mode_t mode, struct op_err *err)
{
	_cleanup_free_ char *p = op_strdup(path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return op_err_set(err, -errno, "mkdir %s: %s", p, strerror(errno));
		*s = c;
		if (c == '\0')
			break;
	}
	return 0;
}

int na_write_file(const char *path, const void *data, size_t len, mode_t mode,
		  struct op_err *err)
{
	_cleanup_free_ char *tmp = op_asprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return op_err_set(err, -errno, "open %s: %s", tmp, strerror(errno));
	const char *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			close(fd);
			unlink(tmp);
			return op_err_set(err, e, "write %s: %s", tmp, strerror(-e));
		}
		off += (size_t)w;
	}
	fchmod(fd, mode);
	close(fd);
	if (rename(tmp, path) < 0) {
		int e = -errno;
		unlink(tmp);
		return op_err_set(err, e, "rename %s: %s", path, strerror(-e));
	}
	return 0;
}

int na_read_file(const char *path, struct op_buf *b, struct op_err *err)
{
	op_buf_reset(b);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "open %s: %s", path, strerror(errno));
	char chunk[8192];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			close(fd);
			return op_err_set(err, e, "read %s: %s", path, strerror(-e));
		}
		if (r == 0)
			break;
		if (op_buf_add(b, chunk, (size_t)r) < 0) {
			close(fd);
			return op_err_set(err, -EMSGSIZE, "%s: over %zu bytes", path, b->max);
		}
	}
	close(fd);
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(p) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(p) < 0 && errno != ENOENT ? -1 : 0;
}

int na_rm_rf(const char *path, const char *guard, struct op_err *err)
{
	size_t gl = strlen(guard);
	if (gl < 2 || strncmp(path, guard, gl) != 0 || path[gl] != '/' || strstr(path, "/.."))
		return op_err_set(err, -EPERM, "refusing to remove %s (not under %s)", path, guard);
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : op_err_set(err, -errno, "stat %s", path);
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		return op_err_set(err, -EIO, "remove %s: %s", path, strerror(errno));
	return 0;
}
