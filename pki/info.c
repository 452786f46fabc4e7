/* pki/info.c - certificate inspection, chain verification and the renewal
 * policy (see pki.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <strings.h>

#include "pki/internal.h"
#include "support/alloc.h"

#define PKI_FIELD_MAX 4096u /* one DN attribute, SAN or OID read from a certificate */

void pki_cert_info_done(struct pki_cert_info *info)
{
	if (!info)
		return;
	free(info->subject_cn);
	free(info->issuer_cn);
	for (size_t i = 0; i < info->n_dns; i++)
		free(info->dns[i]);
	free(info->dns);
	for (size_t i = 0; i < info->n_ips; i++)
		free(info->ips[i]);
	free(info->ips);
	*info = (struct pki_cert_info){ 0 };
}

/* CN of the subject (issuer=false) or issuer; "" when absent. */
static int get_cn(gnutls_x509_crt_t crt, bool issuer, char **ret, struct op_err *err,
		  const char *what)
{
	size_t size = 0;
	int g = issuer ? gnutls_x509_crt_get_issuer_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME,
							      0, 0, NULL, &size)
		       : gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0,
						       NULL, &size);
	if (g == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
		*ret = op_strdup("");
		return 0;
	}
	if (g != GNUTLS_E_SHORT_MEMORY_BUFFER && g < 0)
		return op_err_set(err, -EINVAL, "%s: bad %s name: %s", what,
				  issuer ? "issuer" : "subject", gnutls_strerror(g));
	if (size > PKI_FIELD_MAX)
		return op_err_set(err, -EINVAL, "%s: common name longer than %u bytes", what,
				  PKI_FIELD_MAX);
	_cleanup_free_ char *buf = op_calloc(1, size + 1);
	g = issuer ? gnutls_x509_crt_get_issuer_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0,
							  buf, &size)
		   : gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf,
						   &size);
	if (g < 0)
		return op_err_set(err, -EINVAL, "%s: bad common name: %s", what,
				  gnutls_strerror(g));
	*ret = TAKE_PTR(buf);
	return 0;
}

static void push(char ***v, size_t *n, char *s)
{
	*v = op_realloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = s;
}

static int get_sans(gnutls_x509_crt_t crt, struct pki_cert_info *info, struct op_err *err,
		    const char *what)
{
	for (unsigned seq = 0;; seq++) {
		if (seq >= PKI_SAN_MAX)
			return op_err_set(err, -EINVAL, "%s: more than %u subject alt names", what,
					  PKI_SAN_MAX);
		size_t size = 0;
		unsigned type = 0, critical = 0;
		int g = gnutls_x509_crt_get_subject_alt_name2(crt, seq, NULL, &size, &type,
							      &critical);
		if (g == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			return 0;
		if (g != GNUTLS_E_SHORT_MEMORY_BUFFER && g < 0)
			return op_err_set(err, -EINVAL, "%s: bad subject alt name: %s", what,
					  gnutls_strerror(g));
		if (size > PKI_FIELD_MAX)
			return op_err_set(err, -EINVAL, "%s: subject alt name longer than %u bytes",
					  what, PKI_FIELD_MAX);
		_cleanup_free_ unsigned char *buf = op_calloc(1, size + 1);
		g = gnutls_x509_crt_get_subject_alt_name2(crt, seq, buf, &size, &type, &critical);
		if (g < 0)
			return op_err_set(err, -EINVAL, "%s: bad subject alt name: %s", what,
					  gnutls_strerror(g));
		if (g == GNUTLS_SAN_DNSNAME) {
			push(&info->dns, &info->n_dns, op_strndup((char *)buf, size));
		} else if (g == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
			char txt[INET6_ADDRSTRLEN];
			if (!inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, txt, sizeof(txt)))
				return op_err_set(err, -EINVAL, "%s: bad IP subject alt name",
						  what);
			push(&info->ips, &info->n_ips, op_strdup(txt));
		}
	}
}

