/* tests/unit/test_pki.c - pki/: issuance, inspection, verification (trust
 * list and a real TLS 1.3 mTLS handshake), renewal thresholds, caBundle rules,
 * the CA rotation state machine over simulated years, Secret round trips and
 * malformed PEM. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "pki/pki.h"
#include "support/alloc.h"
#include "support/json.h"

#include <cmocka.h>
/* Memory comes from the module (op_malloc), not cmocka's test allocator. */
#undef malloc
#undef calloc
#undef realloc
#undef free

#define T0 ((int64_t)1800000000) /* 2027-01-15, fixed so tests are deterministic */
#define DAY PKI_DAY_S

static const char *const server_sans[] = { "demo-rw", "demo-rw.ns", "demo-rw.ns.svc",
					   "demo-rw.ns.svc.cluster.local", "10.0.0.7",
					   "2001:db8::1" };

static const struct pki_leaf_req server_req = {
	.cn = "demo-rw",
	.sans = server_sans,
	.n_sans = OP_ARRAY_SIZE(server_sans),
	.usage = PKI_USAGE_SERVER,
	.now = T0,
};

static void make_ca(const char *cn, int64_t now, int64_t life, struct pki_pair *ret)
{
	struct op_err err = OP_ERR_INIT;
	struct pki_ca_req req = { .cn = cn, .ou = "ns", .now = now, .lifetime_s = life };
	int r = pki_ca_create(&req, ret, &err);
	if (r != 0)
		fail_msg("pki_ca_create: %s", err.msg);
}

static void make_leaf(const struct pki_pair *ca, const struct pki_leaf_req *req,
		      struct pki_pair *ret)
{
	struct op_err err = OP_ERR_INIT;
	int r = pki_leaf_issue(ca, req, ret, &err);
	if (r != 0)
		fail_msg("pki_leaf_issue: %s", err.msg);
}

static void crt_load(const char *pem, gnutls_x509_crt_t *ret)
{
	gnutls_datum_t d = { (unsigned char *)(uintptr_t)pem, (unsigned)strlen(pem) };
	assert_int_equal(gnutls_x509_crt_init(ret), 0);
	assert_int_equal(gnutls_x509_crt_import(*ret, &d, GNUTLS_X509_FMT_PEM), 0);
}

/* ------------------------------------------------------------- issuance */

static void test_ca_create(void **state)
{
	struct pki_pair ca = { 0 };
	make_ca("demo", T0, 0, &ca);
	assert_non_null(strstr(ca.key_pem, "-----BEGIN EC PRIVATE KEY-----"));
	assert_int_equal(pki_pair_check(ca.cert_pem, ca.key_pem, NULL), 0);

	struct pki_cert_info info = { 0 };
	assert_int_equal(pki_cert_info_parse(ca.cert_pem, NULL, &info, NULL), 0);
	assert_true(info.is_ca);
	assert_true(info.self_signed);
	assert_string_equal(info.subject_cn, "demo");
	assert_string_equal(info.issuer_cn, "demo");
	assert_int_equal(info.not_before, T0 - PKI_BACKDATE_S);
	assert_int_equal(info.not_after, T0 - PKI_BACKDATE_S + PKI_CA_LIFETIME_DEFAULT_S);
	assert_int_equal(info.n_dns + info.n_ips, 0);
	assert_int_equal(info.usage, 0);
	assert_int_equal(strlen(info.fingerprint), 64);
	assert_int_equal(strlen(info.serial), 32); /* 128-bit serial, top bit clear */

	/* The extensions themselves, read back with gnutls. */
	gnutls_x509_crt_t crt;
	crt_load(ca.cert_pem, &crt);
	unsigned crit = 0, is_ca = 0, ku = 0;
	int pathlen = -2;
	assert_int_equal(gnutls_x509_crt_get_basic_constraints(crt, &crit, &is_ca, &pathlen), 1);
	assert_true(is_ca);
	assert_int_equal(pathlen, 0);
	assert_true(gnutls_x509_crt_get_key_usage(crt, &ku, &crit) >= 0);
	assert_int_equal(ku, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
	unsigned char ski[64];
	size_t ski_len = sizeof(ski);
	assert_int_equal(gnutls_x509_crt_get_subject_key_id(crt, ski, &ski_len, &crit), 0);
	assert_true(ski_len > 0);
	assert_int_equal(gnutls_x509_crt_get_pk_algorithm(crt, NULL), GNUTLS_PK_ECDSA);
	gnutls_ecc_curve_t curve;
	gnutls_datum_t x = { 0 }, y = { 0 };
	assert_int_equal(gnutls_x509_crt_get_pk_ecc_raw(crt, &curve, &x, &y), 0);
	assert_int_equal(curve, GNUTLS_ECC_CURVE_SECP256R1);
	gnutls_free(x.data);
	gnutls_free(y.data);
	char dn[256];
	size_t dn_len = sizeof(dn);
	assert_int_equal(gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATIONAL_UNIT_NAME,
						       0, 0, dn, &dn_len),
			 0);
	assert_string_equal(dn, "ns");
	gnutls_x509_crt_deinit(crt);

	pki_cert_info_done(&info);
	pki_pair_done(&ca);
}

static void test_leaf_server(void **state)
{
	struct pki_pair ca = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_leaf(&ca, &server_req, &leaf);

	struct pki_cert_info info = { 0 };
	assert_int_equal(pki_cert_info_parse(leaf.cert_pem, "tls.crt", &info, NULL), 0);
	assert_false(info.is_ca);
	assert_false(info.self_signed);
	assert_string_equal(info.subject_cn, "demo-rw");
	assert_string_equal(info.issuer_cn, "demo");
	assert_int_equal(info.usage, PKI_USAGE_SERVER);
	assert_int_equal(info.not_before, T0 - PKI_BACKDATE_S);
	assert_int_equal(info.not_after, T0 - PKI_BACKDATE_S + PKI_LEAF_LIFETIME_DEFAULT_S);
	assert_int_equal(info.n_dns, 4);
	assert_string_equal(info.dns[0], "demo-rw");
	assert_string_equal(info.dns[3], "demo-rw.ns.svc.cluster.local");
	assert_int_equal(info.n_ips, 2);
	assert_string_equal(info.ips[0], "10.0.0.7");
	assert_string_equal(info.ips[1], "2001:db8::1");

	/* AKI of the leaf = SKI of the CA; not a CA; serverAuth. */
	gnutls_x509_crt_t c, l;
	crt_load(ca.cert_pem, &c);
	crt_load(leaf.cert_pem, &l);
	unsigned char ski[64], aki[64];
	size_t ski_len = sizeof(ski), aki_len = sizeof(aki);
	unsigned crit = 0, is_ca = 1, ku = 0;
	int pathlen;
	assert_int_equal(gnutls_x509_crt_get_subject_key_id(c, ski, &ski_len, &crit), 0);
	assert_int_equal(gnutls_x509_crt_get_authority_key_id(l, aki, &aki_len, &crit), 0);
	assert_int_equal(ski_len, aki_len);
	assert_memory_equal(ski, aki, ski_len);
	assert_int_equal(gnutls_x509_crt_get_basic_constraints(l, &crit, &is_ca, &pathlen), 0);
	assert_false(is_ca);
	assert_true(gnutls_x509_crt_get_key_usage(l, &ku, &crit) >= 0);
	assert_true(ku & GNUTLS_KEY_DIGITAL_SIGNATURE);
	assert_false(ku & GNUTLS_KEY_KEY_CERT_SIGN);
	gnutls_x509_crt_deinit(c);
	gnutls_x509_crt_deinit(l);

	/* Chain verifies at T0 with serverAuth, not as a client cert. */
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_verify(leaf.cert_pem, ca.cert_pem, T0, PKI_USAGE_SERVER, &err), 0);
	assert_int_equal(pki_verify(leaf.cert_pem, ca.cert_pem, T0, PKI_USAGE_CLIENT, &err),
			 -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "extended key usage"));

	pki_cert_info_done(&info);
	pki_pair_done(&leaf);
	pki_pair_done(&ca);
}

