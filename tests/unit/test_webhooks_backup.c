/* tests/unit/test_webhooks_backup.c - admission of Backup, ScheduledBackup
 * and ObjectStore (rules B, S, O of docs/admission-rules.md §11), their
 * routes, and the Cluster rules around backups (V10 naming both targets, V55
 * refusing another namespace, V57). */
#include "webhooks_test_util.h"

#include "webhooks/http.h"
#include "webhooks/rules.h"

/* A document of kind/apiVersion with spec (single quotes for double). */
static json_object *make(const char *api, const char *kind, const char *meta, const char *spec)
{
	_cleanup_free_ char *txt = op_asprintf(
		"{'apiVersion':'%s','kind':'%s','metadata':%s,'spec':%s}", api, kind,
		meta ? meta : "{'name':'b','namespace':'db'}", spec);
	for (char *p = txt; *p; p++)
		if (*p == '\'')
			*p = '"';
	return parse(txt);
}

#define PG "postgresql.cnpg.io/v1"
#define BC "barmancloud.cnpg.io/v1"

/* Defaults then validates (old may be NULL); res owned by the caller. */
static int admit(enum wh_resource rs, json_object *o, json_object *old, struct wh_result *res)
{
	json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_resource_of(o), (int)rs);
	assert_int_equal(wh_default_resource(rs, o, &patch, &err), 0);
	json_object_put(patch);
	if (old) {
		assert_int_equal(wh_default_resource(rs, old, &patch, &err), 0);
		json_object_put(patch);
	}
	return wh_validate_resource(rs, o, old, res);
}

/* The "path: body" of the first error on path, or NULL (owned). */
static char *error_on(const struct wh_result *res, const char *path)
{
	for (size_t i = 0; i < res->n_errors; i++) {
		if (strcmp(res->errors[i].path, path) != 0)
			continue;
		_cleanup_free_ char *body = wh_issue_body(&res->errors[i]);
		return op_asprintf("%s: %s", path, body);
	}
	return NULL;
}

static bool warned(const struct wh_result *res, const char *needle)
{
	for (size_t i = 0; i < res->n_warnings; i++)
		if (strstr(res->warnings[i], needle))
			return true;
	return false;
}

struct row {
	const char *name;
	enum wh_resource rs;
	const char *spec;
	const char *path; /* NULL: admitted */
	const char *text; /* substring of "path: body" */
};

#define B WH_RES_BACKUP
#define S WH_RES_SCHEDULED_BACKUP
#define O WH_RES_OBJECT_STORE
#define SCHED(x) "{'cluster':{'name':'pg'},'schedule':'" x "'}"
#define STORE(x) "{'configuration':{'destinationPath':'s3://bkt/pg','s3Credentials':{" \
	"'inheritFromIAMRole':true}" x "}}"

