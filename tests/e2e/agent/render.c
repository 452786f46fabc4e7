/* tests/e2e/agent/render.c - pure functions of the node agent: image policy,
 * back-off, names, Service rules, the nftables script, hosts files, downward
 * API fields and $(VAR) expansion. No I/O; unit-tested in test_na.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "support/alloc.h"
#include "support/json.h"
#include "tests/e2e/agent/na.h"

char na_pod_net[16] = NA_POD_NET;
char na_nft_table[32] = NA_NFT_TABLE;

enum na_image_kind na_image_kind(const char *image)
{
	if (!image)
		return NA_IMAGE_OTHER;
	/* repository path only: drop "@digest" and ":tag" (a ':' after the last '/') */
	_cleanup_free_ char *repo = op_strdup(image);
	char *at = strchr(repo, '@');
	if (at)
		*at = '\0';
	char *slash = strrchr(repo, '/');
	char *colon = strrchr(slash ? slash : repo, ':');
	if (colon)
		*colon = '\0';
	const char *last = slash ? strrchr(repo, '/') + 1 : repo;
	if (strstr(repo, "pgop"))
		return NA_IMAGE_PGOP;
	if (strstr(last, "postgres"))
		return NA_IMAGE_POSTGRES;
	return NA_IMAGE_OTHER;
}

int64_t na_backoff_ms(int restarts)
{
	if (restarts <= 0)
		return 0;
	int64_t ms = 1000;
	for (int i = 1; i < restarts && ms < 60000; i++)
		ms *= 2;
	return ms > 60000 ? 60000 : ms;
}

int na_pod_ip(int index, char out[16])
{
	if (index < 2 || index > 254)
		return -ERANGE;
	char tmp[40];
	int n = snprintf(tmp, sizeof(tmp), "%s.%d", na_pod_net, index);
	if (n < 0 || n > 15)
		return -ERANGE;
	memcpy(out, tmp, (size_t)n + 1);
	return 0;
}

int na_pod_names(const char *uid, char out_netns[32], char out_veth[16])
{
	char hex[9];
	size_t n = 0;
	for (const char *p = uid; p && *p && n < 8; p++) {
		if (*p == '-')
			continue;
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return -EINVAL;
		hex[n++] = *p;
	}
	if (n < 8)
		return -EINVAL;
	hex[8] = '\0';
	snprintf(out_netns, 32, "%s%s", NA_NETNS_PREFIX, hex);
	snprintf(out_veth, 16, "%s%s", NA_VETH_PREFIX, hex);
	return 0;
}

/* ---------------------------------------------------------------- Services */

void na_svc_rules_free(struct na_svc_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct na_svc_rule *s = &r->v[i];
		free(s->cluster_ip);
		free(s->proto);
		for (size_t j = 0; j < s->n_backends; j++)
			free(s->backends[j].ip);
		free(s->backends);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

static struct na_svc_rule *rule_new(struct na_svc_rules *r, const char *ip, const char *proto,
				    int port)
{
	r->v = op_realloc(r->v, (r->n + 1) * sizeof(*r->v));
	struct na_svc_rule *s = &r->v[r->n++];
	*s = (struct na_svc_rule){ .cluster_ip = op_strdup(ip), .port = port };
	s->proto = op_strdup(proto);
	for (char *p = s->proto; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	return s;
}

static void rule_backend(struct na_svc_rule *s, const char *ip, int port)
{
	for (size_t i = 0; i < s->n_backends; i++)
		if (strcmp(s->backends[i].ip, ip) == 0 && s->backends[i].port == port)
			return;
	s->backends = op_realloc(s->backends, (s->n_backends + 1) * sizeof(*s->backends));
	s->backends[s->n_backends++] = (struct na_backend){ op_strdup(ip), port };
}

void na_svc_rules_add_one(struct na_svc_rules *r, const char *cluster_ip, const char *proto,
			  int port, const char *backend_ip, int backend_port)
{
	struct na_svc_rule *s = rule_new(r, cluster_ip, proto, port);
	if (backend_ip)
		rule_backend(s, backend_ip, backend_port);
}

static bool is_ipv4(const char *s)
{
	int dots = 0;
	if (!s || !*s || strlen(s) > 15)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p == '.')
			dots++;
		else if (*p < '0' || *p > '9')
			return false;
	}
	return dots == 3;
}

