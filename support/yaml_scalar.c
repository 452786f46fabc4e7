/* support/yaml_scalar.c - go-yaml v2 plain scalar resolution and key
 * printing (see yaml.h for the rules, yaml_internal.h for the interface).
 *
 * The resolution mirrors gopkg.in/yaml.v2 resolve.go: a first-character
 * hint, a word table, then Go's strconv.ParseInt/ParseUint with base 0
 * (prefixes 0x 0o 0b, leading 0 = octal), then v2's float regex.
 */
#include "support/yaml_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"

static const struct {
	const char *word;
	enum op_yaml_kind kind;
	bool b;
	double d;
} resolve_words[] = {
	{ "y", OP_YAML_BOOL, true, 0 },	      { "Y", OP_YAML_BOOL, true, 0 },
	{ "yes", OP_YAML_BOOL, true, 0 },     { "Yes", OP_YAML_BOOL, true, 0 },
	{ "YES", OP_YAML_BOOL, true, 0 },     { "true", OP_YAML_BOOL, true, 0 },
	{ "True", OP_YAML_BOOL, true, 0 },    { "TRUE", OP_YAML_BOOL, true, 0 },
	{ "on", OP_YAML_BOOL, true, 0 },      { "On", OP_YAML_BOOL, true, 0 },
	{ "ON", OP_YAML_BOOL, true, 0 },      { "n", OP_YAML_BOOL, false, 0 },
	{ "N", OP_YAML_BOOL, false, 0 },      { "no", OP_YAML_BOOL, false, 0 },
	{ "No", OP_YAML_BOOL, false, 0 },     { "NO", OP_YAML_BOOL, false, 0 },
	{ "false", OP_YAML_BOOL, false, 0 },  { "False", OP_YAML_BOOL, false, 0 },
	{ "FALSE", OP_YAML_BOOL, false, 0 },  { "off", OP_YAML_BOOL, false, 0 },
	{ "Off", OP_YAML_BOOL, false, 0 },    { "OFF", OP_YAML_BOOL, false, 0 },
	{ "", OP_YAML_NULL, false, 0 },	      { "~", OP_YAML_NULL, false, 0 },
	{ "null", OP_YAML_NULL, false, 0 },   { "Null", OP_YAML_NULL, false, 0 },
	{ "NULL", OP_YAML_NULL, false, 0 },   { ".nan", OP_YAML_FLOAT, false, NAN },
	{ ".NaN", OP_YAML_FLOAT, false, NAN }, { ".NAN", OP_YAML_FLOAT, false, NAN },
	{ ".inf", OP_YAML_FLOAT, false, INFINITY },  { ".Inf", OP_YAML_FLOAT, false, INFINITY },
	{ ".INF", OP_YAML_FLOAT, false, INFINITY },  { "+.inf", OP_YAML_FLOAT, false, INFINITY },
	{ "+.Inf", OP_YAML_FLOAT, false, INFINITY }, { "+.INF", OP_YAML_FLOAT, false, INFINITY },
	{ "-.inf", OP_YAML_FLOAT, false, -INFINITY }, { "-.Inf", OP_YAML_FLOAT, false, -INFINITY },
	{ "-.INF", OP_YAML_FLOAT, false, -INFINITY },
};

/* go-yaml's first-character hint: 'M' (word table only), '.', 'D', 'S'. */
static char resolve_hint(const char *s, size_t n)
{
	if (n == 0)
		return 'N';
	switch (s[0]) {
	case '+':
	case '-': return 'S';
	case '.': return '.';
	case '~': return 'M';
	default:
		if (s[0] >= '0' && s[0] <= '9')
			return 'D';
		if (strchr("yYnNtTfFoO", s[0]))
			return 'M';
		return 0;
	}
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/* Go strconv.ParseUint(s, base, 64) without underscores (already removed). */
static bool go_parse_uint(const char *s, size_t n, int base, uint64_t *ret)
{
	if (n == 0)
		return false;
	if (base == 0) {
		base = 10;
		if (s[0] == '0') {
			char p = n >= 3 ? (char)tolower((unsigned char)s[1]) : 0;
			size_t skip = 2;
			if (p == 'b')
				base = 2;
			else if (p == 'o')
				base = 8;
			else if (p == 'x')
				base = 16;
			else
				base = 8, skip = 1;
			s += skip;
			n -= skip;
		}
	}
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = digit_value(s[i]);
		if (d >= base)
			return false;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*ret = v;
	return true;
}

/* Go strconv.ParseInt(s, base, 64). */
static bool go_parse_int(const char *s, size_t n, int base, int64_t *ret)
{
	bool neg = false;
	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		n--;
	}
	uint64_t u;
	if (!go_parse_uint(s, n, base, &u))
		return false;
	if (!neg && u > (uint64_t)INT64_MAX)
		return false;
	if (neg && u > (uint64_t)INT64_MAX + 1)
		return false;
	*ret = neg ? (int64_t)(0 - u) : (int64_t)u;
	return true;
}

