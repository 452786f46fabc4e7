/* tests/unit/test_kube_leader.c - kube/ Lease leader election and Events
 * against a scripted local HTTPS server that stores one Lease with
 * resourceVersion checks (409 Conflict on a stale PUT, like the apiserver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "kube/leader.h"
#include "kube/recorder.h"
#include "support/json.h"
#include "test_kube_server.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/ns1/leases/pgop-leader"

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static json_object *lease_store; /* owned; NULL = absent */
static int lease_rv;
static int puts_ok, puts_conflict, creates;
static json_object *events_store; /* object name -> event */
static int event_patches;
static atomic_int event_stall_ms; /* each Event POST waits this long first */

static void store_reset(void)
{
	pthread_mutex_lock(&store_lock);
	json_object_put(lease_store);
	lease_store = NULL;
	json_object_put(events_store);
	events_store = json_object_new_object();
	lease_rv = 0;
	puts_ok = puts_conflict = creates = event_patches = 0;
	pthread_mutex_unlock(&store_lock);
}

static void set_rv(json_object *o, int rv)
{
	char b[16];
	snprintf(b, sizeof(b), "%d", rv);
	json_object *md = json_object_object_get(o, "metadata");
	json_object_object_add(md, "resourceVersion", json_object_new_string(b));
}

static void h_lease(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (!strcmp(req->method, "POST") && strstr(req->path, "/events"))
		ts_sleep_ms(atomic_load(&event_stall_ms));
	pthread_mutex_lock(&store_lock);
	if (!strcmp(req->path, LEASE_PATH) && !strcmp(req->method, "GET")) {
		if (!lease_store) {
			r->status = 404;
			r->body = ts_status(404, "NotFound", "leases \\\"pgop-leader\\\" not found");
		} else {
			r->body = op_strdup(json_object_to_json_string(lease_store));
		}
	} else if (!strcmp(req->path, "/apis/coordination.k8s.io/v1/namespaces/ns1/leases") &&
		   !strcmp(req->method, "POST")) {
		if (lease_store) {
			r->status = 409;
			r->body = ts_status(409, "AlreadyExists", "leases \\\"pgop-leader\\\" already exists");
		} else {
			lease_store = json_tokener_parse(req->body);
			set_rv(lease_store, ++lease_rv);
			creates++;
			r->status = 201;
			r->body = op_strdup(json_object_to_json_string(lease_store));
		}
	} else if (!strcmp(req->path, LEASE_PATH) && !strcmp(req->method, "PUT")) {
		json_object *in = json_tokener_parse(req->body);
		const char *rv = op_json_str_at(in, "metadata.resourceVersion");
		if (!lease_store || !rv || strtol(rv, NULL, 10) != lease_rv) {
			puts_conflict++;
			r->status = 409;
			r->body = ts_status(409, "Conflict", "the object has been modified");
			json_object_put(in);
		} else {
			json_object_put(lease_store);
			lease_store = in;
			set_rv(lease_store, ++lease_rv);
			puts_ok++;
			r->body = op_strdup(json_object_to_json_string(lease_store));
		}
	} else if (!strcmp(req->path, "/api/v1/namespaces/ns1/events") &&
		   !strcmp(req->method, "POST")) {
		json_object *ev = json_tokener_parse(req->body);
		json_object_object_add(events_store, op_json_str_at(ev, "metadata.name"), ev);
		r->status = 201;
		r->body = op_strdup("{}");
	} else if (!strncmp(req->path, "/api/v1/namespaces/ns1/events/", 30) &&
		   !strcmp(req->method, "PATCH")) {
		json_object *ev = json_object_object_get(events_store, req->path + 30);
		if (!ev) {
			r->status = 404;
			r->body = ts_status(404, "NotFound", "events not found");
		} else {
			json_object *p = json_tokener_parse(req->body);
			json_object_object_add(ev, "count",
					       json_object_get(json_object_object_get(p, "count")));
			json_object_put(p);
			event_patches++;
			r->body = op_strdup("{}");
		}
	} else {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "no route");
	}
	pthread_mutex_unlock(&store_lock);
}

static struct kube_client *client_for(struct ts *s)
{
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(s, "tok-l"), NULL, &cfg, &err), 0);
	struct kube_client *c = NULL;
	struct kube_client_opts o = { .qps = 1000, .burst = 1000 };
	assert_int_equal(kube_client_new(cfg, &o, &c, &err), 0);
	return c;
}

static const char *holder(void)
{
	static char buf[64];
	pthread_mutex_lock(&store_lock);
	const char *h = lease_store ? op_json_str_at(lease_store, "spec.holderIdentity") : NULL;
	snprintf(buf, sizeof(buf), "%s", h ? h : "(none)");
	pthread_mutex_unlock(&store_lock);
	return buf;
}

