/* instance/config.c - postgresql.conf (custom.conf), pg_hba.conf and
 * pg_ident.conf rendered from the Cluster (admission-rules.md §7).
 *
 * Pure: no I/O, no clock. The same input always renders the same bytes, so
 * cnpg.config_sha256 changes only when the configuration does.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "api/names.h"
#include "api/pgparams.h"
#include "api/plugin.h"
#include "instance/instance.h"
#include "support/alloc.h"

const char inst_postgresql_conf_includes[] =
	"# Managed by pgop: the configuration lives in custom.conf (rendered from the\n"
	"# Cluster) and override.conf (standby and recovery settings).\n"
	"include 'custom.conf'\n"
	"include 'override.conf'\n";

/* §7d: libraries added to shared_preload_libraries when any "<ext>.*" is set. */
static const char *const managed_extensions[] = {
	"pgaudit", "pg_stat_statements", "auto_explain", "pg_failover_slots",
};

/* A parameter being assembled; value owned. */
struct param {
	const char *name; /* borrowed */
	char *value;      /* owned */
};

struct param_list {
	struct param *v;
	size_t n, cap;
};

static void params_done(struct param_list *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].value);
	free(ps->v);
	ps->v = NULL;
	ps->n = ps->cap = 0;
}

/* Sets (replacing) name; value copied. */
static void params_set(struct param_list *ps, const char *name, const char *value)
{
	for (size_t i = 0; i < ps->n; i++) {
		if (strcmp(ps->v[i].name, name) == 0) {
			free(ps->v[i].value);
			ps->v[i].value = op_strdup(value);
			return;
		}
	}
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->v = op_realloc(ps->v, ps->cap * sizeof(*ps->v));
	}
	ps->v[ps->n++] = (struct param){ .name = name, .value = op_strdup(value) };
}

static int cmp_param(const void *a, const void *b)
{
	return strcmp(((const struct param *)a)->name, ((const struct param *)b)->name);
}

static bool valid_param_name(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

/* Line breaks and other control characters (a tab is a blank). */
static bool has_control_char(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return true;
	return false;
}

/* Keys PostgreSQL reads as directives, not parameters: `include = 'f'` would
 * load any file the postgres user can write (admission-rules §7a). */
static const char *const directive_keys[] = { "include", "include_if_exists", "include_dir" };

static bool is_directive(const char *name)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(directive_keys); i++)
		if (strcasecmp(directive_keys[i], name) == 0)
			return true;
	return false;
}

/* Parameters whose presence depends on the major (admission-rules §7c):
 * written from min_major on. */
static const struct {
	const char *name;
	int min_major;
} versioned_params[] = {
	{ "allow_alter_system", 17 }, /* follows spec.postgresql.enableAlterSystem */
};

/* -1 when name is not versioned, else whether major has it. */
static int versioned_applies(const char *name, int major)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(versioned_params); i++)
		if (strcasecmp(versioned_params[i].name, name) == 0)
			return major >= versioned_params[i].min_major;
	return -1;
}

/* key = 'value' with ' doubled and \ escaped. */
static int add_setting(struct op_buf *out, const char *name, const char *value)
{
	int r = op_buf_addf(out, "%s = '", name);
	for (const char *p = value; r == 0 && *p; p++) {
		if (*p == '\'')
			r = op_buf_adds(out, "''");
		else if (*p == '\\')
			r = op_buf_adds(out, "\\\\");
		else
			r = op_buf_addc(out, *p);
	}
	return r ? r : op_buf_adds(out, "'\n");
}

static const char *cdir(const struct inst_config_input *in)
{
	return in->controller_dir ? in->controller_dir : INST_CONTROLLER_DIR;
}

static bool list_has(const struct op_buf *list, const char *item)
{
	size_t n = strlen(item);
	const char *s = op_buf_str(list);
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (len == n && strncmp(s, item, n) == 0)
			return true;
		if (!end)
			break;
		s = end + 1;
	}
	return false;
}

