/* instance/recovery.c - a PGDATA recovered from a barman object store
 * (spec.bootstrap.recovery, `pgop instance restore`): the base backup chosen
 * for the target (backup/catalog.c), its tar extracted (backup/restore_base.c),
 * then PostgreSQL's own archive recovery: restore_command running this
 * binary's wal-restore against the SOURCE store, the target, promotion.
 *
 * The settings live in PGDATA/pgop-recovery.conf, used only by the temporary
 * postmaster (-c config_file=): it includes postgresql.conf first, then sets
 * the recovery, so removing it (after the stop) leaves later starts normal;
 * postgres removes recovery.signal itself when it promotes. archive_command
 * is a failing command on the temporary postmaster's command line (which
 * wins over every file): nothing reaches the source store, the .ready files
 * of the new timeline stay for the Cluster's own archiver.
 *
 * Every value from the spec is validated and written as a configuration
 * string (inst_conf_quote); restore_command's paths are quoted for the
 * shell first. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backup/backup.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"
#include "support/json.h"
#include "support/log.h"
#include "support/lsn.h"

#define FIELD "spec.bootstrap.recovery.recoveryTarget."
#define NAME_MAX_LEN 63 /* MAXFNAMELEN - 1: a restore point's name */

/* ---- targets (pure) ---- */

