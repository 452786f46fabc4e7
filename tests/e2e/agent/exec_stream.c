/* tests/e2e/agent/exec_stream.c - `kubectl exec` on the kubelet API.
 *
 * kubectl (1.30+) speaks WebSocket v5.channel.k8s.io to the kube-apiserver,
 * whose StreamTranslatorHandler (feature TranslateStreamCloseWebsocketRequests,
 * on by default) dials the kubelet with SPDY/3.1: POST
 * /exec/<ns>/<pod>/<container>?command=..&input=1&output=1&error=1[&tty=1],
 * Upgrade: SPDY/3.1, X-Stream-Protocol-Version v5..v1. We answer 101 with
 * v4.channel.k8s.io (kubelet.c), then the client opens one SPDY stream per
 * streamType header: error, stdin, stdout, stderr (without tty), resize (with
 * tty). Once they are all there the command runs as `pgop-node-agent exec`
 * (launch.c: the container's namespaces, mount tree, user, environment), its
 * output goes out as DATA frames, stdin DATA comes in, a FIN on stdin closes
 * its stdin. At exit stdout/stderr get a FIN and the error stream gets the
 * JSON Status of remotecommand v4 (Success, or NonZeroExitCode with the
 * ExitCode cause kubectl turns into its exit code) and a FIN. With tty=1 the
 * command gets a pseudo-terminal as its controlling terminal (stdin, stdout
 * and stderr), and the resize stream's {"Width":W,"Height":H} lines set its
 * window size.
 *
 * Limits: frames up to NA_SPDY_MAX_PAYLOAD, header blocks NA_SPDY_MAX_HEADERS,
 * stdin buffered up to 4 MiB (the socket is not read meanwhile), output
 * buffered up to 1 MiB (the pipes are not read meanwhile); 30 s for the
 * streams to arrive; a peer silent for 15 s after pinging (the apiserver pings
 * every 5 s), or 10 min without, ends the session and kills the command. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

extern char **environ;

#define STREAMS_TIMEOUT_MS 30000
/* Nothing from the peer for this long ends the session: a peer that pings
 * (the apiserver's translator, every 5 s) is gone after 3 missed pings; one
 * that does not gets the longer wait. libmicrohttpd 0.9.75 does not pass on
 * a TLS peer's close to the upgraded socket, so this is how a vanished peer
 * that sent no GOAWAY is noticed. */
#define IDLE_PINGING_MS 15000
#define IDLE_SILENT_MS (10 * 60 * 1000)
#define DRAIN_AFTER_EXIT_MS 2000 /* output still open after the command exited */
#define LINGER_MS 5000           /* for the peer to close after our last frame */
#define TTY_SIZE_WAIT_MS 500
#define STDIN_MAX (4u * 1024 * 1024)
#define OUT_HIGH (1u * 1024 * 1024)
#define CMD_MAX (64u * 1024)

/* ---------------------------------------------------------- pure parts */

int na_exec_parse_path(const char *url, struct na_exec_req *req)
{
	static const struct {
		const char *prefix;
		bool attach, portforward;
	} kinds[] = { { "/exec/", false, false },
		      { "/attach/", true, false },
		      { "/portForward/", false, true } };
	const char *p = NULL;
	memset(req, 0, sizeof(*req));
	for (size_t i = 0; i < OP_ARRAY_SIZE(kinds) && !p; i++)
		if (!strncmp(url, kinds[i].prefix, strlen(kinds[i].prefix))) {
			p = url + strlen(kinds[i].prefix);
			req->attach = kinds[i].attach;
			req->portforward = kinds[i].portforward;
		}
	if (!p)
		return -ENOENT;
	char *dst[3] = { req->ns, req->pod, req->ctr };
	int n_parts = req->portforward ? 2 : 3;
	for (int i = 0; i < n_parts; i++) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		bool last = i == n_parts - 1;
		if ((!last && !slash) || (last && slash) || !na_safe_component(p, n))
			return -EINVAL;
		memcpy(dst[i], p, n);
		dst[i][n] = '\0';
		p += n + (slash ? 1 : 0);
	}
	req->want[NA_EXEC_ERROR] = true;
	return 0;
}

static bool truthy(const char *v)
{
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true"));
}

