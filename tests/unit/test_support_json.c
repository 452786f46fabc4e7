/* tests/unit/test_support_json.c - support/json: bounded parsing with
 * offsets, typed getters with field paths, dotted lookups, JSON Pointer
 * escaping, ownership of set/append, the canonical (key-sorted) copy. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

static json_object *parse_ok(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = op_json_parse(s, strlen(s), 0, &o, &err);
	if (r != 0)
		fail_msg("parse %s: %d %s", s, r, err.msg);
	return o;
}

static void test_parse_ok(void **state)
{
	(void)state;
	json_object *o = parse_ok("  {\"a\": [1, 2.5, \"x\", true, null]}\n\t ");
	assert_true(json_object_is_type(o, json_type_object));
	json_object_put(o);
	/* Bare scalars, including a number that ends the input. */
	o = parse_ok("5");
	assert_int_equal(json_object_get_int64(o), 5);
	json_object_put(o);
	o = parse_ok("-0.5");
	assert_true(json_object_get_double(o) == -0.5);
	json_object_put(o);
	o = parse_ok("\"s\"");
	assert_string_equal(json_object_get_string(o), "s");
	json_object_put(o);
	o = parse_ok("null"); /* JSON null is a NULL object */
	assert_null(o);
	/* Embedded NUL via \u0000 keeps its length. */
	o = parse_ok("\"a\\u0000b\"");
	assert_int_equal(json_object_get_string_len(o), 3);
	json_object_put(o);
	/* Only len bytes are read. */
	json_object *p = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse("[1]garbage", 3, 0, &p, &err), 0);
	assert_int_equal(json_object_array_length(p), 1);
	json_object_put(p);
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		const char *msg;
	} bad[] = {
		{ "", "unexpected end of input" },
		{ "   ", "invalid JSON" },
		{ "{\"a\": 1", "offset 7: unexpected end of data" },
		{ "[1, 2] x", "invalid JSON at offset 7" },
		{ "[1,]", "invalid JSON at offset 3" },
		{ "{\"a\":1,}", "invalid JSON at offset 7" },
		{ "{a: 1}", "invalid JSON at offset 1" },
		{ "[1] [2]", "invalid JSON at offset 4" },
		{ "NaN", "NaN and Infinity are not numbers" },
		{ "[1, -Infinity]", "NaN and Infinity are not numbers" },
		{ "tru", "invalid JSON" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		json_object *o = (json_object *)0x1;
		struct op_err err = OP_ERR_INIT;
		int r = op_json_parse(bad[i].in, strlen(bad[i].in), 0, &o, &err);
		assert_int_equal(r, -EINVAL);
		assert_ptr_equal(o, (json_object *)0x1); /* untouched */
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].in, err.msg, bad[i].msg);
	}
	/* A NUL byte after the value is not whitespace. */
	json_object *z = NULL;
	struct op_err ze = OP_ERR_INIT;
	assert_int_equal(op_json_parse("[1]\0", 4, 0, &z, &ze), -EINVAL);
	/* NULL data with zero length is an empty document. */
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(NULL, 0, 0, &o, &err), -EINVAL);
}

