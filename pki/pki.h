/* pki/pki.h - X.509 with gnutls: keys, CAs, leaves, verification, renewal
 * policy, caBundle bundles, CA rotation plan and kubernetes.io/tls Secrets.
 *
 * Everything here is pure: no Kubernetes calls, no clocks (callers pass `now`
 * as Unix seconds), no logging. Certificates and keys travel as PEM strings
 * (NUL-terminated); every PEM input is capped at PKI_PEM_MAX bytes.
 *
 * Keys are ECDSA P-256 and are written as SEC1 ("EC PRIVATE KEY", what gnutls
 * and CloudNativePG emit); PKCS#8 ("PRIVATE KEY") is accepted on input.
 * Signatures are ECDSA with SHA-256. Serials are random 128-bit positive
 * integers. notBefore is back-dated by PKI_BACKDATE_S for clock skew.
 *
 * Errors: functions that can fail return 0 (or a count) and -errno, filling
 * the caller-owned struct op_err (may be NULL); ret_* outputs are written only
 * on success. -EINVAL = malformed input (message names the field), -EMSGSIZE
 * = input over a cap, -EKEYREJECTED = verification failed, -EIO = gnutls
 * failure while building.
 */
#ifndef PGOP_PKI_PKI_H
#define PGOP_PKI_PKI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"

#define PKI_PEM_MAX (256u * 1024)       /* one PEM input (cert, key or bundle) */
#define PKI_BUNDLE_MAX_CERTS 32u        /* certificates in one bundle or chain */
#define PKI_SAN_MAX 256u                /* SAN entries in a request or certificate */
#define PKI_BACKDATE_S (5 * 60)         /* notBefore = now - 5 min (CNPG) */
#define PKI_DAY_S (24 * 60 * 60)
#define PKI_CA_LIFETIME_DEFAULT_S (365LL * PKI_DAY_S)
#define PKI_LEAF_LIFETIME_DEFAULT_S (90LL * PKI_DAY_S)
#define PKI_RENEW_FRACTION_DEFAULT (1.0 / 3.0)
#define PKI_FINGERPRINT_HEX 64u         /* SHA-256 as lower-case hex */

/* ------------------------------------------------------------------ keys */

/* A certificate with its private key, both PEM. Owned strings (free with
 * pki_pair_done). key_pem may be NULL for a trust-only certificate. */
struct pki_pair {
	char *cert_pem;
	char *key_pem;
};

void pki_pair_done(struct pki_pair *p); /* accepts NULL; frees contents */

/* New ECDSA P-256 private key; *ret_key_pem is owned (free()). */
OP_MUST_CHECK int pki_key_generate(char **ret_key_pem, struct op_err *err);

/* 0 when key_pem is a valid private key and matches the (first) certificate
 * of cert_pem; -EKEYREJECTED when they do not match; -EINVAL when malformed. */
OP_MUST_CHECK int pki_pair_check(const char *cert_pem, const char *key_pem, struct op_err *err);

/* ------------------------------------------------------------- issuance */

/* Leaf extended key usage (bit set). */
enum pki_usage {
	PKI_USAGE_SERVER = 1u << 0, /* extKeyUsage serverAuth */
	PKI_USAGE_CLIENT = 1u << 1, /* extKeyUsage clientAuth */
};

/* A self-signed CA: CA:TRUE pathlen 0, keyUsage keyCertSign|cRLSign, SKI. */
struct pki_ca_req {
	const char *cn;         /* borrowed; required (e.g. "<cluster>") */
	const char *ou;         /* borrowed; optional (e.g. the namespace) */
	int64_t now;            /* Unix seconds */
	int64_t lifetime_s;     /* 0 = PKI_CA_LIFETIME_DEFAULT_S */
	const char *key_pem;    /* borrowed; optional: re-sign this key instead of a new one */
};

/* A leaf signed by a CA. `sans` holds DNS names and IP addresses (an entry
 * that parses as IPv4/IPv6 becomes an iPAddress SAN, anything else dNSName).
 * notAfter is clamped to the CA's notAfter so a leaf never outlives its CA. */
struct pki_leaf_req {
	const char *cn;                 /* borrowed; required ("<c>-rw", "streaming_replica") */
	const char *const *sans;        /* borrowed array of borrowed strings; may be NULL */
	size_t n_sans;
	unsigned usage;                 /* enum pki_usage bits; at least one */
	int64_t now;
	int64_t lifetime_s;             /* 0 = PKI_LEAF_LIFETIME_DEFAULT_S */
	const char *key_pem;            /* borrowed; optional: re-sign this key */
};

