/* certmgr/manager.c - executes the CA rotation plan against the API server
 * (see certmgr.h). State is re-read every round: nothing is cached
 * between rounds, so a deleted or edited Secret is simply seen as it is.
 */
#include "certmgr/certmgr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certmgr/internal.h"
#include "kube/leader.h"
#include "pki/pki.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/log.h"

#define CM_COMPONENT_DEFAULT "pgop-certmanager"
#define CM_SETTLE_DEFAULT_S 10u

struct cm {
	struct kube_client *c; /* borrowed */
	struct cm_config cfg;
	struct cm_settle settle; /* the two settle pauses, across rounds */
	char *sans[4];
	char *leaf_cn;
	char *ca_cn;
};

/* What one round reads. Every pointer owned. */
struct cm_state {
	json_object *ca_obj;  /* the CA Secret as read (NULL: absent) */
	json_object *tls_obj; /* the serving Secret as read (NULL: absent) */
	struct pki_pair ca, next, leaf;
	json_object *whc[CM_MAX_WEBHOOK_CONFIGS]; /* NULL: absent */
	char *published;      /* CAs trusted by every existing configuration; NULL: none exists */
	bool published_bad;   /* some caBundle held a non-CA or garbage */
};

static void cm_state_done(struct cm_state *s)
{
	json_object_put(s->ca_obj);
	json_object_put(s->tls_obj);
	pki_pair_done(&s->ca);
	pki_pair_done(&s->next);
	pki_pair_done(&s->leaf);
	for (size_t i = 0; i < CM_MAX_WEBHOOK_CONFIGS; i++)
		json_object_put(s->whc[i]);
	free(s->published);
	*s = (struct cm_state){ 0 };
}

static const struct kube_kind *whc_kind(enum cm_whc_kind k)
{
	return k == CM_MUTATING     ? KUBE_MUTATINGWEBHOOKCONFIGURATIONS
	       : k == CM_VALIDATING ? KUBE_VALIDATINGWEBHOOKCONFIGURATIONS
				    : KUBE_APISERVICES;
}

static bool is_apiservice(json_object *o)
{
	const char *kind = op_json_str_at(o, "kind");
	return kind && strcmp(kind, "APIService") == 0;
}

/* ---------------------------------------------------------------- helpers */

void cm_sans(const char *svc, const char *ns, char *out[4])
{
	out[0] = op_strdup(svc);
	out[1] = op_asprintf("%s.%s", svc, ns);
	out[2] = op_asprintf("%s.%s.svc", svc, ns);
	out[3] = op_asprintf("%s.%s.svc.cluster.local", svc, ns);
}

void cm_sans_done(char *sans[4])
{
	for (size_t i = 0; i < 4; i++) {
		free(sans[i]);
		sans[i] = NULL;
	}
}

static const struct {
	char unit;
	int64_t seconds;
} duration_units[] = { { 'd', PKI_DAY_S }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };

int cm_parse_duration(const char *s, int64_t *ret_s, struct op_err *err)
{
	const int64_t max = 100LL * 366 * PKI_DAY_S;
	int64_t total = 0;
	const char *p = s;
	if (!s || !*s)
		return op_err_set(err, -EINVAL, "duration: empty");
	while (*p) {
		int64_t v = 0;
		const char *start = p;
		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p - '0');
			if (v > max)
				return op_err_set(err, -ERANGE, "duration '%s': too long", s);
			p++;
		}
		if (p == start)
			return op_err_set(err, -EINVAL, "duration '%s': expected a number at '%s'", s,
					  p);
		int64_t mult = 0;
		if (!*p && start == s) {
			mult = 1; /* bare seconds */
		} else {
			for (size_t i = 0; i < OP_ARRAY_SIZE(duration_units); i++)
				if (*p == duration_units[i].unit)
					mult = duration_units[i].seconds;
			if (!mult)
				return op_err_set(err, -EINVAL,
						  "duration '%s': unit must be d, h, m or s", s);
			p++;
		}
		if (v > (max - total) / mult)
			return op_err_set(err, -ERANGE, "duration '%s': too long", s);
		total += v * mult;
	}
	if (total <= 0)
		return op_err_set(err, -ERANGE, "duration '%s': must be positive", s);
	*ret_s = total;
	return 0;
}

