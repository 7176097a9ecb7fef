/* The schedule's vocabulary: names of its enums, step plans and their
 * options (the simulator-options object of plan and schedule files). */
#include "rok/schedule.h"

static const char *const decision_names[ROK_DECISION_COUNT] = {
    [ROK_DECISION_KEEP] = "keep",
    [ROK_DECISION_OFFLOAD_NVME] = "offload-nvme",
    [ROK_DECISION_OFFLOAD_HOST] = "offload-host",
    [ROK_DECISION_RECOMPUTE] = "recompute",
};
static const char *const stream_names[ROK_STREAM_COUNT] = {
    [ROK_STREAM_COMPUTE] = "compute",       [ROK_STREAM_D2H] = "d2h",
    [ROK_STREAM_H2D] = "h2d",               [ROK_STREAM_NVME_WRITE] = "nvme-write",
    [ROK_STREAM_NVME_READ] = "nvme-read",
};
static const char *const stall_names[ROK_STALL_COUNT] = {
    [ROK_STALL_READ] = "read",
    [ROK_STALL_PCIE] = "pcie",
    [ROK_STALL_STAGING] = "staging",
    [ROK_STALL_MEMORY] = "memory",
};
static const char *const action_names[ROK_ACTION_KIND_COUNT] = {
    [ROK_ACTION_FORWARD] = "forward",     [ROK_ACTION_BACKWARD] = "backward", [ROK_ACTION_RECOMPUTE] = "recompute",
    [ROK_ACTION_OPTIMIZER] = "optimizer", [ROK_ACTION_OFFLOAD] = "offload",   [ROK_ACTION_PREFETCH] = "prefetch",
    [ROK_ACTION_FREE] = "free",
};

const char *rok_decision_name(RokDecision decision) {
  g_return_val_if_fail((guint)decision < ROK_DECISION_COUNT, "?");
  return decision_names[decision];
}

const char *rok_stream_name(RokStream stream) {
  g_return_val_if_fail((guint)stream < ROK_STREAM_COUNT, "?");
  return stream_names[stream];
}

const char *rok_stall_cause_name(RokStallCause cause) {
  g_return_val_if_fail((guint)cause < ROK_STALL_COUNT, "?");
  return stall_names[cause];
}

const char *rok_action_kind_name(RokActionKind kind) {
  g_return_val_if_fail((guint)kind < ROK_ACTION_KIND_COUNT, "?");
  return action_names[kind];
}

void rok_step_options_init(RokStepOptions *options) {
  *options = (RokStepOptions){.memory_budget = 0,
                             .prefetch_layers = ROK_STEP_DEFAULT_PREFETCH_LAYERS,
                             .detail_micro_batches = ROK_STEP_DEFAULT_DETAIL_MICRO_BATCHES};
}

RokStepPlan *rok_step_plan_new(const RokTrace *trace) {
  RokStepPlan *plan = g_new0(RokStepPlan, 1);
  plan->n_tensors = trace->tensors->len;
  plan->decisions = g_new0(RokDecision, MAX(plan->n_tensors, 1)); /* 0 is keep */
  rok_step_options_init(&plan->options);
  return plan;
}

RokStepPlan *rok_step_plan_copy(const RokStepPlan *plan) {
  RokStepPlan *copy = g_new0(RokStepPlan, 1);
  *copy = *plan;
  copy->decisions = g_memdup2(plan->decisions, sizeof(RokDecision) * MAX(plan->n_tensors, 1));
  return copy;
}

void rok_step_plan_free(RokStepPlan *plan) {
  if (plan == NULL)
    return;
  g_free(plan->decisions);
  g_free(plan);
}

json_object *rok_step_options_to_json(const RokStepOptions *o) {
  json_object *obj = json_object_new_object();
  json_object_object_add(obj, "memory_budget", json_object_new_uint64(o->memory_budget));
  json_object_object_add(obj, "prefetch_layers", json_object_new_uint64(o->prefetch_layers));
  json_object_object_add(obj, "detail_micro_batches", json_object_new_uint64(o->detail_micro_batches));
  json_object_object_add(obj, "rebuild_whole_layers", json_object_new_boolean(o->rebuild_whole_layers));
  return obj;
}

gboolean rok_step_options_read(const RokJsonObj *root, RokStepOptions *o, GError **error) {
  static const char *const keys[] = {"memory_budget", "prefetch_layers", "detail_micro_batches",
                                     "rebuild_whole_layers", NULL};
  g_auto(RokJsonObj) obj = {0};
  guint64 prefetch = 0, detail = 0;
  if (!rok_json_child(root, "options", TRUE, &obj, error) || !rok_json_only_keys(&obj, keys, error) ||
      !rok_json_get_uint(&obj, "memory_budget", TRUE, 0, G_MAXUINT64, &o->memory_budget, error) ||
      !rok_json_get_uint(&obj, "prefetch_layers", TRUE, 0, G_MAXUINT, &prefetch, error) ||
      !rok_json_get_uint(&obj, "detail_micro_batches", TRUE, 1, G_MAXUINT, &detail, error) ||
      !rok_json_get_bool(&obj, "rebuild_whole_layers", TRUE, &o->rebuild_whole_layers, error))
    return FALSE;
  o->prefetch_layers = (guint)prefetch;
  o->detail_micro_batches = (guint)detail;
  return TRUE;
}
