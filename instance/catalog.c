/* instance/catalog.c - the object store's base backups as the primary's
 * instance manager sees them (issue 25: retention and the first
 * recoverability point).
 *
 * A background look, at most one at a time, every INST_CATALOG_EVERY_S (60 s) and
 * soon after it is poked (a base backup just ended), on the primary only (one
 * instance deletes, the operator reads the primary): it lists the backups of
 * the WAL archive's store (bk_catalog_list), applies
 * spec.backup.retentionPolicy (bk_retention_apply: the expired backups and
 * the WAL only they needed, as barman-cloud-backup-delete does) and keeps
 * what /pg/status reports as "backupCatalog":
 *   {"checkedAt", "backups", "firstRecoverabilityPoint", "lastSuccessfulBackup",
 *    "lastSuccessfulBackupId", "error",
 *    "retention": {"policy", "at", "deleted": [ids], "walsDeleted"}}
 * The reconciler turns it into the Cluster's firstRecoverabilityPoint and an
 * Event naming what retention deleted. The store's credentials are read from
 * their files by each look (a rotated Secret is used at the next one). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/timestamp.h"
#include "backup/backup.h"
#include "backup/retention.h"
#include "instance/internal.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"

struct inst_catalog {
	pthread_mutex_t mu;
	pthread_t th;
	bool running, joinable;
	int64_t next_s;      /* Unix s of the next look; 0: as soon as possible */
	char *json;          /* owned: the last look, or NULL */
	char *retention_json; /* owned: the last retention that deleted something */
};

/* What one look works with (owned copies: the thread outlives the tick). */
struct look {
	struct inst_catalog *cat;
	char *cfg_path, *retention;
};

