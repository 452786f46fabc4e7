/* webhooks/defaults.c - D1-D14 (admission-rules.md §3, CNPG setDefaults) and
 * the mutating entry point wh_default(), which returns a JSONPatch.
 *
 * Each rule mirrors Go semantics on the JSON: an absent, null or "" string is
 * "empty" (omitempty); a field of the wrong JSON type is left alone so the
 * validator reports it with its path.
 */
#include "webhooks/defaults.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"
#include "webhooks/lookup.h"
#include "webhooks/patch.h"
#include "api/pgparams.h"
#include "webhooks/webhooks.h"

static const struct wh_settings default_settings = { .default_image = WH_DEFAULT_IMAGE };
static const struct wh_settings *current_settings = &default_settings;

void wh_settings_set(const struct wh_settings *settings)
{
	current_settings = settings ? settings : &default_settings;
}

const struct wh_settings *wh_settings_get(void)
{
	return current_settings;
}

static const char *setting_image(const struct wh_settings *s)
{
	return s->default_image && *s->default_image ? s->default_image : WH_DEFAULT_IMAGE;
}

/* ---- JSON helpers with Go zero-value semantics ---- */

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* The object at o.key, created when absent or null; NULL when another type. */
static json_object *ensure_obj(json_object *o, const char *key)
{
	if (!o)
		return NULL;
	json_object *v = member(o, key);
	if (v)
		return json_object_is_type(v, json_type_object) ? v : NULL;
	v = op_jobj();
	op_jset(o, key, v);
	return v;
}

/* o.key is absent, null or "" (a non-string value is not empty). */
static bool str_empty(json_object *o, const char *key)
{
	json_object *v = member(o, key);
	return !v || (json_object_is_type(v, json_type_string) && !*json_object_get_string(v));
}

static const char *str_or_empty(json_object *o, const char *key)
{
	const char *s = wh_str(o, key);
	return s ? s : "";
}

/* A non-empty Go string field: set it when it is "" too (omitempty then drops
 * an empty result, so "" -> "" means "leave absent"). */
static void default_str(json_object *o, const char *key, const char *value)
{
	if (o && str_empty(o, key) && value && *value)
		op_jsets(o, key, value);
}


/* ---- the rules ---- */

struct dctx {
	json_object *obj, *spec;
	const struct wh_settings *set;
	bool preserve_user_fixed;
};

static void d1_image(const struct dctx *c)
{
	if (str_empty(c->spec, "imageName") && !wh_obj(c->spec, "imageCatalogRef"))
		op_jsets(c->spec, "imageName", setting_image(c->set));
}

static void d2_bootstrap(const struct dctx *c)
{
	ensure_obj(c->spec, "bootstrap");
}

static void app_db_and_owner(json_object *m, bool monolith)
{
	if (str_empty(m, "database") && !monolith)
		op_jsets(m, "database", "app");
	default_str(m, "owner", str_or_empty(m, "database"));
}

static void d3_bootstrap_method(const struct dctx *c)
{
	json_object *b = wh_obj(c->spec, "bootstrap");
	if (!b)
		return;
	if (member(b, "recovery")) {
		json_object *r = wh_obj(b, "recovery");
		if (r)
			app_db_and_owner(r, false);
		return;
	}
	if (member(b, "pg_basebackup")) {
		json_object *p = wh_obj(b, "pg_basebackup");
		if (p)
			app_db_and_owner(p, false);
		return;
	}
	json_object *i = ensure_obj(b, "initdb");
	if (!i)
		return;
	const char *itype = str_or_empty(wh_obj(i, "import"), "type");
	app_db_and_owner(i, strcmp(itype, "monolith") == 0);
	default_str(i, "encoding", "UTF8");
	default_str(i, "localeCollate", "C");
	default_str(i, "localeCType", "C");
}

static void d4_anti_affinity(const struct dctx *c)
{
	json_object *a = ensure_obj(c->spec, "affinity");
	if (!a)
		return;
	json_object *en = member(a, "enablePodAntiAffinity");
	bool enabled = !en || !json_object_is_type(en, json_type_boolean) ||
		       json_object_get_boolean(en);
	if (enabled)
		default_str(a, "podAntiAffinityType", "preferred");
}

