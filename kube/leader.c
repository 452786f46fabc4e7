/* kube/leader.c - core v1 Events (with folding of repeats) and Lease-based
 * leader election. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"
#include "kube/leader.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/log.h"

#define EVENT_FOLD_WINDOW_MS (10 * 60 * 1000)
#define EVENT_MESSAGE_MAX 1024

/* RFC 3339 UTC; micro = true for MicroTime (".000000Z"). */
static void format_time(char *buf, size_t len, int64_t wall_ms, bool micro)
{
	time_t secs = (time_t)(wall_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (micro)
		snprintf(buf + n, len - n, ".%06ldZ", (long)(wall_ms % 1000) * 1000L);
	else
		snprintf(buf + n, len - n, "Z");
}

/* ---------------------------------------------------------------- events */

static int event_fold(struct kube_client *c, const char *key, char **ret_ns, char **ret_name,
		      int *ret_count)
{
	int64_t now = kube__now_ms();
	int found = 0;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < KUBE__EVENT_CACHE; i++) {
		struct kube__event_slot *s = &c->events[i];
		if (s->key && !strcmp(s->key, key) && now - s->last_ms < EVENT_FOLD_WINDOW_MS) {
			s->count++;
			s->last_ms = now;
			*ret_ns = op_strdup(s->ns);
			*ret_name = op_strdup(s->name);
			*ret_count = s->count;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

static void event_remember(struct kube_client *c, const char *key, const char *ns,
			   const char *name)
{
	pthread_mutex_lock(&c->lock);
	struct kube__event_slot *s = &c->events[c->events_next++ % KUBE__EVENT_CACHE];
	free(s->key);
	free(s->ns);
	free(s->name);
	s->key = op_strdup(key);
	s->ns = op_strdup(ns);
	s->name = op_strdup(name);
	s->count = 1;
	s->last_ms = kube__now_ms();
	pthread_mutex_unlock(&c->lock);
}

int kube_event_emit(struct kube_client *c, json_object *involved, const char *type,
		    const char *reason, const char *message, const char *component,
		    struct op_err *err)
{
	return kube__event_emit_at(c, involved, type, reason, message, component,
				   kube__wall_ms(), err);
}

int kube__event_emit_at(struct kube_client *c, json_object *involved, const char *type,
			const char *reason, const char *message, const char *component,
			int64_t wall, struct op_err *err)
{
	const char *name = kube_obj_name(involved);
	const char *ns = kube_obj_namespace(involved);
	const char *uid = kube_obj_uid(involved);
	if (!name)
		return op_err_set(err, -EINVAL, "event: involved object has no name");
	if (!ns || !*ns)
		ns = "default";
	if (!component)
		component = "pgop";
	_cleanup_free_ char *msg = op_strndup(message ? message : "", EVENT_MESSAGE_MAX);
	_cleanup_free_ char *key = op_asprintf("%s|%s/%s|%s|%s|%s", uid ? uid : "", ns, name, type,
					       reason, msg);
	char now[64];
	format_time(now, sizeof(now), wall, false);

	_cleanup_free_ char *fns = NULL, *fname = NULL;
	int count = 0;
	if (event_fold(c, key, &fns, &fname, &count)) {
		_cleanup_free_ char *patch = op_asprintf("{\"count\":%d,\"lastTimestamp\":\"%s\"}",
							 count, now);
		struct op_err perr = OP_ERR_INIT;
		int r = kube_patch(c, KUBE_EVENTS, fns, fname, KUBE_PATCH_MERGE, patch, NULL, &perr);
		if (r == 0)
			return 0;
		if (r != -ENOENT)
			return op_err_set(err, r, "%s", perr.msg);
		/* The Event was garbage-collected: create a new one. */
	}

	_cleanup_(op_json_putp) json_object *ev = op_jobj();
	json_object *md = op_jobj();
	json_object *io = op_jobj();
	json_object *src = op_jobj();
	/* <name>.<hex nanoseconds> like client-go; seq keeps same-ms events apart. */
	static atomic_uint seq;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	unsigned long long nanos = (unsigned long long)ts.tv_sec * 1000000000ULL +
				   (unsigned long long)ts.tv_nsec + atomic_fetch_add(&seq, 1);
	_cleanup_free_ char *evname = op_asprintf("%s.%llx", name, nanos);
	op_jsets(md, "name", evname);
	op_jsets(md, "namespace", ns);
	static const char *const copy_keys[] = { "kind", "apiVersion" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(copy_keys); i++) {
		const char *v = op_json_str_at(involved, copy_keys[i]);
		if (v)
			op_jsets(io, copy_keys[i], v);
	}
	op_jsets(io, "name", name);
	if (kube_obj_namespace(involved))
		op_jsets(io, "namespace", kube_obj_namespace(involved));
	if (uid)
		op_jsets(io, "uid", uid);
	if (kube_obj_resource_version(involved))
		op_jsets(io, "resourceVersion", kube_obj_resource_version(involved));
	op_jsets(src, "component", component);
	op_jsets(ev, "apiVersion", "v1");
	op_jsets(ev, "kind", "Event");
	op_jset(ev, "metadata", md);
	op_jset(ev, "involvedObject", io);
	op_jset(ev, "source", src);
	op_jsets(ev, "type", type ? type : KUBE_EVENT_NORMAL);
	op_jsets(ev, "reason", reason);
	op_jsets(ev, "message", msg);
	op_jsets(ev, "firstTimestamp", now);
	op_jsets(ev, "lastTimestamp", now);
	op_jset(ev, "count", op_jint(1));
	op_jsets(ev, "reportingComponent", component);
	int r = kube_create(c, KUBE_EVENTS, ns, ev, NULL, err);
	if (r < 0)
		return r;
	event_remember(c, key, ns, evname);
	return 0;
}

/* ---------------------------------------------------------------- leases */

struct kube_leader {
	struct kube_client *c;
	char *ns;
	char *name;
	char *identity;
	int lease_ms;
	int renew_deadline_ms;
	int retry_ms;
	bool release_on_stop;
	void (*on_start)(void *);
	void (*on_stop)(void *);
	void *ud;

	/* election state: only the election thread (or the kube_leader_try caller) */
	char *observed;        /* holder|renewTime|rv last seen */
	int64_t observed_ms;
	atomic_llong last_renew_ms; /* monotonic ms of our last successful write */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started;
	bool joined;
	atomic_bool stop;
	atomic_bool leading;
	pthread_t thread;
};

int kube_leader_new(struct kube_client *c, const struct kube_leader_opts *opts,
		    struct kube_leader **ret_le, struct op_err *err)
{
	if (!opts || !opts->ns || !opts->name || !opts->identity || !*opts->identity)
		return op_err_set(err, -EINVAL, "leader election: namespace, name and identity are required");
	struct kube_leader *le = op_calloc(1, sizeof(*le));
	le->c = c;
	le->ns = op_strdup(opts->ns);
	le->name = op_strdup(opts->name);
	le->identity = op_strdup(opts->identity);
	le->lease_ms = opts->lease_duration_ms > 0 ? opts->lease_duration_ms : 15000;
	le->renew_deadline_ms = opts->renew_deadline_ms > 0 ? opts->renew_deadline_ms : 10000;
	le->retry_ms = opts->retry_period_ms > 0 ? opts->retry_period_ms : 2000;
	if (le->renew_deadline_ms >= le->lease_ms)
		le->renew_deadline_ms = le->lease_ms * 2 / 3;
	le->release_on_stop = opts->release_on_stop;
	le->on_start = opts->on_started_leading;
	le->on_stop = opts->on_stopped_leading;
	le->ud = opts->userdata;
	pthread_mutex_init(&le->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&le->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&le->stop, false);
	atomic_init(&le->leading, false);
	atomic_init(&le->last_renew_ms, 0);
	*ret_le = le;
	return 0;
}

static int lease_seconds(const struct kube_leader *le)
{
	return (le->lease_ms + 999) / 1000;
}

/* Builds the spec we write: holder = identity (or "" to release). */
static void fill_spec(struct kube_leader *le, json_object *spec, const char *holder,
		      bool transition, int64_t transitions, int dur_s)
{
	char now[64];
	format_time(now, sizeof(now), kube__wall_ms(), true);
	op_jsets(spec, "holderIdentity", holder);
	op_jset(spec, "leaseDurationSeconds", op_jint(dur_s));
	op_jsets(spec, "renewTime", now);
	if (transition) {
		op_jsets(spec, "acquireTime", now);
		op_jset(spec, "leaseTransitions", op_jint(transitions));
	}
}

static int lease_create(struct kube_leader *le, bool *ret_leading, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *lease = op_jobj();
	json_object *md = op_jobj();
	json_object *spec = op_jobj();
	op_jsets(lease, "apiVersion", "coordination.k8s.io/v1");
	op_jsets(lease, "kind", "Lease");
	op_jsets(md, "name", le->name);
	op_jsets(md, "namespace", le->ns);
	op_jset(lease, "metadata", md);
	fill_spec(le, spec, le->identity, true, 0, lease_seconds(le));
	op_jset(lease, "spec", spec);
	struct op_err cerr = OP_ERR_INIT;
	int r = kube_create(le->c, KUBE_LEASES, le->ns, lease, NULL, &cerr);
	if (r == -EEXIST || r == -ESTALE) {
		*ret_leading = false; /* another candidate created it first */
		return 0;
	}
	if (r < 0)
		return op_err_set(err, r, "%s", cerr.msg);
	*ret_leading = true;
	return 0;
}

int kube_leader_try(struct kube_leader *le, bool *ret_leading, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *lease = NULL;
	struct op_err gerr = OP_ERR_INIT;
	int r = kube_get(le->c, KUBE_LEASES, le->ns, le->name, &lease, &gerr);
	if (r == -ENOENT)
		return lease_create(le, ret_leading, err);
	if (r < 0)
		return op_err_set(err, r, "%s", gerr.msg);
	json_object *spec = json_object_object_get(lease, "spec");
	if (!spec) {
		spec = op_jobj();
		op_jset(lease, "spec", spec);
	}
	const char *holder = op_json_str_at(spec, "holderIdentity");
	const char *renew = op_json_str_at(spec, "renewTime");
	const char *rv = kube_obj_resource_version(lease);
	int64_t dur_s = 0, transitions = 0;
	json_object *v;
	if (json_object_object_get_ex(spec, "leaseDurationSeconds", &v))
		dur_s = json_object_get_int64(v);
	if (json_object_object_get_ex(spec, "leaseTransitions", &v))
		transitions = json_object_get_int64(v);
	if (dur_s <= 0)
		dur_s = lease_seconds(le);

	/* Expiry is judged on our own clock from when we last saw the record
	 * change (like client-go), so clock skew between nodes does not matter. */
	_cleanup_free_ char *seen = op_asprintf("%s|%s|%s", holder ? holder : "",
						renew ? renew : "", rv ? rv : "");
	int64_t now = kube__now_ms();
	if (!le->observed || strcmp(le->observed, seen) != 0) {
		free(le->observed);
		le->observed = TAKE_PTR(seen);
		le->observed_ms = now;
	}
	bool ours = holder && !strcmp(holder, le->identity);
	bool free_lease = !holder || !*holder;
	if (!ours && !free_lease && now < le->observed_ms + dur_s * 1000) {
		*ret_leading = false;
		return 0;
	}
	fill_spec(le, spec, le->identity, !ours, transitions + (ours ? 0 : 1), lease_seconds(le));
	struct op_err uerr = OP_ERR_INIT;
	r = kube_update(le->c, KUBE_LEASES, le->ns, lease, NULL, &uerr);
	if (r == -ESTALE || r == -ENOENT) {
		*ret_leading = false; /* lost the race: someone else wrote first */
		return 0;
	}
	if (r < 0)
		return op_err_set(err, r, "%s", uerr.msg);
	*ret_leading = true;
	return 0;
}

static void release(struct kube_leader *le)
{
	_cleanup_(op_json_putp) json_object *lease = NULL;
	if (kube_get(le->c, KUBE_LEASES, le->ns, le->name, &lease, NULL) < 0)
		return;
	const char *holder = op_json_str_at(lease, "spec.holderIdentity");
	json_object *spec = json_object_object_get(lease, "spec");
	if (!spec || !holder || strcmp(holder, le->identity) != 0)
		return;
	fill_spec(le, spec, "", false, 0, 1);
	struct op_err e = OP_ERR_INIT;
	if (kube_update(le->c, KUBE_LEASES, le->ns, lease, NULL, &e) < 0)
		op_log_info("lease not released: it expires by itself", "lease", le->name,
			    "error", e.msg);
}

static void leader_wait(struct kube_leader *le, long ms)
{
	kube__wait_stop(&le->lock, &le->cond, &le->stop, ms);
}

static void set_leading(struct kube_leader *le, bool leading)
{
	bool was = atomic_exchange(&le->leading, leading);
	if (leading && !was && le->on_start)
		le->on_start(le->ud);
	else if (!leading && was && le->on_stop)
		le->on_stop(le->ud);
}

static void *leader_main(void *arg)
{
	struct kube_leader *le = arg;
	while (!atomic_load(&le->stop)) {
		bool leading = false;
		int r = kube_leader_try(le, &leading, NULL);
		int64_t now = kube__now_ms();
		if (r == 0 && leading) {
			atomic_store(&le->last_renew_ms, now);
			set_leading(le, true);
		} else if (r == 0) {
			set_leading(le, false);
		} else if (atomic_load(&le->leading) &&
			   now - atomic_load(&le->last_renew_ms) > le->renew_deadline_ms) {
			/* Could not renew in time: others may take over at expiry. */
			set_leading(le, false);
		}
		leader_wait(le, le->retry_ms);
	}
	if (atomic_load(&le->leading) && le->release_on_stop)
		release(le);
	set_leading(le, false);
	return NULL;
}

int kube_leader_start(struct kube_leader *le, struct op_err *err)
{
	pthread_mutex_lock(&le->lock);
	if (le->started) {
		pthread_mutex_unlock(&le->lock);
		return op_err_set(err, -EALREADY, "leader election: already started");
	}
	int r = pthread_create(&le->thread, NULL, leader_main, le);
	if (r == 0)
		le->started = true;
	pthread_mutex_unlock(&le->lock);
	if (r != 0)
		return op_err_set(err, -r, "leader election: cannot start thread: %s", strerror(r));
	return 0;
}

bool kube_leader_is_leader(struct kube_leader *le)
{
	/* Past the renew deadline we no longer claim to lead even if the
	 * election thread is stuck in a slow request: another candidate may
	 * take over once the lease duration (> renew deadline) has passed. */
	return atomic_load(&le->leading) &&
	       kube__now_ms() - atomic_load(&le->last_renew_ms) <= le->renew_deadline_ms;
}

void kube_leader_stop(struct kube_leader *le)
{
	if (!le)
		return;
	atomic_store(&le->stop, true);
	pthread_mutex_lock(&le->lock);
	pthread_cond_broadcast(&le->cond);
	bool join = le->started && !le->joined;
	le->joined = true;
	pthread_mutex_unlock(&le->lock);
	if (join)
		pthread_join(le->thread, NULL);
}

struct kube_leader *kube_leader_free(struct kube_leader *le)
{
	if (!le)
		return NULL;
	kube_leader_stop(le);
	pthread_mutex_destroy(&le->lock);
	pthread_cond_destroy(&le->cond);
	free(le->ns);
	free(le->name);
	free(le->identity);
	free(le->observed);
	free(le);
	return NULL;
}
