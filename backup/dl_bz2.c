/* backup/dl_bz2.c - libbz2 through op_dl (support/dl.h): the table of every
 * BZ2_* function backup/codec.c calls for bzip2, and their wrappers. */
#include <bzlib.h>

#include "backup/internal.h"
#include "support/dl.h"

#define BZ2_FNS(F, V, N)                                                                           \
	F(int, BZ2_bzCompress, (bz_stream * s, int action), (s, action), BZ_PARAM_ERROR)           \
	F(int, BZ2_bzCompressEnd, (bz_stream * s), (s), BZ_PARAM_ERROR)                            \
	F(int, BZ2_bzCompressInit, (bz_stream * s, int block_size_100k, int verbosity, int work),  \
	  (s, block_size_100k, verbosity, work), BZ_MEM_ERROR)                                     \
	F(int, BZ2_bzDecompress, (bz_stream * s), (s), BZ_PARAM_ERROR)                             \
	F(int, BZ2_bzDecompressEnd, (bz_stream * s), (s), BZ_PARAM_ERROR)                          \
	F(int, BZ2_bzDecompressInit, (bz_stream * s, int verbosity, int small),                    \
	  (s, verbosity, small), BZ_MEM_ERROR)

enum { BZ2_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) BZ2_FNS_COUNT };
static const char *const names[] = { BZ2_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[BZ2_FNS_COUNT];

struct op_dl_lib bk_dl_bz2 = OP_DL_LIB_INIT(BK_DL_BZ2_SONAME, names, syms, BZ2_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_bz2
BZ2_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
