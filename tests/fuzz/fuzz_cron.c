/* tests/fuzz/fuzz_cron.c - arbitrary bytes as a ScheduledBackup schedule
 * (api_cron_parse) and an instant (api_cron_next).
 *
 * Input: the first 8 bytes are the instant (little endian, folded into
 * 1970-9999), the rest the schedule text (NUL-terminated copy).
 * Invariants besides memory safety (ASan/UBSan):
 *   - a refusal is -EINVAL with a message;
 *   - a fire time is strictly after the instant and matches every field of
 *     the schedule (second, minute, hour, month, and the day by robfig's
 *     rule); the next one after it is later still;
 *   - the same input gives the same answer twice.
 * Seeds: tests/fuzz/corpus/cron/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/cron.h"
#include "support/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int bit(uint64_t set, unsigned v)
{
	return (int)((set >> v) & 1);
}

static void check_match(const struct api_cron *c, int64_t t)
{
	if (c->every > 0)
		return;
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		abort();
	if (!bit(c->second, (unsigned)tm.tm_sec) || !bit(c->minute, (unsigned)tm.tm_min) ||
	    !bit(c->hour, (unsigned)tm.tm_hour) || !bit(c->month, (unsigned)tm.tm_mon + 1))
		abort();
	int dom = bit(c->dom, (unsigned)tm.tm_mday), dow = bit(c->dow, (unsigned)tm.tm_wday);
	int star = (c->dom & API_CRON_STAR) || (c->dow & API_CRON_STAR);
	if (star ? !(dom && dow) : !(dom || dow))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8 || size > 8 + 2 * API_CRON_MAX_LEN)
		return 0;
	uint64_t raw = 0;
	for (int i = 7; i >= 0; i--)
		raw = raw << 8 | data[i];
	int64_t after = (int64_t)(raw % UINT64_C(253402300800));
	char *spec = malloc(size - 8 + 1);
	if (!spec)
		return 0;
	memcpy(spec, data + 8, size - 8);
	spec[size - 8] = '\0';
	struct api_cron c, c2;
	struct op_err err = OP_ERR_INIT, err2 = OP_ERR_INIT;
	int r = api_cron_parse(spec, &c, &err);
	int r2 = api_cron_parse(spec, &c2, &err2);
	if (r != r2)
		abort();
	if (r < 0) {
		if (r != -EINVAL || !err.msg[0] || strcmp(err.msg, err2.msg) != 0)
			abort();
		free(spec);
		return 0;
	}
	if (memcmp(&c, &c2, sizeof(c)) != 0)
		abort();
	int64_t next = 0, again = 0;
	r = api_cron_next(&c, after, &next);
	if (r == 0) {
		if (next <= after)
			abort();
		check_match(&c, next);
		if (next <= INT64_C(253402300799) && api_cron_next(&c, next, &again) == 0 &&
		    again <= next)
			abort();
	} else if (r != -ENOENT) {
		abort();
	}
	free(spec);
	return 0;
}
