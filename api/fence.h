/* api/fence.h - the fencing contract between the instance manager and the
 * reconciler (docs/internals/failover.md has the timing argument).
 *
 * A primary of a Cluster with another instance may accept writes only while
 * it proves, at least every API_FENCE_MS, that it is still the primary:
 * enough of its replicas (instance/lease.c) replied on their replication
 * connection, or a fresh read of the Cluster through the API server still names
 * it targetPrimary. It checks every API_FENCE_CHECK_MS; unproven, it shuts
 * postgres down fast (fenced). The reconciler promotes a replica in its place
 * only after targetPrimary has been "pending" for API_FENCE_MS +
 * API_FENCE_MARGIN_MS (or the old primary is known to be down), so the two are
 * never writable at once. All times in milliseconds.
 */
#ifndef PGOP_API_FENCE_H
#define PGOP_API_FENCE_H

#define API_FENCE_MS 2000 /* the lease: a primary unproven this long stops */
/* The lease of an instance manager that does not report its own (`leaseMs` in
 * /pg/status, older than 2026-12-05): the reconciler waits for that one. */
#define API_FENCE_LEGACY_MS 3000
/* The primary's instance manager checks its lease this often (a kept
 * connection to its postgres), so it fences within this long of the expiry. */
#define API_FENCE_CHECK_MS 250
/* From the moment the reconciler stamps targetPrimaryTimestamp for "pending"
 * to the moment its status patch has returned, at most; a slower patch is
 * stamped again with the time it returned (reconciler/reconcile.c). */
#define API_FENCE_STAMP_MS 250
/* What the reconciler waits beyond API_FENCE_MS: the expiry check
 * (API_FENCE_CHECK_MS), the stamp's lag behind the write of "pending"
 * (API_FENCE_STAMP_MS), and 500 ms for the rest (the fast shutdown ending the
 * sessions, a late check on a loaded node, the timestamp's microsecond and the
 * reconciler clock's millisecond rounding). A peer proof is dated before the
 * reply it counts (instance/lease.h): no granularity of its own. */
#define API_FENCE_MARGIN_MS 1000

_Static_assert(API_FENCE_MARGIN_MS >= API_FENCE_CHECK_MS + API_FENCE_STAMP_MS + 500,
	       "the margin covers the expiry check, the stamp's lag and 500 ms of slack");

/* status.targetPrimary while a failover waits for the old primary's fence. */
#define API_PENDING_FAILOVER "pending"

/* A replica that cut its WAL receiver off an unreachable primary on the
 * operator's request (POST /pg/cut, instance/cut.c) keeps it cut at least this
 * long after its answer, and then only undoes it after a read of the Cluster
 * that does not say "pending"; the operator writes "pending" only when its
 * patch returned within the hold the replica reported (reconciler/cut.c). */
#define API_FENCE_CUT_HOLD_MS 5000

/* Cluster annotation naming the primary Pod the reconciler restarts in place
 * (primaryUpdateMethod: restart): that primary's SIGTERM is not a handover. */
#define API_ANN_IN_PLACE_RESTART "pgop.io/inPlaceRestart"

/* Replicas a primary of n instances needs to have heard from (within
 * API_FENCE_MS) to be proven by its peers: floor(n/2), so that with itself
 * they are a majority. 0 for n <= 1 (nothing to fence against). */
static inline unsigned api_fence_peers_needed(unsigned n)
{
	return n / 2;
}

/* Whether the replicas known to have lost the primary (answering, WAL
 * receiver down) rule out that the primary still has api_fence_peers_needed(n)
 * of them: lost >= ceil(n/2). */
static inline int api_fence_peers_lost(unsigned n, unsigned lost)
{
	return n > 1 && 2 * lost >= n;
}

#endif
