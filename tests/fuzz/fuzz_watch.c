/* tests/fuzz/fuzz_watch.c - arbitrary bytes as the body of a watch stream
 * (kube/watch.c: line framing across chunks, {type, object} events, ERROR
 * and 410, the resourceVersion a resumed watch sends), through
 * kube__watch_replay, the write callback a live stream uses.
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks):
 *   - the answer is 0, 1 or -EPROTO/-EINVAL/-EMSGSIZE/-ETIME/-EIO (-EIO: the
 *     handler's own failure, on an object with a "fail" key), with a message
 *     when negative;
 *   - every event has a known type and an object;
 *   - the resume resourceVersion is the last non-ERROR handled event's
 *     metadata.resourceVersion (unchanged when that is empty);
 *   - chunking does not matter: the body in one chunk, one byte per chunk and
 *     in chunks sized by the first byte give the same events, answer and
 *     resourceVersion.
 * Seeds: tests/fuzz/corpus/watch/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"
#include "support/buf.h"
#include "support/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct log {
	struct op_buf events;
	char *rv; /* expected resume resourceVersion */
};

static int on_event(void *ud, enum kube_watch_type t, json_object *obj)
{
	struct log *l = ud;
	if ((unsigned)t > KUBE_WATCH_ERROR || !json_object_is_type(obj, json_type_object))
		abort();
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (op_buf_addf(&l->events, "%s %s\n", kube_watch_type_name(t), s) < 0)
		abort();
	if (json_object_object_get_ex(obj, "fail", NULL))
		return -EIO;
	const char *rv = kube_obj_resource_version(obj);
	if (t != KUBE_WATCH_ERROR && rv && *rv) {
		free(l->rv);
		l->rv = strdup(rv);
	}
	return 0;
}

static int replay(const char *body, size_t len, size_t step, struct log *l, char **ret_rv)
{
	size_t n = step ? (len + step - 1) / step : 1;
	struct kube__chunk *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++) {
		v[i].data = body + (step ? i * step : 0);
		v[i].len = step ? (len - i * step < step ? len - i * step : step) : len;
	}
	struct op_err err = OP_ERR_INIT;
	int r = kube__watch_replay(KUBE_PODS, v, n, on_event, l, ret_rv, &err);
	free(v);
	if (r != 0 && r != 1 && r != -EPROTO && r != -EINVAL && r != -EMSGSIZE && r != -ETIME &&
	    r != -EIO)
		abort();
	if (r < 0 && !err.msg[0])
		abort();
	if ((l->rv == NULL) != (*ret_rv == NULL) || (l->rv && strcmp(l->rv, *ret_rv)))
		abort();
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 256 * 1024)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	const size_t steps[] = { 0, 1, step };
	struct log ref = { .events = OP_BUF_INIT(OP_BUF_MAX_FILE) };
	char *ref_rv = NULL;
	int ref_r = replay(body, len, steps[0], &ref, &ref_rv);
	for (size_t i = 1; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct log l = { .events = OP_BUF_INIT(OP_BUF_MAX_FILE) };
		char *rv = NULL;
		int r = replay(body, len, steps[i], &l, &rv);
		if (r != ref_r || l.events.len != ref.events.len ||
		    (l.events.len && memcmp(l.events.data, ref.events.data, l.events.len)) ||
		    (rv == NULL) != (ref_rv == NULL) || (rv && strcmp(rv, ref_rv)))
			abort();
		free(rv);
		free(l.rv);
		op_buf_done(&l.events);
	}
	free(ref_rv);
	free(ref.rv);
	op_buf_done(&ref.events);
	return 0;
}
