/* Unit tests: reconciler/queue.c (dedupe, delay, back-off, exclusivity). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "reconciler/queue.h"

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void get_expect(struct rc_queue *q, long timeout, const char *want)
{
	char *k = NULL;
	assert_int_equal(rc_queue_get(q, timeout, &k, NULL), 0);
	assert_string_equal(k, want);
	free(k);
}

static void test_dedupe_and_fifo(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	rc_queue_add(q, "ns/a");
	rc_queue_add(q, "ns/b");
	rc_queue_add(q, "ns/a");
	rc_queue_add(q, "ns/a");
	assert_int_equal(rc_queue_len(q), 2);
	get_expect(q, 0, "ns/a");
	get_expect(q, 0, "ns/b");
	char *k = NULL;
	assert_int_equal(rc_queue_get(q, 0, &k, NULL), -ETIMEDOUT);
	assert_null(k);
	rc_queue_done(q, "ns/a");
	rc_queue_done(q, "ns/b");
	assert_int_equal(rc_queue_len(q), 0);
	rc_queue_free(q);
}

static void test_exclusive_while_processing(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	rc_queue_add(q, "ns/a");
	get_expect(q, 0, "ns/a");
	/* added twice while a worker holds it: not handed out again, one re-queue */
	rc_queue_add(q, "ns/a");
	rc_queue_add(q, "ns/a");
	char *k = NULL;
	assert_int_equal(rc_queue_get(q, 20, &k, NULL), -ETIMEDOUT);
	assert_int_equal(rc_queue_len(q), 0);
	rc_queue_done(q, "ns/a");
	assert_int_equal(rc_queue_len(q), 1);
	get_expect(q, 0, "ns/a");
	rc_queue_done(q, "ns/a");
	assert_int_equal(rc_queue_get(q, 0, &k, NULL), -ETIMEDOUT);
	rc_queue_free(q);
}

static void test_delay(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	int64_t t0 = mono_ms();
	rc_queue_add_after(q, "ns/late", 120);
	rc_queue_add_after(q, "ns/early", 40);
	rc_queue_add_after(q, "ns/late", 500); /* later delay does not push it back */
	assert_int_equal(rc_queue_len(q), 0);
	assert_int_equal(rc_queue_delayed(q), 2);
	get_expect(q, 2000, "ns/early");
	int64_t t1 = mono_ms();
	assert_true(t1 - t0 >= 40);
	get_expect(q, 2000, "ns/late");
	int64_t t2 = mono_ms();
	assert_true(t2 - t0 >= 120);
	assert_true(t2 - t0 < 450);
	rc_queue_done(q, "ns/early");
	rc_queue_done(q, "ns/late");
	/* an immediate add wins over a pending delay */
	rc_queue_add_after(q, "ns/x", 10000);
	rc_queue_add(q, "ns/x");
	get_expect(q, 0, "ns/x");
	rc_queue_done(q, "ns/x");
	assert_int_equal(rc_queue_delayed(q), 0);
	rc_queue_free(q);
}

static void test_backoff(void **state)
{
	struct rc_queue_opts o = { .base_backoff_ms = 10, .max_backoff_ms = 70 };
	struct rc_queue *q = rc_queue_new(&o);
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 10);
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 20);
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 40);
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 70);
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 70);
	assert_int_equal(rc_queue_failures(q, "k"), 5);
	assert_int_equal(rc_queue_add_rate_limited(q, "other"), 10);
	get_expect(q, 1000, "k"); /* earliest delay (10 ms) applies */
	rc_queue_forget(q, "k");
	assert_int_equal(rc_queue_failures(q, "k"), 0);
	rc_queue_done(q, "k");
	assert_int_equal(rc_queue_add_rate_limited(q, "k"), 10);
	for (int i = 0; i < 100; i++)
		(void)rc_queue_add_rate_limited(q, "big");
	assert_int_equal(rc_queue_add_rate_limited(q, "big"), 70); /* no overflow */
	rc_queue_free(q);
}

static void test_delay_while_processing(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	rc_queue_add(q, "k");
	get_expect(q, 0, "k");
	rc_queue_add_after(q, "k", 10);
	usleep(30 * 1000);
	char *k = NULL;
	assert_int_equal(rc_queue_get(q, 0, &k, NULL), -ETIMEDOUT); /* still held */
	rc_queue_done(q, "k");
	get_expect(q, 0, "k");
	rc_queue_done(q, "k");
	rc_queue_free(q);
}

struct worker_ctx {
	struct rc_queue *q;
	pthread_mutex_t mu;
	int active[4];    /* workers inside key i right now */
	int max_active[4];
	int processed;
};

