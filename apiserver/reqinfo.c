/* apiserver/reqinfo.c - request paths and field selectors (pure; fuzzed by
 * tests/fuzz/fuzz_apiserver.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apiserver/internal.h"

#define MAX_SEGS 8

/* DNS-1123 subdomain (names) or label (namespaces). */
static bool valid_name(const char *s, size_t len, bool label)
{
	if (len == 0 || len > (label ? 63u : (size_t)AS_NAME_MAX))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (alnum)
			continue;
		if (c == '-' && i > 0 && i + 1 < len)
			continue;
		if (c == '.' && !label && i > 0 && i + 1 < len)
			continue;
		return false;
	}
	return true;
}

struct seg {
	const char *p;
	size_t len;
};

static bool seg_is(const struct seg *s, const char *lit)
{
	return s->len == strlen(lit) && memcmp(s->p, lit, s->len) == 0;
}

static int split(const char *path, struct seg *segs, size_t *ret_n)
{
	size_t n = 0;
	const char *p = path;
	if (*p != '/')
		return -ENOENT;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (n == MAX_SEGS)
			return -ENOENT;
		segs[n++] = (struct seg){ p, len };
		p += len;
	}
	*ret_n = n;
	return 0;
}

static void copy_seg(char *dst, size_t cap, const struct seg *s)
{
	size_t n = s->len < cap - 1 ? s->len : cap - 1;
	memcpy(dst, s->p, n);
	dst[n] = '\0';
}

