/* Eager PyTorch kernels as Hugging Face's eager code paths run them
 * ("kernels": "eager"): what each unfused op chain saves for backward and
 * moves, checked against PyTorch's saved_tensors_hooks by
 * tests/pytorch/eager_saved_bytes.py (tests/cli/pytorch-eager-bytes.sh).
 *
 * - LlamaRMSNorm: x.float() saves nothing, pow(2) saves the fp32 copy,
 *   rsqrt its fp32 result, x·rsqrt both, the cast back nothing, weight·x̂
 *   the 16-bit x̂: fp32 copy + rsqrt + x̂, and not its input.
 * - Rotary: q·cos + rotate_half(q)·sin saves cos and sin, tables the model
 *   makes once per forward (counted outside the layers).
 * - repeat_kv (grouped-query attention): expand + reshape materialise K
 *   and V for every query head; the matmuls save those copies.
 * - LLaMA's softmax(dtype=float32): its fp32 result, and the 16-bit copy
 *   the context matmul saves.
 * - SwiGLU: silu saves its input (gate), silu(gate)·up saves both factors,
 *   down_proj its input: four [tokens, ffn] tensors.
 * - NewGELUActivation (GPT-2's tanh formula in Python ops): pow saves x,
 *   tanh its result, the last product 0.5·x and 1 + tanh: with c_proj's
 *   input, five [tokens, ffn] tensors. */
#include "training-trace.h"

#include "rok/core.h"

gboolean trace_eager(const RokBuilder *b) {
  return b->model->train.kernels == ROK_KERNELS_EAGER;
}

/* An eager chain of element-wise kernels as one op over [rows, cols]:
 * moving `fwd`/`bwd` bytes per element, saving its input when `keep_input`,
 * then the intermediates named by `saved` (suffixes, [rows, cols] in the
 * activation dtype unless the suffix says "_fp32" or "_rstd"); returns its
 * output. */
static guint chain(RokBuilder *b, const char *name, RokOpKind kind, guint x, guint64 rows, guint64 cols,
                   guint64 fwd, guint64 bwd, gboolean keep_input, const char *const *saved) {
  guint op = trace_build_op(b, name, kind, 1, rows, cols, 0);
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_flops = 8 * rows * cols;
  o->bwd_flops = 12 * rows * cols;
  o->fwd_bytes = fwd * rows * cols;
  o->bwd_bytes = bwd * rows * cols;
  rok_trace_add_input(b->trace, op, x);
  if (keep_input)
    rok_trace_need(b->trace, x, op);
  char full[64];
  for (const char *const *suffix = saved; *suffix != NULL; suffix++) {
    gboolean fp32 = g_str_has_suffix(*suffix, "_fp32"), rstd = g_str_has_suffix(*suffix, "_rstd");
    g_snprintf(full, sizeof full, "%s%s", name, *suffix);
    guint t = ROK_TENSOR(b, full, op, fp32 || rstd ? ROK_DTYPE_FP32 : b->dtype, rows, rstd ? 1 : cols);
    rok_trace_need(b->trace, t, op);
  }
  g_snprintf(full, sizeof full, "%s_out", name);
  return ROK_TENSOR(b, full, op, b->dtype, rows, cols);
}

guint trace_eager_rms_norm(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols) {
  static const char *const saved[] = {"_fp32", "_rstd", "_hat", NULL};
  guint64 e = rok_dtype_bytes(b->dtype);
  /* Seven kernels: cast up, pow, mean, rsqrt, multiply, cast down, weight. */
  return chain(b, name, ROK_OP_RMSNORM, x, rows, cols, 4 * e + 24, 3 * (e + 8) + 2 * e, FALSE, saved);
}

guint trace_eager_gelu(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols) {
  static const char *const saved[] = {"_tanh", "_half_x", "_one_plus_tanh", NULL};
  guint64 e = rok_dtype_bytes(b->dtype);
  /* Eight element-wise kernels, each reading one or two tensors and writing one. */
  return chain(b, name, ROK_OP_GELU, x, rows, cols, 19 * e, 24 * e, TRUE, saved);
}

guint trace_eager_swiglu(RokBuilder *b, const char *name, guint gate_up, guint64 rows, guint64 cols) {
  static const char *const saved[] = {"_silu", NULL};
  guint64 e = rok_dtype_bytes(b->dtype);
  /* silu, then the product: 2 + 3 tensors moved; backward reads three. */
  return chain(b, name, ROK_OP_SWIGLU, gate_up, rows, cols, 5 * e, 8 * e, TRUE, saved);
}

void trace_eager_rotary_tables(RokBuilder *b, guint input_op, guint64 seq) {
  b->rotary_cos = b->rotary_sin = ROK_NO_TENSOR;
  if (!trace_eager(b) || b->model->arch != ROK_ARCH_LLAMA)
    return;
  guint64 mb = b->model->micro_batch, d = b->model->head_dim;
  b->rotary_cos = ROK_TENSOR(b, "rotary_cos", input_op, b->dtype, mb, seq, d);
  b->rotary_sin = ROK_TENSOR(b, "rotary_sin", input_op, b->dtype, mb, seq, d);
}

void trace_eager_rotary(RokBuilder *b, guint rope_op) {
  if (b->rotary_cos == ROK_NO_TENSOR || b->layer < 0)
    return;
  rok_trace_add_input(b->trace, rope_op, b->rotary_cos);
  rok_trace_add_input(b->trace, rope_op, b->rotary_sin);
  rok_trace_need(b->trace, b->rotary_cos, rope_op);
  rok_trace_need(b->trace, b->rotary_sin, rope_op);
}

void trace_eager_repeat_kv(RokBuilder *b, RokAttentionShape *a, guint64 tokens) {
  if (!trace_eager(b) || a->kv_heads == a->heads)
    return;
  guint64 width = a->heads * a->head_dim, e = rok_dtype_bytes(b->dtype);
  guint op = trace_build_op(b, "attn.repeat_kv", ROK_OP_OTHER, 1, tokens, 2 * width, 0);
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_bytes = e * tokens * 2 * (a->kv_heads * a->head_dim + width);
  o->bwd_bytes = o->fwd_bytes;
  rok_trace_add_input(b->trace, op, a->k);
  if (a->v != a->k)
    rok_trace_add_input(b->trace, op, a->v);
  a->k = ROK_TENSOR(b, "attn.k_repeated", op, b->dtype, tokens, width);
  a->v = ROK_TENSOR(b, "attn.v_repeated", op, b->dtype, tokens, width);
  a->kv_heads = a->heads;
}

guint trace_eager_softmax_copy(RokBuilder *b, const char *name, guint softmax_op, guint probs, guint64 n) {
  if (!trace_eager(b) || b->model->arch != ROK_ARCH_LLAMA)
    return probs;
  /* softmax(dtype=float32) then .to(dtype): the fp32 result stays saved. */
  RokTensor *p = rok_trace_tensor(b->trace, probs);
  p->dtype = ROK_DTYPE_FP32;
  p->bytes = p->bytes / rok_dtype_bytes(b->dtype) * 4;
  RokOp *o = rok_trace_op(b->trace, softmax_op);
  o->fwd_bytes += 4 * n;
  o->bwd_bytes += 4 * n;
  char full[64];
  g_snprintf(full, sizeof full, "%s.softmax_copy", name);
  return trace_build_tensor(b, full, softmax_op, b->dtype, p->rank, p->shape);
}
