/* reconciler/ctl.h - the controller's internals shared by the reconciler's
 * files (not exported outside reconciler/), grouped by the file that defines
 * them; which file may call which: reconciler/internal.h. */
#ifndef PGOP_RECONCILER_CTL_H
#define PGOP_RECONCILER_CTL_H

#include <pthread.h>
#include <stdatomic.h>

#include "api/cluster.h"
#include "kube/kube.h"
#include "kube/recorder.h"
#include "kube/watch.h"
#include "pki/pki.h"
#include "reconciler/queue.h"
#include "reconciler/reconciler.h"
#include "reconciler/status.h"
#include "support/metrics.h"

enum rc_inf {
	RC_INF_CLUSTERS,
	RC_INF_PODS,
	RC_INF_PVCS,
	RC_INF_SERVICES,
	RC_INF_SECRETS,
	RC_INF_BACKUPS,           /* keyed by spec.cluster.name (reconciler/backup.c) */
	RC_INF_SCHEDULED_BACKUPS, /* the same */
	RC_INF_OBJECT_STORES,     /* every Cluster of the namespace (api/plugin.h) */
	RC_INF_PDBS,              /* the Clusters' PodDisruptionBudgets (drain.c) */
	RC_INF_NODES,             /* cluster-scoped: one informer whatever the namespaces
				   * (a node being drained, drain.c) */
	RC_INF__COUNT
};

/* What reconciles learnt from a Cluster's certificate Secrets, each fact valid
 * for the resourceVersion it was read at (secrets.c): the Secrets cache keeps
 * no data. */
struct rc_leaf_memo {
	char *rv;                            /* owned: the Secret at this resourceVersion */
	char ca_fp[PKI_FINGERPRINT_HEX + 1]; /* verified against this CA */
	uint64_t want;                       /* for this CN/usage/SANs (rc_leaf_want_digest) */
	int64_t renew_at;                    /* needs no renewal before (Unix s) */
	int64_t not_after;                   /* its expiry, for status.certificates */
};
struct rc_pki_memo {
	char *ca_rv;                         /* owned: <c>-ca at this resourceVersion holds */
	char *ca_crt;                        /* owned: this CA certificate (PEM) */
	char ca_fp[PKI_FINGERPRINT_HEX + 1]; /* its fingerprint */
	bool ca_key;                         /* and a key (read when signing: rc_ca_key) */
	int64_t ca_renew_at, ca_not_after;   /* Unix s */
	char *ca_cert_rv;                    /* owned: <c>-ca-cert at this rv holds exactly */
	char ca_cert_fp[PKI_FINGERPRINT_HEX + 1]; /* this CA certificate, and no key */
	struct rc_leaf_memo leaf[2];         /* RC_LEAF_SERVER, RC_LEAF_REPLICATION */
};
enum { RC_LEAF_SERVER, RC_LEAF_REPLICATION };

/* Per-Cluster memory kept between reconciles (by key). */
struct rc_cluster_state {
	char *key;
	char *uid;
	bool rbac_done;              /* SA/Role/RoleBinding created for uid */
	char *rbac_rules;            /* owned: the Role's rules last written or confirmed */
	bool podmonitor_created;     /* podmonitor.c: the PodMonitor exists (we created it) */
	int64_t podmonitor_at;       /* podmonitor.c: last attempt (wall s), 0 = none due */
	char ca_fp[PKI_FINGERPRINT_HEX + 1]; /* CA the client cert was issued from */
	struct pki_pair client;      /* operator client certificate */
	int64_t client_checked;      /* when client was last verified against ca_fp (wall s) */
	unsigned unreachable;        /* instance Pods with an IP not answering /pg/status
				      * at the last reconcile (pgop_instances_unreachable) */
	char **silent;               /* owned: "name@ip" of those (contact.c) */
	size_t n_silent;
	char **answered;             /* owned: "name@ip" of those that answered */
	size_t n_answered;
	bool probe_bg;               /* every instance with an IP is silent: reconciles do
				      * not ask them, the prober does (contact.c) */
	int64_t probe_next_ms;       /* monotonic ms of the prober's next try */
	char *watch;                 /* owned: "name@ip" of the primary that answered at the
				      * last reconcile, TCP-probed every RC_WATCH_MS (contact.c);
				      * NULL when none (or a single instance) */
	int64_t watch_next_ms;       /* monotonic ms of its next probe (and of the lost ones) */
	char **lost;                 /* owned: "name@ip" the watch saw not connect, probed with it
				      * until they connect again; reconciles do not ask them */
	size_t n_lost;
	int64_t cut_asked_ms;        /* monotonic ms of the last POST /pg/cut round (cut.c) */
	int64_t primary_lease_ms;    /* the lease the primary last reported (leaseMs); 0 = not
				      * known (rc_fence_lease_ms) */
	unsigned probe_streak;       /* prober tries since an instance last answered */
	unsigned status_errors;      /* reconciles in a row where no Ready instance answered */
	char **sync_set;             /* owned: replicas the primary last reported sync/quorum */
	size_t n_sync_set;
	char **reclones;             /* owned: "pod\tid" of the re-clones already reported */
	size_t n_reclones;
	struct rc_pki_memo pki;      /* owned fields */
	int64_t pending_returned_ms; /* Unix ms when this process's patch writing "pending"
				      * returned (rc_fence_clock_ms); 0 when not pending */
};

