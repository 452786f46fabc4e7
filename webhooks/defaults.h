/* webhooks/defaults.h - internal to webhooks/: the defaulting rules applied
 * in place, without building a patch.
 */
#ifndef PGOP_WEBHOOKS_DEFAULTS_H
#define PGOP_WEBHOOKS_DEFAULTS_H

#include <json-c/json.h>
#include <stdbool.h>

/* Applies D1-D14 to cluster (borrowed, modified in place; must be an object).
 * preserve_user_fixed: keep user values of fixed PostgreSQL parameters in D6
 * (CNPG Default(), the mutating webhook); false drops them (CNPG
 * SetDefaults(), applied to the old object on UPDATE). Never fails. */
void wh_defaults_apply(json_object *cluster, bool preserve_user_fixed);

#endif
