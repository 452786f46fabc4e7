/* reconciler/podmonitor.c - spec.monitoring.enablePodMonitor (issue 27): a
 * PodMonitor (monitoring.coreos.com/v1) named after the Cluster, selecting its
 * instance Pods and scraping their port `metrics` (https with the Cluster's CA
 * and the -rw name when spec.monitoring.tls.enabled), owned by the Cluster.
 * Never fails a reconcile: when the CRD is not installed (404) the Cluster
 * gets a Warning Event PodMonitorUnavailable and the attempt is repeated at
 * most every RC_PODMONITOR_RETRY_S; other errors are logged and retried the
 * same way. Disabling it deletes the PodMonitor this replica created. */
#include <errno.h>
#include <time.h>

#include "api/names.h"
#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define RC_PODMONITOR_RETRY_S 60

static const struct kube_kind podmonitors = { "monitoring.coreos.com", "v1", "podmonitors",
					      "PodMonitor", true };

json_object *rc_build_podmonitor(const struct api_cluster *c)
{
	json_object *o = op_jobj();
	op_jsets(o, "apiVersion", "monitoring.coreos.com/v1");
	op_jsets(o, "kind", "PodMonitor");
	json_object *m = op_jchild(o, "metadata");
	op_jsets(m, "name", c->metadata.name);
	op_jsets(m, "namespace", c->metadata.namespace_);
	op_jsets(op_jchild(m, "labels"), "cnpg.io/cluster", c->metadata.name);
	op_jset(m, "ownerReferences", op_jpush(op_jarr(), rc_owner_ref(c)));
	json_object *spec = op_jchild(o, "spec");
	op_jsets(op_jchild(op_jchild(spec, "selector"), "matchLabels"), "cnpg.io/cluster",
		 c->metadata.name);
	json_object *ep = op_jobj();
	op_jsets(ep, "port", "metrics");
	if (c->spec.monitoring.tls_enabled) {
		_cleanup_free_ char *ca = api_secret_name(c->metadata.name, API_SECRET_CA_CERT);
		_cleanup_free_ char *rw = op_asprintf("%s-rw", c->metadata.name);
		op_jsets(ep, "scheme", "https");
		json_object *tls = op_jchild(ep, "tlsConfig");
		json_object *sec = op_jchild(op_jchild(tls, "ca"), "secret");
		op_jsets(sec, "name", ca);
		op_jsets(sec, "key", "ca.crt");
		op_jsets(tls, "serverName", rw);
	}
	op_jset(spec, "podMetricsEndpoints", op_jpush(op_jarr(), ep));
	return o;
}

/* The per-Cluster memo: created (by this replica), last attempt. */
static void memo(struct rc_run *r, bool set, bool *created, int64_t *at)
{
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	if (set) {
		s->podmonitor_created = *created;
		s->podmonitor_at = *at;
	} else {
		*created = s->podmonitor_created;
		*at = s->podmonitor_at;
	}
	pthread_mutex_unlock(&r->ctl->mu);
}

void rc_ensure_podmonitor(struct rc_run *r)
{
	bool created;
	int64_t at, now = (int64_t)time(NULL);
	memo(r, false, &created, &at);
	bool want = r->c->spec.monitoring.enable_pod_monitor;
	if (want == created && (created || at == 0))
		return;
	if (now - at < RC_PODMONITOR_RETRY_S)
		return;
	struct op_err e = OP_ERR_INIT, *saved = r->err;
	r->err = &e;
	int ret;
	if (want) {
		json_object *o = rc_build_podmonitor(r->c);
		ret = rc_create(r, &podmonitors, o);
		json_object_put(o);
	} else {
		ret = rc_delete(r, &podmonitors, r->c->metadata.name);
	}
	r->err = saved;
	if (ret == -ENOENT && want)
		rc_event(r, "Warning", "PodMonitorUnavailable",
			 "spec.monitoring.enablePodMonitor: the PodMonitor CRD (monitoring.coreos.com/v1) "
			 "is not installed; retrying every %d s",
			 RC_PODMONITOR_RETRY_S);
	else if (ret < 0)
		op_log_warn("PodMonitor not reconciled, retrying", "cluster", r->key, "error", e.msg);
	created = ret >= 0 ? want : created;
	at = ret >= 0 && !want ? 0 : now;
	memo(r, true, &created, &at);
}
