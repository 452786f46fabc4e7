/* tests/unit/test_support_yaml.c - support/yaml: go-yaml v2 scalar rules,
 * multi-document streams, keys, anchors/merges, limits, error positions, and
 * the sample manifests (samples/; the CloudNativePG corpus with PGOP_SHARED_DIR). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/yaml.h"
#include "support/yaml_internal.h"
#include "samples_dirs.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

/* Parses and returns the documents array as compact JSON (owned), or NULL
 * with err filled. */
static char *parse_to_json(const char *yaml, const struct op_yaml_limits *lim, int *ret_r,
			   struct op_err *err)
{
	json_object *docs = NULL;
	int r = op_yaml_parse_docs(yaml, strlen(yaml), lim, &docs, err);
	*ret_r = r;
	if (r < 0) {
		assert_null(docs);
		return NULL;
	}
	assert_int_equal((size_t)r, json_object_array_length(docs));
	char *s = op_strdup(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(docs);
	return s;
}

static void expect_json(const char *yaml, const char *want)
{
	struct op_err err = OP_ERR_INIT;
	int r;
	_cleanup_free_ char *got = parse_to_json(yaml, NULL, &r, &err);
	if (!got)
		fail_msg("yaml %s: unexpected error %d: %s", yaml, r, err.msg);
	if (strcmp(got, want) != 0)
		fail_msg("yaml %s:\n  got  %s\n  want %s", yaml, got, want);
}

static void expect_error(const char *yaml, const struct op_yaml_limits *lim, int code,
			 const char *msg)
{
	struct op_err err = OP_ERR_INIT;
	int r;
	_cleanup_free_ char *got = parse_to_json(yaml, lim, &r, &err);
	if (got)
		fail_msg("yaml %s: expected an error, got %s", yaml, got);
	assert_int_equal(r, code);
	assert_int_equal(err.code, code);
	if (!strstr(err.msg, msg))
		fail_msg("yaml %s: message '%s' lacks '%s'", yaml, err.msg, msg);
}

/* One row: a plain scalar value and its JSON form as go-yaml v2 +
 * sigs.k8s.io/yaml produce it. */
static const struct {
	const char *yaml, *json;
} scalar_rows[] = {
	/* nulls */
	{ "v:", "[{\"v\":null}]" },
	{ "v: ~", "[{\"v\":null}]" },
	{ "v: null", "[{\"v\":null}]" },
	{ "v: Null", "[{\"v\":null}]" },
	{ "v: NULL", "[{\"v\":null}]" },
	{ "v: nULL", "[{\"v\":\"nULL\"}]" },
	/* YAML 1.1 booleans */
	{ "v: true", "[{\"v\":true}]" },
	{ "v: True", "[{\"v\":true}]" },
	{ "v: yes", "[{\"v\":true}]" },
	{ "v: Y", "[{\"v\":true}]" },
	{ "v: on", "[{\"v\":true}]" },
	{ "v: ON", "[{\"v\":true}]" },
	{ "v: no", "[{\"v\":false}]" },
	{ "v: n", "[{\"v\":false}]" },
	{ "v: Off", "[{\"v\":false}]" },
	{ "v: FALSE", "[{\"v\":false}]" },
	{ "v: tRUE", "[{\"v\":\"tRUE\"}]" },
	{ "v: yess", "[{\"v\":\"yess\"}]" },
	/* integers */
	{ "v: 0", "[{\"v\":0}]" },
	{ "v: 42", "[{\"v\":42}]" },
	{ "v: -17", "[{\"v\":-17}]" },
	{ "v: +5", "[{\"v\":5}]" },
	{ "v: 0x1F", "[{\"v\":31}]" },
	{ "v: 0X1f", "[{\"v\":31}]" },
	{ "v: -0x10", "[{\"v\":-16}]" },
	{ "v: 0o17", "[{\"v\":15}]" },
	{ "v: 0755", "[{\"v\":493}]" },
	{ "v: 0b101", "[{\"v\":5}]" },
	{ "v: -0b11", "[{\"v\":-3}]" },
	{ "v: 1_000_000", "[{\"v\":1000000}]" },
	{ "v: 9223372036854775807", "[{\"v\":9223372036854775807}]" },
	{ "v: -9223372036854775808", "[{\"v\":-9223372036854775808}]" },
	{ "v: 18446744073709551615", "[{\"v\":18446744073709551615}]" },
	{ "v: 0x", "[{\"v\":\"0x\"}]" },
	{ "v: 0xZZ", "[{\"v\":\"0xZZ\"}]" },
	{ "v: 12abc", "[{\"v\":\"12abc\"}]" },
	{ "v: +", "[{\"v\":\"+\"}]" },
	{ "v: -x", "[{\"v\":\"-x\"}]" },
	{ "v: _1", "[{\"v\":\"_1\"}]" },
	/* floats (v2's regex needs a signed exponent) */
	{ "v: 1.5", "[{\"v\":1.5}]" },
	{ "v: -0.25", "[{\"v\":-0.25}]" },
	{ "v: .5", "[{\"v\":0.5}]" },
	{ "v: +.5", "[{\"v\":0.5}]" },
	{ "v: 1.5e+3", "[{\"v\":1500}]" },
	{ "v: 1.5e-7", "[{\"v\":1.5e-7}]" },
	{ "v: 1.0e+21", "[{\"v\":1e+21}]" },
	{ "v: 123456789.125", "[{\"v\":123456789.125}]" },
	{ "v: 1.5e+17", "[{\"v\":150000000000000000}]" },
	{ "v: 111111111111111111111", "[{\"v\":1.1111111111111111e+20}]" },
	{ "v: -0.0", "[{\"v\":-0}]" },
	{ "v: 1e5", "[{\"v\":\"1e5\"}]" },
	{ "v: 1.", "[{\"v\":\"1.\"}]" },
	{ "v: 09", "[{\"v\":9}]" },
	{ "v: 1e+999", "[{\"v\":\"1e+999\"}]" },
	{ "v: 1.2.3", "[{\"v\":\"1.2.3\"}]" },
	{ "v: .", "[{\"v\":\".\"}]" },
	/* strings: timestamps, versions, quoted look-alikes, block scalars */
	{ "v: 2001-12-14", "[{\"v\":\"2001-12-14\"}]" },
	{ "v: 2001-12-14T21:59:43.10Z", "[{\"v\":\"2001-12-14T21:59:43.10Z\"}]" },
	{ "v: 16.1", "[{\"v\":16.1}]" },
	{ "v: \"16.1\"", "[{\"v\":\"16.1\"}]" },
	{ "v: 'true'", "[{\"v\":\"true\"}]" },
	{ "v: \"\"", "[{\"v\":\"\"}]" },
	{ "v: ''", "[{\"v\":\"\"}]" },
	{ "v: |\n  12\n", "[{\"v\":\"12\\n\"}]" },
	{ "v: >-\n  a\n  b\n", "[{\"v\":\"a b\"}]" },
	{ "v: 256MB", "[{\"v\":\"256MB\"}]" },
	{ "v: 10.244.0.0/16", "[{\"v\":\"10.244.0.0/16\"}]" },
	{ "v: a: b", NULL }, /* error, see test_errors */
	/* tags */
	{ "v: !!str 123", "[{\"v\":\"123\"}]" },
	{ "v: !!int \"123\"", "[{\"v\":123}]" },
	{ "v: !!float 1", "[{\"v\":1}]" },
	{ "v: !!bool \"yes\"", "[{\"v\":true}]" },
	{ "v: !!null ''", "[{\"v\":null}]" },
	{ "v: !custom 42", "[{\"v\":\"42\"}]" },
	{ "v: ! 42", "[{\"v\":\"42\"}]" },
	{ "v: !!binary aGVsbG8=", "[{\"v\":\"hello\"}]" },
	{ "v: !!timestamp 2001-12-14", "[{\"v\":\"2001-12-14\"}]" },
	{ "v: !!float 18446744073709551615", "[{\"v\":1.8446744073709552e+19}]" },
	{ "v: !!map text", "[{\"v\":\"text\"}]" },
	{ "v: .5e3", "[{\"v\":500}]" },
	{ "v: .5E-2", "[{\"v\":0.005}]" },
	{ "v: .5e", "[{\"v\":\".5e\"}]" },
	/* escapes */
	{ "v: \"tab\\there \\u00e9\"", "[{\"v\":\"tab\\there \xc3\xa9\"}]" },
};

static void test_scalars(void **state)
{
	(void)state;
	for (size_t i = 0; i < OP_ARRAY_SIZE(scalar_rows); i++)
		if (scalar_rows[i].json)
			expect_json(scalar_rows[i].yaml, scalar_rows[i].json);
}

static void test_resolve_plain_kinds(void **state)
{
	(void)state;
	struct op_yaml_scalar r;
	op_yaml_resolve_plain("18446744073709551616", 20, &r);
	assert_int_equal(r.kind, OP_YAML_FLOAT); /* past uint64: a float */
	op_yaml_resolve_plain("-9223372036854775809", 20, &r);
	assert_int_equal(r.kind, OP_YAML_FLOAT);
	op_yaml_resolve_plain("0b-101", 6, &r); /* go-yaml's own 0b fallback */
	assert_int_equal(r.kind, OP_YAML_INT);
	assert_int_equal(r.i, -5);
	op_yaml_resolve_plain(".inf", 4, &r);
	assert_int_equal(r.kind, OP_YAML_FLOAT);
	op_yaml_resolve_plain("0", 1, &r);
	assert_int_equal(r.kind, OP_YAML_INT);
	assert_int_equal(r.i, 0);
	op_yaml_resolve_plain("08", 2, &r);
	assert_int_equal(r.kind, OP_YAML_FLOAT);
	op_yaml_resolve_plain("hello", 5, &r);
	assert_int_equal(r.kind, OP_YAML_STR);
	assert_string_equal(op_yaml_kind_tag(OP_YAML_UINT), "!!int");

	char buf[OP_YAML_FLOAT_KEY_MAX];
	static const struct {
		double d;
		const char *s;
	} keys[] = {
		{ 1.5, "1.5" },	     { 0.1, "0.1" },	     { 100000, "100000" },
		{ 1e6, "1e+06" },    { 1234567, "1.234567e+06" }, { 0.0001, "0.0001" },
		{ 0.00001, "1e-05" }, { -2.5, "-2.5" },       { 1e300, ".inf" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(keys); i++) {
		op_yaml_format_float_key(keys[i].d, buf);
		assert_string_equal(buf, keys[i].s);
	}
}

static void test_keys(void **state)
{
	(void)state;
	expect_json("1: a\n0x10: b\nyes: c\n1.5: d\n\"2\": e\n",
		    "[{\"1\":\"a\",\"16\":\"b\",\"true\":\"c\",\"1.5\":\"d\",\"2\":\"e\"}]");
	/* The famous one: y and n are YAML 1.1 booleans, also as keys. */
	expect_json("y: 1\nn: 2\n\"y\": 3\n", "[{\"true\":1,\"false\":2,\"y\":3}]");
	/* Duplicate keys: last wins, first position kept. */
	expect_json("a: 1\nb: 2\na: 3\n", "[{\"a\":3,\"b\":2}]");
	/* Explicit key syntax with a scalar key. */
	expect_json("? k\n: v\n", "[{\"k\":\"v\"}]");
	expect_json(".inf: a\n-.Inf: b\n.nan: c\n1e+40: d\n",
		    "[{\".inf\":\"d\",\"-.inf\":\"b\",\".nan\":\"c\"}]"); /* 1e+40 overflows float32 */
	expect_error("~: x\n", NULL, -EINVAL, "line 1, column 1: null mapping keys");
	expect_error("a: &a {x: 1}\n*a : v\n", NULL, -EINVAL,
		     "line 2, column 1: mapping keys must be scalars, got object");
	expect_error("? [a]\n: v\n", NULL, -EINVAL, "mapping keys must be scalars, got a sequence");
	expect_error("{a: 1}: v\n", NULL, -EINVAL, "mapping keys must be scalars");
	expect_error("\"a\\0b\": 1\n", NULL, -EINVAL, "NUL");
}

static void test_multi_doc(void **state)
{
	(void)state;
	expect_json("a: 1\n---\nb: 2\n", "[{\"a\":1},{\"b\":2}]");
	/* Empty and null documents are skipped; a leading --- is fine. */
	expect_json("---\n# only a comment\n---\na: 1\n---\n~\n---\n...\n---\n- x\n",
		    "[{\"a\":1},[\"x\"]]");
	expect_json("", "[]");
	expect_json("# nothing\n", "[]");
	expect_json("--- hello\n--- 5\n", "[\"hello\",5]");
	expect_json("%YAML 1.1\n---\na: b\n", "[{\"a\":\"b\"}]");
	expect_json("[1, {a: [true, null]}, \"x\"]", "[[1,{\"a\":[true,null]},\"x\"]]");
	/* Anchors do not leak into the next document. */
	expect_error("a: &x 1\n---\nb: *x\n", NULL, -EINVAL, "line 3, column 4: unknown anchor 'x'");
}

static void test_anchors_and_merge(void **state)
{
	(void)state;
	expect_json("base: &b {x: 1, z: [2, 3]}\ncopy: *b\n",
		    "[{\"base\":{\"x\":1,\"z\":[2,3]},\"copy\":{\"x\":1,\"z\":[2,3]}}]");
	expect_json("s: &s hello\nt: *s\n", "[{\"s\":\"hello\",\"t\":\"hello\"}]");
	/* Copies keep number text and big integers exactly. */
	expect_json("f: &f [16.1, 18446744073709551615, ~]\ng: *f\n",
		    "[{\"f\":[16.1,18446744073709551615,null],\"g\":[16.1,18446744073709551615,null]}]");
	expect_json("k: &k key\n*k : v\n", "[{\"k\":\"key\",\"key\":\"v\"}]");
	/* Redefined anchors: the latest definition is used. */
	expect_json("a: &x 1\nb: &x 2\nc: *x\n", "[{\"a\":1,\"b\":2,\"c\":2}]");
	/* Merge keys, go-yaml v2 order: later keys win, earlier maps in a list win. */
	expect_json("b: &b {x: 1, w: 1}\nm:\n  <<: *b\n  w: 2\n",
		    "[{\"b\":{\"x\":1,\"w\":1},\"m\":{\"x\":1,\"w\":2}}]");
	expect_json("m:\n  w: 2\n  <<: {x: 1, w: 1}\n", "[{\"m\":{\"w\":1,\"x\":1}}]");
	expect_json("a: &a {x: 1}\nb: &b {x: 2, z: 2}\nm:\n  <<: [*a, *b]\n",
		    "[{\"a\":{\"x\":1},\"b\":{\"x\":2,\"z\":2},\"m\":{\"x\":1,\"z\":2}}]");
	expect_json("m: {!!merge <<: {x: 1}, w: 2}\n", "[{\"m\":{\"x\":1,\"w\":2}}]");
	/* A quoted "<<" is an ordinary key. */
	expect_json("m: {\"<<\": {x: 1}}\n", "[{\"m\":{\"<<\":{\"x\":1}}}]");
	expect_error("m:\n  <<: 5\n", NULL, -EINVAL, "map merge requires map");
	expect_error("m:\n  <<: [{a: 1}, 2]\n", NULL, -EINVAL, "map merge requires map");
	/* A value cannot contain its own anchor. */
	expect_error("a: &a [*a]\n", NULL, -EINVAL, "unknown anchor 'a'");
	/* Aliases are copies: the result has no shared objects. */
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	const char *y = "a: &a {x: 1}\nb: *a\n";
	assert_int_equal(op_yaml_parse_docs(y, strlen(y), NULL, &docs, &err), 1);
	json_object *a = op_json_at(json_object_array_get_idx(docs, 0), "a");
	json_object *b = op_json_at(json_object_array_get_idx(docs, 0), "b");
	assert_ptr_not_equal(a, b);
	assert_int_equal(json_object_object_length(b), 1);
	json_object_put(docs);
}

static void test_billion_laughs(void **state)
{
	(void)state;
	const char *lol = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
			  "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
			  "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
			  "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
			  "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
			  "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
			  "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
			  "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
			  "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	expect_error(lol, NULL, -EMSGSIZE, "expands past the limits (1000000 nodes");
	/* With a small node budget it stops much earlier. */
	struct op_yaml_limits lim = { .max_nodes = 500 };
	expect_error(lol, &lim, -EMSGSIZE, "line 3, column");
	/* Byte budget: a big string aliased many times. */
	struct op_buf b = OP_BUF_INIT(1u << 20);
	assert_int_equal(op_buf_adds(&b, "a: &a \""), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(op_buf_adds(&b, "xxxxxxxxxx"), 0);
	assert_int_equal(op_buf_adds(&b, "\"\nb: [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"), 0);
	struct op_yaml_limits small = { .max_bytes = 64 * 1024 };
	expect_error(op_buf_str(&b), &small, -EMSGSIZE, "65536 bytes");
	op_buf_done(&b);
	/* Depth through aliases is capped like written nesting. */
	struct op_yaml_limits shallow = { .max_depth = 4 };
	expect_json("a: &a [[1]]\n", "[{\"a\":[[1]]}]");
	expect_error("a: &a [[[1]]]\nb: [[*a]]\n", &shallow, -EMSGSIZE,
		     "line 2, column 6: alias 'a' nests deeper than 4 levels");
}

static void test_limits(void **state)
{
	(void)state;
	struct op_yaml_limits lim = { .max_depth = 3 };
	expect_error("a: {b: {c: {d: 1}}}\n", &lim, -EMSGSIZE,
		     "line 1, column 12: nesting deeper than 3 levels");
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_parse_docs("a: {b: {c: 1}}", 14, &lim, &docs, &err), 1);
	json_object_put(docs);

	/* Default depth 64: 64 nested flow sequences pass, 65 fail. */
	struct op_buf b = OP_BUF_INIT(1024);
	for (int i = 0; i < 65; i++)
		assert_int_equal(op_buf_addc(&b, '['), 0);
	for (int i = 0; i < 65; i++)
		assert_int_equal(op_buf_addc(&b, ']'), 0);
	expect_error(op_buf_str(&b), NULL, -EMSGSIZE, "nesting deeper than 64 levels");
	assert_int_equal(op_yaml_parse_docs(b.data + 1, b.len - 2, NULL, &docs, &err), 1);
	json_object_put(docs);
	op_buf_done(&b);

	/* Size cap. */
	struct op_yaml_limits tiny = { .max_bytes = 8 };
	expect_error("a: 123456789\n", &tiny, -EMSGSIZE, "too large (13 bytes, limit 8)");
	/* Node cap counts keys and values. */
	struct op_yaml_limits few = { .max_nodes = 4 };
	assert_int_equal(op_yaml_parse_docs("{a: 1, b: 2}", 12, &few, &docs, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "more than 4 nodes"));
	few.max_nodes = 5;
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_parse_docs("{a: 1, b: 2}", 12, &few, &docs, &err), 1);
	json_object_put(docs);
	/* Input need not be NUL-terminated: only len bytes are read. */
	assert_int_equal(op_yaml_parse_docs("a: 1\nb: 2", 4, NULL, &docs, &err), 1);
	assert_string_equal(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			    "[{\"a\":1}]");
	json_object_put(docs);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("a: 1\nb: c: d\n", NULL, -EINVAL,
		     "line 2, column 5: mapping values are not allowed in this context");
	expect_error("a:\n  - 1\n - 2\n", NULL, -EINVAL, "line 3, column");
	expect_error("a: [1, 2\n", NULL, -EINVAL, "line 2, column 1: did not find expected ',' or ']'");
	expect_error("a: \"unterminated\n", NULL, -EINVAL, "line 2, column 1: found unexpected end of stream");
	expect_error("a: *nope\n", NULL, -EINVAL, "line 1, column 4: unknown anchor 'nope'");
	expect_error("a: .inf\n", NULL, -EINVAL, "line 1, column 4: infinity and NaN");
	expect_error("a: !!int abc\n", NULL, -EINVAL, "cannot decode !!str `abc` as a !!int");
	expect_error("a: !!bool 1\n", NULL, -EINVAL, "cannot decode !!int `1` as a !!bool");
	expect_error("a: !!binary '@@'\n", NULL, -EINVAL, "invalid base64");
	expect_error("a: \t\x01\n", NULL, -EINVAL, "control characters are not allowed");
	expect_error("a: \xff\xfe\n", NULL, -EINVAL, "offset 3: invalid leading UTF-8 octet");
	/* A tab for indentation. */
	expect_error("a:\n\tb: 1\n", NULL, -EINVAL, "line 2, column 1");
	/* Errors in a later document name the absolute line. */
	expect_error("a: 1\n---\nb: 2\n---\nc: [\n", NULL, -EINVAL, "line 6, column 1");
	/* NULL err is allowed. */
	json_object *docs = NULL;
	assert_int_equal(op_yaml_parse_docs("[", 1, NULL, &docs, NULL), -EINVAL);
	assert_null(docs);
}

static void test_reject_duplicate_keys(void **state)
{
	(void)state;
	static const struct op_yaml_limits strict = { .reject_duplicate_keys = true };
	/* default: the last one wins, first position kept */
	expect_json("a: 1\nb: 2\na: 3\n", "[{\"a\":3,\"b\":2}]");
	expect_error("a: 1\nb: 2\na: 3\n", &strict, -EINVAL, "line 3, column 4: duplicate key \"a\"");
	expect_error("x:\n  - {k: 1, k: 2}\n", &strict, -EINVAL, "duplicate key \"k\"");
	/* 1 and "1" are the same JSON key */
	expect_error("1: a\n\"1\": b\n", &strict, -EINVAL, "duplicate key \"1\"");
	/* keys brought in by a merge do not count; scopes are per mapping */
	struct op_err err = OP_ERR_INIT;
	int r;
	_cleanup_free_ char *got = parse_to_json("b: &b {k: 1, j: 2}\nm: {<<: *b, k: 3}\n"
						 "o: {k: 4}\n---\nb: 5\n",
						 &strict, &r, &err);
	if (!got)
		fail_msg("strict parse failed: %s", err.msg);
	assert_string_equal(got, "[{\"b\":{\"k\":1,\"j\":2},\"m\":{\"k\":3,\"j\":2},"
				 "\"o\":{\"k\":4}},{\"b\":5}]");
}

static void test_yaml_or_json(void **state)
{
	(void)state;
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	const char *j = "  \n{\"a\": 1, \"b\": [true, \"yes\"]}\n";
	assert_int_equal(op_yaml_or_json_parse_docs(j, strlen(j), NULL, &docs, &err), 1);
	assert_string_equal(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			    "[{\"a\":1,\"b\":[true,\"yes\"]}]");
	json_object_put(docs);
	/* A JSON array is one document (not a list of documents). */
	assert_int_equal(op_yaml_or_json_parse_docs("[1,2]", 5, NULL, &docs, &err), 1);
	assert_string_equal(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			    "[[1,2]]");
	json_object_put(docs);
	/* JSON rules, not YAML: trailing data and single quotes are errors. */
	assert_int_equal(op_yaml_or_json_parse_docs("{} {}", 5, NULL, &docs, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid JSON at offset 3"));
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("{\"a\": 1,}", 9, NULL, &docs, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid JSON at offset 8"));
	/* Depth cap applies to JSON too. */
	struct op_yaml_limits lim = { .max_depth = 2 };
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("[[1]]", 5, &lim, &docs, &err), 1);
	json_object_put(docs);
	assert_int_equal(op_yaml_or_json_parse_docs("[[[1]]]", 7, &lim, &docs, &err), -EINVAL);
	struct op_yaml_limits tiny = { .max_bytes = 4 };
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("[1, 2]", 6, &tiny, &docs, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "JSON input too large"));
	/* Anything else is YAML. */
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("a: yes\n", 7, NULL, &docs, &err), 1);
	assert_string_equal(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			    "[{\"a\":true}]");
	json_object_put(docs);
	/* A NUL byte is not blank: "\0{" goes to YAML, which rejects it. */
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("\0{}", 3, NULL, &docs, &err), -EINVAL);
	assert_null(strstr(err.msg, "JSON"));
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_or_json_parse_docs("", 0, NULL, &docs, &err), 0);
	json_object_put(docs);
}

