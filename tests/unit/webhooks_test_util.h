/* tests/unit/webhooks_test_util.h - helpers shared by the test_webhooks*.c
 * executables (JSON access, defaulting with patch round-trip, result lookups). */
#ifndef PGOP_TESTS_WEBHOOKS_TEST_UTIL_H
#define PGOP_TESTS_WEBHOOKS_TEST_UTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include <cmocka.h>
/* cmocka maps free to test_free under UNIT_TESTING; our memory comes from libc. */
#undef free

#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/yaml.h"
#include "support/jsonpatch.h"
#include "webhooks/patch.h"
#include "webhooks/webhooks.h"

/* ---- helpers ---- */

static inline json_object *parse(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, strlen(s), 0, &o, &err) != 0)
		fail_msg("bad test JSON: %s: %s", err.msg, s);
	return o;
}

static inline json_object *at(json_object *o, const char *dotted)
{
	return op_json_at(o, dotted);
}

static inline const char *str_at(json_object *o, const char *dotted)
{
	json_object *v = at(o, dotted);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static inline void assert_str_at(json_object *o, const char *dotted, const char *want)
{
	const char *got = str_at(o, dotted);
	if (!got || strcmp(got, want) != 0)
		fail_msg("%s: got %s, want '%s'", dotted, got ? got : "(none)", want);
}

static inline json_object *param_obj(json_object *o)
{
	return at(o, "spec.postgresql.parameters");
}

static inline const char *param(json_object *o, const char *key)
{
	json_object *p = param_obj(o), *v = NULL;
	if (!p || !json_object_object_get_ex(p, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Runs wh_default on a copy of src, checks that the patch applied to src
 * gives the defaulted object and that defaulting again yields an empty patch.
 * Returns the defaulted object (owned). */
static inline json_object *defaulted(const char *src)
{
	json_object *orig = parse(src), *obj = parse(src), *patch = NULL, *applied = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default(obj, &patch, &err), 0);
	assert_true(json_object_is_type(patch, json_type_array));
	if (op_jsonpatch_apply(orig, patch, &applied, &err) != 0)
		fail_msg("patch does not apply: %s", err.msg);
	assert_true(json_object_equal(applied, obj));
	json_object_put(applied);
	json_object_put(patch);
	/* idempotent: an already-defaulted object gives an empty patch */
	assert_int_equal(wh_default(obj, &patch, &err), 0);
	if (json_object_array_length(patch) != 0)
		fail_msg("second defaulting not a no-op: %s", json_object_to_json_string(patch));
	json_object_put(patch);
	json_object_put(orig);
	return obj;
}

/* Number of operations wh_default produces for src. */
static inline size_t patch_len(const char *src)
{
	json_object *obj = parse(src), *patch = NULL;
	assert_int_equal(wh_default(obj, &patch, NULL), 0);
	size_t n = json_object_array_length(patch);
	json_object_put(patch);
	json_object_put(obj);
	return n;
}

#define META "\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":\"pg\"}"
#define CLUSTER(spec) "{" META ",\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}" spec "}}"
/* A Cluster with the given storage object and more spec members. */
#define SPEC(storage, rest) "{" META ",\"spec\":{\"instances\":3,\"storage\":" storage rest "}}"
#define CLUSTER_ANN(ann, spec)                                                                     \
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":\"pg\"," \
	"\"annotations\":{" ann "}},\"spec\":{\"instances\":3,\"storage\":{\"size\":\"1Gi\"}" spec   \
	"}}"

/* ---- result lookups ---- */

static inline bool has_error(const struct wh_result *r, const char *path, const char *msg_part)
{
	for (size_t i = 0; i < r->n_errors; i++)
		if (strcmp(r->errors[i].path, path) == 0 &&
		    (!msg_part || strstr(r->errors[i].msg, msg_part)))
			return true;
	return false;
}

static inline bool has_error_path(const struct wh_result *r, const char *path)
{
	return has_error(r, path, NULL);
}

static inline bool has_warning(const struct wh_result *r, const char *part)
{
	for (size_t i = 0; i < r->n_warnings; i++)
		if (strstr(r->warnings[i], part))
			return true;
	return false;
}

/* Validates defaulted(new_src) against defaulted(old_src) (old NULL = CREATE). */
static inline void validate_pair(const char *new_src, const char *old_src, struct wh_result *res)
{
	json_object *n = defaulted(new_src), *o = old_src ? defaulted(old_src) : NULL;
	int r = wh_validate(n, o, res);
	assert_int_equal((size_t)r, res->n_errors);
	json_object_put(n);
	json_object_put(o);
}

#endif
