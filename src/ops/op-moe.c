/* Mixture-of-experts layers (the trace's src/trace/transformer-moe.c):
 *
 *   moe_router    probs = softmax(logits) in fp32, the top-k experts of
 *                 each token (ties to the lower index) and their weights,
 *                 the picked probabilities renormalised to sum to 1
 *                 (Mixtral's routing, also used here for Qwen-MoE and
 *                 DeepSeek, whose routers differ: see ops.h). Backward: the
 *                 weights' gradient through that renormalised softmax, plus
 *                 the load-balancing loss's when the model has aux_loss.
 *   moe_dispatch  the routed rows grouped by expert, each expert's in
 *                 token order: dropless (rows = T·k, expert e's group as
 *                 large as the tokens it got) or, with a capacity factor,
 *                 rows / E per expert, the first that many of its choices
 *                 kept and the rest of the group zero padding. row_token
 *                 holds each row's choice t·k + j (-1: padding), row_weight
 *                 its routing weight.
 *   experts       the linears over the routed rows are grouped GEMMs: one
 *                 weight [in, out] per expert, each expert's rows through
 *                 its own (one GEMM per expert).
 *   moe_combine   each token's rows, weighted, summed in slot order.
 *   gate_scale    Qwen2-MoE's shared-expert gate (an `other` op in the
 *                 trace): y · sigmoid(g).
 *
 * The experts' GEMMs need each expert's row count on the host: dispatch
 * forward reads the counts back (Megatron's dropless MoE synchronises
 * there too) and the model keeps them per micro-batch and layer, so an
 * expert GEMM recomputed or run backward later uses the same groups. They
 * are a function of the routing, which is a function of the data. */
#ifdef ROK_WITH_OPENCL

#include <math.h>
#include <string.h>

#include "ops-private.h"
#include "rok/core.h"

static gboolean refuse(const RokOp *op, GError **error, const char *format, ...) G_GNUC_PRINTF(3, 4);

/* MoE ops have no stand-in: a GEMM that does not route would let the
 * gradient checks vouch for something that is not a MoE layer. */
static gboolean refuse(const RokOp *op, GError **error, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *why = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "op '%s' (%s) cannot execute: %s", op->name,
              rok_op_kind_name(op->kind), why);
  return FALSE;
}

static gboolean check_tensor(const RokExecModel *model, const RokOp *op, guint id, RokDtype dtype, guint64 elements,
                             GError **error) {
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  if (t->dtype == dtype && model->numel[id] == elements)
    return TRUE;
  return refuse(op, error, "tensor '%s' holds %" G_GUINT64_FORMAT " %s elements, not %" G_GUINT64_FORMAT " %s", t->name,
                model->numel[id], rok_dtype_name(t->dtype), elements, rok_dtype_name(dtype));
}

static gboolean check_saved(const RokExecModel *model, const RokOp *op, guint id, GError **error) {
  if (ops_saved_for(model->trace, id, op->id))
    return TRUE;
  return refuse(op, error, "its backward reads '%s', which the trace does not save for it",
                rok_trace_tensor(model->trace, id)->name);
}

static gboolean check_arity(const RokOp *op, guint inputs, guint outputs, GError **error) {
  if (op->inputs->len == inputs && op->outputs->len == outputs)
    return TRUE;
  return refuse(op, error, "it reads %u and writes %u tensors, not %u and %u", op->inputs->len, op->outputs->len,
                inputs, outputs);
}

static gboolean check_model(const RokExecModel *model, const RokOp *op, GError **error) {
  const RokModel *m = model->config;
  if (m != NULL && m->a.expert_parallel > 1)
    return refuse(op, error,
                  "expert parallelism (%" G_GUINT64_FORMAT " ranks) needs the all-to-all dispatch, which rok does "
                  "not model; execute with expert_parallel=1",
                  m->a.expert_parallel);
  return TRUE;
}

/* ---- Routing state ---------------------------------------------------------- */

