/* cmd/main.c - `pgop <subcommand>`: dispatch through one static table. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "support/alloc.h"
#include "support/dl_curl.h"

struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{ "controller", cmd_controller,
	  "run the operator: admission webhooks over HTTPS, health and metrics" },
	{ "validate", cmd_validate,
	  "run admission (defaulting + validation) on manifests, offline" },
	{ "crd", cmd_crd, "print the CustomResourceDefinitions (Cluster, Backup, ScheduledBackup, ObjectStore)" },
	{ "selftest", cmd_selftest,
	  "check through the API server that admission refuses and admits as pgop does" },
	{ "instance", cmd_instance, "instance manager: init, join, run (PID 1), status" },
	{ "bootstrap", cmd_bootstrap, "copy this binary to DEST (init container)" },
	{ "version", cmd_version, "print the version" },
};

static void usage(FILE *out)
{
	fputs("Usage: pgop <command> [flags]\n\nCommands:\n", out);
	for (size_t i = 0; i < OP_ARRAY_SIZE(subcommands); i++)
		fprintf(out, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
	fputs("\nRun 'pgop <command> --help' for the flags of a command.\n", out);
}

int cmd_version(int argc, char **argv)
{
	printf("pgop %s\n", PGOP_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(name, "--version") == 0)
		name = "version";
	for (size_t i = 0; i < OP_ARRAY_SIZE(subcommands); i++) {
		if (strcmp(subcommands[i].name, name) != 0)
			continue;
		/* libcurl and libpq are loaded on first use (support/dl.h): a
		 * webhook-only controller serving certificate files never maps them
		 * (nor libssh2, libcrypto, Kerberos, LDAP). libcurl older than 7.84
		 * gets its global init when loaded (support/dl_curl.c). */
		int rc = subcommands[i].fn(argc - 1, argv + 1);
		if (op_dl_loaded(&op_dl_curl))
			curl_global_cleanup();
		return rc;
	}
	fprintf(stderr, "pgop: unknown command '%s'\n\n", name);
	usage(stderr);
	return 2;
}
