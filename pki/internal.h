/* pki/internal.h - helpers shared by the pki/ source files (not for other
 * modules). gnutls objects are owned by the caller of each helper. */
#ifndef PGOP_PKI_INTERNAL_H
#define PGOP_PKI_INTERNAL_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "pki/pki.h"

/* Caps and sanity-checks a PEM input: non-NULL, <= PKI_PEM_MAX, contains
 * "-----BEGIN <label>" (label NULL: any block). -EINVAL/-EMSGSIZE. */
OP_MUST_CHECK
int pki__pem_check(const char *pem, const char *what, const char *label, struct op_err *err);

/* First certificate of pem; *ret owned (gnutls_x509_crt_deinit). */
OP_MUST_CHECK int pki__crt_import(const char *pem, const char *what, gnutls_x509_crt_t *ret,
				  struct op_err *err);
/* All certificates (1..PKI_BUNDLE_MAX_CERTS); *ret owned (pki__crt_list_free). */
OP_MUST_CHECK int pki__crt_list_import(const char *pem, const char *what, gnutls_x509_crt_t **ret,
				       unsigned *ret_n, struct op_err *err);
void pki__crt_list_free(gnutls_x509_crt_t *l, unsigned n);
/* Private key (SEC1 or PKCS#8 PEM); *ret owned (gnutls_x509_privkey_deinit). */
OP_MUST_CHECK int pki__key_import(const char *pem, const char *what, gnutls_x509_privkey_t *ret,
				  struct op_err *err);

/* Owned PEM text of crt. */
OP_MUST_CHECK int pki__crt_export(gnutls_x509_crt_t crt, char **ret, struct op_err *err);
/* SHA-256 of the DER certificate as lower-case hex into out[65]. */
OP_MUST_CHECK int pki__crt_fingerprint(gnutls_x509_crt_t crt, char out[PKI_FINGERPRINT_HEX + 1]);
/* basicConstraints CA:TRUE. */
bool pki__crt_is_ca(gnutls_x509_crt_t crt);

static inline void pki__crt_deinitp(gnutls_x509_crt_t *p)
{
	if (*p)
		gnutls_x509_crt_deinit(*p);
}
static inline void pki__key_deinitp(gnutls_x509_privkey_t *p)
{
	if (*p)
		gnutls_x509_privkey_deinit(*p);
}

#endif
