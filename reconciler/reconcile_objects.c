/* reconciler/reconcile_objects.c - per-Cluster PKI, user Secrets, RBAC and
 * Services (steps "createPostgresClusterObjects" of runtime.md §4.1).
 *
 * Every ensure_* returns <0 on error, 0 to go on, 1 to stop this reconcile
 * and look again later (something we just created is not in the cache yet).
 * Existing user data is never overwritten: a Secret we cannot parse is an
 * error for a human, not something to regenerate. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "api/names.h"
#include "api/timestamp.h"
#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "reconciler/internal.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

/* --------------------------------------------------------------- PKI */

/* The Secrets cache keeps no data (controller.c): a Secret's contents are read
 * (rc_secret_full) only when the memo of what was learnt from it (secrets.c)
 * does not cover its resourceVersion, and what is written is remembered under
 * the resourceVersion the API server answered. */

static void add_expiration(struct rc_run *r, const char *secret, int64_t not_after)
{
	_cleanup_free_ char *t = api_time_rfc3339(not_after);
	size_t n = r->want.n_certs;
	rc_strv_push(&r->want.cert_names, &n, secret);
	rc_strv_push(&r->want.cert_expirations, &r->want.n_certs, t);
}

static void reset_expirations(struct rc_status *s)
{
	for (size_t i = 0; i < s->n_certs; i++) {
		free(s->cert_names[i]);
		free(s->cert_expirations[i]);
	}
	free(s->cert_names);
	free(s->cert_expirations);
	s->cert_names = s->cert_expirations = NULL;
	s->n_certs = 0;
}

static char *rv_of(json_object *answer)
{
	const char *rv = answer ? kube_obj_resource_version(answer) : NULL;
	return rv ? op_strdup(rv) : NULL;
}

/* PUTs `fresh` (borrowed) over the Secret at resourceVersion rv; *ret_rv:
 * owned, the one it has now (NULL when the answer has none). */
static int replace_secret(struct rc_run *r, const char *rv, json_object *fresh, char **ret_rv)
{
	if (rv)
		op_jsets(op_jchild(fresh, "metadata"), "resourceVersion", rv);
	rc_adopt(r->c, fresh);
	json_object *out = NULL;
	int ret = kube_update(r->ctl->kc, KUBE_SECRETS, r->ns, fresh, &out, r->err);
	if (ret == 0)
		*ret_rv = rv_of(out);
	if (out)
		json_object_put(out);
	return ret;
}

/* POSTs `fresh` (borrowed): 1 created (*ret_rv: owned, its resourceVersion),
 * 0 it exists and is not cached yet, <0 error. */
static int create_secret(struct rc_run *r, json_object *fresh, char **ret_rv)
{
	rc_adopt(r->c, fresh);
	return rc_create_rv(r, KUBE_SECRETS, fresh, ret_rv);
}

/* The data of Secret sname in kind's layout: 0, -ENOENT when it is gone
 * since the cache saw it (a look again in 1 s is asked for), or an error in
 * r->err naming the Secret. */
static int read_secret(struct rc_run *r, enum pki_secret_kind kind, const char *sname,
		       struct pki_secret_data *d)
{
	json_object *full = NULL;
	int ret = rc_secret_full(r, sname, &full);
	if (ret == -ENOENT) {
		rc_requeue(r, 1000);
		return ret;
	}
	if (ret == 0)
		ret = pki_secret_parse(kind, full, d, r->err);
	return ret < 0 ? op_err_prefix(r->err, "secret %s", sname) : 0;
}

