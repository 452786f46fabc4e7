/* api/barman_args.h - barmanObjectStore's additionalCommandArgs fields
 * (wal.archiveAdditionalCommandArgs, wal.restoreAdditionalCommandArgs,
 * data.additionalCommandArgs, data.restoreAdditionalCommandArgs): in
 * CloudNativePG extra arguments of the barman-cloud command each field is
 * for. pgop runs no barman-cloud; it reads the options its own archiver has
 * an equivalent for and reports every other one, so the webhooks can warn
 * about it by name. Pure: no I/O, no allocation kept.
 *
 * The options are barman-cloud 3.19.1's, written as CloudNativePG passes them
 * ("--name=value" in one element; "--name value" and "-J 4" in two also
 * parse). Acting on:
 *   data.additionalCommandArgs (barman-cloud-backup): --max-archive-size / -S
 *     SIZE, --min-chunk-size SIZE, --read-timeout SECONDS, --jobs / -J N,
 *     --immediate-checkpoint;
 *   the three others: --read-timeout SECONDS.
 * SIZE is barman's check_size(): digits, or a number with a unit KB MB GB
 * TB (powers of 1024; KiB MiB GiB TiB: powers of 1000, as barman has them).
 */
#ifndef PGOP_API_BARMAN_ARGS_H
#define PGOP_API_BARMAN_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "support/err.h"

enum api_barman_tool {
	API_BARMAN_WAL_ARCHIVE, /* wal.archiveAdditionalCommandArgs */
	API_BARMAN_WAL_RESTORE, /* wal.restoreAdditionalCommandArgs */
	API_BARMAN_BACKUP,      /* data.additionalCommandArgs */
	API_BARMAN_RESTORE,     /* data.restoreAdditionalCommandArgs */
	API_BARMAN_TOOLS        /* how many: the lists are 0..API_BARMAN_TOOLS-1 */
};

/* The field of tool under barmanObjectStore ("wal.archiveAdditionalCommandArgs"). */
const char *api_barman_args_field(enum api_barman_tool tool);

/* What the arguments ask of pgop; 0 / false: not given. */
struct api_barman_args {
	uint64_t max_archive_size; /* bytes, at least API_BARMAN_ARCHIVE_MIN, capped at 1 TiB */
	uint64_t min_chunk_size;   /* bytes, API_BARMAN_CHUNK_MIN..API_BARMAN_CHUNK_MAX */
	long read_timeout_s;       /* 1..API_BARMAN_READ_TIMEOUT_MAX */
	unsigned jobs;             /* 1..API_BARMAN_JOBS_MAX */
	bool immediate_checkpoint;
};
#define API_BARMAN_ARCHIVE_MIN (1024u * 1024)        /* pgop's floor (barman's: 1 byte) */
#define API_BARMAN_ARCHIVE_MAX (1ull << 40)          /* barman's S3 cap, applied silently */
#define API_BARMAN_CHUNK_MIN (5u * 1024 * 1024)      /* S3's smallest part */
#define API_BARMAN_CHUNK_MAX (256u * 1024 * 1024)    /* pgop holds jobs + 1 of them */
#define API_BARMAN_READ_TIMEOUT_MAX 86400
#define API_BARMAN_JOBS_MAX 64

/* Called for each argument pgop does not act on: its index in the list and
 * the option ("--max-bandwidth"; a value alone is the option's it follows). */
typedef void (*api_barman_ignored_fn)(void *ud, size_t index, const char *option);

/* Parses args[0..n) of tool into *ret (zeroed first). -EINVAL with err
 * naming the element ("[2]: --read-timeout: expected whole seconds 1..86400,
 * got 'x'") for a value pgop cannot use of an option it acts on; ignored (may
 * be NULL) hears of every other option. */
OP_MUST_CHECK int api_barman_args_parse(enum api_barman_tool tool, const char *const *args,
					size_t n, struct api_barman_args *ret,
					api_barman_ignored_fn ignored, void *ud, struct op_err *err);

/* barman's check_size() of s into *ret: -EINVAL when it is no size. */
OP_MUST_CHECK int api_barman_size_parse(const char *s, uint64_t *ret);

#endif