static void test_parse_depth(void **state)
{
	(void)state;
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	/* max_depth counts nested containers: 2 allows [[1]], not [[[1]]]. */
	assert_int_equal(op_json_parse("[[1]]", 5, 2, &o, &err), 0);
	json_object_put(o);
	assert_int_equal(op_json_parse("[[[1]]]", 7, 2, &o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nesting too deep"));
	/* Default (0) is OP_JSON_MAX_DEPTH. */
	struct op_buf b = OP_BUF_INIT(4096);
	for (int i = 0; i < OP_JSON_MAX_DEPTH; i++)
		assert_int_equal(op_buf_addc(&b, '['), 0);
	for (int i = 0; i < OP_JSON_MAX_DEPTH; i++)
		assert_int_equal(op_buf_addc(&b, ']'), 0);
	err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(b.data, b.len, 0, &o, &err), 0);
	json_object_put(o);
	op_buf_reset(&b);
	for (int i = 0; i <= OP_JSON_MAX_DEPTH; i++)
		assert_int_equal(op_buf_addc(&b, '{') == 0 && op_buf_adds(&b, "\"k\":") == 0, 1);
	assert_int_equal(op_buf_adds(&b, "1"), 0);
	for (int i = 0; i <= OP_JSON_MAX_DEPTH; i++)
		assert_int_equal(op_buf_addc(&b, '}'), 0);
	assert_int_equal(op_json_parse(b.data, b.len, 0, &o, &err), -EINVAL);
	op_buf_done(&b);
}

static void test_getters(void **state)
{
	(void)state;
	json_object *root = parse_ok("{\"spec\": {\"instances\": 3, \"name\": \"c\", \"flag\": true,"
				     " \"f\": 3.0, \"half\": 2.5, \"nul\": null, \"arr\": [1],"
				     " \"obj\": {}, \"big\": 9223372036854775808,"
				     " \"max\": 9223372036854775807, \"neg\": -4}}");
	json_object *spec = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_get_obj(root, "spec", "", &spec, &err), 1);

	int64_t i = 0;
	assert_int_equal(op_json_get_i64(spec, "instances", "spec", &i, &err), 1);
	assert_int_equal(i, 3);
	assert_int_equal(op_json_get_i64(spec, "f", "spec", &i, &err), 1); /* 3.0 is an integer */
	assert_int_equal(i, 3);
	assert_int_equal(op_json_get_i64(spec, "max", "spec", &i, &err), 1);
	assert_true(i == INT64_MAX);
	assert_int_equal(op_json_get_i64(spec, "neg", "spec", &i, &err), 1);
	assert_int_equal(i, -4);
	const char *s = NULL;
	assert_int_equal(op_json_get_str(spec, "name", "spec", &s, &err), 1);
	assert_string_equal(s, "c");
	bool b = false;
	assert_int_equal(op_json_get_bool(spec, "flag", "spec", &b, &err), 1);
	assert_true(b);
	json_object *arr = NULL;
	assert_int_equal(op_json_get_arr(spec, "arr", "spec", &arr, &err), 1);
	assert_int_equal(json_object_array_length(arr), 1);
	assert_false(op_err_isset(&err));

	/* Absent and null: 0, output untouched. */
	i = 77;
	assert_int_equal(op_json_get_i64(spec, "missing", "spec", &i, &err), 0);
	assert_int_equal(op_json_get_i64(spec, "nul", "spec", &i, &err), 0);
	assert_int_equal(i, 77);
	assert_int_equal(op_json_get_str(NULL, "x", "", &s, &err), 0);
	assert_int_equal(op_json_get_str(arr, "x", "", &s, &err), 0); /* not an object */
	assert_false(op_err_isset(&err));

	/* Wrong types name the full path. */
	static const struct {
		const char *key, *msg;
		int which;
	} wrong[] = {
		{ "name", "spec.name: expected integer, got string", 0 },
		{ "half", "spec.half: expected integer, got number", 0 },
		{ "big", "spec.big: integer out of range", 0 },
		{ "instances", "spec.instances: expected string, got integer", 1 },
		{ "arr", "spec.arr: expected boolean, got array", 2 },
		{ "obj", "spec.obj: expected array, got object", 3 },
		{ "flag", "spec.flag: expected object, got boolean", 4 },
	};
	for (size_t k = 0; k < OP_ARRAY_SIZE(wrong); k++) {
		struct op_err e = OP_ERR_INIT;
		json_object *x = NULL;
		int r = 0;
		switch (wrong[k].which) {
		case 0: r = op_json_get_i64(spec, wrong[k].key, "spec", &i, &e); break;
		case 1: r = op_json_get_str(spec, wrong[k].key, "spec", &s, &e); break;
		case 2: r = op_json_get_bool(spec, wrong[k].key, "spec", &b, &e); break;
		case 3: r = op_json_get_arr(spec, wrong[k].key, "spec", &x, &e); break;
		case 4: r = op_json_get_obj(spec, wrong[k].key, "spec", &x, &e); break;
		}
		assert_int_equal(r, -EINVAL);
		assert_string_equal(e.msg, wrong[k].msg);
	}
	/* Root path: no leading dot. */
	struct op_err e = OP_ERR_INIT;
	assert_int_equal(op_json_get_str(root, "spec", "", &s, &e), -EINVAL);
	assert_string_equal(e.msg, "spec: expected string, got object");
	e = OP_ERR_INIT;
	assert_int_equal(op_json_get_str(root, "spec", NULL, &s, &e), -EINVAL);
	assert_string_equal(e.msg, "spec: expected string, got object");
	json_object_put(root);
}

