/* openapi/yaml.c - the strict single-document reader used for the schema and
 * the CRD (see oa_yaml_parse in openapi.h): support/yaml with openapi's caps
 * and duplicate keys rejected. */
#include "openapi/openapi.h"

#include <errno.h>

#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml.h"

int oa_yaml_parse(const char *data, size_t len, json_object **ret, struct op_err *err)
{
	static const struct op_yaml_limits lim = {
		.max_bytes = OA_MAX_DOC,
		.max_depth = OA_MAX_DEPTH,
		.reject_duplicate_keys = true,
	};
	_cleanup_(op_json_putp) json_object *docs = NULL;
	int n = op_yaml_parse_docs(data, len, &lim, &docs, err);
	if (n < 0)
		return op_err_prefix(err, "YAML");
	if (n == 0)
		return op_err_set(err, -ENODATA, "YAML: empty document");
	if (n > 1)
		return op_err_set(err, -EINVAL, "YAML: expected a single document, got %d", n);
	*ret = json_object_get(json_object_array_get_idx(docs, 0));
	return 0;
}