static void test_leaf_client_and_both(void **state)
{
	struct pki_pair ca = { 0 }, cl = { 0 }, both = { 0 };
	make_ca("demo", T0, 0, &ca);
	struct pki_leaf_req req = { .cn = "streaming_replica", .usage = PKI_USAGE_CLIENT, .now = T0 };
	make_leaf(&ca, &req, &cl);
	struct pki_leaf_req req2 = server_req;
	req2.usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT;
	make_leaf(&ca, &req2, &both);

	struct pki_cert_info a = { 0 }, b = { 0 };
	assert_int_equal(pki_cert_info_parse(cl.cert_pem, NULL, &a, NULL), 0);
	assert_string_equal(a.subject_cn, "streaming_replica");
	assert_int_equal(a.usage, PKI_USAGE_CLIENT);
	assert_int_equal(a.n_dns + a.n_ips, 0);
	assert_int_equal(pki_verify(cl.cert_pem, ca.cert_pem, T0, PKI_USAGE_CLIENT, NULL), 0);
	assert_int_equal(pki_verify(cl.cert_pem, ca.cert_pem, T0, PKI_USAGE_SERVER, NULL),
			 -EKEYREJECTED);

	assert_int_equal(pki_cert_info_parse(both.cert_pem, NULL, &b, NULL), 0);
	assert_int_equal(b.usage, PKI_USAGE_SERVER | PKI_USAGE_CLIENT);
	assert_int_equal(pki_verify(both.cert_pem, ca.cert_pem, T0,
				    PKI_USAGE_SERVER | PKI_USAGE_CLIENT, NULL),
			 0);
	/* Random 128-bit serials differ; fingerprints differ; keys differ. */
	assert_string_not_equal(a.serial, b.serial);
	assert_string_not_equal(a.fingerprint, b.fingerprint);
	assert_string_not_equal(a.spki_sha256, b.spki_sha256);

	pki_cert_info_done(&a);
	pki_cert_info_done(&b);
	pki_pair_done(&cl);
	pki_pair_done(&both);
	pki_pair_done(&ca);
}

static void test_leaf_clamped_and_key_reuse(void **state)
{
	struct pki_pair ca = { 0 }, l1 = { 0 }, l2 = { 0 };
	make_ca("short", T0, 10 * DAY, &ca);
	make_leaf(&ca, &server_req, &l1); /* wants 90 days, CA has 10 */
	struct pki_cert_info ci = { 0 }, i1 = { 0 }, i2 = { 0 };
	assert_int_equal(pki_cert_info_parse(ca.cert_pem, NULL, &ci, NULL), 0);
	assert_int_equal(pki_cert_info_parse(l1.cert_pem, NULL, &i1, NULL), 0);
	assert_int_equal(i1.not_after, ci.not_after);

	/* Re-signing the same key (CNPG renewal semantics) keeps the SPKI. */
	struct pki_leaf_req req = server_req;
	req.now = T0 + DAY;
	req.key_pem = l1.key_pem;
	make_leaf(&ca, &req, &l2);
	assert_int_equal(pki_cert_info_parse(l2.cert_pem, NULL, &i2, NULL), 0);
	assert_string_equal(i1.spki_sha256, i2.spki_sha256);
	assert_string_not_equal(i1.serial, i2.serial);
	assert_int_equal(pki_pair_check(l2.cert_pem, l1.key_pem, NULL), 0);
	assert_int_equal(pki_pair_check(l2.cert_pem, ca.key_pem, NULL), -EKEYREJECTED);

	/* An expired CA cannot issue. */
	struct op_err err = OP_ERR_INIT;
	struct pki_pair l3 = { 0 };
	req.now = T0 + 11 * DAY;
	req.key_pem = NULL;
	assert_int_equal(pki_leaf_issue(&ca, &req, &l3, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "expired"));
	assert_null(l3.cert_pem);

	/* A leaf cannot sign. */
	err = OP_ERR_INIT;
	assert_int_equal(pki_leaf_issue(&l1, &server_req, &l3, &err), -EINVAL);
	assert_string_equal(err.msg, "ca.crt: not a CA certificate");
	/* Bad request fields. */
	err = OP_ERR_INIT;
	struct pki_leaf_req bad = server_req;
	bad.usage = 0;
	assert_int_equal(pki_leaf_issue(&ca, &bad, &l3, &err), -EINVAL);
	err = OP_ERR_INIT;
	static const char *const spacey[] = { "a b" };
	bad = server_req;
	bad.sans = spacey;
	bad.n_sans = 1;
	assert_int_equal(pki_leaf_issue(&ca, &bad, &l3, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "leaf.sans"));

	pki_cert_info_done(&ci);
	pki_cert_info_done(&i1);
	pki_cert_info_done(&i2);
	pki_pair_done(&l1);
	pki_pair_done(&l2);
	pki_pair_done(&ca);
}

static void test_pkcs8_key_accepted(void **state)
{
	struct pki_pair ca = { 0 };
	make_ca("demo", T0, 0, &ca);
	gnutls_x509_privkey_t k;
	gnutls_datum_t in = { (unsigned char *)ca.key_pem, (unsigned)strlen(ca.key_pem) };
	gnutls_datum_t out = { 0 };
	assert_int_equal(gnutls_x509_privkey_init(&k), 0);
	assert_int_equal(gnutls_x509_privkey_import(k, &in, GNUTLS_X509_FMT_PEM), 0);
	assert_int_equal(gnutls_x509_privkey_export2_pkcs8(k, GNUTLS_X509_FMT_PEM, NULL,
							   GNUTLS_PKCS_PLAIN, &out),
			 0);
	char *p8 = op_strndup((char *)out.data, out.size);
	gnutls_free(out.data);
	gnutls_x509_privkey_deinit(k);
	assert_non_null(strstr(p8, "-----BEGIN PRIVATE KEY-----"));
	assert_int_equal(pki_pair_check(ca.cert_pem, p8, NULL), 0);
	/* and it can sign */
	struct pki_pair ca8 = { .cert_pem = ca.cert_pem, .key_pem = p8 }, leaf = { 0 };
	make_leaf(&ca8, &server_req, &leaf);
	assert_int_equal(pki_verify(leaf.cert_pem, ca.cert_pem, T0, PKI_USAGE_SERVER, NULL), 0);
	free(p8);
	pki_pair_done(&leaf);
	pki_pair_done(&ca);
}

