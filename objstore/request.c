/* objstore/request.c - os_do(): one S3 request through libcurl. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "objstore/internal.h"
#include "support/alloc.h"
#include "support/dl_curl.h"

/* The state of one transfer, shared by libcurl's callbacks. */
struct xfer {
	CURL *h;
	struct os_req *r;
	uint64_t sent;        /* request body bytes handed to libcurl */
	uint64_t got;         /* 2xx response body bytes consumed */
	struct op_buf errbody; /* non-2xx response body, OS_RESP_MAX_ERROR */
	bool errbody_over;
	int cb_rc;            /* a callback's or a cap's failure */
	const char *cb_why;
};

static bool status_ok(long st) { return st >= 200 && st < 300; }

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct os_req *r = x->r;
	size_t len = size * n;
	long st = 0;
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
	if (!status_ok(st)) {
		if (!x->errbody_over && op_buf_add(&x->errbody, p, len) < 0)
			x->errbody_over = true; /* keep the status, drop the body */
		return len;
	}
	if (x->got + len > r->max_body) {
		x->cb_rc = r->resp ? -EMSGSIZE : -EFBIG;
		x->cb_why = "response larger than its cap";
		return 0;
	}
	int rc = 0;
	if (r->write)
		rc = r->write(r->write_ud, p, len);
	else if (r->resp)
		rc = op_buf_add(r->resp, p, len);
	if (rc < 0) {
		x->cb_rc = rc;
		x->cb_why = r->write ? "write callback failed" : "response larger than its cap";
		return 0;
	}
	x->got += len;
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct os_req *r = x->r;
	uint64_t left = r->upload_size - x->sent;
	size_t want = size * n < left ? size * n : (size_t)left;
	if (want == 0)
		return 0;
	if (!r->read) {
		memcpy(buf, (const char *)r->body + x->sent, want);
		x->sent += want;
		return want;
	}
	ssize_t got = r->read(r->read_ud, buf, want);
	if (got <= 0 || (size_t)got > want) {
		x->cb_rc = got < 0 ? (int)got : -EIO;
		x->cb_why = got < 0 ? "read callback failed" : "source ended before the announced size";
		return CURL_READFUNC_ABORT;
	}
	x->sent += (uint64_t)got;
	return (size_t)got;
}

/* Rewinds a memory body (libcurl may resend it); a stream cannot be. */
static int on_seek(void *ud, curl_off_t off, int origin)
{
	struct xfer *x = ud;
	if (x->r->read || origin != SEEK_SET || off < 0 || (uint64_t)off > x->r->upload_size)
		return CURL_SEEKFUNC_CANTSEEK;
	x->sent = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

static void header_value(char *dst, size_t size, const char *v, size_t len)
{
	while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
		len--;
	snprintf(dst, size, "%.*s", (int)(len < size ? len : size - 1), v);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	struct os_object_info *in = &x->r->info;
	size_t len = size * n;
	char num[24];
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		*in = (struct os_object_info){ 0 }; /* a new response (after 100 Continue) */
	} else if (len > 15 && !strncasecmp(p, "content-length:", 15)) {
		header_value(num, sizeof(num), p + 15, len - 15);
		in->size = strtoull(num + strspn(num, " "), NULL, 10);
	} else if (len > 5 && !strncasecmp(p, "etag:", 5)) {
		header_value(in->etag, sizeof(in->etag), p + 5 + strspn(p + 5, " "), len - 5 - strspn(p + 5, " "));
	} else if (len > 14 && !strncasecmp(p, "last-modified:", 14)) {
		size_t sp = strspn(p + 14, " ");
		header_value(in->last_modified, sizeof(in->last_modified), p + 14 + sp, len - 14 - sp);
	}
	return len;
}

/* "s3://bucket/key" as messages show it (into dst). */
static void target_name(const struct os_client *c, const struct os_req *r, char *dst, size_t size)
{
	const char *k = r->shown ? r->shown : r->key ? r->key : "";
	snprintf(dst, size, "s3://%s/%.300s", c->bucket, k);
}

