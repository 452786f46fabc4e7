/* api/names.h - names of the Kubernetes and PostgreSQL objects derived from
 * a Cluster (CloudNativePG conventions, runtime.md §1.3 and §4.4).
 *
 * Every function returns an OWNED string (free with free()); never NULL
 * (OOM aborts). Inputs are borrowed.
 */
#ifndef PGOP_API_NAMES_H
#define PGOP_API_NAMES_H

#include <stdint.h>

#include "support/err.h"

enum api_service { API_SVC_RW, API_SVC_RO, API_SVC_R, API_SVC_ANY };
/* "<cluster>-rw", "-ro", "-r", "-any". */
char *api_service_name(const char *cluster, enum api_service svc);

enum api_secret {
	API_SECRET_CA,          /* "<cluster>-ca": server CA, also the client CA (ca.key: operator only) */
	API_SECRET_CA_CERT,     /* "<cluster>-ca-cert": ca.crt alone, what instances may read */
	API_SECRET_SERVER,      /* "<cluster>-server": server TLS leaf */
	API_SECRET_REPLICATION, /* "<cluster>-replication": streaming_replica client cert */
	API_SECRET_SUPERUSER,   /* "<cluster>-superuser": postgres credentials */
	API_SECRET_APP,         /* "<cluster>-app": application owner credentials */
};
char *api_secret_name(const char *cluster, enum api_secret which);

/* Pod "<cluster>-<serial>"; the PGDATA PVC has the same name. */
char *api_pod_name(const char *cluster, int64_t serial);
char *api_pgdata_pvc_name(const char *cluster, int64_t serial);
/* WAL PVC "<cluster>-<serial>-wal". */
char *api_wal_pvc_name(const char *cluster, int64_t serial);
/* A tablespace name as Kubernetes names take it (CloudNativePG's
 * convertPostgresIDToK8sName): a leading '_' becomes '1', '$' and '_' '-',
 * lower case. */
char *api_tablespace_k8s_name(const char *tablespace);
/* Tablespace PVC "<pod>-tbs-<k8s name>" and its volume in the Pod
 * "tbs-<k8s name>" (pkg/specs PvcNameForTablespace,
 * VolumeMountNameForTablespace). */
char *api_tablespace_pvc_name(const char *pod, const char *tablespace);
char *api_tablespace_volume_name(const char *tablespace);
/* "<root>/<name>": where the volume is mounted (MountForTablespace). */
char *api_tablespace_mount(const char *root, const char *tablespace);
/* Where an instance mounts a tablespace's volume and the location its
 * tablespace has there, as CloudNativePG (pkg/specs MountForTablespace,
 * LocationForTablespace): "/var/lib/postgresql/tablespaces/<name>" and
 * "<that>/data". A restore puts the backup's tablespace of that name there.
 * root: another directory than API_TABLESPACE_MOUNT_ROOT (NULL: that one). */
#define API_TABLESPACE_MOUNT_ROOT "/var/lib/postgresql/tablespaces"
char *api_tablespace_location(const char *root, const char *tablespace);

/* Physical replication slot of an instance: prefix (NULL or "" means
 * "_cnpg_") + the pod name lower-cased with every run of characters outside
 * [a-z0-9_] replaced by one '_' (CNPG GetSlotNameFromInstanceName):
 * "cluster-example-2" -> "_cnpg_cluster_example_2". */
char *api_slot_name(const char *prefix, const char *pod);

/* Serial of a pod of this cluster: "<cluster>-<N>" with N a positive decimal
 * without leading zeros. Returns 0 and *ret_serial, or -EINVAL when pod is
 * not an instance name of cluster. */
OP_MUST_CHECK int api_pod_serial(const char *cluster, const char *pod, int64_t *ret_serial,
				 struct op_err *err);

#endif
