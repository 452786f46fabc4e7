/* objstore/tags.c - object tags (x-amz-tagging) and server-side encryption
 * (x-amz-server-side-encryption): S3's rules on a tag, the header value's
 * encoding, and the client's upload attributes (what its PutObject and
 * CreateMultipartUpload requests carry). The checks are pure: admission
 * (webhooks/rules_spec_backup.c) uses the same ones as the archiver. */
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

#include "objstore/internal.h"
#include "support/alloc.h"

static const char *const sse_values[] = { "AES256", "aws:kms" };

bool os_sse_valid(const char *v)
{
	for (size_t i = 0; v && i < OP_ARRAY_SIZE(sse_values); i++)
		if (strcmp(v, sse_values[i]) == 0)
			return true;
	return false;
}

/* The C.UTF-8 character classes (glibc's, built in since 2.35), made once
 * and kept for the process: S3 allows Unicode letters, numbers and spaces
 * (\p{L}\p{N}\p{Z}); glibc's alnum and space classes are close to those
 * (narrower: ½, ² and the no-break space are punctuation there; wider: some
 * combining vowel signs of Indic scripts count as letters), so what S3
 * refuses (€, ©, emoji) is refused at admission, not when archiving. (locale_t)0
 * when the locale is missing: non-ASCII characters are then refused. */
static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_locale_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* The code point of the k-byte sequence at p (valid UTF-8). */
static wint_t code_point(const unsigned char *p, size_t k)
{
	static const unsigned char lead_mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	wint_t cp = p[0] & lead_mask[k];
	for (size_t i = 1; i < k; i++)
		cp = (cp << 6) | (p[i] & 0x3f);
	return cp;
}

static bool tag_char(const unsigned char *p, size_t k)
{
	if (k == 1)
		return (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || (*p && strchr(" +-=._:/@", *p));
	pthread_once(&utf8_once, utf8_locale_init);
	if (utf8_locale == (locale_t)0)
		return false;
	wint_t cp = code_point(p, k);
	return iswalnum_l(cp, utf8_locale) || iswspace_l(cp, utf8_locale);
}

/* The number of characters of s, or -1 for invalid UTF-8 or a character
 * S3 does not allow in a tag. */
static long tag_chars(const char *s)
{
	long n = 0;
	size_t len = strlen(s);
	for (size_t i = 0; i < len; n++) {
		const unsigned char *p = (const unsigned char *)s + i;
		size_t k = op_utf8_seq_len(p, len - i);
		if (k == 0 || !tag_char(p, k))
			return -1;
		i += k;
	}
	return n;
}

int os_tag_check(const char *key, const char *value, struct op_err *err)
{
	static const char allowed[] = "letters, digits, spaces and + - = . _ : / @";
	long kn = key ? tag_chars(key) : -1, vn = value ? tag_chars(value) : -1;
	if (kn < 0)
		return op_err_set(err, -EINVAL, "tag key: only %s", allowed);
	if (kn < 1 || kn > (long)OS_TAG_KEY_MAX)
		return op_err_set(err, -EINVAL, "tag key: 1 to %u characters", OS_TAG_KEY_MAX);
	if (strncmp(key, "aws:", 4) == 0)
		return op_err_set(err, -EINVAL, "tag key: the prefix aws: is reserved by AWS");
	if (vn < 0)
		return op_err_set(err, -EINVAL, "tag value: only %s", allowed);
	if (vn > (long)OS_TAG_VALUE_MAX)
		return op_err_set(err, -EINVAL, "tag value: at most %u characters", OS_TAG_VALUE_MAX);
	return 0;
}

int os_tagging_add(struct op_buf *b, const char *key, const char *value, struct op_err *err)
{
	int rc = os_tag_check(key, value, err);
	if (rc < 0)
		return op_err_prefix(err, "\"%.130s\"", key ? key : "");
	/* os_uri_encode: RFC 3986 (unreserved A-Za-z0-9-._~ kept, every other
	 * byte %XX), what curl_easy_escape gives and S3 decodes */
	rc = b->len ? op_buf_addc(b, '&') : 0;
	if (rc == 0)
		rc = os_uri_encode(b, key, false);
	if (rc == 0)
		rc = op_buf_addc(b, '=');
	if (rc == 0)
		rc = os_uri_encode(b, value, false);
	return rc < 0 ? op_err_set(err, rc, "x-amz-tagging: longer than %zu bytes", b->max) : 0;
}

/* A tagging value as os_tagging_add builds it: pairs of encoded bytes only
 * (so nothing else can reach the header line). */
static bool tagging_shaped(const char *t)
{
	static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789-._~%=&";
	return strspn(t, ok) == strlen(t) && strlen(t) <= OS_TAGGING_MAX;
}

int os_client_set_put_attrs(struct os_client *c, const struct os_put_attrs *a, struct op_err *err)
{
	const char *t = a && a->tagging && *a->tagging ? a->tagging : NULL;
	const char *e = a ? a->encryption : NULL;
	if (t && !tagging_shaped(t))
		return op_err_set(err, -EINVAL, "x-amz-tagging: not an encoded tag set");
	if (e && !os_sse_valid(e))
		return op_err_set(err, -EINVAL, "server-side encryption \"%.40s\": expected AES256 "
				  "or aws:kms", e);
	for (size_t i = 0; i < OP_ARRAY_SIZE(c->put_hdrs); i++) {
		free(c->put_hdrs[i]);
		c->put_hdrs[i] = NULL;
	}
	size_t n = 0;
	if (t)
		c->put_hdrs[n++] = op_asprintf("x-amz-tagging: %s", t);
	if (e)
		c->put_hdrs[n++] = op_asprintf("x-amz-server-side-encryption: %s", e);
	return 0;
}
