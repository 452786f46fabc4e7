/* support/yaml_emit.h - json-c to YAML (libyaml emitter), canonical form.
 *
 * The output is one YAML document ("---" first) in block style: object keys
 * sorted (byte order), strings that would read back as another type (YAML 1.1
 * or 1.2 resolvers: yes/no/on/off, numbers, null, "", .inf...) are quoted,
 * multi-line strings use the literal block style, scalars are never folded.
 * Reading it back with op_yaml_parse_docs() gives an equal json-c value.
 */
#ifndef PGOP_SUPPORT_YAML_EMIT_H
#define PGOP_SUPPORT_YAML_EMIT_H

#include <json-c/json.h>

#include "support/buf.h"
#include "support/err.h"

/* Nesting rendered at most (the root is depth 0); deeper is -ELOOP. */
#define OP_YAML_EMIT_MAX_DEPTH 64

/* Appends obj (borrowed) rendered as YAML to out (caller-owned; its cap
 * applies: -EMSGSIZE). On failure out is left as it was. Returns 0,
 * -EMSGSIZE, -ELOOP, -ENOMEM or -EINVAL (a string that is not UTF-8, or
 * another emitter error). Strings may hold NUL bytes (double-quoted "\0"). */
OP_MUST_CHECK int op_yaml_emit(json_object *obj, struct op_buf *out, struct op_err *err);

#endif
