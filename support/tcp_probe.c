/* support/tcp_probe.c - parallel non-blocking TCP connects (tcp_probe.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
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

/* What a round asks of each host: the connect's timeout, and optionally bytes
 * to send once connected and how long to wait for the peer's process to react. */
struct ask {
	long connect_ms;
	const void *hello; /* borrowed; NULL: the connect alone */
	size_t hello_len;
	long answer_ms;
};

/* One probe of a round: its socket, its host's index, its deadline. */
struct slot {
	size_t idx;
	long long deadline;
	bool answering; /* connected, hello sent, waiting for a byte, EOF or reset */
};

/* Closes a probe's socket. One that sent its hello closes with a reset
 * rather than a FIN (no TIME_WAIT here, and a peer mid-handshake learns at
 * once that nobody waits for it); a bare connect closes with a FIN, which
 * a server takes as a client that went away before saying anything
 * (postgres logs nothing for it, a reset it would log). */
static void close_slot(int fd, const struct slot *sl)
{
	if (sl->answering) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
}

/* The connect of slot j completed with so (SO_ERROR): done, or on to the
 * answer phase. Returns true while the slot stays open. */
static bool connected(struct pollfd *pfd, struct slot *sl, const struct ask *a, int so,
		      int *ret_errno)
{
	if (so || !a->hello) {
		ret_errno[sl->idx] = so;
		return false;
	}
	ssize_t w = send(pfd->fd, a->hello, a->hello_len, MSG_NOSIGNAL);
	if (w != (ssize_t)a->hello_len) {
		ret_errno[sl->idx] = w < 0 ? errno : EIO;
		return false;
	}
	ret_errno[sl->idx] = ETIME; /* connected; silent until something comes back */
	sl->answering = true;
	sl->deadline = mono_ms() + a->answer_ms;
	pfd->events = POLLIN;
	return true;
}

/* One round of at most OP_TCP_PROBE_BATCH hosts. */
static void round_of(const char *const *hosts, size_t n, unsigned port, const struct ask *a,
		     int *ret_errno)
{
	struct pollfd pfd[OP_TCP_PROBE_BATCH];
	struct slot sl[OP_TCP_PROBE_BATCH];
	size_t k = 0;
	long long t0 = mono_ms();
	for (size_t i = 0; i < n; i++) {
		int done = 0;
		int fd = start(hosts[i], port, &ret_errno[i], &done);
		if (fd < 0)
			continue;
		pfd[k] = (struct pollfd){ .fd = fd, .events = POLLOUT };
		sl[k] = (struct slot){ .idx = i, .deadline = t0 + a->connect_ms };
		if (done && !connected(&pfd[k], &sl[k], a, 0, ret_errno)) {
			close_slot(fd, &sl[k]);
			continue;
		}
		k++;
	}
	size_t open = k;
	while (open > 0) {
		long long now = mono_ms(), next = -1;
		for (size_t j = 0; j < k; j++) {
			if (pfd[j].fd < 0)
				continue;
			if (sl[j].deadline <= now) { /* ETIMEDOUT or ETIME stays */
				close_slot(pfd[j].fd, &sl[j]);
				pfd[j].fd = -1;
				open--;
			} else if (next < 0 || sl[j].deadline < next) {
				next = sl[j].deadline;
			}
		}
		if (!open)
			break;
		int r = poll(pfd, k, (int)(next - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		for (size_t j = 0; j < k; j++) {
			if (pfd[j].fd < 0 || !pfd[j].revents)
				continue;
			bool keep = false;
			if (sl[j].answering) {
				ret_errno[sl[j].idx] = 0; /* bytes, EOF or a reset: its process is there */
			} else {
				int so = 0;
				socklen_t len = sizeof(so);
				if (getsockopt(pfd[j].fd, SOL_SOCKET, SO_ERROR, &so, &len) < 0)
					so = errno;
				keep = connected(&pfd[j], &sl[j], a, so, ret_errno);
			}
			pfd[j].revents = 0;
			if (keep)
				continue;
			close_slot(pfd[j].fd, &sl[j]);
			pfd[j].fd = -1; /* poll ignores it from now on */
			open--;
		}
	}
	for (size_t j = 0; j < k; j++)
		if (pfd[j].fd >= 0)
			close_slot(pfd[j].fd, &sl[j]);
}

static int probe(const char *const *hosts, size_t n, unsigned port, const struct ask *a,
		 int *ret_errno)
{
	if (port == 0 || port > 65535 || a->connect_ms <= 0 ||
	    (a->hello && (!a->hello_len || a->answer_ms <= 0)))
		return -EINVAL;
	for (size_t at = 0; at < n; at += OP_TCP_PROBE_BATCH) {
		size_t m = n - at < OP_TCP_PROBE_BATCH ? n - at : OP_TCP_PROBE_BATCH;
		round_of(hosts + at, m, port, a, ret_errno + at);
	}
	int up = 0;
	for (size_t i = 0; i < n; i++)
		up += ret_errno[i] == 0;
	return up;
}

int op_tcp_probe(const char *const *hosts, size_t n, unsigned port, long timeout_ms,
		 int *ret_errno)
{
	return probe(hosts, n, port, &(struct ask){ .connect_ms = timeout_ms }, ret_errno);
}

int op_tcp_probe_answer(const char *const *hosts, size_t n, unsigned port, long connect_ms,
			const void *hello, size_t hello_len, long answer_ms, int *ret_errno)
{
	if (!hello)
		return -EINVAL;
	struct ask a = { .connect_ms = connect_ms, .hello = hello, .hello_len = hello_len,
			 .answer_ms = answer_ms };
	return probe(hosts, n, port, &a, ret_errno);
}
