/* reconciler/objects.h - the desired Kubernetes objects of one Cluster.
 *
 * Pure builders: a decoded Cluster (borrowed) in, a new json-c object
 * (OWNED by the caller, json_object_put) out. No I/O, no clock. Names,
 * labels and selectors follow CloudNativePG (runtime.md §4.4) and
 * docs/instance-contract.md. Every object carries the Cluster as its
 * controller owner reference, so Kubernetes' garbage collector deletes it
 * with the Cluster.
 */
#ifndef PGOP_RECONCILER_OBJECTS_H
#define PGOP_RECONCILER_OBJECTS_H

#include <json-c/json.h>
#include <stdint.h>

#include "api/cluster.h"
#include "api/names.h"
#include "reconciler/reconciler.h"
#include "support/err.h"

/* Labels and annotations (CNPG keys). */
#define RC_LABEL_CLUSTER "cnpg.io/cluster"
#define RC_LABEL_INSTANCE_NAME "cnpg.io/instanceName"
#define RC_LABEL_POD_ROLE "cnpg.io/podRole"
#define RC_LABEL_INSTANCE_ROLE "cnpg.io/instanceRole"
#define RC_LABEL_ROLE "role" /* deprecated copy of instanceRole */
#define RC_LABEL_JOB_ROLE "cnpg.io/jobRole"
#define RC_LABEL_PVC_ROLE "cnpg.io/pvcRole"
#define RC_LABEL_TABLESPACE "cnpg.io/tablespaceName" /* its Kubernetes form */
#define RC_LABEL_USER_TYPE "cnpg.io/userType"
#define RC_LABEL_RELOAD "cnpg.io/reload"
#define RC_ANN_NODE_SERIAL "cnpg.io/nodeSerial"
#define RC_ANN_PVC_STATUS "cnpg.io/pvcStatus" /* "ready" once the bootstrap Pod succeeded */
/* Rolling restart (kubectl cnpg restart): the Cluster's value, copied to
 * each instance Pod when it is built; a Pod with another value is outdated. */
#define RC_ANN_RESTARTED_AT "kubectl.kubernetes.io/restartedAt"
/* The image of the Pod's postgres container (rc_pg_image when it was built):
 * the cached Pods keep metadata, not their container specs; a Pod with another
 * image of the same major is outdated (rollout.h). */
#define RC_ANN_IMAGE "pgop.io/image"
/* The WAL archive's credential volumes the Pod was built with
 * (rc_archive_volumes): another set makes it outdated (rollout.h), so
 * adding or changing spec.backup.barmanObjectStore's Secret references rolls
 * the instances. Absent when the Cluster archives nowhere. */
#define RC_ANN_ARCHIVE_VOLUMES "pgop.io/archiveVolumes"
/* The tablespaces whose volumes the Pod mounts (rc_tablespace_names): a
 * tablespace added to the Cluster rolls the instances onto Pods that mount
 * its new volumes. Absent when there is none. */
#define RC_ANN_TABLESPACES "pgop.io/tablespaces"
/* On the Cluster: the primary Pod named here is being restarted in place
 * (contract with the instance manager: on SIGTERM it does not hand over,
 * it just restarts); the UID is the Pod to delete (pgop's own bookkeeping). */
#define RC_ANN_INPLACE_RESTART "pgop.io/inPlaceRestart"
#define RC_ANN_INPLACE_RESTART_UID "pgop.io/inPlaceRestartPodUID"

#define RC_ROLE_PRIMARY "primary"
#define RC_ROLE_REPLICA "replica"
#define RC_ROLE_UNHEALTHY "unhealthy"

/* struct rc_settings (operator-wide settings the builders need): reconciler/reconciler.h. */

/* How an instance's volume is first filled: initdb (the first primary) or
 * join (a clone of the primary), by a bootstrap Pod (CloudNativePG: a Job;
 * label cnpg.io/jobRole either way). */
enum rc_job_role { RC_JOB_INITDB, RC_JOB_JOIN };
/* "initdb" / "join". */
const char *rc_job_role_name(enum rc_job_role role);
/* The bootstrap Pod's name, "<pod>-initdb" / "<pod>-join" (owned). */
char *rc_job_name(const char *cluster, int64_t serial, enum rc_job_role role);

/* {"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","name","uid",
 * "controller":true,"blockOwnerDeletion":true}. */
json_object *rc_owner_ref(const struct api_cluster *c);

/* Service -rw/-ro/-r (ClusterIP, port 5432 "postgres"), selector per §4.4. */
json_object *rc_build_service(const struct api_cluster *c, enum api_service svc);

/* PVC for instance serial: PGDATA (`<pod>`, pvcRole PG_DATA, spec.storage) or
 * WAL (`<pod>-wal`, PG_WAL, spec.walStorage). ReadWriteOnce, size from
 * storage.size or pvcTemplate requests. -EINVAL when no size is given or
 * wal is asked without walStorage. */
OP_MUST_CHECK
int rc_build_pvc(const struct api_cluster *c, int64_t serial, bool wal, json_object **ret,
		 struct op_err *err);
/* The PVC of spec.tablespaces[i] for instance serial: `<pod>-tbs-<name>`
 * (api_tablespace_pvc_name), pvcRole PG_TABLESPACE, cnpg.io/tablespaceName,
 * its storage. -EINVAL as rc_build_pvc. */
OP_MUST_CHECK int rc_build_tablespace_pvc(const struct api_cluster *c, int64_t serial, size_t i,
					  json_object **ret, struct op_err *err);
/* spec.tablespaces' names joined by ',' ("" when none; owned). */
char *rc_tablespace_names(const struct api_cluster *c);