OP_MUST_CHECK
int pki_ca_create(const struct pki_ca_req *req, struct pki_pair *ret, struct op_err *err);

/* The operator's in-memory mTLS client identity (CNPG v1.30 semantics):
 * self-signed, not a CA, CN = cn (pod hostname), extKeyUsage clientAuth,
 * notAfter 9999-12-31T23:59:59Z, fresh key. Instances pin it by
 * pki_cert_info.spki_sha256 (SHA-256 of SubjectPublicKeyInfo, hex). */
#define PKI_NOT_AFTER_FOREVER ((int64_t)253402300799) /* 9999-12-31T23:59:59Z */
OP_MUST_CHECK
int pki_client_selfsigned(const char *cn, int64_t now, struct pki_pair *ret, struct op_err *err);
/* ca must carry both cert_pem and key_pem. */
OP_MUST_CHECK int pki_leaf_issue(const struct pki_pair *ca, const struct pki_leaf_req *req,
				 struct pki_pair *ret, struct op_err *err);

/* ------------------------------------------------------------ inspection */

struct pki_cert_info {
	int64_t not_before, not_after;       /* Unix seconds */
	char *subject_cn;                    /* owned; "" when absent */
	char *issuer_cn;                     /* owned; "" when absent */
	char **dns;                          /* owned array of owned strings */
	size_t n_dns;
	char **ips;                          /* owned; textual (inet_ntop form) */
	size_t n_ips;
	bool is_ca;                          /* basicConstraints CA:TRUE */
	bool self_signed;                    /* subject == issuer and self-signature checks */
	unsigned usage;                      /* enum pki_usage bits from extKeyUsage */
	char fingerprint[PKI_FINGERPRINT_HEX + 1]; /* SHA-256 of the DER certificate */
	char spki_sha256[PKI_FINGERPRINT_HEX + 1]; /* SHA-256 of SubjectPublicKeyInfo (pinning) */
	char serial[2 * 20 + 1];            /* hex */
};

/* Parses the first certificate of pem (a chain may follow; it is ignored).
 * Malformed input gives -EINVAL with "<what>: ..." in err, `what` naming the
 * field ("tls.crt"); what may be NULL ("certificate"). */
OP_MUST_CHECK int pki_cert_info_parse(const char *pem, const char *what, struct pki_cert_info *ret,
				      struct op_err *err);
void pki_cert_info_done(struct pki_cert_info *info); /* accepts NULL */

/* Verifies the chain in leaf_pem (leaf first, optional intermediates) against
 * the CA certificates of bundle_pem at time `now` (validity of the leaf and of
 * every certificate used is checked against `now`, not the wall clock).
 * want_usage: required extKeyUsage bits (0 = any). 0 when trusted, else
 * -EKEYREJECTED with the reason in err (e.g. "signed by unknown authority"). */
OP_MUST_CHECK
int pki_verify(const char *leaf_pem, const char *bundle_pem, int64_t now, unsigned want_usage,
	       struct op_err *err);

/* ---------------------------------------------------------------- renewal */

enum pki_renew_reason {
	PKI_RENEW_NONE = 0,
	PKI_RENEW_MISSING,        /* no certificate */
	PKI_RENEW_INVALID,        /* unparseable, or key/usage/CN not as wanted */
	PKI_RENEW_NOT_YET_VALID,  /* now < notBefore */
	PKI_RENEW_EXPIRED,        /* now >= notAfter */
	PKI_RENEW_LIFETIME,       /* less than `fraction` of the lifetime remains */
	PKI_RENEW_SANS,           /* SAN set differs from the wanted set */
	PKI_RENEW_ISSUER,         /* not signed by the current CA */
	PKI_RENEW_LONGER,         /* lives longer than the configured lifetime (rotation plan
				     only: pki_rotation_policy.*_lifetime_s) */
};

/* Stable lower-case token for logs/events ("expired", "sans-changed"...). */
const char *pki_renew_reason_str(enum pki_renew_reason r);

