/* objstore/objstore.h - a small S3 client (path-style, AWS SigV4) for
 * backups and WAL archives: put, get, head, ListObjectsV2, DeleteObjects and
 * multipart upload, every transfer streamed through callbacks in bounded
 * memory.
 *
 * Requests go through libcurl (loaded on first use, support/dl_curl.h) and
 * its built-in SigV4 signer (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"). The
 * secret key lives only in the client's memory (wiped on free): never in
 * argv, the environment or a log line. TLS is verified against the CA given
 * as PEM (handed to libcurl as a sealed memory file, support/memfile.h:
 * libcurl 7.88 with GnuTLS refuses CURLOPT_CAINFO_BLOB) or the system store.
 *
 * Errors name the operation, the object and the cause:
 *   "PUT s3://bucket/key: 403 AccessDenied: Access Denied."
 *   "GET s3://bucket/key: TLS: server certificate verification failed..."
 * and map to -errno: 403/401 -EACCES, 404 -ENOENT, 400 -EINVAL, 409 -EBUSY,
 * 412 -EAGAIN... see os_http_status_errno(); transport errors: DNS
 * -EHOSTUNREACH, connect -ECONNREFUSED, timeout -ETIMEDOUT, TLS -EPROTO,
 * a response past its cap -EMSGSIZE, a malformed response -EBADMSG.
 *
 * A client is one libcurl easy handle (connection reused between requests):
 * use it from one thread at a time; make one per thread.
 */
#ifndef PGOP_OBJSTORE_OBJSTORE_H
#define PGOP_OBJSTORE_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "support/buf.h"
#include "support/err.h"

/* S3's own limits. */
#define OS_KEY_MAX 1024u                 /* bytes of an object key */
#define OS_BUCKET_MAX 63u                /* bytes of a bucket name */
#define OS_DELETE_BATCH_MAX 1000u        /* keys per DeleteObjects */
#define OS_LIST_PAGE_MAX 1000u           /* entries per ListObjectsV2 page */
#define OS_PART_MIN (5u * 1024 * 1024)   /* every part but the last */
#define OS_PART_MAX (5ull * 1024 * 1024 * 1024)
#define OS_PARTS_MAX 10000u
/* Caps on what the network can make us hold. */
#define OS_RESP_MAX_XML (8u * 1024 * 1024) /* one XML response (a list page ~0.5 MB) */
#define OS_RESP_MAX_ERROR (64u * 1024)     /* an error body */

/* ---- pure parsing (no I/O) ---- */

/* An endpoint URL: http or https, a host (name, IPv4 or [IPv6]), an optional
 * port, an optional "/" path; no userinfo, other path, query or fragment. */
struct os_endpoint {
	bool tls;       /* https */
	char host[256]; /* without brackets */
	unsigned port;  /* 80/443 when absent */
};
/* 0, or -EINVAL with err saying what is wrong; *ret written only on success. */
OP_MUST_CHECK int os_endpoint_parse(const char *url, struct os_endpoint *ret, struct op_err *err);

/* A destination "s3://bucket[/prefix]": bucket per S3's naming rules (3-63 of
 * [a-z0-9.-], starting and ending with a letter or digit), prefix without
 * leading or trailing '/', no empty segment, no control character. */
struct os_dest {
	char bucket[OS_BUCKET_MAX + 1];
	char prefix[OS_KEY_MAX + 1]; /* "" when absent */
};
OP_MUST_CHECK int os_dest_parse(const char *s3url, struct os_dest *ret, struct op_err *err);

/* True when key is usable: 1..OS_KEY_MAX bytes of valid UTF-8 without control
 * characters (they cannot travel in the XML of DeleteObjects). */
bool os_key_valid(const char *key);

/* ---- object tags and server-side encryption (pure) ----
 * barman-cloud's --tags/--history-tags (header x-amz-tagging) and -e
 * (x-amz-server-side-encryption), with S3's limits on a tag set. */
#define OS_TAGS_MAX 10u       /* tags on one object */
#define OS_TAG_KEY_MAX 128u   /* characters (code points) of a key, at least 1 */
#define OS_TAG_VALUE_MAX 256u /* characters of a value, may be 0 */
#define OS_TAGGING_MAX 8192u  /* bytes of an encoded tag set (10 * 3 * 384 fit) */

