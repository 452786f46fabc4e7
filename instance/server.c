/* instance/server.c - the status server on :8000 (HTTPS, libmicrohttpd).
 *
 * Departure from the brief: support/http_server has no client-certificate
 * support, so this small server drives libmicrohttpd directly. It trusts the
 * cluster CA (MHD_OPTION_HTTPS_MEM_TRUST makes gnutls *request* a client
 * certificate without requiring one), verifies the peer chain per request
 * and hands the decision to inst_auth_decide() (auth.c). Certificate
 * rotation: when a file changes, the listening socket is handed from the old
 * daemon (MHD_quiesce_daemon) to a new one started with the new PEMs; the old
 * daemon finishes its connections and stops.
 *
 * Abuse: 64 connections, 8 per client IP (one thread each), 10 s idle, and a
 * request deadline (support/http_conns.h): a request must arrive whole within
 * 10 s of the accept or of the previous response, however steadily its bytes
 * trickle in; otherwise the connection is closed. Without it 8 addresses × 8
 * connections trickling a byte every few seconds hold every slot and the
 * kubelet's probes fail (liveness would restart the instance).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "instance/internal.h"
#include "instance/mhd.h"
#include "support/alloc.h"
#include "support/http_conns.h"
#include "support/log.h"

/* One thread per connection: the caps bound the threads an unauthenticated
 * client can hold (kubelet probes and the operator need a few each). */
#define INST_SERVER_MAX_CONN 64
#define INST_SERVER_MAX_CONN_PER_IP 8
#define INST_SERVER_IDLE_S 10
/* = the idle timeout: a kept-alive connection (the operator polls every 5 s)
 * is closed no sooner than before; only trickling is cut shorter. */
#define INST_SERVER_REQUEST_S 10
#define TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define MAX_PEM (256u * 1024)

struct file_sig {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct daemon_pems {
	char *cert, *key, *ca; /* owned; must outlive the daemon using them */
};

struct inst_server {
	struct MHD_Daemon *d;
	struct daemon_pems pems;
	char *files[3];            /* cert, key, ca (owned) */
	struct file_sig sig[3];
	struct sockaddr_in addr;
	struct inst_state *st;     /* borrowed */
	pthread_mutex_t lock;      /* serialises reloads */
	struct op_conns conns;     /* every connection of every daemon, with its deadline */
	struct inst_backup_job *backup; /* owned: POST/GET /pg/backup */
};

static void pems_done(struct daemon_pems *p)
{
	free(p->cert);
	free(p->key);
	free(p->ca);
	memset(p, 0, sizeof(*p));
}

static void file_sig(const char *path, struct file_sig *s)
{
	struct stat st;
	memset(s, 0, sizeof(*s));
	if (stat(path, &st) == 0)
		*s = (struct file_sig){ st.st_dev, st.st_ino, st.st_size, st.st_mtim };
}

static int load_pems(struct inst_server *srv, struct daemon_pems *out, struct op_err *err)
{
	char **dst[3] = { &out->cert, &out->key, &out->ca };
	for (int i = 0; i < 3; i++) {
		struct op_buf b = OP_BUF_INIT(MAX_PEM);
		int r = inst_read_file(srv->files[i], MAX_PEM, &b, err);
		if (r) {
			op_buf_done(&b);
			pems_done(out);
			return r;
		}
		*dst[i] = op_buf_take(&b, NULL);
	}
	/* Check the pair before replacing a working daemon. */
	gnutls_certificate_credentials_t cred;
	if (gnutls_certificate_allocate_credentials(&cred) < 0) {
		pems_done(out);
		return op_err_set(err, -ENOMEM, "gnutls: cannot allocate credentials");
	}
	gnutls_datum_t c = { (unsigned char *)out->cert, (unsigned)strlen(out->cert) };
	gnutls_datum_t k = { (unsigned char *)out->key, (unsigned)strlen(out->key) };
	int g = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	if (g < 0) {
		pems_done(out);
		return op_err_set(err, -EBADMSG, "%s/%s: %s", srv->files[0], srv->files[1],
				  gnutls_strerror(g));
	}
	return 0;
}

/* ---- request handling ---- */

/* A server certificate of the same CA (every instance holds one) is not an
 * operator: the extended key usage must name clientAuth (an absent extension
 * does not count). */
static bool has_client_eku(gnutls_x509_crt_t crt)
{
	for (unsigned i = 0; i < 32; i++) {
		char oid[128];
		size_t sz = sizeof(oid);
		int g = gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &sz, NULL);
		if (g == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			return false;
		if (g < 0)
			continue; /* an OID too long for the buffer is not clientAuth */
		if (strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT) == 0)
			return true;
	}
	return false;
}