int na_exec_add_arg(struct na_exec_req *req, const char *key, const char *value)
{
	static const struct {
		const char *key;
		int kind; /* -1: tty */
	} flags[] = { { "input", NA_EXEC_STDIN },   { "stdin", NA_EXEC_STDIN },
		      { "output", NA_EXEC_STDOUT }, { "stdout", NA_EXEC_STDOUT },
		      { "error", NA_EXEC_STDERR },  { "stderr", NA_EXEC_STDERR },
		      { "tty", -1 } };
	if (!key)
		return 0;
	if (!strcmp(key, "command")) {
		size_t total = 0;
		for (size_t i = 0; i < req->argc; i++)
			total += strlen(req->argv[i]) + 1;
		if (!value || req->argc >= NA_EXEC_MAX_ARGS || total + strlen(value) > CMD_MAX)
			return -E2BIG;
		req->argv[req->argc++] = op_strdup(value);
		return 0;
	}
	for (size_t i = 0; i < OP_ARRAY_SIZE(flags); i++)
		if (!strcmp(key, flags[i].key)) {
			if (flags[i].kind < 0)
				req->tty = truthy(value);
			else
				req->want[flags[i].kind] = truthy(value);
		}
	return 0;
}

void na_exec_req_done(struct na_exec_req *req)
{
	for (size_t i = 0; i < req->argc; i++)
		free(req->argv[i]);
	req->argc = 0;
	req->argv[0] = NULL;
}

int na_exec_kind(const char *stream_type)
{
	static const char *const names[NA_EXEC__N] = {
		[NA_EXEC_ERROR] = "error",   [NA_EXEC_STDIN] = "stdin",
		[NA_EXEC_STDOUT] = "stdout", [NA_EXEC_STDERR] = "stderr",
		[NA_EXEC_RESIZE] = "resize",
	};
	for (int i = 0; stream_type && i < NA_EXEC__N; i++)
		if (!strcmp(stream_type, names[i]))
			return i;
	return -1;
}

int na_exec_status_json(struct op_buf *b, int exit_code, const char *msg)
{
	int rc;
	if (msg)
		rc = op_buf_adds(b, "{\"metadata\":{},\"status\":\"Failure\",\"message\":") ||
		     op_buf_add_json_str(b, msg) ||
		     op_buf_adds(b, ",\"reason\":\"InternalError\",\"code\":500}");
	else if (exit_code == 0)
		rc = op_buf_adds(b, "{\"metadata\":{},\"status\":\"Success\"}");
	else
		rc = op_buf_addf(b,
				 "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command "
				 "terminated with non-zero exit code: exit status %d\",\"reason\":"
				 "\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
				 "\"ExitCode\",\"message\":\"%d\"}]}}",
				 exit_code, exit_code);
	return rc ? -EMSGSIZE : 0;
}

int na_exec_parse_resize(const char *line, size_t n, uint16_t *ret_w, uint16_t *ret_h)
{
	json_object *o = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_json_parse(line, n, 4, &o, &err) < 0)
		return -EINVAL;
	json_object *w, *h;
	int rc = -EINVAL;
	if (json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "Width", &w) &&
	    json_object_object_get_ex(o, "Height", &h) && json_object_is_type(w, json_type_int) &&
	    json_object_is_type(h, json_type_int)) {
		int64_t wv = json_object_get_int64(w), hv = json_object_get_int64(h);
		if (wv > 0 && wv <= UINT16_MAX && hv > 0 && hv <= UINT16_MAX) {
			*ret_w = (uint16_t)wv;
			*ret_h = (uint16_t)hv;
			rc = 0;
		}
	}
	json_object_put(o);
	return rc;
}

const char *na_exec_pick_protocol(const char *const *offered, size_t n)
{
	/* v4 only: v3 and older carry a plain error string, v5 adds a close
	 * signal only WebSocket needs (and every client since 1.5 offers v4) */
	static const char ours[] = "v4.channel.k8s.io";
	for (size_t i = 0; i < n; i++)
		if (offered[i] && !strcmp(offered[i], ours))
			return ours;
	return NULL;
}

/* ------------------------------------------------------------- session */

