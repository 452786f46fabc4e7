/* tests/unit/test_json.h - JSON text parsed for a test (json-c through
 * support/json.h, depth 64); the test fails on a parse error. Include after
 * cmocka.h. The object returned is owned by the caller (json_object_put). */
#ifndef PGOP_TEST_JSON_H
#define PGOP_TEST_JSON_H

#include <string.h>

#include "support/json.h"

static json_object *parse(const char *txt)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_json_parse(txt, strlen(txt), 64, &o, &err), 0);
	return o;
}

#endif
