/* support/tcp_probe.h - is anything listening there? Parallel TCP connects.
 *
 * A TCP connect is the kernel's business on both ends: it answers in
 * microseconds from a reachable host however loaded its processes are, and a
 * partitioned or vanished host drops the SYN. So a short timeout on the
 * connect alone tells "unreachable" from "slow" (a TLS handshake on a loaded
 * machine can take hundreds of milliseconds; libcurl's connect timeout covers
 * it, so it cannot be short). op_tcp_probe sends nothing: each connection is
 * closed as soon as it is established.
 *
 * A frozen host (its processes stopped, its kernel running) completes TCP
 * handshakes and ACKs whatever is sent, so a connect alone cannot tell it
 * from a live one. op_tcp_probe_answer sends a few bytes its server must react
 * to (a TLS ClientHello: a ServerHello or an alert) and waits for any
 * reaction: bytes, an EOF or a reset all need the server's process.
 */
#ifndef PGOP_SUPPORT_TCP_PROBE_H
#define PGOP_SUPPORT_TCP_PROBE_H

#include <stddef.h>

#include "support/err.h"

/* Connections open at once; more hosts are probed in rounds of this many, each
 * round bounded by the timeout. */
#define OP_TCP_PROBE_BATCH 256

/* Connects to hosts[i]:port for every i < n, all at once, and waits up to
 * timeout_ms for them. hosts[i] is a numeric IPv4 or IPv6 address (borrowed;
 * NULL or anything else gives EINVAL for that host, no name is resolved).
 * ret_errno[i] (caller-owned, n entries) is 0 when the connection was
 * established, else the errno: ETIMEDOUT, ECONNREFUSED, EHOSTUNREACH,
 * ENETUNREACH, EINVAL, ... Returns how many connected, or -errno when no probe
 * could be made at all (-EINVAL: port 0 or timeout_ms <= 0). */
OP_MUST_CHECK int op_tcp_probe(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
			       int *ret_errno);

/* op_tcp_probe, then on each established connection sends hello (borrowed,
 * hello_len > 0 bytes, small enough for the socket's send buffer) and waits
 * up to answer_ms for the peer to send anything, close or reset. ret_errno[i]
 * is 0 when it did, ETIME when it connected but stayed silent, else the
 * connect's errno as op_tcp_probe gives it. The connection is then reset.
 * -EINVAL for a NULL hello, hello_len 0 or answer_ms <= 0 as well. */
OP_MUST_CHECK int op_tcp_probe_answer(const char *const *hosts, size_t n, unsigned port,
				      long connect_ms, const void *hello, size_t hello_len,
				      long answer_ms, int *ret_errno);

#endif
