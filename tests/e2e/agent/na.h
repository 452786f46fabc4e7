/* tests/e2e/agent/na.h - the e2e node agent (kubelet / kube-proxy / DNS stand-in).
 *
 * Internal to tests/e2e/agent/ (prefix na_). The agent runs each pod's
 * containers as local processes, each pod in its own network namespace
 * (pgop-e2e-<uid8>) attached to the bridge pgope2e0. See
 * docs/internals/node-agent.md.
 *
 * Ownership: every `char *` in a struct is owned by the struct unless the
 * comment says "borrowed". Functions returning int return 0 (or a count) on
 * success and -errno on failure, filling a caller-owned struct op_err.
 */
#ifndef PGOP_NA_H
#define PGOP_NA_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "support/buf.h"
#include "support/err.h"

#define NA_NODE_NAME_DEFAULT "pgop-e2e-node"
#define NA_BRIDGE "pgope2e0"
#define NA_BRIDGE_MAC "02:70:67:6f:70:01" /* fixed: see net.c */
#define NA_NETNS_PREFIX "pgop-e2e-"
#define NA_VETH_PREFIX "pe2e"
#define NA_NFT_TABLE "pgop_e2e"
#define NA_POD_NET "10.244.213"   /* /24; .1 is the bridge */
#define NA_POD_PREFIXLEN 24
#define NA_STORAGE_CLASS "pgop-e2e"
#define NA_PROVISIONER "pgop.io/e2e-hostpath"
#define NA_PG_BIN_FMT "/usr/lib/postgresql/%d/bin"
#define NA_MAX_ARGS 256     /* argv/env entries per container */
#define NA_MAX_MOUNTS 64

/* Per-instance network identity, chosen once at start (na_net_claim) and
 * read-only afterwards. The only agent on a host gets NA_POD_NET and table
 * NA_NFT_TABLE (the names cluster-down.sh knows); an agent of a concurrent e2e
 * environment shares the bridge but takes the next free 10.244.<n>.0/24 and
 * table pgop_e2e_<n>, and only ever touches its own. */
extern char na_pod_net[16];   /* "10.244.213" */
extern char na_nft_table[32]; /* "pgop_e2e" */

/* ---------------------------------------------------------------- util.c */

/* Runs argv (argv[0] searched in PATH) with `input` (may be NULL) on stdin,
 * stdout+stderr captured into out (may be NULL; capped by out->max). Returns
 * 0 when the command exits 0; -EIO otherwise with the command and its
 * output in err. */
int na_run(const char *const argv[], const char *input, struct op_buf *out, struct op_err *err);
int na_mkdir_p(const char *path, mode_t mode, struct op_err *err);
/* Writes data atomically (temp file + rename) with mode. */
int na_write_file(const char *path, const void *data, size_t len, mode_t mode,
		  struct op_err *err);
/* Reads a whole file into b (cleared first, capped by b->max). */
int na_read_file(const char *path, struct op_buf *b, struct op_err *err);
/* Removes a tree without crossing mount points or following symlinks.
 * Refuses paths not under `guard` (a directory prefix). */
int na_rm_rf(const char *path, const char *guard, struct op_err *err);
/* Monotonic milliseconds. */
int64_t na_now_ms(void);
/* RFC 3339 UTC timestamp of the wall clock into a 32-byte buffer. */
void na_rfc3339(char out[32]);

/* -------------------------------------------------------------- render.c */
/* Pure functions (unit-tested). */

enum na_image_kind { NA_IMAGE_OTHER, NA_IMAGE_PGOP, NA_IMAGE_POSTGRES };
/* Image -> executable policy: name containing "pgop" -> the pgop binary,
 * "postgres"/"postgresql" -> the host's /usr/lib/postgresql/<major>/bin (major
 * from the tag, na_image_pg_major) first on PATH. Only the repository path
 * decides the kind. */
enum na_image_kind na_image_kind(const char *image);

/* Restart back-off after `restarts` failures: 1 s doubling, capped at 60 s
 * (kubelet: 10 s..300 s; shortened so e2e tests stay fast). */
int64_t na_backoff_ms(int restarts);

