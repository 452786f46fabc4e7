/* api/pgparams.h - PostgreSQL parameters the operator owns
 * (admission-rules.md §7), as static const tables shared by the defaulting
 * code (D6) and the validator (V30).
 *
 * All strings are static and owned by the tables; nothing here allocates.
 * Parameter names are compared case-insensitively (PostgreSQL GUC names are
 * case-insensitive; CNPG compares them case-sensitively, which would let
 * "Archive_Mode" through).
 */
#ifndef PGOP_API_PGPARAMS_H
#define PGOP_API_PGPARAMS_H

#include <stdbool.h>
#include <stddef.h>

struct api_pg_param {
	const char *name;
	const char *value;
};

/* §7b GlobalDefaultSettings: written into spec.postgresql.parameters by D6. */
extern const struct api_pg_param api_pg_default_params[];
extern const size_t api_pg_default_params_count;

/* §7c MandatorySettings: forced in the generated postgresql.conf only. */
extern const struct api_pg_param api_pg_mandatory_params[];
extern const size_t api_pg_mandatory_params_count;

/* §7a FixedConfigurationParameters: "blocked" and "fixed" together. A user
 * value for one of these is rejected unless it equals CNPG's own (V30d). */
bool api_pg_param_is_fixed(const char *name);
/* The blocked subset only (the PostgreSQL default must be kept). */
bool api_pg_param_is_blocked(const char *name);
/* The §7b default of name (static string), or NULL when there is none. */
const char *api_pg_param_default(const char *name);

/* archive_mode value CNPG computes (§7d): "off" when skip_wal_archiving,
 * else "always" for a replica cluster, else "on". Static string. */
const char *api_pg_archive_mode(bool skip_wal_archiving, bool replica);

#endif