static bool printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static int parse_tli(const char *s, struct inst_recovery_target *t, struct op_err *err)
{
	if (!s || !*s || !strcmp(s, "latest") || !strcmp(s, "current")) {
		t->timeline = op_strdup(s && *s ? s : "latest");
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (strspn(s, "0123456789") != strlen(s) || strlen(s) > 10 || errno || *end || v < 1 ||
	    v > UINT32_MAX)
		return op_err_set(err, -EINVAL, FIELD "targetTLI: %.64s is neither \"latest\", "
				  "\"current\" nor a timeline number", s);
	t->timeline = op_asprintf("%llu", v);
	t->tli = (uint32_t)v;
	return 0;
}

static int parse_value(const struct api_recovery_target *a, struct inst_recovery_target *t,
		       struct op_err *err)
{
	char norm[BK_TARGET_TIME_LEN + 1];
	switch (t->kind) {
	case BK_TARGET_TIME:
		if (bk_target_time_parse(a->target_time, &t->time_us) < 0 ||
		    bk_target_time_format(t->time_us, norm) < 0)
			return op_err_set(err, -EINVAL, FIELD "targetTime: %.64s is no RFC 3339 or "
					  "PostgreSQL timestamp", a->target_time);
		t->value = op_strdup(norm);
		return 0;
	case BK_TARGET_LSN:
		if (op_lsn_parse(a->target_lsn, &t->lsn) < 0)
			return op_err_set(err, -EINVAL, FIELD "targetLSN: %.64s is no LSN (X/Y)",
					  a->target_lsn);
		t->value = op_asprintf("%X/%X", (unsigned)(t->lsn >> 32), (unsigned)t->lsn);
		return 0;
	case BK_TARGET_XID: {
		const char *x = a->target_xid;
		errno = 0;
		unsigned long long v = strtoull(x, NULL, 10);
		if (!*x || strspn(x, "0123456789") != strlen(x) || strlen(x) > 20 || errno || v < 3)
			return op_err_set(err, -EINVAL, FIELD "targetXID: %.64s is no transaction "
					  "id (a number >= 3)", x);
		t->value = op_asprintf("%llu", v);
		return 0;
	}
	case BK_TARGET_NAME:
		if (!*a->target_name || strlen(a->target_name) > NAME_MAX_LEN ||
		    !printable(a->target_name))
			return op_err_set(err, -EINVAL, FIELD "targetName: a restore point's name "
					  "has 1 to %d printable bytes", NAME_MAX_LEN);
		t->value = op_strdup(a->target_name);
		return 0;
	default:
		return 0;
	}
}

int inst_recovery_target_parse(const struct api_recovery_target *a,
			       struct inst_recovery_target *ret, struct op_err *err)
{
	struct inst_recovery_target t = { .kind = BK_TARGET_NONE, .inclusive = true };
	if (a) {
		static const struct {
			size_t off;
			int kind;
		} kinds[] = {
			{ offsetof(struct api_recovery_target, target_time), BK_TARGET_TIME },
			{ offsetof(struct api_recovery_target, target_lsn), BK_TARGET_LSN },
			{ offsetof(struct api_recovery_target, target_xid), BK_TARGET_XID },
			{ offsetof(struct api_recovery_target, target_name), BK_TARGET_NAME },
		};
		int n = 0;
		for (size_t i = 0; i < OP_ARRAY_SIZE(kinds); i++)
			if (*(char *const *)((const char *)a + kinds[i].off))
				t.kind = kinds[i].kind, n++;
		if (a->target_immediate)
			t.kind = BK_TARGET_IMMEDIATE, n++;
		if (n > 1)
			return op_err_set(err, -EINVAL, FIELD "targetTime, targetLSN, targetXID, "
					  "targetName and targetImmediate: at most one");
		t.inclusive = !a->exclusive;
	}
	int r = parse_value(a, &t, err);
	if (r == 0)
		r = parse_tli(a ? a->target_tli : NULL, &t, err);
	if (r < 0) {
		inst_recovery_target_done(&t);
		return r;
	}
	*ret = t;
	return 0;
}

void inst_recovery_target_done(struct inst_recovery_target *t)
{
	free(t->value);
	free(t->timeline);
	t->value = t->timeline = NULL;
}

int inst_conf_quote(const char *value, struct op_buf *out)
{
	if (!printable(value))
		return -EINVAL;
	int r = op_buf_addc(out, '\'');
	for (const char *p = value; r == 0 && *p; p++)
		r = *p == '\'' ? op_buf_adds(out, "''")
		    : *p == '\\' ? op_buf_adds(out, "\\\\")
				 : op_buf_addc(out, *p);
	return r ? r : op_buf_addc(out, '\'');
}

/* value quoted for /bin/sh ('...', ' as '\''). */
static int shell_quote(const char *value, struct op_buf *out)
{
	int r = op_buf_addc(out, '\'');
	for (const char *p = value; r == 0 && *p; p++)
		r = *p == '\'' ? op_buf_adds(out, "'\\''") : op_buf_addc(out, *p);
	return r ? r : op_buf_addc(out, '\'');
}

static int setting(struct op_buf *out, const char *name, const char *value)
{
	int r = op_buf_addf(out, "%s = ", name);
	r = r ? r : inst_conf_quote(value, out);
	return r ? r : op_buf_addc(out, '\n');
}

int inst_recovery_conf_render(const char *pgop, const char *config,
			      const struct inst_recovery_target *t, struct op_buf *out,
			      struct op_err *err)
{
	static const char *const names[] = {
		[BK_TARGET_TIME] = "recovery_target_time", [BK_TARGET_LSN] = "recovery_target_lsn",
		[BK_TARGET_XID] = "recovery_target_xid", [BK_TARGET_NAME] = "recovery_target_name",
	};
	_cleanup_(op_buf_donep) struct op_buf cmd = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (!printable(pgop) || !printable(config) || strchr(pgop, '%') || strchr(config, '%'))
		return op_err_set(err, -EINVAL, "restore_command: a path holds a control character "
				  "or '%%'");
	int r = shell_quote(pgop, &cmd);
	r = r ? r : op_buf_adds(&cmd, " instance wal-restore --config ");
	r = r ? r : shell_quote(config, &cmd);
	r = r ? r : op_buf_adds(&cmd, " %f %p");
	r = r ? r : op_buf_adds(out, "# pgop: the recovery's settings (the temporary postmaster's "
				"config_file); removed when it ends\ninclude_if_exists = "
				"'postgresql.conf'\n");
	r = r ? r : setting(out, "restore_command", op_buf_str(&cmd));
	if (r == 0 && t->kind == BK_TARGET_IMMEDIATE)
		r = setting(out, "recovery_target", "immediate");
	else if (r == 0 && t->kind >= BK_TARGET_TIME && t->kind <= BK_TARGET_NAME)
		r = setting(out, names[t->kind], t->value);
	if (r == 0 && t->kind != BK_TARGET_NONE && t->kind != BK_TARGET_IMMEDIATE)
		r = setting(out, "recovery_target_inclusive", t->inclusive ? "on" : "off");
	r = r ? r : setting(out, "recovery_target_timeline", t->timeline);
	r = r ? r : setting(out, "recovery_target_action", "promote");
	return r ? op_err_set(err, r == -EINVAL ? r : -EMSGSIZE,
			      "recovery settings: a value cannot be written safely") : 0;
}

/* ---- the recovery ---- */

/* The backup to restore: the one named, else the catalog's choice. */
static int choose_backup(const struct bk_config *cfg, const struct inst_recovery_source *src,
			 const struct inst_recovery_target *t, char ret[BK_BACKUP_ID_LEN + 1],
			 struct op_err *err)
{
	struct bk_catalog cat;
	int r = bk_catalog_list(cfg, &cat, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cat.n; i++)
		if (!cat.v[i].ok)
			op_log_warn("base backup skipped", "backup", cat.v[i].id, "reason",
				    cat.v[i].error);
	bool named = src->backup_id && *src->backup_id && strcmp(src->backup_id, "latest");
	struct bk_selection sel = { .kind = (enum bk_target_kind)t->kind, .time_us = t->time_us,
				    .lsn = t->lsn, .tli = t->tli,
				    .backup_id = named ? src->backup_id : NULL };
	const struct bk_catalog_entry *e = NULL;
	r = bk_catalog_select(&cat, &sel, &e, err);
	if (r == 0) {
		memcpy(ret, e->id, BK_BACKUP_ID_LEN + 1);
		char end[BK_TARGET_TIME_LEN + 1] = "";
		if (bk_target_time_format(e->info.end_time.epoch_us, end) < 0)
			end[0] = '\0';
		_cleanup_free_ char *n = op_asprintf("%zu", cat.n);
		op_log_info("base backup chosen", "backup", e->id, "endTime", end, "endLSN",
			    e->info.end_xlog ? e->info.end_xlog : "", "backups", n);
	}
	bk_catalog_free(&cat);
	return r;
}

/* PGDATA absent (created 0700) or an empty directory. */
static int empty_pgdata(const char *pgdata, struct op_err *err)
{
	int r = op_mkdir_p(pgdata, 0700, err);
	if (r < 0)
		return r;
	if (chmod(pgdata, 0700) < 0)
		return op_err_set(err, -errno, "%s: %s", pgdata, strerror(errno));
	_cleanup_free_ char *pv = op_asprintf("%s/PG_VERSION", pgdata);
	_cleanup_free_ char *gl = op_asprintf("%s/global", pgdata);
	if (inst_path_exists(pv) || inst_path_exists(gl))
		return op_err_set(err, -EEXIST, "%s already holds a data directory: refusing to "
				  "restore over it", pgdata);
	return 0;
}

static int64_t now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One look at the recovering postmaster: 1 promoted, 0 not yet. */
static int poll_recovery(const char *sock, unsigned port, int64_t *next_log, int64_t t0)
{
	PGconn *c = NULL;
	struct op_err e = OP_ERR_INIT;
	_cleanup_free_ char *state = NULL;
	if (inst_pg_connect(sock, port, NULL, &c, &e) == 0) {
		char *v = NULL;
		if (inst_pg_value(c, "SELECT CASE WHEN pg_is_in_recovery() THEN "
				  "'replaying ' || coalesce(pg_last_wal_replay_lsn()::text, '?') "
				  "ELSE 'promoted' END", 0, NULL, &v, &e) == 0)
			state = v;
		PQfinish(c);
	}
	if (state && !strcmp(state, "promoted"))
		return 1;
	if (now_s() >= *next_log) {
		_cleanup_free_ char *el = op_asprintf("%lld", (long long)(now_s() - t0));
		op_log_info("recovery in progress", "state",
			    state ? state : "not consistent yet (no connections)", "seconds", el);
		*next_log = now_s() + 10;
	}
	return 0;
}

/* Waits until postgres promoted (1 s polls), it exits (its error) or the
 * timeout passes (then it is stopped). */
static int wait_promoted(pid_t pid, const char *sock, unsigned port, unsigned timeout_s,
			 struct op_err *err)
{
	int64_t t0 = now_s(), next_log = t0 + 10;
	for (;;) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return op_err_set(err, -EIO, "postgres exited during recovery (status %d): "
					  "the target may be past the archived WAL or before the "
					  "backup's end (its log above)", WIFEXITED(st) ? WEXITSTATUS(st) : st);
		if (poll_recovery(sock, port, &next_log, t0) == 1)
			return 0;
		if (now_s() - t0 >= (int64_t)timeout_s) {
			kill(pid, SIGQUIT);
			waitpid(pid, NULL, 0);
			return op_err_set(err, -ETIMEDOUT, "recovery did not end within %u s",
					  timeout_s);
		}
		sleep(1);
	}
}


