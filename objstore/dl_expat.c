/* objstore/dl_expat.c - expat through op_dl (support/dl.h): the table of
 * every XML_* function objstore calls, and their wrappers. Only a process
 * that talks to S3 (`pgop instance wal-archive|wal-restore`, pgop-s3) parses
 * XML; the controller never maps libexpat. */
#include <expat.h>

#include "objstore/internal.h"
#include "support/dl.h"

#define EXPAT_FNS(F, V, N)                                                                         \
	F(const XML_LChar *, XML_ErrorString, (enum XML_Error code), (code),                       \
	  "libexpat not loaded")                                                                   \
	F(XML_Size, XML_GetCurrentLineNumber, (XML_Parser p), (p), 0)                              \
	F(enum XML_Error, XML_GetErrorCode, (XML_Parser p), (p), XML_ERROR_NO_MEMORY)              \
	F(enum XML_Status, XML_Parse, (XML_Parser p, const char *s, int len, int is_final),        \
	  (p, s, len, is_final), XML_STATUS_ERROR)                                                 \
	F(XML_Parser, XML_ParserCreate, (const XML_Char *encoding), (encoding), NULL)              \
	V(XML_ParserFree, (XML_Parser p), (p))                                                     \
	V(XML_SetCharacterDataHandler, (XML_Parser p, XML_CharacterDataHandler h), (p, h))         \
	V(XML_SetElementHandler,                                                                   \
	  (XML_Parser p, XML_StartElementHandler s, XML_EndElementHandler e), (p, s, e))           \
	V(XML_SetStartDoctypeDeclHandler, (XML_Parser p, XML_StartDoctypeDeclHandler h), (p, h))   \
	V(XML_SetUserData, (XML_Parser p, void *ud), (p, ud))                                      \
	F(enum XML_Status, XML_StopParser, (XML_Parser p, XML_Bool resumable), (p, resumable),     \
	  XML_STATUS_ERROR)

enum { EXPAT_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) EXPAT_FNS_COUNT };
static const char *const names[] = { EXPAT_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[EXPAT_FNS_COUNT];

struct op_dl_lib os_dl_expat = OP_DL_LIB_INIT(OS_DL_EXPAT_SONAME, names, syms, EXPAT_FNS_COUNT,
					      NULL);

#define OP_DL_SHIM os_dl_expat
EXPAT_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
