/* kube/internal.h - shared between the files of kube/ only (kube__ prefix).
 * Not for use outside kube/.
 */
#ifndef PGOP_KUBE_INTERNAL_H
#define PGOP_KUBE_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "kube/kube.h"
#include "kube/watch.h"
#include "support/buf.h"
#include "support/err.h"

#define KUBE__EVENT_CACHE 64

/* One remembered Event for folding repeats (kube_event_emit). */
struct kube__event_slot {
	char *key;   /* uid|type|reason|message, owned */
	char *ns;    /* Event namespace, owned */
	char *name;  /* Event name, owned */
	int count;
	int64_t last_ms;
};

/* Verbs and codes counted per client (kube__count, kube_client_render_metrics). */
#define KUBE__N_VERBS 7  /* get post put patch delete watch other */
#define KUBE__N_CODES 17 /* the codes in client.c's table, other, error */

/* Idle easy handles a client keeps (kube__easy_new/kube__easy_done). */
#define KUBE__IDLE_MAX 8

struct kube_client {
	struct kube_config *cfg; /* owned */
	CURLSH *share;           /* owned: DNS and TLS sessions, never connections */
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	/* Each idle handle keeps its connection: the way to reuse connections
	 * across threads (libcurl does not support sharing its connection cache
	 * between concurrent threads: CURLSHOPT_SHARE(3); the node agent crashed
	 * in libcurl with it at 1,000 Pods). Owned, under pool_lock. */
	pthread_mutex_t pool_lock;
	CURL *idle[KUBE__IDLE_MAX];
	size_t n_idle;
	char *user_agent;        /* owned */
	double qps;
	int burst;
	long timeout_ms;
	long connect_timeout_ms;
	int max_retries;
	long max_retry_after_ms;
	size_t max_response;

	pthread_mutex_t lock; /* guards everything below */
	/* token buckets (qps, burst): [0] every request, [1] Events', as
	 * controller-runtime gives its event recorder a client of its own */
	struct kube__bucket {
		double tokens;
		int64_t refill_ms;
	} bucket[2];
	char *token;          /* current bearer token (owned) */
	dev_t token_dev;
	ino_t token_ino;
	int64_t token_mtime_ns;
	off_t token_size;
	struct kube_client_stats stats;
	/* pgop_kube_requests_total: [verb][code] (kube__count; lock-free) */
	_Atomic uint64_t by_code[KUBE__N_VERBS][KUBE__N_CODES];
	struct kube__event_slot events[KUBE__EVENT_CACHE];
	unsigned events_next;
};

/* kube_event_emit with the Event's time given (Unix ms): the recorder stamps
 * an Event when it is queued, not when it is posted. */
OP_MUST_CHECK
int kube__event_emit_at(struct kube_client *c, json_object *involved, const char *type,
			const char *reason, const char *message, const char *component,
			int64_t wall_ms, struct op_err *err);

/* Monotonic and wall clocks in milliseconds. */
int64_t kube__now_ms(void);
int64_t kube__wall_ms(void);
/* Sleeps ms (restarting on EINTR). */
void kube__sleep_ms(long ms);
/* Absolute CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a
 * condition variable created with that clock. */
void kube__deadline(struct timespec *ret_ts, long ms);
/* Waits on cond (under lock, both borrowed) until ms passed or *stop is set. */
void kube__wait_stop(pthread_mutex_t *lock, pthread_cond_t *cond, atomic_bool *stop, long ms);

/* Reads a whole file into b (cleared first), at most max bytes. */
OP_MUST_CHECK
int kube__read_file(const char *path, size_t max, struct op_buf *b, struct op_err *err);

/* Appends s percent-encoded (RFC 3986 unreserved kept) to b. */
OP_MUST_CHECK int kube__escape(struct op_buf *b, const char *s);

/* Takes one token from the client's rate limiter, sleeping if needed: from
 * the main bucket, or from the Events' own one. */
void kube__throttle(struct kube_client *c, bool events);

/* An easy handle for method/url with TLS, auth, user agent, share,
 * timeouts and errbuf (CURL_ERROR_SIZE, must outlive the handle) set: an idle
 * one (reset, its connection kept) or a new one; give it back with
 * kube__easy_done.
 * *ret_headers: owned slist (curl_slist_free_all) to keep until cleanup;
 * extra headers (may be NULL) are appended after auth. */
OP_MUST_CHECK
int kube__easy_new(struct kube_client *c, const char *method, const char *url,
		   const char *content_type, char *errbuf, struct curl_slist **ret_headers,
		   CURL **ret_easy, struct op_err *err);
/* Gives h (owned, from kube__easy_new; NULL is accepted) back: kept idle with
 * its connection when keep and the client keeps fewer than KUBE__IDLE_MAX,
 * otherwise cleaned up. The next kube__easy_new resets its options. */
void kube__easy_done(struct kube_client *c, CURL *h, bool keep);

