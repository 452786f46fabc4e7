/* cmd/backup.c - `pgop instance backup --config FILE --name NAME [--id ID]
 * [--socket-dir DIR] [--port PORT] [--stop-timeout S]`: an online base
 * backup of the local postgres into the WAL archive's object store (the
 * work is instance/basebackup.c's inst_backup_run). Prints the status JSON
 * (GET /pg/backup's) on stdout.
 *
 * Exit codes: 0 the backup is DONE; 1 it failed (one JSON log line on
 * stderr, backup.info FAILED when it could be written); 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "instance/instance.h"
#include "support/alloc.h"
#include "support/log.h"

struct backup_opts {
	const char *config, *name, *id, *socket_dir, *pod_name;
	unsigned port, stop_timeout;
	enum op_log_level log_level;
};

#define BOPT(f) offsetof(struct backup_opts, f)
static const struct cmd_flag backup_flags[] = {
	{ "config", 'c', CMD_FLAG_STRING, BOPT(config), 0, "FILE",
	  "the wal-archive configuration (JSON, mode 0600; required)" },
	{ "name", 0, CMD_FLAG_STRING, BOPT(name), 0, "NAME", "the Backup's name (required)" },
	{ "id", 0, CMD_FLAG_STRING, BOPT(id), 0, "ID", "backup id YYYYMMDDTHHMMSS (default: now, UTC)" },
	{ "socket-dir", 0, CMD_FLAG_STRING, BOPT(socket_dir), 0, "DIR",
	  "postgres's socket directory (default " INST_CONTROLLER_DIR "/run)" },
	{ "port", 0, CMD_FLAG_UINT, BOPT(port), 65535, "PORT", "postgres's port (default 5432)" },
	{ "pod-name", 0, CMD_FLAG_STRING, BOPT(pod_name), 0, "NAME", "instanceID.podName (default $POD_NAME)" },
	{ "stop-timeout", 0, CMD_FLAG_UINT, BOPT(stop_timeout), 86400, "SECONDS",
	  "how long pg_backup_stop may wait for the WAL archive (default 600)" },
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, BOPT(log_level), 0, "LEVEL", "debug, info, warn, error" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char usage[] =
	"Usage: pgop instance backup --config FILE --name NAME [flags]\nTakes an online base "
	"backup of the local PostgreSQL (primary or standby) into the object store, "
	"barman-cloud's layout.\n\nFlags:\n";

int cmd_instance_backup(int argc, char **argv)
{
	if (strcmp(argv[0], "backup") != 0)
		return -1;
	struct backup_opts o = { .log_level = OP_LOG_INFO };
	int first = argc;
	int r = cmd_parse_flags(backup_flags, OP_ARRAY_SIZE(backup_flags), usage, argc, argv, &o,
				&first);
	if (r)
		return r == CMD_FLAGS_HELP ? 0 : 2;
	if (first != argc || !o.config || !o.name) {
		fputs(usage, stderr);
		cmd_print_flags(stderr, backup_flags, OP_ARRAY_SIZE(backup_flags));
		return 2;
	}
	op_log_set_level(o.log_level);
	op_log_set_component("backup");
	struct inst_backup_opts bo = {
		.config_path = o.config, .name = o.name, .backup_id = o.id,
		.sockdir = o.socket_dir ? o.socket_dir : INST_CONTROLLER_DIR "/run",
		.port = o.port, .pod_name = o.pod_name ? o.pod_name : getenv("POD_NAME"),
		.stop_timeout_s = o.stop_timeout,
	};
	struct inst_backup_status st;
	struct op_err err = OP_ERR_INIT;
	r = inst_backup_run(&bo, &st, &err);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (inst_backup_status_to_json(&st, &b) == 0)
		printf("%s\n", op_buf_str(&b));
	op_buf_done(&b);
	if (r < 0)
		op_log_error("base backup failed", "backup", o.name, "error", err.msg);
	else
		op_log_info("base backup completed", "backup", o.name, "id", st.backup_id, "endWal",
			    st.end_wal);
	inst_backup_status_done(&st);
	return r < 0 ? 1 : 0;
}
