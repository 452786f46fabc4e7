/* cmd/controller_reconcile.h - the reconciler side of `pgop controller`: its
 * flags, and the admission guard handed to reconciler/start.h (which does
 * the start-up: cluster access with back-off, Lease, informers, readiness).
 * Without --webhooks-only, broken cluster access keeps the process not Ready;
 * with it, no reconciler runs and the process serves admission only.
 *
 * Used by cmd/controller.c only: flags are spliced into the controller's flag
 * table with CONTROLLER_RECONCILE_FLAGS, options live in the controller's
 * options struct (member `rec`).
 */
#ifndef PGOP_CMD_CONTROLLER_RECONCILE_H
#define PGOP_CMD_CONTROLLER_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>

#include "cmd/flags.h"
#include "kube/kube.h"
#include "reconciler/start.h"
#include "support/err.h"

/* Flag values; strings borrowed from argv. */
struct controller_reconcile_opts {
	unsigned workers;
	const char *watch_namespaces; /* comma separated; NULL = all */
	const char *leader_elect;     /* "true" (default) / "false" */
	const char *leader_lease;     /* NULL = "pgop-controller" */
	const char *operator_image;   /* NULL = $OPERATOR_IMAGE_NAME or "pgop:latest" */
	unsigned status_timeout_ms;
	const char *node_lost_timeout; /* seconds, or "never"; NULL = 300 */
	unsigned kube_api_qps;        /* 0 = kube/ default (KUBE_QPS_DEFAULT) */
	unsigned kube_api_burst;      /* 0 = KUBE_BURST_DEFAULT */
	bool webhooks_only;
};

#define CONTROLLER_RECONCILE_FLAG(name, type, field, max, metavar, help)                           \
	{ name, 0, type, offsetof(struct controller_opts, rec) +                                   \
				 offsetof(struct controller_reconcile_opts, field),                \
	  max, metavar, help }

#define CONTROLLER_RECONCILE_FLAGS                                                                 \
	CONTROLLER_RECONCILE_FLAG("webhooks-only", CMD_FLAG_BOOL, webhooks_only, 0, NULL,          \
				  "serve admission only, never reconcile (otherwise missing "     \
				  "cluster access is retried and keeps /readyz failing)"),         \
	CONTROLLER_RECONCILE_FLAG("workers", CMD_FLAG_UINT, workers, 64, "N",                      \
				  "reconcile workers (default 4)"),                                 \
	CONTROLLER_RECONCILE_FLAG("watch-namespaces", CMD_FLAG_STRING, watch_namespaces, 0,        \
				  "NS[,NS]", "namespaces whose Clusters are reconciled "          \
					     "(default all)"),                                     \
	CONTROLLER_RECONCILE_FLAG("leader-elect", CMD_FLAG_STRING, leader_elect, 0, "BOOL",        \
				  "reconcile only on the holder of the Lease (default true)"),     \
	CONTROLLER_RECONCILE_FLAG("leader-lease", CMD_FLAG_STRING, leader_lease, 0, "NAME",        \
				  "the reconciler's Lease, in the pod namespace "                  \
				  "(default pgop-controller)"),                                     \
	CONTROLLER_RECONCILE_FLAG("operator-image", CMD_FLAG_STRING, operator_image, 0, "IMAGE",   \
				  "image of the instance pods' bootstrap-controller init "         \
				  "container (default $OPERATOR_IMAGE_NAME)"),                      \
	CONTROLLER_RECONCILE_FLAG("instance-status-timeout", CMD_FLAG_UINT, status_timeout_ms,     \
				  60000, "MS", "deadline of one instance's /pg/status "            \
					       "(default 2000)"),                                  \
	CONTROLLER_RECONCILE_FLAG("node-lost-timeout", CMD_FLAG_STRING, node_lost_timeout, 0,     \
				  "SECONDS|never", "an instance (never the primary) whose Node "  \
				  "has been unreachable or not ready this long is deleted with "  \
				  "its PVCs and made again on another node, cloned from the "     \
				  "primary (default 300)"),                                        \
	CONTROLLER_RECONCILE_FLAG("kube-api-qps", CMD_FLAG_UINT, kube_api_qps, 10000, "N",         \
				  "Kubernetes API requests per second, sustained (client-side "    \
				  "token bucket; default " KUBE__XSTR(KUBE_QPS_DEFAULT) ")"),      \
	CONTROLLER_RECONCILE_FLAG("kube-api-burst", CMD_FLAG_UINT, kube_api_burst, 20000, "N",     \
				  "Kubernetes API requests allowed at once above --kube-api-qps "  \
				  "(default " KUBE__XSTR(KUBE_BURST_DEFAULT) ")")

/* Starts the reconciler runner (reconciler/start.h) unless --webhooks-only
 * (then 0 with *ret NULL, logged). -EINVAL on bad flags. */
OP_MUST_CHECK
int controller_reconcile_start(const struct controller_reconcile_opts *o, const char *kubeconfig,
			       struct rc_runner **ret, struct op_err *err);

#endif
