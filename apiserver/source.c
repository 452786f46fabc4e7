/* apiserver/source.c - the production as_source: the reconciler's informer
 * caches and instance client (reconciler/live.h), once its runner has
 * reached the cluster. */
#include "apiserver/source.h"

#include <errno.h>

#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"

static json_object *clusters(void *ud, const char *ns)
{
	struct rc_controller *rc = rc_runner_controller(ud);
	return rc ? rc_live_clusters(rc, ns) : op_jarr();
}

static json_object *pods(void *ud, const char *ns, const char *cluster)
{
	struct rc_controller *rc = rc_runner_controller(ud);
	return rc ? rc_live_pods(rc, ns, cluster) : op_jarr();
}

static int fetch(void *ud, const char *ns, const char *cluster, struct rc_live_instance *v, size_t n,
		 long timeout_ms, struct rc_status_pool *pool, struct op_err *err)
{
	struct rc_controller *rc = rc_runner_controller(ud);
	if (!rc)
		return op_err_set(err, -ENOTCONN, "reconciler not running yet");
	return rc_live_fetch(rc, ns, cluster, v, n, timeout_ms, pool, err);
}

static int act(void *ud, const char *ns, const char *name, const struct as_action *a,
	       const char *user, char **ret_msg, struct op_err *err)
{
	struct rc_controller *rc = rc_runner_controller(ud);
	*ret_msg = NULL;
	if (!rc)
		return op_err_set(err, -ENOTCONN, "reconciler not running yet");
	switch (a->kind) {
	case AS_ACTION_SWITCHOVER:
		return rc_live_switchover(rc, ns, name, a->instance, user, ret_msg, err);
	case AS_ACTION_RESTART:
		return rc_live_restart(rc, ns, name, a->instance, user, ret_msg, err);
	}
	return op_err_set(err, -EINVAL, "unknown action");
}

static struct kube_client *client(void *ud)
{
	return rc_runner_client(ud);
}

static bool ready(void *ud)
{
	return rc_runner_ready(ud);
}

void as_source_reconciler(struct rc_runner *runner, struct as_source *ret)
{
	*ret = (struct as_source){ .clusters = clusters, .pods = pods, .fetch = fetch,
				   .act = act, .client = client, .ready = ready, .ud = runner };
}
