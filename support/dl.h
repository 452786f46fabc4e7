/* support/dl.h - a shared library loaded on first use (dlopen) instead of at
 * exec time (DT_NEEDED), so a process that never uses it never maps it.
 *
 * pgop is one binary: `pgop controller --webhooks-only` with certificate files
 * never makes an HTTP client or a PostgreSQL connection, yet linking libcurl
 * and libpq maps them and their dependencies (libssh2, libcrypto, Kerberos,
 * LDAP, ...) into every process. Each such library has one shim file holding
 * its table: one list macro naming every function pgop calls with its return
 * type, parameters and the value it returns when the library cannot be
 * loaded. From that list the shim generates the symbol-name table and a
 * wrapper of the same name and prototype as the library's own (checked by the
 * compiler against the library's header), so callers keep calling
 * curl_easy_init() or PQexec() unchanged. Nothing links the real library: a
 * function missing from a table is an undefined reference at link time.
 *
 * Shims: support/dl_curl.c (op_dl_curl, libcurl-gnutls.so.4),
 * instance/dl_pq.c (inst_dl_pq, libpq.so.5), objstore/dl_expat.c (os_dl_expat,
 * libexpat.so.1) and backup/dl_{zlib,deflate,bz2,lzma,lz4,zstd}.c (bk_dl_zlib
 * libz.so.1, bk_dl_deflate libdeflate.so.0, bk_dl_bz2 libbz2.so.1.0, bk_dl_lzma
 * liblzma.so.5, bk_dl_lz4 liblz4.so.1, bk_dl_zstd libzstd.so.1),
 * backup/dl_archive.c (bk_dl_archive, libarchive.so.13).
 *
 * op_dl_load() opens the library and resolves every name of its table once
 * (RTLD_NOW | RTLD_LOCAL; it is never closed). Code that makes a client calls
 * it first so a missing library is an error naming it ("cannot load
 * libpq.so.5: ..."). A wrapper called before that loads the library itself;
 * if that fails it logs the same message (once) and returns the table's
 * failure value (NULL, CURLE_FAILED_INIT, CONNECTION_BAD, ...), never jumps
 * through a NULL pointer. Thread-safe.
 */
#ifndef PGOP_SUPPORT_DL_H
#define PGOP_SUPPORT_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "support/err.h"

struct op_dl_lib {
	const char *soname;       /* borrowed (static): "libpq.so.5" */
	const char *const *names; /* borrowed (static): count symbol names */
	void **syms;              /* borrowed (static): count slots, filled by op_dl_load */
	size_t count;
	void (*after_load)(void); /* optional: runs once, after every symbol resolved */
	size_t required;          /* names[0..required) must resolve; the later ones are
				   * optional (NULL when the library predates them:
				   * op_dl_has). 0 = all required */
	/* private */
	pthread_mutex_t lock;
	int state; /* 0 not tried, 1 loaded, -errno failed (atomic) */
	char why[OP_ERR_MSG_MAX];
};

#define OP_DL_LIB_INIT(so, nm, sy, cnt, after)                                                     \
	{ .soname = (so), .names = (nm), .syms = (sy), .count = (cnt), .after_load = (after),      \
	  .lock = PTHREAD_MUTEX_INITIALIZER }
/* The same with the names from req on optional (newer functions of the
 * library: libpq's pipeline mode is 14+). Their wrappers return the table's
 * failure value when absent; callers ask op_dl_has first. */
#define OP_DL_LIB_INIT_OPT(so, nm, sy, cnt, req, after)                                            \
	{ .soname = (so), .names = (nm), .syms = (sy), .count = (cnt), .after_load = (after),      \
	  .required = (req), .lock = PTHREAD_MUTEX_INITIALIZER }

/* Loads lib (once; a failure is remembered and reported again). 0, or -ENOENT
 * for a missing library / -ENOSYS for a missing symbol, err naming both. */
OP_MUST_CHECK int op_dl_load(struct op_dl_lib *lib, struct op_err *err);
/* True once op_dl_load succeeded (does not load). */
bool op_dl_loaded(const struct op_dl_lib *lib);
/* Symbol i of lib's table, loading lib first when needed; NULL (after one
 * error log naming the library) when it cannot be loaded. For the wrappers. */
void *op_dl_sym(struct op_dl_lib *lib, size_t i);
/* Whether symbol i of lib resolved (loading lib first when needed): false for
 * an optional symbol the library lacks, or a library that cannot be loaded. */
bool op_dl_has(struct op_dl_lib *lib, size_t i);

/* Generators for the shim files. A shim defines
 *   #define LIST(F, V, N) F(ret, name, (params), (args), fail) V(name, (params), (args)) N(name)
 * F: a function returning a value, V: a void function, N: a name only (its
 * wrapper is written by hand, e.g. a variadic one), then
 *   enum { LIST(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) X_COUNT };
 *   static const char *const names[] = { LIST(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
 * and, with OP_DL_SHIM naming its struct op_dl_lib,
 *   LIST(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N) */
#define OP_DL_ENUM_F(ret, name, params, args, fail) OP_DL_I_##name,
#define OP_DL_ENUM_V(name, params, args) OP_DL_I_##name,
#define OP_DL_ENUM_N(name) OP_DL_I_##name,
#define OP_DL_NAME_F(ret, name, params, args, fail) #name,
#define OP_DL_NAME_V(name, params, args) #name,
#define OP_DL_NAME_N(name) #name,
#define OP_DL_WRAP_F(ret, name, params, args, fail)                                                \
	ret(name) params                                                                           \
	{                                                                                          \
		ret(*fn_) params = (ret(*) params)op_dl_sym(&OP_DL_SHIM, OP_DL_I_##name);          \
		return fn_ ? fn_ args : (fail);                                                    \
	}
#define OP_DL_WRAP_V(name, params, args)                                                           \
	void(name) params                                                                          \
	{                                                                                          \
		void(*fn_) params = (void(*) params)op_dl_sym(&OP_DL_SHIM, OP_DL_I_##name);        \
		if (fn_)                                                                           \
			fn_ args;                                                                  \
	}
#define OP_DL_WRAP_N(name)

#endif
