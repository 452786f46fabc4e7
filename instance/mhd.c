/* instance/mhd.c - what the status server (server.c) and the metrics server
 * (metrics_server.c) register with libmicrohttpd alike: its log lines, and
 * each connection in the server's connection table (support/http_conns.h:
 * per-IP caps and request deadlines). */
#include <stdarg.h>
#include <stdlib.h>

#include "instance/internal.h"
#include "instance/mhd.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/log.h"

void inst_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (op_buf_vaddf(&b, fmt, ap) == 0) {
		while (b.len && b.data[b.len - 1] == '\n')
			b.data[--b.len] = '\0';
		op_log_debug("libmicrohttpd", "server", cls ? (const char *)cls : "?", "detail",
			     op_buf_str(&b));
	}
	op_buf_done(&b);
}

void inst_mhd_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			    enum MHD_ConnectionNotificationCode toe)
{
	struct op_conns *conns = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct op_conn *c = op_calloc(1, sizeof(*c));
		op_conns_add(conns, c, ci ? ci->connect_fd : -1, op_conns_now_ns());
		*socket_context = c;
		return;
	}
	struct op_conn *c = *socket_context;
	if (!c)
		return;
	op_conns_remove(conns, c);
	free(c);
	*socket_context = NULL;
}

void inst_mhd_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	struct op_conns *conns = cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context)
		op_conns_done_request(conns, ci->socket_context, op_conns_now_ns());
}
