/* cmd/instance.c - `pgop instance init|join|run|status` and `pgop bootstrap`.
 *
 * Identity and paths come from flags, falling back to the Pod's environment
 * (POD_NAME, NAMESPACE, CLUSTER_NAME, PGDATA). --cluster-file, --port,
 * --status-listen and the directory flags exist for local testing without
 * Kubernetes (tests/e2e/test_instance_local.sh). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/names.h"
#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "instance/instance.h"
#include "support/alloc.h"
#include "support/log.h"

struct instance_opts {
	const char *pgdata, *pg_wal, *pod_name, *namespace_, *cluster_name;
	const char *cluster_file, *kubeconfig;
	const char *controller_dir, *certs_dir, *secrets_dir, *pg_bindir, *tablespaces_dir;
	unsigned pg_major;
	enum op_log_level log_level;
	/* init */
	struct cmd_strings initdb_flags, post_init_sql, post_init_app_sql, post_init_tpl_sql;
	const char *app_db, *app_user;
	/* join / run */
	const char *primary_host;
	unsigned primary_port, port, stop_timeout;
	const char *status_listen, *metrics_listen, *monitoring_dir;
	/* status */
	const char *url, *cert, *key;
};

#define OPT(f) offsetof(struct instance_opts, f)
#define COMMON_FLAGS                                                                               \
	{ "pgdata", 'D', CMD_FLAG_STRING, OPT(pgdata), 0, "DIR", "data directory (default $PGDATA)" }, \
	{ "pg-wal", 0, CMD_FLAG_STRING, OPT(pg_wal), 0, "DIR", "separate WAL directory (walStorage)" }, \
	{ "pod-name", 0, CMD_FLAG_STRING, OPT(pod_name), 0, "NAME", "instance name (default $POD_NAME)" }, \
	{ "namespace", 0, CMD_FLAG_STRING, OPT(namespace_), 0, "NS", "namespace (default $NAMESPACE)" }, \
	{ "cluster-name", 0, CMD_FLAG_STRING, OPT(cluster_name), 0, "NAME",                        \
	  "Cluster name (default $CLUSTER_NAME)" },                                                  \
	{ "cluster-file", 0, CMD_FLAG_STRING, OPT(cluster_file), 0, "FILE",                        \
	  "for local testing: read the Cluster (JSON/YAML) from FILE, not the API server" },         \
	{ "kubeconfig", 0, CMD_FLAG_STRING, OPT(kubeconfig), 0, "FILE",                            \
	  "kubeconfig (default $KUBECONFIG, or in-cluster)" },                                       \
	{ "controller-dir", 0, CMD_FLAG_STRING, OPT(controller_dir), 0, "DIR",                     \
	  "sockets, logs and certificates (default " INST_CONTROLLER_DIR ")" },                      \
	{ "certs-dir", 0, CMD_FLAG_STRING, OPT(certs_dir), 0, "DIR",                               \
	  "mounted certificate Secrets (default " INST_CERTS_DIR ")" },                              \
	{ "secrets-dir", 0, CMD_FLAG_STRING, OPT(secrets_dir), 0, "DIR",                           \
	  "mounted credential Secrets (default " INST_SECRETS_DIR ")" },                             \
	{ "tablespaces-dir", 0, CMD_FLAG_STRING, OPT(tablespaces_dir), 0, "DIR",                   \
	  "where spec.tablespaces' volumes are mounted (DIR/<name>/data; default "                \
	  API_TABLESPACE_MOUNT_ROOT ", CloudNativePG's)" },                                          \
	{ "pg-bindir", 0, CMD_FLAG_STRING, OPT(pg_bindir), 0, "DIR",                               \
	  "PostgreSQL programs (default: postgres on PATH, pg_config --bindir, "                   \
	  "/usr/lib/postgresql/MAJOR/bin)" },                                                        \
	{ "pg-major", 0, CMD_FLAG_UINT, OPT(pg_major), 99, "N",                                    \
	  "PostgreSQL major the programs must have (default: the Cluster image's tag)" },            \
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, OPT(log_level), 0, "LEVEL", "debug, info, warn, error" }, \
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" }

