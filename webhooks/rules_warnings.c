/* webhooks/rules_warnings.c - W1-W9 admission warnings (admission-rules.md §5,
 * CNPG getAdmissionWarnings), plus one warning per field pgop accepts for
 * CloudNativePG compatibility but does not act on yet (unsupported_fields).
 * Warnings never deny; they end up in AdmissionReview response.warnings.
 */
#include <string.h>

#include "api/plugin.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "webhooks/lookup.h"
#include "webhooks/rules.h"
#include "webhooks/rules_spec.h"

#define CU (WH_OP_CREATE | WH_OP_UPDATE)

/* W1 */
static void w1_maintenance_window(const struct wh_ctx *ctx, struct wh_result *res)
{
	if (wh_has(ctx->spec, "nodeMaintenanceWindow"))
		wh_result_warn(res, "Consider using `.spec.enablePDB` instead of the node "
				    "maintenance window feature");
}

/* W2: in-tree barmanObjectStore, in backup or in any externalClusters[i]. */
static void w2_barman_deprecated(const struct wh_ctx *ctx, struct wh_result *res)
{
	_cleanup_(op_buf_donep) struct op_buf where = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int n = 0, r = 0;
	if (wh_has(ctx->spec, "backup.barmanObjectStore")) {
		r = op_buf_adds(&where, "spec.backup.barmanObjectStore");
		n++;
	}
	json_object *ext = wh_arr(ctx->spec, "externalClusters");
	for (size_t i = 0; r == 0 && ext && i < json_object_array_length(ext); i++) {
		if (!wh_has(json_object_array_get_idx(ext, i), "barmanObjectStore"))
			continue;
		r = op_buf_addf(&where, "%sspec.externalClusters[%zu].barmanObjectStore",
				n ? ", " : "", i);
		n++;
	}
	if (n)
		wh_result_warn(res,
			       "Native support for Barman Cloud backups and recovery is deprecated "
			       "and will be completely removed in CloudNativePG 1.31.0. Found usage "
			       "in: %s. Please migrate existing clusters to the new Barman Cloud "
			       "Plugin to ensure a smooth transition",
			       op_buf_str(&where));
}

/* W3 */
static void w3_retention_without_barman(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *rp = wh_str(ctx->spec, "backup.retentionPolicy");
	if (rp && *rp && !wh_has(ctx->spec, "backup.barmanObjectStore"))
		wh_result_warn(res, "Retention policies specified in .spec.backup.retentionPolicy "
				    "are only used by the in-tree barman-cloud support, which is not "
				    "being used in this cluster. Please use a backup plugin and "
				    "migrate this configuration there");
}

/* W4 */
static void storage_warnings(json_object *st, const char *path, struct wh_result *res)
{
	if (!st)
		return;
	const char *sc = wh_str(st, "storageClass");
	const char *psc = wh_str(st, "pvcTemplate.storageClassName");
	if (sc && *sc && psc && *psc)
		wh_result_warn(res, "%s: both storageClass and pvcTemplate.storageClassName are "
				    "set; storageClass '%s' takes precedence",
			       path, sc);
	const char *size = wh_str(st, "size");
	if (size && *size && wh_has(st, "pvcTemplate.resources.requests.storage"))
		wh_result_warn(res, "%s: both size and pvcTemplate.resources.requests.storage are "
				    "set; size '%s' takes precedence",
			       path, size);
}

static void w4_storage_overrides(const struct wh_ctx *ctx, struct wh_result *res)
{
	storage_warnings(wh_obj(ctx->spec, "storage"), "spec.storage", res);
	storage_warnings(wh_obj(ctx->spec, "walStorage"), "spec.walStorage", res);
}

/* W5 */
static void w5_shared_buffers_unit(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *v = wh_str(wh_obj(ctx->spec, "postgresql.parameters"), "shared_buffers");
	if (!v || !*v || strspn(v, "0123456789") != strlen(v))
		return;
	wh_result_warn(res, "spec.postgresql.parameters.shared_buffers: value '%s' has no unit; "
			    "PostgreSQL reads it as a number of 8kB pages, specify a unit "
			    "(for example '%sMB') to make the size explicit",
		       v, v);
}

