/* cmd/restore.c - `pgop instance restore --config FILE --pgdata DIR
 * [--backup-id ID|latest] [--target-time T | --target-lsn L | --target-xid X |
 * --target-name N | --target-immediate] [--exclusive] [--target-tli T]
 * [--tablespace NAME:LOCATION]...`: a
 * PGDATA recovered from a barman object store (the base backup, then archive
 * recovery to the target and promotion), without a Cluster. Flags only; the
 * work is inst_recover (instance/recovery.c).
 *
 * Exit codes: 0 recovered and stopped; 1 failed (one JSON log line); 2 usage. */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "backup/backup.h"
#include "instance/instance.h"
#include "support/alloc.h"
#include "support/log.h"

struct restore_opts {
	const char *config, *backup_id, *pgdata, *pg_bindir, *socket_dir, *pgop;
	const char *target_time, *target_lsn, *target_xid, *target_name, *target_tli;
	struct cmd_strings tablespaces;
	bool target_immediate, exclusive;
	unsigned port, timeout, pg_major;
	enum op_log_level log_level;
};

#define ROPT(f) offsetof(struct restore_opts, f)
static const struct cmd_flag restore_flags[] = {
	{ "config", 'c', CMD_FLAG_STRING, ROPT(config), 0, "FILE",
	  "the source store: wal-restore's configuration (JSON, mode 0600)" },
	{ "pgdata", 'D', CMD_FLAG_STRING, ROPT(pgdata), 0, "DIR", "data directory (absent or empty)" },
	{ "backup-id", 0, CMD_FLAG_STRING, ROPT(backup_id), 0, "ID",
	  "the base backup (default latest: the one the target needs)" },
	{ "target-time", 0, CMD_FLAG_STRING, ROPT(target_time), 0, "T",
	  "RFC 3339 or PostgreSQL timestamp" },
	{ "target-lsn", 0, CMD_FLAG_STRING, ROPT(target_lsn), 0, "L", "an LSN X/Y" },
	{ "target-xid", 0, CMD_FLAG_STRING, ROPT(target_xid), 0, "X", "a transaction id" },
	{ "target-name", 0, CMD_FLAG_STRING, ROPT(target_name), 0, "N", "a restore point" },
	{ "target-immediate", 0, CMD_FLAG_BOOL, ROPT(target_immediate), 0, NULL,
	  "stop as soon as the backup is consistent" },
	{ "exclusive", 0, CMD_FLAG_BOOL, ROPT(exclusive), 0, NULL, "stop just before the target" },
	{ "target-tli", 0, CMD_FLAG_STRING, ROPT(target_tli), 0, "T",
	  "latest (default), current or a timeline number" },
	{ "tablespace", 0, CMD_FLAG_STRINGS, ROPT(tablespaces), 0, "NAME:LOCATION",
	  "where the backup's tablespace NAME goes (repeatable; each one is needed)" },
	{ "pg-bindir", 0, CMD_FLAG_STRING, ROPT(pg_bindir), 0, "DIR",
	  "PostgreSQL programs (default: found for the backup's PG_VERSION)" },
	{ "port", 0, CMD_FLAG_UINT, ROPT(port), 65535, "PORT",
	  "the temporary postmaster's port (default 5432)" },
	{ "socket-dir", 0, CMD_FLAG_STRING, ROPT(socket_dir), 0, "DIR",
	  "its unix socket directory (default /controller/run)" },
	{ "timeout", 0, CMD_FLAG_UINT, ROPT(timeout), 7 * 86400, "SECONDS",
	  "WAL replay at most (default 86400)" },
	{ "pgop", 0, CMD_FLAG_STRING, ROPT(pgop), 0, "PATH",
	  "the pgop restore_command runs (default this binary)" },
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, ROPT(log_level), 0, "LEVEL", "debug, info, warn, error" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char restore_usage[] =
	"Usage: pgop instance restore --config FILE --pgdata DIR [--backup-id ID|latest]\n"
	"       [--target-time T | --target-lsn L | --target-xid X | --target-name N |\n"
	"        --target-immediate] [--exclusive] [--target-tli T]\n"
	"       [--tablespace NAME:LOCATION]...\n"
	"Restores a base backup from the object store and recovers it to the target\n"
	"(default: the end of the archived WAL), then promotes and stops it.\n\nFlags:\n";

int cmd_instance_restore(int argc, char **argv)
{
	if (strcmp(argv[0], "restore") != 0)
		return -1;
	struct restore_opts o = { .log_level = OP_LOG_INFO };
	int r = cmd_parse_flags(restore_flags, OP_ARRAY_SIZE(restore_flags), restore_usage, argc,
				argv, &o, NULL);
	if (r)
		return r == CMD_FLAGS_HELP ? 0 : 2;
	if (!o.config || !o.pgdata) {
		fputs("pgop instance restore: --config and --pgdata are required\n", stderr);
		cmd_strings_done(&o.tablespaces);
		return 2;
	}
	op_log_set_level(o.log_level);
	op_log_set_component("restore");
	/* the target as the spec would give it: validated by inst_recover */
	struct api_recovery_target t = {
		.backup_id = (char *)o.backup_id, .target_tli = (char *)o.target_tli,
		.target_xid = (char *)o.target_xid, .target_name = (char *)o.target_name,
		.target_lsn = (char *)o.target_lsn, .target_time = (char *)o.target_time,
		.target_immediate = o.target_immediate, .exclusive = o.exclusive,
	};
	struct inst_paths p = { .pgdata = o.pgdata, .pg_bindir = o.pg_bindir };
	inst_paths_default(&p);
	struct inst_recovery_source src = { .config = o.config, .backup_id = o.backup_id };
	struct op_err err = OP_ERR_INIT;
	size_t n = o.tablespaces.n;
	struct bk_tablespace_target *tbs = op_calloc(n ? n : 1, sizeof(*tbs));
	char **rules = op_calloc(n ? n : 1, sizeof(*rules)); /* owned copies tbs points into */
	r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		rules[i] = op_strdup(o.tablespaces.v[i]);
		r = bk_tablespace_rule_parse(rules[i], &tbs[i], &err);
	}
	struct inst_recovery_opts ro = { .target = &t, .pgop = o.pgop, .timeout_s = o.timeout,
					 .port = o.port, .sockdir = o.socket_dir,
					 .tablespaces = tbs, .n_tablespaces = n };
	char *bindir = NULL;
	r = r ? r : inst_recover(&p, &src, &ro, &bindir, &err);
	free(bindir);
	for (size_t i = 0; i < n; i++)
		free(rules[i]);
	free(rules);
	free(tbs);
	cmd_strings_done(&o.tablespaces);
	if (r < 0) {
		op_log_error("restore failed", "error", err.msg);
		return 1;
	}
	op_log_info("restored and recovered", "pgdata", o.pgdata);
	return 0;
}
