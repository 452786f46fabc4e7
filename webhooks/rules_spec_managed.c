/* webhooks/rules_spec_managed.c - names the operator manages: env (V37),
 * managed services (V38) and roles (V39), pod selector references in
 * pg_hba (V47) and image volume extensions (V48). CNPG cluster_webhook.go.
 */
#include "webhooks/rules_spec.h"

#include <string.h>

#include "support/alloc.h"
#include "webhooks/reserved.h"

WH_RULE_FN(wh_v37_env)
{
	json_object *env = wh_arr(ctx->spec, "env");
	size_t n = env ? json_object_array_length(env) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = wh_str(json_object_array_get_idx(env, i), "name");
		if (!wh_reserved_env_name(name))
			continue;
		_cleanup_free_ char *p = op_asprintf("spec.env[%zu].name", i);
		wh_result_error(res, p,
				"the usage of this environment variable is reserved for the operator");
	}
}

/* Index of the first element before i whose string at key equals s, or -1. */
static long dup_before(json_object *arr, size_t i, const char *key, const char *s)
{
	for (size_t j = 0; s && j < i; j++) {
		const char *o = wh_str(json_object_array_get_idx(arr, j), key);
		if (o && strcmp(o, s) == 0)
			return (long)j;
	}
	return -1;
}

#define SVC_PATH "spec.managed.services"

WH_RULE_FN(wh_v38_managed_services)
{
	json_object *svc = wh_obj(ctx->spec, "managed.services");
	if (!svc)
		return;
	if (wh_arr_has_str(svc, "disabledDefaultServices", "rw"))
		wh_result_error(res, SVC_PATH ".disabledDefaultServices",
				"service of type RW cannot be disabled.");
	const char *cluster = wh_str(ctx->obj, "metadata.name");
	json_object *add = wh_arr(svc, "additional");
	size_t n = add ? json_object_array_length(add) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *tpl = wh_obj(json_object_array_get_idx(add, i), "serviceTemplate");
		const char *name = wh_nstr(tpl, "metadata.name");
		_cleanup_free_ char *np =
			op_asprintf(SVC_PATH ".additional[%zu].serviceTemplate.metadata.name", i);
		if (!name)
			wh_result_error(res, np, "name is required");
		else if (wh_reserved_service_name(cluster, name))
			wh_result_error(res, np, "the service name: '%s' is reserved for operator use",
					name);
		for (size_t j = 0; name && j < i; j++) {
			const char *o = wh_str(json_object_array_get_idx(add, j),
					       "serviceTemplate.metadata.name");
			if (o && strcmp(o, name) == 0) {
				wh_result_error(res, np, "contains services with the same "
							 ".metadata.name");
				break;
			}
		}
		json_object *sel = wh_obj(tpl, "spec.selector");
		if (sel && json_object_object_length(sel) > 0) {
			_cleanup_free_ char *sp = op_asprintf(
				SVC_PATH ".additional[%zu].serviceTemplate.spec.selector", i);
			wh_result_error(res, sp, "selector field is managed by the operator");
		}
	}
}

WH_RULE_FN(wh_v39_managed_roles)
{
	json_object *roles = wh_arr(ctx->spec, "managed.roles");
	size_t n = roles ? json_object_array_length(roles) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *role = json_object_array_get_idx(roles, i);
		const char *name = wh_str(role, "name");
		_cleanup_free_ char *base = op_asprintf("spec.managed.roles[%zu]", i);
		_cleanup_free_ char *np = op_asprintf("%s.name", base);
		if (dup_before(roles, i, "name", name) >= 0)
			wh_result_typed(res, WH_ERR_DUPLICATE, np, "Role name is duplicate of another");
		if (wh_reserved_role_name(name))
			wh_result_error(res, np, "This role is reserved for operator use");
		int64_t limit = -1;
		if (wh_i64(role, "connectionLimit", &limit) && limit < -1) {
			_cleanup_free_ char *p = op_asprintf("%s.connectionLimit", base);
			wh_result_error(res, p,
					"Connection limit should be positive, unless defaulting to -1");
		}
		bool disable = false;
		wh_bool(role, "disablePassword", &disable);
		if (disable && wh_at(role, "passwordSecret"))
			wh_result_error(res, base,
					"This role both sets and disables a password");
	}
}

