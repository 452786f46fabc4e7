/* kube/informer.c - list + watch into an in-memory cache, one thread each. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/log.h"

#define INFORMER_PAGE_DEFAULT 500
#define INFORMER_BACKOFF_DEFAULT_MS 1000
#define INFORMER_BACKOFF_MAX_MS 30000

struct kube_informer {
	struct kube_client *c;     /* borrowed */
	const struct kube_kind *k; /* borrowed */
	char *ns;
	char *label_selector;
	char *field_selector;
	long page_size;
	long backoff_ms;
	const char *const *keep;   /* borrowed projection, NULL = whole objects */
	char *index_label;         /* owned, NULL = none (kube__entry.index) */
	struct kube_informer_handlers h;
	struct kube_watch *w;      /* owned */

	pthread_rwlock_t cache_lock;
	struct kube__cache cache;  /* compact entries by "ns/name"; only the
				    * informer thread changes it (write lock) */

	pthread_mutex_t lock;      /* guards below; cond signals synced/stop */
	pthread_cond_t cond;
	char *rv;
	bool synced;
	bool started;
	bool joined;
	atomic_bool stop;
	unsigned lists;
	pthread_t thread;
};

static char *key_of(const char *ns, const char *name)
{
	return op_asprintf("%s/%s", ns ? ns : "", name ? name : "");
}

static char *dup_or_null(const char *s)
{
	return s && *s ? op_strdup(s) : NULL;
}

/* A private tree of a cached entry for handlers (NULL only on a parse
 * failure, logged by kube__entry_parse). */
static json_object *parsed(const struct kube__entry *e)
{
	return e ? kube__entry_parse(e) : NULL;
}

int kube_informer_new(struct kube_client *c, const struct kube_kind *k,
		      const struct kube_informer_opts *opts,
		      const struct kube_informer_handlers *handlers,
		      struct kube_informer **ret_inf, struct op_err *err)
{
	static const struct kube_informer_opts none = { 0 };
	if (!opts)
		opts = &none;
	struct kube_informer *inf = op_calloc(1, sizeof(*inf));
	inf->c = c;
	inf->k = k;
	inf->ns = dup_or_null(opts->ns);
	inf->label_selector = dup_or_null(opts->label_selector);
	inf->field_selector = dup_or_null(opts->field_selector);
	inf->page_size = opts->page_size > 0 ? opts->page_size : INFORMER_PAGE_DEFAULT;
	inf->backoff_ms = opts->relist_backoff_ms > 0 ? opts->relist_backoff_ms
						      : INFORMER_BACKOFF_DEFAULT_MS;
	inf->keep = opts->keep;
	if (handlers)
		inf->h = *handlers;
	inf->index_label = dup_or_null(opts->index_label);
	const struct kube_watch_opts wo = { .label_selector = opts->label_selector,
					    .field_selector = opts->field_selector,
					    .timeout_seconds = opts->watch_timeout_seconds };
	int r = kube_watch_new(c, k, opts->ns, &wo, &inf->w, err);
	if (r < 0) {
		free(inf->ns);
		free(inf->label_selector);
		free(inf->field_selector);
		free(inf->index_label);
		free(inf);
		return r;
	}
	pthread_rwlock_init(&inf->cache_lock, NULL);
	pthread_mutex_init(&inf->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inf->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&inf->stop, false);
	*ret_inf = inf;
	return 0;
}

static void set_rv(struct kube_informer *inf, const char *rv)
{
	char *n = dup_or_null(rv);
	pthread_mutex_lock(&inf->lock);
	free(inf->rv);
	inf->rv = n;
	pthread_mutex_unlock(&inf->lock);
}

/* Waits ms or until stopped. */
static void wait_stop(struct kube_informer *inf, long ms)
{
	kube__wait_stop(&inf->lock, &inf->cond, &inf->stop, ms);
}

/* The entry a cache keeps for obj (borrowed, private to this thread). */
static struct kube__entry *entry_of(struct kube_informer *inf, json_object *obj)
{
	if (!inf->keep)
		return kube__entry_new(obj, inf->index_label);
	_cleanup_(op_json_putp) json_object *proj = kube_project(obj, inf->keep);
	return kube__entry_new(proj, inf->index_label);
}

static bool same_rv(const struct kube__entry *a, const struct kube__entry *b)
{
	return a->rv && b->rv && strcmp(a->rv, b->rv) == 0;
}

/* Handlers of a relist's diff, no lock held: fresh is the live cache (only
 * this thread changes it), old the replaced one (private now). Both sorted,
 * so one merge walk. Handlers get trees parsed from the entries. */
