/* cmd/controller_certs.h - the flags of certificate mode "self" of `pgop
 * controller` (--tls-secret ...): rows spliced into the controller's flag
 * table with CONTROLLER_CERTS_FLAGS, values in struct cm_run_opts
 * (certmgr/certmgr.h, which runs the certificate manager).
 */
#ifndef PGOP_CMD_CONTROLLER_CERTS_H
#define PGOP_CMD_CONTROLLER_CERTS_H

#include <stddef.h>

#include "cmd/flags.h"
#include "certmgr/certmgr.h"

#define CONTROLLER_CERTS_FLAG(name, type, field, max, metavar, help)                               \
	{ name, 0, type, offsetof(struct controller_opts, certs) +                                 \
				 offsetof(struct cm_run_opts, field),                    \
	  max, metavar, help }

/* Rows for the controller's flag table (struct controller_opts must have a
 * member `struct cm_run_opts certs`). */
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
	CONTROLLER_CERTS_FLAG("apiservice", CMD_FLAG_STRING, apiservice, 0, "NAME",                \
			      "APIService whose caBundle is kept current while it points at "      \
			      "--service (default v1.live.postgresql.cnpg.io; \"\" = none)"),      \
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

#endif
