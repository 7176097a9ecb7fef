/* The building blocks of a transformer trace, with their costs.
 *
 * Costs: a GEMM of m×k by k×n is 2mnk FLOPs forward and twice that backward
 * (input and weight gradients). Element-wise ops are costed by the bytes
 * they move, which is what bounds them; their FLOPs are a few per element. */
#include <stdio.h>

#include "builder.h"
#include "training-trace.h"

void trace_builder_enter(RokBuilder *b, gint layer, const char *prefix) {
  b->layer = layer;
  g_strlcpy(b->prefix, prefix, sizeof b->prefix);
}

guint trace_build_op(RokBuilder *b, const char *name, RokOpKind kind, guint64 batch, guint64 m, guint64 n,
                   guint64 k) {
  g_autofree char *full = g_strdup_printf("%s.%s", b->prefix, name);
  return rok_trace_add_op(b->trace, full, b->layer, kind, batch, m, n, k);
}

guint trace_build_tensor(RokBuilder *b, const char *name, guint op, RokDtype dtype, guint rank,
                       const guint64 *shape) {
  g_autofree char *full = g_strdup_printf("%s.%s", b->prefix, name);
  return rok_trace_add_tensor(b->trace, full, b->layer, dtype, rank, shape, op);
}

/* "qkv" + "_out" in a caller's buffer: names stay short-lived. */
static const char *suffixed(char buffer[64], const char *name, const char *suffix) {
  g_snprintf(buffer, 64, "%s%s", name, suffix);
  return buffer;
}

static guint64 elem(const RokBuilder *b) {
  return rok_dtype_bytes(b->dtype);
}

void trace_build_cost(RokBuilder *b, guint op, guint64 fwd_flops, guint64 bwd_flops, guint64 fwd_bytes,
                      guint64 bwd_bytes) {
  RokOp *o = rok_trace_op(b->trace, op);
  o->fwd_flops = fwd_flops;
  o->bwd_flops = bwd_flops;
  o->fwd_bytes = fwd_bytes;
  o->bwd_bytes = bwd_bytes;
}

void trace_build_use(RokBuilder *b, guint op, guint tensor, gboolean saved) {
  rok_trace_add_input(b->trace, op, tensor);
  if (saved)
    rok_trace_need(b->trace, tensor, op);
}

guint trace_build_linear(RokBuilder *b, const char *name, guint x, guint64 rows, guint64 in, guint64 out) {
  guint op = trace_build_op(b, name, ROK_OP_LINEAR, 1, rows, out, in);
  guint64 fwd_bytes = elem(b) * (rows * in + in * out + rows * out);
  /* Backward: dX = dY·Wᵀ and dW = Xᵀ·dY move twice what forward moves. */
  trace_build_cost(b, op, 2 * rows * in * out, 4 * rows * in * out, fwd_bytes, 2 * fwd_bytes);
  trace_build_use(b, op, x, TRUE);
  trace_linear_training(b, op, name, x, rows, in, out);
  return op;
}

guint trace_build_norm(RokBuilder *b, const char *name, RokOpKind kind, guint x, guint64 rows, guint64 cols) {
  if (trace_eager(b) && kind == ROK_OP_RMSNORM)
    return trace_eager_rms_norm(b, name, x, rows, cols);
  char buffer[64];
  guint op = trace_build_op(b, name, kind, 1, rows, cols, 0);
  guint64 n = rows * cols, stats = kind == ROK_OP_LAYERNORM ? 2 : 1;
  trace_build_cost(b, op, 8 * n, 12 * n, 2 * elem(b) * n + 4 * stats * rows, 3 * elem(b) * n + 4 * stats * rows);
  trace_build_use(b, op, x, TRUE);
  guint y = ROK_TENSOR(b, suffixed(buffer, name, "_out"), op, b->dtype, rows, cols);
  guint s = ROK_TENSOR(b, suffixed(buffer, name, "_stats"), op, ROK_DTYPE_FP32, rows, stats);
  rok_trace_need(b->trace, s, op);
  return y;
}

guint trace_build_activation(RokBuilder *b, const char *name, RokOpKind kind, guint x, guint64 rows,
                           guint64 cols) {
  if (trace_eager(b) && kind == ROK_OP_GELU)
    return trace_eager_gelu(b, name, x, rows, cols);
  char buffer[64];
  guint op = trace_build_op(b, name, kind, 1, rows, cols, 0);
  guint64 n = rows * cols;
  trace_build_cost(b, op, 8 * n, 8 * n, 2 * elem(b) * n, 3 * elem(b) * n);
  /* GeLU's backward needs its input; ReLU's only its result. */
  trace_build_use(b, op, x, kind != ROK_OP_RELU);
  guint y = ROK_TENSOR(b, suffixed(buffer, name, "_out"), op, b->dtype, rows, cols);
  if (kind == ROK_OP_RELU)
    rok_trace_need(b->trace, y, op);
  return y;
}