static int list_add(struct op_buf *list, const char *item)
{
	if (!*item || list_has(list, item))
		return 0;
	int r = list->len ? op_buf_addc(list, ',') : 0;
	return r ? r : op_buf_adds(list, item);
}

/* Managed extensions whose parameters are set, then the user's libraries. */
static int preload_libraries(const struct api_cluster *c, struct op_buf *out, struct op_err *err)
{
	const struct api_kvs *up = &c->spec.postgresql.parameters;
	int r = 0;
	for (size_t e = 0; r == 0 && e < OP_ARRAY_SIZE(managed_extensions); e++) {
		size_t n = strlen(managed_extensions[e]);
		for (size_t i = 0; i < up->n; i++) {
			if (strncmp(up->items[i].key, managed_extensions[e], n) == 0 &&
			    up->items[i].key[n] == '.') {
				r = list_add(out, managed_extensions[e]);
				break;
			}
		}
	}
	const struct api_strv *spl = &c->spec.postgresql.shared_preload_libraries;
	for (size_t i = 0; r == 0 && i < spl->n; i++) {
		if (strpbrk(spl->items[i], ",'\\\r\n"))
			return op_err_set(err, -EINVAL,
					  "spec.postgresql.shared_preload_libraries[%zu]: invalid "
					  "library name", i);
		r = list_add(out, spl->items[i]);
	}
	return r ? op_err_set(err, r, "shared_preload_libraries: too long") : 0;
}

static const char *archive_mode(const struct api_cluster *c)
{
	const char *skip = api_kvs_get(&c->metadata.annotations, "cnpg.io/skipWalArchiving");
	return skip && strcmp(skip, "enabled") == 0 ? "off" : "on";
}

/* With spec.backup.barmanObjectStore, `'<pgop>' instance wal-archive
 * --config '<controller>/run/wal-archive.json' %p` into out (1); 0 when the
 * Cluster archives nowhere (the command is /bin/true, as CloudNativePG's is
 * a no-op then). The paths come from the manager's flags, never the spec;
 * one that would need shell quoting is refused. */
/* temp_tablespaces: spec.tablespaces[] marked temporary, each name a
 * quoted identifier (postgres splits the list as identifiers), into out. */
static int temp_tablespaces(const struct api_cluster *c, struct op_buf *out, struct op_err *err)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < c->spec.n_tablespaces; i++) {
		const char *t = c->spec.tablespaces[i].name;
		if (!c->spec.tablespaces[i].temporary || !t)
			continue;
		r = op_buf_adds(out, out->len ? ",\"" : "\"");
		for (const char *q = t; r == 0 && *q; q++)
			r = *q == '"' ? op_buf_adds(out, "\"\"") : op_buf_addc(out, *q);
		r = r ? r : op_buf_addc(out, '"');
	}
	return r ? op_err_set(err, r, "temp_tablespaces: too long") : 0;
}

static int archive_command(const struct inst_config_input *in, struct op_buf *out,
			   struct op_err *err)
{
	if (!api_cluster_archives_wal(in->cluster))
		return 0;
	const char *cd = cdir(in);
	_cleanup_free_ char *self = in->pgop_path ? NULL : op_asprintf("%s/pgop", cd);
	const char *pgop = in->pgop_path ? in->pgop_path : self;
	if (strpbrk(pgop, "'%\n") || strpbrk(cd, "'%\n"))
		return op_err_set(err, -EINVAL, "archive_command: a path with ', %% or a line "
				  "break (%s, %s)", pgop, cd);
	op_buf_reset(out);
	int r = op_buf_addf(out, "'%s' instance wal-archive --config '%s/run/wal-archive.json' %%p",
			    pgop, cd);
	return r ? op_err_set(err, r, "archive_command: too long") : 1;
}

