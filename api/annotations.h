/* api/annotations.h - the Cluster annotations CloudNativePG users and its
 * kubectl plugin set (`kubectl cnpg fencing|hibernate|reload`), read the
 * way CloudNativePG reads them (pkg/utils/labels_annotations.go, fencing.go):
 *
 *   cnpg.io/fencedInstances   JSON list of instance names, or ["*"]: those
 *                             instances' postgres is stopped (instance/)
 *   cnpg.io/hibernation       "on": the instance Pods are deleted, PVCs kept
 *   cnpg.io/reconciliationLoop "disabled": the reconciler leaves the Cluster
 *   cnpg.io/podPatch          RFC 6902 patch applied to every instance Pod
 *   cnpg.io/reloadedAt        any new value: every instance reloads
 *
 * Pure: no I/O, no logging. Strings returned are borrowed from the Cluster
 * (or the JSON object) they were read from.
 */
#ifndef PGOP_API_ANNOTATIONS_H
#define PGOP_API_ANNOTATIONS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "api/cluster.h"

#define API_ANN_FENCED_INSTANCES "cnpg.io/fencedInstances"
#define API_ANN_HIBERNATION "cnpg.io/hibernation"
#define API_ANN_RECONCILIATION_LOOP "cnpg.io/reconciliationLoop"
#define API_ANN_POD_PATCH "cnpg.io/podPatch"
#define API_ANN_RELOADED_AT "cnpg.io/reloadedAt"
/* The wildcard of cnpg.io/fencedInstances: every instance. */
#define API_FENCE_ALL "*"
/* The Condition CloudNativePG keeps while hibernation is on (its type). */
#define API_COND_HIBERNATION "cnpg.io/hibernation"

/* Whether the instance named pod is fenced by cnpg.io/fencedInstances in
 * annotations (borrowed): the value is a JSON array of strings naming it or
 * holding "*". An absent, empty or malformed value (not a JSON array of
 * strings) fences nothing, as CloudNativePG's IsInstanceFenced. */
bool api_fenced(const struct api_kvs *annotations, const char *pod);

/* cnpg.io/hibernation is exactly "on" (CloudNativePG compares the string). */
bool api_hibernation_on(const struct api_kvs *annotations);

/* cnpg.io/reconciliationLoop is exactly "disabled", in the annotations of a
 * Cluster object as read from the API server (borrowed JSON; no decode: the
 * reconciler checks it before anything else). */
bool api_reconciliation_disabled(json_object *cluster_obj);

/* The value of annotation key in a Kubernetes object (borrowed JSON), borrowed,
 * or NULL. Annotation keys hold '.' and '/', so no dotted path can name them. */
const char *api_obj_annotation(json_object *obj, const char *key);

#endif
