/* cmd/selftest.c - `pgop selftest`, the chart's `helm test` hook: flags, the
 * API client, and its dry-run create (dryRun=All: nothing is stored) handed
 * to the check itself, wh_selftest (webhooks/selftest.c). */
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
#include "webhooks/selftest.h"

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
	"admission refuses the first naming " WH_SELFTEST_FIELD "\n"
	"and admits the second with pgop's defaults. Exit 0 when both answers are right.\n\n"
	"Flags:\n";

struct dry_ctx {
	struct kube_client *c;
	const char *ns;
};

/* A dry-run POST; *ret_obj owned (may be NULL). */
static int dry_create(void *ud, const char *body, json_object **ret_obj, struct op_err *err)
{
	const struct dry_ctx *d = ud;
	const struct kube_request req = {
		.method = "POST", .kind = KUBE_CLUSTERS, .ns = d->ns, .query = "dryRun=All",
		.body = body, .verb = "dry-run create", .msg_name = "selftest",
	};
	return kube_request(d->c, &req, ret_obj, err);
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
	struct dry_ctx d = { .c = c, .ns = o.ns ? o.ns : kube_client_namespace(c) };
	const struct wh_selftest_io io = { .dry_create = dry_create, .ud = &d, .out = stdout };
	r = wh_selftest(&io, o.timeout_s);
	kube_client_free(c);
	return r;
}
