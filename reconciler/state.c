/* reconciler/state.c - the controller's shared state, the lowest layer of
 * the reconciler's files that keep state (docs/internals/reconciler.md,
 * "Layers"): the informer caches (read only here; controller.c starts and
 * stops them), the stats counters, the per-Cluster states (rc_cluster_state:
 * an array sorted by key, binary search, under c->mu) and what reconciles
 * note in them (the synchronous set, re-clones, status errors, the fence
 * clock's return time). Calls nothing of reconciler/ above status.c and
 * plan.c, so every other file may call it. */
#include <pthread.h>
#include <string.h>

#include "reconciler/ctl.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "support/alloc.h"
#include "support/json.h"

/* --------------------------------------------------------------- caches */

struct kube_informer *rc_informer(struct rc_controller *c, enum rc_inf kind, const char *ns)
{
	if (c->n_ns == 0 || kind == RC_INF_NODES) /* Nodes: one cluster-scoped informer */
		return c->inf[kind][0];
	for (size_t i = 0; i < c->n_ns; i++)
		if (ns && strcmp(c->ns[i], ns) == 0)
			return c->inf[kind][i];
	return NULL;
}

json_object *rc_cache_get(struct rc_controller *c, enum rc_inf kind, const char *ns,
			  const char *name)
{
	struct kube_informer *inf = rc_informer(c, kind, ns);
	return inf ? kube_informer_get(inf, ns, name) : NULL;
}

