/* api/fence.h - the fencing contract between the instance manager and the
 * reconciler (docs/internals/failover.md has the timing argument).
 *
 * A primary of a Cluster with another instance may accept writes only while
 * it proves, at least every API_FENCE_S seconds, that it is still the primary:
 * enough of its replicas (instance/lease.c) replied on their replication
 * connection, or a fresh read of the Cluster through the API server still names
 * it targetPrimary. Otherwise it shuts postgres down fast (fenced). The
 * reconciler promotes a replica in its place only after targetPrimary has been
 * "pending" for API_FENCE_S + API_FENCE_MARGIN_S seconds (or the old primary
 * is known to be down), so the two are never writable at once.
 */
#ifndef PGOP_API_FENCE_H
#define PGOP_API_FENCE_H

#define API_FENCE_S 3        /* the lease: a primary unproven this long stops */
#define API_FENCE_MS (API_FENCE_S * 1000)
/* The primary's instance manager checks its lease this often (a kept
 * connection to its postgres), so it fences within this long of the expiry. */
#define API_FENCE_CHECK_MS 250
/* 1 s: the tick that notices a replica's last reply (the peer proof dates from
 * then), 1 s: the tick that acts on the expiry, 1 s: the status timestamps' and
 * the reconciler clock's 1 s granularity */
#define API_FENCE_MARGIN_S 3

/* Cluster annotation naming the primary Pod the reconciler restarts in place
 * (primaryUpdateMethod: restart): that primary's SIGTERM is not a handover. */
#define API_ANN_IN_PLACE_RESTART "pgop.io/inPlaceRestart"

/* Replicas a primary of n instances needs to have heard from (within
 * API_FENCE_S) to be proven by its peers: floor(n/2), so that with itself
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
