/* reconciler/reconciler.h - the Cluster controller: informers, work queue,
 * workers and the reconcile of one Cluster.
 *
 * Flow (docs/internals/reconciler.md "Overview"): informers on Clusters and on
 * the Pods, PVCs, Services and Secrets carrying the label cnpg.io/cluster (no
 * Jobs: instances are bootstrapped by Pods) enqueue "namespace/cluster" keys; N workers take keys from the rc_queue (a
 * key is never reconciled by two workers at once) and run rc_reconcile(),
 * which reads the caches, writes through kube/ and patches the Cluster status
 * only when it changed. Errors requeue with per-key exponential back-off.
 */
#ifndef PGOP_RECONCILER_RECONCILER_H
#define PGOP_RECONCILER_RECONCILER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "kube/kube.h"
#include "support/err.h"

/* Operator-wide settings the builders need (borrowed strings). */
struct rc_settings {
	const char *operator_image; /* init container image; NULL = "pgop:latest" */
	const char *cluster_domain; /* NULL = "cluster.local" */
	const char *default_image;  /* spec.imageName when absent; NULL = "ghcr.io/cloudnative-pg/postgresql:15" */
	/* An instance whose Node has been unreachable (or not ready) this long
	 * is rebuilt on another node (reconciler/drain.c, rc_node_lost_step);
	 * 0 = RC_NODE_LOST_TIMEOUT_DEFAULT_S, RC_NODE_LOST_NEVER = never. */
	unsigned node_lost_timeout_s;
};
#define RC_NODE_LOST_TIMEOUT_DEFAULT_S 300
#define RC_NODE_LOST_NEVER 0xffffffffu

/* The in-operator admission guard, given by cmd/ (it runs the webhooks'
 * defaulting + validation so that this module does not depend on webhooks/).
 * cluster is borrowed (read-only). Returns 0 when valid; 1 when invalid with
 * *ret_reason (owned) listing "path: message" items; -errno on failure. */
typedef int (*rc_validate_fn)(void *userdata, json_object *cluster, char **ret_reason);

struct rc_controller_opts {
	struct kube_client *client;   /* borrowed; must outlive the controller */
	const char *const *namespaces; /* borrowed array (copied); NULL/0 = all namespaces */
	size_t n_namespaces;
	unsigned workers;             /* 0 = 4 */
	struct rc_settings settings;  /* strings copied */
	rc_validate_fn validate;      /* NULL = no guard */
	void *validate_userdata;
	long status_timeout_ms;       /* per-instance /pg/status deadline; 0 = 2000 */
	/* Leader gate: workers reconcile only while this returns true (NULL =
	 * always). Keys that arrive meanwhile wait in the queue. */
	bool (*is_leader)(void *userdata);
	void *leader_userdata;
};

struct rc_controller;

/* Creates the informers, queue and workers and starts them. *ret owned. */
OP_MUST_CHECK
int rc_controller_start(const struct rc_controller_opts *opts, struct rc_controller **ret,
			struct op_err *err);
/* True once every informer has listed once. */
bool rc_controller_synced(struct rc_controller *c);
/* Stops workers and informers (joins them). Idempotent. */
void rc_controller_stop(struct rc_controller *c);
/* Stops and frees. Accepts NULL; returns NULL. */
struct rc_controller *rc_controller_free(struct rc_controller *c);

/* Reconciles "namespace/name" once (what a worker does). Returns 0 and
 * *ret_requeue_ms (0 = nothing planned; > 0 = look again after that long),
 * or -errno (the worker requeues with back-off) with err saying why. */
OP_MUST_CHECK int rc_reconcile(struct rc_controller *c, const char *key, long *ret_requeue_ms,
			       struct op_err *err);

/* Counters for logs and tests. */
struct rc_controller_stats {
	unsigned long reconciles, errors, status_patches, objects_created, objects_deleted;
};
void rc_controller_stats(struct rc_controller *c, struct rc_controller_stats *ret);

/* Appends the controller's Prometheus families to out (support/buf.h):
 * pgop_reconcile_total{result}, pgop_reconcile_errors_total,
 * pgop_reconcile_duration_seconds{result}, pgop_workqueue_depth,
 * pgop_workqueue_delayed, pgop_workqueue_queue_duration_seconds,
 * pgop_informer_objects{kind}, pgop_instances_unreachable, pgop_leader and
 * the API client's pgop_kube_requests_total{verb,code} (kube.h) and the
 * event recorder's pgop_kube_events_* (kube/recorder.h). Thread-safe.
 * Returns 0 or the op_buf error. */
struct op_buf;
OP_MUST_CHECK int rc_controller_render_metrics(struct rc_controller *c, struct op_buf *out);

/* Events (rc_event) are posted in the background (kube/recorder.h): waits
 * until those queued so far are posted, at most timeout_ms. 0, or -ETIMEDOUT.
 * rc_controller_stop waits RC_EVENTS_DRAIN_MS for them. */
#define RC_EVENTS_DRAIN_MS 2000
OP_MUST_CHECK int rc_controller_flush_events(struct rc_controller *c, long timeout_ms);

#endif
