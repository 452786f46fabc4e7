/* tests/e2e/agent/main.c - `pgop-node-agent`: flags, subcommands, main loop.
 *
 *   pgop-node-agent --kubeconfig K --state-dir D --pgop-binary P [--node-name N]
 *                   [--shared-dir SHARED]
 *       one node; the agents of a multi-node environment share SHARED (run/, logs/,
 *       partition/: the `--state-dir` of the subcommands below)
 *   pgop-node-agent [--state-dir D] exec NS/POD [-c CONTAINER] -- CMD...
 *   pgop-node-agent [--state-dir D] partition NS/POD on|off
 *       a node partition: NS/POD reaches neither the API server nor other Pods, they do
 *       not reach it; the node (probes, host clients) still does (render.c)
 *   pgop-node-agent container-init SPEC.json        (internal)
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

struct opts {
	const char *kubeconfig, *state_dir, *pgop_binary, *node_name, *log_level;
	const char *scale_ns, *shared_dir;
};

static int partition_main(int argc, char **argv, const char *state_dir)
{
	if (argc != 3 || !strchr(argv[1], '/') || (strcmp(argv[2], "on") && strcmp(argv[2], "off"))) {
		fprintf(stderr, "usage: pgop-node-agent partition NS/POD on|off\n");
		return 2;
	}
	_cleanup_free_ char *ns = op_strndup(argv[1], (size_t)(strchr(argv[1], '/') - argv[1]));
	_cleanup_free_ char *ipf =
		op_asprintf("%s/run/%s_%s.ip", state_dir, ns, strchr(argv[1], '/') + 1);
	struct op_buf b = OP_BUF_INIT(64);
	struct op_err err = OP_ERR_INIT;
	if (na_read_file(ipf, &b, &err) < 0) {
		fprintf(stderr, "partition: pod not on this node: %s\n", err.msg);
		return 1;
	}
	_cleanup_free_ char *ip = op_buf_take(&b, NULL);
	_cleanup_free_ char *dir = op_asprintf("%s/partition", state_dir);
	_cleanup_free_ char *mark = op_asprintf("%s/%s", dir, ip);
	bool on = !strcmp(argv[2], "on");
	if (on) {
		if (na_mkdir_p(dir, 0755, &err) < 0 || na_write_file(mark, "", 0, 0644, &err) < 0) {
			fprintf(stderr, "partition: %s\n", err.msg);
			return 1;
		}
	} else {
		unlink(mark);
	}
	/* apply now; the agent's next render keeps it */
	static const char *const fams[] = { "ip", "bridge" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fams); i++) {
		_cleanup_free_ char *elem = op_asprintf("{ %s }", ip);
		/* the pod's subnet names the table of the agent that runs it */
		char net[16];
		snprintf(net, sizeof(net), "%s", ip);
		char *dot = strrchr(net, '.');
		if (dot)
			*dot = '\0';
		_cleanup_free_ char *table = !strcmp(net, NA_POD_NET)
						     ? op_strdup(NA_NFT_TABLE)
						     : op_asprintf("%s_%s", NA_NFT_TABLE,
								   strrchr(net, '.') + 1);
		const char *cmd[] = { "nft", on ? "add" : "delete", "element", fams[i], table,
				      "partitioned", elem, NULL };
		na_run(cmd, NULL, NULL, NULL);
	}
	printf("%s %s (%s)\n", argv[1], on ? "partitioned" : "reconnected", ip);
	return 0;
}

static void parse_server(struct na_agent *a, const char *server)
{
	/* https://HOST:PORT */
	const char *h = strstr(server, "://");
	h = h ? h + 3 : server;
	const char *colon = strrchr(h, ':');
	_cleanup_free_ char *host = colon ? op_strndup(h, (size_t)(colon - h)) : op_strdup(h);
	long port = 443;
	if (colon) {
		char *end;
		errno = 0;
		port = strtol(colon + 1, &end, 10);
		if (errno || port <= 0 || port > 65535)
			port = 443;
	}
	a->net.apiserver_ip = op_strdup(!strcmp(host, "localhost") ? "127.0.0.1" : host);
	a->net.apiserver_port = (int)port;
}

