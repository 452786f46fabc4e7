/* tests/e2e/agent/services.c - kube-proxy and DNS stand-ins: the nftables
 * table from Services + EndpointSlices (re-applied only when the rendered
 * script changes) and every pod's hosts file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/watch.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

int na_partition_list(const char *state_dir, char ***ret_ips, size_t *ret_n)
{
	_cleanup_free_ char *dir = op_asprintf("%s/partition", state_dir);
	char **v = NULL;
	size_t n = 0;
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			v = op_realloc(v, (n + 1) * sizeof(*v));
			v[n++] = op_strdup(e->d_name);
		}
		closedir(d);
	}
	*ret_ips = v;
	*ret_n = n;
	return 0;
}

/* The hosts file is bind-mounted as a file: rewrite it in place so the
 * mounted inode sees the change. */
static void write_in_place(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	size_t len = strlen(data), off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(fd);
}

static void hosts_one(struct na_pod *p, json_object *svcs, struct op_buf *b)
{
	const char *hn = op_json_str_at(p->obj, "spec.hostname");
	if (na_hosts_render(b, p->ns, hn ? hn : p->name, op_json_str_at(p->obj, "spec.subdomain"),
			    p->ip, svcs) < 0)
		return;
	if (p->hosts && !strcmp(p->hosts, op_buf_str(b)))
		return;
	_cleanup_free_ char *path = op_asprintf("%s/hosts", p->dir);
	write_in_place(path, op_buf_str(b));
	free(p->hosts);
	p->hosts = op_strdup(op_buf_str(b));
}

/* kube_informer_list_except's callback: an object of a scale-mode namespace
 * (nothing runs behind its Services), left out unparsed. Parsing 3,000 such
 * Services and their EndpointSlices at every sync was most of the agent's
 * CPU in a 1,000-Cluster creation burst (bench/scale.sh). */
static bool in_scale_ns(void *ud, const char *key, const char *rv)
{
	(void)rv;
	const struct na_agent *a = ud;
	const char *slash = strchr(key, '/');
	if (!a->scale_ns || !slash || (size_t)(slash - key) >= 256)
		return false;
	char ns[256];
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	return fnmatch(a->scale_ns, ns, 0) == 0;
}

/* The pod's /etc/resolv.conf: every name a pod uses is in its hosts file, and
 * nothing may leave the host, so any other lookup (a PTR of 0.0.0.0 by
 * Python's http.server, say) goes to the pod's own loopback, where nothing
 * answers, and fails at once instead of waiting for the machine's resolver
 * behind the pod network's drop rule (10 s per query). */
static void resolv_write(struct na_pod *p)
{
	_cleanup_free_ char *path = op_asprintf("%s/resolv.conf", p->dir);
	if (access(path, F_OK) != 0)
		write_in_place(path, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
}

void na_pod_hosts_write(struct na_agent *a, struct na_pod *p)
{
	if (!p->hosts)
		resolv_write(p);
	/* the scale-mode namespaces' Services have no rules (na_services_sync):
	 * no names either */
	json_object *svcs = kube_informer_list_except(a->svcs, NULL, in_scale_ns, a);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	hosts_one(p, svcs, &b);
	op_buf_done(&b);
	if (svcs)
		json_object_put(svcs);
}

void na_services_sync(struct na_agent *a)
{
	json_object *svcs = kube_informer_list_except(a->svcs, NULL, in_scale_ns, a);
	json_object *slices = kube_informer_list_except(a->slices, NULL, in_scale_ns, a);
	struct na_svc_rules rules = { 0 };
	struct op_err err = OP_ERR_INIT;
	for (size_t i = 0; svcs && i < json_object_array_length(svcs); i++) {
		json_object *s = json_object_array_get_idx(svcs, i);
		const char *ns = kube_obj_namespace(s), *name = kube_obj_name(s);
		const char *ip = op_json_str_at(s, "spec.clusterIP");
		if (ns && name && ip && !strcmp(ns, "default") && !strcmp(name, "kubernetes")) {
			/* no endpoints (reconciler none): straight to the apiserver */
			na_svc_rules_add_one(&rules, ip, "tcp", 443, a->net.apiserver_ip,
					     a->net.apiserver_port);
			continue;
		}
		if (na_svc_rules_add(&rules, s, slices, &err) < 0) {
			op_log_warn("service rules", "service", name ? name : "?", "error", err.msg);
			op_err_clear(&err);
		}
	}
	char **parts = NULL;
	size_t np = 0;
	na_partition_list(a->shared_dir, &parts, &np);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	if (na_nft_render(&b, &rules, a->svc_cidr, (const char *const *)parts, np,
			  atomic_load(&a->cut)) == 0 &&
	    (!a->last_nft || strcmp(a->last_nft, op_buf_str(&b)))) {
		if (na_net_apply_nft(op_buf_str(&b), &err) < 0) {
			op_log_warn("nftables", "error", err.msg);
		} else {
			free(a->last_nft);
			a->last_nft = op_strdup(op_buf_str(&b));
			char cnt[16];
			snprintf(cnt, sizeof(cnt), "%zu", rules.n);
			op_log_info("service rules applied", "ports", cnt);
		}
	}
	op_buf_done(&b);
	for (size_t i = 0; i < np; i++)
		free(parts[i]);
	free(parts);
	na_svc_rules_free(&rules);
	if (slices)
		json_object_put(slices);
	if (svcs)
		json_object_put(svcs);
}