int cm_parse_fraction(const char *s, double *ret, struct op_err *err)
{
	if (!s || !*s)
		return op_err_set(err, -EINVAL, "fraction: empty");
	const char *slash = strchr(s, '/');
	double v;
	char *end = NULL;
	if (slash) {
		errno = 0;
		long a = strtol(s, &end, 10);
		if (errno || end != slash)
			return op_err_set(err, -EINVAL, "fraction '%s': expected A/B or 0.x", s);
		long b = strtol(slash + 1, &end, 10);
		if (errno || *end || b <= 0 || slash[1] == '\0')
			return op_err_set(err, -EINVAL, "fraction '%s': expected A/B or 0.x", s);
		v = (double)a / (double)b;
	} else {
		errno = 0;
		v = strtod(s, &end);
		if (errno || *end)
			return op_err_set(err, -EINVAL, "fraction '%s': expected A/B or 0.x", s);
	}
	if (!(v > 0.0 && v < 1.0))
		return op_err_set(err, -EINVAL, "fraction '%s': must be between 0 and 1", s);
	*ret = v;
	return 0;
}

/* The caBundle (decoded PEM) of one webhook entry; *ret owned ("" if none). */
static int webhook_bundle(json_object *wh, size_t i, char **ret, struct op_err *err)
{
	const char *b64 = op_json_str_at(wh, "clientConfig.caBundle");
	if (!b64 || !*b64) {
		*ret = op_strdup("");
		return 0;
	}
	char *pem = NULL;
	int r = op_base64_decode_str(b64, strlen(b64), OP_BASE64_IGNORE_NEWLINES, &pem, NULL, err);
	if (r < 0)
		return op_err_prefix(err, "webhooks[%zu].clientConfig.caBundle", i);
	*ret = pem;
	return 0;
}

/* An APIService's spec.caBundle as a CA-only bundle. */
static int apiservice_bundle(json_object *svc, char **ret_pem, struct op_err *err)
{
	const char *b64 = op_json_str_at(svc, "spec.caBundle");
	_cleanup_free_ char *pem = NULL;
	if (b64 && *b64 &&
	    op_base64_decode_str(b64, strlen(b64), OP_BASE64_IGNORE_NEWLINES, &pem, NULL, err) < 0)
		return op_err_prefix(err, "spec.caBundle");
	_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
	int r = pki_bundle_parse(pem ? pem : "", &b, err);
	if (r < 0)
		return op_err_prefix(err, "spec.caBundle");
	*ret_pem = pki_bundle_render(&b);
	return 0;
}

int cm_whc_bundle(json_object *whc, char **ret_pem, struct op_err *err)
{
	if (is_apiservice(whc))
		return apiservice_bundle(whc, ret_pem, err);
	json_object *whs = op_json_at(whc, "webhooks");
	size_t n = whs && json_object_is_type(whs, json_type_array) ? json_object_array_length(whs) : 0;
	_cleanup_(pki_bundle_done) struct pki_bundle acc = PKI_BUNDLE_INIT;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *pem = NULL;
		int r = webhook_bundle(json_object_array_get_idx(whs, i), i, &pem, err);
		if (r < 0)
			return r;
		_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
		r = pki_bundle_parse(pem, &b, err);
		if (r < 0)
			return op_err_prefix(err, "webhooks[%zu].clientConfig.caBundle", i);
		if (i == 0) {
			acc = b;
			b = PKI_BUNDLE_INIT;
			continue;
		}
		for (size_t j = acc.n; j-- > 0;)
			if (!pki_bundle_contains(&b, acc.v[j].fingerprint))
				pki_bundle_remove(&acc, acc.v[j].fingerprint);
	}
	*ret_pem = pki_bundle_render(&acc);
	return 0;
}