/* W6: a zero metricsQueriesTTL ("0", "0s", "0m0s") disables the cache. */
static void w6_metrics_ttl_zero(const struct wh_ctx *ctx, struct wh_result *res)
{
	const char *ttl = wh_str(ctx->spec, "monitoring.metricsQueriesTTL");
	if (!ttl || !*ttl || !strpbrk(ttl, "0") || strpbrk(ttl, "123456789"))
		return;
	wh_result_warn(res, "spec.monitoring.metricsQueriesTTL is 0: metrics query results are not "
			    "cached and every scrape runs all queries against PostgreSQL");
}

/* W7 */
static void w7_pod_monitor_deprecated(const struct wh_ctx *ctx, struct wh_result *res)
{
	static const char *const fields[] = { "enablePodMonitor", "podMonitorMetricRelabelings",
					      "podMonitorRelabelings" };
	json_object *m = wh_obj(ctx->spec, "monitoring");
	for (size_t i = 0; m && i < OP_ARRAY_SIZE(fields); i++) {
		bool b;
		if (!wh_has(m, fields[i]) || (wh_bool(m, fields[i], &b) && !b))
			continue;
		wh_result_warn(res, "spec.monitoring.%s is deprecated and will be removed in a "
				    "future release; create and manage the PodMonitor manually",
			       fields[i]);
	}
}

/* W8: several instances, not a replica cluster, no synchronous replication. */
static void w8_no_sync_replication(const struct wh_ctx *ctx, struct wh_result *res)
{
	int64_t instances = 1, max_sync = 0;
	wh_i64(ctx->spec, "instances", &instances);
	wh_i64(ctx->spec, "maxSyncReplicas", &max_sync);
	if (instances < 2 || wh_cluster_is_replica(ctx->obj) ||
	    wh_obj(ctx->spec, "postgresql.synchronous") || max_sync > 0)
		return;
	wh_result_warn(res, "no synchronous replication is configured for a cluster with %lld "
			    "instances: a failover can lose recently committed transactions; set "
			    "spec.postgresql.synchronous to avoid it",
		       (long long)instances);
}

/* W9: failure-domain keys set while the topology condition is False. */
static void w9_failure_domain_unsatisfied(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *sync = wh_obj(ctx->spec, "postgresql.synchronous");
	json_object *pk = wh_arr(sync, "podFailureDomainKeys");
	json_object *nk = wh_arr(sync, "nodeFailureDomainKeys");
	if ((!pk || !json_object_array_length(pk)) && (!nk || !json_object_array_length(nk)))
		return;
	json_object *conds = wh_arr(ctx->obj, "status.conditions");
	for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *type = wh_str(c, "type"), *status = wh_str(c, "status");
		if (!type || strcmp(type, "SyncReplicationTopologySatisfied") != 0 || !status ||
		    strcmp(status, "False") != 0)
			continue;
		const char *msg = wh_str(c, "message");
		wh_result_warn(res, "spec.postgresql.synchronous: the failure-domain keys are not "
				    "satisfied by the current topology%s%s",
			       msg && *msg ? ": " : "", msg && *msg ? msg : "");
		return;
	}
}

/* Fields accepted for CloudNativePG compatibility that pgop does not act on
 * yet, each with what is missing: "<path> is accepted but not implemented by
 * pgop yet (<what>)". Rows go from the general to the precise: a row is
 * silent when a row for an enclosing path already warned (spec.backup
 * covers spec.backup.barmanObjectStore), so the warnings a user sees are the
 * broadest that apply, and implementing a piece is dropping its row: the
 * precise rows under it then speak for what is still missing. `each` names
 * an array whose elements are checked for `field`. */