/* Pod IP for index 2..254 of NA_POD_NET into out[16]. -ERANGE otherwise. */
int na_pod_ip(int index, char out[16]);
/* Network namespace and host veth names from a pod UID (first 8 hex digits
 * without dashes). out_netns[32], out_veth[16]. -EINVAL for a short uid. */
int na_pod_names(const char *uid, char out_netns[32], char out_veth[16]);

/* One Service port after resolution to ready endpoints. */
struct na_backend {
	char *ip;
	int port;
};
struct na_svc_rule {
	char *cluster_ip;
	char *proto;   /* "tcp" / "udp" */
	int port;
	struct na_backend *backends; /* owned array */
	size_t n_backends;
};
struct na_svc_rules {
	struct na_svc_rule *v;
	size_t n;
};
void na_svc_rules_free(struct na_svc_rules *r);
/* Adds the rules of one Service (borrowed JSON) resolved through its
 * EndpointSlices (borrowed JSON array of all slices; those labelled
 * kubernetes.io/service-name=<svc> in the Service's namespace are used).
 * Only ready endpoints (conditions.ready absent or true) with an IPv4
 * address. Services without a ClusterIP (headless, "None") add nothing.
 * Ports are matched by name between the Service and the slice. */
int na_svc_rules_add(struct na_svc_rules *r, json_object *svc, json_object *slices,
		     struct op_err *err);
/* Adds one rule by hand (the apiserver's default/kubernetes). */
void na_svc_rules_add_one(struct na_svc_rules *r, const char *cluster_ip, const char *proto,
			  int port, const char *backend_ip, int backend_port);

/* The whole nftables ruleset of table ip pgop_e2e as an `nft -f` script
 * that replaces any previous version atomically: DNAT (prerouting + output)
 * from ClusterIP:port to backends with numgen random load balancing,
 * masquerade of service traffic from the pod network, and the partition
 * set (drop in forward/input for those addresses). */
int na_nft_render(struct op_buf *b, const struct na_svc_rules *rules, const char *svc_cidr,
		  const char *const *partitioned, size_t n_partitioned, bool cut);
/* With cut, the same script also isolates this node's subnet: nothing routed
 * between it and the other nodes' pods, nothing from its pods to the host (the
 * API server), no Service traffic from the host to its pods, nothing to its
 * kubelet port; an empty chain `node_cut` marks it (lib.sh waits for it).
 * The node's own probes (host -> pod IP) still pass. */

/* One /etc/hosts for a pod: localhost lines, the pod's own hostname,
 * and for every Service with a ClusterIP (JSON array, borrowed):
 * <svc>.<ns>.svc.cluster.local <svc>.<ns>.svc <svc>.<ns> and, in the pod's
 * own namespace, <svc>. */
int na_hosts_render(struct op_buf *b, const char *pod_ns, const char *hostname,
		    const char *subdomain, const char *pod_ip, json_object *services);

/* Value of a downward-API fieldRef for env/volumes: metadata.name,
 * metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName,
 * status.podIP, status.hostIP, metadata.labels['x'], metadata.annotations['x'].
 * Borrowed result or NULL when unsupported/absent. */
const char *na_field_ref(json_object *pod, const char *field_path, const char *pod_ip,
			 const char *host_ip);

/* Expands $(VAR) references in s using env (NAME=value strings) like the
 * kubelet; $$ is a literal $; unknown references are kept as is. Result
 * appended to b. */
int na_expand_vars(struct op_buf *b, const char *s, char *const *env, size_t n_env);

/* ------------------------------------------------------------- podspec.c */
/* Pure (unit-tested): which pod-spec fields the agent honours. */

/* What this host can do (filled once at start by cgroup.c / start.c). */
struct na_host {
	bool memory_cgroup, cpu_cgroup; /* resources.limits.memory / .cpu enforceable */
	const char *no_cgroup_why;      /* borrowed: why not, for the refusal message */
	/* Is /usr/lib/postgresql/<major>/bin here? NULL = every major is. */
	bool (*pg_major_installed)(int major, void *userdata);
	void *userdata;
};

/* Why a pod is refused: reason for the container's waiting state
 * ("CreateContainerConfigError" for an unsupported field, "ErrImagePull" for a
 * PostgreSQL major not installed here) and a message naming the field/major. */
