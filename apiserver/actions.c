/* apiserver/actions.c - the bodies of the actions (POST clusters/NAME/switchover,
 * /restart) and their success Status. Pure; the action itself is the
 * reconciler's (as_source.act, reconciler/live.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

/* One row per action: its subresource and the one field its body may carry. */
static const struct {
	const char *sub;
	enum as_action_kind kind;
	const char *field;
} actions[] = {
	{ "switchover", AS_ACTION_SWITCHOVER, "target" },
	{ "restart", AS_ACTION_RESTART, "instance" },
};

static bool dns_name(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len > AS_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if ((c == '-' || c == '.') && i > 0 && i + 1 < len)
			continue;
		return false;
	}
	return true;
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

int as_action_parse(const char *sub, const char *body, size_t len, struct as_action *ret,
		    struct op_err *err)
{
	size_t k = 0;
	while (k < OP_ARRAY_SIZE(actions) && strcmp(actions[k].sub, sub ? sub : "") != 0)
		k++;
	if (k == OP_ARRAY_SIZE(actions))
		return op_err_set(err, -ENOENT, "%s is not an action", sub ? sub : "");
	if (len > AS_ACTION_BODY_MAX)
		return op_err_set(err, -EMSGSIZE, "request body of %zu bytes is over the %d byte limit",
				  len, AS_ACTION_BODY_MAX);
	struct as_action a = { .kind = actions[k].kind };
	if (!body || blank(body, len)) {
		*ret = a;
		return 0;
	}
	json_object *o = NULL;
	struct op_err je = OP_ERR_INIT;
	if (op_json_parse(body, len, 4, &o, &je) < 0)
		return op_err_set(err, -EINVAL, "the request body is not JSON: %s", je.msg);
	int r = 0;
	if (!json_object_is_type(o, json_type_object)) {
		r = op_err_set(err, -EINVAL, "the request body must be a JSON object, got %s",
			       op_json_type_name(o));
		goto out;
	}
	json_object_object_foreach(o, key, val)
	{
		if (strcmp(key, actions[k].field) != 0) {
			r = op_err_set(err, -EINVAL, "unknown field \"%.64s\" (%s takes only \"%s\")",
				       key, sub, actions[k].field);
			goto out;
		}
		if (json_object_is_type(val, json_type_null))
			continue;
		if (!json_object_is_type(val, json_type_string)) {
			r = op_err_set(err, -EINVAL, "%s: expected string, got %s", key,
				       op_json_type_name(val));
			goto out;
		}
		const char *v = json_object_get_string(val);
		if (*v && !dns_name(v)) {
			r = op_err_set(err, -EINVAL, "%s: \"%.64s\" is not a valid instance name", key,
				       v);
			goto out;
		}
		snprintf(a.instance, sizeof(a.instance), "%s", v);
	}
	*ret = a;
out:
	json_object_put(o);
	return r;
}

int as_status_accepted(struct op_buf *out, const char *msg, const char *name)
{
	json_object *d = op_jobj(), *det = op_jobj();
	op_jsets(d, "kind", "Status");
	op_jsets(d, "apiVersion", "v1");
	op_jset(d, "metadata", op_jobj());
	op_jsets(d, "status", "Success");
	op_jsets(d, "message", msg ? msg : "accepted");
	op_jsets(det, "name", name);
	op_jsets(det, "group", AS_GROUP);
	op_jsets(det, "kind", "clusters");
	op_jset(d, "details", det);
	op_jset(d, "code", op_jint(202));
	op_buf_reset(out);
	int r = op_buf_adds(out, json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(d);
	return r;
}