static void d5_backup_target(const struct dctx *c)
{
	default_str(wh_obj(c->spec, "backup"), "target", "prefer-standby");
}

struct param {
	const char *key;
	json_object *value; /* borrowed from the user object or NULL for a default */
	const char *def;
};

static int param_cmp(const void *a, const void *b)
{
	return strcmp(((const struct param *)a)->key, ((const struct param *)b)->key);
}

/* D6: defaults, then user values (fixed ones only when preserving), then
 * archive_mode; keys sorted like Go's JSON encoding of a map. */
static void d6_parameters(const struct dctx *c)
{
	int major;
	if (!wh_cluster_major(c->obj, &major))
		return;
	json_object *pg = member(c->spec, "postgresql");
	if (pg && !json_object_is_type(pg, json_type_object))
		return;
	json_object *user = member(pg, "parameters");
	if (user && !json_object_is_type(user, json_type_object))
		return;
	size_t cap = api_pg_default_params_count + 1 +
		     (user ? (size_t)json_object_object_length(user) : 0);
	_cleanup_free_ struct param *ps = op_calloc(cap, sizeof(*ps));
	size_t n = 0;
	for (size_t i = 0; i < api_pg_default_params_count; i++)
		ps[n++] = (struct param){ .key = api_pg_default_params[i].name,
					  .def = api_pg_default_params[i].value };
	if (user) {
		json_object_object_foreach(user, k, v)
		{
			if (!c->preserve_user_fixed && api_pg_param_is_fixed(k))
				continue;
			size_t j = 0;
			while (j < n && strcmp(ps[j].key, k) != 0)
				j++;
			ps[j] = (struct param){ .key = k, .value = v };
			if (j == n)
				n++;
		}
	}
	const char *skip = wh_cluster_annotation(c->obj, "cnpg.io/skipWalArchiving");
	const char *am = api_pg_archive_mode(skip && strcmp(skip, "enabled") == 0,
					    wh_cluster_is_replica(c->obj));
	size_t j = 0;
	while (j < n && strcmp(ps[j].key, "archive_mode") != 0)
		j++;
	ps[j] = (struct param){ .key = "archive_mode", .def = am };
	if (j == n)
		n++;
	qsort(ps, n, sizeof(*ps), param_cmp);
	json_object *out = op_jobj();
	for (size_t i = 0; i < n; i++)
		op_jset(out, ps[i].key,
			ps[i].value ? json_object_get(ps[i].value) : op_jstr(ps[i].def));
	pg = ensure_obj(c->spec, "postgresql");
	op_jset(pg, "parameters", out);
}

static void d7_log_level(const struct dctx *c)
{
	default_str(c->spec, "logLevel", "info");
}

#define DEFAULT_MONITORING_NAME "cnpg-default-monitoring"
#define DEFAULT_MONITORING_KEY "queries"

/* Prepends {name: cnpg-default-monitoring, key: queries} to m.key unless listed. */
static void prepend_default_queries(json_object *m, const char *key)
{
	json_object *arr = member(m, key);
	if (arr && !json_object_is_type(arr, json_type_array))
		return;
	size_t n = arr ? json_object_array_length(arr) : 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(str_or_empty(json_object_array_get_idx(arr, i), "name"),
			   DEFAULT_MONITORING_NAME) == 0)
			return;
	json_object *out = op_jarr(), *ref = op_jobj();
	op_jsets(ref, "name", DEFAULT_MONITORING_NAME);
	op_jsets(ref, "key", DEFAULT_MONITORING_KEY);
	op_jpush(out, ref);
	for (size_t i = 0; i < n; i++)
		op_jpush(out, json_object_get(json_object_array_get_idx(arr, i)));
	op_jset(m, key, out);
}

static void d8_monitoring(const struct dctx *c)
{
	bool disabled = false;
	if (wh_bool(c->spec, "monitoring.disableDefaultQueries", &disabled) && disabled)
		return;
	json_object *m = ensure_obj(c->spec, "monitoring");
	if (!m)
		return;
	if (c->set->monitoring_configmap && *c->set->monitoring_configmap)
		prepend_default_queries(m, "customQueriesConfigMap");
	if (c->set->monitoring_secret && *c->set->monitoring_secret)
		prepend_default_queries(m, "customQueriesSecret");
}

