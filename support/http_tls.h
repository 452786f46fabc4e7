/* support/http_tls.h - serving credentials for the HTTP server (internal to
 * support/: used by http_server.c and its tests, not by other modules).
 *
 * An op_tls_cred is an immutable, reference-counted certificate chain + key in
 * the form gnutls wants from a retrieve callback (gnutls_pcert_st + privkey).
 * An op_tls_slot holds the current one; readers take a reference under a short
 * mutex (a pointer load and an increment), a writer swaps the pointer and drops
 * the slot's reference. Credentials die with their last reference, so a
 * handshake or connection holding one is never disturbed by a swap.
 */
#ifndef PGOP_SUPPORT_HTTP_TLS_H
#define PGOP_SUPPORT_HTTP_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "support/err.h"

#define OP_TLS_MAX_PEM (1024u * 1024) /* a certificate chain or key file */

struct op_tls_cred {
	_Atomic unsigned refs;
	gnutls_pcert_st *pcerts; /* owned, n_pcerts entries, leaf first */
	unsigned n_pcerts;
	gnutls_privkey_t key;    /* owned */
	char *subject;           /* owned: leaf subject DN, for logs */
	time_t not_after;        /* leaf expiry */
};

/* Parses a PEM chain and a PEM key (PKCS#8 or legacy), checks the key belongs
 * to the leaf. On success *ret_cred is OWNED with one reference. -EBADMSG with
 * err saying which part is unusable. */
OP_MUST_CHECK
int op_tls_cred_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		     struct op_tls_cred **ret_cred, struct op_err *err);
/* Adds a reference; returns cred. */
struct op_tls_cred *op_tls_cred_ref(struct op_tls_cred *cred);
/* Drops a reference, freeing on the last one. Accepts NULL. */
void op_tls_cred_unref(struct op_tls_cred *cred);

struct op_tls_slot {
	pthread_mutex_t lock;
	struct op_tls_cred *cur; /* owned reference; NULL until the first swap */
};

void op_tls_slot_init(struct op_tls_slot *slot);
/* Drops the slot's reference. */
void op_tls_slot_done(struct op_tls_slot *slot);
/* Returns a NEW reference to the current credentials (drop with
 * op_tls_cred_unref), or NULL when the slot is empty. */
struct op_tls_cred *op_tls_slot_get(struct op_tls_slot *slot);
/* Installs cred, taking over the caller's reference; the previous credentials
 * lose the slot's reference. */
void op_tls_slot_swap(struct op_tls_slot *slot, struct op_tls_cred *cred);

/* Identity of a file as far as change detection goes. */
struct op_tls_file_sig {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool valid;
};

/* Certificate + key files with the signature of what was last loaded. */
struct op_tls_files {
	char *cert_file; /* owned */
	char *key_file;  /* owned */
	struct op_tls_file_sig sig[2];
	pthread_mutex_t lock; /* serialises reloads */
};

void op_tls_files_init(struct op_tls_files *f, const char *cert_file, const char *key_file);
void op_tls_files_done(struct op_tls_files *f);
/* Loads the pair when changed since the last successful load (or force). Returns
 * 1 and an OWNED *ret_cred when loaded, 0 when unchanged, -errno on failure. */
OP_MUST_CHECK
int op_tls_files_load(struct op_tls_files *f, bool force, struct op_tls_cred **ret_cred,
		      struct op_err *err);

#endif
