/* tests/e2e/agent/launch.c - `container-init`: from a fresh process (never
 * from the multi-threaded agent itself) enter the pod's netns, build the
 * container's private mount tree, drop privileges and exec. And `exec`.
 *
 * Mount tree: a tmpfs at SPEC.rootfs (a host directory, used only as a mount
 * point inside the private namespace) gets one recursive bind mount per
 * top-level host entry (/usr, /etc, /var, /work...), symlinks copied, a fresh
 * tmpfs for /tmp; after pivot_root the host is at /.oldroot until the volumes
 * are mounted. A mountPath whose directory does not exist is created only in
 * tmpfs: when its nearest existing ancestor is a host directory, that
 * directory is "mirrored" (a tmpfs on top holding bind mounts of every entry
 * it had), so the host filesystem is never written. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/json.h"
#include "tests/e2e/agent/na.h"

extern char **environ;

#define OLD "/.oldroot"

struct tree {
	dev_t ours[NA_MAX_MOUNTS * 2 + 8]; /* devices of the tmpfs mounts we made */
	size_t n_ours;
	int stage;
};

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "pgop-node-agent container-init: %s %s: %s\n", what, path ? path : "",
		strerror(errno));
	return -1;
}

static int tmpfs_at(struct tree *t, const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	_cleanup_free_ char *opts = op_asprintf("mode=%o,uid=%u,gid=%u", (unsigned)mode,
						 (unsigned)uid, (unsigned)gid);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return fail("mount tmpfs", path);
	struct stat st;
	if (stat(path, &st) == 0 && t->n_ours < OP_ARRAY_SIZE(t->ours))
		t->ours[t->n_ours++] = st.st_dev;
	return 0;
}

static bool is_ours(const struct tree *t, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return false;
	for (size_t i = 0; i < t->n_ours; i++)
		if (t->ours[i] == st.st_dev)
			return true;
	return false;
}

/* Creates an empty placeholder at dst of the same type as src (for a bind). */
static int placeholder(const char *dst, const struct stat *src)
{
	if (S_ISDIR(src->st_mode))
		return mkdir(dst, 0755) < 0 && errno != EEXIST ? fail("mkdir", dst) : 0;
	int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail("create", dst);
	close(fd);
	return 0;
}

/* Populates dir (a fresh tmpfs) with binds of every entry of src. */
static int populate(const char *src, const char *dir, const char *skip_tmpfs)
{
	DIR *d = opendir(src);
	if (!d)
		return fail("opendir", src);
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_free_ char *s = op_asprintf("%s/%s", src, e->d_name);
		_cleanup_free_ char *t = op_asprintf("%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(s, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlink(s, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if (symlink(target, t) < 0)
				rc = fail("symlink", t);
			continue;
		}
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			continue;
		if ((rc = placeholder(t, &st)) < 0)
			break;
		if (skip_tmpfs && !strcmp(e->d_name, skip_tmpfs))
			continue;
		if (mount(s, t, NULL, MS_BIND | MS_REC, NULL) < 0)
			rc = fail("bind", s);
	}
	closedir(d);
	return rc;
}

/* Makes host directory `dir` writable-in-tmpfs while keeping its entries. */
static int mirror(struct tree *t, const char *dir)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return fail("stat", dir);
	_cleanup_free_ char *stage = op_asprintf("/.na-stage-%d", t->stage++);
	if (mkdir(stage, 0700) < 0)
		return fail("mkdir", stage);
	if (mount(dir, stage, NULL, MS_BIND | MS_REC, NULL) < 0)
		return fail("bind", dir);
	if (tmpfs_at(t, dir, st.st_mode & 07777, st.st_uid, st.st_gid) < 0)
		return -1;
	int rc = populate(stage, dir, NULL);
	umount2(stage, MNT_DETACH);
	rmdir(stage);
	return rc;
}

