/* pki/rotation.c - overlapping CA rotation as a pure state machine (see
 * pki.h for the actions and the invariant). */
#include <errno.h>

#include "pki/internal.h"
#include "support/alloc.h"

static const char *const action_names[] = {
	[PKI_ROT_NOTHING] = "nothing",
	[PKI_ROT_CREATE_CA] = "create-ca",
	[PKI_ROT_PUBLISH_BUNDLE] = "publish-bundle",
	[PKI_ROT_ISSUE_LEAF] = "issue-leaf",
	[PKI_ROT_ISSUE_NEXT_CA] = "issue-next-ca",
	[PKI_ROT_PROMOTE_NEXT_CA] = "promote-next-ca",
	[PKI_ROT_DROP_OLD_CA] = "drop-old-ca",
};

const char *pki_rot_action_str(enum pki_rot_action a)
{
	if ((size_t)a < OP_ARRAY_SIZE(action_names) && action_names[a])
		return action_names[a];
	return "unknown";
}

void pki_rotation_step_done(struct pki_rotation_step *s)
{
	if (!s)
		return;
	free(s->bundle_pem);
	*s = (struct pki_rotation_step){ 0 };
}

/* Due for a routine renewal: still good, but expiring or longer-lived than
 * the policy allows. */
static bool routine(enum pki_renew_reason r)
{
	return r == PKI_RENEW_LIFETIME || r == PKI_RENEW_LONGER;
}

static bool usable(enum pki_renew_reason r)
{
	return r == PKI_RENEW_NONE || routine(r);
}

/* NONE, unless the certificate lives longer than max_s (> 0): LONGER. */
static enum pki_renew_reason check_length(const char *pem, enum pki_renew_reason r, int64_t max_s)
{
	if (r != PKI_RENEW_NONE || max_s <= 0)
		return r;
	_cleanup_(pki_cert_info_done) struct pki_cert_info info = { 0 };
	if (pki_cert_info_parse(pem, NULL, &info, NULL) < 0)
		return PKI_RENEW_INVALID;
	return info.not_after - info.not_before > max_s ? PKI_RENEW_LONGER : PKI_RENEW_NONE;
}

/* A CA certificate usable for signing at `now`: parses, CA:TRUE, valid.
 * Fills fp; LIFETIME means less than `fraction` of its lifetime is left,
 * LONGER that it lives longer than max_s (> 0). */
static enum pki_renew_reason ca_check(const char *pem, int64_t now, double fraction,
				      int64_t max_s, char fp[PKI_FINGERPRINT_HEX + 1])
{
	if (!pem || !*pem)
		return PKI_RENEW_MISSING;
	_cleanup_(pki_cert_info_done) struct pki_cert_info info = { 0 };
	if (pki_cert_info_parse(pem, NULL, &info, NULL) < 0 || !info.is_ca)
		return PKI_RENEW_INVALID;
	memcpy(fp, info.fingerprint, sizeof(info.fingerprint));
	return check_length(pem, pki_needs_renewal(pem, NULL, NULL, now, fraction), max_s);
}

/* The published bundle, leniently: CA entries go to *pub, anything else
 * (a leaf, garbage) sets *bad. */
static void published_parse(const char *pem, struct pki_bundle *pub, bool *bad)
{
	*bad = false;
	if (!pem || !*pem)
		return;
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	if (pki__crt_list_import(pem, "caBundle", &list, &n, NULL) < 0) {
		*bad = true;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		_cleanup_free_ char *one = NULL;
		if (!pki__crt_is_ca(list[i]) || pki__crt_export(list[i], &one, NULL) < 0 ||
		    pki_bundle_add(pub, one, NULL) < 0)
			*bad = true;
	}
	pki__crt_list_free(list, n);
}

/* Does some leaf in use chain to this CA at `now`? */
static bool ca_in_use(const struct pki_rotation_input *in, const char *ca_pem)
{
	if (in->leaf_pem && pki_verify(in->leaf_pem, ca_pem, in->now, 0, NULL) == 0)
		return true;
	for (size_t i = 0; i < in->n_other_leaves; i++)
		if (in->other_leaves[i] &&
		    pki_verify(in->other_leaves[i], ca_pem, in->now, 0, NULL) == 0)
			return true;
	return false;
}

