/* objstore/ops.c - object operations: put, get, head, delete, DeleteObjects,
 * ListObjectsV2. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/internal.h"
#include "support/alloc.h"
#include "support/base64.h"

static int bad_key(const char *op, const struct os_client *c, const char *key, struct op_err *err)
{
	return op_err_set(err, -EINVAL, "%s s3://%s/%.300s: invalid key (1-%u bytes of UTF-8, no control character)",
			  op, c->bucket, key ? key : "", OS_KEY_MAX);
}

int os_put(struct os_client *c, const char *key, const void *data, size_t len, struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("PUT", c, key, err);
	if (len > OS_PART_MAX)
		return op_err_set(err, -EFBIG, "PUT s3://%s/%.300s: %zu bytes is past S3's 5 GiB", c->bucket, key, len);
	struct os_req r = { .op = "PUT", .method = "PUT", .key = key, .body = data ? data : "",
			    .body_len = len, .has_body = true, .long_transfer = true,
			    .put_attrs = true };
	return os_do(c, &r, err);
}

int os_put_stream(struct os_client *c, const char *key, os_read_fn read, void *ud, uint64_t size,
		  struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("PUT", c, key, err);
	if (size > OS_PART_MAX)
		return op_err_set(err, -EFBIG, "PUT s3://%s/%.300s: past S3's 5 GiB", c->bucket, key);
	struct os_req r = { .op = "PUT", .method = "PUT", .key = key, .has_body = true, .read = read,
			    .read_ud = ud, .upload_size = size, .long_transfer = true,
			    .put_attrs = true };
	return os_do(c, &r, err);
}

int os_get(struct os_client *c, const char *key, os_write_fn write, void *ud, uint64_t max_size,
	   struct os_object_info *ret_info, struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("GET", c, key, err);
	struct os_req r = { .op = "GET", .method = "GET", .key = key, .write = write, .write_ud = ud,
			    .max_body = max_size ? max_size : 1, .long_transfer = true };
	int rc = os_do(c, &r, err);
	if (rc == 0 && ret_info)
		*ret_info = r.info;
	return rc;
}

int os_get_buf(struct os_client *c, const char *key, struct op_buf *buf, struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("GET", c, key, err);
	struct os_req r = { .op = "GET", .method = "GET", .key = key, .resp = buf,
			    .long_transfer = true };
	return os_do(c, &r, err);
}

int os_head(struct os_client *c, const char *key, struct os_object_info *ret, struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("HEAD", c, key, err);
	struct os_req r = { .op = "HEAD", .method = "HEAD", .key = key };
	int rc = os_do(c, &r, err);
	if (rc == 0)
		*ret = r.info;
	return rc;
}

int os_delete(struct os_client *c, const char *key, struct op_err *err)
{
	if (!os_key_valid(key))
		return bad_key("DELETE", c, key, err);
	struct os_req r = { .op = "DELETE", .method = "DELETE", .key = key };
	return os_do(c, &r, err);
}

/* <Delete><Quiet>true</Quiet><Object><Key>k</Key></Object>...</Delete> */
static int delete_body(const char *const *keys, size_t n, struct op_buf *b)
{
	int rc = op_buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
				"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = op_buf_adds(b, "<Object><Key>");
		if (rc == 0)
			rc = os_xml_escape(b, keys[i]);
		if (rc == 0)
			rc = op_buf_adds(b, "</Key></Object>");
	}
	return rc ? rc : op_buf_adds(b, "</Delete>");
}

int os_delete_batch(struct os_client *c, const char *const *keys, size_t n, struct op_err *err)
{
	if (n == 0)
		return 0;
	if (n > OS_DELETE_BATCH_MAX)
		return op_err_set(err, -E2BIG, "DELETE s3://%s: %zu keys, at most %u per request",
				  c->bucket, n, OS_DELETE_BATCH_MAX);
	for (size_t i = 0; i < n; i++)
		if (!os_key_valid(keys[i]))
			return bad_key("DELETE", c, keys[i], err);
	struct op_buf body = OP_BUF_INIT(OS_DELETE_BATCH_MAX * (OS_KEY_MAX * 6 + 32) + 256);
	struct op_buf resp = OP_BUF_INIT(OS_RESP_MAX_XML);
	int rc = delete_body(keys, n, &body);
	/* S3 requires Content-MD5 (or a checksum header) on DeleteObjects */
	unsigned char md5[16];
	if (rc == 0)
		rc = gnutls_hash_fast(GNUTLS_DIG_MD5, body.data, body.len, md5) ? -EIO : 0;
	_cleanup_free_ char *b64 = rc == 0 ? op_base64_encode_str(md5, sizeof(md5), 0) : NULL;
	_cleanup_free_ char *md5_hdr = b64 ? op_asprintf("Content-MD5: %s", b64) : NULL;
	const char *hdrs[] = { "Content-Type: application/xml", md5_hdr, NULL };
	struct os_req r = { .op = "DELETE", .method = "POST", .query = "delete=", .body = body.data,
			    .body_len = body.len, .has_body = true, .headers = hdrs, .resp = &resp,
			    .shown = "(batch)" };
	if (rc == 0)
		rc = os_do(c, &r, err);
	else
		op_err_set(err, rc, "DELETE s3://%s: cannot build the request", c->bucket);
	struct os_s3_error first;
	if (rc == 0)
		rc = os_xml_parse_delete(resp.data, resp.len, &first, err);
	if (rc > 0)
		op_err_set(err, strcmp(first.code, "AccessDenied") ? -EIO : -EACCES, "DELETE s3://%s/%.300s: %s: %s (and %d more)",
			   c->bucket, first.key, first.code, first.message, rc - 1);
	op_buf_done(&body);
	op_buf_done(&resp);
	return rc;
}

