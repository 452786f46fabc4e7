/* support/lsn.h - PostgreSQL's pg_lsn text ("16/B374D848"): two groups of 1 to
 * 8 hex digits (either case) around a '/', nothing else, as a 64-bit WAL
 * position. One parser for the reconciler's /pg/status fields, the instance's
 * replication answers and barman's backup.info. */
#ifndef PGOP_SUPPORT_LSN_H
#define PGOP_SUPPORT_LSN_H

#include <stdint.h>

#include "support/err.h"

#define OP_LSN_LEN 18 /* "FFFFFFFF/FFFFFFFF" and its NUL */

/* *ret = the position; -EINVAL (and *ret untouched) for anything else. */
OP_MUST_CHECK int op_lsn_parse(const char *text, uint64_t *ret);
/* out = lsn as PostgreSQL prints it (upper case, no leading zeros). */
void op_lsn_format(uint64_t lsn, char out[OP_LSN_LEN]);

#endif