static gint64 groups_key(guint mb, guint dispatch) { return (gint64)mb << 32 | dispatch; }

/* Each expert's first row (experts + 1 entries) in micro-batch mb. */
static const guint64 *groups_of(OpsCtx *ctx, guint dispatch, GError **error) {
  gint64 key = groups_key(ctx->mb, dispatch);
  const guint64 *starts = g_hash_table_lookup(ctx->model->moe_groups, &key);
  if (starts == NULL)
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT, "its dispatch '%s' has not run forward for micro-batch %u",
                rok_trace_op(ctx->model->trace, dispatch)->name, ctx->mb);
  return starts;
}

static void groups_set(OpsCtx *ctx, guint64 *starts) {
  gint64 *key = g_new(gint64, 1);
  *key = groups_key(ctx->mb, ctx->op->id);
  g_hash_table_replace(ctx->model->moe_groups, key, starts);
}

/* ---- fp32 gradients of routing weights ----------------------------------- */

/* The gradient of output i (fp32 routing weights): its consumer's, or zeros. */
static RokClBuffer *dout_f32(OpsCtx *ctx, guint i, GError **error) {
  guint id = ops_out_id(ctx, i);
  RokClBuffer *grad = ctx->grads->grads[id];
  if (grad != NULL)
    return grad;
  return ops_scratch(ctx, ROK_DTYPE_FP32, ctx->model->numel[id], "zero weight gradient", TRUE, error);
}

/* The fp32 gradient buffer of input i, created when missing (*accumulate
 * FALSE: the kernel overwrites it). */
static RokClBuffer *grad_f32(OpsCtx *ctx, guint i, gboolean *accumulate, GError **error) {
  RokExecModel *model = ctx->model;
  guint id = ops_in_id(ctx, i);
  const RokTensor *t = rok_trace_tensor(model->trace, id);
  if (ctx->grads->consumed[id]) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_INPUT,
                "out of order: the gradient of '%s' was already consumed by the backward of its producer", t->name);
    return NULL;
  }
  *accumulate = ctx->grads->grads[id] != NULL;
  if (*accumulate)
    return ctx->grads->grads[id];
  g_autofree char *label = g_strdup_printf("gradient of %s (micro-batch %u)", t->name, ctx->mb);
  RokClBuffer *grad = rok_cl_buffer_new(model->device, ROK_DTYPE_FP32, model->numel[id], label, FALSE, error);
  if (grad != NULL) {
    ctx->grads->grads[id] = grad;
    model->grad_bytes += grad->bytes;
  }
  return grad;
}

void ops_moe_tensor_facts(RokExecModel *model) {
  for (guint o = 0; o < model->n_ops; o++) {
    const RokOp *op = rok_trace_op(model->trace, o);
    /* The routing weights carry the router's gradient; the probabilities
     * and indices none (the loss's part is taken inside the router). */
    if (op->kind == ROK_OP_MOE_ROUTER && op->outputs->len == 3) {
      model->needs_grad[ops_op_out(op, 0)] = model->boundary[ops_op_out(op, 0)] = FALSE;
      model->needs_grad[ops_op_out(op, 2)] = TRUE;
    }
    if (op->kind == ROK_OP_MOE_DISPATCH && op->outputs->len == 3)
      model->needs_grad[ops_op_out(op, 2)] = TRUE;
  }
}

/* ---- Router --------------------------------------------------------------- */