int cm_whc_set_bundle(json_object *whc, const char *bundle_pem, struct op_err *err)
{
	if (is_apiservice(whc)) {
		_cleanup_free_ char *b64 = op_base64_encode_str(bundle_pem, strlen(bundle_pem), 0);
		json_object *spec = op_json_at(whc, "spec");
		if (!spec || !json_object_is_type(spec, json_type_object))
			return op_err_set(err, -EINVAL, "APIService without spec");
		const char *cur = op_json_str_at(spec, "caBundle");
		if (cur && strcmp(cur, b64) == 0)
			return 0;
		op_jsets(spec, "caBundle", b64);
		return 1;
	}
	json_object *whs = op_json_at(whc, "webhooks");
	if (!whs || !json_object_is_type(whs, json_type_array))
		return 0;
	_cleanup_free_ char *b64 = op_base64_encode_str(bundle_pem, strlen(bundle_pem), 0);
	int changed = 0;
	for (size_t i = 0; i < json_object_array_length(whs); i++) {
		json_object *wh = json_object_array_get_idx(whs, i);
		json_object *cc = op_json_at(wh, "clientConfig");
		if (!cc || !json_object_is_type(cc, json_type_object))
			return op_err_set(err, -EINVAL, "webhooks[%zu]: no clientConfig", i);
		const char *cur = op_json_str_at(cc, "caBundle");
		if (cur && strcmp(cur, b64) == 0)
			continue;
		op_jsets(cc, "caBundle", b64);
		changed++;
	}
	return changed;
}

/* ------------------------------------------------------------------- read */

/* GET; absent is 0 with *ret NULL. */
static int get_opt(struct cm *cm, const struct kube_kind *k, const char *ns, const char *name,
		   json_object **ret, struct op_err *err)
{
	json_object *o = NULL;
	struct op_err e = OP_ERR_INIT;
	int r = kube_get(cm->c, k, ns, name, &o, &e);
	if (r == -ENOENT) {
		*ret = NULL;
		return 0;
	}
	if (r < 0)
		return op_err_set(err, r, "%s", e.msg);
	*ret = o;
	return 0;
}

