/* reconciler/status.h - instance state, failover target selection and the
 * Cluster status (pure: no I/O, callers pass `now`).
 *
 * Phases are CloudNativePG's strings (api/v1/cluster_types.go), so tools that
 * read CNPG status (kubectl cnpg, dashboards) understand pgop's.
 */
#ifndef PGOP_RECONCILER_STATUS_H
#define PGOP_RECONCILER_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/fence.h"
#include "support/err.h"

#define RC_PHASE_HEALTHY "Cluster in healthy state"
#define RC_PHASE_FIRST_PRIMARY "Setting up primary"
#define RC_PHASE_CREATING_REPLICA "Creating a new replica"
#define RC_PHASE_WAITING_ACTIVE "Waiting for the instances to become active"
#define RC_PHASE_FAILOVER "Failing over"
#define RC_PHASE_SWITCHOVER "Switchover in progress"
#define RC_PHASE_UNRECOVERABLE "Cluster is unrecoverable and needs manual intervention"
#define RC_PHASE_CANNOT_CREATE_OBJECTS "Unable to create required cluster objects"
#define RC_PHASE_STATUS_ERROR "Instance Status Extraction Error: HTTP communication issue"
#define RC_PHASE_INVALID "Invalid cluster definition"
#define RC_PHASE_SCALING_DOWN "Scaling down"
#define RC_PHASE_UPGRADING "Upgrading cluster"           /* a rolling restart step */
#define RC_PHASE_WAITING_USER "Waiting for user action" /* supervised primary update */
/* An instance or bootstrap Job pod cannot start its image (e.g. the node has
 * no PostgreSQL of the image's major); phaseReason carries the kubelet's
 * message. */
#define RC_PHASE_IMAGE_ERROR "Unable to start the PostgreSQL image"

/* targetPrimary while a failover is choosing its new primary (CNPG). */
#define RC_PENDING_FAILOVER API_PENDING_FAILOVER

/* What the operator knows about one instance: its Pod and /pg/status. */
struct rc_instance {
	char *name;          /* owned: pod name */
	char *ip;            /* owned: status.podIP, NULL when none */
	int64_t serial;
	bool pod_ready;      /* Pod condition Ready=True */
	bool pod_terminating; /* metadata.deletionTimestamp set */
	bool has_status;     /* GET /pg/status answered 200 with JSON */
	bool restarting;     /* it answered 503 "restarting": postgres (re)starts in place */
	bool unreachable;    /* the primary watch saw it not connect and probes it in the
			      * background (contact.c): not asked at all */
	bool silent;         /* not known to answer (not last time, or never at this IP):
			      * fetched only after a TCP probe within
			      * RC_STATUS_CONNECT_SILENT_MS (instance_client.h) */
	char *error;         /* owned: why there is no status, or NULL */
	bool is_primary;
	uint64_t current_lsn, received_lsn, replay_lsn;
	int64_t timeline_id;
	bool wal_receiver_active;
	bool pg_rewind_running;
	int streaming_replicas; /* replicationInfo entries with state "streaming" */
	bool pending_restart;   /* a changed parameter waits for a restart */
	int64_t lease_ms;       /* leaseMs: its manager's lease; 0 = not reported (older) */
	int64_t cut_hold_ms;    /* its WAL receiver is cut off the primary (walReceiverCut):
				 * held at least this long from the answer; 0 = not cut */
	bool cut_unheld;        /* cut by an earlier request, and this reconcile's request
				 * could not extend the hold (reconciler/cut.c): it may undo
				 * the cut before "pending" is written, so it is not counted
				 * as having lost the primary */
	json_object *doc;       /* owned: the /pg/status answer as received, or NULL */
};
void rc_instance_done(struct rc_instance *in); /* frees contents; accepts NULL */

/* The largest leaseMs / walReceiverCut.holdMs a /pg/status may report (ms):
 * a larger or negative one is a bad answer (and would overflow the clocks). */
#define RC_INSTANCE_MS_MAX (10 * 60 * 1000)

/* Fills the status part of *in from a /pg/status JSON body (borrowed).
 * -EINVAL when it is not an object or a field has the wrong type. */
OP_MUST_CHECK
int rc_instance_parse_status(struct rc_instance *in, json_object *st, struct op_err *err);

/* An instance's report that pg_rewind failed and it re-cloned its data (its
 * /pg/status `recloned`, docs/instance-contract.md); strings borrowed from
 * the document. */