struct na_refusal {
	const char *reason; /* static */
	char *message;      /* owned */
	int container;      /* index of the container concerned, -1 = all */
	bool init;          /* container indexes spec.initContainers */
};

/* Looks up every field under pod.spec in the agent's table: a field not in it
 * or a value it cannot honour (privileged, capabilities.add, a memory limit
 * without a usable cgroup, ...) refuses the pod; so do runAsNonRoot with uid 0
 * and a PostgreSQL image whose major is not installed. 0 = accepted, else a
 * negative errno with *out filled (na_refusal_done frees it). */
int na_podspec_check(json_object *pod, const struct na_host *h, struct na_refusal *out);
void na_refusal_done(struct na_refusal *r);
/* PostgreSQL major of an image tag: ".../postgresql:16" 16, ":16.2" 16,
 * ":17beta1" 17, ":15.4-bookworm" 15; -1 when the tag names none. */
int na_image_pg_major(const char *image);
/* Kubernetes quantity ("128Mi", "1G", "500m", "1.5") times scale (1 for
 * bytes, 1000 for millicores) into *out. -EINVAL / -ERANGE. */
int na_quantity_parse(const char *s, int64_t scale, int64_t *out);

/* -------------------------------------------------------------- cgroup.c */

/* Detects where container cgroups can go (cgroup v2: a sibling of the agent's
 * cgroup under a parent that delegates memory/cpu; v1: children of the
 * agent's memory/cpu cgroups) and fills h. */
void na_cgroup_detect(struct na_host *h);
/* Creates the cgroup(s) of one container with the given limits (0 = none)
 * and returns their cgroup.procs paths (owned, NULL-terminated, up to 2) for
 * container-init to join. */
int na_cgroup_create(const char *name, int64_t mem_bytes, int64_t cpu_milli, char ***ret_procs,
		     struct op_err *err);
/* Removes the cgroup directories of ret_procs (waits up to 0.5 s for the
 * killed processes to leave) and frees the strings (not the array). */
void na_cgroup_remove(char **procs);

/* ---------------------------------------------------------------- net.c */

struct na_net {
	char *state_dir;     /* borrowed */
	char *apiserver_ip;  /* where 10.213.0.1:443 goes (owned) */
	int apiserver_port;
	char *kube_svc_ip;   /* first service IP (owned, "10.213.0.1") */
	bool up;
};
/* Creates the bridge if needed, picks this instance's subnet (under a host
 * lock: the first 10.244.<n>.1, n >= 213, not yet on the bridge) and adds its
 * gateway address; per-bridge forwarding and route_localnet. */
int na_net_claim(struct na_net *n, struct op_err *err);
/* Re-creates the bridge and/or this instance's address if they vanished.
 * Returns 1 when something was repaired, 0 when all was in place. */
int na_net_up(struct na_net *n, struct op_err *err);
/* Deletes this instance's nft tables and address; the bridge too when no
 * other instance has an address on it. */
void na_net_down(struct na_net *n);
/* Creates netns + veth for the pod with address ip. Idempotent. */
int na_net_pod_add(const char *netns, const char *veth, const char *ip, struct op_err *err);
void na_net_pod_del(const char *netns, const char *veth);
/* Applies a rendered nft script. */
int na_net_apply_nft(const char *script, struct op_err *err);

/* -------------------------------------------------------------- launch.c */

/* `pgop-node-agent container-init SPEC.json`: runs in a fresh process,
 * enters the pod's netns, builds a private mount namespace whose root is a
 * tmpfs populated with bind mounts of the host's top-level directories
 * (/tmp and /dev/shm fresh tmpfs), mounts volumes at their mountPath
 * (directories missing on the host are created only inside the private
 * tree: a host directory on the way is "mirrored" by a tmpfs holding bind
 * mounts of its entries), pivots into it, drops to runAsUser/Group and
 * execs the container. Never returns on success. */
int na_container_init_main(int argc, char **argv);

/* `pgop-node-agent exec NS/POD [-c CONTAINER] -- CMD...`: runs CMD inside
 * the container's network and mount namespaces (like kubectl exec). */
int na_exec_main(int argc, char **argv, const char *state_dir);

/* ---------------------------------------------------------------- agent */

struct kube_client;
struct kube_informer;

