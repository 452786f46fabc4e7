/* reconciler/controller.c - informers -> queue -> workers (reconciler.h). */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reconciler/ctl.h"
#include "reconciler/disruption.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define OWNED_SELECTOR RC_LABEL_CLUSTER /* "label exists": never cache every Secret */

/* What each cache keeps (kube_project): name, labels, annotations (minus
 * kubectl's last-applied copy), resourceVersion, deletionTimestamp, and the
 * fields reconciler/ and apiserver/ read; docs/internals/memory.md. A field
 * read from a cached object must be listed here. Owner references, uids,
 * creation times and finalizers of owned objects are the garbage
 * collector's and the API server's business (~0.3 KB of each of a Cluster's
 * dozen objects); a Pod's uid and creation time are read (rollout.c, the
 * live API's preconditions and Age). */
#define KEEP_META                                                                          \
	"metadata.name", "metadata.namespace", "metadata.resourceVersion", "metadata.labels", \
		"metadata.annotations", "metadata.deletionTimestamp"
static const char *const keep_all[] = { "*", NULL }; /* decoded whole (api_cluster_decode) */
static const char *const keep_pods[] = { KEEP_META,
					 "metadata.uid",
					 "metadata.creationTimestamp",
					 "spec.nodeName",
					 "status.phase",
					 "status.reason", /* a bootstrap Pod's eviction */
					 "status.podIP",
					 /* Ready (plan.c), and the waiting reason of a
					  * container that cannot start (rc_pod_image_problem):
					  * not the rest (~1 KB a Pod) */
					 "status.conditions[].type",
					 "status.conditions[].status",
					 /* PodScheduled's Unschedulable (drain.c) */
					 "status.conditions[].reason",
					 /* since when it is Unschedulable (drain.c) */
					 "status.conditions[].lastTransitionTime",
					 "status.containerStatuses[].state.waiting",
					 /* a bootstrap Pod's failed attempts */
					 "status.containerStatuses[].restartCount",
					 "status.initContainerStatuses[].state.waiting",
					 NULL };
static const char *const keep_pvcs[] = { KEEP_META, "status.phase", NULL };
static const char *const keep_services[] = { KEEP_META, "spec.selector", NULL };
/* Secrets: no data. Only their existence and resourceVersion are read from
 * the cache; their contents on the paths that need them (reconciler/secrets.c):
 * the certificates were 8 of the 22 KB a Cluster cost at 1,000 Clusters
 * (docs/internals/memory.md). */
static const char *const keep_secrets[] = { KEEP_META, NULL };
/* PodDisruptionBudgets: what drain.c compares with the wanted ones. */
static const char *const keep_pdbs[] = { KEEP_META, "spec.minAvailable", "spec.selector", NULL };
/* Nodes: whether one is being drained (rc_node_draining), not their status
 * (heartbeats: a Node changes every few seconds). */
static const char *const keep_nodes[] = { "metadata.name", "metadata.resourceVersion",
					  "spec.unschedulable", "spec.taints[].key",
					  "spec.taints[].timeAdded", NULL };
static const struct {
	enum kube_kind_id kind;
	bool owned;         /* label-selected objects that belong to a Cluster */
	const char *const *keep;
	const char *fields; /* field selector, or NULL */
} inf_table[RC_INF__COUNT] = {
	[RC_INF_CLUSTERS] = { KUBE_K_CLUSTERS, false, keep_all, NULL },
	[RC_INF_PODS] = { KUBE_K_PODS, true, keep_pods, NULL },
	[RC_INF_PVCS] = { KUBE_K_PVCS, true, keep_pvcs, NULL },
	[RC_INF_SERVICES] = { KUBE_K_SERVICES, true, keep_services, NULL },
	[RC_INF_SECRETS] = { KUBE_K_SECRETS, true, keep_secrets, NULL },
	[RC_INF_BACKUPS] = { KUBE_K_BACKUPS, false, keep_all, NULL },
	[RC_INF_SCHEDULED_BACKUPS] = { KUBE_K_SCHEDULEDBACKUPS, false, keep_all, NULL },
	[RC_INF_OBJECT_STORES] = { KUBE_K_OBJECTSTORES, false, keep_all, NULL },
	[RC_INF_PDBS] = { KUBE_K_PODDISRUPTIONBUDGETS, true, keep_pdbs, NULL },
	[RC_INF_NODES] = { KUBE_K_NODES, false, keep_nodes, NULL },
};

