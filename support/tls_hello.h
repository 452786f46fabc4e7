/* support/tls_hello.h - the first bytes a TLS client sends (its ClientHello),
 * for probes that need a TLS server's process to react (tcp_probe.h's
 * op_tcp_probe_answer): a ServerHello or an alert comes back only from a
 * server that runs, where a frozen host's kernel alone completes the TCP
 * handshake and ACKs the bytes. Made by gnutls itself (no hand-built
 * record), offering gnutls's default priorities; nothing is verified and no
 * handshake is ever finished with it.
 */
#ifndef PGOP_SUPPORT_TLS_HELLO_H
#define PGOP_SUPPORT_TLS_HELLO_H

#include <stddef.h>

#include "support/err.h"

#define OP_TLS_HELLO_MAX 4096 /* a ClientHello is a few hundred bytes */

/* Builds a ClientHello: *ret is OWNED (free), *ret_len its length. -EIO with
 * err naming the gnutls step that failed. */
OP_MUST_CHECK int op_tls_client_hello(unsigned char **ret, size_t *ret_len, struct op_err *err);

#endif
