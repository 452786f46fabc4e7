/* tests/e2e/agent/pods.c - the kubelet part: pod lifecycle and status.
 *
 * One pass per tick over the pods bound to this node (informer cache):
 * network + volumes, init containers in order, containers with restartPolicy
 * and back-off, probes, termination (SIGTERM to the process group, SIGKILL
 * after the grace period), then the status when it changed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/leader.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

static const char *restart_policy(struct na_pod *p)
{
	const char *r = op_json_str_at(p->obj, "spec.restartPolicy");
	return r ? r : "Always";
}

json_object *na_ctr_spec(struct na_pod *p, struct na_ctr *c)
{
	json_object *arr = op_json_at(p->obj, c->init ? "spec.initContainers" : "spec.containers");
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *s = json_object_array_get_idx(arr, i);
		const char *n = op_json_str_at(s, "name");
		if (n && !strcmp(n, c->name))
			return s;
	}
	return NULL;
}

void na_set_reason(char **dst, const char *r)
{
	free(*dst);
	*dst = r ? op_strdup(r) : NULL;
}

/* ------------------------------------------------------------ pod setup */

static struct na_pod *pod_new(struct na_agent *a, json_object *obj)
{
	struct na_pod *p = op_calloc(1, sizeof(*p));
	p->uid = op_strdup(kube_obj_uid(obj));
	p->ns = op_strdup(kube_obj_namespace(obj));
	p->name = op_strdup(kube_obj_name(obj));
	p->obj = json_object_get(obj);
	p->dir = op_asprintf("%s/pods/%s", a->state_dir, p->uid);
	p->seen_ms = na_now_ms();
	na_rfc3339(p->start_time);
	na_pod_names(p->uid, p->netns, p->veth);
	static const char *const keys[] = { "spec.initContainers", "spec.containers" };
	for (int k = 0; k < 2; k++) {
		json_object *arr = op_json_at(obj, keys[k]);
		size_t n = arr ? json_object_array_length(arr) : 0;
		struct na_ctr *v = op_calloc(n ? n : 1, sizeof(*v));
		for (size_t i = 0; i < n; i++) {
			const char *cn = op_json_str_at(json_object_array_get_idx(arr, i), "name");
			v[i].name = op_strdup(cn ? cn : "?");
			v[i].init = k == 0;
			na_set_reason(&v[i].reason, "ContainerCreating");
		}
		if (k == 0) {
			p->init = v;
			p->n_init = n;
		} else {
			p->ctrs = v;
			p->n_ctrs = n;
		}
	}
	na_set_reason(&p->waiting_reason, "ContainerCreating");
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake_cond, NULL);
	p->net_epoch = atomic_load(&a->net_epoch);
	p->next = a->pod_list;
	a->pod_list = p;
	op_log_info("pod added", "pod", p->name, "namespace", p->ns, "uid", p->uid);
	return p;
}

static void ctrs_free(struct na_ctr *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].reason);
		free(v[i].msg);
		na_cgroup_remove(v[i].cgroups);
		free(v[i].cgroups);
	}
	free(v);
}

/* Processes left in the pod's netns by a previous agent that died without
 * stopping them (they would hold the pod's ports): killed before the first
 * container of this agent starts. */
static void kill_stale(struct na_pod *p)
{
	_cleanup_free_ char *nsp = op_asprintf("/run/netns/%s", p->netns);
	struct stat ns;
	if (stat(nsp, &ns) < 0)
		return;
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	int killed = 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 1)
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		struct stat st;
		if (stat(path, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev &&
		    kill((pid_t)pid, SIGKILL) == 0)
			killed++;
	}
	closedir(d);
	if (killed) {
		char n[16];
		snprintf(n, sizeof(n), "%d", killed);
		op_log_warn("killed processes a previous agent left in the pod", "pod", p->name,
			    "namespace", p->ns, "processes", n);
	}
}

