/* webhooks/offline.h - admission offline (`pgop validate`): the webhooks run
 * on manifest files instead of HTTPS requests.
 *
 * Reads YAML or JSON files (several documents each, `kind: List` expanded),
 * and for every object of a kind admission knows (Cluster, Backup,
 * ScheduledBackup, ObjectStore: enum wh_resource) runs what the API server
 * would: the mutating webhook's defaults (wh_default_resource), then
 * validation (wh_validate_resource; UPDATE rules too when an old file holds
 * an object of the same kind and namespace/name, itself defaulted first). An AdmissionReview document is
 * answered exactly as the HTTPS endpoint would (wh_handle_review with
 * review_kind). Other kinds are listed as skipped.
 *
 * Unlike the rest of webhooks/, this reads files (and stdin for "-").
 */
#ifndef PGOP_WEBHOOKS_OFFLINE_H
#define PGOP_WEBHOOKS_OFFLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "support/err.h"
#include "webhooks/webhooks.h"

/* Everything borrowed for the duration of the call. */
struct wh_offline_opts {
	const char *const *files;     /* manifests to check; "-" is stdin */
	size_t n_files;
	const char *const *old_files; /* stored objects: one found here by kind and
				       * namespace/name is checked as an UPDATE */
	size_t n_old_files;
	bool json;                    /* one JSON document on out instead of text lines */
	enum wh_kind review_kind;     /* the webhook answering AdmissionReview documents */
	FILE *diag;                   /* input errors and the text summary; NULL = stderr */
};

/* What a run found. */
struct wh_offline_summary {
	unsigned admitted, denied, skipped, input_errors;
};

/* Runs admission on every document of opts->files. The verdicts go to out
 * (text: one line per admitted object, error and warning, an AdmissionReview's
 * response pretty-printed; json: one document {admitted, summary, results[]}
 * at the end); files or documents that cannot be read or parsed go to diag
 * (and into the JSON results) and are counted as input errors, then the run
 * goes on; in text mode the summary line ends diag. Returns 0 and fills
 * *ret_sum (may be NULL) when the run happened; -errno when it could not
 * start (an old file unreadable or holding a Cluster that cannot be
 * defaulted: err says "FILE: why", nothing was written). */
OP_MUST_CHECK int wh_validate_files(const struct wh_offline_opts *opts, FILE *out,
				    struct wh_offline_summary *ret_sum, struct op_err *err);

#endif