static void relist_diff(struct kube_informer *inf, const struct kube__cache *fresh,
			const struct kube__cache *old)
{
	const struct kube_informer_handlers *h = &inf->h;
	size_t i = 0, j = 0;
	while (i < fresh->n || j < old->n) {
		int d = i == fresh->n ? 1 : j == old->n ? -1
							: strcmp(fresh->v[i]->key, old->v[j]->key);
		json_object *a = NULL, *b = NULL;
		if (d < 0) {
			if (h->on_add && (a = parsed(fresh->v[i])))
				h->on_add(h->userdata, a);
			i++;
		} else if (d > 0) {
			if (h->on_delete && (b = parsed(old->v[j])))
				h->on_delete(h->userdata, b);
			j++;
		} else {
			if (h->on_update && !same_rv(fresh->v[i], old->v[j]) &&
			    (a = parsed(fresh->v[i])) && (b = parsed(old->v[j])))
				h->on_update(h->userdata, b, a);
			i++;
			j++;
		}
		json_object_put(a);
		json_object_put(b);
	}
}

/* Full list: replaces the cache and fires add/update/delete for the diff. */
static int relist(struct kube_informer *inf, struct op_err *err)
{
	const struct kube_list_opts lo = { .label_selector = inf->label_selector,
					   .field_selector = inf->field_selector,
					   .limit = inf->page_size };
	_cleanup_(op_json_putp) json_object *list = NULL;
	int r = kube_list_all(inf->c, inf->k, inf->ns, &lo, &list, err);
	if (r < 0)
		return r;
	json_object *items = json_object_object_get(list, "items");
	size_t n = json_object_array_length(items), m = 0;
	struct kube__entry **v = op_malloc((n ? n : 1) * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(items, i);
		if (json_object_is_type(o, json_type_object))
			v[m++] = entry_of(inf, o);
	}
	/* the list's own tree (the biggest thing here) goes before the diff */
	_cleanup_free_ char *rv = dup_or_null(op_json_str_at(list, "metadata.resourceVersion"));
	json_object_put(TAKE_PTR(list));
	struct kube__cache fresh = { 0 };
	kube__cache_adopt(&fresh, v, m);
	pthread_rwlock_wrlock(&inf->cache_lock);
	struct kube__cache old = inf->cache;
	inf->cache = fresh;
	pthread_rwlock_unlock(&inf->cache_lock);
	relist_diff(inf, &inf->cache, &old);
	kube__cache_clear(&old);

	set_rv(inf, rv);
	kube_watch_set_resource_version(inf->w, rv);
	pthread_mutex_lock(&inf->lock);
	bool first = !inf->synced;
	inf->synced = true;
	inf->lists++;
	pthread_cond_broadcast(&inf->cond);
	pthread_mutex_unlock(&inf->lock);
	if (first && inf->h.on_synced)
		inf->h.on_synced(inf->h.userdata);
	return 0;
}

static int on_event(void *ud, enum kube_watch_type t, json_object *obj)
{
	struct kube_informer *inf = ud;
	const char *rv = kube_obj_resource_version(obj);
	if (t == KUBE_WATCH_BOOKMARK || t == KUBE_WATCH_ERROR) {
		if (t == KUBE_WATCH_BOOKMARK && rv)
			set_rv(inf, rv);
		return 0;
	}
	if (!json_object_is_type(obj, json_type_object))
		return 0; /* watch.c delivers objects only */
	struct kube__entry *e = NULL, *prev = NULL;
	_cleanup_(op_json_putp) json_object *proj = NULL;
	if (t != KUBE_WATCH_DELETED) {
		/* the event's own tree is freed by the watch: the cache keeps the
		 * projection's text; handlers get the projection itself */
		if (inf->keep)
			obj = proj = kube_project(obj, inf->keep);
		e = kube__entry_new(obj, inf->index_label);
	}
	pthread_rwlock_wrlock(&inf->cache_lock);
	if (e) {
		prev = kube__cache_put(&inf->cache, e);
	} else {
		_cleanup_free_ char *key = key_of(kube_obj_namespace(obj), kube_obj_name(obj));
		prev = kube__cache_del(&inf->cache, key);
	}
	pthread_rwlock_unlock(&inf->cache_lock);
	if (rv)
		set_rv(inf, rv);
	/* prev is out of the cache: private to this thread */
	_cleanup_(op_json_putp) json_object *old = NULL;
	if (t == KUBE_WATCH_DELETED) {
		if (inf->h.on_delete) {
			/* the last cached state, else the event's object projected */
			old = prev ? parsed(prev) : inf->keep ? kube_project(obj, inf->keep) : NULL;
			if (old || !prev)
				inf->h.on_delete(inf->h.userdata, old ? old : obj);
		}
	} else if (prev) {
		if (inf->h.on_update && (old = parsed(prev)))
			inf->h.on_update(inf->h.userdata, old, obj);
	} else if (inf->h.on_add) {
		inf->h.on_add(inf->h.userdata, obj);
	}
	free(prev);
	return 0;
}