/* Maps a CURLcode to -errno. */
OP_MUST_CHECK int kube__curl_errno(CURLcode cc);

/* Fills err from an error response: Status reason/message when body is a
 * Status, else the first bytes of body. Returns the -errno for it. */
OP_MUST_CHECK int kube__http_error(long http, const char *body, size_t len, const char *verb,
				   const struct kube_kind *k, const char *ns, const char *name,
				   struct op_err *err);

void kube__stat_add(struct kube_client *c, bool retry);
/* Counts one answered (or failed: http 0) request for pgop_kube_requests_total:
 * method "GET", "POST"...; watch = a watch stream. */
void kube__count(struct kube_client *c, const char *method, bool watch, long http);

/* The watch stream's framing and event parsing without a transfer: feeds the
 * n body chunks (borrowed) of a 200 answer to the same write callback a
 * stream uses, then the unterminated last line as at a normal end, calling fn
 * for each event of kind k. Returns 0 (stream ended normally; an unterminated
 * last line that is an ERROR event included, as a live stream), 1 (a
 * terminated ERROR event other than 410 ended it: a stream resumes with
 * back-off) or the
 * stream's fatal -errno (-EPROTO malformed event, -EINVAL not JSON, -EMSGSIZE
 * line over OP_BUF_MAX_WATCH_EVENT, -ETIME 410, or fn's error). *ret_rv
 * (owned, may be NULL): the resourceVersion a resumed watch would send.
 * For tests/fuzz/fuzz_watch.c and unit tests. */
struct kube__chunk {
	const char *data;
	size_t len;
};
OP_MUST_CHECK
int kube__watch_replay(const struct kube_kind *k, const struct kube__chunk *chunks, size_t n,
		       kube_watch_fn fn, void *ud, char **ret_rv, struct op_err *err);

/* ---- informer cache entries (entry.c) ----
 * One cached object as its compact JSON text (json-c PLAIN | NOSLASHESCAPE)
 * plus the fields the informer reads without parsing, in ONE allocation
 * (free()). A json-c tree costs a 16-slot hash table per JSON object (~0.7 KB
 * each, a projected Pod ~14 KB); the text is the object's serialized size.
 * Immutable once built: readers parse it (kube__entry_parse) into a private
 * tree, so no json-c reference count is ever shared between threads. */
struct kube__entry {
	const char *rv;    /* metadata.resourceVersion, NULL if none (points into key[]) */
	const char *index; /* value of the informer's index label, NULL if not indexed or absent */
	const char *json;  /* the compact text (NUL-terminated, json_len bytes) */
	size_t json_len;
	size_t ns_len;     /* key[0..ns_len) is the namespace ("" cluster-scoped) */
	char key[];        /* "ns/name", then rv, index and json */
};

/* Builds the entry of obj (borrowed, e.g. a projection; serializing it
 * attaches json-c's print buffer to obj, so obj must be private to the
 * calling thread). index_label: label key whose string value is kept as
 * ->index (NULL = none). Never NULL (aborts on OOM); obj must be an object. */
struct kube__entry *kube__entry_new(json_object *obj, const char *index_label);
/* A new owned tree parsed from e's text, or NULL on failure (only on OOM or
 * json-c not reading back its own output: logged). */
json_object *kube__entry_parse(const struct kube__entry *e);
/* Bytes the entry allocation holds (header and strings). */
size_t kube__entry_size(const struct kube__entry *e);

/* Entries sorted by key (strcmp): get/put/del by binary search, a namespace
 * is a contiguous range ("ns/" prefix), lists come out sorted, and a relist
 * is diffed by one merge walk. Owns its entries. Not locked: informer.c
 * guards it with its cache rwlock. */
struct kube__cache {
	struct kube__entry **v;
	size_t n, cap;
};

/* Index of key in c, or where it would be inserted; *found says which. */
size_t kube__cache_find(const struct kube__cache *c, const char *key, bool *found);
/* Inserts e (owned by c from now on) or replaces the entry with its key:
 * returns the replaced entry (owned by the caller) or NULL. */
struct kube__entry *kube__cache_put(struct kube__cache *c, struct kube__entry *e);
/* Removes key: returns its entry (owned by the caller) or NULL. */
struct kube__entry *kube__cache_del(struct kube__cache *c, const char *key);
/* The range [*ret_lo, *ret_hi) of entries whose key starts with prefix
 * (NULL = all). */
void kube__cache_range(const struct kube__cache *c, const char *prefix, size_t *ret_lo,
		       size_t *ret_hi);
/* Takes ownership of the n entries v (malloc'd array, any order) and makes
 * c of them, sorted; of entries with the same key the later in v is kept. c
 * must be empty. */
void kube__cache_adopt(struct kube__cache *c, struct kube__entry **v, size_t n);
/* Frees every entry and the array; c is empty (reusable) after. */
void kube__cache_clear(struct kube__cache *c);

#endif
