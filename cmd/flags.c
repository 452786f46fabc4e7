/* cmd/flags.c - table-driven flags (see flags.h). */
#include "cmd/flags.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/log.h"

static int parse_uint(const char *s, unsigned max, unsigned *ret)
{
	uint64_t v = 0;
	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > max)
			return -ERANGE;
	}
	*ret = (unsigned)v;
	return 0;
}

void cmd_strings_done(struct cmd_strings *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void cmd_print_flags(FILE *out, const struct cmd_flag *flags, size_t n_flags)
{
	for (size_t i = 0; i < n_flags; i++) {
		const struct cmd_flag *f = &flags[i];
		char left[96];
		char sh[8] = "    ";
		if (f->short_name)
			snprintf(sh, sizeof(sh), "-%c, ", f->short_name);
		snprintf(left, sizeof(left), "%s--%s%s%s", sh, f->name, f->metavar ? " " : "",
			 f->metavar ? f->metavar : "");
		fprintf(out, "  %-34s %s\n", left, f->help);
	}
}

static int store(const struct cmd_flag *f, const char *arg, void *opts)
{
	char *base = opts;
	switch (f->type) {
	case CMD_FLAG_STRING:
		*(const char **)(void *)(base + f->offset) = arg;
		return 0;
	case CMD_FLAG_STRINGS: {
		struct cmd_strings *s = (struct cmd_strings *)(void *)(base + f->offset);
		s->v = op_realloc(s->v, (s->n + 1) * sizeof(*s->v));
		s->v[s->n++] = arg;
		return 0;
	}
	case CMD_FLAG_UINT: {
		unsigned v;
		if (parse_uint(arg, f->max, &v) < 0) {
			fprintf(stderr, "pgop: --%s: expected a whole number from 0 to %u, got '%s'\n",
				f->name, f->max, arg);
			return -EINVAL;
		}
		*(unsigned *)(void *)(base + f->offset) = v;
		return 0;
	}
	case CMD_FLAG_LOG_LEVEL: {
		enum op_log_level lvl;
		if (op_log_parse_level(arg, &lvl) < 0) {
			fprintf(stderr, "pgop: --%s: expected debug, info, warn or error, got '%s'\n",
				f->name, arg);
			return -EINVAL;
		}
		*(enum op_log_level *)(void *)(base + f->offset) = lvl;
		return 0;
	}
	case CMD_FLAG_BOOL:
		*(bool *)(void *)(base + f->offset) = true;
		return 0;
	case CMD_FLAG_HELP:
		return 0;
	}
	return -EINVAL;
}

int cmd_parse_flags(const struct cmd_flag *flags, size_t n_flags, const char *usage, int argc,
		    char **argv, void *opts, int *ret_first_arg)
{
	struct option *lo = op_calloc(n_flags + 1, sizeof(*lo));
	char shorts[2 + 2 * 64 + 1] = ":"; /* leading ':' reports a missing argument as ':' */
	size_t ns = 1;
	int ret = 0;
	for (size_t i = 0; i < n_flags; i++) {
		bool has_arg = flags[i].type != CMD_FLAG_HELP && flags[i].type != CMD_FLAG_BOOL;
		lo[i] = (struct option){ flags[i].name, has_arg ? required_argument : no_argument,
					 NULL, 256 + (int)i };
		if (flags[i].short_name && ns + 3 < sizeof(shorts)) {
			shorts[ns++] = flags[i].short_name;
			if (has_arg)
				shorts[ns++] = ':';
			shorts[ns] = '\0';
		}
	}
	optind = 0; /* full re-initialisation (GNU): each subcommand parses afresh */
	opterr = 0;
	for (;;) {
		int c = getopt_long(argc, argv, shorts, lo, NULL);
		if (c == -1)
			break;
		const struct cmd_flag *f = NULL;
		if (c >= 256 && (size_t)(c - 256) < n_flags) {
			f = &flags[c - 256];
		} else {
			for (size_t i = 0; i < n_flags; i++)
				if (flags[i].short_name && flags[i].short_name == c)
					f = &flags[i];
		}
		if (c == '?' || c == ':' || !f) {
			const char *what = argv[optind - 1] ? argv[optind - 1] : "?";
			fprintf(stderr, "pgop %s: %s '%s'\nTry 'pgop %s --help'.\n", argv[0],
				c == ':' ? "missing value for" : "unknown flag", what, argv[0]);
			ret = CMD_FLAGS_USAGE;
			goto out;
		}
		if (f->type == CMD_FLAG_HELP) {
			fputs(usage, stdout);
			cmd_print_flags(stdout, flags, n_flags);
			ret = CMD_FLAGS_HELP;
			goto out;
		}
		if (store(f, optarg, opts) < 0) {
			ret = CMD_FLAGS_USAGE;
			goto out;
		}
	}
	if (ret_first_arg)
		*ret_first_arg = optind;
	else if (optind < argc) {
		fprintf(stderr, "pgop %s: unexpected argument '%s'\nTry 'pgop %s --help'.\n",
			argv[0], argv[optind], argv[0]);
		ret = CMD_FLAGS_USAGE;
	}
out:
	free(lo);
	return ret;
}