static size_t count_digits(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* go-yaml v2 yamlStyleFloat: ^[-+]?[0-9]*\.?[0-9]+([eE][-+][0-9]+)?$ */
static bool v2_float_syntax(const char *s, size_t n)
{
	size_t i = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	size_t d1 = count_digits(s + i, n - i);
	i += d1;
	if (i < n && s[i] == '.') {
		i++;
		size_t d2 = count_digits(s + i, n - i);
		if (d2 == 0)
			return false;
		i += d2;
	} else if (d1 == 0) {
		return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i >= n || (s[i] != '+' && s[i] != '-'))
			return false;
		i++;
		size_t d3 = count_digits(s + i, n - i);
		if (d3 == 0)
			return false;
		i += d3;
	}
	return i == n;
}

/* Go strconv.ParseFloat for a leading '.': \.[0-9]+([eE][-+]?[0-9]+)? */
static bool dot_float_syntax(const char *s, size_t n)
{
	size_t i = 1;
	size_t d = count_digits(s + i, n - i);
	if (d == 0)
		return false;
	i += d;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		d = count_digits(s + i, n - i);
		if (d == 0)
			return false;
		i += d;
	}
	return i == n;
}

/* strtod on a syntax-checked decimal; false on overflow (Go: ErrRange). */
static bool parse_decimal(const char *s, size_t n, double *ret)
{
	_cleanup_free_ char *z = op_strndup(s, n);
	char *end = NULL;
	double d = strtod(z, &end);
	if (end != z + n || isinf(d))
		return false;
	*ret = d;
	return true;
}

static void set_int(struct op_yaml_scalar *r, int64_t i)
{
	r->kind = OP_YAML_INT;
	r->i = i;
}

void op_yaml_resolve_plain(const char *s, size_t n, struct op_yaml_scalar *r)
{
	*r = (struct op_yaml_scalar){ .kind = OP_YAML_STR };
	char hint = resolve_hint(s, n);
	if (!hint)
		return;
	for (size_t i = 0; i < OP_ARRAY_SIZE(resolve_words); i++) {
		if (strlen(resolve_words[i].word) == n && memcmp(resolve_words[i].word, s, n) == 0) {
			r->kind = resolve_words[i].kind;
			r->b = resolve_words[i].b;
			r->d = resolve_words[i].d;
			return;
		}
	}
	if (hint == '.') {
		if (dot_float_syntax(s, n) && parse_decimal(s, n, &r->d))
			r->kind = OP_YAML_FLOAT;
		return;
	}
	if (hint != 'D' && hint != 'S')
		return;

	/* Int or float: underscores are ignored. */
	_cleanup_free_ char *plain = op_malloc(n + 1);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '_')
			plain[m++] = s[i];
	plain[m] = '\0';

	int64_t iv;
	uint64_t uv;
	if (go_parse_int(plain, m, 0, &iv)) {
		set_int(r, iv);
		return;
	}
	if (go_parse_uint(plain, m, 0, &uv)) {
		r->kind = OP_YAML_UINT;
		r->u = uv;
		return;
	}
	if (v2_float_syntax(plain, m) && parse_decimal(plain, m, &r->d)) {
		r->kind = OP_YAML_FLOAT;
		return;
	}
	if (m >= 2 && plain[0] == '0' && plain[1] == 'b') {
		if (go_parse_int(plain + 2, m - 2, 2, &iv)) {
			set_int(r, iv);
		} else if (go_parse_uint(plain + 2, m - 2, 2, &uv)) {
			r->kind = OP_YAML_UINT;
			r->u = uv;
		}
	} else if (m >= 3 && memcmp(plain, "-0b", 3) == 0) {
		/* ParseInt("-" + rest, 2): the sign we need is already at plain[0]. */
		plain[2] = '-';
		if (go_parse_int(plain + 2, m - 2, 2, &iv))
			set_int(r, iv);
	}
}

const char *op_yaml_kind_tag(enum op_yaml_kind k)
{
	switch (k) {
	case OP_YAML_NULL: return "!!null";
	case OP_YAML_BOOL: return "!!bool";
	case OP_YAML_INT:
	case OP_YAML_UINT: return "!!int";
	case OP_YAML_FLOAT: return "!!float";
	case OP_YAML_STR: return "!!str";
	}
	return "!!str";
}

