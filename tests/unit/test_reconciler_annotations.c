/* Unit tests: the Cluster annotations of CloudNativePG's users and kubectl
 * plugin (issue 26): api/annotations.c (cnpg.io/fencedInstances,
 * hibernation, reconciliationLoop) and reconciler/annotations.c
 * (cnpg.io/podPatch on the instance Pod: applied last, fingerprinted, a
 * changed patch makes the Pod outdated). */
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

#include "api/annotations.h"
#include "reconciler/annotations.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"

static struct api_kvs one(const char *key, const char *value, struct api_kv *kv)
{
	kv->key = (char *)key;
	kv->value = (char *)value;
	return (struct api_kvs){ .items = kv, .n = value ? 1 : 0 };
}

static const struct fenced_row {
	const char *value; /* NULL: no annotation */
	const char *pod;
	bool fenced;
} fenced_rows[] = {
	{ NULL, "c-1", false },
	{ "", "c-1", false },
	{ "[]", "c-1", false },
	{ "[\"c-1\"]", "c-1", true },
	{ "[\"c-1\"]", "c-2", false },
	{ "[\"c-1\",\"c-2\"]", "c-2", true },
	{ "[\"*\"]", "c-3", true },
	{ "[\"c-10\"]", "c-1", false },   /* whole names only */
	{ "\"c-1\"", "c-1", false },      /* not a list: CloudNativePG's syntax error */
	{ "[\"c-1\",2]", "c-1", false },  /* not a list of strings */
	{ "[\"c-1\"", "c-1", false },     /* not JSON */
	{ "{\"c-1\":1}", "c-1", false },
};

static void test_fenced(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fenced_rows) / sizeof(fenced_rows[0]); i++) {
		const struct fenced_row *r = &fenced_rows[i];
		struct api_kv kv;
		struct api_kvs a = one(API_ANN_FENCED_INSTANCES, r->value, &kv);
		if (api_fenced(&a, r->pod) != r->fenced)
			fail_msg("row %zu: %s for %s: want %d", i, r->value ? r->value : "(none)",
				 r->pod, r->fenced);
	}
	assert_false(api_fenced(NULL, "c-1"));
}

static void test_hibernation_and_loop(void **state)
{
	(void)state;
	static const struct {
		const char *v;
		bool on;
	} rows[] = { { NULL, false }, { "on", true }, { "off", false }, { "On", false }, { "", false } };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct api_kv kv;
		struct api_kvs a = one(API_ANN_HIBERNATION, rows[i].v, &kv);
		assert_int_equal(api_hibernation_on(&a), rows[i].on);
	}
	static const struct {
		const char *json;
		bool disabled;
	} objs[] = {
		{ "{\"metadata\":{\"annotations\":{\"cnpg.io/reconciliationLoop\":\"disabled\"}}}", true },
		{ "{\"metadata\":{\"annotations\":{\"cnpg.io/reconciliationLoop\":\"enabled\"}}}", false },
		{ "{\"metadata\":{\"annotations\":{\"cnpg.io/reconciliationLoop\":1}}}", false },
		{ "{\"metadata\":{\"annotations\":{}}}", false },
		{ "{\"metadata\":{}}", false },
		{ "{}", false },
	};
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		json_object *o = NULL;
		assert_int_equal(op_json_parse(objs[i].json, strlen(objs[i].json), 8, &o, NULL), 0);
		if (api_reconciliation_disabled(o) != objs[i].disabled)
			fail_msg("%s", objs[i].json);
		json_object_put(o);
	}
}

/* A decoded Cluster with the given podPatch (NULL: none). */
static struct api_cluster *cluster_with_patch(const char *patch)
{
	json_object *obj = op_jobj(), *meta = op_jobj(), *ann = op_jobj(), *spec = op_jobj();
	op_jsets(meta, "name", "c");
	op_jsets(meta, "namespace", "ns");
	op_jsets(meta, "uid", "u-1");
	if (patch)
		op_jsets(ann, API_ANN_POD_PATCH, patch);
	op_jset(meta, "annotations", ann);
	op_jsets(obj, "apiVersion", "postgresql.cnpg.io/v1");
	op_jsets(obj, "kind", "Cluster");
	op_jset(obj, "metadata", meta);
	op_jset(spec, "instances", json_object_new_int(2));
	op_jsets(spec, "imageName", "ghcr.io/cloudnative-pg/postgresql:17.2");
	op_jset(obj, "spec", spec);
	struct api_errors errs = { 0 };
	struct api_cluster *c = NULL;
	assert_int_equal(api_cluster_decode(obj, &errs, &c, NULL), 0);
	api_errors_done(&errs);
	json_object_put(obj);
	return c;
}

