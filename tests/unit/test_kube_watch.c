/* tests/unit/test_kube_watch.c - kube/ watch streams and the informer against
 * a scripted local HTTPS server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "kube/watch.h"
#include "support/json.h"
#include "support/log.h"
#include "test_kube_server.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#define EV(type, name, rv)                                                                         \
	"{\"type\":\"" type "\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"  \
	"\"name\":\"" name "\",\"namespace\":\"ns1\",\"resourceVersion\":\"" rv "\"}}}\n"
#define BOOKMARK(rv)                                                                               \
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{" \
	"\"resourceVersion\":\"" rv "\"}}}\n"
#define GONE                                                                                       \
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{}," \
	"\"status\":\"Failure\",\"message\":\"too old resource version: 1 (12000)\","              \
	"\"reason\":\"Expired\",\"code\":410}}\n"

static atomic_int watch_calls;

static void add_chunk(struct ts_resp *r, const char *s, int delay)
{
	r->chunks[r->nchunks] = op_strdup(s);
	r->delay_ms[r->nchunks] = delay;
	r->nchunks++;
}

/* Adds s split into pieces of n bytes (events cross chunk boundaries). */
static void add_split(struct ts_resp *r, const char *s, size_t n, int delay)
{
	size_t len = strlen(s);
	for (size_t off = 0; off < len; off += n) {
		r->chunks[r->nchunks] = op_strndup(s + off, n);
		r->delay_ms[r->nchunks] = delay;
		r->nchunks++;
	}
}

static bool is_watch(const struct ts_req *req)
{
	return strstr(req->query, "watch=1") != NULL;
}

/* ---- raw watch ---- */

struct seen {
	pthread_mutex_t lock;
	int n;
	enum kube_watch_type type[64];
	char name[64][32];
	char rv[64][16];
};

static struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void seen_reset(void)
{
	pthread_mutex_lock(&seen.lock);
	seen.n = 0;
	pthread_mutex_unlock(&seen.lock);
}

static int seen_count(void)
{
	pthread_mutex_lock(&seen.lock);
	int n = seen.n;
	pthread_mutex_unlock(&seen.lock);
	return n;
}

static int record(void *ud, enum kube_watch_type t, json_object *obj)
{
	pthread_mutex_lock(&seen.lock);
	if (seen.n < 64) {
		const char *n = kube_obj_name(obj);
		const char *rv = kube_obj_resource_version(obj);
		seen.type[seen.n] = t;
		snprintf(seen.name[seen.n], 32, "%s", n ? n : "");
		snprintf(seen.rv[seen.n], 16, "%s", rv ? rv : "");
		seen.n++;
	}
	pthread_mutex_unlock(&seen.lock);
	return 0;
}

static void h_watch(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	const char *p = req->path;
	if (!is_watch(req)) {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "x");
		return;
	}
	int n = atomic_fetch_add(&watch_calls, 1);
	if (strstr(p, "/configmaps")) { /* an endless line */
		r->big = 16u << 20;
		r->big_chunked = true;
		return;
	}
	if (strstr(p, "/secrets")) { /* HTTP 410 */
		r->status = 410;
		r->body = ts_status(410, "Expired", "too old resource version");
		return;
	}
	if (strstr(p, "/services")) { /* 410 as an ERROR event after one event */
		add_chunk(r, EV("ADDED", "s1", "30"), 0);
		add_chunk(r, GONE, 10);
		r->hold_ms = 3000;
		return;
	}
	if (strstr(p, "/endpoints")) { /* forbidden */
		r->status = 403;
		r->body = ts_status(403, "Forbidden", "endpoints is forbidden: User cannot watch");
		return;
	}
	/* pods: first stream has split events + bookmark and ends; the second
	 * one (expected to resume from rv 20) sends one more and holds open. */
	if (n == 0) {
		add_split(r, EV("ADDED", "a", "11"), 7, 5);
		add_chunk(r, EV("MODIFIED", "a", "12") EV("DELETED", "a", "13"), 5);
		add_split(r, BOOKMARK("20"), 50, 5);
	} else {
		add_chunk(r, "\n" EV("ADDED", "b", "21"), 5);
		r->hold_ms = 10000;
	}
}

static struct kube_client *client_for(struct ts *s)
{
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(s, "tok-w"), NULL, &cfg, &err), 0);
	struct kube_client *c = NULL;
	assert_int_equal(kube_client_new(cfg, NULL, &c, &err), 0);
	return c;
}

static void test_watch_one_stream(void **state)
{
	atomic_store(&watch_calls, 0);
	seen_reset();
	struct ts *s = ts_start(h_watch, NULL);
	struct kube_client *c = client_for(s);
	struct kube_watch *w = NULL;
	struct op_err err = OP_ERR_INIT;
	struct kube_watch_opts wo = { .resource_version = "5", .label_selector = "app=pg",
				      .timeout_seconds = 60 };
	assert_int_equal(kube_watch_new(c, KUBE_PODS, "ns1", &wo, &w, &err), 0);
	assert_int_equal(kube_watch_run(w, record, NULL, -1, &err), 0);
	assert_int_equal(seen.n, 4);
	assert_int_equal(seen.type[0], KUBE_WATCH_ADDED);
	assert_string_equal(seen.name[0], "a");
	assert_int_equal(seen.type[1], KUBE_WATCH_MODIFIED);
	assert_int_equal(seen.type[2], KUBE_WATCH_DELETED);
	assert_string_equal(seen.rv[2], "13");
	assert_int_equal(seen.type[3], KUBE_WATCH_BOOKMARK);
	char *rv = kube_watch_resource_version(w);
	assert_string_equal(rv, "20");
	free(rv);
	const struct ts_req *r = ts_at(s, 0);
	assert_string_equal(r->path, "/api/v1/namespaces/ns1/pods");
	assert_non_null(strstr(r->query, "allowWatchBookmarks=true"));
	assert_non_null(strstr(r->query, "resourceVersion=5"));
	assert_non_null(strstr(r->query, "timeoutSeconds=60"));
	assert_non_null(strstr(r->query, "labelSelector=app=pg"));
	assert_string_equal(r->auth, "Bearer tok-w");
	kube_watch_free(w);
	kube_client_free(c);
	ts_stop(s);
}

