/* api/barman_args.c - the additionalCommandArgs options pgop acts on
 * (api/barman_args.h): a table of options per barman-cloud command, each
 * with the kind of its value and where it goes. */
#include "api/barman_args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"

enum kind { SIZE_ARCHIVE, SIZE_CHUNK, SECONDS, JOBS, FLAG };

#define TOOL(t) (1u << (t))
#define ALL_TOOLS                                                                                  \
	(TOOL(API_BARMAN_WAL_ARCHIVE) | TOOL(API_BARMAN_WAL_RESTORE) | TOOL(API_BARMAN_BACKUP) |  \
	 TOOL(API_BARMAN_RESTORE))

static const struct option {
	const char *name, *short_name; /* "--max-archive-size", "-S" (or NULL) */
	unsigned tools;                /* TOOL() bits of the commands that take it */
	enum kind kind;
} options[] = {
	{ "--max-archive-size", "-S", TOOL(API_BARMAN_BACKUP), SIZE_ARCHIVE },
	{ "--min-chunk-size", NULL, TOOL(API_BARMAN_BACKUP), SIZE_CHUNK },
	{ "--jobs", "-J", TOOL(API_BARMAN_BACKUP), JOBS },
	{ "--immediate-checkpoint", NULL, TOOL(API_BARMAN_BACKUP), FLAG },
	{ "--read-timeout", NULL, ALL_TOOLS, SECONDS },
};

static const char *const fields[] = {
	[API_BARMAN_WAL_ARCHIVE] = "wal.archiveAdditionalCommandArgs",
	[API_BARMAN_WAL_RESTORE] = "wal.restoreAdditionalCommandArgs",
	[API_BARMAN_BACKUP] = "data.additionalCommandArgs",
	[API_BARMAN_RESTORE] = "data.restoreAdditionalCommandArgs",
};

const char *api_barman_args_field(enum api_barman_tool tool)
{
	return (unsigned)tool < OP_ARRAY_SIZE(fields) ? fields[tool] : "?";
}

int api_barman_size_parse(const char *s, uint64_t *ret)
{
	char v[64];
	size_t len = strlen(s);
	if (len == 0 || len >= sizeof(v))
		return -EINVAL;
	for (size_t i = 0; i <= len; i++)
		v[i] = (char)toupper((unsigned char)s[i]);
	double value;
	if (v[len - 1] != 'B') {
		if (strspn(v, "0123456789") != len || len > 18)
			return -EINVAL;
		value = strtod(v, NULL);
	} else {
		bool si = len >= 3 && v[len - 2] == 'I'; /* barman: "iB" is base 1000 */
		size_t idx = si ? 3 : 2;
		double base = si ? 1000 : 1024, mult = base;
		const char *p = len >= idx ? strchr("KMGTPEZY", v[len - idx]) : NULL;
		if (!p || !*p) { /* no prefix: "1234B" */
			if (si || len < 2 || strspn(v, "0123456789") != len - 1 || len > 19)
				return -EINVAL;
			v[len - 1] = 0;
			value = strtod(v, NULL);
		} else {
			for (const char *q = "KMGTPEZY"; q < p; q++)
				mult *= base;
			v[len - idx] = 0;
			char *end;
			if (!isdigit((unsigned char)v[0]) && v[0] != '.')
				return -EINVAL;
			value = strtod(v, &end);
			if (*end || !isfinite(value))
				return -EINVAL;
			value *= mult; /* int() truncates: the cast below */
		}
	}
	if (!(value >= 1) || value >= 9.2e18) /* int() of it, then barman's "< 1" */
		return -EINVAL;
	*ret = (uint64_t)value;
	return 0;
}

static const struct option *find_option(const char *arg, size_t name_len)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(options); i++) {
		const struct option *o = &options[i];
		if ((strlen(o->name) == name_len && !strncmp(arg, o->name, name_len)) ||
		    (o->short_name && strlen(o->short_name) == name_len &&
		     !strncmp(arg, o->short_name, name_len)))
			return o;
	}
	return NULL;
}

/* value (of option o, element i) into ret. */
static int set_value(const struct option *o, const char *value, size_t i,
		     struct api_barman_args *ret, struct op_err *err)
{
	uint64_t size;
	char *end;
	long n;
	switch (o->kind) {
	case SIZE_ARCHIVE:
		if (api_barman_size_parse(value, &size) < 0 || size < API_BARMAN_ARCHIVE_MIN)
			return op_err_set(err, -EINVAL, "[%zu]: %s: expected a size of 1MB or more "
					  "(barman's: 100GB, 5MB, 1024), got '%s'", i, o->name, value);
		ret->max_archive_size = size > API_BARMAN_ARCHIVE_MAX ? API_BARMAN_ARCHIVE_MAX : size;
		return 0;
	case SIZE_CHUNK:
		if (api_barman_size_parse(value, &size) < 0 || size < API_BARMAN_CHUNK_MIN ||
		    size > API_BARMAN_CHUNK_MAX)
			return op_err_set(err, -EINVAL, "[%zu]: %s: expected a size from 5MB to 256MB "
					  "(S3's smallest part; pgop holds jobs + 1 of them), got '%s'",
					  i, o->name, value);
		ret->min_chunk_size = size;
		return 0;
	case SECONDS:
	case JOBS:
		errno = 0;
		n = strtol(value, &end, 10);
		long max = o->kind == JOBS ? API_BARMAN_JOBS_MAX : API_BARMAN_READ_TIMEOUT_MAX;
		if (!isdigit((unsigned char)value[0]) || *end || errno || n < 1 || n > max)
			return op_err_set(err, -EINVAL, "[%zu]: %s: expected %s 1..%ld, got '%s'", i,
					  o->name, o->kind == JOBS ? "a number of jobs" : "whole seconds",
					  max, value);
		if (o->kind == JOBS)
			ret->jobs = (unsigned)n;
		else
			ret->read_timeout_s = n;
		return 0;
	case FLAG:
		ret->immediate_checkpoint = true;
		return 0;
	}
	return -EINVAL;
}

int api_barman_args_parse(enum api_barman_tool tool, const char *const *args, size_t n,
			  struct api_barman_args *ret, api_barman_ignored_fn ignored, void *ud,
			  struct op_err *err)
{
	*ret = (struct api_barman_args){ 0 };
	for (size_t i = 0; i < n; i++) {
		const char *a = args[i] ? args[i] : "";
		const char *eq = strchr(a, '=');
		size_t name_len = eq ? (size_t)(eq - a) : strlen(a);
		const struct option *o = a[0] == '-' ? find_option(a, name_len) : NULL;
		if (!o || !(o->tools & TOOL(tool))) {
			if (ignored)
				ignored(ud, i, a);
			/* "--other value": the value goes with the option it follows */
			if (a[0] == '-' && !eq && i + 1 < n && args[i + 1] && args[i + 1][0] != '-')
				i++;
			continue;
		}
		const char *value = eq ? eq + 1 : NULL;
		if (o->kind == FLAG && value)
			return op_err_set(err, -EINVAL, "[%zu]: %s takes no value", i, o->name);
		if (o->kind != FLAG && !value) {
			if (i + 1 == n || !args[i + 1])
				return op_err_set(err, -EINVAL, "[%zu]: %s needs a value", i, o->name);
			value = args[++i];
		}
		int rc = set_value(o, value ? value : "", i, ret, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}