static int pod_network(struct na_agent *a, struct na_pod *p, struct op_err *err)
{
	if (!p->stale_checked) {
		kill_stale(p);
		p->stale_checked = true;
	}
	if (!p->ip_index) {
		/* a restarted agent finds the address it gave this pod before */
		_cleanup_free_ char *ipf = op_asprintf("%s/ip", p->dir);
		struct op_buf b = OP_BUF_INIT(64);
		if (na_read_file(ipf, &b, NULL) == 0) {
			char *end;
			long idx = strtol(op_buf_str(&b), &end, 10);
			if (idx >= 2 && idx <= 254)
				p->ip_index = (int)idx;
		}
		op_buf_done(&b);
		pthread_mutex_lock(&a->mu);
		if (p->ip_index && a->ip_used[p->ip_index])
			p->ip_index = 0;
		for (int i = 2; !p->ip_index && i <= 254; i++)
			if (!a->ip_used[i])
				p->ip_index = i;
		if (p->ip_index)
			a->ip_used[p->ip_index] = true;
		pthread_mutex_unlock(&a->mu);
		if (!p->ip_index)
			return op_err_set(err, -ENOSPC, "no free pod address");
		na_pod_ip(p->ip_index, p->ip);
		_cleanup_free_ char *idx = op_asprintf("%d\n", p->ip_index);
		int rc = na_mkdir_p(p->dir, 0755, err);
		if (rc == 0)
			rc = na_write_file(ipf, idx, strlen(idx), 0644, err);
		if (rc < 0)
			return rc;
	}
	int rc = na_net_pod_add(p->netns, p->veth, p->ip, err);
	if (rc < 0)
		return rc;
	/* for `pgop-node-agent partition NS/POD` */
	_cleanup_free_ char *rundir = op_asprintf("%s/run", a->shared_dir);
	_cleanup_free_ char *ipf = op_asprintf("%s/%s_%s.ip", rundir, p->ns, p->name);
	if ((rc = na_mkdir_p(rundir, 0755, err)) < 0)
		return rc;
	return na_write_file(ipf, p->ip, strlen(p->ip), 0644, err);
}

static void pod_teardown(struct na_agent *a, struct na_pod *p)
{
	na_net_pod_del(p->netns, p->veth);
	pthread_mutex_lock(&a->mu);
	if (p->ip_index)
		a->ip_used[p->ip_index] = false;
	pthread_mutex_unlock(&a->mu);
	p->ip_index = 0;
	_cleanup_free_ char *vols = op_asprintf("%s/volumes/pod-%s", a->state_dir, p->uid);
	struct op_err err = OP_ERR_INIT;
	na_volumes_release(a, p);
	if (na_rm_rf(vols, a->state_dir, &err) < 0 || na_rm_rf(p->dir, a->state_dir, &err) < 0)
		op_log_warn("pod cleanup incomplete", "pod", p->name, "error", err.msg);
	/* run/ is shared by the nodes: a Pod of the same name may run on another
	 * node by now (this one was stopped while it was force-deleted); its
	 * files say so by their address, not ours */
	_cleanup_free_ char *ipf = op_asprintf("%s/run/%s_%s.ip", a->shared_dir, p->ns, p->name);
	struct op_buf cur = OP_BUF_INIT(64);
	bool ours = na_read_file(ipf, &cur, NULL) < 0 || !strcmp(op_buf_str(&cur), p->ip);
	op_buf_done(&cur);
	if (!ours)
		return;
	for (size_t i = 0; i < p->n_init + p->n_ctrs; i++) {
		struct na_ctr *c = i < p->n_init ? &p->init[i] : &p->ctrs[i - p->n_init];
		_cleanup_free_ char *pf =
			op_asprintf("%s/run/%s_%s_%s.pid", a->shared_dir, p->ns, p->name, c->name);
		unlink(pf);
	}
	_cleanup_free_ char *pf = op_asprintf("%s/run/%s_%s.pid", a->shared_dir, p->ns, p->name);
	unlink(pf);
	unlink(ipf);
}

static void pod_free(struct na_pod *p)
{
	if (!p)
		return;
	free(p->uid);
	free(p->handed_rv);
	free(p->ns);
	free(p->name);
	free(p->dir);
	free(p->waiting_reason);
	free(p->waiting_msg);
	free(p->last_status);
	free(p->hosts);
	json_object_put(p->obj);
	if (p->next_obj)
		json_object_put(p->next_obj);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->wake_cond);
	ctrs_free(p->init, p->n_init);
	ctrs_free(p->ctrs, p->n_ctrs);
	free(p);
}

/* ------------------------------------------------------------ run */