enum na_cstate { NA_WAITING, NA_RUNNING, NA_TERMINATED };
enum na_probe_kind { NA_PROBE_STARTUP, NA_PROBE_READINESS, NA_PROBE_LIVENESS, NA_PROBE__N };

struct na_ctr {
	char *name;
	bool init;
	pid_t pid;            /* 0 when not running */
	enum na_cstate state;
	int restarts;
	int exit_code;
	int signal;
	char *reason;         /* waiting/terminated reason, or NULL */
	char started_at[32], finished_at[32];
	int64_t started_ms, next_start_ms, kill_at_ms;
	bool ever_started, ready, started;
	char *msg;            /* waiting message (a refusal), or NULL */
	char **cgroups;       /* cgroup.procs files of the running container (owned) */
	int64_t next_probe_ms[NA_PROBE__N];
	int probe_ok[NA_PROBE__N], probe_fail[NA_PROBE__N];
	bool probe_passed[NA_PROBE__N];
};

struct na_pod {
	struct na_pod *next;
	char *uid, *ns, *name;
	json_object *obj;     /* owned deep copy of the latest Pod */
	char *handed_rv;      /* owned, main thread only: resourceVersion last handed to the worker */
	char ip[16];
	int ip_index;
	char netns[32], veth[16];
	char *dir;            /* STATE/pods/<uid> */
	bool net_ready, vols_ready;
	char *waiting_reason; /* while volumes/network are not ready */
	char *waiting_msg;
	struct na_ctr *init, *ctrs;
	size_t n_init, n_ctrs, init_done;
	bool init_failed;
	bool terminating, deleted;
	int64_t kill_deadline_ms;
	char start_time[32];
	char *last_status;    /* last status JSON sent */
	int64_t status_sent_ms; /* when it was sent */
	int64_t seen_ms, running_ms, next_refresh_ms;
	char *hosts;          /* last hosts file written */
	bool cond[4];         /* Initialized, ContainersReady, Ready, PodScheduled */
	char cond_time[4][32];
	bool cond_set;
	bool scaled;          /* run in scale mode: no network, volumes or processes */
	bool seen;            /* main thread only */
	/* worker thread: owns everything above except uid/ns/name (immutable),
	 * next and seen (main thread) */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;   /* guards next_obj, wake */
	pthread_cond_t wake_cond; /* signalled with a new next_obj or stop */
	bool wake;
	json_object *next_obj; /* newer Pod handed over by the main thread (owned) */
	unsigned svc_gen;     /* services generation of the last hosts file */
	atomic_bool stop;     /* main -> worker: the pod is gone (or shutdown) */
	atomic_bool shutdown; /* stop because the agent stops (keep processes for stop_all) */
	int net_epoch;
	int64_t next_hosts_ms;
	bool stale_checked;
	bool spec_checked, refused; /* na_podspec_check ran / refused the pod */
};

/* Node status + Lease renewal period (the kubelet renews its Lease every 10 s;
 * shorter so that cluster-up.sh's --node-monitor-grace-period can be 20 s). */
#define NA_HEARTBEAT_MS 5000

/* The node's pod capacity under --scale-mode (otherwise the kubelet's 110). */
#define NA_SCALE_MAX_PODS "5000"

struct na_agent {
	struct kube_client *kc;
	char *scale_ns;       /* --scale-mode NS-GLOB: pods of namespaces matching it
			       * (fnmatch) run without containers (pods.c); NULL = none */
	struct kube_informer *pods, *svcs, *slices, *pvcs, *pvs;
	char *state_dir, *node_name, *pgop_binary, *self_exe, *svc_cidr, *kubeconfig;
	/* --shared-dir: run/, logs/ and partition/, shared by the node agents of one
	 * environment (names are ns_pod[_container], unique cluster-wide), so
	 * `exec`, `partition` and the tests find any pod's files in one place;
	 * = state_dir for a single agent. pods/, volumes/, subnet stay per node. */
	char *shared_dir;
	char *host_ip;        /* bridge address, the node's InternalIP */
	char *pod_cidr;       /* Node.spec.podCIDR: this node's 10.244.<n>.0/24 */
	/* the node's network is cut (shared_dir/partition/node.<name>): the main
	 * loop and the pod workers make no API calls, nftables isolate its subnet */
	atomic_bool cut;
	struct na_net net;
	struct na_pod *pod_list;
	bool ip_used[256];    /* guarded by mu */
	pthread_mutex_t mu;
	atomic_int net_epoch; /* bumped when the bridge was recreated */
	char *last_nft;
	json_object *services; /* owned: last services list */
	int64_t next_node_ms, next_svc_ms, next_pv_ms;
	/* bumped by the informers' handlers (their threads): the main loop and the
	 * pod workers only work when something changed (idle CPU, issue 11) */
	atomic_uint gen_pods, gen_svcs, gen_pvs;
	bool node_registered;
	struct na_host host;  /* read-only after start */
};

