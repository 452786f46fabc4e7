/* pgop-s3: a thin CLI over objstore/ for tests/e2e/test_objstore.sh.
 *
 *   pgop-s3 --endpoint URL --bucket B --creds FILE [--ca PEMFILE] [--region R]
 *           [--part-size MIB] [--jobs N] [--max BYTES] [--page N] [--stats]
 *           [--tag K=V]... [--sse AES256|aws:kms] CMD ARGS
 *   (--tag, --sse: x-amz-tagging / x-amz-server-side-encryption on every
 *   PutObject and CreateMultipartUpload, os_client_set_put_attrs; --tag-unchecked
 *   K=V: encoded without os_tag_check, to see what the store says)
 *   put KEY        stdin to KEY, streamed (multipart past one part; --jobs N:
 *                  N parts uploaded at once, os_put_from_reader_jobs)
 *   put-mem KEY    stdin read into memory (<= 64 MiB), one signed PUT
 *   get KEY        KEY to stdout (--max caps it)
 *   head KEY       prints "SIZE ETAG"
 *   list [PREFIX [DELIMITER]]  prints "O KEY SIZE" or "P PREFIX" per entry
 *   delete KEY...  one DeleteObjects ("-": keys from stdin, one per line)
 *   mpu-abort KEY  creates an upload, sends one 5 MiB part, aborts it
 *   put-many PREFIX N   N small objects PREFIX000000.. (their key as content),
 *                  one client: prints "put-many: N in MS ms"
 *   get-tagging KEY  GetObjectTagging (GET KEY?tagging): prints "KEY=VALUE" per
 *                  tag, sorted
 * Credentials come from FILE (access key line, secret key line), never argv.
 * Errors: "pgop-s3: <message>" on stderr, exit 1. --stats prints
 * "stats: bytes=N ms=N maxrss_kb=N" on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "objstore/internal.h" /* os_do, os_xml_walk: GetObjectTagging is the tests' alone */
#include "support/alloc.h"

struct opts {
	struct os_config cfg;
	size_t part_size;
	unsigned jobs; /* put: parts uploaded at once (0: one at a time) */
	uint64_t max;
	unsigned page;
	int stats;
	uint64_t bytes;
	struct op_buf tagging; /* --tag pairs, encoded */
	struct os_put_attrs attrs;
	struct op_err tag_err; /* a --tag refused */
};

static int read_file(const char *path, struct op_buf *b)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char chunk[4096];
	size_t n;
	int rc = 0;
	while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = op_buf_add(b, chunk, n);
	fclose(f);
	return rc;
}

