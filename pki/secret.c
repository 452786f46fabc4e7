/* pki/secret.c - kubernetes.io/tls and CA Secret JSON, built and parsed
 * (see pki.h). No API calls: the caller creates/patches the object.
 *
 * base64: support/base64.h was not committed when this was written, so a
 * small static codec lives here (b64_*); swap to op_base64_* once it lands. */
#include <errno.h>
#include <stdio.h>

#include "pki/internal.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/json.h"

static const struct secret_shape {
	const char *type;    /* required type, NULL = any */
	const char *out_type;
	const char *crt_key;
	const char *key_key;
	bool key_required;
	const char *ca_key;  /* NULL: no separate CA entry */
} shapes[] = {
	[PKI_SECRET_TLS] = { "kubernetes.io/tls", "kubernetes.io/tls", "tls.crt", "tls.key", true,
			     "ca.crt" },
	[PKI_SECRET_CA] = { NULL, "Opaque", "ca.crt", "ca.key", false, NULL },
};

/* ----------------------------------------------------------------- base64 */

static const char b64_alpha[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *p, size_t n)
{
	char *out = op_malloc((n + 2) / 3 * 4 + 1);
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = b64_alpha[v >> 18 & 63];
		out[o++] = b64_alpha[v >> 12 & 63];
		out[o++] = b64_alpha[v >> 6 & 63];
		out[o++] = b64_alpha[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[o++] = b64_alpha[v >> 18 & 63];
		out[o++] = b64_alpha[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64_alpha[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64_alpha, c) : NULL;
	return p ? (int)(p - b64_alpha) : -1;
}

/* Strict standard base64 (padding required); '\r' and '\n' are skipped like
 * Go's decoder. Output is NUL-terminated and owned. */
static int b64_decode(const char *in, size_t len, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = op_malloc(len / 4 * 3 + 4);
	size_t o = 0, q = 0, pad = 0;
	uint32_t acc = 0;
	for (size_t i = 0; i < len; i++) {
		char c = in[i];
		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			acc <<= 6;
			q++;
		} else {
			int v = b64_val(c);
			if (v < 0 || pad)
				return -EINVAL;
			acc = acc << 6 | (uint32_t)v;
			q++;
		}
		if (q == 4) {
			if (pad > 2)
				return -EINVAL;
			out[o++] = (char)(acc >> 16);
			if (pad < 2)
				out[o++] = (char)(acc >> 8 & 0xff);
			if (pad < 1)
				out[o++] = (char)(acc & 0xff);
			q = 0;
			acc = 0;
			if (o > max)
				return -EMSGSIZE;
		}
	}
	if (q != 0)
		return -EINVAL;
	out[o] = '\0';
	*ret_len = o;
	*ret = TAKE_PTR(out);
	return 0;
}

/* ----------------------------------------------------------------- build */

void pki_secret_data_done(struct pki_secret_data *d)
{
	if (!d)
		return;
	free(d->crt);
	if (d->key) {
		explicit_bzero(d->key, strlen(d->key));
		free(d->key);
	}
	free(d->ca);
	*d = (struct pki_secret_data){ 0 };
}

static int add_str(json_object *o, const char *k, const char *v)
{
	json_object *s = json_object_new_string(v);
	if (!s)
		return -ENOMEM;
	return op_json_set(o, k, s);
}

static int add_b64(json_object *data, const char *k, const char *pem)
{
	_cleanup_free_ char *b = b64_encode((const unsigned char *)pem, strlen(pem));
	return add_str(data, k, b);
}

int pki_secret_build(enum pki_secret_kind kind, const char *ns, const char *name,
		     const struct pki_secret_data *d, json_object **ret, struct op_err *err)
{
	if ((size_t)kind >= OP_ARRAY_SIZE(shapes))
		return op_err_set(err, -EINVAL, "unknown secret kind %d", (int)kind);
	const struct secret_shape *sh = &shapes[kind];
	if (!name || !*name || !ns || !*ns)
		return op_err_set(err, -EINVAL, "secret: name and namespace required");
	if (!d || !d->crt || (sh->key_required && !d->key))
		return op_err_set(err, -EINVAL, "secret %s/%s: %s%s%s required", ns, name,
				  sh->crt_key, sh->key_required ? " and " : "",
				  sh->key_required ? sh->key_key : "");
	if (d->ca && !sh->ca_key)
		return op_err_set(err, -EINVAL, "secret %s/%s: no separate CA entry in this kind",
				  ns, name);
	_cleanup_(op_json_putp) json_object *root = json_object_new_object();
	json_object *meta = json_object_new_object();
	json_object *data = json_object_new_object();
	int r = (!root || !meta || !data) ? -ENOMEM : 0;
	if (r == 0 && (r = op_json_set(root, "metadata", meta)) == 0)
		meta = NULL;
	if (r == 0 && (r = op_json_set(root, "data", data)) == 0)
		data = NULL;
	json_object_put(meta);
	json_object_put(data);
	if (r < 0)
		return op_err_set(err, -ENOMEM, "secret %s/%s: out of memory", ns, name);
	meta = json_object_object_get(root, "metadata");
	data = json_object_object_get(root, "data");
	if ((r = add_str(root, "apiVersion", "v1")) < 0 || (r = add_str(root, "kind", "Secret")) < 0 ||
	    (r = add_str(root, "type", sh->out_type)) < 0 || (r = add_str(meta, "name", name)) < 0 ||
	    (r = add_str(meta, "namespace", ns)) < 0 || (r = add_b64(data, sh->crt_key, d->crt)) < 0 ||
	    (d->key && (r = add_b64(data, sh->key_key, d->key)) < 0) ||
	    (d->ca && (r = add_b64(data, sh->ca_key, d->ca)) < 0))
		return op_err_set(err, -ENOMEM, "secret %s/%s: out of memory", ns, name);
	*ret = TAKE_PTR(root);
	return 0;
}

/* ----------------------------------------------------------------- parse */

/* Decodes data.<key> into an owned PEM string. 1 when present, 0 when absent. */
static int get_pem(json_object *data, const char *key, char **ret, struct op_err *err)
{
	const char *b = NULL;
	int r = op_json_get_str(data, key, "data", &b, err);
	if (r <= 0)
		return r;
	size_t len = strlen(b);
	if (len > (size_t)PKI_PEM_MAX / 3 * 4 + 8)
		return op_err_set(err, -EMSGSIZE, "data.%s: larger than %u bytes", key, PKI_PEM_MAX);
	_cleanup_free_ char *pem = NULL;
	size_t n = 0;
	r = b64_decode(b, len, PKI_PEM_MAX, &pem, &n);
	if (r == -EMSGSIZE)
		return op_err_set(err, r, "data.%s: larger than %u bytes", key, PKI_PEM_MAX);
	if (r < 0)
		return op_err_set(err, r, "data.%s: invalid base64", key);
	if (strlen(pem) != n)
		return op_err_set(err, -EINVAL, "data.%s: PEM contains a NUL byte", key);
	*ret = TAKE_PTR(pem);
	return 1;
}

int pki_secret_parse(enum pki_secret_kind kind, json_object *secret, struct pki_secret_data *ret,
		     struct op_err *err)
{
	if ((size_t)kind >= OP_ARRAY_SIZE(shapes))
		return op_err_set(err, -EINVAL, "unknown secret kind %d", (int)kind);
	const struct secret_shape *sh = &shapes[kind];
	if (!secret || !json_object_is_type(secret, json_type_object))
		return op_err_set(err, -EINVAL, "secret: expected object");
	const char *type = NULL;
	int r = op_json_get_str(secret, "type", "", &type, err);
	if (r < 0)
		return r;
	if (sh->type && (!type || strcmp(type, sh->type) != 0))
		return op_err_set(err, -EINVAL, "type: expected '%s', got '%s'", sh->type,
				  type ? type : "");
	json_object *data = NULL;
	r = op_json_get_obj(secret, "data", "", &data, err);
	if (r < 0)
		return r;
	if (r == 0)
		return op_err_set(err, -EINVAL, "data: required");

	_cleanup_(pki_secret_data_done) struct pki_secret_data d = { 0 };
	char what[64];
	r = get_pem(data, sh->crt_key, &d.crt, err);
	if (r < 0)
		return r;
	if (r == 0)
		return op_err_set(err, -EINVAL, "data.%s: required", sh->crt_key);
	r = get_pem(data, sh->key_key, &d.key, err);
	if (r < 0)
		return r;
	if (r == 0 && sh->key_required)
		return op_err_set(err, -EINVAL, "data.%s: required", sh->key_key);
	if (sh->ca_key && (r = get_pem(data, sh->ca_key, &d.ca, err)) < 0)
		return r;

	snprintf(what, sizeof(what), "data.%s", sh->crt_key);
	_cleanup_(pki__crt_deinitp) gnutls_x509_crt_t crt = NULL;
	r = pki__crt_import(d.crt, what, &crt, err);
	if (r < 0)
		return r;
	if (kind == PKI_SECRET_CA && !pki__crt_is_ca(crt))
		return op_err_set(err, -EINVAL, "%s: not a CA certificate", what);
	if (d.key) {
		r = pki_pair_check(d.crt, d.key, err);
		if (r < 0) {
			op_err_prefix(err, "data.%s", sh->key_key);
			return r;
		}
	}
	if (d.ca) {
		_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
		r = pki_bundle_parse(d.ca, &b, err);
		if (r < 0) {
			op_err_prefix(err, "data.%s", sh->ca_key);
			return r;
		}
		if (b.n == 0)
			return op_err_set(err, -EINVAL, "data.%s: no certificate", sh->ca_key);
	}
	*ret = d;
	d = (struct pki_secret_data){ 0 };
	return 0;
}
