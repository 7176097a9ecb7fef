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

static void costs(RokBuilder *b, guint op, guint64 n, guint64 fwd_bytes_per, guint64 bwd_bytes_per) {
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_flops = 8 * n;
  o->bwd_flops = 12 * n;
  o->fwd_bytes = fwd_bytes_per * n;
  o->bwd_bytes = bwd_bytes_per * n;
}

static guint saved(RokBuilder *b, const char *name, const char *suffix, guint op, RokDtype dtype, guint64 rows,
                   guint64 cols) {
  char full[64];
  g_snprintf(full, sizeof full, "%s%s", name, suffix);
  guint t = ROK_TENSOR(b, full, op, dtype, rows, cols);
  rok_trace_need(b->trace, t, op);
  return t;
}

guint trace_eager_rms_norm(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols) {
  guint op = trace_build_op(b, name, ROK_OP_RMSNORM, 1, rows, cols, 0);
  guint64 e = rok_dtype_bytes(b->dtype);
  /* Six kernels: cast up, pow, mean, rsqrt, multiply, cast down, weight. */
  costs(b, op, rows * cols, e + 4 + 4 + 4 + 4 + 4 + 4 + e + e + e + e, 3 * (e + 4 + 4) + 2 * e);
  rok_trace_add_input(b->trace, op, x);
  saved(b, name, "_fp32", op, ROK_DTYPE_FP32, rows, cols);
  saved(b, name, "_rstd", op, ROK_DTYPE_FP32, rows, 1);
  saved(b, name, "_hat", op, b->dtype, rows, cols);
  char out[64];
  g_snprintf(out, sizeof out, "%s_out", name);
  return ROK_TENSOR(b, out, op, b->dtype, rows, cols);
}

guint trace_eager_gelu(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 cols) {
  guint op = trace_build_op(b, name, ROK_OP_GELU, 1, rows, cols, 0);
  guint64 e = rok_dtype_bytes(b->dtype);
  /* Eight element-wise kernels, each reading one or two tensors and writing one. */
  costs(b, op, rows * cols, 19 * e, 24 * e);
  rok_trace_add_input(b->trace, op, x);
  rok_trace_need(b->trace, x, op);
  saved(b, name, "_tanh", op, b->dtype, rows, cols);
  saved(b, name, "_half_x", op, b->dtype, rows, cols);
  saved(b, name, "_one_plus_tanh", op, b->dtype, rows, cols);
  char out[64];
  g_snprintf(out, sizeof out, "%s_out", name);
  return ROK_TENSOR(b, out, op, b->dtype, rows, cols);
}

guint trace_eager_swiglu(RokBuilder *b, const char *name, guint gate_up, guint64 rows, guint64 cols) {
  guint op = trace_build_op(b, name, ROK_OP_SWIGLU, 1, rows, cols, 0);
  guint64 e = rok_dtype_bytes(b->dtype);
  /* silu, then the product: 2 + 3 tensors moved; backward reads three. */
  costs(b, op, rows * cols, 5 * e, 8 * e);
  rok_trace_add_input(b->trace, op, gate_up);
  rok_trace_need(b->trace, gate_up, op);
  saved(b, name, "_silu", op, b->dtype, rows, cols);
  char out[64];
  g_snprintf(out, sizeof out, "%s_out", name);
  return ROK_TENSOR(b, out, op, b->dtype, rows, cols);
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