static int get_usage(gnutls_x509_crt_t crt, unsigned *ret)
{
	unsigned usage = 0;
	for (unsigned i = 0; i < 64; i++) {
		size_t size = 0;
		unsigned critical = 0;
		int g = gnutls_x509_crt_get_key_purpose_oid(crt, i, NULL, &size, &critical);
		if (g == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
			break;
		if ((g != GNUTLS_E_SHORT_MEMORY_BUFFER && g < 0) || size > PKI_FIELD_MAX)
			return -EINVAL;
		_cleanup_free_ char *oid = op_calloc(1, size + 1);
		if (gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &size, &critical) < 0)
			return -EINVAL;
		if (strcmp(oid, GNUTLS_KP_TLS_WWW_SERVER) == 0)
			usage |= PKI_USAGE_SERVER;
		else if (strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT) == 0)
			usage |= PKI_USAGE_CLIENT;
	}
	*ret = usage;
	return 0;
}

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static int info_from_crt(gnutls_x509_crt_t crt, const char *what, struct pki_cert_info *ret,
			 struct op_err *err)
{
	_cleanup_(pki_cert_info_done) struct pki_cert_info info = { 0 };
	info.not_before = (int64_t)gnutls_x509_crt_get_activation_time(crt);
	info.not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
	if (info.not_before == -1 || info.not_after == -1)
		return op_err_set(err, -EINVAL, "%s: bad validity period", what);
	int r = get_cn(crt, false, &info.subject_cn, err, what);
	if (r < 0)
		return r;
	r = get_cn(crt, true, &info.issuer_cn, err, what);
	if (r < 0)
		return r;
	r = get_sans(crt, &info, err, what);
	if (r < 0)
		return r;
	if (get_usage(crt, &info.usage) < 0)
		return op_err_set(err, -EINVAL, "%s: bad extended key usage", what);
	info.is_ca = pki__crt_is_ca(crt);
	unsigned status = 0;
	info.self_signed = gnutls_x509_crt_check_issuer(crt, crt) &&
			   gnutls_x509_crt_verify(crt, &crt, 1,
						  GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
							  GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
						  &status) >= 0 &&
			   status == 0;
	if (pki__crt_fingerprint(crt, info.fingerprint) < 0)
		return op_err_set(err, -EIO, "%s: cannot compute fingerprint", what);
	unsigned char buf[64];
	size_t n = sizeof(buf);
	if (gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, buf, &n) < 0 || n != 32)
		return op_err_set(err, -EINVAL, "%s: unsupported public key", what);
	hex(buf, n, info.spki_sha256);
	n = sizeof(buf);
	if (gnutls_x509_crt_get_serial(crt, buf, &n) < 0 || n == 0 || n > 20)
		return op_err_set(err, -EINVAL, "%s: bad serial number", what);
	hex(buf, n, info.serial);
	*ret = info;
	info = (struct pki_cert_info){ 0 };
	return 0;
}

int pki_cert_info_parse(const char *pem, const char *what, struct pki_cert_info *ret,
			struct op_err *err)
{
	if (!what)
		what = "certificate";
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	int r = pki__crt_import(pem, what, &crt, err);
	if (r < 0)
		return r;
	return info_from_crt(crt, what, ret, err);
}

/* ------------------------------------------------------------ verification */

static int check_time(gnutls_x509_crt_t crt, int64_t now, const char *role, struct op_err *err)
{
	int64_t nb = (int64_t)gnutls_x509_crt_get_activation_time(crt);
	int64_t na = (int64_t)gnutls_x509_crt_get_expiration_time(crt);
	if (now < nb)
		return op_err_set(err, -EKEYREJECTED, "%s certificate not yet valid", role);
	if (now >= na)
		return op_err_set(err, -EKEYREJECTED, "%s certificate expired", role);
	return 0;
}

static void trust_list_deinitp(gnutls_x509_trust_list_t *p)
{
	if (*p)
		gnutls_x509_trust_list_deinit(*p, 1);
}

int pki_verify(const char *leaf_pem, const char *bundle_pem, int64_t now, unsigned want_usage,
	       struct op_err *err)
{
	gnutls_x509_crt_t *chain = NULL, *cas = NULL;
	unsigned n_chain = 0, n_cas = 0;
	_cleanup_(trust_list_deinitp) gnutls_x509_trust_list_t tl = NULL;
	int r = pki__crt_list_import(leaf_pem, "leaf", &chain, &n_chain, err);
	if (r < 0)
		return r;
	r = pki__crt_list_import(bundle_pem, "bundle", &cas, &n_cas, err);
	if (r < 0)
		goto out;
	if (gnutls_x509_trust_list_init(&tl, 0) < 0) {
		r = op_err_set(err, -ENOMEM, "cannot allocate trust list");
		goto out;
	}
	/* The trust list owns the certificates from here on, even on failure. */
	int g = gnutls_x509_trust_list_add_cas(tl, cas, n_cas, 0);
	gnutls_free(cas);
	cas = NULL;
	if (g < 0) {
		r = op_err_set(err, -EIO, "cannot load bundle: %s", gnutls_strerror(g));
		goto out;
	}
	unsigned status = 0;
	g = gnutls_x509_trust_list_verify_crt2(tl, chain, n_chain, NULL, 0,
					       GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
						       GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
					       &status, NULL);
	if (g < 0) {
		r = op_err_set(err, -EIO, "verification failed: %s", gnutls_strerror(g));
		goto out;
	}
	if (status != 0) {
		gnutls_datum_t out = { 0 };
		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out,
								 0) >= 0) {
			r = op_err_set(err, -EKEYREJECTED, "leaf not trusted by bundle: %s",
				       (const char *)out.data);
			gnutls_free(out.data);
		} else {
			r = op_err_set(err, -EKEYREJECTED, "leaf not trusted by bundle");
		}
		goto out;
	}
	for (unsigned i = 0; i < n_chain; i++) {
		r = check_time(chain[i], now, i == 0 ? "leaf" : "intermediate", err);
		if (r < 0)
			goto out;
	}
	gnutls_x509_crt_t issuer = NULL; /* owned by tl */
	if (gnutls_x509_trust_list_get_issuer(tl, chain[n_chain - 1], &issuer, 0) >= 0 && issuer) {
		r = check_time(issuer, now, "issuing CA", err);
		if (r < 0)
			goto out;
	}
	if (want_usage) {
		unsigned usage = 0;
		if (get_usage(chain[0], &usage) < 0 || (usage & want_usage) != want_usage) {
			r = op_err_set(err, -EKEYREJECTED,
				       "leaf lacks the wanted extended key usage");
			goto out;
		}
	}
	r = 0;
