/* webhooks/result.c - wh_result: the errors and warnings admission collected. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/alloc.h"
#include "webhooks/webhooks.h"

void wh_result_done(struct wh_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->n_errors; i++) {
		free(res->errors[i].path);
		free(res->errors[i].msg);
	}
	free(res->errors);
	for (size_t i = 0; i < res->n_warnings; i++)
		free(res->warnings[i]);
	free(res->warnings);
	*res = (struct wh_result){ 0 };
}

/* vasprintf through the abort-on-OOM policy. */
static char *vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static char *vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return op_strdup("(unformattable message)");
	char *s = op_malloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

void wh_result_error(struct wh_result *res, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	res->errors = op_realloc(res->errors, (res->n_errors + 1) * sizeof(*res->errors));
	res->errors[res->n_errors].path = op_strdup(path ? path : "");
	res->errors[res->n_errors].msg = msg;
	res->n_errors++;
}

void wh_result_warn(struct wh_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	res->warnings = op_realloc(res->warnings, (res->n_warnings + 1) * sizeof(*res->warnings));
	res->warnings[res->n_warnings++] = msg;
}