struct runner {
	struct kube_watch *w;
	int rc;
	struct op_err err;
};

static void *run_thread(void *arg)
{
	struct runner *rn = arg;
	rn->rc = kube_watch_run(rn->w, record, NULL, 0, &rn->err);
	return NULL;
}

static void test_watch_resume_and_stop(void **state)
{
	atomic_store(&watch_calls, 0);
	seen_reset();
	struct ts *s = ts_start(h_watch, NULL);
	struct kube_client *c = client_for(s);
	struct runner rn = { .err = OP_ERR_INIT };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_watch_new(c, KUBE_PODS, "ns1", NULL, &rn.w, &err), 0);
	pthread_t t;
	pthread_create(&t, NULL, run_thread, &rn);
	int64_t deadline = ts_now_ms() + 5000;
	while (seen_count() < 5 && ts_now_ms() < deadline)
		ts_sleep_ms(20);
	assert_int_equal(seen_count(), 5);
	assert_string_equal(seen.name[4], "b");
	/* second stream resumed from the bookmark's rv */
	assert_int_equal(ts_count(s), 2);
	assert_non_null(strstr(ts_at(s, 1)->query, "resourceVersion=20"));
	assert_null(strstr(ts_at(s, 0)->query, "resourceVersion="));
	int64_t t0 = ts_now_ms();
	kube_watch_stop(rn.w);
	pthread_join(t, NULL);
	int64_t stop_ms = ts_now_ms() - t0;
	assert_int_equal(rn.rc, -ECANCELED);
	print_message("watch stop took %lld ms\n", (long long)stop_ms);
	assert_true(stop_ms < 2500);
	assert_int_equal(kube_watch_streams(rn.w), 2);
	char *rv = kube_watch_resource_version(rn.w);
	assert_string_equal(rv, "21");
	free(rv);
	kube_watch_free(rn.w);
	kube_client_free(c);
	ts_stop(s);
}

static void test_watch_gone_and_errors(void **state)
{
	struct ts *s = ts_start(h_watch, NULL);
	struct kube_client *c = client_for(s);
	struct op_err err = OP_ERR_INIT;
	struct kube_watch *w = NULL;

	/* HTTP 410 */
	seen_reset();
	assert_int_equal(kube_watch_new(c, KUBE_SECRETS, "ns1", NULL, &w, &err), 0);
	assert_int_equal(kube_watch_run(w, record, NULL, 0, &err), -ETIME);
	assert_int_equal(seen_count(), 0);
	w = kube_watch_free(w);

	/* ERROR event with code 410, after one event; not delivered as an event */
	err = OP_ERR_INIT;
	assert_int_equal(kube_watch_new(c, KUBE_SERVICES, "ns1", NULL, &w, &err), 0);
	int64_t t0 = ts_now_ms();
	assert_int_equal(kube_watch_run(w, record, NULL, 0, &err), -ETIME);
	assert_true(ts_now_ms() - t0 < 2500); /* did not wait for the server to hang up */
	assert_non_null(strstr(err.msg, "too old resource version"));
	assert_int_equal(seen_count(), 1);
	assert_int_equal(seen.type[0], KUBE_WATCH_ADDED);
	w = kube_watch_free(w);

	/* 403 is returned at once, with the Status message */
	err = OP_ERR_INIT;
	assert_int_equal(kube_watch_new(c, KUBE_ENDPOINTS, "ns1", NULL, &w, &err), 0);
	assert_int_equal(kube_watch_run(w, record, NULL, 0, &err), -EACCES);
	assert_non_null(strstr(err.msg, "User cannot watch"));
	w = kube_watch_free(w);

	/* a line longer than OP_BUF_MAX_WATCH_EVENT */
	err = OP_ERR_INIT;
	atomic_store(&s->big_served, 0);
	assert_int_equal(kube_watch_new(c, KUBE_CONFIGMAPS, "ns1", NULL, &w, &err), 0);
	assert_int_equal(kube_watch_run(w, record, NULL, 0, &err), -EMSGSIZE);
	ts_sleep_ms(200);
	assert_true(atomic_load(&s->big_served) < (16u << 20));
	w = kube_watch_free(w);

	/* stop before run */
	assert_int_equal(kube_watch_new(c, KUBE_PODS, "ns1", NULL, &w, &err), 0);
	kube_watch_stop(w);
	assert_true(kube_watch_stopped(w));
	err = OP_ERR_INIT;
	assert_int_equal(kube_watch_run(w, record, NULL, 0, &err), -ECANCELED);
	kube_watch_free(w);
	kube_client_free(c);
	ts_stop(s);
}

/* ---- transient failures ---- */

static atomic_int tr_calls;

static void h_transient(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	int n = atomic_fetch_add(&tr_calls, 1);
	if (strstr(req->path, "/nodes")) { /* always 500 */
		r->status = 500;
		r->body = ts_status(500, "InternalError", "etcd is down");
		return;
	}
	if (n == 0) { /* a non-410 ERROR event: delivered, stream resumed */
		add_chunk(r, EV("ADDED", "x", "40"), 0);
		add_chunk(r, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,"
			     "\"message\":\"internal\"}}\n", 5);
		r->hold_ms = 3000;
	} else if (n == 1) {
		r->status = 503;
		r->body = ts_status(503, "ServiceUnavailable", "later");
	} else {
		add_chunk(r, EV("ADDED", "y", "41"), 0);
		add_chunk(r, EV("ADDED", "stop", "42"), 0);
		r->hold_ms = 3000;
	}
}

static int stop_on_name(void *ud, enum kube_watch_type t, json_object *obj)
{
	record(ud, t, obj);
	const char *n = kube_obj_name(obj);
	return n && !strcmp(n, "stop") ? -EINTR : 0;
}