static const struct cmd_flag init_flags[] = {
	COMMON_FLAGS,
	{ "initdb-flag", 0, CMD_FLAG_STRINGS, OPT(initdb_flags), 0, "FLAG",
	  "one initdb argument, e.g. --locale=C (repeatable, never split; "
	  "default: from spec.bootstrap.initdb)" },
	{ "app-db-name", 0, CMD_FLAG_STRING, OPT(app_db), 0, "DB", "application database" },
	{ "app-user", 0, CMD_FLAG_STRING, OPT(app_user), 0, "ROLE", "application owner" },
	{ "post-init-sql", 0, CMD_FLAG_STRINGS, OPT(post_init_sql), 0, "SQL",
	  "run in postgres after initdb (repeatable)" },
	{ "post-init-application-sql", 0, CMD_FLAG_STRINGS, OPT(post_init_app_sql), 0, "SQL",
	  "run in the application database (repeatable)" },
	{ "post-init-template-sql", 0, CMD_FLAG_STRINGS, OPT(post_init_tpl_sql), 0, "SQL",
	  "run in template1 (repeatable)" },
};

static const struct cmd_flag join_flags[] = {
	COMMON_FLAGS,
	{ "primary-host", 0, CMD_FLAG_STRING, OPT(primary_host), 0, "HOST",
	  "primary to clone (default <cluster>-rw)" },
	{ "primary-port", 0, CMD_FLAG_UINT, OPT(primary_port), 65535, "PORT", "default 5432" },
};

static const struct cmd_flag run_flags[] = {
	COMMON_FLAGS,
	{ "port", 0, CMD_FLAG_UINT, OPT(port), 65535, "PORT", "PostgreSQL port (default 5432)" },
	{ "status-listen", 0, CMD_FLAG_STRING, OPT(status_listen), 0, "ADDR:PORT",
	  "status server (default " INST_STATUS_LISTEN ")" },
	{ "metrics-listen", 0, CMD_FLAG_STRING, OPT(metrics_listen), 0, "ADDR:PORT",
	  "Prometheus exporter, GET /metrics (default 0.0.0.0:9187; \"off\": none)" },
	{ "monitoring-dir", 0, CMD_FLAG_STRING, OPT(monitoring_dir), 0, "DIR",
	  "custom query files: DIR/configmap|secret/<name>/<key> (default /run/pgop/monitoring)" },
	{ "primary-host", 0, CMD_FLAG_STRING, OPT(primary_host), 0, "HOST",
	  "primary for pg_rewind (default <cluster>-rw)" },
	{ "primary-port", 0, CMD_FLAG_UINT, OPT(primary_port), 65535, "PORT", "default 5432" },
	{ "stop-timeout", 0, CMD_FLAG_UINT, OPT(stop_timeout), 86400, "SECONDS",
	  "smart shutdown before fast on SIGTERM (default spec.smartShutdownTimeout)" },
};

