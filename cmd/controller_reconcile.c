/* cmd/controller_reconcile.c - `pgop controller`'s reconciler flags
 * (controller_reconcile.h), turned into reconciler/start.h options with the
 * admission guard wired in: wh_guard (webhooks/guard.c) is handed over here so
 * that reconciler/ does not depend on webhooks/. The start-up itself (cluster
 * access, back-off, Lease, informers, readiness) is reconciler/start.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/controller_reconcile.h"
#include "support/log.h"
#include "webhooks/webhooks.h"

int controller_reconcile_start(const struct controller_reconcile_opts *o, const char *kubeconfig,
			       struct rc_runner **ret, struct op_err *err)
{
	*ret = NULL;
	bool elect = true;
	if (o->leader_elect) {
		if (strcmp(o->leader_elect, "true") == 0)
			elect = true;
		else if (strcmp(o->leader_elect, "false") == 0)
			elect = false;
		else
			return op_err_set(err, -EINVAL, "--leader-elect: expected true or false, got %s",
					  o->leader_elect);
	}
	unsigned lost_s = 0; /* the default */
	if (o->node_lost_timeout && strcmp(o->node_lost_timeout, "never") == 0) {
		lost_s = RC_NODE_LOST_NEVER;
	} else if (o->node_lost_timeout) {
		char *end = NULL;
		errno = 0;
		unsigned long v = strtoul(o->node_lost_timeout, &end, 10);
		if (errno || end == o->node_lost_timeout || *end || *o->node_lost_timeout == '-' ||
		    v < 1 || v > 86400)
			return op_err_set(err, -EINVAL,
					  "--node-lost-timeout: expected 1 to 86400 seconds or never, "
					  "got %s",
					  o->node_lost_timeout);
		lost_s = (unsigned)v;
	}
	if (o->webhooks_only) {
		op_log_info("--webhooks-only: serving admission webhooks, not reconciling");
		return 0;
	}
	const char *img = o->operator_image;
	if (!img || !*img)
		img = getenv("OPERATOR_IMAGE_NAME");
	struct rc_start_opts so = {
		.kubeconfig = kubeconfig,
		.watch_namespaces = o->watch_namespaces,
		.leader_elect = elect,
		.leader_lease = o->leader_lease,
		.workers = o->workers,
		.status_timeout_ms = o->status_timeout_ms,
		.kube_qps = o->kube_api_qps,
		.kube_burst = o->kube_api_burst,
		.settings = { .operator_image = img && *img ? img : NULL,
			      .default_image = wh_settings_get()->default_image,
			      .node_lost_timeout_s = lost_s },
		.validate = wh_guard,
	};
	return rc_runner_start(&so, ret, err);
}
