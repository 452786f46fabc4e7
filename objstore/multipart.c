/* objstore/multipart.c - multipart upload: create, upload part, complete,
 * abort, and os_put_from_reader(), a stream of unknown size in one part's
 * memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/internal.h"
#include "support/alloc.h"
#include "support/log.h"

struct os_mpu {
	char *key;       /* owned */
	char *upload_id; /* owned */
	char **etags;    /* owned, each owned: etags[i] is part i + 1's */
	unsigned n;
	unsigned n_alloc;
};

unsigned os_mpu_parts(const struct os_mpu *m) { return m->n; }

void os_mpu_free(struct os_mpu *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->n; i++)
		free(m->etags[i]);
	free(m->etags);
	free(m->key);
	free(m->upload_id);
	free(m);
}

int os_mpu_create(struct os_client *c, const char *key, struct os_mpu **ret, struct op_err *err)
{
	if (!os_key_valid(key))
		return op_err_set(err, -EINVAL, "CREATE-MULTIPART s3://%s/%.300s: invalid key",
				  c->bucket, key ? key : "");
	struct op_buf resp = OP_BUF_INIT(OS_RESP_MAX_ERROR);
	struct os_req r = { .op = "CREATE-MULTIPART", .method = "POST", .key = key,
			    .query = "uploads=", .resp = &resp, .put_attrs = true };
	char *id = NULL;
	int rc = os_do(c, &r, err);
	if (rc == 0 && (rc = os_xml_parse_initiate(resp.data, resp.len, &id, err)) < 0)
		op_err_prefix(err, "CREATE-MULTIPART s3://%s/%.300s", c->bucket, key);
	op_buf_done(&resp);
	if (rc < 0)
		return rc;
	struct os_mpu *m = op_calloc(1, sizeof(*m));
	m->key = op_strdup(key);
	m->upload_id = id;
	*ret = m;
	return 0;
}

static int upload_query(const struct os_mpu *m, unsigned part, struct op_buf *q)
{
	char num[12];
	snprintf(num, sizeof(num), "%u", part);
	int rc = part ? os_query_add(q, "partNumber", num) : 0;
	return rc ? rc : os_query_add(q, "uploadId", m->upload_id);
}

/* PUT-PART of part number no from memory; *ret_etag owned by the caller.
 * Reads m (key, upload id), never changes it: threads may share m. */
static int upload_part_no(struct os_client *c, const struct os_mpu *m, unsigned no,
			  const void *data, size_t len, char **ret_etag, struct op_err *err)
{
	if (no > OS_PARTS_MAX || len > OS_PART_MAX)
		return op_err_set(err, -EFBIG, "PUT-PART s3://%s/%.300s: past %u parts or 5 GiB",
				  c->bucket, m->key, OS_PARTS_MAX);
	struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	char shown[OS_KEY_MAX + 32];
	snprintf(shown, sizeof(shown), "%s (part %u)", m->key, no);
	int rc = upload_query(m, no, &q);
	struct os_req r = { .op = "PUT-PART", .method = "PUT", .key = m->key, .shown = shown,
			    .query = op_buf_str(&q), .body = data ? data : "", .body_len = len,
			    .has_body = true, .long_transfer = true };
	if (rc < 0)
		rc = op_err_set(err, rc, "PUT-PART s3://%s/%.300s: upload id too long", c->bucket, m->key);
	else
		rc = os_do(c, &r, err);
	op_buf_done(&q);
	if (rc == 0 && !r.info.etag[0])
		rc = op_err_set(err, -EBADMSG, "PUT-PART s3://%s/%.300s: no ETag in the answer",
				c->bucket, shown);
	if (rc == 0)
		*ret_etag = op_strdup(r.info.etag);
	return rc;
}

