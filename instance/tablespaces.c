/* instance/tablespaces.c - spec.tablespaces on an instance (CloudNativePG's
 * declarative tablespaces): each one's volume is mounted at
 * /var/lib/postgresql/tablespaces/<name> (reconciler/objects_pod.c), its
 * location is <that>/data. Every instance makes the location directory
 * before postgres starts or a clone begins (a replica replaying CREATE
 * TABLESPACE, and pg_basebackup, need it there, empty). The primary creates
 * each missing tablespace there with its owner, and sets the owner of one
 * that has another; the states go to /pg/status "tablespaces" (the
 * reconciler copies them into status.tablespacesStatus).
 *
 * SQL: names and owners are quoted with PQescapeIdentifier, the location
 * with PQescapeLiteral (the admission checks them too, V19). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "api/names.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/log.h"

int inst_tablespace_dirs(const struct inst_paths *p, const struct api_cluster *c,
			 struct op_err *err)
{
	for (size_t i = 0; c && i < c->spec.n_tablespaces; i++) {
		const char *t = c->spec.tablespaces[i].name;
		if (!t || !*t || strchr(t, '/') || !strcmp(t, ".") || !strcmp(t, ".."))
			continue; /* refused at admission (V19) */
		_cleanup_free_ char *mount = api_tablespace_mount(p->tablespaces_dir, t);
		_cleanup_free_ char *loc = api_tablespace_location(p->tablespaces_dir, t);
		struct stat st;
		if (stat(mount, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* not mounted (yet): the primary reports it pending */
		if (mkdir(loc, 0700) < 0 && errno != EEXIST)
			return op_err_set(err, -errno, "tablespace %s: %s: %s", t, loc, strerror(errno));
	}
	return 0;
}

/* One tablespace's state as CloudNativePG's TablespaceState into arr. */
static void state(json_object *arr, const char *name, const char *owner, bool done,
		  const char *error)
{
	json_object *o = op_jobj();
	op_jsets(o, "name", name);
	if (owner)
		op_jsets(o, "owner", owner);
	op_jsets(o, "state", done ? "reconciled" : "pending");
	if (error)
		op_jsets(o, "error", error);
	op_jpush(arr, o);
}

/* The owner pg_tablespace gives name (owned), NULL when there is no such
 * tablespace; -errno when the query failed. */
static int current_owner(PGconn *conn, const char *name, char **ret, struct op_err *err)
{
	const char *params[] = { name };
	PGresult *res = NULL;
	int r = inst_pg_exec(conn,
			     "SELECT pg_catalog.pg_get_userbyid(spcowner) FROM pg_catalog.pg_tablespace "
			     "WHERE spcname = $1",
			     1, params, &res, err);
	*ret = r == 0 && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
		       ? op_strdup(PQgetvalue(res, 0, 0))
		       : NULL;
	if (res)
		PQclear(res);
	return r;
}

/* CREATE TABLESPACE or ALTER TABLESPACE ... OWNER TO, as needed, for t at
 * loc: 0 when it is as the spec says, -errno with err otherwise. */
static int reconcile_one(PGconn *conn, const struct api_tablespace *t, const char *owner,
			 const char *loc, struct op_err *err)
{
	_cleanup_free_ char *have = NULL;
	int r = current_owner(conn, t->name, &have, err);
	if (r < 0)
		return r;
	if (have && (!owner || strcmp(have, owner) == 0))
		return 0;
	char *qn = PQescapeIdentifier(conn, t->name, strlen(t->name));
	char *qo = owner ? PQescapeIdentifier(conn, owner, strlen(owner)) : NULL;
	char *ql = PQescapeLiteral(conn, loc, strlen(loc));
	struct op_buf sql = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (!qn || (owner && !qo) || !ql)
		r = op_err_set(err, -EINVAL, "cannot quote: %s", PQerrorMessage(conn));
	else if (have)
		r = op_buf_addf(&sql, "ALTER TABLESPACE %s OWNER TO %s", qn, qo);
	else
		r = op_buf_addf(&sql, "CREATE TABLESPACE %s%s%s LOCATION %s", qn, qo ? " OWNER " : "",
				qo ? qo : "", ql);
	if (r == 0 && sql.len)
		r = inst_pg_exec(conn, op_buf_str(&sql), 0, NULL, NULL, err);
	if (r == 0)
		op_log_info(have ? "tablespace owner set" : "tablespace created", "tablespace",
			    t->name, "owner", owner ? owner : "postgres", "location", loc);
	PQfreemem(qn);
	PQfreemem(qo);
	PQfreemem(ql);
	op_buf_done(&sql);
	return r;
}

char *inst_tablespaces_reconcile(PGconn *conn, const struct inst_paths *p,
				 const struct api_cluster *c)
{
	if (c->spec.n_tablespaces == 0)
		return NULL;
	json_object *arr = op_jarr();
	for (size_t i = 0; i < c->spec.n_tablespaces; i++) {
		const struct api_tablespace *t = &c->spec.tablespaces[i];
		if (!t->name || !*t->name)
			continue;
		const char *owner = t->owner && *t->owner ? t->owner : NULL;
		_cleanup_free_ char *loc = api_tablespace_location(p->tablespaces_dir, t->name);
		struct stat st;
		if (stat(loc, &st) < 0 || !S_ISDIR(st.st_mode)) {
			state(arr, t->name, owner, false, "deferred until the volume is mounted");
			continue;
		}
		struct op_err e = OP_ERR_INIT;
		if (reconcile_one(conn, t, owner, loc, &e) < 0) {
			op_log_warn("tablespace not reconciled", "tablespace", t->name, "error", e.msg);
			state(arr, t->name, owner, false, e.msg);
		} else {
			state(arr, t->name, owner, true, NULL);
		}
	}
	char *out = op_strdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN));
	json_object_put(arr);
	return out;
}
