/* tests/e2e/agent/probes.c - startup/readiness/liveness probes, run from the
 * host into the pod IP (httpGet over http/https without certificate checks,
 * tcpSocket) or inside the container's namespaces (exec, through
 * `pgop-node-agent exec` under timeout(1)). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

static const char *const probe_keys[NA_PROBE__N] = { "startupProbe", "readinessProbe",
						      "livenessProbe" };

static int64_t p_int(json_object *probe, const char *key, int64_t dflt)
{
	json_object *v = op_json_at(probe, key);
	return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : dflt;
}

/* Port: a number or the name of a container port. */
static int probe_port(json_object *spec, json_object *port)
{
	if (!port)
		return -1;
	if (json_object_is_type(port, json_type_int))
		return (int)json_object_get_int64(port);
	const char *name = json_object_get_string(port);
	json_object *ports = op_json_at(spec, "ports");
	for (size_t i = 0; name && ports && i < json_object_array_length(ports); i++) {
		json_object *p = json_object_array_get_idx(ports, i);
		const char *n = op_json_str_at(p, "name");
		if (n && !strcmp(n, name))
			return (int)p_int(p, "containerPort", -1);
	}
	return -1;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
	(void)ptr;
	(void)ud;
	return size * nmemb;
}

static bool http_probe(const char *ip, json_object *spec, json_object *h, long timeout_s)
{
	int port = probe_port(spec, op_json_at(h, "port"));
	const char *scheme = op_json_str_at(h, "scheme");
	const char *path = op_json_str_at(h, "path");
	const char *host = op_json_str_at(h, "host");
	if (port <= 0 || port > 65535)
		return false;
	bool https = scheme && !strcasecmp(scheme, "HTTPS");
	_cleanup_free_ char *url = op_asprintf("%s://%s:%d%s%s", https ? "https" : "http",
					       host ? host : ip, port,
					       path && path[0] == '/' ? "" : "/", path ? path : "");
	CURL *c = curl_easy_init();
	if (!c)
		return false;
	struct curl_slist *hdrs = curl_slist_append(NULL, "User-Agent: kube-probe/1.34");
	json_object *extra = op_json_at(h, "httpHeaders");
	for (size_t i = 0; extra && i < json_object_array_length(extra); i++) {
		json_object *e = json_object_array_get_idx(extra, i);
		_cleanup_free_ char *line = op_asprintf("%s: %s", op_json_str_at(e, "name"),
							op_json_str_at(e, "value"));
		hdrs = curl_slist_append(hdrs, line);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	/* like the kubelet, an HTTPS probe does not verify the certificate; and without a
	 * CA file of its own curl+GnuTLS would still parse the whole system bundle
	 * (~140 certificates) at every handshake: 20 HTTPS probes a second for 10
	 * three-instance Clusters made that most of the agent's CPU (bench/live.sh) */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_CAINFO, NULL);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_s * 1000);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE, 1L << 20);
	long code = 0;
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc == CURLE_OK && code >= 200 && code < 400;
}

static bool tcp_probe(const char *ip, json_object *spec, json_object *t, long timeout_s)
{
	int port = probe_port(spec, op_json_at(t, "port"));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (port <= 0 || port > 65535 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return false;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		ok = true;
	} else if (errno == EINPROGRESS) {
		struct pollfd p = { fd, POLLOUT, 0 };
		int soerr = 0;
		socklen_t l = sizeof(soerr);
		if (poll(&p, 1, (int)(timeout_s * 1000)) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l) == 0 && soerr == 0)
			ok = true;
	}
	close(fd);
	return ok;
}

static bool exec_probe(struct na_agent *a, struct na_pod *p, struct na_ctr *c, json_object *e,
		       long timeout_s)
{
	json_object *cmd = op_json_at(e, "command");
	size_t n = cmd ? json_object_array_length(cmd) : 0;
	if (!n || n > NA_MAX_ARGS)
		return false;
	const char **argv = op_calloc(n + 10, sizeof(*argv));
	_cleanup_free_ char *t = op_asprintf("%lds", timeout_s);
	_cleanup_free_ char *target = op_asprintf("%s/%s", p->ns, p->name);
	_cleanup_free_ char *sd = op_asprintf("--state-dir=%s", a->shared_dir);
	size_t k = 0;
	argv[k++] = "timeout";
	argv[k++] = "-s";
	argv[k++] = "KILL";
	argv[k++] = t;
	argv[k++] = a->self_exe;
	argv[k++] = sd;
	argv[k++] = "exec";
	argv[k++] = target;
	argv[k++] = "-c";
	argv[k++] = c->name;
	argv = op_realloc(argv, (n + k + 2) * sizeof(*argv));
	argv[k++] = "--";
	for (size_t i = 0; i < n; i++)
		argv[k++] = json_object_get_string(json_object_array_get_idx(cmd, i));
	argv[k] = NULL;
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int rc = na_run(argv, NULL, &out, NULL);
	op_buf_done(&out);
	free(argv);
	return rc == 0;
}

static bool probe_once(struct na_agent *a, struct na_pod *p, struct na_ctr *c, json_object *spec,
		       json_object *probe)
{
	long timeout = (long)p_int(probe, "timeoutSeconds", 1);
	json_object *x;
	if ((x = op_json_at(probe, "httpGet")))
		return http_probe(p->ip, spec, x, timeout);
	if ((x = op_json_at(probe, "tcpSocket")))
		return tcp_probe(p->ip, spec, x, timeout);
	if ((x = op_json_at(probe, "exec")))
		return exec_probe(a, p, c, x, timeout);
	return true; /* grpc: not modelled, counted as success */
}

bool na_probes_run(struct na_agent *a, struct na_pod *p, struct na_ctr *c, json_object *spec)
{
	int64_t now = na_now_ms();
	bool liveness_failed = false;
	json_object *startup = op_json_at(spec, probe_keys[NA_PROBE_STARTUP]);
	if (!startup)
		c->started = true;
	for (int k = 0; k < NA_PROBE__N; k++) {
		json_object *probe = op_json_at(spec, probe_keys[k]);
		if (!probe) {
			if (k == NA_PROBE_READINESS)
				c->ready = c->started;
			continue;
		}
		if (k != NA_PROBE_STARTUP && !c->started)
			continue;
		if (k == NA_PROBE_STARTUP && c->started)
			continue;
		if (!c->next_probe_ms[k]) {
			c->next_probe_ms[k] = now + p_int(probe, "initialDelaySeconds", 0) * 1000;
			if (k == NA_PROBE_READINESS)
				c->ready = false;
		}
		if (now < c->next_probe_ms[k])
			continue;
		/* at the configured period only, like the kubelet */
		int64_t period = p_int(probe, "periodSeconds", 10) * 1000;
		c->next_probe_ms[k] = now + period;
		bool ok = probe_once(a, p, c, spec, probe);
		if (ok) {
			c->probe_fail[k] = 0;
			c->probe_ok[k]++;
		} else {
			c->probe_ok[k] = 0;
			c->probe_fail[k]++;
		}
		int64_t succ = k == NA_PROBE_READINESS ? p_int(probe, "successThreshold", 1) : 1;
		int64_t fail = p_int(probe, "failureThreshold", 3);
		if (c->probe_ok[k] >= succ) {
			c->probe_passed[k] = true;
			if (k == NA_PROBE_STARTUP)
				c->started = true;
			if (k == NA_PROBE_READINESS)
				c->ready = true;
		}
		if (c->probe_fail[k] >= fail) {
			if (k == NA_PROBE_READINESS)
				c->ready = false;
			else
				liveness_failed = true;
		}
	}
	return liveness_failed;
}
