/* tests/e2e/agent/kubelet.c - the part of the kubelet API that `kubectl logs`
 * uses: GET /containerLogs/<ns>/<pod>/<container>[?tailLines=N] over HTTPS on
 * the node's InternalIP:10250 (libmicrohttpd). The serving certificate is
 * self-signed (openssl(1) at start): the e2e apiserver has no
 * --kubelet-certificate-authority, so it does not verify it, as with a
 * kubeadm kubelet. follow=true returns what is there and ends. */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

struct na_kubelet {
	struct MHD_Daemon *d;
	char *state_dir;
};

static bool safe_component(const char *s, size_t n)
{
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      (c >= 'A' && c <= 'Z') || c == '_'))
			return false;
	}
	return !(n <= 2 && s[0] == '.');
}

int na_log_path(const char *state_dir, const char *url, struct op_buf *ret_path)
{
	static const char prefix[] = "/containerLogs/";
	if (strncmp(url, prefix, sizeof(prefix) - 1) != 0)
		return -ENOENT;
	const char *p = url + sizeof(prefix) - 1;
	const char *parts[3];
	size_t lens[3];
	for (int i = 0; i < 3; i++) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if ((i < 2 && !slash) || (i == 2 && slash) || !safe_component(p, n))
			return -EINVAL;
		parts[i] = p;
		lens[i] = n;
		p = slash ? slash + 1 : p + n;
	}
	op_buf_reset(ret_path);
	return op_buf_addf(ret_path, "%s/logs/%.*s_%.*s_%.*s.log", state_dir, (int)lens[0], parts[0],
			   (int)lens[1], parts[1], (int)lens[2], parts[2]);
}

/* The last n lines of b (all when n < 0). */
const char *na_tail_lines(const struct op_buf *b, long n)
{
	const char *s = op_buf_str(b);
	if (n < 0)
		return s;
	if (n == 0)
		return s + b->len;
	size_t end = b->len;
	if (end && s[end - 1] == '\n')
		end--;
	long seen = 0;
	for (size_t i = end; i-- > 0;)
		if (s[i] == '\n' && ++seen == n)
			return s + i + 1;
	return s;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	enum MHD_Result ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct na_kubelet *k = cls;
	(void)version;
	(void)upload;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, 405, "method not allowed\n");
	if (*upload_size)
		return MHD_NO;
	if (!*req_cls) { /* first call: headers only */
		*req_cls = (void *)1;
		return MHD_YES;
	}
	if (!strcmp(url, "/healthz"))
		return reply(c, 200, "ok");
	struct op_buf path = OP_BUF_INIT(OP_BUF_MAX_SMALL), b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	int rc = na_log_path(k->state_dir, url, &path);
	enum MHD_Result ret;
	if (rc == -ENOENT) {
		ret = reply(c, 404, "not found\n");
	} else if (rc < 0) {
		ret = reply(c, 400, "bad container log path\n");
	} else if (na_read_file(op_buf_str(&path), &b, NULL) < 0) {
		ret = reply(c, 404, "no log for this container on this node\n");
	} else {
		const char *tl = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tailLines");
		long n = -1;
		if (tl) {
			char *end;
			errno = 0;
			n = strtol(tl, &end, 10);
			if (errno || *end || n < 0)
				n = -1;
		}
		ret = reply(c, 200, na_tail_lines(&b, n));
	}
	op_buf_done(&path);
	op_buf_done(&b);
	return ret;
}

struct na_kubelet *na_kubelet_start(const char *state_dir, const char *ip, int port,
				    struct op_err *err)
{
	/* per address: the node agents of one environment share state_dir (logs) */
	_cleanup_free_ char *crt = op_asprintf("%s/kubelet-%s.crt", state_dir, ip);
	_cleanup_free_ char *key = op_asprintf("%s/kubelet-%s.key", state_dir, ip);
	_cleanup_free_ char *san = op_asprintf("subjectAltName=IP:%s", ip);
	const char *gen[] = { "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
			      "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj",
			      "/CN=pgop-e2e-node", "-addext", san, "-keyout", key, "-out", crt,
			      NULL };
	struct op_buf c = OP_BUF_INIT(OP_BUF_MAX_SMALL), k = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct na_kubelet *kl = NULL;
	if (na_run(gen, NULL, NULL, err) < 0 || na_read_file(crt, &c, err) < 0 ||
	    na_read_file(key, &k, err) < 0)
		goto out;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		op_err_set(err, -EINVAL, "bad kubelet address %s", ip);
		goto out;
	}
	kl = op_calloc(1, sizeof(*kl));
	kl->state_dir = op_strdup(state_dir);
	kl->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG,
				 (uint16_t)port, NULL, NULL, handle, kl, MHD_OPTION_SOCK_ADDR, &sa,
				 MHD_OPTION_HTTPS_MEM_CERT, op_buf_str(&c), MHD_OPTION_HTTPS_MEM_KEY,
				 op_buf_str(&k), MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	if (!kl->d) {
		op_err_set(err, -EADDRINUSE, "cannot serve the kubelet API on %s:%d", ip, port);
		free(kl->state_dir);
		free(kl);
		kl = NULL;
	}
out:
	op_buf_done(&c);
	op_buf_done(&k);
	return kl;
}

void na_kubelet_stop(struct na_kubelet *k)
{
	if (!k)
		return;
	MHD_stop_daemon(k->d);
	free(k->state_dir);
	free(k);
}
