/* cmd/controller_certs.h - certificate mode "self" of `pgop controller`:
 * the certificate manager (pki/certmanager.h) on the Lease holder, hot swap
 * of the serving certificate from its Secret on every replica, and a
 * readiness check that the served certificate is trusted by the current
 * caBundle of the validating webhook configuration.
 *
 * Used by cmd/controller.c only: its flags are spliced into the controller's
 * flag table with CONTROLLER_CERTS_FLAGS, its options live in the
 * controller's options struct.
 */
#ifndef PGOP_CMD_CONTROLLER_CERTS_H
#define PGOP_CMD_CONTROLLER_CERTS_H

#include <stdbool.h>
#include <stddef.h>

#include "cmd/flags.h"
#include "support/err.h"
#include "support/http_server.h"

/* Flag values; strings borrowed from argv. */
struct controller_certs_opts {
	const char *tls_secret;
	const char *ca_secret;
	const char *service;
	const char *ns;
	const char *mutating;
	const char *validating;
	const char *lease;
	const char *ca_lifetime;
	const char *cert_lifetime;
	const char *renew_fraction;
	unsigned check_s;
	unsigned settle_s;
};

#define CONTROLLER_CERTS_FLAG(name, type, field, max, metavar, help)                               \
	{ name, 0, type, offsetof(struct controller_opts, certs) +                                 \
				 offsetof(struct controller_certs_opts, field),                    \
	  max, metavar, help }

/* Rows for the controller's flag table (struct controller_opts must have a
 * member `struct controller_certs_opts certs`). */
#define CONTROLLER_CERTS_FLAGS                                                                     \
	CONTROLLER_CERTS_FLAG("tls-secret", CMD_FLAG_STRING, tls_secret, 0, "NAME",                \
			      "self-managed certificates: the serving kubernetes.io/tls Secret "   \
			      "(without --tls-cert-file)"),                                         \
	CONTROLLER_CERTS_FLAG("ca-secret", CMD_FLAG_STRING, ca_secret, 0, "NAME",                  \
			      "self-managed certificates: the operator CA Secret"),                 \
	CONTROLLER_CERTS_FLAG("service", CMD_FLAG_STRING, service, 0, "NAME",                      \
			      "the webhook Service (certificate SANs)"),                            \
	CONTROLLER_CERTS_FLAG("namespace", CMD_FLAG_STRING, ns, 0, "NS",                           \
			      "namespace of the Secrets, Service and Lease (default "              \
			      "$POD_NAMESPACE)"),                                                   \
	CONTROLLER_CERTS_FLAG("mutating-webhook", CMD_FLAG_STRING, mutating, 0, "NAME",            \
			      "MutatingWebhookConfiguration whose caBundle is kept current"),      \
	CONTROLLER_CERTS_FLAG("validating-webhook", CMD_FLAG_STRING, validating, 0, "NAME",        \
			      "ValidatingWebhookConfiguration whose caBundle is kept current "     \
			      "(and gates /readyz)"),                                               \
	CONTROLLER_CERTS_FLAG("cert-lease", CMD_FLAG_STRING, lease, 0, "NAME",                     \
			      "Lease electing the certificate writer (default <tls-secret>-certs)"), \
	CONTROLLER_CERTS_FLAG("ca-lifetime", CMD_FLAG_STRING, ca_lifetime, 0, "DURATION",          \
			      "operator CA lifetime, e.g. 90d, 2160h (default 90d)"),               \
	CONTROLLER_CERTS_FLAG("cert-lifetime", CMD_FLAG_STRING, cert_lifetime, 0, "DURATION",      \
			      "serving certificate lifetime (default 90d)"),                        \
	CONTROLLER_CERTS_FLAG("cert-renew-fraction", CMD_FLAG_STRING, renew_fraction, 0, "F",      \
			      "renew when less than this fraction of the lifetime is left "        \
			      "(default 1/3)"),                                                     \
	CONTROLLER_CERTS_FLAG("cert-check-interval", CMD_FLAG_UINT, check_s, 86400, "SECONDS",     \
			      "how often the certificates are checked (default 60)"),              \
	CONTROLLER_CERTS_FLAG("cert-settle", CMD_FLAG_UINT, settle_s, 3600, "SECONDS",             \
			      "wait between trusting a new CA and serving from it, and between "   \
			      "serving a new leaf and dropping the old CA (default 10)")

/* True when the options ask for self-managed certificates (--tls-secret). */
bool controller_certs_self(const struct controller_certs_opts *o);

struct controller_certs;

/* Self mode: checks the options, connects to the cluster (kubeconfig as for
 * kube_config_load), makes a throwaway certificate for the server to start
 * with (never trusted, so /readyz stays false until the real one is served)
 * and fills cfg->cert_pem/key_pem/ready_fn/userdata (pointing into the
 * returned object, which must outlive the server). Errors are returned with
 * err set (bad flag values, no cluster access). */
int controller_certs_prepare(const struct controller_certs_opts *o, const char *kubeconfig,
			     struct op_http_config *cfg, struct controller_certs **ret,
			     struct op_err *err);

/* Starts the watches (serving Secret, validating configuration), the Lease
 * candidate and the certificate manager thread. srv is borrowed. */
int controller_certs_start(struct controller_certs *cc, struct op_http_server *srv,
			   struct op_err *err);

/* Stops everything (releasing the Lease) and frees. Accepts NULL. Call before
 * freeing the server. */
void controller_certs_free(struct controller_certs *cc);

#endif