/* pods.c / start.c */
json_object *na_ctr_spec(struct na_pod *p, struct na_ctr *c);
void na_set_reason(char **dst, const char *r);
/* Starts container c of pod p (spec, env, mounts, fork + container-init). */
int na_ctr_start(struct na_agent *a, struct na_pod *p, struct na_ctr *c, struct op_err *err);
/* status.c: patches the Pod status when it changed since the last call. */
void na_pod_status(struct na_agent *a, struct na_pod *p);
/* pods.c */
void na_pods_sync(struct na_agent *a);
void na_pods_stop_all(struct na_agent *a);
/* volumes.c: (re)writes the pod's volumes under its directory. */
int na_volumes_setup(struct na_agent *a, struct na_pod *p, struct op_err *err);
/* Unmounts the pod's memory-backed emptyDirs (before its directories go). */
void na_volumes_release(struct na_agent *a, struct na_pod *p);
/* Host directory for volume `name` (owned string) or NULL when unknown. */
char *na_volume_dir(struct na_agent *a, struct na_pod *p, const char *name);
/* probes.c: runs due probes of a running container, updates ready/started.
 * Returns true when liveness failed (the container must be restarted). */
bool na_probes_run(struct na_agent *a, struct na_pod *p, struct na_ctr *c, json_object *spec);
/* node.c */
int na_node_heartbeat(struct na_agent *a, struct op_err *err);
int na_storage_setup(struct na_agent *a, struct op_err *err);
void na_provision(struct na_agent *a);
/* services.c: nftables + hosts files from the Service/EndpointSlice caches. */
void na_services_sync(struct na_agent *a);
/* Writes the pod's hosts file now (before its first container starts). */
void na_pod_hosts_write(struct na_agent *a, struct na_pod *p);
/* kubelet.c: GET /containerLogs/<ns>/<pod>/<container>[?tailLines=N] on
 * ip:port over HTTPS (self-signed), for `kubectl logs`: logs read from
 * state_dir/logs (the shared dir), certificate state_dir/kubelet-<ip>.crt. */
struct na_kubelet;
struct na_kubelet *na_kubelet_start(const char *state_dir, const char *ip, int port,
				    struct op_err *err);
void na_kubelet_stop(struct na_kubelet *k);
/* ----------------------------------------------------------- portforward.c */
/* `kubectl port-forward`: SPDY/3.1 protocol portforward.k8s.io, a pair of
 * streams (error, data) per forwarded connection. */
#define NA_PF_MAX_REQ 32
struct na_exec_req; /* exec_stream.c, below */
struct na_pf_key {
	bool data;      /* data stream (else error stream) */
	uint16_t port;
	char id[32];    /* requestID, or derived from the stream id (old clients) */
};
/* From a stream's headers (borrowed, may be NULL). -EINVAL: unknown
 * streamType, port not 1..65535, requestID too long. Pure. */
int na_pf_stream_key(const char *stream_type, const char *port, const char *request_id,
		     uint32_t stream_id, struct na_pf_key *ret);
/* "portforward.k8s.io" (static) when offered, else NULL. Pure. */
const char *na_pf_pick_protocol(const char *const *offered, size_t n);
/* Serves one upgraded port-forward connection for req (ns/pod) as
 * na_exec_serve does: connections to 127.0.0.1:<port> in the pod's network
 * namespace; extra: bytes read past the request (the first frames). Blocks;
 * fd, req, extra, state_dir, stop borrowed. */
