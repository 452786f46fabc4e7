/* tests/unit/test_certmgr.c - certmgr/manager.c against a scripted
 * HTTPS API server holding Secrets and webhook configurations in memory (PUT
 * with resourceVersion checks, like the apiserver), with simulated time.
 *
 * The central invariant, checked after every round of long simulated runs:
 * both webhook configurations hold CA certificates only, and they trust the
 * leaf in the serving Secret AND the leaf replicas served until this round
 * (replicas swap after the round that wrote the Secret). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "certmgr/certmgr.h"
#include "pki/pki.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/log.h"
#include "test_kube_server.h"

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#define NS "ns1"
#define SECRETS "/api/v1/namespaces/" NS "/secrets"
#define CA_PATH SECRETS "/pgop-ca"
#define TLS_PATH SECRETS "/pgop-tls"
#define MWC_PATH "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/ns1-r-pgop"
#define VWC_PATH "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/ns1-r-pgop"

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static json_object *store; /* path -> object */
static int rv_counter, writes, whc_writes, events;

static void store_reset(void)
{
	pthread_mutex_lock(&store_lock);
	json_object_put(store);
	store = json_object_new_object();
	rv_counter = writes = whc_writes = events = 0;
	pthread_mutex_unlock(&store_lock);
}

static void set_rv(json_object *o)
{
	char b[16];
	snprintf(b, sizeof(b), "%d", ++rv_counter);
	json_object *md = json_object_object_get(o, "metadata");
	json_object_object_add(md, "resourceVersion", json_object_new_string(b));
}

static void put_obj(const char *path, json_object *o) /* takes o */
{
	set_rv(o);
	json_object_object_add(store, path, o);
}

static void h_store(struct ts *s, const struct ts_req *req, struct ts_resp *r)
{
	pthread_mutex_lock(&store_lock);
	json_object *cur = json_object_object_get(store, req->path);
	if (strstr(req->path, "/events")) {
		events++;
		r->status = !strcmp(req->method, "POST") ? 201 : 200;
		r->body = op_strdup("{\"kind\":\"Event\",\"metadata\":{\"name\":\"e\"}}");
	} else if (!strcmp(req->method, "GET")) {
		if (cur) {
			r->body = op_strdup(json_object_to_json_string(cur));
		} else {
			r->status = 404;
			r->body = ts_status(404, "NotFound", "not found");
		}
	} else if (!strcmp(req->method, "POST") && !strcmp(req->path, SECRETS)) {
		json_object *in = json_tokener_parse(req->body);
		char *path = op_asprintf("%s/%s", SECRETS, op_json_str_at(in, "metadata.name"));
		if (json_object_object_get(store, path)) {
			r->status = 409;
			r->body = ts_status(409, "AlreadyExists", "already exists");
			json_object_put(in);
		} else {
			json_object_object_add(in, "kind", json_object_new_string("Secret"));
			json_object_object_add(in, "apiVersion", json_object_new_string("v1"));
			put_obj(path, in);
			writes++;
			r->status = 201;
			r->body = op_strdup(json_object_to_json_string(in));
		}
		free(path);
	} else if (!strcmp(req->method, "PUT") && cur) {
		json_object *in = json_tokener_parse(req->body);
		const char *rv = op_json_str_at(in, "metadata.resourceVersion");
		const char *cur_rv = op_json_str_at(cur, "metadata.resourceVersion");
		if (!rv || strcmp(rv, cur_rv) != 0) {
			r->status = 409;
			r->body = ts_status(409, "Conflict", "the object has been modified");
			json_object_put(in);
		} else {
			put_obj(req->path, in);
			writes++;
			if (strstr(req->path, "webhookconfigurations"))
				whc_writes++;
			r->body = op_strdup(json_object_to_json_string(in));
		}
	} else {
		r->status = 404;
		r->body = ts_status(404, "NotFound", "no route");
	}
	pthread_mutex_unlock(&store_lock);
}

static json_object *store_get(const char *path)
{
	pthread_mutex_lock(&store_lock);
	json_object *o = NULL, *cur = json_object_object_get(store, path);
	if (cur)
		json_object_deep_copy(cur, &o, NULL);
	pthread_mutex_unlock(&store_lock);
	return o;
}

