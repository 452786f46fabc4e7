/* tests/e2e/agent/test_na.c - unit tests of the node agent's pure parts
 * (render.c) and file helpers (util.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/json.h"
#include "tests/e2e/agent/na.h"

static json_object *J(const char *s)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(s, strlen(s), 32, &o, &err) < 0)
		fail_msg("bad test JSON: %s", err.msg);
	return o;
}

static void test_image_kind(void **state)
{
	(void)state;
	static const struct {
		const char *image;
		enum na_image_kind want;
	} cases[] = {
		{ "ghcr.io/pgop/pgop:1.0", NA_IMAGE_PGOP },
		{ "pgop", NA_IMAGE_PGOP },
		{ "localhost:5000/team/pgop-operator@sha256:abcd", NA_IMAGE_PGOP },
		{ "ghcr.io/cloudnative-pg/postgresql:16.4", NA_IMAGE_POSTGRES },
		{ "postgres:15", NA_IMAGE_POSTGRES },
		{ "docker.io/library/postgres", NA_IMAGE_POSTGRES },
		{ "busybox:1.36", NA_IMAGE_OTHER },
		/* the registry port or tag never decides */
		{ "postgres.example:5000/busybox:postgres", NA_IMAGE_OTHER },
		{ NULL, NA_IMAGE_OTHER },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++)
		assert_int_equal(na_image_kind(cases[i].image), cases[i].want);
}

static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(na_backoff_ms(0), 0);
	assert_int_equal(na_backoff_ms(1), 1000);
	assert_int_equal(na_backoff_ms(2), 2000);
	assert_int_equal(na_backoff_ms(4), 8000);
	assert_int_equal(na_backoff_ms(7), 60000);
	assert_int_equal(na_backoff_ms(1000), 60000);
}

static void test_names(void **state)
{
	(void)state;
	char ns[32], veth[16], ip[16];
	assert_int_equal(na_pod_names("3f2a9c1e-0b7d-4e7a-9c1d-aa", ns, veth), 0);
	assert_string_equal(ns, "pgop-e2e-3f2a9c1e");
	assert_string_equal(veth, "pe2e3f2a9c1e");
	assert_true(strlen(veth) < 16); /* IFNAMSIZ */
	assert_int_equal(na_pod_names("3f2a-9c", ns, veth), -EINVAL);
	assert_int_equal(na_pod_names("../../etc", ns, veth), -EINVAL);
	assert_int_equal(na_pod_ip(2, ip), 0);
	assert_string_equal(ip, NA_POD_NET ".2");
	assert_int_equal(na_pod_ip(1, ip), -ERANGE);
	assert_int_equal(na_pod_ip(255, ip), -ERANGE);
}

static const char svc_json[] =
	"{\"metadata\":{\"name\":\"web\",\"namespace\":\"t\"},\"spec\":{\"clusterIP\":\"10.213.0.10\","
	"\"ports\":[{\"name\":\"https\",\"port\":443,\"protocol\":\"TCP\",\"targetPort\":9443},"
	"{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\"},{\"name\":\"x\",\"port\":1,"
	"\"protocol\":\"SCTP\"}]}}";
static const char slices_json[] =
	"[{\"metadata\":{\"namespace\":\"t\",\"labels\":{\"kubernetes.io/service-name\":\"web\"}},"
	"\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":9443,\"protocol\":"
	"\"TCP\"}],\"endpoints\":[{\"addresses\":[\"10.244.213.2\"],\"conditions\":{\"ready\":true}},"
	"{\"addresses\":[\"10.244.213.3\"]},{\"addresses\":[\"10.244.213.4\"],\"conditions\":"
	"{\"ready\":false}},{\"addresses\":[\"10.244.213.2\"]}]},"
	/* same name in another namespace, and an IPv6 slice: both ignored */
	"{\"metadata\":{\"namespace\":\"other\",\"labels\":{\"kubernetes.io/service-name\":\"web\"}},"
	"\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":1,\"protocol\":\"TCP\"}],"
	"\"endpoints\":[{\"addresses\":[\"10.244.213.9\"]}]},"
	"{\"metadata\":{\"namespace\":\"t\",\"labels\":{\"kubernetes.io/service-name\":\"web\"}},"
	"\"addressType\":\"IPv6\",\"ports\":[{\"name\":\"https\",\"port\":9443}],"
	"\"endpoints\":[{\"addresses\":[\"fd00::1\"]}]}]";

