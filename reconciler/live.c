/* reconciler/live.c - cache reads and instance status for apiserver/ (live.h). */
#include "reconciler/live.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "api/cluster.h"
#include "api/names.h"
#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/json.h"

json_object *rc_live_clusters(struct rc_controller *c, const char *ns)
{
	if (ns || c->n_ns == 0) {
		struct kube_informer *inf = rc_informer(c, RC_INF_CLUSTERS, ns);
		json_object *out = inf ? kube_informer_list(inf, ns) : json_object_new_array();
		if (!out)
			abort();
		return out;
	}
	json_object *out = json_object_new_array();
	if (!out)
		abort();
	for (size_t i = 0; i < c->n_ns; i++) { /* in --watch-namespaces order */
		json_object *part = kube_informer_list(c->inf[RC_INF_CLUSTERS][i], c->ns[i]);
		if (!part)
			abort();
		for (size_t k = 0; k < json_object_array_length(part); k++)
			op_json_append(out, json_object_get(json_object_array_get_idx(part, k)));
		json_object_put(part);
	}
	return out;
}

json_object *rc_live_pods(struct rc_controller *c, const char *ns, const char *cluster)
{
	json_object *all = rc_cache_owned(c, RC_INF_PODS, ns, cluster);
	json_object *out = json_object_new_array();
	if (!out)
		abort();
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		json_object *p = json_object_array_get_idx(all, i);
		json_object *l = op_json_at(p, "metadata.labels");
		json_object *role = NULL;
		if (l && json_object_object_get_ex(l, RC_LABEL_POD_ROLE, &role) &&
		    json_object_is_type(role, json_type_string) &&
		    strcmp(json_object_get_string(role), "instance") == 0)
			op_json_append(out, json_object_get(p));
	}
	json_object_put(all);
	return out;
}

int rc_live_fetch(struct rc_controller *c, const char *ns, const char *cluster,
		  struct rc_instance *v, size_t n, long timeout_ms, struct op_err *err)
{
	json_object *obj = rc_cache_get(c, RC_INF_CLUSTERS, ns, cluster);
	if (!obj)
		return op_err_set(err, -ENOENT, "cluster %s/%s not in the cache", ns, cluster);
	struct api_cluster *ac = NULL;
	int r = api_cluster_decode(obj, NULL, &ac, err);
	json_object_put(obj);
	if (r < 0)
		return r;
	_cleanup_free_ char *key = op_asprintf("%s/%s", ns, cluster);
	_cleanup_free_ char *sname = api_secret_name(cluster, API_SECRET_CA);
	json_object *sec = rc_cache_get(c, RC_INF_SECRETS, ns, sname);
	struct pki_secret_data d = { 0 };
	struct rc_run run = { .ctl = c, .key = key, .c = ac, .ns = ns, .name = cluster,
			      .now = (int64_t)time(NULL), .err = err };
	if (!sec) {
		r = op_err_set(err, -ENOENT, "secret %s/%s not in the cache", ns, sname);
		goto out;
	}
	r = pki_secret_parse(PKI_SECRET_CA, sec, &d, err);
	json_object_put(sec);
	if (r < 0)
		goto out;
	run.ca.cert_pem = TAKE_PTR(d.crt);
	run.ca.key_pem = TAKE_PTR(d.key);
	r = rc_ensure_client_cert(&run);
	if (r >= 0) {
		struct rc_fetch_opts fo = { .timeout_ms = timeout_ms };
		r = rc_fetch_statuses(run.ca.cert_pem, run.client.cert_pem ? &run.client : NULL, v,
				      n, &fo, err);
	}
out:
	pki_secret_data_done(&d);
	pki_pair_done(&run.ca);
	pki_pair_done(&run.client);
	api_cluster_free(ac);
	return r;
}
