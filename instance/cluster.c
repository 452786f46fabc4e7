/* instance/cluster.c - where the Cluster comes from: the API server (the
 * pod's service account) or, for local testing, a JSON/YAML file. */
#include <errno.h>
#include <string.h>

#include "api/plugin.h"
#include "api/timestamp.h"
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

/* api_object_store_fn: GET objectstores/<name> in the Cluster's namespace
 * (the Role grants exactly those names, reconciler/objects.c). */
static json_object *object_store(void *ud, const char *name)
{
	const struct inst_source *src = ud;
	json_object *obj = NULL;
	struct op_err e = OP_ERR_INIT;
	if (!src->kube || kube_get(src->kube, KUBE_OBJECTSTORES, src->ns, name, &obj, &e) < 0) {
		op_log_warn("cannot read the ObjectStore", "name", name, "error",
			    src->kube ? e.msg : "no API server (cluster file)");
		return NULL;
	}
	return obj;
}

int inst_cluster_resolve_plugins(const struct inst_source *src, struct api_cluster *c,
				 struct op_err *err)
{
	return api_cluster_resolve_plugins(c, object_store, (void *)src, err);
}

/* bootstrap.recovery.backup.name: the Backup (GET, the Role grants that one)
 * as the recovery source (api_cluster_use_backup). It matters only while the
 * Cluster is not bootstrapped: a failure is logged, not returned (a running
 * instance must not stop because its origin Backup was deleted since). */
static int recovery_backup(const struct inst_source *src, struct api_cluster *c,
			   struct op_err *err)
{
	const struct api_recovery *rec = &c->spec.bootstrap.recovery;
	if (!rec->present || !rec->backup_name || rec->source || !src->kube)
		return 0;
	_cleanup_(op_json_putp) json_object *b = NULL;
	int r = kube_get(src->kube, KUBE_BACKUPS, src->ns, rec->backup_name, &b, err);
	if (r < 0)
		return op_err_prefix(err, "spec.bootstrap.recovery.backup.name: Backup %s: ",
				     rec->backup_name);
	return api_cluster_use_backup(c, b, err);
}

int inst_cluster_load(const struct inst_source *src, struct api_cluster **ret,
		      struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *obj = NULL;
	int r = src->cluster_file ? load_file(src->cluster_file, &obj, err)
				  : kube_get(src->kube, KUBE_CLUSTERS, src->ns, src->name, &obj, err);
	if (r)
		return r;
	r = api_cluster_decode(obj, NULL, ret, err);
	struct op_err pe = OP_ERR_INIT;
	if (r == 0 && inst_cluster_resolve_plugins(src, *ret, &pe) < 0)
		op_log_warn("the barman-cloud plugin's ObjectStore cannot be used", "error", pe.msg);
	if (r == 0 && recovery_backup(src, *ret, &pe) < 0) /* init then says it has no source */
		op_log_error("the recovery's Backup cannot be used", "error", pe.msg);
	return r;
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

/* One handover write: reads the Cluster and, when it still names me target
 * and current primary, merge-patches targetPrimary to cand with the read's
 * resourceVersion as the precondition. 0 written, 1 not me any more, -ESTALE
 * the Cluster changed between the read and the patch, other errors in err. */
static int handover_patch(const struct inst_source *src, const char *me, const char *cand,
			  struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *obj = NULL;
	int r = kube_get(src->kube, KUBE_CLUSTERS, src->ns, src->name, &obj, err);
	if (r)
		return op_err_prefix(err, "reading the Cluster");
	const char *t = op_json_str_at(obj, "status.targetPrimary");
	const char *cur = op_json_str_at(obj, "status.currentPrimary");
	const char *rv = kube_obj_resource_version(obj);
	if (!t || !cur || !rv || strcmp(t, me) != 0 || strcmp(cur, me) != 0)
		return 1;
	_cleanup_free_ char *ts = api_time_rfc3339_us(api_time_now_us());
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	r = op_buf_adds(&b, "{\"metadata\":{\"resourceVersion\":");
	r = r ? r : op_buf_add_json_str(&b, rv);
	r = r ? r : op_buf_adds(&b, "},\"status\":{\"targetPrimary\":");
	r = r ? r : op_buf_add_json_str(&b, cand);
	r = r ? r : op_buf_addf(&b, ",\"targetPrimaryTimestamp\":\"%s\"}}", ts);
	if (r < 0)
		return op_err_set(err, r, "handover patch too large");
	return inst_cluster_patch_status(src, op_buf_str(&b), err);
}

int inst_cluster_hand_over(const struct inst_source *src, const char *me, const char *cand,
			   struct op_err *err)
{
	/* a Conflict is the reconciler writing the status between the read and the
	 * patch (often right after a switchover): read again. Giving up meant the
	 * slow stop (smart shutdown for smartShutdownTimeout), 10 s of it in the
	 * fault suite's Pod deletion after a switchover. */
	int r = -ESTALE;
	for (int attempt = 0; r == -ESTALE && attempt < INST_HANDOVER_ATTEMPTS; attempt++) {
		op_err_clear(err);
		r = handover_patch(src, me, cand, err);
	}
	return r;
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
