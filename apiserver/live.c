/* apiserver/live.c - LiveCluster and LiveInstance objects from the cached
 * Cluster, its Pods and the instances' /pg/status documents (pure). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/internal.h"
#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/json.h"

static void set_str(json_object *o, const char *k, const char *v)
{
	if (v)
		op_json_set(o, k, json_object_new_string(v));
}

static void set_i64(json_object *o, const char *k, int64_t v)
{
	op_json_set(o, k, json_object_new_int64(v));
}

static bool doc_bool(json_object *doc, const char *k)
{
	json_object *v = NULL;
	return doc && json_object_object_get_ex(doc, k, &v) &&
	       json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static const char *doc_str(json_object *doc, const char *k)
{
	json_object *v = NULL;
	if (!doc || !json_object_object_get_ex(doc, k, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool doc_i64(json_object *doc, const char *k, int64_t *ret)
{
	json_object *v = NULL;
	return doc && json_object_object_get_ex(doc, k, &v) && op_json_to_i64(v, ret) == 1;
}

/* Copies the metadata fields a client needs (kubectl: namespace, labels, age). */
static json_object *metadata_of(json_object *src)
{
	json_object *md = json_object_new_object();
	static const char *const keys[] = { "name", "namespace", "uid", "resourceVersion",
					    "creationTimestamp" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(keys); i++) {
		_cleanup_free_ char *path = op_asprintf("metadata.%s", keys[i]);
		set_str(md, keys[i], op_json_str_at(src, path));
	}
	json_object *labels = op_json_at(src, "metadata.labels");
	if (labels && json_object_is_type(labels, json_type_object)) {
		json_object *copy = NULL;
		if (json_object_deep_copy(labels, &copy, NULL) == 0)
			op_json_set(md, "labels", copy);
	}
	return md;
}

static json_object *object_of(const char *kind, json_object *src)
{
	json_object *o = json_object_new_object();
	if (!o)
		abort();
	set_str(o, "kind", kind);
	set_str(o, "apiVersion", AS_GROUP_VERSION);
	op_json_set(o, "metadata", metadata_of(src));
	return o;
}

int as_interval_seconds(const char *s, double *ret)
{
	if (!s || !*s)
		return -EINVAL;
	double days = 0;
	const char *p = s;
	char *end = NULL;
	if (strstr(s, "day")) {
		days = strtod(p, &end);
		if (end == p)
			return -EINVAL;
		p = strchr(end, ' ') ? strchr(end + 1, ' ') : NULL;
		if (!p)
			return *ret = days * 86400, 0;
		p++;
	}
	unsigned h = 0, m = 0;
	double sec = 0;
	int used = 0;
	if (sscanf(p, "%u:%u:%lf%n", &h, &m, &sec, &used) != 3 || p[used] != '\0' || m > 59 ||
	    sec < 0 || sec >= 61)
		return -EINVAL;
	*ret = days * 86400 + h * 3600.0 + m * 60.0 + sec;
	return 0;
}

void as_age(int64_t s, char *out, size_t len)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, len, "%" PRId64 "s", s);
	else if (s < 7200)
		snprintf(out, len, "%" PRId64 "m", s / 60);
	else if (s < 2 * 86400)
		snprintf(out, len, "%" PRId64 "h", s / 3600);
	else
		snprintf(out, len, "%" PRId64 "d", s / 86400);
}

