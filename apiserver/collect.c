/* apiserver/collect.c - the live objects a request selects: Clusters (or the
 * Clusters owning the selected Pods) from the source, their instances'
 * snapshots, rendered as LiveCluster / LiveInstance. */
#include <errno.h>
#include <string.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

static bool selected(const struct as_query *q, json_object *obj, struct op_err *err, int *bad)
{
	if (!as_fieldsel_match(&q->fields, op_json_str_at(obj, "metadata.namespace"),
			       op_json_str_at(obj, "metadata.name")))
		return false;
	if (!q->label || !*q->label)
		return true;
	int m = kube_selector_match(q->label, obj, err);
	if (m < 0)
		*bad = m;
	return m == 1;
}

static int clusters(struct as_snaps *snaps, const struct as_source *src,
		    const struct as_reqinfo *ri, const struct as_query *q, json_object **ret,
		    struct op_err *err)
{
	json_object *all = src->clusters(src->ud, ri->ns[0] ? ri->ns : NULL);
	json_object *sel = op_jarr();
	int bad = 0;
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *c = json_object_array_get_idx(all, i);
		if (ri->name[0] && strcmp(op_json_str_at(c, "metadata.name") ?: "", ri->name) != 0)
			continue;
		if (selected(q, c, err, &bad))
			op_jpush(sel, json_object_get(c));
	}
	json_object_put(all);
	if (bad < 0) {
		json_object_put(sel);
		return bad;
	}
	size_t n = json_object_array_length(sel);
	struct as_views *views = op_calloc(n ? n : 1, sizeof(*views));
	as_snaps_get(snaps, sel, views);
	json_object *objs = op_jarr();
	int64_t now = as_wall_ms();
	bool full = strcmp(ri->sub, "status") == 0;
	for (size_t i = 0; i < n; i++)
		op_jpush(objs, as_live_cluster(json_object_array_get_idx(sel, i), views[i].v,
					       views[i].n, now, full));
	as_views_free(views, n);
	free(views);
	json_object_put(sel);
	*ret = objs;
	return 0;
}

static json_object *primary_doc(const struct as_views *v)
{
	for (size_t k = 0; k < v->n; k++) {
		json_object *p = NULL;
		if (v->v[k].reachable && v->v[k].doc &&
		    json_object_object_get_ex(v->v[k].doc, "isPrimary", &p) &&
		    json_object_get_boolean(p))
			return v->v[k].doc;
	}
	return NULL;
}

static int instances(struct as_snaps *snaps, const struct as_source *src,
		     const struct as_reqinfo *ri, const struct as_query *q, json_object **ret,
		     struct op_err *err)
{
	json_object *all = src->clusters(src->ud, ri->ns[0] ? ri->ns : NULL);
	json_object *sel = op_jarr(); /* Clusters with a selected Pod */
	int bad = 0;
	for (size_t i = 0; i < json_object_array_length(all) && !bad; i++) {
		json_object *c = json_object_array_get_idx(all, i);
		json_object *pods = src->pods(src->ud,
						       op_json_str_at(c, "metadata.namespace"),
						       op_json_str_at(c, "metadata.name"));
		bool any = false;
		for (size_t k = 0; k < json_object_array_length(pods) && !any && !bad; k++) {
			json_object *p = json_object_array_get_idx(pods, k);
			if (ri->name[0] &&
			    strcmp(op_json_str_at(p, "metadata.name") ?: "", ri->name) != 0)
				continue;
			any = selected(q, p, err, &bad);
		}
		json_object_put(pods);
		if (any)
			op_jpush(sel, json_object_get(c));
	}
	json_object_put(all);
	if (bad < 0) {
		json_object_put(sel);
		return bad;
	}
	size_t n = json_object_array_length(sel);
	struct as_views *views = op_calloc(n ? n : 1, sizeof(*views));
	as_snaps_get(snaps, sel, views);
	json_object *objs = op_jarr();
	int64_t now = as_wall_ms();
	for (size_t i = 0; i < n; i++) {
		json_object *pdoc = primary_doc(&views[i]);
		for (size_t k = 0; k < views[i].n; k++) {
			json_object *p = views[i].v[k].pod;
			if (ri->name[0] &&
			    strcmp(op_json_str_at(p, "metadata.name") ?: "", ri->name) != 0)
				continue;
			if (!selected(q, p, err, &bad))
				continue;
			op_jpush(objs, as_live_instance(json_object_array_get_idx(sel, i),
							&views[i].v[k], pdoc, now, false));
		}
	}
	as_views_free(views, n);
	free(views);
	json_object_put(sel);
	*ret = objs;
	return 0;
}

int as_collect(struct as_snaps *snaps, const struct as_source *src, const struct as_reqinfo *ri,
	       const struct as_query *q, json_object **ret, struct op_err *err)
{
	if (ri->res == as_resource_clusters())
		return clusters(snaps, src, ri, q, ret, err);
	return instances(snaps, src, ri, q, ret, err);
}
