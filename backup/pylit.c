/* backup/pylit.c - the few Python literals barman writes into backup.info
 * (pure): repr() of a str, a str literal read back as ast.literal_eval
 * reads it, and a cursor over a literal for the tablespace list. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "backup/internal.h"

/* Code points Python's str.isprintable() calls unprintable above ASCII
 * among the ones a backup label may plausibly hold: the C1 controls, NBSP,
 * the soft hyphen, the line/paragraph separators, the BOM. repr() escapes
 * them; any other non-ASCII character is written as it is (str.isprintable
 * has more exceptions: literal_eval reads either form the same). */
static bool py_unprintable(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0xfeff;
}

static uint32_t utf8_decode(const unsigned char *p, size_t n)
{
	if (n == 1)
		return p[0];
	uint32_t cp = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++)
		cp = (cp << 6) | (p[i] & 0x3f);
	return cp;
}

static int repr_char(struct op_buf *out, const unsigned char *p, size_t n, char quote)
{
	uint32_t cp = utf8_decode(p, n);
	if (cp == '\\' || cp == (uint32_t)quote)
		return op_buf_addf(out, "\\%c", (char)cp);
	if (cp == '\n')
		return op_buf_adds(out, "\\n");
	if (cp == '\r')
		return op_buf_adds(out, "\\r");
	if (cp == '\t')
		return op_buf_adds(out, "\\t");
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0xff && py_unprintable(cp)))
		return op_buf_addf(out, "\\x%02x", (unsigned)cp);
	if (py_unprintable(cp))
		return op_buf_addf(out, "\\u%04x", (unsigned)cp);
	return op_buf_add(out, p, n);
}

int bk_py_repr_str(const char *s, struct op_buf *out)
{
	/* repr() picks double quotes only for a string holding ' and no " */
	char quote = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
	size_t len = strlen(s);
	int rc = op_buf_addc(out, quote);
	for (size_t i = 0; rc == 0 && i < len;) {
		size_t n = op_utf8_seq_len((const unsigned char *)s + i, len - i);
		if (n == 0)
			return -EINVAL; /* a Python str is never invalid UTF-8 */
		rc = repr_char(out, (const unsigned char *)s + i, n, quote);
		i += n;
	}
	return rc ? rc : op_buf_addc(out, quote);
}

static int add_utf8(struct op_buf *out, uint32_t cp)
{
	unsigned char b[4];
	size_t n;
	if (cp >= 0xd800 && cp <= 0xdfff)
		return -EBADMSG; /* a lone surrogate: no UTF-8 for it */
	if (cp < 0x80) {
		b[0] = (unsigned char)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12), n = 3;
	} else if (cp <= 0x10ffff) {
		b[0] = (unsigned char)(0xf0 | cp >> 18), n = 4;
	} else {
		return -EBADMSG;
	}
	for (size_t i = 1; i < n; i++)
		b[i] = (unsigned char)(0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3f));
	return cp == 0 ? -EBADMSG : op_buf_add(out, b, n); /* NUL: no C string */
}

/* \x, \u, \U: exactly digits hex digits after the escape letter. */
static int esc_hex(struct bk_pylit *c, int digits, struct op_buf *out)
{
	uint32_t cp = 0;
	if (c->end - c->p < digits)
		return -EBADMSG;
	for (int i = 0; i < digits; i++) {
		int v = op_hexval(*c->p++);
		if (v < 0)
			return -EBADMSG;
		cp = cp << 4 | (uint32_t)v;
	}
	return add_utf8(out, cp);
}

static int esc_octal(struct bk_pylit *c, struct op_buf *out)
{
	uint32_t cp = 0;
	for (int i = 0; i < 3 && c->p < c->end && *c->p >= '0' && *c->p <= '7'; i++)
		cp = cp * 8 + (uint32_t)(*c->p++ - '0');
	return add_utf8(out, cp);
}

/* After a backslash: one escape sequence, as Python's tokenizer reads it. */
static int escape(struct bk_pylit *c, struct op_buf *out)
{
	static const char simple_in[] = "\\'\"abfnrtv", simple_out[] = "\\'\"\a\b\f\n\r\t\v";
	if (c->p >= c->end)
		return -EBADMSG;
	char e = *c->p;
	const char *s = strchr(simple_in, e);
	if (e && s) {
		c->p++;
		return op_buf_addc(out, simple_out[s - simple_in]);
	}
	if (e >= '0' && e <= '7')
		return esc_octal(c, out);
	c->p++;
	if (e == 'x')
		return esc_hex(c, 2, out);
	if (e == 'u')
		return esc_hex(c, 4, out);
	if (e == 'U')
		return esc_hex(c, 8, out);
	if (e == 'N' || e == '\n')
		return -EBADMSG; /* \N{name} and continuations: never in barman's output */
	c->p--; /* an unknown escape keeps its backslash */
	return op_buf_addc(out, '\\');
}

int bk_pylit_str(struct bk_pylit *c, struct op_buf *out)
{
	bk_pylit_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return -EBADMSG;
	char quote = *c->p++;
	while (c->p < c->end && *c->p != quote) {
		char ch = *c->p++;
		int rc = ch == '\\' ? escape(c, out) : op_buf_addc(out, ch);
		if (rc < 0)
			return rc;
	}
	if (c->p >= c->end)
		return -EBADMSG; /* unterminated */
	c->p++;
	return 0;
}

void bk_pylit_ws(struct bk_pylit *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

bool bk_pylit_eat(struct bk_pylit *c, char ch)
{
	bk_pylit_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

int bk_pylit_uint(struct bk_pylit *c, uint64_t max, uint64_t *ret)
{
	bk_pylit_ws(c);
	uint64_t v = 0;
	const char *start = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p++ - '0');
		if (v > (max - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (c->p == start || (c->p - start > 1 && *start == '0'))
		return -EBADMSG; /* Python refuses 0-prefixed decimals */
	*ret = v;
	return 0;
}
