/* instance/lease.c - the primary's lease bookkeeping (lease.h). */
#include <stdio.h>
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

static const struct inst_lease_peer *find(const struct inst_lease *l, const char *app)
{
	for (size_t i = 0; i < l->n; i++)
		if (strncmp(l->peers[i].app, app, sizeof(l->peers[i].app) - 1) == 0)
			return &l->peers[i];
	return NULL;
}

unsigned inst_lease_observe(struct inst_lease *l, const struct inst_lease_row *rows, size_t n,
			    int64_t now)
{
	struct inst_lease_peer next[INST_LEASE_MAX_PEERS];
	size_t k = 0;
	unsigned heard = 0;
	for (size_t i = 0; i < n && k < INST_LEASE_MAX_PEERS; i++) {
		if (!rows[i].app)
			continue;
		struct inst_lease_peer *p = &next[k++];
		memset(p, 0, sizeof(*p));
		snprintf(p->app, sizeof(p->app), "%s", rows[i].app);
		snprintf(p->reply, sizeof(p->reply), "%s", rows[i].reply ? rows[i].reply : "");
		const struct inst_lease_peer *old = find(l, rows[i].app);
		if (old && strcmp(old->reply, p->reply) != 0)
			p->heard = l->observed; /* it arrived after that query read the old one */
		else if (old)
			p->heard = old->heard;
		if (p->heard && now - p->heard <= API_FENCE_MS)
			heard++;
	}
	memcpy(l->peers, next, k * sizeof(next[0]));
	l->n = k;
	l->observed = now;
	return heard;
}

int64_t inst_lease_peers_proof(const struct inst_lease *l, unsigned need)
{
	int64_t best[INST_LEASE_MAX_PEERS]; /* heard times, most recent first */
	size_t k = 0;
	if (need == 0 || need > INST_LEASE_MAX_PEERS)
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		int64_t h = l->peers[i].heard;
		if (!h)
			continue;
		size_t j = k++;
		for (; j > 0 && best[j - 1] < h; j--)
			best[j] = best[j - 1];
		best[j] = h;
	}
	return k >= need ? best[need - 1] : 0;
}

void inst_lease_prove(struct inst_lease *l, int64_t at)
{
	if (at > l->proven)
		l->proven = at;
}

bool inst_lease_want_api(const struct inst_lease *l, int64_t now)
{
	return now - l->api_try >= 1000;
}

bool inst_lease_read_fits(const struct inst_lease *l, int64_t now)
{
	return !l->proven || now + INST_LEASE_READ_TIMEOUT_MS <= l->proven + API_FENCE_MS;
}

bool inst_lease_expired(const struct inst_lease *l, int64_t now)
{
	return !l->proven || now - l->proven > API_FENCE_MS;
}
