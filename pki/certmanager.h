/* pki/certmanager.h - the operator's own certificate manager (prefix pki_cm_).
 *
 * Keeps, in the release namespace:
 *   <ca_secret>   Opaque: ca.crt, ca.key (current signing CA) and, during a CA
 *                 rotation, next.crt, next.key (the pending CA)
 *   <tls_secret>  kubernetes.io/tls: tls.crt (the serving leaf), tls.key,
 *                 ca.crt (the CA that signed it)
 * and the caBundle of every webhook of the named webhook configurations
 * (CA certificates only, never the leaf). Each pki_cm_sync() reads that state
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
 * by the manager itself (pki/cm_settle.h): a round started sooner (a watch
 * event, a kick) issues no leaf from a CA published less than settle_s ago
 * and drops no CA less than settle_s after a leaf was issued; it ends early
 * and ret_next_s says when the pause is over.
 *
 * Lifetimes: a CA or leaf that lives longer than the configured lifetime (a
 * shorter one configured since it was issued) is renewed at the next round,
 * the CA by an overlapping rotation.
 *
 * Who runs it: only the Lease holder (the caller does the election). Not
 * thread-safe: one thread per struct pki_cm.
 *
 * Lifetimes count from notBefore, which pki/ back-dates by PKI_BACKDATE_S
 * (5 min): a certificate is usable for lifetime - 5 min after issuance, so
 * lifetimes must exceed PKI_CM_MIN_LIFETIME_S (tests use 8-12 minutes, which
 * gives rotations every few tens of seconds).
 */
#ifndef PGOP_PKI_CERTMANAGER_H
#define PGOP_PKI_CERTMANAGER_H

#include <json-c/json.h>
#include <stdint.h>

#include "kube/kube.h"
#include "support/err.h"

#define PKI_CM_MAX_WEBHOOK_CONFIGS 4u /* webhook configurations and APIServices */
#define PKI_CM_MIN_LIFETIME_S (PKI_BACKDATE_S + 60) /* usable >= 1 min */
#define PKI_CM_MAX_STEPS 8u /* actions per round (a full CA rotation is 5) */
#define PKI_CM_NEXT_CRT "next.crt"
#define PKI_CM_NEXT_KEY "next.key"

/* Which configuration carries a caBundle: a webhook configuration
 * (admissionregistration.k8s.io/v1, every webhooks[].clientConfig.caBundle)
 * or an APIService (apiregistration.k8s.io/v1, spec.caBundle; kept only
 * while its spec.service is this release's Service, so two releases never
 * fight over the one cluster-wide APIService). */
enum pki_cm_whc_kind { PKI_CM_MUTATING, PKI_CM_VALIDATING, PKI_CM_APISERVICE };

struct pki_cm_whc {
	enum pki_cm_whc_kind kind;
	const char *name; /* borrowed */
};

/* Everything borrowed: must outlive the struct pki_cm. */
struct pki_cm_config {
	const char *ns;          /* release namespace (Secrets, Events); required */
	const char *ca_secret;   /* required */
	const char *tls_secret;  /* required */
	const char *service;     /* Service name; SANs svc, svc.ns, svc.ns.svc,
				    svc.ns.svc.cluster.local */
	const struct pki_cm_whc *whcs; /* webhook configurations to keep current (may be 0) */
	size_t n_whcs;
	int64_t ca_lifetime_s;   /* 0 = 90 days; else >= PKI_CM_MIN_LIFETIME_S */
	int64_t leaf_lifetime_s; /* 0 = 90 days; else >= PKI_CM_MIN_LIFETIME_S */
	double renew_fraction;   /* renew when less than this is left; <=0 or >=1: 1/3 */
	unsigned settle_s;       /* 0 = 10 */
	const char *component;   /* Event reporter; NULL = "pgop-certmanager" */
};

struct pki_cm;

/* c is borrowed (must outlive the manager). -EINVAL on a missing name. */
int pki_cm_new(struct kube_client *c, const struct pki_cm_config *cfg, struct pki_cm **ret_cm,
	       struct op_err *err);
/* Accepts NULL. */
void pki_cm_free(struct pki_cm *cm);

/* One round at Unix time `now`. Returns the number of actions executed (0 when
 * everything was current), or -errno (an API call failed: state is
 * consistent, call again later). *ret_next_s (may be NULL) is the suggested
 * delay before the next round: settle_s + 1 after a settling action, the rest
 * of a settle pause that stopped this round, else 0 ("the regular check
 * interval"). */
int pki_cm_sync(struct pki_cm *cm, int64_t now, unsigned *ret_next_s, struct op_err *err);

/* ---------------------------------------------------------------- helpers */

/* The CA bundle of a webhook configuration object (borrowed): the CA
 * certificates present in the caBundle of EVERY webhook it lists (a CA only
 * one webhook trusts is not trusted by the configuration); of an APIService,
 * its spec.caBundle. *ret_pem owned,
 * "" when some webhook has none. -EINVAL when a caBundle is not base64 or
 * holds something that is not a CA certificate (err says which webhook). */
int pki_cm_whc_bundle(json_object *whc, char **ret_pem, struct op_err *err);

/* Sets every webhooks[].clientConfig.caBundle of whc (an APIService: its
 * spec.caBundle), modified in place, to base64(bundle_pem). Returns how many
 * differed (0: nothing to write). */
int pki_cm_whc_set_bundle(json_object *whc, const char *bundle_pem, struct op_err *err);

/* The four service SANs into out[4] (owned strings; pki_cm_sans_done). */
void pki_cm_sans(const char *svc, const char *ns, char *out[4]);
void pki_cm_sans_done(char *sans[4]);

/* Parses a duration: "90d", "2160h", "45m", "40s", "1h30m" or bare seconds.
 * -EINVAL on anything else, -ERANGE past 100 years or zero. */
int pki_cm_parse_duration(const char *s, int64_t *ret_s, struct op_err *err);
/* Parses a fraction: "0.33", "1/3". -EINVAL unless 0 < f < 1. */
int pki_cm_parse_fraction(const char *s, double *ret, struct op_err *err);

#endif
