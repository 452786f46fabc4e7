/* pki/x509.c - PEM import/export, ECDSA P-256 keys, CA and leaf issuance
 * (see pki.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "pki/internal.h"
#include "support/alloc.h"

/* ------------------------------------------------------------ PEM helpers */

int pki__pem_check(const char *pem, const char *what, const char *label, struct op_err *err)
{
	if (!what)
		what = "certificate";
	if (!pem || !*pem)
		return op_err_set(err, -EINVAL, "%s: empty", what);
	size_t len = strnlen(pem, PKI_PEM_MAX + 1);
	if (len > PKI_PEM_MAX)
		return op_err_set(err, -EMSGSIZE, "%s: larger than %u bytes", what, PKI_PEM_MAX);
	const char *p = strstr(pem, "-----BEGIN ");
	if (!p)
		return op_err_set(err, -EINVAL, "%s: not PEM (no \"-----BEGIN\" line)", what);
	if (label) {
		bool found = false;
		for (; p; p = strstr(p + 1, "-----BEGIN ")) {
			const char *l = p + strlen("-----BEGIN ");
			size_t n = strlen(label);
			if (strncmp(l, label, n) == 0 && strncmp(l + n, "-----", 5) == 0) {
				found = true;
				break;
			}
		}
		if (!found)
			return op_err_set(err, -EINVAL, "%s: no PEM %s block", what, label);
	}
	return 0;
}

static gnutls_datum_t pem_datum(const char *pem)
{
	return (gnutls_datum_t){ .data = (unsigned char *)(uintptr_t)pem,
				 .size = (unsigned)strlen(pem) };
}

void pki__crt_list_free(gnutls_x509_crt_t *l, unsigned n)
{
	if (!l)
		return;
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(l[i]);
	gnutls_free(l);
}

int pki__crt_list_import(const char *pem, const char *what, gnutls_x509_crt_t **ret,
			 unsigned *ret_n, struct op_err *err)
{
	if (!what)
		what = "certificate";
	int r = pki__pem_check(pem, what, "CERTIFICATE", err);
	if (r < 0)
		return r;
	gnutls_datum_t d = pem_datum(pem);
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	int g = gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM, 0);
	if (g < 0)
		return op_err_set(err, -EINVAL, "%s: invalid certificate: %s", what,
				  gnutls_strerror(g));
	if (n == 0) {
		pki__crt_list_free(list, n);
		return op_err_set(err, -EINVAL, "%s: no certificate found", what);
	}
	if (n > PKI_BUNDLE_MAX_CERTS) {
		pki__crt_list_free(list, n);
		return op_err_set(err, -EMSGSIZE, "%s: %u certificates, at most %u allowed", what,
				  n, PKI_BUNDLE_MAX_CERTS);
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

int pki__crt_import(const char *pem, const char *what, gnutls_x509_crt_t *ret,
		    struct op_err *err)
{
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	int r = pki__crt_list_import(pem, what, &list, &n, err);
	if (r < 0)
		return r;
	gnutls_x509_crt_t first = list[0];
	list[0] = NULL;
	for (unsigned i = 1; i < n; i++)
		gnutls_x509_crt_deinit(list[i]);
	gnutls_free(list);
	*ret = first;
	return 0;
}

int pki__key_import(const char *pem, const char *what, gnutls_x509_privkey_t *ret,
		    struct op_err *err)
{
	if (!what)
		what = "private key";
	int r = pki__pem_check(pem, what, NULL, err);
	if (r < 0)
		return r;
	if (!strstr(pem, "PRIVATE KEY-----"))
		return op_err_set(err, -EINVAL, "%s: no PEM PRIVATE KEY block", what);
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	if (gnutls_x509_privkey_init(&key) < 0)
		return op_err_set(err, -ENOMEM, "%s: cannot allocate key", what);
	gnutls_datum_t d = pem_datum(pem);
	int g = gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL,
					    GNUTLS_PKCS_PLAIN);
	if (g < 0)
		return op_err_set(err, -EINVAL, "%s: invalid private key: %s", what,
				  gnutls_strerror(g));
	*ret = TAKE_PTR(key);
	return 0;
}

static char *datum_to_str(gnutls_datum_t *d)
{
	char *s = op_strndup((const char *)d->data, d->size);
	gnutls_free(d->data);
	d->data = NULL;
	return s;
}

