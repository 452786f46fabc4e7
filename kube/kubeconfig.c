/* kube/kubeconfig.c - kubeconfig (YAML) and in-cluster configuration. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"
#include "support/yaml.h"

#define KUBECONFIG_MAX_DEPTH 32

/* ---- YAML -> JSON (support/yaml.h: Kubernetes' YAML semantics, bounded) ---- */

static int yaml_to_json(const char *yaml, size_t len, json_object **ret, struct op_err *err)
{
	const struct op_yaml_limits lim = { .max_bytes = OP_BUF_MAX_FILE,
					    .max_depth = KUBECONFIG_MAX_DEPTH,
					    .max_nodes = 200000 };
	_cleanup_(op_json_putp) json_object *docs = NULL;
	int r = op_yaml_parse_docs(yaml, len, &lim, &docs, err);
	if (r < 0)
		return op_err_prefix(err, "invalid YAML");
	json_object *root = r > 0 ? json_object_array_get_idx(docs, 0) : NULL;
	if (!root || !json_object_is_type(root, json_type_object))
		return op_err_set(err, -EINVAL, "kubeconfig is not a YAML mapping");
	*ret = json_object_get(root);
	return 0;
}

/* ---- base64 ---- */

static int b64val(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

static int base64_decode(const char *s, struct op_buf *out)
{
	uint32_t acc = 0;
	int bits = 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '=' || ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
			continue;
		int v = b64val(ch);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (op_buf_addc(out, (char)((acc >> bits) & 0xff)) < 0)
				return -EMSGSIZE;
		}
	}
	return 0;
}

/* ---- helpers ---- */

struct kube_config *kube_config_free(struct kube_config *cfg)
{
	if (!cfg)
		return NULL;
	for (size_t i = 0; i < cfg->n_mem; i++)
		op_memfile_close(&cfg->mem[i]);
	free(cfg->server);
	free(cfg->ca_file);
	free(cfg->client_cert_file);
	free(cfg->client_key_file);
	free(cfg->token);
	free(cfg->token_file);
	free(cfg->username);
	free(cfg->password);
	free(cfg->namespace);
	free(cfg->context);
	free(cfg);
	return NULL;
}

static void kube_config_freep(struct kube_config **p)
{
	kube_config_free(*p);
}

/* Finds the entry of `list` (array of {name, <field>: {...}}) named name and
 * returns its <field> object (borrowed). */
static json_object *named_entry(json_object *root, const char *list, const char *field,
				const char *name)
{
	json_object *arr;
	if (!json_object_object_get_ex(root, list, &arr) || !json_object_is_type(arr, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);
		const char *n = op_json_str_at(e, "name");
		json_object *v;
		if (n && !strcmp(n, name) && json_object_object_get_ex(e, field, &v) &&
		    json_object_is_type(v, json_type_object))
			return v;
	}
	return NULL;
}

static char *resolve_path(const char *base_dir, const char *p)
{
	if (p[0] == '/' || !base_dir || !*base_dir)
		return op_strdup(p);
	return op_asprintf("%s/%s", base_dir, p);
}

/* Inline credentials stay in memory (support/memfile.h): libcurl with
 * GnuTLS takes them as paths only, and nothing may reach a disk. */
static int write_private(struct kube_config *cfg, const char *fname, const struct op_buf *data,
			 char **ret_path, struct op_err *err)
{
	if (cfg->n_mem == OP_ARRAY_SIZE(cfg->mem))
		return op_err_set(err, -EINVAL, "%s: too many inline credentials", fname);
	struct op_memfile m = OP_MEMFILE_INIT;
	int r = op_memfile_open(&m, fname, data->data, data->len, err);
	if (r < 0)
		return r;
	cfg->mem[cfg->n_mem++] = m;
	*ret_path = op_strdup(m.path);
	return 0;
}