gboolean ops_moe_router_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  (void)reason;
  const RokOp *op = exec->op;
  MoeExec *x = &exec->u.moe;
  x->moe = (RokClMoe){.tokens = op->dims[0] * op->dims[1], .experts = op->dims[2], .top_k = op->dims[3]};
  guint64 te = x->moe.tokens * x->moe.experts, tk = x->moe.tokens * x->moe.top_k;
  if (!check_model(model, op, error) || !check_arity(op, 1, 3, error))
    return FALSE;
  if (x->moe.tokens == 0 || x->moe.top_k == 0 || x->moe.top_k > x->moe.experts || x->moe.experts > G_MAXUINT32)
    return refuse(op, error, "top-%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " experts for %" G_GUINT64_FORMAT
                  " tokens", x->moe.top_k, x->moe.experts, x->moe.tokens);
  if (!check_tensor(model, op, ops_op_in(op, 0), model->act, te, error) ||
      !check_tensor(model, op, ops_op_out(op, 0), ROK_DTYPE_FP32, te, error) ||
      !check_tensor(model, op, ops_op_out(op, 1), ROK_DTYPE_I64, tk, error) ||
      !check_tensor(model, op, ops_op_out(op, 2), ROK_DTYPE_FP32, tk, error) ||
      !check_saved(model, op, ops_op_out(op, 0), error) || !check_saved(model, op, ops_op_out(op, 1), error))
    return FALSE;
  /* Megatron's switch loss: coef · E / (T²·k) · Σ_e count_e · Σ_t p_te. */
  double coef = model->config != NULL ? model->config->a.aux_loss : 0.0;
  double t = (double)x->moe.tokens;
  x->aux_scale = coef * (double)x->moe.experts / (t * t * (double)x->moe.top_k);
  return TRUE;
}

gboolean ops_moe_router_forward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClBuffer *logits = ops_input(ctx, 0, error);
  RokClBuffer *probs = logits ? ops_output(ctx, 0, error) : NULL;
  RokClBuffer *indices = probs ? ops_output(ctx, 1, error) : NULL;
  RokClBuffer *weights = indices ? ops_output(ctx, 2, error) : NULL;
  return weights != NULL &&
         rok_cl_moe_route_forward(ctx->model->kernels, &x->moe, logits, probs, indices, weights, error);
}

gboolean ops_moe_router_backward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClKernels *kernels = ctx->model->kernels;
  OpsSink sink = {0};
  if (!ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  if (sink.dst == NULL)
    return TRUE;
  RokClBuffer *probs = ops_output(ctx, 0, error);
  RokClBuffer *indices = probs ? ops_output(ctx, 1, error) : NULL;
  RokClBuffer *dweights = indices ? dout_f32(ctx, 2, error) : NULL;
  if (dweights == NULL)
    return FALSE;
  RokClBuffer *counts = NULL;
  if (x->aux_scale > 0) {
    counts = ops_scratch(ctx, ROK_DTYPE_I64, x->moe.experts, "expert counts", FALSE, error);
    if (counts == NULL || !rok_cl_moe_count(kernels, &x->moe, indices, counts, error))
      return FALSE;
  }
  return rok_cl_moe_route_backward(kernels, &x->moe, probs, indices, dweights, counts, (float)x->aux_scale, sink.dst,
                                   error) &&
         ops_sink_close(ctx, &sink, error);
}

/* ---- Dispatch ------------------------------------------------------------- */