/* Shortest "%.*e" text of d that reads back as the same double (as_float:
 * the same float). Returns the digit count; tmp holds the text. */
static int shortest_sci(double d, bool as_float, char *tmp, size_t size)
{
	int prec = 1;
	for (; prec < 17; prec++) {
		snprintf(tmp, size, "%.*e", prec - 1, d);
		if (as_float ? strtof(tmp, NULL) == (float)d : strtod(tmp, NULL) == d)
			break;
	}
	snprintf(tmp, size, "%.*e", prec - 1, d);
	return prec;
}

/* The decimal exponent of a "%e" text (our own output: "d.ddde+XX"). */
static int sci_exponent(const char *tmp)
{
	const char *e = strchr(tmp, 'e');
	if (!e)
		return 0;
	e++;
	bool neg = *e == '-';
	if (*e == '-' || *e == '+')
		e++;
	int v = 0;
	for (; *e >= '0' && *e <= '9' && v < 10000; e++)
		v = v * 10 + (*e - '0');
	return neg ? -v : v;
}

void op_yaml_format_float_json(double d, char out[OP_YAML_FLOAT_TEXT_MAX])
{
	char tmp[OP_YAML_FLOAT_TEXT_MAX];
	int prec = shortest_sci(d, false, tmp, sizeof(tmp));
	double a = fabs(d);
	if (a != 0 && (a < 1e-6 || a >= 1e21)) {
		size_t n = strlen(tmp);
		if (n >= 4 && tmp[n - 4] == 'e' && tmp[n - 3] == '-' && tmp[n - 2] == '0') {
			tmp[n - 2] = tmp[n - 1];
			tmp[n - 1] = '\0';
		}
		snprintf(out, OP_YAML_FLOAT_TEXT_MAX, "%s", tmp);
		return;
	}
	int exp = sci_exponent(tmp);
	if (a >= 9.2e18) {
		/* Integral and past int64: json-c would read Go's "1234...0000"
		 * back as a clamped integer, so keep the exponent form. */
		snprintf(out, OP_YAML_FLOAT_TEXT_MAX, "%s", tmp);
		return;
	}
	if (exp >= prec) {
		/* Go pads the shortest digits with zeros, %f would print the exact
		 * binary value (1e20+ digits noise): build it from the digits. */
		size_t n = 0;
		for (const char *p = tmp; *p && *p != 'e' && n + 1 < OP_YAML_FLOAT_TEXT_MAX; p++)
			if (*p == '-' || (*p >= '0' && *p <= '9'))
				out[n++] = *p;
		for (int z = exp - prec + 1; z > 0 && n + 1 < OP_YAML_FLOAT_TEXT_MAX; z--)
			out[n++] = '0';
		out[n] = '\0';
		return;
	}
	int decimals = prec - 1 - exp;
	snprintf(out, OP_YAML_FLOAT_TEXT_MAX, "%.*f", decimals > 0 ? decimals : 0, d);
}

/* Go strconv.FormatFloat(f, 'g', -1, 32), as sigs.k8s.io/yaml prints float keys. */
void op_yaml_format_float_key(double d, char out[OP_YAML_FLOAT_KEY_MAX])
{
	if (isnan(d)) {
		snprintf(out, OP_YAML_FLOAT_KEY_MAX, ".nan");
		return;
	}
	if (isinf(d)) {
		snprintf(out, OP_YAML_FLOAT_KEY_MAX, d > 0 ? ".inf" : "-.inf");
		return;
	}
	float f = (float)d;
	if (isinf(f)) {
		snprintf(out, OP_YAML_FLOAT_KEY_MAX, f > 0 ? ".inf" : "-.inf");
		return;
	}
	char tmp[OP_YAML_FLOAT_KEY_MAX];
	int prec = shortest_sci((double)f, true, tmp, sizeof(tmp));
	int exp = sci_exponent(tmp);
	/* Go's 'g' with shortest digits uses %e when exp < -4 || exp >= 6
	 * (strconv/ftoa.go: "if shortest { eprec = 6 }"). */
	if (exp < -4 || exp >= 6) {
		snprintf(out, OP_YAML_FLOAT_KEY_MAX, "%s", tmp);
		return;
	}
	int decimals = prec - 1 - exp;
	snprintf(out, OP_YAML_FLOAT_KEY_MAX, "%.*f", decimals > 0 ? decimals : 0, (double)f);
}
