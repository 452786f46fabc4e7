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
	assert_int_equal(na_nft_render(&b, &r, "10.213.0.0/16", parts, 2, false), 0);
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
	assert_non_null(strstr(s, "oifname \"pgope2e0\" icmp type redirect drop;"));
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
	assert_int_equal(na_nft_render(&b, &r, "10.213.0.0/16", NULL, 0, false), 0);
	assert_non_null(strstr(op_buf_str(&b), "table ip pgop_e2e_214 {"));
	assert_non_null(strstr(op_buf_str(&b), "delete table bridge pgop_e2e_214\n"));
	assert_non_null(strstr(op_buf_str(&b), "ip saddr 10.244.214.0/24 jump services"));
	assert_null(strstr(op_buf_str(&b), "table ip pgop_e2e {"));
	assert_null(strstr(op_buf_str(&b), "node_cut"));
	/* that node's network cut: its subnet isolated from the others and the host */
	assert_int_equal(na_nft_render(&b, &r, "10.213.0.0/16", NULL, 0, true), 0);
	s = op_buf_str(&b);
	assert_non_null(strstr(s, "ip saddr 10.244.214.0/24 ip daddr != 10.244.214.0/24 drop; "
				  "ip daddr 10.244.214.0/24 ip saddr != 10.244.214.0/24 drop;"));
	assert_non_null(strstr(s, "ip saddr @partitioned ct direction original drop; "
				  "ip saddr 10.244.214.0/24 ct direction original drop;"));
	assert_non_null(strstr(s, "ip daddr 10.244.214.0/24 ct status dnat drop; "
				  "ip daddr 10.244.214.1 tcp dport 10250 drop;"));
	assert_non_null(strstr(s, "chain node_cut { }"));
	if (geteuid() == 0 && access("/usr/sbin/nft", X_OK) == 0) {
		const char *argv[] = { "nft", "-c", "-f", "-", NULL };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(na_run(argv, s, NULL, &err), 0);
	}
	char ip[16];
	assert_int_equal(na_pod_ip(9, ip), 0);
	assert_string_equal(ip, "10.244.214.9");
	snprintf(na_pod_net, sizeof(na_pod_net), "%s", NA_POD_NET);
	snprintf(na_nft_table, sizeof(na_nft_table), "%s", NA_NFT_TABLE);
	/* empty partition set renders without elements */
	assert_int_equal(na_nft_render(&b, NULL, "10.213.0.0/16", NULL, 0, false), 0);
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

/* ------------------------------------------------------------ podspec.c */

static bool only_16_missing(int major, void *userdata)
{
	(void)userdata;
	return major != 16;
}

static const struct na_host host_all = { .memory_cgroup = true, .cpu_cgroup = true,
					 .no_cgroup_why = "none" };

