/* webhooks/rules_safety.c - P1-P2: what pgop writes into postgresql.conf,
 * pg_hba.conf, pg_ident.conf, libpq connection strings and command lines
 * (docs/admission-rules.md §4c). These rules run before everything else and
 * also when cnpg.io/validation=disabled bypasses the other rules: they are not
 * CloudNativePG compatibility but the operator's own safety. The instance
 * manager keeps its own checks when it renders the files.
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "support/alloc.h"
#include "webhooks/rules_spec.h"

#define CU (WH_OP_CREATE | WH_OP_UPDATE)

/* P1: PostgreSQL's configuration lexer reads these names as directives that
 * pull in another file, not as parameters. */
static const char *const include_directives[] = { "include", "include_if_exists",
						  "include_dir" };

static void p1_include_directives(const struct wh_ctx *ctx, struct wh_result *res)
{
	json_object *params = wh_obj(ctx->spec, "postgresql.parameters");
	if (!params)
		return;
	json_object_object_foreach(params, k, v)
	{
		(void)v;
		for (size_t i = 0; i < OP_ARRAY_SIZE(include_directives); i++) {
			if (strcasecmp(k, include_directives[i]) != 0)
				continue;
			_cleanup_free_ char *p = op_asprintf("spec.postgresql.parameters.%s", k);
			wh_result_typed(res, WH_ERR_FORBIDDEN, p,
					"'%s' is a configuration file directive, not a parameter: "
					"PostgreSQL would read another file",
					include_directives[i]);
		}
	}
}

/* P2: the string fields that end up in a configuration file, a connection
 * string or a command line. A path segment ending in "[]" means every element
 * of that list, "{}" every member of that map (its key and its value). */
static const char *const line_fields[] = {
	"spec.postgresql.parameters{}",
	"spec.postgresql.pg_hba[]",
	"spec.postgresql.pg_ident[]",
	"spec.postgresql.shared_preload_libraries[]",
	"spec.postgresql.synchronous.standbyNamesPre[]",
	"spec.postgresql.synchronous.standbyNamesPost[]",
	"spec.postgresql.ldap.server",
	"spec.postgresql.ldap.bindAsAuth.prefix",
	"spec.postgresql.ldap.bindAsAuth.suffix",
	"spec.postgresql.ldap.bindSearchAuth.baseDN",
	"spec.postgresql.ldap.bindSearchAuth.bindDN",
	"spec.postgresql.ldap.bindSearchAuth.searchAttribute",
	"spec.postgresql.ldap.bindSearchAuth.searchFilter",
	"spec.bootstrap.initdb.database",
	"spec.bootstrap.initdb.owner",
	"spec.bootstrap.initdb.encoding",
	"spec.bootstrap.initdb.locale",
	"spec.bootstrap.initdb.localeCollate",
	"spec.bootstrap.initdb.localeCType",
	"spec.bootstrap.initdb.localeProvider",
	"spec.bootstrap.initdb.icuLocale",
	"spec.bootstrap.initdb.icuRules",
	"spec.bootstrap.initdb.builtinLocale",
	"spec.bootstrap.initdb.options[]",
	"spec.bootstrap.pg_basebackup.database",
	"spec.bootstrap.pg_basebackup.owner",
	"spec.bootstrap.recovery.database",
	"spec.bootstrap.recovery.owner",
	"spec.externalClusters[].connectionParameters{}",
	"spec.managed.roles[].name",
	"spec.tablespaces[].name",
	"spec.tablespaces[].owner.name",
	"spec.replicationSlots.highAvailability.slotPrefix",
};

/* The first byte of s[0..n) that ends or breaks a line: any control character
 * but the tab (a separator in every file pgop writes), and DEL. -1 if none. */
static long bad_byte(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return (long)c;
	}
	return -1;
}

static void check_string(json_object *v, const char *path, const char *what,
			 struct wh_result *res)
{
	if (!v || !json_object_is_type(v, json_type_string))
		return;
	/* json-c keeps "\u0000" inside the string: use its real length */
	long c = bad_byte(json_object_get_string(v), (size_t)json_object_get_string_len(v));
	if (c >= 0)
		wh_result_error(res, path,
				"%s must not contain control characters (byte 0x%02lx): it would "
				"break the line it is written on",
				what, c);
}

static void check_key(const char *key, const char *path, struct wh_result *res)
{
	long c = bad_byte(key, strlen(key));
	if (c >= 0)
		wh_result_typed(res, WH_ERR_FORBIDDEN, path,
				"the key must not contain control characters (byte 0x%02lx)", c);
}

/* Walks pattern (the rest of a line_fields entry) below node, whose real
 * path is at. */
static void walk(json_object *node, const char *pattern, const char *at, struct wh_result *res)
{
	if (!node)
		return;
	if (!*pattern) {
		check_string(node, at, "the value", res);
		return;
	}
	size_t n = strcspn(pattern, ".");
	const char *rest = pattern[n] == '.' ? pattern + n + 1 : pattern + n;
	bool list = n > 2 && strncmp(pattern + n - 2, "[]", 2) == 0;
	bool map = n > 2 && strncmp(pattern + n - 2, "{}", 2) == 0;
	size_t name_len = list || map ? n - 2 : n;
	_cleanup_free_ char *name = op_strndup(pattern, name_len);
	if (!json_object_is_type(node, json_type_object))
		return;
	json_object *child = NULL;
	if (!json_object_object_get_ex(node, name, &child) || !child)
		return;
	_cleanup_free_ char *here = op_asprintf("%s%s%s", at, *at ? "." : "", name);
	if (list) {
		if (!json_object_is_type(child, json_type_array))
			return;
		for (size_t i = 0; i < json_object_array_length(child); i++) {
			_cleanup_free_ char *ip = op_asprintf("%s[%zu]", here, i);
			walk(json_object_array_get_idx(child, i), rest, ip, res);
		}
	} else if (map) {
		if (!json_object_is_type(child, json_type_object))
			return;
		json_object_object_foreach(child, k, v)
		{
			_cleanup_free_ char *kp = op_asprintf("%s.%s", here, k);
			check_key(k, kp, res);
			walk(v, rest, kp, res);
		}
	} else {
		walk(child, rest, here, res);
	}
}

static void p2_line_breaks(const struct wh_ctx *ctx, struct wh_result *res)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(line_fields); i++)
		walk(ctx->obj, line_fields[i], "", res);
}

const struct wh_rule wh_rules_safety[] = {
	{ "P1", CU, p1_include_directives },
	{ "P2", CU, p2_line_breaks },
};

const size_t wh_rules_safety_count = OP_ARRAY_SIZE(wh_rules_safety);