/* ---- every CloudNativePG sample ------------------------------------------- */

static int read_file(const char *path, struct op_buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : 0;
		}
		if (op_buf_add(out, chunk, (size_t)n) < 0) {
			close(fd);
			return -EMSGSIZE;
		}
	}
}

static size_t check_samples_in(const char *dir, size_t *clusters)
{
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	size_t files = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
			continue;
		_cleanup_free_ char *path = op_asprintf("%s/%s", dir, e->d_name);
		struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
		assert_int_equal(read_file(path, &b), 0);
		json_object *docs = NULL;
		struct op_err err = OP_ERR_INIT;
		int r = op_yaml_parse_docs(op_buf_str(&b), b.len, NULL, &docs, &err);
		if (r <= 0)
			fail_msg("%s: %d %s", path, r, err.msg);
		for (int i = 0; i < r; i++) {
			json_object *doc = json_object_array_get_idx(docs, (size_t)i);
			const char *kind = op_json_str_at(doc, "kind");
			if (!kind || !op_json_str_at(doc, "apiVersion") ||
			    !op_json_str_at(doc, "metadata.name"))
				fail_msg("%s doc %d: missing kind/apiVersion/metadata.name", path, i);
			if (strcmp(kind, "Cluster") == 0) {
				(*clusters)++;
				assert_non_null(op_json_at(doc, "spec"));
				/* Same result when fed through the sniffing entry point. */
			}
		}
		json_object *again = NULL;
		assert_int_equal(op_yaml_or_json_parse_docs(op_buf_str(&b), b.len, NULL, &again,
							    &err),
				 r);
		assert_true(json_object_equal(docs, again));
		json_object_put(again);
		json_object_put(docs);
		op_buf_done(&b);
		files++;
	}
	closedir(d);
	return files;
}

