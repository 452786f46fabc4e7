/* webhooks/rules_spec.h - internal to webhooks/: the V1-V50 rule functions
 * (defined in rules_spec_<area>.c, listed in order by rules_spec.c) and the
 * small read-only helpers they share (rules_spec_util.c).
 *
 * All json_object pointers taken or returned here are BORROWED from the
 * context (ctx->obj / ctx->spec) and live as long as it.
 */
#ifndef PGOP_WEBHOOKS_RULES_SPEC_H
#define PGOP_WEBHOOKS_RULES_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "webhooks/rules.h"

/* Rule functions, one per V rule (admission-rules.md §4). */
#define WH_RULE_FN(name) void name(const struct wh_ctx *ctx, struct wh_result *res)
WH_RULE_FN(wh_v7_bootstrap_method);
WH_RULE_FN(wh_v12_min_sync_replicas);
WH_RULE_FN(wh_v13_max_sync_replicas);

#endif