static const char *str_or(json_object *o, const char *key, const char *dflt)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return dflt;
}

static int64_t int_or(json_object *o, const char *key, int64_t dflt)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return dflt;
}

int na_svc_rules_add(struct na_svc_rules *r, json_object *svc, json_object *slices,
		     struct op_err *err)
{
	const char *ns = op_json_str_at(svc, "metadata.namespace");
	const char *name = op_json_str_at(svc, "metadata.name");
	const char *ip = op_json_str_at(svc, "spec.clusterIP");
	json_object *ports = op_json_at(svc, "spec.ports");
	if (!ns || !name)
		return op_err_set(err, -EINVAL, "service without metadata.name/namespace");
	if (!ip || !is_ipv4(ip) || !ports || !json_object_is_type(ports, json_type_array))
		return 0;
	int added = 0;
	for (size_t i = 0; i < json_object_array_length(ports); i++) {
		json_object *p = json_object_array_get_idx(ports, i);
		const char *pname = str_or(p, "name", "");
		const char *proto = str_or(p, "protocol", "TCP");
		int port = (int)int_or(p, "port", 0);
		if (port <= 0 || port > 65535 || (strcmp(proto, "TCP") && strcmp(proto, "UDP")))
			continue;
		struct na_svc_rule *s = rule_new(r, ip, proto, port);
		added++;
		size_t ns_len = slices ? json_object_array_length(slices) : 0;
		for (size_t k = 0; k < ns_len; k++) {
			json_object *sl = json_object_array_get_idx(slices, k);
			const char *sns = op_json_str_at(sl, "metadata.namespace");
			json_object *labels = op_json_at(sl, "metadata.labels");
			const char *owner = str_or(labels, "kubernetes.io/service-name", NULL);
			if (!sns || !owner || strcmp(sns, ns) || strcmp(owner, name))
				continue;
			if (strcmp(str_or(sl, "addressType", "IPv4"), "IPv4"))
				continue;
			json_object *sports = op_json_at(sl, "ports"), *eps = op_json_at(sl, "endpoints");
			int target = 0;
			for (size_t q = 0; sports && q < json_object_array_length(sports); q++) {
				json_object *sp = json_object_array_get_idx(sports, q);
				if (strcmp(str_or(sp, "name", ""), pname) == 0 &&
				    strcmp(str_or(sp, "protocol", "TCP"), proto) == 0)
					target = (int)int_or(sp, "port", 0);
			}
			if (target <= 0 || target > 65535 || !eps)
				continue;
			for (size_t e = 0; e < json_object_array_length(eps); e++) {
				json_object *ep = json_object_array_get_idx(eps, e);
				json_object *ready = op_json_at(ep, "conditions.ready");
				if (ready && !json_object_get_boolean(ready))
					continue;
				json_object *addrs = op_json_at(ep, "addresses");
				for (size_t a = 0; addrs && a < json_object_array_length(addrs); a++) {
					const char *aip = json_object_get_string(
						json_object_array_get_idx(addrs, a));
					if (is_ipv4(aip))
						rule_backend(s, aip, target);
				}
			}
		}
	}
	return added;
}

/* ---------------------------------------------------------------- nftables */

#define ADD(...)                                                                                   \
	do {                                                                                       \
		if ((rc = op_buf_addf(b, __VA_ARGS__)) < 0)                                         \
			return rc;                                                                 \
	} while (0)

static int render_set(struct op_buf *b, const char *const *partitioned, size_t n)
{
	int rc;
	ADD("\tset partitioned { type ipv4_addr;");
	size_t added = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_ipv4(partitioned[i]))
			continue;
		ADD("%s%s", added++ ? ", " : " elements = { ", partitioned[i]);
	}
	ADD("%s }\n", added ? " }" : "");
	return 0;
}