static void test_client_selfsigned_pin(void **state)
{
	struct pki_pair op = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_client_selfsigned("pgop-controller-7d9f", T0, &op, &err), 0);
	struct pki_cert_info info = { 0 };
	assert_int_equal(pki_cert_info_parse(op.cert_pem, NULL, &info, NULL), 0);
	assert_string_equal(info.subject_cn, "pgop-controller-7d9f");
	assert_false(info.is_ca);
	assert_true(info.self_signed);
	assert_int_equal(info.usage, PKI_USAGE_CLIENT);
	assert_int_equal(info.not_after, PKI_NOT_AFTER_FOREVER);
	assert_int_equal(pki_pair_check(op.cert_pem, op.key_pem, NULL), 0);

	/* spki_sha256 is SHA-256 over the DER SubjectPublicKeyInfo (what Go's
	 * sha256.Sum256(cert.RawSubjectPublicKeyInfo) gives): recompute it. */
	gnutls_x509_crt_t crt;
	crt_load(op.cert_pem, &crt);
	gnutls_pubkey_t pub;
	assert_int_equal(gnutls_pubkey_init(&pub), 0);
	assert_int_equal(gnutls_pubkey_import_x509(pub, crt, 0), 0);
	gnutls_datum_t der = { 0 };
	assert_int_equal(gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &der), 0);
	unsigned char md[32];
	assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, md), 0);
	char hexs[65];
	for (int i = 0; i < 32; i++)
		snprintf(hexs + 2 * i, 3, "%02x", md[i]);
	assert_string_equal(info.spki_sha256, hexs);
	gnutls_free(der.data);
	gnutls_pubkey_deinit(pub);
	gnutls_x509_crt_deinit(crt);

	/* Each start gets a fresh key, so a fresh pin. */
	struct pki_pair op2 = { 0 };
	struct pki_cert_info info2 = { 0 };
	assert_int_equal(pki_client_selfsigned("pgop-controller-7d9f", T0, &op2, NULL), 0);
	assert_int_equal(pki_cert_info_parse(op2.cert_pem, NULL, &info2, NULL), 0);
	assert_string_not_equal(info.spki_sha256, info2.spki_sha256);
	pki_cert_info_done(&info2);
	pki_pair_done(&op2);
	pki_cert_info_done(&info);
	pki_pair_done(&op);
}

/* --------------------------------------------------------- verification */

static void test_verify_rejects(void **state)
{
	struct pki_pair ca = { 0 }, other = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_ca("other", T0, 0, &other);
	make_leaf(&ca, &server_req, &leaf);
	struct op_err err = OP_ERR_INIT;

	assert_int_equal(pki_verify(leaf.cert_pem, other.cert_pem, T0, 0, &err), -EKEYREJECTED);
	assert_non_null(strstr(err.msg, "not trusted"));
	/* A bundle with both trusts it. */
	_cleanup_free_ char *both = op_asprintf("%s%s", other.cert_pem, ca.cert_pem);
	assert_int_equal(pki_verify(leaf.cert_pem, both, T0, 0, NULL), 0);

	struct {
		int64_t at;
		int want;
		const char *msg;
	} rows[] = {
		{ T0 - PKI_BACKDATE_S - 1, -EKEYREJECTED, "leaf certificate not yet valid" },
		{ T0 - PKI_BACKDATE_S, 0, "" },
		{ T0 + 89 * DAY, 0, "" },
		{ T0 - PKI_BACKDATE_S + 90 * DAY, -EKEYREJECTED, "leaf certificate expired" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		err = OP_ERR_INIT;
		assert_int_equal(pki_verify(leaf.cert_pem, ca.cert_pem, rows[i].at, 0, &err),
				 rows[i].want);
		assert_string_equal(err.msg, rows[i].msg);
	}

	/* A CA that has expired no longer vouches for a still-valid leaf. */
	struct pki_pair sca = { 0 }, sleaf = { 0 };
	make_ca("short", T0, 10 * DAY, &sca);
	struct pki_leaf_req r = { .cn = "x", .usage = PKI_USAGE_CLIENT, .now = T0 };
	make_leaf(&sca, &r, &sleaf);
	err = OP_ERR_INIT;
	assert_int_equal(pki_verify(sleaf.cert_pem, sca.cert_pem, T0 + 11 * DAY, 0, &err),
			 -EKEYREJECTED);

	pki_pair_done(&sca);
	pki_pair_done(&sleaf);
	pki_pair_done(&leaf);
	pki_pair_done(&other);
	pki_pair_done(&ca);
}

/* A real TLS 1.3 handshake with mutual authentication over a socketpair,
 * certificates verified by gnutls against the wall clock and the hostname. */
static int handshake(const char *srv_cert, const char *srv_key, const char *srv_trust,
		     const char *cli_cert, const char *cli_key, const char *cli_trust,
		     const char *hostname)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(fcntl(sv[i], F_SETFL, O_NONBLOCK), 0);
	gnutls_certificate_credentials_t sc, cc;
	gnutls_session_t s, c;
	assert_int_equal(gnutls_certificate_allocate_credentials(&sc), 0);
	assert_int_equal(gnutls_certificate_allocate_credentials(&cc), 0);
	gnutls_datum_t d1 = { (unsigned char *)(uintptr_t)srv_cert, (unsigned)strlen(srv_cert) };
	gnutls_datum_t d2 = { (unsigned char *)(uintptr_t)srv_key, (unsigned)strlen(srv_key) };
	gnutls_datum_t d3 = { (unsigned char *)(uintptr_t)srv_trust, (unsigned)strlen(srv_trust) };
	gnutls_datum_t d4 = { (unsigned char *)(uintptr_t)cli_cert, (unsigned)strlen(cli_cert) };
	gnutls_datum_t d5 = { (unsigned char *)(uintptr_t)cli_key, (unsigned)strlen(cli_key) };
	gnutls_datum_t d6 = { (unsigned char *)(uintptr_t)cli_trust, (unsigned)strlen(cli_trust) };
	assert_true(gnutls_certificate_set_x509_key_mem(sc, &d1, &d2, GNUTLS_X509_FMT_PEM) >= 0);
	assert_true(gnutls_certificate_set_x509_trust_mem(sc, &d3, GNUTLS_X509_FMT_PEM) > 0);
	assert_true(gnutls_certificate_set_x509_key_mem(cc, &d4, &d5, GNUTLS_X509_FMT_PEM) >= 0);
	assert_true(gnutls_certificate_set_x509_trust_mem(cc, &d6, GNUTLS_X509_FMT_PEM) > 0);

	assert_int_equal(gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NONBLOCK), 0);
	assert_int_equal(gnutls_init(&c, GNUTLS_CLIENT | GNUTLS_NONBLOCK), 0);
	assert_int_equal(gnutls_priority_set_direct(s, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL), 0);
	assert_int_equal(gnutls_priority_set_direct(c, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL), 0);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, sc);
	gnutls_credentials_set(c, GNUTLS_CRD_CERTIFICATE, cc);
	gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (void *)GNUTLS_KP_TLS_WWW_CLIENT };
	gnutls_session_set_verify_cert2(s, &purpose, 1, 0);
	gnutls_session_set_verify_cert(c, hostname, 0);
	gnutls_server_name_set(c, GNUTLS_NAME_DNS, hostname, strlen(hostname));
	gnutls_transport_set_int(s, sv[0]);
	gnutls_transport_set_int(c, sv[1]);

	int rs = GNUTLS_E_AGAIN, rc = GNUTLS_E_AGAIN;
	for (int i = 0; i < 1000 && (rs != 0 || rc != 0); i++) {
		if (rs != 0) {
			rs = gnutls_handshake(s);
			if (rs < 0 && gnutls_error_is_fatal(rs))
				break;
		}
		if (rc != 0) {
			rc = gnutls_handshake(c);
			if (rc < 0 && gnutls_error_is_fatal(rc))
				break;
		}
	}
	int ok = rs == 0 && rc == 0 && gnutls_protocol_get_version(c) == GNUTLS_TLS1_3;
	gnutls_deinit(s);
	gnutls_deinit(c);
	gnutls_certificate_free_credentials(sc);
	gnutls_certificate_free_credentials(cc);
	close(sv[0]);
	close(sv[1]);
	return ok ? 0 : -1;
}

