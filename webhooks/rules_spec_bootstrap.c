/* webhooks/rules_spec_bootstrap.c - bootstrap rules: initdb (V1), the
 * application database of recovery / pg_basebackup (V2, V3), import (V4),
 * one method only (V7), recovery targets (V10), bootstrap sources (V20, V22)
 * and recovery from volume snapshots (V23). CNPG cluster_webhook.go.
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"

/* database and owner must come together (V1, V2, V3). */
static void check_app_db(json_object *method, const char *path, struct wh_result *res)
{
	if (!method)
		return;
	const char *db = wh_nstr(method, "database");
	const char *owner = wh_nstr(method, "owner");
	if (db && !owner) {
		_cleanup_free_ char *p = op_asprintf("%s.owner", path);
		wh_result_error(res, p, "You need to specify the database owner user");
	}
	if (!db && owner) {
		_cleanup_free_ char *p = op_asprintf("%s.database", path);
		wh_result_error(res, p, "You need to specify the database name");
	}
}

static void check_sql_refs(json_object *initdb, const char *field, struct wh_result *res)
{
	static const char *const kinds[] = { "secretRefs", "configMapRefs" };
	for (size_t k = 0; k < OP_ARRAY_SIZE(kinds); k++) {
		_cleanup_free_ char *rel = op_asprintf("%s.%s", field, kinds[k]);
		json_object *arr = wh_arr(initdb, rel);
		size_t n = arr ? json_object_array_length(arr) : 0;
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(arr, i);
			if (wh_nstr(e, "name") && wh_nstr(e, "key"))
				continue;
			_cleanup_free_ char *p =
				op_asprintf("spec.bootstrap.initdb.%s[%zu]", rel, i);
			wh_result_error(res, p, "key and name must be specified");
		}
	}
}

WH_RULE_FN(wh_v1_initdb)
{
	json_object *initdb = wh_obj(ctx->spec, "bootstrap.initdb");
	if (!initdb)
		return;
	check_app_db(initdb, "spec.bootstrap.initdb", res);
	int64_t wss = 0;
	if (wh_i64(initdb, "walSegmentSize", &wss) && wss != 0 && (wss < 0 || (wss & (wss - 1))))
		wh_result_error(res, "spec.bootstrap.initdb.walSegmentSize",
				"WAL segment size must be a power of 2");
	/* CNPG checks only the application refs (the other two are used as-is) */
	check_sql_refs(initdb, "postInitApplicationSQLRefs", res);
}

WH_RULE_FN(wh_v2_recovery_app_db)
{
	check_app_db(wh_obj(ctx->spec, "bootstrap.recovery"), "spec.bootstrap.recovery", res);
}

WH_RULE_FN(wh_v3_pg_basebackup_app_db)
{
	check_app_db(wh_obj(ctx->spec, "bootstrap.pg_basebackup"), "spec.bootstrap.pg_basebackup",
		     res);
}

#define IMPORT_PATH "spec.bootstrap.initdb.import"

WH_RULE_FN(wh_v4_import)
{
	json_object *imp = wh_obj(ctx->spec, "bootstrap.initdb.import");
	if (!imp)
		return;
	const char *type = wh_str(imp, "type");
	size_t ndb = wh_len(imp, "databases"), nroles = wh_len(imp, "roles");
	bool db_wild = wh_arr_has_str(imp, "databases", "*");
	if (type && strcmp(type, "microservice") == 0) {
		if (ndb != 1)
			wh_result_error(res, IMPORT_PATH ".databases",
					"You need to specify a single database for the `microservice` import type");
		if (nroles != 0)
			wh_result_error(res, IMPORT_PATH ".roles",
					"You cannot specify roles to import for the `microservice` import type");
		json_object *d0 = ndb ? json_object_array_get_idx(wh_arr(imp, "databases"), 0)
				      : NULL;
		if (d0 && json_object_is_type(d0, json_type_string) &&
		    strchr(json_object_get_string(d0), '*'))
			wh_result_error(res, IMPORT_PATH ".databases[0]",
					"You cannot specify any wildcard for the `microservice` import type");
	} else if (type && strcmp(type, "monolith") == 0) {
		if (ndb < 1)
			wh_result_error(res, IMPORT_PATH ".databases",
					"You need to specify at least a database for the `monolith` import type");
		if (ndb > 1 && db_wild)
			wh_result_error(res, IMPORT_PATH ".databases",
					"Wildcard import cannot be used along other database names");
		if (nroles > 1 && wh_arr_has_str(imp, "roles", "*"))
			wh_result_error(res, IMPORT_PATH ".roles",
					"Wildcard import cannot be used along other role names");
		if (wh_len(imp, "postImportApplicationSQL") > 0)
			wh_result_error(res, IMPORT_PATH ".postImportApplicationSQL",
					"postImportApplicationSQL is not allowed for the `monolith` import type");
	} else {
		static const char *const ok[] = { "microservice", "monolith" };
		wh_result_unsupported(res, IMPORT_PATH ".type", ok, OP_ARRAY_SIZE(ok));
	}
}