static char *first_service_ip(const char *cidr)
{
	unsigned o[4];
	if (sscanf(cidr, "%3u.%3u.%3u.%3u", &o[0], &o[1], &o[2], &o[3]) != 4 || o[3] > 253)
		return op_strdup("10.213.0.1");
	return op_asprintf("%u.%u.%u.%u", o[0], o[1], o[2], o[3] + 1);
}

/* Informer handlers: count changes (the main loop acts on a changed count). */
static void bump(void *gen) { atomic_fetch_add((atomic_uint *)gen, 1); }
static void on_add(void *gen, json_object *o) { (void)o; bump(gen); }
static void on_update(void *gen, json_object *o, json_object *n) { (void)o; (void)n; bump(gen); }

/* What the Service and EndpointSlice caches keep: the fields render.c and
 * start.c read. Whole objects (managedFields and all) made every sync parse
 * ~6,000 of them at 1,000 Clusters (bench/scale.sh). */
/* Pods: every field (podspec.c checks each one pgop sets), without
 * metadata.managedFields, which at ~2 KB a Pod doubled what each sync parses */
static const char *const keep_pods[] = { "*", NULL };
static const char *const keep_svcs[] = { "metadata.name", "metadata.namespace",
					 "spec.clusterIP", "spec.ports", NULL };
static const char *const keep_slices[] = { "metadata.name", "metadata.namespace",
					   "metadata.labels", "addressType", "ports",
					   "endpoints", NULL };

static int start_informer(struct na_agent *a, const struct kube_kind *k, const char *fs,
			  const char *const *keep, atomic_uint *gen, struct kube_informer **ret,
			  struct op_err *err)
{
	struct kube_informer_opts o = { .field_selector = fs, .watch_timeout_seconds = 120,
					.keep = keep };
	struct kube_informer_handlers h = { .on_add = on_add, .on_update = on_update,
					    .on_delete = on_add, .userdata = gen };
	int rc = kube_informer_new(a->kc, k, &o, &h, ret, err);
	if (rc == 0)
		rc = kube_informer_start(*ret, err);
	return rc;
}

static void *stop_informer(void *inf)
{
	kube_informer_stop(inf);
	return NULL;
}

/* Another e2e environment's teardown on this host may delete the bridge (the
 * names are global): recreate it, re-attach every pod, re-apply nftables. */
static bool heal_network(struct na_agent *a)
{
	struct op_err err = OP_ERR_INIT;
	int rc = na_net_up(&a->net, &err);
	if (rc < 0) {
		op_log_warn("bridge", "error", err.msg);
		return false;
	}
	if (rc == 0)
		return false;
	op_log_warn("bridge " NA_BRIDGE " or its address vanished: recreated");
	free(a->last_nft);
	a->last_nft = NULL;
	atomic_fetch_add(&a->net_epoch, 1); /* every pod worker re-attaches its pod */
	return true;
}

/* The node's network cut (SHARED/partition/node.<name>, lib.sh e2e_node_cut):
 * no API calls from the main loop or the pod workers while it lasts (the
 * nftables side is in na_nft_render). */
static void cut_check(struct na_agent *a, const char *mark)
{
	bool cut = access(mark, F_OK) == 0;
	if (atomic_exchange(&a->cut, cut) != cut)
		op_log_warn(cut ? "node network cut: no API calls, subnet isolated"
				: "node network restored");
}

/* An image's PostgreSQL major is "installed" when its bindir exists here. */
static bool pg_major_installed(int major, void *userdata)
{
	(void)userdata;
	char dir[64];
	snprintf(dir, sizeof(dir), NA_PG_BIN_FMT "/postgres", major);
	return access(dir, X_OK) == 0;
}