/* Every file of pgop's samples/ (and invalid/) parses; with PGOP_SHARED_DIR
 * set, every file of the CloudNativePG corpus too. */
static void test_samples_parse(void **state)
{
	(void)state;
	size_t clusters = 0;
	size_t files = check_samples_in(REPO_SAMPLES_DIR, &clusters);
	files += check_samples_in(REPO_INVALID_SAMPLES_DIR, &clusters);
	assert_int_equal(clusters, REPO_SAMPLE_CLUSTERS + REPO_INVALID_SAMPLE_CLUSTERS);
	/* one Cluster, Backup, ScheduledBackup or ObjectStore per file */
	assert_int_equal(files, clusters + REPO_SAMPLE_OTHERS + REPO_INVALID_SAMPLE_OTHERS);
	const char *shared = samples_shared_dir();
	if (!shared)
		return;
	_cleanup_free_ char *cnpg = op_asprintf("%s/samples/cnpg", shared);
	_cleanup_free_ char *dc = op_asprintf("%s/samples/cnpg/dc", shared);
	clusters = 0;
	files = check_samples_in(cnpg, &clusters);
	files += check_samples_in(dc, &clusters);
	assert_true(clusters >= CNPG_SAMPLE_CLUSTERS_MIN);
	assert_true(clusters >= files);
	print_message("parsed %zu CloudNativePG sample files, %zu Cluster documents\n", files,
		      clusters);
}

