/* tests/unit/test_reconciler_contact.c - reconciler/contact.c: which instances
 * a reconcile asks (TCP probe first for the ones not known to answer, none at
 * all for a Cluster the prober watches), the prober's rounds with a scripted
 * probe (what is due, back-off, a Cluster queued when an instance connects)
 * and its delays. No network: the probe function is the test's. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/fence.h"
#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "reconciler/queue.h"
#include "support/alloc.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

static struct rc_controller *ctl_new(void)
{
	struct rc_controller *c = op_calloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->q = rc_queue_new(NULL);
	return c;
}

static void ctl_free(struct rc_controller *c)
{
	for (size_t i = 0; i < c->n_states; i++)
		rc_state_done(&c->states[i]);
	free(c->states);
	rc_queue_free(c->q);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static struct rc_instance inst(const char *name, const char *ip, bool answered)
{
	return (struct rc_instance){ .name = op_strdup(name), .ip = ip ? op_strdup(ip) : NULL,
				     .has_status = answered };
}

static void done(struct rc_instance *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rc_instance_done(&v[i]);
}

/* The scripted probe: records what it was asked, connects the hosts in `up`. */
static const char *up_host;
static size_t probe_calls, probe_hosts;
static long probe_timeout;
static int fake_probe(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
		      int *ret_errno)
{
	assert_int_equal(port, RC_STATUS_PORT);
	probe_calls++;
	probe_hosts += n;
	probe_timeout = timeout_ms;
	int up = 0;
	for (size_t i = 0; i < n; i++) {
		ret_errno[i] = up_host && strcmp(hosts[i], up_host) == 0 ? 0 : ETIMEDOUT;
		up += ret_errno[i] == 0;
	}
	return up;
}

/* rc_answer_fn: the watch's probe; the connect timeout is recorded, the
 * hello and the answer timeout checked. */
static int fake_answer(const char *const *hosts, size_t n, unsigned port, long connect_ms,
		       const void *hello, size_t hello_len, long answer_ms, int *ret_errno)
{
	(void)hello;
	(void)hello_len;
	assert_int_equal(answer_ms, RC_WATCH_ANSWER_MS);
	return fake_probe(hosts, n, port, connect_ms, ret_errno);
}

static void reset_probe(const char *up)
{
	up_host = up;
	probe_calls = probe_hosts = 0;
	probe_timeout = 0;
}

