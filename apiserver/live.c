/* apiserver/live.c - LiveCluster and LiveInstance objects from the cached
 * Cluster, its Pods and the instances' /pg/status documents (pure). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/timestamp.h"
#include "apiserver/internal.h"
#include "reconciler/live.h"
#include "support/alloc.h"
#include "support/json.h"

static void set_str(json_object *o, const char *k, const char *v)
{
	if (v)
		op_jsets(o, k, v);
}

/* Copies the metadata fields a client needs (kubectl: namespace, labels, age). */
static json_object *metadata_of(json_object *src)
{
	json_object *md = op_jobj();
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
			op_jset(md, "labels", copy);
	}
	return md;
}

static json_object *object_of(const char *kind, json_object *src)
{
	json_object *o = op_jobj();
	set_str(o, "kind", kind);
	set_str(o, "apiVersion", AS_GROUP_VERSION);
	op_jset(o, "metadata", metadata_of(src));
	return o;
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

static bool cloning(json_object *primary_doc, const char *pod)
{
	json_object *bb = NULL;
	if (!primary_doc ||
	    !json_object_object_get_ex(primary_doc, "pgStatBasebackupsInfo", &bb) ||
	    !json_object_is_type(bb, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(bb); i++) {
		const char *app = op_json_key_str(json_object_array_get_idx(bb, i), "application_name");
		if (app && pod && strcmp(app, pod) == 0)
			return true;
	}
	return false;
}

static const char *replica_role(json_object *doc, json_object *row, json_object *primary_doc,
				const char *pod)
{
	const char *st = row ? op_json_key_str(row, "syncState") : NULL;
	if (st && (strcmp(st, "sync") == 0 || strcmp(st, "quorum") == 0))
		return "sync standby";
	if (st && strcmp(st, "potential") == 0)
		return "potential";
	if (st)
		return "async";
	if (cloning(primary_doc, pod))
		return "cloning";
	return op_json_key_bool(doc, "isWalReceiverActive") ? "async" : "standby (not streaming)";
}

static char *rfc3339_ms(int64_t ms)
{
	return api_time_rfc3339(ms / 1000);
}

/* The archiver as the instance reports it (instance/status.c): the last
 * archived WAL and when, the files waiting, the store's error. */
static void archive_fields(json_object *st, json_object *doc)
{
	set_str(st, "lastArchivedWAL", op_json_key_str(doc, "lastArchivedWAL"));
	set_str(st, "lastArchivedWALTime", op_json_key_str(doc, "lastArchivedWALTime"));
	int64_t ready = 0;
	if (op_json_key_i64(doc, "readyWALs", &ready) == 1)
		op_jset(st, "readyWALs", op_jint(ready));
	set_str(st, "archiveError", op_json_key_str(doc, "archiveError"));
}

json_object *as_live_instance(json_object *cluster, const struct as_inst_view *v,
			      json_object *primary_doc, int64_t now_ms, bool full)
{
	json_object *o = object_of("LiveInstance", v->pod);
	json_object *st = op_jobj();
	const char *pod = op_json_str_at(v->pod, "metadata.name");
	set_str(st, "cluster", op_json_str_at(cluster, "metadata.name"));
	json_object *doc = v->doc;
	bool primary = op_json_key_bool(doc, "isPrimary");
	json_object *row = primary ? NULL : rc_repl_row(primary_doc, pod);
	set_str(st, "role", !v->reachable ? "unreachable"
			    : primary     ? "primary"
					  : replica_role(doc, row, primary_doc, pod));
	op_jset(st, "reachable", op_jbool(v->reachable));
	const char *cur = op_json_key_str(doc, "currentLsn");
	set_str(st, "receivedLSN", primary ? cur : op_json_key_str(doc, "receivedLsn"));
	set_str(st, "replayedLSN", primary ? cur : op_json_key_str(doc, "replayLsn"));
	struct rc_repl_lag lag;
	/* not answering: its lag as the primary hears it, not its stale answer */
	rc_repl_instance_lag(primary_doc, v->reachable ? doc : NULL, pod, &lag);
	if (lag.has_bytes)
		op_jset(st, "lagBytes", op_jint(lag.bytes));
	if (lag.has_seconds)
		op_jset(st, "lagSeconds", op_jdouble(lag.seconds));
	int64_t tli = 0;
	if (op_json_key_i64(doc, "timeLineID", &tli) == 1)
		op_jset(st, "timeline", op_jint(tli));
	op_jset(st, "pendingRestart", op_jbool(op_json_key_bool(doc, "pendingRestart")));
	set_str(st, "node", op_json_str_at(v->pod, "spec.nodeName"));
	/* a replica that replayed past the primary's fork (instance/diverge.c) */
	set_str(st, "timelineDiverged", op_json_key_str(doc, "timelineDiverged"));
	archive_fields(st, doc);
	if (v->seen_ms > 0) {
		_cleanup_free_ char *t = rfc3339_ms(v->seen_ms);
		set_str(st, "lastSeen", t);
	}
	set_str(st, "error", v->reachable ? NULL : v->error);
	if (full && doc) {
		json_object *copy = NULL;
		if (json_object_deep_copy(doc, &copy, NULL) == 0)
			op_jset(st, "pgStatus", copy);
	}
	op_jset(o, "status", st);
	return o;
}

json_object *as_live_cluster(json_object *cluster, const struct as_inst_view *v, size_t n,
			     int64_t now_ms, bool full)
{
	json_object *o = object_of("LiveCluster", cluster);
	json_object *st = op_jobj();
	struct rc_repl_member *m = op_calloc(n ? n : 1, sizeof(*m));
	for (size_t i = 0; i < n; i++)
		m[i] = (struct rc_repl_member){ .pod = op_json_str_at(v[i].pod, "metadata.name"),
						.doc = v[i].doc,
						.reachable = v[i].reachable };
	struct rc_repl_summary sum;
	rc_repl_summarize(cluster, m, n, &sum);
	const struct as_inst_view *pv = sum.primary ? &v[sum.primary - m] : NULL;
	free(m);
	json_object *pdoc = pv ? pv->doc : NULL;
	set_str(st, "primary", pv ? op_json_str_at(pv->pod, "metadata.name")
				  : op_json_str_at(cluster, "status.currentPrimary"));
	size_t ready = 0, pending = 0;
	int64_t oldest = 0;
	json_object *unreachable = op_jarr();
	json_object *members = full ? op_jarr() : NULL;
	for (size_t i = 0; i < n; i++) {
		if (v[i].reachable)
			ready++;
		else
			op_jpush(unreachable, op_jstr(op_json_str_at(v[i].pod, "metadata.name")));
		if (v[i].reachable && op_json_key_bool(v[i].doc, "pendingRestart"))
			pending++;
		if (v[i].seen_ms > 0 && (oldest == 0 || v[i].seen_ms < oldest))
			oldest = v[i].seen_ms;
		if (members)
			op_jpush(members, as_live_instance(cluster, &v[i], pdoc, now_ms, true));
	}
	op_jset(st, "instances", op_jint((int64_t)n));
	op_jset(st, "readyInstances", op_jint((int64_t)ready));
	_cleanup_free_ char *rd = op_asprintf("%zu/%zu", ready, n);
	set_str(st, "ready", rd);
	set_str(st, "sync", sum.sync);
	if (sum.max.has_bytes)
		op_jset(st, "maxLagBytes", op_jint(sum.max.bytes));
	if (sum.max.has_seconds)
		op_jset(st, "maxLagSeconds", op_jdouble(sum.max.seconds));
	char lag[64];
	rc_repl_lag_text(&sum.max, lag, sizeof(lag));
	set_str(st, "maxLag", lag);
	int64_t tli = 0;
	if (op_json_key_i64(pdoc, "timeLineID", &tli) == 1 ||
	    (op_json_at(cluster, "status.timelineID") &&
	     op_json_to_i64(op_json_at(cluster, "status.timelineID"), &tli) == 1))
		op_jset(st, "timeline", op_jint(tli));
	set_str(st, "phase", op_json_str_at(cluster, "status.phase"));
	set_str(st, "systemID", op_json_key_str(pdoc, "systemID"));
	set_str(st, "currentLSN", op_json_key_str(pdoc, "currentLsn"));
	op_jset(st, "pendingRestart", op_jint((int64_t)pending));
	if (oldest > 0) {
		_cleanup_free_ char *t = rfc3339_ms(oldest);
		set_str(st, "lastSeen", t);
	}
	op_jset(st, "unreachable", unreachable);
	if (members) {
		op_jset(st, "members", members);
		json_object *certs = op_json_at(cluster, "status.certificates");
		json_object *copy = NULL;
		if (certs && json_object_deep_copy(certs, &copy, NULL) == 0)
			op_jset(st, "certificates", copy);
	}
	op_jset(o, "status", st);
	return o;
}
