/* instance/bootstrap.c - `pgop instance init` (initdb + roles + application
 * database; with spec.bootstrap.recovery a restore from the source's object
 * store instead, instance/recovery.c) and `pgop instance join` (pg_basebackup + standby settings:
 * inst_clone_standby, which `run` reuses when pg_rewind cannot work,
 * instance/reclone.c).
 *
 * SQL: role and database names are quoted with PQescapeIdentifier; passwords
 * are SCRAM verifiers from PQencryptPasswordConn handed over as a parameter
 * (set_config) and used by a DO block through format('%L'); the post-init SQL
 * of the spec is administrator SQL and runs as given.
 */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/names.h"
#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/log.h"

/* A growing argv; strings owned. */
struct argv_b {
	char **v;
	size_t n, cap;
};

static void argv_add(struct argv_b *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->v = op_realloc(a->v, a->cap * sizeof(*a->v));
	}
	a->v[a->n++] = op_strdup(s);
	a->v[a->n] = NULL;
}

static void argv_done(struct argv_b *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = a->cap = 0;
}

const char *inst_os_user(void)
{
	struct passwd *pw = getpwuid(geteuid());
	return pw && pw->pw_name ? pw->pw_name : "postgres";
}

/* Writes postgresql.conf (includes), custom.conf, pg_hba.conf, pg_ident.conf
 * and an empty override.conf unless keep_override. */
static int write_config(const struct inst_paths *p, const struct api_cluster *c,
			const char *pod, unsigned port, bool keep_override, struct op_err *err)
{
	struct inst_config_input in = { .cluster = c, .pod_name = pod,
					.controller_dir = p->controller_dir,
					.os_user = inst_os_user(), .port = port,
					.major = p->pg_major };
	_cleanup_(op_buf_donep) struct op_buf conf = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_(op_buf_donep) struct op_buf hba = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_(op_buf_donep) struct op_buf ident = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int r = inst_render_postgresql_conf(&in, &conf, NULL, err);
	r = r ? r : inst_render_pg_hba(&in, &hba, err);
	r = r ? r : inst_render_pg_ident(&in, &ident, err);
	if (r)
		return r;
	static const struct {
		const char *name;
		int which;
	} files[] = { { "postgresql.conf", 0 }, { "custom.conf", 1 }, { "pg_hba.conf", 2 },
		      { "pg_ident.conf", 3 }, { "override.conf", 4 } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(files); i++) {
		_cleanup_free_ char *path = op_asprintf("%s/%s", p->pgdata, files[i].name);
		const char *data = "";
		size_t len = 0;
		switch (files[i].which) {
		case 0:
			data = inst_postgresql_conf_includes;
			len = strlen(data);
			break;
		case 1:
			data = op_buf_str(&conf), len = conf.len;
			break;
		case 2:
			data = op_buf_str(&hba), len = hba.len;
			break;
		case 3:
			data = op_buf_str(&ident), len = ident.len;
			break;
		default:
			if (keep_override && inst_path_exists(path))
				continue;
			break;
		}
		r = inst_write_file(path, data, len, 0600, err);
		if (r)
			return r;
	}
	return 0;
}

int inst_write_config(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		      unsigned port, bool keep_override, struct op_err *err)
{
	return write_config(p, c, pod, port, keep_override, err);
}

static int runtime_dirs(const struct inst_paths *p, struct op_err *err)
{
	_cleanup_free_ char *run = op_asprintf("%s/run", p->controller_dir);
	_cleanup_free_ char *log = op_asprintf("%s/log", p->controller_dir);
	int r = op_mkdir_p(run, 0700, err);
	return r ? r : op_mkdir_p(log, 0700, err);
}

