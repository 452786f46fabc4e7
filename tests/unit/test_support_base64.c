/* tests/unit/test_support_base64.c - support/base64: RFC 4648 vectors,
 * round trips, strict rejects and the relaxing flags. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/base64.h"

#include <cmocka.h>
/* Library memory comes from the real allocator (leaks are ASan's job). */
#undef malloc
#undef calloc
#undef realloc
#undef free

/* RFC 4648 section 10 test vectors. */
static const struct {
	const char *plain, *b64, *url;
} vectors[] = {
	{ "", "", "" },		       { "f", "Zg==", "Zg" },
	{ "fo", "Zm8=", "Zm8" },       { "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg==", "Zm9vYg" }, { "fooba", "Zm9vYmE=", "Zm9vYmE" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
};

static void test_rfc_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < OP_ARRAY_SIZE(vectors); i++) {
		size_t n = strlen(vectors[i].plain);
		_cleanup_free_ char *enc = op_base64_encode_str(vectors[i].plain, n, 0);
		assert_string_equal(enc, vectors[i].b64);
		assert_int_equal(op_base64_encoded_len(n, 0), strlen(vectors[i].b64));
		_cleanup_free_ char *url = op_base64_encode_str(vectors[i].plain, n, OP_BASE64_URL);
		assert_string_equal(url, vectors[i].url);
		assert_int_equal(op_base64_encoded_len(n, OP_BASE64_URL), strlen(vectors[i].url));

		char *dec = NULL;
		size_t dlen = 99;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(op_base64_decode_str(vectors[i].b64, strlen(vectors[i].b64), 0,
						      &dec, &dlen, &err),
				 0);
		assert_int_equal(dlen, n);
		assert_string_equal(dec, vectors[i].plain);
		free(dec);
		/* URL flavour: unpadded and padded both accepted. */
		assert_int_equal(op_base64_decode_str(vectors[i].url, strlen(vectors[i].url),
						      OP_BASE64_URL, &dec, &dlen, &err),
				 0);
		assert_string_equal(dec, vectors[i].plain);
		free(dec);
		assert_int_equal(op_base64_decode_str(vectors[i].b64, strlen(vectors[i].b64),
						      OP_BASE64_URL, &dec, &dlen, &err),
				 0);
		assert_string_equal(dec, vectors[i].plain);
		free(dec);
	}
}

static void test_round_trip_binary(void **state)
{
	(void)state;
	unsigned char data[1024];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + (i >> 3));
	for (size_t n = 0; n <= 70; n++) {
		for (unsigned flags = 0; flags <= OP_BASE64_URL; flags += OP_BASE64_URL) {
			_cleanup_free_ char *enc = op_base64_encode_str(data, n, flags);
			char *dec = NULL;
			size_t dlen = 0;
			struct op_err err = OP_ERR_INIT;
			assert_int_equal(op_base64_decode_str(enc, strlen(enc), flags, &dec, &dlen,
							      &err),
					 0);
			assert_int_equal(dlen, n);
			assert_memory_equal(dec, data, n);
			assert_int_equal(dec[n], '\0');
			free(dec);
		}
	}
	/* All 256 byte values, including NUL and the '+' '/' characters. */
	_cleanup_free_ char *enc = op_base64_encode_str(data, sizeof(data), 0);
	assert_non_null(strchr(enc, '+'));
	assert_non_null(strchr(enc, '/'));
	_cleanup_free_ char *url = op_base64_encode_str(data, sizeof(data), OP_BASE64_URL);
	assert_null(strchr(url, '+'));
	assert_null(strchr(url, '/'));
	assert_non_null(strchr(url, '-'));
	for (int k = 0; k < 2; k++) {
		char *dec = NULL;
		size_t dlen = 0;
		struct op_err err = OP_ERR_INIT;
		const char *in = k ? url : enc;
		assert_int_equal(op_base64_decode_str(in, strlen(in), k ? OP_BASE64_URL : 0, &dec,
						      &dlen, &err),
				 0);
		assert_int_equal(dlen, sizeof(data));
		assert_memory_equal(dec, data, sizeof(data));
		free(dec);
	}
}

