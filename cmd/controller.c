/* cmd/controller.c - `pgop controller`: the operator process.
 *
 * It serves the admission webhooks (plus health and metrics) over HTTPS on
 * every replica and runs the Cluster reconciler on the holder of the Lease
 * (reconciler/start.h: cluster access is retried with back-off and /readyz
 * fails until the reconciler runs) and, on every replica, the aggregated live
 * API (apiserver/) over the same listener; only --webhooks-only serves the
 * webhooks alone.
 *
 * Signals are blocked in every thread (the mask is set before the server
 * starts its threads) and taken synchronously by the main thread with
 * sigtimedwait(): SIGTERM/SIGINT stop gracefully (readiness off, drain, stop),
 * SIGHUP forces a certificate reload, and every poll interval the certificate
 * files are checked for changes (a Kubernetes Secret volume updates in place).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apiserver/apiserver.h"
#include "apiserver/source.h"
#include "cmd/cmd.h"
#include "cmd/controller_certs.h"
#include "cmd/controller_reconcile.h"
#include "cmd/flags.h"
#include "support/alloc.h"
#include "support/http_server.h"
#include "kube/kube.h"
#include "support/log.h"
#include "webhooks/http.h"

struct controller_opts {
	const char *cert_file;
	const char *key_file;
	const char *listen;
	const char *kubeconfig;
	enum op_log_level log_level;
	unsigned threads;
	unsigned poll_s;
	unsigned drain_s;
	unsigned request_timeout_s;
	unsigned idle_timeout_s;
	unsigned max_connections;
	unsigned max_per_ip;
	const char *probe_listen;
	struct cm_run_opts certs; /* --tls-secret mode (certmgr/certmgr.h) */
	struct controller_reconcile_opts rec; /* reconciler (cmd/controller_reconcile.c) */
};

static const struct cmd_flag controller_flags[] = {
	{ "tls-cert-file", 0, CMD_FLAG_STRING, offsetof(struct controller_opts, cert_file), 0,
	  "FILE", "serving certificate chain, PEM (required; re-read when it changes)" },
	{ "tls-key-file", 0, CMD_FLAG_STRING, offsetof(struct controller_opts, key_file), 0,
	  "FILE", "serving private key, PEM (required)" },
	{ "listen", 0, CMD_FLAG_STRING, offsetof(struct controller_opts, listen), 0, "ADDR:PORT",
	  "HTTPS listen address (default 0.0.0.0:9443; [::]:9443 for IPv6)" },
	{ "kubeconfig", 0, CMD_FLAG_STRING, offsetof(struct controller_opts, kubeconfig), 0,
	  "FILE", "kubeconfig for cluster access (default $KUBECONFIG, or in-cluster)" },
	{ "log-level", 0, CMD_FLAG_LOG_LEVEL, offsetof(struct controller_opts, log_level), 0,
	  "LEVEL", "debug, info (default), warn or error" },
	{ "threads", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, threads), 64, "N",
	  "HTTPS worker threads (default: number of CPUs, at most 16)" },
	{ "cert-poll-interval", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, poll_s), 3600,
	  "SECONDS", "how often the certificate files are checked (default 5)" },
	{ "shutdown-grace", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, drain_s), 600,
	  "SECONDS", "how long requests in flight may finish on SIGTERM (default 10)" },
	{ "probe-listen", 0, CMD_FLAG_STRING, offsetof(struct controller_opts, probe_listen), 0,
	  "ADDR:PORT",
	  "plain-HTTP listener for /healthz, /readyz and /metrics only, with its own thread and "
	  "connection limit, so probes answer while the HTTPS port is saturated (default: none)" },
	{ "request-timeout", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, request_timeout_s),
	  3600, "SECONDS",
	  "time a client has to send a whole request (TLS handshake, headers and body), counted "
	  "from the connection's accept, or for a kept-alive connection from the end of the "
	  "previous response; trickling bytes does not extend it; then the connection is closed. "
	  "It does not bound the handler or the response (default 10)" },
	{ "idle-timeout", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, idle_timeout_s), 3600,
	  "SECONDS",
	  "a connection on which nothing is received or sent for this long is closed "
	  "(default 30)" },
	{ "max-connections", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, max_connections),
	  65536, "N", "concurrent HTTPS connections (default 1024)" },
	{ "max-connections-per-ip", 0, CMD_FLAG_UINT, offsetof(struct controller_opts, max_per_ip),
	  65536, "N",
	  "concurrent connections from one client IP on each listener; more are closed at "
	  "accept. The API server opens one per concurrent request (default 64)" },
	CONTROLLER_CERTS_FLAGS,
	CONTROLLER_RECONCILE_FLAGS,
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char controller_usage[] =
	"Usage: pgop controller --tls-cert-file FILE --tls-key-file FILE [flags]\n"
	"Serves the Cluster admission webhooks (" WH_MUTATE_PATH ",\n" WH_VALIDATE_PATH
	"), the aggregated live API\n(/apis/" AS_GROUP_VERSION "), /healthz, /readyz and /metrics over HTTPS (and the last\nthree over plain HTTP on --probe-listen).\n\nFlags:\n";

