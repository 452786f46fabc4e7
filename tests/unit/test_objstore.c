/* tests/unit/test_objstore.c - objstore/'s pure parts: endpoint and
 * destination parsing, key and query encoding, and the XML of real S3
 * responses (ListObjectsV2, errors, multipart, DeleteObjects), malformed and
 * oversized ones included. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/internal.h"
#include "support/alloc.h"

#include <cmocka.h>

static void test_endpoint_valid(void **state)
{
	static const struct { const char *url, *host; unsigned port; bool tls; } ok[] = {
		{ "https://127.0.0.1:9000", "127.0.0.1", 9000, true },
		{ "http://s3.example.com", "s3.example.com", 80, false },
		{ "HTTPS://s3.eu-west-1.amazonaws.com/", "s3.eu-west-1.amazonaws.com", 443, true },
		{ "https://[::1]:7070", "::1", 7070, true },
		{ "http://minio-svc.ns.svc:9000/", "minio-svc.ns.svc", 9000, false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(ok); i++) {
		struct os_endpoint ep;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(os_endpoint_parse(ok[i].url, &ep, &err), 0);
		assert_string_equal(ep.host, ok[i].host);
		assert_int_equal(ep.port, ok[i].port);
		assert_int_equal(ep.tls, ok[i].tls);
	}
}

static void test_endpoint_invalid(void **state)
{
	static const struct { const char *url, *why; } bad[] = {
		{ "ftp://host", "scheme" },        { "host:9000", "scheme" },
		{ "https://user:pw@host", "userinfo" }, { "https://host/bucket", "path" },
		{ "https://host?x=1", "query" },   { "https://host#f", "fragment" },
		{ "https://host:0", "port" },      { "https://host:99999", "port" },
		{ "https://host:", "port" },       { "https://host:9a", "port" },
		{ "https://", "host" },            { "https://-bad.com", "host" },
		{ "https://a..b", "host" },        { "https://a b", "space" },
		{ "https://[::1", "IPv6" },        { "https://[zz]:1", "IPv6" },
		{ "https://host\n", "control" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		struct os_endpoint ep = { .port = 4242 };
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(os_endpoint_parse(bad[i].url, &ep, &err), -EINVAL);
		assert_int_equal(ep.port, 4242); /* not written */
		if (!strstr(err.msg, bad[i].why) || !strstr(err.msg, "endpoint URL"))
			fail_msg("%s: %s", bad[i].url, err.msg);
	}
	assert_int_equal(os_endpoint_parse(NULL, &(struct os_endpoint){ 0 }, NULL), -EINVAL);
}

static void test_dest(void **state)
{
	struct os_dest d;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(os_dest_parse("s3://backups", &d, &err), 0);
	assert_string_equal(d.bucket, "backups");
	assert_string_equal(d.prefix, "");
	assert_int_equal(os_dest_parse("s3://my.bucket-1/pg/prod/", &d, &err), 0);
	assert_string_equal(d.bucket, "my.bucket-1");
	assert_string_equal(d.prefix, "pg/prod");
	static const char *const bad[] = { "backups", "s3:/b", "s3://Bucket/x", "s3://ab",
					   "s3://-bucket", "s3://bucket-/x", "s3://bu_cket",
					   "s3://bucket/a//b", "s3://bucket/a\x01", "s3://bucket/\xff" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		err = OP_ERR_INIT;
		assert_int_equal(os_dest_parse(bad[i], &d, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "destination path"));
	}
	char long_path[2000] = "s3://bucket/";
	memset(long_path + 12, 'a', 1500);
	assert_int_equal(os_dest_parse(long_path, &d, NULL), -EINVAL);
}

static void test_key_encoding(void **state)
{
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	assert_int_equal(os_uri_encode(&b, "wals/0000000100000000/a b+c~d_e.f\xc3\xa9%", true), 0);
	assert_string_equal(op_buf_str(&b), "wals/0000000100000000/a%20b%2Bc~d_e.f%C3%A9%25");
	op_buf_reset(&b);
	assert_int_equal(os_uri_encode(&b, "a/b=c&d", false), 0);
	assert_string_equal(op_buf_str(&b), "a%2Fb%3Dc%26d");
	op_buf_reset(&b);
	assert_int_equal(os_query_add(&b, "continuation-token", "1/x=="), 0);
	assert_int_equal(os_query_add(&b, "list-type", "2"), 0);
	assert_int_equal(os_query_add(&b, "uploads", NULL), 0);
	assert_string_equal(op_buf_str(&b), "continuation-token=1%2Fx%3D%3D&list-type=2&uploads=");
	op_buf_reset(&b);
	assert_int_equal(os_xml_escape(&b, "a&b<c>\"'"), 0);
	assert_string_equal(op_buf_str(&b), "a&amp;b&lt;c&gt;&quot;&apos;");
	op_buf_done(&b);

	assert_true(os_key_valid("base/20261207T101010/data.tar"));
	assert_true(os_key_valid("\xc3\xa9t\xc3\xa9"));
	assert_false(os_key_valid(""));
	assert_false(os_key_valid(NULL));
	assert_false(os_key_valid("a\nb"));
	assert_false(os_key_valid("a\x7f"));
	assert_false(os_key_valid("\xc3("));
	char k[OS_KEY_MAX + 2];
	memset(k, 'k', sizeof(k) - 1);
	k[sizeof(k) - 1] = '\0';
	assert_false(os_key_valid(k));
	k[OS_KEY_MAX] = '\0';
	assert_true(os_key_valid(k));
}

