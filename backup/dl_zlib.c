/* backup/dl_zlib.c - zlib through op_dl (support/dl.h): the table of every
 * function backup/codec.c calls for gzip (but the WAL encoder's, libdeflate:
 * backup/dl_deflate.c), and their wrappers. deflateInit2()
 * and inflateInit2() are zlib.h macros over deflateInit2_()/inflateInit2_()
 * (which also take ZLIB_VERSION and sizeof(z_stream)): those are the symbols. */
#include <zlib.h>

#include "backup/internal.h"
#include "support/dl.h"

#define ZLIB_FNS(F, V, N)                                                                          \
	F(int, deflate, (z_streamp s, int flush), (s, flush), Z_STREAM_ERROR)                      \
	F(int, deflateEnd, (z_streamp s), (s), Z_STREAM_ERROR)                                     \
	F(int, deflateInit2_,                                                                      \
	  (z_streamp s, int level, int method, int window_bits, int mem_level, int strategy,       \
	   const char *version, int stream_size),                                                  \
	  (s, level, method, window_bits, mem_level, strategy, version, stream_size), Z_MEM_ERROR) \
	F(int, inflate, (z_streamp s, int flush), (s, flush), Z_STREAM_ERROR)                      \
	F(int, inflateEnd, (z_streamp s), (s), Z_STREAM_ERROR)                                     \
	F(int, inflateInit2_,                                                                      \
	  (z_streamp s, int window_bits, const char *version, int stream_size),                    \
	  (s, window_bits, version, stream_size), Z_MEM_ERROR)                                     \
	F(int, inflateReset, (z_streamp s), (s), Z_STREAM_ERROR)

enum { ZLIB_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) ZLIB_FNS_COUNT };
static const char *const names[] = { ZLIB_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[ZLIB_FNS_COUNT];

struct op_dl_lib bk_dl_zlib = OP_DL_LIB_INIT(BK_DL_ZLIB_SONAME, names, syms, ZLIB_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_zlib
ZLIB_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