struct sess {
	int fd;
	const struct na_exec_req *req;
	const char *state_dir;
	struct na_spdy_z z;
	uint8_t *in;         /* received, not yet parsed (owned) */
	size_t in_len, in_cap;
	struct op_buf out;   /* frames not yet sent */
	struct op_buf pend;  /* stdin bytes not yet written to the command */
	uint32_t sid[NA_EXEC__N];
	uint32_t last_sid;
	bool stdin_fin, finished, peer_gone, pinged;
	pid_t pid;           /* 0: not started, -1: reaped */
	int exit_code;
	int fd_in, fd_out, fd_err; /* our ends of the command's pipes, -1 closed */
	struct op_buf resize; /* tty: a partial resize message */
	uint16_t win_w, win_h; /* tty: the last size asked for (0: none yet) */
	int64_t t0, last_rx, exited_at, ready_at;
	const char *why;     /* static: why the session ended early (for the log) */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool streams_ready(const struct sess *s)
{
	for (int k = 0; k < NA_EXEC__N; k++) {
		bool want = s->req->want[k];
		if (k == NA_EXEC_STDERR)
			want = want && !s->req->tty;
		if (k == NA_EXEC_RESIZE)
			want = s->req->tty;
		if (want && !s->sid[k])
			return false;
	}
	return true;
}

/* The command's stdio with tty=1: a pseudo-terminal whose slave becomes its
 * controlling terminal (POSIX_SPAWN_SETSID, then the open); the master is
 * fd_out (and resizes go to it), fd_in a dup of it. */
static int stdio_pty(struct sess *s, posix_spawn_file_actions_t *fa, struct op_err *err)
{
	char name[64];
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name))) {
		int e = errno;
		if (m >= 0)
			close(m);
		return op_err_set(err, -e, "pseudo-terminal: %s", strerror(e));
	}
	posix_spawn_file_actions_addopen(fa, 0, name, O_RDWR, 0);
	posix_spawn_file_actions_adddup2(fa, 0, 1);
	posix_spawn_file_actions_adddup2(fa, 0, 2);
	s->fd_out = m;
	s->fd_in = s->req->want[NA_EXEC_STDIN] ? fcntl(m, F_DUPFD_CLOEXEC, 3) : -1;
	return 0;
}

/* The command's stdio without tty: a pipe per stream asked for, /dev/null
 * for the others. Our ends go to s, the child's to *ret_child (closed by the
 * caller after the spawn). */
