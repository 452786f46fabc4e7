/* tests/unit/test_tls_client.h - a TLS client session on an open socket, for
 * the tests that talk to a server byte by byte (trickled headers, deadlines).
 * It trusts any certificate: these tests are about the connection, not the
 * chain. Header-only.
 *
 * test_tls_client_open() allocates *cred and *s (the caller deinits both:
 * gnutls_deinit, gnutls_certificate_free_credentials), runs the handshake
 * over fd (retrying the non-fatal returns) and returns gnutls' result: 0 when
 * the session is up.
 */
#ifndef PGOP_TESTS_TEST_TLS_CLIENT_H
#define PGOP_TESTS_TEST_TLS_CLIENT_H

#include <gnutls/gnutls.h>

__attribute__((unused)) static int test_tls_client_open(int fd, gnutls_session_t *s,
							gnutls_certificate_credentials_t *cred)
{
	int r = gnutls_certificate_allocate_credentials(cred);
	if (r == 0)
		r = gnutls_init(s, GNUTLS_CLIENT);
	if (r == 0)
		r = gnutls_set_default_priority(*s);
	if (r == 0)
		r = gnutls_credentials_set(*s, GNUTLS_CRD_CERTIFICATE, *cred);
	if (r)
		return r;
	gnutls_transport_set_int(*s, fd);
	do
		r = gnutls_handshake(*s);
	while (r < 0 && !gnutls_error_is_fatal(r));
	return r;
}

#endif