static void *informer_main(void *arg)
{
	struct kube_informer *inf = arg;
	long backoff = inf->backoff_ms;
	long watch_backoff = inf->backoff_ms; /* grows while watches keep failing */
	while (!atomic_load(&inf->stop)) {
		struct op_err err = OP_ERR_INIT;
		int r = relist(inf, &err);
		if (r < 0) {
			op_log_warn("informer list failed, retrying", "resource", inf->k->resource,
				    "error", err.msg);
			wait_stop(inf, backoff);
			backoff = backoff * 2 > INFORMER_BACKOFF_MAX_MS ? INFORMER_BACKOFF_MAX_MS
									 : backoff * 2;
			continue;
		}
		backoff = inf->backoff_ms;
		err = OP_ERR_INIT;
		r = kube_watch_run(inf->w, on_event, inf, 0, &err);
		if (r == -ECANCELED)
			break;
		if (r == -ETIME) {
			op_log_debug("informer watch expired, relisting", "resource",
				     inf->k->resource);
			watch_backoff = inf->backoff_ms;
			continue;
		}
		op_log_warn("informer watch failed, relisting", "resource", inf->k->resource,
			    "error", err.msg);
		wait_stop(inf, watch_backoff);
		watch_backoff = watch_backoff * 2 > INFORMER_BACKOFF_MAX_MS ? INFORMER_BACKOFF_MAX_MS
									   : watch_backoff * 2;
	}
	return NULL;
}

int kube_informer_start(struct kube_informer *inf, struct op_err *err)
{
	pthread_mutex_lock(&inf->lock);
	if (inf->started) {
		pthread_mutex_unlock(&inf->lock);
		return op_err_set(err, -EALREADY, "informer %s: already started", inf->k->resource);
	}
	int r = pthread_create(&inf->thread, NULL, informer_main, inf);
	if (r == 0)
		inf->started = true;
	pthread_mutex_unlock(&inf->lock);
	if (r != 0)
		return op_err_set(err, -r, "informer %s: cannot start thread: %s", inf->k->resource,
				  strerror(r));
	return 0;
}

bool kube_informer_has_synced(struct kube_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	bool s = inf->synced;
	pthread_mutex_unlock(&inf->lock);
	return s;
}