/* A ListObjectsV2 answer as AWS sends it (namespace, a delimiter, a token). */
static const char list_body[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>backups</Name><Prefix>pg/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>"
	"<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
	"<ContinuationToken>abc</ContinuationToken>"
	"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
	"  <Contents>\n    <Key>pg/a&amp;b.txt</Key>\n"
	"    <LastModified>2026-12-07T10:00:00.000Z</LastModified>\n"
	"    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>\n"
	"    <Size>5368709120</Size><StorageClass>STANDARD</StorageClass>\n  </Contents>\n"
	"<Contents><Key>pg/b</Key><LastModified>2026-12-07T10:00:01.000Z</LastModified>"
	"<ETag>\"x-2\"</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>"
	"<CommonPrefixes><Prefix>pg/wals/</Prefix></CommonPrefixes>"
	"</ListBucketResult>";

static void test_xml_list(void **state)
{
	struct os_list_page pg;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(os_xml_parse_list(list_body, strlen(list_body), &pg, &err), 0);
	assert_int_equal(pg.n, 3);
	assert_true(pg.truncated);
	assert_string_equal(pg.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	assert_string_equal(pg.entries[0].key, "pg/a&b.txt");
	assert_true(pg.entries[0].size == 5368709120ull);
	assert_string_equal(pg.entries[0].etag, "\"9b2cf535f27731c974343645a3985328\"");
	assert_string_equal(pg.entries[0].last_modified, "2026-12-07T10:00:00.000Z");
	assert_false(pg.entries[0].is_prefix);
	assert_string_equal(pg.entries[1].key, "pg/b");
	assert_int_equal(pg.entries[1].size, 0);
	assert_string_equal(pg.entries[2].key, "pg/wals/");
	assert_true(pg.entries[2].is_prefix);
	assert_string_equal(pg.entries[2].etag, "");
	os_list_page_done(&pg);

	static const char last[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
				   "<KeyCount>0</KeyCount></ListBucketResult>";
	assert_int_equal(os_xml_parse_list(last, strlen(last), &pg, &err), 0);
	assert_int_equal(pg.n, 0);
	assert_false(pg.truncated);
	assert_null(pg.next_token);
	os_list_page_done(&pg);
}

static int list_rc(const char *body, const char *want_msg)
{
	struct os_list_page pg = { .n = 12345 };
	struct op_err err = OP_ERR_INIT;
	int rc = os_xml_parse_list(body, strlen(body), &pg, &err);
	assert_int_equal(pg.n, 12345); /* untouched on failure */
	if (want_msg && !strstr(err.msg, want_msg))
		fail_msg("%s: %s", body, err.msg);
	return rc;
}

static void test_xml_malformed(void **state)
{
	assert_int_equal(list_rc("", NULL), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><Contents><Key>a</Key>", "line 1"), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult></ListBucket>", "mismatched"), -EBADMSG);
	assert_int_equal(list_rc("not xml", "syntax"), -EBADMSG);
	assert_int_equal(list_rc("<Other/>", "root <Other>"), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><Contents><Size>1</Size></Contents>"
				 "</ListBucketResult>", "no key"), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><Contents><Key>a</Key><Size>-1</Size>"
				 "</Contents></ListBucketResult>", NULL), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999"
				 "</Size></Contents></ListBucketResult>", NULL), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><Contents><Key>a</Key><Key>b</Key>"
				 "</Contents></ListBucketResult>", NULL), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult><IsTruncated>true</IsTruncated>"
				 "</ListBucketResult>", "NextContinuationToken"), -EBADMSG);
	/* entities: a DOCTYPE is refused before anything is expanded */
	assert_int_equal(list_rc("<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaa\">"
				 "<!ENTITY b \"&a;&a;&a;&a;&a;&a;\">]><ListBucketResult><Name>&b;"
				 "</Name></ListBucketResult>", "DOCTYPE"), -EBADMSG);
	assert_int_equal(list_rc("<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><ListBucketResult/>",
				 "DOCTYPE"), -EBADMSG);
	assert_int_equal(list_rc("<ListBucketResult>&undefined;</ListBucketResult>", NULL),
			 -EBADMSG);
}