/* 0 when key and value (borrowed) make a tag S3 accepts: valid UTF-8, key 1..128
 * and value 0..256 characters, ASCII ones among letters, digits, space and
 * + - = . _ : / @, other ones Unicode letters, digits or spaces (glibc's
 * C.UTF-8 classes: a little narrower than S3's, which also takes ½ or a
 * no-break space), the key not starting with "aws:". Else -EINVAL, err saying
 * what is wrong ("tag key: ...", "tag value: ..."). */
OP_MUST_CHECK int os_tag_check(const char *key, const char *value, struct op_err *err);
/* Appends "key=value" to the x-amz-tagging value in b ("&" first when b is not
 * empty), both percent-encoded per RFC 3986 (unreserved A-Za-z0-9-._~ kept,
 * every other byte %XX); os_tag_check first (err then names the key). The
 * caller keeps to OS_TAGS_MAX pairs. */
OP_MUST_CHECK
int os_tagging_add(struct op_buf *b, const char *key, const char *value, struct op_err *err);
/* True for "AES256" and "aws:kms", the values S3 (and barman-cloud -e) take. */
bool os_sse_valid(const char *v);

/* ---- client ---- */

struct os_config {
	/* All borrowed for the call: os_client_new copies what it keeps. */
	const char *endpoint;     /* "https://host:port"; NULL: https://s3.REGION.amazonaws.com */
	const char *region;       /* NULL: "us-east-1" */
	const char *bucket;       /* required */
	const char *access_key;   /* required */
	const char *secret_key;   /* required; wiped from the client's memory on free */
	const char *session_token; /* optional (x-amz-security-token) */
	const char *ca_pem;       /* optional PEM bundle trusted instead of the system store */
	size_t ca_pem_len;
	bool insecure_skip_verify; /* tests only */
	long connect_timeout_ms;  /* 0: 10 s */
	long request_timeout_ms;  /* requests without a data body; 0: 60 s */
	long transfer_timeout_ms; /* put/get/part; 0: 30 min */
	long low_speed_bytes;     /* abort below this rate...; 0: 1024 B/s */
	long low_speed_seconds;   /* ...for this long; 0: 60 s */
};

struct os_client;

/* Loads libcurl when needed. *ret is owned by the caller: os_client_free. */
OP_MUST_CHECK
int os_client_new(const struct os_config *cfg, struct os_client **ret, struct op_err *err);
/* Frees the client and wipes its credentials. NULL accepted. */
void os_client_free(struct os_client *c);
/* The bucket the client talks to (borrowed from c). */
const char *os_client_bucket(const struct os_client *c);

/* What the client's following PutObject and CreateMultipartUpload requests
 * carry (S3 takes tags and encryption when an object or an upload is created:
 * parts, completes and other requests never carry them). */
struct os_put_attrs {
	const char *tagging;    /* borrowed: an x-amz-tagging value (os_tagging_add); NULL or "": none */
	const char *encryption; /* borrowed: "AES256" | "aws:kms"; NULL: none */
};
/* Copies a into c, replacing what was set (NULL clears). -EINVAL when the
 * tagging is not os_tagging_add's shape or the encryption not os_sse_valid. */
OP_MUST_CHECK
int os_client_set_put_attrs(struct os_client *c, const struct os_put_attrs *a, struct op_err *err);

/* Data callbacks. read: up to len bytes into buf; returns the count, 0 at the
 * end, -errno to abort (the operation then fails with that code). write:
 * consumes len bytes; 0 or -errno to abort. */
typedef ssize_t (*os_read_fn)(void *ud, void *buf, size_t len);
typedef int (*os_write_fn)(void *ud, const void *buf, size_t len);

struct os_object_info {
	uint64_t size;         /* Content-Length */
	char etag[80];         /* as sent, quotes included; truncated when longer */
	char last_modified[40]; /* HTTP date, as sent */
};

/* PUT from memory (len <= OS_PART_MAX); the payload is signed (sha256). */
OP_MUST_CHECK int os_put(struct os_client *c, const char *key, const void *data, size_t len,
			 struct op_err *err);
/* PUT of exactly size bytes from read (UNSIGNED-PAYLOAD: TLS protects it);
 * a short or long read is -EIO. */
OP_MUST_CHECK int os_put_stream(struct os_client *c, const char *key, os_read_fn read, void *ud,
				uint64_t size, struct op_err *err);
/* GET streamed to write; an object past max_size is -EFBIG (nothing past the
 * cap is passed to write). ret_info optional. */
OP_MUST_CHECK
int os_get(struct os_client *c, const char *key, os_write_fn write, void *ud, uint64_t max_size,
	   struct os_object_info *ret_info, struct op_err *err);
