/* reconciler/start.c - cluster access with back-off, leader election and the
 * controller's start-up for `pgop controller` (start.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/leader.h"
#include "reconciler/start.h"
#include "support/alloc.h"
#include "support/log.h"
#include "support/metrics.h"

struct rc_runner {
	/* options, owned copies */
	char *kubeconfig, *lease, *lease_ns, *identity, *ns_list;
	char *operator_image, *default_image;
	char **ns;
	size_t n_ns;
	bool elect;
	unsigned workers, retry_min_ms, retry_max_ms;
	long status_timeout_ms;
	unsigned node_lost_timeout_s;
	unsigned kube_qps, kube_burst;
	rc_validate_fn validate;
	void *validate_userdata;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;          /* under lock */
	unsigned failures;  /* under lock */
	/* set once by the thread under lock when everything started */
	struct kube_client *kc;
	struct kube_leader *le;
	struct rc_controller *rc;
};

static bool is_leader(void *ud)
{
	return kube_leader_is_leader(ud);
}

static void on_started(void *ud)
{
	op_log_info("reconciler: leading (Lease acquired)");
}

static void on_stopped(void *ud)
{
	op_log_warn("reconciler: lost the Lease, reconciles paused");
}

static int split_namespaces(struct rc_runner *r, const char *list, struct op_err *err)
{
	if (!list || !*list)
		return 0;
	_cleanup_free_ char *copy = op_strdup(list);
	char *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (r->n_ns == RC_MAX_NAMESPACES)
			return op_err_set(err, -EINVAL, "--watch-namespaces: more than %d",
					  RC_MAX_NAMESPACES);
		r->ns = op_realloc(r->ns, (r->n_ns + 1) * sizeof(char *));
		r->ns[r->n_ns++] = op_strdup(t);
	}
	if (r->n_ns == 0)
		return op_err_set(err, -EINVAL, "--watch-namespaces \"%s\" names no namespace", list);
	return 0;
}

static char *default_identity(void)
{
	const char *pod = getenv("POD_NAME");
	if (pod && *pod)
		return op_strdup(pod);
	char host[256] = "pgop";
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "pgop");
	host[sizeof(host) - 1] = '\0';
	return op_asprintf("%s-%ld", host, (long)getpid());
}

static char *dup_or_null(const char *s)
{
	return s && *s ? op_strdup(s) : NULL;
}

/* One attempt: config, client, Lease candidate, controller. On failure
 * everything made so far is released and err says why. */
static int attempt(struct rc_runner *r, struct op_err *err)
{
	struct kube_config *cfg = NULL;
	struct kube_client *kc = NULL;
	struct kube_leader *le = NULL;
	struct rc_controller *rc = NULL;
	int e = kube_config_load(r->kubeconfig, &cfg, err);
	if (e == 0)
		e = kube_client_new(cfg,
				    &(struct kube_client_opts){ .qps = r->kube_qps,
								.burst = (int)r->kube_burst },
				    &kc, err); /* takes cfg */
	if (e == 0 && r->elect) {
		const char *ns = r->lease_ns ? r->lease_ns : kube_client_namespace(kc);
		struct kube_leader_opts lo = {
			.ns = ns,
			.name = r->lease,
			.identity = r->identity,
			.release_on_stop = true,
			.on_started_leading = on_started,
			.on_stopped_leading = on_stopped,
		};
		e = kube_leader_new(kc, &lo, &le, err);
		if (e == 0)
			e = kube_leader_start(le, err);
	}
	if (e == 0) {
		struct rc_controller_opts ro = {
			.client = kc,
			.namespaces = (const char *const *)r->ns,
			.n_namespaces = r->n_ns,
			.workers = r->workers,
			.settings = { .operator_image = r->operator_image,
				      .default_image = r->default_image,
				      .node_lost_timeout_s = r->node_lost_timeout_s },
			.validate = r->validate,
			.validate_userdata = r->validate_userdata,
			.status_timeout_ms = r->status_timeout_ms,
			.is_leader = r->elect ? is_leader : NULL,
			.leader_userdata = le,
		};
		e = rc_controller_start(&ro, &rc, err);
	}
	if (e < 0) {
		kube_leader_stop(le);
		kube_leader_free(le);
		kube_client_free(kc);
		return e;
	}
	pthread_mutex_lock(&r->lock);
	r->kc = kc;
	r->le = le;
	r->rc = rc;
	pthread_mutex_unlock(&r->lock);
	char workers[16];
	snprintf(workers, sizeof(workers), "%u", r->workers ? r->workers : 4);
	op_log_info("reconciler started", "server", kube_client_config(kc)->server, "workers",
		    workers, "leader_election", r->elect ? "true" : "false", "namespaces",
		    r->ns_list ? r->ns_list : "all");
	return 0;
}

/* Waits ms or until stopped; true when stopped. */
static bool wait_or_stop(struct rc_runner *r, unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&r->lock);
	while (!r->stop && pthread_cond_timedwait(&r->cond, &r->lock, &until) != ETIMEDOUT)
		;
	bool stop = r->stop;
	pthread_mutex_unlock(&r->lock);
	return stop;
}

