/* tests/unit/test_webhooks_rules_tables.c - webhooks/: the V rule table, V
 * rules on UPDATE and on wrongly typed input, the samples (samples/, and the
 * CloudNativePG corpus when PGOP_SHARED_DIR is set: defaulted then validated,
 * all admitted), pgparams.c, reserved.c and rules_spec_util.c. */
#include <dirent.h>

#include "samples_dirs.h"

#include "support/yaml.h"
#include "api/pgparams.h"
#include "webhooks/reserved.h"
#include "webhooks_rules_harness.h"

/* ---- the table itself ---- */

static void test_table_order(void **state)
{
	(void)state;
	assert_int_equal(wh_rules_spec_count, 58);
	for (size_t i = 0; i < wh_rules_spec_count; i++) {
		char want[32];
		snprintf(want, sizeof(want), "V%zu", i + 1);
		assert_string_equal(wh_rules_spec[i].id, want);
		assert_int_equal(wh_rules_spec[i].ops, WH_OP_CREATE | WH_OP_UPDATE);
		assert_non_null(wh_rules_spec[i].fn);
	}
}

/* Applies the mutating webhook's defaults to c, as the API server would. */
static void defaulted(json_object *c)
{
	_cleanup_(op_json_putp) json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default(c, &patch, &err), 0);
}

/* The V rules run on UPDATE too (CNPG validate() is called for both). */
static void test_rules_run_on_update(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *old = make_cluster("{'resourceVersion':'7'}", NULL);
	_cleanup_(op_json_putp) json_object *bad =
		make_cluster("{'resourceVersion':'7'}", "{'instances':2,'maxSyncReplicas':2}");
	defaulted(bad);
	struct wh_result res = { 0 };
	assert_int_equal(wh_validate(bad, old, &res), 1);
	assert_string_equal(res.errors[0].path, "spec.maxSyncReplicas");
	assert_string_equal(res.errors[0].msg,
			    "maxSyncReplicas must be lower than the number of instances");
	wh_result_done(&res);
	/* V27's bootstrap method check is CREATE-only (resourceVersion set) */
	_cleanup_(op_json_putp) json_object *replica = make_cluster(
		"{'resourceVersion':'7'}", "{'replica':{'enabled':true,'source':'origin'}," EXT_ORIGIN "}");
	defaulted(replica);
	assert_int_equal(wh_validate(replica, old, &res), 0);
	wh_result_done(&res);
}

/* Rules must cope with a spec whose fields have the wrong JSON types (the
 * schema normally prevents it, but `pgop validate` runs without it). */
static void test_wrong_types_do_not_crash(void **state)
{
	(void)state;
	static const char *const specs[] = {
		"{'instances':'three','storage':7,'bootstrap':[],'postgresql':'x'}",
		"{'externalClusters':{'a':1},'tablespaces':'ts','managed':{'roles':{},"
		"'services':[]},'replica':{'enabled':'yes','source':3}}",
		"{'postgresql':{'parameters':{'wal_level':3,'shared_buffers':true},"
		"'pg_hba':[1,null],'extensions':[null,{'name':5}],'synchronous':{'number':'x'}}}",
		"{'affinity':{'tolerations':[null,3]},'resources':{'requests':{'cpu':[]}},"
		"'env':[{'name':null}],'plugins':[1],'podSelectorRefs':[{'selector':'x'}]}",
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(specs); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster("{'annotations':3}", specs[i]);
		struct wh_result res = { 0 };
		run_spec_rules(c, &res);
		wh_result_done(&res);
	}
}

/* ---- the sample manifests must be admitted, and every rule must
 * survive each of their fields replaced by values of the wrong type ---- */

#define SAMPLE_MAX (1024u * 1024)

static char *read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	char *data = op_malloc(SAMPLE_MAX + 1);
	size_t n = fread(data, 1, SAMPLE_MAX + 1, f);
	fclose(f);
	assert_true(n <= SAMPLE_MAX);
	data[n] = '\0';
	*ret_len = n;
	return data;
}

/* Defaults then validates every Cluster document of one sample file;
 * returns the number of Cluster documents. */
/* Values of every JSON type (and a few awkward ones) used to replace fields. */
static const char *const odd_values[] = { "null", "-1", "1e300", "\"\"", "\"x\"", "true",
					  "[]",   "[null, 3]", "{}", "{\"a\": [{}]}" };

/* Runs every V rule directly (no type checks first) with parent[key]
 * replaced by each odd value in turn; restores the original. Must not crash
 * or trip ASan/UBSan; the findings themselves do not matter. */
