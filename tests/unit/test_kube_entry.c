/* tests/unit/test_kube_entry.c - kube/entry.c: the informer cache's compact
 * entries (text + index fields) and the sorted array that holds them. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

/* A scale-mode instance Pod as the controller's Pods cache keeps it
 * (projected: keep_pods in reconciler/controller.c), taken from bench/scale.sh. */
static const char pod_json[] =
	"{\"metadata\":{\"annotations\":{\"cnpg.io/nodeSerial\":\"1\",\"pgop.io/image\":\"ghcr.io/cl"
	"oudnative-pg/postgresql:15\"},\"creationTimestamp\":\"2026-12-04T19:39:27Z\",\"generat"
	"ion\":1,\"labels\":{\"app.kubernetes.io/component\":\"database\",\"app.kubernetes.io/ins"
	"tance\":\"s00001\",\"app.kubernetes.io/managed-by\":\"pgop\",\"app.kubernetes.io/name\":\""
	"postgresql\",\"cnpg.io/cluster\":\"s00001\",\"cnpg.io/instanceName\":\"s00001-1\",\"cnpg.i"
	"o/instanceRole\":\"primary\",\"cnpg.io/podRole\":\"instance\",\"role\":\"primary\"},\"name\":"
	"\"s00001-1\",\"namespace\":\"bscale-853856\",\"ownerReferences\":[{\"apiVersion\":\"postgre"
	"sql.cnpg.io/v1\",\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"Cluster\",\"na"
	"me\":\"s00001\",\"uid\":\"59c77a49-2260-430b-a64c-402ca1645bcf\"}],\"resourceVersion\":\"7"
	"03\",\"uid\":\"ac5b0caa-d8da-4fe2-b634-2f7d622df3d7\"},\"spec\":{\"nodeName\":\"pgop-e2e-n"
	"ode\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"198.18.0.6\",\"conditions\":[{\"lastProbe"
	"Time\":null,\"lastTransitionTime\":\"2026-12-04T19:39:27Z\",\"status\":\"True\",\"type\":\"P"
	"odScheduled\"},{\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-12-04T19:39:27Z\","
	"\"status\":\"True\",\"type\":\"Initialized\"},{\"lastProbeTime\":null,\"lastTransitionTime\""
	":\"2026-12-04T19:39:27Z\",\"status\":\"True\",\"type\":\"ContainersReady\"},{\"lastProbeTim"
	"e\":null,\"lastTransitionTime\":\"2026-12-04T19:39:27Z\",\"status\":\"True\",\"type\":\"Read"
	"y\"}],\"containerStatuses\":[{\"containerID\":\"pgop://ac5b0caa-d8da-4fe2-b634-2f7d622"
	"df3d7-postgres-0\",\"image\":\"ghcr.io/cloudnative-pg/postgresql:15\",\"imageID\":\"\",\"l"
	"astState\":{},\"name\":\"postgres\",\"ready\":true,\"restartCount\":0,\"started\":true,\"sta"
	"te\":{\"running\":{\"startedAt\":\"2026-12-04T19:39:27Z\"}}}]}}";

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);
	assert_non_null(o);
	return o;
}

/* Rows: object -> key, rv, index value, compact text; the text parses back
 * equal to the object. */
