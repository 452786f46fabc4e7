/* support/jsonpatch.h - RFC 6902 JSON Patch application, shared by
 * admission (webhooks/: the cnpg.io/podPatch check, tests) and the
 * reconciler (reconciler/: cnpg.io/podPatch applied to the instance Pods).
 *
 * Paths are RFC 6901 JSON Pointers ('~0' is '~', '~1' is '/'); array
 * indexes have no leading zeros; "-" appends (add, move and copy targets).
 */
#ifndef PGOP_SUPPORT_JSONPATCH_H
#define PGOP_SUPPORT_JSONPATCH_H

#include <json-c/json.h>

#include "support/err.h"

/* Applies patch (borrowed JSON array) to a deep copy of doc (borrowed).
 * Supports add, remove, replace, move, copy and test. On success
 * *ret_doc is the OWNED patched document. Returns -EINVAL (err names the
 * operation index and path) when an operation is malformed or does not apply. */
OP_MUST_CHECK int op_jsonpatch_apply(json_object *doc, json_object *patch, json_object **ret_doc,
				     struct op_err *err);

#endif
