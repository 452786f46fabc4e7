/* reconciler/secrets.c - the Cluster's certificate Secrets, read on the paths
 * that need their contents: the Secrets cache keeps metadata only
 * (docs/internals/memory.md), and what a reconcile learnt from a Secret's data
 * is remembered per Cluster against the resourceVersion it was read at
 * (struct rc_pki_memo). Only a Secret whose resourceVersion moved, a memo
 * that is due for renewal, or a signature (the CA key) reads data: all of the
 * Cluster's Secrets in one LIST, at most once per reconcile. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/names.h"
#include "reconciler/ctl.h"
#include "reconciler/objects.h"
#include "support/alloc.h"
#include "support/hash.h"
#include "support/json.h"

int rc_secret_full(struct rc_run *r, const char *name, json_object **ret)
{
	*ret = NULL;
	if (!r->secrets) {
		_cleanup_free_ char *sel = op_asprintf("%s=%s", RC_LABEL_CLUSTER, r->name);
		struct kube_list_opts o = { .label_selector = sel };
		int e = kube_list_all(r->ctl->kc, KUBE_SECRETS, r->ns, &o, &r->secrets, r->err);
		if (e < 0)
			return op_err_prefix(r->err, "reading the secrets of %s", r->key);
	}
	json_object *items = op_json_at(r->secrets, "items");
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		json_object *o = json_object_array_get_idx(items, i);
		const char *n = kube_obj_name(o);
		if (n && strcmp(n, name) == 0) {
			*ret = o;
			return 0;
		}
	}
	return -ENOENT;
}

int rc_ca_key(struct rc_run *r)
{
	if (r->ca.key_pem)
		return 0;
	if (!r->ca_has_key)
		return -ENOKEY;
	_cleanup_free_ char *sname = api_secret_name(r->name, API_SECRET_CA);
	json_object *full = NULL;
	int ret = rc_secret_full(r, sname, &full);
	if (ret == -ENOENT)
		return op_err_set(r->err, -ENOENT, "secret %s is gone", sname);
	if (ret < 0)
		return ret;
	struct pki_secret_data d = { 0 };
	ret = pki_secret_parse(PKI_SECRET_CA, full, &d, r->err);
	if (ret == 0 && (!d.key || !d.crt || strcmp(d.crt, r->ca.cert_pem) != 0))
		/* rewritten since this reconcile read it: the next one starts over */
		ret = op_err_set(r->err, -ESTALE, "secret %s changed during the reconcile", sname);
	if (ret == 0)
		r->ca.key_pem = TAKE_PTR(d.key);
	pki_secret_data_done(&d);
	return ret < 0 ? op_err_prefix(r->err, "secret %s", sname) : 0;
}

uint64_t rc_leaf_want_digest(const struct pki_leaf_req *want)
{
	/* FNV-1a over CN, usage and each SAN, with separators; SANs in their
	 * order (server_sans builds them in a fixed order) */
	uint64_t h = OP_FNV1A64_INIT;
	const char *parts[2] = { want->cn ? want->cn : "", NULL };
	char usage[24];
	snprintf(usage, sizeof(usage), "%u", want->usage);
	parts[1] = usage;
	for (size_t i = 0; i < 2 + want->n_sans; i++) {
		const char *p = i < 2 ? parts[i] : want->sans[i - 2];
		h = op_fnv1a64(h, p, strlen(p));
		h = op_fnv1a64(h, "\xff", 1); /* the separator: "ab","c" != "a","bc" */
	}
	return h;
}

static bool rv_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void set_rv(char **dst, const char *rv)
{
	free(*dst);
	*dst = rv ? op_strdup(rv) : NULL;
}