static void d9_replication_slots(const struct dctx *c)
{
	json_object *rs = ensure_obj(c->spec, "replicationSlots");
	if (!rs)
		return;
	if (!member(rs, "highAvailability")) {
		json_object *ha = ensure_obj(rs, "highAvailability");
		op_jset(ha, "enabled", op_jbool(1));
		op_jsets(ha, "slotPrefix", "_cnpg_");
	}
	if (!member(rs, "synchronizeReplicas")) {
		json_object *sr = ensure_obj(rs, "synchronizeReplicas");
		op_jset(sr, "enabled", op_jbool(1));
	}
}

/* CNPG GetApplicationDatabaseOwner: the first method that creates an
 * application database (owner and database set), none for a replica. */
static const char *application_owner(const struct dctx *c)
{
	if (wh_cluster_is_replica(c->obj))
		return NULL;
	static const char *const methods[] = { "recovery", "pg_basebackup", "initdb" };
	json_object *b = wh_obj(c->spec, "bootstrap");
	for (size_t i = 0; i < OP_ARRAY_SIZE(methods); i++) {
		json_object *m = wh_obj(b, methods[i]);
		if (m && *str_or_empty(m, "owner") && *str_or_empty(m, "database"))
			return str_or_empty(m, "owner");
	}
	return NULL;
}

static void d10_tablespace_owner(const struct dctx *c)
{
	json_object *ts = member(c->spec, "tablespaces");
	if (!ts || !json_object_is_type(ts, json_type_array))
		return;
	const char *owner = application_owner(c);
	if (!owner || !*owner)
		owner = "postgres";
	for (size_t i = 0; i < json_object_array_length(ts); i++) {
		json_object *t = json_object_array_get_idx(ts, i);
		if (t && json_object_is_type(t, json_type_object))
			default_str(ensure_obj(t, "owner"), "name", owner);
	}
}

static void d11_data_durability(const struct dctx *c)
{
	default_str(wh_obj(c->spec, "postgresql.synchronous"), "dataDurability", "required");
}

static bool has_plugin(json_object *plugins, const char *name, size_t len)
{
	for (size_t i = 0; i < json_object_array_length(plugins); i++) {
		const char *n = str_or_empty(json_object_array_get_idx(plugins, i), "name");
		if (strlen(n) == len && strncmp(n, name, len) == 0)
			return true;
	}
	return false;
}

static void d12_plugins(const struct dctx *c)
{
	const char *csv = c->set->include_plugins;
	if (!csv || !*csv)
		return;
	json_object *plugins = member(c->spec, "plugins");
	if (plugins && !json_object_is_type(plugins, json_type_array))
		return;
	for (const char *p = csv; *p;) {
		size_t len = strcspn(p, ",");
		const char *s = p, *e = p + len;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > s) {
			if (!plugins) {
				plugins = op_jarr();
				op_jset(c->spec, "plugins", plugins);
			}
			if (!has_plugin(plugins, s, (size_t)(e - s))) {
				json_object *pl = op_jobj();
				op_jset(pl, "name", op_jstrn(s, (size_t)(e - s)));
				op_jset(pl, "enabled", op_jbool(1));
				op_jpush(plugins, pl);
			}
		}
		p += len;
		if (*p == ',')
			p++;
	}
}

/* isolationCheck from the alpha.cnpg.io/livenessPinger annotation, or NULL. */
static json_object *pinger_from_annotation(const struct dctx *c)
{
	const char *a = wh_cluster_annotation(c->obj, "alpha.cnpg.io/livenessPinger");
	if (!a)
		return NULL;
	_cleanup_(op_json_putp) json_object *cfg = NULL;
	if (op_json_parse(a, strlen(a), 8, &cfg, NULL) < 0 ||
	    !json_object_is_type(cfg, json_type_object))
		return NULL;
	json_object *en = member(cfg, "enabled");
	if (en && !json_object_is_type(en, json_type_boolean))
		return NULL;
	int64_t rt = 0, ct = 0;
	if (op_json_get_i64(cfg, "requestTimeout", "", &rt, NULL) < 0 ||
	    op_json_get_i64(cfg, "connectionTimeout", "", &ct, NULL) < 0)
		return NULL;
	json_object *out = op_jobj();
	if (en)
		op_jset(out, "enabled", op_jbool(json_object_get_boolean(en)));
	op_jset(out, "requestTimeout", op_jint(rt ? rt : 1000));
	op_jset(out, "connectionTimeout", op_jint(ct ? ct : 1000));
	return out;
}

