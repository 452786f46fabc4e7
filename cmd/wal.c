/* cmd/wal.c - `pgop instance wal-archive [--config FILE] PATH` (postgres's
 * archive_command, %p) and `pgop instance wal-restore [--config FILE]
 * WALNAME DEST` (restore_command, %f %p): flags and exit codes only, the
 * work is backup/'s (bk_wal_archive, bk_wal_restore).
 *
 * Exit codes: 0 done; 1 failed (one JSON log line on stderr with the store's
 * error) or, for wal-restore, the file is not in the store (no error line:
 * postgres probes for .history files that do not exist); 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backup/backup.h"
#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "support/alloc.h"
#include "support/log.h"

struct wal_opts {
	const char *config;
	enum op_log_level log_level;
};

#define WOPT(f) offsetof(struct wal_opts, f)
static const struct cmd_flag wal_flags[] = {
	{ "config", 'c', CMD_FLAG_STRING, WOPT(config), 0, "FILE",
	  "configuration (JSON, mode 0600; default " BK_CONFIG_DEFAULT ")" },
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, WOPT(log_level), 0, "LEVEL", "debug, info, warn, error" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static int wal_archive(struct bk_config *cfg, char **args, int n)
{
	struct op_err err = OP_ERR_INIT;
	int rc = bk_wal_archive(cfg, args[0], &err);
	if (rc < 0)
		op_log_error("WAL archive failed", "wal", args[0], "error", err.msg);
	else
		op_log_debug("WAL archived", "wal", args[0]);
	return rc < 0 ? 1 : 0;
}

static int wal_restore(struct bk_config *cfg, char **args, int n)
{
	struct op_err err = OP_ERR_INIT;
	int rc = bk_wal_restore(cfg, args[0], args[1], &err);
	if (rc == -ENOENT)
		op_log_debug("WAL file not in the store", "wal", args[0], "detail", err.msg);
	else if (rc < 0)
		op_log_error("WAL restore failed", "wal", args[0], "error", err.msg);
	return rc < 0 ? 1 : 0;
}

static const struct {
	const char *name;
	int (*fn)(struct bk_config *cfg, char **args, int n);
	int n_args;
	const char *usage;
} wal_subs[] = {
	{ "wal-archive", wal_archive, 1,
	  "Usage: pgop instance wal-archive [--config FILE] PATH\nStores the WAL file PATH "
	  "(archive_command's %p) in the object store, barman-cloud layout.\n\nFlags:\n" },
	{ "wal-restore", wal_restore, 2,
	  "Usage: pgop instance wal-restore [--config FILE] WALNAME DEST\nFetches WALNAME "
	  "(restore_command's %f) from the object store into DEST (%p); exit 1 when absent."
	  "\n\nFlags:\n" },
};

int cmd_instance_wal(int argc, char **argv)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(wal_subs); i++) {
		if (strcmp(argv[0], wal_subs[i].name) != 0)
			continue;
		struct wal_opts o = { .log_level = OP_LOG_INFO };
		int first = argc;
		int r = cmd_parse_flags(wal_flags, OP_ARRAY_SIZE(wal_flags), wal_subs[i].usage, argc,
					argv, &o, &first);
		if (r)
			return r == CMD_FLAGS_HELP ? 0 : 2;
		if (argc - first != wal_subs[i].n_args) {
			fputs(wal_subs[i].usage, stderr);
			cmd_print_flags(stderr, wal_flags, OP_ARRAY_SIZE(wal_flags));
			return 2;
		}
		op_log_set_level(o.log_level);
		op_log_set_component("wal");
		struct bk_config cfg;
		struct op_err err = OP_ERR_INIT;
		const char *path = o.config ? o.config : BK_CONFIG_DEFAULT;
		if (bk_config_load(path, &cfg, &err) < 0) {
			op_log_error("WAL configuration unusable", "error", err.msg);
			return 1;
		}
		int rc = wal_subs[i].fn(&cfg, argv + first, argc - first);
		bk_config_done(&cfg);
		return rc;
	}
	return -1;
}