static int stdio_pipes(struct sess *s, posix_spawn_file_actions_t *fa, int ret_child[3],
		       struct op_err *err)
{
	static const int kinds[3] = { NA_EXEC_STDIN, NA_EXEC_STDOUT, NA_EXEC_STDERR };
	int *ours[3] = { &s->fd_in, &s->fd_out, &s->fd_err };
	for (int i = 0; i < 3; i++) {
		int p[2];
		if (!s->req->want[kinds[i]]) {
			posix_spawn_file_actions_addopen(fa, i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
			continue;
		}
		if (pipe2(p, O_CLOEXEC) < 0)
			return op_err_set(err, -errno, "pipe: %s", strerror(errno));
		*ours[i] = p[i ? 0 : 1];
		ret_child[i] = p[i ? 1 : 0];
		posix_spawn_file_actions_adddup2(fa, ret_child[i], i);
	}
	return 0;
}

/* Starts `pgop-node-agent exec NS/POD -c C -- CMD...` with its stdio. */
static int spawn_cmd(struct sess *s, struct op_err *err)
{
	const struct na_exec_req *r = s->req;
	_cleanup_free_ char *target = op_asprintf("%s/%s", r->ns, r->pod);
	const char *argv[NA_EXEC_MAX_ARGS + 10] = { "pgop-node-agent", "--state-dir", s->state_dir,
						     "exec", target, "-c", r->ctr, "--" };
	size_t n = 8;
	for (size_t i = 0; i < r->argc; i++)
		argv[n++] = r->argv[i];
	argv[n] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int child[3] = { -1, -1, -1 };
	posix_spawn_file_actions_init(&fa);
	int rc = r->tty ? stdio_pty(s, &fa, err) : stdio_pipes(s, &fa, child, err);
	/* as start.c: an empty signal mask and default dispositions (the agent
	 * blocks SIGTERM/INT/HUP and ignores SIGPIPE); a process group (with a
	 * tty: a session) of its own, so that ending the session kills
	 * everything the command started */
	posix_spawnattr_init(&at);
	sigset_t none, dflt;
	sigemptyset(&none);
	sigemptyset(&dflt);
	int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < OP_ARRAY_SIZE(sigs); i++)
		sigaddset(&dflt, sigs[i]);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dflt);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      (r->tty ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP));
	int se = rc < 0 ? 0 : posix_spawn(&s->pid, "/proc/self/exe", &fa, &at,
					   (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	for (int i = 0; i < 3; i++)
		close_fd(&child[i]);
	int *ours[] = { &s->fd_in, &s->fd_out, &s->fd_err };
	for (size_t i = 0; i < OP_ARRAY_SIZE(ours); i++)
		if (*ours[i] >= 0)
			fcntl(*ours[i], F_SETFL, fcntl(*ours[i], F_GETFL) | O_NONBLOCK);
	if (rc < 0)
		return rc;
	if (se) {
		s->pid = 0;
		return op_err_set(err, -se, "spawn exec: %s", strerror(se));
	}
	return 0;
}

/* The error stream's Status and FINs on every stream we write to. */
static void finish(struct sess *s, int exit_code, const char *msg)
{
	struct op_buf st = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int kinds[] = { NA_EXEC_STDOUT, NA_EXEC_STDERR };
	for (size_t i = 0; i < OP_ARRAY_SIZE(kinds); i++) {
		int *fd = kinds[i] == NA_EXEC_STDOUT ? &s->fd_out : &s->fd_err;
		if (s->sid[kinds[i]] && (*fd >= 0 || s->pid == 0))
			(void)na_spdy_put_data(&s->out, s->sid[kinds[i]], NA_SPDY_FLAG_FIN, NULL, 0);
		close_fd(fd);
	}
	if (s->sid[NA_EXEC_ERROR] && na_exec_status_json(&st, exit_code, msg) == 0)
		(void)na_spdy_put_data(&s->out, s->sid[NA_EXEC_ERROR], NA_SPDY_FLAG_FIN, st.data,
				       st.len);
	op_buf_done(&st);
	close_fd(&s->fd_in);
	s->finished = true;
}

static void on_syn_stream(struct sess *s, const struct na_spdy_frame *f)
{
	struct na_spdy_hdrs h;
	int rc = na_spdy_headers_decode(&s->z, f->data, f->len, &h);
	if (rc < 0) { /* the zlib stream is out of step: nothing more can be read */
		s->why = "bad SYN_STREAM headers";
		s->peer_gone = true;
		return;
	}
	int kind = na_exec_kind(na_spdy_hdr_get(&h, "streamtype"));
	na_spdy_hdrs_done(&h);
	if (kind < 0 || s->sid[kind] || f->stream_id <= s->last_sid || !(f->stream_id & 1)) {
		(void)na_spdy_put_ctrl(&s->out, NA_SPDY_RST_STREAM, f->stream_id, 1);
		return;
	}
	s->last_sid = f->stream_id;
	s->sid[kind] = f->stream_id;
	if (kind == NA_EXEC_STDIN && (f->flags & NA_SPDY_FLAG_FIN))
		s->stdin_fin = true;
	if (na_spdy_put_headers(&s->out, &s->z, NA_SPDY_SYN_REPLY, f->stream_id, 0, NULL, NULL,
				0) < 0)
		s->peer_gone = true;
}

/* tty: the window size on the master (now or once the command runs). */
static void apply_winsize(struct sess *s)
{
	struct winsize ws = { .ws_row = s->win_h, .ws_col = s->win_w };
	if (s->req->tty && s->fd_out >= 0 && s->win_w && s->win_h)
		ioctl(s->fd_out, TIOCSWINSZ, &ws);
}

/* Resize stream bytes: one JSON object a line, {"Width":W,"Height":H}. */
static void on_resize(struct sess *s, const uint8_t *d, size_t n)
{
	if (op_buf_add(&s->resize, d, n) < 0) { /* no newline in 4 KiB: not a size */
		op_buf_reset(&s->resize);
		return;
	}
	char *nl;
	while ((nl = memchr(s->resize.data, '\n', s->resize.len))) {
		size_t line = (size_t)(nl - s->resize.data);
		if (na_exec_parse_resize(s->resize.data, line, &s->win_w, &s->win_h) == 0)
			apply_winsize(s);
		memmove(s->resize.data, nl + 1, s->resize.len - line - 1);
		op_buf_truncate(&s->resize, s->resize.len - line - 1);
	}
}

static void on_frame(struct sess *s, const struct na_spdy_frame *f)
{
	struct na_spdy_hdrs h;
	switch (f->type) {
	case NA_SPDY_SYN_STREAM:
		on_syn_stream(s, f);
		break;
	case NA_SPDY_SYN_REPLY:
	case NA_SPDY_HEADERS: /* decoded only to keep the zlib stream in step */
		if (na_spdy_headers_decode(&s->z, f->data, f->len, &h) < 0)
			s->peer_gone = true;
		na_spdy_hdrs_done(&h);
		break;
	case NA_SPDY_DATA:
		if (f->stream_id == s->sid[NA_EXEC_STDIN] && !s->stdin_fin) {
			if (s->fd_in >= 0 || s->pid == 0) {
				if (op_buf_add(&s->pend, f->data, f->len) < 0)
					s->peer_gone = true;
			}
			s->stdin_fin = f->flags & NA_SPDY_FLAG_FIN;
		}
		else if (f->stream_id == s->sid[NA_EXEC_RESIZE] && s->sid[NA_EXEC_RESIZE])
			on_resize(s, f->data, f->len);
		break;
	case NA_SPDY_RST_STREAM:
		if (f->stream_id == s->sid[NA_EXEC_STDIN])
			s->stdin_fin = true;
		break;
	case NA_SPDY_PING:
		s->pinged = true;
		if (na_spdy_put_ctrl(&s->out, NA_SPDY_PING, f->stream_id, 0) < 0)
			s->peer_gone = true;
		break;
	case NA_SPDY_GOAWAY: /* the peer leaves (after our Status: the normal end) */
		s->peer_gone = true;
		break;
	default: /* SETTINGS, WINDOW_UPDATE (spdystream has no flow control) */
		break;
	}
}

/* Handles every whole frame received. */
static void parse_frames(struct sess *s)
{
	size_t off = 0;
	while (!s->peer_gone) {
		struct na_spdy_frame f;
		ssize_t n = na_spdy_parse(s->in + off, s->in_len - off, NA_SPDY_MAX_PAYLOAD, &f);
		if (n < 0) {
			s->why = n == -EMSGSIZE ? "frame over the size cap" : "malformed frame";
			s->peer_gone = true;
		}
		if (n <= 0)
			break;
		on_frame(s, &f);
		off += (size_t)n;
	}
	memmove(s->in, s->in + off, s->in_len - off);
	s->in_len -= off;
}

static void sock_read(struct sess *s)
{
	ssize_t r = recv(s->fd, s->in + s->in_len, s->in_cap - s->in_len, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		s->peer_gone = true;
		return;
	}
	s->last_rx = na_now_ms();
	s->in_len += (size_t)r;
	parse_frames(s);
}

static void sock_write(struct sess *s)
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

/* Command output on fd to stream kind: a DATA frame, or a FIN at EOF. */
static void pipe_read(struct sess *s, int *fd, int kind)
{
	char chunk[32 * 1024];
	ssize_t r = read(*fd, chunk, sizeof(chunk));
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 0) {
		if (na_spdy_put_data(&s->out, s->sid[kind], 0, chunk, (size_t)r) < 0)
			s->peer_gone = true;
		return;
	}
	(void)na_spdy_put_data(&s->out, s->sid[kind], NA_SPDY_FLAG_FIN, NULL, 0);
	close_fd(fd);
}