static int collect_params(const struct inst_config_input *in, struct param_list *ps,
			  struct op_err *err)
{
	const struct api_cluster *c = in->cluster;
	const char *cd = cdir(in);
	if (in->major < 13 || in->major > 99)
		return op_err_set(err, -EINVAL, "PostgreSQL major %d: not supported (13 or newer)",
				  in->major);
	/* §7b defaults, the table admission writes into the spec (api/pgparams.c);
	 * log_directory and shared_preload_libraries are replaced below */
	for (size_t i = 0; i < api_pg_default_params_count; i++)
		params_set(ps, api_pg_default_params[i].name, api_pg_default_params[i].value);
	const struct api_kvs *up = &c->spec.postgresql.parameters;
	for (size_t i = 0; i < up->n; i++) {
		const char *k = up->items[i].key, *v = up->items[i].value ? up->items[i].value : "";
		if (!valid_param_name(k))
			return op_err_set(err, -EINVAL,
					  "spec.postgresql.parameters: invalid parameter name \"%s\"",
					  k);
		if (is_directive(k))
			return op_err_set(err, -EINVAL,
					  "spec.postgresql.parameters.%s: an include directive, not a "
					  "parameter",
					  k);
		if (has_control_char(v))
			return op_err_set(err, -EINVAL,
					  "spec.postgresql.parameters.%s: line breaks and control "
					  "characters are not allowed",
					  k);
		/* versioned ones are operator managed (a PG 15 server would refuse them) */
		if (api_pg_param_is_fixed(k) || versioned_applies(k, in->major) >= 0 ||
		    strcmp(k, "cnpg.config_sha256") == 0)
			continue;
		params_set(ps, k, v);
	}
	_cleanup_(op_buf_donep) struct op_buf tmp = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	char port[16];
	snprintf(port, sizeof(port), "%u", in->port ? in->port : INST_PG_PORT);
	/* §7c mandatory settings */
	int ar = archive_command(in, &tmp, err);
	if (ar < 0)
		return ar;
	params_set(ps, "archive_command", ar ? op_buf_str(&tmp) : "/bin/true");
	params_set(ps, "archive_mode", archive_mode(c));
	params_set(ps, "cluster_name", c->metadata.name ? c->metadata.name : "");
	params_set(ps, "hot_standby", "true");
	params_set(ps, "listen_addresses", "*");
	params_set(ps, "port", port);
	params_set(ps, "restart_after_crash", "false");
	params_set(ps, "ssl", "on");
#define PATH_PARAM(name, fmt)                                                                      \
	do {                                                                                       \
		op_buf_reset(&tmp);                                                                \
		if (op_buf_addf(&tmp, fmt, cd))                                                    \
			return op_err_set(err, -EMSGSIZE, "controller dir: too long");            \
		params_set(ps, name, op_buf_str(&tmp));                                            \
	} while (0)
	PATH_PARAM("log_directory", "%s/log");
	PATH_PARAM("unix_socket_directories", "%s/run");
	PATH_PARAM("ssl_cert_file", "%s/certificates/server.crt");
	PATH_PARAM("ssl_key_file", "%s/certificates/server.key");
	PATH_PARAM("ssl_ca_file", "%s/certificates/client-ca.crt");
#undef PATH_PARAM
	if (versioned_applies("allow_alter_system", in->major) == 1)
		params_set(ps, "allow_alter_system",
			   c->spec.postgresql.enable_alter_system ? "on" : "off");
	op_buf_reset(&tmp);
	int r = preload_libraries(c, &tmp, err);
	if (r)
		return r;
	params_set(ps, "shared_preload_libraries", op_buf_str(&tmp));
	op_buf_reset(&tmp);
	if ((r = temp_tablespaces(c, &tmp, err)) < 0)
		return r;
	if (tmp.len)
		params_set(ps, "temp_tablespaces", op_buf_str(&tmp));
	op_buf_reset(&tmp);
	r = inst_sync_standby_names(c, in->pod_name, in->healthy_replicas, &tmp, err);
	if (r)
		return r;
	if (tmp.len)
		params_set(ps, "synchronous_standby_names", op_buf_str(&tmp));
	return 0;
}

