/* reconciler/internal.h - helpers shared by the reconciler's files (not
 * exported outside reconciler/). json-c constructors that fail mean OOM:
 * they abort, per the project's OOM policy.
 *
 * Layers of reconciler/'s files (docs/internals/reconciler.md, "Layers"): a
 * file calls functions of its own layer's pure files or of lower layers only,
 * never of a higher one, so the file call graph is a DAG (checked with nm
 * over the objects: defined T vs undefined U).
 *   0 pure, no shared state: status.c, plan.c, objects.c, objects_pod.c,
 *     objects_placement.c, disruption.c, annotations.c (cnpg.io/podPatch),
 *     replication.c, queue.c, instance_client.c (curl; calls status.c)
 *   1 shared state: state.c (caches, stats, per-Cluster states and notes;
 *     calls layer 0)
 *   2 services on the state: run.c (rc_requeue, rc_event, rc_create,
 *     rc_delete, rc_patch_labels), secrets.c (Secret contents, the PKI memo),
 *     contact.c (who answers, the prober, the primary watch, rc_mono_ms)
 *   3 reconcile steps: reconcile_objects.c, rollout.c, cut.c, drain.c (PDBs,
 *     drains), backup.c (Backups),
 *     scheduled.c (ScheduledBackups; calls backup.c's rc_backups_of),
 *     metrics_events.c (the Event of a broken monitoring query),
 *     hibernation.c (cnpg.io/hibernation)
 *   4 one reconcile: reconcile.c
 *   5 entry points: controller.c (informers, queue, workers), live.c (the
 *     live API's side)
 *   6 start.c (the runner) */
#ifndef PGOP_RECONCILER_INTERNAL_H
#define PGOP_RECONCILER_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#endif
