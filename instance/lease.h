/* instance/lease.h - the primary's lease (api/fence.h): may this primary
 * still accept writes? Pure bookkeeping; the caller (instance/run.c) feeds
 * it its own marks, what the replicas' replication connections say and the
 * outcome of a fresh read of the Cluster, and fences when it says so.
 *
 * Times are CLOCK_MONOTONIC milliseconds of this process; the replicas' clocks
 * are never compared with ours. A proof through the peers is a round trip: at
 * each check the primary commits a transaction of its own (synchronous_commit
 * = local) and marks (at, lsn): `at` read before that commit, `lsn` its flush
 * position after it. A replica whose write_lsn reached a mark's lsn received
 * WAL written after `at`: it proves the lease from `at`, however late its
 * reply arrives (a reply held in a TCP queue by a partition only acknowledges
 * WAL the replica had before it was cut off, docs/internals/failover.md). The
 * proof dates from the last of the needed replicas, not from the check that
 * looked: silent replicas stop renewing the lease at once.
 */
#ifndef PGOP_INSTANCE_LEASE_H
#define PGOP_INSTANCE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"

#define INST_LEASE_MAX_PEERS 64
/* The lease's read of the Cluster gives up after this long (the fast client,
 * instance/cluster.c inst_kube_open). */
#define INST_LEASE_READ_TIMEOUT_MS 1000
#define INST_LEASE_MARKS 32 /* 8 s of 250 ms checks: older than API_FENCE_MS anyway */

struct inst_lease_mark {
	int64_t at;   /* monotonic ms before the commit */
	uint64_t lsn; /* the flush LSN after it */
};

struct inst_lease {
	struct inst_lease_mark m[INST_LEASE_MARKS]; /* ring, oldest at head */
	size_t n_marks, head;
	int64_t proven;  /* last time the lease was proven; 0 = never */
	int64_t api_try; /* last API read attempt */
	bool fenced;     /* postgres stopped because the lease expired */
};

/* Records a mark; one whose at or lsn goes backwards is ignored (-EINVAL). */
OP_MUST_CHECK int inst_lease_mark(struct inst_lease *l, int64_t at, uint64_t lsn);

/* When a replica that received WAL up to `written` (its write_lsn) proved the
 * lease: the latest mark's `at` with lsn <= written; 0 when none (older than
 * every mark). */
int64_t inst_lease_proof(const struct inst_lease *l, uint64_t written);

/* The need-th most recent of the replicas' proofs (written[0..n), their
 * write_lsn); 0 when fewer than need prove anything, or need is 0. */
int64_t inst_lease_peers_proof(const struct inst_lease *l, const uint64_t *written, size_t n,
			       unsigned need);

/* How many of the replicas' proofs are within API_FENCE_MS of now. */
unsigned inst_lease_heard(const struct inst_lease *l, const uint64_t *written, size_t n,
			  int64_t now);

/* A proof at `at` (peers, or a read of the Cluster that started at `at` and
 * still names this pod targetPrimary). */
void inst_lease_prove(struct inst_lease *l, int64_t at);

/* Whether an API read should be attempted now (at most one every
 * INST_LEASE_API_EVERY_MS: with a 1 s read and a 2 s lease, a read every
 * 500 ms renews it in time when no replica does). */
#define INST_LEASE_API_EVERY_MS 500
bool inst_lease_want_api(const struct inst_lease *l, int64_t now);

/* Whether the lease wants an API read: never proven, or its last proof is
 * INST_LEASE_API_EVERY_MS old (the replicas prove it every check, 250 ms,
 * while they stream). Not "fewer replicas heard than needed": a replica
 * counts as heard for API_FENCE_MS after its last proof, when a read no
 * longer fits (inst_lease_read_fits) and the lease would expire unread. */
bool inst_lease_stale(const struct inst_lease *l, int64_t now);

/* Whether a read of the Cluster started now ends (or times out) before the
 * lease expires: a read that could outlast it is not started, so a primary
 * never keeps accepting writes past its lease while it waits for one. */
bool inst_lease_read_fits(const struct inst_lease *l, int64_t now);

/* True when the lease has expired: never proven, or last proven more than
 * API_FENCE_MS ago. */
bool inst_lease_expired(const struct inst_lease *l, int64_t now);

/* CLOCK_MONOTONIC milliseconds. */
int64_t inst_lease_now(void);

#endif
