/* The closest plan a framework can express, for `rok export`.
 *
 * Megatron-LM (megatron/core/transformer/transformer_config.py and
 * model_parallel_config.py, read at NVIDIA/Megatron-LM d98e8a64, 2026-08):
 * --recompute-granularity full with --recompute-method block
 * --recompute-num-layers N rebuilds the first N layers of a stage whole;
 * selective with --recompute-modules rebuilds submodules in every layer
 * (core_attn: scores, softmax, dropout; mlp: the MLP's insides; layernorm:
 * the norms' outputs); --fine-grained-activation-offloading with
 * --offload-modules moves the input of submodules of every layer to host
 * memory (attn_norm: the layer input; qkv_linear: the normed input;
 * core_attn: q, k, v; attn_proj: the attention context, only with
 * core_attn; mlp_norm: the residual); --cpu-offloading-num-layers N
 * (Transformer Engine) moves every activation of N layers to host memory,
 * fewer than all layers, never together with recomputation. Nothing of
 * Megatron's writes activations to an SSD.
 *
 * DeepSpeed (deepspeed/runtime/activation_checkpointing/config.py at
 * deepspeedai/DeepSpeed edaa7221, 2026-08): the model wraps whole layers in
 * deepspeed.checkpointing.checkpoint; activation_checkpointing's
 * cpu_checkpointing moves those layers' inputs to host memory. Nothing
 * finer. */
#include "export.h"

#include <string.h>

static const char *const core_attn_inside[] = {"attn.scores_out", "attn.softmax_out", "attn.dropout_mask",
                                               "attn.dropout_out", NULL};
static const char *const mlp_inside[] = {"mlp.fc1_out", "mlp.gelu_out", "mlp.gate_up_out", "mlp.swiglu_out",
                                         "mlp.relu_out", NULL};
static const char *const norm_outputs[] = {"attn.norm_out", "mlp.norm_out", NULL};
static const char *const layer_input[] = {"input", NULL};
static const char *const attn_normed[] = {"attn.norm_out", NULL};
static const char *const attn_qkv[] = {"attn.qkv_out", "attn.rotary_out", "attn.v_out", NULL};
static const char *const attn_context[] = {"attn.context_out", NULL};
static const char *const attn_residual[] = {"attn.residual_out", NULL};

const RokExportGroup cli_export_recompute_modules[] = {
    {"core_attn", core_attn_inside}, {"mlp", mlp_inside}, {"layernorm", norm_outputs}, {NULL, NULL}};
const RokExportGroup cli_export_offload_modules[] = {
    {"attn_norm", layer_input},  {"qkv_linear", attn_normed}, {"core_attn", attn_qkv},
    {"attn_proj", attn_context}, {"mlp_norm", attn_residual}, {NULL, NULL}};

/* A layer tensor's name without "layerN." and without a "#k" suffix. */
static gboolean local_is(const RokTensor *t, const char *local) {
  const char *dot = strchr(t->name, '.');
  if (t->layer < 0 || dot == NULL)
    return FALSE;
  gsize n = strcspn(dot + 1, "#");
  return strlen(local) == n && strncmp(dot + 1, local, n) == 0;
}

gboolean cli_export_in_group(const RokTensor *t, const RokExportGroup *g) {
  for (guint i = 0; g->names[i] != NULL; i++)
    if (local_is(t, g->names[i]))
      return TRUE;
  return FALSE;
}

static gboolean offloaded(RokDecision d) {
  return d == ROK_DECISION_OFFLOAD_HOST || d == ROK_DECISION_OFFLOAD_NVME;
}

/* Bytes of the saved tensors in GROUP (NULL: all), and of those the plan
 * decides so (recompute, or offload of either kind). */
static void group_bytes(const RokTrace *trace, const RokStepPlan *plan, const RokExportGroup *group, gint layer,
                        gboolean recompute, guint64 *total, guint64 *chosen) {
  *total = *chosen = 0;
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    if (!rok_tensor_is_saved(t) || t->layer < 0 || (layer >= 0 && t->layer != layer) ||
        (group != NULL && !cli_export_in_group(t, group)))
      continue;
    RokDecision d = plan->decisions[i];
    *total += t->bytes;
    if (recompute ? d == ROK_DECISION_RECOMPUTE : offloaded(d))
      *chosen += t->bytes;
  }
}

/* Layers whose every saved byte but the input's goes one way (90%). */
static guint whole_layers(const RokTrace *trace, const RokStepPlan *plan, gboolean recompute) {
  guint n = 0;
  for (guint l = 0; l < trace->layers; l++) {
    guint64 all = 0, chosen = 0, in_all = 0, in_chosen = 0;
    group_bytes(trace, plan, NULL, (gint)l, recompute, &all, &chosen);
    group_bytes(trace, plan, &(RokExportGroup){"input", layer_input}, (gint)l, recompute, &in_all, &in_chosen);
    if (all > in_all && (chosen - in_chosen) * 10 >= (all - in_all) * 9)
      n++;
  }
  return n;
}

