/* tests/e2e/tools/tools.h - pgop-writer (prefix pw_): the fault suite's instruments.
 *
 *   pgop-writer write --conninfo C --ledger F --uncertain F [--table T] [--interval-ms 20]
 *                     [--commit-timeout-ms 5000] [--start-id 1]
 *   pgop-writer poll --targets F --out F [--interval-ms 200] [--conninfo C]
 *
 * Credentials come from libpq's environment (PGUSER, PGPASSWORD, PGDATABASE, ...); C is a
 * keyword/value conninfo appended after pgop-writer's own defaults (connect_timeout=1,
 * keepalives every second, tcp_user_timeout=3000), so a later keyword overrides them.
 * Both run until SIGTERM/SIGINT, then flush and fsync their files and exit 0.
 */
#ifndef PGOP_E2E_TOOLS_H
#define PGOP_E2E_TOOLS_H

#include <libpq-fe.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Set by SIGTERM/SIGINT (installed by pw_signals_setup, without SA_RESTART). */
extern volatile sig_atomic_t pw_stop;
void pw_signals_setup(void);

int64_t pw_now_ms(void);
/* Sleeps until the CLOCK_MONOTONIC time mono_ms or until a signal; returns at once when
 * it is past. */
void pw_sleep_until(int64_t mono_ms);
int64_t pw_mono_ms(void);

/* Connects with the defaults above, then `extra` (may be NULL), then host=HOST when host
 * is not NULL. Returns an owned connection (PQfinish) or NULL with the reason in errbuf. */
PGconn *pw_connect(const char *extra, const char *host, char *errbuf, size_t errlen);

enum pw_result {
	PW_OK,        /* the command completed (COMMIT acknowledged) */
	PW_FAILED,    /* the server said no: definitely not committed */
	PW_UNCERTAIN, /* timeout or connection lost before the answer: may have committed */
};
/* Sends `sql` with text params and waits for its result until timeout_ms (monotonic).
 * On PW_OK/PW_FAILED *ret (may be NULL) gets the owned last result (PQclear), else NULL.
 * errbuf gets the reason when not PW_OK. */
enum pw_result pw_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
		       int timeout_ms, PGresult **ret, char *errbuf, size_t errlen);

int pw_writer_main(int argc, char **argv);
int pw_poller_main(int argc, char **argv);

#endif