/* ---- V47 pod selector references ---- */

static bool selector_defined(const struct wh_ctx *ctx, const char *name, size_t n)
{
	json_object *refs = wh_arr(ctx->spec, "podSelectorRefs");
	size_t cnt = refs ? json_object_array_length(refs) : 0;
	for (size_t i = 0; i < cnt; i++) {
		const char *rn = wh_str(json_object_array_get_idx(refs, i), "name");
		if (rn && strlen(rn) == n && strncmp(rn, name, n) == 0)
			return true;
	}
	return false;
}

static void check_hba_line(const struct wh_ctx *ctx, const char *line, size_t i,
			   struct wh_result *res)
{
	static const char prefix[] = "podselector:";
	_cleanup_free_ char *p = op_asprintf("spec.postgresql.pg_hba[%zu]", i);
	int refs = 0;
	for (const char *s = strstr(line, "${"); s; s = strstr(s, "${")) {
		const char *end = strchr(s + 2, '}');
		if (!end) {
			wh_result_error(res, p, "unterminated ${...} reference");
			return;
		}
		const char *body = s + 2;
		size_t blen = (size_t)(end - body);
		if (blen < sizeof(prefix) - 1 || strncmp(body, prefix, sizeof(prefix) - 1) != 0) {
			wh_result_error(res, p, "unknown descriptor type in '%.*s'",
					(int)(end - s + 1), s);
			return;
		}
		if (++refs > 1) {
			wh_result_error(res, p, "at most one podselector reference is allowed per "
						"pg_hba line");
			return;
		}
		const char *name = body + sizeof(prefix) - 1;
		size_t nlen = (size_t)(end - name);
		if (!selector_defined(ctx, name, nlen))
			wh_result_error(res, p, "pod selector not found: %.*s", (int)nlen, name);
		s = end + 1;
	}
}

WH_RULE_FN(wh_v47_pod_selector_refs)
{
	json_object *refs = wh_arr(ctx->spec, "podSelectorRefs");
	size_t n = refs ? json_object_array_length(refs) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *ref = json_object_array_get_idx(refs, i);
		const char *name = wh_str(ref, "name");
		if (dup_before(refs, i, "name", name) >= 0) {
			_cleanup_free_ char *p = op_asprintf("spec.podSelectorRefs[%zu].name", i);
			wh_result_typed(res, WH_ERR_DUPLICATE, p, "%s", "");
		}
		_cleanup_free_ char *sp = op_asprintf("spec.podSelectorRefs[%zu].selector", i);
		wh_check_label_selector(wh_at(ref, "selector"), sp, res);
	}
	json_object *hba = wh_arr(ctx->spec, "postgresql.pg_hba");
	size_t nh = hba ? json_object_array_length(hba) : 0;
	for (size_t i = 0; i < nh; i++) {
		json_object *l = json_object_array_get_idx(hba, i);
		if (l && json_object_is_type(l, json_type_string))
			check_hba_line(ctx, json_object_get_string(l), i, res);
	}
}

/* ---- V48 extensions ---- */

