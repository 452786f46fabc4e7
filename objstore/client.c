/* objstore/client.c - the client and os_do(), the one place a request is
 * made: URL, headers, SigV4 through libcurl, timeouts, body callbacks with
 * caps, and errors named with the operation, the object and the cause. */
#include <ctype.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "objstore/internal.h"
#include "support/alloc.h"
#include "support/dl_curl.h"

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void os_client_free(struct os_client *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	free(c->base_url);
	free(c->bucket);
	free(c->sigv4);
	free(c->access);
	free_secret(c->secret);
	free_secret(c->token_hdr);
	for (size_t i = 0; i < OP_ARRAY_SIZE(c->put_hdrs); i++)
		free(c->put_hdrs[i]);
	op_memfile_close(&c->ca);
	free(c);
}

const char *os_client_bucket(const struct os_client *c) { return c->bucket; }

static int check_config(const struct os_config *cfg, struct op_err *err)
{
	struct os_dest d;
	_cleanup_free_ char *s3 = op_asprintf("s3://%.100s", cfg->bucket ? cfg->bucket : "");
	int rc = os_dest_parse(s3, &d, err);
	if (rc < 0)
		return rc;
	if (!cfg->access_key || !cfg->access_key[0] || !cfg->secret_key || !cfg->secret_key[0])
		return op_err_set(err, -EINVAL, "S3 credentials: access key and secret key required");
	for (const char *p = cfg->access_key; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.+/=", *p))
			return op_err_set(err, -EINVAL, "S3 access key: unexpected character");
	const char *reg = cfg->region ? cfg->region : "";
	if (strlen(reg) > 32 || strspn(reg, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(reg))
		return op_err_set(err, -EINVAL, "S3 region \"%.40s\": expected [a-z0-9-]", reg);
	if (cfg->session_token && strpbrk(cfg->session_token, "\r\n"))
		return op_err_set(err, -EINVAL, "S3 session token: line break");
	return 0;
}

static char *make_base_url(const struct os_config *cfg, const char *region, struct op_err *err)
{
	if (!cfg->endpoint)
		return op_asprintf("https://s3.%s.amazonaws.com/%s", region, cfg->bucket);
	struct os_endpoint ep;
	if (os_endpoint_parse(cfg->endpoint, &ep, err) < 0)
		return NULL;
	bool v6 = strchr(ep.host, ':') != NULL;
	return op_asprintf("%s://%s%s%s:%u/%s", ep.tls ? "https" : "http", v6 ? "[" : "", ep.host,
			   v6 ? "]" : "", ep.port, cfg->bucket);
}

int os_client_new(const struct os_config *cfg, struct os_client **ret, struct op_err *err)
{
	int rc = check_config(cfg, err);
	if (rc < 0)
		return rc;
	const char *region = cfg->region && cfg->region[0] ? cfg->region : "us-east-1";
	struct os_client *c = op_calloc(1, sizeof(*c));
	c->ca = OP_MEMFILE_INIT;
	c->base_url = make_base_url(cfg, region, err);
	if (!c->base_url) {
		os_client_free(c);
		return err ? err->code : -EINVAL;
	}
	c->bucket = op_strdup(cfg->bucket);
	c->sigv4 = op_asprintf("aws:amz:%s:s3", region);
	c->access = op_strdup(cfg->access_key);
	c->secret = op_strdup(cfg->secret_key);
	if (cfg->session_token)
		c->token_hdr = op_asprintf("x-amz-security-token: %s", cfg->session_token);
	c->insecure = cfg->insecure_skip_verify;
	c->connect_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
	c->request_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 60000;
	c->transfer_ms = cfg->transfer_timeout_ms > 0 ? cfg->transfer_timeout_ms : 30L * 60 * 1000;
	c->low_bytes = cfg->low_speed_bytes > 0 ? cfg->low_speed_bytes : 1024;
	c->low_secs = cfg->low_speed_seconds > 0 ? cfg->low_speed_seconds : 60;
	if (cfg->ca_pem && cfg->ca_pem_len)
		rc = op_memfile_open(&c->ca, "pgop-s3-ca", cfg->ca_pem, cfg->ca_pem_len, err);
	if (rc == 0)
		rc = op_dl_load(&op_dl_curl, err);
	if (rc == 0)
		rc = op_dl_load(&os_dl_expat, err); /* the XML answers (xml.c) */
	if (rc == 0 && !(c->h = curl_easy_init()))
		rc = op_err_set(err, -ENOMEM, "cannot create a libcurl handle");
	if (rc < 0) {
		os_client_free(c);
		return rc;
	}
	*ret = c;
	return 0;
}

int os_http_status_errno(long status)
{
	switch (status) {
	case 400: case 411: return -EINVAL;
	case 401: case 403: return -EACCES;
	case 404: return -ENOENT;
	case 405: case 501: return -EOPNOTSUPP;
	case 409: return -EBUSY;
	case 412: return -ECANCELED;
	case 413: return -EFBIG;
	case 416: return -ERANGE;
	case 429: case 503: return -EAGAIN;
	}
	if (status >= 300 && status < 400)
		return -EREMOTE; /* a redirect: another region or endpoint */
	return status >= 500 ? -EIO : -EPROTO;
}
