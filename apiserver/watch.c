/* apiserver/watch.c - ?watch=true on clusters and instances.
 *
 * One thread per watch (at most AS_WATCH_MAX_DEFAULT) renders the selected
 * objects every AS_WATCH_PERIOD_MS from the shared snapshots and writes what
 * changed as watch events into the HTTP stream (support/http_server: the
 * connection sleeps while nothing is pending): ADDED (all current objects
 * first when resourceVersion is "" or "0", as the API server does; none for a
 * concrete resourceVersion, which kubectl -w takes from its list), MODIFIED
 * when the object changed (status.lastSeen and metadata.resourceVersion are
 * not changes), DELETED with the last state, and BOOKMARK every
 * AS_WATCH_BOOKMARK_MS with allowWatchBookmarks. resourceVersions are the
 * wall clock in ms, as in lists. With the Table Accept header every event's
 * object is a one-row Table, column definitions on the first one only.
 * The stream ends after timeoutSeconds (at most 1800), when the client goes,
 * or when the server stops.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

struct as_watches {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	unsigned n, max;
	bool stopping;
};

struct watch {
	struct as_watches *w;
	struct as_snaps *snaps;
	struct as_source src;
	struct as_reqinfo ri;
	char *label; /* owned copy */
	struct as_query q;
	bool initial, bookmarks;
	int64_t end_ms;
	struct op_http_stream *st;
};

struct as_watches *as_watches_new(unsigned max)
{
	struct as_watches *w = op_calloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	w->max = max ? max : AS_WATCH_MAX_DEFAULT;
	return w;
}

void as_watches_free(struct as_watches *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	while (w->n)
		pthread_cond_wait(&w->cond, &w->mu);
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	free(w);
}

int as_watch_event(struct op_buf *out, const char *type, const struct as_resource *res,
		   json_object *obj, bool table, bool headers, int64_t now_s)
{
	json_object *ev = op_jobj();
	op_jsets(ev, "type", type);
	if (table && strcmp(type, "BOOKMARK") != 0) {
		json_object *one = op_jarr();
		op_jpush(one, json_object_get(obj));
		struct op_buf t = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
		int r = as_render_table(&t, res, one, op_json_str_at(obj, "metadata.resourceVersion"),
					now_s, headers);
		json_object_put(one);
		json_object *tab = NULL;
		if (r == 0 && op_json_parse(op_buf_str(&t), t.len, OP_JSON_MAX_DEPTH, &tab, NULL) == 0)
			op_jset(ev, "object", tab);
		op_buf_done(&t);
	} else {
		op_jset(ev, "object", json_object_get(obj));
	}
	op_buf_reset(out);
	int r = op_buf_adds(out, json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
								    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (r == 0)
		r = op_buf_adds(out, "\n");
	json_object_put(ev);
	return r;
}

/* The object minus what changes without news. Owned text. */
static char *canonical(json_object *obj)
{
	json_object *c = NULL;
	if (json_object_deep_copy(obj, &c, NULL) != 0)
		op_oom(0);
	json_object_object_del(op_json_at(c, "metadata"), "resourceVersion");
	json_object_object_del(op_json_at(c, "status"), "lastSeen");
	char *s = op_strdup(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN));
	json_object_put(c);
	return s;
}

static char *key_of(json_object *obj)
{
	return op_asprintf("%s/%s", op_json_str_at(obj, "metadata.namespace") ?: "",
			   op_json_str_at(obj, "metadata.name") ?: "");
}

/* Writes one event; false when the stream is over. */
static bool emit(struct watch *wt, const char *type, json_object *obj, bool *headers)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)as_wall_ms());
	json_object *md = op_json_at(obj, "metadata");
	if (md)
		op_jsets(md, "resourceVersion", rv);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	int r = as_watch_event(&b, type, wt->ri.res, obj, wt->q.table, !*headers,
			       as_wall_ms() / 1000);
	if (r == 0 && wt->q.table)
		*headers = true;
	if (r == 0)
		r = op_http_stream_write(wt->st, b.data, b.len);
	op_buf_done(&b);
	return r == 0;
}

static bool bookmark(struct watch *wt)
{
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)as_wall_ms());
	json_object *o = op_jobj();
	op_jsets(o, "kind", wt->ri.res->kind);
	op_jsets(o, "apiVersion", AS_GROUP_VERSION);
	json_object *md = op_jobj();
	op_jsets(md, "resourceVersion", rv);
	op_jset(o, "metadata", md);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	bool headers = true;
	int r = as_watch_event(&b, "BOOKMARK", wt->ri.res, o, false, !headers, 0);
	if (r == 0)
		r = op_http_stream_write(wt->st, b.data, b.len);
	op_buf_done(&b);
	json_object_put(o);
	return r == 0;
}

static bool stopping(struct watch *wt)
{
	pthread_mutex_lock(&wt->w->mu);
	bool s = wt->w->stopping;
	pthread_mutex_unlock(&wt->w->mu);
	return s || op_http_stream_gone(wt->st);
}

/* Sleeps until `until` (monotonic ms) or a stop. */
static void nap(struct watch *wt, int64_t until)
{
	pthread_mutex_lock(&wt->w->mu);
	while (!wt->w->stopping) {
		int64_t left = until - as_now_ms();
		if (left <= 0)
			break;
		if (left > 200)
			left = 200; /* also notice a client that went away */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += left * 1000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&wt->w->cond, &wt->w->mu, &ts);
		if (op_http_stream_gone(wt->st))
			break;
	}
	pthread_mutex_unlock(&wt->w->mu);
}

