/* tests/e2e/agent/cgroup.c - resources.limits.memory / .cpu as cgroups.
 *
 * cgroup v2 (/sys/fs/cgroup is cgroup2): a container gets a cgroup next to the
 * agent's own (a process-holding cgroup cannot have children with controllers:
 * "no internal processes"), under a parent whose cgroup.subtree_control
 * delegates memory / cpu; memory.max, cpu.max. cgroup v1: children of the
 * agent's memory and cpu cgroups; memory.limit_in_bytes, cpu.cfs_quota_us.
 * Neither usable: limits are refused (podspec.c) with na_host.no_cgroup_why.
 * container-init writes its own pid into the cgroup.procs files before exec. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "support/alloc.h"
#include "tests/e2e/agent/na.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static int mode;                      /* 0 none, 1 v1, 2 v2 */
static char v2_base[512];             /* v2: parent directory for container cgroups */
static char v1_mem[512], v1_cpu[512]; /* v1: the agent's memory / cpu cgroup dirs */
static char why[512];

/* The cgroup path of controller ctl ("" = v2 line "0::") from /proc/self/cgroup. */
static bool self_cgroup(const char *ctl, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctls = c1 + 1;
		bool match = !*ctl ? !*ctls : false;
		if (*ctl) {
			_cleanup_free_ char *dup = op_strdup(ctls);
			char *save = NULL;
			for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
				match |= !strcmp(t, ctl);
		}
		if (match) {
			snprintf(out, n, "%s", c2 + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool has_word(const char *file, const char *word)
{
	struct op_buf b = OP_BUF_INIT(4096);
	bool r = false;
	if (na_read_file(file, &b, NULL) == 0) {
		char *save = NULL;
		for (char *t = strtok_r(b.data, " \n", &save); t && !r; t = strtok_r(NULL, " \n", &save))
			r = !strcmp(t, word);
	}
	op_buf_done(&b);
	return r;
}

void na_cgroup_detect(struct na_host *h)
{
	struct statfs fs;
	char p[256];
	h->memory_cgroup = h->cpu_cgroup = false;
	if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
		if (!self_cgroup("", p, sizeof(p))) {
			snprintf(why, sizeof(why), "cgroup v2: own cgroup not found in /proc/self/cgroup");
		} else {
			char *slash = strrchr(p, '/');
			if (slash && slash != p)
				*slash = '\0';
			else
				snprintf(p, sizeof(p), "/");
			snprintf(v2_base, sizeof(v2_base), "/sys/fs/cgroup%s", strcmp(p, "/") ? p : "");
			char sc[600];
			snprintf(sc, sizeof(sc), "%s/cgroup.subtree_control", v2_base);
			h->memory_cgroup = has_word(sc, "memory") && access(v2_base, W_OK) == 0;
			h->cpu_cgroup = has_word(sc, "cpu") && access(v2_base, W_OK) == 0;
			if (h->memory_cgroup || h->cpu_cgroup)
				mode = 2;
			snprintf(why, sizeof(why),
				 "cgroup v2: %.200s does not delegate this controller (cgroup.subtree_control) "
				 "or is not writable",
				 v2_base);
		}
	} else {
		if (self_cgroup("memory", p, sizeof(p))) {
			snprintf(v1_mem, sizeof(v1_mem), "/sys/fs/cgroup/memory%s", p);
			h->memory_cgroup = access(v1_mem, W_OK) == 0;
		}
		if (self_cgroup("cpu", p, sizeof(p))) {
			snprintf(v1_cpu, sizeof(v1_cpu), "/sys/fs/cgroup/cpu%s", p);
			if (access(v1_cpu, W_OK) != 0) /* cpu,cpuacct co-mounted */
				snprintf(v1_cpu, sizeof(v1_cpu), "/sys/fs/cgroup/cpu,cpuacct%s", p);
			h->cpu_cgroup = access(v1_cpu, W_OK) == 0;
		}
		if (h->memory_cgroup || h->cpu_cgroup)
			mode = 1;
		snprintf(why, sizeof(why),
			 "no writable cgroup for this controller on this node (cgroup v1 at "
			 "/sys/fs/cgroup/<controller>, or v2 with delegation)");
	}
	h->no_cgroup_why = why;
}

static int write_str(const char *dir, const char *file, const char *val, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s", dir, file);
	FILE *f = fopen(path, "we");
	if (!f)
		return op_err_set(err, -errno, "open %s: %s", path, strerror(errno));
	int ok = fputs(val, f) >= 0;
	ok &= fclose(f) == 0;
	return ok ? 0 : op_err_set(err, -EIO, "write %s to %s failed", val, path);
}

static int make_dir(const char *dir, struct op_err *err)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return op_err_set(err, -errno, "mkdir %s: %s", dir, strerror(errno));
	return 0;
}

int na_cgroup_create(const char *name, int64_t mem_bytes, int64_t cpu_milli, char ***ret_procs,
		     struct op_err *err)
{
	char **procs = op_calloc(3, sizeof(*procs));
	size_t n = 0;
	int rc = 0;
	*ret_procs = NULL;
	if (!mem_bytes && !cpu_milli) {
		free(procs);
		return 0;
	}
	if (mode == 2) {
		_cleanup_free_ char *dir = op_asprintf("%s/pgop-e2e-%s", v2_base, name);
		char v[64];
		if ((rc = make_dir(dir, err)) < 0)
			goto out;
		procs[n++] = op_asprintf("%s/cgroup.procs", dir);
		if (mem_bytes) {
			snprintf(v, sizeof(v), "%lld", (long long)mem_bytes);
			if ((rc = write_str(dir, "memory.max", v, err)) < 0)
				goto out;
			(void)write_str(dir, "memory.swap.max", "0", NULL);
		}
		if (cpu_milli) {
			snprintf(v, sizeof(v), "%lld 100000", (long long)(cpu_milli * 100));
			if ((rc = write_str(dir, "cpu.max", v, err)) < 0)
				goto out;
		}
	} else if (mode == 1) {
		char v[64];
		if (mem_bytes) {
			_cleanup_free_ char *dir = op_asprintf("%s/pgop-e2e-%s", v1_mem, name);
			if ((rc = make_dir(dir, err)) < 0)
				goto out;
			procs[n++] = op_asprintf("%s/cgroup.procs", dir);
			snprintf(v, sizeof(v), "%lld", (long long)mem_bytes);
			if ((rc = write_str(dir, "memory.limit_in_bytes", v, err)) < 0)
				goto out;
			/* no swap beyond the limit where swap accounting exists */
			(void)write_str(dir, "memory.memsw.limit_in_bytes", v, NULL);
		}
		if (cpu_milli) {
			_cleanup_free_ char *dir = op_asprintf("%s/pgop-e2e-%s", v1_cpu, name);
			if ((rc = make_dir(dir, err)) < 0)
				goto out;
			procs[n++] = op_asprintf("%s/cgroup.procs", dir);
			snprintf(v, sizeof(v), "%lld", (long long)(cpu_milli * 100));
			if ((rc = write_str(dir, "cpu.cfs_period_us", "100000", err)) < 0 ||
			    (rc = write_str(dir, "cpu.cfs_quota_us", v, err)) < 0)
				goto out;
		}
	} else {
		rc = op_err_set(err, -ENOTSUP, "%s", why);
	}
out:
	if (rc < 0) {
		na_cgroup_remove(procs);
		free(procs);
		return rc;
	}
	*ret_procs = procs;
	return 0;
}

void na_cgroup_remove(char **procs)
{
	for (size_t i = 0; procs && procs[i]; i++) {
		char *slash = strrchr(procs[i], '/');
		if (slash) {
			*slash = '\0';
			/* the container's other processes were just SIGKILLed: they leave
			 * the cgroup as they exit */
			for (int tries = 0; rmdir(procs[i]) < 0 && errno == EBUSY && tries < 50; tries++)
				usleep(10000);
			*slash = '/';
		}
		free(procs[i]);
		procs[i] = NULL;
	}
}