static int resource_path(const char *method, bool watch, const struct seg *sg, size_t n,
			 struct as_reqinfo *ri, struct op_err *err)
{
	/* sg[0..n): RES [NAME [SUB]] after the optional namespaces/NS */
	const struct as_resource *res = NULL;
	for (size_t i = 0; i < as_n_resources; i++)
		if (seg_is(&sg[0], as_resources[i].name))
			res = &as_resources[i];
	if (!res)
		return op_err_set(err, -ENOENT, "the server could not find the requested resource");
	ri->target = AS_T_RESOURCE;
	ri->res = res;
	if (n >= 2) {
		if (!valid_name(sg[1].p, sg[1].len, false))
			return op_err_set(err, -EINVAL, "invalid resource name");
		copy_seg(ri->name, sizeof(ri->name), &sg[1]);
	}
	if (n == 3) {
		const struct as_subresource *sub = NULL;
		for (size_t i = 0; i < res->n_subs; i++)
			if (seg_is(&sg[2], res->subs[i].name))
				sub = &res->subs[i];
		if (!sub)
			return op_err_set(err, -ENOENT,
					  "the server could not find the requested resource");
		copy_seg(ri->sub, sizeof(ri->sub), &sg[2]);
		const char *want = strcmp(method, "POST") == 0 ? "create" : "get";
		for (const char *const *v = sub->verbs; *v; v++)
			if (strcmp(*v, want) == 0 && (strcmp(method, "GET") == 0 ||
						      strcmp(method, "HEAD") == 0 ||
						      strcmp(method, "POST") == 0)) {
				ri->verb = *v;
				return 0;
			}
		return op_err_set(err, -EOPNOTSUPP, "%s is not supported on %s/%s", method,
				  res->name, ri->sub);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return op_err_set(err, -EOPNOTSUPP, "%s is not supported on %s", method, res->name);
	ri->verb = ri->name[0] ? "get" : watch ? "watch" : "list";
	for (const char *const *v = res->verbs; *v; v++)
		if (strcmp(*v, ri->verb) == 0)
			return 0;
	return op_err_set(err, -EOPNOTSUPP, "%s is not supported on %s", ri->verb, res->name);
}

int as_parse_path(const char *method, const char *path, bool watch, struct as_reqinfo *ri,
		  struct op_err *err)
{
	*ri = (struct as_reqinfo){ .verb = "get" };
	struct seg sg[MAX_SEGS];
	size_t n = 0;
	if (!path || !method || split(path, sg, &n) < 0 || n == 0)
		return op_err_set(err, -ENOENT, "the server could not find the requested resource");
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (seg_is(&sg[0], "openapi")) {
		if (!get)
			return op_err_set(err, -EOPNOTSUPP, "%s is not supported", method);
		if (n == 2 && seg_is(&sg[1], "v2"))
			ri->target = AS_T_OPENAPI_V2;
		else if (n == 2 && seg_is(&sg[1], "v3"))
			ri->target = AS_T_OPENAPI_V3;
		else if (n == 5 && seg_is(&sg[1], "v3") && seg_is(&sg[2], "apis") &&
			 seg_is(&sg[3], AS_GROUP) && seg_is(&sg[4], AS_VERSION))
			ri->target = AS_T_OPENAPI_V3_GV;
		else
			return op_err_set(err, -ENOENT, "not found");
		return 0;
	}
	if (!seg_is(&sg[0], "apis"))
		return op_err_set(err, -ENOENT, "not found");
	if (n == 1 || n == 2 || n == 3) {
		if (n >= 2 && !seg_is(&sg[1], AS_GROUP))
			return op_err_set(err, -ENOENT, "not found");
		if (n == 3 && !seg_is(&sg[2], AS_VERSION))
			return op_err_set(err, -ENOENT, "not found");
		if (!get)
			return op_err_set(err, -EOPNOTSUPP, "%s is not supported", method);
		ri->target = n == 1 ? AS_T_APIS : n == 2 ? AS_T_GROUP : AS_T_GROUPVERSION;
		return 0;
	}
	if (!seg_is(&sg[1], AS_GROUP) || !seg_is(&sg[2], AS_VERSION))
		return op_err_set(err, -ENOENT, "not found");
	const struct seg *rest = &sg[3];
	size_t m = n - 3;
	if (seg_is(&rest[0], "namespaces")) {
		if (m < 3) /* namespaces themselves are not ours */
			return op_err_set(err, -ENOENT,
					  "the server could not find the requested resource");
		if (!valid_name(rest[1].p, rest[1].len, true))
			return op_err_set(err, -EINVAL, "invalid namespace");
		copy_seg(ri->ns, sizeof(ri->ns), &rest[1]);
		rest += 2;
		m -= 2;
	} else if (m > 1) {
		/* a named object without namespace: every resource here is namespaced */
		return op_err_set(err, -ENOENT, "the server could not find the requested resource");
	}
	if (m > 3)
		return op_err_set(err, -ENOENT, "the server could not find the requested resource");
	return resource_path(method, watch, rest, m, ri, err);
}

/* ------------------------------------------------------ field selectors */

int as_fieldsel_parse(const char *s, struct as_fieldsel *ret, struct op_err *err)
{
	*ret = (struct as_fieldsel){ 0 };
	if (!s)
		return 0;
	const char *p = s;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len && *p == ' ') {
			p++;
			len--;
		}
		if (len) {
			if (ret->n == AS_FIELD_TERMS_MAX)
				return op_err_set(err, -EINVAL, "fieldSelector: more than %d terms",
						  AS_FIELD_TERMS_MAX);
			const char *op = NULL;
			size_t oplen = 0;
			bool neg = false;
			for (size_t i = 0; i < len; i++) {
				if (p[i] == '!' && i + 1 < len && p[i + 1] == '=') {
					op = p + i, oplen = 2, neg = true;
					break;
				}
				if (p[i] == '=') {
					op = p + i;
					oplen = i + 1 < len && p[i + 1] == '=' ? 2 : 1;
					break;
				}
			}
			if (!op)
				return op_err_set(err, -EINVAL, "fieldSelector: term without operator");
			size_t klen = (size_t)(op - p);
			const char *v = op + oplen;
			size_t vlen = len - klen - oplen;
			bool name = klen == 13 && memcmp(p, "metadata.name", 13) == 0;
			bool nsp = klen == 18 && memcmp(p, "metadata.namespace", 18) == 0;
			if (!name && !nsp)
				return op_err_set(err, -EINVAL,
						  "fieldSelector: field label not supported: %.*s",
						  (int)(klen > 64 ? 64 : klen), p);
			if (vlen > AS_NAME_MAX)
				return op_err_set(err, -EINVAL, "fieldSelector: value too long");
			ret->t[ret->n].name = name;
			ret->t[ret->n].neg = neg;
			memcpy(ret->t[ret->n].value, v, vlen);
			ret->t[ret->n].value[vlen] = '\0';
			ret->n++;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

bool as_fieldsel_match(const struct as_fieldsel *f, const char *ns, const char *name)
{
	for (size_t i = 0; i < f->n; i++) {
		const char *have = f->t[i].name ? name : ns;
		bool eq = strcmp(have ? have : "", f->t[i].value) == 0;
		if (eq == f->t[i].neg)
			return false;
	}
	return true;
}