guint trace_build_swiglu(RokBuilder *b, const char *name, guint gate_up, guint64 rows, guint64 cols) {
  if (trace_eager(b))
    return trace_eager_swiglu(b, name, gate_up, rows, cols);
  char buffer[64];
  guint op = trace_build_op(b, name, ROK_OP_SWIGLU, 1, rows, cols, 0);
  guint64 n = rows * cols;
  /* Fused, as Megatron's: backward recomputes silu(gate) from [gate|up]. */
  trace_build_cost(b, op, 8 * n, 12 * n, 3 * elem(b) * n, 5 * elem(b) * n);
  trace_build_use(b, op, gate_up, TRUE);
  return ROK_TENSOR(b, suffixed(buffer, name, "_out"), op, b->dtype, rows, cols);
}

guint trace_build_dropout(RokBuilder *b, const char *name, guint x, guint rank, const guint64 *shape) {
  char buffer[64];
  if (!b->dropout)
    return x;
  guint64 n = 1;
  for (guint i = 0; i < rank; i++)
    n *= shape[i];
  guint64 mask = rok_dtype_bytes(b->mask_dtype);
  guint op = trace_build_op(b, name, ROK_OP_DROPOUT, 1, n / shape[rank - 1], shape[rank - 1], 0);
  rok_trace_op(b->trace, op)->dropout = b->model->dropout;
  trace_build_cost(b, op, 4 * n, n, (2 * elem(b) + mask) * n, (2 * elem(b) + mask) * n);
  trace_build_use(b, op, x, FALSE);
  guint m = trace_build_tensor(b, suffixed(buffer, name, "_mask"), op, b->mask_dtype, rank, shape);
  rok_trace_need(b->trace, m, op);
  return trace_build_tensor(b, suffixed(buffer, name, "_out"), op, b->dtype, rank, shape);
}

guint trace_build_rotary(RokBuilder *b, const char *name, guint qk, guint64 rows, guint64 cols) {
  char buffer[64];
  guint op = trace_build_op(b, name, ROK_OP_ROTARY, 1, rows, cols, 0);
  trace_build_cost(b, op, 3 * rows * cols, 3 * rows * cols, 2 * elem(b) * rows * cols, 2 * elem(b) * rows * cols);
  trace_build_use(b, op, qk, FALSE);
  return ROK_TENSOR(b, suffixed(buffer, name, "_out"), op, b->dtype, rows, cols);
}

guint trace_build_add(RokBuilder *b, const char *name, guint x, guint y, guint64 rows, guint64 cols) {
  char buffer[64];
  guint op = trace_build_op(b, name, ROK_OP_ADD, 1, rows, cols, 0);
  guint64 n = rows * cols;
  /* Backward hands the gradient to both branches, accumulating one. */
  trace_build_cost(b, op, n, n, 3 * elem(b) * n, 3 * elem(b) * n);
  trace_build_use(b, op, x, FALSE);
  trace_build_use(b, op, y, FALSE);
  return ROK_TENSOR(b, suffixed(buffer, name, "_out"), op, b->dtype, rows, cols);
}

static void use_qkv(RokBuilder *b, guint op, const RokAttentionShape *a, gboolean q, gboolean k, gboolean v) {
  guint ids[3] = {q ? a->q : ROK_NO_TENSOR, k ? a->k : ROK_NO_TENSOR, v ? a->v : ROK_NO_TENSOR};
  for (guint i = 0; i < 3; i++) {
    gboolean repeated = FALSE;
    for (guint j = 0; j < i; j++)
      repeated |= ids[j] == ids[i];
    if (ids[i] != ROK_NO_TENSOR && !repeated)
      trace_build_use(b, op, ids[i], TRUE);
  }
}

static guint64 v_dim(const RokAttentionShape *a) {
  return a->v_dim > 0 ? a->v_dim : a->head_dim;
}

/* Of the query-key pairs causal attention computes, the share inside a
 * sliding window of `w` keys (1 without a window, or with one as long as
 * the sequence). */
static double window_share(guint64 s, guint64 w) {
  if (w == 0 || w >= s)
    return 1.0;
  double causal = (double)s * (double)(s + 1) / 2, inside = (double)w * (double)(w + 1) / 2 + (double)(s - w) * (double)w;
  return inside / causal;
}