/* Reconcile outcomes, the `result` label of pgop_reconcile_*. */
enum rc_result { RC_RESULT_SUCCESS, RC_RESULT_REQUEUE, RC_RESULT_ERROR, RC_RESULT__N };

/* Prometheus metrics of the controller (rendered by rc_controller_render_metrics). */
struct rc_metrics {
	_Atomic uint64_t reconciles[RC_RESULT__N];
	struct op_hist duration[RC_RESULT__N];
	struct op_hist event_latency; /* event (rc_queue_add) -> the reconcile handling it ended, not failed */
};

struct rc_controller {
	struct kube_client *kc;
	struct kube_recorder *rec; /* owned: Events posted in the background (rc_controller_start
				    * makes it; NULL in a controller tests build by hand) */
	char **ns;          /* owned; n_ns == 0 means all namespaces */
	size_t n_ns;
	size_t n_inf_ns;    /* max(1, n_ns) */
	struct kube_informer **inf[RC_INF__COUNT]; /* [kind][ns index] */
	struct rc_queue *q;
	pthread_t *workers;
	unsigned n_workers;
	bool started;
	atomic_bool stopping;
	struct rc_settings settings; /* strings owned */
	rc_validate_fn validate;
	void *validate_ud;
	long status_timeout_ms;
	bool (*is_leader)(void *);
	void *leader_ud;
	pthread_t prober;   /* contact.c: TCP probes of Clusters no instance of which answers */
	bool prober_started;
	unsigned char *watch_hello; /* owned: the primary watch's TLS ClientHello (contact.c) */
	size_t watch_hello_len;
	pthread_mutex_t mu; /* states and stats */
	struct rc_cluster_state *states; /* owned, sorted by key (rc_state_find: binary search) */
	size_t n_states;
	struct rc_controller_stats stats;
	struct rc_metrics metrics;
	_Atomic int64_t trimmed_ms; /* monotonic ms of the last malloc_trim (controller.c) */
	atomic_bool worked;         /* a reconcile ran since then */
};

#define RC_TRIM_EVERY_MS 60000

/* metrics_clusters.c: per-Cluster gauges from the informer cache and
 * controller-runtime's names for the reconcile counts (issue 27). */
OP_MUST_CHECK int rc_controller_render_cluster_metrics(struct rc_controller *c, struct op_buf *out);

/* state.c - the shared state every file may use: the informer caches, the
 * stats, the per-Cluster states and what reconciles note in them. */
/* Informer of kind for namespace ns (borrowed), or NULL when ns is not watched. */
struct kube_informer *rc_informer(struct rc_controller *c, enum rc_inf kind, const char *ns);
/* Owned deep copy of the cached object, or NULL. */
json_object *rc_cache_get(struct rc_controller *c, enum rc_inf kind, const char *ns,
			  const char *name);
/* Owned array of cached objects in ns whose label cnpg.io/cluster == cluster. */
json_object *rc_cache_owned(struct rc_controller *c, enum rc_inf kind, const char *ns,
			    const char *cluster);