/* A pod as the API server stores pgop's Helm-chart controller Pod (defaults included). */
#define CHART_POD                                                                                 \
	"{\"spec\":{\"containers\":[{\"name\":\"controller\",\"image\":\"ghcr.io/pgop/pgop:0.1.0\","  \
	"\"imagePullPolicy\":\"IfNotPresent\",\"command\":[\"pgop\"],\"args\":[\"controller\"],"      \
	"\"env\":[{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","          \
	"\"fieldPath\":\"metadata.name\"}}}],\"ports\":[{\"name\":\"https\",\"containerPort\":9443,"   \
	"\"protocol\":\"TCP\"}],\"readinessProbe\":{\"httpGet\":{\"path\":\"/readyz\",\"port\":"      \
	"\"https\",\"scheme\":\"HTTPS\"},\"periodSeconds\":2,\"failureThreshold\":3,"                  \
	"\"timeoutSeconds\":1,\"successThreshold\":1},\"resources\":{\"requests\":{\"cpu\":\"50m\","   \
	"\"memory\":\"32Mi\"},\"limits\":{\"memory\":\"128Mi\"}},\"securityContext\":"                \
	"{\"allowPrivilegeEscalation\":false,\"readOnlyRootFilesystem\":true,"                         \
	"\"capabilities\":{\"drop\":[\"ALL\"]}},\"terminationMessagePath\":\"/dev/termination-log\","  \
	"\"terminationMessagePolicy\":\"File\",\"volumeMounts\":[{\"name\":\"kube-api-access-x\","       \
	"\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"         \
	"\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":10001,\"runAsGroup\":10001},"         \
	"\"serviceAccountName\":\"r1-pgop\",\"serviceAccount\":\"r1-pgop\",\"nodeName\":\"n\","        \
	"\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"               \
	"\"ClusterFirst\",\"schedulerName\":\"default-scheduler\",\"enableServiceLinks\":true,"         \
	"\"priority\":0,\"preemptionPolicy\":\"PreemptLowerPriority\",\"tolerations\":[{\"key\":"      \
	"\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","           \
	"\"tolerationSeconds\":300}],\"volumes\":[{\"name\":\"kube-api-access-x\",\"projected\":"       \
	"{\"defaultMode\":420,\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,"      \
	"\"path\":\"token\"}},{\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":"    \
	"\"ca.crt\",\"path\":\"ca.crt\"}]}},{\"downwardAPI\":{\"items\":[{\"fieldRef\":{\"apiVersion\":" \
	"\"v1\",\"fieldPath\":\"metadata.namespace\"},\"path\":\"namespace\"}]}}]}}]}}"

/* pgop's instance Pod (reconciler/objects_pod.c) with API defaults. */
#define INSTANCE_POD(image)                                                                      \
	"{\"spec\":{\"initContainers\":[{\"name\":\"bootstrap-controller\",\"image\":\"pgop:latest\"," \
	"\"command\":[\"pgop\",\"bootstrap\",\"/controller/pgop\"],\"volumeMounts\":[{\"name\":"    \
	"\"controller\",\"mountPath\":\"/controller\"}],\"resources\":{}}],\"containers\":[{\"name\":" \
	"\"postgres\",\"image\":\"" image "\",\"command\":[\"/controller/pgop\",\"instance\","        \
	"\"run\"],\"ports\":[{\"name\":\"status\",\"containerPort\":8000,\"protocol\":\"TCP\"}],"   \
	"\"startupProbe\":{\"httpGet\":{\"path\":\"/startupz\",\"port\":8000,\"scheme\":\"HTTPS\"},"  \
	"\"periodSeconds\":10,\"timeoutSeconds\":5,\"failureThreshold\":360},\"env\":[{\"name\":"    \
	"\"PGDATA\",\"value\":\"/var/lib/postgresql/data/pgdata\"}],\"volumeMounts\":[{\"name\":"    \
	"\"pgdata\",\"mountPath\":\"/var/lib/postgresql/data\"},{\"name\":\"ca\",\"mountPath\":"     \
	"\"/run/pgop/certs/ca\",\"readOnly\":true}]}],\"volumes\":[{\"name\":\"pgdata\","            \
	"\"persistentVolumeClaim\":{\"claimName\":\"c-1\"}},{\"name\":\"controller\",\"emptyDir\":{}}," \
	"{\"name\":\"ca\",\"secret\":{\"secretName\":\"c-ca\",\"defaultMode\":420,\"items\":"       \
	"[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}],\"securityContext\":{\"runAsUser\":26,"      \
	"\"runAsGroup\":26,\"fsGroup\":26,\"runAsNonRoot\":true},\"hostname\":\"c-1\","               \
	"\"terminationGracePeriodSeconds\":1800}}"

static void check_pod(const char *text, const struct na_host *h, int want_rc,
		      const char *want_reason, const char *want_msg)
{
	json_object *pod = J(text);
	struct na_refusal r;
	int rc = na_podspec_check(pod, h, &r);
	if (rc != want_rc)
		fail_msg("rc %d, want %d (%s)", rc, want_rc, r.message ? r.message : "");
	if (want_reason)
		assert_string_equal(r.reason, want_reason);
	if (want_msg) {
		assert_non_null(r.message);
		if (!strstr(r.message, want_msg))
			fail_msg("message '%s' lacks '%s'", r.message, want_msg);
	}
	na_refusal_done(&r);
	json_object_put(pod);
}

