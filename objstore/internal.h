/* objstore/internal.h - private to objstore/: the client, one request, the
 * XML walker and the response parsers (pure, unit-tested). */
#ifndef PGOP_OBJSTORE_INTERNAL_H
#define PGOP_OBJSTORE_INTERNAL_H

#include <curl/curl.h>

#include "objstore/objstore.h"
#include "support/dl.h"
#include "support/memfile.h"

struct os_client {
	CURL *h;           /* owned; one connection cache */
	char *base_url;    /* owned: "https://host:port/bucket" */
	char *bucket;      /* owned */
	char *sigv4;       /* owned: "aws:amz:REGION:s3" */
	char *access;      /* owned: the access key id */
	char *secret;      /* owned, secret: wiped on free */
	char *token_hdr;   /* owned, secret: "x-amz-security-token: T" or NULL, wiped */
	struct op_memfile ca; /* the CA PEM handed to libcurl by path; fd -1 when none */
	char *put_hdrs[3]; /* owned: header lines of PUT/CREATE-MULTIPART (os_client_set_put_attrs), NULL-ended */
	bool insecure;
	long connect_ms, request_ms, transfer_ms, low_bytes, low_secs;
};

/* In-memory bodies up to this are signed (their SHA-256 in the request)
 * whatever the scheme; larger ones (upload parts of MiBs) go over https as
 * UNSIGNED-PAYLOAD, as the streamed ones do: TLS already guards their bytes,
 * and hashing them costs the client and the server a pass over each part
 * (S3 accepts it for PutObject and UploadPart over https). Over plain http
 * every in-memory body is signed. */
#define OS_SIGNED_BODY_MAX (64u * 1024)

/* One request. Everything borrowed for the call. */
struct os_req {
	const char *op;     /* for messages: "PUT", "GET", "LIST", "DELETE", ... */
	const char *method; /* HTTP method */
	const char *key;    /* NULL: the bucket itself */
	const char *shown;  /* what messages name after s3://bucket/ when not key; NULL */
	const char *query;  /* canonical query (keys sorted, AWS-encoded, "k=v&k2="); NULL none */
	const char *const *headers; /* extra header lines, NULL-terminated; NULL none */
	bool put_attrs;     /* also the client's put_hdrs (object or upload creation) */
	/* request body, from memory (signed: its sha256 is sent; over https a
	 * body past OS_SIGNED_BODY_MAX is UNSIGNED-PAYLOAD, TLS guarding it) or
	 * from read (UNSIGNED-PAYLOAD, exactly upload_size bytes) */
	const void *body;
	size_t body_len;
	bool has_body;
	os_read_fn read;
	void *read_ud;
	uint64_t upload_size;
	/* response body on 2xx: to write (at most max_body bytes) or into resp
	 * (its own cap) or dropped */
	os_write_fn write;
	void *write_ud;
	uint64_t max_body;
	struct op_buf *resp;
	bool long_transfer; /* transfer_ms instead of request_ms */
	/* out */
	long status;
	struct os_object_info info;
};

/* Performs r; a non-2xx status is an error carrying the S3 code and message.
 * 0 or -errno (see objstore.h). */
OP_MUST_CHECK int os_do(struct os_client *c, struct os_req *r, struct op_err *err);
/* -errno for an HTTP error status. */
OP_MUST_CHECK int os_http_status_errno(long status);

/* ---- url.c ---- */
bool os_bucket_valid(const char *s, size_t n);
/* Appends s URI-encoded the SigV4 way (unreserved A-Za-z0-9-._~ kept, '/'
 * kept when keep_slash, every other byte %XX upper-case). */
OP_MUST_CHECK int os_uri_encode(struct op_buf *b, const char *s, bool keep_slash);
/* Appends "&"(when b is not empty) "name=" encoded(value). Callers add names
 * in sorted order: the query is then canonical as SigV4 wants it. */
OP_MUST_CHECK int os_query_add(struct op_buf *b, const char *name, const char *value);
/* Appends s escaped for XML character data. */
OP_MUST_CHECK int os_xml_escape(struct op_buf *b, const char *s);

/* ---- dl_expat.c ---- */
/* expat, loaded on first use (support/dl.h): the XML_* functions are
 * dl_expat.c's wrappers; os_client_new() and os_xml_walk() load it first so
 * a missing library is their error. The runtime library of libexpat1-dev. */
#define OS_DL_EXPAT_SONAME "libexpat.so.1"
extern struct op_dl_lib os_dl_expat;