static const struct row rows[] = {
	{ "backup minimal", B, "{'cluster':{'name':'pg'}}", NULL, NULL },
	{ "backup plugin", B,
	  "{'cluster':{'name':'pg'},'method':'plugin','pluginConfiguration':{'name':'x'}}", NULL,
	  NULL },
	{ "backup snapshot online", B,
	  "{'cluster':{'name':'pg'},'method':'volumeSnapshot','online':false,"
	  "'onlineConfiguration':{'immediateCheckpoint':true}}",
	  NULL, NULL },
	{ "B1 missing", B, "{}", "spec.cluster.name", "Required value" },
	{ "B1 empty", B, "{'cluster':{'name':''}}", "spec.cluster.name", "Required value" },
	{ "B1 not DNS", B, "{'cluster':{'name':'Prod_DB'}}", "spec.cluster.name",
	  "Invalid value: \"Prod_DB\": must be the name of a Cluster" },
	{ "B1 namespace/name", B, "{'cluster':{'name':'other/pg'}}", "spec.cluster.name",
	  "DNS-1123" },
	{ "B2 method", B, "{'cluster':{'name':'pg'},'method':'tape'}", "spec.method",
	  "Unsupported value: \"tape\": supported values: \"barmanObjectStore\", "
	  "\"volumeSnapshot\", \"plugin\"" },
	{ "B3 target", B, "{'cluster':{'name':'pg'},'target':'standby'}", "spec.target",
	  "Unsupported value: \"standby\"" },
	{ "B3 empty target", B, "{'cluster':{'name':'pg'},'target':''}", NULL, NULL },
	{ "B4 plugin", B, "{'cluster':{'name':'pg'},'method':'plugin'}",
	  "spec.pluginConfiguration.name",
	  "Required value: cannot be empty when the backup method is plugin" },
	{ "B5 online", B, "{'cluster':{'name':'pg'},'online':true}", "spec.online",
	  "only if the backup method is volumeSnapshot" },
	{ "B5 onlineConfiguration", B,
	  "{'cluster':{'name':'pg'},'onlineConfiguration':{'waitForArchive':false}}",
	  "spec.onlineConfiguration", "only if the backup method is volumeSnapshot" },
	{ "type error", B, "{'cluster':{'name':7}}", "spec.cluster.name",
	  "expected string, got integer" },
	{ "scheduled minimal", S, SCHED("0 0 0 * * *"), NULL, NULL },
	{ "scheduled descriptor", S, SCHED("@every 6h"), NULL, NULL },
	{ "S1 missing", S, "{'cluster':{'name':'pg'}}", "spec.schedule", "Required value" },
	{ "S1 bad minute", S, SCHED("0 61 * * * *"), "spec.schedule",
	  "spec.schedule: Invalid value: \"0 61 * * * *\": minutes field \"61\": end of range "
	  "(61) above maximum (59)" },
	{ "S1 four fields", S, SCHED("* * * *"), "spec.schedule", "expected 5 or 6 fields" },
	{ "S1 bad name", S, SCHED("0 0 0 * * FUNDAY"), "spec.schedule", "day-of-week field" },
	{ "S2 owner", S,
	  "{'cluster':{'name':'pg'},'schedule':'@daily','backupOwnerReference':'me'}",
	  "spec.backupOwnerReference", "supported values: \"none\", \"self\", \"cluster\"" },
	{ "S B1", S, "{'schedule':'@daily','cluster':{'name':'A'}}", "spec.cluster.name",
	  "must be the name of a Cluster" },
	{ "S B4", S, "{'schedule':'@daily','cluster':{'name':'pg'},'method':'plugin'}",
	  "spec.pluginConfiguration.name", "Required value" },
	{ "S type", S, "{'schedule':5,'cluster':{'name':'pg'}}", "spec.schedule",
	  "expected string, got integer" },
	{ "store minimal", O, STORE(""), NULL, NULL },
	{ "O1 missing", O, "{}", "spec.configuration", "Required value" },
	{ "O1 destination", O, "{'configuration':{'s3Credentials':{'inheritFromIAMRole':true}}}",
	  "spec.configuration.destinationPath", "Required value" },
	{ "O2 credentials", O, "{'configuration':{'destinationPath':'s3://bkt'}}",
	  "spec.configuration", "missing credentials" },
	{ "O2 half keys", O,
	  "{'configuration':{'destinationPath':'s3://bkt','s3Credentials':{'accessKeyId':"
	  "{'name':'s','key':'k'}}}}",
	  "spec.configuration.s3Credentials", "both accessKeyId and secretAccessKey" },
	{ "O3 scheme", O,
	  "{'configuration':{'destinationPath':'bkt/pg','s3Credentials':{'inheritFromIAMRole':"
	  "true}}}",
	  "spec.configuration.destinationPath", "must be s3://bucket[/path]" },
	{ "O3 endpoint", O, STORE(",'endpointURL':'ftp://x'"), "spec.configuration.endpointURL",
	  "must be http(s)://host[:port]" },
	{ "O3 parallel", O, STORE(",'wal':{'maxParallel':0}"),
	  "spec.configuration.wal.maxParallel", "must be between 1 and 64" },
	{ "O3 codec", O, STORE(",'data':{'compression':'brotli'}"),
	  "spec.configuration.data.compression", "Unsupported value: \"brotli\"" },
	{ "O3 tags", O,
	  STORE(",'tags':{'env':'prod'},'historyTags':{'kind':'tl'},'wal':{'encryption':'AES256'}"),
	  NULL, NULL },
	{ "O3 tag", O, STORE(",'tags':{'env':'a?b'}"), "spec.configuration.tags.env",
	  "not an S3 object tag: tag value: only letters, digits, spaces and + - = . _ : / @" },
	{ "O3 history tag key", O, STORE(",'historyTags':{'aws:created':'x'}"),
	  "spec.configuration.historyTags.aws:created", "prefix aws: is reserved" },
	{ "O3 server name", O, STORE(",'serverName':'a/b'"), "spec.configuration.serverName",
	  "one path segment" },
	{ "O4 retention", O,
	  "{'retentionPolicy':'30 days','configuration':{'destinationPath':'s3://bkt',"
	  "'s3Credentials':{'inheritFromIAMRole':true}}}",
	  "spec.retentionPolicy", "must match ^[1-9][0-9]*[dwm]$" },
	{ "O4 zero", O,
	  "{'retentionPolicy':'0d','configuration':{'destinationPath':'s3://bkt',"
	  "'s3Credentials':{'inheritFromIAMRole':true}}}",
	  "spec.retentionPolicy", "not a valid retention policy" },
	{ "O type", O, "{'configuration':{'destinationPath':['x']}}",
	  "spec.configuration.destinationPath", "expected string, got array" },
};

