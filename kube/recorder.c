/* kube/recorder.c - struct kube_recorder: a bounded FIFO of Events and the
 * thread that posts them (kube/recorder.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"
#include "kube/leader.h"
#include "kube/recorder.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "support/metrics.h"

/* The involved object's identity as plain strings (a json-c tree of the same
 * six fields costs ~2 KB with its two hash tables, and a creation burst can
 * queue hundreds): what kube_event_emit copies into involvedObject. */
enum { ID_API_VERSION, ID_KIND, ID_NAME, ID_NAMESPACE, ID_UID, ID_RV, ID__N };
static const struct {
	const char *path; /* in the object */
	const char *key;  /* in the identity handed to kube_event_emit */
	bool meta;
} id_fields[ID__N] = {
	[ID_API_VERSION] = { "apiVersion", "apiVersion", false },
	[ID_KIND] = { "kind", "kind", false },
	[ID_NAME] = { "metadata.name", "name", true },
	[ID_NAMESPACE] = { "metadata.namespace", "namespace", true },
	[ID_UID] = { "metadata.uid", "uid", true },
	[ID_RV] = { "metadata.resourceVersion", "resourceVersion", true },
};

struct rec_event {
	struct rec_event *next;
	char *id[ID__N];               /* owned, NULL when absent */
	char *type, *reason, *message; /* owned */
	int64_t wall_ms;
	uint64_t seq;
};

struct kube_recorder {
	struct kube_client *c; /* borrowed */
	char *component;       /* owned */
	size_t cap;
	pthread_t thread;
	pthread_mutex_t lock;  /* guards everything below */
	pthread_cond_t wake;   /* an Event queued, or stopping */
	pthread_cond_t done;   /* an Event posted (flush waits on it) */
	struct rec_event *head, *tail; /* owned list */
	size_t queued;
	uint64_t seq_queued;   /* seq of the last Event queued */
	uint64_t seq_done;     /* seq of the last Event posted, failed or dropped */
	bool stopping;
	int64_t drain_until;   /* monotonic ms: posts no more after it */
	struct kube_recorder_stats st;
};

static void event_free(struct rec_event *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ID__N; i++)
		free(ev->id[i]);
	free(ev->type);
	free(ev->reason);
	free(ev->message);
	free(ev);
}

/* A json-c object of ev's identity for kube_event_emit (owned). */
static json_object *identity_json(const struct rec_event *ev)
{
	json_object *id = op_jobj();
	json_object *md = op_jobj();
	for (size_t i = 0; i < ID__N; i++)
		if (ev->id[i])
			op_jsets(id_fields[i].meta ? md : id, id_fields[i].key, ev->id[i]);
	op_jset(id, "metadata", md);
	return id;
}

static void *rec_main(void *arg)
{
	struct kube_recorder *rec = arg;
	pthread_mutex_lock(&rec->lock);
	for (;;) {
		while (!rec->head && !rec->stopping)
			pthread_cond_wait(&rec->wake, &rec->lock);
		if (!rec->head)
			break;
		if (rec->stopping && kube__now_ms() >= rec->drain_until)
			break;
		struct rec_event *ev = rec->head;
		rec->head = ev->next;
		if (!rec->head)
			rec->tail = NULL;
		rec->queued--;
		pthread_mutex_unlock(&rec->lock);
		struct op_err e = OP_ERR_INIT;
		json_object *involved = identity_json(ev);
		int r = kube__event_emit_at(rec->c, involved, ev->type, ev->reason, ev->message,
					    rec->component, ev->wall_ms, &e);
		json_object_put(involved);
		if (r < 0)
			op_log_warn("cannot record event", "namespace", ev->id[ID_NAMESPACE], "name",
				    ev->id[ID_NAME], "reason", ev->reason, "error", e.msg);
		pthread_mutex_lock(&rec->lock);
		if (r < 0)
			rec->st.failed++;
		else
			rec->st.posted++;
		rec->seq_done = ev->seq;
		pthread_cond_broadcast(&rec->done);
		pthread_mutex_unlock(&rec->lock);
		event_free(ev);
		pthread_mutex_lock(&rec->lock);
	}
	/* stopped past the drain deadline: what is left is dropped */
	while (rec->head) {
		struct rec_event *ev = rec->head;
		rec->head = ev->next;
		rec->queued--;
		rec->st.dropped++;
		rec->seq_done = ev->seq;
		event_free(ev);
	}
	rec->tail = NULL;
	pthread_cond_broadcast(&rec->done);
	pthread_mutex_unlock(&rec->lock);
	return NULL;
}

