/* api/timestamp.h - the Cluster status's sub-second timestamps, one format for
 * every writer: the reconciler (targetPrimaryTimestamp of a failover or a
 * switchover) and the instance manager (its SIGTERM handover). The fence
 * clock starts from them (api/fence.h, docs/internals/failover.md). */
#ifndef PGOP_API_TIMESTAMP_H
#define PGOP_API_TIMESTAMP_H

#include <stdint.h>

#include "support/err.h"

/* Unix microseconds -> RFC 3339 with microseconds, as CloudNativePG writes
 * its timestamps (Go's metav1.RFC3339Micro): "2026-12-04T22:40:01.123456Z".
 * Owned (free); aborts on OOM. */
char *api_time_rfc3339_us(int64_t us);
/* CLOCK_REALTIME as Unix microseconds. */
int64_t api_time_now_us(void);

/* Unix seconds -> "2026-12-02T11:00:00Z" (owned). */
char *api_time_rfc3339(int64_t t);
/* RFC 3339 "…Z", whole seconds or with a fraction -> Unix seconds (the
 * fraction dropped); -EINVAL otherwise. */
OP_MUST_CHECK int api_time_parse(const char *s, int64_t *ret);
/* The same -> Unix milliseconds, a fraction finer than a millisecond rounded
 * up (a start read back is never earlier than the one written). */
OP_MUST_CHECK int api_time_parse_ms(const char *s, int64_t *ret);

#endif