static void test_rules(void **state)
{
	(void)state;
	static const char *const apis[] = { [B] = PG, [S] = PG, [O] = BC };
	int failures = 0;
	for (size_t i = 0; i < OP_ARRAY_SIZE(rows); i++) {
		const struct row *r = &rows[i];
		_cleanup_(op_json_putp) json_object *o =
			make(apis[r->rs], wh_resource_kind(r->rs), NULL, r->spec);
		struct wh_result res = { 0 };
		int n = admit(r->rs, o, NULL, &res);
		_cleanup_free_ char *got = r->path ? error_on(&res, r->path) : NULL;
		bool ok = r->path ? got && strstr(got, r->text) : n == 0;
		if (!ok) {
			print_message("row '%s': got %d error(s):\n", r->name, n);
			for (size_t e = 0; e < res.n_errors; e++) {
				_cleanup_free_ char *body = wh_issue_body(&res.errors[e]);
				print_message("  %s: %s\n", res.errors[e].path, body);
			}
			failures++;
		}
		wh_result_done(&res);
	}
	assert_int_equal(failures, 0);
}

static void test_warnings(void **state)
{
	(void)state;
	static const struct {
		enum wh_resource rs;
		const char *spec, *warning; /* warning NULL: none expected */
	} cases[] = {
		{ B, "{'cluster':{'name':'pg'},'method':'volumeSnapshot'}",
		  "pgop takes no CSI volume snapshots: the Backup will fail" },
		{ S, "{'cluster':{'name':'pg'},'schedule':'@daily','method':'volumeSnapshot'}",
		  "pgop takes no CSI volume snapshots" },
		{ S, SCHED("0 0 0 1 *"), "usually six arguments are needed" },
		{ S, SCHED("0 0 0 30 2 *"), "never fires" },
		{ S, SCHED("0 0 0 29 2 *"), NULL },
		{ O, "{'instanceSidecarConfiguration':{},'configuration':{'destinationPath':'s3://b',"
		     "'s3Credentials':{'inheritFromIAMRole':true}}}",
		  "instanceSidecarConfiguration is accepted and ignored" },
		{ O, "{'retentionPolicy':'4w','configuration':{'destinationPath':'s3://bkt',"
		     "'s3Credentials':{'accessKeyId':{'name':'c','key':'i'},"
		     "'secretAccessKey':{'name':'c','key':'s'}}}}",
		  NULL }, /* enforced: no warning */
		/* V51's placeholder warning on an ObjectStore too */
		{ O, "{'configuration':{'destinationPath':'s3://BUCKET_NAME/x',"
		     "'s3Credentials':{'inheritFromIAMRole':true}}}",
		  "spec.configuration.destinationPath: bad bucket name" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		_cleanup_(op_json_putp) json_object *o =
			make(cases[i].rs == O ? BC : PG, wh_resource_kind(cases[i].rs), NULL,
			     cases[i].spec);
		struct wh_result res = { 0 };
		if (admit(cases[i].rs, o, NULL, &res) != 0)
			fail_msg("case %zu denied: %s", i, res.errors[0].msg);
		if (cases[i].warning && !warned(&res, cases[i].warning))
			fail_msg("case %zu: no warning \"%s\"", i, cases[i].warning);
		if (!cases[i].warning && res.n_warnings)
			fail_msg("case %zu: unexpected warning %s", i, res.warnings[0]);
		wh_result_done(&res);
	}
}

/* B6: a Backup's spec never changes; metadata and status may. Defaults
 * written later (method) are not a change. */
static void test_backup_immutable(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *old = make(PG, "Backup", NULL,
							"{'cluster':{'name':'pg'}}");
	_cleanup_(op_json_putp) json_object *same = make(
		PG, "Backup", "{'name':'b','namespace':'db','labels':{'a':'b'}}",
		"{'cluster':{'name':'pg'},'method':'barmanObjectStore'}");
	struct wh_result res = { 0 };
	assert_int_equal(admit(B, same, old, &res), 0);
	wh_result_done(&res);
	_cleanup_(op_json_putp) json_object *changed =
		make(PG, "Backup", NULL, "{'cluster':{'name':'other'}}");
	assert_int_equal(admit(B, changed, old, &res), 1);
	_cleanup_free_ char *e = error_on(&res, "spec");
	assert_non_null(e);
	assert_string_equal(e, "spec: Forbidden: BackupSpec is immutable once set");
	wh_result_done(&res);
	/* a ScheduledBackup may change */
	_cleanup_(op_json_putp) json_object *s_old = make(PG, "ScheduledBackup", NULL,
							  SCHED("@daily"));
	_cleanup_(op_json_putp) json_object *s_new = make(PG, "ScheduledBackup", NULL,
							  SCHED("@hourly"));
	assert_int_equal(admit(S, s_new, s_old, &res), 0);
	wh_result_done(&res);
}

static void test_defaults_and_bypass(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *s =
		make(PG, "ScheduledBackup", NULL, SCHED("@daily"));
	_cleanup_(op_json_putp) json_object *patch = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_default_resource(S, s, &patch, &err), 0);
	assert_int_equal(json_object_array_length(patch), 2);
	assert_str_at(s, "spec.method", "barmanObjectStore");
	assert_str_at(s, "spec.backupOwnerReference", "none");
	_cleanup_(op_json_putp) json_object *arr = parse("[]");
	json_object *p2 = NULL;
	assert_int_equal(wh_default_resource(B, arr, &p2, &err), -EINVAL);
	/* cnpg.io/validation: disabled admits a bad Backup, with a warning */
	_cleanup_(op_json_putp) json_object *b = make(
		PG, "Backup",
		"{'name':'b','annotations':{'cnpg.io/validation':'disabled'}}", "{'method':'x'}");
	struct wh_result res = { 0 };
	assert_int_equal(admit(B, b, NULL, &res), 0);
	assert_true(warned(&res, "validation webhook is disabled"));
	wh_result_done(&res);
	/* but not an ObjectStore (the plugin's kind has no such annotation) */
	_cleanup_(op_json_putp) json_object *o = make(
		BC, "ObjectStore", "{'name':'o','annotations':{'cnpg.io/validation':'disabled'}}",
		"{}");
	assert_int_equal(admit(O, o, NULL, &res), 1);
	wh_result_done(&res);
	/* kinds */
	assert_int_equal(wh_resource_find("postgresql.cnpg.io", "Backup"), WH_RES_BACKUP);
	assert_int_equal(wh_resource_find("barmancloud.cnpg.io", "ObjectStore"),
			 WH_RES_OBJECT_STORE);
	assert_int_equal(wh_resource_find("postgresql.cnpg.io", "Pooler"), -ENOENT);
	_cleanup_(op_json_putp) json_object *noapi = parse("{\"kind\":\"Backup\"}");
	assert_int_equal(wh_resource_of(noapi), -ENOENT);
}

