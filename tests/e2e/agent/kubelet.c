/* tests/e2e/agent/kubelet.c - the part of the kubelet API that `kubectl logs`
 * and `kubectl exec` use, over HTTPS on the node's InternalIP:10250
 * (libmicrohttpd): GET /containerLogs/<ns>/<pod>/<container>[?tailLines=N],
 * and POST /exec/<ns>/<pod>/<container>?command=.. upgraded to SPDY/3.1
 * (exec_stream.c serves the session in a thread of its own). The serving
 * certificate is self-signed (openssl(1) at start): the e2e apiserver has no
 * --kubelet-certificate-authority, so it does not verify it, as with a
 * kubeadm kubelet. follow=true returns what is there and ends. */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

struct na_kubelet {
	struct MHD_Daemon *d;
	char *state_dir;
	atomic_bool stopping; /* exec sessions end when set */
	atomic_int sessions;  /* exec sessions running */
};

#define MAX_PROTOCOLS 16
#define STOP_WAIT_MS 3000

/* One request's context (*req_cls) for /exec; GET requests use (void *)1. */
struct exec_ctx {
	struct na_exec_req req;
	int rc;                 /* first error adding a query argument */
	char *offered[MAX_PROTOCOLS]; /* X-Stream-Protocol-Version values (owned) */
	size_t n_offered;
};
static char get_ctx; /* *req_cls of the other requests */

/* An upgraded session's thread argument (owned by the thread). */
struct exec_session {
	struct na_kubelet *k;
	struct na_exec_req req;
	char *extra;
	size_t n_extra;
	int fd;
	struct MHD_UpgradeResponseHandle *urh;
};

bool na_safe_component(const char *s, size_t n)
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
		if ((i < 2 && !slash) || (i == 2 && slash) || !na_safe_component(p, n))
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

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			      const char *value)
{
	struct exec_ctx *x = cls;
	(void)kind;
	int rc = na_exec_add_arg(&x->req, key, value);
	if (rc < 0 && !x->rc)
		x->rc = rc;
	return MHD_YES;
}

/* X-Stream-Protocol-Version: once per value, or comma-separated. */
static enum MHD_Result add_protocol(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct exec_ctx *x = cls;
	(void)kind;
	if (!key || !value || strcasecmp(key, "X-Stream-Protocol-Version"))
		return MHD_YES;
	for (const char *p = value; *p && x->n_offered < MAX_PROTOCOLS;) {
		p += strspn(p, " ,");
		size_t n = strcspn(p, " ,");
		if (n)
			x->offered[x->n_offered++] = op_strndup(p, n);
		p += n;
	}
	return MHD_YES;
}

static void *session_main(void *arg)
{
	struct exec_session *s = arg;
	if (s->req.portforward)
		na_pf_serve(s->fd, &s->req, s->extra, s->n_extra, s->k->state_dir,
			    &s->k->stopping);
	else
		na_exec_serve(s->fd, &s->req, s->extra, s->n_extra, s->k->state_dir,
			      &s->k->stopping);
	MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
	atomic_fetch_sub(&s->k->sessions, 1);
	na_exec_req_done(&s->req);
	free(s->extra);
	free(s);
	return NULL;
}

/* After the 101: the session runs in a detached thread (MHD's thread must
 * not block); the request's arguments move into it. */
static void on_upgrade(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra,
		       size_t n_extra, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct na_kubelet *k = cls;
	struct exec_ctx *x = req_cls;
	(void)c;
	struct exec_session *s = op_calloc(1, sizeof(*s));
	s->k = k;
	s->req = x->req;
	x->req.argc = 0; /* moved */
	s->extra = op_malloc(n_extra + 1);
	memcpy(s->extra, extra, n_extra);
	s->n_extra = n_extra;
	s->fd = sock;
	s->urh = urh;
	/* small frames go out at once (the socket may still be corked from the 101) */
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CORK_OFF);
	atomic_fetch_add(&k->sessions, 1);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, session_main, s) != 0) {
		op_log_warn("kubelet exec: no thread for the session");
		atomic_fetch_sub(&k->sessions, 1);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		na_exec_req_done(&s->req);
		free(s->extra);
		free(s);
	}
	pthread_attr_destroy(&at);
}