static void test_podspec_table(void **state)
{
	(void)state;
	/* what pgop's chart and reconciler set is accepted */
	check_pod(CHART_POD, &host_all, 0, NULL, NULL);
	check_pod(INSTANCE_POD("ghcr.io/cloudnative-pg/postgresql:15"), &host_all, 0, NULL, NULL);
	/* a memory limit without a usable cgroup is refused, saying so */
	struct na_host nocg = { .no_cgroup_why = "no writable cgroup" };
	check_pod(CHART_POD, &nocg, -ENOTSUP, "CreateContainerConfigError",
		  "spec.containers[0].resources.limits.memory: no writable cgroup");
	/* unknown fields and values the agent cannot honour: refused, named */
	static const struct {
		const char *pod, *field;
	} bad[] = {
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"lifecycle\":{\"preStop\":{}}}]}}",
		  "spec.containers[0].lifecycle: not supported" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"securityContext\":"
		  "{\"privileged\":true}}]}}",
		  "spec.containers[1].securityContext.privileged: only false" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"capabilities\":"
		  "{\"add\":[\"NET_ADMIN\"]}}}]}}",
		  "spec.containers[0].securityContext.capabilities.add" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"securityContext\":{\"capabilities\":"
		  "{\"drop\":[\"NET_RAW\"]}}}]}}",
		  "capabilities.drop: only [ALL]" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{\"grpc\":{\"port\":1}}}]}}",
		  "spec.containers[0].livenessProbe.grpc" },
		{ "{\"spec\":{\"hostNetwork\":true,\"containers\":[{\"name\":\"a\"}]}}",
		  "spec.hostNetwork: not supported" },
		{ "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"hostPath\":{\"path\":\"/\"}}]}}",
		  "spec.volumes[0].hostPath" },
		{ "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{\"medium\":\"HugePages\"}}]}}",
		  "spec.volumes[0].emptyDir.medium: unsupported value" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
		  "{\"nvidia.com/gpu\":\"1\"}}}]}}",
		  "resources.limits.nvidia.com/gpu" },
		{ "{\"spec\":{\"dnsPolicy\":\"None\"}}", "spec.dnsPolicy: only ClusterFirst" },
		{ "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{\"sizeLimit\":\"1Gi\"}}]}}",
		  "spec.volumes[0].emptyDir.sizeLimit: only enforced for medium: Memory" },
		{ "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"restartPolicy\":\"Always\"}]}}",
		  "spec.initContainers[0].restartPolicy" },
		{ "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"valueFrom\":"
		  "{\"resourceFieldRef\":{\"resource\":\"limits.cpu\"}}}]}]}}",
		  "spec.containers[0].env[0].valueFrom.resourceFieldRef" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_pod(bad[i].pod, &host_all, -ENOTSUP, "CreateContainerConfigError", bad[i].field);
	check_pod("{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{\"medium\":\"Memory\","
		  "\"sizeLimit\":\"16Mi\"}}]}}",
		  &host_all, 0, NULL, NULL);
	/* runAsNonRoot with uid 0 (or none: the image's root) */
	check_pod("{\"spec\":{\"securityContext\":{\"runAsNonRoot\":true},\"containers\":"
		  "[{\"name\":\"a\"}]}}",
		  &host_all, -EPERM, "CreateContainerConfigError",
		  "spec.containers[0].securityContext.runAsNonRoot");
	check_pod("{\"spec\":{\"containers\":[{\"name\":\"a\",\"securityContext\":"
		  "{\"runAsNonRoot\":true,\"runAsUser\":0}}]}}",
		  &host_all, -EPERM, NULL, "runAsUser 0");
	check_pod("{\"spec\":{\"securityContext\":{\"runAsNonRoot\":true,\"runAsUser\":0},"
		  "\"containers\":[{\"name\":\"a\",\"securityContext\":{\"runAsUser\":5}}]}}",
		  &host_all, 0, NULL, NULL);
	/* an image major not installed on this node: ErrImagePull, the contract's message */
	struct na_host no16 = host_all;
	no16.pg_major_installed = only_16_missing;
	check_pod(INSTANCE_POD("ghcr.io/cloudnative-pg/postgresql:16.2"), &no16, -ENOENT,
		  "ErrImagePull",
		  "PostgreSQL 16 is not installed on this node (image "
		  "ghcr.io/cloudnative-pg/postgresql:16.2)");
	check_pod(INSTANCE_POD("ghcr.io/cloudnative-pg/postgresql:17beta1"), &no16, 0, NULL, NULL);
	/* the pgop image is not a PostgreSQL image */
	check_pod(CHART_POD, &no16, 0, NULL, NULL);
}

static void test_pg_major(void **state)
{
	(void)state;
	static const struct {
		const char *image;
		int major;
	} cases[] = {
		{ "ghcr.io/cloudnative-pg/postgresql:16", 16 },
		{ "ghcr.io/cloudnative-pg/postgresql:16.2", 16 },
		{ "ghcr.io/cloudnative-pg/postgresql:17beta1", 17 },
		{ "ghcr.io/cloudnative-pg/postgresql:18rc1", 18 },
		{ "ghcr.io/cloudnative-pg/postgresql:15.4-bookworm", 15 },
		{ "localhost:5000/postgres:14", 14 },
		{ "postgres:13.1@sha256:abc", 13 },
		{ "ghcr.io/cloudnative-pg/postgresql", -1 },
		{ "localhost:5000/postgresql", -1 },
		{ "postgres:latest", -1 },
		{ "postgres:1", -1 },
		{ "postgres:16x", -1 },
		{ NULL, -1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (na_image_pg_major(cases[i].image) != cases[i].major)
			fail_msg("%s: %d, want %d", cases[i].image ? cases[i].image : "NULL",
				 na_image_pg_major(cases[i].image), cases[i].major);
}

static void test_quantity(void **state)
{
	(void)state;
	int64_t v;
	assert_int_equal(na_quantity_parse("128Mi", 1, &v), 0);
	assert_int_equal(v, 128LL << 20);
	assert_int_equal(na_quantity_parse("1G", 1, &v), 0);
	assert_int_equal(v, 1000000000LL);
	assert_int_equal(na_quantity_parse("500m", 1000, &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(na_quantity_parse("1.5", 1000, &v), 0);
	assert_int_equal(v, 1500);
	assert_int_equal(na_quantity_parse("2", 1000, &v), 0);
	assert_int_equal(v, 2000);
	assert_int_equal(na_quantity_parse("1.5Gi", 1, &v), 0);
	assert_int_equal(v, 3LL << 29);
	assert_int_equal(na_quantity_parse("", 1, &v), -EINVAL);
	assert_int_equal(na_quantity_parse("12Qi", 1, &v), -EINVAL);
	assert_int_equal(na_quantity_parse("-1", 1, &v), -EINVAL);
	assert_int_equal(na_quantity_parse(NULL, 1, &v), -EINVAL);
	assert_int_equal(na_quantity_parse("99999999999Ti", 1, &v), -ERANGE);
}

/* ------------------------------------------------------------ spdy.c */

static const uint8_t ping_frame[] = { 0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7 };

static void test_spdy_parse(void **state)
{
	(void)state;
	struct na_spdy_frame f;
	/* a data frame with FIN */
	static const uint8_t data[] = { 0, 0, 0, 3, 1, 0, 0, 2, 'h', 'i' };
	assert_int_equal(na_spdy_parse(data, sizeof(data), 64, &f), 10);
	assert_int_equal(f.type, NA_SPDY_DATA);
	assert_int_equal(f.stream_id, 3);
	assert_int_equal(f.flags, NA_SPDY_FLAG_FIN);
	assert_int_equal(f.len, 2);
	assert_memory_equal(f.data, "hi", 2);
	/* every prefix is incomplete, never an error */
	for (size_t n = 0; n < sizeof(data); n++)
		assert_int_equal(na_spdy_parse(data, n, 64, &f), 0);
	assert_int_equal(na_spdy_parse(ping_frame, sizeof(ping_frame), 64, &f), 12);
	assert_int_equal(f.type, NA_SPDY_PING);
	assert_int_equal(f.stream_id, 7);
	/* caps and malformed frames */
	assert_int_equal(na_spdy_parse(data, sizeof(data), 1, &f), -EMSGSIZE);
	static const uint8_t v2[] = { 0x80, 2, 0, 6, 0, 0, 0, 4 };
	assert_int_equal(na_spdy_parse(v2, sizeof(v2), 64, &f), -EPROTO);
	static const uint8_t zero_sid[] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	assert_int_equal(na_spdy_parse(zero_sid, sizeof(zero_sid), 64, &f), -EPROTO);
	static const uint8_t short_rst[] = { 0x80, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1 };
	assert_int_equal(na_spdy_parse(short_rst, sizeof(short_rst), 64, &f), -EPROTO);
	static const uint8_t rst[] = { 0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 1 };
	assert_int_equal(na_spdy_parse(rst, sizeof(rst), 64, &f), 16);
	assert_int_equal(f.type, NA_SPDY_RST_STREAM);
	assert_int_equal(f.stream_id, 5);
	assert_int_equal(f.value, 1);
	/* an unknown control type is skipped whole */
	static const uint8_t unk[] = { 0x80, 3, 0, 0x42, 0, 0, 0, 1, 9 };
	assert_int_equal(na_spdy_parse(unk, sizeof(unk), 64, &f), 9);
	assert_int_equal(f.type, 0x42);
	/* writers produce what the parser reads */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(na_spdy_put_ctrl(&b, NA_SPDY_PING, 7, 0), 0);
	assert_int_equal(b.len, sizeof(ping_frame));
	assert_memory_equal(b.data, ping_frame, sizeof(ping_frame));
	op_buf_reset(&b);
	assert_int_equal(na_spdy_put_data(&b, 3, NA_SPDY_FLAG_FIN, "hi", 2), 0);
	assert_memory_equal(b.data, data, sizeof(data));
	op_buf_reset(&b);
	assert_int_equal(na_spdy_put_ctrl(&b, NA_SPDY_GOAWAY, 9, 0), 0);
	assert_int_equal(na_spdy_parse((uint8_t *)b.data, b.len, 64, &f), 16);
	assert_int_equal(f.type, NA_SPDY_GOAWAY);
	assert_int_equal(f.stream_id, 9);
	op_buf_done(&b);
}

static void test_spdy_headers(void **state)
{
	(void)state;
	struct na_spdy_z client = { 0 }, server = { 0 };
	assert_int_equal(na_spdy_z_init(&client), 0);
	assert_int_equal(na_spdy_z_init(&server), 0);
	static const char *const kinds[] = { "error", "stdin", "stdout", "stderr" };
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	/* one zlib stream across blocks, as the apiserver opens its streams */
	for (uint32_t i = 0; i < OP_ARRAY_SIZE(kinds); i++) {
		const char *names[] = { "streamtype" }, *values[] = { kinds[i] };
		op_buf_reset(&b);
		assert_int_equal(na_spdy_put_headers(&b, &client,
						     NA_SPDY_SYN_STREAM, 1 + 2 * i, 0, names, values,
						     1),
				 0);
		struct na_spdy_frame f;
		assert_int_equal(na_spdy_parse((uint8_t *)b.data, b.len, 1 << 20, &f), (ssize_t)b.len);
		assert_int_equal(f.type, NA_SPDY_SYN_STREAM);
		assert_int_equal(f.stream_id, 1 + 2 * i);
		struct na_spdy_hdrs h;
		assert_int_equal(na_spdy_headers_decode(&server, f.data, f.len, &h), 0);
		assert_int_equal(h.n, 1);
		assert_string_equal(na_spdy_hdr_get(&h, "streamtype"), kinds[i]);
		assert_null(na_spdy_hdr_get(&h, "port"));
		assert_int_equal(na_exec_kind(na_spdy_hdr_get(&h, "streamtype")), (int)i);
		na_spdy_hdrs_done(&h);
	}
	/* an empty SYN_REPLY, the other direction */
	op_buf_reset(&b);
	assert_int_equal(na_spdy_put_headers(&b, &server, NA_SPDY_SYN_REPLY, 1, 0, NULL, NULL, 0), 0);
	struct na_spdy_frame f;
	assert_int_equal(na_spdy_parse((uint8_t *)b.data, b.len, 1 << 20, &f), (ssize_t)b.len);
	assert_int_equal(f.type, NA_SPDY_SYN_REPLY);
	struct na_spdy_hdrs h;
	assert_int_equal(na_spdy_headers_decode(&client, f.data, f.len, &h), 0);
	assert_int_equal(h.n, 0);
	na_spdy_hdrs_done(&h);
	/* garbage where zlib data should be */
	static const uint8_t junk[] = { 0x12, 0x34, 0x56, 0x78 };
	struct na_spdy_z fresh = { 0 };
	assert_int_equal(na_spdy_z_init(&fresh), 0);
	assert_int_equal(na_spdy_headers_decode(&fresh, junk, sizeof(junk), &h), -EPROTO);
	na_spdy_z_done(&fresh);
	op_buf_done(&b);
	na_spdy_z_done(&client);
	na_spdy_z_done(&server);
}

static void test_spdy_hdrs_parse(void **state)
{
	(void)state;
	struct na_spdy_hdrs h;
	static const uint8_t ok[] = { 0, 0, 0, 1, 0, 0, 0, 1, 'a', 0, 0, 0, 3, 'x', 0, 'y' };
	assert_int_equal(na_spdy_hdrs_parse(ok, sizeof(ok), &h), 0);
	assert_string_equal(na_spdy_hdr_get(&h, "a"), "x"); /* first of NUL-joined values */
	assert_int_equal(h.value_len[0], 3);
	na_spdy_hdrs_done(&h);
	for (size_t n = 0; n < sizeof(ok); n++) /* truncated anywhere */
		assert_int_equal(na_spdy_hdrs_parse(ok, n, &h), -EPROTO);
	static const uint8_t trailing[] = { 0, 0, 0, 0, 1 };
	assert_int_equal(na_spdy_hdrs_parse(trailing, sizeof(trailing), &h), -EPROTO);
	static const uint8_t lies[] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
	assert_int_equal(na_spdy_hdrs_parse(lies, sizeof(lies), &h), -EPROTO);
	static const uint8_t huge_len[] = { 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 'a', 0, 0, 0 };
	assert_int_equal(na_spdy_hdrs_parse(huge_len, sizeof(huge_len), &h), -EPROTO);
	static const uint8_t empty_name[] = { 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 };
	assert_int_equal(na_spdy_hdrs_parse(empty_name, sizeof(empty_name), &h), -EPROTO);
}

/* Random and mutated input never crashes a parser nor reads past its input
 * (ASan), and whatever is consumed lies within it. Deterministic. */
static void test_spdy_fuzz(void **state)
{
	(void)state;
	uint32_t seed = 12345;
	uint8_t buf[96];
	struct op_buf valid = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct na_spdy_z z = { 0 };
	assert_int_equal(na_spdy_z_init(&z), 0);
	const char *names[] = { "streamtype" }, *values[] = { "stdout" };
	assert_int_equal(na_spdy_put_headers(&valid, &z, NA_SPDY_SYN_STREAM, 1, 0, names, values, 1), 0);
	na_spdy_z_done(&z);
	for (int it = 0; it < 20000; it++) {
		size_t n = (size_t)(seed % sizeof(buf));
		if (it & 1) { /* a valid frame with a few bytes flipped */
			n = valid.len < sizeof(buf) ? valid.len : sizeof(buf);
			memcpy(buf, valid.data, n);
		}
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			if (!(it & 1) || (seed >> 16) % 16 == 0)
				buf[i] = (uint8_t)(seed >> 16);
		}
		uint8_t *heap = malloc(n ? n : 1); /* exact size: ASan sees any overread */
		memcpy(heap, buf, n);
		struct na_spdy_frame f;
		ssize_t r = na_spdy_parse(heap, n, 1 << 20, &f);
		assert_true(r <= (ssize_t)n);
		if (r > 0 && (f.type == NA_SPDY_SYN_STREAM || f.type == NA_SPDY_SYN_REPLY)) {
			struct na_spdy_z d = { 0 };
			struct na_spdy_hdrs h;
			assert_int_equal(na_spdy_z_init(&d), 0);
			if (na_spdy_headers_decode(&d, f.data, f.len, &h) == 0)
				na_spdy_hdrs_done(&h);
			na_spdy_z_done(&d);
		}
		struct na_spdy_hdrs h;
		if (na_spdy_hdrs_parse(heap, n, &h) == 0)
			na_spdy_hdrs_done(&h);
		free(heap);
	}
	op_buf_done(&valid);
}

/* ----------------------------------------------------- exec_stream.c */

static void test_exec_request(void **state)
{
	(void)state;
	struct na_exec_req r;
	assert_int_equal(na_exec_parse_path("/exec/ns1/pod-1/postgres", &r), 0);
	assert_string_equal(r.ns, "ns1");
	assert_string_equal(r.pod, "pod-1");
	assert_string_equal(r.ctr, "postgres");
	assert_false(r.attach);
	assert_true(r.want[NA_EXEC_ERROR]);
	assert_int_equal(na_exec_add_arg(&r, "command", "psql"), 0);
	assert_int_equal(na_exec_add_arg(&r, "command", "-c"), 0);
	assert_int_equal(na_exec_add_arg(&r, "command", "select 1"), 0);
	assert_int_equal(na_exec_add_arg(&r, "input", "1"), 0);
	assert_int_equal(na_exec_add_arg(&r, "output", "1"), 0);
	assert_int_equal(na_exec_add_arg(&r, "error", "true"), 0);
	assert_int_equal(na_exec_add_arg(&r, "tty", "0"), 0);
	assert_int_equal(na_exec_add_arg(&r, "unknown", NULL), 0);
	assert_int_equal(r.argc, 3);
	assert_string_equal(r.argv[2], "select 1");
	assert_null(r.argv[3]);
	assert_true(r.want[NA_EXEC_STDIN] && r.want[NA_EXEC_STDOUT] && r.want[NA_EXEC_STDERR]);
	assert_false(r.tty);
	for (int i = 3; i < NA_EXEC_MAX_ARGS; i++)
		assert_int_equal(na_exec_add_arg(&r, "command", "x"), 0);
	assert_int_equal(na_exec_add_arg(&r, "command", "one too many"), -E2BIG);
	na_exec_req_done(&r);
	assert_int_equal(na_exec_parse_path("/attach/a/b/c", &r), 0);
	assert_true(r.attach);
	assert_int_equal(na_exec_parse_path("/containerLogs/a/b/c", &r), -ENOENT);
	assert_int_equal(na_exec_parse_path("/exec/a/b", &r), -EINVAL);
	assert_int_equal(na_exec_parse_path("/exec/a/b/c/d", &r), -EINVAL);
	assert_int_equal(na_exec_parse_path("/exec/../b/c", &r), -EINVAL);
	assert_int_equal(na_exec_parse_path("/exec/a/b c/c", &r), -EINVAL);
	assert_int_equal(na_exec_parse_path("/portForward/ns1/pod-1", &r), 0);
	assert_true(r.portforward);
	assert_string_equal(r.pod, "pod-1");
	assert_string_equal(r.ctr, "");
	assert_int_equal(na_exec_parse_path("/portForward/ns1/pod-1/c", &r), -EINVAL);
	assert_int_equal(na_exec_kind("resize"), NA_EXEC_RESIZE);
	assert_int_equal(na_exec_kind("data"), -1);
	assert_int_equal(na_exec_kind(NULL), -1);
	const char *offered[] = { "v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io" };
	assert_string_equal(na_exec_pick_protocol(offered, 3), "v4.channel.k8s.io");
	assert_null(na_exec_pick_protocol(offered, 1));
}

static void test_exec_resize(void **state)
{
	(void)state;
	uint16_t w = 0, h = 0;
	static const char ok[] = "{\"Width\":123,\"Height\":45}";
	assert_int_equal(na_exec_parse_resize(ok, strlen(ok), &w, &h), 0);
	assert_int_equal(w, 123);
	assert_int_equal(h, 45);
	static const char *const bad[] = {
		"{\"Width\":0,\"Height\":45}", "{\"Width\":70000,\"Height\":45}",
		"{\"Width\":\"80\",\"Height\":45}", "{\"Height\":45}", "[80,24]", "",
		"{\"Width\":80,", "{\"Width\":-1,\"Height\":24}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++)
		assert_int_equal(na_exec_parse_resize(bad[i], strlen(bad[i]), &w, &h), -EINVAL);
	/* only the first n bytes count */
	assert_int_equal(na_exec_parse_resize(ok, 10, &w, &h), -EINVAL);
}

static void test_pf_key(void **state)
{
	(void)state;
	struct na_pf_key k;
	assert_int_equal(na_pf_stream_key("error", "5432", "0", 1, &k), 0);
	assert_false(k.data);
	assert_int_equal(k.port, 5432);
	assert_string_equal(k.id, "0");
	assert_int_equal(na_pf_stream_key("data", "5432", "0", 3, &k), 0);
	assert_true(k.data);
	assert_string_equal(k.id, "0");
	/* clients without requestID: the pair is named by the error stream's id */
	assert_int_equal(na_pf_stream_key("error", "80", NULL, 5, &k), 0);
	assert_string_equal(k.id, "5");
	assert_int_equal(na_pf_stream_key("data", "80", "", 7, &k), 0);
	assert_string_equal(k.id, "5");
	assert_int_equal(na_pf_stream_key("stdin", "80", "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key("data", "0", "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key("data", "65536", "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key("data", "80x", "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key("data", NULL, "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key(NULL, "80", "1", 1, &k), -EINVAL);
	assert_int_equal(na_pf_stream_key("data", "80", "0123456789012345678901234567890123", 1, &k),
			 -EINVAL);
	const char *offered[] = { "portforward.k8s.io" };
	assert_string_equal(na_pf_pick_protocol(offered, 1), "portforward.k8s.io");
	assert_null(na_pf_pick_protocol(offered, 0));
}

static void test_exec_status(void **state)
{
	(void)state;
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(na_exec_status_json(&b, 0, NULL), 0);
	assert_string_equal(op_buf_str(&b), "{\"metadata\":{},\"status\":\"Success\"}");
	op_buf_reset(&b);
	assert_int_equal(na_exec_status_json(&b, 3, NULL), 0);
	json_object *o = J(op_buf_str(&b));
	assert_string_equal(op_json_key_str(o, "reason"), "NonZeroExitCode");
	json_object *details, *causes;
	assert_true(json_object_object_get_ex(o, "details", &details));
	assert_true(json_object_object_get_ex(details, "causes", &causes));
	json_object *c0 = json_object_array_get_idx(causes, 0);
	assert_string_equal(op_json_key_str(c0, "reason"), "ExitCode");
	assert_string_equal(op_json_key_str(c0, "message"), "3");
	json_object_put(o);
	op_buf_reset(&b);
	assert_int_equal(na_exec_status_json(&b, 1, "spawn \"x\" failed"), 0);
	o = J(op_buf_str(&b));
	assert_string_equal(op_json_key_str(o, "message"), "spawn \"x\" failed");
	assert_string_equal(op_json_key_str(o, "status"), "Failure");
	json_object_put(o);
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
		cmocka_unit_test(test_kubelet_logs), cmocka_unit_test(test_podspec_table),
		cmocka_unit_test(test_pg_major),     cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_spdy_parse),   cmocka_unit_test(test_spdy_headers),
		cmocka_unit_test(test_spdy_hdrs_parse), cmocka_unit_test(test_spdy_fuzz),
		cmocka_unit_test(test_exec_request), cmocka_unit_test(test_exec_status),
		cmocka_unit_test(test_pf_key),       cmocka_unit_test(test_exec_resize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
