/* Unit tests: reconciler/start.c against the scripted API server
 * (tests/unit/test_kube_server.h): broken cluster access is retried with
 * back-off and keeps the runner not ready, each distinct reason is logged
 * once, and the controller starts (ready once synced) as soon as access
 * works. Before this, `pgop controller` switched to "webhooks only" for good
 * and reported Ready on the first kubeconfig error. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "test_kube_server.h"

#include "reconciler/start.h"
#include "support/log.h"

static void h_api(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (strcmp(req->method, "GET") == 0 && strstr(req->query, "watch=1")) {
		r->hold_ms = 20000;
		return;
	}
	if (strcmp(req->method, "GET") == 0) {
		r->body = op_strdup("{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"5\"},"
				    "\"items\":[]}");
		return;
	}
	r->status = 404;
	r->body = ts_status(404, "NotFound", "no such thing");
}

/* Lines of the captured log containing needle. */
static int count_lines(FILE *f, const char *needle)
{
	fflush(f);
	rewind(f);
	char line[8192];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fseek(f, 0, SEEK_END);
	return n;
}

static bool wait_until(bool (*cond)(void *), void *ud, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		if (cond(ud))
			return true;
		ts_sleep_ms(10);
	}
	return cond(ud);
}

static bool three_failures(void *ud)
{
	return rc_runner_failures(ud) >= 3;
}

static bool six_failures(void *ud)
{
	return rc_runner_failures(ud) >= 6;
}

static bool is_ready(void *ud)
{
	return rc_runner_ready(ud);
}

static void test_retry_until_access_then_ready(void **state)
{
	struct ts *s = ts_start(h_api, NULL);
	FILE *logf = tmpfile();
	assert_non_null(logf);
	op_log_set_fd(fileno(logf));
	_cleanup_free_ char *later = op_asprintf("%s/kubeconfig-later", s->dir);
	struct rc_start_opts o = {
		.kubeconfig = later,
		.watch_namespaces = "db",
		.leader_elect = false,
		.workers = 1,
		.settings = { .operator_image = "pgop:test" },
		.retry_min_ms = 20,
		.retry_max_ms = 60,
	};
	struct rc_runner *r = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_runner_start(&o, &r, &err), 0);

	/* 1. the kubeconfig does not exist: retried, not ready, logged once */
	assert_true(wait_until(three_failures, r, 5000));
	assert_false(rc_runner_ready(r));
	assert_int_equal(count_lines(logf, "no usable cluster access"), 1);
	assert_int_equal(count_lines(logf, "kubeconfig-later\\\" does not exist"), 1);

	/* 2. another reason (malformed file) is logged once more */
	ts_write_file(later, "a: [");
	assert_true(wait_until(six_failures, r, 5000));
	assert_false(rc_runner_ready(r));
	assert_int_equal(count_lines(logf, "no usable cluster access"), 2);

	/* 3. working access: started, ready once the informers have listed */
	assert_int_equal(rename(ts_kubeconfig(s, "t"), later), 0);
	assert_true(wait_until(is_ready, r, 10000));
	assert_int_equal(count_lines(logf, "cluster access recovered"), 1);
	assert_int_equal(count_lines(logf, "\"reconciler started\""), 1);
	unsigned failures = rc_runner_failures(r);
	ts_sleep_ms(150);
	assert_int_equal(rc_runner_failures(r), failures); /* no more attempts */

	rc_runner_free(r);
	op_log_set_fd(2);
	fclose(logf);
	unlink(later);
	ts_stop(s);
}

/* Stopping while it waits out a back-off returns at once. */
static void test_stop_during_backoff(void **state)
{
	struct rc_start_opts o = { .kubeconfig = "/nonexistent/pgop-kubeconfig",
				   .retry_min_ms = 60000, .retry_max_ms = 60000 };
	struct rc_runner *r = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_runner_start(&o, &r, &err), 0);
	for (int i = 0; i < 500 && rc_runner_failures(r) == 0; i++)
		ts_sleep_ms(10);
	assert_int_equal(rc_runner_failures(r), 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc_runner_free(r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
}

static void test_bad_namespaces(void **state)
{
	struct rc_start_opts o = { .watch_namespaces = " , ," };
	struct rc_runner *r = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(rc_runner_start(&o, &r, &err), -EINVAL);
	assert_null(r);
	assert_non_null(strstr(err.msg, "names no namespace"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retry_until_access_then_ready),
		cmocka_unit_test(test_stop_during_backoff),
		cmocka_unit_test(test_bad_namespaces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
