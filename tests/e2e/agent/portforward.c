/* tests/e2e/agent/portforward.c - `kubectl port-forward` on the kubelet API.
 *
 * The kube-apiserver (PortForwardWebsockets, on by default) dials the kubelet
 * with SPDY/3.1, protocol portforward.k8s.io: POST /portForward/<ns>/<pod>
 * upgraded (kubelet.c), then per forwarded connection two streams with the
 * headers streamType (error | data), port and requestID. Once both are there
 * we connect to 127.0.0.1:<port> inside the pod's network namespace (a short
 * thread that setns()es, as the kubelet's runtime does with nsenter), copy
 * data both ways (a FIN on the data stream half-closes the TCP connection),
 * and at the connection's end FIN both streams; a failed connect writes the
 * kubelet's message on the error stream. Caps: NA_PF_MAX_REQ connections at
 * once, 4 MiB buffered toward a connection and 1 MiB toward the client (the
 * SPDY socket or the pod's sockets are not read meanwhile), the session timeouts of exec_stream.c. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "support/alloc.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

#define PF_BUF_MAX (1u * 1024 * 1024)  /* output waiting for the SPDY socket */
#define PF_PEND_MAX (4u * 1024 * 1024) /* client bytes waiting for a pod connection */
#define PF_IDLE_PINGING_MS 15000
#define PF_IDLE_SILENT_MS (10 * 60 * 1000)

struct pf_req {
	bool used;
	char id[32];
	uint16_t port;
	uint32_t err_sid, data_sid;
	int fd;            /* the TCP connection in the pod, -1 before/after */
	bool client_fin;   /* FIN on the data stream: shutdown(SHUT_WR) once pend is out */
	bool wr_shut;
	struct op_buf pend; /* client bytes not yet written to fd */
};

struct pf {
	int fd, netns;
	const char *pod;
	struct na_spdy_z z;
	uint8_t *in;
	size_t in_len, in_cap;
	struct op_buf out;
	uint32_t last_sid;
	struct pf_req req[NA_PF_MAX_REQ];
	bool peer_gone, pinged;
	int64_t last_rx;
	const char *why;
};

/* ------------------------------------------------------------ pure */

int na_pf_stream_key(const char *stream_type, const char *port, const char *request_id,
		     uint32_t stream_id, struct na_pf_key *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!stream_type || !port)
		return -EINVAL;
	ret->data = !strcmp(stream_type, "data");
	if (!ret->data && strcmp(stream_type, "error"))
		return -EINVAL;
	char *end;
	errno = 0;
	long p = strtol(port, &end, 10);
	if (errno || *end || end == port || p < 1 || p > 65535)
		return -EINVAL;
	ret->port = (uint16_t)p;
	/* clients before requestID: the error stream's id names the pair */
	if (!request_id || !*request_id)
		snprintf(ret->id, sizeof(ret->id), "%u", ret->data ? stream_id - 2 : stream_id);
	else if (strlen(request_id) >= sizeof(ret->id))
		return -EINVAL;
	else
		snprintf(ret->id, sizeof(ret->id), "%s", request_id);
	return 0;
}

const char *na_pf_pick_protocol(const char *const *offered, size_t n)
{
	static const char ours[] = "portforward.k8s.io";
	for (size_t i = 0; i < n; i++)
		if (offered[i] && !strcmp(offered[i], ours))
			return ours;
	return NULL;
}

/* ------------------------------------------------------------ session */

struct nsconn {
	int netns;
	uint16_t port;
	int fd, err;
};