gboolean ops_moe_dispatch_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  (void)reason;
  const RokOp *op = exec->op;
  MoeExec *x = &exec->u.moe;
  if (!check_model(model, op, error) || !check_arity(op, 3, 3, error))
    return FALSE;
  guint router = rok_trace_tensor(model->trace, ops_op_in(op, 1))->producer;
  const OpExec *r = &model->ops[router];
  if (r->op == NULL || r->op->kind != ROK_OP_MOE_ROUTER || ops_op_out(r->op, 1) != ops_op_in(op, 1) ||
      ops_op_out(r->op, 2) != ops_op_in(op, 2))
    return refuse(op, error, "it does not read a router's top-k indices and weights");
  x->moe = r->u.moe.moe;
  x->rows = op->dims[0] * op->dims[1];
  x->hidden = op->dims[2];
  x->dispatch = op->id;
  guint64 choices = x->moe.tokens * x->moe.top_k, e = x->moe.experts;
  gboolean capped = model->config != NULL ? model->config->a.capacity_factor > 0 : x->rows != choices;
  x->capacity = capped ? x->rows / e : 0;
  if (capped ? x->rows % e != 0 || x->capacity == 0 : x->rows != choices)
    return refuse(op, error,
                  "%" G_GUINT64_FORMAT " routed rows are neither the %" G_GUINT64_FORMAT
                  " choices (dropless) nor a capacity for each of %" G_GUINT64_FORMAT " experts",
                  x->rows, choices, e);
  guint64 x_elements = model->numel[ops_op_in(op, 0)];
  if (x_elements != 0 && x_elements < x->moe.tokens * x->hidden && (x->moe.tokens * x->hidden) % x_elements == 0)
    return refuse(op, error,
                  "under sequence parallelism its input holds 1/%" G_GUINT64_FORMAT
                  " of the router's tokens; MoE layers execute without sequence parallelism",
                  x->moe.tokens * x->hidden / x_elements);
  return check_tensor(model, op, ops_op_in(op, 0), model->act, x->moe.tokens * x->hidden, error) &&
         check_tensor(model, op, ops_op_out(op, 0), model->act, x->rows * x->hidden, error) &&
         check_tensor(model, op, ops_op_out(op, 1), ROK_DTYPE_I64, x->rows, error) &&
         check_tensor(model, op, ops_op_out(op, 2), ROK_DTYPE_FP32, x->rows, error) &&
         check_saved(model, op, ops_op_out(op, 1), error);
}

/* Each expert's first row: fixed with a capacity, else read back. */
static gboolean dispatch_groups(OpsCtx *ctx, const MoeExec *x, RokClBuffer *counts, GError **error) {
  guint64 e = x->moe.experts;
  g_autofree guint64 *starts = g_new0(guint64, e + 1);
  g_autofree gint64 *n = g_new0(gint64, e);
  if (x->capacity == 0 && !rok_cl_buffer_read(counts, ROK_CL_QUEUE_COMPUTE, 0, e * sizeof *n, n, TRUE, 0, NULL, NULL,
                                              error))
    return FALSE;
  for (guint64 i = 0; i < e; i++)
    starts[i + 1] = starts[i] + (x->capacity > 0 ? x->capacity : (guint64)n[i]);
  if (starts[e] != x->rows) {
    g_set_error(error, ROK_ERROR, ROK_ERROR_DEVICE,
                "the experts' rows add up to %" G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT, starts[e], x->rows);
    return FALSE;
  }
  groups_set(ctx, g_steal_pointer(&starts));
  return TRUE;
}

gboolean ops_moe_dispatch_forward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClKernels *kernels = ctx->model->kernels;
  RokClBuffer *tokens = ops_input(ctx, 0, error);
  RokClBuffer *indices = tokens ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *weights = indices ? ops_input(ctx, 2, error) : NULL;
  RokClBuffer *routed = weights ? ops_output(ctx, 0, error) : NULL;
  RokClBuffer *row_token = routed ? ops_output(ctx, 1, error) : NULL;
  RokClBuffer *row_weight = row_token ? ops_output(ctx, 2, error) : NULL;
  RokClBuffer *counts =
      row_weight ? ops_scratch(ctx, ROK_DTYPE_I64, x->moe.experts, "expert counts", FALSE, error) : NULL;
  return counts != NULL && rok_cl_moe_count(kernels, &x->moe, indices, counts, error) &&
         rok_cl_moe_place(kernels, &x->moe, indices, weights, counts, x->capacity, row_token, row_weight, x->rows,
                          error) &&
         rok_cl_moe_gather(kernels, &x->moe, row_token, tokens, NULL, routed, x->rows, x->hidden, error) &&
         dispatch_groups(ctx, x, counts, error);
}

/* The row of each choice (-1: dropped), from the saved row_token. */
static RokClBuffer *inverse(OpsCtx *ctx, const MoeExec *x, RokClBuffer *row_token, GError **error) {
  RokClBuffer *inv = ops_scratch(ctx, ROK_DTYPE_I64, x->moe.tokens * x->moe.top_k, "row of each choice", FALSE, error);
  if (inv == NULL || !rok_cl_moe_invert(ctx->model->kernels, &x->moe, row_token, x->rows, inv, error))
    return NULL;
  return inv;
}