void os_mpu_set_etag(struct os_mpu *m, unsigned no, char *etag)
{
	if (no > m->n_alloc) {
		unsigned n = m->n_alloc ? m->n_alloc : 16;
		while (n < no)
			n *= 2;
		m->etags = op_realloc(m->etags, n * sizeof(*m->etags));
		memset(m->etags + m->n_alloc, 0, (n - m->n_alloc) * sizeof(*m->etags));
		m->n_alloc = n;
	}
	free(m->etags[no - 1]);
	m->etags[no - 1] = etag;
	if (no > m->n)
		m->n = no;
}

int os_mpu_upload_part(struct os_client *c, struct os_mpu *m, const void *data, size_t len,
		       struct op_err *err)
{
	char *etag = NULL;
	int rc = upload_part_no(c, m, m->n + 1, data, len, &etag, err);
	if (rc == 0)
		os_mpu_set_etag(m, m->n + 1, etag);
	return rc;
}

int os_mpu_upload_part_no(struct os_client *c, const struct os_mpu *m, unsigned no,
			  const void *data, size_t len, char **ret_etag, struct op_err *err)
{
	if (no == 0)
		return op_err_set(err, -EINVAL, "PUT-PART s3://%s/%.300s: part number 0",
				  c->bucket, m->key);
	return upload_part_no(c, m, no, data, len, ret_etag, err);
}

static int complete_body(const struct os_mpu *m, struct op_buf *b)
{
	int rc = op_buf_adds(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUpload "
				"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (unsigned i = 0; rc == 0 && i < m->n; i++) {
		if (!m->etags[i])
			return -ENOENT;
		rc = op_buf_addf(b, "<Part><PartNumber>%u</PartNumber><ETag>", i + 1);
		if (rc == 0)
			rc = os_xml_escape(b, m->etags[i]);
		if (rc == 0)
			rc = op_buf_adds(b, "</ETag></Part>");
	}
	return rc ? rc : op_buf_adds(b, "</CompleteMultipartUpload>");
}

int os_mpu_complete(struct os_client *c, struct os_mpu *m, struct op_err *err)
{
	struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL), resp = OP_BUF_INIT(OS_RESP_MAX_ERROR);
	struct op_buf body = OP_BUF_INIT((size_t)OS_PARTS_MAX * 256 + 256);
	const char *hdrs[] = { "Content-Type: application/xml", NULL };
	int rc = m->n ? 0 : op_err_set(err, -EINVAL, "COMPLETE-MULTIPART s3://%s/%.300s: no part",
					c->bucket, m->key);
	int brc = rc == 0 ? upload_query(m, 0, &q) : 0;
	if (rc == 0 && brc == 0)
		brc = complete_body(m, &body);
	if (rc == 0 && brc == -ENOENT)
		rc = op_err_set(err, -EINVAL, "COMPLETE-MULTIPART s3://%s/%.300s: a part is missing",
				c->bucket, m->key);
	else if (rc == 0 && brc < 0)
		rc = op_err_set(err, -EMSGSIZE, "COMPLETE-MULTIPART s3://%s/%.300s: request too large",
				c->bucket, m->key);
	struct os_req r = { .op = "COMPLETE-MULTIPART", .method = "POST", .key = m->key,
			    .query = op_buf_str(&q), .body = body.data, .body_len = body.len,
			    .has_body = true, .headers = hdrs, .resp = &resp, .long_transfer = true };
	if (rc == 0)
		rc = os_do(c, &r, err);
	struct os_s3_error e;
	if (rc == 0 && (rc = os_xml_parse_complete(resp.data, resp.len, &e, err)) < 0)
		op_err_prefix(err, "COMPLETE-MULTIPART s3://%s/%.300s", c->bucket, m->key);
	if (rc == 1) /* S3 may answer 200 and an Error once the body started */
		rc = op_err_set(err, -EIO, "COMPLETE-MULTIPART s3://%s/%.300s: 200 %s: %s", c->bucket,
				m->key, e.code, e.message);
	op_buf_done(&q);
	op_buf_done(&resp);
	op_buf_done(&body);
	return rc;
}