struct rc_reclone_report {
	const char *session_id; /* the manager process that did it (sessionID) */
	const char *source;     /* the host it cloned from */
	const char *time;       /* when, RFC 3339 */
	int64_t rewind_status;  /* pg_rewind's exit status */
};
/* 1 with *ret filled when doc (a /pg/status answer, borrowed, may be NULL)
 * reports a re-clone; 0 when it does not (absent, or not an object with a
 * time). */
OP_MUST_CHECK int rc_reclone_report(json_object *doc, struct rc_reclone_report *ret);

/* Sorts like CNPG PostgresqlStatusList.Less: instances without status last,
 * primaries first, then higher receivedLsn, then higher replayLsn, then name. */
void rc_instances_sort(struct rc_instance *v, size_t n);

enum rc_failover_action {
	RC_FO_NONE = 0,          /* nothing to do */
	RC_FO_SPLIT_BRAIN,       /* more than one instance reports primary: event, requeue 5 s */
	RC_FO_PRIMARY_CHECK,     /* primary Pod Ready but /pg/status failing: event, requeue 10 s */
	RC_FO_WAIT_DELAY,        /* primary failing, within failoverDelay: requeue 1 s */
	RC_FO_MARK_PENDING,      /* set targetPrimary "pending", label old primary unhealthy */
	RC_FO_WAIT_WAL_RECEIVERS, /* a replica still streams from the old primary: requeue 1 s */
	RC_FO_PROMOTE,           /* set targetPrimary = target */
	RC_FO_WAIT_FENCE,        /* the old primary may still be writable: wait for its lease
				  * to expire (api/fence.h), requeue 1 s */
	RC_FO_CANCEL,            /* "pending", but the old primary answers as primary again
				  * before anyone was promoted: targetPrimary = currentPrimary */
	RC_FO_NO_QUORUM,         /* failoverQuorum: too few replicas answer to be sure the
				  * most advanced has every acknowledged commit: requeue 1 s */
	RC_FO_NO_SYNC,           /* dataDurability required: none of the replicas the old
				  * primary last named synchronous answers: requeue 1 s */
	RC_FO_WAIT_RESTART,      /* the primary restarts in place (its manager says so) or its
				  * container restarts (Pod not Ready, not terminating): no
				  * failover within RC_RESTART_GRACE_S / RC_CONTAINER_GRACE_S */
};
/* How long a primary that restarts postgres in place (crash recovery) may take
 * before it is failed over, and a primary whose container restarts (its Pod
 * not Ready, not terminating, its manager not answering yet); both counted
 * from currentPrimaryFailingSinceTimestamp, before failoverDelay's count. */
#define RC_RESTART_GRACE_S 10
#define RC_CONTAINER_GRACE_S 5
const char *rc_failover_action_str(enum rc_failover_action a);

struct rc_failover_input {
	const char *current_primary; /* status.currentPrimary, may be NULL */
	const char *target_primary;  /* status.targetPrimary, may be NULL */
	const struct rc_instance *v; /* sorted with rc_instances_sort */
	size_t n;
	int64_t failover_delay_s;    /* spec.failoverDelay */
	int64_t failing_since;       /* Unix s when the primary was first seen failing; 0 = not yet */
	int64_t pending_since_ms;    /* Unix ms when targetPrimary became "pending"
				      * (targetPrimaryTimestamp); 0 = unknown */
	int64_t fence_wait_ms;       /* API_FENCE_MS + API_FENCE_MARGIN_MS */
	int64_t quorum;              /* failoverQuorum: replicas that must answer (R + W > N,
				      * W = synchronous number + 1: R >= N - number); 0 = off */
	/* dataDurability required: only these may be promoted (the replicas the old
	 * primary last reported sync or quorum); NULL = any (not required, or not
	 * known since this operator started) */
	char *const *sync_only;
	size_t n_sync_only;
	int64_t now;    /* Unix s: failoverDelay and the restart graces */
	int64_t now_ms; /* Unix ms: the fence wait */
};
struct rc_failover_decision {
	enum rc_failover_action action;
	const char *target; /* borrowed from input v[]: PROMOTE's new primary */
	bool start_failing_clock; /* set status.currentPrimaryFailingSinceTimestamp = now */
};
/* CNPG reconcileTargetPrimaryForNonReplicaCluster (runtime.md §4.2), with
 * detection that does not trust the kubelet alone and fencing
 * (docs/internals/failover.md): a primary whose Pod is Ready but whose
 * /pg/status does not answer is failing only when enough replicas answer
 * with their WAL receiver down (api_fence_peers_lost); a promotion waits
 * fence_wait_s after "pending" unless the old primary is known not to be
 * writable (answers as a replica, or its Pod is gone). */