static void mutate_member(json_object *root, json_object *parent, const char *key, int *runs)
{
	json_object *orig = NULL;
	if (!json_object_object_get_ex(parent, key, &orig))
		return;
	json_object_get(orig); /* keep it while replaced */
	for (size_t i = 0; i < OP_ARRAY_SIZE(odd_values); i++) {
		json_object *v = NULL;
		assert_int_equal(op_json_parse(odd_values[i], strlen(odd_values[i]), 8, &v, NULL), 0);
		op_jset(parent, key, v);
		struct wh_result res = { 0 };
		run_spec_rules(root, &res);
		wh_result_done(&res);
		(*runs)++;
	}
	op_jset(parent, key, orig);
}

/* Mutates every member of spec, of its objects, of the first element of its
 * arrays, and every annotation. */
static void mutate_cluster(json_object *cluster, int *runs)
{
	json_object *spec = op_json_at(cluster, "spec");
	json_object_object_foreach(spec, k, v)
	{
		json_object *inner = v;
		if (inner && json_object_is_type(inner, json_type_array) &&
		    json_object_array_length(inner) > 0)
			inner = json_object_array_get_idx(inner, 0);
		if (inner && json_object_is_type(inner, json_type_object)) {
			json_object_object_foreach(inner, k2, v2)
			{
				(void)v2;
				mutate_member(cluster, inner, k2, runs);
			}
		}
		mutate_member(cluster, spec, k, runs);
	}
	json_object *ann = op_json_at(cluster, "metadata.annotations");
	if (ann && json_object_is_type(ann, json_type_object)) {
		json_object_object_foreach(ann, k3, v3)
		{
			(void)v3;
			mutate_member(cluster, ann, k3, runs);
		}
	}
}

static int check_sample(const char *root, const char *file, int *failures)
{
	_cleanup_free_ char *path = op_asprintf("%s/%s", root, file);
	size_t len;
	_cleanup_free_ char *data = read_file(path, &len);
	_cleanup_(op_json_putp) json_object *docs = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_yaml_parse_docs(data, len, NULL, &docs, &err) < 0)
		fail_msg("%s: %s", file, err.msg);
	int clusters = 0;
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		json_object *doc = json_object_array_get_idx(docs, i);
		const char *kind = op_json_str_at(doc, "kind");
		if (!kind || strcmp(kind, "Cluster") != 0)
			continue;
		clusters++;
		_cleanup_(op_json_putp) json_object *patch = NULL;
		assert_int_equal(wh_default(doc, &patch, &err), 0);
		struct wh_result res = { 0 };
		wh_validate(doc, NULL, &res);
		if (res.n_errors) {
			print_message("FAILED sample %s\n", file);
			for (size_t e = 0; e < res.n_errors; e++)
				print_message("  %s: %s\n", res.errors[e].path, res.errors[e].msg);
			(*failures)++;
		}
		wh_result_done(&res);
		int runs = 0;
		mutate_cluster(doc, &runs);
		assert_true(runs > 0);
	}
	return clusters;
}

/* Checks the .yaml files of root/sub (sub "" = the top) and, when recurse, of
 * its subfolders. A directory that cannot be opened fails the test. */
static void check_sample_dir(const char *root, const char *sub, bool recurse, int *clusters,
			     int *failures)
{
	_cleanup_free_ char *dir = op_asprintf("%s/%s", root, sub);
	DIR *d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		_cleanup_free_ char *rel = op_asprintf("%s%s%s", sub, *sub ? "/" : "", e->d_name);
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			if (recurse)
				check_sample_dir(root, rel, recurse, clusters, failures);
		} else if (n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0) {
			*clusters += check_sample(root, rel, failures);
		}
	}
	closedir(d);
}

static void test_samples_admitted(void **state)
{
	(void)state;
	int failures = 0, clusters = 0;
	check_sample_dir(REPO_SAMPLES_DIR, "", false, &clusters, &failures);
	print_message("%d sample Cluster(s) checked\n", clusters);
	assert_int_equal(clusters, REPO_SAMPLE_CLUSTERS);
	assert_int_equal(failures, 0);
	const char *shared = samples_shared_dir();
	if (!shared)
		return;
	_cleanup_free_ char *cnpg = op_asprintf("%s/samples/cnpg", shared);
	clusters = 0;
	check_sample_dir(cnpg, "", true, &clusters, &failures);
	print_message("%d CloudNativePG sample Cluster(s) checked\n", clusters);
	assert_true(clusters >= CNPG_SAMPLE_CLUSTERS_MIN);
	assert_int_equal(failures, 0);
}

/* ---- messages in the words of Kubernetes' field.Error ---- */

/* Each row: a Cluster (defaulted, then validated) and the full text of the
 * error on path: "<path>: <body>" as kubectl shows it, and the cause reason. */
