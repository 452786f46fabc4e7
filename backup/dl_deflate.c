/* backup/dl_deflate.c - libdeflate through op_dl (support/dl.h): the table of
 * every function backup/codec.c calls to write gzip (its encoder; zlib,
 * backup/dl_zlib.c, decodes), and their wrappers. */
#include <libdeflate.h>

#include "backup/internal.h"
#include "support/dl.h"

#define DEFLATE_FNS(F, V, N)                                                                       \
	F(struct libdeflate_compressor *, libdeflate_alloc_compressor, (int level), (level), NULL) \
	F(size_t, libdeflate_gzip_compress,                                                        \
	  (struct libdeflate_compressor * c, const void *in, size_t in_nbytes, void *out,          \
	   size_t out_nbytes_avail),                                                               \
	  (c, in, in_nbytes, out, out_nbytes_avail), 0)                                            \
	F(size_t, libdeflate_gzip_compress_bound,                                                  \
	  (struct libdeflate_compressor * c, size_t in_nbytes), (c, in_nbytes), 0)                 \
	V(libdeflate_free_compressor, (struct libdeflate_compressor * c), (c))

enum { DEFLATE_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) DEFLATE_FNS_COUNT };
static const char *const names[] = { DEFLATE_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[DEFLATE_FNS_COUNT];

struct op_dl_lib bk_dl_deflate =
	OP_DL_LIB_INIT(BK_DL_DEFLATE_SONAME, names, syms, DEFLATE_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_deflate
DEFLATE_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
