/* support/base64.c - RFC 4648 base64 (see base64.h). */
#include "support/base64.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "support/alloc.h"

static const char std_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Reverse tables: 0..63 for alphabet characters, -1 otherwise. */
#define B64_ROW(c) ((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'                                 \
		    : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26                            \
		    : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52                            \
					       : -1)

static int b64_value(unsigned char c, bool url)
{
	int v = B64_ROW(c);
	if (v >= 0)
		return v;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

size_t op_base64_encoded_len(size_t n, unsigned flags)
{
	if (n / 3 >= SIZE_MAX / 4 - 1)
		return SIZE_MAX;
	if (flags & OP_BASE64_URL)
		return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
	return (n + 2) / 3 * 4;
}

int op_base64_encode(const void *data, size_t n, unsigned flags, struct op_buf *out)
{
	const unsigned char *p = data;
	const char *abc = flags & OP_BASE64_URL ? url_alphabet : std_alphabet;
	bool pad = !(flags & OP_BASE64_URL);
	size_t need = op_base64_encoded_len(n, flags);
	if (need == SIZE_MAX) {
		op_buf_done(out);
		return -EMSGSIZE;
	}
	if (need > out->max || out->len > out->max - need) {
		op_buf_done(out);
		return -EMSGSIZE;
	}
	/* one reservation, then the blocks written in place */
	int r = op_buf_reserve(out, need);
	if (r < 0)
		return r;
	char *o = out->data + out->len;
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = abc[(v >> 6) & 63];
		*o++ = abc[v & 63];
	}
	size_t rest = n - i;
	if (rest) {
		uint32_t v = (uint32_t)p[i] << 16 | (rest == 2 ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		if (rest == 2)
			*o++ = abc[(v >> 6) & 63];
		else if (pad)
			*o++ = '=';
		if (pad)
			*o++ = '=';
	}
	out->len = (size_t)(o - out->data);
	out->data[out->len] = '\0';
	return 0;
}

char *op_base64_encode_str(const void *data, size_t n, unsigned flags)
{
	struct op_buf b = OP_BUF_INIT(SIZE_MAX - 1);
	if (op_base64_encode(data, n, flags, &b) < 0)
		abort(); /* only possible past SIZE_MAX: memory is exhausted first */
	return op_buf_take(&b, NULL);
}

static int bad_char(struct op_err *err, size_t off, unsigned char c)
{
	if (c >= 0x20 && c < 0x7f)
		return op_err_set(err, -EINVAL, "invalid base64 at offset %zu: unexpected '%c'",
				  off, c);
	return op_err_set(err, -EINVAL, "invalid base64 at offset %zu: unexpected byte 0x%02x",
			  off, c);
}

int op_base64_decode(const char *in, size_t len, unsigned flags, struct op_buf *out,
		     struct op_err *err)
{
	const bool url = flags & OP_BASE64_URL;
	const bool skip_nl = flags & OP_BASE64_IGNORE_NEWLINES;
	if (!in)
		len = 0;
	/* One trailing newline is always tolerated. */
	size_t end = len;
	if (end && in[end - 1] == '\n') {
		end--;
		if (end && in[end - 1] == '\r')
			end--;
	}
	if (end / 4 * 3 > (size_t)INT_MAX)
		return op_err_set(err, -EMSGSIZE, "base64 input too large (%zu bytes)", len);

	size_t before = out->len;
	uint32_t acc = 0;
	unsigned nsym = 0;    /* symbols in the current quantum */
	unsigned npad = 0;    /* '=' seen */
	size_t last_off = 0;  /* offset of the last data symbol */
	char bytes[3];
	for (size_t i = 0; i < end; i++) {
		unsigned char c = (unsigned char)in[i];
		if (skip_nl && (c == '\r' || c == '\n'))
			continue;
		if (c == '=') {
			/* Padding fills the last one or two places of the final quantum. */
			if (nsym < 2 || nsym + npad >= 4)
				return bad_char(err, i, c);
			npad++;
			continue;
		}
		int v = b64_value(c, url);
		if (v < 0 || npad)
			return bad_char(err, i, c);
		acc = acc << 6 | (uint32_t)v;
		last_off = i;
		if (++nsym == 4) {
			bytes[0] = (char)(acc >> 16);
			bytes[1] = (char)(acc >> 8);
			bytes[2] = (char)acc;
			int r = op_buf_add(out, bytes, 3);
			if (r)
				return op_err_set(err, r, "base64 output over size cap");
			nsym = 0;
			acc = 0;
		}
	}
	if (npad && nsym + npad != 4)
		return op_err_set(err, -EINVAL, "invalid base64 at offset %zu: incomplete padding",
				  end);
	if (nsym == 1)
		return op_err_set(err, -EINVAL,
				  "invalid base64 at offset %zu: truncated input (one symbol left)",
				  last_off);
	if (nsym && !npad && !url)
		return op_err_set(err, -EINVAL,
				  "invalid base64 at offset %zu: missing padding (length not a "
				  "multiple of 4)",
				  end);
	if (nsym) {
		/* 2 symbols -> 1 byte (4 spare bits), 3 symbols -> 2 bytes (2 spare). */
		unsigned spare = nsym == 2 ? 4 : 2;
		if (acc & ((1u << spare) - 1))
			return op_err_set(err, -EINVAL,
					  "invalid base64 at offset %zu: non-zero padding bits",
					  last_off);
		acc >>= spare;
		size_t k = nsym == 2 ? 1 : 2;
		if (k == 2) {
			bytes[0] = (char)(acc >> 8);
			bytes[1] = (char)acc;
		} else {
			bytes[0] = (char)acc;
		}
		int r = op_buf_add(out, bytes, k);
		if (r)
			return op_err_set(err, r, "base64 output over size cap");
	}
	if (!out->data) {
		int r = op_buf_add(out, "", 0);
		if (r)
			return op_err_set(err, r, "base64 output over size cap");
	}
	return (int)(out->len - before);
}

int op_base64_decode_str(const char *in, size_t len, unsigned flags, char **ret,
			 size_t *ret_len, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(len);
	int r = op_base64_decode(in, len, flags, &b, err);
	if (r < 0)
		return r;
	*ret = op_buf_take(&b, ret_len);
	return 0;
}
