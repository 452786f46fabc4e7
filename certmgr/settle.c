/* certmgr/settle.c - the certificate manager's settle pauses (see internal.h). */
#include "certmgr/internal.h"

#include <string.h>

void cm_settle_init(struct cm_settle *st, unsigned settle_s)
{
	memset(st, 0, sizeof(*st));
	st->settle_s = settle_s;
}

static bool fp_of(const char *pem, char out[PKI_FINGERPRINT_HEX + 1])
{
	struct pki_cert_info info = { 0 };
	if (!pem || !*pem || pki_cert_info_parse(pem, NULL, &info, NULL) < 0)
		return false;
	memcpy(out, info.fingerprint, PKI_FINGERPRINT_HEX + 1);
	pki_cert_info_done(&info);
	return true;
}

static int find(const struct cm_settle *st, const char *fp)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->ca[i].fp, fp) == 0)
			return (int)i;
	return -1;
}

static void record(struct cm_settle *st, const char *fp, int64_t usable_at)
{
	int i = find(st, fp);
	if (i >= 0) {
		if (usable_at > st->ca[i].usable_at)
			st->ca[i].usable_at = usable_at;
		return;
	}
	if (st->n == PKI_BUNDLE_MAX_CERTS) /* a bundle holds no more: drop the oldest */
		memmove(&st->ca[0], &st->ca[1], --st->n * sizeof(st->ca[0]));
	memcpy(st->ca[st->n].fp, fp, PKI_FINGERPRINT_HEX + 1);
	st->ca[st->n].usable_at = usable_at;
	st->n++;
}

static int64_t settled(const struct cm_settle *st, int64_t now)
{
	return now + (int64_t)st->settle_s + 1;
}

void cm_settle_observe(struct cm_settle *st, const char *published, const char *leaf_pem,
		       int64_t now)
{
	struct pki_bundle b = PKI_BUNDLE_INIT;
	if (published && *published && pki_bundle_parse(published, &b, NULL) == 0) {
		for (size_t i = 0; i < st->n;) { /* forget CAs no longer published */
			if (pki_bundle_contains(&b, st->ca[i].fp)) {
				i++;
				continue;
			}
			memmove(&st->ca[i], &st->ca[i + 1], (st->n - i - 1) * sizeof(st->ca[0]));
			st->n--;
		}
		for (size_t i = 0; i < b.n; i++)
			if (find(st, b.v[i].fingerprint) < 0)
				record(st, b.v[i].fingerprint, settled(st, now));
	}
	pki_bundle_done(&b);
	char fp[PKI_FINGERPRINT_HEX + 1];
	if (fp_of(leaf_pem, fp) && strcmp(fp, st->leaf_fp) != 0) {
		memcpy(st->leaf_fp, fp, sizeof(fp));
		st->leaf_settled_at = settled(st, now);
	}
}

void cm_settle_published(struct cm_settle *st, const char *before, const char *after,
			 bool leaf_served, int64_t now)
{
	struct pki_bundle a = PKI_BUNDLE_INIT, b = PKI_BUNDLE_INIT;
	/* an unreadable "before" counts as nothing published before */
	if (before && *before && pki_bundle_parse(before, &b, NULL) < 0)
		b = PKI_BUNDLE_INIT;
	if (after && *after && pki_bundle_parse(after, &a, NULL) == 0) {
		for (size_t i = 0; i < a.n; i++) {
			if (pki_bundle_contains(&b, a.v[i].fingerprint))
				continue;
			int64_t at = leaf_served ? settled(st, now) : now;
			int k = find(st, a.v[i].fingerprint);
			if (k >= 0)
				st->ca[k].usable_at = at; /* re-published: counts from now */
			else
				record(st, a.v[i].fingerprint, at);
		}
	}
	pki_bundle_done(&a);
	pki_bundle_done(&b);
}

void cm_settle_issued(struct cm_settle *st, const char *leaf_pem, int64_t now)
{
	if (!fp_of(leaf_pem, st->leaf_fp))
		st->leaf_fp[0] = '\0';
	st->leaf_settled_at = settled(st, now);
}

int64_t cm_settle_hold(const struct cm_settle *st, enum pki_rot_action action,
		       const char *signer_pem, int64_t now)
{
	if (action == PKI_ROT_DROP_OLD_CA)
		return now < st->leaf_settled_at ? st->leaf_settled_at : 0;
	if (action != PKI_ROT_ISSUE_LEAF && action != PKI_ROT_PROMOTE_NEXT_CA)
		return 0;
	char fp[PKI_FINGERPRINT_HEX + 1];
	if (!fp_of(signer_pem, fp))
		return 0;
	int i = find(st, fp);
	return i >= 0 && now < st->ca[i].usable_at ? st->ca[i].usable_at : 0;
}
