/* api/cron.c - cron schedules with seconds, parsed and stepped as robfig/cron
 * does (see cron.h). */
#include "api/cron.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "support/alloc.h"

/* ---- parsing ---- */

struct cron_range {
	const char *what; /* names the part in errors */
	unsigned min, max;
	const char *const *names; /* lower-case names from min, or NULL */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun",
					   "jul", "aug", "sep", "oct", "nov", "dec" };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

static const struct cron_range ranges[] = {
	{ "seconds", 0, 59, NULL },     { "minutes", 0, 59, NULL },
	{ "hours", 0, 23, NULL },       { "day-of-month", 1, 31, NULL },
	{ "month", 1, 12, month_names }, { "day-of-week", 0, 6, dow_names },
};

/* robfig's mustParseInt: decimal digits only (a sign is refused). */
static int parse_uint(const char *s, size_t n, unsigned *ret, char *why, size_t why_len)
{
	if (n == 0) {
		snprintf(why, why_len, "empty number");
		return -EINVAL;
	}
	if (s[0] == '-') {
		snprintf(why, why_len, "negative number (%.*s) not allowed", (int)n, s);
		return -EINVAL;
	}
	unsigned long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]) || v > 100000) {
			snprintf(why, why_len, "failed to parse int from %.*s", (int)n, s);
			return -EINVAL;
		}
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*ret = (unsigned)v;
	return 0;
}

/* robfig's parseIntOrName: a name of the range (any case), else a number. */
static int int_or_name(const struct cron_range *r, const char *s, size_t n, unsigned *ret,
		       char *why, size_t why_len)
{
	for (unsigned i = 0; r->names && i <= r->max - r->min; i++) {
		if (strlen(r->names[i]) == n && strncasecmp(r->names[i], s, n) == 0) {
			*ret = r->min + i;
			return 0;
		}
	}
	return parse_uint(s, n, ret, why, why_len);
}

/* One element of a list: `*`, `?`, `N`, `N-M`, each with an optional `/STEP`
 * (robfig's getRange). s[0..n) is the element. */
static int parse_range(const struct cron_range *r, const char *s, size_t n, uint64_t *bits,
		       char *why, size_t why_len)
{
	const char *slash = memchr(s, '/', n);
	size_t rn = slash ? (size_t)(slash - s) : n;
	if (slash && memchr(slash + 1, '/', n - rn - 1)) {
		snprintf(why, why_len, "too many slashes");
		return -EINVAL;
	}
	unsigned start, end, step = 1;
	uint64_t extra = 0;
	const char *dash = memchr(s, '-', rn);
	bool single = !dash;
	if (rn == 1 && (s[0] == '*' || s[0] == '?')) {
		start = r->min, end = r->max, extra = API_CRON_STAR;
	} else {
		size_t ln = dash ? (size_t)(dash - s) : rn;
		if (dash && memchr(dash + 1, '-', rn - ln - 1)) {
			snprintf(why, why_len, "too many hyphens");
			return -EINVAL;
		}
		if (int_or_name(r, s, ln, &start, why, why_len) < 0)
			return -EINVAL;
		end = start;
		if (dash && int_or_name(r, dash + 1, rn - ln - 1, &end, why, why_len) < 0)
			return -EINVAL;
	}
	if (slash) {
		if (parse_uint(slash + 1, n - rn - 1, &step, why, why_len) < 0)
			return -EINVAL;
		if (single) /* "N/STEP" means N to the maximum */
			end = r->max;
		if (step > 1)
			extra = 0;
	}
	if (start < r->min || end > r->max || start > end || step == 0) {
		if (start < r->min)
			snprintf(why, why_len, "beginning of range (%u) below minimum (%u)", start,
				 r->min);
		else if (end > r->max)
			snprintf(why, why_len, "end of range (%u) above maximum (%u)", end, r->max);
		else if (start > end)
			snprintf(why, why_len, "beginning of range (%u) beyond end of range (%u)",
				 start, end);
		else
			snprintf(why, why_len, "step of range should be a positive number");
		return -EINVAL;
	}
	for (unsigned v = start; v <= end; v += step)
		*bits |= UINT64_C(1) << v;
	*bits |= extra;
	return 0;
}

/* A comma-separated list; empty elements are skipped (robfig's FieldsFunc). */
static int parse_field(const struct cron_range *r, const char *s, size_t n, uint64_t *ret,
		       struct op_err *err)
{
	uint64_t bits = 0;
	const char *p = s, *end = s + n;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
		char why[160];
		if (len && parse_range(r, p, len, &bits, why, sizeof(why)) < 0)
			return op_err_set(err, -EINVAL, "%s field \"%.*s\": %s", r->what, (int)n, s,
					  why);
		p += len + 1;
	}
	if (!bits)
		return op_err_set(err, -EINVAL, "%s field \"%.*s\": no value", r->what, (int)n, s);
	*ret = bits;
	return 0;
}

