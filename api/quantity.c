/* api/quantity.c - Kubernetes resource quantities and image tag versions (cluster.h). */
#include "api/cluster.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "support/alloc.h"

/* value = mant * 2^bin * 10^dec; a suffix sets one of the two exponents. */
struct suffix {
	const char *s;
	int bin, dec;
};

static const struct suffix suffixes[] = {
	{ "Ki", 10, 0 }, { "Mi", 20, 0 }, { "Gi", 30, 0 }, { "Ti", 40, 0 },
	{ "Pi", 50, 0 }, { "Ei", 60, 0 }, { "n", 0, -9 }, { "u", 0, -6 },
	{ "m", 0, -3 },  { "", 0, 0 },    { "k", 0, 3 },  { "M", 0, 6 },
	{ "G", 0, 9 },   { "T", 0, 12 },  { "P", 0, 15 }, { "E", 0, 18 },
};

#define MAX_DIGITS 18 /* significant mantissa digits we accept */
#define NANO_DEC 9    /* the exact form counts 1e-9 units */

static __int128 pow10i(int n)
{
	__int128 r = 1;
	while (n-- > 0)
		r *= 10;
	return r;
}

/* Parses the magnitude into mant * 2^bin * 10^dec, and the sign. */
static int parse_parts(const char *s, bool *ret_neg, __int128 *ret_mant, int *ret_bin,
		       int *ret_dec, struct op_err *err)
{
	if (!s || !*s)
		return op_err_set(err, -EINVAL, "quantity is empty");
	const char *p = s;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	__int128 mant = 0;
	int digits = 0, frac = 0, sig = 0;
	bool dot = false;
	for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
		if (*p == '.') {
			if (dot)
				return op_err_set(err, -EINVAL, "quantity '%s': two decimal points", s);
			dot = true;
			continue;
		}
		digits++;
		if (mant == 0 && *p == '0') {
			if (dot)
				frac++;
			continue;
		}
		if (++sig > MAX_DIGITS)
			return op_err_set(err, -ERANGE, "quantity '%s': too many digits", s);
		mant = mant * 10 + (*p - '0');
		if (dot)
			frac++;
	}
	if (digits == 0)
		return op_err_set(err, -EINVAL, "quantity '%s': expected a number", s);
	if (frac > 20)
		return op_err_set(err, -ERANGE, "quantity '%s': too many decimal places", s);
	int bin = 0, dec = 0;
	bool found = false;
	if ((*p == 'e' || *p == 'E') && p[1] != '\0' && strcmp(p, "Ei") != 0) {
		/* decimal exponent: e3, E-2 */
		const char *q = p + 1;
		bool eneg = false;
		if (*q == '+' || *q == '-')
			eneg = *q++ == '-';
		int ex = 0, nd = 0;
		for (; *q >= '0' && *q <= '9'; q++, nd++) {
			ex = ex * 10 + (*q - '0');
			if (ex > 18)
				return op_err_set(err, -ERANGE, "quantity '%s': exponent too large", s);
		}
		if (nd == 0 || *q != '\0')
			return op_err_set(err, -EINVAL, "quantity '%s': invalid exponent", s);
		dec = eneg ? -ex : ex;
		found = true;
	}
	for (size_t i = 0; !found && i < OP_ARRAY_SIZE(suffixes); i++) {
		if (strcmp(p, suffixes[i].s) == 0) {
			bin = suffixes[i].bin;
			dec = suffixes[i].dec;
			found = true;
		}
	}
	if (!found)
		return op_err_set(err, -EINVAL, "quantity '%s': unknown suffix '%s'", s, p);
	*ret_neg = neg;
	*ret_mant = mant;
	*ret_bin = bin;
	*ret_dec = dec - frac;
	return 0;
}

/* ceil(mant * 2^bin * 10^dec * 10^extra) for a magnitude; -ERANGE past 2^127. */
static int scale_up(const char *s, __int128 mant, int bin, int dec, __int128 *ret,
		    struct op_err *err)
{
	/* mant < 1e18 and bin <= 60: mant * 2^bin < 1.2e36 fits */
	__int128 v = mant << bin;
	if (dec >= 0) {
		for (int i = 0; i < dec; i++)
			if (__builtin_mul_overflow(v, (__int128)10, &v))
				return op_err_set(err, -ERANGE, "quantity '%s' is too large", s);
	} else if (-dec > 38) {
		v = v > 0; /* v < 1.2e36 < 1e38: below one unit, rounded up */
	} else {
		__int128 den = pow10i(-dec);
		v = v / den + (v % den != 0);
	}
	*ret = v;
	return 0;
}

