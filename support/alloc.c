/* support/alloc.c - allocation wrappers, abort on OOM (see alloc.h). */
#include "support/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void op_oom(size_t n)
{
	fprintf(stderr, "{\"level\":\"fatal\",\"msg\":\"out of memory\",\"bytes\":%zu}\n", n);
	abort();
}

void *op_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		op_oom(n);
	return p;
}

void *op_calloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		op_oom(nmemb * size);
	return p;
}

void *op_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		op_oom(n);
	return q;
}

char *op_strdup(const char *s)
{
	return op_strndup(s, strlen(s));
}

char *op_strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = op_malloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *op_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	char *p = op_malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void op_alloc_limit_arenas(int n)
{
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	const char *env = getenv("MALLOC_ARENA_MAX");
	if ((!env || !*env) && n > 0)
		(void)mallopt(M_ARENA_MAX, n);
#else
	(void)n;
#endif
}