static void test_watch_transient(void **state)
{
	atomic_store(&tr_calls, 0);
	seen_reset();
	struct ts *s = ts_start(h_transient, NULL);
	struct kube_client *c = client_for(s);
	struct op_err err = OP_ERR_INIT;
	struct kube_watch *w = NULL;
	assert_int_equal(kube_watch_new(c, KUBE_PODS, "ns1", NULL, &w, &err), 0);
	/* ERROR(500) -> resume from rv 40 -> 503 -> resume -> y, stop (callback error) */
	assert_int_equal(kube_watch_run(w, stop_on_name, NULL, 0, &err), -EINTR);
	assert_non_null(strstr(err.msg, "handler failed on ADDED"));
	assert_int_equal(seen_count(), 4);
	assert_int_equal(seen.type[1], KUBE_WATCH_ERROR);
	assert_string_equal(seen.name[2], "y");
	assert_int_equal(ts_count(s), 3);
	assert_non_null(strstr(ts_at(s, 1)->query, "resourceVersion=40"));
	assert_non_null(strstr(ts_at(s, 2)->query, "resourceVersion=40"));
	char *rv = kube_watch_resource_version(w);
	assert_string_equal(rv, "41"); /* the refused event does not advance the rv */
	free(rv);
	w = kube_watch_free(w);

	/* a server that keeps failing: bounded by max_failures */
	err = OP_ERR_INIT;
	assert_int_equal(kube_watch_new(c, KUBE_NODES, NULL, NULL, &w, &err), 0);
	assert_int_equal(kube_watch_run(w, record, NULL, 3, &err), -EIO);
	assert_non_null(strstr(err.msg, "etcd is down"));
	assert_int_equal(kube_watch_streams(w), 3);
	kube_watch_free(w);
	kube_client_free(c);
	ts_stop(s);
}

/* ---- informer ---- */

static atomic_int list_calls, inf_watch_calls;

static void h_informer(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (strcmp(req->path, "/api/v1/namespaces/ns1/pods") != 0) {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "x");
		return;
	}
	if (!is_watch(req)) {
		int n = atomic_fetch_add(&list_calls, 1);
		if (n == 0)
			r->body = op_strdup(
				"{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
				"\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\","
				"\"resourceVersion\":\"1\"}},{\"metadata\":{\"name\":\"b\","
				"\"namespace\":\"ns1\",\"resourceVersion\":\"2\"}}]}");
		else
			r->body = op_strdup(
				"{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},"
				"\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\","
				"\"resourceVersion\":\"12\"}},{\"metadata\":{\"name\":\"c\","
				"\"namespace\":\"ns1\",\"resourceVersion\":\"15\"}},{\"metadata\":{"
				"\"name\":\"d\",\"namespace\":\"ns1\",\"resourceVersion\":\"16\"}}]}");
		return;
	}
	int n = atomic_fetch_add(&inf_watch_calls, 1);
	if (n == 0) {
		add_chunk(r, EV("ADDED", "c", "11"), 20);
		add_split(r, EV("MODIFIED", "a", "12") EV("DELETED", "b", "13"), 33, 5);
		add_chunk(r, BOOKMARK("14"), 5);
	} else if (n == 1) {
		add_chunk(r, GONE, 20);
		r->hold_ms = 3000;
	} else {
		r->hold_ms = 30000;
	}
}

struct calls {
	pthread_mutex_t lock;
	char log[1024];
	int synced;
};

static void log_call(struct calls *cl, const char *what, json_object *o)
{
	pthread_mutex_lock(&cl->lock);
	size_t len = strlen(cl->log);
	snprintf(cl->log + len, sizeof(cl->log) - len, "%s:%s@%s ", what, kube_obj_name(o),
		 kube_obj_resource_version(o));
	pthread_mutex_unlock(&cl->lock);
}

static void cb_add(void *ud, json_object *o)
{
	log_call(ud, "add", o);
}

static void cb_update(void *ud, json_object *old, json_object *o)
{
	log_call(ud, "upd", o);
}

static void cb_delete(void *ud, json_object *o)
{
	log_call(ud, "del", o);
}

static void cb_synced(void *ud)
{
	struct calls *cl = ud;
	pthread_mutex_lock(&cl->lock);
	cl->synced++;
	pthread_mutex_unlock(&cl->lock);
}

static void test_informer(void **state)
{
	atomic_store(&list_calls, 0);
	atomic_store(&inf_watch_calls, 0);
	struct ts *s = ts_start(h_informer, NULL);
	struct kube_client *c = client_for(s);
	struct calls cl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	const struct kube_informer_handlers hd = { cb_add, cb_update, cb_delete, cb_synced, &cl };
	const struct kube_informer_opts io = { .ns = "ns1", .label_selector = "cnpg.io/cluster=pg",
					       .page_size = 50 };
	struct kube_informer *inf = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_informer_new(c, KUBE_PODS, &io, &hd, &inf, &err), 0);
	assert_false(kube_informer_has_synced(inf));
	assert_int_equal(kube_informer_wait_synced(inf, 50), -ETIMEDOUT);
	assert_int_equal(kube_informer_start(inf, &err), 0);
	assert_int_equal(kube_informer_start(inf, &err), -EALREADY);
	assert_int_equal(kube_informer_wait_synced(inf, 5000), 0);
	assert_true(kube_informer_has_synced(inf));
	/* wait for: list, watch (3 events + bookmark), 410, relist, third watch */
	int64_t deadline = ts_now_ms() + 8000;
	while ((kube_informer_lists(inf) < 2 || atomic_load(&inf_watch_calls) < 3) &&
	       ts_now_ms() < deadline)
		ts_sleep_ms(20);
	ts_sleep_ms(100);
	assert_int_equal(kube_informer_lists(inf), 2);
	pthread_mutex_lock(&cl.lock);
	assert_string_equal(cl.log, "add:a@1 add:b@2 add:c@11 upd:a@12 del:b@2 upd:c@15 add:d@16 ");
	assert_int_equal(cl.synced, 1);
	pthread_mutex_unlock(&cl.lock);

	assert_int_equal(kube_informer_count(inf), 3);
	json_object *o = kube_informer_get(inf, "ns1", "c");
	assert_non_null(o);
	assert_string_equal(kube_obj_resource_version(o), "15");
	json_object_put(o);
	assert_null(kube_informer_get(inf, "ns1", "b"));
	assert_null(kube_informer_get(inf, "other", "a"));
	json_object *all = kube_informer_list(inf, "ns1");
	assert_int_equal(json_object_array_length(all), 3);
	assert_string_equal(kube_obj_name(json_object_array_get_idx(all, 0)), "a");
	assert_string_equal(kube_obj_name(json_object_array_get_idx(all, 2)), "d");
	json_object_put(all);
	/* filtered reads: c carries no labels in this script, so select by name */
	err = OP_ERR_INIT;
	assert_null(kube_informer_list_selected(inf, NULL, "a in (", &err));
	assert_int_equal(err.code, -EINVAL);
	all = kube_informer_list_selected(inf, NULL, "!app", &err);
	assert_int_equal(json_object_array_length(all), 3);
	json_object_put(all);
	all = kube_informer_list_selected(inf, "ns1", "app=x", &err);
	assert_int_equal(json_object_array_length(all), 0);
	json_object_put(all);
	all = kube_informer_list(inf, "zz");
	assert_int_equal(json_object_array_length(all), 0);
	json_object_put(all);
	char *rv = kube_informer_resource_version(inf);
	assert_string_equal(rv, "20");
	free(rv);

	/* queries: selector on list and watch; the 2nd watch resumed from the bookmark */
	int n = ts_count(s);
	int watches = 0;
	for (int i = 0; i < n; i++) {
		const struct ts_req *r = ts_at(s, i);
		assert_non_null(strstr(r->query, "labelSelector=cnpg.io/cluster=pg"));
		if (!is_watch(r)) {
			assert_non_null(strstr(r->query, "limit=50"));
			continue;
		}
		watches++;
		const char *want = watches == 1 ? "resourceVersion=10"
				   : watches == 2 ? "resourceVersion=14"
						  : "resourceVersion=20";
		assert_non_null(strstr(r->query, want));
	}
	assert_int_equal(watches, 3);

	int64_t t0 = ts_now_ms();
	kube_informer_stop(inf);
	assert_true(ts_now_ms() - t0 < 2500);
	kube_informer_stop(inf); /* idempotent */
	kube_informer_free(inf);
	kube_client_free(c);
	ts_stop(s);
}