/* Same, only objects whose label cnpg.io/podRole == pod_role (NULL = any). */
json_object *rc_cache_owned_role(struct rc_controller *c, enum rc_inf kind, const char *ns,
				 const char *cluster, const char *pod_role);
void rc_stat_add(struct rc_controller *c, unsigned long *field);
/* Cluster key's state, under mu: found (NULL when none) or made. Borrowed, valid
 * until mu is released (the array grows). */
struct rc_cluster_state *rc_state_find(struct rc_controller *c, const char *key);
struct rc_cluster_state *rc_state_get(struct rc_controller *c, const char *key);
/* When the patch that wrote "pending" for Cluster key returned (Unix ms), or
 * 0 to forget it; and reading it back (0: unknown). Take mu. */
void rc_note_pending_returned(struct rc_controller *c, const char *key, int64_t ms);
int64_t rc_pending_returned(struct rc_controller *c, const char *key);
/* Forgets Cluster key's state (it is gone or being deleted): takes mu. */
void rc_state_drop(struct rc_controller *c, const char *key);
/* Frees what s owns and zeroes it (not s itself). */
void rc_state_done(struct rc_cluster_state *s);
/* Records the replicas whose syncState is sync or quorum in primary_doc (the
 * current primary's /pg/status, borrowed; its replicationInfo) as the set of
 * Cluster key; a report of none keeps the last set. rc_sync_set_get returns
 * (owned copies, rc_strv_free) the set. Thread-safe (mu). */
void rc_note_sync_set(struct rc_controller *c, const char *key, json_object *primary_doc);
void rc_sync_set_get(struct rc_controller *c, const char *key, char ***ret, size_t *n);
/* The set and status.synchronousStandbys (*v, *n, owned list) brought together:
 * a set this process knows replaces the list; otherwise a non-empty list read
 * from the status becomes the set (after an operator restart or a leader
 * change, before the primary answered). */
void rc_sync_set_merge(struct rc_controller *c, const char *key, char ***v, size_t *n);
/* True the first time Cluster key's subject reports id, for an Event recorded
 * once: an instance pod's re-clone (subject the pod, id its sessionID and
 * time, rc_reclone_report: RewindFailedRecloned), the primary's last
 * retention run (subject "retention", id its time: backup.c). One id is
 * remembered per subject, by this process only (an operator restart reports
 * the last one once more). Thread-safe (mu). */
bool rc_note_report(struct rc_controller *c, const char *key, const char *subject,
		    const char *id);
/* Forgets what Cluster key's subjects starting with prefix reported, except
 * the subjects keep[0..n_keep) (borrowed): their next report is fresh again
 * (metrics_events.c: a query error that cleared). Thread-safe (mu). */
void rc_note_forget(struct rc_controller *c, const char *key, const char *prefix,
		    const char *const *keep, size_t n_keep);
/* Counts reconciles in a row of Cluster key where no Ready instance answered
 * (failing) and returns the requeue delay (rc_status_error_delay_ms); a
 * non-failing call resets the count and returns 0. Thread-safe (mu). */
long rc_note_status_error(struct rc_controller *c, const char *key, bool failing);

/* contact.c - which instances answer, and the prober that watches the ones
 * that do not. Thread-safe (mu), monotonic ms clocks given by the caller. */
/* Records which of Cluster key's instances v[0..n) did not answer (a Pod with
 * an IP, not terminating, no status and not restarting) and which did; when
 * every instance with an IP is silent the Cluster goes to the prober (its
 * first try 1 s later). n = 0: none silent (rc_state_drop forgets a Cluster
 * that is gone). */
void rc_note_unreachable(struct rc_controller *c, const char *key, const struct rc_instance *v,
			 size_t n, int64_t now_ms);
/* Sets v[i].silent for an instance not known to answer (silent last time, or
 * never answered at its current IP: its fetch starts with a TCP probe).
 * Returns true when the Cluster is with the prober and v holds no instance
 * with an IP it does not watch: the reconcile asks none of them (each gets an
 * error saying so) instead of waiting for the TCP probes. */