/* Sets one role's password from a SCRAM verifier computed client-side. */
static int set_password(PGconn *conn, const char *role, const char *password,
			struct op_err *err)
{
	char *verifier = PQencryptPasswordConn(conn, password, role, "scram-sha-256");
	if (!verifier)
		return op_err_set(err, -EIO, "encrypt password of %s: %s", role,
				  PQerrorMessage(conn));
	const char *params[] = { role, verifier };
	int r = inst_pg_exec(conn,
			     "SELECT set_config('pgop.role', $1, false), "
			     "set_config('pgop.verifier', $2, false)",
			     2, params, NULL, err);
	PQfreemem(verifier);
	r = r ? r
	      : inst_pg_exec(conn,
			     "DO $$BEGIN EXECUTE format('ALTER ROLE %I PASSWORD %L', "
			     "current_setting('pgop.role'), current_setting('pgop.verifier')); END$$",
			     0, NULL, NULL, err);
	r = r ? r
	      : inst_pg_exec(conn, "SELECT set_config('pgop.verifier', '', false)", 0, NULL, NULL,
			     err);
	return r ? op_err_prefix(err, "set password of %s: ", role) : 0;
}

/* `verb <quoted ident> rest` */
static int exec_ident(PGconn *conn, const char *verb, const char *ident, const char *rest,
		      struct op_err *err)
{
	char *q = PQescapeIdentifier(conn, ident, strlen(ident));
	if (!q)
		return op_err_set(err, -EINVAL, "quote identifier: %s", PQerrorMessage(conn));
	_cleanup_free_ char *sql = op_asprintf("%s %s%s", verb, q, rest);
	PQfreemem(q);
	return inst_pg_exec(conn, sql, 0, NULL, NULL, err);
}

static int run_scripts(const struct inst_paths *p, unsigned port, const char *db,
		       const char *const *cli, size_t n_cli, const struct api_strv *spec,
		       const char *what, struct op_err *err)
{
	const char *const *v = n_cli ? cli : (const char *const *)spec->items;
	size_t n = n_cli ? n_cli : spec->n;
	if (!n)
		return 0;
	_cleanup_free_ char *sock = op_asprintf("%s/run", p->controller_dir);
	_cleanup_(inst_pqfinishp) PGconn *conn = NULL;
	int r = inst_pg_connect(sock, port, db, &conn, err);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		PGresult *res = PQexec(conn, v[i]);
		ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
			op_err_set(err, -EIO, "%s[%zu] in %s: %s", what, i, db,
				   res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
			if (res)
				PQclear(res);
			return -EIO;
		}
		PQclear(res);
	}
	return 0;
}

static int configure_new_instance(const struct inst_init_opts *o, const struct api_cluster *c,
				  unsigned port, struct op_err *err)
{
	const struct inst_paths *p = &o->paths;
	const struct api_initdb *idb = &c->spec.bootstrap.initdb;
	const char *db = o->app_db ? o->app_db : idb->database ? idb->database : "app";
	const char *owner = o->app_user ? o->app_user : idb->owner ? idb->owner : db;
	_cleanup_free_ char *sock = op_asprintf("%s/run", p->controller_dir);
	_cleanup_(inst_pqfinishp) PGconn *conn = NULL;
	int r = inst_pg_connect(sock, port, "postgres", &conn, err);
	if (r)
		return r;
	r = inst_pg_exec(conn, "CREATE ROLE streaming_replica WITH REPLICATION LOGIN", 0, NULL,
			 NULL, err);
	/* pg_rewind connects as streaming_replica (CNPG grants the same). */
	static const char *const rewind_grants[] = {
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_ls_dir(text, boolean, boolean) "
		"TO streaming_replica",
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_stat_file(text, boolean) "
		"TO streaming_replica",
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text) TO streaming_replica",
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text, bigint, bigint, "
		"boolean) TO streaming_replica",
	};
	for (size_t i = 0; r == 0 && i < OP_ARRAY_SIZE(rewind_grants); i++)
		r = inst_pg_exec(conn, rewind_grants[i], 0, NULL, NULL, err);
	r = r ? r : exec_ident(conn, "CREATE ROLE", owner, " LOGIN", err);
	if (r)
		return r;
	_cleanup_free_ char *app_pw = NULL;
	if (inst_read_secret(p, "app", "password", &app_pw, NULL) == 0 && *app_pw)
		r = set_password(conn, owner, app_pw, err);
	else
		op_log_warn("no application password file, the owner has no password", "role",
			    owner);
	if (r)
		return r;
	if (c->spec.enable_superuser_access) {
		_cleanup_free_ char *su_pw = NULL;
		r = inst_read_secret(p, "superuser", "password", &su_pw, err);
		r = r ? r : set_password(conn, "postgres", su_pw, err);
		if (r)
			return r;
	}
	r = run_scripts(p, port, "postgres", o->post_init_sql, o->n_post_init_sql,
			&idb->post_init_sql, "postInitSQL", err);
	r = r ? r
	      : run_scripts(p, port, "template1", o->post_init_tpl_sql, o->n_post_init_tpl_sql,
			    &idb->post_init_template_sql, "postInitTemplateSQL", err);
	if (r)
		return r;
	char *qo = PQescapeIdentifier(conn, owner, strlen(owner));
	if (!qo)
		return op_err_set(err, -EINVAL, "quote identifier: %s", PQerrorMessage(conn));
	_cleanup_free_ char *rest = op_asprintf(" OWNER %s", qo);
	PQfreemem(qo);
	r = exec_ident(conn, "CREATE DATABASE", db, rest, err);
	if (r)
		return r;
	return run_scripts(p, port, db, o->post_init_app_sql, o->n_post_init_app_sql,
			   &idb->post_init_application_sql, "postInitApplicationSQL", err);
}

