/* webhooks/reserved.c - operator-reserved names (admission-rules.md §8). */
#include "webhooks/reserved.h"

#include <string.h>
#include <strings.h>

#include "support/alloc.h"

static const char *const env_exact[] = { "POD_NAME", "NAMESPACE", "CLUSTER_NAME" };
static const char *const env_prefix[] = { "CNPG_", "PG" };
static const char *const role_exact[] = { "postgres", "streaming_replica" };
static const char *const role_prefix[] = { "cnpg_", "pg_" };
static const char *const service_suffix[] = { "-rw", "-ro", "-r", "-any" };

bool wh_reserved_env_name(const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(env_exact); i++)
		if (strcasecmp(name, env_exact[i]) == 0)
			return true;
	for (size_t i = 0; i < OP_ARRAY_SIZE(env_prefix); i++)
		if (strncasecmp(name, env_prefix[i], strlen(env_prefix[i])) == 0)
			return true;
	return false;
}

bool wh_reserved_role_name(const char *name)
{
	if (!name)
		return false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(role_exact); i++)
		if (strcmp(name, role_exact[i]) == 0)
			return true;
	for (size_t i = 0; i < OP_ARRAY_SIZE(role_prefix); i++)
		if (strncmp(name, role_prefix[i], strlen(role_prefix[i])) == 0)
			return true;
	return false;
}

bool wh_reserved_service_name(const char *cluster, const char *name)
{
	if (!cluster || !name)
		return false;
	size_t cl = strlen(cluster);
	if (strncmp(name, cluster, cl) != 0)
		return false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(service_suffix); i++)
		if (strcmp(name + cl, service_suffix[i]) == 0)
			return true;
	return false;
}

bool wh_reserved_tablespace_name(const char *name)
{
	return name && strncmp(name, "pg_", 3) == 0;
}