static guint build_flash(RokBuilder *b, const char *name, const RokAttentionShape *a) {
  char buffer[64];
  guint64 bh = a->batch * a->heads, dv = v_dim(a), qd = a->heads * a->head_dim, kvd = a->kv_heads * a->head_dim;
  guint64 od = a->heads * dv, vd = a->kv_heads * dv;
  guint op = trace_build_op(b, suffixed(buffer, name, ".flash"), ROK_OP_FLASH_ATTENTION, bh, a->seq_q, a->seq_k,
                          a->head_dim);
  rok_trace_op(b->trace, op)->dropout = b->dropout ? b->model->dropout : 0.0;
  /* Q·Kᵀ over head_dim and P·V over v_dim, inside the window only. */
  double share = window_share(a->seq_k, a->window);
  guint64 gemm = (guint64)(share * (double)(bh * a->seq_q * a->seq_k * (a->head_dim + dv)) + 0.5);
  guint64 io = elem(b) * a->batch * (a->seq_q * (qd + od) + a->seq_k * (kvd + vd));
  /* Backward recomputes the scores: five GEMMs against forward's two. */
  trace_build_cost(b, op, 2 * gemm, 5 * gemm, io + 4 * bh * a->seq_q, 2 * io + 4 * bh * a->seq_q);
  use_qkv(b, op, a, TRUE, TRUE, TRUE);
  guint ctx = ROK_TENSOR(b, suffixed(buffer, name, ".flash_out"), op, b->dtype, a->batch * a->seq_q, od);
  guint lse = ROK_TENSOR(b, suffixed(buffer, name, ".flash_lse"), op, ROK_DTYPE_FP32, a->batch, a->heads,
                         a->seq_q);
  rok_trace_need(b->trace, ctx, op);
  rok_trace_need(b->trace, lse, op);
  return ctx;
}

/* Scores, softmax, dropout and context: the s² tensors of Korthikanti et al.
 * Without dropout the softmax output is one tensor needed by two backward
 * ops (softmax and context), stored once. */
static guint build_standard(RokBuilder *b, const char *name, const RokAttentionShape *a) {
  char buffer[64];
  guint64 bh = a->batch * a->heads, sq = a->seq_q, sk = a->seq_k, d = a->head_dim, dv = v_dim(a);
  guint64 n = bh * sq * sk, gemm = 2 * n * d;
  guint64 qkv_bytes = elem(b) * a->batch * d * (sq * a->heads + sk * a->kv_heads);
  guint64 pv_gemm = 2 * n * dv, pv_bytes = elem(b) * a->batch * dv * (sq * a->heads + sk * a->kv_heads);

  guint scores_op = trace_build_op(b, suffixed(buffer, name, ".scores"), ROK_OP_ATTN_SCORES, bh, sq, sk, d);
  trace_build_cost(b, scores_op, gemm, 2 * gemm, qkv_bytes + elem(b) * n, 2 * (qkv_bytes + elem(b) * n));
  use_qkv(b, scores_op, a, TRUE, TRUE, FALSE);
  guint scores = ROK_TENSOR(b, suffixed(buffer, name, ".scores_out"), scores_op, b->dtype, a->batch,
                            a->heads, sq, sk);

  guint softmax_op = trace_build_op(b, suffixed(buffer, name, ".softmax"), ROK_OP_SOFTMAX, 1, bh * sq, sk, 0);
  trace_build_cost(b, softmax_op, 5 * n, 4 * n, 2 * elem(b) * n, 3 * elem(b) * n);
  trace_build_use(b, softmax_op, scores, FALSE);
  guint probs = ROK_TENSOR(b, suffixed(buffer, name, ".softmax_out"), softmax_op, b->dtype, a->batch,
                           a->heads, sq, sk);
  rok_trace_need(b->trace, probs, softmax_op);
  probs = trace_eager_softmax_copy(b, name, softmax_op, probs, n);

  const guint64 shape[4] = {a->batch, a->heads, sq, sk};
  guint dropped = trace_build_dropout(b, suffixed(buffer, name, ".dropout"), probs, 4, shape);

  guint ctx_op = trace_build_op(b, suffixed(buffer, name, ".context"), ROK_OP_ATTN_CONTEXT, bh, sq, dv, sk);
  trace_build_cost(b, ctx_op, pv_gemm, 2 * pv_gemm, pv_bytes + elem(b) * n, 2 * (pv_bytes + elem(b) * n));
  trace_build_use(b, ctx_op, dropped, TRUE);
  use_qkv(b, ctx_op, a, FALSE, FALSE, TRUE);
  return ROK_TENSOR(b, suffixed(buffer, name, ".context_out"), ctx_op, b->dtype, a->batch * sq,
                    a->heads * dv);
}

guint trace_build_attention(RokBuilder *b, const char *name, const RokAttentionShape *shape) {
  if (b->model->attention == ROK_ATTENTION_FLASH)
    return build_flash(b, name, shape);
  return build_standard(b, name, shape);
}
