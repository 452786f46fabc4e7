/* support/tls_hello.c - a ClientHello captured from a gnutls client session
 * whose transport writes into a buffer and never has anything to read
 * (tls_hello.h). */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "support/buf.h"
#include "support/tls_hello.h"

struct capture {
	gnutls_session_t session; /* borrowed */
	struct op_buf out;        /* owned */
};

static ssize_t push(gnutls_transport_ptr_t ptr, const void *data, size_t len)
{
	struct capture *c = ptr;
	if (op_buf_add(&c->out, data, len) < 0) {
		gnutls_transport_set_errno(c->session, EMSGSIZE);
		return -1;
	}
	return (ssize_t)len;
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
	struct capture *c = ptr;
	(void)data;
	(void)len;
	gnutls_transport_set_errno(c->session, EAGAIN); /* the server's answer never comes */
	return -1;
}

int op_tls_client_hello(unsigned char **ret, size_t *ret_len, struct op_err *err)
{
	struct capture c = { .out = OP_BUF_INIT(OP_TLS_HELLO_MAX) };
	gnutls_certificate_credentials_t cred = NULL;
	const char *step = "gnutls_init";
	int r = gnutls_init(&c.session, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
	if (r == GNUTLS_E_SUCCESS) {
		step = "gnutls_certificate_allocate_credentials";
		r = gnutls_certificate_allocate_credentials(&cred);
	}
	if (r == GNUTLS_E_SUCCESS) {
		step = "gnutls_credentials_set";
		r = gnutls_credentials_set(c.session, GNUTLS_CRD_CERTIFICATE, cred);
	}
	if (r == GNUTLS_E_SUCCESS) {
		step = "gnutls_set_default_priority";
		r = gnutls_set_default_priority(c.session);
	}
	if (r == GNUTLS_E_SUCCESS) {
		gnutls_transport_set_ptr(c.session, &c);
		gnutls_transport_set_push_function(c.session, push);
		gnutls_transport_set_pull_function(c.session, pull);
		step = "gnutls_handshake";
		r = gnutls_handshake(c.session); /* sends the ClientHello, then would wait */
		if (r == GNUTLS_E_AGAIN && c.out.len > 0)
			r = GNUTLS_E_SUCCESS;
		else if (r == GNUTLS_E_SUCCESS)
			r = GNUTLS_E_INTERNAL_ERROR; /* a handshake with nobody cannot finish */
	}
	if (c.session)
		gnutls_deinit(c.session);
	if (cred)
		gnutls_certificate_free_credentials(cred);
	if (r != GNUTLS_E_SUCCESS) {
		op_buf_done(&c.out);
		return op_err_set(err, -EIO, "TLS ClientHello: %s: %s", step, gnutls_strerror(r));
	}
	*ret = (unsigned char *)op_buf_take(&c.out, ret_len);
	return 0;
}
