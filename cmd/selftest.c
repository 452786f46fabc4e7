/* cmd/selftest.c - `pgop selftest`: asks the API server, through kube/, for
 * a server-side dry-run create of an invalid and of a valid Cluster, and
 * checks that admission answers as pgop would: the invalid one refused with
 * the offending field named, the valid one admitted with pgop's defaults
 * (spec.imageName is set by the mutating webhook only, not by the CRD).
 * It is the chart's `helm test` hook; nothing is stored (dryRun=All).
 *
 * A transient failure (webhook not reachable yet, 5xx) is retried until
 * --timeout; a wrong answer fails at once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/flags.h"
#include "kube/kube.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

#define SELFTEST_FIELD "spec.postgresql.parameters.listen_addresses"

struct selftest_opts {
	const char *ns;
	const char *kubeconfig;
	unsigned timeout_s;
};

static const struct cmd_flag selftest_flags[] = {
	{ "namespace", 'n', CMD_FLAG_STRING, offsetof(struct selftest_opts, ns), 0, "NS",
	  "namespace of the dry-run Clusters (default: the kubeconfig's / in-cluster namespace)" },
	{ "kubeconfig", 0, CMD_FLAG_STRING, offsetof(struct selftest_opts, kubeconfig), 0, "FILE",
	  "kubeconfig (default $KUBECONFIG, or in-cluster)" },
	{ "timeout", 0, CMD_FLAG_UINT, offsetof(struct selftest_opts, timeout_s), 3600, "SECONDS",
	  "retry transient failures this long (default 60)" },
	{ "help", 'h', CMD_FLAG_HELP, 0, 0, NULL, "this help" },
};

static const char selftest_usage[] =
	"Usage: pgop selftest [-n NS] [--kubeconfig FILE] [--timeout SECONDS]\n"
	"Server-side dry-run create of an invalid and a valid Cluster: checks that\n"
	"admission refuses the first naming " SELFTEST_FIELD "\n"
	"and admits the second with pgop's defaults. Exit 0 when both answers are right.\n\n"
	"Flags:\n";

static const char invalid_cluster[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"pgop-selftest-invalid\"},"
	"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"},"
	"\"postgresql\":{\"parameters\":{\"listen_addresses\":\"*\"}}}}";

static const char valid_cluster[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"pgop-selftest-valid\"},"
	"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}}}";

/* A dry-run POST; *ret_obj owned (may be NULL). */
static int dry_create(struct kube_client *c, const char *ns, const char *body,
		      json_object **ret_obj, struct op_err *err)
{
	const struct kube_request req = {
		.method = "POST", .kind = KUBE_CLUSTERS, .ns = ns, .query = "dryRun=All",
		.body = body, .verb = "dry-run create", .msg_name = "selftest",
	};
	return kube_request(c, &req, ret_obj, err);
}

/* Errors worth retrying: the webhook or the API server not there yet. */
static bool transient(int r)
{
	return r != -EINVAL && r != -EACCES && r != -ENOENT;
}

enum verdict { V_PASS, V_FAIL, V_RETRY };

static enum verdict check_invalid(struct kube_client *c, const char *ns)
{
	struct op_err err = OP_ERR_INIT;
	json_object *obj = NULL;
	int r = dry_create(c, ns, invalid_cluster, &obj, &err);
	json_object_put(obj);
	if (r >= 0) {
		printf("FAIL invalid Cluster was admitted (is the validating webhook registered?)\n");
		return V_FAIL;
	}
	if (r != -EINVAL) {
		printf("...  invalid Cluster: %s\n", err.msg);
		return transient(r) ? V_RETRY : V_FAIL;
	}
	if (!strstr(err.msg, SELFTEST_FIELD)) {
		printf("FAIL invalid Cluster refused without naming %s: %s\n", SELFTEST_FIELD,
		       err.msg);
		return V_FAIL;
	}
	printf("ok   invalid Cluster refused: %s\n", err.msg);
	return V_PASS;
}

static enum verdict check_valid(struct kube_client *c, const char *ns)
{
	struct op_err err = OP_ERR_INIT;
	_cleanup_(op_json_putp) json_object *obj = NULL;
	int r = dry_create(c, ns, valid_cluster, &obj, &err);
	if (r < 0) {
		printf("%s valid Cluster refused: %s\n", transient(r) ? "... " : "FAIL", err.msg);
		return transient(r) ? V_RETRY : V_FAIL;
	}
	const char *image = op_json_str_at(obj, "spec.imageName");
	if (!image || !*image) {
		printf("FAIL valid Cluster admitted without pgop's defaults (no spec.imageName: is "
		       "the mutating webhook registered?)\n");
		return V_FAIL;
	}
	printf("ok   valid Cluster admitted with defaults (spec.imageName %s)\n", image);
	return V_PASS;
}

int cmd_selftest(int argc, char **argv)
{
	struct selftest_opts o = { .timeout_s = 60 };
	int r = cmd_parse_flags(selftest_flags, OP_ARRAY_SIZE(selftest_flags), selftest_usage, argc,
				argv, &o, NULL);
	if (r == CMD_FLAGS_HELP)
		return 0;
	if (r)
		return 2;
	op_log_set_component("selftest");
	struct kube_config *kc = NULL;
	struct kube_client *c = NULL;
	struct op_err err = OP_ERR_INIT;
	r = kube_config_load(o.kubeconfig, &kc, &err);
	if (r >= 0)
		r = kube_client_new(kc, NULL, &c, &err);
	if (r < 0) {
		fprintf(stderr, "pgop selftest: no cluster access: %s\n", err.msg);
		return 2;
	}
	const char *ns = o.ns ? o.ns : kube_client_namespace(c);
	time_t deadline = time(NULL) + (time_t)o.timeout_s;
	enum verdict inv = V_RETRY, val = V_RETRY;
	for (;;) {
		if (inv == V_RETRY)
			inv = check_invalid(c, ns);
		if (val == V_RETRY)
			val = check_valid(c, ns);
		if ((inv != V_RETRY && val != V_RETRY) || time(NULL) >= deadline)
			break;
		sleep(1);
	}
	kube_client_free(c);
	bool ok = inv == V_PASS && val == V_PASS;
	printf("%s\n", ok ? "selftest passed" : "selftest FAILED");
	return ok ? 0 : 1;
}
