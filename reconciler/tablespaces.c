/* reconciler/tablespaces.c (layer 3) - status.tablespacesStatus: what the
 * primary's instance manager reports of spec.tablespaces (its /pg/status
 * "tablespaces", instance/tablespaces.c), copied field by field (name,
 * owner, state, error; CloudNativePG's TablespaceState). The volumes are
 * objects.c's and reconcile.c's. */
#include <string.h>

#include "reconciler/ctl.h"
#include "reconciler/status.h"
#include "support/alloc.h"
#include "support/json.h"

#define TBS_STATUS_MAX 1024 /* entries copied at most (the webhook caps spec.tablespaces) */
#define TBS_TEXT_MAX 512    /* bytes of a field copied at most */

static void copy_str(json_object *to, json_object *from, const char *key)
{
	const char *s = op_json_key_str(from, key);
	if (s && *s)
		op_jset(to, key, json_object_new_string_len(s, (int)strnlen(s, TBS_TEXT_MAX)));
}

void rc_tablespaces_status(struct rc_run *r, const struct rc_instance *v, size_t n)
{
	json_object *rep = NULL;
	for (size_t i = 0; i < n && !rep; i++)
		if (v[i].has_status && v[i].is_primary && v[i].doc)
			rep = op_json_at(v[i].doc, "tablespaces");
	if (!json_object_is_type(rep, json_type_array))
		return; /* no primary answered, or one without tablespaces: keep what is there */
	json_object *out = op_jarr();
	for (size_t i = 0; i < json_object_array_length(rep) && i < TBS_STATUS_MAX; i++) {
		json_object *t = json_object_array_get_idx(rep, i);
		const char *name = op_json_key_str(t, "name"), *state = op_json_key_str(t, "state");
		if (!name || !*name || !state || !*state)
			continue;
		json_object *e = op_jobj();
		copy_str(e, t, "name");
		copy_str(e, t, "owner");
		copy_str(e, t, "state");
		copy_str(e, t, "error");
		op_jpush(out, e);
	}
	if (r->want.tablespaces_status)
		json_object_put(r->want.tablespaces_status);
	r->want.tablespaces_status = out;
}