static void ctr_reap(struct na_pod *p, struct na_ctr *c)
{
	int st;
	if (c->pid <= 0)
		return;
	pid_t r = waitpid(c->pid, &st, WNOHANG);
	if (r == 0 || (r < 0 && errno != ECHILD))
		return;
	if (r < 0) {
		c->exit_code = 137;
	} else if (WIFEXITED(st)) {
		c->exit_code = WEXITSTATUS(st);
		c->signal = 0;
	} else {
		c->signal = WTERMSIG(st);
		c->exit_code = 128 + c->signal;
	}
	/* the container's other processes go with it */
	kill(-c->pid, SIGKILL);
	c->pid = 0;
	na_cgroup_remove(c->cgroups); /* fails (EBUSY) until the group is gone: retried at start */
	c->state = NA_TERMINATED;
	c->ready = false;
	c->kill_at_ms = 0;
	na_rfc3339(c->finished_at);
	na_set_reason(&c->reason, c->exit_code == 0 ? "Completed" : "Error");
	char code[16];
	snprintf(code, sizeof(code), "%d", c->exit_code);
	op_log_info("container exited", "pod", p->name, "namespace", p->ns, "container", c->name,
		    "exitCode", code);
}

static void ctr_kill(struct na_ctr *c, int sig)
{
	if (c->pid > 0)
		kill(-c->pid, sig);
}

static bool want_restart(struct na_pod *p, struct na_ctr *c)
{
	const char *rp = restart_policy(p);
	if (c->init)
		return c->exit_code != 0 && strcmp(rp, "Never");
	if (!strcmp(rp, "Always"))
		return true;
	return !strcmp(rp, "OnFailure") && c->exit_code != 0;
}

static void ctr_run(struct na_agent *a, struct na_pod *p, struct na_ctr *c)
{
	int64_t now = na_now_ms();
	if (c->state == NA_RUNNING) {
		json_object *spec = na_ctr_spec(p, c);
		if (c->kill_at_ms && now >= c->kill_at_ms)
			ctr_kill(c, SIGKILL);
		else if (!c->kill_at_ms && !c->init && na_probes_run(a, p, c, spec)) {
			op_log_info("liveness probe failed: restarting", "pod", p->name, "container",
				    c->name);
			ctr_kill(c, SIGTERM);
			json_object *g = op_json_at(p->obj, "spec.terminationGracePeriodSeconds");
			c->kill_at_ms = now + (g ? json_object_get_int64(g) : 30) * 1000;
		}
		return;
	}
	if (c->state == NA_TERMINATED) {
		if (!want_restart(p, c))
			return;
		if (!c->next_start_ms) {
			c->restarts++;
			c->next_start_ms = now + na_backoff_ms(c->restarts);
			na_set_reason(&c->reason, "CrashLoopBackOff");
		}
	}
	if (c->next_start_ms && now < c->next_start_ms)
		return;
	_cleanup_free_ char *nsp = op_asprintf("/run/netns/%s", p->netns);
	if (access(nsp, F_OK) != 0) {
		p->net_ready = false; /* removed behind our back: rebuilt next pass */
		return;
	}
	struct op_err err = OP_ERR_INIT;
	int64_t t0 = na_now_ms();
	int src = na_ctr_start(a, p, c, &err);
	int64_t d = na_now_ms() - t0;
	if (d >= 200) {
		char ms[24];
		snprintf(ms, sizeof(ms), "%lld", (long long)d);
		op_log_info("slow step", "pod", p->name, "step", "start", "ms", ms);
	}
	if (src < 0) {
		op_log_warn("cannot start container", "pod", p->name, "namespace", p->ns,
			    "container", c->name, "error", err.msg);
		na_set_reason(&c->reason, "CreateContainerError");
		c->state = NA_WAITING;
		c->next_start_ms = now + 2000;
		return;
	}
	c->next_start_ms = 0;
}

static bool all_dead(struct na_pod *p)
{
	for (size_t i = 0; i < p->n_init; i++)
		if (p->init[i].pid > 0)
			return false;
	for (size_t i = 0; i < p->n_ctrs; i++)
		if (p->ctrs[i].pid > 0)
			return false;
	return true;
}

static void kill_all(struct na_pod *p, int sig)
{
	for (size_t i = 0; i < p->n_init; i++)
		ctr_kill(&p->init[i], sig);
	for (size_t i = 0; i < p->n_ctrs; i++)
		ctr_kill(&p->ctrs[i], sig);
}

