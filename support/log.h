/* support/log.h - structured JSON-lines logger with levels.
 *
 * One line per event on stderr (or a chosen fd):
 *   {"ts":"2026-12-02T10:40:09.123Z","level":"info","msg":"...","key":"value",...}
 * Key/value pairs are given as a NULL-terminated list of const char * pairs;
 * values are always JSON strings, escaped. Level-checking macros do not format
 * anything when the level is disabled. Thread-safe: one write(2) per line.
 */
#ifndef PGOP_SUPPORT_LOG_H
#define PGOP_SUPPORT_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "support/err.h"

enum op_log_level { OP_LOG_DEBUG, OP_LOG_INFO, OP_LOG_WARN, OP_LOG_ERROR, OP_LOG_FATAL };

/* Process-wide settings (the only mutable globals besides the parsed config). */
void op_log_set_level(enum op_log_level lvl);
enum op_log_level op_log_get_level(void);
/* Parses "debug|info|warn|error"; returns -EINVAL on anything else. */
OP_MUST_CHECK int op_log_parse_level(const char *s, enum op_log_level *ret_lvl);
void op_log_set_fd(int fd);
/* Component name added to every line as "logger" (borrowed, must outlive use). */
void op_log_set_component(const char *name);
bool op_log_enabled(enum op_log_level lvl);

/* Writes one line. msg: printf-style already formatted; kv: pairs then NULL. */
void op_log_kv(enum op_log_level lvl, const char *msg, ...) __attribute__((sentinel));

/* As op_log_kv for a line from another program (postgres's own records):
 * "logger" is the one given (NULL: the component), the pairs come in an
 * array of 2 * n_pairs strings (borrowed; a NULL value is written ""). */
void op_log_kvv(enum op_log_level lvl, const char *logger, const char *msg,
		const char *const *kv, size_t n_pairs);

#define op_log_debug(msg, ...)                                                                     \
	do {                                                                                       \
		if (op_log_enabled(OP_LOG_DEBUG))                                                  \
			op_log_kv(OP_LOG_DEBUG, msg, ##__VA_ARGS__, (const char *)NULL);           \
	} while (0)
#define op_log_info(msg, ...) op_log_kv(OP_LOG_INFO, msg, ##__VA_ARGS__, (const char *)NULL)
#define op_log_warn(msg, ...) op_log_kv(OP_LOG_WARN, msg, ##__VA_ARGS__, (const char *)NULL)
#define op_log_error(msg, ...) op_log_kv(OP_LOG_ERROR, msg, ##__VA_ARGS__, (const char *)NULL)

#endif
