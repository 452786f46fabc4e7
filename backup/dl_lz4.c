/* backup/dl_lz4.c - liblz4 through op_dl (support/dl.h): the table of every
 * LZ4F_* (frame API) function backup/codec.c calls, and their wrappers. A
 * function returning a size or an LZ4F_errorCode_t fails with (size_t)-1,
 * which LZ4F_isError calls an error (ERROR_GENERIC); LZ4F_isError itself
 * answers 1 (an error) when the library is not there. LZ4F_compressBound
 * answers 0 instead: its result is a buffer size, never tested as an error. */
#include <lz4frame.h>

#include "backup/internal.h"
#include "support/dl.h"

#define LZ4_FNS(F, V, N)                                                                           \
	F(size_t, LZ4F_compressBegin,                                                              \
	  (LZ4F_cctx * c, void *dst, size_t cap, const LZ4F_preferences_t *prefs),                 \
	  (c, dst, cap, prefs), (size_t)-1)                                                        \
	F(size_t, LZ4F_compressBound, (size_t src_size, const LZ4F_preferences_t *prefs),          \
	  (src_size, prefs), 0)                                                                    \
	F(size_t, LZ4F_compressEnd,                                                                \
	  (LZ4F_cctx * c, void *dst, size_t cap, const LZ4F_compressOptions_t *opts),              \
	  (c, dst, cap, opts), (size_t)-1)                                                         \
	F(size_t, LZ4F_compressUpdate,                                                             \
	  (LZ4F_cctx * c, void *dst, size_t cap, const void *src, size_t src_size,                 \
	   const LZ4F_compressOptions_t *opts),                                                    \
	  (c, dst, cap, src, src_size, opts), (size_t)-1)                                          \
	F(LZ4F_errorCode_t, LZ4F_createCompressionContext, (LZ4F_cctx * *ret, unsigned version),   \
	  (ret, version), (size_t)-1)                                                              \
	F(LZ4F_errorCode_t, LZ4F_createDecompressionContext, (LZ4F_dctx * *ret, unsigned version), \
	  (ret, version), (size_t)-1)                                                              \
	F(size_t, LZ4F_decompress,                                                                 \
	  (LZ4F_dctx * d, void *dst, size_t *dst_size, const void *src, size_t *src_size,          \
	   const LZ4F_decompressOptions_t *opts),                                                  \
	  (d, dst, dst_size, src, src_size, opts), (size_t)-1)                                     \
	F(LZ4F_errorCode_t, LZ4F_freeCompressionContext, (LZ4F_cctx * c), (c), (size_t)-1)         \
	F(LZ4F_errorCode_t, LZ4F_freeDecompressionContext, (LZ4F_dctx * d), (d), (size_t)-1)       \
	F(const char *, LZ4F_getErrorName, (LZ4F_errorCode_t code), (code), "liblz4 not loaded")   \
	F(unsigned, LZ4F_isError, (LZ4F_errorCode_t code), (code), 1)

enum { LZ4_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) LZ4_FNS_COUNT };
static const char *const names[] = { LZ4_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[LZ4_FNS_COUNT];

struct op_dl_lib bk_dl_lz4 = OP_DL_LIB_INIT(BK_DL_LZ4_SONAME, names, syms, LZ4_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_lz4
LZ4_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