struct inst_catalog *inst_catalog_new(void)
{
	struct inst_catalog *c = op_calloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void inst_catalog_free(struct inst_catalog *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	bool running = c->running;
	pthread_mutex_unlock(&c->mu);
	if (running) {
		/* a look waits on the store (its own timeouts, up to minutes): the
		 * manager is exiting, it must not wait for it; the look keeps c */
		pthread_detach(c->th);
		return;
	}
	if (c->joinable)
		pthread_join(c->th, NULL);
	free(c->json);
	free(c->retention_json);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static char *us_rfc3339(int64_t us)
{
	return api_time_rfc3339(us / 1000000);
}

/* Retention over the catalog's readable backups; *ret_json (owned) says what
 * it deleted when it deleted anything. */
static int retain(const struct bk_config *cfg, const struct bk_catalog *cat, const char *policy,
		  char **ret_json, struct op_err *err)
{
	struct bk_retention_policy p;
	int r = bk_retention_parse(policy, &p, err);
	if (r < 0)
		return r;
	struct bk_retention_backup *v = op_calloc(cat->n ? cat->n : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < cat->n; i++)
		if (cat->v[i].ok)
			v[n++] = (struct bk_retention_backup){ cat->v[i].id, &cat->v[i].info };
	struct bk_retention_result res;
	r = bk_retention_apply(cfg, v, n, api_time_now_us(), &p, &res, err);
	if (res.n_deleted || res.wals_deleted) {
		char desc[64];
		bk_retention_describe(&p, desc, sizeof(desc));
		json_object *o = op_jobj();
		op_jsets(o, "policy", desc);
		_cleanup_free_ char *at = api_time_rfc3339(api_time_now_us() / 1000000);
		op_jsets(o, "at", at);
		json_object *ids = op_jarr();
		for (size_t i = 0; i < res.n_deleted; i++)
			op_jpush(ids, op_jstr(res.deleted_ids[i]));
		op_jset(o, "deleted", ids);
		op_jset(o, "walsDeleted", op_jint((int64_t)res.wals_deleted));
		*ret_json = op_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		op_log_info("retention policy applied", "policy", desc, "deleted",
			    res.n_deleted ? res.deleted_ids[0] : "", "error", r < 0 ? err->msg : "");
	}
	bk_retention_result_done(&res);
	free(v);
	return r;
}

/* The summary of a catalog (owned JSON text); error: the look's failure or NULL. */
static char *summary(const struct bk_catalog *cat, const char *error)
{
	json_object *o = op_jobj();
	_cleanup_free_ char *now = api_time_rfc3339(api_time_now_us() / 1000000);
	op_jsets(o, "checkedAt", now);
	if (cat) {
		op_jset(o, "backups", op_jint((int64_t)cat->n));
		int64_t frp;
		if (bk_catalog_first_point(cat, &frp) == 0) {
			_cleanup_free_ char *t = us_rfc3339(frp);
			op_jsets(o, "firstRecoverabilityPoint", t);
		}
		for (size_t i = cat->n; i-- > 0;) {
			const struct bk_catalog_entry *e = &cat->v[i];
			if (!e->ok || e->info.status != BK_STATUS_DONE || !e->info.end_time.set)
				continue;
			_cleanup_free_ char *t = us_rfc3339(e->info.end_time.epoch_us);
			op_jsets(o, "lastSuccessfulBackup", t);
			op_jsets(o, "lastSuccessfulBackupId", e->id);
			break;
		}
	}
	if (error)
		op_jsets(o, "error", error);
	char *s = op_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

static void *look_main(void *arg)
{
	struct look *l = arg;
	struct bk_config cfg;
	struct bk_catalog cat = { 0 };
	struct op_err err = OP_ERR_INIT;
	char *deleted = NULL;
	int r = bk_config_load(l->cfg_path, &cfg, &err);
	if (r == 0) {
		r = bk_catalog_list(&cfg, &cat, &err);
		if (r == 0 && l->retention && retain(&cfg, &cat, l->retention, &deleted, &err) == 0 &&
		    deleted) { /* list again: the summary shows what is left */
			bk_catalog_free(&cat);
			r = bk_catalog_list(&cfg, &cat, &err);
		}
		bk_config_done(&cfg);
	}
	if (r < 0)
		op_log_warn("backup catalog: cannot list the object store", "error", err.msg);
	char *json = summary(r < 0 ? NULL : &cat, r < 0 || err.msg[0] ? err.msg : NULL);
	bk_catalog_free(&cat);
	struct inst_catalog *c = l->cat;
	pthread_mutex_lock(&c->mu);
	free(c->json);
	c->json = json;
	if (deleted) {
		free(c->retention_json);
		c->retention_json = deleted;
	}
	c->running = false;
	pthread_mutex_unlock(&c->mu);
	free(l->cfg_path);
	free(l->retention);
	free(l);
	return NULL;
}

void inst_catalog_tick(struct inst_catalog *c, bool primary, const char *cfg_path,
		       const char *retention)
{
	int64_t now = api_time_now_us() / 1000000;
	pthread_mutex_lock(&c->mu);
	bool due = primary && cfg_path && !c->running && now >= c->next_s;
	if (due) {
		if (c->joinable)
			pthread_join(c->th, NULL);
		c->joinable = false;
		struct look *l = op_calloc(1, sizeof(*l));
		*l = (struct look){ c, op_strdup(cfg_path), retention ? op_strdup(retention) : NULL };
		c->running = true;
		c->next_s = now + INST_CATALOG_EVERY_S;
		if (pthread_create(&c->th, NULL, look_main, l) != 0) {
			c->running = false;
			free(l->cfg_path);
			free(l->retention);
			free(l);
		} else {
			c->joinable = true;
		}
	}
	pthread_mutex_unlock(&c->mu);
}

void inst_catalog_poke(struct inst_catalog *c)
{
	pthread_mutex_lock(&c->mu);
	c->next_s = 0;
	pthread_mutex_unlock(&c->mu);
}

char *inst_catalog_json(struct inst_catalog *c)
{
	pthread_mutex_lock(&c->mu);
	char *s = NULL;
	if (c->json && c->retention_json) {
		/* the summary with the last deletion in it */
		size_t n = strlen(c->json);
		s = op_asprintf("%.*s,\"retention\":%s}", (int)(n - 1), c->json, c->retention_json);
	} else if (c->json) {
		s = op_strdup(c->json);
	}
	pthread_mutex_unlock(&c->mu);
	return s;
}
