/* support/yaml_internal.h - shared between yaml.c and yaml_scalar.c only
 * (exported for unit tests; not part of the support/ API). */
#ifndef PGOP_SUPPORT_YAML_INTERNAL_H
#define PGOP_SUPPORT_YAML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum op_yaml_kind { OP_YAML_NULL, OP_YAML_BOOL, OP_YAML_INT, OP_YAML_UINT, OP_YAML_FLOAT, OP_YAML_STR };

struct op_yaml_scalar {
	enum op_yaml_kind kind;
	bool b;
	int64_t i;
	uint64_t u;
	double d;
};

/* Resolves a plain scalar s[0..n) as go-yaml v2 does (see yaml.h). */
void op_yaml_resolve_plain(const char *s, size_t n, struct op_yaml_scalar *r);
/* "!!int", "!!str"... for messages. */
const char *op_yaml_kind_tag(enum op_yaml_kind k);

#define OP_YAML_FLOAT_KEY_MAX 48
/* Prints a float map key as sigs.k8s.io/yaml does (Go 'g', float32 precision). */
void op_yaml_format_float_key(double d, char out[OP_YAML_FLOAT_KEY_MAX]);

#define OP_YAML_FLOAT_TEXT_MAX 48
/* Prints a float value as Go's encoding/json does (shortest round-trip digits). */
void op_yaml_format_float_json(double d, char out[OP_YAML_FLOAT_TEXT_MAX]);

#endif
