/* cmd/controller_reconcile.c - starts the reconciler in `pgop controller`
 * (controller_reconcile.h). The admission guard lives here so that
 * reconciler/ does not depend on webhooks/: it defaults a copy of the Cluster
 * and validates it with the same rules as the webhook. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/controller_reconcile.h"
#include "kube/kube.h"
#include "kube/leader.h"
#include "reconciler/reconciler.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/log.h"
#include "webhooks/webhooks.h"

#define LEASE_DEFAULT "pgop-controller"
#define MAX_NAMESPACES 64

struct controller_reconcile {
	struct kube_client *kc;
	struct kube_leader *le;
	struct rc_controller *rc;
	char **ns;
	size_t n_ns;
};

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

static bool is_leader(void *ud)
{
	return kube_leader_is_leader(ud);
}

static void on_started(void *ud)
{
	op_log_info("reconciler: leading (Lease acquired)");
}

static void on_stopped(void *ud)
{
	op_log_warn("reconciler: lost the Lease, reconciles paused");
}

static int split_namespaces(struct controller_reconcile *cr, const char *list, struct op_err *err)
{
	if (!list || !*list)
		return 0;
	_cleanup_free_ char *copy = op_strdup(list);
	char *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (!*t)
			continue;
		if (cr->n_ns == MAX_NAMESPACES)
			return op_err_set(err, -EINVAL, "--watch-namespaces: more than %d",
					  MAX_NAMESPACES);
		cr->ns = op_realloc(cr->ns, (cr->n_ns + 1) * sizeof(char *));
		cr->ns[cr->n_ns++] = op_strdup(t);
	}
	return 0;
}

static char *identity(void)
{
	const char *pod = getenv("POD_NAME");
	if (pod && *pod)
		return op_strdup(pod);
	char host[256] = "pgop";
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "pgop");
	host[sizeof(host) - 1] = '\0';
	return op_asprintf("%s-%ld", host, (long)getpid());
}

int controller_reconcile_start(const struct controller_reconcile_opts *o, const char *kubeconfig,
			       struct controller_reconcile **ret, struct op_err *err)
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
	struct kube_config *cfg = NULL;
	struct op_err cerr = OP_ERR_INIT;
	int r = kube_config_load(kubeconfig, &cfg, &cerr);
	if (r == -ENOENT && !kubeconfig) {
		op_log_info("no cluster access: serving admission webhooks only");
		return 0;
	}
	if (r < 0) {
		op_log_warn("no usable cluster access: serving admission webhooks only", "error",
			    cerr.msg);
		return 0;
	}
	struct controller_reconcile *cr = op_calloc(1, sizeof(*cr));
	r = split_namespaces(cr, o->watch_namespaces, err);
	if (r == 0)
		r = kube_client_new(cfg, NULL, &cr->kc, err); /* takes cfg */
	else
		kube_config_free(cfg);
	if (r < 0)
		goto fail;
	if (elect) {
		const char *ns = getenv("POD_NAMESPACE");
		_cleanup_free_ char *id = identity();
		struct kube_leader_opts lo = {
			.ns = ns && *ns ? ns : kube_client_namespace(cr->kc),
			.name = o->leader_lease ? o->leader_lease : LEASE_DEFAULT,
			.identity = id,
			.release_on_stop = true,
			.on_started_leading = on_started,
			.on_stopped_leading = on_stopped,
		};
		r = kube_leader_new(cr->kc, &lo, &cr->le, err);
		if (r == 0)
			r = kube_leader_start(cr->le, err);
		if (r < 0)
			goto fail;
	}
	const char *img = o->operator_image;
	if (!img || !*img)
		img = getenv("OPERATOR_IMAGE_NAME");
	struct rc_controller_opts ro = {
		.client = cr->kc,
		.namespaces = (const char *const *)cr->ns,
		.n_namespaces = cr->n_ns,
		.workers = o->workers,
		.settings = { .operator_image = img && *img ? img : NULL,
			      .default_image = wh_settings_get()->default_image },
		.validate = guard,
		.status_timeout_ms = o->status_timeout_ms,
		.is_leader = elect ? is_leader : NULL,
		.leader_userdata = cr->le,
	};
	r = rc_controller_start(&ro, &cr->rc, err);
	if (r < 0)
		goto fail;
	char workers[16];
	snprintf(workers, sizeof(workers), "%u", o->workers ? o->workers : 4);
	op_log_info("reconciler started", "server", kube_client_config(cr->kc)->server, "workers",
		    workers, "leader_election", elect ? "true" : "false", "namespaces",
		    o->watch_namespaces ? o->watch_namespaces : "all");
	*ret = cr;
	return 0;
fail:
	controller_reconcile_free(cr);
	return r;
}

void controller_reconcile_free(struct controller_reconcile *cr)
{
	if (!cr)
		return;
	rc_controller_free(cr->rc);   /* workers and informers first */
	kube_leader_stop(cr->le);     /* then release the Lease */
	kube_leader_free(cr->le);
	kube_client_free(cr->kc);
	for (size_t i = 0; i < cr->n_ns; i++)
		free(cr->ns[i]);
	free(cr->ns);
	free(cr);
}