int na_nft_render(struct op_buf *b, const struct na_svc_rules *rules, const char *svc_cidr,
		  const char *const *partitioned, size_t n_partitioned, bool cut)
{
	int rc;
	op_buf_reset(b);
	const char *t = na_nft_table;
	char net[32];
	snprintf(net, sizeof(net), "%s.0/24", na_pod_net);
	/* create-then-delete makes the script idempotent and atomic */
	ADD("table ip %s\ndelete table ip %s\n", t, t);
	ADD("table bridge %s\ndelete table bridge %s\n", t, t);
	ADD("table ip %s {\n", t);
	if ((rc = render_set(b, partitioned, n_partitioned)) < 0)
		return rc;
	/* only this instance's pods: another environment's agent may share the bridge */
	ADD("\tchain prerouting { type nat hook prerouting priority -100; policy accept; "
	    "ip saddr %s jump services; }\n",
	    net);
	ADD("\tchain output { type nat hook output priority -100; policy accept; "
	    "jump services; }\n");
	ADD("\tchain postrouting { type nat hook postrouting priority 100; policy accept; "
	    "ip saddr %s ct status dnat oifname \"" NA_BRIDGE "\" masquerade; }\n",
	    net);
	ADD("\tchain forward { type filter hook forward priority filter; policy accept; "
	    "ip saddr @partitioned drop; ip daddr @partitioned drop; ");
	/* a cut node: nothing routed between its subnet and the other nodes' (pods
	 * of one node talk over the bridge, or through the host for a Service of
	 * their own node: both ends in the subnet, allowed) */
	if (cut)
		ADD("ip saddr %s ip daddr != %s drop; ip daddr %s ip saddr != %s drop; ", net, net,
		    net, net);
	ADD("ip daddr %s reject; iifname \"" NA_BRIDGE "\" oifname != \"" NA_BRIDGE "\" drop; "
	    "iifname != \"" NA_BRIDGE "\" oifname \"" NA_BRIDGE "\" drop; }\n",
	    svc_cidr);
	/* A partitioned pod is a partitioned node: its own kubelet (probes) and local clients
	 * on the host still reach it, so only what the pod starts towards the host (the API
	 * server) is dropped, established connections included. */
	ADD("\tchain input { type filter hook input priority filter; policy accept; "
	    "ip saddr @partitioned ct direction original drop; ");
	if (cut)
		ADD("ip saddr %s ct direction original drop; ", net);
	ADD("}\n");
	/* Pods of two nodes are on one bridge in two subnets: the host routes between them
	 * and would send ICMP redirects ("reach it directly"), which a pod could follow to
	 * bypass the forward chain (partitions, cuts) */
	ADD("\tchain filter_output { type filter hook output priority filter; policy accept; "
	    "ip daddr %s reject; oifname \"" NA_BRIDGE "\" icmp type redirect drop; ",
	    svc_cidr);
	/* a cut node: the API server (webhooks, aggregated APIs) and host clients do not
	 * reach its pods through Services, nor the API server its kubelet */
	if (cut)
		ADD("ip daddr %s ct status dnat drop; ip daddr %s.1 tcp dport 10250 drop; ", net,
		    na_pod_net);
	ADD("}\n");
	if (cut)
		ADD("\tchain node_cut { }\n");
	ADD("\tchain services {\n");
	for (size_t i = 0; rules && i < rules->n; i++) {
		const struct na_svc_rule *s = &rules->v[i];
		if (s->n_backends == 0)
			continue;
		ADD("\t\tip daddr %s %s dport %d goto svc%zu\n", s->cluster_ip, s->proto, s->port, i);
	}
	ADD("\t}\n");
	for (size_t i = 0; rules && i < rules->n; i++) {
		const struct na_svc_rule *s = &rules->v[i];
		if (s->n_backends == 0)
			continue;
		ADD("\tchain svc%zu {", i);
		if (s->n_backends == 1) {
			ADD(" meta l4proto %s dnat to %s:%d; }\n", s->proto, s->backends[0].ip,
			    s->backends[0].port);
			continue;
		}
		ADD(" numgen random mod %zu vmap {", s->n_backends);
		for (size_t j = 0; j < s->n_backends; j++)
			ADD("%s %zu : goto svc%zu_%zu", j ? "," : "", j, i, j);
		ADD(" }; }\n");
		for (size_t j = 0; j < s->n_backends; j++)
			ADD("\tchain svc%zu_%zu { meta l4proto %s dnat to %s:%d; }\n", i, j, s->proto,
			    s->backends[j].ip, s->backends[j].port);
	}
	ADD("}\n");
	/* pod <-> pod on the bridge never reaches the ip family hooks */
	ADD("table bridge %s {\n", t);
	if ((rc = render_set(b, partitioned, n_partitioned)) < 0)
		return rc;
	/* no input chain here: the bridge family has no conntrack on this kernel, frames to
	 * the host go on to the ip family's input chain above */
	ADD("\tchain forward { type filter hook forward priority filter; policy accept; "
	    "ip saddr @partitioned drop; ip daddr @partitioned drop; }\n");
	ADD("}\n");
	return 0;
}