/* Why cert_pem must be re-issued, or PKI_RENEW_NONE. Checks, in order:
 * missing, invalid, not yet valid, expired, issuer (when ca_pem is given:
 * the cert must verify against exactly that CA), wanted CN/usage/SANs (when
 * want is given; want->now/lifetime/key are ignored), and remaining lifetime
 * (< fraction of notAfter-notBefore left; fraction <= 0 or >= 1 means the
 * default 1/3). For a CA pass ca_pem = NULL and want = NULL. */
enum pki_renew_reason pki_needs_renewal(const char *cert_pem, const char *ca_pem,
					const struct pki_leaf_req *want, int64_t now,
					double fraction);

/* The first Unix second from which pki_needs_renewal reports
 * PKI_RENEW_LIFETIME for the certificate described by info (fraction as
 * there): before it, only its other checks can ask for a renewal. */
int64_t pki_renew_at(const struct pki_cert_info *info, double fraction);

/* --------------------------------------------------------------- bundles */

/* A caBundle: CA certificates only, deduplicated by fingerprint, kept in a
 * stable order (notBefore ascending, then fingerprint) so rendering the same
 * set always gives the same bytes. */
struct pki_bundle_entry {
	char *pem;              /* owned: this one certificate, PEM */
	char fingerprint[PKI_FINGERPRINT_HEX + 1];
	int64_t not_before, not_after;
};

struct pki_bundle {
	struct pki_bundle_entry *v; /* owned array */
	size_t n;
};

#define PKI_BUNDLE_INIT ((struct pki_bundle){ .v = NULL, .n = 0 })

void pki_bundle_done(struct pki_bundle *b); /* accepts NULL; frees contents */

/* Parses a PEM bundle. Every certificate must be a CA (-EINVAL naming the
 * offending subject otherwise: a leaf in a caBundle is the CNPG #9817 bug).
 * Empty input gives an empty bundle. */
OP_MUST_CHECK int pki_bundle_parse(const char *pem, struct pki_bundle *ret, struct op_err *err);
/* Adds the CA certificate(s) of ca_pem. Returns the number added (duplicates
 * are skipped); -EINVAL for a non-CA or malformed PEM, -EMSGSIZE when the
 * bundle would pass PKI_BUNDLE_MAX_CERTS. The bundle is unchanged on error. */
OP_MUST_CHECK int pki_bundle_add(struct pki_bundle *b, const char *ca_pem, struct op_err *err);
/* Removes the entry with this fingerprint; returns 1 if removed, 0 if absent. */
int pki_bundle_remove(struct pki_bundle *b, const char *fingerprint);
/* Removes entries with notAfter <= now; returns how many. */
size_t pki_bundle_drop_expired(struct pki_bundle *b, int64_t now);
bool pki_bundle_contains(const struct pki_bundle *b, const char *fingerprint);
/* Concatenated PEM, owned (free()); "" for an empty bundle. */
char *pki_bundle_render(const struct pki_bundle *b);
/* Builds a rendered bundle from n CA PEMs (NULL entries skipped). */
OP_MUST_CHECK
int pki_bundle_build(const char *const *cas, size_t n, char **ret_pem, struct op_err *err);
/* True only when pem parses and every certificate in it is a CA (an empty
 * bundle is not "CA only": it trusts nothing). */
bool pki_bundle_is_ca_only(const char *pem);

/* -------------------------------------------------------- CA rotation plan */

/* Overlapping CA rotation as a pure state machine. The certificate manager
 * reads its state, calls pki_rotation_next(), executes the one action, writes
 * what changed and calls again until PKI_ROT_NOTHING (bounded by the caller).
 *
 * `bundle_pem` must be the bundle clients actually see (read back from the
 * webhook configuration / confirmed mounted), not what was last written.
 *
 *   CREATE_CA        no usable CA: create one, store it as current
 *   PUBLISH_BUNDLE   the published bundle lacks the current or next CA, or
 *                    holds something that is not a CA: publish step.bundle_pem
 *   ISSUE_LEAF       leaf missing or due (step.reason): issue from current CA
 *   ISSUE_NEXT_CA    current CA is due (or longer-lived than the policy allows):
 *                    create a new CA, store it as next
 *   PROMOTE_NEXT_CA  next CA is published (or current is dead): next becomes
 *                    current (the old CA stays in the bundle; the leaf it
 *                    signed is then re-issued by ISSUE_LEAF, reason issuer)
 *   DROP_OLD_CA      the bundle holds CAs no valid leaf needs any more:
 *                    publish step.bundle_pem
 * Invariant kept: a leaf is only issued from a CA the published bundle
 * already trusts, and a CA leaves the bundle only when the serving leaf does
 * not chain to it. */