static void test_tls_handshake(void **state)
{
	int64_t now = (int64_t)time(NULL);
	struct pki_pair ca = { 0 }, other = { 0 }, srv = { 0 }, cli = { 0 };
	make_ca("demo", now, 0, &ca);
	make_ca("other", now, 0, &other);
	struct pki_leaf_req sr = server_req;
	sr.now = now;
	make_leaf(&ca, &sr, &srv);
	struct pki_leaf_req cr = { .cn = "streaming_replica", .usage = PKI_USAGE_CLIENT,
				   .now = now };
	make_leaf(&ca, &cr, &cli);

	assert_int_equal(handshake(srv.cert_pem, srv.key_pem, ca.cert_pem, cli.cert_pem,
				   cli.key_pem, ca.cert_pem, "demo-rw.ns.svc"),
			 0);
	/* hostname not in the SANs */
	assert_int_equal(handshake(srv.cert_pem, srv.key_pem, ca.cert_pem, cli.cert_pem,
				   cli.key_pem, ca.cert_pem, "evil.example"),
			 -1);
	/* client trusts another CA */
	assert_int_equal(handshake(srv.cert_pem, srv.key_pem, ca.cert_pem, cli.cert_pem,
				   cli.key_pem, other.cert_pem, "demo-rw"),
			 -1);
	/* server cert presented as a client cert: no clientAuth */
	assert_int_equal(handshake(srv.cert_pem, srv.key_pem, ca.cert_pem, srv.cert_pem,
				   srv.key_pem, ca.cert_pem, "demo-rw"),
			 -1);
	pki_pair_done(&ca);
	pki_pair_done(&other);
	pki_pair_done(&srv);
	pki_pair_done(&cli);
}

/* ---------------------------------------------------------------- renewal */

static void test_needs_renewal_table(void **state)
{
	struct pki_pair ca = { 0 }, other = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_ca("other", T0, 0, &other);
	make_leaf(&ca, &server_req, &leaf);

	static const char *const reordered[] = { "2001:db8:0:0::1", "DEMO-RW.ns.svc", "demo-rw",
						 "demo-rw.ns.svc.cluster.local", "10.0.0.7",
						 "demo-rw.ns", "demo-rw" };
	static const char *const more[] = { "demo-rw", "demo-rw.ns", "demo-rw.ns.svc",
					    "demo-rw.ns.svc.cluster.local", "10.0.0.7",
					    "2001:db8::1", "demo-r" };
	static const char *const fewer[] = { "demo-rw", "demo-rw.ns", "demo-rw.ns.svc",
					     "demo-rw.ns.svc.cluster.local", "10.0.0.7" };
	static const char *const other_ip[] = { "demo-rw", "demo-rw.ns", "demo-rw.ns.svc",
						"demo-rw.ns.svc.cluster.local", "10.0.0.8",
						"2001:db8::1" };
	struct pki_leaf_req w_same = server_req, w_re = server_req, w_more = server_req,
			    w_fewer = server_req, w_ip = server_req, w_cn = server_req,
			    w_usage = server_req;
	w_re.sans = reordered, w_re.n_sans = OP_ARRAY_SIZE(reordered);
	w_more.sans = more, w_more.n_sans = OP_ARRAY_SIZE(more);
	w_fewer.sans = fewer, w_fewer.n_sans = OP_ARRAY_SIZE(fewer);
	w_ip.sans = other_ip, w_ip.n_sans = OP_ARRAY_SIZE(other_ip);
	w_cn.cn = "demo-ro";
	w_usage.usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT;

	const int64_t nb = T0 - PKI_BACKDATE_S, na = nb + 90 * DAY;
	struct {
		const char *cert;
		const char *ca;
		const struct pki_leaf_req *want;
		int64_t now;
		double fraction;
		enum pki_renew_reason r;
	} rows[] = {
		{ leaf.cert_pem, ca.cert_pem, &w_same, T0, 0, PKI_RENEW_NONE },
		{ NULL, ca.cert_pem, &w_same, T0, 0, PKI_RENEW_MISSING },
		{ "", ca.cert_pem, &w_same, T0, 0, PKI_RENEW_MISSING },
		{ "garbage", ca.cert_pem, &w_same, T0, 0, PKI_RENEW_INVALID },
		{ leaf.cert_pem, ca.cert_pem, &w_same, nb - 1, 0, PKI_RENEW_NOT_YET_VALID },
		{ leaf.cert_pem, ca.cert_pem, &w_same, nb, 0, PKI_RENEW_NONE },
		/* default 1/3: due once less than 30 days remain */
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 30 * DAY, 0, PKI_RENEW_NONE },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 30 * DAY + 1, 0, PKI_RENEW_LIFETIME },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 1, 0, PKI_RENEW_LIFETIME },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na, 0, PKI_RENEW_EXPIRED },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na + 365 * DAY, 0, PKI_RENEW_EXPIRED },
		/* explicit fractions */
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 45 * DAY, 0.5, PKI_RENEW_NONE },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 45 * DAY + 1, 0.5, PKI_RENEW_LIFETIME },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 9 * DAY, 0.1, PKI_RENEW_NONE },
		{ leaf.cert_pem, ca.cert_pem, &w_same, na - 9 * DAY + 1, 0.1, PKI_RENEW_LIFETIME },
		{ leaf.cert_pem, ca.cert_pem, &w_same, T0 + 70 * DAY, 7.0, PKI_RENEW_LIFETIME },
		/* SANs: order, case, duplicates and IPv6 spelling do not matter */
		{ leaf.cert_pem, ca.cert_pem, &w_re, T0, 0, PKI_RENEW_NONE },
		{ leaf.cert_pem, ca.cert_pem, &w_more, T0, 0, PKI_RENEW_SANS },
		{ leaf.cert_pem, ca.cert_pem, &w_fewer, T0, 0, PKI_RENEW_SANS },
		{ leaf.cert_pem, ca.cert_pem, &w_ip, T0, 0, PKI_RENEW_SANS },
		{ leaf.cert_pem, ca.cert_pem, &w_cn, T0, 0, PKI_RENEW_INVALID },
		{ leaf.cert_pem, ca.cert_pem, &w_usage, T0, 0, PKI_RENEW_INVALID },
		/* issuer */
		{ leaf.cert_pem, other.cert_pem, &w_same, T0, 0, PKI_RENEW_ISSUER },
		{ leaf.cert_pem, NULL, NULL, T0, 0, PKI_RENEW_NONE },
		/* a CA on its own */
		{ ca.cert_pem, NULL, NULL, T0 + 200 * DAY, 0, PKI_RENEW_NONE },
		{ ca.cert_pem, NULL, NULL, T0 + 250 * DAY, 0, PKI_RENEW_LIFETIME },
		{ ca.cert_pem, NULL, NULL, T0 + 400 * DAY, 0, PKI_RENEW_EXPIRED },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		enum pki_renew_reason got = pki_needs_renewal(rows[i].cert, rows[i].ca, rows[i].want,
							      rows[i].now, rows[i].fraction);
		if (got != rows[i].r)
			fail_msg("row %zu: got %s, want %s", i, pki_renew_reason_str(got),
				 pki_renew_reason_str(rows[i].r));
	}
	/* pki_renew_at: the first second the rows above say "lifetime" (the
	 * reconciler's memo needs no look before it) */
	struct pki_cert_info li;
	assert_int_equal(pki_cert_info_parse(leaf.cert_pem, NULL, &li, NULL), 0);
	assert_int_equal(pki_renew_at(&li, 0), na - 30 * DAY + 1);
	assert_int_equal(pki_renew_at(&li, 0.5), na - 45 * DAY + 1);
	assert_int_equal(pki_renew_at(&li, 0.1), na - 9 * DAY + 1);
	pki_cert_info_done(&li);
	assert_string_equal(pki_renew_reason_str(PKI_RENEW_SANS), "sans-changed");
	assert_string_equal(pki_renew_reason_str((enum pki_renew_reason)99), "unknown");
	pki_pair_done(&ca);
	pki_pair_done(&other);
	pki_pair_done(&leaf);
}