static void reap_all(struct na_pod *p)
{
	for (size_t i = 0; i < p->n_init; i++)
		ctr_reap(p, &p->init[i]);
	for (size_t i = 0; i < p->n_ctrs; i++)
		ctr_reap(p, &p->ctrs[i]);
}

static void slow(struct na_pod *p, const char *step, int64_t t0)
{
	int64_t d = na_now_ms() - t0;
	if (d < 200)
		return;
	char ms[24];
	snprintf(ms, sizeof(ms), "%lld", (long long)d);
	op_log_info("slow step", "pod", p->name, "step", step, "ms", ms);
}

/* The pod is refused (never started): every container waits with the
 * refusal's reason (the one concerned with its message), a Warning Event
 * names the field or the missing PostgreSQL major. */
static void pod_refuse(struct na_agent *a, struct na_pod *p, struct na_refusal *r)
{
	for (size_t i = 0; i < p->n_init + p->n_ctrs; i++) {
		bool init = i < p->n_init;
		struct na_ctr *c = init ? &p->init[i] : &p->ctrs[i - p->n_init];
		size_t idx = init ? i : i - p->n_init;
		bool concerned = r->container < 0 || (r->init == init && (size_t)r->container == idx);
		na_set_reason(&c->reason, concerned ? r->reason : "PodInitializing");
		na_set_reason(&c->msg, concerned ? r->message : NULL);
	}
	op_log_warn("pod refused", "pod", p->name, "namespace", p->ns, "reason", r->reason,
		    "message", r->message);
	json_object *inv = op_jobj(), *md = op_jobj();
	op_jsets(inv, "apiVersion", "v1");
	op_jsets(inv, "kind", "Pod");
	op_jsets(md, "name", p->name);
	op_jsets(md, "namespace", p->ns);
	op_jsets(md, "uid", p->uid);
	op_jset(inv, "metadata", md);
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *text = op_asprintf("Error: %s", r->message);
	if (kube_event_emit(a->kc, inv, KUBE_EVENT_WARNING, "Failed", text, "kubelet", &err) < 0)
		op_log_warn("cannot record the refusal Event", "pod", p->name, "error", err.msg);
	json_object_put(inv);
}

/* Deletes the Pod object at once (grace 0, UID precondition): its containers
 * are gone (or were never started). */
static void delete_now(struct na_agent *a, struct na_pod *p)
{
	if (atomic_load(&a->cut)) /* the node is cut off: again once it is back */
		return;
	struct kube_delete_opts o = { .grace_period_seconds = 0, .precondition_uid = p->uid };
	struct op_err err = OP_ERR_INIT;
	int rc = kube_delete(a->kc, KUBE_PODS, p->ns, p->name, &o, &err);
	if (rc == 0 || rc == -ENOENT || rc == -ESTALE)
		p->deleted = true;
	else
		op_log_warn("cannot delete pod", "pod", p->name, "error", err.msg);
}

/* --scale-mode (docs/internals/node-agent.md): the pod's lifecycle without
 * its containers. Scheduled -> Running and Ready at once (a Job's pod:
 * every container terminated with exit code 0, phase Succeeded); a podIP
 * from 198.18.0.0/15 (RFC 2544 benchmarking, routed nowhere: whatever talks
 * to the pod times out as it would with a partitioned node); deletion is
 * immediate. Nothing is created on the host. */
static void scale_sync(struct na_agent *a, struct na_pod *p, const char *dts)
{
	if (dts) {
		delete_now(a, p);
		return;
	}
	if (!p->scaled) {
		static atomic_uint next_ip;
		unsigned n = atomic_fetch_add(&next_ip, 1) % (2u * 65536u - 2u) + 1u;
		snprintf(p->ip, sizeof(p->ip), "198.%u.%u.%u", 18 + n / 65536, (n / 256) % 256,
			 n % 256);
		bool job = strcmp(restart_policy(p), "Always") != 0;
		char now[32];
		na_rfc3339(now);
		for (size_t i = 0; i < p->n_init + p->n_ctrs; i++) {
			struct na_ctr *c = i < p->n_init ? &p->init[i] : &p->ctrs[i - p->n_init];
			bool done = c->init || job;
			c->state = done ? NA_TERMINATED : NA_RUNNING;
			c->exit_code = 0;
			c->ever_started = c->started = true;
			c->ready = !done;
			na_set_reason(&c->reason, done ? "Completed" : NULL);
			memcpy(c->started_at, now, sizeof(now));
			if (done)
				memcpy(c->finished_at, now, sizeof(now));
		}
		p->init_done = p->n_init;
		p->net_ready = p->vols_ready = true;
		na_set_reason(&p->waiting_reason, NULL);
		p->scaled = true;
	}
	na_pod_status(a, p);
}