/* The first list is refused: the informer retries and syncs. */
static atomic_int fl_calls;

static void h_list_fails(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (is_watch(req)) {
		r->hold_ms = 30000;
		return;
	}
	if (atomic_fetch_add(&fl_calls, 1) == 0) {
		r->status = 403;
		r->body = ts_status(403, "Forbidden", "not yet");
		return;
	}
	r->body = op_strdup("{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[{\"metadata\":{"
			    "\"name\":\"n1\",\"resourceVersion\":\"7\"}}]}");
}

static void test_informer_list_retry(void **state)
{
	atomic_store(&fl_calls, 0);
	struct ts *s = ts_start(h_list_fails, NULL);
	struct kube_client *c = client_for(s);
	const struct kube_informer_opts io = { .relist_backoff_ms = 50 };
	struct kube_informer *inf = NULL;
	struct op_err err = OP_ERR_INIT;
	op_log_set_level(OP_LOG_ERROR); /* the expected warning */
	assert_int_equal(kube_informer_new(c, KUBE_NODES, &io, NULL, &inf, &err), 0);
	assert_int_equal(kube_informer_start(inf, &err), 0);
	assert_int_equal(kube_informer_wait_synced(inf, 5000), 0);
	assert_int_equal(atomic_load(&fl_calls), 2);
	json_object *o = kube_informer_get(inf, NULL, "n1"); /* cluster-scoped */
	assert_non_null(o);
	json_object_put(o);
	assert_non_null(strstr(ts_at(s, 0)->path, "/api/v1/nodes"));
	kube_informer_free(inf);
	op_log_set_level(OP_LOG_INFO);
	/* stopped before start: wait_synced reports it */
	assert_int_equal(kube_informer_new(c, KUBE_NODES, &io, NULL, &inf, &err), 0);
	kube_informer_stop(inf);
	assert_int_equal(kube_informer_wait_synced(inf, 1000), -ECANCELED);
	kube_informer_free(inf);
	kube_client_free(c);
	ts_stop(s);
}

/* Throughput: 5000 events in large chunks through one informer. */
#define TP_EVENTS 5000

static void h_throughput(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (!is_watch(req)) {
		r->body = op_strdup("{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}");
		return;
	}
	struct op_buf b = OP_BUF_INIT(64u << 20);
	int per = TP_EVENTS / (TS_MAX_CHUNKS - 2);
	for (int i = 0; i < TP_EVENTS; i++) {
		if (op_buf_addf(&b, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
				"\"name\":\"p%d\",\"namespace\":\"ns1\",\"resourceVersion\":\"%d\","
				"\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"n1\"}}}\n",
				i, i + 2) < 0)
			abort();
		if ((i + 1) % per == 0 || i == TP_EVENTS - 1) {
			add_chunk(r, op_buf_str(&b), 0);
			op_buf_reset(&b);
		}
	}
	op_buf_done(&b);
	r->hold_ms = 30000;
}

static atomic_int tp_adds;

static void tp_add(void *ud, json_object *o)
{
	atomic_fetch_add(&tp_adds, 1);
}

static void test_informer_throughput(void **state)
{
	atomic_store(&tp_adds, 0);
	struct ts *s = ts_start(h_throughput, NULL);
	struct kube_client *c = client_for(s);
	const struct kube_informer_handlers hd = { .on_add = tp_add };
	struct kube_informer *inf = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_informer_new(c, KUBE_PODS, NULL, &hd, &inf, &err), 0);
	assert_int_equal(kube_informer_start(inf, &err), 0);
	assert_int_equal(kube_informer_wait_synced(inf, 5000), 0);
	int64_t t0 = ts_now_ms();
	while (atomic_load(&tp_adds) < TP_EVENTS && ts_now_ms() - t0 < 30000)
		ts_sleep_ms(5);
	int64_t dt = ts_now_ms() - t0;
	assert_int_equal(atomic_load(&tp_adds), TP_EVENTS);
	assert_int_equal(kube_informer_count(inf), TP_EVENTS);
	print_message("informer: %d watch events applied in %lld ms (%.0f events/s)\n",
		      TP_EVENTS, (long long)dt, dt > 0 ? TP_EVENTS * 1000.0 / (double)dt : 0.0);
	int64_t t1 = ts_now_ms();
	json_object *sel = kube_informer_list_selected(inf, "ns1", "app=x", &err);
	int64_t dsel = ts_now_ms() - t1;
	assert_int_equal(json_object_array_length(sel), TP_EVENTS);
	json_object_put(sel);
	print_message("informer: selector list of %d cached objects (each parsed from its entry) in %lld ms\n",
		      TP_EVENTS, (long long)dsel);
	kube_informer_free(inf);
	kube_client_free(c);
	ts_stop(s);
}