/* Go's time.ParseDuration into whole nanoseconds: [+-]? then one or more
 * <decimal><unit> (units ns us µs μs ms s m h), or "0". */
static int parse_duration(const char *s, int64_t *ret_ns)
{
	static const struct {
		const char *unit;
		int64_t ns;
	} units[] = {
		{ "ns", 1 },	{ "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
		{ "ms", 1000000 }, { "s", 1000000000 }, { "m", INT64_C(60000000000) },
		{ "h", INT64_C(3600000000000) },
	};
	bool neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (strcmp(s, "0") == 0) {
		*ret_ns = 0;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	__int128 total = 0;
	while (*s) {
		__int128 whole = 0, frac = 0, scale = 1;
		const char *start = s;
		while (isdigit((unsigned char)*s) && whole < INT64_MAX)
			whole = whole * 10 + (*s++ - '0');
		bool has_whole = s != start;
		bool has_frac = false;
		if (*s == '.') {
			s++;
			for (; isdigit((unsigned char)*s); s++, has_frac = true)
				if (scale < INT64_C(1000000000000000000))
					frac = frac * 10 + (*s - '0'), scale *= 10;
		}
		if (!has_whole && !has_frac)
			return -EINVAL;
		size_t u = 0, ulen = 0;
		for (size_t i = 0; i < OP_ARRAY_SIZE(units); i++) {
			size_t l = strlen(units[i].unit);
			if (strncmp(s, units[i].unit, l) == 0 && l > ulen)
				u = i, ulen = l;
		}
		if (!ulen)
			return -EINVAL; /* missing or unknown unit */
		s += ulen;
		total += whole * units[u].ns + frac * units[u].ns / scale;
		if (total > INT64_MAX)
			return -ERANGE;
	}
	*ret_ns = (int64_t)(neg ? -total : total);
	return 0;
}

/* "@..." descriptors (robfig's parseDescriptor). */
static int parse_descriptor(const char *spec, struct api_cron *c, struct op_err *err)
{
	static const struct {
		const char *name;
		uint64_t hour_all, dom_all, month_all, dow_all; /* 1: every value */
	} descs[] = {
		{ "@yearly", 0, 0, 0, 1 },  { "@annually", 0, 0, 0, 1 }, { "@monthly", 0, 0, 1, 1 },
		{ "@weekly", 0, 1, 1, 0 },  { "@daily", 0, 1, 1, 1 },	 { "@midnight", 0, 1, 1, 1 },
		{ "@hourly", 1, 1, 1, 1 },
	};
	memset(c, 0, sizeof(*c));
	if (strncmp(spec, "@every ", 7) == 0) {
		int64_t ns = 0;
		if (parse_duration(spec + 7, &ns) < 0)
			return op_err_set(err, -EINVAL, "failed to parse duration \"%s\"", spec + 7);
		c->every = ns < INT64_C(1000000000) ? 1 : ns / INT64_C(1000000000);
		return 0;
	}
	for (size_t i = 0; i < OP_ARRAY_SIZE(descs); i++) {
		if (strcmp(spec, descs[i].name) != 0)
			continue;
		uint64_t all_hours = ((UINT64_C(1) << 24) - 1) | API_CRON_STAR;
		uint64_t all_dom = (((UINT64_C(1) << 32) - 1) & ~UINT64_C(1)) | API_CRON_STAR;
		uint64_t all_months = (((UINT64_C(1) << 13) - 1) & ~UINT64_C(1)) | API_CRON_STAR;
		uint64_t all_dow = ((UINT64_C(1) << 7) - 1) | API_CRON_STAR;
		c->second = c->minute = 1;
		c->hour = descs[i].hour_all ? all_hours : 1;
		c->dom = descs[i].dom_all ? all_dom : UINT64_C(1) << 1;
		c->month = descs[i].month_all ? all_months : UINT64_C(1) << 1;
		c->dow = descs[i].dow_all ? all_dow : 1;
		return 0;
	}
	return op_err_set(err, -EINVAL, "unrecognized descriptor \"%s\"", spec);
}

int api_cron_parse(const char *spec, struct api_cron *ret, struct op_err *err)
{
	if (!spec)
		return op_err_set(err, -EINVAL, "empty spec string");
	size_t len = strlen(spec);
	if (len > API_CRON_MAX_LEN)
		return op_err_set(err, -EINVAL, "longer than %d bytes", API_CRON_MAX_LEN);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)spec[i] < 0x20 && spec[i] != '\t')
			return op_err_set(err, -EINVAL, "control character at byte %zu", i);
	while (*spec == ' ' || *spec == '\t')
		spec++;
	if (!*spec)
		return op_err_set(err, -EINVAL, "empty spec string");
	struct api_cron c = { 0 };
	if (*spec == '@') {
		int r = parse_descriptor(spec, &c, err);
		if (r < 0)
			return r;
		*ret = c;
		return 0;
	}
	if (strncmp(spec, "TZ=", 3) == 0 || strncmp(spec, "CRON_TZ=", 8) == 0)
		return op_err_set(err, -EINVAL, "time zones are not supported: schedules are UTC");
	const char *fs[7];
	size_t fl[7], n = 0;
	for (const char *p = spec; *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *start = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (n < 7)
			fs[n] = start, fl[n] = (size_t)(p - start);
		n++;
	}
	if (n < 5 || n > 6)
		return op_err_set(err, -EINVAL, "expected 5 or 6 fields (seconds minutes hours "
						"day-of-month month [day-of-week]), found %zu",
				  n);
	uint64_t *out[] = { &c.second, &c.minute, &c.hour, &c.dom, &c.month, &c.dow };
	for (size_t i = 0; i < n; i++) {
		int r = parse_field(&ranges[i], fs[i], fl[i], out[i], err);
		if (r < 0)
			return r;
	}
	if (n == 5) /* robfig's DowOptional: a missing day of week is `*` */
		c.dow = ((UINT64_C(1) << 7) - 1) | API_CRON_STAR;
	c.n_fields = (unsigned)n;
	*ret = c;
	return 0;
}