static const struct unsupported_field {
	const char *each;     /* dotted array path under the object, or NULL */
	const char *field;    /* dotted path (under the element when each is set) */
	const char *what;     /* what pgop does not do yet */
	const char *inactive; /* a string value that asks for nothing (a default), or NULL */
} unsupported_fields[] = {
	{ NULL, "spec.backup.volumeSnapshot", "backups by volume snapshots", NULL },
	/* backups, WAL archiving, retention and recovery (spec.backup, Backup,
	 * ScheduledBackup, bootstrap.recovery) are built (docs/internals/backup.md);
	 * of the CNPG-I plugins, barman-cloud is served in process (api/plugin.h) */
	{ "spec.plugins", "name", "CNPG-I plugins other than " API_BARMAN_PLUGIN,
	  API_BARMAN_PLUGIN },
	/* spec.monitoring: the exporter on :9187 (instance/metrics_*.c, default
	 * and custom queries, TTL, TLS) and the PodMonitor (reconciler/podmonitor.c)
	 * are there; the PodMonitor's relabelings are not */
	{ NULL, "spec.monitoring.podMonitorMetricRelabelings", "PodMonitor relabelings", NULL },
	{ NULL, "spec.monitoring.podMonitorRelabelings", "PodMonitor relabelings", NULL },
	{ NULL, "spec.managed", "managed roles and services", NULL },
	{ NULL, "spec.replica", "replica clusters", NULL },
	{ NULL, "spec.projectedVolumeTemplate", "projected volumes", NULL },
	{ NULL, "spec.imageCatalogRef", "image catalogs", NULL },
	/* placement (affinity, topologySpreadConstraints), PodDisruptionBudgets and
	 * nodeMaintenanceWindow are built (reconciler/objects_placement.c, drain.c) */
	{ NULL, "spec.serviceAccountTemplate", "service account templates", NULL },
	{ NULL, "spec.ephemeralVolumeSource", "ephemeral volume sources", NULL },
	{ NULL, "spec.podSelectorRefs", "pod selector references in pg_hba", NULL },
	{ NULL, "spec.postgresql.ldap", "LDAP authentication", NULL },
	{ NULL, "spec.postgresql.extensions", "extension images", NULL },
	{ NULL, "spec.postgresql.syncReplicaElectionConstraint",
	  "synchronous replica election constraints", NULL },
	{ NULL, "spec.bootstrap.recovery.volumeSnapshots", "recovery from volume snapshots", NULL },
	{ NULL, "spec.bootstrap.initdb.import", "importing databases", NULL },
	/* user-provided certificates: pgop issues its own from <c>-ca */
	{ NULL, "spec.certificates.serverCASecret", "user-provided certificates", NULL },
	{ NULL, "spec.certificates.serverTLSSecret", "user-provided certificates", NULL },
	{ NULL, "spec.certificates.replicationTLSSecret", "user-provided certificates", NULL },
	{ NULL, "spec.certificates.clientCASecret", "user-provided certificates", NULL },
	{ "spec.externalClusters", "plugin.name", "CNPG-I plugins other than " API_BARMAN_PLUGIN,
	  API_BARMAN_PLUGIN },
};

/* Set to something other than zero values (null, false, 0, "", [], {} and
 * objects holding only those): CRD and D8 defaults such as
 * monitoring {disableDefaultQueries:false} do not count as use. */
static bool meaningful(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return false;
	case json_type_boolean: return json_object_get_boolean(v);
	case json_type_int: return json_object_get_int64(v) != 0;
	case json_type_double: return json_object_get_double(v) != 0;
	case json_type_string: return json_object_get_string_len(v) > 0;
	case json_type_array: return json_object_array_length(v) > 0;
	case json_type_object: {
		json_object_object_foreach(v, k, m)
		{
			(void)k;
			if (meaningful(m))
				return true;
		}
		return false;
	}
	}
	return true;
}

/* The paths that warned so far (a row under one of them stays silent). */
struct warned {
	char *paths[64]; /* owned */
	size_t n;
};

