/* tests/unit/test_support_yaml_emit.c - support/yaml_emit: canonical YAML
 * (sorted keys, quoting of ambiguous strings, literal blocks), round trip
 * through support/yaml, output cap and depth cap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/yaml.h"
#include "support/yaml_emit.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

/* ---- YAML emitter -------------------------------------------------------- */

static void test_yaml_emit_roundtrip(void **state)
{
	(void)state;
	static const char *const tricky[] = { "true", "no", "On", "1", "-1", "1.5", ".5", "",
					      "null", "~", "a: b", "# x", "multi\nline\n",
					      "trailing\n", "x-y", "@at", "'q'", "*star", "inf",
					      /* our reader's underscores: -8, 2, 7 */
					      "-_8", "+0b1_0", "0_7" };
	_cleanup_(op_json_putp) json_object *o = json_object_new_object();
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < OP_ARRAY_SIZE(tricky); i++)
		json_object_array_add(a, json_object_new_string(tricky[i]));
	json_object_object_add(o, "strings", a);
	json_object_object_add(o, "int", json_object_new_int64(-5));
	json_object_object_add(o, "dbl", json_object_new_double(2.0));
	json_object_object_add(o, "bool", json_object_new_boolean(1));
	json_object_object_add(o, "nul", NULL);
	json_object_object_add(o, "emptyobj", json_object_new_object());
	json_object_object_add(o, "emptyarr", json_object_new_array());
	json_object_object_add(o, "b-key", json_object_new_string("second"));
	json_object_object_add(o, "a-key", json_object_new_string("first"));

	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_FILE);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(o, &out, &err), 0);
	const char *text = op_buf_str(&out);
	assert_true(strncmp(text, "---\n", 4) == 0);
	/* keys sorted */
	assert_true(strstr(text, "a-key:") < strstr(text, "b-key:"));
	assert_non_null(strstr(text, "emptyobj: {}"));
	assert_non_null(strstr(text, "emptyarr: []"));

	json_object *docs = NULL;
	assert_int_equal(op_yaml_parse_docs(text, out.len, NULL, &docs, &err), 1);
	assert_true(json_object_equal(o, json_object_array_get_idx(docs, 0)));
	json_object_put(docs);
	op_buf_done(&out);
}

static void test_yaml_emit_cap(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = json_object_new_object();
	json_object_object_add(o, "k", json_object_new_string("0123456789012345678901234567890"));
	struct op_buf out = OP_BUF_INIT(16);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(o, &out, &err), -EMSGSIZE);
	assert_int_equal(out.len, 0);
	op_buf_done(&out);

	/* too deep to render: the buffer keeps what it had */
	json_object *deep = json_object_new_array(), *cur = deep;
	for (int i = 0; i < OP_YAML_EMIT_MAX_DEPTH + 2; i++) {
		json_object *next = json_object_new_array();
		json_object_array_add(cur, next);
		cur = next;
	}
	struct op_buf keep = OP_BUF_INIT(OP_BUF_MAX_FILE);
	assert_int_equal(op_buf_adds(&keep, "prefix"), 0);
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(deep, &keep, &err), -ELOOP);
	assert_string_equal(op_buf_str(&keep), "prefix");
	op_buf_done(&keep);
	json_object_put(deep);
}

static void test_yaml_emit_exact(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	const char *json = "{\"z\":[1,\"yes\",2.5],\"a\":{\"s\":\"two\\nlines\",\"n\":null}}";
	assert_int_equal(op_json_parse(json, strlen(json), OP_JSON_MAX_DEPTH, &o, &err), 0);
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_buf_adds(&out, "# head\n"), 0);
	assert_int_equal(op_yaml_emit(o, &out, &err), 0);
	assert_string_equal(op_buf_str(&out), "# head\n---\na:\n  'n': null\n  s: |-\n    two\n"
					      "    lines\nz:\n- 1\n- 'yes'\n- 2.5\n");
	op_buf_done(&out);
}

/* Values the loader can produce that are hard to print: uint64 past
 * INT64_MAX, NUL and control bytes, the merge key as a string, non-UTF-8. */
static void test_yaml_emit_edge_values(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *o = json_object_new_object();
	json_object_object_add(o, "<<", json_object_new_string("<<"));
	json_object_object_add(o, "big", json_object_new_uint64(18446744073709551615ULL));
	json_object_object_add(o, "nul", json_object_new_string_len("a\0b\x01c\r\n", 7));
	json_object_object_add(o, "sp", json_object_new_string("  lead\ntrail  \n"));
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(o, &out, &err), 0);
	assert_non_null(strstr(op_buf_str(&out), "big: 18446744073709551615\n"));
	json_object *docs = NULL;
	if (op_yaml_parse_docs(op_buf_str(&out), out.len, NULL, &docs, &err) != 1)
		fail_msg("%s\n%s", err.msg, op_buf_str(&out));
	json_object *back = json_object_array_get_idx(docs, 0);
	assert_string_equal(op_json_str_at(back, "<<"), "<<");
	assert_int_equal(json_object_get_string_len(json_object_object_get(back, "nul")), 7);
	assert_memory_equal(json_object_get_string(json_object_object_get(back, "nul")),
			    "a\0b\x01c\r\n", 7);
	assert_true(json_object_equal(o, back));
	json_object_put(docs);
	op_buf_done(&out);

	/* bytes that are not UTF-8: -EINVAL, the buffer as it was */
	_cleanup_(op_json_putp) json_object *bad = json_object_new_object();
	json_object_object_add(bad, "k", json_object_new_string("\xf9\xac"));
	struct op_buf keep = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_buf_adds(&keep, "x"), 0);
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(bad, &keep, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "UTF-8"));
	assert_string_equal(op_buf_str(&keep), "x");
	/* a UTF-8 encoded surrogate (U+DC7C), which libyaml's own check lets
	 * through and its reader refuses: refused here too */
	json_object_object_add(bad, "k", json_object_new_string("hel\xed\xb1\xbc"));
	err = OP_ERR_INIT;
	assert_int_equal(op_yaml_emit(bad, &keep, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "UTF-8"));
	assert_string_equal(op_buf_str(&keep), "x");
	op_buf_done(&keep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_emit_roundtrip),
		cmocka_unit_test(test_yaml_emit_cap),
		cmocka_unit_test(test_yaml_emit_exact),
		cmocka_unit_test(test_yaml_emit_edge_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
