/* instance/pgbin.c - which PostgreSQL programs an instance runs, found the way
 * an image provides them: --pg-bindir, else the directory of the first
 * `postgres` on PATH (symlinks resolved), else `pg_config --bindir`, else
 * /usr/lib/postgresql/<major>/bin. A candidate is taken only when it holds
 * every program the instance manager runs and `postgres -V` reports the
 * wanted major (the Cluster image's, or the data directory's PG_VERSION).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/log.h"

/* What init, join and run exec (pg.c, bootstrap.c, run.c). */
static const char *const needed_programs[] = {
	"postgres", "initdb", "pg_ctl", "pg_basebackup", "pg_rewind",
};

/* Appends to the reasons of a failed search (a message cut at its cap is fine). */
#define NOTE(...)                                                                                  \
	do {                                                                                       \
		if (op_buf_addf(__VA_ARGS__) < 0) {                                                \
		}                                                                                  \
	} while (0)

#define CAPTURE_MAX 4096
#define CAPTURE_TIMEOUT_MS 10000

int inst_pg_version_major(const char *s)
{
	/* "postgres (PostgreSQL) 16.4 (Debian 16.4-1.pgdg120+1)" or
	 * "pg_config: PostgreSQL 17beta1"; the number after "PostgreSQL ". */
	const char *p = s ? strstr(s, "PostgreSQL") : NULL;
	if (!p)
		return 0;
	p += strlen("PostgreSQL");
	if (*p == ')')
		p++;
	while (*p == ' ')
		p++;
	int major = 0, nd = 0;
	for (; *p >= '0' && *p <= '9' && nd < 4; p++, nd++)
		major = major * 10 + (*p - '0');
	if (nd == 0 || nd == 4 || major < 10)
		return 0;
	return major;
}

int inst_pgdata_major(const char *pgdata, int *ret, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/PG_VERSION", pgdata);
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(64);
	int r = inst_read_file(path, 64, &b, err);
	if (r)
		return r;
	int major = 0, nd = 0;
	for (const char *p = op_buf_str(&b); *p >= '0' && *p <= '9' && nd < 4; p++, nd++)
		major = major * 10 + (*p - '0');
	if (nd == 0 || nd == 4 || major < 10)
		return op_err_set(err, -EINVAL, "%s: not a PostgreSQL major version", path);
	*ret = major;
	return 0;
}

/* Runs argv (argv[0] absolute, or searched on PATH when search) and captures
 * up to CAPTURE_MAX bytes of stdout; stderr discarded. 0 = exited 0. */
static int capture(const char *const *argv, bool search, struct op_buf *out)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(fds[0]);
		close(fds[1]);
		return e;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		dup2(fds[1], STDOUT_FILENO);
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);
		if (search)
			execvp(argv[0], (char *const *)argv);
		else
			execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	char buf[512];
	int r = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= CAPTURE_TIMEOUT_MS) {
			r = -ETIMEDOUT;
			kill(pid, SIGKILL);
			break;
		}
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int pr = poll(&pfd, 1, (int)(CAPTURE_TIMEOUT_MS - spent));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue; /* timeout handled above */
		ssize_t n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out->len + (size_t)n > CAPTURE_MAX) {
			r = -EMSGSIZE;
			kill(pid, SIGKILL);
			break;
		}
		if (op_buf_add(out, buf, (size_t)n) < 0) {
			r = -EMSGSIZE;
			kill(pid, SIGKILL);
			break;
		}
	}
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		r = -ENOEXEC;
	return r;
}

/* Checks one candidate directory: every program present, `postgres -V`
 * major. 0 and *ret_major, or -errno with why set. */
static int check_dir(const char *dir, int *ret_major, struct op_buf *why)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(needed_programs); i++) {
		_cleanup_free_ char *p = op_asprintf("%s/%s", dir, needed_programs[i]);
		if (access(p, X_OK) < 0) {
			NOTE(why, "%s%s: no %s", why->len ? "; " : "", dir,
					  needed_programs[i]);
			return -ENOENT;
		}
	}
	_cleanup_free_ char *pg = op_asprintf("%s/postgres", dir);
	const char *argv[] = { pg, "-V", NULL };
	_cleanup_(op_buf_donep) struct op_buf out = OP_BUF_INIT(CAPTURE_MAX);
	int r = capture(argv, false, &out);
	int major = r == 0 ? inst_pg_version_major(op_buf_str(&out)) : 0;
	if (!major) {
		NOTE(why, "%s%s/postgres -V: no version", why->len ? "; " : "", dir);
		return -ENOEXEC;
	}
	*ret_major = major;
	return 0;
}

/* The directory of the first executable `postgres` on path_env, symlinks
 * resolved (a /usr/local/bin/postgres link leads to the real bindir). */