static void store_del(const char *path)
{
	pthread_mutex_lock(&store_lock);
	json_object_object_del(store, path);
	pthread_mutex_unlock(&store_lock);
}

static int store_counter(int *c)
{
	pthread_mutex_lock(&store_lock);
	int v = *c;
	pthread_mutex_unlock(&store_lock);
	return v;
}

static json_object *whc_new(const char *kind, const char *ca_b64)
{
	json_object *o = json_tokener_parse(
		"{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"metadata\":{\"name\":\"ns1-r-pgop\"},"
		"\"webhooks\":[{\"name\":\"a.pgop.cnpg.io\",\"clientConfig\":{\"service\":{\"name\":\"r-pgop\"}}},"
		"{\"name\":\"b.pgop.cnpg.io\",\"clientConfig\":{\"service\":{\"name\":\"r-pgop\"}}}]}");
	json_object_object_add(o, "kind", json_object_new_string(kind));
	if (ca_b64)
		for (size_t i = 0; i < 2; i++)
			json_object_object_add(
				op_json_at(json_object_array_get_idx(op_json_at(o, "webhooks"), i),
					   "clientConfig"),
				"caBundle", json_object_new_string(ca_b64));
	return o;
}

static void store_whcs(void)
{
	pthread_mutex_lock(&store_lock);
	put_obj(MWC_PATH, whc_new("MutatingWebhookConfiguration", NULL));
	put_obj(VWC_PATH, whc_new("ValidatingWebhookConfiguration", NULL));
	pthread_mutex_unlock(&store_lock);
}

/* ------------------------------------------------------------- fixture */

static const struct cm_whc whcs[] = {
	{ CM_MUTATING, "ns1-r-pgop" },
	{ CM_VALIDATING, "ns1-r-pgop" },
};

struct fx {
	struct ts *s;
	struct kube_client *c;
	struct cm *cm;
};

#define SETTLE_S 3

/* A (new) certificate manager on f's client: a new process, or helm upgrade. */
static void fx_cm(struct fx *f, int64_t ca_life, int64_t leaf_life, size_t n_whcs)
{
	cm_free(f->cm);
	struct cm_config cc = {
		.ns = NS, .ca_secret = "pgop-ca", .tls_secret = "pgop-tls", .service = "r-pgop",
		.whcs = whcs, .n_whcs = n_whcs, .ca_lifetime_s = ca_life,
		.leaf_lifetime_s = leaf_life, .settle_s = SETTLE_S,
	};
	struct op_err err = OP_ERR_INIT;
	f->cm = NULL;
	assert_int_equal(cm_new(f->c, &cc, &f->cm, &err), 0);
}

static struct fx fx_new(int64_t ca_life, int64_t leaf_life, size_t n_whcs)
{
	store_reset();
	struct fx f = { .s = ts_start(h_store, NULL) };
	struct kube_config *cfg = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(kube_config_from_file(ts_kubeconfig(f.s, "tok"), NULL, &cfg, &err), 0);
	struct kube_client_opts o = { .qps = 10000, .burst = 10000 };
	assert_int_equal(kube_client_new(cfg, &o, &f.c, &err), 0);
	fx_cm(&f, ca_life, leaf_life, n_whcs);
	return f;
}

static void fx_done(struct fx *f)
{
	cm_free(f->cm);
	kube_client_free(f->c);
	ts_stop(f->s);
	store_reset();
}

static int sync_at(struct fx *f, int64_t now, unsigned *next)
{
	struct op_err err = OP_ERR_INIT;
	int r = cm_sync(f->cm, now, next, &err);
	if (r < 0)
		fail_msg("cm_sync: %s", err.msg);
	return r;
}

/* Decoded data[key] of a stored Secret (owned) or NULL. */
static char *secret_pem(const char *path, const char *key)
{
	json_object *o = store_get(path);
	if (!o)
		return NULL;
	json_object *v = json_object_object_get(json_object_object_get(o, "data"), key);
	const char *b = v ? json_object_get_string(v) : NULL;
	char *out = NULL;
	if (b)
		assert_int_equal(op_base64_decode_str(b, strlen(b), 0, &out, NULL, NULL), 0);
	json_object_put(o);
	return out;
}

