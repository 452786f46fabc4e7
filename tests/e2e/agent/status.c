/* tests/e2e/agent/status.c - Pod status: phase, conditions, container
 * statuses; sent as a merge patch of the status subresource only when it
 * changed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/kube.h"
#include "support/alloc.h"
#include "support/json.h"
#include "support/log.h"
#include "tests/e2e/agent/na.h"

static json_object *str(const char *s) { return op_jstr(s ? s : ""); }

static json_object *ctr_status(struct na_pod *p, struct na_ctr *c, json_object *spec_arr)
{
	json_object *s = op_jobj(), *state = op_jobj();
	const char *image = "";
	for (size_t i = 0; spec_arr && i < json_object_array_length(spec_arr); i++) {
		json_object *cs = json_object_array_get_idx(spec_arr, i);
		const char *n = op_json_str_at(cs, "name");
		if (n && !strcmp(n, c->name))
			image = op_json_str_at(cs, "image");
	}
	op_jset(s, "name", str(c->name));
	op_jset(s, "image", str(image));
	op_jset(s, "imageID", str(""));
	op_jset(s, "ready", op_jbool(c->ready));
	op_jset(s, "started", op_jbool(c->state == NA_RUNNING && c->started));
	op_jset(s, "restartCount", op_jint(c->restarts));
	if (c->ever_started) {
		_cleanup_free_ char *id = op_asprintf("pgop://%s-%s-%d", p->uid, c->name, c->restarts);
		op_jset(s, "containerID", str(id));
	}
	json_object *inner = op_jobj();
	if (c->state == NA_RUNNING) {
		op_jset(inner, "startedAt", str(c->started_at));
		op_jset(state, "running", inner);
	} else if (c->state == NA_TERMINATED && !c->next_start_ms) {
		op_jset(inner, "exitCode", op_jint(c->exit_code));
		if (c->signal)
			op_jset(inner, "signal", op_jint(c->signal));
		op_jset(inner, "reason", str(c->reason ? c->reason : "Error"));
		op_jset(inner, "startedAt", str(c->started_at));
		op_jset(inner, "finishedAt", str(c->finished_at));
		op_jset(state, "terminated", inner);
	} else {
		op_jset(inner, "reason", str(c->reason ? c->reason : "ContainerCreating"));
		if (c->msg)
			op_jset(inner, "message", str(c->msg));
		else if (p->waiting_msg && !c->ever_started)
			op_jset(inner, "message", str(p->waiting_msg));
		op_jset(state, "waiting", inner);
	}
	op_jset(s, "state", state);
	json_object *last = op_jobj();
	if (c->ever_started && c->restarts > 0 && c->finished_at[0]) {
		json_object *t = op_jobj(), *lt = op_jobj();
		op_jset(t, "exitCode", op_jint(c->exit_code));
		op_jset(t, "reason", str(c->exit_code ? "Error" : "Completed"));
		op_jset(t, "finishedAt", str(c->finished_at));
		op_jset(lt, "terminated", t);
		json_object_put(last);
		last = lt;
	}
	op_jset(s, "lastState", last);
	return s;
}

static const char *phase_of(struct na_pod *p)
{
	if (p->init_failed)
		return "Failed";
	if (p->init_done < p->n_init)
		return "Pending";
	bool any_started = false, all_done = p->n_ctrs > 0, all_ok = true;
	const char *rp = op_json_str_at(p->obj, "spec.restartPolicy");
	bool always = !rp || !strcmp(rp, "Always");
	for (size_t i = 0; i < p->n_ctrs; i++) {
		struct na_ctr *c = &p->ctrs[i];
		any_started |= c->ever_started;
		bool restarts = always || (!strcmp(rp, "OnFailure") && c->exit_code != 0);
		if (c->state != NA_TERMINATED || restarts)
			all_done = false;
		if (c->exit_code != 0)
			all_ok = false;
	}
	if (all_done)
		return all_ok ? "Succeeded" : "Failed";
	return any_started ? "Running" : "Pending";
}

static void condition(struct na_pod *p, json_object *conds, int idx, const char *type, bool val,
		      const char *reason)
{
	if (!p->cond_set || p->cond[idx] != val) {
		p->cond[idx] = val;
		na_rfc3339(p->cond_time[idx]);
	}
	json_object *c = op_jobj();
	op_jset(c, "type", str(type));
	op_jset(c, "status", str(val ? "True" : "False"));
	op_jset(c, "lastProbeTime", NULL);
	op_jset(c, "lastTransitionTime", str(p->cond_time[idx]));
	if (!val && reason)
		op_jset(c, "reason", str(reason));
	op_jpush(conds, c);
}

/* The Ready condition of the Pod as the API has it: 1, 0, -1 when absent. */
static int api_ready(json_object *pod)
{
	json_object *conds = op_json_at(pod, "status.conditions");
	for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		const char *t = op_json_str_at(c, "type"), *s = op_json_str_at(c, "status");
		if (t && s && !strcmp(t, "Ready"))
			return !strcmp(s, "True");
	}
	return -1;
}