void na_pf_serve(int fd, const struct na_exec_req *req, const char *extra, size_t n_extra,
		 const char *state_dir, const atomic_bool *stop);

/* A namespace/pod/container name in a kubelet URL path: [A-Za-z0-9._-],
 * 1..253 bytes, not "." or "..". Pure. */
bool na_safe_component(const char *s, size_t n);
/* Log file for a kubelet URL path into ret_path: -ENOENT other paths,
 * -EINVAL unsafe components. Pure (tested). */
int na_log_path(const char *state_dir, const char *url, struct op_buf *ret_path);
/* The last n lines of b (n < 0: all). Borrowed pointer into b. */
const char *na_tail_lines(const struct op_buf *b, long n);

/* ---------------------------------------------------------------- spdy.c */
/* SPDY/3.1 framing as moby/spdystream speaks it (the kube-apiserver's side of
 * `kubectl exec`, see exec_stream.c). Pure except the zlib contexts. */

#define NA_SPDY_MAX_PAYLOAD (1u << 20) /* a frame's payload we accept */
#define NA_SPDY_MAX_HEADERS (16u * 1024) /* one decompressed header block */
#define NA_SPDY_MAX_PAIRS 64           /* name/value pairs in one block */
#define NA_SPDY_FLAG_FIN 0x01
enum na_spdy_type {
	NA_SPDY_DATA = 0, /* not a control type: a data frame */
	NA_SPDY_SYN_STREAM = 1,
	NA_SPDY_SYN_REPLY = 2,
	NA_SPDY_RST_STREAM = 3,
	NA_SPDY_SETTINGS = 4,
	NA_SPDY_PING = 6,
	NA_SPDY_GOAWAY = 7,
	NA_SPDY_HEADERS = 8,
	NA_SPDY_WINDOW_UPDATE = 9,
};

struct na_spdy_frame {
	uint16_t type;      /* enum na_spdy_type; other control types are kept as is */
	uint8_t flags;
	uint32_t stream_id; /* data, SYN_*, RST_STREAM, HEADERS, WINDOW_UPDATE; PING id;
			     * GOAWAY last good stream */
	uint32_t value;     /* RST_STREAM / GOAWAY status, WINDOW_UPDATE delta */
	const uint8_t *data; /* borrowed: data payload, or the compressed header block */
	size_t len;
};

/* Parses the frame at the start of buf[0..n). Returns the bytes it takes
 * (> 0), 0 when buf holds only part of it, -EMSGSIZE when its payload is over
 * max_payload, -EPROTO when malformed (control version not 3, a fixed-size
 * control payload too short, stream id 0 where one is needed). Pure. */
ssize_t na_spdy_parse(const uint8_t *buf, size_t n, size_t max_payload,
		      struct na_spdy_frame *ret);

struct na_spdy_hdrs {
	size_t n;
	char *name[NA_SPDY_MAX_PAIRS];  /* owned, lower case as sent */
	char *value[NA_SPDY_MAX_PAIRS]; /* owned; several values stay NUL-joined */
	size_t value_len[NA_SPDY_MAX_PAIRS];
};
/* Parses a decompressed name/value block (counts and lengths capped by the
 * block's size and NA_SPDY_MAX_PAIRS). -EPROTO when malformed. Pure. */
int na_spdy_hdrs_parse(const uint8_t *raw, size_t n, struct na_spdy_hdrs *ret);
/* First value of header name (borrowed) or NULL. */
const char *na_spdy_hdr_get(const struct na_spdy_hdrs *h, const char *name);
void na_spdy_hdrs_done(struct na_spdy_hdrs *h);

/* The connection's two zlib streams (one per direction, with SPDY's
 * dictionary). Embedded by its owner; na_spdy_z_done frees them. */
struct na_spdy_z {
	void *in, *out; /* owned z_stream */
};
int na_spdy_z_init(struct na_spdy_z *z);
void na_spdy_z_done(struct na_spdy_z *z);
/* Decompresses one header block (the zlib stream continues across blocks)
 * and parses it into ret. -EMSGSIZE over NA_SPDY_MAX_HEADERS, -EPROTO. */
int na_spdy_headers_decode(struct na_spdy_z *z, const uint8_t *blk, size_t n,
			   struct na_spdy_hdrs *ret);

