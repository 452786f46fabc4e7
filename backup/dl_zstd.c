/* backup/dl_zstd.c - libzstd through op_dl (support/dl.h): the table of every
 * ZSTD_* function backup/codec.c calls, and their wrappers. A function
 * returning a size fails with (size_t)-1, which ZSTD_isError calls an error
 * (ZSTD_error_GENERIC); ZSTD_isError itself answers 1 (an error) when the
 * library is not there. */
#include <zstd.h>

#include "backup/internal.h"
#include "support/dl.h"

#define ZSTD_FNS(F, V, N)                                                                          \
	F(size_t, ZSTD_CCtx_setParameter, (ZSTD_CCtx * c, ZSTD_cParameter param, int value),       \
	  (c, param, value), (size_t)-1)                                                           \
	F(size_t, ZSTD_DCtx_setParameter, (ZSTD_DCtx * d, ZSTD_dParameter param, int value),       \
	  (d, param, value), (size_t)-1)                                                           \
	F(size_t, ZSTD_compressStream2,                                                            \
	  (ZSTD_CCtx * c, ZSTD_outBuffer * out, ZSTD_inBuffer * in, ZSTD_EndDirective end),        \
	  (c, out, in, end), (size_t)-1)                                                           \
	F(ZSTD_CCtx *, ZSTD_createCCtx, (void), (), NULL)                                          \
	F(ZSTD_DCtx *, ZSTD_createDCtx, (void), (), NULL)                                          \
	F(size_t, ZSTD_decompressStream,                                                           \
	  (ZSTD_DStream * d, ZSTD_outBuffer * out, ZSTD_inBuffer * in), (d, out, in),              \
	  (size_t)-1)                                                                              \
	F(size_t, ZSTD_freeCCtx, (ZSTD_CCtx * c), (c), (size_t)-1)                                 \
	F(size_t, ZSTD_freeDCtx, (ZSTD_DCtx * d), (d), (size_t)-1)                                 \
	F(const char *, ZSTD_getErrorName, (size_t code), (code), "libzstd not loaded")            \
	F(unsigned, ZSTD_isError, (size_t code), (code), 1)

enum { ZSTD_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) ZSTD_FNS_COUNT };
static const char *const names[] = { ZSTD_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[ZSTD_FNS_COUNT];

struct op_dl_lib bk_dl_zstd = OP_DL_LIB_INIT(BK_DL_ZSTD_SONAME, names, syms, ZSTD_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_zstd
ZSTD_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
