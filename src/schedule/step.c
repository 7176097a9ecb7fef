/* The schedule's vocabulary: names of its enums, step plans and their
 * options (the simulator-options object of plan and schedule files). */
#include "rok/schedule.h"

static const char *const decision_names[ROK_DECISION_COUNT] = {
    [ROK_DECISION_KEEP] = "keep",
    [ROK_DECISION_OFFLOAD_NVME] = "offload-nvme",
    [ROK_DECISION_OFFLOAD_HOST] = "offload-host",
    [ROK_DECISION_RECOMPUTE] = "recompute",
};
static const char *const stream_names[ROK_STREAM_ALL_COUNT] = {
    [ROK_STREAM_COMPUTE] = "compute",       [ROK_STREAM_D2H] = "d2h",
    [ROK_STREAM_H2D] = "h2d",               [ROK_STREAM_NVME_WRITE] = "nvme-write",
    [ROK_STREAM_NVME_READ] = "nvme-read",   [ROK_STREAM_COMM] = "comm",
    [ROK_STREAM_P2P] = "p2p",
};
static const char *const collective_names[] = {
    [ROK_COLLECTIVE_ALL_REDUCE] = "all-reduce",
    [ROK_COLLECTIVE_ALL_GATHER] = "all-gather",
    [ROK_COLLECTIVE_REDUCE_SCATTER] = "reduce-scatter",
    [ROK_COLLECTIVE_SEND] = "send",
};
static const char *const group_names[ROK_COMM_GROUP_COUNT] = {
    [ROK_COMM_TENSOR_PARALLEL] = "tensor-parallel",
    [ROK_COMM_DATA_PARALLEL] = "data-parallel",
    [ROK_COMM_ZERO3] = "zero3",
    [ROK_COMM_PIPELINE] = "pipeline",
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
    [ROK_ACTION_FREE] = "free",           [ROK_ACTION_COMM] = "comm",
};

const char *rok_decision_name(RokDecision decision) {
  g_return_val_if_fail((guint)decision < ROK_DECISION_COUNT, "?");
  return decision_names[decision];
}

const char *rok_stream_name(RokStream stream) {
  g_return_val_if_fail((guint)stream < ROK_STREAM_ALL_COUNT, "?");
  return stream_names[stream];
}

const char *rok_collective_name(RokCollective collective) {
  g_return_val_if_fail((guint)collective < G_N_ELEMENTS(collective_names), "?");
  return collective_names[collective];
}

const char *rok_comm_group_name(RokCommGroup group) {
  g_return_val_if_fail((guint)group < ROK_COMM_GROUP_COUNT, "?");
  return group_names[group];
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
                             .prefetch_window = ROK_STEP_DEFAULT_PREFETCH_WINDOW,
                             .prefetch_unit = ROK_STEP_DEFAULT_PREFETCH_UNIT,
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

static const char *const prefetch_unit_names[ROK_PREFETCH_UNIT_COUNT + 1] = {
    [ROK_PREFETCH_LAYER] = "layer", [ROK_PREFETCH_MODULE] = "module", [ROK_PREFETCH_OP] = "op", NULL};

const char *rok_prefetch_unit_name(RokPrefetchUnit unit) {
  g_return_val_if_fail((guint)unit < ROK_PREFETCH_UNIT_COUNT, "?");
  return prefetch_unit_names[unit];
}

gboolean rok_prefetch_unit_from_name(const char *name, RokPrefetchUnit *unit, GError **error) {
  for (guint u = 0; u < ROK_PREFETCH_UNIT_COUNT; u++)
    if (g_strcmp0(name, prefetch_unit_names[u]) == 0) {
      *unit = u;
      return TRUE;
    }
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unknown prefetch unit \"%s\" (known: layer, module, op)",
              name ? name : "");
  return FALSE;
}

json_object *rok_step_options_to_json(const RokStepOptions *o) {
  json_object *obj = json_object_new_object();
  json_object_object_add(obj, "memory_budget", json_object_new_uint64(o->memory_budget));
  json_object_object_add(obj, "prefetch_window", json_object_new_uint64(o->prefetch_window));
  json_object_object_add(obj, "prefetch_unit", json_object_new_string(rok_prefetch_unit_name(o->prefetch_unit)));
  json_object_object_add(obj, "detail_micro_batches", json_object_new_uint64(o->detail_micro_batches));
  json_object_object_add(obj, "rebuild_whole_layers", json_object_new_boolean(o->rebuild_whole_layers));
  return obj;
}

/* Files written before the window had a unit say "prefetch_layers". */
static gboolean read_window(const RokJsonObj *obj, RokStepOptions *o, GError **error) {
  gboolean has_old = json_object_object_get_ex(obj->obj, "prefetch_layers", NULL);
  gboolean has_new = json_object_object_get_ex(obj->obj, "prefetch_window", NULL);
  if (has_old && has_new) {
    rok_json_error(error, obj->doc, obj->path, "has both prefetch_window and prefetch_layers (its old name)");
    return FALSE;
  }
  guint64 window = 0;
  int unit = ROK_PREFETCH_LAYER;
  if (!rok_json_get_uint(obj, has_old ? "prefetch_layers" : "prefetch_window", TRUE, 0, G_MAXUINT, &window, error) ||
      !rok_json_get_enum(obj, "prefetch_unit", FALSE, prefetch_unit_names, &unit, error))
    return FALSE;
  o->prefetch_window = (guint)window;
  o->prefetch_unit = (RokPrefetchUnit)unit;
  return TRUE;
}

gboolean rok_step_options_read(const RokJsonObj *root, RokStepOptions *o, GError **error) {
  static const char *const keys[] = {"memory_budget",        "prefetch_window",      "prefetch_layers", "prefetch_unit",
                                     "detail_micro_batches", "rebuild_whole_layers", NULL};
  g_auto(RokJsonObj) obj = {0};
  guint64 detail = 0;
  if (!rok_json_child(root, "options", TRUE, &obj, error) || !rok_json_only_keys(&obj, keys, error) ||
      !rok_json_get_uint(&obj, "memory_budget", TRUE, 0, G_MAXUINT64, &o->memory_budget, error) ||
      !read_window(&obj, o, error) ||
      !rok_json_get_uint(&obj, "detail_micro_batches", TRUE, 1, ROK_MAX_MICRO_BATCHES_PER_STEP, &detail, error) ||
      !rok_json_get_bool(&obj, "rebuild_whole_layers", TRUE, &o->rebuild_whole_layers, error))
    return FALSE;
  o->detail_micro_batches = (guint)detail;
  return TRUE;
}
