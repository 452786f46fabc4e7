/* webhooks/rules.h - the shape of a validation rule (internal to webhooks/).
 *
 * Rules live in static const tables, one row per rule, in the order of
 * admission-rules.md. A rule reads the context and records findings in res;
 * it never allocates anything that outlives the call besides res entries.
 */
#ifndef PGOP_WEBHOOKS_RULES_H
#define PGOP_WEBHOOKS_RULES_H

#include "webhooks/webhooks.h"

struct wh_ctx {
	json_object *obj;     /* borrowed: the new object (a Cluster, a Backup...), already defaulted */
	json_object *spec;    /* borrowed: obj.spec (an object, maybe empty) */
	json_object *old;     /* borrowed: the old Cluster on UPDATE, else NULL */
	json_object *old_spec;/* borrowed: old.spec on UPDATE, else NULL */
	enum wh_op op;
};

typedef void (*wh_rule_fn)(const struct wh_ctx *ctx, struct wh_result *res);

struct wh_rule {
	const char *id;   /* "V12", "U3", "W2" as in admission-rules.md */
	unsigned ops;     /* WH_OP_CREATE | WH_OP_UPDATE */
	wh_rule_fn fn;
};

/* Rule tables, each defined in its own rules_*.c, run in this order by validate.c. */
extern const struct wh_rule wh_rules_safety[];    /* P1-P2 (rules_safety.c), always */
extern const size_t wh_rules_safety_count;
extern const struct wh_rule wh_rules_spec[];      /* V1-V58 (rules_spec*.c) */
extern const size_t wh_rules_spec_count;
extern const struct wh_rule wh_rules_update[];    /* U1-U9 (rules_update.c) */
extern const size_t wh_rules_update_count;
extern const struct wh_rule wh_rules_warnings[];  /* W1-W9 (rules_warnings.c) */
extern const size_t wh_rules_warnings_count;

/* The other kinds' tables (rules_backup.c), run by kinds.c: errors, then
 * UPDATE rules, then warnings. */
extern const struct wh_rule wh_rules_backup[];    /* Backup: B1-B6, BW1 */
extern const size_t wh_rules_backup_count;
extern const struct wh_rule wh_rules_scheduled_backup[]; /* S1, B1-B5, S2, SW1-SW2, BW1 */
extern const size_t wh_rules_scheduled_backup_count;
extern const struct wh_rule wh_rules_object_store[]; /* O1-O4, OW1 */
extern const size_t wh_rules_object_store_count;
/* Defaults of Backup / ScheduledBackup (BD1, SD1), applied in place. */
void wh_backup_defaults_apply(json_object *obj, bool scheduled);

#endif
