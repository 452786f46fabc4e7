/* tests/unit/test_support_tcp_probe.c - op_tcp_probe (support/tcp_probe.h) on
 * loopback only: a listener connects, a closed port is refused, a listener
 * whose accept queue is full drops the SYN (as a partitioned host does) and
 * times out within the deadline, more hosts than one round, bad input; and
 * op_tcp_probe_answer: a server that answers, closes or resets counts, one
 * that accepts (its kernel does) but never reads or writes is ETIME. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "support/tcp_probe.h"

#include <cmocka.h>

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback listener with the given backlog; *ret_port its port. */
static int listener(int backlog, unsigned *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static void test_connects_and_refused(void **state)
{
	(void)state;
	unsigned up_port = 0, gone_port = 0;
	int up = listener(16, &up_port);
	int gone = listener(16, &gone_port);
	close(gone); /* nothing listens there any more: RST */
	const char *hosts[] = { "127.0.0.1" };
	int e[1] = { -1 };
	assert_int_equal(op_tcp_probe(hosts, 1, up_port, 1000, e), 1);
	assert_int_equal(e[0], 0);
	assert_int_equal(op_tcp_probe(hosts, 1, gone_port, 1000, e), 0);
	assert_int_equal(e[0], ECONNREFUSED);
	close(up);
}

/* A full accept queue drops SYNs: the connect neither succeeds nor fails, as
 * with a partitioned host, and the probe gives up at its deadline. */
static void test_dropped_syn_times_out(void **state)
{
	(void)state;
	unsigned port = 0;
	int l = listener(0, &port);
	/* fill the accept queue (backlog 0 holds one connection) */
	int filler = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	assert_int_equal(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0);
	const char *hosts[] = { "127.0.0.1", "127.0.0.1" };
	int e[2] = { -1, -1 };
	long long t0 = mono_ms();
	assert_int_equal(op_tcp_probe(hosts, 2, port, 300, e), 0);
	long long took = mono_ms() - t0;
	assert_int_equal(e[0], ETIMEDOUT);
	assert_int_equal(e[1], ETIMEDOUT);
	assert_true(took >= 250);  /* it did wait for the SYN-ACK */
	assert_true(took < 3000); /* and not for the kernel's SYN retries */
	close(filler);
	close(l);
}

/* More hosts than one round; bad addresses fail alone. */
static void test_rounds_and_bad_input(void **state)
{
	(void)state;
	unsigned port = 0;
	int l = listener(1024, &port);
	enum { N = OP_TCP_PROBE_BATCH + 44 };
	const char *hosts[N];
	int e[N];
	for (size_t i = 0; i < N; i++)
		hosts[i] = "127.0.0.1";
	hosts[7] = "not-an-ip";
	hosts[OP_TCP_PROBE_BATCH + 3] = NULL;
	hosts[OP_TCP_PROBE_BATCH + 4] = "::1";
	int r = op_tcp_probe(hosts, N, port, 2000, e);
	assert_int_equal(e[7], EINVAL);
	assert_int_equal(e[OP_TCP_PROBE_BATCH + 3], EINVAL);
	/* an IPv4 listener: ::1 is refused (or unreachable without IPv6) */
	assert_int_not_equal(e[OP_TCP_PROBE_BATCH + 4], 0);
	for (size_t i = 0; i < N; i++)
		if (i != 7 && i != OP_TCP_PROBE_BATCH + 3 && i != OP_TCP_PROBE_BATCH + 4)
			assert_int_equal(e[i], 0);
	assert_int_equal(r, N - 3);
	assert_int_equal(op_tcp_probe(hosts, 1, 0, 100, e), -EINVAL);
	assert_int_equal(op_tcp_probe(hosts, 1, port, 0, e), -EINVAL);
	assert_int_equal(op_tcp_probe(hosts, 0, port, 100, e), 0);
	close(l);
}

/* A server thread: accepts one connection, reads the hello and then answers
 * per mode: 'w' writes a byte, 'c' closes, 'r' resets. */
struct server {
	int fd;
	char mode;
	char got[16];
	ssize_t got_len;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	int c = accept(s->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	s->got_len = read(c, s->got, sizeof(s->got));
	if (s->mode == 'w')
		(void)!write(c, "x", 1);
	if (s->mode == 'r') {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		(void)setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	usleep(100 * 1000); /* let the probe read before close */
	close(c);
	return NULL;
}

static void test_answer(void **state)
{
	(void)state;
	const char *hosts[] = { "127.0.0.1" };
	static const char modes[] = { 'w', 'c', 'r' };
	for (size_t m = 0; m < sizeof(modes); m++) {
		unsigned port = 0;
		struct server s = { .fd = listener(4, &port), .mode = modes[m] };
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, serve_one, &s), 0);
		int e[1] = { -1 };
		assert_int_equal(op_tcp_probe_answer(hosts, 1, port, 1000, "hello", 5, 2000, e), 1);
		assert_int_equal(e[0], 0);
		pthread_join(th, NULL);
		assert_int_equal(s.got_len, 5);
		assert_memory_equal(s.got, "hello", 5);
		close(s.fd);
	}
}

/* A listener nobody accepts from (a frozen process: the kernel completes the
 * handshake and buffers the bytes): connected, silent, ETIME after answer_ms. */
static void test_answer_silent(void **state)
{
	(void)state;
	unsigned port = 0, gone_port = 0;
	int l = listener(16, &port);
	int gone = listener(16, &gone_port);
	close(gone);
	const char *hosts[] = { "127.0.0.1" };
	int e[1] = { -1 };
	long long t0 = mono_ms();
	assert_int_equal(op_tcp_probe_answer(hosts, 1, port, 1000, "hello", 5, 300, e), 0);
	long long took = mono_ms() - t0;
	assert_int_equal(e[0], ETIME);
	assert_true(took >= 250);
	assert_true(took < 3000);
	assert_int_equal(op_tcp_probe_answer(hosts, 1, gone_port, 1000, "hello", 5, 300, e), 0);
	assert_int_equal(e[0], ECONNREFUSED);
	assert_int_equal(op_tcp_probe_answer(hosts, 1, port, 1000, NULL, 5, 300, e), -EINVAL);
	assert_int_equal(op_tcp_probe_answer(hosts, 1, port, 1000, "hello", 0, 300, e), -EINVAL);
	assert_int_equal(op_tcp_probe_answer(hosts, 1, port, 1000, "hello", 5, 0, e), -EINVAL);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connects_and_refused),
		cmocka_unit_test(test_dropped_syn_times_out),
		cmocka_unit_test(test_rounds_and_bad_input),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_answer_silent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
