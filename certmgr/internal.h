/* certmgr/internal.h - the certificate manager's two settle pauses (internal to
 * certmgr/, used by manager.c).
 *
 *  1. A CA published while a leaf is being served signs no leaf before
 *     settle_s have passed since it was published (the API server must have
 *     loaded the caBundle before any replica serves a leaf it signed).
 *  2. After a leaf is issued, no CA leaves the bundle before settle_s have
 *     passed (every replica must have swapped to the new leaf).
 *
 * The pauses hold whatever starts a round: the certificate manager runs a
 * round at once when a watched object changes, and publishing a bundle
 * changes the webhook configuration it watches, so a delay asked for by the
 * previous round is not enough (that skipped pause 1: a leaf of the new CA was
 * served 44 ms after the CA was published).
 *
 * Times are the Unix seconds cm_sync() is given; something published
 * during second `now` may be used from now + settle_s + 1 (the second it was
 * published in may have been nearly over). A CA or leaf this manager did not
 * publish or issue itself (another replica did, before this one led) counts
 * as published / issued when this manager first sees it.
 *
 * Not thread-safe (one per struct cm).
 */
#ifndef PGOP_CERTMGR_INTERNAL_H
#define PGOP_CERTMGR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "pki/pki.h"

struct cm_settle {
	unsigned settle_s;
	struct {
		char fp[PKI_FINGERPRINT_HEX + 1];
		int64_t usable_at; /* may sign the served leaf from then on */
	} ca[PKI_BUNDLE_MAX_CERTS];
	size_t n;
	char leaf_fp[PKI_FINGERPRINT_HEX + 1]; /* the leaf last seen or issued */
	int64_t leaf_settled_at;               /* old CAs may leave the bundle from then on */
};

void cm_settle_init(struct cm_settle *st, unsigned settle_s);

/* Start of a round: `published` is the bundle every configuration trusts
 * (NULL/"" = none), leaf_pem the served leaf (may be NULL). CAs and a leaf not
 * seen before are recorded as published / issued at now; CAs gone from the
 * bundle are forgotten. */
void cm_settle_observe(struct cm_settle *st, const char *published, const char *leaf_pem,
		       int64_t now);
/* `after` was published at now in place of `before`; leaf_served: a leaf was
 * being served then (otherwise nobody can be broken: no pause). */
void cm_settle_published(struct cm_settle *st, const char *before, const char *after,
			 bool leaf_served, int64_t now);
/* leaf_pem was issued at now. */
void cm_settle_issued(struct cm_settle *st, const char *leaf_pem, int64_t now);

/* Whether `action` may run at now: 0 when it may, else the time it may run
 * from. signer_pem: the CA that ISSUE_LEAF would sign with or that
 * PROMOTE_NEXT_CA would make the signer (ignored for other actions). */
int64_t cm_settle_hold(const struct cm_settle *st, enum pki_rot_action action,
		       const char *signer_pem, int64_t now);

#endif
