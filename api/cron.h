/* api/cron.h - the schedule of a ScheduledBackup: cron expressions with a
 * seconds field, as CloudNativePG reads spec.schedule (robfig/cron's parser
 * with seconds), and the next fire time after a given instant, in UTC.
 *
 * Accepted forms (robfig/cron semantics, checked field by field):
 *   "SEC MIN HOUR DOM MONTH DOW"  six fields, seconds first
 *   "SEC MIN HOUR DOM MONTH"      five: the day of week is optional (robfig's
 *                                 DowOptional, what CloudNativePG admits; the
 *                                 webhook warns that six are expected)
 *   "@yearly" "@annually" "@monthly" "@weekly" "@daily" "@midnight" "@hourly"
 *   "@every <duration>"           Go duration ("1h30m", "90s", "1.5h"),
 *                                 at least one second, whole seconds
 * Each field is a comma-separated list of `*`, `?` (same as `*`), `N`,
 * `N-M`, with an optional `/STEP` (`N/STEP` means N to the maximum); months
 * take JAN-DEC and days of week SUN-SAT (any case). Ranges: seconds and
 * minutes 0-59, hours 0-23, day of month 1-31, month 1-12, day of week 0-6
 * (0 = Sunday; 7 is refused, as robfig does).
 * Day of month and day of week: when either field starts with `*` or `?`
 * (without a step above 1) both must match, otherwise either may match
 * (robfig's dayMatches).
 *
 * Pure: no clock, no allocation, no locale.
 */
#ifndef PGOP_API_CRON_H
#define PGOP_API_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "support/err.h"

/* Longest schedule text accepted. */
#define API_CRON_MAX_LEN 256

/* A parsed schedule; plain value, no pointers. */
struct api_cron {
	/* bit N set: value N matches; API_CRON_STAR: the field was `*`/`?` */
	uint64_t second, minute, hour, dom, month, dow;
	/* > 0: "@every" with this many seconds; the bit sets are unused */
	int64_t every;
	/* fields written: 6, 5 (no day of week), 0 for a descriptor */
	unsigned n_fields;
};

#define API_CRON_STAR (UINT64_C(1) << 63)

/* Parses spec into *ret. On error returns -EINVAL and err names the part
 * ("minutes field \"61\": end of range (61) above maximum (59)", "expected 5
 * or 6 fields, found 4"); *ret is untouched. */
OP_MUST_CHECK int api_cron_parse(const char *spec, struct api_cron *ret, struct op_err *err);

/* The first fire time strictly after `after` (Unix seconds, UTC) into
 * *ret_next. -ENOENT when the schedule does not fire within five years of
 * `after` (robfig's limit: "0 0 0 30 2 *" never fires); -ERANGE when
 * `after` is outside years 1970-9999. */
OP_MUST_CHECK int api_cron_next(const struct api_cron *c, int64_t after, int64_t *ret_next);

#endif