static char *whc_bundle(const char *path)
{
	json_object *o = store_get(path);
	assert_non_null(o);
	char *pem = NULL;
	struct op_err err = OP_ERR_INIT;
	if (cm_whc_bundle(o, &pem, &err) < 0)
		fail_msg("bundle of %s: %s", path, err.msg);
	json_object_put(o);
	return pem;
}

static void fingerprint(const char *pem, char out[PKI_FINGERPRINT_HEX + 1])
{
	struct pki_cert_info info;
	assert_int_equal(pki_cert_info_parse(pem, NULL, &info, NULL), 0);
	memcpy(out, info.fingerprint, PKI_FINGERPRINT_HEX + 1);
	pki_cert_info_done(&info);
}

/* Both bundles CA-only and trusting leaf (if given) at now. */
static void assert_trusted(const char *leaf, int64_t now, const char *what)
{
	static const char *const paths[] = { MWC_PATH, VWC_PATH };
	for (size_t i = 0; i < 2; i++) {
		char *b = whc_bundle(paths[i]);
		if (!pki_bundle_is_ca_only(b))
			fail_msg("%s: bundle of %s is not CA-only", what, paths[i]);
		struct op_err err = OP_ERR_INIT;
		if (leaf && pki_verify(leaf, b, now, PKI_USAGE_SERVER, &err) != 0)
			fail_msg("%s at t=%lld: %s does not trust the leaf: %s", what, (long long)now,
				 paths[i], err.msg);
		free(b);
	}
}

#define T0 ((int64_t)1800000000)

/* ---------------------------------------------------------------- tests */

static void test_install_from_nothing(void **state)
{
	struct fx f = fx_new(0, 0, 2);
	store_whcs();
	pthread_mutex_lock(&store_lock);
	put_obj("/api/v1/namespaces/" NS "/services/r-pgop",
		json_tokener_parse("{\"kind\":\"Service\",\"metadata\":{\"name\":\"r-pgop\","
				   "\"uid\":\"svc-uid-1\"}}"));
	pthread_mutex_unlock(&store_lock);
	unsigned next = 99;
	/* create-ca, publish-bundle (no leaf yet: no settling), issue-leaf */
	assert_int_equal(sync_at(&f, T0, &next), 3);
	assert_int_equal(next, 4); /* settle_s + 1: the second of the write may be nearly over */
	char *leaf = secret_pem(TLS_PATH, "tls.crt"), *key = secret_pem(TLS_PATH, "tls.key");
	char *ca = secret_pem(CA_PATH, "ca.crt"), *tls_ca = secret_pem(TLS_PATH, "ca.crt");
	assert_non_null(leaf);
	assert_non_null(key);
	assert_string_equal(ca, tls_ca);
	assert_int_equal(pki_pair_check(leaf, key, NULL), 0);
	assert_trusted(leaf, T0, "install");
	char *vb = whc_bundle(VWC_PATH);
	assert_string_equal(vb, ca); /* exactly the CA, not the leaf */

	struct pki_cert_info info;
	assert_int_equal(pki_cert_info_parse(leaf, NULL, &info, NULL), 0);
	assert_string_equal(info.subject_cn, "r-pgop.ns1.svc");
	assert_int_equal(info.n_dns, 4);
	const char *want[] = { "r-pgop", "r-pgop.ns1", "r-pgop.ns1.svc", "r-pgop.ns1.svc.cluster.local" };
	for (size_t i = 0; i < 4; i++) {
		bool found = false;
		for (size_t j = 0; j < info.n_dns; j++)
			found |= !strcmp(info.dns[j], want[i]);
		if (!found)
			fail_msg("SAN %s missing", want[i]);
	}
	assert_true(info.usage & PKI_USAGE_SERVER);
	assert_true(info.not_after - T0 > 89 * PKI_DAY_S); /* 90 d default */
	pki_cert_info_done(&info);

	/* both Secrets are owned by the Service (garbage-collected on uninstall) */
	static const char *const secrets[] = { CA_PATH, TLS_PATH };
	for (size_t i = 0; i < 2; i++) {
		json_object *o = store_get(secrets[i]);
		json_object *ref = json_object_array_get_idx(
			op_json_at(o, "metadata.ownerReferences"), 0);
		assert_non_null(ref);
		assert_string_equal(op_json_str_at(ref, "uid"), "svc-uid-1");
		assert_string_equal(op_json_str_at(ref, "kind"), "Service");
		json_object_put(o);
	}

	/* A second round changes nothing and writes nothing. */
	int w = store_counter(&writes);
	assert_int_equal(sync_at(&f, T0 + 60, &next), 0);
	assert_int_equal(next, 0);
	assert_int_equal(store_counter(&writes), w);
	assert_true(store_counter(&events) >= 3);
	free(leaf), free(key), free(ca), free(tls_ca), free(vb);
	fx_done(&f);
}

