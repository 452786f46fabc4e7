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
		op_oom(0);
	return c;
}

/* annotations without the last-applied one. */
static json_object *copy_annotations(json_object *v)
{
	if (!json_object_is_type(v, json_type_object))
		return copy_of(v);
	json_object *c = op_jobj();
	json_object_object_foreach(v, ak, av)
		if (strcmp(ak, LAST_APPLIED) != 0)
			op_jset(c, ak, copy_of(av));
	return c;
}

/* metadata without managedFields and the last-applied annotation. */
static json_object *copy_metadata(json_object *md)
{
	if (!json_object_is_type(md, json_type_object))
		return copy_of(md);
	json_object *out = op_jobj();
	json_object_object_foreach(md, k, v) {
		if (!strcmp(k, "managedFields"))
			continue;
		json_object *c = !strcmp(k, "annotations") ? copy_annotations(v) : copy_of(v);
		op_jset(out, k, c);
	}
	return out;
}

enum { MAX_DEPTH = 8, SEG_MAX = 64 };

struct seg {
	char key[SEG_MAX];
	bool each; /* "key[]": the path goes on in every element of the array */
};

/* Splits a keep path into its segments: up to an unescaped '.', "\\." a dot
 * in a key, a trailing unescaped "[]" marks an array. 0 when malformed (an
 * empty segment, too long or too deep). */
static size_t split_path(const char *path, struct seg *segs)
{
	size_t n = 0;
	for (const char *p = path; *p; n++) {
		if (n == MAX_DEPTH)
			return 0;
		size_t len = 0;
		bool each = false;
		for (; *p && *p != '.'; p++) {
			if (*p == '[' && p[1] == ']' && (!p[2] || p[2] == '.')) {
				each = true;
				p += 2;
				break;
			}
			if (*p == '\\' && p[1])
				p++;
			if (len + 1 >= SEG_MAX)
				return 0;
			segs[n].key[len++] = *p;
		}
		segs[n].key[len] = '\0';
		segs[n].each = each;
		if (len == 0)
			return 0;
		if (*p == '.')
			p++;
	}
	return n;
}

/* Copies into dst (an object) what segs[0..n) select in src: nothing when
 * the path does not resolve (no empty parents are left behind), except that
 * an array the path goes through is kept with one object per element (empty
 * when the rest of the path is not in that element), so that several paths
 * through it fill the same elements. top: src is the whole object (its
 * metadata and metadata.annotations are cleaned: copy_metadata). */
static void keep_segs(json_object *dst, json_object *src, const struct seg *segs, size_t n,
		      bool top, bool in_metadata)
{
	json_object *v = NULL;
	const char *k = segs[0].key;
	if (!json_object_is_type(src, json_type_object) || !json_object_object_get_ex(src, k, &v))
		return;
	if (segs[0].each) {
		if (!json_object_is_type(v, json_type_array))
			return;
		size_t len = json_object_array_length(v);
		json_object *da = NULL;
		if (!json_object_object_get_ex(dst, k, &da) ||
		    !json_object_is_type(da, json_type_array) || json_object_array_length(da) != len) {
			da = json_object_new_array_ext((int)len); /* sized: no builder for it */
			if (!da)
				op_oom(0);
			op_jset(dst, k, da);
			for (size_t i = 0; i < len; i++)
				op_jpush(da, op_jobj());
		}
		for (size_t i = 0; i < len; i++) {
			json_object *e = json_object_array_get_idx(v, i);
			if (n == 1) { /* "key[]": every element whole */
				if (json_object_array_put_idx(da, i, copy_of(e)) != 0)
					op_oom(0);
				continue;
			}
			json_object *de = json_object_array_get_idx(da, i);
			if (json_object_is_type(de, json_type_object))
				keep_segs(de, e, segs + 1, n - 1, false, false);
		}
		return;
	}
	if (n == 1) {
		json_object *c = top && !strcmp(k, "metadata")		? copy_metadata(v)
				 : in_metadata && !strcmp(k, "annotations") ? copy_annotations(v)
									    : copy_of(v);
		op_jset(dst, k, c);
		return;
	}
	if (!json_object_is_type(v, json_type_object))
		return;
	json_object *d = NULL;
	bool fresh = !json_object_object_get_ex(dst, k, &d) || !json_object_is_type(d, json_type_object);
	if (fresh)
		d = op_jobj();
	keep_segs(d, v, segs + 1, n - 1, false, top && !strcmp(k, "metadata"));
	if (!fresh)
		return;
	if (json_object_object_length(d) == 0)
		json_object_put(d);
	else
		op_jset(dst, k, d);
}

json_object *kube_project(json_object *obj, const char *const *keep)
{
	if (!keep || !json_object_is_type(obj, json_type_object))
		return obj ? copy_of(obj) : NULL;
	json_object *out = op_jobj();
	for (size_t i = 0; keep[i]; i++) {
		if (!strcmp(keep[i], "*")) { /* everything but the metadata noise */
			json_object_object_foreach(obj, k, v)
				op_jset(out, k, strcmp(k, "metadata") ? copy_of(v) : copy_metadata(v));
			return out;
		}
		struct seg segs[MAX_DEPTH];
		size_t n = split_path(keep[i], segs);
		if (n)
			keep_segs(out, obj, segs, n, true, false);
	}
	return out;
}