/* kube__watch_replay: the stream's framing without a transfer (what
 * tests/fuzz/fuzz_watch.c drives): events split anywhere across chunks, blank
 * and CRLF lines, the ERROR/410 and malformed-event answers. */
struct replay_log {
	int n;
	char types[16];
};

static int replay_fn(void *ud, enum kube_watch_type t, json_object *obj)
{
	struct replay_log *l = ud;
	assert_true(json_object_is_type(obj, json_type_object));
	if (l->n < (int)sizeof(l->types) - 1)
		l->types[l->n++] = kube_watch_type_name(t)[0];
	return 0;
}

static int replay_split(const char *body, size_t step, struct replay_log *l, char **rv)
{
	size_t len = strlen(body), n = (len + step - 1) / step;
	struct kube__chunk v[512];
	assert_true(n <= 512);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct kube__chunk){ body + i * step,
					     len - i * step < step ? len - i * step : step };
	memset(l, 0, sizeof(*l));
	struct op_err err = OP_ERR_INIT;
	int r = kube__watch_replay(KUBE_PODS, v, n, replay_fn, l, rv, &err);
	if (r < 0)
		assert_true(err.msg[0] != '\0');
	return r;
}

/* kube_project: rows of (object, keep list) -> the expected projection. */
static void test_project(void **state)
{
	static const char *const pods[] = { "metadata", "spec.nodeName", "status.podIP",
					    "spec.missing.deep", "kind.x", NULL };
	static const char *const all[] = { "*", NULL };
	static const char *const arrays[] = { "status.conditions[].type",
					      "status.conditions[].status",
					      "status.containerStatuses[].state.waiting",
					      "spec.containers[]", "spec.nodeName[].x",
					      "status.podIP[]", NULL };
	static const char *const meta_paths[] = { "metadata.name", "metadata.annotations",
						  "metadata.labels", NULL };
	static const char *const secrets[] = { "type", "data.tls\\.crt", "data.ca\\.crt",
					       "a\\\\b", "x\\", NULL };
	static const struct {
		const char *in;
		const char *const *keep;
		const char *want;
	} rows[] = {
		/* spec trimmed to the listed leaf, managedFields and last-applied dropped,
		 * other annotations and labels kept; absent paths and paths through a
		 * non-object add nothing */
		{ "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\","
		  "\"labels\":{\"a\":\"b\"},\"managedFields\":[{\"manager\":\"kubectl\"}],"
		  "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\","
		  "\"x\":\"y\"},\"ownerReferences\":[{\"uid\":\"u\"}]},"
		  "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]},"
		  "\"status\":{\"podIP\":\"10.0.0.1\",\"phase\":\"Running\"}}",
		  pods,
		  "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\",\"labels\":{\"a\":\"b\"},"
		  "\"annotations\":{\"x\":\"y\"},\"ownerReferences\":[{\"uid\":\"u\"}]},"
		  "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"podIP\":\"10.0.0.1\"}}" },
		/* nothing listed present: an empty object */
		{ "{\"data\":{\"k\":\"v\"}}", pods, "{}" },
		/* "*": every field, metadata cleaned */
		{ "{\"metadata\":{\"name\":\"c\",\"managedFields\":[]},\"spec\":{\"instances\":3}}",
		  all, "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"instances\":3}}" },
		/* a backslash makes the next character part of the key: keys with dots
		 * (a Secret's data), a backslash in a key; a trailing one is itself */
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"C\",\"tls.key\":\"K\","
		  "\"tls\":{\"crt\":\"wrong\"},\"username\":\"u\"},\"a\\\\b\":1,\"x\":2}",
		  secrets, "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"C\"},\"a\\\\b\":1}" },
		/* metadata by paths: the rest of it (owner references, uid) goes, and a
		 * kept metadata.annotations drops the last-applied one too */
		{ "{\"metadata\":{\"name\":\"s\",\"uid\":\"u1\",\"ownerReferences\":[{\"uid\":\"u\"}],"
		  "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\","
		  "\"x\":\"y\"},\"labels\":{\"a\":\"b\"},\"creationTimestamp\":\"t\"}}",
		  meta_paths,
		  "{\"metadata\":{\"name\":\"s\",\"annotations\":{\"x\":\"y\"},\"labels\":{\"a\":\"b\"}}}" },
		/* "[]": each element keeps what the rest of the path selects (several
		 * paths fill the same elements; an element without it stays {}); "x[]"
		 * alone keeps every element whole; through a non-array nothing */
		{ "{\"spec\":{\"nodeName\":\"n\",\"containers\":[{\"name\":\"a\"},null]},"
		  "\"status\":{\"podIP\":\"1.2.3.4\",\"conditions\":[{\"type\":\"Ready\","
		  "\"status\":\"True\",\"lastTransitionTime\":\"t\"},{\"type\":\"X\",\"reason\":\"r\"},"
		  "7],\"containerStatuses\":[{\"name\":\"pg\",\"image\":\"i\",\"state\":{\"running\":{}}},"
		  "{\"name\":\"b\",\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\",\"message\":\"m\"}}}]}}",
		  arrays,
		  "{\"spec\":{\"containers\":[{\"name\":\"a\"},null]},\"status\":{\"conditions\":["
		  "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"X\"},{}],"
		  "\"containerStatuses\":[{},{\"state\":{\"waiting\":{\"reason\":\"ErrImagePull\","
		  "\"message\":\"m\"}}}]}}" },
		/* JSON nulls are kept as nulls, at any depth and under "*" */
		{ "{\"metadata\":{\"name\":\"e\",\"annotations\":null,\"labels\":{\"a\":null}},"
		  "\"endpoints\":null,\"ports\":[null]}",
		  meta_paths,
		  "{\"metadata\":{\"name\":\"e\",\"annotations\":null,\"labels\":{\"a\":null}}}" },
		{ "{\"metadata\":{\"name\":\"e\",\"annotations\":null},\"endpoints\":null}", all,
		  "{\"metadata\":{\"name\":\"e\",\"annotations\":null},\"endpoints\":null}" },
		{ "{\"spec\":{\"nodeName\":null},\"status\":null}", pods,
		  "{\"spec\":{\"nodeName\":null}}" },
		/* no keep list: a plain deep copy (managedFields stays) */
		{ "{\"metadata\":{\"managedFields\":[]}}", NULL, "{\"metadata\":{\"managedFields\":[]}}" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_object *in = json_tokener_parse(rows[i].in);
		json_object *want = json_tokener_parse(rows[i].want);
		assert_non_null(in);
		assert_non_null(want);
		json_object *got = kube_project(in, rows[i].keep);
		assert_non_null(got);
		if (!json_object_equal(got, want))
			fail_msg("row %zu: got %s", i, json_object_to_json_string(got));
		assert_ptr_not_equal(got, in);
		json_object_put(got);
		json_object_put(want);
		json_object_put(in); /* got shares nothing with in (ASan would tell) */
	}
	assert_null(kube_project(NULL, pods));
}

