/* backup/dl_lzma.c - liblzma through op_dl (support/dl.h): the table of
 * every lzma_* function backup/codec.c calls for xz, and their wrappers. */
#include <lzma.h>

#include "backup/internal.h"
#include "support/dl.h"

#define LZMA_FNS(F, V, N)                                                                          \
	F(lzma_ret, lzma_code, (lzma_stream * s, lzma_action action), (s, action),                 \
	  LZMA_PROG_ERROR)                                                                         \
	F(lzma_ret, lzma_easy_encoder, (lzma_stream * s, uint32_t preset, lzma_check check),       \
	  (s, preset, check), LZMA_MEM_ERROR)                                                      \
	V(lzma_end, (lzma_stream * s), (s))                                                        \
	F(lzma_ret, lzma_stream_decoder, (lzma_stream * s, uint64_t memlimit, uint32_t flags),     \
	  (s, memlimit, flags), LZMA_MEM_ERROR)

enum { LZMA_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) LZMA_FNS_COUNT };
static const char *const names[] = { LZMA_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[LZMA_FNS_COUNT];

struct op_dl_lib bk_dl_lzma = OP_DL_LIB_INIT(BK_DL_LZMA_SONAME, names, syms, LZMA_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_lzma
LZMA_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
