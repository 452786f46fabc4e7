/* instance/metrics_queries.c - CloudNativePG's monitoring query format (pure).
 *
 * A YAML map: name -> {query, predicate_query, metrics: [ {column: {usage,
 * description, name, metric_mapping}} ], primary|master, cache_seconds,
 * runonserver, target_databases, name}. Read through support/yaml (go-yaml
 * v2 resolution, as Kubernetes reads the ConfigMap) into json-c, then into
 * struct inst_mq. Unknown fields are ignored (as Go's yaml.Unmarshal does);
 * wrong types, unknown usages, HISTOGRAM (not supported) and names that are
 * not Prometheus names are errors naming the query and field.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance/metrics_internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/yaml.h"

static const struct {
	const char *name;
	enum inst_mq_usage usage;
} usages[] = {
	{ "DISCARD", INST_MQ_DISCARD },	      { "LABEL", INST_MQ_LABEL },
	{ "COUNTER", INST_MQ_COUNTER },	      { "GAUGE", INST_MQ_GAUGE },
	{ "MAPPEDMETRIC", INST_MQ_MAPPEDMETRIC }, { "DURATION", INST_MQ_DURATION },
};

/* [a-zA-Z_][a-zA-Z0-9_]*: a label name, and a valid part of a metric name. */
static bool prom_name(const char *s)
{
	if (!s || !*s || isdigit((unsigned char)*s))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static void col_done(struct inst_mq_col *c)
{
	free(c->column), free(c->name), free(c->description);
	for (size_t i = 0; i < c->n_map; i++)
		free(c->map[i].text);
	free(c->map);
}

static void mq_done(struct inst_mq *q)
{
	free(q->key), free(q->name), free(q->query), free(q->predicate_query);
	free(q->runonserver);
	for (size_t i = 0; i < q->n_targets; i++)
		free(q->targets[i]);
	free(q->targets);
	for (size_t i = 0; i < q->n_cols; i++)
		col_done(&q->cols[i]);
	free(q->cols);
	memset(q, 0, sizeof(*q));
}

void inst_mq_set_done(struct inst_mq_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		mq_done(&set->q[i]);
	free(set->q);
	memset(set, 0, sizeof(*set));
}

static int opt_str(json_object *o, const char *key, const char *path, char **ret,
		   struct op_err *err)
{
	const char *s = NULL;
	int r = op_json_get_str(o, key, path, &s, err);
	if (r < 0)
		return r;
	if (r == 1)
		*ret = op_strdup(s);
	return 0;
}

static int parse_mapping(json_object *o, const char *path, struct inst_mq_col *c,
			 struct op_err *err)
{
	json_object *m = NULL;
	int r = op_json_get_obj(o, "metric_mapping", path, &m, err);
	if (r <= 0)
		return r;
	c->map = op_calloc((size_t)json_object_object_length(m) + 1, sizeof(*c->map));
	json_object_object_foreach(m, k, v)
	{
		if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
			return op_err_set(err, -EINVAL, "%s.metric_mapping.%s: expected a number",
					  path, k);
		c->map[c->n_map].text = op_strdup(k);
		c->map[c->n_map++].value = json_object_get_double(v);
	}
	return 0;
}

/* One element of metrics: {column: {usage, description, name, metric_mapping}}. */
static int parse_col(json_object *e, const char *path, struct inst_mq_col *c, struct op_err *err)
{
	if (!json_object_is_type(e, json_type_object) || json_object_object_length(e) != 1)
		return op_err_set(err, -EINVAL, "%s: expected a map of one column", path);
	json_object_object_foreach(e, col, d)
	{
		c->column = op_strdup(col);
		char cp[512];
		snprintf(cp, sizeof(cp), "%.320s.%.128s", path, col);
		if (!json_object_is_type(d, json_type_object))
			return op_err_set(err, -EINVAL, "%s: expected a map", cp);
		const char *usage = NULL;
		int r = op_json_get_str(d, "usage", cp, &usage, err);
		if (r < 0)
			return r;
		size_t i = 0;
		while (usage && i < OP_ARRAY_SIZE(usages) && strcmp(usages[i].name, usage))
			i++;
		if (!usage || i == OP_ARRAY_SIZE(usages))
			return op_err_set(err, -EINVAL, "%s.usage: %s%s%s", cp,
					  usage ? "unsupported usage \"" : "missing",
					  usage ? usage : "", usage ? "\"" : "");
		c->usage = usages[i].usage;
		r = opt_str(d, "description", cp, &c->description, err);
		r = r ? r : opt_str(d, "name", cp, &c->name, err);
		r = r ? r : parse_mapping(d, cp, c, err);
		if (r)
			return r;
		if (!c->description)
			c->description = op_strdup("");
		if (!prom_name(c->name ? c->name : col))
			return op_err_set(err, -EINVAL, "%s: \"%s\" is not a Prometheus name", cp,
					  c->name ? c->name : col);
	}
	return 0;
}

static int parse_targets(json_object *o, const char *path, struct inst_mq *q, struct op_err *err)
{
	json_object *a = NULL;
	int r = op_json_get_arr(o, "target_databases", path, &a, err);
	if (r <= 0)
		return r;
	size_t n = json_object_array_length(a);
	q->targets = op_calloc(n + 1, sizeof(*q->targets));
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(a, i);
		if (!json_object_is_type(v, json_type_string))
			return op_err_set(err, -EINVAL, "%s.target_databases[%zu]: expected string",
					  path, i);
		q->targets[q->n_targets++] = op_strdup(json_object_get_string(v));
	}
	return 0;
}