static void test_delays(void **state)
{
	(void)state;
	static const struct { unsigned streak; long ms; } rows[] = {
		{ 0, 1000 }, { 1, 2000 }, { 2, 4000 }, { 3, 8000 }, { 4, 10000 }, { 60, 10000 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(rc_probe_delay_ms(rows[i].streak), rows[i].ms);
}

/* Never asked, answered, silent: who gets the TCP probe first. */
static void test_mark_known_and_unknown(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	struct rc_instance v[3] = { inst("c-1", "10.0.0.1", true), inst("c-2", "10.0.0.2", false),
				    inst("c-3", NULL, false) };
	/* nothing known yet: every instance with an IP starts with a TCP probe */
	assert_false(rc_mark_silent(c, "ns/c", v, 3));
	assert_true(v[0].silent);
	assert_true(v[1].silent);
	assert_false(v[2].silent);
	rc_note_unreachable(c, "ns/c", v, 3, 100);
	assert_false(rc_mark_silent(c, "ns/c", v, 3));
	assert_false(v[0].silent); /* answered at this IP */
	assert_true(v[1].silent);  /* did not */
	/* the same Pod name at another IP is a new contact */
	free(v[0].ip);
	v[0].ip = op_strdup("10.0.0.9");
	assert_false(rc_mark_silent(c, "ns/c", v, 3));
	assert_true(v[0].silent);
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, "ns/c");
	assert_non_null(s);
	assert_int_equal(s->unreachable, 1);
	assert_false(s->probe_bg); /* one instance answers: the reconciles keep asking */
	pthread_mutex_unlock(&c->mu);
	done(v, 3);
	ctl_free(c);
}

/* No instance answers: the reconciles stop asking, the prober takes over. */
static void test_all_silent_goes_to_prober(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	struct rc_instance v[2] = { inst("c-1", "10.0.0.1", false), inst("c-2", "10.0.0.2", false) };
	rc_note_unreachable(c, "ns/c", v, 2, 1000);
	assert_true(rc_mark_silent(c, "ns/c", v, 2));
	for (size_t i = 0; i < 2; i++) {
		assert_false(v[i].has_status);
		assert_non_null(strstr(v[i].error, "TCP-probed in the background"));
	}
	/* a skipped reconcile notes the same: the prober's schedule is kept */
	rc_note_unreachable(c, "ns/c", v, 2, 1900);
	/* a terminating instance (it is not silent) is asked again */
	v[1].pod_terminating = true;
	assert_false(rc_mark_silent(c, "ns/c", v, 2));
	v[1].pod_terminating = false;

	reset_probe(NULL);
	assert_int_equal(rc_probe_round(c, 1999, fake_probe), 0);
	assert_int_equal(probe_calls, 0); /* not due before 1000 + 1 s */
	assert_int_equal(rc_probe_round(c, 2000, fake_probe), 0);
	assert_int_equal(probe_calls, 1);
	assert_int_equal(probe_hosts, 2);
	assert_int_equal(probe_timeout, RC_PROBE_TIMEOUT_MS);
	assert_int_equal(rc_probe_round(c, 3999, fake_probe), 0);
	assert_int_equal(probe_calls, 1); /* backed off: next at 2000 + 2 s */
	assert_int_equal(rc_queue_len(c->q), 0);

	reset_probe("10.0.0.2");
	assert_int_equal(rc_probe_round(c, 4000, fake_probe), 1);
	assert_int_equal(rc_queue_len(c->q), 1);
	char *key = NULL;
	assert_int_equal(rc_queue_get(c->q, 0, &key, NULL), 0);
	assert_string_equal(key, "ns/c");
	rc_queue_done(c->q, key);
	free(key);
	/* the next reconcile asks again: c-2 connected (TCP probe then fetch) */
	assert_false(rc_mark_silent(c, "ns/c", v, 2));
	assert_true(v[1].silent);
	reset_probe("10.0.0.2");
	assert_int_equal(rc_probe_round(c, 100000, fake_probe), 0);
	assert_int_equal(probe_calls, 0); /* no longer the prober's */
	done(v, 2);
	ctl_free(c);
}

/* Back-off grows while the instances connect but never answer (a hung
 * manager), and an answer resets it. */
static void test_streak_and_forget(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	struct rc_instance v[1] = { inst("c-1", "10.0.0.1", false) };
	int64_t now = 0;
	rc_note_unreachable(c, "ns/c", v, 1, now);
	reset_probe("10.0.0.1");
	for (unsigned round = 1; round <= 3; round++) {
		now += 20000;
		assert_int_equal(rc_probe_round(c, now, fake_probe), 1);
		/* the reconcile's fetch fails again */
		rc_note_unreachable(c, "ns/c", v, 1, now);
		pthread_mutex_lock(&c->mu);
		const struct rc_cluster_state *s = rc_state_find(c, "ns/c");
		assert_int_equal(s->probe_streak, round);
		assert_int_equal(s->probe_next_ms, now + rc_probe_delay_ms(round));
		pthread_mutex_unlock(&c->mu);
	}
	v[0].has_status = true;
	rc_note_unreachable(c, "ns/c", v, 1, now);
	pthread_mutex_lock(&c->mu);
	assert_int_equal(rc_state_find(c, "ns/c")->probe_streak, 0);
	assert_false(rc_state_find(c, "ns/c")->probe_bg);
	pthread_mutex_unlock(&c->mu);
	/* a Cluster that is gone is forgotten */
	v[0].has_status = false;
	rc_note_unreachable(c, "ns/c", v, 1, now);
	rc_note_unreachable(c, "ns/c", NULL, 0, now);
	reset_probe(NULL);
	assert_int_equal(rc_probe_round(c, now + 60000, fake_probe), 0);
	assert_int_equal(probe_calls, 0);
	done(v, 1);
	ctl_free(c);
}

/* A Cluster deleted drops its state (it used to stay for the life of the
 * process: ~200 B and its client certificate per Cluster ever created); the
 * others keep theirs, and a drop of an unknown key changes nothing. */
static void test_state_drop(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	const char *keys[] = { "ns/a", "ns/b", "ns/c" };
	struct rc_instance v[1] = { inst("x-1", "10.0.0.1", false) };
	for (size_t i = 0; i < 3; i++)
		rc_note_unreachable(c, keys[i], v, 1, 1000 * (int64_t)(i + 1));
	assert_int_equal(c->n_states, 3);
	rc_state_drop(c, "ns/a");
	rc_state_drop(c, "ns/zz");
	assert_int_equal(c->n_states, 2);
	pthread_mutex_lock(&c->mu);
	assert_null(rc_state_find(c, "ns/a"));
	for (size_t i = 1; i < 3; i++) {
		const struct rc_cluster_state *s = rc_state_find(c, keys[i]);
		assert_non_null(s);
		assert_string_equal(s->key, keys[i]);
		assert_int_equal(s->n_silent, 1);
		assert_string_equal(s->silent[0], "x-1@10.0.0.1");
		assert_int_equal(s->probe_next_ms, 1000 * (int64_t)(i + 1) + rc_probe_delay_ms(0));
	}
	pthread_mutex_unlock(&c->mu);
	rc_state_drop(c, "ns/c");
	rc_state_drop(c, "ns/b");
	assert_int_equal(c->n_states, 0);
	done(v, 1);
	ctl_free(c);
}

/* The states are kept sorted and found by binary search (each reconcile looks
 * its Cluster's up several times, under the controller's mutex, among 1,000):
 * keys made in any order are all found with their own state, drops keep the
 * rest findable, an unknown key is not found. */
static void test_state_many(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	enum { N = 200 };
	char key[N][16];
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < N; i++) {
		int k = (i * 7919) % N; /* a permutation of 0..N-1 (7919 is prime) */
		snprintf(key[k], sizeof(key[k]), "ns/c%03d", k);
		struct rc_cluster_state *s = rc_state_get(c, key[k]);
		s->probe_streak = (unsigned)k;
		assert_ptr_equal(rc_state_get(c, key[k]), s); /* the same, not a new one */
	}
	assert_int_equal(c->n_states, N);
	for (size_t i = 1; i < c->n_states; i++)
		assert_true(strcmp(c->states[i - 1].key, c->states[i].key) < 0);
	pthread_mutex_unlock(&c->mu);
	for (int k = 0; k < N; k += 3)
		rc_state_drop(c, key[k]);
	pthread_mutex_lock(&c->mu);
	for (int k = 0; k < N; k++) {
		const struct rc_cluster_state *s = rc_state_find(c, key[k]);
		if (k % 3 == 0) {
			assert_null(s);
			continue;
		}
		assert_non_null(s);
		assert_string_equal(s->key, key[k]);
		assert_int_equal(s->probe_streak, k);
	}
	assert_null(rc_state_find(c, "ns/c9999"));
	assert_null(rc_state_find(c, ""));
	pthread_mutex_unlock(&c->mu);
	ctl_free(c);
}