/* ---- next fire time ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

struct civil {
	int64_t year;
	unsigned month, day, hour, minute, second, wday;
};

static struct civil civil_from(int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400;
	if (secs < 0)
		secs += 86400, days--;
	struct civil c = { .hour = (unsigned)(secs / 3600), .minute = (unsigned)(secs / 60 % 60),
			   .second = (unsigned)(secs % 60),
			   .wday = (unsigned)(((days % 7) + 11) % 7) }; /* 1970-01-01: Thursday */
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	c.day = doy - (153 * mp + 2) / 5 + 1;
	c.month = mp < 10 ? mp + 3 : mp - 9;
	c.year = (int64_t)yoe + era * 400 + (c.month <= 2);
	return c;
}

static bool day_matches(const struct api_cron *s, const struct civil *c)
{
	bool dom = (s->dom >> c->day) & 1, dow = (s->dow >> c->wday) & 1;
	if ((s->dom & API_CRON_STAR) || (s->dow & API_CRON_STAR))
		return dom && dow;
	return dom || dow;
}

#define BIT(set, v) (((set) >> (v)) & 1)

int api_cron_next(const struct api_cron *s, int64_t after, int64_t *ret_next)
{
	/* 1970-01-01 .. 9999-12-31T23:59:59Z */
	if (after < 0 || after > INT64_C(253402300799))
		return -ERANGE;
	if (s->every > 0) {
		*ret_next = after + s->every;
		return 0;
	}
	int64_t t = after + 1; /* robfig: the next whole second */
	bool added = false;
	int64_t year_limit = civil_from(t).year + 5;
wrap:;
	struct civil c = civil_from(t);
	if (c.year > year_limit)
		return -ENOENT;
	while (!BIT(s->month, c.month)) {
		if (!added)
			added = true;
		/* the first of the next month, midnight */
		unsigned m = c.month == 12 ? 1 : c.month + 1;
		int64_t y = c.month == 12 ? c.year + 1 : c.year;
		t = days_from_civil(y, m, 1) * 86400;
		c = civil_from(t);
		if (c.month == 1)
			goto wrap;
	}
	while (!day_matches(s, &c)) {
		if (!added) {
			added = true;
			t -= c.hour * 3600 + c.minute * 60 + c.second;
		}
		t += 86400;
		c = civil_from(t);
		if (c.day == 1)
			goto wrap;
	}
	while (!BIT(s->hour, c.hour)) {
		if (!added) {
			added = true;
			t -= c.minute * 60 + c.second;
		}
		t += 3600;
		c = civil_from(t);
		if (c.hour == 0)
			goto wrap;
	}
	while (!BIT(s->minute, c.minute)) {
		if (!added) {
			added = true;
			t -= c.second;
		}
		t += 60;
		c = civil_from(t);
		if (c.minute == 0)
			goto wrap;
	}
	while (!BIT(s->second, c.second)) {
		added = true;
		t += 1;
		c = civil_from(t);
		if (c.second == 0)
			goto wrap;
	}
	*ret_next = t;
	return 0;
}