#define REVIEW(kind, op, obj)                                                                      \
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"      \
	"\"uid\":\"u-1\",\"kind\":" kind ",\"operation\":\"" op "\",\"name\":\"b\","              \
	"\"object\":" obj ",\"oldObject\":null}}"
#define KIND(k) "{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"kind\":\"" k "\"}"
#define BAD_SCHED                                                                                  \
	"{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"ScheduledBackup\",\"metadata\":{"   \
	"\"name\":\"nightly\"},\"spec\":{\"schedule\":\"0 0 25 * * *\",\"cluster\":{\"name\":"    \
	"\"pg\"}}}"

static json_object *review(enum wh_kind kind, enum wh_resource rs, const char *body)
{
	struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_err err = OP_ERR_INIT;
	if (wh_handle_review_resource(kind, rs, body, strlen(body), &resp, &err) < 0)
		fail_msg("%s", err.msg);
	json_object *out = parse(op_buf_str(&resp));
	op_buf_done(&resp);
	return out;
}

/* The AdmissionReview path: the denial names ScheduledBackup and the field;
 * each route admits its own kind only. */
static void test_reviews(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *out =
		review(WH_VALIDATE, S, REVIEW(KIND("ScheduledBackup"), "CREATE", BAD_SCHED));
	assert_false(json_object_get_boolean(at(out, "response.allowed")));
	assert_int_equal(json_object_get_int(at(out, "response.status.code")), 422);
	assert_str_at(out, "response.status.details.kind", "ScheduledBackup");
	assert_str_at(out, "response.status.details.group", "postgresql.cnpg.io");
	json_object *causes = at(out, "response.status.details.causes");
	assert_int_equal(json_object_array_length(causes), 1);
	assert_str_at(json_object_array_get_idx(causes, 0), "field", "spec.schedule");
	assert_non_null(strstr(str_at(out, "response.status.message"),
			       "ScheduledBackup.postgresql.cnpg.io \"nightly\" is invalid: "
			       "spec.schedule: Invalid value: \"0 0 25 * * *\": hours field"));
	/* the mutating route returns the defaults as a patch */
	_cleanup_(op_json_putp) json_object *m =
		review(WH_MUTATE, S, REVIEW(KIND("ScheduledBackup"), "CREATE", BAD_SCHED));
	assert_true(json_object_get_boolean(at(m, "response.allowed")));
	assert_str_at(m, "response.patchType", "JSONPatch");
	/* a ScheduledBackup sent to the Backup route, or to the Cluster's */
	_cleanup_(op_json_putp) json_object *w =
		review(WH_VALIDATE, B, REVIEW(KIND("ScheduledBackup"), "CREATE", BAD_SCHED));
	assert_false(json_object_get_boolean(at(w, "response.allowed")));
	assert_int_equal(json_object_get_int(at(w, "response.status.code")), 400);
	assert_non_null(strstr(str_at(w, "response.status.message"),
			       "only admits Backup.postgresql.cnpg.io objects"));
	_cleanup_(op_json_putp) json_object *c =
		review(WH_VALIDATE, WH_RES_CLUSTER,
		       REVIEW(KIND("ScheduledBackup"), "CREATE", BAD_SCHED));
	assert_int_equal(json_object_get_int(at(c, "response.status.code")), 400);
	/* routes: one per webhook, CloudNativePG's paths */
	static const struct op_http_route routes[] = { WH_HTTP_ROUTES };
	assert_int_equal(OP_ARRAY_SIZE(routes), 7);
	assert_string_equal(WH_VALIDATE_SCHEDULED_BACKUP_PATH,
			    "/validate-postgresql-cnpg-io-v1-scheduledbackup");
	struct op_buf resp = OP_BUF_INIT(OP_BUF_MAX_HTTP_BODY);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(wh_handle_review_resource(WH_VALIDATE, WH_RES__COUNT, "{}", 2, &resp,
						   &err),
			 -EINVAL);
	op_buf_done(&resp);
}

