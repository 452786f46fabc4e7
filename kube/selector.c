/* kube/selector.c - client-side label selector matching (apimachinery
 * labels.Parse grammar, without the numeric gt/lt operators). */
#include <errno.h>
#include <string.h>

#include "kube/kube.h"
#include "support/alloc.h"
#include "support/json.h"

struct cursor {
	const char *s;
	size_t i;
	const char *sel;
	struct op_err *err;
};

static void skip_ws(struct cursor *c)
{
	while (c->s[c->i] == ' ' || c->s[c->i] == '\t')
		c->i++;
}

static bool key_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-' || ch == '/';
}

static bool value_char(char ch)
{
	return key_char(ch) && ch != '/';
}

static size_t read_token(struct cursor *c, bool (*ok)(char), const char **ret)
{
	size_t start = c->i;
	while (c->s[c->i] && ok(c->s[c->i]))
		c->i++;
	*ret = c->s + start;
	return c->i - start;
}

static int fail(struct cursor *c, const char *what)
{
	return op_err_set(c->err, -EINVAL, "label selector \"%s\": %s at offset %zu", c->sel, what,
			  c->i);
}

static bool word_at(struct cursor *c, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(c->s + c->i, w, n) != 0)
		return false;
	char next = c->s[c->i + n];
	return next == ' ' || next == '(';
}

/* label value of key (len n) in labels, or NULL. */
static const char *label(json_object *labels, const char *key, size_t n)
{
	if (!labels)
		return NULL;
	_cleanup_free_ char *k = op_strndup(key, n);
	json_object *v;
	if (!json_object_object_get_ex(labels, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool equal(const char *have, const char *v, size_t n)
{
	return have && strlen(have) == n && !strncmp(have, v, n);
}

/* Parses "(v1, v2)" and reports whether have is among the values. */
static int parse_set(struct cursor *c, const char *have, bool *ret_in)
{
	skip_ws(c);
	if (c->s[c->i] != '(')
		return fail(c, "expected '('");
	c->i++;
	bool in = false;
	for (;;) {
		skip_ws(c);
		const char *v;
		size_t n = read_token(c, value_char, &v);
		if (n == 0 && c->s[c->i] != ',' && c->s[c->i] != ')')
			return fail(c, "invalid value");
		in = in || equal(have, v, n);
		skip_ws(c);
		if (c->s[c->i] == ',') {
			c->i++;
			continue;
		}
		if (c->s[c->i] == ')') {
			c->i++;
			break;
		}
		return fail(c, "expected ',' or ')'");
	}
	*ret_in = in;
	return 0;
}

int kube_selector_match(const char *selector, json_object *obj, struct op_err *err)
{
	if (!selector)
		return 1;
	json_object *labels = obj ? op_json_at(obj, "metadata.labels") : NULL;
	struct cursor c = { .s = selector, .sel = selector, .err = err };
	bool all = true;
	skip_ws(&c);
	if (!c.s[c.i])
		return 1;
	for (;;) {
		skip_ws(&c);
		bool neg = false;
		if (c.s[c.i] == '!') {
			neg = true;
			c.i++;
			skip_ws(&c);
		}
		const char *key;
		size_t kn = read_token(&c, key_char, &key);
		if (kn == 0)
			return fail(&c, "expected a label key");
		const char *have = label(labels, key, kn);
		skip_ws(&c);
		bool ok;
		if (neg) {
			ok = have == NULL;
		} else if (c.s[c.i] == '=' || (c.s[c.i] == '!' && c.s[c.i + 1] == '=')) {
			bool ne = c.s[c.i] == '!';
			c.i += (ne || c.s[c.i + 1] == '=') ? 2 : 1;
			skip_ws(&c);
			const char *v;
			size_t vn = read_token(&c, value_char, &v);
			ok = ne ? !equal(have, v, vn) : equal(have, v, vn);
		} else if (word_at(&c, "in") || word_at(&c, "notin")) {
			bool notin = c.s[c.i] == 'n';
			c.i += notin ? 5 : 2;
			bool in = false;
			int r = parse_set(&c, have, &in);
			if (r < 0)
				return r;
			ok = notin ? !in : in;
		} else {
			ok = have != NULL; /* bare key: exists */
		}
		all = all && ok;
		skip_ws(&c);
		if (!c.s[c.i])
			break;
		if (c.s[c.i] != ',')
			return fail(&c, "expected ','");
		c.i++;
	}
	return all ? 1 : 0;
}