/* The primary's pg_stat_replication row for application name pod. */
static json_object *replication_row(json_object *primary_doc, const char *pod)
{
	json_object *ri = NULL;
	if (!primary_doc || !json_object_object_get_ex(primary_doc, "replicationInfo", &ri) ||
	    !json_object_is_type(ri, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(ri); i++) {
		json_object *row = json_object_array_get_idx(ri, i);
		const char *app = doc_str(row, "applicationName");
		if (app && pod && strcmp(app, pod) == 0)
			return row;
	}
	return NULL;
}

static bool cloning(json_object *primary_doc, const char *pod)
{
	json_object *bb = NULL;
	if (!primary_doc ||
	    !json_object_object_get_ex(primary_doc, "pgStatBasebackupsInfo", &bb) ||
	    !json_object_is_type(bb, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(bb); i++) {
		const char *app = doc_str(json_object_array_get_idx(bb, i), "application_name");
		if (app && pod && strcmp(app, pod) == 0)
			return true;
	}
	return false;
}

static const char *replica_role(json_object *doc, json_object *row, json_object *primary_doc,
				const char *pod)
{
	const char *st = row ? doc_str(row, "syncState") : NULL;
	if (st && (strcmp(st, "sync") == 0 || strcmp(st, "quorum") == 0))
		return "sync standby";
	if (st && strcmp(st, "potential") == 0)
		return "potential";
	if (st)
		return "async";
	if (cloning(primary_doc, pod))
		return "cloning";
	return doc_bool(doc, "isWalReceiverActive") ? "async" : "standby (not streaming)";
}

static char *rfc3339_ms(int64_t ms)
{
	return rc_time_rfc3339(ms / 1000);
}

json_object *as_live_instance(json_object *cluster, const struct as_inst_view *v,
			      json_object *primary_doc, int64_t now_ms, bool full)
{
	json_object *o = object_of("LiveInstance", v->pod);
	json_object *st = json_object_new_object();
	const char *pod = op_json_str_at(v->pod, "metadata.name");
	set_str(st, "cluster", op_json_str_at(cluster, "metadata.name"));
	json_object *doc = v->doc;
	bool primary = doc_bool(doc, "isPrimary");
	json_object *row = primary ? NULL : replication_row(primary_doc, pod);
	set_str(st, "role", !v->reachable ? "unreachable"
			    : primary     ? "primary"
					  : replica_role(doc, row, primary_doc, pod));
	op_json_set(st, "reachable", json_object_new_boolean(v->reachable));
	const char *cur = doc_str(doc, "currentLsn");
	set_str(st, "receivedLSN", primary ? cur : doc_str(doc, "receivedLsn"));
	set_str(st, "replayedLSN", primary ? cur : doc_str(doc, "replayLsn"));
	uint64_t a = 0, b = 0;
	if (primary) {
		set_i64(st, "lagBytes", 0);
	} else if (rc_lsn_parse(doc_str(primary_doc, "currentLsn"), &a) == 0 &&
		   rc_lsn_parse(doc_str(doc, "replayLsn"), &b) == 0) {
		set_i64(st, "lagBytes", a > b ? (int64_t)(a - b) : 0);
	}
	double secs = 0;
	if (row && as_interval_seconds(doc_str(row, "replayLag"), &secs) == 0)
		op_json_set(st, "lagSeconds", json_object_new_double(secs));
	int64_t tli = 0;
	if (doc_i64(doc, "timeLineID", &tli))
		set_i64(st, "timeline", tli);
	op_json_set(st, "pendingRestart", json_object_new_boolean(doc_bool(doc, "pendingRestart")));
	set_str(st, "node", op_json_str_at(v->pod, "spec.nodeName"));
	if (v->seen_ms > 0) {
		_cleanup_free_ char *t = rfc3339_ms(v->seen_ms);
		set_str(st, "lastSeen", t);
	}
	set_str(st, "error", v->reachable ? NULL : v->error);
	if (full && doc) {
		json_object *copy = NULL;
		if (json_object_deep_copy(doc, &copy, NULL) == 0)
			op_json_set(st, "pgStatus", copy);
	}
	op_json_set(o, "status", st);
	return o;
}

/* quorum N/M, sync N/M or async from the spec and the primary's rows. */
static char *sync_text(json_object *cluster, json_object *primary_doc)
{
	if (!primary_doc)
		return op_strdup("unknown");
	json_object *ri = NULL;
	size_t cand = 0;
	if (json_object_object_get_ex(primary_doc, "replicationInfo", &ri) &&
	    json_object_is_type(ri, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(ri); i++) {
			const char *s = doc_str(json_object_array_get_idx(ri, i), "syncState");
			if (s && (strcmp(s, "sync") == 0 || strcmp(s, "quorum") == 0 ||
				  strcmp(s, "potential") == 0))
				cand++;
		}
	}
	const char *method = op_json_str_at(cluster, "spec.postgresql.synchronous.method");
	int64_t number = 0, min_sync = 0;
	json_object *num = op_json_at(cluster, "spec.postgresql.synchronous.number");
	if (num)
		op_json_to_i64(num, &number);
	json_object *ms = op_json_at(cluster, "spec.minSyncReplicas");
	if (ms)
		op_json_to_i64(ms, &min_sync);
	if (method && strcmp(method, "first") == 0)
		return op_asprintf("sync %" PRId64 "/%zu", number, cand);
	if (method && strcmp(method, "any") == 0)
		return op_asprintf("quorum %" PRId64 "/%zu", number, cand);
	if (min_sync > 0)
		return op_asprintf("quorum %" PRId64 "/%zu", min_sync, cand);
	return op_strdup("async");
}

json_object *as_live_cluster(json_object *cluster, const struct as_inst_view *v, size_t n,
			     int64_t now_ms, bool full)
{
	json_object *o = object_of("LiveCluster", cluster);
	json_object *st = json_object_new_object();
	const struct as_inst_view *pv = NULL;
	for (size_t i = 0; i < n && !pv; i++)
		if (v[i].reachable && doc_bool(v[i].doc, "isPrimary"))
			pv = &v[i];
	json_object *pdoc = pv ? pv->doc : NULL;
	set_str(st, "primary", pv ? op_json_str_at(pv->pod, "metadata.name")
				  : op_json_str_at(cluster, "status.currentPrimary"));
	size_t ready = 0, pending = 0;
	int64_t max_lag = -1, oldest = 0;
	double max_secs = -1;
	json_object *unreachable = json_object_new_array();
	json_object *members = full ? json_object_new_array() : NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *io = as_live_instance(cluster, &v[i], pdoc, now_ms, full);
		json_object *ist = op_json_at(io, "status");
		if (v[i].reachable)
			ready++;
		else
			op_json_append(unreachable, json_object_new_string(
							    op_json_str_at(io, "metadata.name")));
		if (v[i].reachable && doc_bool(v[i].doc, "pendingRestart"))
			pending++;
		int64_t lag = 0;
		if (&v[i] != pv && doc_i64(ist, "lagBytes", &lag) && lag > max_lag)
			max_lag = lag;
		json_object *ls = NULL;
		if (json_object_object_get_ex(ist, "lagSeconds", &ls) &&
		    json_object_get_double(ls) > max_secs)
			max_secs = json_object_get_double(ls);
		if (v[i].seen_ms > 0 && (oldest == 0 || v[i].seen_ms < oldest))
			oldest = v[i].seen_ms;
		if (members) {
			json_object *copy = NULL;
			if (json_object_deep_copy(io, &copy, NULL) == 0)
				op_json_append(members, copy);
		}
		json_object_put(io);
	}
	set_i64(st, "instances", (int64_t)n);
	set_i64(st, "readyInstances", (int64_t)ready);
	_cleanup_free_ char *rd = op_asprintf("%zu/%zu", ready, n);
	set_str(st, "ready", rd);
	_cleanup_free_ char *sync = sync_text(cluster, pdoc);
	set_str(st, "sync", sync);
	if (max_lag >= 0)
		set_i64(st, "maxLagBytes", max_lag);
	else if (pv)
		set_i64(st, "maxLagBytes", 0);
	if (max_secs >= 0)
		op_json_set(st, "maxLagSeconds", json_object_new_double(max_secs));
	int64_t tli = 0;
	if (doc_i64(pdoc, "timeLineID", &tli) ||
	    (op_json_at(cluster, "status.timelineID") &&
	     op_json_to_i64(op_json_at(cluster, "status.timelineID"), &tli) == 1))
		set_i64(st, "timeline", tli);
	set_str(st, "phase", op_json_str_at(cluster, "status.phase"));
	set_str(st, "systemID", doc_str(pdoc, "systemID"));
	set_str(st, "currentLSN", doc_str(pdoc, "currentLsn"));
	set_i64(st, "pendingRestart", (int64_t)pending);
	if (oldest > 0) {
		_cleanup_free_ char *t = rfc3339_ms(oldest);
		set_str(st, "lastSeen", t);
	}
	op_json_set(st, "unreachable", unreachable);
	if (members) {
		op_json_set(st, "members", members);
		json_object *certs = op_json_at(cluster, "status.certificates");
		json_object *copy = NULL;
		if (certs && json_object_deep_copy(certs, &copy, NULL) == 0)
			op_json_set(st, "certificates", copy);
	}
	op_json_set(o, "status", st);
	return o;
}