/* Cluster rules around backups. */
static void test_cluster_backup_rules(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *path, *text;
	} cases[] = {
		{ "{'instances':1,'storage':{'size':'1Gi'},'backup':{'target':'standby'}}",
		  "spec.backup.target",
		  "Unsupported value: \"standby\": supported values: \"primary\", \"prefer-standby\"" },
		{ "{'instances':1,'storage':{'size':'1Gi'},'bootstrap':{'recovery':{'backup':{"
		  "'name':'b'},'recoveryTarget':{'targetTime':'2026-01-01T00:00:00Z','targetLSN':"
		  "'0/3000000','targetXID':'5','backupID':'x'}}}}",
		  "spec.bootstrap.recovery.recoveryTarget",
		  "mutually exclusive: targetLSN, targetXID and targetTime" },
		{ "{'instances':1,'storage':{'size':'1Gi'},'bootstrap':{'recovery':{'backup':{"
		  "'name':'prod/b'}}}}",
		  "spec.bootstrap.recovery.backup.name", "a Backup in another namespace cannot be used" },
		{ "{'instances':1,'storage':{'size':'1Gi'},'backup':{'retentionPolicy':'30x',"
		  "'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
		  "'inheritFromIAMRole':true}}}}",
		  "spec.backup.retentionPolicy", "not a valid retention policy" },
		{ "{'instances':1,'storage':{'size':'1Gi'},'backup':{'barmanObjectStore':{"
		  "'destinationPath':'s3://b','s3Credentials':{'inheritFromIAMRole':true},"
		  "'data':{'additionalCommandArgs':['--tags','a','--read-timeout=1.5']}}}}",
		  "spec.backup.barmanObjectStore.data.additionalCommandArgs[2]",
		  "--read-timeout: expected whole seconds 1..86400, got '1.5'" },
		{ "{'instances':1,'storage':{'size':'1Gi'},'externalClusters':[{'name':'o',"
		  "'barmanObjectStore':{'destinationPath':'s3://b','s3Credentials':{"
		  "'inheritFromIAMRole':true},'data':{'additionalCommandArgs':["
		  "'--max-archive-size=10KB']}}}]}",
		  "spec.externalClusters[0].barmanObjectStore.data.additionalCommandArgs[0]",
		  "--max-archive-size: expected a size of 1MB or more" },
	};
	for (size_t i = 0; i < OP_ARRAY_SIZE(cases); i++) {
		_cleanup_(op_json_putp) json_object *c =
			make(PG, "Cluster", "{'name':'pg'}", cases[i].spec);
		struct wh_result res = { 0 };
		admit(WH_RES_CLUSTER, c, NULL, &res);
		_cleanup_free_ char *e = error_on(&res, cases[i].path);
		if (!e || !strstr(e, cases[i].text))
			fail_msg("case %zu: got %s, want %s", i, e ? e : "(no error)", cases[i].text);
		wh_result_done(&res);
	}
}