/* Makes sure path exists in the new tree (dir, or a file when !want_dir). */
static int ensure_path(struct tree *t, const char *path, bool want_dir)
{
	char cur[PATH_MAX] = "/";
	_cleanup_free_ char *p = op_strdup(path);
	char *save = NULL;
	for (char *c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		bool last = (save == NULL || *save == '\0');
		char next[PATH_MAX];
		if (snprintf(next, sizeof(next), "%s%s%s", cur, strcmp(cur, "/") ? "/" : "", c) >=
		    (int)sizeof(next))
			return fail("path too long", path);
		struct stat st;
		if (lstat(next, &st) == 0) {
			if (S_ISLNK(st.st_mode)) {
				char real[PATH_MAX];
				if (!realpath(next, real))
					return fail("dangling symlink", next);
				snprintf(cur, sizeof(cur), "%s", real);
			} else {
				snprintf(cur, sizeof(cur), "%s", next);
			}
			continue;
		}
		if (!is_ours(t, cur) && mirror(t, cur) < 0)
			return -1;
		struct stat dir = { .st_mode = S_IFDIR };
		struct stat reg = { .st_mode = S_IFREG };
		if (placeholder(next, last && !want_dir ? &reg : &dir) < 0)
			return -1;
		snprintf(cur, sizeof(cur), "%s", next);
	}
	return 0;
}

static int build_root(struct tree *t, const char *rootfs)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail("make-rprivate", "/");
	if (tmpfs_at(t, rootfs, 0755, 0, 0) < 0)
		return -1;
	if (populate("/", rootfs, "tmp") < 0)
		return -1;
	_cleanup_free_ char *tmp = op_asprintf("%s/tmp", rootfs);
	if (tmpfs_at(t, tmp, 01777, 0, 0) < 0)
		return -1;
	_cleanup_free_ char *old = op_asprintf("%s" OLD, rootfs);
	if (mkdir(old, 0700) < 0 && errno != EEXIST)
		return fail("mkdir", old);
	if (chdir(rootfs) < 0)
		return fail("chdir", rootfs);
	if (syscall(SYS_pivot_root, ".", "." OLD) < 0)
		return fail("pivot_root", rootfs);
	if (chdir("/") < 0)
		return fail("chdir", "/");
	if (access("/dev/shm", F_OK) == 0)
		tmpfs_at(t, "/dev/shm", 01777, 0, 0);
	return 0;
}

static int mount_volume(struct tree *t, json_object *m)
{
	const char *src = op_json_str_at(m, "src"), *dst = op_json_str_at(m, "dst");
	json_object *ro = op_json_at(m, "ro");
	if (!src || !dst || dst[0] != '/')
		return fail("bad mount in spec", dst);
	_cleanup_free_ char *hsrc = op_asprintf(OLD "%s", src);
	struct stat st;
	if (stat(hsrc, &st) < 0)
		return fail("volume source", src);
	if (ensure_path(t, dst, S_ISDIR(st.st_mode)) < 0)
		return -1;
	char real[PATH_MAX];
	if (!realpath(dst, real))
		return fail("realpath", dst);
	if (mount(hsrc, real, NULL, MS_BIND | MS_REC, NULL) < 0)
		return fail("bind volume", dst);
	if (ro && json_object_get_boolean(ro) &&
	    mount(NULL, real, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return fail("remount ro", dst);
	return 0;
}

/* mountinfo field 5 (mount point) with its \ooo escapes decoded. */
static bool mountinfo_point(const char *line, char *out, size_t n)
{
	const char *p = line;
	for (int f = 0; f < 4; f++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	size_t k = 0;
	while (*p && *p != ' ' && k + 1 < n) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] && p[3]) {
			out[k++] = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 4;
		} else {
			out[k++] = *p++;
		}
	}
	out[k] = '\0';
	return true;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strcmp(dir, "/") ? true
				 : !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* readOnlyRootFilesystem: every mount of the container's tree is remounted
 * read-only except the volumes (and what is below them) and the kernel's
 * /dev and /proc (as a container runtime leaves them); per-mount flags
 * (nosuid, nodev, noexec...) are kept. */
static int read_only_root(char **keep, size_t n_keep)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return fail("open", "/proc/self/mountinfo");
	char line[4096], mp[PATH_MAX];
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		if (!mountinfo_point(line, mp, sizeof(mp)))
			continue;
		bool skip = under(mp, "/dev") || under(mp, "/proc");
		for (size_t i = 0; !skip && i < n_keep; i++)
			skip = under(mp, keep[i]);
		if (skip)
			continue;
		struct statvfs sv;
		if (statvfs(mp, &sv) < 0)
			continue; /* shadowed by a later mount */
		unsigned long fl = MS_REMOUNT | MS_BIND | MS_RDONLY;
		if (sv.f_flag & ST_NOSUID)
			fl |= MS_NOSUID;
		if (sv.f_flag & ST_NODEV)
			fl |= MS_NODEV;
		if (sv.f_flag & ST_NOEXEC)
			fl |= MS_NOEXEC;
		if (sv.f_flag & ST_NOATIME)
			fl |= MS_NOATIME;
		if (sv.f_flag & ST_NODIRATIME)
			fl |= MS_NODIRATIME;
		if (sv.f_flag & ST_RELATIME)
			fl |= MS_RELATIME;
		if (mount(NULL, mp, NULL, fl, NULL) < 0 && errno != EINVAL)
			rc = fail("remount read-only", mp);
	}
	fclose(f);
	return rc;
}