static const struct msg_row {
	const char *name, *meta, *spec, *path, *text, *reason;
} msg_rows[] = {
	{ "V13 integer value", NULL, "{'instances':3,'maxSyncReplicas':3}", "spec.maxSyncReplicas",
	  "spec.maxSyncReplicas: Invalid value: 3: maxSyncReplicas must be lower than the number "
	  "of instances", "FieldValueInvalid" },
	{ "V8 string value quoted", NULL, "{'imageName':'pg:latest'}", "spec.imageName",
	  "spec.imageName: Invalid value: \"pg:latest\": Can't use 'latest' as image tag as we "
	  "can't detect upgrades", "FieldValueInvalid" },
	{ "V9 unsupported", NULL, "{'imagePullPolicy':'Sometimes'}", "spec.imagePullPolicy",
	  "spec.imagePullPolicy: Unsupported value: \"Sometimes\": supported values: "
	  "\"Always\", \"IfNotPresent\", \"Never\"", "FieldValueNotSupported" },
	{ "V11 unsupported", NULL, "{'primaryUpdateStrategy':'sometimes'}",
	  "spec.primaryUpdateStrategy",
	  "spec.primaryUpdateStrategy: Unsupported value: \"sometimes\": supported values: "
	  "\"supervised\", \"unsupervised\"", "FieldValueNotSupported" },
	{ "V42 unsupported annotation", "{'annotations':{'cnpg.io/hibernation':'maybe'}}", NULL,
	  "metadata.annotations[cnpg.io/hibernation]",
	  "metadata.annotations[cnpg.io/hibernation]: Unsupported value: \"maybe\": supported "
	  "values: \"off\", \"on\"", "FieldValueNotSupported" },
	{ "V7 forbidden", NULL,
	  "{'bootstrap':{'initdb':{'database':'app','owner':'app'},'pg_basebackup':{'source':'origin'}},"
	  EXT_ORIGIN "}", "spec.bootstrap",
	  "spec.bootstrap: Forbidden: Only one bootstrap method can be specified at a time",
	  "FieldValueForbidden" },
	{ "V39 duplicate", NULL, "{'managed':{'roles':[{'name':'app2'},{'name':'app2'}]}}",
	  "spec.managed.roles[1].name",
	  "spec.managed.roles[1].name: Duplicate value: \"app2\": Role name is duplicate of "
	  "another", "FieldValueDuplicate" },
	{ "V47 duplicate, no detail", NULL,
	  "{'podSelectorRefs':[{'name':'a','selector':{}},{'name':'a','selector':{}}]}",
	  "spec.podSelectorRefs[1].name", "spec.podSelectorRefs[1].name: Duplicate value: \"a\"",
	  "FieldValueDuplicate" },
	{ "V14 missing is required", NULL, "{'storage':{}}", "spec.storage.size",
	  "spec.storage.size: Required value: Size not configured. Please add it, or a storage "
	  "request in the pvcTemplate.", "FieldValueRequired" },
	{ "V30d parameter key with dots", NULL,
	  "{'postgresql':{'parameters':{'pg_failover_slots.primary_dsn':'x'}}}",
	  "spec.postgresql.parameters.pg_failover_slots.primary_dsn",
	  "spec.postgresql.parameters.pg_failover_slots.primary_dsn: Invalid value: \"x\": Can't "
	  "set fixed configuration parameter", "FieldValueInvalid" },
	{ "V37 list index, control character quoted", NULL,
	  "{'env':[{'name':'A','value':'1'},{'name':'PG\\n','value':'x'}]}", "spec.env[1].name",
	  "spec.env[1].name: Invalid value: \"PG\\n\": the usage of this environment variable is "
	  "reserved for the operator", "FieldValueInvalid" },
	{ "V51 the parser's reason", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'gs://backups/x',"
	  "'s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.backup.barmanObjectStore.destinationPath",
	  "spec.backup.barmanObjectStore.destinationPath: Invalid value: \"gs://backups/x\": "
	  "must be s3://bucket[/path]: must start with s3://", "FieldValueInvalid" },
	{ "V51 endpoint", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://backups','endpointURL':"
	  "'ftp://h','s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.backup.barmanObjectStore.endpointURL",
	  "spec.backup.barmanObjectStore.endpointURL: Invalid value: \"ftp://h\": must be "
	  "http(s)://host[:port]: scheme must be http or https", "FieldValueInvalid" },
	{ "V52 bound", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://backups','wal':{"
	  "'maxParallel':100},'s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.backup.barmanObjectStore.wal.maxParallel",
	  "spec.backup.barmanObjectStore.wal.maxParallel: Invalid value: 100: must be between 1 "
	  "and 64", "FieldValueInvalid" },
	{ "V53 unsupported compression", NULL,
	  "{'backup':{'barmanObjectStore':{'destinationPath':'s3://backups','data':{"
	  "'compression':'brotli'},'s3Credentials':{'inheritFromIAMRole':true}}}}",
	  "spec.backup.barmanObjectStore.data.compression",
	  "spec.backup.barmanObjectStore.data.compression: Unsupported value: \"brotli\": "
	  "supported values: \"bzip2\", \"gzip\", \"lz4\", \"snappy\", \"xz\", \"zstd\"",
	  "FieldValueNotSupported" },
	{ "V56 duplicate plugin", NULL, "{'plugins':[{'name':'p'},{'name':'p'}]}",
	  "spec.plugins[1].name",
	  "spec.plugins[1].name: Duplicate value: \"p\": plugin names must be unique",
	  "FieldValueDuplicate" },
};