/* The value-level integer rule shared by op_json_get_i64, api/ and webhooks/. */
static void test_to_i64(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int rc;
		int64_t want;
	} rows[] = {
		{ "7", 1, 7 },
		{ "-9223372036854775808", 1, INT64_MIN },
		{ "9223372036854775807", 1, INT64_MAX },
		{ "18446744073709551615", -ERANGE, 0 }, /* json-c would clamp it */
		{ "3.0", 1, 3 },
		{ "-2e3", 1, -2000 },
		{ "3.5", 0, 0 },
		{ "1e300", 0, 0 },
		{ "\"3\"", 0, 0 },
		{ "true", 0, 0 },
		{ "null", 0, 0 },
		{ "[1]", 0, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		json_object *v = NULL;
		assert_int_equal(op_json_parse(rows[i].json, strlen(rows[i].json), 4, &v, NULL), 0);
		int64_t got = 42;
		int r = op_json_to_i64(v, &got);
		if (r != rows[i].rc)
			fail_msg("%s: rc %d want %d", rows[i].json, r, rows[i].rc);
		assert_true(got == (rows[i].rc == 1 ? rows[i].want : 42));
		json_object_put(v);
	}
}

static void test_dotted_and_paths(void **state)
{
	(void)state;
	json_object *root = parse_ok("{\"metadata\": {\"name\": \"c1\", \"labels\": {\"a\": 1}},"
				     " \"x\": [1]}");
	assert_string_equal(op_json_str_at(root, "metadata.name"), "c1");
	assert_null(op_json_str_at(root, "metadata.labels.a")); /* not a string */
	assert_non_null(op_json_at(root, "metadata.labels.a"));
	assert_null(op_json_at(root, "metadata.nope"));
	assert_null(op_json_at(root, "x.0")); /* arrays are not indexed */
	assert_ptr_equal(op_json_at(root, ""), root);
	assert_null(op_json_at(NULL, "a"));
	json_object_put(root);

	struct op_buf b = OP_BUF_INIT(64);
	assert_int_equal(op_json_path_join(&b, "", "spec"), 0);
	assert_string_equal(op_buf_str(&b), "spec");
	op_buf_reset(&b);
	assert_int_equal(op_json_path_join(&b, "spec.storage", "size"), 0);
	assert_string_equal(op_buf_str(&b), "spec.storage.size");
	op_buf_reset(&b);
	assert_int_equal(op_json_path_join(&b, "spec", NULL), 0);
	assert_string_equal(op_buf_str(&b), "spec");
	op_buf_reset(&b);
	assert_int_equal(op_json_pointer_escape(&b, "a/b~c"), 0);
	assert_string_equal(op_buf_str(&b), "a~1b~0c");
	op_buf_reset(&b);
	assert_int_equal(op_json_pointer_escape(&b, "~1"), 0);
	assert_string_equal(op_buf_str(&b), "~01");
	op_buf_reset(&b);
	assert_int_equal(op_json_pointer_escape(&b, "cnpg.io/cluster"), 0);
	assert_string_equal(op_buf_str(&b), "cnpg.io~1cluster");
	op_buf_done(&b);
	struct op_buf tiny = OP_BUF_INIT(3);
	assert_int_equal(op_json_pointer_escape(&tiny, "//"), -EMSGSIZE);
	op_buf_done(&tiny);
}

/* op_jset/op_jpush take ownership (ASan's leak check proves nothing leaks);
 * there is no failure to test: json-c failing to allocate aborts. */
static void test_set_append_ownership(void **state)
{
	(void)state;
	json_object *o = json_object_new_object();
	assert_ptr_equal(op_jset(o, "k", json_object_new_string("v")), o);
	assert_ptr_equal(op_jset(o, "k", json_object_new_int(2)), o); /* replaces */
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"k\":2}");
	json_object *a = json_object_new_array();
	assert_ptr_equal(op_jpush(a, json_object_new_int(1)), a);
	assert_ptr_equal(op_jpush(a, NULL), a); /* JSON null */
	assert_string_equal(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN), "[1,null]");
	assert_string_equal(op_json_type_name(a), "array");
	assert_string_equal(op_json_type_name(NULL), "null");
	json_object_put(a);
	json_object_put(o);
}