static int ensure_ca(struct rc_run *r)
{
	_cleanup_free_ char *sname = api_secret_name(r->name, API_SECRET_CA);
	json_object *cur = rc_cache_get(r->ctl, RC_INF_SECRETS, r->ns, sname);
	struct pki_secret_data d = { 0 };
	_cleanup_free_ char *nrv = NULL;
	int ret = 0;
	if (cur) {
		const char *rv = kube_obj_resource_version(cur);
		if (rc_memo_ca_get(r, rv))
			goto out;
		ret = read_secret(r, PKI_SECRET_CA, sname, &d);
		if (ret == -ENOENT) /* deleted since the cache saw it: stop here */
			ret = 1;
		if (ret != 0)
			goto out;
		enum pki_renew_reason why = pki_needs_renewal(d.crt, NULL, NULL, r->now, 0);
		if (why != PKI_RENEW_NONE && d.key) {
			/* re-sign the same key: leaves issued before keep verifying */
			struct pki_ca_req req = { .cn = r->name, .ou = r->ns, .now = r->now,
						  .key_pem = d.key };
			struct pki_pair np = { 0 };
			json_object *fresh = NULL;
			ret = pki_ca_create(&req, &np, r->err);
			struct pki_secret_data nd = { .crt = np.cert_pem, .key = np.key_pem };
			if (ret == 0)
				ret = pki_secret_build(PKI_SECRET_CA, r->ns, sname, &nd, &fresh, r->err);
			if (ret == 0)
				ret = replace_secret(r, rv, fresh, &nrv);
			if (fresh)
				json_object_put(fresh);
			if (ret == 0) {
				rc_event(r, "Normal", "CertificateRenewed", "renewed CA %s (%s)",
					 sname, pki_renew_reason_str(why));
				free(d.crt);
				d.crt = TAKE_PTR(np.cert_pem);
			}
			pki_pair_done(&np);
			if (ret < 0)
				goto out;
		}
		r->ca.cert_pem = TAKE_PTR(d.crt);
		r->ca.key_pem = TAKE_PTR(d.key);
		ret = rc_memo_ca_set(r, nrv ? nrv : rv);
		goto out;
	}
	struct pki_ca_req req = { .cn = r->name, .ou = r->ns, .now = r->now };
	struct pki_pair np = { 0 };
	json_object *fresh = NULL;
	ret = pki_ca_create(&req, &np, r->err);
	struct pki_secret_data nd = { .crt = np.cert_pem, .key = np.key_pem };
	if (ret == 0)
		ret = pki_secret_build(PKI_SECRET_CA, r->ns, sname, &nd, &fresh, r->err);
	if (ret == 0)
		ret = create_secret(r, fresh, &nrv);
	if (fresh)
		json_object_put(fresh);
	if (ret == 1) { /* created: use it right away */
		r->ca = np;
		np = (struct pki_pair){ 0 };
		rc_event(r, "Normal", "CreatingCA", "created the cluster CA %s", sname);
		ret = rc_memo_ca_set(r, nrv);
	} else if (ret == 0) { /* exists but not cached yet */
		rc_requeue(r, 1000);
		ret = 1;
	}
	pki_pair_done(&np);
out:
	pki_secret_data_done(&d);
	if (cur)
		json_object_put(cur);
	if (ret == 0 && r->ca.cert_pem)
		add_expiration(r, sname, r->ca_not_after);
	return ret;
}

/* <c>-ca-cert: the CA certificate alone, the only CA Secret the instances
 * mount or may read (ca.key stays in <c>-ca for the operator: a pod holding
 * it could mint a pgop-operator or streaming_replica certificate). Created,
 * and replaced when it differs from the CA in use. */
static int ensure_ca_cert(struct rc_run *r)
{
	if (!r->ca.cert_pem)
		return 0;
	_cleanup_free_ char *sname = api_secret_name(r->name, API_SECRET_CA_CERT);
	json_object *cur = rc_cache_get(r->ctl, RC_INF_SECRETS, r->ns, sname);
	const char *rv = cur ? kube_obj_resource_version(cur) : NULL;
	_cleanup_free_ char *nrv = NULL;
	json_object *fresh = NULL;
	int ret = 0;
	if (cur && rc_memo_ca_cert_get(r, rv))
		goto out;
	struct pki_secret_data want = { .crt = r->ca.cert_pem }; /* borrowed */
	ret = pki_secret_build(PKI_SECRET_CA, r->ns, sname, &want, &fresh, r->err);
	if (ret == 0 && cur) {
		json_object *full = NULL;
		ret = rc_secret_full(r, sname, &full);
		if (ret == -ENOENT) { /* deleted since the cache saw it */
			rc_requeue(r, 1000);
			ret = 0;
			goto out;
		}
		if (ret < 0)
			goto out;
		struct pki_secret_data d = { 0 };
		bool same = pki_secret_parse(PKI_SECRET_CA, full, &d, NULL) == 0 && d.crt &&
			    !d.key && strcmp(d.crt, r->ca.cert_pem) == 0;
		pki_secret_data_done(&d);
		if (!same)
			ret = replace_secret(r, rv, fresh, &nrv);
		if (ret == 0)
			rc_memo_ca_cert_set(r, same ? rv : nrv);
	} else if (ret == 0) {
		ret = create_secret(r, fresh, &nrv);
		if (ret == 1)
			rc_memo_ca_cert_set(r, nrv);
		ret = ret < 0 ? ret : 0; /* created, or exists and not cached yet */
	}
out:
	if (fresh)
		json_object_put(fresh);
	if (cur)
		json_object_put(cur);
	return ret < 0 ? op_err_prefix(r->err, "secret %s", sname) : 0;
}

