/* cmd/crd.c - `pgop crd`: print the Cluster CRD generated from openapi/. */
#include "cmd/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "openapi/openapi.h"
#include "support/alloc.h"
#include "support/log.h"

enum crd_format { CRD_YAML, CRD_JSON };

static const struct {
	const char *name;
	enum crd_format format;
} crd_formats[] = {
	{ "yaml", CRD_YAML },
	{ "json", CRD_JSON },
};

static const char crd_usage[] =
	"Usage: pgop crd [-o yaml|json]\n"
	"Prints the postgresql.cnpg.io Cluster CustomResourceDefinition generated from\n"
	"openapi/cluster.schema.yaml (the content of crd/postgresql.cnpg.io_clusters.yaml).\n"
	"  -o, --output FORMAT   yaml (default) or json\n"
	"  -h, --help            this help\n";

static int render(enum crd_format format, struct op_buf *out, struct op_err *err)
{
	return format == CRD_YAML ? oa_render_crd(out, err) : oa_render_crd_json(out, err);
}

int cmd_crd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum crd_format format = CRD_YAML;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': {
			size_t i;
			for (i = 0; i < OP_ARRAY_SIZE(crd_formats); i++)
				if (strcmp(optarg, crd_formats[i].name) == 0)
					break;
			if (i == OP_ARRAY_SIZE(crd_formats)) {
				fprintf(stderr, "pgop crd: unknown output format \"%s\"\n%s", optarg,
					crd_usage);
				return 2;
			}
			format = crd_formats[i].format;
			break;
		}
		case 'h':
			fputs(crd_usage, stdout);
			return 0;
		default:
			fputs(crd_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pgop crd: unexpected argument \"%s\"\n%s", argv[optind], crd_usage);
		return 2;
	}

	_cleanup_(op_buf_donep) struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
	struct op_err err = OP_ERR_INIT;
	if (render(format, &out, &err) < 0) {
		op_log_error("cannot render the CRD", "error", err.msg);
		return 1;
	}
	if (fwrite(op_buf_str(&out), 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
		op_log_error("cannot write the CRD to stdout", "error", strerror(errno));
		return 1;
	}
	return 0;
}