bool rc_memo_ca_get(struct rc_run *r, const char *rv)
{
	bool hit = false;
	pthread_mutex_lock(&r->ctl->mu);
	const struct rc_cluster_state *s = rc_state_find(r->ctl, r->key);
	/* due for renewal: read again (a CA without its key cannot be renewed by
	 * pgop: nothing to read again for) */
	if (s && rv_eq(s->pki.ca_rv, rv) && s->pki.ca_crt &&
	    (r->now < s->pki.ca_renew_at || !s->pki.ca_key)) {
		free(r->ca.cert_pem);
		r->ca.cert_pem = op_strdup(s->pki.ca_crt);
		memcpy(r->ca_fp, s->pki.ca_fp, sizeof(r->ca_fp));
		r->ca_has_key = s->pki.ca_key;
		r->ca_not_after = s->pki.ca_not_after;
		hit = true;
	}
	pthread_mutex_unlock(&r->ctl->mu);
	return hit;
}

int rc_memo_ca_set(struct rc_run *r, const char *rv)
{
	struct pki_cert_info info;
	int ret = pki_cert_info_parse(r->ca.cert_pem, "ca.crt", &info, r->err);
	if (ret < 0)
		return ret;
	memcpy(r->ca_fp, info.fingerprint, sizeof(r->ca_fp));
	r->ca_has_key = r->ca.key_pem != NULL;
	r->ca_not_after = info.not_after;
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	set_rv(&s->pki.ca_rv, rv);
	free(s->pki.ca_crt);
	s->pki.ca_crt = op_strdup(r->ca.cert_pem);
	memcpy(s->pki.ca_fp, info.fingerprint, sizeof(s->pki.ca_fp));
	s->pki.ca_key = r->ca_has_key;
	s->pki.ca_renew_at = pki_renew_at(&info, 0);
	s->pki.ca_not_after = info.not_after;
	pthread_mutex_unlock(&r->ctl->mu);
	pki_cert_info_done(&info);
	return 0;
}

bool rc_memo_ca_cert_get(struct rc_run *r, const char *rv)
{
	pthread_mutex_lock(&r->ctl->mu);
	const struct rc_cluster_state *s = rc_state_find(r->ctl, r->key);
	bool hit = s && rv_eq(s->pki.ca_cert_rv, rv) && strcmp(s->pki.ca_cert_fp, r->ca_fp) == 0;
	pthread_mutex_unlock(&r->ctl->mu);
	return hit;
}

void rc_memo_ca_cert_set(struct rc_run *r, const char *rv)
{
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	set_rv(&s->pki.ca_cert_rv, rv);
	memcpy(s->pki.ca_cert_fp, r->ca_fp, sizeof(s->pki.ca_cert_fp));
	pthread_mutex_unlock(&r->ctl->mu);
}

bool rc_memo_leaf_get(struct rc_run *r, unsigned slot, const char *rv, uint64_t want,
		      int64_t *ret_not_after)
{
	pthread_mutex_lock(&r->ctl->mu);
	const struct rc_cluster_state *s = rc_state_find(r->ctl, r->key);
	const struct rc_leaf_memo *l = s ? &s->pki.leaf[slot] : NULL;
	bool hit = l && rv_eq(l->rv, rv) && strcmp(l->ca_fp, r->ca_fp) == 0 && l->want == want &&
		   r->now < l->renew_at;
	if (hit)
		*ret_not_after = l->not_after;
	pthread_mutex_unlock(&r->ctl->mu);
	return hit;
}

int rc_memo_leaf_set(struct rc_run *r, unsigned slot, const char *rv, uint64_t want,
		     const char *crt, int64_t *ret_not_after)
{
	struct pki_cert_info info;
	int ret = pki_cert_info_parse(crt, "tls.crt", &info, r->err);
	if (ret < 0)
		return ret;
	*ret_not_after = info.not_after;
	int64_t renew_at = pki_renew_at(&info, 0);
	if (renew_at > r->ca_not_after) /* verified against a CA valid until then */
		renew_at = r->ca_not_after;
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_leaf_memo *l = &rc_state_get(r->ctl, r->key)->pki.leaf[slot];
	set_rv(&l->rv, rv);
	memcpy(l->ca_fp, r->ca_fp, sizeof(l->ca_fp));
	l->want = want;
	l->renew_at = renew_at;
	l->not_after = info.not_after;
	pthread_mutex_unlock(&r->ctl->mu);
	pki_cert_info_done(&info);
	return 0;
}