bool rc_mark_silent(struct rc_controller *c, const char *key, struct rc_instance *v, size_t n);
/* The prober's delay after `streak` tries that found nothing: 1 s doubling,
 * at most RC_PROBE_MAX_DELAY_MS. */
#define RC_PROBE_MAX_DELAY_MS 10000
#define RC_PROBE_TIMEOUT_MS 1000 /* its TCP connects, all at once */
long rc_probe_delay_ms(unsigned streak);
/* One round of probes due at now_ms. What is due is collected under mu, the
 * TCP probes (probe, borrowed: op_tcp_probe's shape; port RC_STATUS_PORT) run
 * without it. A Cluster one of whose instances connected leaves the prober
 * (that instance is no longer silent) and its key is added to the work queue;
 * the others try again after rc_probe_delay_ms. Returns the number of keys
 * queued. */
typedef int (*rc_probe_fn)(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
			   int *ret_errno);
size_t rc_probe_round(struct rc_controller *c, int64_t now_ms, rc_probe_fn probe);
/* The primary watch: the primary of each Cluster with more than one instance
 * that answered at its last reconcile is probed (port RC_STATUS_PORT) every
 * RC_WATCH_MS, all at once: a TCP connect within RC_STATUS_CONNECT_SILENT_MS,
 * then c->watch_hello (a TLS ClientHello) sent and any reaction of the status
 * server awaited for RC_WATCH_ANSWER_MS (probe, borrowed:
 * op_tcp_probe_answer's shape). One that does not connect (a partition), or
 * connects and stays silent (a frozen node, whose kernel completes the
 * handshake alone), becomes "lost" and its Cluster is queued at once: seen
 * within RC_WATCH_MS + RC_STATUS_CONNECT_SILENT_MS + RC_WATCH_ANSWER_MS, not
 * at the next 5 s poll with a 2 s status timeout (docs/internals/failover.md).
 * A lost instance is not asked by the reconciles (rc_mark_silent sets
 * rc_instance.unreachable) and is probed here the same way every RC_WATCH_MS
 * until it answers, which queues its Cluster again. Returns the keys queued. */
#define RC_WATCH_MS 250
#define RC_WATCH_ANSWER_MS 500
typedef int (*rc_answer_fn)(const char *const *hosts, size_t n, unsigned port, long connect_ms,
			    const void *hello, size_t hello_len, long answer_ms, int *ret_errno);
size_t rc_watch_round(struct rc_controller *c, int64_t now_ms, rc_answer_fn probe);
/* True when the primary watch holds this instance (its name at its IP) of
 * the Cluster lost now: a reconcile's fetch gives it up then
 * (rc_fetch_opts.abandon), even mid-transfer. */
bool rc_instance_lost(struct rc_controller *c, const char *key, const struct rc_instance *in);
/* The lease the Cluster's primary's manager last reported answering a
 * reconcile of this process (rc_note_unreachable records it), or
 * API_FENCE_LEGACY_MS when none did (an older manager, or not seen yet):
 * a failover waits for the old primary's lease, not the operator's own. */
int64_t rc_fence_lease_ms(struct rc_controller *c, const char *key);
/* CLOCK_MONOTONIC in ms (the clock of now_ms above). */
int64_t rc_mono_ms(void);
/* The prober thread: a round every 250 ms while leading. Builds
 * c->watch_hello first (-EIO when gnutls cannot). */
OP_MUST_CHECK int rc_prober_start(struct rc_controller *c, struct op_err *err);
void rc_prober_stop(struct rc_controller *c); /* joins it; after c->stopping is set */

/* One reconcile of one Cluster (reconcile.c), passed to its steps (run.c,
 * reconcile_objects.c, rollout.c, cut.c); live.c fills one for its reads. */
