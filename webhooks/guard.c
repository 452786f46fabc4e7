/* webhooks/guard.c - the reconciler's admission guard (wh_guard, see
 * webhooks.h), moved here from cmd/controller_reconcile.c: it defaults a copy
 * of the Cluster and validates it with the webhook's CREATE rules. */
#include <errno.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "webhooks/webhooks.h"

int wh_guard(void *userdata, json_object *cluster, char **ret_reason)
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