out:
	pki__crt_list_free(chain, n_chain);
	pki__crt_list_free(cas, n_cas);
	return r;
}

/* ----------------------------------------------------------------- renewal */

static const char *const reason_names[] = {
	[PKI_RENEW_NONE] = "none",
	[PKI_RENEW_MISSING] = "missing",
	[PKI_RENEW_INVALID] = "invalid",
	[PKI_RENEW_NOT_YET_VALID] = "not-yet-valid",
	[PKI_RENEW_EXPIRED] = "expired",
	[PKI_RENEW_LIFETIME] = "expiring",
	[PKI_RENEW_SANS] = "sans-changed",
	[PKI_RENEW_ISSUER] = "issuer-changed",
	[PKI_RENEW_LONGER] = "longer-than-configured",
};

const char *pki_renew_reason_str(enum pki_renew_reason r)
{
	if ((size_t)r < OP_ARRAY_SIZE(reason_names) && reason_names[r])
		return reason_names[r];
	return "unknown";
}

/* Normalizes one wanted SAN for comparison: IPs to inet_ntop form. */
static bool san_is_ip(const char *s, char out[INET6_ADDRSTRLEN])
{
	unsigned char ip[16];
	if (inet_pton(AF_INET, s, ip) == 1)
		return inet_ntop(AF_INET, ip, out, INET6_ADDRSTRLEN) != NULL;
	if (inet_pton(AF_INET6, s, ip) == 1)
		return inet_ntop(AF_INET6, ip, out, INET6_ADDRSTRLEN) != NULL;
	return false;
}

static bool in_list(char *const *v, size_t n, const char *s, bool icase)
{
	for (size_t i = 0; i < n; i++)
		if (icase ? strcasecmp(v[i], s) == 0 : strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* True when the certificate's SAN set equals the wanted set (order and
 * duplicates ignored, DNS case-insensitive, IPs normalized). */
static bool sans_match(const struct pki_cert_info *info, const struct pki_leaf_req *want)
{
	for (size_t i = 0; i < want->n_sans; i++) {
		char ip[INET6_ADDRSTRLEN];
		if (san_is_ip(want->sans[i], ip)) {
			if (!in_list(info->ips, info->n_ips, ip, false))
				return false;
		} else if (!in_list(info->dns, info->n_dns, want->sans[i], true)) {
			return false;
		}
	}
	/* Every certificate SAN must be wanted too. */
	for (size_t i = 0; i < info->n_dns; i++) {
		bool found = false;
		for (size_t j = 0; j < want->n_sans && !found; j++)
			found = strcasecmp(info->dns[i], want->sans[j]) == 0;
		if (!found)
			return false;
	}
	for (size_t i = 0; i < info->n_ips; i++) {
		bool found = false;
		for (size_t j = 0; j < want->n_sans && !found; j++) {
			char ip[INET6_ADDRSTRLEN];
			found = san_is_ip(want->sans[j], ip) && strcmp(ip, info->ips[i]) == 0;
		}
		if (!found)
			return false;
	}
	return true;
}

enum pki_renew_reason pki_needs_renewal(const char *cert_pem, const char *ca_pem,
					const struct pki_leaf_req *want, int64_t now,
					double fraction)
{
	if (!cert_pem || !*cert_pem)
		return PKI_RENEW_MISSING;
	_cleanup_(pki_cert_info_done) struct pki_cert_info info = { 0 };
	if (pki_cert_info_parse(cert_pem, NULL, &info, NULL) < 0)
		return PKI_RENEW_INVALID;
	if (now < info.not_before)
		return PKI_RENEW_NOT_YET_VALID;
	if (now >= info.not_after)
		return PKI_RENEW_EXPIRED;
	if (ca_pem && pki_verify(cert_pem, ca_pem, now, 0, NULL) < 0)
		return PKI_RENEW_ISSUER;
	if (want) {
		if ((want->cn && strcmp(want->cn, info.subject_cn) != 0) ||
		    (info.usage & want->usage) != want->usage || info.is_ca)
			return PKI_RENEW_INVALID;
		if (!sans_match(&info, want))
			return PKI_RENEW_SANS;
	}
	if (now >= pki_renew_at(&info, fraction))
		return PKI_RENEW_LIFETIME;
	return PKI_RENEW_NONE;
}

int64_t pki_renew_at(const struct pki_cert_info *info, double fraction)
{
	if (!(fraction > 0.0 && fraction < 1.0) || isnan(fraction))
		fraction = PKI_RENEW_FRACTION_DEFAULT;
	double total = (double)(info->not_after - info->not_before);
	/* remain < fraction * total  <=>  now > not_after - fraction * total: the
	 * first whole second past that */
	return (int64_t)floor((double)info->not_after - fraction * total) + 1;
}