static char *sha256_hex(const char *data, size_t len)
{
	unsigned char d[32];
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) < 0)
		abort(); /* only fails on a broken gnutls build */
	char *hex = op_malloc(65);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return hex;
}

int inst_render_postgresql_conf(const struct inst_config_input *in, struct op_buf *out,
				char **ret_sha256, struct op_err *err)
{
	struct param_list ps = { 0 };
	_cleanup_(op_buf_donep) struct op_buf body = OP_BUF_INIT(OP_BUF_MAX_FILE);
	_cleanup_free_ char *sha = NULL;
	int r = collect_params(in, &ps, err);
	if (r)
		goto out;
	qsort(ps.v, ps.n, sizeof(*ps.v), cmp_param);
	r = op_buf_adds(&body, "# Generated by pgop from the Cluster: do not edit\n");
	for (size_t i = 0; r == 0 && i < ps.n; i++)
		r = add_setting(&body, ps.v[i].name, ps.v[i].value);
	if (r) {
		op_err_set(err, r, "postgresql.conf: too large");
		goto out;
	}
	sha = sha256_hex(body.data ? body.data : "", body.len);
	r = add_setting(&body, "cnpg.config_sha256", sha);
	r = r ? r : op_buf_add(out, op_buf_str(&body), body.len);
	if (r) {
		op_err_set(err, r, "postgresql.conf: too large");
		goto out;
	}
	if (ret_sha256)
		*ret_sha256 = TAKE_PTR(sha);
out:
	params_done(&ps);
	return r;
}

/* §7e, in CNPG order. */
static const char *const hba_fixed[] = {
	"local all cnpg_metrics_exporter peer map=cnpg_metrics_exporter",
	"local all all peer map=local",
	"hostssl postgres streaming_replica all cert map=cnpg_streaming_replica",
	"hostssl replication streaming_replica all cert map=cnpg_streaming_replica",
	"hostssl all cnpg_pooler_pgbouncer all cert map=cnpg_pooler_pgbouncer",
};

static int add_user_lines(struct op_buf *out, const struct api_strv *lines, const char *field,
			  struct op_err *err)
{
	for (size_t i = 0; i < lines->n; i++) {
		if (has_control_char(lines->items[i]))
			return op_err_set(err, -EINVAL,
					  "%s[%zu]: line breaks and control characters are not "
					  "allowed",
					  field, i);
		int r = op_buf_addf(out, "%s\n", lines->items[i]);
		if (r)
			return op_err_set(err, r, "%s: too large", field);
	}
	return 0;
}

int inst_render_pg_hba(const struct inst_config_input *in, struct op_buf *out, struct op_err *err)
{
	int r = op_buf_adds(out, "# Generated by pgop from the Cluster: do not edit\n"
				 "# Fixed rules\n");
	for (size_t i = 0; r == 0 && i < OP_ARRAY_SIZE(hba_fixed); i++)
		r = op_buf_addf(out, "%s\n", hba_fixed[i]);
	r = r ? r : op_buf_adds(out, "# spec.postgresql.pg_hba\n");
	if (r)
		return op_err_set(err, r, "pg_hba.conf: too large");
	r = add_user_lines(out, &in->cluster->spec.postgresql.pg_hba, "spec.postgresql.pg_hba", err);
	if (r)
		return r;
	r = op_buf_adds(out, "# Default rule\nhost all all all scram-sha-256\n");
	return r ? op_err_set(err, r, "pg_hba.conf: too large") : 0;
}