static void d13_probes(const struct dctx *c)
{
	json_object *live = ensure_obj(ensure_obj(c->spec, "probes"), "liveness");
	if (!live || member(live, "isolationCheck"))
		return;
	json_object *ic = pinger_from_annotation(c);
	if (!ic) {
		ic = op_jobj();
		op_jset(ic, "enabled", op_jbool(1));
		op_jset(ic, "requestTimeout", op_jint(1000));
		op_jset(ic, "connectionTimeout", op_jint(1000));
	}
	op_jset(live, "isolationCheck", ic);
}

static void d14_failover_quorum(const struct dctx *c)
{
	bool q;
	json_object *sync = wh_obj(c->spec, "postgresql.synchronous");
	if (sync && wh_parse_go_bool(wh_cluster_annotation(c->obj, "alpha.cnpg.io/failoverQuorum"), &q))
		op_jset(sync, "failoverQuorum", op_jbool(q));
}

static const struct {
	const char *id;
	void (*fn)(const struct dctx *c);
} default_rules[] = {
	{ "D1", d1_image },
	{ "D2", d2_bootstrap },
	{ "D3", d3_bootstrap_method },
	{ "D4", d4_anti_affinity },
	{ "D5", d5_backup_target },
	{ "D6", d6_parameters },
	{ "D7", d7_log_level },
	{ "D8", d8_monitoring },
	{ "D9", d9_replication_slots },
	{ "D10", d10_tablespace_owner },
	{ "D11", d11_data_durability },
	{ "D12", d12_plugins },
	{ "D13", d13_probes },
	{ "D14", d14_failover_quorum },
};

void wh_defaults_apply(json_object *cluster, bool preserve_user_fixed)
{
	if (!cluster || !json_object_is_type(cluster, json_type_object))
		return;
	json_object *spec = ensure_obj(cluster, "spec");
	if (!spec)
		return; /* spec of the wrong type: the validator reports it */
	struct dctx c = { .obj = cluster,
			  .spec = spec,
			  .set = wh_settings_get(),
			  .preserve_user_fixed = preserve_user_fixed };
	for (size_t i = 0; i < OP_ARRAY_SIZE(default_rules); i++)
		default_rules[i].fn(&c);
}

/* The object as it was before the defaults: the rules write under spec only
 * (and add spec itself), so the copy shares every other member of cluster and
 * deep-copies spec; the diff skips what is shared. OWNED, NULL on OOM. */
static json_object *copy_before_defaults(json_object *cluster)
{
	json_object *orig = op_jobj();
	json_object_object_foreach(cluster, k, v)
	{
		json_object *c = NULL;
		if (strcmp(k, "spec") != 0)
			c = json_object_get(v);
		else if (v && json_object_deep_copy(v, &c, NULL) != 0) {
			json_object_put(orig);
			return NULL;
		}
		op_jset(orig, k, c);
	}
	return orig;
}

/* Applies the defaults to cluster in place; *ret_orig (owned) is what it was
 * before, for the diff. */
static int apply_defaults(json_object *cluster, json_object **ret_orig, struct op_err *err)
{
	if (!cluster || !json_object_is_type(cluster, json_type_object))
		return op_err_set(err, -EINVAL, "cluster: expected object, got %s",
				  op_json_type_name(cluster));
	*ret_orig = copy_before_defaults(cluster);
	if (!*ret_orig)
		return op_err_set(err, -ENOMEM, "cannot copy cluster");
	wh_defaults_apply(cluster, true);
	return 0;
}

int wh_default_text(json_object *cluster, struct op_buf *patch, size_t *ret_n_ops,
		    struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *orig = NULL;
	int r = apply_defaults(cluster, &orig, err);
	return r ? r : wh_patch_diff_text(orig, cluster, patch, ret_n_ops, err);
}

int wh_default(json_object *cluster, json_object **ret_patch, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *orig = NULL;
	int r = apply_defaults(cluster, &orig, err);
	return r ? r : wh_patch_diff(orig, cluster, ret_patch, err);
}