static void test_svc_rules(void **state)
{
	(void)state;
	json_object *svc = J(svc_json), *slices = J(slices_json);
	struct na_svc_rules r = { 0 };
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(na_svc_rules_add(&r, svc, slices, &err), 2); /* SCTP skipped */
	assert_int_equal(r.n, 2);
	assert_string_equal(r.v[0].cluster_ip, "10.213.0.10");
	assert_string_equal(r.v[0].proto, "tcp");
	assert_int_equal(r.v[0].port, 443);
	/* ready (or unknown) endpoints once each, not the not-ready one */
	assert_int_equal(r.v[0].n_backends, 2);
	assert_string_equal(r.v[0].backends[0].ip, "10.244.213.2");
	assert_int_equal(r.v[0].backends[0].port, 9443);
	assert_string_equal(r.v[0].backends[1].ip, "10.244.213.3");
	assert_string_equal(r.v[1].proto, "udp");
	assert_int_equal(r.v[1].n_backends, 0); /* no slice port named dns */
	na_svc_rules_free(&r);
	json_object_put(svc);

	/* headless: nothing */
	svc = J("{\"metadata\":{\"name\":\"h\",\"namespace\":\"t\"},\"spec\":{\"clusterIP\":"
		"\"None\",\"ports\":[{\"port\":5432}]}}");
	assert_int_equal(na_svc_rules_add(&r, svc, slices, &err), 0);
	assert_int_equal(r.n, 0);
	json_object_put(svc);
	svc = J("{\"spec\":{}}");
	assert_int_equal(na_svc_rules_add(&r, svc, slices, &err), -EINVAL);
	json_object_put(svc);
	json_object_put(slices);
}

static void test_nft_render(void **state)
{
	(void)state;
	struct na_svc_rules r = { 0 };
	na_svc_rules_add_one(&r, "10.213.0.10", "TCP", 443, "10.244.213.2", 9443);
	na_svc_rules_add_one(&r, "10.213.0.10", "TCP", 443, NULL, 0);
	na_svc_rules_add_one(&r, "10.213.0.11", "tcp", 5432, "10.244.213.3", 5432);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	/* second backend for the last rule */
	r.v[2].backends = op_realloc(r.v[2].backends, 2 * sizeof(*r.v[2].backends));
	r.v[2].backends[1] = (struct na_backend){ op_strdup("10.244.213.4"), 5433 };
	r.v[2].n_backends = 2;
	const char *parts[] = { "10.244.213.7", "not-an-ip" };
	assert_int_equal(na_nft_render(&b, &r, "10.213.0.0/16", parts, 2), 0);
	const char *s = op_buf_str(&b);
	assert_non_null(strstr(s, "delete table ip " NA_NFT_TABLE));
	assert_non_null(strstr(s, "ip daddr 10.213.0.10 tcp dport 443 goto svc0"));
	assert_non_null(strstr(s, "chain svc0 { meta l4proto tcp dnat to 10.244.213.2:9443; }"));
	assert_null(strstr(s, "goto svc1\n")); /* no backends: no rule */
	assert_non_null(strstr(s, "numgen random mod 2 vmap { 0 : goto svc2_0, 1 : goto svc2_1 }"));
	assert_non_null(strstr(s, "chain svc2_1 { meta l4proto tcp dnat to 10.244.213.4:5433; }"));
	assert_non_null(strstr(s, "elements = { 10.244.213.7 }"));
	assert_null(strstr(s, "not-an-ip"));
	assert_non_null(strstr(s, "ip daddr 10.213.0.0/16 reject"));
	assert_non_null(strstr(s, "table bridge " NA_NFT_TABLE " {"));
	/* the script is valid for this host's nft (check mode, changes nothing) */
	if (geteuid() == 0 && access("/usr/sbin/nft", X_OK) == 0) {
		const char *argv[] = { "nft", "-c", "-f", "-", NULL };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(na_run(argv, s, NULL, &err), 0);
	}
	assert_non_null(strstr(s, "ip saddr 10.244.213.0/24 jump services"));
	/* a second instance on the same host: its own subnet and table */
	snprintf(na_pod_net, sizeof(na_pod_net), "10.244.214");
	snprintf(na_nft_table, sizeof(na_nft_table), "pgop_e2e_214");
	assert_int_equal(na_nft_render(&b, &r, "10.213.0.0/16", NULL, 0), 0);
	assert_non_null(strstr(op_buf_str(&b), "table ip pgop_e2e_214 {"));
	assert_non_null(strstr(op_buf_str(&b), "delete table bridge pgop_e2e_214\n"));
	assert_non_null(strstr(op_buf_str(&b), "ip saddr 10.244.214.0/24 jump services"));
	assert_null(strstr(op_buf_str(&b), "table ip pgop_e2e {"));
	char ip[16];
	assert_int_equal(na_pod_ip(9, ip), 0);
	assert_string_equal(ip, "10.244.214.9");
	snprintf(na_pod_net, sizeof(na_pod_net), "%s", NA_POD_NET);
	snprintf(na_nft_table, sizeof(na_nft_table), "%s", NA_NFT_TABLE);
	/* empty partition set renders without elements */
	assert_int_equal(na_nft_render(&b, NULL, "10.213.0.0/16", NULL, 0), 0);
	assert_non_null(strstr(op_buf_str(&b), "set partitioned { type ipv4_addr; }"));
	op_buf_done(&b);
	na_svc_rules_free(&r);
}

