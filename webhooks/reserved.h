/* webhooks/reserved.h - names reserved by the operator (admission-rules.md §8).
 * Pure predicates over borrowed strings; nothing allocates.
 */
#ifndef PGOP_WEBHOOKS_RESERVED_H
#define PGOP_WEBHOOKS_RESERVED_H

#include <stdbool.h>

/* Env var names, case-insensitive: CNPG_*, PG*, POD_NAME, NAMESPACE, CLUSTER_NAME. */
bool wh_reserved_env_name(const char *name);
/* Role names: postgres, streaming_replica, cnpg_*, pg_*. */
bool wh_reserved_role_name(const char *name);
/* Service names of a cluster: <cluster>-rw, -ro, -r, -any. */
bool wh_reserved_service_name(const char *cluster, const char *name);
/* Tablespace names: pg_*. */
bool wh_reserved_tablespace_name(const char *name);

#endif
