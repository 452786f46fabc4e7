/* cmd/flags.h - table-driven command-line flags for subcommands (getopt_long).
 *
 * A subcommand describes its flags in a static const table of struct cmd_flag,
 * each row naming the option, its type and where in the subcommand's options
 * struct the value goes (offsetof). Strings are BORROWED from argv.
 */
#ifndef PGOP_CMD_FLAGS_H
#define PGOP_CMD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "support/err.h"

enum cmd_flag_type {
	CMD_FLAG_STRING,    /* const char *            */
	CMD_FLAG_STRINGS,   /* struct cmd_strings (repeatable) */
	CMD_FLAG_UINT,      /* unsigned, decimal, <= max */
	CMD_FLAG_LOG_LEVEL, /* enum op_log_level        */
	CMD_FLAG_HELP,      /* prints usage, exit 0     */
	CMD_FLAG_BOOL,      /* bool, set to true; takes no value */
};

/* A repeatable string flag's values; v is OWNED (free), the strings borrowed. */
struct cmd_strings {
	const char **v;
	size_t n;
};

struct cmd_flag {
	const char *name;  /* long name without "--" */
	char short_name;   /* 0 when none */
	enum cmd_flag_type type;
	size_t offset;     /* into the options struct */
	unsigned max;      /* CMD_FLAG_UINT: inclusive upper bound */
	const char *metavar;
	const char *help;
};

/* Return values of cmd_parse_flags besides 0. */
#define CMD_FLAGS_HELP 1  /* --help was printed: exit 0 */
#define CMD_FLAGS_USAGE 2 /* bad usage, message printed to stderr: exit 2 */

/* Parses argv (argv[0] = subcommand name) into opts. usage is printed on
 * --help (to stdout) with the flag list. Positional arguments are refused when
 * ret_first_arg is NULL, else *ret_first_arg is the index of the first one
 * (argc when none; GNU getopt moves them to the end). */
OP_MUST_CHECK
int cmd_parse_flags(const struct cmd_flag *flags, size_t n_flags, const char *usage, int argc,
		    char **argv, void *opts, int *ret_first_arg);
/* Prints "  -f, --file FILE   help" lines. */
void cmd_print_flags(FILE *out, const struct cmd_flag *flags, size_t n_flags);
void cmd_strings_done(struct cmd_strings *s);

#endif