/* Frame writers: append one frame to b. Header frames (SYN_STREAM,
 * SYN_REPLY) compress names[i]/values[i] (n pairs, borrowed) with z. */
int na_spdy_put_headers(struct op_buf *b, struct na_spdy_z *z, enum na_spdy_type type,
			uint32_t stream_id, uint8_t flags, const char *const *names,
			const char *const *values, size_t n);
int na_spdy_put_data(struct op_buf *b, uint32_t stream_id, uint8_t flags, const void *data,
		     size_t len);
/* PING (a = id), RST_STREAM (a = stream, b = status), GOAWAY (a = last good
 * stream, b = status), WINDOW_UPDATE (a = stream, b = delta). */
int na_spdy_put_ctrl(struct op_buf *b, enum na_spdy_type type, uint32_t a, uint32_t v);

/* ---------------------------------------------------------- exec_stream.c */
/* `kubectl exec` / `kubectl attach` on the kubelet API: the apiserver
 * upgrades POST /exec/<ns>/<pod>/<container>?command=..&input=1&output=1&error=1
 * to SPDY/3.1 and opens one stream per streamType (remotecommand v4). */

enum na_exec_kind { NA_EXEC_ERROR, NA_EXEC_STDIN, NA_EXEC_STDOUT, NA_EXEC_STDERR,
		    NA_EXEC_RESIZE, NA_EXEC__N };
#define NA_EXEC_MAX_ARGS 256
struct na_exec_req {
	char ns[254], pod[254], ctr[254];
	bool attach; /* /attach (refused: containers have no attachable stdio) */
	bool portforward; /* /portForward/<ns>/<pod>: ctr is "" */
	bool want[NA_EXEC__N]; /* streams the request asks for (error always) */
	bool tty;
	size_t argc;
	char *argv[NA_EXEC_MAX_ARGS + 1]; /* owned, NULL-terminated */
};
/* Parses the URL path into req (ns/pod/container checked like log paths):
 * /exec/NS/POD/C, /attach/NS/POD/C, /portForward/NS/POD. -ENOENT: none of
 * those; -EINVAL: a bad component. Pure. */
int na_exec_parse_path(const char *url, struct na_exec_req *req);
/* Adds one query argument (command=, input=, output=, error=, tty=);
 * -E2BIG past NA_EXEC_MAX_ARGS or 64 KiB of command. Pure. */
int na_exec_add_arg(struct na_exec_req *req, const char *key, const char *value);
void na_exec_req_done(struct na_exec_req *req);
/* streamType header value -> kind; -1 when unknown. Pure. */
int na_exec_kind(const char *stream_type);
/* The v4 error stream's JSON Status for a process result: exit_code 0 is
 * Success, > 0 a NonZeroExitCode Failure with the ExitCode cause; msg (may be
 * NULL) makes an InternalError Failure instead. Pure. */
int na_exec_status_json(struct op_buf *b, int exit_code, const char *msg);
#define NA_EXEC_MAX_RESIZE_MSG 4096
/* One resize message (a line of the resize stream, not NUL-terminated):
 * {"Width":W,"Height":H}, both 1..65535. -EINVAL otherwise. Pure. */
int na_exec_parse_resize(const char *line, size_t n, uint16_t *ret_w, uint16_t *ret_h);
/* Picks the remotecommand protocol from X-Stream-Protocol-Version values:
 * v4.channel.k8s.io (static) or NULL when not offered. Pure. */
const char *na_exec_pick_protocol(const char *const *offered, size_t n);
/* Serves one upgraded connection (plain socket fd) for req until the command
 * ends, the peer leaves, a timeout or *stop; kills the command when it ends
 * early. Blocks: run it in its own thread. fd, req, extra (bytes already
 * read after the request, n_extra), state_dir and stop are borrowed; the
 * caller closes fd. */
void na_exec_serve(int fd, const struct na_exec_req *req, const char *extra, size_t n_extra,
		   const char *state_dir, const atomic_bool *stop);

/* Partition state: SHARED/partition/<ip> files (pods; `node.<name>` files,
 * node cuts, are listed too and ignored by the IPv4 set). */
int na_partition_list(const char *state_dir, char ***ret_ips, size_t *ret_n);

#endif
