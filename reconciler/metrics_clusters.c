/* reconciler/metrics_clusters.c - operator metrics read from the Cluster
 * informer cache at scrape time (issue 27), so no reconcile path is touched:
 * per Cluster its instances, ready instances, the ContinuousArchiving
 * condition, the timeline (one more per promotion: failovers and switchovers
 * alike, rate it with increase()) and how long the last promotion took
 * (currentPrimaryTimestamp - targetPrimaryTimestamp, both written by the
 * operator and the instance); and controller-runtime's names for what
 * controller.c already counts (controller_runtime_reconcile_total,
 * controller_runtime_reconcile_errors_total, workqueue_depth), as
 * CloudNativePG's operator exposes them, so its dashboards find them. */
#include <stdio.h>
#include <string.h>

#include "api/timestamp.h"
#include "reconciler/ctl.h"
#include "reconciler/internal.h"
#include "reconciler/queue.h"
#include "support/json.h"
#include "support/metrics.h"

enum fam { F_INST, F_READY, F_ARCH, F_TL, F_PROMO, F_N };
static const struct {
	const char *name, *help;
} fams[F_N] = {
	{ "pgop_cluster_instances", "Instances of the Cluster (status.instances)." },
	{ "pgop_cluster_ready_instances", "Ready instances of the Cluster (status.readyInstances)." },
	{ "pgop_cluster_continuous_archiving",
	  "1 when the Cluster's ContinuousArchiving condition is True, 0 when False (absent "
	  "when it has none)." },
	{ "pgop_cluster_timeline_id",
	  "The Cluster's timeline (status.timelineID): one more per failover or switchover." },
	{ "pgop_cluster_last_promotion_seconds",
	  "Seconds from the last targetPrimary change to its promotion "
	  "(currentPrimaryTimestamp - targetPrimaryTimestamp)." },
};

static int sample(struct op_buf *b, enum fam f, const char *ns, const char *name, double v)
{
	int r = op_buf_addf(b, "%s{namespace=\"", fams[f].name);
	r = r ? r : op_metrics_label_value(b, ns ? ns : "");
	r = r ? r : op_buf_adds(b, "\",name=\"");
	r = r ? r : op_metrics_label_value(b, name ? name : "");
	return r ? r : op_buf_addf(b, "\"} %.17g\n", v);
}

static const char *condition(json_object *cl, const char *type)
{
	json_object *conds = NULL;
	if (!json_object_object_get_ex(json_object_object_get(cl, "status"), "conditions", &conds) ||
	    !json_object_is_type(conds, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *t = op_json_key_str(c, "type");
		if (t && strcmp(t, type) == 0)
			return op_json_key_str(c, "status");
	}
	return NULL;
}

static int one_cluster(json_object *cl, struct op_buf *b)
{
	const char *ns = op_json_str_at(cl, "metadata.namespace");
	const char *name = op_json_str_at(cl, "metadata.name");
	json_object *st = json_object_object_get(cl, "status");
	int64_t v;
	int r = 0;
	if (op_json_key_i64(st, "instances", &v) == 1)
		r = sample(&b[F_INST], F_INST, ns, name, (double)v);
	if (!r && op_json_key_i64(st, "readyInstances", &v) == 1)
		r = sample(&b[F_READY], F_READY, ns, name, (double)v);
	const char *arch = condition(cl, "ContinuousArchiving");
	if (!r && arch && (!strcmp(arch, "True") || !strcmp(arch, "False")))
		r = sample(&b[F_ARCH], F_ARCH, ns, name, !strcmp(arch, "True"));
	if (!r && op_json_key_i64(st, "timelineID", &v) == 1)
		r = sample(&b[F_TL], F_TL, ns, name, (double)v);
	const char *cur = op_json_key_str(st, "currentPrimary");
	const char *tgt = op_json_key_str(st, "targetPrimary");
	int64_t tc, tt;
	if (!r && cur && tgt && !strcmp(cur, tgt) &&
	    api_time_parse_ms(op_json_key_str(st, "currentPrimaryTimestamp"), &tc) == 0 &&
	    api_time_parse_ms(op_json_key_str(st, "targetPrimaryTimestamp"), &tt) == 0 && tc >= tt)
		r = sample(&b[F_PROMO], F_PROMO, ns, name, (double)(tc - tt) / 1000.0);
	return r;
}

static int render_clusters(struct rc_controller *c, struct op_buf *out)
{
	struct op_buf b[F_N];
	for (int f = 0; f < F_N; f++)
		op_buf_init(&b[f], OP_BUF_MAX_KUBE_RESPONSE);
	int r = 0;
	for (size_t i = 0; !r && i < c->n_inf_ns; i++) {
		struct kube_informer *inf = c->inf[RC_INF_CLUSTERS] ? c->inf[RC_INF_CLUSTERS][i] : NULL;
		json_object *list = inf ? kube_informer_list(inf, NULL) : NULL;
		for (size_t k = 0; !r && list && k < json_object_array_length(list); k++)
			r = one_cluster(json_object_array_get_idx(list, k), b);
		if (list)
			json_object_put(list);
	}
	for (int f = 0; !r && f < F_N; f++) {
		r = op_metrics_header(out, fams[f].name, "gauge", fams[f].help);
		r = r ? r : op_buf_add(out, op_buf_str(&b[f]), b[f].len);
	}
	for (int f = 0; f < F_N; f++)
		op_buf_done(&b[f]);
	return r;
}

/* controller-runtime's names (CloudNativePG's operator) for controller.c's counts. */
static int render_runtime_names(struct rc_controller *c, struct op_buf *out)
{
	static const char *const results[RC_RESULT__N] = { "success", "requeue", "error" };
	char lb[96];
	int r = op_metrics_header(out, "controller_runtime_reconcile_total", "counter",
				  "Total number of reconciliations per controller.");
	for (int i = 0; !r && i < RC_RESULT__N; i++) {
		snprintf(lb, sizeof(lb), "controller=\"cluster\",result=\"%s\"", results[i]);
		r = op_metrics_sample(out, "controller_runtime_reconcile_total", lb,
				      op_counter_get(&c->metrics.reconciles[i]));
	}
	r = r ? r : op_metrics_header(out, "controller_runtime_reconcile_errors_total", "counter",
				      "Total number of reconciliation errors per controller.");
	r = r ? r : op_metrics_sample(out, "controller_runtime_reconcile_errors_total",
				      "controller=\"cluster\"",
				      op_counter_get(&c->metrics.reconciles[RC_RESULT_ERROR]));
	r = r ? r : op_metrics_header(out, "workqueue_depth", "gauge", "Current depth of workqueue.");
	r = r ? r : op_metrics_sample(out, "workqueue_depth", "name=\"cluster\"", rc_queue_len(c->q));
	return r;
}

int rc_controller_render_cluster_metrics(struct rc_controller *c, struct op_buf *out)
{
	int r = render_runtime_names(c, out);
	return r ? r : render_clusters(c, out);
}