/* With a separate WAL volume (walStorage): pg_wal, restored as an empty
 * directory (barman leaves its contents out), becomes the link to it. */
static int place_waldir(const struct inst_paths *p, struct op_err *err)
{
	if (!p->waldir)
		return 0;
	_cleanup_free_ char *wal = op_asprintf("%s/pg_wal", p->pgdata);
	if (rmdir(wal) < 0 && errno != ENOENT)
		return op_err_set(err, -errno, "%s: %s (the backup's pg_wal is not empty)", wal,
				  strerror(errno));
	int r = op_mkdir_p(p->waldir, 0700, err);
	if (r == 0 && symlink(p->waldir, wal) < 0)
		r = op_err_set(err, -errno, "symlink %s: %s", wal, strerror(errno));
	return r;
}

/* The settings file and recovery.signal. */
static int write_settings(const struct inst_paths *p, const struct inst_recovery_source *src,
			  const struct inst_recovery_target *t, const char *pgop,
			  struct op_err *err)
{
	char self[PATH_MAX];
	if (!pgop) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return op_err_set(err, -errno, "/proc/self/exe: %s", strerror(errno));
		self[n] = '\0';
		pgop = self;
	}
	char cfg[PATH_MAX];
	if (!realpath(src->config, cfg))
		return op_err_set(err, -errno, "%s: %s", src->config, strerror(errno));
	_cleanup_(op_buf_donep) struct op_buf conf = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = inst_recovery_conf_render(pgop, cfg, t, &conf, err);
	_cleanup_free_ char *path = op_asprintf("%s/" INST_RECOVERY_CONF, p->pgdata);
	_cleanup_free_ char *sig = op_asprintf("%s/recovery.signal", p->pgdata);
	_cleanup_free_ char *wal = op_asprintf("%s/pg_wal", p->pgdata);
	r = r ? r : inst_write_file(path, op_buf_str(&conf), conf.len, 0600, err);
	r = r ? r : inst_write_file(sig, "", 0, 0600, err);
	return r ? r : op_mkdir_p(wal, 0700, err);
}

