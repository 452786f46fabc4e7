/* tests/unit/test_webhooks.c - webhooks/: AdmissionReview v1 envelope, every
 * sample of samples/ (and of the CloudNativePG corpus when PGOP_SHARED_DIR is set)
 * through mutate, CREATE and no-op UPDATE admission, and every samples/invalid/
 * Cluster denied on the field its "# pgop-denied:" line names. */
#include "samples_dirs.h"
#include "webhooks_test_util.h"

/* ---- AdmissionReview envelope ---- */

static char *b64decode(const char *s)
{
	char *out = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_base64_decode_str(s, strlen(s), 0, &out, NULL, &err) != 0)
		fail_msg("patch is not base64: %s", err.msg);
	return out;
}

#define REVIEW(op, kind, obj, old)                                                                 \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"      \
	"\"uid\":\"705ab4f5-1\",\"kind\":" kind ",\"operation\":\"" op "\",\"name\":\"pg\","      \
	"\"object\":" obj ",\"oldObject\":" old ",\"dryRun\":false}}"
#define CKIND "{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"kind\":\"Cluster\"}"

/* Runs a review on resource rs's webhook; returns the parsed response
 * (owned) or NULL with *ret_rc set. */
static json_object *review_rs(enum wh_kind kind, enum wh_resource rs, const char *body,
			      int *ret_rc, struct op_err *err)
{
	struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	int r = rs == WH_RES_CLUSTER ? wh_handle_review(kind, body, strlen(body), &resp, err)
				     : wh_handle_review_resource(kind, rs, body, strlen(body),
								 &resp, err);
	*ret_rc = r;
	json_object *out = NULL;
	if (r == 0)
		out = parse(op_buf_str(&resp));
	else
		assert_int_equal(resp.len, 0);
	op_buf_done(&resp);
	return out;
}

static json_object *review(enum wh_kind kind, const char *body, int *ret_rc, struct op_err *err)
{
	return review_rs(kind, WH_RES_CLUSTER, body, ret_rc, err);
}

static void test_review_mutate_patch(void **state)
{
	(void)state;
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *out = review(WH_MUTATE, REVIEW("CREATE", CKIND, CLUSTER(""), "null"), &rc, &err);
	assert_int_equal(rc, 0);
	assert_str_at(out, "apiVersion", "admission.k8s.io/v1");
	assert_str_at(out, "kind", "AdmissionReview");
	assert_str_at(out, "response.uid", "705ab4f5-1");
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_str_at(out, "response.patchType", "JSONPatch");
	char *ptxt = b64decode(str_at(out, "response.patch"));
	json_object *patch = parse(ptxt), *orig = parse(CLUSTER("")), *applied = NULL;
	free(ptxt);
	assert_int_equal(op_jsonpatch_apply(orig, patch, &applied, NULL), 0);
	assert_str_at(applied, "spec.imageName", WH_DEFAULT_IMAGE);
	json_object *expect = defaulted(CLUSTER(""));
	assert_true(json_object_equal(applied, expect));
	json_object_put(expect);
	json_object_put(applied);
	json_object_put(orig);
	json_object_put(patch);
	json_object_put(out);
	/* already defaulted: no patch at all */
	json_object *d = defaulted(CLUSTER(""));
	_cleanup_free_ char *body = op_asprintf(REVIEW("UPDATE", CKIND, "%s", "%s"),
						json_object_to_json_string(d),
						json_object_to_json_string(d));
	out = review(WH_MUTATE, body, &rc, &err);
	assert_int_equal(rc, 0);
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_null(at(out, "response.patch"));
	assert_null(at(out, "response.patchType"));
	json_object_put(out);
	json_object_put(d);
}

