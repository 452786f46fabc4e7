/* support/alloc.h - the one allocation choke point and cleanup helpers.
 *
 * OOM policy (a): the wrappers log to stderr and abort(); a pod restarts.
 * So op_malloc() and friends never return NULL and callers need not check.
 * Results of library constructors (json-c, libcurl, libyaml, gnutls) are
 * still checked where they are called.
 */
#ifndef PGOP_SUPPORT_ALLOC_H
#define PGOP_SUPPORT_ALLOC_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Returns owned memory (free with free()); never NULL. */
/* The one out-of-memory policy: logs a fatal JSON line naming n bytes (0 when
 * unknown, e.g. a library constructor returned NULL) and aborts. */
__attribute__((noreturn)) void op_oom(size_t n);

void *op_malloc(size_t n);
void *op_calloc(size_t nmemb, size_t size);
void *op_realloc(void *p, size_t n);
char *op_strdup(const char *s);
char *op_strndup(const char *s, size_t n);
/* printf into a new owned string; never NULL. */
char *op_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Caps glibc's malloc arenas at n (mallopt M_ARENA_MAX) unless the
 * environment sets MALLOC_ARENA_MAX. By default every thread that allocates
 * may get its own arena (up to 8 per core), each keeping its freed pages:
 * docs/internals/memory.md. Call once at start, before threads. */
void op_alloc_limit_arenas(int n);

/* Cleanup attributes (systemd style). */
#define _cleanup_(f) __attribute__((cleanup(f)))
static inline void op_freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(op_freep)

/* Hand ownership of a cleanup-managed pointer on: returns it and NULLs the local. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp = (p);                                                           \
		(p) = NULL;                                                                        \
		_tp;                                                                               \
	})

#define OP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
