/* What training choices change in a trace: frozen weights have no weight
 * gradient (a linear's backward computes dX alone), LoRA adds its
 * adapters' work and the rank-r activations they save, and layers below
 * the first trained one have no backward at all (autograd records nothing
 * where no input or weight requires a gradient). */
#include <string.h>

#include "training-trace.h"

/* How many LoRA adapters a linear op named `name` carries: q, k and v (and
 * gate and up) are separate modules in Hugging Face's models, fused in
 * rok's ops. */
static guint lora_adapters(const RokModel *m, gint layer, const char *name) {
  if (m->train.lora_rank == 0 || layer < 0)
    return 0;
  guint targets = m->train.lora_targets;
  if (strcmp(name, "attn.qkv") == 0)
    return targets & ROK_LORA_QKV ? 3 : 0;
  if (strcmp(name, "attn.proj") == 0)
    return targets & ROK_LORA_PROJ ? 1 : 0;
  if (strcmp(name, "mlp.gate_up") == 0)
    return targets & ROK_LORA_FC1 ? 2 : 0;
  if (strcmp(name, "mlp.fc1") == 0)
    return targets & ROK_LORA_FC1 ? 1 : 0;
  if (strcmp(name, "mlp.fc2") == 0)
    return targets & ROK_LORA_FC2 ? 1 : 0;
  return 0;
}

static gboolean weight_frozen(const RokModel *m, gint layer) {
  return m->train.lora_rank > 0 || (layer >= 0 && (guint64)layer < m->train.frozen_layers);
}

/* `op` no longer among the readers of `tensor`. */
static void unneed(RokTrace *trace, guint tensor, guint op) {
  GArray *needed = rok_trace_tensor(trace, tensor)->needed_by;
  for (guint i = 0; i < needed->len; i++)
    if (g_array_index(needed, guint, i) == op) {
      g_array_remove_index(needed, i);
      return;
    }
}

/* Transformer Engine casts a layer linear's input to e4m3 (one scale per
 * tensor) and saves the cast, not the 16-bit input, for the weight
 * gradient; the output head stays in 16-bit, as Megatron-LM keeps it. */
static void fp8_input(RokBuilder *b, guint op, const char *name, guint x, guint64 rows, guint64 in) {
  GArray *needed = rok_trace_tensor(b->trace, x)->needed_by;
  gboolean saves_x = FALSE;
  for (guint i = 0; i < needed->len; i++)
    saves_x |= g_array_index(needed, guint, i) == op;
  if (!saves_x)
    return;
  unneed(b->trace, x, op);
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_bytes += (rok_dtype_bytes(b->dtype) + 1) * rows * in; /* the cast */
  char full[64];
  g_snprintf(full, sizeof full, "%s.fp8_in", name);
  guint cast = ROK_TENSOR(b, full, op, ROK_DTYPE_E4M3, rows, in);
  g_snprintf(full, sizeof full, "%s.fp8_scale", name);
  guint scale = ROK_TENSOR(b, full, op, ROK_DTYPE_FP32, 1);
  rok_trace_need(b->trace, cast, op);
  rok_trace_need(b->trace, scale, op);
}

void trace_linear_training(RokBuilder *b, guint op, const char *name, guint x, guint64 rows, guint64 in,
                           guint64 out) {
  const RokModel *m = b->model;
  RokOp *o = rok_trace_op(b->trace, op);
  guint adapters = lora_adapters(m, b->layer, name);
  if (weight_frozen(m, b->layer)) { /* dX = dY·Wᵀ only */
    o->bwd_flops = 2 * rows * in * out;
    o->bwd_bytes = o->fwd_bytes;
    if (adapters == 0)
      unneed(b->trace, x, op);
  }
  if (m->train.fp8 != ROK_FP8_NONE && b->layer >= 0)
    fp8_input(b, op, name, x, rows, in);
  if (adapters == 0)
    return;
  /* y += (x·A)·B per adapter: x·A is [rows, r] (saved for B's gradient),
   * A is in × r, B r × out_i; backward: dX, dA and dB, twice forward. */
  guint64 r = m->train.lora_rank, e = rok_dtype_bytes(b->dtype);
  guint64 flops = 2 * rows * r * (adapters * in + out);
  o->fwd_flops += flops;
  o->bwd_flops += 2 * flops;
  o->fwd_bytes += e * (2 * rows * adapters * r + r * (adapters * in + out));
  o->bwd_bytes += 2 * e * (2 * rows * adapters * r + r * (adapters * in + out));
  char full[64];
  g_snprintf(full, sizeof full, "%s.lora_out", name);
  guint t = ROK_TENSOR(b, full, op, b->dtype, rows, adapters * r);
  rok_trace_need(b->trace, t, op);
}

static gboolean no_backward(const RokOp *op, const RokModel *m) {
  if (op->layer >= 0)
    return (guint64)op->layer < m->train.frozen_layers;
  gboolean embed = g_str_has_prefix(op->name, "embed.") || g_str_has_prefix(op->name, "decoder_embed.");
  return embed && (m->train.frozen_layers > 0 || m->train.lora_rank > 0);
}

/* The layers below the first trained one (and a frozen embedding) run no
 * backward: their ops cost nothing there, and no backward of theirs reads
 * a tensor (a layer's input stays saved for the first trained layer). */
void trace_apply_training(RokTrace *trace, const RokModel *m) {
  if (m->train.frozen_layers == 0 && m->train.lora_rank == 0)
    return;
  g_autofree gboolean *none = g_new0(gboolean, trace->ops->len);
  for (guint i = 0; i < trace->ops->len; i++) {
    RokOp *op = rok_trace_op(trace, i);
    none[i] = no_backward(op, m);
    if (none[i])
      op->bwd_flops = op->bwd_bytes = 0;
  }
  for (guint i = 0; i < trace->tensors->len; i++) {
    GArray *needed = rok_trace_tensor(trace, i)->needed_by;
    for (guint n = 0; n < needed->len;)
      if (none[g_array_index(needed, guint, n)])
        g_array_remove_index(needed, n);
      else
        n++;
  }
}

void trace_fill_fixed_memory(const RokModel *m, RokFixedMemory *fixed) {
  RokFixedTerm terms[ROK_FIXED_MAX_TERMS];
  guint n = rok_model_fixed_terms(m, terms);
  guint64 *by_kind[] = {[ROK_FIXED_WEIGHTS] = &fixed->weight_bytes, [ROK_FIXED_GRADIENTS] = &fixed->gradient_bytes,
                        [ROK_FIXED_OPTIMIZER] = &fixed->optimizer_bytes};
  fixed->params_total = rok_model_param_count(m);
  fixed->params_per_gpu = rok_model_params_per_gpu(m);
  fixed->weight_bytes = fixed->gradient_bytes = fixed->optimizer_bytes = 0;
  for (guint i = 0; i < n; i++)
    *by_kind[terms[i].kind] += terms[i].bytes;
  fixed->optimizer_step_bytes = rok_model_optimizer_step_bytes(m);
  fixed->optimizer_step_flops = rok_model_optimizer_step_flops(m);
}
