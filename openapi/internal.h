/* openapi/internal.h - symbols shared inside openapi/ only. */
#ifndef PGOP_OPENAPI_INTERNAL_H
#define PGOP_OPENAPI_INTERNAL_H

#include <stddef.h>

/* The embedded cluster.schema.yaml (generated file); NUL-terminated, static. */
extern const char oa_schema_data[];
extern const size_t oa_schema_data_len;

#endif