static int list_query(const struct os_list_opts *o, const char *token, struct op_buf *q)
{
	char mk[16];
	snprintf(mk, sizeof(mk), "%u", o->page_size);
	/* names in sorted order: the query is canonical as SigV4 signs it */
	int rc = token ? os_query_add(q, "continuation-token", token) : 0;
	if (rc == 0 && o->delimiter && o->delimiter[0])
		rc = os_query_add(q, "delimiter", o->delimiter);
	if (rc == 0)
		rc = os_query_add(q, "list-type", "2");
	if (rc == 0)
		rc = os_query_add(q, "max-keys", mk);
	if (rc == 0 && o->prefix && o->prefix[0])
		rc = os_query_add(q, "prefix", o->prefix);
	return rc;
}

/* One page: fetched, parsed, its entries passed to fn. Returns 0 or 1 (fn
 * stopped), *count advanced; *token replaced by the next one (NULL: done). */
static int list_page(struct os_client *c, const struct os_list_opts *o, char **token,
		     os_list_fn fn, void *ud, size_t *count, struct op_err *err)
{
	struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL), resp = OP_BUF_INIT(OS_RESP_MAX_XML);
	struct os_list_page pg = { 0 };
	const char *shown = o->prefix && o->prefix[0] ? o->prefix : "";
	int rc = list_query(o, *token, &q);
	if (rc < 0)
		rc = op_err_set(err, rc, "LIST s3://%s/%.300s: query too long", c->bucket, shown);
	struct os_req r = { .op = "LIST", .method = "GET", .query = op_buf_str(&q), .resp = &resp,
			    .shown = shown };
	if (rc == 0)
		rc = os_do(c, &r, err);
	if (rc == 0 && (rc = os_xml_parse_list(resp.data, resp.len, &pg, err)) < 0)
		op_err_prefix(err, "LIST s3://%s/%.300s", c->bucket, shown);
	for (size_t i = 0; rc == 0 && i < pg.n; i++) {
		if (*count >= o->max_entries) {
			rc = op_err_set(err, -E2BIG, "LIST s3://%s/%.300s: more than %zu entries",
					c->bucket, shown, o->max_entries);
			break;
		}
		(*count)++;
		rc = fn(ud, &pg.entries[i]);
		if (rc < 0)
			op_err_set(err, rc, "LIST s3://%s/%.300s: callback failed", c->bucket, shown);
	}
	if (rc == 0 && pg.truncated && *token && !strcmp(*token, pg.next_token))
		rc = op_err_set(err, -EPROTO, "LIST s3://%s/%.300s: the same continuation token twice",
				c->bucket, shown);
	free(*token);
	*token = NULL;
	if (rc == 0 && pg.truncated) {
		*token = pg.next_token;
		pg.next_token = NULL;
	}
	os_list_page_done(&pg);
	op_buf_done(&q);
	op_buf_done(&resp);
	return rc;
}

int os_list(struct os_client *c, const struct os_list_opts *opts, os_list_fn fn, void *ud,
	    struct op_err *err)
{
	struct os_list_opts o = opts ? *opts : (struct os_list_opts){ 0 };
	if (o.page_size == 0 || o.page_size > OS_LIST_PAGE_MAX)
		o.page_size = OS_LIST_PAGE_MAX;
	if (o.max_entries == 0 || o.max_entries > 100000000)
		o.max_entries = 1000000;
	if (o.prefix && o.prefix[0] && !os_key_valid(o.prefix))
		return bad_key("LIST", c, o.prefix, err);
	char *token = NULL;
	size_t count = 0;
	int rc;
	do
		rc = list_page(c, &o, &token, fn, ud, &count, err);
	while (rc == 0 && token);
	free(token);
	return rc < 0 ? rc : (int)count;
}
