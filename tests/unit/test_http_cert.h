/* tests/unit/test_http_cert.h - a throwaway serving certificate for the HTTP
 * server's tests and benchmark, issued with pki/ the way the operator issues
 * its own: a fresh CA (CN "<cn>-ca") and a server leaf (CN <cn>, SANs
 * 127.0.0.1 and localhost) signed by it. Header-only; include from one .c.
 *
 * test_http_cert_make() fills three OWNED PEM strings (free()): the chain the
 * server presents (leaf then CA), the leaf's key, and the CA alone (what a
 * client trusts). Returns 0 or -errno.
 */
#ifndef PGOP_TESTS_TEST_HTTP_CERT_H
#define PGOP_TESTS_TEST_HTTP_CERT_H

#include <time.h>

#include "pki/pki.h"
#include "support/alloc.h"

__attribute__((unused)) static int test_http_cert_make(const char *cn, char **ret_chain,
							char **ret_key, char **ret_ca)
{
	static const char *const sans[] = { "127.0.0.1", "localhost" };
	struct pki_pair ca = { 0 }, leaf = { 0 };
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *ca_cn = op_asprintf("%s-ca", cn);
	int64_t now = (int64_t)time(NULL);
	struct pki_ca_req creq = { .cn = ca_cn, .now = now, .lifetime_s = 2 * PKI_DAY_S };
	struct pki_leaf_req lreq = { .cn = cn, .sans = sans, .n_sans = 2,
				     .usage = PKI_USAGE_SERVER, .now = now,
				     .lifetime_s = PKI_DAY_S };
	int r = pki_ca_create(&creq, &ca, &err);
	if (r == 0)
		r = pki_leaf_issue(&ca, &lreq, &leaf, &err);
	if (r == 0) {
		*ret_chain = op_asprintf("%s%s", leaf.cert_pem, ca.cert_pem);
		*ret_key = TAKE_PTR(leaf.key_pem);
		*ret_ca = TAKE_PTR(ca.cert_pem);
	}
	pki_pair_done(&leaf);
	pki_pair_done(&ca);
	return r;
}

#endif