static enum inst_peer_cert peer_cert(struct MHD_Connection *conn, char *cn, size_t cn_len)
{
	cn[0] = '\0';
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return INST_PEER_NONE;
	gnutls_session_t s = (gnutls_session_t)ci->tls_session;
	unsigned n = 0;
	const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
	if (!certs || n == 0)
		return INST_PEER_NONE;
	unsigned status = 0;
	if (gnutls_certificate_verify_peers2(s, &status) < 0 || status != 0)
		return INST_PEER_UNTRUSTED;
	gnutls_x509_crt_t crt;
	if (gnutls_x509_crt_init(&crt) < 0)
		return INST_PEER_UNTRUSTED;
	enum inst_peer_cert ret = INST_PEER_UNTRUSTED;
	if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0) {
		size_t sz = cn_len;
		if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn,
						  &sz) < 0)
			cn[0] = '\0';
		ret = has_client_eku(crt) ? INST_PEER_TRUSTED : INST_PEER_NOT_CLIENT;
	}
	gnutls_x509_crt_deinit(crt);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *ctype,
			     const char *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	enum MHD_Result r = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned code, const char *text)
{
	return reply(conn, code, "text/plain", text, strlen(text));
}

/* {"error": msg}, with "restarting": true when postgres is (re)starting in
 * place (503 of /pg/status: the operator does not fail over while it does,
 * reconciler/status.c). */
static enum MHD_Result reply_error_doc(struct MHD_Connection *conn, unsigned code,
				       const char *msg, bool restarting)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = op_buf_adds(&b, "{\"error\":");
	r = r ? r : op_buf_add_json_str(&b, msg);
	r = r ? r : op_buf_adds(&b, restarting ? ",\"restarting\":true}" : "}");
	enum MHD_Result res = reply(conn, code, "application/json", op_buf_str(&b), b.len);
	op_buf_done(&b);
	return res;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned code, const char *msg)
{
	return reply_error_doc(conn, code, msg, false);
}

/* POST /pg/cut?primary=<pod>&ip=<its IP> (instance/cut.c): the status after
 * the cut (walReceiverCut.holdMs), 400 bad argument, 409 not a replica or the
 * primary reachable from here, 503 the cut could not be confirmed. */
static enum MHD_Result on_cut(struct MHD_Connection *conn, struct inst_server *srv)
{
	const char *primary = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "primary");
	const char *ip = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "ip");
	struct inst_cut_env env;
	struct inst_cut *cut = inst_state_cut(srv->st, &env);
	struct op_err err = OP_ERR_INIT;
	int64_t hold = 0;
	int r = inst_cut_request(cut, &env, primary, ip, &hold, &err);
	if (r == -EINVAL)
		return reply_error(conn, 400, err.msg);
	if (r == -EPERM || r == -EBUSY)
		return reply_error(conn, 409, err.msg);
	if (r) {
		op_log_warn("WAL receiver cut not confirmed", "primary", primary, "error", err.msg);
		return reply_error(conn, 503, err.msg);
	}
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	r = inst_state_status_json(srv->st, &b, &err);
	enum MHD_Result res = r ? reply_error(conn, 503, err.msg)
				: reply(conn, 200, "application/json", op_buf_str(&b), b.len);
	op_buf_done(&b);
	return res;
}

/* POST /pg/backup?name=<Backup>&id=<YYYYMMDDTHHMMSS>: 202 started, 200 the
 * same Backup already (running or done), 400 bad argument, 409 another one
 * runs or WAL archiving is not configured; the body is the status. GET
 * /pg/backup: 200 the running or last backup's status, 404 none yet. */
