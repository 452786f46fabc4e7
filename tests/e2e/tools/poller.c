/* tests/e2e/tools/poller.c - `pgop-writer poll`: asks every instance
 * `select pg_is_in_recovery()` every interval, one thread and one connection per instance,
 * and writes to the output file:
 *   EPOCH_MS STATE name=P|R|D ...       whenever an instance's answer changes
 *                                       (P primary, R in recovery, D no answer)
 *   EPOCH_MS TWO_PRIMARIES a b overlap_ms=N   while two instances are provably primaries at
 *                                       the same time
 *   END samples=N two_primaries_max_ms=N      at exit
 * "Provably": an instance answered P at times first..last (no other answer between), so it
 * was a primary from the receipt of the first P answer to the sending of the last query
 * answered P; two such intervals that overlap are two writable primaries at once. The
 * targets file ("NAME HOST" per line) is read again every interval, so a pod that comes back
 * with a new IP is followed. */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/tools/tools.h"

#define MAX_TARGETS 16

struct target {
	char name[64], host[64]; /* host: written by the main thread */
	char state;              /* 'P', 'R', 'D'; written by the target's thread */
	int64_t run_first, run_last; /* current P run: first answer received, last query sent */
	int64_t samples;
	pthread_t thread;
};

struct poller {
	pthread_mutex_t mu;
	const char *conninfo;
	int interval_ms;
	int n;
	struct target t[MAX_TARGETS];
};

struct thread_arg {
	struct poller *p;
	struct target *t;
};

static void *poll_one(void *arg)
{
	struct thread_arg *a = arg;
	struct poller *p = a->p;
	struct target *t = a->t;
	PGconn *c = NULL;
	char host[64] = "", err[512];
	int64_t next = pw_mono_ms();

	while (!pw_stop) {
		PGresult *r = NULL;
		int64_t sent, got;
		char st = 'D';

		pw_sleep_until(next);
		next += p->interval_ms;
		if (next < pw_mono_ms())
			next = pw_mono_ms();
		pthread_mutex_lock(&p->mu);
		if (strcmp(host, t->host) != 0) {
			snprintf(host, sizeof(host), "%s", t->host);
			PQfinish(c);
			c = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!c)
			c = pw_connect(p->conninfo, host, err, sizeof(err));
		sent = pw_now_ms();
		if (c && pw_exec(c, "select pg_is_in_recovery()", 0, NULL, 1000, &r, err,
				 sizeof(err)) == PW_OK)
			st = PQgetvalue(r, 0, 0)[0] == 'f' ? 'P' : 'R';
		got = pw_now_ms();
		PQclear(r);
		if (st == 'D') {
			PQfinish(c);
			c = NULL;
		}
		pthread_mutex_lock(&p->mu);
		if (st == 'P' && t->state != 'P')
			t->run_first = got;
		if (st == 'P')
			t->run_last = sent;
		t->state = st;
		t->samples++;
		pthread_mutex_unlock(&p->mu);
	}
	PQfinish(c);
	free(a);
	return NULL;
}

/* Reads "NAME HOST" lines; new names get a thread. Called with p->mu held. */
static void load_targets(struct poller *p, const char *path)
{
	FILE *f = fopen(path, "r");
	char name[64], host[64];

	if (!f)
		return;
	while (fscanf(f, "%63s %63s", name, host) == 2) {
		int i;

		for (i = 0; i < p->n && strcmp(p->t[i].name, name) != 0; i++)
			;
		if (i == p->n) {
			struct thread_arg *a;

			if (p->n == MAX_TARGETS)
				continue;
			p->n++;
			snprintf(p->t[i].name, sizeof(p->t[i].name), "%s", name);
			p->t[i].state = 'D';
			a = op_malloc(sizeof(*a));
			*a = (struct thread_arg){ p, &p->t[i] };
			snprintf(p->t[i].host, sizeof(p->t[i].host), "%s", host);
			if (pthread_create(&p->t[i].thread, NULL, poll_one, a) != 0) {
				free(a);
				p->n--;
				continue;
			}
		}
		snprintf(p->t[i].host, sizeof(p->t[i].host), "%s", host);
	}
	fclose(f);
}

/* One tick: state line on change, TWO_PRIMARIES lines. Called with p->mu held. */
static int64_t report(struct poller *p, FILE *out, char *last, int64_t max_overlap)
{
	char cur[MAX_TARGETS + 1];
	int64_t now = pw_now_ms();

	for (int i = 0; i < p->n; i++)
		cur[i] = p->t[i].state;
	cur[p->n] = '\0';
	if (strcmp(cur, last) != 0) {
		fprintf(out, "%" PRId64 " STATE", now);
		for (int i = 0; i < p->n; i++)
			fprintf(out, " %s=%c", p->t[i].name, cur[i]);
		fputc('\n', out);
		memcpy(last, cur, sizeof(cur));
	}
	for (int i = 0; i < p->n; i++) {
		for (int j = i + 1; j < p->n; j++) {
			struct target *a = &p->t[i], *b = &p->t[j];
			int64_t from, to;

			if (a->state != 'P' || b->state != 'P')
				continue;
			from = a->run_first > b->run_first ? a->run_first : b->run_first;
			to = a->run_last < b->run_last ? a->run_last : b->run_last;
			if (to <= from)
				continue;
			fprintf(out, "%" PRId64 " TWO_PRIMARIES %s %s overlap_ms=%" PRId64 "\n", now,
				a->name, b->name, to - from);
			if (to - from > max_overlap)
				max_overlap = to - from;
		}
	}
	fflush(out);
	return max_overlap;
}

int pw_poller_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "targets", required_argument, NULL, 't' },
		{ "out", required_argument, NULL, 'o' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "conninfo", required_argument, NULL, 'c' },
		{ 0 },
	};
	struct poller p = { .mu = PTHREAD_MUTEX_INITIALIZER, .interval_ms = 200 };
	const char *targets = NULL, *outp = NULL;
	char last[MAX_TARGETS + 1] = "";
	int64_t next, max_overlap = 0, samples = 0;
	FILE *out;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 't': targets = optarg; break;
		case 'o': outp = optarg; break;
		case 'i': p.interval_ms = atoi(optarg); break;
		case 'c': p.conninfo = optarg; break;
		default: return 2;
		}
	}
	if (!targets || !outp || p.interval_ms < 10) {
		fprintf(stderr, "usage: pgop-writer poll --targets F --out F [--interval-ms N] "
				"[--conninfo C]\n");
		return 2;
	}
	out = fopen(outp, "a");
	if (!out) {
		perror(outp);
		return 1;
	}
	next = pw_mono_ms();
	while (!pw_stop) {
		pthread_mutex_lock(&p.mu);
		load_targets(&p, targets);
		max_overlap = report(&p, out, last, max_overlap);
		pthread_mutex_unlock(&p.mu);
		next += p.interval_ms;
		pw_sleep_until(next);
	}
	for (int i = 0; i < p.n; i++) {
		pthread_join(p.t[i].thread, NULL);
		samples += p.t[i].samples;
	}
	fprintf(out, "END samples=%" PRId64 " two_primaries_max_ms=%" PRId64 "\n", samples,
		max_overlap);
	fsync(fileno(out));
	fclose(out);
	op_log_info("poller stopped");
	return 0;
}
