/* support/buf.h - the one growable byte buffer for everything built from
 * untrusted data (curl dynbuf / PostgreSQL StringInfo style).
 *
 * Always NUL-terminated (data may be NULL while len == 0). Every buffer has a
 * hard maximum: an append that would pass it fails with -EMSGSIZE, frees the
 * contents and leaves the buffer empty, so a half-built value is never used.
 * The struct is embedded by its owner; op_buf_done() frees the contents.
 */
#ifndef PGOP_SUPPORT_BUF_H
#define PGOP_SUPPORT_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Caps for each use site. */
#define OP_BUF_MAX_HTTP_BODY (3u * 1024 * 1024)  /* admission / API request body */
#define OP_BUF_MAX_KUBE_RESPONSE (64u * 1024 * 1024) /* one LIST response */
#define OP_BUF_MAX_WATCH_EVENT (8u * 1024 * 1024)   /* one watch event line */
#define OP_BUF_MAX_FILE (16u * 1024 * 1024)          /* a file read from disk */
#define OP_BUF_MAX_SMALL (64u * 1024)                /* messages, names, paths */

struct op_buf {
	char *data;  /* owned; NUL-terminated when non-NULL */
	size_t len;  /* bytes used, excluding the NUL */
	size_t cap;  /* bytes allocated */
	size_t max;  /* hard cap on len */
};

#define OP_BUF_INIT(maxlen) ((struct op_buf){ .data = NULL, .len = 0, .cap = 0, .max = (maxlen) })

void op_buf_init(struct op_buf *b, size_t max);
/* Frees the contents; the buffer is empty and reusable after. Accepts NULL. */
void op_buf_done(struct op_buf *b);
/* Empties without freeing. */
void op_buf_reset(struct op_buf *b);
/* Makes room for extra more bytes (and the NUL) without changing len: the
 * caller may then write up to extra bytes at data + len and set len itself.
 * 0, or -EMSGSIZE when the cap would be passed (buffer freed). */
__attribute__((warn_unused_result)) int op_buf_reserve(struct op_buf *b, size_t extra);
/* Drops everything past len (len <= b->len), keeping the allocation. */
void op_buf_truncate(struct op_buf *b, size_t len);

/* Appends; 0 on success, -EMSGSIZE when the cap would be passed (buffer freed). */
__attribute__((warn_unused_result)) int op_buf_add(struct op_buf *b, const void *p, size_t n);
__attribute__((warn_unused_result)) int op_buf_adds(struct op_buf *b, const char *s);
__attribute__((warn_unused_result)) int op_buf_addc(struct op_buf *b, char c);
__attribute__((warn_unused_result, format(printf, 2, 3))) int op_buf_addf(struct op_buf *b,
									   const char *fmt, ...);
__attribute__((warn_unused_result, format(printf, 2, 0))) int op_buf_vaddf(struct op_buf *b,
									    const char *fmt,
									    va_list ap);
/* Appends s as a JSON string literal with quotes and escapes (control
 * characters as \uXXXX; each byte of invalid UTF-8 becomes \ufffd, so the
 * output is always valid JSON). */
__attribute__((warn_unused_result)) int op_buf_add_json_str(struct op_buf *b, const char *s);

/* Length of the valid UTF-8 sequence at p (1..4) within avail bytes; 0 when
 * it is invalid there (overlong, surrogate, past U+10FFFF, truncated). */
size_t op_utf8_seq_len(const unsigned char *p, size_t avail);
/* True when s[0..len) is valid UTF-8 (NUL bytes allowed). */
bool op_utf8_valid(const char *s, size_t len);
/* The value of the hex digit c (either case), -1 when it is not one. */
int op_hexval(char c);

/* Returns the contents (never NULL: "" when empty); borrowed until the next change. */
const char *op_buf_str(const struct op_buf *b);
/* Hands the contents to the caller (free with free()); never NULL; buffer is emptied. */
char *op_buf_take(struct op_buf *b, size_t *ret_len);

static inline void op_buf_donep(struct op_buf *b) { op_buf_done(b); }

#endif
