/* api/initdb.c - the initdb arguments of spec.bootstrap.initdb, as an argv
 * from the Cluster to the bootstrap Job's args to initdb: never joined into
 * one string and re-split, so a value cannot become another argument. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/cluster.h"
#include "support/alloc.h"

void api_strv_push(struct api_strv *v, const char *s)
{
	v->items = op_realloc(v->items, (v->n + 2) * sizeof(*v->items));
	v->items[v->n++] = op_strdup(s);
	v->items[v->n] = NULL;
}

/* Set by the instance manager (bootstrap.c): an option naming one of these
 * would move the data directory, the WAL or the superuser, or ask for a
 * password on a terminal. Long names match "--name" and "--name=…"; short
 * ones match "-X" and "-Xvalue". */
static const char *const managed_long[] = { "pgdata", "waldir", "username", "pwfile",
					    "pwprompt", "auth", "auth-host", "auth-local" };
static const char managed_short[] = "DXUWA";
/* initdb's short options without a value (-k -n -N -d -s -S -g). */
static const char no_value_short[] = "knNdsSg";

int api_initdb_arg_check(const char *arg, const char *field, struct op_err *err)
{
	if (!arg || arg[0] != '-' || arg[1] == '\0')
		return op_err_set(err, -EINVAL,
				  "%s: \"%s\" is not an initdb option (write values as "
				  "--name=value)",
				  field, arg ? arg : "");
	for (const unsigned char *p = (const unsigned char *)arg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return op_err_set(err, -EINVAL,
					  "%s: control characters are not allowed", field);
	if (arg[1] == '-') {
		const char *name = arg + 2;
		size_t n = strcspn(name, "=");
		if (n == 0) /* "--" would make what follows positional */
			return op_err_set(err, -EINVAL, "%s: \"%s\" is not an initdb option",
					  field, arg);
		for (size_t i = 0; i < OP_ARRAY_SIZE(managed_long); i++)
			if (strlen(managed_long[i]) == n && strncmp(managed_long[i], name, n) == 0)
				return op_err_set(err, -EINVAL,
						  "%s: --%s is set by the operator", field,
						  managed_long[i]);
		return 0;
	}
	/* short options may be grouped ("-kD/x"): every letter up to one that
	 * takes a value is checked */
	for (const char *p = arg + 1; *p; p++) {
		if (strchr(managed_short, *p))
			return op_err_set(err, -EINVAL, "%s: -%c is set by the operator", field,
					  *p);
		if (!strchr(no_value_short, *p))
			break; /* the rest is this option's value */
	}
	return 0;
}

int api_initdb_args(const struct api_initdb *i, struct api_strv *out, struct op_err *err)
{
	if (i->options.n) { /* deprecated: replaces everything below */
		for (size_t k = 0; k < i->options.n; k++) {
			char field[64];
			snprintf(field, sizeof(field), "spec.bootstrap.initdb.options[%zu]", k);
			int r = api_initdb_arg_check(i->options.items[k], field, err);
			if (r)
				return r;
			api_strv_push(out, i->options.items[k]);
		}
		return 0;
	}
	const struct {
		const char *flag, *field, *value;
	} tbl[] = {
		{ "--encoding=", "encoding", i->encoding },
		{ "--lc-collate=", "localeCollate", i->locale_collate },
		{ "--lc-ctype=", "localeCType", i->locale_ctype },
		{ "--locale=", "locale", i->locale },
		{ "--locale-provider=", "localeProvider", i->locale_provider },
		{ "--icu-locale=", "icuLocale", i->icu_locale },
		{ "--builtin-locale=", "builtinLocale", i->builtin_locale },
	};
	if (i->data_checksums)
		api_strv_push(out, "-k");
	for (size_t k = 0; k < OP_ARRAY_SIZE(tbl); k++) {
		if (!tbl[k].value || !*tbl[k].value)
			continue;
		_cleanup_free_ char *arg = op_asprintf("%s%s", tbl[k].flag, tbl[k].value);
		_cleanup_free_ char *field = op_asprintf("spec.bootstrap.initdb.%s", tbl[k].field);
		int r = api_initdb_arg_check(arg, field, err);
		if (r)
			return r;
		api_strv_push(out, arg);
	}
	if (i->wal_segment_size > 0) {
		char arg[48];
		snprintf(arg, sizeof(arg), "--wal-segsize=%lld", (long long)i->wal_segment_size);
		api_strv_push(out, arg);
	}
	return 0;
}
