/* tests/e2e/agent/test_na.c - unit tests of the node agent's pure parts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "support/json.h"
#include "tests/e2e/agent/na.h"

static void test_placeholder(void **state)
{
	(void)state;
	assert_int_equal(na_image_kind("ghcr.io/x/pgop:1"), NA_IMAGE_PGOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