static void stdin_write(struct sess *s)
{
	ssize_t w = write(s->fd_in, s->pend.data, s->pend.len);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w <= 0) { /* the command closed its stdin: drop what it will not read */
		op_buf_reset(&s->pend);
		close_fd(&s->fd_in);
		return;
	}
	memmove(s->pend.data, s->pend.data + w, s->pend.len - (size_t)w);
	op_buf_truncate(&s->pend, s->pend.len - (size_t)w);
}

/* Timers and process state between two polls; false when the session ends. */
static bool tick(struct sess *s, const atomic_bool *stop)
{
	int64_t now = na_now_ms();
	if (atomic_load(stop))
		s->why = "agent stopping";
	else if (now - s->last_rx > (s->pinged ? IDLE_PINGING_MS : IDLE_SILENT_MS))
		s->why = "nothing from the peer (idle timeout)";
	if (s->why || s->peer_gone)
		return false;
	bool ready = s->pid == 0 && !s->finished && streams_ready(s);
	if (ready && !s->ready_at)
		s->ready_at = now;
	/* with a tty, the client's first resize follows its streams: the
	 * command starts with its window size when it comes within 0.5 s */
	if (ready && s->req->tty && !s->win_w && now - s->ready_at < TTY_SIZE_WAIT_MS)
		ready = false;
	if (ready) {
		struct op_err err = OP_ERR_INIT;
		if (spawn_cmd(s, &err) < 0)
			finish(s, 1, err.msg);
		apply_winsize(s);
	} else if (s->pid == 0 && !s->finished && now - s->t0 > STREAMS_TIMEOUT_MS) {
		s->why = "timed out waiting for the streams";
		return false;
	}
	if (s->pid > 0) {
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			s->pid = -1;
			s->exited_at = now;
		}
	}
	if (s->fd_in >= 0 && s->stdin_fin && s->pend.len == 0)
		close_fd(&s->fd_in);
	if (s->pid < 0 && !s->finished &&
	    ((s->fd_out < 0 && s->fd_err < 0) || now - s->exited_at > DRAIN_AFTER_EXIT_MS))
		finish(s, s->exit_code, NULL);
	if (s->finished && s->out.len == 0) {
		/* all sent: wait for the peer to close, so nothing is cut short */
		if (!s->exited_at)
			s->exited_at = now;
		if (now - s->exited_at > DRAIN_AFTER_EXIT_MS + LINGER_MS)
			return false;
	}
	return true;
}