static void test_review_validate(void **state)
{
	(void)state;
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *d = defaulted(CLUSTER(",\"postgresql\":{\"synchronous\":{\"method\":\"any\",\"number\":1}}"));
	_cleanup_free_ char *ok = op_asprintf(REVIEW("CREATE", CKIND, "%s", "null"),
					      json_object_to_json_string(d));
	json_object *out = review(WH_VALIDATE, ok, &rc, &err);
	assert_int_equal(rc, 0);
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	assert_null(at(out, "response.status"));
	assert_null(at(out, "response.patch"));
	json_object_put(out);
	json_object_put(d);

	/* denied: 422 Invalid with causes; warnings still returned */
	const char *bad = REVIEW("CREATE", CKIND,
				 CLUSTER(",\"storage\":{\"size\":5},\"instances\":\"three\","
					 "\"nodeMaintenanceWindow\":{}"),
				 "null");
	out = review(WH_VALIDATE, bad, &rc, &err);
	assert_int_equal(rc, 0);
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_int_equal(json_object_get_int(at(out, "response.status.code")), 422);
	assert_str_at(out, "response.status.reason", "Invalid");
	assert_str_at(out, "response.status.status", "Failure");
	assert_str_at(out, "response.status.message",
		      "Cluster.postgresql.cnpg.io \"pg\" is invalid: [spec.instances: Invalid "
		      "value: \"three\": expected integer, got string, spec.storage.size: Invalid "
		      "value: 5: expected string, got integer]");
	json_object *causes = at(out, "response.status.details.causes");
	assert_int_equal(json_object_array_length(causes), 2);
	assert_str_at(json_object_array_get_idx(causes, 0), "field", "spec.instances");
	assert_str_at(json_object_array_get_idx(causes, 0), "reason", "FieldValueInvalid");
	assert_str_at(json_object_array_get_idx(causes, 0), "message",
		      "Invalid value: \"three\": expected integer, got string");
	assert_str_at(out, "response.status.details.kind", "Cluster");
	assert_str_at(out, "response.status.details.group", "postgresql.cnpg.io");
	assert_str_at(out, "response.status.details.name", "pg");
	json_object_put(out);

	/* UPDATE runs the U rules */
	json_object *n = defaulted(SPEC("{\"size\":\"1Gi\"}", "")), *o = defaulted(SPEC("{\"size\":\"2Gi\"}", ""));
	_cleanup_free_ char *upd = op_asprintf(REVIEW("UPDATE", CKIND, "%s", "%s"),
					       json_object_to_json_string(n),
					       json_object_to_json_string(o));
	out = review(WH_VALIDATE, upd, &rc, &err);
	assert_int_equal(rc, 0);
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_str_at(out, "response.status.message",
		      "Cluster.postgresql.cnpg.io \"pg\" is invalid: spec.storage: Invalid value: "
		      "map[size:1Gi]: can't shrink existing storage from 2Gi to 1Gi");
	json_object *warn = at(out, "response.warnings");
	assert_true(json_object_is_type(warn, json_type_array));
	json_object_put(out);
	json_object_put(n);
	json_object_put(o);
}

static void test_review_envelope_errors(void **state)
{
	(void)state;
	static const struct {
		const char *body, *msg;
	} bad[] = {
		{ "{not json", "AdmissionReview: invalid JSON" },
		{ "[]", "AdmissionReview: expected object, got array" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
		  "apiVersion: expected admission.k8s.io/v1, got admission.k8s.io/v1beta1" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\",\"request\":{}}",
		  "kind: expected AdmissionReview, got Review" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
		  "request: expected object" },
		{ "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
		  "{\"operation\":\"CREATE\"}}",
		  "request.uid: required" },
		{ REVIEW("CREATE", CKIND, "\"str\"", "null"), "request.object: expected object, got string" },
		{ REVIEW("CREATE", CKIND, "null", "null"), "request.object: expected object, got null" },
		{ REVIEW("UPDATE", CKIND, CLUSTER(""), "null"), "request.oldObject: expected object on UPDATE" },
		{ REVIEW("PATCH", CKIND, CLUSTER(""), "null"), "request.operation: unknown value 'PATCH'" },
		{ REVIEW("CREATE", "7", CLUSTER(""), "null"), "request.kind: expected object" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(bad); i++) {
		for (int k = 0; k < 2; k++) {
			int rc;
			struct op_err err = OP_ERR_INIT;
			json_object *out = review(k ? WH_VALIDATE : WH_MUTATE, bad[i].body, &rc, &err);
			assert_null(out);
			assert_int_equal(rc, -EINVAL);
			if (!strstr(err.msg, bad[i].msg))
				fail_msg("case %zu: '%s' does not contain '%s'", i, err.msg, bad[i].msg);
		}
	}
}

static void test_review_other_kind_and_delete(void **state)
{
	(void)state;
	int rc;
	json_object *out = review(WH_VALIDATE,
				  REVIEW("CREATE", "{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"}",
					 "{}", "null"),
				  &rc, NULL);
	assert_int_equal(rc, 0);
	assert_str_at(out, "response.uid", "705ab4f5-1");
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_int_equal(json_object_get_int(at(out, "response.status.code")), 400);
	assert_non_null(strstr(str_at(out, "response.status.message"), "got Deployment.apps"));
	json_object_put(out);
	for (int k = 0; k < 2; k++) {
		out = review(k ? WH_VALIDATE : WH_MUTATE, REVIEW("DELETE", CKIND, "null", CLUSTER("")),
			     &rc, NULL);
		assert_int_equal(rc, 0);
		assert_true(json_object_get_boolean(at(out, "response.allowed")));
		assert_null(at(out, "response.patch"));
		assert_str_at(out, "response.uid", "705ab4f5-1");
		json_object_put(out);
	}
}