/* The primary watch: an answering primary of a Cluster with another instance
 * is probed every RC_WATCH_MS with the short connect timeout; one that does
 * not connect is lost: its Cluster queued once, the reconciles do not ask it
 * (unreachable), the watch probes it until it connects, which queues the
 * Cluster again and lets the reconciles ask it. A single-instance Cluster is
 * not watched. */
static void test_primary_watch(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	struct rc_instance v[2] = { inst("c-1", "10.0.0.1", true), inst("c-2", "10.0.0.2", true) };
	v[0].is_primary = true;
	rc_note_unreachable(c, "ns/c", v, 2, 1000);
	struct rc_instance one[1] = { inst("d-1", "10.0.1.1", true) };
	one[0].is_primary = true;
	rc_note_unreachable(c, "ns/d", one, 1, 1000);
	reset_probe("10.0.0.1");
	assert_int_equal(rc_watch_round(c, 1000 + RC_WATCH_MS - 1, fake_answer), 0);
	assert_int_equal(probe_calls, 0); /* not due yet */
	assert_int_equal(rc_watch_round(c, 1000 + RC_WATCH_MS, fake_answer), 0);
	assert_int_equal(probe_hosts, 1); /* c-1 only: d has no other instance */
	assert_int_equal(probe_timeout, RC_STATUS_CONNECT_SILENT_MS);
	assert_int_equal(rc_queue_len(c->q), 0);
	assert_false(rc_instance_lost(c, "ns/c", &v[0]));
	reset_probe(NULL); /* the partition */
	assert_int_equal(rc_watch_round(c, 1000 + 2 * RC_WATCH_MS, fake_answer), 1);
	assert_int_equal(rc_queue_len(c->q), 1);
	/* a fetch already running gives it up (rc_fetch_opts.abandon) */
	assert_true(rc_instance_lost(c, "ns/c", &v[0]));
	assert_false(rc_instance_lost(c, "ns/c", &v[1]));
	assert_false(rc_instance_lost(c, "ns/other", &v[0]));
	struct rc_instance moved = inst("c-1", "10.0.0.9", true); /* a new Pod IP: a new contact */
	assert_false(rc_instance_lost(c, "ns/c", &moved));
	done(&moved, 1);
	/* the next reconcile does not ask c-1 at all */
	struct rc_instance w[2] = { inst("c-1", "10.0.0.1", false), inst("c-2", "10.0.0.2", true) };
	assert_false(rc_mark_silent(c, "ns/c", w, 2));
	assert_true(w[0].silent);
	assert_true(w[0].unreachable);
	assert_false(w[1].unreachable);
	rc_note_unreachable(c, "ns/c", w, 2, 1000 + 2 * RC_WATCH_MS); /* it stays lost */
	/* probed in the background, no second queueing while it stays down */
	reset_probe(NULL);
	assert_int_equal(rc_watch_round(c, 1000 + 3 * RC_WATCH_MS, fake_answer), 0);
	assert_int_equal(probe_hosts, 1);
	/* it connects again: queued, and the next reconcile asks it */
	reset_probe("10.0.0.1");
	assert_int_equal(rc_watch_round(c, 1000 + 4 * RC_WATCH_MS, fake_answer), 1);
	assert_false(rc_mark_silent(c, "ns/c", w, 2));
	assert_false(w[0].unreachable);
	assert_int_equal(rc_watch_round(c, 1000 + 5 * RC_WATCH_MS, fake_answer), 0);
	assert_int_equal(probe_hosts, 1); /* nothing left to watch until a reconcile */
	/* a reconcile that sees it answer as primary watches it again */
	rc_note_unreachable(c, "ns/c", v, 2, 5000);
	reset_probe(NULL);
	assert_int_equal(rc_watch_round(c, 5000 + RC_WATCH_MS, fake_answer), 1);
	done(v, 2);
	done(w, 2);
	done(one, 1);
	ctl_free(c);
}

