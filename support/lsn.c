/* support/lsn.c - pg_lsn text (see lsn.h). */
#include "support/lsn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "support/buf.h"

/* 1 to 8 hex digits; *end past them. */
static int hex32(const char *s, const char **end, uint32_t *ret)
{
	uint32_t v = 0;
	size_t i = 0;
	for (; s[i] && op_hexval(s[i]) >= 0; i++) {
		if (i == 8)
			return -EINVAL;
		v = v << 4 | (uint32_t)op_hexval(s[i]);
	}
	if (i == 0)
		return -EINVAL;
	*end = s + i;
	*ret = v;
	return 0;
}

int op_lsn_parse(const char *text, uint64_t *ret)
{
	const char *p;
	uint32_t hi, lo;
	if (!text || hex32(text, &p, &hi) < 0 || *p != '/' || hex32(p + 1, &p, &lo) < 0 || *p)
		return -EINVAL;
	*ret = (uint64_t)hi << 32 | lo;
	return 0;
}

void op_lsn_format(uint64_t lsn, char out[OP_LSN_LEN])
{
	snprintf(out, OP_LSN_LEN, "%" PRIX32 "/%" PRIX32, (uint32_t)(lsn >> 32), (uint32_t)lsn);
}