/* Sets *dst from obj[file_key] (a path) or obj[data_key] (base64, materialized). */
static int file_or_data(struct kube_config *cfg, json_object *obj, const char *file_key,
			const char *data_key, const char *fname, const char *base_dir,
			char **dst, struct op_err *err)
{
	const char *data = op_json_str_at(obj, data_key);
	if (data && *data) {
		_cleanup_(op_buf_donep) struct op_buf raw = OP_BUF_INIT(OP_BUF_MAX_FILE);
		if (base64_decode(data, &raw) < 0)
			return op_err_set(err, -EINVAL, "%s: invalid base64", data_key);
		return write_private(cfg, fname, &raw, dst, err);
	}
	const char *file = op_json_str_at(obj, file_key);
	if (file && *file)
		*dst = resolve_path(base_dir, file);
	return 0;
}

/* insecure-skip-tls-verify: a YAML boolean (or the string "true"). */
static bool flag_true(json_object *obj, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(obj, key, &v))
		return false;
	if (json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	return json_object_is_type(v, json_type_string) &&
	       !strcmp(json_object_get_string(v), "true");
}

int kube_config_from_yaml(const char *yaml, size_t len, const char *base_dir, const char *context,
			  struct kube_config **ret_cfg, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *root = NULL;
	int r = yaml_to_json(yaml, len, &root, err);
	if (r < 0)
		return r;
	const char *ctx_name = context ? context : op_json_str_at(root, "current-context");
	if (!ctx_name || !*ctx_name)
		return op_err_set(err, -EINVAL, "kubeconfig has no current-context");
	json_object *ctx = named_entry(root, "contexts", "context", ctx_name);
	if (!ctx)
		return op_err_set(err, -EINVAL, "kubeconfig: context \"%s\" not found", ctx_name);
	const char *cluster_name = op_json_str_at(ctx, "cluster");
	const char *user_name = op_json_str_at(ctx, "user");
	json_object *cluster = cluster_name ? named_entry(root, "clusters", "cluster", cluster_name)
					    : NULL;
	if (!cluster)
		return op_err_set(err, -EINVAL, "kubeconfig: cluster \"%s\" of context \"%s\" not found",
				  cluster_name ? cluster_name : "", ctx_name);
	json_object *user = user_name ? named_entry(root, "users", "user", user_name) : NULL;

	_cleanup_(kube_config_freep) struct kube_config *cfg = op_calloc(1, sizeof(*cfg));
	const char *server = op_json_str_at(cluster, "server");
	if (!server || strncmp(server, "http", 4) != 0)
		return op_err_set(err, -EINVAL, "kubeconfig: cluster \"%s\" has no valid server",
				  cluster_name);
	cfg->server = op_strdup(server);
	size_t sl = strlen(cfg->server);
	while (sl > 0 && cfg->server[sl - 1] == '/')
		cfg->server[--sl] = '\0';
	cfg->insecure_skip_tls_verify = flag_true(cluster, "insecure-skip-tls-verify");
	r = file_or_data(cfg, cluster, "certificate-authority", "certificate-authority-data",
			 "ca.crt", base_dir, &cfg->ca_file, err);
	if (r < 0)
		return op_err_prefix(err, "kubeconfig cluster \"%s\"", cluster_name);
	if (user) {
		r = file_or_data(cfg, user, "client-certificate", "client-certificate-data",
				 "client.crt", base_dir, &cfg->client_cert_file, err);
		if (r >= 0)
			r = file_or_data(cfg, user, "client-key", "client-key-data", "client.key",
					 base_dir, &cfg->client_key_file, err);
		if (r < 0)
			return op_err_prefix(err, "kubeconfig user \"%s\"", user_name);
		const char *s;
		if ((s = op_json_str_at(user, "token")) && *s)
			cfg->token = op_strdup(s);
		if ((s = op_json_str_at(user, "tokenFile")) && *s)
			cfg->token_file = resolve_path(base_dir, s);
		if ((s = op_json_str_at(user, "username")) && *s)
			cfg->username = op_strdup(s);
		if ((s = op_json_str_at(user, "password")))
			cfg->password = op_strdup(s);
	}
	const char *ns = op_json_str_at(ctx, "namespace");
	cfg->namespace = op_strdup(ns && *ns ? ns : "default");
	cfg->context = op_strdup(ctx_name);
	*ret_cfg = TAKE_PTR(cfg);
	return 0;
}