static void test_hosts(void **state)
{
	(void)state;
	json_object *svcs = J("[{\"metadata\":{\"name\":\"web\",\"namespace\":\"t\"},\"spec\":"
			      "{\"clusterIP\":\"10.213.0.10\"}},{\"metadata\":{\"name\":\"db\","
			      "\"namespace\":\"u\"},\"spec\":{\"clusterIP\":\"10.213.0.11\"}},"
			      "{\"metadata\":{\"name\":\"hl\",\"namespace\":\"t\"},\"spec\":"
			      "{\"clusterIP\":\"None\"}}]");
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	assert_int_equal(na_hosts_render(&b, "t", "p-1", NULL, "10.244.213.5", svcs), 0);
	const char *s = op_buf_str(&b);
	assert_non_null(strstr(s, "127.0.0.1\tlocalhost\n"));
	assert_non_null(strstr(s, "10.244.213.5\tp-1\n"));
	assert_non_null(strstr(s, "10.213.0.10\tweb.t.svc.cluster.local web.t.svc web.t web\n"));
	/* another namespace: no short name */
	assert_non_null(strstr(s, "10.213.0.11\tdb.u.svc.cluster.local db.u.svc db.u\n"));
	assert_null(strstr(s, "hl."));
	assert_int_equal(na_hosts_render(&b, "t", "p-1", "sub", "10.244.213.5", NULL), 0);
	assert_non_null(strstr(op_buf_str(&b), "10.244.213.5\tp-1.sub.t.svc.cluster.local\tp-1\n"));
	op_buf_done(&b);
	json_object_put(svcs);
}

static void test_field_ref(void **state)
{
	(void)state;
	json_object *pod = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u1\","
			     "\"labels\":{\"app\":\"web\"},\"annotations\":{\"a/b\":\"c\"}},"
			     "\"spec\":{\"nodeName\":\"node\",\"serviceAccountName\":\"sa\"}}");
	assert_string_equal(na_field_ref(pod, "metadata.name", "1.2.3.4", "h"), "p");
	assert_string_equal(na_field_ref(pod, "metadata.namespace", NULL, NULL), "n");
	assert_string_equal(na_field_ref(pod, "metadata.uid", NULL, NULL), "u1");
	assert_string_equal(na_field_ref(pod, "spec.nodeName", NULL, NULL), "node");
	assert_string_equal(na_field_ref(pod, "spec.serviceAccountName", NULL, NULL), "sa");
	assert_string_equal(na_field_ref(pod, "status.podIP", "1.2.3.4", "h"), "1.2.3.4");
	assert_string_equal(na_field_ref(pod, "status.hostIP", "1.2.3.4", "h"), "h");
	assert_string_equal(na_field_ref(pod, "metadata.labels['app']", NULL, NULL), "web");
	assert_string_equal(na_field_ref(pod, "metadata.annotations['a/b']", NULL, NULL), "c");
	assert_null(na_field_ref(pod, "metadata.labels['nope']", NULL, NULL));
	assert_null(na_field_ref(pod, "metadata.labels[app]", NULL, NULL));
	assert_null(na_field_ref(pod, "spec.containers", NULL, NULL));
	json_object_put(pod);
}