/* data[key] of a Secret, decoded; NULL when absent or not base64. */
static char *secret_key(json_object *secret, const char *key)
{
	json_object *data = op_json_at(secret, "data");
	json_object *v = NULL;
	if (!data || !json_object_object_get_ex(data, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	char *out = NULL;
	const char *s = json_object_get_string(v);
	if (strlen(s) > 2 * PKI_PEM_MAX ||
	    op_base64_decode_str(s, strlen(s), OP_BASE64_IGNORE_NEWLINES, &out, NULL, NULL) < 0)
		return NULL;
	return out;
}

/* Unusable contents are logged and treated as absent: the plan replaces them. */
static void read_secrets(struct cm *cm, struct cm_state *s)
{
	struct pki_secret_data d = { 0 };
	struct op_err e = OP_ERR_INIT;
	if (s->ca_obj) {
		if (pki_secret_parse(PKI_SECRET_CA, s->ca_obj, &d, &e) == 0 && d.key) {
			s->ca = (struct pki_pair){ TAKE_PTR(d.crt), TAKE_PTR(d.key) };
		} else {
			op_log_warn("certificate manager: CA Secret unusable, replacing it", "secret",
				    cm->cfg.ca_secret, "error", e.code ? e.msg : "no ca.key");
		}
		pki_secret_data_done(&d);
		char *crt = secret_key(s->ca_obj, CM_NEXT_CRT);
		char *key = secret_key(s->ca_obj, CM_NEXT_KEY);
		if (crt && key && pki_pair_check(crt, key, NULL) == 0) {
			s->next = (struct pki_pair){ crt, key };
		} else {
			free(crt);
			if (key)
				explicit_bzero(key, strlen(key));
			free(key);
		}
	}
	if (s->tls_obj) {
		op_err_clear(&e);
		if (pki_secret_parse(PKI_SECRET_TLS, s->tls_obj, &d, &e) == 0)
			s->leaf = (struct pki_pair){ TAKE_PTR(d.crt), TAKE_PTR(d.key) };
		else
			op_log_warn("certificate manager: serving Secret unusable, replacing it",
				    "secret", cm->cfg.tls_secret, "error", e.msg);
		pki_secret_data_done(&d);
	}
}

/* published = CAs in every existing configuration. */
static int read_published(struct cm *cm, struct cm_state *s)
{
	_cleanup_(pki_bundle_done) struct pki_bundle acc = PKI_BUNDLE_INIT;
	bool any = false;
	for (size_t i = 0; i < cm->cfg.n_whcs; i++) {
		if (!s->whc[i])
			continue;
		_cleanup_free_ char *pem = NULL;
		_cleanup_(pki_bundle_done) struct pki_bundle b = PKI_BUNDLE_INIT;
		struct op_err e = OP_ERR_INIT;
		if (cm_whc_bundle(s->whc[i], &pem, &e) < 0 || pki_bundle_parse(pem, &b, &e) < 0) {
			op_log_warn("certificate manager: caBundle unusable, republishing it", "config",
				    cm->cfg.whcs[i].name, "error", e.msg);
			s->published_bad = true;
		}
		if (!any) {
			acc = b;
			b = PKI_BUNDLE_INIT;
			any = true;
			continue;
		}
		for (size_t j = acc.n; j-- > 0;)
			if (!pki_bundle_contains(&b, acc.v[j].fingerprint))
				pki_bundle_remove(&acc, acc.v[j].fingerprint);
	}
	s->published = any ? pki_bundle_render(&acc) : NULL;
	return 0;
}

static bool apiservice_ours(struct cm *cm, json_object *svc)
{
	const char *name = op_json_str_at(svc, "spec.service.name");
	const char *ns = op_json_str_at(svc, "spec.service.namespace");
	return name && ns && strcmp(name, cm->cfg.service) == 0 && strcmp(ns, cm->cfg.ns) == 0;
}

static int read_state(struct cm *cm, struct cm_state *s, struct op_err *err)
{
	const char *ns = cm->cfg.ns;
	int r = get_opt(cm, KUBE_SECRETS, ns, cm->cfg.ca_secret, &s->ca_obj, err);
	if (r >= 0)
		r = get_opt(cm, KUBE_SECRETS, ns, cm->cfg.tls_secret, &s->tls_obj, err);
	for (size_t i = 0; r >= 0 && i < cm->cfg.n_whcs; i++) {
		bool svc = cm->cfg.whcs[i].kind == CM_APISERVICE;
		struct op_err e = OP_ERR_INIT;
		r = get_opt(cm, whc_kind(cm->cfg.whcs[i].kind), NULL, cm->cfg.whcs[i].name,
			    &s->whc[i], svc ? &e : err);
		if (r == -EACCES && svc) { /* a chart without the live API: nothing to keep */
			s->whc[i] = NULL;
			r = 0;
		} else if (r < 0 && svc) {
			op_err_set(err, r, "%s", e.msg);
		}
		if (r >= 0 && s->whc[i] && cm->cfg.whcs[i].kind == CM_APISERVICE &&
		    !apiservice_ours(cm, s->whc[i])) {
			json_object_put(s->whc[i]); /* another release's: not ours to keep */
			s->whc[i] = NULL;
		}
	}
	if (r < 0)
		return r;
	read_secrets(cm, s);
	return read_published(cm, s);
}

/* ------------------------------------------------------------------ write */

static void emit(struct cm *cm, json_object *involved, const char *type, const char *reason,
		 const char *msg)
{
	struct op_err e = OP_ERR_INIT;
	if (involved &&
	    kube_event_emit(cm->c, involved, type, reason, msg,
			    cm->cfg.component ? cm->cfg.component : CM_COMPONENT_DEFAULT, &e) < 0)
		op_log_debug("certificate manager: event not recorded", "reason", reason, "error",
			     e.msg);
}

static void add_b64(json_object *data, const char *key, const char *pem)
{
	_cleanup_free_ char *b = op_base64_encode_str(pem, strlen(pem), 0);
	op_jsets(data, key, b);
}

/* The Secrets belong to the release's Service (ownerReference, no
 * blockOwnerDeletion): `helm uninstall` deletes the Service and the garbage
 * collector then deletes them. Best effort: without the Service, no owner. */
static void set_owner(struct cm *cm, json_object *md)
{
	_cleanup_(op_json_putp) json_object *svc = NULL;
	if (kube_get(cm->c, KUBE_SERVICES, cm->cfg.ns, cm->cfg.service, &svc, NULL) < 0)
		return;
	const char *uid = kube_obj_uid(svc);
	if (!uid)
		return;
	json_object *ref = op_jobj();
	op_jsets(ref, "apiVersion", "v1");
	op_jsets(ref, "kind", "Service");
	op_jsets(ref, "name", cm->cfg.service);
	op_jsets(ref, "uid", uid);
	op_jset(md, "ownerReferences", op_jpush(op_jarr(), ref));
}

/* Creates or replaces (PUT with the resourceVersion read) a Secret; *obj is
 * replaced by the server's copy. */
static int put_secret(struct cm *cm, json_object **obj, json_object *want, struct op_err *err)
{
	json_object *md = op_json_at(want, "metadata");
	if (!md)
		return op_err_set(err, -EINVAL, "Secret without metadata");
	op_jset(md, "labels", op_jsets(op_jobj(), "app.kubernetes.io/managed-by", "pgop"));
	set_owner(cm, md);
	json_object *out = NULL;
	int r;
	if (*obj) {
		const char *rv = kube_obj_resource_version(*obj);
		op_jsets(md, "resourceVersion", rv);
		r = kube_update(cm->c, KUBE_SECRETS, cm->cfg.ns, want, &out, err);
	} else {
		r = kube_create(cm->c, KUBE_SECRETS, cm->cfg.ns, want, &out, err);
	}
	if (r < 0)
		return r;
	json_object_put(*obj);
	*obj = out;
	return 0;
}

static int write_ca_secret(struct cm *cm, struct cm_state *s, struct op_err *err)
{
	struct pki_secret_data d = { .crt = s->ca.cert_pem, .key = s->ca.key_pem };
	_cleanup_(op_json_putp) json_object *want = NULL;
	int r = pki_secret_build(PKI_SECRET_CA, cm->cfg.ns, cm->cfg.ca_secret, &d, &want, err);
	if (r < 0)
		return r;
	json_object *data = op_json_at(want, "data");
	if (s->next.cert_pem && s->next.key_pem) {
		add_b64(data, CM_NEXT_CRT, s->next.cert_pem);
		add_b64(data, CM_NEXT_KEY, s->next.key_pem);
	}
	return put_secret(cm, &s->ca_obj, want, err);
}

static int write_tls_secret(struct cm *cm, struct cm_state *s, struct op_err *err)
{
	struct pki_secret_data d = { .crt = s->leaf.cert_pem, .key = s->leaf.key_pem,
				     .ca = s->ca.cert_pem };
	_cleanup_(op_json_putp) json_object *want = NULL;
	int r = pki_secret_build(PKI_SECRET_TLS, cm->cfg.ns, cm->cfg.tls_secret, &d, &want, err);
	if (r < 0)
		return r;
	return put_secret(cm, &s->tls_obj, want, err);
}

/* Writes bundle to every existing configuration whose caBundles differ;
 * returns how many were written. */
static int publish(struct cm *cm, struct cm_state *s, const char *bundle, struct op_err *err)
{
	int written = 0;
	for (size_t i = 0; i < cm->cfg.n_whcs; i++) {
		if (!s->whc[i])
			continue;
		int r = cm_whc_set_bundle(s->whc[i], bundle, err);
		if (r <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		json_object *out = NULL;
		r = kube_update(cm->c, whc_kind(cm->cfg.whcs[i].kind), NULL, s->whc[i], &out, err);
		if (r < 0)
			return r;
		json_object_put(s->whc[i]);
		s->whc[i] = out;
		written++;
	}
	free(s->published);
	s->published = op_strdup(bundle);
	s->published_bad = false;
	return written;
}

static int new_ca(struct cm *cm, int64_t now, struct pki_pair *ret, struct op_err *err)
{
	int64_t life = cm->cfg.ca_lifetime_s > 0 ? cm->cfg.ca_lifetime_s : 90 * PKI_DAY_S;
	struct pki_ca_req req = {
		.cn = cm->ca_cn,
		.ou = cm->cfg.ns,
		.now = now,
		.lifetime_s = life,
	};
	return pki_ca_create(&req, ret, err);
}

static void leaf_want(const struct cm *cm, struct pki_leaf_req *want)
{
	*want = (struct pki_leaf_req){
		.cn = cm->leaf_cn,
		.sans = (const char *const *)cm->sans,
		.n_sans = 4,
		.usage = PKI_USAGE_SERVER,
		.lifetime_s = cm->cfg.leaf_lifetime_s > 0 ? cm->cfg.leaf_lifetime_s : 90 * PKI_DAY_S,
	};
}

/* --------------------------------------------------------------- the loop */

struct cm_action_info {
	const char *event_reason;
	const char *msg;
};

static const struct cm_action_info action_info[] = {
	[PKI_ROT_NOTHING] = { NULL, NULL },
	[PKI_ROT_CREATE_CA] = { "CACreated", "created the operator CA" },
	[PKI_ROT_PUBLISH_BUNDLE] = { "CABundlePublished",
				     "published the CA bundle to the webhook configurations" },
	[PKI_ROT_ISSUE_LEAF] = { "CertificateIssued", "issued the serving certificate" },
	[PKI_ROT_ISSUE_NEXT_CA] = { "NextCACreated", "created the next CA (rotation started)" },
	[PKI_ROT_PROMOTE_NEXT_CA] = { "CAPromoted", "the next CA is now the signing CA" },
	[PKI_ROT_DROP_OLD_CA] = { "OldCADropped",
				  "dropped CAs no longer needed from the CA bundle" },
};

/* Executes one step. *ret_settle: the round must end here. */
static int execute(struct cm *cm, struct cm_state *s, const struct pki_rotation_step *st,
		   int64_t now, bool *ret_settle, struct op_err *err)
{
	struct pki_pair p = { 0 };
	int r = 0;
	bool leaf_served = s->leaf.cert_pem != NULL;
	*ret_settle = false;
	switch (st->action) {
	case PKI_ROT_NOTHING:
		return 0;
	case PKI_ROT_CREATE_CA:
	case PKI_ROT_ISSUE_NEXT_CA:
		r = new_ca(cm, now, &p, err);
		if (r < 0)
			return r;
		if (st->action == PKI_ROT_CREATE_CA) {
			pki_pair_done(&s->ca);
			pki_pair_done(&s->next);
			s->ca = p;
		} else {
			pki_pair_done(&s->next);
			s->next = p;
		}
		return write_ca_secret(cm, s, err);
	case PKI_ROT_PROMOTE_NEXT_CA:
		pki_pair_done(&s->ca);
		s->ca = s->next;
		s->next = (struct pki_pair){ 0 };
		return write_ca_secret(cm, s, err);
	case PKI_ROT_PUBLISH_BUNDLE:
	case PKI_ROT_DROP_OLD_CA: {
		_cleanup_free_ char *before = s->published ? op_strdup(s->published) : NULL;
		r = publish(cm, s, st->bundle_pem ? st->bundle_pem : "", err);
		if (r > 0)
			cm_settle_published(&cm->settle, before, s->published, leaf_served, now);
		*ret_settle = r > 0 && st->action == PKI_ROT_PUBLISH_BUNDLE && leaf_served;
		return r < 0 ? r : 0;
	}
	case PKI_ROT_ISSUE_LEAF: {
		struct pki_leaf_req req;
		leaf_want(cm, &req);
		req.now = now;
		r = pki_leaf_issue(&s->ca, &req, &p, err);
		if (r < 0)
			return r;
		pki_pair_done(&s->leaf);
		s->leaf = p;
		*ret_settle = true;
		r = write_tls_secret(cm, s, err);
		if (r >= 0)
			cm_settle_issued(&cm->settle, s->leaf.cert_pem, now);
		return r;
	}
	}
	return op_err_set(err, -EINVAL, "unknown rotation action %d", (int)st->action);
}

static void report(struct cm *cm, struct cm_state *s, const struct pki_rotation_step *st)
{
	const struct cm_action_info *ai = &action_info[st->action];
	const char *reason = st->reason ? pki_renew_reason_str(st->reason) : "";
	bool leaf = st->action == PKI_ROT_ISSUE_LEAF;
	char msg[256];
	snprintf(msg, sizeof(msg), "%s%s%s", ai->msg, *reason ? ": " : "", reason);
	op_log_info("certificate manager: action", "action", pki_rot_action_str(st->action),
		    "reason", reason, "secret", leaf ? cm->cfg.tls_secret : cm->cfg.ca_secret,
		    "namespace", cm->cfg.ns);
	emit(cm, leaf ? s->tls_obj : s->ca_obj, KUBE_EVENT_NORMAL, ai->event_reason, msg);
}

int cm_sync(struct cm *cm, int64_t now, unsigned *ret_next_s, struct op_err *err)
{
	_cleanup_(cm_state_done) struct cm_state s = { 0 };
	int r = read_state(cm, &s, err);
	if (r < 0)
		return op_err_prefix(err, "certificate manager: reading state");
	struct pki_leaf_req want;
	leaf_want(cm, &want);
	double f = cm->cfg.renew_fraction;
	struct pki_rotation_policy pol = {
		.ca_renew_fraction = f,
		.leaf_renew_fraction = f,
		.want = &want,
		.ca_lifetime_s = cm->cfg.ca_lifetime_s > 0 ? cm->cfg.ca_lifetime_s : 90 * PKI_DAY_S,
		.leaf_lifetime_s = want.lifetime_s,
	};
	cm_settle_observe(&cm->settle, s.published_bad ? NULL : s.published, s.leaf.cert_pem,
			  now);
	int actions = 0;
	bool settle = false;
	int64_t hold = 0; /* a settle pause still runs: wait until then */
	for (unsigned i = 0; i < CM_MAX_STEPS && !settle; i++) {
		struct pki_rotation_input in = {
			.ca_pem = s.ca.cert_pem,
			.next_ca_pem = s.next.cert_pem,
			.leaf_pem = s.leaf.cert_pem,
			.bundle_pem = s.published_bad ? "garbage" : s.published,
			.now = now,
		};
		_cleanup_(pki_rotation_step_done) struct pki_rotation_step st = { 0 };
		r = pki_rotation_next(&in, &pol, &st, err);
		if (r < 0)
			return r;
		if (st.action == PKI_ROT_NOTHING)
			break;
		if (!s.published && st.action == PKI_ROT_PUBLISH_BUNDLE) {
			s.published = op_strdup(st.bundle_pem ? st.bundle_pem : "");
			continue; /* nobody to publish to */
		}
		hold = cm_settle_hold(&cm->settle, st.action,
				      st.action == PKI_ROT_PROMOTE_NEXT_CA ? s.next.cert_pem
									   : s.ca.cert_pem,
				      now);
		if (hold) {
			op_log_debug("certificate manager: settling", "action",
				     pki_rot_action_str(st.action));
			break;
		}
		r = execute(cm, &s, &st, now, &settle, err);
		if (r < 0)
			return op_err_prefix(err, "certificate manager: %s",
					     pki_rot_action_str(st.action));
		actions++;
		report(cm, &s, &st);
	}
	/* Every configuration carries exactly the agreed bundle (a webhook
	 * added by an upgrade, or one holding an extra CA, is brought in line). */
	if (!settle && !hold && s.published && *s.published && !s.published_bad) {
		_cleanup_free_ char *pub = op_strdup(s.published);
		for (size_t i = 0; i < cm->cfg.n_whcs; i++) {
			if (!s.whc[i])
				continue;
			_cleanup_(op_json_putp) json_object *copy = NULL;
			if (json_object_deep_copy(s.whc[i], &copy, NULL) < 0)
				return op_err_set(err, -ENOMEM, "cannot copy a webhook configuration");
			r = cm_whc_set_bundle(copy, pub, err);
			if (r < 0)
				return r;
			if (r == 0)
				continue;
			r = publish(cm, &s, pub, err);
			if (r < 0)
				return op_err_prefix(err, "certificate manager: aligning caBundles");
			actions++;
			op_log_info("certificate manager: action", "action", "align-bundle", "config",
				    cm->cfg.whcs[i].name);
			break;
		}
	}
	if (ret_next_s)
		*ret_next_s = hold	? (unsigned)(hold - now)
			      : settle ? cm->settle.settle_s + 1 /* see certmgr/internal.h */
				       : 0;
	return actions;
}

/* ------------------------------------------------------------- lifecycle */

int cm_new(struct kube_client *c, const struct cm_config *cfg, struct cm **ret_cm,
	   struct op_err *err)
{
	if (!c || !cfg || !cfg->ns || !cfg->ca_secret || !cfg->tls_secret || !cfg->service)
		return op_err_set(err, -EINVAL,
				  "certificate manager: namespace, CA Secret, serving Secret and "
				  "Service names are required");
	if ((cfg->ca_lifetime_s && cfg->ca_lifetime_s < CM_MIN_LIFETIME_S) ||
	    (cfg->leaf_lifetime_s && cfg->leaf_lifetime_s < CM_MIN_LIFETIME_S))
		return op_err_set(err, -EINVAL,
				  "certificate manager: lifetimes must be at least %d s (notBefore "
				  "is back-dated %d s)",
				  CM_MIN_LIFETIME_S, PKI_BACKDATE_S);
	/* Usable time after issuance (lifetime - back-dating) must exceed the renewal
	 * threshold, or every round would renew at once. */
	double f = cfg->renew_fraction > 0 && cfg->renew_fraction < 1 ? cfg->renew_fraction
								      : PKI_RENEW_FRACTION_DEFAULT;
	const int64_t lives[] = { cfg->ca_lifetime_s, cfg->leaf_lifetime_s };
	for (size_t i = 0; i < OP_ARRAY_SIZE(lives); i++)
		if (lives[i] && (double)(lives[i] - PKI_BACKDATE_S) <= f * (double)lives[i] + 10)
			return op_err_set(err, -EINVAL,
					  "certificate manager: a %lld s lifetime would be renewed as "
					  "soon as issued (%d s back-dating, renewal at %.2f of the "
					  "lifetime left)",
					  (long long)lives[i], PKI_BACKDATE_S, f);
	if (cfg->n_whcs > CM_MAX_WEBHOOK_CONFIGS)
		return op_err_set(err, -EINVAL, "certificate manager: at most %u webhook configurations",
				  CM_MAX_WEBHOOK_CONFIGS);
	for (size_t i = 0; i < cfg->n_whcs; i++)
		if (!cfg->whcs[i].name || !*cfg->whcs[i].name)
			return op_err_set(err, -EINVAL,
					  "certificate manager: webhook configuration %zu has no name", i);
	struct cm *cm = op_calloc(1, sizeof(*cm));
	cm->c = c;
	cm->cfg = *cfg;
	cm_settle_init(&cm->settle, cfg->settle_s ? cfg->settle_s : CM_SETTLE_DEFAULT_S);
	cm_sans(cfg->service, cfg->ns, cm->sans);
	cm->leaf_cn = op_strdup(cm->sans[2]);
	cm->ca_cn = op_asprintf("%s-ca", cfg->service);
	*ret_cm = cm;
	return 0;
}

void cm_free(struct cm *cm)
{
	if (!cm)
		return;
	cm_sans_done(cm->sans);
	free(cm->leaf_cn);
	free(cm->ca_cn);
	free(cm);
}
