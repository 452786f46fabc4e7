/* tests/unit/test_instance_files.c - instance/ file helpers on a temp dir:
 * atomic writes and modes, write-if-changed, certificate copies, Secret
 * files, and loading the Cluster from a --cluster-file (JSON and YAML). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#undef malloc
#undef calloc
#undef realloc
#undef free

#include "instance/internal.h"
#include "support/alloc.h"
#include "support/file.h"

static char dir[] = "/tmp/pgop-test-instance-XXXXXX";

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char *cmd = op_asprintf("rm -rf '%s'", dir);
	int r = system(cmd);
	free(cmd);
	return r == 0 ? 0 : -1;
}

static char *path(const char *rel)
{
	return op_asprintf("%s/%s", dir, rel);
}

static void put(const char *rel, const char *content)
{
	char *p = path(rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	assert_int_equal(op_mkdir_p(p, 0755, NULL), 0);
	*slash = '/';
	assert_int_equal(inst_write_file(p, content, strlen(content), 0644, NULL), 0);
	free(p);
}

static char *slurp(const char *rel)
{
	char *p = path(rel);
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	int r = inst_read_file(p, b.max, &b, NULL);
	free(p);
	if (r) {
		op_buf_done(&b);
		return NULL;
	}
	return op_buf_take(&b, NULL);
}

static unsigned mode_of(const char *rel)
{
	char *p = path(rel);
	struct stat st;
	int r = stat(p, &st);
	free(p);
	return r == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

static void test_write_and_modes(void **state)
{
	char *p = path("a/b/c/file");
	struct op_err err = OP_ERR_INIT;
	char *d = path("a/b/c");
	assert_int_equal(op_mkdir_p(d, 0700, &err), 0);
	assert_int_equal(op_mkdir_p(d, 0700, &err), 0); /* idempotent */
	assert_int_equal(inst_write_file(p, "one", 3, 0600, &err), 0);
	assert_int_equal(mode_of("a/b/c/file"), 0600);
	char *s = slurp("a/b/c/file");
	assert_string_equal(s, "one");
	free(s);
	/* no temp file left behind */
	char *tmp = op_asprintf("%s.pgop-tmp", p);
	assert_false(inst_path_exists(tmp));
	free(tmp);
	assert_int_equal(inst_write_if_changed(p, "one", 3, 0600, &err), 0);
	assert_int_equal(inst_write_if_changed(p, "two", 3, 0600, &err), 1);
	s = slurp("a/b/c/file");
	assert_string_equal(s, "two");
	free(s);
	/* a missing directory fails with the path in the message */
	char *bad = path("nope/file");
	assert_int_equal(inst_write_file(bad, "x", 1, 0600, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope/file"));
	free(bad);
	free(d);
	free(p);
}

static void test_read_file_cap(void **state)
{
	put("big", "0123456789");
	char *p = path("big");
	struct op_buf b = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_read_file(p, 5, &b, &err), -EMSGSIZE);
	op_buf_done(&b);
	free(p);
}

static void test_sync_certificates(void **state)
{
	put("certs/server/tls.crt", "SERVER CERT");
	put("certs/server/tls.key", "SERVER KEY");
	put("certs/ca/ca.crt", "CA");
	char *certs = path("certs"), *ctl = path("ctl");
	struct inst_paths p = { .certs_dir = certs, .controller_dir = ctl };
	struct op_err err = OP_ERR_INIT;
	/* replication files are optional (not every job mounts them) */
	assert_int_equal(inst_sync_certificates(&p, &err), 1);
	char *s = slurp("ctl/certificates/server.key");
	assert_string_equal(s, "SERVER KEY");
	free(s);
	s = slurp("ctl/certificates/server-ca.crt");
	assert_string_equal(s, "CA");
	free(s);
	s = slurp("ctl/certificates/client-ca.crt");
	assert_string_equal(s, "CA");
	free(s);
	assert_int_equal(mode_of("ctl/certificates/server.key"), 0600);
	assert_int_equal(mode_of("ctl/certificates"), 0700);
	assert_int_equal(inst_sync_certificates(&p, &err), 0); /* unchanged */
	put("certs/replication/tls.crt", "REPL CERT");
	put("certs/replication/tls.key", "REPL KEY");
	assert_int_equal(inst_sync_certificates(&p, &err), 1);
	assert_int_equal(mode_of("ctl/certificates/streaming_replica.key"), 0600);
	put("certs/server/tls.crt", "ROTATED");
	assert_int_equal(inst_sync_certificates(&p, &err), 1);
	s = slurp("ctl/certificates/server.crt");
	assert_string_equal(s, "ROTATED");
	free(s);
	/* the server certificate is required */
	char *key = path("certs/server/tls.key");
	unlink(key);
	assert_int_equal(inst_sync_certificates(&p, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "server/tls.key"));
	free(key);
	free(certs);
	free(ctl);
}