/* Starts postgres on the recovery settings, waits for the promotion, runs
 * the hook, stops it. */
static int run_recovery(const struct inst_paths *p, const struct inst_recovery_opts *o,
			struct op_err *err)
{
	unsigned port = o->port ? o->port : INST_PG_PORT;
	_cleanup_free_ char *defsock = op_asprintf("%s/run", p->controller_dir);
	const char *sock = o->sockdir ? o->sockdir : defsock;
	_cleanup_free_ char *cf = op_asprintf("config_file=%s/" INST_RECOVERY_CONF, p->pgdata);
	_cleanup_free_ char *hba = op_asprintf("hba_file=%s/pg_hba.conf", p->pgdata);
	_cleanup_free_ char *ident = op_asprintf("ident_file=%s/pg_ident.conf", p->pgdata);
	_cleanup_free_ char *so = op_asprintf("unix_socket_directories=%s", sock);
	_cleanup_free_ char *po = op_asprintf("port=%u", port);
	/* archive_library (15+) would win over archive_command */
	const char *extra[] = { "-c", cf, "-c", hba, "-c", ident, "-c", so, "-c", po, "-c",
				"listen_addresses=", "-c", "logging_collector=off", "-c",
				"log_destination=stderr", "-c", "synchronous_standby_names=", "-c",
				"archive_command=/bin/false", "-c", "hot_standby=on",
				p->pg_major >= 15 ? "-c" : NULL, "archive_library=", NULL };
	pid_t pid;
	int r = inst_start_postgres(p->pg_bindir, p->pgdata, extra, &pid, err);
	if (r)
		return r;
	unsigned timeout = o->timeout_s ? o->timeout_s : INST_RECOVERY_TIMEOUT_S;
	op_log_info("recovery started", "pgdata", p->pgdata);
	r = wait_promoted(pid, sock, port, timeout, err);
	if (r)
		return r; /* postgres is gone */
	op_log_info("recovery ended: promoted", "pgdata", p->pgdata);
	if (o->after_promote)
		r = o->after_promote(o->ud, sock, port, err);
	struct op_err stop_err = OP_ERR_INIT;
	int rs = inst_stop_postgres(pid, 120, &stop_err);
	if (r)
		return r;
	return rs ? op_err_set(err, rs, "%s", stop_err.msg) : 0;
}

