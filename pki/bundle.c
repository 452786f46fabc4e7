/* pki/bundle.c - caBundle management: CA certificates only, deduplicated by
 * fingerprint, stable order (see pki.h). */
#include <ctype.h>
#include <errno.h>

#include "pki/internal.h"
#include "support/alloc.h"
#include "support/buf.h"

void pki_bundle_done(struct pki_bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i].pem);
	free(b->v);
	*b = PKI_BUNDLE_INIT;
}

static bool blank(const char *s)
{
	if (!s)
		return true;
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

/* Parses every certificate of pem into entries; all must be CAs. */
static int entries_parse(const char *pem, const char *what, struct pki_bundle *ret,
			 struct op_err *err)
{
	gnutls_x509_crt_t *list = NULL;
	unsigned n = 0;
	int r = pki__crt_list_import(pem, what, &list, &n, err);
	if (r < 0)
		return r;
	_cleanup_(pki_bundle_done) struct pki_bundle out = PKI_BUNDLE_INIT;
	out.v = op_calloc(n, sizeof(*out.v));
	for (unsigned i = 0; i < n && r == 0; i++) {
		if (!pki__crt_is_ca(list[i])) {
			char *dn = NULL;
			gnutls_datum_t d = { 0 };
			if (gnutls_x509_crt_get_dn3(list[i], &d, 0) >= 0) {
				dn = op_strndup((const char *)d.data, d.size);
				gnutls_free(d.data);
			}
			r = op_err_set(err, -EINVAL,
				       "%s: certificate %u ('%s') is not a CA; a caBundle must "
				       "hold CA certificates only, never a leaf",
				       what, i + 1, dn ? dn : "?");
			free(dn);
			break;
		}
		struct pki_bundle_entry *e = &out.v[out.n];
		r = pki__crt_export(list[i], &e->pem, err);
		if (r < 0)
			break;
		out.n++;
		if (pki__crt_fingerprint(list[i], e->fingerprint) < 0)
			r = op_err_set(err, -EIO, "%s: cannot compute fingerprint", what);
		e->not_before = (int64_t)gnutls_x509_crt_get_activation_time(list[i]);
		e->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(list[i]);
	}
	pki__crt_list_free(list, n);
	if (r < 0)
		return r;
	*ret = out;
	out = PKI_BUNDLE_INIT;
	return 0;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct pki_bundle_entry *a = pa, *b = pb;
	if (a->not_before != b->not_before)
		return a->not_before < b->not_before ? -1 : 1;
	return strcmp(a->fingerprint, b->fingerprint);
}

bool pki_bundle_contains(const struct pki_bundle *b, const char *fingerprint)
{
	for (size_t i = 0; b && fingerprint && i < b->n; i++)
		if (strcmp(b->v[i].fingerprint, fingerprint) == 0)
			return true;
	return false;
}

/* Moves the entries of src not yet in b into b (src is left empty). */
static int merge(struct pki_bundle *b, struct pki_bundle *src, struct op_err *err)
{
	size_t fresh = 0;
	for (size_t i = 0; i < src->n; i++) {
		bool dup = pki_bundle_contains(b, src->v[i].fingerprint);
		for (size_t j = 0; j < i && !dup; j++)
			dup = strcmp(src->v[j].fingerprint, src->v[i].fingerprint) == 0;
		if (dup) {
			free(src->v[i].pem);
			src->v[i].pem = NULL;
		} else {
			fresh++;
		}
	}
	if (b->n + fresh > PKI_BUNDLE_MAX_CERTS)
		return op_err_set(err, -EMSGSIZE, "bundle: would hold %zu certificates, at most %u",
				  b->n + fresh, PKI_BUNDLE_MAX_CERTS);
	if (fresh)
		b->v = op_realloc(b->v, (b->n + fresh) * sizeof(*b->v));
	for (size_t i = 0; i < src->n; i++) {
		if (!src->v[i].pem)
			continue;
		b->v[b->n++] = src->v[i];
		src->v[i].pem = NULL;
	}
	if (b->n > 1)
		qsort(b->v, b->n, sizeof(*b->v), entry_cmp);
	return (int)fresh;
}

int pki_bundle_add(struct pki_bundle *b, const char *ca_pem, struct op_err *err)
{
	_cleanup_(pki_bundle_done) struct pki_bundle src = PKI_BUNDLE_INIT;
	int r = entries_parse(ca_pem, "ca", &src, err);
	if (r < 0)
		return r;
	return merge(b, &src, err);
}

int pki_bundle_parse(const char *pem, struct pki_bundle *ret, struct op_err *err)
{
	_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
	if (!blank(pem)) {
		_cleanup_(pki_bundle_done) struct pki_bundle src = PKI_BUNDLE_INIT;
		int r = entries_parse(pem, "caBundle", &src, err);
		if (r < 0)
			return r;
		r = merge(&b, &src, err);
		if (r < 0)
			return r;
	}
	*ret = b;
	b = PKI_BUNDLE_INIT;
	return 0;
}

int pki_bundle_remove(struct pki_bundle *b, const char *fingerprint)
{
	for (size_t i = 0; b && fingerprint && i < b->n; i++) {
		if (strcmp(b->v[i].fingerprint, fingerprint) != 0)
			continue;
		free(b->v[i].pem);
		memmove(&b->v[i], &b->v[i + 1], (b->n - i - 1) * sizeof(*b->v));
		b->n--;
		return 1;
	}
	return 0;
}

size_t pki_bundle_drop_expired(struct pki_bundle *b, int64_t now)
{
	size_t dropped = 0, w = 0;
	for (size_t i = 0; b && i < b->n; i++) {
		if (b->v[i].not_after <= now) {
			free(b->v[i].pem);
			dropped++;
		} else {
			b->v[w++] = b->v[i];
		}
	}
	if (b)
		b->n = w;
	return dropped;
}

char *pki_bundle_render(const struct pki_bundle *b)
{
	size_t len = 0;
	for (size_t i = 0; b && i < b->n; i++)
		len += strlen(b->v[i].pem);
	char *out = op_malloc(len + 1);
	size_t at = 0;
	for (size_t i = 0; b && i < b->n; i++) {
		size_t n = strlen(b->v[i].pem);
		memcpy(out + at, b->v[i].pem, n);
		at += n;
	}
	out[at] = '\0';
	return out;
}

int pki_bundle_build(const char *const *cas, size_t n, char **ret_pem, struct op_err *err)
{
	_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
	for (size_t i = 0; i < n; i++) {
		if (!cas[i])
			continue;
		int r = pki_bundle_add(&b, cas[i], err);
		if (r < 0)
			return r;
	}
	*ret_pem = pki_bundle_render(&b);
	return 0;
}

bool pki_bundle_is_ca_only(const char *pem)
{
	if (blank(pem))
		return false;
	_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
	return pki_bundle_parse(pem, &b, NULL) == 0 && b.n > 0;
}