/* An informer with a projection caches, hands to handlers and returns only the
 * kept fields, from the list and from watch events. */
static void h_project(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (!is_watch(req)) {
		r->body = op_strdup("{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"metadata\":"
				    "{\"name\":\"a\",\"namespace\":\"ns1\",\"resourceVersion\":\"1\","
				    "\"managedFields\":[{}]},\"spec\":{\"nodeName\":\"n1\",\"big\":[1,2]}}]}");
		return;
	}
	if (atomic_fetch_add(&inf_watch_calls, 1) == 0)
		add_chunk(r, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
			     "\"namespace\":\"ns1\",\"resourceVersion\":\"2\"},\"spec\":{\"big\":1},"
			     "\"status\":{\"podIP\":\"10.0.0.2\"}}}\n", 0);
	r->hold_ms = 30000;
}

static atomic_int proj_leaks; /* handler saw a field outside the projection */

static void proj_add(void *ud, json_object *o)
{
	(void)ud;
	if (op_json_at(o, "spec.big") || op_json_at(o, "metadata.managedFields"))
		atomic_fetch_add(&proj_leaks, 1);
	atomic_fetch_add(&tp_adds, 1);
}

static void test_informer_projection(void **state)
{
	static const char *const keep[] = { "metadata", "spec.nodeName", "status.podIP", NULL };
	atomic_store(&inf_watch_calls, 0);
	atomic_store(&tp_adds, 0);
	atomic_store(&proj_leaks, 0);
	struct ts *s = ts_start(h_project, NULL);
	struct kube_client *c = client_for(s);
	const struct kube_informer_handlers hd = { .on_add = proj_add };
	const struct kube_informer_opts io = { .ns = "ns1", .keep = keep };
	struct kube_informer *inf = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_informer_new(c, KUBE_PODS, &io, &hd, &inf, &err), 0);
	assert_int_equal(kube_informer_start(inf, &err), 0);
	assert_int_equal(kube_informer_wait_synced(inf, 5000), 0);
	int64_t deadline = ts_now_ms() + 5000;
	while (atomic_load(&tp_adds) < 2 && ts_now_ms() < deadline)
		ts_sleep_ms(10);
	assert_int_equal(atomic_load(&tp_adds), 2);
	assert_int_equal(atomic_load(&proj_leaks), 0);
	json_object *a = kube_informer_get(inf, "ns1", "a");
	json_object *b = kube_informer_get(inf, "ns1", "b");
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(op_json_str_at(a, "spec.nodeName"), "n1");
	assert_null(op_json_at(a, "spec.big"));
	assert_null(op_json_at(a, "metadata.managedFields"));
	assert_string_equal(kube_obj_resource_version(a), "1");
	assert_string_equal(op_json_str_at(b, "status.podIP"), "10.0.0.2");
	assert_null(op_json_at(b, "spec"));
	json_object_put(a);
	json_object_put(b);
	kube_informer_free(inf);
	kube_client_free(c);
	ts_stop(s);
}

/* The cache on its compact storage (kube/entry.c): an all-namespaces Pods
 * informer with a projection and the cnpg.io/cluster index, through a list,
 * watch events (relabel, add, delete), then a 410 and a relist with a diff.
 * Reads: get, list (sorted, by namespace), list_filter, list_selected,
 * list_labeled (indexed and not), private copies. */
#define CPOD(ns, name, rv, labels, rest)                                                          \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"" rv  \
	"\",\"managedFields\":[{}],\"labels\":{" labels "}}" rest "}"
#define CEV(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}\n"
#define PG(c) "\"cnpg.io/cluster\":\"" c "\""

static atomic_int cache_lists, cache_watches, cache_gate;

static void h_cache(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	if (strcmp(req->path, "/api/v1/pods") != 0) {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "x");
		return;
	}
	if (!is_watch(req)) {
		if (atomic_fetch_add(&cache_lists, 1) == 0) /* not in key order */
			r->body = op_strdup(
				"{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
				CPOD("ns1", "b", "2", PG("pg2"), ) ","
				CPOD("ns10", "a", "3", PG("pg1"), ) ","
				CPOD("ns1", "a", "1", PG("pg1") ",\"role\":\"instance\"",
				     ",\"spec\":{\"nodeName\":\"n1\",\"big\":[1]}") ","
				CPOD("ns1-x", "a", "4", PG("pg1"), ) "]}");
		else
			r->body = op_strdup(
				"{\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
				CPOD("ns1", "b", "11", PG("pg1") ",\"role\":\"replica\"", ) ","
				CPOD("ns1", "c", "15", PG("pg2"), ) ","
				CPOD("ns1", "d", "16", , ) ","
				CPOD("ns1-x", "a", "4", PG("pg1"), ) "]}");
		return;
	}
	int n = atomic_fetch_add(&cache_watches, 1);
	if (n == 0) {
		add_chunk(r, CEV("MODIFIED", CPOD("ns1", "b", "11", PG("pg1") ",\"role\":\"replica\"", ))
			     CEV("ADDED", CPOD("ns1", "c", "12", PG("pg1") ",\"role\":\"instance\","
					       "\"x\":\"a/b \xc3\xa9\"", ",\"spec\":{\"big\":2}"))
			     CEV("DELETED", CPOD("ns1", "a", "13", PG("pg1"), ))
			     BOOKMARK("14"), 0);
	} else if (n == 1) {
		/* the test reads the cache, then lets the 410 through */
		for (int i = 0; i < 1000 && !atomic_load(&cache_gate); i++)
			ts_sleep_ms(10);
		add_chunk(r, GONE, 0);
	} else {
		r->hold_ms = 30000;
	}
}

