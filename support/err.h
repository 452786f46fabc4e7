/* support/err.h - caller-owned error carrying context.
 *
 * A function that can fail returns 0 (or a count) on success and -errno on
 * failure, and fills a caller-owned struct op_err with a message that names
 * the object, field or peer. The first failure wins: once set, later
 * op_err_set() calls on the same error are ignored, so outer layers never
 * overwrite the root cause. Passing a NULL err is allowed everywhere.
 */
#ifndef PGOP_SUPPORT_ERR_H
#define PGOP_SUPPORT_ERR_H

#include <stdbool.h>

#define OP_ERR_MSG_MAX 512

struct op_err {
	int code;                  /* -errno of the first failure, 0 when unset */
	char msg[OP_ERR_MSG_MAX];  /* lower-case, no trailing period; truncated if long */
};

#define OP_ERR_INIT ((struct op_err){ 0 })

/* On every function whose int result carries an error (it fills a struct
 * op_err or returns -errno): ignoring the result is a compile error. */
#define OP_MUST_CHECK __attribute__((warn_unused_result))

/* Records the first failure and returns code (so `return op_err_set(...)` works). */
int op_err_set(struct op_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefixes context ("while X: ") to an already-set message. Returns err->code. */
int op_err_prefix(struct op_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool op_err_isset(const struct op_err *err);
void op_err_clear(struct op_err *err);

#endif