static void test_read_secret(void **state)
{
	put("secrets/app/password", "s3cret\n");
	char *sd = path("secrets");
	struct inst_paths p = { .secrets_dir = sd };
	char *v = NULL;
	assert_int_equal(inst_read_secret(&p, "app", "password", &v, NULL), 0);
	assert_string_equal(v, "s3cret");
	free(v);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(inst_read_secret(&p, "superuser", "password", &v, &err), -ENOENT);
	free(sd);
}

static void test_cluster_file(void **state)
{
	put("c.yaml", "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: yc\n"
		      "spec:\n  instances: 3\nstatus:\n  targetPrimary: yc-2\n");
	put("c.json", "{\"metadata\":{\"name\":\"jc\"},\"spec\":{\"instances\":2}}");
	put("two.yaml", "metadata: {name: a}\n---\nmetadata: {name: b}\n");
	put("bad.json", "{\"spec\":{\"instances\":\"two\"}}");
	static const struct {
		const char *file, *name;
		int64_t instances;
		int rc;
	} t[] = {
		{ "c.yaml", "yc", 3, 0 },
		{ "c.json", "jc", 2, 0 },
		{ "two.yaml", NULL, 0, -EINVAL },
		{ "bad.json", NULL, 0, -EINVAL },
		{ "missing.json", NULL, 0, -ENOENT },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(t); i++) {
		char *f = path(t[i].file);
		struct inst_source src = { .cluster_file = f };
		struct api_cluster *c = NULL;
		struct op_err err = OP_ERR_INIT;
		int r = inst_cluster_load(&src, &c, &err);
		if (r != t[i].rc)
			fail_msg("%s: rc %d (%s), want %d", t[i].file, r, err.msg, t[i].rc);
		if (r == 0) {
			assert_string_equal(c->metadata.name, t[i].name);
			assert_int_equal(c->spec.instances, t[i].instances);
		} else {
			assert_true(err.msg[0] != '\0');
		}
		api_cluster_free(c);
		/* file mode never talks to an API server: the patch is a no-op */
		if (i == 0)
			assert_int_equal(inst_cluster_patch_status(&src, "{}", NULL), 0);
		free(f);
	}
}

static void test_run_cmd(void **state)
{
	const char *ok[] = { "true", NULL };
	const char *code3[] = { "sh", "-c", "exit 3", NULL };
	const char *missing[] = { "no-such-program", NULL };
	assert_int_equal(inst_run_cmd("/bin", ok, NULL), 0);
	assert_int_equal(inst_run_cmd("/bin", code3, NULL), 3);
	assert_int_equal(inst_run_cmd("/bin", missing, NULL), 127);
}

/* pgop bootstrap: this binary copied byte for byte, mode 0755, no temp file
 * left; a missing directory names the destination. */
static void test_copy_self(void **state)
{
	char *dest = path("bin/pgop");
	char *d = path("bin");
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_mkdir_p(d, 0755, &err), 0);
	assert_int_equal(inst_copy_self(dest, &err), 0);
	assert_int_equal(mode_of("bin/pgop"), 0755);
	struct stat a, b;
	assert_int_equal(stat("/proc/self/exe", &a), 0);
	assert_int_equal(stat(dest, &b), 0);
	assert_int_equal(a.st_size, b.st_size);
	char *tmp = op_asprintf("%s.tmp-%d", dest, (int)getpid());
	assert_false(inst_path_exists(tmp));
	free(tmp);
	assert_int_equal(inst_copy_self(dest, &err), 0); /* replaces an existing copy */
	char *bad = path("nope/pgop");
	err = OP_ERR_INIT;
	assert_int_equal(inst_copy_self(bad, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nope/pgop.tmp-"));
	free(bad);
	free(d);
	free(dest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_and_modes),  cmocka_unit_test(test_read_file_cap),
		cmocka_unit_test(test_sync_certificates), cmocka_unit_test(test_read_secret),
		cmocka_unit_test(test_cluster_file),      cmocka_unit_test(test_run_cmd),
		cmocka_unit_test(test_copy_self),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
