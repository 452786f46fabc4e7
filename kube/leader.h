/* kube/leader.h - Events and Lease-based leader election.
 */
#ifndef PGOP_KUBE_LEADER_H
#define PGOP_KUBE_LEADER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "kube/kube.h"
#include "support/err.h"

/* ------------------------------------------------------------------------ */
/* Events (core v1 Event, namespaced like the involved object)                */
/* ------------------------------------------------------------------------ */

#define KUBE_EVENT_NORMAL "Normal"
#define KUBE_EVENT_WARNING "Warning"

/* Records an event about `involved` (borrowed; kind, apiVersion,
 * metadata.{name,namespace,uid,resourceVersion} are copied into
 * involvedObject). type KUBE_EVENT_NORMAL/KUBE_EVENT_WARNING, reason
 * CamelCase, message free text (truncated to 1 KiB). component names the
 * reporter (source.component / reportingComponent), NULL = "pgop".
 * Consecutive identical events (same object uid, type, reason, message)
 * within 10 minutes are folded: the previous Event's count is incremented
 * with a merge patch instead of creating a new one. Thread-safe. */
OP_MUST_CHECK int kube_event_emit(struct kube_client *c, json_object *involved, const char *type,
				  const char *reason, const char *message, const char *component,
				  struct op_err *err);

/* ------------------------------------------------------------------------ */
/* Leader election on a coordination.k8s.io/v1 Lease                          */
/* ------------------------------------------------------------------------ */

struct kube_leader_opts {
	const char *ns;              /* Lease namespace (copied) */
	const char *name;            /* Lease name (copied) */
	const char *identity;        /* this candidate, unique (copied), e.g. pod name */
	int lease_duration_ms;       /* 0 = 15000: others wait this long after the last renew */
	int renew_deadline_ms;       /* 0 = 10000: leader gives up if it cannot renew for this long */
	int retry_period_ms;         /* 0 = 2000: interval between attempts */
	bool release_on_stop;        /* on stop, clear holderIdentity so others take over at once */
	/* Called on the election thread; may be NULL. */
	void (*on_started_leading)(void *userdata);
	void (*on_stopped_leading)(void *userdata);
	void *userdata;
};

struct kube_leader;

/* Creates a candidate (nothing sent yet). */
OP_MUST_CHECK int kube_leader_new(struct kube_client *c, const struct kube_leader_opts *opts,
				  struct kube_leader **ret_le, struct op_err *err);

/* One acquire-or-renew attempt (used by the thread; exposed for tests and
 * for callers driving their own loop). Gets the Lease, creates it if absent,
 * takes it if free or expired (leaseTransitions+1) or renews it if ours,
 * always with PUT + resourceVersion so two candidates never both win.
 * *ret_leading: true if we hold the lease after this attempt. Returns 0 or
 * -errno (a lost race, -ESTALE/-EEXIST, is 0 with *ret_leading=false). */
OP_MUST_CHECK int kube_leader_try(struct kube_leader *le, bool *ret_leading, struct op_err *err);

/* Starts the election thread (retry every retry_period; callbacks on
 * transitions; a leader that fails to renew within renew_deadline steps down). */
OP_MUST_CHECK int kube_leader_start(struct kube_leader *le, struct op_err *err);
/* Thread-safe. True while we hold the lease and renewed it within
 * renew_deadline (so it turns false on time even if a renewal hangs). */
bool kube_leader_is_leader(struct kube_leader *le);
/* Stops the thread (and releases the lease if configured). Idempotent. */
void kube_leader_stop(struct kube_leader *le);
/* Accepts NULL; returns NULL. */
struct kube_leader *kube_leader_free(struct kube_leader *le);

#endif