static void test_xml_caps(void **state)
{
	/* nesting */
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_FILE);
	for (int i = 0; i < 40; i++)
		assert_int_equal(op_buf_adds(&b, "<a>"), 0);
	assert_int_equal(list_rc(op_buf_str(&b), "nested too deep"), -EMSGSIZE);
	/* one text past OS_XML_TEXT_MAX */
	op_buf_reset(&b);
	assert_int_equal(op_buf_adds(&b, "<ListBucketResult><Contents><Key>"), 0);
	for (unsigned i = 0; i < OS_XML_TEXT_MAX + 10; i++)
		assert_int_equal(op_buf_addc(&b, 'k'), 0);
	assert_int_equal(op_buf_adds(&b, "</Key></Contents></ListBucketResult>"), 0);
	assert_int_equal(list_rc(op_buf_str(&b), "text too long"), -EMSGSIZE);
	/* more entries than a page may hold */
	op_buf_reset(&b);
	assert_int_equal(op_buf_adds(&b, "<ListBucketResult>"), 0);
	for (unsigned i = 0; i < 2 * OS_LIST_PAGE_MAX + 1; i++)
		assert_int_equal(op_buf_addf(&b, "<Contents><Key>k%u</Key></Contents>", i), 0);
	assert_int_equal(op_buf_adds(&b, "</ListBucketResult>"), 0);
	assert_int_equal(list_rc(op_buf_str(&b), NULL), -EMSGSIZE);
	/* whitespace between elements does not count as a text */
	op_buf_reset(&b);
	assert_int_equal(op_buf_adds(&b, "<ListBucketResult><Contents><Key>k</Key>"), 0);
	for (unsigned i = 0; i < OS_XML_TEXT_MAX * 2; i++)
		assert_int_equal(op_buf_addc(&b, ' '), 0);
	assert_int_equal(op_buf_adds(&b, "</Contents></ListBucketResult>"), 0);
	struct os_list_page pg;
	assert_int_equal(os_xml_parse_list(b.data, b.len, &pg, NULL), 0);
	assert_int_equal(pg.n, 1);
	os_list_page_done(&pg);
	op_buf_done(&b);
}

