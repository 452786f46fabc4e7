/* support/hash.c - FNV-1a 64 (hash.h). */
#include "support/hash.h"

#include <string.h>

#include "support/alloc.h"

#define FNV1A64_PRIME 1099511628211ull

uint64_t op_fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= FNV1A64_PRIME;
	}
	return h;
}

char *op_fingerprint(const char *s)
{
	uint64_t h = op_fnv1a64(OP_FNV1A64_INIT, s, strlen(s));
	return op_asprintf("%016llx", (unsigned long long)h);
}