static char **server_sans(struct rc_run *r, size_t *ret_n)
{
	const char *domain = r->ctl->settings.cluster_domain ? r->ctl->settings.cluster_domain
							     : "cluster.local";
	static const enum api_service svcs[] = { API_SVC_RW, API_SVC_R, API_SVC_RO };
	char **v = NULL;
	size_t n = 0;
	for (size_t i = 0; i < OP_ARRAY_SIZE(svcs); i++) {
		_cleanup_free_ char *s = api_service_name(r->name, svcs[i]);
		_cleanup_free_ char *a = op_asprintf("%s.%s", s, r->ns);
		_cleanup_free_ char *b = op_asprintf("%s.%s.svc", s, r->ns);
		_cleanup_free_ char *c = op_asprintf("%s.%s.svc.%s", s, r->ns, domain);
		rc_strv_push(&v, &n, s);
		rc_strv_push(&v, &n, a);
		rc_strv_push(&v, &n, b);
		rc_strv_push(&v, &n, c);
	}
	const struct api_strv *extra = &r->c->spec.certificates.server_alt_dns_names;
	for (size_t i = 0; i < extra->n; i++)
		rc_strv_push(&v, &n, extra->items[i]);
	*ret_n = n;
	return v;
}

static int ensure_leaf(struct rc_run *r, enum api_secret which)
{
	_cleanup_free_ char *sname = api_secret_name(r->name, which);
	_cleanup_free_ char *cn = which == API_SECRET_SERVER
					  ? api_service_name(r->name, API_SVC_RW)
					  : op_strdup("streaming_replica");
	size_t n_sans = 0;
	char **sans = which == API_SECRET_SERVER ? server_sans(r, &n_sans) : NULL;
	struct pki_leaf_req want = {
		.cn = cn, .sans = (const char *const *)sans, .n_sans = n_sans,
		.usage = which == API_SECRET_SERVER ? PKI_USAGE_SERVER : PKI_USAGE_CLIENT,
		.now = r->now,
	};
	const unsigned slot = which == API_SECRET_SERVER ? RC_LEAF_SERVER : RC_LEAF_REPLICATION;
	const uint64_t digest = rc_leaf_want_digest(&want);
	json_object *cur = rc_cache_get(r->ctl, RC_INF_SECRETS, r->ns, sname);
	const char *rv = cur ? kube_obj_resource_version(cur) : NULL;
	struct pki_secret_data d = { 0 };
	struct pki_pair np = { 0 };
	json_object *fresh = NULL;
	_cleanup_free_ char *nrv = NULL;
	enum pki_renew_reason why = PKI_RENEW_MISSING;
	int64_t not_after = 0;
	int ret = 0;
	char *keep = NULL;
	if (cur && rc_memo_leaf_get(r, slot, rv, digest, &not_after)) {
		add_expiration(r, sname, not_after);
		goto out;
	}
	if (cur) {
		ret = read_secret(r, PKI_SECRET_TLS, sname, &d);
		if (ret == -ENOENT) { /* deleted since the cache saw it: created next time */
			ret = 0;
			goto out;
		}
		if (ret < 0)
			goto out;
		why = pki_needs_renewal(d.crt, r->ca.cert_pem, &want, r->now, 0);
		if (why == PKI_RENEW_NONE) {
			ret = rc_memo_leaf_set(r, slot, rv, digest, d.crt, &not_after);
			if (ret == 0)
				add_expiration(r, sname, not_after);
			goto out;
		}
		keep = d.key; /* re-sign the same key, as CNPG does */
	}
	ret = rc_ca_key(r);
	if (ret == -ENOKEY)
		ret = op_err_set(r->err, -EINVAL, "secret %s needs renewal (%s) but the CA has no key",
				 sname, pki_renew_reason_str(why));
	if (ret < 0)
		goto out;
	want.key_pem = keep;
	ret = pki_leaf_issue(&r->ca, &want, &np, r->err);
	struct pki_secret_data nd = { .crt = np.cert_pem, .key = np.key_pem };
	if (ret == 0)
		ret = pki_secret_build(PKI_SECRET_TLS, r->ns, sname, &nd, &fresh, r->err);
	if (ret < 0)
		goto out;
	if (cur) {
		ret = replace_secret(r, rv, fresh, &nrv);
		if (ret == 0)
			rc_event(r, "Normal", "CertificateRenewed", "renewed %s (%s)", sname,
				 pki_renew_reason_str(why));
	} else {
		ret = create_secret(r, fresh, &nrv);
		ret = ret > 0 ? 0 : ret;
	}
	if (ret == 0)
		ret = rc_memo_leaf_set(r, slot, nrv, digest, np.cert_pem, &not_after);
	if (ret == 0)
		add_expiration(r, sname, not_after);
out:
	for (size_t i = 0; i < n_sans; i++)
		free(sans[i]);
	free(sans);
	if (fresh)
		json_object_put(fresh);
	pki_pair_done(&np);
	pki_secret_data_done(&d);
	if (cur)
		json_object_put(cur);
	return ret;
}