gboolean ops_moe_dispatch_backward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClKernels *kernels = ctx->model->kernels;
  RokClBuffer *row_token = ops_output(ctx, 1, error);
  RokClBuffer *inv = row_token ? inverse(ctx, x, row_token, error) : NULL;
  RokClBuffer *drouted = inv ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink = {0};
  if (drouted == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  if (sink.dst != NULL &&
      (!rok_cl_moe_combine(kernels, &x->moe, inv, drouted, NULL, sink.dst, x->rows, x->hidden, error) ||
       !ops_sink_close(ctx, &sink, error)))
    return FALSE;
  gboolean accumulate = FALSE;
  RokClBuffer *drow = dout_f32(ctx, 2, error);
  RokClBuffer *dweights = drow ? grad_f32(ctx, 2, &accumulate, error) : NULL;
  return dweights != NULL && rok_cl_moe_unpermute(kernels, &x->moe, inv, drow, x->rows, dweights, accumulate, error);
}

/* ---- Combine -------------------------------------------------------------- */

gboolean ops_moe_combine_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  (void)reason;
  const RokOp *op = exec->op;
  MoeExec *x = &exec->u.moe;
  if (!check_model(model, op, error) || !check_arity(op, 3, 1, error))
    return FALSE;
  guint dispatch = rok_trace_tensor(model->trace, ops_op_in(op, 2))->producer;
  const OpExec *d = &model->ops[dispatch];
  if (d->op == NULL || d->op->kind != ROK_OP_MOE_DISPATCH || ops_op_out(d->op, 1) != ops_op_in(op, 2) ||
      ops_op_out(d->op, 2) != ops_op_in(op, 1))
    return refuse(op, error, "it does not read a dispatch's row tokens and weights");
  *x = d->u.moe;
  if (op->dims[0] * op->dims[1] != x->moe.tokens || op->dims[2] != x->hidden)
    return refuse(op, error, "its dims are not its dispatch's %" G_GUINT64_FORMAT " tokens of %" G_GUINT64_FORMAT,
                  x->moe.tokens, x->hidden);
  return check_tensor(model, op, ops_op_in(op, 0), model->act, x->rows * x->hidden, error) &&
         check_tensor(model, op, ops_op_out(op, 0), model->act, x->moe.tokens * x->hidden, error) &&
         check_saved(model, op, ops_op_in(op, 0), error) && check_saved(model, op, ops_op_in(op, 1), error) &&
         check_saved(model, op, ops_op_in(op, 2), error);
}

gboolean ops_moe_combine_forward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClBuffer *y = ops_input(ctx, 0, error);
  RokClBuffer *row_weight = y ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *row_token = row_weight ? ops_input(ctx, 2, error) : NULL;
  RokClBuffer *inv = row_token ? inverse(ctx, x, row_token, error) : NULL;
  RokClBuffer *out = inv ? ops_output(ctx, 0, error) : NULL;
  return out != NULL &&
         rok_cl_moe_combine(ctx->model->kernels, &x->moe, inv, y, row_weight, out, x->rows, x->hidden, error);
}

gboolean ops_moe_combine_backward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClKernels *kernels = ctx->model->kernels;
  RokClBuffer *y = ops_input(ctx, 0, error);
  RokClBuffer *row_weight = y ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *row_token = row_weight ? ops_input(ctx, 2, error) : NULL;
  RokClBuffer *dout = row_token ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink = {0};
  if (dout == NULL || !ops_sink_overwrite(ctx, 0, TRUE, FALSE, &sink, error))
    return FALSE;
  if (sink.dst != NULL &&
      (!rok_cl_moe_gather(kernels, &x->moe, row_token, dout, row_weight, sink.dst, x->rows, x->hidden, error) ||
       !ops_sink_close(ctx, &sink, error)))
    return FALSE;
  gboolean accumulate = FALSE;
  RokClBuffer *drow = grad_f32(ctx, 1, &accumulate, error);
  return drow != NULL &&
         rok_cl_moe_row_dot(kernels, &x->moe, row_token, dout, y, drow, accumulate, x->rows, x->hidden, error);
}

