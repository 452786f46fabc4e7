/* kube/watch.c - watch streams: line framing, bookmarks, resume, 410, stop. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "kube/internal.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

#define WATCH_TIMEOUT_DEFAULT 300
#define WATCH_BACKOFF_MIN_MS 200
#define WATCH_BACKOFF_MAX_MS 30000

struct kube_watch {
	struct kube_client *c;      /* borrowed */
	const struct kube_kind *k;  /* borrowed, must outlive the watch */
	char *ns;
	char *label_selector;
	char *field_selector;
	int timeout_seconds;
	bool bookmarks;
	pthread_mutex_t lock;       /* guards rv */
	char *rv;
	atomic_bool stop;
	atomic_uint streams;
};

static const char *const type_names[] = {
	[KUBE_WATCH_ADDED] = "ADDED",       [KUBE_WATCH_MODIFIED] = "MODIFIED",
	[KUBE_WATCH_DELETED] = "DELETED",   [KUBE_WATCH_BOOKMARK] = "BOOKMARK",
	[KUBE_WATCH_ERROR] = "ERROR",
};

const char *kube_watch_type_name(enum kube_watch_type t)
{
	return (unsigned)t < OP_ARRAY_SIZE(type_names) ? type_names[t] : "?";
}

static int watch_type_parse(const char *s, enum kube_watch_type *ret)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(type_names); i++) {
		if (s && !strcmp(s, type_names[i])) {
			*ret = (enum kube_watch_type)i;
			return 0;
		}
	}
	return -EPROTO;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? op_strdup(s) : NULL;
}

int kube_watch_new(struct kube_client *c, const struct kube_kind *k, const char *ns,
		   const struct kube_watch_opts *opts, struct kube_watch **ret_watch,
		   struct op_err *err)
{
	if (!c || !k)
		return op_err_set(err, -EINVAL, "watch: no client or kind");
	struct kube_watch *w = op_calloc(1, sizeof(*w));
	w->c = c;
	w->k = k;
	w->ns = dup_or_null(ns);
	w->bookmarks = true;
	w->timeout_seconds = WATCH_TIMEOUT_DEFAULT;
	if (opts) {
		w->label_selector = dup_or_null(opts->label_selector);
		w->field_selector = dup_or_null(opts->field_selector);
		w->rv = dup_or_null(opts->resource_version);
		if (opts->timeout_seconds > 0)
			w->timeout_seconds = opts->timeout_seconds;
		w->bookmarks = !opts->no_bookmarks;
	}
	pthread_mutex_init(&w->lock, NULL);
	atomic_init(&w->stop, false);
	atomic_init(&w->streams, 0);
	*ret_watch = w;
	return 0;
}

struct kube_watch *kube_watch_free(struct kube_watch *w)
{
	if (!w)
		return NULL;
	pthread_mutex_destroy(&w->lock);
	free(w->ns);
	free(w->label_selector);
	free(w->field_selector);
	free(w->rv);
	free(w);
	return NULL;
}

char *kube_watch_resource_version(struct kube_watch *w)
{
	pthread_mutex_lock(&w->lock);
	char *rv = w->rv ? op_strdup(w->rv) : NULL;
	pthread_mutex_unlock(&w->lock);
	return rv;
}

void kube_watch_set_resource_version(struct kube_watch *w, const char *rv)
{
	char *n = dup_or_null(rv);
	pthread_mutex_lock(&w->lock);
	free(w->rv);
	w->rv = n;
	pthread_mutex_unlock(&w->lock);
}

void kube_watch_stop(struct kube_watch *w)
{
	atomic_store(&w->stop, true);
}

bool kube_watch_stopped(struct kube_watch *w)
{
	return atomic_load(&w->stop);
}

unsigned kube_watch_streams(struct kube_watch *w)
{
	return atomic_load(&w->streams);
}

/* ---- one stream ---- */

enum stream_end {
	END_OK,        /* server ended the stream normally: resume */
	END_TRANSIENT, /* transport error, 429/5xx, ERROR event: resume with back-off */
	END_FATAL,     /* return rc to the caller */
};

struct stream {
	struct kube_watch *w;
	CURL *h;
	kube_watch_fn fn;
	void *ud;
	struct op_buf line;
	struct op_buf errbody;
	long http;
	bool checked;
	int rc;             /* fatal code set by the callbacks */
	bool transient;     /* an ERROR event other than 410 */
	struct op_err *err;
};

