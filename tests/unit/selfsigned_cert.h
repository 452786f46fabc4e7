/* tests/unit/selfsigned_cert.h - throwaway ECDSA P-256 self-signed certificate
 * for tests and benchmarks (header-only; include from one .c file).
 *
 * selfsigned_make("pgop-test-a", &cert, &key) fills two OWNED PEM strings
 * (free with free()) for CN=<cn>, SAN DNS:localhost and IP:127.0.0.1, valid for
 * one day. Returns 0 or a negative gnutls error.
 */
#ifndef PGOP_TESTS_SELFSIGNED_CERT_H
#define PGOP_TESTS_SELFSIGNED_CERT_H

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *selfsigned_take(gnutls_datum_t *d)
{
	char *s = malloc(d->size + 1);
	if (s) {
		memcpy(s, d->data, d->size);
		s[d->size] = '\0';
	}
	gnutls_free(d->data);
	d->data = NULL;
	return s;
}

__attribute__((unused)) static int selfsigned_make(const char *cn, char **ret_cert,
						    char **ret_key)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t kd = { NULL, 0 }, cd = { NULL, 0 };
	static const unsigned char ip[4] = { 127, 0, 0, 1 };
	unsigned char serial[8];
	time_t now = time(NULL);
	int r = gnutls_x509_privkey_init(&key);
	if (r >= 0)
		r = gnutls_x509_privkey_generate(
			key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (r >= 0)
		r = gnutls_x509_crt_init(&crt);
	if (r >= 0)
		r = gnutls_x509_crt_set_version(crt, 3);
	if (r >= 0)
		r = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
	serial[0] &= 0x7f;
	if (r >= 0)
		r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	if (r >= 0)
		r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
						  (unsigned)strlen(cn));
	if (r >= 0)
		r = gnutls_x509_crt_set_issuer_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
							 (unsigned)strlen(cn));
	if (r >= 0)
		r = gnutls_x509_crt_set_activation_time(crt, now - 60);
	if (r >= 0)
		r = gnutls_x509_crt_set_expiration_time(crt, now + 86400);
	if (r >= 0)
		r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
							 GNUTLS_FSAN_APPEND);
	if (r >= 0)
		r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip,
							 sizeof(ip), GNUTLS_FSAN_APPEND);
	if (r >= 0)
		r = gnutls_x509_crt_set_basic_constraints(crt, 1, -1);
	if (r >= 0)
		r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
							      GNUTLS_KEY_KEY_CERT_SIGN);
	if (r >= 0)
		r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (r >= 0)
		r = gnutls_x509_crt_set_key(crt, key);
	if (r >= 0)
		r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
	if (r >= 0)
		r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &cd);
	if (r >= 0)
		r = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL,
						      GNUTLS_PKCS_PLAIN, &kd);
	if (r >= 0) {
		*ret_cert = selfsigned_take(&cd);
		*ret_key = selfsigned_take(&kd);
		r = *ret_cert && *ret_key ? 0 : GNUTLS_E_MEMORY_ERROR;
	}
	gnutls_free(cd.data);
	gnutls_free(kd.data);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return r;
}

#endif