/* V51: a location of CloudNativePG's accepted shape that objstore's parser
 * refuses (a placeholder bucket or host in its own samples) is admitted with a
 * warning naming the field and the parser's reason. */
static void test_v51_warns_on_placeholders(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *warning;
	} rows[] = {
		{ "{'backup':{'barmanObjectStore':{'destinationPath':'s3://BUCKET_NAME/path/to',"
		  "'s3Credentials':{'inheritFromIAMRole':true}}}}",
		  "spec.backup.barmanObjectStore.destinationPath: bad bucket name" },
		{ "{'backup':{'barmanObjectStore':{'destinationPath':'s3://backups',"
		  "'endpointURL':'https://s3.<region>.scw.cloud',"
		  "'s3Credentials':{'inheritFromIAMRole':true}}}}",
		  "spec.backup.barmanObjectStore.endpointURL: " },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster(NULL, rows[i].spec);
		defaulted(c);
		struct wh_result res = { 0 };
		wh_validate(c, NULL, &res);
		assert_int_equal(res.n_errors, 0);
		bool found = false;
		for (size_t w = 0; w < res.n_warnings; w++)
			found |= strstr(res.warnings[w], rows[i].warning) &&
				 strstr(res.warnings[w], "archiving to it will fail");
		if (!found)
			for (size_t w = 0; w < res.n_warnings; w++)
				print_message("warning: %s\n", res.warnings[w]);
		assert_true(found);
		wh_result_done(&res);
	}
}

static void test_messages(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < OP_ARRAY_SIZE(msg_rows); i++) {
		const struct msg_row *r = &msg_rows[i];
		_cleanup_(op_json_putp) json_object *c = make_cluster(r->meta, r->spec);
		defaulted(c);
		struct wh_result res = { 0 };
		wh_validate(c, NULL, &res);
		bool ok = false;
		for (size_t e = 0; e < res.n_errors; e++) {
			if (strcmp(res.errors[e].path, r->path) != 0)
				continue;
			_cleanup_free_ char *body = wh_issue_body(&res.errors[e]);
			_cleanup_free_ char *text = op_asprintf("%s: %s", r->path, body);
			ok = strcmp(text, r->text) == 0 &&
			     strcmp(wh_error_reason(res.errors[e].type), r->reason) == 0;
			if (!ok)
				print_message("row '%s':\n  got  %s (%s)\n  want %s (%s)\n", r->name,
					      text, wh_error_reason(res.errors[e].type), r->text,
					      r->reason);
			break;
		}
		if (!ok) {
			print_message("FAILED row '%s' (%zu errors)\n", r->name, res.n_errors);
			failures++;
		}
		wh_result_done(&res);
	}
	assert_int_equal(failures, 0);
}