WH_RULE_FN(wh_v7_bootstrap_method)
{
	json_object *b = wh_obj(ctx->spec, "bootstrap");
	static const char *const methods[] = { "initdb", "recovery", "pg_basebackup" };
	int n = 0;
	for (size_t i = 0; b && i < OP_ARRAY_SIZE(methods); i++)
		if (wh_at(b, methods[i]))
			n++;
	if (n > 1)
		wh_result_typed(res, WH_ERR_FORBIDDEN, "spec.bootstrap",
				"Only one bootstrap method can be specified at a time");
}

/* ---- V10 recovery target ---- */

/* PostgreSQL LSN "X/Y", each 1-8 hex digits. */
static bool lsn_valid(const char *s)
{
	const char *slash = strchr(s, '/');
	if (!slash)
		return false;
	size_t a = (size_t)(slash - s), b = strlen(slash + 1);
	if (a < 1 || a > 8 || b < 1 || b > 8)
		return false;
	for (const char *p = s; *p; p++)
		if (p != slash && !isxdigit((unsigned char)*p))
			return false;
	return true;
}

static bool digits(const char **p, int n, int lo, int hi)
{
	int v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return false;
		v = v * 10 + (**p - '0');
	}
	return v >= lo && v <= hi;
}

/* Timestamps as accepted by CNPG ParseTargetTime (lib/pq ParseTimestamp,
 * then RFC 3339): "YYYY-MM-DD[( |T)HH:MM:SS[.frac][Z|±HH[[:]MM[[:]SS]]]]". */
static bool target_time_valid(const char *s)
{
	const char *p = s;
	if (!digits(&p, 4, 0, 9999) || *p++ != '-' || !digits(&p, 2, 1, 12) || *p++ != '-' ||
	    !digits(&p, 2, 1, 31))
		return false;
	if (*p == '\0')
		return true; /* a bare date, as lib/pq accepts */
	if (*p != ' ' && *p != 'T')
		return false;
	p++;
	if (!digits(&p, 2, 0, 23) || *p++ != ':' || !digits(&p, 2, 0, 59) || *p++ != ':' ||
	    !digits(&p, 2, 0, 60))
		return false;
	if (*p == '.') {
		p++;
		int nd = 0;
		while (isdigit((unsigned char)*p) && nd < 10)
			p++, nd++;
		if (nd == 0 || nd == 10)
			return false;
	}
	if (*p == 'Z' || *p == 'z')
		return p[1] == '\0';
	if (*p == '+' || *p == '-') {
		p++;
		if (!digits(&p, 2, 0, 23))
			return false;
		for (int part = 0; part < 2 && *p; part++) { /* [[:]MM[[:]SS]] */
			if (*p == ':')
				p++;
			if (!digits(&p, 2, 0, 59))
				return false;
		}
	}
	return *p == '\0';
}

static bool xid_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v <= UINT32_MAX;
}

static bool name_valid(const char *s)
{
	if (strlen(s) >= 64)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static bool tli_valid(const char *s)
{
	if (!*s || strcmp(s, "latest") == 0)
		return true;
	int64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || v > UINT32_MAX)
			return false;
		v = v * 10 + (*p - '0');
	}
	return v >= 1 && v <= UINT32_MAX;
}

#define RT_PATH "spec.bootstrap.recovery.recoveryTarget"

/* The names of the targets set, "targetLSN and targetTime", into buf. */
static const char *set_targets(char *buf, size_t len, bool immediate, const char *lsn,
			       const char *name, const char *xid, const char *time)
{
	const char *set[5];
	size_t n = 0;
	if (immediate)
		set[n++] = "targetImmediate";
	if (lsn)
		set[n++] = "targetLSN";
	if (name)
		set[n++] = "targetName";
	if (xid)
		set[n++] = "targetXID";
	if (time)
		set[n++] = "targetTime";
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					i == 0 ? "" : (i + 1 == n ? " and " : ", "), set[i]);
	return buf;
}