static const struct cmd_flag status_flags[] = {
	{ "url", 0, CMD_FLAG_STRING, OPT(url), 0, "URL",
	  "default https://127.0.0.1:8000/pg/status" },
	{ "cert", 0, CMD_FLAG_STRING, OPT(cert), 0, "FILE",
	  "the operator's client certificate (the server answers 401 without)" },
	{ "key", 0, CMD_FLAG_STRING, OPT(key), 0, "FILE", "its private key" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char *env_or(const char *v, const char *env)
{
	return v ? v : getenv(env);
}

static int need(const char *v, const char *what)
{
	if (v && *v)
		return 0;
	fprintf(stderr, "pgop instance: %s is required\n", what);
	return -EINVAL;
}

static int common(struct instance_opts *o, struct inst_paths *p)
{
	o->pgdata = env_or(o->pgdata, "PGDATA");
	o->pod_name = env_or(o->pod_name, "POD_NAME");
	o->namespace_ = env_or(o->namespace_, "NAMESPACE");
	o->cluster_name = env_or(o->cluster_name, "CLUSTER_NAME");
	if (need(o->pgdata, "--pgdata or $PGDATA") || need(o->pod_name, "--pod-name or $POD_NAME") ||
	    need(o->cluster_name, "--cluster-name or $CLUSTER_NAME"))
		return -EINVAL;
	if (!o->cluster_file && need(o->namespace_, "--namespace or $NAMESPACE"))
		return -EINVAL;
	*p = (struct inst_paths){ .pgdata = o->pgdata, .waldir = o->pg_wal,
				  .controller_dir = o->controller_dir, .certs_dir = o->certs_dir,
				  .secrets_dir = o->secrets_dir, .pg_bindir = o->pg_bindir,
				  .tablespaces_dir = o->tablespaces_dir,
				  .pg_major = (int)o->pg_major };
	inst_paths_default(p);
	op_log_set_level(o->log_level);
	op_log_set_component("instance");
	return 0;
}

static int report(int r, const struct op_err *err, const char *what)
{
	if (r == 0)
		return 0;
	op_log_error(what, "error", err->msg[0] ? err->msg : strerror(-r));
	return 1;
}

static int do_init(struct instance_opts *o)
{
	/* environment defaults first: the options below are copied from o */
	struct inst_paths paths;
	if (common(o, &paths))
		return 2;
	struct inst_init_opts io = { .paths = paths,
				     .cluster_file = o->cluster_file, .kubeconfig = o->kubeconfig,
				     .cluster_name = o->cluster_name, .namespace_ = o->namespace_,
				     .pod_name = o->pod_name, .app_db = o->app_db,
				     .app_user = o->app_user,
				     .initdb_flags = o->initdb_flags.v,
				     .n_initdb_flags = o->initdb_flags.n,
				     .post_init_sql = o->post_init_sql.v,
				     .n_post_init_sql = o->post_init_sql.n,
				     .post_init_app_sql = o->post_init_app_sql.v,
				     .n_post_init_app_sql = o->post_init_app_sql.n,
				     .post_init_tpl_sql = o->post_init_tpl_sql.v,
				     .n_post_init_tpl_sql = o->post_init_tpl_sql.n };
	struct op_err err = OP_ERR_INIT;
	return report(inst_init(&io, &err), &err, "instance init failed");
}

static int do_join(struct instance_opts *o)
{
	/* environment defaults first: the options below are copied from o */
	struct inst_paths paths;
	if (common(o, &paths))
		return 2;
	struct inst_join_opts jo = { .paths = paths,
				     .cluster_file = o->cluster_file, .kubeconfig = o->kubeconfig,
				     .cluster_name = o->cluster_name, .namespace_ = o->namespace_,
				     .pod_name = o->pod_name, .primary_host = o->primary_host,
				     .primary_port = o->primary_port };
	struct op_err err = OP_ERR_INIT;
	return report(inst_join(&jo, &err), &err, "instance join failed");
}

static int do_run(struct instance_opts *o)
{
	/* environment defaults first: the options below are copied from o */
	struct inst_paths paths;
	if (common(o, &paths))
		return 2;
	struct inst_run_opts ro = { .paths = paths,
				     .cluster_file = o->cluster_file, .kubeconfig = o->kubeconfig,
				    .cluster_name = o->cluster_name, .namespace_ = o->namespace_,
				    .pod_name = o->pod_name, .port = o->port,
				    .status_listen = o->status_listen,
				    .metrics_listen = o->metrics_listen,
				    .monitoring_dir = o->monitoring_dir,
				    .primary_host = o->primary_host,
				    .primary_port = o->primary_port,
				    .stop_timeout_s = o->stop_timeout };
	struct op_err err = OP_ERR_INIT;
	return report(inst_run(&ro, &err), &err, "instance manager stopped");
}

static int do_status(struct instance_opts *o)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_err err = OP_ERR_INIT;
	int r = inst_status_fetch(o->url ? o->url : "https://127.0.0.1:8000/pg/status", o->cert,
				  o->key, &b, &err);
	if (r == 0)
		printf("%s\n", op_buf_str(&b));
	else
		fprintf(stderr, "pgop instance status: %s\n", err.msg);
	op_buf_done(&b);
	return r ? 1 : 0;
}

static const struct {
	const char *name;
	const struct cmd_flag *flags;
	size_t n_flags;
	int (*fn)(struct instance_opts *o);
	const char *usage;
} subs[] = {
	{ "init", init_flags, OP_ARRAY_SIZE(init_flags), do_init,
	  "Usage: pgop instance init [flags]\nCreates PGDATA with initdb, the roles and the "
	  "application database.\n\nFlags:\n" },
	{ "join", join_flags, OP_ARRAY_SIZE(join_flags), do_join,
	  "Usage: pgop instance join [flags]\nClones the primary with pg_basebackup and "
	  "configures a standby.\n\nFlags:\n" },
	{ "run", run_flags, OP_ARRAY_SIZE(run_flags), do_run,
	  "Usage: pgop instance run [flags]\nRuns and supervises PostgreSQL (PID 1 of the "
	  "instance Pod) with the status server.\n\nFlags:\n" },
	{ "status", status_flags, OP_ARRAY_SIZE(status_flags), do_status,
	  "Usage: pgop instance status [--url URL] --cert FILE --key FILE\nPrints this "
	  "instance's /pg/status.\n\n"
	  "Flags:\n" },
};

int cmd_instance(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		FILE *out = argc < 2 ? stderr : stdout;
		fputs("Usage: pgop instance init|join|run|status|wal-archive|wal-restore|restore|backup [flags]\n", out);
		return argc < 2 ? 2 : 0;
	}
	int wal = cmd_instance_wal(argc - 1, argv + 1); /* cmd/wal.c */
	if (wal >= 0)
		return wal;
	int restore = cmd_instance_restore(argc - 1, argv + 1); /* cmd/restore.c */
	if (restore >= 0)
		return restore;
	int bk = cmd_instance_backup(argc - 1, argv + 1); /* cmd/backup.c */
	if (bk >= 0)
		return bk;
	for (size_t i = 0; i < OP_ARRAY_SIZE(subs); i++) {
		if (strcmp(argv[1], subs[i].name) != 0)
			continue;
		struct instance_opts o = { .log_level = OP_LOG_INFO };
		int r = cmd_parse_flags(subs[i].flags, subs[i].n_flags, subs[i].usage, argc - 1,
					argv + 1, &o, NULL);
		int rc = r == CMD_FLAGS_HELP ? 0 : r ? 2 : subs[i].fn(&o);
		cmd_strings_done(&o.initdb_flags);
		cmd_strings_done(&o.post_init_sql);
		cmd_strings_done(&o.post_init_app_sql);
		cmd_strings_done(&o.post_init_tpl_sql);
		return rc;
	}
	fprintf(stderr, "pgop instance: unknown subcommand '%s'\n", argv[1]);
	return 2;
}

/* `pgop bootstrap DEST`: the copy is inst_copy_self (instance/files.c). */
int cmd_bootstrap(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fputs("Usage: pgop bootstrap DEST\nCopies this binary to DEST (mode 0755).\n",
		      argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	struct op_err err = OP_ERR_INIT;
	if (inst_copy_self(argv[1], &err) == 0)
		return 0;
	fprintf(stderr, "pgop bootstrap: %s\n", err.msg);
	return 1;
}