static void test_xml_error(void **state)
{
	static const char body[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>"
		"<Message>The request signature we calculated does not match the signature you "
		"provided. Check your key and signing method.</Message>"
		"<RequestId>4442587FB7D0A2F9</RequestId></Error>";
	struct os_s3_error e;
	assert_int_equal(os_xml_parse_error(body, strlen(body), &e), 0);
	assert_string_equal(e.code, "SignatureDoesNotMatch");
	assert_non_null(strstr(e.message, "does not match"));
	assert_int_equal(os_xml_parse_error(list_body, strlen(list_body), &e), -EBADMSG);
	assert_int_equal(os_xml_parse_error("<Error><Message>x</Message></Error>", 35, &e), -EBADMSG);
	assert_int_equal(os_xml_parse_error("<Error><Code>X", 14, &e), -EBADMSG);
	assert_int_equal(os_xml_parse_error(NULL, 0, &e), -EBADMSG);
}

static void test_xml_multipart(void **state)
{
	static const char init[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
		"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket><Key>k</Key>"
		"<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
		"</InitiateMultipartUploadResult>";
	char *id = NULL;
	assert_int_equal(os_xml_parse_initiate(init, strlen(init), &id, NULL), 0);
	assert_string_equal(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
	op_freep(&id); /* the real free: cmocka redefines free() in tests */
	static const char noid[] = "<InitiateMultipartUploadResult><Key>k</Key>"
				   "</InitiateMultipartUploadResult>";
	assert_int_equal(os_xml_parse_initiate(noid, strlen(noid), &id, NULL), -EBADMSG);

	static const char done[] = "<CompleteMultipartUploadResult><Location>x</Location>"
				   "<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
				   "</CompleteMultipartUploadResult>";
	struct os_s3_error e;
	assert_int_equal(os_xml_parse_complete(done, strlen(done), &e, NULL), 0);
	static const char late[] = "<Error><Code>InternalError</Code><Message>We encountered an "
				   "internal error. Please try again.</Message></Error>";
	assert_int_equal(os_xml_parse_complete(late, strlen(late), &e, NULL), 1);
	assert_string_equal(e.code, "InternalError");
	assert_int_equal(os_xml_parse_complete("<Other/>", 8, &e, NULL), -EBADMSG);
}

static void test_xml_delete(void **state)
{
	static const char body[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult "
		"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Deleted><Key>ok1</Key></Deleted>"
		"<Error><Key>locked/1</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
		"<Error><Key>locked/2</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
		"</DeleteResult>";
	struct os_s3_error first;
	assert_int_equal(os_xml_parse_delete(body, strlen(body), &first, NULL), 2);
	assert_string_equal(first.key, "locked/1");
	assert_string_equal(first.code, "AccessDenied");
	static const char quiet[] = "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>";
	assert_int_equal(os_xml_parse_delete(quiet, strlen(quiet), &first, NULL), 0);
	assert_int_equal(os_xml_parse_delete("<Error/>", 8, &first, NULL), -EBADMSG);
}

static void test_status_errno(void **state)
{
	assert_int_equal(os_http_status_errno(403), -EACCES);
	assert_int_equal(os_http_status_errno(404), -ENOENT);
	assert_int_equal(os_http_status_errno(400), -EINVAL);
	assert_int_equal(os_http_status_errno(503), -EAGAIN);
	assert_int_equal(os_http_status_errno(500), -EIO);
	assert_int_equal(os_http_status_errno(301), -EREMOTE);
}

/* x-amz-tagging values: key=value pairs joined by '&', RFC 3986 encoded. */
static void test_tagging_encode(void **state)
{
	(void)state;
	static const struct {
		const char *pairs[3][2]; /* up to three, NULL key ends */
		const char *want;
	} cases[] = {
		{ { { "env", "prod" } }, "env=prod" },
		{ { { "env", "prod" }, { "team", "db" } }, "env=prod&team=db" },
		{ { { "team name", "a b" } }, "team%20name=a%20b" },
		{ { { "k", "" } }, "k=" },
		{ { { "a=b", "c=d" } }, "a%3Db=c%3Dd" },
		{ { { "p", "+-=._:/@" } }, "p=%2B-%3D._%3A%2F%40" },
		{ { { "\xc3\xa9quipe", "\xc3\xa9t\xc3\xa9" } }, "%C3%A9quipe=%C3%A9t%C3%A9" },
		{ { { "x", "y" }, { "\xe5\x9b\xa2", "a_b.c-d" } }, "x=y&%E5%9B%A2=a_b.c-d" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct op_buf b = OP_BUF_INIT(OS_TAGGING_MAX);
		struct op_err err = OP_ERR_INIT;
		for (size_t j = 0; j < 3 && cases[i].pairs[j][0]; j++)
			assert_int_equal(os_tagging_add(&b, cases[i].pairs[j][0], cases[i].pairs[j][1],
							&err), 0);
		if (strcmp(op_buf_str(&b), cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, op_buf_str(&b), cases[i].want);
		op_buf_done(&b);
	}
	/* a character S3 refuses: nothing appended, the key named */
	struct op_buf b = OP_BUF_INIT(OS_TAGGING_MAX);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(os_tagging_add(&b, "a&b", "x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"a&b\": tag key: only letters"));
	assert_int_equal(b.len, 0);
	op_buf_done(&b);
}

static void test_tag_check(void **state)
{
	(void)state;
	char k128[129], k129[130], v256[257], v257[258], u128[2 * 128 + 1];
	memset(k128, 'k', 128), k128[128] = '\0';
	memset(k129, 'k', 129), k129[129] = '\0';
	memset(v256, 'v', 256), v256[256] = '\0';
	memset(v257, 'v', 257), v257[257] = '\0';
	for (int i = 0; i < 128; i++) /* 128 characters, 256 bytes: counted as characters */
		memcpy(u128 + 2 * i, "\xc3\xa9", 2);
	u128[256] = '\0';
	static const char *const bad_msg[] = { "tag key: only", "tag key: 1 to 128",
					       "tag key: the prefix aws:", "tag value: only",
					       "tag value: at most 256" };
	const struct {
		const char *k, *v;
		int msg; /* -1: accepted, else bad_msg[msg] */
	} cases[] = {
		{ "env", "prod", -1 },	  { "a b", "", -1 },	  { "+-=._:/@", "+-=._:/@", -1 },
		{ k128, v256, -1 },	  { u128, "x", -1 },	  { "AWS:x", "v", -1 },
		{ k129, "v", 1 },	  { "", "v", 1 },	  { "aws:x", "v", 2 },
		{ "k", v257, 4 },	  { "a&b", "v", 0 },	  { "k", "a&b", 3 },
		{ "a*", "v", 0 },	  { "k", "a\nb", 3 },	  { "k", "\xc3(", 3 },
		{ "\xff", "v", 0 },	  { "k", "a\"b", 3 },	  { "k", "%41", 3 },
		{ NULL, "v", 0 },	  { "k", NULL, 3 },
		/* Unicode: letters, digits and spaces (as versitygw, like S3, decides) */
		{ "\xe5\x9b\xa2", "\xd9\xa3 \xc7\x85", -1 },	/* 団, Arabic-Indic 3, Dž */
		{ "k", "a\xe3\x80\x80" "b", -1 },		/* ideographic space */
		{ "k", "\xe2\x82\xac", 3 },		/* € (400 InvalidTag from versitygw) */
		{ "\xc2\xa9", "v", 0 },			/* © */
		{ "k", "\xf0\x9f\x98\x80", 3 },		/* an emoji */
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		struct op_err err = OP_ERR_INIT;
		int rc = os_tag_check(cases[i].k, cases[i].v, &err);
		if (cases[i].msg < 0 && rc != 0)
			fail_msg("case %zu refused: %s", i, err.msg);
		if (cases[i].msg >= 0 && (rc != -EINVAL || !strstr(err.msg, bad_msg[cases[i].msg])))
			fail_msg("case %zu: rc %d, %s (want %s)", i, rc, err.msg, bad_msg[cases[i].msg]);
	}
	assert_true(os_sse_valid("AES256"));
	assert_true(os_sse_valid("aws:kms"));
	assert_false(os_sse_valid("aes256"));
	assert_false(os_sse_valid("aws:kms:dsse"));
	assert_false(os_sse_valid(NULL));
}

/* The client's put attributes: header lines for PutObject and
 * CreateMultipartUpload, checked, replaced, cleared. */
static void test_put_attrs(void **state)
{
	(void)state;
	struct os_config cfg = { .endpoint = "https://127.0.0.1:9", .bucket = "bkt",
				 .access_key = "AK", .secret_key = "SK" };
	struct os_client *c = NULL;
	struct op_err err = OP_ERR_INIT;
	if (os_client_new(&cfg, &c, &err) < 0)
		fail_msg("os_client_new: %s", err.msg);
	assert_null(c->put_hdrs[0]);
	struct os_put_attrs a = { .tagging = "env=prod&team%20name=db", .encryption = "aws:kms" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), 0);
	assert_string_equal(c->put_hdrs[0], "x-amz-tagging: env=prod&team%20name=db");
	assert_string_equal(c->put_hdrs[1], "x-amz-server-side-encryption: aws:kms");
	assert_null(c->put_hdrs[2]);
	a = (struct os_put_attrs){ .encryption = "AES256" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), 0);
	assert_string_equal(c->put_hdrs[0], "x-amz-server-side-encryption: AES256");
	assert_null(c->put_hdrs[1]);
	/* refused: a header injection, an unknown encryption; what was set stays */
	a = (struct os_put_attrs){ .tagging = "a=b\r\nx-amz-acl: public-read" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not an encoded tag set"));
	a = (struct os_put_attrs){ .tagging = "a=b c" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), -EINVAL);
	a = (struct os_put_attrs){ .encryption = "rot13" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), -EINVAL);
	assert_string_equal(c->put_hdrs[0], "x-amz-server-side-encryption: AES256");
	a = (struct os_put_attrs){ .tagging = "" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), 0);
	assert_null(c->put_hdrs[0]);
	assert_int_equal(os_client_set_put_attrs(c, NULL, &err), 0);
	assert_null(c->put_hdrs[0]);
	a = (struct os_put_attrs){ .tagging = "k=v" };
	assert_int_equal(os_client_set_put_attrs(c, &a, &err), 0);
	os_client_free(c); /* frees them (ASan: no leak) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint_valid), cmocka_unit_test(test_endpoint_invalid),
		cmocka_unit_test(test_dest),           cmocka_unit_test(test_key_encoding),
		cmocka_unit_test(test_xml_list),       cmocka_unit_test(test_xml_malformed),
		cmocka_unit_test(test_xml_caps),       cmocka_unit_test(test_xml_error),
		cmocka_unit_test(test_xml_multipart),  cmocka_unit_test(test_xml_delete),
		cmocka_unit_test(test_status_errno),   cmocka_unit_test(test_tagging_encode),
		cmocka_unit_test(test_tag_check),      cmocka_unit_test(test_put_attrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