/* the builders: values, chaining, replacement, op_jchild */
static void test_builders(void **state)
{
	(void)state;
	static const char *const v[] = {"a", "b", NULL};
	json_object *o = op_jobj();
	op_jsets(op_jset(o, "n", op_jint(-3)), "s", NULL); /* NULL string -> "" */
	op_jset(o, "b", op_jbool(true));
	op_jset(o, "d", op_jdouble(1.5));
	op_jset(o, "z", NULL);
	op_jset(o, "v", op_jstrv(v));
	op_jset(o, "e", op_jstrv(NULL));
	op_jset(o, "l", op_jstrn("abcdef", 3));
	op_jpush(op_jpush(json_object_object_get(o, "e"), op_jstr("x")), NULL);
	op_jsets(op_jchild(op_jchild(o, "c"), "k"), "x", "y");
	op_jsets(op_jchild(o, "c"), "w", "1"); /* the existing child */
	op_jset(o, "n", op_jint(4)); /* replaces */
	op_jsets(op_jchild(o, "s"), "t", "u"); /* a non-object member becomes an object */
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			    "{\"n\":4,\"s\":{\"t\":\"u\"},\"b\":true,\"d\":1.5,\"z\":null,"
			    "\"v\":[\"a\",\"b\"],\"e\":[\"x\",null],\"l\":\"abc\","
			    "\"c\":{\"k\":{\"x\":\"y\"},\"w\":\"1\"}}");
	json_object_put(o);
}

/* op_json_key_*: one member, NULL-safe, the type must match */
static void test_key_accessors(void **state)
{
	json_object *o = json_tokener_parse("{\"s\":\"x\",\"t\":true,\"f\":false,\"n\":7,"
					    "\"d\":3.5,\"big\":99999999999999999999}");
	assert_non_null(o);
	assert_string_equal(op_json_key_str(o, "s"), "x");
	assert_null(op_json_key_str(o, "n"));
	assert_null(op_json_key_str(o, "missing"));
	assert_null(op_json_key_str(NULL, "s"));
	assert_true(op_json_key_bool(o, "t"));
	assert_false(op_json_key_bool(o, "f"));
	assert_false(op_json_key_bool(o, "s"));
	assert_false(op_json_key_bool(NULL, "t"));
	int64_t v = 0;
	assert_int_equal(op_json_key_i64(o, "n", &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(op_json_key_i64(o, "d", &v), 0);
	assert_int_equal(op_json_key_i64(o, "s", &v), 0);
	assert_int_equal(op_json_key_i64(o, "missing", &v), 0);
	assert_true(op_json_key_i64(o, "big", &v) < 0);
	json_object *arr = json_tokener_parse("[1]");
	assert_null(op_json_key_str(arr, "s")); /* not an object */
	json_object_put(arr);
	json_object_put(o);
}

/* op_json_sorted: keys in byte order at every level, arrays kept in order,
 * scalars copied; equal values built in other orders serialize alike. */
static void test_sorted(void **state)
{
	(void)state;
	json_object *a = parse_ok("{\"b\":{\"z\":1,\"a\":[{\"y\":null,\"x\":2.5}]},"
				  "\"a\":\"s\",\"B\":true}");
	json_object *b = parse_ok("{\"B\":true,\"a\":\"s\",\"b\":{\"a\":[{\"x\":2.5,"
				  "\"y\":null}],\"z\":1}}");
	json_object *sa = op_json_sorted(a), *sb = op_json_sorted(b);
	const char *ta = json_object_to_json_string_ext(sa, JSON_C_TO_STRING_PLAIN);
	assert_string_equal(ta, "{\"B\":true,\"a\":\"s\",\"b\":{\"a\":[{\"x\":2.5,"
				"\"y\":null}],\"z\":1}}");
	assert_string_equal(ta, json_object_to_json_string_ext(sb, JSON_C_TO_STRING_PLAIN));
	assert_true(json_object_equal(sa, a));
	assert_ptr_not_equal(sa, a); /* a copy: the source is untouched */
	assert_string_equal(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
			    "{\"b\":{\"z\":1,\"a\":[{\"y\":null,\"x\":2.5}]},\"a\":\"s\","
			    "\"B\":true}");
	json_object *arr = parse_ok("[3,1,2]"), *sarr = op_json_sorted(arr);
	assert_string_equal(json_object_to_json_string_ext(sarr, JSON_C_TO_STRING_PLAIN),
			    "[3,1,2]");
	assert_null(op_json_sorted(NULL));
	json_object_put(sarr);
	json_object_put(arr);
	json_object_put(sa);
	json_object_put(sb);
	json_object_put(a);
	json_object_put(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_depth),
		cmocka_unit_test(test_getters),
		cmocka_unit_test(test_to_i64),
		cmocka_unit_test(test_dotted_and_paths),
		cmocka_unit_test(test_key_accessors),
		cmocka_unit_test(test_set_append_ownership),
		cmocka_unit_test(test_builders),
		cmocka_unit_test(test_sorted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
