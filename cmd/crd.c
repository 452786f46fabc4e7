/* cmd/crd.c - `pgop crd`: print (or write) the CRDs generated from openapi/. */
#include "cmd/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
	"Usage: pgop crd [--kind KIND] [-o yaml|json] [--output-dir DIR]\n"
	"Prints the CustomResourceDefinitions generated from openapi/<kind>.schema.yaml:\n"
	"Cluster, Backup, ScheduledBackup (postgresql.cnpg.io) and ObjectStore\n"
	"(barmancloud.cnpg.io); YAML documents separated by ---, or a JSON List.\n"
	"  -k, --kind KIND        only this kind (kind, plural or plural.group)\n"
	"  -o, --output FORMAT    yaml (default) or json\n"
	"  -d, --output-dir DIR   write DIR/<group>_<plural>.yaml for each kind (YAML;\n"
	"                         what `ninja gen-crd` does for crd/ and charts/pgop/crds/)\n"
	"  -h, --help             this help\n";

/* Writes each kind's (or k's) CRD as DIR/<group>_<plural>.yaml, through a
 * temporary file renamed into place. 0 or 1 (logged). */
static int write_dir(const char *dir, const struct oa_kind *only)
{
	for (size_t i = 0; i < oa_kind_count(); i++) {
		const struct oa_kind *k = oa_kind_at(i);
		if (only && k != only)
			continue;
		_cleanup_(op_buf_donep) struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
		struct op_err err = OP_ERR_INIT;
		if (oa_kind_render_crd(k, &out, &err) < 0) {
			op_log_error("cannot render the CRD", "kind", k->kind, "error", err.msg);
			return 1;
		}
		_cleanup_free_ char *name = oa_kind_crd_file(k);
		_cleanup_free_ char *path = op_asprintf("%s/%s", dir, name);
		_cleanup_free_ char *tmp = op_asprintf("%s.tmp", path);
		FILE *f = fopen(tmp, "w");
		bool ok = f && fwrite(op_buf_str(&out), 1, out.len, f) == out.len;
		ok = f && fclose(f) == 0 && ok;
		if (!ok || rename(tmp, path) != 0) {
			op_log_error("cannot write the CRD", "path", path, "error", strerror(errno));
			unlink(tmp);
			return 1;
		}
	}
	return 0;
}

int cmd_crd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "output", required_argument, NULL, 'o' },
		{ "output-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum crd_format format = CRD_YAML;
	const struct oa_kind *kind = NULL;
	const char *dir = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "k:o:d:h", longopts, NULL)) != -1) {
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
		case 'k':
			kind = oa_kind_find(optarg);
			if (!kind) {
				fprintf(stderr, "pgop crd: unknown kind \"%s\"\n%s", optarg, crd_usage);
				return 2;
			}
			break;
		case 'd':
			dir = optarg;
			break;
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

	if (dir)
		return write_dir(dir, kind);
	_cleanup_(op_buf_donep) struct op_buf out = OP_BUF_INIT(OA_MAX_DOC);
	struct op_err err = OP_ERR_INIT;
	if (oa_render_crds(kind, format == CRD_JSON, &out, &err) < 0) {
		op_log_error("cannot render the CRD", "error", err.msg);
		return 1;
	}
	if (fwrite(op_buf_str(&out), 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
		op_log_error("cannot write the CRD to stdout", "error", strerror(errno));
		return 1;
	}
	return 0;
}