/* ---- xml.c ---- */
#define OS_XML_DEPTH_MAX 16
#define OS_XML_TEXT_MAX (8u * 1024) /* one leaf element's text */
#define OS_XML_NAME_MAX 64

/* Callbacks of os_xml_walk (depth 1 = the root element; names without a
 * namespace prefix). start: every element; leaf: every element without
 * children, with its text (decoded, NUL-terminated). 0 to go on, -errno to
 * stop the walk with that code. */
struct os_xml_cb {
	int (*start)(void *ud, unsigned depth, const char *name);
	int (*leaf)(void *ud, unsigned depth, const char *parent, const char *name,
		    const char *text, size_t len);
	void *ud;
};
/* Parses body with expat (no DTD: a DOCTYPE is rejected, so no entity
 * expansion), at most OS_XML_DEPTH_MAX deep, leaf texts capped. ret_root
 * (OS_XML_NAME_MAX) gets the root's name. 0, -EBADMSG (malformed), -EMSGSIZE
 * (a cap), or a callback's code. */
OP_MUST_CHECK
OP_MUST_CHECK
int os_xml_walk(const char *body, size_t len, const struct os_xml_cb *cb, char *ret_root,
		struct op_err *err);

struct os_s3_error {
	char code[64];
	char message[256];
	char key[OS_KEY_MAX + 1]; /* DeleteResult's Error only */
};
/* An <Error> document: 0 and *ret filled, -EBADMSG when body is not one. */
OP_MUST_CHECK int os_xml_parse_error(const char *body, size_t len, struct os_s3_error *ret);

/* One page of ListBucketResult (strings owned by the page). */
struct os_list_page {
	struct os_list_entry *entries; /* owned; their strings owned too */
	size_t n;
	size_t n_alloc;
	bool truncated;
	char *next_token; /* owned; NULL when absent */
};
OP_MUST_CHECK
OP_MUST_CHECK
int os_xml_parse_list(const char *body, size_t len, struct os_list_page *ret, struct op_err *err);
void os_list_page_done(struct os_list_page *p);
/* InitiateMultipartUploadResult: *ret_upload_id owned by the caller (free). */
OP_MUST_CHECK
OP_MUST_CHECK
int os_xml_parse_initiate(const char *body, size_t len, char **ret_upload_id, struct op_err *err);
/* DeleteResult: the number of <Error> entries, the first in *ret_first. */
OP_MUST_CHECK int os_xml_parse_delete(const char *body, size_t len, struct os_s3_error *ret_first,
				      struct op_err *err);
/* CompleteMultipartUploadResult or Error (200 with an Error: 1 and *ret_error). */
OP_MUST_CHECK int os_xml_parse_complete(const char *body, size_t len, struct os_s3_error *ret_error,
					struct op_err *err);

/* Multipart pieces for uploads from several threads (objstore/put_jobs.c):
 * part number no (1-based) uploaded from memory, m only read (threads may
 * share it), *ret_etag owned by the caller; and the part's ETag recorded in
 * m (etag owned by m from then on; not thread-safe: under the caller's lock). */
OP_MUST_CHECK
int os_mpu_upload_part_no(struct os_client *c, const struct os_mpu *m, unsigned no,
			  const void *data, size_t len, char **ret_etag, struct op_err *err);
void os_mpu_set_etag(struct os_mpu *m, unsigned no, char *etag);
/* The frame of a streamed upload of unknown size (os_put_from_reader and
 * os_put_from_reader_jobs): the part size clamped (part_size, 0: 8 MiB; at
 * least OS_PART_MIN, at most 1 GiB), the first part read into a buffer of
 * that size (owned here); one PUT when the stream ends within it, else a
 * multipart upload: rest uploads the first part (buf, len) and everything
 * read after it (*total counts the bytes), then the upload is completed, or
 * aborted on any failure (the first failure is reported). ctx is rest's. */
typedef int (*os_rest_fn)(void *ctx, struct os_mpu *m, os_read_fn read, void *ud, char *buf,
			  size_t part, size_t len, uint64_t *total, struct op_err *err);
OP_MUST_CHECK
int os_put_parts(struct os_client *c, const char *key, os_read_fn read, void *ud,
		  size_t part_size, os_rest_fn rest, void *ctx, uint64_t *ret_size,
		  struct op_err *err);
/* Reads until buf (cap bytes) is full or the source ends (*ret_eof true):
 * 0, or read's -errno. */
OP_MUST_CHECK int os_read_full(os_read_fn read, void *ud, char *buf, size_t cap, size_t *ret_len,
			       bool *ret_eof);

#endif