static void test_review_response_cap(void **state)
{
	(void)state;
	const char *body = REVIEW("CREATE", CKIND, CLUSTER(""), "null");
	struct op_buf small = OP_BUF_INIT(64);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_handle_review(WH_MUTATE, body, strlen(body), &small, &err), -EMSGSIZE);
	assert_int_equal(small.len, 0);
	op_buf_done(&small);
}

/* ---- every sample through the whole admission path ---- */

#define SAMPLE_MAX (1024u * 1024)

struct sample_stats {
	int clusters, others, denied, with_warnings, unsupported_warnings;
};

/* One AdmissionReview round: returns the response object (owned). */
/* A review of obj on the webhook of its kind (wh_resource_of; a Cluster's
 * when obj has none we know). */
static json_object *review_obj(enum wh_kind kind, const char *op, json_object *obj,
			       json_object *old)
{
	int rs = wh_resource_of(obj);
	if (rs < 0)
		rs = WH_RES_CLUSTER;
	_cleanup_free_ char *rkind =
		op_asprintf("{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"}",
			    wh_resource_group((enum wh_resource)rs), wh_resource_kind((enum wh_resource)rs));
	_cleanup_free_ char *body = op_asprintf(
		REVIEW("%s", "%s", "%s", "%s"), rkind, op, json_object_to_json_string(obj),
		old ? json_object_to_json_string(old) : "null");
	int rc;
	struct op_err err = OP_ERR_INIT;
	json_object *out = review_rs(kind, (enum wh_resource)rs, body, &rc, &err);
	if (rc != 0)
		fail_msg("review failed: %s", err.msg);
	return out;
}

/* mutate (apply the patch), validate CREATE, then validate a no-op UPDATE. */
static void admit_sample(const char *file, json_object *doc, struct sample_stats *st)
{
	json_object *out = review_obj(WH_MUTATE, "CREATE", doc, NULL), *obj = NULL;
	assert_true(json_object_get_boolean(at(out, "response.allowed")));
	const char *p64 = str_at(out, "response.patch");
	if (p64) {
		_cleanup_free_ char *ptxt = b64decode(p64);
		json_object *patch = parse(ptxt);
		assert_int_equal(op_jsonpatch_apply(doc, patch, &obj, NULL), 0);
		json_object_put(patch);
	} else {
		obj = json_object_get(doc);
	}
	json_object_put(out);
	for (int pass = 0; pass < 2; pass++) {
		out = review_obj(WH_VALIDATE, pass ? "UPDATE" : "CREATE", obj, pass ? obj : NULL);
		if (!json_object_get_boolean(at(out, "response.allowed"))) {
			print_error("sample %s (%s) denied: %s\n", file, pass ? "UPDATE" : "CREATE",
				    str_at(out, "response.status.message"));
			st->denied++;
		}
		json_object *w = at(out, "response.warnings");
		if (!pass && w) {
			st->with_warnings++;
			for (size_t i = 0; i < json_object_array_length(w); i++)
				if (strstr(json_object_get_string(json_object_array_get_idx(w, i)),
					   "not implemented by pgop"))
					st->unsupported_warnings++;
		}
		json_object_put(out);
	}
	json_object_put(obj);
	if (wh_resource_of(doc) == WH_RES_CLUSTER)
		st->clusters++;
	else
		st->others++;
}

/* Reads a sample file (at most SAMPLE_MAX bytes) into an owned NUL-terminated buffer. */
static char *read_sample(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	char *data = op_malloc(SAMPLE_MAX + 1);
	size_t len = fread(data, 1, SAMPLE_MAX + 1, f);
	fclose(f);
	assert_true(len <= SAMPLE_MAX);
	data[len] = '\0';
	*ret_len = len;
	return data;
}

/* Admits every Cluster of the .yaml files of dir (and of its subfolders when
 * recurse). A directory that cannot be opened fails the test. */
static void admit_dir(const char *dir, bool recurse, struct sample_stats *st)
{
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		_cleanup_free_ char *path = op_asprintf("%s/%s", dir, e->d_name);
		size_t n = strlen(e->d_name);
		if (e->d_type == DT_DIR) {
			if (recurse)
				admit_dir(path, recurse, st);
			continue;
		}
		if (n < 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
			continue;
		size_t len;
		_cleanup_free_ char *data = read_sample(path, &len);
		json_object *docs = NULL;
		struct op_err err = OP_ERR_INIT;
		if (op_yaml_parse_docs(data, len, NULL, &docs, &err) < 0)
			fail_msg("%s: %s", path, err.msg);
		for (size_t i = 0; i < json_object_array_length(docs); i++) {
			json_object *doc = json_object_array_get_idx(docs, i);
			const char *kind = str_at(doc, "kind");
			if (kind && strcmp(kind, "Cluster") == 0)
				admit_sample(e->d_name, doc, st);
			else if (wh_resource_of(doc) >= 0)
				admit_sample(e->d_name, doc, st); /* counted as others */
		}
		json_object_put(docs);
	}
	closedir(d);
}

