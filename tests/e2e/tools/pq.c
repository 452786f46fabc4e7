/* tests/e2e/tools/pq.c - clocks, signals and libpq with deadlines for pgop-writer. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "support/alloc.h"
#include "tests/e2e/tools/tools.h"

volatile sig_atomic_t pw_stop;

static void on_stop(int sig)
{
	(void)sig;
	pw_stop = 1;
}

void pw_signals_setup(void)
{
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: sleeps return */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t pw_now_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int64_t pw_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

void pw_sleep_until(int64_t mono_ms)
{
	struct timespec ts = { .tv_sec = mono_ms / 1000, .tv_nsec = (mono_ms % 1000) * 1000000 };

	if (!pw_stop)
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static const char defaults[] = "connect_timeout=1 keepalives=1 keepalives_idle=1 "
			       "keepalives_interval=1 keepalives_count=3 tcp_user_timeout=3000 "
			       "application_name=pgop-writer";

PGconn *pw_connect(const char *extra, const char *host, char *errbuf, size_t errlen)
{
	_cleanup_free_ char *ci = op_asprintf("%s %s%s%s", defaults, extra ? extra : "",
					      host ? " host=" : "", host ? host : "");
	PGconn *c = PQconnectdb(ci);

	if (PQstatus(c) == CONNECTION_OK)
		return c;
	snprintf(errbuf, errlen, "%s", c ? PQerrorMessage(c) : "out of memory");
	errbuf[strcspn(errbuf, "\n")] = '\0';
	PQfinish(c);
	return NULL;
}

/* Waits until the socket is readable or the deadline; 1 readable, 0 timeout, -1 error. */
static int wait_readable(PGconn *c, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - pw_mono_ms();
		struct pollfd p = { .fd = PQsocket(c), .events = POLLIN };
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

enum pw_result pw_exec(PGconn *c, const char *sql, int nparams, const char *const *params,
		       int timeout_ms, PGresult **ret, char *errbuf, size_t errlen)
{
	int64_t deadline = pw_mono_ms() + timeout_ms;
	PGresult *last = NULL;
	enum pw_result res;

	if (ret)
		*ret = NULL;
	errbuf[0] = '\0';
	if (!PQsendQueryParams(c, sql, nparams, NULL, params, NULL, NULL, 0)) {
		/* nothing reached the server when the send itself failed on a bad connection */
		snprintf(errbuf, errlen, "send: %s", PQerrorMessage(c));
		errbuf[strcspn(errbuf, "\n")] = '\0';
		return PQstatus(c) == CONNECTION_BAD ? PW_UNCERTAIN : PW_FAILED;
	}
	for (;;) {
		PGresult *r;

		while (PQisBusy(c)) {
			int w = wait_readable(c, deadline);

			if (w <= 0) {
				snprintf(errbuf, errlen, "%s after %d ms",
					 w == 0 ? "no answer" : "poll failed", timeout_ms);
				PQclear(last);
				return PW_UNCERTAIN;
			}
			if (!PQconsumeInput(c))
				break; /* connection lost: PQgetResult reports it */
		}
		r = PQgetResult(c);
		if (!r)
			break;
		PQclear(last);
		last = r;
		if (PQstatus(c) == CONNECTION_BAD)
			break;
	}
	if (!last || PQstatus(c) == CONNECTION_BAD) {
		/* the answer, if any, may not have been the COMMIT's: the server may have
		 * committed before the connection went away */
		snprintf(errbuf, errlen, "connection lost: %s", PQerrorMessage(c));
		errbuf[strcspn(errbuf, "\n")] = '\0';
		PQclear(last);
		return PW_UNCERTAIN;
	}
	switch (PQresultStatus(last)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
		res = PW_OK;
		break;
	default: {
		/* An ERROR rolled the statement's transaction back; FATAL/PANIC end the session
		 * at a point we cannot see (e.g. after the local commit): uncertain. */
		const char *sev = PQresultErrorField(last, PG_DIAG_SEVERITY_NONLOCALIZED);

		snprintf(errbuf, errlen, "%s", PQresultErrorMessage(last));
		errbuf[strcspn(errbuf, "\n")] = '\0';
		res = sev && strcmp(sev, "ERROR") == 0 ? PW_FAILED : PW_UNCERTAIN;
		break;
	}
	}
	if (ret)
		*ret = last;
	else
		PQclear(last);
	return res;
}
