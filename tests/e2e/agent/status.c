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

static json_object *str(const char *s) { return json_object_new_string(s ? s : ""); }

static json_object *ctr_status(struct na_pod *p, struct na_ctr *c, json_object *spec_arr)
{
	json_object *s = json_object_new_object(), *state = json_object_new_object();
	const char *image = "";
	for (size_t i = 0; spec_arr && i < json_object_array_length(spec_arr); i++) {
		json_object *cs = json_object_array_get_idx(spec_arr, i);
		const char *n = op_json_str_at(cs, "name");
		if (n && !strcmp(n, c->name))
			image = op_json_str_at(cs, "image");
	}
	op_json_set(s, "name", str(c->name));
	op_json_set(s, "image", str(image));
	op_json_set(s, "imageID", str(""));
	op_json_set(s, "ready", json_object_new_boolean(c->ready));
	op_json_set(s, "started", json_object_new_boolean(c->state == NA_RUNNING && c->started));
	op_json_set(s, "restartCount", json_object_new_int(c->restarts));
	if (c->ever_started) {
		_cleanup_free_ char *id = op_asprintf("pgop://%s-%s-%d", p->uid, c->name, c->restarts);
		op_json_set(s, "containerID", str(id));
	}
	json_object *inner = json_object_new_object();
	if (c->state == NA_RUNNING) {
		op_json_set(inner, "startedAt", str(c->started_at));
		op_json_set(state, "running", inner);
	} else if (c->state == NA_TERMINATED && !c->next_start_ms) {
		op_json_set(inner, "exitCode", json_object_new_int(c->exit_code));
		if (c->signal)
			op_json_set(inner, "signal", json_object_new_int(c->signal));
		op_json_set(inner, "reason", str(c->reason ? c->reason : "Error"));
		op_json_set(inner, "startedAt", str(c->started_at));
		op_json_set(inner, "finishedAt", str(c->finished_at));
		op_json_set(state, "terminated", inner);
	} else {
		op_json_set(inner, "reason", str(c->reason ? c->reason : "ContainerCreating"));
		if (c->msg)
			op_json_set(inner, "message", str(c->msg));
		else if (p->waiting_msg && !c->ever_started)
			op_json_set(inner, "message", str(p->waiting_msg));
		op_json_set(state, "waiting", inner);
	}
	op_json_set(s, "state", state);
	json_object *last = json_object_new_object();
	if (c->ever_started && c->restarts > 0 && c->finished_at[0]) {
		json_object *t = json_object_new_object(), *lt = json_object_new_object();
		op_json_set(t, "exitCode", json_object_new_int(c->exit_code));
		op_json_set(t, "reason", str(c->exit_code ? "Error" : "Completed"));
		op_json_set(t, "finishedAt", str(c->finished_at));
		op_json_set(lt, "terminated", t);
		json_object_put(last);
		last = lt;
	}
	op_json_set(s, "lastState", last);
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
	json_object *c = json_object_new_object();
	op_json_set(c, "type", str(type));
	op_json_set(c, "status", str(val ? "True" : "False"));
	op_json_set(c, "lastProbeTime", NULL);
	op_json_set(c, "lastTransitionTime", str(p->cond_time[idx]));
	if (!val && reason)
		op_json_set(c, "reason", str(reason));
	op_json_append(conds, c);
}

void na_pod_status(struct na_agent *a, struct na_pod *p)
{
	json_object *root = json_object_new_object(), *st = json_object_new_object();
	const char *phase = phase_of(p);
	op_json_set(st, "phase", str(phase));
	bool inited = p->init_done == p->n_init && !p->init_failed;
	bool ready = inited && p->n_ctrs > 0;
	for (size_t i = 0; i < p->n_ctrs; i++)
		ready &= p->ctrs[i].ready;
	json_object *conds = json_object_new_array();
	condition(p, conds, 3, "PodScheduled", true, NULL);
	condition(p, conds, 0, "Initialized", inited, "ContainersNotInitialized");
	condition(p, conds, 1, "ContainersReady", ready, "ContainersNotReady");
	condition(p, conds, 2, "Ready", ready, "ContainersNotReady");
	p->cond_set = true;
	op_json_set(st, "conditions", conds);
	op_json_set(st, "hostIP", str(a->host_ip));
	json_object *hips = json_object_new_array(), *hip = json_object_new_object();
	op_json_set(hip, "ip", str(a->host_ip));
	op_json_append(hips, hip);
	op_json_set(st, "hostIPs", hips);
	if (p->net_ready) {
		op_json_set(st, "podIP", str(p->ip));
		json_object *ips = json_object_new_array(), *ip = json_object_new_object();
		op_json_set(ip, "ip", str(p->ip));
		op_json_append(ips, ip);
		op_json_set(st, "podIPs", ips);
	}
	op_json_set(st, "startTime", str(p->start_time));
	for (int k = 0; k < 2; k++) {
		struct na_ctr *v = k ? p->ctrs : p->init;
		size_t n = k ? p->n_ctrs : p->n_init;
		if (!n)
			continue;
		json_object *spec = op_json_at(p->obj, k ? "spec.containers" : "spec.initContainers");
		json_object *arr = json_object_new_array();
		for (size_t i = 0; i < n; i++)
			op_json_append(arr, ctr_status(p, &v[i], spec));
		op_json_set(st, k ? "containerStatuses" : "initContainerStatuses", arr);
	}
	op_json_set(root, "status", st);
	const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	if (p->last_status && !strcmp(p->last_status, text)) {
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