/* Informers of kind k: one per watched namespace, one for cluster-scoped Nodes. */
static size_t inf_count(const struct rc_controller *c, int k)
{
	return k == RC_INF_NODES ? 1 : c->n_inf_ns;
}

static const char *label_of(json_object *obj, const char *key)
{
	json_object *labels = op_json_at(obj, "metadata.labels");
	json_object *v = NULL;
	if (!labels || !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

void rc_controller_stats(struct rc_controller *c, struct rc_controller_stats *ret)
{
	pthread_mutex_lock(&c->mu);
	*ret = c->stats;
	pthread_mutex_unlock(&c->mu);
}

/* -------------------------------------------------------------- metrics */

static bool leading(struct rc_controller *c);

static const char *const result_names[RC_RESULT__N] = { "success", "requeue", "error" };
static const char *const inf_names[RC_INF__COUNT] = {
	[RC_INF_CLUSTERS] = "clusters",
	[RC_INF_PODS] = "pods",
	[RC_INF_PVCS] = "persistentvolumeclaims",
	[RC_INF_SERVICES] = "services",
	[RC_INF_SECRETS] = "secrets",
	[RC_INF_BACKUPS] = "backups",
	[RC_INF_SCHEDULED_BACKUPS] = "scheduledbackups",
	[RC_INF_OBJECT_STORES] = "objectstores",
	[RC_INF_PDBS] = "poddisruptionbudgets",
	[RC_INF_NODES] = "nodes",
};

static int render_gauge(struct op_buf *out, const char *name, const char *help, uint64_t v)
{
	int r = op_metrics_header(out, name, "gauge", help);
	return r ? r : op_metrics_sample(out, name, NULL, v);
}

int rc_controller_render_metrics(struct rc_controller *c, struct op_buf *out)
{
	static const char tot[] = "pgop_reconcile_total", dur[] = "pgop_reconcile_duration_seconds";
	char lb[48];
	int r = op_metrics_header(out, tot, "counter", "Cluster reconciles by result "
				  "(success, requeue: success that asked to look again, error).");
	for (size_t i = 0; !r && i < RC_RESULT__N; i++) {
		snprintf(lb, sizeof(lb), "result=\"%s\"", result_names[i]);
		r = op_metrics_sample(out, tot, lb, op_counter_get(&c->metrics.reconciles[i]));
	}
	if (!r)
		r = op_metrics_header(out, "pgop_reconcile_errors_total", "counter",
				      "Cluster reconciles that failed (retried with back-off).");
	if (!r)
		r = op_metrics_sample(out, "pgop_reconcile_errors_total", NULL,
				      op_counter_get(&c->metrics.reconciles[RC_RESULT_ERROR]));
	if (!r)
		r = op_metrics_header(out, dur, "histogram", "Duration of one Cluster reconcile by result.");
	for (size_t i = 0; !r && i < RC_RESULT__N; i++) {
		snprintf(lb, sizeof(lb), "result=\"%s\"", result_names[i]);
		r = op_metrics_hist(out, dur, lb, &c->metrics.duration[i]);
	}
	if (!r)
		r = op_metrics_header(out, "pgop_reconcile_event_latency_seconds", "histogram",
				      "From a change to a Cluster or its objects (an informer event, an "
				      "action) to the end of the reconcile that handled it (status "
				      "written or up to date); failed reconciles are not counted.");
	if (!r)
		r = op_metrics_hist(out, "pgop_reconcile_event_latency_seconds", NULL,
				    &c->metrics.event_latency);
	if (!r)
		r = render_gauge(out, "pgop_workqueue_depth",
				 "Cluster keys ready and waiting for a worker.", rc_queue_len(c->q));
	if (!r)
		r = render_gauge(out, "pgop_workqueue_delayed",
				 "Cluster keys waiting for a requeue delay or a back-off.",
				 rc_queue_delayed(c->q));
	if (!r)
		r = op_metrics_header(out, "pgop_workqueue_queue_duration_seconds", "histogram",
				      "Time a ready Cluster key waited for a worker.");
	if (!r)
		r = op_metrics_hist(out, "pgop_workqueue_queue_duration_seconds", NULL,
				    rc_queue_wait_hist(c->q));
	if (!r)
		r = op_metrics_header(out, "pgop_informer_objects", "gauge",
				      "Objects in the controller's informer caches, by kind.");
	for (size_t k = 0; !r && k < RC_INF__COUNT; k++) {
		uint64_t n = 0;
		for (size_t i = 0; i < inf_count(c, (int)k); i++)
			n += c->inf[k] && c->inf[k][i] ? kube_informer_count(c->inf[k][i]) : 0;
		snprintf(lb, sizeof(lb), "kind=\"%s\"", inf_names[k]);
		r = op_metrics_sample(out, "pgop_informer_objects", lb, n);
	}
	uint64_t unreachable = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->n_states; i++)
		unreachable += c->states[i].unreachable;
	pthread_mutex_unlock(&c->mu);
	if (!r)
		r = render_gauge(out, "pgop_instances_unreachable",
				 "Instance Pods (with an IP, not terminating) that did not answer "
				 "GET /pg/status at their Cluster's last reconcile.",
				 unreachable);
	if (!r)
		r = render_gauge(out, "pgop_leader", "1 while this replica reconciles (holds the Lease).",
				 leading(c) ? 1 : 0);
	if (!r)
		r = rc_controller_render_cluster_metrics(c, out);
	if (!r && c->kc)
		r = kube_client_render_metrics(c->kc, out);
	if (!r && c->rec)
		r = kube_recorder_render_metrics(c->rec, out);
	return r;
}

/* ------------------------------------------------------------ informers */

struct handler_ctx {
	struct rc_controller *c;
	enum rc_inf kind;
};

/* An ObjectStore names no Cluster (theirs name it, api/plugin.h): every
 * Cluster of its namespace looks again (they change rarely). */
static void enqueue_namespace(struct rc_controller *c, const char *ns)
{
	struct kube_informer *inf = rc_informer(c, RC_INF_CLUSTERS, ns);
	json_object *all = inf ? kube_informer_list(inf, ns) : NULL;
	for (size_t i = 0; all && i < json_object_array_length(all); i++) {
		const char *name = kube_obj_name(json_object_array_get_idx(all, i));
		_cleanup_free_ char *key = op_asprintf("%s/%s", ns, name ? name : "");
		if (name)
			rc_queue_add(c->q, key);
	}
	if (all)
		json_object_put(all);
}

/* A Node that starts or stops being drained (rc_node_draining): the
 * Clusters whose primary runs on it look again (a switchover away from it,
 * the single instance's PDB). CloudNativePG's mapNodeToClusters. */
static bool primary_on_node(void *ud, json_object *pod)
{
	const char *node = op_json_str_at(pod, "spec.nodeName");
	const char *role = label_of(pod, RC_LABEL_INSTANCE_ROLE);
	return node && strcmp(node, ud) == 0 && role && strcmp(role, RC_ROLE_PRIMARY) == 0;
}

static void enqueue_node(struct rc_controller *c, json_object *node)
{
	const char *name = kube_obj_name(node);
	for (size_t i = 0; name && i < c->n_inf_ns; i++) {
		struct kube_informer *inf = c->inf[RC_INF_PODS][i];
		json_object *pods = inf ? kube_informer_list_filter(inf, c->n_ns ? c->ns[i] : NULL,
								    primary_on_node, (void *)name)
					: NULL;
		for (size_t k = 0; pods && k < json_object_array_length(pods); k++) {
			json_object *p = json_object_array_get_idx(pods, k);
			const char *cl = label_of(p, RC_LABEL_CLUSTER);
			_cleanup_free_ char *key = op_asprintf("%s/%s", kube_obj_namespace(p),
							       cl ? cl : "");
			if (cl && kube_obj_namespace(p))
				rc_queue_add(c->q, key);
		}
		if (pods)
			json_object_put(pods);
	}
}

static void enqueue_for(struct rc_controller *c, enum rc_inf kind, json_object *obj)
{
	if (kind == RC_INF_NODES) {
		if (rc_node_draining(obj))
			enqueue_node(c, obj);
		return;
	}
	const char *ns = kube_obj_namespace(obj);
	if (kind == RC_INF_OBJECT_STORES) {
		if (ns)
			enqueue_namespace(c, ns);
		return;
	}
	/* a Cluster's own objects carry its label; its Backups and
	 * ScheduledBackups name it in spec.cluster.name (reconciler/backup.c) */
	const char *name = kind == RC_INF_CLUSTERS ? kube_obj_name(obj)
			   : inf_table[kind].owned ? label_of(obj, RC_LABEL_CLUSTER)
						   : op_json_str_at(obj, "spec.cluster.name");
	if (!ns || !name)
		return;
	_cleanup_free_ char *key = op_asprintf("%s/%s", ns, name);
	rc_queue_add(c->q, key);
}

static void on_add(void *ud, json_object *obj)
{
	struct handler_ctx *h = ud;
	enqueue_for(h->c, h->kind, obj);
}

static void on_update(void *ud, json_object *old_obj, json_object *new_obj)
{
	struct handler_ctx *h = ud;
	if (h->kind == RC_INF_NODES) { /* only when it starts or stops being drained */
		if (rc_node_draining(old_obj) != rc_node_draining(new_obj))
			enqueue_node(h->c, new_obj);
		return;
	}
	enqueue_for(h->c, h->kind, new_obj);
	if (inf_table[h->kind].owned) { /* a relabelled object leaves its old Cluster */
		const char *a = label_of(old_obj, RC_LABEL_CLUSTER);
		const char *b = label_of(new_obj, RC_LABEL_CLUSTER);
		if (a && (!b || strcmp(a, b) != 0))
			enqueue_for(h->c, h->kind, old_obj);
	}
}

static void on_delete(void *ud, json_object *obj)
{
	struct handler_ctx *h = ud;
	enqueue_for(h->c, h->kind, obj);
}

/* One handler context per kind; informers copy the handlers struct but keep
 * the userdata pointer, so these live in the controller. */
struct rc_controller_handlers {
	struct handler_ctx ctx[RC_INF__COUNT];
};

/* ------------------------------------------------------------ workers */

static bool leading(struct rc_controller *c)
{
	return !c->is_leader || c->is_leader(c->leader_ud);
}

/* Once a minute at most, after some work was done: the memory reconciles
 * freed goes back to the system. glibc keeps what each thread frees in its
 * arena (workers, informers, the prober), and an idle controller crept up in
 * steps (docs/internals/memory.md, the idle run). Looked at when a worker
 * found no work for a second, and after each reconcile: with 1,000 Clusters
 * the workers never wait a second, and what the creation burst freed stayed
 * in the heap. */
static void give_back_memory(struct rc_controller *c)
{
	int64_t now = rc_mono_ms();
	int64_t last = atomic_load_explicit(&c->trimmed_ms, memory_order_relaxed);
	if (now - last < RC_TRIM_EVERY_MS ||
	    !atomic_compare_exchange_strong(&c->trimmed_ms, &last, now) ||
	    !atomic_exchange_explicit(&c->worked, false, memory_order_relaxed))
		return;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

static void *worker_main(void *arg)
{
	struct rc_controller *c = arg;
	while (!atomic_load(&c->stopping)) {
		if (!leading(c)) {
			usleep(200 * 1000);
			continue;
		}
		char *key = NULL;
		int64_t event_ms = 0;
		int r = rc_queue_get(c->q, 1000, &key, &event_ms);
		if (r == -ECANCELED)
			break;
		if (r < 0) { /* a second without work */
			give_back_memory(c);
			continue;
		}
		atomic_store_explicit(&c->worked, true, memory_order_relaxed);
		if (!leading(c)) { /* lost the lease while waiting: put it back */
			rc_queue_done(c->q, key);
			rc_queue_add_after(c->q, key, 1000);
			free(key);
			continue;
		}
		long requeue = 0;
		struct op_err err = OP_ERR_INIT;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = rc_reconcile(c, key, &requeue, &err);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		enum rc_result res = r < 0 ? RC_RESULT_ERROR
				   : requeue > 0 ? RC_RESULT_REQUEUE
						 : RC_RESULT_SUCCESS;
		op_counter_add(&c->metrics.reconciles[res], 1);
		int64_t ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
		op_hist_observe(&c->metrics.duration[res], ns > 0 ? (uint64_t)ns : 0);
		rc_stat_add(c, &c->stats.reconciles);
		if (r < 0) {
			rc_stat_add(c, &c->stats.errors);
			long delay = rc_queue_add_rate_limited(c->q, key);
			char d[24];
			snprintf(d, sizeof(d), "%ld", delay);
			op_log_warn("reconcile failed", "cluster", key, "error", err.msg, "retry_ms", d);
		} else {
			rc_queue_forget(c->q, key);
			if (requeue > 0)
				rc_queue_add_after(c->q, key, requeue);
			/* event -> status written (or found up to date): t1 is the monotonic
			 * clock rc_queue stamps events with */
			int64_t t1_ms = (int64_t)t1.tv_sec * 1000 + t1.tv_nsec / 1000000;
			if (event_ms)
				op_hist_observe(&c->metrics.event_latency,
						(uint64_t)(t1_ms > event_ms ? t1_ms - event_ms : 0) *
							1000000u);
		}
		rc_queue_done(c->q, key);
		free(key);
		give_back_memory(c);
	}
	return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static struct rc_controller_handlers *handlers_of(struct rc_controller *c);

int rc_controller_start(const struct rc_controller_opts *o, struct rc_controller **ret,
			struct op_err *err)
{
	if (!o || !o->client)
		return op_err_set(err, -EINVAL, "reconciler: no kube client");
	struct rc_controller *c = op_calloc(1, sizeof(*c) + sizeof(struct rc_controller_handlers));
	pthread_mutex_init(&c->mu, NULL);
	c->kc = o->client;
	c->n_ns = o->n_namespaces;
	c->ns = op_calloc(c->n_ns ? c->n_ns : 1, sizeof(char *));
	for (size_t i = 0; i < c->n_ns; i++)
		c->ns[i] = op_strdup(o->namespaces[i]);
	c->n_inf_ns = c->n_ns ? c->n_ns : 1;
	c->settings.operator_image =
		o->settings.operator_image ? op_strdup(o->settings.operator_image) : NULL;
	c->settings.cluster_domain =
		o->settings.cluster_domain ? op_strdup(o->settings.cluster_domain) : NULL;
	c->settings.default_image =
		o->settings.default_image ? op_strdup(o->settings.default_image) : NULL;
	c->settings.node_lost_timeout_s = o->settings.node_lost_timeout_s
						  ? o->settings.node_lost_timeout_s
						  : RC_NODE_LOST_TIMEOUT_DEFAULT_S;
	c->validate = o->validate;
	c->validate_ud = o->validate_userdata;
	c->status_timeout_ms = o->status_timeout_ms;
	c->is_leader = o->is_leader;
	c->leader_ud = o->leader_userdata;
	c->q = rc_queue_new(NULL);
	int rr = kube_recorder_new(c->kc, "pgop", 0, &c->rec, err);
	if (rr < 0) {
		rc_controller_free(c);
		return rr;
	}
	for (size_t i = 0; i < RC_RESULT__N; i++)
		op_hist_init(&c->metrics.duration[i], &op_hist_bounds_slow);
	op_hist_init(&c->metrics.event_latency, &op_hist_bounds_slow);
	unsigned n_workers = o->workers ? o->workers : 4;

	struct rc_controller_handlers *hs = handlers_of(c);
	int r = 0;
	for (int k = 0; k < RC_INF__COUNT && r == 0; k++) {
		hs->ctx[k] = (struct handler_ctx){ c, (enum rc_inf)k };
		c->inf[k] = op_calloc(c->n_inf_ns, sizeof(struct kube_informer *));
		struct kube_informer_handlers h = { .on_add = on_add, .on_update = on_update,
						    .on_delete = on_delete, .userdata = &hs->ctx[k] };
		for (size_t i = 0; i < inf_count(c, k) && r == 0; i++) {
			struct kube_informer_opts io = {
				.ns = c->n_ns && k != RC_INF_NODES ? c->ns[i] : NULL,
				.label_selector = inf_table[k].owned ? OWNED_SELECTOR : NULL,
				.field_selector = inf_table[k].fields,
				.keep = inf_table[k].keep,
				.index_label = inf_table[k].owned ? RC_LABEL_CLUSTER : NULL,
			};
			r = kube_informer_new(c->kc, KUBE_KIND(inf_table[k].kind), &io, &h,
					      &c->inf[k][i], err);
			if (r == 0)
				r = kube_informer_start(c->inf[k][i], err);
		}
	}
	if (r < 0) {
		rc_controller_free(c);
		return r;
	}
	c->workers = op_calloc(n_workers, sizeof(pthread_t));
	for (unsigned i = 0; i < n_workers; i++) {
		int e = pthread_create(&c->workers[i], NULL, worker_main, c);
		if (e == 0)
			c->n_workers = i + 1;
		if (e) {
			rc_controller_free(c);
			return op_err_set(err, -e, "reconciler: pthread_create: %s", strerror(e));
		}
	}
	r = rc_prober_start(c, err);
	if (r < 0) {
		rc_controller_free(c);
		return r;
	}
	c->started = true;
	*ret = c;
	return 0;
}

static struct rc_controller_handlers *handlers_of(struct rc_controller *c)
{
	return (struct rc_controller_handlers *)(c + 1);
}

bool rc_controller_synced(struct rc_controller *c)
{
	for (int k = 0; k < RC_INF__COUNT; k++)
		for (size_t i = 0; i < inf_count(c, k); i++)
			if (!c->inf[k] || !c->inf[k][i] || !kube_informer_has_synced(c->inf[k][i]))
				return false;
	return true;
}

int rc_controller_flush_events(struct rc_controller *c, long timeout_ms)
{
	return c->rec ? kube_recorder_flush(c->rec, timeout_ms) : 0;
}

static void *stop_informer(void *inf)
{
	kube_informer_stop(inf);
	return NULL;
}

void rc_controller_stop(struct rc_controller *c)
{
	if (!c || atomic_exchange(&c->stopping, true))
		return;
	rc_queue_shutdown(c->q);
	for (unsigned i = 0; i < c->n_workers; i++)
		pthread_join(c->workers[i], NULL);
	c->n_workers = 0;
	rc_prober_stop(c);
	if (rc_controller_flush_events(c, RC_EVENTS_DRAIN_MS) < 0)
		op_log_warn("Events still queued after 2 s are dropped at stop");
	/* each stop waits up to ~1 s for its watch to notice: stop them in parallel */
	size_t n = 0, max = RC_INF__COUNT * c->n_inf_ns;
	pthread_t *th = op_calloc(max, sizeof(pthread_t));
	struct kube_informer **which = op_calloc(max, sizeof(*which));
	for (int k = 0; k < RC_INF__COUNT; k++)
		for (size_t i = 0; c->inf[k] && i < c->n_inf_ns; i++)
			if (c->inf[k][i]) {
				which[n] = c->inf[k][i];
				if (pthread_create(&th[n], NULL, stop_informer, which[n]) == 0)
					n++;
				else
					kube_informer_stop(which[n]);
			}
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
	free(which);
}

struct rc_controller *rc_controller_free(struct rc_controller *c)
{
	if (!c)
		return NULL;
	rc_controller_stop(c);
	for (int k = 0; k < RC_INF__COUNT; k++) {
		for (size_t i = 0; c->inf[k] && i < c->n_inf_ns; i++)
			kube_informer_free(c->inf[k][i]);
		free(c->inf[k]);
	}
	for (size_t i = 0; i < c->n_states; i++)
		rc_state_done(&c->states[i]);
	free(c->states);
	for (size_t i = 0; i < c->n_ns; i++)
		free(c->ns[i]);
	free(c->ns);
	free(c->workers);
	free((char *)c->settings.operator_image);
	free((char *)c->settings.cluster_domain);
	free((char *)c->settings.default_image);
	rc_queue_free(c->q);
	kube_recorder_free(c->rec, 0);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return NULL;
}