static void clog_add(void *ud, json_object *o)
{
	struct calls *cl = ud;
	pthread_mutex_lock(&cl->lock);
	size_t len = strlen(cl->log);
	snprintf(cl->log + len, sizeof(cl->log) - len, "add:%s/%s@%s%s ", kube_obj_namespace(o),
		 kube_obj_name(o), kube_obj_resource_version(o),
		 op_json_at(o, "metadata.managedFields") || op_json_at(o, "spec.big") ? "!" : "");
	pthread_mutex_unlock(&cl->lock);
}

static void clog_update(void *ud, json_object *old, json_object *o)
{
	struct calls *cl = ud;
	pthread_mutex_lock(&cl->lock);
	size_t len = strlen(cl->log);
	snprintf(cl->log + len, sizeof(cl->log) - len, "upd:%s/%s@%s>%s ", kube_obj_namespace(o),
		 kube_obj_name(o), kube_obj_resource_version(old), kube_obj_resource_version(o));
	pthread_mutex_unlock(&cl->lock);
}

static void clog_delete(void *ud, json_object *o)
{
	struct calls *cl = ud;
	pthread_mutex_lock(&cl->lock);
	size_t len = strlen(cl->log);
	snprintf(cl->log + len, sizeof(cl->log) - len, "del:%s/%s@%s ", kube_obj_namespace(o),
		 kube_obj_name(o), kube_obj_resource_version(o));
	pthread_mutex_unlock(&cl->lock);
}

/* "ns/name@rv ..." of a list (owned, consumed). */
static void assert_listed(json_object *arr, const char *want)
{
	char got[512] = "";
	assert_non_null(arr);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		size_t len = strlen(got);
		snprintf(got + len, sizeof(got) - len, "%s%s/%s@%s", i ? " " : "",
			 kube_obj_namespace(o), kube_obj_name(o), kube_obj_resource_version(o));
		assert_null(op_json_at(o, "metadata.managedFields")); /* projected */
	}
	assert_string_equal(got, want);
	json_object_put(arr);
}

static bool name_is_c(void *ud, json_object *o)
{
	(void)ud;
	return !strcmp(kube_obj_name(o), "c");
}

/* kube_informer_list_except's callback: "key@rv" pairs in ud are known; the
 * offered keys are appended to `offered`. */
static char offered[256];
static bool known_rv(void *ud, const char *key, const char *rv)
{
	char kr[128];
	snprintf(kr, sizeof(kr), "%s@%s", key, rv);
	strncat(offered, kr, sizeof(offered) - strlen(offered) - 2);
	strcat(offered, " ");
	return strstr((const char *)ud, kr) != NULL;
}

static bool role_is(void *ud, json_object *o)
{
	const char *r = op_json_str_at(o, "metadata.labels.role");
	return r && !strcmp(r, ud);
}