static int parse_flags(json_object *o, const char *path, struct inst_mq *q, struct op_err *err)
{
	bool primary = false, master = false;
	int r = op_json_get_bool(o, "primary", path, &primary, err);
	if (r >= 0)
		r = op_json_get_bool(o, "master", path, &master, err);
	if (r < 0)
		return r;
	q->primary = primary || master;
	int64_t cs = 0;
	r = op_json_get_i64(o, "cache_seconds", path, &cs, err);
	if (r < 0)
		return r;
	if (cs < 0)
		return op_err_set(err, -EINVAL, "%s.cache_seconds: negative", path);
	q->cache_seconds = (uint64_t)cs;
	return 0;
}

static int parse_query(const char *key, json_object *o, struct inst_mq *q, struct op_err *err)
{
	q->key = op_strdup(key);
	if (!json_object_is_type(o, json_type_object))
		return op_err_set(err, -EINVAL, "%s: expected a map", key);
	int r = opt_str(o, "query", key, &q->query, err);
	r = r ? r : opt_str(o, "predicate_query", key, &q->predicate_query, err);
	r = r ? r : opt_str(o, "runonserver", key, &q->runonserver, err);
	r = r ? r : opt_str(o, "name", key, &q->name, err);
	r = r ? r : parse_flags(o, key, q, err);
	r = r ? r : parse_targets(o, key, q, err);
	if (r)
		return r;
	if (!q->query || !*q->query)
		return op_err_set(err, -EINVAL, "%s.query: missing", key);
	if (!prom_name(q->name ? q->name : key))
		return op_err_set(err, -EINVAL, "%s: \"%s\" is not a Prometheus name", key,
				  q->name ? q->name : key);
	static const unsigned any[3] = { 0, 0, 0 };
	if (q->runonserver && inst_semver_match(q->runonserver, any) < 0)
		return op_err_set(err, -EINVAL, "%s.runonserver: cannot read \"%s\"", key,
				  q->runonserver);
	json_object *m = NULL;
	r = op_json_get_arr(o, "metrics", key, &m, err);
	if (r <= 0)
		return r ? r : op_err_set(err, -EINVAL, "%s.metrics: missing", key);
	size_t n = json_object_array_length(m);
	q->cols = op_calloc(n + 1, sizeof(*q->cols));
	for (size_t i = 0; i < n; i++) {
		char path[320];
		snprintf(path, sizeof(path), "%.256s.metrics[%zu]", key, i);
		r = parse_col(json_object_array_get_idx(m, i), path, &q->cols[q->n_cols++], err);
		if (r)
			return r;
	}
	return 0;
}

/* Replaces a query of the same key in place, else appends (set owns q's contents). */
static void set_put(struct inst_mq_set *set, struct inst_mq *q)
{
	for (size_t i = 0; i < set->n; i++) {
		if (strcmp(set->q[i].key, q->key) == 0) {
			mq_done(&set->q[i]);
			set->q[i] = *q;
			return;
		}
	}
	set->q = op_realloc(set->q, (set->n + 1) * sizeof(*set->q));
	set->q[set->n++] = *q;
}

int inst_mq_parse(const char *data, size_t len, const char *what, struct inst_mq_set *set,
		  struct op_err *err)
{
	struct op_yaml_limits lim = { .max_bytes = INST_MQ_MAX_FILE, .max_nodes = 100000 };
	_cleanup_(op_json_putp) json_object *docs = NULL;
	int r = op_yaml_parse_docs(data, len, &lim, &docs, err);
	if (r < 0)
		return op_err_prefix(err, "%s", what);
	if (r == 0)
		return 0;
	json_object *root = json_object_array_get_idx(docs, 0);
	if (r > 1 || !json_object_is_type(root, json_type_object))
		return op_err_set(err, -EINVAL, "%s: expected one map of queries", what);
	struct inst_mq_set parsed = { 0 };
	json_object_object_foreach(root, key, v)
	{
		struct inst_mq q = { 0 };
		r = parse_query(key, v, &q, err);
		if (r) {
			mq_done(&q);
			inst_mq_set_done(&parsed);
			return op_err_prefix(err, "%s", what);
		}
		set_put(&parsed, &q);
	}
	for (size_t i = 0; i < parsed.n; i++)
		set_put(set, &parsed.q[i]);
	free(parsed.q);
	return 0;
}