/* GET into buf (its own cap applies, -EMSGSIZE past it). */
OP_MUST_CHECK
int os_get_buf(struct os_client *c, const char *key, struct op_buf *buf, struct op_err *err);
/* HEAD: -ENOENT when the object does not exist. */
OP_MUST_CHECK
int os_head(struct os_client *c, const char *key, struct os_object_info *ret, struct op_err *err);
/* DELETE one object (S3 answers 204 for a missing key too). */
OP_MUST_CHECK int os_delete(struct os_client *c, const char *key, struct op_err *err);

/* DeleteObjects (quiet) of n <= OS_DELETE_BATCH_MAX keys (borrowed). Returns
 * the number of keys the store failed to delete (0: all gone); the first
 * such failure is in err with its key and code even when the call returns
 * a count. -errno when the request itself failed. */
OP_MUST_CHECK
int os_delete_batch(struct os_client *c, const char *const *keys, size_t n, struct op_err *err);

/* ---- ListObjectsV2 ---- */

struct os_list_opts {
	const char *prefix;    /* borrowed; NULL or "" for all */
	const char *delimiter; /* borrowed; NULL for none (e.g. "/") */
	unsigned page_size;    /* max-keys; 0: 1000 */
	size_t max_entries;    /* stop with -E2BIG past this many; 0: 1,000,000 */
};
struct os_list_entry {
	const char *key;  /* object key, or the common prefix when is_prefix */
	uint64_t size;
	const char *etag; /* "" for a prefix */
	const char *last_modified; /* ISO 8601 as sent, "" for a prefix */
	bool is_prefix;
};
/* Called per entry, in the store's order (objects of a page, then its common
 * prefixes); the entry's strings are borrowed for the call. 0 to go on, 1 to
 * stop early (os_list then returns the count so far), -errno to fail. */
typedef int (*os_list_fn)(void *ud, const struct os_list_entry *e);
/* Lists every page (continuation tokens followed). Returns the number of
 * entries passed to fn. */
OP_MUST_CHECK
int os_list(struct os_client *c, const struct os_list_opts *opts, os_list_fn fn, void *ud,
	    struct op_err *err);

/* ---- multipart upload ---- */

struct os_mpu; /* one upload in progress: id, key, part ETags */

/* CreateMultipartUpload. *ret owned by the caller: complete or abort it,
 * then os_mpu_free. */
OP_MUST_CHECK
int os_mpu_create(struct os_client *c, const char *key, struct os_mpu **ret, struct op_err *err);
/* Uploads the next part (numbers 1, 2, ... in call order) from memory:
 * OS_PART_MIN <= len <= OS_PART_MAX except for the last part. */
OP_MUST_CHECK
int os_mpu_upload_part(struct os_client *c, struct os_mpu *m, const void *data, size_t len,
		       struct op_err *err);
/* CompleteMultipartUpload with every part uploaded (a 200 carrying an Error,
 * which S3 may send, is a failure). */
OP_MUST_CHECK int os_mpu_complete(struct os_client *c, struct os_mpu *m, struct op_err *err);
/* AbortMultipartUpload (the store drops the parts). */
OP_MUST_CHECK int os_mpu_abort(struct os_client *c, struct os_mpu *m, struct op_err *err);
/* Parts uploaded so far. */
unsigned os_mpu_parts(const struct os_mpu *m);
void os_mpu_free(struct os_mpu *m);

/* Uploads everything read gives (size unknown) in bounded memory: one PUT
 * when it fits in part_size (0: 8 MiB, at least OS_PART_MIN), else a
 * multipart upload holding one part_size buffer at a time, aborted on any
 * failure. Returns 0; ret_size (optional) is the byte count uploaded. */
OP_MUST_CHECK
int os_put_from_reader(struct os_client *c, const char *key, os_read_fn read, void *ud,
		       size_t part_size, uint64_t *ret_size, struct op_err *err);

/* os_put_from_reader with up to n_clients parts in flight: this thread
 * reads the next part while n_clients threads (one client each: a client is
 * not thread-safe) upload the ones read, so reading, compressing and
 * uploading overlap. Memory: n_clients + 1 part_size buffers, whatever the
 * size of the stream. Parts are numbered in read order; any failure stops
 * the reading, aborts the upload and is the one reported (the first).
 * clients borrowed (n_clients >= 1, each used by one thread at a time). */
OP_MUST_CHECK
int os_put_from_reader_jobs(struct os_client *const *clients, unsigned n_clients, const char *key,
			    os_read_fn read, void *ud, size_t part_size, uint64_t *ret_size,
			    struct op_err *err);

#endif