static void run(struct watch *wt)
{
	json_object *prev = op_jobj(); /* key -> {"c": canonical, "o": object} */
	bool first = true, headers = false;
	int64_t last_bm = as_now_ms();
	while (!stopping(wt) && as_now_ms() < wt->end_ms) {
		int64_t tick = as_now_ms();
		json_object *objs = NULL;
		struct op_err err = OP_ERR_INIT;
		if (as_collect(wt->snaps, &wt->src, &wt->ri, &wt->q, &objs, &err) < 0)
			break; /* the selector was checked at start */
		json_object *cur = op_jobj();
		bool ok = true;
		for (size_t i = 0; ok && i < json_object_array_length(objs); i++) {
			json_object *o = json_object_array_get_idx(objs, i);
			_cleanup_free_ char *key = key_of(o);
			_cleanup_free_ char *c = canonical(o);
			json_object *was = NULL;
			bool known = json_object_object_get_ex(prev, key, &was);
			const char *type = NULL;
			if (!known && (!first || wt->initial))
				type = "ADDED";
			else if (known && strcmp(op_json_str_at(was, "c") ?: "", c) != 0)
				type = "MODIFIED";
			if (type)
				ok = emit(wt, type, o, &headers);
			json_object *ent = op_jobj();
			op_jsets(ent, "c", c);
			op_jset(ent, "o", json_object_get(o));
			op_jset(cur, key, ent);
		}
		json_object_object_foreach(prev, k, v)
		{
			json_object *x = NULL;
			if (ok && !json_object_object_get_ex(cur, k, &x))
				ok = emit(wt, "DELETED", op_json_at(v, "o"), &headers);
		}
		json_object_put(objs);
		json_object_put(prev);
		prev = cur;
		first = false;
		if (ok && wt->bookmarks && as_now_ms() - last_bm >= AS_WATCH_BOOKMARK_MS) {
			ok = bookmark(wt);
			last_bm = as_now_ms();
		}
		if (!ok)
			break;
		int64_t next = tick + AS_WATCH_PERIOD_MS;
		nap(wt, next < wt->end_ms ? next : wt->end_ms);
	}
	json_object_put(prev);
}

static void *watch_main(void *arg)
{
	struct watch *wt = arg;
	run(wt);
	op_http_stream_close(wt->st);
	struct as_watches *w = wt->w;
	free(wt->label);
	free(wt);
	pthread_mutex_lock(&w->mu);
	w->n--;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int fail(struct op_http_reply *rep, unsigned code, const char *reason, const char *msg)
{
	rep->status = code;
	return as_status(&rep->body, code, reason, msg);
}

int as_watch_start(struct as_watches *w, struct as_snaps *snaps, const struct as_source *src,
		   const struct op_http_request *req, const struct as_reqinfo *ri,
		   const struct as_query *q, struct op_http_reply *rep, struct op_err *err)
{
	if (q->label && *q->label) { /* a malformed selector is a 400 now, not a dead stream */
		json_object *empty = op_jobj();
		int m = kube_selector_match(q->label, empty, err);
		json_object_put(empty);
		if (m < 0)
			return fail(rep, 400, "BadRequest", err->msg);
	}
	const char *rv = op_http_query(req, "resourceVersion");
	const char *bm = op_http_query(req, "allowWatchBookmarks");
	const char *ts = op_http_query(req, "timeoutSeconds");
	long timeout = AS_WATCH_TIMEOUT_MAX_S;
	if (ts) {
		char *end = NULL;
		long v = strtol(ts, &end, 10);
		if (end == ts || *end || v < 0)
			return fail(rep, 400, "BadRequest", "timeoutSeconds: expected a number");
		if (v > 0 && v < timeout)
			timeout = v;
	}
	pthread_mutex_lock(&w->mu);
	bool full = w->stopping || w->n >= w->max;
	if (!full)
		w->n++;
	pthread_mutex_unlock(&w->mu);
	if (full) {
		rep->header_name = "Retry-After";
		rep->header_value = "1";
		return fail(rep, 429, "TooManyRequests", "too many watches, retry");
	}
	struct watch *wt = op_calloc(1, sizeof(*wt));
	wt->w = w;
	wt->snaps = snaps;
	wt->src = *src;
	wt->ri = *ri;
	wt->q = *q;
	wt->label = q->label ? op_strdup(q->label) : NULL;
	wt->q.label = wt->label;
	wt->initial = !rv || !*rv || strcmp(rv, "0") == 0;
	wt->bookmarks = bm && strcmp(bm, "true") == 0;
	wt->end_ms = as_now_ms() + timeout * 1000;
	rep->status = 200;
	rep->content_type = "application/json";
	wt->st = op_http_reply_stream(rep);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int e = pthread_create(&t, &at, watch_main, wt);
	pthread_attr_destroy(&at);
	if (e) {
		op_http_stream_close(wt->st); /* the server's reference ends it */
		free(wt->label);
		free(wt);
		pthread_mutex_lock(&w->mu);
		w->n--;
		pthread_mutex_unlock(&w->mu);
		return op_err_set(err, -e, "cannot start a watch thread");
	}
	return 0;
}