static void *run(void *ud)
{
	struct rc_runner *r = ud;
	unsigned backoff = r->retry_min_ms;
	_cleanup_free_ char *last = NULL;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		bool stop = r->stop;
		pthread_mutex_unlock(&r->lock);
		if (stop)
			return NULL;
		struct op_err err = OP_ERR_INIT;
		if (attempt(r, &err) == 0) {
			if (last) {
				char n[16];
				snprintf(n, sizeof(n), "%u", rc_runner_failures(r));
				op_log_info("reconciler: cluster access recovered", "failed_attempts", n);
			}
			return NULL;
		}
		pthread_mutex_lock(&r->lock);
		r->failures++;
		pthread_mutex_unlock(&r->lock);
		if (!last || strcmp(last, err.msg) != 0) { /* once per distinct reason */
			char ms[16];
			snprintf(ms, sizeof(ms), "%u", backoff);
			op_log_error("reconciler: no usable cluster access; retrying with back-off, "
				     "not ready (--webhooks-only serves admission alone)",
				     "error", err.msg, "retry_ms", ms);
			free(last);
			last = op_strdup(err.msg);
		}
		if (wait_or_stop(r, backoff))
			return NULL;
		backoff = backoff >= r->retry_max_ms / 2 ? r->retry_max_ms : backoff * 2;
	}
}

/* The /metrics collector (support/metrics.h): the controller's families once
 * it runs, nothing before. */
static int collect(void *ud, struct op_buf *out)
{
	struct rc_controller *rc = rc_runner_controller(ud);
	return rc ? rc_controller_render_metrics(rc, out) : 0;
}

int rc_runner_start(const struct rc_start_opts *o, struct rc_runner **ret, struct op_err *err)
{
	struct rc_runner *r = op_calloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	int e = split_namespaces(r, o->watch_namespaces, err);
	if (e < 0) {
		rc_runner_free(r);
		return e;
	}
	r->kubeconfig = dup_or_null(o->kubeconfig);
	r->ns_list = dup_or_null(o->watch_namespaces);
	r->lease = op_strdup(o->leader_lease && *o->leader_lease ? o->leader_lease
								 : RC_LEASE_DEFAULT);
	const char *lns = o->lease_namespace ? o->lease_namespace : getenv("POD_NAMESPACE");
	r->lease_ns = dup_or_null(lns);
	r->identity = o->identity && *o->identity ? op_strdup(o->identity) : default_identity();
	r->operator_image = dup_or_null(o->settings.operator_image);
	r->default_image = dup_or_null(o->settings.default_image);
	r->node_lost_timeout_s = o->settings.node_lost_timeout_s;
	r->elect = o->leader_elect;
	r->workers = o->workers;
	r->status_timeout_ms = o->status_timeout_ms;
	r->kube_qps = o->kube_qps;
	r->kube_burst = o->kube_burst;
	r->validate = o->validate;
	r->validate_userdata = o->validate_userdata;
	r->retry_min_ms = o->retry_min_ms ? o->retry_min_ms : RC_RETRY_MIN_MS_DEFAULT;
	r->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : RC_RETRY_MAX_MS_DEFAULT;
	if (r->retry_max_ms < r->retry_min_ms)
		r->retry_max_ms = r->retry_min_ms;
	e = pthread_create(&r->thread, NULL, run, r);
	if (e != 0) {
		rc_runner_free(r);
		return op_err_set(err, -e, "reconciler: cannot start its thread: %s", strerror(e));
	}
	r->thread_started = true;
	if (op_metrics_register(collect, r) < 0)
		op_log_warn("reconciler metrics not exported: too many collectors");
	*ret = r;
	return 0;
}

bool rc_runner_ready(struct rc_runner *r)
{
	pthread_mutex_lock(&r->lock);
	struct rc_controller *rc = r->stop ? NULL : r->rc;
	bool ready = rc && rc_controller_synced(rc);
	pthread_mutex_unlock(&r->lock);
	return ready;
}

struct rc_controller *rc_runner_controller(struct rc_runner *r)
{
	pthread_mutex_lock(&r->lock);
	struct rc_controller *rc = r->stop ? NULL : r->rc;
	pthread_mutex_unlock(&r->lock);
	return rc;
}

struct kube_client *rc_runner_client(struct rc_runner *r)
{
	pthread_mutex_lock(&r->lock);
	struct kube_client *kc = r->stop || !r->rc ? NULL : r->kc;
	pthread_mutex_unlock(&r->lock);
	return kc;
}

unsigned rc_runner_failures(struct rc_runner *r)
{
	pthread_mutex_lock(&r->lock);
	unsigned n = r->failures;
	pthread_mutex_unlock(&r->lock);
	return n;
}

void rc_runner_free(struct rc_runner *r)
{
	if (!r)
		return;
	op_metrics_unregister(collect, r); /* waits for a scrape using r */
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (r->thread_started)
		pthread_join(r->thread, NULL);
	rc_controller_free(r->rc); /* workers and informers first */
	kube_leader_stop(r->le);   /* then release the Lease */
	kube_leader_free(r->le);
	kube_client_free(r->kc);
	for (size_t i = 0; i < r->n_ns; i++)
		free(r->ns[i]);
	free(r->ns);
	free(r->kubeconfig);
	free(r->ns_list);
	free(r->lease);
	free(r->lease_ns);
	free(r->identity);
	free(r->operator_image);
	free(r->default_image);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