static void *worker(void *arg)
{
	struct worker_ctx *c = arg;
	for (;;) {
		char *k = NULL;
		int r = rc_queue_get(c->q, -1, &k, NULL);
		if (r == -ECANCELED)
			return NULL;
		int i = k[0] - 'a';
		pthread_mutex_lock(&c->mu);
		c->active[i]++;
		if (c->active[i] > c->max_active[i])
			c->max_active[i] = c->active[i];
		pthread_mutex_unlock(&c->mu);
		usleep(200);
		pthread_mutex_lock(&c->mu);
		c->active[i]--;
		c->processed++;
		pthread_mutex_unlock(&c->mu);
		rc_queue_done(c->q, k);
		free(k);
	}
}

static void test_workers_never_share_a_key(void **state)
{
	struct worker_ctx c = { .q = rc_queue_new(NULL) };
	pthread_mutex_init(&c.mu, NULL);
	pthread_t th[6];
	for (int i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, worker, &c);
	static const char *keys[] = { "a", "b", "c", "d" };
	for (int n = 0; n < 2000; n++) {
		rc_queue_add(c.q, keys[n % 4]);
		if (n % 50 == 0)
			usleep(100);
	}
	int64_t end = mono_ms() + 5000;
	while (mono_ms() < end && (rc_queue_len(c.q) > 0))
		usleep(1000);
	usleep(20 * 1000);
	rc_queue_shutdown(c.q);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c.max_active[i], 1);
	assert_true(c.processed >= 4);
	assert_true(c.processed <= 2000); /* de-duplicated */
	char *k = NULL;
	assert_int_equal(rc_queue_get(c.q, 0, &k, NULL), -ECANCELED);
	rc_queue_add(c.q, "z"); /* ignored after shutdown */
	assert_int_equal(rc_queue_len(c.q), 0);
	pthread_mutex_destroy(&c.mu);
	rc_queue_free(c.q);
}

static void *late_adder(void *arg)
{
	usleep(30 * 1000);
	rc_queue_add(arg, "wake");
	return NULL;
}

static void test_blocking_get_wakes(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	rc_queue_add_after(q, "slow", 60000);
	pthread_t th;
	pthread_create(&th, NULL, late_adder, q);
	int64_t t0 = mono_ms();
	get_expect(q, -1, "wake");
	assert_true(mono_ms() - t0 < 5000);
	pthread_join(th, NULL);
	rc_queue_done(q, "wake");
	rc_queue_free(q); /* frees the still-delayed key */
	assert_null(rc_queue_free(NULL));
}

/* The event time handed out with a key: the oldest rc_queue_add of the round,
 * not a requeue; an event while the key is processed belongs to the next round */
static void test_event_time(void **state)
{
	struct rc_queue *q = rc_queue_new(NULL);
	char *k = NULL;
	int64_t ev = -1;
	int64_t t0 = mono_ms();
	rc_queue_add(q, "ns/a");
	usleep(30 * 1000);
	rc_queue_add(q, "ns/a"); /* de-duplicated: the first one's time stays */
	assert_int_equal(rc_queue_get(q, 0, &k, &ev), 0);
	assert_true(ev >= t0 && ev < t0 + 25);
	/* an event while processing: the next round carries it */
	int64_t t1 = mono_ms();
	rc_queue_add(q, "ns/a");
	rc_queue_done(q, "ns/a");
	free(k);
	assert_int_equal(rc_queue_get(q, 0, &k, &ev), 0);
	assert_true(ev >= t1);
	rc_queue_done(q, "ns/a");
	free(k);
	/* a requeue only (a delay, a rate-limited retry, a 0 delay): no event */
	rc_queue_add_after(q, "ns/a", 0);
	assert_int_equal(rc_queue_get(q, 0, &k, &ev), 0);
	assert_int_equal(ev, 0);
	rc_queue_done(q, "ns/a");
	free(k);
	rc_queue_add_after(q, "ns/b", 10);
	assert_int_equal(rc_queue_get(q, 1000, &k, &ev), 0);
	assert_string_equal(k, "ns/b");
	assert_int_equal(ev, 0);
	rc_queue_done(q, "ns/b");
	free(k);
	/* an event on a delayed key makes it ready now, with its time */
	rc_queue_add_after(q, "ns/c", 60000);
	int64_t t2 = mono_ms();
	rc_queue_add(q, "ns/c");
	assert_int_equal(rc_queue_get(q, 0, &k, &ev), 0);
	assert_string_equal(k, "ns/c");
	assert_true(ev >= t2);
	rc_queue_done(q, "ns/c");
	free(k);
	assert_int_equal(rc_queue_len(q), 0);
	rc_queue_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedupe_and_fifo),
		cmocka_unit_test(test_event_time),
		cmocka_unit_test(test_exclusive_while_processing),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_delay_while_processing),
		cmocka_unit_test(test_workers_never_share_a_key),
		cmocka_unit_test(test_blocking_get_wakes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