WH_RULE_FN(wh_v10_recovery_target)
{
	json_object *recovery = wh_obj(ctx->spec, "bootstrap.recovery");
	json_object *rt = wh_obj(recovery, "recoveryTarget");
	if (!rt)
		return;
	/* a set targetImmediate counts even when false (CNPG tests != nil) */
	bool immediate = wh_at(rt, "targetImmediate") != NULL;
	const char *lsn = wh_nstr(rt, "targetLSN"), *name = wh_nstr(rt, "targetName");
	const char *xid = wh_nstr(rt, "targetXID"), *time = wh_nstr(rt, "targetTime");
	int targets = immediate + !!lsn + !!name + !!xid + !!time;
	char names[128];
	if (targets > 1)
		wh_result_error(res, RT_PATH, "Recovery target options are mutually exclusive: %s",
				set_targets(names, sizeof(names), immediate, lsn, name, xid, time));
	if (lsn && !lsn_valid(lsn))
		wh_result_error(res, RT_PATH ".targetLSN", "Invalid TargetLSN");
	if (time && !target_time_valid(time))
		wh_result_error(res, RT_PATH ".targetTime", "The format of TargetTime is invalid");
	if (xid && !xid_valid(xid))
		wh_result_error(res, RT_PATH ".targetXID",
				"Invalid targetXID value: it must be an unsigned 32-bit integer");
	if (name && !name_valid(name))
		wh_result_error(res, RT_PATH ".targetName",
				"Invalid targetName value: it must be shorter than 64 bytes "
				"and contain no control characters");
	const char *tli = wh_str(rt, "targetTLI");
	if (tli && !tli_valid(tli))
		wh_result_error(res, RT_PATH ".targetTLI",
				"recovery target timeline can be set to 'latest' or a positive integer");
	if ((name || xid || immediate) && !wh_at(recovery, "volumeSnapshots") &&
	    !wh_nstr(rt, "backupID"))
		wh_result_typed(res, WH_ERR_REQUIRED, RT_PATH ".backupID", "BackupID is missing");
}

WH_RULE_FN(wh_v20_pg_basebackup_source)
{
	json_object *pgb = wh_obj(ctx->spec, "bootstrap.pg_basebackup");
	if (!pgb)
		return;
	const char *src = wh_str(pgb, "source");
	if (!wh_external_cluster(ctx, src))
		wh_result_error(res, "spec.bootstrap.pg_basebackup.source",
				"External cluster %s not found", src ? src : "");
}

WH_RULE_FN(wh_v22_recovery_source)
{
	const char *src = wh_nstr(ctx->spec, "bootstrap.recovery.source");
	if (!src)
		return;
	json_object *ec = wh_external_cluster(ctx, src);
	if (!ec)
		wh_result_error(res, "spec.bootstrap.recovery.source",
				"External cluster %s not found", src);
	if (!ec || (!wh_at(ec, "connectionParameters") && !wh_at(ec, "barmanObjectStore") &&
		    !wh_at(ec, "plugin")))
		wh_result_error(res, "spec.bootstrap.recovery.source",
				"External cluster %s is missing connection parameters, Barman, "
				"or CNPG-i configuration",
				src);
}

#define VS_PATH "spec.bootstrap.recovery.volumeSnapshots"

static void check_snapshot_ref(json_object *ref, const char *path, struct wh_result *res)
{
	if (!ref)
		return;
	const char *kind = wh_str(ref, "kind");
	const char *group = wh_str(ref, "apiGroup");
	kind = kind ? kind : "";
	group = group ? group : "";
	if (strcmp(kind, "VolumeSnapshot") == 0 && strcmp(group, "snapshot.storage.k8s.io") == 0)
		return;
	if (strcmp(kind, "PersistentVolumeClaim") == 0 && *group == '\0')
		return;
	wh_result_error(res, path, "Only VolumeSnapshots and PersistentVolumeClaims are supported");
}

WH_RULE_FN(wh_v23_recovery_data_source)
{
	json_object *recovery = wh_obj(ctx->spec, "bootstrap.recovery");
	json_object *vs = wh_obj(recovery, "volumeSnapshots");
	if (!vs)
		return;
	if (wh_at(recovery, "backup")) {
		wh_result_error(res, "spec.bootstrap.recovery.backup",
				"Recovery from dataSource is not compatible with other types of "
				"recovery");
		return;
	}
	if (wh_nstr(recovery, "recoveryTarget.backupID")) {
		wh_result_error(res, RT_PATH ".backupID",
				"Cannot specify a backupID when recovering using a DataSource");
		return;
	}
	check_snapshot_ref(wh_at(vs, "storage"), VS_PATH ".storage", res);
	json_object *wal = wh_at(vs, "walStorage");
	check_snapshot_ref(wal, VS_PATH ".walStorage", res);
	if (wal && !wh_at(ctx->spec, "walStorage"))
		wh_result_error(res, VS_PATH ".walStorage",
				"A WAL storage configuration is required when recovering using a "
				"DataSource for WALs");
	json_object *ts = wh_obj(vs, "tablespaceStorage");
	if (ts) {
		json_object_object_foreach(ts, k, v)
		{
			_cleanup_free_ char *p = op_asprintf(VS_PATH ".tablespaceStorage.%s", k);
			check_snapshot_ref(v, p, res);
		}
	}
}
