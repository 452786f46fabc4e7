/* instance/metrics_server.c - GET /metrics on :9187 (libmicrohttpd).
 *
 * Its own listener, apart from the status server on :8000: plain HTTP and
 * unauthenticated by default, as public as CloudNativePG's exporter (the
 * numbers are about the server, not its data); TLS with the instance's server
 * certificate when spec.monitoring.tls.enabled; a rotated certificate is
 * picked up at the supervisor's next tick (inst_metrics_server_reload: the
 * listening socket handed to a new daemon, as the status server does).
 *
 * Abuse: 16 connections, 4 per client IP (one thread each), 10 s idle, a
 * request must arrive whole within 10 s (support/http_conns.h). Scrapes
 * collect one at a time (inst_metrics_scrape); one that waits more than 15 s
 * for another is answered 503. Only GET (and HEAD) of /metrics: 404/405
 * otherwise; request bodies are discarded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "instance/internal.h"
#include "instance/mhd.h"
#include "instance/metrics_internal.h"
#include "support/alloc.h"
#include "support/http_conns.h"
#include "support/log.h"

#define MAX_CONN 16
#define MAX_CONN_PER_IP 4
#define IDLE_S 10
#define REQUEST_S 10
#define SCRAPE_WAIT_MS 15000
#define TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define MAX_PEM (256u * 1024)

struct inst_metrics_server {
	struct MHD_Daemon *d;
	struct inst_metrics *m; /* borrowed */
	char *cert, *key;       /* owned PEMs (TLS), must outlive d */
	char *cert_file, *key_file; /* owned; NULL = plain HTTP */
	struct stat sig[2];     /* of the files when last loaded */
	struct sockaddr_in sa;
	struct op_conns conns;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *ctype,
			     const char *body, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (code == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result r = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	static int marker;
	struct inst_metrics_server *s = cls;
	if (!*con_cls) {
		*con_cls = &marker;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context)
		op_conns_received(ci->socket_context);
	static const char text[] = "text/plain; charset=utf-8";
	if (strcmp(url, "/metrics") != 0)
		return reply(conn, 404, text, "not found\n", 10);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(conn, 405, text, "method not allowed\n", 19);
	struct op_buf b = OP_BUF_INIT(INST_METRICS_MAX_BODY);
	struct op_err err = OP_ERR_INIT;
	int r = inst_metrics_scrape(s->m, SCRAPE_WAIT_MS, &b, &err);
	enum MHD_Result res;
	if (r) {
		op_log_warn("metrics: scrape failed", "error", err.msg);
		res = reply(conn, r == -EBUSY ? 503 : 500, text, err.msg, strlen(err.msg));
	} else {
		res = reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", op_buf_str(&b),
			    b.len);
	}
	op_buf_done(&b);
	return res;
}

static int parse_listen(const char *listen, struct sockaddr_in *sa, struct op_err *err)
{
	const char *colon = strrchr(listen, ':');
	char *end;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!colon || colon[1] == '\0' || *end || port > 65535)
		return op_err_set(err, -EINVAL, "metrics listen \"%s\": expected ADDR:PORT", listen);
	_cleanup_free_ char *host = op_strndup(listen, (size_t)(colon - listen));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!*host)
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return op_err_set(err, -EINVAL, "metrics listen \"%s\": not an IPv4 address", listen);
	return 0;
}

static int load_pem(const char *path, char **ret, struct op_err *err)
{
	struct op_buf b = OP_BUF_INIT(MAX_PEM);
	int r = inst_read_file(path, MAX_PEM, &b, err);
	if (r) {
		op_buf_done(&b);
		return r;
	}
	*ret = op_buf_take(&b, NULL);
	return 0;
}

