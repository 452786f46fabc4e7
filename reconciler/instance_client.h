/* reconciler/instance_client.h - the operator's client for the instance
 * managers' status port (GET https://<podIP>:8000/pg/status).
 *
 * TLS: the server certificate must chain to the cluster CA (`<c>-ca`
 * ca.crt); the host name is NOT checked (pods are addressed by IP; CNPG does
 * the same: chain only). The operator presents its client certificate
 * (CN pgop-operator, issued from the cluster CA, docs/instance-contract.md).
 *
 * All instances are queried in parallel (curl multi) and each has its own
 * deadline, so one dead pod never stalls the others or the reconcile.
 */
#ifndef PGOP_RECONCILER_INSTANCE_CLIENT_H
#define PGOP_RECONCILER_INSTANCE_CLIENT_H

#include <stddef.h>

#include "pki/pki.h"
#include "reconciler/live.h"
#include "reconciler/status.h"
#include "support/err.h"

#define RC_STATUS_PORT 8000
#define RC_STATUS_TIMEOUT_MS_DEFAULT 2000
/* An instance not known to answer (rc_instance.silent: it did not answer
 * last time, or was never asked) is first probed with a bare TCP connect
 * (support/tcp_probe.h) that must succeed within this: a partitioned Pod drops
 * the SYN, and every reconcile of a Cluster with a partitioned primary would
 * otherwise wait the whole timeout; a loaded but reachable instance's kernel
 * accepts at once, and its TLS handshake and answer keep the whole timeout
 * (libcurl's connect timeout covers the handshake, so it cannot be short). */
#define RC_STATUS_CONNECT_SILENT_MS 150
/* GET /pg/status of a silent instance whose TCP connect succeeded is given
 * up once it ran this long and no instance known to answer is still being
 * asked: a frozen node's kernel completes the handshake, its processes answer
 * nothing, and each reconcile (the failover's, the relabelling's) waited the
 * whole timeout for a former primary there (docs/internals/failover.md,
 * "Node loss"). A live instance's fresh mutual TLS handshake and answer take
 * milliseconds. */
#define RC_STATUS_SILENT_WAIT_MS 750
#define RC_STATUS_BODY_MAX (1024u * 1024) /* one /pg/status answer */

/* Kept-alive connections to one Cluster's instances: a curl multi handle
 * (its connection cache) and the credentials as memory files, reused by
 * rc_fetch_statuses while the CA and client certificate stay the same (a new
 * pair closes the old connections). Without it every fetch is one full mutual
 * TLS handshake per instance (bench/live.sh: most of the live API's CPU).
 * One fetch uses a pool at a time; a second concurrent fetch with the same
 * pool goes without (one-off connections). An instance marked silent always
 * gets a fresh connection, after its TCP probe. */
struct rc_status_pool; /* new/free: reconciler/live.h */

struct rc_fetch_opts {
	long timeout_ms;   /* per instance, connect included; 0 = 2000 */
	unsigned port;     /* 0 = 8000 (tests use others) */
	const char *path;  /* NULL = "/pg/status"; may carry a query */
	bool post;         /* POST (empty body) instead of GET: /pg/cut */
	/* The answer is any JSON object, not a /pg/status: kept whole in
	 * rc_instance.doc with has_status set, nothing else parsed (/pg/backup). */
	bool raw;
	/* Asked about each instance still being fetched, about every 100 ms:
	 * true gives it up at once (its error says so). NULL = never. A fetch
	 * begun just before the primary watch saw the primary go would otherwise
	 * wait out timeout_ms for it (its connect is within the timeout). */
	bool (*abandon)(void *ctx, const struct rc_instance *in);
	void *abandon_ctx;
	struct rc_status_pool *pool; /* borrowed, NULL = one-off connections */
};

/* Fills the status of every v[i] that has an ip (rc_instance_parse_status);
 * instances without ip get error "no pod IP". On a failed fetch v[i].error
 * says why (timeout, TLS verification, HTTP status, bad JSON) and has_status
 * stays false. ca_pem: the cluster CA certificate (borrowed); client: the
 * operator's client certificate and key (borrowed, may be NULL = none).
 * Returns the number of instances that answered, or -errno when the call
 * could not be set up at all (memory files, curl). */
OP_MUST_CHECK
int rc_fetch_statuses(const char *ca_pem, const struct pki_pair *client, struct rc_instance *v,
		      size_t n, const struct rc_fetch_opts *opts, struct op_err *err);

/* Issues the operator client certificate (CN "pgop-operator", clientAuth)
 * from the cluster CA pair (cert + key, borrowed). *ret owned (pki_pair_done). */
OP_MUST_CHECK
int rc_operator_client_cert(const struct pki_pair *ca, int64_t now, struct pki_pair *ret,
			    struct op_err *err);

#endif
