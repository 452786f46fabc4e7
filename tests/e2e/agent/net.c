/* tests/e2e/agent/net.c - the bridge, pod network namespaces and nftables,
 * through the ip(8) and nft(8) tools. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

static int write_sysctl(const char *path, const char *val, struct op_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return op_err_set(err, -errno, "open %s: %s", path, strerror(errno));
	ssize_t w = write(fd, val, strlen(val));
	int e = w < 0 ? -errno : 0;
	close(fd);
	if (e)
		return op_err_set(err, e, "write %s: %s", path, strerror(-e));
	return 0;
}

int na_net_up(struct na_net *n, struct op_err *err)
{
	int rc;
	struct stat st;
	if (stat("/sys/class/net/" NA_BRIDGE, &st) < 0) {
		const char *add[] = { "ip", "link", "add", NA_BRIDGE, "type", "bridge", NULL };
		if ((rc = na_run(add, NULL, NULL, err)) < 0)
			return rc;
	}
	const char *addr[] = { "ip", "addr", "replace", NA_POD_NET ".1/24", "dev", NA_BRIDGE, NULL };
	const char *up[] = { "ip", "link", "set", NA_BRIDGE, "up", NULL };
	if ((rc = na_run(addr, NULL, NULL, err)) < 0 || (rc = na_run(up, NULL, NULL, err)) < 0)
		return rc;
	/* Forwarding only for packets that arrive on the bridge (service DNAT
	 * between pods); route_localnet lets pods reach the loopback apiserver
	 * through the DNAT of the kubernetes Service. Both die with the bridge. */
	if ((rc = write_sysctl("/proc/sys/net/ipv4/conf/" NA_BRIDGE "/forwarding", "1", err)) < 0 ||
	    (rc = write_sysctl("/proc/sys/net/ipv4/conf/" NA_BRIDGE "/route_localnet", "1", err)) < 0)
		return rc;
	n->up = true;
	return 0;
}

void na_net_down(struct na_net *n)
{
	const char *ip_tbl[] = { "nft", "delete", "table", "ip", NA_NFT_TABLE, NULL };
	const char *br_tbl[] = { "nft", "delete", "table", "bridge", NA_NFT_TABLE, NULL };
	const char *br[] = { "ip", "link", "del", NA_BRIDGE, NULL };
	na_run(ip_tbl, NULL, NULL, NULL);
	na_run(br_tbl, NULL, NULL, NULL);
	na_run(br, NULL, NULL, NULL);
	if (n)
		n->up = false;
}

int na_net_pod_add(const char *netns, const char *veth, const char *ip, struct op_err *err)
{
	int rc;
	_cleanup_free_ char *nspath = op_asprintf("/run/netns/%s", netns);
	_cleanup_free_ char *cidr = op_asprintf("%s/%d", ip, NA_POD_PREFIXLEN);
	struct stat st;
	if (stat(nspath, &st) < 0) {
		const char *add[] = { "ip", "netns", "add", netns, NULL };
		if ((rc = na_run(add, NULL, NULL, err)) < 0)
			return rc;
	}
	_cleanup_free_ char *sys = op_asprintf("/sys/class/net/%s", veth);
	if (stat(sys, &st) < 0) {
		const char *veth_add[] = { "ip", "link", "add", veth, "type", "veth", "peer",
					   "name", "eth0", "netns", netns, NULL };
		if ((rc = na_run(veth_add, NULL, NULL, err)) < 0)
			return rc;
	}
	const char *const cmds[][12] = {
		{ "ip", "link", "set", veth, "master", NA_BRIDGE, "up", NULL },
		{ "ip", "-n", netns, "link", "set", "lo", "up", NULL },
		{ "ip", "-n", netns, "addr", "replace", cidr, "dev", "eth0", NULL },
		{ "ip", "-n", netns, "link", "set", "eth0", "up", NULL },
		{ "ip", "-n", netns, "route", "replace", "default", "via", NA_POD_NET ".1", NULL },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cmds); i++)
		if ((rc = na_run(cmds[i], NULL, NULL, err)) < 0)
			return op_err_prefix(err, "pod network %s", netns);
	return 0;
}

void na_net_pod_del(const char *netns, const char *veth)
{
	const char *del_ns[] = { "ip", "netns", "delete", netns, NULL };
	const char *del_link[] = { "ip", "link", "del", veth, NULL };
	na_run(del_ns, NULL, NULL, NULL);
	struct stat st;
	_cleanup_free_ char *sys = op_asprintf("/sys/class/net/%s", veth);
	if (stat(sys, &st) == 0)
		na_run(del_link, NULL, NULL, NULL);
}

int na_net_apply_nft(const char *script, struct op_err *err)
{
	const char *argv[] = { "nft", "-f", "-", NULL };
	struct op_buf out = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int rc = na_run(argv, script, &out, err);
	op_buf_done(&out);
	return rc;
}
