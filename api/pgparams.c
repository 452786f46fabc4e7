/* api/pgparams.c - the operator-owned PostgreSQL parameter tables
 * (admission-rules.md §7a-§7d, CNPG pkg/postgres/configuration.go).
 */
#include "api/pgparams.h"

#include <strings.h>

#include "support/alloc.h"

/* §7a blocked: the PostgreSQL default must be kept. */
static const char *const blocked_params[] = {
	"allow_system_table_mods",
	"config_file",
	"data_directory",
	"external_pid_file",
	"hba_file",
	"ident_file",
	"bonjour",
	"bonjour_name",
	"data_sync_retry",
	"event_source",
	"hot_standby",
	"jit_provider",
	"listen_addresses",
	"logging_collector",
	"log_destination",
	"log_directory",
	"log_file_mode",
	"log_filename",
	"log_rotation_age",
	"log_rotation_size",
	"log_truncate_on_rotation",
	"archive_cleanup_command",
	"promote_trigger_file",
	"recovery_end_command",
	"recovery_min_apply_delay",
	"restart_after_crash",
	"stats_temp_directory",
	"syslog_facility",
	"syslog_ident",
	"syslog_sequence_numbers",
	"syslog_split_messages",
	"unix_socket_directories",
	"unix_socket_group",
	"unix_socket_permissions",
};

/* §7a fixed: managed by the operator. */
static const char *const fixed_params[] = {
	"archive_mode",
	"archive_command",
	"cluster_name",
	"port",
	"primary_conninfo",
	"primary_slot_name",
	"restore_command",
	"recovery_target",
	"recovery_target_action",
	"recovery_target_inclusive",
	"recovery_target_lsn",
	"recovery_target_name",
	"recovery_target_time",
	"recovery_target_timeline",
	"recovery_target_xid",
	"shared_preload_libraries",
	"temp_tablespaces",
	"ssl",
	"ssl_ca_file",
	"ssl_cert_file",
	"ssl_crl_file",
	"ssl_dh_params_file",
	"ssl_key_file",
	"ssl_passphrase_command",
	"ssl_passphrase_command_supports_reload",
	"ssl_prefer_server_ciphers",
	"synchronous_standby_names",
	"synchronized_standby_slots",
	"pg_failover_slots.primary_dsn",
	"pg_failover_slots.standby_slot_names",
};

const struct api_pg_param api_pg_default_params[] = {
	{ "archive_timeout", "5min" },
	{ "full_page_writes", "on" },
	{ "wal_keep_size", "512MB" },
	{ "wal_level", "logical" },
	{ "wal_log_hints", "on" },
	{ "wal_sender_timeout", "5s" },
	{ "wal_receiver_timeout", "5s" },
	{ "wal_receiver_status_interval", "1s" }, /* the primary's lease (api/fence.h) */
	/* a replica whose primary moved retries 4 times a second, not every 5 s: the
	 * first try after a failover usually finds -rw without an endpoint yet
	 * (failover.md) */
	{ "wal_retrieve_retry_interval", "250ms" },
	{ "logging_collector", "on" },
	{ "log_destination", "csvlog" },
	{ "log_directory", "/controller/log" },
	{ "log_filename", "postgres" },
	{ "log_rotation_age", "0" },
	{ "log_rotation_size", "0" },
	{ "log_truncate_on_rotation", "false" },
	{ "max_parallel_workers", "32" },
	{ "max_worker_processes", "32" },
	{ "max_replication_slots", "32" },
	{ "dynamic_shared_memory_type", "posix" },
	{ "shared_memory_type", "mmap" },
	{ "ssl_min_protocol_version", "TLSv1.3" },
	{ "ssl_max_protocol_version", "TLSv1.3" },
	{ "shared_preload_libraries", "" },
};
const size_t api_pg_default_params_count = OP_ARRAY_SIZE(api_pg_default_params);

const struct api_pg_param api_pg_mandatory_params[] = {
	{ "archive_command",
	  "/controller/manager wal-archive --log-destination /controller/log/postgres.json %p" },
	{ "hot_standby", "true" },
	{ "listen_addresses", "*" },
	{ "port", "5432" },
	{ "restart_after_crash", "false" },
	{ "unix_socket_directories", "/controller/run" },
	{ "ssl", "on" },
	{ "ssl_cert_file", "/controller/certificates/server.crt" },
	{ "ssl_key_file", "/controller/certificates/server.key" },
	{ "ssl_ca_file", "/controller/certificates/client-ca.crt" },
};
const size_t api_pg_mandatory_params_count = OP_ARRAY_SIZE(api_pg_mandatory_params);

static bool in_list(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(list[i], name) == 0)
			return true;
	return false;
}

bool api_pg_param_is_blocked(const char *name)
{
	return name && in_list(blocked_params, OP_ARRAY_SIZE(blocked_params), name);
}

bool api_pg_param_is_fixed(const char *name)
{
	return name && (api_pg_param_is_blocked(name) ||
			in_list(fixed_params, OP_ARRAY_SIZE(fixed_params), name));
}

const char *api_pg_param_default(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < api_pg_default_params_count; i++)
		if (strcasecmp(api_pg_default_params[i].name, name) == 0)
			return api_pg_default_params[i].value;
	return NULL;
}

const char *api_pg_archive_mode(bool skip_wal_archiving, bool replica)
{
	if (skip_wal_archiving)
		return "off";
	return replica ? "always" : "on";
}