/* ---------------------------------------------------------------- bundles */

static void test_bundle_rules(void **state)
{
	struct pki_pair a = { 0 }, b = { 0 }, c = { 0 }, leaf = { 0 };
	make_ca("a", T0, 30 * DAY, &a);
	make_ca("b", T0 + DAY, 0, &b);
	make_ca("c", T0 + 2 * DAY, 0, &c);
	make_leaf(&a, &server_req, &leaf);
	struct op_err err = OP_ERR_INIT;

	/* Order-independent, deduplicated rendering. */
	const char *in1[] = { a.cert_pem, b.cert_pem, c.cert_pem };
	const char *in2[] = { c.cert_pem, NULL, a.cert_pem, b.cert_pem, a.cert_pem, c.cert_pem };
	char *r1 = NULL, *r2 = NULL;
	assert_int_equal(pki_bundle_build(in1, 3, &r1, &err), 0);
	assert_int_equal(pki_bundle_build(in2, 6, &r2, &err), 0);
	assert_string_equal(r1, r2);
	assert_true(pki_bundle_is_ca_only(r1));
	assert_ptr_equal(strstr(r1, a.cert_pem), r1); /* oldest first */

	struct pki_bundle bun = PKI_BUNDLE_INIT;
	assert_int_equal(pki_bundle_parse(r1, &bun, &err), 0);
	assert_int_equal(bun.n, 3);
	assert_int_equal(pki_bundle_add(&bun, b.cert_pem, &err), 0); /* duplicate */
	assert_int_equal(bun.n, 3);

	/* Never a leaf. */
	err = OP_ERR_INIT;
	assert_int_equal(pki_bundle_add(&bun, leaf.cert_pem, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a CA"));
	assert_non_null(strstr(err.msg, "CN=demo-rw"));
	assert_int_equal(bun.n, 3);
	char *with_leaf = op_asprintf("%s%s", r1, leaf.cert_pem);
	assert_false(pki_bundle_is_ca_only(with_leaf));
	assert_false(pki_bundle_is_ca_only(leaf.cert_pem));
	assert_false(pki_bundle_is_ca_only(""));
	assert_false(pki_bundle_is_ca_only(NULL));
	assert_false(pki_bundle_is_ca_only("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"));
	struct pki_bundle bad = PKI_BUNDLE_INIT;
	err = OP_ERR_INIT;
	assert_int_equal(pki_bundle_parse(with_leaf, &bad, &err), -EINVAL);
	assert_int_equal(bad.n, 0);
	const char *mixed[] = { a.cert_pem, leaf.cert_pem };
	char *r3 = NULL;
	assert_int_equal(pki_bundle_build(mixed, 2, &r3, NULL), -EINVAL);
	assert_null(r3);

	/* Expiry and removal. */
	struct pki_cert_info ia = { 0 };
	assert_int_equal(pki_cert_info_parse(a.cert_pem, NULL, &ia, NULL), 0);
	assert_int_equal(pki_bundle_drop_expired(&bun, T0 + 10 * DAY), 0);
	assert_int_equal(pki_bundle_drop_expired(&bun, T0 + 31 * DAY), 1);
	assert_false(pki_bundle_contains(&bun, ia.fingerprint));
	assert_int_equal(bun.n, 2);
	assert_int_equal(pki_bundle_remove(&bun, bun.v[0].fingerprint), 1);
	assert_int_equal(pki_bundle_remove(&bun, ia.fingerprint), 0);
	assert_int_equal(bun.n, 1);
	char *r4 = pki_bundle_render(&bun);
	assert_string_equal(r4, c.cert_pem);
	struct pki_bundle empty = PKI_BUNDLE_INIT;
	assert_int_equal(pki_bundle_parse("  \n", &empty, NULL), 0);
	assert_int_equal(empty.n, 0);
	char *r5 = pki_bundle_render(&empty);
	assert_string_equal(r5, "");

	/* Capped size. */
	struct pki_bundle big = PKI_BUNDLE_INIT;
	struct pki_pair x = { 0 };
	make_ca("x", T0, 0, &x);
	for (unsigned i = 0; i < PKI_BUNDLE_MAX_CERTS; i++) {
		/* same key re-signed: a distinct certificate each time */
		struct pki_ca_req req = { .cn = "x", .now = T0 + i, .key_pem = x.key_pem };
		struct pki_pair y = { 0 };
		assert_int_equal(pki_ca_create(&req, &y, NULL), 0);
		assert_int_equal(pki_bundle_add(&big, y.cert_pem, NULL), 1);
		pki_pair_done(&y);
	}
	err = OP_ERR_INIT;
	assert_int_equal(pki_bundle_add(&big, a.cert_pem, &err), -EMSGSIZE);
	assert_int_equal(big.n, PKI_BUNDLE_MAX_CERTS);

	pki_bundle_done(&big);
	pki_pair_done(&x);
	free(r1);
	free(r2);
	free(r4);
	free(r5);
	free(with_leaf);
	pki_cert_info_done(&ia);
	pki_bundle_done(&bun);
	pki_pair_done(&a);
	pki_pair_done(&b);
	pki_pair_done(&c);
	pki_pair_done(&leaf);
}

/* --------------------------------------------------------------- rotation */

struct world {
	struct pki_pair ca, next, leaf;
	char *published;
	int64_t now;
	unsigned counts[PKI_ROT_DROP_OLD_CA + 1];
	char log[4096]; /* compact action trace: one letter per action */
	size_t log_len;
};

static void world_done(struct world *w)
{
	pki_pair_done(&w->ca);
	pki_pair_done(&w->next);
	pki_pair_done(&w->leaf);
	free(w->published);
}

/* The invariant: the published bundle trusts the serving leaf, holds CAs only. */
static void check_invariant(const struct world *w, const char *when)
{
	if (!w->leaf.cert_pem)
		return;
	struct op_err err = OP_ERR_INIT;
	if (!w->published || pki_verify(w->leaf.cert_pem, w->published, w->now, PKI_USAGE_SERVER,
					&err) != 0)
		fail_msg("day %lld %s: published bundle does not trust the serving leaf: %s",
			 (long long)((w->now - T0) / DAY), when, err.msg);
	if (!pki_bundle_is_ca_only(w->published))
		fail_msg("day %lld %s: published bundle holds a non-CA",
			 (long long)((w->now - T0) / DAY), when);
}

static const int64_t CA_LIFE = 360 * DAY;

/* Runs the plan until it says nothing; publish=false simulates a bundle
 * write that never lands. Returns the number of actions. */
static int world_tick(struct world *w, const struct pki_rotation_policy *pol, bool publish)
{
	static const char letter[] = "-CPLNRD";
	for (int i = 0; i < 12; i++) {
		struct pki_rotation_input in = { .ca_pem = w->ca.cert_pem,
						 .next_ca_pem = w->next.cert_pem,
						 .leaf_pem = w->leaf.cert_pem,
						 .bundle_pem = w->published,
						 .now = w->now };
		struct pki_rotation_step s = { 0 };
		struct op_err err = OP_ERR_INIT;
		if (pki_rotation_next(&in, pol, &s, &err) != 0)
			fail_msg("rotation_next: %s", err.msg);
		if (s.action == PKI_ROT_NOTHING)
			return i;
		w->counts[s.action]++;
		if (w->log_len + 1 < sizeof(w->log)) {
			w->log[w->log_len++] = letter[s.action];
			w->log[w->log_len] = '\0';
		}
		struct pki_leaf_req lr = *pol->want;
		lr.now = w->now;
		switch (s.action) {
		case PKI_ROT_CREATE_CA:
			pki_pair_done(&w->ca);
			make_ca("demo", w->now, CA_LIFE, &w->ca);
			break;
		case PKI_ROT_PUBLISH_BUNDLE:
		case PKI_ROT_DROP_OLD_CA:
			assert_true(pki_bundle_is_ca_only(s.bundle_pem));
			if (publish) {
				free(w->published);
				w->published = TAKE_PTR(s.bundle_pem);
			}
			break;
		case PKI_ROT_ISSUE_LEAF:
			pki_pair_done(&w->leaf);
			make_leaf(&w->ca, &lr, &w->leaf);
			break;
		case PKI_ROT_ISSUE_NEXT_CA:
			assert_null(w->next.cert_pem);
			make_ca("demo", w->now, CA_LIFE, &w->next);
			break;
		case PKI_ROT_PROMOTE_NEXT_CA:
			pki_pair_done(&w->ca);
			w->ca = w->next;
			w->next = (struct pki_pair){ 0 };
			break;
		case PKI_ROT_NOTHING:
			break;
		}
		enum pki_rot_action done = s.action;
		pki_rotation_step_done(&s);
		check_invariant(w, pki_rot_action_str(done));
		if (!publish && i > 4)
			return i + 1;
	}
	fail_msg("day %lld: rotation did not settle", (long long)((w->now - T0) / DAY));
	return -1;
}

static void test_rotation_full_cycle(void **state)
{
	struct pki_rotation_policy pol = { .want = &server_req };
	struct world w = { .now = T0 };
	/* Bootstrap: create CA, publish it, then issue the leaf. */
	assert_int_equal(world_tick(&w, &pol, true), 3);
	assert_string_equal(w.log, "CPL");
	assert_true(pki_bundle_is_ca_only(w.published));

	/* Four CA lifetimes, one day at a time. */
	for (int day = 1; day <= 4 * 360; day++) {
		w.now = T0 + (int64_t)day * DAY;
		check_invariant(&w, "before tick");
		world_tick(&w, &pol, true);
		/* Never more than old + current + next in the bundle. */
		struct pki_bundle b = PKI_BUNDLE_INIT;
		assert_int_equal(pki_bundle_parse(w.published, &b, NULL), 0);
		assert_in_range(b.n, 1, 3);
		pki_bundle_done(&b);
		/* The leaf always comes from the current CA once settled. */
		assert_int_equal(pki_needs_renewal(w.leaf.cert_pem, w.ca.cert_pem, &server_req,
						   w.now, 0) == PKI_RENEW_NONE,
				 true);
	}
	/* Exactly one CA was created from scratch; every later CA came through
	 * the overlap: next -> publish -> promote -> re-issue leaf -> drop old. */
	assert_int_equal(w.counts[PKI_ROT_CREATE_CA], 1);
	assert_in_range(w.counts[PKI_ROT_ISSUE_NEXT_CA], 5, 6);
	assert_int_equal(w.counts[PKI_ROT_PROMOTE_NEXT_CA], w.counts[PKI_ROT_ISSUE_NEXT_CA]);
	assert_int_equal(w.counts[PKI_ROT_DROP_OLD_CA], w.counts[PKI_ROT_PROMOTE_NEXT_CA]);
	size_t overlaps = 0;
	for (const char *p = w.log; (p = strstr(p, "NPRLD")); p++)
		overlaps++;
	assert_int_equal(overlaps, w.counts[PKI_ROT_ISSUE_NEXT_CA]);
	/* Leaves renewed at ~2/3 of 90 days, plus once per CA rotation. */
	assert_in_range(w.counts[PKI_ROT_ISSUE_LEAF], 1 + 4 * 360 / 61, 1 + 4 * 360 / 55 + 6);
	world_done(&w);
}

static void test_rotation_waits_for_publish(void **state)
{
	struct pki_rotation_policy pol = { .want = &server_req };
	struct world w = { .now = T0 };
	world_tick(&w, &pol, true);
	/* Day 230: the leaf has expired (re-issued), the CA is not due yet. */
	w.now = T0 + 230 * DAY;
	w.log_len = 0;
	world_tick(&w, &pol, true);
	assert_string_equal(w.log, "L");
	/* Day 250: less than 1/3 of the CA's 360 days left. */
	w.now = T0 + 250 * DAY;
	w.log_len = 0;
	world_tick(&w, &pol, false); /* the bundle write never lands */
	/* Only: issue next CA, then keep asking to publish; never promote or
	 * issue a leaf from a CA clients do not trust yet. */
	assert_int_equal(w.log[0], 'N');
	for (size_t i = 1; i < w.log_len; i++)
		assert_int_equal(w.log[i], 'P');
	check_invariant(&w, "unpublished");
	/* Once it lands the rotation completes. */
	w.log_len = 0;
	world_tick(&w, &pol, true);
	assert_string_equal(w.log, "PRLD");
	check_invariant(&w, "after");
	world_done(&w);
}

static void test_rotation_repairs_leaf_in_bundle(void **state)
{
	/* The CNPG #9817 state: caBundle holds the serving leaf. */
	struct pki_pair ca = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_leaf(&ca, &server_req, &leaf);
	struct pki_rotation_input in = { .ca_pem = ca.cert_pem, .leaf_pem = leaf.cert_pem,
					 .bundle_pem = leaf.cert_pem, .now = T0 };
	struct pki_rotation_policy pol = { .want = &server_req };
	struct pki_rotation_step s = { 0 };
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_PUBLISH_BUNDLE);
	assert_string_equal(s.bundle_pem, ca.cert_pem);
	pki_rotation_step_done(&s);

	/* Leaf and CA mixed: the CA survives, the leaf goes. */
	char *mixed = op_asprintf("%s%s", leaf.cert_pem, ca.cert_pem);
	in.bundle_pem = mixed;
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_PUBLISH_BUNDLE);
	assert_string_equal(s.bundle_pem, ca.cert_pem);
	pki_rotation_step_done(&s);

	/* Correct bundle, healthy leaf: nothing. SANs changed: re-issue. */
	in.bundle_pem = ca.cert_pem;
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_NOTHING);
	static const char *const sans2[] = { "demo-rw", "demo-r" };
	struct pki_leaf_req want2 = server_req;
	want2.sans = sans2;
	want2.n_sans = 2;
	pol.want = &want2;
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_ISSUE_LEAF);
	assert_int_equal(s.reason, PKI_RENEW_SANS);

	/* Garbage CA with a valid pending one: promote; none at all: create. */
	in.ca_pem = "garbage";
	in.next_ca_pem = ca.cert_pem;
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_PROMOTE_NEXT_CA);
	in.next_ca_pem = leaf.cert_pem; /* a leaf is not a CA */
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_CREATE_CA);
	assert_int_equal(s.reason, PKI_RENEW_INVALID);
	assert_string_equal(pki_rot_action_str(PKI_ROT_DROP_OLD_CA), "drop-old-ca");

	free(mixed);
	pki_pair_done(&ca);
	pki_pair_done(&leaf);
}