int rc_ensure_pki(struct rc_run *r)
{
	reset_expirations(&r->want);
	int ret = ensure_ca(r);
	if (ret == 0)
		ret = ensure_ca_cert(r);
	if (ret != 0)
		return ret;
	ret = ensure_leaf(r, API_SECRET_SERVER);
	if (ret == 0)
		ret = ensure_leaf(r, API_SECRET_REPLICATION);
	return ret;
}

/* Forgets state of another incarnation (a Cluster deleted and re-created). */
static void state_check_uid(struct rc_cluster_state *s, const char *uid)
{
	if (s->uid && uid && strcmp(s->uid, uid) == 0)
		return;
	if (!s->uid && uid) { /* made by this reconcile (secrets.c, contact.c): ours */
		s->uid = op_strdup(uid);
		return;
	}
	free(s->uid);
	s->uid = uid ? op_strdup(uid) : NULL;
	s->rbac_done = false;
	free(s->rbac_rules);
	s->rbac_rules = NULL;
	s->ca_fp[0] = '\0';
	pki_pair_done(&s->client);
	rc_strv_free(&s->sync_set, &s->n_sync_set); /* another Cluster's primary reported it */
	rc_pki_memo_done(&s->pki);
	s->pending_returned_ms = 0;
}

/* ------------------------------------------------ client certificate */

#define CLIENT_CHECK_S 60 /* the operator client certificate is re-verified this often */