void rc_failover_decide(const struct rc_failover_input *in, struct rc_failover_decision *ret);
/* Whether a status patch that started the fence clock (wrote "pending" with
 * the new targetPrimaryTimestamp `since`) and returned at now_ms (Unix ms)
 * must be stamped again: it returned more than API_FENCE_STAMP_MS after the
 * stamp, or the stamp does not parse (docs/internals/failover.md). */
bool rc_fence_stamp_late(const char *since, int64_t now_ms);
/* RC_FO_WAIT_FENCE's requeue: 1 s, or RC_FENCE_EARLY_MS before the fence wait
 * ends if that is sooner (at least 1 ms): the reconcile asks the instances
 * first (about that long) and then sleeps what is left of the wait
 * (RC_FENCE_SLEEP_MS at most), so the promotion follows the end of the wait
 * closely. in as given to rc_failover_decide. */
#define RC_FENCE_EARLY_MS 200
#define RC_FENCE_SLEEP_MS 300
long rc_failover_fence_requeue_ms(const struct rc_failover_input *in);
/* The fence clock of a "pending" this process wrote (stamp_ms, Unix ms): the
 * stamp, or returned_ms - API_FENCE_STAMP_MS when the patch returned later
 * than API_FENCE_STAMP_MS after it (0: not known). The patch was applied
 * before it returned, so this holds whether or not the re-stamp was written. */
int64_t rc_fence_clock_ms(int64_t stamp_ms, int64_t returned_ms);

/* The status fields the reconciler owns. All strings and arrays owned. */
/* Condition ContinuousArchiving, as CloudNativePG sets it. */
enum rc_archiving {
	RC_ARCH_KEEP,    /* the primary did not answer: the condition read back stays */
	RC_ARCH_NONE,    /* the Cluster archives nowhere: no condition */
	RC_ARCH_OK,      /* True, ContinuousArchivingSuccess */
	RC_ARCH_FAILING, /* False, ContinuousArchivingFailing, the message says why */
};
/* From the primary's /pg/status (borrowed, NULL = it did not answer) and
 * whether the Cluster has an object store: failing while its archiveError is
 * set (the store's own error: 403, no such bucket, TLS; or why the archive is
 * not configured) or its last failed WAL is newer than its last archived one;
 * working once a WAL was archived after the last failure; KEEP before the
 * first archive or failure. *ret_msg owned (NULL for KEEP/NONE). */
enum rc_archiving rc_archiving_decide(json_object *primary_doc, bool configured, char **ret_msg);

/* Condition LastBackupSucceeded, as CloudNativePG sets it. */
enum rc_backup_cond {
	RC_BACKUP_COND_KEEP,   /* no finished Backup seen: the condition read back stays */
	RC_BACKUP_COND_OK,     /* True, LastBackupSucceeded */
	RC_BACKUP_COND_FAILED, /* False, LastBackupFailed, the message says which and why */
};

/* What a reconcile step wants of a condition it owns. */
enum rc_cond_want {
	RC_COND_KEEP,  /* the condition read back stays as it is */
	RC_COND_NONE,  /* removed */
	RC_COND_TRUE,  /* status True, with a reason and a message */
	RC_COND_FALSE, /* status False, with a reason and a message */
};

