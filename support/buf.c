/* support/buf.c - growable capped buffer (see buf.h). */
#include "support/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"

void op_buf_init(struct op_buf *b, size_t max)
{
	*b = OP_BUF_INIT(max);
}

void op_buf_done(struct op_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void op_buf_reset(struct op_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void op_buf_truncate(struct op_buf *b, size_t len)
{
	if (!b->data || len >= b->len)
		return;
	b->len = len;
	b->data[len] = '\0';
}

static int buf_grow(struct op_buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra) {
		op_buf_done(b);
		return -EMSGSIZE;
	}
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	b->data = op_realloc(b->data, cap);
	b->cap = cap;
	return 0;
}

int op_buf_reserve(struct op_buf *b, size_t extra)
{
	return buf_grow(b, extra);
}

int op_buf_add(struct op_buf *b, const void *p, size_t n)
{
	int r = buf_grow(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int op_buf_adds(struct op_buf *b, const char *s)
{
	return op_buf_add(b, s, strlen(s));
}

int op_buf_addc(struct op_buf *b, char c)
{
	return op_buf_add(b, &c, 1);
}

int op_buf_vaddf(struct op_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	int r = buf_grow(b, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int op_buf_addf(struct op_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = op_buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

size_t op_utf8_seq_len(const unsigned char *p, size_t avail)
{
	if (avail == 0)
		return 0;
	unsigned char c = p[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
		return avail >= 3 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
		return avail >= 4 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 &&
				       (p[3] & 0xC0) == 0x80
			       ? 4
			       : 0;
	}
	return 0;
}

bool op_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	while (len > 0) {
		size_t n = op_utf8_seq_len(p, len);
		if (n == 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

int op_buf_add_json_str(struct op_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	int r = op_buf_addc(b, '"');
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + strlen(s);
	while (r == 0 && *p) {
		/* Copy the longest run that needs no escaping in one go. */
		const unsigned char *run = p;
		size_t n;
		while (*p >= 0x20 && *p != '"' && *p != '\\' &&
		       (n = op_utf8_seq_len(p, (size_t)(end - p))) > 0)
			p += n;
		if (p > run && (r = op_buf_add(b, run, (size_t)(p - run))))
			break;
		if (!*p)
			break;
		switch (*p) {
		case '"': r = op_buf_add(b, "\\\"", 2); break;
		case '\\': r = op_buf_add(b, "\\\\", 2); break;
		case '\n': r = op_buf_add(b, "\\n", 2); break;
		case '\r': r = op_buf_add(b, "\\r", 2); break;
		case '\t': r = op_buf_add(b, "\\t", 2); break;
		default:
			if (*p < 0x20) {
				char esc[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
				r = op_buf_add(b, esc, sizeof(esc));
			} else {
				/* Invalid UTF-8: one U+FFFD per bad byte, as Go's encoder does. */
				r = op_buf_add(b, "\\ufffd", 6);
			}
		}
		p++;
	}
	return r ? r : op_buf_addc(b, '"');
}

const char *op_buf_str(const struct op_buf *b)
{
	return b->data ? b->data : "";
}

char *op_buf_take(struct op_buf *b, size_t *ret_len)
{
	char *p = b->data ? b->data : op_strdup("");
	if (ret_len)
		*ret_len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

int op_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