static const char *label_of(json_object *obj, const char *key)
{
	json_object *labels = op_json_at(obj, "metadata.labels");
	json_object *v = NULL;
	if (!labels || !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* Under the informer's read lock, on the Cluster's own objects only (the
 * cluster label is the informer's index: bench/live.sh showed that copying
 * the whole namespace per Cluster made each live request cost every Pod of
 * the namespace once per Cluster). */
static bool has_role(void *ud, json_object *o)
{
	const char *role = label_of(o, RC_LABEL_POD_ROLE);
	return role && strcmp(role, ud) == 0;
}

json_object *rc_cache_owned_role(struct rc_controller *c, enum rc_inf kind, const char *ns,
				 const char *cluster, const char *pod_role)
{
	struct kube_informer *inf = rc_informer(c, kind, ns);
	if (!inf) {
		json_object *out = op_jarr();
		if (!out)
			abort();
		return out;
	}
	json_object *out = kube_informer_list_labeled(inf, ns, RC_LABEL_CLUSTER, cluster,
						      pod_role ? has_role : NULL, (void *)pod_role);
	if (!out)
		abort();
	return out;
}

json_object *rc_cache_owned(struct rc_controller *c, enum rc_inf kind, const char *ns,
			    const char *cluster)
{
	return rc_cache_owned_role(c, kind, ns, cluster, NULL);
}

void rc_stat_add(struct rc_controller *c, unsigned long *field)
{
	pthread_mutex_lock(&c->mu);
	(*field)++;
	pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------ per-Cluster states */

/* Where key is, or would go, in c->states (sorted by key): a lower bound. */
static size_t state_pos(const struct rc_controller *c, const char *key, bool *ret_found)
{
	size_t lo = 0, hi = c->n_states;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(c->states[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < c->n_states && strcmp(c->states[lo].key, key) == 0;
	return lo;
}

struct rc_cluster_state *rc_state_get(struct rc_controller *c, const char *key)
{
	bool found;
	size_t at = state_pos(c, key, &found);
	if (found)
		return &c->states[at];
	c->states = op_realloc(c->states, (c->n_states + 1) * sizeof(*c->states));
	memmove(&c->states[at + 1], &c->states[at], (c->n_states - at) * sizeof(*c->states));
	c->n_states++;
	struct rc_cluster_state *s = &c->states[at];
	*s = (struct rc_cluster_state){ .key = op_strdup(key) };
	return s;
}

void rc_state_done(struct rc_cluster_state *s)
{
	free(s->key);
	free(s->uid);
	free(s->rbac_rules);
	rc_strv_free(&s->silent, &s->n_silent);
	rc_strv_free(&s->lost, &s->n_lost);
	free(s->watch);
	rc_strv_free(&s->answered, &s->n_answered);
	rc_strv_free(&s->sync_set, &s->n_sync_set);
	rc_strv_free(&s->reclones, &s->n_reclones);
	pki_pair_done(&s->client);
	rc_pki_memo_done(&s->pki);
	*s = (struct rc_cluster_state){ 0 };
}

void rc_state_drop(struct rc_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	bool found;
	size_t at = state_pos(c, key, &found);
	if (found) {
		rc_state_done(&c->states[at]);
		c->n_states--;
		memmove(&c->states[at], &c->states[at + 1], (c->n_states - at) * sizeof(*c->states));
	}
	pthread_mutex_unlock(&c->mu);
}

struct rc_cluster_state *rc_state_find(struct rc_controller *c, const char *key)
{
	bool found;
	size_t at = state_pos(c, key, &found);
	return found ? &c->states[at] : NULL;
}

void rc_note_sync_set(struct rc_controller *c, const char *key, json_object *primary_doc)
{
	json_object *ri = op_json_at(primary_doc, "replicationInfo");
	if (!json_object_is_type(ri, json_type_array))
		return;
	char **names = NULL;
	size_t n = 0;
	for (size_t i = 0; i < json_object_array_length(ri); i++) {
		json_object *row = json_object_array_get_idx(ri, i);
		const char *app = op_json_str_at(row, "applicationName");
		const char *st = op_json_str_at(row, "syncState");
		if (app && st && (strcmp(st, "sync") == 0 || strcmp(st, "quorum") == 0))
			rc_strv_push(&names, &n, app);
	}
	/* a report of none keeps the last set: what was acknowledged before was
	 * acknowledged by one of those, and nothing can be since (required) */
	if (!n)
		return;
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_get(c, key);
	rc_strv_free(&s->sync_set, &s->n_sync_set);
	s->sync_set = TAKE_PTR(names);
	s->n_sync_set = n;
	pthread_mutex_unlock(&c->mu);
}

void rc_sync_set_merge(struct rc_controller *c, const char *key, char ***v, size_t *n)
{
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_find(c, key);
	if (s && s->n_sync_set) { /* what this process saw: into the status */
		rc_strv_free(v, n);
		for (size_t i = 0; i < s->n_sync_set; i++)
			rc_strv_push(v, n, s->sync_set[i]);
	} else if (*n) { /* none seen yet (a restart, a new leader): the status's */
		s = rc_state_get(c, key);
		for (size_t i = 0; i < *n; i++)
			rc_strv_push(&s->sync_set, &s->n_sync_set, (*v)[i]);
	}
	pthread_mutex_unlock(&c->mu);
}

void rc_sync_set_get(struct rc_controller *c, const char *key, char ***ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, key);
	for (size_t i = 0; s && i < s->n_sync_set; i++)
		rc_strv_push(ret, n, s->sync_set[i]);
	pthread_mutex_unlock(&c->mu);
}

bool rc_note_report(struct rc_controller *c, const char *key, const char *pod, const char *id)
{
	_cleanup_free_ char *entry = op_asprintf("%s\t%s", pod, id);
	size_t plen = strlen(pod);
	bool fresh = true;
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_get(c, key);
	size_t i = 0;
	for (; i < s->n_reclones; i++)
		if (strncmp(s->reclones[i], pod, plen) == 0 && s->reclones[i][plen] == '\t')
			break;
	if (i == s->n_reclones) {
		rc_strv_push(&s->reclones, &s->n_reclones, entry);
	} else if (strcmp(s->reclones[i], entry) == 0) {
		fresh = false;
	} else {
		free(s->reclones[i]);
		s->reclones[i] = TAKE_PTR(entry);
	}
	pthread_mutex_unlock(&c->mu);
	return fresh;
}

void rc_note_forget(struct rc_controller *c, const char *key, const char *prefix,
		    const char *const *keep, size_t n_keep)
{
	size_t plen = strlen(prefix);
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_find(c, key);
	for (size_t i = 0; s && i < s->n_reclones;) {
		const char *e = s->reclones[i];
		size_t slen = strcspn(e, "\t");
		bool kept = strncmp(e, prefix, plen) != 0;
		for (size_t k = 0; !kept && k < n_keep; k++)
			kept = strlen(keep[k]) == slen && strncmp(e, keep[k], slen) == 0;
		if (kept) {
			i++;
			continue;
		}
		free(s->reclones[i]);
		s->reclones[i] = s->reclones[--s->n_reclones];
	}
	pthread_mutex_unlock(&c->mu);
}

long rc_note_status_error(struct rc_controller *c, const char *key, bool failing)
{
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_find(c, key);
	if (!s && failing)
		s = rc_state_get(c, key);
	unsigned streak = 0;
	if (s)
		streak = s->status_errors = failing ? s->status_errors + 1 : 0;
	pthread_mutex_unlock(&c->mu);
	return failing ? rc_status_error_delay_ms(streak) : 0;
}

void rc_note_pending_returned(struct rc_controller *c, const char *key, int64_t ms)
{
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = ms ? rc_state_get(c, key) : rc_state_find(c, key);
	if (s)
		s->pending_returned_ms = ms;
	pthread_mutex_unlock(&c->mu);
}

int64_t rc_pending_returned(struct rc_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	const struct rc_cluster_state *s = rc_state_find(c, key);
	int64_t ms = s ? s->pending_returned_ms : 0;
	pthread_mutex_unlock(&c->mu);
	return ms;
}

void rc_pki_memo_done(struct rc_pki_memo *m)
{
	free(m->ca_rv);
	free(m->ca_crt);
	free(m->ca_cert_rv);
	for (size_t i = 0; i < OP_ARRAY_SIZE(m->leaf); i++)
		free(m->leaf[i].rv);
	*m = (struct rc_pki_memo){ 0 };
}