static struct MHD_Daemon *start_daemon(struct inst_metrics_server *s, int listen_fd)
{
	bool tls = s->cert != NULL;
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_CONNECTION_TIMEOUT, IDLE_S, NULL },
		{ MHD_OPTION_CONNECTION_LIMIT, MAX_CONN, NULL },
		{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, MAX_CONN_PER_IP, NULL },
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)inst_mhd_log, (void *)"metrics server" },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)inst_mhd_on_connection, &s->conns },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)inst_mhd_on_completed, &s->conns },
		{ listen_fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
		  listen_fd >= 0 ? listen_fd : 0, listen_fd >= 0 ? NULL : &s->sa },
		{ tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, s->key },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITY },
		{ MHD_OPTION_END, 0, NULL },
	};
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0);
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
				MHD_OPTION_END);
}

int inst_metrics_server_start(const char *listen, const char *cert_file, const char *key_file,
			      struct inst_metrics *m, struct inst_metrics_server **ret,
			      struct op_err *err)
{
	struct inst_metrics_server *s = op_calloc(1, sizeof(*s));
	s->m = m;
	op_conns_init(&s->conns, (uint64_t)REQUEST_S * 1000000000u);
	const char *l = listen ? listen : INST_METRICS_LISTEN;
	int r = parse_listen(l, &s->sa, err);
	if (!r && cert_file && key_file) {
		s->cert_file = op_strdup(cert_file);
		s->key_file = op_strdup(key_file);
		stat(cert_file, &s->sig[0]);
		stat(key_file, &s->sig[1]);
		r = load_pem(cert_file, &s->cert, err);
		r = r ? r : load_pem(key_file, &s->key, err);
	}
	if (!r) {
		s->d = start_daemon(s, -1);
		if (!s->d)
			r = op_err_set(err, -EADDRINUSE, "metrics server: cannot listen on %s%s", l,
				       s->cert ? " (TLS)" : "");
	}
	r = r ? r : op_conns_start(&s->conns, err);
	if (r) {
		inst_metrics_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

uint16_t inst_metrics_server_port(struct inst_metrics_server *s)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	return di ? di->port : 0;
}

void inst_metrics_server_free(struct inst_metrics_server *s)
{
	if (!s)
		return;
	if (s->d)
		MHD_stop_daemon(s->d);
	op_conns_done(&s->conns);
	free(s->cert);
	free(s->key);
	free(s->cert_file);
	free(s->key_file);
	free(s);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int inst_metrics_server_reload(struct inst_metrics_server *s, struct op_err *err)
{
	struct stat now[2] = { 0 };
	if (!s->cert_file || stat(s->cert_file, &now[0]) || stat(s->key_file, &now[1]) ||
	    (same_file(&now[0], &s->sig[0]) && same_file(&now[1], &s->sig[1])))
		return 0;
	char *cert = NULL, *key = NULL;
	int r = load_pem(s->cert_file, &cert, err);
	r = r ? r : load_pem(s->key_file, &key, err);
	if (r) { /* a half-written pair: retried at the next tick */
		free(cert);
		free(key);
		return r;
	}
	MHD_socket fd = MHD_quiesce_daemon(s->d);
	if (fd == MHD_INVALID_SOCKET) {
		free(cert);
		free(key);
		return op_err_set(err, -EIO, "metrics server: cannot quiesce");
	}
	char *old_cert = s->cert, *old_key = s->key;
	s->cert = cert, s->key = key;
	struct MHD_Daemon *nd = start_daemon(s, fd);
	if (!nd) { /* a pair gnutls refuses: keep serving the old one */
		s->cert = old_cert, s->key = old_key;
		nd = start_daemon(s, fd);
		free(cert);
		free(key);
		if (!nd)
			op_log_error("metrics server: lost the listening socket");
		MHD_stop_daemon(s->d);
		s->d = nd;
		return op_err_set(err, -EBADMSG, "metrics server: the new certificate was refused");
	}
	MHD_stop_daemon(s->d);
	s->d = nd;
	free(old_cert);
	free(old_key);
	memcpy(s->sig, now, sizeof(now));
	return 1;
}