static void test_entry(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *label;
		const char *key, *rv, *index, *text;
	} rows[] = {
		/* whitespace dropped, '/' not escaped, UTF-8 and escapes kept */
		{ "{ \"metadata\": { \"name\": \"a\", \"namespace\": \"ns1\", \"resourceVersion\": \"7\",\n"
		  "  \"labels\": { \"cnpg.io/cluster\": \"pg\", \"x\": \"a/b \xc3\xa9\" } },\n"
		  "  \"data\": { \"q\": \"say \\\"hi\\\"\\n\", \"n\": [1, 2.5, -3, true, null] } }",
		  "cnpg.io/cluster", "ns1/a", "7", "pg",
		  "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\",\"resourceVersion\":\"7\","
		  "\"labels\":{\"cnpg.io/cluster\":\"pg\",\"x\":\"a/b \xc3\xa9\"}},"
		  "\"data\":{\"q\":\"say \\\"hi\\\"\\n\",\"n\":[1,2.5,-3,true,null]}}" },
		/* the index label absent, or not a string: no index */
		{ "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns1\",\"labels\":{\"o\":\"1\"}}}",
		  "cnpg.io/cluster", "ns1/b", NULL, NULL,
		  "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns1\",\"labels\":{\"o\":\"1\"}}}" },
		{ "{\"metadata\":{\"name\":\"b\",\"labels\":{\"cnpg.io/cluster\":3}}}", "cnpg.io/cluster",
		  "/b", NULL, NULL, "{\"metadata\":{\"name\":\"b\",\"labels\":{\"cnpg.io/cluster\":3}}}" },
		/* no index label asked for; cluster-scoped; no metadata at all */
		{ "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"9\",\"labels\":{\"l\":\"v\"}}}",
		  NULL, "/n1", "9", NULL,
		  "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"9\",\"labels\":{\"l\":\"v\"}}}" },
		{ "{}", "l", "/", NULL, NULL, "{}" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *in = parse(rows[i].in);
		struct kube__entry *e = kube__entry_new(in, rows[i].label);
		assert_string_equal(e->key, rows[i].key);
		assert_int_equal(e->ns_len, strchr(rows[i].key, '/') - rows[i].key);
		if (rows[i].rv)
			assert_string_equal(e->rv, rows[i].rv);
		else
			assert_null(e->rv);
		if (rows[i].index)
			assert_string_equal(e->index, rows[i].index);
		else
			assert_null(e->index);
		assert_string_equal(e->json, rows[i].text);
		assert_int_equal(e->json_len, strlen(rows[i].text));
		/* one allocation: header, key, rv, index, text */
		size_t want = sizeof(*e) + strlen(e->key) + 1 + (e->rv ? strlen(e->rv) + 1 : 0) +
			      (e->index ? strlen(e->index) + 1 : 0) + e->json_len + 1;
		assert_int_equal(kube__entry_size(e), want);
		json_object *back = kube__entry_parse(e);
		assert_non_null(back);
		if (!json_object_equal(back, in))
			fail_msg("row %zu: read back %s", i, json_object_to_json_string(back));
		json_object_put(in); /* the entry shares nothing with the tree (ASan) */
		json_object *again = kube__entry_parse(e);
		assert_true(json_object_equal(back, again));
		assert_ptr_not_equal(back, again);
		json_object_put(back);
		json_object_put(again);
		free(e);
	}
}

/* The realistic case: an entry against the json-c tree of the same Pod
 * (printed, not asserted: malloc accounting; not under ASan). */
static void test_entry_size(void **state)
{
	(void)state;
	json_object *pod = parse(pod_json);
	struct kube__entry *e = kube__entry_new(pod, "cnpg.io/cluster");
	assert_string_equal(e->key, "bscale-853856/s00001-1");
	assert_string_equal(e->index, "s00001");
	assert_string_equal(e->rv, "703");
	assert_int_equal(e->json_len, strlen(pod_json));
	assert_string_equal(e->json, pod_json);
	json_object_put(pod);
#if !defined(__SANITIZE_ADDRESS__)
	struct mallinfo2 m0 = mallinfo2();
	json_object *tree = kube__entry_parse(e);
	struct mallinfo2 m1 = mallinfo2();
	assert_non_null(tree);
	print_message("projected Pod: entry %zu bytes, json-c tree %zu bytes\n",
		      kube__entry_size(e), (size_t)(m1.uordblks - m0.uordblks));
	json_object_put(tree);
#endif
	free(e);
}

static struct kube__entry *entry(const char *ns, const char *name, const char *rv)
{
	json_object *o = json_object_new_object(), *md = json_object_new_object();
	op_jset(o, "metadata", md);
	op_jset(md, "name", json_object_new_string(name));
	if (ns)
		op_jset(md, "namespace", json_object_new_string(ns));
	op_jset(md, "resourceVersion", json_object_new_string(rv));
	struct kube__entry *e = kube__entry_new(o, NULL);
	json_object_put(o);
	return e;
}