static void test_samples_through_admission(void **state)
{
	(void)state;
	struct sample_stats st = { 0 };
	admit_dir(REPO_SAMPLES_DIR, false, &st);
	print_message("%d sample Clusters: %d denied, %d with warnings, %d unsupported-field "
		      "warnings\n",
		      st.clusters, st.denied, st.with_warnings, st.unsupported_warnings);
	assert_int_equal(st.clusters, REPO_SAMPLE_CLUSTERS);
	assert_int_equal(st.others, REPO_SAMPLE_OTHERS);
	assert_int_equal(st.denied, 0);
	/* cluster-accepted-not-implemented.yaml: spec.managed (its enablePodMonitor is
	 * implemented) */
	assert_int_equal(st.unsupported_warnings, 1);
	const char *shared = samples_shared_dir();
	if (!shared)
		return;
	_cleanup_free_ char *cnpg = op_asprintf("%s/samples/cnpg", shared);
	st = (struct sample_stats){ 0 };
	admit_dir(cnpg, true, &st);
	print_message("%d CloudNativePG sample Clusters: %d denied, %d with warnings, %d "
		      "unsupported-field warnings\n",
		      st.clusters, st.denied, st.with_warnings, st.unsupported_warnings);
	assert_true(st.clusters >= CNPG_SAMPLE_CLUSTERS_MIN);
	assert_int_equal(st.denied, 0);
	assert_true(st.unsupported_warnings > 0);
}

/* The field named by the "# pgop-denied: <path>" line of a sample (owned). */
static char *denied_field(const char *path, const char *data)
{
	static const char tag[] = "# pgop-denied: ";
	const char *p = strstr(data, tag);
	if (!p)
		fail_msg("%s has no '%s' line", path, tag);
	p += sizeof(tag) - 1;
	size_t n = strcspn(p, "\r\n");
	assert_true(n > 0);
	return op_strndup(p, n);
}

/* Each samples/invalid/ Cluster is mutated then denied on CREATE, with a cause
 * on exactly the field its comment names. */
static void test_invalid_samples_denied(void **state)
{
	(void)state;
	DIR *d = opendir(REPO_INVALID_SAMPLES_DIR);
	if (!d)
		fail_msg("cannot open %s", REPO_INVALID_SAMPLES_DIR);
	int checked = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
			continue;
		_cleanup_free_ char *path =
			op_asprintf("%s/%s", REPO_INVALID_SAMPLES_DIR, e->d_name);
		size_t len;
		_cleanup_free_ char *data = read_sample(path, &len);
		_cleanup_free_ char *want = denied_field(path, data);
		_cleanup_(op_json_putp) json_object *docs = NULL;
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(op_yaml_parse_docs(data, len, NULL, &docs, &err), 1);
		json_object *doc = json_object_array_get_idx(docs, 0);
		json_object *out = review_obj(WH_MUTATE, "CREATE", doc, NULL), *obj = NULL;
		const char *p64 = str_at(out, "response.patch");
		if (p64) {
			_cleanup_free_ char *ptxt = b64decode(p64);
			json_object *patch = parse(ptxt);
			assert_int_equal(op_jsonpatch_apply(doc, patch, &obj, NULL), 0);
			json_object_put(patch);
		} else {
			obj = json_object_get(doc);
		}
		json_object_put(out);
		out = review_obj(WH_VALIDATE, "CREATE", obj, NULL);
		if (json_object_get_boolean(at(out, "response.allowed")))
			fail_msg("%s: admitted, expected a denial on %s", e->d_name, want);
		json_object *causes = at(out, "response.status.details.causes");
		bool found = false;
		for (size_t i = 0; causes && i < json_object_array_length(causes); i++)
			found = found || strcmp(str_at(json_object_array_get_idx(causes, i), "field") ?: "",
						want) == 0;
		if (!found)
			fail_msg("%s: denied, but not on %s: %s", e->d_name, want,
				 str_at(out, "response.status.message"));
		json_object_put(out);
		json_object_put(obj);
		checked++;
	}
	closedir(d);
	assert_int_equal(checked, REPO_INVALID_SAMPLE_CLUSTERS + REPO_INVALID_SAMPLE_OTHERS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_review_mutate_patch),
		cmocka_unit_test(test_review_validate),
		cmocka_unit_test(test_review_envelope_errors),
		cmocka_unit_test(test_review_other_kind_and_delete),
		cmocka_unit_test(test_review_response_cap),
		cmocka_unit_test(test_samples_through_admission),
		cmocka_unit_test(test_invalid_samples_denied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