int pki__crt_export(gnutls_x509_crt_t crt, char **ret, struct op_err *err)
{
	gnutls_datum_t d = { 0 };
	int g = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d);
	if (g < 0)
		return op_err_set(err, -EIO, "cannot encode certificate: %s", gnutls_strerror(g));
	*ret = datum_to_str(&d);
	return 0;
}

static void hex_encode(const unsigned char *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int pki__crt_fingerprint(gnutls_x509_crt_t crt, char out[PKI_FINGERPRINT_HEX + 1])
{
	unsigned char md[32];
	size_t n = sizeof(md);
	if (gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, md, &n) < 0 || n != 32)
		return -EIO;
	hex_encode(md, n, out);
	return 0;
}

bool pki__crt_is_ca(gnutls_x509_crt_t crt)
{
	unsigned critical = 0, ca = 0;
	int pathlen = -1;
	int g = gnutls_x509_crt_get_basic_constraints(crt, &critical, &ca, &pathlen);
	return g >= 0 && ca;
}

/* ------------------------------------------------------------------- keys */

void pki_pair_done(struct pki_pair *p)
{
	if (!p)
		return;
	free(p->cert_pem);
	if (p->key_pem) {
		explicit_bzero(p->key_pem, strlen(p->key_pem));
		free(p->key_pem);
	}
	p->cert_pem = p->key_pem = NULL;
}

static int key_new(gnutls_x509_privkey_t *ret, struct op_err *err)
{
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	if (gnutls_x509_privkey_init(&key) < 0)
		return op_err_set(err, -ENOMEM, "cannot allocate private key");
	int g = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (g < 0)
		return op_err_set(err, -EIO, "cannot generate ECDSA P-256 key: %s",
				  gnutls_strerror(g));
	*ret = TAKE_PTR(key);
	return 0;
}

static int key_export(gnutls_x509_privkey_t key, char **ret, struct op_err *err)
{
	gnutls_datum_t d = { 0 };
	int g = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d);
	if (g < 0)
		return op_err_set(err, -EIO, "cannot encode private key: %s", gnutls_strerror(g));
	char *s = op_strndup((const char *)d.data, d.size);
	gnutls_memset(d.data, 0, d.size);
	gnutls_free(d.data);
	*ret = s;
	return 0;
}

int pki_key_generate(char **ret_key_pem, struct op_err *err)
{
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	int r = key_new(&key, err);
	if (r < 0)
		return r;
	return key_export(key, ret_key_pem, err);
}

static int key_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
	unsigned char a[64], b[64];
	size_t na = sizeof(a), nb = sizeof(b);
	if (gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, a, &na) < 0 ||
	    gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, b, &nb) < 0)
		return -EIO;
	return na == nb && memcmp(a, b, na) == 0;
}

int pki_pair_check(const char *cert_pem, const char *key_pem, struct op_err *err)
{
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	int r = pki__crt_import(cert_pem, "certificate", &crt, err);
	if (r < 0)
		return r;
	r = pki__key_import(key_pem, "private key", &key, err);
	if (r < 0)
		return r;
	r = key_matches(crt, key);
	if (r < 0)
		return op_err_set(err, -EIO, "cannot compute key identifiers");
	if (!r)
		return op_err_set(err, -EKEYREJECTED,
				  "private key does not match the certificate's public key");
	return 0;
}

/* --------------------------------------------------------------- issuance */

/* A fresh key, or the caller's key to re-sign. */
static int key_obtain(const char *key_pem, gnutls_x509_privkey_t *ret, struct op_err *err)
{
	if (key_pem)
		return pki__key_import(key_pem, "key_pem", ret, err);
	return key_new(ret, err);
}