/* ---- runonserver: Masterminds/semver constraints ---- */

/* "15", "15.2", "15.2.1", with x, X or star wildcards; missing parts 0 (which
 * parts were given: 1..3, wildcards stop it). */
static int parse_version(const char **ps, unsigned v[3], int *given)
{
	const char *s = *ps;
	if (*s == 'v')
		s++;
	*given = 0;
	v[0] = v[1] = v[2] = 0;
	for (int i = 0; i < 3; i++) {
		if (*s == 'x' || *s == 'X' || *s == '*') {
			s++;
		} else if (isdigit((unsigned char)*s)) {
			char *end;
			unsigned long n = strtoul(s, &end, 10);
			if (n > 1000000)
				return -EINVAL;
			v[i] = (unsigned)n;
			s = end;
			if (*given == i)
				*given = i + 1;
		} else {
			return -EINVAL;
		}
		if (*s != '.')
			break;
		s++;
	}
	while (*s == '-' || *s == '+' || isalnum((unsigned char)*s)) /* pre-release, build: ignored */
		s++;
	*ps = s;
	return 0;
}

static int vcmp(const unsigned a[3], const unsigned b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* [lo, hi): the range a constraint covers when it is ~ ^ = or a wildcard. */
static bool in_bump(const unsigned v[3], const unsigned c[3], int bump)
{
	unsigned hi[3] = { c[0], c[1], c[2] };
	if (bump >= 0) {
		hi[bump]++;
		for (int i = bump + 1; i < 3; i++)
			hi[i] = 0;
	}
	return vcmp(v, c) >= 0 && (bump < 0 || vcmp(v, hi) < 0);
}

static int check_one(const char **ps, const unsigned v[3])
{
	const char *s = *ps;
	char op[3] = "";
	size_t k = 0;
	while (k < 2 && strchr("<>=!~^", *s))
		op[k++] = *s++;
	op[k] = '\0';
	while (*s == ' ')
		s++;
	unsigned c[3];
	int given;
	if (parse_version(&s, c, &given))
		return -EINVAL;
	*ps = s;
	int cmp = vcmp(v, c);
	int wild = given == 3 ? -1 : given - 1; /* bump the last given part */
	if (!*op || !strcmp(op, "=") || !strcmp(op, "=="))
		return given == 0 || in_bump(v, c, wild);
	if (!strcmp(op, "!="))
		return !(given == 0 || in_bump(v, c, wild));
	if (!strcmp(op, ">"))
		return given < 3 ? !in_bump(v, c, wild) && cmp > 0 : cmp > 0;
	if (!strcmp(op, ">=") || !strcmp(op, "=>"))
		return cmp >= 0;
	if (!strcmp(op, "<"))
		return cmp < 0;
	if (!strcmp(op, "<=") || !strcmp(op, "=<"))
		return given < 3 ? cmp < 0 || in_bump(v, c, wild) : cmp <= 0;
	if (!strcmp(op, "~") || !strcmp(op, "~>"))
		return in_bump(v, c, given >= 2 ? 1 : 0);
	if (!strcmp(op, "^"))
		return in_bump(v, c, c[0] > 0 || given < 2 ? 0 : c[1] > 0 || given < 3 ? 1 : 2);
	return -EINVAL;
}

int inst_semver_match(const char *range, const unsigned v[3])
{
	bool any = false, all = true, seen = false;
	for (const char *s = range;;) {
		while (*s == ' ' || *s == ',')
			s++;
		if (*s == '\0' || (s[0] == '|' && s[1] == '|')) {
			if (!seen)
				return -EINVAL;
			any |= all;
			if (!*s)
				return any;
			s += 2;
			all = true;
			seen = false;
			continue;
		}
		int r = check_one(&s, v);
		if (r < 0)
			return r;
		all &= r == 1;
		seen = true;
	}
}

/* ---- Go durations ---- */

int inst_go_duration_ms(const char *s, int64_t *ret_ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = { { "ns", 1e-6 }, { "us", 1e-3 }, { "µs", 1e-3 }, { "ms", 1 },
		      { "s", 1000 },  { "m", 60000 }, { "h", 3600000 } };
	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ret_ms = 0;
		return 0;
	}
	double total = 0;
	while (*s) {
		char *end;
		double n = strtod(s, &end);
		if (end == s || n < 0 || !isfinite(n))
			return -EINVAL;
		s = end;
		size_t best = OP_ARRAY_SIZE(units), blen = 0;
		for (size_t i = 0; i < OP_ARRAY_SIZE(units); i++) {
			size_t l = strlen(units[i].unit);
			if (strncmp(s, units[i].unit, l) == 0 && l > blen)
				best = i, blen = l;
		}
		if (best == OP_ARRAY_SIZE(units))
			return -EINVAL;
		total += n * units[best].ms;
		s += blen;
	}
	if (total > 1e15)
		return -EINVAL;
	*ret_ms = (int64_t)total;
	return 0;
}