static void test_leaf_renewal_touches_only_the_tls_secret(void **state)
{
	struct fx f = fx_new(3000, 900, 2);
	store_whcs();
	sync_at(&f, T0, NULL);
	char *leaf1 = secret_pem(TLS_PATH, "tls.crt");
	char *ca1 = secret_pem(CA_PATH, "ca.crt");
	/* notBefore T0-300, notAfter T0+600: 1/3 left at T0+300. */
	assert_int_equal(sync_at(&f, T0 + 290, NULL), 0);
	int whw = store_counter(&whc_writes), w = store_counter(&writes);
	assert_int_equal(sync_at(&f, T0 + 310, NULL), 1);
	char *leaf2 = secret_pem(TLS_PATH, "tls.crt"), *ca2 = secret_pem(CA_PATH, "ca.crt");
	assert_string_not_equal(leaf1, leaf2);
	assert_string_equal(ca1, ca2);
	assert_int_equal(store_counter(&whc_writes), whw);
	assert_int_equal(store_counter(&writes), w + 1);
	assert_trusted(leaf2, T0 + 310, "renewal");
	free(leaf1), free(leaf2), free(ca1), free(ca2);
	fx_done(&f);
}

/* Simulated hours with short lifetimes: at least two CA rotations, every
 * round checked against the invariant, including the leaf replicas still
 * serve (swapped only after the round that wrote the Secret ends). The
 * rounds run every `step` seconds, or after the settle delay when asked. */
static void run_rotation(int64_t ca_life, int64_t leaf_life, int64_t step, int64_t span)
{
	struct fx f = fx_new(ca_life, leaf_life, 2);
	store_whcs();
	char *served = NULL;
	char prev_ca[PKI_FINGERPRINT_HEX + 1] = "";
	int ca_rotations = 0, leaf_issues = 0;
	int64_t t = T0;
	while (t < T0 + span) {
		unsigned next = 0;
		sync_at(&f, t, &next);
		char *leaf = secret_pem(TLS_PATH, "tls.crt");
		char *ca = secret_pem(CA_PATH, "ca.crt");
		assert_non_null(leaf);
		assert_trusted(leaf, t, "stored leaf");
		if (served)
			assert_trusted(served, t, "leaf still served by a replica");
		char fp[PKI_FINGERPRINT_HEX + 1];
		fingerprint(ca, fp);
		if (*prev_ca && strcmp(fp, prev_ca) != 0)
			ca_rotations++;
		memcpy(prev_ca, fp, sizeof(fp));
		if (!served || strcmp(served, leaf) != 0)
			leaf_issues++;
		free(served);
		served = leaf; /* replicas swap now, before the next round */
		free(ca);
		t += next ? (int64_t)next : step;
	}
	if (ca_rotations < 2 || leaf_issues < 4)
		fail_msg("ca rotations %d, leaf issues %d", ca_rotations, leaf_issues);
	free(served);
	fx_done(&f);
}

static void test_rotation_short_lifetimes(void **state)
{
	run_rotation(540, 480, 5, 400); /* the e2e settings: CA rotation ~1 min after issuance */
}

static void test_rotation_long_run(void **state)
{
	run_rotation(3600, 1800, 20, 12000);
}

