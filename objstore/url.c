/* objstore/url.c - endpoint and destination parsing, SigV4 URI encoding,
 * canonical queries, XML escaping. Pure. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "objstore/internal.h"

static bool unreserved(unsigned char ch)
{
	return isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

int os_uri_encode(struct op_buf *b, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		int rc;
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			rc = op_buf_addc(b, (char)*p);
		} else {
			char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			rc = op_buf_add(b, esc, 3);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int os_query_add(struct op_buf *b, const char *name, const char *value)
{
	int rc = b->len ? op_buf_addc(b, '&') : 0;
	if (rc == 0)
		rc = os_uri_encode(b, name, false);
	if (rc == 0)
		rc = op_buf_addc(b, '=');
	if (rc == 0 && value)
		rc = os_uri_encode(b, value, false);
	return rc;
}

int os_xml_escape(struct op_buf *b, const char *s)
{
	for (const char *p = s; *p; p++) {
		const char *rep = NULL;
		switch (*p) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		}
		int rc = rep ? op_buf_adds(b, rep) : op_buf_addc(b, *p);
		if (rc < 0)
			return rc;
	}
	return 0;
}

bool os_key_valid(const char *key)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > OS_KEY_MAX || !op_utf8_valid(key, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			return false;
	return true;
}

/* host: a DNS name or IPv4 ([A-Za-z0-9.-], labels not starting/ending with
 * '-'), or a bracketed IPv6 literal ([0-9A-Fa-f:.]). */
static int parse_host(const char *s, size_t n, struct os_endpoint *ep, struct op_err *err)
{
	if (n && s[0] == '[') {
		if (n < 4 || s[n - 1] != ']' || n - 2 >= sizeof(ep->host))
			return op_err_set(err, -EINVAL, "bad IPv6 host");
		for (size_t i = 1; i < n - 1; i++)
			if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
				return op_err_set(err, -EINVAL, "bad IPv6 host");
		memcpy(ep->host, s + 1, n - 2);
		ep->host[n - 2] = '\0';
		return 0;
	}
	if (n == 0 || n > 253)
		return op_err_set(err, -EINVAL, "no host or host too long");
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
		if (ch == '.' ? (i == 0 || s[i - 1] == '.')
			      : !(isalnum(ch) || (ch == '-' && !edge)))
			return op_err_set(err, -EINVAL, "bad character in host at offset %zu", i);
	}
	memcpy(ep->host, s, n);
	ep->host[n] = '\0';
	return 0;
}

static int parse_port(const char *s, size_t n, unsigned *ret, struct op_err *err)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return op_err_set(err, -EINVAL, "bad port");
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return op_err_set(err, -EINVAL, "bad port");
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return op_err_set(err, -EINVAL, "port %u out of range", v);
	*ret = v;
	return 0;
}

static int endpoint_parse(const char *url, struct os_endpoint *ep, struct op_err *err)
{
	const char *p;
	if (!strncasecmp(url, "https://", 8)) {
		ep->tls = true, p = url + 8;
	} else if (!strncasecmp(url, "http://", 7)) {
		ep->tls = false, p = url + 7;
	} else {
		return op_err_set(err, -EINVAL, "scheme must be http or https");
	}
	if (strpbrk(url, "?#"))
		return op_err_set(err, -EINVAL, "query or fragment not allowed");
	size_t alen = strcspn(p, "/");
	if (memchr(p, '@', alen))
		return op_err_set(err, -EINVAL, "userinfo not allowed");
	if (p[alen] && strcmp(p + alen, "/"))
		return op_err_set(err, -EINVAL, "path not allowed (path-style requests add the bucket)");
	for (const char *q = url; *q; q++)
		if ((unsigned char)*q <= 0x20 || *q == 0x7f)
			return op_err_set(err, -EINVAL, "space or control character");
	/* the port colon: after a bracketed host, or the only colon */
	const char *close = p[0] == '[' ? memchr(p, ']', alen) : NULL;
	if (p[0] == '[' && !close)
		return op_err_set(err, -EINVAL, "bad IPv6 host");
	const char *hs = close ? close + 1 : p;
	const char *colon = memchr(hs, ':', alen - (size_t)(hs - p));
	size_t hlen = colon ? (size_t)(colon - p) : alen;
	ep->port = ep->tls ? 443 : 80;
	int rc = parse_host(p, hlen, ep, err);
	if (rc == 0 && colon)
		rc = parse_port(colon + 1, alen - hlen - 1, &ep->port, err);
	return rc;
}

int os_endpoint_parse(const char *url, struct os_endpoint *ret, struct op_err *err)
{
	struct os_endpoint ep = { 0 };
	if (!url)
		return op_err_set(err, -EINVAL, "endpoint URL: missing");
	int rc = endpoint_parse(url, &ep, err);
	if (rc < 0) {
		op_err_prefix(err, "endpoint URL \"%.200s\"", url);
		return rc;
	}
	*ret = ep;
	return 0;
}

bool os_bucket_valid(const char *s, size_t n)
{
	if (n < 3 || n > OS_BUCKET_MAX || !isalnum((unsigned char)s[0]) ||
	    !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
		      s[i] == '.'))
			return false;
	return true;
}

static int dest_parse(const char *s, struct os_dest *d, struct op_err *err)
{
	if (strncmp(s, "s3://", 5))
		return op_err_set(err, -EINVAL, "must start with s3://");
	s += 5;
	size_t blen = strcspn(s, "/");
	if (!os_bucket_valid(s, blen))
		return op_err_set(err, -EINVAL, "bad bucket name (3-63 of a-z 0-9 . -)");
	memcpy(d->bucket, s, blen);
	d->bucket[blen] = '\0';
	const char *p = s + blen;
	while (*p == '/')
		p++;
	size_t plen = strlen(p);
	while (plen && p[plen - 1] == '/')
		plen--;
	if (plen > OS_KEY_MAX - 256) /* room for the server name and object names */
		return op_err_set(err, -EINVAL, "path too long");
	memcpy(d->prefix, p, plen);
	d->prefix[plen] = '\0';
	if (strstr(d->prefix, "//"))
		return op_err_set(err, -EINVAL, "empty path segment");
	if (plen && !os_key_valid(d->prefix))
		return op_err_set(err, -EINVAL, "path is not valid UTF-8 or has a control character");
	return 0;
}

int os_dest_parse(const char *s3url, struct os_dest *ret, struct op_err *err)
{
	struct os_dest d;
	if (!s3url)
		return op_err_set(err, -EINVAL, "destination path: missing");
	int rc = dest_parse(s3url, &d, err);
	if (rc < 0) {
		op_err_prefix(err, "destination path \"%.200s\"", s3url);
		return rc;
	}
	*ret = d;
	return 0;
}
