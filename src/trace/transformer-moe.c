/* A mixture-of-experts FFN, as Megatron-Core runs it dropless (or with a
 * capacity factor), on one GPU:
 *
 *   router    logits = x·Wr [T, E]; probabilities = softmax (fp32, saved: the
 *             softmax backward and the load-balancing loss read them); top-k
 *             indices (saved) and weights
 *   dispatch  the T·k routed rows gathered by expert [R, h] (the experts'
 *             first GEMM saves them), with each row's token (saved) and
 *             routing weight
 *   experts   gate/up GEMM [R, 2f], SwiGLU, down GEMM [R, h] (grouped GEMMs
 *             over this rank's experts; tensor parallelism splits f)
 *   combine   rows weighted and summed per token (saves the rows and their
 *             weights)
 *   shared    a SwiGLU FFN every token goes through (DeepSeek, Qwen-MoE),
 *             with Qwen2-MoE's sigmoid gate.
 *
 * Routed rows R: dropless, top_k × T, the experts' loads balanced on
 * average (an unlucky step routes more to one expert; the trace states the
 * expectation); with a capacity factor c every expert takes
 * ceil(c·k·T/E) rows, padded. Expert parallelism leaves R unchanged under
 * balanced routing: each of the ep ranks holds E/ep experts and receives
 * their rows from all ep ranks. The all-to-all it needs is not modelled
 * (rok_model_unmodelled() says so). */
#include <math.h>

#include "transformer-parts.h"

guint64 trace_moe_routed_rows(const RokModel *m, guint64 tokens) {
  const RokModelArchitecture *a = &m->a;
  if (a->capacity_factor <= 0)
    return a->top_k * tokens;
  double per_expert = ceil(a->capacity_factor * (double)(a->top_k * tokens) / (double)a->experts);
  return (guint64)per_expert * a->experts;
}

/* Router: logits, then softmax, top-k and the load-balancing loss in one
 * op. Returns the top-k weights, and in *indices the top-k indices. */
static guint route(RokBuilder *b, guint x, guint64 tokens, guint *indices) {
  const RokModel *m = b->model;
  guint64 e = m->a.experts, k = m->a.top_k, elem = rok_dtype_bytes(b->dtype);
  guint router = trace_build_linear(b, "moe.router", x, tokens, m->hidden, e);
  guint logits = ROK_TENSOR(b, "moe.router_logits", router, b->dtype, tokens, e);
  guint op = trace_build_op(b, "moe.route", ROK_OP_MOE_ROUTER, 1, tokens, e, k);
  /* softmax, top-k selection, and (with aux_loss) the per-expert means */
  guint64 n = tokens * e;
  trace_build_cost(b, op, 8 * n, 6 * n, (elem + 4) * n + 12 * tokens * k, (4 + 4) * n + 12 * tokens * k);
  trace_build_use(b, op, logits, FALSE);
  guint probs = ROK_TENSOR(b, "moe.router_probs", op, ROK_DTYPE_FP32, tokens, e);
  *indices = ROK_TENSOR(b, "moe.topk_indices", op, ROK_DTYPE_I64, tokens, k);
  guint weights = ROK_TENSOR(b, "moe.topk_weights", op, ROK_DTYPE_FP32, tokens, k);
  rok_trace_need(b->trace, probs, op);
  rok_trace_need(b->trace, *indices, op);
  return weights;
}

/* Routed rows through this rank's experts: gate/up, SwiGLU, down. */
static guint experts(RokBuilder *b, guint rows_in, guint64 rows) {
  const RokModel *m = b->model;
  guint64 h = m->hidden, f = m->a.expert_ffn_hidden / m->tensor_parallel;
  guint gate_up = trace_build_linear(b, "moe.experts.gate_up", rows_in, rows, h, 2 * f);
  guint gu = ROK_TENSOR(b, "moe.experts.gate_up_out", gate_up, b->dtype, rows, 2 * f);
  guint act = trace_build_swiglu(b, "moe.experts.swiglu", gu, rows, f);
  guint down = trace_build_linear(b, "moe.experts.down", act, rows, f, h);
  return ROK_TENSOR(b, "moe.experts.down_out", down, b->dtype, rows, h);
}