static int run(struct opts *o)
{
	struct na_agent a = { 0 };
	struct na_kubelet *kubelet = NULL;
	_cleanup_free_ char *fs = NULL, *cut_mark = NULL;
	pthread_mutex_init(&a.mu, NULL);
	struct op_err err = OP_ERR_INIT;
	int rc = 1;
	char exe[PATH_MAX];
	if (!o->kubeconfig || !o->state_dir || !o->pgop_binary) {
		fprintf(stderr, "usage: pgop-node-agent --kubeconfig K --state-dir D --pgop-binary P "
				"[--node-name N]\n");
		return 2;
	}
	if (!realpath("/proc/self/exe", exe)) {
		fprintf(stderr, "cannot resolve /proc/self/exe\n");
		return 1;
	}
	a.self_exe = op_strdup(exe);
	if (na_mkdir_p(o->state_dir, 0755, &err) < 0 || !realpath(o->state_dir, exe)) {
		fprintf(stderr, "state dir: %s\n", err.msg);
		return 1;
	}
	a.state_dir = op_strdup(exe);
	a.net.state_dir = a.state_dir;
	if (o->shared_dir && (na_mkdir_p(o->shared_dir, 0755, &err) < 0 ||
			      !realpath(o->shared_dir, exe))) {
		fprintf(stderr, "shared dir: %s\n", err.msg);
		return 1;
	}
	a.shared_dir = op_strdup(exe); /* the state dir when there is no --shared-dir */
	char pgop[PATH_MAX];
	a.pgop_binary = op_strdup(realpath(o->pgop_binary, pgop) ? pgop : o->pgop_binary);
	a.node_name = op_strdup(o->node_name ? o->node_name : NA_NODE_NAME_DEFAULT);
	if (o->scale_ns && *o->scale_ns) {
		a.scale_ns = op_strdup(o->scale_ns);
		op_log_info("scale mode: pods of these namespaces run no containers",
			    "namespaces", a.scale_ns);
	}
	const char *cidr = getenv("PGOP_E2E_SERVICE_CIDR");
	a.svc_cidr = op_strdup(cidr && *cidr ? cidr : "10.213.0.0/16");
	a.net.kube_svc_ip = first_service_ip(a.svc_cidr);
	na_cgroup_detect(&a.host);
	a.host.pg_major_installed = pg_major_installed;
	op_log_info("resource limits", "memory", a.host.memory_cgroup ? "cgroup" : "refused",
		    "cpu", a.host.cpu_cgroup ? "cgroup" : "refused", "why", a.host.no_cgroup_why);

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_ALL);

	struct kube_config *cfg = NULL;
	if (kube_config_load(o->kubeconfig, &cfg, &err) < 0) {
		op_log_error("kubeconfig", "error", err.msg);
		goto out;
	}
	parse_server(&a, cfg->server);
	struct kube_client_opts co = { .qps = 200, .burst = 400, .user_agent = "pgop-node-agent" };
	if (kube_client_new(cfg, &co, &a.kc, &err) < 0) {
		op_log_error("client", "error", err.msg);
		goto out;
	}
	static const struct {
		const char *name;
		bool shared;
	} dirs[] = { { "pods", false }, { "volumes", false }, { "logs", true }, { "run", true },
		     { "partition", true } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(dirs); i++) {
		_cleanup_free_ char *d = op_asprintf(
			"%s/%s", dirs[i].shared ? a.shared_dir : a.state_dir, dirs[i].name);
		if (na_mkdir_p(d, 0755, &err) < 0) {
			op_log_error("state dir", "error", err.msg);
			goto out;
		}
	}
	if (na_net_claim(&a.net, &err) < 0) {
		op_log_error("bridge", "error", err.msg);
		goto out;
	}
	a.host_ip = op_asprintf("%s.1", na_pod_net);
	a.pod_cidr = op_asprintf("%s.0/%d", na_pod_net, NA_POD_PREFIXLEN);
	op_log_info("pod network", "subnet", a.pod_cidr, "table", na_nft_table);
	kubelet = na_kubelet_start(a.shared_dir, a.host_ip, 10250, &err);
	if (!kubelet) {
		op_log_warn("kubelet API (kubectl logs) unavailable", "error", err.msg);
		op_err_clear(&err);
	}
	fs = op_asprintf("spec.nodeName=%s", a.node_name);
	if (start_informer(&a, KUBE_PODS, fs, keep_pods, &a.gen_pods, &a.pods, &err) < 0 ||
	    start_informer(&a, KUBE_SERVICES, NULL, keep_svcs, &a.gen_svcs, &a.svcs, &err) < 0 ||
	    start_informer(&a, KUBE_ENDPOINTSLICES, NULL, keep_slices, &a.gen_svcs, &a.slices,
			   &err) < 0 ||
	    start_informer(&a, KUBE_PVCS, NULL, NULL, &a.gen_pvs, &a.pvcs, &err) < 0 ||
	    start_informer(&a, KUBE_PVS, NULL, NULL, &a.gen_pvs, &a.pvs, &err) < 0) {
		op_log_error("informers", "error", err.msg);
		goto out;
	}
	struct kube_informer *infs[] = { a.pods, a.svcs, a.slices, a.pvcs, a.pvs };
	for (size_t i = 0; i < OP_ARRAY_SIZE(infs); i++)
		if (kube_informer_wait_synced(infs[i], 30000) < 0)
			op_log_warn("informer not synced within 30 s: going on");
	if (na_storage_setup(&a, &err) < 0) {
		op_log_warn("storage class", "error", err.msg);
		op_err_clear(&err);
	}
	op_log_info("node agent running", "node", a.node_name, "state", a.state_dir, "pgop",
		    a.pgop_binary, "apiserver", cfg->server);
	/* Work only when an informer saw a change (or the partition marks did),
	 * with a full pass every 10 s as a safety net: an idle agent sleeps. */
	int64_t next_hb = 0, next_svc = 0, next_pv = 0, next_net = 0, next_pods = 0;
	unsigned seen_pods = 0, seen_svcs = 0, seen_pvs = 0;
	struct timespec part_mtime = { 0 };
	char part_dir[PATH_MAX];
	snprintf(part_dir, sizeof(part_dir), "%s/partition", a.shared_dir);
	cut_mark = op_asprintf("%s/node.%s", part_dir, a.node_name);
	for (;;) {
		int64_t now = na_now_ms();
		struct stat pst;
		bool parts_changed = stat(part_dir, &pst) == 0 &&
				     (pst.st_mtim.tv_sec != part_mtime.tv_sec ||
				      pst.st_mtim.tv_nsec != part_mtime.tv_nsec);
		if (parts_changed)
			cut_check(&a, cut_mark);
		bool cut = atomic_load(&a.cut);
		if (now >= next_hb && !cut) {
			if (na_node_heartbeat(&a, &err) < 0) {
				op_log_warn("node heartbeat", "error", err.msg);
				op_err_clear(&err);
				next_hb = now + 2000;
			} else {
				next_hb = now + NA_HEARTBEAT_MS;
			}
		}
		if (now >= next_net) {
			if (heal_network(&a))
				next_svc = 0; /* nftables again */
			next_net = now + 1000;
		}
		int64_t t1 = na_now_ms();
		unsigned g = atomic_load(&a.gen_pods);
		if ((g != seen_pods || now >= next_pods) && !cut) {
			seen_pods = g;
			na_pods_sync(&a);
			next_pods = now + 10000;
		}
		int64_t t2 = na_now_ms();
		g = atomic_load(&a.gen_svcs);
		if (g != seen_svcs || parts_changed || now >= next_svc) {
			seen_svcs = g;
			if (parts_changed)
				part_mtime = pst.st_mtim;
			na_services_sync(&a);
			next_svc = now + 10000;
		}
		int64_t t3 = na_now_ms();
		g = atomic_load(&a.gen_pvs);
		if ((g != seen_pvs || now >= next_pv) && !cut) {
			seen_pvs = g;
			na_provision(&a);
			next_pv = now + 10000;
		}
		int64_t t4 = na_now_ms();
		if (t4 - now > 300) {
			char b[96];
			snprintf(b, sizeof(b), "node %lld pods %lld services %lld volumes %lld",
				 (long long)(t1 - now), (long long)(t2 - t1), (long long)(t3 - t2),
				 (long long)(t4 - t3));
			op_log_info("slow loop", "ms", b);
		}
		struct timespec ts = { 0, 100 * 1000000L };
		int sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
			op_log_info("stopping: killing pods and removing the network");
			break;
		}
	}
	rc = 0;
