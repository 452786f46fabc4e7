/* support/log.c - JSON-lines logger (see log.h). */
#include "support/log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "support/buf.h"

static enum op_log_level log_level = OP_LOG_INFO;
static int log_fd = 2;
static const char *log_component;

static const char *const level_names[] = {
	[OP_LOG_DEBUG] = "debug", [OP_LOG_INFO] = "info",   [OP_LOG_WARN] = "warn",
	[OP_LOG_ERROR] = "error", [OP_LOG_FATAL] = "fatal",
};

void op_log_set_level(enum op_log_level lvl) { log_level = lvl; }
enum op_log_level op_log_get_level(void) { return log_level; }
void op_log_set_fd(int fd) { log_fd = fd; }
void op_log_set_component(const char *name) { log_component = name; }
bool op_log_enabled(enum op_log_level lvl) { return lvl >= log_level; }

int op_log_parse_level(const char *s, enum op_log_level *ret_lvl)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (s && strcasecmp(s, level_names[i]) == 0) {
			*ret_lvl = (enum op_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* {"ts":...,"level":...,"logger":...,"msg":... : the start of every line. */
static int line_start(struct op_buf *b, enum op_log_level lvl, const char *logger,
		      const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char when[40];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	int r = op_buf_addf(b, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\"", when,
			    ts.tv_nsec / 1000000, level_names[lvl]);
	if (!r && logger) {
		r = op_buf_adds(b, ",\"logger\":");
		if (!r)
			r = op_buf_add_json_str(b, logger);
	}
	if (!r)
		r = op_buf_adds(b, ",\"msg\":");
	if (!r)
		r = op_buf_add_json_str(b, msg ? msg : "");
	return r;
}

static int add_pair(struct op_buf *b, const char *k, const char *v)
{
	int r = op_buf_addc(b, ',');
	if (!r)
		r = op_buf_add_json_str(b, k);
	if (!r)
		r = op_buf_addc(b, ':');
	if (!r)
		r = op_buf_add_json_str(b, v ? v : "");
	return r;
}

/* Ends the line (r: the first error building it) and writes it in one go. */
static void line_write(struct op_buf *b, int r)
{
	if (!r)
		r = op_buf_adds(b, "}\n");
	if (r) {
		/* A line too long for the cap: say so rather than lose the event silently. */
		op_buf_done(b);
		static const char tl[] = "{\"level\":\"error\",\"msg\":\"log line over size cap\"}\n";
		(void)!write(log_fd, tl, sizeof(tl) - 1);
		return;
	}
	const char *p = b->data;
	size_t left = b->len;
	while (left > 0) {
		ssize_t n = write(log_fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	op_buf_done(b);
}

static enum op_log_level known_level(enum op_log_level lvl)
{
	return (unsigned)lvl >= sizeof(level_names) / sizeof(level_names[0]) ? OP_LOG_ERROR : lvl;
}

void op_log_kv(enum op_log_level lvl, const char *msg, ...)
{
	if (!op_log_enabled(lvl))
		return;
	lvl = known_level(lvl);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = line_start(&b, lvl, log_component, msg);
	va_list ap;
	va_start(ap, msg);
	for (const char *k; !r && (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		r = add_pair(&b, k, v);
	}
	va_end(ap);
	line_write(&b, r);
}

void op_log_kvv(enum op_log_level lvl, const char *logger, const char *msg,
		const char *const *kv, size_t n_pairs)
{
	if (!op_log_enabled(lvl))
		return;
	lvl = known_level(lvl);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = line_start(&b, lvl, logger ? logger : log_component, msg);
	for (size_t i = 0; !r && i < n_pairs; i++)
		r = add_pair(&b, kv[2 * i], kv[2 * i + 1]);
	line_write(&b, r);
}
