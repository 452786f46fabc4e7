/* reconciler/start.h - running the Cluster controller inside `pgop controller`:
 * cluster access, Lease leader election, informers and workers, and the
 * reconciler's part of /readyz.
 *
 * Broken cluster access is an error, not a mode: a kubeconfig or service
 * account that cannot be loaded, or a client that cannot be built, is retried
 * with exponential back-off on the runner's own thread, the reason is logged
 * once per distinct reason (and once more when it recovers), and
 * rc_runner_ready() stays false until the controller runs and every informer
 * has listed once. Serving the webhooks without reconciling is only the
 * caller's explicit choice (`pgop controller --webhooks-only`: no runner).
 */
#ifndef PGOP_RECONCILER_START_H
#define PGOP_RECONCILER_START_H

#include <stdbool.h>

#include "kube/kube.h"
#include "reconciler/live.h"
#include "reconciler/reconciler.h"
#include "support/err.h"

#define RC_LEASE_DEFAULT "pgop-controller"
#define RC_MAX_NAMESPACES 64
#define RC_RETRY_MIN_MS_DEFAULT 500
#define RC_RETRY_MAX_MS_DEFAULT 30000

/* Everything is borrowed during rc_runner_start (copied). */
struct rc_start_opts {
	const char *kubeconfig;       /* NULL = $KUBECONFIG, else in-cluster */
	const char *watch_namespaces; /* comma separated; NULL/"" = all */
	bool leader_elect;            /* reconcile only on the Lease holder */
	const char *leader_lease;     /* NULL = RC_LEASE_DEFAULT */
	const char *lease_namespace;  /* NULL = $POD_NAMESPACE, else the client's namespace */
	const char *identity;         /* NULL = $POD_NAME, else "<host>-<pid>" */
	unsigned workers;             /* 0 = 4 */
	long status_timeout_ms;       /* 0 = 2000 */
	unsigned kube_qps, kube_burst; /* the API client's rate limit; 0 = kube/ defaults */
	struct rc_settings settings;
	rc_validate_fn validate;      /* the admission guard (NULL = none) */
	void *validate_userdata;
	unsigned retry_min_ms;        /* first back-off; 0 = RC_RETRY_MIN_MS_DEFAULT */
	unsigned retry_max_ms;        /* back-off cap; 0 = RC_RETRY_MAX_MS_DEFAULT */
};

struct rc_runner;

/* Checks the options (-EINVAL: too many or empty namespaces) and starts the
 * runner thread, which keeps trying to reach the cluster until it can start
 * the controller or is stopped. *ret owned (rc_runner_free). */
OP_MUST_CHECK
int rc_runner_start(const struct rc_start_opts *o, struct rc_runner **ret, struct op_err *err);


/* Thread-safe: failed attempts to reach the cluster so far (tests, logs). */
unsigned rc_runner_failures(struct rc_runner *r);

/* rc_runner_ready, rc_runner_controller, rc_runner_client: reconciler/live.h
 * (the live API reads the same caches). */


/* Stops retrying, stops workers and informers, releases the Lease, frees.
 * Accepts NULL. */
void rc_runner_free(struct rc_runner *r);

#endif