/* "ACCESS\nSECRET\n" into the config (the buffer keeps them; wiped at exit). */
static int load_creds(const char *path, struct op_buf *b, struct os_config *cfg)
{
	int rc = read_file(path, b);
	if (rc < 0)
		return rc;
	char *nl = strchr(b->data ? b->data : "", '\n');
	if (!nl)
		return -EINVAL;
	*nl = '\0';
	cfg->access_key = b->data;
	cfg->secret_key = nl + 1;
	nl = strchr(nl + 1, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

static ssize_t stdin_read(void *ud, void *buf, size_t len)
{
	struct opts *o = ud;
	ssize_t n;
	do
		n = read(0, buf, len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		o->bytes += (uint64_t)n;
	return n < 0 ? -errno : n;
}

static int stdout_write(void *ud, const void *buf, size_t len)
{
	struct opts *o = ud;
	if (fwrite(buf, 1, len, stdout) != len)
		return -EIO;
	o->bytes += len;
	return 0;
}

static int list_print(void *ud, const struct os_list_entry *e)
{
	if (e->is_prefix)
		printf("P %s\n", e->key);
	else
		printf("O %s %llu\n", e->key, (unsigned long long)e->size);
	return 0;
}

static int cmd_put_mem(struct os_client *c, struct opts *o, const char *key, struct op_err *err)
{
	struct op_buf b = OP_BUF_INIT(64u * 1024 * 1024);
	char chunk[65536];
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = stdin_read(o, chunk, sizeof(chunk))) > 0)
		rc = op_buf_add(&b, chunk, (size_t)n);
	if (rc == 0)
		rc = os_put(c, key, b.data, b.len, err);
	else
		op_err_set(err, rc, "stdin past 64 MiB");
	op_buf_done(&b);
	return rc;
}

static int cmd_delete(struct os_client *c, char **keys, int n, struct op_err *err)
{
	if (n == 1 && !strcmp(keys[0], "-")) {
		static char *lines[OS_DELETE_BATCH_MAX];
		static char line[OS_KEY_MAX + 2];
		int k = 0;
		while (k < (int)OS_DELETE_BATCH_MAX && fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = '\0';
			lines[k++] = op_strdup(line);
		}
		int rc = os_delete_batch(c, (const char *const *)lines, (size_t)k, err);
		for (int i = 0; i < k; i++)
			free(lines[i]);
		return rc;
	}
	return os_delete_batch(c, (const char *const *)keys, (size_t)n, err);
}

static int cmd_mpu_abort(struct os_client *c, const char *key, struct op_err *err)
{
	struct os_mpu *m = NULL;
	int rc = os_mpu_create(c, key, &m, err);
	char *part = rc == 0 ? op_calloc(1, OS_PART_MIN) : NULL;
	if (rc == 0)
		rc = os_mpu_upload_part(c, m, part, OS_PART_MIN, err);
	if (m)
		rc = rc ? rc : os_mpu_abort(c, m, err);
	free(part);
	os_mpu_free(m);
	return rc;
}

static int cmd_put_many(struct os_client *c, const char *prefix, const char *count,
			struct op_err *err)
{
	unsigned n = (unsigned)strtoul(count, NULL, 10);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		char key[OS_KEY_MAX + 1];
		snprintf(key, sizeof(key), "%.1000s%06u", prefix, i);
		rc = os_put(c, key, key, strlen(key), err);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (rc == 0)
		printf("put-many: %u in %ld ms\n", n, ms);
	return rc;
}

/* GetObjectTagging's <Tagging><TagSet><Tag><Key/><Value/></Tag>...: one
 * "key=value" line per Tag into lines (sorted by sort(1) in the test). */
struct tags_walk {
	struct op_buf *out;
	int rc;
};

static int tag_leaf(void *ud, unsigned depth, const char *parent, const char *name,
		    const char *text, size_t len)
{
	struct tags_walk *w = ud;
	(void)depth;
	if (strcmp(parent, "Tag") != 0)
		return 0;
	if (!strcmp(name, "Key"))
		w->rc = w->rc ? w->rc : op_buf_add(w->out, text, len);
	else if (!strcmp(name, "Value") && !w->rc && !(w->rc = op_buf_addc(w->out, '=')) &&
		 !(w->rc = op_buf_add(w->out, text, len)))
		w->rc = op_buf_addc(w->out, '\n');
	return w->rc;
}

static int cmd_get_tagging(struct os_client *c, const char *key, struct op_err *err)
{
	struct op_buf resp = OP_BUF_INIT(OS_RESP_MAX_XML), lines = OP_BUF_INIT(64 * 1024);
	struct os_req r = { .op = "GET-TAGGING", .method = "GET", .key = key, .query = "tagging=",
			    .resp = &resp, .max_body = OS_RESP_MAX_XML };
	int rc = os_do(c, &r, err);
	struct tags_walk w = { .out = &lines };
	struct os_xml_cb cb = { .leaf = tag_leaf, .ud = &w };
	char root[OS_XML_NAME_MAX];
	if (rc == 0 && (rc = os_xml_walk(resp.data, resp.len, &cb, root, err)) == 0 &&
	    strcmp(root, "Tagging") != 0)
		rc = op_err_set(err, -EBADMSG, "GET-TAGGING: root <%s>, not <Tagging>", root);
	if (rc == 0)
		fputs(op_buf_str(&lines), stdout);
	op_buf_done(&resp);
	op_buf_done(&lines);
	return rc;
}

/* put with o->jobs clients (c the first; the others made here). */
static int cmd_put_jobs(struct os_client *c, struct opts *o, const char *key, struct op_err *err)
{
	struct os_client **cs = op_calloc(o->jobs, sizeof(*cs));
	int rc = 0;
	cs[0] = c;
	for (unsigned i = 1; rc == 0 && i < o->jobs; i++)
		if ((rc = os_client_new(&o->cfg, &cs[i], err)) == 0)
			rc = os_client_set_put_attrs(cs[i], &o->attrs, err);
	if (rc == 0)
		rc = os_put_from_reader_jobs(cs, o->jobs, key, stdin_read, o, o->part_size, NULL,
					     err);
	for (unsigned i = 1; i < o->jobs; i++)
		os_client_free(cs[i]);
	free(cs);
	return rc;
}

static int run(struct os_client *c, struct opts *o, int argc, char **argv, struct op_err *err)
{
	const char *cmd = argv[0], *key = argc > 1 ? argv[1] : NULL;
	struct os_object_info info;
	int rc;
	if (!strcmp(cmd, "put") && key && o->jobs)
		return cmd_put_jobs(c, o, key, err);
	if (!strcmp(cmd, "put") && key)
		return os_put_from_reader(c, key, stdin_read, o, o->part_size, NULL, err);
	if (!strcmp(cmd, "put-mem") && key)
		return cmd_put_mem(c, o, key, err);
	if (!strcmp(cmd, "get") && key)
		return os_get(c, key, stdout_write, o, o->max, NULL, err);
	if (!strcmp(cmd, "head") && key) {
		if ((rc = os_head(c, key, &info, err)) == 0)
			printf("%llu %s\n", (unsigned long long)info.size, info.etag);
		return rc;
	}
	if (!strcmp(cmd, "list")) {
		struct os_list_opts lo = { .prefix = key, .delimiter = argc > 2 ? argv[2] : NULL,
					   .page_size = o->page };
		rc = os_list(c, &lo, list_print, NULL, err);
		return rc < 0 ? rc : 0;
	}
	if (!strcmp(cmd, "delete") && key) {
		rc = cmd_delete(c, argv + 1, argc - 1, err);
		return rc > 0 ? -EIO : rc;
	}
	if (!strcmp(cmd, "put-many") && argc > 2)
		return cmd_put_many(c, key, argv[2], err);
	if (!strcmp(cmd, "get-tagging") && key)
		return cmd_get_tagging(c, key, err);
	if (!strcmp(cmd, "mpu-abort") && key)
		return cmd_mpu_abort(c, key, err);
	return op_err_set(err, -EINVAL, "unknown command or missing argument: %s", cmd);
}

/* --tag K=V (split at the first '='); a refused tag is reported by main.
 * unchecked: encoded as os_tagging_add does, without its check. */
static void add_tag(struct opts *o, char *kv, bool unchecked)
{
	char *eq = strchr(kv, '=');
	if (eq)
		*eq = '\0';
	const char *v = eq ? eq + 1 : "";
	if (o->tag_err.code || (!unchecked && os_tagging_add(&o->tagging, kv, v, &o->tag_err) < 0))
		return; /* o->tag_err says why */
	if (unchecked && ((o->tagging.len && op_buf_addc(&o->tagging, '&') < 0) ||
			  os_uri_encode(&o->tagging, kv, false) < 0 ||
			  op_buf_addc(&o->tagging, '=') < 0 || os_uri_encode(&o->tagging, v, false) < 0))
		op_err_set(&o->tag_err, -E2BIG, "--tag-unchecked: too long");
}

static int parse_opts(int argc, char **argv, struct opts *o, const char **creds, const char **ca)
{
	static const struct option lo[] = {
		{ "endpoint", 1, 0, 'e' }, { "bucket", 1, 0, 'b' }, { "creds", 1, 0, 'c' },
		{ "ca", 1, 0, 'a' },       { "region", 1, 0, 'r' }, { "part-size", 1, 0, 'p' },
		{ "max", 1, 0, 'm' },      { "page", 1, 0, 'n' },   { "stats", 0, 0, 's' },
		{ "jobs", 1, 0, 'j' },     { "tag", 1, 0, 't' },    { "sse", 1, 0, 'E' },
		{ "tag-unchecked", 1, 0, 'T' },
		{ 0, 0, 0, 0 },
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (ch) {
		case 'e': o->cfg.endpoint = optarg; break;
		case 'b': o->cfg.bucket = optarg; break;
		case 'c': *creds = optarg; break;
		case 'a': *ca = optarg; break;
		case 'r': o->cfg.region = optarg; break;
		case 'p': o->part_size = strtoull(optarg, NULL, 10) * 1024 * 1024; break;
		case 'm': o->max = strtoull(optarg, NULL, 10); break;
		case 'n': o->page = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': o->stats = 1; break;
		case 'j': o->jobs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': add_tag(o, optarg, false); break;
		case 'T': add_tag(o, optarg, true); break;
		case 'E': o->attrs.encryption = optarg; break;
		default: return -EINVAL;
		}
	}
	return optind < argc && *creds ? optind : -EINVAL;
}

int main(int argc, char **argv)
{
	struct opts o = { .max = UINT64_MAX, .tagging = OP_BUF_INIT(OS_TAGGING_MAX),
			  .tag_err = OP_ERR_INIT };
	const char *creds = NULL, *ca = NULL;
	int first = parse_opts(argc, argv, &o, &creds, &ca);
	if (first < 0) {
		fprintf(stderr, "usage: pgop-s3 --endpoint URL --bucket B --creds FILE [--ca PEM] CMD ...\n");
		return 2;
	}
	struct op_buf cb = OP_BUF_INIT(4096), cab = OP_BUF_INIT(1024 * 1024);
	struct op_err err = OP_ERR_INIT;
	struct os_client *c = NULL;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = load_creds(creds, &cb, &o.cfg);
	if (rc < 0)
		op_err_set(&err, rc, "cannot read credentials from %s", creds);
	if (rc == 0 && ca && (rc = read_file(ca, &cab)) < 0)
		op_err_set(&err, rc, "cannot read CA from %s", ca);
	o.cfg.ca_pem = cab.data, o.cfg.ca_pem_len = cab.len;
	if (rc == 0 && o.tag_err.code)
		err = o.tag_err, rc = o.tag_err.code;
	if (rc == 0)
		rc = os_client_new(&o.cfg, &c, &err);
	o.attrs.tagging = op_buf_str(&o.tagging);
	if (rc == 0)
		rc = os_client_set_put_attrs(c, &o.attrs, &err);
	if (rc == 0)
		rc = run(c, &o, argc - first, argv + first, &err);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	os_client_free(c);
	if (cb.data)
		explicit_bzero(cb.data, cb.len);
	op_buf_done(&cb);
	op_buf_done(&cab);
	op_buf_done(&o.tagging);
	if (o.stats) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		fprintf(stderr, "stats: bytes=%llu ms=%ld maxrss_kb=%ld\n", (unsigned long long)o.bytes,
			ms, ru.ru_maxrss);
	}
	if (rc < 0) {
		fprintf(stderr, "pgop-s3: %s (%s)\n", err.msg[0] ? err.msg : "failed", strerror(-rc));
		return 1;
	}
	return 0;
}