static void serve_loop(struct sess *s, const atomic_bool *stop)
{
	while (tick(s, stop)) {
		struct pollfd p[4];
		int np = 0, i_sock, i_out = -1, i_err = -1, i_in = -1;
		bool room = s->out.len < OUT_HIGH;
		i_sock = np;
		p[np++] = (struct pollfd){ s->fd, 0, 0 };
		if (s->pend.len < STDIN_MAX - NA_SPDY_MAX_PAYLOAD && s->in_len < s->in_cap)
			p[i_sock].events |= POLLIN;
		if (s->out.len)
			p[i_sock].events |= POLLOUT;
		if (s->fd_out >= 0 && room) {
			i_out = np;
			p[np++] = (struct pollfd){ s->fd_out, POLLIN, 0 };
		}
		if (s->fd_err >= 0 && room) {
			i_err = np;
			p[np++] = (struct pollfd){ s->fd_err, POLLIN, 0 };
		}
		if (s->fd_in >= 0 && s->pend.len) {
			i_in = np;
			p[np++] = (struct pollfd){ s->fd_in, POLLOUT, 0 };
		}
		if (poll(p, (nfds_t)np, 200) <= 0)
			continue;
		if (p[i_sock].revents & POLLOUT)
			sock_write(s);
		if (p[i_sock].revents & (POLLIN | POLLHUP | POLLERR))
			sock_read(s);
		if (i_out >= 0 && p[i_out].revents && s->fd_out >= 0)
			pipe_read(s, &s->fd_out, NA_EXEC_STDOUT);
		if (i_err >= 0 && p[i_err].revents && s->fd_err >= 0)
			pipe_read(s, &s->fd_err, NA_EXEC_STDERR);
		if (i_in >= 0 && p[i_in].revents && s->fd_in >= 0)
			stdin_write(s);
	}
}

void na_exec_serve(int fd, const struct na_exec_req *req, const char *extra, size_t n_extra,
		   const char *state_dir, const atomic_bool *stop)
{
	struct sess s = {
		.fd = fd, .req = req, .state_dir = state_dir,
		.out = OP_BUF_INIT(OUT_HIGH + NA_SPDY_MAX_PAYLOAD + 64 * 1024),
		.pend = OP_BUF_INIT(STDIN_MAX),
		.fd_in = -1, .fd_out = -1, .fd_err = -1,
		.resize = OP_BUF_INIT(NA_EXEC_MAX_RESIZE_MSG),
	};
	s.t0 = s.last_rx = na_now_ms();
	s.in_cap = NA_SPDY_MAX_PAYLOAD + 8;
	if (n_extra > s.in_cap || na_spdy_z_init(&s.z) < 0)
		return;
	s.in = op_malloc(s.in_cap);
	memcpy(s.in, extra, n_extra);
	s.in_len = n_extra;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	parse_frames(&s);
	serve_loop(&s, stop);
	if (s.pid > 0) { /* ended early: the command goes with its session */
		if (!s.why)
			s.why = "the peer left before the command ended";
		kill(-s.pid, SIGKILL);
		while (waitpid(s.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (s.why)
		op_log_info("kubelet exec session ended early", "pod", req->pod, "container",
			    req->ctr, "why", s.why);
	close_fd(&s.fd_in);
	close_fd(&s.fd_out);
	close_fd(&s.fd_err);
	free(s.in);
	op_buf_done(&s.out);
	op_buf_done(&s.pend);
	op_buf_done(&s.resize);
	na_spdy_z_done(&s.z);
}