/* additionalCommandArgs: the options pgop acts on admitted silently, every
 * other one warned by its element; nothing refused. */
static void test_command_args_warnings(void **state)
{
	(void)state;
	_cleanup_(op_json_putp) json_object *c = make(
		PG, "Cluster", "{'name':'pg'}",
		"{'instances':1,'storage':{'size':'1Gi'},'backup':{'barmanObjectStore':{"
		"'destinationPath':'s3://b','s3Credentials':{'inheritFromIAMRole':true},"
		"'wal':{'archiveAdditionalCommandArgs':['--read-timeout=60','--max-concurrency=2'],"
		"'restoreAdditionalCommandArgs':['--no-partial']},"
		"'data':{'additionalCommandArgs':['--max-archive-size=50GB','--min-chunk-size=10MB',"
		"'-J','4','--max-bandwidth','10MB']}}}}");
	struct wh_result res = { 0 };
	assert_int_equal(admit(WH_RES_CLUSTER, c, NULL, &res), 0);
	assert_int_equal(res.n_errors, 0);
	const char *p = "spec.backup.barmanObjectStore.";
	char want[256];
	snprintf(want, sizeof(want), "%swal.archiveAdditionalCommandArgs[1]: --max-concurrency=2 is "
		 "accepted but not implemented", p);
	assert_true(warned(&res, want));
	snprintf(want, sizeof(want), "%swal.restoreAdditionalCommandArgs[0]: --no-partial", p);
	assert_true(warned(&res, want));
	snprintf(want, sizeof(want), "%sdata.additionalCommandArgs[4]: --max-bandwidth", p);
	assert_true(warned(&res, want));
	assert_false(warned(&res, "--max-archive-size=50GB is"));
	assert_false(warned(&res, "--read-timeout=60 is"));
	assert_false(warned(&res, "[3]"));
	wh_result_done(&res);
}

