/* cmd/main.c - `pgop <subcommand>`: dispatch through one static table. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "support/alloc.h"

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
	{ "crd", cmd_crd, "print the Cluster CustomResourceDefinition" },
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
		/* libcurl initialises itself on first use (kube_client's pthread_once,
		 * curl_easy_init; thread-safe since 7.84, CURL_VERSION_THREADSAFE): its
		 * global init brings libssh2's OpenSSL set-up, ~1.7 MiB of RSS that
		 * a webhook-only controller serving certificate files never needs. */
		if (!(curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_THREADSAFE) &&
		    curl_global_init(CURL_GLOBAL_ALL) != CURLE_OK) {
			fputs("pgop: cannot initialise libcurl\n", stderr);
			return 1;
		}
		int rc = subcommands[i].fn(argc - 1, argv + 1);
		curl_global_cleanup(); /* a no-op when libcurl was never initialised */
		return rc;
	}
	fprintf(stderr, "pgop: unknown command '%s'\n\n", name);
	usage(stderr);
	return 2;
}
