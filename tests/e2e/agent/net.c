/* tests/e2e/agent/net.c - the bridge, pod network namespaces and nftables,
 * through the ip(8) and nft(8) tools. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <stdlib.h>
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

/* IPv4 addresses on the bridge, as a bitmap of the third octet of 10.244.x.1. */
static void bridge_addrs(bool used[256], bool *ret_exists)
{
	memset(used, 0, 256 * sizeof(bool));
	*ret_exists = access("/sys/class/net/" NA_BRIDGE, F_OK) == 0;
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0)
		return;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, NA_BRIDGE))
			continue;
		uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		if ((a >> 16) == ((10u << 8) | 244u) && (a & 0xff) == 1)
			used[(a >> 8) & 0xff] = true;
	}
	freeifaddrs(ifa);
}

static int own_octet(void)
{
	const char *dot = strrchr(na_pod_net, '.');
	char *end;
	long v = dot ? strtol(dot + 1, &end, 10) : -1;
	return dot && !*end && v > 0 && v < 256 ? (int)v : -1;
}

static int bridge_setup(struct op_err *err)
{
	int rc;
	if (access("/sys/class/net/" NA_BRIDGE, F_OK) != 0) {
		const char *add[] = { "ip", "link", "add", NA_BRIDGE, "type", "bridge", NULL };
		if ((rc = na_run(add, NULL, NULL, err)) < 0 &&
		    access("/sys/class/net/" NA_BRIDGE, F_OK) != 0) /* lost a race: fine */
			return rc;
		op_err_clear(err);
	}
	/* A bridge without an explicit address takes the lowest MAC of its ports:
	 * every new pod could change the gateway's MAC under the other pods' ARP
	 * caches (seconds of lost traffic). A fixed, locally administered one: */
	const char *up[] = { "ip", "link", "set", NA_BRIDGE, "address", NA_BRIDGE_MAC, "up", NULL };
	if ((rc = na_run(up, NULL, NULL, err)) < 0)
		return rc;
	/* Forwarding only for packets that arrive on the bridge (service DNAT
	 * between pods); route_localnet lets pods reach the loopback apiserver
	 * through the DNAT of the kubernetes Service. Both die with the bridge. */
	if ((rc = write_sysctl("/proc/sys/net/ipv4/conf/" NA_BRIDGE "/forwarding", "1", err)) < 0 ||
	    (rc = write_sysctl("/proc/sys/net/ipv4/conf/" NA_BRIDGE "/route_localnet", "1", err)) < 0)
		return rc;
	return 0;
}

static int add_own_address(struct op_err *err)
{
	char cidr[32];
	snprintf(cidr, sizeof(cidr), "%s.1/24", na_pod_net);
	const char *addr[] = { "ip", "addr", "replace", cidr, "dev", NA_BRIDGE, NULL };
	return na_run(addr, NULL, NULL, err);
}

/* Octet recorded by this state dir's previous run, or -1. */
static int own_prev(const char *file)
{
	struct op_buf b = OP_BUF_INIT(64);
	int v = -1;
	if (na_read_file(file, &b, NULL) == 0) {
		char *end;
		long l = strtol(op_buf_str(&b), &end, 10);
		if (l >= 213 && l < 251 && (*end == '\0' || *end == '\n'))
			v = (int)l;
	}
	op_buf_done(&b);
	return v;
}

int na_net_claim(struct na_net *n, struct op_err *err)
{
	/* serialises agents of concurrent e2e environments while they pick */
	int lock = open("/tmp/pgop-e2e-agent.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		int e = -errno;
		if (lock >= 0)
			close(lock);
		return op_err_set(err, e, "lock /tmp/pgop-e2e-agent.lock: %s", strerror(-e));
	}
	int rc = bridge_setup(err);
	if (rc == 0) {
		bool used[256], exists;
		bridge_addrs(used, &exists);
		/* our own previous run (same state dir) may have died with its address
		 * still on the bridge: take that one back; else the first free one */
		_cleanup_free_ char *mine = op_asprintf("%s/subnet", n->state_dir);
		int prev = own_prev(mine), oct = 213;
		if (prev > 0 && used[prev])
			oct = prev;
		else
			while (oct < 251 && used[oct])
				oct++;
		if (oct == 251) {
			rc = op_err_set(err, -ENOSPC, "no free 10.244.x.0/24 on " NA_BRIDGE);
		} else {
			snprintf(na_pod_net, sizeof(na_pod_net), "10.244.%d", oct & 0xff);
			if (oct == 213)
				snprintf(na_nft_table, sizeof(na_nft_table), "%s", NA_NFT_TABLE);
			else
				snprintf(na_nft_table, sizeof(na_nft_table), "%s_%d", NA_NFT_TABLE, oct);
			rc = add_own_address(err);
			char txt[16];
			snprintf(txt, sizeof(txt), "%d\n", oct);
			if (rc == 0)
				rc = na_write_file(mine, txt, strlen(txt), 0644, err);
		}
	}
	flock(lock, LOCK_UN);
	close(lock);
	if (rc == 0)
		n->up = true;
	return rc;
}