int os_mpu_abort(struct os_client *c, struct os_mpu *m, struct op_err *err)
{
	struct op_buf q = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int rc = upload_query(m, 0, &q);
	struct os_req r = { .op = "ABORT-MULTIPART", .method = "DELETE", .key = m->key,
			    .query = op_buf_str(&q) };
	if (rc < 0)
		rc = op_err_set(err, rc, "ABORT-MULTIPART s3://%s/%.300s: upload id too long",
				c->bucket, m->key);
	else
		rc = os_do(c, &r, err);
	op_buf_done(&q);
	return rc;
}

int os_read_full(os_read_fn read, void *ud, char *buf, size_t cap, size_t *ret_len, bool *ret_eof)
{
	size_t len = 0;
	*ret_eof = false;
	while (len < cap) {
		ssize_t n = read(ud, buf + len, cap - len);
		if (n < 0)
			return (int)n;
		if (n == 0) {
			*ret_eof = true;
			break;
		}
		len += (size_t)n;
	}
	*ret_len = len;
	return 0;
}

/* Parts after the first (already in buf) one at a time: os_rest_fn of
 * os_put_from_reader (ctx: the client). */
static int upload_rest(void *ctx, struct os_mpu *m, os_read_fn read, void *ud, char *buf,
		       size_t part, size_t len, uint64_t *total, struct op_err *err)
{
	struct os_client *c = ctx;
	bool eof = false;
	int rc;
	for (;;) {
		rc = os_mpu_upload_part(c, m, buf, len, err);
		if (rc < 0 || eof)
			break;
		*total += len;
		if ((rc = os_read_full(read, ud, buf, part, &len, &eof)) < 0) {
			op_err_set(err, rc, "PUT s3://%s/%.300s: read failed", c->bucket, m->key);
			break;
		}
		if (len == 0)
			break;
	}
	if (rc == 0 && eof && len)
		*total += len; /* the last, short part */
	return rc;
}

int os_put_parts(struct os_client *c, const char *key, os_read_fn read, void *ud,
		  size_t part_size, os_rest_fn rest, void *ctx, uint64_t *ret_size,
		  struct op_err *err)
{
	size_t part = part_size ? part_size : 8u * 1024 * 1024;
	if (part < OS_PART_MIN)
		part = OS_PART_MIN;
	if (part > 1024u * 1024 * 1024)
		return op_err_set(err, -EINVAL, "PUT s3://%s/%.300s: part size past 1 GiB", c->bucket, key);
	char *buf = op_malloc(part);
	size_t len = 0;
	bool eof;
	uint64_t total = 0;
	struct os_mpu *m = NULL;
	int rc = os_read_full(read, ud, buf, part, &len, &eof);
	if (rc < 0)
		op_err_set(err, rc, "PUT s3://%s/%.300s: read failed", c->bucket, key);
	else if (eof) /* fits in one request */
		rc = os_put(c, key, buf, len, err), total = len;
	else if ((rc = os_mpu_create(c, key, &m, err)) == 0) {
		rc = rest(ctx, m, read, ud, buf, part, len, &total, err);
		if (rc == 0)
			rc = os_mpu_complete(c, m, err);
		struct op_err e = OP_ERR_INIT; /* the first failure is the one to report */
		if (rc < 0 && os_mpu_abort(c, m, &e) < 0)
			op_log_warn("multipart upload not aborted: its parts stay until the store "
				    "expires them", "error", e.msg);
	}
	os_mpu_free(m);
	free(buf);
	if (rc == 0 && ret_size)
		*ret_size = total;
	return rc;
}

int os_put_from_reader(struct os_client *c, const char *key, os_read_fn read, void *ud,
		       size_t part_size, uint64_t *ret_size, struct op_err *err)
{
	return os_put_parts(c, key, read, ud, part_size, upload_rest, c, ret_size, err);
}
