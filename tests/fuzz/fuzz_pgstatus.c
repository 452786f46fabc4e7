/* tests/fuzz/fuzz_pgstatus.c - arbitrary bytes as an instance's /pg/status
 * answer: parsed as reconciler/instance_client.c does (op_json_parse, then
 * rc_instance_parse_status), and an accepted document rendered by the live
 * API (apiserver/live.c: as_live_instance as a primary, as a replica of a
 * fixed primary and of itself, as_live_cluster, the Table and List of
 * instances) with reconciler/replication.c's lag and summary.
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks):
 *   - rc_instance_parse_status answers 0 or -EINVAL with a message; on
 *     failure the instance is unchanged, on success has_status is set, the
 *     LSNs read back from the document with op_lsn_parse and
 *     streaming_replicas is at most the replicationInfo length;
 *   - every rendered object is a JSON object that serializes, and the Table
 *     and List render without error;
 *   - the same input gives the same answer twice.
 * Seeds: tests/fuzz/corpus/pgstatus/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/internal.h"
#include "reconciler/replication.h"
#include "reconciler/status.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/lsn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_object *parse_fixed(const char *s)
{
	json_object *o = NULL;
	if (op_json_parse(s, strlen(s), OP_JSON_MAX_DEPTH, &o, NULL) < 0)
		abort();
	return o;
}

static const char cluster_json[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":"
	"\"c\",\"namespace\":\"default\",\"uid\":\"u\",\"resourceVersion\":\"1\","
	"\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"instances\":2,"
	"\"minSyncReplicas\":1,\"maxSyncReplicas\":1},\"status\":{\"currentPrimary\":\"c-1\"}}";
static const char pod1_json[] =
	"{\"metadata\":{\"name\":\"c-1\",\"namespace\":\"default\",\"uid\":\"p1\","
	"\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"nodeName\":\"n\"},"
	"\"status\":{\"podIP\":\"10.0.0.1\"}}";
static const char pod2_json[] =
	"{\"metadata\":{\"name\":\"c-2\",\"namespace\":\"default\",\"uid\":\"p2\"},"
	"\"status\":{\"podIP\":\"10.0.0.2\"}}";
static const char primary_json[] =
	"{\"isPrimary\":true,\"currentLsn\":\"0/5000000\",\"timeLineID\":1,"
	"\"replicationInfo\":[{\"application_name\":\"c-2\",\"state\":\"streaming\","
	"\"sent_lsn\":\"0/4000000\",\"replay_lsn\":\"0/3000000\",\"replay_lag\":\"00:00:01.5\","
	"\"syncState\":\"quorum\"}],\"pgStatBasebackupsInfo\":[{\"application_name\":\"c-3\"}]}";

static void check_obj(json_object *o, struct op_buf *sig)
{
	if (!json_object_is_type(o, json_type_object))
		abort();
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!s || op_buf_adds(sig, s) < 0)
		abort();
}

static void lsn_matches(json_object *doc, const char *key, uint64_t got)
{
	const char *s = op_json_str_at(doc, key);
	uint64_t want = 0;
	if (s && *s && op_lsn_parse(s, &want) < 0)
		abort(); /* accepted yet not an LSN */
	if (got != want)
		abort();
}

static void render(json_object *doc, struct op_buf *sig)
{
	json_object *cluster = parse_fixed(cluster_json), *pod1 = parse_fixed(pod1_json),
		    *pod2 = parse_fixed(pod2_json), *prim = parse_fixed(primary_json);
	const int64_t now = 1767225600000; /* 2026-01-01 */
	struct as_inst_view v[2] = {
		{ .pod = pod1, .doc = doc, .reachable = true, .seen_ms = now - 1500 },
		{ .pod = pod2, .doc = doc, .reachable = true, .seen_ms = now },
	};
	json_object *items = json_object_new_array();
	json_object *const primaries[] = { NULL, doc, prim };
	for (size_t i = 0; i < 2; i++)
		for (size_t p = 0; p < sizeof(primaries) / sizeof(primaries[0]); p++) {
			json_object *o = as_live_instance(cluster, &v[i], primaries[p], now, p == 1);
			check_obj(o, sig);
			op_jpush(items, o);
		}
	for (int full = 0; full <= 1; full++) {
		json_object *o = as_live_cluster(cluster, v, 2, now, full);
		check_obj(o, sig);
		json_object_put(o);
	}
	struct rc_repl_lag lag;
	char text[64];
	rc_repl_instance_lag(doc, doc, "c-1", &lag);
	rc_repl_lag_text(&lag, text, sizeof(text));
	rc_repl_instance_lag(prim, doc, "c-2", &lag);
	rc_repl_lag_text(&lag, text, sizeof(text));
	if (op_buf_adds(sig, text) < 0)
		abort();
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_FILE);
	if (as_render_table(&out, as_resource_instances(), items, "1", now / 1000, true) < 0)
		abort();
	op_buf_reset(&out);
	if (as_render_list(&out, as_resource_instances(), items, "1") < 0)
		abort();
	op_buf_done(&out);
	json_object_put(items);
	json_object_put(cluster);
	json_object_put(pod1);
	json_object_put(pod2);
	json_object_put(prim);
}

static int run(const char *in, size_t size, struct op_buf *sig)
{
	json_object *st = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = op_json_parse(in, size, OP_JSON_MAX_DEPTH, &st, &err);
	if (r < 0) {
		if (st || !err.msg[0])
			abort();
		return r;
	}
	struct rc_instance inst = { .name = "c-1", .serial = 1, .pod_ready = true, .current_lsn = 7 };
	struct rc_instance before = inst;
	r = rc_instance_parse_status(&inst, st, &err);
	if (r < 0) {
		if (r != -EINVAL || !err.msg[0] || memcmp(&inst, &before, sizeof(inst)))
			abort();
	} else {
		if (r != 0 || !inst.has_status)
			abort();
		lsn_matches(st, "currentLsn", inst.current_lsn);
		lsn_matches(st, "receivedLsn", inst.received_lsn);
		lsn_matches(st, "replayLsn", inst.replay_lsn);
		json_object *repl = NULL;
		size_t n = json_object_object_get_ex(st, "replicationInfo", &repl) &&
					   json_object_is_type(repl, json_type_array)
				   ? json_object_array_length(repl)
				   : 0;
		if (inst.streaming_replicas < 0 || (size_t)inst.streaming_replicas > n)
			abort();
		if (op_buf_addf(sig, "%d %d %llu %llu %llu %lld ", inst.is_primary,
				inst.streaming_replicas, (unsigned long long)inst.current_lsn,
				(unsigned long long)inst.received_lsn,
				(unsigned long long)inst.replay_lsn, (long long)inst.timeline_id) < 0)
			abort();
		render(st, sig);
	}
	json_object_put(st);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	struct op_buf a = OP_BUF_INIT(OP_BUF_MAX_FILE), b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int r1 = run((const char *)data, size, &a);
	int r2 = run((const char *)data, size, &b);
	if (r1 != r2 || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
		abort();
	op_buf_done(&a);
	op_buf_done(&b);
	return 0;
}
