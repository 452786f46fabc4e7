/* webhooks/selftest.h - the admission check behind `pgop selftest`. */
#ifndef PGOP_WEBHOOKS_SELFTEST_H
#define PGOP_WEBHOOKS_SELFTEST_H

#include <json-c/json.h>
#include <stdio.h>

#include "support/err.h"

/* The field the invalid Cluster's refusal must name. */
#define WH_SELFTEST_FIELD "spec.postgresql.parameters.listen_addresses"

/* The caller's side: a server-side dry-run create of the Cluster JSON body
 * (borrowed). 0 with *ret_obj (owned, may be NULL) the object as admitted;
 * -EINVAL refused by admission (err names the causes), -EACCES/-ENOENT
 * wrong answers that retrying cannot fix, other -errno transient. */
struct wh_selftest_io {
	int (*dry_create)(void *ud, const char *body, json_object **ret_obj, struct op_err *err);
	void *ud;
	FILE *out; /* one line per check and the verdict (borrowed) */
};

/* Runs both checks, retrying transient failures until timeout_s. Returns 0
 * when both answers were right, 1 otherwise. */
int wh_selftest(const struct wh_selftest_io *io, unsigned timeout_s);

#endif
