/* api/timestamp.c - sub-second status timestamps (timestamp.h). */
#include <time.h>

#include "api/timestamp.h"
#include "support/alloc.h"

char *api_time_rfc3339_us(int64_t us)
{
	int64_t sec = us / 1000000, frac = us % 1000000;
	if (frac < 0) {
		sec--;
		frac += 1000000;
	}
	time_t tt = (time_t)sec;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return op_strdup("1970-01-01T00:00:00.000000Z");
	return op_asprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
			   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			   (long long)frac);
}

int64_t api_time_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
