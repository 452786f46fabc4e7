/* kube/entry.c - compact informer cache entries and their sorted array
 * (internal.h: kube__entry, kube__cache). */
#include <string.h>

#include "kube/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define ENTRY_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char *label_value(json_object *obj, const char *label)
{
	json_object *labels = op_json_at(obj, "metadata.labels"), *v = NULL;
	if (!label || !json_object_is_type(labels, json_type_object) ||
	    !json_object_object_get_ex(labels, label, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

struct kube__entry *kube__entry_new(json_object *obj, const char *index_label)
{
	const char *ns = kube_obj_namespace(obj), *name = kube_obj_name(obj);
	const char *rv = kube_obj_resource_version(obj);
	const char *idx = label_value(obj, index_label);
	if (!ns)
		ns = "";
	if (!name)
		name = "";
	size_t json_len = 0;
	const char *json = json_object_to_json_string_length(obj, ENTRY_FLAGS, &json_len);
	if (!json)
		op_oom(0);
	size_t ns_len = strlen(ns), name_len = strlen(name);
	size_t rv_len = rv ? strlen(rv) + 1 : 0, idx_len = idx ? strlen(idx) + 1 : 0;
	size_t key_len = ns_len + 1 + name_len + 1;
	struct kube__entry *e =
		op_malloc(sizeof(*e) + key_len + rv_len + idx_len + json_len + 1);
	char *p = e->key;
	memcpy(p, ns, ns_len);
	p[ns_len] = '/';
	memcpy(p + ns_len + 1, name, name_len + 1);
	p += key_len;
	e->rv = NULL;
	if (rv) {
		memcpy(p, rv, rv_len);
		e->rv = p;
		p += rv_len;
	}
	e->index = NULL;
	if (idx) {
		memcpy(p, idx, idx_len);
		e->index = p;
		p += idx_len;
	}
	memcpy(p, json, json_len + 1);
	e->json = p;
	e->json_len = json_len;
	e->ns_len = ns_len;
	return e;
}

json_object *kube__entry_parse(const struct kube__entry *e)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	/* the watch parsed the event (the object one level down) at this depth */
	if (op_json_parse(e->json, e->json_len, OP_JSON_MAX_DEPTH, &o, &err) < 0) {
		op_log_error("informer cache entry does not parse", "key", e->key, "error",
			     err.msg);
		return NULL;
	}
	return o;
}

size_t kube__entry_size(const struct kube__entry *e)
{
	return (size_t)(e->json + e->json_len + 1 - (const char *)e);
}

/* ------------------------------------------------------------ the array */

size_t kube__cache_find(const struct kube__cache *c, const char *key, bool *found)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(c->v[mid]->key, key);
		if (d == 0) {
			*found = true;
			return mid;
		}
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct kube__entry *kube__cache_put(struct kube__cache *c, struct kube__entry *e)
{
	bool found;
	size_t i = kube__cache_find(c, e->key, &found);
	if (found) {
		struct kube__entry *old = c->v[i];
		c->v[i] = e;
		return old;
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->v = op_realloc(c->v, c->cap * sizeof(*c->v));
	}
	memmove(c->v + i + 1, c->v + i, (c->n - i) * sizeof(*c->v));
	c->v[i] = e;
	c->n++;
	return NULL;
}

struct kube__entry *kube__cache_del(struct kube__cache *c, const char *key)
{
	bool found;
	size_t i = kube__cache_find(c, key, &found);
	if (!found)
		return NULL;
	struct kube__entry *old = c->v[i];
	memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof(*c->v));
	c->n--;
	return old;
}

void kube__cache_range(const struct kube__cache *c, const char *prefix, size_t *ret_lo,
		       size_t *ret_hi)
{
	if (!prefix) {
		*ret_lo = 0;
		*ret_hi = c->n;
		return;
	}
	bool found;
	size_t plen = strlen(prefix);
	/* keys with the prefix sort right at or after the prefix itself */
	size_t lo = kube__cache_find(c, prefix, &found), hi = lo;
	while (hi < c->n && strncmp(c->v[hi]->key, prefix, plen) == 0)
		hi++;
	*ret_lo = lo;
	*ret_hi = hi;
}

struct adopt_item {
	struct kube__entry *e;
	size_t pos;
};

static int cmp_adopt(const void *a, const void *b)
{
	const struct adopt_item *x = a, *y = b;
	int d = strcmp(x->e->key, y->e->key);
	return d ? d : (x->pos < y->pos ? -1 : x->pos > y->pos);
}

void kube__cache_adopt(struct kube__cache *c, struct kube__entry **v, size_t n)
{
	struct adopt_item *t = op_malloc((n ? n : 1) * sizeof(*t));
	for (size_t i = 0; i < n; i++)
		t[i] = (struct adopt_item){ v[i], i };
	qsort(t, n, sizeof(*t), cmp_adopt);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && strcmp(t[i].e->key, t[i + 1].e->key) == 0) {
			free(t[i].e); /* a later one has the same key */
			continue;
		}
		v[m++] = t[i].e;
	}
	free(t);
	c->v = v;
	c->n = m;
	c->cap = n;
}

void kube__cache_clear(struct kube__cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}
