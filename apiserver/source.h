/* apiserver/source.h - the as_source backed by a running reconciler. */
#ifndef PGOP_APISERVER_SOURCE_H
#define PGOP_APISERVER_SOURCE_H

#include "apiserver/apiserver.h"
#include "reconciler/live.h"

/* runner is borrowed: it must outlive the struct as_server using *ret. Until
 * the runner has reached the cluster, the source has no client and no data. */
void as_source_reconciler(struct rc_runner *runner, struct as_source *ret);

#endif
