/* instance/lease.h - the primary's lease (api/fence.h): may this primary
 * still accept writes? Pure bookkeeping; the caller (instance/run.c) feeds
 * it what the replicas' replication connections say and the outcome of a
 * fresh read of the Cluster, and fences when it says so.
 *
 * Times are CLOCK_MONOTONIC milliseconds of this process (the replicas' clocks
 * are never compared with ours: a reply counts when its reply_time *changed*
 * since the previous observation, as seen on our clock). A reply that changed
 * is dated when the previous observation started, a moment before postgres
 * received it (it was not there yet): a proof through the peers is never later
 * than the replies it counts, however late the check that saw them. It dates
 * from the last of the needed replicas, not from the check that looked:
 * silent replicas stop renewing the lease at once.
 */
#ifndef PGOP_INSTANCE_LEASE_H
#define PGOP_INSTANCE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INST_LEASE_MAX_PEERS 64
/* The lease's read of the Cluster gives up after this long (the fast client,
 * instance/cluster.c inst_kube_open). */
#define INST_LEASE_READ_TIMEOUT_MS 1500

struct inst_lease_peer {
	char app[64];   /* application_name (the replica's pod name), truncated */
	char reply[64]; /* last reply_time seen, as text */
	int64_t heard;  /* when reply changed; 0 = never */
};

struct inst_lease {
	struct inst_lease_peer peers[INST_LEASE_MAX_PEERS];
	size_t n;
	int64_t observed; /* when the last observation's query started; 0 = never */
	int64_t proven;   /* last time the lease was proven; 0 = never */
	int64_t api_try;  /* last API read attempt */
	bool fenced;      /* postgres stopped because the lease expired */
};

/* One walsender row: application_name and reply_time (text, may be NULL). */
struct inst_lease_row {
	const char *app, *reply;
};

/* Records the walsenders of one observation (rows in any order; peers no
 * longer listed are forgotten), `now` read before the query that listed them,
 * and returns how many replicas were heard from within API_FENCE_MS of now. A
 * peer whose reply changed is heard at the previous observation's `now`; a
 * peer seen for the first time is not "heard" yet. */
unsigned inst_lease_observe(struct inst_lease *l, const struct inst_lease_row *rows, size_t n,
			    int64_t now);

/* When `need` replicas had all been heard: the need-th most recent `heard`;
 * 0 when fewer than `need` ever were (or need is 0). */
int64_t inst_lease_peers_proof(const struct inst_lease *l, unsigned need);

/* A proof at `at` (peers, or a read of the Cluster that started at `at` and
 * still names this pod targetPrimary). */
void inst_lease_prove(struct inst_lease *l, int64_t at);

/* Whether an API read should be attempted now (at most one a second). */
bool inst_lease_want_api(const struct inst_lease *l, int64_t now);

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