int inst_recover(struct inst_paths *p, const struct inst_recovery_source *src,
		 const struct inst_recovery_opts *o, char **ret_bindir, struct op_err *err)
{
	struct inst_recovery_target t;
	int r = inst_recovery_target_parse(o->target, &t, err);
	if (r)
		return r;
	struct bk_config cfg;
	r = bk_config_load(src->config, &cfg, err);
	if (r) {
		inst_recovery_target_done(&t);
		return op_err_prefix(err, "recovery source");
	}
	char id[BK_BACKUP_ID_LEN + 1];
	struct bk_restore_stats st;
	struct bk_restore_opts ro = { .target = p->pgdata, .tablespaces = o->tablespaces,
				      .n_tablespaces = o->n_tablespaces };
	umask(077);
	r = choose_backup(&cfg, src, &t, id, err);
	r = r ? r : empty_pgdata(p->pgdata, err);
	int64_t t0 = now_ms();
	r = r ? r : bk_restore_base(&cfg, id, &ro, &st, err);
	if (r == 0) {
		_cleanup_free_ char *files = op_asprintf("%llu", (unsigned long long)st.files);
		_cleanup_free_ char *bytes = op_asprintf("%llu", (unsigned long long)st.bytes);
		_cleanup_free_ char *ms = op_asprintf("%lld", (long long)(now_ms() - t0));
		_cleanup_free_ char *stored = op_asprintf("%llu",
							  (unsigned long long)st.stored_bytes);
		_cleanup_free_ char *tbs = op_asprintf("%zu", st.tablespaces);
		op_log_info("base backup restored", "backup", id, "tar", st.tar_name, "files", files,
			    "bytes", bytes, "downloaded", stored, "tablespaces", tbs, "ms", ms);
	}
	bk_config_done(&cfg);
	r = r ? r : inst_paths_locate(p, NULL, true, ret_bindir, err);
	r = r ? r : place_waldir(p, err);
	if (r == 0 && o->before_start)
		r = o->before_start(o->ud, NULL, 0, err);
	r = r ? r : write_settings(p, src, &t, o->pgop, err);
	inst_recovery_target_done(&t);
	r = r ? r : run_recovery(p, o, err);
	_cleanup_free_ char *conf = op_asprintf("%s/" INST_RECOVERY_CONF, p->pgdata);
	if (r == 0 && unlink(conf) < 0)
		r = op_err_set(err, -errno, "%s: %s", conf, strerror(errno));
	return r;
}

/* ---- the recovery source of a Cluster (spec.bootstrap.recovery) ---- */