/* A thread of its own: setns(CLONE_NEWNET) changes only the calling thread. */
static void *nsconn_main(void *arg)
{
	struct nsconn *c = arg;
	c->fd = -1;
	if (setns(c->netns, CLONE_NEWNET) < 0) {
		c->err = errno;
		return NULL;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		c->err = errno;
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	c->fd = fd;
	return NULL;
}

static void req_end(struct pf *s, struct pf_req *r)
{
	/* a half-open pair has one stream: no frame for stream 0 (SPDY forbids it) */
	if (r->data_sid)
		(void)na_spdy_put_data(&s->out, r->data_sid, NA_SPDY_FLAG_FIN, NULL, 0);
	if (r->err_sid)
		(void)na_spdy_put_data(&s->out, r->err_sid, NA_SPDY_FLAG_FIN, NULL, 0);
	if (r->fd >= 0)
		close(r->fd);
	op_buf_done(&r->pend);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

static void req_connect(struct pf *s, struct pf_req *r)
{
	struct nsconn c = { .netns = s->netns, .port = r->port, .fd = -1 };
	pthread_t t;
	if (pthread_create(&t, NULL, nsconn_main, &c) != 0)
		c.err = EAGAIN;
	else
		pthread_join(t, NULL);
	if (c.fd < 0) {
		_cleanup_free_ char *m = op_asprintf("error forwarding port %u to pod %s: %s",
						      r->port, s->pod, strerror(c.err));
		(void)na_spdy_put_data(&s->out, r->err_sid, 0, m, strlen(m));
		req_end(s, r);
		return;
	}
	fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
	r->fd = c.fd;
}

static struct pf_req *req_find(struct pf *s, const char *id, bool create)
{
	struct pf_req *free_slot = NULL;
	for (int i = 0; i < NA_PF_MAX_REQ; i++) {
		if (s->req[i].used && !strcmp(s->req[i].id, id))
			return &s->req[i];
		if (!s->req[i].used && !free_slot)
			free_slot = &s->req[i];
	}
	if (!create || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->fd = -1;
	free_slot->pend = OP_BUF_INIT(PF_PEND_MAX);
	snprintf(free_slot->id, sizeof(free_slot->id), "%s", id);
	return free_slot;
}

static struct pf_req *req_by_sid(struct pf *s, uint32_t sid)
{
	for (int i = 0; i < NA_PF_MAX_REQ; i++)
		if (s->req[i].used && (s->req[i].data_sid == sid || s->req[i].err_sid == sid))
			return &s->req[i];
	return NULL;
}

static void on_syn(struct pf *s, const struct na_spdy_frame *f)
{
	struct na_spdy_hdrs h;
	if (na_spdy_headers_decode(&s->z, f->data, f->len, &h) < 0) {
		s->why = "bad SYN_STREAM headers";
		s->peer_gone = true;
		return;
	}
	struct na_pf_key key;
	int rc = na_pf_stream_key(na_spdy_hdr_get(&h, "streamtype"), na_spdy_hdr_get(&h, "port"),
				  na_spdy_hdr_get(&h, "requestid"), f->stream_id, &key);
	na_spdy_hdrs_done(&h);
	struct pf_req *r = rc < 0 || f->stream_id <= s->last_sid || !(f->stream_id & 1)
				   ? NULL
				   : req_find(s, key.id, true);
	uint32_t *slot = r ? (key.data ? &r->data_sid : &r->err_sid) : NULL;
	if (!r || *slot || (r->port && r->port != key.port)) {
		(void)na_spdy_put_ctrl(&s->out, NA_SPDY_RST_STREAM, f->stream_id, 1);
		return;
	}
	s->last_sid = f->stream_id;
	*slot = f->stream_id;
	r->port = key.port;
	if (na_spdy_put_headers(&s->out, &s->z, NA_SPDY_SYN_REPLY, f->stream_id, 0, NULL, NULL,
				0) < 0)
		s->peer_gone = true;
	if (key.data && (f->flags & NA_SPDY_FLAG_FIN))
		r->client_fin = true;
	if (r->err_sid && r->data_sid)
		req_connect(s, r);
}

static void on_frame(struct pf *s, const struct na_spdy_frame *f)
{
	struct na_spdy_hdrs h;
	struct pf_req *r;
	switch (f->type) {
	case NA_SPDY_SYN_STREAM:
		on_syn(s, f);
		break;
	case NA_SPDY_SYN_REPLY:
	case NA_SPDY_HEADERS:
		if (na_spdy_headers_decode(&s->z, f->data, f->len, &h) < 0)
			s->peer_gone = true;
		na_spdy_hdrs_done(&h);
		break;
	case NA_SPDY_DATA:
		r = req_by_sid(s, f->stream_id);
		if (r && f->stream_id == r->data_sid && !r->client_fin) {
			if (op_buf_add(&r->pend, f->data, f->len) < 0)
				req_end(s, r);
			else
				r->client_fin = f->flags & NA_SPDY_FLAG_FIN;
		}
		break;
	case NA_SPDY_RST_STREAM:
		r = req_by_sid(s, f->stream_id);
		if (r)
			req_end(s, r);
		break;
	case NA_SPDY_PING:
		s->pinged = true;
		if (na_spdy_put_ctrl(&s->out, NA_SPDY_PING, f->stream_id, 0) < 0)
			s->peer_gone = true;
		break;
	case NA_SPDY_GOAWAY:
		s->peer_gone = true;
		break;
	default:
		break;
	}
}

static void pf_parse(struct pf *s);

static void pf_sock_read(struct pf *s)
{
	ssize_t n = recv(s->fd, s->in + s->in_len, s->in_cap - s->in_len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		s->peer_gone = true;
		return;
	}
	s->last_rx = na_now_ms();
	s->in_len += (size_t)n;
	pf_parse(s);
}

/* The whole frames in s->in, handled; a partial one stays. */
static void pf_parse(struct pf *s)
{
	size_t off = 0;
	while (!s->peer_gone) {
		struct na_spdy_frame f;
		ssize_t k = na_spdy_parse(s->in + off, s->in_len - off, NA_SPDY_MAX_PAYLOAD, &f);
		if (k < 0) {
			s->why = "malformed or oversized frame";
			s->peer_gone = true;
		}
		if (k <= 0)
			break;
		on_frame(s, &f);
		off += (size_t)k;
	}
	memmove(s->in, s->in + off, s->in_len - off);
	s->in_len -= off;
}

static void pf_sock_write(struct pf *s)
{
	ssize_t w = send(s->fd, s->out.data, s->out.len, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w <= 0) {
		s->peer_gone = true;
		return;
	}
	memmove(s->out.data, s->out.data + w, s->out.len - (size_t)w);
	op_buf_truncate(&s->out, s->out.len - (size_t)w);
}

/* The pod side of one connection: its bytes out as DATA, ours in. */
static void req_io(struct pf *s, struct pf_req *r, short revents)
{
	if ((revents & POLLOUT) && r->pend.len) {
		ssize_t w = send(r->fd, r->pend.data, r->pend.len, MSG_NOSIGNAL);
		if (w > 0) {
			memmove(r->pend.data, r->pend.data + w, r->pend.len - (size_t)w);
			op_buf_truncate(&r->pend, r->pend.len - (size_t)w);
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			req_end(s, r);
			return;
		}
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		char chunk[32 * 1024];
		ssize_t n = recv(r->fd, chunk, sizeof(chunk), 0);
		if (n > 0 && na_spdy_put_data(&s->out, r->data_sid, 0, chunk, (size_t)n) < 0)
			s->peer_gone = true;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			req_end(s, r);
			return;
		}
	}
	if (r->client_fin && !r->pend.len && !r->wr_shut) {
		shutdown(r->fd, SHUT_WR);
		r->wr_shut = true;
	}
}

static void pf_loop(struct pf *s, const atomic_bool *stop)
{
	while (!s->peer_gone) {
		int64_t now = na_now_ms();
		if (atomic_load(stop) ||
		    now - s->last_rx > (s->pinged ? PF_IDLE_PINGING_MS : PF_IDLE_SILENT_MS)) {
			s->why = atomic_load(stop) ? "agent stopping" : "idle timeout";
			break;
		}
		struct pollfd p[NA_PF_MAX_REQ + 1];
		int idx[NA_PF_MAX_REQ + 1], np = 1;
		bool room = s->out.len < PF_BUF_MAX;
		bool pend_room = true;
		for (int i = 0; i < NA_PF_MAX_REQ; i++) {
			struct pf_req *r = &s->req[i];
			if (!r->used || r->fd < 0)
				continue;
			pend_room = pend_room && r->pend.len < PF_PEND_MAX - NA_SPDY_MAX_PAYLOAD;
			short ev = (short)((room ? POLLIN : 0) | (r->pend.len ? POLLOUT : 0));
			idx[np] = i;
			p[np++] = (struct pollfd){ r->fd, ev, 0 };
		}
		p[0] = (struct pollfd){ s->fd, (short)((pend_room && s->in_len < s->in_cap ? POLLIN : 0) |
						       (s->out.len ? POLLOUT : 0)), 0 };
		if (poll(p, (nfds_t)np, 200) <= 0)
			continue;
		if (p[0].revents & POLLOUT)
			pf_sock_write(s);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			pf_sock_read(s);
		for (int k = 1; k < np && !s->peer_gone; k++)
			if (p[k].revents && s->req[idx[k]].used && s->req[idx[k]].fd == p[k].fd)
				req_io(s, &s->req[idx[k]], p[k].revents);
	}
}

void na_pf_serve(int fd, const struct na_exec_req *req, const char *extra, size_t n_extra,
		 const char *state_dir, const atomic_bool *stop)
{
	struct pf s = { .fd = fd, .netns = -1, .pod = req->pod,
			.out = OP_BUF_INIT(PF_BUF_MAX + NA_SPDY_MAX_PAYLOAD + 64 * 1024) };
	struct op_buf pidb = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	_cleanup_free_ char *pidfile = op_asprintf("%s/run/%s_%s.pid", state_dir, req->ns, req->pod);
	long pid = 0;
	if (na_read_file(pidfile, &pidb, NULL) == 0)
		pid = strtol(op_buf_str(&pidb), NULL, 10);
	op_buf_done(&pidb);
	_cleanup_free_ char *nsp = op_asprintf("/proc/%ld/ns/net", pid);
	s.netns = pid > 1 ? open(nsp, O_RDONLY | O_CLOEXEC) : -1;
	if (s.netns < 0 || na_spdy_z_init(&s.z) < 0) {
		op_log_info("kubelet port-forward: the pod's network namespace is gone", "pod",
			    req->pod);
		if (s.netns >= 0)
			close(s.netns);
		return;
	}
	for (int i = 0; i < NA_PF_MAX_REQ; i++)
		s.req[i].fd = -1;
	s.in_cap = NA_SPDY_MAX_PAYLOAD + 8;
	s.in = op_malloc(s.in_cap);
	/* frames that came with the request (the upgrade's read) are the first */
	s.in_len = n_extra < s.in_cap ? n_extra : 0;
	memcpy(s.in, extra, s.in_len);
	s.last_rx = na_now_ms();
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	pf_parse(&s);
	pf_loop(&s, stop);
	if (s.why)
		op_log_info("kubelet port-forward session ended", "pod", req->pod, "why", s.why);
	for (int i = 0; i < NA_PF_MAX_REQ; i++)
		if (s.req[i].used) {
			if (s.req[i].fd >= 0)
				close(s.req[i].fd);
			op_buf_done(&s.req[i].pend);
		}
	close(s.netns);
	free(s.in);
	op_buf_done(&s.out);
	na_spdy_z_done(&s.z);
}
