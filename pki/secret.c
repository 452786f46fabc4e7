/* pki/secret.c - kubernetes.io/tls and CA Secret JSON, built and parsed
 * (see pki.h). No API calls: the caller creates/patches the object.
 * Base64 is support/base64.h; decoding skips line breaks like Go's decoder
 * (the API server accepts wrapped []byte values). */
#include <errno.h>
#include <stdio.h>

#include "pki/internal.h"
#include "support/alloc.h"
#include "support/base64.h"
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

static void add_b64(json_object *data, const char *k, const char *pem)
{
	_cleanup_free_ char *b = op_base64_encode_str(pem, strlen(pem), 0);
	op_jsets(data, k, b);
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
	_cleanup_(op_json_putp) json_object *root = op_jobj();
	json_object *meta = op_jobj();
	json_object *data = op_jobj();
	op_jset(root, "metadata", meta);
	op_jset(root, "data", data);
	op_jsets(root, "apiVersion", "v1");
	op_jsets(root, "kind", "Secret");
	op_jsets(root, "type", sh->out_type);
	op_jsets(meta, "name", name);
	op_jsets(meta, "namespace", ns);
	add_b64(data, sh->crt_key, d->crt);
	if (d->key)
		add_b64(data, sh->key_key, d->key);
	if (d->ca)
		add_b64(data, sh->ca_key, d->ca);
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
	/* base64 of the cap, with room for line breaks */
	if (len > (size_t)PKI_PEM_MAX * 2)
		return op_err_set(err, -EMSGSIZE, "data.%s: larger than %u bytes", key, PKI_PEM_MAX);
	_cleanup_(op_buf_donep) struct op_buf pem = OP_BUF_INIT(PKI_PEM_MAX);
	struct op_err b64err = OP_ERR_INIT;
	r = op_base64_decode(b, len, OP_BASE64_IGNORE_NEWLINES, &pem, &b64err);
	if (r == -EMSGSIZE)
		return op_err_set(err, r, "data.%s: larger than %u bytes", key, PKI_PEM_MAX);
	if (r < 0)
		return op_err_set(err, r, "data.%s: invalid base64: %s", key, b64err.msg);
	size_t n = 0;
	char *out = op_buf_take(&pem, &n);
	if (strlen(out) != n) {
		free(out);
		return op_err_set(err, -EINVAL, "data.%s: PEM contains a NUL byte", key);
	}
	*ret = out;
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
