/* apiserver/sar.c - SubjectAccessReview bodies and the decision cache. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

struct sar_entry {
	char *key;
	bool allowed;
	int64_t expires_ms;
};

struct as_sar_cache {
	pthread_mutex_t mu;
	long ttl_ms;
	struct sar_entry *e;
	size_t cap, next; /* ring: the oldest insertion is replaced first */
};

struct as_sar_cache *as_sar_cache_new(long ttl_ms, size_t cap)
{
	struct as_sar_cache *c = op_calloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->ttl_ms = ttl_ms > 0 ? ttl_ms : 5000;
	c->cap = cap ? cap : 256;
	c->e = op_calloc(c->cap, sizeof(*c->e));
	return c;
}

void as_sar_cache_free(struct as_sar_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		free(c->e[i].key);
	free(c->e);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int as_sar_cache_get(struct as_sar_cache *c, const char *key, int64_t now_ms)
{
	int r = -ENOENT;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->cap; i++)
		if (c->e[i].key && strcmp(c->e[i].key, key) == 0) {
			if (now_ms < c->e[i].expires_ms)
				r = c->e[i].allowed;
			break;
		}
	pthread_mutex_unlock(&c->mu);
	return r;
}

void as_sar_cache_put(struct as_sar_cache *c, const char *key, bool allowed, int64_t now_ms)
{
	pthread_mutex_lock(&c->mu);
	struct sar_entry *slot = NULL;
	for (size_t i = 0; i < c->cap && !slot; i++)
		if (c->e[i].key && strcmp(c->e[i].key, key) == 0)
			slot = &c->e[i];
	if (!slot) {
		slot = &c->e[c->next];
		c->next = (c->next + 1) % c->cap;
		free(slot->key);
		slot->key = op_strdup(key);
	}
	slot->allowed = allowed;
	slot->expires_ms = now_ms + c->ttl_ms;
	pthread_mutex_unlock(&c->mu);
}

/* Fields joined by \x1f (unit separator: not valid in any of them unescaped;
 * a header value containing it only makes a distinct key). */
char *as_sar_key(const struct as_user *u, const struct as_attrs *a)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_addf(&b, "%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", a->resource,
			    a->verb, a->resource ? a->resource_name : "", a->subresource ?: "",
			    a->ns ?: "", a->name ?: "", a->path ?: "", u->name ?: "");
	for (size_t i = 0; !r && i < u->n_groups; i++)
		r = op_buf_addf(&b, "\x1eg%s", u->groups[i]);
	for (size_t i = 0; !r && i < u->n_extra; i++)
		r = op_buf_addf(&b, "\x1e%s=%s", u->extra_keys[i], u->extra_vals[i]);
	if (r < 0) { /* over the cap: an uncacheable key that never matches */
		op_buf_done(&b);
		return op_strdup("\x1f-");
	}
	return op_buf_take(&b, NULL);
}

char *as_sar_body(const struct as_user *u, const struct as_attrs *a)
{
	json_object *spec = op_jobj();
	if (a->resource) {
		json_object *ra = op_jobj();
		op_jsets(ra, "namespace", a->ns);
		op_jsets(ra, "verb", a->verb);
		op_jsets(ra, "group", AS_GROUP);
		op_jsets(ra, "version", AS_VERSION);
		op_jsets(ra, "resource", a->resource_name);
		op_jsets(ra, "subresource", a->subresource);
		op_jsets(ra, "name", a->name);
		op_jset(spec, "resourceAttributes", ra);
	} else {
		json_object *na = op_jobj();
		op_jsets(na, "path", a->path ?: "/");
		op_jsets(na, "verb", a->verb);
		op_jset(spec, "nonResourceAttributes", na);
	}
	op_jsets(spec, "user", u->name);
	json_object *g = op_jarr();
	for (size_t i = 0; i < u->n_groups; i++)
		op_jpush(g, op_jstr(u->groups[i]));
	op_jset(spec, "groups", g);
	if (u->n_extra) {
		json_object *ex = op_jobj();
		for (size_t i = 0; i < u->n_extra; i++) {
			json_object *arr = NULL;
			if (!json_object_object_get_ex(ex, u->extra_keys[i], &arr)) {
				arr = op_jarr();
				op_jset(ex, u->extra_keys[i], arr);
			}
			op_jpush(arr, op_jstr(u->extra_vals[i]));
		}
		op_jset(spec, "extra", ex);
	}
	json_object *d = op_jobj();
	op_jsets(d, "apiVersion", "authorization.k8s.io/v1");
	op_jsets(d, "kind", "SubjectAccessReview");
	op_jset(d, "spec", spec);
	char *s = op_strdup(json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(d);
	return s;
}
