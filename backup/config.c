/* backup/config.c - the wal-archive/wal-restore configuration file, the
 * credential files it names, and objstore clients made from them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "backup/internal.h"
#include "support/alloc.h"
#include "support/json.h"

#define OPT(f) offsetof(struct bk_config, f)
static const struct {
	const char *key;
	size_t offset; /* of a char * in struct bk_config */
	bool required;
} str_keys[] = {
	{ "destinationPath", OPT(destination_path), true },
	{ "serverName", OPT(server_name), true },
	{ "endpointURL", OPT(endpoint_url), false },
	{ "region", OPT(region), false },
	{ "accessKeyIdFile", OPT(access_key_file), true },
	{ "secretAccessKeyFile", OPT(secret_key_file), true },
	{ "sessionTokenFile", OPT(session_token_file), false },
	{ "endpointCAFile", OPT(ca_file), false },
	{ "pgdata", OPT(pgdata), false },
	{ "stateDir", OPT(state_dir), true },
	{ "walEncryption", OPT(wal_encryption), false },
	{ "dataEncryption", OPT(data_encryption), false },
};

static char **field(struct bk_config *c, size_t offset)
{
	return (char **)(void *)((char *)c + offset);
}

static int known_key(const char *k)
{
	static const char *const others[] = { "walCompression", "maxParallel", "dataCompression",
					      "immediateCheckpoint", "jobs", "maxArchiveSize", "minChunkSize",
					      "walReadTimeout", "dataReadTimeout", "tags",
					      "historyTags" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(others); i++)
		if (strcmp(k, others[i]) == 0)
			return 1;
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_keys); i++)
		if (strcmp(k, str_keys[i].key) == 0)
			return 1;
	return 0;
}

static int parse_strings(json_object *root, struct bk_config *c, struct op_err *err)
{
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_keys); i++) {
		json_object *v;
		if (!json_object_object_get_ex(root, str_keys[i].key, &v) || json_object_is_type(v, json_type_null)) {
			if (str_keys[i].required)
				return op_err_set(err, -EINVAL, "config: %s is required", str_keys[i].key);
			continue;
		}
		if (!json_object_is_type(v, json_type_string))
			return op_err_set(err, -EINVAL, "config: %s: expected string, got %s",
					  str_keys[i].key, op_json_type_name(v));
		const char *s = json_object_get_string(v);
		if (!*s || strlen(s) > 4096)
			return op_err_set(err, -EINVAL, "config: %s: empty or too long", str_keys[i].key);
		*field(c, str_keys[i].offset) = op_strdup(s);
	}
	return 0;
}

/* tags or historyTags (key) as an x-amz-tagging value into *ret (owned;
 * NULL when absent or empty). */
