/* cmd/validate.c - `pgop validate`: the admission webhooks, offline. Flag
 * parsing only: the pipeline (files, defaulting, validation, AdmissionReview
 * answers, text or JSON report) is wh_validate_files() (webhooks/offline.h).
 *
 * Exit: 0 all admitted, 1 something denied, 2 usage, read or parse errors.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "support/alloc.h"
#include "support/log.h"
#include "webhooks/offline.h"

struct validate_opts {
	struct cmd_strings files;
	struct cmd_strings old_files;
	const char *output;
	const char *webhook;
};

static const struct cmd_flag validate_flags[] = {
	{ "file", 'f', CMD_FLAG_STRINGS, offsetof(struct validate_opts, files), 0, "FILE",
	  "manifest to check, YAML or JSON, '-' for stdin (repeatable, required)" },
	{ "old", 0, CMD_FLAG_STRINGS, offsetof(struct validate_opts, old_files), 0, "FILE",
	  "stored objects: one found here by kind and namespace/name is checked as an UPDATE" },
	{ "output", 'o', CMD_FLAG_STRING, offsetof(struct validate_opts, output), 0, "FORMAT",
	  "text (default) or json" },
	{ "webhook", 0, CMD_FLAG_STRING, offsetof(struct validate_opts, webhook), 0, "KIND",
	  "for AdmissionReview input: validate (default) or mutate" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char validate_usage[] =
	"Usage: pgop validate -f FILE [-f FILE...] [FILE...] [--old FILE] [-o text|json]\n"
	"Runs the admission webhooks (defaults, then validation) on manifests: Cluster,\n"
	"Backup, ScheduledBackup (postgresql.cnpg.io) and ObjectStore (barmancloud.cnpg.io).\n"
	"Exit status: 0 all admitted, 1 some object denied, 2 usage or input errors.\n\nFlags:\n";

int cmd_validate(int argc, char **argv)
{
	struct validate_opts o = { 0 };
	int rc = 2;
	int first_arg = argc;
	int r = cmd_parse_flags(validate_flags, OP_ARRAY_SIZE(validate_flags), validate_usage,
				argc, argv, &o, &first_arg);
	if (r == CMD_FLAGS_HELP) {
		rc = 0;
		goto out;
	}
	if (r)
		goto out;
	/* A shell glob after -f expands to one -f and more names: take those as files too. */
	for (int i = first_arg; i < argc; i++) {
		o.files.v = op_realloc(o.files.v, (o.files.n + 1) * sizeof(*o.files.v));
		o.files.v[o.files.n++] = argv[i];
	}
	if (o.files.n == 0) {
		fputs("pgop validate: at least one -f FILE is required\n"
		      "Try 'pgop validate --help'.\n",
		      stderr);
		goto out;
	}
	if (o.output && strcmp(o.output, "json") != 0 && strcmp(o.output, "text") != 0) {
		fprintf(stderr, "pgop validate: -o: expected text or json, got '%s'\n", o.output);
		goto out;
	}
	if (o.webhook && strcmp(o.webhook, "validate") != 0 && strcmp(o.webhook, "mutate") != 0) {
		fprintf(stderr, "pgop validate: --webhook: expected validate or mutate, got '%s'\n",
			o.webhook);
		goto out;
	}
	op_log_set_component("validate");
	const struct wh_offline_opts wo = {
		.files = o.files.v,
		.n_files = o.files.n,
		.old_files = o.old_files.v,
		.n_old_files = o.old_files.n,
		.json = o.output && strcmp(o.output, "json") == 0,
		.review_kind = o.webhook && strcmp(o.webhook, "mutate") == 0 ? WH_MUTATE : WH_VALIDATE,
		.diag = stderr,
	};
	struct wh_offline_summary sum;
	struct op_err err = OP_ERR_INIT;
	if (wh_validate_files(&wo, stdout, &sum, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		goto out;
	}
	rc = sum.input_errors ? 2 : sum.denied ? 1 : 0;
out:
	cmd_strings_done(&o.files);
	cmd_strings_done(&o.old_files);
	return rc;
}