int rc_ensure_client_cert(struct rc_run *r)
{
	if (!r->ca.cert_pem || !r->ca_has_key)
		return 0; /* user CA without key: go without a client certificate */
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	state_check_uid(s, r->c->metadata.uid);
	/* the chain check (an ECDSA verification) once a minute, not at every fetch:
	 * the live API fetches each Cluster's instances up to twice a second */
	bool same_ca = s->client.cert_pem && strcmp(s->ca_fp, r->ca_fp) == 0;
	bool checked = same_ca && r->now >= s->client_checked &&
		       r->now - s->client_checked < CLIENT_CHECK_S;
	bool fresh = checked ||
		     (same_ca && pki_needs_renewal(s->client.cert_pem, r->ca.cert_pem, NULL, r->now,
						   0) == PKI_RENEW_NONE);
	if (fresh) {
		if (!checked)
			s->client_checked = r->now;
		r->client.cert_pem = op_strdup(s->client.cert_pem);
		r->client.key_pem = op_strdup(s->client.key_pem);
	}
	pthread_mutex_unlock(&r->ctl->mu);
	if (fresh)
		return 0;
	/* issued without the lock: the CA key may have to be read first */
	struct pki_pair np = { 0 };
	int ret = rc_ca_key(r);
	if (ret == -ENOKEY)
		return 0;
	if (ret == 0)
		ret = rc_operator_client_cert(&r->ca, r->now, &np, r->err);
	if (ret < 0)
		return ret;
	r->client.cert_pem = op_strdup(np.cert_pem);
	r->client.key_pem = op_strdup(np.key_pem);
	pthread_mutex_lock(&r->ctl->mu);
	s = rc_state_get(r->ctl, r->key);
	pki_pair_done(&s->client);
	s->client = np;
	s->client_checked = r->now;
	memcpy(s->ca_fp, r->ca_fp, sizeof(s->ca_fp));
	pthread_mutex_unlock(&r->ctl->mu);
	return 0;
}

/* ------------------------------------------------------ user Secrets */

/* Whether Secret `full` (with its owner references) is controlled by r's Cluster. */
static bool owned_by_cluster(struct rc_run *r, json_object *full)
{
	json_object *refs = op_json_at(full, "metadata.ownerReferences");
	for (size_t i = 0; json_object_is_type(refs, json_type_array) &&
			   i < json_object_array_length(refs);
	     i++) {
		json_object *o = json_object_array_get_idx(refs, i);
		const char *kind = op_json_str_at(o, "kind"), *uid = op_json_str_at(o, "uid");
		if (kind && uid && r->c->metadata.uid && strcmp(kind, "Cluster") == 0 &&
		    strcmp(uid, r->c->metadata.uid) == 0)
			return true;
	}
	return false;
}

/* <c>-superuser when superuser access is off: deleted when this Cluster owns it
 * (pgop generated it, an older pgop always did), as CloudNativePG does; a
 * Secret of that name that someone else made is left alone. */
static int drop_generated_superuser(struct rc_run *r, const char *sname)
{
	json_object *full = NULL;
	int ret = rc_secret_full(r, sname, &full);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0 || !owned_by_cluster(r, full))
		return ret;
	ret = rc_delete(r, KUBE_SECRETS, sname);
	if (ret > 0)
		op_log_info("enableSuperuserAccess is false: deleted the generated superuser secret",
			    "cluster", r->key, "secret", sname);
	return ret < 0 ? ret : 0;
}