/* Stops a postmaster we started: fast shutdown, then immediate after timeout_s. */
int inst_stop_postgres(pid_t pid, unsigned timeout_s, struct op_err *err)
{
	kill(pid, SIGINT);
	for (unsigned i = 0; i < timeout_s * 10; i++) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0
				       ? 0
				       : op_err_set(err, -EIO, "postgres exited with status %d", st);
		usleep(100 * 1000);
	}
	kill(pid, SIGQUIT);
	waitpid(pid, NULL, 0);
	return op_err_set(err, -ETIMEDOUT, "postgres did not stop within %u s", timeout_s);
}

int inst_load_for(const char *cluster_file, const char *kubeconfig, const char *ns,
		  const char *name, struct api_cluster **ret, struct op_err *err)
{
	struct inst_source src = { .cluster_file = cluster_file, .ns = ns, .name = name };
	if (!cluster_file) {
		int r = inst_kube_open(kubeconfig, false, &src.kube, err);
		if (r)
			return r;
	}
	int r = inst_cluster_load(&src, ret, err);
	kube_client_free(src.kube);
	return r;
}

/* What init and join share: the Cluster, the PostgreSQL programs of its
 * major (p->pg_bindir, p->pg_major; *ret_bindir owns the string), an absent
 * PGDATA, the runtime directories and the certificate files. *ret (owned) is
 * set on success. Returns 0 ready to bootstrap, 1 when the PGDATA's marker
 * already names this pod (bootstrapped: nothing to do), <0 on error. */