static void pod_sync(struct na_agent *a, struct na_pod *p)
{
	int64_t now = na_now_ms();
	reap_all(p);
	if (!p->spec_checked && !op_json_str_at(p->obj, "metadata.deletionTimestamp")) {
		struct na_refusal r;
		p->spec_checked = true;
		if (na_podspec_check(p->obj, &a->host, &r) < 0) {
			p->refused = true;
			pod_refuse(a, p, &r);
		}
		na_refusal_done(&r);
	}
	if (p->refused && !op_json_str_at(p->obj, "metadata.deletionTimestamp")) {
		na_pod_status(a, p);
		return;
	}
	const char *dts = op_json_str_at(p->obj, "metadata.deletionTimestamp");
	if (p->scaled || (a->scale_ns && p->ns && fnmatch(a->scale_ns, p->ns, 0) == 0)) {
		scale_sync(a, p, dts);
		return;
	}
	if (dts) {
		if (!p->terminating) {
			p->terminating = true;
			json_object *g = op_json_at(p->obj, "metadata.deletionGracePeriodSeconds");
			if (!g)
				g = op_json_at(p->obj, "spec.terminationGracePeriodSeconds");
			int64_t grace = g ? json_object_get_int64(g) : 30;
			p->kill_deadline_ms = now + grace * 1000;
			kill_all(p, SIGTERM);
			op_log_info("pod terminating", "pod", p->name, "namespace", p->ns);
		}
		if (!all_dead(p) && now >= p->kill_deadline_ms)
			kill_all(p, SIGKILL);
		if (all_dead(p) && !p->deleted) {
			pod_teardown(a, p);
			delete_now(a, p);
		}
		return;
	}
	struct op_err err = OP_ERR_INIT;
	int epoch = atomic_load(&a->net_epoch);
	if (epoch != p->net_epoch) {
		p->net_epoch = epoch;
		p->net_ready = false;
	}
	if (!p->net_ready) {
		int64_t t0 = na_now_ms();
		int nrc = pod_network(a, p, &err);
		slow(p, "network", t0);
		if (nrc < 0) {
			na_set_reason(&p->waiting_reason, "ContainerCreating");
			free(p->waiting_msg);
			p->waiting_msg = op_strdup(err.msg);
			op_log_warn("pod network", "pod", p->name, "error", err.msg);
			na_pod_status(a, p);
			return;
		}
		p->net_ready = true;
		na_pod_hosts_write(a, p);
	}
	/* a cut node reads no Secrets, ConfigMaps or tokens: it keeps what it has, and a
	 * pod without its volumes yet waits */
	bool cut = atomic_load(&a->cut);
	if (cut && !p->vols_ready)
		return;
	if ((!p->vols_ready || now >= p->next_refresh_ms) && !cut) {
		op_err_clear(&err);
		int64_t t0 = na_now_ms();
		int vrc = na_volumes_setup(a, p, &err);
		slow(p, "volumes", t0);
		if (vrc < 0) {
			if (!p->vols_ready) {
				free(p->waiting_msg);
				p->waiting_msg = op_strdup(err.msg);
				p->next_refresh_ms = now + 1000;
				na_pod_status(a, p);
				return;
			}
		} else {
			p->vols_ready = true;
		}
		p->next_refresh_ms = now + 15000;
	}
	const char *rp = restart_policy(p);
	while (p->init_done < p->n_init && !p->init_failed) {
		struct na_ctr *c = &p->init[p->init_done];
		if (c->state == NA_TERMINATED && c->exit_code == 0 && c->pid == 0) {
			p->init_done++;
			continue;
		}
		if (c->state == NA_TERMINATED && !strcmp(rp, "Never")) {
			p->init_failed = true;
			break;
		}
		ctr_run(a, p, c);
		break;
	}
	if (p->init_done == p->n_init && !p->init_failed)
		for (size_t i = 0; i < p->n_ctrs; i++)
			ctr_run(a, p, &p->ctrs[i]);
	na_pod_status(a, p);
}

