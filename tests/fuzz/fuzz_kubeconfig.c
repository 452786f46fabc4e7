/* tests/fuzz/fuzz_kubeconfig.c - arbitrary bytes as a kubeconfig
 * (kube/kubeconfig.c: kube_config_from_yaml, the entry kube_config_from_file
 * and kube_config_load use after reading the file), with the current context
 * and with a context named by the first line of the input.
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks, descriptors):
 *   - the answer is 0, or -EINVAL/-EMSGSIZE with a message and no config;
 *   - on 0: server starts with "http" and has no trailing '/', namespace and
 *     context are set (context = the one asked for, when asked), at most 3
 *     inline credentials and each one's path opens and reads;
 *   - the same input gives the same answer twice.
 * Inline *-data becomes sealed memory files (support/memfile.h), closed by
 * kube_config_free: nothing is written to disk.
 * Seeds: tests/fuzz/corpus/kubeconfig/.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "support/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void readable(const char *path, const struct kube_config *cfg)
{
	if (!path)
		return;
	for (size_t i = 0; i < cfg->n_mem; i++) {
		if (strcmp(path, cfg->mem[i].path) != 0)
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			abort();
		char b[64];
		if (read(fd, b, sizeof(b)) < 0)
			abort();
		close(fd);
	}
}

static int run(const char *in, size_t size, const char *context, struct op_buf *sig)
{
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = kube_config_from_yaml(in, size, "/base", context, &cfg, &err);
	if (r < 0) {
		if (cfg || (r != -EINVAL && r != -EMSGSIZE) || !err.msg[0])
			abort();
		if (op_buf_adds(sig, err.msg) < 0)
			abort();
		return r;
	}
	if (r != 0 || !cfg || !cfg->server || strncmp(cfg->server, "http", 4) != 0)
		abort();
	size_t sl = strlen(cfg->server);
	if (sl && cfg->server[sl - 1] == '/')
		abort();
	if (!cfg->namespace || !cfg->namespace[0] || !cfg->context ||
	    (context && strcmp(cfg->context, context) != 0) || cfg->n_mem > 3 || cfg->in_cluster)
		abort();
	readable(cfg->ca_file, cfg);
	readable(cfg->client_cert_file, cfg);
	readable(cfg->client_key_file, cfg);
	if (op_buf_addf(sig, "%s|%s|%s|%d|%zu|%s|%s|%s", cfg->server, cfg->namespace,
			cfg->context, cfg->insecure_skip_tls_verify, cfg->n_mem,
			cfg->token ? cfg->token : "", cfg->token_file ? cfg->token_file : "",
			cfg->username ? cfg->username : "") < 0)
		abort();
	kube_config_free(cfg);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	const char *in = (const char *)data;
	const char *nl = memchr(in, '\n', size);
	char *ctx = nl ? strndup(in, (size_t)(nl - in)) : NULL;
	const char *const contexts[] = { NULL, ctx };
	for (size_t i = 0; i < 2; i++) {
		if (i == 1 && !ctx)
			break;
		struct op_buf a = OP_BUF_INIT(OP_BUF_MAX_FILE), b = OP_BUF_INIT(OP_BUF_MAX_FILE);
		int r1 = run(in, size, contexts[i], &a);
		int r2 = run(in, size, contexts[i], &b);
		if (r1 != r2 || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
			abort();
		op_buf_done(&a);
		op_buf_done(&b);
	}
	free(ctx);
	return 0;
}
