/* instance/pglog.h - postgres's own log records on the manager's output.
 *
 * postgres writes csvlog (api/pgparams.c: logging_collector, csvlog,
 * log_directory <controller>/log, log_filename postgres, no rotation). The
 * manager makes <controller>/log/postgres.csv a FIFO before postgres starts
 * and a thread reads it: each CSV record becomes one JSON line with
 * "logger":"postgres", "msg" the record's message and the other non-empty
 * columns under their csvlog names (log_time, error_severity, sql_state_code,
 * user_name, ...), so `kubectl logs` shows them and nothing grows on disk.
 * A record longer than INST_PGLOG_RECORD_MAX is cut there; each field is cut
 * at INST_PGLOG_FIELD_MAX bytes (marked with "...").
 *
 * The FIFO is held open for writing by the manager too, so a postgres restart
 * (the logging collector closing its end) is no end of file. When the FIFO
 * cannot be made, postgres writes a regular file as before (logged once).
 */
#ifndef PGOP_INSTANCE_PGLOG_H
#define PGOP_INSTANCE_PGLOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "support/err.h"
#include "support/log.h"

#define INST_PGLOG_FILE "postgres.csv"
#define INST_PGLOG_RECORD_MAX (32u * 1024)
#define INST_PGLOG_FIELD_MAX 4096
#define INST_PGLOG_COLUMNS 26 /* PostgreSQL 13..16 csvlog */

struct inst_pglog {
	int fd;         /* the FIFO, read end (-1 when not started) */
	int keep;       /* the FIFO, a write end of our own */
	int stop[2];    /* a pipe: written to stop the thread */
	pthread_t thread;
	bool started;
};

#define INST_PGLOG_INIT { .fd = -1, .keep = -1, .stop = { -1, -1 } }

/* Makes <log_dir>/postgres.csv a FIFO (a regular file there is replaced) and
 * starts the reader. 0, or -errno with err set (nothing left running, and no
 * FIFO: postgres would block opening one nobody reads). */
OP_MUST_CHECK int inst_pglog_start(struct inst_pglog *l, const char *log_dir, struct op_err *err);
/* Stops the reader (after what is already in the FIFO) and closes it; the
 * FIFO stays for the next start. Safe on a pglog never started. */
void inst_pglog_stop(struct inst_pglog *l);

/* Splits one CSV record in place (rec[0..len), NUL-terminated by the caller at
 * rec[len]): quoted fields lose their quotes, "" becomes ". fields[i] point
 * into rec. Returns the number of fields (at most max; the rest is dropped). */
size_t inst_pglog_split(char *rec, size_t len, char **fields, size_t max);
/* The manager's level for a csvlog error_severity (DEBUG1..5 debug; LOG, INFO,
 * NOTICE info; WARNING warn; ERROR, FATAL, PANIC error; else info). */
enum op_log_level inst_pglog_level(const char *severity);
/* Writes one record (rec[0..len), NUL at rec[len], modified) as a log line. */
void inst_pglog_emit(char *rec, size_t len);

#endif