struct worker_arg {
	struct na_agent *a;
	struct na_pod *p;
};

/* How long the worker may sleep: 100 ms while something is in progress
 * (set-up, a container starting, stopping, in back-off or not yet
 * started/ready), else until the next probe or volume refresh is due,
 * at most 1 s (a container's exit is noticed within that). A new Pod
 * from the informer wakes it at once. */
static int64_t idle_ms(struct na_pod *p, int64_t now)
{
	if (p->deleted)
		return 1000;
	if (p->scaled)
		return 60000; /* nothing runs: only a new Pod object (wake) matters */
	if (p->refused)
		return 1000;
	if (!p->net_ready || !p->vols_ready || p->terminating || p->init_done < p->n_init)
		return 100;
	int64_t due = now + 1000;
	if (p->next_refresh_ms && p->next_refresh_ms < due)
		due = p->next_refresh_ms;
	for (size_t i = 0; i < p->n_ctrs; i++) {
		struct na_ctr *c = &p->ctrs[i];
		if (c->state == NA_RUNNING && c->kill_at_ms)
			return 100;
		if (c->state != NA_RUNNING) {
			if (c->next_start_ms && c->next_start_ms < due)
				due = c->next_start_ms;
			else if (!c->next_start_ms && c->state == NA_WAITING)
				return 100;
			continue;
		}
		for (int k = 0; k < NA_PROBE__N; k++)
			if (c->next_probe_ms[k] == 0)
				return 100; /* first probe not scheduled yet */
			else if (c->next_probe_ms[k] < due)
				due = c->next_probe_ms[k];
	}
	int64_t d = due - now;
	return d < 20 ? 20 : d;
}

/* One thread per pod (like the kubelet's pod workers): a slow API call or
 * probe of one pod never delays another. */
static void *pod_worker(void *arg)
{
	struct worker_arg *w = arg;
	struct na_agent *a = w->a;
	struct na_pod *p = w->p;
	free(w);
	while (!atomic_load(&p->stop)) {
		pthread_mutex_lock(&p->mu);
		json_object *obj = p->next_obj;
		p->next_obj = NULL;
		p->wake = false;
		pthread_mutex_unlock(&p->mu);
		if (obj) {
			json_object_put(p->obj);
			p->obj = obj;
		}
		if (!p->deleted)
			pod_sync(a, p);
		int64_t now = na_now_ms();
		unsigned sg = atomic_load(&a->gen_svcs);
		/* a scale-mode pod has no containers to read /etc/hosts: at 1,000 of them
		 * every Service change made each worker parse every Service at once */
		if (p->net_ready && !p->deleted && !p->scaled &&
		    (sg != p->svc_gen || now >= p->next_hosts_ms)) {
			p->svc_gen = sg;
			na_pod_hosts_write(a, p);
			p->next_hosts_ms = now + 10000;
		}
		int64_t ms = idle_ms(p, na_now_ms());
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->mu);
		while (!p->wake && !atomic_load(&p->stop) &&
		       pthread_cond_timedwait(&p->wake_cond, &p->mu, &ts) == 0)
			;
		pthread_mutex_unlock(&p->mu);
	}
	if (atomic_load(&p->shutdown))
		return NULL; /* na_pods_stop_all stops the processes of all pods at once */
	/* gone from the API (force-deleted, or deleted by us) */
	kill_all(p, SIGKILL);
	for (int tries = 0; tries < 100 && !all_dead(p); tries++) {
		usleep(20000);
		reap_all(p);
	}
	if (!p->deleted && !p->scaled)
		pod_teardown(a, p);
	op_log_info("pod removed", "pod", p->name, "namespace", p->ns);
	return NULL;
}

static void worker_start(struct na_agent *a, struct na_pod *p)
{
	struct worker_arg *w = op_malloc(sizeof(*w));
	*w = (struct worker_arg){ a, p };
	if (pthread_create(&p->thread, NULL, pod_worker, w) != 0) {
		free(w);
		op_log_error("cannot start a pod worker thread", "pod", p->name);
		return;
	}
	p->thread_started = true;
}

