/* instance/syncnames.c - synchronous_standby_names (runtime.md §4.3).
 *
 * Legacy spec.minSyncReplicas/maxSyncReplicas: quorum (ANY) over the healthy
 * standbys, n = max, lowered to min when fewer are ready, lowered to the
 * number ready when even min cannot be met (self-healing).
 * spec.postgresql.synchronous: method/number as given; dataDurability
 * "required" lists every other instance (pre + cluster + post, a placeholder
 * when empty, n fixed), "preferred" lists healthy standbys only and caps n.
 * Healthy standbys: status.instancesStatus.healthy as the reconciler publishes
 * it each reconcile (instances answering /pg/status), every instance name
 * before the reconciler wrote it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "instance/instance.h"
#include "support/alloc.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Borrowed names of src minus `primary`, sorted, deduplicated. Returns the
 * count; *ret owned array (free()). */
static size_t others_sorted(const struct api_strv *src, const char *primary, const char ***ret)
{
	const char **v = op_calloc(src->n + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < src->n; i++) {
		if (!src->items[i] || !*src->items[i])
			continue;
		if (primary && strcmp(src->items[i], primary) == 0)
			continue;
		v[n++] = src->items[i];
	}
	qsort(v, n, sizeof(*v), cmp_str);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (m == 0 || strcmp(v[m - 1], v[i]) != 0)
			v[m++] = v[i];
	*ret = v;
	return m;
}

static int render(struct op_buf *out, const char *method, int64_t n, const char *const *pre,
		  size_t n_pre, const char *const *mid, size_t n_mid, const char *const *post,
		  size_t n_post, struct op_err *err)
{
	int r = 0;
	for (const char *p = method; r == 0 && *p; p++)
		r = op_buf_addc(out, (char)toupper((unsigned char)*p));
	r = r ? r : op_buf_addf(out, " %lld (", (long long)n);
	const char *const *lists[3] = { pre, mid, post };
	size_t counts[3] = { n_pre, n_mid, n_post };
	bool first = true;
	for (int l = 0; l < 3; l++) {
		for (size_t i = 0; r == 0 && i < counts[l]; i++) {
			const char *name = lists[l][i];
			if (strpbrk(name, "\"'\\\r\n"))
				return op_err_set(err, -EINVAL,
						  "synchronous standby name \"%s\": invalid", name);
			r = op_buf_addf(out, "%s\"%s\"", first ? "" : ",", name);
			first = false;
		}
	}
	r = r ? r : op_buf_addc(out, ')');
	return r ? op_err_set(err, r, "synchronous_standby_names: too long") : 0;
}

static int legacy(const struct api_cluster *c, const char *const *healthy, size_t n_healthy,
		  struct op_buf *out, struct op_err *err)
{
	int64_t max = c->spec.max_sync_replicas, min = c->spec.min_sync_replicas;
	if (max <= 0)
		return 0;
	int64_t ready = (int64_t)n_healthy, n = max;
	if (ready < n)
		n = min;
	if (ready < min)
		n = ready;
	if (n > (int64_t)n_healthy)
		n = (int64_t)n_healthy;
	if (n <= 0)
		return 0;
	return render(out, "any", n, NULL, 0, healthy, n_healthy, NULL, 0, err);
}

static int explicit_(const struct api_cluster *c, const char *const *all, size_t n_all,
		     const char *const *healthy, size_t n_healthy, struct op_buf *out,
		     struct op_err *err)
{
	const struct api_synchronous *s = &c->spec.postgresql.synchronous;
	const char *method = s->method && *s->method ? s->method : "any";
	int64_t maxc = s->max_standby_names_from_cluster;
	bool preferred = s->data_durability && strcmp(s->data_durability, "preferred") == 0;
	if (preferred) {
		size_t n_list = n_healthy;
		if (maxc >= 0 && (int64_t)n_list > maxc)
			n_list = (size_t)maxc;
		int64_t n = s->number;
		if (n > (int64_t)n_list)
			n = (int64_t)n_list;
		if (n <= 0)
			return 0;
		return render(out, method, n, NULL, 0, healthy, n_list, NULL, 0, err);
	}
	size_t n_list = n_all;
	if (maxc >= 0 && (int64_t)n_list > maxc)
		n_list = (size_t)maxc;
	if (n_list + s->standby_names_pre.n + s->standby_names_post.n == 0) {
		_cleanup_free_ char *ph = op_asprintf("%s-placeholder",
						     c->metadata.name ? c->metadata.name : "");
		const char *one[1] = { ph };
		return render(out, method, s->number, NULL, 0, one, 1, NULL, 0, err);
	}
	return render(out, method, s->number, (const char *const *)s->standby_names_pre.items,
		      s->standby_names_pre.n, all, n_list,
		      (const char *const *)s->standby_names_post.items, s->standby_names_post.n,
		      err);
}

int inst_sync_standby_names(const struct api_cluster *c, const char *primary,
			    const struct api_strv *healthy_replicas, struct op_buf *out,
			    struct op_err *err)
{
	_cleanup_free_ const char **all = NULL;
	_cleanup_free_ const char **healthy = NULL;
	size_t n_all = others_sorted(&c->status.instance_names, primary, &all);
	if (!healthy_replicas) /* what the reconciler published, else every instance */
		healthy_replicas = c->status.has_instances_status ? &c->status.healthy
								  : &c->status.instance_names;
	size_t n_healthy = others_sorted(healthy_replicas, primary, &healthy);
	if (c->spec.postgresql.synchronous.present)
		return explicit_(c, all, n_all, healthy, n_healthy, out, err);
	return legacy(c, healthy, n_healthy, out, err);
}
