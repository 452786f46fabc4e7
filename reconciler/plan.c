/* reconciler/plan.c - instance counting and switchover validation (plan.h). */
#include <errno.h>
#include <string.h>

#include "api/names.h"
#include "kube/kube.h"
#include "reconciler/objects.h"
#include "reconciler/plan.h"
#include "support/alloc.h"
#include "support/json.h"

static const char *const scale_names[] = {
	[RC_SCALE_NONE] = "none",
	[RC_SCALE_WAIT] = "wait",
	[RC_SCALE_UP] = "up",
	[RC_SCALE_DOWN] = "down",
};

const char *rc_scale_action_str(enum rc_scale_action a)
{
	return (unsigned)a < OP_ARRAY_SIZE(scale_names) ? scale_names[a] : "unknown";
}

static bool str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const struct rc_instance *find(const struct rc_instance *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (str_eq(v[i].name, name))
			return &v[i];
	return NULL;
}

enum rc_scale_action rc_scale_decide(const struct rc_instance *v, size_t n, int64_t want,
				     const char *current_primary)
{
	size_t live = 0;
	bool all_ready = true, terminating = false;
	for (size_t i = 0; i < n; i++) {
		if (v[i].pod_terminating) {
			terminating = true;
			continue;
		}
		live++;
		if (!v[i].pod_ready || !v[i].has_status)
			all_ready = false;
	}
	if ((int64_t)n < want) {
		const struct rc_instance *p = find(v, n, current_primary);
		if (terminating || live == 0 || !all_ready || !p || !p->is_primary)
			return RC_SCALE_WAIT;
		return RC_SCALE_UP;
	}
	if ((int64_t)live > want)
		return RC_SCALE_DOWN;
	return RC_SCALE_NONE;
}

int rc_switchover_check(const struct rc_instance *v, size_t n, const char *current_primary,
			const char *target_primary, const char *target, char **ret_msg)
{
	*ret_msg = NULL;
	if (!target || !*target) {
		*ret_msg = op_strdup("no target instance given");
		return -EINVAL;
	}
	if (!current_primary || !*current_primary || !str_eq(current_primary, target_primary)) {
		*ret_msg = op_asprintf("a switchover or failover is in progress (currentPrimary %s, "
				       "targetPrimary %s)",
				       current_primary ? current_primary : "",
				       target_primary ? target_primary : "");
		return -EBUSY;
	}
	const struct rc_instance *t = find(v, n, target);
	if (!t) {
		*ret_msg = op_asprintf("%s is not an instance of this cluster", target);
		return -EINVAL;
	}
	if (str_eq(target, current_primary)) {
		*ret_msg = op_asprintf("%s is already the primary", target);
		return -EINVAL;
	}
	if (t->pod_terminating || !t->pod_ready) {
		*ret_msg = op_asprintf("%s is not Ready", target);
		return -EINVAL;
	}
	if (!t->has_status) {
		*ret_msg = op_asprintf("%s does not answer /pg/status (%s)", target,
				       t->error ? t->error : "no status");
		return -EINVAL;
	}
	if (t->is_primary || !t->wal_receiver_active) {
		*ret_msg = op_asprintf("%s is not streaming from the primary %s", target,
				       current_primary);
		return -EINVAL;
	}
	const struct rc_instance *p = find(v, n, current_primary);
	if (!p || !p->has_status || !p->is_primary) {
		*ret_msg = op_asprintf("the primary %s does not report being primary: a failover, "
				       "not a switchover, is what can help",
				       current_primary);
		return -EBUSY;
	}
	return 0;
}

const char *rc_switchover_pick(const struct rc_instance *v, size_t n, const char *current_primary)
{
	for (size_t i = 0; i < n; i++) {
		const struct rc_instance *x = &v[i];
		if (!str_eq(x->name, current_primary) && x->pod_ready && !x->pod_terminating &&
		    x->has_status && !x->is_primary && x->wal_receiver_active)
			return x->name;
	}
	return NULL;
}

static const char *label(json_object *obj, const char *key)
{
	json_object *l = op_json_at(obj, "metadata.labels"), *v = NULL;
	if (!l || !json_object_object_get_ex(l, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool ready_condition(json_object *pod)
{
	json_object *conds = op_json_at(pod, "status.conditions");
	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
			   i < json_object_array_length(conds);
	     i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		if (str_eq(op_json_str_at(c, "type"), "Ready"))
			return str_eq(op_json_str_at(c, "status"), "True");
	}
	return false;
}

int rc_instance_from_pod(const char *cluster, json_object *pod, struct rc_instance *ret)
{
	int64_t serial;
	if (!str_eq(label(pod, RC_LABEL_POD_ROLE), "instance") ||
	    api_pod_serial(cluster, kube_obj_name(pod), &serial, NULL) < 0)
		return -EINVAL;
	ret->name = op_strdup(kube_obj_name(pod));
	ret->serial = serial;
	const char *ip = op_json_str_at(pod, "status.podIP");
	ret->ip = ip && *ip ? op_strdup(ip) : NULL;
	ret->pod_ready = ready_condition(pod);
	ret->pod_terminating = op_json_at(pod, "metadata.deletionTimestamp") != NULL;
	return 0;
}

long rc_status_error_delay_ms(unsigned streak)
{
	long ms = 10000;
	for (unsigned i = 1; i < streak && ms < 60000; i++)
		ms *= 2;
	return ms < 60000 ? ms : 60000;
}
