/* kube/project.c - projections of cached objects (watch.h: kube_project). */
#include <string.h>

#include "kube/watch.h"
#include "support/alloc.h"
#include "support/json.h"

/* Never kept: server-side apply bookkeeping and kubectl's copy of the whole
 * applied object (each about the size of the object itself). */
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* JSON null (NULL) stays null: an EndpointSlice without endpoints has
 * "endpoints": null, and json_object_deep_copy fails on NULL (which aborted
 * the node agent at its first such slice). */
static json_object *copy_of(json_object *v)
{
	json_object *c = NULL;
	if (v && json_object_deep_copy(v, &c, NULL) < 0)
		abort(); /* OOM policy: support/alloc.h */
	return c;
}

/* annotations without the last-applied one. */
static json_object *copy_annotations(json_object *v)
{
	if (!json_object_is_type(v, json_type_object))
		return copy_of(v);
	json_object *c = json_object_new_object();
	if (!c)
		abort();
	json_object_object_foreach(v, ak, av)
		if (strcmp(ak, LAST_APPLIED) != 0 && op_json_set(c, ak, copy_of(av)) < 0)
			abort();
	return c;
}

/* metadata without managedFields and the last-applied annotation. */
static json_object *copy_metadata(json_object *md)
{
	if (!json_object_is_type(md, json_type_object))
		return copy_of(md);
	json_object *out = json_object_new_object();
	if (!out)
		abort();
	json_object_object_foreach(md, k, v) {
		if (!strcmp(k, "managedFields"))
			continue;
		json_object *c = !strcmp(k, "annotations") ? copy_annotations(v) : copy_of(v);
		if (op_json_set(out, k, c) < 0)
			abort();
	}
	return out;
}

/* Copies src's value at the dotted path into dst, creating the parent
 * objects; nothing when the path does not resolve to a value. */
static void keep_path(json_object *dst, json_object *src, const char *path)
{
	enum { MAX_DEPTH = 8 };
	char segs[MAX_DEPTH][64];
	size_t n = 0;
	json_object *v = src;
	for (const char *p = path; *p; n++) {
		if (n == MAX_DEPTH)
			return;
		size_t len = 0; /* one segment: up to an unescaped '.'; "\\." is a dot in a key */
		for (; *p && *p != '.'; p++) {
			if (*p == '\\' && p[1])
				p++;
			if (len + 1 >= sizeof(segs[0]))
				return;
			segs[n][len++] = *p;
		}
		segs[n][len] = '\0';
		if (len == 0 || !json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, segs[n], &v))
			return;
		if (*p == '.')
			p++;
	}
	if (n == 0)
		return;
	for (size_t i = 0; i + 1 < n; i++) {
		json_object *d = NULL;
		if (!json_object_object_get_ex(dst, segs[i], &d) ||
		    !json_object_is_type(d, json_type_object)) {
			d = json_object_new_object();
			if (!d || op_json_set(dst, segs[i], d) < 0)
				abort();
		}
		dst = d;
	}
	bool md = n == 1 && !strcmp(segs[0], "metadata");
	bool ann = n == 2 && !strcmp(segs[0], "metadata") && !strcmp(segs[1], "annotations");
	if (op_json_set(dst, segs[n - 1], md ? copy_metadata(v) : ann ? copy_annotations(v)
									: copy_of(v)) < 0)
		abort();
}

json_object *kube_project(json_object *obj, const char *const *keep)
{
	if (!keep || !json_object_is_type(obj, json_type_object))
		return obj ? copy_of(obj) : NULL;
	json_object *out = json_object_new_object();
	if (!out)
		abort();
	for (size_t i = 0; keep[i]; i++) {
		if (!strcmp(keep[i], "*")) { /* everything but the metadata noise */
			json_object_object_foreach(obj, k, v)
				if (op_json_set(out, k, strcmp(k, "metadata") ? copy_of(v)
									      : copy_metadata(v)) < 0)
					abort();
			return out;
		}
		keep_path(out, obj, keep[i]);
	}
	return out;
}