static void test_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		unsigned flags;
		const char *msg;
	} bad[] = {
		{ "Zm9v!", 0, "offset 4: unexpected '!'" },
		{ "Zm 9v", 0, "offset 2: unexpected ' '" },
		{ "Zm9", 0, "missing padding" },
		{ "Z", 0, "truncated" },
		{ "Zg=", 0, "incomplete padding" },
		{ "Zg===", 0, "offset 4: unexpected '='" },
		{ "=Zg=", 0, "offset 0: unexpected '='" },
		{ "Zg==Zg==", 0, "offset 4: unexpected 'Z'" },
		{ "Zh==", 0, "non-zero padding bits" },
		{ "Zm9vYg\n==", 0, "offset 6" },
		{ "Zm9v\n\n", 0, "offset 4" },
		{ "Zm-v", 0, "unexpected '-'" },
		{ "Zm+v", OP_BASE64_URL, "unexpected '+'" },
		{ "Zm9v\t", 0, "byte 0x09" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		char *dec = (char *)0x1;
		size_t dlen = 77;
		struct op_err err = OP_ERR_INIT;
		int r = op_base64_decode_str(bad[i].in, strlen(bad[i].in), bad[i].flags, &dec,
					     &dlen, &err);
		assert_int_equal(r, -EINVAL);
		assert_ptr_equal(dec, (char *)0x1); /* untouched on failure */
		assert_int_equal(dlen, 77);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("input %zu '%s': message '%s' lacks '%s'", i, bad[i].in, err.msg,
				 bad[i].msg);
	}
}

static void test_whitespace_policy(void **state)
{
	(void)state;
	char *dec = NULL;
	struct op_err err = OP_ERR_INIT;
	/* One trailing newline (LF or CRLF) is always fine. */
	assert_int_equal(op_base64_decode_str("Zm9v\n", 5, 0, &dec, NULL, &err), 0);
	assert_string_equal(dec, "foo");
	free(dec);
	assert_int_equal(op_base64_decode_str("Zm9v\r\n", 6, 0, &dec, NULL, &err), 0);
	assert_string_equal(dec, "foo");
	free(dec);
	/* Wrapped lines need OP_BASE64_IGNORE_NEWLINES. */
	const char *wrapped = "Zm9v\r\nYmFy\nYg==\n";
	assert_int_equal(op_base64_decode_str(wrapped, strlen(wrapped), 0, &dec, NULL, &err),
			 -EINVAL);
	err = OP_ERR_INIT;
	assert_int_equal(op_base64_decode_str(wrapped, strlen(wrapped), OP_BASE64_IGNORE_NEWLINES,
					      &dec, NULL, &err),
			 0);
	assert_string_equal(dec, "foobarb");
	free(dec);
	/* Spaces are never skipped. */
	assert_int_equal(op_base64_decode_str("Zm9v YmFy", 9, OP_BASE64_IGNORE_NEWLINES, &dec,
					      NULL, &err),
			 -EINVAL);
}

static void test_buf_caps(void **state)
{
	(void)state;
	struct op_buf b = OP_BUF_INIT(8);
	assert_int_equal(op_base64_encode("abcdef", 6, 0, &b), 0);
	assert_string_equal(op_buf_str(&b), "YWJjZGVm");
	/* Appending passes the cap: fails and frees. */
	assert_int_equal(op_base64_encode("a", 1, 0, &b), -EMSGSIZE);
	assert_null(b.data);
	assert_int_equal(b.len, 0);

	/* Decode appends to what is there and returns the count. */
	struct op_buf d = OP_BUF_INIT(5);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_buf_adds(&d, "x:"), 0);
	assert_int_equal(op_base64_decode("Zm9v", 4, 0, &d, &err), 3);
	assert_string_equal(op_buf_str(&d), "x:foo");
	assert_int_equal(op_base64_decode("YQ==", 4, 0, &d, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "cap"));
	op_buf_done(&d);

	/* Decoded NUL bytes survive with the right length. */
	size_t len = 0;
	char *dec = NULL;
	err = OP_ERR_INIT;
	assert_int_equal(op_base64_decode_str("AGEA", 4, 0, &dec, &len, &err), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(dec, "\0a\0", 3);
	free(dec);
	/* NULL input is an empty input. */
	assert_int_equal(op_base64_decode_str(NULL, 0, 0, &dec, &len, &err), 0);
	assert_int_equal(len, 0);
	assert_string_equal(dec, "");
	free(dec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_vectors),
		cmocka_unit_test(test_round_trip_binary),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_whitespace_policy),
		cmocka_unit_test(test_buf_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
