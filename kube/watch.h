/* kube/watch.h - watch streams and the informer cache.
 *
 * A watch is one long GET ...?watch=true&allowWatchBookmarks=true streamed by
 * libcurl: newline-separated JSON events ({"type":..., "object":...}), each
 * line capped at OP_BUF_MAX_WATCH_EVENT, lines may be split across chunks.
 *
 * Stop: kube_watch_stop() / kube_informer_stop() may be called from any
 * thread; the stream notices within ~1 s (curl progress callback) and the
 * call returns -ECANCELED.
 */
#ifndef PGOP_KUBE_WATCH_H
#define PGOP_KUBE_WATCH_H

#include <json-c/json.h>
#include <stdbool.h>

#include "kube/kube.h"
#include "support/err.h"

enum kube_watch_type {
	KUBE_WATCH_ADDED,
	KUBE_WATCH_MODIFIED,
	KUBE_WATCH_DELETED,
	KUBE_WATCH_BOOKMARK,
	KUBE_WATCH_ERROR, /* object is a Status; never delivered for code 410 (see below) */
};

/* "ADDED"... for messages. */
const char *kube_watch_type_name(enum kube_watch_type t);

/* Event callback: obj is borrowed (json_object_get to keep it). Return 0 to
 * continue, a negative errno to end the watch with that code. BOOKMARK
 * events are delivered too (obj carries only metadata.resourceVersion). */
typedef int (*kube_watch_fn)(void *userdata, enum kube_watch_type type, json_object *obj);

struct kube_watch_opts {
	const char *label_selector;   /* NULL = all */
	const char *field_selector;   /* NULL = all */
	const char *resource_version; /* start after this rv; NULL/"" = "most recent" */
	int timeout_seconds;          /* server-side watch timeout; 0 = 300 */
	bool no_bookmarks;            /* default false: allowWatchBookmarks=true */
};

struct kube_watch;

/* Creates a watch on kind in ns (NULL = all namespaces). Strings in opts are
 * copied. Nothing is sent until kube_watch_run(). */
OP_MUST_CHECK int kube_watch_new(struct kube_client *c, const struct kube_kind *k, const char *ns,
				 const struct kube_watch_opts *opts, struct kube_watch **ret_watch,
				 struct op_err *err);

/* Runs the watch, calling fn for every event, until stopped or an error:
 * - a stream that ends (server timeout, connection closed) is resumed from
 *   the last resourceVersion seen (events or bookmarks), with back-off on
 *   repeated failures (transport errors are retried, max_failures times in a
 *   row; 0 = forever);
 * - 410 Gone (HTTP 410, or an ERROR event with code 410) returns -ETIME: the
 *   caller must relist and kube_watch_set_resource_version() before running
 *   again;
 * - kube_watch_stop() returns -ECANCELED;
 * - a callback error is returned as is;
 * - 401/403/404 etc. are returned immediately (kube_errno_from_http).
 * Never returns 0 except when max_failures == -1: then it returns 0 after
 * the first stream ends normally (one stream, no resume; used by tests). */
OP_MUST_CHECK
int kube_watch_run(struct kube_watch *w, kube_watch_fn fn, void *userdata, int max_failures,
		   struct op_err *err);

/* Thread-safe. Last resourceVersion seen (owned copy, free()), or NULL. */
char *kube_watch_resource_version(struct kube_watch *w);
/* Thread-safe. Sets the rv the next stream starts from (copied; NULL = now). */
void kube_watch_set_resource_version(struct kube_watch *w, const char *rv);
/* Thread-safe, async-signal-unsafe. Makes a running or future run return -ECANCELED. */
void kube_watch_stop(struct kube_watch *w);
bool kube_watch_stopped(struct kube_watch *w);
/* Number of streams opened so far (tests). */
unsigned kube_watch_streams(struct kube_watch *w);
/* Frees; the watch must not be running. Accepts NULL; returns NULL. */
struct kube_watch *kube_watch_free(struct kube_watch *w);

/* ------------------------------------------------------------------------ */
/* Informer: list + watch into an in-memory cache, one thread per informer.   */
/* ------------------------------------------------------------------------ */

/* Handlers run on the informer thread, after the cache is updated, with no
 * informer lock held (they may call kube_informer_get). Objects are
 * borrowed for the duration of the call and READ-ONLY (no json_object_get/
 * put, no modification; serializing with json_object_to_json_string is fine
 * from this thread only). They are trees private to the informer thread,
 * not the cache's storage (the cache keeps text, see the cache reads
 * below): the event's object (projected) for the new state, a parse of the
 * cached text for the old state (on_update's old_obj, on_delete: the last
 * cached state). Copy with json_object_deep_copy to keep one. Handlers must
 * not call kube_informer_stop/free on their own informer (it joins this
 * thread). Any handler may be NULL. On a relist, objects that disappeared
 * get on_delete, new ones on_add and changed ones (different
 * resourceVersion) on_update, in ns/name order. */
struct kube_informer_handlers {
	void (*on_add)(void *userdata, json_object *obj);
	void (*on_update)(void *userdata, json_object *old_obj, json_object *new_obj);
	void (*on_delete)(void *userdata, json_object *obj);
	/* Called once after the first list has been delivered (optional). */
	void (*on_synced)(void *userdata);
	void *userdata;
};

