/* support/http_tls.c - reference-counted serving credentials (see http_tls.h). */
#include "support/http_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/x509.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/buf.h"

static void cred_free(struct op_tls_cred *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n_pcerts; i++)
		gnutls_pcert_deinit(&c->pcerts[i]);
	free(c->pcerts);
	if (c->key)
		gnutls_privkey_deinit(c->key);
	free(c->subject);
	free(c);
}

struct op_tls_cred *op_tls_cred_ref(struct op_tls_cred *cred)
{
	atomic_fetch_add_explicit(&cred->refs, 1, memory_order_relaxed);
	return cred;
}

void op_tls_cred_unref(struct op_tls_cred *cred)
{
	if (!cred)
		return;
	if (atomic_fetch_sub_explicit(&cred->refs, 1, memory_order_acq_rel) == 1)
		cred_free(cred);
}

/* The key must be the leaf's: compare SHA-256 key ids of both public keys. */
static int check_key_matches(struct op_tls_cred *c, struct op_err *err)
{
	gnutls_pubkey_t pub = NULL;
	unsigned char id_key[64], id_crt[64];
	size_t n_key = sizeof(id_key), n_crt = sizeof(id_crt);
	int r = gnutls_pubkey_init(&pub);
	if (r < 0)
		return op_err_set(err, -ENOMEM, "tls: cannot allocate public key: %s",
				  gnutls_strerror(r));
	r = gnutls_pubkey_import_privkey(pub, c->key, 0, 0);
	if (r >= 0)
		r = gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, id_key, &n_key);
	gnutls_pubkey_deinit(pub);
	if (r < 0)
		return op_err_set(err, -EBADMSG, "tls key: cannot derive public key: %s",
				  gnutls_strerror(r));
	r = gnutls_pubkey_get_key_id(c->pcerts[0].pubkey, GNUTLS_KEYID_USE_SHA256, id_crt, &n_crt);
	if (r < 0)
		return op_err_set(err, -EBADMSG, "tls certificate: cannot read public key: %s",
				  gnutls_strerror(r));
	if (n_key != n_crt || memcmp(id_key, id_crt, n_key) != 0)
		return op_err_set(err, -EBADMSG,
				  "tls key does not match the certificate (%s)", c->subject);
	return 0;
}

int op_tls_cred_load(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		     struct op_tls_cred **ret_cred, struct op_err *err)
{
	if (!cert_pem || !key_pem || cert_len == 0 || key_len == 0)
		return op_err_set(err, -EBADMSG, "tls: empty certificate or key");
	if (cert_len > OP_TLS_MAX_PEM || key_len > OP_TLS_MAX_PEM)
		return op_err_set(err, -EBADMSG, "tls: certificate or key larger than %u bytes",
				  OP_TLS_MAX_PEM);

	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	int ret = 0;
	struct op_tls_cred *c = op_calloc(1, sizeof(*c));
	atomic_init(&c->refs, 1);

	gnutls_datum_t d = { (unsigned char *)cert_pem, (unsigned)cert_len };
	int r = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM,
					     GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (r < 0 || n == 0) {
		ret = op_err_set(err, -EBADMSG, "tls certificate: %s",
				 r < 0 ? gnutls_strerror(r) : "no certificate in PEM");
		goto out;
	}
	c->pcerts = op_calloc(n, sizeof(*c->pcerts));
	for (unsigned i = 0; i < n; i++) {
		r = gnutls_pcert_import_x509(&c->pcerts[i], crts[i], 0);
		if (r < 0) {
			ret = op_err_set(err, -EBADMSG, "tls certificate %u: %s", i,
					 gnutls_strerror(r));
			goto out;
		}
		c->n_pcerts++;
	}
	gnutls_datum_t dn = { NULL, 0 };
	if (gnutls_x509_crt_get_dn3(crts[0], &dn, 0) >= 0) {
		c->subject = op_strndup((const char *)dn.data, dn.size);
		gnutls_free(dn.data);
	} else {
		c->subject = op_strdup("?");
	}
	c->not_after = gnutls_x509_crt_get_expiration_time(crts[0]);

	r = gnutls_privkey_init(&c->key);
	if (r < 0) {
		ret = op_err_set(err, -ENOMEM, "tls key: %s", gnutls_strerror(r));
		goto out;
	}
	gnutls_datum_t kd = { (unsigned char *)key_pem, (unsigned)key_len };
	r = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		ret = op_err_set(err, -EBADMSG, "tls key: %s", gnutls_strerror(r));
		goto out;
	}
	ret = check_key_matches(c, err);
	if (ret < 0)
		goto out;
	*ret_cred = TAKE_PTR(c);