int inst_render_pg_ident(const struct inst_config_input *in, struct op_buf *out,
			 struct op_err *err)
{
	const char *u = in->os_user && *in->os_user ? in->os_user : "postgres";
	if (strpbrk(u, " \t\r\n\"'#"))
		return op_err_set(err, -EINVAL, "os user \"%s\": not usable in pg_ident.conf", u);
	int r = op_buf_addf(out,
			    "# Generated by pgop from the Cluster: do not edit\n"
			    "local %s postgres\n"
			    "cnpg_streaming_replica streaming_replica streaming_replica\n"
			    "cnpg_pooler_pgbouncer cnpg_pooler_pgbouncer cnpg_pooler_pgbouncer\n"
			    "cnpg_metrics_exporter %s cnpg_metrics_exporter\n"
			    "# spec.postgresql.pg_ident\n",
			    u, u);
	if (r)
		return op_err_set(err, r, "pg_ident.conf: too large");
	return add_user_lines(out, &in->cluster->spec.postgresql.pg_ident,
			      "spec.postgresql.pg_ident", err);
}

/* A conninfo value: single-quoted, ' and \ escaped. */
static int add_conn_kv(struct op_buf *out, const char *k, const char *v)
{
	int r = op_buf_addf(out, "%s%s='", out->len ? " " : "", k);
	for (const char *p = v; r == 0 && *p; p++) {
		if (*p == '\'' || *p == '\\')
			r = op_buf_addc(out, '\\');
		r = r ? r : op_buf_addc(out, *p);
	}
	return r ? r : op_buf_addc(out, '\'');
}

int inst_primary_conninfo(const char *pod_name, const char *controller_dir, const char *host,
			  unsigned port, const char *dbname, struct op_buf *out)
{
	const char *cd = controller_dir ? controller_dir : INST_CONTROLLER_DIR;
	char ports[16];
	snprintf(ports, sizeof(ports), "%u", port ? port : INST_PG_PORT);
	_cleanup_free_ char *cert = op_asprintf("%s/certificates/streaming_replica.crt", cd);
	_cleanup_free_ char *key = op_asprintf("%s/certificates/streaming_replica.key", cd);
	_cleanup_free_ char *ca = op_asprintf("%s/certificates/server-ca.crt", cd);
	struct op_buf tmp = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = add_conn_kv(&tmp, "host", host);
	r = r ? r : add_conn_kv(&tmp, "port", ports);
	r = r ? r : add_conn_kv(&tmp, "user", "streaming_replica");
	r = r ? r : add_conn_kv(&tmp, "application_name", pod_name);
	r = r ? r : add_conn_kv(&tmp, "sslmode", "verify-ca");
	r = r ? r : add_conn_kv(&tmp, "sslcert", cert);
	r = r ? r : add_conn_kv(&tmp, "sslkey", key);
	r = r ? r : add_conn_kv(&tmp, "sslrootcert", ca);
	if (dbname && r == 0)
		r = add_conn_kv(&tmp, "dbname", dbname);
	/* -rw may still lead to a partitioned old primary (SYNs dropped): give up soon and
	 * retry (wal_retrieve_retry_interval) once the Service has moved */
	r = r ? r : add_conn_kv(&tmp, "connect_timeout", "2");
	r = r ? r : op_buf_add(out, op_buf_str(&tmp), tmp.len);
	op_buf_done(&tmp);
	return r;
}

int inst_render_standby_override(const struct api_cluster *c, const char *pod_name,
				 const char *controller_dir, const char *host, unsigned port,
				 struct op_buf *out, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf ci = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = c ? inst_primary_conninfo(pod_name, controller_dir, host, port, "postgres", &ci) : 0;
	r = r ? r : op_buf_adds(out, "# Generated by pgop: standby settings\n");
	if (r == 0 && !c) /* cut: no primary to stream from */
		r = op_buf_adds(out, INST_CUT_MARK "\n");
	r = r ? r : add_setting(out, "recovery_target_timeline", "latest");
	r = r ? r : add_setting(out, "primary_conninfo", op_buf_str(&ci));
	if (r == 0 && c && c->spec.replication_slots.ha_enabled) {
		_cleanup_free_ char *slot = api_slot_name(api_cluster_slot_prefix(c), pod_name);
		r = add_setting(out, "primary_slot_name", slot);
	}
	return r ? op_err_set(err, r, "override.conf: too large") : 0;
}