static void test_rotation_other_leaves_keep_ca(void **state)
{
	/* After promotion the serving leaf is re-issued, but a client cert of
	 * the old CA is still in use: the old CA must stay in the bundle. */
	struct pki_pair old = { 0 }, cur = { 0 }, srv = { 0 }, cli = { 0 };
	make_ca("demo", T0, CA_LIFE, &old);
	make_ca("demo", T0 + 250 * DAY, CA_LIFE, &cur);
	struct pki_leaf_req cr = { .cn = "streaming_replica", .usage = PKI_USAGE_CLIENT,
				   .now = T0 + 200 * DAY };
	make_leaf(&old, &cr, &cli);
	struct pki_leaf_req sr = server_req;
	sr.now = T0 + 251 * DAY;
	make_leaf(&cur, &sr, &srv);
	const char *both[] = { old.cert_pem, cur.cert_pem };
	char *bundle = NULL;
	assert_int_equal(pki_bundle_build(both, 2, &bundle, NULL), 0);
	const char *others[] = { cli.cert_pem };
	struct pki_rotation_input in = { .ca_pem = cur.cert_pem, .leaf_pem = srv.cert_pem,
					 .bundle_pem = bundle, .other_leaves = others,
					 .n_other_leaves = 1, .now = T0 + 252 * DAY };
	struct pki_rotation_policy pol = { .want = &server_req };
	struct pki_rotation_step s = { 0 };
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_NOTHING);
	in.n_other_leaves = 0;
	assert_int_equal(pki_rotation_next(&in, &pol, &s, NULL), 0);
	assert_int_equal(s.action, PKI_ROT_DROP_OLD_CA);
	assert_string_equal(s.bundle_pem, cur.cert_pem);
	pki_rotation_step_done(&s);
	free(bundle);
	pki_pair_done(&old);
	pki_pair_done(&cur);
	pki_pair_done(&srv);
	pki_pair_done(&cli);
}

