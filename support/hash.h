/* support/hash.h - FNV-1a 64, the project's one change detector: a
 * fingerprint is compared for equality with one computed earlier by pgop
 * itself (an annotation it set, a memo it keeps). Not cryptographic: nothing
 * is trusted or authenticated on it. */
#ifndef PGOP_SUPPORT_HASH_H
#define PGOP_SUPPORT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64's offset basis: the state before the first byte. */
#define OP_FNV1A64_INIT 14695981039346656037ull

/* h folded over p[0..n) (p borrowed): start with OP_FNV1A64_INIT, chain
 * calls to hash several pieces (put a separator between pieces that may
 * shift: "ab","c" and "a","bc" hash alike). */
uint64_t op_fnv1a64(uint64_t h, const void *p, size_t n);

/* "%016llx" of FNV-1a 64 over the string s (borrowed, NUL-terminated),
 * OWNED (free): what pgop writes into annotations it compares later. */
char *op_fingerprint(const char *s);

#endif
