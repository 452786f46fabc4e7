/* api/timestamp.c - sub-second status timestamps (timestamp.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
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

char *api_time_rfc3339(int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return op_strdup("1970-01-01T00:00:00Z");
	return op_asprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
			   tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* "…[.fraction]Z": the whole seconds, and the fraction in nanoseconds rounded
 * up (digits past the ninth only round it up). */
static int time_parse(const char *s, int64_t *ret_s, int64_t *ret_ns)
{
	struct tm tm = { 0 };
	const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!end)
		return -EINVAL;
	int64_t ns = 0, scale = 100000000;
	bool below = false; /* a non-zero digit past the ninth */
	if (*end == '.') { /* fractional seconds */
		const char *digits = ++end;
		for (; *end >= '0' && *end <= '9'; end++) {
			if (scale)
				ns += (*end - '0') * scale;
			else
				below |= *end != '0';
			scale /= 10;
		}
		if (end == digits)
			return -EINVAL;
	}
	if (strcmp(end, "Z") != 0)
		return -EINVAL;
	*ret_s = (int64_t)timegm(&tm);
	*ret_ns = ns + below;
	return 0;
}

int api_time_parse(const char *s, int64_t *ret)
{
	int64_t sec, ns;
	int r = time_parse(s, &sec, &ns);
	if (r == 0)
		*ret = sec;
	return r;
}

int api_time_parse_ms(const char *s, int64_t *ret)
{
	int64_t sec, ns;
	int r = time_parse(s, &sec, &ns);
	if (r == 0)
		*ret = sec * 1000 + (ns + 999999) / 1000000;
	return r;
}