static int parse_tag_set(json_object *root, const char *key, char **ret, struct op_err *err)
{
	json_object *v;
	if (!json_object_object_get_ex(root, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return op_err_set(err, -EINVAL, "config: %s: expected an object, got %s", key,
				  op_json_type_name(v));
	if ((size_t)json_object_object_length(v) > OS_TAGS_MAX)
		return op_err_set(err, -EINVAL, "config: %s: at most %u tags", key, OS_TAGS_MAX);
	struct op_buf b = OP_BUF_INIT(OS_TAGGING_MAX);
	int rc = 0;
	json_object_object_foreach(v, k, tv)
	{
		if (!json_object_is_type(tv, json_type_string))
			rc = op_err_set(err, -EINVAL, "config: %s.%.130s: expected string, got %s",
					key, k, op_json_type_name(tv));
		else if ((rc = os_tagging_add(&b, k, json_object_get_string(tv), err)) < 0)
			op_err_prefix(err, "config: %s", key);
		if (rc < 0)
			break;
	}
	if (rc == 0 && b.len)
		*ret = op_strdup(op_buf_str(&b));
	op_buf_done(&b);
	return rc;
}

/* tags, historyTags, walEncryption, dataEncryption: what every upload carries. */
static int parse_attrs(json_object *root, struct bk_config *c, struct op_err *err)
{
	static const char *const enc_keys[] = { "walEncryption", "dataEncryption" };
	const char *encs[] = { c->wal_encryption, c->data_encryption };
	for (size_t i = 0; i < OP_ARRAY_SIZE(encs); i++)
		if (encs[i] && !os_sse_valid(encs[i]))
			return op_err_set(err, -EINVAL, "config: %s: \"%.40s\": expected AES256 or "
					  "aws:kms", enc_keys[i], encs[i]);
	int rc = parse_tag_set(root, "tags", &c->tagging, err);
	return rc < 0 ? rc : parse_tag_set(root, "historyTags", &c->history_tagging, err);
}

/* dataCompression, immediateCheckpoint, jobs, maxArchiveSize: what base
 * backups read. */
static int parse_data(json_object *root, struct bk_config *c, struct op_err *err)
{
	json_object *v;
	c->jobs = BK_JOBS_DEFAULT;
	c->max_archive_size = BK_TAR_MAX_ARCHIVE_DEFAULT;
	if (json_object_object_get_ex(root, "maxArchiveSize", &v)) {
		int64_t n;
		if (op_json_to_i64(v, &n) != 1 || n < (int64_t)BK_TAR_MAX_ARCHIVE_MIN)
			return op_err_set(err, -EINVAL, "config: maxArchiveSize: expected an "
					  "integer of bytes, at least %u", BK_TAR_MAX_ARCHIVE_MIN);
		c->max_archive_size = (uint64_t)n;
	}
	if (json_object_object_get_ex(root, "minChunkSize", &v)) {
		int64_t n;
		if (op_json_to_i64(v, &n) != 1 || n < 5 * 1024 * 1024 || n > 256 * 1024 * 1024)
			return op_err_set(err, -EINVAL, "config: minChunkSize: expected an integer "
					  "of bytes, 5 MiB to 256 MiB");
		c->min_chunk_size = (uint64_t)n;
	}
	static const char *const timeouts[] = { "walReadTimeout", "dataReadTimeout" };
	long *const into[] = { &c->wal_read_timeout_s, &c->data_read_timeout_s };
	for (size_t i = 0; i < OP_ARRAY_SIZE(timeouts); i++) {
		int64_t n;
		if (!json_object_object_get_ex(root, timeouts[i], &v))
			continue;
		if (op_json_to_i64(v, &n) != 1 || n < 1 || n > 86400)
			return op_err_set(err, -EINVAL, "config: %s: expected whole seconds 1..86400",
					  timeouts[i]);
		*into[i] = (long)n;
	}
	if (json_object_object_get_ex(root, "jobs", &v)) {
		int64_t n;
		if (op_json_to_i64(v, &n) != 1 || n < 1 || n > BK_MAX_PARALLEL)
			return op_err_set(err, -EINVAL, "config: jobs: expected an integer 1..%d",
					  BK_MAX_PARALLEL);
		c->jobs = (unsigned)n;
	}
	if (json_object_object_get_ex(root, "immediateCheckpoint", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return op_err_set(err, -EINVAL, "config: immediateCheckpoint: expected a "
					  "boolean, got %s", op_json_type_name(v));
		c->immediate_checkpoint = json_object_get_boolean(v);
	}
	if (!json_object_object_get_ex(root, "dataCompression", &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return op_err_set(err, -EINVAL, "config: dataCompression: expected string, got %s",
				  op_json_type_name(v));
	const char *name = json_object_get_string(v);
	if (strcmp(name, "snappy") == 0) { /* refused by the backup itself, not the WAL archive */
		c->data_compression = BK_COMP_SNAPPY;
		return 0;
	}
	if (bk_compression_parse(name, &c->data_compression, err) < 0)
		return op_err_prefix(err, "config: dataCompression");
	return 0; /* xz and zstd: refused by the backup (bk_tar_stream_new), not here */
}

static int parse_others(json_object *root, struct bk_config *c, struct op_err *err)
{
	json_object *v;
	c->max_parallel = 1;
	if (json_object_object_get_ex(root, "maxParallel", &v)) {
		int64_t n;
		if (op_json_to_i64(v, &n) != 1 || n < 1 || n > BK_MAX_PARALLEL)
			return op_err_set(err, -EINVAL, "config: maxParallel: expected an integer 1..%d",
					  BK_MAX_PARALLEL);
		c->max_parallel = (unsigned)n;
	}
	if (json_object_object_get_ex(root, "walCompression", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return op_err_set(err, -EINVAL, "config: walCompression: expected string, got %s",
					  op_json_type_name(v));
		int rc = bk_compression_parse(json_object_get_string(v), &c->compression, err);
		if (rc < 0)
			return op_err_prefix(err, "config: walCompression");
	}
	const char *s = c->server_name;
	if (strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return op_err_set(err, -EINVAL, "config: serverName: '%.80s' must not contain '/'", s);
	int rc = os_dest_parse(c->destination_path, &c->dest, err);
	if (rc == 0 && c->endpoint_url) {
		struct os_endpoint ep;
		rc = os_endpoint_parse(c->endpoint_url, &ep, err);
	}
	return rc < 0 ? op_err_prefix(err, "config") : 0;
}

int bk_config_parse(const char *json, size_t len, struct bk_config *ret, struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *root = NULL;
	int rc = op_json_parse(json, len, 8, &root, err);
	if (rc < 0)
		return op_err_prefix(err, "config");
	if (!json_object_is_type(root, json_type_object))
		return op_err_set(err, -EINVAL, "config: expected a JSON object, got %s",
				  op_json_type_name(root));
	json_object_object_foreach(root, k, v0)
	{
		(void)v0;
		if (!known_key(k))
			return op_err_set(err, -EINVAL, "config: unknown key '%.60s'", k);
	}
	struct bk_config c = { 0 };
	rc = parse_strings(root, &c, err);
	if (rc == 0)
		rc = parse_others(root, &c, err);
	if (rc == 0)
		rc = parse_data(root, &c, err);
	if (rc == 0)
		rc = parse_attrs(root, &c, err);
	if (rc < 0) {
		bk_config_done(&c);
		return rc;
	}
	*ret = c;
	return 0;
}

int bk_read_file(const char *path, struct op_buf *out, struct op_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return op_err_set(err, -errno, "%s: %s", path, strerror(errno));
	char chunk[4096];
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = op_err_set(err, -errno, "%s: %s", path, strerror(errno));
		else if (n > 0 && op_buf_add(out, chunk, (size_t)n) < 0)
			rc = op_err_set(err, -EFBIG, "%s: larger than %zu bytes", path, out->max);
		if (n <= 0 || rc < 0)
			break;
	}
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	return rc;
}

int bk_config_load(const char *path, struct bk_config *ret, struct op_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return op_err_set(err, -errno, "config %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return op_err_set(err, -EINVAL, "config %s: not a regular file", path);
	if (st.st_mode & 077)
		return op_err_set(err, -EPERM, "config %s: mode %04o, must not be accessible to "
				  "group or others (0600)", path, (unsigned)(st.st_mode & 07777));
	struct op_buf b = OP_BUF_INIT(BK_CONFIG_MAX_BYTES);
	int rc = bk_read_file(path, &b, err);
	if (rc == 0 && (rc = bk_config_parse(op_buf_str(&b), b.len, ret, err)) < 0)
		op_err_prefix(err, "%s", path);
	op_buf_done(&b);
	return rc;
}

void bk_config_done(struct bk_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < OP_ARRAY_SIZE(str_keys); i++) {
		free(*field(c, str_keys[i].offset));
		*field(c, str_keys[i].offset) = NULL;
	}
	free(c->tagging);
	free(c->history_tagging);
	c->tagging = c->history_tagging = NULL;
}

/* A credential: the file's contents without trailing newlines/spaces. */
static int load_secret(const char *path, const char *what, struct op_buf *b, struct op_err *err)
{
	*b = OP_BUF_INIT(BK_SECRET_MAX);
	int rc = bk_read_file(path, b, err);
	if (rc < 0)
		return op_err_prefix(err, "%s", what);
	while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r' ||
			  b->data[b->len - 1] == ' '))
		b->data[--b->len] = '\0';
	if (b->len == 0)
		return op_err_set(err, -EINVAL, "%s: %s is empty", what, path);
	return 0;
}

static void wipe(struct op_buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	op_buf_done(b);
}

void bk_secrets_done(struct bk_secrets *s)
{
	wipe(&s->access);
	wipe(&s->secret);
	wipe(&s->token);
	wipe(&s->ca);
}

int bk_secrets_load(const struct bk_config *cfg, struct bk_secrets *ret, struct op_err *err)
{
	struct bk_secrets s = { .token = OP_BUF_INIT(BK_SECRET_MAX), .ca = OP_BUF_INIT(BK_CA_MAX) };
	int rc = load_secret(cfg->access_key_file, "access key id", &s.access, err);
	if (rc == 0)
		rc = load_secret(cfg->secret_key_file, "secret access key", &s.secret, err);
	if (rc == 0 && cfg->session_token_file)
		rc = load_secret(cfg->session_token_file, "session token", &s.token, err);
	if (rc == 0 && cfg->ca_file && (rc = bk_read_file(cfg->ca_file, &s.ca, err)) < 0)
		op_err_prefix(err, "endpoint CA");
	if (rc < 0) {
		bk_secrets_done(&s);
		return rc;
	}
	*ret = s;
	return 0;
}

static int client_new(const struct bk_config *cfg, const struct bk_secrets *s,
		      long read_timeout_s, struct os_client **ret, struct op_err *err)
{
	struct os_config oc = {
		.endpoint = cfg->endpoint_url, .region = cfg->region, .bucket = cfg->dest.bucket,
		.access_key = op_buf_str(&s->access), .secret_key = op_buf_str(&s->secret),
		.session_token = s->token.len ? op_buf_str(&s->token) : NULL,
		.ca_pem = s->ca.len ? s->ca.data : NULL, .ca_pem_len = s->ca.len,
		.transfer_timeout_ms = BK_TRANSFER_TIMEOUT_MS,
		.low_speed_seconds = read_timeout_s,
	};
	return os_client_new(&oc, ret, err);
}

int bk_client_new(const struct bk_config *cfg, const struct bk_secrets *s,
		  struct os_client **ret, struct op_err *err)
{
	return client_new(cfg, s, cfg->wal_read_timeout_s, ret, err);
}

int bk_client_new_data(const struct bk_config *cfg, const struct bk_secrets *s,
		       struct os_client **ret, struct op_err *err)
{
	return client_new(cfg, s, cfg->data_read_timeout_s, ret, err);
}

int bk_client_set_attrs(struct os_client *c, const struct bk_config *cfg, enum bk_put_kind kind,
			struct op_err *err)
{
	const char *tags = cfg->tagging;
	if (kind == BK_PUT_HISTORY && cfg->history_tagging)
		tags = cfg->history_tagging; /* barman-cloud-wal-archive --history-tags */
	struct os_put_attrs a = {
		.tagging = tags,
		.encryption = kind == BK_PUT_DATA ? cfg->data_encryption : cfg->wal_encryption,
	};
	return os_client_set_put_attrs(c, &a, err);
}