/* The shared experts on every token; Qwen2-MoE scales them by a sigmoid gate. */
static guint shared_experts(RokBuilder *b, guint x, guint64 tokens) {
  const RokModel *m = b->model;
  guint64 h = m->hidden, f = m->a.shared_expert_ffn_hidden / m->tensor_parallel, elem = rok_dtype_bytes(b->dtype);
  guint gate_up = trace_build_linear(b, "moe.shared.gate_up", x, tokens, h, 2 * f);
  guint gu = ROK_TENSOR(b, "moe.shared.gate_up_out", gate_up, b->dtype, tokens, 2 * f);
  guint act = trace_build_swiglu(b, "moe.shared.swiglu", gu, tokens, f);
  guint down = trace_build_linear(b, "moe.shared.down", act, tokens, f, h);
  guint out = ROK_TENSOR(b, "moe.shared.down_out", down, b->dtype, tokens, h);
  if (!m->a.shared_expert_gate)
    return out;
  guint gate = trace_build_linear(b, "moe.shared.gate", x, tokens, h, 1);
  guint logit = ROK_TENSOR(b, "moe.shared.gate_out", gate, b->dtype, tokens, 1);
  /* out · sigmoid(logit): backward reads both (the sigmoid's result is the
   * logit's size). */
  guint scale = trace_build_op(b, "moe.shared.gate_scale", ROK_OP_OTHER, 1, tokens, h, 0);
  trace_build_cost(b, scale, 2 * tokens * h, 3 * tokens * h, 2 * elem * tokens * h, 3 * elem * tokens * h);
  trace_build_use(b, scale, out, TRUE);
  trace_build_use(b, scale, logit, TRUE);
  return ROK_TENSOR(b, "moe.shared.gate_scale_out", scale, b->dtype, tokens, h);
}

guint trace_moe_block(RokBuilder *b, guint x, guint64 tokens) {
  const RokModel *m = b->model;
  guint64 h = m->hidden, k = m->a.top_k, rows = trace_moe_routed_rows(m, tokens), elem = rok_dtype_bytes(b->dtype);
  guint indices, weights = route(b, x, tokens, &indices);

  guint dispatch = trace_build_op(b, "moe.dispatch", ROK_OP_MOE_DISPATCH, 1, rows, h, k);
  trace_build_cost(b, dispatch, 0, rows * h, 2 * elem * rows * h + 12 * rows, 2 * elem * rows * h + 12 * rows);
  trace_build_use(b, dispatch, x, FALSE);
  trace_build_use(b, dispatch, indices, FALSE);
  trace_build_use(b, dispatch, weights, FALSE);
  guint routed = ROK_TENSOR(b, "moe.dispatched", dispatch, b->dtype, rows, h);
  guint row_token = ROK_TENSOR(b, "moe.row_token", dispatch, ROK_DTYPE_I64, rows);
  guint row_weight = ROK_TENSOR(b, "moe.row_weight", dispatch, ROK_DTYPE_FP32, rows);
  rok_trace_need(b->trace, row_token, dispatch); /* backward scatters the rows' gradients to their tokens */

  guint expert_out = experts(b, routed, rows);
  guint combine = trace_build_op(b, "moe.combine", ROK_OP_MOE_COMBINE, 1, tokens, h, k);
  trace_build_cost(b, combine, 2 * rows * h, 3 * rows * h, elem * (rows + tokens) * h + 12 * rows,
           elem * (2 * rows + tokens) * h + 12 * rows);
  trace_build_use(b, combine, expert_out, TRUE);
  trace_build_use(b, combine, row_weight, TRUE);
  trace_build_use(b, combine, row_token, TRUE);
  /* The last op's output has the residual stream's rows: tensor (and
   * sequence) parallelism reduce the partial sums there, as the dense
   * FFN's fc2 does. */
  gboolean shared = m->a.shared_expert_ffn_hidden > 0;
  guint out = ROK_TENSOR(b, "moe.combine_out", combine, b->dtype, shared ? tokens : b->seq_tokens, h);
  if (shared)
    out = trace_build_add(b, "moe.add_shared", out, shared_experts(b, x, tokens), b->seq_tokens, h);
  return out;
}
