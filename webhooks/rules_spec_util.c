/* webhooks/rules_spec_util.c - read-only helpers shared by the V rules
 * (rules_spec.h): ctx lookups, quantity fields, PostgreSQL value formats and
 * Kubernetes name formats (typed JSON lookups are in lookup.c).
 */
#include "webhooks/rules_spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "support/alloc.h"
#include "support/json.h"

const char *wh_param(const struct wh_ctx *ctx, const char *key)
{
	json_object *params = wh_obj(ctx->spec, "postgresql.parameters");
	json_object *v = NULL;
	if (!params || !json_object_object_get_ex(params, key, &v) || !v ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

json_object *wh_external_cluster(const struct wh_ctx *ctx, const char *name)
{
	json_object *a = wh_arr(ctx->spec, "externalClusters");
	size_t n = a ? json_object_array_length(a) : 0;
	for (size_t i = 0; name && i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		const char *en = wh_str(e, "name");
		if (en && strcmp(en, name) == 0)
			return e;
	}
	return NULL;
}

/* ---- quantities ---- */

int wh_quantity_value(json_object *v, struct api_quantity *ret)
{
	const char *text;
	if (json_object_is_type(v, json_type_string))
		text = json_object_get_string(v);
	else if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
		/* Quantity.UnmarshalJSON parses a bare number's text the same way */
		text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	else
		return -EINVAL;
	return api_quantity_parse_exact(text, ret, NULL) < 0 ? -EINVAL : 0;
}

int wh_quantity_at(json_object *root, const char *dotted, struct api_quantity *ret)
{
	json_object *v = wh_at(root, dotted);
	if (!v)
		return 0;
	return wh_quantity_value(v, ret) < 0 ? -EINVAL : 1;
}

/* ---- PostgreSQL value formats ---- */

bool api_pg_bool_parse(const char *v, bool *ret)
{
	if (!v)
		return false;
	size_t n = strlen(v);
	if (n == 0)
		return false;
	static const struct {
		const char *word;
		size_t min;
		bool val;
	} words[] = {
		{ "true", 1, true }, { "false", 1, false }, { "yes", 1, true },
		{ "no", 1, false },  { "on", 2, true },     { "off", 2, false },
		{ "1", 1, true },    { "0", 1, false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(words); i++) {
		if (n >= words[i].min && n <= strlen(words[i].word) &&
		    strncasecmp(v, words[i].word, n) == 0) {
			*ret = words[i].val;
			return true;
		}
	}
	return false;
}

/* Go strconv.Atoi: optional sign, then decimal digits only. */
static bool go_atoi_ok(const char *s, size_t n)
{
	size_t i = (n > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
	if (i == n)
		return false;
	for (; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

int api_pg_size_parse(const char *v, struct api_quantity *ret_bytes)
{
	if (!v || !*v || strlen(v) > 64)
		return -EINVAL;
	size_t n = strlen(v);
	_cleanup_free_ char *q = op_malloc(n + 4); /* room for "MB" or "i" */
	memcpy(q, v, n + 1);
	if (go_atoi_ok(q, n)) { /* a bare number means MB */
		memcpy(q + n, "MB", 3);
		n += 2;
	}
	if (q[n - 1] != 'B')
		return -EINVAL;
	q[--n] = '\0';
	size_t o = 0; /* drop spaces: "128 MB" is valid in PostgreSQL */
	for (size_t i = 0; i < n; i++)
		if (q[i] != ' ')
			q[o++] = q[i];
	q[o] = '\0';
	if (!go_atoi_ok(q, o)) { /* kB -> Ki, MB -> Mi, GB -> Gi, TB -> Ti */
		if (o > 0 && q[o - 1] == 'k')
			q[o - 1] = 'K';
		q[o++] = 'i';
		q[o] = '\0';
	}
	return api_quantity_parse_exact(q, ret_bytes, NULL) < 0 ? -EINVAL : 0;
}

bool wh_is_pg_ident(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '$'))
			return false;
	return true;
}

/* ---- Kubernetes name formats ---- */

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return isalnum((unsigned char)c) != 0;
}

bool wh_is_dns1035_label(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool is_dns1123_label_n(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool wh_is_dns1123_subdomain(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 253)
		return false;
	const char *p = s;
	for (;;) {
		size_t l = strcspn(p, ".");
		if (!is_dns1123_label_n(p, l))
			return false;
		if (!p[l])
			return true;
		p += l + 1;
	}
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most max chars, n > 0 */
static bool is_name_part(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool wh_is_qualified_name(const char *s)
{
	if (!s)
		return false;
	const char *slash = strchr(s, '/');
	if (!slash)
		return is_name_part(s, strlen(s), 63);
	if (strchr(slash + 1, '/'))
		return false;
	_cleanup_free_ char *prefix = op_strndup(s, (size_t)(slash - s));
	return wh_is_dns1123_subdomain(prefix) && is_name_part(slash + 1, strlen(slash + 1), 63);
}

bool wh_is_label_value(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n == 0 || is_name_part(s, n, 63);
}

void wh_check_label_selector(json_object *sel, const char *path, struct wh_result *res)
{
	if (!sel)
		return;
	if (!json_object_is_type(sel, json_type_object)) {
		wh_result_error(res, path, "a label selector must be an object");
		return;
	}
	json_object *labels = wh_obj(sel, "matchLabels");
	if (labels) {
		json_object_object_foreach(labels, k, v)
		{
			if (!wh_is_qualified_name(k))
				wh_result_error(res, path, "invalid label key in matchLabels: '%s'",
						k);
			if (!v || !json_object_is_type(v, json_type_string) ||
			    !wh_is_label_value(json_object_get_string(v)))
				wh_result_error(res, path,
						"invalid label value in matchLabels for key '%s'", k);
		}
	}
	json_object *exprs = wh_arr(sel, "matchExpressions");
	size_t n = exprs ? json_object_array_length(exprs) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(exprs, i);
		_cleanup_free_ char *ep = op_asprintf("%s.matchExpressions[%zu]", path, i);
		const char *key = wh_str(e, "key");
		const char *op = wh_str(e, "operator");
		size_t nv = wh_len(e, "values");
		if (!wh_is_qualified_name(key))
			wh_result_error(res, ep, "invalid label key '%s'", key ? key : "");
		if (op && (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)) {
			if (nv == 0)
				wh_result_error(res, ep,
						"values: must be specified when `operator` is 'In' or 'NotIn'");
		} else if (op && (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0)) {
			if (nv != 0)
				wh_result_error(res, ep,
						"values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
		} else {
			wh_result_error(res, ep, "operator: not a valid selector operator");
		}
		json_object *vals = wh_arr(e, "values");
		for (size_t j = 0; j < nv; j++) {
			json_object *v = json_object_array_get_idx(vals, j);
			if (!v || !json_object_is_type(v, json_type_string) ||
			    !wh_is_label_value(json_object_get_string(v)))
				wh_result_error(res, ep, "values[%zu]: invalid label value", j);
		}
	}
}
