/* Unit tests: reconciler/status.c - pendingRestart from /pg/status and the
 * PendingRestart condition of the Cluster status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/json.h"
#include "test_json.h"


static void test_parse_pending(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	struct rc_instance in = { 0 };
	json_object *st = parse("{\"isPrimary\":true,\"pendingRestart\":true}");
	assert_int_equal(rc_instance_parse_status(&in, st, &err), 0);
	assert_true(in.pending_restart);
	json_object_put(st);
	/* absent: false again (not left over from the previous poll) */
	st = parse("{\"isPrimary\":true}");
	assert_int_equal(rc_instance_parse_status(&in, st, &err), 0);
	assert_false(in.pending_restart);
	json_object_put(st);
	st = parse("{\"pendingRestart\":\"yes\"}");
	assert_int_equal(rc_instance_parse_status(&in, st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "pendingRestart"));
	json_object_put(st);
	rc_instance_done(&in);
}

/* The condition of `type` in the patch (owned copy of the status), or NULL. */
static json_object *cond_in(json_object *status, const char *type)
{
	json_object *conds = op_json_at(status, "conditions");
	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds);
	     i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (strcmp(op_json_str_at(c, "type"), type) == 0)
			return c;
	}
	return NULL;
}

static json_object *patch_status(const char *patch)
{
	json_object *p = parse(patch);
	json_object *st = NULL;
	assert_true(json_object_object_get_ex(p, "status", &st));
	json_object_get(st);
	json_object_put(p);
	return st;
}

static void test_condition(void **state)
{
	(void)state;
	struct op_err err = OP_ERR_INIT;
	struct rc_status w = { 0 };
	w.phase = op_strdup("Cluster in healthy state");
	w.ready = true;
	char *patch = NULL;

	/* unknown (no instance answered): no PendingRestart condition written */
	assert_int_equal(rc_status_patch(NULL, &w, NULL, 1000, &patch, &err), 1);
	json_object *p = patch_status(patch);
	free(patch);
	assert_null(cond_in(p, "PendingRestart"));
	assert_null(rc_status_pending_message(&w));
	json_object_put(p);

	/* known, none pending: False */
	w.pending_known = true;
	assert_int_equal(rc_status_patch(NULL, &w, NULL, 1000, &patch, &err), 1);
	p = patch_status(patch);
	free(patch);
	json_object *c = cond_in(p, "PendingRestart");
	assert_non_null(c);
	assert_string_equal(op_json_str_at(c, "status"), "False");
	assert_string_equal(op_json_str_at(c, "reason"), "NoRestartNeeded");
	/* the same status again: nothing to patch */
	assert_int_equal(rc_status_patch(p, &w, NULL, 5000, &patch, &err), 0);

	/* two instances pending: True, names listed, new transition time */
	rc_strv_push(&w.pending_restart, &w.n_pending_restart, "c-1");
	rc_strv_push(&w.pending_restart, &w.n_pending_restart, "c-3");
	assert_int_equal(rc_status_patch(p, &w, NULL, 5000, &patch, &err), 1);
	json_object *p2 = patch_status(patch);
	free(patch);
	c = cond_in(p2, "PendingRestart");
	assert_string_equal(op_json_str_at(c, "status"), "True");
	assert_string_equal(op_json_str_at(c, "reason"), "ParametersNeedRestart");
	assert_string_equal(op_json_str_at(c, "message"),
			    "instances with parameters that need a restart: c-1, c-3");
	assert_string_equal(op_json_str_at(c, "lastTransitionTime"), "1970-01-01T01:23:20Z");
	/* Ready kept its transition time */
	assert_string_equal(op_json_str_at(cond_in(p2, "Ready"), "lastTransitionTime"),
			    "1970-01-01T00:16:40Z");
	json_object_put(p);

	/* unknown this time (instances not answering): the True condition is kept
	 * (p2 holds only the conditions, so the other fields are patched too) */
	w.pending_known = false;
	assert_int_equal(rc_status_patch(p2, &w, NULL, 9000, &patch, &err), 1);
	json_object *p3 = patch_status(patch);
	free(patch);
	c = cond_in(p3, "PendingRestart");
	assert_non_null(c);
	assert_string_equal(op_json_str_at(c, "status"), "True");
	assert_string_equal(op_json_str_at(c, "lastTransitionTime"), "1970-01-01T01:23:20Z");
	json_object_put(p3);
	json_object_put(p2);
	rc_status_done(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_pending),
		cmocka_unit_test(test_condition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
