/* reconciler/cut.c - asks the replicas of a primary that does not answer to
 * cut their WAL receivers off it (POST /pg/cut, instance/cut.c;
 * docs/internals/failover.md "Partition: the cut").
 *
 * Each replica cuts only when its own TCP connect to the primary fails too,
 * and answers with its status after the cut (WAL receiver down) and how long
 * it holds the cut at least (walReceiverCut.holdMs). Those answers replace the
 * replicas' statuses in the reconcile's inventory, so the failover decision
 * (rc_failover_decide) counts them as having lost the primary at once, instead
 * of after their wal_receiver_timeout (5 s). The reconcile must then write
 * "pending" before the earliest hold ends (rc_run.cut_deadline_ms, checked in
 * write_status): a replica undoes its cut after the hold only when a read of
 * the Cluster does not say "pending".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconciler/ctl.h"
#include "reconciler/instance_client.h"
#include "support/alloc.h"
#include "support/log.h"

bool rc_cut_due(struct rc_controller *c, const char *key, int64_t now_ms)
{
	pthread_mutex_lock(&c->mu);
	struct rc_cluster_state *s = rc_state_get(c, key);
	bool due = !s->cut_asked_ms || now_ms - s->cut_asked_ms >= RC_CUT_EVERY_MS;
	if (due)
		s->cut_asked_ms = now_ms;
	pthread_mutex_unlock(&c->mu);
	return due;
}

int64_t rc_request_cuts(struct rc_run *r, struct rc_instance *v, size_t n,
			const struct rc_instance *primary)
{
	if (!primary || !primary->ip || !r->ca.cert_pem)
		return 0;
	size_t *at = op_calloc(n ? n : 1, sizeof(*at)), k = 0;
	struct rc_instance *tmp = op_calloc(n ? n : 1, sizeof(*tmp));
	for (size_t i = 0; i < n; i++) {
		const struct rc_instance *x = &v[i];
		if (!x->has_status || x->is_primary || strcmp(x->name, primary->name) == 0 || !x->ip)
			continue;
		tmp[k] = *x; /* the Pod's facts; the status is asked again */
		tmp[k].name = op_strdup(x->name);
		tmp[k].ip = op_strdup(x->ip);
		tmp[k].error = NULL;
		tmp[k].doc = NULL;
		tmp[k].silent = false;
		at[k++] = i;
	}
	int64_t deadline = 0;
	if (k) {
		_cleanup_free_ char *path =
			op_asprintf("/pg/cut?primary=%s&ip=%s", primary->name, primary->ip);
		struct rc_fetch_opts fo = { .timeout_ms = r->ctl->status_timeout_ms,
					    .path = path,
					    .post = true };
		struct op_err e = OP_ERR_INIT;
		const int64_t start = rc_mono_ms();
		if (rc_fetch_statuses(r->ca.cert_pem, r->client.cert_pem ? &r->client : NULL, tmp,
				      k, &fo, &e) < 0)
			op_log_warn("failover: cannot ask the replicas to cut", "cluster", r->key,
				    "error", e.msg);
		for (size_t j = 0; j < k; j++) {
			struct rc_instance *x = &v[at[j]];
			if (!tmp[j].has_status || tmp[j].cut_hold_ms <= 0 ||
			    tmp[j].wal_receiver_active) {
				op_log_debug("failover: replica did not cut its WAL receiver",
					     "cluster", r->key, "pod", x->name, "primary",
					     primary->name, "error",
					     tmp[j].error ? tmp[j].error : "no hold reported");
				rc_instance_done(&tmp[j]);
				x->cut_unheld = x->has_status && x->cut_hold_ms > 0;
				continue;
			}
			int64_t until = start + tmp[j].cut_hold_ms;
			if (!deadline || until < deadline)
				deadline = until;
			rc_instance_done(x);
			*x = tmp[j];
			memset(&tmp[j], 0, sizeof(tmp[j]));
		}
	}
	free(tmp);
	free(at);
	return deadline;
}