static int64_t lease_int(const char *field)
{
	pthread_mutex_lock(&store_lock);
	json_object *v = lease_store ? op_json_at(lease_store, field) : NULL;
	int64_t n = v ? json_object_get_int64(v) : -1;
	pthread_mutex_unlock(&store_lock);
	return n;
}

static void test_leader_try_and_expiry(void **state)
{
	store_reset();
	struct ts *s = ts_start(h_lease, NULL);
	struct kube_client *ca = client_for(s), *cb = client_for(s);
	struct kube_leader *a = NULL, *b = NULL;
	struct op_err err = OP_ERR_INIT;
	const struct kube_leader_opts oa = { .ns = "ns1", .name = "pgop-leader", .identity = "a",
					     .lease_duration_ms = 1000 };
	struct kube_leader_opts ob = oa;
	ob.identity = "b";
	assert_int_equal(kube_leader_new(ca, &oa, &a, &err), 0);
	assert_int_equal(kube_leader_new(cb, &ob, &b, &err), 0);
	bool la = false, lb = true;
	assert_int_equal(kube_leader_try(a, &la, &err), 0);
	assert_true(la);
	assert_int_equal(creates, 1);
	assert_string_equal(holder(), "a");
	assert_int_equal(lease_int("spec.leaseDurationSeconds"), 1);
	assert_int_equal(lease_int("spec.leaseTransitions"), 0);
	/* b sees a fresh lease held by a */
	assert_int_equal(kube_leader_try(b, &lb, &err), 0);
	assert_false(lb);
	/* a renews */
	assert_int_equal(kube_leader_try(a, &la, &err), 0);
	assert_true(la);
	assert_int_equal(puts_ok, 1);
	assert_int_equal(lease_int("spec.leaseTransitions"), 0);
	/* b has just observed a change (a's renew): still not expired */
	assert_int_equal(kube_leader_try(b, &lb, &err), 0);
	assert_false(lb);
	/* a stops renewing; after the duration b takes over */
	ts_sleep_ms(1100);
	assert_int_equal(kube_leader_try(b, &lb, &err), 0);
	assert_true(lb);
	assert_string_equal(holder(), "b");
	assert_int_equal(lease_int("spec.leaseTransitions"), 1);
	/* a comes back: the lease is b's now */
	assert_int_equal(kube_leader_try(a, &la, &err), 0);
	assert_false(la);
	kube_leader_free(a);
	kube_leader_free(b);
	kube_client_free(ca);
	kube_client_free(cb);
	ts_stop(s);
}

struct cand {
	atomic_int started, stopped;
};

static void on_start(void *ud)
{
	atomic_fetch_add(&((struct cand *)ud)->started, 1);
}

static void on_stop(void *ud)
{
	atomic_fetch_add(&((struct cand *)ud)->stopped, 1);
}