int kube_config_from_file(const char *path, const char *context, struct kube_config **ret_cfg,
			  struct op_err *err)
{
	_cleanup_(op_buf_donep) struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int r = kube__read_file(path, OP_BUF_MAX_FILE, &b, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dir = op_strdup(path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	r = kube_config_from_yaml(op_buf_str(&b), b.len, slash ? dir : ".", context, ret_cfg, err);
	if (r < 0)
		return op_err_prefix(err, "%s", path);
	return 0;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret_cfg, struct op_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!sa_dir)
		sa_dir = getenv("PGOP_SA_DIR");
	if (!sa_dir || !*sa_dir)
		sa_dir = KUBE_SA_DIR_DEFAULT;
	if (!host || !*host || !port || !*port)
		return op_err_set(err, -ENOENT,
				  "not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
		return op_err_set(err, -EINVAL, "KUBERNETES_SERVICE_PORT \"%s\" is not a port", port);
	_cleanup_free_ char *token = op_asprintf("%s/token", sa_dir);
	if (access(token, R_OK) < 0)
		return op_err_set(err, -ENOENT, "not in a cluster: cannot read \"%s\": %s", token,
				  strerror(errno));
	_cleanup_(kube_config_freep) struct kube_config *cfg = op_calloc(1, sizeof(*cfg));
	bool v6 = strchr(host, ':') != NULL;
	cfg->server = op_asprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
	cfg->token_file = TAKE_PTR(token);
	_cleanup_free_ char *ca = op_asprintf("%s/ca.crt", sa_dir);
	if (access(ca, R_OK) == 0)
		cfg->ca_file = TAKE_PTR(ca);
	_cleanup_free_ char *nsf = op_asprintf("%s/namespace", sa_dir);
	_cleanup_(op_buf_donep) struct op_buf nsb = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (kube__read_file(nsf, 256, &nsb, NULL) == 0 && nsb.len > 0) {
		size_t n = strcspn(op_buf_str(&nsb), " \t\r\n");
		cfg->namespace = op_strndup(op_buf_str(&nsb), n);
	}
	if (!cfg->namespace || !*cfg->namespace) {
		free(cfg->namespace);
		cfg->namespace = op_strdup("default");
	}
	cfg->in_cluster = true;
	*ret_cfg = TAKE_PTR(cfg);
	return 0;
}

int kube_config_load(const char *path, struct kube_config **ret_cfg, struct op_err *err)
{
	if (path && *path) {
		if (access(path, F_OK) < 0)
			return op_err_set(err, -ENOENT, "kubeconfig \"%s\" does not exist", path);
		return kube_config_from_file(path, NULL, ret_cfg, err);
	}
	const char *env = getenv("KUBECONFIG");
	if (env && *env) {
		_cleanup_free_ char *list = op_strdup(env);
		char *save = NULL;
		for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
			if (access(p, F_OK) == 0)
				return kube_config_from_file(p, NULL, ret_cfg, err);
		}
	}
	struct op_err local = OP_ERR_INIT;
	int r = kube_config_in_cluster(NULL, ret_cfg, &local);
	if (r == -ENOENT)
		return op_err_set(err, -ENOENT, "no cluster access: no --kubeconfig, no $KUBECONFIG "
						"file and not in a pod (%s)", local.msg);
	if (r < 0)
		return op_err_set(err, r, "%s", local.msg);
	return 0;
}
