/* certmgr/certmgr.h - the operator's own certificate manager (prefix cm_).
 *
 * Keeps, in the release namespace:
 *   <ca_secret>   Opaque: ca.crt, ca.key (current signing CA) and, during a CA
 *                 rotation, next.crt, next.key (the pending CA)
 *   <tls_secret>  kubernetes.io/tls: tls.crt (the serving leaf), tls.key,
 *                 ca.crt (the CA that signed it)
 * and the caBundle of every webhook of the named webhook configurations
 * (CA certificates only, never the leaf). Each cm_sync() reads that state
 * from the API server, asks pki_rotation_next() for one action at a time,
 * executes it (one write, one Event, one log line) and repeats. Only what
 * changed is written (a Secret is PUT with its resourceVersion; a webhook
 * configuration only when one of its caBundles differs).
 *
 * Settling: an action that changes what clients trust or what replicas serve
 * while a leaf is already being served (publishing a bundle, issuing a leaf,
 * dropping a CA) ends the round; the next one should start settle_s + 1
 * later (ret_next_s says so), so the API server has loaded the new caBundle
 * before a leaf from the new CA is served, and every replica has swapped to
 * the new leaf before the old CA leaves the bundle. The pauses are enforced
 * by the manager itself (certmgr/internal.h): a round started sooner (a watch
 * event, a kick) issues no leaf from a CA published less than settle_s ago
 * and drops no CA less than settle_s after a leaf was issued; it ends early
 * and ret_next_s says when the pause is over.
 *
 * Lifetimes: a CA or leaf that lives longer than the configured lifetime (a
 * shorter one configured since it was issued) is renewed at the next round,
 * the CA by an overlapping rotation.
 *
 * Who runs it: only the Lease holder (the caller does the election). Not
 * thread-safe: one thread per struct cm.
 *
 * Lifetimes count from notBefore, which pki/ back-dates by PKI_BACKDATE_S
 * (5 min): a certificate is usable for lifetime - 5 min after issuance, so
 * lifetimes must exceed CM_MIN_LIFETIME_S (tests use 8-12 minutes, which
 * gives rotations every few tens of seconds).
 */
#ifndef PGOP_CERTMGR_CERTMGR_H
#define PGOP_CERTMGR_CERTMGR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/kube.h"
#include "pki/pki.h"
#include "support/err.h"
#include "support/http_server.h"

#define CM_MAX_WEBHOOK_CONFIGS 4u /* webhook configurations and APIServices */
#define CM_MIN_LIFETIME_S (PKI_BACKDATE_S + 60) /* usable >= 1 min */
#define CM_MAX_STEPS 8u /* actions per round (a full CA rotation is 5) */
#define CM_NEXT_CRT "next.crt"
#define CM_NEXT_KEY "next.key"

/* Which configuration carries a caBundle: a webhook configuration
 * (admissionregistration.k8s.io/v1, every webhooks[].clientConfig.caBundle)
 * or an APIService (apiregistration.k8s.io/v1, spec.caBundle; kept only
 * while its spec.service is this release's Service, so two releases never
 * fight over the one cluster-wide APIService). */
enum cm_whc_kind { CM_MUTATING, CM_VALIDATING, CM_APISERVICE };

struct cm_whc {
	enum cm_whc_kind kind;
	const char *name; /* borrowed */
};

/* Everything borrowed: must outlive the struct cm. */
struct cm_config {
	const char *ns;          /* release namespace (Secrets, Events); required */
	const char *ca_secret;   /* required */
	const char *tls_secret;  /* required */
	const char *service;     /* Service name; SANs svc, svc.ns, svc.ns.svc,
				    svc.ns.svc.cluster.local */
	const struct cm_whc *whcs; /* webhook configurations to keep current (may be 0) */
	size_t n_whcs;
	int64_t ca_lifetime_s;   /* 0 = 90 days; else >= CM_MIN_LIFETIME_S */
	int64_t leaf_lifetime_s; /* 0 = 90 days; else >= CM_MIN_LIFETIME_S */
	double renew_fraction;   /* renew when less than this is left; <=0 or >=1: 1/3 */
	unsigned settle_s;       /* 0 = 10 */
	const char *component;   /* Event reporter; NULL = "pgop-certmanager" */
};

struct cm;

/* c is borrowed (must outlive the manager). -EINVAL on a missing name. */
OP_MUST_CHECK int cm_new(struct kube_client *c, const struct cm_config *cfg, struct cm **ret_cm,
			 struct op_err *err);
/* Accepts NULL. */
void cm_free(struct cm *cm);