/* notAfter - notBefore of a PEM certificate. */
static int64_t lifetime(const char *pem)
{
	struct pki_cert_info info;
	assert_int_equal(pki_cert_info_parse(pem, NULL, &info, NULL), 0);
	int64_t l = info.not_after - info.not_before;
	pki_cert_info_done(&info);
	return l;
}

/* The CA fingerprints both bundles hold (at most 8) into fps; the count. */
static size_t bundle_fps(char fps[8][PKI_FINGERPRINT_HEX + 1])
{
	char *v = whc_bundle(VWC_PATH), *m = whc_bundle(MWC_PATH);
	struct pki_bundle bv = PKI_BUNDLE_INIT, bm = PKI_BUNDLE_INIT;
	assert_int_equal(pki_bundle_parse(v, &bv, NULL), 0);
	assert_int_equal(pki_bundle_parse(m, &bm, NULL), 0);
	size_t n = 0;
	for (size_t i = 0; i < bv.n && n < 8; i++)
		if (pki_bundle_contains(&bm, bv.v[i].fingerprint))
			memcpy(fps[n++], bv.v[i].fingerprint, PKI_FINGERPRINT_HEX + 1);
	pki_bundle_done(&bv);
	pki_bundle_done(&bm);
	free(v);
	free(m);
	return n;
}

static bool fp_in(char fps[8][PKI_FINGERPRINT_HEX + 1], size_t n, const char *fp)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(fps[i], fp) == 0)
			return true;
	return false;
}

/* Rounds every second whatever cm_sync asks for (a watch event after each
 * write starts the next round at once: that is how the first pause was
 * skipped). Through two CA rotations: no leaf signed by a CA is stored before
 * SETTLE_S have passed since that CA was published in every caBundle, and no
 * CA leaves a caBundle before SETTLE_S have passed since the leaf was
 * replaced. Fails on the code before the fix (leaf 1 s after the publish). */
static void test_rotation_settle_pauses_hold(void **state)
{
	struct fx f = fx_new(540, 480, 2);
	store_whcs();
	struct { char fp[PKI_FINGERPRINT_HEX + 1]; int64_t t; } pub[16];
	size_t n_pub = 0;
	char prev[8][PKI_FINGERPRINT_HEX + 1], leaf_fp[PKI_FINGERPRINT_HEX + 1] = "";
	size_t n_prev = 0;
	int64_t leaf_t = 0;
	int new_ca_leaves = 0, drops = 0;
	for (int64_t t = T0; t < T0 + 400; t++) {
		sync_at(&f, t, NULL);
		char now_fps[8][PKI_FINGERPRINT_HEX + 1];
		size_t n_now = bundle_fps(now_fps);
		for (size_t i = 0; i < n_now; i++) { /* first seen in both bundles */
			bool known = false;
			for (size_t j = 0; j < n_pub; j++)
				known |= strcmp(pub[j].fp, now_fps[i]) == 0;
			if (!known && n_pub < 16) {
				memcpy(pub[n_pub].fp, now_fps[i], PKI_FINGERPRINT_HEX + 1);
				pub[n_pub++].t = t;
			}
		}
		for (size_t i = 0; i < n_prev; i++) { /* a CA dropped */
			if (fp_in(now_fps, n_now, prev[i]))
				continue;
			if (t - leaf_t < SETTLE_S)
				fail_msg("t=%lld: a CA was dropped %lld s after the leaf was replaced",
					 (long long)(t - T0), (long long)(t - leaf_t));
			drops++;
		}
		char *leaf = secret_pem(TLS_PATH, "tls.crt"), *ca = secret_pem(TLS_PATH, "ca.crt");
		char fp[PKI_FINGERPRINT_HEX + 1], ca_fp[PKI_FINGERPRINT_HEX + 1];
		fingerprint(leaf, fp);
		fingerprint(ca, ca_fp);
		if (strcmp(fp, leaf_fp) != 0) {
			if (*leaf_fp) { /* not the install: a leaf was served before */
				int64_t pub_t = -1;
				for (size_t j = 0; j < n_pub; j++)
					if (strcmp(pub[j].fp, ca_fp) == 0)
						pub_t = pub[j].t;
				if (pub_t < 0)
					fail_msg("t=%lld: leaf signed by an unpublished CA",
						 (long long)(t - T0));
				if (t - pub_t < SETTLE_S)
					fail_msg("t=%lld: leaf signed by a CA published %lld s before",
						 (long long)(t - T0), (long long)(t - pub_t));
				if (pub_t > T0)
					new_ca_leaves++;
			}
			memcpy(leaf_fp, fp, sizeof(fp));
			leaf_t = t;
		}
		assert_trusted(leaf, t, "stored leaf");
		memcpy(prev, now_fps, sizeof(prev));
		n_prev = n_now;
		free(leaf);
		free(ca);
	}
	if (new_ca_leaves < 2 || drops < 2)
		fail_msg("leaves from a new CA %d, CAs dropped %d", new_ca_leaves, drops);
	fx_done(&f);
}

