/* support/base64.h - base64 (RFC 4648) for Secret data, caBundle and JWTs.
 *
 * Encoding always uses the standard alphabet with '=' padding unless
 * OP_BASE64_URL is given (then "-_" and no padding, as in JWTs).
 *
 * Decoding is strict by default:
 *   - only the alphabet's 64 characters and '=' padding at the end;
 *   - the length must be a multiple of 4 (padding required);
 *   - the unused low bits of the last character must be zero (canonical form);
 *   - the only whitespace tolerated is ONE trailing "\n" or "\r\n" (what
 *     `base64 file` and many editors leave at the end of a file).
 * Flags relax this:
 *   OP_BASE64_IGNORE_NEWLINES  skip '\r' and '\n' anywhere (PEM/MIME line
 *                              wrapping; Go's base64.StdEncoding does this,
 *                              so Kubernetes accepts wrapped []byte fields);
 *   OP_BASE64_URL              URL-safe alphabet ("-_"), padding optional.
 * Errors name the offset of the first bad character.
 */
#ifndef PGOP_SUPPORT_BASE64_H
#define PGOP_SUPPORT_BASE64_H

#include <stddef.h>

#include "support/buf.h"
#include "support/err.h"

enum {
	OP_BASE64_IGNORE_NEWLINES = 1u << 0,
	OP_BASE64_URL = 1u << 1,
};

/* Length of the encoding of n bytes (without NUL); SIZE_MAX if it overflows. */
size_t op_base64_encoded_len(size_t n, unsigned flags);

/* Appends the encoding of data[0..n) to out. 0, or -EMSGSIZE when out's cap
 * would be passed (out is then freed, see buf.h). data is borrowed. */
__attribute__((warn_unused_result)) int op_base64_encode(const void *data, size_t n,
							  unsigned flags, struct op_buf *out);

/* Returns the encoding as a new OWNED NUL-terminated string (free with
 * free()); never NULL (aborts on OOM, see alloc.h). */
char *op_base64_encode_str(const void *data, size_t n, unsigned flags);

/* Decodes in[0..len) and appends the bytes to out (which stays
 * NUL-terminated, so text decodes can be used as C strings; the decoded data
 * may itself contain NUL bytes). Returns the number of bytes appended, or
 * -EINVAL (bad input; err says where) or -EMSGSIZE (out's cap). On failure
 * out may hold a partial result: callers reset or free it. */
__attribute__((warn_unused_result)) int op_base64_decode(const char *in, size_t len,
							  unsigned flags, struct op_buf *out,
							  struct op_err *err);

/* Decodes into a new OWNED NUL-terminated buffer written to *ret (free with
 * free()) and its length (excluding the NUL) to *ret_len (may be NULL).
 * 0 or -EINVAL; outputs written only on success. */
OP_MUST_CHECK int op_base64_decode_str(const char *in, size_t len, unsigned flags, char **ret,
				       size_t *ret_len, struct op_err *err);

#endif