struct rc_status {
	char *phase;
	char *phase_reason;
	int64_t instances, ready_instances;
	char **instance_names; size_t n_instance_names;
	char *current_primary, *target_primary;
	int64_t latest_generated_node, timeline_id;
	char **healthy; size_t n_healthy;
	char **failed; size_t n_failed;
	char **cert_names; char **cert_expirations; size_t n_certs; /* RFC 3339 */
	char *failing_since; /* currentPrimaryFailingSinceTimestamp, RFC 3339, or NULL */
	char *target_since;  /* targetPrimaryTimestamp, RFC 3339, or NULL (only set) */
	char *selector;      /* label selector of the instance pods (scale subresource) */
	/* instancesReportedState: what each reporting instance said, by pod name */
	char **reported_names; bool *reported_primary; int64_t *reported_tli; char **reported_ip;
	size_t n_reported;
	bool reported_known; /* this reconcile asked the instances: rewrite the map
			      * (entries of instances that stopped reporting removed) */
	bool ready;          /* condition Ready */
	/* condition PendingRestart: written only when pending_known (some instance
	 * answered /pg/status); otherwise the condition read back is kept. */
	bool pending_known;
	char **pending_restart; size_t n_pending_restart; /* instances needing a restart */
	/* status.sync and status.maxLag (the CRD's Sync and Max Lag columns), the
	 * live API's SYNC and MAX LAG text (reconciler/replication.h) from this
	 * reconcile's /pg/status answers; NULL = not computed (kept as read).
	 * An empty max_lag removes the field. */
	char *sync, *max_lag;
	/* status.synchronousStandbys: the replicas the primary last reported sync or
	 * quorum (the last non-empty report), which a dataDurability: required failover
	 * may promote; kept in the Cluster so that it survives an operator restart or a
	 * leader change. Always written as read when none is known. */
	char **sync_standbys; size_t n_sync_standbys;
	/* condition ContinuousArchiving (rc_archiving_decide): RC_ARCH_KEEP keeps
	 * the one read back, RC_ARCH_NONE removes it (no object store), else
	 * True/False with archiving_msg */
	enum rc_archiving archiving;
	char *archiving_msg;
	/* from the Cluster's finished Backups (reconciler/backup.c): RFC 3339
	 * times, NULL = keep what was read; condition LastBackupSucceeded */
	char *last_successful_backup, *last_failed_backup;
	char *first_recoverability_point; /* the primary's backupCatalog; NULL = keep */
	/* status.tablespacesStatus (reconciler/tablespaces.c; owned): the
	 * primary's report; NULL = keep what was read */
	json_object *tablespaces_status;
	enum rc_backup_cond backup_cond;
	char *backup_msg;
	/* condition cnpg.io/hibernation (reconciler/hibernation.c): KEEP keeps the
	 * one read back, NONE removes it, TRUE/FALSE write it with hib_reason and
	 * hib_msg (owned) */
	enum rc_cond_want hibernation;
	char *hib_reason, *hib_msg;
};
void rc_status_done(struct rc_status *s); /* frees contents; accepts NULL */
void rc_strv_push(char ***v, size_t *n, const char *s); /* appends a copy */
void rc_strv_free(char ***v, size_t *n);                 /* frees, leaves it empty */
/* An owned list for _cleanup_(rc_strv_freep). */
struct rc_strv {
	char **v;
	size_t n;
};
static inline void rc_strv_freep(struct rc_strv *s)
{
	rc_strv_free(&s->v, &s->n);
}
/* Appends one instancesReportedState entry (strings copied; ip may be NULL). */
void rc_status_add_reported(struct rc_status *s, const char *pod, bool primary, int64_t tli,
			    const char *ip);
/* Empties instancesReportedState. */
void rc_status_clear_reported(struct rc_status *s);
/* Reads the owned fields back from a Cluster's status object (borrowed, may
 * be NULL). Wrongly typed fields are ignored. */
void rc_status_from_json(json_object *status, struct rc_status *ret);
/* The PendingRestart condition's message for s->pending_restart (owned), e.g.
 * "instances with parameters that need a restart: a, b"; NULL when none. */
char *rc_status_pending_message(const struct rc_status *s);

/* Why a Pod (borrowed) cannot start because of its image: the first
 * container, init containers first, waiting with reason ErrImagePull,
 * ImagePullBackOff, ErrImageNeverPull or InvalidImageName, as
 * "pod <name>: <reason>: <message>" (owned, message capped at 512 bytes), or
 * NULL when there is none. */
char *rc_pod_image_problem(json_object *pod);

/* A JSON merge patch body for the status subresource carrying only the
 * fields of `want` that differ from `cur_status` (borrowed, may be NULL),
 * plus metadata.resourceVersion = rv (NULL = none) as a precondition; the
 * Ready and PendingRestart conditions keep their lastTransitionTime when their
 * status is unchanged and other condition types are kept. Returns 1 and *ret_patch (owned text)
 * when something changed, 0 when nothing did (*ret_patch untouched). */
OP_MUST_CHECK
int rc_status_patch(json_object *cur_status, const struct rc_status *want, const char *rv,
		    int64_t now, char **ret_patch, struct op_err *err);

#endif