/* The knobs of GROUPS the plan mostly (by bytes, over all layers) sets. */
static guint64 majority(const RokTrace *trace, const RokStepPlan *plan, const RokExportGroup *groups,
                        gboolean recompute) {
  guint64 mask = 0;
  for (guint g = 0; groups[g].knob != NULL; g++) {
    guint64 total = 0, chosen = 0;
    group_bytes(trace, plan, &groups[g], -1, recompute, &total, &chosen);
    if (total > 0 && chosen * 2 > total)
      mask |= G_GUINT64_CONSTANT(1) << g;
  }
  return mask;
}

static guint64 plan_bytes(const RokTrace *trace, const RokStepPlan *plan, gboolean recompute) {
  guint64 total = 0, chosen = 0;
  group_bytes(trace, plan, NULL, -1, recompute, &total, &chosen);
  return chosen;
}

void cli_export_megatron(const RokTrace *trace, const RokStepPlan *plan, RokExportMegatron *m) {
  *m = (RokExportMegatron){0};
  guint64 recomputed = plan_bytes(trace, plan, TRUE), moved = plan_bytes(trace, plan, FALSE);
  guint full = whole_layers(trace, plan, TRUE), offloaded_layers = whole_layers(trace, plan, FALSE);
  if (recomputed > 0 && full > 0) {
    m->full_layers = full;
    return;
  }
  if (recomputed == 0 && offloaded_layers > 0) {
    m->cpu_offload_layers = MIN(offloaded_layers, trace->layers - 1);
    if (m->cpu_offload_layers > 0 || moved == 0)
      return;
  }
  m->recompute_modules = majority(trace, plan, cli_export_recompute_modules, TRUE);
  m->offload_modules = majority(trace, plan, cli_export_offload_modules, FALSE);
  if (!(m->offload_modules & (1u << 2)))
    m->offload_modules &= ~(guint64)(1u << 3); /* attn_proj goes only with core_attn */
  /* A recomputed norm output is not also offloaded as qkv_linear's input. */
  if ((m->recompute_modules & (1u << 2)) && (m->offload_modules & (1u << 1)))
    m->offload_modules &= ~(guint64)(1u << 1);
}

/* The decisions Megatron's settings M make, on a copy of PLAN's options. */
RokStepPlan *cli_export_megatron_plan(const RokTrace *trace, const RokStepPlan *plan, const RokExportMegatron *m) {
  RokStepPlan *out = rok_step_plan_copy(plan);
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    RokDecision d = ROK_DECISION_KEEP;
    gboolean input = local_is(t, "input");
    if (t->layer >= 0 && (guint)t->layer < m->full_layers && !input)
      d = ROK_DECISION_RECOMPUTE;
    else if (t->layer >= 0 && (guint)t->layer < m->cpu_offload_layers)
      d = ROK_DECISION_OFFLOAD_HOST;
    for (guint g = 0; cli_export_recompute_modules[g].knob != NULL; g++)
      if ((m->recompute_modules >> g & 1) && cli_export_in_group(t, &cli_export_recompute_modules[g]))
        d = ROK_DECISION_RECOMPUTE;
    for (guint g = 0; cli_export_offload_modules[g].knob != NULL; g++)
      if ((m->offload_modules >> g & 1) && cli_export_in_group(t, &cli_export_offload_modules[g]))
        d = ROK_DECISION_OFFLOAD_HOST;
    out->decisions[i] = d;
  }
  return out;
}

void cli_export_deepspeed(const RokTrace *trace, const RokStepPlan *plan, RokExportDeepSpeed *ds) {
  *ds = (RokExportDeepSpeed){0};
  ds->checkpointed = g_new0(gboolean, MAX(trace->layers, 1));
  guint moved_inputs = 0;
  for (guint l = 0; l < trace->layers; l++) {
    guint64 all = 0, chosen = 0, in_all = 0, in_moved = 0;
    group_bytes(trace, plan, NULL, (gint)l, TRUE, &all, &chosen);
    if (all == 0 || chosen * 2 <= all)
      continue;
    ds->checkpointed[l] = TRUE;
    ds->n_checkpointed++;
    group_bytes(trace, plan, &(RokExportGroup){"input", layer_input}, (gint)l, FALSE, &in_all, &in_moved);
    moved_inputs += in_all > 0 && in_moved * 2 > in_all;
  }
  ds->cpu_checkpointing = ds->n_checkpointed > 0 && moved_inputs * 2 > ds->n_checkpointed;
}

RokStepPlan *cli_export_deepspeed_plan(const RokTrace *trace, const RokStepPlan *plan, const RokExportDeepSpeed *ds) {
  RokStepPlan *out = rok_step_plan_copy(plan);
  for (guint i = 0; i < trace->tensors->len; i++) {
    const RokTensor *t = rok_trace_tensor(trace, i);
    RokDecision d = ROK_DECISION_KEEP;
    if (t->layer >= 0 && ds->checkpointed[t->layer])
      d = !local_is(t, "input") ? ROK_DECISION_RECOMPUTE
          : ds->cpu_checkpointing ? ROK_DECISION_OFFLOAD_HOST : ROK_DECISION_KEEP;
    out->decisions[i] = d;
  }
  return out;
}