/* capabilities.drop [ALL]: the bounding set is emptied before setuid (it needs
 * CAP_SETPCAP), the capability sets after it (also for uid 0). */
static int drop_bounding_caps(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return fail("PR_CAPBSET_DROP", NULL);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return 0;
}

static int clear_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	if (syscall(SYS_capset, &hdr, data) < 0)
		return fail("capset", NULL);
	return 0;
}

static int join_cgroups(json_object *cgs)
{
	for (size_t i = 0; cgs && i < json_object_array_length(cgs); i++) {
		const char *procs = json_object_get_string(json_object_array_get_idx(cgs, i));
		FILE *f = fopen(procs, "we");
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
			return fail("join cgroup", procs);
	}
	return 0;
}

static char **str_array(json_object *a)
{
	size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
	char **v = op_calloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = op_strdup(json_object_get_string(json_object_array_get_idx(a, i)));
	return v;
}

int na_container_init_main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pgop-node-agent container-init SPEC.json\n");
		return 2;
	}
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	struct op_err err = OP_ERR_INIT;
	json_object *spec = NULL;
	if (na_read_file(argv[1], &b, &err) < 0 ||
	    op_json_parse(b.data, b.len, OP_JSON_MAX_DEPTH, &spec, &err) < 0) {
		fprintf(stderr, "pgop-node-agent container-init: %s\n", err.msg);
		op_buf_done(&b);
		return 126;
	}
	op_buf_done(&b);
	setsid();
	/* resources.limits: before anything is allocated for the container */
	if (join_cgroups(op_json_at(spec, "cgroups")) < 0)
		return 126;
	const char *netns = op_json_str_at(spec, "netns");
	const char *rootfs = op_json_str_at(spec, "rootfs");
	int fd = netns ? open(netns, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
		return fail("setns", netns), 126;
	close(fd);
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) < 0)
		return fail("unshare", "mount/uts/ipc"), 126;
	const char *hostname = op_json_str_at(spec, "hostname");
	if (hostname && sethostname(hostname, strlen(hostname)) < 0)
		return fail("sethostname", hostname), 126;
	struct tree t = { 0 };
	if (!rootfs || build_root(&t, rootfs) < 0)
		return 126;
	json_object *mounts = op_json_at(spec, "mounts");
	size_t nm = mounts ? json_object_array_length(mounts) : 0;
	char **writable = op_calloc(nm + 1, sizeof(*writable));
	size_t nw = 0;
	for (size_t i = 0; i < nm; i++) {
		json_object *m = json_object_array_get_idx(mounts, i);
		if (mount_volume(&t, m) < 0)
			return 126;
		json_object *vro = op_json_at(m, "ro");
		char real[PATH_MAX];
		const char *dst = op_json_str_at(m, "dst");
		if (!(vro && json_object_get_boolean(vro)) && dst && realpath(dst, real))
			writable[nw++] = op_strdup(real);
	}
	if (umount2(OLD, MNT_DETACH) < 0)
		return fail("umount", OLD), 126;
	rmdir(OLD);
	json_object *rorf = op_json_at(spec, "read_only_root");
	if (rorf && json_object_get_boolean(rorf) && read_only_root(writable, nw) < 0)
		return 126;
	for (size_t i = 0; i < nw; i++)
		free(writable[i]);
	free(writable);

	json_object *uid = op_json_at(spec, "uid"), *gid = op_json_at(spec, "gid");
	json_object *groups = op_json_at(spec, "groups");
	gid_t gv[16];
	size_t ng = 0;
	for (size_t i = 0; groups && i < json_object_array_length(groups) && ng < 16; i++)
		gv[ng++] = (gid_t)json_object_get_int64(json_object_array_get_idx(groups, i));
	if (gid && (setgroups(ng, gv) < 0 || setgid((gid_t)json_object_get_int64(gid)) < 0))
		return fail("setgid", NULL), 126;
	json_object *caps = op_json_at(spec, "drop_all_caps");
	bool drop = caps && json_object_get_boolean(caps);
	if (drop && drop_bounding_caps() < 0)
		return 126;
	if (uid && setuid((uid_t)json_object_get_int64(uid)) < 0)
		return fail("setuid", NULL), 126;
	if (drop && clear_caps() < 0)
		return 126;
	json_object *nnp = op_json_at(spec, "no_new_privs");
	if (nnp && json_object_get_boolean(nnp) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return fail("PR_SET_NO_NEW_PRIVS", NULL), 126;
	const char *cwd = op_json_str_at(spec, "cwd");
	if (cwd && chdir(cwd) < 0)
		return fail("chdir", cwd), 126;

	char **args = str_array(op_json_at(spec, "argv"));
	environ = str_array(op_json_at(spec, "env"));
	json_object_put(spec);
	if (!args[0])
		return fprintf(stderr, "container-init: no command\n"), 126;
	execvp(args[0], args);
	fail("exec", args[0]);
	return 127;
}