static char *path_candidate(const char *path_env)
{
	for (const char *s = path_env; s && *s;) {
		const char *e = strchr(s, ':');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l > 0 && l < PATH_MAX) {
			_cleanup_free_ char *dir = op_strndup(s, l);
			_cleanup_free_ char *p = op_asprintf("%s/postgres", dir);
			char real[PATH_MAX];
			if (access(p, X_OK) == 0 && realpath(p, real)) {
				char *slash = strrchr(real, '/');
				if (slash && slash != real) {
					*slash = '\0';
					return op_strdup(real);
				}
			}
		}
		s = e ? e + 1 : s + l;
	}
	return NULL;
}

static char *pg_config_candidate(void)
{
	const char *argv[] = { "pg_config", "--bindir", NULL };
	_cleanup_(op_buf_donep) struct op_buf out = OP_BUF_INIT(CAPTURE_MAX);
	if (capture(argv, true, &out) != 0)
		return NULL;
	char *s = op_buf_take(&out, NULL);
	s[strcspn(s, "\r\n")] = '\0';
	if (s[0] != '/') {
		free(s);
		return NULL;
	}
	return s;
}

int inst_pg_locate(const char *explicit_dir, const char *path_env, int want,
		   const char *want_from, char **ret_bindir, int *ret_major, struct op_err *err)
{
	char *cands[3] = { NULL, NULL, NULL };
	size_t n = 0;
	if (explicit_dir) {
		cands[n++] = op_strdup(explicit_dir);
	} else {
		cands[n] = path_candidate(path_env);
		n += cands[n] != NULL;
		cands[n] = pg_config_candidate();
		n += cands[n] != NULL;
		if (want > 0)
			cands[n++] = op_asprintf("/usr/lib/postgresql/%d/bin", want);
	}
	_cleanup_(op_buf_donep) struct op_buf why = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = -ENOENT;
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t k = 0; k < i; k++)
			dup |= strcmp(cands[k], cands[i]) == 0;
		int major;
		if (dup || check_dir(cands[i], &major, &why) < 0)
			continue;
		if (want > 0 && major != want) {
			NOTE(&why, "%s%s is PostgreSQL %d", why.len ? "; " : "",
					  cands[i], major);
			continue;
		}
		*ret_bindir = TAKE_PTR(cands[i]);
		*ret_major = major;
		r = 0;
		break;
	}
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	if (r == 0)
		return 0;
	if (want > 0)
		return op_err_set(err, -ENOENT,
				  "PostgreSQL %d (%s) not found: %s", want,
				  want_from ? want_from : "wanted",
				  why.len ? op_buf_str(&why) : "no candidate directory");
	return op_err_set(err, -ENOENT, "PostgreSQL programs not found: %s",
			  why.len ? op_buf_str(&why) : "no postgres on PATH and no pg_config");
}

/* PostgreSQL programs find each other through PATH (pg_rewind, pg_ctl). */
static void path_prepend(const char *dir)
{
	const char *path = getenv("PATH");
	size_t bl = strlen(dir);
	for (const char *s = path; s && *s;) {
		const char *e = strchr(s, ':');
		size_t l = e ? (size_t)(e - s) : strlen(s);
		if (l == bl && strncmp(s, dir, bl) == 0)
			return;
		s = e ? e + 1 : s + l;
	}
	_cleanup_free_ char *np =
		op_asprintf("%s%s%s", dir, path && *path ? ":" : "", path ? path : "");
	setenv("PATH", np, 1);
}

int inst_paths_locate(struct inst_paths *p, const struct api_cluster *c, bool data_exists,
		      char **ret_owned, struct op_err *err)
{
	int want = p->pg_major;
	_cleanup_free_ char *from = NULL;
	if (want > 0) {
		from = op_strdup("--pg-major");
	} else if (c && c->spec.image_name && *c->spec.image_name &&
		   api_image_major_version(c->spec.image_name, &want, NULL) == 0) {
		from = op_asprintf("image %s", c->spec.image_name);
	} else {
		want = 0;
	}
	if (data_exists) {
		int dm;
		int r = inst_pgdata_major(p->pgdata, &dm, err);
		if (r)
			return r;
		if (want > 0 && dm != want)
			return op_err_set(err, -EINVAL,
					  "%s holds a PostgreSQL %d data directory but the Cluster "
					  "asks for PostgreSQL %d (%s): major upgrades are not "
					  "supported",
					  p->pgdata, dm, want, from);
		if (want == 0) {
			want = dm;
			free(from);
			from = op_strdup("PG_VERSION");
		}
	}
	char *bindir = NULL;
	int major = 0;
	int r = inst_pg_locate(p->pg_bindir, getenv("PATH"), want, from, &bindir, &major, err);
	if (r)
		return r;
	p->pg_bindir = bindir;
	p->pg_major = major;
	*ret_owned = bindir;
	path_prepend(bindir);
	_cleanup_free_ char *ms = op_asprintf("%d", major);
	op_log_info("PostgreSQL programs", "bindir", bindir, "major", ms);
	return 0;
}