static void test_informer_cache(void **state)
{
	static const char *const keep[] = { "metadata", "spec.nodeName", NULL };
	atomic_store(&cache_lists, 0);
	atomic_store(&cache_watches, 0);
	atomic_store(&cache_gate, 0);
	struct ts *s = ts_start(h_cache, NULL);
	struct kube_client *c = client_for(s);
	struct calls cl = { .lock = PTHREAD_MUTEX_INITIALIZER };
	const struct kube_informer_handlers hd = { clog_add, clog_update, clog_delete, NULL, &cl };
	const struct kube_informer_opts io = { .keep = keep, .index_label = "cnpg.io/cluster" };
	struct kube_informer *inf = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_informer_new(c, KUBE_PODS, &io, &hd, &inf, &err), 0);
	assert_int_equal(kube_informer_start(inf, &err), 0);
	assert_int_equal(kube_informer_wait_synced(inf, 5000), 0);
	/* the bookmark is applied after the events' handlers ran */
	int64_t deadline = ts_now_ms() + 8000;
	char *rv = NULL;
	while ((!(rv = kube_informer_resource_version(inf)) || strcmp(rv, "14") != 0) &&
	       ts_now_ms() < deadline) {
		free(rv);
		ts_sleep_ms(10);
	}
	assert_string_equal(rv, "14");
	free(rv);
	pthread_mutex_lock(&cl.lock);
	/* list adds in key order; on_update gets the cached old state, on_delete
	 * the last cached state (rv 1, not the event's 13) */
	assert_string_equal(cl.log, "add:ns1-x/a@4 add:ns1/a@1 add:ns1/b@2 add:ns10/a@3 "
				    "upd:ns1/b@2>11 add:ns1/c@12 del:ns1/a@1 ");
	cl.log[0] = '\0';
	pthread_mutex_unlock(&cl.lock);

	assert_int_equal(kube_informer_count(inf), 4);
	assert_null(kube_informer_get(inf, "ns1", "a"));
	assert_null(kube_informer_get(inf, NULL, "a"));
	json_object *o = kube_informer_get(inf, "ns1", "c");
	assert_non_null(o);
	assert_string_equal(op_json_str_at(o, "metadata.labels.x"), "a/b \xc3\xa9");
	assert_null(op_json_at(o, "spec"));
	/* a reader's tree is its own: changing it changes nothing cached */
	op_jset(json_object_object_get(o, "metadata"), "name", json_object_new_string("zz"));
	json_object_put(o);
	o = kube_informer_get(inf, "ns1", "c");
	assert_string_equal(kube_obj_name(o), "c");
	json_object_put(o);
	assert_listed(kube_informer_list(inf, NULL), "ns1-x/a@4 ns1/b@11 ns1/c@12 ns10/a@3");
	assert_listed(kube_informer_list(inf, "ns1"), "ns1/b@11 ns1/c@12");
	assert_listed(kube_informer_list(inf, "ns"), "");
	assert_listed(kube_informer_list_filter(inf, NULL, name_is_c, NULL), "ns1/c@12");
	assert_listed(kube_informer_list_selected(inf, "ns1", "cnpg.io/cluster=pg1,role=instance",
						  &err),
		      "ns1/c@12");
	/* the index: b was relabelled pg2 -> pg1 */
	assert_listed(kube_informer_list_labeled(inf, NULL, "cnpg.io/cluster", "pg1", NULL, NULL),
		      "ns1-x/a@4 ns1/b@11 ns1/c@12 ns10/a@3");
	assert_listed(kube_informer_list_labeled(inf, "ns1", "cnpg.io/cluster", "pg2", NULL, NULL), "");
	assert_listed(kube_informer_list_labeled(inf, "ns1", "cnpg.io/cluster", "pg1", role_is,
						 "instance"),
		      "ns1/c@12");
	/* a label that is not the index: parsed and compared */
	assert_listed(kube_informer_list_labeled(inf, NULL, "role", "replica", NULL, NULL), "ns1/b@11");
	assert_listed(kube_informer_list_labeled(inf, NULL, NULL, NULL, name_is_c, NULL), "ns1/c@12");
	/* what the caller knows at that resourceVersion is left out (every object
	 * of ns is offered once, in key order); another resourceVersion is not known */
	offered[0] = '\0';
	assert_listed(kube_informer_list_except(inf, NULL, known_rv, "ns1/b@11 ns1/c@9 ns1-x/a@4"),
		      "ns1/c@12 ns10/a@3");
	assert_string_equal(offered, "ns1-x/a@4 ns1/b@11 ns1/c@12 ns10/a@3 ");
	offered[0] = '\0';
	assert_listed(kube_informer_list_except(inf, "ns1", known_rv, ""), "ns1/b@11 ns1/c@12");
	assert_string_equal(offered, "ns1/b@11 ns1/c@12 ");

	/* 410 -> relist: unchanged objects get nothing, the diff in key order */
	atomic_store(&cache_gate, 1);
	deadline = ts_now_ms() + 8000;
	while ((kube_informer_lists(inf) < 2 || atomic_load(&cache_watches) < 3) &&
	       ts_now_ms() < deadline)
		ts_sleep_ms(10);
	assert_int_equal(kube_informer_lists(inf), 2);
	pthread_mutex_lock(&cl.lock);
	assert_string_equal(cl.log, "upd:ns1/c@12>15 add:ns1/d@16 del:ns10/a@3 ");
	pthread_mutex_unlock(&cl.lock);
	assert_int_equal(kube_informer_count(inf), 4);
	assert_listed(kube_informer_list(inf, NULL), "ns1-x/a@4 ns1/b@11 ns1/c@15 ns1/d@16");
	assert_listed(kube_informer_list_labeled(inf, "ns1", "cnpg.io/cluster", "pg2", NULL, NULL),
		      "ns1/c@15");
	assert_listed(kube_informer_list_labeled(inf, NULL, "cnpg.io/cluster", "pg1", NULL, NULL),
		      "ns1-x/a@4 ns1/b@11");
	rv = kube_informer_resource_version(inf);
	assert_string_equal(rv, "20");
	free(rv);
	kube_informer_free(inf);
	kube_client_free(c);
	ts_stop(s);
}

static void test_watch_replay(void **state)
{
	(void)state;
	static const struct {
		const char *body;
		int rc;
		const char *types;
		const char *rv;
	} rows[] = {
		{ EV("ADDED", "a", "5") "\r\n \t\n" EV("MODIFIED", "a", "6") BOOKMARK("9"), 0, "AMB", "9" },
		{ EV("ADDED", "a", "5") "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
		  "\"resourceVersion\":\"7\"}}}", 0, "AA", "7" }, /* last line unterminated */
		{ EV("ADDED", "a", "5") GONE EV("ADDED", "b", "8"), -ETIME, "A", "5" },
		{ EV("ADDED", "a", "5") "{\"type\":\"ERROR\",\"object\":{\"code\":500}}\n"
		  EV("ADDED", "b", "8"), 1, "AE", "5" },
		{ "{\"type\":\"ERROR\",\"object\":{\"code\":500}}", 0, "E", NULL },
		{ EV("ADDED", "a", "5") "{\"type\":\"ADDED\",\"object\":[]}\n", -EPROTO, "A", "5" },
		{ "{\"type\":\"ADDED\"\n", -EINVAL, "", NULL },
		{ "{\"type\":\"UPSERT\",\"object\":{}}\n", -EPROTO, "", NULL },
		{ "\n\n", 0, "", NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const size_t steps[] = { 100000, 1, 7, 64 };
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			struct replay_log l;
			char *rv = NULL;
			int r = replay_split(rows[i].body, steps[s], &l, &rv);
			if (r != rows[i].rc || strcmp(l.types, rows[i].types) != 0)
				fail_msg("row %zu step %zu: rc %d types %s", i, steps[s], r, l.types);
			if (rows[i].rv)
				assert_string_equal(rv, rows[i].rv);
			else
				assert_null(rv);
			free(rv);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_replay),
		cmocka_unit_test(test_watch_one_stream),
		cmocka_unit_test(test_watch_resume_and_stop),
		cmocka_unit_test(test_watch_gone_and_errors),
		cmocka_unit_test(test_watch_transient),
		cmocka_unit_test(test_informer),
		cmocka_unit_test(test_informer_list_retry),
		cmocka_unit_test(test_informer_throughput),
		cmocka_unit_test(test_project),
		cmocka_unit_test(test_informer_projection),
		cmocka_unit_test(test_informer_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