/* helm upgrade with shorter lifetimes: the next round renews what lives
 * longer than configured (the leaf at once, the CA by a rotation); once
 * settled, both have the new lifetimes. Fails on the code before the fix
 * (nothing happens until the 90-day certificates near expiry). */
static void test_shorter_lifetime_renewed(void **state)
{
	struct fx f = fx_new(0, 0, 2); /* 90 days */
	store_whcs();
	sync_at(&f, T0, NULL);
	char *leaf0 = secret_pem(TLS_PATH, "tls.crt");
	assert_int_equal(lifetime(leaf0), 90 * PKI_DAY_S);
	free(leaf0);
	assert_int_equal(sync_at(&f, T0 + 60, NULL), 0); /* nothing due */

	fx_cm(&f, 3000, 900, 2); /* the upgraded controller */
	int64_t t = T0 + 120;
	int rounds = 0, acted = 0;
	for (; rounds < 30; rounds++) {
		unsigned next = 0;
		int r = sync_at(&f, t, &next);
		if (rounds == 0)
			assert_true(r >= 1); /* the very next check acts */
		acted += r;
		char *leaf = secret_pem(TLS_PATH, "tls.crt");
		assert_trusted(leaf, t, "during the renewal");
		free(leaf);
		if (r == 0 && next == 0)
			break;
		t += next ? next : 1;
	}
	assert_true(acted >= 4); /* next CA, publish, promote, leaf, drop */
	char *leaf = secret_pem(TLS_PATH, "tls.crt"), *ca = secret_pem(CA_PATH, "ca.crt");
	assert_int_equal(lifetime(ca), 3000);
	assert_int_equal(lifetime(leaf), 900);
	char *vb = whc_bundle(VWC_PATH);
	assert_string_equal(vb, ca); /* the 90-day CA is gone from the bundle */
	free(leaf), free(ca), free(vb);
	fx_done(&f);
}

static void test_deleted_secrets_recover(void **state)
{
	struct fx f = fx_new(3000, 900, 2);
	store_whcs();
	sync_at(&f, T0, NULL);
	char *leaf1 = secret_pem(TLS_PATH, "tls.crt");
	char *ca1 = secret_pem(CA_PATH, "ca.crt");

	/* Serving Secret deleted: re-issued from the same CA, bundles untouched. */
	store_del(TLS_PATH);
	int whw = store_counter(&whc_writes);
	assert_int_equal(sync_at(&f, T0 + 10, NULL), 1);
	char *leaf2 = secret_pem(TLS_PATH, "tls.crt");
	assert_non_null(leaf2);
	assert_string_not_equal(leaf1, leaf2);
	assert_int_equal(store_counter(&whc_writes), whw);
	assert_trusted(leaf2, T0 + 10, "tls deleted");
	assert_trusted(leaf1, T0 + 10, "old leaf after tls deleted");

	/* CA Secret deleted: a new CA is published next to the old one (the
	 * served leaf still chains to it), then the leaf is re-issued, then the
	 * old CA goes. Every round keeps the served leaf trusted. */
	store_del(CA_PATH);
	char *served = leaf2;
	int64_t t = T0 + 20;
	for (int i = 0; i < 5; i++) {
		unsigned next = 0;
		sync_at(&f, t, &next);
		char *leaf = secret_pem(TLS_PATH, "tls.crt");
		assert_trusted(served, t, "served leaf after CA deleted");
		assert_trusted(leaf, t, "stored leaf after CA deleted");
		free(served);
		served = leaf;
		t += next ? next : 5;
	}
	char *ca2 = secret_pem(CA_PATH, "ca.crt");
	assert_string_not_equal(ca1, ca2);
	char *vb = whc_bundle(VWC_PATH);
	assert_string_equal(vb, ca2); /* old CA dropped in the end */
	assert_int_equal(sync_at(&f, t, NULL), 0);
	free(served), free(leaf1), free(ca1), free(ca2), free(vb);
	fx_done(&f);
}

