/* pki/cm_run.h - the certificate manager at work in a server process
 * (prefix pki_cm_run_): the manager (certmanager.h) on the holder of a Lease,
 * hot swap of the serving certificate from its Secret on every replica, and
 * a readiness check that the served certificate is trusted by the current
 * caBundle of the validating webhook configuration.
 *
 * Threads: two informer threads (serving Secret, validating webhook
 * configuration), the Lease thread and the manager thread; ready() runs on
 * the HTTPS server's threads.
 */
#ifndef PGOP_PKI_CM_RUN_H
#define PGOP_PKI_CM_RUN_H

#include <stdbool.h>

#include "support/err.h"
#include "support/http_server.h"

/* Options (`pgop controller` flags); strings borrowed, must outlive the run. */
struct pki_cm_run_opts {
	const char *tls_secret;     /* the serving kubernetes.io/tls Secret; required */
	const char *ca_secret;      /* the operator CA Secret; required */
	const char *service;        /* Service name (SANs); required */
	const char *ns;             /* NULL = $POD_NAMESPACE, else the client's namespace */
	const char *mutating;       /* webhook configurations to keep current (NULL = none) */
	const char *validating;     /* also gates readiness */
	const char *apiservice;     /* APIService to keep current while it is ours (NULL/"" = none) */
	const char *lease;          /* NULL = <tls_secret>-certs */
	const char *ca_lifetime;    /* durations (pki_cm_parse_duration); NULL = 90d */
	const char *cert_lifetime;
	const char *renew_fraction; /* NULL = 1/3 */
	unsigned check_s;           /* 0 = 60 */
	unsigned settle_s;          /* 0 = 10 */
};

/* True when the options ask for self-managed certificates (tls_secret set). */
bool pki_cm_run_self(const struct pki_cm_run_opts *o);

struct pki_cm_run;

/* Checks the options, connects to the cluster (kubeconfig as for
 * kube_config_load), makes a throwaway certificate for the server to start
 * with (never trusted, so /readyz stays false until the real one is served)
 * and fills cfg->cert_pem/key_pem/ready_fn/ready_userdata (pointing into the
 * returned object, which must outlive the server). Errors are returned with
 * err set (bad option values, no cluster access). *ret owned. */
int pki_cm_run_prepare(const struct pki_cm_run_opts *o, const char *kubeconfig,
		       struct op_http_config *cfg, struct pki_cm_run **ret, struct op_err *err);

/* Starts the watches (serving Secret, validating configuration), the Lease
 * candidate and the certificate manager thread. srv is borrowed. */
int pki_cm_run_start(struct pki_cm_run *cc, struct op_http_server *srv, struct op_err *err);

/* Stops everything (releasing the Lease) and frees. Accepts NULL. Call before
 * freeing the server. */
void pki_cm_run_free(struct pki_cm_run *cc);

#endif