out:
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	cred_free(c);
	return ret;
}

void op_tls_slot_init(struct op_tls_slot *slot)
{
	pthread_mutex_init(&slot->lock, NULL);
	slot->cur = NULL;
}

void op_tls_slot_done(struct op_tls_slot *slot)
{
	op_tls_cred_unref(slot->cur);
	slot->cur = NULL;
	pthread_mutex_destroy(&slot->lock);
}

struct op_tls_cred *op_tls_slot_get(struct op_tls_slot *slot)
{
	pthread_mutex_lock(&slot->lock);
	struct op_tls_cred *c = slot->cur ? op_tls_cred_ref(slot->cur) : NULL;
	pthread_mutex_unlock(&slot->lock);
	return c;
}

void op_tls_slot_swap(struct op_tls_slot *slot, struct op_tls_cred *cred)
{
	pthread_mutex_lock(&slot->lock);
	struct op_tls_cred *old = slot->cur;
	slot->cur = cred;
	pthread_mutex_unlock(&slot->lock);
	op_tls_cred_unref(old);
}

void op_tls_files_init(struct op_tls_files *f, const char *cert_file, const char *key_file)
{
	memset(f, 0, sizeof(*f));
	f->cert_file = op_strdup(cert_file);
	f->key_file = op_strdup(key_file);
	pthread_mutex_init(&f->lock, NULL);
}

void op_tls_files_done(struct op_tls_files *f)
{
	if (!f || !f->cert_file)
		return;
	free(f->cert_file);
	free(f->key_file);
	f->cert_file = f->key_file = NULL;
	pthread_mutex_destroy(&f->lock);
}

static int file_sig(const char *path, struct op_tls_file_sig *ret, struct op_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return op_err_set(err, -errno, "tls: cannot stat '%s': %s", path, strerror(errno));
	*ret = (struct op_tls_file_sig){ .dev = st.st_dev,
					 .ino = st.st_ino,
					 .size = st.st_size,
					 .mtime = st.st_mtim,
					 .valid = true };
	return 0;
}

static bool sig_equal(const struct op_tls_file_sig *a, const struct op_tls_file_sig *b)
{
	return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static int read_capped(const char *path, struct op_buf *out, struct op_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "tls: cannot open '%s': %s", path, strerror(errno));
	int ret = 0;
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = op_err_set(err, -errno, "tls: cannot read '%s': %s", path,
					 strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (op_buf_add(out, chunk, (size_t)n) < 0) {
			ret = op_err_set(err, -EMSGSIZE, "tls: '%s' is larger than %u bytes", path,
					 OP_TLS_MAX_PEM);
			break;
		}
	}
	close(fd);
	return ret;
}

int op_tls_files_load(struct op_tls_files *f, bool force, struct op_tls_cred **ret_cred,
		      struct op_err *err)
{
	struct op_tls_file_sig now[2];
	_cleanup_(op_buf_donep) struct op_buf cert = OP_BUF_INIT(OP_TLS_MAX_PEM);
	_cleanup_(op_buf_donep) struct op_buf key = OP_BUF_INIT(OP_TLS_MAX_PEM);
	struct op_tls_cred *c = NULL;
	int r;

	pthread_mutex_lock(&f->lock);
	r = file_sig(f->cert_file, &now[0], err);
	if (r >= 0)
		r = file_sig(f->key_file, &now[1], err);
	if (r < 0)
		goto out;
	if (!force && sig_equal(&now[0], &f->sig[0]) && sig_equal(&now[1], &f->sig[1])) {
		r = 0;
		goto out;
	}
	r = read_capped(f->cert_file, &cert, err);
	if (r >= 0)
		r = read_capped(f->key_file, &key, err);
	if (r >= 0)
		r = op_tls_cred_load(cert.data, cert.len, key.data, key.len, &c, err);
	if (r < 0) {
		op_err_prefix(err, "loading '%s' and '%s'", f->cert_file, f->key_file);
		goto out;
	}
	f->sig[0] = now[0];
	f->sig[1] = now[1];
	*ret_cred = c;
	r = 1;
out:
	pthread_mutex_unlock(&f->lock);
	return r;
}