static void test_leaf_in_cabundle_is_replaced(void **state)
{
	struct fx f = fx_new(0, 0, 2);
	store_whcs();
	sync_at(&f, T0, NULL);
	char *leaf = secret_pem(TLS_PATH, "tls.crt"), *ca = secret_pem(CA_PATH, "ca.crt");
	/* Someone (an old chart, CNPG #9817) puts leaf + CA into the validating one. */
	char *both = op_asprintf("%s%s", leaf, ca);
	char *b64 = op_base64_encode_str(both, strlen(both), 0);
	pthread_mutex_lock(&store_lock);
	put_obj(VWC_PATH, whc_new("ValidatingWebhookConfiguration", b64));
	pthread_mutex_unlock(&store_lock);
	int whw = store_counter(&whc_writes);
	assert_true(sync_at(&f, T0 + 5, NULL) >= 1);
	assert_int_equal(store_counter(&whc_writes), whw + 1); /* only the broken one */
	char *vb = whc_bundle(VWC_PATH);
	assert_string_equal(vb, ca);
	assert_trusted(leaf, T0 + 5, "after repair");
	free(leaf), free(ca), free(both), free(b64), free(vb);
	fx_done(&f);
}

static void test_missing_configurations(void **state)
{
	/* Configurations not created yet (or none configured): the Secrets are
	 * still made; once they appear, the bundle is published. */
	struct fx f = fx_new(0, 0, 2);
	assert_int_equal(sync_at(&f, T0, NULL), 2); /* create-ca, issue-leaf */
	char *leaf = secret_pem(TLS_PATH, "tls.crt");
	assert_non_null(leaf);
	store_whcs();
	assert_int_equal(sync_at(&f, T0 + 5, NULL), 1);
	assert_trusted(leaf, T0 + 5, "late configurations");
	assert_int_equal(sync_at(&f, T0 + 10, NULL), 0);
	free(leaf);
	fx_done(&f);

	f = fx_new(0, 0, 0);
	assert_int_equal(sync_at(&f, T0, NULL), 2);
	assert_int_equal(sync_at(&f, T0 + 5, NULL), 0);
	fx_done(&f);
}

static void test_api_errors(void **state)
{
	struct fx f = fx_new(0, 0, 2);
	ts_stop(f.s); /* nothing answers */
	f.s = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_true(cm_sync(f.cm, T0, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "certificate manager"));
	cm_free(f.cm);
	kube_client_free(f.c);
	store_reset();

	struct cm *cm = NULL;
	struct cm_config bad = { .ns = NS, .ca_secret = "a", .tls_secret = NULL, .service = "s" };
	assert_int_equal(cm_new((struct kube_client *)&bad, &bad, &cm, &err), -EINVAL);
	assert_null(cm);
	struct cm_config shortlife = { .ns = NS, .ca_secret = "a", .tls_secret = "b",
					   .service = "s", .leaf_lifetime_s = 120 };
	assert_int_equal(cm_new((struct kube_client *)&bad, &shortlife, &cm, &err), -EINVAL);
	assert_null(cm);
	shortlife.leaf_lifetime_s = 450; /* 150 s usable, renewed with 150 s left */
	op_err_clear(&err);
	assert_int_equal(cm_new((struct kube_client *)&bad, &shortlife, &cm, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "renewed as soon as issued"));
}