/* Go filepath.IsLocal: relative, non-empty, never climbing above its root. */
static bool path_is_local(const char *p)
{
	if (!*p || *p == '/')
		return false;
	long depth = 0;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && strncmp(p, "..", 2) == 0) {
			if (--depth < 0)
				return false;
		} else if (n > 0 && !(n == 1 && *p == '.')) {
			depth++;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

static void check_ext_paths(json_object *ext, const char *base, const char *field,
			    struct wh_result *res)
{
	json_object *arr = wh_arr(ext, field);
	size_t n = arr ? json_object_array_length(arr) : 0;
	for (size_t j = 0; j < n; j++) {
		json_object *e = json_object_array_get_idx(arr, j);
		const char *v = e && json_object_is_type(e, json_type_string)
					? json_object_get_string(e)
					: "";
		_cleanup_free_ char *p = op_asprintf("%s.%s[%zu]", base, field, j);
		if (!*v) {
			wh_result_error(res, p, "value cannot be empty");
			continue;
		}
		bool dup = false;
		for (size_t k = 0; k < j && !dup; k++) {
			json_object *o = json_object_array_get_idx(arr, k);
			dup = o && json_object_is_type(o, json_type_string) &&
			      strcmp(json_object_get_string(o), v) == 0;
		}
		if (dup)
			wh_result_typed(res, WH_ERR_DUPLICATE, p, "%s", "");
		if (!path_is_local(v))
			wh_result_error(res, p, "path must not escape the extension directory");
	}
}

/* Only ${image_root} may appear as a placeholder; "$$" is an escaped '$', so
 * "$${X}" is the literal text "${X}" and no placeholder. */
static bool env_value_ok(const char *v)
{
	static const char root[] = "${image_root}";
	for (const char *s = v; *s;) {
		if (s[0] == '$' && s[1] == '$') {
			s += 2;
		} else if (s[0] == '$' && s[1] == '{') {
			if (strncmp(s, root, sizeof(root) - 1) != 0)
				return false;
			s += sizeof(root) - 1;
		} else {
			s++;
		}
	}
	return true;
}

static void check_ext_env(json_object *ext, const char *base, struct wh_result *res)
{
	json_object *env = wh_arr(ext, "env");
	size_t n = env ? json_object_array_length(env) : 0;
	for (size_t j = 0; j < n; j++) {
		json_object *e = json_object_array_get_idx(env, j);
		const char *name = wh_str(e, "name");
		const char *value = wh_str(e, "value");
		_cleanup_free_ char *np = op_asprintf("%s.env[%zu].name", base, j);
		if (name && (strcmp(name, "PATH") == 0 || strcmp(name, "LD_LIBRARY_PATH") == 0))
			wh_result_typed(res, WH_ERR_FORBIDDEN, np, "%s cannot be set, use %s instead", name,
					strcmp(name, "PATH") == 0 ? "bin_path"
								  : "ld_library_path");
		else if (wh_reserved_env_name(name))
			wh_result_error(res, np,
					"the usage of this environment variable is reserved for the "
					"operator");
		if (dup_before(env, j, "name", name) >= 0)
			wh_result_typed(res, WH_ERR_DUPLICATE, np, "%s", "");
		if (value && !env_value_ok(value)) {
			_cleanup_free_ char *vp = op_asprintf("%s.env[%zu].value", base, j);
			wh_result_error(res, vp, "only the ${image_root} placeholder is allowed");
		}
	}
}

static char *sanitize_ext_name(const char *name)
{
	char *s = op_strdup(name);
	for (char *p = s; *p; p++)
		if (*p == '_')
			*p = '-';
	return s;
}

WH_RULE_FN(wh_v48_extensions)
{
	static const char *const path_fields[] = { "extension_control_path",
						   "dynamic_library_path", "ld_library_path",
						   "bin_path" };
	json_object *exts = wh_arr(ctx->spec, "postgresql.extensions");
	size_t n = exts ? json_object_array_length(exts) : 0;
	bool catalog = wh_at(ctx->spec, "imageCatalogRef") != NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *ext = json_object_array_get_idx(exts, i);
		_cleanup_free_ char *base = op_asprintf("spec.postgresql.extensions[%zu]", i);
		_cleanup_free_ char *np = op_asprintf("%s.name", base);
		const char *name = wh_nstr(ext, "name");
		if (!name) {
			wh_result_error(res, np, "value cannot be empty");
		} else if (dup_before(exts, i, "name", name) >= 0) {
			wh_result_typed(res, WH_ERR_DUPLICATE, np, "%s", "");
		} else {
			_cleanup_free_ char *vol = sanitize_ext_name(name);
			for (size_t j = 0; j < i; j++) {
				const char *o = wh_str(json_object_array_get_idx(exts, j), "name");
				_cleanup_free_ char *ovol = o ? sanitize_ext_name(o) : NULL;
				if (ovol && strcmp(ovol, vol) == 0) {
					wh_result_error(res, np,
							"extension name results in duplicate volume "
							"name \"%s\" after sanitization (underscores "
							"are converted to hyphens)",
							vol);
					break;
				}
			}
		}
		if (!catalog && !wh_nstr(ext, "image.reference")) {
			_cleanup_free_ char *p = op_asprintf("%s.image.reference", base);
			wh_result_error(res, p, "Required value: an image reference is required");
		}
		for (size_t f = 0; f < OP_ARRAY_SIZE(path_fields); f++)
			check_ext_paths(ext, base, path_fields[f], res);
		check_ext_env(ext, base, res);
	}
}
