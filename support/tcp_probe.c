/* support/tcp_probe.c - parallel non-blocking TCP connects (tcp_probe.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/tcp_probe.h"

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts a non-blocking connect: the socket (>= 0, pending or connected:
 * *ret_errno 0 and *ret_done set), or -1 with *ret_errno. */
static int start(const char *host, unsigned port, int *ret_errno, int *ret_done)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	*ret_done = 0;
	if (host && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		len = sizeof(*a4);
	} else if (host && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		len = sizeof(*a6);
	} else {
		*ret_errno = EINVAL;
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*ret_errno = errno;
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
		*ret_errno = 0;
		*ret_done = 1;
		return fd;
	}
	if (errno != EINPROGRESS) {
		*ret_errno = errno;
		close(fd);
		return -1;
	}
	*ret_errno = ETIMEDOUT; /* until it completes */
	return fd;
}

/* One round of at most OP_TCP_PROBE_BATCH hosts. */
static void round_of(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
		     int *ret_errno)
{
	struct pollfd pfd[OP_TCP_PROBE_BATCH];
	size_t idx[OP_TCP_PROBE_BATCH], k = 0;
	for (size_t i = 0; i < n; i++) {
		int done = 0;
		int fd = start(hosts[i], port, &ret_errno[i], &done);
		if (fd < 0)
			continue;
		if (done) {
			close(fd);
			continue;
		}
		pfd[k] = (struct pollfd){ .fd = fd, .events = POLLOUT };
		idx[k++] = i;
	}
	long long end = mono_ms() + timeout_ms;
	size_t open = k;
	while (open > 0) {
		long long left = end - mono_ms();
		if (left <= 0)
			break;
		int r = poll(pfd, k, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (size_t j = 0; j < k; j++) {
			if (pfd[j].fd < 0 || !pfd[j].revents)
				continue;
			int so = 0;
			socklen_t sl = sizeof(so);
			if (getsockopt(pfd[j].fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
				so = errno;
			ret_errno[idx[j]] = so;
			close(pfd[j].fd);
			pfd[j].fd = -1; /* poll ignores it from now on */
			open--;
		}
	}
	for (size_t j = 0; j < k; j++)
		if (pfd[j].fd >= 0)
			close(pfd[j].fd); /* still pending: ETIMEDOUT stays */
}

int op_tcp_probe(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
		 int *ret_errno)
{
	if (port == 0 || port > 65535 || timeout_ms <= 0)
		return -EINVAL;
	for (size_t at = 0; at < n; at += OP_TCP_PROBE_BATCH) {
		size_t m = n - at < OP_TCP_PROBE_BATCH ? n - at : OP_TCP_PROBE_BATCH;
		round_of(hosts + at, m, port, timeout_ms, ret_errno + at);
	}
	int up = 0;
	for (size_t i = 0; i < n; i++)
		up += ret_errno[i] == 0;
	return up;
}