static void test_whc_bundle_intersection(void **state)
{
	struct pki_pair a = { 0 }, b = { 0 };
	struct pki_ca_req ra = { .cn = "a", .now = T0 }, rb = { .cn = "b", .now = T0 };
	assert_int_equal(pki_ca_create(&ra, &a, NULL), 0);
	assert_int_equal(pki_ca_create(&rb, &b, NULL), 0);
	char *ab = op_asprintf("%s%s", a.cert_pem, b.cert_pem);
	json_object *o = whc_new("ValidatingWebhookConfiguration", NULL);
	char *pem = NULL;
	assert_int_equal(cm_whc_bundle(o, &pem, NULL), 0);
	assert_string_equal(pem, ""); /* no caBundle: trusts nothing */
	free(pem);
	/* set both, then make the second webhook trust only b */
	assert_int_equal(cm_whc_set_bundle(o, ab, NULL), 2);
	assert_int_equal(cm_whc_set_bundle(o, ab, NULL), 0);
	char *b64 = op_base64_encode_str(b.cert_pem, strlen(b.cert_pem), 0);
	json_object_object_add(op_json_at(json_object_array_get_idx(op_json_at(o, "webhooks"), 1),
					  "clientConfig"),
			       "caBundle", json_object_new_string(b64));
	assert_int_equal(cm_whc_bundle(o, &pem, NULL), 0);
	assert_string_equal(pem, b.cert_pem);
	free(pem);
	json_object_object_add(op_json_at(json_object_array_get_idx(op_json_at(o, "webhooks"), 1),
					  "clientConfig"),
			       "caBundle", json_object_new_string("!!notbase64"));
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(cm_whc_bundle(o, &pem, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "webhooks[1]"));
	json_object_put(o);
	free(ab), free(b64);
	pki_pair_done(&a);
	pki_pair_done(&b);
}

static void test_parse_duration_fraction(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} d[] = {
		{ "40", 0, 40 }, { "40s", 0, 40 }, { "2160h", 0, 2160 * 3600 },
		{ "90d", 0, 90 * 86400 }, { "1h30m", 0, 5400 }, { "", -EINVAL, 0 },
		{ "h", -EINVAL, 0 }, { "10x", -EINVAL, 0 }, { "-5s", -EINVAL, 0 },
		{ "0", -ERANGE, 0 }, { "999999999999d", -ERANGE, 0 }, { "5 s", -EINVAL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(d); i++) {
		int64_t v = -1;
		int rc = cm_parse_duration(d[i].in, &v, NULL);
		if (rc != d[i].rc || (rc == 0 && v != d[i].want))
			fail_msg("duration '%s': rc %d v %lld", d[i].in, rc, (long long)v);
	}
	static const struct {
		const char *in;
		int rc;
		double want;
	} fr[] = { { "1/3", 0, 1.0 / 3 }, { "0.5", 0, 0.5 }, { "0.33", 0, 0.33 },
		   { "1", -EINVAL, 0 }, { "0", -EINVAL, 0 }, { "1/0", -EINVAL, 0 },
		   { "x", -EINVAL, 0 }, { "1/", -EINVAL, 0 }, { "nan", -EINVAL, 0 } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fr); i++) {
		double v = -1;
		int rc = cm_parse_fraction(fr[i].in, &v, NULL);
		if (rc != fr[i].rc || (rc == 0 && v != fr[i].want))
			fail_msg("fraction '%s': rc %d v %f", fr[i].in, rc, v);
	}
}

int main(void)
{
	op_log_set_level(OP_LOG_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_from_nothing),
		cmocka_unit_test(test_leaf_renewal_touches_only_the_tls_secret),
		cmocka_unit_test(test_rotation_short_lifetimes),
		cmocka_unit_test(test_rotation_long_run),
		cmocka_unit_test(test_rotation_settle_pauses_hold),
		cmocka_unit_test(test_shorter_lifetime_renewed),
		cmocka_unit_test(test_deleted_secrets_recover),
		cmocka_unit_test(test_leaf_in_cabundle_is_replaced),
		cmocka_unit_test(test_missing_configurations),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_whc_bundle_intersection),
		cmocka_unit_test(test_parse_duration_fraction),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	json_object_put(store);
	return rc;
}
