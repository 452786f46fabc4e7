/* webhooks/rules_spec.c - the table of validation rules V1-V50 that run on
 * CREATE and UPDATE, in the order of admission-rules.md §4 (CNPG's
 * validate()). The rule functions live in rules_spec_<area>.c.
 */
#include "webhooks/rules_spec.h"

#define CU (WH_OP_CREATE | WH_OP_UPDATE)

const struct wh_rule wh_rules_spec[] = {
	{ "V7", CU, wh_v7_bootstrap_method },
	{ "V12", CU, wh_v12_min_sync_replicas },
	{ "V13", CU, wh_v13_max_sync_replicas },
};

const size_t wh_rules_spec_count = sizeof(wh_rules_spec) / sizeof(wh_rules_spec[0]);
