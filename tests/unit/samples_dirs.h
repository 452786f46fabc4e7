/* tests/unit/samples_dirs.h - where the unit tests find sample Cluster manifests.
 *
 * The default data is the repository's own samples/ (valid Clusters at the top,
 * samples/invalid/ for Clusters admission must refuse). A missing samples/ is a
 * test failure, never a skip.
 *
 * The CloudNativePG sample corpus is optional: only when PGOP_SHARED_DIR is set
 * explicitly (environment variable at run time, or cmake -DPGOP_SHARED_DIR=...)
 * do the tests also read $PGOP_SHARED_DIR/samples/cnpg (and its dc/ folder).
 */
#ifndef PGOP_TESTS_UNIT_SAMPLES_DIRS_H
#define PGOP_TESTS_UNIT_SAMPLES_DIRS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The repository's valid samples and the ones admission must deny. */
#define REPO_SAMPLES_DIR PGOP_SOURCE_DIR "/samples"
#define REPO_INVALID_SAMPLES_DIR PGOP_SOURCE_DIR "/samples/invalid"
/* Cluster documents in REPO_SAMPLES_DIR (top level) and in REPO_INVALID_SAMPLES_DIR:
 * update with the files (samples/README.md lists them). */
#define REPO_SAMPLE_CLUSTERS 9
#define REPO_INVALID_SAMPLE_CLUSTERS 16
/* Backup, ScheduledBackup and ObjectStore samples (one document per file) */
#define REPO_SAMPLE_OTHERS 3
#define REPO_INVALID_SAMPLE_OTHERS 4
/* The CloudNativePG corpus holds at least this many Cluster documents. */
#define CNPG_SAMPLE_CLUSTERS_MIN 60


/* The optional corpus root (the directory holding samples/cnpg), or NULL when
 * PGOP_SHARED_DIR is not set. Borrowed (environment or a string literal). */
static inline const char *samples_shared_dir(void)
{
	const char *e = getenv("PGOP_SHARED_DIR");
	if (e && *e)
		return e;
#ifdef PGOP_SHARED_DIR
	if (*PGOP_SHARED_DIR)
		return PGOP_SHARED_DIR;
#endif
	return NULL;
}

#endif