char *inst_recovery_source_path(const struct inst_paths *p)
{
	return op_asprintf("%s/run/recovery-source.json", p->controller_dir);
}

/* <secrets dir>/recovery-<file>/<file> (owned). */

int inst_recovery_source_render(const struct inst_paths *p, const struct api_cluster *c,
				const char *region, struct op_buf *out, struct op_err *err)
{
	const struct api_external_cluster *x = api_cluster_recovery_source(c);
	if (!x)
		return op_err_set(err, -ENOENT, "spec.bootstrap.recovery.source: no externalClusters "
				  "entry with a barmanObjectStore is named %s",
				  c->spec.bootstrap.recovery.source ? c->spec.bootstrap.recovery.source
								    : "(none)");
	const struct api_barman_store *s = x->barman_object_store;
	if (!api_barman_file_ref(s, API_BARMAN_ACCESS_KEY_ID) ||
	    !api_barman_file_ref(s, API_BARMAN_SECRET_ACCESS_KEY))
		return op_err_set(err, -ENOTSUP, "externalClusters %s: barmanObjectStore.s3Credentials "
				  "needs accessKeyId and secretAccessKey (inheritFromIAMRole is not "
				  "supported)", x->name);
	/* CloudNativePG: the store's serverName, else the external cluster's name */
	json_object *o = inst_store_config_new(p, s, s->server_name && *s->server_name
							     ? s->server_name : x->name,
					       region, "recovery");
	inst_store_args_config(o, s, true);
	_cleanup_free_ char *state = op_asprintf("%s/run/recovery-wal", p->controller_dir);
	op_jsets(o, "stateDir", state);
	int r = op_buf_adds(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return r ? op_err_set(err, r, "recovery source configuration too large") : 0;
}

/* destinationPath without trailing slashes equal */
static bool same_destination(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	while (la > 0 && a[la - 1] == '/')
		la--;
	while (lb > 0 && b[lb - 1] == '/')
		lb--;
	return la == lb && !strncmp(a, b, la);
}

int inst_recovery_archive_check(const struct api_cluster *c, struct op_err *err)
{
	const struct api_external_cluster *x = api_cluster_recovery_source(c);
	const struct api_barman_store *own = api_cluster_wal_store(c);
	if (!x || !own || !own->destination_path || !x->barman_object_store->destination_path)
		return 0;
	const struct api_barman_store *s = x->barman_object_store;
	const char *src_server = s->server_name && *s->server_name ? s->server_name : x->name;
	const char *own_server = api_barman_server_name(c, own);
	if (!own_server || strcmp(src_server, own_server) ||
	    !same_destination(s->destination_path, own->destination_path))
		return 0;
	return op_err_set(err, -EEXIST, "spec.backup.barmanObjectStore archives into the recovery "
			  "source (%s, server %s): the recovered cluster would write into the "
			  "archive it comes from; set another destinationPath or serverName",
			  s->destination_path, src_server);
}

int inst_recovery_source_write(const struct inst_paths *p, const struct api_cluster *c,
			       char **ret_path, struct op_err *err)
{
	const struct api_external_cluster *x = api_cluster_recovery_source(c);
	_cleanup_free_ char *region = NULL;
	if (x && api_barman_file_ref(x->barman_object_store, API_BARMAN_REGION)) {
		int r = inst_read_secret(p, api_recovery_file_volume(API_BARMAN_REGION),
					 api_barman_file_name(API_BARMAN_REGION), &region, err);
		if (r < 0)
			return r;
	}
	_cleanup_(op_buf_donep) struct op_buf conf = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = inst_recovery_source_render(p, c, region, &conf, err);
	_cleanup_free_ char *state = op_asprintf("%s/run/recovery-wal", p->controller_dir);
	r = r ? r : op_mkdir_p(state, 0700, err);
	_cleanup_free_ char *path = inst_recovery_source_path(p);
	r = r ? r : inst_write_file(path, op_buf_str(&conf), conf.len, 0600, err);
	if (r < 0)
		return r;
	*ret_path = TAKE_PTR(path);
	return 0;
}
