/* webhooks/defaults.h - internal to webhooks/: the defaulting rules applied
 * in place, without building a patch.
 */
#ifndef PGOP_WEBHOOKS_DEFAULTS_H
#define PGOP_WEBHOOKS_DEFAULTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "support/buf.h"
#include "support/err.h"

/* Applies D1-D14 to cluster (borrowed, modified in place; must be an object).
 * preserve_user_fixed: keep user values of fixed PostgreSQL parameters in D6
 * (CNPG Default(), the mutating webhook); false drops them (CNPG
 * SetDefaults(), applied to the old object on UPDATE). Never fails. */
void wh_defaults_apply(json_object *cluster, bool preserve_user_fixed);

/* wh_default() for the admission path: the patch is appended to patch as
 * JSON text (wh_patch_diff_text), *ret_n_ops (may be NULL) its number of
 * operations. cluster is modified in place as by wh_default(). */
OP_MUST_CHECK int wh_default_text(json_object *cluster, struct op_buf *patch, size_t *ret_n_ops,
				  struct op_err *err);

/* The same for any admitted kind (kinds.c): obj (an object) defaulted in
 * place, the patch appended to patch as text. */
OP_MUST_CHECK int wh_default_resource_text(int resource, json_object *obj, struct op_buf *patch,
					   size_t *ret_n_ops, struct op_err *err);

#endif