int kube_recorder_new(struct kube_client *c, const char *component, size_t cap,
		      struct kube_recorder **ret, struct op_err *err)
{
	struct kube_recorder *rec = op_calloc(1, sizeof(*rec));
	rec->c = c;
	rec->component = op_strdup(component ? component : "pgop");
	rec->cap = cap ? cap : KUBE_RECORDER_CAP_DEFAULT;
	pthread_mutex_init(&rec->lock, NULL);
	pthread_cond_init(&rec->wake, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rec->done, &ca);
	pthread_condattr_destroy(&ca);
	int e = pthread_create(&rec->thread, NULL, rec_main, rec);
	if (e) {
		pthread_cond_destroy(&rec->done);
		pthread_cond_destroy(&rec->wake);
		pthread_mutex_destroy(&rec->lock);
		free(rec->component);
		free(rec);
		return op_err_set(err, -e, "event recorder: pthread_create: %s", strerror(e));
	}
	*ret = rec;
	return 0;
}

int kube_recorder_emit(struct kube_recorder *rec, json_object *involved, const char *type,
		       const char *reason, const char *message)
{
	if (!kube_obj_name(involved))
		return -EINVAL;
	struct rec_event *ev = op_calloc(1, sizeof(*ev));
	for (size_t i = 0; i < ID__N; i++) {
		const char *v = op_json_str_at(involved, id_fields[i].path);
		ev->id[i] = v ? op_strdup(v) : NULL;
	}
	ev->type = op_strdup(type ? type : KUBE_EVENT_NORMAL);
	ev->reason = op_strdup(reason ? reason : "");
	ev->message = op_strdup(message ? message : "");
	ev->wall_ms = kube__wall_ms();
	pthread_mutex_lock(&rec->lock);
	if (rec->stopping || rec->queued >= rec->cap) {
		rec->st.dropped++;
		pthread_mutex_unlock(&rec->lock);
		event_free(ev);
		return -ENOSPC;
	}
	ev->seq = ++rec->seq_queued;
	if (rec->tail)
		rec->tail->next = ev;
	else
		rec->head = ev;
	rec->tail = ev;
	rec->queued++;
	pthread_cond_signal(&rec->wake);
	pthread_mutex_unlock(&rec->lock);
	return 0;
}

int kube_recorder_flush(struct kube_recorder *rec, long timeout_ms)
{
	struct timespec until;
	kube__deadline(&until, timeout_ms); /* CLOCK_MONOTONIC, the clock of rec->done */
	int r = 0;
	pthread_mutex_lock(&rec->lock);
	uint64_t want = rec->seq_queued;
	while (rec->seq_done < want && r == 0)
		if (pthread_cond_timedwait(&rec->done, &rec->lock, &until) == ETIMEDOUT)
			r = rec->seq_done < want ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&rec->lock);
	return r;
}

void kube_recorder_stats(struct kube_recorder *rec, struct kube_recorder_stats *ret)
{
	pthread_mutex_lock(&rec->lock);
	*ret = rec->st;
	ret->queued = rec->queued;
	pthread_mutex_unlock(&rec->lock);
}

int kube_recorder_render_metrics(struct kube_recorder *rec, struct op_buf *out)
{
	struct kube_recorder_stats st;
	kube_recorder_stats(rec, &st);
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "pgop_kube_events_posted_total", "counter", "Events posted to the API server." },
		{ "pgop_kube_events_failed_total", "counter",
		  "Events the API server did not take (logged)." },
		{ "pgop_kube_events_dropped_total", "counter",
		  "Events dropped: the recorder's queue was full, or they were still queued at the stop." },
		{ "pgop_kube_events_queued", "gauge", "Events waiting to be posted." },
	};
	const uint64_t v[] = { st.posted, st.failed, st.dropped, st.queued };
	int r = 0;
	for (size_t i = 0; i < OP_ARRAY_SIZE(m) && r == 0; i++) {
		r = op_metrics_header(out, m[i].name, m[i].type, m[i].help);
		if (r == 0)
			r = op_metrics_sample(out, m[i].name, NULL, v[i]);
	}
	return r;
}

void kube_recorder_free(struct kube_recorder *rec, long drain_ms)
{
	if (!rec)
		return;
	pthread_mutex_lock(&rec->lock);
	rec->stopping = true;
	rec->drain_until = kube__now_ms() + (drain_ms > 0 ? drain_ms : 0);
	pthread_cond_signal(&rec->wake);
	pthread_mutex_unlock(&rec->lock);
	pthread_join(rec->thread, NULL);
	pthread_cond_destroy(&rec->done);
	pthread_cond_destroy(&rec->wake);
	pthread_mutex_destroy(&rec->lock);
	free(rec->component);
	free(rec);
}