static bool under_warned(const struct warned *w, const char *path)
{
	for (size_t i = 0; i < w->n; i++) {
		size_t n = strlen(w->paths[i]);
		if (strncmp(path, w->paths[i], n) == 0 && path[n] == '.')
			return true;
	}
	return false;
}

/* Warns for v at path (not owned) unless it asks for nothing or an enclosing
 * path warned already. */
static void warn_field(struct warned *w, struct wh_result *res, json_object *v,
		       const char *path, const char *what, const char *inactive)
{
	if (!meaningful(v) || under_warned(w, path))
		return;
	if (inactive && json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), inactive) == 0)
		return;
	wh_result_warn(res, "%s is accepted but not implemented by pgop yet (%s)", path, what);
	if (w->n < OP_ARRAY_SIZE(w->paths))
		w->paths[w->n++] = op_strdup(path);
}

struct ignored_arg {
	struct wh_result *res;
	const char *path; /* "<store>.data.additionalCommandArgs" */
};

static void warn_ignored_arg(void *ud, size_t index, const char *option)
{
	struct ignored_arg *w = ud;
	wh_result_warn(w->res, "%s[%zu]: %.100s is accepted but not implemented by pgop yet "
			       "(pgop runs no barman-cloud; of its options it acts on "
			       "--max-archive-size, --min-chunk-size, --jobs, "
			       "--immediate-checkpoint and --read-timeout)",
		       w->path, index, option);
}

/* Each additionalCommandArgs option of the store at path (not owned) that
 * pgop does not act on (api/barman_args.h), by its element; a bad value of
 * one it acts on is V58's. */
static void warn_store_args(struct wh_result *res, json_object *store, const char *path)
{
	for (enum api_barman_tool t = 0; store && t < API_BARMAN_TOOLS; t++) {
		_cleanup_free_ char *p = op_asprintf("%s.%s", path, api_barman_args_field(t));
		struct ignored_arg ia = { .res = res, .path = p };
		struct api_barman_args a;
		struct op_err err = OP_ERR_INIT;
		(void)wh_store_args_parse(store, t, &a, warn_ignored_arg, &ia, &err);
	}
}

static void w_unsupported_fields(const struct wh_ctx *ctx, struct wh_result *res)
{
	struct warned w = { .n = 0 };
	for (size_t i = 0; i < OP_ARRAY_SIZE(unsupported_fields); i++) {
		const struct unsupported_field *f = &unsupported_fields[i];
		if (!f->each) {
			warn_field(&w, res, op_json_at(ctx->obj, f->field), f->field, f->what,
				   f->inactive);
			continue;
		}
		json_object *arr = wh_arr(ctx->obj, f->each);
		for (size_t j = 0; arr && j < json_object_array_length(arr); j++) {
			_cleanup_free_ char *p = op_asprintf("%s[%zu].%s", f->each, j, f->field);
			warn_field(&w, res, op_json_at(json_object_array_get_idx(arr, j), f->field),
				   p, f->what, f->inactive);
		}
	}
	warn_store_args(res, wh_obj(ctx->obj, "spec.backup.barmanObjectStore"),
			"spec.backup.barmanObjectStore");
	json_object *ecs = wh_arr(ctx->obj, "spec.externalClusters");
	for (size_t j = 0; ecs && j < json_object_array_length(ecs); j++) {
		_cleanup_free_ char *p =
			op_asprintf("spec.externalClusters[%zu].barmanObjectStore", j);
		warn_store_args(res, wh_obj(json_object_array_get_idx(ecs, j), "barmanObjectStore"),
				p);
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.paths[i]);
}

/* pgop's archiver speaks S3 only: Azure and Google credentials of any
 * barmanObjectStore are accepted (CloudNativePG's API) and said so; and what
 * its archiver cannot archive with (instance/archive.c refuses it at run
 * time, WAL then stays in pg_wal): said at admission too. */