static void assert_keys(const struct kube__cache *c, size_t lo, size_t hi, const char *want)
{
	char got[256] = "";
	for (size_t i = lo; i < hi; i++) {
		size_t len = strlen(got);
		snprintf(got + len, sizeof(got) - len, "%s%s@%s", i > lo ? " " : "", c->v[i]->key,
			 c->v[i]->rv);
	}
	assert_string_equal(got, want);
}

/* The sorted array: put/replace/find/del, namespace ranges (a namespace that
 * is a prefix of another, '-' sorting before '/'), adopt with duplicates. */
static void test_entry_cache(void **state)
{
	(void)state;
	struct kube__cache c = { 0 };
	static const char *const names[][2] = { { "ns1", "b" }, { "ns10", "a" }, { "ns1", "a" },
						{ "ns1-x", "a" }, { NULL, "node" }, { "ns2", "z" } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(names); i++)
		assert_null(kube__cache_put(&c, entry(names[i][0], names[i][1], "1")));
	assert_int_equal(c.n, 6);
	assert_keys(&c, 0, c.n, "/node@1 ns1-x/a@1 ns1/a@1 ns1/b@1 ns10/a@1 ns2/z@1");
	struct kube__entry *old = kube__cache_put(&c, entry("ns1", "a", "2"));
	assert_non_null(old);
	assert_string_equal(old->rv, "1");
	free(old);
	assert_int_equal(c.n, 6);
	bool found;
	size_t i = kube__cache_find(&c, "ns1/a", &found);
	assert_true(found);
	assert_string_equal(c.v[i]->rv, "2");
	i = kube__cache_find(&c, "ns1/aa", &found);
	assert_false(found);
	assert_string_equal(c.v[i]->key, "ns1/b"); /* where it would go */
	size_t lo, hi;
	kube__cache_range(&c, "ns1/", &lo, &hi);
	assert_keys(&c, lo, hi, "ns1/a@2 ns1/b@1");
	kube__cache_range(&c, "ns10/", &lo, &hi);
	assert_keys(&c, lo, hi, "ns10/a@1");
	kube__cache_range(&c, "/", &lo, &hi);
	assert_keys(&c, lo, hi, "/node@1");
	kube__cache_range(&c, "zz/", &lo, &hi);
	assert_int_equal(lo, hi);
	kube__cache_range(&c, NULL, &lo, &hi);
	assert_int_equal(hi - lo, 6);
	old = kube__cache_del(&c, "ns1/b");
	assert_non_null(old);
	free(old);
	assert_null(kube__cache_del(&c, "ns1/b"));
	assert_keys(&c, 0, c.n, "/node@1 ns1-x/a@1 ns1/a@2 ns10/a@1 ns2/z@1");
	for (size_t k = 0; k < 100; k++) { /* growth past the first capacity */
		char n[16];
		snprintf(n, sizeof(n), "p%03zu", 99 - k);
		assert_null(kube__cache_put(&c, entry("ns3", n, "1")));
	}
	kube__cache_range(&c, "ns3/", &lo, &hi);
	assert_int_equal(hi - lo, 100);
	assert_string_equal(c.v[lo]->key, "ns3/p000");
	assert_string_equal(c.v[hi - 1]->key, "ns3/p099");
	kube__cache_clear(&c);
	assert_int_equal(c.n, 0);

	/* adopt: any order, the later of two with one key wins */
	struct kube__entry **v = op_malloc(4 * sizeof(*v));
	v[0] = entry("b", "x", "1");
	v[1] = entry("a", "x", "1");
	v[2] = entry("b", "x", "2");
	v[3] = entry("a", "y", "1");
	kube__cache_adopt(&c, v, 4);
	assert_keys(&c, 0, c.n, "a/x@1 a/y@1 b/x@2");
	assert_null(kube__cache_put(&c, entry("c", "x", "1")));
	assert_int_equal(c.n, 4);
	kube__cache_clear(&c);
	kube__cache_adopt(&c, op_malloc(1), 0);
	assert_int_equal(c.n, 0);
	kube__cache_clear(&c);
	kube__cache_clear(&c); /* reusable, idempotent */
}

int main(void)
{
	op_log_set_level(OP_LOG_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry),
		cmocka_unit_test(test_entry_size),
		cmocka_unit_test(test_entry_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
