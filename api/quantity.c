/* api/quantity.c - Kubernetes resource quantities and image tag versions (cluster.h). */
#include "api/cluster.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "support/alloc.h"

struct suffix {
	const char *s;
	__int128 num, den;
};

#define E3 ((__int128)1000)
static const struct suffix suffixes[] = {
	{ "Ki", (__int128)1 << 10, 1 }, { "Mi", (__int128)1 << 20, 1 },
	{ "Gi", (__int128)1 << 30, 1 }, { "Ti", (__int128)1 << 40, 1 },
	{ "Pi", (__int128)1 << 50, 1 }, { "Ei", (__int128)1 << 60, 1 },
	{ "n", 1, E3 * E3 * E3 },       { "u", 1, E3 * E3 },
	{ "m", 1, E3 },                 { "", 1, 1 },
	{ "k", E3, 1 },                 { "M", E3 * E3, 1 },
	{ "G", E3 * E3 * E3, 1 },       { "T", E3 * E3 * E3 * E3, 1 },
	{ "P", E3 * E3 * E3 * E3 * E3, 1 }, { "E", E3 * E3 * E3 * E3 * E3 * E3, 1 },
};

#define MAX_DIGITS 18 /* significant mantissa digits we accept */

static __int128 pow10i(int n)
{
	__int128 r = 1;
	while (n-- > 0)
		r *= 10;
	return r;
}

int api_quantity_parse(const char *s, int64_t *ret_value, struct op_err *err)
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
	__int128 num = 1, den = 1;
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
		if (eneg)
			den = pow10i(ex);
		else
			num = pow10i(ex);
		found = true;
	}
	for (size_t i = 0; !found && i < OP_ARRAY_SIZE(suffixes); i++) {
		if (strcmp(p, suffixes[i].s) == 0) {
			num = suffixes[i].num;
			den = suffixes[i].den;
			found = true;
		}
	}
	if (!found)
		return op_err_set(err, -EINVAL, "quantity '%s': unknown suffix '%s'", s, p);
	den *= pow10i(frac);
	/* mant < 1e18, num <= 2^60: the product fits in 128 bits */
	__int128 v = (mant * num + den - 1) / den; /* round up like Quantity.Value() */
	if (v > INT64_MAX)
		return op_err_set(err, -ERANGE, "quantity '%s' is too large", s);
	*ret_value = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

int api_image_major_version(const char *image, int *ret_major, struct op_err *err)
{
	if (!image || !*image)
		return op_err_set(err, -EINVAL, "image name is empty");
	/* strip the digest, then the tag is after the last ':' that follows the last '/' */
	size_t len = strcspn(image, "@");
	const char *slash = NULL;
	for (size_t i = 0; i < len; i++)
		if (image[i] == '/')
			slash = image + i;
	const char *start = slash ? slash + 1 : image;
	const char *colon = NULL;
	for (const char *q = start; q < image + len; q++)
		if (*q == ':')
			colon = q;
	if (!colon)
		return op_err_set(err, -EINVAL, "image '%s' has no tag", image);
	const char *t = colon + 1;
	int major = 0, nd = 0;
	for (; t < image + len && *t >= '0' && *t <= '9'; t++, nd++) {
		major = major * 10 + (*t - '0');
		if (major > 100000)
			return op_err_set(err, -EINVAL, "image '%s': version out of range", image);
	}
	if (nd == 0)
		return op_err_set(err, -EINVAL, "image '%s': tag does not start with a version",
				  image);
	/* after the major: end, '.', '-', '_' ("15", "15.4", "16-bookworm") */
	if (t < image + len && *t != '.' && *t != '-' && *t != '_')
		return op_err_set(err, -EINVAL, "image '%s': tag is not a version", image);
	*ret_major = major;
	return 0;
}