static int process_line(struct stream *s, const char *p, size_t len)
{
	size_t i = 0;
	while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
		i++;
	if (i == len)
		return 0; /* keep-alive / blank line */
	_cleanup_(op_json_putp) json_object *ev = NULL;
	int r = op_json_parse(p, len, OP_JSON_MAX_DEPTH, &ev, s->err);
	if (r < 0)
		return op_err_prefix(s->err, "watch %s: event", s->w->k->resource);
	enum kube_watch_type t;
	json_object *obj = json_object_object_get(ev, "object");
	if (watch_type_parse(op_json_str_at(ev, "type"), &t) < 0 || !obj ||
	    !json_object_is_type(obj, json_type_object))
		return op_err_set(s->err, -EPROTO, "watch %s: malformed event", s->w->k->resource);
	if (t == KUBE_WATCH_ERROR) {
		int64_t code = 0;
		json_object *cj = json_object_object_get(obj, "code");
		if (cj)
			code = json_object_get_int64(cj);
		if (code == 410)
			return op_err_set(s->err, -ETIME, "watch %s: %s (410)", s->w->k->resource,
					  op_json_str_at(obj, "message") ? op_json_str_at(obj, "message")
									 : "Gone");
		s->transient = true;
	}
	r = s->fn(s->ud, t, obj);
	if (r < 0)
		return op_err_set(s->err, r, "watch %s: handler failed on %s event",
				  s->w->k->resource, kube_watch_type_name(t));
	if (t != KUBE_WATCH_ERROR) {
		const char *rv = kube_obj_resource_version(obj);
		if (rv && *rv)
			kube_watch_set_resource_version(s->w, rv);
	}
	return s->transient ? 1 : 0;
}

static size_t stream_write(char *p, size_t size, size_t n, void *ud)
{
	struct stream *s = ud;
	size_t len = size * n;
	if (!s->checked) {
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->http);
		s->checked = true;
		kube__count(s->w->c, "GET", true, s->http); /* when the stream starts */
	}
	if (s->http != 200) {
		(void)!op_buf_add(&s->errbody, p, len); /* capped; overflow just truncates */
		return len;
	}
	size_t off = 0;
	while (off < len) {
		const char *nl = memchr(p + off, '\n', len - off);
		size_t seg = nl ? (size_t)(nl - (p + off)) : len - off;
		if (op_buf_add(&s->line, p + off, seg) < 0) {
			s->rc = op_err_set(s->err, -EMSGSIZE, "watch %s: event larger than %u bytes",
					   s->w->k->resource, (unsigned)OP_BUF_MAX_WATCH_EVENT);
			return 0;
		}
		off += seg;
		if (!nl)
			break;
		off++; /* the newline */
		int r = process_line(s, s->line.data ? s->line.data : "", s->line.len);
		op_buf_reset(&s->line);
		if (r < 0) {
			s->rc = r;
			return 0;
		}
		if (r > 0)
			return 0; /* non-410 ERROR event: end this stream, resume */
	}
	return len;
}

int kube__watch_replay(const struct kube_kind *k, const struct kube__chunk *chunks, size_t n,
		       kube_watch_fn fn, void *ud, char **ret_rv, struct op_err *err)
{
	struct kube_watch w = { .k = k };
	pthread_mutex_init(&w.lock, NULL);
	atomic_init(&w.stop, false);
	atomic_init(&w.streams, 1);
	struct stream s = {
		.w = &w, .fn = fn, .ud = ud, .err = err, .http = 200, .checked = true,
		.line = OP_BUF_INIT(OP_BUF_MAX_WATCH_EVENT),
		.errbody = OP_BUF_INIT(OP_BUF_MAX_SMALL),
	};
	bool ended = false;
	for (size_t i = 0; i < n && !ended; i++)
		ended = stream_write((char *)chunks[i].data, 1, chunks[i].len, &s) != chunks[i].len;
	int rc = 0;
	if (s.rc < 0) {
		rc = s.rc;
	} else if (s.transient) {
		rc = 1;
	} else if (s.line.len) {
		/* as stream_once: an ERROR event as the last line ends normally */
		rc = process_line(&s, s.line.data, s.line.len);
		rc = rc > 0 ? 0 : rc;
	}
	op_buf_done(&s.line);
	op_buf_done(&s.errbody);
	pthread_mutex_destroy(&w.lock);
	*ret_rv = w.rv;
	return rc;
}

static int stream_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct stream *s = ud;
	return atomic_load(&s->w->stop) ? 1 : 0;
}

static int build_query(struct kube_watch *w, struct op_buf *q)
{
	int r = op_buf_addf(q, "watch=1&timeoutSeconds=%d", w->timeout_seconds);
	if (r >= 0 && w->bookmarks)
		r = op_buf_adds(q, "&allowWatchBookmarks=true");
	_cleanup_free_ char *rv = kube_watch_resource_version(w);
	const struct {
		const char *key;
		const char *val;
	} params[] = {
		{ "resourceVersion", rv },
		{ "labelSelector", w->label_selector },
		{ "fieldSelector", w->field_selector },
	};
	for (size_t i = 0; r >= 0 && i < OP_ARRAY_SIZE(params); i++) {
		if (!params[i].val)
			continue;
		r = op_buf_addf(q, "&%s=", params[i].key);
		if (r >= 0)
			r = kube__escape(q, params[i].val);
	}
	return r;
}

