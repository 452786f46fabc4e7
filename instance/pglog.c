/* instance/pglog.c - postgres's csvlog through a FIFO to the manager's log
 * (see pglog.h).
 */
#include "instance/pglog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/alloc.h"

/* csvlog's columns, in order (PostgreSQL 14..16; 13 lacks the last three). */
static const char *const columns[INST_PGLOG_COLUMNS] = {
	"log_time",	 "user_name",	     "database_name",
	"process_id",	 "connection_from",  "session_id",
	"session_line_num", "command_tag",	     "session_start_time",
	"virtual_transaction_id", "transaction_id", "error_severity",
	"sql_state_code", "message",	     "detail",
	"hint",		 "internal_query",   "internal_query_pos",
	"context",	 "query",	     "query_pos",
	"location",	 "application_name", "backend_type",
	"leader_pid",	 "query_id",
};
#define COL_SEVERITY 11
#define COL_MESSAGE 13

size_t inst_pglog_split(char *rec, size_t len, char **fields, size_t max)
{
	char *w = rec, *p = rec, *end = rec + len;
	size_t n = 0;
	while (n < max) {
		fields[n++] = w;
		if (p < end && *p == '"') {
			p++;
			while (p < end) {
				if (*p == '"') {
					if (p + 1 < end && p[1] == '"') {
						*w++ = '"';
						p += 2;
						continue;
					}
					p++;
					break;
				}
				*w++ = *p++;
			}
			while (p < end && *p != ',') /* nothing belongs after a closing quote */
				p++;
		} else {
			while (p < end && *p != ',')
				*w++ = *p++;
		}
		bool more = p < end && *p == ',';
		*w++ = '\0'; /* w <= p: at most over the comma, read above */
		if (!more)
			break;
		p++;
	}
	return n;
}

static const struct {
	const char *severity;
	enum op_log_level level;
} levels[] = {
	{ "LOG", OP_LOG_INFO },	    { "INFO", OP_LOG_INFO },   { "NOTICE", OP_LOG_INFO },
	{ "WARNING", OP_LOG_WARN }, { "ERROR", OP_LOG_ERROR }, { "FATAL", OP_LOG_ERROR },
	{ "PANIC", OP_LOG_ERROR },
};

enum op_log_level inst_pglog_level(const char *severity)
{
	if (!severity)
		return OP_LOG_INFO;
	if (strncasecmp(severity, "DEBUG", 5) == 0)
		return OP_LOG_DEBUG;
	for (size_t i = 0; i < OP_ARRAY_SIZE(levels); i++)
		if (strcasecmp(severity, levels[i].severity) == 0)
			return levels[i].level;
	return OP_LOG_INFO;
}

/* Cuts a field longer than INST_PGLOG_FIELD_MAX in place, ending it "...". */
static const char *cut(char *f)
{
	if (strnlen(f, INST_PGLOG_FIELD_MAX + 1) > INST_PGLOG_FIELD_MAX)
		memcpy(f + INST_PGLOG_FIELD_MAX - 3, "...", 4);
	return f;
}

void inst_pglog_emit(char *rec, size_t len)
{
	char *f[INST_PGLOG_COLUMNS];
	size_t n = inst_pglog_split(rec, len, f, INST_PGLOG_COLUMNS);
	const char *kv[2 * INST_PGLOG_COLUMNS];
	size_t pairs = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == COL_MESSAGE || !*f[i])
			continue;
		kv[2 * pairs] = columns[i];
		kv[2 * pairs + 1] = cut(f[i]);
		pairs++;
	}
	enum op_log_level lvl = inst_pglog_level(n > COL_SEVERITY ? f[COL_SEVERITY] : NULL);
	op_log_kvv(lvl, "postgres", n > COL_MESSAGE ? cut(f[COL_MESSAGE]) : cut(f[0]), kv, pairs);
}

/* The record being read: bytes up to the newline that is not quoted. */
struct reader {
	char *rec; /* INST_PGLOG_RECORD_MAX + 1 */
	size_t len;
	bool quoted;
};

static void feed(struct reader *r, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '"')
			r->quoted = !r->quoted; /* "" toggles twice: still right */
		if (c == '\n' && !r->quoted) {
			if (r->len > 0) {
				r->rec[r->len] = '\0';
				inst_pglog_emit(r->rec, r->len);
			}
			r->len = 0;
			continue;
		}
		if (r->len < INST_PGLOG_RECORD_MAX)
			r->rec[r->len++] = c; /* past the cap: dropped until the record ends */
	}
}

static void *pglog_main(void *arg)
{
	struct inst_pglog *l = arg;
	struct reader r = { .rec = op_malloc(INST_PGLOG_RECORD_MAX + 1) };
	char buf[8192];
	for (;;) {
		struct pollfd pfd[2] = { { .fd = l->fd, .events = POLLIN },
					 { .fd = l->stop[0], .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			op_log_error("postgres log: poll failed, no more postgres records", "error",
				     strerror(errno));
			break;
		}
		for (;;) { /* what is there now; our own write end means no end of file */
			ssize_t n = read(l->fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			feed(&r, buf, (size_t)n);
		}
		if (pfd[1].revents)
			break;
	}
	free(r.rec);
	return NULL;
}

static void close_all(struct inst_pglog *l)
{
	int *fds[] = { &l->fd, &l->keep, &l->stop[0], &l->stop[1] };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int inst_pglog_start(struct inst_pglog *l, const char *log_dir, struct op_err *err)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s", log_dir, INST_PGLOG_FILE);
	struct stat st;
	int r = 0;
	/* a regular file there holds records nobody reads (an older manager's) */
	if (lstat(path, &st) == 0 && !S_ISFIFO(st.st_mode) && unlink(path) < 0)
		return op_err_set(err, -errno, "postgres log: unlink \"%s\": %s", path,
				  strerror(errno));
	if (mkfifo(path, 0600) < 0 && errno != EEXIST)
		return op_err_set(err, -errno, "postgres log: mkfifo \"%s\": %s", path,
				  strerror(errno));
	if (lstat(path, &st) < 0 || !S_ISFIFO(st.st_mode))
		return op_err_set(err, -EEXIST, "postgres log: \"%s\" is not a FIFO", path);
	/* the read end first: opening the write end of a FIFO nobody reads fails */
	l->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (l->fd < 0) {
		r = op_err_set(err, -errno, "postgres log: open \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	l->keep = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (l->keep < 0 || pipe2(l->stop, O_CLOEXEC) < 0) {
		r = op_err_set(err, -errno, "postgres log: \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	int e = pthread_create(&l->thread, NULL, pglog_main, l);
	if (e) {
		r = op_err_set(err, -e, "postgres log: thread: %s", strerror(e));
		goto fail;
	}
	l->started = true;
	return 0;
fail:
	close_all(l);
	/* nobody reads it: postgres's logging collector would block opening it */
	unlink(path);
	return r;
}

void inst_pglog_stop(struct inst_pglog *l)
{
	if (l->started) {
		(void)!write(l->stop[1], "x", 1);
		pthread_join(l->thread, NULL);
		l->started = false;
	}
	close_all(l);
}