/* kube_informer_list_except's callback (under the cache's read lock): a Pod
 * whose resourceVersion its worker already has is seen, and not parsed. At
 * 1,000 Pods each sync parsed every one of them: 188 s of CPU over a
 * 6-minute creation burst (bench/scale.sh). */
static bool pod_known(void *ud, const char *key, const char *rv)
{
	struct na_agent *a = ud;
	const char *slash = strchr(key, '/');
	if (!slash)
		return false;
	size_t nsl = (size_t)(slash - key);
	for (struct na_pod *p = a->pod_list; p; p = p->next)
		if (strlen(p->ns) == nsl && strncmp(p->ns, key, nsl) == 0 &&
		    strcmp(p->name, slash + 1) == 0 && p->handed_rv && strcmp(p->handed_rv, rv) == 0) {
			p->seen = true;
			return true;
		}
	return false;
}

void na_pods_sync(struct na_agent *a)
{
	for (struct na_pod *p = a->pod_list; p; p = p->next)
		p->seen = false;
	json_object *list = kube_informer_list_except(a->pods, NULL, pod_known, a);
	size_t n = list ? json_object_array_length(list) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *obj = json_object_array_get_idx(list, i);
		const char *uid = kube_obj_uid(obj);
		const char *node = op_json_str_at(obj, "spec.nodeName");
		if (!uid || !node || strcmp(node, a->node_name))
			continue;
		struct na_pod *p = a->pod_list;
		while (p && strcmp(p->uid, uid))
			p = p->next;
		if (!p) {
			const char *phase = op_json_str_at(obj, "status.phase");
			if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) &&
			    !op_json_str_at(obj, "metadata.deletionTimestamp"))
				continue;
			p = pod_new(a, obj); /* p->obj: a reference to the list's copy */
			p->handed_rv = op_strdup(kube_obj_resource_version(obj) ?: "");
			worker_start(a, p);
		} else if (strcmp(p->handed_rv, kube_obj_resource_version(obj) ?: "") != 0) {
			/* only a changed Pod wakes its worker: at 1,000 Pods every sync
			 * handed each worker a fresh copy (the agent grew to 22 GB) */
			free(p->handed_rv);
			p->handed_rv = op_strdup(kube_obj_resource_version(obj) ?: "");
			pthread_mutex_lock(&p->mu);
			if (p->next_obj)
				json_object_put(p->next_obj);
			p->next_obj = json_object_get(obj);
			p->wake = true;
			pthread_cond_signal(&p->wake_cond);
			pthread_mutex_unlock(&p->mu);
		}
		p->seen = true;
	}
	/* the list array holds the other reference of every handed-over object:
	 * drop it before any worker can touch them */
	if (list)
		json_object_put(list);
	for (struct na_pod **pp = &a->pod_list; *pp;) {
		struct na_pod *p = *pp;
		if (p->seen) {
			pp = &p->next;
			continue;
		}
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->stop, true);
		pthread_cond_signal(&p->wake_cond);
		pthread_mutex_unlock(&p->mu);
		if (p->thread_started)
			pthread_join(p->thread, NULL);
		*pp = p->next;
		pod_free(p);
	}
}

void na_pods_stop_all(struct na_agent *a)
{
	for (struct na_pod *p = a->pod_list; p; p = p->next) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->shutdown, true);
		atomic_store(&p->stop, true);
		pthread_cond_signal(&p->wake_cond);
		pthread_mutex_unlock(&p->mu);
	}
	for (struct na_pod *p = a->pod_list; p; p = p->next)
		if (p->thread_started) {
			pthread_join(p->thread, NULL);
			p->thread_started = false;
		}
	int64_t deadline = na_now_ms() + 10000;
	for (struct na_pod *p = a->pod_list; p; p = p->next)
		kill_all(p, SIGTERM);
	for (;;) {
		bool alive = false;
		for (struct na_pod *p = a->pod_list; p; p = p->next) {
			reap_all(p);
			alive |= !all_dead(p);
		}
		if (!alive)
			break;
		if (na_now_ms() >= deadline) {
			for (struct na_pod *p = a->pod_list; p; p = p->next)
				kill_all(p, SIGKILL);
			deadline = na_now_ms() + 5000;
		}
		usleep(50000);
	}
	while (a->pod_list) {
		struct na_pod *p = a->pod_list;
		a->pod_list = p->next;
		pod_teardown(a, p);
		pod_free(p);
	}
}
