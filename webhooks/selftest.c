/* webhooks/selftest.c - the admission check of `pgop selftest` (the chart's
 * `helm test`): a dry-run create of an invalid and of a valid Cluster through
 * the caller's API client, and whether admission answered as pgop would: the
 * invalid one refused with the offending field named, the valid one admitted
 * with pgop's defaults (spec.imageName is set by the mutating webhook only,
 * not by the CRD). A transient failure (webhook not reachable yet, 5xx) is
 * retried once a second until the deadline; a wrong answer fails at once. */
#include "webhooks/selftest.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/json.h"

static const char invalid_cluster[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"pgop-selftest-invalid\"},"
	"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"},"
	"\"postgresql\":{\"parameters\":{\"listen_addresses\":\"*\"}}}}";

static const char valid_cluster[] =
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"pgop-selftest-valid\"},"
	"\"spec\":{\"instances\":1,\"storage\":{\"size\":\"1Gi\"}}}";

/* Errors worth retrying: the webhook or the API server not there yet. */
static bool transient(int r)
{
	return r != -EINVAL && r != -EACCES && r != -ENOENT;
}

enum verdict { V_PASS, V_FAIL, V_RETRY };

static enum verdict check_invalid(const struct wh_selftest_io *io)
{
	struct op_err err = OP_ERR_INIT;
	json_object *obj = NULL;
	int r = io->dry_create(io->ud, invalid_cluster, &obj, &err);
	json_object_put(obj);
	if (r >= 0) {
		fprintf(io->out, "FAIL invalid Cluster was admitted (is the validating webhook registered?)\n");
		return V_FAIL;
	}
	if (r != -EINVAL) {
		fprintf(io->out, "...  invalid Cluster: %s\n", err.msg);
		return transient(r) ? V_RETRY : V_FAIL;
	}
	if (!strstr(err.msg, WH_SELFTEST_FIELD)) {
		fprintf(io->out, "FAIL invalid Cluster refused without naming %s: %s\n", WH_SELFTEST_FIELD,
		       err.msg);
		return V_FAIL;
	}
	fprintf(io->out, "ok   invalid Cluster refused: %s\n", err.msg);
	return V_PASS;
}

static enum verdict check_valid(const struct wh_selftest_io *io)
{
	struct op_err err = OP_ERR_INIT;
	_cleanup_(op_json_putp) json_object *obj = NULL;
	int r = io->dry_create(io->ud, valid_cluster, &obj, &err);
	if (r < 0) {
		fprintf(io->out, "%s valid Cluster refused: %s\n", transient(r) ? "... " : "FAIL", err.msg);
		return transient(r) ? V_RETRY : V_FAIL;
	}
	const char *image = op_json_str_at(obj, "spec.imageName");
	if (!image || !*image) {
		fprintf(io->out, "FAIL valid Cluster admitted without pgop's defaults (no spec.imageName: is "
		       "the mutating webhook registered?)\n");
		return V_FAIL;
	}
	fprintf(io->out, "ok   valid Cluster admitted with defaults (spec.imageName %s)\n", image);
	return V_PASS;
}

int wh_selftest(const struct wh_selftest_io *io, unsigned timeout_s)
{
	time_t deadline = time(NULL) + (time_t)timeout_s;
	enum verdict inv = V_RETRY, val = V_RETRY;
	for (;;) {
		if (inv == V_RETRY)
			inv = check_invalid(io);
		if (val == V_RETRY)
			val = check_valid(io);
		if ((inv != V_RETRY && val != V_RETRY) || time(NULL) >= deadline)
			break;
		sleep(1);
	}
	bool ok = inv == V_PASS && val == V_PASS;
	fprintf(io->out, "%s\n", ok ? "selftest passed" : "selftest FAILED");
	return ok ? 0 : 1;
}