/* Values of one sample come out with the right JSON types. */
static void test_sample_values(void **state)
{
	(void)state;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	assert_int_equal(read_file(REPO_SAMPLES_DIR "/cluster-custom-parameters.yaml", &b), 0);
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_parse_docs(op_buf_str(&b), b.len, NULL, &docs, &err), 1);
	json_object *cluster = json_object_array_get_idx(docs, 0);
	assert_string_equal(op_json_str_at(cluster, "kind"), "Cluster");
	int64_t instances = 0;
	json_object *spec = op_json_at(cluster, "spec");
	assert_int_equal(op_json_get_i64(spec, "instances", "spec", &instances, &err), 1);
	assert_int_equal(instances, 2);
	/* Quoted numbers stay strings, units stay strings. */
	json_object *params = op_json_at(cluster, "spec.postgresql.parameters");
	const char *sb = NULL;
	assert_int_equal(op_json_get_str(params, "shared_buffers", "", &sb, &err), 1);
	assert_string_equal(sb, "256MB");
	const char *max = NULL;
	assert_int_equal(op_json_get_str(params, "pg_stat_statements.max", "", &max, &err), 1);
	assert_string_equal(max, "5000");
	assert_true(json_object_is_type(op_json_at(params, "max_connections"), json_type_string));
	json_object *hba = op_json_at(cluster, "spec.postgresql.pg_hba");
	assert_true(json_object_is_type(hba, json_type_array));
	assert_int_equal(json_object_array_length(hba), 2);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(hba, 0)),
			    "hostssl app app 10.0.0.0/8 scram-sha-256");
	json_object_put(docs);
	op_buf_done(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_resolve_plain_kinds),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_multi_doc),
		cmocka_unit_test(test_anchors_and_merge),
		cmocka_unit_test(test_billion_laughs),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_reject_duplicate_keys),
		cmocka_unit_test(test_yaml_or_json),
		cmocka_unit_test(test_samples_parse),
		cmocka_unit_test(test_sample_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