/* The tables: ids in docs/admission-rules.md §11's order; B6 on UPDATE only. */
static void test_tables(void **state)
{
	(void)state;
	static const char *const b[] = { "B1", "B2", "B3", "B4", "B5", "B6", "BW1" };
	static const char *const sb[] = { "S1", "B1", "B2", "B3", "B4",
					  "B5", "S2", "SW1", "SW2", "BW1" };
	static const char *const os[] = { "O1", "O2", "O3", "O4", "OW1" };
	const struct {
		const struct wh_rule *rules;
		size_t n;
		const char *const *ids;
		size_t n_ids;
	} tables[] = {
		{ wh_rules_backup, wh_rules_backup_count, b, OP_ARRAY_SIZE(b) },
		{ wh_rules_scheduled_backup, wh_rules_scheduled_backup_count, sb, OP_ARRAY_SIZE(sb) },
		{ wh_rules_object_store, wh_rules_object_store_count, os, OP_ARRAY_SIZE(os) },
	};
	for (size_t t = 0; t < OP_ARRAY_SIZE(tables); t++) {
		assert_int_equal(tables[t].n, tables[t].n_ids);
		for (size_t i = 0; i < tables[t].n; i++) {
			assert_string_equal(tables[t].rules[i].id, tables[t].ids[i]);
			assert_non_null(tables[t].rules[i].fn);
			unsigned want = strcmp(tables[t].ids[i], "B6") == 0
						? WH_OP_UPDATE
						: (WH_OP_CREATE | WH_OP_UPDATE);
			assert_int_equal(tables[t].rules[i].ops, want);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_backup_immutable),
		cmocka_unit_test(test_defaults_and_bypass),
		cmocka_unit_test(test_reviews),
		cmocka_unit_test(test_cluster_backup_rules),
		cmocka_unit_test(test_command_args_warnings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