static void test_leader_two_candidates(void **state)
{
	store_reset();
	struct ts *s = ts_start(h_lease, NULL);
	struct kube_client *cl[2] = { client_for(s), client_for(s) };
	struct cand cs[2] = { 0 };
	struct kube_leader *le[2];
	const char *ids[2] = { "pod-0", "pod-1" };
	struct op_err err = OP_ERR_INIT;
	for (int i = 0; i < 2; i++) {
		const struct kube_leader_opts o = {
			.ns = "ns1", .name = "pgop-leader", .identity = ids[i],
			.lease_duration_ms = 3000, .renew_deadline_ms = 2000,
			.retry_period_ms = 100, .release_on_stop = true,
			.on_started_leading = on_start, .on_stopped_leading = on_stop,
			.userdata = &cs[i],
		};
		assert_int_equal(kube_leader_new(cl[i], &o, &le[i], &err), 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(kube_leader_start(le[i], &err), 0);
	/* someone leads soon; then sample ~1.5 s: never two leaders at once */
	int64_t t1 = ts_now_ms();
	while (!kube_leader_is_leader(le[0]) && !kube_leader_is_leader(le[1]) &&
	       ts_now_ms() - t1 < 5000)
		ts_sleep_ms(10);
	int both = 0, leads = 0;
	for (int k = 0; k < 75; k++) {
		bool l0 = kube_leader_is_leader(le[0]), l1 = kube_leader_is_leader(le[1]);
		both += l0 && l1;
		leads += l0 || l1;
		ts_sleep_ms(20);
	}
	assert_int_equal(both, 0);
	assert_int_equal(leads, 75);
	int w = kube_leader_is_leader(le[0]) ? 0 : 1;
	assert_true(kube_leader_is_leader(le[w]));
	assert_string_equal(holder(), ids[w]);
	assert_int_equal(atomic_load(&cs[w].started), 1);
	assert_int_equal(atomic_load(&cs[1 - w].started), 0);
	assert_true(puts_ok >= 5); /* renewals every 100 ms */

	/* the leader stops and releases: the other takes over well before expiry */
	int64_t t0 = ts_now_ms();
	kube_leader_stop(le[w]);
	assert_false(kube_leader_is_leader(le[w]));
	assert_int_equal(atomic_load(&cs[w].stopped), 1);
	while (!kube_leader_is_leader(le[1 - w]) && ts_now_ms() - t0 < 5000)
		ts_sleep_ms(10);
	assert_true(kube_leader_is_leader(le[1 - w]));
	assert_true(ts_now_ms() - t0 < 1400);
	assert_string_equal(holder(), ids[1 - w]);
	assert_int_equal(atomic_load(&cs[1 - w].started), 1);
	for (int i = 0; i < 2; i++) {
		kube_leader_free(le[i]);
		kube_client_free(cl[i]);
	}
	assert_int_equal(atomic_load(&cs[1 - w].stopped), 1);
	ts_stop(s);
}

static void test_events(void **state)
{
	store_reset();
	struct ts *s = ts_start(h_lease, NULL);
	struct kube_client *c = client_for(s);
	struct op_err err = OP_ERR_INIT;
	json_object *pg = json_tokener_parse(
		"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
		"\"name\":\"pg\",\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"5\"}}");
	assert_int_equal(kube_event_emit(c, pg, KUBE_EVENT_NORMAL, "CreatingPod", "creating pg-1",
					 NULL, &err), 0);
	assert_int_equal(json_object_object_length(events_store), 1);
	json_object *ev = NULL;
	json_object_object_foreach(events_store, k, v) {
		(void)k;
		ev = v;
	}
	assert_string_equal(op_json_str_at(ev, "involvedObject.kind"), "Cluster");
	assert_string_equal(op_json_str_at(ev, "involvedObject.apiVersion"), "postgresql.cnpg.io/v1");
	assert_string_equal(op_json_str_at(ev, "involvedObject.uid"), "u-1");
	assert_string_equal(op_json_str_at(ev, "involvedObject.namespace"), "ns1");
	assert_string_equal(op_json_str_at(ev, "reason"), "CreatingPod");
	assert_string_equal(op_json_str_at(ev, "type"), "Normal");
	assert_string_equal(op_json_str_at(ev, "source.component"), "pgop");
	assert_non_null(strstr(op_json_str_at(ev, "metadata.name"), "pg."));
	assert_int_equal(json_object_get_int(op_json_at(ev, "count")), 1);
	/* the same again is folded into count 2, a different one is new */
	assert_int_equal(kube_event_emit(c, pg, KUBE_EVENT_NORMAL, "CreatingPod", "creating pg-1",
					 NULL, &err), 0);
	assert_int_equal(event_patches, 1);
	assert_int_equal(json_object_object_length(events_store), 1);
	assert_int_equal(json_object_get_int(op_json_at(ev, "count")), 2);
	assert_int_equal(kube_event_emit(c, pg, KUBE_EVENT_WARNING, "Failed", "boom", "test", &err),
			 0);
	assert_int_equal(json_object_object_length(events_store), 2);
	/* the folded Event vanished server-side: a new one is created */
	json_object_object_del(events_store, op_json_str_at(ev, "metadata.name"));
	assert_int_equal(kube_event_emit(c, pg, KUBE_EVENT_NORMAL, "CreatingPod", "creating pg-1",
					 NULL, &err), 0);
	assert_int_equal(json_object_object_length(events_store), 2);
	json_object *noname = json_tokener_parse("{\"metadata\":{}}");
	err = OP_ERR_INIT;
	assert_int_equal(kube_event_emit(c, noname, "Normal", "X", "y", NULL, &err), -EINVAL);
	json_object_put(noname);
	json_object_put(pg);
	kube_client_free(c);
	ts_stop(s);
	store_reset();
	json_object_put(events_store);
	events_store = NULL;
}

static size_t events_stored(void)
{
	pthread_mutex_lock(&store_lock);
	size_t n = (size_t)json_object_object_length(events_store);
	pthread_mutex_unlock(&store_lock);
	return n;
}

/* kube_recorder: emit never waits on the API server; the thread posts in
 * order with the identity copied at emit time; a full queue drops and counts;
 * flush waits for what was queued. */
static void test_recorder(void **state)
{
	(void)state;
	store_reset();
	struct ts *s = ts_start(h_lease, NULL);
	struct kube_client *c = client_for(s);
	struct op_err err = OP_ERR_INIT;
	struct kube_recorder *rec = NULL;
	assert_int_equal(kube_recorder_new(c, "rec-test", 2, &rec, &err), 0);
	json_object *pg = json_tokener_parse(
		"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\",\"metadata\":{"
		"\"name\":\"pg\",\"namespace\":\"ns1\",\"uid\":\"u-1\",\"resourceVersion\":\"5\"},"
		"\"spec\":{\"instances\":3}}");
	/* the API server answers Events after 300 ms: emitting does not wait */
	atomic_store(&event_stall_ms, 300);
	int64_t t0 = ts_now_ms();
	assert_int_equal(kube_recorder_emit(rec, pg, KUBE_EVENT_NORMAL, "First", "one"), 0);
	struct kube_recorder_stats st;
	do { /* the thread took the first one: it is in flight */
		kube_recorder_stats(rec, &st);
		ts_sleep_ms(5);
	} while (st.queued && ts_now_ms() - t0 < 5000);
	assert_int_equal(st.queued, 0);
	int64_t t1 = ts_now_ms();
	assert_int_equal(kube_recorder_emit(rec, pg, KUBE_EVENT_WARNING, "Second", "two"), 0);
	json_object_put(pg); /* what the recorder needs was copied */
	pg = NULL;
	json_object *other = json_tokener_parse("{\"kind\":\"Pod\",\"metadata\":{"
						"\"name\":\"p\",\"namespace\":\"ns1\"}}");
	assert_int_equal(kube_recorder_emit(rec, other, KUBE_EVENT_NORMAL, "Third", "three"), 0);
	/* the queue holds 2: the fourth is dropped */
	assert_int_equal(kube_recorder_emit(rec, other, KUBE_EVENT_NORMAL, "Fourth", "four"),
			 -ENOSPC);
	assert_true(ts_now_ms() - t1 < 250); /* 3 emits while a POST takes 300 ms */
	kube_recorder_stats(rec, &st);
	assert_int_equal(st.queued, 2);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(kube_recorder_flush(rec, 20), -ETIMEDOUT);
	assert_int_equal(kube_recorder_flush(rec, 5000), 0);
	kube_recorder_stats(rec, &st);
	assert_int_equal(st.posted, 3);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.queued, 0);
	assert_int_equal(events_stored(), 3);
	/* in order, each with its own identity and the reporter's name */
	const char *want[] = { "First", "Second", "Third" };
	int seen = 0;
	json_object_object_foreach(events_store, k, v) {
		(void)k;
		const char *reason = op_json_str_at(v, "reason");
		int at = -1;
		for (int i = 0; i < 3; i++)
			if (!strcmp(reason, want[i]))
				at = i;
		assert_true(at >= 0);
		seen |= 1 << at;
		assert_string_equal(op_json_str_at(v, "source.component"), "rec-test");
		assert_string_equal(op_json_str_at(v, "involvedObject.kind"), at == 2 ? "Pod" : "Cluster");
		if (at < 2) {
			assert_string_equal(op_json_str_at(v, "involvedObject.uid"), "u-1");
			assert_string_equal(op_json_str_at(v, "involvedObject.resourceVersion"), "5");
		}
		assert_null(op_json_at(v, "involvedObject.spec"));
	}
	assert_int_equal(seen, 7);
	/* no name: refused at once */
	json_object *noname = json_tokener_parse("{\"metadata\":{}}");
	assert_int_equal(kube_recorder_emit(rec, noname, "Normal", "X", "y"), -EINVAL);
	json_object_put(noname);
	/* metrics */
	struct op_buf out = OP_BUF_INIT(1 << 16);
	assert_int_equal(kube_recorder_render_metrics(rec, &out), 0);
	assert_non_null(strstr(op_buf_str(&out), "pgop_kube_events_posted_total 3\n"));
	assert_non_null(strstr(op_buf_str(&out), "pgop_kube_events_dropped_total 1\n"));
	op_buf_done(&out);
	/* stopping with Events queued and no time to drain: they are dropped, and
	 * the stop does not wait for them */
	assert_int_equal(kube_recorder_emit(rec, other, KUBE_EVENT_NORMAL, "Late1", "l"), 0);
	assert_int_equal(kube_recorder_emit(rec, other, KUBE_EVENT_NORMAL, "Late2", "l"), 0);
	t0 = ts_now_ms();
	kube_recorder_free(rec, 0);
	assert_true(ts_now_ms() - t0 < 1000); /* at most the one in flight */
	assert_true(events_stored() <= 4);
	json_object_put(other);
	atomic_store(&event_stall_ms, 0);
	kube_client_free(c);
	ts_stop(s);
	store_reset();
	json_object_put(events_store);
	events_store = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leader_try_and_expiry),
		cmocka_unit_test(test_leader_two_candidates),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_recorder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