/* ---------------------------------------------------------------- Secrets */

static json_object *reparse(json_object *o)
{
	const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	json_object *back = NULL;
	assert_int_equal(op_json_parse(txt, strlen(txt), 0, &back, NULL), 0);
	return back;
}

static void test_secret_round_trip(void **state)
{
	struct pki_pair ca = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_leaf(&ca, &server_req, &leaf);
	struct pki_secret_data d = { .crt = leaf.cert_pem, .key = leaf.key_pem, .ca = ca.cert_pem };
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_secret_build(PKI_SECRET_TLS, "ns", "demo-server", &d, &o, &err), 0);
	json_object *back = reparse(o);
	assert_string_equal(op_json_str_at(back, "type"), "kubernetes.io/tls");
	assert_string_equal(op_json_str_at(back, "kind"), "Secret");
	assert_string_equal(op_json_str_at(back, "metadata.name"), "demo-server");
	assert_string_equal(op_json_str_at(back, "metadata.namespace"), "ns");
	const char *b64 = op_json_str_at(back, "data.tls\\.crt");
	json_object *data = op_json_at(back, "data");
	json_object *v = NULL;
	assert_true(json_object_object_get_ex(data, "tls.crt", &v));
	b64 = json_object_get_string(v);
	assert_int_equal(strncmp(b64, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", 36), 0);
	assert_null(strchr(b64, '\n'));

	struct pki_secret_data out = { 0 };
	assert_int_equal(pki_secret_parse(PKI_SECRET_TLS, back, &out, &err), 0);
	assert_string_equal(out.crt, leaf.cert_pem);
	assert_string_equal(out.key, leaf.key_pem);
	assert_string_equal(out.ca, ca.cert_pem);
	pki_secret_data_done(&out);
	json_object_put(o);
	json_object_put(back);

	/* CA Secret: Opaque, ca.crt + ca.key, no separate CA entry. */
	struct pki_secret_data cd = { .crt = ca.cert_pem, .key = ca.key_pem };
	assert_int_equal(pki_secret_build(PKI_SECRET_CA, "ns", "demo-ca", &cd, &o, &err), 0);
	assert_string_equal(op_json_str_at(o, "type"), "Opaque");
	assert_true(json_object_object_get_ex(json_object_object_get(o, "data"), "ca.key", &v));
	assert_int_equal(pki_secret_parse(PKI_SECRET_CA, o, &out, &err), 0);
	assert_string_equal(out.crt, ca.cert_pem);
	assert_string_equal(out.key, ca.key_pem);
	assert_null(out.ca);
	pki_secret_data_done(&out);
	/* A TLS Secret is not a CA Secret. */
	json_object_put(o);
	cd.crt = leaf.cert_pem;
	cd.key = leaf.key_pem;
	assert_int_equal(pki_secret_build(PKI_SECRET_CA, "ns", "demo-ca", &cd, &o, &err), 0);
	err = OP_ERR_INIT;
	assert_int_equal(pki_secret_parse(PKI_SECRET_CA, o, &out, &err), -EINVAL);
	assert_string_equal(err.msg, "data.ca.crt: not a CA certificate");
	json_object_put(o);
	cd.ca = ca.cert_pem;
	assert_int_equal(pki_secret_build(PKI_SECRET_CA, "ns", "x", &cd, &o, &err), -EINVAL);
	struct pki_secret_data nokey = { .crt = leaf.cert_pem };
	assert_int_equal(pki_secret_build(PKI_SECRET_TLS, "ns", "x", &nokey, &o, NULL), -EINVAL);

	pki_pair_done(&ca);
	pki_pair_done(&leaf);
}

static char *b64(const char *s)
{
	/* test-side encoder via the module: build a Secret and pick the value */
	struct pki_secret_data d = { .crt = (char *)s };
	json_object *o = NULL;
	assert_int_equal(pki_secret_build(PKI_SECRET_CA, "n", "x", &d, &o, NULL), 0);
	json_object *v = NULL;
	assert_true(json_object_object_get_ex(json_object_object_get(o, "data"), "ca.crt", &v));
	char *r = op_strdup(json_object_get_string(v));
	json_object_put(o);
	return r;
}

static void test_secret_rejects(void **state)
{
	struct pki_pair ca = { 0 }, other = { 0 }, leaf = { 0 };
	make_ca("demo", T0, 0, &ca);
	make_ca("other", T0, 0, &other);
	make_leaf(&ca, &server_req, &leaf);
	_cleanup_free_ char *crt = b64(leaf.cert_pem), *key = b64(leaf.key_pem),
			    *wrong_key = b64(other.key_pem), *leaf_as_ca = b64(leaf.cert_pem),
			    *junk = b64("hello"), *cab = b64(ca.cert_pem);
	struct {
		const char *json_fmt;
		const char *a, *b, *c;
		const char *msg;
	} rows[] = {
		{ "{\"type\":\"Opaque\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\"}}%s", crt, key,
		  "", "type: expected 'kubernetes.io/tls', got 'Opaque'" },
		{ "{\"type\":\"kubernetes.io/tls\"%s%s%s}", "", "", "", "data: required" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.key\":\"%s\"}}%s%s", key, "", "",
		  "data.tls.crt: required" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\"}}%s%s", crt, "", "",
		  "data.tls.key: required" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s!\",\"tls.key\":\"%s\"}}%s",
		  crt, key, "", "data.tls.crt: invalid base64: " },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\"}}%s",
		  junk, key, "", "data.tls.crt: not PEM (no \"-----BEGIN\" line)" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\"}}%s",
		  crt, wrong_key, "",
		  "data.tls.key: private key does not match the certificate's public key" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\",\"ca.crt\":\"%s\"}}",
		  crt, key, leaf_as_ca, "data.ca.crt: caBundle: certificate 1 ('CN=demo-rw') is not a "
					"CA; a caBundle must hold CA certificates only, never a leaf" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":%s,\"tls.key\":\"%s\"}}%s", "5",
		  key, "", "data.tls.crt: expected string, got integer" },
		{ "{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\",\"ca.crt\":\"%s\"}}",
		  crt, key, cab, NULL },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		_cleanup_free_ char *txt = op_asprintf(rows[i].json_fmt, rows[i].a, rows[i].b,
						       rows[i].c);
#pragma GCC diagnostic pop
		json_object *o = NULL;
		assert_int_equal(op_json_parse(txt, strlen(txt), 0, &o, NULL), 0);
		struct op_err err = OP_ERR_INIT;
		struct pki_secret_data out = { 0 };
		int r = pki_secret_parse(PKI_SECRET_TLS, o, &out, &err);
		if (rows[i].msg) {
			if (r >= 0 || strncmp(err.msg, rows[i].msg, strlen(rows[i].msg)) != 0)
				fail_msg("row %zu: r=%d msg '%s'", i, r, err.msg);
			assert_null(out.crt);
		} else {
			assert_int_equal(r, 0);
			pki_secret_data_done(&out);
		}
		json_object_put(o);
	}

	/* Base64 wrapped at 76 columns (Go's encoder with a line writer) is accepted. */
	struct op_buf wrapped = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	for (size_t i = 0; i < strlen(crt); i += 76) {
		assert_int_equal(op_buf_add(&wrapped, crt + i, strlen(crt + i) < 76 ? strlen(crt + i) : 76), 0);
		assert_int_equal(op_buf_adds(&wrapped, "\\n"), 0);
	}
	_cleanup_free_ char *txt = op_asprintf(
		"{\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\"}}",
		op_buf_str(&wrapped), key);
	json_object *o = NULL;
	assert_int_equal(op_json_parse(txt, strlen(txt), 0, &o, NULL), 0);
	struct pki_secret_data out = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_secret_parse(PKI_SECRET_TLS, o, &out, &err), 0);
	assert_string_equal(out.crt, leaf.cert_pem);
	pki_secret_data_done(&out);
	json_object_put(o);
	op_buf_done(&wrapped);

	pki_pair_done(&ca);
	pki_pair_done(&other);
	pki_pair_done(&leaf);
}

