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
	struct kube_informer_handlers h;
	struct kube_watch *w;      /* owned */

	pthread_rwlock_t cache_lock;
	json_object *cache;        /* owned; object keyed "ns/name" -> object */

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

static char *obj_key(json_object *obj)
{
	return key_of(kube_obj_namespace(obj), kube_obj_name(obj));
}

static char *dup_or_null(const char *s)
{
	return s && *s ? op_strdup(s) : NULL;
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
	inf->cache = json_object_new_object();
	if (!inf->cache) {
		free(inf);
		return op_err_set(err, -ENOMEM, "informer %s: out of memory", k->resource);
	}
	const struct kube_watch_opts wo = { .label_selector = opts->label_selector,
					    .field_selector = opts->field_selector,
					    .timeout_seconds = opts->watch_timeout_seconds };
	int r = kube_watch_new(c, k, opts->ns, &wo, &inf->w, err);
	if (r < 0) {
		json_object_put(inf->cache);
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
	_cleanup_(op_json_putp) json_object *fresh = json_object_new_object();
	if (!fresh)
		return op_err_set(err, -ENOMEM, "informer %s: out of memory", inf->k->resource);
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *o = json_object_array_get_idx(items, i);
		_cleanup_free_ char *key = obj_key(o);
		if (op_json_set(fresh, key, inf->keep ? kube_project(o, inf->keep)
						      : json_object_get(o)) < 0)
			return op_err_set(err, -ENOMEM, "informer %s: out of memory",
					  inf->k->resource);
	}
	pthread_rwlock_wrlock(&inf->cache_lock);
	json_object *old = inf->cache;
	inf->cache = json_object_get(fresh);
	pthread_rwlock_unlock(&inf->cache_lock);

	/* Callbacks with no lock held; `old` is now private to this thread. */
	json_object_object_foreach(fresh, key, obj) {
		json_object *prev = json_object_object_get(old, key);
		if (!prev) {
			if (inf->h.on_add)
				inf->h.on_add(inf->h.userdata, obj);
		} else {
			const char *a = kube_obj_resource_version(prev);
			const char *b = kube_obj_resource_version(obj);
			if ((!a || !b || strcmp(a, b) != 0) && inf->h.on_update)
				inf->h.on_update(inf->h.userdata, prev, obj);
		}
	}
	json_object_object_foreach(old, okey, oobj) {
		if (!json_object_object_get_ex(fresh, okey, NULL) && inf->h.on_delete)
			inf->h.on_delete(inf->h.userdata, oobj);
	}
	json_object_put(old);

	const char *rv = op_json_str_at(list, "metadata.resourceVersion");
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
	_cleanup_free_ char *key = obj_key(obj);
	/* the event's own tree is freed by the watch: keep a compact projection */
	_cleanup_(op_json_putp) json_object *proj = inf->keep ? kube_project(obj, inf->keep) : NULL;
	if (proj)
		obj = proj;
	json_object *prev = NULL;
	pthread_rwlock_wrlock(&inf->cache_lock);
	json_object *cur = json_object_object_get(inf->cache, key);
	if (cur)
		prev = json_object_get(cur); /* only this thread touches refcounts */
	int r = 0;
	if (t == KUBE_WATCH_DELETED)
		json_object_object_del(inf->cache, key);
	else
		r = op_json_set(inf->cache, key, json_object_get(obj));
	pthread_rwlock_unlock(&inf->cache_lock);
	if (r < 0) {
		json_object_put(prev);
		return -ENOMEM;
	}
	if (rv)
		set_rv(inf, rv);
	if (t == KUBE_WATCH_DELETED) {
		if (inf->h.on_delete)
			inf->h.on_delete(inf->h.userdata, prev ? prev : obj);
	} else if (prev) {
		if (inf->h.on_update)
			inf->h.on_update(inf->h.userdata, prev, obj);
	} else if (inf->h.on_add) {
		inf->h.on_add(inf->h.userdata, obj);
	}
	json_object_put(prev);
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
	pthread_rwlock_rdlock(&inf->cache_lock);
	json_object *o = json_object_object_get(inf->cache, key);
	if (o && json_object_deep_copy(o, &copy, NULL) < 0)
		copy = NULL;
	pthread_rwlock_unlock(&inf->cache_lock);
	return copy;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
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

json_object *kube_informer_list_filter(struct kube_informer *inf, const char *ns,
				       bool (*match)(void *userdata, json_object *obj),
				       void *userdata)
{
	json_object *arr = json_object_new_array();
	if (!arr)
		return NULL;
	_cleanup_free_ char *prefix = ns ? op_asprintf("%s/", ns) : NULL;
	size_t plen = prefix ? strlen(prefix) : 0;
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t n = (size_t)json_object_object_length(inf->cache), cnt = 0;
	const char **keys = op_calloc(n ? n : 1, sizeof(*keys));
	json_object_object_foreach(inf->cache, key, val) {
		(void)val;
		if (!prefix || !strncmp(key, prefix, plen))
			keys[cnt++] = key;
	}
	qsort(keys, cnt, sizeof(*keys), cmp_str);
	for (size_t i = 0; i < cnt; i++) {
		json_object *copy = NULL;
		json_object *o = json_object_object_get(inf->cache, keys[i]);
		if (match && !match(userdata, o))
			continue;
		if (json_object_deep_copy(o, &copy, NULL) < 0 ||
		    op_json_append(arr, copy) < 0) {
			json_object_put(arr);
			arr = NULL;
			break;
		}
	}
	pthread_rwlock_unlock(&inf->cache_lock);
	free(keys);
	return arr;
}

size_t kube_informer_count(struct kube_informer *inf)
{
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t n = (size_t)json_object_object_length(inf->cache);
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
	json_object_put(inf->cache);
	pthread_rwlock_destroy(&inf->cache_lock);
	pthread_mutex_destroy(&inf->lock);
	pthread_cond_destroy(&inf->cond);
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	free(inf->rv);
	free(inf);
	return NULL;
}