static json_object *built_pod(const struct api_cluster *c, int *ret, struct op_err *err)
{
	struct rc_settings s = { 0 };
	json_object *pod = NULL;
	*ret = rc_build_pod(c, &s, 1, "primary", &pod, err);
	return pod;
}

static void test_pod_patch(void **state)
{
	(void)state;
	static const struct {
		const char *patch;   /* NULL: none */
		int ret;             /* rc_build_pod's */
		const char *path;    /* checked in the Pod; NULL: nothing */
		const char *want;
	} rows[] = {
		{ NULL, 0, NULL, NULL },
		{ "[{\"op\":\"add\",\"path\":\"/metadata/labels/team\",\"value\":\"db\"}]", 0,
		  "metadata.labels.team", "db" },
		{ "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\","
		  "\"value\":{\"name\":\"X\",\"value\":\"1\"}}]", 0, NULL, NULL },
		{ "[{\"op\":\"replace\",\"path\":\"/spec/terminationGracePeriodSeconds\",\"value\":7}]",
		  0, NULL, NULL },
		{ "[{\"op\":\"remove\",\"path\":\"/metadata/annotations\"}]", 0, NULL, NULL },
		{ "[{\"op\":\"remove\",\"path\":\"/spec/nosuch\"}]", -EINVAL, NULL, NULL },
		{ "{\"op\":\"add\"}", -EINVAL, NULL, NULL },
		{ "not json", -EINVAL, NULL, NULL },
		{ "[{\"op\":\"remove\",\"path\":\"/metadata\"}]", -EINVAL, NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct api_cluster *c = cluster_with_patch(rows[i].patch);
		struct op_err err = OP_ERR_INIT;
		int ret;
		json_object *pod = built_pod(c, &ret, &err);
		if (ret != rows[i].ret)
			fail_msg("row %zu: ret %d want %d (%s)", i, ret, rows[i].ret, err.msg);
		char *h = rc_pod_patch_hash(c);
		assert_true((h == NULL) == (rows[i].patch == NULL));
		if (ret == 0) {
			/* the fingerprint is on the Pod, even when the patch removed
			 * every annotation; the same Cluster: not outdated */
			const char *have = api_obj_annotation(pod, RC_ANN_POD_PATCH_HASH);
			assert_true((have == NULL) == (h == NULL));
			if (h)
				assert_string_equal(have, h);
			assert_false(rc_pod_patch_outdated(pod, h));
			assert_true(rc_pod_patch_outdated(pod, "0123456789abcdef"));
			assert_int_equal(rc_pod_patch_outdated(pod, NULL), h != NULL);
		}
		if (ret == 0 && rows[i].path) {
			const char *got = op_json_str_at(pod, rows[i].path);
			if (!got || strcmp(got, rows[i].want) != 0)
				fail_msg("row %zu: %s is '%s', want '%s'", i, rows[i].path,
					 got ? got : "(none)", rows[i].want);
		}
		if (ret == 0 && i == 2) {
			json_object *pg = json_object_array_get_idx(op_json_at(pod, "spec.containers"),
								    0);
			json_object *env = op_json_at(pg, "env");
			size_t n = json_object_array_length(env);
			assert_string_equal(op_json_str_at(json_object_array_get_idx(env, n - 1), "name"),
					    "X");
		}
		if (ret == 0 && i == 3)
			assert_int_equal(json_object_get_int(op_json_at(
						 pod, "spec.terminationGracePeriodSeconds")),
					 7);
		free(h);
		if (pod)
			json_object_put(pod);
		api_cluster_free(c);
	}
	/* another patch, another fingerprint */
	struct api_cluster *a = cluster_with_patch("[]"), *b = cluster_with_patch("[ ]");
	char *ha = rc_pod_patch_hash(a), *hb = rc_pod_patch_hash(b);
	assert_string_not_equal(ha, hb);
	assert_int_equal(strlen(ha), 16);
	free(ha);
	free(hb);
	api_cluster_free(a);
	api_cluster_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fenced),
		cmocka_unit_test(test_hibernation_and_loop),
		cmocka_unit_test(test_pod_patch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
