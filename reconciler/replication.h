/* reconciler/replication.h - the replication summary of a Cluster from its
 * instances' /pg/status documents (pure): SYNC (`quorum 1/2`, `sync 1/2`,
 * `async`, `unknown`) and MAX LAG (`256 B / 1.5s`).
 *
 * One fact, one place: the live API (apiserver/, LiveCluster and
 * LiveInstance) and the reconciler's status writer (Cluster status.sync and
 * status.maxLag, the CRD's Sync and Max Lag printer columns) both compute
 * and format with these functions, so the two views never contradict each
 * other for the same snapshots. rc_repl_lag_text is the only formatter of
 * the lag text (the LiveCluster's Max Lag column is its status.maxLag).
 *
 * They are different snapshots, though: the Cluster's status is the
 * reconciler's last poll (every 5 s), the live API's at most 1 s old; a
 * primary with replicas writes WAL at every lease check (250 ms) and
 * replay_lag turns NULL between bursts, so MAX LAG moves ("0 B" / "0 B /
 * 0.0s") and the two texts are equal only once the status caught up
 * (tests/e2e/test_live_api.sh compares them until they are).
 */
#ifndef PGOP_RECONCILER_REPLICATION_H
#define PGOP_RECONCILER_REPLICATION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"

/* One instance: its pod name and last /pg/status (both borrowed). */
struct rc_repl_member {
	const char *pod;
	json_object *doc; /* NULL: never answered */
	bool reachable;   /* the last fetch answered (doc is current) */
};

/* A replay lag: bytes behind the primary's current LSN, and seconds
 * (pg_stat_replication.replay_lag, only while WAL flows). */
struct rc_repl_lag {
	bool has_bytes;
	int64_t bytes;
	bool has_seconds;
	double seconds;
};

/* "00:00:01.5" / "1 day 02:00:00" (PostgreSQL interval text) -> seconds;
 * -EINVAL otherwise. */
OP_MUST_CHECK int rc_interval_seconds(const char *s, double *ret);

/* The primary's pg_stat_replication row (replicationInfo entry) whose
 * applicationName is pod (borrowed from primary_doc), or NULL. */
json_object *rc_repl_row(json_object *primary_doc, const char *pod);

/* The replay lag of instance pod (doc, its /pg/status; NULL when it does
 * not answer: the replay position the primary's row for it reports) behind
 * the primary (primary_doc; both borrowed, may be NULL). A primary lags 0
 * bytes. */
void rc_repl_instance_lag(json_object *primary_doc, json_object *doc, const char *pod,
			  struct rc_repl_lag *ret);

struct rc_repl_summary {
	const struct rc_repl_member *primary; /* borrowed from the input, NULL: none answers */
	char sync[48];          /* "quorum N/M", "sync N/M", "async", "unknown" (no primary) */
	struct rc_repl_lag max; /* largest lag of the replicas (one that does not
				 * answer: as the primary last heard it, never its
				 * own stale answer); bytes 0 when the primary has
				 * no replica; nothing without a primary */
};

/* Summary of cluster (the Cluster object, borrowed: spec.postgresql.synchronous,
 * spec.minSyncReplicas) from its members v[0..n). The primary is the first
 * reachable member whose document says isPrimary; M in "N/M" counts the
 * primary's sync/quorum/potential standbys. */
void rc_repl_summarize(json_object *cluster, const struct rc_repl_member *v, size_t n,
		       struct rc_repl_summary *ret);

/* "256 B / 1.5s", "256 B" (no seconds) or "" (no bytes) into out. */
void rc_repl_lag_text(const struct rc_repl_lag *l, char *out, size_t len);

#endif
