/* instance/lease.c - the primary's lease bookkeeping (lease.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "api/fence.h"
#include "instance/lease.h"

int64_t inst_lease_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const struct inst_lease_mark *mark_at(const struct inst_lease *l, size_t i)
{
	return &l->m[(l->head + i) % INST_LEASE_MARKS];
}

int inst_lease_mark(struct inst_lease *l, int64_t at, uint64_t lsn)
{
	if (l->n_marks) {
		const struct inst_lease_mark *last = mark_at(l, l->n_marks - 1);
		if (at < last->at || lsn < last->lsn)
			return -EINVAL;
	}
	if (l->n_marks == INST_LEASE_MARKS) { /* the oldest goes */
		l->head = (l->head + 1) % INST_LEASE_MARKS;
		l->n_marks--;
	}
	l->m[(l->head + l->n_marks) % INST_LEASE_MARKS] = (struct inst_lease_mark){ at, lsn };
	l->n_marks++;
	return 0;
}

int64_t inst_lease_proof(const struct inst_lease *l, uint64_t written)
{
	for (size_t i = l->n_marks; i-- > 0;) { /* newest first: at and lsn only grow */
		const struct inst_lease_mark *m = mark_at(l, i);
		if (m->lsn <= written)
			return m->at;
	}
	return 0;
}

int64_t inst_lease_peers_proof(const struct inst_lease *l, const uint64_t *written, size_t n,
			       unsigned need)
{
	int64_t best[INST_LEASE_MAX_PEERS]; /* proofs, most recent first */
	size_t k = 0;
	if (need == 0 || need > INST_LEASE_MAX_PEERS)
		return 0;
	for (size_t i = 0; i < n && i < INST_LEASE_MAX_PEERS; i++) {
		int64_t p = inst_lease_proof(l, written[i]);
		if (!p)
			continue;
		size_t j = k++;
		for (; j > 0 && best[j - 1] < p; j--)
			best[j] = best[j - 1];
		best[j] = p;
	}
	return k >= need ? best[need - 1] : 0;
}

unsigned inst_lease_heard(const struct inst_lease *l, const uint64_t *written, size_t n,
			  int64_t now)
{
	unsigned heard = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t p = inst_lease_proof(l, written[i]);
		heard += p && now - p <= API_FENCE_MS;
	}
	return heard;
}

void inst_lease_prove(struct inst_lease *l, int64_t at)
{
	if (at > l->proven)
		l->proven = at;
}

bool inst_lease_want_api(const struct inst_lease *l, int64_t now)
{
	return now - l->api_try >= INST_LEASE_API_EVERY_MS;
}

bool inst_lease_stale(const struct inst_lease *l, int64_t now)
{
	return !l->proven || now - l->proven >= INST_LEASE_API_EVERY_MS;
}

bool inst_lease_read_fits(const struct inst_lease *l, int64_t now)
{
	return !l->proven || now + INST_LEASE_READ_TIMEOUT_MS <= l->proven + API_FENCE_MS;
}

bool inst_lease_expired(const struct inst_lease *l, int64_t now)
{
	return !l->proven || now - l->proven > API_FENCE_MS;
}
