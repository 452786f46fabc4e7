/* tests/unit/test_webhooks_selftest.c - wh_selftest against scripted
 * dry-run answers: right answers pass, wrong ones fail at once, transient
 * ones are retried. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/json.h"
#include "webhooks/selftest.h"

#include <cmocka.h>

struct fake {
	int invalid_answer;     /* -EINVAL refusal, 0 admitted, other -errno */
	const char *refusal;    /* the refusal's message */
	const char *valid_body; /* what the valid Cluster comes back as */
	int transient_left;     /* this many -EAGAIN answers first */
	int calls;
};

static int fake_create(void *ud, const char *body, json_object **ret_obj, struct op_err *err)
{
	struct fake *f = ud;
	f->calls++;
	if (f->transient_left > 0) {
		f->transient_left--;
		return op_err_set(err, -EAGAIN, "webhook not reachable yet");
	}
	if (strstr(body, "pgop-selftest-invalid")) {
		if (f->invalid_answer == -EINVAL)
			return op_err_set(err, -EINVAL, "%s", f->refusal);
		if (f->invalid_answer < 0)
			return op_err_set(err, f->invalid_answer, "no");
		*ret_obj = json_tokener_parse(body);
		return 0;
	}
	*ret_obj = json_tokener_parse(f->valid_body);
	return 0;
}

static int run(struct fake *f, unsigned timeout_s)
{
	char buf[4096];
	FILE *out = fmemopen(buf, sizeof(buf), "w");
	const struct wh_selftest_io io = { .dry_create = fake_create, .ud = f, .out = out };
	int r = wh_selftest(&io, timeout_s);
	fclose(out);
	return r;
}

static const char admitted[] = "{\"spec\":{\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:17\"}}";

static void test_right_answers_pass(void **state)
{
	(void)state;
	struct fake f = { .invalid_answer = -EINVAL,
			  .refusal = "spec.postgresql.parameters.listen_addresses: Invalid value",
			  .valid_body = admitted };
	assert_int_equal(run(&f, 5), 0);
	assert_int_equal(f.calls, 2);
}

static void test_wrong_answers_fail_at_once(void **state)
{
	(void)state;
	struct fake admits = { .invalid_answer = 0, .valid_body = admitted };
	assert_int_equal(run(&admits, 5), 1);
	struct fake other_field = { .invalid_answer = -EINVAL, .refusal = "spec.instances: bad",
				    .valid_body = admitted };
	assert_int_equal(run(&other_field, 5), 1);
	struct fake no_defaults = { .invalid_answer = -EINVAL, .refusal = WH_SELFTEST_FIELD,
				    .valid_body = "{\"spec\":{}}" };
	assert_int_equal(run(&no_defaults, 5), 1);
	assert_int_equal(no_defaults.calls, 2); /* no retry of a wrong answer */
}

static void test_transient_retried(void **state)
{
	(void)state;
	struct fake f = { .invalid_answer = -EINVAL, .refusal = WH_SELFTEST_FIELD,
			  .valid_body = admitted, .transient_left = 1 };
	assert_int_equal(run(&f, 10), 0);
	assert_int_equal(f.calls, 3); /* the first answer was transient: asked again */
	struct fake never = { .invalid_answer = -EINVAL, .refusal = WH_SELFTEST_FIELD,
			      .valid_body = admitted, .transient_left = 1000 };
	assert_int_equal(run(&never, 1), 1); /* the deadline ends it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_right_answers_pass),
		cmocka_unit_test(test_wrong_answers_fail_at_once),
		cmocka_unit_test(test_transient_retried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