static void warn_s3_only(json_object *store, const char *path, struct wh_result *res)
{
	static const char *const others[] = { "azureCredentials", "googleCredentials" };
	for (size_t i = 0; store && i < OP_ARRAY_SIZE(others); i++)
		if (wh_has(store, others[i]))
			wh_result_warn(res, "%s.%s is accepted but pgop supports only S3-compatible "
					    "object stores (s3Credentials)",
				       path, others[i]);
	const char *comp = store ? wh_str(store, "wal.compression") : NULL;
	if (comp && strcmp(comp, "snappy") == 0)
		wh_result_warn(res, "%s.wal.compression: snappy is not supported by pgop's WAL "
				    "archiver (no Debian library reads barman's snappy framing): WAL "
				    "archiving will fail; use gzip, bzip2, xz, lz4 or zstd", path);
	json_object *iam = store ? op_json_at(store, "s3Credentials.inheritFromIAMRole") : NULL;
	if (iam && json_object_get_boolean(iam))
		wh_result_warn(res, "%s.s3Credentials.inheritFromIAMRole is not supported by pgop's "
				    "WAL archiver: WAL archiving will fail; give accessKeyId and "
				    "secretAccessKey", path);
}

static void w_s3_only(const struct wh_ctx *ctx, struct wh_result *res)
{
	warn_s3_only(wh_obj(ctx->spec, "backup.barmanObjectStore"), "spec.backup.barmanObjectStore",
		     res);
	json_object *ecs = wh_arr(ctx->spec, "externalClusters");
	for (size_t j = 0; ecs && j < json_object_array_length(ecs); j++) {
		_cleanup_free_ char *p =
			op_asprintf("spec.externalClusters[%zu].barmanObjectStore", j);
		warn_s3_only(wh_obj(json_object_array_get_idx(ecs, j), "barmanObjectStore"), p,
			     res);
	}
}

/* spec.probes.liveness.isolationCheck (D13 defaults it to enabled, 1000 ms,
 * 1000 ms): pgop's primary always fences itself when it cannot prove it is
 * still the primary (its lease, docs/internals/failover.md), with timings of
 * its own; turning the check off or other timeouts are not honoured. */
static void w_isolation_check(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *ic = op_json_at(ctx->obj, "spec.probes.liveness.isolationCheck");
	bool enabled = true;
	if (!ic)
		return;
	if (wh_bool(ic, "enabled", &enabled) && !enabled)
		wh_result_warn(res, "spec.probes.liveness.isolationCheck.enabled: false is not "
				    "honoured: a pgop primary always stops when it cannot prove it is "
				    "still the primary (its lease)");
	static const char *const timeouts[] = { "requestTimeout", "connectionTimeout" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(timeouts); i++) {
		int64_t ms = 0;
		if (wh_i64(ic, timeouts[i], &ms) && ms != 1000)
			wh_result_warn(res, "spec.probes.liveness.isolationCheck.%s is accepted but "
					    "not implemented by pgop yet (its lease has timings of its "
					    "own)",
				       timeouts[i]);
	}
}

const struct wh_rule wh_rules_warnings[] = {
	{ "W1", CU, w1_maintenance_window },
	{ "W2", CU, w2_barman_deprecated },
	{ "W3", CU, w3_retention_without_barman },
	{ "W4", CU, w4_storage_overrides },
	{ "W5", CU, w5_shared_buffers_unit },
	{ "W6", CU, w6_metrics_ttl_zero },
	{ "W7", CU, w7_pod_monitor_deprecated },
	{ "W8", CU, w8_no_sync_replication },
	{ "W9", CU, w9_failure_domain_unsatisfied },
	{ "PGOP-UNSUPPORTED", CU, w_unsupported_fields },
	{ "PGOP-S3-ONLY", CU, w_s3_only },
	{ "PGOP-ISOLATION-CHECK", CU, w_isolation_check },
};
const size_t wh_rules_warnings_count = OP_ARRAY_SIZE(wh_rules_warnings);