static enum MHD_Result on_backup(struct MHD_Connection *conn, struct inst_server *srv,
				 const char *method)
{
	struct op_err err = OP_ERR_INIT;
	int r = 1;
	if (strcmp(method, "POST") == 0) {
		const char *name = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "name");
		const char *id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "id");
		r = inst_backup_job_start(srv->backup, name, id && *id ? id : NULL, &err);
		if (r == -EINVAL)
			return reply_error(conn, 400, err.msg);
		if (r < 0)
			return reply_error(conn, 409, err.msg);
	}
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int j = inst_backup_job_json(srv->backup, &b);
	enum MHD_Result res = j == -ENOENT ? reply_error(conn, 404, "no backup yet")
			      : j < 0	   ? reply_error(conn, 500, "backup status too large")
					   : reply(conn, r == 0 ? 202 : 200, "application/json",
						   op_buf_str(&b), b.len);
	op_buf_done(&b);
	return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	static int marker;
	struct inst_server *srv = cls;
	if (!*con_cls) {
		*con_cls = &marker;
		return MHD_YES;
	}
	if (*upload_data_size) { /* bodies are not used: discard */
		*upload_data_size = 0;
		return MHD_YES;
	}
	/* The whole request is in: no deadline while it is answered. */
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context)
		op_conns_received(ci->socket_context);
	char cn[256];
	enum inst_peer_cert pc = peer_cert(conn, cn, sizeof(cn));
	unsigned deny = inst_auth_decide(method, url, pc, cn);
	if (deny) {
		static const struct {
			unsigned code;
			const char *msg;
		} msgs[] = { { 401, "client certificate required" },
			     { 403, "client certificate not allowed" },
			     { 404, "not found" },
			     { 405, "method not allowed" } };
		const char *m = "denied";
		for (size_t i = 0; i < OP_ARRAY_SIZE(msgs); i++)
			if (msgs[i].code == deny)
				m = msgs[i].msg;
		if (deny == 401 || deny == 403)
			op_log_warn("status server: request denied", "path", url, "cn", cn);
		return reply_error(conn, deny, m);
	}
	if (strcmp(url, "/healthz") == 0)
		return inst_state_started(srv->st) ? reply_text(conn, 200, "OK")
						   : reply_text(conn, 500, "postgres not started");
	if (strcmp(url, "/readyz") == 0 || strcmp(url, "/startupz") == 0)
		return inst_state_ready(srv->st) ? reply_text(conn, 200, "OK")
						 : reply_text(conn, 503, "not ready");
	if (strcmp(url, "/pg/cut") == 0)
		return on_cut(conn, srv);
	if (strcmp(url, "/pg/backup") == 0)
		return on_backup(conn, srv, method);
	if (strcmp(url, "/pg/status") == 0) {
		struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
		struct op_err err = OP_ERR_INIT;
		int r = inst_state_status_json(srv->st, &b, &err);
		enum MHD_Result res = r == -EAGAIN ? reply_error_doc(conn, 503, err.msg, true)
				      : r ? reply_error(conn, 500, err.msg)
					  : reply(conn, 200, "application/json", op_buf_str(&b),
						  b.len);
		op_buf_done(&b);
		return res;
	}
	return reply_error(conn, 404, "not found");
}

static struct MHD_Daemon *start_daemon(struct inst_server *srv, const struct daemon_pems *p,
				       int listen_fd)
{
	struct MHD_OptionItem opts[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, p->cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, p->key },
		{ MHD_OPTION_HTTPS_MEM_TRUST, 0, p->ca },
		{ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITY },
		{ MHD_OPTION_CONNECTION_TIMEOUT, INST_SERVER_IDLE_S, NULL },
		{ MHD_OPTION_CONNECTION_LIMIT, INST_SERVER_MAX_CONN, NULL },
		{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, INST_SERVER_MAX_CONN_PER_IP, NULL },
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)inst_mhd_log, (void *)"status server" },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)inst_mhd_on_connection, &srv->conns },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)inst_mhd_on_completed, &srv->conns },
		{ listen_fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
		  listen_fd >= 0 ? listen_fd : 0, listen_fd >= 0 ? NULL : &srv->addr },
		{ MHD_OPTION_END, 0, NULL },
	};
	unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_ARRAY, opts,
				MHD_OPTION_END);
}

