/* support/err.c - error context (see err.h). */
#include "support/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int op_err_set(struct op_err *err, int code, const char *fmt, ...)
{
	/* The first failure wins; the caller still gets the code it reports. */
	if (!err || err->code != 0)
		return code;
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int op_err_prefix(struct op_err *err, const char *fmt, ...)
{
	if (!err || err->code == 0)
		return err ? err->code : 0;
	char old[OP_ERR_MSG_MAX];
	memcpy(old, err->msg, sizeof(old));
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n + 2 < sizeof(err->msg)) {
		size_t at = (size_t)n;
		err->msg[at++] = ':';
		err->msg[at++] = ' ';
		size_t room = sizeof(err->msg) - at - 1;
		size_t len = strnlen(old, room);
		memcpy(err->msg + at, old, len);
		err->msg[at + len] = '\0';
	}
	return err->code;
}

bool op_err_isset(const struct op_err *err)
{
	return err && err->code != 0;
}

void op_err_clear(struct op_err *err)
{
	if (err)
		*err = OP_ERR_INIT;
}
