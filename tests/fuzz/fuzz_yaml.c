/* tests/fuzz/fuzz_yaml.c - arbitrary bytes through the YAML/JSON document
 * reader (support/yaml), with small limits so the fuzzer also reaches the
 * limit paths (depth, nodes, alias expansion).
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks):
 *   - success returns an array with exactly the returned number of elements,
 *     none of them null, and it serializes to JSON that op_json_parse reads
 *     back to an equal value (so the output is always valid JSON);
 *   - failure returns -EINVAL or -EMSGSIZE with a message, and no output;
 *   - the same input gives the same answer twice;
 *   - with reject_duplicate_keys the answer is the same, or -EINVAL naming a
 *     duplicate key;
 *   - every document rendered by op_yaml_emit (support/yaml_emit) reads back
 *     to the same value (inputs with !!binary may hold bytes that are not
 *     UTF-8, which the emitter refuses with -EINVAL).
 * Seeds: tests/fuzz/corpus/yaml/.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/buf.h"
#include "support/err.h"
#include "support/json.h"
#include "support/yaml.h"
#include "support/yaml_emit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct op_yaml_limits lim = {
	.max_bytes = 64 * 1024,
	.max_depth = 16,
	.max_nodes = 20000,
};

/* json_object_equal, except that numbers compare by value: a YAML float
 * such as 1.5e+3 prints as 1500 (as Go prints it) and reads back as an int. */
static bool same(json_object *a, json_object *b)
{
	json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
	bool na = ta == json_type_int || ta == json_type_double;
	bool nb = tb == json_type_int || tb == json_type_double;
	if (na && nb) {
		if (ta == json_type_int && tb == json_type_int)
			return json_object_equal(a, b);
		return json_object_get_double(a) == json_object_get_double(b);
	}
	if (ta != tb)
		return false;
	switch (ta) {
	case json_type_array:
		if (json_object_array_length(a) != json_object_array_length(b))
			return false;
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (!same(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i)))
				return false;
		return true;
	case json_type_object: {
		if (json_object_object_length(a) != json_object_object_length(b))
			return false;
		json_object_object_foreach(a, k, va)
		{
			json_object *vb = NULL;
			if (!json_object_object_get_ex(b, k, &vb) || !same(va, vb))
				return false;
		}
		return true;
	}
	default: return json_object_equal(a, b);
	}
}

static void check_ok(json_object *docs, int n)
{
	if (!json_object_is_type(docs, json_type_array) ||
	    json_object_array_length(docs) != (size_t)n)
		abort();
	for (int i = 0; i < n; i++)
		if (!json_object_array_get_idx(docs, (size_t)i))
			abort(); /* null documents are skipped */
	size_t len = 0;
	const char *text = json_object_to_json_string_length(docs, JSON_C_TO_STRING_PLAIN, &len);
	if (!text)
		abort();
	json_object *back = NULL;
	struct op_err err = OP_ERR_INIT;
	/* Alias copies are charged to max_depth too; one more level for the
	 * documents array itself. */
	if (op_json_parse(text, len, (int)lim.max_depth + 1, &back, &err) != 0)
		abort();
	if (!same(docs, back))
		abort();
	json_object_put(back);
}

/* op_yaml_emit each document and read it back. */
static void check_emit(json_object *docs, bool may_fail)
{
	size_t n = json_object_array_length(docs);
	for (size_t i = 0; i < n; i++) {
		json_object *doc = json_object_array_get_idx(docs, i);
		struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_FILE);
		struct op_err err = OP_ERR_INIT;
		int r = op_yaml_emit(doc, &out, &err);
		if (r < 0) {
			if (!may_fail || r != -EINVAL || out.len != 0)
				abort();
			op_buf_done(&out);
			continue;
		}
		json_object *back = NULL;
		struct op_yaml_limits big = { .max_depth = lim.max_depth + 1 };
		if (op_yaml_parse_docs(op_buf_str(&out), out.len, &big, &back, &err) != 1 ||
		    !same(doc, json_object_array_get_idx(back, 0)))
			abort();
		json_object_put(back);
		op_buf_done(&out);
	}
}

static int run(const char *in, size_t size, bool sniff, char **ret_sig)
{
	json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	int r = sniff ? op_yaml_or_json_parse_docs(in, size, &lim, &docs, &err)
		      : op_yaml_parse_docs(in, size, &lim, &docs, &err);
	if (r < 0) {
		if (docs || (r != -EINVAL && r != -EMSGSIZE) || err.code != r || !err.msg[0])
			abort();
		*ret_sig = strdup(err.msg);
		return r;
	}
	check_ok(docs, r);
	if (!sniff)
		check_emit(docs, memmem(in, size, "binary", 6) != NULL);
	*ret_sig = strdup(json_object_to_json_string_ext(docs, JSON_C_TO_STRING_PLAIN));
	json_object_put(docs);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	for (int sniff = 0; sniff <= 1; sniff++) {
		char *a = NULL, *b = NULL;
		int r1 = run(in, size, sniff, &a);
		int r2 = run(in, size, sniff, &b);
		if (r1 != r2 || !a || !b || strcmp(a, b) != 0)
			abort();
		free(a);
		free(b);
	}
	/* strict keys: same documents, or a duplicate-key error */
	struct op_yaml_limits strict = lim;
	strict.reject_duplicate_keys = true;
	json_object *lax = NULL, *docs = NULL;
	struct op_err e1 = OP_ERR_INIT, e2 = OP_ERR_INIT;
	int r1 = op_yaml_parse_docs(in, size, &lim, &lax, &e1);
	int r2 = op_yaml_parse_docs(in, size, &strict, &docs, &e2);
	if (r2 >= 0 && (r1 != r2 || !json_object_equal(lax, docs)))
		abort();
	if (r2 < 0 && r1 >= 0 && (r2 != -EINVAL || !strstr(e2.msg, "duplicate key")))
		abort();
	json_object_put(lax);
	json_object_put(docs);
	return 0;
}