struct kube_informer_opts {
	const char *ns;               /* NULL = all namespaces */
	const char *label_selector;   /* NULL = all */
	const char *field_selector;   /* NULL = all */
	long page_size;               /* list page size; 0 = 500 */
	int watch_timeout_seconds;    /* 0 = 300 */
	long relist_backoff_ms;       /* wait after a failed list; 0 = 1000 (doubles, max 30 s) */
	/* Projection (kube_project): the cache keeps only these paths of each
	 * object (borrowed, NULL-terminated, must outlive the informer); NULL =
	 * whole objects. Handlers and readers see the projected objects. */
	const char *const *keep;
	/* Label whose value every cache entry keeps beside its text (copied;
	 * NULL = none), so kube_informer_list_labeled on that label skips the
	 * other objects without parsing them (the reconciler: cnpg.io/cluster). */
	const char *index_label;
};

struct kube_informer;

/* The projection of obj (borrowed) a cache keeps: a new owned object holding
 * only the dotted paths of keep (NULL-terminated; "metadata.labels",
 * "spec.selector", "data.tls\\.crt" for the key "tls.crt": a backslash makes
 * the next character part of the key; an absent path is skipped, a path through a
 * non-object stops there; "status.conditions[].type": "[]" goes through an
 * array, which is kept with one object per element holding what the rest of
 * the path selects in it, so several such paths fill the same elements), each
 * value deep-copied (JSON null stays null). A kept "metadata" drops
 * metadata.managedFields and the kubectl.kubernetes.io/last-applied-
 * configuration annotation (server bookkeeping, each about the object's own
 * size), and a kept "metadata.annotations" that annotation; "*" keeps every top-level field with that metadata. keep NULL = a
 * plain deep copy. NULL only when obj is NULL; aborts on OOM. Pure. */
json_object *kube_project(json_object *obj, const char *const *keep);

/* Creates an informer (strings copied, handlers copied). Not started. */
OP_MUST_CHECK int kube_informer_new(struct kube_client *c, const struct kube_kind *k,
				    const struct kube_informer_opts *opts,
				    const struct kube_informer_handlers *handlers,
				    struct kube_informer **ret_inf, struct op_err *err);

/* Starts the informer thread. -EALREADY if started. */
OP_MUST_CHECK int kube_informer_start(struct kube_informer *inf, struct op_err *err);

/* True once the first full list is in the cache. */
bool kube_informer_has_synced(struct kube_informer *inf);
/* Waits up to timeout_ms for has_synced: 0 or -ETIMEDOUT (-ECANCELED if stopped). */
OP_MUST_CHECK int kube_informer_wait_synced(struct kube_informer *inf, long timeout_ms);

/* Cache reads (read lock). The cache keeps each (projected) object as its
 * compact JSON text plus its key, resourceVersion and index label value
 * (kube/entry.c; a json-c tree costs ~0.7 KB per JSON object:
 * docs/internals/memory.md). Returns an OWNED tree parsed from that text
 * (json_object_put when done; equal to a deep copy of the object cached),
 * or NULL. ns NULL/"" for cluster-scoped. A private tree rather than
 * json_object_get() on a shared one: Debian's json-c is built without
 * ENABLE_THREADING, so its reference counts are not atomic. */
json_object *kube_informer_get(struct kube_informer *inf, const char *ns, const char *name);
/* New owned JSON array of (parsed, owned) copies of all cached objects in ns
 * (NULL = all), sorted by ns/name. NULL only on allocation failure. Parses
 * every object listed: O(size of the namespace). */
json_object *kube_informer_list(struct kube_informer *inf, const char *ns);
/* Same, keeping only objects for which match(userdata, obj) is true; match
 * runs under the cache read lock on each candidate parsed (the tree that is
 * appended when it matches, freed otherwise; read-only, must not block or
 * call back into the informer). match NULL = all. Parses every object of
 * ns: to select an owner's objects use kube_informer_list_labeled. */
json_object *kube_informer_list_filter(struct kube_informer *inf, const char *ns,
				       bool (*match)(void *userdata, json_object *obj),
				       void *userdata);
/* Same, among the objects whose label `label` has the string value `value`
 * (label or value NULL = no label condition). With label ==
 * opts.index_label the others are skipped on the entry's kept value,
 * unparsed: O(matches) parses plus a string compare per object of ns; with
 * another label every object of ns is parsed to compare. */
json_object *kube_informer_list_labeled(struct kube_informer *inf, const char *ns,
					const char *label, const char *value,
					bool (*match)(void *userdata, json_object *obj),
					void *userdata);
/* Like kube_informer_list, but each cached object is first offered to
 * skip(userdata, key "ns/name", resourceVersion or "") under the cache read
 * lock (must not block or call back into the informer): when it returns
 * true the object is left out unparsed. A caller that remembers the
 * resourceVersions it has seen parses only what changed, or leaves out
 * whole namespaces by key (the node agent: every Pod of the node, every
 * Service and EndpointSlice outside its scale-mode namespaces, at each
 * sync). NULL only on allocation failure. */
json_object *kube_informer_list_except(struct kube_informer *inf, const char *ns,
				       bool (*skip)(void *userdata, const char *key, const char *rv),
				       void *userdata);
/* Same with a label selector (kube_selector_match grammar; every object of
 * ns is parsed); NULL on a malformed selector (err set) or allocation
 * failure. */
json_object *kube_informer_list_selected(struct kube_informer *inf, const char *ns,
					 const char *selector, struct op_err *err);
size_t kube_informer_count(struct kube_informer *inf);
/* Last resourceVersion applied to the cache (owned copy) or NULL. */
char *kube_informer_resource_version(struct kube_informer *inf);
/* Number of full lists done (1 after the first sync; more after 410s). */
unsigned kube_informer_lists(struct kube_informer *inf);

/* Asks the thread to stop and joins it (within ~1 s). Idempotent. */
void kube_informer_stop(struct kube_informer *inf);
/* Stops, joins, frees the cache. Accepts NULL; returns NULL. */
struct kube_informer *kube_informer_free(struct kube_informer *inf);

#endif