/* Version, random serial, validity, subject CN/OU, public key, SKI. */
static int crt_base(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn,
		    const char *ou, int64_t not_before, int64_t not_after, struct op_err *err)
{
	unsigned char serial[16];
	int g = gnutls_rnd(GNUTLS_RND_RANDOM, serial, sizeof(serial));
	if (g < 0)
		return op_err_set(err, -EIO, "cannot draw a serial: %s", gnutls_strerror(g));
	serial[0] &= 0x7f; /* positive */
	if (serial[0] == 0)
		serial[0] = 1; /* minimal DER, still 127 random bits */
	unsigned char ski[64];
	size_t ski_len = sizeof(ski);
	if ((g = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (g = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
	    (g = gnutls_x509_crt_set_activation_time(crt, (time_t)not_before)) < 0 ||
	    (g = gnutls_x509_crt_set_expiration_time(crt, (time_t)not_after)) < 0 ||
	    (g = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (g = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
					       (unsigned)strlen(cn))) < 0 ||
	    (ou && *ou &&
	     (g = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME, 0,
						ou, (unsigned)strlen(ou))) < 0) ||
	    (g = gnutls_x509_crt_get_key_id(crt, 0, ski, &ski_len)) < 0 ||
	    (g = gnutls_x509_crt_set_subject_key_id(crt, ski, ski_len)) < 0)
		return op_err_set(err, -EIO, "cannot build certificate '%s': %s", cn,
				  gnutls_strerror(g));
	return 0;
}

static int check_name(const char *s, const char *what, struct op_err *err)
{
	if (!s || !*s)
		return op_err_set(err, -EINVAL, "%s: required", what);
	size_t n = strnlen(s, 254);
	if (n > 253)
		return op_err_set(err, -EINVAL, "%s: longer than 253 characters", what);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return op_err_set(err, -EINVAL, "%s: '%s' has a space or non-ASCII byte",
					  what, s);
	return 0;
}

static int finish(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, struct pki_pair *ret,
		  struct op_err *err)
{
	_cleanup_free_ char *cert = NULL;
	int r = pki__crt_export(crt, &cert, err);
	if (r < 0)
		return r;
	char *k = NULL;
	r = key_export(key, &k, err);
	if (r < 0)
		return r;
	ret->cert_pem = TAKE_PTR(cert);
	ret->key_pem = k;
	return 0;
}

int pki_ca_create(const struct pki_ca_req *req, struct pki_pair *ret, struct op_err *err)
{
	int r = check_name(req->cn, "ca.cn", err);
	if (r < 0)
		return r;
	int64_t life = req->lifetime_s > 0 ? req->lifetime_s : PKI_CA_LIFETIME_DEFAULT_S;
	int64_t nb = req->now - PKI_BACKDATE_S;
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	r = key_obtain(req->key_pem, &key, err);
	if (r < 0)
		return r;
	if (gnutls_x509_crt_init(&crt) < 0)
		return op_err_set(err, -ENOMEM, "cannot allocate certificate");
	r = crt_base(crt, key, req->cn, req->ou, nb, nb + life, err);
	if (r < 0)
		return r;
	int g;
	if ((g = gnutls_x509_crt_set_basic_constraints(crt, 1, 0)) < 0 ||
	    (g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN |
							    GNUTLS_KEY_CRL_SIGN)) < 0 ||
	    (g = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
		return op_err_set(err, -EIO, "cannot sign CA '%s': %s", req->cn,
				  gnutls_strerror(g));
	return finish(crt, key, ret, err);
}

int pki_client_selfsigned(const char *cn, int64_t now, struct pki_pair *ret, struct op_err *err)
{
	int r = check_name(cn, "client.cn", err);
	if (r < 0)
		return r;
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	r = key_new(&key, err);
	if (r < 0)
		return r;
	if (gnutls_x509_crt_init(&crt) < 0)
		return op_err_set(err, -ENOMEM, "cannot allocate certificate");
	r = crt_base(crt, key, cn, NULL, now - PKI_BACKDATE_S, PKI_NOT_AFTER_FOREVER, err);
	if (r < 0)
		return r;
	int g;
	if ((g = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
							    GNUTLS_KEY_KEY_AGREEMENT)) < 0 ||
	    (g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0)) < 0 ||
	    (g = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
		return op_err_set(err, -EIO, "cannot sign client certificate '%s': %s", cn,
				  gnutls_strerror(g));
	return finish(crt, key, ret, err);
}

static int add_sans(gnutls_x509_crt_t crt, const struct pki_leaf_req *req, struct op_err *err)
{
	if (req->n_sans > PKI_SAN_MAX)
		return op_err_set(err, -EMSGSIZE, "leaf.sans: %zu entries, at most %u", req->n_sans,
				  PKI_SAN_MAX);
	for (size_t i = 0; i < req->n_sans; i++) {
		const char *s = req->sans[i];
		int r = check_name(s, "leaf.sans", err);
		if (r < 0)
			return r;
		unsigned char ip[16];
		int g;
		if (inet_pton(AF_INET, s, ip) == 1)
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
								 GNUTLS_FSAN_APPEND);
		else if (inet_pton(AF_INET6, s, ip) == 1)
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
								 GNUTLS_FSAN_APPEND);
		else
			g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, s,
								 (unsigned)strlen(s),
								 GNUTLS_FSAN_APPEND);
		if (g < 0)
			return op_err_set(err, -EINVAL, "leaf.sans: '%s': %s", s,
					  gnutls_strerror(g));
	}
	return 0;
}