static void test_expand_vars(void **state)
{
	(void)state;
	char *env[] = { "A=1", "B=two", "A=3" };
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(na_expand_vars(&b, "x$(A)-$(B)-$(C)-$$(A)-$(", env, 3), 0);
	/* later definitions win; unknown kept; $$ escapes */
	assert_string_equal(op_buf_str(&b), "x3-two-$(C)-$(A)-$(");
	op_buf_done(&b);
}

static void test_files(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/test_na.XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	struct op_err err = OP_ERR_INIT;
	_cleanup_free_ char *deep = op_asprintf("%s/a/b/c", tmpl);
	_cleanup_free_ char *file = op_asprintf("%s/a/b/c/f", tmpl);
	assert_int_equal(na_mkdir_p(deep, 0755, &err), 0);
	assert_int_equal(na_write_file(file, "hello", 5, 0600, &err), 0);
	struct op_buf b = OP_BUF_INIT(4);
	assert_int_equal(na_read_file(file, &b, &err), -EMSGSIZE); /* over the cap */
	b.max = 64;
	op_err_clear(&err);
	assert_int_equal(na_read_file(file, &b, &err), 0);
	assert_string_equal(op_buf_str(&b), "hello");
	struct stat st;
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	op_buf_done(&b);
	/* rm_rf refuses anything outside the guard */
	_cleanup_free_ char *a = op_asprintf("%s/a", tmpl);
	assert_int_equal(na_rm_rf(a, "/nonexistent", &err), -EPERM);
	_cleanup_free_ char *dotdot = op_asprintf("%s/../x", tmpl);
	op_err_clear(&err);
	assert_int_equal(na_rm_rf(dotdot, tmpl, &err), -EPERM);
	assert_int_equal(na_rm_rf(a, tmpl, &err), 0);
	assert_int_equal(access(a, F_OK), -1);
	assert_int_equal(rmdir(tmpl), 0);
}

static void test_run(void **state)
{
	(void)state;
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	const char *cat[] = { "cat", NULL };
	assert_int_equal(na_run(cat, "piped input", &out, &err), 0);
	assert_string_equal(op_buf_str(&out), "piped input");
	const char *fail[] = { "sh", "-c", "echo oops >&2; exit 3", NULL };
	assert_int_equal(na_run(fail, NULL, &out, &err), -EIO);
	assert_non_null(strstr(err.msg, "exit 3"));
	assert_non_null(strstr(err.msg, "oops"));
	op_buf_done(&out);
}

static void test_kubelet_logs(void **state)
{
	(void)state;
	struct op_buf p = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(na_log_path("/s", "/containerLogs/ns-1/web-0/pgop", &p), 0);
	assert_string_equal(op_buf_str(&p), "/s/logs/ns-1_web-0_pgop.log");
	static const char *const bad[] = {
		"/containerLogs/ns/pod",         "/containerLogs/ns/pod/c/extra",
		"/containerLogs/../pod/c",       "/containerLogs/ns//c",
		"/containerLogs/ns/p%2F/c",      "/containerLogs/ns/pod/..",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++)
		assert_int_equal(na_log_path("/s", bad[i], &p), -EINVAL);
	assert_int_equal(na_log_path("/s", "/pods", &p), -ENOENT);
	op_buf_done(&p);

	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(op_buf_adds(&b, "a\nb\nc\n"), 0);
	assert_string_equal(na_tail_lines(&b, -1), "a\nb\nc\n");
	assert_string_equal(na_tail_lines(&b, 0), "");
	assert_string_equal(na_tail_lines(&b, 1), "c\n");
	assert_string_equal(na_tail_lines(&b, 2), "b\nc\n");
	assert_string_equal(na_tail_lines(&b, 3), "a\nb\nc\n");
	assert_string_equal(na_tail_lines(&b, 10), "a\nb\nc\n");
	op_buf_reset(&b);
	assert_int_equal(op_buf_adds(&b, "x\ny"), 0); /* no final newline */
	assert_string_equal(na_tail_lines(&b, 1), "y");
	op_buf_done(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_kind), cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_names),      cmocka_unit_test(test_svc_rules),
		cmocka_unit_test(test_nft_render), cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_field_ref),  cmocka_unit_test(test_expand_vars),
		cmocka_unit_test(test_files),      cmocka_unit_test(test_run),
		cmocka_unit_test(test_kubelet_logs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