void na_pod_status(struct na_agent *a, struct na_pod *p)
{
	json_object *root = op_jobj(), *st = op_jobj();
	const char *phase = phase_of(p);
	op_jset(st, "phase", str(phase));
	bool inited = p->init_done == p->n_init && !p->init_failed;
	bool ready = inited && p->n_ctrs > 0;
	for (size_t i = 0; i < p->n_ctrs; i++)
		ready &= p->ctrs[i].ready;
	json_object *conds = op_jarr();
	condition(p, conds, 3, "PodScheduled", true, NULL);
	condition(p, conds, 0, "Initialized", inited, "ContainersNotInitialized");
	condition(p, conds, 1, "ContainersReady", ready, "ContainersNotReady");
	condition(p, conds, 2, "Ready", ready, "ContainersNotReady");
	p->cond_set = true;
	op_jset(st, "conditions", conds);
	op_jset(st, "hostIP", str(a->host_ip));
	json_object *hips = op_jarr(), *hip = op_jobj();
	op_jset(hip, "ip", str(a->host_ip));
	op_jpush(hips, hip);
	op_jset(st, "hostIPs", hips);
	if (p->net_ready) {
		op_jset(st, "podIP", str(p->ip));
		json_object *ips = op_jarr(), *ip = op_jobj();
		op_jset(ip, "ip", str(p->ip));
		op_jpush(ips, ip);
		op_jset(st, "podIPs", ips);
	}
	op_jset(st, "startTime", str(p->start_time));
	for (int k = 0; k < 2; k++) {
		struct na_ctr *v = k ? p->ctrs : p->init;
		size_t n = k ? p->n_ctrs : p->n_init;
		if (!n)
			continue;
		json_object *spec = op_json_at(p->obj, k ? "spec.containers" : "spec.initContainers");
		json_object *arr = op_jarr();
		for (size_t i = 0; i < n; i++)
			op_jpush(arr, ctr_status(p, &v[i], spec));
		op_jset(st, k ? "containerStatuses" : "initContainerStatuses", arr);
	}
	op_jset(root, "status", st);
	const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	/* Someone else changed our Ready condition (the node lifecycle controller marks
	 * the Pods of a NotReady node not ready: after a stop or a cut of this node) ->
	 * ours again; not while the informer has not yet caught up with our last patch */
	int ar = api_ready(p->obj);
	if (p->last_status && ar >= 0 && ar != (int)ready &&
	    na_now_ms() - p->status_sent_ms > 2000) {
		free(p->last_status);
		p->last_status = NULL;
	}
	if (p->last_status && !strcmp(p->last_status, text)) {
		json_object_put(root);
		return;
	}
	if (atomic_load(&a->cut)) { /* the node is cut off: sent once it is back */
		json_object_put(root);
		return;
	}
	struct op_err err = OP_ERR_INIT;
	int rc = kube_patch_status(a->kc, KUBE_PODS, p->ns, p->name, KUBE_PATCH_MERGE, text, NULL,
				   &err);
	if (rc < 0) {
		if (rc != -ENOENT)
			op_log_warn("pod status", "pod", p->name, "namespace", p->ns, "error",
				    err.msg);
	} else {
		free(p->last_status);
		p->last_status = op_strdup(text);
		p->status_sent_ms = na_now_ms();
		if (!p->running_ms && !strcmp(phase, "Running")) {
			p->running_ms = na_now_ms();
			char ms[32];
			snprintf(ms, sizeof(ms), "%lld", (long long)(p->running_ms - p->seen_ms));
			op_log_info("pod running", "pod", p->name, "namespace", p->ns, "ip", p->ip,
				    "agent_start_ms", ms);
		}
	}
	json_object_put(root);
}
