/* tests/fuzz/fuzz_apiserver.c - what the live API parses from a request:
 * method, path, fieldSelector, Accept and X-Remote-* headers (apiserver/).
 *
 * Input: lines "METHOD\nPATH\nFIELDSELECTOR\nACCEPT\nHeader: value\n...".
 * Invariants besides memory safety:
 *   - as_parse_path answers 0, -ENOENT, -EINVAL or -EOPNOTSUPP (with a
 *     message); on 0 the namespace and name hold only [a-z0-9.-], the verb
 *     is one of get/list/watch/create and a resource target has a resource;
 *   - as_fieldsel_parse answers 0 or -EINVAL, at most AS_FIELD_TERMS_MAX terms;
 *   - headers never give more than AS_MAX_GROUPS groups / AS_MAX_EXTRA extras,
 *     and the SubjectAccessReview body built from them is valid JSON.
 * Seeds: tests/fuzz/corpus/apiserver/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/internal.h"
#include "support/alloc.h"
#include "support/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *next_line(char **p)
{
	if (!*p)
		return NULL;
	char *s = *p, *e = strchr(s, '\n');
	if (e) {
		*e = '\0';
		*p = e + 1;
	} else {
		*p = NULL;
	}
	return s;
}

static bool name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
			return false;
	return true;
}

static const char cm[] = "{\"data\":{\"requestheader-client-ca-file\":\"-----BEGIN CERTIFICATE-----\","
			 "\"requestheader-allowed-names\":\"[\\\"front-proxy-client\\\"]\"}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	char *buf = op_strndup((const char *)data, size); /* stops at a NUL */
	char *p = buf;
	const char *method = next_line(&p), *path = next_line(&p), *fs = next_line(&p),
		   *accept = next_line(&p);
	if (!method || !path)
		goto out;
	struct as_reqinfo ri;
	struct op_err err = OP_ERR_INIT;
	int r = as_parse_path(method, path, fs && *fs == 'w', &ri, &err);
	if (r != 0 && r != -ENOENT && r != -EINVAL && r != -EOPNOTSUPP)
		abort();
	if (r < 0 && !err.msg[0])
		abort();
	if (r == 0) {
		if (!name_ok(ri.ns) || !name_ok(ri.name))
			abort();
		if (strcmp(ri.verb, "get") && strcmp(ri.verb, "list") && strcmp(ri.verb, "watch") &&
		    strcmp(ri.verb, "create"))
			abort();
		if (ri.target == AS_T_RESOURCE && !ri.res)
			abort();
	}
	struct as_fieldsel f;
	r = as_fieldsel_parse(fs, &f, NULL);
	if ((r != 0 && r != -EINVAL) || (r == 0 && f.n > AS_FIELD_TERMS_MAX))
		abort();
	if (r == 0)
		(void)as_fieldsel_match(&f, "ns", "name");
	(void)as_accept_table(accept);
	(void)as_accept_v2(accept);

	json_object *o = json_tokener_parse(cm);
	struct as_authn_cfg c;
	if (!o || as_authn_parse(o, &c, NULL) < 0)
		abort();
	json_object_put(o);
	struct as_user u = { 0 };
	for (char *line; (line = next_line(&p));) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		as_authn_header(&c, &u, line, colon[1] == ' ' ? colon + 2 : colon + 1);
	}
	if (u.n_groups > AS_MAX_GROUPS || u.n_extra > AS_MAX_EXTRA)
		abort();
	if (as_authn_finish(&u, NULL) == 0) {
		struct as_attrs a = { .resource = r == 0, .verb = "get", .resource_name = "clusters",
				      .subresource = "", .ns = "", .name = "", .path = path };
		char *body = as_sar_body(&u, &a);
		json_object *b = json_tokener_parse(body);
		if (!b)
			abort();
		json_object_put(b);
		free(body);
		free(as_sar_key(&u, &a));
	}
	as_user_done(&u);
	as_authn_cfg_done(&c);
out:
	free(buf);
	return 0;
}