/* One round at Unix time `now`. Returns the number of actions executed (0 when
 * everything was current), or -errno (an API call failed: state is
 * consistent, call again later). *ret_next_s (may be NULL) is the suggested
 * delay before the next round: settle_s + 1 after a settling action, the rest
 * of a settle pause that stopped this round, else 0 ("the regular check
 * interval"). */
OP_MUST_CHECK int cm_sync(struct cm *cm, int64_t now, unsigned *ret_next_s, struct op_err *err);

/* ---------------------------------------------------------------- helpers */

/* The CA bundle of a webhook configuration object (borrowed): the CA
 * certificates present in the caBundle of EVERY webhook it lists (a CA only
 * one webhook trusts is not trusted by the configuration); of an APIService,
 * its spec.caBundle. *ret_pem owned,
 * "" when some webhook has none. -EINVAL when a caBundle is not base64 or
 * holds something that is not a CA certificate (err says which webhook). */
OP_MUST_CHECK int cm_whc_bundle(json_object *whc, char **ret_pem, struct op_err *err);

/* Sets every webhooks[].clientConfig.caBundle of whc (an APIService: its
 * spec.caBundle), modified in place, to base64(bundle_pem). Returns how many
 * differed (0: nothing to write). */
OP_MUST_CHECK int cm_whc_set_bundle(json_object *whc, const char *bundle_pem, struct op_err *err);

/* The four service SANs into out[4] (owned strings; cm_sans_done). */
void cm_sans(const char *svc, const char *ns, char *out[4]);
void cm_sans_done(char *sans[4]);

/* Parses a duration: "90d", "2160h", "45m", "40s", "1h30m" or bare seconds.
 * -EINVAL on anything else, -ERANGE past 100 years or zero. */
OP_MUST_CHECK int cm_parse_duration(const char *s, int64_t *ret_s, struct op_err *err);
/* Parses a fraction: "0.33", "1/3". -EINVAL unless 0 < f < 1. */
OP_MUST_CHECK int cm_parse_fraction(const char *s, double *ret, struct op_err *err);

/* ------------------------------------------------------------------ run
 *
 * The certificate manager at work in a server process
 * (prefix cm_run_): the manager (above) on the holder of a Lease,
 * hot swap of the serving certificate from its Secret on every replica, and
 * a readiness check that the served certificate is trusted by the current
 * caBundle of the validating webhook configuration.
 *
 * Threads: two informer threads (serving Secret, validating webhook
 * configuration), the Lease thread and the manager thread; ready() runs on
 * the HTTPS server's threads.
 */

/* Options (`pgop controller` flags); strings borrowed, must outlive the run. */
struct cm_run_opts {
	const char *tls_secret;     /* the serving kubernetes.io/tls Secret; required */
	const char *ca_secret;      /* the operator CA Secret; required */
	const char *service;        /* Service name (SANs); required */
	const char *ns;             /* NULL = $POD_NAMESPACE, else the client's namespace */
	const char *mutating;       /* webhook configurations to keep current (NULL = none) */
	const char *validating;     /* also gates readiness */
	const char *apiservice;     /* APIService to keep current while it is ours (NULL/"" = none) */
	const char *lease;          /* NULL = <tls_secret>-certs */
	const char *ca_lifetime;    /* durations (cm_parse_duration); NULL = 90d */
	const char *cert_lifetime;
	const char *renew_fraction; /* NULL = 1/3 */
	unsigned check_s;           /* 0 = 60 */
	unsigned settle_s;          /* 0 = 10 */
};

/* True when the options ask for self-managed certificates (tls_secret set). */
bool cm_run_self(const struct cm_run_opts *o);

struct cm_run;

/* Checks the options, connects to the cluster (kubeconfig as for
 * kube_config_load), makes a throwaway certificate for the server to start
 * with (never trusted, so /readyz stays false until the real one is served)
 * and fills cfg->cert_pem/key_pem/ready_fn/ready_userdata (pointing into the
 * returned object, which must outlive the server). Errors are returned with
 * err set (bad option values, no cluster access). *ret owned. */
OP_MUST_CHECK
int cm_run_prepare(const struct cm_run_opts *o, const char *kubeconfig,
		   struct op_http_config *cfg, struct cm_run **ret, struct op_err *err);

/* Starts the watches (serving Secret, validating configuration), the Lease
 * candidate and the certificate manager thread. srv is borrowed. */
OP_MUST_CHECK int cm_run_start(struct cm_run *cc, struct op_http_server *srv, struct op_err *err);

/* Stops everything (releasing the Lease) and frees. Accepts NULL. Call before
 * freeing the server. */
void cm_run_free(struct cm_run *cc);

#endif
