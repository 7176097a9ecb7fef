/* The baseline strategies keep, recompute, selective and offload, and the
 * entry point for all of them (tba is in strategy-tba.c). */
#include "strategy-private.h"

#include "rok/core.h"

static const char *const strategy_names[ROK_STRATEGY_COUNT + 1] = {
    [ROK_STRATEGY_KEEP] = "keep",           [ROK_STRATEGY_RECOMPUTE] = "recompute",
    [ROK_STRATEGY_SELECTIVE] = "selective", [ROK_STRATEGY_OFFLOAD] = "offload",
    [ROK_STRATEGY_TBA] = "tba",             [ROK_STRATEGY_ROK] = "rok",
    [ROK_STRATEGY_COUNT] = NULL,
};

void rok_strategy_options_init(RokStrategyOptions *options) {
  *options = (RokStrategyOptions){.offload_min_elements = ROK_OFFLOAD_MIN_ELEMENTS};
}

const char *rok_strategy_name(RokStrategy strategy) {
  g_return_val_if_fail((guint)strategy < ROK_STRATEGY_COUNT, "?");
  return strategy_names[strategy];
}

gboolean rok_strategy_from_name(const char *name, RokStrategy *strategy, GError **error) {
  for (guint i = 0; i < ROK_STRATEGY_COUNT; i++)
    if (g_strcmp0(name, strategy_names[i]) == 0) {
      *strategy = i;
      return TRUE;
    }
  g_autofree char *known = g_strjoinv(", ", (char **)strategy_names);
  g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unknown strategy \"%s\" (known: %s)", name ? name : "",
              known);
  return FALSE;
}

gboolean plan_strategy_check_nvme(RokStrategy strategy, const RokHw *hw, GError **error) {
  if (hw->nvme.devices > 0)
    return TRUE;
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "strategy %s offloads to NVMe, but hardware profile %s has no SSDs",
              rok_strategy_name(strategy), hw->name ? hw->name : "(unnamed)");
  return FALSE;
}

gboolean plan_strategy_offloadable(const RokTensor *tensor, const RokStrategyOptions *options) {
  guint elem = rok_dtype_bytes(tensor->dtype);
  return tensor->layer >= 0 && rok_tensor_is_saved(tensor) && elem > 0 &&
         tensor->bytes / elem >= options->offload_min_elements;
}

void plan_strategy_offload_layer(RokStepPlan *plan, const RokTrace *trace, gint layer,
                                const RokStrategyOptions *options) {
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    if (tensor->layer == layer && plan_strategy_offloadable(tensor, options))
      plan->decisions[t] = ROK_DECISION_OFFLOAD_NVME;
  }
}

/* Megatron full recompute: all but the layer's input. */
static void plan_recompute(RokStepPlan *plan, const RokTrace *trace) {
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    gboolean input = rok_trace_op(trace, tensor->producer)->layer != tensor->layer;
    if (tensor->layer >= 0 && rok_tensor_is_saved(tensor) && !input && tensor->recomputable)
      plan->decisions[t] = ROK_DECISION_RECOMPUTE;
  }
}

/* The attention core: scores, softmax, and the dropout fed by the softmax. */
static gboolean attention_core(const RokTrace *trace, const RokOp *op) {
  if (op->kind == ROK_OP_ATTN_SCORES || op->kind == ROK_OP_SOFTMAX)
    return TRUE;
  if (op->kind != ROK_OP_DROPOUT || op->inputs->len == 0)
    return FALSE;
  const RokTensor *in = rok_trace_tensor(trace, g_array_index(op->inputs, guint, 0));
  return rok_trace_op(trace, in->producer)->kind == ROK_OP_SOFTMAX;
}

static void plan_selective(RokStepPlan *plan, const RokTrace *trace) {
  for (guint t = 0; t < trace->tensors->len; t++) {
    const RokTensor *tensor = rok_trace_tensor(trace, t);
    const RokOp *producer = rok_trace_op(trace, tensor->producer);
    if (tensor->layer >= 0 && producer->layer == tensor->layer && rok_tensor_is_saved(tensor) &&
        tensor->recomputable && attention_core(trace, producer))
      plan->decisions[t] = ROK_DECISION_RECOMPUTE;
  }
}

RokStepPlan *rok_strategy_plan(RokStrategy strategy, const RokTrace *trace, const RokHw *hw,
                              const RokStrategyOptions *options, GError **error) {
  RokStrategyOptions defaults;
  if (options == NULL) {
    rok_strategy_options_init(&defaults);
    options = &defaults;
  }
  g_autoptr(RokStepPlan) plan = rok_step_plan_new(trace);
  switch (strategy) {
  case ROK_STRATEGY_KEEP:
    break;
  case ROK_STRATEGY_RECOMPUTE:
    plan_recompute(plan, trace);
    plan->options.rebuild_whole_layers = TRUE;
    break;
  case ROK_STRATEGY_SELECTIVE:
    plan_selective(plan, trace);
    break;
  case ROK_STRATEGY_OFFLOAD:
    if (!plan_strategy_check_nvme(strategy, hw, error))
      return NULL;
    for (guint layer = 0; layer < trace->layers; layer++)
      plan_strategy_offload_layer(plan, trace, (gint)layer, options);
    break;
  case ROK_STRATEGY_TBA:
    if (!plan_strategy_tba(plan, trace, hw, options, error))
      return NULL;
    break;
  default:
    g_set_error(error, ROK_ERROR, ROK_ERROR_USAGE, "unknown strategy %d", (int)strategy);
    return NULL;
  }
  return g_steal_pointer(&plan);
}