/* ---- The experts' grouped linears ------------------------------------------ */

/* The dispatch whose rows linear `op` runs on (directly, or through the
 * SwiGLU after another expert linear); G_MAXUINT for other linears. */
guint ops_moe_expert_dispatch(const RokExecModel *model, const RokOp *op) {
  if (op->kind != ROK_OP_LINEAR || op->inputs->len != 1)
    return G_MAXUINT;
  const RokOp *p = rok_trace_op(model->trace, rok_trace_tensor(model->trace, ops_op_in(op, 0))->producer);
  if (p->kind == ROK_OP_MOE_DISPATCH && ops_op_out(p, 0) == ops_op_in(op, 0))
    return p->id;
  if (p->kind == ROK_OP_SWIGLU && p->inputs->len == 1) {
    const RokOp *q = rok_trace_op(model->trace, rok_trace_tensor(model->trace, ops_op_in(p, 0))->producer);
    if (q->id < op->id && model->ops[q->id].impl == ops_moe_experts_impl())
      return model->ops[q->id].u.experts.dispatch;
  }
  return G_MAXUINT;
}

gboolean ops_moe_experts_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  (void)reason;
  const RokOp *op = exec->op;
  ExpertsExec *x = &exec->u.experts;
  x->dispatch = ops_moe_expert_dispatch(model, op);
  const MoeExec *d = &model->ops[x->dispatch].u.moe;
  x->rows = op->dims[0] * op->dims[1];
  x->out = op->dims[2];
  x->in = op->dims[3];
  x->experts = d->moe.experts;
  if (!check_arity(op, 1, 1, error))
    return FALSE;
  if (x->rows != d->rows || x->in == 0 || x->out == 0)
    return refuse(op, error, "%" G_GUINT64_FORMAT " rows, not its dispatch's %" G_GUINT64_FORMAT, x->rows, d->rows);
  if (!check_tensor(model, op, ops_op_in(op, 0), model->act, x->rows * x->in, error) ||
      !check_tensor(model, op, ops_op_out(op, 0), model->act, x->rows * x->out, error) ||
      !check_saved(model, op, ops_op_in(op, 0), error))
    return FALSE;
  float a = (float)(1.0 / sqrt((double)x->in));
  x->weight = ops_param_new(model, op, "weight", x->experts * x->in, x->out, -a, a, error);
  return x->weight != NULL;
}

gboolean ops_moe_experts_forward(OpsCtx *ctx, GError **error) {
  const ExpertsExec *x = &ctx->exec->u.experts;
  const guint64 *starts = groups_of(ctx, x->dispatch, error);
  RokClBuffer *in = starts ? ops_input(ctx, 0, error) : NULL;
  RokClBuffer *out = in ? ops_output(ctx, 0, error) : NULL;
  if (out == NULL)
    return FALSE;
  RokClBuffer *w = x->weight->value;
  for (guint64 e = 0; e < x->experts; e++) {
    guint64 r = starts[e], m = starts[e + 1] - r;
    if (m > 0 && !ops_gemm(ctx->model->kernels, m, x->out, x->in, ops_at(in, r * x->in, x->in, FALSE),
                           ops_at(w, e * x->in * x->out, x->out, FALSE), ops_at(out, r * x->out, x->out, FALSE), 0.0f,
                           NULL, error))
      return FALSE;
  }
  return TRUE;
}