static enum stream_end stream_once(struct kube_watch *w, kube_watch_fn fn, void *ud, int *ret_rc,
				   struct op_err *err)
{
	struct kube_client *c = w->c;
	_cleanup_(op_buf_donep) struct op_buf url = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_adds(&url, c->cfg->server);
	if (r >= 0)
		r = kube_path(&url, w->k, w->ns, NULL, NULL);
	if (r >= 0)
		r = op_buf_addc(&url, '?');
	if (r >= 0)
		r = build_query(w, &url);
	if (r < 0) {
		*ret_rc = op_err_set(err, -EINVAL, "watch %s: URL too long", w->k->resource);
		return END_FATAL;
	}
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *hdrs = NULL;
	CURL *h = NULL;
	r = kube__easy_new(c, "GET", op_buf_str(&url), NULL, errbuf, &hdrs, &h, err);
	if (r < 0) {
		*ret_rc = r;
		return END_FATAL;
	}
	struct stream s = {
		.w = w, .h = h, .fn = fn, .ud = ud, .err = err,
		.line = OP_BUF_INIT(OP_BUF_MAX_WATCH_EVENT),
		.errbody = OP_BUF_INIT(OP_BUF_MAX_SMALL),
	};
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stream_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
	/* Guard in case the server ignores timeoutSeconds. */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(w->timeout_seconds + 30) * 1000L);
	kube__throttle(c, false);
	kube__stat_add(c, false);
	atomic_fetch_add(&w->streams, 1);
	CURLcode cc = curl_easy_perform(h);
	if (!s.checked) { /* no body came: counted now (otherwise at its first byte) */
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s.http);
		kube__count(c, "GET", true, cc == CURLE_OK ? s.http : 0);
	}
	kube__easy_done(c, h, false); /* a stream's connection is not kept */
	curl_slist_free_all(hdrs);

	enum stream_end end;
	if (s.rc < 0) {
		*ret_rc = s.rc;
		end = END_FATAL;
	} else if (atomic_load(&w->stop)) {
		*ret_rc = op_err_set(err, -ECANCELED, "watch %s: stopped", w->k->resource);
		end = END_FATAL;
	} else if (s.transient) {
		*ret_rc = op_err_set(err, -EIO, "watch %s: ERROR event", w->k->resource);
		end = END_TRANSIENT;
	} else if (cc != CURLE_OK) {
		*ret_rc = op_err_set(err, kube__curl_errno(cc), "watch %s: %s", w->k->resource,
				     errbuf[0] ? errbuf : curl_easy_strerror(cc));
		end = END_TRANSIENT;
	} else if (s.http != 200) {
		*ret_rc = kube__http_error(s.http, s.errbody.data, s.errbody.len, "watch", w->k,
					   w->ns, NULL, err);
		end = (s.http == 429 || s.http >= 500) ? END_TRANSIENT : END_FATAL;
	} else {
		/* A last event without a trailing newline. */
		int pr = s.line.len ? process_line(&s, s.line.data, s.line.len) : 0;
		if (pr < 0) {
			*ret_rc = pr;
			end = END_FATAL;
		} else {
			*ret_rc = 0;
			end = END_OK;
		}
	}
	op_buf_done(&s.line);
	op_buf_done(&s.errbody);
	return end;
}

/* Sleeps ms in slices, returning early when stopped. */
static void sleep_unless_stopped(struct kube_watch *w, long ms)
{
	while (ms > 0 && !atomic_load(&w->stop)) {
		long step = ms < 100 ? ms : 100;
		kube__sleep_ms(step);
		ms -= step;
	}
}

int kube_watch_run(struct kube_watch *w, kube_watch_fn fn, void *userdata, int max_failures,
		   struct op_err *err)
{
	int failures = 0;
	long backoff = WATCH_BACKOFF_MIN_MS;
	for (;;) {
		if (atomic_load(&w->stop))
			return op_err_set(err, -ECANCELED, "watch %s: stopped", w->k->resource);
		struct op_err local = OP_ERR_INIT;
		int rc = 0;
		int64_t t0 = kube__now_ms();
		enum stream_end end = stream_once(w, fn, userdata, &rc, &local);
		if (end == END_FATAL)
			return op_err_set(err, rc, "%s", local.msg);
		if (end == END_OK) {
			if (max_failures == -1)
				return 0;
			failures = 0;
			/* Resume from the last rv; a stream that ends at once is
			 * resumed with back-off so a broken server is not hammered. */
			if (kube__now_ms() - t0 < 1000) {
				sleep_unless_stopped(w, backoff);
				backoff = backoff * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS
									     : backoff * 2;
			} else {
				backoff = WATCH_BACKOFF_MIN_MS;
			}
			continue;
		}
		failures++;
		if (max_failures > 0 && failures >= max_failures)
			return op_err_set(err, rc, "%s", local.msg);
		if (max_failures == -1)
			return op_err_set(err, rc, "%s", local.msg);
		sleep_unless_stopped(w, backoff);
		backoff = backoff * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS : backoff * 2;
	}
}
