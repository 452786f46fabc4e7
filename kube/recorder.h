/* kube/recorder.h - Events posted in the background, as client-go's
 * EventBroadcaster does: the caller queues an Event and never waits on the
 * API server for it (a reconcile in a failover, a creation burst), one thread
 * posts them in order through kube_event_emit (folding repeats), on the
 * client's own token bucket for Events (kube/client.c). A full queue drops
 * the new Event and counts it (pgop_kube_events_dropped_total): Events are
 * diagnostics, never worth blocking the work they describe.
 */
#ifndef PGOP_KUBE_RECORDER_H
#define PGOP_KUBE_RECORDER_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube.h"
#include "support/buf.h"
#include "support/err.h"

#define KUBE_RECORDER_CAP_DEFAULT 1024 /* queued Events, as client-go's 1000 */

struct kube_recorder;

/* Starts the posting thread. c is borrowed and must outlive the recorder;
 * component names the reporter (copied; NULL = "pgop"); cap 0 =
 * KUBE_RECORDER_CAP_DEFAULT. */
OP_MUST_CHECK int kube_recorder_new(struct kube_client *c, const char *component, size_t cap,
				    struct kube_recorder **ret, struct op_err *err);

/* Queues an Event about involved (borrowed: its apiVersion, kind and
 * metadata.{name,namespace,uid,resourceVersion} are copied now, and the time
 * is taken now). type/reason/message as kube_event_emit (copied). Returns 0,
 * -EINVAL when involved has no name, -ENOSPC when the queue is full or the
 * recorder stopped (the Event is dropped and counted). Thread-safe; never
 * does I/O. Best effort: callers need not look at the result (a dropped Event
 * is counted in the recorder's stats). */
int kube_recorder_emit(struct kube_recorder *rec, json_object *involved, const char *type,
		       const char *reason, const char *message);

/* Blocks until every Event queued so far was posted (or failed), or timeout_ms
 * passed. Returns 0 when drained, -ETIMEDOUT otherwise. */
OP_MUST_CHECK int kube_recorder_flush(struct kube_recorder *rec, long timeout_ms);

struct kube_recorder_stats {
	uint64_t posted;  /* kube_event_emit returned 0 */
	uint64_t failed;  /* kube_event_emit failed (logged) */
	uint64_t dropped; /* queue full, or still queued at the stop */
	size_t queued;
};
void kube_recorder_stats(struct kube_recorder *rec, struct kube_recorder_stats *ret);

/* Appends pgop_kube_events_{posted,failed,dropped}_total and
 * pgop_kube_events_queued. */
OP_MUST_CHECK int kube_recorder_render_metrics(struct kube_recorder *rec, struct op_buf *out);

/* Posts what is queued for at most drain_ms (one request in flight may
 * outlast it), drops the rest (counted), joins the thread and frees.
 * NULL-safe. */
void kube_recorder_free(struct kube_recorder *rec, long drain_ms);

#endif
