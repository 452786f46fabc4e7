/* support/yaml.h - YAML (libyaml) to json-c, the way Kubernetes reads YAML.
 *
 * Kubernetes (sigs.k8s.io/yaml) decodes YAML with go-yaml v2 into generic Go
 * values and re-encodes them as JSON. This module reproduces that result:
 *
 * Plain (unquoted) scalars are resolved as go-yaml v2 does (YAML 1.1 flavour):
 *   null:  "" ~ null Null NULL
 *   bool:  y Y yes Yes YES true True TRUE on On ON  /  n N no No NO false False
 *          FALSE off Off OFF
 *   int:   decimal, 0x/0X hex, 0o/0O octal, 0b/0B binary, a leading 0 is
 *          octal (0755 = 493), optional sign, '_' ignored; past int64 an
 *          unsigned 64-bit value, else a float
 *   float: [-+]?[0-9]*\.?[0-9]+([eE][-+][0-9]+)? (note: "1e5" without an
 *          exponent sign stays a string, as in go-yaml v2), .5 style
 *   everything else (timestamps included) is a string.
 * Quoted and block (| >) scalars are always strings. Tags: !!str forces a
 * string; !!int !!float !!bool !!null check the value ("cannot decode !!str
 * `abc` as a !!int"); !!binary is base64-decoded; other tags are ignored
 * (the value is a string for scalars, as in go-yaml).
 * .inf/.nan cannot be represented in JSON and are an error (as in Kubernetes).
 *
 * Mapping keys become JSON strings: scalar keys are resolved first and then
 * printed (`1: a` -> "1", `yes: a` -> "true", `0x10: a` -> "16", as
 * sigs.k8s.io/yaml does); null keys and collection keys are an error.
 * Duplicate keys: the last one wins (go-yaml v2 / Kubernetes behaviour), the
 * key keeps its first position; with reject_duplicate_keys set a key written
 * twice in one mapping is an error (keys brought in by a merge do not count). Merge keys (`<<: *base`, `<<: [*a, *b]`) are
 * applied in order as go-yaml v2 does (keys set later win; within a list,
 * earlier maps win).
 *
 * Anchors and aliases are supported and expanded (deep copies), but every
 * expanded node counts toward max_nodes and the scalar bytes added by
 * aliases are capped at max_bytes, so "billion laughs" fails fast with a
 * bounded amount of work and memory. Anchors are scoped to their document.
 *
 * Errors read "line 3, column 5: mapping values are not allowed in this
 * context" (1-based line and column).
 */
#ifndef PGOP_SUPPORT_YAML_H
#define PGOP_SUPPORT_YAML_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "support/err.h"

#define OP_YAML_DEFAULT_MAX_BYTES (8u * 1024 * 1024)
#define OP_YAML_DEFAULT_MAX_DEPTH 64
#define OP_YAML_DEFAULT_MAX_NODES 1000000u

/* Any field left 0 takes its default; a NULL limits pointer means all defaults. */
struct op_yaml_limits {
	size_t max_bytes;   /* input size; also caps scalar bytes added by aliases */
	unsigned max_depth; /* collection nesting; a top-level mapping is depth 1 */
	size_t max_nodes;   /* scalars + collections + keys, after alias expansion */
	/* Not a limit but a strictness switch (default off, as Kubernetes):
	 * "line 3, column 4: duplicate key \"a\"" instead of last-wins. */
	bool reject_duplicate_keys;
};

/* Parses every document in data[0..len) and writes an OWNED json array to
 * *ret_array (release with json_object_put) with one element per non-empty
 * document: documents that are empty or just null are skipped, so a file of
 * comments gives an empty array. data is borrowed and need not be
 * NUL-terminated. Returns the number of documents, or -EINVAL (syntax,
 * unsupported construct), -EMSGSIZE (a limit), -ENOMEM; err says what and
 * where. */
OP_MUST_CHECK int op_yaml_parse_docs(const char *data, size_t len, const struct op_yaml_limits *lim,
				     json_object **ret_array, struct op_err *err);

/* As op_yaml_parse_docs, but when the first non-whitespace byte is '{' or '['
 * the input is parsed as JSON (exactly one value, nesting capped by
 * max_depth), giving an array of that one value (empty when it is null).
 * This is what kubectl and the API server do with a request body. */
OP_MUST_CHECK
int op_yaml_or_json_parse_docs(const char *data, size_t len, const struct op_yaml_limits *lim,
			       json_object **ret_array, struct op_err *err);

#endif