/* ------------------------------------------------------------------- hosts */

int na_hosts_render(struct op_buf *b, const char *pod_ns, const char *hostname,
		    const char *subdomain, const char *pod_ip, json_object *services)
{
	int rc;
	op_buf_reset(b);
	ADD("# Kubernetes-managed hosts file (pgop-node-agent).\n");
	ADD("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
	if (pod_ip && hostname) {
		if (subdomain && *subdomain)
			ADD("%s\t%s.%s.%s.svc.cluster.local\t%s\n", pod_ip, hostname, subdomain,
			    pod_ns, hostname);
		else
			ADD("%s\t%s\n", pod_ip, hostname);
	}
	size_t n = services ? json_object_array_length(services) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(services, i);
		const char *ns = op_json_str_at(s, "metadata.namespace");
		const char *name = op_json_str_at(s, "metadata.name");
		const char *ip = op_json_str_at(s, "spec.clusterIP");
		if (!ns || !name || !is_ipv4(ip))
			continue;
		ADD("%s\t%s.%s.svc.cluster.local %s.%s.svc %s.%s", ip, name, ns, name, ns, name, ns);
		if (pod_ns && strcmp(ns, pod_ns) == 0)
			ADD(" %s", name);
		ADD("\n");
	}
	return 0;
}

/* -------------------------------------------------------------- downward API */

static const char *map_key(json_object *pod, const char *map, const char *path, size_t prefix)
{
	/* metadata.labels['key'] */
	const char *k = path + prefix;
	size_t l = strlen(k);
	if (l < 4 || k[0] != '[' || k[1] != '\'' || k[l - 1] != ']' || k[l - 2] != '\'')
		return NULL;
	_cleanup_free_ char *key = op_strndup(k + 2, l - 4);
	return str_or(op_json_at(pod, map), key, NULL);
}

const char *na_field_ref(json_object *pod, const char *field_path, const char *pod_ip,
			 const char *host_ip)
{
	static const struct {
		const char *field;
		const char *json;
	} direct[] = {
		{ "metadata.name", "metadata.name" },
		{ "metadata.namespace", "metadata.namespace" },
		{ "metadata.uid", "metadata.uid" },
		{ "spec.nodeName", "spec.nodeName" },
		{ "spec.serviceAccountName", "spec.serviceAccountName" },
	};
	if (!field_path)
		return NULL;
	for (size_t i = 0; i < OP_ARRAY_SIZE(direct); i++)
		if (strcmp(field_path, direct[i].field) == 0)
			return op_json_str_at(pod, direct[i].json);
	if (strcmp(field_path, "status.podIP") == 0 || strcmp(field_path, "status.podIPs") == 0)
		return pod_ip;
	if (strcmp(field_path, "status.hostIP") == 0 || strcmp(field_path, "status.hostIPs") == 0)
		return host_ip;
	if (strncmp(field_path, "metadata.labels", 15) == 0)
		return map_key(pod, "metadata.labels", field_path, 15);
	if (strncmp(field_path, "metadata.annotations", 20) == 0)
		return map_key(pod, "metadata.annotations", field_path, 20);
	return NULL;
}

int na_expand_vars(struct op_buf *b, const char *s, char *const *env, size_t n_env)
{
	int rc;
	for (const char *p = s; *p;) {
		if (p[0] == '$' && p[1] == '$') {
			ADD("$");
			p += 2;
			continue;
		}
		if (p[0] == '$' && p[1] == '(') {
			const char *end = strchr(p + 2, ')');
			if (end) {
				size_t nl = (size_t)(end - (p + 2));
				const char *val = NULL;
				for (size_t i = n_env; i-- > 0;)
					if (strncmp(env[i], p + 2, nl) == 0 && env[i][nl] == '=') {
						val = env[i] + nl + 1;
						break;
					}
				if (val) {
					if ((rc = op_buf_adds(b, val)) < 0)
						return rc;
				} else if ((rc = op_buf_add(b, p, nl + 3)) < 0) {
					return rc;
				}
				p = end + 1;
				continue;
			}
		}
		if ((rc = op_buf_addc(b, *p++)) < 0)
			return rc;
	}
	return 0;
}