int kube_informer_wait_synced(struct kube_informer *inf, long timeout_ms)
{
	struct timespec ts;
	kube__deadline(&ts, timeout_ms);
	int r = 0;
	pthread_mutex_lock(&inf->lock);
	while (!inf->synced) {
		if (atomic_load(&inf->stop)) {
			r = -ECANCELED;
			break;
		}
		if (pthread_cond_timedwait(&inf->cond, &inf->lock, &ts) == ETIMEDOUT) {
			r = inf->synced ? 0 : -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&inf->lock);
	return r;
}

json_object *kube_informer_get(struct kube_informer *inf, const char *ns, const char *name)
{
	_cleanup_free_ char *key = key_of(ns, name);
	json_object *copy = NULL;
	bool found;
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t i = kube__cache_find(&inf->cache, key, &found);
	if (found)
		copy = kube__entry_parse(inf->cache.v[i]);
	pthread_rwlock_unlock(&inf->cache_lock);
	return copy;
}

json_object *kube_informer_list(struct kube_informer *inf, const char *ns)
{
	return kube_informer_list_filter(inf, ns, NULL, NULL);
}

struct sel_ctx {
	const char *selector;
};

static bool match_selector(void *ud, json_object *obj)
{
	struct sel_ctx *s = ud;
	return kube_selector_match(s->selector, obj, NULL) == 1;
}

json_object *kube_informer_list_selected(struct kube_informer *inf, const char *ns,
					 const char *selector, struct op_err *err)
{
	/* Validate once so a bad selector is an error, not an empty list. */
	int r = kube_selector_match(selector, NULL, err);
	if (r < 0)
		return NULL;
	struct sel_ctx ctx = { selector };
	return kube_informer_list_filter(inf, ns, match_selector, &ctx);
}

static const char *label_of(json_object *obj, const char *key)
{
	json_object *labels = op_json_at(obj, "metadata.labels"), *v = NULL;
	if (!json_object_is_type(labels, json_type_object) ||
	    !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The entries of ns (NULL = all), sorted, whose index is value (value NULL =
 * any), parsed and kept when match says so. */
static json_object *list_where(struct kube_informer *inf, const char *ns, const char *label,
			       const char *value, bool (*match)(void *userdata, json_object *obj),
			       void *userdata)
{
	json_object *arr = op_jarr();
	_cleanup_free_ char *prefix = ns ? op_asprintf("%s/", ns) : NULL;
	/* an informer without that index parses every candidate to compare */
	bool indexed = label && inf->index_label && !strcmp(label, inf->index_label);
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t lo, hi;
	kube__cache_range(&inf->cache, prefix, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		const struct kube__entry *e = inf->cache.v[i];
		if (indexed && (!e->index || strcmp(e->index, value) != 0))
			continue;
		json_object *o = kube__entry_parse(e);
		if (!o)
			continue; /* logged; not an allocation failure of the caller's */
		const char *l = label && !indexed ? label_of(o, label) : NULL;
		if ((label && !indexed && (!l || strcmp(l, value) != 0)) ||
		    (match && !match(userdata, o))) {
			json_object_put(o);
			continue;
		}
		op_jpush(arr, o);
	}
	pthread_rwlock_unlock(&inf->cache_lock);
	return arr;
}

json_object *kube_informer_list_except(struct kube_informer *inf, const char *ns,
				       bool (*skip)(void *userdata, const char *key, const char *rv),
				       void *userdata)
{
	json_object *arr = op_jarr();
	_cleanup_free_ char *prefix = ns ? op_asprintf("%s/", ns) : NULL;
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t lo, hi;
	kube__cache_range(&inf->cache, prefix, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		const struct kube__entry *e = inf->cache.v[i];
		if (skip(userdata, e->key, e->rv ? e->rv : ""))
			continue;
		json_object *o = kube__entry_parse(e);
		if (o)
			op_jpush(arr, o);
	}
	pthread_rwlock_unlock(&inf->cache_lock);
	return arr;
}

json_object *kube_informer_list_filter(struct kube_informer *inf, const char *ns,
				       bool (*match)(void *userdata, json_object *obj),
				       void *userdata)
{
	return list_where(inf, ns, NULL, NULL, match, userdata);
}

json_object *kube_informer_list_labeled(struct kube_informer *inf, const char *ns,
					const char *label, const char *value,
					bool (*match)(void *userdata, json_object *obj),
					void *userdata)
{
	if (!label || !value)
		return list_where(inf, ns, NULL, NULL, match, userdata);
	return list_where(inf, ns, label, value, match, userdata);
}

size_t kube_informer_count(struct kube_informer *inf)
{
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t n = inf->cache.n;
	pthread_rwlock_unlock(&inf->cache_lock);
	return n;
}

char *kube_informer_resource_version(struct kube_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	char *rv = inf->rv ? op_strdup(inf->rv) : NULL;
	pthread_mutex_unlock(&inf->lock);
	return rv;
}

unsigned kube_informer_lists(struct kube_informer *inf)
{
	pthread_mutex_lock(&inf->lock);
	unsigned n = inf->lists;
	pthread_mutex_unlock(&inf->lock);
	return n;
}

void kube_informer_stop(struct kube_informer *inf)
{
	if (!inf)
		return;
	atomic_store(&inf->stop, true);
	kube_watch_stop(inf->w);
	pthread_mutex_lock(&inf->lock);
	pthread_cond_broadcast(&inf->cond);
	bool join = inf->started && !inf->joined;
	inf->joined = true;
	pthread_mutex_unlock(&inf->lock);
	if (join)
		pthread_join(inf->thread, NULL);
}

struct kube_informer *kube_informer_free(struct kube_informer *inf)
{
	if (!inf)
		return NULL;
	kube_informer_stop(inf);
	kube_watch_free(inf->w);
	kube__cache_clear(&inf->cache);
	pthread_rwlock_destroy(&inf->cache_lock);
	pthread_mutex_destroy(&inf->lock);
	pthread_cond_destroy(&inf->cond);
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	free(inf->index_label);
	free(inf->rv);
	free(inf);
	return NULL;
}