int api_quantity_parse_exact(const char *s, struct api_quantity *ret, struct op_err *err)
{
	bool neg = false;
	__int128 mant = 0, nano = 0;
	int bin = 0, dec = 0;
	int r = parse_parts(s, &neg, &mant, &bin, &dec, err);
	if (r < 0)
		return r;
	r = scale_up(s, mant, bin, dec + NANO_DEC, &nano, err);
	if (r < 0)
		return r;
	ret->nano = neg ? -nano : nano;
	return 0;
}

int api_quantity_parse(const char *s, int64_t *ret_value, struct op_err *err)
{
	bool neg = false;
	__int128 mant = 0, v = 0;
	int bin = 0, dec = 0;
	int r = parse_parts(s, &neg, &mant, &bin, &dec, err);
	if (r < 0)
		return r;
	r = scale_up(s, mant, bin, dec, &v, err); /* rounds up like Quantity.Value() */
	if (r < 0)
		return r;
	if (v > INT64_MAX)
		return op_err_set(err, -ERANGE, "quantity '%s' is too large", s);
	*ret_value = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

int api_quantity_cmp(const struct api_quantity *a, const struct api_quantity *b)
{
	return (a->nano > b->nano) - (a->nano < b->nano);
}

bool api_image_tag(const char *image, const char **ret_tag, size_t *ret_len, bool *ret_digest)
{
	/* the tag follows the last ':' after the last '/', before any '@digest' */
	size_t len = strcspn(image, "@");
	const char *start = image;
	for (size_t i = 0; i < len; i++)
		if (image[i] == '/')
			start = image + i + 1;
	const char *colon = NULL;
	for (const char *q = start; q < image + len; q++)
		if (*q == ':')
			colon = q;
	*ret_digest = image[len] == '@';
	if (colon) {
		*ret_tag = colon + 1;
		*ret_len = (size_t)(image + len - colon - 1);
		return true;
	}
	*ret_tag = *ret_digest ? "" : "latest";
	*ret_len = *ret_digest ? 0 : 6;
	return false;
}

int api_version_from_tag(const char *tag, size_t n, int *ret_major, int *ret_minor)
{
	/* the longest prefix matching ^(\d\.?)+ : digits, each optionally
	 * followed by one dot */
	size_t end = 0;
	while (end < n && tag[end] >= '0' && tag[end] <= '9') {
		end++;
		if (end < n && tag[end] == '.')
			end++;
	}
	if (end == 0)
		return -EINVAL;
	/* split on '.': the first part is the major, the second (if any) the minor */
	int parts[2] = { 0, 0 }, np = 0;
	size_t i = 0;
	while (np < 2 && i <= end) {
		size_t digits = 0;
		long v = 0;
		while (i < end && tag[i] != '.') {
			if (v > 100000)
				return -EINVAL; /* Atoi would not overflow this soon, but no
						 * PostgreSQL major is that large */
			v = v * 10 + (tag[i] - '0');
			i++, digits++;
		}
		if (digits == 0)
			return -EINVAL; /* "17." : Atoi("") fails */
		parts[np++] = (int)v;
		if (i >= end)
			break;
		i++; /* the dot */
	}
	if (np == 2 && parts[1] >= 100)
		return -EINVAL;
	*ret_major = parts[0];
	if (ret_minor)
		*ret_minor = np == 2 ? parts[1] : 0;
	return 0;
}

int api_image_major_version(const char *image, int *ret_major, struct op_err *err)
{
	if (!image || !*image)
		return op_err_set(err, -EINVAL, "image name is empty");
	const char *t;
	size_t n;
	bool digest;
	if (!api_image_tag(image, &t, &n, &digest))
		return op_err_set(err, -EINVAL, "image '%s' has no tag", image);
	if (api_version_from_tag(t, n, ret_major, NULL) < 0)
		return op_err_set(err, -EINVAL, "image '%s': tag is not a version", image);
	return 0;
}