static void set_bundle(struct pki_rotation_step *s, enum pki_rot_action a,
		       const struct pki_bundle *want)
{
	s->action = a;
	s->bundle_pem = pki_bundle_render(want);
}

int pki_rotation_next(const struct pki_rotation_input *in, const struct pki_rotation_policy *pol,
		      struct pki_rotation_step *ret, struct op_err *err)
{
	static const struct pki_rotation_policy defaults = { 0 };
	if (!pol)
		pol = &defaults;
	struct pki_rotation_step s = { 0 };
	char ca_fp[PKI_FINGERPRINT_HEX + 1] = "", next_fp[PKI_FINGERPRINT_HEX + 1] = "";
	enum pki_renew_reason ca_r =
		ca_check(in->ca_pem, in->now, pol->ca_renew_fraction, pol->ca_lifetime_s, ca_fp);
	/* The pending CA was issued with the configured lifetime: never "longer". */
	enum pki_renew_reason next_r = ca_check(in->next_ca_pem, in->now, 0, 0, next_fp);
	bool next_ok = usable(next_r);

	/* 1. No usable CA: promote a pending one, or start afresh. */
	if (!usable(ca_r)) {
		s.action = next_ok ? PKI_ROT_PROMOTE_NEXT_CA : PKI_ROT_CREATE_CA;
		s.reason = ca_r;
		*ret = s;
		return 0;
	}

	/* 2. The bundle that should be published: current CA, next CA, and
	 * every published CA a leaf in use still chains to. */
	_cleanup_(pki_bundle_done) struct pki_bundle pub = PKI_BUNDLE_INIT;
	_cleanup_(pki_bundle_done) struct pki_bundle want = PKI_BUNDLE_INIT;
	bool bad = false;
	published_parse(in->bundle_pem, &pub, &bad);
	int r = pki_bundle_add(&want, in->ca_pem, err);
	if (r >= 0 && next_ok)
		r = pki_bundle_add(&want, in->next_ca_pem, err);
	for (size_t i = 0; r >= 0 && i < pub.n; i++)
		if (pub.v[i].not_after > in->now && ca_in_use(in, pub.v[i].pem))
			r = pki_bundle_add(&want, pub.v[i].pem, err);
	if (r < 0) {
		op_err_prefix(err, "while planning CA rotation");
		return r;
	}

	/* 3. Publish first: nothing is issued from a CA clients do not trust. */
	if (bad || !pki_bundle_contains(&pub, ca_fp) ||
	    (next_ok && !pki_bundle_contains(&pub, next_fp))) {
		set_bundle(&s, PKI_ROT_PUBLISH_BUNDLE, &want);
		*ret = s;
		return 0;
	}

	/* 4. The next CA is published: switch signing to it. */
	if (next_ok) {
		s.action = PKI_ROT_PROMOTE_NEXT_CA;
		s.reason = ca_r == PKI_RENEW_NONE ? PKI_RENEW_LIFETIME : ca_r;
		*ret = s;
		return 0;
	}

	/* 5. A broken, mis-issued or mis-named leaf is fixed at once. */
	enum pki_renew_reason leaf_r = check_length(
		in->leaf_pem,
		pki_needs_renewal(in->leaf_pem, in->ca_pem, pol->want, in->now,
				  pol->leaf_renew_fraction),
		pol->leaf_lifetime_s);
	if (leaf_r != PKI_RENEW_NONE && !routine(leaf_r)) {
		s.action = PKI_ROT_ISSUE_LEAF;
		s.reason = leaf_r;
		*ret = s;
		return 0;
	}

	/* 6. CAs nobody chains to any more leave the bundle. */
	for (size_t i = 0; i < pub.n; i++) {
		if (!pki_bundle_contains(&want, pub.v[i].fingerprint)) {
			set_bundle(&s, PKI_ROT_DROP_OLD_CA, &want);
			*ret = s;
			return 0;
		}
	}

	/* 7. CA due: start the overlap (before renewing the leaf, so the leaf
	 * is renewed once, from the new CA). */
	if (routine(ca_r)) {
		s.action = PKI_ROT_ISSUE_NEXT_CA;
		s.reason = ca_r;
		*ret = s;
		return 0;
	}

	/* 8. Routine leaf renewal. */
	if (routine(leaf_r)) {
		s.action = PKI_ROT_ISSUE_LEAF;
		s.reason = leaf_r;
	}
	*ret = s;
	return 0;
}