/* Values as Go's %v prints them, composite ones capped. */
static void test_message_values(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *subject = jparse(
		"{'a':{'b.c':[1,2.5,true,null,'s',{'y':1,'x':'q'}]},'n':null,'big':'" 
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'}");
	struct wh_result res = { .subject = subject };
	wh_result_error(&res, "a.b.c", "d");
	wh_result_error(&res, "a.b.c[1]", "d");
	wh_result_error(&res, "n", "d");
	wh_result_error(&res, "a.missing", "d");
	wh_result_error(&res, "big", "d");
	wh_result_typed(&res, WH_ERR_FORBIDDEN, "a", "no");
	wh_result_error(&res, "", "whole object");
	static const char *const want[] = {
		"Invalid value: [1 2.5 true <nil> s map[x:q y:1]]: d",
		"Invalid value: 2.5: d",
		"Invalid value: null: d",
		"Required value: d",
		NULL,
		"Forbidden: no",
		"Invalid value: whole object",
	};
	assert_int_equal(res.n_errors, OP_ARRAY_SIZE(want));
	for (size_t i = 0; i < res.n_errors; i++) {
		_cleanup_free_ char *body = wh_issue_body(&res.errors[i]);
		if (want[i])
			assert_string_equal(body, want[i]);
		else /* 256 bytes of the quoted value, then "..." */
			assert_int_equal(strlen(body), strlen("Invalid value: ") + 256 + 3 +
							       strlen(": d"));
	}
	wh_result_done(&res);
}

/* ---- P1-P2: what reaches configuration files and command lines ---- */

static const struct row safety_rows[] = {
	{ "P1 include", NULL, "{'postgresql':{'parameters':{'include':'/tmp/x.conf'}}}",
	  "spec.postgresql.parameters.include" },
	{ "P1 include_if_exists", NULL,
	  "{'postgresql':{'parameters':{'include_if_exists':'/tmp/x.conf'}}}",
	  "spec.postgresql.parameters.include_if_exists" },
	{ "P1 include_dir in upper case", NULL,
	  "{'postgresql':{'parameters':{'INCLUDE_DIR':'/tmp'}}}",
	  "spec.postgresql.parameters.INCLUDE_DIR" },
	{ "P1 even with validation disabled", "{'annotations':{'cnpg.io/validation':'disabled'}}",
	  "{'postgresql':{'parameters':{'include':'/tmp/x.conf'}}}",
	  "spec.postgresql.parameters.include" },
	{ "P1 a parameter merely containing include", NULL,
	  "{'postgresql':{'parameters':{'pg_stat_statements.track_utility':'on'}}}", NULL },
	{ "P2 newline in a parameter value", NULL,
	  "{'postgresql':{'parameters':{'work_mem':'4MB\\narchive_command = x'}}}",
	  "spec.postgresql.parameters.work_mem" },
	{ "P2 carriage return in a parameter value", NULL,
	  "{'postgresql':{'parameters':{'work_mem':'4MB\\r'}}}",
	  "spec.postgresql.parameters.work_mem" },
	{ "P2 NUL in a dotted parameter value", NULL,
	  "{'postgresql':{'parameters':{'pg_stat_statements.max':'10\\u0000'}}}",
	  "spec.postgresql.parameters.pg_stat_statements.max" },
	{ "P2 newline in a parameter name", NULL,
	  "{'postgresql':{'parameters':{'work_mem\\nx':'1'}}}",
	  "spec.postgresql.parameters.work_mem\nx" },
	{ "P2 newline even with validation disabled",
	  "{'annotations':{'cnpg.io/validation':'disabled'}}",
	  "{'postgresql':{'pg_hba':['host all all all md5\\nhost all all 0.0.0.0/0 trust']}}",
	  "spec.postgresql.pg_hba[0]" },
	{ "P2 pg_hba line break", NULL,
	  "{'postgresql':{'pg_hba':['host all all 10.0.0.0/8 md5','hostssl app app all "
	  "cert\\nhost all all 0.0.0.0/0 trust']}}",
	  "spec.postgresql.pg_hba[1]" },
	{ "P2 pg_hba tab is a separator", NULL,
	  "{'postgresql':{'pg_hba':['host\\tall\\tall\\t10.0.0.0/8\\tmd5']}}", NULL },
	{ "P2 pg_ident NUL", NULL, "{'postgresql':{'pg_ident':['m u\\u0000 app']}}",
	  "spec.postgresql.pg_ident[0]" },
	{ "P2 pg_ident DEL", NULL, "{'postgresql':{'pg_ident':['m u\\u007f app']}}",
	  "spec.postgresql.pg_ident[0]" },
	{ "P2 shared_preload_libraries", NULL,
	  "{'postgresql':{'shared_preload_libraries':['auto_explain\\nx']}}",
	  "spec.postgresql.shared_preload_libraries[0]" },
	{ "P2 standby names", NULL,
	  "{'instances':3,'postgresql':{'synchronous':{'method':'any','number':1,"
	  "'standbyNamesPost':['a\\nb']}}}",
	  "spec.postgresql.synchronous.standbyNamesPost[0]" },
	{ "P2 ldap server (a pg_hba option)", NULL,
	  "{'postgresql':{'ldap':{'server':'ldap.example.com\\nhost all all all trust'}}}",
	  "spec.postgresql.ldap.server" },
	{ "P2 initdb option", NULL,
	  "{'bootstrap':{'initdb':{'database':'app','owner':'app','options':['--data-checksums',"
	  "'-k\\n--auth=trust']}}}",
	  "spec.bootstrap.initdb.options[1]" },
	{ "P2 initdb owner", NULL,
	  "{'bootstrap':{'initdb':{'database':'app','owner':'app\\r'}}}",
	  "spec.bootstrap.initdb.owner" },
	{ "P2 initdb locale", NULL,
	  "{'bootstrap':{'initdb':{'database':'app','owner':'app','localeCType':'C\\n'}}}",
	  "spec.bootstrap.initdb.localeCType" },
	{ "P2 pg_basebackup database", NULL,
	  "{'bootstrap':{'initdb':null,'pg_basebackup':{'source':'origin','database':'a\\nb',"
	  "'owner':'app'}}," EXT_ORIGIN "}",
	  "spec.bootstrap.pg_basebackup.database" },
	{ "P2 connection parameter value (primary_conninfo)", NULL,
	  "{'externalClusters':[{'name':'origin','connectionParameters':{'host':'h',"
	  "'application_name':'x\\nrestore_command = y'}}]}",
	  "spec.externalClusters[0].connectionParameters.application_name" },
	{ "P2 connection parameter key", NULL,
	  "{'externalClusters':[{'name':'origin','connectionParameters':{'host\\n':'h'}}]}",
	  "spec.externalClusters[0].connectionParameters.host\n" },
	{ "P2 managed role name (SQL)", NULL,
	  "{'managed':{'roles':[{'name':'bob\\n'}]}}", "spec.managed.roles[0].name" },
	{ "P2 slot prefix (primary_slot_name)", NULL,
	  "{'replicationSlots':{'highAvailability':{'enabled':true,'slotPrefix':'_x\n'}}}",
	  "spec.replicationSlots.highAvailability.slotPrefix" },
	{ "P2 plain values pass", NULL,
	  "{'postgresql':{'parameters':{'work_mem':'4MB','search_path':'\\\"$user\\\", public'},"
	  "'pg_ident':['m u app']}}",
	  NULL },
};

static void test_safety_rules(void **state)
{
	(void)state;
	assert_int_equal(wh_rules_safety_count, 2);
	assert_string_equal(wh_rules_safety[0].id, "P1");
	assert_string_equal(wh_rules_safety[1].id, "P2");
	RUN(safety_rows);
	/* the words: Forbidden for the directive, Invalid with the value quoted */
	_cleanup_(op_json_putp) json_object *c = make_cluster(
		NULL, "{'postgresql':{'parameters':{'include':'/tmp/x.conf'},'pg_hba':["
		      "'host all all all md5\\nhost all all 0.0.0.0/0 trust']}}");
	defaulted(c);
	struct wh_result res = { 0 };
	assert_true(wh_validate(c, NULL, &res) >= 2);
	_cleanup_free_ char *b0 = wh_issue_body(&res.errors[0]);
	_cleanup_free_ char *b1 = wh_issue_body(&res.errors[1]);
	assert_string_equal(res.errors[0].path, "spec.postgresql.parameters.include");
	assert_string_equal(b0, "Forbidden: 'include' is a configuration file directive, not a "
				"parameter: PostgreSQL would read another file");
	assert_string_equal(res.errors[1].path, "spec.postgresql.pg_hba[0]");
	assert_string_equal(b1, "Invalid value: \"host all all all md5\\nhost all all 0.0.0.0/0 "
				"trust\": the value must not contain control characters (byte "
				"0x0a): it would break the line it is written on");
	wh_result_done(&res);
}

/* ---- pgparams.c and reserved.c ---- */

static void test_pgparams(void **state)
{
	(void)state;
	static const char *const fixed[] = { "archive_mode", "cluster_name", "port",
					     "recovery_target_xid", "shared_preload_libraries",
					     "ssl_key_file", "synchronized_standby_slots",
					     "pg_failover_slots.primary_dsn", "hot_standby",
					     "logging_collector", "unix_socket_permissions",
					     "ARCHIVE_COMMAND" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(fixed); i++)
		assert_true(api_pg_param_is_fixed(fixed[i]));
	static const char *const free_params[] = { "work_mem", "shared_buffers", "wal_level",
						   "ssl_ecdh_curve", "pg_failover_slots.x",
						   "archive_timeout", "" };
	for (size_t i = 0; i < OP_ARRAY_SIZE(free_params); i++)
		assert_false(api_pg_param_is_fixed(free_params[i]));
	assert_false(api_pg_param_is_fixed(NULL));
	assert_true(api_pg_param_is_blocked("log_directory"));
	assert_false(api_pg_param_is_blocked("archive_mode"));
	assert_int_equal(api_pg_default_params_count, 24);
	assert_string_equal(api_pg_param_default("wal_level"), "logical");
	assert_string_equal(api_pg_param_default("archive_timeout"), "5min");
	assert_string_equal(api_pg_param_default("shared_preload_libraries"), "");
	assert_string_equal(api_pg_param_default("wal_retrieve_retry_interval"), "250ms");
	assert_string_equal(api_pg_param_default("SSL_MIN_PROTOCOL_VERSION"), "TLSv1.3");
	assert_null(api_pg_param_default("work_mem"));
	assert_null(api_pg_param_default(NULL));
	for (size_t i = 0; i < api_pg_mandatory_params_count; i++)
		assert_true(api_pg_param_is_fixed(api_pg_mandatory_params[i].name));
	assert_string_equal(api_pg_archive_mode(true, true), "off");
	assert_string_equal(api_pg_archive_mode(false, true), "always");
	assert_string_equal(api_pg_archive_mode(false, false), "on");
}

static void test_reserved(void **state)
{
	(void)state;
	assert_true(wh_reserved_env_name("PGDATA"));
	assert_true(wh_reserved_env_name("pgport"));
	assert_true(wh_reserved_env_name("CNPG_SECRET"));
	assert_true(wh_reserved_env_name("namespace"));
	assert_true(wh_reserved_env_name("CLUSTER_NAME"));
	assert_false(wh_reserved_env_name("TZ"));
	assert_false(wh_reserved_env_name("CNPGX"));
	assert_false(wh_reserved_env_name("POD_NAMES"));
	assert_false(wh_reserved_env_name(NULL));
	assert_true(wh_reserved_role_name("postgres"));
	assert_true(wh_reserved_role_name("streaming_replica"));
	assert_true(wh_reserved_role_name("cnpg_pooler_pgbouncer"));
	assert_true(wh_reserved_role_name("pg_monitor"));
	assert_false(wh_reserved_role_name("app"));
	assert_false(wh_reserved_role_name("postgres2"));
	assert_true(wh_reserved_service_name("pg", "pg-rw"));
	assert_true(wh_reserved_service_name("pg", "pg-any"));
	assert_true(wh_reserved_service_name("pg", "pg-r"));
	assert_false(wh_reserved_service_name("pg", "pg-rwx"));
	assert_false(wh_reserved_service_name("pg", "other-rw"));
	assert_false(wh_reserved_service_name(NULL, "pg-rw"));
	assert_true(wh_reserved_tablespace_name("pg_x"));
	assert_false(wh_reserved_tablespace_name("app_pg_x"));
}

/* ---- rules_spec_util.c ---- */

static void test_helpers(void **state)
{
	(void)state;
	bool b = false;
	/* typed lookups (lookup.h): null is absent, types are strict, dotted paths */
	_cleanup_(op_json_putp) json_object *t = NULL;
	const char *tj = "{\"a\":{\"i\":3,\"d\":3.0,\"f\":3.5,\"s\":\"\",\"n\":null,"
			 "\"b\":true,\"l\":[\"x\",1]}}";
	assert_int_equal(op_json_parse(tj, strlen(tj), 8, &t, NULL), 0);
	int64_t i64 = 0;
	assert_true(wh_i64(t, "a.i", &i64) && i64 == 3);
	i64 = 0;
	assert_true(wh_i64(t, "a.d", &i64) && i64 == 3);
	assert_false(wh_i64(t, "a.f", &i64));
	assert_false(wh_i64(t, "a.s", &i64));
	assert_true(wh_has(t, "a.s"));
	assert_false(wh_has(t, "a.n"));
	assert_null(wh_at(t, "a.n"));
	assert_non_null(wh_str(t, "a.s"));
	assert_null(wh_nstr(t, "a.s"));
	assert_null(wh_obj(t, "a.l"));
	assert_int_equal(wh_len(t, "a.l"), 2);
	assert_true(wh_arr_has_str(t, "a.l", "x"));
	assert_false(wh_arr_has_str(t, "a.l", "1"));
	assert_true(wh_bool(t, "a.b", &b) && b);
	assert_false(wh_bool(t, "a.i", &b));
	static const struct {
		const char *in;
		bool ok, val;
	} gobools[] = { { "1", true, true },   { "T", true, true },     { "True", true, true },
			{ "f", true, false },  { "FALSE", true, false }, { "yes", false, false },
			{ "tRUE", false, false }, { "", false, false } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(gobools); i++) {
		b = !gobools[i].val;
		assert_int_equal(wh_parse_go_bool(gobools[i].in, &b), gobools[i].ok);
		if (gobools[i].ok)
			assert_int_equal(b, gobools[i].val);
	}
	static const struct {
		const char *in;
		int ok;
		bool val;
	} bools[] = { { "on", 1, true }, { "OFF", 1, false }, { "of", 1, false },
		      { "o", 0, false }, { "t", 1, true },    { "FALSE", 1, false },
		      { "y", 1, true },  { "no", 1, false },  { "1", 1, true },
		      { "0", 1, false }, { "", 0, false },    { "truex", 0, false },
		      { "2", 0, false } };
	for (size_t i = 0; i < OP_ARRAY_SIZE(bools); i++) {
		assert_int_equal(api_pg_bool_parse(bools[i].in, &b), bools[i].ok);
		if (bools[i].ok)
			assert_int_equal(b, bools[i].val);
	}
	static const struct {
		const char *in;
		int rc;
		int64_t bytes;
	} sizes[] = {
		{ "128MB", 0, 128LL * 1048576 },  { "2", 0, 2LL * 1048576 },
		{ "1TB", 0, 1099511627776LL },    { "8kB", 0, 8192LL },
		{ "128 MB", 0, 128LL * 1048576 }, { "1.5GB", 0, 1610612736LL },
		{ "100B", 0, 100LL },             { "1Gi", -EINVAL, 0 },
		{ "MB", -EINVAL, 0 },             { "1mB", -EINVAL, 0 },
		{ "", -EINVAL, 0 },               { "10 kb", -EINVAL, 0 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(sizes); i++) {
		struct api_quantity bytes = { -1 };
		assert_int_equal(api_pg_size_parse(sizes[i].in, &bytes), sizes[i].rc);
		if (sizes[i].rc == 0)
			assert_true(bytes.nano == (__int128)sizes[i].bytes * 1000000000);
	}

	/* quantity fields: JSON strings and numbers (a number's text is parsed) */
	_cleanup_(op_json_putp) json_object *qs = NULL;
	const char *qjson = "{\"s\":\"100m\",\"i\":2,\"d\":0.5,\"bad\":\"1Gb\","
			    "\"obj\":{},\"nul\":null}";
	assert_int_equal(op_json_parse(qjson, strlen(qjson), 8, &qs, NULL), 0);
	struct api_quantity q = { 0 };
	assert_int_equal(wh_quantity_at(qs, "s", &q), 1);
	assert_true(q.nano == 100000000);
	assert_int_equal(wh_quantity_at(qs, "i", &q), 1);
	assert_true(q.nano == 2000000000);
	assert_int_equal(wh_quantity_at(qs, "d", &q), 1);
	assert_true(q.nano == 500000000);
	assert_int_equal(wh_quantity_at(qs, "bad", &q), -EINVAL);
	assert_int_equal(wh_quantity_at(qs, "obj", &q), -EINVAL);
	assert_int_equal(wh_quantity_at(qs, "nul", &q), 0);
	assert_int_equal(wh_quantity_at(qs, "absent", &q), 0);

	assert_true(wh_is_dns1035_label("pg-1"));
	assert_false(wh_is_dns1035_label("1pg"));
	assert_false(wh_is_dns1035_label("pg-"));
	assert_true(wh_is_dns1123_subdomain("a.b-c.d"));
	assert_false(wh_is_dns1123_subdomain("a..b"));
	assert_true(wh_is_qualified_name("example.com/Key_1"));
	assert_false(wh_is_qualified_name("a/b/c"));
	assert_false(wh_is_qualified_name(""));
	assert_true(wh_is_label_value(""));
	assert_false(wh_is_label_value("a b"));
}

static void test_major_and_replica(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		int major;
	} majors[] = {
		{ "{'imageName':'postgres:16.4-bookworm'}", 16 },
		{ "{'imageName':'x/postgresql:18@sha256:ab'}", 18 },
		{ "{'imageName':'postgres:latest'}", -1 },
		{ "{'imageName':'ghcr.io/cloudnative-pg/postgresql:17beta1'}", 17 },
		{ "{'imageName':'ghcr.io/cloudnative-pg/postgresql:18rc1'}", 18 },
		{ "{'imageName':null}", -1 },
		{ "{'imageName':null,'imageCatalogRef':{'name':'c','major':15}}", 15 },
		/* one helper set: integral doubles are integers (as api/ decodes them) */
		{ "{'imageCatalogRef':{'name':'c','major':15.0}}", 15 },
		{ "{'imageCatalogRef':{'name':'c','major':15.5}}", -1 },
		{ "{'imageCatalogRef':{'name':'c','major':100000}}", -1 },
		{ "{'imageName':''}", -1 },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(majors); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster(NULL, majors[i].spec);
		struct wh_ctx ctx = { .obj = c, .spec = op_json_at(c, "spec") };
		assert_int_equal(api_pg_major(&ctx), majors[i].major);
	}
	static const struct {
		const char *spec;
		bool replica;
	} replicas[] = {
		{ "{}", false },
		{ "{'replica':{'enabled':true}}", true },
		{ "{'replica':{'enabled':false,'primary':'x'}}", false },
		{ "{'replica':{'primary':'pg'}}", false },
		{ "{'replica':{'primary':'other'}}", true },
		{ "{'replica':{'primary':'a','self':'a'}}", false },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(replicas); i++) {
		_cleanup_(op_json_putp) json_object *c = make_cluster(NULL, replicas[i].spec);
		struct wh_ctx ctx = { .obj = c, .spec = op_json_at(c, "spec") };
		assert_int_equal(wh_is_replica(&ctx), replicas[i].replica);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_order),
		cmocka_unit_test(test_rules_run_on_update),
		cmocka_unit_test(test_wrong_types_do_not_crash),
		cmocka_unit_test(test_samples_admitted),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_v51_warns_on_placeholders),
		cmocka_unit_test(test_safety_rules),
		cmocka_unit_test(test_message_values),
		cmocka_unit_test(test_pgparams),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_major_and_replica),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