/* ----------------------------------------------------------- malformed PEM */

static void test_malformed_pem(void **state)
{
	struct pki_pair ca = { 0 };
	make_ca("demo", T0, 0, &ca);
	/* Corrupt one base64 character in the middle of the body. */
	char *corrupt = op_strdup(ca.cert_pem);
	corrupt[strlen(corrupt) / 2] = corrupt[strlen(corrupt) / 2] == 'A' ? 'B' : 'A';
	/* Truncated: header and half the body, no END line. */
	char *truncated = op_strndup(ca.cert_pem, strlen(ca.cert_pem) / 2);
	char *huge = op_malloc(PKI_PEM_MAX + 2);
	memset(huge, 'A', PKI_PEM_MAX + 1);
	huge[PKI_PEM_MAX + 1] = '\0';
	struct {
		const char *pem;
		int code;
		const char *msg_prefix;
	} rows[] = {
		{ NULL, -EINVAL, "tls.crt: empty" },
		{ "", -EINVAL, "tls.crt: empty" },
		{ "hello world", -EINVAL, "tls.crt: not PEM" },
		{ ca.key_pem, -EINVAL, "tls.crt: no PEM CERTIFICATE block" },
		{ "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", -EINVAL,
		  "tls.crt: invalid certificate: " },
		{ "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", -EINVAL,
		  "tls.crt: invalid certificate: " },
		{ corrupt, -EINVAL, "tls.crt: invalid certificate: " },
		{ truncated, -EINVAL, "tls.crt: invalid certificate: " },
		{ huge, -EMSGSIZE, "tls.crt: larger than" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		struct pki_cert_info info = { 0 };
		struct op_err err = OP_ERR_INIT;
		int r = pki_cert_info_parse(rows[i].pem, "tls.crt", &info, &err);
		if (r != rows[i].code ||
		    strncmp(err.msg, rows[i].msg_prefix, strlen(rows[i].msg_prefix)) != 0)
			fail_msg("row %zu: r=%d msg '%s'", i, r, err.msg);
		assert_null(info.subject_cn);
		assert_false(pki_bundle_is_ca_only(rows[i].pem));
		assert_int_equal(pki_needs_renewal(rows[i].pem, NULL, NULL, T0, 0),
				 rows[i].pem && *rows[i].pem ? PKI_RENEW_INVALID : PKI_RENEW_MISSING);
	}
	/* Keys. */
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(pki_pair_check(ca.cert_pem, "-----BEGIN EC PRIVATE KEY-----\nAAAA\n"
						     "-----END EC PRIVATE KEY-----\n",
					&err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "private key: invalid private key: "));
	err = OP_ERR_INIT;
	assert_int_equal(pki_pair_check(ca.cert_pem, ca.cert_pem, &err), -EINVAL);
	assert_string_equal(err.msg, "private key: no PEM PRIVATE KEY block");
	err = OP_ERR_INIT;
	struct pki_pair bad = { .cert_pem = ca.cert_pem, .key_pem = (char *)"nope" }, out = { 0 };
	assert_int_equal(pki_leaf_issue(&bad, &server_req, &out, &err), -EINVAL);
	assert_string_equal(err.msg, "ca.key: not PEM (no \"-----BEGIN\" line)");
	err = OP_ERR_INIT;
	assert_int_equal(pki_verify(corrupt, ca.cert_pem, T0, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "leaf: invalid certificate"));

	free(corrupt);
	free(truncated);
	free(huge);
	pki_pair_done(&ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_create),
		cmocka_unit_test(test_leaf_server),
		cmocka_unit_test(test_leaf_client_and_both),
		cmocka_unit_test(test_leaf_clamped_and_key_reuse),
		cmocka_unit_test(test_pkcs8_key_accepted),
		cmocka_unit_test(test_client_selfsigned_pin),
		cmocka_unit_test(test_verify_rejects),
		cmocka_unit_test(test_tls_handshake),
		cmocka_unit_test(test_needs_renewal_table),
		cmocka_unit_test(test_bundle_rules),
		cmocka_unit_test(test_rotation_full_cycle),
		cmocka_unit_test(test_rotation_waits_for_publish),
		cmocka_unit_test(test_rotation_repairs_leaf_in_bundle),
		cmocka_unit_test(test_rotation_other_leaves_keep_ca),
		cmocka_unit_test(test_secret_round_trip),
		cmocka_unit_test(test_secret_rejects),
		cmocka_unit_test(test_malformed_pem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