static int parse_listen(const char *listen, struct sockaddr_in *sa, struct op_err *err)
{
	const char *colon = strrchr(listen, ':');
	if (!colon)
		return op_err_set(err, -EINVAL, "listen \"%s\": expected ADDR:PORT", listen);
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] == '\0' || port > 65535)
		return op_err_set(err, -EINVAL, "listen \"%s\": bad port", listen);
	_cleanup_free_ char *host = op_strndup(listen, (size_t)(colon - listen));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!*host)
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return op_err_set(err, -EINVAL, "listen \"%s\": not an IPv4 address", listen);
	return 0;
}

int inst_server_start(const char *listen, const char *cert_file, const char *key_file,
		      const char *ca_file, struct inst_state *st, struct inst_server **ret,
		      struct op_err *err)
{
	struct inst_server *srv = op_calloc(1, sizeof(*srv));
	srv->st = st;
	op_conns_init(&srv->conns, (uint64_t)INST_SERVER_REQUEST_S * 1000000000u);
	srv->files[0] = op_strdup(cert_file);
	srv->files[1] = op_strdup(key_file);
	srv->files[2] = op_strdup(ca_file);
	pthread_mutex_init(&srv->lock, NULL);
	const struct inst_run_opts *o = inst_state_run_opts(st);
	srv->backup = inst_backup_job_new(&o->paths, inst_state_sockdir(st), o->port,
					  o->pod_name);
	int r = parse_listen(listen ? listen : INST_STATUS_LISTEN, &srv->addr, err);
	for (int i = 0; r == 0 && i < 3; i++)
		file_sig(srv->files[i], &srv->sig[i]);
	r = r ? r : load_pems(srv, &srv->pems, err);
	if (r == 0) {
		srv->d = start_daemon(srv, &srv->pems, -1);
		if (!srv->d)
			r = op_err_set(err, -EADDRINUSE, "status server: cannot listen on %s",
				       listen ? listen : INST_STATUS_LISTEN);
	}
	r = r ? r : op_conns_start(&srv->conns, err);
	if (r) {
		inst_server_free(srv);
		return r;
	}
	*ret = srv;
	return 0;
}

int inst_server_reload(struct inst_server *srv, struct op_err *err)
{
	pthread_mutex_lock(&srv->lock);
	struct file_sig now[3];
	bool changed = false;
	for (int i = 0; i < 3; i++) {
		file_sig(srv->files[i], &now[i]);
		changed |= memcmp(&now[i], &srv->sig[i], sizeof(now[i])) != 0;
	}
	int r = 0;
	struct daemon_pems np = { 0 };
	if (!changed)
		goto out;
	r = load_pems(srv, &np, err); /* a half-written pair fails here: retried later */
	if (r)
		goto out;
	MHD_socket fd = MHD_quiesce_daemon(srv->d);
	if (fd == MHD_INVALID_SOCKET) {
		r = op_err_set(err, -EIO, "status server: cannot quiesce");
		pems_done(&np);
		goto out;
	}
	struct MHD_Daemon *nd = start_daemon(srv, &np, fd);
	if (!nd) {
		r = op_err_set(err, -EIO, "status server: cannot restart with the new certificate");
		pems_done(&np);
		nd = start_daemon(srv, &srv->pems, fd); /* keep serving the old one */
		if (!nd)
			op_log_error("status server: lost the listening socket");
		MHD_stop_daemon(srv->d);
		srv->d = nd;
		goto out;
	}
	MHD_stop_daemon(srv->d);
	srv->d = nd;
	pems_done(&srv->pems);
	srv->pems = np;
	memcpy(srv->sig, now, sizeof(now));
	r = 1;
out:
	pthread_mutex_unlock(&srv->lock);
	return r;
}

uint16_t inst_server_port(struct inst_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	const union MHD_DaemonInfo *di =
		srv->d ? MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	uint16_t port = di ? di->port : 0;
	pthread_mutex_unlock(&srv->lock);
	return port;
}

void inst_server_free(struct inst_server *srv)
{
	if (!srv)
		return;
	if (srv->d)
		MHD_stop_daemon(srv->d);
	op_conns_done(&srv->conns); /* after the daemons: no connection is left */
	inst_backup_job_free(srv->backup); /* after the daemons: no request uses it */
	pems_done(&srv->pems);
	for (int i = 0; i < 3; i++)
		free(srv->files[i]);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
