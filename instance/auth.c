/* instance/auth.c - which status-server endpoints need the operator's client
 * certificate (docs/instance-contract.md): one static table. */
#include <string.h>

#include "instance/instance.h"
#include "support/alloc.h"

/* The operator's client certificate is required for the status: it names
 * the primary, LSNs and replication state, and answering it costs a database
 * connection; and for the cut (a replica stops streaming from a primary that
 * neither it nor the operator can reach, instance/cut.c), the one endpoint that
 * changes state; and for base backups (POST starts one, GET reports it:
 * instance/backupjob.c), which read the data and write to the object store.
 * Role changes go through Cluster.status (targetPrimary), never
 * over HTTP. The probes stay open and answer from the supervisor's flags. */
static const struct {
	const char *method, *path;
	bool protected_; /* needs a CA-signed clientAuth cert with CN pgop-operator */
} routes[] = {
	{ "GET", "/pg/status", true }, { "POST", "/pg/cut", true },
	{ "POST", "/pg/backup", true }, { "GET", "/pg/backup", true }, { "GET", "/healthz", false },
	{ "GET", "/readyz", false },   { "GET", "/startupz", false },
};

static int find(const char *method, const char *path, bool *ret_path_known)
{
	*ret_path_known = false;
	for (size_t i = 0; i < OP_ARRAY_SIZE(routes); i++) {
		if (strcmp(routes[i].path, path) != 0)
			continue;
		*ret_path_known = true;
		if (strcmp(routes[i].method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0))
			return (int)i;
	}
	return -1;
}

bool inst_route_is_protected(const char *method, const char *path)
{
	bool known;
	int i = find(method, path, &known);
	return i >= 0 && routes[i].protected_;
}

unsigned inst_auth_decide(const char *method, const char *path, enum inst_peer_cert peer,
			  const char *cn)
{
	bool known;
	int i = find(method, path, &known);
	if (i < 0)
		return known ? 405 : 404;
	if (!routes[i].protected_)
		return 0;
	if (peer == INST_PEER_NONE || peer == INST_PEER_UNTRUSTED)
		return 401;
	if (peer != INST_PEER_TRUSTED) /* INST_PEER_NOT_CLIENT: right CA, wrong purpose */
		return 403;
	if (!cn || strcmp(cn, INST_OPERATOR_CN) != 0)
		return 403;
	return 0;
}
