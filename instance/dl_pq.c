/* instance/dl_pq.c - libpq through op_dl (support/dl.h): the table of every
 * PQ* function the instance manager calls, and their wrappers. Only
 * `pgop instance` talks to PostgreSQL; other subcommands never map libpq
 * (nor its libssl/libcrypto/Kerberos/LDAP dependencies). */
#include <libpq-fe.h>

#include "instance/internal.h"
#include "support/dl.h"

static char not_loaded[] = "libpq not loaded\n"; /* what PQerrorMessage returns then */

#define PQ_FNS(F, V, N)                                                                            \
	V(PQclear, (PGresult * r), (r))                                                            \
	F(PGconn *, PQconnectdbParams, (const char *const *k, const char *const *v, int expand),   \
	  (k, v, expand), NULL)                                                                    \
	F(PGconn *, PQconnectStartParams,                                                          \
	  (const char *const *k, const char *const *v, int expand), (k, v, expand), NULL)          \
	F(PostgresPollingStatusType, PQconnectPoll, (PGconn * c), (c), PGRES_POLLING_FAILED)       \
	F(char *, PQencryptPasswordConn,                                                           \
	  (PGconn * c, const char *passwd, const char *user, const char *algorithm),               \
	  (c, passwd, user, algorithm), NULL)                                                      \
	F(char *, PQerrorMessage, (const PGconn *c), (c), not_loaded)                              \
	F(char *, PQescapeIdentifier, (PGconn * c, const char *s, size_t n), (c, s, n), NULL)      \
	F(char *, PQescapeLiteral, (PGconn * c, const char *s, size_t n), (c, s, n), NULL)         \
	F(PGresult *, PQexec, (PGconn * c, const char *q), (c, q), NULL)                           \
	F(PGresult *, PQexecParams,                                                                \
	  (PGconn * c, const char *q, int n, const Oid *types, const char *const *values,          \
	   const int *lengths, const int *formats, int result_format),                             \
	  (c, q, n, types, values, lengths, formats, result_format), NULL)                         \
	F(int, PQconsumeInput, (PGconn * c), (c), 0)                                               \
	F(int, PQflush, (PGconn * c), (c), -1)                                                     \
	F(char *, PQfname, (const PGresult *r, int col), (r, col), NULL)                           \
	V(PQfinish, (PGconn * c), (c))                                                             \
	V(PQfreemem, (void *p), (p))                                                               \
	F(int, PQgetisnull, (const PGresult *r, int row, int col), (r, row, col), 1)               \
	F(PGresult *, PQgetResult, (PGconn * c), (c), NULL)                                        \
	F(char *, PQgetvalue, (const PGresult *r, int row, int col), (r, row, col), NULL)          \
	F(int, PQisBusy, (PGconn * c), (c), 0)                                                     \
	F(int, PQnfields, (const PGresult *r), (r), 0)                                             \
	F(int, PQntuples, (const PGresult *r), (r), 0)                                             \
	F(PGPing, PQping, (const char *conninfo), (conninfo), PQPING_NO_ATTEMPT)                   \
	F(char *, PQresultErrorMessage, (const PGresult *r), (r), not_loaded)                      \
	F(ExecStatusType, PQresultStatus, (const PGresult *r), (r), PGRES_FATAL_ERROR)             \
	F(int, PQsendQuery, (PGconn * c, const char *q), (c, q), 0)                                \
	F(int, PQsendQueryParams,                                                                  \
	  (PGconn * c, const char *q, int n, const Oid *types, const char *const *values,          \
	   const int *lengths, const int *formats, int result_format),                             \
	  (c, q, n, types, values, lengths, formats, result_format), 0)                            \
	F(int, PQsetnonblocking, (PGconn * c, int arg), (c, arg), -1)                              \
	F(int, PQsocket, (const PGconn *c), (c), -1)                                               \
	F(ConnStatusType, PQstatus, (const PGconn *c), (c), CONNECTION_BAD)                        \
	F(PGTransactionStatusType, PQtransactionStatus, (const PGconn *c), (c), PQTRANS_UNKNOWN)

/* Optional: libpq 14+ (pipeline mode). An older libpq.so.5 still loads; the
 * metrics collection then sends its statements one at a time
 * (inst_pq_pipeline). */
#define PQ_FNS_14(F, V, N)                                                                         \
	F(int, PQenterPipelineMode, (PGconn * c), (c), 0)                                          \
	F(int, PQexitPipelineMode, (PGconn * c), (c), 0)                                           \
	F(int, PQpipelineSync, (PGconn * c), (c), 0)

enum {
	PQ_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N)
	PQ_FNS_14(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) PQ_ALL_COUNT
};
#define PQ_REQUIRED OP_DL_I_PQenterPipelineMode /* the first optional name */
static const char *const names[] = { PQ_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N)
					     PQ_FNS_14(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[PQ_ALL_COUNT];
_Static_assert(sizeof(names) / sizeof(names[0]) == PQ_ALL_COUNT, "one name per function");

struct op_dl_lib inst_dl_pq =
	OP_DL_LIB_INIT_OPT(INST_DL_PQ_SONAME, names, syms, PQ_ALL_COUNT, PQ_REQUIRED, NULL);

#define OP_DL_SHIM inst_dl_pq
PQ_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
PQ_FNS_14(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)

bool inst_pq_pipeline(void)
{
	return op_dl_has(&inst_dl_pq, OP_DL_I_PQenterPipelineMode) &&
	       op_dl_has(&inst_dl_pq, OP_DL_I_PQexitPipelineMode) &&
	       op_dl_has(&inst_dl_pq, OP_DL_I_PQpipelineSync);
}