int na_net_up(struct na_net *n, struct op_err *err)
{
	bool used[256], exists;
	bridge_addrs(used, &exists);
	int oct = own_octet();
	if (exists && oct > 0 && oct < 256 && used[oct])
		return 0;
	int rc = bridge_setup(err);
	if (rc == 0)
		rc = add_own_address(err);
	if (rc == 0)
		n->up = true;
	return rc < 0 ? rc : 1;
}

void na_net_down(struct na_net *n)
{
	const char *ip_tbl[] = { "nft", "delete", "table", "ip", na_nft_table, NULL };
	const char *br_tbl[] = { "nft", "delete", "table", "bridge", na_nft_table, NULL };
	na_run(ip_tbl, NULL, NULL, NULL);
	na_run(br_tbl, NULL, NULL, NULL);
	char cidr[32];
	snprintf(cidr, sizeof(cidr), "%s.1/24", na_pod_net);
	const char *del_addr[] = { "ip", "addr", "del", cidr, "dev", NA_BRIDGE, NULL };
	na_run(del_addr, NULL, NULL, NULL);
	bool used[256], exists;
	bridge_addrs(used, &exists);
	bool others = false;
	for (int i = 0; i < 256; i++)
		others |= used[i];
	if (exists && !others) {
		const char *br[] = { "ip", "link", "del", NA_BRIDGE, NULL };
		na_run(br, NULL, NULL, NULL);
	}
	if (n)
		n->up = false;
}

int na_net_pod_add(const char *netns, const char *veth, const char *ip, struct op_err *err)
{
	int rc;
	_cleanup_free_ char *nspath = op_asprintf("/run/netns/%s", netns);
	_cleanup_free_ char *cidr = op_asprintf("%s/%d", ip, NA_POD_PREFIXLEN);
	_cleanup_free_ char *gw = op_asprintf("%s.1", na_pod_net);
	struct stat st;
	if (stat(nspath, &st) < 0) {
		const char *add[] = { "ip", "netns", "add", netns, NULL };
		if ((rc = na_run(add, NULL, NULL, err)) < 0)
			return rc;
	}
	/* The pod's MAC follows from its address (02:00 then the four octets, as
	 * Docker does): an address handed again to a new pod seconds after the
	 * last one left keeps its MAC, so the host's and the other pods' neighbour
	 * entries for it stay right. With a random MAC they pointed at the gone
	 * pod's for up to 45 s (REACHABLE), and nothing reached the new one. */
	unsigned o[4];
	if (sscanf(ip, "%u.%u.%u.%u", &o[0], &o[1], &o[2], &o[3]) != 4 || o[0] > 255 ||
	    o[1] > 255 || o[2] > 255 || o[3] > 255)
		return op_err_set(err, -EINVAL, "pod address %s is not IPv4", ip);
	/* two `ip -batch` runs instead of one fork per command */
	_cleanup_free_ char *sys = op_asprintf("/sys/class/net/%s", veth);
	_cleanup_free_ char *add =
		stat(sys, &st) < 0
			? op_asprintf("link add %s type veth peer name eth0 address "
				      "02:00:%02x:%02x:%02x:%02x netns %s\n",
				      veth, o[0], o[1], o[2], o[3], netns)
			: op_strdup("");
	_cleanup_free_ char *host =
		op_asprintf("%slink set %s master " NA_BRIDGE " up\n"
			    /* a pod reaching itself through a Service (hairpin) */
			    "link set %s type bridge_slave hairpin on\n",
			    add, veth, veth);
	_cleanup_free_ char *pod = op_asprintf("link set lo up\naddr replace %s dev eth0\n"
					       "link set eth0 up\nroute replace default via %s\n",
					       cidr, gw);
	const char *host_cmd[] = { "ip", "-batch", "-", NULL };
	const char *pod_cmd[] = { "ip", "-n", netns, "-batch", "-", NULL };
	if ((rc = na_run(host_cmd, host, NULL, err)) < 0 || (rc = na_run(pod_cmd, pod, NULL, err)) < 0)
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