out:;
	/* pod workers first: they read the informers */
	na_kubelet_stop(kubelet);
	kubelet = NULL;
	na_pods_stop_all(&a);
	/* stop the informers in parallel: each stop takes up to ~1 s */
	struct kube_informer *all[] = { a.pods, a.svcs, a.slices, a.pvcs, a.pvs };
	pthread_t th[OP_ARRAY_SIZE(all)];
	bool started[OP_ARRAY_SIZE(all)] = { false };
	for (size_t k = 0; k < OP_ARRAY_SIZE(all); k++)
		if (all[k])
			started[k] = pthread_create(&th[k], NULL, stop_informer, all[k]) == 0;
	for (size_t k = 0; k < OP_ARRAY_SIZE(all); k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		kube_informer_free(all[k]);
	}
	if (a.net.up)
		na_net_down(&a.net);
	kube_client_free(a.kc);
	json_object_put(a.services);
	free(a.last_nft);
	free(a.state_dir);
	free(a.shared_dir);
	free(a.pod_cidr);
	free(a.self_exe);
	free(a.pgop_binary);
	free(a.node_name);
	free(a.scale_ns);
	free(a.svc_cidr);
	free(a.host_ip);
	free(a.net.apiserver_ip);
	free(a.net.kube_svc_ip);
	op_log_info("stopped");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "container-init"))
		return na_container_init_main(argc - 1, argv + 1);
	op_log_set_component("node-agent");
	static const struct option longs[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "pgop-binary", required_argument, NULL, 'p' },
		{ "node-name", required_argument, NULL, 'n' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "scale-mode", required_argument, NULL, 'S' },
		{ "shared-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { 0 };
	int c;
	/* "+": stop at the first non-option (the subcommand) */
	while ((c = getopt_long(argc, argv, "+h", longs, NULL)) != -1) {
		switch (c) {
		case 'k': o.kubeconfig = optarg; break;
		case 's': o.state_dir = optarg; break;
		case 'p': o.pgop_binary = optarg; break;
		case 'n': o.node_name = optarg; break;
		case 'l': o.log_level = optarg; break;
		case 'S': o.scale_ns = optarg; break;
		case 'D': o.shared_dir = optarg; break;
		case 'h':
			printf("pgop-node-agent --kubeconfig K --state-dir D --pgop-binary P "
			       "[--node-name N] [--shared-dir D] [--log-level L] "
			       "[--scale-mode NS-GLOB]\n"
			       "pgop-node-agent [--state-dir D] exec NS/POD [-c C] -- CMD...\n"
			       "pgop-node-agent [--state-dir D] partition NS/POD on|off\n");
			return 0;
		default: return 2;
		}
	}
	if (o.log_level) {
		enum op_log_level lvl;
		if (op_log_parse_level(o.log_level, &lvl) < 0) {
			fprintf(stderr, "bad --log-level %s\n", o.log_level);
			return 2;
		}
		op_log_set_level(lvl);
	}
	const char *sd = o.state_dir ? o.state_dir : "/tmp/pgop-e2e/agent";
	if (optind < argc && !strcmp(argv[optind], "exec"))
		return na_exec_main(argc - optind, argv + optind, sd);
	if (optind < argc && !strcmp(argv[optind], "partition"))
		return partition_main(argc - optind, argv + optind, sd);
	if (optind < argc) {
		fprintf(stderr, "unknown subcommand %s\n", argv[optind]);
		return 2;
	}
	return run(&o);
}