static void request_done(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	struct exec_ctx *x = *req_cls;
	if (!x || *req_cls == &get_ctx)
		return;
	na_exec_req_done(&x->req);
	for (size_t i = 0; i < x->n_offered; i++)
		free(x->offered[i]);
	free(x);
	*req_cls = NULL;
}

/* Checks an exec request (the kubelet's answers where it has one) and
 * answers 101 with the protocol, or an error. */
static enum MHD_Result exec_reply(struct na_kubelet *k, struct MHD_Connection *c,
				  struct exec_ctx *x)
{
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, x);
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_protocol, x);
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
	const char *proto = x->req.portforward
				    ? na_pf_pick_protocol((const char *const *)x->offered, x->n_offered)
				    : na_exec_pick_protocol((const char *const *)x->offered,
							    x->n_offered);
	if (x->req.attach)
		return reply(c, 400, "attach is not supported by the e2e node agent\n");
	if (x->rc < 0)
		return reply(c, 400, "command too long\n");
	if (!x->req.argc && !x->req.portforward)
		return reply(c, 400, "you must specify at least one command for the container\n");
	if (!up || strcasecmp(up, "SPDY/3.1"))
		return reply(c, 400, "unable to upgrade: missing upgrade headers in request\n");
	if (!proto)
		return reply(c, 403, "unable to upgrade: unable to negotiate protocol\n");
	/* the container's pid file, or the pod's (its first container) */
	_cleanup_free_ char *pidfile =
		x->req.portforward
			? op_asprintf("%s/run/%s_%s.pid", k->state_dir, x->req.ns, x->req.pod)
			: op_asprintf("%s/run/%s_%s_%s.pid", k->state_dir, x->req.ns, x->req.pod,
				      x->req.ctr);
	if (access(pidfile, F_OK) < 0) {
		_cleanup_free_ char *m =
			x->req.portforward
				? op_asprintf("pod %s/%s has no running container\n", x->req.ns,
					      x->req.pod)
				: op_asprintf("container %s of pod %s/%s is not running\n",
					      x->req.ctr, x->req.ns, x->req.pod);
		return reply(c, 404, m);
	}
	struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgrade, k);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Upgrade", "SPDY/3.1"); /* MHD adds Connection: Upgrade */
	MHD_add_response_header(r, "X-Stream-Protocol-Version", proto);
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result logs_reply(struct na_kubelet *k, struct MHD_Connection *c,
				  const char *url)
{
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct na_kubelet *k = cls;
	(void)version;
	(void)upload;
	struct na_exec_req probe;
	bool is_exec = na_exec_parse_path(url, &probe) != -ENOENT;
	bool ok_method = is_exec ? !strcmp(method, "POST") || !strcmp(method, "GET")
				 : !strcmp(method, "GET") || !strcmp(method, "HEAD");
	if (!ok_method)
		return reply(c, 405, "method not allowed\n");
	if (*upload_size)
		return MHD_NO; /* no request here has a body */
	if (!*req_cls) { /* first call: headers only */
		if (!is_exec) {
			*req_cls = &get_ctx;
			return MHD_YES;
		}
		struct exec_ctx *x = op_calloc(1, sizeof(*x));
		*req_cls = x;
		if (na_exec_parse_path(url, &x->req) < 0)
			x->rc = -EINVAL;
		return MHD_YES;
	}
	if (!is_exec)
		return logs_reply(k, c, url);
	struct exec_ctx *x = *req_cls;
	if (x->rc == -EINVAL)
		return reply(c, 400, "bad exec path\n");
	return exec_reply(k, c, x);
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
	kl->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG |
					 MHD_ALLOW_UPGRADE,
				 (uint16_t)port, NULL, NULL, handle, kl, MHD_OPTION_SOCK_ADDR, &sa,
				 MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
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
	/* exec sessions notice within their 200 ms poll; MHD must not stop
	 * under an upgraded connection */
	atomic_store(&k->stopping, true);
	for (int i = 0; i < STOP_WAIT_MS / 50 && atomic_load(&k->sessions) > 0; i++)
		usleep(50 * 1000);
	MHD_stop_daemon(k->d);
	free(k->state_dir);
	free(k);
}