int pki_leaf_issue(const struct pki_pair *ca, const struct pki_leaf_req *req,
		   struct pki_pair *ret, struct op_err *err)
{
	int r = check_name(req->cn, "leaf.cn", err);
	if (r < 0)
		return r;
	if (!(req->usage & (PKI_USAGE_SERVER | PKI_USAGE_CLIENT)))
		return op_err_set(err, -EINVAL, "leaf.usage: need server and/or client");
	if (!ca || !ca->cert_pem || !ca->key_pem)
		return op_err_set(err, -EINVAL, "ca: certificate and key required");

	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t ca_crt = NULL;
	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t ca_key = NULL;
	r = pki__crt_import(ca->cert_pem, "ca.crt", &ca_crt, err);
	if (r < 0)
		return r;
	r = pki__key_import(ca->key_pem, "ca.key", &ca_key, err);
	if (r < 0)
		return r;
	if (!pki__crt_is_ca(ca_crt))
		return op_err_set(err, -EINVAL, "ca.crt: not a CA certificate");
	r = key_matches(ca_crt, ca_key);
	if (r <= 0)
		return op_err_set(err, -EKEYREJECTED, "ca.key: does not match ca.crt");

	int64_t life = req->lifetime_s > 0 ? req->lifetime_s : PKI_LEAF_LIFETIME_DEFAULT_S;
	int64_t nb = req->now - PKI_BACKDATE_S;
	int64_t na = nb + life;
	int64_t ca_na = (int64_t)gnutls_x509_crt_get_expiration_time(ca_crt);
	if (ca_na < na)
		na = ca_na; /* never outlive the issuer */
	if (na <= req->now)
		return op_err_set(err, -EINVAL, "ca.crt: expired, cannot issue '%s'", req->cn);

	_cleanup_(pki__key_deinitp) gnutls_x509_privkey_t key = NULL;
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	r = key_obtain(req->key_pem, &key, err);
	if (r < 0)
		return r;
	if (gnutls_x509_crt_init(&crt) < 0)
		return op_err_set(err, -ENOMEM, "cannot allocate certificate");
	r = crt_base(crt, key, req->cn, NULL, nb, na, err);
	if (r < 0)
		return r;
	r = add_sans(crt, req, err);
	if (r < 0)
		return r;

	unsigned ku = GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_AGREEMENT;
	if (req->usage & PKI_USAGE_SERVER)
		ku |= GNUTLS_KEY_KEY_ENCIPHERMENT;
	unsigned char aki[64];
	size_t aki_len = sizeof(aki);
	unsigned aki_crit = 0;
	int g;
	if ((g = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (g = gnutls_x509_crt_set_key_usage(crt, ku)) < 0 ||
	    ((req->usage & PKI_USAGE_SERVER) &&
	     (g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0) ||
	    ((req->usage & PKI_USAGE_CLIENT) &&
	     (g = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0)) < 0) ||
	    (gnutls_x509_crt_get_subject_key_id(ca_crt, aki, &aki_len, &aki_crit) >= 0 &&
	     (g = gnutls_x509_crt_set_authority_key_id(crt, aki, aki_len)) < 0) ||
	    (g = gnutls_x509_crt_sign2(crt, ca_crt, ca_key, GNUTLS_DIG_SHA256, 0)) < 0)
		return op_err_set(err, -EIO, "cannot sign leaf '%s': %s", req->cn,
				  gnutls_strerror(g));
	return finish(crt, key, ret, err);
}