int rc_ensure_user_secrets(struct rc_run *r)
{
	static const enum api_secret which[] = { API_SECRET_SUPERUSER, API_SECRET_APP };
	for (size_t i = 0; i < OP_ARRAY_SIZE(which); i++) {
		_cleanup_free_ char *sname = api_secret_name(r->name, which[i]);
		json_object *cur = rc_cache_get(r->ctl, RC_INF_SECRETS, r->ns, sname);
		if (cur)
			json_object_put(cur);
		if (!rc_user_secret_generated(r->c, which[i])) {
			int ret = cur && which[i] == API_SECRET_SUPERUSER &&
						  !r->c->spec.enable_superuser_access
					  ? drop_generated_superuser(r, sname)
					  : 0;
			if (ret < 0)
				return ret;
			continue;
		}
		if (cur)
			continue;
		_cleanup_free_ char *pw = NULL;
		int ret = rc_random_password(64, &pw, r->err);
		json_object *s = NULL;
		if (ret == 0)
			ret = rc_build_basic_auth_secret(r->c, &r->ctl->settings, which[i], pw, &s,
							 r->err);
		if (ret == 0)
			ret = rc_create(r, KUBE_SECRETS, s);
		if (s)
			json_object_put(s);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------- RBAC */

/* The Role's rules follow the Cluster (the plugin's ObjectStores): once
 * created, a Role whose cached rules differ from these is patched. */
static int ensure_role_rules(struct rc_run *r, json_object *role, bool created)
{
	const char *rules = json_object_to_json_string_ext(op_json_at(role, "rules"),
							   JSON_C_TO_STRING_PLAIN);
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	bool same = s->rbac_rules && rules && strcmp(s->rbac_rules, rules) == 0;
	pthread_mutex_unlock(&r->ctl->mu);
	if (same || !rules)
		return 0;
	int ret = 0;
	if (!created) { /* made before (this process's start, or its rules changed) */
		_cleanup_free_ char *patch = op_asprintf("{\"rules\":%s}", rules);
		struct op_err e = OP_ERR_INIT;
		ret = kube_patch(r->ctl->kc, KUBE_ROLES, r->ns, kube_obj_name(role),
				 KUBE_PATCH_MERGE, patch, NULL, &e);
		if (ret < 0)
			return op_err_set(r->err, ret, "updating the instances' Role: %s", e.msg);
	}
	pthread_mutex_lock(&r->ctl->mu);
	s = rc_state_get(r->ctl, r->key);
	free(s->rbac_rules);
	s->rbac_rules = op_strdup(rules);
	pthread_mutex_unlock(&r->ctl->mu);
	return 0;
}

int rc_ensure_rbac(struct rc_run *r)
{
	pthread_mutex_lock(&r->ctl->mu);
	struct rc_cluster_state *s = rc_state_get(r->ctl, r->key);
	state_check_uid(s, r->c->metadata.uid);
	bool done = s->rbac_done;
	pthread_mutex_unlock(&r->ctl->mu);
	json_object *objs[3] = { rc_build_service_account(r->c), rc_build_role(r->c),
				 rc_build_role_binding(r->c) };
	const struct kube_kind *kinds[3] = { KUBE_SERVICEACCOUNTS, KUBE_ROLES, KUBE_ROLEBINDINGS };
	int ret = 0;
	bool role_created = false;
	for (size_t i = 0; i < 3 && !done; i++) {
		if (ret >= 0)
			ret = rc_create(r, kinds[i], objs[i]);
		if (i == 1 && ret > 0)
			role_created = true;
	}
	if (ret >= 0)
		ret = ensure_role_rules(r, objs[1], role_created);
	for (size_t i = 0; i < 3; i++)
		json_object_put(objs[i]);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&r->ctl->mu);
	s = rc_state_get(r->ctl, r->key);
	s->rbac_done = true;
	pthread_mutex_unlock(&r->ctl->mu);
	return 0;
}

/* --------------------------------------------------------- Services */

static int ensure_service(struct rc_run *r, enum api_service svc)
{
	json_object *want = rc_build_service(r->c, svc);
	const char *name = kube_obj_name(want);
	json_object *cur = rc_cache_get(r->ctl, RC_INF_SERVICES, r->ns, name);
	int ret = 0;
	if (!cur) {
		ret = rc_create(r, KUBE_SERVICES, want);
		ret = ret > 0 ? 0 : ret;
		goto out;
	}
	json_object *ws = op_json_at(want, "spec.selector");
	json_object *cs = op_json_at(cur, "spec.selector");
	if (cs && json_object_equal(ws, cs))
		goto out;
	/* merge patch: wanted keys, and null for keys that must go */
	json_object *sel = NULL;
	if (json_object_deep_copy(ws, &sel, NULL) != 0)
		abort();
	if (json_object_is_type(cs, json_type_object)) {
		json_object_object_foreach(cs, k, v)
		{
			(void)v;
			if (!json_object_object_get_ex(ws, k, NULL))
				op_jset(sel, k, NULL);
		}
	}
	json_object *p = op_jobj();
	op_jset(op_jchild(p, "spec"), "selector", sel);
	ret = kube_patch(r->ctl->kc, KUBE_SERVICES, r->ns, name, KUBE_PATCH_MERGE,
			 json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), NULL, r->err);
	json_object_put(p);
	if (ret == 0)
		op_log_info("service selector restored", "cluster", r->key, "service", name);
out:
	if (cur)
		json_object_put(cur);
	json_object_put(want);
	return ret;
}

int rc_ensure_services(struct rc_run *r)
{
	static const enum api_service svcs[] = { API_SVC_RW, API_SVC_RO, API_SVC_R };
	for (size_t i = 0; i < OP_ARRAY_SIZE(svcs); i++) {
		int ret = ensure_service(r, svcs[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}