static int prepare_new_instance(struct inst_paths *p, const char *cluster_file,
				const char *kubeconfig, const char *ns, const char *name,
				const char *pod, struct api_cluster **ret, char **ret_bindir,
				struct op_err *err)
{
	_cleanup_(api_cluster_freep) struct api_cluster *c = NULL;
	int r = inst_load_for(cluster_file, kubeconfig, ns, name, &c, err);
	r = r ? r : inst_paths_locate(p, c, false, ret_bindir, err);
	int own = r ? 0 : inst_marker_is(p->pgdata, pod, err);
	if (own < 0)
		return own;
	if (own) {
		/* a bootstrap Pod started again after it completed (its success
		 * not seen before it was lost): the volume is this instance's */
		op_log_info("the volume already holds this instance: nothing to do", "pgdata",
			    p->pgdata, "pod", pod);
		return 1;
	}
	r = r ? r : inst_pgdata_reclaim(p, pod, err);
	r = r ? r : runtime_dirs(p, err);
	if (r)
		return r;
	r = inst_sync_certificates(p, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

/* ---- spec.bootstrap.recovery: restore instead of initdb ---- */

struct recovered {
	const struct inst_init_opts *o; /* borrowed */
	const struct inst_paths *p;     /* borrowed */
	const struct api_cluster *c;    /* borrowed */
};

/* After the tar: the Cluster's configuration files replace the backup's. */
static int recovered_config(void *ud, const char *sockdir, unsigned port, struct op_err *err)
{
	struct recovered *rc = ud;
	return write_config(rc->p, rc->c, rc->o->pod_name, INST_PG_PORT, false, err);
}

/* After the promotion (CloudNativePG's recovery bootstrap): the replication
 * role (a source that was no CloudNativePG cluster lacks it), the owner's
 * password from the application Secret when that role exists
 * (recovery.owner, else recovery.database, else "app"), the superuser's. */
static int recovered_roles(void *ud, const char *sockdir, unsigned port, struct op_err *err)
{
	struct recovered *rc = ud;
	const struct api_recovery *rec = &rc->c->spec.bootstrap.recovery;
	const char *owner = rec->owner ? rec->owner : rec->database ? rec->database : "app";
	_cleanup_(inst_pqfinishp) PGconn *conn = NULL;
	int r = inst_pg_connect(sockdir, port, "postgres", &conn, err);
	_cleanup_free_ char *has_repl = NULL, *has_owner = NULL;
	const char *params[] = { owner };
	r = r ? r : inst_pg_value(conn, "SELECT count(*) FROM pg_roles WHERE rolname = "
				  "'streaming_replica'", 0, NULL, &has_repl, err);
	if (r == 0 && has_repl && !strcmp(has_repl, "0"))
		r = inst_pg_exec(conn, "CREATE ROLE streaming_replica WITH REPLICATION LOGIN", 0,
				 NULL, NULL, err);
	r = r ? r : inst_pg_value(conn, "SELECT count(*) FROM pg_roles WHERE rolname = $1", 1,
				  params, &has_owner, err);
	if (r)
		return r;
	_cleanup_free_ char *app_pw = NULL;
	if (has_owner && strcmp(has_owner, "0") &&
	    inst_read_secret(rc->p, "app", "password", &app_pw, NULL) == 0 && *app_pw)
		r = set_password(conn, owner, app_pw, err);
	if (r == 0 && rc->c->spec.enable_superuser_access) {
		_cleanup_free_ char *su_pw = NULL;
		r = inst_read_secret(rc->p, "superuser", "password", &su_pw, err);
		r = r ? r : set_password(conn, "postgres", su_pw, err);
	}
	return r;
}

/* A name that is one path component: 1-63 printable bytes, no '/', not
 * starting with '.' (the webhook's V19 is stricter). */
static bool tablespace_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 63 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == '/' || name[i] == 0x7f)
			return false;
	return true;
}

/* CloudNativePG's recovery: each tablespace of the Cluster goes where its
 * volume is mounted (api_tablespace_location under --tablespaces-dir,
 * CloudNativePG's /var/lib/postgresql/tablespaces by default; tbs[i] borrows
 * locs[i], owned by the caller). PGDATA held no complete instance
 * (reclaimed): what a failed attempt left at a location is removed too. A
 * backup's tablespace the Cluster does not declare fails naming it
 * (bk_tablespace_locate). */
