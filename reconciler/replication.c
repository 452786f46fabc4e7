/* reconciler/replication.c - SYNC and MAX LAG of a Cluster from its
 * instances' /pg/status documents (pure; see replication.h). */
#include "reconciler/replication.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconciler/status.h"
#include "support/json.h"
#include "support/lsn.h"

int rc_interval_seconds(const char *s, double *ret)
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

json_object *rc_repl_row(json_object *primary_doc, const char *pod)
{
	json_object *ri = NULL;
	if (!pod || !primary_doc ||
	    !json_object_object_get_ex(primary_doc, "replicationInfo", &ri) ||
	    !json_object_is_type(ri, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(ri); i++) {
		json_object *row = json_object_array_get_idx(ri, i);
		const char *app = op_json_key_str(row, "applicationName");
		if (app && strcmp(app, pod) == 0)
			return row;
	}
	return NULL;
}

void rc_repl_instance_lag(json_object *primary_doc, json_object *doc, const char *pod,
			  struct rc_repl_lag *ret)
{
	*ret = (struct rc_repl_lag){ 0 };
	if (op_json_key_bool(doc, "isPrimary")) {
		ret->has_bytes = true;
		return;
	}
	uint64_t a = 0, b = 0;
	json_object *row = rc_repl_row(primary_doc, pod);
	/* its own replay position; without its answer, the one the primary last
	 * heard from it (pg_stat_replication.replay_lsn, at most a second old) */
	const char *replay = op_json_key_str(doc, "replayLsn");
	if (!replay)
		replay = op_json_key_str(row, "replayLsn");
	if (op_lsn_parse(op_json_key_str(primary_doc, "currentLsn"), &a) == 0 &&
	    op_lsn_parse(replay, &b) == 0) {
		ret->has_bytes = true;
		ret->bytes = a > b ? (int64_t)(a - b) : 0;
	}
	if (row && rc_interval_seconds(op_json_key_str(row, "replayLag"), &ret->seconds) == 0)
		ret->has_seconds = true;
}

static int64_t i64_at(json_object *o, const char *path)
{
	int64_t v = 0;
	json_object *j = op_json_at(o, path);
	if (j && op_json_to_i64(j, &v) == 1)
		return v;
	return 0;
}

/* quorum N/M, sync N/M or async from the spec and the primary's rows. */
static void sync_text(json_object *cluster, json_object *primary_doc, char *out, size_t len)
{
	if (!primary_doc) {
		snprintf(out, len, "unknown");
		return;
	}
	json_object *ri = NULL;
	size_t cand = 0;
	if (json_object_object_get_ex(primary_doc, "replicationInfo", &ri) &&
	    json_object_is_type(ri, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(ri); i++) {
			const char *s = op_json_key_str(json_object_array_get_idx(ri, i), "syncState");
			if (s && (strcmp(s, "sync") == 0 || strcmp(s, "quorum") == 0 ||
				  strcmp(s, "potential") == 0))
				cand++;
		}
	}
	const char *method = op_json_str_at(cluster, "spec.postgresql.synchronous.method");
	int64_t number = i64_at(cluster, "spec.postgresql.synchronous.number");
	int64_t min_sync = i64_at(cluster, "spec.minSyncReplicas");
	if (method && strcmp(method, "first") == 0)
		snprintf(out, len, "sync %" PRId64 "/%zu", number, cand);
	else if (method && strcmp(method, "any") == 0)
		snprintf(out, len, "quorum %" PRId64 "/%zu", number, cand);
	else if (min_sync > 0)
		snprintf(out, len, "quorum %" PRId64 "/%zu", min_sync, cand);
	else
		snprintf(out, len, "async");
}

void rc_repl_summarize(json_object *cluster, const struct rc_repl_member *v, size_t n,
		       struct rc_repl_summary *ret)
{
	*ret = (struct rc_repl_summary){ 0 };
	for (size_t i = 0; i < n && !ret->primary; i++)
		if (v[i].reachable && op_json_key_bool(v[i].doc, "isPrimary"))
			ret->primary = &v[i];
	json_object *pdoc = ret->primary ? ret->primary->doc : NULL;
	sync_text(cluster, pdoc, ret->sync, sizeof(ret->sync));
	if (!pdoc)
		return;
	ret->max.has_bytes = true; /* 0 without replicas */
	for (size_t i = 0; i < n; i++) {
		if (&v[i] == ret->primary)
			continue;
		struct rc_repl_lag l;
		rc_repl_instance_lag(pdoc, v[i].reachable ? v[i].doc : NULL, v[i].pod, &l);
		if (l.has_bytes && l.bytes > ret->max.bytes)
			ret->max.bytes = l.bytes;
		if (l.has_seconds && (!ret->max.has_seconds || l.seconds > ret->max.seconds)) {
			ret->max.has_seconds = true;
			ret->max.seconds = l.seconds;
		}
	}
}

void rc_repl_lag_text(const struct rc_repl_lag *l, char *out, size_t len)
{
	if (!len)
		return;
	out[0] = '\0';
	if (!l->has_bytes)
		return;
	int n = snprintf(out, len, "%" PRId64 " B", l->bytes);
	if (l->has_seconds && n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, " / %.1fs", l->seconds);
}
