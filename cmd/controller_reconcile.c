/* cmd/controller_reconcile.c - `pgop controller`'s reconciler flags and the
 * admission guard (controller_reconcile.h). The guard lives here so that
 * reconciler/ does not depend on webhooks/: it defaults a copy of the Cluster
 * and validates it with the same rules as the webhook. The start-up itself
 * (cluster access, back-off, Lease, informers, readiness) is reconciler/start.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/controller_reconcile.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/log.h"
#include "webhooks/webhooks.h"

/* rc_validate_fn: webhooks' defaulting + validation (CREATE rules). */
static int guard(void *ud, json_object *cluster, char **ret_reason)
{
	json_object *copy = NULL;
	if (json_object_deep_copy(cluster, &copy, NULL) != 0)
		return -ENOMEM;
	json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = wh_default(copy, &patch, &err);
	if (patch)
		json_object_put(patch);
	if (r < 0) {
		json_object_put(copy);
		*ret_reason = op_strdup(err.msg);
		return 1;
	}
	struct wh_result res = { 0 };
	int n = wh_validate(copy, NULL, &res);
	json_object_put(copy);
	if (n <= 0) {
		wh_result_done(&res);
		return 0;
	}
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	for (size_t i = 0; i < res.n_errors; i++)
		if (op_buf_addf(&b, "%s%s: %s", i ? ", " : "", res.errors[i].path,
				res.errors[i].msg) < 0)
			break;
	wh_result_done(&res);
	*ret_reason = op_buf_take(&b, NULL);
	return 1;
}

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
			      .default_image = wh_settings_get()->default_image },
		.validate = guard,
	};
	return rc_runner_start(&so, ret, err);
}