static const struct op_http_route controller_routes[] = {
	WH_HTTP_ROUTES, /* the admission webhooks (webhooks/http.h) */
	AS_HTTP_ROUTES, /* the aggregated live API (apiserver/) */
};

/* /readyz: the self-managed certificates' part (when any) and the reconciler's. */
struct readiness {
	bool (*certs_fn)(void *userdata);
	void *certs_userdata;
	struct rc_runner *rec; /* NULL with --webhooks-only */
};

static bool ready(void *userdata)
{
	const struct readiness *rd = userdata;
	if (rd->certs_fn && !rd->certs_fn(rd->certs_userdata))
		return false;
	return !rd->rec || rc_runner_ready(rd->rec);
}

static void set_signal_mask(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void reload_certificate(struct op_http_server *srv, bool force)
{
	struct op_err err = OP_ERR_INIT;
	int r = op_http_server_reload_files(srv, force, &err);
	if (r < 0) /* keep serving the previous certificate; retried at the next poll */
		op_log_warn("certificate reload failed, keeping the current one", "error", err.msg);
}

/* Blocks until SIGTERM/SIGINT; polls the certificate files meanwhile. */
static int serve_until_signal(struct op_http_server *srv, const sigset_t *set, unsigned poll_s,
			      bool files)
{
	for (;;) {
		struct timespec ts = { (time_t)poll_s, 0 };
		int sig = sigtimedwait(set, NULL, &ts);
		if (sig < 0 && errno == EAGAIN) {
			if (files)
				reload_certificate(srv, false);
			continue;
		}
		if (sig < 0 && errno == EINTR)
			continue;
		if (sig == SIGHUP) { /* self-managed certificates follow their Secret instead */
			if (files) {
				op_log_info("SIGHUP: reloading the certificate");
				reload_certificate(srv, true);
			}
			continue;
		}
		if (sig < 0) {
			op_log_error("sigtimedwait failed", "error", strerror(errno));
			return 1;
		}
		op_log_info("stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		return 0;
	}
}

int cmd_controller(int argc, char **argv)
{
	struct controller_opts o = { .log_level = OP_LOG_INFO, .poll_s = 5, .drain_s = 10 };
	int r = cmd_parse_flags(controller_flags, OP_ARRAY_SIZE(controller_flags),
				controller_usage, argc, argv, &o, NULL);
	if (r == CMD_FLAGS_HELP)
		return 0;
	if (r)
		return 2;
	if ((!o.cert_file || !o.key_file) && !cm_run_self(&o.certs)) {
		fputs("pgop controller: --tls-cert-file and --tls-key-file are required\n"
		      "Try 'pgop controller --help'.\n",
		      stderr);
		return 2;
	}
	op_log_set_level(o.log_level);
	op_alloc_limit_arenas(2); /* docs/internals/memory.md */
	op_log_set_component("controller");

	sigset_t set;
	set_signal_mask(&set); /* before any thread starts: they all inherit it */

	struct op_http_config cfg = {
		.listen = o.listen,
		.cert_file = o.cert_file,
		.key_file = o.key_file,
		.routes = controller_routes,
		.n_routes = OP_ARRAY_SIZE(controller_routes),
		.threads = o.threads,
		.connection_limit = o.max_connections,
		.per_ip_limit = o.max_per_ip,
		.idle_timeout_s = o.idle_timeout_s,
		.request_timeout_s = o.request_timeout_s,
		.probe_listen = o.probe_listen,
		.drain_ms = o.drain_s ? o.drain_s * 1000u : 1,
	};
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	struct cm_run *certs = NULL;
	bool self = !o.cert_file && cm_run_self(&o.certs);
	if (!o.certs.apiservice) /* the chart's APIService; "" = none */
		o.certs.apiservice = AS_APISERVICE_NAME;
	if (self && cm_run_prepare(&o.certs, o.kubeconfig, &cfg, &certs, &err) < 0) {
		op_log_error("cannot set up self-managed certificates", "error", err.msg);
		return 1;
	}
	struct rc_runner *rec = NULL;
	if (controller_reconcile_start(&o.rec, o.kubeconfig, &rec, &err) < 0) {
		op_log_error("cannot start the reconciler", "error", err.msg);
		cm_run_free(certs);
		return 1;
	}
	struct as_server *live = NULL;
	if (rec) { /* the live API reads the reconciler's caches once it runs */
		struct as_config ac = { .timeout_ms = o.rec.status_timeout_ms };
		as_source_reconciler(rec, &ac.source);
		if (as_new(&ac, &live, &err) < 0) {
			op_log_error("cannot start the live API", "error", err.msg);
			rc_runner_free(rec);
			cm_run_free(certs);
			return 1;
		}
		cfg.request_client_cert = true; /* front-proxy certificate, never required */
		/* a live request may wait for instances (<= 2.5 s) on its handler thread;
		 * the workers only do TLS and HTTP */
		cfg.handler_threads = AS_HTTP_THREADS_DEFAULT;
	}
	struct readiness rd = { cfg.ready_fn, cfg.ready_userdata, rec };
	cfg.ready_fn = ready;
	cfg.ready_userdata = &rd;
	cfg.userdata = live; /* handlers: the live API's (webhook handlers take none) */
	r = op_http_server_start(&cfg, &srv, &err);
	if (r >= 0 && certs)
		r = cm_run_start(certs, srv, &err);
	if (r < 0) {
		op_log_error("cannot start the HTTPS server", "error", err.msg);
		op_http_server_free(srv);
		as_free(live);
		rc_runner_free(rec);
		cm_run_free(certs);
		return 1;
	}
	char port[8], probe_port[8];
	snprintf(port, sizeof(port), "%u", op_http_server_port(srv));
	snprintf(probe_port, sizeof(probe_port), "%u", op_http_server_probe_port(srv));
	op_log_info("serving HTTPS", "listen", o.listen ? o.listen : "0.0.0.0:9443", "port", port,
		    "version", PGOP_VERSION, "live_api", live ? "true" : "false",
		    o.probe_listen ? "probe_listen" : NULL, o.probe_listen, "probe_port", probe_port);

	int rc = serve_until_signal(srv, &set, o.poll_s ? o.poll_s : 5, !self);
	op_http_server_set_ready(srv, false);
	cm_run_free(certs); /* stops swapping certificates, releases the Lease */
	op_http_server_free(srv); /* drains requests in flight (live API ones too) */
	as_free(live);          /* waits for its fetch threads */
	rc_runner_free(rec);    /* stops reconciling, releases its Lease */
	op_log_info("stopped");
	return rc;
}
