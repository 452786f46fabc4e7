/* instance/auth.c - which status-server endpoints need the operator's client
 * certificate (docs/instance-contract.md): one static table. */
#include <string.h>

#include "instance/instance.h"
#include "support/alloc.h"

static const struct {
	const char *method, *path;
	bool protected_; /* needs a CA-signed client cert with CN pgop-operator */
} routes[] = {
	{ "GET", "/pg/status", false },  { "GET", "/healthz", false },
	{ "GET", "/readyz", false },     { "GET", "/startupz", false },
	{ "POST", "/pg/promote", true }, { "POST", "/pg/demote", true },
	{ "POST", "/pg/reload", true },  { "POST", "/pg/restart", true },
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
	if (peer != INST_PEER_TRUSTED)
		return 401;
	if (!cn || strcmp(cn, INST_OPERATOR_CN) != 0)
		return 403;
	return 0;
}
