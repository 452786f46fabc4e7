/* instance/mhd.h - libmicrohttpd callbacks both instance servers register
 * (instance/mhd.c). Internal to instance/. */
#ifndef PGOP_INSTANCE_MHD_H
#define PGOP_INSTANCE_MHD_H

#include <microhttpd.h>
#include <stdarg.h>

#include "support/http_conns.h"

/* MHD_OPTION_EXTERNAL_LOGGER; cls: the server's name (a static string). */
__attribute__((format(printf, 2, 0))) void inst_mhd_log(void *cls, const char *fmt, va_list ap);
/* MHD_OPTION_NOTIFY_CONNECTION; cls: the server's struct op_conns. Each
 * connection's struct op_conn is its socket context (owned, freed at close). */
void inst_mhd_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			    enum MHD_ConnectionNotificationCode toe);
/* MHD_OPTION_NOTIFY_COMPLETED; cls: the same op_conns: the next request on
 * the connection has its deadline. */
void inst_mhd_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			   enum MHD_RequestTerminationCode toe);

#endif