struct rc_run {
	struct rc_controller *ctl;
	const char *key;
	json_object *obj;       /* owned copy of the Cluster from the cache */
	struct api_cluster *c;  /* owned, decoded obj */
	const char *ns, *name;  /* borrowed from c */
	int64_t now;            /* Unix s when the reconcile started */
	int64_t now_ms;         /* the same clock read, Unix ms */
	struct rc_status want;  /* status to write (starts as the current one) */
	struct pki_pair ca;     /* owned: <c>-ca cert; its key only once rc_ca_key read it */
	char ca_fp[PKI_FINGERPRINT_HEX + 1]; /* fingerprint of ca.cert_pem */
	bool ca_has_key;        /* <c>-ca holds a key (a user CA may not) */
	int64_t ca_not_after;   /* ca.cert_pem's expiry, Unix s */
	json_object *secrets;   /* owned: the Cluster's Secrets with their data, listed at
				 * most once per reconcile (rc_secret_full); NULL until then */
	struct pki_pair client; /* owned: operator client certificate */
	long requeue_ms;        /* smallest requeue asked for; 0 = none */
	char *plugin_error;     /* owned: why the barman-cloud plugin's ObjectStore cannot be
				 * used (api_cluster_resolve_plugins), or NULL */
	int64_t cut_deadline_ms; /* "pending" decided on replicas' cuts: the patch must
				  * return before this (monotonic ms, cut.c); 0 = none */
	struct op_err *err;
};

/* run.c - what the reconcile steps do to the API server and the Cluster. */
/* Asks to look again after ms (the smallest request wins). */
void rc_requeue(struct rc_run *r, long ms);
/* Queues an Event on the Cluster and logs its message: posted in the
 * background (kube/recorder.h), never waited for; dropped when the queue is full. */