gboolean ops_moe_experts_backward(OpsCtx *ctx, GError **error) {
  const ExpertsExec *x = &ctx->exec->u.experts;
  RokClKernels *kernels = ctx->model->kernels;
  const guint64 *starts = groups_of(ctx, x->dispatch, error);
  RokClBuffer *in = starts ? ops_input(ctx, 0, error) : NULL;
  RokClBuffer *dy = in ? ops_dout(ctx, 0, error) : NULL;
  OpsSink sink = {0};
  /* The groups partition the rows: together they cover dx. */
  if (dy == NULL || !ops_sink_accumulate(ctx, 0, TRUE, &sink, error))
    return FALSE;
  RokClBuffer *w = x->weight->value, *dw = x->weight->grad;
  for (guint64 e = 0; e < x->experts; e++) {
    guint64 r = starts[e], m = starts[e + 1] - r, wo = e * x->in * x->out;
    if (m == 0)
      continue;
    if (!ops_gemm(kernels, x->in, x->out, m, ops_at(in, r * x->in, x->in, TRUE), ops_at(dy, r * x->out, x->out, FALSE),
              ops_at(dw, wo, x->out, FALSE), 1.0f, NULL, error))
      return FALSE;
    if (sink.dst != NULL && !ops_gemm(kernels, m, x->in, x->out, ops_at(dy, r * x->out, x->out, FALSE),
                                  ops_at(w, wo, x->out, TRUE), ops_at(sink.dst, r * x->in, x->in, FALSE),
                                  ops_sink_beta(&sink), NULL, error))
      return FALSE;
  }
  return ops_sink_close(ctx, &sink, error);
}

/* ---- Qwen2-MoE's shared-expert gate ------------------------------------------ */

/* The trace's `other` op "…moe.shared.gate_scale": out = y · sigmoid(g). */
gboolean ops_moe_is_gate(const RokExecModel *model, const RokOp *op) {
  return op->kind == ROK_OP_OTHER && model->config != NULL && model->config->a.shared_expert_gate &&
         g_str_has_suffix(op->name, "moe.shared.gate_scale");
}

gboolean ops_moe_gate_prepare(RokExecModel *model, OpExec *exec, char **reason, GError **error) {
  (void)reason;
  const RokOp *op = exec->op;
  MoeExec *x = &exec->u.moe;
  if (!check_arity(op, 2, 1, error))
    return FALSE;
  x->moe.tokens = model->numel[ops_op_in(op, 1)];
  x->hidden = x->moe.tokens > 0 ? model->numel[ops_op_in(op, 0)] / x->moe.tokens : 0;
  return check_tensor(model, op, ops_op_in(op, 0), model->act, x->moe.tokens * x->hidden, error) &&
         check_tensor(model, op, ops_op_in(op, 1), model->act, x->moe.tokens, error) &&
         check_tensor(model, op, ops_op_out(op, 0), model->act, x->moe.tokens * x->hidden, error) &&
         check_saved(model, op, ops_op_in(op, 0), error) && check_saved(model, op, ops_op_in(op, 1), error);
}

gboolean ops_moe_gate_forward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClBuffer *y = ops_input(ctx, 0, error);
  RokClBuffer *g = y ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *out = g ? ops_output(ctx, 0, error) : NULL;
  return out != NULL && rok_cl_moe_gate_forward(ctx->model->kernels, y, g, out, x->moe.tokens, x->hidden, error);
}

gboolean ops_moe_gate_backward(OpsCtx *ctx, GError **error) {
  const MoeExec *x = &ctx->exec->u.moe;
  RokClBuffer *y = ops_input(ctx, 0, error);
  RokClBuffer *g = y ? ops_input(ctx, 1, error) : NULL;
  RokClBuffer *dout = g ? ops_dout(ctx, 0, error) : NULL;
  OpsSink dy = {0}, dg = {0};
  return dout != NULL && ops_sink_overwrite(ctx, 0, TRUE, TRUE, &dy, error) &&
         ops_sink_overwrite(ctx, 1, TRUE, TRUE, &dg, error) &&
         rok_cl_moe_gate_backward(ctx->model->kernels, y, g, dout, dy.dst, dg.dst, x->moe.tokens, x->hidden, error) &&
         ops_sink_close(ctx, &dy, error) && ops_sink_close(ctx, &dg, error);
}

#endif /* ROK_WITH_OPENCL */
