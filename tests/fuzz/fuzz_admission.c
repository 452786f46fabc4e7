/* tests/fuzz/fuzz_admission.c - arbitrary bytes as an AdmissionReview request
 * body, through every webhook route (mutate and validate of Cluster, Backup,
 * ScheduledBackup; validate of ObjectStore), exactly as the HTTPS server hands
 * them over.
 *
 * Invariants checked besides memory safety (ASan/UBSan):
 *   - success means a JSON response that echoes apiVersion/kind and carries
 *     response.uid and response.allowed;
 *   - failure means -EINVAL or -EMSGSIZE with an error message set;
 *   - the same input gives the same answer twice (no hidden state).
 * Seeds: tests/fuzz/corpus/admission/.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/buf.h"
#include "support/err.h"
#include "support/json.h"
#include "support/log.h"
#include "webhooks/webhooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	op_log_set_level(OP_LOG_FATAL); /* keep the fuzzer's output readable */
	return 0;
}

static void check_response(const struct op_buf *resp)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(resp->data, resp->len, 0, &o, &err) < 0)
		abort(); /* the response must be JSON */
	const char *api = op_json_str_at(o, "apiVersion");
	const char *kind = op_json_str_at(o, "kind");
	json_object *allowed = op_json_at(o, "response.allowed");
	if (!api || strcmp(api, "admission.k8s.io/v1") != 0 || !kind ||
	    strcmp(kind, "AdmissionReview") != 0)
		abort();
	if (!op_json_str_at(o, "response.uid") || !json_object_is_type(allowed, json_type_boolean))
		abort();
	json_object_put(o);
}

static void one(enum wh_kind kind, enum wh_resource rs, const char *body, size_t len)
{
	struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_buf again = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_err err = OP_ERR_INIT, err2 = OP_ERR_INIT;
	int r = wh_handle_review_resource(kind, rs, body, len, &resp, &err);
	int r2 = wh_handle_review_resource(kind, rs, body, len, &again, &err2);
	if (r != r2)
		abort();
	if (r == 0) {
		check_response(&resp);
		if (resp.len != again.len || memcmp(op_buf_str(&resp), op_buf_str(&again), resp.len))
			abort();
	} else if ((r != -EINVAL && r != -EMSGSIZE) || !err.code || !err.msg[0] ||
		   strcmp(err.msg, err2.msg) != 0) {
		abort();
	}
	op_buf_done(&resp);
	op_buf_done(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > OP_BUF_MAX_HTTP_BODY) /* the server rejects these with 413 first */
		return 0;
	/* The server hands handlers a NUL-terminated copy; so do we. */
	char *body = malloc(size + 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	body[size] = '\0';
	for (int rs = 0; rs < WH_RES__COUNT; rs++) {
		if (rs != WH_RES_OBJECT_STORE)
			one(WH_MUTATE, (enum wh_resource)rs, body, size);
		one(WH_VALIDATE, (enum wh_resource)rs, body, size);
	}
	free(body);
	return 0;
}