/* The cut requests of a Cluster: at most one round every RC_CUT_EVERY_MS. */
static void test_cut_due(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	assert_true(rc_cut_due(c, "ns/c", 1000));
	assert_false(rc_cut_due(c, "ns/c", 1000 + RC_CUT_EVERY_MS - 1));
	assert_true(rc_cut_due(c, "ns/d", 1001)); /* per Cluster */
	assert_true(rc_cut_due(c, "ns/c", 1000 + RC_CUT_EVERY_MS));
	assert_false(rc_cut_due(c, "ns/c", 1000 + RC_CUT_EVERY_MS));
	ctl_free(c);
}

/* The failover waits for the lease the old primary's manager reported, the
 * legacy 3 s when it never did (an older manager, or not seen yet). */
static void test_fence_lease(void **state)
{
	(void)state;
	struct rc_controller *c = ctl_new();
	assert_int_equal(rc_fence_lease_ms(c, "ns/c"), API_FENCE_LEGACY_MS);
	struct rc_instance v[2] = { inst("c-1", "10.0.0.1", true), inst("c-2", "10.0.0.2", true) };
	v[0].is_primary = true;
	rc_note_unreachable(c, "ns/c", v, 2, 1000); /* an older manager: no leaseMs */
	assert_int_equal(rc_fence_lease_ms(c, "ns/c"), API_FENCE_LEGACY_MS);
	v[0].lease_ms = API_FENCE_MS;
	rc_note_unreachable(c, "ns/c", v, 2, 2000);
	assert_int_equal(rc_fence_lease_ms(c, "ns/c"), API_FENCE_MS);
	v[0].has_status = false; /* partitioned: the last report stands */
	rc_note_unreachable(c, "ns/c", v, 2, 3000);
	assert_int_equal(rc_fence_lease_ms(c, "ns/c"), API_FENCE_MS);
	done(v, 2);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delays),
		cmocka_unit_test(test_state_many),
		cmocka_unit_test(test_mark_known_and_unknown),
		cmocka_unit_test(test_all_silent_goes_to_prober),
		cmocka_unit_test(test_streak_and_forget),
		cmocka_unit_test(test_state_drop),
		cmocka_unit_test(test_primary_watch),
		cmocka_unit_test(test_cut_due),
		cmocka_unit_test(test_fence_lease),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