/* ------------------------------------------------------------------ exec */

int na_exec_main(int argc, char **argv, const char *state_dir)
{
	const char *target = NULL, *container = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "-c") && i + 1 < argc)
			container = argv[++i];
		else
			target = argv[i];
	}
	if (!target || i >= argc || !strchr(target, '/')) {
		fprintf(stderr, "usage: pgop-node-agent exec NS/POD [-c CONTAINER] -- CMD...\n");
		return 2;
	}
	_cleanup_free_ char *ns = op_strndup(target, (size_t)(strchr(target, '/') - target));
	const char *pod = strchr(target, '/') + 1;
	_cleanup_free_ char *pidfile = NULL;
	if (container) {
		pidfile = op_asprintf("%s/run/%s_%s_%s.pid", state_dir, ns, pod, container);
	} else {
		/* first container that has a pid file: written as <ns>_<pod>.pid too */
		pidfile = op_asprintf("%s/run/%s_%s.pid", state_dir, ns, pod);
	}
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	if (na_read_file(pidfile, &b, &err) < 0) {
		fprintf(stderr, "exec: %s\n", err.msg);
		return 1;
	}
	char *end = NULL;
	errno = 0;
	long pid = strtol(op_buf_str(&b), &end, 10);
	bool bad = errno || end == op_buf_str(&b) || (*end && *end != '\n') || pid <= 1 ||
		   pid > INT_MAX;
	op_buf_done(&b);
	if (bad)
		return fprintf(stderr, "exec: bad pid in %s\n", pidfile), 1;

	_cleanup_free_ char *env_path = op_asprintf("/proc/%ld/environ", pid);
	struct op_buf envb = OP_BUF_INIT(OP_BUF_MAX_FILE);
	char **env = NULL;
	if (na_read_file(env_path, &envb, &err) == 0) {
		size_t n = 0;
		for (size_t k = 0; k < envb.len; k++)
			n += envb.data[k] == '\0';
		env = op_calloc(n + 2, sizeof(*env));
		size_t j = 0;
		for (size_t k = 0; k < envb.len && j < n; k += strlen(envb.data + k) + 1)
			env[j++] = op_strdup(envb.data + k);
	}
	op_buf_done(&envb);
	struct stat st;
	_cleanup_free_ char *proc = op_asprintf("/proc/%ld", pid);
	if (stat(proc, &st) < 0)
		return fprintf(stderr, "exec: container process %ld is gone\n", pid), 1;
	_cleanup_free_ char *cwd_path = op_asprintf("/proc/%ld/cwd", pid);
	int cwd_fd = open(cwd_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	static const struct {
		const char *ns;
		int flag;
	} nss[] = { { "net", CLONE_NEWNET }, { "uts", CLONE_NEWUTS }, { "ipc", CLONE_NEWIPC },
		    { "mnt", CLONE_NEWNS } };
	for (size_t k = 0; k < OP_ARRAY_SIZE(nss); k++) {
		_cleanup_free_ char *p = op_asprintf("/proc/%ld/ns/%s", pid, nss[k].ns);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, nss[k].flag) < 0)
			return fail("setns", p), 1;
		close(fd);
	}
	/* the container's working directory, like kubectl exec */
	if ((cwd_fd < 0 || fchdir(cwd_fd) < 0) && chdir("/") < 0)
		return fail("chdir", "/"), 1;
	if (cwd_fd >= 0)
		close(cwd_fd);
	if (setgroups(0, NULL) < 0 || setgid(st.st_gid) < 0 || setuid(st.st_uid) < 0)
		return fail("drop privileges", NULL), 1;
	if (env)
		environ = env;
	execvp(argv[i], argv + i);
	fail("exec", argv[i]);
	return 127;
}