static int recovery_tablespaces(const struct inst_paths *p, const struct api_cluster *c,
				struct bk_tablespace_target *tbs, char **locs, struct op_err *err)
{
	for (size_t i = 0; i < c->spec.n_tablespaces; i++) {
		const char *name = c->spec.tablespaces[i].name;
		if (!tablespace_name_ok(name))
			return op_err_set(err, -EINVAL, "spec.tablespaces[%zu].name: not a tablespace "
					  "name", i);
		locs[i] = api_tablespace_location(p->tablespaces_dir, name);
		tbs[i] = (struct bk_tablespace_target){ .name = name, .location = locs[i] };
		if (!inst_path_exists(locs[i]))
			continue;
		op_log_warn("removing what a failed bootstrap attempt left in a tablespace",
			    "tablespace", name, "location", locs[i]);
		int r = inst_remove_tree(locs[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int init_from_recovery(const struct inst_init_opts *o, struct inst_paths *p,
			      const struct api_cluster *c, struct op_err *err)
{
	_cleanup_free_ char *cfg = NULL;
	int r = inst_recovery_archive_check(c, err);
	r = r ? r : inst_recovery_source_write(p, c, &cfg, err);
	if (r)
		return r;
	const struct api_recovery *rec = &c->spec.bootstrap.recovery;
	struct recovered ud = { .o = o, .p = p, .c = c };
	struct inst_recovery_source src = { .config = cfg, .backup_id = rec->target.backup_id };
	size_t n = c->spec.n_tablespaces;
	struct bk_tablespace_target *tbs = op_calloc(n ? n : 1, sizeof(*tbs));
	char **locs = op_calloc(n ? n : 1, sizeof(*locs));
	r = n ? recovery_tablespaces(p, c, tbs, locs, err) : 0;
	struct inst_recovery_opts ro = { .target = rec->has_recovery_target ? &rec->target : NULL,
					 .before_start = recovered_config,
					 .after_promote = recovered_roles, .ud = &ud,
					 .tablespaces = tbs, .n_tablespaces = n };
	_cleanup_free_ char *bindir = NULL;
	op_log_info("bootstrap from a backup", "source", rec->source, "pgdata", p->pgdata);
	r = r ? r : inst_recover(p, &src, &ro, &bindir, err);
	for (size_t i = 0; i < n; i++)
		free(locs[i]);
	free(locs);
	free(tbs);
	r = r ? r : inst_marker_write(p->pgdata, o->pod_name, err);
	if (r == 0)
		op_log_info("instance recovered", "pgdata", p->pgdata, "pod", o->pod_name);
	return r;
}

int inst_init(const struct inst_init_opts *o, struct op_err *err)
{
	struct inst_paths paths = o->paths;
	const struct inst_paths *p = &paths;
	_cleanup_(api_cluster_freep) struct api_cluster *c = NULL;
	_cleanup_free_ char *bindir = NULL;
	int r = prepare_new_instance(&paths, o->cluster_file, o->kubeconfig, o->namespace_,
				     o->cluster_name, o->pod_name, &c, &bindir, err);
	if (r)
		return r < 0 ? r : 0;
	if (c->spec.bootstrap.recovery.present)
		return init_from_recovery(o, &paths, c, err);
	umask(077);
	struct argv_b a = { 0 };
	argv_add(&a, "initdb");
	argv_add(&a, "--username");
	argv_add(&a, "postgres");
	argv_add(&a, "-D");
	argv_add(&a, p->pgdata);
	if (p->waldir) {
		argv_add(&a, "--waldir");
		argv_add(&a, p->waldir);
	}
	/* --initdb-flag (one argument each, from the bootstrap Pod) or the spec; checked
	 * again here: a value never becomes another initdb argument */
	struct api_strv spec_flags = { 0 };
	if (!o->n_initdb_flags)
		r = api_initdb_args(&c->spec.bootstrap.initdb, &spec_flags, err);
	const char *const *fl = o->n_initdb_flags ? o->initdb_flags
						  : (const char *const *)spec_flags.items;
	size_t nfl = o->n_initdb_flags ? o->n_initdb_flags : spec_flags.n;
	for (size_t i = 0; r == 0 && i < nfl; i++) {
		char field[48];
		snprintf(field, sizeof(field), "--initdb-flag #%zu", i + 1);
		r = api_initdb_arg_check(fl[i], field, err);
		if (r == 0)
			argv_add(&a, fl[i]);
	}
	api_strv_done(&spec_flags);
	if (r) {
		argv_done(&a);
		return r;
	}
	op_log_info("running initdb", "pgdata", p->pgdata);
	r = inst_run_cmd(p->pg_bindir, (const char *const *)a.v, err);
	argv_done(&a);
	if (r > 0)
		return op_err_set(err, -EIO, "initdb exited with status %d", r);
	if (r < 0)
		return r;
	unsigned port = INST_PG_PORT;
	r = write_config(p, c, o->pod_name, port, false, err);
	if (r)
		return r;
	_cleanup_free_ char *sock = op_asprintf("%s/run", p->controller_dir);
	_cleanup_free_ char *sockopt = op_asprintf("unix_socket_directories=%s", sock);
	/* A temporary postmaster on the unix socket only, logging to stderr, and with
	 * no synchronous standbys: none can exist yet, and a commit waiting for one
	 * would hang CREATE ROLE / CREATE DATABASE forever. */
	const char *extra[] = { "-c", "listen_addresses=", "-c", sockopt, "-c",
				"logging_collector=off", "-c", "log_destination=stderr", "-c",
				"synchronous_standby_names=", NULL };
	pid_t pid;
	r = inst_start_postgres(p->pg_bindir, p->pgdata, extra, &pid, err);
	if (r)
		return r;
	r = inst_pg_wait_ready(sock, port, 60, err);
	r = r ? r : configure_new_instance(o, c, port, err);
	struct op_err stop_err = OP_ERR_INIT;
	int rs = inst_stop_postgres(pid, 60, &stop_err);
	if (r)
		return r;
	if (rs)
		return op_err_set(err, rs, "%s", stop_err.msg);
	r = inst_marker_write(p->pgdata, o->pod_name, err);
	if (r)
		return r;
	op_log_info("instance initialised", "pgdata", p->pgdata, "pod", o->pod_name);
	return 0;
}

int inst_clone_standby(const struct inst_paths *p, const struct api_cluster *c, const char *pod,
		       const char *host, unsigned port, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf ci = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (inst_primary_conninfo(pod, p->controller_dir, host, port, "postgres", &ci))
		return op_err_set(err, -EMSGSIZE, "conninfo too long");
	umask(077);
	int r = inst_tablespace_dirs(p, c, err); /* pg_basebackup fills them */
	if (r)
		return r;
	struct argv_b a = { 0 };
	argv_add(&a, "pg_basebackup");
	argv_add(&a, "-D");
	argv_add(&a, p->pgdata);
	argv_add(&a, "-X");
	argv_add(&a, "stream");
	argv_add(&a, "-c");
	argv_add(&a, "fast");
	argv_add(&a, "-w");
	argv_add(&a, "-d");
	argv_add(&a, op_buf_str(&ci));
	if (p->waldir) {
		argv_add(&a, "--waldir");
		argv_add(&a, p->waldir);
	}
	op_log_info("cloning the primary", "host", host, "pgdata", p->pgdata);
	r = inst_run_cmd(p->pg_bindir, (const char *const *)a.v, err);
	argv_done(&a);
	if (r > 0)
		return op_err_set(err, -EIO, "pg_basebackup exited with status %d", r);
	if (r < 0)
		return r;
	r = write_config(p, c, pod, INST_PG_PORT, false, err);
	if (r)
		return r;
	_cleanup_(op_buf_donep) struct op_buf ov = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	r = inst_render_standby_override(c, pod, p->controller_dir, host, port, &ov, err);
	_cleanup_free_ char *ovp = op_asprintf("%s/override.conf", p->pgdata);
	_cleanup_free_ char *sig = op_asprintf("%s/standby.signal", p->pgdata);
	r = r ? r : inst_write_file(ovp, op_buf_str(&ov), ov.len, 0600, err);
	r = r ? r : inst_write_file(sig, "", 0, 0600, err);
	/* last: a marker naming this pod says the clone is complete (reclaim.c, reclone.c) */
	return r ? r : inst_marker_write(p->pgdata, pod, err);
}

int inst_join(const struct inst_join_opts *o, struct op_err *err)
{
	struct inst_paths paths = o->paths;
	const struct inst_paths *p = &paths;
	_cleanup_(api_cluster_freep) struct api_cluster *c = NULL;
	_cleanup_free_ char *bindir = NULL;
	int r = prepare_new_instance(&paths, o->cluster_file, o->kubeconfig, o->namespace_,
				     o->cluster_name, o->pod_name, &c, &bindir, err);
	if (r)
		return r < 0 ? r : 0;
	_cleanup_free_ char *rw = api_service_name(o->cluster_name, API_SVC_RW);
	const char *host = o->primary_host ? o->primary_host : rw;
	r = inst_clone_standby(p, c, o->pod_name, host, o->primary_port, err);
	if (r)
		return r;
	op_log_info("instance joined as a standby", "pgdata", p->pgdata, "pod", o->pod_name);
	return 0;
}
