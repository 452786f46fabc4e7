/* apiserver/authn.c - front-proxy (requestheader) authentication: the
 * ConfigMap kube-system/extension-apiserver-authentication and the
 * X-Remote-* headers (pure). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

#define MAX_LIST 16

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void as_authn_cfg_done(struct as_authn_cfg *c)
{
	free(c->ca_pem);
	strv_free(c->allowed, c->n_allowed);
	strv_free(c->user_headers, c->n_user_headers);
	strv_free(c->group_headers, c->n_group_headers);
	strv_free(c->extra_prefixes, c->n_extra_prefixes);
	*c = (struct as_authn_cfg){ 0 };
}

void as_user_done(struct as_user *u)
{
	free(u->name);
	strv_free(u->groups, u->n_groups);
	strv_free(u->extra_keys, u->n_extra);
	strv_free(u->extra_vals, u->n_extra);
	*u = (struct as_user){ 0 };
}

static void push(char ***v, size_t *n, const char *s)
{
	*v = op_realloc(*v, (*n + 1) * sizeof(char *));
	(*v)[(*n)++] = op_strdup(s);
}

/* A ConfigMap value holding a JSON string array ("null" and absent = empty,
 * then def when given). */
static int parse_list(json_object *data, const char *key, const char *def, char ***v, size_t *n,
		      struct op_err *err)
{
	const char *txt = op_json_str_at(data, key);
	if (txt && strcmp(txt, "null") != 0) {
		json_object *arr = json_tokener_parse(txt);
		if (!arr || !json_object_is_type(arr, json_type_array) ||
		    json_object_array_length(arr) > MAX_LIST) {
			if (arr)
				json_object_put(arr);
			return op_err_set(err, -EINVAL, "data.%s: expected a JSON array of at most %d "
					  "strings", key, MAX_LIST);
		}
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *s = json_object_array_get_idx(arr, i);
			if (!json_object_is_type(s, json_type_string)) {
				json_object_put(arr);
				return op_err_set(err, -EINVAL, "data.%s[%zu]: expected a string", key, i);
			}
			push(v, n, json_object_get_string(s));
		}
		json_object_put(arr);
	}
	if (*n == 0 && def)
		push(v, n, def);
	return 0;
}

int as_authn_parse(json_object *cm, struct as_authn_cfg *ret, struct op_err *err)
{
	struct as_authn_cfg c = { 0 };
	json_object *data = op_json_at(cm, "data");
	const char *ca = op_json_str_at(data, "requestheader-client-ca-file");
	if (!ca || !strstr(ca, "BEGIN CERTIFICATE"))
		return op_err_set(err, -EINVAL, "data.requestheader-client-ca-file: no certificate");
	c.ca_pem = op_strdup(ca);
	int r = parse_list(data, "requestheader-allowed-names", NULL, &c.allowed, &c.n_allowed, err);
	if (r == 0)
		r = parse_list(data, "requestheader-username-headers", "X-Remote-User",
			       &c.user_headers, &c.n_user_headers, err);
	if (r == 0)
		r = parse_list(data, "requestheader-group-headers", "X-Remote-Group",
			       &c.group_headers, &c.n_group_headers, err);
	if (r == 0)
		r = parse_list(data, "requestheader-extra-headers-prefix", "X-Remote-Extra-",
			       &c.extra_prefixes, &c.n_extra_prefixes, err);
	if (r < 0) {
		as_authn_cfg_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

bool as_authn_cn_allowed(const struct as_authn_cfg *c, const char *cn)
{
	if (c->n_allowed == 0)
		return true;
	for (size_t i = 0; i < c->n_allowed; i++)
		if (cn && strcmp(c->allowed[i], cn) == 0)
			return true;
	return false;
}

static int hexv(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = (char)tolower((unsigned char)ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Lower-cased, percent-unescaped extra key (k8s: PathUnescape of lower). */
static char *extra_key(const char *s)
{
	size_t n = strlen(s);
	char *out = op_malloc(n + 1), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 &&
		    hexv(s[i + 2]) >= 0) {
			*o++ = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
			i += 2;
		} else {
			*o++ = (char)tolower((unsigned char)s[i]);
		}
	}
	*o = '\0';
	return out;
}

void as_authn_header(const struct as_authn_cfg *c, struct as_user *u, const char *name,
		     const char *value)
{
	if (!name || !value)
		return;
	for (size_t i = 0; i < c->n_user_headers; i++)
		if (strcasecmp(name, c->user_headers[i]) == 0 && !u->name && *value)
			u->name = op_strdup(value);
	for (size_t i = 0; i < c->n_group_headers; i++)
		if (strcasecmp(name, c->group_headers[i]) == 0 && u->n_groups < AS_MAX_GROUPS)
			push(&u->groups, &u->n_groups, value);
	for (size_t i = 0; i < c->n_extra_prefixes; i++) {
		size_t pl = strlen(c->extra_prefixes[i]);
		if (strncasecmp(name, c->extra_prefixes[i], pl) == 0 && name[pl] &&
		    u->n_extra < AS_MAX_EXTRA) {
			size_t n = u->n_extra;
			u->extra_keys = op_realloc(u->extra_keys, (n + 1) * sizeof(char *));
			u->extra_keys[n] = extra_key(name + pl);
			push(&u->extra_vals, &u->n_extra, value);
		}
	}
}

int as_authn_finish(struct as_user *u, struct op_err *err)
{
	if (!u->name)
		return op_err_set(err, -EACCES, "no user in the request headers");
	for (size_t i = 0; i < u->n_groups; i++)
		if (strcmp(u->groups[i], "system:authenticated") == 0)
			return 0;
	push(&u->groups, &u->n_groups, "system:authenticated");
	return 0;
}