void rc_event(struct rc_run *r, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Creates obj (borrowed) of kind k in the Cluster's namespace; an existing
 * object is success (0); 1 when created. */
OP_MUST_CHECK int rc_create(struct rc_run *r, const struct kube_kind *k, json_object *obj);
/* Same; *ret_rv: owned resourceVersion of the created object (NULL when it
 * was not created or the answer has none). */
OP_MUST_CHECK
int rc_create_rv(struct rc_run *r, const struct kube_kind *k, json_object *obj, char **ret_rv);
/* Deletes (background propagation); absent is success. */
OP_MUST_CHECK int rc_delete(struct rc_run *r, const struct kube_kind *k, const char *name);
/* Same with a grace period (-1: the object's own; 0: at once, for Pods on a
 * node whose kubelet will never confirm). */
OP_MUST_CHECK int rc_delete_grace(struct rc_run *r, const struct kube_kind *k, const char *name,
				  long grace_s);
/* Deletes instance serial (its Pod pod, its bootstrap Pods, its claims), the
 * Pod last: 0, or -errno (r->err). pod borrowed. force: the Pods with grace
 * period 0 (their node is lost). */
OP_MUST_CHECK int rc_delete_instance(struct rc_run *r, int64_t serial, const char *pod,
				     bool force);
/* podmonitor.c: the PodMonitor of spec.monitoring.enablePodMonitor (never fails
 * the reconcile: a missing CRD is a Warning Event, retried every minute). */
void rc_ensure_podmonitor(struct rc_run *r);
/* Merge-patches metadata.labels key=value pairs (NULL-terminated list). */
OP_MUST_CHECK
int rc_patch_labels(struct rc_run *r, const struct kube_kind *k, const char *name, ...)
		    __attribute__((sentinel));

/* cut.c: asks every answering replica of primary (which does not answer; v[]
 * the reconcile's instances, primary one of them) to cut its WAL receiver off
 * it (POST /pg/cut). The answers of those that cut replace their entries in v
 * (WAL receiver down). Returns the monotonic ms before which "pending" must be
 * written for these cuts to count (the request's start + the smallest hold
 * reported), 0 when none cut. v must be sorted again afterwards. */
int64_t rc_request_cuts(struct rc_run *r, struct rc_instance *v, size_t n,
			const struct rc_instance *primary);
/* Whether Cluster key may ask its replicas to cut now (at most once every
 * RC_CUT_EVERY_MS: replicas that still reach the primary refuse, and the
 * reconcile looks again every 250 ms); records now_ms (monotonic) when so. */
#define RC_CUT_EVERY_MS 1000
bool rc_cut_due(struct rc_controller *c, const char *key, int64_t now_ms);

/* reconcile_objects.c: the objects every Cluster needs, in CNPG's order. */
OP_MUST_CHECK int rc_ensure_pki(struct rc_run *r);
OP_MUST_CHECK int rc_ensure_user_secrets(struct rc_run *r);
OP_MUST_CHECK int rc_ensure_rbac(struct rc_run *r);
OP_MUST_CHECK int rc_ensure_services(struct rc_run *r);
/* The operator client certificate for this Cluster's CA (cached per key). */
OP_MUST_CHECK int rc_ensure_client_cert(struct rc_run *r);

/* secrets.c: Secret contents on the paths that need them, and the memo. */
/* The Secret `name` of r's Cluster with its data: *ret borrowed from
 * r->secrets (one LIST by the Cluster label, the first time). -ENOENT when the
 * list does not hold it; other errors in r->err. */
OP_MUST_CHECK int rc_secret_full(struct rc_run *r, const char *name, json_object **ret);
/* Makes r->ca.key_pem available (read from <c>-ca): 0, -ENOKEY when the CA has
 * no key, or an error in r->err (-ESTALE: <c>-ca changed under this reconcile). */
OP_MUST_CHECK int rc_ca_key(struct rc_run *r);
/* A digest of what a leaf certificate must name (CN, usage, SANs in order). */
uint64_t rc_leaf_want_digest(const struct pki_leaf_req *want);
/* Frees what m owns and zeroes it (state.c: rc_state_done frees the memo). */
void rc_pki_memo_done(struct rc_pki_memo *m);
/* <c>-ca at rv known and not due: fills r->ca.cert_pem, ca_fp, ca_has_key,
 * ca_not_after and returns true. */
bool rc_memo_ca_get(struct rc_run *r, const char *rv);
/* Records r->ca.cert_pem (and whether r->ca.key_pem is set) as <c>-ca at rv,
 * and fills r->ca_fp, ca_has_key, ca_not_after from it. */
OP_MUST_CHECK int rc_memo_ca_set(struct rc_run *r, const char *rv);
bool rc_memo_ca_cert_get(struct rc_run *r, const char *rv);
void rc_memo_ca_cert_set(struct rc_run *r, const char *rv); /* holds r->ca_fp's certificate */
/* Leaf `slot` at rv verified against r->ca_fp for `want` and not due: true,
 * with its expiry. */
bool rc_memo_leaf_get(struct rc_run *r, unsigned slot, const char *rv, uint64_t want,
		      int64_t *ret_not_after);
/* Records crt (PEM, verified by the caller) as leaf `slot` at rv for want. */
OP_MUST_CHECK int rc_memo_leaf_set(struct rc_run *r, unsigned slot, const char *rv, uint64_t want,
				   const char *crt, int64_t *ret_not_after);


/* metrics_events.c: one Warning Event MetricsQueryFailed per failing
 * monitoring query (or custom query file) and error text, from the
 * instances' /pg/status metricsErrors (v[0..n), borrowed). */
void rc_metrics_error_events(struct rc_run *r, const struct rc_instance *v, size_t n);

/* backup.c (layer 3) - the Cluster's Backups: starts new ones on their target
 * instance, polls running ones, fails what cannot run here, and fills
 * r->want's lastSuccessfulBackup/lastFailedBackup/LastBackupSucceeded. v: the
 * instances this reconcile asked; backups: the Cluster's Backups
 * (rc_backups_of); both borrowed. */
OP_MUST_CHECK int rc_backups_step(struct rc_run *r, const struct rc_instance *v, size_t n,
				 json_object *backups);
/* tablespaces.c (layer 3) - r->want's status.tablespacesStatus from the
 * primary's /pg/status "tablespaces" (v[0..n), borrowed); kept as read when
 * no primary reported. */
void rc_tablespaces_status(struct rc_run *r, const struct rc_instance *v, size_t n);
/* scheduled.c (layer 3) - the Cluster's ScheduledBackups: creates their
 * Backups when due (one at a time: backups, borrowed, says which still run)
 * and requeues for the next fire time. */
OP_MUST_CHECK int rc_scheduled_backups_step(struct rc_run *r, json_object *backups);
/* The objects of kind (RC_INF_BACKUPS, RC_INF_SCHEDULED_BACKUPS) in ns whose
 * spec.cluster.name is cluster: a new owned array of owned copies. */
json_object *rc_backups_of(struct rc_controller *ctl, enum rc_inf kind, const char *ns,
			   const char *cluster);

#endif
