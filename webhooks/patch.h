/* webhooks/patch.h - internal to webhooks/: RFC 6902 JSON Patch from the
 * difference of two JSON documents.
 *
 * Objects are diffed member by member (member order is ignored); arrays and
 * values of different types are replaced wholesale. Paths are RFC 6901 JSON
 * Pointers with '~' -> "~0" and '/' -> "~1".
 */
#ifndef PGOP_WEBHOOKS_PATCH_H
#define PGOP_WEBHOOKS_PATCH_H

#include <json-c/json.h>

#include "support/buf.h"
#include "support/err.h"

/* Appends the patch turning from into to, as JSON text (an array printed as
 * json-c prints it with JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
 * to out; *ret_n_ops (may be NULL) gets the number of operations. Subtrees
 * shared by both documents (the same pointer) are equal without a look.
 * from and to are borrowed. Returns 0, or -EMSGSIZE / -ENOMEM (err says). */
OP_MUST_CHECK
int wh_patch_diff_text(json_object *from, json_object *to, struct op_buf *out, size_t *ret_n_ops,
		       struct op_err *err);

/* The same as a JSON array: from and to are borrowed. On success *ret_patch is an OWNED JSON array of
 * operations (empty when the documents are equal). Returns 0 or -ENOMEM. */
OP_MUST_CHECK int wh_patch_diff(json_object *from, json_object *to, json_object **ret_patch,
				struct op_err *err);

/* Applying a patch: support/jsonpatch.h (op_jsonpatch_apply). */

#endif