enum pki_rot_action {
	PKI_ROT_NOTHING = 0,
	PKI_ROT_CREATE_CA,
	PKI_ROT_PUBLISH_BUNDLE,
	PKI_ROT_ISSUE_LEAF,
	PKI_ROT_ISSUE_NEXT_CA,
	PKI_ROT_PROMOTE_NEXT_CA,
	PKI_ROT_DROP_OLD_CA,
};

const char *pki_rot_action_str(enum pki_rot_action a);

struct pki_rotation_input {
	const char *ca_pem;       /* borrowed; current signing CA cert, NULL if none */
	const char *next_ca_pem;  /* borrowed; pending CA cert, NULL if none */
	const char *leaf_pem;     /* borrowed; serving leaf, NULL if none */
	const char *bundle_pem;   /* borrowed; published caBundle, NULL/"" if none */
	const char *const *other_leaves; /* borrowed; other leaves of this CA still in use
					    (e.g. client certs): they keep their CA in the bundle */
	size_t n_other_leaves;
	int64_t now;
};

struct pki_rotation_policy {
	double ca_renew_fraction;        /* <=0: default 1/3 */
	double leaf_renew_fraction;      /* <=0: default 1/3 */
	/* > 0: a CA / leaf whose notAfter - notBefore is longer is renewed like one
	 * that is due (reason PKI_RENEW_LONGER: the CA by an overlapping rotation),
	 * so a shorter configured lifetime takes effect at the next check. */
	int64_t ca_lifetime_s, leaf_lifetime_s;
	const struct pki_leaf_req *want; /* borrowed; wanted CN/SANs/usage of the leaf, or NULL */
};

struct pki_rotation_step {
	enum pki_rot_action action;
	enum pki_renew_reason reason; /* why (for CREATE_CA, ISSUE_LEAF, ISSUE_NEXT_CA) */
	char *bundle_pem;             /* owned; set for PUBLISH_BUNDLE and DROP_OLD_CA */
};

void pki_rotation_step_done(struct pki_rotation_step *s); /* accepts NULL */

/* Pure: decides the next action; *ret is owned (pki_rotation_step_done).
 * Malformed, non-CA or expired inputs are treated as absent (and so lead to
 * CREATE_CA / ISSUE_LEAF / PUBLISH_BUNDLE). Fails only when the wanted
 * bundle would pass PKI_BUNDLE_MAX_CERTS (-EMSGSIZE) or gnutls fails. */
OP_MUST_CHECK
int pki_rotation_next(const struct pki_rotation_input *in, const struct pki_rotation_policy *pol,
		      struct pki_rotation_step *ret, struct op_err *err);

/* ---------------------------------------------------------------- Secrets */

/* Secret shapes (table-driven key names):
 *   PKI_SECRET_TLS  type kubernetes.io/tls, data tls.crt, tls.key, ca.crt (optional)
 *   PKI_SECRET_CA   type Opaque, data ca.crt, ca.key (CNPG "<cluster>-ca") */
enum pki_secret_kind { PKI_SECRET_TLS, PKI_SECRET_CA };

struct pki_secret_data {
	char *crt; /* owned PEM: tls.crt (TLS) or ca.crt (CA) */
	char *key; /* owned PEM: tls.key (required) or ca.key (optional: a user CA
		      given for trust only) */
	char *ca;  /* owned PEM: ca.crt (TLS only), may be NULL */
};

void pki_secret_data_done(struct pki_secret_data *d); /* accepts NULL */

/* Builds {"apiVersion":"v1","kind":"Secret","metadata":{name,namespace},
 * "type":...,"data":{...base64...}}. *ret is owned (json_object_put). */
OP_MUST_CHECK
int pki_secret_build(enum pki_secret_kind kind, const char *ns, const char *name,
		     const struct pki_secret_data *d, json_object **ret, struct op_err *err);
/* Parses and checks a Secret object (borrowed): type, base64, PEM shape,
 * certificate parses, key parses and matches the certificate. ca.crt, when
 * present, must be CA-only. Errors name the key ("data.tls.crt: ..."). */
OP_MUST_CHECK
int pki_secret_parse(enum pki_secret_kind kind, json_object *secret, struct pki_secret_data *ret,
		     struct op_err *err);

#endif
