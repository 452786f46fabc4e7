/* instance/cluster.c - where the Cluster comes from: the API server (the
 * pod's service account) or, for local testing, a JSON/YAML file. */
#include <errno.h>
#include <string.h>

#include "instance/internal.h"
#include "instance/lease.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "support/yaml.h"

void inst_paths_default(struct inst_paths *p)
{
	if (!p->controller_dir)
		p->controller_dir = INST_CONTROLLER_DIR;
	if (!p->certs_dir)
		p->certs_dir = INST_CERTS_DIR;
	if (!p->secrets_dir)
		p->secrets_dir = INST_SECRETS_DIR;
}

static int load_file(const char *path, json_object **ret, struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int r = inst_read_file(path, b.max, &b, err);
	if (r)
		return r;
	_cleanup_(op_json_putp) json_object *docs = NULL;
	r = op_yaml_or_json_parse_docs(op_buf_str(&b), b.len, NULL, &docs, err);
	if (r < 0)
		return op_err_prefix(err, "%s: ", path);
	if (json_object_array_length(docs) != 1)
		return op_err_set(err, -EINVAL, "%s: expected one Cluster document", path);
	*ret = json_object_get(json_object_array_get_idx(docs, 0));
	return 0;
}

int inst_cluster_load(const struct inst_source *src, struct api_cluster **ret,
		      struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *obj = NULL;
	int r = src->cluster_file ? load_file(src->cluster_file, &obj, err)
				  : kube_get(src->kube, KUBE_CLUSTERS, src->ns, src->name, &obj, err);
	if (r)
		return r;
	return api_cluster_decode(obj, NULL, ret, err);
}

int inst_cluster_patch_status(const struct inst_source *src, const char *patch,
			      struct op_err *err)
{
	if (src->cluster_file) {
		op_log_info("status patch not sent (cluster file mode)", "patch", patch);
		return 0;
	}
	return kube_patch_status(src->kube, KUBE_CLUSTERS, src->ns, src->name, KUBE_PATCH_MERGE,
				 patch, NULL, err);
}

int inst_kube_open(const char *kubeconfig, bool fast, struct kube_client **ret,
		   struct op_err *err)
{
	struct kube_config *cfg = NULL;
	int r = kube_config_load(kubeconfig, &cfg, err);
	if (r)
		return r;
	const struct kube_client_opts fast_opts = { .timeout_ms = INST_LEASE_READ_TIMEOUT_MS,
						    .connect_timeout_ms = 1000,
						    .max_retries = -1 };
	return kube_client_new(cfg, fast ? &fast_opts : NULL, ret, err);
}