static int build_url(const struct os_client *c, const struct os_req *r, struct op_buf *url)
{
	int rc = op_buf_adds(url, c->base_url);
	if (rc == 0 && r->key) {
		rc = op_buf_addc(url, '/');
		if (rc == 0)
			rc = os_uri_encode(url, r->key, true);
	}
	if (rc == 0 && r->query && r->query[0]) {
		rc = op_buf_addc(url, '?');
		if (rc == 0)
			rc = op_buf_adds(url, r->query);
	}
	return rc;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char d[32];
	gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The header list: the payload hash (SigV4 signs it; libcurl uses the value
 * given), the session token, the caller's lines, the client's put attributes
 * when the request creates an object. NULL on allocation failure. */
static struct curl_slist *build_headers(const struct os_client *c, const struct os_req *r)
{
	char hash[65 + 22] = "x-amz-content-sha256: ";
	bool https = strncmp(c->base_url, "https://", 8) == 0;
	if (r->has_body && !r->read && (!https || r->body_len <= OS_SIGNED_BODY_MAX))
		sha256_hex(r->body, r->body_len, hash + 22);
	else if (r->has_body)
		snprintf(hash + 22, 65, "UNSIGNED-PAYLOAD");
	else
		sha256_hex("", 0, hash + 22);
	struct curl_slist *l = curl_slist_append(NULL, hash), *t;
	if (l && c->token_hdr && !(t = curl_slist_append(l, c->token_hdr)))
		goto fail;
	for (size_t i = 0; l && r->headers && r->headers[i]; i++)
		if (!(t = curl_slist_append(l, r->headers[i])))
			goto fail;
	for (size_t i = 0; l && r->put_attrs && c->put_hdrs[i]; i++)
		if (!(t = curl_slist_append(l, c->put_hdrs[i]))) /* x-amz-*: SigV4 signs them */
			goto fail;
	return l;
fail:
	curl_slist_free_all(l);
	return NULL;
}

static void set_options(struct os_client *c, struct os_req *r, struct xfer *x, const char *url,
			struct curl_slist *hdrs, char *errbuf)
{
	CURL *h = c->h;
	curl_easy_reset(h); /* keeps the connection cache */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->long_transfer ? c->transfer_ms : c->request_ms);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, c->low_bytes);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->low_secs);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
	curl_easy_setopt(h, CURLOPT_USERNAME, c->access);
	curl_easy_setopt(h, CURLOPT_PASSWORD, c->secret);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (c->ca.fd >= 0) {
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca.path);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL); /* only that CA */
	}
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	if (!strcmp(r->method, "HEAD"))
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(r->method, "GET"))
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	if (r->has_body) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->upload_size);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, x);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
	}
}

/* A transport failure: its kind and -errno. */
static int transport_errno(CURLcode cc, const char **kind)
{
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: *kind = "DNS"; return -EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT: *kind = "connect"; return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: *kind = "timeout"; return -ETIMEDOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_USE_SSL_FAILED: *kind = "TLS"; return -EPROTO;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE: *kind = "connection"; return -ECONNRESET;
	default: *kind = "transport"; return -EIO;
	}
}

static int http_error(const struct os_req *r, const struct xfer *x, const char *target,
		      struct op_err *err)
{
	struct os_s3_error e;
	int code = os_http_status_errno(r->status);
	if (!x->errbody_over && x->errbody.len &&
	    os_xml_parse_error(x->errbody.data, x->errbody.len, &e) == 0)
		return op_err_set(err, code, "%s %s: %ld %s: %s", r->op, target, r->status, e.code,
				  e.message[0] ? e.message : "(no message)");
	static const struct { long st; const char *name; } names[] = {
		{ 400, "BadRequest" }, { 403, "Forbidden" }, { 404, "NotFound" },
		{ 409, "Conflict" }, { 412, "PreconditionFailed" }, { 500, "InternalError" },
		{ 503, "ServiceUnavailable" },
	};
	const char *name = "HTTPError";
	for (size_t i = 0; i < OP_ARRAY_SIZE(names); i++)
		if (names[i].st == r->status)
			name = names[i].name;
	return op_err_set(err, code, "%s %s: %ld %s%s", r->op, target, r->status, name,
			  x->errbody_over ? " (error body past its cap)" : "");
}

int os_do(struct os_client *c, struct os_req *r, struct op_err *err)
{
	char target[OS_KEY_MAX + 128], errbuf[CURL_ERROR_SIZE] = "";
	struct op_buf url = OP_BUF_INIT(OS_KEY_MAX * 3 + 4096);
	struct xfer x = { .h = c->h, .r = r, .errbody = OP_BUF_INIT(OS_RESP_MAX_ERROR) };
	target_name(c, r, target, sizeof(target));
	if (r->has_body && !r->read)
		r->upload_size = r->body_len;
	if (!r->max_body)
		r->max_body = r->resp ? r->resp->max : OS_RESP_MAX_ERROR;
	if (build_url(c, r, &url) < 0)
		return op_err_set(err, -ENAMETOOLONG, "%s %s: URL too long", r->op, target);
	struct curl_slist *hdrs = build_headers(c, r);
	if (!hdrs) {
		op_buf_done(&url);
		return op_err_set(err, -ENOMEM, "%s %s: cannot allocate headers", r->op, target);
	}
	set_options(c, r, &x, op_buf_str(&url), hdrs, errbuf);
	CURLcode cc = curl_easy_perform(c->h);
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	op_buf_done(&url);
	int rc = 0;
	const char *kind;
	if (x.cb_rc && (x.cb_rc == -EFBIG || x.cb_rc == -EMSGSIZE))
		rc = op_err_set(err, x.cb_rc, "%s %s: %s (%llu bytes)", r->op, target, x.cb_why,
				(unsigned long long)r->max_body);
	else if (x.cb_rc)
		rc = op_err_set(err, x.cb_rc, "%s %s: %s", r->op, target, x.cb_why);
	else if (cc != CURLE_OK && !(r->status >= 300 && cc == CURLE_WRITE_ERROR)) {
		int code = transport_errno(cc, &kind);
		rc = op_err_set(err, code, "%s %s: %s: %s", r->op, target, kind,
				errbuf[0] ? errbuf : curl_easy_strerror(cc));
	} else if (!status_ok(r->status)) {
		rc = http_error(r, &x, target, err);
	}
	op_buf_done(&x.errbody);
	return rc;
}