/* The instance Pods' postgres container: its name, and its image (borrowed:
 * spec.imageName, else the operator's default image). */
#define RC_CONTAINER_POSTGRES "postgres"
const char *rc_pg_image(const struct api_cluster *c, const struct rc_settings *s);
/* "<file>=<secret>/<key>;..." of the WAL archive's credential volumes
 * (api_barman_file_ref), "" when none. Owned. */
char *rc_archive_volumes(const struct api_cluster *c);
/* objects_monitoring.c (issue 27): the exporter's container port 9187
 * "metrics" (owned), and spec.monitoring's custom query ConfigMaps/Secrets as
 * optional volumes mounted under /run/pgop/monitoring (appended). */
json_object *rc_metrics_port(void);
/* podmonitor.c: the Cluster's PodMonitor (owned). */
json_object *rc_build_podmonitor(const struct api_cluster *c);
void rc_monitoring_volumes(const struct api_cluster *c, json_object *vols, json_object *mounts);

/* A key/value list as a JSON object of strings (owned by the caller). */
json_object *rc_kvs_object(const struct api_kvs *kvs);

/* objects_placement.c: where the instance and bootstrap Pods run, as
 * CloudNativePG renders it (pkg/specs/pods.go CreateAffinitySection). The
 * generated pod anti-affinity (enablePodAntiAffinity, default true): a term
 * on the labels cnpg.io/cluster In [<c>] and cnpg.io/podRole In [instance]
 * over topologyKey (default kubernetes.io/hostname), required, or preferred
 * with weight 100; additionalPodAntiAffinity's terms appended to it,
 * additionalPodAffinity as podAffinity, nodeAffinity as is. NULL when there
 * is nothing to say (owned otherwise). */
json_object *rc_build_affinity(const struct api_cluster *c);
/* Sets spec.affinity, tolerations, nodeSelector and topologySpreadConstraints
 * (each only when the Cluster has one) on a pod spec (borrowed, modified). */
void rc_pod_placement(const struct api_cluster *c, json_object *spec);
/* The fingerprint of that placement as rendered (op_fingerprint of the
 * canonical JSON of what rc_pod_placement sets, support/hash.h), OWNED:
 * the one value written on an instance Pod (RC_ANN_PLACEMENT_HASH,
 * annotations.h) and compared by the rolling restart. Spec changes that
 * render the same (a key order, an explicit default) give the same value. */
char *rc_placement_hash(const struct api_cluster *c);

/* Instance Pod `<c>-<serial>` with role label `role` (RC_ROLE_*), carrying
 * the Cluster's RC_ANN_RESTARTED_AT annotation when it has one, and the
 * fingerprints the rolling restart compares (RC_ANN_IMAGE,
 * RC_ANN_ARCHIVE_VOLUMES, RC_ANN_PLACEMENT_HASH, RC_ANN_POD_PATCH_HASH). */
OP_MUST_CHECK
int rc_build_pod(const struct api_cluster *c, const struct rc_settings *s, int64_t serial,
		 const char *role, json_object **ret, struct op_err *err);

/* Bootstrap Pod `<pod>-initdb` / `<pod>-join` (`pgop instance init|join`
 * on the instance's volumes, restartPolicy OnFailure), owned by the Cluster
 * like the instance Pod. No Job: kube-controller-manager's Job controller
 * (20 requests/s upstream, ~5 per Job) bounded how fast 1,000 Clusters were
 * created (docs/internals/memory.md). -EINVAL when spec.bootstrap.initdb
 * holds an argument that cannot go to initdb. */
OP_MUST_CHECK int rc_build_bootstrap_pod(const struct api_cluster *c, const struct rc_settings *s,
					 int64_t serial, enum rc_job_role role, json_object **ret,
					 struct op_err *err);

/* The Secret holding the credentials of `which` (API_SECRET_SUPERUSER or
 * API_SECRET_APP) that the instances mount: the one the spec names
 * (spec.superuserSecret; the bootstrap method's secret for the application
 * owner), else pgop's own `<c>-superuser` / `<c>-app`. Owned. */
char *rc_user_secret_name(const struct api_cluster *c, enum api_secret which);
/* Whether pgop generates that Secret, as CloudNativePG does: `<c>-app` unless
 * the bootstrap method names one; `<c>-superuser` only with
 * enableSuperuserAccess and no spec.superuserSecret. */
bool rc_user_secret_generated(const struct api_cluster *c, enum api_secret which);

/* kubernetes.io/basic-auth Secret (`<c>-superuser` for API_SECRET_SUPERUSER,
 * `<c>-app` for API_SECRET_APP) with the keys of the contract: username,
 * user, password, dbname, host, port, pgpass, uri, jdbc-uri, fqdn-uri,
 * fqdn-jdbc-uri. password borrowed. */
OP_MUST_CHECK
int rc_build_basic_auth_secret(const struct api_cluster *c, const struct rc_settings *s,
			       enum api_secret which, const char *password, json_object **ret,
			       struct op_err *err);

/* Random password: n characters of [A-Za-z0-9] from gnutls_rnd (owned). */
OP_MUST_CHECK int rc_random_password(size_t n, char **ret, struct op_err *err);

/* ServiceAccount, Role and RoleBinding `<c>` for the instance pods. */
json_object *rc_build_service_account(const struct api_cluster *c);
json_object *rc_build_role(const struct api_cluster *c);
json_object *rc_build_role_binding(const struct api_cluster *c);

/* Adds the owner reference and cnpg.io/cluster label to a Secret built
 * elsewhere (pki_secret_build). obj borrowed, modified in place. */
void rc_adopt(const struct api_cluster *c, json_object *obj);

#endif
